"""quabla.example_libraries.optimizers: jax.example_libraries.optimizers for Quabla.

An optimizer is a triple of functions ``(init_fun, update_fun, get_params)``:

- ``init_fun(params)`` takes a pytree of parameter arrays and returns an
  ``OptimizerState`` holding the parameters and the optimizer's auxiliary values
  (momenta, second-moment averages, ...);
- ``update_fun(step, grads, opt_state)`` takes the step index (a Python int, or an integer
  array / traced integer inside qb.jit), a gradient pytree with the parameters' structure
  and a state, and returns the next state;
- ``get_params(opt_state)`` returns the parameter pytree, so that
  ``get_params(init_fun(params))`` has the structure and values of ``params``.

Typical use::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)

    @qb.jit
    def step(i, opt_state):
        loss, grads = qb.value_and_grad(loss_fn)(get_params(opt_state))
        return loss, opt_update(i, grads, opt_state)

    for i in range(num_steps):
        loss, opt_state = step(qb.asarray(i), opt_state)

(qb.jit treats Python scalars as static values, compiling once per value; pass the step
as an array, as above, to compile the step once.)

The state layout is jax.example_libraries': ``OptimizerState(packed_state, tree_def,
subtree_defs)`` where ``packed_state`` holds, for each parameter leaf, the flattened
leaves of that leaf's own state, and the two tree definitions are static (pytree auxiliary
data), so a state passes through qb.jit, qb.grad and qb.vmap as an ordinary argument.
``unpack_optimizer_state`` / ``pack_optimizer_state`` convert it to and from a plain
pytree with ``JoinPoint`` leaves, e.g. for saving.
"""
from __future__ import annotations

import functools
import numbers
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from .. import tree_util as _tree_util
from .._package import qb

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov", "adagrad", "rmsprop",
           "rmsprop_momentum", "adam", "adamax", "sm3", "constant", "exponential_decay", "inverse_time_decay",
           "polynomial_decay", "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]

Params = Any    # a pytree of arrays
Schedule = Callable[[Any], Any]  # step index -> step size


# ---------------------------------------------------------------------------------------------
# The state container and the decorator that lifts per-array optimizers to pytrees.
# ---------------------------------------------------------------------------------------------

# packed_state: a tuple with one entry per parameter leaf, each the list of that leaf's state
# leaves; tree_def: the parameters' tree structure; subtree_defs: a tuple with the structure
# of each parameter leaf's state.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])


def _state_flatten(state):
    # Only the arrays are children; the structures are static auxiliary data.
    return (state.packed_state,), (state.tree_def, state.subtree_defs)


def _state_unflatten(aux, children):
    tree_def, subtree_defs = aux
    return OptimizerState(children[0], tree_def, subtree_defs)


_tree_util.register_pytree_node(OptimizerState, _state_flatten, _state_unflatten)


class Optimizer(NamedTuple):
    """The ``(init_fn, update_fn, params_fn)`` triple an optimizer constructor returns."""
    init_fn: Callable[[Params], OptimizerState]
    update_fn: Callable[[Any, Params, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Params]


def _check_state(opt_state, who):
    """Raises a TypeError unless opt_state is an OptimizerState (or an equal 3-tuple)."""
    if isinstance(opt_state, OptimizerState):
        return opt_state
    if isinstance(opt_state, tuple) and len(opt_state) == 3:
        return OptimizerState(*opt_state)
    raise TypeError(f"{who}: expected the OptimizerState that this optimizer's init_fun returned, got "
                    f"{type(opt_state).__name__}; call init_fun(params) first and pass its result")


def _split_states(opt_state):
    """The per-parameter-leaf states of an OptimizerState, each rebuilt as its own pytree."""
    return [_tree_util.tree_unflatten(sub, flat) for sub, flat in zip(opt_state.subtree_defs, opt_state.packed_state)]


def optimizer(opt_maker: Callable[..., Any]) -> Callable[..., Optimizer]:
    """Decorator: turns a constructor of per-array ``(init, update, get_params)`` functions
    into one whose functions work on pytrees of arrays.

    ``opt_maker(*args, **kwargs)`` returns three functions that each handle one array:
    ``init(x0) -> state`` (any pytree of arrays), ``update(i, g, state) -> state`` (of the
    same structure) and ``get_params(state) -> x``. The decorated constructor returns an
    ``Optimizer`` triple that applies them leaf by leaf to a parameter pytree and keeps
    the states in an ``OptimizerState``.
    """

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_leaves, tree_def = _tree_util.tree_flatten(x0_tree)
            packed, subtree_defs = [], []
            for x0 in x0_leaves:
                flat, sub = _tree_util.tree_flatten(init(x0))
                packed.append(flat)
                subtree_defs.append(sub)
            return OptimizerState(tuple(packed), tree_def, tuple(subtree_defs))

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            opt_state = _check_state(opt_state, "optimizer update_fun")
            grad_leaves, grad_def = _tree_util.tree_flatten(grad_tree)
            if grad_def != opt_state.tree_def:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match the parameter tree "
                    f"structure with which it was initialized: parameter tree {opt_state.tree_def} and grad tree "
                    f"{grad_def}; pass gradients of the parameters that get_params(opt_state) returns")
            packed, subtree_defs = [], []
            for g, state, sub in zip(grad_leaves, _split_states(opt_state), opt_state.subtree_defs):
                flat, new_sub = _tree_util.tree_flatten(update(i, g, state))
                if new_sub != sub:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not match its input "
                        f"structure: input {sub} and output {new_sub}")
                packed.append(flat)
                subtree_defs.append(new_sub)
            return OptimizerState(tuple(packed), opt_state.tree_def, opt_state.subtree_defs)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            opt_state = _check_state(opt_state, "optimizer get_params")
            leaves = [get_params(state) for state in _split_states(opt_state)]
            return _tree_util.tree_unflatten(opt_state.tree_def, leaves)

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


def _check_number(value, name, who):
    """Hyperparameters other than the step size are numbers (or 0-d arrays)."""
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return
    if isinstance(value, qb.Array) and value.ndim == 0:
        return  # a 0-d array (possibly traced)
    raise TypeError(f"{who}: {name} must be a scalar number, got {type(value).__name__} {value!r}")


# ---------------------------------------------------------------------------------------------
# Optimizers. Each per-array state is a tuple whose first entry is the parameter array.
# ---------------------------------------------------------------------------------------------

@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size, mass):
    """SGD with (heavy-ball) momentum: ``v <- mass * v + g``, ``x <- x - step_size(i) * v``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      mass: the momentum coefficient.
    """
    step_size = make_schedule(step_size)
    _check_number(mass, "mass", "momentum")

    def init(x0):
        return x0, qb.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def nesterov(step_size, mass):
    """SGD with Nesterov momentum: ``v <- mass * v + g``,
    ``x <- x - step_size(i) * (mass * v + g)``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      mass: the momentum coefficient.
    """
    step_size = make_schedule(step_size)
    _check_number(mass, "mass", "nesterov")

    def init(x0):
        return x0, qb.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi, Hazan and Singer, 2011) with momentum on the scaled gradient:
    ``G <- G + g**2``, ``m <- (1 - momentum) * g / sqrt(G) + momentum * m`` (0 where G is 0),
    ``x <- x - step_size(i) * m``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      momentum: the momentum coefficient (default 0.9).
    """
    step_size = make_schedule(step_size)
    _check_number(momentum, "momentum", "adagrad")

    def init(x0):
        return x0, qb.zeros_like(x0), qb.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + qb.square(g)
        # 1/sqrt(G) where G > 0 and 0 elsewhere (a parameter that never had a gradient).
        inv_sqrt = qb.where(g_sq > 0, 1.0 / qb.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: ``a <- gamma * a + (1 - gamma) * g**2``, ``x <- x - step_size(i) * g / sqrt(a + eps)``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      gamma: the decay of the squared-gradient average (default 0.9).
      eps: added under the square root (default 1e-8).
    """
    step_size = make_schedule(step_size)
    _check_number(gamma, "gamma", "rmsprop")
    _check_number(eps, "eps", "rmsprop")

    def init(x0):
        return x0, qb.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + qb.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / qb.sqrt(avg_sq_grad + eps), avg_sq_grad

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum: ``a <- gamma * a + (1 - gamma) * g**2``,
    ``m <- momentum * m + step_size(i) * g / sqrt(a + eps)``, ``x <- x - m``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      gamma: the decay of the squared-gradient average (default 0.9).
      eps: added under the square root (default 1e-8).
      momentum: the momentum coefficient (default 0.9).
    """
    step_size = make_schedule(step_size)
    for name, value in (("gamma", gamma), ("eps", eps), ("momentum", momentum)):
        _check_number(value, name, "rmsprop_momentum")

    def init(x0):
        return x0, qb.zeros_like(x0), qb.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + qb.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / qb.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    def get_params(state):
        return state[0]

    return init, update, get_params


def _bias_correction(beta, i, dtype):
    """1 - beta**(i + 1) in the parameters' dtype (i may be a Python int or an integer array)."""
    return 1 - qb.asarray(beta, dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015): ``m <- (1 - b1) g + b1 m``, ``v <- (1 - b2) g**2 + b2 v``,
    ``x <- x - step_size(i) * mhat / (sqrt(vhat) + eps)`` with the bias-corrected
    ``mhat = m / (1 - b1**(i+1))`` and ``vhat = v / (1 - b2**(i+1))``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      b1: the first-moment decay (default 0.9).
      b2: the second-moment decay (default 0.999).
      eps: added to sqrt(vhat) (default 1e-8).
    """
    step_size = make_schedule(step_size)
    for name, value in (("b1", b1), ("b2", b2), ("eps", eps)):
        _check_number(value, name, "adam")

    def init(x0):
        return x0, qb.zeros_like(x0), qb.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * qb.square(g) + b2 * v
        mhat = m / _bias_correction(b1, i, m.dtype)
        vhat = v / _bias_correction(b2, i, m.dtype)
        return x - step_size(i) * mhat / (qb.sqrt(vhat) + eps), m, v

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax, Adam with the infinity norm: ``m <- (1 - b1) g + b1 m``, ``u <- max(b2 u, |g|)``,
    ``x <- x - step_size(i) / (1 - b1**(i+1)) * m / (u + eps)``.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      b1: the first-moment decay (default 0.9).
      b2: the decay of the infinity norm (default 0.999).
      eps: added to u (default 1e-8).
    """
    step_size = make_schedule(step_size)
    for name, value in (("b1", b1), ("b2", b2), ("eps", eps)):
        _check_number(value, name, "adamax")

    def init(x0):
        return x0, qb.zeros_like(x0), qb.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = qb.maximum(b2 * u, qb.abs(g))
        x = x - (step_size(i) / _bias_correction(b1, i, m.dtype)) * m / (u + eps)
        return x, m, u

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil, Gupta, Koren and Singer, 2019), memory-efficient adaptive optimization:
    one accumulator vector per axis of each parameter instead of a full second-moment array.

    Each step forms ``accum = min over axes of the broadcast accumulators + g**2``, updates
    ``m <- (1 - momentum) * g / sqrt(accum) + momentum * m`` (0 where accum is 0) and
    ``x <- x - step_size(i) * m``, and keeps, per axis, the maximum of ``accum`` over the
    other axes. A 0-d parameter is held as a 1-element vector; the state also records the
    parameter's shape (as Python ints, which stay static under qb.jit).

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      momentum: the momentum coefficient (default 0.9).
    """
    step_size = make_schedule(step_size)
    _check_number(momentum, "momentum", "sm3")

    def along_axis(ndim, v, axis):
        # View the 1-d accumulator v of axis `axis` as an ndim-d array broadcasting along the others.
        index = [None] * ndim
        index[axis] = slice(None)
        return v[tuple(index)]

    def init(x0):
        x_shape = tuple(int(d) for d in qb.shape(x0))
        x0 = qb.atleast_1d(x0)
        accumulators = [qb.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, qb.zeros_like(x0), accumulators, x_shape

    def update(i, g, state):
        x, m, accumulators, x_shape = state
        if qb.ndim(g) == 0:
            g = qb.reshape(g, (1,))  # a 0-d parameter is held as shape (1,)
        ndim = x.ndim
        broadcast = [along_axis(ndim, v, axis) for axis, v in enumerate(accumulators)]
        accum = functools.reduce(qb.minimum, broadcast) + qb.square(g)
        inv_sqrt = qb.where(accum > 0, 1.0 / qb.sqrt(accum), 0.0)
        m = (1.0 - momentum) * (g * inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        accumulators = [qb.max(accum, axis=tuple(a for a in range(ndim) if a != axis)) for axis in range(ndim)]
        return x, m, accumulators, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return qb.reshape(x, tuple(int(d) for d in x_shape))

    return init, update, get_params


# ---------------------------------------------------------------------------------------------
# Step-size schedules: functions of the step index i (a Python int or an integer array).
# ---------------------------------------------------------------------------------------------

def constant(step_size) -> Schedule:
    """The schedule that returns ``step_size`` at every step."""
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    _check_decay_steps(decay_steps, "exponential_decay")

    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase=True`` the ratio
    ``i / decay_steps`` is rounded down, so the step size drops every ``decay_steps`` steps."""
    _check_decay_steps(decay_steps, "inverse_time_decay")
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * qb.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """From ``step_size`` at step 0 to ``final_step_size`` at step ``decay_steps`` (and after),
    as ``(1 - min(i, decay_steps) / decay_steps) ** power * (step_size - final_step_size) +
    final_step_size``."""
    _check_decay_steps(decay_steps, "polynomial_decay")

    def schedule(step_num):
        step_num = qb.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """``values[k]`` for the steps i with exactly k boundaries below i: ``values[0]`` up to
    and including step ``boundaries[0]``, ``values[1]`` up to ``boundaries[1]``, ...,
    ``values[-1]`` after the last boundary. ``values`` has one more entry than ``boundaries``."""
    boundaries = qb.array(boundaries)
    values = qb.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError(f"piecewise_constant: boundaries and values must be sequences (1-d), got shapes "
                         f"{boundaries.shape} and {values.shape}")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError(f"piecewise_constant: boundaries length must be one shorter than values length, got "
                         f"{boundaries.shape[0]} boundaries and {values.shape[0]} values")

    def schedule(i):
        return values[qb.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule) -> Schedule:
    """A callable is returned as it is (a schedule); a scalar becomes ``constant(scalar)``."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if not isinstance(scalar_or_schedule, (str, bytes)):
        try:
            ndim = qb.ndim(scalar_or_schedule)
        except Exception:
            ndim = None
        if ndim == 0:
            return constant(scalar_or_schedule)
    raise TypeError(f"the step size must be a scalar or a schedule (a function of the step index), got "
                    f"{type(scalar_or_schedule).__name__} {scalar_or_schedule!r}")


def _check_decay_steps(decay_steps, who):
    if isinstance(decay_steps, numbers.Number) and not isinstance(decay_steps, bool) and decay_steps == 0:
        raise ValueError(f"{who}: decay_steps must be nonzero (the schedule divides by it)")


# ---------------------------------------------------------------------------------------------
# Utilities.
# ---------------------------------------------------------------------------------------------

def l2_norm(tree):
    """The l2 norm of a pytree of arrays: the square root of the sum of ``vdot(x, x)`` over
    its leaves (useful for weight decay)."""
    leaves = _tree_util.tree_leaves(tree)
    return qb.sqrt(sum(qb.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scales a gradient pytree down to l2 norm ``max_norm`` when its norm is larger (and
    returns it unchanged otherwise)."""
    norm = l2_norm(grad_tree)

    def normalize(g):
        return qb.where(norm < max_norm, g, g * (max_norm / norm))
    return _tree_util.tree_map(normalize, grad_tree)


# ---------------------------------------------------------------------------------------------
# Serialization: an OptimizerState as a plain pytree and back.
# ---------------------------------------------------------------------------------------------

class JoinPoint:
    """Marks, in an unpacked optimizer state, where a parameter leaf's own state pytree
    (``.subtree``) sits in the parameter tree. JoinPoint is not a pytree node, so the outer
    tree flattens to JoinPoints; it is iterable (yielding its subtree) for serializers that
    walk containers."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree

    def __repr__(self):
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state):
    """An OptimizerState as a pytree of the parameters' structure whose leaves are
    JoinPoints holding each parameter's state pytree (for serializing states)."""
    opt_state = _check_state(opt_state, "unpack_optimizer_state")
    joins = [JoinPoint(state) for state in _split_states(opt_state)]
    return _tree_util.tree_unflatten(opt_state.tree_def, joins)


def pack_optimizer_state(marked_pytree):
    """The inverse of unpack_optimizer_state: a pytree with JoinPoint leaves back to the
    equivalent OptimizerState."""
    joins, tree_def = _tree_util.tree_flatten(marked_pytree)
    for leaf in joins:
        if not isinstance(leaf, JoinPoint):
            raise TypeError(f"pack_optimizer_state: every leaf must be a JoinPoint (as unpack_optimizer_state "
                            f"returns), got a {type(leaf).__name__}")
    packed, subtree_defs = [], []
    for join in joins:
        flat, sub = _tree_util.tree_flatten(join.subtree)
        packed.append(flat)
        subtree_defs.append(sub)
    return OptimizerState(tuple(packed), tree_def, tuple(subtree_defs))
