"""A jitted data-parallel step holding its all-reduce (one collective per gradient leaf) on
CPU processes over MPI: ms/step with each collective running on the communication thread
while the backward pass goes on (the default), and with each run where it stands
(QUABLA_DISTRIBUTED_OVERLAP=0's behaviour, toggled in-process here so both rows share one
job). An MLP of width 256, four layers, 2,048 points per rank, float64, one thread per
process; the modes alternate in rounds so machine noise hits all of them. A last row times
the exchange alone: an eager all_reduce of the same gradient tree.

    QUABLA_NUM_THREADS=1 mpirun -np 2 .venv/bin/python -m benchmarks.distributed_overlap
"""
from __future__ import annotations

import json
import time

import numpy as np

import quabla as qb


def main() -> int:
    d = qb.distributed
    d.initialize()
    r, n = d.rank(), d.world_size()
    rng = np.random.default_rng(0)
    sizes = [(2, 256), (256, 256), (256, 256), (256, 1)]
    params = [{"w": qb.array(rng.normal(size=s) / np.sqrt(s[0])), "b": qb.array(np.zeros(s[1]))} for s in sizes]
    x = qb.array(np.random.default_rng(1 + r).uniform(-1, 1, size=(2048, 2)))

    def loss(p, x):
        h = x
        for k, layer in enumerate(p):
            h = h @ layer["w"] + layer["b"]
            if k < len(p) - 1:
                h = qb.tanh(h)
        return qb.mean((h[:, 0] - qb.sin(x[:, 0]) * x[:, 1]) ** 2)

    step = qb.jit(lambda p, x: qb.tree.map(lambda a, g: a - 1e-3 * g, p, d.all_reduce(qb.grad(loss)(p, x), "mean")))
    grad_only = qb.jit(lambda p, x: qb.tree.map(lambda a, g: a - 1e-3 * g, p, qb.grad(loss)(p, x)))
    times = {"overlap": [], "in place": [], "no collective": []}
    for _ in range(3):
        params = step(params, x)
        grad_only(params, x)
    for _ in range(5):
        for mode in times:
            d._state["overlap"] = mode == "overlap"
            f = grad_only if mode == "no collective" else step
            d.barrier()
            start = time.perf_counter()
            for _ in range(10):
                params = f(params, x)
            d.barrier()
            times[mode].append(1e3 * (time.perf_counter() - start) / 10)
    # The exchange alone: an eager all_reduce of a gradient-shaped tree, 20 calls.
    grads = qb.grad(loss)(params, x)
    for _ in range(3):
        d.all_reduce(grads, "mean")
    d.barrier()
    start = time.perf_counter()
    for _ in range(20):
        d.all_reduce(grads, "mean")
    d.barrier()
    eager_ms = 1e3 * (time.perf_counter() - start) / 20
    if r == 0:
        nparams = sum(int(np.prod(s)) + s[1] for s in sizes)
        for mode, ts in times.items():
            print(json.dumps({"mode": mode, "ranks": n, "params": nparams, "ms_per_step": float(np.median(ts)),
                              "min_ms": float(min(ts))}))
        print(json.dumps({"mode": "eager all_reduce of the gradients", "ranks": n, "params": nparams,
                          "ms_per_call": eager_ms}))
    d.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
