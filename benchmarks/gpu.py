"""GPU workloads (BENCHMARKS.md gpu-poisson2d and the CUDA issue's list), Quabla's CUDA
backend beside JAX on the same GPU where JAX sees one, for scripts/gpu-check.sh:

- glance and figure (float64): steps/s of Trainer(device=...) (parameters and Adam state on
  the device, one compiled program per step), against the seed's 711 steps/s.
- poisson2d (float32, 4096 and 65536 interior points), beam4 (float64): ms/step.
- chain: a 1e7-element float32 elementwise chain, GB/s moved (read + write).
- gemm: a 4096x4096 float32 matrix product, TFLOP/s, beside torch.matmul (cuBLAS) when
  PyTorch is installed.
- vmapped small loops (float64): a damped pendulum integrated 1,000 steps per example
  (vmap of fori_loop) and Newton's square root to 1e-12 (vmap of while_loop, per-example
  trip counts) over 100,000 examples, ms per call: one kernel with one thread per example.

``python -m benchmarks.gpu [--device cuda:0] [--quick] [--no-reference] [--json PATH]``.
With QUABLA_CUDA_EMULATOR=1 it runs on the host emulator (a dry run: sizes shrink, timings
mean nothing).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

import quabla as qb

from . import pde
from .harness import load_jax


def _sync(device):
    ordinal = int(device.split(":")[1]) if ":" in device else 0
    qb._core.cuda_synchronize(ordinal, qb._cuda.emulating())


def _train_rate(loss, params, data, lr, steps, device):
    """(steps/s of the steady state, compile s, final loss, launches per step)."""
    t = qb.Trainer(loss, params, qb.optim.Adam(learning_rate=lr), *data, device=device)
    t0 = time.perf_counter()
    t.step().item()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(steps - 1):
        last = t.step()
    value = last.item()
    rate = (steps - 1) / (time.perf_counter() - t0)
    leaves = t._p_leaves + t._s_leaves + t._data
    kernels = t._step.lower(*leaves).compile().stats()["kernels"]
    return {"steps_per_s": rate, "ms_per_step": 1e3 / rate, "compile_s": first - 1.0 / rate, "loss": value,
            "kernels_per_step": kernels}


def _jax_rate(loss_builder, params_np, data, lr, steps, x64):
    jax, jnp = load_jax(x64=x64)
    if jax is None:
        return None
    try:
        if not any(d.platform == "gpu" for d in jax.devices()):
            return None
    except RuntimeError:
        return None
    loss = loss_builder(jnp, jax.grad, jax.hessian, jax.vmap)
    r = pde._run_jax(jax, jnp, loss, params_np, data, lr, steps)
    return {"steps_per_s": 1.0 / r["step"], "ms_per_step": 1e3 * r["step"], "compile_s": r["compile"], "loss": r["loss"]}


def _glance(m, grad, hessian, vmap):
    u_xx = vmap(grad(grad(lambda x, w: m.sin(w * x))), in_axes=(0, None))
    return lambda p, x: m.mean((u_xx(x, p["w"]) + math.pi ** 2 * m.sin(math.pi * x)) ** 2)


def _figure(m, grad, hessian, vmap):
    def u(p, x):
        h = m.tanh(m.reshape(x, (1, 1)) @ p["w1"] + p["b1"])
        return m.reshape(h @ p["w2"] + p["b2"], ())
    u_xx = vmap(grad(grad(u, argnums=1), argnums=1), in_axes=(None, 0))
    u_b = vmap(u, in_axes=(None, 0))

    def loss(p, x):
        return m.mean((u_xx(p, x) + math.pi ** 2 * m.sin(math.pi * x)) ** 2) + \
            m.mean(u_b(p, m.asarray(np.array([0.0, 1.0]))) ** 2)
    return loss


def run(device="cuda:0", quick=False, reference=True):
    rows = []
    emulated = qb._cuda.emulating()
    small = quick or emulated

    def add(name, unit, ours, ref=None, **extra):
        row = {"workload": name, "unit": unit, "quabla": ours, "jax": ref, **extra}
        rows.append(row)
        print(json.dumps(row), flush=True)

    steps = 20 if small else 300
    p = {"w": np.array(2.5)}
    ours = _train_rate(_glance(qb, qb.grad, qb.hessian, qb.vmap), {"w": qb.array(2.5)},
                       (qb.linspace(0.05, 0.95, 8),), 0.05, steps, device)
    ref = _jax_rate(_glance, p, (np.linspace(0.05, 0.95, 8),), 0.05, steps, True) if reference else None
    add("glance", "steps/s", ours, ref, seed_steps_per_s=711, target_steps_per_s=7110)

    steps = 20 if small else 3000
    rng = np.random.default_rng(2026)
    fp = {"w1": rng.normal(0, math.sqrt(2 / 17), (1, 16)), "b1": np.zeros(16),
          "w2": rng.normal(0, math.sqrt(2 / 17), (16, 1)), "b2": np.zeros(1)}
    xs = np.array([(i + 1) / 33 for i in range(32)])
    ours = _train_rate(_figure(qb, qb.grad, qb.hessian, qb.vmap), {k: qb.array(v) for k, v in fp.items()},
                       (qb.array(xs),), 0.01, steps, device)
    ref = _jax_rate(_figure, fp, (xs,), 0.01, steps, True) if reference else None
    add("figure", "steps/s", ours, ref, seed_steps_per_s=711, target_steps_per_s=7110)

    zi, zb = pde._poisson_data()
    pp = pde._init([(2, 64), (64, 64), (64, 64), (64, 1)], np.float32, 0)
    for n in ((256,) if small else (4096, 65536)):
        zin = np.random.default_rng(1).uniform(0, 1, (n, 2)).astype(np.float32) if n != 4096 else zi
        steps = 5 if small else 100
        ours = _train_rate(pde._poisson(qb, qb.grad, qb.hessian, qb.vmap), {k: qb.array(v) for k, v in pp.items()},
                           (qb.array(zin), qb.array(zb)), 1e-3, steps, device)
        ref = _jax_rate(pde._poisson, pp, (zin, zb), 1e-3, steps, False) if reference else None
        add(f"poisson2d ({n} points)", "ms/step", ours, ref)

    xb = np.linspace(0.0, 1.0, 256)
    pb = pde._init([(1, 32), (32, 32), (32, 1)], np.float64, 3)
    steps = 5 if small else 200
    beam = lambda m, g, h, v: pde._beam(m, g, v)
    ours = _train_rate(beam(qb, qb.grad, qb.hessian, qb.vmap), {k: qb.array(v) for k, v in pb.items()},
                       (qb.array(xb),), 1e-3, steps, device)
    ref = _jax_rate(beam, pb, (xb,), 1e-3, steps, True) if reference else None
    add("beam4", "ms/step", ours, ref)

    n = 10_000 if small else 10_000_000
    x = qb.device_put(np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32), device)
    chain = qb.jit(lambda v: qb.tanh(v) * 2.0 + qb.sin(v) * v - 0.5, device=device)
    chain(x)  # compiles
    _sync(device)
    reps = 3 if small else 50
    t0 = time.perf_counter()
    for _ in range(reps):
        y = chain(x)
    _sync(device)
    dt = (time.perf_counter() - t0) / reps
    add("chain 1e7 f32", "GB/s", {"GB_per_s": 8 * n / dt / 1e9, "ms": 1e3 * dt, "peak_GB_per_s": 4800})
    del y

    n = 256 if small else 4096
    rng = np.random.default_rng(1)
    a = qb.device_put(rng.normal(size=(n, n)).astype(np.float32), device)
    b = qb.device_put(rng.normal(size=(n, n)).astype(np.float32), device)
    mm = qb.jit(lambda u, v: u @ v, device=device)
    mm(a, b)
    _sync(device)
    reps = 2 if small else 20
    t0 = time.perf_counter()
    for _ in range(reps):
        c = mm(a, b)
    _sync(device)
    dt = (time.perf_counter() - t0) / reps
    torch_rate = None
    if reference and not emulated:
        try:
            import torch
            ta, tb = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
            torch.backends.cuda.matmul.allow_tf32 = False
            ta @ tb
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                ta @ tb
            torch.cuda.synchronize()
            torch_rate = 2 * n ** 3 / ((time.perf_counter() - t0) / reps) / 1e12
        except Exception:  # noqa: BLE001 - PyTorch absent or without CUDA
            torch_rate = None
    add(f"gemm {n} f32", "TFLOP/s", {"TFLOP_per_s": 2 * n ** 3 / dt / 1e12, "ms": 1e3 * dt, "peak_TFLOP_per_s": 67},
        torch_cublas_TFLOP_per_s=torch_rate)
    del c

    examples, steps = (256, 50) if small else (100_000, 1000)
    for name, build, make in _loop_workloads(examples, steps):
        args = make(np.random.default_rng(7))
        fn = build(qb, qb.lax)
        ours = _call_ms(qb.jit(fn, device=device), [qb.device_put(a, device) for a in args],
                        lambda out: _sync(device), 3 if small else 20)
        ours["loop_kernels"] = qb.jit(fn, device=device).lower(*[qb.array(a) for a in args]).compile().stats()["loop_kernels"]
        ref = _jax_loop_ms(build, args, 20) if reference and not emulated else None
        add(f"{name} ({examples} examples)", "ms", ours, ref)
    return rows


def _loop_workloads(examples, steps):
    def pendulum(m, lax):
        def step(i, s):
            a = -m.sin(s[0]) - 0.1 * s[1]
            return m.stack([s[0] + 0.001 * s[1], s[1] + 0.001 * a])
        return _vmap_of(m)(lambda s0: lax.fori_loop(0, steps, step, s0))

    def newton(m, lax):
        def sqrt(c):
            return lax.while_loop(lambda x: m.abs(x * x - c) > 1e-12 * c, lambda x: x - (x * x - c) / (2 * x), c)
        return _vmap_of(m)(sqrt)
    return [("vmapped fori_loop pendulum", pendulum, lambda r: (r.normal(size=(examples, 2)),)),
            ("vmapped while_loop newton", newton, lambda r: (r.uniform(0.5, 1e4, examples),))]


def _vmap_of(m):
    return qb.vmap if m is qb else __import__("jax").vmap


def _call_ms(fn, args, sync, reps):
    """ms per call of fn(*args) after a first (compiling) call; sync(out) waits for out."""
    sync(fn(*args))
    t0 = time.perf_counter()
    for _ in range(reps):
        out = fn(*args)
    sync(out)
    return {"ms": 1e3 * (time.perf_counter() - t0) / reps}


def _jax_loop_ms(build, args, reps):
    jax, jnp = load_jax(x64=True)
    if jax is None:
        return None
    try:
        if not any(d.platform == "gpu" for d in jax.devices()):
            return None
    except RuntimeError:
        return None
    fn = jax.jit(build(jnp, jax.lax))
    dev = [jax.device_put(a) for a in args]
    return _call_ms(fn, dev, jax.block_until_ready, reps)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-reference", action="store_true", help="skip JAX and PyTorch")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    info = qb._cuda.info()
    print(json.dumps({"devices": qb.devices(), "cuda": info, "emulated": qb._cuda.emulating()}), flush=True)
    rows = run(args.device, args.quick, not args.no_reference)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
