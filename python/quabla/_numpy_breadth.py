"""Still more of the jax.numpy and jax surface, composed in Python from existing Quabla
functions (no new IR op): selection (choose, compress, extract, place, put,
put_along_axis), index helpers (diag/tril/triu_indices_from, mask_indices, s_, index_exp),
fromfunction, histograms in several dimensions, window functions, polynomial arithmetic,
resize/rollaxis/trim_zeros/unwrap, the Array API's unique_* functions, printing and
construction from buffers and strings, and dtype aliases. (JAX's top-level helpers are in
_jax_api.py.)

Each function follows jax.numpy (JAX 0.10) for values, dtypes and errors; where jax.numpy
needs ``size=`` for a data-dependent output size under jit, so do these. Being made of
differentiable ops, the numeric ones differentiate, vmap and jit like the rest.
"""
from __future__ import annotations

import builtins
import collections
import math

from . import _core
from ._package import qb as _qb
from ._numpy_extra import _cast, _no_complex, _NO_ORDER

__all__ = [
    "angle", "choose", "compress", "extract", "place", "put", "put_along_axis", "diag_indices_from",
    "tril_indices_from", "triu_indices_from", "fromfunction", "histogram_bin_edges", "histogram2d", "histogramdd",
    "bartlett", "blackman", "hamming", "hanning", "kaiser", "poly", "roots", "sort_complex", "polyadd", "polysub", "polymul", "polyder",
    "polyint", "polydiv", "resize", "rollaxis", "trim_zeros", "unwrap", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "matrix_transpose", "mask_indices", "s_", "index_exp", "iterable",
    "iscomplex", "isreal", "iscomplexobj", "isrealobj", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift", "printoptions", "get_printoptions", "set_printoptions", "array_repr", "array_str",
    "frombuffer", "fromiter", "fromstring", "einsum_path", "float_", "double", "single", "int_",
]

_FLOATS = (_core.float32, _core.float64)
_COMPLEX = (_core.complex64, _core.complex128)
_range = builtins.range  # (histogram functions take an argument named range, as NumPy)
_INTS = (_core.int32, _core.int64)


# ---- helpers -----------------------------------------------------------------------------------

def _arr(x):
    return x if isinstance(x, _core.Array) else _qb.asarray(x)


def _inexact(x):
    """x as an array of an inexact dtype: float32/float64 and complex kept, anything else the
    default float (jax.numpy's promote_dtypes_inexact)."""
    x = _arr(x)
    return x if x.dtype in _FLOATS or x.dtype in _COMPLEX else x.astype(_qb.default_dtype())


def _common_inexact(*xs):
    arrs = [_inexact(x) for x in xs]
    dtype = _qb.result_type(*[a.dtype for a in arrs]) if len(arrs) > 1 else arrs[0].dtype
    return [a.astype(dtype) for a in arrs]


def _default_int():
    return _qb.asarray(0).dtype


from ._numpy_more import _int as _static_int, _norm_axis as _axis  # noqa: E402  (the same checks)


def _int_indices(x, name: str, what: str = "indices"):
    x = _arr(x)
    if x.dtype not in _INTS:
        raise TypeError(f"{name}: {what} must be integers, got {x.dtype.name}; convert with .astype(qb.int32)")
    return x


def _concrete(x, name: str, why: str):
    """The NumPy value of a concrete array; TracerError (a TypeError) for a traced one."""
    if isinstance(x, _core.Array) and x._is_tracer:
        raise _qb.TracerError(f"{name}: {why}, so it needs a concrete array; call it outside jit and other "
                              f"transforms (as jax.numpy.{name} does)")
    import numpy as np
    return np.asarray(x)


def _dtype(d):
    """A dtype argument as Quabla's DType; Python's float/int/bool mean the defaults (as JAX)."""
    if d is float:
        return _qb.default_dtype()
    if d is int:
        return _default_int()
    if d is bool:
        return _core.bool_
    if isinstance(d, _core.DType):
        return d
    return _qb.asarray(_qb.zeros((), dtype=d)).dtype


def _np_dtype(d):
    import numpy as np
    if isinstance(d, _core.DType):
        return np.dtype("bool" if d.name == "bool" else d.name)
    if d is float:
        return np.dtype(_qb.default_dtype().name)
    if d is int:
        return np.dtype(_default_int().name)
    return np.dtype(d)


def _tile_to(v, n: int):
    """v (1-D, non-empty) repeated cyclically to length n (NumPy's rule for put and place)."""
    reps = -(-n // v.shape[0])
    return (_qb.tile(v, reps) if reps > 1 else v)[:n]


def _immutable(name: str, inplace: bool):
    if inplace:
        raise ValueError(f"{name}: Quabla arrays are immutable, so {name} cannot modify its argument in place "
                         f"(as jax.numpy.{name}); pass inplace=False and use the returned array")


# ---- elementwise ----------------------------------------------------------------------------------

def angle(z, deg: bool = False):
    """The argument of z, atan2(imag, real) (for real input pi where z < 0 or z is -0.0, 0
    elsewhere, NaN for NaN, as jax.numpy.angle); in degrees when deg. Integer input gives
    the default float dtype."""
    if isinstance(z, complex) or (isinstance(z, _core.Array) and z.dtype in _COMPLEX):
        z = _qb.asarray(z)
        out = _qb.arctan2(_core._imag(z), _core._real(z))
    else:
        x = _inexact(z)
        out = _qb.arctan2(_qb.zeros_like(x), x)
    return out * (180.0 / math.pi) if deg else out


def iscomplex(x):
    """Elementwise: whether the value has a nonzero imaginary part (all False for a real
    array; NumPy complex input is answered by NumPy)."""
    if not isinstance(x, _core.Array) and iscomplexobj(x):
        import numpy as np
        return _qb.asarray(np.iscomplex(x))
    if isinstance(x, _core.Array) and x.dtype in _COMPLEX:
        return _core._imag(x) != 0
    return _qb.zeros(tuple(_arr(x).shape), dtype=_core.bool_)


def isreal(x):
    """Elementwise: whether the imaginary part is zero (all True for a real array)."""
    if not isinstance(x, _core.Array) and iscomplexobj(x):
        import numpy as np
        return _qb.asarray(np.isreal(x))
    if isinstance(x, _core.Array) and x.dtype in _COMPLEX:
        return _core._imag(x) == 0
    return _qb.ones(tuple(_arr(x).shape), dtype=_core.bool_)


def iscomplexobj(x) -> bool:
    """Whether x has a complex type (a complex64/complex128 array, a Python complex number, a
    NumPy complex array or type)."""
    if isinstance(x, _core.Array):
        return x.dtype in _COMPLEX
    if isinstance(x, complex):
        return True
    import numpy as np
    if isinstance(x, type):  # a scalar type such as numpy.complex64
        dtype = x
    elif hasattr(x, "dtype"):
        dtype = x.dtype
    else:
        try:
            dtype = np.asarray(x).dtype
        except (TypeError, ValueError):
            return False
    try:
        return np.dtype(dtype).kind == "c"
    except TypeError:
        return False


def isrealobj(x) -> bool:
    """not iscomplexobj(x)."""
    return not iscomplexobj(x)


bitwise_invert = _core.bitwise_not  # the Array API's names
bitwise_left_shift = _core.left_shift
bitwise_right_shift = _core.right_shift


# ---- selection ------------------------------------------------------------------------------------

def choose(a, choices, out=None, mode: str = "raise"):
    """choices[a[idx]][idx] for every idx of the broadcast shape of a and the choices.

    mode: 'raise' (the default) checks 0 <= a < len(choices) and needs concrete indices (under
    jit it raises, as jax.numpy's does; use 'wrap' or 'clip' there), 'wrap' takes a modulo
    len(choices), 'clip' clamps into range. Differentiable in the choices."""
    if out is not None:
        raise NotImplementedError("choose: the 'out' argument is not supported (arrays are immutable)")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: mode={mode!r} not understood; it must be 'raise', 'wrap' or 'clip'")
    a = _arr(a)
    if a.dtype not in _INTS:
        raise ValueError(f"choose: `a` must hold integers (the choice of each element), got {a.dtype.name}")
    if isinstance(choices, _core.Array):
        if choices.ndim == 0:
            raise ValueError("choose: choices must be a sequence of arrays or an array of at least one dimension")
        arrs = [choices[i] for i in _range(choices.shape[0])]
    else:
        arrs = [_arr(c) for c in choices]
    n = len(arrs)
    if n == 0:
        raise ValueError("choose: choices is empty; give at least one array to choose from")
    if mode == "raise":
        v = _concrete(a, "choose", "mode='raise' checks the index values (use mode='wrap' or mode='clip' under jit)")
        if v.size and (v.min() < 0 or v.max() >= n):
            raise ValueError(f"choose: an entry of `a` is out of range for {n} choices (mode='raise'); use "
                             f"mode='wrap' or mode='clip' for other values")
    elif mode == "wrap":
        a = _qb.mod(a, n)
    else:
        a = _qb.clip(a, 0, n - 1)
    dtype = _qb.result_type(*arrs)
    shape = _qb.broadcast_shapes(tuple(a.shape), *[tuple(c.shape) for c in arrs])
    stacked = _qb.stack([_qb.broadcast_to(c.astype(dtype), shape) for c in arrs], axis=0)
    idx = _qb.broadcast_to(a, shape).reshape((1,) + tuple(shape))
    return _qb.take_along_axis(stacked, idx, axis=0, mode="clip")[0]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of a along axis (a flattened when None) where the 1-D condition is true.

    Without size the number of results depends on the values, so condition must be concrete
    (size= is required under jit); with size, the first `size` selected slices, the rest
    filled with fill_value (jax.numpy's rule). A condition shorter than the axis selects
    among its first entries; entries past the axis must be false."""
    if out is not None:
        raise NotImplementedError("compress: the 'out' argument is not supported (arrays are immutable)")
    cond = _arr(condition)
    if cond.ndim != 1:
        raise ValueError(f"compress: condition must be a 1-D array, got shape {tuple(cond.shape)}")
    cond = cond if cond.dtype == _core.bool_ else cond != 0
    arr = _arr(a)
    if axis is None:
        arr, axis = arr.reshape(-1), 0
    else:
        axis = _axis(axis, arr.ndim, "compress")
    n = arr.shape[axis]
    extra, cond = cond[n:], cond[:n]
    if cond.shape[0] < n:
        arr = _qb.take(arr, _qb.arange(cond.shape[0]), axis=axis, mode="clip")
    if size is None:
        if cond._is_tracer:
            raise ValueError("compress: size= is required under jit (the number of results must be static, as in "
                             "JAX); pass the number of slices to keep (extra slots take fill_value)")
        import numpy as np
        if np.asarray(extra).any():
            raise ValueError(f"compress: condition has true entries past the end of axis {axis} (of length {n})")
        keep = np.flatnonzero(np.asarray(cond))
        return _qb.take(arr, _qb.asarray(keep, dtype=_core.int64), axis=axis, mode="clip")
    size = _static_int(size, "compress", "size")
    if not 0 <= size <= arr.shape[axis]:
        raise ValueError(f"compress: size must be in [0, {arr.shape[axis]}] (the length of axis {axis}), got {size}")
    idx = _qb.flatnonzero(cond, size=size, fill_value=-1)
    picked = _qb.take(arr, _qb.maximum(idx, 0), axis=axis, mode="clip")
    shape = [1] * arr.ndim
    shape[axis] = size
    missing = (idx < 0).reshape(shape)
    return _qb.where(missing, _cast("compress", _arr(fill_value), arr.dtype, "fill_value"), picked)


def extract(condition, arr, *, size=None, fill_value=0):
    """The entries of arr (flattened) where condition (flattened) is nonzero: compress of the
    raveled arrays, with compress's size= and fill_value= rule under jit."""
    return compress(_arr(condition).reshape(-1), _arr(arr).reshape(-1), size=size, fill_value=fill_value)


def place(arr, mask, vals, *, inplace: bool = True):
    """arr with the positions where mask is true set to vals, in order, repeating vals
    cyclically (numpy.place); jax.numpy's form: needs inplace=False, returns the result.
    Works under jit (the positions are found with a static size)."""
    _immutable("place", inplace)
    data, m, v = _arr(arr), _arr(mask), _arr(vals).reshape(-1)
    if data.size != m.size:
        raise ValueError(f"place: arr and mask must have the same size, got {data.size} and {m.size}")
    if v.size == 0:
        raise ValueError("place: vals is empty; give at least one value to place")
    if data.size == 0:
        return data
    n = m.size
    positions = _qb.flatnonzero(m, size=n, fill_value=n)  # unselected slots point past the end: dropped
    values = _cast("place", _tile_to(v, n), data.dtype)
    return data.reshape(-1).at[positions].set(values, mode="drop").reshape(tuple(data.shape))


def put(a, ind, v, mode=None, *, inplace: bool = True):
    """a with the flat positions ind set to v (v repeated cyclically to len(ind)), as
    numpy.put; jax.numpy's form: needs inplace=False and returns the result.

    mode None (jax.numpy's default): a negative index counts from the end once, then indices
    are clamped into range; 'clip' clamps; 'wrap' takes them modulo a.size; 'raise' is not
    supported (as in jax.numpy)."""
    _immutable("put", inplace)
    arr = _arr(a)
    idx = _int_indices(ind, "put", "ind").reshape(-1)
    vals = _arr(v).reshape(-1)
    if mode == "raise":
        raise NotImplementedError("put: mode='raise' is not supported (as in jax.numpy); use mode='clip' or 'wrap'")
    if mode not in (None, "clip", "wrap"):
        raise ValueError(f"put: mode must be None, 'clip' or 'wrap', got {mode!r}")
    if arr.size == 0 or idx.size == 0 or vals.size == 0:
        return arr
    n = arr.size
    if mode is None:
        idx = _qb.clip(_qb.where(idx < 0, idx + n, idx), 0, n - 1)
    elif mode == "clip":
        idx = _qb.clip(idx, 0, n - 1)
    else:
        idx = _qb.mod(idx, n)
    vals = _cast("put", _tile_to(vals, idx.shape[0]), arr.dtype)
    return arr.reshape(-1).at[idx].set(vals).reshape(tuple(arr.shape))


def put_along_axis(arr, indices, values, axis, inplace: bool = True, *, mode=None):
    """arr with values written at indices along axis (the scatter counterpart of
    take_along_axis; arr flattened when axis is None); jax.numpy's form: needs inplace=False
    and returns the result. mode is .at[].set's (None/'drop' drops out-of-bounds indices)."""
    _immutable("put_along_axis", inplace)
    a = _arr(arr)
    shape0 = tuple(a.shape)
    idx = _int_indices(indices, "put_along_axis")
    if axis is None:
        a, axis = a.reshape(-1), 0
    if a.ndim != idx.ndim:
        raise ValueError(f"put_along_axis: arr and indices must have the same number of dimensions, got "
                         f"{a.ndim} and {idx.ndim}")
    axis = _axis(axis, a.ndim, "put_along_axis")
    vals = _arr(values)
    try:
        vals = _qb.broadcast_to(vals, tuple(idx.shape))
    except (ValueError, TypeError):
        raise ValueError(f"put_along_axis: values of shape {tuple(vals.shape)} do not broadcast to the shape of "
                         f"indices {tuple(idx.shape)}") from None
    full = []
    for d in range(a.ndim):
        if d == axis:
            full.append(idx.shape[d])
        elif idx.shape[d] in (1, a.shape[d]):
            full.append(a.shape[d])
        else:
            raise ValueError(f"put_along_axis: indices of shape {tuple(idx.shape)} do not broadcast against arr "
                             f"of shape {tuple(a.shape)} off axis {axis}")
    full = tuple(full)
    index = []
    for d in range(a.ndim):
        if d == axis:
            index.append(_qb.broadcast_to(idx, full))
        else:
            s = [1] * a.ndim
            s[d] = a.shape[d]
            index.append(_qb.broadcast_to(_qb.arange(a.shape[d]).reshape(tuple(s)), full))
    out = a.at[tuple(index)].set(_cast("put_along_axis", _qb.broadcast_to(vals, full), a.dtype), mode=mode)
    return out.reshape(shape0)


# ---- index helpers ---------------------------------------------------------------------------------

def _shape_of(arr):
    return tuple(arr.shape) if hasattr(arr, "shape") else tuple(_arr(arr).shape)


def diag_indices_from(arr):
    """The indices of the main diagonal of arr (at least 2-D, every axis of one length)."""
    shape = _shape_of(arr)
    if len(shape) < 2:
        raise ValueError(f"diag_indices_from: the array must be at least 2-D, got shape {shape}")
    if len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dimensions of the array must be of equal length, got {shape}")
    return _qb.diag_indices(shape[0], len(shape))


def tril_indices_from(arr, k: int = 0):
    """The indices of the lower triangle (on and below diagonal k) of a 2-D arr."""
    shape = _shape_of(arr)
    if len(shape) != 2:
        raise ValueError(f"tril_indices_from: only 2-D arrays are accepted, got shape {shape}")
    return _qb.tril_indices(shape[0], _static_int(k, "tril_indices_from", "k"), shape[1])


def triu_indices_from(arr, k: int = 0):
    """The indices of the upper triangle (on and above diagonal k) of a 2-D arr."""
    shape = _shape_of(arr)
    if len(shape) != 2:
        raise ValueError(f"triu_indices_from: only 2-D arrays are accepted, got shape {shape}")
    return _qb.triu_indices(shape[0], _static_int(k, "triu_indices_from", "k"), shape[1])


def mask_indices(n: int, mask_func, k: int = 0, *, size=None):
    """The (row, column) indices where mask_func(ones((n, n)), k) is nonzero (for example
    mask_indices(n, qb.triu, 1)); size= as for nonzero under jit."""
    n = _static_int(n, "mask_indices", "n")
    return _qb.nonzero(mask_func(_qb.ones((n, n)), k), size=size)


class _IndexExpression:
    """s_[...] gives the index itself, index_exp[...] always a tuple (numpy.s_, numpy.index_exp)."""

    def __init__(self, maketuple: bool):
        self._maketuple = maketuple

    def __getitem__(self, item):
        if self._maketuple and not isinstance(item, tuple):
            return (item,)
        return item

    def __repr__(self):
        return "index_exp" if self._maketuple else "s_"


s_ = _IndexExpression(False)
index_exp = _IndexExpression(True)


def iterable(y) -> bool:
    """Whether iter(y) works (False for 0-d arrays and scalars)."""
    if isinstance(y, _core.Array):  # (Array.__iter__ is a generator: a 0-d array raises only when iterated)
        return y.ndim > 0
    try:
        iter(y)
    except TypeError:
        return False
    return True


def matrix_transpose(x, /):
    """x with its last two axes swapped (the Array API's matrix transpose)."""
    x = _arr(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must be at least two-dimensional, got ndim={x.ndim}")
    return _qb.swapaxes(x, -1, -2)


# ---- construction ----------------------------------------------------------------------------------

def fromfunction(function, shape, *, dtype=float, **kwargs):
    """The array whose entry at idx is function(*idx, **kwargs), with each index a scalar of
    dtype: function is vmapped over every axis (jax.numpy's rule, so a reduction inside it
    sees one index, unlike NumPy, which passes whole index grids)."""
    if not callable(function):
        raise TypeError(f"fromfunction: function must be callable, got {type(function).__name__}")
    dims = (shape,) if hasattr(shape, "__index__") else tuple(shape)
    dims = tuple(_static_int(d, "fromfunction", "each dimension of shape") for d in dims)
    if any(d < 0 for d in dims):
        raise ValueError(f"fromfunction: dimensions must be non-negative, got {dims}")
    d = _dtype(dtype)

    def f(*idx):
        return function(*idx, **kwargs)
    for axis in reversed(range(len(dims))):
        f = _qb.vmap(f, in_axes=tuple(0 if j == axis else None for j in range(len(dims))))
    return f(*[_qb.arange(n, dtype=d) for n in dims])


def resize(a, new_shape):
    """a flattened, repeated cyclically to fill new_shape (numpy.resize); zeros when a or the
    new shape is empty."""
    a = _arr(a)
    shape = (new_shape,) if hasattr(new_shape, "__index__") else tuple(new_shape)
    shape = tuple(_static_int(s, "resize", "each dimension of new_shape") for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"resize: all elements of new_shape must be non-negative, got {shape}")
    size = math.prod(shape)
    if a.size == 0 or size == 0:
        return _qb.zeros(shape, dtype=a.dtype)
    return _tile_to(a.reshape(-1), size).reshape(shape)


def rollaxis(a, axis: int, start: int = 0):
    """a with axis moved to lie before position start (numpy.rollaxis; moveaxis is clearer)."""
    a = _arr(a)
    n = a.ndim
    axis = _axis(axis, n, "rollaxis")
    start = _static_int(start, "rollaxis", "start")
    if not -n <= start <= n:
        raise ValueError(f"rollaxis: start={start} must satisfy {-n} <= start <= {n}")
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    if axis == start:
        return a
    return _qb.moveaxis(a, axis, start)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """filt without its leading ('f' in trim) and trailing ('b') zeros along each axis in axis
    (all axes when None; a hyperplane counts as zero when all its entries are). The result's
    shape depends on the values, so filt must be concrete: not under jit (as in JAX)."""
    a = _arr(filt)
    v = _concrete(a, "trim_zeros", "the result's shape depends on the values")
    if not isinstance(trim, str):
        raise TypeError(f"trim_zeros: trim must be a string of 'f' and 'b', got {type(trim).__name__}")
    t = trim.lower()
    if axis is None:
        axes = set(range(a.ndim))
    else:
        axes = {_axis(ax, a.ndim, "trim_zeros") for ax in ((axis,) if hasattr(axis, "__index__") else axis)}
    if not axes or ("f" not in t and "b" not in t):
        return a
    index = []
    for ax in range(a.ndim):
        if ax not in axes:
            index.append(slice(None))
            continue
        mask = v.any(axis=tuple(i for i in range(a.ndim) if i != ax))
        if not mask.any():
            index.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if "f" in t else None
        stop = a.shape[ax] - int(mask[::-1].argmax()) if "b" in t else None
        index.append(slice(start, stop))
    return a[tuple(index)]


def unwrap(p, discont=None, axis: int = -1, period=2 * math.pi):
    """p with jumps between neighbours along axis larger than max(discont, period/2) (discont
    defaults to period/2) replaced by their complement modulo period (numpy.unwrap);
    integer p with an integer period stays integer."""
    p = _arr(p)
    _no_complex("unwrap", p, period, hint="unwrap the phase qb.angle(z) instead")
    dtype = _qb.result_type(p, period)
    p = p.astype(dtype)
    axis = _axis(axis, p.ndim, "unwrap")
    n = p.shape[axis]
    if n == 0:
        return p
    period = _arr(period).astype(dtype)
    integer = dtype in _INTS
    interval = period // 2 if integer else period / 2
    if discont is None:
        discont = period / 2
    dd = _qb.diff(p, axis=axis)
    ddmod = _qb.mod(dd + interval, period) - interval
    ddmod = _qb.where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = _qb.where(_qb.abs(dd) < discont, _qb.zeros_like(dd), ddmod - dd)
    first = _qb.take(p, _qb.arange(1), axis=axis, mode="clip")
    rest = _qb.take(p, _qb.arange(1, n), axis=axis, mode="clip")
    return _qb.concatenate([first, rest + _qb.cumsum(correction, axis=axis).astype(dtype)], axis=axis)


# ---- histograms ------------------------------------------------------------------------------------

def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 (NumPy's name)
    """The bin edges qb.histogram uses: bins + 1 equal-width edges over range (default a's
    min and max, widened by 0.5 each side when they are equal), or the given edges."""
    _no_complex("histogram_bin_edges", a, hint=_NO_ORDER)
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram_bin_edges: string values for bins ({bins!r}) are not supported "
                                  f"(as in jax.numpy); give a number of bins or the edges")
    return _qb.histogram(a, bins=bins, range=range)[1]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """(counts, [edges per dimension]) of the N points of the (N, D) sample: bins an int, or
    one int or array of edges per dimension; range None or one (min, max) or None per
    dimension. A point on the last edge of a dimension falls in its last bin; points outside
    are left out. counts are integers without weights or density (as jax.numpy)."""
    s = _arr(sample)
    _no_complex("histogramdd", s, weights, hint=_NO_ORDER)
    if s.ndim != 2:
        raise ValueError(f"histogramdd: sample must be a 2-D array of N points in D dimensions, got shape "
                         f"{tuple(s.shape)}")
    npts, ndim = s.shape
    if isinstance(bins, (list, tuple)):
        if len(bins) != ndim:
            raise ValueError(f"histogramdd: bins has {len(bins)} entries for {ndim} dimensions; give one bin count "
                             f"or edge array per dimension")
        bins_d = list(bins)
    elif hasattr(bins, "__index__") and not isinstance(bins, _core.Array):
        bins_d = [bins] * ndim
    else:
        raise TypeError(f"histogramdd: bins must be an int or a list of one int or edge array per dimension, got "
                        f"{type(bins).__name__}")
    if range is None:
        range_d = [None] * ndim
    else:
        range_d = list(range)
        if len(range_d) != ndim:
            raise ValueError(f"histogramdd: range has {len(range_d)} entries for {ndim} dimensions")
    x = _inexact(s)
    edges, flat, inside, nbins = [], None, None, []
    for d in _range(ndim):
        xd = x[:, d]
        e = histogram_bin_edges(xd, bins_d[d], range_d[d]).astype(x.dtype)
        nb = e.shape[0] - 1
        idx = _qb.searchsorted(e, xd, side="right") - 1
        idx = _qb.where(xd == e[-1], _qb.full_like(idx, nb - 1), idx)
        ok = (xd >= e[0]) & (xd <= e[-1])
        flat = idx if flat is None else flat * nb + idx
        inside = ok if inside is None else inside & ok
        edges.append(e)
        nbins.append(nb)
    total = math.prod(nbins)
    if weights is None and not density:
        w = _qb.ones((npts,), dtype=_default_int())
    else:
        w = _inexact(_qb.ones((npts,)) if weights is None else _arr(weights).reshape(-1))
        if w.shape[0] != npts:
            raise ValueError(f"histogramdd: weights has {w.shape[0]} entries for {npts} points")
    w = _qb.where(inside, w, _qb.zeros_like(w))
    slot = _qb.where(inside, flat, _qb.zeros_like(flat))
    counts = _qb.zeros((total,), dtype=w.dtype).at[slot].add(w).reshape(tuple(nbins))
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = (e[1:] - e[:-1]).reshape(tuple(-1 if k == d else 1 for k in _range(ndim)))
            volume = width if volume is None else volume * width
        counts = counts / (_qb.sum(counts) * volume)
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """(counts, x_edges, y_edges) of the points (x[i], y[i]): histogramdd of the two columns;
    bins an int, [nx, ny], one edge array for both, or [x_edges, y_edges]."""
    x, y = _arr(x), _arr(y)
    _no_complex("histogram2d", x, y, weights, hint=_NO_ORDER)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"histogram2d: x and y must be 1-D of one length, got shapes {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    if hasattr(bins, "__index__") and not isinstance(bins, _core.Array):
        bins2 = [bins, bins]
    elif isinstance(bins, (list, tuple)) and len(bins) == 2:
        bins2 = list(bins)
    else:  # one array of edges for both dimensions
        bins2 = [bins, bins]
    dtype = _qb.result_type(_inexact(x), _inexact(y))
    sample = _qb.stack([_inexact(x).astype(dtype), _inexact(y).astype(dtype)], axis=1)
    counts, (ex, ey) = histogramdd(sample, bins2, range, weights, density)
    return counts, ex, ey


# ---- window functions ------------------------------------------------------------------------------

def _window_points(M, name):
    """(M, r): r = n / (M - 1) for the symmetric integers n = 1-M, 3-M, ..., M-1 (r in [-1, 1],
    NumPy's layout: the windows come out exactly symmetric)."""
    if isinstance(M, (bool, _core.Array)) or not (isinstance(M, float) or hasattr(M, "__index__")):
        raise TypeError(f"{name}: M must be an int (the number of points), got {type(M).__name__}")
    m = int(M)
    if m < 0:
        raise ValueError(f"{name}: M must be non-negative (the number of points), got {M}")
    if m <= 1:
        return m, None
    return m, _qb.arange(1 - m, m, 2, dtype=_qb.default_dtype()) / (m - 1)


def _cosine_window(M, name, coefs):
    """sum_k coefs[k] cos(k pi r) over the window's points."""
    m, r = _window_points(M, name)
    if r is None:
        return _qb.ones((m,), dtype=_qb.default_dtype())
    out = _qb.full_like(r, coefs[0])
    for k, c in enumerate(coefs[1:], start=1):
        out = out + c * _qb.cos((k * math.pi) * r)
    return out


def bartlett(M):
    """The Bartlett (triangular) window of M points: 1 - |2n/(M-1) - 1| for n = 0 .. M-1."""
    m, r = _window_points(M, "bartlett")
    if r is None:
        return _qb.ones((m,), dtype=_qb.default_dtype())
    return 1.0 - _qb.abs(r)


def blackman(M):
    """The Blackman window of M points: 0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))."""
    return _cosine_window(M, "blackman", (0.42, 0.5, 0.08))


def hamming(M):
    """The Hamming window of M points: 0.54 - 0.46 cos(2 pi n/(M-1))."""
    return _cosine_window(M, "hamming", (0.54, 0.46))


def hanning(M):
    """The Hann window of M points: 0.5 - 0.5 cos(2 pi n/(M-1))."""
    return _cosine_window(M, "hanning", (0.5, 0.5))


def kaiser(M, beta):
    """The Kaiser window of M points: i0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / i0(beta);
    differentiable in beta."""
    m, r = _window_points(M, "kaiser")
    _no_complex("kaiser", beta, hint="beta must be a real number")
    b = _arr(beta).astype(_qb.default_dtype())
    if r is None:
        return _qb.ones((m,), dtype=_qb.default_dtype())
    return _qb.i0(b * _qb.sqrt(_qb.maximum(1.0 - r * r, 0.0))) / _qb.i0(b)


# ---- polynomials (coefficients highest power first, as numpy.poly*) ---------------------------------

def _poly1d(p, name):
    p = _arr(p)
    p = p.reshape((1,)) if p.ndim == 0 else p
    if p.ndim != 1:
        raise ValueError(f"{name}: a polynomial is a 1-D array of coefficients, got shape {tuple(p.shape)}")
    return p


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a scalar counts as one
    root). For a square matrix, the coefficients of its characteristic polynomial
    det(x I - A), computed in the matrix's own arithmetic (Faddeev-LeVerrier: real for a real
    matrix, and differentiable; jax.numpy goes through its complex eigenvalues)."""
    z = _inexact(seq_of_zeros)
    z = z.reshape((1,)) if z.ndim == 0 else z
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] > 0:
        n = z.shape[0]
        eye = _qb.eye(n, dtype=z.dtype)
        coefs = [_qb.ones((), dtype=z.dtype)]
        m = _qb.zeros((n, n), dtype=z.dtype)
        for k in range(1, n + 1):
            m = z @ m + coefs[-1] * eye
            coefs.append(-_qb.trace(z @ m) / k)
        return _qb.stack(coefs)
    if z.ndim != 1:
        raise ValueError(f"poly: input must be 1-D (the roots) or a non-empty square 2-D array, got shape "
                         f"{tuple(z.shape)}")
    if z.shape[0] == 0:
        return _qb.ones((), dtype=z.dtype)
    a = _qb.ones((1,), dtype=z.dtype)
    zero = _qb.zeros((1,), dtype=z.dtype)
    for k in range(z.shape[0]):  # a(x) * (x - z_k)
        a = _qb.concatenate([a, zero]) - z[k] * _qb.concatenate([zero, a])
    return a


def _companion_roots(p):
    """The eigenvalues of p's companion matrix (p[0] != 0): p's roots."""
    n = p.shape[0] - 1
    if n < 1:
        return _qb.zeros((0,), dtype=_complex_of(p.dtype))
    first = _qb.reshape(-p[1:] / p[0], (1, n))
    below = _qb.concatenate([_qb.eye(n - 1, dtype=p.dtype), _qb.zeros((n - 1, 1), dtype=p.dtype)], axis=1)
    return _qb.linalg.eigvals(_qb.concatenate([first, below], axis=0))


def _complex_of(dtype):
    return dtype if dtype in _COMPLEX else (_core.complex64 if dtype == _core.float32 else _core.complex128)


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients p (highest power first), complex, as
    jax.numpy.roots: the eigenvalues of the companion matrix (LAPACK's geev, as NumPy). With
    strip_zeros (the default) leading zeros are dropped first, which needs concrete
    coefficients; with strip_zeros=False (usable under jit) each leading zero gives a NaN root
    instead, at the end. Unlike numpy.roots the result is complex even when every root is real."""
    p = _inexact(p)
    p = p.reshape((1,)) if p.ndim == 0 else p
    if p.ndim != 1:
        raise ValueError(f"roots: the coefficients must be a 1-D array, got shape {tuple(p.shape)}")
    if p.shape[0] < 2:
        return _qb.zeros((0,), dtype=_complex_of(p.dtype))
    if strip_zeros:
        import numpy as np
        nonzero = np.nonzero(_concrete(p, "roots", "stripping leading zeros (strip_zeros=True) depends on the "
                                                   "values; pass strip_zeros=False under jit") != 0)[0]
        return _companion_roots(p[int(nonzero[0]):] if nonzero.size else p[p.shape[0]:])
    n = p.shape[0]
    is_zero = (p == 0).astype(_core.int32)
    lead = _qb.where(_qb.all(p == 0), n, _qb.argmin(is_zero)).astype(_core.int32)
    # The leading zeros rolled to the end (an all-zero p as ones, so geev gets finite input):
    # their roots are zeros, sorted to the end and replaced by NaN.
    idx = (_qb.arange(n, dtype=_core.int32) + lead) % n
    q = _qb.where(lead == n, _qb.ones_like(p), _qb.take(p, idx))
    r = _companion_roots(q)
    order = _qb.argsort((r == 0).astype(_core.int32), stable=True)
    r = _qb.take(r, order)
    keep = _qb.arange(n - 1, dtype=_core.int32) < n - 1 - lead
    return _qb.where(keep, r, _qb.asarray(complex(float("nan"), float("nan")), dtype=r.dtype))


def sort_complex(a):
    """a sorted along its last axis by real part, then imaginary part, as a complex array
    (numpy.sort_complex)."""
    a = _arr(a)
    s = _qb.sort(a, axis=-1)
    if s.dtype in _COMPLEX:
        return s
    single = s.dtype == _core.float32 or (s.dtype not in _FLOATS and _qb.default_dtype() == _core.float32)
    return s.astype(_core.complex64 if single else _core.complex128)


def _pad_front(p, n):
    return p if p.shape[0] == n else _qb.concatenate([_qb.zeros((n - p.shape[0],), dtype=p.dtype), p])


def polyadd(a1, a2):
    """The sum of two polynomials (the shorter padded with leading zeros)."""
    a, b = _poly1d(a1, "polyadd"), _poly1d(a2, "polyadd")
    dtype = _qb.result_type(a, b)
    n = max(a.shape[0], b.shape[0])
    return _pad_front(a.astype(dtype), n) + _pad_front(b.astype(dtype), n)


def polysub(a1, a2):
    """The difference of two polynomials."""
    a, b = _poly1d(a1, "polysub"), _poly1d(a2, "polysub")
    dtype = _qb.result_type(a, b)
    n = max(a.shape[0], b.shape[0])
    return _pad_front(a.astype(dtype), n) - _pad_front(b.astype(dtype), n)


def _trim_front(p, name, tol=None):
    """p without leading entries that are zero (|entry| < tol when tol is given); eager only."""
    v = _concrete(p, name, "trim_leading_zeros=True makes the result's length depend on the values")
    import numpy as np
    small = (np.abs(v) < tol) if tol is not None else (v == 0)
    if small.all():
        return p[:0]
    return p[int(np.argmin(small)):]


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials (their full convolution), in a float dtype; with
    trim_leading_zeros, leading zeros of the inputs are dropped first (eager only)."""
    a, b = _common_inexact(_poly1d(a1, "polymul"), _poly1d(a2, "polymul"))
    if trim_leading_zeros and (a.shape[0] > 1 or b.shape[0] > 1):
        a, b = _trim_front(a, "polymul"), _trim_front(b, "polymul")
    if a.shape[0] == 0:
        a = _qb.zeros((1,), dtype=b.dtype)
    if b.shape[0] == 0:
        b = _qb.zeros((1,), dtype=a.dtype)
    return _qb.convolve(a, b, mode="full")


def polyder(p, m: int = 1):
    """The m-th derivative of a polynomial (empty once m reaches its length)."""
    p = _inexact(_poly1d(p, "polyder"))
    m = _static_int(m, "polyder", "m (the order of the derivative)")
    if m < 0:
        raise ValueError(f"polyder: the order of the derivative must be non-negative, got m={m}")
    if m == 0:
        return p
    n = p.shape[0]
    # The coefficient of x^k becomes k (k-1) ... (k-m+1) times it, at x^(k-m).
    factors = [float(math.prod(_range(n - 1 - j - m + 1, n - j))) for j in _range(max(n - m, 0))]
    return p[:max(n - m, 0)] * _qb.asarray(factors, dtype=p.dtype)


def polyint(p, m: int = 1, k=None):
    """The m-th antiderivative of a polynomial; k gives the integration constants (a scalar
    for all m, or one per integration, the first one applied first, as numpy.polyint)."""
    p = _inexact(_poly1d(p, "polyint"))
    m = _static_int(m, "polyint", "m (the order of the integral)")
    if m < 0:
        raise ValueError(f"polyint: the order of the integral must be non-negative (see polyder), got m={m}")
    if k is None or isinstance(k, (int, float)) and not isinstance(k, bool):
        kk = _qb.full((1,), 0.0 if k is None else k, dtype=p.dtype)  # a Python number takes p's dtype
    else:
        kk = _inexact(k).reshape(-1)
    dtype = _qb.result_type(p, kk)
    p, kk = p.astype(dtype), kk.astype(dtype)
    if kk.shape[0] == 1:
        kk = _qb.broadcast_to(kk, (m,))
    if kk.shape[0] != m:
        raise ValueError(f"polyint: k must be a scalar or a 1-D array of length 1 or m={m}, got {kk.shape[0]} "
                         f"constants")
    for i in _range(m):
        n = p.shape[0]
        p = _qb.concatenate([p / _qb.arange(n, 0, -1, dtype=dtype), kk[i:i + 1]])
    return p


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """(quotient, remainder) of polynomial long division u / v; the remainder has u's length
    (leading zeros kept) unless trim_leading_zeros, which drops leading entries smaller than
    sqrt(eps) (eager only), as jax.numpy."""
    u, v = _common_inexact(_poly1d(u, "polydiv"), _poly1d(v, "polydiv"))
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    rem = u
    quotient = []
    for k in _range(m - n + 1):
        d = scale * rem[k]
        quotient.append(d)
        shifted = _qb.concatenate([_qb.zeros((k,), dtype=u.dtype), v, _qb.zeros((m - n - k,), dtype=u.dtype)])
        rem = rem - d * shifted
    q = _qb.stack(quotient) if quotient else _qb.zeros((1,), dtype=u.dtype)
    if trim_leading_zeros:
        rem = _trim_front(rem, "polydiv", tol=math.sqrt(_qb.finfo(u.dtype).eps))
    return q, rem


# ---- unique (the Array API's functions) -------------------------------------------------------------

UniqueAllResult = collections.namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique_parts(x, size, fill_value, name):
    """(values, indices, inverse_indices (x's shape), counts) of the distinct entries of x in
    ascending order; NaNs are all distinct (equal_nan=False, as the Array API). With size,
    the first `size` of them, padded: values with fill_value (default the smallest entry),
    indices with the smallest entry's index, counts with 0 (jax.numpy's padding)."""
    a = _arr(x)
    flat = a.reshape(-1)
    d = _default_int()
    if size is None:
        if flat._is_tracer:
            raise ValueError(f"{name}: size= is required under jit (the number of distinct values must be static, "
                             f"as in JAX); pass the number to keep (extra slots take fill_value)")
        import numpy as np
        vals, idx, inv, cnt = np.unique(np.asarray(flat), return_index=True, return_inverse=True, return_counts=True,
                                        equal_nan=False)
        return (_qb.asarray(vals).astype(a.dtype), _qb.asarray(idx).astype(d),
                _qb.asarray(inv).astype(d).reshape(tuple(a.shape)), _qb.asarray(cnt).astype(d))
    size = _static_int(size, name, "size")
    if flat.shape[0] == 0:
        raise ValueError(f"{name}: size= needs a non-empty array (the padding is taken from its entries)")
    order = _qb.argsort(flat)
    if fill_value is None:
        fill_value = flat[order[0]]  # the smallest entry (NaNs sort last)
    vals, idx, inv, cnt = _qb.unique(flat, return_index=True, return_inverse=True, return_counts=True, size=size,
                                     fill_value=fill_value, equal_nan=False)
    idx = _qb.where(cnt == 0, order[0], idx)
    return vals, idx.astype(d), inv.astype(d).reshape(tuple(a.shape)), cnt.astype(d)


def unique_all(x, /, *, size=None, fill_value=None):
    """(values, indices, inverse_indices, counts) of x's distinct entries (a named tuple):
    values ascending, indices of their first occurrences in x flattened, inverse_indices
    (x's shape) rebuilding x from values, counts. size= (with fill_value=) under jit."""
    return UniqueAllResult(*_unique_parts(x, size, fill_value, "unique_all"))


def unique_counts(x, /, *, size=None, fill_value=None):
    """(values, counts) of x's distinct entries (see unique_all)."""
    vals, _, _, cnt = _unique_parts(x, size, fill_value, "unique_counts")
    return UniqueCountsResult(vals, cnt)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """(values, inverse_indices) of x's distinct entries (see unique_all)."""
    vals, _, inv, _ = _unique_parts(x, size, fill_value, "unique_inverse")
    return UniqueInverseResult(vals, inv)


def unique_values(x, /, *, size=None, fill_value=None):
    """x's distinct entries in ascending order (see unique_all)."""
    return _unique_parts(x, size, fill_value, "unique_values")[0]


# ---- printing (through NumPy's print options, which Quabla's repr uses) -----------------------------

def get_printoptions():
    """numpy.get_printoptions(): the options Quabla's array repr and str print with."""
    import numpy as np
    return np.get_printoptions()


def set_printoptions(*args, **kwargs):
    """numpy.set_printoptions: precision, suppress, linewidth, ... of array printing."""
    import numpy as np
    np.set_printoptions(*args, **kwargs)


def printoptions(*args, **kwargs):
    """``with qb.printoptions(precision=3):`` NumPy's print options for the block."""
    import numpy as np
    return np.printoptions(*args, **kwargs)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """repr(arr) ("Array([...], dtype=...)") with the given formatting options."""
    a = _arr(arr)
    if a._is_tracer or a.size == 0:
        return repr(a)
    import numpy as np
    body = np.array2string(np.asarray(a), max_line_width=max_line_width, precision=precision,
                           suppress_small=suppress_small, separator=", ", prefix="Array(", threshold=1000)
    return f"Array({body}, dtype={a.dtype.name})"


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """str(a) (NumPy's layout, no dtype) with the given formatting options."""
    x = _arr(a)
    if x._is_tracer:
        return str(x)
    import numpy as np
    return np.array_str(np.asarray(x), max_line_width=max_line_width, precision=precision,
                        suppress_small=suppress_small)


# ---- from bytes, strings and iterables (read by NumPy, then copied into a Quabla array) -------------

def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """The 1-D array of the elements of dtype stored in buffer (numpy.frombuffer, copied)."""
    import numpy as np
    return _qb.asarray(np.array(np.frombuffer(buffer, dtype=_np_dtype(dtype), count=count, offset=offset)))


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str):
    """The 1-D array of the numbers in string separated by sep (numpy.fromstring's text mode;
    sep is required, as in jax.numpy)."""
    import numpy as np
    if not isinstance(sep, str) or sep == "":
        raise ValueError("fromstring: sep must be a non-empty separator (binary input: use frombuffer)")
    return _qb.asarray(np.fromstring(string, dtype=_np_dtype(dtype), count=count, sep=sep))


def fromiter(iterable, dtype, count: int = -1):
    """The 1-D array of the values iterable yields (numpy.fromiter). Eager: the iterable is
    consumed when the function is called (under jit: once, when it is traced, its values
    becoming constants of the program). jax.numpy refuses this function altogether."""
    import numpy as np
    return _qb.asarray(np.fromiter(iterable, dtype=_np_dtype(dtype), count=count))


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """numpy.einsum_path on the operands' shapes and dtypes (nothing is computed): a
    contraction order and its report. qb.einsum picks its own order and accepts optimize= as a
    hint only. optimize: 'auto' or True (NumPy's 'greedy'), 'greedy', 'optimal', False, or an
    explicit path (with or without NumPy's leading 'einsum_path')."""
    import numpy as np
    ops = []
    for o in operands:
        if hasattr(o, "shape") and hasattr(o, "dtype"):
            ops.append(np.broadcast_to(np.zeros((), dtype=_np_dtype(o.dtype)), tuple(o.shape)))
        else:
            ops.append(np.asarray(o))
    if optimize in ("auto", True):
        optimize = "greedy"
    elif isinstance(optimize, (list, tuple)) and (not optimize or optimize[0] != "einsum_path"):
        optimize = ["einsum_path", *optimize]
    return np.einsum_path(subscripts, *ops, optimize=optimize)


# ---- dtype aliases --------------------------------------------------------------------------------

float_ = _core.float64  # jax.numpy.float_ / double are float64, single float32, int_ int64
double = _core.float64
single = _core.float32
int_ = _core.int64


def _float0():
    import numpy as np
    return np.dtype([("float0", np.void, 0)])
