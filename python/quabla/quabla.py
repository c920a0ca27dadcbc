"""v0.1's native-module alias (``quabla.quabla``, ``import quabla.quabla``): every v0.1
name, resolved without warnings; its ``grad``, ``jit`` and ``trace`` are v0.1's 2D ones
(``quabla.legacy``). New code uses the package itself (docs/migration.md)."""
from __future__ import annotations


def __getattr__(name):
    import quabla as package
    from . import _compat, legacy
    if name in ("grad", "jit", "trace"):
        return getattr(legacy, name)
    if name in _compat.DEPRECATED or name in _compat.LEGACY:
        return _compat._resolve(name)
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(package, name)
