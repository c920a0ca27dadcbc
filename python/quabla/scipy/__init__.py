"""quabla.scipy: the parts of jax.scipy that scientific code reaches for, with its names and
semantics: ``linalg`` (SciPy's conventions: cholesky returns the upper factor unless
lower=True; qr is complete unless mode='economic'), ``sparse.linalg`` (cg, gmres, bicgstab),
``special``, ``stats``, ``integrate`` and ``ndimage`` (map_coordinates)."""
from . import integrate, interpolate, linalg, ndimage, optimize, signal, sparse, special, stats  # noqa: F401
