"""Complex numbers and FFTs, side by side with NumPy and JAX (jax.jit, float64): a batched
rfft of power-of-two rows, a complex FFT of a length Bluestein handles (1000), the jitted
gradient of a spectral-derivative residual (rfft, multiply by i k, irfft) as a Fourier PINN
loss has, and a fused complex elementwise chain (the lowering's real-part arithmetic)."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rows = []
    rounds = 5 if quick else 11
    number = 3 if quick else 10
    rng = np.random.default_rng(0)

    def add(label, impls):
        t = alternate(impls, number=number, rounds=rounds)
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in t.items()}))

    # rfft over rows of 1024 (radix 2)
    x = rng.normal(size=(256, 1024))
    fq = qb.jit(lambda a: qb.fft.rfft(a))
    xq = qb.asarray(x)
    impls = {"quabla": lambda: fq(xq), "numpy": lambda: np.fft.rfft(x)}
    if jax:
        fj = jax.jit(lambda a: jnp.fft.rfft(a))
        xj = jnp.asarray(x)
        impls["jax"] = lambda: fj(xj).block_until_ready()
    add("rfft f64[256, 1024]", impls)

    # complex fft of rows of 1000 (Bluestein here; XLA's DUCC handles 1000 = 2^3 5^3 directly)
    z = rng.normal(size=(64, 1000)) + 1j * rng.normal(size=(64, 1000))
    fq = qb.jit(lambda a: qb.fft.fft(a))
    zq = qb.asarray(z)
    impls = {"quabla": lambda: fq(zq), "numpy": lambda: np.fft.fft(z)}
    if jax:
        fj = jax.jit(lambda a: jnp.fft.fft(a))
        zj = jnp.asarray(z)
        impls["jax"] = lambda: fj(zj).block_until_ready()
    add("fft c128[64, 1000]", impls)

    # gradient of a spectral residual: u_x by i k in Fourier space, against a target
    n = 512
    u = rng.normal(size=(64, n))
    target = rng.normal(size=(64, n))

    def residual(m):
        k = m.asarray(np.fft.rfftfreq(n, d=1.0 / n))

        def loss(u, t):
            du = m.fft.irfft(1j * k * m.fft.rfft(u), n=n)
            return m.mean((du - t) ** 2)
        return loss

    gq = qb.jit(qb.grad(residual(qb)))
    uq, tq = qb.asarray(u), qb.asarray(target)
    impls = {"quabla": lambda: gq(uq, tq)}
    if jax:
        gj = jax.jit(jax.grad(residual(jnp)))
        uj, tj = jnp.asarray(u), jnp.asarray(target)
        impls["jax"] = lambda: gj(uj, tj).block_until_ready()
    add("grad spectral u_x f64[64, 512]", impls)

    # a complex elementwise chain on 1e6 values
    w = rng.normal(size=1_000_000) + 1j * rng.normal(size=1_000_000)
    r = rng.normal(size=1_000_000)
    chain = lambda m: lambda w, r: m.exp(1j * r) * w + m.conj(w) * r  # noqa: E731
    cq = qb.jit(chain(qb))
    wq, rq = qb.asarray(w), qb.asarray(r)
    impls = {"quabla": lambda: cq(wq, rq), "numpy": lambda: chain(np)(w, r)}
    if jax:
        cj = jax.jit(chain(jnp))
        wj, rj = jnp.asarray(w), jnp.asarray(r)
        impls["jax"] = lambda: cj(wj, rj).block_until_ready()
    add("exp(i r) w + conj(w) r c128[1e6]", impls)
    return rows
