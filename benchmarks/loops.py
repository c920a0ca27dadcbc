"""Control-flow workloads beside JAX: a 10,000-step explicit Euler integration of the
Lorenz system (float64, a 20-op loop body over a 3-vector) forward, and the gradient of the
final state's squared norm with respect to the three parameters (reverse mode through the
loop: Quabla keeps O(sqrt T) checkpoints). Also checks the two agree."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax

T = 10_000


def _lorenz(m, stack):
    def step(i, s, p):
        x, y, z = s[0], s[1], s[2]
        d = stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])
        return s + 0.001 * d
    return step


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rounds = 5 if quick else 11
    rows = []
    p = np.array([10.0, 28.0, 8.0 / 3.0])
    s0 = np.array([1.0, 1.0, 1.0])
    sq = _lorenz(qb, qb.stack)
    fq = qb.jit(lambda s, p: qb.fori_loop(0, T, lambda i, s: sq(i, s, p), s))
    gq = qb.jit(qb.grad(lambda p, s: qb.sum(qb.fori_loop(0, T, lambda i, s: sq(i, s, p), s) ** 2)))
    qs, qp = qb.array(s0), qb.array(p)
    impls_f = {"quabla": lambda: fq(qs, qp)}
    impls_g = {"quabla": lambda: gq(qp, qs)}
    if jax:
        sj = _lorenz(jnp, jnp.stack)
        fj = jax.jit(lambda s, p: jax.lax.fori_loop(0, T, lambda i, s: sj(i, s, p), s))
        gj = jax.jit(jax.grad(lambda p, s: jnp.sum(jax.lax.fori_loop(0, T, lambda i, s: sj(i, s, p), s) ** 2)))
        js, jp = jnp.asarray(s0), jnp.asarray(p)
        impls_f["jax"] = lambda: fj(js, jp).block_until_ready()
        impls_g["jax"] = lambda: gj(jp, js).block_until_ready()
        gdiff = np.max(np.abs(np.asarray(gq(qp, qs)) - np.asarray(gj(jp, js))) / np.abs(np.asarray(gj(jp, js))))
        assert gdiff < 1e-9, f"loops: gradients differ from JAX's by {gdiff:.2e}"
    t = alternate(impls_f, number=3 if quick else 10, rounds=rounds)
    rows.append(("lorenz fori 1e4 f64", "ms/call", {k: v * 1e3 for k, v in t.items()}))
    t = alternate(impls_g, number=2 if quick else 5, rounds=rounds)
    rows.append(("lorenz grad 1e4 f64", "ms/call", {k: v * 1e3 for k, v in t.items()}))
    return rows
