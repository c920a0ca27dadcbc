"""BFGS and L-BFGS as traced programs (jax.scipy.optimize.minimize's): the iteration is a
qb.while_loop and so is each strong-Wolfe line search inside it, so `minimize` runs the
same under jit, vmap (one minimisation per example, each stopping on its own) and eagerly
(where it is jitted once per call). The line search brackets a step satisfying the strong
Wolfe conditions (c1 = 1e-4, c2 = 0.9) by doubling, then zooms with a safeguarded cubic
(Hermite) interpolation; each of its iterations evaluates the function and gradient once."""
from __future__ import annotations

from typing import Callable, NamedTuple

from .._package import qb as _qb

_C1, _C2 = 1e-4, 0.9


class LineSearchResult(NamedTuple):
    step: object
    f: object
    g: object
    nfev: object
    failed: object
    status: object  # 0 passed, 1 the interval collapsed, 3 iterations exhausted


def _cubic_step(a, fa, da, b, fb, db):
    """The minimiser of the cubic through (a, fa, da) and (b, fb, db), or the midpoint when
    it is not finite or falls within 10% of either end."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    d2 = _qb.sign(b - a) * _qb.sqrt(_qb.maximum(disc, 0.0))
    t = b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2)
    lo, hi = _qb.minimum(a, b), _qb.maximum(a, b)
    margin = 0.1 * (hi - lo)
    good = (disc >= 0) & _qb.isfinite(t) & (t > lo + margin) & (t < hi - margin)
    return _qb.where(good, t, 0.5 * (a + b))


def line_search(value_and_grad: Callable, x, p, f0, g0, previous_f, maxiter: int) -> LineSearchResult:
    """A step t > 0 along p from x with f(x + t p) <= f0 + c1 t g0.p and |g(x + t p).p| <=
    c2 |g0.p|. The first trial is SciPy's: min(1, 2.02 (f0 - previous_f) / g0.p) when that
    is positive. On failure the best decreasing point seen is returned (t = 0 if none)."""
    dt = x.dtype
    zero = _qb.zeros((), dt)
    d0 = _qb.dot(g0, p)
    guess = 2.02 * (f0 - previous_f) / d0
    first = _qb.where((d0 != 0) & _qb.isfinite(guess) & (guess > 0), _qb.minimum(guess, 1.0), 1.0).astype(dt)
    tiny = _qb.finfo(dt).eps

    def cond(s):
        return ~s["done"] & ~s["failed"] & (s["i"] < maxiter)

    def body(s):
        t = s["next"]
        f, g = value_and_grad(x + t * p)
        d = _qb.dot(g, p)
        insufficient = (f > f0 + _C1 * t * d0) | ~_qb.isfinite(f)
        curvature = _qb.abs(d) <= -_C2 * d0
        zooming = s["zoom"]
        # bracketing: the step grows until it overshoots (then zoom between the last two)
        overshoot = insufficient | ((s["i"] > 0) & (f >= s["f_prev"]))
        b_done = ~overshoot & curvature
        b_uphill = ~overshoot & ~curvature & (d >= 0)
        # zooming inside [lo, hi]: the new point replaces one end
        z_hi = insufficient | (f >= s["f_lo"])
        z_done = ~z_hi & curvature
        z_flip = ~z_hi & ~z_done & (d * (s["hi"] - s["lo"]) >= 0)
        done = _qb.where(zooming, z_done, b_done)
        # the new interval [lo, hi] (lo: the end with the lower value)
        new_lo = _qb.where(zooming, ~z_hi, b_uphill)
        keep_lo_as_hi = _qb.where(zooming, z_flip, b_uphill)
        lo = _qb.where(zooming, _qb.where(new_lo, t, s["lo"]), _qb.where(overshoot, s["t_prev"], t))
        f_lo = _qb.where(zooming, _qb.where(new_lo, f, s["f_lo"]), _qb.where(overshoot, s["f_prev"], f))
        d_lo = _qb.where(zooming, _qb.where(new_lo, d, s["d_lo"]), _qb.where(overshoot, s["d_prev"], d))
        hi = _qb.where(zooming, _qb.where(z_hi, t, _qb.where(keep_lo_as_hi, s["lo"], s["hi"])),
                       _qb.where(overshoot, t, s["t_prev"]))
        f_hi = _qb.where(zooming, _qb.where(z_hi, f, _qb.where(keep_lo_as_hi, s["f_lo"], s["f_hi"])),
                         _qb.where(overshoot, f, s["f_prev"]))
        d_hi = _qb.where(zooming, _qb.where(z_hi, d, _qb.where(keep_lo_as_hi, s["d_lo"], s["d_hi"])),
                         _qb.where(overshoot, d, s["d_prev"]))
        now_zooming = zooming | overshoot | b_uphill
        collapsed = now_zooming & ~done & (_qb.abs(hi - lo) <= tiny * _qb.maximum(_qb.abs(lo), 1.0))
        following = _qb.where(now_zooming, _cubic_step(lo, f_lo, d_lo, hi, f_hi, d_hi), 2.0 * t)
        better = _qb.isfinite(f) & (f < s["f_best"])
        return {
            "i": s["i"] + 1, "zoom": now_zooming, "done": done, "failed": collapsed,
            "next": _qb.where(done, t, following).astype(dt),
            "t_prev": t, "f_prev": f, "d_prev": d,
            "lo": lo, "f_lo": f_lo, "d_lo": d_lo, "hi": hi, "f_hi": f_hi, "d_hi": d_hi,
            "t_best": _qb.where(done | better, t, s["t_best"]), "f_best": _qb.where(done | better, f, s["f_best"]),
            "g_best": _qb.where(done | better, g, s["g_best"]),
        }

    init = {
        "i": _qb.asarray(0), "zoom": _qb.asarray(False), "done": _qb.asarray(False), "failed": _qb.asarray(False),
        "next": first, "t_prev": zero, "f_prev": f0, "d_prev": d0,
        "lo": zero, "f_lo": f0, "d_lo": d0, "hi": zero, "f_hi": f0, "d_hi": d0,
        "t_best": zero, "f_best": f0, "g_best": g0,
    }
    s = _qb.while_loop(cond, body, init)
    failed = ~s["done"]
    status = _qb.where(s["done"], 0, _qb.where(s["failed"], 1, 3))
    return LineSearchResult(s["t_best"], s["f_best"], s["g_best"], s["i"], failed, status)


def _norm(g, order):
    return _qb.linalg.norm(g, ord=order)


def bfgs(value_and_grad: Callable, x0, gtol: float, maxiter: int, order, ls_maxiter: int):
    """The BFGS iteration with a dense inverse-Hessian estimate H (identity first; updated
    only when y.s > 0, which keeps it positive definite; reset to the identity if rounding
    makes -H g an ascent direction). Returns the final state as a dict."""
    n = x0.shape[0]
    eye = _qb.eye(n, dtype=x0.dtype)
    f0, g0 = value_and_grad(x0)

    def cond(s):
        return ~s["converged"] & ~s["failed"] & (s["k"] < maxiter)

    def body(s):
        x, f, g, h = s["x"], s["f"], s["g"], s["h"]
        p = -(h @ g)
        ascent = _qb.dot(g, p) >= 0
        h = _qb.where(ascent, eye, h)
        p = _qb.where(ascent, -g, p)
        ls = line_search(value_and_grad, x, p, f, g, s["f_prev"], ls_maxiter)
        step = ls.step * p
        y = ls.g - g
        ys = _qb.dot(y, step)
        rho = 1.0 / _qb.where(ys > 0, ys, 1.0)
        left = eye - rho * _qb.outer(step, y)
        updated = left @ h @ left.T + rho * _qb.outer(step, step)
        h = _qb.where((ys > 0) & _qb.isfinite(rho) & _qb.all(_qb.isfinite(updated)), updated, h)
        return {
            "k": s["k"] + 1, "nfev": s["nfev"] + ls.nfev, "x": x + step, "f": ls.f, "g": ls.g, "h": h, "f_prev": f,
            "converged": _norm(ls.g, order) < gtol, "failed": ls.failed, "ls_status": ls.status,
        }

    init = {
        "k": _qb.asarray(0), "nfev": _qb.asarray(1), "x": x0, "f": f0, "g": g0, "h": eye,
        "f_prev": f0 + _norm(g0, 2) / 2, "converged": _norm(g0, order) < gtol, "failed": _qb.asarray(False),
        "ls_status": _qb.asarray(0),
    }
    s = _qb.while_loop(cond, body, init)
    s["status"] = _qb.where(s["converged"], 0, _qb.where(s["k"] >= maxiter, 1, _qb.where(s["failed"], 2 + s["ls_status"], -1)))
    s["success"] = s["converged"] & ~s["failed"]
    return s


def lbfgs(value_and_grad: Callable, x0, gtol: float, maxiter, order, ls_maxiter: int, history: int, ftol: float,
          maxfun, maxgrad):
    """L-BFGS with `history` pairs (s, y), newest last (zero pairs contribute nothing to the
    two-loop recursion, so an unfilled history needs no mask); the initial Hessian scale is
    s.y / y.y of the newest pair. Stops as jax.scipy's: status 0 converged (gradient norm
    < gtol), 1 iterations, 2 function and 3 gradient evaluations exhausted, 4 too little
    decrease (f_k - f_k+1 <= ftol max(|f_k|, |f_k+1|, 1), SciPy's test; counted as success, as
    SciPy's L-BFGS-B counts it, where jax.scipy's reports a failure), 5 line search failed."""
    n = x0.shape[0]
    dt = x0.dtype
    f0, g0 = value_and_grad(x0)

    def direction(g, hs, hy, rho, gamma):
        def newest_first(q, item):
            si, yi, ri = item
            a = ri * _qb.dot(si, q)
            return q - a * yi, a
        q, alphas = _qb.lax.scan(newest_first, g, (hs, hy, rho), reverse=True)
        r = gamma * q

        def oldest_first(r, item):
            si, yi, ri, a = item
            return r + si * (a - ri * _qb.dot(yi, r)), None
        r, _ = _qb.lax.scan(oldest_first, r, (hs, hy, rho, alphas))
        return -r

    def cond(s):
        return ~s["converged"] & ~s["failed"]

    def body(s):
        x, f, g = s["x"], s["f"], s["g"]
        p = direction(g, s["hs"], s["hy"], s["rho"], s["gamma"])
        ls = line_search(value_and_grad, x, p, f, g, s["f_prev"], ls_maxiter)
        step = ls.step * p
        y = ls.g - g
        ys = _qb.dot(y, step)
        keep = ys > 0  # a pair with y.s <= 0 would break positive definiteness: skipped
        push = lambda hist, new: _qb.where(keep, _qb.concatenate([hist[1:], new[None]]), hist)
        rho = _qb.where(keep, _qb.concatenate([s["rho"][1:], (1.0 / _qb.where(keep, ys, 1.0))[None]]), s["rho"])
        gamma = _qb.where(keep, ys / _qb.dot(y, y), s["gamma"])
        k, nfev = s["k"] + 1, s["nfev"] + ls.nfev
        f_new = ls.f
        status = _qb.asarray(0)
        status = _qb.where(f - f_new <= ftol * _qb.maximum(_qb.maximum(_qb.abs(f), _qb.abs(f_new)), 1.0), 4, status)
        status = _qb.where(nfev >= maxgrad, 3, status)
        status = _qb.where(nfev >= maxfun, 2, status)
        status = _qb.where(k >= maxiter, 1, status)
        status = _qb.where(ls.failed, 5, status)
        converged = _norm(ls.g, order) < gtol
        return {
            "k": k, "nfev": nfev, "x": x + step, "f": f_new, "g": ls.g, "f_prev": f,
            "hs": push(s["hs"], step), "hy": push(s["hy"], y), "rho": rho, "gamma": gamma.astype(dt),
            "converged": converged, "failed": (status > 0) & ~converged, "status": _qb.where(converged, 0, status),
        }

    init = {
        "k": _qb.asarray(0), "nfev": _qb.asarray(1), "x": x0, "f": f0, "g": g0, "f_prev": f0 + _norm(g0, 2) / 2,
        "hs": _qb.zeros((history, n), dt), "hy": _qb.zeros((history, n), dt), "rho": _qb.zeros((history,), dt),
        "gamma": _qb.ones((), dt), "converged": _norm(g0, order) < gtol, "failed": _qb.asarray(False),
        "status": _qb.asarray(0),
    }
    s = _qb.while_loop(cond, body, init)
    # too little decrease is SciPy's convergence (its L-BFGS-B reports success), not a failure
    s["success"] = (s["converged"] & ~s["failed"]) | (s["status"] == 4)
    return s
