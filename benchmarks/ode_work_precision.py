"""Work-precision diagram of the ODE solvers: error against wall time (log-log) for
Quabla, diffrax and SciPy, on Lorenz (non-stiff, t in [0, 2]) and Robertson (stiff,
t in [0, 40]), each over a sweep of tolerances (rtol = atol * 1e2 for Robertson).

    .venv/bin/python -m benchmarks.ode_work_precision [--out docs/assets/ode_work_precision.png]

Error: the max over components of |y - y_ref| / (|y_ref| + 1e-6) at the end time, y_ref
from SciPy's DOP853 (Lorenz) / Radau (Robertson) at rtol 1e-13. Time: the median of
repeated calls after a warm-up (Quabla and diffrax jitted, Quabla's loops built as native
code first; SciPy as called from Python). diffrax is optional (pip install diffrax).
Prints one row per (method, tolerance) and writes the figure when matplotlib is there.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import quabla as qb

from .harness import load_jax
from .loops import _with_mode
from .ode import P, _lorenz, _robertson

LORENZ_T1 = 2.0
ROBERTSON_T1 = 40.0
Y0_LORENZ = np.array([1.0, 1.0, 1.0])
Y0_ROB = np.array([1.0, 0.0, 0.0])


def _median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _rel_err(y, ref):
    y, ref = np.asarray(y, dtype=float), np.asarray(ref, dtype=float)
    return float(np.max(np.abs(y - ref) / (np.abs(ref) + 1e-6)))


def _references():
    from scipy.integrate import solve_ivp
    fl = _lorenz(np)
    lor = solve_ivp(lambda t, y: fl(y, t, *P), (0.0, LORENZ_T1), Y0_LORENZ, method="DOP853", rtol=1e-13,
                    atol=1e-13).y[:, -1]
    fr = _robertson(np)
    rob = solve_ivp(lambda t, y: fr(y, t), (0.0, ROBERTSON_T1), Y0_ROB, method="Radau", rtol=1e-13, atol=1e-16).y[:, -1]
    return lor, rob


def _quabla(problem, method, tol, repeat):
    if problem == "lorenz":
        f, y0, t1, args, rtol, atol = _lorenz(qb), Y0_LORENZ, LORENZ_T1, tuple(qb.asarray(v) for v in P), tol, tol
    else:
        f, y0, t1, args, rtol, atol = _robertson(qb), Y0_ROB, ROBERTSON_T1, (), tol * 1e2, tol
    y0q = qb.array(y0)
    run = qb.jit(lambda y0, *a: qb.ode.odeint(f, y0, (0.0, t1), method=method, args=a, rtol=rtol, atol=atol,
                                              max_steps=100_000))
    y = _with_mode("sync", lambda: run(y0q, *args))
    return y, _median_time(lambda: run(y0q, *args), repeat)


def _diffrax(diffrax, jax, jnp, problem, solver, tol, repeat):
    if problem == "lorenz":
        fj = _lorenz(jnp)
        term = diffrax.ODETerm(lambda t, y, p: fj(y, t, *p))
        y0, t1, args, rtol, atol = jnp.asarray(Y0_LORENZ), LORENZ_T1, jnp.asarray(P), tol, tol
    else:
        fj = _robertson(jnp)
        term = diffrax.ODETerm(lambda t, y, p: fj(y, t))
        y0, t1, args, rtol, atol = jnp.asarray(Y0_ROB), ROBERTSON_T1, None, tol * 1e2, tol
    run = jax.jit(lambda y0, a: diffrax.diffeqsolve(term, getattr(diffrax, solver)(), 0.0, t1, None, y0, args=a,
                                                    stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
                                                    max_steps=100_000).ys[-1])
    y = run(y0, args).block_until_ready()
    return y, _median_time(lambda: run(y0, args).block_until_ready(), repeat)


def _scipy(problem, method, tol, repeat):
    from scipy.integrate import solve_ivp
    if problem == "lorenz":
        fl = _lorenz(np)
        rhs, y0, t1, rtol, atol = (lambda t, y: fl(y, t, *P)), Y0_LORENZ, LORENZ_T1, tol, tol
    else:
        fr = _robertson(np)
        rhs, y0, t1, rtol, atol = (lambda t, y: fr(y, t)), Y0_ROB, ROBERTSON_T1, tol * 1e2, tol
    call = lambda: solve_ivp(rhs, (0.0, t1), y0, method=method, rtol=rtol, atol=atol).y[:, -1]  # noqa: E731
    return call(), _median_time(call, max(1, repeat // 3))


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    try:
        import diffrax
    except ImportError:
        diffrax = None
    ref_l, ref_r = _references()
    tols = {"lorenz": [1e-4, 1e-6, 1e-8, 1e-10] if quick else [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10],
            "robertson": [1e-6, 1e-8] if quick else [1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10]}
    repeat = 3 if quick else 9
    series = {"lorenz": {}, "robertson": {}}
    plans = [("lorenz", "Quabla dopri5", lambda tol: _quabla("lorenz", "dopri5", tol, repeat)),
             ("lorenz", "Quabla tsit5", lambda tol: _quabla("lorenz", "tsit5", tol, repeat)),
             ("lorenz", "SciPy RK45", lambda tol: _scipy("lorenz", "RK45", tol, repeat)),
             ("lorenz", "SciPy DOP853", lambda tol: _scipy("lorenz", "DOP853", tol, repeat)),
             ("robertson", "Quabla rosenbrock23", lambda tol: _quabla("robertson", "rosenbrock23", tol, repeat)),
             ("robertson", "SciPy Radau", lambda tol: _scipy("robertson", "Radau", tol, repeat)),
             ("robertson", "SciPy BDF", lambda tol: _scipy("robertson", "BDF", tol, repeat))]
    if diffrax:
        plans += [("lorenz", "diffrax Dopri5", lambda tol: _diffrax(diffrax, jax, jnp, "lorenz", "Dopri5", tol, repeat)),
                  ("lorenz", "diffrax Tsit5", lambda tol: _diffrax(diffrax, jax, jnp, "lorenz", "Tsit5", tol, repeat)),
                  ("robertson", "diffrax Kvaerno5",
                   lambda tol: _diffrax(diffrax, jax, jnp, "robertson", "Kvaerno5", tol, repeat))]
    print(f"{'problem':<10} {'method':<22} {'atol':>8} {'error':>10} {'ms':>10}")
    for problem, label, solve in plans:
        ref = ref_l if problem == "lorenz" else ref_r
        points = []
        for tol in tols[problem]:
            y, t = solve(tol)
            err = _rel_err(y, ref)
            points.append((err, t))
            print(f"{problem:<10} {label:<22} {tol:8.0e} {err:10.2e} {t * 1e3:10.3f}")
        series[problem][label] = points
    return series


def draw(series, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure written")
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    titles = {"lorenz": f"Lorenz, t in [0, {LORENZ_T1:g}] (non-stiff)",
              "robertson": f"Robertson, t in [0, {ROBERTSON_T1:g}] (stiff)"}
    for ax, (problem, lines) in zip(axes, series.items()):
        for label, points in lines.items():
            errs, times = zip(*points)
            style = "-o" if label.startswith("Quabla") else ("--s" if label.startswith("diffrax") else ":^")
            ax.loglog([t * 1e3 for t in times], [max(e, 1e-16) for e in errs], style, label=label, ms=4)
        ax.set_xlabel("wall time per solve (ms)")
        ax.set_ylabel("max relative error at the end time")
        ax.set_title(titles[problem])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ode_work_precision")
    parser.add_argument("--out", default="docs/assets/ode_work_precision.png")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    draw(run(quick=args.quick), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
