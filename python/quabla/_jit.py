"""qb.jit (API.md §3): trace a function once per signature, compile it, reuse the plan.

The signature of a call is the pytree structure of the dynamic arguments, the shape and
dtype of each array leaf, and the static values: static_argnums/static_argnames arguments
and Python scalar leaves (keyed by type and value, so 1, 1.0 and True differ and NaN hits
its own entry). Compiled programs are kept in an LRU of max_traces entries; evicting one
warns with RetraceWarning, since a later call with that signature traces again.
"""
from __future__ import annotations

import collections
import functools
import inspect
import numbers
import re
import struct
import threading
import types
import warnings
from typing import Any, Callable, Iterable, Optional, Tuple

from . import _config, _core, _cuda
from . import tree as _tree
from .errors import RetraceWarning, TracerError, UnsupportedOperationError

__all__ = ["jit", "ShapeDtype"]

_state = threading.local()


def _tracing() -> bool:
    return getattr(_state, "depth", 0) > 0


class ShapeDtype:
    """Stands for an array of this shape and dtype in ``jit(f).lower(...)``."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        _core.check_shape(shape, "ShapeDtype")
        self.shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
        self.dtype = _core.asarray(_core.zeros(1, dtype=dtype)).dtype

    def __repr__(self):
        return f"ShapeDtype(shape={self.shape}, dtype={self.dtype.name})"


_DEVICE = re.compile(r"^(cpu|cuda(:\d+)?|mlx)$")


def _check_device(device: Optional[str]) -> Tuple[int, bool]:
    """(cuda ordinal or -1 for the CPU, emulate) for a jit device argument."""
    if device is None:
        return -1, False
    if not isinstance(device, str) or not _DEVICE.match(device):
        raise ValueError(f"jit: device must be 'cpu', 'cuda', 'cuda:N' or 'mlx', got {device!r}")
    if device == "cpu":
        return -1, False
    if device.startswith("cuda"):
        return _cuda.resolve(device, "jit")
    if device == "mlx":
        info = _core.mlx_info()
        if info["available"]:
            return -2, False  # -2: MLX
        raise UnsupportedOperationError(f"jit: device='mlx': {info['reason']}", op="jit", device="mlx")
    raise UnsupportedOperationError(
        f"jit: the {device.split(':')[0]} backend is not built in this version of Quabla; "
        f"qb.devices() lists the available targets (use device='cpu')",
        op="jit", device=device)


def _device_of_arguments(classified) -> Tuple[int, bool]:
    """jit without device=: the program runs where its device arrays are (as in JAX, the
    computation follows the data); on the CPU when there are none. Devices are part of the
    signature, so each placement compiles its own program."""
    devices = sorted({value.device for kind, _, value in classified
                      if kind == "array" and isinstance(value, _core.DeviceArray)})
    if not devices:
        return -1, False
    if len(devices) > 1:
        raise ValueError(f"jit: the arguments are on different devices ({', '.join(devices)}); move them to one "
                         f"with qb.device_put(x, device)")
    if devices[0] == "mlx":
        return -2, False
    emulated = next(value._emulated for kind, _, value in classified
                    if kind == "array" and isinstance(value, _core.DeviceArray))
    return int(devices[0].split(":")[1]), emulated


def _static_key(value: Any, what: str = "a static argument") -> Any:
    """A hashable key for a static value: Python scalars by type and value (NaN by its bits)."""
    if isinstance(value, float):
        return (float, struct.pack("<d", value))
    if isinstance(value, (bool, int, complex, str, bytes, type(None))):
        return (type(value), value)
    if isinstance(value, _core.Array):
        kind = "a traced array (a value of an enclosing transform)" if value._is_tracer else "an array"
        raise TypeError(f"jit: {what} must be a hashable Python value, got {kind}; pass arrays as dynamic "
                        f"arguments (drop it from static_argnums/static_argnames)")
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"jit: {what} must be hashable, got {type(value).__name__}; "
                        f"pass arrays as dynamic arguments or make it hashable") from None
    return (type(value), value)


def _is_array_like(x: Any) -> bool:
    return isinstance(x, _core.Array) or hasattr(x, "__array__") or hasattr(x, "__array_interface__")


def _classify_leaf(x: Any):
    """(kind, key, value): array leaves are dynamic; Python scalars and others static."""
    if isinstance(x, _core.Array):
        return "array", (x.shape, x.dtype.name, x.weak_type), x
    if isinstance(x, ShapeDtype):
        return "array", (x.shape, x.dtype.name, False), x
    if isinstance(x, _core.DeviceArray):
        return "array", (x.shape, x.dtype.name, x.device), x
    if isinstance(x, (bool, int, float)):
        return "static", _static_key(x), x
    if _is_array_like(x):
        a = _core.asarray(x)
        return "array", (a.shape, a.dtype.name, a.weak_type), a
    return "static", _static_key(x), x


_SINGLE_LEAF = _tree.structure(0)


class Compiled:
    """A compiled program for one signature: call it with arrays of that signature."""

    def __init__(self, program, out_treedef, out_kinds, out_statics, in_positions):
        self._program = program
        self._out_treedef = out_treedef
        self._out_kinds = out_kinds      # per output leaf: "array" (from the program) or "static"
        self._out_statics = out_statics  # the static output leaves (non-array values)
        self._in_positions = in_positions
        self._single_output = out_treedef == _SINGLE_LEAF and out_kinds == ["array"]
        self._alive = True  # False once evicted from its function's cache
        self._key = None    # its signature in the function's cache
        self._signature_of = None  # its function's signature computation (for direct calls)

    def as_text(self) -> str:
        """The optimised program's text form."""
        return self._program.as_text()

    def plan_text(self) -> str:
        """The CPU plan: one line per kernel; fused kernels list their member nodes
        ([tile]: lives in a scratch tile only; [epilogue]: a reduction done tile by tile)."""
        return self._program.plan_text()

    def stats(self) -> dict:
        """kernels, buffers and peak planned bytes of the compiled plan."""
        return dict(self._program.stats())

    def _unflatten_outputs(self, outs):
        outs = iter(outs)
        statics = iter(self._out_statics)
        leaves = [next(outs) if k == "array" else next(statics) for k in self._out_kinds]
        return _tree.unflatten(self._out_treedef, leaves)

    def _run(self, arrays):
        outs = iter(self._program.run(arrays))
        statics = iter(self._out_statics)
        leaves = [next(outs) if k == "array" else next(statics) for k in self._out_kinds]
        return _tree.unflatten(self._out_treedef, leaves)

    def __call__(self, *args, **kwargs):
        if self._signature_of is not None:
            key = self._signature_of(args, kwargs)[0]
            if key != self._key:
                raise TypeError("compiled program: " + _signature_mismatch(self._key, key) + "; it runs only on "
                                "arguments of the signature it was compiled for (call the jitted function "
                                "instead: it compiles once per signature)")
        leaves = _tree.leaves((args, kwargs))
        return self._run([leaves[i] if isinstance(leaves[i], (_core.Array, _core.DeviceArray)) else
                          _core.asarray(leaves[i]) for i in self._in_positions])


def _signature_mismatch(expected, got) -> str:
    """What differs between two call signatures (treedef, leaf keys, static args, static kwargs)."""
    def statics(key):
        return [v for _, (_, v) in key[2]] + [f"{k}={v!r}" for k, (_, v) in key[3]]
    if expected[2] != got[2] or expected[3] != got[3]:
        return f"static arguments {statics(got)} differ from the ones it was compiled for {statics(expected)}"
    if expected[0] != got[0]:
        return f"the argument structure {got[0]} differs from {expected[0]}"
    for i, (a, b) in enumerate(zip(expected[1], got[1])):
        if a != b:
            return f"argument leaf {i} is {b[1]} but the program was compiled for {a[1]}"
    return "the arguments differ from the ones it was compiled for"


class Lowered:
    """A traced program for one signature (``jit(f).lower(*args)``)."""

    def __init__(self, compiled: Compiled):
        self._compiled = compiled

    def as_text(self) -> str:
        """The program as traced, before optimisation."""
        return self._compiled._program.traced_text()

    def compile(self) -> Compiled:
        return self._compiled


class JittedFunction:
    def __init__(self, fun, static_argnums, static_argnames, max_traces, device, precision):
        if not callable(fun):
            raise TypeError(f"jit: expected a callable, got {type(fun).__name__}")
        self._cuda = _check_device(device)
        self._device = device
        if precision not in (None, "float32", "float64"):
            raise ValueError(f"jit: precision must be None, 'float32' or 'float64', got {precision!r}")
        if not isinstance(max_traces, int) or max_traces < 1:
            raise ValueError(f"jit: max_traces must be a positive int, got {max_traces!r}")
        self._fun = fun
        self._static_argnums = self._normalize_argnums(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
        try:
            names = tuple(names)
        except TypeError:
            names = None
        if names is None or not all(isinstance(k, str) for k in names):
            raise TypeError(f"jit: static_argnames must be a str or a sequence of str, got {static_argnames!r}")
        self._static_argnames = names
        self._max_traces = max_traces
        self._cache: "collections.OrderedDict[Any, Compiled]" = collections.OrderedDict()
        # Calls whose arguments are all concrete Arrays, keyed by their types alone.
        self._fast: dict = {}
        self._fast_epoch = _config.default_dtype_epoch  # the default dtype the fast entries were made under
        self._lock = threading.Lock()
        self.trace_count = 0
        functools.update_wrapper(self, fun)

    def _normalize_argnums(self, argnums) -> Tuple[int, ...]:
        try:
            nums = (argnums,) if isinstance(argnums, numbers.Integral) else tuple(argnums)
        except TypeError:
            nums = None
        if nums is None or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in nums):
            raise TypeError(f"jit: static_argnums must be an int or a sequence of ints, got {argnums!r}")
        try:
            params = list(inspect.signature(self._fun).parameters.values())
        except (TypeError, ValueError):
            params = None
        if params is not None and not any(p.kind == p.VAR_POSITIONAL for p in params):
            n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
            for a in nums:
                if not -n <= a < n:
                    raise ValueError(f"jit: static_argnums {a} is out of range for a function of {n} positional "
                                     f"arguments")
            nums = tuple(a % n for a in nums)
        return tuple(sorted(set(nums)))

    # ---- the signature of a call
    def _signature(self, args, kwargs):
        for i in self._static_argnums:
            if i >= len(args):
                raise TypeError(f"jit: static argument {i} was not passed positionally")
        dyn_args = tuple(None if i in self._static_argnums else a for i, a in enumerate(args))
        static_args = tuple((i, _static_key(args[i], f"static argument {i}")) for i in self._static_argnums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        static_kwargs = tuple(sorted((k, _static_key(v, f"static argument {k!r}")) for k, v in kwargs.items()
                                     if k in self._static_argnames))
        leaves, treedef = _tree.flatten((dyn_args, dyn_kwargs))
        classified = [_classify_leaf(x) for x in leaves]
        # The default dtype is part of the signature, as JAX's x64 flag is: a function that
        # calls qb.zeros(3) traces again after qb.set_default_dtype.
        key = (treedef, tuple((k, s) for k, s, _ in classified), static_args, static_kwargs,
               _config.default_dtype_epoch)
        return key, treedef, classified

    def _trace(self, args, kwargs, treedef, classified) -> Compiled:
        trace = _core.Trace()
        in_positions = []
        leaves = []
        for i, (kind, _, value) in enumerate(classified):
            if kind == "array":
                weak = isinstance(value, _core.Array) and value.weak_type
                leaves.append(trace.parameter(value.shape, value.dtype, weak))
                in_positions.append(i)
            else:
                leaves.append(value)
        dyn_args, dyn_kwargs = _tree.unflatten(treedef, leaves)
        call_args = [args[i] if i in self._static_argnums else a for i, a in enumerate(dyn_args)]
        call_kwargs = dict(dyn_kwargs)
        call_kwargs.update({k: v for k, v in kwargs.items() if k in self._static_argnames})
        _state.depth = getattr(_state, "depth", 0) + 1
        try:
            out = self._fun(*call_args, **call_kwargs)
        except BaseException:
            trace.close()
            raise
        finally:
            _state.depth -= 1
        if trace.num_captured:
            # The function read values of an enclosing transform (grad, vmap, ...) from a
            # closure: a program of its own could not be fed them, so it is inlined there.
            trace.close()
            return None
        out_leaves, out_treedef = _tree.flatten(out)
        kinds, arrays, statics = [], [], []
        for leaf in out_leaves:
            if isinstance(leaf, _core.Array) or _is_array_like(leaf):
                kinds.append("array")
                arrays.append(leaf)
            else:
                kinds.append("static")
                statics.append(leaf)
        target = self._cuda if self._device is not None else _device_of_arguments(classified)
        program = trace.finish(arrays, cuda_ordinal=max(target[0], -1), cuda_emulate=target[1],
                               mlx=target[0] == -2)
        self.trace_count += 1
        return Compiled(program, out_treedef, kinds, statics, in_positions)

    def _lookup(self, args, kwargs) -> Tuple[Compiled, list]:
        key, treedef, classified = self._signature(args, kwargs)
        with self._lock:
            compiled = self._cache.get(key)
            if compiled is not None:
                self._cache.move_to_end(key)
        if compiled is None:
            compiled = self._trace(args, kwargs, treedef, classified)
            if compiled is None:
                return None, classified
            compiled._key = key
            compiled._signature_of = self._signature
            with self._lock:
                self._cache[key] = compiled
                while len(self._cache) > self._max_traces:
                    _, evicted = self._cache.popitem(last=False)
                    evicted._alive = False
                    self._fast = {k: c for k, c in self._fast.items() if c is not evicted}
                    warnings.warn(
                        f"jit({getattr(self._fun, '__name__', 'function')}): more than max_traces="
                        f"{self._max_traces} signatures; evicted the least recently used one, which will be "
                        f"traced again if called (pass a larger max_traces, or keep shapes and static "
                        f"arguments stable)", RetraceWarning, stacklevel=3)
        return compiled, classified

    def __get__(self, obj, objtype=None):
        # Stored on a class, a jitted function is a method, as jax.jit's: the instance is its
        # first argument (static where static_argnums=0 says so, else a pytree argument).
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if _config.jit_disabled:  # qb.disable_jit(): the Python body, eagerly
            return self._fun(*args, **kwargs)
        fast_key = tree_key = None
        if self._fast_epoch != _config.default_dtype_epoch:
            self._fast = {}
            self._fast_epoch = _config.default_dtype_epoch
        if _tracing():
            # Inside another trace the function is inlined into the enclosing program.
            self._check_statics(args, kwargs)
            return self._fun(*args, **kwargs)
        if not kwargs and not self._static_argnums:
            fast_key = _core.array_signature(*args)
            if fast_key is not None:
                compiled = self._fast.get(fast_key)
                if compiled is not None and compiled._alive:
                    self._cache.move_to_end(compiled._key)  # keeps the LRU order (O(1))
                    outs = compiled._program.run_args(*args)
                    return outs[0] if compiled._single_output else compiled._unflatten_outputs(outs)
        if not self._static_argnums and not self._static_argnames:
            # Pytrees of plain containers and concrete arrays: flattened and keyed in C++.
            flat = _core.flatten_arrays((args, kwargs))
            if flat is not None:
                tree_key = flat[0]
                compiled = self._fast.get(tree_key)
                if compiled is not None and compiled._alive:
                    self._cache.move_to_end(compiled._key)
                    return compiled._unflatten_outputs(compiled._program.run_args(*flat[1]))
        leaves = _tree.leaves((args, kwargs))
        if any(isinstance(leaf, _core.Array) and leaf._is_tracer for leaf in leaves):
            # Called on tracers of a transform (grad/vmap of a jitted function): inline.
            self._check_statics(args, kwargs)
            return self._fun(*args, **kwargs)
        compiled, classified = self._lookup(args, kwargs)
        if compiled is None:  # closes over tracers of an enclosing transform: inline
            return self._fun(*args, **kwargs)
        if tree_key is not None and len(compiled._in_positions) == len(leaves):
            self._fast[tree_key] = compiled
        if not kwargs and not self._static_argnums and fast_key is not None \
                and len(compiled._in_positions) == len(args):
            self._fast[fast_key] = compiled
        return compiled._run([classified[i][2] for i in compiled._in_positions])

    def _check_statics(self, args, kwargs) -> None:
        """The static arguments' checks of a compiled call, for calls that are inlined."""
        for i in self._static_argnums:
            if i < len(args):
                _static_key(args[i], f"static argument {i}")
        for k in self._static_argnames:
            if k in kwargs:
                _static_key(kwargs[k], f"static argument {k!r}")

    def lower(self, *args, **kwargs) -> Lowered:
        """Traces for the signature of these arguments (arrays or ShapeDtype) without running."""
        compiled, _ = self._lookup(args, kwargs)
        if compiled is None:
            raise TracerError(f"jit({getattr(self._fun, '__name__', 'function')}).lower: the function reads a "
                              f"traced value of an enclosing transform from a closure, so it cannot be compiled "
                              f"on its own; call it (it is inlined) or pass that value as an argument")
        return Lowered(compiled)

    def _cache_size(self) -> int:
        return len(self._cache)


def jit(fun: Optional[Callable] = None, *, device: Optional[str] = None, static_argnums: Iterable[int] = (),
        static_argnames: Iterable[str] = (), max_traces: int = 8, precision: Optional[str] = None,
        donate_argnums: Any = (), donate_argnames: Any = (), keep_unused: bool = False, inline: bool = False,
        backend: Optional[str] = None):
    """Compiles fun once per signature and reuses the plan (see the module docstring).

    donate_argnums/donate_argnames, keep_unused and inline are accepted for code written for
    jax.jit and change nothing: the executor already frees every buffer at its last use, and
    arguments are never overwritten. backend is device's older name."""
    if backend is not None:
        if device is not None and device != backend:
            raise ValueError(f"jit: backend={backend!r} and device={device!r} disagree; pass device only")
        device = backend
    if fun is None:
        return lambda f: jit(f, device=device, static_argnums=static_argnums, static_argnames=static_argnames,
                             max_traces=max_traces, precision=precision)
    return JittedFunction(fun, static_argnums, static_argnames, max_traces, device, precision)
