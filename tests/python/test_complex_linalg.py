"""Complex linear algebra: qb.linalg.eig / eigvals (general matrices, complex results),
complex linear systems (solve, solve_triangular, inv and what composes them) and the
factorizations of complex matrices (cholesky, slogdet/det, eigh, svd, qr, lu and what
composes them: pinv, lstsq, norms, expm, lu_solve, cho_solve). Values against NumPy/SciPy
(the same LAPACK routines, so eigenvalue order and eigenvector normalisation agree),
derivatives against finite differences and against JAX, under jit and vmap."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

NP = np.asarray


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def crand(*shape, seed=0):
    g = np.random.default_rng(seed)
    return g.standard_normal(shape) + 1j * g.standard_normal(shape)


def close(got, want, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(NP(got), want, rtol=rtol, atol=atol)


# A matrix with a complex pair 1 +- 2i and real eigenvalues 5 and -3, well apart.
BASE = np.array([[1.0, -2.0, 0.0, 0.0], [2.0, 1.0, 0.0, 0.0], [0.0, 0.0, 5.0, 0.0], [0.0, 0.0, 0.0, -3.0]])


# ---------------------------------------------------------------------------------------
# eig and eigvals: values


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_eig_of_a_real_matrix_is_numpys(n):
    a = rand(n, n, seed=n)
    w, v = qb.linalg.eig(a)
    wn, vn = np.linalg.eig(a)
    assert w.dtype == qb.complex128 and v.dtype == qb.complex128
    assert w.shape == (n,) and v.shape == (n, n)
    close(w, wn)
    close(v, vn)
    # A V = V diag(w), unit columns
    close(a @ NP(v), NP(v) * NP(w)[None, :], atol=1e-12)
    close(np.linalg.norm(NP(v), axis=0), np.ones(n))


def test_a_real_matrix_gives_exact_conjugate_pairs_positive_imaginary_part_first():
    a = BASE + 0.1 * rand(4, 4, seed=3)
    w, v = (NP(t) for t in qb.linalg.eig(a))
    pairs = np.nonzero(w.imag > 0)[0]
    assert len(pairs) == 1
    j = pairs[0]
    assert w[j + 1] == np.conj(w[j])
    np.testing.assert_array_equal(v[:, j + 1], np.conj(v[:, j]))
    real = w.imag == 0
    assert np.all(v[:, real].imag == 0)


def test_eig_of_a_complex_matrix_is_numpys():
    a = crand(5, 5, seed=4)
    w, v = qb.linalg.eig(a)
    wn, vn = np.linalg.eig(a)
    close(w, wn)
    close(v, vn)


def test_float32_gives_complex64_as_jax():
    a = rand(4, 4, seed=5).astype(np.float32)
    w, v = qb.linalg.eig(a)
    assert w.dtype == qb.complex64 and v.dtype == qb.complex64
    wn, vn = np.linalg.eig(a)
    close(w, wn, rtol=1e-5, atol=1e-5)
    # the same vectors up to a sign (float32 rounding may choose the other one)
    close(np.abs(np.sum(np.conj(NP(v)) * vn, axis=0)), np.ones(4), rtol=1e-5, atol=1e-5)
    close(a @ NP(v), NP(v) * NP(w)[None, :], atol=1e-5)
    assert qb.linalg.eig(a.astype(np.complex64))[0].dtype == qb.complex64


def test_eigvals_are_eigs_values_batched_jitted_and_vmapped():
    a = rand(3, 2, 4, 4, seed=6)
    w = qb.linalg.eigvals(a)
    assert w.shape == (3, 2, 4)
    close(w, np.linalg.eigvals(a))
    close(w, qb.linalg.eig(a).eigenvalues, rtol=0, atol=0)
    close(qb.jit(qb.linalg.eigvals)(a), NP(w), rtol=0, atol=0)
    close(qb.vmap(qb.linalg.eigvals)(a), NP(w), rtol=0, atol=0)
    wv, vv = qb.vmap(qb.vmap(qb.linalg.eig))(a)
    close(vv, np.linalg.eig(a)[1])


def test_integer_input_promotes_and_odd_input_is_handled():
    w, _ = qb.linalg.eig([[2, 0], [0, 3]])
    assert w.dtype == qb.complex128
    close(w, [2.0, 3.0])
    w, v = qb.linalg.eig(np.zeros((0, 0)))
    assert w.shape == (0,) and v.shape == (0, 0)
    w, v = qb.linalg.eig(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    assert np.all(np.isnan(NP(w))) and np.all(np.isnan(NP(v)))
    # one bad matrix of a batch leaves the others alone
    batch = np.stack([BASE, BASE])
    batch[1, 0, 0] = np.inf
    w = NP(qb.linalg.eigvals(batch))
    close(np.sort_complex(w[0]), np.sort_complex(np.linalg.eigvals(BASE)))
    assert np.all(np.isnan(w[1]))


@pytest.mark.parametrize("bad", [np.ones(3), np.ones((2, 3)), np.ones((2, 2, 3))])
def test_non_square_input_raises(bad):
    with pytest.raises(ValueError, match="square"):
        qb.linalg.eig(bad)
    with pytest.raises(ValueError, match="square"):
        qb.linalg.eigvals(bad)


def test_roots_of_a_polynomial_through_eigvals_of_the_companion_matrix():
    # (x - 1)(x - 2)(x^2 + 1): the companion matrix's eigenvalues
    c = np.poly([1.0, 2.0, 1j, -1j]).real
    comp = np.diag(np.ones(3), -1)
    comp[0] = -c[1:] / c[0]
    w = np.sort_complex(NP(qb.linalg.eigvals(comp)))
    close(w, np.sort_complex(np.array([-1j, 1j, 1.0, 2.0])), atol=1e-12)


# ---------------------------------------------------------------------------------------
# eig and eigvals: derivatives


def _fd(f, a, da, h=1e-6):
    return (f(a + h * da) - f(a - h * da)) / (2 * h)


def test_eigvals_jvp_matches_finite_differences():
    a = BASE + 0.2 * rand(4, 4, seed=7)
    da = rand(4, 4, seed=8)
    w, dw = qb.jvp(qb.linalg.eigvals, (a,), (da,))
    close(w, np.linalg.eigvals(a))
    close(dw, _fd(np.linalg.eigvals, a, da), rtol=1e-6, atol=1e-7)


def test_eigenvector_jvp_matches_finite_differences_of_numpys_normalised_vectors():
    a = BASE + 0.2 * rand(4, 4, seed=9)
    da = rand(4, 4, seed=10)
    (w, v), (dw, dv) = qb.jvp(qb.linalg.eig, (a,), (da,))
    close(dw, _fd(lambda m: np.linalg.eig(m)[0], a, da), rtol=1e-6, atol=1e-7)
    close(dv, _fd(lambda m: np.linalg.eig(m)[1], a, da), rtol=1e-5, atol=1e-6)


def test_complex_input_derivatives_match_finite_differences():
    a = BASE + 0.2 * crand(4, 4, seed=11)
    da = crand(4, 4, seed=12)
    (w, v), (dw, dv) = qb.jvp(qb.linalg.eig, (a,), (da,))
    close(dw, _fd(lambda m: np.linalg.eig(m)[0], a, da), rtol=1e-6, atol=1e-7)
    close(dv, _fd(lambda m: np.linalg.eig(m)[1], a, da), rtol=1e-5, atol=1e-6)


def _loss(a):
    w, v = qb.linalg.eig(a)
    return qb.sum(qb.real(w) ** 2 - qb.imag(w)) + qb.sum(qb.real(v) * qb.imag(v) ** 2) + qb.sum(qb.abs(v[0]))


def test_reverse_mode_agrees_with_forward_and_with_finite_differences():
    a = BASE + 0.2 * rand(4, 4, seed=13)
    g = NP(qb.grad(_loss)(a))
    fwd = NP(qb.jacfwd(_loss)(a))
    close(g, fwd, rtol=1e-10, atol=1e-12)
    fd = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = 1.0
        fd[idx] = _fd(lambda m: float(_loss(m)), a, e)
    close(g, fd, rtol=1e-6, atol=1e-7)
    # per-example gradients under vmap equal the one-by-one ones
    batch = np.stack([a, a.T])
    close(qb.vmap(qb.grad(_loss))(batch), np.stack([g, NP(qb.grad(_loss)(a.T))]), rtol=1e-12, atol=1e-12)


def test_trace_identity_gradient_of_the_sum_of_eigenvalues():
    a = rand(5, 5, seed=14)
    g = qb.jit(qb.grad(lambda m: qb.real(qb.sum(qb.linalg.eigvals(m)))))(a)
    close(g, np.eye(5), atol=1e-12)


def test_derivatives_agree_with_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    a = BASE + 0.2 * rand(4, 4, seed=15)
    da = rand(4, 4, seed=16)

    def jeig(m):
        return jax.lax.linalg.eig(m, compute_left_eigenvectors=False, enable_eigvec_derivs=True)

    (_, vj), (dwj, dvj) = jax.jvp(jeig, (a,), (da,))
    (_, v), (dw, dv) = qb.jvp(qb.linalg.eig, (a,), (da,))
    close(v, NP(vj))
    close(dw, NP(dwj))
    close(dv, NP(dvj))
    gj = jax.grad(lambda m: jnp.sum(jnp.abs(jnp.linalg.eigvals(m))))(a)
    close(qb.grad(lambda m: qb.sum(qb.abs(qb.linalg.eigvals(m))))(a), NP(gj))


# ---------------------------------------------------------------------------------------
# complex linear systems


def test_complex_solve_is_numpys_for_every_mix_of_real_and_complex_operands():
    a, ca = rand(4, 4, seed=20), crand(4, 4, seed=21)
    b, cb = rand(4, 3, seed=22), crand(4, 3, seed=23)
    for m, r in [(ca, cb), (a, cb), (ca, b), (ca, cb[:, 0])]:
        x = qb.linalg.solve(m, r)
        assert x.dtype == qb.complex128
        close(x, np.linalg.solve(m, r), atol=1e-12)
    # batched, with broadcast batch axes
    bm = crand(2, 4, 4, seed=24)
    close(qb.linalg.solve(bm, cb), np.linalg.solve(bm, cb), atol=1e-12)
    assert qb.linalg.solve(ca.astype(np.complex64), b.astype(np.float32)).dtype == qb.complex64


@pytest.mark.parametrize("n", [1, 2, 5, 8, 9, 20])
def test_complex_solve_on_both_sides_of_the_small_system_crossover(n):
    # up to 8 an own elimination, above it LAPACK's zgetrf/zgetrs: the same answers
    a, b = crand(7, n, n, seed=n), crand(7, n, 3, seed=n + 1)
    close(qb.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-9, atol=1e-11)
    single = a.astype(np.complex64)
    close(qb.linalg.solve(single, b.astype(np.complex64)), np.linalg.solve(a, b), rtol=1e-3, atol=1e-3)


def test_a_singular_complex_system_gives_inf_or_nan_as_jax():
    for n in (2, 12):
        x = NP(qb.linalg.solve(np.zeros((n, n), complex), np.ones(n, complex)))
        assert not np.any(np.isfinite(x))


def test_complex_inverse_and_compositions():
    ca = crand(4, 4, seed=25)
    close(qb.linalg.inv(ca), np.linalg.inv(ca), atol=1e-12)
    close(qb.linalg.matrix_power(ca, -2), np.linalg.matrix_power(ca, -2), atol=1e-12)
    t = crand(2, 3, 6, seed=26)
    bt = crand(2, 3, seed=27)
    close(qb.linalg.tensorsolve(t, bt), np.linalg.tensorsolve(t, bt), atol=1e-12)
    t4 = crand(4, 6, 8, 3, seed=28)
    close(qb.linalg.tensorinv(t4, 2), np.linalg.tensorinv(t4, 2), atol=1e-12)


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_complex_triangular_solves_are_scipys(trans, lower, unit_diagonal):
    sl = pytest.importorskip("scipy.linalg")
    m = crand(5, 5, seed=29) + 4 * np.eye(5)  # both triangles filled: only one may be read
    b = crand(5, 2, seed=30)
    x = qb.linalg.solve_triangular(m, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    close(x, sl.solve_triangular(m, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal), atol=1e-12)
    # a real triangular matrix with a complex right-hand side
    xr = qb.linalg.solve_triangular(m.real, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    close(xr, sl.solve_triangular(m.real, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal), atol=1e-12)


def test_complex_solve_derivatives_agree_with_jax_and_finite_differences():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    ca = crand(4, 4, seed=31) + 3 * np.eye(4)
    cb = crand(4, seed=32)
    g = qb.grad(lambda m: qb.sum(qb.abs(qb.linalg.solve(m, cb)) ** 2))(ca)
    gj = jax.grad(lambda m: jnp.sum(jnp.abs(jnp.linalg.solve(m, cb)) ** 2))(ca)
    close(g, NP(gj), atol=1e-12)
    da = crand(4, 4, seed=33)
    x, dx = qb.jvp(lambda m: qb.linalg.solve(m, cb), (ca,), (da,))
    close(dx, _fd(lambda m: np.linalg.solve(m, cb), ca, da), rtol=1e-6, atol=1e-7)
    # through the real part of a complex matrix: a real parameter in a complex system
    p = rand(4, 4, seed=34)
    f = lambda r: qb.sum(qb.real(qb.linalg.inv(r + 1j * ca)))  # noqa: E731
    fj = lambda r: jnp.sum(jnp.real(jnp.linalg.inv(r + 1j * ca)))  # noqa: E731
    close(qb.grad(f)(p), NP(jax.grad(fj)(p)), atol=1e-12)
    close(qb.jit(qb.grad(f))(p), NP(jax.grad(fj)(p)), atol=1e-12)


def test_mixed_precision_systems_raise_as_real_ones_do():
    with pytest.raises(ValueError, match="^solve: the matrix is complex128 and the right-hand side float32"):
        qb.linalg.solve(qb.asarray(crand(3, 3)), qb.asarray(rand(3).astype(np.float32)))


# ---------------------------------------------------------------------------------------
# roots and sort_complex


@pytest.mark.parametrize("p", [[1.0, -3.0, 2.0], [0.0, 0.0, 1.0, -3.0, 2.0], [1.0, 0.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0],
                               [2.0, 0.0, 0.0], [3.0]])
def test_roots_are_numpys(p):
    r = qb.roots(p)
    assert r.dtype == qb.complex128
    close(np.sort_complex(NP(r)), np.sort_complex(np.roots(p).astype(complex)), atol=1e-12)


def test_roots_without_stripping_runs_under_jit_with_nan_for_leading_zeros():
    f = qb.jit(lambda c: qb.roots(c, strip_zeros=False))
    r = NP(f(np.array([0.0, 0.0, 1.0, -3.0, 2.0])))
    close(np.sort_complex(r[:2]), [1.0, 2.0], atol=1e-12)
    assert np.all(np.isnan(r[2:]))
    assert np.all(np.isnan(NP(f(np.zeros(3)))))
    with pytest.raises(qb.TracerError, match="strip_zeros=False"):
        qb.jit(qb.roots)(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="1-D"):
        qb.roots(np.ones((2, 2)))


def test_roots_differentiate_as_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    c = np.array([1.0, -3.0, 2.5, 0.5])
    g = qb.grad(lambda q: qb.real(qb.sum(qb.roots(q, strip_zeros=False) ** 2)))(c)
    gj = jax.grad(lambda q: jnp.real(jnp.sum(jnp.roots(q, strip_zeros=False) ** 2)))(c)
    close(g, NP(gj), atol=1e-10)
    # the sum of the squared roots is e1^2 - 2 e2 with e1 = -c1/c0, e2 = c2/c0
    close(g, [-2 * c[1] ** 2 / c[0] ** 3 + 2 * c[2] / c[0] ** 2, 2 * c[1] / c[0] ** 2, -2 / c[0], 0.0], atol=1e-10)


def test_sort_complex_orders_by_real_then_imaginary_part():
    x = np.array([1 + 2j, 1 - 1j, 0.5, -2 + 0j, 1 + 0j])
    close(qb.sort_complex(x), np.sort_complex(x), rtol=0, atol=0)
    r = qb.sort_complex(np.array([3.0, 1.0, 2.0]))
    assert r.dtype == qb.complex128
    close(r, [1.0, 2.0, 3.0], rtol=0, atol=0)
    assert qb.sort_complex(np.array([3.0, 1.0], np.float32)).dtype == qb.complex64


# ---------------------------------------------------------------------------------------
# factorizations of complex matrices


def hermitian(n, seed):
    a = crand(n, n, seed=seed)
    return a @ a.conj().T + n * np.eye(n)


def test_complex_cholesky_slogdet_det_and_eigh_are_numpys():
    h = hermitian(5, 40)
    close(qb.linalg.cholesky(h), np.linalg.cholesky(h), atol=1e-12)
    close(qb.linalg.cholesky(h, upper=True), np.linalg.cholesky(h).conj().T, atol=1e-12)
    a = crand(2, 5, 5, seed=41)
    sign, logabs = qb.linalg.slogdet(a)
    sn, ln = np.linalg.slogdet(a)
    assert sign.dtype == qb.complex128 and logabs.dtype == qb.float64
    close(sign, sn, atol=1e-12)
    close(logabs, ln, atol=1e-12)
    close(qb.linalg.det(a), np.linalg.det(a), atol=1e-10)
    s0, l0 = qb.linalg.slogdet(np.zeros((3, 3), complex))
    assert complex(s0) == 0 and float(l0) == -np.inf
    w, v = qb.linalg.eigh(h)
    assert w.dtype == qb.float64 and v.dtype == qb.complex128
    close(w, np.linalg.eigvalsh(h), atol=1e-11)
    close(h @ NP(v), NP(v) * NP(w)[None, :], atol=1e-11)
    close(qb.linalg.eigvalsh(h), np.linalg.eigvalsh(h), atol=1e-11)
    # UPLO='U' without symmetrizing reads the upper triangle (the lower one is garbage here)
    garbage = np.triu(h) + np.tril(crand(5, 5, seed=42), -1)
    close(qb.linalg.eigh(garbage, UPLO="U", symmetrize_input=False).eigenvalues, np.linalg.eigvalsh(h, UPLO="U"),
          atol=1e-11)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (4, 4), (2, 3, 5)])
@pytest.mark.parametrize("full", [False, True])
def test_complex_svd_is_numpys(shape, full):
    a = crand(*shape, seed=43)
    u, s, vh = qb.linalg.svd(a, full_matrices=full)
    un, sn, vhn = np.linalg.svd(a, full_matrices=full)
    assert s.dtype == qb.float64 and u.dtype == qb.complex128
    close(s, sn, atol=1e-12)
    k = min(shape[-2:])
    close(NP(u)[..., :k] * NP(s)[..., None, :] @ NP(vh)[..., :k, :], a, atol=1e-12)
    close(np.swapaxes(NP(u), -1, -2).conj() @ NP(u), np.broadcast_to(np.eye(u.shape[-1]), un.shape[:-2] + (u.shape[-1],) * 2), atol=1e-12)
    close(NP(vh) @ np.swapaxes(NP(vh), -1, -2).conj(), np.broadcast_to(np.eye(vh.shape[-2]), vhn.shape[:-2] + (vh.shape[-2],) * 2), atol=1e-12)
    close(qb.linalg.svdvals(a), sn, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_complex_qr_is_numpys(shape, mode):
    a = crand(*shape, seed=44)
    got, want = qb.linalg.qr(a, mode=mode), np.linalg.qr(a, mode=mode)
    if mode == "r":
        close(got, want, atol=1e-12)
        return
    close(got[0], want[0], atol=1e-12)
    close(got[1], want[1], atol=1e-12)


def test_complex_lu_and_the_solvers_built_on_factorizations_are_scipys():
    sl = pytest.importorskip("scipy.linalg")
    a, b = crand(5, 5, seed=45), crand(5, 2, seed=46)
    for got, want in zip(qb.linalg.lu(a), sl.lu(a)):
        close(got, want, atol=1e-12)
    lu_, piv = qb.linalg.lu_factor(a)
    lun, pivn = sl.lu_factor(a)
    close(lu_, lun, atol=1e-12)
    np.testing.assert_array_equal(NP(piv), pivn)
    for trans in (0, 1, 2):
        close(qb.linalg.lu_solve((lu_, piv), b, trans=trans), sl.lu_solve((lun, pivn), b, trans=trans), atol=1e-12)
    h = hermitian(5, 47)
    for lower in (True, False):
        close(qb.linalg.cho_solve(qb.linalg.cho_factor(h, lower=lower), b), np.linalg.solve(h, b), atol=1e-12)
        close(qb.scipy.linalg.solve(h, b, assume_a="pos", lower=lower), np.linalg.solve(h, b), atol=1e-12)
    close(qb.scipy.linalg.cholesky(h), sl.cholesky(h), atol=1e-12)
    close(qb.scipy.linalg.expm(0.5 * a), sl.expm(0.5 * a), atol=1e-12)
    u, p = qb.scipy.linalg.polar(a)
    un, pn = sl.polar(a)
    close(u, un, atol=1e-12)
    close(p, pn, atol=1e-12)


def test_compositions_of_the_complex_svd_are_numpys():
    a = crand(6, 4, seed=48)
    b = crand(6, seed=49)
    close(qb.linalg.pinv(a), np.linalg.pinv(a), atol=1e-12)
    x, res, rank, s = qb.linalg.lstsq(a, b)
    xn, resn, rankn, sn = np.linalg.lstsq(a, b)
    close(x, xn, atol=1e-12)
    close(res, resn, atol=1e-10)
    assert int(rank) == rankn and res.dtype == qb.float64
    sq = crand(4, 4, seed=50)
    for ord_ in (2, -2, "nuc"):
        close(qb.linalg.norm(sq, ord_), np.linalg.norm(sq, ord_), atol=1e-12)
    close(qb.linalg.cond(sq), np.linalg.cond(sq), rtol=1e-10)
    assert int(qb.linalg.matrix_rank(sq)) == 4
    assert int(qb.linalg.matrix_rank(np.outer(crand(4, seed=51), crand(4, seed=52)))) == 1


def test_float32_complex_factorizations_give_complex64_and_float32_parts():
    h = hermitian(4, 53).astype(np.complex64)
    assert qb.linalg.cholesky(h).dtype == qb.complex64
    w, v = qb.linalg.eigh(h)
    assert w.dtype == qb.float32 and v.dtype == qb.complex64
    close(w, np.linalg.eigvalsh(h), rtol=1e-5, atol=1e-4)
    u, s, vh = qb.linalg.svd(h)
    assert s.dtype == qb.float32
    close(s, np.linalg.svd(h, compute_uv=False), rtol=1e-5, atol=1e-4)
    sign, logabs = qb.linalg.slogdet(h)
    assert sign.dtype == qb.complex64 and logabs.dtype == qb.float32


def test_not_positive_definite_and_non_finite_input_give_nan():
    bad = -hermitian(3, 54)
    assert np.all(np.isnan(NP(qb.linalg.cholesky(bad))))
    nan = hermitian(3, 55)
    nan[0, 0] = np.nan
    assert np.all(np.isnan(NP(qb.linalg.eigh(nan).eigenvalues)))


FACTORIZATION_LOSSES = {
    "slogdet": (lambda m, x: m.linalg.slogdet(x)[1] + m.real(m.linalg.slogdet(x)[0]) * 0.5
                + m.imag(m.linalg.slogdet(x)[0]), (4, 4)),
    "det": (lambda m, x: m.abs(m.linalg.det(x)) + m.imag(m.linalg.det(x)), (4, 4)),
    "cholesky": (lambda m, x: m.sum(m.abs(m.linalg.cholesky(x @ m.conj(x.T) + 4 * m.eye(4))) ** 2 * m.arange(4.0)),
                 (4, 4)),
    "eigh": (lambda m, x: (lambda r: m.sum(r[0] * m.arange(4.0)) + m.sum(m.abs(r[1][0]) ** 2 * m.arange(4.0)))(
        m.linalg.eigh(x @ m.conj(x.T))), (4, 4)),
    "svdvals": (lambda m, x: m.sum(m.linalg.svd(x, compute_uv=False) * m.arange(3.0)), (4, 3)),
    "svd": (lambda m, x: (lambda r: m.sum(m.abs(r[0][0] * r[2][:, 0])) + m.sum(m.real(r[0] @ r[2]) ** 2))(
        m.linalg.svd(x, full_matrices=False)), (4, 3)),
    "qr": (lambda m, x: (lambda r: m.sum(m.real(r[0]) * m.imag(r[0])) + m.sum(m.abs(r[1]) * m.arange(3.0)))(
        m.linalg.qr(x)), (4, 3)),
    "norm2": (lambda m, x: m.linalg.norm(x, 2) + m.linalg.norm(x, "nuc"), (3, 4)),
    "pinv": (lambda m, x: m.sum(m.real(m.linalg.pinv(x)) * m.arange(4.0)), (4, 3)),
}


@pytest.mark.parametrize("name", sorted(FACTORIZATION_LOSSES))
def test_gradients_of_complex_factorizations_agree_with_jax(name):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    f, shape = FACTORIZATION_LOSSES[name]
    a = crand(*shape, seed=60) + (2 * np.eye(*shape) if shape[0] == shape[1] else 0)
    g = qb.grad(lambda x: f(qb, x))(a)
    gj = jax.grad(lambda x: f(jnp, x))(a)
    close(g, NP(gj), rtol=1e-9, atol=1e-10)
    close(qb.jit(qb.grad(lambda x: f(qb, x)))(a), NP(gj), rtol=1e-9, atol=1e-10)


def test_complex_factorization_derivatives_match_finite_differences():
    a = crand(4, 3, seed=61)
    da = crand(4, 3, seed=62)
    _, ds = qb.jvp(lambda x: qb.linalg.svd(x, compute_uv=False), (a,), (da,))
    close(ds, _fd(lambda m: np.linalg.svd(m, compute_uv=False), a, da), rtol=1e-6, atol=1e-7)
    h, dh = hermitian(4, 63), crand(4, 4, seed=64)
    dh = dh + dh.conj().T
    _, dl = qb.jvp(qb.linalg.cholesky, (h,), (dh,))
    close(dl, _fd(np.linalg.cholesky, h, dh), rtol=1e-6, atol=1e-7)
    _, dw = qb.jvp(qb.linalg.eigvalsh, (h,), (dh,))
    close(dw, _fd(np.linalg.eigvalsh, h, dh), rtol=1e-6, atol=1e-7)
    sq = crand(4, 4, seed=65) + 2 * np.eye(4)
    _, dd = qb.jvp(qb.linalg.det, (sq,), (dh,))
    close(dd, _fd(np.linalg.det, sq, dh), rtol=1e-6, atol=1e-6)


def test_complex_factorizations_vmap_and_batch():
    a = crand(3, 4, 4, seed=66)
    close(qb.vmap(qb.linalg.det)(a), np.linalg.det(a), atol=1e-10)
    close(qb.vmap(lambda x: qb.linalg.svd(x, compute_uv=False))(a), np.linalg.svd(a, compute_uv=False), atol=1e-12)
    hs = np.stack([hermitian(4, s) for s in (67, 68)])
    close(qb.vmap(qb.linalg.eigvalsh)(hs), np.linalg.eigvalsh(hs), atol=1e-11)
    close(qb.jit(qb.linalg.cholesky)(hs), np.linalg.cholesky(hs), atol=1e-12)


# ---------------------------------------------------------------------------------------
# SciPy's complex-valued linalg functions


def test_scipy_eig_returns_what_scipy_asks_for():
    sl = pytest.importorskip("scipy.linalg")
    a = BASE + 0.2 * rand(4, 4, seed=70)
    w = qb.scipy.linalg.eig(a, right=False)
    close(w, sl.eig(a, right=False))
    w, vr = qb.scipy.linalg.eig(a)
    close(vr, sl.eig(a)[1])
    w, vl, vr = qb.scipy.linalg.eig(a, left=True)
    vl_ = NP(vl)
    close(vl_.conj().T @ a, NP(w)[:, None] * vl_.conj().T, atol=1e-12)  # left eigenvectors
    close(np.linalg.norm(vl_, axis=0), np.ones(4))
    wn, vln, _ = sl.eig(a, left=True)
    close(np.abs(np.sum(vl_.conj() * vln, axis=0)), np.ones(4))  # scipy's up to a phase
    close(qb.scipy.linalg.eigvals(a), sl.eigvals(a))
    h = NP(qb.scipy.linalg.eig(a, homogeneous_eigvals=True, right=False))
    close(h, sl.eig(a, homogeneous_eigvals=True, right=False))
    with pytest.raises(NotImplementedError, match="generalized"):
        qb.scipy.linalg.eig(a, np.eye(4))


@pytest.mark.parametrize("scale", [None, "n", "sqrtn"])
def test_dft_matrix_is_scipys_and_transforms_as_fft(scale):
    sl = pytest.importorskip("scipy.linalg")
    m = qb.scipy.linalg.dft(6, scale=scale)
    close(m, sl.dft(6, scale=scale), atol=1e-14)
    x = crand(6, seed=71)
    if scale is None:
        close(NP(m) @ x, np.fft.fft(x), atol=1e-12)
    assert qb.scipy.linalg.dft(0).shape == (0, 0)
    with pytest.raises(ValueError, match="scale"):
        qb.scipy.linalg.dft(3, scale="bad")


def test_rsf2csf_and_the_complex_schur_form():
    sl = pytest.importorskip("scipy.linalg")
    a = BASE + 0.2 * rand(4, 4, seed=72)
    t, z = sl.schur(a)
    tc, zc = (NP(x) for x in qb.scipy.linalg.rsf2csf(t, z))
    tn, zn = sl.rsf2csf(t, z)
    close(tc, tn, atol=1e-12)
    close(zc, zn, atol=1e-12)
    # batched and jitted give the same
    tb, zb = qb.jit(qb.scipy.linalg.rsf2csf)(np.stack([t, t]), np.stack([z, z]))
    close(tb, np.stack([tn, tn]), atol=1e-12)
    with pytest.raises(ValueError, match="square"):
        qb.scipy.linalg.rsf2csf(np.ones((2, 3)), np.ones((2, 3)))


def test_sqrtm_of_complex_matrices():
    sl = pytest.importorskip("scipy.linalg")
    a = crand(4, 4, seed=73) + 3 * np.eye(4)
    x = qb.scipy.linalg.sqrtm(a)
    close(NP(x) @ NP(x), a, atol=1e-10)
    close(x, sl.sqrtm(a), atol=1e-10)
    rot = np.array([[1.0, -2.0], [2.0, 1.0]]) * 1j  # eigenvalues +-2 + i: off the negative real axis
    close(qb.scipy.linalg.sqrtm(rot), sl.sqrtm(rot), atol=1e-10)
    close(qb.jit(qb.scipy.linalg.sqrtm)(a), sl.sqrtm(a), atol=1e-10)
    neg = np.diag([-4.0, 1.0, 9.0])  # an eigenvalue on the negative real axis: not yet
    with pytest.raises(ValueError, match="negative real axis"):
        qb.scipy.linalg.sqrtm(neg.astype(complex))
    with pytest.raises(ValueError, match="not real"):
        qb.scipy.linalg.sqrtm(neg)
