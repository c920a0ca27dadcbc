"""Checkpointing workload (the custom-rules issue): the gradient of a 16-layer tanh MLP
(width 256, batch 4096, float64) plain, with every layer checkpointed, and nested (every
layer checkpointed inside checkpointed groups of four layers), Quabla (qb.checkpoint)
beside JAX (jax.checkpoint), both under jit: time per gradient and the planned peak memory
(Quabla: the compiled plan's stats()["peak_bytes"], region bodies included; JAX: the
compiled executable's memory_analysis() temp + output bytes)."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax

L, W, B = 16, 256, 4096


GROUP = 4


def _loss(m, ck, nested=False):
    def layer(h, w, b):
        return m.tanh(h @ w + b)

    f = ck(layer) if ck else layer

    def group(h, params):
        for w, b in params:
            h = f(h, w, b)
        return h

    def loss(params, x):
        if nested:
            h = x
            for i in range(0, len(params), GROUP):
                h = ck(group)(h, params[i:i + GROUP])
        else:
            h = group(x, params)
        return m.mean(h ** 2)
    return loss


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rng = np.random.default_rng(0)
    params_np = [(rng.normal(0, 1 / np.sqrt(W), (W, W)), rng.normal(0, 0.1, W)) for _ in range(L)]
    x_np = rng.normal(size=(B, W))
    rows = []
    rounds = 3 if quick else 7
    pq = [(qb.array(w), qb.array(b)) for w, b in params_np]
    xq = qb.array(x_np)
    for label, qck, jck, nested in (("plain", None, None, False), ("checkpointed", qb.checkpoint, "jax", False),
                                    ("nested", qb.checkpoint, "jax", True)):
        gq = qb.jit(qb.grad(_loss(qb, qck, nested)))
        impls = {"quabla": lambda: gq(pq, xq)}
        mem = {"quabla": gq.lower(pq, xq).compile().stats()["peak_bytes"] / 2 ** 20}
        if jax:
            gj = jax.jit(jax.grad(_loss(jnp, jax.checkpoint if jck else None, nested)))
            pj = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params_np]
            xj = jnp.asarray(x_np)
            impls["jax"] = lambda: jax.block_until_ready(gj(pj, xj))
            ma = gj.lower(pj, xj).compile().memory_analysis()
            if ma is not None:
                mem["jax"] = (ma.temp_size_in_bytes + ma.output_size_in_bytes) / 2 ** 20
        t = alternate(impls, number=1, rounds=rounds, warmup=1)
        rows.append((f"mlp16 grad {label}", "ms/call", {k: v * 1e3 for k, v in t.items()}))
        rows.append((f"mlp16 grad {label}", "peak MB", mem))
    return rows
