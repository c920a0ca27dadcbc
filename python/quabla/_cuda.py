"""The CUDA backend's Python side: finding the CUDA libraries, listing devices and
resolving ``device=`` strings. Nothing here loads CUDA at import: the libraries are opened
(with dlopen, in C++) the first time a CUDA device is asked for.

``QUABLA_CUDA_EMULATOR=1`` makes ``cuda:0`` the host emulator: CUDA plans and their
generated kernels run as C++ on the CPU (slow; for testing the backend without a GPU).
"""
import glob
import os
import sys
from typing import Optional, Tuple

from . import _core
from .errors import UnsupportedOperationError

_dirs_set = False


def _wheel_library_dirs():
    """lib folders of the nvidia-* wheels (nvidia-cuda-nvrtc-cu12, nvidia-cublas-cu12, ...)."""
    dirs = []
    for base in sys.path:
        for pattern in ("nvidia/*/lib", "nvidia/cu*/lib"):
            for d in sorted(glob.glob(os.path.join(base or ".", pattern))):
                if d not in dirs:
                    dirs.append(d)
    return dirs


def _ensure_library_dirs():
    global _dirs_set
    if not _dirs_set:
        _core.cuda_set_library_dirs(_wheel_library_dirs())
        _dirs_set = True


def emulating() -> bool:
    return os.environ.get("QUABLA_CUDA_EMULATOR", "").lower() in ("1", "true", "yes")


def info() -> dict:
    """gpu_count, reason (why there is none), devices, nvrtc_version / nvrtc_reason."""
    _ensure_library_dirs()
    return _core.cuda_info()


def device_names():
    if emulating():
        return ["cuda:0"]
    return [f"cuda:{i}" for i in range(info()["gpu_count"])]


def unavailable_reason() -> Optional[str]:
    if emulating():
        return None
    i = info()
    return None if i["gpu_count"] else i["reason"]


def resolve(device: str, what: str = "jit") -> Tuple[int, bool]:
    """(ordinal, emulate) for "cuda" / "cuda:N"; raises when that device does not exist."""
    ordinal = int(device.split(":")[1]) if ":" in device else 0
    if emulating():
        if ordinal != 0:
            raise ValueError(f"{what}: the CUDA host emulator (QUABLA_CUDA_EMULATOR=1) is cuda:0 only, got {device!r}")
        return 0, True
    reason = unavailable_reason()
    if reason is not None:
        raise UnsupportedOperationError(
            f"{what}: CUDA is not available on this machine: {reason}; qb.devices() lists the available targets "
            f"(use device='cpu')", op=what, device=device)
    count = info()["gpu_count"]
    if ordinal >= count:
        raise ValueError(f"{what}: {device!r} does not exist; this machine has {count} CUDA device(s): "
                         f"{', '.join(device_names())}")
    return ordinal, False


def device_put(x, device=None):
    """x on `device`: "cpu" (or None) gives a host qb.Array, "cuda" / "cuda:N" or "mlx" a
    DeviceArray (in the GPU's memory, or held by MLX).

    Host data (qb arrays, NumPy arrays, lists, numbers) is copied to the device once; a
    jitted function called on device arrays runs there without copies and returns device
    arrays. Copies back are explicit: x.to_host(), np.asarray(x), x.tolist(), x.item(). As in
    JAX, a pytree (dict, list, tuple) is put leaf by leaf and keeps its structure.
    """
    if isinstance(x, (dict, list, tuple)):
        from . import tree as _tree
        return _tree.map(lambda leaf: device_put(leaf, device), x)
    if device is None or device == "cpu":
        return x.to_host() if isinstance(x, _core.DeviceArray) else _core.asarray(x)
    if device == "mlx":
        info = _core.mlx_info()
        if not info["available"]:
            raise UnsupportedOperationError(f"device_put: device='mlx': {info['reason']}", op="device_put", device="mlx")
        return _core.mlx_put(x)
    if not isinstance(device, str) or not (device == "cuda" or device.startswith("cuda:")):
        raise ValueError(f"device_put: device must be 'cpu', 'cuda', 'cuda:N' or 'mlx', got {device!r}")
    try:
        ordinal, emulate = resolve(device, "device_put")
    except UnsupportedOperationError as e:
        raise UnsupportedOperationError(str(e), op="device_put", device=device) from None
    return _core.device_put(x, ordinal, emulate)


def _host_method(name):
    def method(self, *args, **kwargs):
        return getattr(self.to_host(), name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Copies the array to the host and returns its {name}() there."
    return method


def _method_caller(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _device_method(name):
    """DeviceArray.<name>: Array.<name> compiled for the array's device (quabla._device_eager)."""
    caller = _method_caller(name)
    key = "Array." + name

    def method(self, *args, **kwargs):
        from . import _device_eager
        return _device_eager.call(key, caller, (self,) + args, kwargs)
    method.__name__ = name
    method.__doc__ = f"Array.{name}, run on the array's device."
    return method


def _device_property(name):
    def getter(x):
        return getattr(x, name)
    getter.__name__ = name
    key = "Array." + name

    def get(self):
        from . import _device_eager
        return _device_eager.call(key, getter, (self,), {})
    return property(get, doc=f"Array.{name}, computed on the array's device.")


class _DeviceIndexUpdate:
    """x.at[index] of a device array: its set/add/... run on the array's device."""

    def __init__(self, x, index):
        self._x, self._index = x, index

    def __getattr__(self, op):
        if op not in ("get", "set", "add", "multiply", "divide", "min", "max", "power", "apply"):
            raise AttributeError(f"x.at[...] has no method {op!r}")
        def update(*args, **kwargs):
            from . import _device_eager
            return _device_eager.call("at." + op, _at_update, (self._x, self._index, op) + args, kwargs)
        return update


def _at_update(x, index, op, *args, **kwargs):
    return getattr(x.at[index], op)(*args, **kwargs)


class _DeviceAt:
    def __init__(self, x):
        self._x = x

    def __getitem__(self, index):
        return _DeviceIndexUpdate(self._x, index)


def _unstack(x):
    return [x[i] for i in range(x.shape[0])]


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    from . import _device_eager
    return iter(_device_eager.call("unstack", _unstack, (self,), {}))


def _repr(self):
    text = repr(self.to_host())
    text = "Device" + text if text.startswith("Array(") else text
    return text[:-1] + f", device='{self.device}')" if text.endswith(")") else text


def _install_device_array_methods():
    cls = _core.DeviceArray
    for name in ("numpy", "tolist", "item", "__float__", "__int__", "__bool__", "__index__"):
        setattr(cls, name, _host_method(name))
    def __array__(self, dtype=None, copy=None):
        import numpy as np
        return np.asarray(self.to_host(), dtype=dtype)
    cls.__array__ = __array__
    cls.__repr__ = _repr
    cls.__str__ = lambda self: str(self.to_host())
    # Everything else an Array has runs on the array's device, one compiled program per
    # operation and signature (quabla._device_eager), as JAX's eager operations do.
    skip = {"__class__", "__doc__", "__module__", "__new__", "__init_subclass__", "__subclasshook__", "__hash__",
            "__array_priority__", "__dlpack__", "__dlpack_device__", "__iter__", "at", "_is_tracer",
            "_shares_storage_with", "to_flat_list", "nbytes", "__getattribute__", "__setattr__", "__delattr__",
            "__init__", "__repr__", "__str__", "__format__", "__reduce__", "__reduce_ex__", "__sizeof__", "__dir__",
            "__getstate__", "__setstate__", "__array__", "__len__", "__bool__", "__float__", "__int__", "__index__",
            "__copy__", "__deepcopy__", "__eq__", "__ne__", "numpy", "tolist", "item", "device", "devices"}
    import inspect
    for name in dir(_core.Array):
        if name in skip or name in ("shape", "dtype", "ndim", "size", "itemsize", "block_until_ready"):
            continue
        attr = inspect.getattr_static(_core.Array, name)
        if isinstance(attr, property):
            setattr(cls, name, _device_property(name))
        elif callable(attr):
            setattr(cls, name, _device_method(name))
    from ._device import Device
    name_of = inspect.getattr_static(cls, "device")
    if not getattr(name_of, "_quabla_device", False):  # installed once (the C++ name, as a qb.Device)
        device = property(lambda self: Device(name_of.__get__(self)), doc="The device holding the array ('cuda:0', 'mlx').")
        device.fget._quabla_device = True
        cls.device = device
    cls.devices = lambda self: {self.device}
    cls.__eq__ = _device_method("__eq__")
    cls.__ne__ = _device_method("__ne__")
    cls.__iter__ = _iter
    cls.at = property(_DeviceAt, doc="x.at[index].set(v) and the other updates, run on the array's device.")
    cls.nbytes = property(lambda self: self.size * self.dtype.itemsize)
    cls.itemsize = property(lambda self: self.dtype.itemsize)
    cls.block_until_ready = lambda self: self  # device work is finished when a call returns
    cls.to_flat_list = _host_method("to_flat_list")
    cls.__array_priority__ = _core.Array.__array_priority__
    cls.__hash__ = None


_install_device_array_methods()
