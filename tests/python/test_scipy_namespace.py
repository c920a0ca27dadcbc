"""quabla.numpy and quabla.scipy: jax.numpy's and jax.scipy's module names for ported code,
with SciPy's conventions where they differ from NumPy's (checked against SciPy)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.special as ssp

import quabla as qb
import quabla.numpy as jnp
import quabla.scipy.linalg as qsl
import quabla.scipy.sparse.linalg as qspl
import quabla.scipy.special as qsp

RNG = np.random.default_rng(3)
M = RNG.normal(size=(4, 4))
SPD = M @ M.T + 4 * np.eye(4)


def test_numpy_module_is_the_package():
    assert jnp.sin is qb.sin and jnp.vstack is qb.vstack and jnp.linalg is qb.linalg and jnp.pi == np.pi
    assert qb.numpy is jnp and "sin" in dir(jnp)
    with pytest.raises(AttributeError, match="quabla.numpy.*no_such_function"):
        jnp.no_such_function  # noqa: B018


def test_scipy_linalg_conventions():
    a = qb.array(SPD)
    np.testing.assert_allclose(np.asarray(qsl.cholesky(a)), sla.cholesky(SPD), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(qsl.cholesky(a, lower=True)), sla.cholesky(SPD, lower=True), rtol=1e-12,
                               atol=1e-12)
    tall = RNG.normal(size=(5, 3))
    for mode in ("full", "economic"):
        q, r = qsl.qr(qb.array(tall), mode=mode)
        qs, rs = sla.qr(tall, mode=mode)
        assert np.asarray(q).shape == qs.shape and np.asarray(r).shape == rs.shape
        np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), tall, atol=1e-12)
    (r_only,) = qsl.qr(qb.array(tall), mode="r")
    assert np.asarray(r_only).shape == sla.qr(tall, mode="r")[0].shape
    w, v = qsl.eigh(a)
    np.testing.assert_allclose(np.asarray(w), sla.eigh(SPD)[0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(qsl.eigh(a, eigvals_only=True)), sla.eigh(SPD, eigvals_only=True), rtol=1e-12)
    b = RNG.normal(size=4)
    for assume in ("gen", "pos"):
        np.testing.assert_allclose(np.asarray(qsl.solve(a, qb.array(b), assume_a=assume)), sla.solve(SPD, b),
                                   rtol=1e-11)
    np.testing.assert_allclose(np.asarray(qsl.expm(qb.array(M * 0.1))), sla.expm(M * 0.1), rtol=1e-12)
    with pytest.raises(ValueError, match="mode must be 'full', 'economic' or 'r'"):
        qsl.qr(qb.array(tall), mode="reduced")


def test_scipy_sparse_linalg_and_special():
    a = qb.array(SPD)
    b = qb.array(RNG.normal(size=4))
    x, info = qspl.cg(lambda v: a @ v, b, tol=1e-12)
    assert info is None
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(SPD, np.asarray(b)), rtol=1e-9)
    z = np.array([-3.0, -0.5, 0.0, 0.7, 2.0])
    p = np.array([0.1, 0.5, 0.9])
    cases = [(qsp.erf(z), ssp.erf(z)), (qsp.erfc(z), ssp.erfc(z)), (qsp.expit(z), ssp.expit(z)),
             (qsp.logit(p), ssp.logit(p)), (qsp.ndtr(z), ssp.ndtr(z)), (qsp.log_ndtr(z), ssp.log_ndtr(z)),
             (qsp.xlogy(np.array([0.0, 2.0, 1.0]), np.array([0.0, 3.0, 0.5])), ssp.xlogy([0.0, 2.0, 1.0], [0.0, 3.0, 0.5])),
             (qsp.xlog1py(np.array([0.0, 2.0]), np.array([-1.0, 0.5])), ssp.xlog1py([0.0, 2.0], [-1.0, 0.5])),
             (qsp.entr(np.array([-1.0, 0.0, 0.5, 2.0])), ssp.entr([-1.0, 0.0, 0.5, 2.0])),
             (qsp.softmax(z), ssp.softmax(z)), (qsp.log_softmax(z), ssp.log_softmax(z)),
             (qsp.logsumexp(z), ssp.logsumexp(z))]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
    deep = np.array([-25.0, -29.9, -30.1, -40.0, -200.0])  # past where ndtr underflows
    np.testing.assert_allclose(np.asarray(qsp.log_ndtr(deep)), ssp.log_ndtr(deep), rtol=1e-12)
    w = np.array([1.0, -2.0, 0.5, 0.0, 1.0])
    got, sign = qsp.logsumexp(qb.array(z), b=qb.array(w), return_sign=True)
    want, wsign = ssp.logsumexp(z, b=w, return_sign=True)
    np.testing.assert_allclose(float(got), want, rtol=1e-12)
    assert float(sign) == wsign
    # 0 * log 0 is 0 also for the derivative with respect to y
    assert np.isfinite(float(qb.grad(lambda y: qsp.xlogy(0.0, y))(qb.asarray(0.0))))
    np.testing.assert_allclose(float(qb.scipy.integrate.trapezoid(qb.array([1.0, 2.0, 4.0]))), 4.5)
