"""quabla.scipy.interpolate.RegularGridInterpolator against SciPy's: linear and nearest in
three dimensions with a fill value, linear extrapolation, trailing value axes, gradients
with respect to the points against central differences, under jit; misuse raises."""
import numpy as np
import pytest
from scipy.interpolate import RegularGridInterpolator as SciPyRGI

import quabla as qb
from quabla.scipy.interpolate import RegularGridInterpolator

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(0, 1, 7))
Y = np.linspace(-1, 2, 5)
Z = np.array([0.0, 0.3, 1.0])
V = rng.normal(size=(7, 5, 3))
PTS = np.stack([rng.uniform(-0.1, 1.1, 60), rng.uniform(-1.2, 2.2, 60), rng.uniform(0, 1, 60)], -1)
GRID = (qb.asarray(X), qb.asarray(Y), qb.asarray(Z))


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_against_scipy(method):
    expected = SciPyRGI((X, Y, Z), V, method=method, bounds_error=False)(PTS)
    got = RegularGridInterpolator(GRID, qb.asarray(V), method=method)(qb.asarray(PTS)).numpy()
    assert np.isnan(expected).sum() > 0  # some points lie outside: the fill value is tested
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_extrapolation_trailing_axes_gradient_and_jit():
    expected = SciPyRGI((X, Y, Z), V, bounds_error=False, fill_value=None)(PTS)
    got = RegularGridInterpolator(GRID, qb.asarray(V), fill_value=None)(qb.asarray(PTS)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    v2 = rng.normal(size=(7, 5, 2))
    f2 = RegularGridInterpolator(GRID[:2], qb.asarray(v2))
    np.testing.assert_allclose(f2(qb.asarray(PTS[:, :2])).numpy(),
                               SciPyRGI((X, Y), v2, bounds_error=False)(PTS[:, :2]), rtol=1e-13, atol=1e-15)
    f = RegularGridInterpolator(GRID[:2], qb.asarray(v2[..., 0]))
    p0 = np.array([0.5, 0.3])
    g = qb.grad(lambda p: f(p[None])[0])(qb.asarray(p0)).numpy()
    h = 1e-6
    fd = [(f(qb.asarray([p0 + h * e])).item() - f(qb.asarray([p0 - h * e])).item()) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)
    np.testing.assert_allclose(qb.jit(f)(qb.asarray(PTS[:5, :2])).numpy(),
                               SciPyRGI((X, Y), v2[..., 0], bounds_error=False)(PTS[:5, :2]), rtol=1e-13)


def test_misuse_raises():
    with pytest.raises(ValueError, match="strictly increasing"):
        RegularGridInterpolator((qb.asarray([0.0, 0.0, 1.0]),), qb.ones(3))
    with pytest.raises(ValueError, match="entries"):
        RegularGridInterpolator((qb.asarray([0.0, 1.0]),), qb.ones(3))
    with pytest.raises(ValueError, match="dimension"):
        RegularGridInterpolator(GRID, qb.asarray(V))(qb.ones((4, 2)))
    with pytest.raises(NotImplementedError, match="bounds_error"):
        RegularGridInterpolator(GRID, qb.asarray(V), bounds_error=True)


def test_tuple_points_1d_grid_float32_and_nan():
    xs, ys = np.linspace(0, 1, 5), np.linspace(0, 2, 4)
    v = rng.normal(size=(5, 4))
    pts = (np.array([0.3, 0.7]), np.array([1.1, 0.2]))
    got = RegularGridInterpolator((qb.asarray(xs), qb.asarray(ys)), qb.asarray(v))((qb.asarray(pts[0]), qb.asarray(pts[1])))
    np.testing.assert_allclose(got.numpy(), SciPyRGI((xs, ys), v)(pts), rtol=1e-13)
    one = RegularGridInterpolator((qb.asarray(xs),), qb.asarray(v[:, 0]))(qb.asarray([0.3, 0.6]))
    np.testing.assert_allclose(one.numpy(), SciPyRGI((xs,), v[:, 0])(np.array([0.3, 0.6])), rtol=1e-13)
    f32 = RegularGridInterpolator((xs, ys), qb.asarray(v.astype(np.float32)))(qb.asarray(np.array([[0.3, 1.1]], np.float32)))
    assert f32.dtype == qb.float32
    near = RegularGridInterpolator((qb.asarray(xs), qb.asarray(ys)), qb.asarray(v), method="nearest")
    assert np.isnan(near(qb.asarray([[np.nan, 1.0]])).numpy()).all()
