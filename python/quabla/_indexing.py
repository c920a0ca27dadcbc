"""Traced integer indexing: x[idx] with array indices, x.at[idx], take, take_along_axis,
dynamic_slice, sorting and selection, as jax.numpy spells them.

Everything here composes four primitives (take, scatter, argsort, searchsorted; see
ops.def), so jit, grad and vmap apply unchanged: a gather's derivative is a scatter-add
and back. Out-of-bounds indices follow JAX: gathers clamp (x[idx]) or fill (take,
.at[].get(mode="fill")); scatters drop them. Negative indices count from the end.
"""
from __future__ import annotations

import operator

from . import _core
from ._core import Array
from ._numpy_extra import _axis, moveaxis, _cast, _no_complex, _NO_ORDER, _COMPLEX

_static_getitem = _core.Array.__getitem__

_SCATTER_MODES = {"add": 0, "set": 1, "multiply": 2, "min": 3, "max": 4}


def _is_int_dtype(dtype):
    return dtype in (_core.int32, _core.int64)


def _widen_index(arr):
    """A narrow-integer index array (int8, int16, uint8, uint16, uint32) as int32 or int64,
    the dtypes the gather and scatter primitives take; NumPy and JAX index with any integer."""
    if arr.dtype in (_core.int8, _core.int16, _core.uint8, _core.uint16):
        return _core.astype(arr, _core.int32)
    if arr.dtype == _core.uint32:
        return _core.astype(arr, _core.int64)
    return arr


def _as_index_array(item):
    """An index item as an integer qb.Array, or None for slices, None and Ellipsis."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return None
    if isinstance(item, bool):
        raise IndexError("a bool index is not supported; use qb.where for masks")
    if isinstance(item, Array):
        arr = item
    else:
        try:
            arr = _core.asarray(item)
        except TypeError as e:
            raise IndexError(f"unsupported index {item!r}: {e}") from None
    if arr.dtype == _core.bool_:
        if arr._is_tracer:
            raise IndexError(
                "a boolean mask index needs a static shape, which a traced mask does not have (as in JAX); "
                "use qb.where(mask, x, other), or qb.nonzero(mask, size=...) for a fixed number of indices")
        if arr.ndim == 0:
            raise IndexError("a 0-d boolean index is not supported; use qb.where for masks")
        return _Mask(arr)
    arr = _widen_index(arr)
    if not _is_int_dtype(arr.dtype):
        raise IndexError(f"array indices must be integers, got {arr.dtype.name}; convert with .astype(qb.int32)")
    return arr


class _Mask:
    """A concrete boolean mask index: it selects over mask.ndim axes, whose sizes it must match."""

    __slots__ = ("mask",)

    def __init__(self, mask):
        self.mask = mask

    def arrays(self, shape, axis):
        """One int64 index array per mask axis (NumPy's nonzero), after checking that the mask's
        shape is that of the axes it indexes (NumPy and JAX raise IndexError otherwise)."""
        import numpy as np

        m = np.asarray(self.mask)
        for i, size in enumerate(m.shape):
            have = shape[axis + i] if axis + i < len(shape) else None
            if have != size:
                raise IndexError(f"boolean index did not match indexed array along axis {axis + i}; size of axis is "
                                 f"{have} but size of corresponding boolean axis is {size}")
        return [_core.asarray(a) for a in np.nonzero(m)]


def _needs_dynamic(index):
    items = index if isinstance(index, tuple) else (index,)
    for it in items:
        if isinstance(it, (Array, list)) or (hasattr(it, "__array__") and getattr(it, "ndim", 0) != 0):
            return True
    return False


def _is_int_scalar(it) -> bool:
    """A Python or NumPy integer (not a bool, not an array of any rank)."""
    return (hasattr(it, "__index__") and not isinstance(it, (bool, Array))
            and getattr(it, "ndim", 0) == 0 and getattr(getattr(it, "dtype", None), "kind", "i") != "b")


def _expand(x, index):
    """(items with Ellipsis expanded, per-item: ('basic', item) or ('array', qb int array))."""
    items = list(index) if isinstance(index, tuple) else [index]
    parsed = []
    for it in items:
        if _is_int_scalar(it):
            parsed.append(("int", operator.index(it)))
            continue
        arr = _as_index_array(it)
        if arr is None:
            parsed.append(("basic", it))
        elif isinstance(arr, _Mask):  # a concrete bool mask: one integer array per mask axis
            parsed.append(("mask", arr))
        else:
            parsed.append(("array", arr))
    consumed = sum(it.mask.ndim if k == "mask" else 1 for k, it in parsed
                   if not (k == "basic" and (it is None or it is Ellipsis)))
    ellipses = [i for i, (k, it) in enumerate(parsed) if k == "basic" and it is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {consumed} were indexed")
    fill = [("basic", slice(None))] * (x.ndim - consumed)
    if ellipses:
        parsed[ellipses[0]:ellipses[0] + 1] = fill
    else:
        parsed += fill
    out, axis = [], 0
    for k, it in parsed:
        if k == "mask":
            out.extend(("array", a) for a in it.arrays(tuple(x.shape), axis))
            axis += it.mask.ndim
        else:
            out.append((k, it))
            axis += 0 if k == "basic" and it is None else 1
    return out


def _resolve(x, index):
    """The advanced-indexing plan of x[index] as NumPy defines it.

    Returns (y, axis, flat, shape_after): y is x after the basic (slice/None) part with the
    array-indexed axes merged into one axis at `axis` (moved first when the array indices
    are not adjacent), and flat the int64 index into that merged axis, or None when the
    index has no arrays."""
    parsed = _expand(x, index)
    has_array = any(k == "array" for k, _ in parsed)
    if not has_array:
        return None
    # Ints count as 0-d index arrays once an array index is present (NumPy's rule).
    basic = []
    adv = []  # (position in the basic result, index array)
    for pos, (k, it) in enumerate(parsed):
        if k == "basic":
            basic.append(it)
        else:
            basic.append(slice(None))
            adv.append((pos, it if k == "array" else _core.asarray(it, dtype=_core.int64)))
    trivial_basic = all(isinstance(b, slice) and b == slice(None) for b in basic)
    y = x if trivial_basic else _static_getitem(x, tuple(basic))
    positions = [p for p, _ in adv]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    sizes = [y.shape[p] for p in positions]
    arrays = [a for _, a in adv]
    target = positions[0] if adjacent else 0
    rest = [d for d in range(y.ndim) if d not in positions]
    perm = rest[:target] + positions + rest[target:]
    if perm != list(range(y.ndim)):
        y = _core.transpose(y, perm)
    merged = 1
    for s in sizes:
        merged *= s
    new_shape = y.shape[:target] + (merged,) + y.shape[target + len(positions):]
    # `direct`: y is x itself, only reshaped (no slicing, no transposition), so a scatter
    # into y reshaped back is a scatter into x.
    direct = trivial_basic and perm == list(range(y.ndim))
    y = _core.reshape(y, new_shape)
    return y, target, arrays, sizes, direct


def _flat_index(arrays, sizes, mode):
    """One int64 index into the merged axis from per-axis indices (negatives wrapped).

    mode "clip" clamps each index into its axis; "drop" marks any out-of-bounds index with -1
    (dropped by scatters, filled by fill-gathers). A single index array under "drop" is only
    wrapped: the kernels drop (scatter) or fill (take) whatever stays out of bounds."""
    if len(arrays) == 1:
        a, n = arrays[0], sizes[0]
        a = _core.where(a < 0, a + n, a)
        # clamped here for scatters too, which would drop it (take clamps by itself)
        return _core.clip(a, 0, max(n - 1, 0)) if mode == "clip" else a
    flat = None
    bad = None
    stride = 1
    for a, n in zip(reversed(arrays), reversed(sizes)):
        a = _core.astype(a, _core.int64) if a.dtype != _core.int64 else a
        a = _core.where(a < 0, a + n, a)
        if mode == "clip":
            a = _core.clip(a, 0, max(n - 1, 0))
        else:
            out = (a < 0) | (a >= n)
            bad = out if bad is None else (bad | out)
        term = a * stride if stride != 1 else a
        flat = term if flat is None else flat + term
        stride *= n
    if bad is not None:
        flat = _core.where(bad, -1, flat)
    return flat


def dynamic_getitem(x, index, mode="clip", fill_value=None):
    plan = _resolve(x, index)
    if plan is None:
        return _static_getitem(x, index)
    y, axis, arrays, sizes, _ = plan
    if mode in (None, "clip", "promise_in_bounds"):
        return _core._take(y, _flat_index(arrays, sizes, "clip"), axis, False)
    if mode == "fill":
        flat = _flat_index(arrays, sizes, "drop")
        r = _core._take(y, flat, axis, True)
        if fill_value is None:
            fill_value = _default_fill(x.dtype)
        shape = list(flat.shape)
        bad = (flat < 0) | (flat >= y.shape[axis])
        bad = _core.reshape(bad, (1,) * axis + tuple(shape) + (1,) * (r.ndim - axis - len(shape)))
        if isinstance(fill_value, complex) and x.dtype not in _COMPLEX:
            fill_value = _core.asarray(fill_value)  # (refused below: a real array cannot hold it)
        fill = fill_value if isinstance(fill_value, Array) else _core.asarray(fill_value, dtype=x.dtype)
        return _core.where(bad, _cast("take", fill, x.dtype, "a fill_value"), r)
    raise ValueError(f"unknown gather mode {mode!r}; use 'clip', 'fill' or 'promise_in_bounds'")


def _default_fill(dtype):
    if dtype in (_core.float32, _core.float64):
        return float("nan")
    if dtype in _COMPLEX:
        return complex(float("nan"), float("nan"))  # as JAX: NaN in both parts
    if dtype == _core.int32:
        return -(2 ** 31)
    if dtype == _core.int64:
        return -(2 ** 63)
    # JAX's: the most negative value of a signed integer, the largest of an unsigned one
    signed = {_core.int8: -(2 ** 7), _core.int16: -(2 ** 15)}
    if dtype in signed:
        return signed[dtype]
    unsigned = {_core.uint8: 2 ** 8 - 1, _core.uint16: 2 ** 16 - 1, _core.uint32: 2 ** 32 - 1}
    if dtype in unsigned:
        return unsigned[dtype]
    return True


def _getitem(self, index):
    if _needs_dynamic(index):
        return dynamic_getitem(self, index)
    return _static_getitem(self, index)


# ---- x.at[idx]

def _ints_as_arrays(index):
    """Python ints of an .at[] index as 0-d index arrays, so an out-of-bounds one is dropped
    (JAX's scatter) instead of raising as basic indexing does."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(isinstance(i, int) and not isinstance(i, bool) for i in items):
        return index
    conv = tuple(_core.asarray(i, dtype=_core.int64) if isinstance(i, int) and not isinstance(i, bool) else i
                 for i in items)
    return conv if isinstance(index, tuple) else conv[0]


def _scatter(x, index, updates, how, unique=False, mode=None):
    if mode not in (None, "drop", "promise_in_bounds", "clip"):
        raise ValueError(f"unknown scatter mode {mode!r}; use 'drop' (the default), 'clip' or 'promise_in_bounds'")
    idx_mode = "clip" if mode == "clip" else "drop"
    if how != "add" and how != "set" and x.dtype in _COMPLEX:
        verb = {"multiply": "multiply, divide and power", "min": "min", "max": "max"}[how]
        _no_complex(f"x.at[...].{how}", x, hint=f"the scatter behind .at[].{verb} has no complex form yet"
                    + ("" if how == "multiply" else f" ({_NO_ORDER})"))
    if not isinstance(updates, (Array, int, float)):  # Python numbers stay weak (and range-checked)
        updates = _core.asarray(updates)
    if isinstance(updates, Array) and updates.dtype != x.dtype:  # as jax.numpy's .at[]: the array's dtype
        updates = _cast(f"x.at[...].{how}", updates, x.dtype)  # (complex into a real array: TypeError)
    if x.dtype == _core.bool_ and how in ("min", "max"):  # and / or, through int32 (as JAX accepts them)
        as_int = _core.astype(updates, _core.int32) if isinstance(updates, Array) else int(bool(updates))
        return _core.astype(_scatter(_core.astype(x, _core.int32), index, as_int, how, unique, mode), _core.bool_)
    region = _static_region(x, index)
    if region is not None:
        unique = True  # in-bounds ints and slices never select a position twice
        size = 1
        for r in region:
            size *= r[1]
        # Covering half of x or more: no scatter, the updates padded to x's shape and one
        # elementwise pass; a smaller block costs less as a copy of x and a scatter.
        if 2 * size >= x.size and how in ("set", "add", "multiply", "min", "max") and not (
                x.dtype == _core.bool_ and how != "set"):
            return _update_region(x, region, updates, how)
    plan = _resolve(x, _ints_as_arrays(index))
    if plan is None:
        # Static index: scatter through the positions x[index] selects.
        positions = _core.reshape(_core.arange(x.size if x.ndim else 1), x.shape)
        sel = _static_getitem(positions, index)
        flat = _core.reshape(sel, (-1,)) if sel.ndim != 1 else sel
        u = _core.broadcast_to(_core.asarray(updates) if not isinstance(updates, Array) else updates, sel.shape)
        u = _core.reshape(u, (-1,)) if sel.ndim != 1 else u
        r = _core._scatter(_core.reshape(x, (-1,)) if x.ndim != 1 else x, flat, u, 0, _SCATTER_MODES[how], unique)
        return _core.reshape(r, x.shape)
    y, axis, arrays, sizes, direct = plan
    if direct:
        flat = _flat_index(arrays, sizes, idx_mode)
        r = _core._scatter(y, flat, updates, axis, _SCATTER_MODES[how], unique)
        return r if r.shape == x.shape else _core.reshape(r, x.shape)
    # General form (slices or transposed axes around the array indices): scatter through
    # the flat positions that x[index] selects.
    positions = _core.reshape(_core.arange(x.size), x.shape)
    pos = dynamic_getitem(positions, index, mode="clip" if idx_mode == "clip" else "fill", fill_value=-1)
    u = _core.broadcast_to(updates if isinstance(updates, Array) else _core.asarray(updates), pos.shape)
    r = _core._scatter(_core.reshape(x, (-1,)), _core.reshape(pos, (-1,)), _core.reshape(u, (-1,)), 0,
                       _SCATTER_MODES[how], unique)
    return _core.reshape(r, x.shape)


def _static_region(x, index):
    """For an index of in-bounds ints, slices and one Ellipsis (the common .at[] of boundary
    conditions and blocks): per axis of x (first, count, step, dropped), the positions
    first, first + step, ... it selects (step > 0; `dropped` for an int). None otherwise
    (arrays, masks, None, out-of-bounds ints: the scatter below handles those)."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(it is None or isinstance(it, (bool, Array, list)) or
           (hasattr(it, "__array__") and not _is_int_scalar(it)) for it in items):
        return None
    if sum(it is Ellipsis for it in items) > 1:
        return None
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.ndim - (len(items) - 1))
    if len(items) > x.ndim:
        return None
    items += [slice(None)] * (x.ndim - len(items))
    region = []
    for it, n in zip(items, x.shape):
        if _is_int_scalar(it):
            i = operator.index(it)
            if not -n <= i < n:
                return None  # dropped (JAX's scatter): the general path
            region.append((i % n, 1, 1, True, False))
        elif isinstance(it, slice):
            start, stop, step = it.indices(n)
            count = len(range(start, stop, step))
            flipped = step < 0
            if flipped and count:
                start, step = start + (count - 1) * step, -step
            region.append((start, count, abs(step), False, flipped))
        else:
            return None
    return region


def _update_region(x, region, updates, how):
    """x.at[region].how(updates) without a scatter: the updates padded to x's shape (their
    positions spread by interior padding), then one elementwise pass (a select for set, min
    and max; x + u or x * u, with 0 or 1 elsewhere, for add and multiply)."""
    import numpy as np
    from .lax import pad
    if any(r[1] == 0 for r in region):
        return x
    sel_shape = tuple(r[1] for r in region if not r[3])
    if isinstance(updates, int) and not isinstance(updates, bool) and x.dtype.kind in "iu":
        info = np.iinfo(np.dtype(x.dtype.name))
        if not info.min <= updates <= info.max:  # the scatter's check, for the same message
            raise ValueError(f"scatter: the Python int {updates} does not fit in {x.dtype.name}; convert the array "
                             f"with .astype(qb.int64) first")
    u = _core.asarray(updates, dtype=x.dtype) if not isinstance(updates, Array) else updates
    u = _core.reshape(_core.broadcast_to(u, sel_shape), tuple(r[1] for r in region))
    flipped = [axis for axis, r in enumerate(region) if r[4] and r[1] > 1]
    if flipped:
        u = _core.flip(u, axis=tuple(flipped))
    config = [(first, n - (first + (count - 1) * step + 1), step - 1)
              for (first, count, step, _, _), n in zip(region, x.shape)]
    fill = {"set": 0, "add": 0, "multiply": 1, "min": 0, "max": 0}[how]
    padded = pad(u, _core.asarray(fill, dtype=x.dtype), config)
    if how == "add":
        return x + padded
    if how == "multiply":
        return x * padded
    mask = None  # positions updated: per partial axis a constant bool vector, broadcast
    for axis, ((first, count, step, _, _), n) in enumerate(zip(region, x.shape)):
        if first == 0 and count == n and step == 1:
            continue
        m = np.zeros(n, bool)
        m[first:first + (count - 1) * step + 1:step] = True
        shape = [1] * x.ndim
        shape[axis] = n
        m = _core.asarray(m.reshape(shape))
        mask = m if mask is None else mask & m
    new = padded if how == "set" else (_core.minimum(x, padded) if how == "min" else _core.maximum(x, padded))
    if mask is None:
        return _core.broadcast_to(new, x.shape) if new.shape != x.shape else new
    return _core.where(mask, new, x)


class _IndexUpdateRef:
    __slots__ = ("_x", "_index")

    def __init__(self, x, index):
        self._x = x
        self._index = index

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False):
        if mode not in (None, "clip", "fill", "promise_in_bounds"):
            raise ValueError(f"unknown gather mode {mode!r}; use 'clip', 'fill' or 'promise_in_bounds'")
        if _needs_dynamic(self._index) or mode in ("fill", "clip"):
            return dynamic_getitem(self._x, _ints_as_arrays(self._index), mode=mode, fill_value=fill_value)
        try:
            return _static_getitem(self._x, self._index)
        except IndexError:  # out-of-bounds ints: clamped, as jax's .at[].get() does (x[i] raises, as NumPy)
            return dynamic_getitem(self._x, _ints_as_arrays(self._index), mode="clip")

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _scatter(self._x, self._index, values, "set", unique_indices, mode)

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _scatter(self._x, self._index, values, "add", unique_indices, mode)

    def subtract(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        neg = -values if isinstance(values, (int, float, Array)) else -_core.asarray(values)
        return _scatter(self._x, self._index, neg, "add", unique_indices, mode)

    def multiply(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _scatter(self._x, self._index, values, "multiply", unique_indices, mode)

    mul = multiply

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        # x / (the product of the divisors landing at each position): exact division, and
        # true division's dtype (an integer array gives floats, as JAX).
        x = self._x
        if x.dtype not in (_core.float32, _core.float64) and x.dtype not in _COMPLEX:
            x = _core.astype(x, _core.float32 if x.dtype == _core.int32 else _core.float64)
        den = _scatter(_core.ones_like(x), self._index, values, "multiply", unique_indices, mode)
        return x / den

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _scatter(self._x, self._index, values, "min", unique_indices, mode)

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _scatter(self._x, self._index, values, "max", unique_indices, mode)

    def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        # As JAX: x ** (the product of the exponents landing at each position), so a repeated
        # index applies the power once per occurrence ((x ** a) ** b = x ** (a * b)).
        ex = _scatter(_core.ones_like(self._x), self._index, values, "multiply", unique_indices, mode)
        return self._x ** ex

    def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False):
        # As JAX: func (elementwise) applied once per occurrence of each index, so a repeated
        # index applies it again. Differentiable eagerly and with unique_indices=True; under
        # jit with repeats the repeat count is a traced loop bound (forward mode only there).
        x = self._x
        if unique_indices:
            return self.set(func(self.get(mode="clip")), mode=mode)
        from ._control import fori_loop
        count = _scatter(_core.zeros(x.shape, dtype=_core.int32), self._index, 1, "add", False, mode)

        def once_more(r, v):
            fv = func(v)
            fv = fv if isinstance(fv, Array) and fv.dtype == x.dtype else _cast("x.at[...].apply", _core.asarray(fv),
                                                                                 x.dtype, "results of func")
            return _core.where(count > r, fv, v)
        return fori_loop(0, _core.max(count) if x.size else 0, once_more, x)


class _IndexUpdateHelper:
    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, index):
        return _IndexUpdateRef(self._x, index)


def _at(self):
    return _IndexUpdateHelper(self)


# ---- take, take_along_axis, dynamic slices

def _int_array(x, fname):
    a = _widen_index(x if isinstance(x, Array) else _core.asarray(x))
    if not _is_int_dtype(a.dtype):
        raise TypeError(f"{fname}: indices must be integers, got {a.dtype.name}")
    return a


def take(a, indices, axis=None, mode=None, fill_value=None, unique_indices=False, indices_are_sorted=False):
    """jnp.take: elements of `a` at integer `indices` along `axis` (flattened when None).

    mode: "fill" (the default, as JAX: out-of-bounds give fill_value, NaN for floats),
    "clip", "wrap" or "promise_in_bounds"."""
    a = a if isinstance(a, Array) else _core.asarray(a)
    if axis is None:
        a = _core.reshape(a, (-1,))
        axis = 0
    axis = _axis(axis, a.ndim, "take")
    idx = _int_array(indices, "take")
    n = a.shape[axis]
    if mode == "wrap":
        idx = _core.mod(idx, n)
        mode = "clip"
    index = (slice(None),) * axis + (idx,)
    return dynamic_getitem(a, index, mode=mode or "fill", fill_value=fill_value)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """jnp.take_along_axis: arr[..., indices[..., j, ...], ...] along `axis`, the other axes
    broadcast between arr and indices."""
    arr = arr if isinstance(arr, Array) else _core.asarray(arr)
    idx = _int_array(indices, "take_along_axis")
    if axis is None:
        arr = _core.reshape(arr, (-1,))
        idx = _core.reshape(idx, (-1,))
        axis = 0
    if idx.ndim != arr.ndim:
        raise ValueError(f"take_along_axis: indices and arr must have the same number of dimensions, "
                         f"got {idx.ndim} and {arr.ndim}")
    axis = _axis(axis, arr.ndim, "take_along_axis")
    # Every other axis indexes with an iota broadcast against the indices (NumPy's rule).
    out_shape = []
    for d in range(arr.ndim):
        if d == axis:
            out_shape.append(idx.shape[d])
        elif arr.shape[d] == idx.shape[d] or idx.shape[d] == 1 or arr.shape[d] == 1:
            out_shape.append(arr.shape[d] if idx.shape[d] == 1 else idx.shape[d])
        else:
            raise ValueError(f"take_along_axis: shapes {arr.shape} and {idx.shape} do not broadcast off axis {axis}")
    full = tuple(out_shape)
    index = []
    for d in range(arr.ndim):
        if d == axis:
            index.append(_core.broadcast_to(idx, full))
        else:
            shape = [1] * arr.ndim
            shape[d] = full[d]
            iota = _core.reshape(_core.arange(full[d]), tuple(shape))
            index.append(_core.broadcast_to(iota, full))
    arr_b = _core.broadcast_to(arr, tuple(full[d] if d != axis else arr.shape[d] for d in range(arr.ndim)))
    return dynamic_getitem(arr_b, tuple(index), mode=mode or "fill", fill_value=fill_value)


def _start(st, n, k):
    """A block start as XLA takes it: negative counts from the end (JAX's
    allow_negative_indices), then clamped so a block of k fits in n."""
    st = _widen_index(st if isinstance(st, Array) else _core.asarray(st, dtype=_core.int64))
    if not _is_int_dtype(st.dtype):  # (a float or complex start is refused, as JAX does, never truncated)
        raise TypeError(f"dynamic slicing: start indices must be integers, got {st.dtype.name}")
    st = _core.astype(st, _core.int64)
    st = _core.where(st < 0, st + n, st)
    return _core.clip(st, 0, n - k)


def dynamic_slice(operand, start_indices, slice_sizes):
    """lax.dynamic_slice: the block of `slice_sizes` at traced `start_indices`, each start
    clamped so the block stays inside (as XLA)."""
    x = operand if isinstance(operand, Array) else _core.asarray(operand)
    starts = list(start_indices) if not isinstance(start_indices, Array) or start_indices.ndim else [start_indices]
    if isinstance(start_indices, Array) and start_indices.ndim == 1:
        starts = [start_indices[i] for i in range(start_indices.shape[0])]
    sizes = [operator.index(s) for s in slice_sizes]
    if len(starts) != x.ndim or len(sizes) != x.ndim:
        raise ValueError(f"dynamic_slice: need one start index and one size per axis of {x.shape}, "
                         f"got {len(starts)} and {len(sizes)}")
    for d, (n, k) in enumerate(zip(x.shape, sizes)):
        if not 0 <= k <= n:
            raise ValueError(f"dynamic_slice: slice size {k} on axis {d} does not fit in {n}")
    for d, (st, n, k) in enumerate(zip(starts, x.shape, sizes)):
        if k == n:
            continue
        st = _start(st, n, k)
        idx = st + _core.arange(k)
        x = _core._take(x, idx, d, False)
    return x


def dynamic_update_slice(operand, update, start_indices):
    """lax.dynamic_update_slice: `operand` with the block at traced `start_indices` replaced
    by `update` (starts clamped so the block fits, as XLA)."""
    x = operand if isinstance(operand, Array) else _core.asarray(operand)
    u = update if isinstance(update, Array) else _core.asarray(update)
    if isinstance(start_indices, Array) and start_indices.ndim == 1:
        starts = [start_indices[i] for i in range(start_indices.shape[0])]
    else:
        starts = list(start_indices)
    if len(starts) != x.ndim or u.ndim != x.ndim:
        raise ValueError(f"dynamic_update_slice: update {u.shape} and {len(starts)} start indices must match "
                         f"the rank of {x.shape}")
    flat = None
    stride = 1
    for d in reversed(range(x.ndim)):
        n, k = x.shape[d], u.shape[d]
        if k > n:
            raise ValueError(f"dynamic_update_slice: update {u.shape} does not fit in {x.shape}")
        st = _start(starts[d], n, k)
        shape = [1] * x.ndim
        shape[d] = k
        pos = _core.reshape((st + _core.arange(k)) * stride, tuple(shape))
        flat = pos if flat is None else flat + pos
        stride *= n
    flat = _core.broadcast_to(flat, u.shape)
    r = _core._scatter(_core.reshape(x, (-1,)), _core.reshape(flat, (-1,)),
                       _core.reshape(_core.astype(u, x.dtype), (-1,)), 0, 1, True)
    return _core.reshape(r, x.shape)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    operand = _core.asarray(operand)
    if not -operand.ndim <= axis < operand.ndim:
        raise ValueError(f"dynamic_index_in_dim: axis {axis} is out of range for an operand of rank {operand.ndim}")
    r = _core._take(operand, _start(index, operand.shape[axis], 1), axis, False)
    return _core.expand_dims(r, axis) if keepdims else r


# ---- sorting and selection

def argsort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """jnp.argsort: the stable sorting permutation along `axis` (NaN last)."""
    a = a if isinstance(a, Array) else _core.asarray(a)
    if order is not None:
        raise TypeError("argsort: `order` (structured arrays) is not supported")
    if axis is None:
        a = _core.reshape(a, (-1,))
        axis = -1
    if a.ndim == 0:
        raise ValueError("argsort: needs an array of rank >= 1")
    axis = _axis(axis, a.ndim, "argsort")
    last = axis == a.ndim - 1
    x = a if last else moveaxis(a, axis, -1)
    r = _complex_argsort(x, bool(descending)) if x.dtype in _COMPLEX else _core._argsort(x, bool(descending))
    return r if last else moveaxis(r, -1, axis)


def _complex_argsort(x, descending):
    """The stable sorting permutation of complex x along its last axis in JAX's order:
    lexicographic, by the real part and then the imaginary part (NaN last in each); descending
    is the reverse order with ties kept in their original order, as jnp.argsort's."""
    if descending:
        n = x.shape[-1]
        return (n - 1) - _core.flip(_complex_argsort(_core.flip(x, axis=-1), False), axis=-1)
    by_imag = _core._argsort(_core._imag(x), False)  # the secondary key first: stable sorts compose
    re = take_along_axis(_core._real(x), by_imag, axis=-1, mode="clip")
    return take_along_axis(by_imag, _core._argsort(re, False), axis=-1, mode="clip")


def sort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    """jnp.sort: a sorted along `axis` (NaN last); differentiable (the gradient follows the
    permutation)."""
    a = a if isinstance(a, Array) else _core.asarray(a)
    if axis is None:
        a = _core.reshape(a, (-1,))
        axis = -1
    perm = argsort(a, axis=axis, descending=descending)
    return take_along_axis(a, perm, axis=axis, mode="clip")


def _arg_extremum(a, axis, keepdims, largest, fname):
    a = a if isinstance(a, Array) else _core.asarray(a)
    ndim = a.ndim
    if axis is None:
        a = _core.reshape(a, (-1,))
        axis = 0
        flat = True
    else:
        flat = False
    if a.size == 0:
        raise ValueError(f"attempt to get {fname} of an empty sequence")
    _no_complex(fname, a, hint=_NO_ORDER)
    axis = _axis(axis, a.ndim, fname)
    if a.dtype == _core.bool_:
        a = _core.astype(a, _core.int32)
    m = _core.max(a, axis=axis, keepdims=True) if largest else _core.min(a, axis=axis, keepdims=True)
    hit = a == m
    if a.dtype in (_core.float32, _core.float64):
        # The first NaN wins (NumPy and JAX), since a NaN compares false with everything.
        hit = _core.where(_core.any(_core.isnan(a), axis=axis, keepdims=True), _core.isnan(a), hit)
    n = a.shape[axis]
    shape = [1] * a.ndim
    shape[axis] = n
    iota = _core.reshape(_core.arange(n), tuple(shape))
    r = _core.min(_core.where(hit, iota, n), axis=axis, keepdims=keepdims and not flat)
    if flat and keepdims:
        r = _core.reshape(r, (1,) * ndim)
    return r


def argmax(a, axis=None, out=None, keepdims=False):
    """jnp.argmax: the index of the first maximum (of the first NaN if any)."""
    return _arg_extremum(a, axis, keepdims, True, "argmax")


def argmin(a, axis=None, out=None, keepdims=False):
    """jnp.argmin: the index of the first minimum (of the first NaN if any)."""
    return _arg_extremum(a, axis, keepdims, False, "argmin")


def top_k(operand, k):
    """lax.top_k: the k largest entries along the last axis and their indices (ties: the
    lower index first)."""
    x = operand if isinstance(operand, Array) else _core.asarray(operand)
    _no_complex("top_k", x, hint=_NO_ORDER)
    k = operator.index(k)
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k={k} must be in [0, {x.shape[-1] if x.ndim else 0}] for an operand of shape {x.shape}")
    perm = _core._argsort(x, True)
    idx = perm[..., :k] if k else perm[..., :0]
    return take_along_axis(x, idx, axis=-1, mode="clip"), _core.astype(idx, _core.int32)  # int32, as JAX's


def searchsorted(a, v, side="left", sorter=None, *, method=None):
    """jnp.searchsorted: insertion indices of v into the sorted 1-D a (binary search)."""
    a = a if isinstance(a, Array) else _core.asarray(a)
    _no_complex("searchsorted", a, v, hint=_NO_ORDER)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {a.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        a = take(a, sorter, mode="clip")
    return _core.astype(_core._searchsorted(a, v, side == "right"), _core.int32)  # int32, as JAX's


def _check_size(size, fname):
    if size is None:
        raise ValueError(f"{fname}: size= is required: the number of results must be static under jit "
                         "(as JAX); pass the number to keep (extra slots take fill_value)")
    if isinstance(size, bool):
        raise TypeError(f"{fname}: size must be a non-negative int, got {size!r}")
    try:
        size = operator.index(size)
    except TypeError:
        raise TypeError(f"{fname}: size must be a non-negative int, got {type(size).__name__}") from None
    if size < 0:
        raise ValueError(f"{fname}: size must be non-negative, got {size}")
    return size


def _default_int():
    return _core.asarray(0).dtype


def nonzero(a, *, size=None, fill_value=None):
    """jnp.nonzero with a static `size`: the first `size` indices of the nonzero entries,
    one array per axis, padded with fill_value (default 0)."""
    a = a if isinstance(a, Array) else _core.asarray(a)
    if a.ndim == 0:
        raise ValueError("nonzero: not defined for 0-d arrays (as NumPy 2); use atleast_1d first")
    if size is None and not a._is_tracer:
        import numpy as np

        return tuple(_core.asarray(i, dtype=_default_int()) for i in np.nonzero(np.asarray(a)))
    size = _check_size(size, "nonzero")
    flat = flatnonzero(a, size=size, fill_value=-1)
    out = []
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * a.ndim
    rem = flat
    strides = []
    s = 1
    for n in reversed(a.shape):
        strides.append(s)
        s *= n
    strides.reverse()
    for d, stride in enumerate(strides):
        coord = _core.floor_divide(rem, stride) if stride != 1 else rem
        rem = _core.mod(rem, stride) if stride != 1 else rem
        f = fills[d] if fills[d] is not None else 0
        out.append(_core.where(flat < 0, f, coord))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """jnp.flatnonzero with a static `size`."""
    a = a if isinstance(a, Array) else _core.asarray(a)
    mask = _core.reshape(a != 0, (-1,))
    n = mask.shape[0]
    if size is None and not a._is_tracer:
        import numpy as np

        return _core.asarray(np.flatnonzero(np.asarray(mask)), dtype=_default_int())
    size = _check_size(size, "flatnonzero")
    # The k-th nonzero entry goes to slot k: its running count minus one; the rest drop.
    slot = _core.cumsum(_core.astype(mask, _core.int64)) - 1
    slot = _core.where(mask & (slot < size), slot, size)
    fill = 0 if fill_value is None else fill_value
    d = _default_int()  # int32 with x64 off, as JAX's
    out = _core.full((size,), fill, dtype=d) if size else _core.zeros((0,), dtype=d)
    if size == 0:
        return out
    return _core._scatter(out, slot, _core.arange(n, dtype=d), 0, 1, True)


def argwhere(a, *, size=None, fill_value=None):
    """jnp.argwhere with a static `size`: the (size, ndim) coordinates of nonzero entries."""
    from ._core import stack

    return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, size=None,
           fill_value=None, equal_nan=True):
    """jnp.unique of the flattened array with a static `size` (the first `size` distinct
    values in ascending order, padded with fill_value, default the smallest value)."""
    a = ar if isinstance(ar, Array) else _core.asarray(ar)
    if axis is not None:  # unique slices along axis (rows of a matrix for axis=0): eagerly, by NumPy
        if size is not None or a._is_tracer:
            raise NotImplementedError("unique: axis= works on concrete arrays without size= (NumPy's unique "
                                      "slices); under jit or with size= only the flattened array is supported")
        import numpy as np
        res = np.unique(np.asarray(a), return_index=return_index, return_inverse=return_inverse,
                        return_counts=return_counts, axis=axis, equal_nan=equal_nan)
        return tuple(_core.asarray(r) for r in res) if isinstance(res, tuple) else _core.asarray(res)
    x = _core.reshape(a, (-1,))
    if size is None and not x._is_tracer:
        import numpy as np

        res = np.unique(np.asarray(x), return_index=return_index, return_inverse=return_inverse,
                        return_counts=return_counts, equal_nan=equal_nan)
        return tuple(_core.asarray(r) for r in res) if isinstance(res, tuple) else _core.asarray(res)
    size = _check_size(size, "unique")
    _no_complex("unique", x, hint="with size= (under jit) the values are sorted, and complex numbers have no order "
                "here yet; call it eagerly without size=")
    n = x.shape[0]
    perm = _core._argsort(x, False)
    s = take(x, perm, mode="clip")
    first = _core.concat([_core.full((1,), True), s[1:] != s[:-1]]) if n > 1 else _core.full((n,), True)
    if x.dtype in (_core.float32, _core.float64) and equal_nan and n > 1:
        both_nan = _core.isnan(s[1:]) & _core.isnan(s[:-1])
        first = _core.concat([_core.full((1,), True), (s[1:] != s[:-1]) & ~both_nan])
    group = _core.cumsum(_core.astype(first, _core.int64)) - 1  # group of each sorted entry
    slot = _core.where(first & (group < size), group, size)
    # The default fill is the smallest value (the first sorted one: NaNs sort last), as jnp's.
    fill = (s[0] if n else _core.zeros((), dtype=x.dtype)) if fill_value is None else fill_value
    fill = fill if isinstance(fill, Array) else _core.asarray(fill, dtype=x.dtype)
    values = _core._scatter(_core.broadcast_to(_core.astype(fill, x.dtype), (size,)), slot, s, 0, 1, True)
    outs = [values]
    if return_index:
        first_index = _core.broadcast_to(_core.astype(perm[0], _core.int64), (size,)) if n else \
            _core.zeros((size,), dtype=_core.int64)  # padding: the smallest value's index, as jnp's
        outs.append(_core._scatter(first_index, slot, perm, 0, 1, True))
    if return_inverse:
        inv = _core._scatter(_core.zeros((n,), dtype=_core.int64), perm, group, 0, 1, True)
        outs.append(_core.reshape(inv, a.shape))
    if return_counts:
        outs.append(_core._scatter(_core.zeros((size,), dtype=_core.int64), _core.where(group < size, group, size),
                                   _core.ones((n,), dtype=_core.int64), 0, 0, False))
    return outs[0] if len(outs) == 1 else tuple(outs)
