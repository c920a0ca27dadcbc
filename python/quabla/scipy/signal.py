"""jax.scipy.signal: convolve, correlate, convolve2d and correlate2d (modes 'full', 'same',
'valid'; method 'direct') on qb.lax.conv_general_dilated, N-d and differentiable with respect
to both inputs; fftconvolve through qb.fft; detrend (constant, linear, piecewise linear);
and the spectral estimates stft, istft, welch and csd (in ._spectral)."""
from __future__ import annotations

import numpy as _np

from .._package import qb as _qb
from .._numpy_extra import _no_complex
from ._spectral import csd, istft, stft, welch  # noqa: F401

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend", "stft", "istft",
           "welch", "csd"]


def correlate(in1, in2, mode: str = "full", method: str = "auto"):
    """The cross-correlation of in1 with in2 (arrays of one rank), as scipy.signal.correlate."""
    a, b = _qb.asarray(in1), _qb.asarray(in2)
    if a.ndim != b.ndim:
        raise ValueError(f"correlate: in1 and in2 must have one rank, got {a.ndim} and {b.ndim}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"correlate: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"correlate: method must be 'auto', 'direct' or 'fft', got {method!r}")
    _no_complex("qb.scipy.signal.correlate", a, b)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"correlate: inputs cannot be empty, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.ndim == 0:
        return a * b
    dtype = _qb.result_type(a, b)
    if dtype not in (_qb.float32, _qb.float64):
        dtype = _qb.default_dtype()
    a, b = a.astype(dtype), b.astype(dtype)
    if mode == "valid":
        if any(sa < sb for sa, sb in zip(a.shape, b.shape)):
            if all(sa <= sb for sa, sb in zip(a.shape, b.shape)):
                # SciPy swaps the inputs (and reverses the result) when in2 is the larger one.
                return _qb.flip(correlate(b, a, "valid"))
            raise ValueError("correlate: in 'valid' mode one input must be at least as large as the other in "
                             "every dimension")
        pads = [(0, 0)] * a.ndim
    else:
        pads = [(sb - 1, sb - 1) for sb in b.shape]
    out = _qb.lax.conv_general_dilated(a[None, None], b[None, None], (1,) * a.ndim, pads)[0, 0]
    if mode == "same":
        index = tuple(slice((sb - 1) // 2, (sb - 1) // 2 + sa) for sa, sb in zip(a.shape, b.shape))
        out = out[index]
    return out


def convolve(in1, in2, mode: str = "full", method: str = "auto"):
    """The convolution of in1 with in2, as scipy.signal.convolve."""
    b = _qb.asarray(in2)
    a = _qb.asarray(in1)
    _no_complex("qb.scipy.signal.convolve", a, b)
    if mode == "valid" and a.ndim == b.ndim and any(sa < sb for sa, sb in zip(a.shape, b.shape)) and \
            all(sa <= sb for sa, sb in zip(a.shape, b.shape)):
        a, b = b, a  # convolution commutes: SciPy's swap for 'valid'
    return correlate(a, _qb.flip(b) if b.ndim else b, mode, method)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0):
    """2-d cross-correlation (boundary 'fill' with fillvalue 0 only). Its 'same' window is
    SciPy's correlate2d's, which for an even kernel sits one further along than correlate's."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    if mode != "same":
        return correlate(in1, in2, mode)
    a, b = _qb.asarray(in1), _qb.asarray(in2)
    full = correlate(a, b, "full")
    return full[tuple(slice(sb // 2, sb // 2 + sa) for sa, sb in zip(a.shape, b.shape))]


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0):
    """2-d convolution (boundary 'fill' with fillvalue 0 only)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if _qb.asarray(in1).ndim != 2 or _qb.asarray(in2).ndim != 2:
        raise ValueError(f"{name}: inputs must be 2-d")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}: only boundary='fill' with fillvalue=0 is supported (as in JAX)")


# ---- FFT convolution -------------------------------------------------------------------------

def _conv_axes(fname, ndim, axes):
    """axes as a sorted tuple of distinct non-negative axes (None: all)."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes,)
    try:
        axes = [int(a) for a in axes]
    except TypeError:
        raise TypeError(f"{fname}: axes must be None, an int or a sequence of ints, got {axes!r}") from None
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{fname}: axis {a} is out of bounds for arrays of {ndim} dimensions")
    normal = [a % ndim for a in axes]
    if len(set(normal)) != len(normal):
        raise ValueError(f"{fname}: axes must be distinct, got {tuple(axes)}")
    return tuple(sorted(normal))


def _centred(x, shape):
    """The centred part of x of the given shape (SciPy's placement: the start is half the
    surplus, rounded down)."""
    index = tuple(slice((n - m) // 2, (n - m) // 2 + m) for n, m in zip(x.shape, shape))
    return x[index]


def fftconvolve(in1, in2, mode: str = "full", axes=None):
    """The convolution of in1 and in2 (arrays of one rank) by FFT, as scipy.signal.fftconvolve:
    along `axes` (default all; along the others the inputs broadcast, sizes equal or 1), output
    'full', 'same' (the centred part of in1's shape) or 'valid' (the part that needs no zero
    padding; the inputs swap when in2 is the larger, as SciPy). Real inputs give a real result
    (by rfftn), complex ones a complex result; differentiable in both."""
    from .._numpy_names import common_inexact
    a, b = _qb.asarray(in1), _qb.asarray(in2)
    if a.ndim != b.ndim:
        raise ValueError(f"fftconvolve: in1 and in2 must have the same number of dimensions, got {a.ndim} and {b.ndim}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"fftconvolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    dtype = common_inexact(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    if a.ndim == 0:  # scalars: their product (as SciPy)
        return a * b
    if a.size == 0 or b.size == 0:
        return _qb.zeros((0,), dtype=dtype)
    axes = _conv_axes("fftconvolve", a.ndim, axes)
    for i in range(a.ndim):
        if i not in axes and a.shape[i] != b.shape[i] and 1 not in (a.shape[i], b.shape[i]):
            raise ValueError(f"fftconvolve: along axis {i}, which is not convolved, the inputs must have equal sizes "
                             f"or size 1, got {a.shape[i]} and {b.shape[i]}")
    if mode == "valid":
        bigger1 = all(a.shape[i] >= b.shape[i] for i in axes)
        bigger2 = all(b.shape[i] >= a.shape[i] for i in axes)
        if not bigger1:
            if not bigger2:
                raise ValueError("fftconvolve: in 'valid' mode one input must be at least as large as the other along "
                                 "every convolved axis")
            a, b = b, a
    s1, s2 = tuple(a.shape), tuple(b.shape)
    full = [s1[i] + s2[i] - 1 for i in axes]
    # Transform lengths: the next powers of two (the FFT's fast case), cropped afterwards.
    fast = [1 << (n - 1).bit_length() for n in full]
    if _qb.issubdtype(dtype, _qb.complexfloating):
        spectrum = _qb.fft.fftn(a, s=fast, axes=axes) * _qb.fft.fftn(b, s=fast, axes=axes)
        out = _qb.fft.ifftn(spectrum, s=fast, axes=axes)
    else:
        spectrum = _qb.fft.rfftn(a, s=fast, axes=axes) * _qb.fft.rfftn(b, s=fast, axes=axes)
        out = _qb.fft.irfftn(spectrum, s=fast, axes=axes)
    sizes = dict(zip(axes, full))
    out = out[tuple(slice(0, sizes[i]) if i in sizes else slice(None) for i in range(a.ndim))]
    if mode == "same":
        return _centred(out, s1)
    if mode == "valid":
        return _centred(out, tuple(s1[i] - s2[i] + 1 if i in sizes else out.shape[i] for i in range(a.ndim)))
    return out


# ---- detrending ------------------------------------------------------------------------------

def _line_residual(seg):
    """seg minus its least-squares line along the last axis (a single point: 0)."""
    m = seg.shape[-1]
    if m == 1:
        return _qb.zeros_like(seg)
    t = _np.arange(m, dtype=_np.float64) - 0.5 * (m - 1)  # centred times: the fit's two terms decouple
    tq = _qb.asarray(t).astype(_qb.real(seg).dtype)
    mean = _qb.mean(seg, axis=-1, keepdims=True)
    slope = _qb.sum(seg * tq, axis=-1, keepdims=True) / float(_np.sum(t * t))
    return seg - mean - slope * tq


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):  # noqa: A002 (SciPy's name)
    """data minus its trend along axis, as scipy.signal.detrend: type 'linear' (the
    least-squares line; with breakpoints bp, indices into the axis, a separate line on each
    piece between them) or 'constant' (the mean; bp ignored). Real or complex; ints become
    floats; differentiable. overwrite_data is accepted and ignored (arrays are immutable)."""
    from .._numpy_names import common_inexact
    if type not in ("linear", "constant"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    x = _qb.asarray(data)
    if x.ndim == 0:
        raise ValueError("detrend: data must have at least one dimension")
    if not isinstance(axis, int) or isinstance(axis, bool) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"detrend: axis must be an int in [-{x.ndim}, {x.ndim}), got {axis!r}")
    if x.shape[axis] == 0:
        raise ValueError(f"detrend: data is empty along axis {axis} (shape {tuple(x.shape)}); there is no trend "
                         f"to remove")
    x = x.astype(common_inexact(x))
    if type == "constant":
        return x - _qb.mean(x, axis=axis, keepdims=True)
    n = x.shape[axis]
    try:
        points = _np.atleast_1d(_np.asarray(bp)).reshape(-1)
    except Exception:
        raise TypeError("detrend: bp must be an int or a sequence of ints (concrete, not traced)") from None
    if points.size and not _np.all(points == _np.floor(points)):
        raise ValueError(f"detrend: breakpoints must be whole numbers, got {points.tolist()}")
    if _np.any(points < 0) or _np.any(points > n):
        raise ValueError(f"detrend: breakpoints must lie between 0 and the length along axis ({n}), got "
                         f"{points.tolist()}")
    edges = sorted({0, n} | {int(p) for p in points})
    moved = _qb.moveaxis(x, axis, -1)
    pieces = [_line_residual(moved[..., lo:hi]) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    out = pieces[0] if len(pieces) == 1 else _qb.concatenate(pieces, axis=-1)
    return _qb.moveaxis(out, -1, axis)
