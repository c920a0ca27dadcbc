"""Time per iteration of qb.linalg.cg on the 256x256 Poisson operator of the solvers
workload (best of three calls divided by the iteration count), for comparing changes to
the executor back to back: ``.venv/bin/python -m benchmarks.cg_iteration``."""
from __future__ import annotations

import time

import numpy as np

import quabla as qb

from .solvers import N, TOL, _poisson


def main():
    matvec = _poisson(qb, qb.pad)
    b = qb.array(np.random.default_rng(0).normal(size=N * N))
    solve = qb.jit(lambda b: qb.linalg.cg(matvec, b, tol=TOL)[0])
    _, info = qb.linalg.cg(matvec, b, tol=TOL, info=True)
    iterations = int(info.iterations)
    solve(b)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        solve(b)
        best = min(best, time.perf_counter() - start)
    print(f"cg {N}x{N} Poisson: {iterations} iterations, {best / iterations * 1e6:.1f} us per iteration")


if __name__ == "__main__":
    main()
