"""quabla.optax: optax's gradient transformations, for code ported from JAX
(`import quabla.optax as optax`). A transformation is a pair of pure functions,
`init(params) -> state` and `update(updates, state, params=None) -> (updates, state)`;
`apply_updates(params, updates)` adds the updates. States are NamedTuples of arrays
(pytrees), so a jitted training step carries them; the formulas are optax's (qb.optim's
Adam, AdamW and SGD compute the same steps in one call). The losses live in
quabla.optax.losses (python/quabla/_optax_losses.py) and at the top level, as optax's."""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

from . import _core
from . import optim as _optim
from . import tree as _tree

__all__ = ["FactoredState", "scale_by_factored_rms", "adafactor", "GradientTransformation", "EmptyState", "ScaleByAdamState", "ScaleByRmsState", "ScaleByRssState",
           "TraceState", "ScaleByScheduleState", "apply_updates", "chain", "identity", "set_to_zero", "scale",
           "scale_by_learning_rate", "scale_by_schedule", "scale_by_adam", "scale_by_rms", "scale_by_rss", "trace",
           "add_decayed_weights", "clip", "clip_by_global_norm", "zero_nans", "ZeroNansState", "global_norm", "adam", "adamw", "sgd",
           "rmsprop", "adagrad", "constant_schedule", "exponential_decay", "cosine_decay_schedule",
           "warmup_cosine_decay_schedule", "piecewise_constant_schedule", "linear_schedule", "polynomial_schedule",
           "join_schedules", "masked", "MaskedState", "multi_transform", "MultiTransformState", "inject_hyperparams", "InjectHyperparamsState", "l2_loss",
           "squared_error", "huber_loss", "log_cosh", "softmax_cross_entropy",
           "softmax_cross_entropy_with_integer_labels", "sigmoid_binary_cross_entropy", "cosine_similarity",
           "cosine_distance"]



_abs_sq = _optim._abs_sq  # |g|^2, real for complex gradients (optax's abs_sq)

class GradientTransformation(NamedTuple):
    init: Callable[[Any], Any]
    update: Callable[..., Any]


class GradientTransformationExtraArgs(GradientTransformation):
    """A GradientTransformation whose update takes extra keyword arguments
    (update(updates, state, params=None, **extra_args)), as optax's: chain passes them on."""
    __slots__ = ()


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

    def update(updates, state, params=None, **extra_args):
        if len(state) != len(transforms):
            raise ValueError(f"optax.chain: the state has {len(state)} parts for {len(transforms)} transformations")
        new_state = []
        for t, s in zip(transforms, state):
            # as optax: extra arguments (value=, grad=, value_fn=, ...) reach the transformations
            # that take them (GradientTransformationExtraArgs); the others never see them
            if isinstance(t, GradientTransformationExtraArgs):
                updates, s = t.update(updates, s, params, **extra_args)
            else:
                updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformationExtraArgs(init, update)


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


def _cast(tree, dtype):
    # the leaves of tree in dtype (an accumulator's mu_dtype=); unchanged for dtype None
    return tree if dtype is None else _tmap(lambda x: x.astype(dtype), tree)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None, *,
                  nesterov: bool = False):
    """Adam's step direction: bias-corrected m / (sqrt(v + eps_root) + eps). With nesterov,
    NAdam's: m-hat = b1 m / (1 - b1^(t+1)) + (1 - b1) g / (1 - b1^t) (scale_by_nadam).
    mu_dtype: the dtype the first moment is stored in (None: the parameters')."""
    if nesterov:
        return scale_by_nadam(b1, b2, eps, eps_root, mu_dtype)

    def init(params):
        return ScaleByAdamState(_count(), _cast(_zeros_like(params), mu_dtype), _zeros_like(params))

    def update(updates, state, params=None):
        # (a mu_dtype= first moment is computed in the updates' dtype, stored in its own)
        mu = _tmap(lambda m, g: (b1 * m).astype(g.dtype) + (1.0 - b1) * g, state.mu, updates)
        nu = _tmap(lambda v, g: b2 * v + (1.0 - b2) * _abs_sq(g), state.nu, updates)
        count = state.count + 1
        c = count.astype(_core.float64)
        c1 = 1.0 - _core.power(_core.asarray(b1, dtype=_core.float64), c)
        c2 = 1.0 - _core.power(_core.asarray(b2, dtype=_core.float64), c)
        out = _tmap(lambda m, v: (m / c1.astype(m.dtype)) / (_core.sqrt(v / c2.astype(v.dtype) + eps_root) + eps),
                    mu, nu)
        return out, ScaleByAdamState(count, _cast(mu, mu_dtype), nu)
    return GradientTransformation(init, update)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0, eps_in_sqrt: bool = True):
    """updates / sqrt(the running mean of their squares + eps)."""
    def init(params):
        return ScaleByRmsState(_tree.map(lambda p: _core.full_like(_core.asarray(p), initial_scale), params))

    def update(updates, state, params=None):
        nu = _tmap(lambda v, g: decay * v + (1.0 - decay) * _abs_sq(g), state.nu, updates)
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
        sos = _tmap(lambda s, g: s + _abs_sq(g), state.sum_of_squares, updates)
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


class ZeroNansState(NamedTuple):
    found_nan: Any  # per leaf, a bool scalar: whether the last update had a NaN there


def zero_nans():
    """NaN updates replaced by 0; the state records, per leaf, whether the last update had a
    NaN (optax.ZeroNansState)."""
    def init(params):
        return ZeroNansState(_tree.map(lambda p: _core.asarray(False), params))

    def update(updates, state, params=None):
        found = _tmap(lambda g: _core.any(_core.isnan(g)), updates)
        return _tmap(lambda g: _core.where(_core.isnan(g), _core.zeros_like(g), g), updates), ZeroNansState(found)
    return GradientTransformation(init, update)


global_norm = _optim.global_norm


class MaskedState(NamedTuple):
    inner_state: Any


def masked(inner, mask):
    """inner applied where mask (a pytree of bools like the params, a single bool for all of
    them, or a function of the params giving either) is True; other updates pass through
    unchanged. (The inner state covers every leaf; the masked-out ones are never used.)"""
    def init(params):
        return MaskedState(inner.init(params))

    def update(updates, state, params=None):
        m = mask(params if params is not None else updates) if callable(mask) else mask
        if isinstance(m, bool):
            m = _tree.map(lambda _: m, updates)
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


# ---- losses (optax's; python/quabla/_optax_losses.py, also as quabla.optax.losses) ------------

from . import _optax_losses as losses  # noqa: E402
import sys as _sys  # noqa: E402
# so that `import quabla.optax.losses` and `from quabla.optax.losses import ...` work too
_sys.modules.setdefault(__name__ + ".losses", losses)
from ._optax_losses import (  # noqa: E402
    l2_loss, squared_error, huber_loss, log_cosh, softmax_cross_entropy, softmax_cross_entropy_with_integer_labels,
    sigmoid_binary_cross_entropy, cosine_similarity, cosine_distance, kl_divergence, kl_divergence_with_log_targets,
    convex_kl_divergence, generalized_kl_divergence, hinge_loss, multiclass_hinge_loss, perceptron_loss,
    multiclass_perceptron_loss, sigmoid_focal_loss, smooth_labels, poly_loss_cross_entropy,
    safe_softmax_cross_entropy, triplet_margin_loss, dice_loss, binary_dice_loss, multiclass_generalized_dice_loss,
    ntxent, sparsemax_loss, multiclass_sparsemax_loss, ranking_softmax_loss,
)


# ---- optimizers ------------------------------------------------------------------------------

def adam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None,
         *, nesterov: bool = False):
    """optax.adam; nesterov=True is NAdam (optax.nadam)."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None,
          weight_decay: float = 1e-4, mask=None, *, nesterov: bool = False):
    """optax.adamw (optax's argument order: mu_dtype before weight_decay); nesterov=True is
    NAdamW (optax.nadamw)."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


def sgd(learning_rate, momentum: Optional[float] = None, nesterov: bool = False):
    # optax's structure: (trace or identity, learning rate), so states match.
    return chain(identity() if momentum is None else trace(momentum, nesterov), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
            eps_in_sqrt: bool = True, centered: bool = False, momentum: Optional[float] = None,
            nesterov: bool = False):
    """optax.rmsprop: the learning rate applies before the momentum trace, as optax's."""
    if centered:
        return chain(scale_by_stddev(decay, eps, initial_scale, eps_in_sqrt), scale_by_learning_rate(learning_rate),
                     identity() if momentum is None else trace(momentum, nesterov))
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



# ---- more of optax: type aliases, transformations, optimizers, wrappers, schedules ------------

OptState = Any  # optax.OptState: a pytree of arrays
Params = Any  # optax.Params
Updates = Any  # optax.Updates
Schedule = Callable[[Any], Any]  # optax.Schedule: step count -> value
ScalarOrSchedule = Any  # optax.ScalarOrSchedule: a float or a Schedule


def _bc(m, decay, count):
    # optax.tree.bias_correction of one leaf: m / (1 - decay ** count), in m's dtype.
    return m / (1.0 - _core.power(_core.asarray(decay, dtype=m.dtype), count.astype(m.dtype)))


def _ema(g, m, decay):
    # optax's (1 - decay) g + decay m, with decay * m in m's own dtype (a moment kept in
    # float32 for float64 updates is scaled in float32 first, as JAX's weak-float product is)
    return (1.0 - decay) * g + (decay * m).astype(g.dtype)


def _full_like(params, value):
    return _tree.map(lambda p: _core.full_like(_core.asarray(p), value), params)


def _nesterov_or_plain_mu_hat(nesterov, mu, updates, b1, count_inc):
    if nesterov:
        return _tmap(lambda m, g: b1 * _bc(m, b1, count_inc + 1) + (1.0 - b1) * _bc(g, b1, count_inc), mu, updates)
    return _tmap(lambda m: _bc(m, b1, count_inc), mu)


def scale_by_nadam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None):
    """scale_by_adam with Nesterov's momentum (optax.scale_by_adam(nesterov=True))."""
    def init(params):
        return ScaleByAdamState(_count(), _cast(_zeros_like(params), mu_dtype), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tmap(lambda g, m: _ema(g, m, b1), updates, state.mu)
        nu = _tmap(lambda g, v: _ema(_abs_sq(g), v, b2), updates, state.nu)
        c = state.count + 1
        mu_hat = _nesterov_or_plain_mu_hat(True, mu, updates, b1, c)
        out = _tmap(lambda m, v: m / (_core.sqrt(_bc(v, b2, c) + eps_root) + eps), mu_hat, nu)
        return out, ScaleByAdamState(c, _cast(mu, mu_dtype), nu)
    return GradientTransformation(init, update)


def scale_by_radam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
                   threshold: float = 5.0, *, nesterov: bool = False):
    """Rectified Adam's direction (optax.scale_by_radam): Adam's step times the variance
    rectification r once the approximated SMA length rho reaches threshold, else the
    bias-corrected momentum."""
    ro_inf = 2.0 / (1.0 - b2) - 1.0

    def init(params):
        return ScaleByAdamState(_count(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tmap(lambda g, m: _ema(g, m, b1), updates, state.mu)
        nu = _tmap(lambda g, v: _ema(_abs_sq(g), v, b2), updates, state.nu)
        c = state.count + 1
        mu_hat = _nesterov_or_plain_mu_hat(nesterov, mu, updates, b1, c)

        def leaf(m, v):
            cf = c.astype(m.dtype)
            b2t = _core.power(_core.asarray(b2, dtype=m.dtype), cf)
            ro = ro_inf - 2.0 * cf * b2t / (1.0 - b2t)
            ok = ro >= threshold
            safe_ro = _core.where(ok, ro, ro_inf)  # the rectifier's sqrt only where it is used
            r = _core.sqrt((safe_ro - 4.0) * (safe_ro - 2.0) * ro_inf / ((ro_inf - 4.0) * (ro_inf - 2.0) * safe_ro))
            return _core.where(ok, r * m / (_core.sqrt(_bc(v, b2, c) + eps_root) + eps), m)
        return _tmap(leaf, mu_hat, nu), ScaleByAdamState(c, mu, nu)
    return GradientTransformation(init, update)


class ScaleByBeliefState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_belief(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16, eps_root: float = 1e-16, *,
                    nesterov: bool = False):
    """AdaBelief's direction (optax.scale_by_belief): the second moment is that of the
    prediction error g - mu."""
    def init(params):
        return ScaleByBeliefState(_count(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tmap(lambda g, m: _ema(g, m, b1), updates, state.mu)
        nu = _tmap(lambda g, m, v: _ema((g - m) * (g - m), v, b2) + eps_root, updates, mu, state.nu)
        c = state.count + 1
        mu_hat = _nesterov_or_plain_mu_hat(nesterov, mu, updates, b1, c)
        return (_tmap(lambda m, v: m / (_core.sqrt(_bc(v, b2, c)) + eps), mu_hat, nu),
                ScaleByBeliefState(c, mu, nu))
    return GradientTransformation(init, update)


def scale_by_yogi(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-3, eps_root: float = 0.0,
                  initial_accumulator_value: float = 1e-6):
    """Yogi's direction (optax.scale_by_yogi): nu moves by (1 - b2) g^2 towards g^2's sign."""
    def init(params):
        return ScaleByAdamState(_count(), _full_like(params, initial_accumulator_value),
                                _full_like(params, initial_accumulator_value))

    def update(updates, state, params=None):
        mu = _tmap(lambda g, m: _ema(g, m, b1), updates, state.mu)
        nu = _tmap(lambda g, v: v - (1.0 - b2) * _core.sign(v - _abs_sq(g)) * _abs_sq(g), updates, state.nu)
        c = state.count + 1
        return (_tmap(lambda m, v: _bc(m, b1, c) / (_core.sqrt(_bc(v, b2, c) + eps_root) + eps), mu, nu),
                ScaleByAdamState(c, mu, nu))
    return GradientTransformation(init, update)


def scale_by_adamax(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """AdaMax's direction (optax.scale_by_adamax): bias-corrected mu over the infinity-norm
    moment max(b2 nu, |g| + eps)."""
    def init(params):
        return ScaleByAdamState(_count(), _zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        c = state.count + 1
        mu = _tmap(lambda g, m: _ema(g, m, b1), updates, state.mu)
        nu = _tmap(lambda g, v: _core.maximum(b2 * v, _core.abs(g) + eps), updates, state.nu)
        return _tmap(lambda m, v: _bc(m, b1, c) / v, mu, nu), ScaleByAdamState(c, mu, nu)
    return GradientTransformation(init, update)


class ScaleByAdaDeltaState(NamedTuple):
    e_g: Any
    e_x: Any


def scale_by_adadelta(rho: float = 0.9, eps: float = 1e-6):
    """AdaDelta's direction (optax.scale_by_adadelta)."""
    def init(params):
        return ScaleByAdaDeltaState(_zeros_like(params), _zeros_like(params))

    def update(updates, state, params=None):
        e_g = _tmap(lambda g, e: _ema(_abs_sq(g), e, rho), updates, state.e_g)
        out = _tmap(lambda g, eg, ex: _core.sqrt(ex + eps) / _core.sqrt(eg + eps) * g, updates, e_g, state.e_x)
        e_x = _tmap(lambda u, e: _ema(u * u, e, rho), out, state.e_x)
        return out, ScaleByAdaDeltaState(e_g, e_x)
    return GradientTransformation(init, update)


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


def scale_by_lion(b1: float = 0.9, b2: float = 0.99, mu_dtype=None):
    """Lion's direction (optax.scale_by_lion): sign((1 - b1) g + b1 mu), then mu tracks g
    with b2."""
    def init(params):
        mu = _zeros_like(params)
        return ScaleByLionState(_count(), mu if mu_dtype is None else _tmap(lambda m: m.astype(mu_dtype), mu))

    def update(updates, state, params=None):
        out = _tmap(lambda g, m: _core.sign((1.0 - b1) * g + (b1 * m).astype(g.dtype)), updates, state.mu)
        mu = _tmap(lambda g, m: _ema(g, m, b2), updates, state.mu)
        if mu_dtype is not None:
            mu = _tmap(lambda m: m.astype(mu_dtype), mu)
        return out, ScaleByLionState(state.count + 1, mu)
    return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm: float = 0.0, trust_coefficient: float = 1.0, eps: float = 0.0):
    """LAMB's layer-wise trust ratio (optax.scale_by_trust_ratio): each update times
    ||param|| / (||update|| + eps), or 1 where either norm is zero."""
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("optax.scale_by_trust_ratio: needs params; call update(updates, state, params)")

        def leaf(u, p):
            p = _core.asarray(p)
            pn = _core.maximum(_core.sqrt(_core.sum(p * p)), min_norm)
            un = _core.maximum(_core.sqrt(_core.sum(u * u)), min_norm)
            zero = (pn == 0.0) | (un == 0.0)
            return u * _core.where(zero, 1.0, trust_coefficient * pn / _core.where(zero, 1.0, un + eps)).astype(u.dtype)
        return _tmap(leaf, updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0, eps_in_sqrt: bool = True):
    """Centered RMSProp's scaling (optax.scale_by_stddev): g / sqrt(nu - mu^2 + eps)."""
    def init(params):
        return ScaleByRStdDevState(_zeros_like(params), _full_like(params, initial_scale))

    def update(updates, state, params=None):
        mu = _tmap(lambda g, m: _ema(g, m, decay), updates, state.mu)
        nu = _tmap(lambda g, v: _ema(_abs_sq(g), v, decay), updates, state.nu)
        if eps_in_sqrt:
            out = _tmap(lambda g, m, v: g / _core.sqrt(v - m * m + eps), updates, mu, nu)
        else:
            out = _tmap(lambda g, m, v: g / (_core.sqrt(v - m * m) + eps), updates, mu, nu)
        return out, ScaleByRStdDevState(mu, nu)
    return GradientTransformation(init, update)


class ScaleByNovogradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_novograd(b1: float = 0.9, b2: float = 0.25, eps: float = 1e-8, eps_root: float = 0.0,
                      weight_decay: float = 0.0, mu_dtype=None):
    """NovoGrad's direction (optax.scale_by_novograd): per-leaf second moments of ||g||^2."""
    def init(params):
        mu = _zeros_like(params)
        nu = _tree.map(lambda p: _core.zeros((), dtype=_core.asarray(p).dtype), params)
        return ScaleByNovogradState(_count(), mu, nu)

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("optax.scale_by_novograd: needs params; call update(updates, state, params)")
        c = state.count + 1
        first = c == 1
        nu = _tmap(lambda g, n: _core.where(first, _core.sum(_abs_sq(g)), _ema(_core.sum(_abs_sq(g)), n, b2)), updates,
                   state.nu)
        mu = _tmap(lambda g, p, n, m: (g / (_core.sqrt(n + eps_root) + eps) + weight_decay * _core.asarray(p))
                   + _core.where(first, 0.0, b1) * m, updates, params, nu, state.mu)
        if mu_dtype is not None:
            mu = _tmap(lambda m: m.astype(mu_dtype), mu)
        return mu, ScaleByNovogradState(c, mu, nu)
    return GradientTransformation(init, update)


def _lr(learning_rate):
    # optax: learning_rate=None is no scaling at all (not even the sign flip).
    return identity() if learning_rate is None else scale_by_learning_rate(learning_rate)


def nadam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None):
    return chain(scale_by_nadam(b1, b2, eps, eps_root, mu_dtype), scale_by_learning_rate(learning_rate))


def radam(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
          threshold: float = 5.0, *, nesterov: bool = False):
    return chain(scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16, eps_root: float = 1e-16, *,
              nesterov: bool = False):
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov), scale_by_learning_rate(learning_rate))


def yogi(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-3):
    return chain(scale_by_yogi(b1, b2, eps), scale_by_learning_rate(learning_rate))


def adamax(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    return chain(scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def adadelta(learning_rate=None, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
             weight_decay_mask=None):
    return chain(add_decayed_weights(weight_decay, weight_decay_mask), scale_by_adadelta(rho, eps), _lr(learning_rate))


def lion(learning_rate, b1: float = 0.9, b2: float = 0.99, mu_dtype=None, weight_decay: float = 1e-3, mask=None):
    return chain(scale_by_lion(b1, b2, mu_dtype), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6, eps_root: float = 0.0,
         weight_decay: float = 0.0, mask=None):
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


def novograd(learning_rate, b1: float = 0.9, b2: float = 0.25, eps: float = 1e-6, eps_root: float = 0.0,
             weight_decay: float = 0.0):
    return chain(scale_by_novograd(b1, b2, eps, eps_root, weight_decay), scale_by_learning_rate(learning_rate))


class EmaState(NamedTuple):
    count: Any
    ema: Any


def ema(decay: float, debias: bool = True, accumulator_dtype=None):
    """The exponential moving average of the updates (optax.ema), bias-corrected when debias."""
    def init(params):
        z = _zeros_like(params)
        return EmaState(_count(), z if accumulator_dtype is None else _tmap(lambda a: a.astype(accumulator_dtype), z))

    def update(updates, state, params=None):
        new = _tmap(lambda g, a: _ema(g, a, decay), updates, state.ema)
        c = state.count + 1
        out = _tmap(lambda a: _bc(a, decay, c), new) if debias else new
        if accumulator_dtype is not None:
            new = _tmap(lambda a: a.astype(accumulator_dtype), new)
        return out, EmaState(c, new)
    return GradientTransformation(init, update)


class ApplyIfFiniteState(NamedTuple):
    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def _select_tree(pred, on_true, on_false):
    return _tree.map(lambda a, b: _core.where(pred, _core.asarray(a), _core.asarray(b)).astype(_core.asarray(b).dtype),
                     on_true, on_false)


def apply_if_finite(inner, max_consecutive_errors: int):
    """inner's update when every update is finite; otherwise zero updates and inner's state
    unchanged, unless more than max_consecutive_errors non-finite updates came in a row
    (optax.apply_if_finite; then the update goes through)."""
    def init(params):
        return ApplyIfFiniteState(_count(), _core.asarray(True), _count(), inner.init(params))

    def update(updates, state, params=None, **extra_args):
        flat = [_core.asarray(u) for u in _tree.leaves(updates)]
        finite = _core.asarray(True)
        for u in flat:
            finite = finite & _core.all(_core.isfinite(u))
        notfinite = _core.where(finite, _core.zeros((), dtype=_core.int32), state.notfinite_count + 1)
        new_updates, new_inner = inner.update(updates, state.inner_state, params, **extra_args)
        take = finite | (notfinite > max_consecutive_errors)
        out = _tree.map(lambda u: _core.where(take, u, _core.zeros_like(u)), new_updates)
        inner_state = _select_tree(take, new_inner, state.inner_state)
        total = _core.where(finite, state.total_notfinite, state.total_notfinite + 1)
        return out, ApplyIfFiniteState(notfinite, finite, total, inner_state)
    return GradientTransformation(init, update)


class MultiStepsState(NamedTuple):
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()


class MultiSteps:
    """Gradient accumulation (optax.MultiSteps): every_k_schedule mini-steps are averaged
    (or summed, use_grad_mean=False) and passed to opt once; between, the updates are zero.
    ``should_skip_update_fn(updates, gradient_step, params) -> (bool scalar, state)`` skips
    a mini-step."""

    def __init__(self, opt, every_k_schedule, use_grad_mean: bool = True, should_skip_update_fn=None,
                 accumulator_dtype=_core.float32):
        if isinstance(every_k_schedule, int) and not isinstance(every_k_schedule, bool):
            if every_k_schedule < 1:
                raise ValueError(f"optax.MultiSteps: every_k_schedule must be >= 1, got {every_k_schedule}")
            k = every_k_schedule
            self._every_k_schedule = lambda step: k
        elif callable(every_k_schedule):
            self._every_k_schedule = every_k_schedule
        else:
            raise TypeError(f"optax.MultiSteps: every_k_schedule must be an int or a function of the step, got "
                            f"{type(every_k_schedule).__name__}")
        self._opt = opt
        self._use_grad_mean = use_grad_mean
        self._acc_dtype = accumulator_dtype
        self._skip = should_skip_update_fn or (lambda *a, **k: (_core.asarray(False), ()))

    @property
    def inner_opt(self):
        return self._opt

    def init(self, params):
        zeros = _zeros_like(params)
        _, skip_state = self._skip(zeros, _count(), params)
        acc = _tmap(lambda z: z.astype(self._acc_dtype), zeros)
        return MultiStepsState(_count(), _count(), self._opt.init(params), acc, skip_state)

    def update(self, updates, state, params=None, **extra_args):
        k = _core.asarray(self._every_k_schedule(state.gradient_step)).astype(_core.int32)
        skip, skip_state = self._skip(updates, state.gradient_step, params)
        skip = _core.asarray(skip)
        if skip.dtype != _core.bool_ or skip.shape != ():
            raise ValueError(f"optax.MultiSteps: should_skip_update_fn must return a boolean scalar, got dtype "
                             f"{skip.dtype} and shape {tuple(skip.shape)}")
        n = state.mini_step
        if self._use_grad_mean:
            acc = _tmap(lambda g, a: a + (g.astype(a.dtype) - a) / (n + 1).astype(a.dtype), updates, state.acc_grads)
        else:
            acc = _tmap(lambda g, a: g.astype(a.dtype) + a, updates, state.acc_grads)
        final, new_inner = self._opt.update(_tmap(lambda a, g: a.astype(g.dtype), acc, updates),
                                            state.inner_opt_state, params, **extra_args)
        emit = n == k - 1
        emit_i = emit.astype(_core.int32)
        done = MultiStepsState(
            (n + 1) % k, emit_i * (state.gradient_step + 1) + (1 - emit_i) * state.gradient_step,
            _select_tree(emit, new_inner, state.inner_opt_state),
            _tmap(lambda a: _core.where(emit, _core.zeros_like(a), a), acc), skip_state)
        out = _tmap(lambda u: _core.where(emit & ~skip, u, _core.zeros_like(u)), final)
        kept = MultiStepsState(state.mini_step, state.gradient_step, state.inner_opt_state, state.acc_grads, skip_state)
        new_state = _select_tree(skip, kept, done)
        return out, new_state

    def has_updated(self, state):
        return (state.mini_step == 0) & (state.gradient_step > 0)

    def gradient_transformation(self):
        return GradientTransformation(self.init, self.update)


# ---- more schedules ---------------------------------------------------------------------------

def _f64(count):
    return _core.asarray(count).astype(_core.float64)


def _piecewise_interpolate(interpolate, init_value: float, boundaries_and_scales: dict):
    """optax.piecewise_interpolate_schedule: between consecutive boundaries the value moves
    from one cumulative-product level to the next by `interpolate` ("linear" or "cosine")."""
    if interpolate not in ("linear", "cosine"):
        raise ValueError(f"optax.piecewise_interpolate_schedule: interpolate_type must be 'linear' or 'cosine', got "
                         f"{interpolate!r}")
    items = sorted(boundaries_and_scales.items()) if boundaries_and_scales else []
    if any(s < 0 for _, s in items):
        raise ValueError("optax.piecewise_interpolate_schedule: scale factors must be non-negative")
    bounds = [0] + [int(b) for b, _ in items]
    values = [float(init_value)]
    for _, s in items:
        values.append(values[-1] * s)

    def schedule(count):
        c = _f64(count)
        out = _core.zeros_like(c)
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            pct = (c - lo) / max(hi - lo, 1)
            a, b = values[i], values[i + 1]
            v = (b - a) * pct + a if interpolate == "linear" else b + (a - b) / 2.0 * (_core.cos(math.pi * pct) + 1.0)
            out = out + _core.where((c >= lo) & (c < hi), v, 0.0)
        return out + _core.where(c >= bounds[-1], values[-1], 0.0)
    return schedule


def piecewise_interpolate_schedule(interpolate_type: str, init_value: float, boundaries_and_scales=None):
    return _piecewise_interpolate(interpolate_type, init_value, boundaries_and_scales or {})


def linear_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3, pct_final: float = 0.85,
                             div_factor: float = 25.0, final_div_factor: float = 1e4):
    if transition_steps <= 0:
        raise ValueError(f"optax.linear_onecycle_schedule: transition_steps must be > 0, got {transition_steps}")
    return _piecewise_interpolate("linear", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor, int(pct_final * transition_steps): 1.0 / div_factor,
        transition_steps: 1.0 / final_div_factor})


def cosine_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3,
                             div_factor: float = 25.0, final_div_factor: float = 1e4):
    if transition_steps <= 0:
        raise ValueError(f"optax.cosine_onecycle_schedule: transition_steps must be > 0, got {transition_steps}")
    return _piecewise_interpolate("cosine", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor, int(transition_steps): 1.0 / (div_factor * final_div_factor)})


def _exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0, staircase=False, end_value=None):
    # optax.exponential_decay's formula (used by warmup_exponential_decay_schedule).
    if transition_steps <= 0 or decay_rate == 0:
        return lambda count: _core.full_like(_f64(count), init_value)
    transition_begin = max(transition_begin, 0)

    def schedule(count):
        d = _f64(count) - transition_begin
        p = d / transition_steps
        if staircase:
            p = _core.floor(p)
        v = _core.where(d <= 0, init_value, init_value * _core.power(_core.asarray(float(decay_rate)), p))
        if end_value is not None:
            v = _core.maximum(v, end_value) if decay_rate < 1.0 else _core.minimum(v, end_value)
        return v
    return schedule


def warmup_exponential_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                      transition_steps: int, decay_rate: float, transition_begin: int = 0,
                                      staircase: bool = False, end_value: Optional[float] = None):
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           _exponential_decay(peak_value, transition_steps, decay_rate, transition_begin, staircase,
                                              end_value)], [warmup_steps])


def sgdr_schedule(cosine_kwargs):
    """Warm restarts (optax.sgdr_schedule): warmup_cosine_decay_schedule(**kwargs) for each
    entry, one after the other."""
    schedules, boundaries, step = [], [], 0
    for kwargs in cosine_kwargs:
        schedules.append(warmup_cosine_decay_schedule(**kwargs))
        step += kwargs["decay_steps"]
        boundaries.append(step)
    if not schedules:
        raise ValueError("optax.sgdr_schedule: cosine_kwargs is empty")
    return join_schedules(schedules, boundaries[:-1])


# ---- optax.tree_utils / optax.schedules ------------------------------------------------------

def _tree_vdot(a, b):
    # Starting from a Python 0.0 (weak): float32 trees give float32 sums, as optax's.
    return _core.asarray(sum((_core.sum(_core.asarray(x) * _core.asarray(y))
                              for x, y in zip(_tree.leaves(a), _tree.leaves(b))), 0.0))


def _tree_get(tree, key, default=None, filtering=None):
    """optax.tree_utils.tree_get: the one value in tree stored under `key` (a dict key or a
    NamedTuple field, as optimizer states have: tree_get(state, "count")), default when
    there is none; KeyError when several match (filtering(path, value) narrows them)."""
    found = []

    def visit(node, path):
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, tuple) and hasattr(node, "_fields"):
            items = [(f, getattr(node, f)) for f in node._fields]
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                visit(v, path + (i,))
            return
        else:
            return
        for k, v in items:
            if k == key and (filtering is None or filtering(path + (k,), v)):
                found.append(v)
            visit(v, path + (k,))
    visit(tree, ())
    if not found:
        return default
    if len(found) > 1:
        raise KeyError(f"optax.tree_utils.tree_get: {len(found)} values are stored under {key!r}; pass filtering= "
                       f"to choose one")
    return found[0]


class _Namespace:
    def __init__(self, name, **items):
        self.__name__ = name
        self.__dict__.update(items)

    def __repr__(self):
        return f"<namespace {self.__name__}>"


from ._optax_lbfgs import (  # noqa: E402
    lbfgs, scale_by_lbfgs, ScaleByLBFGSState, scale_by_zoom_linesearch, ScaleByZoomLinesearchState,
    ZoomLinesearchInfo, value_and_grad_from_state,
)

tree_utils = _Namespace(
    "quabla.optax.tree_utils",
    tree_get=_tree_get,
    tree_zeros_like=_zeros_like, tree_full_like=_full_like,
    tree_ones_like=lambda t: _full_like(t, 1.0),
    tree_add=lambda a, b: _tmap(lambda x, y: x + y, a, b),
    tree_sub=lambda a, b: _tmap(lambda x, y: x - y, a, b),
    tree_mul=lambda a, b: _tmap(lambda x, y: x * y, a, b),
    tree_scalar_mul=lambda s, t: _tmap(lambda x: s * x, t),
    tree_add_scalar_mul=lambda a, s, b: _tmap(lambda x, y: x + s * y, a, b),
    tree_vdot=_tree_vdot,
    tree_sum=lambda t: _core.asarray(sum((_core.sum(_core.asarray(x)) for x in _tree.leaves(t)), 0.0)),
    tree_l2_norm=lambda t, squared=False: (_tree_vdot(t, t) if squared else _core.sqrt(_tree_vdot(t, t))),
    tree_bias_correction=lambda m, decay, count: _tmap(lambda x: _bc(x, decay, _core.asarray(count)), m),
    tree_update_moment=lambda updates, moments, decay, order: _tmap(
        lambda g, m: _ema(g ** order, m, decay), updates, moments),
)
tree = tree_utils  # optax.tree (newer optax's name for the same functions, without the tree_ prefix too)
for _n, _f in list(vars(tree_utils).items()):
    if _n.startswith("tree_"):
        setattr(tree_utils, _n[5:], _f)

schedules = _Namespace(
    "quabla.optax.schedules",
    constant_schedule=constant_schedule, exponential_decay=exponential_decay,
    cosine_decay_schedule=cosine_decay_schedule, warmup_cosine_decay_schedule=warmup_cosine_decay_schedule,
    piecewise_constant_schedule=piecewise_constant_schedule, polynomial_schedule=polynomial_schedule,
    linear_schedule=linear_schedule, join_schedules=join_schedules,
    piecewise_interpolate_schedule=piecewise_interpolate_schedule,
    linear_onecycle_schedule=linear_onecycle_schedule, cosine_onecycle_schedule=cosine_onecycle_schedule,
    warmup_exponential_decay_schedule=warmup_exponential_decay_schedule, sgdr_schedule=sgdr_schedule,
    Schedule=Schedule,
)

__all__ += ["OptState", "Params", "Updates", "Schedule", "ScalarOrSchedule", "GradientTransformationExtraArgs",
            "scale_by_nadam", "scale_by_radam", "scale_by_belief", "ScaleByBeliefState", "scale_by_yogi",
            "scale_by_adamax", "scale_by_adadelta", "ScaleByAdaDeltaState", "scale_by_lion", "ScaleByLionState",
            "scale_by_trust_ratio", "scale_by_stddev", "ScaleByRStdDevState", "scale_by_novograd",
            "ScaleByNovogradState", "nadam", "radam", "adabelief", "yogi", "adamax", "adadelta", "lion", "lamb",
            "novograd", "ema", "EmaState", "apply_if_finite", "ApplyIfFiniteState", "MultiSteps", "MultiStepsState",
            "piecewise_interpolate_schedule", "linear_onecycle_schedule", "cosine_onecycle_schedule",
            "warmup_exponential_decay_schedule", "sgdr_schedule", "tree_utils", "schedules", "lbfgs", "scale_by_lbfgs",
            "ScaleByLBFGSState", "scale_by_zoom_linesearch", "ScaleByZoomLinesearchState", "ZoomLinesearchInfo",
            "value_and_grad_from_state"]


# ---- still more of optax 0.2.8: small transformations, optimizers and helpers ----------------
#
# Each is written from optax's documented formula; the transformation chains (and so the
# states' structure) are optax's, so a state can be read the same way (state[0].count, ...).

from ._package import qb as _qb  # noqa: E402  (the whole package, looked up when used)

TransformInitFn = Callable[[Any], Any]  # optax.TransformInitFn: params -> state
TransformUpdateFn = Callable[..., Any]  # optax.TransformUpdateFn: (updates, state, params) -> (updates, state)
TransformUpdateExtraArgsFn = Callable[..., Any]  # the same, with extra keyword arguments
MaskOrFn = Any  # optax.MaskOrFn: a pytree of bools, or a function of the params giving one
ShouldSkipUpdateFunction = Callable[..., Any]  # MultiSteps' should_skip_update_fn

# optax's names for the (empty) states of its stateless transformations
AddDecayedWeightsState = ClipState = ScaleState = ClipByGlobalNormState = EmptyState
ScaleByTrustRatioState = NonNegativeParamsState = EmptyState


def init_empty_state(params):
    """The init of a stateless transformation: EmptyState()."""
    del params
    return EmptyState()


def stateless(f: Callable):
    """A transformation without state from f(updates, params) -> updates (params may be None)."""
    def update(updates, state, params=None):
        return f(updates, params), state
    return GradientTransformation(init_empty_state, update)


def stateless_with_tree_map(f: Callable):
    """stateless, with f(update, param) applied leaf by leaf (param None without params)."""
    def update(updates, state, params=None):
        if params is None:
            return _tmap(lambda u: f(u, None), updates), state
        return _tmap(f, updates, params), state
    return GradientTransformation(init_empty_state, update)


def with_extra_args_support(tx):
    """tx as a GradientTransformationExtraArgs (an update taking, and ignoring, extra keyword
    arguments); tx itself when it already is one."""
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx

    def update(updates, state, params=None, **extra_args):
        del extra_args
        return tx.update(updates, state, params)
    return GradientTransformationExtraArgs(tx.init, update)


def safe_increment(count):
    """count + 1, staying at the largest value of count's dtype instead of wrapping around."""
    import numpy as np
    c = _core.asarray(count)
    kind = np.dtype(c.dtype.name)
    top = np.iinfo(kind).max if np.issubdtype(kind, np.integer) else np.finfo(kind).max
    return _core.where(c < top, c + 1, c)


safe_int32_increment = safe_increment  # optax's older name


def safe_norm(x, min_norm, ord=None, axis=None, keepdims: bool = False):
    """max(norm(x), min_norm) (qb.linalg.norm's ord, axis, keepdims) with the gradient 0 where
    the norm is at most min_norm (the plain form's gradient is NaN at x = 0)."""
    x = _core.asarray(x)
    small_k = _qb.linalg.norm(x, ord=ord, axis=axis, keepdims=True) <= min_norm
    # where the norm is small, the norm of ones is taken instead: its (discarded) gradient is finite
    x_safe = _core.where(small_k, _core.ones_like(x), x)
    small = small_k if keepdims else _qb.linalg.norm(x, ord=ord, axis=axis, keepdims=False) <= min_norm
    return _core.where(small, min_norm, _qb.linalg.norm(x_safe, ord=ord, axis=axis, keepdims=keepdims))


def safe_root_mean_squares(x, min_rms):
    """max(sqrt(mean(|x|^2)), min_rms) with the gradient 0 where the RMS is at most min_rms."""
    x = _core.asarray(x)
    small = _core.sqrt(_core.mean(_abs_sq(x))) <= min_rms
    x_safe = _core.where(small, _core.ones_like(x), x)
    return _core.where(small, min_rms, _core.sqrt(_core.mean(_abs_sq(x_safe))))


def _needs_params(name, params):
    if params is None:
        raise ValueError(f"optax.{name}: update needs the params; call update(updates, state, params)")


def clip_by_block_rms(threshold: float):
    """Each leaf (a block: a weight vector or matrix) scaled down so that its root mean
    square is at most threshold."""
    def update(updates, state, params=None):
        def leaf(u):
            rms = _core.sqrt(_core.mean(_abs_sq(u)))
            return u * (threshold / _core.maximum(rms, threshold)).astype(u.dtype)
        return _tmap(leaf, updates), state
    return GradientTransformation(init_empty_state, update)


def scale_by_param_block_norm(min_scale: float = 1e-3):
    """Each leaf's update times its parameter's norm (at least min_scale)."""
    def update(updates, state, params=None):
        _needs_params("scale_by_param_block_norm", params)
        return _tmap(lambda u, p: u * safe_norm(p, min_scale).astype(u.dtype), updates, params), state
    return GradientTransformation(init_empty_state, update)


def scale_by_param_block_rms(min_scale: float = 1e-3):
    """Each leaf's update times its parameter's root mean square (at least min_scale)."""
    def update(updates, state, params=None):
        _needs_params("scale_by_param_block_rms", params)
        return _tmap(lambda u, p: u * safe_root_mean_squares(p, min_scale).astype(u.dtype), updates, params), state
    return GradientTransformation(init_empty_state, update)


def centralize():
    """Gradient centralization: each leaf of two or more axes minus its mean over every axis
    but the first (vectors and scalars pass unchanged)."""
    def leaf(u):
        return u - _core.mean(u, axis=tuple(range(1, u.ndim)), keepdims=True) if u.ndim > 1 else u

    def update(updates, state, params=None):
        return _tmap(leaf, updates), state
    return GradientTransformation(init_empty_state, update)


def keep_params_nonnegative():
    """Updates changed so the parameters stay >= 0: where params + update < 0 the update
    is -params (last in a chain)."""
    def update(updates, state, params=None):
        _needs_params("keep_params_nonnegative", params)
        return _tmap(lambda u, p: _core.where(p + u < 0.0, -_core.asarray(p).astype(u.dtype), u), updates,
                     params), state
    return GradientTransformation(init_empty_state, update)


def normalize_by_update_norm(scale_factor: float = 1.0, eps: float = 1e-6):
    """updates * scale_factor / (global_norm(updates) + eps)."""
    def update(updates, state, params=None):
        s = scale_factor / (global_norm(updates) + eps)
        return _tmap(lambda u: u * _core.asarray(s).astype(u.dtype), updates), state
    return GradientTransformation(init_empty_state, update)


def scale_by_sign():
    """The signs of the updates."""
    def update(updates, state, params=None):
        return _tmap(_core.sign, updates), state
    return GradientTransformation(init_empty_state, update)


def sign_sgd(learning_rate):
    """SignSGD: -learning_rate * sign(g)."""
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def signum(learning_rate, beta: float = 0.9, accumulator_dtype=None):
    """Signum: -learning_rate * sign(m), m = beta m + (1 - beta) g (an ema without debiasing)."""
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), scale_by_sign(),
                 scale_by_learning_rate(learning_rate))


def adamaxw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 1e-4,
            mask=None):
    """AdaMax with decoupled weight decay (optax.adamaxw)."""
    return chain(scale_by_adamax(b1, b2, eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def nadamw(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
           mu_dtype=None, weight_decay: float = 1e-4, mask=None, *, nesterov: bool = True):
    """AdamW with Nesterov's momentum (optax.nadamw: adamw(..., nesterov=True))."""
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask, nesterov=nesterov)


class ScaleByAmsgradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any
    nu_max: Any


def scale_by_amsgrad(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0, mu_dtype=None,
                     bias_correction_mu: bool = True, bias_correction_nu: bool = True):
    """AMSGrad's direction (optax.scale_by_amsgrad): Adam's moments, divided by the running
    maximum nu_max of the (bias-corrected, unless bias_correction_nu=False) second moment:
    m-hat / (sqrt(nu_max + eps_root) + eps)."""
    def init(params):
        return ScaleByAmsgradState(_count(), _cast(_zeros_like(params), mu_dtype), _zeros_like(params),
                                   _zeros_like(params))

    def update(updates, state, params=None):
        mu = _tmap(lambda g, m: _ema(g, m, b1), updates, state.mu)
        nu = _tmap(lambda g, v: _ema(_abs_sq(g), v, b2), updates, state.nu)
        c = state.count + 1
        mu_hat = _tmap(lambda m: _bc(m, b1, c), mu) if bias_correction_mu else mu
        nu_hat = _tmap(lambda v: _bc(v, b2, c), nu) if bias_correction_nu else nu
        nu_max = _tmap(_core.maximum, state.nu_max, nu_hat)
        out = _tmap(lambda m, v: m / (_core.sqrt(v + eps_root) + eps), mu_hat, nu_max)
        return out, ScaleByAmsgradState(c, _cast(mu, mu_dtype), nu, nu_max)
    return GradientTransformation(init, update)


def amsgrad(learning_rate, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
            mu_dtype=None, bias_correction_mu: bool = True, bias_correction_nu: bool = True):
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root, mu_dtype, bias_correction_mu, bias_correction_nu),
                 scale_by_learning_rate(learning_rate))


class AddNoiseState(NamedTuple):
    count: Any
    rng_key: Any


def _as_key(key, seed, who):
    if key is None:
        if seed is None:
            import warnings
            warnings.warn(f"optax.{who}: no key given, using key 0 (as optax 0.2.8 does); pass key= for your own "
                          f"noise", stacklevel=3)
            seed = 0
        key = seed
    if isinstance(key, bool) or not isinstance(key, (int, _qb.random.Key, _core.Array)):
        raise TypeError(f"optax.{who}: key must be an int seed or a qb.random key, got {type(key).__name__}")
    if isinstance(key, int):
        return _qb.random.PRNGKey(key)
    if isinstance(key, _qb.random.Key):
        return _qb.random.key_data(key)  # the raw uint32 pair: a plain array in the state
    return key


def add_noise(eta: float, gamma: float, key=None, *, seed: Optional[int] = None):
    """Gaussian noise added to the updates (optax.add_noise): at the t-th update (t from 0)
    of variance eta / (1 + t)^gamma. Each update splits the key into the next key and a
    subkey, and the subkey into one key per leaf, as optax does, so a key gives optax's
    noise (qb.random's bits are jax.random's). key: an int seed or a qb.random key."""
    def init(params):
        del params
        return AddNoiseState(_count(), _as_key(key, seed, "add_noise"))

    def update(updates, state, params=None):
        leaves, treedef = _tree.flatten(updates)
        pair = _qb.random.split(state.rng_key)
        next_key, sub = pair[0], pair[1]
        keys = _qb.random.split(sub, max(len(leaves), 1))
        var = eta / _core.power(state.count.astype(_core.float64) + 1.0, gamma)
        std = _core.sqrt(var)
        noisy = []
        for i, g in enumerate(leaves):
            g = _core.asarray(g)
            noisy.append(g + std.astype(g.dtype) * _qb.random.normal(keys[i], g.shape, dtype=g.dtype))
        return _tree.unflatten(treedef, noisy), AddNoiseState(state.count + 1, next_key)
    return GradientTransformation(init, update)


def noisy_sgd(learning_rate, eta: float = 0.01, gamma: float = 0.55, key=None, *, seed: Optional[int] = None):
    """SGD on gradients with annealed Gaussian noise (optax.noisy_sgd): -lr (g + N(0, eta / (1 + t)^gamma))."""
    return chain(add_noise(eta, gamma, key, seed=seed), scale_by_learning_rate(learning_rate))


def fromage(learning_rate: float, min_norm: float = 1e-6):
    """Fromage (optax.fromage): params <- (params - lr ||params|| / ||g|| g) / sqrt(1 + lr^2),
    leaf by leaf (scale_by_trust_ratio, the learning rate, then decayed weights)."""
    if callable(learning_rate):
        raise TypeError("optax.fromage: learning_rate must be a number (its 1 / sqrt(1 + lr^2) factor is fixed when "
                        "the optimizer is built), got a schedule")
    mult = 1.0 / _core.sqrt(1.0 + _core.asarray(learning_rate, dtype=_core.float64) ** 2)
    if isinstance(learning_rate, (int, float)):
        mult = float(mult)
    return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(learning_rate * mult),
                 add_decayed_weights(mult - 1.0))


class ScaleByOptimisticGradientState(NamedTuple):
    is_initial_step: Any
    previous_gradient: Any


def scale_by_optimistic_gradient(alpha: float = 1.0, beta: float = 1.0):
    """Optimistic gradients (optax.scale_by_optimistic_gradient): (alpha + beta) g_t -
    beta g_(t-1); the first update, without a previous gradient, is alpha g."""
    def init(params):
        return ScaleByOptimisticGradientState(_core.asarray(True), _zeros_like(params))

    def update(updates, state, params=None):
        first = state.is_initial_step
        prev = _tmap(lambda g, pg: _core.where(first, g, pg.astype(g.dtype)), updates, state.previous_gradient)
        out = _tmap(lambda g, pg: (alpha + beta) * g - beta * pg, updates, prev)
        return out, ScaleByOptimisticGradientState(_core.asarray(False), updates)
    return GradientTransformation(init, update)


def optimistic_gradient_descent(learning_rate, alpha: float = 1.0, beta: float = 1.0):
    """Optimistic gradient descent (optax.optimistic_gradient_descent):
    -lr ((alpha + beta) g_t - beta g_(t-1))."""
    return chain(scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))


def scale_by_polyak(f_min: float = 0.0, max_learning_rate: float = 1.0, eps: float = 0.0, variant: str = "sps"):
    """Polyak's step size (optax.scale_by_polyak): updates * min((value - f_min) /
    (||updates||^2 + eps), max_learning_rate), value the objective's, passed as
    update(updates, state, params, value=...); variant "sps+" takes max(value - f_min, 0)."""
    if variant not in ("sps", "sps+"):
        raise ValueError(f"optax.scale_by_polyak: variant must be 'sps' or 'sps+', got {variant!r}")

    def update(updates, state, params=None, *, value=None, **extra_args):
        del extra_args
        if value is None:
            raise TypeError("optax.scale_by_polyak: update needs the objective's value; call "
                            "update(grads, state, params, value=loss)")
        gap = _core.asarray(value) - f_min
        if variant == "sps+":
            gap = _core.maximum(gap, 0.0)
        step = _core.minimum(gap / (_tree_vdot(updates, updates) + eps), max_learning_rate)
        return _tmap(lambda u: u * step.astype(u.dtype), updates), state
    return GradientTransformationExtraArgs(init_empty_state, update)


def polyak_sgd(max_learning_rate: float = 1.0, scaling=1.0, f_min: float = 0.0, eps: float = 0.0,
               variant: str = "sps"):
    """SGD with Polyak's step size (optax.polyak_sgd): update(grads, state, params,
    value=loss). As optax's chain (sgd(scaling), then scale_by_polyak), the norm in the
    step size is that of the scaled gradients, scaling * g (the same for scaling=1)."""
    return chain(sgd(learning_rate=scaling),
                 scale_by_polyak(f_min=f_min, max_learning_rate=max_learning_rate, eps=eps, variant=variant))


def lars(learning_rate, weight_decay: float = 0.0, weight_decay_mask=True, trust_coefficient: float = 0.001,
         eps: float = 0.0, trust_ratio_mask=True, momentum: float = 0.9, nesterov: bool = False):
    """LARS (optax.lars): decayed weights, the layer-wise trust ratio (each under its mask:
    a pytree of bools, one bool, or a function of the params), the learning rate, then
    momentum."""
    return chain(masked(add_decayed_weights(weight_decay), weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps), trust_ratio_mask),
                 scale_by_learning_rate(learning_rate), trace(momentum, nesterov))


class ScaleByRpropState(NamedTuple):
    step_sizes: Any
    prev_updates: Any


def scale_by_rprop(learning_rate: float, eta_minus: float = 0.5, eta_plus: float = 1.2,
                   min_step_size: float = 1e-6, max_step_size: float = 50.0):
    """Rprop's direction (optax.scale_by_rprop): per entry a step size, times eta_plus (up to
    max_step_size) while the gradient keeps its sign, times eta_minus (down to min_step_size)
    when it flips; the update is step_size * sign(g), 0 on a flip.

    Note: this returns the current step's update, as Rprop (and torch.optim.Rprop) defines
    it. optax 0.2.8 returns the previous step's instead (its output lags one step, zeros
    first); the states (step_sizes, prev_updates) are the same as optax's."""
    def init(params):
        return ScaleByRpropState(_full_like(params, learning_rate), _zeros_like(params))

    def update(updates, state, params=None):
        prod = _tmap(lambda g, pu: g * pu, updates, state.prev_updates)
        steps = _tmap(lambda s, pr: _core.where(pr > 0, _core.minimum(s * eta_plus, max_step_size),
                                                _core.where(pr < 0, _core.maximum(s * eta_minus, min_step_size), s)),
                      state.step_sizes, prod)
        new = _tmap(lambda g, s, pr: _core.where(pr < 0, _core.zeros_like(g), s * _core.sign(g)), updates, steps, prod)
        return new, ScaleByRpropState(steps, new)
    return GradientTransformation(init, update)


def rprop(learning_rate: float, eta_minus: float = 0.5, eta_plus: float = 1.2, min_step_size: float = 1e-6,
          max_step_size: float = 50.0):
    """Rprop (optax.rprop): -scale_by_rprop's update (see its note on optax 0.2.8)."""
    return chain(scale_by_rprop(learning_rate, eta_minus, eta_plus, min_step_size, max_step_size), scale(-1.0))


class ApplyEvery(NamedTuple):
    count: Any
    grad_acc: Any


def apply_every(k: int = 1):
    """Updates summed over k steps and emitted on every k-th (zeros in between)
    (optax.apply_every; the other transformations of a chain still update every step,
    unlike MultiSteps)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"optax.apply_every: k must be an int >= 1, got {k!r}")

    def init(params):
        return ApplyEvery(_count(), _zeros_like(params))

    def update(updates, state, params=None):
        first = state.count == 0  # the first step of a group starts a new sum
        acc = _tmap(lambda g, a: _core.where(first, g, a + g), updates, state.grad_acc)
        count = (state.count + 1) % k
        emit = count == 0
        return _tmap(lambda a: _core.where(emit, a, _core.zeros_like(a)), acc), ApplyEvery(count, acc)
    return GradientTransformation(init, update)


def warmup_constant_schedule(init_value: float, peak_value: float, warmup_steps: int):
    """From init_value to peak_value linearly over warmup_steps, then peak_value."""
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps), constant_schedule(peak_value)],
                          [warmup_steps])


def bias_correction(moment, decay: float, count):
    """moment / (1 - decay^count), leaf by leaf."""
    return _tmap(lambda m: _bc(m, decay, _core.asarray(count)), moment)


def update_moment(updates, moments, decay: float, order: int):
    """The exponential moving average of updates^order: (1 - decay) g^order + decay m."""
    return _tmap(lambda g, m: _ema(g ** order, m, decay), updates, moments)


def update_infinity_moment(updates, moments, decay: float, eps: float):
    """The infinity-norm moment: max(|g| + eps, decay m)."""
    return _tmap(lambda g, m: _core.maximum(_core.abs(g) + eps, decay * m), updates, moments)


def update_moment_per_elem_norm(updates, moments, decay: float, order: int):
    """The exponential moving average of g^order for real g, of |g|^order (the modulus) for
    complex g (as optax's)."""
    def leaf(g, m):
        if _core.asarray(g).dtype in (_core.complex64, _core.complex128):
            return _ema(_abs_sq(g) ** (order / 2.0), m, decay)
        return _ema(g ** order, m, decay)
    return _tmap(leaf, updates, moments)


def incremental_update(new_tensors, old_tensors, step_size):
    """Polyak averaging: step_size * new + (1 - step_size) * old, leaf by leaf."""
    return _tmap(lambda n, o: step_size * n + (1.0 - step_size) * o, new_tensors, old_tensors)


def scale_gradient(inputs, scale: float):
    """inputs unchanged, with the gradient flowing back through them multiplied by scale."""
    @_qb.custom_vjp
    def ident(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        return (_tmap(lambda t: t * scale, g),)
    ident.defvjp(fwd, bwd)
    return ident(inputs)


def skip_not_finite(updates, gradient_step, params):
    """A MultiSteps should_skip_update_fn: skip when an update has a NaN or an infinity;
    returns (should_skip, {"should_skip", "num_not_finite"})."""
    del gradient_step, params
    num = _core.asarray(0, dtype=_core.int32)
    for u in _tree.leaves(updates):
        num = num + _core.sum((~_core.isfinite(_core.asarray(u))).astype(_core.int32))
    should_skip = num > 0
    return should_skip, dict(should_skip=should_skip, num_not_finite=num)


def skip_large_updates(updates, gradient_step, params, max_squared_norm: float):
    """A MultiSteps should_skip_update_fn (bind max_squared_norm with functools.partial):
    skip when the squared global norm of the updates exceeds max_squared_norm (or is NaN);
    returns (should_skip, {"should_skip", "norm_squared"})."""
    del gradient_step, params
    norm_sq = _tree_vdot(updates, updates)
    should_skip = _core.logical_not(norm_sq < max_squared_norm)
    return should_skip, dict(should_skip=should_skip, norm_squared=norm_sq)



class ScaleByAdanState(NamedTuple):
    m: Any
    v: Any
    n: Any
    g: Any  # the previous gradient
    t: Any


def scale_by_adan(b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8, eps_root: float = 0.0):
    """Adan's direction (optax.scale_by_adan): with d = g - g_prev (0 at the first step),
    m, v and n the moving averages (decays b1, b2, b3) of g, d and (g + (1 - b2) d)^2, the
    update is (m-hat + (1 - b2) v-hat) / (sqrt(n-hat + eps_root) + eps), hats the
    bias-corrected averages."""
    def init(params):
        z = _zeros_like(params)
        return ScaleByAdanState(z, z, z, z, _count())

    def update(updates, state, params=None):
        first = state.t == 0
        d = _tmap(lambda g, pg: _core.where(first, _core.zeros_like(g), g - pg), updates, state.g)
        m = _tmap(lambda g, mm: _ema(g, mm, b1), updates, state.m)
        v = _tmap(lambda dd, vv: _ema(dd, vv, b2), d, state.v)
        n = _tmap(lambda g, dd, nn: _ema(_abs_sq(g + (1.0 - b2) * dd), nn, b3), updates, d, state.n)
        t = state.t + 1
        out = _tmap(lambda mm, vv, nn: (_bc(mm, b1, t) + (1.0 - b2) * _bc(vv, b2, t))
                    / (_core.sqrt(_bc(nn, b3, t) + eps_root) + eps), m, v, n)
        return out, ScaleByAdanState(m, v, n, updates, t)
    return GradientTransformation(init, update)


def adan(learning_rate, b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8,
         eps_root: float = 1e-8, weight_decay: float = 0.0, mask=None):
    """Adan (optax.adan): scale_by_adan, decayed weights, the learning rate."""
    return chain(scale_by_adan(b1, b2, b3, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


AdaptiveGradClipState = EmptyState


def _unitwise_norm(x, axis):
    # optax's unit-wise norms for adaptive_grad_clip: the whole leaf for scalars and vectors,
    # over the fan-in axes of linear (axis 0), 3-d (axis 0) and conv (all but the last) weights
    if axis is None:
        if x.ndim <= 1:
            axis = None
        elif x.ndim in (2, 3):
            axis = 0
        elif x.ndim in (4, 5):
            axis = tuple(range(x.ndim - 1))
        else:
            raise ValueError(f"optax.adaptive_grad_clip: no default unit-wise norm for a parameter of shape "
                             f"{tuple(x.shape)} (0 to 5 axes); pass axis= to choose the axes")
    return _core.sqrt(_core.sum(_abs_sq(x), axis=axis, keepdims=True))


def adaptive_grad_clip(clipping: float, eps: float = 1e-3, axis=None):
    """Adaptive gradient clipping (optax.adaptive_grad_clip, NFNets): unit-wise, updates
    with norm above clipping * max(||param||, eps) scaled down to it (the unit-wise norms
    over axis, or optax's default axes by the number of dimensions)."""
    def update(updates, state, params=None):
        _needs_params("adaptive_grad_clip", params)

        def leaf(g, p):
            p = _core.asarray(p)
            max_norm = clipping * _core.maximum(_unitwise_norm(p, axis), eps)
            g_norm = _unitwise_norm(g, axis)
            clipped = g * (max_norm / _core.maximum(g_norm, 1e-6))
            return _core.where(g_norm < max_norm, g, clipped)
        return _tmap(leaf, updates, params), state
    return GradientTransformation(init_empty_state, update)


__all__ += ["TransformInitFn", "TransformUpdateFn", "TransformUpdateExtraArgsFn", "MaskOrFn",
            "ShouldSkipUpdateFunction", "AddDecayedWeightsState", "ClipState", "ScaleState", "ClipByGlobalNormState",
            "ScaleByTrustRatioState", "NonNegativeParamsState", "init_empty_state", "stateless",
            "stateless_with_tree_map", "with_extra_args_support", "safe_increment", "safe_int32_increment",
            "safe_norm", "safe_root_mean_squares", "clip_by_block_rms", "scale_by_param_block_norm",
            "scale_by_param_block_rms", "centralize", "keep_params_nonnegative", "normalize_by_update_norm",
            "scale_by_sign", "sign_sgd", "signum", "adamaxw", "nadamw", "scale_by_amsgrad", "ScaleByAmsgradState",
            "amsgrad", "add_noise", "AddNoiseState", "noisy_sgd", "fromage", "scale_by_optimistic_gradient",
            "ScaleByOptimisticGradientState", "optimistic_gradient_descent", "scale_by_polyak", "polyak_sgd", "lars",
            "scale_by_rprop", "ScaleByRpropState", "rprop", "apply_every", "ApplyEvery", "warmup_constant_schedule",
            "bias_correction", "update_moment", "update_infinity_moment", "update_moment_per_elem_norm",
            "incremental_update", "scale_gradient", "skip_not_finite", "skip_large_updates", "scale_by_adan",
            "ScaleByAdanState", "adan", "adaptive_grad_clip", "AdaptiveGradClipState", "losses",
            "kl_divergence", "kl_divergence_with_log_targets", "convex_kl_divergence", "generalized_kl_divergence",
            "hinge_loss", "multiclass_hinge_loss", "perceptron_loss", "multiclass_perceptron_loss",
            "sigmoid_focal_loss", "smooth_labels", "poly_loss_cross_entropy", "safe_softmax_cross_entropy",
            "triplet_margin_loss", "dice_loss", "binary_dice_loss", "multiclass_generalized_dice_loss", "ntxent",
            "sparsemax_loss", "multiclass_sparsemax_loss", "ranking_softmax_loss"]
schedules.warmup_constant_schedule = warmup_constant_schedule


# ---- Adafactor (Shazeer and Stern, 2018): factored second moments ------------------------------

class FactoredState(NamedTuple):
    """scale_by_factored_rms's state: the step count and, per leaf, the row and column
    statistics of a factored leaf or the full second moment of an unfactored one (the unused
    ones are placeholders of shape (1,))."""
    count: Any
    v_row: Any
    v_col: Any
    v: Any


def _decay_rate_pow(i, exponent: float = 0.8):
    """Adafactor's second-moment decay at step i: 1 - (i + 1)^-exponent."""
    t = _core.asarray(i).astype(_core.float32) + 1.0
    return 1.0 - t ** (-exponent)


def _factored_dims(shape, factored: bool, min_dim_size_to_factor: int):
    """The two largest axes of a leaf (the smaller one first) when it is factored: two or more
    axes, the second largest at least min_dim_size_to_factor; else None."""
    if not factored or len(shape) < 2:
        return None
    order = sorted(range(len(shape)), key=lambda d: (shape[d], d))
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return order[-2], order[-1]


def scale_by_factored_rms(factored: bool = True, decay_rate: float = 0.8, step_offset: int = 0,
                          min_dim_size_to_factor: int = 128, epsilon: float = 1e-30,
                          decay_rate_fn: Callable = _decay_rate_pow):
    """Updates divided by a factored estimate of the gradients' root mean square (Adafactor's
    scaling): a leaf whose two largest axes are at least min_dim_size_to_factor keeps only a
    row and a column average of the squared gradients (their outer product, over their
    mean, estimates the full second moment); smaller leaves keep it whole. The moments decay
    by decay_rate_fn(step - step_offset, decay_rate)."""
    def init(params):
        def leaf_init(p):
            p = _core.asarray(p)
            dims = _factored_dims(tuple(p.shape), factored, min_dim_size_to_factor)
            placeholder = _core.zeros((1,))  # the default float dtype, as optax's
            if dims is None:
                return placeholder, placeholder, _core.zeros(tuple(p.shape), dtype=p.dtype)
            d1, d0 = dims
            row = tuple(n for k, n in enumerate(p.shape) if k != d0)
            col = tuple(n for k, n in enumerate(p.shape) if k != d1)
            return _core.zeros(row, dtype=p.dtype), _core.zeros(col, dtype=p.dtype), placeholder
        leaves, treedef = _tree.flatten(params)
        parts = [leaf_init(p) for p in leaves]
        unflat = lambda k: _tree.unflatten(treedef, [q[k] for q in parts])  # noqa: E731
        return FactoredState(_count(), unflat(0), unflat(1), unflat(2))

    def update(updates, state, params=None):
        g_leaves, treedef = _tree.flatten(updates)
        rows, cols, vs = (_tree.flatten(t)[0] for t in (state.v_row, state.v_col, state.v))
        decay = decay_rate_fn(state.count - step_offset, decay_rate)
        new_rows, new_cols, new_vs, outs = [], [], [], []
        for g, v_row, v_col, v in zip(g_leaves, rows, cols, vs):
            dims = _factored_dims(tuple(g.shape), factored, min_dim_size_to_factor)
            decay_g = decay.astype(g.dtype)
            g_sq = g * g + epsilon
            if dims is None:
                nv = decay_g * v.astype(g.dtype) + (1.0 - decay_g) * g_sq
                outs.append(g * nv ** -0.5)
                new_rows.append(v_row)
                new_cols.append(v_col)
                new_vs.append(nv.astype(v.dtype))
                continue
            d1, d0 = dims
            nr = decay_g * v_row.astype(g.dtype) + (1.0 - decay_g) * _core.mean(g_sq, axis=d0)
            nc = decay_g * v_col.astype(g.dtype) + (1.0 - decay_g) * _core.mean(g_sq, axis=d1)
            reduced_d1 = d1 - 1 if d1 > d0 else d1
            row_factor = (nr / _core.mean(nr, axis=reduced_d1, keepdims=True)) ** -0.5
            col_factor = nc ** -0.5
            outs.append(g * _core.expand_dims(row_factor, d0) * _core.expand_dims(col_factor, d1))
            new_rows.append(nr.astype(v_row.dtype))
            new_cols.append(nc.astype(v_col.dtype))
            new_vs.append(v)
        unflat = lambda xs: _tree.unflatten(treedef, xs)  # noqa: E731
        return unflat(outs), FactoredState(state.count + 1, unflat(new_rows), unflat(new_cols), unflat(new_vs))
    return GradientTransformation(init, update)


def adafactor(learning_rate=None, min_dim_size_to_factor: int = 128, decay_rate: float = 0.8, decay_offset: int = 0,
              multiply_by_parameter_scale: bool = True, clipping_threshold: Optional[float] = 1.0,
              momentum: Optional[float] = None, dtype_momentum=None, weight_decay_rate=None, eps: float = 1e-30,
              factored: bool = True, weight_decay_mask=None):
    """Adafactor (optax.adafactor): factored second moments, update clipping by block RMS, the
    learning rate (or none: relative steps via multiply_by_parameter_scale), steps scaled by
    each parameter block's RMS, optional momentum (an EMA without debiasing, kept in
    dtype_momentum, float32 by default) and decoupled weight decay."""
    txs = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        txs.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        txs.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        txs.append(scale_by_param_block_rms())
    if momentum is not None:
        txs.append(ema(momentum, debias=False, accumulator_dtype=_core.float32 if dtype_momentum is None
                       else dtype_momentum))
    if weight_decay_rate is not None:
        txs.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    txs.append(scale(-1.0))
    return chain(*txs)
