"""quabla.numpy: Quabla's NumPy-style functions under jax.numpy's module name, for code ported
from JAX (``import quabla.numpy as jnp``): every name resolves to the same object as in the
``quabla`` package (``jnp.sin is qb.sin``), and ``jnp.linalg`` is ``qb.linalg``."""
from __future__ import annotations

import sys as _sys

from . import linalg  # noqa: F401


def __getattr__(name):
    try:
        return getattr(_sys.modules["quabla"], name)
    except AttributeError:
        raise AttributeError(f"module 'quabla.numpy' has no attribute {name!r}") from None


def __dir__():
    return dir(_sys.modules["quabla"])
