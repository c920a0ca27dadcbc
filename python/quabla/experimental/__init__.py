"""jax.experimental's counterparts: ``quabla.experimental.ode`` (odeint in JAX's signature)."""
from . import ode  # noqa: F401

__all__ = ["ode"]
