"""jit workloads of the compiler issue, side by side with JAX's jax.jit: per-call overhead
of a one-op function, a 20-op elementwise chain on 1e6 float32 elements, and a 3-layer
tanh MLP forward pass on a 4096x64 float32 batch."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax




def _chain20(m):
    def f(x):
        y = x
        for i in range(5):
            y = m.tanh(y * 0.9 + 0.1)
            y = m.sin(y) - y * 0.5
        return y
    return f


def _mlp(m):
    def f(params, x):
        h = x
        for w, b in params:
            h = m.tanh(h @ w + b)
        return h
    return f


def run(quick: bool = False):
    jax, jnp = load_jax(False)
    rows = []
    rounds = 5 if quick else 11

    x3 = qb.array([1.0, 2.0, 3.0], dtype=qb.float32)
    fq = qb.jit(lambda x: qb.sin(x))
    impls = {"quabla": lambda: fq(x3)}
    if jax:
        fj = jax.jit(jnp.sin)
        j3 = jnp.asarray(np.asarray(x3))
        impls["jax"] = lambda: fj(j3).block_until_ready()
    t = alternate(impls, number=2000 if quick else 20000, rounds=rounds)
    rows.append(("jit call sin f32[3]", "us/call", {k: v * 1e6 for k, v in t.items()}))

    rng = np.random.default_rng(0)
    xn = rng.uniform(-1.0, 1.0, 1_000_000).astype(np.float32)
    fq = qb.jit(_chain20(qb))
    xq = qb.array(xn)
    impls = {"quabla": lambda: fq(xq), "numpy": lambda: _chain20(np)(xn)}
    if jax:
        fj = jax.jit(_chain20(jnp))
        xj = jnp.asarray(xn)
        impls["jax"] = lambda: fj(xj).block_until_ready()
    t = alternate(impls, number=5 if quick else 20, rounds=rounds)
    rows.append(("jit chain20 f32[1e6]", "ms/call", {k: v * 1e3 for k, v in t.items()}))

    sizes = [(64, 64), (64, 64), (64, 64)]
    params_np = [(rng.normal(0, 0.125, s).astype(np.float32), rng.normal(0, 0.1, s[1]).astype(np.float32)) for s in sizes]
    xb = rng.normal(0, 1, (4096, 64)).astype(np.float32)
    fq = qb.jit(_mlp(qb))
    pq = [(qb.array(w), qb.array(b)) for w, b in params_np]
    xq = qb.array(xb)
    impls = {"quabla": lambda: fq(pq, xq), "numpy": lambda: _mlp(np)(params_np, xb)}
    if jax:
        fj = jax.jit(_mlp(jnp))
        pj = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params_np]
        xj = jnp.asarray(xb)
        impls["jax"] = lambda: fj(pj, xj).block_until_ready()
    t = alternate(impls, number=10 if quick else 50, rounds=rounds)
    rows.append(("jit mlp3 4096x64 f32", "ms/call", {k: v * 1e3 for k, v in t.items()}))
    return rows
