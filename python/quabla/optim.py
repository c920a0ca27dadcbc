"""Optimizers (API.md §8): Adam, AdamW and SGD with the pure init/update interface and the
stateful step convenience, optax's learning-rate schedules, and global-norm clipping.

The state is a pytree of arrays (the step count included, as a float64 scalar holding an
integer), so a jitted train step with the update inside compiles once and is reused for
every step. The stateful `step` runs its update as one compiled program per parameter
structure. Parameters keep their dtypes: every update is computed in the parameter's dtype
(the count and the schedule in float64, converted once per leaf).

Formulas are optax's: Adam with bias-corrected moments,
p <- p - lr * m_hat / (sqrt(v_hat) + eps); AdamW adds lr * weight_decay * p.
LBFGS (_lbfgs.py) minimises with a strong Wolfe line search; Trainer (_trainer.py)
compiles loss, gradient and update into one retained program.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional, Union

from . import _core
from . import tree as _tree
from ._jit import jit as _jit

from ._lbfgs import LBFGS, LBFGSInfo  # noqa: E402
from ._trainer import Trainer, flat_update_fn  # noqa: E402

__all__ = ["Adam", "AdamW", "SGD", "LBFGS", "LBFGSInfo", "Trainer", "AdamState", "SGDState", "clip_by_global_norm", "constant",
           "exponential_decay", "cosine_decay", "warmup_cosine_decay", "piecewise_constant"]

Schedule = Callable[[Any], Any]  # count (float64 scalar array) -> learning rate (float64 scalar)


def _abs_sq(g):
    """|g|^2: g * g, or Re(g conj(g)) for a complex g (optax's abs_sq), so second moments of
    complex gradients stay real and non-negative."""
    if getattr(g, "dtype", None) in (_core.complex64, _core.complex128):
        return _core._real(g * _core._conj(g))
    return g * g


# ---- schedules (optax formulas); each maps the step count to a learning rate ------------


def constant(value: float) -> Schedule:
    value = float(value)
    return lambda count: value


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float, transition_begin: int = 0,
                      staircase: bool = False, end_value: Optional[float] = None) -> Schedule:
    if transition_steps <= 0:
        raise ValueError(f"exponential_decay: transition_steps must be positive, got {transition_steps}")

    def schedule(count):
        c = _core.maximum(_core.asarray(count, dtype=_core.float64) - transition_begin, 0.0)
        p = c / transition_steps
        if staircase:
            p = _core.floor(p)
        v = init_value * _core.power(_core.asarray(decay_rate, dtype=_core.float64), p)
        if end_value is not None:
            v = _core.maximum(v, end_value) if decay_rate < 1 else _core.minimum(v, end_value)
        return v
    return schedule


def cosine_decay(init_value: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0) -> Schedule:
    if decay_steps <= 0:
        raise ValueError(f"cosine_decay: decay_steps must be positive, got {decay_steps}")

    def schedule(count):
        c = _core.minimum(_core.asarray(count, dtype=_core.float64), float(decay_steps))
        cosine = 0.5 * (1.0 + _core.cos(math.pi * c / decay_steps))
        return init_value * ((1.0 - alpha) * cosine ** exponent + alpha)
    return schedule


def warmup_cosine_decay(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                        end_value: float = 0.0, exponent: float = 1.0) -> Schedule:
    if warmup_steps < 0 or decay_steps <= warmup_steps:
        raise ValueError("warmup_cosine_decay: need 0 <= warmup_steps < decay_steps")

    def schedule(count):
        c = _core.asarray(count, dtype=_core.float64)
        warm = init_value + (peak_value - init_value) * c / max(warmup_steps, 1)
        t = _core.minimum(_core.maximum(c - warmup_steps, 0.0), float(decay_steps - warmup_steps))
        cosine = 0.5 * (1.0 + _core.cos(math.pi * t / (decay_steps - warmup_steps)))
        decayed = end_value + (peak_value - end_value) * cosine ** exponent
        return _core.where(c < warmup_steps, warm, decayed)
    return schedule


def piecewise_constant(init_value: float, boundaries_and_scales: dict) -> Schedule:
    items = sorted((int(b), float(s)) for b, s in boundaries_and_scales.items())

    def schedule(count):
        c = _core.asarray(count, dtype=_core.float64)
        v = c * 0.0 + init_value
        for boundary, scale in items:
            v = _core.where(c >= boundary, v * scale, v)
        return v
    return schedule


def _schedule(learning_rate) -> Schedule:
    if callable(learning_rate):
        return learning_rate
    lr = float(learning_rate)
    if not lr > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate}")
    return lambda count: lr


# ---- clipping ---------------------------------------------------------------------------

def global_norm(tree) -> Any:
    """sqrt of the sum of squares of every leaf: the L2 norm of the leaves' L2 norms, each
    scaled against overflow and underflow (1e200-sized gradients have a finite norm),
    computed in float64 and returned in the leaves' float dtype (float32 for float32 leaves,
    as optax's; float64 when any leaf is float64 or none is a float)."""
    arrays = [_core.asarray(l) for l in _tree.leaves(tree) if l is not None]
    norms = [_core.norm(a.astype(_core.float64)) for a in arrays]
    if not norms:
        return _core.zeros((), dtype=_core.default_dtype())
    total = norms[0] if len(norms) == 1 else _core.norm(_core.stack(norms))
    floats = {a.dtype for a in arrays if a.dtype in (_core.float32, _core.float64)}
    return total.astype(_core.float32) if floats == {_core.float32} else total


def clip_by_global_norm(grads, max_norm: float):
    """grads scaled by min(1, max_norm / global_norm(grads)) (optax's clip_by_global_norm)."""
    if not max_norm > 0:
        raise ValueError(f"clip_by_global_norm: max_norm must be positive, got {max_norm}")
    norm = global_norm(grads)
    scale = _core.where(norm > max_norm, max_norm / _core.maximum(norm, 1e-300), 1.0)
    return _tree.map(lambda g: g * scale.astype(g.dtype) if g is not None else None, grads)


# ---- optimizers -------------------------------------------------------------------------

class AdamState(NamedTuple):
    count: Any  # float64 scalar array: steps taken
    mu: Any
    nu: Any


class SGDState(NamedTuple):
    count: Any
    trace: Any = None  # the momentum buffer (a pytree like params) when momentum is set


def _check_grads(params, grads, name):
    p_leaves, p_def = _tree.flatten(params)
    g_leaves, g_def = _tree.flatten(grads)
    if p_def != g_def:
        raise ValueError(f"{name}: gradients have structure {g_def}, parameters {p_def}")
    for i, (p, g) in enumerate(zip(p_leaves, g_leaves)):
        ps, gs = tuple(getattr(p, "shape", ())), tuple(getattr(g, "shape", ()))
        if ps != gs:
            raise ValueError(f"{name}: gradient shape {list(gs)} does not match parameter leaf {i} of shape {list(ps)}")


def _gradients_for(params, grads, name):
    """v0.1's dictionary step: a dict of gradients may hold more keys than the parameters
    (a helper's gradients of the data inputs too); those are ignored, a missing one raises."""
    if isinstance(params, dict) and isinstance(grads, dict) and grads.keys() != params.keys():
        for k in params:
            if k not in grads:
                raise ValueError(f'{name}: missing gradient for "{k}"')
        return {k: grads[k] for k in params}
    return grads


class _Stateful:
    """The stateful `step` convenience shared by the optimizers: the state lives on the
    object (as flat leaves) and the update runs as one compiled program whose arguments are
    the flat leaves, so a step costs one cached jit call, not a pytree signature check."""

    _flat_update = None
    _flat_def = None
    _flat_state = None
    _state_def = None

    _flat_key = None

    def step(self, params, grads):
        grads = _gradients_for(params, grads, type(self).__name__ + ".step")
        # Fast path: plain containers of arrays, flattened and keyed in C++; gradients must
        # have the parameters' structure, shapes and dtypes.
        fp, fg = _core.flatten_arrays(params), _core.flatten_arrays(grads)
        if fp is not None and fg is not None and fp[0] == fg[0] == self._flat_key:
            n = len(fp[1])
            outs = self._flat_update(*fp[1], *fg[1], *self._flat_state)
            self._flat_state = list(outs[n:])
            return _tree.unflatten(self._flat_def, outs[:n])
        p_leaves, p_def = _tree.flatten(params)
        g_leaves, g_def = _tree.flatten(grads)
        if g_def != p_def:
            raise ValueError(f"{type(self).__name__}.step: gradients have structure {g_def}, parameters {p_def}")
        n = len(p_leaves)
        self._flat_key = fp[0] if fp is not None and fg is not None and fp[0] == fg[0] else None
        if self._flat_update is None or self._flat_def != p_def:
            state = self.init(params)
            s_leaves, s_def = _tree.flatten(state)
            self._flat_def, self._state_def, self._flat_state = p_def, s_def, s_leaves
            self._flat_update = _jit(flat_update_fn(self.update, p_def, s_def))
        outs = self._flat_update(*p_leaves, *g_leaves, *self._flat_state)
        self._flat_state = list(outs[n:])
        return _tree.unflatten(p_def, outs[:n])

    @property
    def state(self):
        """The current optimizer state (None before the first step)."""
        if self._flat_state is None:
            return None
        return _tree.unflatten(self._state_def, self._flat_state)


class Adam(_Stateful):
    """Adam (optax's formulas). beta1/beta2/epsilon are the v0.1 spellings of b1/b2/eps
    (qb.Adam is this class, with its stateful .step(params, grads))."""

    def __init__(self, learning_rate: Union[float, Schedule] = 1e-3, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, clip_norm: Optional[float] = None, weight_decay: float = 0.0, *,
                 beta1: Optional[float] = None, beta2: Optional[float] = None, epsilon: Optional[float] = None):
        b1 = b1 if beta1 is None else beta1
        b2 = b2 if beta2 is None else beta2
        eps = eps if epsilon is None else epsilon
        self.learning_rate = _schedule(learning_rate)
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"Adam: b1 and b2 must be in [0, 1), got {b1}, {b2}")
        if not eps > 0:
            raise ValueError(f"Adam: eps must be positive, got {eps}")
        if clip_norm is not None and not clip_norm > 0:
            raise ValueError(f"Adam: clip_norm must be positive, got {clip_norm}")
        self.b1, self.b2, self.eps = float(b1), float(b2), float(eps)
        self.clip_norm = clip_norm
        self.weight_decay = float(weight_decay)

    def init(self, params) -> AdamState:
        zeros = _tree.map(lambda p: _core.zeros_like(p), params)
        return AdamState(_core.zeros((), dtype=_core.float64), zeros, zeros)

    def update(self, params, grads, state: AdamState):
        """(new params, new state): a pure function of its arguments (jit-able)."""
        _check_grads(params, grads, type(self).__name__ + ".update")
        if self.clip_norm is not None:
            grads = clip_by_global_norm(grads, self.clip_norm)
        count = state.count + 1.0
        b1, b2 = self.b1, self.b2
        mu = _tree.map(lambda m, g: b1 * m + (1.0 - b1) * g, state.mu, grads)
        nu = _tree.map(lambda v, g: b2 * v + (1.0 - b2) * _abs_sq(g), state.nu, grads)
        c1 = 1.0 - _core.power(_core.asarray(b1, dtype=_core.float64), count)
        c2 = 1.0 - _core.power(_core.asarray(b2, dtype=_core.float64), count)
        lr = _core.asarray(self.learning_rate(state.count), dtype=_core.float64)
        eps, wd = self.eps, self.weight_decay

        def leaf(p, m, v):
            d = p.dtype
            step = (m / c1.astype(d)) / (_core.sqrt(v / c2.astype(d)) + eps)
            if wd:
                step = step + wd * p
            return p - lr.astype(d) * step

        new = _tree.map(leaf, params, mu, nu)
        return new, AdamState(count, mu, nu)


class AdamW(Adam):
    """Adam with decoupled weight decay (optax.adamw): p <- p - lr (m_hat / (sqrt(v_hat) + eps) + wd p)."""

    def __init__(self, learning_rate: Union[float, Schedule] = 1e-3, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 1e-4, clip_norm: Optional[float] = None):
        super().__init__(learning_rate, b1, b2, eps, clip_norm=clip_norm, weight_decay=weight_decay)


class SGD(_Stateful):
    """Stochastic gradient descent, with optax.sgd's momentum (trace = g + momentum * trace;
    the step is the trace, or g + momentum * trace with nesterov)."""

    def __init__(self, learning_rate: Union[float, Schedule] = 1e-2, clip_norm: Optional[float] = None,
                 momentum: Optional[float] = None, nesterov: bool = False):
        self.learning_rate = _schedule(learning_rate)
        self.clip_norm = clip_norm
        if momentum is not None and not 0.0 <= float(momentum) <= 1.0:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}")
        if nesterov and momentum is None:
            raise ValueError("SGD: nesterov=True needs a momentum")
        self.momentum = None if momentum is None else float(momentum)
        self.nesterov = bool(nesterov)

    def init(self, params) -> SGDState:
        count = _core.zeros((), dtype=_core.float64)
        if self.momentum is None:
            return SGDState(count)
        return SGDState(count, _tree.map(lambda p: _core.zeros_like(_core.asarray(p)), params))

    def update(self, params, grads, state: SGDState):
        _check_grads(params, grads, "SGD.update")
        if self.clip_norm is not None:
            grads = clip_by_global_norm(grads, self.clip_norm)
        lr = _core.asarray(self.learning_rate(state.count), dtype=_core.float64)
        if self.momentum is None:
            return _tree.map(lambda p, g: p - lr.astype(p.dtype) * g, params, grads), SGDState(state.count + 1.0)
        if state.trace is None:
            raise ValueError("SGD.update: this state has no momentum buffer; make it with this optimizer's init")
        mu = self.momentum
        trace = _tree.map(lambda g, t: g + mu * t, grads, state.trace)
        steps = _tree.map(lambda g, t: g + mu * t, grads, trace) if self.nesterov else trace
        new = _tree.map(lambda p, s: p - lr.astype(p.dtype) * s, params, steps)
        return new, SGDState(state.count + 1.0, trace)
