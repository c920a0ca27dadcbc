"""Narrow integers beside JAX (jax.jit, CPU, x64): Quabla computes them in int32 / int64 with
a wrap after each operation (transforms/lower_narrow.h), XLA in their own width. Rows: an
image-byte normalisation (uint8 -> float32), wrapping uint8 arithmetic and the same chain in
int32 (the lowering's overhead), a uint32 hash mix, and a count of a uint8 mask. Each
result is checked against NumPy before it is timed."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rows = []
    rounds = 3 if quick else 7
    rng = np.random.default_rng(0)
    n = 1_000_000
    img = rng.integers(0, 256, n, dtype=np.uint8)
    words = rng.integers(0, 2 ** 32, n, dtype=np.uint32)

    def case(label, f_q, f_j, arg, want):
        fq = qb.jit(f_q)
        qa = qb.asarray(arg)
        got = np.asarray(fq(qa))
        assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-6, atol=0), f"integers: {label}"
        impls = {"quabla": lambda: fq(qa)}
        if jax:
            fj = jax.jit(f_j)
            ja = jnp.asarray(arg)
            impls["jax"] = lambda: jax.block_until_ready(fj(ja))
        t = alternate(impls, number=10, rounds=rounds, warmup=2)
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in t.items()}))

    with np.errstate(over="ignore"):
        case("u8 -> f32 normalise 1e6", lambda x: (x.astype(qb.float32) / 255.0 - 0.5) * 2.0,
             lambda x: (x.astype(jnp.float32) / 255.0 - 0.5) * 2.0, img,
             (img.astype(np.float32) / np.float32(255) - np.float32(0.5)) * np.float32(2))
        chain = lambda x: (x * 3 + 7) ^ (x >> 1)  # noqa: E731
        case("u8 wrap chain 1e6", chain, chain, img, (img * np.uint8(3) + np.uint8(7)) ^ (img >> np.uint8(1)))
        i32 = img.astype(np.int32)
        case("i32 same chain 1e6", chain, chain, i32, (i32 * 3 + 7) ^ (i32 >> 1))
        mix = lambda x: (x * 0x9E3779B1) ^ (x >> 16)  # noqa: E731
        case("u32 hash mix 1e6", mix, mix, words, (words * np.uint32(0x9E3779B1)) ^ (words >> np.uint32(16)))
    case("sum(u8 > 127) 1e6", lambda x: qb.sum(x > 127), lambda x: jnp.sum(x > 127), img,
         np.asarray((img > 127).sum(), np.int64))
    return rows
