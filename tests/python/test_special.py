"""The gamma family and the inverse error functions (quabla._special: qb.lax.lgamma /
digamma / polygamma / erf_inv, qb.scipy.special.gammaln / gamma / digamma / polygamma /
betaln / beta / erfinv / erfcinv / ndtri) against SciPy and mpmath, their derivatives
against the closed forms and central differences; lax.pad with interior and negative
padding, lax.dot_general, signbit and copysign against NumPy."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.special as ss

import quabla as qb

sp = qb.scipy.special
RNG = np.random.default_rng(2026)
X = np.concatenate([RNG.uniform(-30, 30, 600), RNG.uniform(0, 3, 300), RNG.uniform(-3, 0, 300),
                    np.logspace(-8, 8, 60), 0.3 - np.logspace(-8, 2, 60)])
X = X[np.abs(X - np.round(X)) > 1e-9]  # off the poles


def rel_err(got, want):
    """The largest error relative to max(|want|, 1); equal values (infinities) count as 0
    and NaNs must sit where want has them."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    diff = (got != want) & ~np.isnan(want)
    if not diff.any():
        return 0.0
    return np.max(np.abs(got[diff] - want[diff]) / np.maximum(np.abs(want[diff]), 1.0))


@pytest.mark.parametrize("name, ours, ref, tol", [
    ("gammaln", sp.gammaln, ss.gammaln, 1e-14),
    ("lax.lgamma", qb.lax.lgamma, ss.gammaln, 1e-14),
    ("polygamma1", lambda x: sp.polygamma(1, x), lambda x: ss.polygamma(1, x), 1e-14),
    ("polygamma2", lambda x: sp.polygamma(2, x), lambda x: ss.polygamma(2, x), 1e-13),
    ("polygamma5", lambda x: sp.polygamma(5, x), lambda x: ss.polygamma(5, x), 1e-13),
])
def test_values_against_scipy(name, ours, ref, tol):
    assert rel_err(ours(qb.array(X)), ref(X)) < tol


def test_digamma_against_mpmath():
    # SciPy loses ~1e-13 relative next to the negative poles (where |psi| is large); mpmath not
    xs = np.concatenate([X[::7], [-0.99968427, -28.9996724, -2.99925459, 1.4616321449683622]])
    want = np.array([float(mpmath.digamma(float(v))) for v in xs])
    assert rel_err(qb.lax.digamma(qb.array(xs)), want) < 2e-15
    assert rel_err(sp.psi(qb.array(X)), ss.digamma(X)) < 1e-12


def test_gamma_beta_and_the_inverses_against_scipy():
    g = X[np.abs(X) < 170]
    assert rel_err(np.asarray(sp.gamma(qb.array(g))) / ss.gamma(g), np.ones_like(g)) < 2e-13
    a, b = RNG.uniform(0.1, 20, 200), RNG.uniform(0.1, 20, 200)
    assert rel_err(sp.betaln(qb.array(a), qb.array(b)), ss.betaln(a, b)) < 1e-13
    assert rel_err(np.asarray(sp.beta(qb.array(a), qb.array(b))) / ss.beta(a, b), np.ones_like(a)) < 1e-13
    y = np.concatenate([RNG.uniform(-1, 1, 500), 1 - np.logspace(-16, -1, 40), -1 + np.logspace(-16, -1, 40)])
    assert rel_err(sp.erfinv(qb.array(y)), ss.erfinv(y)) < 2e-15
    assert rel_err(qb.lax.erf_inv(qb.array(y)), ss.erfinv(y)) < 2e-15
    z = np.concatenate([RNG.uniform(0, 2, 500), np.logspace(-300, -1, 60), 2 - np.logspace(-16, -1, 30)])
    assert rel_err(sp.erfcinv(qb.array(z)), ss.erfcinv(z)) < 2e-15
    p = np.concatenate([RNG.uniform(0, 1, 300), np.logspace(-300, -1, 60), 1 - np.logspace(-16, -1, 30)])
    assert rel_err(sp.ndtri(qb.array(p)), ss.ndtri(p)) < 2e-15


def test_edge_values_follow_jax():
    edge = qb.array([0.0, -0.0, -1.0, -2.0, math.inf, -math.inf, math.nan, 1.0, 2.0])
    inf, nan = math.inf, math.nan
    np.testing.assert_array_equal(np.asarray(sp.gammaln(edge))[:7], [inf, inf, inf, inf, inf, inf, nan])
    np.testing.assert_array_equal(np.asarray(sp.digamma(edge))[:7], [nan, nan, nan, nan, inf, nan, nan])
    np.testing.assert_array_equal(np.asarray(sp.gamma(edge)), [inf, -inf, nan, nan, inf, nan, nan, 1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(sp.polygamma(1, edge))[:7], [inf, inf, inf, inf, 0.0, nan, nan])
    np.testing.assert_array_equal(np.asarray(sp.erfinv(qb.array([1.0, -1.0, 1.5, -2.0, 0.0, nan]))),
                                  [inf, -inf, nan, nan, 0.0, nan])
    np.testing.assert_array_equal(np.asarray(sp.erfcinv(qb.array([0.0, 2.0, -0.1, 2.1, 1.0]))), [inf, -inf, nan, nan, 0.0])
    np.testing.assert_array_equal(np.asarray(sp.ndtri(qb.array([0.0, 1.0, 0.5]))), [-inf, inf, 0.0])
    assert abs(float(sp.gammaln(qb.array(1.0)))) < 1e-15 and abs(float(sp.gammaln(qb.array(2.0)))) < 1e-15


def test_float32_and_integer_inputs():
    x32 = np.float32([0.1, 2.5, -1.5, 7.0, 30.0])
    got = sp.gammaln(qb.array(x32))
    assert got.dtype == qb.float32
    np.testing.assert_allclose(np.asarray(got), ss.gammaln(x32.astype(np.float64)), rtol=2e-6, atol=2e-6)
    y32 = np.float32([0.3, -0.9, 0.999, 0.0])
    np.testing.assert_allclose(np.asarray(sp.erfinv(qb.array(y32))), ss.erfinv(y32.astype(np.float64)), rtol=2e-6)
    assert sp.gammaln(qb.array([3, 4])).dtype == qb.float64
    np.testing.assert_allclose(np.asarray(sp.gamma(qb.array([3, 4]))), [2.0, 6.0], rtol=1e-14)
    with pytest.raises(ValueError, match="non-negative Python int"):
        sp.polygamma(-1, qb.array(1.0))


D = np.array([0.5, 1.0, 2.0, 3.0, 7.5, 25.0, -0.5, -1.5, -7.3, 0.01, 1e-5, 100.0])


def _grad(f, xs, order=1):
    g = f
    for _ in range(order):
        g = qb.grad(g)
    return np.asarray(qb.jit(qb.vmap(g))(qb.array(xs)))


def test_derivatives_against_closed_forms():
    # no NaN from a branch that a where discards (positive integers, 0.5, 0 for erfinv)
    assert rel_err(_grad(sp.gammaln, D), ss.digamma(D)) < 1e-14
    assert rel_err(_grad(sp.gammaln, D, 2), ss.polygamma(1, D)) < 1e-14
    assert rel_err(_grad(sp.digamma, D), ss.polygamma(1, D)) < 1e-14
    assert rel_err(_grad(lambda t: sp.polygamma(2, t), D), ss.polygamma(3, D)) < 1e-14
    dg = D[np.abs(D) < 50]
    assert rel_err(_grad(sp.gamma, dg), ss.gamma(dg) * ss.digamma(dg)) < 1e-13
    y = np.array([0.0, 0.3, -0.7, 0.5, 0.50001, 0.95, 0.999999, 1 - 1e-12, -1 + 1e-15])
    e = ss.erfinv(y)
    first = math.sqrt(math.pi) / 2 * np.exp(e ** 2)
    assert rel_err(_grad(sp.erfinv, y) / first, np.ones_like(y)) < 1e-14
    assert rel_err(_grad(sp.erfinv, y[:6], 2), 2 * e[:6] * first[:6] ** 2) < 1e-14
    z = np.array([1e-20, 0.1, 0.5, 0.9, 1.0, 1.2, 1.9])
    assert rel_err(_grad(sp.erfcinv, z) / (-math.sqrt(math.pi) / 2 * np.exp(ss.erfcinv(z) ** 2)), np.ones_like(z)) < 1e-14


def test_derivatives_against_central_differences():
    for f, pts in ((sp.gammaln, [0.7, 3.3, -2.4]), (sp.digamma, [0.7, 3.3, -2.4]), (sp.erfinv, [0.2, -0.6, 0.9]),
                   (sp.ndtri, [0.1, 0.5, 0.97])):
        for v in pts:
            h = 1e-6
            fd = (float(f(qb.array(v + h))) - float(f(qb.array(v - h)))) / (2 * h)
            assert float(qb.grad(f)(qb.array(v))) == pytest.approx(fd, rel=1e-7)


# ---- lax.pad, lax.dot_general, signbit, copysign

def _pad_reference(x, value, config):
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        size = n + max(n - 1, 0) * interior
        shape = list(x.shape)
        shape[axis] = size
        out = np.full(shape, value, x.dtype)
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(0, size, interior + 1)
        out[tuple(idx)] = x
        before = np.full(shape[:axis] + [max(lo, 0)] + shape[axis + 1:], value, x.dtype)
        after = np.full(shape[:axis] + [max(hi, 0)] + shape[axis + 1:], value, x.dtype)
        out = np.concatenate([before, out, after], axis=axis)
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(-lo if lo < 0 else 0, out.shape[axis] + hi if hi < 0 else out.shape[axis])
        x = out[tuple(idx)]
    return x


@pytest.mark.parametrize("config", [[(1, 2, 1), (0, 0, 0)], [(-1, 1, 2), (2, -1, 1)], [(0, 0, 0), (0, 0, 3)],
                                    [(0, -2, 0), (-3, 0, 0)]])
def test_lax_pad_matches_a_reference(config):
    x = np.arange(1.0, 7.0).reshape(2, 3)
    got = qb.lax.pad(qb.array(x), qb.array(-1.0), config)
    np.testing.assert_array_equal(np.asarray(got), _pad_reference(x, -1.0, config))
    g = qb.grad(lambda v: qb.sum(qb.lax.pad(v, qb.array(0.0), config) * 2.0))(qb.array(x))
    kept = _pad_reference(np.arange(6.0).reshape(2, 3), -1.0, config)
    want = np.zeros(6)
    for k in kept.ravel():
        if k >= 0:
            want[int(k)] += 2.0
    np.testing.assert_array_equal(np.asarray(g).ravel(), want)


def test_lax_pad_errors():
    x = qb.ones((2, 3))
    with pytest.raises(ValueError, match="one \\(low, high, interior\\) triple per axis"):
        qb.lax.pad(x, qb.array(0.0), [(1, 1, 0)])
    with pytest.raises(ValueError, match="interior >= 0"):
        qb.lax.pad(x, qb.array(0.0), [(0, 0, -1), (0, 0, 0)])
    with pytest.raises(TypeError, match="one dtype"):
        qb.lax.pad(x, qb.array(0, dtype=qb.int32), [(0, 0, 0), (0, 0, 0)])
    with pytest.raises(ValueError, match="crops more"):
        qb.lax.pad(x, qb.array(0.0), [(-2, -2, 0), (0, 0, 0)])


@pytest.mark.parametrize("dims, lshape, rshape, spec", [
    ((((2,), (1,)), ((0,), (0,))), (2, 3, 4), (2, 4, 5), "bij,bjk->bik"),
    ((((0,), (0,)), ((), ())), (4, 3), (4, 5), "ji,jk->ik"),
    ((((0, 2), (0, 1)), ((), ())), (2, 3, 4), (2, 4, 5), "aib,abk->ik"),
    ((((), ()), ((0,), (1,))), (3, 2), (4, 3), "ai,ja->aij"),
])
def test_dot_general_matches_einsum(dims, lshape, rshape, spec):
    l, r = RNG.normal(size=lshape), RNG.normal(size=rshape)
    got = qb.lax.dot_general(qb.array(l), qb.array(r), dims)
    np.testing.assert_allclose(np.asarray(got), np.einsum(spec, l, r), rtol=1e-13, atol=1e-13)
    f32 = qb.lax.dot_general(qb.array(l), qb.array(r), dims, preferred_element_type=qb.float32)
    assert f32.dtype == qb.float32


def test_dot_general_errors():
    with pytest.raises(ValueError, match="paired but differ"):
        qb.lax.dot_general(qb.ones((2, 3)), qb.ones((4, 2)), (((1,), (0,)), ((), ())))
    with pytest.raises(ValueError, match="out of range"):
        qb.lax.dot_general(qb.ones((2, 3)), qb.ones((3, 2)), (((2,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="dimension_numbers must be"):
        qb.lax.dot_general(qb.ones((2, 3)), qb.ones((3, 2)), ((1,), (0,)))


def test_signbit_and_copysign_match_numpy():
    v = np.array([-0.0, 0.0, -1.5, 2.0, np.inf, -np.inf, 1e-300, -1e-300])
    np.testing.assert_array_equal(np.asarray(qb.signbit(qb.array(v))), np.signbit(v))
    np.testing.assert_array_equal(np.asarray(qb.signbit(qb.array([-3, 0, 4]))), [True, False, False])
    a, b = np.array([1.0, -2.0, 3.0, 0.0]), np.array([-0.0, 1.0, -5.0, -1.0])
    got = np.asarray(qb.copysign(qb.array(a), qb.array(b)))
    np.testing.assert_array_equal(got, np.copysign(a, b))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.copysign(a, b)))
