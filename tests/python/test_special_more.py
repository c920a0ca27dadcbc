"""quabla.scipy.special's rel_entr, kl_div, exp1 and expi against SciPy (1e-12 relative in
float64 over wide ranges), their derivatives against finite differences and JAX, float32 in
float32 out, jit and vmap."""
import numpy as np
import pytest
import scipy.special as ss

import quabla as qb
import quabla.scipy.special as qs


def rel_err(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300))


def test_exp1_matches_scipy():
    x = np.concatenate([np.geomspace(1e-8, 700.0, 4000), [0.5, 1.0, 1.0 + 1e-12, 2.0, 40.0]])
    assert rel_err(qs.exp1(qb.asarray(x)), ss.exp1(x)) < 1e-12
    special = np.asarray(qs.exp1(qb.asarray([0.0, -1.0, np.inf, np.nan])))
    assert special[0] == np.inf and np.isnan(special[1]) and special[2] == 0.0 and np.isnan(special[3])


def test_expi_matches_scipy():
    x = np.concatenate([-np.geomspace(1e-8, 700.0, 3000), np.geomspace(1e-8, 700.0, 4000)])
    x = x[np.abs(x - 0.37250741078136663) > 1e-3]  # relative error is undefined at Ei's zero
    assert rel_err(qs.expi(qb.asarray(x)), ss.expi(x)) < 1e-12
    near_root = np.linspace(0.36, 0.38, 51)
    np.testing.assert_allclose(np.asarray(qs.expi(qb.asarray(near_root))), ss.expi(near_root), atol=1e-15)
    assert float(qs.expi(qb.asarray(0.0))) == -np.inf


def test_rel_entr_and_kl_div_match_scipy():
    vals = np.array([0.0, 1e-300, 1e-5, 0.3, 1.0, 2.5, 1e5, -1.0, np.inf, np.nan])
    x, y = np.meshgrid(vals, vals, indexing="ij")
    for f, g in ((qs.rel_entr, ss.rel_entr), (qs.kl_div, ss.kl_div)):
        got, want = np.asarray(f(qb.asarray(x), qb.asarray(y))), g(x, y)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", ["exp1", "expi", "rel_entr", "kl_div"])
def test_float32_stays_float32(name):
    f = getattr(qs, name)
    x = qb.asarray([0.3, 1.5, 7.0], dtype=qb.float32)
    out = f(x) if name in ("exp1", "expi") else f(x, x * 2)
    assert out.dtype == qb.float32
    ref = getattr(ss, name)(np.asarray(x, np.float64)) if name in ("exp1", "expi") else \
        getattr(ss, name)(np.asarray(x, np.float64), 2 * np.asarray(x, np.float64))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5)


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_derivatives_match_finite_differences():
    for name, xs in (("exp1", [0.05, 0.9, 1.1, 3.0, 20.0]), ("expi", [-5.0, -0.5, 0.2, 2.0, 39.0, 45.0])):
        f = getattr(qs, name)
        sf = getattr(ss, name)
        for x in xs:
            g = float(qb.grad(f)(qb.asarray(x)))
            np.testing.assert_allclose(g, _fd(sf, x, 1e-6 * max(1.0, abs(x))), rtol=1e-6)
        gg = qb.grad(qb.grad(f))(qb.asarray(2.0))
        np.testing.assert_allclose(float(gg), _fd(lambda t: float(qb.grad(f)(qb.asarray(t))), 2.0), rtol=1e-6)
    for name in ("rel_entr", "kl_div"):
        f, sf = getattr(qs, name), getattr(ss, name)
        gx, gy = qb.grad(f, argnums=(0, 1))(qb.asarray(0.7), qb.asarray(1.3))
        np.testing.assert_allclose(float(gx), _fd(lambda t: sf(t, 1.3), 0.7), rtol=1e-7)
        np.testing.assert_allclose(float(gy), _fd(lambda t: sf(0.7, t), 1.3), rtol=1e-7)


def test_against_jax_and_under_jit_vmap():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.scipy.special as js
    x = np.array([0.1, 0.8, 1.7, 12.0])
    for name in ("exp1", "expi"):
        f = getattr(qs, name)
        np.testing.assert_allclose(np.asarray(qb.jit(f)(qb.asarray(x))), np.asarray(getattr(js, name)(x)), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(qb.vmap(qb.grad(f))(qb.asarray(x))),
                                   np.asarray(jax.vmap(jax.grad(getattr(js, name)))(x)), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(qb.jit(qs.kl_div)(qb.asarray(x), qb.asarray(x[::-1]))),
                               np.asarray(js.kl_div(x, x[::-1])), rtol=1e-12)
