"""Random draws: eager samples from a concrete key (C++), and jitted steps whose key is an
argument (the traced Threefry rounds), as a PINN resamples its collocation points each step,
against NumPy's Generator and JAX."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax


def run(quick: bool = False):
    jax, jnp = load_jax()
    rows = []
    rounds = 5 if quick else 11
    number = 5 if quick else 20
    n = 1_000_000

    key = qb.random.key(0)
    gen = np.random.default_rng(0)
    impls = {"quabla": lambda: qb.random.normal(key, (n,)), "numpy": lambda: gen.standard_normal(n)}
    if jax:
        jkey = jax.random.PRNGKey(0)
        impls["jax"] = lambda: jax.random.normal(jkey, (n,)).block_until_ready()
    t = alternate(impls, number=number, rounds=rounds)
    rows.append(("eager normal f64[1e6]", "ms/call", {k: v * 1e3 for k, v in t.items()}))

    # One resampling step under jit: split the key, draw points in a box (array bounds).
    points = 100_000
    lo, hi = np.array([0.0, -1.0]), np.array([1.0, 1.0])
    qlo, qhi = qb.asarray(lo), qb.asarray(hi)

    @qb.jit
    def q_step(k):
        k, sub = qb.random.split(k)
        return k, qb.random.uniform(sub, (points, 2), minval=qlo, maxval=qhi)

    state = {"q": qb.random.key(1)}

    def q_call():
        state["q"], x = q_step(state["q"])
        return x
    impls = {"quabla": q_call}
    if jax:
        jlo, jhi = jnp.asarray(lo), jnp.asarray(hi)

        @jax.jit
        def j_step(k):
            k, sub = jax.random.split(k)
            return k, jax.random.uniform(sub, (points, 2), minval=jlo, maxval=jhi)
        state["j"] = jax.random.PRNGKey(1)

        def j_call():
            state["j"], x = j_step(state["j"])
            return x.block_until_ready()
        impls["jax"] = j_call
    t = alternate(impls, number=number, rounds=rounds)
    rows.append(("jit split+uniform f64[1e5,2]", "ms/call", {k: v * 1e3 for k, v in t.items()}))

    @qb.jit
    def q_normal(k):
        return qb.random.normal(k, (points,))
    qk = qb.random.key(2)
    impls = {"quabla": lambda: q_normal(qk)}
    if jax:
        j_normal = jax.jit(lambda k: jax.random.normal(k, (points,)))
        jk = jax.random.PRNGKey(2)
        impls["jax"] = lambda: j_normal(jk).block_until_ready()
    t = alternate(impls, number=number, rounds=rounds)
    rows.append(("jit normal f64[1e5]", "ms/call", {k: v * 1e3 for k, v in t.items()}))
    return rows
