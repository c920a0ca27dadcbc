"""Named axes: ``qb.vmap(f, axis_name="i")`` binds the batch axis to a name, and the
collectives of jax.lax over it (psum, pmean, pmax, pmin, all_gather, psum_scatter,
axis_index, axis_size, ppermute, pshuffle) compute across the examples. ``qb.pmap`` is a
jitted vmap with a named axis: on this process's CPU the mapped examples run as one
vectorised program.

While vmap traces its function (once, per example) the name is on a stack; a collective
looks it up (the innermost vmap of that name wins, as in JAX) and records a named_axis node
(ops.def) with that vmap's id, which the vmap transform then computes over the batch axis
(a sum over it for psum, a transpose for all_gather, an iota for axis_index). Outside any
vmap of that name the collective raises NameError, as JAX's does.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Optional, Sequence

from . import _core
from . import tree as _tree
from ._package import qb as _qb

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "axis_size", "ppermute",
           "pshuffle", "pmap"]

_SUM, _MAX, _MIN, _GATHER, _INDEX, _PERMUTE = range(6)  # NamedAxisKind (ir/op.h)
_ids = itertools.count()
_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "axes"):
        _local.axes = []
    return _local.axes


class bound_axis:
    """While vmap traces its function: `name` is the batch axis of `size` examples. Entering
    gives the id the vmap transform is told (graph.vmap(..., axis_id))."""

    def __init__(self, name, size: int):
        try:
            hash(name)
        except TypeError:
            raise TypeError(f"vmap: axis_name must be hashable (a string, as JAX's), got {type(name).__name__}") from None
        self.name, self.size, self.id = name, size, next(_ids)

    def __enter__(self) -> int:
        _stack().append(self)
        return self.id

    def __exit__(self, *exc) -> None:
        _stack().remove(self)


def _names(axis_name, what: str) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not names:
        raise ValueError(f"lax.{what}: axis_name must name at least one axis")
    return names


def _frame(name, what: str) -> bound_axis:
    for f in reversed(_stack()):
        if f.name == name:
            return f
    raise NameError(f"unbound axis name: {name} (lax.{what} must be called inside qb.vmap(f, axis_name={name!r}) or "
                    f"qb.pmap(f, axis_name={name!r}))")


def _leaf(x, what: str):
    if isinstance(x, _core.DeviceArray):
        raise TypeError(f"lax.{what}: device arrays are not supported by named-axis collectives; use host arrays")
    return x if isinstance(x, _core.Array) else _core.asarray(x)


def _reduce(x, axis_name, kind: int, what: str):
    names = _names(axis_name, what)
    frames = [_frame(n, what) for n in names]

    def one(leaf):
        a = _leaf(leaf, what)
        if a.dtype == _core.bool_:
            a = a.astype(_core.int32)  # as JAX: booleans are summed (and compared) as int32
        for f in frames:
            a = _core.named_axis(kind, a, f.id, f.size)
        return a
    return _tree.map(one, x)


def psum(x: Any, axis_name, *, axis_index_groups=None) -> Any:
    """The sum of x (a pytree) over the named axis (or axes), the same for every example
    (jax.lax.psum). Booleans sum as int32; a value that does not vary along the axis is
    multiplied by its size. Differentiable (its own transpose)."""
    _no_groups(axis_index_groups, "psum")
    return _reduce(x, axis_name, _SUM, "psum")


def pmean(x: Any, axis_name, *, axis_index_groups=None) -> Any:
    """The mean of x over the named axis (or axes) (jax.lax.pmean)."""
    _no_groups(axis_index_groups, "pmean")
    n = axis_size(axis_name)
    return _tree.map(lambda s: s / n, _reduce(x, axis_name, _SUM, "pmean"))


def pmax(x: Any, axis_name, *, axis_index_groups=None) -> Any:
    """The maximum of x over the named axis (jax.lax.pmax); not differentiable, as JAX's."""
    _no_groups(axis_index_groups, "pmax")
    return _reduce(x, axis_name, _MAX, "pmax")


def pmin(x: Any, axis_name, *, axis_index_groups=None) -> Any:
    """The minimum of x over the named axis (jax.lax.pmin); not differentiable, as JAX's."""
    _no_groups(axis_index_groups, "pmin")
    return _reduce(x, axis_name, _MIN, "pmin")


def _no_groups(groups, what: str) -> None:
    if groups is not None:
        raise NotImplementedError(f"lax.{what}: axis_index_groups is not supported (JAX deprecates it too); "
                                  f"reduce over the whole axis, or mask the examples you do not want")


def _one_name(axis_name, what: str) -> bound_axis:
    names = _names(axis_name, what)
    if len(names) != 1:
        raise NotImplementedError(f"lax.{what}: one axis name at a time; nest the calls for several")
    return _frame(names[0], what)


def all_gather(x: Any, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False) -> Any:
    """Every example's x stacked along a new axis `axis` (concatenated along it when tiled),
    the same for every example (jax.lax.all_gather). Differentiable."""
    _no_groups(axis_index_groups, "all_gather")
    f = _one_name(axis_name, "all_gather")

    def one(leaf):
        a = _leaf(leaf, "all_gather")
        r = a.ndim
        if tiled and r == 0:
            raise ValueError("lax.all_gather: tiled=True needs operands of rank >= 1")
        hi = r - 1 if tiled else r
        if isinstance(axis, bool) or not isinstance(axis, int) or not -hi - 1 <= axis <= hi:
            raise ValueError(f"lax.all_gather: axis {axis!r} is out of range for an operand of rank {r}")
        return _core.named_axis(_GATHER, a, f.id, f.size, axis % (hi + 1), bool(tiled))
    return _tree.map(one, x)


def axis_index(axis_name) -> Any:
    """This example's position along the named axis, int32 (jax.lax.axis_index); for several
    names, the position in their row-major product."""
    index = None
    for n in _names(axis_name, "axis_index"):
        f = _frame(n, "axis_index")
        i = _core.named_axis(_INDEX, None, f.id, f.size)
        index = i if index is None else index * f.size + i
    return index


def axis_size(axis_name) -> int:
    """The number of examples along the named axis (or the product over several)."""
    size = 1
    for n in _names(axis_name, "axis_size"):
        size *= _frame(n, "axis_size").size
    return size


def psum_scatter(x: Any, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False) -> Any:
    """psum, then this example's block of axis `scatter_dimension` (jax.lax.psum_scatter):
    without tiled the axis has one entry per example and the result drops it; with tiled its
    length divides by the axis size and the result keeps a block of it."""
    _no_groups(axis_index_groups, "psum_scatter")
    f = _one_name(axis_name, "psum_scatter")

    def one(leaf):
        a = _leaf(leaf, "psum_scatter")
        if a.ndim == 0 or not -a.ndim <= scatter_dimension < a.ndim:
            raise ValueError(f"lax.psum_scatter: scatter_dimension {scatter_dimension} is out of range for an operand "
                             f"of shape {tuple(a.shape)}")
        d = scatter_dimension % a.ndim
        n = a.shape[d]
        if (not tiled and n != f.size) or (tiled and n % f.size):
            need = f"a multiple of {f.size}" if tiled else str(f.size)
            raise ValueError(f"lax.psum_scatter: axis {d} has length {n}, but it must be {need} (the size of axis "
                             f"{f.name!r})")
        total = _core.named_axis(_SUM, a, f.id, f.size)
        me = _core.named_axis(_INDEX, None, f.id, f.size)
        if not tiled:
            return _qb.take(total, me, axis=d)
        block = n // f.size
        return _qb.take(total, me * block + _qb.arange(block, dtype=_core.int32), axis=d)
    return _tree.map(one, x)


def ppermute(x: Any, axis_name, perm: Sequence) -> Any:
    """Example d receives example s's x for each (s, d) in perm; examples no pair sends to
    receive zeros (jax.lax.ppermute). Differentiable (the inverse permutation)."""
    f = _one_name(axis_name, "ppermute")
    pairs = []
    try:
        pairs = [(int(s), int(d)) for s, d in perm]
    except (TypeError, ValueError):
        raise TypeError("lax.ppermute: perm must be a sequence of (source, destination) pairs of ints") from None
    for s, d in pairs:
        if not (0 <= s < f.size and 0 <= d < f.size):
            raise ValueError(f"lax.ppermute: pair ({s}, {d}) is out of range for axis {f.name!r} of size {f.size}")
    if len({s for s, _ in pairs}) != len(pairs) or len({d for _, d in pairs}) != len(pairs):
        raise ValueError(f"lax.ppermute: perm sends from or to an index twice: {pairs}")
    flat = [v for pair in pairs for v in pair]
    return _tree.map(lambda leaf: _core.named_axis(_PERMUTE, _leaf(leaf, "ppermute"), f.id, f.size, 0, False, flat), x)


def pshuffle(x: Any, axis_name, perm: Sequence[int]) -> Any:
    """Example i receives example perm[i]'s x (jax.lax.pshuffle); perm is a permutation."""
    f = _one_name(axis_name, "pshuffle")
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(f.size)):
        raise ValueError(f"lax.pshuffle: perm must be a permutation of range({f.size}), got {perm}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(), devices=None,
         backend: Optional[str] = None, axis_size: Optional[int] = None, donate_argnums=(), global_arg_shapes=None):
    """jax.pmap on this process's CPU: ``jit(vmap(fun, in_axes, out_axes, axis_name=...))``,
    the examples of the mapped axis run as one vectorised program (there is one device, so
    nothing is split across devices, and any axis size works). Collectives over axis_name
    (lax.psum, pmean, all_gather, ...) compute across the examples. static_broadcasted_argnums
    are static arguments of the jit; donate_argnums is accepted and ignored (arrays are
    immutable). For several processes, see qb.distributed."""
    from ._jit import jit
    from ._vmap import vmap
    if devices is not None and any(str(getattr(d, "platform", d)).lower() not in ("cpu",) for d in devices):
        raise ValueError(f"pmap: devices={devices!r}; Quabla's pmap runs on the CPU (use device_put and jit(device=...) "
                         f"for CUDA or MLX)")
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap: backend={backend!r}; Quabla's pmap runs on the CPU")
    del donate_argnums, global_arg_shapes
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) else tuple(static_broadcasted_argnums)
    if not static:
        return jit(vmap(fun, in_axes, out_axes, axis_name=axis_name, axis_size=axis_size))

    def call(*args, **kwargs):
        dynamic = [i for i in range(len(args)) if i not in static]
        spec = in_axes if not isinstance(in_axes, (tuple, list)) else tuple(in_axes[i] for i in dynamic)

        def inner(*dyn):
            full = list(args)
            for i, v in zip(dynamic, dyn):
                full[i] = v
            return fun(*full, **kwargs)
        return vmap(inner, spec, out_axes, axis_name=axis_name, axis_size=axis_size)(*[args[i] for i in dynamic])
    call.__name__ = f"pmap({getattr(fun, '__name__', 'function')})"
    return jit(call, static_argnums=static)
