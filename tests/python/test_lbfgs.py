"""L-BFGS: Rosenbrock, a small PINN after Adam, non-finite trial points, SciPy iteration counts."""
import math

import numpy as np
import pytest

import quabla as qb


def rosenbrock(p):
    x, y = p["x"], p["y"]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def test_rosenbrock_converges_from_the_classic_start():
    params, info = qb.optim.LBFGS(max_iterations=200).minimize(rosenbrock, {"x": qb.array(-1.2), "y": qb.array(1.0)})
    assert abs(params["x"].item() - 1.0) < 1e-5 and abs(params["y"].item() - 1.0) < 1e-5
    assert info.converged and info.loss < 1e-10
    assert info.function_evaluations >= info.iterations > 0
    scipy_optimize = pytest.importorskip("scipy.optimize")

    def f(v):
        return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2

    def g(v):
        return np.array([-2 * (1 - v[0]) - 400 * v[0] * (v[1] - v[0] ** 2), 200 * (v[1] - v[0] ** 2)])

    ref = scipy_optimize.minimize(f, [-1.2, 1.0], jac=g, method="L-BFGS-B")
    assert info.iterations <= 2 * ref.nit + 10


def test_small_pinn_after_adam_improves_a_thousandfold():
    def u(p, x):
        h = qb.tanh(qb.reshape(x, (1, 1)) @ p["w1"] + p["b1"])
        return qb.reshape(h @ p["w2"] + p["b2"], ())

    u_xx = qb.vmap(qb.grad(qb.grad(u, argnums=1), argnums=1), in_axes=(None, 0))
    u_b = qb.vmap(u, in_axes=(None, 0))

    def loss(p, x):
        res = u_xx(p, x) + math.pi ** 2 * qb.sin(math.pi * x)
        return qb.mean(res ** 2) + qb.mean(u_b(p, qb.array([0.0, 1.0])) ** 2)

    k1, k2 = qb.random.split(qb.random.key(0))
    p = {"w1": qb.random.glorot_normal(k1, (1, 6)), "b1": qb.zeros(6),
         "w2": qb.random.glorot_normal(k2, (6, 1)), "b2": qb.zeros(1)}
    x = qb.array([(i + 1) / 18 for i in range(17)])
    adam, step = qb.optim.Adam(0.01), qb.jit(qb.value_and_grad(loss))
    for _ in range(300):
        _, g = step(p, x)
        p = adam.step(p, g)
    adam_loss = loss(p, x).item()
    p2, info = qb.optim.LBFGS(max_iterations=500).minimize(loss, p, x)
    assert info.loss < 1e-3 * adam_loss
    assert math.isclose(loss(p2, x).item(), info.loss, rel_tol=1e-12)
    assert p2["w1"].shape == (1, 6) and p2["w1"].dtype == qb.float64


def test_non_finite_trial_losses_are_backtracked_from():
    # Finite only below x = 2; the minimum of the finite part is at 1.5, and a unit step from
    # x = 0 along the steepest descent direction lands in the non-finite region.
    def f(p):
        x = p["x"]
        return qb.where(x < 2.0, (x - 1.5) ** 2, math.inf) * 1.0

    params, info = qb.optim.LBFGS(max_iterations=50).minimize(f, {"x": qb.array(-40.0)})
    assert math.isfinite(info.loss)
    assert abs(params["x"].item() - 1.5) < 1e-4


def test_float32_parameters_come_back_float32():
    p = {"w": qb.array([3.0, -2.0], dtype=qb.float32)}
    out, info = qb.optim.LBFGS().minimize(lambda p: qb.sum((p["w"] - 1.0) ** 2), p)
    assert out["w"].dtype == qb.float32
    np.testing.assert_allclose(out["w"].numpy(), [1.0, 1.0], atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError):
        qb.optim.LBFGS(line_search="backtracking")
    with pytest.raises(ValueError, match="not finite"):
        qb.optim.LBFGS().minimize(lambda p: p["x"] * math.inf, {"x": qb.array(1.0)})
