"""The heavier PINN workloads of BENCHMARKS.md, Quabla beside JAX:

The machine's float32 peak for reference: 2 cores x 2 FMA pipes x 8 float32 lanes x 2 FLOPs
x 2.445 GHz (/proc/cpuinfo) = 156 GFLOP/s.

- poisson2d: -Laplace(u) = 2 pi^2 sin(pi x) sin(pi y) on [0,1]^2, u = 0 on the boundary;
  MLP 2-64-64-64-1 tanh, float32; Laplacian as the trace of the input Hessian (vmap of
  hessian); 4096 interior + 512 boundary points; one Adam (lr 1e-3) step per iteration.
- beam4: u'''' = 1 on [0,1], u = u'' = 0 at both ends; MLP 1-32-32-1 tanh, float64; the
  fourth derivative by nested grad; 256 points.

Reported: steady step time (value_and_grad + update), compile time (first step minus a
steady step), peak RSS of the process, the loss reached, and for poisson2d the achieved
GFLOP/s (matmul FLOPs counted from the compiled program's shapes).
"""
from __future__ import annotations

import math
import resource
import time

import numpy as np

import quabla as qb

from .harness import adam_update as _adam, load_jax
from .torch_side import load_torch, run_loss as _run_torch


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _init(sizes, dtype, seed):
    rng = np.random.default_rng(seed)
    params = {}
    for i, (a, b) in enumerate(sizes):
        params[f"w{i}"] = rng.normal(0.0, math.sqrt(2.0 / (a + b)), (a, b)).astype(dtype)
        params[f"b{i}"] = np.zeros(b, dtype=dtype)
    return params


def _poisson_data():
    rng = np.random.default_rng(7)
    zi = rng.uniform(0.0, 1.0, (4096, 2)).astype(np.float32)
    t = rng.uniform(0.0, 1.0, 512).astype(np.float32)
    side = rng.integers(0, 4, 512)
    zb = np.stack([np.where(side == 0, 0.0, np.where(side == 1, 1.0, t)),
                   np.where(side == 2, 0.0, np.where(side == 3, 1.0, t))], axis=1).astype(np.float32)
    return zi, zb




def _poisson(m, grad, hessian, vmap):
    def mlp(p, z):
        h = z
        for i in range(3):
            h = m.tanh(h @ p[f"w{i}"] + p[f"b{i}"])
        return (h @ p["w3"] + p["b3"])[0]

    def laplacian(p, z):
        h = hessian(lambda z: mlp(p, z))(z)
        return h[0, 0] + h[1, 1]

    def loss(p, zi, zb):
        x, y = zi[:, 0], zi[:, 1]
        res = -vmap(laplacian, in_axes=(None, 0))(p, zi) - 2 * math.pi ** 2 * m.sin(math.pi * x) * m.sin(math.pi * y)
        ub = vmap(mlp, in_axes=(None, 0))(p, zb)
        return m.mean(res ** 2) + m.mean(ub ** 2)
    return loss


def _beam(m, grad, vmap):
    def mlp(p, x):
        h = m.reshape(x, (1, 1))
        for i in range(2):
            h = m.tanh(h @ p[f"w{i}"] + p[f"b{i}"])
        return m.reshape(h @ p["w2"] + p["b2"], ())

    d1 = grad(mlp, argnums=1)
    d2 = grad(d1, argnums=1)
    d4 = grad(grad(d2, argnums=1), argnums=1)

    def loss(p, x):
        res = vmap(d4, in_axes=(None, 0))(p, x) - 1.0
        ends = m.stack([mlp(p, m.asarray(0.0)), mlp(p, m.asarray(1.0)), d2(p, m.asarray(0.0)), d2(p, m.asarray(1.0))])
        return m.mean(res ** 2) + m.mean(ends ** 2)
    return loss


def _run_quabla(loss, params_np, data, lr, steps):
    params = {k: qb.array(v) for k, v in params_np.items()}
    adam = qb.optim.Adam(learning_rate=lr)
    step = qb.jit(qb.value_and_grad(loss))
    t0 = time.perf_counter()
    value, grads = step(params, *data)
    params = adam.step(params, grads)
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps - 1):
        t = time.perf_counter()
        value, grads = step(params, *data)
        params = adam.step(params, grads)
        times.append(time.perf_counter() - t)
    med = float(np.median(times))
    compiled = step.lower(params, *data).compile()
    return {"step": med, "compile": first - med, "loss": value.item(), "flops": compiled.stats()["matmul_flops"]}


def _run_jax(jax, jnp, loss, params_np, data, lr, steps):
    params = {k: jnp.asarray(v) for k, v in params_np.items()}
    update = _adam(jnp, jax.tree_util.tree_map, lr)
    z = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (0, z, z)

    @jax.jit
    def train_step(p, s, *d):
        value, grads = jax.value_and_grad(loss)(p, *d)
        p, s = update(p, grads, s)
        return p, s, value

    d = [jnp.asarray(x) for x in data]
    t0 = time.perf_counter()
    params, state, value = train_step(params, state, *d)
    value.block_until_ready()
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps - 1):
        t = time.perf_counter()
        params, state, value = train_step(params, state, *d)
        value.block_until_ready()
        times.append(time.perf_counter() - t)
    med = float(np.median(times))
    return {"step": med, "compile": first - med, "loss": float(value)}


def run(quick: bool = False):
    """Quabla's runs first, then JAX's: XLA's worker threads keep spinning for a while after
    JAX work, which would slow whatever runs next; Quabla's pool threads block when idle."""
    jax, jnp = load_jax()
    steps = 5 if quick else 50
    zi, zb = _poisson_data()
    p2 = _init([(2, 64), (64, 64), (64, 64), (64, 1)], np.float32, 0)
    xb = np.linspace(0.0, 1.0, 256)
    pb = _init([(1, 32), (32, 32), (32, 1)], np.float64, 1)
    qp = _run_quabla(_poisson(qb, qb.grad, qb.hessian, qb.vmap), p2, (qb.array(zi), qb.array(zb)), 1e-3, steps)
    rss_q = _rss_mb()
    qb4 = _run_quabla(_beam(qb, qb.grad, qb.vmap), pb, (qb.array(xb),), 1e-3, steps)
    jp = _run_jax(jax, jnp, _poisson(jnp, jax.grad, jax.hessian, jax.vmap), p2, (zi, zb), 1e-3, steps) if jax else None
    jb4 = _run_jax(jax, jnp, _beam(jnp, jax.grad, jax.vmap), pb, (xb,), 1e-3, steps) if jax else None
    torch = load_torch()  # last: its threads, like XLA's, may keep spinning after work
    tp = tb4 = None
    if torch:
        tp = _run_torch(torch, lambda m, g, v, h: _poisson(m, g, h, v), p2, (zi, zb), 1e-3, steps, torch.float32)
        tb4 = _run_torch(torch, lambda m, g, v, h: _beam(m, g, v), pb, (xb,), 1e-3, steps, torch.float64)

    def both(q, j, key, scale=1.0, t=None):
        return {"quabla": q[key] * scale, **({"jax": j[key] * scale} if j else {}),
                **({"torch": t[key] * scale} if t and t.get(key) is not None else {})}

    rows = []
    label = f"poisson2d ({steps} steps)"
    rows.append((f"{label} step", "ms/step", both(qp, jp, "step", 1e3, tp)))
    rows.append((f"{label} compile", "s", both(qp, jp, "compile", 1.0, tp)))
    rows.append((f"{label} loss", "value", both(qp, jp, "loss", 1.0, tp)))
    rows.append((f"{label} GFLOP/s", "matmul", {"quabla": qp["flops"] / qp["step"] / 1e9}))
    rows.append((f"{label} peak RSS", "MB", {"quabla": rss_q}))
    label = f"beam4 ({steps} steps)"
    rows.append((f"{label} step", "ms/step", both(qb4, jb4, "step", 1e3, tb4)))
    rows.append((f"{label} compile", "s", both(qb4, jb4, "compile", 1.0, tb4)))
    rows.append((f"{label} loss", "value", both(qb4, jb4, "loss", 1.0, tb4)))
    return rows
