"""optax's L-BFGS for quabla.optax: scale_by_lbfgs (the two-loop recursion over a ring
buffer of parameter and gradient differences), scale_by_zoom_linesearch (a strong-Wolfe
zoom line search with cubic / quadratic / bisection interpolation) and lbfgs, their chain,
with optax 0.2.8's defaults and formulas; value_and_grad_from_state reuses the value and
gradient the line search stored in the state.

The line search is a loop whose iterations depend on values: on concrete arrays it runs as
a Python loop; inside qb.jit (or another trace) as a qb.while_loop with qb.cond choosing the
interval search or the zoom, so a jitted update is one compiled program.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple, Optional

from . import _core
from . import tree as _tree


# ---- pytree arithmetic (optax.tree's, in the same operation order) ---------------------------

def _vdot(a, b):
    out = 0  # (a weak zero, as optax's initializer: the sum keeps the leaves' dtype)
    for x, y in zip(_tree.leaves(a), _tree.leaves(b)):
        out = out + _core.sum(_core.asarray(x) * _core.asarray(y))
    return _core.asarray(out)


def _sq_norm(t):
    return _vdot(t, t)


def _add_scale(x, s, y):
    return _tree.map(lambda a, b: a + s * b, x, y)


def _sub(a, b):
    return _tree.map(lambda x, y: x - y, a, b)


def _scale(s, t):
    return _tree.map(lambda x: s * x, t)


def _where(pred, on_true, on_false):
    return _tree.map(lambda a, b: _core.where(pred, a, b), on_true, on_false)


def _cast_like(t, like):
    return _tree.map(lambda a, b: _core.asarray(a).astype(_core.asarray(b).dtype), t, like)


def _leaf_dtype(params):
    """The first leaf's dtype: the dtype of the optimiser's scalars (quabla does not mix
    float32 and float64 implicitly, so float32 parameters keep float32 weights and steps)."""
    leaves = _tree.leaves(params)
    return _core.asarray(leaves[0]).dtype if leaves else _core.default_dtype()


def _is_traced(tree) -> bool:
    return any(isinstance(x, _core.Array) and x._is_tracer for x in _tree.leaves(tree))


def _branch(pred, on_true: Callable, on_false: Callable, operand):
    """on_true(operand) if pred else on_false(operand): a Python choice on concrete values,
    qb.cond (only the chosen branch runs) on traced ones."""
    if isinstance(pred, _core.Array) and pred._is_tracer:
        from ._control import cond
        return cond(pred, on_true, on_false, operand)
    return on_true(operand) if bool(pred) else on_false(operand)


def _loop(cond_fn: Callable, body_fn: Callable, state):
    if _is_traced(state):
        from ._control import while_loop
        return while_loop(cond_fn, body_fn, state)
    while bool(cond_fn(state)):
        state = body_fn(state)
    return state


# ---- scale_by_lbfgs ----------------------------------------------------------------------------

class ScaleByLBFGSState(NamedTuple):
    count: Any
    params: Any
    updates: Any
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


def _precondition(updates, dw_mem, du_mem, rhos, identity_scale, memory_idx, memory_size):
    """The two-loop recursion (Nocedal & Wright, algorithm 7.4): the newest pair first on the
    way in, the oldest first on the way out; unused (zero) slots have weight 0."""
    indices = [(memory_idx + j) % memory_size for j in range(memory_size)]
    vec, alphas = updates, [None] * memory_size
    for j in reversed(range(memory_size)):
        i = indices[j]
        dwi, dui = _tree.map(lambda m: m[i], dw_mem), _tree.map(lambda m: m[i], du_mem)
        alphas[j] = rhos[i] * _vdot(dwi, vec)
        vec = _cast_like(_add_scale(vec, -alphas[j], dui), vec)
    vec = _scale(identity_scale, vec)
    for j in range(memory_size):
        i = indices[j]
        dwi, dui = _tree.map(lambda m: m[i], dw_mem), _tree.map(lambda m: m[i], du_mem)
        beta = rhos[i] * _vdot(dui, vec)
        vec = _cast_like(_add_scale(vec, alphas[j] - beta, dwi), vec)
    return vec


def scale_by_lbfgs(memory_size: int = 10, scale_init_precond: bool = True):
    """optax.scale_by_lbfgs: the updates multiplied by the L-BFGS approximation of the
    inverse Hessian built from the last memory_size differences of params and updates."""
    from .optax import GradientTransformation
    if isinstance(memory_size, bool) or not isinstance(memory_size, int):
        raise TypeError(f"optax.scale_by_lbfgs: memory_size must be an int, got {type(memory_size).__name__}")
    if memory_size < 1:
        raise ValueError(f"optax.scale_by_lbfgs: memory_size must be >= 1, got {memory_size}")

    def init(params):
        stacked = _tree.map(lambda p: _core.zeros((memory_size,) + tuple(_core.asarray(p).shape),
                                                  dtype=_core.asarray(p).dtype), params)
        zeros = _tree.map(lambda p: _core.zeros_like(_core.asarray(p)), params)
        return ScaleByLBFGSState(count=_core.zeros((), dtype=_core.int32), params=zeros, updates=zeros,
                                 diff_params_memory=stacked, diff_updates_memory=stacked,
                                 weights_memory=_core.zeros((memory_size,), dtype=_leaf_dtype(params)))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("optax.scale_by_lbfgs: update needs params (the current parameters)")
        count = state.count
        memory_idx = count % memory_size
        prev_idx = (count - 1) % memory_size
        first = count > 0
        diff_params = _sub(params, state.params)
        diff_updates = _sub(updates, state.updates)
        vdot_du_dw = _vdot(diff_updates, diff_params)
        weight = _core.where(vdot_du_dw == 0.0, 0.0, 1.0 / vdot_du_dw)
        diff_params, diff_updates, weight = _tree.map(lambda x: _core.where(first, x, _core.zeros_like(x)),
                                                      (diff_params, diff_updates, weight))
        dw_mem, du_mem, w_mem = _tree.map(lambda m, v: m.at[prev_idx].set(_core.asarray(v).astype(m.dtype)),
                                          (state.diff_params_memory, state.diff_updates_memory,
                                           state.weights_memory), (diff_params, diff_updates, weight))
        if scale_init_precond:
            numerator = _vdot(diff_updates, diff_params)
            denominator = _sq_norm(diff_updates)
            identity_scale = _core.where(denominator > 0.0, numerator / denominator, 1.0)
            update_norm = _core.sqrt(_sq_norm(_tree.map(_core.stop_gradient, updates)))
            capped_inv_norm = _core.minimum(1.0, 1.0 / update_norm)
            identity_scale = _core.where(first, identity_scale, capped_inv_norm)
        else:
            identity_scale = 1.0
        precond = _precondition(updates, dw_mem, du_mem, w_mem, identity_scale, memory_idx, memory_size)
        return precond, ScaleByLBFGSState(count=count + 1, params=params, updates=updates, diff_params_memory=dw_mem,
                                          diff_updates_memory=du_mem, weights_memory=w_mem)
    return GradientTransformation(init, update)


# ---- the zoom line search ----------------------------------------------------------------------

class ZoomLinesearchState(NamedTuple):
    count: Any
    params: Any
    updates: Any
    stepsize_guess: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    value_init: Any
    slope_init: Any
    decrease_error: Any
    curvature_error: Any
    error: Any
    interval_found: Any
    done: Any
    failed: Any
    low: Any
    value_low: Any
    slope_low: Any
    high: Any
    value_high: Any
    slope_high: Any
    cubic_ref: Any
    value_cubic_ref: Any
    safe_stepsize: Any
    safe_value: Any
    safe_grad: Any


class ZoomLinesearchInfo(NamedTuple):
    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    learning_rate: Any
    value: Any
    grad: Any
    info: Any


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc)."""
    C = fpa
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    r1, r2 = fb - fa - C * db, fc - fa - C * dc
    A = (dc ** 2 * r1 + (-(db ** 2)) * r2) / denom
    B = ((-(dc ** 3)) * r1 + db ** 3 * r2) / denom
    radical = B * B - 3.0 * A * C
    return a + (-B + _core.sqrt(radical)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The minimiser of the quadratic through (a, fa) with slope fpa at a and (b, fb)."""
    db = b - a
    B = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2.0 * B)


def _zoom_linesearch(max_linesearch_steps, max_stepsize, tol, increase_factor, slope_rtol, curv_rtol,
                     approx_dec_rtol, interval_threshold):
    inf = float("inf")

    def on_line(value_and_grad_fn, params, stepsize, updates, fn_kwargs):
        step = _add_scale(params, stepsize, updates)
        value, grad = value_and_grad_fn(step, **fn_kwargs)
        return value, grad, _vdot(grad, updates)

    def decrease_error_of(stepsize, value, slope, value_init, slope_init):
        err = value - value_init - slope_rtol * stepsize * slope_init
        if approx_dec_rtol is not None:
            approx = slope - (2 * slope_rtol - 1.0) * slope_init
            delta = value - value_init - approx_dec_rtol * _core.abs(value_init)
            err = _core.minimum(_core.maximum(approx, delta), err)
        err = _core.maximum(err, 0.0)
        return _core.where(_core.isnan(err), inf, err)

    def curvature_error_of(slope, slope_init):
        err = _core.maximum(_core.abs(slope) - curv_rtol * _core.abs(slope_init), 0.0)
        return _core.where(_core.isnan(err), inf, err)

    def try_safe_step(s):
        use_safe = (s.safe_stepsize > 0.0) | _core.isinf(s.decrease_error)
        stepsize, value, grad = _where(use_safe, [s.safe_stepsize, s.safe_value, s.safe_grad],
                                       [s.stepsize, s.value, s.grad])
        return _cast_like(s._replace(stepsize=stepsize, value=value, grad=grad), s)

    def search_interval(s, value_and_grad_fn, fn_kwargs):
        it = s.count
        new_stepsize = _core.where(it == 0, s.stepsize_guess, increase_factor * s.stepsize)
        if max_stepsize is not None:
            max_reached = new_stepsize >= max_stepsize
            new_stepsize = _core.minimum(new_stepsize, max_stepsize)
        else:
            max_reached = _core.asarray(False)
        value, grad, slope = on_line(value_and_grad_fn, s.params, new_stepsize, s.updates, fn_kwargs)
        dec = decrease_error_of(new_stepsize, value, slope, s.value_init, s.slope_init)
        curv = curvature_error_of(slope, s.slope_init)
        error = _core.maximum(dec, curv)
        safe_stepsize, safe_value, safe_grad = _where(dec <= tol, [new_stepsize, value, grad],
                                                      [s.safe_stepsize, s.safe_value, s.safe_grad])
        set_high_to_new = (dec > 0.0) | ((value >= s.value) & (it > 0))
        set_low_to_new = (slope >= 0.0) & (~set_high_to_new)
        low, value_low, slope_low, high, value_high, slope_high = _where(
            set_low_to_new, [new_stepsize, value, slope, s.stepsize, s.value, s.slope],
            [s.stepsize, s.value, s.slope, new_stepsize, value, slope])
        interval_found = set_high_to_new | set_low_to_new | (error <= tol)
        done = (error <= tol) | (max_reached & ~interval_found)
        failed = (it + 1 >= max_linesearch_steps) & (~done)
        new = ZoomLinesearchState(
            count=it + 1, params=s.params, updates=s.updates, stepsize_guess=s.stepsize_guess,
            stepsize=new_stepsize, value=value, grad=grad, slope=slope, value_init=s.value_init,
            slope_init=s.slope_init, decrease_error=dec, curvature_error=curv, error=error,
            interval_found=interval_found, done=done, failed=failed, low=low, value_low=value_low,
            slope_low=slope_low, high=high, value_high=value_high, slope_high=slope_high, cubic_ref=low,
            value_cubic_ref=value_low, safe_stepsize=safe_stepsize, safe_value=safe_value, safe_grad=safe_grad)
        return _cast_like(new, s)

    def zoom_into_interval(s, value_and_grad_fn, fn_kwargs):
        it = s.count
        low, value_low, slope_low = s.low, s.value_low, s.slope_low
        high, value_high, slope_high = s.high, s.value_high, s.slope_high
        delta = _core.abs(high - low)
        left, right = _core.minimum(high, low), _core.maximum(high, low)
        cubic_chk, quad_chk = 0.2 * delta, 0.1 * delta
        too_small_int = delta <= interval_threshold
        middle_cubic = _cubicmin(low, value_low, slope_low, high, value_high, s.cubic_ref, s.value_cubic_ref)
        use_cubic = (middle_cubic > left + cubic_chk) & (middle_cubic < right - cubic_chk)
        middle_quad = _quadmin(low, value_low, slope_low, high, value_high)
        use_quad = (~use_cubic) & (middle_quad > left + quad_chk) & (middle_quad < right - quad_chk)
        use_bisection = (~use_cubic) & (~use_quad)
        middle = _core.where(use_cubic, middle_cubic, s.cubic_ref)
        middle = _core.where(use_quad, middle_quad, middle)
        middle = _core.where(use_bisection, (low + high) / 2.0, middle)
        value, grad, slope = on_line(value_and_grad_fn, s.params, middle, s.updates, fn_kwargs)
        dec = decrease_error_of(middle, value, slope, s.value_init, s.slope_init)
        curv = curvature_error_of(slope, s.slope_init)
        error = _core.maximum(dec, curv)
        update_safe = (dec <= tol) & (value < s.safe_value)
        safe_stepsize, safe_value, safe_grad = _where(update_safe, [middle, value, grad],
                                                      [s.safe_stepsize, s.safe_value, s.safe_grad])
        done = error <= tol
        set_high_to_middle = (dec > 0.0) | (value >= value_low)
        set_high_to_low = (slope * (high - low) >= 0.0) & (~set_high_to_middle)
        set_low_to_middle = ~set_high_to_middle
        h = _where(set_high_to_middle, [middle, value, slope], [high, value_high, slope_high])
        new_high, new_value_high, new_slope_high = _where(set_high_to_low, [low, value_low, slope_low], h)
        new_low, new_value_low, new_slope_low = _where(set_low_to_middle, [middle, value, slope],
                                                       [low, value_low, slope_low])
        new_cubic_ref, new_value_cubic_ref = _where(set_high_to_middle | set_high_to_low, [high, value_high],
                                                    [low, value_low])
        presumably_failed = ((it + 1) >= max_linesearch_steps) | (too_small_int & (safe_stepsize > 0.0))
        new = ZoomLinesearchState(
            count=it + 1, params=s.params, updates=s.updates, stepsize_guess=s.stepsize_guess, stepsize=middle,
            value=value, grad=grad, slope=slope, value_init=s.value_init, slope_init=s.slope_init,
            decrease_error=dec, curvature_error=curv, error=error, interval_found=s.interval_found, done=done,
            failed=presumably_failed & ~done, low=new_low, value_low=new_value_low, slope_low=new_slope_low,
            high=new_high, value_high=new_value_high, slope_high=new_slope_high, cubic_ref=new_cubic_ref,
            value_cubic_ref=new_value_cubic_ref, safe_stepsize=safe_stepsize, safe_value=safe_value,
            safe_grad=safe_grad)
        return _cast_like(new, s)

    def init(updates, params, *, value, grad, prev_stepsize, initial_guess_strategy, val_dtype):
        if initial_guess_strategy == "one":
            guess = _core.asarray(1.0, dtype=val_dtype)
        else:  # "keep"
            guess = _core.asarray(prev_stepsize).astype(val_dtype)
        slope = _vdot(updates, grad).astype(val_dtype)
        value = _core.asarray(value).astype(val_dtype)
        zero, false = _core.asarray(0.0, dtype=val_dtype), _core.asarray(False)
        big = _core.asarray(inf, dtype=val_dtype)
        return ZoomLinesearchState(
            count=_core.zeros((), dtype=_core.int32), params=params, updates=updates, stepsize_guess=guess,
            stepsize=zero, value=value, grad=grad, slope=slope, value_init=value, slope_init=slope,
            decrease_error=big, curvature_error=big, error=big, interval_found=false, done=false, failed=false,
            low=zero, value_low=value, slope_low=slope, high=zero, value_high=value, slope_high=slope,
            cubic_ref=zero, value_cubic_ref=value, safe_stepsize=zero, safe_value=value, safe_grad=grad)

    def run(state, value_and_grad_fn, fn_kwargs):
        def step(s):
            new = _branch(s.interval_found, lambda t: zoom_into_interval(t, value_and_grad_fn, fn_kwargs),
                          lambda t: search_interval(t, value_and_grad_fn, fn_kwargs), s)
            return _branch(new.failed, try_safe_step, lambda t: t, new)
        return _loop(lambda s: ~(s.done | s.failed), step, state)

    return init, run


def _fn_kwargs(fn, extra: dict, name: str) -> dict:
    """The extra keyword arguments value_fn accepts (by its signature), as optax's
    _extract_fns_kwargs; any other is a TypeError."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    unused = sorted(k for k in extra if k not in names)
    if unused:
        raise TypeError(f"{name}: unexpected keyword arguments {unused}: they are not parameters of value_fn "
                        f"(extra arguments of update go to value_fn)")
    return {k: v for k, v in extra.items() if k in names}


def scale_by_zoom_linesearch(max_linesearch_steps: int, max_learning_rate: Optional[float] = None,
                             tol: float = 0.0, increase_factor: float = 2.0, slope_rtol: float = 1e-4,
                             curv_rtol: float = 0.9, approx_dec_rtol: Optional[float] = 1e-6,
                             stepsize_precision: float = 1e-5, initial_guess_strategy: str = "keep",
                             verbose: bool = False):
    """optax.scale_by_zoom_linesearch: updates scaled by a step size satisfying the strong
    Wolfe conditions (sufficient decrease slope_rtol, curvature curv_rtol), found by
    doubling then zooming. update(updates, state, params, *, value, grad, value_fn, **kw):
    value and grad at params, value_fn(params, **kw) the objective."""
    from .optax import GradientTransformationExtraArgs
    name = "optax.scale_by_zoom_linesearch"
    if isinstance(max_linesearch_steps, bool) or not isinstance(max_linesearch_steps, int) \
            or max_linesearch_steps < 1:
        raise ValueError(f"{name}: max_linesearch_steps must be a positive int, got {max_linesearch_steps!r}")
    if initial_guess_strategy not in ("one", "keep"):
        raise ValueError(f"{name}: unknown initial_guess_strategy {initial_guess_strategy!r}; use 'one' or 'keep'")
    if verbose:
        raise NotImplementedError(f"{name}: verbose=True (printed diagnostics) is not supported; use the state's "
                                  f"info (num_linesearch_steps, decrease_error, curvature_error)")
    init_ls, run_ls = _zoom_linesearch(max_linesearch_steps, max_learning_rate, tol, increase_factor, slope_rtol,
                                       curv_rtol, approx_dec_rtol, stepsize_precision)

    val_dtype = _leaf_dtype

    def init(params):
        dt = val_dtype(params)
        big = _core.asarray(float("inf"))
        return ScaleByZoomLinesearchState(
            learning_rate=_core.asarray(1.0, dtype=dt), value=_core.asarray(float("inf"), dtype=dt),
            grad=_tree.map(lambda p: _core.zeros_like(_core.asarray(p)), params),
            info=ZoomLinesearchInfo(num_linesearch_steps=_core.zeros((), dtype=_core.int32), decrease_error=big,
                                    curvature_error=big))

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None, **extra_args):
        if params is None or value is None or grad is None or value_fn is None:
            raise TypeError(f"{name}: update needs params and the keyword arguments value=, grad= (the objective "
                            f"and its gradient at params) and value_fn= (the objective); see "
                            f"optax.value_and_grad_from_state")
        if not callable(value_fn):
            raise TypeError(f"{name}: value_fn must be callable, got {type(value_fn).__name__}")
        fn_kwargs = _fn_kwargs(value_fn, extra_args, name)
        from ._ad import value_and_grad
        ls = init_ls(updates, params, value=value, grad=grad, prev_stepsize=state.learning_rate,
                     initial_guess_strategy=initial_guess_strategy, val_dtype=val_dtype(params))
        final = run_ls(ls, value_and_grad(value_fn), fn_kwargs)
        lr = final.stepsize
        new_state = ScaleByZoomLinesearchState(
            learning_rate=lr, value=final.value, grad=final.grad,
            info=ZoomLinesearchInfo(num_linesearch_steps=final.count, decrease_error=final.decrease_error,
                                    curvature_error=final.curvature_error))
        return _scale(lr, updates), _cast_like(new_state, state)
    return GradientTransformationExtraArgs(init, update)


def lbfgs(learning_rate=None, memory_size: int = 10, scale_init_precond: bool = True, linesearch="default"):
    """optax.lbfgs: chain(scale_by_lbfgs, scale(-1) or -learning_rate, linesearch), the line
    search by default scale_by_zoom_linesearch(max_linesearch_steps=20,
    initial_guess_strategy='one'); update(grads, state, params, value=, grad=, value_fn=)."""
    from . import optax as _optax
    if linesearch == "default":
        linesearch = scale_by_zoom_linesearch(max_linesearch_steps=20, initial_guess_strategy="one")
    base = _optax.scale(-1.0) if learning_rate is None else _optax.scale_by_learning_rate(learning_rate)
    if linesearch is None:
        linesearch = _optax.identity()
    return _optax.chain(scale_by_lbfgs(memory_size=memory_size, scale_init_precond=scale_init_precond), base,
                        linesearch)


def _tree_get(state, key: str):
    """The one field named `key` among the NamedTuples inside state (optax.tree.get)."""
    found = []

    def walk(node):
        if isinstance(node, tuple) and hasattr(type(node), "_fields"):
            for f in type(node)._fields:
                v = getattr(node, f)
                if f == key:
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(node, (tuple, list)):
            for v in node:
                walk(v)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
    walk(state)
    if len(found) > 1:
        raise KeyError(f"optax.value_and_grad_from_state: the state holds {len(found)} fields named {key!r}; "
                       f"expected one")
    return found[0] if found else None


def value_and_grad_from_state(value_fn: Callable):
    """optax.value_and_grad_from_state: a function (params, *args, state, **kwargs) ->
    (value, grad) that returns the value and gradient the line search stored in `state`
    when they are finite (the point the last update reached), else computes them."""
    if not callable(value_fn):
        raise TypeError(f"optax.value_and_grad_from_state: value_fn must be callable, got {type(value_fn).__name__}")
    from ._ad import value_and_grad

    def vg(params, *fn_args, state, **fn_kwargs):
        value, grad = _tree_get(state, "value"), _tree_get(state, "grad")
        if value is None or grad is None:
            raise ValueError("optax.value_and_grad_from_state: value or gradient not found in the state; use it "
                             "with an optimizer that stores them (such as optax.lbfgs)")
        value = _core.asarray(value)
        ok = (~_core.isinf(value)) & (~_core.isnan(value))
        return _branch(ok, lambda p: (value, grad), lambda p: value_and_grad(value_fn)(p, *fn_args, **fn_kwargs),
                       params)
    return vg
