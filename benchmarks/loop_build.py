"""The loop compiler's build and load costs: the first call of a 10,000-step Lorenz loop
with tier 1 built synchronously (QUABLA_LOOP_JIT=sync) minus the first call on tier 0, with
a cold cache (building with the C compiler) and then a warm one (loading the cached shared
object). Each measurement in a fresh process, three times.

    .venv/bin/python -m benchmarks.loop_build
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

_CHILD = """
import os, time
import quabla as qb
p = qb.array([10.0, 28.0, 8.0 / 3.0])
def step(i, s):
    x, y, z = s[0], s[1], s[2]
    return s + 0.001 * qb.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])
def first_call(mode):
    os.environ["QUABLA_LOOP_JIT"] = mode
    f = qb.jit(lambda s: qb.fori_loop(0, 10000, step, s))
    t = time.perf_counter()
    f(qb.array([1.0, 1.0, 1.0]))
    return (time.perf_counter() - t) * 1e3
first_call("0")
print(first_call("sync") - first_call("0"))
"""


def main() -> int:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, QUABLA_CACHE_DIR=cache)

        def once() -> float:
            out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
            return float(out.stdout.strip())

        cold = []
        for _ in range(3):
            for entry in os.listdir(os.path.join(cache, "loops")) if os.path.isdir(os.path.join(cache, "loops")) else []:
                os.remove(os.path.join(cache, "loops", entry))
            cold.append(once())
        warm = [once() for _ in range(3)]
    print("build (cold cache) ms:", " ".join(f"{t:.1f}" for t in cold))
    print("load (warm cache) ms: ", " ".join(f"{t:.1f}" for t in warm))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
