"""quabla.scipy.linalg's block_diag, toeplitz, polar, eigh_tridiagonal and expm_frechet
against scipy.linalg, and the Frechet derivative against a directional derivative of expm."""
import numpy as np
import pytest
import scipy.linalg as SL

import quabla as qb
import quabla.scipy.linalg as QL

rng = np.random.default_rng(0)


def test_block_diag_and_toeplitz():
    a, b, c = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0]]), np.array([6.0, 7.0])
    np.testing.assert_array_equal(QL.block_diag(qb.asarray(a), qb.asarray(b), qb.asarray(c)).numpy(),
                                  SL.block_diag(a, b, c))
    np.testing.assert_array_equal(QL.block_diag(qb.asarray(2.0), qb.asarray(a)).numpy(), SL.block_diag(2.0, a))
    col, row = np.array([1.0, 2.0, 3.0]), np.array([9.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(QL.toeplitz(qb.asarray(col), qb.asarray(row)).numpy(), SL.toeplitz(col, row))
    np.testing.assert_array_equal(QL.toeplitz(qb.asarray(col)).numpy(), SL.toeplitz(col))
    with pytest.raises(ValueError, match="at most two"):
        QL.block_diag(qb.ones((2, 2, 2)))


@pytest.mark.parametrize("shape, side", [((4, 3), "right"), ((3, 3), "left"), ((3, 3), "right")])
def test_polar(shape, side):
    m = rng.normal(size=shape)
    u, p = QL.polar(qb.asarray(m), side=side)
    eu, ep = SL.polar(m, side=side)
    np.testing.assert_allclose(u.numpy(), eu, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(p.numpy(), ep, rtol=1e-12, atol=1e-13)


def test_eigh_tridiagonal():
    d, e = np.array([2.0, 3.0, 4.0, 5.0]), np.array([1.0, 0.5, 0.25])
    np.testing.assert_allclose(QL.eigh_tridiagonal(qb.asarray(d), qb.asarray(e), eigvals_only=True).numpy(),
                               SL.eigh_tridiagonal(d, e, eigvals_only=True), rtol=1e-13)
    w, v = QL.eigh_tridiagonal(qb.asarray(d), qb.asarray(e))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(t @ v.numpy(), v.numpy() * w.numpy(), atol=1e-12)
    np.testing.assert_allclose(
        QL.eigh_tridiagonal(qb.asarray(d), qb.asarray(e), eigvals_only=True, select="i", select_range=(1, 2)).numpy(),
        SL.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)), rtol=1e-13)
    with pytest.raises(ValueError, match="n - 1"):
        QL.eigh_tridiagonal(qb.asarray(d), qb.asarray(e[:2]))


def test_expm_frechet():
    a, e = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3, 3))
    m, frechet = QL.expm_frechet(qb.asarray(a), qb.asarray(e))
    em, ef = SL.expm_frechet(a, e)
    np.testing.assert_allclose(m.numpy(), em, rtol=1e-12)
    np.testing.assert_allclose(frechet.numpy(), ef, rtol=1e-11, atol=1e-13)
    # It is the directional derivative of expm: the JVP of qb.linalg.expm.
    _, tangent = qb.jvp(qb.linalg.expm, (qb.asarray(a),), (qb.asarray(e),))
    np.testing.assert_allclose(frechet.numpy(), tangent.numpy(), rtol=1e-10, atol=1e-12)
    only = QL.expm_frechet(qb.asarray(a), qb.asarray(e), compute_expm=False)
    np.testing.assert_allclose(only.numpy(), ef, rtol=1e-11, atol=1e-13)
