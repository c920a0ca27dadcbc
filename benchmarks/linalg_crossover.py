"""Where the own loops for tiny matrices stop beating LAPACK: batched solve (one right-hand
side) and Cholesky of 20,000 matrices per size, with the own loops forced on
(QUABLA_LINALG_TINY_MAX=64) and off (=0), each in a fresh process; medians of 7 calls.

    .venv/bin/python -m benchmarks.linalg_crossover
"""
from __future__ import annotations

import os
import subprocess
import sys

SIZES = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48]

_CHILD = """
import sys, time
import numpy as np
import quabla as qb
rng = np.random.default_rng(0)
out = []
for n in %r:
    a = qb.array(rng.normal(size=(20000, n, n)) + 2 * np.eye(n))
    b = qb.array(rng.normal(size=(20000, n, 1)))
    s = qb.array(np.eye(n) * 3 + rng.normal(size=(20000, n, n)) * 0.1)
    fs, fc = qb.jit(qb.linalg.solve), qb.jit(lambda m: qb.linalg.cholesky(m))
    res = []
    for f, args in ((fs, (a, b)), (fc, (s,))):
        f(*args)
        ts = []
        for _ in range(7):
            t = time.perf_counter(); f(*args); ts.append(time.perf_counter() - t)
        res.append(sorted(ts)[3] * 1e3)
    out.append(res)
print(out)
""" % (SIZES,)


def main() -> int:
    results = {}
    for label, value in (("own loops", "64"), ("LAPACK", "0")):
        env = dict(os.environ, QUABLA_LINALG_TINY_MAX=value)
        out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
        results[label] = eval(out.stdout.strip())  # noqa: S307 (our own child's list literal)
    print(f"{'n':>3} {'solve own':>10} {'solve lapack':>13} {'chol own':>9} {'chol lapack':>12}   (ms per 20,000)")
    for i, n in enumerate(SIZES):
        o, l = results["own loops"][i], results["LAPACK"][i]
        print(f"{n:>3} {o[0]:>10.2f} {l[0]:>13.2f} {o[1]:>9.2f} {l[1]:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
