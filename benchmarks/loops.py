"""Control-flow workloads beside JAX: a 10,000-step explicit Euler integration of the
Lorenz system (float64, a 20-op loop body over a 3-vector) forward, the gradient of the
final state's squared norm with respect to the three parameters (reverse mode through the
loop), and the same gradient through a classical RK4 integrator. Quabla's loop compiler
runs these bodies as native code (tier 1, built at the first call here:
QUABLA_LOOP_JIT=sync) or interpreted (tier 0, QUABLA_LOOP_JIT=0, rows marked so). The
"first call" row is a fresh function's first call in the default mode (tracing, compiling,
and the run on tier 0 while tier 1 builds in the background) against JAX's first call
(tracing and XLA compilation). Also checks that the gradients agree."""
from __future__ import annotations

import os
import time

import numpy as np

import quabla as qb

from .harness import alternate, load_jax

T = 10_000
H_RK4 = 0.001


def _lorenz_rhs(s, p, stack):
    x, y, z = s[0], s[1], s[2]
    return stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def _lorenz(m, stack):
    def step(i, s, p):
        return s + 0.001 * _lorenz_rhs(s, p, stack)
    return step


def _rk4(stack):
    def step(i, s, p):
        k1 = _lorenz_rhs(s, p, stack)
        k2 = _lorenz_rhs(s + 0.5 * H_RK4 * k1, p, stack)
        k3 = _lorenz_rhs(s + 0.5 * H_RK4 * k2, p, stack)
        k4 = _lorenz_rhs(s + H_RK4 * k3, p, stack)
        return s + (H_RK4 / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return step


def _with_mode(mode, fn):
    """fn() with QUABLA_LOOP_JIT=mode (read when a loop first runs)."""
    old = os.environ.get("QUABLA_LOOP_JIT")
    os.environ["QUABLA_LOOP_JIT"] = mode
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("QUABLA_LOOP_JIT", None)
        else:
            os.environ["QUABLA_LOOP_JIT"] = old


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rounds = 5 if quick else 11
    rows = []
    p = np.array([10.0, 28.0, 8.0 / 3.0])
    s0 = np.array([1.0, 1.0, 1.0])
    qs, qp = qb.array(s0), qb.array(p)
    sq, rq = _lorenz(qb, qb.stack), _rk4(qb.stack)

    def q_forward():
        return qb.jit(lambda s, p: qb.fori_loop(0, T, lambda i, s: sq(i, s, p), s))

    def q_grad(step):
        return qb.jit(qb.grad(lambda p, s: qb.sum(qb.fori_loop(0, T, lambda i, s: step(i, s, p), s) ** 2)))

    # First call of a fresh function, default mode (tier 0 now, tier 1 in the background).
    os.environ.pop("QUABLA_LOOP_JIT", None)
    t0 = time.perf_counter()
    q_forward()(qs, qp)
    first = {"quabla": (time.perf_counter() - t0) * 1e3}

    quabla = {}
    for mode, tag in (("sync", ""), ("0", " tier0")):
        f, g, r = q_forward(), q_grad(sq), q_grad(rq)
        _with_mode(mode, lambda: (f(qs, qp), g(qp, qs), r(qp, qs)))  # builds tier 1 in sync mode
        quabla[tag] = (f, g, r)
    impls = {name: {} for name in ("fwd", "grad", "rk4")}
    for tag, (f, g, r) in quabla.items():
        impls["fwd"]["quabla" + tag] = lambda f=f: f(qs, qp)
        impls["grad"]["quabla" + tag] = lambda g=g: g(qp, qs)
        impls["rk4"]["quabla" + tag] = lambda r=r: r(qp, qs)
    if jax:
        sj, rj = _lorenz(jnp, jnp.stack), _rk4(jnp.stack)
        js, jp = jnp.asarray(s0), jnp.asarray(p)
        fj = jax.jit(lambda s, p: jax.lax.fori_loop(0, T, lambda i, s: sj(i, s, p), s))
        t0 = time.perf_counter()
        fj(js, jp).block_until_ready()
        first["jax"] = (time.perf_counter() - t0) * 1e3

        def j_grad(step):
            return jax.jit(jax.grad(lambda p, s: jnp.sum(jax.lax.fori_loop(0, T, lambda i, s: step(i, s, p), s) ** 2)))

        gj, rkj = j_grad(sj), j_grad(rj)
        impls["fwd"]["jax"] = lambda: fj(js, jp).block_until_ready()
        impls["grad"]["jax"] = lambda: gj(jp, js).block_until_ready()
        impls["rk4"]["jax"] = lambda: rkj(jp, js).block_until_ready()
        for name, qf, jf in (("euler", quabla[""][1], gj), ("rk4", quabla[""][2], rkj)):
            a, b = np.asarray(qf(qp, qs)), np.asarray(jf(jp, js))
            diff = np.max(np.abs(a - b) / np.abs(b))
            assert diff < 1e-9, f"loops: {name} gradients differ from JAX's by {diff:.2e}"
    labels = {"fwd": "lorenz fori 1e4 f64", "grad": "lorenz grad 1e4 f64", "rk4": "rk4 grad 1e4 f64"}
    for key, label in labels.items():
        t = alternate(impls[key], number=3 if quick else 10, rounds=rounds)
        ref = {k: v for k, v in t.items() if k in ("quabla", "jax")}
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in ref.items()}))
        if "quabla tier0" in t:
            tier0 = {"quabla": t["quabla tier0"] * 1e3}
            if "jax" in t:
                tier0["jax"] = t["jax"] * 1e3
            rows.append((label + " tier0", "ms/call", tier0))
    rows.append(("lorenz fori first call", "ms", first))
    return rows
