"""PINN workloads of BENCHMARKS.md, Quabla (written as the README teaches: jit of
value_and_grad, eager Adam) beside JAX (written as a JAX user would: the whole train step,
Adam included, under one jax.jit, x64 enabled):

- glance: u = sin(w x), 8 points, u_xx by grad(grad(u)) under vmap, Adam lr 0.05, 300 steps.
- figure: 1 -> 16 -> 1 tanh MLP, 32 interior points, u_xx + pi^2 sin(pi x) = 0 with
  u(0) = u(1) = 0, Adam lr 0.01, 3000 steps; error against sin(pi x) on 201 points.

Both implementations start from the same float64 weights (Glorot-normal from NumPy's
generator seeded 2026: qb.random arrives with the training issue).
"""
from __future__ import annotations

import math
import time

import numpy as np

import quabla as qb

from .harness import adam_update, load_jax
from . import torch_side




def _timed_training(step_fn, steps: int):
    """(compile seconds = first step, median step seconds over the rest, result of last)."""
    t0 = time.perf_counter()
    out = step_fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps - 1):
        t = time.perf_counter()
        out = step_fn()
        times.append(time.perf_counter() - t)
    return first, float(np.median(times)), out, first + float(np.sum(times))


# ---- glance -----------------------------------------------------------------------------

def glance_quabla(steps=300):
    def u(x, w):
        return qb.sin(w * x)
    u_xx = qb.vmap(qb.grad(qb.grad(u)), in_axes=(0, None))

    def loss(params, x):
        return qb.mean((u_xx(x, params["w"]) + math.pi ** 2 * qb.sin(math.pi * x)) ** 2)

    x = qb.linspace(0.05, 0.95, 8)
    state = {"params": {"w": qb.array(2.5)}, "adam": qb.optim.Adam(learning_rate=0.05)}
    step = qb.jit(qb.value_and_grad(loss))

    def one():
        value, grads = step(state["params"], x)
        state["params"] = state["adam"].step(state["params"], grads)
        return value

    first, med, value, total = _timed_training(one, steps)
    return {"compile_s": first - med, "step_s": med, "total_s": total, "result": state["params"]["w"].item(),
            "loss": value.item()}


def _adam_jax(jax, jnp, lr):
    def init(p):
        z = jax.tree_util.tree_map(jnp.zeros_like, p)
        return (0, z, z)
    return init, adam_update(jnp, jax.tree_util.tree_map, lr)


def glance_jax(steps=300):
    jax, jnp = load_jax()

    def u(x, w):
        return jnp.sin(w * x)
    u_xx = jax.vmap(jax.grad(jax.grad(u)), in_axes=(0, None))

    def loss(params, x):
        return jnp.mean((u_xx(x, params["w"]) + math.pi ** 2 * jnp.sin(math.pi * x)) ** 2)

    init, update = _adam_jax(jax, jnp, 0.05)

    @jax.jit
    def train_step(params, opt, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        params, opt = update(params, grads, opt)
        return params, opt, value

    x = jnp.linspace(0.05, 0.95, 8)
    state = {"params": {"w": jnp.asarray(2.5)}}
    state["opt"] = init(state["params"])

    def one():
        state["params"], state["opt"], value = train_step(state["params"], state["opt"], x)
        return value.block_until_ready()

    first, med, value, total = _timed_training(one, steps)
    return {"compile_s": first - med, "step_s": med, "total_s": total, "result": float(state["params"]["w"]),
            "loss": float(value)}


# ---- figure -----------------------------------------------------------------------------

def _figure_init():
    rng = np.random.default_rng(2026)
    w1 = rng.normal(0.0, math.sqrt(2.0 / (1 + 16)), (1, 16))
    w2 = rng.normal(0.0, math.sqrt(2.0 / (16 + 1)), (16, 1))
    return {"w1": w1, "b1": np.zeros(16), "w2": w2, "b2": np.zeros(1)}


def _figure_points():
    return np.array([(i + 1) / 33 for i in range(32)]), np.linspace(0.0, 1.0, 201)


def figure_quabla(steps=3000):
    init = _figure_init()
    params = {k: qb.array(v) for k, v in init.items()}
    xs, x_eval = _figure_points()

    def u(p, x):  # x: scalar
        h = qb.tanh(qb.reshape(x, (1, 1)) @ p["w1"] + p["b1"])
        return qb.reshape(h @ p["w2"] + p["b2"], ())

    u_xx = qb.vmap(qb.grad(qb.grad(u, argnums=1), argnums=1), in_axes=(None, 0))
    u_b = qb.vmap(u, in_axes=(None, 0))

    def loss(p, x):
        res = u_xx(p, x) + math.pi ** 2 * qb.sin(math.pi * x)
        ub = u_b(p, qb.array([0.0, 1.0]))
        return qb.mean(res ** 2) + qb.mean(ub ** 2)

    x = qb.array(xs)
    adam = qb.optim.Adam(learning_rate=0.01)
    step = qb.jit(qb.value_and_grad(loss))
    state = {"params": params}

    def one():
        value, grads = step(state["params"], x)
        state["params"] = adam.step(state["params"], grads)
        return value

    first, med, value, total = _timed_training(one, steps)
    pred = qb.jit(u_b)(state["params"], qb.array(x_eval)).numpy()
    err = float(np.max(np.abs(pred - np.sin(np.pi * x_eval))))
    return {"compile_s": first - med, "step_s": med, "total_s": total, "result": err, "loss": value.item()}


def figure_jax(steps=3000):
    jax, jnp = load_jax()
    params = {k: jnp.asarray(v) for k, v in _figure_init().items()}
    xs, x_eval = _figure_points()

    def u(p, x):
        h = jnp.tanh(jnp.reshape(x, (1, 1)) @ p["w1"] + p["b1"])
        return jnp.reshape(h @ p["w2"] + p["b2"], ())

    u_xx = jax.vmap(jax.grad(jax.grad(u, argnums=1), argnums=1), in_axes=(None, 0))
    u_b = jax.vmap(u, in_axes=(None, 0))

    def loss(p, x):
        res = u_xx(p, x) + math.pi ** 2 * jnp.sin(math.pi * x)
        ub = u_b(p, jnp.array([0.0, 1.0]))
        return jnp.mean(res ** 2) + jnp.mean(ub ** 2)

    init, update = _adam_jax(jax, jnp, 0.01)

    @jax.jit
    def train_step(p, opt, x):
        value, grads = jax.value_and_grad(loss)(p, x)
        p, opt = update(p, grads, opt)
        return p, opt, value

    x = jnp.asarray(xs)
    state = {"params": params, "opt": init(params)}

    def one():
        state["params"], state["opt"], value = train_step(state["params"], state["opt"], x)
        return value.block_until_ready()

    first, med, value, total = _timed_training(one, steps)
    pred = np.asarray(jax.jit(u_b)(state["params"], jnp.asarray(x_eval)))
    err = float(np.max(np.abs(pred - np.sin(np.pi * x_eval))))
    return {"compile_s": first - med, "step_s": med, "total_s": total, "result": err, "loss": float(value)}


def _glance_torch(torch, steps):
    return torch_side.glance(torch, steps)


def _figure_torch(torch, steps):
    xs, x_eval = _figure_points()
    return torch_side.figure(torch, _figure_init(), xs, x_eval, steps)


def run(quick: bool = False):
    jax, _ = load_jax()
    torch = torch_side.load_torch()
    rows = []
    for name, qf, jf, tf, steps in (("glance", glance_quabla, glance_jax, _glance_torch, 300),
                                    ("figure", figure_quabla, figure_jax, _figure_torch, 300 if quick else 3000)):
        q = qf(steps)
        j = jf(steps) if jax else None
        t = tf(torch, steps) if torch else None  # last: torch's threads may keep spinning

        def cols(key, scale=1.0):
            return {"quabla": q[key] * scale, **({"jax": j[key] * scale} if j else {}),
                    **({"torch": t[key] * scale} if t and t.get(key) is not None else {})}

        label = f"{name} ({steps} steps)"
        rows.append((f"{label} step", "us/step", cols("step_s", 1e6)))
        rows.append((f"{label} compile", "ms", cols("compile_s", 1e3)))
        rows.append((f"{label} total", "s", cols("total_s")))
        what = "w" if name == "glance" else "max err"
        rows.append((f"{label} {what}", "value", cols("result")))
    return rows
