"""jax.experimental.ode's odeint on Quabla: ``odeint(func, y0, t, *args, rtol, atol,
mxstep, hmax)`` with func(y, t, *args) and y at every time of t (t[0] first, where it is
y0). Built on :func:`quabla.ode.odeint` with method "dopri5" and ``saveat=t[1:]``, so jit,
grad (with respect to y0, args and t), jvp and vmap come from there; derivatives are those
of the computed solution with its step sizes held fixed, where JAX solves the continuous
adjoint: the two agree to about the tolerances."""
from __future__ import annotations

import math
from typing import Any, Callable

from .. import _core
from .. import ode as _ode
from .. import tree as _tree

__all__ = ["odeint"]

# qb.ode.odeint counts step attempts over the whole run; JAX's mxstep is per output interval.
_DEFAULT_STEPS_PER_INTERVAL = 1024
_MAX_TOTAL_STEPS = 1 << 16


def odeint(func: Callable, y0: Any, t, *args, rtol: float = 1.4e-8, atol: float = 1.4e-8, mxstep=math.inf,
           hmax=math.inf):
    """Solves dy/dt = func(y, t, *args) with y(t[0]) = y0 and returns y at each time of t
    (an array of increasing times), stacked on a new leading axis of every leaf of y0.

    Adaptive Dormand-Prince 5(4) with rtol/atol per component. ``mxstep`` bounds the step
    attempts per interval of t (default: 1024 per interval; a run that needs more raises
    ValueError on concrete values). ``hmax`` must be inf: Quabla's integrator has no
    maximum step size (pass intermediate times in t to bound the steps instead)."""
    name = "experimental.ode.odeint"
    if not callable(func):
        raise TypeError(f"{name}: func must be a function func(y, t, *args), got {type(func).__name__}")
    for what, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"{name}: {what} must be a number > 0, got {v!r}")
    if isinstance(hmax, bool) or not isinstance(hmax, (int, float)) or not hmax > 0:
        raise ValueError(f"{name}: hmax must be a number > 0, got {hmax!r}")
    if hmax != math.inf:
        raise NotImplementedError(f"{name}: hmax={hmax!r} is not supported (Quabla's dopri5 has no maximum step "
                                  f"size); leave hmax=inf and add intermediate times to t to limit the steps")
    if mxstep != math.inf and (isinstance(mxstep, bool) or not isinstance(mxstep, int) or mxstep < 1):
        raise ValueError(f"{name}: mxstep must be an int >= 1 or inf, got {mxstep!r}")
    leaves = _tree.leaves(y0)
    if not leaves:
        raise ValueError(f"{name}: y0 has no arrays")
    t = _core.asarray(t)
    if t.ndim != 1 or t.shape[0] == 0:
        raise ValueError(f"{name}: t must be a non-empty 1-D array of times, got shape {list(t.shape)}")
    if not t._is_tracer and t.shape[0] > 1:
        tn = t.tolist()
        if any(b <= a for a, b in zip(tn[:-1], tn[1:])):
            raise ValueError(f"{name}: t must be strictly increasing, got {tn}")
    intervals = t.shape[0] - 1

    def first(leaf):
        return _core.expand_dims(_core.asarray(leaf), 0)
    if intervals == 0:
        return _tree.map(first, y0)
    per = _DEFAULT_STEPS_PER_INTERVAL if mxstep == math.inf else int(mxstep)
    max_steps = min(per * intervals, max(_MAX_TOTAL_STEPS, per))
    ys = _ode.odeint(func, y0, (t[0], t[-1]), method="dopri5", saveat=t[1:], args=tuple(args), rtol=float(rtol),
                     atol=float(atol), max_steps=max_steps)
    return _tree.map(lambda a, b: _core.concatenate([first(a).astype(b.dtype), b], axis=0), y0, ys)
