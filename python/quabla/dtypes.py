"""quabla.dtypes: jax.dtypes' functions for Quabla's dtypes (float32, float64, int32, int64,
bool): canonicalize_dtype, issubdtype, result_type, finfo, iinfo and float0 (the dtype of
the tangents of integer values, a NumPy void dtype as JAX's)."""
from __future__ import annotations

from . import _core
from ._numpy_more import finfo, iinfo, issubdtype, result_type  # noqa: F401

__all__ = ["canonicalize_dtype", "issubdtype", "result_type", "finfo", "iinfo", "prng_key"]  # and float0 (__getattr__)


class prng_key:  # noqa: N801 (jax.dtypes' name)
    """The abstract dtype of key arrays: issubdtype(key.dtype, prng_key) holds (jax.dtypes.prng_key)."""

_NARROW = {"float64": "float32", "int64": "int32"}  # uint64 does not exist here


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False):
    """The Quabla dtype `dtype` stands for under the current x64 setting (as
    jax.dtypes.canonicalize_dtype): with qb.config.jax_enable_x64 off, 64-bit types become
    their 32-bit counterparts. Python's float and int mean the default float and int."""
    from ._numpy_breadth import _dtype
    from ._config import config
    d = _dtype(dtype)
    if not config.jax_enable_x64 and d.name in _NARROW:
        return getattr(_core, _NARROW[d.name])
    return d


def __getattr__(name):
    if name == "float0":  # made on first use: importing quabla needs no NumPy
        from ._numpy_breadth import _float0
        return _float0()
    raise AttributeError(f"module 'quabla.dtypes' has no attribute {name!r}")
