"""poisson2d (BENCHMARKS.md) trained data-parallel on CPU processes over MPI: strong scaling
(the same 4096 + 512 points shared by the ranks) and weak scaling (4096 + 512 points per
rank), ms/step of Trainer(data_parallel=True) after warm-up; one thread per process, so the
ranks never share a core.

    QUABLA_NUM_THREADS=1 mpirun -np N .venv/bin/python -m benchmarks.distributed_scaling
"""
from __future__ import annotations

import json
import time

import numpy as np

import quabla as qb

from . import pde


def main() -> int:
    d = qb.distributed
    d.initialize()
    n = d.world_size()
    zi, zb = pde._poisson_data()
    pp = pde._init([(2, 64), (64, 64), (64, 64), (64, 1)], np.float32, 0)
    rows = []
    for kind in ("strong", "weak"):
        rep = 1 if kind == "strong" else n
        data = (qb.array(np.concatenate([zi] * rep)), qb.array(np.concatenate([zb] * rep)))
        t = qb.Trainer(pde._poisson(qb, qb.grad, qb.hessian, qb.vmap), {k: qb.array(v) for k, v in pp.items()},
                       qb.optim.Adam(learning_rate=1e-3), *data, batch_argnums=(0, 1), data_parallel=True)
        for _ in range(3):
            t.step()
        d.barrier()
        start = time.perf_counter()
        steps = 20
        for _ in range(steps):
            t.step()
        d.barrier()
        ms = 1e3 * (time.perf_counter() - start) / steps
        rows.append({"scaling": kind, "ranks": n, "points_per_rank": 4096 * rep // n, "ms_per_step": ms,
                     "loss": t.loss()})
    if d.rank() == 0:
        for r in rows:
            print(json.dumps(r))
    d.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
