"""The MLX backend beside the CPU backend on the same machine (BENCHMARKS.md's glance and
poisson2d), for MLX's CPU build on Linux: this measures what the lowering to MLX costs, not
Apple's GPU. Run it on a build with MLX (scripts/mlx-tests.sh builds one in build-mlx/):

    PYTHONPATH=build-mlx/pkg:build-mlx/site:$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \\
      .venv/bin/python -S -m benchmarks.mlx_side
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np

import quabla as qb

from . import pde
from .gpu import _glance, _train_rate


def main() -> int:
    if not qb._core.mlx_info()["available"]:
        print("this build has no MLX backend (scripts/mlx-tests.sh builds one)", file=sys.stderr)
        return 1
    print(json.dumps({"mlx": qb._core.mlx_info()["version"]}))
    rows = []
    for device in ("cpu", "mlx"):
        r = _train_rate(_glance(qb, qb.grad, qb.hessian, qb.vmap), {"w": qb.array(2.5)},
                        (qb.linspace(0.05, 0.95, 8),), 0.05, 300, device)
        rows.append({"workload": "glance (f64, 300 steps)", "device": device, **r})
    zi, zb = pde._poisson_data()
    pp = pde._init([(2, 64), (64, 64), (64, 64), (64, 1)], np.float32, 0)
    for device in ("cpu", "mlx"):
        r = _train_rate(pde._poisson(qb, qb.grad, qb.hessian, qb.vmap), {k: qb.array(v) for k, v in pp.items()},
                        (qb.array(zi), qb.array(zb)), 1e-3, 30, device)
        rows.append({"workload": "poisson2d (f32, 4096 points, 30 steps)", "device": device, **r})
    for row in rows:
        print(json.dumps(row))
    for name in dict.fromkeys(r["workload"] for r in rows):
        cpu, mlx = (next(r for r in rows if r["workload"] == name and r["device"] == d) for d in ("cpu", "mlx"))
        print(f"{name}: cpu {cpu['ms_per_step']:.3f} ms/step, mlx {mlx['ms_per_step']:.3f} ms/step, "
              f"mlx/cpu {mlx['ms_per_step'] / cpu['ms_per_step']:.2f}, losses {cpu['loss']:.6g} / {mlx['loss']:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
