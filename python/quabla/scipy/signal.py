"""jax.scipy.signal's convolve, correlate, convolve2d and correlate2d (modes 'full', 'same',
'valid'; method 'direct'), on qb.lax.conv_general_dilated: N-d, differentiable with respect
to both inputs."""
from __future__ import annotations

from .._package import qb as _qb
from .._numpy_extra import _no_complex

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d"]


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
