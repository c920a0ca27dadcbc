"""More of jax.numpy's names: the array API's aliases (acos, pow, permute_dims, ...), index
tricks (mgrid, ogrid, r_, c_, ix_), vectorize and apply_along_axis (through vmap), piecewise,
insert/delete, lexsort, partition, fill_diagonal, gcd/lcm, frexp/ldexp/modf/nextafter, and
the options of linspace, reshape and full_like that the core functions do not take. All are
compositions of the core ops, so they jit, differentiate and batch like the rest."""
from __future__ import annotations

import math
import re

from . import _core
from ._numpy_extra import _axis, _cast, _is_complex, _no_complex, _real_dtype, _NO_ORDER, _COMPLEX
from ._package import qb

__all__ = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "atan2", "pow", "permute_dims", "unstack",
           "cumulative_sum", "cumulative_prod", "vecdot", "matvec", "vecmat", "divmod", "gcd", "lcm", "insert",
           "delete", "lexsort", "partition", "argpartition", "fill_diagonal", "mgrid", "ogrid", "r_", "c_", "ix_",
           "vectorize", "apply_along_axis", "apply_over_axes", "piecewise", "ediff1d", "modf", "ldexp", "frexp",
           "nextafter", "spacing", "bitwise_count", "linspace", "reshape", "full_like", "full", "nan_to_num", "block", "isdtype"]

acos, asin, atan = _core.arccos, _core.arcsin, _core.arctan
acosh, asinh, atanh = _core.arccosh, _core.arcsinh, _core.arctanh
atan2 = _core.arctan2
pow = _core.power  # noqa: A001 (the array API's name)


def _isint(v) -> bool:
    """An integer scalar: a Python or NumPy integer, or a concrete 0-d integer array."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    shape = getattr(v, "shape", None)
    if shape is None:
        return hasattr(v, "__index__")
    if tuple(shape) != () or getattr(v, "_is_tracer", False):
        return False
    return getattr(getattr(v, "dtype", None), "kind", None) in ("i", "u")


def _float_of(x, name):
    x = qb.asarray(x)
    _no_complex(name, x)
    return x if x.dtype in (_core.float32, _core.float64) else x.astype(qb.default_dtype())


def permute_dims(a, axes):
    """a with its axes permuted (the array API's transpose)."""
    return qb.transpose(a, tuple(axes))


def unstack(x, /, *, axis: int = 0):
    """The slices of x along axis, as a tuple."""
    x = qb.asarray(x)
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dimension")
    m = qb.moveaxis(x, axis, 0)
    return tuple(m[i] for i in range(m.shape[0]))


def _cumulative(op, name, x, axis, dtype, include_initial, initial):
    x = qb.asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis must be given for arrays of more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dimension")
    if dtype is not None:
        x = x.astype(dtype)
    out = op(x, axis=axis)
    if include_initial:
        shape = list(out.shape)
        shape[axis % x.ndim] = 1
        out = qb.concatenate([qb.full(tuple(shape), initial, dtype=out.dtype), out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """The running sum along axis (with a leading 0 when include_initial)."""
    return _cumulative(qb.cumsum, "cumulative_sum", x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """The running product along axis (with a leading 1 when include_initial)."""
    return _cumulative(qb.cumprod, "cumulative_prod", x, axis, dtype, include_initial, 1)


def vecdot(x1, x2, /, *, axis: int = -1):
    """sum(conj(x1) * x2) along axis, broadcasting the other axes (x1 conjugated, as the
    array API's vecdot; a no-op for real x1)."""
    return qb.sum(_core._conj(qb.asarray(x1)) * qb.asarray(x2), axis=axis)


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast batches: x1 (..., m, n), x2 (..., n)."""
    return qb.einsum("...ij,...j->...i", x1, x2)


def vecmat(x1, x2, /):
    """Vector-matrix products over broadcast batches: x1 (..., m), x2 (..., m, n); x1 is
    conjugated (as jax.numpy.vecmat; a no-op for real x1)."""
    return qb.einsum("...i,...ij->...j", _core._conj(qb.asarray(x1)), x2)


def divmod(x1, x2, /):  # noqa: A001 (NumPy's name)
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    _no_complex("divmod", x1, x2, hint="floor division needs an order, which complex numbers lack")
    return qb.floor_divide(x1, x2), qb.remainder(x1, x2)


def _int_pair(x1, x2, name):
    a, b = qb.asarray(x1), qb.asarray(x2)
    for v in (a, b):
        if v.dtype.kind not in "iu":
            raise TypeError(f"{name}: arguments must be integers, got {v.dtype}")
    dtype = qb.result_type(x1, x2)
    shape = tuple(qb.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return qb.broadcast_to(a.astype(dtype), shape), qb.broadcast_to(b.astype(dtype), shape)


def gcd(x1, x2, /):
    """The greatest common divisor of |x1| and |x2| (0 when both are 0)."""
    a, b = _int_pair(x1, x2, "gcd")
    a, b = qb.abs(a), qb.abs(b)

    def step(carry):
        a, b = carry
        nonzero = b != 0
        safe = qb.where(nonzero, b, qb.ones_like(b))
        return qb.where(nonzero, b, a), qb.where(nonzero, a % safe, b)
    # Euclid's algorithm, every element until all remainders are 0 (at most ~92 steps).
    return qb.while_loop(lambda c: qb.any(c[1] != 0), step, (a, b))[0]


def lcm(x1, x2, /):
    """The least common multiple of |x1| and |x2| (0 when either is 0)."""
    a, b = _int_pair(x1, x2, "lcm")
    g = gcd(a, b)
    safe = qb.where(g == 0, qb.ones_like(g), g)
    return qb.where(g == 0, qb.zeros_like(g), qb.abs((a // safe) * b))


def _static_indices(obj, n, name):
    """obj (an int, slice or sequence of ints, or a concrete array) as a list of indices."""
    if isinstance(obj, slice):
        return list(range(n))[obj]
    if isinstance(obj, _core.Array):
        if obj._is_tracer:
            raise TypeError(f"{name}: obj must be static (an int, a slice or a list of ints), not a traced array")
        obj = obj.item() if obj.ndim == 0 else obj.numpy().tolist()
    if _isint(obj):
        return int(obj)
    if hasattr(obj, "tolist"):  # a NumPy array of indices
        obj = obj.tolist()
    out = []
    for i in obj:
        if isinstance(i, bool) or not _isint(i):
            raise TypeError(f"{name}: indices must be ints, got {type(i).__name__}")
        out.append(int(i))
    return out


def delete(arr, obj, axis=None, *, assume_unique_indices: bool = False):
    """arr without the entries obj (an int, slice or ints) along axis (flattened when None)."""
    a = qb.asarray(arr)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = _axis(axis, a.ndim, "delete")
    n = a.shape[axis]
    idx = _static_indices(obj, n, "delete")
    idx = [idx] if isinstance(idx, int) else idx
    drop = set()
    for i in idx:
        if not -n <= i < n:
            raise IndexError(f"delete: index {i} is out of bounds for axis {axis} with size {n}")
        drop.add(i % n)
    keep = [i for i in range(n) if i not in drop]
    return qb.take(a, qb.asarray(keep, dtype=_core.int64), axis=axis) if keep else \
        qb.zeros(tuple(a.shape[:axis]) + (0,) + tuple(a.shape[axis + 1:]), a.dtype)


def insert(arr, obj, values, axis=None):
    """arr with values inserted before the indices obj (an int, slice or ints) along axis
    (flattened when None), as numpy.insert."""
    a = qb.asarray(arr)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = _axis(axis, a.ndim, "insert")
    n = a.shape[axis]
    idx = _static_indices(obj, n + 1, "insert")
    v = _cast("insert", qb.asarray(values), a.dtype)
    shape = list(a.shape)
    if isinstance(idx, int):
        if not -n <= idx <= n:
            raise IndexError(f"insert: index {idx} is out of bounds for axis {axis} with size {n}")
        pos = idx + n if idx < 0 else idx
        # NumPy's rule for one index: values get at least arr's rank, their first axis
        # moved to `axis`, and that axis is how many are inserted.
        v = v.reshape((1,) * (a.ndim - v.ndim) + tuple(v.shape)) if v.ndim < a.ndim else v
        v = qb.moveaxis(v, 0, axis)
        k = v.shape[axis]
        positions = [pos] * k
    else:
        positions = []
        for i in idx:
            if not -n <= i <= n:
                raise IndexError(f"insert: index {i} is out of bounds for axis {axis} with size {n}")
            positions.append(i + n if i < 0 else i)
        k = len(positions)
    shape[axis] = k
    v = qb.broadcast_to(v, tuple(shape))
    # Stable order of the inserted values by position; each lands before the original entry
    # at its position, after the values inserted before it.
    order = sorted(range(k), key=lambda j: positions[j])
    total = n + k
    source = [0] * total
    new_slots = {}
    for rank, j in enumerate(order):
        new_slots[positions[j] + rank] = j
    orig = 0
    for slot in range(total):
        if slot in new_slots:
            source[slot] = n + new_slots[slot]
        else:
            source[slot] = orig
            orig += 1
    joined = qb.concatenate([a, v], axis=axis)
    return qb.take(joined, qb.asarray(source, dtype=_core.int64), axis=axis)


def lexsort(keys, axis: int = -1):
    """The indices that sort by the last key, ties broken by the one before, and so on."""
    keys = [qb.asarray(k) for k in (keys if isinstance(keys, (list, tuple)) else list(qb.asarray(keys)))]
    if not keys:
        raise TypeError("lexsort: needs at least one key")
    shape = tuple(keys[0].shape)
    for k in keys:
        if tuple(k.shape) != shape:
            raise ValueError(f"lexsort: all keys must have one shape, got {shape} and {tuple(k.shape)}")
    idx = qb.argsort(keys[0], axis=axis, stable=True)
    for k in keys[1:]:
        sub = qb.argsort(qb.take_along_axis(k, idx, axis=axis), axis=axis, stable=True)
        idx = qb.take_along_axis(idx, sub, axis=axis)
    return idx


def _checked_kth(a, kth, axis, name):
    a = qb.asarray(a)
    n = a.shape[_axis(axis, a.ndim, name)]
    for k in ([kth] if _isint(kth) else list(kth)):
        if not -n <= int(k) < n:
            raise ValueError(f"{name}: kth {k} is out of bounds for an axis of size {n}")
    return a


def partition(a, kth, axis: int = -1):
    """a rearranged so that the kth entry along axis is where sorting puts it, smaller ones
    before and larger ones after (here: sorted, which satisfies that)."""
    _no_complex("partition", a, hint=_NO_ORDER)
    return qb.sort(_checked_kth(a, kth, axis, "partition"), axis=axis)


def argpartition(a, kth, axis: int = -1):
    """Indices that partition a at kth (here: the sorting indices, which do)."""
    _no_complex("argpartition", a, hint=_NO_ORDER)
    return qb.argsort(_checked_kth(a, kth, axis, "argpartition"), axis=axis, stable=True)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """a with its main diagonal set to val (cycled along the diagonal), as numpy.fill_diagonal;
    arrays are immutable, so as in jax.numpy it needs inplace=False and returns the result."""
    if inplace:
        raise ValueError("fill_diagonal: Quabla arrays are immutable; call fill_diagonal(a, val, inplace=False) and "
                         "use the returned array")
    a = qb.asarray(a)
    if a.ndim < 2:
        raise ValueError("fill_diagonal: array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("fill_diagonal: all dimensions of an array of more than two must be equal")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = a.size if wrap else min(a.shape[1] * a.shape[1], a.size)
    else:
        step = 1 + sum(math.prod(a.shape[:i]) for i in range(1, a.ndim))
        end = a.size
    positions = list(range(0, end, step))
    v = _cast("fill_diagonal", qb.asarray(val), a.dtype).reshape(-1)
    reps = -(-len(positions) // v.shape[0])
    values = qb.tile(v, reps)[:len(positions)]
    flat = a.reshape(-1).at[qb.asarray(positions, dtype=_core.int64)].set(values)
    return flat.reshape(tuple(a.shape))


# ---- index tricks --------------------------------------------------------------------------

def _grid_axis(s, name):
    if not isinstance(s, slice):
        raise TypeError(f"{name}: index with slices (start:stop:step, a complex step giving a count)")
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        num = int(abs(step))
        return qb.linspace(start, s.stop, num, endpoint=True)
    if all(_isint(v) for v in (start, s.stop, step)):
        return qb.arange(start, s.stop, step)
    return qb.arange(float(start), float(s.stop), float(step))


class _Grid:
    def __init__(self, sparse: bool, name: str):
        self.sparse, self.name = sparse, name

    def __getitem__(self, key):
        single = not isinstance(key, tuple)
        axes = [_grid_axis(s, self.name) for s in ((key,) if single else key)]
        if single:
            return axes[0]
        if any(a.dtype in (_core.float32, _core.float64) for a in axes):
            dtype = qb.result_type(*axes)
            axes = [a.astype(dtype) for a in axes]
        grids = qb.meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return list(grids) if self.sparse else qb.stack(grids)


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


class _Concatenator:
    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        items = list(key) if isinstance(key, tuple) else [key]
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            spec = items.pop(0)
            if spec in ("r", "c"):
                raise NotImplementedError(f"{self.name}: the matrix directives 'r' and 'c' are not supported")
            if not re.fullmatch(r"-?\d+(,-?\d+){0,2}", spec.replace(" ", "")):
                raise ValueError(f"{self.name}: invalid directive {spec!r}; use 'axis', 'axis,ndmin' or "
                                 "'axis,ndmin,trans1d'")
            parts = [int(p) for p in spec.replace(" ", "").split(",")]
            axis = parts[0]
            if len(parts) > 1:
                ndmin = parts[1]
            if len(parts) > 2:
                trans1d = parts[2]
        arrays = []
        for item in items:
            a = _grid_axis(item, self.name) if isinstance(item, slice) else qb.asarray(item)
            if a.ndim < ndmin:
                # NumPy's trans1d: where the original axes go among the new ones (-1: at the end).
                extra = ndmin - a.ndim
                k = trans1d if trans1d >= 0 else ndmin + trans1d - a.ndim + 1
                k = max(0, min(k, extra))
                a = a.reshape((1,) * k + tuple(a.shape) + (1,) * (extra - k))
            arrays.append(a)
        if not arrays:
            return qb.zeros((0,))
        arrays = [a if a.ndim else a.reshape(1) for a in arrays]
        dtype = qb.result_type(*arrays)
        return qb.concatenate([a.astype(dtype) for a in arrays], axis=axis)


r_ = _Concatenator(0, 1, -1, "r_")
c_ = _Concatenator(-1, 2, 0, "c_")


def ix_(*args):
    """Open-mesh index arrays from 1-D sequences (bools become their true positions)."""
    out = []
    for i, a in enumerate(args):
        a = qb.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"ix_: arguments must be 1-D, got shape {tuple(a.shape)} for argument {i}")
        if a.dtype == _core.bool_:
            a = qb.nonzero(a)[0]
        shape = [1] * len(args)
        shape[i] = a.shape[0]
        out.append(a.reshape(tuple(shape)))
    return tuple(out)


# ---- vectorize, apply_along_axis, piecewise ----------------------------------------------------

_DIMS = r"\(\s*(?:\w+(?:\s*,\s*\w+)*)?\s*\)"


def _parse_signature(signature):
    sig = signature.replace(" ", "")
    if not re.fullmatch(rf"{_DIMS}(?:,{_DIMS})*->{_DIMS}(?:,{_DIMS})*", sig):
        raise ValueError(f"vectorize: invalid signature {signature!r}; expected e.g. '(n),(n)->()'")
    lhs, rhs = sig.split("->")

    def dims(side):
        return [tuple(d for d in group.split(",") if d) for group in re.findall(r"\(([^)]*)\)", side)]
    return dims(lhs), dims(rhs)


class vectorize:
    """pyfunc mapped over the leading (loop) axes of its arguments by vmap, as
    jax.numpy.vectorize: without a signature every argument is mapped elementwise; with one
    (e.g. '(n),(n)->()') its core axes are passed whole. excluded names positional indices
    or keywords passed through unmapped."""

    def __init__(self, pyfunc, *, excluded=frozenset(), signature=None):
        if not callable(pyfunc):
            raise TypeError(f"vectorize: expected a callable, got {type(pyfunc).__name__}")
        self.pyfunc, self.excluded, self.signature = pyfunc, frozenset(excluded), signature
        self._core_dims = _parse_signature(signature) if signature is not None else None
        self.__doc__ = getattr(pyfunc, "__doc__", None)
        self.__name__ = getattr(pyfunc, "__name__", "vectorized")

    def __call__(self, *args, **kwargs):
        fixed_kw = {k: v for k, v in kwargs.items() if k in self.excluded}
        mapped_kw = {k: v for k, v in kwargs.items() if k not in self.excluded}
        names = list(mapped_kw)
        positions = [i for i in range(len(args)) if i not in self.excluded]
        arrays = [qb.asarray(args[i]) for i in positions] + [qb.asarray(mapped_kw[k]) for k in names]
        if self._core_dims is None:
            in_core = [()] * len(arrays)
        else:
            in_core = self._core_dims[0]
            if len(in_core) != len(arrays):
                raise TypeError(f"vectorize: the signature {self.signature!r} has {len(in_core)} inputs, got "
                                f"{len(arrays)} mapped arguments")
        loop_shapes = []
        for a, core in zip(arrays, in_core):
            if a.ndim < len(core):
                raise ValueError(f"vectorize: an argument of shape {tuple(a.shape)} has fewer dimensions than its "
                                 f"core dimensions {core}")
            loop_shapes.append(tuple(a.shape)[:a.ndim - len(core)])
        loop = tuple(qb.broadcast_shapes(*loop_shapes)) if loop_shapes else ()
        flat = []
        for a, core in zip(arrays, in_core):
            core_shape = tuple(a.shape)[a.ndim - len(core):]
            flat.append(qb.broadcast_to(a, loop + core_shape).reshape((-1,) + core_shape))

        def one(*xs):
            call_args = list(args)
            for i, x in zip(positions, xs):
                call_args[i] = x
            kw = dict(fixed_kw)
            kw.update(zip(names, xs[len(positions):]))
            return self.pyfunc(*call_args, **kw)
        if math.prod(loop) == 0:
            raise ValueError("vectorize: the loop dimensions are empty")
        out = qb.vmap(one)(*flat)
        return qb.tree.map(lambda o: o.reshape(loop + tuple(o.shape[1:])), out)


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """func1d applied to every 1-D slice of arr along axis (by vmap); its result's axes take
    that axis' place."""
    a = qb.asarray(arr)
    axis = _axis(axis, a.ndim, "apply_along_axis")
    moved = qb.moveaxis(a, axis, -1)
    rest = tuple(moved.shape[:-1])
    flat = moved.reshape((-1, moved.shape[-1]))
    out = qb.vmap(lambda v: qb.asarray(func1d(v, *args, **kwargs)))(flat)
    out = out.reshape(rest + tuple(out.shape[1:]))
    extra = out.ndim - len(rest)
    return qb.moveaxis(out, tuple(range(len(rest), out.ndim)), tuple(range(axis, axis + extra))) if extra else out


def apply_over_axes(func, a, axes):
    """func(a, axis) applied for each axis in turn, keeping the dimensions."""
    a = qb.asarray(a)
    for ax in ([axes] if _isint(axes) else axes):
        r = qb.asarray(func(a, ax))
        a = r if r.ndim == a.ndim else qb.expand_dims(r, ax)
    return a


def piecewise(x, condlist, funclist, *args, **kw):
    """Where condlist[k] holds, funclist[k](x) (or the value funclist[k]); a last extra entry
    is the value where no condition holds (0 otherwise). Every function is evaluated on all
    of x, as in jax.numpy (keep them safe for every input)."""
    x = qb.asarray(x)
    if isinstance(condlist, _core.Array) and condlist.ndim == x.ndim and condlist.dtype == _core.bool_:
        condlist = [condlist]
    conds = [qb.broadcast_to(qb.asarray(c), tuple(x.shape)) for c in condlist]
    funcs = list(funclist)
    if len(funcs) not in (len(conds), len(conds) + 1):
        raise ValueError(f"piecewise: {len(funcs)} functions for {len(conds)} conditions (need as many, or one more "
                         "for the default)")

    def value(f):
        v = f(x, *args, **kw) if callable(f) else f
        return qb.broadcast_to(_cast("piecewise", qb.asarray(v), x.dtype, "function values"), tuple(x.shape))
    out = value(funcs[-1]) if len(funcs) == len(conds) + 1 else qb.zeros_like(x)
    for c, f in zip(conds, funcs):
        out = qb.where(c, value(f), out)
    return out


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost lists join along the
    last axis, the next ones along the one before, ...), as numpy.block."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (0 if not isinstance(x, list) else 1)
    if isinstance(arrays, tuple):
        raise TypeError("block: use nested lists, not tuples (as NumPy)")
    levels = depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            if not x:
                raise ValueError("block: lists must not be empty")
            for y in x:
                collect(y)
        else:
            leaves.append(qb.asarray(x))
    collect(arrays)
    ndim = max([levels] + [a.ndim for a in leaves])

    def build(x, level):
        if not isinstance(x, list):
            a = qb.asarray(x)
            return a.reshape((1,) * (ndim - a.ndim) + tuple(a.shape))
        parts = [build(y, level + 1) for y in x]
        return qb.concatenate(parts, axis=-(levels - level))
    return build(arrays, 0)


def isdtype(dtype, kind):
    """Whether dtype is of kind (the array API's names 'bool', 'signed integer', 'unsigned
    integer', 'integral', 'real floating', 'complex floating', 'numeric', a dtype, or a tuple
    of them)."""
    d = _core.zeros((), dtype).dtype
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    signed = (_core.int8, _core.int16, _core.int32, _core.int64)
    unsigned = (_core.uint8, _core.uint16, _core.uint32)
    groups = {"bool": (_core.bool_,), "signed integer": signed, "unsigned integer": unsigned,
              "integral": signed + unsigned, "real floating": (_core.float32, _core.float64),
              "complex floating": _COMPLEX,
              "numeric": signed + unsigned + (_core.float32, _core.float64) + _COMPLEX}
    if isinstance(kind, str):
        if kind not in groups:
            raise ValueError(f"isdtype: unknown kind {kind!r}; one of {sorted(groups)}")
        return d in groups[kind]
    return d == _core.zeros((), kind).dtype


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the flattened array, with to_begin and to_end attached."""
    a = qb.asarray(ary).reshape(-1)
    parts = [] if to_begin is None else [_cast("ediff1d", qb.asarray(to_begin), a.dtype, "to_begin").reshape(-1)]
    parts.append(a[1:] - a[:-1])
    if to_end is not None:
        parts.append(_cast("ediff1d", qb.asarray(to_end), a.dtype, "to_end").reshape(-1))
    return qb.concatenate(parts) if len(parts) > 1 else parts[0]


# ---- float decomposition -------------------------------------------------------------------

def modf(x, /):
    """(fractional part, integral part), both with x's sign (modf(inf) = (0, inf))."""
    x = _float_of(x, "modf")
    whole = qb.trunc(x)
    frac = qb.where(qb.isinf(x), qb.copysign(qb.zeros_like(x), x), x - whole)
    return frac, whole


def ldexp(x1, x2, /):
    """x1 * 2**x2 (x2 an integer), without overflowing in the power for large |x2|."""
    x1 = _float_of(x1, "ldexp")
    n = qb.asarray(x2)
    if n.dtype.kind not in "iu":
        raise TypeError(f"ldexp: the exponent must be an integer array, got {n.dtype}")
    # Three factors, each a power of two inside the dtype's normal range, applied in turn: a
    # subnormal x1 times 2**276 in float32 reaches its (finite) result without an inf between.
    lo, hi = (-126, 127) if x1.dtype == _core.float32 else (-1022, 1023)
    n1 = qb.clip(n, lo, hi)
    n2 = qb.clip(n - n1, lo, hi)
    two = qb.asarray(2.0, dtype=x1.dtype)
    out = x1
    for part in (n1, n2, n - n1 - n2):
        out = out * qb.power(two, part.astype(x1.dtype))
    return out


def frexp(x, /):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1
    ((0, 0) for 0; inf and NaN keep their value with exponent 0)."""
    x = _float_of(x, "frexp")
    finite = qb.isfinite(x) & (x != 0)
    ax = qb.where(finite, qb.abs(x), qb.ones_like(x))
    e = (qb.floor(qb.log2(ax)) + 1.0).astype(_core.int32)
    m = ldexp(qb.where(finite, x, qb.ones_like(x)), -e)
    # log2 can round across a power of two: one correction each way.
    big = qb.abs(m) >= 1.0
    m, e = qb.where(big, m * 0.5, m), qb.where(big, e + 1, e)
    small = qb.abs(m) < 0.5
    m, e = qb.where(small, m * 2.0, m), qb.where(small, e - 1, e)
    return qb.where(finite, m, x), qb.where(finite, e, qb.zeros_like(e))


def common_float(*args):
    """The float dtype for a computation on args, as JAX promotes: float64 when any array
    argument is float64, else float32 when one is float32, else the default; Python
    scalars are weak (they never decide). Quabla's own ops do not mix float32 and float64
    implicitly, so compositions cast their operands to this first."""
    kinds = set()
    for a in args:
        if isinstance(a, (bool, int, float, complex)) or a is None:
            continue
        d = getattr(a, "dtype", None)
        if d is None:
            d = qb.asarray(a).dtype
        if not isinstance(d, type(_core.float32)):
            try:
                d = _core.zeros((), d).dtype
            except Exception:
                continue
        kinds.add(d)
    kinds = {_real_dtype(k) for k in kinds}  # complex64 counts as float32, complex128 as float64
    if _core.float64 in kinds:
        return _core.float64
    if _core.float32 in kinds:
        return _core.float32
    return qb.default_dtype()


def common_inexact(*args):
    """common_float, or the complex dtype of its precision when an argument is complex
    (jax.numpy's promote_dtypes_inexact)."""
    d = common_float(*args)
    if any(_is_complex(a) for a in args):
        return _core.complex64 if d == _core.float32 else _core.complex128
    return d


def _float_constants(dtype):
    if dtype == _core.float32:
        return 24, 1.401298464324817e-45, 3.4028234663852886e38
    return 53, 5e-324, 1.7976931348623157e308


def nextafter(x1, x2, /):
    """The next float after x1 in the direction of x2 (x2 itself when they are equal)."""
    _no_complex("nextafter", x1, x2)
    dtype = common_float(x1, x2)
    x, y = qb.asarray(x1).astype(dtype), qb.asarray(x2).astype(dtype)
    shape = tuple(qb.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    x, y = qb.broadcast_to(x, shape), qb.broadcast_to(y, shape)
    bits, least, largest = _float_constants(dtype)
    up = y > x
    m, e = frexp(x)
    ulp = qb.maximum(ldexp(qb.ones_like(x), e - bits), least)
    toward_zero = (x > 0) != up
    # Below a power of two (|m| = 1/2) the spacing toward zero is half as wide.
    step = qb.where(toward_zero & (qb.abs(m) == 0.5), qb.maximum(ulp * 0.5, least), ulp)
    out = qb.where(up, x + step, x - step)
    tiny, big = qb.full_like(x, least), qb.full_like(x, largest)
    out = qb.where(x == 0, qb.where(up, tiny, -tiny), out)
    out = qb.where(qb.isinf(x), qb.where(x > 0, big, -big), out)
    out = qb.where(x == y, y, out)
    return qb.where(qb.isnan(x) | qb.isnan(y), qb.full_like(x, math.nan), out)


def spacing(x, /):
    """The distance from x to the next float away from zero (NumPy's spacing)."""
    x = _float_of(x, "spacing")
    return nextafter(x, qb.where(x < 0, qb.full_like(x, -math.inf), qb.full_like(x, math.inf))) - x


def bitwise_count(x, /):
    """The number of set bits of each integer's absolute value (NumPy 2's bitwise_count)."""
    x = qb.asarray(x)
    return qb.lax.population_count(qb.abs(x))


# ---- options the core functions do not take ------------------------------------------------

def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0):
    """num evenly spaced values from start to stop (arrays give one sequence per element,
    along axis); retstep also returns the spacing (a float). An integer dtype floors the
    values, as NumPy."""
    out_dtype = None if dtype is None else _core.zeros((), dtype).dtype
    integer = out_dtype is not None and out_dtype.kind in "iu"
    complex_ends = _is_complex(start) or _is_complex(stop)
    if complex_ends and out_dtype is not None and out_dtype not in _COMPLEX:
        raise TypeError(f"linspace: complex start or stop with dtype={out_dtype.name} would lose the imaginary "
                        f"part; pass a complex dtype (qb.complex128) or real ends")
    scalar = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, stop))
    if scalar and not retstep and axis == 0 and not integer and _isint(num):
        return _core.linspace(start, stop, int(num), endpoint=endpoint, dtype=dtype)
    if not _isint(num) or int(num) < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {num!r}")
    num = int(num)
    calc = common_inexact(start, stop) if out_dtype is None or integer else out_dtype
    if out_dtype is None:
        out_dtype = calc
    lo, hi = qb.asarray(start).astype(calc), qb.asarray(stop).astype(calc)
    shape = tuple(qb.broadcast_shapes(tuple(lo.shape), tuple(hi.shape)))
    lo, hi = qb.broadcast_to(lo, shape), qb.broadcast_to(hi, shape)
    div = (num - 1) if endpoint else num
    step = (hi - lo) / div if div > 0 else qb.full_like(lo, math.nan)
    t = qb.arange(num, dtype=_real_dtype(calc)).reshape((num,) + (1,) * len(shape))
    values = lo + t * (hi - lo) / div if div > 0 else qb.broadcast_to(lo, (num,) + shape)
    if endpoint and num > 1:
        values = qb.concatenate([values[:-1], hi[None]], axis=0)
    if integer:
        values = qb.floor(values)
    values = qb.moveaxis(values, 0, axis % (len(shape) + 1)).astype(out_dtype)
    return (values, step) if retstep else values


def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None):
    """a with a new shape; order 'F' reads and writes the elements column-major."""
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape: missing the shape; call reshape(a, (2, 3))")
    if order in ("C", "A"):
        return _core.reshape(a, shape)
    if order != "F":
        raise ValueError(f"reshape: order must be 'C', 'F' or 'A', got {order!r}")
    a = qb.asarray(a)
    shape = (shape,) if _isint(shape) else tuple(shape)
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    return qb.transpose(_core.reshape(qb.transpose(a), tuple(reversed(shape))))


def full_like(a, fill_value, dtype=None, shape=None):
    """An array like a (its shape unless shape is given, its dtype unless dtype is) of
    fill_value (a complex one needs a complex dtype: a or dtype)."""
    array_fill = isinstance(fill_value, _core.Array) and (fill_value._is_tracer or fill_value.ndim)
    if shape is None and not _is_complex(fill_value) and not array_fill:
        return _core.full_like(a, fill_value, dtype)
    a = qb.asarray(a)
    shape = tuple(a.shape) if shape is None else (shape,) if _isint(shape) else tuple(shape)
    return full(shape, fill_value, dtype=a.dtype if dtype is None else dtype, _name="full_like")


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf=None, neginf=None):
    """x with NaN replaced by nan and infinities by posinf / neginf (default: the dtype's
    largest and smallest finite values): the core's nan_to_num, and for complex x applied to
    the real and imaginary parts alike (as NumPy and jax.numpy)."""
    x = x if isinstance(x, _core.Array) else qb.asarray(x)
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if _is_complex(v):
            raise TypeError(f"nan_to_num: {name} must be a real number (it replaces each part of a complex "
                            f"number alike), got {v!r}")
    kw = {k: v for k, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)) if v is not None}
    if any(isinstance(v, _core.Array) for v in kw.values()):  # array (traced) replacements
        def replace(part):
            if part.dtype.kind not in "fc":
                return part
            info = qb.finfo(part.dtype)
            big = kw.get("posinf", float(info.max))
            low = kw.get("neginf", float(info.min))
            part = qb.where(qb.isnan(part), qb.asarray(kw.get("nan", 0.0)).astype(part.dtype), part)
            part = qb.where(part == math.inf, qb.asarray(big).astype(part.dtype), part)
            return qb.where(part == -math.inf, qb.asarray(low).astype(part.dtype), part)
        if x.dtype not in _COMPLEX:
            return replace(x)
        return _core._complex(replace(_core._real(x)), replace(_core._imag(x)))
    if x.dtype not in _COMPLEX:
        return _core.nan_to_num(x, **kw)
    return _core._complex(_core.nan_to_num(_core._real(x), **kw), _core.nan_to_num(_core._imag(x), **kw))


def _array_fill(shape, fill_value, dtype, name):
    """full of an array fill value (traced, or of any shape broadcasting to shape), as jax.numpy."""
    v = qb.asarray(fill_value) if dtype is None else qb.asarray(fill_value).astype(dtype)
    shape = (shape,) if _isint(shape) else tuple(shape)
    try:
        return qb.broadcast_to(v, shape)
    except Exception as e:
        raise ValueError(f"{name}: the fill value of shape {tuple(v.shape)} does not broadcast to {shape}") from e


def full(shape, fill_value, dtype=None, *, _name="full"):
    """An array of shape filled with fill_value (the core's full, and complex fill values:
    their dtype, or a complex dtype given; a real dtype for a complex value raises). An
    array fill value (traced too) broadcasts to shape, as in jax.numpy."""
    if fill_value is None:
        raise TypeError(f"{_name}: fill_value must be a number, a bool or an array, got None")
    if isinstance(fill_value, _core.Array) and (fill_value._is_tracer or fill_value.ndim) and \
            not _is_complex(fill_value):
        return _array_fill(shape, fill_value, dtype, _name)
    if not isinstance(fill_value, (int, float, bool, complex, _core.Array)) and getattr(fill_value, "ndim", 0):
        return _array_fill(shape, fill_value, dtype, _name)  # a NumPy array
    if not _is_complex(fill_value):
        return _core.full(shape, fill_value, dtype=dtype)
    v = qb.asarray(fill_value)
    d = v.dtype if dtype is None else _core.zeros((), dtype).dtype
    if d not in _COMPLEX:
        raise TypeError(f"{_name}: the fill value {fill_value!r} is complex but the dtype is {d.name}, which would "
                        f"lose its imaginary part; pass a complex dtype (dtype=qb.complex128)")
    part = _real_dtype(d)
    re = _core.full(shape, _core._real(v).astype(part), dtype=part)
    im = _core.full(shape, _core._imag(v).astype(part), dtype=part)
    return _core._complex(re, im)
