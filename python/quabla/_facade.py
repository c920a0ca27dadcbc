"""The compiler facade of Quabla v0.1: ``Compiler`` -> ``Program`` -> ``Executable``.

Programs are named: ``Compiler().trace(fn, specs)`` takes ``(name, shape)`` or ``(name,
shape, dtype)`` specs, calls ``fn`` with one traced array per spec (in spec order) and keeps
the single array it returns. ``Program.vjp(cotangent_name)`` gives one gradient Program per
(float) input, keyed by input name, each taking the cotangent as an extra named input;
``Program.jvp(name)`` is the coordinate JVP (a tangent of ones for `name`, zeros
elsewhere). ``Program.compile(target)`` gives an Executable called with a dict of arrays
keyed by input name.

A thin layer: a Program is a function of positional arrays, its transforms are qb.vjp and
qb.jvp of that function, and compile is qb.jit of it. See docs/migration.md.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

from . import _core
from .errors import UnsupportedOperationError

__all__ = ["Compiler", "Program", "Executable"]

TARGETS = ("cpu", "cuda", "mlx")


def _check_target(target) -> str:
    if target not in TARGETS:
        raise ValueError(f"target must be one of 'cpu', 'cuda', or 'mlx', got {target!r}")
    return target


def built_targets() -> Dict[str, bool]:
    """Which targets this build compiles for, keyed cpu, cuda, mlx (build facts, not a
    hardware probe)."""
    from . import devices
    built = set(d.split(":")[0] for d in devices())
    return {t: t in built for t in TARGETS}


def unavailable_target(target: str, what: str) -> UnsupportedOperationError:
    """The error for a target this build does not have, as jit(device=...) raises it."""
    if target == "cuda":
        from . import _cuda
        if _cuda.unavailable_reason() is None:
            return UnsupportedOperationError(
                f"{what}: not provided for CUDA by the v0.1 compatibility layer; use qb.jit(f, device='cuda') or "
                f"qb.Trainer(..., device='cuda')", op=what, device=target)
        return UnsupportedOperationError(
            f"{what}: CUDA is not available on this machine: {_cuda.unavailable_reason()}; qb.devices() lists the "
            f"available targets (use target 'cpu', or qb.Compiler().capability('cuda') to check first)",
            op=what, device=target)
    return UnsupportedOperationError(
        f"{what}: the {target} backend is not built in this version of Quabla; qb.devices() lists the "
        f"available targets (use target 'cpu', or qb.Compiler().capability({target!r}) to check first)",
        op=what, device=target)


def parse_specs(input_specs, what: str) -> List[Tuple[str, Tuple[int, ...], object]]:
    """[(name, shape, dtype)] from v0.1 specs: (name, shape) (float64) or (name, shape,
    dtype), shape a list or tuple of ints ([] is a scalar), names unique."""
    if isinstance(input_specs, (str, bytes)) or not isinstance(input_specs, (list, tuple)):
        raise TypeError(f"{what}: input specs must be a list of (name, shape) or (name, shape, dtype) tuples, got "
                        f"{type(input_specs).__name__}")
    out, seen = [], set()
    for spec in input_specs:
        if not isinstance(spec, (list, tuple)) or len(spec) not in (2, 3):
            raise TypeError(f"{what}: tensor input spec must be (name, shape) or (name, shape, dtype) with a quabla "
                            f"dtype, got {spec!r}")
        name, shape = spec[0], spec[1]
        dtype = spec[2] if len(spec) == 3 else _core.float64
        if not isinstance(name, str):
            raise TypeError(f"{what}: an input spec's name must be a str, got {name!r}")
        if isinstance(shape, int) or not isinstance(shape, (list, tuple)) or \
                not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise TypeError(f"{what}: input {name!r}: the shape must be a list of non-negative ints, got {shape!r}")
        if not isinstance(dtype, _core.DType):
            raise TypeError(f"{what}: input {name!r}: the dtype must be a quabla dtype (qb.float32, qb.float64, "
                            f"qb.bool_, ...), got {dtype!r}")
        if name in seen:
            raise ValueError(f"{what}: input name {name!r} appears twice in the specs")
        seen.add(name)
        out.append((name, tuple(shape), dtype))
    return out


def trace_output(fn: Callable, specs, what: str, require_traced: bool = False):
    """(shape, dtype) of fn's single array output, traced on placeholders (nothing runs).
    With require_traced (a user's function), the output must be computed from the inputs."""
    trace = _core.Trace()
    try:
        out = fn(*[trace.parameter(shape, dtype) for _, shape, dtype in specs])
        if not isinstance(out, _core.Array):
            raise TypeError(f"{what}: the function must return one array (a single-output program), got "
                            f"{type(out).__name__}")
        if require_traced and not out._is_tracer:
            raise TypeError(f"{what}: the function must return a traced array computed from its inputs, got a "
                            f"constant; use qb.zeros_like(x) + value to make one")
        return tuple(out.shape), out.dtype
    finally:
        trace.close()


def bind_inputs(specs, inputs, what: str) -> list:
    """The positional arrays for a dict of inputs keyed by spec name: every name present,
    shapes as traced; float data is rounded to a float32 spec (as a jit argument would be)."""
    if not isinstance(inputs, dict):
        raise TypeError(f"{what}: inputs must be a dict of arrays keyed by input name, got {type(inputs).__name__}")
    args = []
    for name, shape, dtype in specs:
        if name not in inputs:
            raise ValueError(f"{what}: missing input {name!r} (expects {[s[0] for s in specs]})")
        a = inputs[name]
        a = a if isinstance(a, _core.Array) else _core.asarray(a)
        if tuple(a.shape) != shape:
            raise ValueError(f"{what}: input {name!r} has shape {list(a.shape)}, traced with {list(shape)}")
        if a.dtype != dtype:
            if dtype in (_core.float32, _core.float64) and a.dtype in (_core.float32, _core.float64, _core.int32,
                                                                        _core.int64):
                a = a.astype(dtype)
            else:
                raise ValueError(f"{what}: input {name!r} is {a.dtype.name}, traced as {dtype.name}")
        args.append(a)
    return args


class Executable:
    """A compiled Program: call it (or .evaluate) with a dict of arrays keyed by input name."""

    def __init__(self, program: "Program", target: str, device_ordinal: int = 0):
        self._program = program
        self._jitted = _core_jit(program._fn, None if target == "cpu" else f"{target}:{device_ordinal}")
        self.target = target

    @property
    def node_count(self) -> int:
        from ._jit import ShapeDtype
        specs = [ShapeDtype(shape, dtype) for _, shape, dtype in self._program._specs]
        return self._jitted.lower(*specs).compile().stats()["nodes"]

    def evaluate(self, inputs: dict):
        return self._jitted(*bind_inputs(self._program._specs, inputs, "Executable"))

    __call__ = evaluate

    def __repr__(self):
        return f"Executable(target={self.target}, node_count={self.node_count})"


def _core_jit(fn, device=None):
    from ._jit import jit
    return jit(fn, device=device)


class Program:
    """A traced single-output program over named inputs (from Compiler.trace)."""

    def __init__(self, fn: Callable, specs, what: str = "Compiler.trace"):
        self._fn = fn
        self._specs = specs
        self._out = trace_output(fn, specs, what)

    @property
    def input_names(self) -> List[str]:
        return [s[0] for s in self._specs]

    @property
    def output_shape(self) -> List[int]:
        return list(self._out[0])

    @property
    def output_shapes(self) -> List[List[int]]:
        return [list(self._out[0])]

    @property
    def output_dtype(self):
        return self._out[1]

    def lower_text(self) -> str:
        from ._jit import ShapeDtype, jit
        return jit(self._fn).lower(*[ShapeDtype(shape, dtype) for _, shape, dtype in self._specs]).as_text()

    def _index(self, name: str, what: str) -> int:
        for i, s in enumerate(self._specs):
            if s[0] == name:
                return i
        raise ValueError(f"Program.{what}: no input named {name!r} (inputs: {self.input_names})")

    def jvp(self, input_name: str) -> "Program":
        """The coordinate JVP: the output's derivative along a tangent of ones for
        `input_name` (zeros for the other inputs), as a Program of the same inputs."""
        from ._ad import jvp
        k = self._index(input_name, "jvp")
        if self._specs[k][2] not in (_core.float32, _core.float64):
            raise ValueError(f"Program.jvp: input {input_name!r} is {self._specs[k][2].name}; only float inputs "
                             f"carry tangents")
        fn, specs = self._fn, self._specs

        def tangent_fn(*args):
            tangents = tuple(_core.ones(s[1], dtype=s[2]) if i == k else _core.zeros(s[1], dtype=s[2])
                             for i, s in enumerate(specs))
            return jvp(fn, tuple(args), tangents)[1]
        return Program(tangent_fn, specs, "Program.jvp")

    def vjp(self, cotangent_name: str) -> Dict[str, "Program"]:
        """One gradient Program per float input, keyed by input name: the cotangent-weighted
        gradient, taking the original inputs and `cotangent_name` (the output's shape and
        dtype). Integer and bool inputs carry no gradient and are left out."""
        from ._ad import vjp
        if not isinstance(cotangent_name, str):
            raise TypeError(f"Program.vjp: the cotangent name must be a str, got {cotangent_name!r}")
        if cotangent_name in self.input_names:
            raise ValueError(f"Program.vjp: {cotangent_name!r} is already an input name; choose another cotangent name")
        fn, specs = self._fn, self._specs
        grad_specs = list(specs) + [(cotangent_name, self._out[0], self._out[1])]
        out = {}
        for k, (name, _, dtype) in enumerate(specs):
            if dtype not in (_core.float32, _core.float64):
                continue

            def gradient(*args, k=k):
                _, pullback = vjp(fn, *args[:-1])
                return pullback(args[-1])[k]
            out[name] = Program(gradient, grad_specs, "Program.vjp")
        return dict(sorted(out.items()))

    def compile(self, target: str = "cpu", device_ordinal: int = 0) -> Executable:
        _check_target(target)
        if not built_targets()[target]:
            raise unavailable_target(target, "Program.compile")
        return Executable(self, target, device_ordinal)

    def __repr__(self):
        return f"Program(output_shape={self.output_shape})"


class Compiler:
    """Entry point of the facade: trace named programs and report the built targets."""

    def trace(self, function: Callable, input_specs) -> Program:
        if not callable(function):
            raise TypeError(f"Compiler.trace: expected a callable, got {type(function).__name__}")
        specs = parse_specs(input_specs, "Compiler.trace")
        trace_output(function, specs, "Compiler.trace", require_traced=True)
        return Program(function, specs)

    def capability(self, target: str) -> bool:
        return built_targets()[_check_target(target)]

    def capabilities(self) -> Dict[str, bool]:
        return built_targets()

    def __repr__(self):
        return "Compiler()"
