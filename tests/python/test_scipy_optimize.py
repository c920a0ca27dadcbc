"""quabla.scipy.optimize.minimize against SciPy's minimizer and closed forms: BFGS reaches
Rosenbrock's minimum, its inverse-Hessian estimate of a quadratic is the exact inverse,
args pass through, L-BFGS stops at a stationary point, the same minimisation runs under jit
and vmap (one per example), and misuse raises clearly."""
import numpy as np
import pytest
import scipy.optimize as so

import quabla as qb
from quabla.scipy.optimize import minimize


def rosen(x):
    return qb.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_bfgs_reaches_rosenbrock_minimum_like_scipy():
    x0 = np.array([-1.2, 1.0, 0.5, -0.3])
    r = minimize(rosen, qb.asarray(x0), method="BFGS")
    s = so.minimize(so.rosen, x0, jac=so.rosen_der, method="BFGS")
    assert r.success and r.status == 0
    np.testing.assert_allclose(r.x.numpy(), s.x, atol=1e-6)
    np.testing.assert_allclose(r.x.numpy(), np.ones(4), atol=1e-6)
    assert float(r.fun.item()) < 1e-12 and np.max(np.abs(r.jac.numpy())) <= 1e-5
    assert r.nfev >= r.nit > 0


def test_bfgs_inverse_hessian_of_a_quadratic_and_args():
    a = np.array([[3.0, 1.0], [1.0, 2.0]])
    q = minimize(lambda x, m: 0.5 * x @ m @ x - x[0], qb.zeros(2), args=(qb.asarray(a),), method="BFGS")
    np.testing.assert_allclose(q.x.numpy(), np.linalg.solve(a, [1.0, 0.0]), rtol=1e-9)
    np.testing.assert_allclose(q.hess_inv.numpy(), np.linalg.inv(a), rtol=1e-8)


def test_lbfgs_reaches_a_stationary_point():
    r = minimize(rosen, qb.asarray([-1.2, 1.0]), method="l-bfgs-experimental-do-not-rely-on-this")
    assert r.success
    np.testing.assert_allclose(r.x.numpy(), [1.0, 1.0], atol=1e-5)
    assert r.hess_inv is None


def test_misuse_raises():
    with pytest.raises(ValueError, match="1-D"):
        minimize(rosen, qb.zeros((2, 2)), method="BFGS")
    with pytest.raises(ValueError, match="method"):
        minimize(rosen, qb.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match="unknown options"):
        minimize(rosen, qb.zeros(2), method="BFGS", options={"maxiters": 3})
    with pytest.raises(TypeError, match="scalar"):
        minimize(lambda x: x * 2, qb.zeros(2), method="BFGS")
    with pytest.raises(TypeError, match="tuple"):
        minimize(rosen, qb.zeros(2), args=[1.0], method="BFGS")
    with pytest.raises(ValueError, match="not finite"):
        minimize(lambda x: qb.sum(qb.log(x)), -qb.ones(2), method="BFGS")
    r = minimize(rosen, qb.asarray([-1.2, 1.0]), method="BFGS", options={"maxiter": 2})
    assert not r.success and r.status == 1 and r.nit == 2


def test_options_are_checked_not_ignored():
    for bad in ({"ftol": 1e-3}, {"maxfun": 3}):
        with pytest.raises(ValueError, match="unknown options"):
            minimize(rosen, qb.zeros(2), method="BFGS", options=bad)
    r = minimize(rosen, qb.asarray([-1.2, 1.0]), method="BFGS", options={"maxls": 10})
    assert r.success


def _bfgs_scipy(fn, x0):
    value_and_grad = qb.jit(qb.value_and_grad(fn))
    vg = lambda v: tuple(np.asarray(a) for a in value_and_grad(qb.asarray(v)))
    return so.minimize(vg, x0, jac=True, method="BFGS", options={"gtol": 1e-8})


@pytest.mark.parametrize("method", ["BFGS", "l-bfgs-experimental-do-not-rely-on-this"])
def test_jit_and_vmap_run_the_same_minimisation(method):
    starts = np.random.default_rng(0).uniform(-2, 2, (4, 3))
    eager = [minimize(rosen, qb.asarray(x0), method=method) for x0 in starts]
    jitted = qb.jit(lambda x0: minimize(rosen, x0, method=method))
    batched = qb.jit(qb.vmap(lambda x0: minimize(rosen, x0, method=method)))(qb.asarray(starts))
    for i, (x0, r) in enumerate(zip(starts, eager)):
        assert bool(r.success)
        np.testing.assert_allclose(r.x.numpy(), np.ones(3), atol=2e-5)
        j = jitted(qb.asarray(x0))
        np.testing.assert_array_equal(j.x.numpy(), r.x.numpy())
        assert int(j.nit) == int(r.nit) and int(j.nfev) == int(r.nfev)
        # each example stops on its own: the batch's iteration counts are the examples'
        assert int(batched.nit[i]) == int(r.nit) and int(batched.status[i]) == int(r.status)
        np.testing.assert_allclose(batched.x.numpy()[i], r.x.numpy(), rtol=1e-12, atol=1e-14)


def test_parameter_fit_inside_jit_matches_scipy():
    t = np.linspace(0.0, 3.0, 40)
    y = 2.5 * np.exp(-1.3 * t) + 0.05 * np.sin(7 * t)

    def fit(data, x0):
        loss = lambda p, tt, yy: qb.mean((p[0] * qb.exp(-p[1] * tt) - yy) ** 2)
        return minimize(loss, x0, args=(data[0], data[1]), method="BFGS", options={"gtol": 1e-8})

    r = qb.jit(fit)(qb.asarray(np.stack([t, y])), qb.asarray([1.0, 1.0]))
    want = _bfgs_scipy(lambda p: qb.mean((p[0] * qb.exp(-p[1] * qb.asarray(t)) - qb.asarray(y)) ** 2), [1.0, 1.0])
    assert bool(r.success) and int(r.status) == 0
    np.testing.assert_allclose(r.x.numpy(), want.x, rtol=1e-7)
    assert int(r.nit) == want.nit  # the same iterates as SciPy's BFGS


def test_bfgs_on_a_logistic_regression_matches_scipy():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(60, 5))
    labels = (a @ [1.0, -2.0, 0.5, 0.0, 1.5] + rng.normal(size=60) > 0).astype(float)
    am, lm = qb.asarray(a), qb.asarray(labels)
    nll = lambda w: qb.mean(qb.logaddexp(0.0, am @ w) - lm * (am @ w)) + 0.01 * qb.sum(w * w)
    r = minimize(nll, qb.zeros(5), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(r.x.numpy(), _bfgs_scipy(nll, np.zeros(5)).x, rtol=1e-6, atol=1e-8)
    lb = minimize(nll, qb.zeros(5), method="l-bfgs-experimental-do-not-rely-on-this",
                  options={"gtol": 1e-9, "ftol": 0.0})
    np.testing.assert_allclose(lb.x.numpy(), r.x.numpy(), rtol=1e-5, atol=1e-7)
    # the inverse-Hessian estimate approaches the inverse Hessian at the minimum
    h = np.asarray(qb.hessian(nll)(r.x))
    np.testing.assert_allclose(r.hess_inv.numpy() @ h, np.eye(5), atol=0.1)


def test_float32_minimisation_stays_float32():
    for method in ("BFGS", "l-bfgs-experimental-do-not-rely-on-this"):
        r = minimize(rosen, qb.asarray([-1.2, 1.0], dtype=qb.float32), method=method)
        assert r.x.dtype == qb.float32 and r.fun.dtype == qb.float32 and bool(r.success)
        np.testing.assert_allclose(r.x.numpy(), [1.0, 1.0], atol=1e-3)


def test_unbounded_objective_reports_a_failed_line_search():
    # a line search that never brackets a minimum: status 2 + 3 (its iterations exhausted);
    # the step taken is the best point it saw, finite
    r = minimize(lambda x: -qb.sum(x), qb.zeros(2), method="BFGS")
    assert not bool(r.success) and int(r.status) == 5
    assert np.all(np.isfinite(r.x.numpy())) and float(r.fun) < 0
    lb = minimize(lambda x: -qb.sum(x), qb.zeros(2), method="l-bfgs-experimental-do-not-rely-on-this")
    assert not bool(lb.success) and int(lb.status) == 5


def test_lbfgs_limits_and_tolerances():
    x0 = qb.asarray([-1.2, 1.0, 0.5])
    method = "l-bfgs-experimental-do-not-rely-on-this"
    r = minimize(rosen, x0, method=method, options={"maxiter": 3})
    assert int(r.status) == 1 and int(r.nit) == 3 and not bool(r.success)
    r = minimize(rosen, x0, method=method, options={"maxfun": 5})
    assert int(r.status) == 2 and int(r.nfev) >= 5 and not bool(r.success)
    r = minimize(rosen, x0, method=method, options={"ftol": 1e-3})
    assert int(r.status) == 4 and bool(r.success) and float(r.fun) < float(rosen(x0))
    small = minimize(rosen, x0, method=method, options={"maxcor": 2, "gtol": 1e-9, "ftol": 0.0})
    assert bool(small.success) and int(small.status) == 0
    np.testing.assert_allclose(small.x.numpy(), np.ones(3), atol=1e-7)
