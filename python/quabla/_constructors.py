"""Constructors that need Python: the default float dtype switch, and array/asarray of
nested sequences that hold quabla arrays (tracers included), which stack like jnp.array."""
from __future__ import annotations

from typing import Any

from . import _config, _core

__all__ = ["array", "asarray", "default_dtype", "set_default_dtype"]


def default_dtype():
    """The float dtype that constructors and conversions of Python numbers use when no dtype
    is given (float64 unless set_default_dtype changed it)."""
    return _core.default_dtype()


class set_default_dtype:
    """Sets the default float dtype (qb.float32 or qb.float64) for the whole process.

    Called plainly it stays in force; used as a context manager it is restored on exit::

        qb.set_default_dtype(qb.float32)      # from now on
        with qb.set_default_dtype(qb.float32):  # only inside the block
            ...

    It applies to zeros, ones, full, arange, linspace, eye, array/asarray of Python numbers,
    lists and NumPy integer data (float64 NumPy data becomes float32 under a float32 default,
    as JAX's x64-off mode does), qb.random and the initializers. Arrays with a dtype keep
    it, and Python scalars in arithmetic stay weak (``0.5 * x`` has x's dtype) either way.
    """

    __slots__ = ("_previous",)

    def __init__(self, dtype):
        self._previous = _core.set_default_dtype(dtype)
        _config.default_dtype_epoch += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _core.set_default_dtype(self._previous)
        _config.default_dtype_epoch += 1
        return False

    def __repr__(self):
        return f"set_default_dtype({_core.default_dtype()!r})"


def _holds_array(obj, depth: int = 0) -> bool:
    if isinstance(obj, _core.Array):
        return True
    if isinstance(obj, (list, tuple)) and depth < 64:  # deeper nesting was refused already
        return any(_holds_array(o, depth + 1) for o in obj)
    return False


def _array_dtypes(obj, found: set) -> set:
    if isinstance(obj, _core.Array):
        found.add(obj.dtype)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _array_dtypes(o, found)
    return found


def _stack_nested(obj, dtype):
    if isinstance(obj, (list, tuple)):
        if not obj:
            return _core.zeros((0,), dtype=dtype)
        return _core.stack([_stack_nested(o, dtype) for o in obj])
    if isinstance(obj, _core.Array):
        return obj if dtype is None else obj.astype(dtype)
    return _core.asarray(obj, dtype=dtype)


def _from_nested(obj, dtype):
    if dtype is None:
        # The arrays' dtypes and the numbers promote as in arithmetic (jnp.array's rule): numbers
        # are weak, so jnp.array([0.0, x32]) is float32 and [2.5, i32] the default float;
        # int32 with int64 is int64, bool with a float array that float. float32 with
        # float64 is refused, as everywhere (an explicit astype says which).
        dtypes = _array_dtypes(obj, set())
        numbers = [_weak_number(v) for v in _numbers(obj)]
        from ._numpy_more import result_type
        try:
            dtype = result_type(*sorted(dtypes, key=lambda d: d.name), *numbers)
        except ValueError:
            names = " and ".join(sorted(d.name for d in dtypes))
            raise ValueError(f"array: the sequence holds arrays of dtypes {names}; convert them to one dtype "
                             f"with astype first") from None
    try:
        return _stack_nested(obj, dtype)
    except ValueError as exc:
        raise ValueError(f"array: the nested sequence is not rectangular ({exc})") from None


def _weak_number(v):
    """A Python (or NumPy) number as the Python number promotion treats as weak."""
    if isinstance(v, (bool, int, float)):
        return v
    item = getattr(v, "item", None)
    return item() if item is not None else v


def _numbers(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _numbers(o)
    elif not isinstance(obj, _core.Array):
        yield obj


def _holds_foreign_array(obj, depth: int = 0) -> bool:
    """Whether a nested sequence holds a NumPy (or other __array__) array of rank >= 1."""
    if isinstance(obj, (list, tuple)) and depth < 64:
        return any(_holds_foreign_array(o, depth + 1) for o in obj)
    return (not isinstance(obj, _core.Array) and hasattr(obj, "__array__")
            and len(getattr(obj, "shape", ())) > 0)


def _native(obj):
    """The sequence with its NumPy arrays converted to quabla arrays."""
    if isinstance(obj, (list, tuple)):
        return [_native(o) for o in obj]
    if not isinstance(obj, _core.Array) and hasattr(obj, "__array__") and len(getattr(obj, "shape", ())) > 0:
        return _core.asarray(obj)
    return obj


def _check_not_text_or_time(obj):
    """bytes (np.bytes_ too) and NumPy datetime64 / timedelta64 values expose a buffer of raw
    bytes, which the C++ reader would take for uint8 data; NumPy and JAX do not treat them as
    numbers. (bytearray and memoryview are uint8 buffers there, and stay so.)"""
    import numpy as np
    kind = obj.dtype.kind if isinstance(obj, (np.ndarray, np.generic)) else None
    if isinstance(obj, bytes) or kind in ("M", "m", "S", "U", "V", "O"):
        name = getattr(getattr(obj, "dtype", None), "name", None)
        what = type(obj).__name__ + (f" of dtype {name}" if name else "")
        hint = (" (for dates and durations convert first, e.g. x.astype('int64'))" if kind in ("M", "m") else
                " (for raw bytes pass np.frombuffer(b, dtype=np.uint8))")
        raise TypeError(f"cannot convert {what} to a quabla array: only numbers and bools are array data{hint}")


def _convert(core_fn, obj, dtype):
    _check_not_text_or_time(obj)
    try:
        return core_fn(obj, dtype)
    except (TypeError, ValueError):  # the C++ reader takes numbers only
        if not isinstance(obj, (list, tuple)):
            raise
        if _holds_foreign_array(obj):
            if not _holds_array(obj):  # NumPy arrays and numbers only: NumPy's own rules
                import numpy as np
                return core_fn(np.asarray(obj), dtype)
            obj = _native(obj)
        elif not _holds_array(obj):
            raise
    return _from_nested(obj, dtype)


def _ndmin(x, ndmin):
    if ndmin is None or ndmin <= x.ndim:
        return x
    return _core.reshape(x, (1,) * (int(ndmin) - x.ndim) + tuple(x.shape))  # leading axes, as NumPy


def array(obj: Any, dtype=None, copy: bool = True, order=None, ndmin: int = 0):
    """A new array from obj (a number, nested list/tuple, NumPy array, buffer, quabla array).

    Lists may mix Python numbers and quabla arrays of one shape (tracers too): they are
    stacked, numbers adopting the arrays' dtype (``qb.array([0.0, x32])`` is float32).
    ``copy`` and ``order`` are accepted (arrays are immutable and C-ordered; imported data
    is copied), ``ndmin`` prepends axes of length 1 as NumPy's."""
    _check_order(order, "array")
    return _ndmin(_convert(_core.array, obj, dtype), ndmin)


def asarray(obj: Any, dtype=None, order=None, *, copy=None, device=None):
    """obj itself when it already is a quabla array of that dtype, else array(obj, dtype).
    ``copy`` and ``order`` are accepted (arrays are immutable, so copy=True needs no copy
    and copy=False none either); ``device`` puts the result there (qb.device_put)."""
    _check_order(order, "asarray")
    out = _convert(_core.asarray, obj, dtype)
    if device is not None and str(device) != "cpu":
        from . import device_put
        return device_put(out, device)
    return out


def _check_order(order, name):
    if order not in (None, "C", "K", "A"):
        raise ValueError(f"{name}: order={order!r} is not supported: Quabla arrays are C-ordered ('C')")
