"""The quabla package as seen from its own submodules: ``qb.name`` looks the name up when it
is used, so modules the package imports while it is still being built (the jax.numpy, jax.nn
and jax.lax compositions) can call every public function, core or composed."""
from __future__ import annotations

import sys


class _Package:
    def __getattr__(self, name):
        return getattr(sys.modules["quabla"], name)


qb = _Package()
