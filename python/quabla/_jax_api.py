"""JAX's top-level helpers that are not numerics (jax.X): custom_gradient, linear_transpose,
closure_convert, clear_caches, device and process queries, named_call/named_scope,
ensure_compile_time_eval, typeof, print_environment_info."""
from __future__ import annotations

import contextlib
import sys

from . import _core
from ._package import qb as _qb
from ._numpy_breadth import _FLOATS, _arr, _dtype

__all__ = ["clear_caches", "custom_gradient", "linear_transpose", "closure_convert", "default_backend", "device_count",
           "local_device_count", "local_devices", "process_count", "process_index", "host_count", "host_id",
           "named_call", "named_scope", "ensure_compile_time_eval", "typeof", "print_environment_info"]


def clear_caches():
    """Drops every compiled program (jax.clear_caches): the traces of each qb.jit function (the
    next call traces again), the programs eager device operations compiled, and the memory
    blocks Quabla keeps for reuse."""
    import gc
    from . import _device_eager
    from ._jit import JittedFunction
    for obj in gc.get_objects():
        if isinstance(obj, JittedFunction):
            with obj._lock:
                for compiled in obj._cache.values():
                    compiled._alive = False
                obj._cache.clear()
                obj._fast = {}
    _device_eager._cache.clear()
    _core.release_cached_buffers()


def custom_gradient(fun):
    """fun with the reverse-mode derivative it defines itself: fun(*args) returns (value,
    vjp) where vjp(cotangent) gives one cotangent per argument (a tuple; a single value is
    accepted for a function of one argument), as jax.custom_gradient.

    Built on qb.custom_vjp. Quabla's residuals are arrays, not functions, so the backward pass
    calls fun on the saved arguments again to obtain vjp (the forward work is repeated)."""
    if not callable(fun):
        raise TypeError(f"custom_gradient: expected a function, got {type(fun).__name__}")
    name = getattr(fun, "__name__", "function")

    def pair(args):
        out = fun(*args)
        if not (isinstance(out, (tuple, list)) and len(out) == 2 and callable(out[1])):
            raise TypeError(f"custom_gradient({name}): the function must return a pair (value, vjp) with vjp a "
                            f"function of the output cotangent, got {type(out).__name__}")
        return out

    def primal(*args):
        return pair(args)[0]

    def fwd(*args):
        return pair(args)[0], args

    def bwd(args, g):
        cts = pair(args)[1](g)
        if not isinstance(cts, (tuple, list)):
            if len(args) != 1:
                raise TypeError(f"custom_gradient({name}): vjp must return a tuple of {len(args)} cotangents (one "
                                f"per argument), got {type(cts).__name__}")
            cts = (cts,)
        if len(cts) != len(args):
            raise TypeError(f"custom_gradient({name}): vjp returned {len(cts)} cotangents for {len(args)} "
                            f"arguments; return one per argument")
        return tuple(cts)

    primal.__name__ = primal.__qualname__ = name
    wrapped = _qb.custom_vjp(primal)
    wrapped.defvjp(fwd, bwd)
    return wrapped


def _spec_of(leaf, name):
    from ._jit import ShapeDtype
    if isinstance(leaf, (_core.Array, ShapeDtype)):
        return tuple(leaf.shape), leaf.dtype
    if isinstance(leaf, (bool, int, float)):
        return (), _qb.asarray(leaf).dtype
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        return tuple(leaf.shape), _dtype(leaf.dtype)
    raise TypeError(f"{name}: primals must be arrays, Python numbers or qb.ShapeDtype, got {type(leaf).__name__}")


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function fun (jax.linear_transpose): a function of one
    output cotangent (fun's output structure) returning the tuple of input cotangents, one per
    primal. primals only give shapes and dtypes (arrays or qb.ShapeDtype, float dtypes).

    Computed as the VJP of fun at zeros; fun is assumed linear (not checked: for an affine or
    nonlinear function this is the transpose of its derivative at zero)."""
    if not callable(fun):
        raise TypeError(f"linear_transpose: expected a function, got {type(fun).__name__}")
    if reduce_axes:
        raise NotImplementedError("linear_transpose: reduce_axes is not supported (JAX has removed it)")
    from . import tree as _tree
    leaves, in_def = _tree.flatten(primals)
    specs = [_spec_of(leaf, "linear_transpose") for leaf in leaves]
    for shape, dtype in specs:
        if dtype not in _FLOATS:
            raise TypeError(f"linear_transpose: primals must have float dtypes (a transpose maps cotangents of "
                            f"floats), got {dtype.name}")

    def transposed(out_cotangent):
        zeros = _tree.unflatten(in_def, [_qb.zeros(shape, dtype=dtype) for shape, dtype in specs])
        out, vjp_fn = _qb.vjp(fun, *zeros)
        out_leaves, out_def = _tree.flatten(out)
        ct_leaves, ct_def = _tree.flatten(out_cotangent)
        if ct_def != out_def:
            raise TypeError(f"linear_transpose: the cotangent has structure {ct_def}, but fun returns {out_def}")
        cts = []
        for o, c in zip(out_leaves, ct_leaves):
            c = _arr(c)
            if tuple(c.shape) != tuple(o.shape):
                raise TypeError(f"linear_transpose: a cotangent of shape {tuple(c.shape)} for an output of shape "
                                f"{tuple(o.shape)}; cotangents have the shapes of fun's outputs")
            cts.append(c.astype(o.dtype))
        return vjp_fn(_tree.unflatten(out_def, cts))
    return transposed


def closure_convert(fun, *example_args):
    """(converted, consts) as jax.closure_convert: converted(*args, *consts) computes
    fun(*args), with the values fun closes over that belong to an enclosing transform (the
    tracers of a grad, vmap or jit being traced) hoisted out as the explicit arguments consts,
    so that rules such as custom_vjp's can differentiate with respect to them. Concrete
    closed-over arrays stay constants: eagerly consts is [] and converted is fun. args must
    have the structure, shapes and dtypes of example_args."""
    if not callable(fun):
        raise TypeError(f"closure_convert: expected a function, got {type(fun).__name__}")
    from . import tree as _tree
    from ._control import _Region, _carry_leaves, _spec
    leaves, weak, in_def = _carry_leaves(list(example_args), "closure_convert: example argument", "args")
    specs = [_spec(a, w) for a, w in zip(leaves, weak)]
    name = getattr(fun, "__name__", "function")

    def call(f, params):
        return f(*_tree.unflatten(in_def, params))

    region = _Region(fun, f"closure_convert({name})", call, specs, stage_everything=True)
    try:
        out_leaves, out_def = _tree.flatten(region.out)
        for o in out_leaves:
            if not isinstance(o, (_core.Array, int, float)):
                raise TypeError(f"closure_convert({name}): the function must return arrays, got {type(o).__name__}")
    except BaseException:
        region.close()
        raise
    graph, captured, _ = region.finish(out_leaves)
    traced = [k for k, c in enumerate(captured) if c._is_tracer]
    nc = len(traced)

    def check(args):
        a_leaves, a_def = _tree.flatten(list(args))
        if a_def != in_def:
            raise TypeError(f"closure_convert({name}): the arguments have structure {a_def}, the example arguments "
                            f"{in_def}; pass the same structure (then the {nc} hoisted constants)")
        return a_leaves

    if not traced:
        def converted(*args):
            check(args)
            return fun(*args)
        converted.__name__ = name
        return converted, []

    def converted(*args_consts):  # noqa: F811
        args, consts = args_consts[:len(args_consts) - nc], args_consts[len(args_consts) - nc:]
        a_leaves = [_arr(x) for x in check(args)]
        for x, (shape, dtype, _) in zip(a_leaves, specs):
            if tuple(x.shape) != tuple(shape) or x.dtype != dtype:
                raise TypeError(f"closure_convert({name}): an argument is {x.dtype.name}{list(x.shape)}, its example "
                                f"{dtype.name}{list(shape)}; the converted function keeps the example's types")
        operands = list(captured)
        for k, c in zip(traced, consts):
            operands[k] = _arr(c)
        nl = len(a_leaves)
        feed = list(range(nl)) + [nl + i for i in range(len(operands))]
        outs = _core.region_call("checkpoint", [(graph, feed)], a_leaves + operands, mode=0)
        return _tree.unflatten(out_def, outs)
    converted.__name__ = name
    return converted, [captured[k] for k in traced]


def default_backend() -> str:
    """"cpu": programs run on the CPU unless jit's device= or their device arrays say otherwise."""
    return "cpu"


def _backend(backend, name):
    if backend in (None, "cpu"):
        return "cpu"
    if backend in ("cuda", "gpu"):
        return "cuda"
    if backend == "mlx":
        return "mlx"
    raise ValueError(f"{name}: backend must be None, 'cpu', 'cuda' (or 'gpu') or 'mlx', got {backend!r}")


def _distributed():
    dist = sys.modules.get("quabla.distributed")  # never initialized if it was never imported
    return dist if dist is not None and dist.is_initialized() else None


def process_count(backend=None) -> int:
    """The number of processes of the job: qb.distributed's world size once it is
    initialized, else 1."""
    _backend(backend, "process_count")
    dist = _distributed()
    return dist.world_size() if dist is not None else 1


def process_index(backend=None) -> int:
    """This process's index in the job: qb.distributed's rank once it is initialized, else 0."""
    _backend(backend, "process_index")
    dist = _distributed()
    return dist.rank() if dist is not None else 0


host_count = process_count  # JAX's older names
host_id = process_index


def local_devices(process_index=None, backend=None, host_id=None):
    """This process's devices of the backend (default: the CPU, Quabla's default backend),
    as qb.devices(backend) lists them; RuntimeError when there is none."""
    index = process_index if process_index is not None else host_id
    if index is not None and index != _qb.process_index():
        raise ValueError(f"local_devices: only this process's devices are known (process {_qb.process_index()}), "
                         f"got process_index={index}")
    return _qb.devices(_backend(backend, "local_devices"))


def local_device_count(backend=None) -> int:
    """len(local_devices(backend=backend))."""
    return len(local_devices(backend=backend))


def device_count(backend=None) -> int:
    """The devices of the backend over all processes (this process's count times
    process_count(); 1 on a single CPU)."""
    return local_device_count(backend) * process_count()


def named_call(fun, *, name=None):
    """fun itself: Quabla's programs carry no name stack, so naming a call changes nothing."""
    if not callable(fun):
        raise TypeError(f"named_call: expected a function, got {type(fun).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"named_call: name must be a string, got {type(name).__name__}")
    return fun


class _NoOpContext(contextlib.ContextDecorator):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def named_scope(name: str):
    """A context manager (or decorator) that does nothing: Quabla's programs carry no name
    stack (jax.named_scope's names only label profiles and lowered text)."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: name must be a string, got {type(name).__name__}")
    return _NoOpContext()


def ensure_compile_time_eval():
    """A context manager (or decorator) that does nothing here: inside a traced function,
    Quabla already computes every operation whose operands are concrete (not derived from the
    traced arguments) when it runs, which is what jax.ensure_compile_time_eval arranges."""
    return _NoOpContext()


def typeof(x):
    """The abstract value of x: qb.ShapeDtype(shape, dtype) (jax.typeof's ShapedArray; Quabla's
    ShapeDtype records no weak type). x: an array (traced or not), a NumPy array or scalar,
    or a Python number."""
    from ._jit import ShapeDtype
    if isinstance(x, _core.Array):
        return ShapeDtype(tuple(x.shape), x.dtype)
    if isinstance(x, (bool, int, float)):
        return ShapeDtype((), _qb.asarray(x).dtype)
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__array__"):
        return ShapeDtype(tuple(x.shape), _dtype(x.dtype))
    raise TypeError(f"typeof: {type(x).__name__} is not an array type (give an array, a NumPy array or a Python "
                    f"number)")


def print_environment_info(return_string: bool = False):
    """Prints (or returns, with return_string=True) the versions of Quabla, NumPy and Python,
    the platform, the devices and the process count (jax.print_environment_info)."""
    import platform
    try:
        import numpy as np
        numpy_version = np.__version__
    except ImportError:  # pragma: no cover - NumPy is optional
        numpy_version = "not installed"
    lines = [f"quabla: {getattr(sys.modules['quabla'], '__version__', 'unknown')}",
             f"numpy:  {numpy_version}",
             f"python: {sys.version}",
             f"devices: {', '.join(_qb.devices())}",
             f"process_count: {process_count()}",
             f"platform: {platform.uname()}"]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None
