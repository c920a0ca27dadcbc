"""qb.lax.conv_general_dilated / conv / reduce_window and quabla.scipy.signal: against a
direct NumPy loop and scipy.signal always, against jax.lax itself where JAX is installed
(CI installs it); gradients with respect to input and kernel; jit and vmap."""
import itertools

import numpy as np
import pytest
import scipy.signal as ss

import quabla as qb

rng = np.random.default_rng(0)


def reference_conv(x, w, strides, pads, rhs_dil=None):
    """NCHW x OIHW cross-correlation by loops (explicit padding pairs, no lhs dilation)."""
    nsp = x.ndim - 2
    rhs_dil = rhs_dil or (1,) * nsp
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    k = w.shape[2:]
    span = [(kk - 1) * d + 1 for kk, d in zip(k, rhs_dil)]
    out_sizes = [(s - sp) // st + 1 for s, sp, st in zip(xp.shape[2:], span, strides)]
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(out_sizes))
    for pos in itertools.product(*(range(o) for o in out_sizes)):
        idx = tuple(slice(p * st, p * st + sp, d) for p, st, sp, d in zip(pos, strides, span, rhs_dil))
        patch = xp[(slice(None), slice(None)) + idx]
        axes = list(range(1, patch.ndim))
        out[(slice(None), slice(None)) + pos] = np.tensordot(patch, w, axes=(axes, axes))
    return out


def test_against_a_loop():
    x, w = rng.normal(size=(2, 3, 9, 8)), rng.normal(size=(4, 3, 3, 2))
    for strides, pads, dil in [((1, 1), ((0, 0), (0, 0)), None), ((2, 1), ((1, 2), (0, 1)), None),
                               ((1, 2), ((2, 1), (1, 1)), (2, 1))]:
        got = qb.lax.conv_general_dilated(qb.asarray(x), qb.asarray(w), strides, pads, rhs_dilation=dil).numpy()
        np.testing.assert_allclose(got, reference_conv(x, w, strides, pads, dil), rtol=1e-12, atol=1e-12)


CASES = [
    dict(window_strides=(1, 1), padding="VALID"),
    dict(window_strides=(2, 1), padding="SAME"),
    dict(window_strides=(1, 2), padding="SAME_LOWER"),
    dict(window_strides=(1, 1), padding=((1, 2), (0, 1)), rhs_dilation=(2, 1)),
    dict(window_strides=(1, 1), padding=((2, 2), (1, 1)), lhs_dilation=(2, 2)),
    dict(window_strides=(2, 2), padding=((1, 1), (2, 0)), lhs_dilation=(1, 2), rhs_dilation=(2, 1)),
]


@pytest.mark.parametrize("kw", CASES)
def test_against_jax(kw):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x, w = rng.normal(size=(2, 3, 9, 8)), rng.normal(size=(4, 3, 3, 2))
    np.testing.assert_allclose(qb.lax.conv_general_dilated(qb.asarray(x), qb.asarray(w), **kw).numpy(),
                               np.asarray(jax.lax.conv_general_dilated(x, w, **kw)), rtol=1e-12, atol=1e-12)


def test_layouts_groups_ranks_and_reduce_window_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    close = lambda q, j: np.testing.assert_allclose(np.asarray(q), np.asarray(j), rtol=1e-12, atol=1e-12)  # noqa: E731
    xg, wg = rng.normal(size=(2, 4, 7, 7)), rng.normal(size=(6, 2, 3, 3))
    close(qb.lax.conv_general_dilated(qb.asarray(xg), qb.asarray(wg), (1, 1), "SAME", feature_group_count=2),
          jax.lax.conv_general_dilated(xg, wg, (1, 1), "SAME", feature_group_count=2))
    xh, wh = rng.normal(size=(2, 7, 6, 3)), rng.normal(size=(3, 2, 3, 5))
    dn = ("NHWC", "HWIO", "NHWC")
    close(qb.lax.conv_general_dilated(qb.asarray(xh), qb.asarray(wh), (1, 1), "SAME", dimension_numbers=dn),
          jax.lax.conv_general_dilated(xh, wh, (1, 1), "SAME", dimension_numbers=dn))
    x1, w1 = rng.normal(size=(2, 3, 11)), rng.normal(size=(5, 3, 4))
    close(qb.lax.conv(qb.asarray(x1), qb.asarray(w1), (2,), "SAME"), jax.lax.conv(x1, w1, (2,), "SAME"))
    x3, w3 = rng.normal(size=(1, 2, 5, 4, 6)), rng.normal(size=(2, 2, 2, 3, 2))
    close(qb.lax.conv_general_dilated(qb.asarray(x3), qb.asarray(w3), (1, 1, 2), "VALID"),
          jax.lax.conv_general_dilated(x3, w3, (1, 1, 2), "VALID"))
    a = rng.normal(size=(6, 7))
    for args in [((2, 2), (1, 1), "VALID"), ((3, 2), (2, 1), "SAME"), ((2, 3), (1, 2), ((1, 0), (2, 1)))]:
        for comp, init, jc in [(qb.lax.add, 0.0, jax.lax.add), (qb.lax.max, -np.inf, jax.lax.max),
                               (qb.lax.min, np.inf, jax.lax.min)]:
            close(qb.lax.reduce_window(qb.asarray(a), init, comp, *args), jax.lax.reduce_window(a, init, jc, *args))
    close(qb.lax.reduce_window(qb.asarray(a), 0.0, qb.lax.add, (2, 2), (1, 1), "VALID", (1, 2), (2, 1)),
          jax.lax.reduce_window(a, 0.0, jax.lax.add, (2, 2), (1, 1), "VALID", (1, 2), (2, 1)))
    close(qb.lax.reduce_window(qb.asarray(a), 1.0, lambda u, v: u * v + 0 * u, (2, 2), (1, 1), "VALID"),
          jax.lax.reduce_window(a, 1.0, jax.lax.mul, (2, 2), (1, 1), "VALID"))
    x, w = rng.normal(size=(2, 3, 9, 8)), rng.normal(size=(4, 3, 3, 2))
    close(qb.grad(lambda k: qb.lax.conv(qb.asarray(x), k, (1, 1), "SAME").sum())(qb.asarray(w)),
          jax.grad(lambda k: jax.lax.conv(x, k, (1, 1), "SAME").sum())(w))
    close(qb.grad(lambda v: (qb.lax.conv(v, qb.asarray(w), (2, 1), "SAME") ** 2).sum())(qb.asarray(x)),
          jax.grad(lambda v: (jax.lax.conv(v, w, (2, 1), "SAME") ** 2).sum())(x))


def test_jit_vmap_and_errors():
    x, w = rng.normal(size=(2, 3, 9, 8)), rng.normal(size=(4, 3, 3, 2))
    expected = reference_conv(x, w, (1, 1), ((0, 0), (0, 0)))
    np.testing.assert_allclose(qb.jit(lambda a, b: qb.lax.conv(a, b, (1, 1), "VALID"))(qb.asarray(x), qb.asarray(w))
                               .numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(qb.vmap(lambda a: qb.lax.conv(a[None], qb.asarray(w), (1, 1), "VALID")[0])(
        qb.asarray(x)).numpy(), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="feature_group_count"):
        qb.lax.conv_general_dilated(qb.ones((1, 4, 5, 5)), qb.ones((3, 2, 3, 3)), (1, 1), "VALID", feature_group_count=2)
    with pytest.raises(ValueError, match="padding"):
        qb.lax.conv(qb.ones((1, 1, 5)), qb.ones((1, 1, 3)), (1,), "FULL")
    with pytest.raises(ValueError, match="larger than the padded input"):
        qb.lax.conv(qb.ones((1, 1, 2)), qb.ones((1, 1, 3)), (1,), "VALID")


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_signal_against_scipy(mode):
    sig = qb.scipy.signal
    u, v = rng.normal(size=9), rng.normal(size=4)
    a, k = rng.normal(size=(6, 7)), rng.normal(size=(3, 2))
    b3, c3 = rng.normal(size=(4, 3, 2)), rng.normal(size=(2, 2, 2))
    for got, expected in [
        (sig.correlate(qb.asarray(u), qb.asarray(v), mode), ss.correlate(u, v, mode)),
        (sig.correlate(qb.asarray(v), qb.asarray(u), mode), ss.correlate(v, u, mode)),
        (sig.convolve(qb.asarray(u), qb.asarray(v), mode), ss.convolve(u, v, mode)),
        (sig.convolve(qb.asarray(v), qb.asarray(u), mode), ss.convolve(v, u, mode)),
        (sig.convolve2d(qb.asarray(a), qb.asarray(k), mode), ss.convolve2d(a, k, mode)),
        (sig.correlate2d(qb.asarray(a), qb.asarray(k), mode), ss.correlate2d(a, k, mode)),
        (sig.convolve(qb.asarray(b3), qb.asarray(c3), mode), ss.convolve(b3, c3, mode)),
    ]:
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
