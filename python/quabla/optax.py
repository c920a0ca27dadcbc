"""quabla.optax: optax's gradient transformations, for code ported from JAX
(`import quabla.optax as optax`). A transformation is a pair of pure functions,
`init(params) -> state` and `update(updates, state, params=None) -> (updates, state)`;
`apply_updates(params, updates)` adds the updates. States are NamedTuples of arrays
(pytrees), so a jitted training step carries them; the formulas are optax's (qb.optim's
Adam, AdamW and SGD compute the same steps in one call)."""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

from . import _core
from . import optim as _optim
from . import tree as _tree

__all__ = ["GradientTransformation", "EmptyState", "ScaleByAdamState", "ScaleByRmsState", "ScaleByRssState",
           "TraceState", "ScaleByScheduleState", "apply_updates", "chain", "identity", "set_to_zero", "scale",
           "scale_by_learning_rate", "scale_by_schedule", "scale_by_adam", "scale_by_rms", "scale_by_rss", "trace",
           "add_decayed_weights", "clip", "clip_by_global_norm", "zero_nans", "global_norm", "adam", "adamw", "sgd",
           "rmsprop", "adagrad", "constant_schedule", "exponential_decay", "cosine_decay_schedule",
           "warmup_cosine_decay_schedule", "piecewise_constant_schedule", "linear_schedule", "polynomial_schedule",
           "join_schedules", "masked", "MaskedState", "multi_transform", "MultiTransformState", "inject_hyperparams", "InjectHyperparamsState", "l2_loss",
           "squared_error", "huber_loss", "log_cosh", "softmax_cross_entropy",
           "softmax_cross_entropy_with_integer_labels", "sigmoid_binary_cross_entropy", "cosine_similarity",
           "cosine_distance"]


class GradientTransformation(NamedTuple):
    init: Callable[[Any], Any]
    update: Callable[..., Any]


class EmptyState(NamedTuple):
    pass


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByScheduleState(NamedTuple):
    count: Any


def _zeros_like(params):
    return _tree.map(lambda p: _core.zeros_like(_core.asarray(p)), params)


def _count():
    return _core.zeros((), dtype=_core.int32)


def _tmap(fn, *trees):
    return _tree.map(lambda *xs: None if xs[0] is None else fn(*xs), *trees)


def apply_updates(params, updates):
    """params + updates, leaf by leaf, in each parameter's dtype."""
    return _tree.map(lambda p, u: p if u is None else (_core.asarray(p) + _core.asarray(u)).astype(
        _core.asarray(p).dtype), params, updates)


def chain(*transforms):
    """The transformations applied in order; the state is the tuple of their states."""
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if len(state) != len(transforms):
            raise ValueError(f"optax.chain: the state has {len(state)} parts for {len(transforms)} transformations")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


def identity():
    return GradientTransformation(lambda params: EmptyState(), lambda updates, state, params=None: (updates, state))


def set_to_zero():
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (_tmap(_core.zeros_like, updates), state))


def scale(step_size: float):
    """updates * step_size."""
    def update(updates, state, params=None):
        return _tmap(lambda u: u * step_size, updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Callable):
    """updates * step_size_fn(count), count the number of updates before this one."""
    def update(updates, state, params=None):
        s = _core.asarray(step_size_fn(state.count))
        return _tmap(lambda u: u * s.astype(u.dtype), updates), ScaleByScheduleState(state.count + 1)
    return GradientTransformation(lambda params: ScaleByScheduleState(_count()), update)


def scale_by_learning_rate(learning_rate, *, flip_sign: bool = True):
    """updates * -learning_rate (a float or a schedule of the step count)."""
    sign = -1.0 if flip_sign else 1.0
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * _core.asarray(learning_rate(count)))
    if isinstance(learning_rate, (int, float)):
        return scale(sign * float(learning_rate))
    lr = _core.asarray(learning_rate)  # an array (inject_hyperparams' values): multiplied as it is

    def update(updates, state, params=None):
        return _tmap(lambda u: u * (sign * lr).astype(u.dtype), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0):
    """Adam's step direction: bias-corrected m / (sqrt(v + eps_root) + eps)."""
    def init(params):
        return ScaleByAdamState(_count(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tmap(lambda m, g: b1 * m + (1.0 - b1) * g, state.mu, updates)
        nu = _tmap(lambda v, g: b2 * v + (1.0 - b2) * (g * g), state.nu, updates)
        count = state.count + 1
        c = count.astype(_core.float64)
        c1 = 1.0 - _core.power(_core.asarray(b1, dtype=_core.float64), c)
        c2 = 1.0 - _core.power(_core.asarray(b2, dtype=_core.float64), c)
        out = _tmap(lambda m, v: (m / c1.astype(m.dtype)) / (_core.sqrt(v / c2.astype(v.dtype) + eps_root) + eps),
                    mu, nu)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0, eps_in_sqrt: bool = True):
    """updates / sqrt(the running mean of their squares + eps)."""
    def init(params):
        return ScaleByRmsState(_tree.map(lambda p: _core.full_like(_core.asarray(p), initial_scale), params))

    def update(updates, state, params=None):
        nu = _tmap(lambda v, g: decay * v + (1.0 - decay) * (g * g), state.nu, updates)
        if eps_in_sqrt:
            out = _tmap(lambda g, v: g / _core.sqrt(v + eps), updates, nu)
        else:
            out = _tmap(lambda g, v: g / (_core.sqrt(v) + eps), updates, nu)
        return out, ScaleByRmsState(nu)
    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value: float = 0.1, eps: float = 1e-7):
    """updates / sqrt(the running sum of their squares + eps) (AdaGrad)."""
    def init(params):
        return ScaleByRssState(_tree.map(lambda p: _core.full_like(_core.asarray(p), initial_accumulator_value),
                                         params))

    def update(updates, state, params=None):
        sos = _tmap(lambda s, g: s + g * g, state.sum_of_squares, updates)
        out = _tmap(lambda g, s: _core.where(s > 0, g / _core.sqrt(s + eps), _core.zeros_like(g)), updates, sos)
        return out, ScaleByRssState(sos)
    return GradientTransformation(init, update)


def trace(decay: float, nesterov: bool = False):
    """Momentum: trace = updates + decay * trace; the update is the trace (or, with
    nesterov, updates + decay * trace)."""
    def init(params):
        return TraceState(_zeros_like(params))

    def update(updates, state, params=None):
        t = _tmap(lambda g, tr: g + decay * tr, updates, state.trace)
        out = _tmap(lambda g, tr: g + decay * tr, updates, t) if nesterov else t
        return out, TraceState(t)
    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay: float = 0.0, mask=None):
    """updates + weight_decay * params (where mask, a pytree of bools or a function of the
    params giving one, is True)."""
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("optax.add_decayed_weights: update needs params (pass update(grads, state, params))")
        m = mask(params) if callable(mask) else mask
        if m is None:
            return _tmap(lambda g, p: g + weight_decay * p, updates, params), state
        return _tree.map(lambda g, p, on: g + weight_decay * p if on else g, updates, params, m), state
    return GradientTransformation(lambda params: EmptyState(), update)


def clip(max_delta: float):
    """Each update clipped to [-max_delta, max_delta]."""
    def update(updates, state, params=None):
        return _tmap(lambda g: _core.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def clip_by_global_norm(max_norm: float):
    """Updates scaled down so their global norm is at most max_norm."""
    def update(updates, state, params=None):
        return _optim.clip_by_global_norm(updates, max_norm), state
    return GradientTransformation(lambda params: EmptyState(), update)


def zero_nans():
    """NaN updates replaced by 0."""
    def update(updates, state, params=None):
        return _tmap(lambda g: _core.where(_core.isnan(g), _core.zeros_like(g), g), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


global_norm = _optim.global_norm


class MaskedState(NamedTuple):
    inner_state: Any


def masked(inner, mask):
    """inner applied where mask (a pytree of bools like the params, or a function of the
    params giving one) is True; other updates pass through unchanged. (The inner state
    covers every leaf; the masked-out ones are never used.)"""
    def init(params):
        return MaskedState(inner.init(params))

    def update(updates, state, params=None):
        m = mask(params if params is not None else updates) if callable(mask) else mask
        new, inner_state = inner.update(updates, state.inner_state, params)
        out = _tree.map(lambda u, n, on: n if on else u, updates, new, m)
        return out, MaskedState(inner_state)
    return GradientTransformation(init, update)


class MultiTransformState(NamedTuple):
    inner_states: Any  # dict: label -> that transformation's state


def multi_transform(transforms: dict, param_labels):
    """Each parameter updated by transforms[label], its label from param_labels (a pytree
    of labels like the params, or a function of the params giving one). (Each inner state
    covers every leaf; a transformation's results are used only for its own labels.)"""
    transforms = dict(transforms)

    def labels_of(params):
        labels = param_labels(params) if callable(param_labels) else param_labels
        missing = {l for l in _tree.leaves(labels)} - set(transforms)
        if missing:
            raise ValueError(f"optax.multi_transform: labels {sorted(map(str, missing))} have no transformation")
        return labels

    def init(params):
        labels_of(params)
        return MultiTransformState({name: t.init(params) for name, t in transforms.items()})

    def update(updates, state, params=None):
        labels = labels_of(params if params is not None else updates)
        out, states = updates, {}
        for name, t in transforms.items():
            new, states[name] = t.update(updates, state.inner_states[name], params)
            out = _tree.map(lambda o, n, lab: n if lab == name else o, out, new, labels)
        return out, MultiTransformState(states)
    return GradientTransformation(init, update)


class InjectHyperparamsState(NamedTuple):
    count: Any
    hyperparams: Any  # dict: name -> current value (an array)
    inner_state: Any


def inject_hyperparams(inner_factory: Callable, static_args=(), hyperparam_dtype=None):
    """optax.inject_hyperparams: inner_factory's numeric arguments (and schedules, evaluated at
    the step count) live in the state's `hyperparams` dict, so they can be read (a logged
    learning rate) or changed between steps; static_args are passed as they are."""
    static = {static_args} if isinstance(static_args, str) else set(static_args)

    def factory(*args, **kwargs):
        if args:
            raise TypeError("optax.inject_hyperparams(...): pass the hyperparameters by name")
        fixed = {k: v for k, v in kwargs.items() if k in static or not (callable(v) or _is_number(v))}
        dynamic = {k: v for k, v in kwargs.items() if k not in fixed}

        def current(state_count, stored):
            values = {}
            for k, v in dynamic.items():
                values[k] = _core.asarray(v(state_count)) if callable(v) else stored[k]
            return values

        def as_array(v):
            a = _core.asarray(v)
            return a.astype(hyperparam_dtype) if hyperparam_dtype is not None else a.astype(_core.float64)

        def init(params):
            count = _count()
            hyper = {k: as_array(v(count) if callable(v) else v) for k, v in dynamic.items()}
            return InjectHyperparamsState(count, hyper, inner_factory(**fixed, **hyper).init(params))

        def update(updates, state, params=None):
            hyper = {k: as_array(v) for k, v in current(state.count, state.hyperparams).items()}
            inner = inner_factory(**fixed, **hyper)
            new, inner_state = inner.update(updates, state.inner_state, params)
            return new, InjectHyperparamsState(state.count + 1, hyper, inner_state)
        return GradientTransformation(init, update)
    return factory


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) or isinstance(v, _core.Array)


# ---- losses (optax's) -------------------------------------------------------------------------

def _err(predictions, targets):
    p = _core.asarray(predictions)
    return p if targets is None else p - _core.asarray(targets).astype(p.dtype)


def l2_loss(predictions, targets=None):
    """0.5 (predictions - targets)^2, elementwise."""
    e = _err(predictions, targets)
    return 0.5 * e * e


def squared_error(predictions, targets=None):
    """(predictions - targets)^2, elementwise."""
    e = _err(predictions, targets)
    return e * e


def huber_loss(predictions, targets=None, *, delta: float = 1.0):
    """0.5 e^2 where |e| <= delta, delta (|e| - delta / 2) beyond, elementwise."""
    e = _err(predictions, targets)
    a = _core.abs(e)
    return _core.where(a <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))


def log_cosh(predictions, targets=None):
    """log(cosh(e)), without overflow, elementwise."""
    e = _err(predictions, targets)
    return _core.logaddexp(e, -e) - math.log(2.0)


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """-sum(labels * log_softmax(logits)) over axis."""
    from . import nn
    logits = _core.asarray(logits)
    logp = nn.log_softmax(logits, axis=axis, where=where)
    terms = _core.asarray(labels).astype(logp.dtype) * logp
    if where is not None:
        terms = _core.where(_core.asarray(where), terms, _core.zeros_like(terms))
    return -_core.sum(terms, axis=axis)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1):
    """logsumexp(logits) - logits[label] over axis, for integer class labels."""
    from ._indexing import take_along_axis
    logits = _core.asarray(logits)
    axis = axis % logits.ndim
    picked = take_along_axis(logits, _core.expand_dims(_core.asarray(labels), axis), axis=axis)
    return _core.logsumexp(logits, axis=axis) - _core.squeeze(picked, axis=axis)


def sigmoid_binary_cross_entropy(logits, labels):
    """-labels log sigmoid(logits) - (1 - labels) log sigmoid(-logits), elementwise."""
    logits = _core.asarray(logits)
    labels = _core.asarray(labels).astype(logits.dtype)
    return -labels * -_core.softplus(-logits) - (1.0 - labels) * -_core.softplus(logits)


def cosine_similarity(predictions, targets, epsilon: float = 0.0):
    """The cosine of the angle between predictions and targets along the last axis."""
    p, t = _core.asarray(predictions), _core.asarray(targets)
    num = _core.sum(p * t, axis=-1)
    den = _core.sqrt(_core.maximum(_core.sum(p * p, axis=-1), epsilon * epsilon)) * \
        _core.sqrt(_core.maximum(_core.sum(t * t, axis=-1), epsilon * epsilon))
    return num / den


def cosine_distance(predictions, targets, epsilon: float = 0.0):
    return 1.0 - cosine_similarity(predictions, targets, epsilon)


# ---- optimizers ------------------------------------------------------------------------------

def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0):
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
          weight_decay: float = 1e-4, mask=None):
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def sgd(learning_rate, momentum: Optional[float] = None, nesterov: bool = False):
    # optax's structure: (trace or identity, learning rate), so states match.
    return chain(identity() if momentum is None else trace(momentum, nesterov), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            eps_in_sqrt: bool = True, centered: bool = False, momentum: Optional[float] = None,
            nesterov: bool = False):
    """optax.rmsprop: the learning rate applies before the momentum trace, as optax's."""
    if centered:
        raise NotImplementedError("optax.rmsprop: centered=True is not supported yet")
    return chain(scale_by_rms(decay, eps, initial_scale, eps_in_sqrt), scale_by_learning_rate(learning_rate),
                 identity() if momentum is None else trace(momentum, nesterov))


def adagrad(learning_rate, initial_accumulator_value: float = 0.1, eps: float = 1e-7):
    return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))


# ---- schedules (optax's names; each maps the step count to a value) ------------------------

def constant_schedule(value: float):
    return _optim.constant(value)


exponential_decay = _optim.exponential_decay


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0):
    return _optim.cosine_decay(init_value, decay_steps, alpha, exponent)


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                                 end_value: float = 0.0, exponent: float = 1.0):
    return _optim.warmup_cosine_decay(init_value, peak_value, warmup_steps, decay_steps, end_value, exponent)


def piecewise_constant_schedule(init_value: float, boundaries_and_scales: Optional[dict] = None):
    return _optim.piecewise_constant(init_value, boundaries_and_scales or {})


def polynomial_schedule(init_value: float, end_value: float, power: float, transition_steps: int,
                        transition_begin: int = 0):
    """From init_value to end_value over transition_steps as (1 - t)^power, after transition_begin."""
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        c = _core.clip(_core.asarray(count).astype(_core.float64) - transition_begin, 0.0, float(transition_steps))
        frac = 1.0 - c / transition_steps
        return (init_value - end_value) * frac ** power + end_value
    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int, transition_begin: int = 0):
    return polynomial_schedule(init_value, end_value, 1.0, transition_steps, transition_begin)


def join_schedules(schedules, boundaries):
    """schedules[i] from boundaries[i - 1] on, each counting from its own start."""
    schedules, boundaries = list(schedules), [int(b) for b in boundaries]
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"optax.join_schedules: {len(schedules)} schedules need {len(schedules) - 1} boundaries, "
                         f"got {len(boundaries)}")

    def schedule(count):
        c = _core.asarray(count).astype(_core.float64)
        value = _core.asarray(schedules[0](c), dtype=_core.float64)
        for start, sched in zip(boundaries, schedules[1:]):
            value = _core.where(c >= start, _core.asarray(sched(c - start), dtype=_core.float64), value)
        return value
    return schedule

