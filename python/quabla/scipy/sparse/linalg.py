"""jax.scipy.sparse.linalg's solvers: qb.linalg.cg, gmres and bicgstab (matrix-free, with
implicit-function-theorem derivatives). They return (x, None), or (x, SolverInfo) with
info=True."""
from ...linalg import bicgstab, cg, gmres  # noqa: F401

__all__ = ["cg", "gmres", "bicgstab"]
