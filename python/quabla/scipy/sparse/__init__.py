"""jax.scipy.sparse: the matrix-free Krylov solvers (``linalg``)."""
from . import linalg  # noqa: F401
