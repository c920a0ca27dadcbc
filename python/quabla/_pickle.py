"""Pickling of arrays, dtypes and random keys (copyreg reducers).

An array pickles as its dtype name, shape and C-order bytes and is rebuilt by
``qb.array`` of a memoryview of those bytes (``qb.zeros`` when it has no elements), so
values, dtype and shape round-trip exactly, 0-d and empty arrays included. A dtype pickles
as its name; a key (or key array) as its words. A traced array (inside jit, grad or vmap)
has no values yet and raises TypeError.
"""
from __future__ import annotations

import copyreg

from . import _core

__all__ = []


def _dtype_named(name: str):
    for d in (_core.float32, _core.float64, _core.bool_, _core.int32, _core.int64, _core.complex64, _core.complex128,
              _core.int8, _core.int16, _core.uint8, _core.uint16, _core.uint32):
        if d.name == name:
            return d
    raise ValueError(f"quabla: cannot unpickle an array of dtype {name!r}: this Quabla has no such dtype")


def _rebuild_array(dtype_name: str, shape: tuple, data: bytes):
    dt = _dtype_named(dtype_name)
    if 0 in shape:
        return _core.zeros(shape, dtype=dt)
    if dt in (_core.complex64, _core.complex128):  # memoryview cannot cast to "Zf"/"Zd": the parts
        part = _core.float32 if dt == _core.complex64 else _core.float64
        pairs = _core.array(memoryview(data).cast(memoryview(_core.zeros((1,), dtype=part)).format, shape + (2,)))
        return _core._complex(pairs[..., 0], pairs[..., 1])
    view = memoryview(data).cast(memoryview(_core.zeros((1,), dtype=dt)).format, shape)
    out = _core.array(view)
    return out if out.dtype == dt else out.astype(dt)


def _reduce_array(x):
    if getattr(x, "_is_tracer", False):
        raise TypeError("cannot pickle a traced quabla array (inside jit, grad or vmap its values are not known "
                        "yet): return it from the transformed function and pickle the result")
    shape = tuple(x.shape)
    data = b"" if 0 in shape else memoryview(x).tobytes()
    return _rebuild_array, (x.dtype.name, shape, data)


def _reduce_dtype(d):
    return _dtype_named, (d.name,)


def _rebuild_key(words, data):
    from .random import Key
    return Key(words) if data is None else Key(data=data)


def _reduce_key(k):
    if k._words is not None:
        return _rebuild_key, (tuple(k._words), None)
    if getattr(k._data, "_is_tracer", False):
        raise TypeError("cannot pickle a traced quabla.random.Key (inside jit, grad or vmap its words are not known "
                        "yet): return it from the transformed function and pickle the result")
    return _rebuild_key, (None, k._data)


def install() -> None:
    copyreg.pickle(_core.Array, _reduce_array)
    copyreg.pickle(_core.DType, _reduce_dtype)
    from .random import Key
    copyreg.pickle(Key, _reduce_key)


install()
