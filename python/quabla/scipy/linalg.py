"""jax.scipy.linalg's functions on Quabla's (differentiable, batched) linear algebra."""
from __future__ import annotations

from ..linalg import (  # noqa: F401
    cho_factor, cho_solve, det, eigh as _eigh, expm, inv, lu, lu_factor, lu_solve, pinv, solve as _solve,
    solve_triangular, svd,
)
from .. import linalg as _la

__all__ = ["cholesky", "cho_factor", "cho_solve", "det", "eigh", "expm", "inv", "lu", "lu_factor", "lu_solve",
           "pinv", "qr", "solve", "solve_triangular", "svd"]


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor: upper (a = U^T U) by default, lower with lower=True (SciPy's)."""
    return _la.cholesky(a, upper=not lower)


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
    w, v = _eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, check_finite: bool = True,
          assume_a: str = "gen"):
    """A x = b ('pos' solves by Cholesky, anything else by LU)."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return _solve(a, b)
