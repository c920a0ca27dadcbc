"""Quabla's exception and warning types (API.md §10)."""
from ._core import QuablaError, ShapeError, TracerError

__all__ = ["QuablaError", "TracerError", "ShapeError", "UnsupportedOperationError", "RetraceWarning"]

# ShapeError(ValueError, TypeError), also from the C++ module: operands whose shapes an
# operation cannot combine (matmul's inner axes, broadcasting, reshape sizes, concatenation,
# grad of a non-scalar). NumPy raises ValueError for these and JAX TypeError; code written
# against either catches it.


# TracerError(QuablaError, TypeError) is created by the C++ module so its errors can raise
# it directly: a traced value was used where a concrete value is needed (``if``,
# ``float()``, ``.numpy()``); use ``qb.where`` or ``qb.cond`` instead.


class UnsupportedOperationError(QuablaError, ValueError, NotImplementedError):
    """A backend cannot run an operation; raised when the program compiles, never silently."""

    def __init__(self, message: str, op: str | None = None, device: str | None = None):
        super().__init__(message)
        self.op = op
        self.device = device


class RetraceWarning(UserWarning):
    """A jit-compiled function was traced again (a new signature, or an evicted one)."""
