"""qb.debug: printing and callbacks from inside traced programs (as ``jax.debug``).

``qb.debug.print("x = {x}", x=x)`` inside ``jit``, a transform or a loop body prints the
value each time the compiled program reaches it (not once at trace time); eagerly it prints
at once. Both are host-call nodes marked as effects (ops.def): never removed although nothing
reads them, never merged, run in program order, without a derivative of their own (they do
not stop differentiation of what they print). Under vmap they run once per example, in
order (as jax.debug's). CPU backend only.
"""
from __future__ import annotations

import builtins
from typing import Callable

from . import _core
from . import tree as _tree

__all__ = ["print", "callback"]

_EFFECT_SEQUENTIAL = 4 | 1  # host_call: the effect bit, and vmap batching by one call per example (JAX's)


def callback(callback: Callable, *args, ordered: bool = False, **kwargs) -> None:
    """Calls ``callback(*args, **kwargs)`` with NumPy arrays when the program runs (at once
    when nothing is traced); its return value is ignored. Calls run in program order
    (``ordered`` is accepted for JAX compatibility: they always are)."""
    if not callable(callback):
        raise TypeError(f"qb.debug.callback: callback must be callable, got {type(callback).__name__}")
    leaves, treedef = _tree.flatten((args, kwargs))
    from ._callback import staged
    if not staged(leaves):
        from ._callback import _to_numpy
        a, k = _tree.unflatten(treedef, [_to_numpy(x) if isinstance(x, (_core.Array, _core.DeviceArray)) else x
                                         for x in leaves])
        callback(*a, **k)
        return None
    from ._callback import register
    arrays = [i for i, x in enumerate(leaves) if isinstance(x, _core.Array) or _is_number(x)]
    statics = {i: x for i, x in enumerate(leaves) if i not in arrays}

    def run(*values):
        full = list(leaves)
        for i, v in zip(arrays, values):
            full[i] = v
        for i, v in statics.items():
            full[i] = v
        a, k = _tree.unflatten(treedef, full)
        callback(*a, **k)

    inputs = [leaves[i] if isinstance(leaves[i], _core.Array) else _core.asarray(leaves[i]) for i in arrays]
    _core.host_call(register(run, "qb.debug.callback", effect=True), inputs, [], _core.bool_, -1, _EFFECT_SEQUENTIAL)
    return None


def _is_number(x) -> bool:
    return isinstance(x, (int, float, bool)) and not isinstance(x, type)


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001 (JAX's name)
    """``fmt.format(*args, **kwargs)`` printed with the arrays' values when the program runs
    (as ``jax.debug.print``)."""
    if not isinstance(fmt, str):
        raise TypeError(f"qb.debug.print: fmt must be a str, got {type(fmt).__name__}")
    callback(lambda *a, **k: builtins.print(fmt.format(*a, **k), flush=True), *args, **kwargs)
