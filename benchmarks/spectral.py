"""Complex numbers and FFTs, side by side with NumPy and JAX (jax.jit, float64): a batched
rfft of power-of-two rows, a complex FFT of a length Bluestein handles (1000), the jitted
gradient of a spectral-derivative residual (rfft, multiply by i k, irfft) as a Fourier PINN
loss has, a fused complex elementwise chain (the lowering's real-part arithmetic), the
2-D transforms a Fourier neural operator takes along two axes, and one training step's
value and gradient of an FNO spectral layer (rfft2, low modes mixed by complex weights,
irfft2)."""
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

    # complex fft of rows of 1000 (mixed radix 4, 2, 5, 5, 5)
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

    # 2-D transforms of a batch of fields (an FNO's): along the last axis and the one before
    v = rng.normal(size=(16, 16, 64, 64))
    vq = qb.asarray(v)
    for label, fn in (("rfft2 f64[16, 16, 64, 64]", lambda m: m.fft.rfft2),
                      ("irfft2 of its spectrum", lambda m: lambda a: m.fft.irfft2(a, s=(64, 64)))):
        arg = v if label.startswith("rfft2") else np.fft.rfft2(v)
        fq = qb.jit(fn(qb))
        aq = qb.asarray(arg)
        impls = {"quabla": lambda fq=fq, aq=aq: fq(aq)}
        if jax:
            fj = jax.jit(fn(jnp))
            aj = jnp.asarray(arg)
            impls["jax"] = lambda fj=fj, aj=aj: fj(aj).block_until_ready()
        add(label, impls)

    # an FNO spectral layer's training step: value and gradient
    modes, width = 12, 16
    params = {"wr": rng.normal(size=(width, width, modes, modes)) * 0.1,
              "wi": rng.normal(size=(width, width, modes, modes)) * 0.1}
    target = rng.normal(size=v.shape)

    def fno_loss(m, lax):
        def layer(p, x):
            xh = m.fft.rfft2(x)[:, :, :modes, :modes]
            mixed = m.einsum("bixy,ioxy->boxy", xh, lax.complex(p["wr"], p["wi"]))
            full = m.zeros(x.shape[:2] + (x.shape[2], x.shape[3] // 2 + 1), dtype=mixed.dtype)
            return m.fft.irfft2(full.at[:, :, :modes, :modes].set(mixed), s=x.shape[2:])
        return lambda p, x, t: m.mean((m.tanh(layer(p, x)) - t) ** 2)

    sq = qb.jit(qb.value_and_grad(fno_loss(qb, qb.lax)))
    pq = {k: qb.asarray(a) for k, a in params.items()}
    tq = qb.asarray(target)
    impls = {"quabla": lambda: sq(pq, vq, tq)}
    if jax:
        sj = jax.jit(jax.value_and_grad(fno_loss(jnp, jax.lax)))
        impls["jax"] = lambda: jax.block_until_ready(sj(params, v, target))
    add("FNO-2D layer step (value+grad)", impls)
    return rows
