"""quabla.fft: discrete Fourier transforms, as jax.numpy.fft and numpy.fft.

One kernel does the work: the transform of complex rows along the last axis (the fft IR
op: lengths with small prime factors by a mixed-radix transform, any other length by
Bluestein's algorithm, in double precision; the backends read a transform along another
axis in place). Everything here composes it: moving the axis last, cropping or zero-padding
to ``n``, the ``norm`` scaling, the Hermitian half-spectra of the real transforms, and
several axes one after another. Every function is differentiable (grad, jvp, vmap, jit),
with JAX's conventions for complex derivatives.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

from . import _core

_NORMS = (None, "backward", "ortho", "forward")
_COMPLEX = (_core.complex64, _core.complex128)


def _qb():
    import quabla
    return quabla


def _check_norm(norm, fname):
    if norm not in _NORMS:
        raise ValueError(f"{fname}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")


def _axis(axis, ndim, fname):
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{fname}: axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{fname}: axis {axis} is out of bounds for an array of {ndim} dimensions")
    return axis % ndim


def _first(x, n, axis):
    """The first n entries along axis (a static slice)."""
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, n)
    return x[tuple(index)]


def _resize(x, n, axis, fname):
    """x cropped or zero-padded to n entries along axis (numpy.fft's n)."""
    qb = _qb()
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{fname}: n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{fname}: n must be at least 1, got {n}")
    m = x.shape[axis]
    if n == m:
        return x
    if n < m:
        return _first(x, n, axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - m)
    return qb.pad(x, pad)


def _scale(y, n, norm, inverse):
    """The norm's factor on the kernel's result (unscaled forward, 1/n inverse)."""
    if norm == "ortho":
        return y * (math.sqrt(n) if inverse else 1.0 / math.sqrt(n))
    if norm == "forward":
        return y * float(n) if inverse else y * (1.0 / n)
    return y


def _transform(x, n, axis, norm, inverse, fname):
    qb = _qb()
    _check_norm(norm, fname)
    x = qb.asarray(x)
    if x.ndim == 0:
        raise ValueError(f"{fname}: needs an array of at least one dimension, got a scalar")
    axis = _axis(axis, x.ndim, fname)
    if n is not None:
        x = _resize(x, n, axis, fname)
    length = x.shape[axis]
    if length == 0:
        raise ValueError(f"{fname}: invalid number of data points (0) along axis {axis}")
    last = axis == x.ndim - 1
    y = _core._fft_last(x if last else qb.moveaxis(x, axis, -1), inverse)
    y = _scale(y, length, norm, inverse)
    return y if last else qb.moveaxis(y, -1, axis)


def fft(a, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None):
    """The one-dimensional discrete Fourier transform along axis (numpy.fft.fft)."""
    return _transform(a, n, axis, norm, False, "fft")


def ifft(a, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None):
    """The inverse of fft (numpy.fft.ifft)."""
    return _transform(a, n, axis, norm, True, "ifft")


def _real_input(a, fname):
    qb = _qb()
    x = qb.asarray(a)
    if x.dtype in _COMPLEX:
        raise TypeError(f"{fname}: needs a real array, got {x.dtype.name} (use fft for complex input)")
    return x


def rfft(a, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None):
    """The transform of a real array: the n // 2 + 1 non-negative frequencies (numpy.fft.rfft)."""
    x = _real_input(a, "rfft")
    if x.ndim == 0:
        raise ValueError("rfft: needs an array of at least one dimension, got a scalar")
    axis = _axis(axis, x.ndim, "rfft")
    y = _transform(x, n, axis, norm, False, "rfft")
    return _first(y, y.shape[axis] // 2 + 1, axis)


def irfft(a, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None):
    """The inverse of rfft: n real values (2 (m - 1) by default) from m non-negative
    frequencies of a Hermitian spectrum (numpy.fft.irfft; the imaginary parts of the zero and,
    for even n, the Nyquist frequency are ignored, as there)."""
    qb = _qb()
    _check_norm(norm, "irfft")
    x = qb.asarray(a)
    if x.ndim == 0:
        raise ValueError("irfft: needs an array of at least one dimension, got a scalar")
    axis = _axis(axis, x.ndim, "irfft")
    m = x.shape[axis]
    if n is None:
        n = 2 * (m - 1)
        if n < 1:
            raise ValueError(f"irfft: invalid number of data points ({n}) from {m} frequencies; pass n")
    elif not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"irfft: n must be an int, got {type(n).__name__}")
    elif n < 1:
        raise ValueError(f"irfft: n must be at least 1, got {n}")
    x = _resize(x, n // 2 + 1, axis, "irfft")
    x = qb.moveaxis(x, axis, -1)
    if x.dtype not in _COMPLEX:
        x = _core._complex(x, qb.zeros_like(x))
    if n % 2 == 0 and n >= 4:
        y = _irfft_even(x, n)
    else:
        tail = qb.flip(qb.conj(x[..., 1:n - n // 2]), axis=-1)
        full = qb.concatenate([x, tail], axis=-1)
        y = qb.real(_core._fft_last(full, True))
    y = _scale(y, n, norm, True)
    return qb.moveaxis(y, -1, axis)


def _irfft_even(x, n):
    """irfft of the h + 1 = n / 2 + 1 frequencies x (last axis) by one complex transform of
    length h: with E, O the spectra of the even and odd samples, X_k = E_k + w^k O_k and
    X_k+h = E_k - w^k O_k (w = exp(-2 pi i / n), X_k+h = conj X_h-k), so
    Z_k = E_k + i O_k = ((X_k + conj X_h-k) + i w^-k (X_k - conj X_h-k)) / 2 is the spectrum
    of z_j = x_2j + i x_2j+1, and x interleaves the parts of ifft(Z). The imaginary parts of
    X_0 and X_h are ignored, as numpy.fft.irfft ignores them."""
    import numpy as np
    qb = _qb()
    h = n // 2
    part = _core.float32 if x.dtype == _core.complex64 else _core.float64
    # X_0 is a_0's, X_h is b_0's: the mask drops their imaginary parts
    keep = qb.asarray((np.arange(h) > 0).astype(np.float64)).astype(part)
    a = x[..., :h]                               # X_k, k < h
    b = qb.flip(x[..., 1:], axis=-1)             # X_h-k
    ar, ai = qb.real(a), qb.imag(a) * keep
    br, bi = qb.real(b), -(qb.imag(b) * keep)    # conj X_h-k
    k = np.arange(h)
    wr = qb.asarray(-np.sin(2 * np.pi * k / n)).astype(part)  # i w^-k = i exp(2 pi i k / n)
    wi = qb.asarray(np.cos(2 * np.pi * k / n)).astype(part)
    dr, di = ar - br, ai - bi
    zr = (ar + br + (wr * dr - wi * di)) * 0.5
    zi = (ai + bi + (wr * di + wi * dr)) * 0.5
    z = _core._fft_last(_core._complex(zr, zi), True)
    parts = qb.stack([qb.real(z), qb.imag(z)], axis=-1)
    return qb.reshape(parts, parts.shape[:-2] + (n,))


def _swap(norm):
    return {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def hfft(a, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None):
    """The transform of a Hermitian-symmetric signal given by its first half: real output
    (numpy.fft.hfft)."""
    _check_norm(norm, "hfft")
    return irfft(_qb().conj(a), n, axis, _swap(norm))


def ihfft(a, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None):
    """The inverse of hfft (numpy.fft.ihfft)."""
    _check_norm(norm, "ihfft")
    return _qb().conj(rfft(a, n, axis, _swap(norm)))


def _axes_and_sizes(x, s, axes, fname):
    if axes is None:
        if s is not None and len(s) > x.ndim:
            raise ValueError(f"{fname}: s has {len(s)} entries but the array has only {x.ndim} "
                             f"dimensions; pass at most one size per axis")
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        if isinstance(axes, int):
            axes = [axes]
        axes = [_axis(a, x.ndim, fname) for a in axes]
    if s is not None:
        s = list(s)
        if len(s) != len(axes):
            raise ValueError(f"{fname}: s and axes must have the same length, got {len(s)} and {len(axes)}")
    return axes, s


def _transform_n(a, s, axes, norm, inverse, fname):
    qb = _qb()
    x = qb.asarray(a)
    axes, s = _axes_and_sizes(x, s, axes, fname)
    for k, ax in enumerate(axes):
        x = _transform(x, None if s is None else s[k], ax, norm, inverse, fname)
    return x


def fftn(a, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None):
    """The n-dimensional transform over axes (all by default; numpy.fft.fftn)."""
    return _transform_n(a, s, axes, norm, False, "fftn")


def ifftn(a, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None):
    """The inverse of fftn (numpy.fft.ifftn)."""
    return _transform_n(a, s, axes, norm, True, "ifftn")


def fft2(a, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1), norm: Optional[str] = None):
    """The two-dimensional transform over the last two axes (numpy.fft.fft2)."""
    return _transform_n(a, s, axes, norm, False, "fft2")


def ifft2(a, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1), norm: Optional[str] = None):
    """The inverse of fft2 (numpy.fft.ifft2)."""
    return _transform_n(a, s, axes, norm, True, "ifft2")


def rfftn(a, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None):
    """The real n-dimensional transform: rfft over the last of axes, fft over the others
    (numpy.fft.rfftn)."""
    x = _real_input(a, "rfftn")
    axes, s = _axes_and_sizes(x, s, axes, "rfftn")
    if not axes:
        raise ValueError("rfftn: needs at least one axis to transform, got axes=()")
    x = rfft(x, None if s is None else s[-1], axes[-1], norm)
    for k, ax in enumerate(axes[:-1]):
        x = _transform(x, None if s is None else s[k], ax, norm, False, "rfftn")
    return x


def irfftn(a, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None):
    """The inverse of rfftn (numpy.fft.irfftn): ifft over all but the last of axes, irfft over
    the last (2 (m - 1) values there unless s says)."""
    qb = _qb()
    x = qb.asarray(a)
    axes, s = _axes_and_sizes(x, s, axes, "irfftn")
    if not axes:
        raise ValueError("irfftn: needs at least one axis to transform, got axes=()")
    for k, ax in enumerate(axes[:-1]):
        x = _transform(x, None if s is None else s[k], ax, norm, True, "irfftn")
    return irfft(x, None if s is None else s[-1], axes[-1], norm)


def rfft2(a, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1), norm: Optional[str] = None):
    """rfftn over the last two axes (numpy.fft.rfft2)."""
    return rfftn(a, s, axes, norm)


def irfft2(a, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1), norm: Optional[str] = None):
    """irfftn over the last two axes (numpy.fft.irfft2)."""
    return irfftn(a, s, axes, norm)


def _freq_dtype(dtype):
    qb = _qb()
    return qb.default_dtype() if dtype is None else dtype


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point transform: [0, 1, ..., -1] / (d n) (numpy.fft.fftfreq)."""
    qb = _qb()
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"fftfreq: n must be a positive int, got {n!r}")
    k = [i if i < (n + 1) // 2 else i - n for i in range(n)]
    return qb.asarray([v / (d * n) for v in k], dtype=_freq_dtype(dtype))


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of rfft: [0, 1, ..., n // 2] / (d n) (numpy.fft.rfftfreq)."""
    qb = _qb()
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"rfftfreq: n must be a positive int, got {n!r}")
    return qb.asarray([i / (d * n) for i in range(n // 2 + 1)], dtype=_freq_dtype(dtype))


def _shift(x, axes, inverse):
    qb = _qb()
    x = qb.asarray(x)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, int):
        axes = [axes]
    shifts = [(-(x.shape[a] // 2) if inverse else x.shape[a] // 2) for a in axes]
    return qb.roll(x, shifts, axis=tuple(axes)) if axes else x


def fftshift(x, axes=None):
    """The zero frequency moved to the middle (numpy.fft.fftshift)."""
    return _shift(x, axes, False)


def ifftshift(x, axes=None):
    """The inverse of fftshift (numpy.fft.ifftshift)."""
    return _shift(x, axes, True)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "fft2", "ifft2", "rfftn", "irfftn",
           "rfft2", "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
