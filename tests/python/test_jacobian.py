"""jacobian/jacfwd/jacrev/hessian/hvp: forward vs reverse, finite differences, chunking."""
import numpy as np
import pytest

import quabla as qb
from quabla import _ad


def f(x):
    return qb.sin(x) * qb.sum(x ** 2) + qb.cumsum(x)


def fd_jacobian(fun, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        cols.append((fun(qb.array(x + e)).numpy() - fun(qb.array(x - e)).numpy()).ravel() / (2 * eps))
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("n", [1, 3, 7])
def test_forward_and_reverse_jacobians_agree_and_match_finite_differences(n):
    x = qb.array(np.linspace(-0.9, 1.3, n))
    jf, jr = qb.jacfwd(f)(x).numpy(), qb.jacrev(f)(x).numpy()
    np.testing.assert_allclose(jf, jr, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jf, fd_jacobian(f, x.numpy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(qb.jacobian(f)(x).numpy(), jf, rtol=1e-12, atol=1e-12)


def test_jacobian_shape_is_output_then_input():
    x = qb.array(np.ones((2, 3)))
    j = qb.jacobian(lambda x: qb.sum(x, axis=1))(x)
    assert j.shape == (2, 2, 3)
    np.testing.assert_array_equal(j.numpy(), np.stack([np.eye(2)[:, :, None].repeat(3, 2)[i] for i in range(2)]))


def test_chunked_directions_give_the_unchunked_jacobian(monkeypatch):
    x = qb.array(np.linspace(0.1, 1.0, 10))
    full = qb.jacfwd(f)(x).numpy()
    monkeypatch.setattr(_ad, "JACOBIAN_CHUNK", 3)  # 10 directions -> 4 chunks
    np.testing.assert_array_equal(qb.jacfwd(f)(x).numpy(), full)
    np.testing.assert_allclose(qb.jacrev(f)(x).numpy(), full, rtol=1e-12, atol=1e-12)


def test_hessian_and_hvp_match_finite_differences():
    def g(x):
        return qb.sum(qb.sin(x) * x ** 3) + qb.prod(x)

    x = qb.array([0.3, -0.5, 1.2])
    h = qb.hessian(g)(x).numpy()
    fd = fd_jacobian(qb.grad(g), x.numpy())
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h, h.T, rtol=1e-12)
    v = np.array([0.2, -1.0, 0.5])
    _, hv = qb.hvp(g, (x,), (qb.array(v),))
    np.testing.assert_allclose(hv[0].numpy(), h @ v, rtol=1e-12, atol=1e-12)


def test_third_derivative_closed_form():
    d3 = qb.grad(qb.grad(qb.grad(lambda x: qb.sin(2.0 * x) * x)))
    x = 0.7
    expected = -8 * np.cos(2 * x) * x - 12 * np.sin(2 * x)
    np.testing.assert_allclose(float(d3(qb.array(x))), expected, rtol=1e-12)
