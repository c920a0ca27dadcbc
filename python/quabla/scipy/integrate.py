"""jax.scipy.integrate.trapezoid."""
from .._numpy_extra import trapezoid  # noqa: F401

__all__ = ["trapezoid"]
