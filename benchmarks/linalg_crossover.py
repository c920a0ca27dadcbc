"""Where each CPU kernel for small matrices stops beating the next one: batched solve (one
right-hand side) and Cholesky per size with the own loops for tiny matrices forced on
(QUABLA_LINALG_TINY_MAX=128), LAPACK alone (=0 and QUABLA_CHOLESKY_ROWS_MAX=0), and, for
Cholesky, the own row-panel factorization for medium matrices (QUABLA_CHOLESKY_ROWS_MAX=1000).
Each mode runs in a fresh single-threaded process (QUABLA_NUM_THREADS=1); a batch of about
1 MiB of matrices per size (at most 20,000: it stays in cache, as a loop body's matrix does),
called until 20,000 matrices are factored; median of 7 such samples, in microseconds per matrix.

    .venv/bin/python -m benchmarks.linalg_crossover
"""
from __future__ import annotations

import os
import subprocess
import sys

SIZES = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160]

_CHILD = """
import sys, time
import numpy as np
import quabla as qb
rng = np.random.default_rng(0)
out = []
for n in %r:
    batch = max(8, min(20000, 2 ** 17 // (n * n)))
    a = qb.array(rng.normal(size=(batch, n, n)) + 2 * np.eye(n))
    b = qb.array(rng.normal(size=(batch, n, 1)))
    m = rng.normal(size=(batch, n, n))
    s = qb.array(m @ np.swapaxes(m, 1, 2) / n + np.eye(n))
    fs, fc = qb.jit(qb.linalg.solve), qb.jit(lambda m: qb.linalg.cholesky(m))
    res = []
    for f, args in ((fs, (a, b)), (fc, (s,))):
        f(*args)
        reps = max(1, 20000 // batch)
        ts = []
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(reps):
                f(*args)
            ts.append(time.perf_counter() - t)
        res.append(sorted(ts)[3] / (batch * reps) * 1e6)
    out.append(res)
print(out)
""" % (SIZES,)

_MODES = {
    "own loops": {"QUABLA_LINALG_TINY_MAX": "128", "QUABLA_CHOLESKY_ROWS_MAX": "0"},
    "LAPACK": {"QUABLA_LINALG_TINY_MAX": "0", "QUABLA_CHOLESKY_ROWS_MAX": "0"},
    "row panels": {"QUABLA_LINALG_TINY_MAX": "0", "QUABLA_CHOLESKY_ROWS_MAX": "1000"},
}


def main() -> int:
    results = {}
    for label, env_mode in _MODES.items():
        env = dict(os.environ, QUABLA_NUM_THREADS="1", **env_mode)
        out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
        results[label] = eval(out.stdout.strip())  # noqa: S307 (our own child's list literal)
    print(f"{'n':>3} {'solve own':>10} {'solve lapack':>13} {'chol own':>9} {'chol lapack':>12} {'chol panels':>12}"
          "   (us per matrix)")
    for i, n in enumerate(SIZES):
        o, l, p = results["own loops"][i], results["LAPACK"][i], results["row panels"][i]
        print(f"{n:>3} {o[0]:>10.3f} {l[0]:>13.3f} {o[1]:>9.3f} {l[1]:>12.3f} {p[1]:>12.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
