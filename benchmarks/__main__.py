"""Entry point: ``python -m benchmarks run [--workload NAME] [--quick] [--json PATH]``.

Prints a table with each implementation's median time and the ratios Quabla/NumPy,
Quabla/JAX and, for the PINN workloads when PyTorch is installed, Quabla/torch.func (below
1 means Quabla is faster), and writes the rows as JSON."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

from . import complex_linalg, eager, indexing, integers, jit, laplacian, linalg, loops, ode, pde, pinn, random_draws, remat, solvers, spectral

WORKLOADS = {"complex_linalg": complex_linalg.run, "eager": eager.run, "indexing": indexing.run, "integers": integers.run, "jit": jit.run, "laplacian": laplacian.run, "linalg": linalg.run, "loops": loops.run, "ode": ode.run, "pinn": pinn.run, "pde": pde.run, "random": random_draws.run, "remat": remat.run, "solvers": solvers.run, "spectral": spectral.run}


def _machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    run.add_argument("--quick", action="store_true", help="fewer repetitions (smoke run)")
    run.add_argument("--json", default="benchmarks/results/latest.json")
    args = parser.parse_args(argv)

    names = args.workload or sorted(WORKLOADS)
    results = []
    print(f"machine: {_machine()}")
    header = (f"{'workload':<24} {'unit':<8} {'quabla':>10} {'numpy':>10} {'jax':>10} {'torch':>10} "
              f"{'qb/np':>7} {'qb/jax':>7} {'qb/torch':>8}")
    print(header)
    print("-" * len(header))
    for name in names:
        if len(names) == 1:
            rows = [{"workload": name, "case": label, "unit": unit, **t}
                    for label, unit, t in WORKLOADS[name](quick=args.quick)]
        else:
            # Each workload in its own process: XLA's worker threads keep spinning after JAX
            # work and would slow the next workload's Quabla runs.
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "rows.json")
                cmd = [sys.executable, "-m", "benchmarks", "run", "--workload", name, "--json", out]
                subprocess.run(cmd + (["--quick"] if args.quick else []), check=True, stdout=subprocess.DEVNULL)
                with open(out) as f:
                    rows = json.load(f)["rows"]
        for row in rows:
            q, n, j, t = row.get("quabla"), row.get("numpy"), row.get("jax"), row.get("torch")
            fmt = lambda v: (f"{v:10.3g}" if abs(v) < 1e-2 and v != 0 else f"{v:10.3f}") if v is not None else f"{'-':>10}"
            ratio = lambda a, b, w=7: f"{a / b:{w}.2f}" if a is not None and b else f"{'-':>{w}}"
            # Other references (folx, diffrax, ...) follow the fixed columns by name.
            extra = "".join(f"  {k} {fmt(v).strip()} (qb/{k} {ratio(q, v).strip()})" for k, v in row.items()
                            if k not in ("workload", "case", "unit", "quabla", "numpy", "jax", "torch")
                            and isinstance(v, (int, float)))
            print(f"{row['case']:<24} {row['unit']:<8} {fmt(q)} {fmt(n)} {fmt(j)} {fmt(t)} {ratio(q, n)} {ratio(q, j)} "
                  f"{ratio(q, t, 8)}{extra}")
            results.append(row)
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"machine": _machine(), "rows": results}, f, indent=2)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
