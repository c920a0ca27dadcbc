"""Array methods that are conveniences around the C++ type: NumPy export and repr.

Export is zero-copy and read-only through the buffer protocol the C++ class implements.
NumPy is optional: only these methods import it.
"""
from __future__ import annotations

from . import _core


def __array__(self, dtype=None, copy=None):
    import numpy as np

    view = np.asarray(memoryview(self))
    if dtype is not None and np.dtype(dtype) != view.dtype:
        if copy is False:
            raise ValueError("a dtype change needs a copy, but copy=False was passed")
        return view.astype(dtype)
    if copy:
        return view.copy()
    return view


def numpy(self):
    """A read-only NumPy view of the array's storage (no copy)."""
    return __array__(self)


def _format_plain(values, ndim):
    """A repr body without NumPy: nested lists with NumPy-like float formatting."""
    def fmt(v):
        if isinstance(v, bool):
            return "True" if v else "False"
        if v != v or v in (float("inf"), float("-inf")):
            return {True: "nan"}.get(v != v, "inf" if v > 0 else "-inf")
        return f"{v:.8g}" + ("." if float(v).is_integer() and "e" not in f"{v:.8g}" else "")
    def rec(x):
        return "[" + ", ".join(rec(e) for e in x) + "]" if isinstance(x, list) else fmt(x)
    return rec(values)


def __repr__(self):
    dtype = self.dtype.name
    if self._is_tracer:
        return f"Traced<{dtype}{list(self.shape)}>"
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - exercised only without NumPy
        body = _format_plain(self.tolist(), self.ndim)
    else:
        body = np.array2string(
            np.asarray(memoryview(self)), separator=", ", prefix="Array(", threshold=1000
        )
    if self.size == 0:  # the body "[]" does not tell the shape (as JAX and NumPy, show it)
        return f"Array([], shape={tuple(self.shape)!r}, dtype={dtype})"
    return f"Array({body}, dtype={dtype})"


def __str__(self):
    if self._is_tracer:
        return __repr__(self)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return _format_plain(self.tolist(), self.ndim)
    return str(np.asarray(memoryview(self)))


def __iter__(self):
    if self.ndim == 0:  # raised by iter() itself, as NumPy and JAX do (not at the first next())
        raise TypeError("iteration over a zero-dimensional array")
    return (self[i] for i in range(self.shape[0]))


def install() -> None:
    cls = _core.Array
    cls.__array__ = __array__
    cls.numpy = numpy
    cls.__repr__ = __repr__
    cls.__str__ = __str__
    cls.__iter__ = __iter__
    # NumPy's array methods that are compositions (python/quabla/_numpy_extra.py).
    from . import _numpy_extra as ne
    for name in ("diagonal", "trace", "repeat", "swapaxes"):
        setattr(cls, name, getattr(ne, name))
    # Traced integer indexing (python/quabla/_indexing.py).
    from . import _indexing as ix
    cls.__getitem__ = ix._getitem
    cls.at = property(ix._at)
    for name in ("argsort", "sort", "argmax", "argmin", "take", "searchsorted", "nonzero"):
        setattr(cls, name, getattr(ix, name))


# ---- conveniences NumPy and JAX users reach for (installed by install_more)

def __format__(self, spec):
    """f"{x:.3e}" of a one-element array formats its value (as NumPy's 0-d arrays do)."""
    if not spec:
        return str(self)
    if self.size == 1 and not self._is_tracer:
        return format(self.item(), spec)
    raise TypeError(f"unsupported format string {spec!r} for an array of shape {tuple(self.shape)}; format "
                    f"x.item() of a one-element array, or x.tolist()")


def __round__(self, ndigits=None):
    """round(x): a Python number for a one-element array (ndigits None); round(x, n): the
    array rounded to n decimals (qb.round(x, n))."""
    if ndigits is None:
        if self.size != 1:
            raise TypeError("round() of an array with more than one element; use qb.round(x)")
        return round(self.item())
    from . import _numpy_more
    return _numpy_more.round(self, ndigits)


def _flatten(self, order="C"):
    """A flattened copy (row-major; order="F" column-major)."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"flatten: order must be 'C' or 'F', got {order!r}")
    x = _core.transpose(self) if order == "F" else self
    return _core.reshape(x, (-1,))


def _copy(self):
    """The array itself: arrays are immutable, so a copy is never needed (as jax.Array.copy)."""
    return self


def _block_until_ready(self):
    """self (CPU programs have finished when they return)."""
    return self


def _qb_divmod(x, y):
    from ._package import qb
    return qb.divmod(x, y)


def _index(self):
    """operator.index of a concrete 0-d integer array (range(n), list indices), as NumPy's."""
    if self.ndim != 0 or self.dtype not in (_core.int32, _core.int64):
        raise TypeError(f"only integer scalar arrays can be converted to a scalar index, got {self.dtype.name} of "
                        f"shape {tuple(self.shape)}")
    return int(self)


def _item_method(core_item):
    def item(self, *args):
        """The value as a Python scalar: of a one-element array, or at a flat index (item(3)) or a
        multi-index (item(1, 2)), as NumPy's."""
        if not args:
            return core_item(self)
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if len(args) == 1:
            i = int(args[0])
            if not -self.size <= i < self.size:
                raise IndexError(f"index {i} is out of bounds for an array of size {self.size}")
            return core_item(self.reshape(-1)[i])
        return core_item(self[tuple(int(a) for a in args)])
    return item


def _array_namespace(self, api_version=None):
    """The array API namespace of Quabla arrays: quabla.numpy (jax.numpy's names)."""
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}")
    from . import numpy as qnp
    return qnp


def _no_out(dtype, out, name):
    if out is not None:
        raise TypeError(f"{name}: out= is not supported: Quabla arrays are immutable; use the returned array")
    return dtype


def install_more() -> None:
    cls = _core.Array
    cls.__index__ = _index
    cls.__complex__ = lambda self: complex(self.item())
    cls.item = _item_method(cls.item)
    cls.__divmod__ = lambda self, other: _qb_divmod(self, other)
    cls.__rdivmod__ = lambda self, other: _qb_divmod(other, self)
    cls.__format__ = __format__
    cls.__round__ = __round__
    cls.flatten = _flatten
    cls.copy = _copy
    cls.__copy__ = _copy
    cls.__deepcopy__ = lambda self, memo=None: self
    cls.block_until_ready = _block_until_ready
    from . import _numpy_extra, _numpy_more
    cls.mT = property(lambda self: _numpy_extra.swapaxes(self, -1, -2), doc="The last two axes swapped.")
    cls.round = lambda self, decimals=0: _numpy_more.round(self, decimals)
    cls.itemsize = property(lambda self: self.dtype.itemsize)
    # NumPy's methods with their options (the plain core methods take none of them)
    cls.ravel = lambda self, order="C": _numpy_extra.ravel(self, order)
    cls.cumsum = lambda self, axis=None, dtype=None, out=None, *, reverse=False: _numpy_extra.cumsum(
        self, axis, _no_out(dtype, out, "cumsum"), reverse=reverse)
    cls.cumprod = lambda self, axis=None, dtype=None, out=None, *, reverse=False: _numpy_extra.cumprod(
        self, axis, _no_out(dtype, out, "cumprod"), reverse=reverse)
    cls.ptp = lambda self, axis=None, out=None, keepdims=False: _numpy_more.ptp(self, axis, keepdims) if out is None \
        else _no_out(None, out, "ptp")
    from . import _numpy_breadth
    cls.compress = lambda self, condition, axis=None, *, size=None, fill_value=0, out=None: _numpy_breadth.compress(
        condition, self, axis, size=size, fill_value=fill_value, out=out)
    cls.__array_namespace__ = _array_namespace
    from ._device import Device
    cls.device = property(lambda self: Device("cpu"), doc="The device holding the array: 'cpu' for host arrays.")
    cls.devices = lambda self: {Device("cpu")}
    cls.real = property(lambda self: _numpy_more.real(self), doc="The real part (a real array itself).")
    cls.imag = property(lambda self: _numpy_more.imag(self), doc="The imaginary part (zeros for a real array).")
    cls.conj = lambda self: _numpy_more.conj(self)
    cls.conjugate = lambda self: _numpy_more.conjugate(self)
    dt = _core.DType

    def numpy_dtype(self):
        import numpy as np
        return np.dtype(self.name)
    dt.dtype = property(numpy_dtype, doc="The NumPy dtype (np.dtype(qb.float32) reads it).")
    dt.type = property(lambda self: numpy_dtype(self).type, doc="NumPy's scalar type (np.float32 ...).")
    dt.char = property(lambda self: numpy_dtype(self).char)
    dt.str = property(lambda self: numpy_dtype(self).str)
