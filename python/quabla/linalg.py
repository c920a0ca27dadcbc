"""qb.linalg: dense linear algebra with NumPy's / JAX's names and results, batched over
leading axes, differentiable to any order (forward and reverse), under jit and vmap.

Primitives (C++, LAPACK): cholesky, triangular solve, LU solve and slogdet; everything
else here composes them. Inside jit, singular or non-positive-definite input gives inf or
NaN results as in JAX (no exception); shapes and dtypes are checked before anything runs.
"""
from __future__ import annotations

import operator
from typing import NamedTuple, Sequence

from . import _core
from ._package import qb as _qb
from ._indexing import argsort as _argsort, take_along_axis as _take_along_axis
from ._numpy_extra import _is_complex, _COMPLEX

__all__ = ["cholesky", "cho_factor", "cho_solve", "cond", "det", "eig", "eigvals", "eigh", "eigvalsh", "expm", "inv", "lstsq", "lu",
           "lu_factor", "lu_solve", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals",
           "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult", "cg", "gmres", "bicgstab", "SolverInfo",
           "vector_norm", "matrix_norm", "trace", "diagonal", "outer", "cross", "matmul", "matrix_transpose",
           "tensordot", "vecdot", "tensorsolve", "tensorinv"]


class SlogdetResult(NamedTuple):
    sign: _core.Array
    logabsdet: _core.Array


class EigResult(NamedTuple):
    eigenvalues: _core.Array
    eigenvectors: _core.Array


class EighResult(NamedTuple):
    eigenvalues: _core.Array
    eigenvectors: _core.Array


class QRResult(NamedTuple):
    Q: _core.Array
    R: _core.Array


class SVDResult(NamedTuple):
    U: _core.Array
    S: _core.Array
    Vh: _core.Array


def _arr(x):
    return x if isinstance(x, _core.Array) else _core.asarray(x)


def _float(x, like=None):
    """x (real) as an array of a float dtype: integers and bools become like's float dtype or
    the default one (as jax.numpy.linalg promotes them)."""
    x = _arr(x)
    if x.dtype in (_core.float32, _core.float64):
        return x
    if like is not None and like.dtype in (_core.float32, _core.float64):
        return x.astype(like.dtype)
    return x.astype(_core.default_dtype())


def _inexact(x, fname):
    """x as a float or complex array (integers and bools as the default float dtype)."""
    x = _arr(x)
    if x.dtype in _COMPLEX or x.dtype in (_core.float32, _core.float64):
        return x
    return x.astype(_core.default_dtype())


def _system(fname, a, b):
    """(a, b) of a linear system: float ones as _float makes them; when either is complex both
    become the complex dtype they promote to (jax.numpy's rule)."""
    a, b = _arr(a), _arr(b)
    if not (_is_complex(a) or _is_complex(b)):
        a = _float(a)
        return a, _float(b, a)
    a, b = _inexact(a, fname), _inexact(b, fname)
    try:
        ct = _qb.result_type(a, b)  # strict, as arithmetic: float32 with complex128 raises
    except ValueError:
        raise ValueError(f"{fname}: the matrix is {a.dtype.name} and the right-hand side {b.dtype.name}; give both "
                         f"one precision with .astype (complex64 goes with float32, complex128 with float64)") from None
    return a.astype(ct), b.astype(ct)


def _mT(x):
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return _core.transpose(x, tuple(perm))


def _H(x):
    """The conjugate transpose of each matrix (the transpose of a real one)."""
    t = _mT(x)
    return t.conj() if x.dtype in _COMPLEX else t


def _real(x):
    return x.real if x.dtype in _COMPLEX else x


def _square(fname, a, promote: bool = True):
    a = _inexact(a, fname) if promote else _arr(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{fname}: expected a square matrix or a stack of them [..., n, n], got shape {list(a.shape)}")
    return a


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor L (A = L L^H; with upper=True, U = L^H), real or complex. The input
    is symmetrized ((A + A^H) / 2) first, as jnp.linalg.cholesky does; NaN where A is not
    positive definite."""
    a = _inexact(a, "cholesky")
    if symmetrize_input and a.ndim >= 2:
        a = (a + _H(a)) * 0.5
    l = _core.linalg_cholesky(a)
    return _H(l) if upper else l


def _cholesky_triangle(a, lower: bool, name: str):
    """SciPy's Cholesky factor: L from a's lower triangle (lower=True), else U = L^H from its
    upper one (the factor of a^H's lower triangle). The triangle read is mirrored into a
    Hermitian matrix first, so the derivative is that of a function of the triangle alone
    (the other triangle gets none; along Hermitian directions it is JAX's)."""
    a = _inexact(a, name)
    if a.ndim < 2:
        raise ValueError(f"{name}: expected a matrix (at least 2-D), got shape {tuple(a.shape)}")
    t = _core.tril(a if lower else _H(a))
    l = _core.linalg_cholesky(t + _H(_core.tril(t, -1)))
    return l if lower else _H(l)


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug=None, check_finite: bool = True):
    """x with op(a) x = b for a triangular a (scipy.linalg.solve_triangular): trans 0/'N'
    (a), 1/'T' (a^T) or 2/'C' (a^H, the conjugate transpose), reading only the lower or
    upper triangle of a. Real or complex."""
    if trans in (0, "N"):
        t = False
    elif trans in (1, 2, "T", "C"):
        t = True
    else:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a, b = _system("solve_triangular", a, b)
    if trans in (2, "C") and _is_complex(a):
        a = a.conj()
    return _core.linalg_triangular_solve(a, b, bool(lower), t, bool(unit_diagonal))


def solve(a, b):
    """x with a x = b (LU with partial pivoting). b is [..., n, k], or [n] for one vector
    (NumPy 2's rule); batch axes broadcast. Real or complex (LAPACK's complex LU; a real a
    with a complex b as one real solve of both parts)."""
    a, b = _system("solve", a, b)
    return _core.linalg_solve(a, b)


def slogdet(a) -> SlogdetResult:
    """(sign, log|det a|) of each matrix; (0, -inf) for a singular one. For a complex matrix
    the sign is det / |det| (complex) and log|det| real, as NumPy."""
    r = _core.linalg_slogdet(_inexact(a, "slogdet"))
    return SlogdetResult(r[..., 0], _real(r[..., 1]))


def eig(a) -> EigResult:
    """(eigenvalues, right eigenvectors as columns) of each general square matrix, complex
    (complex64 for float32 input, complex128 for float64) by LAPACK's geev: each eigenvector
    of unit norm with its largest component real, a real matrix's complex pairs adjacent
    (positive imaginary part first); jax.numpy.linalg.eig's results bit for bit (the same
    LAPACK), NumPy's for small matrices (its own OpenBLAS may order a large matrix's
    eigenvalues differently). Real or complex input; NaN results for inf/NaN entries.
    Differentiable: eigenvalue derivatives as JAX's; eigenvector derivatives by JAX's
    nondegenerate rule with geev's normalisation (JAX's enable_eigvec_derivs=True; infinite
    where two eigenvalues coincide)."""
    a = _square("eig", _inexact(a, "eig"), promote=False)
    r = _core.linalg_eig(a, False)
    return EigResult(r[..., 0, :], r[..., 1:, :])


def eigvals(a):
    """The eigenvalues of each general square matrix, complex, in eig's order (no
    eigenvectors are computed; derivatives as JAX's)."""
    a = _square("eigvals", _inexact(a, "eigvals"), promote=False)
    return _core.linalg_eig(a, True)


def eigh(a, UPLO=None, symmetrize_input: bool = True) -> EighResult:
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric (or complex
    Hermitian) matrix; the eigenvalues are real. With symmetrize_input (the default, as JAX)
    the input is (A + A^H) / 2; else the UPLO ('L', default, or 'U') triangle is read.
    Derivatives follow JAX's rule (infinite where two eigenvalues coincide)."""
    a = _square("eigh", a)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if symmetrize_input:
        a = (a + _H(a)) * 0.5
    elif UPLO == "U":
        a = _H(a)  # the kernel reads the lower triangle
    r = _core.linalg_eigh(a)
    return EighResult(_real(r[..., 0, :]), r[..., 1:, :])


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """The eigenvalues of each symmetric matrix, ascending."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """SVDResult(U, S, Vh) with A = U diag(S) Vh, S descending (numpy.linalg.svd); only S
    when compute_uv=False. Derivatives as JAX's rule (full_matrices=True has one only for
    square matrices, where it is the reduced SVD)."""
    a = _inexact(a, "svd")
    if a.ndim < 2:
        raise ValueError(f"svd: expected a matrix or a stack of them [..., m, n], got shape {list(a.shape)}")
    m, n = a.shape[-2], a.shape[-1]
    full = bool(full_matrices) and compute_uv and m != n
    r = _core.linalg_svd(a, full)
    k = min(m, n)
    s = _real(r[..., m, :k])
    if not compute_uv:
        return s
    u = r[..., :m, :(m if full else k)]
    v = r[..., m + 1:, :(n if full else k)]
    return SVDResult(u, s, _H(v))


def qr(a, mode: str = "reduced"):
    """QRResult(Q, R) with A = Q R (numpy.linalg.qr): mode 'reduced' (Q m x k, R k x n),
    'complete' (Q m x m, R m x n) or 'r' (R alone). Derivatives for the reduced QR of a
    matrix with m >= n, as in JAX."""
    a = _inexact(a, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    if a.ndim < 2:
        raise ValueError(f"qr: expected a matrix or a stack of them [..., m, n], got shape {list(a.shape)}")
    m, n = a.shape[-2], a.shape[-1]
    complete = mode == "complete" and m > n
    out = _core.linalg_qr(a, complete)
    rq = m if complete else min(m, n)
    q, r = out[..., :m, :rq], out[..., m:, :n]
    return r if mode == "r" else QRResult(q, r)


def svdvals(a):
    """The singular values, descending."""
    return svd(a, compute_uv=False)


def _default_rtol(a):
    eps = 1.1920929e-07 if a.dtype == _core.float32 else 2.220446049250313e-16
    return max(a.shape[-2], a.shape[-1]) * eps


def _inverse_above(s, cut):
    """1 / s where s > cut, else 0 (no division by the small ones)."""
    keep = s > cut
    return _core.where(keep, 1.0 / _core.where(keep, s, 1.0), 0.0)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse through the SVD: singular values at or below
    rtol * max(s) (default max(m, n) * eps, as JAX) count as zero."""
    a = _inexact(a, "pinv")
    if rcond is not None:
        rtol = rcond
    u, s, vh = svd(a, full_matrices=False)
    cut = (_default_rtol(a) if rtol is None else rtol) * _core.max(s, axis=-1, keepdims=True)
    s_inv = _inverse_above(s, cut)
    return _core.matmul(_H(vh) * s_inv[..., None, :], _H(u))


def lstsq(a, b, rcond=None):
    """(x, residuals, rank, s) minimising ||a x - b|| (numpy.linalg.lstsq), through the SVD;
    residuals are the squared norms of b - a x when a has full column rank and more rows
    than columns, else empty."""
    a, b = _system("lstsq", a, b)
    if a.ndim != 2:
        raise ValueError(f"lstsq: expected a 2-D matrix, got shape {list(a.shape)}")
    vec = b.ndim == 1
    bb = _core.reshape(b, (-1, 1)) if vec else b
    if bb.shape[0] != a.shape[0]:
        raise ValueError(f"lstsq: a has {a.shape[0]} rows but b has {bb.shape[0]}")
    u, s, vh = svd(a, full_matrices=False)
    cut = (_default_rtol(a) if rcond is None else rcond) * _core.max(s)
    s_inv = _inverse_above(s, cut)
    x = _core.matmul(_H(vh), s_inv[:, None] * _core.matmul(_H(u), bb))
    rank = _core.sum((s > cut).astype(_core.int32))
    m, n = a.shape
    if m > n:
        resid = _core.sum(_core.abs(bb - _core.matmul(a, x)) ** 2, axis=0)
    else:
        resid = _core.zeros((0,), dtype=s.dtype)
    if vec:
        x = x[:, 0]
        if m > n:
            resid = _core.reshape(resid, (1,))
    return x, resid, rank, s


def matrix_rank(M, rtol=None, hermitian: bool = False, *, tol=None):
    """The number of singular values above tol (default: rtol * max(s), rtol = max(m, n) * eps)."""
    M = _inexact(M, "matrix_rank")
    if M.ndim < 2:
        return _core.any(M != 0).astype(_core.int32)
    s = svdvals(M)
    cut = tol if tol is not None else (_default_rtol(M) if rtol is None else rtol) * _core.max(s, axis=-1, keepdims=True)
    return _core.sum((s > cut).astype(_core.int32), axis=-1)


def cond(x, p=None):
    """The condition number in the norm p (None or 2: s_max / s_min; -2: s_min / s_max;
    'fro', 1, -1, inf, -inf: norm(x) * norm(inv(x)))."""
    x = _inexact(x, "cond")
    if p is None or p in (2, -2):
        s = svdvals(x)
        r = s[..., 0] / s[..., -1]
        return 1.0 / r if p == -2 else r
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


# Higham (2005): the [13/13] Padé approximant's coefficients and the 1-norm up to which it
# is accurate to double precision without scaling.
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential by the [13/13] Padé approximant with scaling and squaring
    (Higham 2005): A / 2^s with s from the 1-norm, then s squarings (at most max_squarings,
    as jax.scipy.linalg.expm). Made of products and a solve, so it differentiates to any
    order and batches."""
    from ._control import fori_loop

    A = _square("expm", A)
    n = A.shape[-1]
    norm1 = norm(A, 1, axis=(-2, -1))
    s = _core.clip(_core.ceil(_core.log2(_core.maximum(norm1, 1e-300) / _THETA13)), 0, max_squarings)
    s = _core.stop_gradient(s)
    As = A / (2.0 ** s)[..., None, None]
    eye = _core.broadcast_to(_core.eye(n, dtype=A.dtype), A.shape)
    b = _PADE13
    A2 = _core.matmul(As, As)
    A4 = _core.matmul(A2, A2)
    A6 = _core.matmul(A4, A2)
    U = _core.matmul(As, _core.matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2
                     + b[1] * eye)
    V = _core.matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = _core.linalg_solve(V - U, V + U)
    s_mat = s[..., None, None]
    return fori_loop(0, max_squarings, lambda i, X: _core.where(i < s_mat, _core.matmul(X, X), X), R)


def _lu_parts(a):
    a = _square("lu", a)
    out = _core.linalg_lu(a)
    return _real(out[..., 0, :]).astype(_core.int32), _real(out[..., 1, :]).astype(_core.int32), out[..., 2:, :]


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """(lu, piv) as scipy.linalg.lu_factor: L (unit diagonal, not stored) and U in one
    matrix, and the 0-based row interchanges (row i was swapped with row piv[i])."""
    _, piv, lu_ = _lu_parts(a)
    return lu_, piv


def _perm_from_pivots(piv):
    """The permutation the sequential row interchanges make (row i of P A is row perm[i])."""
    from ._control import fori_loop

    n = piv.shape[-1]
    perm = _core.broadcast_to(_core.arange(n, dtype=_core.int32), piv.shape)

    idx = _core.arange(n, dtype=_core.int32)

    def pick(x, sel):  # x at the one position sel marks, keeping the axis
        return _core.sum(_core.where(sel, x, 0), axis=-1, keepdims=True).astype(_core.int32)

    def swap(i, p):
        at_i = idx == i
        j = pick(piv, at_i)
        at_j = idx == j
        return _core.where(at_i, pick(p, at_j), _core.where(at_j, pick(p, at_i), p))

    return fori_loop(0, n, swap, perm)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b: bool = False, check_finite: bool = True):
    """x with a x = b (trans 0), a^T x = b (trans 1) or a^H x = b (trans 2) from lu_factor's
    (lu, piv)."""
    lu_, piv = lu_and_piv
    lu_, piv = _arr(lu_), _arr(piv)
    lu_, b = _system("lu_solve", lu_, b)
    if trans in (2, "C") and lu_.dtype in _COMPLEX:
        lu_ = lu_.conj()
    perm = _perm_from_pivots(piv)
    vec = b.ndim == lu_.ndim - 1
    bb = b[..., None] if vec else b
    if trans in (0, "N"):
        pb = _take_along_axis(bb, _core.broadcast_to(perm[..., :, None], perm.shape + (bb.shape[-1],)), axis=-2)
        y = _core.linalg_triangular_solve(lu_, pb, True, False, True)
        x = _core.linalg_triangular_solve(lu_, y, False, False, False)
    elif trans in (1, 2, "T", "C"):
        z = _core.linalg_triangular_solve(lu_, bb, False, True, False)
        w = _core.linalg_triangular_solve(lu_, z, True, True, True)
        inv = _argsort(perm, axis=-1).astype(_core.int32)  # x[perm] = w
        x = _take_along_axis(w, _core.broadcast_to(inv[..., :, None], inv.shape + (w.shape[-1],)), axis=-2)
    else:
        raise ValueError(f"lu_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return x[..., 0] if vec else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """(p, l, u) with a = p @ l @ u (scipy.linalg.lu; square matrices), or (p @ l, u) with
    permute_l. Differentiable (the permutation is piecewise constant)."""
    perm, _, lu_ = _lu_parts(a)
    n = lu_.shape[-1]
    idx = _core.arange(n, dtype=_core.int32)
    eye = _core.eye(n, dtype=lu_.dtype)
    lower = _core.where(idx[:, None] > idx[None, :], lu_, 0.0) + eye
    upper = _core.where(idx[:, None] <= idx[None, :], lu_, 0.0)
    # P A = L U, so a = P^T L U: p[i, j] = 1 where perm[j] == i
    p = (perm[..., None, :] == idx[:, None]).astype(lu_.dtype)
    if permute_l:
        return _core.matmul(p, lower), upper
    return p, lower, upper


def det(a):
    """The determinant, sign * exp(log|det|) (from the LU factorization)."""
    s, l = slogdet(a)
    return s * _core.exp(l)


def inv(a):
    """The inverse (solve(a, I)), real or complex; inf/NaN for a singular matrix."""
    a = _square("inv", _inexact(a, "inv"), promote=False)
    eye = _core.broadcast_to(_core.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _core.linalg_solve(a, eye)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """(c, lower) as scipy.linalg.cho_factor: c holds the factor in the requested triangle
    (the other triangle is zero here, where SciPy leaves it unspecified). Only that triangle
    of a is read, as SciPy and jax.scipy do."""
    return _cholesky_triangle(a, lower, "cho_factor"), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """x with A x = b from cho_factor's (c, lower) (A = L L^H, real or complex)."""
    c, lower = c_and_lower
    c, b = _system("cho_solve", c, b)
    ch = c.conj() if c.dtype in _COMPLEX else c  # the transposed solves are with L^H
    if lower:
        y = _core.linalg_triangular_solve(c, b, True, False, False)
        return _core.linalg_triangular_solve(ch, y, True, True, False)
    y = _core.linalg_triangular_solve(ch, b, False, True, False)
    return _core.linalg_triangular_solve(c, y, False, False, False)


def matrix_power(a, n: int):
    """a to the integer power n by repeated squaring (n < 0: of the inverse)."""
    import operator

    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {type(n).__name__}") from None
    a = _square("matrix_power", a, promote=False)
    if n == 0:
        return _core.broadcast_to(_core.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else _core.matmul(result, base)
        n >>= 1
        if n:
            base = _core.matmul(base, base)
    return result


def multi_dot(arrays: Sequence, *, precision=None):
    """The product of a chain of matrices, multiplied in the order with the fewest flops
    (the first may be a 1-D row vector and the last a column vector, as in NumPy)."""
    arrays = [_arr(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("multi_dot: expected at least two arrays")
    first_vec, last_vec = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_vec:
        arrays[0] = _core.reshape(arrays[0], (1, -1))
    if last_vec:
        arrays[-1] = _core.reshape(arrays[-1], (-1, 1))
    for k, x in enumerate(arrays):
        if x.ndim != 2:
            raise ValueError(f"multi_dot: array {k} has {x.ndim} dimensions; only the first and last may be 1-D, "
                             "the others must be 2-D")
    dims = [arrays[0].shape[0]] + [x.shape[1] for x in arrays]
    n = len(arrays)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _core.matmul(product(i, k), product(k + 1, j))

    out = product(0, n - 1)
    if first_vec:
        out = out[0]
    if last_vec:
        out = out[..., 0]
    return out


def _norm_max(a, axis, keepdims, ord):
    """max over axis, 0 where the axis is empty (numpy.linalg.norm's convention: a norm of
    nothing is 0)."""
    if a.shape[axis] == 0:
        return _core.sum(a, axis=axis, keepdims=keepdims)  # zeros of the reduced shape
    return _core.max(a, axis=axis, keepdims=keepdims)


def _norm_min(a, axis, keepdims, ord):
    """min over axis; an empty axis raises ValueError (as NumPy: the minimum of nothing is undefined)."""
    if a.shape[axis] == 0:
        raise ValueError(f"norm: ord={ord!r} takes a minimum over an empty axis (the input has a zero-length "
                         f"axis), which is undefined (NumPy raises too); use another ord or a non-empty input")
    return _core.min(a, axis=axis, keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector and matrix norms as numpy.linalg.norm: vector ord None/2, inf, -inf, 0, other
    p; matrix ord None/'fro', 1, -1, inf, -inf, 2, -2 and 'nuc' (the last three through the
    SVD). Complex x: the norms of |x|, except 2, -2 and 'nuc' for matrices (the singular
    values of the complex matrix)."""
    x = _arr(x)
    if x.dtype in _COMPLEX:
        if ord in (2, -2, "nuc") and (axis is None and x.ndim == 2 or not isinstance(axis, int) and axis is not None
                                      and len(axis) == 2):
            pass  # the singular values of the complex matrix, below
        else:
            x = _core.abs(x)
    if x.dtype not in (_core.float32, _core.float64) and x.dtype not in _COMPLEX:
        x = x.astype(_core.default_dtype())
    if axis is None:
        if ord is None:
            r = _core.sqrt(_core.sum(x * x))
            return _core.reshape(r, (1,) * x.ndim) if keepdims else r
        axis = tuple(range(x.ndim)) if x.ndim <= 2 else None
        if axis is None:
            raise ValueError("norm: an ord needs axis for arrays of more than two dimensions")
    try:
        axes = (operator.index(axis),) if hasattr(axis, "__index__") else tuple(operator.index(a) for a in axis)
    except TypeError:
        raise TypeError(f"norm: axis must be None, an int or a pair of ints, got {axis!r}") from None
    axis = axes
    for a in axis:
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"norm: axis {a} is out of range for an array of rank {x.ndim}")
    axis = tuple(a % x.ndim for a in axis)
    if len(set(axis)) != len(axis):
        raise ValueError(f"norm: axis names one axis twice, got {axis}")
    if len(axis) == 1:
        ax = axis[0]
        a = _core.abs(x)
        if ord is None or ord == 2:
            r = _core.sqrt(_core.sum(x * x, axis=ax, keepdims=keepdims))
        elif ord == float("inf"):
            r = _norm_max(a, ax, keepdims, ord)
        elif ord == -float("inf"):
            r = _norm_min(a, ax, keepdims, ord)
        elif ord == 0:
            r = _core.sum((x != 0).astype(x.dtype), axis=ax, keepdims=keepdims)
        elif isinstance(ord, str):
            raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
        else:
            p = float(ord)
            r = _core.sum(a ** p, axis=ax, keepdims=keepdims) ** (1.0 / p)
        return r
    if len(axis) != 2:
        raise ValueError(f"norm: axis must name one or two axes, got {axis}")
    r0, c0 = axis
    if ord is None or ord == "fro":
        return _core.sqrt(_core.sum(x * x, axis=axis, keepdims=keepdims))
    if ord in (1, -1):
        col = _core.sum(_core.abs(x), axis=r0, keepdims=True)
        red = _norm_max if ord == 1 else _norm_min
        r = red(col, c0, True, ord)
    elif ord in (float("inf"), -float("inf")):
        row = _core.sum(_core.abs(x), axis=c0, keepdims=True)
        red = _norm_max if ord > 0 else _norm_min
        r = red(row, r0, True, ord)
    elif ord in (2, -2, "nuc"):
        perm = [i for i in range(x.ndim) if i not in axis] + [r0, c0]
        sv = svdvals(_core.transpose(x, tuple(perm)))
        if ord == "nuc":
            r = _core.sum(sv, axis=-1)
        else:
            r = _norm_max(sv, -1, False, ord) if ord == 2 else _norm_min(sv, -1, False, ord)
        if keepdims:
            for ax in sorted(axis):
                r = _core.expand_dims(r, ax)
        return r
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if not keepdims:
        r = _core.squeeze(r, axis=axis)
    return r


# -- the array API's linalg names ---------------------------------------------------------------

def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """The vector norm of x over axis (all axes, flattened, when None)."""
    x = _arr(x)
    if axis is None:
        r = norm(_core.reshape(x, (-1,)), ord=ord)
        return _core.reshape(r, (1,) * x.ndim) if keepdims else r
    if isinstance(axis, tuple) and len(axis) != 1:
        axes = tuple(a % x.ndim for a in axis)
        rest = [i for i in range(x.ndim) if i not in axes]
        moved = _core.transpose(x, tuple(rest + list(axes)))
        flat = _core.reshape(moved, tuple(x.shape[i] for i in rest) + (-1,))
        r = norm(flat, ord=ord, axis=-1)
        if keepdims:
            for a in sorted(axes):
                r = _core.expand_dims(r, a)
        return r
    return norm(x, ord=ord, axis=axis if isinstance(axis, int) else axis[0], keepdims=keepdims)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """The matrix norm of the last two axes of x."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of the offset diagonal of the last two axes."""
    out = _qb.trace(x, offset=offset, axis1=-2, axis2=-1)
    return out if dtype is None else out.astype(dtype)


def diagonal(x, /, *, offset: int = 0):
    """The offset diagonal of the last two axes."""
    return _qb.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def outer(x1, x2, /):
    """The outer product of two vectors."""
    x1, x2 = _arr(x1), _arr(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer: expects two vectors, got shapes {tuple(x1.shape)} and {tuple(x2.shape)}")
    return _qb.outer(x1, x2)


def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along axis."""
    x1, x2 = _arr(x1), _arr(x2)
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"linalg.cross: axis {axis} must have length 3 in both operands, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    return _qb.cross(x1, x2, axis=axis)


def matmul(x1, x2, /):
    return _core.matmul(x1, x2)


def matrix_transpose(x, /):
    """x with its last two axes swapped."""
    x = _arr(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.matrix_transpose: x must have at least two dimensions, got shape {tuple(x.shape)}")
    return _mT(x)


def tensordot(x1, x2, /, *, axes=2):
    return _qb.tensordot(x1, x2, axes=axes)


def vecdot(x1, x2, /, *, axis: int = -1):
    """sum(conj(x1) * x2) along axis (broadcast; x1 conjugated, as the array API's vecdot)."""
    return _core.sum(_core._conj(_arr(x1)) * _arr(x2), axis=axis)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) = b (numpy.linalg.tensorsolve)."""
    a, b = _arr(a), _arr(b)
    if axes is not None:
        axes = [ax % a.ndim for ax in ((axes,) if isinstance(axes, int) else axes)]
        order = [i for i in range(a.ndim) if i not in axes] + axes
        a = _core.transpose(a, tuple(order))
    rows = 1
    for d in b.shape:
        rows *= d
    x_shape = tuple(a.shape[b.ndim:])
    cols = 1
    for d in x_shape:
        cols *= d
    if rows != cols or tuple(a.shape[:b.ndim]) != tuple(b.shape):
        raise ValueError(f"linalg.tensorsolve: a of shape {tuple(a.shape)} does not square with b of shape "
                         f"{tuple(b.shape)}")
    return _core.reshape(solve(_core.reshape(a, (rows, cols)), _core.reshape(b, (rows,))), x_shape)


def tensorinv(a, ind: int = 2):
    """The inverse of a with respect to tensordot over its first ind axes."""
    a = _arr(a)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be positive, got {ind}")
    outer_shape, inner_shape = tuple(a.shape[:ind]), tuple(a.shape[ind:])
    rows = 1
    for d in outer_shape:
        rows *= d
    cols = 1
    for d in inner_shape:
        cols *= d
    if rows != cols:
        raise ValueError(f"linalg.tensorinv: the first {ind} axes of a (size {rows}) and the rest (size {cols}) "
                         "must have equal sizes")
    return _core.reshape(inv(_core.reshape(a, (rows, cols))), inner_shape + outer_shape)


from ._krylov import cg, gmres, bicgstab, SolverInfo  # noqa: E402,F401
