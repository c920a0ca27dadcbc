"""Traced-index and einsum workloads (the jax.numpy-surface issue), side by side with JAX
(jax.jit, float64): a 1e6-element x.at[idx].add, a 1e6-element gather, the gradient of a
gather-heavy loss (forward gather, backward scatter-add), and two PINN-sized einsum
contractions (a dense layer over a 4096-point batch; per-point 32x32 Hessians times vectors)."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rows = []
    rounds = 5 if quick else 11
    number = 3 if quick else 10
    rng = np.random.default_rng(0)
    n = 1_000_000
    xn = rng.normal(size=n)
    un = rng.normal(size=n)
    idxn = rng.integers(0, n, size=n)

    xq, uq, iq = qb.array(xn), qb.array(un), qb.asarray(idxn)
    cases = [
        ("x.at[idx].add f64[1e6]", lambda m: lambda x, i, u: x.at[i].add(u)),
        ("x[idx] f64[1e6]", lambda m: lambda x, i, u: x[i]),
        ("grad sum(sin(x[idx])^2) 1e6", None),
    ]
    for label, make in cases:
        if make is None:
            fq = qb.jit(qb.grad(lambda x, i: qb.sum(qb.sin(x[i]) ** 2)))
            impls = {"quabla": lambda: fq(xq, iq)}
            if jax:
                fj = jax.jit(jax.grad(lambda x, i: jnp.sum(jnp.sin(x[i]) ** 2)))
                xj, ij = jnp.asarray(xn), jnp.asarray(idxn)
                impls["jax"] = lambda: fj(xj, ij).block_until_ready()
        else:
            fq = qb.jit(make(qb))
            impls = {"quabla": lambda: fq(xq, iq, uq)}
            if jax:
                fj = jax.jit(make(jnp))
                xj, ij, uj = jnp.asarray(xn), jnp.asarray(idxn), jnp.asarray(un)
                impls["jax"] = lambda: fj(xj, ij, uj).block_until_ready()
        t = alternate(impls, number=number, rounds=rounds)
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in t.items()}))

    # einsum: a dense layer over a batch (bi,ij->bj) and per-point Hessian-vector products
    # (bij,bj->bi), the contractions PINN residuals are made of.
    for label, spec, shapes in [("einsum bi,ij->bj 4096x64", "bi,ij->bj", [(4096, 64), (64, 64)]),
                                ("einsum bij,bj->bi 4096x32", "bij,bj->bi", [(4096, 32, 32), (4096, 32)])]:
        ops = [rng.normal(size=s) for s in shapes]
        fq = qb.jit(lambda a, b: qb.einsum(spec, a, b))
        aq = [qb.array(o) for o in ops]
        impls = {"quabla": lambda: fq(*aq), "numpy": lambda: np.einsum(spec, *ops, optimize=True)}
        if jax:
            fj = jax.jit(lambda a, b: jnp.einsum(spec, a, b))
            aj = [jnp.asarray(o) for o in ops]
            impls["jax"] = lambda: fj(*aj).block_until_ready()
        t = alternate(impls, number=number * 5, rounds=rounds)
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in t.items()}))
    return rows
