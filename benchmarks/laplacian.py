"""Laplacian workloads (BENCHMARKS.md laplacian50; the forward-Laplacian issue), Quabla
beside JAX and folx in one run:

- laplacian50: the exact Laplacian of a 50-input MLP 50-256-256-256-1 tanh (float32) over
  a batch of 256 points; value only, and value_and_grad with respect to the parameters of
  mean((Laplacian + 1)^2). Quabla: qb.vmap(qb.laplacian(u)); JAX: jax.vmap of
  trace(jax.hessian(u)), as a JAX user writes it; folx: jax.vmap of
  folx.forward_laplacian(u) (the forward-Laplacian library; skipped when not installed).
  Planned peak memory: Quabla's compiled stats()["peak_bytes"], JAX's and folx's
  memory_analysis() temp + output bytes.
- poisson2d (benchmarks/pde.py's problem) with the Laplacian by qb.laplacian against the
  same loss with trace(qb.hessian), one Adam step each.
- beam4 (benchmarks/pde.py's problem) with u'''' by qb.taylor(u, [1.0], order=4) against
  four nested qb.grad, one Adam step each.
"""
from __future__ import annotations

import math
import time

import numpy as np

import quabla as qb

from .harness import alternate, load_jax
from .pde import _beam, _init, _poisson, _poisson_data

D, WIDTH, BATCH = 50, 256, 256


def _mlp(m):
    def u(p, x):
        h = x
        for i in range(3):
            h = m.tanh(h @ p[f"w{i}"] + p[f"b{i}"])
        return (h @ p["w3"] + p["b3"])[0]
    return u


def _laplacian_losses(m, vmap, lap):
    """(value, loss): the batch's Laplacians, and mean((Laplacian + 1)^2)."""
    def value(p, x):
        return vmap(lambda z: lap(p, z))(x)

    def loss(p, x):
        return m.mean((value(p, x) + 1.0) ** 2)
    return value, loss


def _jax_peak(jax, f, *args):
    mem = jax.jit(f).lower(*args).compile().memory_analysis()
    return (mem.temp_size_in_bytes + mem.output_size_in_bytes) / 2 ** 20


def _laplacian50(jax, jnp, quick):
    params_np = _init([(D, WIDTH), (WIDTH, WIDTH), (WIDTH, WIDTH), (WIDTH, 1)], np.float32, 3)
    x_np = np.random.default_rng(4).uniform(-1.0, 1.0, (BATCH, D)).astype(np.float32)
    uq = _mlp(qb)
    vq, lq = _laplacian_losses(qb, qb.vmap, lambda p, z: qb.laplacian(lambda z: uq(p, z))(z))
    pq = {k: qb.array(v) for k, v in params_np.items()}
    xq = qb.array(x_np)
    fq, gq = qb.jit(vq), qb.jit(qb.value_and_grad(lq))
    value = {"quabla": lambda: fq(pq, xq)}
    grad = {"quabla": lambda: gq(pq, xq)}
    peak_value = {"quabla": fq.lower(pq, xq).compile().stats()["peak_bytes"] / 2 ** 20}
    peak_grad = {"quabla": gq.lower(pq, xq).compile().stats()["peak_bytes"] / 2 ** 20}
    check = {"quabla": float(np.asarray(fq(pq, xq))[0])}
    if jax:
        uj = _mlp(jnp)
        pj = {k: jnp.asarray(v) for k, v in params_np.items()}
        xj = jnp.asarray(x_np)
        impls = {"jax": lambda p, z: jnp.trace(jax.hessian(lambda z: uj(p, z))(z))}
        try:
            import folx
            impls["folx"] = lambda p, z: folx.forward_laplacian(lambda z: uj(p, z))(z).laplacian
        except ImportError:
            pass
        for name, lap in impls.items():
            vj, lj = _laplacian_losses(jnp, jax.vmap, lap)
            fj, gj = jax.jit(vj), jax.jit(jax.value_and_grad(lj))
            value[name] = (lambda fj: lambda: fj(pj, xj).block_until_ready())(fj)
            grad[name] = (lambda gj: lambda: gj(pj, xj)[0].block_until_ready())(gj)
            peak_value[name] = _jax_peak(jax, vj, pj, xj)
            peak_grad[name] = _jax_peak(jax, jax.value_and_grad(lj), pj, xj)
            check[name] = float(np.asarray(fj(pj, xj))[0])
    rounds, number = (3, 2) if quick else (9, 5)
    tv = alternate(value, number, rounds)
    tg = alternate(grad, number, rounds)
    ms = lambda t: {k: v * 1e3 for k, v in t.items()}
    rows = [("laplacian50 value", "ms/batch", ms(tv)), ("laplacian50 value+grad", "ms/batch", ms(tg)),
            ("laplacian50 value peak", "MiB", peak_value), ("laplacian50 grad peak", "MiB", peak_grad),
            ("laplacian50 first point", "value", check)]
    return rows


def _poisson_laplacian(m, vmap):
    """benchmarks/pde.py's poisson2d loss with the Laplacian by qb.laplacian."""
    def mlp(p, z):
        h = z
        for i in range(3):
            h = m.tanh(h @ p[f"w{i}"] + p[f"b{i}"])
        return (h @ p["w3"] + p["b3"])[0]

    def loss(p, zi, zb):
        x, y = zi[:, 0], zi[:, 1]
        lap = vmap(lambda z: qb.laplacian(lambda z: mlp(p, z))(z))(zi)
        res = -lap - 2 * math.pi ** 2 * m.sin(math.pi * x) * m.sin(math.pi * y)
        ub = vmap(mlp, in_axes=(None, 0))(p, zb)
        return m.mean(res ** 2) + m.mean(ub ** 2)
    return loss


def _beam_taylor(m, vmap):
    """benchmarks/pde.py's beam4 loss with u'''' by qb.taylor (u'' for the boundary too)."""
    def mlp(p, x):
        h = m.reshape(x, (1, 1))
        for i in range(2):
            h = m.tanh(h @ p[f"w{i}"] + p[f"b{i}"])
        return m.reshape(h @ p["w2"] + p["b2"], ())

    one = qb.array([1.0])
    d2 = lambda p, x: qb.taylor(lambda x: mlp(p, x), one, order=2)(x)
    d4 = lambda p, x: qb.taylor(lambda x: mlp(p, x), one, order=4)(x)

    def loss(p, x):
        res = vmap(d4, in_axes=(None, 0))(p, x) - 1.0
        ends = m.stack([mlp(p, m.asarray(0.0)), mlp(p, m.asarray(1.0)), d2(p, m.asarray(0.0)), d2(p, m.asarray(1.0))])
        return m.mean(res ** 2) + m.mean(ends ** 2)
    return loss


def _alternate_steps(variants, steps):
    """Median step time of each (loss, params, data) variant, interleaved step by step."""
    states = {}
    for name, (loss, params_np, data) in variants.items():
        params = {k: qb.array(v) for k, v in params_np.items()}
        states[name] = [qb.jit(qb.value_and_grad(loss)), params, qb.optim.Adam(learning_rate=1e-3), data, []]
    for i in range(steps):
        for name, st in states.items():
            step, params, adam, data, times = st
            t = time.perf_counter()
            _, grads = step(params, *data)
            st[1] = adam.step(params, grads)
            if i:
                times.append(time.perf_counter() - t)
    return {name: float(np.median(st[4])) * 1e3 for name, st in states.items()}


def run(quick: bool = False):
    jax, jnp = load_jax()
    rows = _laplacian50(jax, jnp, quick)
    steps = 5 if quick else 30
    zi, zb = _poisson_data()
    p2 = _init([(2, 64), (64, 64), (64, 64), (64, 1)], np.float32, 0)
    data = (qb.array(zi), qb.array(zb))
    t = _alternate_steps({"laplacian": (_poisson_laplacian(qb, qb.vmap), p2, data),
                          "hessian": (_poisson(qb, qb.grad, qb.hessian, qb.vmap), p2, data)}, steps)
    rows.append(("poisson2d qb.laplacian", "ms/step", {"quabla": t["laplacian"]}))
    rows.append(("poisson2d trace(hessian)", "ms/step", {"quabla": t["hessian"]}))
    xb = np.linspace(0.0, 1.0, 256)
    pb = _init([(1, 32), (32, 32), (32, 1)], np.float64, 1)
    t = _alternate_steps({"taylor": (_beam_taylor(qb, qb.vmap), pb, (qb.array(xb),)),
                          "grads": (_beam(qb, qb.grad, qb.vmap), pb, (qb.array(xb),))}, steps)
    rows.append(("beam4 qb.taylor order 4", "ms/step", {"quabla": t["taylor"]}))
    rows.append(("beam4 four nested grads", "ms/step", {"quabla": t["grads"]}))
    return rows
