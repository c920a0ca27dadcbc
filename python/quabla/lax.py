"""The jax.lax functions PINN code reaches for, with jax.lax's names and semantics."""
from __future__ import annotations

import builtins as _builtins
from typing import Callable, Sequence

from ._indexing import dynamic_slice, dynamic_update_slice, dynamic_index_in_dim, top_k  # noqa: F401
from ._custom import stop_gradient  # noqa: F401
from ._implicit import custom_linear_solve, custom_root  # noqa: F401
from ._control import cond, fori_loop, scan, while_loop  # noqa: F401
from ._named_axes import (  # noqa: F401
    all_gather, axis_index, axis_size, pmax, pmean, pmin, ppermute, pshuffle, psum, psum_scatter)
from ._package import qb as _qb

import enum as _enum


class Precision(_enum.Enum):
    """jax.lax.Precision: DEFAULT, HIGH, HIGHEST (or their names as strings, "default",
    "high", "highest", and JAX's aliases "fastest", "bfloat16", "tensorfloat32", "float32").
    Accepted by precision= of the products (dot, matmul, tensordot, inner, vdot, einsum,
    lax.dot, lax.dot_general) and a no-op: Quabla computes every product at the full
    precision of its dtype on the CPU."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            named = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT, "high": cls.HIGH,
                     "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH, "highest": cls.HIGHEST,
                     "float32": cls.HIGHEST}
            if value.lower() in named:
                return named[value.lower()]
        return None

    def __str__(self) -> str:
        return self.name


def _check_precision(precision, name: str):
    """Validates a precision= argument (None, a Precision, its name, or a pair of them) and
    returns it as Precision values; raises ValueError/TypeError saying what is accepted."""
    if precision is None:
        return None
    items = precision if isinstance(precision, (tuple, list)) else (precision,)
    if isinstance(precision, (tuple, list)) and len(items) != 2:
        raise ValueError(f"{name}: precision must be None, a lax.Precision, its name, or a pair of them, got "
                         f"{precision!r}")
    out = []
    for p in items:
        if p is None:
            out.append(None)
            continue
        if not isinstance(p, (Precision, str)):
            raise TypeError(f"{name}: precision must be None, a lax.Precision or one of 'default', 'high', 'highest', "
                            f"got {type(p).__name__} {p!r}")
        try:
            out.append(Precision(p))
        except ValueError:
            raise ValueError(f"{name}: unknown precision {p!r}; use lax.Precision.DEFAULT, HIGH or HIGHEST (or "
                             f"'default', 'high', 'highest')") from None
    return tuple(out) if isinstance(precision, (tuple, list)) else out[0]


def switch(index, branches: Sequence[Callable], *operands):
    """branches[index](*operands), index clamped to [0, len(branches) - 1] (as jax.lax.switch):
    nested conds, so only the selected branch runs."""
    branches = list(branches)
    if not branches:
        raise ValueError("switch: needs at least one branch")
    index = _qb.asarray(index)
    if index.dtype.kind not in "iub":  # a float index is refused, as jax.lax.switch does, never truncated
        raise TypeError(f"switch: the branch index must be an integer, got {index.dtype.name}")
    if index.ndim != 0:
        raise TypeError(f"switch: the branch index must be a scalar, got shape {tuple(index.shape)}")
    if len(branches) == 1:
        return branches[0](*operands)
    idx = _qb.clip(index.astype(_qb.int32), 0, len(branches) - 1)

    def pick(lo: int, hi: int):  # branches[lo:hi] by bisection
        if hi - lo == 1:
            return branches[lo]
        mid = (lo + hi) // 2
        return lambda *ops: cond(idx < mid, pick(lo, mid), pick(mid, hi), *ops)
    return pick(0, len(branches))(*operands)


def map(f: Callable, xs, *, batch_size=None):  # noqa: A001 (jax.lax's name)
    """f over the leading axis of xs (a pytree), one step at a time, as a scan; with
    batch_size, batch_size examples per step under vmap (the remainder vmapped after)."""
    if batch_size is None:
        return scan(lambda c, x: (c, f(x)), None, xs)[1]
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size!r}")
    leaves = _qb.tree.leaves(xs)
    if not leaves:
        raise ValueError("lax.map: xs has no arrays to map over")
    n = _qb.asarray(leaves[0]).shape[0]
    if n == 0:
        return scan(lambda c, x: (c, f(x)), None, xs)[1]
    full, rest = divmod(n, batch_size)
    g = _qb.vmap(f)
    parts = []
    if full:
        body = _qb.tree.map(lambda x: _qb.asarray(x)[:full * batch_size].reshape(
            (full, batch_size) + tuple(_qb.asarray(x).shape[1:])), xs)
        ys = scan(lambda c, x: (c, g(x)), None, body)[1]
        parts.append(_qb.tree.map(lambda y: y.reshape((full * batch_size,) + tuple(y.shape[2:])), ys))
    if rest:
        parts.append(g(_qb.tree.map(lambda x: _qb.asarray(x)[full * batch_size:], xs)))
    if len(parts) == 1:
        return parts[0]
    return _qb.tree.map(lambda a, b: _qb.concatenate([a, b]), parts[0], parts[1])


def select(pred, on_true, on_false):
    """on_true where pred, on_false elsewhere (operands of one shape)."""
    return _qb.where(pred, on_true, on_false)


def clamp(min, x, max):  # noqa: A002 (jax.lax's argument names)
    """x clipped to [min, max]."""
    return _qb.minimum(_qb.maximum(x, min), max)


def _rev(f, x, axis, reverse):
    x = _qb.asarray(x)
    return _qb.flip(f(_qb.flip(x, axis), axis=axis), axis) if reverse else f(x, axis=axis)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """The running sum along axis (from the end when reverse)."""
    return _rev(_qb.cumsum, operand, axis, reverse)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """The running product along axis."""
    return _rev(_qb.cumprod, operand, axis, reverse)


def cummax(operand, axis: int = 0, reverse: bool = False):
    """The running maximum along axis."""
    return _rev(_qb.cummax, operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
    """The running minimum along axis."""
    return _rev(_qb.cummin, operand, axis, reverse)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """operand sorted along dimension; a tuple (or list) of operands of one shape is sorted
    together, lexicographically by its first num_keys operands (stably), as jax.lax.sort."""
    if not isinstance(operand, (tuple, list)):
        if num_keys != 1:
            raise ValueError(f"lax.sort: num_keys={num_keys} needs a tuple of operands")
        return _qb.sort(operand, axis=dimension)
    ops = [_qb.asarray(o) for o in operand]
    if not ops:
        raise ValueError("lax.sort: needs at least one operand")
    if any(tuple(o.shape) != tuple(ops[0].shape) for o in ops):
        raise TypeError(f"lax.sort: the operands must share one shape, got {[tuple(o.shape) for o in ops]}")
    if not isinstance(num_keys, int) or not 1 <= num_keys <= len(ops):
        raise ValueError(f"lax.sort: num_keys must be in [1, {len(ops)}], got {num_keys!r}")
    if len(ops) == 1:
        return (_qb.sort(ops[0], axis=dimension),)
    perm = _qb.lexsort(tuple(reversed(ops[:num_keys])), axis=dimension)  # lexsort's last key is the primary
    out = tuple(_qb.take_along_axis(o, perm, axis=dimension) for o in ops)
    return out if isinstance(operand, tuple) else list(out)


def argmax(operand, axis: int, index_dtype=None):
    """Indices of the maxima along axis."""
    out = _qb.argmax(operand, axis=axis)
    return out if index_dtype is None else out.astype(index_dtype)


def argmin(operand, axis: int, index_dtype=None):
    """Indices of the minima along axis."""
    out = _qb.argmin(operand, axis=axis)
    return out if index_dtype is None else out.astype(index_dtype)


def rsqrt(x):
    """1 / sqrt(x)."""
    return 1.0 / _qb.sqrt(x)


def integer_pow(x, y: int):
    """x ** y for a Python int y."""
    if isinstance(y, bool) or not isinstance(y, int):
        raise TypeError(f"integer_pow: y must be a Python int, got {type(y).__name__}")
    return _qb.power(x, y)


def iota(dtype, size: int, dimension: int = 0, shape=None):
    """0, 1, ..., size - 1 in dtype (along `dimension` of `shape` when given)."""
    if shape is None:
        return _qb.arange(size, dtype=dtype)
    shape = tuple(shape)
    return _qb.broadcast_to(_qb.arange(shape[dimension], dtype=dtype).reshape(
        tuple(shape[dimension] if i == dimension else 1 for i in range(len(shape)))), shape)


def full(shape, fill_value, dtype=None):
    """An array of shape filled with fill_value."""
    return _qb.full(shape, fill_value, dtype=dtype)


def full_like(x, fill_value, dtype=None, shape=None):
    """full with x's shape and dtype unless given."""
    x = _qb.asarray(x)
    return _qb.full(tuple(x.shape) if shape is None else shape, fill_value, dtype=x.dtype if dtype is None else dtype)


def convert_element_type(operand, new_dtype):
    """operand converted to new_dtype."""
    return _qb.asarray(operand).astype(new_dtype)


def expand_dims(array, dimensions: Sequence[int]):
    """array with size-1 axes inserted at dimensions."""
    out = _qb.asarray(array)
    for d in sorted(dimensions):
        out = _qb.expand_dims(out, d)
    return out


def broadcast_in_dim(operand, shape, broadcast_dimensions: Sequence[int]):
    """operand broadcast to shape, its axis i landing on axis broadcast_dimensions[i]."""
    x = _qb.asarray(operand)
    dims = list(broadcast_dimensions)
    if len(dims) != x.ndim:
        raise ValueError(f"broadcast_in_dim: {len(dims)} broadcast_dimensions for an operand of rank {x.ndim}")
    full_shape = tuple(shape)
    inter = [1] * len(full_shape)
    for i, d in enumerate(dims):
        inter[d] = x.shape[i]
    return _qb.broadcast_to(x.reshape(tuple(inter)), full_shape)


def broadcast(operand, sizes: Sequence[int]):
    """operand with leading axes of sizes added."""
    x = _qb.asarray(operand)
    return _qb.broadcast_to(x, tuple(sizes) + tuple(x.shape))


def reshape(operand, new_sizes: Sequence[int], dimensions=None):
    """operand (transposed by dimensions first, when given) reshaped to new_sizes."""
    x = _qb.asarray(operand)
    if dimensions is not None:
        x = _qb.transpose(x, tuple(dimensions))
    return x.reshape(tuple(new_sizes))


def squeeze(array, dimensions: Sequence[int]):
    """array without its size-1 axes dimensions."""
    return _qb.squeeze(array, axis=tuple(dimensions))


def concatenate(operands, dimension: int):
    """The operands joined along dimension."""
    return _qb.concatenate(list(operands), axis=dimension)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 (jax.lax's name)
    """operand[start:limit:stride] on every axis (static bounds)."""
    x = _qb.asarray(operand)
    strides = strides or (1,) * x.ndim
    import builtins
    return x[tuple(builtins.slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    """operand[start:limit:stride] along one axis."""
    import builtins
    x = _qb.asarray(operand)
    index = [builtins.slice(None)] * x.ndim
    index[axis] = builtins.slice(start_index, limit_index, stride)
    return x[tuple(index)]


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The slice at a static index along axis (its axis kept unless keepdims=False)."""
    out = slice_in_dim(operand, index, index + 1 if index != -1 else None, 1, axis)
    return out if keepdims else _qb.squeeze(out, axis=axis)


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """dynamic_slice along one axis (a traced start, clamped into range)."""
    x = _qb.asarray(operand)
    starts = [0] * x.ndim
    starts[axis] = start_index
    sizes = list(x.shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    """dynamic_update_slice along one axis."""
    x = _qb.asarray(operand)
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def _elementwise(name: str, doc: str):
    def f(*args):
        return getattr(_qb, name)(*args)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


add = _elementwise("add", "x + y.")
sub = _elementwise("subtract", "x - y.")
mul = _elementwise("multiply", "x * y.")
def _is_int(x) -> bool:
    return _qb.asarray(x).dtype.kind in "iu"


def div(x, y):
    """x / y; on integers the quotient truncated toward zero (C's and XLA's), not floored."""
    if not (_is_int(x) and _is_int(y)):
        return _qb.divide(x, y)
    q = _qb.floor_divide(x, y)
    r = _qb.subtract(x, _qb.multiply(q, y))
    fix = (r != 0) & ((_qb.asarray(x) < 0) != (_qb.asarray(y) < 0))
    return q + fix.astype(q.dtype)


def rem(x, y):
    """The remainder with the dividend's sign (C's fmod and XLA's rem)."""
    if not (_is_int(x) and _is_int(y)):
        return _qb.fmod(x, y)
    return _qb.subtract(x, _qb.multiply(div(x, y), y))

pow = _elementwise("power", "x ** y.")  # noqa: A001
neg = _elementwise("negative", "-x.")
max = _elementwise("maximum", "The elementwise maximum.")  # noqa: A001
min = _elementwise("minimum", "The elementwise minimum.")  # noqa: A001
abs = _elementwise("abs", "|x|.")  # noqa: A001
sign = _elementwise("sign", "The sign of x.")
exp = _elementwise("exp", "e ** x.")
exp2 = _elementwise("exp2", "2 ** x.")
log = _elementwise("log", "The natural logarithm.")
sin = _elementwise("sin", "sin x.")
cos = _elementwise("cos", "cos x.")
tan = _elementwise("tan", "tan x.")
tanh = _elementwise("tanh", "tanh x.")
atan2 = _elementwise("arctan2", "The angle of (x, y) from y's and x's signs.")
sqrt = _elementwise("sqrt", "The square root.")
cbrt = _elementwise("cbrt", "The cube root.")
erf = _elementwise("erf", "The error function.")
erfc = _elementwise("erfc", "The complementary error function.")
square = _elementwise("square", "x * x.")
logistic = _elementwise("sigmoid", "1 / (1 + exp(-x)).")
is_finite = _elementwise("isfinite", "Whether x is finite.")


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations of elems (a pytree of arrays of one length along axis) under the
    associative fn, in O(log n) rounds of vectorised calls (as jax.lax.associative_scan):
    element i is fn(...fn(fn(e_0, e_1), e_2)..., e_i). fn takes and returns pytrees of elems'
    structure and must work on whole slices."""
    from . import tree as _tree
    import builtins
    leaves, treedef = _tree.flatten(elems)
    if not leaves:
        raise ValueError("associative_scan: elems holds no arrays")
    leaves = [_qb.asarray(x) for x in leaves]
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"associative_scan: axis must be an int, got {type(axis).__name__}")
    for x in leaves:
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"associative_scan: axis {axis} is out of range for a leaf of shape {tuple(x.shape)}")
    ax = axis % leaves[0].ndim
    n = leaves[0].shape[ax]
    if any(x.shape[ax] != n for x in leaves):
        raise ValueError(f"associative_scan: every leaf needs the same length along axis {axis}")

    def cut(x, start, stop, step=1):
        index = [builtins.slice(None)] * x.ndim
        index[ax] = builtins.slice(start, stop, step)
        return x[tuple(index)]

    def combine(a, b):
        out = fn(_tree.unflatten(treedef, a), _tree.unflatten(treedef, b))
        got, got_def = _tree.flatten(out)
        if got_def != treedef:
            raise TypeError(f"associative_scan: fn returned a {got_def}, but elems is a {treedef}")
        return [_qb.asarray(g) for g in got]

    def interleave(even, odd):  # [even_0, odd_0, even_1, odd_1, ...]
        ne, no = even.shape[ax], odd.shape[ax]
        if ne > no:
            odd = _qb.concatenate([odd, cut(even, ne - 1, ne)], axis=ax)
        merged = _qb.stack([even, odd], axis=ax + 1)
        shape = list(even.shape)
        shape[ax] = 2 * ne
        merged = merged.reshape(tuple(shape))
        return cut(merged, 0, ne + no)

    def scan_(xs):
        m = xs[0].shape[ax]
        if m < 2:
            return xs
        pairs = combine([cut(x, 0, m - 1, 2) for x in xs], [cut(x, 1, m, 2) for x in xs])
        odd = scan_(pairs)  # prefixes ending at positions 1, 3, 5, ...
        if m % 2 == 0:
            rest = combine([cut(o, 0, o.shape[ax] - 1) for o in odd], [cut(x, 2, m, 2) for x in xs])
        else:
            rest = combine(odd, [cut(x, 2, m, 2) for x in xs])
        even = [_qb.concatenate([cut(x, 0, 1), r], axis=ax) for x, r in zip(xs, rest)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    if reverse:
        leaves = [_qb.flip(x, ax) for x in leaves]
    out = scan_(leaves)
    if reverse:
        out = [_qb.flip(x, ax) for x in out]
    return _tree.unflatten(treedef, out)


from ._special import lgamma, digamma, erf_inv, polygamma  # noqa: E402,F401


def pad(operand, padding_value, padding_config):
    """operand padded with padding_value: per axis (low, high, interior) elements before,
    after and between neighbours; a negative low or high crops instead (as jax.lax.pad)."""
    x = _qb.asarray(operand)
    config = [tuple(c) for c in padding_config]
    if len(config) != x.ndim or any(len(c) != 3 for c in config):
        raise ValueError(f"lax.pad: padding_config needs one (low, high, interior) triple per axis of an array of "
                         f"shape {tuple(x.shape)}, got {padding_config!r}")
    for c in config:
        if any(isinstance(v, bool) or not isinstance(v, int) for v in c) or c[2] < 0:
            raise ValueError(f"lax.pad: (low, high, interior) must be ints with interior >= 0, got {c!r}")
    value = _qb.asarray(padding_value)
    if value.ndim != 0:
        raise ValueError(f"lax.pad: padding_value must be a scalar, got shape {tuple(value.shape)}")
    if value.dtype != x.dtype:
        raise TypeError(f"lax.pad: padding_value is {value.dtype.name} but the operand is {x.dtype.name}; "
                        f"they must have one dtype (as in JAX)")
    padded = _qb._core._pad_constant(x, value, [_builtins.max(lo, 0) for lo, _, _ in config],
                                     [_builtins.max(hi, 0) for _, hi, _ in config], [it for _, _, it in config])
    if all(lo >= 0 and hi >= 0 for lo, hi, _ in config):
        return padded
    index = []
    for (lo, hi, _), n in zip(config, padded.shape):
        start, stop = -lo if lo < 0 else 0, n + hi if hi < 0 else n
        if stop < start:
            raise ValueError(f"lax.pad: the negative padding {(lo, hi)} crops more than the padded axis holds ({n})")
        index.append(_builtins.slice(start, stop))  # (lax.slice shadows the builtin)
    return padded[tuple(index)]


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """The general contraction of jax.lax: dimension_numbers = ((lhs_contracting,
    rhs_contracting), (lhs_batch, rhs_batch)); the result's axes are the batch axes, then
    lhs's free axes, then rhs's (an einsum)."""
    import string
    _check_precision(precision, "lax.dot_general")
    lhs, rhs = _qb.asarray(lhs), _qb.asarray(rhs)
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        lc, rc, lb, rb = (tuple(int(d) for d in dims) for dims in (lc, rc, lb, rb))
    except (TypeError, ValueError):
        raise TypeError(f"lax.dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
                        f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}") from None
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ValueError(f"lax.dot_general: contracting {lc} / {rc} and batch {lb} / {rb} dimensions must pair up")

    def axes(dims, ndim, which):
        out = []
        for d in dims:
            if not -ndim <= d < ndim:
                raise ValueError(f"lax.dot_general: dimension {d} is out of range for the {which} of rank {ndim}")
            out.append(d % ndim)
        if len(set(out)) != len(out):
            raise ValueError(f"lax.dot_general: the {which} repeats a dimension in {dims}")
        return out
    lc, lb = axes(lc, lhs.ndim, "lhs"), axes(lb, lhs.ndim, "lhs")
    rc, rb = axes(rc, rhs.ndim, "rhs"), axes(rb, rhs.ndim, "rhs")
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise ValueError("lax.dot_general: a dimension cannot be both contracting and batch")
    letters = iter(string.ascii_letters)
    ls, rs, batch = [None] * lhs.ndim, [None] * rhs.ndim, []
    for a, b in zip(lb, rb):
        ls[a] = rs[b] = next(letters)
        batch.append(ls[a])
    for a, b in zip(lc, rc):
        ls[a] = rs[b] = next(letters)
    free = []
    for subs in (ls, rs):
        for i, s in enumerate(subs):
            if s is None:
                subs[i] = next(letters)
                free.append(subs[i])
    for a, b in list(zip(lb, rb)) + list(zip(lc, rc)):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"lax.dot_general: lhs dimension {a} ({lhs.shape[a]}) and rhs dimension {b} "
                             f"({rhs.shape[b]}) are paired but differ in size")
    out = _qb.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(batch + free)}", lhs, rhs)
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def _monoid(computation):
    """The core reduction a well-known binary computation stands for, or None."""
    import operator
    known = {operator.add: "sum", operator.mul: "prod", add: "sum", mul: "prod", max: "max", min: "min",
             _qb.add: "sum", _qb.multiply: "prod", _qb.maximum: "max", _qb.minimum: "min"}
    try:
        return known.get(computation)
    except TypeError:  # an unhashable callable
        return None


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):  # noqa: A001 (jax.lax's name)
    """jax.lax.reduce: operands (an array or a pytree of arrays) reduced over `dimensions`
    with the associative `computation` and its identity init_values. add, mul, max and min
    become the core reductions; any other computation is applied pairwise in a tree of
    log2(n) vectorised rounds (the order XLA may also choose: exact for associative ones)."""
    flat, treedef = _qb.tree.flatten(operands)
    inits, init_def = _qb.tree.flatten(init_values)
    if not flat or len(flat) != len(inits) or treedef != init_def:
        raise ValueError("lax.reduce: operands and init_values must be pytrees of one structure")
    flat = [_qb.asarray(x) for x in flat]
    inits = [_qb.asarray(v).astype(x.dtype) for x, v in zip(flat, inits)]
    ndim = flat[0].ndim
    if any(x.shape != flat[0].shape for x in flat):
        raise ValueError("lax.reduce: every operand must have the same shape")
    dims = sorted({int(d) % ndim if ndim else int(d) for d in dimensions})
    if any(not 0 <= d < _builtins.max(ndim, 1) for d in dims) or (ndim == 0 and dims):
        raise ValueError(f"lax.reduce: dimensions {tuple(dimensions)} out of range for rank {ndim}")
    kind = _monoid(computation) if len(flat) == 1 else None
    if kind is not None:
        out = getattr(_qb, kind)(flat[0], axis=tuple(dims)) if dims else flat[0]
        combine = {"sum": _qb.add, "prod": _qb.multiply, "max": _qb.maximum, "min": _qb.minimum}[kind]
        return _qb.tree.unflatten(treedef, [combine(inits[0], out).astype(flat[0].dtype)])
    keep = [d for d in range(ndim) if d not in dims]
    xs = [_qb.transpose(x, tuple(dims + keep)).reshape((-1,) + tuple(x.shape[d] for d in keep)) for x in flat]

    def apply(a, b):
        out = computation(_qb.tree.unflatten(treedef, a), _qb.tree.unflatten(treedef, b))
        leaves = _qb.tree.leaves(out)
        if len(leaves) != len(a):
            raise TypeError("lax.reduce: the computation must return operands of the init_values' structure")
        return [_qb.asarray(v) for v in leaves]
    while xs[0].shape[0] > 1:
        if xs[0].shape[0] % 2:  # an odd count: the identity pads it
            xs = [_qb.concatenate([x, _qb.broadcast_to(v, (1,) + tuple(x.shape[1:]))]) for x, v in zip(xs, inits)]
        xs = apply([x[0::2] for x in xs], [x[1::2] for x in xs])
    shape = tuple(flat[0].shape[d] for d in keep)
    if xs[0].shape[0] == 0:
        return _qb.tree.unflatten(treedef, [_qb.broadcast_to(v, shape) for v in inits])
    out = apply([_qb.broadcast_to(v, shape) for v in inits], [x[0] for x in xs])
    return _qb.tree.unflatten(treedef, [o.astype(x.dtype) for o, x in zip(out, flat)])


# -- reductions, comparisons and the remaining elementwise names -------------------------------

def reduce_sum(operand, axes: Sequence[int]):
    """The sum over axes, in operand's dtype."""
    operand = _qb.asarray(operand)
    return _qb.sum(operand, axis=tuple(axes)).astype(operand.dtype)


def reduce_prod(operand, axes: Sequence[int]):
    """The product over axes, in operand's dtype."""
    operand = _qb.asarray(operand)
    return _qb.prod(operand, axis=tuple(axes)).astype(operand.dtype)


def reduce_max(operand, axes: Sequence[int]):
    """The maximum over axes."""
    return _qb.max(operand, axis=tuple(axes))


def reduce_min(operand, axes: Sequence[int]):
    """The minimum over axes."""
    return _qb.min(operand, axis=tuple(axes))


def reduce_and(operand, axes: Sequence[int]):
    """Logical and over axes for bools, bitwise and for integers."""
    operand = _qb.asarray(operand)
    if operand.dtype == _qb.bool_:
        return _qb.all(operand, axis=tuple(axes))
    return reduce(operand, _qb.asarray(-1, dtype=operand.dtype), _qb.bitwise_and, tuple(axes))


def reduce_or(operand, axes: Sequence[int]):
    """Logical or over axes for bools, bitwise or for integers."""
    operand = _qb.asarray(operand)
    if operand.dtype == _qb.bool_:
        return _qb.any(operand, axis=tuple(axes))
    return reduce(operand, _qb.asarray(0, dtype=operand.dtype), _qb.bitwise_or, tuple(axes))


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector-vector, matrix-vector or matrix-matrix product (lhs rank 1 or 2, rhs rank 1 or 2)."""
    _check_precision(precision, "lax.dot")
    lhs, rhs = _qb.asarray(lhs), _qb.asarray(rhs)
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise TypeError(f"lax.dot: operands must have rank 1 or 2, got shapes {tuple(lhs.shape)} and "
                        f"{tuple(rhs.shape)} (use lax.dot_general or qb.matmul for batches)")
    out = _qb.dot(lhs, rhs)
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of shape whose value is the index along dimension."""
    return iota(dtype, tuple(shape)[dimension], dimension, shape)


def transpose(operand, permutation: Sequence[int]):
    """operand with its axes permuted."""
    return _qb.transpose(operand, tuple(permutation))


def rev(operand, dimensions: Sequence[int]):
    """operand reversed along dimensions."""
    return _qb.flip(operand, axis=tuple(dimensions))


def round(x, rounding_method=0):  # noqa: A001 (jax.lax's name)
    """x rounded to an integer value: halves away from zero (rounding_method 0, XLA's default)
    or to even (1, lax.RoundingMethod.TO_NEAREST_EVEN)."""
    method = int(getattr(rounding_method, "value", rounding_method))
    if method == 1:
        return _qb.rint(x)
    if method != 0:
        raise ValueError(f"lax.round: rounding_method must be 0 (AWAY_FROM_ZERO) or 1 (TO_NEAREST_EVEN), got "
                         f"{rounding_method!r}")
    x = _qb.asarray(x)
    t = _qb.trunc(x)  # x - t is exact, so halves are found without rounding x + 0.5
    return _qb.where(_qb.abs(x - t) >= 0.5, t + _qb.sign(x), t)


class RoundingMethod:
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def shift_right_logical(x, y):
    """x >> y filling with zeros (the integer's bits taken as unsigned); y outside [0, bits) gives 0."""
    x, y = _qb.asarray(x), _qb.asarray(y)
    bits = 8 * x.dtype.itemsize
    y = y.astype(x.dtype)
    if x.dtype.kind == "u":  # right_shift of an unsigned integer already fills with zeros
        return _qb.where(y < bits, _qb.right_shift(x, _qb.where(y < bits, y, 0)), _qb.zeros_like(x))
    inside = (y >= 0) & (y < bits)
    safe = _qb.where(inside, y, 0)
    ones = _qb.asarray(-1, dtype=x.dtype)
    # The low (bits - y) bits; for y = 0 the shift by bits gives 0 and the mask all ones.
    mask = _qb.bitwise_not(_qb.left_shift(ones, bits - safe))
    return _qb.where(inside, _qb.right_shift(x, safe) & mask, _qb.zeros_like(x))


def population_count(x):
    """The number of set bits of each integer (of its two's complement bits)."""
    x = _qb.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"lax.population_count: x must be an integer array, got {x.dtype}")
    bits = 8 * x.dtype.itemsize
    count = _qb.zeros_like(x)
    for i in range(bits):
        count = count + (shift_right_logical(x, i) & 1)
    return count


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """log(cumsum(exp(operand))) along axis, without overflow."""
    return associative_scan(_qb.logaddexp, operand, reverse=reverse, axis=axis)


floor = _elementwise("floor", "The largest integer value not above x.")
ceil = _elementwise("ceil", "The smallest integer value not below x.")
log1p = _elementwise("log1p", "log(1 + x), accurate near 0.")
expm1 = _elementwise("expm1", "exp(x) - 1, accurate near 0.")
asin = _elementwise("arcsin", "The inverse sine.")
acos = _elementwise("arccos", "The inverse cosine.")
atan = _elementwise("arctan", "The inverse tangent.")
sinh = _elementwise("sinh", "The hyperbolic sine.")
cosh = _elementwise("cosh", "The hyperbolic cosine.")
asinh = _elementwise("arcsinh", "The inverse hyperbolic sine.")
acosh = _elementwise("arccosh", "The inverse hyperbolic cosine.")
atanh = _elementwise("arctanh", "The inverse hyperbolic tangent.")
eq = _elementwise("equal", "x == y.")
ne = _elementwise("not_equal", "x != y.")
lt = _elementwise("less", "x < y.")
le = _elementwise("less_equal", "x <= y.")
gt = _elementwise("greater", "x > y.")
ge = _elementwise("greater_equal", "x >= y.")
bitwise_and = _elementwise("bitwise_and", "x & y.")
bitwise_or = _elementwise("bitwise_or", "x | y.")
bitwise_xor = _elementwise("bitwise_xor", "x ^ y.")
bitwise_not = _elementwise("bitwise_not", "~x.")
shift_left = _elementwise("left_shift", "x << y (0 for y outside [0, bits)).")
def shift_right_arithmetic(x, y):
    """x >> y filling with the sign bit (of an unsigned integer too: its bits taken as signed)."""
    x, y = _qb.asarray(x), _qb.asarray(y)
    signed = {_qb.uint8: _qb.int8, _qb.uint16: _qb.int16, _qb.uint32: _qb.int32}.get(x.dtype)
    if signed is None:
        return _qb.right_shift(x, y)
    return _qb.right_shift(x.astype(signed), y.astype(signed)).astype(x.dtype)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    from ._special_incomplete import gammainc
    return gammainc(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x)."""
    from ._special_incomplete import gammaincc
    return gammaincc(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    from ._special_incomplete import betainc as f
    return f(a, b, x)


def bessel_i0e(x):
    """exp(-|x|) I0(x)."""
    from ._special_incomplete import i0e
    return i0e(x)


def bessel_i1e(x):
    """exp(-|x|) I1(x)."""
    from ._special_incomplete import i1e
    return i1e(x)


from ._conv import (  # noqa: E402,F401
    ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated, conv_with_general_padding, reduce_window,
)

from ._lax_more import (  # noqa: E402,F401
    ConvGeneralDilatedDimensionNumbers, DotDimensionNumbers, GatherDimensionNumbers, GatherScatterMode, PrecisionLike,
    ScatterDimensionNumbers, approx_max_k, approx_min_k, batch_matmul, bitcast_convert_type, broadcast_like,
    broadcast_shapes, broadcast_to_rank, clz, collapse, conv_general_dilated_local, conv_general_dilated_patches,
    conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple, conv_transpose, conv_transpose_shape_tuple,
    dtype as _dtype, dynamic_update_index_in_dim, empty, gather, igamma_grad_a, index_take, mulhi, nextafter,
    optimization_barrier, padtype_to_pads, random_gamma_grad, reciprocal, reduce_precision, reduce_window_shape_tuple,
    reduce_xor, scatter, scatter_add, scatter_apply, scatter_max, scatter_min, scatter_mul, scatter_sub, select_n,
    sort_key_val, split, stack, tile, unstack, zeta,
)
dtype = _dtype  # (an assignment: the functions above take arguments named dtype)


def complex(x, y):  # noqa: A001  (jax.lax.complex's name)
    """x + i y from real arrays of one precision (broadcast; float32 parts give complex64)."""
    from . import _core
    return _core._complex(x, y)


def real(x):
    """The real part of a complex array."""
    return _qb.real(x)


def imag(x):
    """The imaginary part of a complex array."""
    return _qb.imag(x)


def conj(x):
    """The complex conjugate."""
    return _qb.conj(x)


def fft(x, fft_type="FFT", fft_lengths=None):
    """jax.lax.fft: fft_type 'FFT', 'IFFT', 'RFFT' or 'IRFFT' over the trailing len(fft_lengths)
    axes (all lengths given, as JAX requires)."""
    from . import fft as _fft
    name = getattr(fft_type, "name", fft_type)
    if fft_lengths is None:
        raise TypeError("lax.fft: fft_lengths is required (the lengths of the trailing axes to transform)")
    n = len(fft_lengths)
    axes = tuple(range(-n, 0))
    if name == "FFT":
        return _fft.fftn(x, s=fft_lengths, axes=axes)
    if name == "IFFT":
        return _fft.ifftn(x, s=fft_lengths, axes=axes)
    if name == "RFFT":
        return _fft.rfftn(x, s=fft_lengths, axes=axes)
    if name == "IRFFT":
        return _fft.irfftn(x, s=fft_lengths, axes=axes)
    raise ValueError(f"lax.fft: fft_type must be 'FFT', 'IFFT', 'RFFT' or 'IRFFT', got {fft_type!r}")


from . import _lax_linalg as linalg  # noqa: E402,F401  (jax.lax.linalg)
