"""ODE integration (the ODE issue) beside diffrax (jax.jit, float64) and JAX: the Lorenz
system over t in [0, 10] with Dormand-Prince 5(4) at rtol = atol = 1e-8, forward and the
gradient of the final state's sum with respect to the three parameters (diffrax:
RecursiveCheckpointAdjoint, its default); 10,000 fixed RK4 steps of Lorenz and their
gradient (JAX: lax.fori_loop); and the stiff Robertson problem to t = 40 (Quabla's
rosenbrock23 against diffrax's Kvaerno5, both at rtol 1e-6, atol 1e-10). diffrax is
optional: pip install diffrax. Quabla's loops are compiled to native code at their first
call (QUABLA_LOOP_JIT=sync) before timing."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax
from .loops import _with_mode

T1 = 10.0
TOL = 1e-8
P = (10.0, 28.0, 8.0 / 3.0)


def _lorenz(xp):
    def f(y, t, s, r, b):
        return xp.stack([s * (y[1] - y[0]), y[0] * (r - y[2]) - y[1], y[0] * y[1] - b * y[2]])
    return f


def _robertson(xp):
    def f(y, t):
        return xp.stack([-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                         3e7 * y[1] ** 2])
    return f


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    try:
        import diffrax
    except ImportError:
        diffrax = None
    rows = []
    rounds = 3 if quick else 5

    def add(label, unit, impls, number):
        # Quabla's loops built as native code at their first call (as benchmarks.loops does),
        # so the timed calls are the steady state.
        _with_mode("sync", impls["quabla"])
        t = alternate(impls, number=number, rounds=rounds, warmup=1)
        rows.append((label, unit, {k: v * 1e3 for k, v in t.items()}))

    fq = _lorenz(qb)
    y0 = np.array([1.0, 1.0, 1.0])

    def q_end(p):
        return qb.ode.odeint(fq, qb.array(y0), (0.0, T1), method="dopri5", args=(p[0], p[1], p[2]), rtol=TOL, atol=TOL,
                             max_steps=4096)
    q_fwd = qb.jit(q_end)
    q_grad = qb.jit(qb.grad(lambda p: qb.sum(q_end(p))))
    pq = qb.array(P)
    _, info = qb.ode.odeint(fq, qb.array(y0), (0.0, T1), method="dopri5", args=tuple(qb.asarray(v) for v in P),
                            rtol=TOL, atol=TOL, max_steps=4096, info=True)
    steps = int(info.accepted) + int(info.rejected)
    impls_f = {"quabla": lambda: q_fwd(pq)}
    impls_g = {"quabla": lambda: q_grad(pq)}
    if jax and diffrax:
        fj = _lorenz(jnp)
        term = diffrax.ODETerm(lambda t, y, p: fj(y, t, p[0], p[1], p[2]))

        def d_end(p):
            sol = diffrax.diffeqsolve(term, diffrax.Dopri5(), 0.0, T1, None, jnp.asarray(y0), args=p,
                                      stepsize_controller=diffrax.PIDController(rtol=TOL, atol=TOL),
                                      max_steps=4096)
            return sol.ys[-1]
        d_fwd = jax.jit(d_end)
        d_grad = jax.jit(jax.grad(lambda p: jnp.sum(d_end(p))))
        pj = jnp.asarray(P)
        diff = np.max(np.abs(np.asarray(q_fwd(pq)) - np.asarray(d_fwd(pj))))
        # Lorenz amplifies differences in step choice: the two agree to about the tolerance
        # times the system's growth over t = 10.
        assert diff < 1e-3, f"ode: Lorenz end states differ from diffrax's by {diff:.1e}"
        impls_f["jax"] = lambda: d_fwd(pj).block_until_ready()
        impls_g["jax"] = lambda: d_grad(pj).block_until_ready()
    add(f"lorenz dopri5 1e-8 ({steps} steps)", "ms/call", impls_f, 3)
    add("grad lorenz dopri5 1e-8", "ms/call", impls_g, 1)

    # 10,000 RK4 steps and their gradient
    n, h = 10_000, 1e-3

    def q_rk4(p):
        return qb.ode.odeint(fq, qb.array(y0), (0.0, n * h), method="rk4", steps=n, args=(p[0], p[1], p[2]))
    q_rk4_g = qb.jit(qb.grad(lambda p: qb.sum(q_rk4(p))))
    impls_r = {"quabla": lambda: q_rk4_g(pq)}
    if jax:
        fj = _lorenz(jnp)

        def j_rk4(p):
            def step(i, y):
                t = i * h
                k1 = fj(y, t, *p)
                k2 = fj(y + 0.5 * h * k1, t + 0.5 * h, *p)
                k3 = fj(y + 0.5 * h * k2, t + 0.5 * h, *p)
                k4 = fj(y + h * k3, t + h, *p)
                return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            return jax.lax.fori_loop(0, n, step, jnp.asarray(y0))
        j_rk4_g = jax.jit(jax.grad(lambda p: jnp.sum(j_rk4((p[0], p[1], p[2])))))
        pj = jnp.asarray(P)
        diff = np.max(np.abs(np.asarray(q_rk4_g(pq)) - np.asarray(j_rk4_g(pj))))
        scale = np.max(np.abs(np.asarray(j_rk4_g(pj))))
        assert diff < 1e-6 * scale, f"ode: the RK4 gradients differ from JAX's by {diff:.1e}"
        impls_r["jax"] = lambda: j_rk4_g(pj).block_until_ready()
    add("grad rk4 lorenz 10000 steps", "ms/call", impls_r, 1)

    # Robertson, stiff
    fr = _robertson(qb)
    q_rob = qb.jit(lambda y0: qb.ode.odeint(fr, y0, (0.0, 40.0), method="rosenbrock23", rtol=1e-6, atol=1e-10,
                                            max_steps=4096))
    r0 = qb.array([1.0, 0.0, 0.0])
    _, rinfo = qb.ode.odeint(fr, r0, (0.0, 40.0), method="rosenbrock23", rtol=1e-6, atol=1e-10, max_steps=4096,
                             info=True)
    impls_s = {"quabla": lambda: q_rob(r0)}
    if jax and diffrax:
        frj = _robertson(jnp)
        rterm = diffrax.ODETerm(lambda t, y, args: frj(y, t))
        d_rob = jax.jit(lambda y0: diffrax.diffeqsolve(
            rterm, diffrax.Kvaerno5(), 0.0, 40.0, None, y0,
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-10), max_steps=4096).ys[-1])
        rj = jnp.asarray([1.0, 0.0, 0.0])
        diff = np.max(np.abs(np.asarray(q_rob(r0)) - np.asarray(d_rob(rj))) / (np.abs(np.asarray(d_rob(rj))) + 1e-6))
        assert diff < 1e-3, f"ode: Robertson end states differ from diffrax's by {diff:.1e} (relative)"
        impls_s["jax"] = lambda: d_rob(rj).block_until_ready()
    add(f"robertson rosenbrock23 ({int(rinfo.accepted)} steps)", "ms/call", impls_s, 1)
    return rows
