"""L-BFGS (API.md §8): two-loop recursion over the last `history` pairs, with a strong
Wolfe line search (Nocedal & Wright, Algorithms 3.5 and 3.6, cubic interpolation in the
zoom phase). The parameters are handled as one float64 vector; the loss and gradient come
from one compiled program (jit of value_and_grad). A non-finite loss at a trial step is
treated as a failed decrease, so the search backtracks from it and never returns it.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Tuple

from . import _core
from . import tree as _tree
from ._ad import value_and_grad
from ._jit import jit

__all__ = ["LBFGS", "LBFGSInfo"]


class LBFGSInfo(NamedTuple):
    iterations: int
    function_evaluations: int
    loss: float
    grad_norm: float      # infinity norm of the final gradient
    converged: bool
    status: str


def _flattener(params):
    leaves, treedef = _tree.flatten(params)
    arrays = [_core.asarray(l) for l in leaves]
    for a in arrays:
        if a.dtype == _core.bool_:
            raise TypeError("LBFGS: parameters must be float arrays")
    shapes = [a.shape for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = [a.size for a in arrays]

    def ravel(tree):
        ls = _tree.leaves(tree)
        return _core.concat([_core.reshape(_core.asarray(l).astype(_core.float64), (-1,)) for l in ls], axis=0)

    def unravel(vec):
        out, offset = [], 0
        for shape, dtype, size in zip(shapes, dtypes, sizes):
            piece = vec[offset:offset + size]
            out.append(_core.reshape(piece, shape).astype(dtype))
            offset += size
        return _tree.unflatten(treedef, out)

    return ravel(params), ravel, unravel


def _cubic_min(x1, f1, g1, x2, f2, g2, lo, hi):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to [lo, hi]."""
    d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2) if x1 != x2 else math.inf
    d2sq = d1 * d1 - g1 * g2
    if math.isfinite(d1) and d2sq >= 0:
        d2 = math.sqrt(d2sq) * (1.0 if x2 >= x1 else -1.0)
        denom = g2 - g1 + 2.0 * d2
        if denom != 0:
            t = x2 - (x2 - x1) * (g2 + d2 - d1) / denom
            return min(max(t, lo), hi)
    return (lo + hi) / 2.0


class LBFGS:
    def __init__(self, history: int = 10, max_iterations: int = 500, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, line_search: str = "strong_wolfe"):
        if line_search != "strong_wolfe":
            raise ValueError(f"LBFGS: line_search must be 'strong_wolfe', got {line_search!r}")
        if history < 1 or max_iterations < 1:
            raise ValueError("LBFGS: history and max_iterations must be positive")
        self.history, self.max_iterations = int(history), int(max_iterations)
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(tolerance_change)

    def minimize(self, fun: Callable, params: Any, *args) -> Tuple[Any, LBFGSInfo]:
        x, _, unravel = _flattener(params)
        vg = jit(value_and_grad(lambda v, *a: _core.asarray(fun(unravel(v), *a)).astype(_core.float64)))
        evals = 0

        def evaluate(v):
            nonlocal evals
            evals += 1
            f, g = vg(v, *args)
            return f.item(), g

        f, g = evaluate(x)
        if not math.isfinite(f):
            raise ValueError(f"LBFGS: the loss at the initial parameters is not finite ({f})")
        s_hist, y_hist, rho_hist = [], [], []
        status, converged, it = "max_iterations reached", False, 0
        gnorm = _core.max(_core.abs(g)).item()
        if gnorm <= self.tolerance_grad:
            return unravel(x), LBFGSInfo(0, evals, f, gnorm, True, "gradient below tolerance_grad")
        d = -g
        for it in range(1, self.max_iterations + 1):
            gd = _core.dot(g, d).item()
            if gd >= 0:  # not a descent direction (lost curvature): restart from steepest descent
                s_hist, y_hist, rho_hist = [], [], []
                d, gd = -g, -_core.dot(g, g).item()
            t0 = min(1.0, 1.0 / max(_core.sum(_core.abs(g)).item(), 1e-300)) if it == 1 else 1.0
            t, f_new, g_new, ok = self._strong_wolfe(evaluate, x, f, g, gd, d, t0)
            if not ok:
                status = "line search failed"
                break
            s = d * t
            y = g_new - g
            ys = _core.dot(y, s).item()
            x = x + s
            f_old, f, g = f, f_new, g_new
            if ys > 1e-10:
                if len(s_hist) == self.history:
                    s_hist.pop(0), y_hist.pop(0), rho_hist.pop(0)
                s_hist.append(s), y_hist.append(y), rho_hist.append(1.0 / ys)
            gnorm = _core.max(_core.abs(g)).item()
            if gnorm <= self.tolerance_grad:
                status, converged = "gradient below tolerance_grad", True
                break
            if abs(f - f_old) <= self.tolerance_change or _core.max(_core.abs(s)).item() <= self.tolerance_change:
                status, converged = "change below tolerance_change", True
                break
            d = -self._two_loop(g, s_hist, y_hist, rho_hist)
        gnorm = _core.max(_core.abs(g)).item()
        return unravel(x), LBFGSInfo(it, evals, f, gnorm, converged, status)

    @staticmethod
    def _two_loop(g, s_hist, y_hist, rho_hist):
        q = g
        alphas = []
        for s, y, rho in zip(reversed(s_hist), reversed(y_hist), reversed(rho_hist)):
            a = rho * _core.dot(s, q).item()
            alphas.append(a)
            q = q - a * y
        if s_hist:
            gamma = _core.dot(s_hist[-1], y_hist[-1]).item() / _core.dot(y_hist[-1], y_hist[-1]).item()
            q = q * gamma
        for (s, y, rho), a in zip(zip(s_hist, y_hist, rho_hist), reversed(alphas)):
            b = rho * _core.dot(y, q).item()
            q = q + s * (a - b)
        return q

    @staticmethod
    def _strong_wolfe(evaluate, x, f0, g0, gd0, d, t, c1=1e-4, c2=0.9, max_evals=25):
        """(step, f, g, success) satisfying the strong Wolfe conditions along d."""
        def phi(step):
            f, g = evaluate(x + d * step)
            return f, g, (_core.dot(g, d).item() if math.isfinite(f) else math.nan)

        t_prev, f_prev, gd_prev = 0.0, f0, gd0
        lo = hi = None
        for i in range(max_evals):
            f, g, gd = phi(t)
            if not math.isfinite(f) or f > f0 + c1 * t * gd0 or (i > 0 and f >= f_prev):
                lo, hi = (t_prev, f_prev, gd_prev), (t, f, gd)
                break
            if abs(gd) <= -c2 * gd0:
                return t, f, g, True
            if gd >= 0:
                lo, hi = (t, f, gd), (t_prev, f_prev, gd_prev)
                break
            t_prev, f_prev, gd_prev = t, f, gd
            t = t * 2.0
        else:
            return t, f, g, math.isfinite(f) and f < f0
        # Zoom between lo (sufficient decrease holds) and hi.
        for _ in range(max_evals):
            (tl, fl, gl), (th, fh, gh) = lo, hi
            a, b = min(tl, th), max(tl, th)
            if b - a < 1e-14 * max(1.0, b):
                break
            if math.isfinite(fh) and math.isfinite(gh):
                t = _cubic_min(tl, fl, gl, th, fh, gh, a + 0.1 * (b - a), b - 0.1 * (b - a))
            else:
                t = tl + 0.5 * (th - tl)  # backtrack from a non-finite value by bisection
            f, g, gd = phi(t)
            if not math.isfinite(f) or f > f0 + c1 * t * gd0 or f >= fl:
                hi = (t, f, gd)
            else:
                if abs(gd) <= -c2 * gd0:
                    return t, f, g, True
                if gd * (th - tl) >= 0:
                    hi = lo
                lo = (t, f, gd)
        tl, fl, _ = lo
        if tl > 0 and fl < f0:
            f, g = evaluate(x + d * tl)
            return tl, f, g, True
        return 0.0, f0, g0, False
