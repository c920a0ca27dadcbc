"""Optimizers (API.md §8), the part the transform issue needs: Adam and SGD with the pure
init/update interface and the stateful step convenience. Schedules, AdamW, clipping,
L-BFGS and Trainer come with the training issue.

The update formulas are optax's: Adam with bias-corrected moments,
p <- p - lr * m_hat / (sqrt(v_hat) + eps).
"""
from __future__ import annotations

from typing import Any, NamedTuple

from . import _core
from . import tree as _tree

__all__ = ["Adam", "SGD", "AdamState"]


class AdamState(NamedTuple):
    count: int
    mu: Any
    nu: Any


def _check_grads(params, grads, name):
    p_def, g_def = _tree.structure(params), _tree.structure(grads)
    if p_def != g_def:
        raise ValueError(f"{name}: gradients have structure {g_def}, parameters {p_def}")


class Adam:
    def __init__(self, learning_rate: float = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        if not learning_rate > 0:
            raise ValueError(f"Adam: learning_rate must be positive, got {learning_rate}")
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"Adam: b1 and b2 must be in [0, 1), got {b1}, {b2}")
        self.learning_rate, self.b1, self.b2, self.eps = float(learning_rate), float(b1), float(b2), float(eps)
        self._state = None

    def init(self, params) -> AdamState:
        zeros = _tree.map(lambda p: _core.zeros_like(p), params)
        return AdamState(0, zeros, zeros)

    def update(self, params, grads, state: AdamState):
        """(new params, new state): a pure function of its arguments (jit-able)."""
        _check_grads(params, grads, "Adam.update")
        count = state.count + 1
        b1, b2 = self.b1, self.b2
        mu = _tree.map(lambda m, g: b1 * m + (1.0 - b1) * g, state.mu, grads)
        nu = _tree.map(lambda v, g: b2 * v + (1.0 - b2) * (g * g), state.nu, grads)
        c1, c2 = 1.0 - b1 ** count, 1.0 - b2 ** count
        lr, eps = self.learning_rate, self.eps
        new = _tree.map(lambda p, m, v: p - lr * (m / c1) / (_core.sqrt(v / c2) + eps), params, mu, nu)
        return new, AdamState(count, mu, nu)

    def step(self, params, grads):
        """Stateful convenience: keeps the optimizer state on this object."""
        if self._state is None:
            self._state = self.init(params)
        params, self._state = self.update(params, grads, self._state)
        return params


class SGD:
    def __init__(self, learning_rate: float = 1e-2):
        if not learning_rate > 0:
            raise ValueError(f"SGD: learning_rate must be positive, got {learning_rate}")
        self.learning_rate = float(learning_rate)

    def init(self, params):
        return ()

    def update(self, params, grads, state=()):
        _check_grads(params, grads, "SGD.update")
        lr = self.learning_rate
        return _tree.map(lambda p, g: p - lr * g, params, grads), state

    def step(self, params, grads):
        return self.update(params, grads)[0]
