"""quabla.example_libraries: jax.example_libraries' two small libraries, for older JAX code
(`from quabla.example_libraries import optimizers, stax`).

- ``optimizers``: optimizers as ``(init_fun, update_fun, get_params)`` triples over
  pytrees of parameters (sgd, momentum, nesterov, adagrad, rmsprop, rmsprop_momentum,
  adam, adamax, sm3), step-size schedules and ``l2_norm`` / ``clip_grads``.
- ``stax``: neural-network layers as ``(init_fun, apply_fun)`` pairs (Dense, Conv,
  activations, Flatten, Dropout, ...) and the combinators serial, parallel and
  shape_dependent.

Both follow jax.example_libraries' documented behaviour: the same state layout, the same
formulas and, for the same key, the same initial parameters.
"""
from . import optimizers  # noqa: F401
from . import stax  # noqa: F401

__all__ = ["optimizers", "stax"]
