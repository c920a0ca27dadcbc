"""jax.scipy.linalg's functions on Quabla's (differentiable, batched) linear algebra."""
from __future__ import annotations

from ..linalg import (  # noqa: F401
    cho_factor, cho_solve, det, eigh as _eigh, expm, inv, lu, lu_factor, lu_solve, pinv, solve as _solve,
    solve_triangular, svd,
)
from .. import linalg as _la
from .._linalg_breadth import (  # noqa: F401
    circulant, companion, convolution_matrix, fiedler, fiedler_companion, hadamard, hankel, helmert, hilbert,
    invhilbert, invpascal, leslie, pascal, hessenberg, qr_multiply, rsf2csf, schur, sqrtm, solve_sylvester,
)

__all__ = ["cholesky", "cho_factor", "cho_solve", "det", "dft", "eig", "eigvals", "eigh", "expm", "inv", "lu", "lu_factor", "lu_solve",
           "pinv", "qr", "solve", "solve_triangular", "svd", "block_diag", "toeplitz", "polar", "eigh_tridiagonal", "expm_frechet",
           # special matrices and more factorizations (quabla._linalg_breadth)
           "circulant", "companion", "convolution_matrix", "fiedler", "fiedler_companion", "hadamard", "hankel",
           "helmert", "hilbert", "invhilbert", "invpascal", "leslie", "pascal", "hessenberg", "qr_multiply", "rsf2csf", "schur",
           "sqrtm", "solve_sylvester"]


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor: upper (a = U^H U) by default, lower with lower=True (SciPy's).
    Only that triangle of a is read, as SciPy and jax.scipy do (jnp.linalg.cholesky and
    qb.linalg.cholesky symmetrize a instead); derivatives are JAX's for that reading."""
    return _la._cholesky_triangle(a, lower, "scipy.linalg.cholesky")


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False, check_finite: bool = True):
    """(Q, R) with SciPy's modes: 'full' (complete Q), 'economic' (reduced), 'r' (R alone, in a
    1-tuple as SciPy returns it)."""
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr: pivoting=True is not available")
    modes = {"full": "complete", "economic": "reduced", "r": "complete"}
    if mode not in modes:
        raise ValueError(f"scipy.linalg.qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    q, r = _la.qr(a, mode=modes[mode])
    return (r,) if mode == "r" else (q, r)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, **kwargs):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, read from its lower
    (or upper) triangle; (w, v), or w with eigvals_only=True."""
    if b is not None:
        raise NotImplementedError("scipy.linalg.eigh: the generalized problem (b) is not available")
    for name in ("eigvals", "subset_by_index", "subset_by_value"):
        if kwargs.get(name) is not None:  # a subset would otherwise be ignored, all eigenpairs returned
            raise NotImplementedError(f"scipy.linalg.eigh: only {name}=None is supported (as in jax.scipy); "
                                      f"slice the result for a subset")
    w, v = _eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def eig(a, b=None, left: bool = False, right: bool = True, overwrite_a: bool = False, overwrite_b: bool = False,
        check_finite: bool = True, homogeneous_eigvals: bool = False):
    """scipy.linalg.eig of a general square matrix: w, (w, vr), (w, vl) or (w, vl, vr) as left
    and right ask, complex (qb.linalg.eig's values and right vectors, LAPACK's geev). Left
    eigenvectors (vl[:, i]^H a = w[i] vl[:, i]^H) come from the inverse of vr, each scaled to
    unit norm with its largest component real and positive (geev's vl may differ from these by
    a sign). homogeneous_eigvals: w as the (2, n) pairs (w, 1). The generalized problem (b) is
    not available."""
    from .._package import qb as _qb
    if b is not None:
        raise NotImplementedError("scipy.linalg.eig: the generalized problem (b) is not available")
    w, vr = _la.eig(a)
    out = [_qb.stack([w, _qb.ones_like(w)], axis=-2) if homogeneous_eigvals else w]
    if left:
        vl = _la._H(_la.inv(vr))
        vl = vl / _qb.linalg.norm(vl, axis=-2, keepdims=True)
        big = _qb.argmax(_qb.abs(vl), axis=-2, keepdims=True)
        top = _qb.take_along_axis(vl, big, axis=-2)
        out.append(vl * (_qb.conj(top) / _qb.abs(top)))
    if right:
        out.append(vr)
    return out[0] if len(out) == 1 else tuple(out)


def eigvals(a, b=None, overwrite_a: bool = False, check_finite: bool = True, homogeneous_eigvals: bool = False):
    """scipy.linalg.eigvals: the eigenvalues of a general square matrix, complex."""
    return eig(a, b, right=False, homogeneous_eigvals=homogeneous_eigvals)


def dft(n: int, scale=None):
    """The n x n discrete Fourier transform matrix m[j, k] = exp(-2 pi i j k / n), scaled by
    1 (scale=None), 1/n ('n') or 1/sqrt(n) ('sqrtn'), as scipy.linalg.dft (dft(n) @ x equals
    fft(x))."""
    import operator
    from .._package import qb as _qb
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"dft: n must be non-negative, got {n}")
    if scale not in (None, "n", "sqrtn"):
        raise ValueError(f"dft: scale must be None, 'n' or 'sqrtn', got {scale!r}")
    jk = _qb.arange(n)[:, None] * _qb.arange(n)[None, :] % max(n, 1)  # exact in integers
    m = _qb.exp((-2j * _qb.pi / max(n, 1)) * jk)
    if scale == "n":
        m = m / n
    elif scale == "sqrtn":
        m = m / _qb.sqrt(_qb.asarray(float(n)))
    return m


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, check_finite: bool = True,
          assume_a: str = "gen"):
    """A x = b ('pos' solves by Cholesky, anything else by LU)."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return _solve(a, b)


# ---- constructions and compositions of the factorizations ------------------------------------

def block_diag(*arrs):
    """The arrays (scalars, vectors as rows, matrices) on the diagonal of one matrix."""
    from .._package import qb as _qb
    if not arrs:
        return _qb.zeros((1, 0))
    mats = []
    for a in arrs:
        a = _qb.asarray(a)
        if a.ndim > 2:
            raise ValueError(f"block_diag: arguments must have at most two dimensions, got shape {tuple(a.shape)}")
        mats.append(a.reshape((1, -1)) if a.ndim < 2 else a)
    from .._numpy_names import common_inexact
    dtype = common_inexact(*mats)  # (complex blocks keep their dtype)
    cols = sum(m.shape[1] for m in mats)
    rows, start = [], 0
    for m in mats:  # each block padded with zeros to the full width, then stacked
        rows.append(_qb.pad(m.astype(dtype), ((0, 0), (start, cols - start - m.shape[1]))))
        start += m.shape[1]
    return _qb.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (r = conj(c) when None, a
    Hermitian matrix for complex c; r[0] is ignored, as SciPy's)."""
    from .._package import qb as _qb
    c = _qb.asarray(c).reshape(-1)
    r = _qb.conj(c) if r is None else _qb.asarray(r).reshape(-1)
    from .._numpy_names import common_inexact
    inexact = (_qb.float32, _qb.float64, _qb.complex64, _qb.complex128)
    dtype = common_inexact(c, r) if any(v.dtype in inexact for v in (c, r)) else _qb.result_type(c, r)
    values = _qb.concatenate([c[::-1].astype(dtype), r[1:].astype(dtype)])  # c[-1] ... c[0], r[1] ...
    n, m = c.shape[0], r.shape[0]
    index = (_qb.arange(m)[None, :] - _qb.arange(n)[:, None]) + (n - 1)
    return _qb.take(values, index)


def polar(a, side: str = "right", method: str = "svd"):
    """(u, p) with a = u p (side='right') or a = p u (side='left'), u with orthonormal
    columns and p symmetric (Hermitian) positive semi-definite, from the SVD."""
    from .._package import qb as _qb
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method != "svd":
        raise ValueError(f"polar: method must be 'svd', got {method!r}")
    a = _qb.asarray(a)
    w, s, vh = _la.svd(a, full_matrices=False)
    u = w @ vh
    if side == "right":
        p = (_la._H(vh) * s) @ vh
    else:
        p = (w * s) @ _la._H(w)
    return u, p


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a", select_range=None, tol=None):
    """Eigenvalues (and vectors) of the symmetric tridiagonal matrix with diagonal d and
    off-diagonal e (by the dense symmetric eigensolver); select 'a' (all) or 'i' (indices
    select_range = (lo, hi), inclusive)."""
    from .._package import qb as _qb
    d, e = _qb.asarray(d), _qb.asarray(e)
    n = d.shape[0]
    if d.ndim != 1 or e.ndim != 1 or e.shape[0] != n - 1:
        raise ValueError(f"eigh_tridiagonal: d must be a vector of n and e of n - 1 entries, got shapes "
                         f"{tuple(d.shape)} and {tuple(e.shape)}")
    from .._numpy_names import common_float
    from .._numpy_extra import _no_complex
    _no_complex("qb.scipy.linalg.eigh_tridiagonal", d, e)
    dtype = common_float(d, e)
    t = _qb.diag(d.astype(dtype)) + _qb.diag(e.astype(dtype), 1) + _qb.diag(e.astype(dtype), -1)
    w, v = _la.eigh(t)
    if select == "i":
        if select_range is None:
            raise ValueError("eigh_tridiagonal: select='i' needs select_range=(lo, hi)")
        lo, hi = (int(x) for x in select_range)
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    elif select != "a":
        raise ValueError(f"eigh_tridiagonal: select must be 'a' or 'i', got {select!r}")
    return w if eigvals_only else (w, v)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """The Frechet derivative of expm at A in the direction E (and expm(A) first when
    compute_expm): the upper right block of expm([[A, E], [0, A]])."""
    from .._package import qb as _qb
    A, E = _qb.asarray(A), _qb.asarray(E)
    if A.ndim != 2 or A.shape != E.shape or A.shape[0] != A.shape[1]:
        raise ValueError(f"expm_frechet: A and E must be square matrices of one shape, got {tuple(A.shape)} and "
                         f"{tuple(E.shape)}")
    n = A.shape[0]
    big = _qb.block([[A, E], [_qb.zeros_like(A), A]])
    m = _la.expm(big)
    out = m[:n, n:]
    return (m[:n, :n], out) if compute_expm else out
