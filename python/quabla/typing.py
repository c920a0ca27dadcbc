"""jax.typing's aliases for annotations: ``ArrayLike`` (what jnp functions accept as an
array: a qb.Array, a NumPy array or scalar, or a Python bool/int/float/complex) and
``DTypeLike`` (what a dtype= argument accepts: a name such as "float32", a qb dtype, a
NumPy dtype or scalar type)."""
from __future__ import annotations

from typing import Any, Union

from ._core import Array, DType

__all__ = ["ArrayLike", "DTypeLike"]

try:  # NumPy is optional for Quabla; the aliases name its types when it is installed.
    import numpy as _np
    _NP_ARRAYS: tuple = (_np.ndarray, _np.bool_, _np.number)
    _NP_DTYPES: tuple = (_np.dtype,)
except ImportError:  # pragma: no cover - NumPy-free installs
    _NP_ARRAYS, _NP_DTYPES = (), ()

ArrayLike = Union[(Array,) + _NP_ARRAYS + (bool, int, float, complex)]
DTypeLike = Union[(str, type, DType) + _NP_DTYPES]
