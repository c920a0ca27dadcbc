"""Iterative solvers and Newton (the solvers issue) beside JAX (jax.jit, float64) and SciPy:
conjugate gradients on the matrix-free 2D 5-point Poisson operator of a 256x256 grid to a
relative residual of 1e-8, its gradient with respect to b (implicit: one more solve), and
a Newton solve of a 3-unknown nonlinear system at each step of a 1,000-step fori_loop
(JAX: lax.custom_root with a Newton while loop and a dense tangent solve)."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax
from .loops import _with_mode

N = 256
TOL = 1e-8


def _poisson(xp, pad):
    def matvec(u):
        p = pad(u.reshape(N, N), 1)
        return (4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]).reshape(-1)
    return matvec


def _system(xp):
    def f(x, p):
        return xp.stack([x[0] ** 2 + x[1] + x[2] - p,
                         x[0] - x[1] ** 3 + 0.5 * x[2] - 0.5 * p,
                         x[0] * x[1] + x[2] ** 3 - 1.0])
    return f


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rows = []
    rounds = 3 if quick else 5
    rng = np.random.default_rng(0)
    b = rng.normal(size=N * N)

    def add(label, unit, scale, impls, number):
        t = alternate(impls, number=number, rounds=rounds, warmup=1)
        rows.append((label, unit, {k: v * scale for k, v in t.items()}))

    # cg, 256x256 Poisson
    mq = _poisson(qb, qb.pad)
    cq = qb.jit(lambda b: qb.linalg.cg(mq, b, tol=TOL)[0])
    gq = qb.jit(qb.grad(lambda b: qb.sum(qb.linalg.cg(mq, b, tol=TOL)[0] ** 2)))
    bq = qb.array(b)
    x_q = np.asarray(cq(bq))
    impls_cg = {"quabla": lambda: cq(bq)}
    impls_g = {"quabla": lambda: gq(bq)}
    if jax:
        from jax.scipy.sparse.linalg import cg as jcg
        mj = _poisson(jnp, jnp.pad)
        cj = jax.jit(lambda b: jcg(mj, b, tol=TOL)[0])
        gj = jax.jit(jax.grad(lambda b: jnp.sum(jcg(mj, b, tol=TOL)[0] ** 2)))
        bj = jnp.asarray(b)
        diff = np.max(np.abs(x_q - np.asarray(cj(bj)))) / np.max(np.abs(x_q))
        assert diff < 1e-6, f"solvers: cg differs from JAX's by {diff:.1e} (relative)"
        gdiff = np.max(np.abs(np.asarray(gq(bq)) - np.asarray(gj(bj)))) / np.max(np.abs(np.asarray(gj(bj))))
        assert gdiff < 1e-6, f"solvers: the cg gradient differs from JAX's by {gdiff:.1e} (relative)"
        impls_cg["jax"] = lambda: cj(bj).block_until_ready()
        impls_g["jax"] = lambda: gj(bj).block_until_ready()
    try:
        import scipy.sparse as sp
        import scipy.sparse.linalg as spl
        t = sp.diags([4 * np.ones(N), -np.ones(N - 1), -np.ones(N - 1)], [0, 1, -1])
        off = sp.diags([-np.ones(N - 1), -np.ones(N - 1)], [1, -1])
        a = (sp.kron(sp.eye(N), t) + sp.kron(off, sp.eye(N))).tocsr()
        impls_cg["numpy"] = lambda: spl.cg(a, b, rtol=TOL)
    except ImportError:  # pragma: no cover
        pass
    _, info = qb.linalg.cg(mq, bq, tol=TOL, info=True)
    add(f"cg poisson {N}^2 ({int(info.iterations)} it)", "ms/call", 1e3, impls_cg, 1)
    add(f"grad cg poisson {N}^2", "ms/call", 1e3, impls_g, 1)

    # Newton on 3 unknowns inside a 1,000-step loop
    fq = _system(qb)

    def q_loop(p0):
        def step(i, carry):
            x, p = carry
            x = qb.newton(fq, x, args=(p,))
            return x, p + 1e-3
        return qb.fori_loop(0, 1000, step, (qb.array([1.0, 1.0, 1.0]), p0))[0]
    nq = qb.jit(q_loop)
    p0 = 2.0
    # The loop's native code is built at the first call, before timing (as the loops and
    # ode workloads do), so the rows compare compiled loops with compiled loops.
    _with_mode("sync", lambda: nq(qb.asarray(p0)))
    impls_n = {"quabla": lambda: nq(qb.asarray(p0))}
    if jax:
        fj = _system(jnp)

        def j_newton(f, x0):
            def cond(c):
                x, k = c
                return (jnp.max(jnp.abs(f(x))) > 1e-10) & (k < 50)

            def body(c):
                x, k = c
                return x - jnp.linalg.solve(jax.jacfwd(f)(x), f(x)), k + 1
            return jax.lax.while_loop(cond, body, (x0, 0))[0]

        def j_loop(p0):
            def step(i, carry):
                x, p = carry
                x = jax.lax.custom_root(lambda x: fj(x, p), x, j_newton,
                                        lambda g, y: jnp.linalg.solve(jax.jacfwd(g)(y), y))
                return x, p + 1e-3
            return jax.lax.fori_loop(0, 1000, step, (jnp.array([1.0, 1.0, 1.0]), jnp.asarray(p0)))[0]
        nj = jax.jit(j_loop)
        diff = np.max(np.abs(np.asarray(nq(qb.asarray(p0))) - np.asarray(nj(p0))))
        assert diff < 1e-8, f"solvers: the Newton loops differ from JAX's by {diff:.1e}"
        impls_n["jax"] = lambda: nj(p0).block_until_ready()
    add("newton 3 unknowns x1000 loop", "ms/call", 1e3, impls_n, 1)
    return rows
