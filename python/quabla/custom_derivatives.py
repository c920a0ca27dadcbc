"""qb.custom_derivatives: the custom-rule API under the module name JAX uses
(jax.custom_derivatives), with the symbolic-zero helpers."""
from ._custom import (  # noqa: F401
    CustomVJPPrimal,
    SymbolicZero,
    custom_jvp,
    custom_vjp,
    zero_from_primal,
)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp", "zero_from_primal"]
