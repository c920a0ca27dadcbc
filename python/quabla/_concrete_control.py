"""Python control flow on values under eager derivatives, as JAX's grad allows it.

``qb.grad(lambda x: 3.0 * x ** 2 if x < 3 else -4.0 * x)(2.0)`` works in JAX: outside jit
its grad sees the concrete value, so ``bool(x < 3)`` (an ``if``), ``int(x)`` and
``operator.index`` (a list index, ``range``) are decided on it. Quabla's transforms trace
on abstract tracers, which cannot decide them. When such a trace fails and every input is
concrete (no jit or transform around), the function is run once eagerly on the inputs to
record each decision, in order, and traced again with the decisions replayed: the graph
is the path those inputs take, differentiated as usual (and built again at each call, as
the path can change with the values). float() of a traced value still raises, as in JAX.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

from . import _core

class _State(threading.local):
    mode = None  # per thread: None, ("record", decisions) or ("replay", decisions, [position])


_state = _State()


class _Diverged(Exception):
    """The replayed trace asked for other decisions than the eager run made."""


def _hooked(core_method: Callable, kind: str) -> Callable:
    def method(self):
        mode = _state.mode
        if mode is None:
            return core_method(self)
        if mode[0] == "record":
            value = core_method(self)
            mode[1].append((kind, value))
            return value
        decisions, position = mode[1], mode[2]
        if position[0] >= len(decisions) or decisions[position[0]][0] != kind:
            raise _Diverged()
        value = decisions[position[0]][1]
        position[0] += 1
        if not self._is_tracer and core_method(self) != value:  # a constant decided otherwise
            raise _Diverged()
        return value
    method.__name__ = core_method.__name__ if hasattr(core_method, "__name__") else kind
    method.__doc__ = getattr(core_method, "__doc__", None)
    return method


_METHODS = (("__bool__", "bool"), ("__int__", "int"), ("__index__", "index"))
_plain: dict = {}    # the Array methods without the hook
_hooks = {"users": 0}
_hooks_lock = threading.Lock()


def install() -> None:
    """Remembers Array's plain methods (called once, after _array_methods installs its own)."""
    for name, _ in _METHODS:
        _plain[name] = getattr(_core.Array, name)


class _Hooked:
    """While any thread records or replays, Array's bool/int/index go through the hook (which
    consults this thread's mode); otherwise they are the plain methods, at no cost."""

    def __enter__(self):
        with _hooks_lock:
            if _hooks["users"] == 0:
                for name, kind in _METHODS:
                    setattr(_core.Array, name, _hooked(_plain[name], kind))
            _hooks["users"] += 1

    def __exit__(self, *exc):
        with _hooks_lock:
            _hooks["users"] -= 1
            if _hooks["users"] == 0:
                for name, _ in _METHODS:
                    setattr(_core.Array, name, _plain[name])


def active() -> bool:
    return _state.mode is not None


def _set(mode) -> Optional[tuple]:
    previous = _state.mode
    _state.mode = mode
    return previous


def record(fun: Callable, args: tuple, kwargs: dict) -> list:
    """The decisions fun makes on these concrete arguments, in order."""
    decisions: list = []
    previous = _set(("record", decisions))
    try:
        with _Hooked():
            fun(*args, **kwargs)
    finally:
        _set(previous)
    return decisions


def _concrete(args: tuple, argnums) -> Optional[tuple]:
    """args with what a transform traces as arrays (arrays and the differentiated Python
    floats) as quabla arrays, for the eager run; None when some are tracers already."""
    from . import tree as _tree
    from ._ad import _is_array_like
    nums = {argnums} if isinstance(argnums, int) else set(argnums)
    nums = {n % len(args) for n in nums if -len(args) <= n < len(args)}
    out = []
    for i, a in enumerate(args):
        leaves, treedef = _tree.flatten(a)
        new = []
        for leaf in leaves:
            if isinstance(leaf, _core.Array):
                if leaf._is_tracer:
                    return None
                new.append(leaf)
            elif _is_array_like(leaf) or (i in nums and isinstance(leaf, float)):
                new.append(_core.asarray(leaf))
            else:
                new.append(leaf)
        out.append(_tree.unflatten(treedef, new))
    return tuple(out)


def allowing(make: Callable[[Callable], Callable], fun: Callable, argnums) -> Callable:
    """make(fun) (a transform of fun, such as grad's), called again with fun's decisions
    replayed when tracing fun fails on one (see the module docstring)."""
    import functools
    transformed = make(fun)

    @functools.wraps(transformed)
    def call(*args, **kwargs):
        try:
            return transformed(*args, **kwargs)
        except _core.TracerError as error:
            concrete = None if active() or _core.tracing() else _concrete(args, argnums)
            if concrete is None:
                raise
            original = error
            try:
                decisions = record(fun, concrete, kwargs)  # the user's own errors surface as they are
            except _core.TracerError:
                raise original from None
            if not decisions:
                raise original

            @functools.wraps(fun)
            def replayed(*a, **k):
                position = [0]
                previous = _set(("replay", decisions, position))
                try:
                    with _Hooked():
                        out = fun(*a, **k)
                except _Diverged:
                    raise original from None
                finally:
                    _set(previous)
                if position[0] != len(decisions):
                    raise original
                return out
            return make(replayed)(*args, **kwargs)
    return call
