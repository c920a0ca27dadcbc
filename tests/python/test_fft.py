"""qb.fft against numpy.fft (values, for power-of-two and other lengths, every norm, n cropping
and padding, axes), derivatives against JAX and finite differences, jit and vmap, the
frequency helpers, a spectral derivative, and errors by type and message."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

SIZES = [1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 64, 100]
NORMS = [None, "backward", "ortho", "forward"]


def close(actual, expected, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def signal(n, complex_=True, seed=0):
    rng = np.random.default_rng(seed + n)
    x = rng.normal(size=n)
    return x + 1j * rng.normal(size=n) if complex_ else x


@pytest.mark.parametrize("n", SIZES)
def test_fft_ifft_lengths(n):
    z = signal(n)
    close(qb.fft.fft(qb.asarray(z)), np.fft.fft(z), atol=1e-12 * n)
    close(qb.fft.ifft(qb.asarray(z)), np.fft.ifft(z), atol=1e-13 * n)
    close(qb.fft.ifft(qb.fft.fft(qb.asarray(z))), z, atol=1e-13 * n)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_norms(name, norm):
    x = signal(12, complex_=name in ("fft", "ifft", "irfft", "hfft"))
    close(getattr(qb.fft, name)(qb.asarray(x), norm=norm), getattr(np.fft, name)(x, norm=norm))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 9, 16])
def test_real_transforms(n):
    x = signal(n, complex_=False)
    close(qb.fft.rfft(qb.asarray(x)), np.fft.rfft(x))
    spec = np.fft.rfft(x)
    close(qb.fft.irfft(qb.asarray(spec), n=n), np.fft.irfft(spec, n=n))
    if n > 1:
        close(qb.fft.irfft(qb.asarray(spec)), np.fft.irfft(spec))  # the default n = 2 (m - 1)


def test_n_crops_and_pads_and_axis():
    x = signal(6)
    for n in (3, 6, 10):
        close(qb.fft.fft(qb.asarray(x), n=n), np.fft.fft(x, n=n))
        close(qb.fft.ifft(qb.asarray(x), n=n), np.fft.ifft(x, n=n))
    m = (np.arange(24.0).reshape(2, 3, 4) + 1j * np.arange(24.0)[::-1].reshape(2, 3, 4)) / 7.0
    for axis in (0, 1, -1):
        close(qb.fft.fft(qb.asarray(m), axis=axis), np.fft.fft(m, axis=axis))
        close(qb.fft.rfft(qb.asarray(m.real), axis=axis), np.fft.rfft(m.real, axis=axis))
    close(qb.fft.irfft(qb.asarray(m), n=5, axis=1), np.fft.irfft(m, n=5, axis=1))


def test_multidimensional():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 4, 6)) + 1j * rng.normal(size=(3, 4, 6))
    r = m.real.copy()
    q = qb.asarray(m)
    close(qb.fft.fft2(q), np.fft.fft2(m))
    close(qb.fft.ifft2(q), np.fft.ifft2(m))
    close(qb.fft.fftn(q), np.fft.fftn(m))
    close(qb.fft.ifftn(q), np.fft.ifftn(m))
    close(qb.fft.fftn(q, axes=(0, 2)), np.fft.fftn(m, axes=(0, 2)))
    close(qb.fft.fftn(q, s=(5, 3)), np.fft.fftn(m, s=(5, 3), axes=(1, 2)))  # the last len(s) axes
    close(qb.fft.rfft2(qb.asarray(r)), np.fft.rfft2(r))
    close(qb.fft.rfftn(qb.asarray(r)), np.fft.rfftn(r))
    spec = np.fft.rfftn(r)
    close(qb.fft.irfftn(qb.asarray(spec), s=r.shape), np.fft.irfftn(spec, s=r.shape, axes=(0, 1, 2)))
    close(qb.fft.irfft2(qb.asarray(np.fft.rfft2(r)), s=(4, 6)), r)


def test_float32_and_integer_input():
    x = signal(16, complex_=False).astype(np.float32)
    out = qb.fft.fft(qb.asarray(x))
    assert out.dtype == qb.complex64
    close(out, np.fft.fft(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    assert qb.fft.rfft(qb.asarray(x)).dtype == qb.complex64
    assert qb.fft.irfft(qb.fft.rfft(qb.asarray(x))).dtype == qb.float32
    close(qb.fft.fft(qb.arange(4)), np.fft.fft(np.arange(4.0)))


def test_frequencies_and_shifts():
    for n in (1, 4, 7):
        close(qb.fft.fftfreq(n, d=0.1), np.fft.fftfreq(n, d=0.1))
        close(qb.fft.rfftfreq(n, d=0.5), np.fft.rfftfreq(n, d=0.5))
    m = np.arange(15.0).reshape(3, 5)
    close(qb.fft.fftshift(qb.asarray(m)), np.fft.fftshift(m))
    close(qb.fft.ifftshift(qb.asarray(m)), np.fft.ifftshift(m))
    close(qb.fft.fftshift(qb.asarray(m), axes=1), np.fft.fftshift(m, axes=1))
    assert qb.fft.fftfreq(4, dtype=qb.float32).dtype == qb.float32
    assert qb.numpy.fft.fft is qb.fft.fft


def test_derivatives_against_jax():
    x = signal(9, complex_=False)
    z = signal(6)

    def loss(m):
        def f(x, z):
            a = m.fft.rfft(x) * (1.0 + 0.5j)
            b = m.fft.ifft(m.fft.fft(z) * m.arange(6.0))
            return m.sum(m.fft.irfft(a, n=9) ** 2) + m.sum(m.abs(m.fft.fft2(m.reshape(b, (2, 3)))) ** 2)
        return f

    got = qb.grad(loss(qb), argnums=(0, 1))(qb.asarray(x), qb.asarray(z))
    want = jax.grad(loss(jnp), argnums=(0, 1))(jnp.asarray(x), jnp.asarray(z))
    close(got[0], want[0], rtol=1e-11)
    close(got[1], want[1], rtol=1e-11)
    close(qb.jit(qb.grad(loss(qb), argnums=(0, 1)))(qb.asarray(x), qb.asarray(z))[1], want[1], rtol=1e-11)
    # forward mode against JAX
    t = signal(9, complex_=False, seed=5)
    _, tan = qb.jvp(lambda x: qb.fft.rfft(x, norm="ortho"), (qb.asarray(x),), (qb.asarray(t),))
    _, tan_j = jax.jvp(lambda x: jnp.fft.rfft(x, norm="ortho"), (jnp.asarray(x),), (jnp.asarray(t),))
    close(tan, tan_j)


def test_gradient_finite_differences():
    f = lambda x: qb.sum(qb.fft.irfft(qb.fft.rfft(x) ** 2, n=7) ** 3)  # noqa: E731
    x = signal(7, complex_=False)
    g = np.asarray(qb.grad(f)(qb.asarray(x)))
    h = 1e-6
    for k in range(7):
        e = np.zeros(7)
        e[k] = h
        fd = (f(qb.asarray(x + e)).item() - f(qb.asarray(x - e)).item()) / (2 * h)
        assert abs(fd - g[k]) < 1e-6 * max(1.0, abs(g[k]))


def test_vmap_and_batches():
    m = np.stack([signal(8), signal(8, seed=1)])
    close(qb.vmap(qb.fft.fft)(qb.asarray(m)), np.fft.fft(m))
    close(qb.vmap(qb.fft.fft, in_axes=1, out_axes=1)(qb.asarray(m.T)), np.fft.fft(m).T)
    g = qb.vmap(qb.grad(lambda x: qb.sum(qb.abs(qb.fft.rfft(x)) ** 2)))(qb.asarray(m.real))
    gj = jax.vmap(jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2)))(m.real)
    close(g, gj)


@pytest.mark.parametrize("n", [8, 12, 37, 64, 75, 1000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_has_the_same_bits_alone_and_in_a_batch(n, dtype):
    # batches run four rows at once in SIMD lanes: the same arithmetic as one row alone
    rng = np.random.default_rng(n)
    x = rng.normal(size=(7, n)).astype(dtype)
    z = x + 1j * rng.normal(size=(7, n)).astype(dtype)
    for fn, a in ((qb.fft.fft, z), (qb.fft.ifft, z), (qb.fft.rfft, x), (lambda v: qb.fft.irfft(v, n=n), np.fft.rfft(x))):
        a = a.astype(np.complex64) if a.dtype.kind == "c" and dtype == np.float32 else a
        batched = np.asarray(fn(qb.asarray(a)))
        rows = np.stack([np.asarray(fn(qb.asarray(a[i]))) for i in range(len(a))])
        np.testing.assert_array_equal(batched, rows)
        np.testing.assert_array_equal(np.asarray(qb.vmap(fn)(qb.asarray(a))), rows)
        want = {qb.fft.fft: np.fft.fft, qb.fft.ifft: np.fft.ifft, qb.fft.rfft: np.fft.rfft}.get(fn)
        if want is not None:
            ref = want(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(batched, ref, rtol=tol, atol=tol * np.max(np.abs(ref)))


def test_spectral_derivative():
    # d/dx sin(3x) on a periodic grid, by multiplying the spectrum with i k
    n = 32
    x = np.arange(n) * 2 * np.pi / n
    k = qb.fft.fftfreq(n, d=1.0 / n)
    du = qb.real(qb.fft.ifft(1j * k * qb.fft.fft(qb.sin(3.0 * qb.asarray(x)))))
    close(du, 3.0 * np.cos(3.0 * x), atol=1e-12)


def test_errors():
    z = qb.asarray(signal(4))
    with pytest.raises(ValueError, match="norm must be"):
        qb.fft.fft(z, norm="unitary")
    with pytest.raises(ValueError, match="n must be at least 1"):
        qb.fft.fft(z, n=0)
    with pytest.raises(TypeError, match="needs a real array"):
        qb.fft.rfft(z)
    with pytest.raises(ValueError, match="out of bounds"):
        qb.fft.fft(z, axis=1)
    with pytest.raises(ValueError, match="scalar"):
        qb.fft.fft(qb.array(1.0))
    with pytest.raises(ValueError, match="same length"):
        qb.fft.fftn(qb.zeros((2, 2)), s=(2,), axes=(0, 1))


@pytest.mark.parametrize("shape", [(3, 5, 6, 7), (2, 4, 8, 16), (16, 64, 33)])
def test_transforms_along_other_axes_read_and_write_strided(shape):
    # fft along a non-last axis: the kernel reads and writes the columns in place, so the
    # plan holds no transposes (the moveaxis pair around the kernel became views)
    rng = np.random.default_rng(len(shape))
    z = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    x = rng.normal(size=shape)
    for fn, ref, a in ((lambda v: qb.fft.fft(v, axis=-2), lambda v: np.fft.fft(v, axis=-2), z),
                       (lambda v: qb.fft.ifft(v, axis=0), lambda v: np.fft.ifft(v, axis=0), z),
                       (qb.fft.rfft2, np.fft.rfft2, x), (qb.fft.fftn, np.fft.fftn, z)):
        got = np.asarray(qb.jit(fn)(qb.asarray(a)))
        np.testing.assert_allclose(got, ref(a), rtol=1e-12, atol=1e-12 * np.max(np.abs(ref(a))))
    # (an operand the kernel gets planar, as another transform's result; a complex operand
    # split into parts is still transposed part by part first)
    for fn in (qb.fft.rfft2, lambda v: qb.fft.fft(qb.fft.rfft(v), axis=0)):
        plan = qb.jit(lambda v: fn(v) * 2.0).lower(qb.asarray(x)).compile().plan_text()
        kernels = [line for line in plan.splitlines() if line.lstrip().startswith("kernel")]
        assert not any("transpose" in line for line in kernels), plan
    # gradients through the strided form, against JAX
    loss = lambda v: qb.sum(qb.abs(qb.fft.fft(v, axis=0)) ** 2 * qb.arange(v.shape[-1]))
    jloss = lambda v: jnp.sum(jnp.abs(jnp.fft.fft(v, axis=0)) ** 2 * jnp.arange(v.shape[-1]))
    close(qb.grad(loss)(qb.asarray(x)), jax.grad(jloss)(x))
