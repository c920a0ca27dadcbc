"""quabla.scipy.optimize.minimize against SciPy's minimizer and closed forms: BFGS reaches
Rosenbrock's minimum, its inverse-Hessian estimate of a quadratic is the exact inverse,
args pass through, L-BFGS stops at a stationary point, and misuse raises clearly."""
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
    with pytest.raises(TypeError, match="outside qb.jit"):
        qb.jit(lambda x: minimize(rosen, x, method="BFGS").x)(qb.zeros(2))
    r = minimize(rosen, qb.asarray([-1.2, 1.0]), method="BFGS", options={"maxiter": 2})
    assert not r.success and r.status == 1 and r.nit == 2


def test_options_are_checked_not_ignored():
    for bad in ({"ftol": 1e-3}, {"maxfun": 3}):
        with pytest.raises(ValueError, match="unknown options"):
            minimize(rosen, qb.zeros(2), method="BFGS", options=bad)
    r = minimize(rosen, qb.asarray([-1.2, 1.0]), method="BFGS", options={"maxls": 10})
    assert r.success
