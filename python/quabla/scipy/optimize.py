"""jax.scipy.optimize.minimize: BFGS (a dense inverse-Hessian estimate) and L-BFGS on a
1-D x0, with the function's value and gradient compiled once (qb.jit of qb.value_and_grad)
and a strong-Wolfe line search (qb.optim.LBFGS's). The iteration runs eagerly in Python, as
SciPy's; calling it inside jit or another transform raises."""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

from .. import _core
from .._lbfgs import LBFGS
from .._package import qb as _qb

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
    """Minimises fun(x, *args) over a 1-D x from x0. method: 'BFGS', or 'L-BFGS-B' /
    'l-bfgs-experimental-do-not-rely-on-this' (L-BFGS, no bounds). tol is the gradient
    tolerance (gtol); options: maxiter (default 200 * x0.size), gtol (1e-5), norm (inf:
    the gradient's max-norm is compared with gtol), line_search_maxiter or maxls (25), maxcor
    (L-BFGS's history, 10); others raise ValueError rather than being ignored."""
    if _core.tracing():
        raise TypeError("quabla.scipy.optimize.minimize runs its iterations eagerly; call it outside qb.jit and "
                        "the transforms (or use qb.optim.LBFGS / qb.newton inside them)")
    if not callable(fun):
        raise TypeError(f"minimize: fun must be callable, got {type(fun).__name__}")
    x = _qb.asarray(x0)
    if x.ndim != 1:
        raise ValueError(f"minimize: x0 must be a 1-D array, got shape {tuple(x.shape)} (ravel it, e.g. with "
                         "quabla.flatten_util.ravel_pytree)")
    dtype = x.dtype if x.dtype in (_core.float32, _core.float64) else _qb.default_dtype()
    x = x.astype(_core.float64)
    opts = dict(options or {})
    known = {"maxiter", "gtol", "norm", "line_search_maxiter", "maxls", "maxcor"}
    unknown = set(opts) - known
    if unknown:
        raise ValueError(f"minimize: unknown options {sorted(unknown)}; known: {sorted(known)}")
    gtol = float(opts.get("gtol", 1e-5 if tol is None else tol))
    maxiter = int(opts.get("maxiter") or 200 * max(x.shape[0], 1))
    norm = opts.get("norm", math.inf)
    ls_max = int(opts.get("line_search_maxiter", opts.get("maxls", 25)))
    name = method.lower() if isinstance(method, str) else method
    if name == "bfgs":
        return _bfgs(fun, x, tuple(args), gtol, maxiter, norm, ls_max, dtype)
    if name in ("l-bfgs-b", "l-bfgs-experimental-do-not-rely-on-this", "lbfgs"):
        return _lbfgs(fun, x, tuple(args), gtol, maxiter, int(opts.get("maxcor", 10)), dtype)
    raise ValueError(f"minimize: method must be 'BFGS' or 'L-BFGS-B', got {method!r}")


def _compiled(fun, args):
    vg = _qb.jit(_qb.value_and_grad(lambda v, *a: _qb.asarray(fun(v, *a)).astype(_core.float64)))
    counter = {"n": 0}

    def evaluate(v):
        counter["n"] += 1
        f, g = vg(v, *args)
        return f.item(), g
    return evaluate, counter


def _norm(g, order):
    a = _qb.abs(g)
    if order in (math.inf, "inf"):
        return _qb.max(a).item()
    return (_qb.sum(a ** float(order)) ** (1.0 / float(order))).item()


def _bfgs(fun, x, args, gtol, maxiter, order, ls_max, dtype):
    evaluate, counter = _compiled(fun, args)
    n = x.shape[0]
    f, g = evaluate(x)
    if not math.isfinite(f):
        raise ValueError(f"minimize: fun(x0) is not finite ({f})")
    eye = _qb.eye(n, dtype=_core.float64)
    h = eye
    status, it = _MAX_ITER, 0
    if _norm(g, order) <= gtol:
        status = _CONVERGED
    else:
        for it in range(1, maxiter + 1):
            d = -(h @ g)
            gd = _qb.dot(g, d).item()
            if gd >= 0:  # the estimate lost positive definiteness: restart from steepest descent
                h, d, gd = eye, -g, -_qb.dot(g, g).item()
            t, f_new, g_new, ok = LBFGS._strong_wolfe(evaluate, x, f, g, gd, d, 1.0, max_evals=ls_max)
            if not ok:
                status = _LINE_SEARCH_FAILED
                break
            s, y = d * t, g_new - g
            x, f, g = x + s, f_new, g_new
            ys = _qb.dot(y, s).item()
            if ys > 1e-300:
                rho = 1.0 / ys
                left = eye - rho * _qb.outer(s, y)
                h = left @ h @ left.T + rho * _qb.outer(s, s)
            if _norm(g, order) <= gtol:
                status = _CONVERGED
                break
    return OptimizeResults(x.astype(dtype), status == _CONVERGED, status, _qb.asarray(f).astype(dtype),
                           g.astype(dtype), h.astype(dtype), counter["n"], counter["n"], it)


def _lbfgs(fun, x, args, gtol, maxiter, history, dtype):
    evaluate, counter = _compiled(fun, args)
    solver = LBFGS(history=history, max_iterations=maxiter, tolerance_grad=gtol, tolerance_change=0.0)
    x_opt, info = solver.minimize(lambda v, *a: fun(v, *a), x, *args)
    f, g = evaluate(x_opt)
    converged = info.grad_norm <= gtol
    status = _CONVERGED if converged else (_MAX_ITER if "max" in info.status else _LINE_SEARCH_FAILED)
    evals = info.function_evaluations + counter["n"]
    return OptimizeResults(x_opt.astype(dtype), bool(converged), status, _qb.asarray(f).astype(dtype),
                           g.astype(dtype), None, evals, evals, info.iterations)
