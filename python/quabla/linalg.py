"""qb.linalg: dense linear algebra with NumPy's / JAX's names and results, batched over
leading axes, differentiable to any order (forward and reverse), under jit and vmap.

Primitives (C++, LAPACK): cholesky, triangular solve, LU solve and slogdet; everything
else here composes them. Inside jit, singular or non-positive-definite input gives inf or
NaN results as in JAX (no exception); shapes and dtypes are checked before anything runs.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from . import _core

__all__ = ["cholesky", "cho_factor", "cho_solve", "det", "eigh", "eigvalsh", "inv", "matrix_power", "multi_dot", "norm",
           "slogdet", "solve", "solve_triangular", "EighResult", "SlogdetResult"]


class SlogdetResult(NamedTuple):
    sign: _core.Array
    logabsdet: _core.Array


class EighResult(NamedTuple):
    eigenvalues: _core.Array
    eigenvectors: _core.Array


def _arr(x):
    return x if isinstance(x, _core.Array) else _core.asarray(x)


def _mT(x):
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return _core.transpose(x, tuple(perm))


def _square(fname, a):
    a = _arr(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{fname}: expected a square matrix or a stack of them [..., n, n], got shape {list(a.shape)}")
    return a


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The Cholesky factor L (A = L L^T; with upper=True, U = L^T). The input is symmetrized
    ((A + A^T) / 2) first, as jnp.linalg.cholesky does; NaN where A is not positive definite."""
    a = _arr(a)
    if symmetrize_input and a.ndim >= 2 and a.dtype in (_core.float32, _core.float64):
        a = (a + _mT(a)) * 0.5
    l = _core.linalg_cholesky(a)
    return _mT(l) if upper else l


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug=None, check_finite: bool = True):
    """x with op(a) x = b for a triangular a (scipy.linalg.solve_triangular): trans 0/'N'
    (a), 1/'T' or 2/'C' (a^T, real), reading only the lower or upper triangle of a."""
    if trans in (0, "N"):
        t = False
    elif trans in (1, 2, "T", "C"):
        t = True
    else:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return _core.linalg_triangular_solve(a, b, bool(lower), t, bool(unit_diagonal))


def solve(a, b):
    """x with a x = b (LU with partial pivoting). b is [..., n, k], or [n] for one vector
    (NumPy 2's rule); batch axes broadcast."""
    return _core.linalg_solve(a, b)


def slogdet(a) -> SlogdetResult:
    """(sign, log|det a|) of each matrix; (0, -inf) for a singular one."""
    r = _core.linalg_slogdet(a)
    return SlogdetResult(r[..., 0], r[..., 1])


def eigh(a, UPLO=None, symmetrize_input: bool = True) -> EighResult:
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix. With
    symmetrize_input (the default, as JAX) the input is (A + A^T) / 2; else the UPLO ('L',
    default, or 'U') triangle is read. Derivatives follow JAX's rule (infinite where two
    eigenvalues coincide)."""
    a = _square("eigh", a)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    if symmetrize_input and a.dtype in (_core.float32, _core.float64):
        a = (a + _mT(a)) * 0.5
    elif UPLO == "U":
        a = _mT(a)  # the kernel reads the lower triangle
    r = _core.linalg_eigh(a)
    return EighResult(r[..., 0, :], r[..., 1:, :])


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """The eigenvalues of each symmetric matrix, ascending."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def det(a):
    """The determinant, sign * exp(log|det|) (from the LU factorization)."""
    s, l = slogdet(a)
    return s * _core.exp(l)


def inv(a):
    """The inverse (solve(a, I)); inf/NaN for a singular matrix."""
    a = _square("inv", a)
    eye = _core.broadcast_to(_core.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _core.linalg_solve(a, eye)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """(c, lower) as scipy.linalg.cho_factor: c holds the factor in the requested triangle
    (the other triangle is zero here, where SciPy leaves it unspecified)."""
    l = cholesky(a)
    return (l if lower else _mT(l)), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """x with A x = b from cho_factor's (c, lower)."""
    c, lower = c_and_lower
    if lower:
        y = _core.linalg_triangular_solve(c, b, True, False, False)
        return _core.linalg_triangular_solve(c, y, True, True, False)
    y = _core.linalg_triangular_solve(c, b, False, True, False)
    return _core.linalg_triangular_solve(c, y, False, False, False)


def matrix_power(a, n: int):
    """a to the integer power n by repeated squaring (n < 0: of the inverse)."""
    import operator

    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {type(n).__name__}") from None
    a = _square("matrix_power", a)
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


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """Vector and matrix norms as numpy.linalg.norm: vector ord None/2, inf, -inf, 0, other
    p; matrix ord None/'fro', 1, -1, inf, -inf (2, -2 and 'nuc' need the SVD, not yet)."""
    x = _arr(x)
    if x.dtype not in (_core.float32, _core.float64):
        x = x.astype(_core.default_dtype())
    if axis is None:
        if ord is None:
            r = _core.sqrt(_core.sum(x * x))
            return _core.reshape(r, (1,) * x.ndim) if keepdims else r
        axis = tuple(range(x.ndim)) if x.ndim <= 2 else None
        if axis is None:
            raise ValueError("norm: an ord needs axis for arrays of more than two dimensions")
    if isinstance(axis, int):
        axis = (axis,)
    axis = tuple(a % x.ndim for a in axis)
    if len(axis) == 1:
        ax = axis[0]
        a = _core.abs(x)
        if ord is None or ord == 2:
            r = _core.sqrt(_core.sum(x * x, axis=ax, keepdims=keepdims))
        elif ord == float("inf"):
            r = _core.max(a, axis=ax, keepdims=keepdims)
        elif ord == -float("inf"):
            r = _core.min(a, axis=ax, keepdims=keepdims)
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
        red = _core.max if ord == 1 else _core.min
        r = red(col, axis=c0, keepdims=True)
    elif ord in (float("inf"), -float("inf")):
        row = _core.sum(_core.abs(x), axis=c0, keepdims=True)
        red = _core.max if ord > 0 else _core.min
        r = red(row, axis=r0, keepdims=True)
    elif ord in (2, -2, "nuc"):
        raise NotImplementedError(f"norm: ord={ord!r} for matrices needs the SVD, which qb.linalg does not have yet")
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if not keepdims:
        r = _core.squeeze(r, axis=axis)
    return r
