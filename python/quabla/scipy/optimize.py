"""jax.scipy.optimize.minimize: BFGS (a dense inverse-Hessian estimate) and L-BFGS on a
1-D x0, as traced loops (_quasi_newton.py): the same program runs under jit and vmap and,
called eagerly, is jitted once per call."""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

from .. import _core
from .._package import qb as _qb
from . import _quasi_newton

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


# Status codes (jax.scipy.optimize's): converged, iterations exhausted, line search failed.
_CONVERGED, _MAX_ITER, _LINE_SEARCH_FAILED = 0, 1, 3


def minimize(fun: Callable, x0, args=(), *, method: str, tol: Optional[float] = None,
             options: Optional[dict] = None) -> OptimizeResults:
    """Minimises fun(x, *args) over a 1-D x from x0. method: 'BFGS', or
    'l-bfgs-experimental-do-not-rely-on-this' (JAX's name; 'L-BFGS-B' is accepted, without
    bounds). tol is the gradient tolerance (gtol). options, BFGS: maxiter (200 * x0.size),
    gtol (1e-5), norm (inf: the gradient's max-norm is compared with gtol),
    line_search_maxiter or maxls (10); L-BFGS: maxiter, gtol, norm, maxcor (10), ftol
    (2.2e-9), maxfun, maxgrad, maxls (20). Unknown options raise ValueError rather than
    being ignored. Works inside jit and vmap (the iteration is a while_loop); the results
    are arrays, as jax.scipy's."""
    if not callable(fun):
        raise TypeError(f"minimize: fun must be callable, got {type(fun).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple, got {type(args).__name__}")
    name = method.lower() if isinstance(method, str) else method
    lbfgs = name in ("l-bfgs-b", "l-bfgs-experimental-do-not-rely-on-this", "lbfgs")
    if name != "bfgs" and not lbfgs:
        raise ValueError(f"minimize: method must be 'BFGS' or 'l-bfgs-experimental-do-not-rely-on-this', got {method!r}")
    x = _qb.asarray(x0)
    if x.ndim != 1:
        raise ValueError(f"minimize: x0 must be a 1-D array, got shape {tuple(x.shape)} (ravel it, e.g. with "
                         "quabla.flatten_util.ravel_pytree)")
    if x.dtype not in (_core.float32, _core.float64):
        x = x.astype(_qb.default_dtype())
    opts = dict(options or {})
    known = ({"maxiter", "gtol", "norm", "maxcor", "ftol", "maxfun", "maxgrad", "maxls"} if lbfgs
             else {"maxiter", "gtol", "norm", "line_search_maxiter", "maxls"})
    unknown = set(opts) - known
    if unknown:
        raise ValueError(f"minimize: unknown options {sorted(unknown)} for {method}; known: {sorted(known)}")
    gtol = float(opts.get("gtol", 1e-5 if tol is None else tol))
    norm = opts.get("norm", math.inf)
    size = max(x.shape[0], 1)

    def run(v):
        def value_and_grad(u):
            f, g = _qb.value_and_grad(lambda w: _objective(fun, w, args))(u)
            return f.astype(u.dtype), g.astype(u.dtype)
        if lbfgs:
            unlimited = 2 ** 31 - 1
            limits = [opts.get(k) for k in ("maxiter", "maxfun", "maxgrad")]
            if all(lim is None for lim in limits):
                limits[0] = 200 * size
            maxiter, maxfun, maxgrad = (unlimited if lim is None else int(lim) for lim in limits)
            s = _quasi_newton.lbfgs(value_and_grad, v, gtol, maxiter, norm, int(opts.get("maxls", 20)),
                                    int(opts.get("maxcor", 10)), float(opts.get("ftol", 2.220446049250313e-09)),
                                    maxfun, maxgrad)
            hess_inv = None
        else:
            maxiter = int(opts.get("maxiter") or 200 * size)
            s = _quasi_newton.bfgs(value_and_grad, v, gtol, maxiter, norm,
                                   int(opts.get("line_search_maxiter", opts.get("maxls", 10))))
            hess_inv = s["h"]
        return OptimizeResults(s["x"], s["success"], s["status"], s["f"], s["g"], hess_inv, s["nfev"], s["nfev"],
                               s["k"])

    if _core.tracing():
        return run(x)
    result = _qb.jit(run)(x)
    # The line search accepts finite values only: a NaN or +inf result is fun(x0)'s.
    if bool(_qb.isnan(result.fun)) or float(result.fun.item()) == math.inf:
        raise ValueError(f"minimize: fun(x0) is not finite ({result.fun.item()})")
    return result


def _objective(fun, w, args):
    f = _qb.asarray(fun(w, *args))
    if f.shape != ():
        raise TypeError(f"minimize: fun must return a scalar, got shape {tuple(f.shape)}")
    return f
