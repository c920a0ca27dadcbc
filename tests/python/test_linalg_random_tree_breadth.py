"""More of jax.scipy.linalg, jax.random and jax.tree_util: the special matrices, hessenberg,
qr_multiply, schur, sqrtm and solve_sylvester against scipy.linalg (and derivatives against
finite differences); rayleigh, wald and geometric against JAX's own draws, f and
multinomial by their moments; key paths and the remaining tree_util names against JAX."""
import collections
import dataclasses
import math
import pickle

import numpy as np
import pytest
import scipy.linalg as SL

import quabla as qb
import quabla.scipy.linalg as QL
import quabla.tree_util as tu
from quabla import random as R

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jtu = pytest.importorskip("jax.tree_util")

rng = np.random.default_rng(7)


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


# ---------------------------------------------------------------------------------------------
# jax.scipy.linalg: special matrices
# ---------------------------------------------------------------------------------------------

def test_circulant_fiedler_hankel_leslie_match_scipy_exactly():
    c, r = rng.normal(size=5), rng.normal(size=4)
    np.testing.assert_array_equal(QL.circulant(qb.asarray(c)).numpy(), SL.circulant(c))
    ints = QL.circulant(qb.asarray([1, 2, 3]))
    assert ints.dtype in (qb.int32, qb.int64)  # the input's dtype, as JAX
    np.testing.assert_array_equal(ints.numpy(), SL.circulant([1, 2, 3]))
    np.testing.assert_array_equal(QL.fiedler(qb.asarray(c)).numpy(), SL.fiedler(c))
    np.testing.assert_array_equal(QL.hankel(qb.asarray(c), qb.asarray(r)).numpy(), SL.hankel(c, r))
    np.testing.assert_array_equal(QL.hankel(qb.asarray(c)).numpy(), SL.hankel(c))
    f, s = rng.normal(size=4), rng.normal(size=3)
    np.testing.assert_array_equal(QL.leslie(qb.asarray(f), qb.asarray(s)).numpy(), SL.leslie(f, s))


@pytest.mark.parametrize("k", range(1, 9))
def test_companion_and_fiedler_companion(k):
    a = rng.normal(size=k + 1)
    np.testing.assert_allclose(QL.companion(qb.asarray(a)).numpy(), SL.companion(a), rtol=1e-15)
    np.testing.assert_allclose(QL.fiedler_companion(qb.asarray(a)).numpy(), SL.fiedler_companion(a), rtol=1e-15)
    # both have the polynomial's roots as eigenvalues
    roots = np.sort_complex(np.roots(a))
    np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(QL.fiedler_companion(qb.asarray(a)).numpy())),
                               roots, rtol=1e-8, atol=1e-10)
    assert QL.fiedler_companion(qb.asarray([2.0])).shape == (0, 0)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolution_matrix_is_numpy_convolve(mode):
    for m in range(1, 6):
        for n in range(1, 6):
            a, v = rng.normal(size=m), rng.normal(size=n)
            got = QL.convolution_matrix(qb.asarray(a), n, mode).numpy()
            np.testing.assert_array_equal(got, SL.convolution_matrix(a, n, mode))
            np.testing.assert_allclose(got @ v, np.convolve(a, v, mode), rtol=1e-12, atol=1e-14)


def test_constant_matrices_match_scipy():
    for n in (1, 2, 4, 8, 16, 32):
        h = QL.hadamard(n)
        assert h.dtype == qb.asarray(0).dtype
        np.testing.assert_array_equal(h.numpy(), SL.hadamard(n))
    assert QL.hadamard(4, qb.float32).dtype == qb.float32
    for n in (1, 2, 3, 7):
        np.testing.assert_allclose(QL.helmert(n).numpy(), SL.helmert(n), rtol=1e-15, atol=1e-16)
        np.testing.assert_allclose(QL.helmert(n, full=True).numpy(), SL.helmert(n, full=True), rtol=1e-15, atol=1e-16)
    for n in (0, 1, 3, 6, 12):
        np.testing.assert_allclose(QL.hilbert(n).numpy(), SL.hilbert(n), rtol=1e-15)
        np.testing.assert_array_equal(QL.invhilbert(n).numpy(), SL.invhilbert(n, exact=True).astype(float))
        for kind in ("symmetric", "lower", "upper"):
            np.testing.assert_array_equal(QL.pascal(n, kind).numpy(), SL.pascal(n, kind).astype(float))
            np.testing.assert_array_equal(QL.invpascal(n, kind).numpy(), SL.invpascal(n, kind).astype(float))
    np.testing.assert_array_equal(QL.pascal(5).numpy(), SL.pascal(5).astype(float))  # kind defaults to symmetric
    # the inverses are exact
    np.testing.assert_array_equal(QL.pascal(9).numpy() @ QL.invpascal(9).numpy(), np.eye(9))
    h = QL.helmert(6, full=True).numpy()
    np.testing.assert_allclose(h @ h.T, np.eye(6), atol=1e-15)


def test_special_matrices_batch_like_jax():
    c = rng.normal(size=(2, 3, 4))
    for name in ("circulant", "fiedler", "companion", "fiedler_companion", "hankel"):
        ours = getattr(QL, name)(qb.asarray(c)).numpy()
        theirs = np.asarray(getattr(jax.scipy.linalg, name)(jnp.asarray(c)))
        assert ours.shape == theirs.shape, name
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)  # JAX's default float32
    conv = QL.convolution_matrix(qb.asarray(c), 3).numpy()
    for idx in np.ndindex(2, 3):
        np.testing.assert_array_equal(conv[idx], SL.convolution_matrix(c[idx], 3))
    les = QL.leslie(qb.asarray(c), qb.asarray(c[..., :3])).numpy()
    np.testing.assert_array_equal(les[1, 2], SL.leslie(c[1, 2], c[1, 2, :3]))
    # and under jit
    np.testing.assert_array_equal(qb.jit(QL.circulant)(qb.asarray(c)).numpy(), QL.circulant(qb.asarray(c)).numpy())


def test_special_matrix_errors():
    with pytest.raises(ValueError, match="at least two coefficients"):
        QL.companion(qb.asarray([1.0]))
    with pytest.raises(ValueError, match="one less than"):
        QL.leslie(qb.asarray([1.0, 2.0]), qb.asarray([1.0, 2.0]))
    with pytest.raises(ValueError, match="power of 2"):
        QL.hadamard(6)
    with pytest.raises(ValueError, match="mode must be"):
        QL.convolution_matrix(qb.asarray([1.0, 2.0]), 3, "middle")
    with pytest.raises(ValueError, match="at least 1"):
        QL.convolution_matrix(qb.asarray([1.0, 2.0]), 0)
    with pytest.raises(TypeError, match="must be an int"):
        QL.hilbert(2.5)
    with pytest.raises(ValueError, match="kind must be"):
        QL.pascal(3, "diagonal")
    with pytest.raises(TypeError, match="array of numbers"):
        QL.fiedler("abc")


# ---------------------------------------------------------------------------------------------
# hessenberg, qr_multiply
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_hessenberg_is_scipys(n):
    a = rng.normal(size=(n, n))
    h, q = QL.hessenberg(qb.asarray(a), calc_q=True)
    hs, qs = SL.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(h.numpy(), hs, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(q.numpy(), qs, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(QL.hessenberg(qb.asarray(a)).numpy(), hs, rtol=1e-11, atol=1e-13)


def test_hessenberg_batched_jitted_and_structured():
    a = rng.normal(size=(3, 6, 6))
    h, q = qb.jit(lambda x: QL.hessenberg(x, calc_q=True))(qb.asarray(a))
    h, q = h.numpy(), q.numpy()
    for i in range(3):
        np.testing.assert_allclose(h[i], SL.hessenberg(a[i]), rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(q[i] @ h[i] @ q[i].T, a[i], atol=1e-13)
    assert np.all(np.tril(h, -2) == 0)
    # an already reduced column (zeros below the subdiagonal) is left alone, as LAPACK does
    t = np.triu(rng.normal(size=(4, 4)), -1)
    np.testing.assert_allclose(QL.hessenberg(qb.asarray(t)).numpy(), SL.hessenberg(t), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_qr_multiply_is_scipys(shape):
    a = rng.normal(size=shape)
    m, n = shape
    k = min(m, n)
    for mode, cshape in (("right", (2, m)), ("left", (k, 2)), ("right", (m,)), ("left", (k,))):
        c = rng.normal(size=cshape)
        got, r = QL.qr_multiply(qb.asarray(a), qb.asarray(c), mode)
        want, rs = SL.qr_multiply(a, c, mode)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(r.numpy(), rs, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="mode='right' c must have shape"):
        QL.qr_multiply(qb.asarray(a), qb.ones((2, m + 1)))
    with pytest.raises(ValueError, match="'left' or 'right'"):
        QL.qr_multiply(qb.asarray(a), qb.ones((2, m)), mode="up")
    with pytest.raises(NotImplementedError, match="pivoting"):
        QL.qr_multiply(qb.asarray(a), qb.ones((2, m)), pivoting=True)


# ---------------------------------------------------------------------------------------------
# schur
# ---------------------------------------------------------------------------------------------

def _check_real_schur(a, t, z, tol=1e-13):
    n = a.shape[-1]
    np.testing.assert_allclose(z.T @ z, np.eye(n), atol=tol * 10)
    np.testing.assert_allclose(z @ t @ z.T, a, atol=tol * max(1.0, np.abs(a).max()) * 10)
    assert np.all(np.tril(t, -2) == 0)
    sub = np.diag(t, -1)
    assert not np.any((sub[:-1] != 0) & (sub[1:] != 0))  # blocks of at most 2 x 2
    for i in np.nonzero(sub)[0]:  # LAPACK's standard form of a complex pair's block
        assert t[i, i] == t[i + 1, i + 1] and np.sign(t[i, i + 1]) != np.sign(t[i + 1, i])
    # the same eigenvalues as SciPy's Schur form
    want = list(np.linalg.eigvals(SL.schur(a)[0])) if n else []
    for e in np.linalg.eigvals(t):
        j = int(np.argmin(np.abs(np.array(want) - e)))
        assert abs(want[j] - e) <= 1e-9 * max(1.0, abs(e)), (want, e)
        want.pop(j)


@pytest.mark.parametrize("case", ["normal3", "normal8", "normal25", "symmetric", "skew", "orthogonal", "cyclic",
                                  "jordan", "integers", "real_eigs", "pairs", "zeros", "one"])
def test_schur_real_form(case):
    n = {"normal3": 3, "normal8": 8, "normal25": 25}.get(case, 6)
    a = rng.normal(size=(n, n))
    if case == "symmetric":
        a = a + a.T
    elif case == "skew":
        a = a - a.T
    elif case == "orthogonal":
        a = np.linalg.qr(a)[0]
    elif case == "cyclic":  # all eigenvalues on the unit circle: needs the exceptional shifts
        a = np.roll(np.eye(n), 1, axis=0)
    elif case == "jordan":
        a = np.diag(np.ones(n - 1), 1) + 2.0 * np.eye(n)
    elif case == "integers":
        a = np.round(3 * a)
    elif case == "real_eigs":
        a = a @ np.diag(np.arange(1.0, n + 1)) @ np.linalg.inv(a)
    elif case == "pairs":
        a = np.kron(np.eye(n // 2), np.array([[0.5, 2.0], [-1.0, 0.5]]))
    elif case == "zeros":
        a = np.zeros((n, n))
    elif case == "one":
        a = np.array([[3.0]])
    t, z = QL.schur(qb.asarray(a))
    _check_real_schur(a, t.numpy(), z.numpy())


def test_schur_batched_jitted_float32_and_errors():
    a = rng.normal(size=(3, 5, 5))
    t, z = QL.schur(qb.asarray(a))
    for i in range(3):
        _check_real_schur(a[i], t.numpy()[i], z.numpy()[i])
    tj, zj = qb.jit(QL.schur)(qb.asarray(a[0]))
    _check_real_schur(a[0], tj.numpy(), zj.numpy())
    a32 = rng.normal(size=(6, 6)).astype(np.float32)
    t32, z32 = QL.schur(qb.asarray(a32))
    assert t32.dtype == qb.float32
    np.testing.assert_allclose(z32.numpy() @ t32.numpy() @ z32.numpy().T, a32, atol=1e-5)
    # the complex form: upper triangular T, unitary Z, the same eigenvalues
    tc, zc = (x.numpy() for x in QL.schur(qb.asarray(a[0]), output="complex"))
    assert tc.dtype == np.complex128
    np.testing.assert_allclose(zc @ tc @ zc.conj().T, a[0], atol=1e-10)
    np.testing.assert_allclose(zc.conj().T @ zc, np.eye(a.shape[-1]), atol=1e-12)
    assert np.all(np.tril(tc, -1) == 0)
    np.testing.assert_allclose(np.sort_complex(np.diag(tc)), np.sort_complex(np.linalg.eigvals(a[0])), atol=1e-10)
    with pytest.raises(ValueError, match="square"):
        QL.schur(qb.ones((2, 3)))


# ---------------------------------------------------------------------------------------------
# sqrtm
# ---------------------------------------------------------------------------------------------

def _spd(n):
    m = rng.normal(size=(n, n))
    return m @ m.T + 0.5 * np.eye(n)


def test_sqrtm_matches_scipy_where_the_root_is_real():
    spd = _spd(5)
    np.testing.assert_allclose(QL.sqrtm(qb.asarray(spd)).numpy(), SL.sqrtm(spd).real, rtol=1e-12, atol=1e-13)
    m = rng.normal(size=(5, 2))
    psd = m @ m.T  # singular: the eigh path, the roots of its zero eigenvalues are 0
    x = QL.sqrtm(qb.asarray(psd)).numpy()
    np.testing.assert_allclose(x @ x, psd, atol=1e-13)
    np.testing.assert_allclose(x, SL.sqrtm(psd).real, atol=1e-6)  # sqrt(rounding of a zero eigenvalue)
    general = rng.normal(size=(6, 6)) + 6 * np.eye(6)
    np.testing.assert_allclose(QL.sqrtm(qb.asarray(general)).numpy(), SL.sqrtm(general).real, rtol=1e-12,
                               atol=1e-13)
    pair = np.array([[0.5, -1.0], [1.0, 0.5]])  # complex eigenvalues, a real principal root
    np.testing.assert_allclose(QL.sqrtm(qb.asarray(pair)).numpy(), SL.sqrtm(pair).real, rtol=1e-13)
    np.testing.assert_array_equal(QL.sqrtm(qb.zeros((3, 3))).numpy(), np.zeros((3, 3)))
    batch = np.stack([spd, general[:5, :5] + 3 * np.eye(5)])
    got = QL.sqrtm(qb.asarray(batch)).numpy()
    for i in range(2):
        np.testing.assert_allclose(got[i], SL.sqrtm(batch[i]).real, rtol=1e-11, atol=1e-12)
    # JAX gives the same values (as a complex array)
    np.testing.assert_allclose(np.asarray(jax.scipy.linalg.sqrtm(jnp.asarray(general))).real,
                               QL.sqrtm(qb.asarray(general)).numpy(), rtol=1e-4, atol=1e-4)


def test_sqrtm_jit_and_errors_where_the_root_is_complex():
    spd, general = _spd(4), rng.normal(size=(4, 4)) + 4 * np.eye(4)
    for a in (spd, general):
        np.testing.assert_allclose(qb.jit(QL.sqrtm)(qb.asarray(a)).numpy(), SL.sqrtm(a).real, rtol=1e-11, atol=1e-12)
    for bad in (np.diag([1.0, -1.0]), np.array([[-1.0, 1.0], [0.0, -2.0]]), np.array([[0.0, 1.0], [0.0, 0.0]])):
        with pytest.raises(ValueError, match="not real"):
            QL.sqrtm(qb.asarray(bad))
        assert np.all(np.isnan(qb.jit(QL.sqrtm)(qb.asarray(bad)).numpy()))
    with pytest.raises(NotImplementedError, match="blocksize"):
        QL.sqrtm(qb.asarray(spd), blocksize=2)


def _fd(f, a, e, h=1e-6):
    return (f(a + h * e) - f(a - h * e)) / (2 * h)


@pytest.mark.parametrize("kind", ["spd", "general"])
def test_sqrtm_derivatives_against_finite_differences(kind):
    n = 5
    a = _spd(n) if kind == "spd" else rng.normal(size=(n, n)) + n * np.eye(n)
    w = rng.normal(size=(n, n))
    e = rng.normal(size=(n, n))
    if kind == "spd":
        e = e + e.T  # stay symmetric for SciPy's finite differences
    grad = qb.grad(lambda x: qb.sum(QL.sqrtm(x) * qb.asarray(w)))(qb.asarray(a)).numpy()
    want = _fd(lambda x: np.sum(SL.sqrtm(x).real * w), a, e)
    np.testing.assert_allclose(np.sum(grad * e), want, rtol=1e-7)
    _, tangent = qb.jvp(QL.sqrtm, (qb.asarray(a),), (qb.asarray(e),))
    np.testing.assert_allclose(tangent.numpy(), _fd(lambda x: SL.sqrtm(x).real, a, e), rtol=1e-6, atol=1e-7)


def test_sqrtm_derivative_is_finite_at_repeated_eigenvalues():
    # eigh's own derivative is infinite at the identity; the square root's is 1/2 E
    e = rng.normal(size=(4, 4))
    e = e + e.T
    _, tangent = qb.jvp(QL.sqrtm, (qb.eye(4),), (qb.asarray(e),))
    np.testing.assert_allclose(tangent.numpy(), 0.5 * e, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# solve_sylvester
# ---------------------------------------------------------------------------------------------

def test_solve_sylvester_matches_scipy():
    a, b, c = rng.normal(size=(4, 4)), rng.normal(size=(3, 3)), rng.normal(size=(4, 3))
    x = QL.solve_sylvester(qb.asarray(a), qb.asarray(b), qb.asarray(c)).numpy()
    np.testing.assert_allclose(x, SL.solve_sylvester(a, b, c), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(a @ x + x @ b, c, atol=1e-12)
    ab = rng.normal(size=(2, 4, 4))
    xb = QL.solve_sylvester(qb.asarray(ab), qb.asarray(b), qb.asarray(c)).numpy()
    for i in range(2):
        np.testing.assert_allclose(xb[i], SL.solve_sylvester(ab[i], b, c), rtol=1e-10, atol=1e-12)
    xj = qb.jit(QL.solve_sylvester)(qb.asarray(a), qb.asarray(b), qb.asarray(c)).numpy()
    np.testing.assert_allclose(xj, x, rtol=1e-12, atol=1e-13)
    # JAX's example, and its NaN where eigenvalues of A and B cancel
    x = QL.solve_sylvester(qb.asarray([[1, 2], [3, 4]]), qb.asarray([[5, 6], [7, 8]]), qb.asarray([[6, 8], [10, 12]]))
    np.testing.assert_allclose(x.numpy(), np.eye(2), atol=1e-12)
    assert np.all(np.isnan(QL.solve_sylvester(qb.eye(2), -qb.eye(2), qb.ones((2, 2))).numpy()))
    # a complex pair in A against one in B
    rot = np.array([[0.0, 1.0], [-1.0, 0.0]])
    assert np.all(np.isnan(QL.solve_sylvester(qb.asarray(rot), qb.asarray(rot), qb.ones((2, 2))).numpy()))


def test_solve_sylvester_derivatives_and_errors():
    a, b, c = rng.normal(size=(3, 3)), rng.normal(size=(2, 2)) + 3 * np.eye(2), rng.normal(size=(3, 2))
    w = rng.normal(size=(3, 2))
    grads = qb.grad(lambda x, y, z: qb.sum(QL.solve_sylvester(x, y, z) * qb.asarray(w)), argnums=(0, 1, 2))(
        qb.asarray(a), qb.asarray(b), qb.asarray(c))
    ea, eb, ec = rng.normal(size=a.shape), rng.normal(size=b.shape), rng.normal(size=c.shape)
    h = 1e-6
    f = lambda s: np.sum(SL.solve_sylvester(a + s * ea, b + s * eb, c + s * ec) * w)  # noqa: E731
    want = (f(h) - f(-h)) / (2 * h)
    got = sum(np.sum(g.numpy() * e) for g, e in zip(grads, (ea, eb, ec)))
    np.testing.assert_allclose(got, want, rtol=1e-7)
    with pytest.raises(ValueError, match="C must have shape"):
        QL.solve_sylvester(qb.asarray(a), qb.asarray(b), qb.ones((2, 3)))
    with pytest.raises(ValueError, match="method"):
        QL.solve_sylvester(qb.asarray(a), qb.asarray(b), qb.asarray(c), method="bartels")
    with pytest.raises(ValueError, match="above 2500"):
        QL.solve_sylvester(qb.eye(51), qb.eye(51), qb.ones((51, 51)))


# ---------------------------------------------------------------------------------------------
# jax.random: rayleigh, wald, geometric (JAX's numbers), f, multinomial (moments)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 42, 2026])
@pytest.mark.parametrize("dtype", [None, "float32"])
def test_rayleigh_wald_geometric_are_jax_draws(seed, dtype, x64):
    k, j = R.key(seed), jax.random.key(seed)
    qd = None if dtype is None else qb.float32
    jd = None if dtype is None else jnp.float32
    f32 = dtype is not None or not x64
    scale = np.asarray([0.5, 2.0, 3.0], dtype=np.float32 if f32 else np.float64)
    for fn in (lambda kk: R.rayleigh(kk, qb.asarray(scale), (400, 3), qd), ):
        for got in (fn(k), qb.jit(fn)(k)):
            want = np.asarray(jax.random.rayleigh(j, jnp.asarray(scale), (400, 3), jd))
            assert got.numpy().dtype == want.dtype
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if f32 else 1e-14)
    got = R.wald(k, 1.5, (1000,), qd).numpy()
    want = np.asarray(jax.random.wald(j, 1.5, (1000,), jd))
    assert got.dtype == want.dtype
    # x = mean + mean^2 y / 2 - mean / 2 sqrt(...) cancels: float32 agrees to ~1e-5 (XLA rounds
    # that arithmetic differently), float64 to the normals' last bits
    np.testing.assert_allclose(got, want, rtol=1e-4 if f32 else 1e-12)
    p = np.asarray([0.3, 0.01, 0.9, 0.5], dtype=np.float32 if f32 else np.float64)
    got = R.geometric(k, qb.asarray(p), (500, 4)).numpy()
    want = np.asarray(jax.random.geometric(j, jnp.asarray(p), (500, 4)))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(R.geometric(k, 0.25, (100,)).numpy(), np.asarray(jax.random.geometric(j, 0.25, (100,))))
    np.testing.assert_array_equal(qb.jit(lambda kk: R.geometric(kk, 0.25, (100,)))(k).numpy(),
                                  np.asarray(jax.random.geometric(j, 0.25, (100,))))


def test_f_and_multinomial_moments():
    # the distributions (tests/python/test_random_jax_draws.py compares the numbers with JAX's)
    k = R.key(3)
    x = R.f(k, 5.0, 10.0, (40000,)).numpy()
    d1, d2 = 5.0, 10.0
    mean, var = d2 / (d2 - 2), 2 * d2 ** 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4))
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / x.size)
    assert abs(np.median(x) - 0.9319331) < 0.03  # scipy.stats.f(5, 10).median()
    assert R.f(k, qb.asarray([2.0, 3.0]), 4.0).shape == (2,)
    p = np.array([0.2, 0.3, 0.5])
    c = R.multinomial(k, 20.0, qb.asarray(p), shape=(20000, 3)).numpy()
    assert c.dtype == np.dtype(qb.default_dtype().name)
    np.testing.assert_array_equal(c.sum(-1), 20.0)
    assert np.all(c == np.round(c)) and np.all(c >= 0)
    np.testing.assert_allclose(c.mean(0), 20 * p, atol=0.06)
    np.testing.assert_allclose(c.var(0), 20 * p * (1 - p), rtol=0.05)
    np.testing.assert_allclose(np.cov(c.T)[0, 1], -20 * p[0] * p[1], atol=0.08)
    rows = R.multinomial(k, qb.asarray([5.0, 100.0]), qb.asarray(np.stack([p, p]))).numpy()
    np.testing.assert_array_equal(rows.sum(-1), [5.0, 100.0])
    np.testing.assert_array_equal(R.multinomial(k, 7.0, qb.asarray([0.0, 1.0, 0.0])).numpy(), [0.0, 7.0, 0.0])
    np.testing.assert_array_equal(qb.jit(lambda kk: R.multinomial(kk, 10.0, qb.asarray(p)))(k).numpy(),
                                  R.multinomial(k, 10.0, qb.asarray(p)).numpy())
    with pytest.raises(ValueError, match="must end with the number of categories"):
        R.multinomial(k, 10.0, qb.asarray(p), shape=(4,))
    with pytest.raises(ValueError, match="integer dtype"):
        R.geometric(k, 0.5, (3,), dtype=qb.float32)
    with pytest.raises(ValueError, match="broadcast"):
        R.rayleigh(k, qb.ones(3), (2,))
    with pytest.raises(TypeError, match="a number or an array"):
        R.wald(k, "1.0")


# ---------------------------------------------------------------------------------------------
# jax.tree_util: key paths and the remaining names
# ---------------------------------------------------------------------------------------------

def test_key_entries_are_jaxs():
    pairs = [(tu.DictKey("a"), jtu.DictKey("a")), (tu.DictKey(1), jtu.DictKey(1)),
             (tu.SequenceKey(3), jtu.SequenceKey(3)), (tu.GetAttrKey("w"), jtu.GetAttrKey("w")),
             (tu.FlattenedIndexKey(2), jtu.FlattenedIndexKey(2))]
    for q, j in pairs:
        assert repr(q) == repr(j) and str(q) == str(j)
        assert q == type(q)(*[getattr(q, a) for a in type(q).__match_args__]) and hash(q) == hash(pickle.loads(pickle.dumps(q)))
    assert tu.DictKey("a").key == "a" and tu.SequenceKey(3).idx == 3 and tu.GetAttrKey("w").name == "w"
    assert tu.FlattenedIndexKey(2).key == 2
    assert tu.DictKey("a") != tu.GetAttrKey("a") and tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
    # backwards compatibility: an entry equals its bare key (JAX's do not)
    assert tu.DictKey("a") == "a" and tu.SequenceKey(0) == 0 and {tu.DictKey("a"): 1}["a"] == 1
    with pytest.raises(AttributeError, match="immutable"):
        tu.DictKey("a").key = "b"
    with pytest.raises(TypeError, match="must be an int"):
        tu.SequenceKey("0")
    with pytest.raises(TypeError, match="must be a str"):
        tu.GetAttrKey(1)
    match tu.GetAttrKey("w"):
        case tu.GetAttrKey(name):
            assert name == "w"
    assert repr(tu.KeyEntry) == repr(jtu.KeyEntry)


Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class _Layer:
    w: object
    act: str


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


for _reg in (tu, jtu):
    _reg.register_dataclass(_Layer, data_fields=["w"], meta_fields=["act"])
    _reg.register_pytree_node(_Pair, lambda p: ((p.a, p.b), None), lambda _, ch: _Pair(*ch))


def test_flatten_with_path_gives_jaxs_key_paths():
    def tree(partial):
        return {"a": [1.0, Point(2.0, 3.0)], "b": _Layer(4.0, "tanh"), "c": _Pair(5.0, (6.0,)),
                "d": collections.OrderedDict(z=7.0), "e": None, "f": partial(print, 8.0, k=9.0)}
    ours = tu.tree_flatten_with_path(tree(tu.Partial))[0]
    theirs = jtu.tree_flatten_with_path(tree(jtu.Partial))[0]
    assert [(repr(p), x) for p, x in ours] == [(repr(p), x) for p, x in theirs]
    for (p, _), (jp, _) in zip(ours, theirs):
        for simple in (False, True):
            for sep in ("", "/"):
                assert tu.keystr(p, simple=simple, separator=sep) == jtu.keystr(jp, simple=simple, separator=sep)
    assert tu.keystr(ours[0][0], "params") == "params['a'][0]"  # Quabla's root prefix
    assert tu.keystr(("w", 0)) == "['w'][0]"  # bare keys, as before
    assert [p for p, _ in tu.tree_leaves_with_path({"a": [1, 2]})] == [("a", 0), ("a", 1)]  # compatible equality
    paths = tu.tree_map_with_path(lambda p, x: tu.keystr(p), {"a": 1, "b": Point(2, 3)})
    assert paths == {"a": "['a']", "b": Point("['b'].x", "['b'].y")}
    # is_leaf_takes_path, as JAX's
    t = [1, [2, 3]]
    assert (repr(tu.tree_flatten_with_path(t, lambda p, x: len(p) == 1, is_leaf_takes_path=True)[0])
            == repr(jtu.tree_flatten_with_path(t, lambda p, x: len(p) == 1, is_leaf_takes_path=True)[0]))


def test_flatten_one_level_broadcast_and_reductions_match_jax():
    for x in ({"b": 1, "a": [2]}, [1, (2,)], (1, 2), Point(1, 2), None, collections.OrderedDict(b=1, a=2)):
        (qc, qa), (jc, ja) = tu.flatten_one_level(x), jtu.flatten_one_level(x)
        assert list(qc) == list(jc) and qa == ja
        (qk, qa), (jk, ja) = tu.flatten_one_level_with_keys(x), jtu.flatten_one_level_with_keys(x)
        assert [c for _, c in qk] == [c for _, c in jk] and qa == ja
    assert [repr(k) for k, _ in tu.flatten_one_level_with_keys({"b": 1, "a": 2})[0]] == ["DictKey(key='a')",
                                                                                          "DictKey(key='b')"]
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tu.flatten_one_level(1.0)
    for prefix, full in (([1, {"a": 2}], [[3, 4], {"a": {"x": 5, "y": 6}}]), (1, {"a": 2, "b": [3]}),
                         ([None, 1], [None, [2, 3]]), ([1, 1], [None, [2, 3]])):
        assert tu.tree_broadcast(prefix, full) == jtu.tree_broadcast(prefix, full)
    with pytest.raises(ValueError, match=r"\['b'\]"):
        tu.tree_broadcast({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2, 3]})
    with pytest.raises(ValueError, match="not a prefix"):
        tu.tree_broadcast([1, 2], (1, 2))
    op = lambda a, b: "(" + a + b + ")"  # noqa: E731
    for xs in (list("abcde"), list("ab"), ["a"], list("abcdefghij")):
        assert tu.tree_reduce_associative(op, xs) == jtu.tree_reduce_associative(op, xs)
    assert tu.tree_reduce_associative(op, [], identity="e") == "e"
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(op, [])
    td = tu.treedef_tuple([tu.tree_structure([1, 2]), tu.tree_structure(1)])
    assert repr(td)[len("TreeDef"):] == repr(jtu.treedef_tuple([jtu.tree_structure([1, 2]),
                                                                 jtu.tree_structure(1)]))[len("PyTreeDef"):]
    assert tu.tree_unflatten(td, [1, 2, 3]) == ([1, 2], 3)
    with pytest.raises(TypeError, match="TreeDef"):
        tu.treedef_tuple([1])
    for typ in (list, dict, type(None), Point, int, float, _Pair):
        assert tu.is_tree_node(typ) == jtu.is_tree_node(typ)


def test_register_with_keys_and_static():
    @tu.register_pytree_with_keys_class
    class Params:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten_with_keys(self):
            return ((tu.GetAttrKey("w"), self.w), (tu.GetAttrKey("b"), self.b)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path([Params(1.0, {"z": 2.0})])[0]]
    assert paths == ["[0].w", "[0].b['z']"]
    doubled = tu.tree_map(lambda x: 2 * x, Params(1.0, 2.0))
    assert (doubled.w, doubled.b) == (2.0, 4.0)
    g = qb.grad(lambda p: p.w * p.b)(Params(qb.asarray(3.0), qb.asarray(4.0)))
    assert (float(g.w), float(g.b)) == (4.0, 3.0)

    class Interval:
        def __init__(self, lo, hi):
            self.lo, self.hi = lo, hi

    tu.register_pytree_with_keys(Interval, lambda i: (((tu.DictKey("lo"), i.lo), (tu.DictKey("hi"), i.hi)), None),
                                 lambda _, ch: Interval(*ch), lambda i: ((i.lo, i.hi), None))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Interval(0.0, 1.0))] == ["['lo']", "['hi']"]
    assert tu.tree_leaves(Interval(0.0, 1.0)) == [0.0, 1.0]

    @tu.register_static
    @dataclasses.dataclass(frozen=True)
    class Config:
        scale: float

    assert tu.tree_leaves([Config(2.0), 1.0]) == [1.0]
    assert tu.tree_structure(Config(2.0)) != tu.tree_structure(Config(3.0))
    f = qb.jit(lambda cfg, x: x * cfg.scale)
    assert float(f(Config(2.0), qb.asarray(3.0))) == 6.0 and float(f(Config(5.0), qb.asarray(3.0))) == 15.0
    with pytest.raises(TypeError, match="tree_flatten_with_keys"):
        tu.register_pytree_with_keys_class(type("NoKeys", (), {}))
    with pytest.raises(TypeError, match="expected a class"):
        tu.register_static(3)


def test_default_registry():
    reg = tu.default_registry
    assert reg.flatten({"b": 1, "a": 2})[0] == [2, 1]
    assert reg.flatten_one_level([1, 2]) == tu.flatten_one_level([1, 2])
    assert reg.is_node([1]) and not reg.is_node(1.0)

    class Wrapped:
        def __init__(self, v):
            self.v = v

    reg.register_node(Wrapped, lambda w: ((w.v,), None), lambda _, ch: Wrapped(ch[0]))
    assert tu.tree_leaves([Wrapped(3.0)]) == [3.0]


def test_tree_reduce_with_a_none_initializer_and_map_with_path_structure_check():
    assert qb.tree_util.tree_reduce(lambda a, b: (a, b), [1, 2], None) == ((None, 1), 2)  # None is an initializer
    assert qb.tree_util.tree_reduce(lambda a, b: a + b, [1, 2]) == 3
    with pytest.raises(ValueError, match="argument 1 has structure"):
        qb.tree.map_with_path(lambda p, x, y: y, {"a": 1, "b": 2}, {"a": 10, "c": 20})


def test_is_leaf_is_asked_about_none_as_jax():
    assert qb.tree_util.tree_leaves([None, 1.0], is_leaf=lambda x: x is None) == [None, 1.0]
    assert qb.tree_util.tree_map(lambda x: 0 if x is None else x, {"a": None}, is_leaf=lambda x: x is None) == {"a": 0}
    assert qb.tree_util.tree_leaves([None, 1.0]) == [1.0]  # without is_leaf, None is an empty node
    assert qb.tree_util.tree_structure([None, 1.0], is_leaf=lambda x: x is None).num_leaves == 2
