"""qb.linalg: values against NumPy/SciPy (residual bounds), batching and broadcasting in
float32 and float64, derivatives (forward vs reverse, float64 central differences, second
and third order) under jit and vmap, singular input, and argument errors."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

import quabla as qb

RNG = np.random.default_rng(7)
EPS = {"float32": np.finfo(np.float32).eps, "float64": np.finfo(np.float64).eps}


def _spd(shape, n, rng=RNG, cond=10.0):
    a = rng.normal(size=shape + (n, n))
    return a @ np.swapaxes(a, -1, -2) / n + np.eye(n) * (1.0 + 1.0 / cond)


def _np(x):
    return np.asarray(x)


def _resid(a, x, b, dtype):
    # ||A x - b|| / (||A|| ||x|| eps n), per matrix
    n = a.shape[-1]
    r = np.linalg.norm(a @ x - b, axis=(-2, -1))
    return r / (np.linalg.norm(a, axis=(-2, -1)) * np.linalg.norm(x, axis=(-2, -1)) * EPS[dtype] * n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_solve_values_batched_and_broadcast(dtype, batch):
    n = 5
    a = RNG.normal(size=batch + (n, n)).astype(dtype)
    b = RNG.normal(size=batch + (n, 3)).astype(dtype)
    x = _np(qb.linalg.solve(a, b))
    assert x.dtype == dtype and x.shape == batch + (n, 3)
    assert (_resid(a.astype(np.float64), x.astype(np.float64), b.astype(np.float64), dtype) < 50).all()
    # a vector right-hand side, and batch axes broadcast (one matrix, many right-hand sides)
    v = RNG.normal(size=(n,)).astype(dtype)
    np.testing.assert_allclose(_np(qb.linalg.solve(a, v)), np.linalg.solve(a, v[..., None])[..., 0],
                               rtol=1e-3 if dtype == "float32" else 1e-10, atol=1e-4 if dtype == "float32" else 1e-12)
    many = RNG.normal(size=(4,) + batch + (n, 2)).astype(dtype)
    got = _np(qb.linalg.solve(a, many))
    assert got.shape == (4,) + batch + (n, 2)
    np.testing.assert_allclose(got, np.linalg.solve(np.broadcast_to(a, many.shape[:-1] + (n,)), many),
                               rtol=2e-3 if dtype == "float32" else 1e-9, atol=1e-3 if dtype == "float32" else 1e-11)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky_reconstructs_and_matches_numpy(dtype):
    a = _spd((2, 3), 6).astype(dtype)
    l = _np(qb.linalg.cholesky(a))
    assert l.dtype == dtype
    np.testing.assert_array_equal(np.triu(l, 1), 0)
    tol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(l @ np.swapaxes(l, -1, -2), a, rtol=tol, atol=tol)
    np.testing.assert_allclose(l, np.linalg.cholesky(a), rtol=tol * 10, atol=tol * 10)
    u = _np(qb.linalg.cholesky(a, upper=True))
    np.testing.assert_allclose(u, np.swapaxes(l, -1, -2))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, "T"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_scipy(lower, trans, unit):
    n = 6
    a = RNG.normal(size=(n, n)) + 4 * np.eye(n)
    b = RNG.normal(size=(n, 3))
    got = _np(qb.linalg.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit))
    np.testing.assert_allclose(got, sla.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit),
                               rtol=1e-12, atol=1e-13)
    batched = _np(qb.linalg.solve_triangular(np.stack([a, a * 2]), b[:, 0], lower=lower))
    np.testing.assert_allclose(batched[1], sla.solve_triangular(a * 2, b[:, 0], lower=lower), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 3, 12, 40])
def test_eigh_values_orthogonality_and_reconstruction(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(2, n, n))
    a = (a + np.swapaxes(a, -1, -2)).astype(dtype)
    w, v = qb.linalg.eigh(a)
    w, v = _np(w), _np(v)
    assert w.dtype == dtype and w.shape == (2, n) and v.shape == (2, n, n)
    tol = 5e-4 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=tol, atol=tol * n)
    assert (np.diff(w, axis=-1) >= 0).all()
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(n), v.shape), atol=tol * n)
    np.testing.assert_allclose(v * w[..., None, :] @ np.swapaxes(v, -1, -2), a, atol=tol * n * 4)
    np.testing.assert_allclose(_np(qb.linalg.eigvalsh(a)), w)
    # UPLO without symmetrization reads one triangle
    lower = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    np.testing.assert_allclose(_np(qb.linalg.eigh(np.tril(a) + 5.0 * np.triu(np.ones((n, n)), 1).astype(dtype),
                                                  symmetrize_input=False)[0]),
                               np.linalg.eigvalsh(lower), rtol=tol, atol=tol * n)
    upper = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    np.testing.assert_allclose(_np(qb.linalg.eigh(np.triu(a), UPLO="U", symmetrize_input=False)[0]),
                               np.linalg.eigvalsh(upper), rtol=tol, atol=tol * n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (40, 33)])
def test_svd_matches_numpy_and_reconstructs(dtype, shape):
    a = RNG.normal(size=shape).astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-12
    for full in (False, True):
        u, s, vh = (_np(t) for t in qb.linalg.svd(a, full_matrices=full))
        nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
        assert u.shape == nu.shape and s.shape == ns.shape and vh.shape == nvh.shape and u.dtype == dtype
        np.testing.assert_allclose(s, ns, rtol=tol * 10, atol=tol * 10)
        k = s.shape[-1]
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=tol * 20)
        m, n = shape[-2:]
        np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2),
                                   atol=tol * 20)
        np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2),
                                   atol=tol * 20)
    np.testing.assert_allclose(_np(qb.linalg.svdvals(a)), np.linalg.svd(a, compute_uv=False), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (40, 33)])
def test_qr_matches_numpy(dtype, shape):
    a = RNG.normal(size=shape).astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-12
    for mode in ("reduced", "complete"):
        q, r = (_np(t) for t in qb.linalg.qr(a, mode))
        nq, nr = np.linalg.qr(a, mode)
        assert q.shape == nq.shape and r.shape == nr.shape and q.dtype == dtype
        np.testing.assert_allclose(q @ r, a, atol=tol * 20)
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
                                   atol=tol * 20)
        np.testing.assert_array_equal(np.tril(r, -1), 0)
        np.testing.assert_allclose(np.abs(r), np.abs(nr), rtol=tol * 50, atol=tol * 50)
    np.testing.assert_allclose(np.abs(_np(qb.linalg.qr(a, "r"))), np.abs(np.linalg.qr(a, "r")), rtol=tol * 50, atol=tol * 50)
    with pytest.raises(ValueError, match="mode"):
        qb.linalg.qr(a, "full")


@pytest.mark.parametrize("scale", [0.0, 0.01, 1.0, 10.0, 60.0])
def test_expm_matches_scipy(scale):
    a = RNG.normal(size=(3, 5, 5)) * scale / 3
    got = _np(qb.linalg.expm(a))
    want = np.stack([sla.expm(x) for x in a])
    np.testing.assert_allclose(got, want, rtol=1e-12 * max(1.0, scale), atol=1e-13 * np.abs(want).max())
    np.testing.assert_allclose(_np(qb.jit(qb.linalg.expm)(a)), got, rtol=1e-15)
    # exp(A) exp(-A) = I and the exponential of a diagonal matrix
    np.testing.assert_allclose(_np(qb.linalg.expm(np.diag([0.5, -1.0, 2.0]))), np.diag(np.exp([0.5, -1.0, 2.0])), rtol=1e-14)


@pytest.mark.parametrize("n", [1, 3, 8, 40])
def test_lu_family_matches_scipy(n):
    a = RNG.normal(size=(n, n))
    b = RNG.normal(size=(n, 2))
    lu, piv = qb.linalg.lu_factor(a)
    slu, spiv = sla.lu_factor(a)
    np.testing.assert_allclose(_np(lu), slu, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(_np(piv), spiv)
    for trans in (0, 1):
        np.testing.assert_allclose(_np(qb.linalg.lu_solve((lu, piv), b, trans=trans)), sla.lu_solve((slu, spiv), b, trans=trans),
                                   rtol=1e-11, atol=1e-12)
    p, l, u = (_np(t) for t in qb.linalg.lu(a))
    sp, sl_, su = sla.lu(a)
    np.testing.assert_array_equal(p, sp)
    np.testing.assert_allclose(l, sl_, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(u, su, rtol=1e-12, atol=1e-13)
    pl, u2 = qb.linalg.lu(a, permute_l=True)
    np.testing.assert_allclose(_np(pl) @ _np(u2), a, atol=1e-12)
    # batched, under jit, with a vector right-hand side
    A, B = RNG.normal(size=(3, n, n)), RNG.normal(size=(3, n))
    got = _np(qb.jit(lambda a, b: qb.linalg.lu_solve(qb.linalg.lu_factor(a), b))(A, B))
    np.testing.assert_allclose(got, np.linalg.solve(A, B[..., None])[..., 0], rtol=1e-9, atol=1e-11)


def test_pinv_lstsq_rank_cond_and_svd_norms():
    a = RNG.normal(size=(6, 4))
    np.testing.assert_allclose(_np(qb.linalg.pinv(a)), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    low = RNG.normal(size=(6, 2)) @ RNG.normal(size=(2, 5))  # rank 2
    np.testing.assert_allclose(_np(qb.linalg.pinv(low)), np.linalg.pinv(low), rtol=1e-8, atol=1e-10)
    assert int(qb.linalg.matrix_rank(low)) == 2 and int(qb.linalg.matrix_rank(a)) == 4
    b = RNG.normal(size=6)
    x, res, rank, s = qb.linalg.lstsq(a, b)
    nx, nres, nrank, ns = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(_np(x), nx, rtol=1e-10)
    np.testing.assert_allclose(_np(res), nres, rtol=1e-10)
    assert int(rank) == nrank
    np.testing.assert_allclose(_np(s), ns, rtol=1e-12)
    sq = RNG.normal(size=(3, 5, 5))
    for p in (None, 2, -2, "fro", 1, np.inf):
        np.testing.assert_allclose(_np(qb.linalg.cond(sq, p)), np.linalg.cond(sq, p), rtol=1e-9)
    for o in (2, -2, "nuc"):
        np.testing.assert_allclose(_np(qb.linalg.norm(sq, o, axis=(1, 2))), np.linalg.norm(sq, o, axis=(1, 2)), rtol=1e-12)
        np.testing.assert_allclose(_np(qb.linalg.norm(sq, o, axis=(2, 1), keepdims=True)),
                                   np.linalg.norm(sq, o, axis=(2, 1), keepdims=True), rtol=1e-12)


def test_det_slogdet_inv_cho_and_compositions():
    a = RNG.normal(size=(3, 5, 5))
    s, l = qb.linalg.slogdet(a)
    ns, nl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(_np(s), ns)
    np.testing.assert_allclose(_np(l), nl, rtol=1e-13)
    np.testing.assert_allclose(_np(qb.linalg.det(a)), np.linalg.det(a), rtol=1e-12)
    inv = _np(qb.linalg.inv(a))
    np.testing.assert_allclose(inv @ a, np.broadcast_to(np.eye(5), a.shape), atol=1e-12)
    spd = _spd((), 5)
    b = RNG.normal(size=(5, 2))
    for lower in (True, False):
        c = qb.linalg.cho_factor(spd, lower=lower)
        np.testing.assert_allclose(_np(qb.linalg.cho_solve(c, b)), sla.cho_solve(sla.cho_factor(spd), b), rtol=1e-11)
    for p in (-3, -1, 0, 1, 2, 5):
        np.testing.assert_allclose(_np(qb.linalg.matrix_power(a[0], p)), np.linalg.matrix_power(a[0], p), rtol=1e-9,
                                   atol=1e-12)
    ms = [RNG.normal(size=s) for s in [(4,), (4, 6), (6, 2), (2, 3), (3,)]]
    np.testing.assert_allclose(_np(qb.linalg.multi_dot(ms)), np.linalg.multi_dot(ms), rtol=1e-12)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norms(ord):
    a = RNG.normal(size=(2, 4, 3))
    np.testing.assert_allclose(_np(qb.linalg.norm(a, ord, axis=(1, 2))), np.linalg.norm(a, ord, axis=(1, 2)), rtol=1e-13)
    np.testing.assert_allclose(_np(qb.linalg.norm(a, ord, axis=(1, 2), keepdims=True)),
                               np.linalg.norm(a, ord, axis=(1, 2), keepdims=True), rtol=1e-13)


@pytest.mark.parametrize("ord", [None, 1, 2, 3.5, np.inf, -np.inf, 0])
def test_vector_norms(ord):
    v = RNG.normal(size=(3, 7))
    np.testing.assert_allclose(_np(qb.linalg.norm(v, ord, axis=1)), np.linalg.norm(v, ord, axis=1), rtol=1e-13)
    np.testing.assert_allclose(float(qb.linalg.norm(v[0], ord)), np.linalg.norm(v[0], ord), rtol=1e-13)
    np.testing.assert_allclose(float(qb.linalg.norm(v, 2, axis=(0, 1))), np.linalg.norm(v, 2), rtol=1e-12)


def test_singular_and_indefinite_input_give_inf_or_nan_inside_jit():
    z = np.zeros((3, 3))
    s, l = qb.jit(qb.linalg.slogdet)(z)
    assert float(s) == 0.0 and float(l) == -np.inf
    assert float(qb.jit(qb.linalg.det)(z)) == 0.0
    assert not np.isfinite(_np(qb.jit(qb.linalg.solve)(z, np.ones(3)))).all()
    assert np.isnan(_np(qb.jit(qb.linalg.cholesky)(-np.eye(3)))).all()
    # one bad matrix of a batch does not spoil the others
    batch = np.stack([np.eye(3) * 2, -np.eye(3)])
    out = _np(qb.linalg.cholesky(batch))
    np.testing.assert_allclose(out[0], np.eye(3) * np.sqrt(2))
    assert np.isnan(out[1]).all()


def test_derivatives_of_unsupported_decomposition_shapes_raise():
    with pytest.raises(ValueError, match="reduced QR"):
        qb.grad(lambda m: qb.sum(qb.linalg.qr(m).R))(qb.array(RNG.normal(size=(2, 4))))
    with pytest.raises(ValueError, match="full_matrices"):
        qb.grad(lambda m: qb.sum(qb.linalg.svd(m).U))(qb.array(RNG.normal(size=(4, 2))))
    # square full SVD is the reduced one: differentiable
    assert np.isfinite(_np(qb.grad(lambda m: qb.sum(qb.linalg.svd(m).S))(qb.array(RNG.normal(size=(3, 3)))))).all()


def test_argument_errors_name_the_function_and_shapes():
    with pytest.raises(ValueError, match=r"solve: expected a square matrix.*\[3, 4\]"):
        qb.linalg.solve(np.ones((3, 4)), np.ones(3))
    # integer matrices are promoted to the default float dtype (as jax.numpy.linalg does)
    ints = qb.array([[4, 2], [2, 3]], dtype=qb.int32)
    assert qb.linalg.cholesky(ints).dtype == qb.float64
    np.testing.assert_allclose(np.asarray(qb.linalg.cholesky(ints)), np.linalg.cholesky([[4.0, 2.0], [2.0, 3.0]]))
    np.testing.assert_allclose(np.asarray(qb.linalg.solve(ints, qb.array([1, 2]))), np.linalg.solve([[4, 2], [2, 3]], [1, 2]))
    assert float(qb.linalg.det(ints)) == pytest.approx(8.0) and qb.linalg.matrix_power(ints, 2).dtype == qb.int32
    with pytest.raises(ValueError, match="right-hand side"):
        qb.linalg.solve(np.eye(3), np.ones(4))
    with pytest.raises(ValueError):
        qb.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))  # batch axes that do not broadcast
    with pytest.raises(ValueError, match="slogdet"):
        qb.linalg.slogdet(np.ones(3))
    with pytest.raises(ValueError, match="trans"):
        qb.linalg.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(TypeError, match="integer"):
        qb.linalg.matrix_power(np.eye(2), 1.5)


def _fd_check(f, x, rel=1e-6, n_dirs=2):
    """reverse-mode gradient against float64 central differences along random directions."""
    g = _np(qb.grad(f)(qb.array(x)))
    for _ in range(n_dirs):
        d = RNG.normal(size=x.shape)
        h = 1e-6
        fd = (float(f(qb.array(x + h * d))) - float(f(qb.array(x - h * d)))) / (2 * h)
        assert np.sum(g * d) == pytest.approx(fd, rel=rel, abs=1e-8)


def test_first_derivatives_against_differences_and_forward_mode():
    a = RNG.normal(size=(4, 4)) + 3 * np.eye(4)
    spd = _spd((), 4)
    b = RNG.normal(size=(4, 2))
    fns = {
        "solve": (lambda m: qb.sum(qb.sin(qb.linalg.solve(m, b))), a),
        "solve_rhs": (lambda v: qb.sum(qb.linalg.solve(a, v) ** 2), b),
        "cholesky": (lambda m: qb.sum(qb.linalg.cholesky(m) ** 3), spd),
        "tri": (lambda m: qb.sum(qb.linalg.solve_triangular(m, b, lower=True, trans=1) ** 2), a),
        "tri_unit": (lambda m: qb.sum(qb.linalg.solve_triangular(m, b, unit_diagonal=True) ** 2), a),
        "slogdet": (lambda m: qb.linalg.slogdet(m)[1], a),
        "det": (lambda m: qb.linalg.det(m), a),
        "inv": (lambda m: qb.sum(qb.linalg.inv(m) ** 2), a),
        "cho_solve": (lambda m: qb.sum(qb.linalg.cho_solve(qb.linalg.cho_factor(m), b)), spd),
        # singular values, and singular vectors of tall (m > n) and wide (n > m) slices
        "svd": (lambda m: qb.sum(qb.linalg.svdvals(m) ** 3)
                + qb.sum(qb.linalg.svd(m[:, :3], full_matrices=False).U[:, 0] ** 4)
                + qb.sum(qb.linalg.svd(m[:3], full_matrices=False).Vh[0] ** 4), a),
        "pinv": (lambda m: qb.sum(qb.linalg.pinv(m[:, :3]) ** 2), a),
        "qr": (lambda m: qb.sum(qb.linalg.qr(m[:, :3]).Q ** 3) + qb.sum(qb.linalg.qr(m).R ** 2), a),
        "expm": (lambda m: qb.sum(qb.linalg.expm(m * 0.7) ** 2), a),
        "lu": (lambda m: qb.sum(qb.linalg.lu(m)[1] ** 3) + qb.sum(qb.linalg.lu(m)[2] ** 2), a),
        "lu_solve": (lambda m: qb.sum(qb.linalg.lu_solve(qb.linalg.lu_factor(m), b) ** 2), a),
        "eigh": (lambda m: qb.sum(qb.linalg.eigh(m).eigenvalues ** 3) + qb.sum(qb.linalg.eigh(m).eigenvectors[..., 0] ** 4),
                 spd + np.diag([0.0, 1.0, 2.5, 4.0])),
    }
    for name, (f, x) in fns.items():
        _fd_check(f, x)
        # forward mode agrees with reverse mode
        d = RNG.normal(size=x.shape)
        _, t = qb.jvp(f, (qb.array(x),), (qb.array(d),))
        assert float(t) == pytest.approx(float(np.sum(_np(qb.grad(f)(qb.array(x))) * d)), rel=1e-10), name


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 8), batch=st.sampled_from([(), (2,), (2, 1)]), seed=st.integers(0, 2 ** 16))
def test_second_and_third_order_derivatives(n, batch, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=batch + (n, n)) + (n + 1) * np.eye(n)
    spd = _spd(batch, n, rng)
    b = rng.normal(size=batch + (n, 1))
    cases = [
        (lambda m: qb.sum(qb.linalg.solve(m, b) ** 2), a),
        (lambda m: qb.sum(qb.linalg.cholesky(m) ** 2), spd),
        (lambda m: qb.sum(qb.linalg.slogdet(m)[1]), a),
        (lambda m: qb.sum(qb.linalg.eigvalsh(m) ** 2) + qb.sum(qb.linalg.eigh(m).eigenvectors[..., 0] ** 2 * m[..., 0]),
         spd + np.diag(np.arange(n) * 2.0)),
    ]
    for f, x in cases:
        d1, d2 = rng.normal(size=x.shape), rng.normal(size=x.shape)
        xq = qb.array(x)
        # second order: hvp (forward over reverse) against differences of the gradient
        def gdot(m):
            return qb.sum(qb.grad(f)(m) * qb.array(d1))
        h = 1e-5
        fd2 = (float(gdot(qb.array(x + h * d2))) - float(gdot(qb.array(x - h * d2)))) / (2 * h)
        _, jv = qb.jvp(gdot, (xq,), (qb.array(d2),))
        assert float(jv) == pytest.approx(fd2, rel=1e-5, abs=1e-7)
        # third order: d/de of the second directional derivative, forward vs differences
        def second(m):
            return qb.jvp(gdot, (m,), (qb.array(d2),))[1]
        fd3 = (float(second(qb.array(x + h * d1))) - float(second(qb.array(x - h * d1)))) / (2 * h)
        _, t3 = qb.jvp(second, (xq,), (qb.array(d1),))
        assert float(t3) == pytest.approx(fd3, rel=1e-4, abs=1e-6)


def test_vmap_jit_and_batched_gradients_agree_with_loops():
    a = RNG.normal(size=(5, 3, 3)) + 2 * np.eye(3)
    b = RNG.normal(size=(5, 3))
    f = lambda m, v: qb.sum(qb.linalg.solve(m, v) ** 2) + qb.linalg.slogdet(m)[1]  # noqa: E731
    per = np.stack([_np(qb.grad(f)(qb.array(a[i]), qb.array(b[i]))) for i in range(5)])
    np.testing.assert_allclose(_np(qb.vmap(qb.grad(f))(a, b)), per, rtol=1e-12)
    np.testing.assert_allclose(_np(qb.jit(qb.vmap(qb.grad(f)))(a, b)), per, rtol=1e-12)
    # one matrix, a batch of right-hand sides (vmap over b only)
    np.testing.assert_allclose(_np(qb.vmap(lambda v: qb.linalg.solve(a[0], v))(b)),
                               np.linalg.solve(a[0], b.T).T, rtol=1e-12)
    hess = _np(qb.hessian(lambda m: qb.linalg.slogdet(m)[1])(qb.array(a[0])))
    inv = np.linalg.inv(a[0])
    # d2 log|det A| / dA_ij dA_kl = -inv[j, k] inv[l, i]
    np.testing.assert_allclose(hess, -np.einsum("jk,li->ijkl", inv, inv), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("n", [1, 2, 8, 32, 33, 40])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tiny_kernels_and_lapack_sizes(n, dtype):
    # n <= 32 runs the own loops, larger n LAPACK: both against NumPy/SciPy.
    rng = np.random.default_rng(n)
    a = (rng.normal(size=(3, n, n)) + 2 * np.eye(n)).astype(dtype)
    b = rng.normal(size=(3, n, 2)).astype(dtype)
    spd = _spd((3,), n, rng).astype(dtype)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(_np(qb.linalg.solve(a, b)), np.linalg.solve(a, b), **tol)
    np.testing.assert_allclose(_np(qb.linalg.cholesky(spd)), np.linalg.cholesky(spd), **tol)
    s, l = qb.linalg.slogdet(a)
    ns, nl = np.linalg.slogdet(a)
    np.testing.assert_array_equal(_np(s), ns)
    np.testing.assert_allclose(_np(l), nl, **tol)
    for lower in (True, False):
        for trans in (0, 1):
            want = np.stack([sla.solve_triangular(a[i], b[i], lower=lower, trans=trans) for i in range(3)])
            np.testing.assert_allclose(_np(qb.linalg.solve_triangular(a, b, lower=lower, trans=trans)), want, **tol)
    # singular input: a zero column
    z = a.copy()
    z[:, :, 0] = 0
    s, l = qb.linalg.slogdet(z)
    assert (_np(s) == 0).all() and (_np(l) == -np.inf).all()
    assert not np.isfinite(_np(qb.linalg.solve(z, b))).all()


@pytest.mark.parametrize("n", [6, 12, 48])
def test_ill_conditioned_systems_meet_residual_bounds(n):
    # Condition numbers up to ~1e12: the error may be large, the backward error may not.
    rng = np.random.default_rng(n)
    q1, _ = np.linalg.qr(rng.normal(size=(n, n)))
    q2, _ = np.linalg.qr(rng.normal(size=(n, n)))
    a = (q1 * np.logspace(0, -12, n)) @ q2.T
    b = rng.normal(size=(n, 2))
    x = _np(qb.linalg.solve(a, b))
    assert (_resid(a, x, b, "float64") < 100).all()
    spd = a @ a.T + 1e-10 * np.eye(n)
    l = _np(qb.linalg.cholesky(spd))
    assert np.linalg.norm(l @ l.T - spd) / np.linalg.norm(spd) < 100 * n * EPS["float64"]
    u, s, vh = (_np(t) for t in qb.linalg.svd(a))
    assert np.linalg.norm((u * s) @ vh - a) / np.linalg.norm(a) < 100 * n * EPS["float64"]
    q, r = (_np(t) for t in qb.linalg.qr(a))
    assert np.linalg.norm(q @ r - a) / np.linalg.norm(a) < 100 * n * EPS["float64"]
    w, v = (_np(t) for t in qb.linalg.eigh(spd))
    assert np.linalg.norm((v * w) @ v.T - spd) / np.linalg.norm(spd) < 100 * n * EPS["float64"]


@pytest.mark.parametrize("n", [40, 300])
def test_results_do_not_depend_on_the_thread_count(n):
    # A batch splits over the pool in fixed chunks; a single matrix of order >= 256 runs in
    # LAPACK's own threads with a count fixed for the process. Either way the bits must not
    # change with qb.set_num_threads.
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n)) + n**0.5 * np.eye(n)
    spd = a @ a.T / n + np.eye(n)
    batch = np.stack([a, a.T, a + 1.0])
    b = rng.normal(size=(n, 2))
    fns = [
        lambda: qb.linalg.solve(qb.array(a), qb.array(b)),
        lambda: qb.linalg.solve(qb.array(batch), qb.array(b)),
        lambda: qb.linalg.cholesky(qb.array(spd)),
        lambda: qb.linalg.eigh(qb.array(spd))[1],
        lambda: qb.linalg.qr(qb.array(a))[1],
        lambda: qb.linalg.svd(qb.array(a))[2],
        lambda: qb.linalg.slogdet(qb.array(a))[1],
        lambda: qb.linalg.lu_factor(qb.array(a))[0],
    ]
    before = qb.num_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            qb.set_num_threads(threads)
            results.append([np.asarray(f()) for f in fns])
    finally:
        qb.set_num_threads(before)
    for other in results[1:]:
        for x, y in zip(results[0], other):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(results[0][0], np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(results[0][2], np.linalg.cholesky(spd), rtol=1e-10, atol=1e-12)


# The CPU plan folds cholesky's input symmetrization into the kernel (cholesky_fold.h).

@pytest.mark.parametrize("n", [3, 33, 64])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_folded_symmetrization_is_bitwise_the_unfolded_one(n, dtype):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(2, n, n))
    a = (a @ np.swapaxes(a, 1, 2) + n * np.eye(n)).astype(dtype)
    a[:, 0, -1] += 0.25  # not symmetric: the symmetrization matters
    folded = qb.jit(qb.linalg.cholesky)
    plan = folded.lower(qb.array(a)).compile().plan_text()
    assert "transpose" not in plan and plan.count("kernel") == 1, plan
    sym = qb.array(((a + np.swapaxes(a, 1, 2)) * np.asarray(0.5, dtype)).astype(dtype))
    plain = qb.jit(lambda m: qb.linalg.cholesky(m, symmetrize_input=False))
    np.testing.assert_array_equal(np.asarray(folded(qb.array(a))), np.asarray(plain(sym)))
    # a transposed operand read by something else keeps its own computation
    both = qb.jit(lambda m: (qb.linalg.cholesky(m), qb.swapaxes(m, -1, -2) * 2.0))(qb.array(a))
    np.testing.assert_array_equal(np.asarray(both[0]), np.asarray(plain(sym)))
    np.testing.assert_array_equal(np.asarray(both[1]), np.swapaxes(a, 1, 2) * 2)


# Three CPU kernels factor a Cholesky by size: the own loops up to 16, the own row-panel
# factorization up to 128, LAPACK's potrf above (linalg.cc; crossovers in docs/architecture.md).
@pytest.mark.parametrize("n", [3, 16, 17, 33, 64, 128, 129])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky_each_kernel_size_matches_numpy_and_reads_one_triangle(n, dtype):
    rng = np.random.default_rng(n)
    m = rng.normal(size=(3, n, n))
    a = (m @ np.swapaxes(m, 1, 2) / n + np.eye(n)).astype(dtype)
    tol = 2e-4 if dtype == "float32" else 1e-11
    for f in (qb.linalg.cholesky, qb.jit(qb.linalg.cholesky)):
        l = np.asarray(f(qb.array(a)))
        assert l.dtype == dtype
        np.testing.assert_array_equal(np.triu(l, 1), 0)
        np.testing.assert_allclose(l @ np.swapaxes(l, 1, 2), a, rtol=tol, atol=tol)
        np.testing.assert_allclose(l, np.linalg.cholesky(a.astype(np.float64)), rtol=tol * 10, atol=tol * 10)
    # Without symmetrization only the lower triangle is read: garbage above changes nothing.
    junk = a + np.triu(rng.normal(size=(n, n)) * 100, 1).astype(dtype)
    plain = np.asarray(qb.linalg.cholesky(qb.array(junk), symmetrize_input=False))
    np.testing.assert_allclose(plain, np.linalg.cholesky(a.astype(np.float64)), rtol=tol * 10, atol=tol * 10)
    # A matrix that stops being positive definite late in the factorization gives NaN, alone.
    bad = a.copy()
    bad[1, n - 1, n - 1] = -1.0
    out = np.asarray(qb.linalg.cholesky(qb.array(bad)))
    assert np.isnan(out[1]).all() and np.isfinite(out[0]).all() and np.isfinite(out[2]).all()


# Above 32 unknowns solve runs LAPACK's getrf and two row-major triangular solves on b where
# it lies, then the row interchanges in reverse (linalg.cc's lu_solve_rows).
@pytest.mark.parametrize("n", [33, 64, 150])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lapack_solve_with_pivoting_matches_numpy(n, k, dtype):
    rng = np.random.default_rng(n * 10 + k)
    # A shuffled identity plus noise: no usable diagonal, so nearly every step pivots.
    perm = np.eye(n)[rng.permutation(n)]
    a = (perm * 4 + rng.normal(size=(2, n, n)) * 0.3).astype(dtype)
    b = rng.normal(size=(2, n, k)).astype(dtype)
    for f in (qb.linalg.solve, qb.jit(qb.linalg.solve)):
        x = np.asarray(f(qb.array(a), qb.array(b)))
        assert x.dtype == dtype and x.shape == (2, n, k)
        assert (_resid(a.astype(np.float64), x.astype(np.float64), b.astype(np.float64), dtype) < 50).all()
        ref = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(x, ref, rtol=2e-3 if dtype == "float32" else 1e-9, atol=2e-3 if dtype == "float32" else 1e-10)
    v = np.asarray(qb.linalg.solve(qb.array(a[0]), qb.array(b[0, :, 0])))
    np.testing.assert_allclose(v, np.linalg.solve(a[0].astype(np.float64), b[0, :, 0].astype(np.float64)),
                               rtol=2e-3 if dtype == "float32" else 1e-9, atol=2e-3 if dtype == "float32" else 1e-10)
    # A singular matrix gives non-finite values (JAX's behaviour), alone in its batch.
    sing = a.copy()
    sing[1, :, 0] = 0.0
    out = np.asarray(qb.jit(qb.linalg.solve)(qb.array(sing), qb.array(b)))
    assert np.isfinite(out[0]).all() and not np.isfinite(out[1]).all()
    # The gradient of log|det A| is A^-T (one more solve, with n right-hand sides).
    g = np.asarray(qb.jit(qb.grad(lambda m: qb.linalg.slogdet(m)[1]))(qb.array(a[0].astype(np.float64))))
    np.testing.assert_allclose(g, np.linalg.inv(a[0].astype(np.float64)).T, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5)])
def test_singular_values_alone_skip_the_vectors_and_agree_with_the_full_svd(dtype, shape):
    # svd(compute_uv=False), svdvals and norm(x, 2) read only the singular-value row: the
    # CPU plan asks LAPACK for the values alone (gesdd jobz='N', svd_values_fold.h)
    g = np.random.default_rng(3)
    a = g.standard_normal(shape).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * g.standard_normal(shape)
    f = qb.jit(lambda x: qb.linalg.svd(x, compute_uv=False))
    plan = f.lower(a).compile().plan_text()
    assert "svd" in plan and ("mode=16" in plan or "mode=24" in plan)
    s = np.asarray(f(a))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, np.asarray(qb.linalg.svd(a)[1]), rtol=1e-12, atol=1e-12)
    # with the vectors also read, the full decomposition runs
    both = qb.jit(lambda x: (lambda r: (r[1], r[0]))(qb.linalg.svd(x, full_matrices=False)))
    full_plan = both.lower(a).compile().plan_text()
    assert "mode=16" not in full_plan and "mode=24" not in full_plan
    np.testing.assert_allclose(np.asarray(both(a)[0]), s, rtol=1e-12, atol=1e-12)
