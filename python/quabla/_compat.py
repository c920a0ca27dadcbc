"""Quabla v0.1's rank-N helpers, kept so code written for the original project runs
unchanged (docs/migration.md). Thin wrappers over the core API: each ``tensor_*_fn(function,
input_specs, ...)`` traces ``function`` with one array per ``(name, shape[, dtype])`` spec
and returns a callable object taking dicts of arrays keyed by input name; gradients come
back as dicts keyed by input name (sorted, as v0.1 gave them).

Top-level access to these names warns once per name (``quabla.__getattr__`` ->
``deprecated``); ``from quabla import *`` binds them silently. Device-specific helpers
(``*_cuda_fn``, ``*_mlx_fn``, ``cuda_adam_*``, ``mlx_adam_*``) raise the same error as
``jit(device=...)`` for a backend this build does not have.
"""
from __future__ import annotations

import dis
import sys
import warnings
from typing import Callable, Dict, List, Optional

from . import _core
from ._facade import Program, bind_inputs, built_targets, parse_specs, trace_output, unavailable_target

_FLOATS = (_core.float32, _core.float64)


def _is_float(dtype) -> bool:
    return dtype in _FLOATS


def _float_names(specs) -> List[str]:
    return [name for name, _, dtype in specs if _is_float(dtype)]


def _check_callable(function, what):
    if not callable(function):
        raise TypeError(f"{what}: expected a callable, got {type(function).__name__}")


def _input_index(specs, name, what) -> int:
    for i, s in enumerate(specs):
        if s[0] == name:
            return i
    raise ValueError(f"{what}: no input named {name!r} (inputs: {[s[0] for s in specs]})")


def _jit(fn, device=None):
    from ._jit import jit
    return jit(fn, device=device)


def _scalar_output(program: Program, what: str):
    if program.output_shape not in ([], [1], [1, 1]) or not _is_float(program.output_dtype):
        raise ValueError(f"{what}: value-and-grad requires a scalar float output, got "
                         f"{program.output_dtype.name}{program.output_shape}")


def _sum_to_scalar(fn):
    return lambda *a: _core.sum(fn(*a))


# ---- result objects of the helpers ---------------------------------------------------------

class _Helper:
    """A traced function over named inputs, compiled once per helper (qb.jit)."""

    _what = "helper"

    def __init__(self, fn, specs, device=None):
        self._specs = specs
        self._program = Program(fn, specs, self._what)
        self._fn = fn
        self._device = device

    @property
    def input_names(self) -> List[str]:
        return [s[0] for s in self._specs]

    @property
    def node_count(self) -> int:
        return self._program.compile().node_count

    def _bind(self, values):
        return bind_inputs(self._specs, values, type(self).__name__)

    def __repr__(self):
        return f"{type(self).__name__}(inputs={self.input_names}, output_shape={self._program.output_shape})"


class TensorJitFunction(_Helper):
    _what = "tensor_jit_fn"

    def __init__(self, fn, specs, device=None):
        super().__init__(fn, specs, device)
        self._compiled = _jit(fn, device)

    def __call__(self, values):
        return self._compiled(*self._bind(values))


class TensorValueAndGradFunction(_Helper):
    """f(values) -> (loss, {name: gradient}) over every float input (or parameter_names)."""

    _what = "tensor_value_and_grad_fn"

    def __init__(self, fn, specs, device=None, parameter_names=None):
        super().__init__(fn, specs, device)
        _scalar_output(self._program, self._what)
        names = _float_names(specs) if parameter_names is None else _parameter_names(specs, parameter_names, self._what)
        self._names = sorted(names)
        argnums = tuple(_input_index(specs, n, self._what) for n in self._names)
        from ._ad import value_and_grad
        self._compiled = _jit(value_and_grad(_sum_to_scalar(fn), argnums=argnums), device)

    def __call__(self, values):
        value, grads = self._compiled(*self._bind(values))
        return value, dict(zip(self._names, grads))


def _parameter_names(specs, names, what) -> List[str]:
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(f"{what}: parameter_names must be a list of input names, got {names!r}")
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f'{what}: duplicate parameter name "{n}"')
        seen.add(n)
        i = _input_index(specs, n, what) if any(s[0] == n for s in specs) else None
        if i is None:
            raise ValueError(f'{what}: parameter "{n}" is not declared in the loss trace')
        if not _is_float(specs[i][2]):
            raise ValueError(f'{what}: parameter "{n}" is {specs[i][2].name}; only float inputs have gradients')
    return list(names)


class TensorGradScalarFunction(TensorValueAndGradFunction):
    """f(values) -> {name: gradient} of a scalar output."""

    _what = "tensor_grad_scalar_fn"

    def __call__(self, values):
        return super().__call__(values)[1]


class TensorVjpFunction(_Helper):
    """f(values, output_cotangent) -> (primal, {name: cotangent-weighted gradient})."""

    _what = "tensor_vjp_fn"

    def __init__(self, fn, specs, device=None):
        super().__init__(fn, specs, device)
        self._names = sorted(_float_names(specs))
        idx = [_input_index(specs, n, self._what) for n in self._names]
        from ._ad import vjp

        def run(*args):
            out, pullback = vjp(fn, *args[:-1])
            cts = pullback(args[-1])
            return out, tuple(cts[i] for i in idx)
        self._compiled = _jit(run, device)

    def __call__(self, values, output_cotangent):
        ct = output_cotangent if isinstance(output_cotangent, _core.Array) else _core.asarray(output_cotangent)
        shape, dtype = tuple(self._program.output_shape), self._program.output_dtype
        if tuple(ct.shape) != shape:
            raise ValueError(f"{type(self).__name__}: output cotangent shape {list(ct.shape)} does not match output "
                             f"shape {list(shape)}")
        out, grads = self._compiled(*self._bind(values), ct.astype(dtype))
        return out, dict(zip(self._names, grads))


class TensorJvpFunction(_Helper):
    """f(values, input_tangents) -> (primal, tangent); missing tangents are zeros."""

    _what = "tensor_jvp_fn"

    def __init__(self, fn, specs, device=None):
        super().__init__(fn, specs, device)
        from ._ad import jvp
        n = len(specs)
        self._compiled = _jit(lambda *a: jvp(fn, tuple(a[:n]), tuple(a[n:])), device)

    def __call__(self, values, input_tangents):
        if not isinstance(input_tangents, dict):
            raise TypeError(f"{type(self).__name__}: tangents must be a dict keyed by input name")
        unknown = set(input_tangents) - set(self.input_names)
        if unknown:
            raise ValueError(f"{type(self).__name__}: tangents for unknown inputs {sorted(unknown)}")
        tangents = {name: input_tangents.get(name, _core.zeros(shape, dtype=dtype)) for name, shape, dtype in self._specs}
        return self._compiled(*self._bind(values), *bind_inputs(self._specs, tangents, type(self).__name__))


class TensorJacobianFunction(_Helper):
    """f(values) -> the dense Jacobian of one input as a list of rows (output-flat x
    input-flat, row-major)."""

    _what = "tensor_jacobian_fn"

    def __init__(self, fn, specs, input_name, device=None):
        super().__init__(fn, specs, device)
        k = _input_index(specs, input_name, self._what)
        from ._ad import jacobian
        size_in = _size(specs[k][1])
        size_out = _size(self._program.output_shape)
        self._compiled = _jit(lambda *a: _core.reshape(jacobian(fn, argnums=k)(*a), (size_out, size_in)), device)

    def __call__(self, values):
        return self._compiled(*self._bind(values)).tolist()


class TensorHessianScalarFunction(_Helper):
    """f(values) -> the dense Hessian of a scalar output in one input, as a list of rows."""

    _what = "tensor_hessian_scalar_fn"

    def __init__(self, fn, specs, input_name, device=None):
        super().__init__(fn, specs, device)
        _scalar_output(self._program, self._what)
        k = _input_index(specs, input_name, self._what)
        from ._ad import hessian
        n = _size(specs[k][1])
        self._compiled = _jit(lambda *a: _core.reshape(hessian(_sum_to_scalar(fn), argnums=k)(*a), (n, n)), device)

    def __call__(self, values):
        return self._compiled(*self._bind(values)).tolist()


class TensorHvpScalarFunction(_Helper):
    """f(values, input_tangent) -> the Hessian-vector product in one input (its shape)."""

    _what = "tensor_hvp_scalar_fn"

    def __init__(self, fn, specs, input_name, device=None):
        super().__init__(fn, specs, device)
        _scalar_output(self._program, self._what)
        k = self._k = _input_index(specs, input_name, self._what)
        from ._ad import grad, jvp
        g = grad(_sum_to_scalar(fn), argnums=k)

        def hvp(*a):
            args, v = a[:-1], a[-1]
            return jvp(lambda x: g(*args[:k], x, *args[k + 1:]), (args[k],), (v,))[1]
        self._compiled = _jit(hvp, device)

    def __call__(self, values, input_tangent):
        name, shape, dtype = self._specs[self._k]
        v = bind_inputs([(name, shape, dtype)], {name: input_tangent}, type(self).__name__)[0]
        return self._compiled(*self._bind(values), v)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# ---- vmap helpers: specs describe one example ----------------------------------------------

def _vmap_axes(specs, in_axes, what):
    if in_axes is None:
        return [0] * len(specs)
    if not isinstance(in_axes, (list, tuple)) or len(in_axes) != len(specs):
        raise ValueError(f"{what}: in_axes must be a list with one entry (an int or None) per input spec")
    for a in in_axes:
        if a is not None and (not isinstance(a, int) or isinstance(a, bool)):
            raise TypeError(f"{what}: in_axes entries must be ints or None, got {a!r}")
    return list(in_axes)


def _batched_specs(specs, axes, batch):
    out = []
    for (name, shape, dtype), a in zip(specs, axes):
        if a is None:
            out.append((name, shape, dtype))
        else:
            a = a % (len(shape) + 1)
            out.append((name, shape[:a] + (batch,) + shape[a:], dtype))
    return out


class TensorVmapFunction(_Helper):
    """f(inputs) -> the per-example function over a fixed batch (mapped inputs carry the
    batch axis at their in_axes entry; the output's batch axis is out_axis)."""

    _what = "tensor_vmap_fn"

    def __init__(self, fn, specs, batch_size, in_axes=None, out_axis=0, device=None):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"{self._what}: batch_size must be a positive int, got {batch_size!r}")
        self._axes = _vmap_axes(specs, in_axes, self._what)
        from ._vmap import vmap
        self._example = Program(fn, specs, self._what)
        batched = vmap(fn, in_axes=tuple(self._axes), out_axes=out_axis)
        super().__init__(batched, _batched_specs(specs, self._axes, batch_size), device)
        self._compiled = _jit(batched, device)

    def __call__(self, inputs):
        return self._compiled(*self._bind(inputs))


class TensorVmapJvpFunction(TensorVmapFunction):
    _what = "tensor_vmap_jvp_fn"

    def __call__(self, values, tangents):
        if not hasattr(self, "_jvp"):
            self._jvp = TensorJvpFunction(self._fn, self._specs, self._device)
        return self._jvp(values, tangents)


class TensorVmapVjpFunction(TensorVmapFunction):
    """f(values, output_cotangent) -> (outputs, {name: gradient}); unmapped inputs' gradients
    are summed over the batch."""

    _what = "tensor_vmap_vjp_fn"

    def __call__(self, values, output_cotangent):
        if not hasattr(self, "_vjp"):
            self._vjp = TensorVjpFunction(self._fn, self._specs, self._device)
        return self._vjp(values, output_cotangent)


class TensorVmapHvpScalarFunction(TensorVmapFunction):
    """f(values, input_tangent) -> the HVP of the sum of the per-example scalar outputs in a
    mapped input."""

    _what = "tensor_vmap_hvp_scalar_fn"

    def __init__(self, fn, specs, batch_size, input_name, in_axes=None, out_axis=0, device=None):
        super().__init__(fn, specs, batch_size, in_axes, out_axis, device)
        k = _input_index(specs, input_name, self._what)
        if self._axes[k] is None:
            raise ValueError(f"{self._what}: input {input_name!r} must be mapped (its in_axes entry is None)")
        self._hvp = TensorHvpScalarFunction(_sum_to_scalar(self._fn), self._specs, input_name, device)

    def __call__(self, values, input_tangent):
        return self._hvp(values, input_tangent)


# ---- batch-size specialising helpers --------------------------------------------------------

class TensorBatchJitFunction:
    """f(values) -> the function jitted per batch size (inputs traced as float64), at most
    max_specializations batch sizes."""

    _what = "tensor_jit_batch_fn"

    def __init__(self, fn, input_names, in_axes=None, batch_axis=0, max_specializations=4, device=None,
                 parameter_names=None):
        _check_callable(fn, self._what)
        if isinstance(input_names, str) or not isinstance(input_names, (list, tuple)) or \
                not all(isinstance(n, str) for n in input_names):
            raise TypeError(f"{self._what}: input_names must be a list of str")
        if not isinstance(max_specializations, int) or max_specializations < 1:
            raise ValueError(f"{self._what}: max_specializations must be a positive int")
        self._fn, self._names = fn, list(input_names)
        self._axes = list(in_axes) if in_axes is not None else [batch_axis] * len(self._names)
        self.max_specializations = max_specializations
        self._device, self._parameters = device, parameter_names
        self._sizes: Dict[int, object] = {}
        self._rest = None  # the non-batch shapes of the first call

    @property
    def specialization_count(self) -> int:
        return len(self._sizes)

    def _prepare(self, values):
        if not isinstance(values, dict) or set(values) != set(self._names):
            raise ValueError(f"{self._what} expects exactly inputs {self._names}")
        arrays = [(values[n] if isinstance(values[n], _core.Array) else _core.asarray(values[n])).astype(_core.float64)
                  for n in self._names]
        sizes = {a.shape[ax] for a, ax in zip(arrays, self._axes) if ax is not None}
        if len(sizes) > 1:
            raise ValueError(f"{self._what}: mapped inputs disagree on the batch size ({sorted(sizes)})")
        b = sizes.pop() if sizes else 0
        rest = [tuple(d for j, d in enumerate(a.shape) if ax is None or j != ax % a.ndim)
                for a, ax in zip(arrays, self._axes)]
        if self._rest is None:
            self._rest = rest
        for name, got, want in zip(self._names, rest, self._rest):
            if got != want:
                raise ValueError(f"{self._what}: input {name!r} has non-batch shape {list(got)}, first called with "
                                 f"{list(want)}; only the batch size may change")
        if b not in self._sizes:
            if len(self._sizes) >= self.max_specializations:
                raise ValueError(f"{self._what} reached max_specializations={self.max_specializations} before batch "
                                 f"size {b}")
            self._sizes[b] = self._build(arrays)
        return self._sizes[b], arrays

    def _build(self, arrays):
        return _jit(self._fn, self._device)

    def __call__(self, values):
        f, arrays = self._prepare(values)
        return f(*arrays)


class TensorBatchValueAndGradFunction(TensorBatchJitFunction):
    """f(values) -> (loss, {name: gradient}) per batch size (every input, or parameter_names)."""

    _what = "tensor_value_and_grad_batch_fn"

    def _build(self, arrays):
        from ._ad import value_and_grad
        names = self._parameters if self._parameters is not None else self._names
        argnums = tuple(self._names.index(n) for n in names)
        f = _jit(value_and_grad(_sum_to_scalar(self._fn), argnums=argnums), self._device)
        return lambda *a: (lambda v, g: (v, dict(sorted(zip(names, g)))))(*f(*a))


# ---- cond helpers: a concrete predicate picks the branch -------------------------------------

class TensorCondFunction:
    """f(predicate, values) -> the selected branch's output (only that branch runs)."""

    _what = "tensor_cond_fn"
    _helper = TensorJitFunction

    def __init__(self, on_true, on_false, specs):
        _check_callable(on_true, self._what)
        _check_callable(on_false, self._what)
        self._branches = (self._helper(on_true, specs), self._helper(on_false, specs))
        a, b = (h._program for h in self._branches)
        if a.output_shape != b.output_shape or a.output_dtype != b.output_dtype:
            raise ValueError(f"{self._what}: the branches give {a.output_dtype.name}{a.output_shape} and "
                             f"{b.output_dtype.name}{b.output_shape}; they must match")

    def _pick(self, predicate):
        if isinstance(predicate, _core.Array):
            predicate = bool(predicate.item())
        if not isinstance(predicate, (bool, int)):
            raise TypeError(f"{self._what}: the predicate must be a Python bool, got {type(predicate).__name__}")
        return self._branches[0 if predicate else 1]

    def __call__(self, predicate, values):
        return self._pick(predicate)(values)


class TensorCondJvpFunction(TensorCondFunction):
    _what = "tensor_cond_jvp_fn"
    _helper = TensorJvpFunction

    def __call__(self, predicate, values, tangents):
        return self._pick(predicate)(values, tangents)


class TensorCondValueAndGradFunction(TensorCondFunction):
    _what = "tensor_cond_value_and_grad_fn"
    _helper = TensorValueAndGradFunction


# ---- device-specific result classes (raise until their backend is built) -----------------

class TensorCudaValueAndGradFunction(TensorValueAndGradFunction):
    _what = "tensor_value_and_grad_cuda_fn"


class TensorMlxValueAndGradFunction(TensorValueAndGradFunction):
    _what = "tensor_value_and_grad_mlx_fn"


class TensorBatchCudaJitFunction(TensorBatchJitFunction):
    _what = "tensor_jit_batch_cuda_fn"


class TensorBatchCudaValueAndGradFunction(TensorBatchValueAndGradFunction):
    _what = "tensor_value_and_grad_batch_cuda_fn"


class TensorBatchMlxValueAndGradFunction(TensorBatchValueAndGradFunction):
    _what = "tensor_value_and_grad_batch_mlx_fn"


class TensorVmapCudaFunction(TensorVmapFunction):
    _what = "tensor_vmap_cuda_fn"


class TensorVmapMlxFunction(TensorVmapFunction):
    _what = "tensor_vmap_mlx_fn"


class TensorVmapCudaJvpFunction(TensorVmapJvpFunction):
    _what = "tensor_vmap_jvp_cuda_fn"


class TensorVmapMlxJvpFunction(TensorVmapJvpFunction):
    _what = "tensor_vmap_jvp_mlx_fn"


class TensorVmapCudaVjpFunction(TensorVmapVjpFunction):
    _what = "tensor_vmap_vjp_cuda_fn"


class TensorVmapMlxVjpFunction(TensorVmapVjpFunction):
    _what = "tensor_vmap_vjp_mlx_fn"


class TensorVmapCudaHvpScalarFunction(TensorVmapHvpScalarFunction):
    _what = "tensor_vmap_hvp_scalar_cuda_fn"


class _DevicePlan:
    """Device plans and optimizers of v0.1 (advanced names): made only by the device
    helpers, which raise while the backend is not built."""

    def __init__(self, *args, **kwargs):
        raise unavailable_target(self._device, type(self).__name__)


class TensorCudaExecutionPlan(_DevicePlan):
    _device = "cuda"


class TensorMlxExecutionPlan(_DevicePlan):
    _device = "mlx"


class TensorCudaAdamOptimizer(_DevicePlan):
    _device = "cuda"


class TensorMlxAdamOptimizer(_DevicePlan):
    _device = "mlx"


def _on_device(device: str, what: str):
    if not built_targets()[device]:
        raise unavailable_target(device, what)
    return device


def _device_ordinal(device: str, ordinal) -> str:
    return device if device == "mlx" else f"cuda:{int(ordinal)}"


# ---- the helper functions --------------------------------------------------------------------

def tensor_jit_fn(function, input_specs):
    _check_callable(function, "tensor_jit_fn")
    return TensorJitFunction(function, parse_specs(input_specs, "tensor_jit_fn"))


def tensor_value_and_grad_fn(function, input_specs):
    _check_callable(function, "tensor_value_and_grad_fn")
    return TensorValueAndGradFunction(function, parse_specs(input_specs, "tensor_value_and_grad_fn"))


def tensor_grad_scalar_fn(function, input_specs):
    _check_callable(function, "tensor_grad_scalar_fn")
    return TensorGradScalarFunction(function, parse_specs(input_specs, "tensor_grad_scalar_fn"))


def tensor_vjp_fn(function, input_specs):
    _check_callable(function, "tensor_vjp_fn")
    return TensorVjpFunction(function, parse_specs(input_specs, "tensor_vjp_fn"))


def tensor_jvp_fn(function, input_specs):
    _check_callable(function, "tensor_jvp_fn")
    return TensorJvpFunction(function, parse_specs(input_specs, "tensor_jvp_fn"))


def tensor_jacobian_fn(function, input_specs, input_name):
    _check_callable(function, "tensor_jacobian_fn")
    return TensorJacobianFunction(function, parse_specs(input_specs, "tensor_jacobian_fn"), input_name)


def tensor_hessian_scalar_fn(function, input_specs, input_name):
    _check_callable(function, "tensor_hessian_scalar_fn")
    return TensorHessianScalarFunction(function, parse_specs(input_specs, "tensor_hessian_scalar_fn"), input_name)


def tensor_hvp_scalar_fn(function, input_specs, input_name):
    _check_callable(function, "tensor_hvp_scalar_fn")
    return TensorHvpScalarFunction(function, parse_specs(input_specs, "tensor_hvp_scalar_fn"), input_name)


def tensor_vmap_fn(function, input_specs, batch_size, in_axes=None, out_axis=0):
    _check_callable(function, "tensor_vmap_fn")
    return TensorVmapFunction(function, parse_specs(input_specs, "tensor_vmap_fn"), batch_size, in_axes, out_axis)


def tensor_vmap_jvp_fn(function, input_specs, batch_size, in_axes=None, out_axis=0):
    _check_callable(function, "tensor_vmap_jvp_fn")
    return TensorVmapJvpFunction(function, parse_specs(input_specs, "tensor_vmap_jvp_fn"), batch_size, in_axes, out_axis)


def tensor_vmap_vjp_fn(function, input_specs, batch_size, in_axes=None, out_axis=0):
    _check_callable(function, "tensor_vmap_vjp_fn")
    return TensorVmapVjpFunction(function, parse_specs(input_specs, "tensor_vmap_vjp_fn"), batch_size, in_axes, out_axis)


def tensor_vmap_hvp_scalar_fn(function, input_specs, batch_size, input_name, in_axes=None, out_axis=0):
    _check_callable(function, "tensor_vmap_hvp_scalar_fn")
    return TensorVmapHvpScalarFunction(function, parse_specs(input_specs, "tensor_vmap_hvp_scalar_fn"), batch_size,
                                       input_name, in_axes, out_axis)


def tensor_jit_batch_fn(function, input_names, in_axes=None, batch_axis=0, max_specializations=4):
    return TensorBatchJitFunction(function, input_names, in_axes, batch_axis, max_specializations)


def tensor_value_and_grad_batch_fn(function, input_names, in_axes=None, batch_axis=0, max_specializations=4):
    return TensorBatchValueAndGradFunction(function, input_names, in_axes, batch_axis, max_specializations)


def tensor_cond_fn(on_true, on_false, input_specs):
    return TensorCondFunction(on_true, on_false, parse_specs(input_specs, "tensor_cond_fn"))


def tensor_cond_jvp_fn(on_true, on_false, input_specs):
    return TensorCondJvpFunction(on_true, on_false, parse_specs(input_specs, "tensor_cond_jvp_fn"))


def tensor_cond_value_and_grad_fn(on_true, on_false, input_specs):
    return TensorCondValueAndGradFunction(on_true, on_false, parse_specs(input_specs, "tensor_cond_value_and_grad_fn"))


# Device-specific helpers: the CPU helper's object compiled for the device once it exists.

def tensor_jit_cuda_fn(function, input_specs, device_ordinal=0):
    device = _device_ordinal(_on_device("cuda", "tensor_jit_cuda_fn"), device_ordinal)
    return TensorJitFunction(function, parse_specs(input_specs, "tensor_jit_cuda_fn"), device)


def tensor_jit_batch_cuda_fn(function, input_names, in_axes=None, batch_axis=0, max_specializations=4,
                             device_ordinal=0):
    device = _device_ordinal(_on_device("cuda", "tensor_jit_batch_cuda_fn"), device_ordinal)
    return TensorBatchCudaJitFunction(function, input_names, in_axes, batch_axis, max_specializations, device)


def tensor_value_and_grad_cuda_fn(function, input_specs, parameter_names, device_ordinal=0):
    device = _device_ordinal(_on_device("cuda", "tensor_value_and_grad_cuda_fn"), device_ordinal)
    return TensorCudaValueAndGradFunction(function, parse_specs(input_specs, "tensor_value_and_grad_cuda_fn"), device,
                                          parameter_names)


def tensor_value_and_grad_mlx_fn(function, input_specs, parameter_names):
    device = _on_device("mlx", "tensor_value_and_grad_mlx_fn")
    return TensorMlxValueAndGradFunction(function, parse_specs(input_specs, "tensor_value_and_grad_mlx_fn"), device,
                                         parameter_names)


def tensor_value_and_grad_batch_cuda_fn(function, input_names, parameter_names, in_axes=None, batch_axis=0,
                                        max_specializations=4, device_ordinal=0):
    device = _device_ordinal(_on_device("cuda", "tensor_value_and_grad_batch_cuda_fn"), device_ordinal)
    return TensorBatchCudaValueAndGradFunction(function, input_names, in_axes, batch_axis, max_specializations, device,
                                               parameter_names)


def tensor_value_and_grad_batch_mlx_fn(function, input_names, parameter_names, in_axes=None, batch_axis=0,
                                       max_specializations=4):
    device = _on_device("mlx", "tensor_value_and_grad_batch_mlx_fn")
    return TensorBatchMlxValueAndGradFunction(function, input_names, in_axes, batch_axis, max_specializations, device,
                                              parameter_names)


def tensor_value_and_grad_data_parallel_cuda_fn(*args, **kwargs):
    """v0.1: (function, input_specs, parameter_names, mapped_input_names, device_ordinals,
    reduction="mean"). Needs CUDA and multi-GPU data parallelism."""
    _on_device("cuda", "tensor_value_and_grad_data_parallel_cuda_fn")
    raise unavailable_target("cuda", "tensor_value_and_grad_data_parallel_cuda_fn (multi-GPU data parallelism)")


def _vmap_device_helper(cls, device, what):
    def helper(function, input_specs, batch_size, *rest, **kwargs):
        dev = _on_device(device, what)
        ordinal = kwargs.pop("device_ordinal", 0)
        return cls(function, parse_specs(input_specs, what), batch_size, *rest,
                   device=_device_ordinal(dev, ordinal), **kwargs)
    helper.__name__ = what
    return helper


tensor_vmap_cuda_fn = _vmap_device_helper(TensorVmapCudaFunction, "cuda", "tensor_vmap_cuda_fn")
tensor_vmap_mlx_fn = _vmap_device_helper(TensorVmapMlxFunction, "mlx", "tensor_vmap_mlx_fn")
tensor_vmap_jvp_cuda_fn = _vmap_device_helper(TensorVmapCudaJvpFunction, "cuda", "tensor_vmap_jvp_cuda_fn")
tensor_vmap_jvp_mlx_fn = _vmap_device_helper(TensorVmapMlxJvpFunction, "mlx", "tensor_vmap_jvp_mlx_fn")
tensor_vmap_vjp_cuda_fn = _vmap_device_helper(TensorVmapCudaVjpFunction, "cuda", "tensor_vmap_vjp_cuda_fn")
tensor_vmap_vjp_mlx_fn = _vmap_device_helper(TensorVmapMlxVjpFunction, "mlx", "tensor_vmap_vjp_mlx_fn")
tensor_vmap_hvp_scalar_cuda_fn = _vmap_device_helper(TensorVmapCudaHvpScalarFunction, "cuda",
                                                     "tensor_vmap_hvp_scalar_cuda_fn")


def _device_optimizer(device, what):
    def helper(*args, **kwargs):
        _on_device(device, what)
        raise unavailable_target(device, f"{what} (use qb.optim.Trainer(..., device={device!r}))")
    helper.__name__ = what
    return helper


cuda_adam_loss_optimizer = _device_optimizer("cuda", "cuda_adam_loss_optimizer")
cuda_adam_optimizer = _device_optimizer("cuda", "cuda_adam_optimizer")
cuda_adam_step = _device_optimizer("cuda", "cuda_adam_step")
cuda_adam_vjp_optimizer = _device_optimizer("cuda", "cuda_adam_vjp_optimizer")
mlx_adam_loss_optimizer = _device_optimizer("mlx", "mlx_adam_loss_optimizer")


# ---- trace_tensor: a traced program as v0.1's TensorTraceResult ----------------------------

class TensorTraceGraph:
    """v0.1's persistent trace graph: named inputs (more can be added) and the traced
    values built on them. A value is a function of all the graph's inputs, so values traced
    at different times combine (a loss built on a traced u_xx and an input)."""

    def __init__(self, specs=()):
        self.specs: List[tuple] = list(specs)
        self._values: List["TraceTensorValue"] = []

    def _index(self, name) -> Optional[int]:
        for i, s in enumerate(self.specs):
            if s[0] == name:
                return i
        return None

    def input(self, name: str, shape=None, dtype=None) -> "TraceTensorValue":
        """The input `name` (a new one when shape is given)."""
        i = self._index(name)
        if shape is not None:
            if i is not None:
                raise ValueError(f"TensorTraceGraph.input: input {name!r} already exists")
            spec = parse_specs([(name, list(shape), dtype or _core.float64)], "TensorTraceGraph.input")[0]
            self.specs.append(spec)
            i = len(self.specs) - 1
        elif i is None:
            raise ValueError(f"TensorTraceGraph.input: no input named {name!r} (inputs: {self.input_names()})")
        return TraceTensorValue(self, lambda args, i=i: args[i], {i})

    def input_names(self) -> List[str]:
        return [s[0] for s in self.specs]

    def _value(self, node_id) -> "TraceTensorValue":
        if not isinstance(node_id, int) or not 0 <= node_id < len(self._values):
            raise ValueError(f"output node {node_id} does not exist")
        return self._values[node_id]

    def lower_text(self) -> str:
        """The program of the latest value (the graph's inputs and everything traced so far)."""
        return self._values[-1]._program().lower_text() if self._values else ""

    def evaluate(self, output_node_id, inputs):
        return self._value(output_node_id).compile_cpu().evaluate(inputs)

    def evaluate_vjp(self, output_node_id, inputs, output_cotangent):
        return self._value(output_node_id).compile_cpu().evaluate_vjp(inputs, output_cotangent)[1]

    def evaluate_value_and_vjp(self, output_node_id, inputs, output_cotangent):
        return self._value(output_node_id).compile_cpu().evaluate_value_and_vjp(inputs, output_cotangent)

    def evaluate_jvp(self, output_node_id, inputs, input_tangents):
        return self._value(output_node_id).compile_cpu().evaluate_jvp(inputs, input_tangents)

    def compile_cpu(self, output_node_id):
        return self._value(output_node_id).compile_cpu()

    def compile_cuda(self, output_node_id, device_ordinal: int = 0):
        return self._value(output_node_id).compile_cuda(device_ordinal)

    def compile_mlx(self, output_node_id):
        return self._value(output_node_id).compile_mlx()

    def hessian_scalar(self, output_node_id, input_name, inputs) -> List[List[float]]:
        p = self._value(output_node_id)._program()
        return TensorHessianScalarFunction(p._fn, p._specs, input_name)(inputs)

    def hvp_scalar(self, output_node_id, input_name, inputs, input_tangent):
        p = self._value(output_node_id)._program()
        return TensorHvpScalarFunction(p._fn, p._specs, input_name)(inputs, input_tangent)

    def __repr__(self):
        return f"TensorTraceGraph(inputs={self.input_names()})"


class TraceTensorValue:
    """A traced value of a TensorTraceGraph (v0.1's TraceTensor outside a transform): array
    arithmetic, comparisons, indexing and methods record more values; symbolic_jvp /
    symbolic_vjp differentiate; compile_cpu gives a plan over the inputs it reads."""

    def __init__(self, graph: TensorTraceGraph, fn, reads):
        self._graph, self._fn = graph, fn      # fn(args): args indexed like graph.specs
        self._reads = frozenset(reads)         # the input positions fn reads
        self._specs = [graph.specs[i] for i in sorted(self._reads)]
        self.node_id = len(graph._values)
        graph._values.append(self)
        program = self._program()
        self.shape, self.dtype = tuple(program.output_shape), program.output_dtype

    @property
    def graph(self) -> TensorTraceGraph:
        return self._graph

    def _on(self, positions):
        """fn as a function of the arrays at `positions` alone (other inputs unread)."""
        fn, n = self._fn, len(self._graph.specs)

        def at(*xs):
            args = [None] * n
            for i, x in zip(positions, xs):
                args[i] = x
            return fn(args)
        return at

    def _program(self) -> Program:
        return Program(self._on(sorted(self._reads)), self._specs, "compile_cpu")

    def _binary(self, other, op, reverse=False):
        operands = (other, self) if reverse else (self, other)
        return TraceTensorValue.lift(op, *operands)

    def __add__(self, o): return self._binary(o, lambda a, b: a + b)  # noqa: E704
    def __radd__(self, o): return self._binary(o, lambda a, b: a + b, True)  # noqa: E704
    def __sub__(self, o): return self._binary(o, lambda a, b: a - b)  # noqa: E704
    def __rsub__(self, o): return self._binary(o, lambda a, b: a - b, True)  # noqa: E704
    def __mul__(self, o): return self._binary(o, lambda a, b: a * b)  # noqa: E704
    def __rmul__(self, o): return self._binary(o, lambda a, b: a * b, True)  # noqa: E704
    def __truediv__(self, o): return self._binary(o, lambda a, b: a / b)  # noqa: E704
    def __rtruediv__(self, o): return self._binary(o, lambda a, b: a / b, True)  # noqa: E704
    def __pow__(self, o): return self._binary(o, lambda a, b: a ** b)  # noqa: E704
    def __rpow__(self, o): return self._binary(o, lambda a, b: a ** b, True)  # noqa: E704
    def __matmul__(self, o): return self._binary(o, lambda a, b: a @ b)  # noqa: E704
    def __rmatmul__(self, o): return self._binary(o, lambda a, b: a @ b, True)  # noqa: E704
    def __lt__(self, o): return self._binary(o, lambda a, b: a < b)  # noqa: E704
    def __le__(self, o): return self._binary(o, lambda a, b: a <= b)  # noqa: E704
    def __gt__(self, o): return self._binary(o, lambda a, b: a > b)  # noqa: E704
    def __ge__(self, o): return self._binary(o, lambda a, b: a >= b)  # noqa: E704
    def __neg__(self): return TraceTensorValue.lift(lambda a: -a, self)  # noqa: E704
    def __abs__(self): return TraceTensorValue.lift(abs, self)  # noqa: E704
    def __invert__(self): return TraceTensorValue.lift(lambda a: ~a, self)  # noqa: E704
    def __getitem__(self, idx): return TraceTensorValue.lift(lambda a: a[idx], self)  # noqa: E704

    @classmethod
    def lift(cls, function, *operands):
        """function applied to operands of which some are graph values (in lists or tuples
        too): a new graph value reading what they read."""
        values = _flat_values(operands)
        graph = values[0]._graph
        if any(v._graph is not graph for v in values):
            raise ValueError("trace values must belong to the same trace graph")
        reads = frozenset().union(*(v._reads for v in values))
        return cls(graph, lambda args: function(*_substitute(operands, args)), reads)

    def powi(self, n: int) -> "TraceTensorValue":
        return self ** int(n)

    def gt(self, other) -> "TraceTensorValue":
        return TraceTensorValue.lift(lambda a, b: (a > b).astype(a.dtype), self, other)

    def where_select(self, on_true, on_false) -> "TraceTensorValue":
        return TraceTensorValue.lift(_core.where, self, on_true, on_false)

    def __getattr__(self, name):
        # Array methods (sum, mean, tanh, reshape, ...) record a new value.
        if name.startswith("_") or not hasattr(_core.Array, name):
            raise AttributeError(f"TraceTensor has no attribute {name!r}")

        def method(*args, **kwargs):
            return TraceTensorValue.lift(lambda a, *rest: getattr(a, name)(*rest, **kwargs), self, *args)
        return method

    def __bool__(self):
        from .errors import TracerError
        raise TracerError("TraceTensor cannot drive Python control flow; use quabla.where for elementwise selection "
                          "or an explicit control-flow primitive")

    def symbolic_jvp(self, input_name: str) -> "TensorTraceResult":
        """The coordinate JVP (a tangent of ones for input_name, zeros for the others), on
        the same graph."""
        from ._ad import jvp
        graph = self._graph
        k = graph._index(input_name)
        if k is None:
            raise ValueError(f"symbolic_jvp: no input named {input_name!r} (inputs: {graph.input_names()})")
        if not _is_float(graph.specs[k][2]):
            raise ValueError(f"symbolic_jvp: input {input_name!r} is {graph.specs[k][2].name}; only float inputs "
                             f"carry tangents")
        positions = sorted(self._reads)
        at = self._on(positions)

        def tangent(args):
            primals = tuple(args[i] for i in positions)
            ts = tuple(_core.ones_like(a) if i == k else _core.zeros_like(a) for i, a in zip(positions, primals))
            return jvp(at, primals, ts)[1]
        return TensorTraceResult(graph, TraceTensorValue(graph, tangent, self._reads))

    def symbolic_vjp(self, cotangent_name: str) -> Dict[str, "TensorTraceResult"]:
        """One gradient per float input of the graph (keyed by name, sorted), on the same
        graph, which gains the input `cotangent_name` (this value's shape and dtype)."""
        from ._ad import vjp
        graph = self._graph
        names = [(i, s) for i, s in enumerate(graph.specs) if _is_float(s[2])]
        graph.input(cotangent_name, list(self.shape), self.dtype)
        k = graph._index(cotangent_name)
        positions = sorted(self._reads)
        at = self._on(positions)
        out = {}
        for i, spec in names:
            def gradient(args, i=i, spec=spec):
                if i not in positions:  # an input this value never reads: a zero gradient
                    return _core.zeros(spec[1], dtype=spec[2])
                _, pullback = vjp(at, *(args[j] for j in positions))
                return pullback(args[k])[positions.index(i)]
            reads = self._reads | {k} if i in positions else ()
            out[spec[0]] = TensorTraceResult(graph, TraceTensorValue(graph, gradient, reads))
        return dict(sorted(out.items()))

    def compile_cpu(self) -> "TensorCpuExecutionPlan":
        return TensorCpuExecutionPlan(self._program())

    def compile_mlx(self):
        raise unavailable_target("mlx", "compile_mlx")

    def compile_cuda(self, device_ordinal: int = 0):
        raise unavailable_target("cuda", "compile_cuda")

    def __repr__(self):
        return f"TraceTensor(node_id={self.node_id}, shape={list(self.shape)}, dtype={self.dtype.name})"


def _flat_values(operands):
    out = []
    for o in operands:
        if isinstance(o, TraceTensorValue):
            out.append(o)
        elif isinstance(o, (list, tuple)):
            out.extend(_flat_values(o))
    return out


def _substitute(operands, args):
    def sub(o):
        if isinstance(o, TraceTensorValue):
            return o._fn(args)
        if isinstance(o, (list, tuple)):
            return type(o)(sub(x) for x in o)
        return o
    return [sub(o) for o in operands]


def has_trace_values(operands) -> bool:
    return bool(_flat_values(operands))


class TensorCpuExecutionPlan:
    """A frozen CPU plan of a traced program: evaluate with dicts keyed by input name."""

    def __init__(self, program: Program):
        self._program = program
        self._exe = program.compile("cpu")

    @property
    def node_count(self) -> int:
        return self._exe.node_count

    @property
    def output_shape(self) -> List[int]:
        return self._program.output_shape

    def lower_text(self) -> str:
        return self._program.lower_text()

    def evaluate(self, inputs):
        return self._exe(inputs)

    __call__ = evaluate

    def evaluate_vjp(self, inputs, output_cotangent):
        """(output, {name: gradient}) for this cotangent."""
        return TensorVjpFunction(self._program._fn, self._program._specs)(inputs, output_cotangent)

    def evaluate_value_and_vjp(self, inputs, output_cotangent):
        return self.evaluate_vjp(inputs, output_cotangent)

    def evaluate_jvp(self, inputs, tangents):
        return TensorJvpFunction(self._program._fn, self._program._specs)(inputs, tangents)

    def __repr__(self):
        return f"TensorCpuExecutionPlan(output_shape={self.output_shape})"


class TensorTraceResult:
    """trace_tensor's result: its graph and output; symbolic_jvp / symbolic_vjp give more
    results on the same graph, compile_cpu a plan."""

    def __init__(self, graph: TensorTraceGraph, output: TraceTensorValue):
        self.graph, self.output = graph, output

    @property
    def output_shape(self) -> List[int]:
        return list(self.output.shape)

    def symbolic_jvp(self, input_name: str) -> "TensorTraceResult":
        return self.output.symbolic_jvp(input_name)

    def symbolic_vjp(self, cotangent_name: str) -> Dict[str, "TensorTraceResult"]:
        return self.output.symbolic_vjp(cotangent_name)

    def compile_cpu(self) -> TensorCpuExecutionPlan:
        return self.output.compile_cpu()

    def compile_mlx(self):
        return self.output.compile_mlx()

    def compile_cuda(self, device_ordinal: int = 0):
        return self.output.compile_cuda(device_ordinal)

    def __repr__(self):
        return f"TensorTraceResult(output_node_id={self.output.node_id}, output_shape={self.output_shape})"


def trace_tensor(function, input_specs):
    """Traces function with one array per spec; the result lives on a TensorTraceGraph."""
    _check_callable(function, "trace_tensor")
    specs = parse_specs(input_specs, "trace_tensor")
    trace_output(function, specs, "trace_tensor", require_traced=True)
    graph = TensorTraceGraph(specs)
    n = len(specs)
    return TensorTraceResult(graph, TraceTensorValue(graph, lambda args: function(*args[:n]), range(n)))


# ---- region builders (v0.1 control flow) -----------------------------------------------------

def tensor_cond(predicate, on_true, on_false, operands):
    from ._control import cond
    return cond(predicate, on_true, on_false, *list(operands))


def tensor_fori_loop(lower, upper, body, init):
    """Unrolled: body(i, carry) with a Python int i, for i in range(lower, upper)."""
    carry = init
    for i in range(int(lower), int(upper)):
        carry = body(i, carry)
    return carry


def tensor_fori_loop_region(lower, upper, body, init, operands):
    """One traced body: body(i, carry, *operands)."""
    from ._control import fori_loop
    ops = list(operands)
    return fori_loop(lower, upper, lambda i, c: body(i, c, *ops), init)


def tensor_scan(length, body, init):
    """Unrolled: body(i, carry) -> (carry, output); returns (carry, outputs stacked)."""
    if int(length) <= 0:
        raise ValueError("tensor_scan: scan length must be positive")
    carry, outs = init, []
    for i in range(int(length)):
        carry, y = body(i, carry)
        outs.append(y)
    return carry, _core.stack(outs)


def tensor_scan_region(lower, upper, body, init, operands):
    """One traced body: body(index, carry, *operands) -> (carry, output), index from lower
    to upper - 1 (qb.scan's f(carry, i) order differs: this keeps v0.1's)."""
    from ._control import _scan
    lo, hi = int(lower), int(upper)
    if hi <= lo:
        raise ValueError(f"tensor_scan_region: requires upper > lower, got {lower} and {upper}")
    ops = list(operands)
    return _scan(lambda c, i: body(i + lo, c, *ops), init, None, hi - lo, False, (), pass_index=True)


def sum_gradients(gradient_sets, parameter_names=None):
    """The key-wise sum of gradient dicts (of the named parameters, or of the first dict's keys)."""
    sets = list(gradient_sets)
    if not sets:
        raise ValueError("sum_gradients requires at least one gradient dictionary")
    if parameter_names is None:
        names = list(sets[0])
        if any(set(s) != set(names) for s in sets):
            raise ValueError("sum_gradients: gradient dictionaries must have identical keys")
    else:
        names = list(parameter_names)
    out = {}
    for n in names:
        total = None
        for s in sets:
            if n not in s:
                raise ValueError(f'sum_gradients: missing gradient for "{n}"')
            total = s[n] if total is None else total + s[n]
        out[n] = total
    return out


# ---- deprecation: which names warn, and with which replacement --------------------------------

DEPRECATED = {
    "Adam": "qb.optim.Adam, which keeps the .step(params, grads) method",
    "quabla": "the package itself (import quabla)",
    "TensorTraceGraph": "composition of transforms; qb.Compiler().trace(...) Program for inspection",
    "TensorTraceResult": "qb.Compiler().trace(...) (a Program)",
    "trace_tensor": "qb.jit(f).lower(...) or qb.Compiler().trace(f, specs)",
    "tensor_jit_fn": "qb.jit(f)",
    "tensor_jit_cuda_fn": 'qb.jit(f, device="cuda")',
    "tensor_jit_batch_fn": "qb.jit(f, max_traces=4)",
    "tensor_jit_batch_cuda_fn": 'qb.jit(f, device="cuda", max_traces=4)',
    "tensor_value_and_grad_fn": "qb.value_and_grad(f, argnums)",
    "tensor_value_and_grad_cuda_fn": 'qb.jit(qb.value_and_grad(f, argnums), device="cuda")',
    "tensor_value_and_grad_mlx_fn": 'qb.jit(qb.value_and_grad(f, argnums), device="mlx")',
    "tensor_value_and_grad_batch_fn": "qb.jit(qb.value_and_grad(f, argnums), max_traces=4)",
    "tensor_value_and_grad_batch_cuda_fn": 'qb.jit(qb.value_and_grad(f, argnums), device="cuda", max_traces=4)',
    "tensor_value_and_grad_batch_mlx_fn": 'qb.jit(qb.value_and_grad(f, argnums), device="mlx", max_traces=4)',
    "tensor_value_and_grad_data_parallel_cuda_fn": "qb.distributed data parallelism (a later release)",
    "tensor_grad_scalar_fn": "qb.grad(f, argnums=(0, ..., n-1))",
    "tensor_vjp_fn": "qb.vjp(f, *primals)",
    "tensor_jvp_fn": "qb.jvp(f, primals, tangents)",
    "tensor_jacobian_fn": "qb.jacobian(f, argnums=i)",
    "tensor_hessian_scalar_fn": "qb.hessian(f, argnums=i)",
    "tensor_hvp_scalar_fn": "qb.jvp(qb.grad(f), (x,), (v,))",
    "tensor_vmap_fn": "qb.vmap(f, in_axes, out_axes)",
    "tensor_vmap_cuda_fn": 'qb.jit(qb.vmap(f, in_axes, out_axes), device="cuda")',
    "tensor_vmap_mlx_fn": 'qb.jit(qb.vmap(f, in_axes, out_axes), device="mlx")',
    "tensor_vmap_jvp_fn": "qb.jvp(qb.vmap(f, ...), primals, tangents)",
    "tensor_vmap_jvp_cuda_fn": 'qb.jit(qb.jvp of qb.vmap(f), device="cuda")',
    "tensor_vmap_jvp_mlx_fn": 'qb.jit(qb.jvp of qb.vmap(f), device="mlx")',
    "tensor_vmap_vjp_fn": "qb.vjp(qb.vmap(f, ...), *primals)",
    "tensor_vmap_vjp_cuda_fn": 'qb.jit(qb.vjp of qb.vmap(f), device="cuda")',
    "tensor_vmap_vjp_mlx_fn": 'qb.jit(qb.vjp of qb.vmap(f), device="mlx")',
    "tensor_vmap_hvp_scalar_fn": "qb.jvp(qb.grad(lambda x: qb.sum(qb.vmap(f)(x))), (x,), (v,))",
    "tensor_vmap_hvp_scalar_cuda_fn": 'qb.jit(a vmapped HVP composition, device="cuda")',
    "tensor_cond": "qb.cond(pred, true_fun, false_fun, *operands)",
    "tensor_cond_fn": "a Python if on a concrete flag and qb.jit(branch)",
    "tensor_cond_jvp_fn": "a Python if and qb.jvp(branch, ...)",
    "tensor_cond_value_and_grad_fn": "a Python if and qb.value_and_grad(branch)",
    "tensor_fori_loop": "qb.fori_loop(lower, upper, body, init) (or a Python loop)",
    "tensor_fori_loop_region": "qb.fori_loop(lower, upper, body, init, operands=...)",
    "tensor_scan": "qb.scan(f, init, length=n) (or a Python loop)",
    "tensor_scan_region": "qb.scan(f, init, length=n, operands=...)",
    "sum_gradients": "qb.tree.map(operator.add, a, b)",
    "cuda_adam_loss_optimizer": 'qb.optim.Trainer(..., device="cuda")',
    "cuda_adam_optimizer": 'qb.optim.Trainer(..., device="cuda")',
    "cuda_adam_step": 'qb.optim.Trainer(..., device="cuda")',
    "cuda_adam_vjp_optimizer": 'qb.optim.Trainer(..., device="cuda")',
    "mlx_adam_loss_optimizer": 'qb.optim.Trainer(..., device="mlx")',
}
# Result classes of the helpers: their replacement is the helper's.
for _cls, _helper in (("TensorJitFunction", "tensor_jit_fn"), ("TensorValueAndGradFunction", "tensor_value_and_grad_fn"),
                      ("TensorGradScalarFunction", "tensor_grad_scalar_fn"), ("TensorVjpFunction", "tensor_vjp_fn"),
                      ("TensorJvpFunction", "tensor_jvp_fn"), ("TensorJacobianFunction", "tensor_jacobian_fn"),
                      ("TensorHessianScalarFunction", "tensor_hessian_scalar_fn"),
                      ("TensorHvpScalarFunction", "tensor_hvp_scalar_fn"), ("TensorVmapFunction", "tensor_vmap_fn"),
                      ("TensorVmapJvpFunction", "tensor_vmap_jvp_fn"), ("TensorVmapVjpFunction", "tensor_vmap_vjp_fn"),
                      ("TensorVmapHvpScalarFunction", "tensor_vmap_hvp_scalar_fn"),
                      ("TensorBatchJitFunction", "tensor_jit_batch_fn"),
                      ("TensorBatchValueAndGradFunction", "tensor_value_and_grad_batch_fn"),
                      ("TensorCondFunction", "tensor_cond_fn"), ("TensorCondJvpFunction", "tensor_cond_jvp_fn"),
                      ("TensorCondValueAndGradFunction", "tensor_cond_value_and_grad_fn"),
                      ("TensorCudaValueAndGradFunction", "tensor_value_and_grad_cuda_fn"),
                      ("TensorMlxValueAndGradFunction", "tensor_value_and_grad_mlx_fn"),
                      ("TensorBatchCudaJitFunction", "tensor_jit_batch_cuda_fn"),
                      ("TensorBatchCudaValueAndGradFunction", "tensor_value_and_grad_batch_cuda_fn"),
                      ("TensorBatchMlxValueAndGradFunction", "tensor_value_and_grad_batch_mlx_fn"),
                      ("TensorVmapCudaFunction", "tensor_vmap_cuda_fn"), ("TensorVmapMlxFunction", "tensor_vmap_mlx_fn"),
                      ("TensorVmapCudaJvpFunction", "tensor_vmap_jvp_cuda_fn"),
                      ("TensorVmapMlxJvpFunction", "tensor_vmap_jvp_mlx_fn"),
                      ("TensorVmapCudaVjpFunction", "tensor_vmap_vjp_cuda_fn"),
                      ("TensorVmapMlxVjpFunction", "tensor_vmap_vjp_mlx_fn"),
                      ("TensorVmapCudaHvpScalarFunction", "tensor_vmap_hvp_scalar_cuda_fn")):
    DEPRECATED[_cls] = f"the result of {DEPRECATED[_helper]}"

# The legacy 2D names: quabla.legacy.<name>, without a warning there.
LEGACY = ("CpuExecutionPlan", "GradFunction", "GradScalarFunction", "GradScalarTransform", "JacobianFunction",
          "JacobiansFunction", "JitFunction", "JitTransform", "JvpFunction", "Matrix", "TraceGraph", "TraceMatrix",
          "TraceResult", "ValueAndGradFunction", "VjpFunction", "grad_fn", "grad_scalar", "grad_scalar_fn",
          "jacobian_fn", "jacobians_fn", "jvp_fn", "value_and_grad_fn", "vjp_fn")

# Advanced names: kept, no warning.
ADVANCED = ("TensorCpuExecutionPlan", "TensorCudaAdamOptimizer", "TensorCudaExecutionPlan", "TensorMlxAdamOptimizer",
            "TensorMlxExecutionPlan")

_warned: set = set()


def migrated_names() -> List[str]:
    return sorted(set(DEPRECATED) | set(LEGACY))


def _resolve(name: str):
    if name == "Adam":
        from .optim import Adam
        return Adam
    if name == "quabla":
        import importlib
        return importlib.import_module("quabla.quabla")
    if name in LEGACY:
        from . import legacy
        return getattr(legacy, name)
    return globals()[name]


def _star_import(frame) -> bool:
    """Whether `frame` is running `from quabla import *` (which binds names silently):
    IMPORT_STAR up to Python 3.11, CALL_INTRINSIC_1 with INTRINSIC_IMPORT_STAR (2) after."""
    try:
        if frame.f_code.co_name == "_handle_fromlist":  # the import system resolving __all__
            return True
        code, i = frame.f_code.co_code, frame.f_lasti
        name = dis.opname[code[i]]
        return name == "IMPORT_STAR" or (name == "CALL_INTRINSIC_1" and code[i + 1] == 2)
    except (AttributeError, IndexError):
        return False


def deprecated(name: str):
    """Top-level access to a migrated v0.1 name: its object, with one DeprecationWarning
    per name and process (none under a star import)."""
    obj = _resolve(name)
    frame = sys._getframe(2)
    if name not in _warned and not _star_import(frame):
        _warned.add(name)
        replacement = DEPRECATED.get(name, f"quabla.legacy.{name}")
        warnings.warn(f"quabla.{name} is deprecated; use {replacement}. The old name remains available through 0.x.",
                      DeprecationWarning, stacklevel=3)
    return obj


# ---- v0.1's Tensor constructor and TensorView ------------------------------------------------

class _TensorType(type):
    """isinstance(x, qb.Tensor) holds for every qb array (Tensor is v0.1's name for it)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _core.Array)


class Tensor(metaclass=_TensorType):
    """v0.1's constructor: ``Tensor(shape, data, dtype=None)`` with flat row-major data
    (float64 by default; float32 rounds the data). It makes a ``qb`` array; ``qb.array`` and
    ``qb.asarray`` are the v0.2 spellings."""

    def __new__(cls, shape, data, dtype=None):
        if isinstance(shape, int) or not isinstance(shape, (list, tuple)) or \
                not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise TypeError(f"Tensor(shape, data): shape must be a list of non-negative ints, got {shape!r}")
        flat = list(data.tolist() if hasattr(data, "tolist") else data)
        if any(isinstance(v, (list, tuple)) for v in flat):
            raise TypeError("Tensor(shape, data): data must be a flat sequence of numbers (row-major)")
        n = _size(shape)
        if len(flat) != n:
            raise ValueError(f"Tensor(shape, data): shape {list(shape)} needs {n} values, got {len(flat)}")
        dtype = _core.float64 if dtype is None else dtype
        return _core.reshape(_core.asarray([float(v) if dtype in _FLOATS else v for v in flat], dtype=dtype),
                             tuple(shape))

    @staticmethod
    def zeros(shape, dtype=None):
        return _core.zeros(tuple(shape), dtype=dtype or _core.float64)

    @staticmethod
    def ones(shape, dtype=None):
        return _core.ones(tuple(shape), dtype=dtype or _core.float64)

    @staticmethod
    def full(shape, value, dtype=None):
        return _core.full(tuple(shape), value, dtype=dtype or _core.float64)

    @staticmethod
    def eye(rows, cols=None, dtype=None):
        return _core.eye(rows, cols, dtype=dtype or _core.float64)

    @staticmethod
    def arange(start, stop, step=1.0, dtype=None):
        return _core.arange(float(start), float(stop), float(step), dtype=dtype or _core.float64)

    @staticmethod
    def linspace(start, stop, num, dtype=None):
        return _core.linspace(start, stop, num, dtype=dtype or _core.float64)

    # v0.1's random numbers take plain int keys (64 bits: the two words of a qb.random key).
    # The streams are qb.random's (Threefry), not bit-for-bit v0.1's.
    @staticmethod
    def split_key(key: int, count: int = 2) -> List[int]:
        return [_key_int(k) for k in _random().split(_int_key(key), count)]

    @staticmethod
    def fold_in_key(key: int, data: int) -> int:
        return _key_int(_random().fold_in(_int_key(key), data))

    @staticmethod
    def random_normal(shape, key: int, mean: float = 0.0, stddev: float = 1.0, dtype=None):
        return mean + stddev * _random().normal(_int_key(key), tuple(shape), dtype=dtype or _core.float64)

    @staticmethod
    def random_uniform(shape, key: int, minval: float = 0.0, maxval: float = 1.0, dtype=None):
        return _random().uniform(_int_key(key), tuple(shape), dtype=dtype or _core.float64, minval=minval,
                                 maxval=maxval)

    @staticmethod
    def glorot_normal(shape, key: int, dtype=None):
        return _random().glorot_normal(_int_key(key), tuple(shape), dtype=dtype or _core.float64)


def _random():
    from . import random
    return random


def _int_key(key):
    r = _random()
    if isinstance(key, r.Key):
        return key
    if isinstance(key, bool) or not isinstance(key, int):
        raise TypeError(f"a v0.1 random key is an int, got {type(key).__name__}")
    return r.Key((key >> 32, key))


def _key_int(k) -> int:
    hi, lo = k.words
    return (hi << 32) | lo


class TensorView:
    """A read-only strided view of an array along one axis (``x.slice(axis, start, length,
    step=1)``): shape, strides and offset in elements; ``to_tensor()`` copies it out."""

    def __init__(self, base, axis, start, length, step=1):
        base_shape = tuple(base.shape)
        if not base_shape:
            raise ValueError("slice: a rank-0 array has no axis to slice")
        if not isinstance(axis, int) or not -len(base_shape) <= axis < len(base_shape):
            raise ValueError(f"slice: axis {axis!r} is out of range for shape {list(base_shape)}")
        axis %= len(base_shape)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, length, step)) or step < 1 or \
                start < 0 or length < 0 or (length and start + (length - 1) * step >= base_shape[axis]):
            raise ValueError(f"slice: start={start}, length={length}, step={step} do not fit axis {axis} of size "
                             f"{base_shape[axis]}")
        self._base, self._axis, self._start, self._length, self._step = base, axis, start, length, step
        self.shape = base_shape[:axis] + (length,) + base_shape[axis + 1:]
        row = [1] * len(base_shape)
        for i in range(len(base_shape) - 2, -1, -1):
            row[i] = row[i + 1] * base_shape[i + 1]
        self.strides = tuple(r * (step if i == axis else 1) for i, r in enumerate(row))
        self.offset = start * row[axis]
        self.ndim = len(self.shape)

    def slice(self, axis, start, length, step=1) -> "TensorView":
        return TensorView(self.to_tensor(), axis, start, length, step)

    def to_tensor(self):
        idx = [slice(None)] * len(self._base.shape)
        stop = self._start + (self._length - 1) * self._step + 1 if self._length else self._start
        idx[self._axis] = slice(self._start, stop, self._step)
        return self._base[tuple(idx)]

    def to_flat_list(self) -> list:
        return _core.ravel(self.to_tensor()).tolist()

    def __repr__(self):
        return f"TensorView(shape={list(self.shape)}, strides={list(self.strides)}, offset={self.offset})"


def _slice(self, axis, start, length_or_stop, step=1):
    """v0.1: an eager Tensor.slice(axis, start, length, step=1) is a TensorView; a traced
    TraceTensor.slice(axis, start, stop) is a traced array."""
    if self._is_tracer:
        idx = [slice(None)] * self.ndim
        idx[axis] = slice(start, length_or_stop, step)
        return self[tuple(idx)]
    return TensorView(self, axis, start, length_or_stop, step)


def install_array_methods():
    """v0.1's array methods that v0.2 keeps: to_flat_list(), slice(), gt() (a 0/1 mask of
    the operand's dtype), powi(n) and where_select(on_true, on_false)."""
    _core.Array.to_flat_list = lambda self: _core.ravel(self).tolist()
    _core.Array.slice = _slice
    _core.Array.gt = lambda self, other: (self > other).astype(self.dtype)
    _core.Array.powi = lambda self, n: self ** int(n)
    _core.Array.where_select = lambda self, on_true, on_false: _core.where(self, on_true, on_false)
