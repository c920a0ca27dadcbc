"""More of jax.lax, as compositions of Quabla's own functions: XLA's general gather and
scatter (with jax.lax's GatherDimensionNumbers / ScatterDimensionNumbers), the transposed
and local convolutions and their shape helpers, and the remaining small elementwise,
shape and bit-level names (reduce_precision, nextafter, clz, mulhi, bitcast_convert_type,
select_n, sort_key_val, split, ...).

gather and scatter are lowered onto Quabla's advanced indexing: every output (or update)
element gets its operand coordinate on each axis as an integer array, and x[coords] or
x.at[coords].add(...) does the rest. So they jit, vmap and differentiate as indexing does
(a gather's derivative is a scatter-add), for every layout XLA allows with the index
vector on the last axis of the indices (jax.lax's convention).
"""
from __future__ import annotations

import builtins as _builtins
import enum as _enum
import math as _math
import operator as _operator
from typing import Any, Callable, NamedTuple, Sequence, Tuple, Union

from ._package import qb as _qb

__all__ = [
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather", "scatter", "scatter_add",
    "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply", "index_take", "batch_matmul",
    "broadcast_shapes", "broadcast_to_rank", "broadcast_like", "collapse", "stack", "unstack", "tile", "split",
    "dynamic_update_index_in_dim", "reciprocal", "reduce_precision", "select_n", "sort_key_val", "optimization_barrier",
    "nextafter", "clz", "mulhi", "empty", "dtype", "zeta", "approx_max_k", "approx_min_k", "reduce_xor",
    "bitcast_convert_type", "igamma_grad_a", "random_gamma_grad", "conv_transpose", "conv_general_dilated_patches",
    "conv_general_dilated_local", "conv_general_permutations", "conv_shape_tuple", "conv_general_shape_tuple",
    "conv_transpose_shape_tuple", "padtype_to_pads", "reduce_window_shape_tuple", "DotDimensionNumbers",
    "ConvGeneralDilatedDimensionNumbers", "PrecisionLike",
]

# Type names jax.lax exports for annotations.
DotDimensionNumbers = Tuple[Tuple[Sequence[int], Sequence[int]], Tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = Union[None, Tuple[str, str, str], Any]
PrecisionLike = Union[None, str, _enum.Enum, Tuple[Any, Any]]


# -- small helpers -------------------------------------------------------------------------------

def _arr(x):
    return x if isinstance(x, _qb.Array) else _qb.asarray(x)


def _ints():
    return (_qb.int8, _qb.int16, _qb.int32, _qb.int64, _qb.uint8, _qb.uint16, _qb.uint32)


def _floats():
    return (_qb.float32, _qb.float64)


def _is_pyint(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pyint(v, name: str, what: str) -> int:
    """v as a Python int (NumPy integers accepted), else TypeError naming the argument."""
    if isinstance(v, bool) or not hasattr(v, "__index__") or isinstance(v, _qb.Array):
        raise TypeError(f"{name}: {what} must be a Python int, got {type(v).__name__} {v!r}")
    return _operator.index(v)


def _axis(axis, ndim: int, name: str) -> int:
    axis = _pyint(axis, name, "axis")
    if not -ndim <= axis < _builtins.max(ndim, 1):
        raise ValueError(f"{name}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim if ndim else 0


def _float_array(x, name: str):
    x = _arr(x)
    if x.dtype not in _floats():
        raise TypeError(f"{name}: needs a float32 or float64 array, got {x.dtype.name}; convert with "
                        f".astype(qb.float32) or .astype(qb.float64)")
    return x


def _int_array(x, name: str):
    x = _arr(x)
    if x.dtype not in _ints():
        raise TypeError(f"{name}: needs an integer array, got {x.dtype.name}")
    return x


def _same_dtype(name: str, *xs):
    dts = [x.dtype for x in xs]
    if any(d != dts[0] for d in dts):
        raise TypeError(f"{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(d.name for d in dts)}; convert with .astype (as in JAX, lax does not promote)")


# -- gather / scatter ------------------------------------------------------------------------------

class GatherScatterMode(_enum.Enum):
    """jax.lax.GatherScatterMode: how gather and scatter treat indices out of bounds.

    CLIP clamps every start so the whole window is inside; FILL_OR_DROP fills a gathered
    window that is not wholly inside with fill_value and drops such a scattered window;
    PROMISE_IN_BOUNDS clamps gathers and drops scatters (what XLA does with bad indices).
    ONE_HOT (a lowering strategy of newer JAX) is not supported."""
    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s):
        """A mode from a GatherScatterMode (Quabla's or JAX's), its string ('clip', 'fill',
        'drop', 'promise_in_bounds', 'one_hot') or None (FILL_OR_DROP, as JAX)."""
        if isinstance(s, GatherScatterMode):
            return s
        if s is None:
            return GatherScatterMode.FILL_OR_DROP
        if type(s).__name__ == "GatherScatterMode" and getattr(s, "name", None) in GatherScatterMode.__members__:
            return GatherScatterMode[s.name]  # jax.lax's own enum
        named = {"clip": GatherScatterMode.CLIP, "fill": GatherScatterMode.FILL_OR_DROP,
                 "drop": GatherScatterMode.FILL_OR_DROP, "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
                 "one_hot": GatherScatterMode.ONE_HOT}
        if isinstance(s, str) and s in named:
            return named[s]
        raise ValueError(f'Unknown gather mode "{s}"; use "clip", "fill" (or "drop"), "promise_in_bounds", a '
                         f"lax.GatherScatterMode or None")


def _mode(mode, default, name):
    m = default if mode is None else GatherScatterMode.from_any(mode)
    if m is GatherScatterMode.ONE_HOT:
        raise NotImplementedError(f"{name}: mode ONE_HOT is not supported; use 'clip', 'fill' or "
                                  f"'promise_in_bounds' (the results are the same for in-bounds indices)")
    return m


class GatherDimensionNumbers(NamedTuple):
    """jax.lax.GatherDimensionNumbers (XLA's gather layout; the index vector is the last axis
    of start_indices).

    offset_dims: the output axes that hold the slice's (uncollapsed) axes, sorted.
    collapsed_slice_dims: operand axes of slice size 1 left out of the output, sorted.
    start_index_map: for each entry of an index vector, the operand axis it starts.
    operand_batching_dims / start_indices_batching_dims: operand axes (slice size 1) taken
    at the position of the paired batch axis of start_indices."""
    offset_dims: Tuple[int, ...]
    collapsed_slice_dims: Tuple[int, ...]
    start_index_map: Tuple[int, ...]
    operand_batching_dims: Tuple[int, ...] = ()
    start_indices_batching_dims: Tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """jax.lax.ScatterDimensionNumbers (XLA's scatter layout; the index vector is the last
    axis of scatter_indices).

    update_window_dims: the axes of updates that are window axes, sorted.
    inserted_window_dims: operand axes of window size 1 absent from updates, sorted.
    scatter_dims_to_operand_dims: for each entry of an index vector, the operand axis it
    starts. operand_batching_dims / scatter_indices_batching_dims: operand axes taken at
    the position of the paired batch axis of scatter_indices."""
    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


def _dnums(dn, fields, cls, name):
    """The fields of dimension numbers (Quabla's class, JAX's, or any object with the
    fields) as tuples of Python ints."""
    out = []
    for f in fields:
        if not hasattr(dn, f):
            raise TypeError(f"{name}: dimension_numbers must be a lax.{cls} (fields {', '.join(fields)}), got "
                            f"{type(dn).__name__} {dn!r}")
        v = getattr(dn, f)
        try:
            out.append(tuple(_pyint(d, name, f"dimension_numbers.{f}") for d in v))
        except TypeError:
            raise TypeError(f"{name}: dimension_numbers.{f} must be a sequence of ints, got {v!r}") from None
    return out


def _check_dims(dims, bound, name, field, *, sorted_=False):
    for d in dims:
        if not 0 <= d < bound:
            raise TypeError(f"{name}: dimension_numbers.{field} {dims} has {d}, outside [0, {bound})")
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name}: dimension_numbers.{field} {dims} repeats a dimension")
    if sorted_ and list(dims) != sorted(dims):
        raise TypeError(f"{name}: dimension_numbers.{field} {dims} must be sorted")


def _index_array(idx, name):
    idx = _arr(idx)
    if idx.dtype not in _ints():
        raise TypeError(f"{name}: indices must have an integer type (int32 or int64), got {idx.dtype.name}; "
                        f"convert with .astype(qb.int32)")
    if idx.ndim < 1:
        raise TypeError(f"{name}: indices must have rank >= 1 (their last axis holds the index vectors), got a "
                        f"scalar; reshape it to (1,)")
    return idx.astype(_qb.int64) if idx.dtype != _qb.int64 else idx


def _placed(a, positions, rank):
    """a (whose axes go to `positions` of a rank-`rank` result, in order) with size-1 axes
    elsewhere, ready to broadcast."""
    shape = [1] * rank
    for p, n in zip(positions, a.shape):
        shape[p] = n
    return a.reshape(tuple(shape))


def _iota_at(n, p, rank):
    return _placed(_qb.arange(n, dtype=_qb.int64), [p], rank)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode=None, fill_value=None):
    """jax.lax.gather: XLA's general gather. For each index vector of start_indices (its last
    axis), the slice of slice_sizes starting there (start_index_map naming the operand
    axes it starts), laid out by dimension_numbers (a lax.GatherDimensionNumbers).

    mode None or 'clip' or 'promise_in_bounds' clamps each start so the slice fits (XLA's
    behaviour, as jax.lax.gather without a mode); 'fill' gives fill_value (NaN for floats,
    the minimum for ints, True for bools) for every slice that does not fit. Negative
    indices are out of bounds (no wrapping at the lax level)."""
    name = "lax.gather"
    x = _arr(operand)
    idx = _index_array(start_indices, name)
    off, coll, sim, obd, sibd = _dnums(dimension_numbers, GatherDimensionNumbers._fields, "GatherDimensionNumbers",
                                       name)
    m = _mode(mode, GatherScatterMode.CLIP, name)
    rank = x.ndim
    try:
        sizes = tuple(_pyint(s, name, "slice_sizes") for s in slice_sizes)
    except TypeError:
        raise TypeError(f"{name}: slice_sizes must be a sequence of ints, got {slice_sizes!r}") from None
    if len(sizes) != rank:
        raise TypeError(f"{name}: slice_sizes {sizes} must have one entry per operand axis ({rank})")
    for d, (s, n) in enumerate(zip(sizes, x.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"{name}: slice size {s} on axis {d} must be in [0, {n}] (the operand's size)")
    batch_shape = tuple(idx.shape[:-1])
    nb = len(batch_shape)
    out_rank = nb + len(off)
    _check_dims(off, out_rank, name, "offset_dims", sorted_=True)
    _check_dims(coll, rank, name, "collapsed_slice_dims", sorted_=True)
    _check_dims(obd, rank, name, "operand_batching_dims", sorted_=True)
    _check_dims(sim, rank, name, "start_index_map")
    _check_dims(sibd, _builtins.max(nb, 0), name, "start_indices_batching_dims")
    if len(sim) != idx.shape[-1]:
        raise TypeError(f"{name}: start_index_map {sim} must have one entry per index vector element "
                        f"(start_indices.shape[-1] = {idx.shape[-1]})")
    if set(coll) & set(obd) or set(sim) & set(obd):
        raise TypeError(f"{name}: operand_batching_dims {obd} may not be collapsed_slice_dims or in start_index_map")
    for d in coll + obd:
        if sizes[d] != 1:
            raise TypeError(f"{name}: collapsed and batching operand axes need slice size 1, but axis {d} has "
                            f"{sizes[d]}")
    if len(obd) != len(sibd):
        raise TypeError(f"{name}: operand_batching_dims {obd} and start_indices_batching_dims {sibd} must pair up")
    for a, b in zip(obd, sibd):
        if x.shape[a] != idx.shape[b]:
            raise TypeError(f"{name}: operand batching axis {a} ({x.shape[a]}) and indices batching axis {b} "
                            f"({idx.shape[b]}) differ in size")
    window = [d for d in range(rank) if d not in coll and d not in obd]
    if len(window) != len(off):
        raise TypeError(f"{name}: offset_dims {off} must name one output axis for each operand axis that is not "
                        f"collapsed or batching ({len(window)}: {tuple(window)})")
    batch_pos = [p for p in range(out_rank) if p not in off]
    out_shape = [0] * out_rank
    for p, n in zip(batch_pos, batch_shape):
        out_shape[p] = n
    for p, d in zip(off, window):
        out_shape[p] = sizes[d]
    out_shape = tuple(out_shape)
    if rank == 0:
        return _qb.broadcast_to(x, out_shape)
    ok = None
    coords = [None] * rank
    for k, d in enumerate(sim):
        s = idx[..., k]
        hi = x.shape[d] - sizes[d]
        if m is GatherScatterMode.FILL_OR_DROP:
            inside = (s >= 0) & (s <= hi)
            ok = inside if ok is None else ok & inside
        coords[d] = _placed(_qb.clip(s, 0, _builtins.max(hi, 0)), batch_pos, out_rank)
    for a, b in zip(obd, sibd):
        coords[a] = _iota_at(batch_shape[b], batch_pos[b], out_rank)
    for p, d in zip(off, window):
        w = _iota_at(sizes[d], p, out_rank)
        coords[d] = w if coords[d] is None else coords[d] + w
    coords = [_qb.broadcast_to(_qb.zeros((), dtype=_qb.int64) if c is None else c, out_shape) for c in coords]
    out = x[tuple(coords)]
    if ok is not None:
        from ._indexing import _default_fill
        fill = _default_fill(x.dtype) if fill_value is None else fill_value
        fill = _arr(fill).astype(x.dtype)
        out = _qb.where(_placed(ok, batch_pos, out_rank), out, fill)
    return out


def _scatter_coords(name, x, idx, u_shape, dimension_numbers, m):
    """For each element of the updates, its operand coordinate on every axis (arrays of
    updates' shape), a window that does not fit sent out of bounds (dropped) unless m
    clamps it."""
    uwd, iwd, sdod, obd, sibd = _dnums(dimension_numbers, ScatterDimensionNumbers._fields,
                                       "ScatterDimensionNumbers", name)
    rank = x.ndim
    batch_shape = tuple(idx.shape[:-1])
    nb = len(batch_shape)
    ur = len(u_shape)
    if ur != nb + len(uwd):
        raise TypeError(f"{name}: updates must have rank {nb + len(uwd)} (the {nb} batch axes of the indices plus "
                        f"{len(uwd)} update_window_dims), got rank {ur} (shape {tuple(u_shape)})")
    _check_dims(uwd, ur, name, "update_window_dims", sorted_=True)
    _check_dims(iwd, rank, name, "inserted_window_dims", sorted_=True)
    _check_dims(obd, rank, name, "operand_batching_dims", sorted_=True)
    _check_dims(sdod, rank, name, "scatter_dims_to_operand_dims")
    _check_dims(sibd, _builtins.max(nb, 0), name, "scatter_indices_batching_dims")
    if len(sdod) != idx.shape[-1]:
        raise TypeError(f"{name}: scatter_dims_to_operand_dims {sdod} must have one entry per index vector element "
                        f"(scatter_indices.shape[-1] = {idx.shape[-1]})")
    if set(iwd) & set(obd) or set(sdod) & set(obd):
        raise TypeError(f"{name}: operand_batching_dims {obd} may not be inserted_window_dims or in "
                        f"scatter_dims_to_operand_dims")
    if len(uwd) + len(iwd) + len(obd) != rank:
        raise TypeError(f"{name}: update_window_dims {uwd}, inserted_window_dims {iwd} and operand_batching_dims "
                        f"{obd} must account for the operand's {rank} axes")
    if len(obd) != len(sibd):
        raise TypeError(f"{name}: operand_batching_dims {obd} and scatter_indices_batching_dims {sibd} must pair up")
    for a, b in zip(obd, sibd):
        if x.shape[a] != idx.shape[b]:
            raise TypeError(f"{name}: operand batching axis {a} ({x.shape[a]}) and indices batching axis {b} "
                            f"({idx.shape[b]}) differ in size")
    scatter_pos = [p for p in range(ur) if p not in uwd]
    if tuple(u_shape[p] for p in scatter_pos) != batch_shape:
        raise TypeError(f"{name}: the scatter axes of updates {tuple(u_shape[p] for p in scatter_pos)} must equal "
                        f"the batch axes of the indices {batch_shape}")
    window = [d for d in range(rank) if d not in iwd and d not in obd]
    wsize = [1] * rank
    for p, d in zip(uwd, window):
        if u_shape[p] > x.shape[d]:
            raise TypeError(f"{name}: the update window of {u_shape[p]} on updates axis {p} is larger than operand "
                            f"axis {d} ({x.shape[d]})")
        wsize[d] = u_shape[p]
    u_shape = tuple(u_shape)
    if rank == 0:
        return [_qb.zeros(u_shape, dtype=_qb.int64)], True
    coords = [None] * rank
    ok = None
    for k, d in enumerate(sdod):
        s = idx[..., k]
        hi = x.shape[d] - wsize[d]
        if m is GatherScatterMode.CLIP:
            s = _qb.clip(s, 0, _builtins.max(hi, 0))
        else:
            inside = (s >= 0) & (s <= hi)
            ok = inside if ok is None else ok & inside
        coords[d] = _placed(s, scatter_pos, ur)
    for a, b in zip(obd, sibd):
        coords[a] = _iota_at(batch_shape[b], scatter_pos[b], ur)
    for p, d in zip(uwd, window):
        w = _iota_at(wsize[d], p, ur)
        coords[d] = w if coords[d] is None else coords[d] + w
    coords = [_qb.broadcast_to(_qb.zeros((), dtype=_qb.int64) if c is None else c, u_shape) for c in coords]
    if ok is not None:  # a window not wholly inside goes out of bounds on axis 0: the scatter drops it
        coords[0] = _qb.where(_qb.broadcast_to(_placed(ok, scatter_pos, ur), u_shape), coords[0], x.shape[0])
    return coords, False


def _scatter(name, how, operand, scatter_indices, updates, dimension_numbers, mode, unique_indices):
    x = _arr(operand)
    idx = _index_array(scatter_indices, name)
    if isinstance(updates, _qb.Array):
        u = updates
    else:
        u = _qb.asarray(updates, dtype=x.dtype) if isinstance(updates, (int, float)) else _qb.asarray(updates)
    _same_dtype(name, x, u)
    if how in ("add", "sub", "mul") and x.dtype == _qb.bool_:
        raise TypeError(f"{name} does not accept bool arrays (as in JAX); use scatter (set), scatter_max or "
                        f"scatter_min, or convert to an integer dtype")
    m = _mode(mode, GatherScatterMode.FILL_OR_DROP, name)
    coords, scalar = _scatter_coords(name, x, idx, tuple(u.shape), dimension_numbers, m)
    y = x.reshape((1,)) if scalar else x
    as_bool = x.dtype == _qb.bool_ and how in ("min", "max")  # and / or, through 0 / 1
    if as_bool:
        y, u = y.astype(_qb.int32), u.astype(_qb.int32)
    ref = y.at[tuple(coords)]
    if how == "set":
        out = ref.set(u, unique_indices=unique_indices)
    elif how == "add":
        out = ref.add(u)
    elif how == "sub":
        out = ref.add(-u)
    elif how == "mul":
        out = ref.multiply(u, unique_indices=unique_indices)
    elif how == "min":
        out = ref.min(u)
    else:
        out = ref.max(u)
    if as_bool:
        out = out != 0
    return out.reshape(()) if scalar else out


_SCATTER_DOC = """jax.lax.{name}: operand with updates {what} at the windows that scatter_indices
    (index vectors on its last axis) start, laid out by dimension_numbers (a
    lax.ScatterDimensionNumbers). mode None, 'fill'/'drop' or 'promise_in_bounds' drops
    every window that is not wholly inside; 'clip' clamps its start so it fits. Negative
    indices are out of bounds. updates must have the operand's dtype."""


def scatter(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode=None):
    return _scatter("lax.scatter", "set", operand, scatter_indices, updates, dimension_numbers, mode, unique_indices)


def scatter_add(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode=None):
    return _scatter("lax.scatter_add", "add", operand, scatter_indices, updates, dimension_numbers, mode,
                    unique_indices)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode=None):
    return _scatter("lax.scatter_sub", "sub", operand, scatter_indices, updates, dimension_numbers, mode,
                    unique_indices)


def scatter_mul(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode=None):
    return _scatter("lax.scatter_mul", "mul", operand, scatter_indices, updates, dimension_numbers, mode,
                    unique_indices)


def scatter_min(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode=None):
    return _scatter("lax.scatter_min", "min", operand, scatter_indices, updates, dimension_numbers, mode,
                    unique_indices)


def scatter_max(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode=None):
    return _scatter("lax.scatter_max", "max", operand, scatter_indices, updates, dimension_numbers, mode,
                    unique_indices)


for _f, _what in ((scatter, "written (one of several landing on one element wins)"), (scatter_add, "added"),
                  (scatter_sub, "subtracted"), (scatter_mul, "multiplied in (its derivative with respect to the "
                                                             "updates needs unique_indices=True)"),
                  (scatter_min, "combined by minimum"), (scatter_max, "combined by maximum")):
    _f.__doc__ = _SCATTER_DOC.format(name=_f.__name__, what=_what)
del _f, _what


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *, update_shape=(),
                  indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    """jax.lax.scatter_apply: func (a scalar function, applied elementwise) applied to the
    operand elements the scatter of an update of update_shape would reach, once per time
    an element is reached (as JAX: a repeated index applies func again). JAX gives it no
    derivative; here it is differentiable when unique_indices=True, and with repeated
    indices eagerly (not under jit: the repeat count is a traced loop bound there)."""
    name = "lax.scatter_apply"
    if not callable(func):
        raise TypeError(f"{name}: func must be callable, got {type(func).__name__}")
    x = _arr(operand)
    idx = _index_array(scatter_indices, name)
    try:
        u_shape = tuple(_pyint(s, name, "update_shape") for s in update_shape)
    except TypeError:
        raise TypeError(f"{name}: update_shape must be a sequence of ints, got {update_shape!r}") from None
    m = _mode(mode, GatherScatterMode.FILL_OR_DROP, name)
    coords, scalar = _scatter_coords(name, x, idx, u_shape, dimension_numbers, m)
    y = x.reshape((1,)) if scalar else x
    flat_f = _qb.vmap(lambda v: _arr(func(v)).astype(x.dtype))

    def f(a):
        return flat_f(a.reshape((-1,))).reshape(a.shape)
    if unique_indices:
        ref = y.at[tuple(coords)]
        out = ref.set(f(ref.get(mode="clip")), unique_indices=True)
    else:
        count = _qb.zeros(y.shape, dtype=_qb.int32).at[tuple(coords)].add(1)
        out = _qb.lax.fori_loop(0, _qb.max(count) if count.size else 0,
                                lambda r, v: _qb.where(count > r, f(v), v), y)
    return out.reshape(()) if scalar else out


def index_take(src, idxs, axes):
    """jax.lax.index_take: src at the points whose coordinates along `axes` are given by the
    1-D index arrays idxs (one per axis, of one length n): shape (n,) + the other axes of
    src. Indices are taken modulo their axis's size (as JAX: -1 is the last, n the first)."""
    name = "lax.index_take"
    x = _arr(src)
    idxs = [_arr(i) for i in (idxs if isinstance(idxs, (tuple, list)) else (idxs,))]
    axes = tuple(_pyint(a, name, "axes") for a in axes)
    if len(idxs) != len(axes):
        raise ValueError(f"{name}: {len(idxs)} index arrays for {len(axes)} axes; give one per axis")
    if any(i.ndim != 1 for i in idxs) or len({i.shape[0] for i in idxs}) > 1:
        raise ValueError(f"{name}: idxs must be 1-D index arrays of one length, got shapes "
                         f"{[tuple(i.shape) for i in idxs]}")
    if not idxs:
        raise ValueError(f"{name}: needs at least one axis to index")
    for i in idxs:
        if i.dtype not in _ints():
            raise TypeError(f"{name}: indices must be integers, got {i.dtype.name}")
    for a in axes:
        if not 0 <= a < x.ndim or x.shape[a] == 0:
            raise ValueError(f"{name}: axis {a} is out of range or empty for src of shape {tuple(x.shape)}")
    vec = _qb.stack([_qb.mod(i.astype(_qb.int64), x.shape[a]) for i, a in zip(idxs, axes)], axis=1)
    rest = x.ndim - len(axes)
    sizes = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, 1 + rest)), collapsed_slice_dims=tuple(sorted(axes)),
                                start_index_map=axes)
    return gather(x, vec, dn, sizes)


# -- products, shapes and simple array functions -------------------------------------------------

def batch_matmul(lhs, rhs, precision=None):
    """jax.lax.batch_matmul: matrix products over matching leading (batch) axes; lhs and
    rhs need one rank >= 2 and equal batch shapes (no broadcasting, as in JAX)."""
    _qb.lax._check_precision(precision, "lax.batch_matmul")
    a, b = _arr(lhs), _arr(rhs)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"lax.batch_matmul: arguments must have rank >= 2, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    if a.ndim != b.ndim:
        raise ValueError(f"lax.batch_matmul: arguments must have the same ndim, got {a.ndim} and {b.ndim}")
    if a.shape[:-2] != b.shape[:-2]:
        raise TypeError(f"lax.batch_matmul: batch shapes {tuple(a.shape[:-2])} and {tuple(b.shape[:-2])} must be "
                        f"equal (lax does not broadcast; use qb.matmul for broadcasting)")
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"lax.batch_matmul: contracting sizes differ: lhs {tuple(a.shape)}, rhs {tuple(b.shape)}")
    nb = a.ndim - 2
    batch = tuple(range(nb))
    return _qb.lax.dot_general(a, b, (((a.ndim - 1,), (nb,)), (batch, batch)))


def broadcast_shapes(*shapes):
    """jax.lax.broadcast_shapes: the NumPy broadcast of shapes (tuples of ints) as a tuple;
    ValueError when they do not broadcast."""
    ts = []
    for s in shapes:
        try:
            ts.append(tuple(_pyint(n, "lax.broadcast_shapes", "a shape entry") for n in s))
        except TypeError:
            raise TypeError(f"lax.broadcast_shapes: shapes must be sequences of ints, got {s!r}") from None
    if not ts:
        return ()
    try:
        return tuple(_qb.broadcast_shapes(*ts))
    except ValueError:
        raise ValueError(f"lax.broadcast_shapes: incompatible shapes for broadcasting: shapes={ts}") from None


def broadcast_to_rank(x, rank: int):
    """jax.lax.broadcast_to_rank: x with leading size-1 axes up to rank (x itself when its
    rank is already at least rank)."""
    x = _arr(x)
    rank = _pyint(rank, "lax.broadcast_to_rank", "rank")
    if x.ndim >= rank:
        return x
    return x.reshape((1,) * (rank - x.ndim) + tuple(x.shape))


def broadcast_like(arr, like_arr):
    """jax.lax.broadcast_like: arr broadcast (NumPy's rules) to the shape of like_arr."""
    x, like = _arr(arr), _arr(like_arr)
    try:
        return _qb.broadcast_to(x, tuple(like.shape))
    except ValueError:
        raise ValueError(f"lax.broadcast_like: shape {tuple(x.shape)} does not broadcast to "
                         f"{tuple(like.shape)}") from None


def collapse(operand, start_dimension: int, stop_dimension=None):
    """jax.lax.collapse: the axes start_dimension..stop_dimension - 1 merged into one
    (negative dimensions count from the end; stop None means through the last axis)."""
    x = _arr(operand)
    nd = x.ndim
    start = _pyint(start_dimension, "lax.collapse", "start_dimension")
    stop = nd if stop_dimension is None else _pyint(stop_dimension, "lax.collapse", "stop_dimension")
    start = start + nd if start < 0 else start
    stop = stop + nd if stop < 0 else stop
    if not 0 <= start <= stop <= nd:
        raise ValueError(f"lax.collapse: invalid dimension range {tuple(x.shape)}[{start_dimension}:{stop_dimension}]; "
                         f"need 0 <= start <= stop <= {nd}")
    size = _math.prod(x.shape[start:stop])
    return x.reshape(tuple(x.shape[:start]) + (size,) + tuple(x.shape[stop:]))


def stack(operands, axis: int = 0):
    """jax.lax.stack: arrays of one shape and dtype joined along a new axis."""
    xs = [_arr(o) for o in operands]
    if not xs:
        raise ValueError("lax.stack: needs at least one array")
    _same_dtype("lax.stack", *xs)
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError(f"lax.stack: all input arrays must have the same shape, got "
                         f"{', '.join(str(tuple(x.shape)) for x in xs)}")
    ax = _pyint(axis, "lax.stack", "axis")
    if not -(xs[0].ndim + 1) <= ax <= xs[0].ndim:
        raise ValueError(f"lax.stack: axis {ax} is out of range for a result of rank {xs[0].ndim + 1}")
    return _qb.stack(xs, axis=ax)


def unstack(x, axis: int = 0):
    """jax.lax.unstack: the slices of x along axis, as a tuple."""
    x = _arr(x)
    if x.ndim == 0:
        raise ValueError("lax.unstack: needs an array of rank >= 1")
    ax = _axis(axis, x.ndim, "lax.unstack")
    return tuple(_qb.unstack(x, axis=ax))


def tile(operand, reps):
    """jax.lax.tile: operand repeated reps[i] times along axis i (one non-negative rep per
    axis)."""
    x = _arr(operand)
    reps = tuple(_pyint(r, "lax.tile", "reps") for r in reps)
    if len(reps) != x.ndim:
        raise TypeError(f"lax.tile: reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
                        f"x.ndim={x.ndim}")
    if any(r < 0 for r in reps):
        raise ValueError(f"lax.tile: reps must be non-negative, got {reps}")
    return _qb.tile(x, reps)


def split(operand, sizes, axis: int = 0):
    """jax.lax.split: operand cut along axis into consecutive pieces of the given sizes
    (which must add up to the axis's length); a list."""
    x = _arr(operand)
    ax = _axis(axis, x.ndim, "lax.split")
    sizes = [_pyint(s, "lax.split", "sizes") for s in sizes]
    if any(s < 0 for s in sizes):
        raise ValueError(f"lax.split: sizes must be non-negative, got {sizes}")
    if sum(sizes) != x.shape[ax]:
        raise ValueError(f"lax.split: sizes {sizes} add up to {sum(sizes)}, not to dimension {ax} of the operand "
                         f"shape {tuple(x.shape)} ({x.shape[ax]})")
    out, start = [], 0
    for s in sizes:
        index = [_builtins.slice(None)] * x.ndim
        index[ax] = _builtins.slice(start, start + s)
        out.append(x[tuple(index)])
        start += s
    return out


def dynamic_update_index_in_dim(operand, update, index, axis: int, *, allow_negative_indices: bool = True):
    """jax.lax.dynamic_update_index_in_dim: operand with the slice at a (traced) index along
    axis replaced by update (with or without that axis); the index is clamped into range,
    a negative one counting from the end unless allow_negative_indices=False."""
    x, u = _arr(operand), _arr(update)
    ax = _axis(axis, x.ndim, "lax.dynamic_update_index_in_dim")
    if u.ndim == x.ndim - 1:
        u = _qb.expand_dims(u, ax)
    if u.ndim != x.ndim or u.shape[ax] != 1:
        raise ValueError(f"lax.dynamic_update_index_in_dim: update of shape {tuple(u.shape)} must be one slice of "
                         f"{tuple(x.shape)} along axis {ax} (with or without that axis)")
    if not allow_negative_indices:
        index = _qb.maximum(_arr(index), 0)
    return _qb.lax.dynamic_update_slice_in_dim(x, u.astype(x.dtype), index, ax)


def reciprocal(x):
    """jax.lax.reciprocal: 1 / x for float and complex arrays."""
    x = _arr(x)
    if x.dtype not in _floats() and x.dtype not in (_qb.complex64, _qb.complex128):
        raise TypeError(f"lax.reciprocal: needs a float array, got {x.dtype.name} (integers cannot be raised to "
                        f"negative powers, as in JAX); convert with .astype(qb.float64)")
    return 1.0 / x


def select_n(which, *cases):
    """jax.lax.select_n: cases[which] elementwise. which is a bool (two cases at most) or an
    integer array, scalar or of the cases' shape; the cases share one shape and dtype.
    Values of which outside [0, len(cases)) pick the nearest end."""
    if not cases:
        raise ValueError("lax.select_n: must have at least one case")
    cs = [_arr(c) for c in cases]
    _same_dtype("lax.select_n", *cs)
    if any(c.shape != cs[0].shape for c in cs):
        raise TypeError(f"lax.select_n: all cases must have the same shape, got "
                        f"{', '.join(str(tuple(c.shape)) for c in cs)}")
    w = _arr(which)
    if w.dtype != _qb.bool_ and w.dtype not in _ints():
        raise TypeError(f"lax.select_n: which must be boolean or integer type, got {w.dtype.name}")
    if w.shape != () and w.shape != cs[0].shape:
        raise TypeError(f"lax.select_n: which must be scalar or have the same shape as cases, got which shape "
                        f"{tuple(w.shape)} but case shape {tuple(cs[0].shape)}")
    if w.dtype == _qb.bool_ and len(cs) > 2:
        raise TypeError("lax.select_n: a boolean which cannot have more than 2 cases; use an integer which")
    if len(cs) == 1:
        return cs[0]
    if w.dtype == _qb.bool_:
        return _qb.broadcast_to(_qb.where(w, cs[1], cs[0]), tuple(cs[0].shape))

    def pick(lo, hi):  # cases[lo:hi] by bisection
        if hi - lo == 1:
            return cs[lo]
        mid = (lo + hi) // 2
        return _qb.where(w < mid, pick(lo, mid), pick(mid, hi))
    return _qb.broadcast_to(pick(0, len(cs)), tuple(cs[0].shape))


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """jax.lax.sort_key_val: keys sorted along dimension (stably, NaN last) and values
    permuted alongside; keys and values share one shape."""
    k, v = _arr(keys), _arr(values)
    if k.shape != v.shape:
        raise TypeError(f"lax.sort_key_val: keys and values must have equal shapes, got {tuple(k.shape)} and "
                        f"{tuple(v.shape)}")
    if k.ndim == 0:
        raise ValueError("lax.sort_key_val: needs arrays of rank >= 1")
    ax = _axis(dimension, k.ndim, "lax.sort_key_val")
    perm = _qb.argsort(k, axis=ax)
    return (_qb.take_along_axis(k, perm, axis=ax, mode="clip"), _qb.take_along_axis(v, perm, axis=ax, mode="clip"))


def optimization_barrier(operand):
    """jax.lax.optimization_barrier: the identity on a pytree of arrays (its leaves as
    arrays). Quabla's compiler has no pass it would need to hold back."""
    return _qb.tree.map(_arr, operand)


def nextafter(x1, x2):
    """jax.lax.nextafter: the next float after x1 toward x2 (float arrays of one dtype)."""
    a = _float_array(x1, "lax.nextafter")
    b = _float_array(x2, "lax.nextafter")
    _same_dtype("lax.nextafter", a, b)
    return _qb.nextafter(a, b)


def clz(x):
    """jax.lax.clz: the number of leading zero bits of each int32 / int64 (of its two's
    complement bits: 0 for negatives, the bit width for 0)."""
    x = _int_array(x, "lax.clz")
    bits = 8 * x.dtype.itemsize
    srl = _qb.lax.shift_right_logical
    n = _qb.full(tuple(x.shape), bits, dtype=x.dtype)
    shift = bits // 2
    while shift:
        y = srl(x, shift)
        hit = y != 0
        n = _qb.where(hit, n - shift, n)
        x = _qb.where(hit, y, x)
        shift //= 2
    return n - x  # x is now 0 or 1: its top bit


def mulhi(x, y):
    """jax.lax.mulhi: the high half of the double-width product of two signed integers
    (int32: bits 32..63 of the 64-bit product; int64: bits 64..127, by 16-bit limbs)."""
    a = _int_array(x, "lax.mulhi")
    b = _int_array(y, "lax.mulhi")
    _same_dtype("lax.mulhi", a, b)
    if a.dtype != _qb.int64:  # the product in int64 (modulo 2**64 for uint32: its bits 32..63 still right)
        bits = 8 * a.dtype.itemsize
        return _qb.right_shift(a.astype(_qb.int64) * b.astype(_qb.int64), bits).astype(a.dtype)

    def limbs(v):  # v = l3 * 2**48 + l2 * 2**32 + l1 * 2**16 + l0, l3 signed, the others in [0, 2**16)
        return [v & 0xFFFF, _qb.right_shift(v, 16) & 0xFFFF, _qb.right_shift(v, 32) & 0xFFFF,
                _qb.right_shift(v, 48)]
    la, lb = limbs(a), limbs(b)
    cols = [None] * 7
    for i in range(4):
        for j in range(4):
            t = la[i] * lb[j]
            cols[i + j] = t if cols[i + j] is None else cols[i + j] + t
    carry, digits = 0, []
    for c in cols:  # each column is below 2**35 in magnitude: no overflow
        t = c + carry
        digits.append(t & 0xFFFF)
        carry = _qb.right_shift(t, 16)
    return digits[4] + digits[5] * (1 << 16) + digits[6] * (1 << 32) + carry * (1 << 48)


def empty(shape, dtype, *, out_sharding=None):
    """jax.lax.empty: an array of shape and dtype whose contents are unspecified (zeros
    here, as JAX gives)."""
    if out_sharding is not None:
        raise NotImplementedError("lax.empty: out_sharding is not supported; Quabla arrays are not sharded")
    return _qb.zeros(tuple(shape), dtype=dtype)


def dtype(x):
    """jax.lax.dtype: the Quabla dtype of an array, a value (Python scalars give the
    default dtypes) or a dtype-like (qb.float32, 'float32', np.float32, float)."""
    if x is None:
        raise ValueError("lax.dtype: invalid argument None; pass an array, a value or a dtype")
    import numpy as np
    if isinstance(x, type(_qb.float32)):
        return x
    if isinstance(x, (str, type, np.dtype)):
        return _qb.result_type(x)
    d = getattr(x, "dtype", None)
    if isinstance(d, type(_qb.float32)):
        return d
    if isinstance(d, np.dtype):
        return _qb.result_type(d)
    return _qb.asarray(x).dtype


def zeta(x, q):
    """jax.lax.zeta: the Hurwitz zeta function sum_n (n + q) ** -x."""
    from .scipy.special import zeta as _zeta
    return _zeta(x, q)


def _approx_k(name, operand, k, reduction_dimension, recall_target, largest):
    x = _arr(operand)
    if x.dtype not in _floats():
        raise ValueError(f"{name}: operand must be a floating type, got {x.dtype.name}")
    if x.ndim == 0:
        raise ValueError(f"{name}: needs an operand of rank >= 1")
    ax = _axis(reduction_dimension, x.ndim, name)
    k = _pyint(k, name, "k")
    if not 1 <= k <= x.shape[ax]:
        raise ValueError(f"{name}: k must be in [1, {x.shape[ax]}] (positive and at most the size of reduction "
                         f"dimension {ax}), got {k}")
    if isinstance(recall_target, bool) or not isinstance(recall_target, (int, float)) or not 0 < recall_target <= 1:
        raise ValueError(f"{name}: recall_target must be a number in (0, 1], got {recall_target!r}")
    y = _qb.moveaxis(x, ax, -1)
    perm = _qb.argsort(y, axis=-1, descending=largest)[..., :k]
    vals = _qb.take_along_axis(y, perm, axis=-1, mode="clip")
    return _qb.moveaxis(vals, -1, ax), _qb.moveaxis(perm.astype(_qb.int32), -1, ax)


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """jax.lax.approx_max_k, computed exactly: the k largest values along
    reduction_dimension and their int32 indices (ties: the lower index first), as JAX gives
    on the CPU. recall_target is checked and otherwise met (recall 1);
    reduction_input_size_override and aggregate_to_topk change nothing."""
    return _approx_k("lax.approx_max_k", operand, k, reduction_dimension, recall_target, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """jax.lax.approx_min_k, computed exactly: the k smallest values along
    reduction_dimension and their int32 indices (see approx_max_k)."""
    return _approx_k("lax.approx_min_k", operand, k, reduction_dimension, recall_target, False)


def reduce_xor(operand, axes):
    """jax.lax.reduce_xor: bitwise xor over axes for integers, parity for bools."""
    x = _arr(operand)
    axes = tuple(_pyint(a, "lax.reduce_xor", "axes") for a in axes)
    if x.dtype == _qb.bool_:
        return (_qb.sum(x.astype(_qb.int32), axis=axes) % 2) == 1
    if x.dtype not in _ints():
        raise TypeError(f"lax.reduce_xor: needs an integer or bool array, got {x.dtype.name}")
    return _qb.lax.reduce(x, _qb.asarray(0, dtype=x.dtype), _qb.bitwise_xor, axes)


# -- reduce_precision and bitcasts, by arithmetic on the float's exponent and mantissa ----------

def _float_format(dt):
    """(mantissa bits, exponent bits, exponent bias) of float32 / float64."""
    return (23, 8, 127) if dt == _qb.float32 else (52, 11, 1023)


def _pow2(n, dt):
    """2 ** n exactly, for an integer array n within the dtype's exponent range."""
    return _qb.power(_qb.asarray(2.0, dtype=dt), n.astype(dt))


def _round_precision(x, exponent_bits: int, mantissa_bits: int):
    dt = x.dtype
    src_m, src_e, src_bias = _float_format(dt)
    y = x
    if mantissa_bits < src_m:
        keep = _qb.isfinite(x) & (x != 0)
        ax = _qb.where(keep, _qb.abs(x), _qb.ones_like(x))
        _, e = _qb.frexp(ax)  # ax = m * 2**e with m in [1/2, 1)
        lead = _qb.maximum(e.astype(_qb.int64) - 1, 1 - src_bias)  # the leading bit's exponent (subnormals: the least)
        quantum = _pow2(lead - mantissa_bits, dt)
        r = _qb.rint(ax / quantum) * quantum  # ties to even, as XLA rounds the mantissa's bits
        y = _qb.where(keep, _qb.copysign(r, x), x)
    if exponent_bits < src_e:
        bias = 2 ** (exponent_bits - 1) - 1
        ay = _qb.abs(y)
        big = ay >= 2.0 ** (bias + 1)  # beyond the largest exponent: infinity
        small = ay < 2.0 ** (1 - bias)  # below the smallest normal: zero (XLA flushes subnormals)
        y = _qb.where(big & ~_qb.isinf(y), _qb.copysign(_qb.full_like(y, _math.inf), y), y)
        y = _qb.where(small, _qb.copysign(_qb.zeros_like(y), y), y)
    return y


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """jax.lax.reduce_precision: operand rounded to a float format of exponent_bits and
    mantissa_bits (e.g. 5, 10 for float16; 8, 7 for bfloat16) and returned in its own
    dtype: the mantissa rounded to nearest even, values beyond the format's range made
    infinite and those below its smallest normal flushed to (signed) zero, as XLA does.
    NaN and infinities pass through. Computed by arithmetic on the exponent and mantissa
    (exact). Its derivative, as JAX's, is reduce_precision of the cotangent."""
    x = _float_array(operand, "lax.reduce_precision")
    eb = _pyint(exponent_bits, "lax.reduce_precision", "exponent_bits")
    mb = _pyint(mantissa_bits, "lax.reduce_precision", "mantissa_bits")
    if eb < 1:
        raise ValueError(f"lax.reduce_precision: exponent_bits must be positive, got {eb}")
    if mb < 0:
        raise ValueError(f"lax.reduce_precision: mantissa_bits must be non-negative, got {mb}")
    src_m, src_e, _ = _float_format(x.dtype)
    if eb >= src_e and mb >= src_m:
        return x

    @_qb.custom_vjp
    def rp(v):
        return _round_precision(v, eb, mb)
    rp.defvjp(lambda v: (_round_precision(v, eb, mb), None), lambda _, g: (_round_precision(g, eb, mb),))
    return rp(x)


def _to_bits(x):
    """The IEEE bits of a float array as the integer of its width (NaNs: the canonical
    positive quiet NaN)."""
    dt = x.dtype
    m_bits, _, bias = _float_format(dt)
    it = _qb.int32 if dt == _qb.float32 else _qb.int64
    ax = _qb.abs(x)
    finite = _qb.isfinite(x)
    nz = finite & (x != 0)
    mant, e = _qb.frexp(_qb.where(nz, ax, _qb.ones_like(x)))
    e = e.astype(_qb.int64)
    biased = e - 1 + bias  # <= 0 for subnormals
    normal = biased >= 1
    frac_n = mant * 2.0 ** (m_bits + 1) - 2.0 ** m_bits  # exact: the 52 / 23 stored bits
    # A subnormal's stored bits are ax / 2**(1 - bias - m_bits) = mant * 2**(e + bias + m_bits - 1).
    frac_s = mant * _pow2(_qb.clip(e + bias + m_bits - 1, 0, m_bits), dt)
    frac = _qb.where(normal, frac_n, frac_s).astype(it)
    expf = _qb.where(normal, biased, 0).astype(it)
    shift = 1 << m_bits
    bits = _qb.where(nz, expf * shift + frac, _qb.zeros_like(frac))
    top = (2 * bias + 1) * shift  # the all-ones exponent: infinity
    bits = _qb.where(_qb.isinf(x), _qb.full_like(bits, top), bits)
    bits = _qb.where(_qb.isnan(x), _qb.full_like(bits, top + shift // 2), bits)
    neg = _qb.signbit(x) & ~_qb.isnan(x)
    sign = -(1 << (31 if it == _qb.int32 else 63))
    return _qb.where(neg, bits | _qb.asarray(sign, dtype=it), bits)


def _from_bits(b, dt):
    m_bits, _, bias = _float_format(dt)
    shift = 1 << m_bits
    srl = _qb.lax.shift_right_logical
    frac = b & (shift - 1)
    width = 32 if dt == _qb.float32 else 64
    expf = srl(b, m_bits) & (2 * bias + 1)
    neg = srl(b, width - 1) != 0
    fracf = frac.astype(dt)
    sub = fracf * _pow2(_qb.full_like(expf, 1 - bias - m_bits), dt)
    nrm = (fracf + float(shift)) * _pow2(_qb.clip(expf, 1, 2 * bias) - bias - m_bits, dt)
    val = _qb.where(expf == 0, sub, nrm)
    special = _qb.where(frac == 0, _qb.full_like(val, _math.inf), _qb.full_like(val, _math.nan))
    val = _qb.where(expf == 2 * bias + 1, special, val)
    return _qb.where(neg, -val, val)


def bitcast_convert_type(operand, new_dtype):
    """jax.lax.bitcast_convert_type among float32, int32, uint32, float64 and int64: the same bits
    read as new_dtype. A 64-bit type to a 32-bit one adds a last axis of 2 (low word
    first, as JAX on little-endian machines); the reverse needs and removes one. Computed
    by arithmetic on the exponent and mantissa, so NaN payloads and signs are not kept: a
    NaN becomes the canonical quiet NaN (0x7FC00000 / 0x7FF8000000000000)."""
    name = "lax.bitcast_convert_type"
    x = _arr(operand)
    to = dtype(new_dtype)
    if x.dtype == to:
        return x
    kinds = {_qb.float32: 32, _qb.int32: 32, _qb.uint32: 32, _qb.float64: 64, _qb.int64: 64}
    if x.dtype not in kinds or to not in kinds:
        raise TypeError(f"{name}: converts among float32, int32, uint32, float64 and int64, got {x.dtype.name} to "
                        f"{to.name}")
    if to == _qb.uint32:  # int32's bits read as unsigned: the modular conversion
        return bitcast_convert_type(x, _qb.int32).astype(_qb.uint32)
    if x.dtype == _qb.uint32:
        x = x.astype(_qb.int32)
        if to == _qb.int32:
            return x
    bits = _to_bits(x) if x.dtype in _floats() else x
    src_w, dst_w = kinds[x.dtype], kinds[to]
    if src_w == 64 and dst_w == 32:
        low = bits & 0xFFFFFFFF
        low = _qb.where(low >= 1 << 31, low - (1 << 32), low).astype(_qb.int32)
        high = _qb.right_shift(bits, 32).astype(_qb.int32)
        bits = _qb.stack([low, high], axis=-1)
    elif src_w == 32 and dst_w == 64:
        if x.ndim == 0 or x.shape[-1] != 2:
            raise ValueError(f"{name}: converting {x.dtype.name} to {to.name} needs a last axis of 2 (two 32-bit "
                             f"words per 64-bit value), got shape {tuple(x.shape)}")
        low = bits[..., 0].astype(_qb.int64) & 0xFFFFFFFF
        bits = bits[..., 1].astype(_qb.int64) * (1 << 32) + low
    return _from_bits(bits, to) if to in _floats() else bits


# -- special-function derivatives ------------------------------------------------------------------

def igamma_grad_a(a, x):
    """jax.lax.igamma_grad_a: the derivative of the regularized lower incomplete gamma
    function P(a, x) with respect to a (by differentiating qb.lax.igamma)."""
    from ._numpy_names import common_float
    from ._numpy_extra import _no_complex
    _no_complex("lax.igamma_grad_a", a, x)
    dt = common_float(a, x)
    a = _arr(a).astype(dt)
    x = _arr(x).astype(dt)
    shape = broadcast_shapes(tuple(a.shape), tuple(x.shape))
    a, x = _qb.broadcast_to(a, shape), _qb.broadcast_to(x, shape)
    return _qb.grad(lambda s: _qb.sum(_qb.lax.igamma(s, x)))(a)


def random_gamma_grad(a, x):
    """jax.lax.random_gamma_grad: the derivative of a Gamma(a, 1) sample x with respect to
    a at fixed uniform noise: -(dP/da) / (dP/dx), P the regularized incomplete gamma."""
    from ._numpy_names import common_float
    from ._numpy_extra import _no_complex
    _no_complex("lax.random_gamma_grad", a, x)
    dt = common_float(a, x)
    a = _arr(a).astype(dt)
    x = _arr(x).astype(dt)
    dpdx = _qb.exp((a - 1.0) * _qb.log(x) - x - _qb.lax.lgamma(a))
    return -igamma_grad_a(a, x) / dpdx


# -- convolutions: the transposed and local ones, patches and the shape helpers -----------------

def _conv():
    from . import _conv as c
    return c


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """jax.lax.padtype_to_pads: the (low, high) padding per spatial axis that 'SAME',
    'SAME_LOWER' or 'VALID' (any case) means for these sizes."""
    if not isinstance(padding, str) and type(padding).__name__ != "PaddingType":
        raise TypeError(f"lax.padtype_to_pads: padding must be 'SAME', 'SAME_LOWER' or 'VALID', got {padding!r}")
    mode = padding if isinstance(padding, str) else padding.name
    if mode.upper() not in ("SAME", "SAME_LOWER", "VALID"):
        raise ValueError(f"lax.padtype_to_pads: padding must be 'VALID', 'SAME' or 'SAME_LOWER', got {padding!r}")
    in_shape, window_shape, window_strides = (tuple(int(v) for v in s)
                                              for s in (in_shape, window_shape, window_strides))
    if not len(in_shape) == len(window_shape) == len(window_strides):
        raise ValueError(f"lax.padtype_to_pads: in_shape {in_shape}, window_shape {window_shape} and window_strides "
                         f"{window_strides} must have one length")
    return [tuple(p) for p in _conv()._padding(mode.upper(), in_shape, window_shape, window_strides,
                                               "lax.padtype_to_pads")]


def _pairs(padding, n, name):
    try:
        pads = [tuple(int(v) for v in p) for p in padding]
    except TypeError:
        pads = None
    if pads is None or len(pads) != n or any(len(p) != 2 for p in pads):
        raise ValueError(f"{name}: padding must be a string or {n} (low, high) pairs, got {padding!r}")
    return pads


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """jax.lax.conv_shape_tuple: the output shape (N, O, spatial...) of a convolution of
    an NC... lhs_shape with an OI... rhs_shape (no dilation)."""
    lhs_shape, rhs_shape = tuple(int(v) for v in lhs_shape), tuple(int(v) for v in rhs_shape)
    if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2:
        raise TypeError(f"lax.conv_shape_tuple: lhs {lhs_shape} and rhs {rhs_shape} need one rank of at least 2")
    n = len(lhs_shape) - 2
    strides = tuple(int(s) for s in strides)
    if len(strides) != n or any(s < 1 for s in strides):
        raise ValueError(f"lax.conv_shape_tuple: strides must be {n} positive ints, got {strides}")
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    pads = _pairs(pads, n, "lax.conv_shape_tuple")
    space = tuple(_builtins.max(0, (i + lo + hi - k) // s + 1)
                  for i, (lo, hi), k, s in zip(lhs_shape[2:], pads, rhs_shape[2:], strides))
    return (lhs_shape[0] // int(batch_group_count), rhs_shape[0]) + space


def conv_general_permutations(dimension_numbers):
    """jax.lax.conv_general_permutations: for layout strings (lhs, rhs, out), the axis
    permutations that bring each to N C spatial... / O I spatial... (spatial axes in the
    rhs's order)."""
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3 or \
            not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"lax.conv_general_permutations: dimension_numbers must be three layout strings (lhs, rhs, "
                        f"out), e.g. ('NCHW', 'OIHW', 'NCHW'), got {dimension_numbers!r}")
    lhs, rhs, out = dimension_numbers
    if not len(lhs) == len(rhs) == len(out):
        raise TypeError(f"lax.conv_general_permutations: the layouts {dimension_numbers} must have one length")
    dn = _conv().conv_dimension_numbers((0,) * len(lhs), (0,) * len(rhs), tuple(dimension_numbers))
    return tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)


def _dn(lhs_shape, rhs_shape, dimension_numbers):
    return _conv().conv_dimension_numbers(tuple(lhs_shape), tuple(rhs_shape), dimension_numbers)


def _out_layout(canon, out_spec):
    """A shape (or list) in N C spatial... order placed into the out_spec layout."""
    res = [None] * len(canon)
    for pos, axis in enumerate(out_spec):
        res[axis] = canon[pos]
    return tuple(res)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """jax.lax.conv_general_shape_tuple: the output shape of conv_general_dilated (no
    dilation) in the out layout of dimension_numbers."""
    dn = _dn(lhs_shape, rhs_shape, dimension_numbers)
    lhs = tuple(int(lhs_shape[i]) for i in dn.lhs_spec)
    rhs = tuple(int(rhs_shape[i]) for i in dn.rhs_spec)
    return _out_layout(conv_shape_tuple(lhs, rhs, window_strides, padding), dn.out_spec)


def _transpose_pad(k: int, s: int, mode: str, name: str):
    """The (low, high) padding of the stride-1 convolution over the s-dilated input that a
    conv_transpose with forward padding 'SAME' or 'VALID', effective kernel size k and
    stride s uses (Keras' Conv2DTranspose output sizes: in * s for SAME,
    in * s + max(k - s, 0) for VALID)."""
    if mode == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif mode == "VALID":
        total = k + s - 2 + _builtins.max(k - s, 0)
        low = k - 1
    else:
        raise ValueError(f"{name}: padding must be 'SAME', 'VALID' or (low, high) pairs, got {mode!r}")
    return low, total - low


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """jax.lax.conv_transpose_shape_tuple: the output shape of conv_transpose (no
    dilation) in the out layout of dimension_numbers."""
    name = "lax.conv_transpose_shape_tuple"
    dn = _dn(lhs_shape, rhs_shape, dimension_numbers)
    lhs = tuple(int(lhs_shape[i]) for i in dn.lhs_spec)
    rhs = tuple(int(rhs_shape[i]) for i in dn.rhs_spec)
    strides = tuple(int(s) for s in window_strides)
    n = len(lhs) - 2
    if isinstance(padding, str):
        pads = [_transpose_pad(k, s, padding.upper(), name) for k, s in zip(rhs[2:], strides)]
    else:
        pads = _pairs(padding, n, name)
    space = tuple((i - 1) * s + 1 + lo + hi - k + 1 for i, k, s, (lo, hi) in zip(lhs[2:], rhs[2:], strides, pads))
    return _out_layout((lhs[0], rhs[0]) + space, dn.out_spec)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None):
    """jax.lax.reduce_window_shape_tuple: the output shape of reduce_window with explicit
    (low, high) padding pairs."""
    name = "lax.reduce_window_shape_tuple"
    shape = tuple(int(v) for v in operand_shape)
    nd = len(shape)
    c = _conv()
    window = c._ints(tuple(window_dimensions), nd, "window_dimensions")
    strides = c._ints(tuple(window_strides), nd, "window_strides")
    base = c._ints(base_dilation, nd, "base_dilation")
    dil = c._ints(window_dilation, nd, "window_dilation")
    pads = _pairs(padding, nd, name)
    out = []
    for n, w, s, b, d, (lo, hi) in zip(shape, window, strides, base, dil, pads):
        size = (0 if n == 0 else (n - 1) * b + 1) + lo + hi
        span = (w - 1) * d + 1
        out.append(_builtins.max(0, (size - span) // s + 1) if size >= span else 0)
    return tuple(out)


_TRANSPOSE_LAYOUTS = {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """jax.lax.conv_transpose: the fractionally strided convolution (lhs dilated by
    strides, then a stride-1 convolution), with layouts defaulting to TensorFlow's
    (NHWC, HWIO, NHWC). padding 'SAME' / 'VALID' gives Keras' Conv2DTranspose output sizes;
    (low, high) pairs are the transposed convolution's own padding, or with
    use_consistent_padding=True the forward convolution's (PyTorch's convention: each side
    gets dilation * (kernel - 1) - pad). transpose_kernel=True flips the kernel's spatial
    axes and swaps its I and O axes (the gradient of conv_general_dilated)."""
    name = "lax.conv_transpose"
    _qb.lax._check_precision(precision, name)
    x, w = _arr(lhs), _arr(rhs)
    if x.ndim != w.ndim or x.ndim < 3:
        raise ValueError(f"{name}: lhs and rhs need one rank of at least 3, got shapes {tuple(x.shape)} and "
                         f"{tuple(w.shape)}")
    if dimension_numbers is None:
        if x.ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError(f"{name}: give dimension_numbers for rank {x.ndim} (defaults exist for ranks 3 to 5)")
        dimension_numbers = _TRANSPOSE_LAYOUTS[x.ndim]
    dn = _dn(x.shape, w.shape, dimension_numbers)
    n = x.ndim - 2
    strides = _conv()._ints(strides, n, "strides")
    dil = _conv()._ints(rhs_dilation, n, "rhs_dilation")
    k = tuple(w.shape[a] for a in dn.rhs_spec[2:])
    eff = tuple((kk - 1) * d + 1 for kk, d in zip(k, dil))
    if isinstance(padding, str):
        pads = [_transpose_pad(kk, s, padding.upper(), name) for kk, s in zip(eff, strides)]
    else:
        pads = _pairs(padding, n, name)
        if use_consistent_padding:
            pads = [(e - 1 - lo, e - 1 - hi) for e, (lo, hi) in zip(eff, pads)]
    if transpose_kernel:
        w = _qb.flip(w, axis=tuple(dn.rhs_spec[2:]))
        w = _qb.swapaxes(w, dn.rhs_spec[0], dn.rhs_spec[1])
    return _qb.lax.conv_general_dilated(x, w, (1,) * n, pads, lhs_dilation=strides, rhs_dilation=dil,
                                        dimension_numbers=dn, preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """jax.lax.conv_general_dilated_patches: the receptive-field patches of
    conv_general_dilated, flattened into the output's feature axis in the order
    (input feature, then filter_shape's axes in the rhs layout's order): a convolution with
    a one-hot kernel, one feature group per input feature."""
    name = "lax.conv_general_dilated_patches"
    _qb.lax._check_precision(precision, name)
    x = _arr(lhs)
    fs = tuple(_pyint(f, name, "filter_shape") for f in filter_shape)
    if len(fs) != x.ndim - 2 or x.ndim < 3:
        raise ValueError(f"{name}: filter_shape {fs} needs one size per spatial axis of lhs {tuple(x.shape)}")
    c = _conv()
    dn = c.conv_dimension_numbers(x.shape, (0,) * x.ndim, dimension_numbers)
    feats = x.shape[dn.lhs_spec[1]]
    kk = _math.prod(fs)
    eye = _qb.eye(kk, dtype=x.dtype).reshape((kk, 1) + fs)
    kernel = _qb.tile(eye, (feats,) + (1,) * (len(fs) + 1))
    own = c.ConvDimensionNumbers(tuple(dn.lhs_spec), tuple(range(x.ndim)), tuple(dn.out_spec))
    return _qb.lax.conv_general_dilated(x, kernel, window_strides, padding, lhs_dilation, rhs_dilation, own,
                                        feature_group_count=feats, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape, lhs_dilation=None,
                               rhs_dilation=None, dimension_numbers=None, precision=None):
    """jax.lax.conv_general_dilated_local: a convolution with a separate (unshared) kernel
    at every output position. rhs's spatial axes are the output's; its I axis holds the
    input features and the receptive window fused, in the order of
    conv_general_dilated_patches."""
    name = "lax.conv_general_dilated_local"
    _qb.lax._check_precision(precision, name)
    x, w = _arr(lhs), _arr(rhs)
    if x.ndim != w.ndim:
        raise ValueError(f"{name}: lhs {tuple(x.shape)} and rhs {tuple(w.shape)} need one rank")
    c = _conv()
    dn = c.conv_dimension_numbers(x.shape, w.shape, dimension_numbers)
    canon = tuple(range(x.ndim))
    patches = conv_general_dilated_patches(x, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                                           c.ConvDimensionNumbers(tuple(dn.lhs_spec), tuple(dn.rhs_spec), canon))
    wc = _qb.transpose(w, tuple(dn.rhs_spec))  # O, I (features x window), output spatial...
    if tuple(wc.shape[1:]) != tuple(patches.shape[1:]):
        raise ValueError(f"{name}: rhs needs I = {patches.shape[1]} (input features x window) and spatial axes "
                         f"{tuple(patches.shape[2:])} (the output's), got {tuple(wc.shape[1:])} in (I, spatial...)")
    dt = _qb.result_type(patches, wc)
    out = _qb.einsum("nk...,ok...->no...", patches.astype(dt), wc.astype(dt))
    inverse = [0] * out.ndim
    for pos, axis in enumerate(dn.out_spec):
        inverse[axis] = pos
    return _qb.transpose(out, tuple(inverse))
