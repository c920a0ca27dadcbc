"""Eager workloads of the foundation: dispatch overhead of a tiny op, and throughput of
tanh/exp/sin and a 4-op elementwise chain on 1e6 elements, of a comparison, a select
(where), relu, and the max of a vector and of each row of a matrix, against NumPy and JAX."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax




def run(quick: bool = False):
    jax, jnp = load_jax()
    rows = []
    rounds = 5 if quick else 11

    # Dispatch overhead: a 3-element sin, eager, result materialised.
    x3 = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    impls = {"quabla": (lambda q=qb.array(x3): qb.sin(q)), "numpy": (lambda: np.sin(x3))}
    if jax:
        j3 = jnp.asarray(x3)
        impls["jax"] = lambda: jnp.sin(j3).block_until_ready()
    t = alternate(impls, number=2000 if quick else 20000, rounds=rounds)
    rows.append(("dispatch sin f32[3]", "us/call", {k: v * 1e6 for k, v in t.items()}))

    rng = np.random.default_rng(0)
    n = 1_000_000
    for dt in (np.float32, np.float64):
        xn = rng.uniform(-3.0, 3.0, n).astype(dt)
        xq = qb.array(xn)
        xj = jnp.asarray(xn) if jax else None
        for name in ("tanh", "exp", "sin"):
            impls = {"quabla": (lambda f=getattr(qb, name): f(xq)), "numpy": (lambda f=getattr(np, name): f(xn))}
            if jax:
                impls["jax"] = lambda f=getattr(jnp, name): f(xj).block_until_ready()
            t = alternate(impls, number=5 if quick else 20, rounds=rounds)
            rows.append((f"{name} {np.dtype(dt).name}[1e6]", "ms/call", {k: v * 1e3 for k, v in t.items()}))
        # A 4-op chain, eager op by op in every library: tanh(exp(0.5 x) + x).
        impls = {
            "quabla": lambda: qb.tanh(qb.exp(xq * 0.5) + xq),
            "numpy": lambda: np.tanh(np.exp(xn * 0.5) + xn),
        }
        if jax:
            impls["jax"] = lambda: jnp.tanh(jnp.exp(xj * 0.5) + xj).block_until_ready()
        t = alternate(impls, number=5 if quick else 20, rounds=rounds)
        rows.append((f"chain4 {np.dtype(dt).name}[1e6]", "ms/call", {k: v * 1e3 for k, v in t.items()}))
        mq, mn = xq.reshape(1000, 1000), xn.reshape(1000, 1000)
        mj = xj.reshape(1000, 1000) if jax else None
        for name, fq, fn, fj in (
                ("less", lambda: xq < 0.5, lambda: xn < 0.5, lambda: (xj < 0.5).block_until_ready()),
                ("where", lambda: qb.where(xq < 0, -xq, xq), lambda: np.where(xn < 0, -xn, xn),
                 lambda: jnp.where(xj < 0, -xj, xj).block_until_ready()),
                ("relu", lambda: qb.relu(xq), lambda: np.maximum(xn, 0),
                 lambda: jax.nn.relu(xj).block_until_ready()),
                ("max", lambda: qb.max(xq), lambda: np.max(xn), lambda: jnp.max(xj).block_until_ready()),
                ("max rows", lambda: qb.max(mq, axis=1), lambda: np.max(mn, axis=1),
                 lambda: jnp.max(mj, axis=1).block_until_ready())):
            impls = {"quabla": fq, "numpy": fn}
            if jax:
                impls["jax"] = fj
            t = alternate(impls, number=5 if quick else 20, rounds=rounds)
            rows.append((f"{name} {np.dtype(dt).name}[1e6]", "ms/call", {k: v * 1e3 for k, v in t.items()}))
    return rows
