"""Time per step of the linalg workload's 64x64 Cholesky + cho_solve fori_loop (1,000 steps),
Quabla alone in this process (median and best of 30 calls), for comparing kernel changes back
to back: ``.venv/bin/python -m benchmarks.cholesky_loop``. The side-by-side row with JAX is
``python -m benchmarks run --workload linalg``."""
from __future__ import annotations

import time

import numpy as np

import quabla as qb

STEPS = 1000


def main():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(64, 64))
    a = qb.array(m @ m.T / 64 + np.eye(64))
    v = qb.array(rng.normal(size=64))

    def body(i, v):
        c = qb.linalg.cholesky(a + 1e-3 * qb.sum(v * v) * qb.eye(64))
        return qb.linalg.cho_solve((c, True), v) * 0.5 + v * 0.5

    loop = qb.jit(lambda v: qb.fori_loop(0, STEPS, body, v))
    loop(v)
    times = []
    for _ in range(30):
        start = time.perf_counter()
        loop(v)
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"cholesky+solve 64 loop: {times[len(times) // 2] / STEPS * 1e6:.2f} us per step (median), "
          f"{times[0] / STEPS * 1e6:.2f} best")


if __name__ == "__main__":
    main()
