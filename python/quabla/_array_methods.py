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
    if self.ndim == 0:
        raise TypeError("iteration over a zero-dimensional array")
    for i in range(self.shape[0]):
        yield self[i]


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
