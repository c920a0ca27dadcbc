"""jax.numpy shape, product and calculus functions composed from the core ops (DESIGN rule
2: no new IR op where slices, concatenation, reshapes, transposes, gathers and matmul do).
Every function follows NumPy's semantics for static (Python int) arguments, and, built from
differentiable, batchable ops, differentiates, vmaps and jits like the ops it is made of.
"""
from __future__ import annotations

import numbers as _numbers

import operator
from typing import Sequence, Union

from . import _core

__all__ = [
    "moveaxis", "swapaxes", "roll", "tile", "repeat", "diagonal", "diag", "trace", "outer", "inner",
    "tensordot", "kron", "cross", "diff", "norm", "split", "gradient", "trapezoid", "interp", "cumprod", "cummax", "cummin", "polyval", "vander", "identity", "pad",
]


def _isint(v) -> bool:
    """A Python int or an integer scalar of NumPy (numbers.Integral: bools too, as isinstance(v, int))."""
    return isinstance(v, _numbers.Integral)


def _arr(x):
    return x if isinstance(x, _core.Array) else _core.asarray(x)


_COMPLEX = (_core.complex64, _core.complex128)


def _is_complex(x, depth: int = 0) -> bool:
    """Whether x holds complex numbers: a complex Quabla or NumPy array, a Python or NumPy
    complex scalar, or a (shallow) list or tuple holding one."""
    if isinstance(x, _core.Array):
        return x.dtype in _COMPLEX
    if isinstance(x, complex):
        return True
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is not None:
        return kind == "c"
    if isinstance(x, (list, tuple)) and depth < 4:
        return any(_is_complex(v, depth + 1) for v in x)
    return False


def _real_dtype(dtype):
    """The real dtype of a complex one's parts (complex64 -> float32); other dtypes as they are."""
    return _core.float32 if dtype == _core.complex64 else _core.float64 if dtype == _core.complex128 else dtype


_NO_ORDER = "complex numbers have no order; apply it to qb.real(x), qb.imag(x) or qb.abs(x) instead"
_PARTS = "apply it to the real and imaginary parts (qb.real(x), qb.imag(x)) separately, or pass a real array"


def _no_complex(name: str, *xs, hint: str = _PARTS):
    """TypeError, naming the function, when any of xs holds complex numbers (for the functions
    not defined, or not available yet, for complex input: never a silently dropped imaginary
    part)."""
    for x in xs:
        if _is_complex(x):
            dtype = getattr(getattr(x, "dtype", None), "name", None) or "complex"
            raise TypeError(f"{name}: complex input ({dtype}) is not supported yet by this function; {hint}")


def _reject_complex(*xs, hint: str = _PARTS):
    """_no_complex for shared helpers (the special functions' promotions): the error names the
    public Quabla function that called the helper."""
    if not any(_is_complex(x) for x in xs):
        return
    import sys
    frame, name, private = sys._getframe(1), None, None
    while frame is not None:
        fn, module = frame.f_code.co_name, frame.f_globals.get("__name__", "")
        if module.startswith("quabla") and not fn.startswith("<") and fn not in ("wrapper", "call"):
            if not fn.startswith("_"):
                name = fn
                break
            if not fn.startswith("__"):
                private = fn.lstrip("_")  # (the outermost private one: e.g. a distribution's _norm_logpdf)
        frame = frame.f_back
    name = name or private
    _no_complex(name or "this function", *xs, hint=hint)


def _cast(name: str, v, dtype, what: str = "values"):
    """v (an array) in dtype; TypeError instead of dropping the imaginary part of complex v
    cast to a real dtype (NumPy raises for such an assignment too)."""
    if v.dtype == dtype:
        return v
    if v.dtype in _COMPLEX and dtype not in _COMPLEX:
        raise TypeError(f"{name}: cannot store complex {what} ({v.dtype.name}) in an array of dtype {dtype.name}: the "
                        f"imaginary part would be lost; make the array complex first (.astype(qb.complex128)) or "
                        f"pass real {what} (qb.real(v))")
    return v.astype(dtype)


def _axis(axis: int, ndim: int, name: str) -> int:
    if isinstance(axis, bool) or not hasattr(axis, "__index__") or isinstance(axis, _core.Array):
        raise TypeError(f"{name}: axis must be an int, got {type(axis).__name__}")
    axis = operator.index(axis)  # NumPy integers too
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def _static_int(v, name: str, what: str) -> int:
    if isinstance(v, bool) or not _isint(v):
        raise TypeError(f"{name}: {what} must be a Python int, got {type(v).__name__}")
    return v


def _indexing_take(x, idx, axis: int):
    from ._indexing import take
    return take(x, idx, axis=axis)


def _take(x, start: int, stop: int, axis: int):
    """x[..., start:stop, ...] along axis."""
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def moveaxis(x, source: Union[int, Sequence[int]], destination: Union[int, Sequence[int]]):
    """x with the axes `source` moved to `destination`, the others keeping their order."""
    x = _arr(x)
    src = [source] if _isint(source) else list(source)
    dst = [destination] if _isint(destination) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} need the same number of axes")
    src = [_axis(a, x.ndim, "moveaxis") for a in src]
    dst = [_axis(a, x.ndim, "moveaxis") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: repeated axes")
    rest = [a for a in range(x.ndim) if a not in src]
    perm = [None] * x.ndim
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return x if perm == list(range(x.ndim)) else _core.transpose(x, tuple(perm))


def swapaxes(x, axis1: int, axis2: int):
    x = _arr(x)
    a, b = _axis(axis1, x.ndim, "swapaxes"), _axis(axis2, x.ndim, "swapaxes")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return x if a == b else _core.transpose(x, tuple(perm))


def norm(x, axis=None, keepdims: bool = False):
    """The 2-norm sqrt(sum(x**2)) over axis (all axes when None), overflow-safe (the core's
    scaled form); an empty reduction gives 0 (as numpy.linalg.norm), never -inf. Complex x:
    the norm of |x| (a real result)."""
    x = _arr(x)
    if x.dtype in _COMPLEX:
        x = _core.abs(x)
    if x.size != 0 or x.dtype == _core.bool_:  # (bool: the core's error)
        return _core.norm(x, axis=axis, keepdims=keepdims)
    x = _core.sqrt(x)  # the core's result dtype (int32 -> float32, int64 -> float64)
    try:
        return _core.sqrt(_core.sum(x * x, axis=axis, keepdims=keepdims))  # exact 0 (the scaled form gives -inf)
    except (ValueError, TypeError) as e:
        msg = str(e)
        raise type(e)("norm:" + msg[4:] if msg.startswith("sum:") else msg) from None


def roll(x, shift, axis=None):
    """Elements shifted by `shift` along `axis` (all axes flattened when None), wrapping."""
    x = _arr(x)
    if axis is None:
        return _core.reshape(roll(_core.reshape(x, (-1,)), shift, 0), x.shape)
    shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift]
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    for s, a in zip(shifts, axes):
        a = _axis(a, x.ndim, "roll")
        n = x.shape[a]
        if isinstance(s, _core.Array):
            if s.ndim != 0 or s.dtype.kind not in "iu":
                raise TypeError(f"roll: an array shift must be an integer scalar, got {s.dtype.name} of shape "
                                f"{tuple(s.shape)}")
            if s._is_tracer:  # a traced shift (jit, vmap): gather the rotated indices
                if n:
                    idx = _core.remainder(_core.arange(n, dtype=_core.int64) - s.astype(_core.int64), n)
                    x = _indexing_take(x, idx, axis=a)
                continue
            s = int(s.item())
        s = _static_int(s, "roll", "shift")
        k = s % n if n else 0  # an empty axis rolls to itself (as NumPy)
        if k:
            x = _core.concat([_take(x, n - k, n, a), _take(x, 0, n - k, a)], axis=a)
    return x


def split(x, indices_or_sections, axis: int = 0):
    """numpy.split: an int gives that many equal sections (the axis must divide evenly);
    a sequence of indices cuts there, with NumPy's slice rules (an index past the end, or
    one not above the previous, gives an empty piece)."""
    x = _arr(x)
    if _isint(indices_or_sections) and not isinstance(indices_or_sections, bool):
        return _core.split(x, int(indices_or_sections), axis=axis)
    v = indices_or_sections
    if isinstance(v, _core.Array) and v._is_tracer:
        raise TypeError("split: the split indices must be static (Python ints or a concrete array), not traced")
    items = v.tolist() if hasattr(v, "tolist") else v
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"split: indices_or_sections must be an int or a sequence of ints, got {type(v).__name__}")
    cuts = [_static_int(c, "split", "an index") for c in items]
    ax = _axis(axis, x.ndim, "split")
    n = x.shape[ax]
    if cuts and 0 < cuts[0] and cuts[-1] < n and all(a < b for a, b in zip(cuts, cuts[1:])):
        return _core.split(x, cuts, axis=ax)  # no empty piece: the core's one op
    bounds = [0] + [max(0, min(n, c + n if c < 0 else c)) for c in cuts] + [n]
    return [_take(x, lo, max(lo, hi), ax) for lo, hi in zip(bounds[:-1], bounds[1:])]


def tile(x, reps):
    """x repeated reps[i] times along axis i (NumPy's rules for rank differences)."""
    x = _arr(x)
    reps = [reps] if _isint(reps) else list(reps)
    for r in reps:
        if _static_int(r, "tile", "reps") < 0:
            raise ValueError(f"tile: reps must be non-negative (0 gives an empty axis, as NumPy), got {reps}")
    reps = [int(r) for r in reps]
    nd = max(x.ndim, len(reps))
    reps = [1] * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + tuple(x.shape)
    inter, full, out = [], [], []
    for r, s in zip(reps, shape):
        inter += [1, s]
        full += [r, s]
        out.append(r * s)
    return _core.reshape(_core.broadcast_to(_core.reshape(x, tuple(inter)), tuple(full)), tuple(out))


def repeat(x, repeats, axis=None, *, total_repeat_length=None):
    """Each element repeated `repeats` times along axis (flattened when None); repeats is an
    int or one int per element of that axis. total_repeat_length fixes the result's length
    (as jax.numpy: extra repeats are dropped, missing ones repeat the last element); it is
    needed when repeats is traced (inside jit)."""
    x = _arr(x)
    if axis is None:
        x, axis = _core.reshape(x, (-1,)), 0
    axis = _axis(axis, x.ndim, "repeat")
    n = x.shape[axis]
    if isinstance(repeats, _core.Array) and not repeats._is_tracer:
        repeats = repeats.item() if repeats.ndim == 0 else repeats.numpy().tolist()
    if total_repeat_length is not None:
        total = _static_int(total_repeat_length, "repeat", "total_repeat_length")
        if total < 1:
            raise ValueError(f"repeat: total_repeat_length must be positive, got {total}")
        if isinstance(repeats, _core.Array) and repeats._is_tracer:
            r = _core.broadcast_to(repeats.astype(_core.int64), (n,)) if repeats.ndim == 0 else repeats.astype(_core.int64)
            if tuple(r.shape) != (n,):
                raise ValueError(f"repeat: {r.shape[0]} repeats for an axis of length {n}")
            ends = _core.cumsum(r)
            from ._indexing import searchsorted, take
            index = _core.minimum(searchsorted(ends, _core.arange(total, dtype=_core.int64), side="right"), n - 1)
            return take(x, index, axis=axis)
        counts = [_static_int(repeats, "repeat", "repeats")] * n if _isint(repeats) else \
            [_static_int(r, "repeat", "repeats") for r in repeats]
        if len(counts) != n:
            raise ValueError(f"repeat: {len(counts)} repeats for an axis of length {n}")
        # As jax.numpy: position k takes the element whose run covers it; past the end the
        # last element (jax.numpy's scatter-and-cumsum gives the same).
        import bisect
        import itertools
        ends = list(itertools.accumulate(counts))
        return _core.gather(x, [min(bisect.bisect_right(ends, k), n - 1) for k in range(total)], axis=axis)
    if isinstance(repeats, _core.Array) and repeats._is_tracer:
        raise ValueError("repeat: traced repeats (inside jit or a transform) need total_repeat_length=, the "
                         "static length of the result (as jax.numpy)")
    if _isint(repeats) and not isinstance(repeats, bool):
        if repeats < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
        shape = list(x.shape)
        e = _core.expand_dims(x, axis + 1)
        full = shape[:axis + 1] + [repeats] + shape[axis + 1:]
        shape[axis] *= repeats
        return _core.reshape(_core.broadcast_to(e, tuple(full)), tuple(shape))
    try:
        repeats = list(repeats)
    except TypeError:
        raise TypeError(f"repeat: repeats must be an int or a sequence of ints, got {type(repeats).__name__}") from None
    counts = [_static_int(r, "repeat", "repeats") for r in repeats]
    if len(counts) != n:
        raise ValueError(f"repeat: {len(counts)} repeats for an axis of length {n}")
    if any(c < 0 for c in counts):
        raise ValueError(f"repeat: repeats must be non-negative, got {counts}")
    index = [i for i, c in enumerate(counts) for _ in range(c)]
    return _core.gather(x, index, axis=axis)


def diagonal(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The diagonal of the (axis1, axis2) planes, as a last axis (as NumPy)."""
    x = _arr(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal: needs at least 2 dimensions, got shape {x.shape}")
    a1, a2 = _axis(axis1, x.ndim, "diagonal"), _axis(axis2, x.ndim, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 must differ")
    offset = _static_int(offset, "diagonal", "offset")
    y = moveaxis(x, (a1, a2), (-2, -1))
    rows, cols = y.shape[-2], y.shape[-1]
    idx = [(i, i + offset) for i in range(rows) if 0 <= i + offset < cols]
    if not idx:  # an offset past the plane (or an empty plane): an empty diagonal, as NumPy
        return _core.reshape(_take(_core.reshape(y, y.shape[:-2] + (rows * cols,)), 0, 0, y.ndim - 2),
                             y.shape[:-2] + (0,))
    flat = _core.reshape(y, y.shape[:-2] + (rows * cols,))
    return _core.gather(flat, [i * cols + j for i, j in idx], axis=-1 % flat.ndim)


def trace(x, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """Sum of the diagonal (NumPy's trace)."""
    return _core.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag(v, k: int = 0):
    """A 1-D v as a square matrix with v on diagonal k; the k-th diagonal of a 2-D v."""
    v = _arr(v)
    k = _static_int(k, "diag", "k")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: expects a 1-D or 2-D array, got shape {v.shape}")
    n = v.shape[0]
    size = n + abs(k)
    e = _core.eye(size, k=k, dtype=v.dtype)
    if abs(k):
        v = _core.concat([v, _core.zeros(abs(k), dtype=v.dtype)], axis=0)
    # E[i, i + k] is 1: for k >= 0 row i holds v[i]; for k < 0 column i does.
    return e * (_core.reshape(v, (size, 1)) if k >= 0 else _core.reshape(v, (1, size)))


def outer(a, b):
    a, b = _core.reshape(_arr(a), (-1, 1)), _core.reshape(_arr(b), (1, -1))
    return a * b


def _precision(precision, name):
    # precision= as jax.numpy takes it: validated, then a no-op (full precision on the CPU).
    if precision is not None:
        from .lax import _check_precision
        _check_precision(precision, name)


def _element_type(out, preferred_element_type):
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: the product over the last axis of a and the second-to-last of b (a
    scalar operand multiplies). ``precision`` (None, a lax.Precision or its name) is
    accepted and a no-op: every product is computed at the dtype's full precision on the
    CPU. ``preferred_element_type`` casts the result."""
    _precision(precision, "dot")
    return _element_type(_core.dot(a, b), preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """The matrix product with NumPy's broadcasting of batch axes (``a @ b``). ``precision``
    is accepted and a no-op (full precision on the CPU); ``preferred_element_type`` casts
    the result."""
    _precision(precision, "matmul")
    return _element_type(_core.matmul(a, b), preferred_element_type)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sum over the last `axes` axes of a and the first of b, or over the listed pairs; the
    contraction runs as one matrix product. ``precision`` is accepted and a no-op."""
    _precision(precision, "tensordot")
    if preferred_element_type is not None:
        return tensordot(a, b, axes).astype(preferred_element_type)
    a, b = _arr(a), _arr(b)
    if _isint(axes) and not isinstance(axes, bool):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} exceeds the ranks {a.ndim} and {b.ndim}")
        ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if _isint(ax_a) else list(ax_a)
        ax_b = [ax_b] if _isint(ax_b) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError(f"tensordot: axes {axes} pair different numbers of axes")
        ax_a = [_axis(x, a.ndim, "tensordot") for x in ax_a]
        ax_b = [_axis(x, b.ndim, "tensordot") for x in ax_b]
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: contracted axes differ in length: {a.shape} axis {i} and {b.shape} axis {j}")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [j for j in range(b.ndim) if j not in ax_b]
    k = 1
    for i in ax_a:
        k *= a.shape[i]
    fa = [a.shape[i] for i in free_a]
    fb = [b.shape[j] for j in free_b]
    a2 = _core.reshape(moveaxis(a, ax_a, list(range(a.ndim - len(ax_a), a.ndim))) if ax_a else a, (-1, k))
    b2 = _core.reshape(moveaxis(b, ax_b, list(range(len(ax_b)))) if ax_b else b, (k, -1))
    return _core.reshape(_core.matmul(a2, b2), tuple(fa + fb))


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum over the last axes of a and b (NumPy's inner). ``precision`` is accepted and a no-op."""
    _precision(precision, "inner")
    if preferred_element_type is not None:
        return inner(a, b).astype(preferred_element_type)
    a, b = _arr(a), _arr(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, axes=([-1], [-1]))


def kron(a, b):
    """The Kronecker product (NumPy's rules for rank differences)."""
    a, b = _arr(a), _arr(b)
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    ia = tuple(d for s in sa for d in (s, 1))
    ib = tuple(d for s in sb for d in (1, s))
    return _core.reshape(_core.reshape(a, ia) * _core.reshape(b, ib), tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axis: int = -1):
    """The cross product of 3-vectors (or the z component for 2-vectors) along axis."""
    a, b = _arr(a), _arr(b)
    a = moveaxis(a, _axis(axis, a.ndim, "cross"), -1)
    b = moveaxis(b, _axis(axis, b.ndim, "cross"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: the vectors must have 2 or 3 components, got {na} and {nb}")

    def comp(v, i, n):
        return v[..., i] if i < n else None

    a0, a1, a2 = (comp(a, i, na) for i in range(3))
    b0, b1, b2 = (comp(b, i, nb) for i in range(3))
    if na == 2 and nb == 2:
        return a0 * b1 - a1 * b0
    z = lambda v: v if v is not None else 0.0  # noqa: E731  (a missing z component is 0)
    comps = [a1 * z(b2) - z(a2) * b1, z(a2) * b0 - a0 * z(b2), a0 * b1 - a1 * b0]
    comps = [_arr(c) for c in comps]
    shape = (comps[0] + comps[1] + comps[2]).shape  # the broadcast shape of the three
    out = _core.stack([_core.broadcast_to(c, shape) for c in comps], axis=-1)
    return moveaxis(out, -1, axis)


def _cumulative(name, combine, x, axis, reverse):
    """A running reduction along axis as one scan (a loop node, not unrolled): exact with zero
    entries and differentiable through the scan's reverse mode."""
    from ._control import scan
    x = _arr(x)
    if axis is None:
        x, axis = _core.reshape(x, (-1,)), 0
    ax = _axis(axis, x.ndim, name)
    xs = moveaxis(x, ax, 0)
    if reverse:
        xs = _core.flip(xs, axis=0)
    _, ys = scan(lambda c, v: (combine(c, v),) * 2, xs[0], xs[1:]) if xs.shape[0] > 1 else (None, None)
    out = xs[:1] if ys is None else _core.concat([xs[:1], ys], axis=0)
    if reverse:
        out = _core.flip(out, axis=0)
    return moveaxis(out, 0, ax)


def cumprod(x, axis=None, dtype=None, *, reverse: bool = False):
    """Running products along axis (flattened when None); dtype casts the input first (as
    jnp.cumprod's)."""
    return _cumulative("cumprod", lambda c, v: c * v, _with_dtype(x, dtype), axis, reverse)


def cumsum(x, axis=None, dtype=None, *, reverse: bool = False):
    """Running sums along axis (flattened when None); dtype casts the input first (as
    jnp.cumsum's)."""
    return _core.cumsum(_with_dtype(x, dtype), axis, reverse)


def _with_dtype(x, dtype):
    if dtype is None:
        return x
    x = x if isinstance(x, _core.Array) else _core.asarray(x)
    return x if x.dtype == dtype else _core.astype(x, dtype)


def ravel(a, order: str = "C"):
    """The elements in one axis: row-major (order "C") or column-major ("F"), as jnp.ravel."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"ravel: order must be 'C' or 'F', got {order!r}")
    a = a if isinstance(a, _core.Array) else _core.asarray(a)
    if order == "F" and a.ndim > 1:
        a = _core.transpose(a, tuple(reversed(range(a.ndim))))
    return _core.ravel(a)


def cummax(x, axis=None, reverse: bool = False):
    """Running maxima along axis (NaN propagates, ties share the derivative as maximum does)."""
    return _cumulative("cummax", _core.maximum, x, axis, reverse)


def cummin(x, axis=None, reverse: bool = False):
    """Running minima along axis."""
    return _cumulative("cummin", _core.minimum, x, axis, reverse)


def diff(x, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The n-th forward difference along axis (NumPy's diff, with prepend/append)."""
    x = _arr(x)
    n = _static_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    ax = _axis(axis, x.ndim, "diff")
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        # a Python number is weak: it takes x's dtype
        e = _core.asarray(extra, dtype=x.dtype) if isinstance(extra, (int, float)) else _arr(extra)
        if e.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            e = _core.broadcast_to(e, tuple(shape))
        parts.append(e)
    pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
    if len(pieces) > 1:
        x = _core.concat(pieces, axis=ax)
    for _ in range(n):
        length = x.shape[ax]
        if length < 2:  # n >= the axis length: an empty axis (as NumPy), in the differences' dtype
            d = _take(x, 0, 0, ax)
            return d - d
        x = _take(x, 1, length, ax) - _take(x, 0, length - 1, ax)
    return x


def gradient(f, *varargs, axis=None):
    """numpy.gradient with uniform spacing: central differences inside, one-sided first
    differences at the edges (edge_order=1). varargs: one spacing for every axis, or one per
    axis. One array for a single axis, else a list (one per axis)."""
    f = _arr(f)
    axes = list(range(f.ndim)) if axis is None else ([axis] if _isint(axis) else list(axis))
    axes = [_axis(a, f.ndim, "gradient") for a in axes]
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(f"gradient: {len(varargs)} spacings for {len(axes)} axes")
    out = []
    for ax, h in zip(axes, spacing):
        if isinstance(h, bool) or not (isinstance(h, (int, float)) or (isinstance(h, _core.Array) and h.ndim == 0)):
            raise TypeError("gradient: spacings must be numbers or scalar arrays (uniform grids)")
        n = f.shape[ax]
        if n < 2:
            raise ValueError(f"gradient: needs at least 2 samples along axis {ax}, got {n}")
        first = (_take(f, 1, 2, ax) - _take(f, 0, 1, ax)) / h
        last = (_take(f, n - 1, n, ax) - _take(f, n - 2, n - 1, ax)) / h
        parts = [first]
        if n > 2:
            parts.append((_take(f, 2, n, ax) - _take(f, 0, n - 2, ax)) / (2.0 * h))
        parts.append(last)
        out.append(_core.concat(parts, axis=ax))
    return out[0] if len(out) == 1 else out


def trapezoid(y, x=None, dx: float = 1.0, axis: int = -1):
    """The trapezoidal rule along axis, with sample points x or a uniform spacing dx."""
    y = _arr(y)
    ax = _axis(axis, y.ndim, "trapezoid")
    n = y.shape[ax]
    # (fewer than two samples: no intervals, so the sums below are over empty axes: 0, as NumPy)
    mid = (_take(y, min(1, n), n, ax) + _take(y, 0, max(n - 1, 0), ax)) * 0.5
    if x is None:
        return _core.sum(mid, axis=ax) * dx
    x = _arr(x)
    d = diff(x, axis=-1 if x.ndim == 1 else ax)
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[ax] = max(n - 1, 0)
        d = _core.reshape(d, tuple(shape))
    return _core.sum(mid * d, axis=ax)


def interp(x, xp, fp, left=None, right=None, period=None):
    """numpy.interp: piecewise-linear through (xp, fp) (xp increasing), fp[0] / fp[-1] (or
    left / right) outside. Written as fp[0] + sum_k t_k (fp[k+1] - fp[k]) with t_k = x's
    clipped position in interval k, so it is a composition of elementwise ops and one sum
    (traced x, xp and fp work; cost O(len(x) len(xp))). With period, x and xp are taken
    modulo it (xp need not be sorted) and the data wrap around, as NumPy's. Complex fp (and
    left / right) interpolate the real and imaginary parts alike, as NumPy's."""
    x, xp, fp = _arr(x), _arr(xp), _arr(fp)
    _no_complex("interp", x, xp, period, hint="the sample points x and xp must be real (only fp, left and right may "
                "be complex)")
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape:
        raise ValueError(f"interp: xp and fp must be 1-D of the same length, got {xp.shape} and {fp.shape}")
    if xp.shape[0] == 0:
        raise ValueError("interp: xp and fp are empty; interpolation needs at least one sample point")
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("interp: left and right cannot be given with period")
        period = abs(period)
        x = x % period
        xp = xp % period
        from ._indexing import take
        order = _core._argsort(xp, False)
        xp, fp = take(xp, order, mode="clip"), take(fp, order, mode="clip")
        xp = _core.concat([xp[-1:] - period, xp, xp[:1] + period])
        fp = _core.concat([fp[-1:], fp, fp[:1]])
        return interp(x, xp, fp)
    if not xp._is_tracer and xp.shape[0] > 1 and not bool(_core.all(xp[1:] > xp[:-1])):
        raise ValueError("interp: xp must be strictly increasing")
    if xp.shape[0] == 1:
        out = _core.zeros_like(x) + fp[0]
    else:
        xe = _core.expand_dims(x, -1)
        t = _core.clip((xe - xp[:-1]) / (xp[1:] - xp[:-1]), 0.0, 1.0)
        if fp.dtype in _COMPLEX and t.dtype != _real_dtype(fp.dtype):  # real weights of fp's precision
            t = t.astype(_real_dtype(fp.dtype))
        out = fp[0] + _core.sum(t * (fp[1:] - fp[:-1]), axis=-1)
    if left is not None:
        out = _core.where(x < xp[0], left, out)
    if right is not None:
        out = _core.where(x > xp[-1], right, out)
    return out


def polyval(p, x):
    """The polynomial with coefficients p (highest power first) at x, by Horner's rule."""
    x = _arr(x)
    if not isinstance(p, (list, tuple)) and _arr(p).ndim != 1:
        raise ValueError(f"polyval: p must be a 1-D sequence of coefficients, got shape {tuple(_arr(p).shape)}")
    coeffs = list(p) if isinstance(p, (list, tuple)) else [p[i] for i in range(_arr(p).shape[0])]
    if not coeffs:  # the empty polynomial is 0 (as NumPy), in p's and x's dtype
        p0 = _arr(p) if not isinstance(p, (list, tuple)) else _core.zeros((0,), dtype=x.dtype)
        return _core.zeros_like(x) * _core.zeros((), dtype=p0.dtype)
    acc = _core.zeros_like(x) + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def vander(x, N: int = None, increasing: bool = False):
    """Columns x^(N-1), ..., x^0 (or increasing powers)."""
    x = _arr(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {x.shape}")
    N = x.shape[0] if N is None else _static_int(N, "vander", "N")
    if N < 1:
        raise ValueError(f"vander: N must be positive, got {N}")
    cols = [_core.ones_like(x)]
    for _ in range(N - 1):
        cols.append(cols[-1] * x)
    if not increasing:
        cols = cols[::-1]
    return _core.stack(cols, axis=1)


def identity(n: int, dtype=None):
    return _core.eye(n, dtype=dtype)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum", "minimum", "mean")


def _is_scalar(v) -> bool:
    if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
        return True
    return isinstance(v, _core.Array) and v.ndim == 0


def _pad_widths(pad_width, ndim):
    def pair(p):
        if _isint(p) and not isinstance(p, bool):
            return (p, p)
        p = tuple(p)
        if len(p) == 1:
            return (p[0], p[0])
        if len(p) != 2:
            raise ValueError(f"pad: pad_width entries must be (before, after), got {p}")
        return p
    if _isint(pad_width) or (len(pad_width) in (1, 2) and all(_isint(v) for v in pad_width)):
        widths = [pair(pad_width)] * ndim
    else:
        widths = [pair(p) for p in pad_width]
        if len(widths) == 1:
            widths = widths * ndim
    if len(widths) != ndim:
        raise ValueError(f"pad: pad_width has {len(widths)} entries for an array of rank {ndim}")
    for before, after in widths:
        for v in (before, after):
            if _static_int(v, "pad", "pad widths") < 0:
                raise ValueError(f"pad: pad widths must be non-negative, got {pad_width}")
    return widths


def _float_dtype_of(x):
    if x.dtype in (_core.float32, _core.float64):
        return x.dtype
    if x.dtype in _COMPLEX:
        return _real_dtype(x.dtype)
    return _core.zeros(()).dtype


def _side_values(values, ndim, name):
    """NumPy's per-axis (before, after) scalars from a scalar, a pair, or one pair per axis."""
    if _is_scalar(values):
        return [(values, values)] * ndim
    v = values.numpy().tolist() if isinstance(values, _core.Array) else values

    def scalar(a):
        return not isinstance(a, (list, tuple))
    if scalar(v):
        return [(v, v)] * ndim
    v = list(v)
    if all(scalar(a) for a in v) and len(v) in (1, 2):
        return [(v[0], v[-1])] * ndim
    rows = [[r] if scalar(r) else list(r) for r in v]
    if len(rows) == 1:
        rows = rows * ndim
    if len(rows) != ndim or any(len(r) not in (1, 2) for r in rows):
        raise ValueError(f"pad: {name} must be a scalar, a (before, after) pair or one pair per axis ({ndim}), got "
                         f"{values!r}")
    return [(r[0], r[-1]) for r in rows]


def pad(x, pad_width, mode: str = "constant", constant_values=0.0, end_values=0.0, stat_length=None):
    """NumPy's pad for modes constant, edge, reflect, symmetric, wrap, linear_ramp, maximum,
    minimum and mean (reflect needs widths below the axis length, symmetric and wrap at most
    the axis length; the statistics are over the whole axis). constant_values and
    end_values are scalars, (before, after) pairs or one pair per axis."""
    x = _arr(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if stat_length is not None:
        raise NotImplementedError("pad: stat_length is not supported; the statistic is over the whole axis")
    widths = _pad_widths(pad_width, x.ndim)
    if mode == "constant" and _is_scalar(constant_values) and x.ndim > 0:
        # One pad op for every axis: one pass over the result (a stencil's padded array).
        for ax, (before, after) in enumerate(widths):
            if not (_isint(before) and _isint(after)) or before < 0 or after < 0:
                raise ValueError(f"pad: pad widths must be non-negative ints, got {(before, after)} on axis {ax}")
        if all(b == 0 and a == 0 for b, a in widths):
            return x
        if _is_complex(constant_values):
            if x.dtype not in _COMPLEX:
                raise TypeError(f"pad: constant_values {constant_values!r} is complex but the array is "
                                f"{x.dtype.name}, which would lose its imaginary part; make the array complex first "
                                f"(.astype(qb.complex128))")
            c = _core.asarray(constant_values)
            lo, hi = [b for b, _ in widths], [a for _, a in widths]
            return _core._complex(_core._pad_constant(_core._real(x), _core._real(c), lo, hi),
                                  _core._pad_constant(_core._imag(x), _core._imag(c), lo, hi))
        return _core._pad_constant(x, constant_values, [b for b, _ in widths], [a for _, a in widths])
    sides = _side_values(constant_values if mode == "constant" else end_values, x.ndim,
                         "constant_values" if mode == "constant" else "end_values")
    for ax, (before, after) in enumerate(widths):
        n = x.shape[ax]
        if n == 0 and max(before, after) > 0 and mode != "constant":
            raise ValueError(f"pad: axis {ax} is empty, and only mode 'constant' can pad an empty axis (as NumPy), "
                             f"got mode {mode!r}")
        limit = n - 1 if mode == "reflect" else n
        if mode in ("reflect", "symmetric", "wrap") and max(before, after) > limit:
            raise ValueError(f"pad: mode {mode!r} pads at most {limit} elements on an axis of length {n}, "
                             f"got {(before, after)}")
        pieces = []
        for side, width in (("before", before), ("after", after)):
            if width == 0:
                pieces.append(None)
                continue
            shape = list(x.shape)
            shape[ax] = width
            if mode == "constant":
                from ._numpy_names import full
                piece = full(tuple(shape), sides[ax][0 if side == "before" else 1], dtype=x.dtype, _name="pad")
            elif mode == "linear_ramp":
                end = sides[ax][0 if side == "before" else 1]
                edge = _take(x, 0, 1, ax) if side == "before" else _take(x, n - 1, n, ax)
                view = [1] * x.ndim
                view[ax] = width
                steps = [k / width for k in range(width)] if side == "before" else \
                    [(width - 1 - k) / width for k in range(width)]
                t = _core.reshape(_core.asarray(steps, dtype=_float_dtype_of(x)), tuple(view))
                if x.dtype in _COMPLEX:
                    piece = _cast("pad", _arr(end + (edge - end) * t), x.dtype, "end_values")
                else:
                    _no_complex("pad", end, hint="complex end_values need a complex array")
                    ramp = end + (edge.astype(t.dtype) - end) * t
                    piece = (ramp if x.dtype == t.dtype else _core.floor(ramp)).astype(x.dtype)  # NumPy floors
            elif mode in ("maximum", "minimum", "mean"):
                if mode != "mean":
                    _no_complex(f"pad(mode={mode!r})", x, hint=_NO_ORDER)
                stat = {"maximum": _core.max, "minimum": _core.min, "mean": _core.mean}[mode](x, axis=ax, keepdims=True)
                if mode == "mean" and x.dtype in (_core.int32, _core.int64):
                    stat = _core.round(stat)  # NumPy rounds an integer mean (half to even)
                piece = _core.broadcast_to(stat.astype(x.dtype), tuple(shape))
            elif mode == "edge":
                edge = _take(x, 0, 1, ax) if side == "before" else _take(x, n - 1, n, ax)
                piece = _core.broadcast_to(edge, tuple(shape))
            elif mode == "wrap":
                piece = _take(x, n - width, n, ax) if side == "before" else _take(x, 0, width, ax)
            else:
                skip = 1 if mode == "reflect" else 0
                if side == "before":
                    piece = _core.flip(_take(x, skip, skip + width, ax), axis=ax)
                else:
                    piece = _core.flip(_take(x, n - skip - width, n - skip, ax), axis=ax)
            pieces.append(piece)
        parts = [p for p in (pieces[0], x, pieces[1]) if p is not None]
        if len(parts) > 1:
            x = _core.concat(parts, axis=ax)
    return x


# ---- einsum ------------------------------------------------------------------------------

def _einsum_parse(subscripts: str, ndims):
    """(input letter lists, output letter list); '...' becomes private letters, aligned to
    the right as NumPy broadcasts them."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        lhs, out = spec.split("->")
        explicit = True
    else:
        lhs, out, explicit = spec, "", False
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(ndims)} operands")
    ell_dims = 0
    for term, nd in zip(terms, ndims):
        named = len(term.replace("...", ""))
        if "..." in term:
            ell_dims = max(ell_dims, nd - named)
        elif named != nd:
            raise ValueError(f"einsum: subscripts {term!r} name {named} axes of an operand of rank {nd}")
    ell = [chr(0x3B1 + i) for i in range(ell_dims)]  # private letters (Greek) for the ellipsis
    inputs = []
    for term, nd in zip(terms, ndims):
        for ch in term.replace("...", ""):
            if not ch.isalpha() or not ch.isascii():
                raise ValueError(f"einsum: subscripts must be ASCII letters, got {ch!r} in {subscripts!r}")
        if "..." in term:
            before, after = term.split("...")
            k = nd - len(before) - len(after)
            if k < 0:
                raise ValueError(f"einsum: subscripts {term!r} name more axes than the operand's rank {nd}")
            inputs.append(list(before) + ell[ell_dims - k:] + list(after))
        else:
            inputs.append(list(term))
    if explicit:
        if "..." in out:
            before, after = out.split("...")
            output = list(before) + ell + list(after)
        else:
            output = list(out)
        for ch in output:
            if not any(ch in t for t in inputs):
                raise ValueError(f"einsum: output subscript {ch!r} appears in no input")
    else:
        counts = {}
        for t in inputs:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        output = ell + sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell)
    return inputs, output


def _einsum_reduce(x, letters, keep):
    """Diagonals of repeated letters, then sums over letters not in `keep`."""
    letters = list(letters)
    while True:
        rep = next((ch for ch in letters if letters.count(ch) > 1), None)
        if rep is None:
            break
        i = letters.index(rep)
        j = letters.index(rep, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum: subscript {rep!r} repeats in one operand over axes of sizes {x.shape[i]} and "
                             f"{x.shape[j]}; a repeated subscript takes a diagonal and needs equal sizes")
        x = diagonal(x, 0, i, j)
        letters = [ch for k, ch in enumerate(letters) if k not in (i, j)] + [rep]
    drop = [k for k, ch in enumerate(letters) if ch not in keep]
    if drop:
        x = _core.sum(x, axis=tuple(drop))
        letters = [ch for k, ch in enumerate(letters) if k not in drop]
    return x, letters


def _einsum_pair(a, la, b, lb, keep):
    """Contract a and b over their shared letters not in `keep`, as one batched matmul."""
    sizes = {}
    for x, ls in ((a, la), (b, lb)):
        for ch, n in zip(ls, x.shape):
            if sizes.get(ch, 1) != 1 and n != 1 and sizes[ch] != n:
                raise ValueError(f"einsum: subscript {ch!r} has sizes {sizes[ch]} and {n}")
            sizes[ch] = max(sizes.get(ch, 1), n)
    shared = [ch for ch in la if ch in lb]
    batch = [ch for ch in shared if ch in keep]
    contract = [ch for ch in shared if ch not in keep]
    free_a = [ch for ch in la if ch not in shared]
    free_b = [ch for ch in lb if ch not in shared]

    def arrange(x, ls, order):
        x = _core.transpose(x, tuple(ls.index(ch) for ch in order)) if ls != order else x
        return _core.broadcast_to(x, tuple(sizes[ch] for ch in order))

    def prod(chs):
        p = 1
        for ch in chs:
            p *= sizes[ch]
        return p

    a3 = _core.reshape(arrange(a, la, batch + free_a + contract), (prod(batch), prod(free_a), prod(contract)))
    b3 = _core.reshape(arrange(b, lb, batch + contract + free_b), (prod(batch), prod(contract), prod(free_b)))
    out = _core.matmul(a3, b3)
    letters = batch + free_a + free_b
    return _core.reshape(out, tuple(sizes[ch] for ch in letters)), letters


def _einsum_interleaved(args):
    """einsum(x, [0, 1], y, [1, 2], [0, 2]) as ("ab,bc->ac", (x, y)); Ellipsis is '...'."""
    import string
    letters = string.ascii_letters

    def sub(lst):
        out = ""
        for v in lst:
            if v is Ellipsis:
                out += "..."
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(letters):
                out += letters[v]
            else:
                raise ValueError(f"einsum: sublist entries must be ints in [0, {len(letters)}) or Ellipsis, got {v!r}")
        return out
    args = list(args)
    output = None
    if len(args) % 2 == 1:
        output = args.pop()
    if not args:
        raise ValueError("einsum: needs at least one operand")
    operands = args[0::2]
    subs = []
    for lst in args[1::2]:
        if not isinstance(lst, (list, tuple)):
            raise TypeError(f"einsum: subscripts must be a string, or sublists of ints after each operand, got "
                            f"{type(lst).__name__}")
        subs.append(sub(lst))
    return ",".join(subs) + ("" if output is None else "->" + sub(output)), tuple(operands)


def einsum(subscripts: str, *operands):
    """Einstein summation as numpy.einsum (explicit and implicit output, '...', repeated
    letters for diagonals and traces). Operands are contracted pairwise, each contraction one
    batched matrix product, choosing at each step the pair with the smallest result."""
    if not isinstance(subscripts, str):  # NumPy's interleaved form: op0, sublist0, op1, sublist1, ..., [out]
        subscripts, operands = _einsum_interleaved((subscripts,) + tuple(operands))
    ops = [_arr(o) for o in operands]
    if not ops:
        raise ValueError("einsum: needs at least one operand")
    inputs, output = _einsum_parse(subscripts, [o.ndim for o in ops])
    terms = []
    for k, (x, ls) in enumerate(zip(ops, inputs)):
        others = set(output).union(*[set(t) for j, t in enumerate(inputs) if j != k])
        terms.append(_einsum_reduce(x, ls, others))
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                rest = set(output).union(*[set(t[1]) for k, t in enumerate(terms) if k not in (i, j)])
                shared = set(terms[i][1]) & set(terms[j][1])
                kept = (set(terms[i][1]) | set(terms[j][1])) - (shared - rest)
                size = 1
                dims = dict(zip(terms[i][1], terms[i][0].shape))
                dims.update({ch: max(n, dims.get(ch, 1)) for ch, n in zip(terms[j][1], terms[j][0].shape)})
                for ch in kept:
                    size *= dims[ch]
                if best is None or size < best[0]:
                    best = (size, i, j, rest)
        _, i, j, rest = best
        (a, la), (b, lb) = terms[i], terms[j]
        merged = _einsum_pair(a, la, b, lb, rest)
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [merged]
    x, letters = _einsum_reduce(*terms[0], set(output))
    if letters != output:
        x = _core.transpose(x, tuple(letters.index(ch) for ch in output)) if x.ndim else x
    return x


__all__ += ["einsum"]
