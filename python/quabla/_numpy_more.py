"""More of the jax.numpy surface, composed in Python from the core ops (no new IR op): stacking
and splitting helpers, closeness tests, NaN-aware reductions, order statistics, covariance,
small elementwise helpers, grid and index constructors, dtype information. Every function
follows NumPy's (and jax.numpy's) semantics for static arguments, and being made of
differentiable, batchable ops it differentiates, vmaps and jits like them.
"""
from __future__ import annotations

import numbers as _numbers

import math
import operator
from typing import Optional, Sequence

from ._package import qb as _qb
from . import _core
from ._numpy_extra import _is_complex, _no_complex, _real_dtype, _NO_ORDER, _COMPLEX

__all__ = [
    "pi", "e", "inf", "nan", "newaxis", "euler_gamma",
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack", "column_stack",
    "broadcast_arrays", "broadcast_shapes", "array_split", "hsplit", "vsplit", "dsplit", "fliplr", "flipud", "rot90",
    "append", "isclose", "allclose", "array_equal", "array_equiv", "isneginf", "isposinf", "isscalar",
    "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin", "nancumsum",
    "nancumprod", "average", "ptp", "count_nonzero", "quantile", "percentile", "median", "nanquantile",
    "nanpercentile", "nanmedian", "cov", "corrcoef", "digitize", "deg2rad", "rad2deg", "radians", "degrees",
    "trunc", "fix", "rint", "fabs", "fmax", "fmin", "heaviside", "signbit", "copysign", "round", "around", "copy", "sinc", "float_power", "positive",
    "logaddexp2", "real", "imag", "conj", "conjugate", "empty", "empty_like", "logspace", "geomspace", "tri",
    "tril_indices", "triu_indices", "diag_indices", "indices", "diagflat", "ndim", "shape", "size", "vdot",
    "union1d", "intersect1d", "setdiff1d", "setxor1d",
    "select", "unravel_index", "ravel_multi_index", "isin", "convolve", "correlate", "polyfit", "finfo",
    "iinfo", "result_type", "promote_types", "can_cast", "issubdtype", "block_until_ready",
    "device_get", "linearize", "eval_shape", "bincount", "histogram",
]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None
euler_gamma = 0.5772156649015329


def _isint(v) -> bool:
    """A Python int or an integer scalar of NumPy (numbers.Integral: bools too, as isinstance(v, int))."""
    return isinstance(v, _numbers.Integral)


def _arr(x):
    return x if isinstance(x, _qb.Array) else _qb.asarray(x)


_INEXACT = (_core.float32, _core.float64, _core.complex64, _core.complex128)


def _float(x):
    """x as an inexact array: float and complex dtypes kept, integers and bools as float64."""
    x = _arr(x)
    return x if x.dtype in _INEXACT else x.astype(_qb.float64)


def _real(name, x):
    """x as a float array, TypeError for complex input (functions of real numbers only)."""
    _no_complex(name, x)
    return _float(x)


def _common(*xs):
    """The arrays in one dtype (the first complex one when any is complex, with its precision)."""
    arrs = [_arr(x) for x in xs]
    dtype = _qb.result_type(*[a.dtype for a in arrs]) if len(arrs) > 1 else arrs[0].dtype
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrs]


def _int(v, name: str, what: str) -> int:
    if isinstance(v, bool) or not hasattr(v, "__index__") or isinstance(v, _qb.Array):
        raise TypeError(f"{name}: {what} must be an int, got {type(v).__name__}")
    return operator.index(v)


def _norm_axis(axis, ndim: int, name: str) -> int:
    axis = _int(axis, name, "axis")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def _sequence(tup, name: str):
    if isinstance(tup, _qb.Array) or not isinstance(tup, (list, tuple)):
        raise TypeError(f"{name}: expects a sequence (list or tuple) of arrays, got {type(tup).__name__}")
    if not tup:
        raise ValueError(f"{name}: needs at least one array")
    return [_arr(t) for t in tup]


# ---- shapes, stacking and splitting ---------------------------------------------------------

def _atleast(arys, n: int):
    out = []
    for a in arys:
        a = _arr(a)
        if a.ndim < n:
            if n == 3 and a.ndim == 2:
                a = a.reshape(a.shape + (1,))
            elif n == 3 and a.ndim == 1:
                a = a.reshape((1,) + a.shape + (1,))
            else:
                a = a.reshape((1,) * (n - a.ndim) + tuple(a.shape))
        out.append(a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each input with at least one axis (one array alone, else a list)."""
    return _atleast(arys, 1)


def atleast_2d(*arys):
    """Each input with at least two axes (new ones in front)."""
    return _atleast(arys, 2)


def atleast_3d(*arys):
    """Each input with at least three axes (NumPy's layout: (N,) -> (1, N, 1), (M, N) -> (M, N, 1))."""
    return _atleast(arys, 3)


def hstack(tup):
    """Concatenation along axis 1 (axis 0 for 1-D inputs)."""
    arrs = [atleast_1d(a) for a in _sequence(tup, "hstack")]
    return _qb.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1)


def vstack(tup):
    """Concatenation along axis 0 of the inputs made at least 2-D."""
    return _qb.concatenate([atleast_2d(a) for a in _sequence(tup, "vstack")], axis=0)


row_stack = vstack


def dstack(tup):
    """Concatenation along axis 2 of the inputs made at least 3-D."""
    return _qb.concatenate([atleast_3d(a) for a in _sequence(tup, "dstack")], axis=2)


def column_stack(tup):
    """1-D inputs as columns, 2-D ones as they are, concatenated along axis 1."""
    arrs = [a.reshape((-1, 1)) if a.ndim < 2 else a for a in _sequence(tup, "column_stack")]
    return _qb.concatenate(arrs, axis=1)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (ValueError when they do not)."""
    import numpy as np
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) if not _isint(s) else (s,) for s in shapes]))
    except ValueError as err:
        raise ValueError(f"broadcast_shapes: shapes {list(shapes)} do not broadcast together") from err


def broadcast_arrays(*args):
    """The inputs broadcast to their common shape (a list)."""
    arrs = [_arr(a) for a in args]
    shape = broadcast_shapes(*[tuple(a.shape) for a in arrs])
    return [_qb.broadcast_to(a, shape) for a in arrs]


def array_split(x, indices_or_sections, axis: int = 0):
    """Splits x along axis into sections (an int: as equal as possible, the first ones one
    longer) or at the given indices; unlike split, any section count is allowed."""
    x = _arr(x)
    axis = _norm_axis(axis, x.ndim, "array_split")
    n = x.shape[axis]
    if isinstance(indices_or_sections, (list, tuple)):
        cuts = [int(i) for i in indices_or_sections]
    else:
        k = _int(indices_or_sections, "array_split", "indices_or_sections")
        if k <= 0:
            raise ValueError(f"array_split: the number of sections must be positive, got {k}")
        base, extra = divmod(n, k)
        cuts, pos = [], 0
        for i in range(k - 1):
            pos += base + (1 if i < extra else 0)
            cuts.append(pos)
    bounds = [0] + [max(0, min(n, c if c >= 0 else c + n)) for c in cuts] + [n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index = [slice(None)] * x.ndim
        index[axis] = slice(lo, max(lo, hi))
        out.append(x[tuple(index)])
    return out


def _split_along(x, sections, axis, name, min_ndim):
    x = _arr(x)
    if x.ndim < min_ndim:
        raise ValueError(f"{name}: needs an array of at least {min_ndim} dimensions, got {x.ndim}")
    if not isinstance(sections, (list, tuple)):
        k = _int(sections, name, "sections")
        if k <= 0 or x.shape[axis] % k:
            raise ValueError(f"{name}: axis {axis} of length {x.shape[axis]} does not split into {k} equal sections")
    return array_split(x, sections, axis)


def hsplit(x, indices_or_sections):
    """split along axis 1 (axis 0 for 1-D arrays)."""
    x = _arr(x)
    return _split_along(x, indices_or_sections, 0 if x.ndim == 1 else 1, "hsplit", 1)


def vsplit(x, indices_or_sections):
    """split along axis 0 of an array with at least two axes."""
    return _split_along(x, indices_or_sections, 0, "vsplit", 2)


def dsplit(x, indices_or_sections):
    """split along axis 2 of an array with at least three axes."""
    return _split_along(x, indices_or_sections, 2, "dsplit", 3)


def fliplr(x):
    """x reversed along axis 1."""
    x = _arr(x)
    if x.ndim < 2:
        raise ValueError(f"fliplr: needs an array of at least 2 dimensions, got {x.ndim}")
    return _qb.flip(x, 1)


def flipud(x):
    """x reversed along axis 0."""
    x = _arr(x)
    if x.ndim < 1:
        raise ValueError("flipud: needs an array of at least 1 dimension")
    return _qb.flip(x, 0)


def rot90(m, k: int = 1, axes=(0, 1)):
    """m rotated by 90 degrees k times in the plane of axes (from the first toward the second)."""
    m = _arr(m)
    k = _int(k, "rot90", "k") % 4
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must name two axes, got {axes}")
    a0, a1 = (_norm_axis(a, m.ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: the two axes must differ, got {axes}")
    if k == 0:
        return m
    if k == 2:
        return _qb.flip(_qb.flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return _qb.transpose(_qb.flip(m, a1), perm)
    return _qb.flip(_qb.transpose(m, perm), a1)


def append(arr, values, axis: Optional[int] = None):
    """arr with values appended (both flattened when axis is None)."""
    arr, values = _arr(arr), _arr(values)
    if axis is None:
        return _qb.concatenate([arr.reshape(-1), values.reshape(-1)], axis=0)
    return _qb.concatenate([arr, values], axis=axis)


# ---- comparisons ------------------------------------------------------------------------------

def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """|a - b| <= atol + rtol * |b| elementwise; infinities are close only to themselves and
    NaNs to nothing unless equal_nan."""
    a, b = _arr(a), _arr(b)
    if a.dtype in _INEXACT or b.dtype in _INEXACT:
        fa, fb = (x if x.dtype in _INEXACT else x.astype(_qb.float64) for x in (a, b))
        finite = _qb.isfinite(fa) & _qb.isfinite(fb)
        close = _qb.abs(fa - fb) <= atol + rtol * _qb.abs(fb)
        out = _qb.where(finite, close, fa == fb)
        if equal_nan:
            out = out | (_qb.isnan(fa) & _qb.isnan(fb))
        return out
    return _qb.abs(a.astype(_qb.float64) - b.astype(_qb.float64)) <= atol + rtol * _qb.abs(b.astype(_qb.float64))


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Whether every element is isclose (a bool scalar array)."""
    return _qb.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """True when the shapes match and every element is equal (a bool scalar array)."""
    a1, a2 = _arr(a1), _arr(a2)
    if tuple(a1.shape) != tuple(a2.shape):
        return _qb.asarray(False)
    eq = a1 == a2
    if equal_nan and (a1.dtype in _INEXACT or a2.dtype in _INEXACT):
        eq = eq | (_qb.isnan(_float(a1)) & _qb.isnan(_float(a2)))
    return _qb.all(eq)


def array_equiv(a1, a2):
    """True when the arrays broadcast together and every element is equal."""
    a1, a2 = _arr(a1), _arr(a2)
    try:
        broadcast_shapes(tuple(a1.shape), tuple(a2.shape))
    except ValueError:
        return _qb.asarray(False)
    return _qb.all(a1 == a2)


def isneginf(x):
    """x == -inf elementwise."""
    x = _arr(x)
    _no_complex("isneginf", x, hint="an infinite complex number has no sign; test qb.real(x) or qb.imag(x)")
    return _qb.isinf(x) & (x < 0)


def isposinf(x):
    """x == +inf elementwise."""
    x = _arr(x)
    _no_complex("isposinf", x, hint="an infinite complex number has no sign; test qb.real(x) or qb.imag(x)")
    return _qb.isinf(x) & (x > 0)


def isscalar(x) -> bool:
    """True for Python and NumPy scalars and 0-d arrays (as jax.numpy.isscalar)."""
    import numpy as np
    if isinstance(x, _qb.Array):
        return x.ndim == 0
    return bool(np.isscalar(x)) or (hasattr(x, "ndim") and getattr(x, "ndim") == 0)


# ---- NaN-aware reductions -----------------------------------------------------------------------

def _nan_fill(x, value):
    x = _arr(x)
    if x.dtype not in _INEXACT:
        return x
    return _qb.where(_qb.isnan(x), _qb.full_like(x, value), x)


def nansum(x, axis=None, dtype=None, keepdims: bool = False):
    """sum ignoring NaNs (as zeros); dtype casts the input first."""
    return _qb.sum(_nan_fill(x if dtype is None else _arr(x).astype(dtype), 0.0), axis=axis, keepdims=keepdims)


def nanprod(x, axis=None, dtype=None, keepdims: bool = False):
    """prod ignoring NaNs (as ones); dtype casts the input first."""
    return _qb.prod(_nan_fill(x if dtype is None else _arr(x).astype(dtype), 1.0), axis=axis, keepdims=keepdims)


def _all_nan(x, axis, keepdims):
    return _qb.all(_qb.isnan(x), axis=axis, keepdims=keepdims)


def nanmax(x, axis=None, keepdims: bool = False):
    """max ignoring NaNs; NaN where every element of the slice is NaN."""
    _no_complex("nanmax", x, hint=_NO_ORDER)
    x = _arr(x)
    if x.dtype not in (_qb.float32, _qb.float64):
        return _qb.max(x, axis=axis, keepdims=keepdims)
    m = _qb.max(_nan_fill(x, -math.inf), axis=axis, keepdims=keepdims)
    return _qb.where(_all_nan(x, axis, keepdims), _qb.full_like(m, math.nan), m)


def nanmin(x, axis=None, keepdims: bool = False):
    """min ignoring NaNs; NaN where every element of the slice is NaN."""
    _no_complex("nanmin", x, hint=_NO_ORDER)
    x = _arr(x)
    if x.dtype not in (_qb.float32, _qb.float64):
        return _qb.min(x, axis=axis, keepdims=keepdims)
    m = _qb.min(_nan_fill(x, math.inf), axis=axis, keepdims=keepdims)
    return _qb.where(_all_nan(x, axis, keepdims), _qb.full_like(m, math.nan), m)


def _count(x, axis, keepdims):
    x = _float(x)  # (a real count, also for complex x)
    return _qb.sum((~_qb.isnan(x)).astype(_real_dtype(x.dtype)), axis=axis, keepdims=keepdims)


def nanmean(x, axis=None, keepdims: bool = False):
    """mean over the non-NaN elements (NaN for an all-NaN slice)."""
    x = _float(x)
    return nansum(x, axis=axis, keepdims=keepdims) / _count(x, axis, keepdims)


def nanvar(x, axis=None, ddof: int = 0, keepdims: bool = False):
    """var over the non-NaN elements, divided by (count - ddof)."""
    x = _float(x)
    mean = nanmean(x, axis=axis, keepdims=True)
    dev = _nan_fill(x - mean, 0.0)
    sq = dev * dev if x.dtype not in _COMPLEX else _core._real(dev * _core._conj(dev))  # |dev|^2: a real var
    return _qb.sum(sq, axis=axis, keepdims=keepdims) / (_count(x, axis, keepdims) - ddof)


def nanstd(x, axis=None, ddof: int = 0, keepdims: bool = False):
    """std over the non-NaN elements."""
    return _qb.sqrt(nanvar(x, axis=axis, ddof=ddof, keepdims=keepdims))


def nanargmax(x, axis=None, keepdims: bool = False):
    """argmax ignoring NaNs (-1 for an all-NaN slice, as jax.numpy)."""
    _no_complex("nanargmax", x, hint=_NO_ORDER)
    x = _arr(x)
    if x.dtype not in (_qb.float32, _qb.float64):
        return _qb.argmax(x, axis=axis, keepdims=keepdims)
    i = _qb.argmax(_nan_fill(x, -math.inf), axis=axis, keepdims=keepdims)
    return _qb.where(_all_nan(x, axis, keepdims), _qb.full_like(i, -1), i)


def nanargmin(x, axis=None, keepdims: bool = False):
    """argmin ignoring NaNs (-1 for an all-NaN slice, as jax.numpy)."""
    _no_complex("nanargmin", x, hint=_NO_ORDER)
    x = _arr(x)
    if x.dtype not in (_qb.float32, _qb.float64):
        return _qb.argmin(x, axis=axis, keepdims=keepdims)
    i = _qb.argmin(_nan_fill(x, math.inf), axis=axis, keepdims=keepdims)
    return _qb.where(_all_nan(x, axis, keepdims), _qb.full_like(i, -1), i)


def nancumsum(x, axis=None):
    """cumsum with NaNs counted as zeros."""
    return _qb.cumsum(_nan_fill(x, 0.0), axis=axis)


def nancumprod(x, axis=None):
    """cumprod with NaNs counted as ones."""
    from ._numpy_extra import cumprod
    return cumprod(_nan_fill(x, 1.0), axis=axis)


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """The (weighted) mean along axis; with returned=True also the sum of the weights."""
    a = _float(a)
    if weights is None:
        avg = _qb.mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        n = a.size if axis is None else math.prod(a.shape[i] for i in ([axis] if _isint(axis) else axis))
        return avg, _qb.full_like(avg, float(n))
    a, w = _common(a, _float(weights))
    if tuple(w.shape) != tuple(a.shape):
        if axis is None or not _isint(axis) or w.ndim != 1 or w.shape[0] != a.shape[axis]:
            raise ValueError(f"average: weights of shape {tuple(w.shape)} do not match a of shape {tuple(a.shape)} "
                             f"along axis {axis}")
        shape = [1] * a.ndim
        shape[_norm_axis(axis, a.ndim, "average")] = w.shape[0]
        w = _qb.broadcast_to(w.reshape(shape), tuple(a.shape))
    total = _qb.sum(w, axis=axis, keepdims=keepdims)
    avg = _qb.sum(a * w, axis=axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


def ptp(x, axis=None, keepdims: bool = False):
    """max - min along axis."""
    _no_complex("ptp", x, hint=_NO_ORDER)
    return _qb.max(x, axis=axis, keepdims=keepdims) - _qb.min(x, axis=axis, keepdims=keepdims)


def count_nonzero(x, axis=None, keepdims: bool = False):
    """The number of nonzero elements along axis (an integer array)."""
    return _qb.sum(_arr(x) != 0, axis=axis, keepdims=keepdims)


# ---- order statistics -----------------------------------------------------------------------------

_QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile(x, q, axis, keepdims, method, ignore_nan, name):
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"{name}: method={method!r} is not one of {', '.join(map(repr, _QUANTILE_METHODS))}")
    _no_complex(name, x, q, hint=_NO_ORDER)
    x = _float(x)
    q = _arr(q).astype(x.dtype)
    if axis is None:
        x, axis_n = x.reshape(-1), 0
    else:
        axis_n = _norm_axis(axis, x.ndim, name)
    n = x.shape[axis_n]
    if n == 0:
        raise ValueError(f"{name}: the reduced axis is empty")
    xs = _qb.moveaxis(_qb.sort(x, axis=axis_n), axis_n, -1)  # NaNs sort last
    if ignore_nan:
        count = _qb.sum((~_qb.isnan(xs)).astype(x.dtype), axis=-1, keepdims=True)
    else:
        count = _qb.full(tuple(xs.shape[:-1]) + (1,), float(n), dtype=x.dtype)
    qs = q.reshape(-1)
    cols = []
    for k in range(qs.shape[0]):
        pos = qs[k] * (count - 1.0)
        lo = _qb.clip(_qb.floor(pos), 0.0, float(n - 1))
        hi = _qb.clip(lo + 1.0, 0.0, _qb.maximum(count - 1.0, 0.0))
        frac = pos - lo
        vlo = _qb.take_along_axis(xs, lo.astype(_qb.int64), axis=-1)
        vhi = _qb.take_along_axis(xs, hi.astype(_qb.int64), axis=-1)
        if method == "linear":
            v = vlo + frac * (vhi - vlo)
        elif method == "lower":
            v = vlo
        elif method == "higher":
            v = _qb.where(frac > 0, vhi, vlo)
        elif method == "midpoint":
            v = _qb.where(frac > 0, (vlo + vhi) * 0.5, vlo)
        else:  # nearest: the position rounded half to even, as NumPy
            v = _qb.where(_qb.round(pos) > lo, vhi, vlo)
        if ignore_nan:
            v = _qb.where(count > 0, v, _qb.full_like(v, math.nan))
        else:  # a NaN anywhere in the slice makes its quantiles NaN, as NumPy and JAX
            v = _qb.where(_qb.any(_qb.isnan(xs), axis=-1, keepdims=True), _qb.full_like(v, math.nan), v)
        cols.append(v[..., 0])
    out = _qb.stack(cols, axis=0).reshape(tuple(q.shape) + tuple(xs.shape[:-1]))
    if keepdims:
        if axis is None:
            out = out.reshape(tuple(q.shape) + (1,) * x.ndim)
        else:
            out = _qb.expand_dims(out, q.ndim + axis_n)
    return out


def quantile(a, q, axis=None, method: str = "linear", keepdims: bool = False):
    """The q-th quantiles (q in [0, 1], scalar or array: its axes come first) along axis, by
    linear interpolation between order statistics (NumPy's default method)."""
    return _quantile(a, q, axis, keepdims, method, False, "quantile")


def percentile(a, q, axis=None, method: str = "linear", keepdims: bool = False):
    """quantile with q in percent."""
    return _quantile(a, _arr(q) / 100.0, axis, keepdims, method, False, "percentile")


def median(a, axis=None, keepdims: bool = False):
    """The median along axis (the mean of the two middle values for an even count)."""
    return _quantile(a, 0.5, axis, keepdims, "linear", False, "median")


def nanquantile(a, q, axis=None, method: str = "linear", keepdims: bool = False):
    """quantile over the non-NaN elements (NaN for an all-NaN slice)."""
    return _quantile(a, q, axis, keepdims, method, True, "nanquantile")


def nanpercentile(a, q, axis=None, method: str = "linear", keepdims: bool = False):
    """percentile over the non-NaN elements."""
    return _quantile(a, _arr(q) / 100.0, axis, keepdims, method, True, "nanpercentile")


def nanmedian(a, axis=None, keepdims: bool = False):
    """median over the non-NaN elements."""
    return _quantile(a, 0.5, axis, keepdims, "linear", True, "nanmedian")


# ---- covariance -------------------------------------------------------------------------------------

def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: Optional[int] = None, fweights=None,
        aweights=None):
    """The covariance matrix of the variables (rows, or columns with rowvar=False), with
    NumPy's frequency (fweights, integers) and reliability (aweights) weights of the
    observations. Complex variables give NumPy's Hermitian covariance (the second factor
    conjugated)."""
    _no_complex("cov", fweights, aweights, hint="the weights must be real")
    x = atleast_2d(_float(m))
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if y is not None:
        yy = atleast_2d(_float(y))
        if not rowvar and yy.shape[0] != 1:
            yy = yy.T
        x, yy = _common(x, yy)
        x = _qb.concatenate([x, yy], axis=0)
    n = x.shape[1]
    d = (0 if bias else 1) if ddof is None else ddof
    if fweights is None and aweights is None:
        xc = x - _qb.mean(x, axis=1, keepdims=True)
        c = (xc @ _core._conj(xc).T) / float(n - d)
        return c.reshape(()) if c.shape == (1, 1) else c
    w = _qb.ones((n,), dtype=_real_dtype(x.dtype))
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is not None:
            g = _arr(given)
            if g.shape != (n,):
                raise ValueError(f"cov: {name} must be 1-D with one weight per observation ({n}), got {tuple(g.shape)}")
            w = w * g.astype(w.dtype)
    v1 = _qb.sum(w)
    avg = _qb.sum(x * w, axis=1, keepdims=True) / v1
    if d == 0:
        norm = v1
    elif aweights is None:
        norm = v1 - d
    else:
        norm = v1 - d * _qb.sum(w * _arr(aweights).astype(w.dtype)) / v1
    xc = x - avg
    c = ((xc * w) @ _core._conj(xc).T) / norm
    return c.reshape(()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar: bool = True):
    """Pearson correlation coefficients (cov normalised by the standard deviations)."""
    c = cov(x, y, rowvar=rowvar)
    if c.ndim == 0:
        return c / c
    d = _qb.sqrt(_core._real(_qb.diagonal(c)))  # (real: the variances, also for complex variables)
    r = c / d[:, None] / d[None, :]
    if r.dtype in _COMPLEX:  # each part clipped to [-1, 1], as NumPy
        return _core._complex(_qb.clip(_core._real(r), -1.0, 1.0), _qb.clip(_core._imag(r), -1.0, 1.0))
    return _qb.clip(r, -1.0, 1.0)


def digitize(x, bins, right: bool = False):
    """The index of the bin each x falls in, for increasing bins (NumPy's convention)."""
    _no_complex("digitize", x, bins, hint=_NO_ORDER)
    return _qb.searchsorted(_arr(bins), _arr(x), side="left" if right else "right")


# ---- elementwise helpers ----------------------------------------------------------------------------

def deg2rad(x):
    """Degrees to radians."""
    return _float(x) * (math.pi / 180.0)


def rad2deg(x):
    """Radians to degrees."""
    return _float(x) * (180.0 / math.pi)


radians = deg2rad
degrees = rad2deg


def trunc(x):
    """x rounded toward zero."""
    x = _arr(x)
    _no_complex("trunc", x)
    if x.dtype not in (_qb.float32, _qb.float64):
        return x
    return _qb.where(x < 0, _qb.ceil(x), _qb.floor(x))


fix = trunc


def rint(x):
    """x rounded to the nearest integer, halves to even (complex: each part)."""
    return round(_float(x))


def fabs(x):
    """|x| as a float."""
    return _qb.abs(_real("fabs", x))


def fmax(a, b):
    """maximum that ignores a NaN operand (NaN only when both are)."""
    a, b = _arr(a), _arr(b)
    _no_complex("fmax", a, b, hint=_NO_ORDER)
    if a.dtype not in (_qb.float32, _qb.float64) and b.dtype not in (_qb.float32, _qb.float64):
        return _qb.maximum(a, b)
    return _qb.where(_qb.isnan(a), b, _qb.where(_qb.isnan(b), a, _qb.maximum(a, b)))


def fmin(a, b):
    """minimum that ignores a NaN operand (NaN only when both are)."""
    a, b = _arr(a), _arr(b)
    _no_complex("fmin", a, b, hint=_NO_ORDER)
    if a.dtype not in (_qb.float32, _qb.float64) and b.dtype not in (_qb.float32, _qb.float64):
        return _qb.minimum(a, b)
    return _qb.where(_qb.isnan(a), b, _qb.where(_qb.isnan(b), a, _qb.minimum(a, b)))


def round(x, decimals: int = 0):  # noqa: A001 (jax.numpy's name)
    """x rounded to `decimals` decimals, halves to even (as NumPy: by scaling with 10**decimals,
    so a decimal that binary cannot hold exactly rounds as NumPy's does); integers are
    returned as they are for decimals >= 0; complex numbers have each part rounded."""
    import operator
    decimals = operator.index(decimals)
    x = _arr(x)
    if x.dtype in _COMPLEX:
        return _core._complex(round(_core._real(x), decimals), round(_core._imag(x), decimals))
    if x.dtype in (_qb.float32, _qb.float64):
        if decimals == 0:
            return _qb._core.round(x)
        scale = 10.0 ** decimals
        return _qb._core.round(x * scale) / scale
    if x.dtype == _qb.bool_:
        return _qb._core.round(x)  # the core's TypeError: round of bools is not defined
    if decimals >= 0:
        return x
    scale = 10 ** (-decimals)
    return (_qb._core.round(x.astype(_qb.float64) / scale) * scale).astype(x.dtype)


around = round


def copy(a, order=None):
    """a as an array: arrays are immutable, so no copy is needed (jax.numpy.copy)."""
    return _arr(a)


def signbit(x):
    """Whether x is negative, -0.0 included (a NaN counts as positive: without a bit cast
    its sign bit is not visible)."""
    x = _arr(x)
    _no_complex("signbit", x, hint="a complex number has no sign bit; test qb.real(x) or qb.imag(x)")
    if x.dtype == _qb.bool_:
        return _qb.zeros_like(x, dtype=_qb.bool_)
    if x.dtype not in (_qb.float32, _qb.float64):
        return x < 0
    zero = x == 0
    return (x < 0) | (zero & (_qb.where(zero, _qb.ones_like(x), _qb.zeros_like(x)) / x < 0))


def copysign(x1, x2):
    """|x1| with the sign of x2 (as a float; -0.0 counts as negative, as in NumPy)."""
    _no_complex("copysign", x1, x2)
    x1, x2 = _float(x1), _arr(x2)
    return _qb.where(signbit(x2), -_qb.abs(x1), _qb.abs(x1))


def heaviside(x1, x2):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN stays NaN)."""
    _no_complex("heaviside", x1, x2, hint=_NO_ORDER)
    x1 = _float(x1)
    x2 = _arr(x2).astype(x1.dtype)
    zero, one = _qb.zeros_like(x1), _qb.ones_like(x1)
    out = _qb.where(x1 < 0, zero, _qb.where(x1 > 0, one, _qb.broadcast_to(x2, tuple(x1.shape))))
    return _qb.where(_qb.isnan(x1), x1, out)


def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (its derivatives there too: the division is never 0 / 0);
    complex x too."""
    x = _float(x)
    at_zero = x == 0
    safe = _qb.where(at_zero, _qb.ones_like(x), x) * math.pi
    return _qb.where(at_zero, _qb.ones_like(x), _qb.sin(safe) / safe)


def float_power(x, y):
    """x ** y in float64 (complex128 when either is complex, as NumPy)."""
    x, y = _arr(x), _arr(y)
    dtype = _qb.complex128 if _is_complex(x) or _is_complex(y) else _qb.float64
    return _qb.power(x.astype(dtype), y.astype(dtype))


def positive(x):
    """+x."""
    return _arr(x) * 1


def logaddexp2(a, b):
    """log2(2**a + 2**b) without overflow."""
    _no_complex("logaddexp2", a, b)
    a, b = _float(a), _float(b)
    ln2 = math.log(2.0)
    return _qb.logaddexp(a * ln2, b * ln2) / ln2


def real(x):
    """The real part (a real array itself)."""
    return _core._real(x)


def imag(x):
    """The imaginary part (zeros for a real array)."""
    return _core._imag(x)


def conj(x):
    """The complex conjugate (a real array itself)."""
    return _core._conj(x)


conjugate = conj


# ---- constructors and indices ------------------------------------------------------------------------

def empty(shape, dtype=None):
    """An array of shape (zeros: arrays are immutable, so there is nothing to leave uninitialised)."""
    return _qb.zeros(shape, dtype=dtype)


def empty_like(x, dtype=None, shape=None):
    """zeros with x's shape and dtype (or the given ones)."""
    x = _arr(x)
    return _qb.zeros(tuple(x.shape) if shape is None else shape, dtype=x.dtype if dtype is None else dtype)


def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype=None):
    """base ** linspace(start, stop, num)."""
    exponents = _qb.linspace(start, stop, num, endpoint=endpoint)
    if not isinstance(base, (int, float, complex)):
        base = _float(base)
        if base.dtype in _COMPLEX or exponents.dtype in _COMPLEX:  # complex: the wider of the two
            exponents, base = _common(exponents, base)
        else:
            base = base.astype(exponents.dtype)
    out = _qb.power(base, exponents)
    return out if dtype is None else out.astype(dtype)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None):
    """num numbers spaced evenly on a log scale from start to stop (same sign, nonzero; for
    complex ends, NumPy's path: the principal logarithm of stop / start's phase)."""
    if _is_complex(start) or _is_complex(stop):
        if isinstance(start, (int, float, complex)) and isinstance(stop, (int, float, complex)) and \
                (start == 0 or stop == 0):
            raise ValueError(f"geomspace: start and stop must be nonzero, got {start} and {stop}")
        start_a, stop_a = _common(_float(start), _float(stop))
        if start_a.dtype not in _COMPLEX:
            start_a, stop_a = (v.astype(_qb.complex128) for v in (start_a, stop_a))
        # As NumPy: rotated so that start is real and positive (by its phase, start / |start|),
        # along the principal logarithm from there, and rotated back.
        phase = _qb.sign(start_a)
        out = phase * _qb.exp(_qb.linspace(_qb.log(_qb.abs(start_a).astype(start_a.dtype)),
                                           _qb.log(stop_a / phase), num, endpoint=endpoint))
        if num > 0:
            out = out.at[0].set(start_a)
            if endpoint and num > 1:
                out = out.at[num - 1].set(stop_a)
        return out if dtype is None else out.astype(dtype)
    if isinstance(start, (int, float)) and isinstance(stop, (int, float)):
        if start == 0 or stop == 0 or (start < 0) != (stop < 0):
            raise ValueError(f"geomspace: start and stop must be nonzero and of one sign, got {start} and {stop}")
    start_a, stop_a = _float(start), _float(stop)
    sign = _qb.sign(start_a)
    out = sign * _qb.exp(_qb.linspace(_qb.log(_qb.abs(start_a)), _qb.log(_qb.abs(stop_a)), num,
                                          endpoint=endpoint))
    if num > 0:  # the ends exactly, as NumPy gives them
        out = out.at[0].set(start_a)
        if endpoint and num > 1:
            out = out.at[num - 1].set(stop_a)
    return out if dtype is None else out.astype(dtype)


def tri(N: int, M: Optional[int] = None, k: int = 0, dtype=None):
    """Ones at and below the k-th diagonal of an N x M matrix."""
    M = N if M is None else M
    return _qb.tril(_qb.ones((N, M), dtype=dtype or _qb.float64), k)


def _default_int():
    """The default integer dtype (int32 with x64 off, as JAX's index results)."""
    return _qb.asarray(0).dtype


def _index_arrays(pair):
    return tuple(_qb.asarray(p.astype("int64"), dtype=_default_int()) for p in pair)


def tril_indices(n: int, k: int = 0, m: Optional[int] = None):
    """The (row, column) indices of the lower triangle of an n x m matrix."""
    import numpy as np
    return _index_arrays(np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: Optional[int] = None):
    """The (row, column) indices of the upper triangle of an n x m matrix."""
    import numpy as np
    return _index_arrays(np.triu_indices(n, k, m))


def diag_indices(n: int, ndim: int = 2):
    """The indices of the main diagonal of an n x ... x n array (ndim index arrays)."""
    import numpy as np
    return _index_arrays(np.diag_indices(n, ndim))


def indices(dimensions: Sequence[int], dtype=None, sparse: bool = False):
    """An array (or, with sparse=True, a tuple) of grid indices (NumPy's indices)."""
    import numpy as np
    grids = np.indices(tuple(dimensions), sparse=sparse)
    dtype = _default_int() if dtype is None else dtype
    if sparse:
        return tuple(_qb.asarray(g.astype("int64"), dtype=dtype) for g in grids)
    return _qb.asarray(grids.astype("int64"), dtype=dtype)


def diagflat(v, k: int = 0):
    """A 2-D array with the flattened v on its k-th diagonal."""
    return _qb.diag(_arr(v).reshape(-1), k)


def ndim(x) -> int:
    """The number of axes."""
    return _arr(x).ndim


def shape(x) -> tuple:
    """The shape."""
    return tuple(_arr(x).shape)


def size(x, axis: Optional[int] = None) -> int:
    """The number of elements (along axis when given)."""
    x = _arr(x)
    return x.size if axis is None else x.shape[_norm_axis(axis, x.ndim, "size")]


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of the flattened arrays. ``precision`` is accepted and a no-op (full
    precision on the CPU); ``preferred_element_type`` casts the result."""
    if precision is not None:
        from .lax import _check_precision
        _check_precision(precision, "vdot")
    if preferred_element_type is not None:
        return vdot(a, b).astype(preferred_element_type)
    # NumPy's vdot conjugates its first argument (a no-op for real a).
    return _qb.sum(_core._conj(_arr(a)).reshape(-1) * _arr(b).reshape(-1))


def select(condlist, choicelist, default=0):
    """choicelist[i] where condlist[i] holds, the first one that does, else default."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist has {len(condlist)} entries and choicelist {len(choicelist)}")
    if not condlist:
        raise ValueError("select: condlist is empty")
    choices = [_arr(c) for c in choicelist]
    out = _arr(default)
    for cond, choice in reversed(list(zip(condlist, choices))):
        out = _qb.where(_arr(cond), choice, out)
    return out


def unravel_index(indices, shape):
    """Flat indices into arrays of shape as a tuple of coordinate arrays. Out-of-range
    indices as jax.numpy's: a negative one counts from the end once, then every index is
    clipped into [0, size)."""
    idx = _arr(indices)
    size = 1
    for d in tuple(shape):
        size *= int(d)
    if size > 0:
        idx = _qb.clip(_qb.where(idx < 0, idx + size, idx), 0, size - 1)
    out = []
    for d in reversed(tuple(shape)):
        out.append(idx % d)
        idx = idx // d
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C"):
    """Coordinate arrays into flat indices of an array of shape dims ('clip' and 'wrap'
    bound them; 'raise' checks concrete indices)."""
    if order != "C":
        raise NotImplementedError("ravel_multi_index: only order='C' is available")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for {len(dims)} dimensions")
    out = None
    stride = 1
    for idx, d in reversed(list(zip(multi_index, dims))):
        idx = _arr(idx)
        if mode == "clip":
            idx = _qb.clip(idx, 0, d - 1)
        elif mode == "wrap":
            idx = idx % d
        elif mode == "raise":
            if not idx._is_tracer:
                import numpy as np
                v = np.asarray(idx)
                if v.size and (v.min() < 0 or v.max() >= d):
                    raise ValueError(f"ravel_multi_index: an index is out of bounds for a dimension of size {d}")
        else:
            raise ValueError(f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
        term = idx * stride
        out = term if out is None else out + term
        stride *= d
    return out


def isin(element, test_elements, invert: bool = False):
    """Whether each element occurs in test_elements."""
    el = _arr(element)
    test = _arr(test_elements).reshape(-1)
    hit = _qb.any(el[..., None] == test, axis=-1)
    return ~hit if invert else hit


def _set_operation(name, values, keep, size, fill_value, numpy_fn, numpy_args):
    """The sorted distinct entries of the 1-D `values` where `keep` (a function of the value
    only) holds: eagerly NumPy's result when size is None; otherwise the first `size` of
    them, padded with fill_value (default: the smallest kept value, as jax.numpy)."""
    if size is None:
        if values._is_tracer:
            raise ValueError(f"{name}: size= is required under jit (the number of results must be static, as JAX); "
                             f"pass the number to keep (extra slots take fill_value)")
        import numpy as np
        return _qb.asarray(numpy_fn(*[np.asarray(a) for a in numpy_args]))
    _no_complex(name, values, hint="with size= (under jit) the sorted values need an order, which complex numbers "
                "lack; call it eagerly without size=")
    size = _qb._indexing._check_size(size, name)
    n = values.shape[0]
    if n == 0:
        fill = 0 if fill_value is None else fill_value
        return _qb.full((size,), fill, dtype=values.dtype)
    perm = _qb._core._argsort(values, False)
    s = _qb.take(values, perm, mode="clip")
    k = _qb.take(keep, perm, mode="clip")
    new = _qb.concatenate([_qb.full((1,), True), s[1:] != s[:-1]]) if n > 1 else _qb.full((1,), True)
    if values.dtype in (_qb.float32, _qb.float64) and n > 1:  # NaNs are one value (equal_nan, as jnp.unique)
        new = _qb.concatenate([_qb.full((1,), True), (s[1:] != s[:-1]) & ~(_qb.isnan(s[1:]) & _qb.isnan(s[:-1]))])
    first = new & k
    group = _qb.cumsum(first.astype(_qb.int64)) - 1
    slot = _qb.where(first & (group < size), group, size)
    if fill_value is None:
        big = _qb.full_like(s, _qb.finfo(s.dtype).max if s.dtype in (_qb.float32, _qb.float64)
                            else _qb.iinfo(s.dtype).max)
        fill = _qb.min(_qb.where(k, s, big))
    else:
        fill = _qb.asarray(fill_value).astype(values.dtype)
    return _qb._core._scatter(_qb.broadcast_to(fill.astype(values.dtype), (size,)), slot, s, 0, 1, True)


def _flat_pair(ar1, ar2):
    a, b = _arr(ar1).reshape(-1), _arr(ar2).reshape(-1)
    dtype = _qb.result_type(a.dtype, b.dtype)
    return a.astype(dtype), b.astype(dtype)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted distinct values of ar1 and ar2 (size= under jit; see jax.numpy.union1d)."""
    import numpy as np
    a, b = _flat_pair(ar1, ar2)
    both = _qb.concatenate([a, b])
    return _set_operation("union1d", both, _qb.full(both.shape, True), size, fill_value, np.union1d, (a, b))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted distinct values in both ar1 and ar2 (size= under jit)."""
    import numpy as np
    if return_indices:
        raise NotImplementedError("intersect1d: return_indices=True is not available; use qb.searchsorted on the result")
    a, b = _flat_pair(ar1, ar2)
    return _set_operation("intersect1d", a, isin(a, b), size, fill_value, np.intersect1d, (a, b))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted distinct values of ar1 that are not in ar2 (size= under jit)."""
    import numpy as np
    a, b = _flat_pair(ar1, ar2)
    return _set_operation("setdiff1d", a, isin(a, b, invert=True), size, fill_value, np.setdiff1d, (a, b))


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted distinct values in exactly one of ar1 and ar2 (size= under jit)."""
    import numpy as np
    a, b = _flat_pair(ar1, ar2)
    both = _qb.concatenate([a, b])
    keep = _qb.concatenate([isin(a, b, invert=True), isin(b, a, invert=True)])
    return _set_operation("setxor1d", both, keep, size, fill_value, np.setxor1d, (a, b))


def _full_convolution(a, v):
    n, m = a.shape[0], v.shape[0]
    padded = _qb.pad(a, (m - 1, m - 1))
    # Row k of the window matrix: padded[k : k + m]; the full convolution is windows @ v[::-1].
    idx = _qb.arange(n + m - 1)[:, None] + _qb.arange(m)[None, :]
    return _qb.take(padded, idx.reshape(-1)).reshape((n + m - 1, m)) @ _qb.flip(v, 0)


def convolve(a, v, mode: str = "full"):
    """The discrete linear convolution of two 1-D arrays ('full', 'same' or 'valid'; real or
    complex)."""
    a, v = _common(_float(a), _float(v))
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"convolve: needs 1-D arrays, got shapes {tuple(a.shape)} and {tuple(v.shape)}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError("convolve: the inputs must not be empty")
    if a.shape[0] < v.shape[0]:
        a, v = v, a
    full = _full_convolution(a, v.astype(a.dtype))
    n, m = a.shape[0], v.shape[0]
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return full[start:start + n]
    if mode == "valid":
        return full[m - 1:n]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")


def correlate(a, v, mode: str = "valid"):
    """The cross-correlation of two 1-D arrays: c[k] = sum_n a[n + k] conj(v[n]) (NumPy's
    definition, complex v conjugated)."""
    a, v = _common(_float(a), _float(v))
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"correlate: needs 1-D arrays, got shapes {tuple(a.shape)} and {tuple(v.shape)}")
    if a.shape[0] < v.shape[0]:
        # correlate(a, v) is the reverse of conj(correlate(v, a))
        return _qb.flip(_core._conj(correlate(v, a, mode)), 0)
    return convolve(a, _qb.flip(_core._conj(v), 0), mode)


def polyfit(x, y, deg: int):
    """Least-squares polynomial coefficients, highest power first (NumPy's polyfit)."""
    from ._numpy_extra import vander
    from .linalg import lstsq
    deg = _int(deg, "polyfit", "deg")
    if deg < 0:
        raise ValueError(f"polyfit: deg must be >= 0, got {deg}")
    _no_complex("polyfit", x, y, hint="fit the real and imaginary parts of y (qb.real(y), qb.imag(y)) separately")
    x, y = _float(x), _float(y)
    a = vander(x, deg + 1)
    scale = _qb.sqrt(_qb.sum(a * a, axis=0))  # column scaling, as NumPy does
    coef = lstsq(a / scale, y)[0]
    return (coef.T / scale).T if coef.ndim > 1 else coef / scale


# ---- dtypes -------------------------------------------------------------------------------------------

def _np_dtype(d):
    import numpy as np
    if isinstance(d, _qb.Array):
        d = d.dtype
    name = getattr(d, "name", None)
    if name is not None and not isinstance(d, np.dtype):
        return np.dtype("bool" if name == "bool" else name)
    return np.dtype(d)


def finfo(dtype):
    """Machine limits of a float dtype (numpy.finfo of it: eps, tiny, max, ...)."""
    import numpy as np
    return np.finfo(_np_dtype(dtype))


def iinfo(dtype):
    """Machine limits of an integer dtype (numpy.iinfo of it)."""
    import numpy as np
    return np.iinfo(_np_dtype(dtype))


def _lattice_join(x, y):
    """JAX's answer where Quabla's arithmetic refuses to mix precisions (float32 with float64,
    complex64 with float64, ...): the wider precision, complex if either is."""
    dx, dy = _qb.asarray(x).dtype, _qb.asarray(y).dtype
    wide = any(d in (_qb.float64, _qb.complex128) for d in (dx, dy))
    cplx = any(d in (_qb.complex64, _qb.complex128) for d in (dx, dy))
    d = (_qb.complex128 if wide else _qb.complex64) if cplx else (_qb.float64 if wide else _qb.float32)
    return _qb.zeros((), dtype=d)


def result_type(*args, _lattice: bool = False):
    """The dtype arithmetic on args gives under Quabla's promotion rules (JAX's, except that
    mixing float32 and float64 arrays raises, as the arithmetic does)."""
    if not args:
        raise ValueError("result_type: needs at least one argument")
    samples = []
    for a in args:
        if isinstance(a, _qb.Array):  # its dtype only: shapes need not broadcast, nothing is computed
            samples.append(_qb.zeros((), dtype=a.dtype))
        elif isinstance(a, (int, float, bool, complex)):
            samples.append(a)
        else:
            samples.append(_qb.zeros((), dtype=a))
    def is_bool(v):
        return isinstance(v, bool) or (isinstance(v, _qb.Array) and v.dtype == _qb.bool_)

    acc = samples[0]
    for s in samples[1:]:
        if is_bool(acc) and is_bool(s):
            acc = _qb.asarray(acc) | _qb.asarray(s)
            continue
        try:
            acc = _qb.add(acc, s)
        except ValueError:
            if not _lattice:
                raise
            acc = _lattice_join(acc, s)
    return _qb.asarray(acc).dtype


def promote_types(a, b):
    """The dtype two dtypes promote to, JAX's lattice: float32 with float64 is float64 (a
    query, so code that promotes explicitly, astype(promote_types(...)), works), although
    arithmetic mixing them raises."""
    return result_type(_qb.zeros((), dtype=a), _qb.zeros((), dtype=b), _lattice=True)


def can_cast(from_, to, casting: str = "safe") -> bool:
    """numpy.can_cast on the NumPy equivalents of the dtypes."""
    import numpy as np
    return bool(np.can_cast(_np_dtype(from_), _np_dtype(to), casting=casting))


def issubdtype(arg1, arg2) -> bool:
    """numpy.issubdtype, accepting Quabla's dtypes (qb.issubdtype(x.dtype, qb.floating)), and
    key dtypes: issubdtype(key.dtype, qb.dtypes.prng_key) (jax.dtypes.prng_key) holds."""
    from .random import KeyDType
    from .dtypes import prng_key
    if isinstance(arg1, KeyDType) or arg1 is prng_key:
        return arg2 is prng_key or isinstance(arg2, KeyDType)
    if arg2 is prng_key or isinstance(arg2, KeyDType):
        return False
    import numpy as np
    a = _np_dtype(arg1) if not (isinstance(arg1, type) and issubclass(arg1, np.generic)) else arg1
    b = _np_dtype(arg2) if not (isinstance(arg2, type) and issubclass(arg2, np.generic)) else arg2
    return bool(np.issubdtype(a, b))


# Not in __all__: provided by __getattr__ below, so a star import would not import NumPy.
_ABSTRACT = ("number", "inexact", "floating", "integer", "signedinteger", "unsignedinteger", "complexfloating",
             "generic")


def __getattr__(name):
    # NumPy's abstract scalar types, imported on first use (import quabla needs no NumPy; the
    # import system's own lookups, such as __path__, must not import it either).
    if name not in _ABSTRACT:
        raise AttributeError(name)
    import numpy as np
    return getattr(np, name)


# ---- JAX's top-level helpers ----------------------------------------------------------------------------

def block_until_ready(x):
    """x itself: Quabla's CPU programs finish before they return (device arrays too)."""
    return x


def device_get(x):
    """A pytree's arrays as NumPy arrays (device arrays copied to the host)."""
    import numpy as np
    from . import tree as _tree

    def get(leaf):
        if isinstance(leaf, _qb.DeviceArray):
            return np.asarray(leaf.to_host())
        return np.asarray(leaf) if isinstance(leaf, _qb.Array) else leaf
    return _tree.map(get, x)


def linearize(fun, *primals):
    """(fun(*primals), f_jvp) with f_jvp(*tangents) the JVP at primals (as jax.linearize;
    each f_jvp call runs the forward-mode program at the fixed primals)."""
    from ._ad import jvp
    out = fun(*primals)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: f_jvp takes {len(primals)} tangents (one per primal), got {len(tangents)}")
        return jvp(fun, primals, tangents)[1]
    return out, f_jvp


def eval_shape(fun, *args, **kwargs):
    """The shapes and dtypes fun(*args, **kwargs) would return (a pytree of qb.ShapeDtype),
    traced without computing anything; array leaves may be qb.ShapeDtype (or anything with
    .shape and .dtype), other leaves are passed as they are."""
    from . import tree as _tree
    from ._jit import ShapeDtype
    leaves, treedef = _tree.flatten((args, kwargs))
    trace = _qb._core.Trace()
    try:
        params = []
        for leaf in leaves:
            if isinstance(leaf, (int, float, bool)) or not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
                params.append(leaf)
            else:
                params.append(trace.parameter(tuple(leaf.shape), _qb.asarray(_qb.zeros((), dtype=leaf.dtype)).dtype))
        a, k = _tree.unflatten(treedef, params)
        out = fun(*a, **k)
        return _tree.map(lambda o: ShapeDtype(tuple(o.shape), o.dtype) if isinstance(o, _qb.Array) else o, out)
    finally:
        trace.close()


def bincount(x, weights=None, minlength: int = 0, *, length: Optional[int] = None):
    """The number of occurrences (or the summed weights) of each value 0, 1, ... in the
    non-negative integers x. Under jit give length (the output size; values past it and
    negative ones are dropped); eagerly it defaults to max(x) + 1 (at least minlength)."""
    x = _arr(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"bincount: x must hold integers, got {x.dtype.name}")
    if length is None:
        if x._is_tracer:
            raise ValueError("bincount: inside jit or a transform the output size must be static; pass length=")
        import numpy as np
        v = np.asarray(x)
        if v.size and v.min() < 0:
            raise ValueError("bincount: x must be non-negative")
        length = max(int(minlength), int(v.max()) + 1 if v.size else 0)
    length = _int(length, "bincount", "length")
    flat = x.reshape(-1)
    w = _qb.ones(tuple(flat.shape), dtype=_default_int()) if weights is None else _arr(weights).reshape(-1)
    keep = (flat >= 0) & (flat < length)
    w = _qb.where(keep, w, _qb.zeros_like(w))
    idx = _qb.where(keep, flat, _qb.zeros_like(flat))
    return _qb.zeros((length,), dtype=w.dtype).at[idx].add(w)


def histogram(a, bins=10, range=None, weights=None, density: bool = False):  # noqa: A002 (NumPy's name)
    """(counts, bin_edges): bins equal-width bins over range (default: a's min and max) or the
    given increasing edges; the last bin includes its right edge, values outside are left out."""
    _no_complex("histogram", a, bins, range, weights, hint=_NO_ORDER)
    a = _float(a).reshape(-1)
    if _isint(bins) and not isinstance(bins, bool):
        if bins <= 0:
            raise ValueError(f"histogram: bins must be positive, got {bins}")
        if range is None:
            lo, hi = _qb.min(a), _qb.max(a)
        else:
            try:
                r0, r1 = (float(v) for v in range)
            except (TypeError, ValueError):
                raise TypeError(f"histogram: range must be a (min, max) pair of numbers, got {range!r}") from None
            if not (math.isfinite(r0) and math.isfinite(r1)):
                raise ValueError(f"histogram: range must be finite, got {range!r}")
            if r0 > r1:
                raise ValueError(f"histogram: range must be (min, max) with min <= max, got {range!r}")
            lo, hi = _qb.asarray(r0), _qb.asarray(r1)
        same = hi == lo  # NumPy widens an empty range by 0.5 each side
        hi = _qb.where(same, hi + 0.5, hi)
        lo = _qb.where(same, lo - 0.5, lo)
        edges = _qb.linspace(lo, hi, bins + 1)
    else:
        edges = _float(bins)
        if edges.ndim != 1:
            raise ValueError(f"histogram: bins must be an int or a 1-D array of edges, got shape {tuple(edges.shape)}")
        bins = edges.shape[0] - 1
        if bins < 1:
            raise ValueError("histogram: bins as edges needs at least two of them")
        if not edges._is_tracer and bool(_qb.any(edges[1:] < edges[:-1])):
            raise ValueError("histogram: bins must increase monotonically")
    idx = _qb.searchsorted(edges, a, side="right") - 1
    idx = _qb.where(a == edges[-1], _qb.full_like(idx, bins - 1), idx)  # the last edge belongs to the last bin
    inside = (a >= edges[0]) & (a <= edges[-1])
    w = _qb.ones_like(a) if weights is None else _float(weights).reshape(-1)
    w = _qb.where(inside, w, _qb.zeros_like(w))
    idx = _qb.where(inside, idx, _qb.zeros_like(idx))
    counts = _qb.zeros((bins,), dtype=w.dtype).at[idx].add(w)
    if density:
        counts = counts / (_qb.sum(counts) * (edges[1:] - edges[:-1]))
    return counts, edges
