"""Eager operations on device arrays (CUDA, MLX): each runs as a program compiled for the
array's device, as JAX's eager operations do.

The core's module functions call ``run`` when an operand is a device array (the C++
conversion throws before anything is computed); DeviceArray's operators and methods call
``call`` directly. A call's device arrays become the program's arguments; everything else
(Python numbers, axes, shapes, slices, dtypes) is static, part of the cache key. Host arrays
beside device arrays are refused, as jit refuses them (no implicit copies); Python numbers
are constants of the program.
"""
from collections import OrderedDict

from . import _core
from . import tree as _tree

_CACHE_SIZE = 512
_cache: "OrderedDict[tuple, object]" = OrderedDict()


def _static_key(leaf):
    if isinstance(leaf, slice):
        return (slice, _static_key(leaf.start), _static_key(leaf.stop), _static_key(leaf.step))
    try:
        hash(leaf)
    except TypeError:
        raise TypeError(f"an operation on device arrays got an argument of type {type(leaf).__name__} it cannot "
                        f"compile as a constant; put it on the device with qb.device_put, or compute under "
                        f"qb.jit(f, device=...)") from None
    return (type(leaf), leaf)


def _is_host_array(x) -> bool:
    return isinstance(x, _core.Array) or (not isinstance(x, (bool, int, float, complex, str))
                                          and (hasattr(x, "__array__") or hasattr(x, "__array_interface__")))


def call(name: str, fun, args: tuple, kwargs: dict):
    """fun(*args, **kwargs) compiled for the device of its device arrays; `name` identifies
    fun in the cache (one name, one function)."""
    leaves, treedef = _tree.flatten((args, kwargs))
    if _core.tracing():
        # Closed over by a traced function: a constant of that program, as host arrays are.
        host = [x.to_host() if isinstance(x, _core.DeviceArray) else x for x in leaves]
        args, kwargs = _tree.unflatten(treedef, host)
        return fun(*args, **kwargs)
    dynamic = [i for i, x in enumerate(leaves) if isinstance(x, _core.DeviceArray)]
    devices = sorted({leaves[i].device for i in dynamic})
    if len(devices) != 1:
        raise ValueError(f"{name}: the arguments are on different devices ({', '.join(devices)}); move them to one "
                         f"with qb.device_put(x, device)" if devices else f"{name}: no device array among the arguments")
    dynamic_set = set(dynamic)
    hosts = [i for i, x in enumerate(leaves) if i not in dynamic_set and _is_host_array(x)]
    if hosts:
        raise ValueError(f"{name}: mixes host arrays with arrays on {devices[0]} (argument leaf {hosts[0]} is a "
                         f"{type(leaves[hosts[0]]).__name__}); arrays are not copied implicitly: put it on the "
                         f"device with qb.device_put(x, '{devices[0]}') or copy the others back with x.to_host()")
    key = (name, treedef, tuple(dynamic), devices[0],
           tuple(_static_key(x) for i, x in enumerate(leaves) if i not in dynamic_set))
    jitted = _cache.get(key)
    if jitted is None:
        jitted = _compile(fun, treedef, leaves, dynamic)
        _cache[key] = jitted
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    try:
        return jitted(*[leaves[i] for i in dynamic])
    except (IndexError, ValueError, TypeError) as e:
        text = str(e)
        if "trace" not in text and "jit" not in text:
            raise
        try:
            explained = type(e)(f"{text} [{name} on arrays on {devices[0]} runs as a program compiled for that "
                                f"device, so shapes that depend on values (boolean masks, nonzero without size=) "
                                f"are not available there: copy the array to the host with x.to_host() first]")
        except Exception:  # noqa: BLE001 - an exception type with another constructor: unchanged
            raise e from None
        raise explained from None


def _compile(fun, treedef, leaves, dynamic):
    from ._jit import jit
    template = list(leaves)
    for i in dynamic:
        template[i] = None  # the closure keeps no device buffer alive

    def on_device(*arrays):
        filled = list(template)
        for i, a in zip(dynamic, arrays):
            filled[i] = a
        args, kwargs = _tree.unflatten(treedef, filled)
        return fun(*args, **kwargs)

    on_device.__name__ = getattr(fun, "__name__", "device_op")
    return jit(on_device, max_traces=64)  # runs where its device arrays are


def run(name: str, args: tuple):
    """quabla._core.<name>(*args) on the device of its device arrays (called by the core)."""
    return call(name, getattr(_core, name), args, {})


def cache_size() -> int:
    return len(_cache)


# ---- Python compositions (jnp-style functions written in Python over the core's ops)

# Functions that answer about arrays rather than compute them, or that place data
# themselves: they are not compiled for a device.
_NOT_COMPILED = {"shape", "ndim", "size", "isscalar", "result_type", "promote_types", "can_cast", "issubdtype",
                 "finfo", "iinfo", "broadcast_shapes", "device_get", "block_until_ready", "eval_shape",
                 "linearize"}


def _has_device_array(args, kwargs) -> bool:
    device_array = _core.DeviceArray
    for a in args:
        t = type(a)
        if t is device_array or ((t is list or t is tuple) and any(type(b) is device_array for b in a)):
            return True
    return bool(kwargs) and any(type(v) is device_array for v in kwargs.values())


def follow_device(fun, name: str):
    """fun, compiled as a whole for the device when given device arrays (so the constants it
    builds on the host, index ranges and the like, become constants of that program);
    unchanged for host arrays and under tracing (a type check per call)."""
    import functools

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        if _has_device_array(args, kwargs) and not _core.tracing():
            return call(name, fun, args, kwargs)
        return fun(*args, **kwargs)
    return wrapper


def install(namespaces, defining_modules):
    """Wraps the public Python functions of `defining_modules` with follow_device, and
    rebinds every name in `namespaces` (and those modules) that referred to them."""
    import types
    wrapped = {}
    for module in defining_modules:
        for name, obj in list(vars(module).items()):
            if (name.startswith("_") or name in _NOT_COMPILED or not isinstance(obj, types.FunctionType)
                    or obj.__module__ != module.__name__):
                continue
            public = module.__name__.rsplit(".", 1)[-1].startswith("_")  # quabla._indexing.take is qb.take
            wrapped[id(obj)] = follow_device(obj, f"qb.{name}" if public else f"{module.__name__}.{name}")
    for namespace in list(namespaces) + list(defining_modules):
        for name, obj in list(vars(namespace).items()):
            if not name.startswith("_") and id(obj) in wrapped:
                setattr(namespace, name, wrapped[id(obj)])
