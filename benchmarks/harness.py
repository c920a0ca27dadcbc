"""Timing helpers shared by the workloads: implementations alternate round by round on the
same machine in one run, after warm-up, and each reports the median of its rounds."""
from __future__ import annotations

import statistics
import time
from typing import Callable, Dict


def time_per_call(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of fn over `number` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


# Pause between two implementations' samples. BLAS thread pools keep their threads spinning
# for a while after a call (NumPy's OpenBLAS about 0.1 s): measured on the 2-core machine, a
# Quabla cg solve timed right after SciPy's took 147 ms against 92 ms alone and 102 ms after
# a pause. Each implementation is timed once the previous one's threads have gone idle.
SETTLE_SECONDS = 0.25


def alternate(impls: Dict[str, Callable[[], object]], number: int, rounds: int, warmup: int = 3) -> Dict[str, float]:
    """Median seconds per call of each implementation, interleaving them round by round."""
    for fn in impls.values():
        for _ in range(warmup):
            fn()
    samples: Dict[str, list] = {name: [] for name in impls}
    for _ in range(rounds):
        for name, fn in impls.items():
            if len(impls) > 1:
                time.sleep(SETTLE_SECONDS)
            samples[name].append(time_per_call(fn, number))
    return {name: statistics.median(s) for name, s in samples.items()}


def load_jax(x64: bool = True):
    """(jax, jax.numpy), or (None, None) when JAX is not installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    if x64:
        jax.config.update("jax_enable_x64", True)
    return jax, jnp


def adam_update(m, tree_map, lr):
    """The Adam update (optax's defaults) over parameter trees, for the reference libraries'
    side of a workload: m is the array module (jax.numpy, torch), tree_map maps over trees."""
    def update(p, g, s, b1=0.9, b2=0.999, eps=1e-8):
        c, mu, nu = s
        c = c + 1
        mu = tree_map(lambda a, g: b1 * a + (1 - b1) * g, mu, g)
        nu = tree_map(lambda a, g: b2 * a + (1 - b2) * g * g, nu, g)
        p = tree_map(lambda p, a, v: p - lr * (a / (1 - b1 ** c)) / (m.sqrt(v / (1 - b2 ** c)) + eps), p, mu, nu)
        return p, (c, mu, nu)
    return update
