"""Ordinary differential equations (API.md §9): qb.ode.odeint.

Every integrator is one loop in the IR, so jit, grad (reverse mode through the loop, the
step sizes of adaptive methods held fixed as diffrax does), jvp, vmap and higher
derivatives all come from the loop transforms:
 - fixed-step methods (euler, heun, rk4) are a scan of ``steps`` equal steps per output
   interval;
 - the adaptive methods (dopri5 and tsit5: Dormand-Prince's and Tsitouras's 5(4) pairs,
   first-same-as-last; rosenbrock23:
   Shampine and Reichelt's stiff Rosenbrock 2(3); both with a PI step-size controller and
   Hairer's initial step) are a bounded loop: ``max_steps`` attempts of which
   the ones after the end are skipped by a cond, so reverse mode works (a while loop has no
   transpose). Output times (``saveat``) are hit exactly by shortening the step that would
   pass them.
The state y may be any pytree of float arrays; it is raveled into one vector inside.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from . import _core
from . import tree as _tree
from ._control import cond, fori_loop, scan, while_loop
from ._custom import stop_gradient
from ._implicit import _float_leaves
from ._krylov import _Flat

__all__ = ["odeint", "OdeInfo"]

_FIXED = ("euler", "heun", "rk4")
_ADAPTIVE = ("dopri5", "tsit5", "rosenbrock23")

# Dormand-Prince 5(4): nodes, stage weights, the 5th-order weights (the last stage's
# row, so the last stage is f at the new point: first same as last) and b5 - b4.
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = ((),
      (1 / 5,),
      (3 / 40, 9 / 40),
      (44 / 45, -56 / 15, 32 / 9),
      (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
      (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
      (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_E = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)

_SAFETY, _BETA = 0.9, 0.04
_ALPHA = 0.2 - 0.75 * _BETA
_FAC_MIN, _FAC_MAX = 0.2, 10.0


class OdeInfo(NamedTuple):
    """What an integration did: accepted and rejected steps, evaluations of f, and the
    status (0: reached the end; 1: max_steps attempts were not enough; 2: stopped because
    the error estimate became NaN or infinite)."""
    accepted: _core.Array
    rejected: _core.Array
    evaluations: _core.Array
    status: _core.Array


def _check_int(name, what, v, low):
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ValueError(f"{name}: {what} must be an int >= {low}, got {v!r}")


def _rms(v):
    return _core.sqrt(_core.mean(v * v))


def _fixed_step(method, f, y, t, h):
    if method == "euler":
        return y + h * f(y, t)
    if method == "heun":
        k1 = f(y, t)
        k2 = f(y + h * k1, t + h)
        return y + (0.5 * h) * (k1 + k2)
    k1 = f(y, t)
    k2 = f(y + (0.5 * h) * k1, t + 0.5 * h)
    k3 = f(y + (0.5 * h) * k2, t + 0.5 * h)
    k4 = f(y + h * k3, t + h)
    return y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def _fixed(method, f, y0, t0, t1, ts, steps, save):
    if save:
        h = (t1 - t0) / steps

        def one(y, i):
            y = _fixed_step(method, f, y, t0 + i * h, h)
            return y, y
        _, ys = scan(one, y0, _core.arange(steps, dtype=y0.dtype))
        return _core.concatenate([y0[None], ys]), None
    if ts is None:
        h = (t1 - t0) / steps
        return fori_loop(0, steps, lambda i, y: _fixed_step(method, f, y, t0 + i * h, h), y0), None
    starts = _core.concatenate([_core.reshape(t0, (1,)), ts[:-1]])

    def interval(y, se):
        s, e = se[0], se[1]
        h = (e - s) / steps
        y = fori_loop(0, steps, lambda i, y: _fixed_step(method, f, y, s + i * h, h), y)
        return y, y
    _, ys = scan(interval, y0, _core.stack([starts, ts], axis=1))
    return ys, None


def _initial_step(f, y0, f0, t0, direction, rtol, atol, order):
    # Hairer, Norsett & Wanner, Solving ODEs I, II.4: an explicit Euler probe.
    scale = atol + rtol * _core.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = _core.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / _core.where(d1 > 0, d1, 1.0))
    f1 = f(y0 + direction * h0 * f0, t0 + direction * h0)
    d2 = _rms((f1 - f0) / scale) / h0
    big = _core.maximum(d1, d2)
    h1 = _core.where(big <= 1e-15, _core.maximum(1e-6, h0 * 1e-3),
                     (0.01 / _core.where(big > 0, big, 1.0)) ** (1.0 / (order + 1)))
    return stop_gradient(_core.minimum(100 * h0, h1))


# Tsitouras 5(4) (Ch. Tsitouras, Comput. Math. Appl. 62 (2011) 770-775), FSAL like
# Dormand-Prince; _E_TSIT is the difference of its two weight rows.
_C_TSIT = (0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0, 1.0)
_A_TSIT = ((),
           (0.161,),
           (-0.008480655492356989, 0.335480655492357),
           (2.8971530571054935, -6.359448489975075, 4.3622954328695815),
           (5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525),
           (5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401, -0.028269050394068383),
           (0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
            2.324710524099774))
_E_TSIT = (-0.00178001105222577714, -0.0008164344596567469, 0.007880878010261995, -0.1447110071732629,
           0.5823571654525552, -0.45808210592918697, 1.0 / 66.0)


# Dense output. Dormand-Prince: Shampine's (1986) order-4 continuous extension, in Hairer's
# nested form y(t + th h) = r1 + th (r2 + (1 - th) (r3 + th (r4 + (1 - th) r5))).
_D_DOPRI = (-12715105075.0 / 11282082432.0, 0.0, 87487479700.0 / 32700410799.0, -10690763975.0 / 1880347072.0,
            701980252875.0 / 199316789632.0, -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0)
# Tsitouras: the interpolant of the 2011 paper, y(t + th h) = y + h sum_i b_i(th) k_i with
# b_i(th) = sum_p R[i][p] th^(p+1) (p = 0..3).
_R_TSIT = ((1.0, -2.763706197274826, 2.9132554618219126, -1.0530884977290216),
           (0.0, 0.13169999999999998, -0.2234, 0.1017),
           (0.0, 3.9302962368947516, -5.941033872131505, 2.490627285651253),
           (0.0, -12.411077166933676, 30.33818863028232, -16.548102889244902),
           (0.0, 37.50931341651104, -88.1789048947664, 47.37952196281928),
           (0.0, -27.896526289197286, 65.09189467479366, -34.8706578614966),
           (0.0, 1.5, -4.0, 2.5))


def _dopri5_interp(y, y_new, ks, step, th):
    """The Dormand-Prince solution at y(t + th step) for a column th [m, 1]: [m, n]."""
    r2 = y_new - y
    r3 = step * ks[0] - r2
    r4 = r2 - step * ks[6] - r3
    r5 = step * sum(w * k for w, k in zip(_D_DOPRI, ks) if w != 0.0)
    one = 1.0 - th
    return y + th * (r2 + one * (r3 + th * (r4 + one * r5)))


def _tsit5_interp(y, y_new, ks, step, th):
    """Tsitouras's interpolant at y(t + th step) for a column th [m, 1]: [m, n]."""
    total = 0.0
    for row, k in zip(_R_TSIT, ks):
        b = th * (row[0] + th * (row[1] + th * (row[2] + th * row[3])))
        total = total + b * k
    return y + step * total


def _explicit_step(c, a, e, interp):
    """One attempt of a 7-stage FSAL pair: (y_new, error estimate, f at the new point,
    evaluations, the stages); the last stage row of ``a`` holds the propagated weights.
    ``step_fn.interp`` is the pair's dense output."""
    def step_fn(f, t, y, step, k1):
        ks = [k1]
        for s in range(1, 7):
            incr = sum(w * k for w, k in zip(a[s], ks) if w != 0.0)
            ks.append(f(y + step * incr, t + c[s] * step))
        y_new = y + step * sum(w * k for w, k in zip(a[6], ks[:6]) if w != 0.0)
        err = step * sum(w * k for w, k in zip(e, ks) if w != 0.0)
        return y_new, err, ks[6], 6, ks
    step_fn.interp = interp
    return step_fn


_dopri5_step = _explicit_step(_C, _A, _E, _dopri5_interp)
_tsit5_step = _explicit_step(_C_TSIT, _A_TSIT, _E_TSIT, _tsit5_interp)


def _dense_outputs(stepper, targets, direction, t, t_new, y, y_new, ks, step, ys, write, t0):
    """ys with the output times in (t, t_new] (in the direction of integration; [t0, t_new]
    for the first step) set from the step's dense output, where `write` (the step was
    accepted) holds. An output at t0 is the interpolant at 0 (y0, with its slope)."""
    ahead = (targets - t) * direction
    starts = (ahead > 0.0) | ((ahead == 0.0) & (t == t0))
    inside = starts & ((targets - t_new) * direction <= 0.0) & write
    safe = _core.where(step == 0.0, 1.0, step)
    th = _core.reshape((targets - t) / safe, (-1, 1))
    vals = stepper.interp(y, y_new, ks, step, th)
    return _core.where(_core.reshape(inside, (-1,) + (1,) * (ys.ndim - 1)), vals, ys)


_D = 1.0 / (2.0 + 2.0 ** 0.5)
_E32 = 6.0 + 2.0 ** 0.5


def _rosenbrock23_step(f, t, y, step, f0):
    """One attempt of Shampine and Reichelt's Rosenbrock 2(3) (MATLAB's ode23s): W = I -
    h d J with J = df/dy by jacfwd and T = df/dt by jvp, one LU of W for three solves."""
    from ._ad import jacfwd, jvp
    from .linalg import lu_factor, lu_solve

    n = y.shape[0]
    jac = jacfwd(lambda v: f(v, t))(y)
    dfdt = jvp(lambda s: f(y, s), (t,), (_core.ones_like(t),))[1]
    w = _core.eye(n, dtype=y.dtype) - (step * _D) * jac
    lu = lu_factor(w)
    hdt = (step * _D) * dfdt
    k1 = lu_solve(lu, f0 + hdt)
    f1 = f(y + (0.5 * step) * k1, t + 0.5 * step)
    k2 = lu_solve(lu, f1 - k1) + k1
    y_new = y + step * k2
    f2 = f(y_new, t + step)
    k3 = lu_solve(lu, f2 - _E32 * (k2 - f1) - 2.0 * (k1 - f0) + hdt)
    err = (step / 6.0) * (k1 - 2.0 * k2 + k3)
    return y_new, err, f2, 2 + n + 1, None


_rosenbrock23_step.interp = None  # it lands on each output time instead


def _adaptive(stepper, order, f, y0, t0, t1, ts, rtol, atol, max_steps, record):
    """Attempts of ``stepper`` in a while loop, with Hairer's PI step-size controller on the
    error estimate of order ``order``, until the end or ``max_steps`` attempts. With
    ``record`` it also returns each accepted step's size and whether it landed on an output
    time (buffers of max_steps entries; the first info.accepted are those steps, the rest
    is not meaningful: _replay masks it), for _replay."""
    dt = y0.dtype
    alpha = 1.0 / (order + 1) - 0.75 * _BETA
    direction = _core.where(t1 >= t0, 1.0, -1.0).astype(dt)
    targets = _core.reshape(t1, (1,)) if ts is None else ts
    n_out = targets.shape[0]
    f0 = f(y0, t0)
    h0 = _initial_step(f, y0, f0, t0, direction, rtol, atol, order)
    zero_i = _core.asarray(0, dtype=_core.int32)
    one = _core.asarray(1.0, dtype=dt)
    # Carry: t, y, h, f at (t, y), previous error, next output index, outputs, accepted,
    # rejected, evaluations, done (then, when recording, the step sizes and landings).
    carry0 = (t0, y0, h0, f0, one, zero_i, _core.zeros((n_out,) + tuple(y0.shape), dtype=dt),
              zero_i, zero_i, _core.asarray(2, dtype=_core.int32), zero_i)
    if record:
        carry0 = carry0 + (_core.zeros((max_steps,), dtype=dt), _core.zeros((max_steps,), dtype=_core.bool_))

    single = ts is None  # one output time: no dynamic indexing (scalar code stays scalar)
    # With a dense output the steps run to the last output time and every output comes from
    # the interpolant of the step it falls in; without one (rosenbrock23) steps land on each.
    dense = not single and stepper.interp is not None
    if dense:
        last = targets[n_out - 1]

    def attempt(c):
        t, y, h, k1, err_prev, idx, ys, acc, rej, nfe, _done = c[:11]
        target = t1 if single else (last if dense else targets[idx])
        remaining = (target - t) * direction
        h_ctrl = stop_gradient(h)
        clipped = h_ctrl >= remaining
        step = direction * _core.where(clipped, remaining, h_ctrl)
        y_new, err_vec, k_new, evals, ks = stepper(f, t, y, step, k1)
        scale = atol + rtol * _core.maximum(_core.abs(y), _core.abs(y_new))
        err = stop_gradient(_rms(err_vec / scale))
        ok = err <= 1.0
        broken = ~_core.isfinite(err)  # f gave NaN or inf: no step size can help
        safe_err = _core.maximum(err, 1e-10)
        grow = _core.clip(_SAFETY * safe_err ** (-alpha) * err_prev ** _BETA, _FAC_MIN, _FAC_MAX)
        shrink = _core.maximum(_FAC_MIN, _SAFETY * safe_err ** (-1.0 / (order + 1)))
        base = _core.where(clipped & ok, h_ctrl, _core.abs(step))
        h_next = stop_gradient(base * _core.where(ok, grow, _core.minimum(shrink, 1.0)))
        t_new = _core.where(clipped, target, t + step)
        landed = ok & clipped
        if dense:
            ys = _dense_outputs(stepper, targets, direction, t, t_new, y, y_new, ks, step, ys, ok, t0)
            idx_new = _core.where(landed, n_out, idx)
        else:
            if not single:
                ys = _core.where(landed, ys.at[idx].set(y_new), ys)
            idx_new = _core.where(landed, idx + 1, idx)
        # Progress: 0 running, 1 reached the end, 2 stopped on a non-finite error estimate.
        done = _core.where(broken, 2, _core.where(idx_new >= n_out, 1, 0)).astype(_core.int32)
        out = (_core.where(ok, t_new, t), _core.where(ok, y_new, y), h_next, _core.where(ok, k_new, k1),
               _core.where(ok, _core.maximum(err, 1e-4), err_prev), idx_new, ys,
               acc + ok.astype(_core.int32), rej + (~ok).astype(_core.int32), nfe + evals, done)
        if record:
            hs, lands = c[11], c[12]
            # Every attempt writes entry acc (acc < max_steps here): a rejected attempt's entry
            # is overwritten by the accepted one that follows at the same acc, and the replay
            # ignores entries from `accepted` on. One in-place scatter per buffer and attempt,
            # not a copy and a select of the whole max_steps-long buffers.
            out = out + (hs.at[acc].set(step), lands.at[acc].set(landed))
        return out

    c = while_loop(lambda c: (c[10] == 0) & (c[7] + c[8] < max_steps), attempt, carry0)
    _t, y, _h, _k, _e, _idx, ys, acc, rej, nfe, done = c[:11]
    status = _core.where(done == 1, 0, _core.where(done == 2, 2, 1)).astype(_core.int32)
    out = y if ts is None else ys
    info = OdeInfo(acc, rej, nfe, status)
    return (out, info, c[11], c[12]) if record else (out, info)


def _replay_block(max_steps: int) -> int:
    """Steps per block of the replay: about sqrt(max_steps), so the blocks past the last
    accepted step (skipped whole) and the steps taken in the last partial block both cost
    about sqrt(max_steps)."""
    b = 8
    while b * b < max_steps:
        b *= 2
    return b


def _replay(stepper, f, y0, t0, t1, ts, hs, lands, accepted):
    """The accepted steps again, as a scan over the recorded sizes (zero-length past the
    last, which leaves the state as it is): differentiable in every mode, and the
    derivative of the computed solution with its step sizes held fixed (a step that landed
    on an output time is target - t, so output times and t_span get their derivatives).
    The steps run in blocks: a scan over blocks whose body is a cond that runs a block's
    steps (an inner scan) only when it starts before the `accepted`-th step, so the cost
    follows the steps taken, not max_steps (also in the transposed scan of reverse mode)."""
    targets = _core.reshape(t1, (1,)) if ts is None else ts
    n_out = targets.shape[0]

    single = ts is None

    taken = _core.asarray(accepted).astype(_core.int32)
    dense = not single and stepper.interp is not None
    direction = _core.where(t1 >= t0, 1.0, -1.0).astype(y0.dtype)
    last = targets[n_out - 1]

    def one(c, x):
        t, y, k1, idx, ys = c
        h, landed, i = x
        live = i < taken  # entries from `accepted` on are zero-length steps that never land
        h = _core.where(live, h, 0.0)
        landed = landed & live
        target = t1 if single else (last if dense else targets[_core.minimum(idx, n_out - 1)])
        step = _core.where(landed, target - t, h)
        y_new, _err, k_new, _n, ks = stepper(f, t, y, step, k1)
        t_new = _core.where(landed, target, t + step)
        if dense:
            ys = _dense_outputs(stepper, targets, direction, t, t_new, y, y_new, ks, step, ys, live, t0)
        elif not single:
            ys = _core.where(landed, ys.at[idx].set(y_new), ys)
        return (t_new, y_new, k_new, idx + landed.astype(_core.int32), ys), None

    zero_i = _core.asarray(0, dtype=_core.int32)
    c0 = (t0, y0, f(y0, t0), zero_i, _core.zeros((n_out,) + tuple(y0.shape), dtype=y0.dtype))
    n = hs.shape[0]
    block = _replay_block(n)
    if n <= block:
        (_t, y, _k, _i, ys), _ = scan(one, c0, (hs, lands, _core.arange(n, dtype=_core.int32)))
        return y if ts is None else ys
    nb = -(-n // block)
    pad = nb * block - n
    if pad:  # zero-length steps that never land
        hs = _core.concatenate([hs, _core.zeros((pad,), dtype=hs.dtype)])
        lands = _core.concatenate([lands, _core.zeros((pad,), dtype=lands.dtype)])
    ids = _core.reshape(_core.arange(nb * block, dtype=_core.int32), (nb, block))
    active = ids[:, 0] < taken

    def run_block(c, blk):
        return scan(one, c, blk)[0]

    def outer(c, x):
        h_blk, land_blk, id_blk, on = x
        return cond(on, run_block, lambda c, blk: c, c, (h_blk, land_blk, id_blk)), None

    (_t, y, _k, _i, ys), _ = scan(outer, c0, (_core.reshape(hs, (nb, block)), _core.reshape(lands, (nb, block)), ids,
                                             active))
    return y if ts is None else ys


def _integrate_adaptive(stepper, order, rhs, y0v, t0, t1, ts, rtol, atol, max_steps):
    """The adaptive integration as a custom_jvp function: its value from the while loop
    (which the small-loop compiler runs natively); its JVP runs the loop again recording
    the accepted steps and differentiates a replay of those steps (a scan). f's closed-over
    values (parameters) become explicit arguments first, so they get tangents."""
    from ._ad import jvp
    from ._control import _Region, _spec
    from ._custom import custom_jvp

    region = _Region(rhs, "odeint f", lambda fun, ps: [fun(ps[0], ps[1])], [_spec(y0v), _spec(t0)])
    graph, consts, _ = region.finish(region.out)
    has_ts = ts is not None
    times = ts if has_ts else _core.reshape(t1, (1,))

    def rhs_of(cs):
        return lambda v, t: graph.call([v, t] + list(cs))[0]

    def integrate_fn(y0v, t0, t1, times, *cs):
        return _adaptive(stepper, order, rhs_of(cs), y0v, t0, t1, times if has_ts else None, rtol, atol, max_steps,
                         False)

    integrate = custom_jvp(integrate_fn)

    @integrate.defjvp
    def _rule(primals, tangents):
        fixed = [stop_gradient(p) for p in primals]
        _, info, hs, lands = _adaptive(stepper, order, rhs_of(fixed[4:]), fixed[0], fixed[1], fixed[2],
                                       fixed[3] if has_ts else None, rtol, atol, max_steps, True)

        def replay(y0v, t0, t1, times, *cs):
            return _replay(stepper, rhs_of(cs), y0v, t0, t1, times if has_ts else None, hs, lands,
                           info.accepted)
        out, d_out = jvp(replay, tuple(primals), tuple(tangents))
        zero = _core.zeros_like(info.accepted)
        return (out, info), (d_out, OdeInfo(zero, zero, zero, zero))

    return integrate(y0v, t0, t1, times, *consts)


def odeint(f: Callable, y0: Any, t_span, *, method: str = "rk4", steps: int = None, args: tuple = (),
           save: bool = False, saveat=None, rtol: float = 1e-6, atol: float = 1e-9, max_steps: int = 512,
           info: bool = False, adjoint: str = "replay"):
    """Integrates dy/dt = f(y, t, *args) from t_span[0] to t_span[1].

    ``method``: "euler", "heun", "rk4" (fixed steps: ``steps`` equal steps over t_span, or
    per interval between output times), "dopri5" or "tsit5" (adaptive 5(4) pairs,
    ``rtol``/``atol`` on each component, at most ``max_steps`` step attempts) or "rosenbrock23" (adaptive and
    linearly implicit, for stiff problems: a Jacobian by jacfwd and one LU per step). Returns y at t_span[1]; with
    ``saveat=ts`` (increasing times after t_span[0], the last at most t_span[1]) y at each of
    ts stacked on a leading axis; with ``save=True`` (fixed steps) y at every step, y0
    first. ``info=True`` returns ``(y, OdeInfo)``. An adaptive run that needs more than
    max_steps attempts raises ValueError when called on concrete values; inside jit its
    info says status 1 and y is where it stopped. Differentiable with respect to y0, args,
    t_span and saveat, in forward and reverse mode (adaptive step sizes held fixed).
    ``adjoint``: "replay" (the only one: derivatives of the computed solution by replaying
    its recorded steps, as diffrax's RecursiveCheckpointAdjoint); a continuous adjoint
    ("backsolve") is not provided.
    """
    name = "odeint"
    if not callable(f):
        raise TypeError(f"{name}: f must be a function f(y, t, *args), got {type(f).__name__}")
    if adjoint != "replay":
        raise ValueError(f"{name}: adjoint={adjoint!r} is not available; derivatives replay the recorded steps "
                         f"(adjoint='replay', exact for the computed solution, a few values of memory per step)")
    if method not in _FIXED + _ADAPTIVE:
        raise ValueError(f"{name}: method must be one of {', '.join(_FIXED + _ADAPTIVE)}, got {method!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"{name}: args must be a tuple, got {type(args).__name__}")
    try:
        t0_in, t1_in = t_span
    except (TypeError, ValueError):
        raise ValueError(f"{name}: t_span must be a pair (t0, t1), got {t_span!r}") from None
    leaves, treedef = _float_leaves(y0, name, "y0")
    flat = _Flat(leaves, treedef)
    dt = flat.dtype
    t0 = _core.asarray(t0_in, dtype=dt)
    t1 = _core.asarray(t1_in, dtype=dt)
    if t0.ndim or t1.ndim:
        raise ValueError(f"{name}: t_span's times must be scalars")
    if not (t0._is_tracer or t1._is_tracer) and not (abs(float(t0)) < float("inf") and abs(float(t1)) < float("inf")):
        raise ValueError(f"{name}: t_span must be finite, got ({float(t0)}, {float(t1)})")
    ts = None
    if saveat is not None:
        ts = _core.asarray(saveat, dtype=dt)
        if ts.ndim != 1 or ts.shape[0] == 0:
            raise ValueError(f"{name}: saveat must be a non-empty 1-D array of times, got shape {list(ts.shape)}")
        if not (ts._is_tracer or t0._is_tracer or t1._is_tracer):
            import numpy as np
            tsn, a, b = np.asarray(ts), float(np.asarray(t0)), float(np.asarray(t1))
            sign = 1.0 if b >= a else -1.0
            if np.any(sign * np.diff(tsn) < 0) or sign * (tsn[0] - a) < 0 or sign * (tsn[-1] - b) > 0:
                raise ValueError(f"{name}: saveat must run from t_span[0] to t_span[1] in order, got {tsn}")
    if method in _FIXED:
        if steps is None:
            raise ValueError(f"{name}: method {method!r} takes fixed steps: pass steps=N")
        _check_int(name, "steps", steps, 1)
        if save and ts is not None:
            raise ValueError(f"{name}: pass either save=True or saveat, not both")
    else:
        _check_int(name, "max_steps", max_steps, 1)
        if save:
            raise ValueError(f"{name}: save=True is for fixed-step methods; pass saveat=times for {method!r}")
        for what, v in (("rtol", rtol), ("atol", atol)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"{name}: {what} must be a number > 0, got {v!r}")

    def rhs(v, t):
        return flat.ravel_checked(f(flat.unravel(v), t, *args), name, "f")

    y0v = flat.ravel(y0)
    if method in _FIXED:
        out, stats = _fixed(method, rhs, y0v, t0, t1, ts, steps, save)
    else:
        stepper, order = {"dopri5": (_dopri5_step, 4), "tsit5": (_tsit5_step, 4),
                          "rosenbrock23": (_rosenbrock23_step, 2)}[method]
        out, stats = _integrate_adaptive(stepper, order, rhs, y0v, t0, t1, ts, float(rtol), float(atol), max_steps)
        if not isinstance(stats.status, _core.Array) or not stats.status._is_tracer:
            if int(stats.status) == 2:
                raise ValueError(f"{name}: the error estimate became NaN or infinite after {int(stats.accepted)} "
                                 f"accepted steps: f returned NaN or inf (or the solution blew up)")
            if int(stats.status) != 0:
                raise ValueError(f"{name}: {max_steps} step attempts (max_steps) did not reach t = "
                                 f"{float(t1) if ts is None else 'the last of saveat'}; raise max_steps, or loosen "
                                 f"rtol/atol")
    if save or ts is not None:
        y = flat.unravel_stacked(out)
    else:
        y = flat.unravel(out)
    if info:
        if stats is None:
            n = (steps if ts is None else steps * ts.shape[0])
            per = {"euler": 1, "heun": 2, "rk4": 4}[method]
            i32 = _core.int32
            stats = OdeInfo(_core.asarray(n, dtype=i32), _core.asarray(0, dtype=i32),
                            _core.asarray(n * per, dtype=i32), _core.asarray(0, dtype=i32))
        return y, stats
    return y
