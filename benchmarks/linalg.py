"""Dense linear-algebra workloads (the linalg issue) beside JAX (jax.jit, float64) and
NumPy: a batched solve of 100,000 3x3 systems, 1,000 steps of a 64x64 Cholesky factor and
solve inside a fori_loop, a 2000x2000 solve, Cholesky and eigh, the gradient of slogdet of a
256x256 matrix, and the first and third directional derivatives of sum(cholesky(A)) and of
sum(eigvalsh(A)^2) for a 64x64 A (their time ratio shows how higher orders scale)."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rows = []
    rounds = 3 if quick else 7
    rng = np.random.default_rng(0)

    def add(label, q, j=None, n=None, number=3):
        impls = {"quabla": q}
        if j is not None:
            impls["jax"] = j
        if n is not None:
            impls["numpy"] = n
        t = alternate(impls, number=number, rounds=rounds, warmup=2)
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in t.items()}))

    # 100,000 3x3 systems
    a3 = rng.normal(size=(100_000, 3, 3)) + 3 * np.eye(3)
    b3 = rng.normal(size=(100_000, 3, 1))
    fq = qb.jit(qb.linalg.solve)
    aq, bq = qb.array(a3), qb.array(b3)
    fj = aj = bj = None
    if jax:
        fj = jax.jit(jnp.linalg.solve)
        aj, bj = jnp.asarray(a3), jnp.asarray(b3)
    add("solve 1e5 x 3x3 f64", lambda: fq(aq, bq), (lambda: fj(aj, bj).block_until_ready()) if jax else None,
        lambda: np.linalg.solve(a3, b3))

    # 64x64 Cholesky + solve in a 1,000-step loop
    m = rng.normal(size=(64, 64))
    spd = m @ m.T / 64 + np.eye(64)
    v0 = rng.normal(size=64)

    def q_loop(a, v):
        return qb.fori_loop(0, 1000, lambda i, v: qb.linalg.cho_solve((qb.linalg.cholesky(a + 1e-3 * qb.sum(v * v) * qb.eye(64)), True), v) * 0.5 + v * 0.5, v)
    lq = qb.jit(q_loop)
    sq, vq = qb.array(spd), qb.array(v0)
    lj = None
    if jax:
        import jax.scipy.linalg as jsl

        def j_loop(a, v):
            def body(i, v):
                c = jnp.linalg.cholesky(a + 1e-3 * jnp.sum(v * v) * jnp.eye(64))
                return jsl.cho_solve((c, True), v) * 0.5 + v * 0.5
            return jax.lax.fori_loop(0, 1000, body, v)
        lj = jax.jit(j_loop)
        sj, vj = jnp.asarray(spd), jnp.asarray(v0)
        diff = np.max(np.abs(np.asarray(lq(sq, vq)) - np.asarray(lj(sj, vj))))
        assert diff < 1e-8, f"linalg: the Cholesky loops differ from JAX's by {diff:.2e}"
    add("cholesky+solve 64 x1000 loop", lambda: lq(sq, vq), (lambda: lj(sj, vj).block_until_ready()) if jax else None,
        number=1)

    # 2000x2000
    big = rng.normal(size=(2000, 2000))
    spd_big = big @ big.T / 2000 + np.eye(2000)
    rhs = rng.normal(size=(2000, 1))
    sq_ = qb.jit(qb.linalg.solve)
    cq = qb.jit(qb.linalg.cholesky)
    bigq, spdq, rhsq = qb.array(big), qb.array(spd_big), qb.array(rhs)
    add("solve 2000 f64", lambda: sq_(bigq, rhsq), None, lambda: np.linalg.solve(big, rhs), number=1)
    add("cholesky 2000 f64", lambda: cq(spdq), None, lambda: np.linalg.cholesky(spd_big), number=1)
    eq = qb.jit(qb.linalg.eigh)
    add("eigh 2000 f64", lambda: eq(spdq), None, lambda: np.linalg.eigh(spd_big), number=1)

    # gradient of slogdet, 256x256
    a256 = rng.normal(size=(256, 256)) + 16 * np.eye(256)
    gq = qb.jit(qb.grad(lambda a: qb.linalg.slogdet(a)[1]))
    a256q = qb.array(a256)
    gj = None
    if jax:
        gj = jax.jit(jax.grad(lambda a: jnp.linalg.slogdet(a)[1]))
        a256j = jnp.asarray(a256)
    add("grad slogdet 256 f64", lambda: gq(a256q), (lambda: gj(a256j).block_until_ready()) if jax else None, number=3)

    # first vs third directional derivatives (nested forward mode), 64x64
    d_np = rng.normal(size=(64, 64))

    def nested(jvp, f, order):
        def run(a, d):
            g = f
            for _ in range(order):
                g = (lambda g: lambda a: jvp(g, (a,), (d,))[1])(g)
            return g(a)
        return run

    for name, fq, fj in (("cholesky", lambda a: qb.sum(qb.linalg.cholesky(a)),
                          (lambda a: jnp.sum(jnp.linalg.cholesky(a))) if jax else None),
                         ("eigvalsh", lambda a: qb.sum(qb.linalg.eigvalsh(a) ** 2),
                          (lambda a: jnp.sum(jnp.linalg.eigvalsh(a) ** 2)) if jax else None)):
        for order in (1, 3):
            q = qb.jit(nested(qb.jvp, fq, order))
            aq_, dq_ = qb.array(spd), qb.array(d_np)
            impls = {"quabla": lambda q=q: q(aq_, dq_)}
            if jax:
                j = jax.jit(nested(jax.jvp, fj, order))
                aj_, dj_ = jnp.asarray(spd), jnp.asarray(d_np)
                impls["jax"] = lambda j=j: j(aj_, dj_).block_until_ready()
            t = alternate(impls, number=5, rounds=rounds, warmup=2)
            rows.append((f"{name} 64 jvp order {order}", "ms/call", {k: v * 1e3 for k, v in t.items()}))
    return rows
