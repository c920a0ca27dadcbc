"""jax.scipy.signal's spectral estimates: stft, istft, welch and csd, with SciPy's segmenting,
windows, detrending, scaling, one- and two-sided spectra and averaging, on qb.fft.

The windows SciPy's get_window knows by name (all but taylor, dpss, chebwin and
kaiser_bessel_derived, which can be passed as arrays) are built here from their defining
formulas (periodic, 'fftbins', as get_window gives them to the spectral functions), in NumPy:
they are constants. The data path (segments, detrending, window, FFT, averaging,
overlap-add) is Quabla ops throughout, so all four are differentiable and work inside qb.jit."""
from __future__ import annotations

import warnings

import numpy as _np

from .._package import qb as _qb


def _warn(message):
    """A UserWarning attributed to the caller's line (the first frame outside quabla.scipy)."""
    import sys
    frame, level = sys._getframe(1), 2  # (stacklevel 2: the frame that called _warn)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("quabla.scipy"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, stacklevel=level)


# ---- windows -----------------------------------------------------------------------------------

def _general_cosine(m, coefficients):
    """sum_k a_k cos(k x) on x = -pi..pi (the symmetric cosine-sum windows)."""
    x = _np.linspace(-_np.pi, _np.pi, m)
    return sum(a * _np.cos(k * x) for k, a in enumerate(coefficients))


def _boxcar(m):
    return _np.ones(m)


def _triang(m):
    n = _np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        half = (2.0 * n - 1.0) / m
        return _np.concatenate([half, half[::-1]])
    half = 2.0 * n / (m + 1.0)
    return _np.concatenate([half, half[-2::-1]])


def _bartlett(m):
    n = _np.arange(m)
    return _np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _parzen(m):
    n = _np.abs(_np.arange(-(m - 1) / 2.0, (m - 1) / 2.0 + 0.5, 1.0))
    r = n / (m / 2.0)
    return _np.where(n <= (m - 1) / 4.0, 1.0 - 6.0 * r ** 2 + 6.0 * r ** 3, 2.0 * (1.0 - r) ** 3)


def _bohman(m):
    x = _np.abs(_np.linspace(-1.0, 1.0, m)[1:-1])
    inner = (1.0 - x) * _np.cos(_np.pi * x) + _np.sin(_np.pi * x) / _np.pi
    return _np.concatenate([[0.0], inner, [0.0]])


def _barthann(m):
    x = _np.abs(_np.arange(m) / (m - 1.0) - 0.5)
    return 0.62 - 0.48 * x + 0.38 * _np.cos(2.0 * _np.pi * x)


def _cosine(m):
    return _np.sin(_np.pi / m * (_np.arange(m) + 0.5))


def _exponential(m, center=None, tau=1.0):
    center = (m - 1) / 2.0 if center is None else center
    return _np.exp(-_np.abs(_np.arange(m) - center) / tau)


def _tukey(m, alpha=0.5):
    if alpha <= 0:
        return _np.ones(m)
    if alpha >= 1:
        return _general_cosine(m, (0.5, 0.5))
    n = _np.arange(m)
    width = int(_np.floor(alpha * (m - 1) / 2.0))
    rise = 0.5 * (1.0 + _np.cos(_np.pi * (-1.0 + 2.0 * n[:width + 1] / alpha / (m - 1))))
    fall = 0.5 * (1.0 + _np.cos(_np.pi * (-2.0 / alpha + 1.0 + 2.0 * n[m - width - 1:] / alpha / (m - 1))))
    return _np.concatenate([rise, _np.ones(m - 2 * (width + 1)), fall])


def _lanczos(m):
    return _np.sinc(2.0 * _np.arange(m) / (m - 1) - 1.0)


def _kaiser(m, beta):
    n = _np.arange(m)
    r = 2.0 * n / (m - 1) - 1.0
    return _np.i0(beta * _np.sqrt(_np.clip(1.0 - r * r, 0.0, None))) / _np.i0(beta)


def _gaussian(m, std):
    n = _np.arange(m) - (m - 1.0) / 2.0
    return _np.exp(-n * n / (2.0 * std * std))


def _general_gaussian(m, p, sig):
    n = _np.arange(m) - (m - 1.0) / 2.0
    return _np.exp(-0.5 * _np.abs(n / sig) ** (2.0 * p))


_COSINE_SUMS = {
    "hann": (0.5, 0.5),
    "hamming": (0.54, 0.46),
    "blackman": (0.42, 0.50, 0.08),
    "nuttall": (0.3635819, 0.4891775, 0.1365995, 0.0106411),
    "blackmanharris": (0.35875, 0.48829, 0.14128, 0.01168),
    "flattop": (0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368),
}

# name -> (builder of the symmetric window of length m, how many parameters it needs)
_WINDOWS = {
    "boxcar": (_boxcar, 0), "triang": (_triang, 0), "bartlett": (_bartlett, 0), "parzen": (_parzen, 0),
    "bohman": (_bohman, 0), "barthann": (_barthann, 0), "cosine": (_cosine, 0), "exponential": (_exponential, 0),
    "tukey": (_tukey, 0), "lanczos": (_lanczos, 0), "kaiser": (_kaiser, 1), "gaussian": (_gaussian, 1),
    "general_gaussian": (_general_gaussian, 2),
    "general_cosine": (lambda m, a: _general_cosine(m, a), 1),
    "general_hamming": (lambda m, alpha: _general_cosine(m, (alpha, 1.0 - alpha)), 1),
}
for _name, _coefficients in _COSINE_SUMS.items():
    _WINDOWS[_name] = ((lambda c: lambda m: _general_cosine(m, c))(_coefficients), 0)

_ALIASES = {
    "box": "boxcar", "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar",
    "tri": "triang", "triangle": "triang", "black": "blackman", "blk": "blackman",
    "hamm": "hamming", "ham": "hamming", "han": "hann", "bart": "bartlett", "brt": "bartlett",
    "flat": "flattop", "flt": "flattop", "parz": "parzen", "par": "parzen", "bman": "bohman", "bmn": "bohman",
    "blackharr": "blackmanharris", "bkh": "blackmanharris", "nutl": "nuttall", "nut": "nuttall",
    "brthan": "barthann", "bth": "barthann", "halfcosine": "cosine", "poisson": "exponential", "tuk": "tukey",
    "sinc": "lanczos", "ksr": "kaiser", "gauss": "gaussian", "gss": "gaussian",
    "general gaussian": "general_gaussian", "general_gauss": "general_gaussian", "general gauss": "general_gaussian",
    "ggs": "general_gaussian",
}
_NOT_HERE = ("taylor", "taylorwin", "dpss", "chebwin", "cheb", "kaiser_bessel_derived", "kbd")


def get_window(window, nx):
    """The periodic window of length nx for a name, or a (name, parameter, ...) tuple, as
    scipy.signal.get_window(window, nx) (fftbins=True) gives it: the symmetric window of
    length nx + 1 without its last point. A NumPy float64 array."""
    if isinstance(window, tuple):
        if not window or not isinstance(window[0], str):
            raise ValueError(f"window tuple must start with the window's name, got {window!r}")
        name, params = window[0], tuple(window[1:])
    elif isinstance(window, str):
        name, params = window, ()
    else:
        raise TypeError(f"window must be a name, a (name, parameters...) tuple or an array, got "
                        f"{type(window).__name__}")
    key = _ALIASES.get(name.lower(), name.lower())
    if key in _NOT_HERE:
        raise NotImplementedError(f"the {name!r} window is not built in Quabla; pass the window itself as an array "
                                  "(for instance from scipy.signal.get_window)")
    if key not in _WINDOWS:
        raise ValueError(f"unknown window {name!r}; use one of {', '.join(sorted(_WINDOWS))}, a (name, parameters) "
                         "tuple or an array")
    build, needed = _WINDOWS[key]
    if len(params) < needed:
        raise ValueError(f"the {key!r} window needs {needed} parameter(s): pass a tuple such as ({key!r}, ...)")
    if key == "exponential" and params and params[0] is not None:
        raise ValueError("the exponential window's center must be None for a periodic (spectral) window")
    if nx <= 0:
        return _np.zeros(0)
    if nx == 1:
        return _np.ones(1)
    return _np.asarray(build(nx + 1, *params), dtype=_np.float64)[:nx]


def _window_and_nperseg(fname, window, nperseg, n, default=256):
    """SciPy's choice of the window and the segment length: a named window of length nperseg
    (default 256, at most the signal's length n), or the given array (then its length)."""
    if isinstance(window, (str, tuple)):
        nperseg = default if nperseg is None else nperseg
        nperseg = _positive_int(fname, "nperseg", nperseg)
        if nperseg > n:
            _warn(f"{fname}: nperseg = {nperseg} is greater than the input length {n}, using nperseg = {n}")
            nperseg = n
        return _qb.asarray(get_window(window, nperseg)), nperseg
    win = _qb.asarray(window)
    if _qb.issubdtype(win.dtype, _qb.complexfloating):
        raise ValueError(f"{fname}: the window must be real, got {win.dtype}")
    if win.ndim != 1:
        raise ValueError(f"{fname}: the window must be 1-D, got shape {tuple(win.shape)}")
    if win.shape[0] > n:
        raise ValueError(f"{fname}: the window ({win.shape[0]}) is longer than the input ({n})")
    if nperseg is None:
        nperseg = win.shape[0]
    elif _positive_int(fname, "nperseg", nperseg) != win.shape[0]:
        raise ValueError(f"{fname}: nperseg ({nperseg}) must equal the window's length ({win.shape[0]})")
    return win, win.shape[0]


def _overlap_and_step(fname, nperseg, nfft, noverlap):
    """(noverlap, hop) of segments of nperseg samples transformed at length nfft (noverlap
    defaults to half a segment), checked: nfft >= nperseg, 0 <= noverlap < nperseg."""
    if nfft < nperseg:
        raise ValueError(f"{fname}: nfft ({nfft}) must be at least nperseg ({nperseg})")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if not 0 <= noverlap < nperseg:
        raise ValueError(f"{fname}: noverlap ({noverlap}) must be at least 0 and less than nperseg ({nperseg})")
    return noverlap, nperseg - noverlap


def _positive_int(fname, what, value):
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)) or value < 1:
        raise ValueError(f"{fname}: {what} must be a positive integer, got {value!r}")
    return int(value)


# ---- segments ----------------------------------------------------------------------------------

def _extend(x, width, boundary):
    """x extended by `width` samples at both ends of its last axis: 'zeros', 'even' (mirror
    without repeating the end point), 'odd' (point reflection through the end point) or
    'constant' (the end value repeated)."""
    if width == 0:
        return x
    if boundary == "zeros":
        return _qb.pad(x, [(0, 0)] * (x.ndim - 1) + [(width, width)])
    if x.shape[-1] <= width:
        raise ValueError(f"stft: boundary {boundary!r} needs more than nperseg // 2 = {width} samples, got "
                         f"{x.shape[-1]}")
    first, last = x[..., :1], x[..., -1:]
    head = _qb.flip(x[..., 1:width + 1], axis=-1)
    tail = _qb.flip(x[..., -width - 1:-1], axis=-1)
    if boundary == "odd":
        head, tail = 2.0 * first - head, 2.0 * last - tail
    elif boundary == "constant":
        shape = tuple(x.shape[:-1]) + (width,)
        head, tail = _qb.broadcast_to(first, shape), _qb.broadcast_to(last, shape)
    return _qb.concatenate([head, x, tail], axis=-1)


_BOUNDARIES = ("zeros", "even", "odd", "constant", None)


def _detrender(fname, detrend, axis):
    """The segment detrending: none (False/None), 'constant', 'linear' or a callable (which,
    as in SciPy, sees the data axis where the caller's axis was)."""
    from .signal import detrend as _detrend
    if detrend is False or detrend is None:
        return lambda d: d
    if isinstance(detrend, str):
        if detrend not in ("constant", "linear"):
            raise ValueError(f"{fname}: detrend must be False, 'constant', 'linear' or a callable, got {detrend!r}")
        return lambda d: _detrend(d, axis=-1, type=detrend)
    if not callable(detrend):
        raise ValueError(f"{fname}: detrend must be False, 'constant', 'linear' or a callable, got {detrend!r}")
    if axis == -1:
        return detrend
    return lambda d: _qb.moveaxis(detrend(_qb.moveaxis(d, -1, axis)), axis, -1)


def _median_bias(n):
    """The expected ratio of the median to the mean of n chi^2_2 periodograms:
    1 + sum_{k=1}^{(n-1)/2} (1 / (2k + 1) - 1 / (2k))."""
    k = _np.arange(1.0, (n - 1) // 2 + 1)
    return 1.0 + float(_np.sum(1.0 / (2.0 * k + 1.0) - 1.0 / (2.0 * k)))


def _spectral(fname, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, mode,
              boundary=None, padded=False, default_nperseg=256):
    """The shared core of stft (mode 'stft') and csd/welch (mode 'psd'): windowed, detrended
    segments of x (and y), their FFTs, scaled. Returns (freqs, times, result) with result's
    frequency axis at `axis` and the segments along a new last axis."""
    from .._numpy_names import common_inexact
    same = y is None
    x = _qb.asarray(x)
    y = x if same else _qb.asarray(y)
    dtype = common_inexact(x, y)
    x, y = x.astype(dtype), y.astype(dtype)
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension")
    if not isinstance(axis, int) or isinstance(axis, bool) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{fname}: axis must be an int in [-{x.ndim}, {x.ndim}), got {axis!r}")
    if mode == "stft" and boundary not in _BOUNDARIES:
        raise ValueError(f"{fname}: boundary must be one of 'zeros', 'even', 'odd', 'constant' or None, got "
                         f"{boundary!r}")
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"{fname}: scaling must be 'density' or 'spectrum', got {scaling!r}")
    x = _qb.moveaxis(x, axis, -1)
    if not same:
        if y.ndim != x.ndim:
            raise ValueError(f"{fname}: x and y must have the same number of dimensions, got {x.ndim} and {y.ndim}")
        y = _qb.moveaxis(y, axis, -1)
        # The other axes broadcast; the shorter signal is zero-padded to the longer (as SciPy).
        outer = tuple(_qb.broadcast_shapes(tuple(x.shape[:-1]), tuple(y.shape[:-1])))
        length = max(x.shape[-1], y.shape[-1])
        x = _qb.broadcast_to(_qb.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, length - x.shape[-1])]), outer + (length,))
        y = _qb.broadcast_to(_qb.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, length - y.shape[-1])]), outer + (length,))
    n = x.shape[-1]
    if n == 0:
        raise ValueError(f"{fname}: the input is empty along axis {axis}")
    win, nperseg = _window_and_nperseg(fname, window, nperseg, n, default_nperseg)
    nfft = nperseg if nfft is None else _positive_int(fname, "nfft", nfft)
    noverlap, step = _overlap_and_step(fname, nperseg, nfft, noverlap)
    is_complex = _qb.issubdtype(dtype, _qb.complexfloating)
    onesided = bool(return_onesided)
    if onesided and is_complex:
        _warn(f"{fname}: the input is complex, switching to return_onesided=False")
        onesided = False
    if mode == "stft" and boundary is not None:
        x = _extend(x, nperseg // 2, boundary)
        if not same:
            y = _extend(y, nperseg // 2, boundary)
    if padded:
        extra = (-(x.shape[-1] - nperseg) % step) % nperseg
        x = _qb.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
        if not same:
            y = _qb.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, extra)])
    real_dtype = _qb.real(_qb.zeros((), dtype=dtype)).dtype
    win = win.astype(real_dtype)
    if scaling == "density":
        scale = 1.0 / (fs * _qb.sum(win * win))
    else:
        scale = 1.0 / _qb.sum(win) ** 2
    if mode == "stft":
        scale = _qb.sqrt(scale)
    # The segments as one gather: (..., segments, nperseg).
    count = (x.shape[-1] - nperseg) // step + 1
    index = _np.arange(count)[:, None] * step + _np.arange(nperseg)[None, :]
    detrend_fn = _detrender(fname, detrend, axis)

    def spectrum(signal):
        segments = detrend_fn(signal[..., index]) * win
        return _qb.fft.rfft(segments, n=nfft) if onesided else _qb.fft.fft(segments, n=nfft)

    fx = spectrum(x)
    if mode == "stft":
        result = fx * scale
    else:
        fy = fx if same else spectrum(y)
        result = _qb.conj(fx) * fy * scale
        if onesided:  # the negative frequencies' power folded onto the positive ones
            double = _np.full(result.shape[-1], 2.0)
            double[0] = 1.0
            if nfft % 2 == 0:
                double[-1] = 1.0
            result = result * _qb.asarray(double).astype(real_dtype)
    k = _np.arange(nfft // 2 + 1) if onesided else _np.fft.fftfreq(nfft) * nfft
    freqs = _qb.asarray(k / nfft).astype(real_dtype) * fs
    centres = nperseg / 2.0 + _np.arange(count) * step
    if mode == "stft" and boundary is not None:
        centres = centres - nperseg / 2.0
    times = _qb.asarray(centres).astype(real_dtype) / fs
    # (..., segments, freqs) -> frequencies at the caller's axis, segments last.
    result = _qb.moveaxis(_qb.swapaxes(result, -1, -2), -2, axis % (result.ndim - 1))
    return freqs, times, result


# ---- public functions ----------------------------------------------------------------------------

def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap=None, nfft=None, detrend=False,
         return_onesided: bool = True, boundary="zeros", padded: bool = True, axis: int = -1):
    """The short-time Fourier transform, as scipy.signal.stft (its 'spectrum' scaling, 1 /
    sum(window)): returns (f, t, Zxx) with Zxx's frequencies at `axis` and the segment times
    last. boundary extends the signal by nperseg // 2 at both ends ('zeros', 'even', 'odd',
    'constant' or None); padded zero-pads the end to a whole number of steps."""
    return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, "spectrum", axis,
                     "stft", boundary, padded)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1, average: str = "mean"):
    """The cross power spectral density of x and y by Welch's method, as scipy.signal.csd:
    (f, Pxy). y=None gives x's power spectral density (real); for y given, also y = x, the
    result is complex (as JAX, which follows SciPy's csd(x, x.copy())). average: 'mean' or
    'median' (the median of the real and imaginary parts, corrected for its bias)."""
    return _averaged("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis,
                     average)


def _averaged(fname, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average):
    """csd and welch: the segments' cross spectra, averaged."""
    if average not in ("mean", "median"):
        raise ValueError(f"{fname}: average must be 'mean' or 'median', got {average!r}")
    freqs, _, pxy = _spectral(fname, x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
                              axis, "psd")
    if y is None:
        pxy = _qb.real(pxy)
    segments = pxy.shape[-1]
    if segments > 1:
        if average == "mean":
            pxy = _qb.mean(pxy, axis=-1)
        elif _qb.issubdtype(pxy.dtype, _qb.complexfloating):
            bias = _median_bias(segments)
            pxy = (_qb.median(_qb.real(pxy), axis=-1) + 1j * _qb.median(_qb.imag(pxy), axis=-1)) / bias
        else:
            pxy = _qb.median(pxy, axis=-1) / _median_bias(segments)
    else:
        pxy = pxy.reshape(tuple(pxy.shape[:-1]))
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, detrend="constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1, average: str = "mean"):
    """The power spectral density by Welch's method (averaged modified periodograms), as
    scipy.signal.welch: (f, Pxx), real. nperseg defaults to 256 (at most the signal's
    length), noverlap to nperseg // 2; scaling 'density' (V^2/Hz) or 'spectrum' (V^2)."""
    freqs, pxx = _averaged("welch", x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
                           axis, average)
    return freqs, _qb.real(pxx)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None, input_onesided: bool = True,  # noqa: N803
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2):
    """The inverse short-time Fourier transform, as scipy.signal.istft: each segment's inverse
    FFT, times sum(window) (undoing stft's scaling), windowed, overlap-added and divided by the
    summed squared window. Returns (t, x).
    nperseg defaults to what Zxx's frequency axis implies; boundary=True drops the
    nperseg // 2 samples stft's boundary extension added at each end."""
    z = _qb.asarray(Zxx)
    if z.ndim < 2:
        raise ValueError(f"istft: Zxx must have at least two dimensions (frequencies and times), got {z.ndim}")
    for name, ax in (("time_axis", time_axis), ("freq_axis", freq_axis)):
        if not isinstance(ax, int) or isinstance(ax, bool) or not -z.ndim <= ax < z.ndim:
            raise ValueError(f"istft: {name} must be an int in [-{z.ndim}, {z.ndim}), got {ax!r}")
    time_axis, freq_axis = time_axis % z.ndim, freq_axis % z.ndim
    if time_axis == freq_axis:
        raise ValueError("istft: time_axis and freq_axis must differ")
    n_default = 2 * (z.shape[freq_axis] - 1) if input_onesided else z.shape[freq_axis]
    nperseg = n_default if nperseg is None else _positive_int("istft", "nperseg", nperseg)
    if nfft is None:
        nfft = nperseg if (input_onesided and nperseg == n_default + 1) else n_default
    else:
        nfft = _positive_int("istft", "nfft", nfft)
    noverlap, step = _overlap_and_step("istft", nperseg, nfft, noverlap)
    # (outer..., freqs, times)
    if time_axis != z.ndim - 1 or freq_axis != z.ndim - 2:
        outer = [i for i in range(z.ndim) if i not in (time_axis, freq_axis)]
        z = _qb.transpose(z, outer + [freq_axis, time_axis])
    if isinstance(window, (str, tuple)):
        win_np = get_window(window, nperseg)
    else:
        win_np = _np.asarray(window, dtype=_np.float64)
        if win_np.ndim != 1 or win_np.shape[0] != nperseg:
            raise ValueError(f"istft: the window must be 1-D of length nperseg ({nperseg}), got shape "
                             f"{win_np.shape}")
    if input_onesided:
        segments = _qb.fft.irfft(z, n=nfft, axis=-2)
    else:
        segments = _qb.fft.ifft(z, n=nfft, axis=-2)
    real_dtype = _qb.real(segments[..., :1, :1]).dtype
    win = _qb.asarray(win_np).astype(real_dtype)
    # Undo stft's 1 / sum(window) scaling and window again: (outer..., times, nperseg).
    segments = _qb.swapaxes(segments[..., :nperseg, :], -1, -2) * (win * float(_np.sum(win_np)))
    count = segments.shape[-2]
    length = nperseg + (count - 1) * step
    index = (_np.arange(count)[:, None] * step + _np.arange(nperseg)[None, :]).reshape(-1)
    outer_shape = tuple(segments.shape[:-2])
    flat = segments.reshape((-1, count * nperseg))
    x = _qb.zeros((flat.shape[0], length), dtype=flat.dtype).at[:, index].add(flat)
    x = x.reshape(outer_shape + (length,))
    norm = _np.zeros(length)
    _np.add.at(norm, index, _np.tile(win_np * win_np, count))
    if boundary:
        half = nperseg // 2
        x = x[..., half:length - half]
        norm = norm[half:length - half]
    if not _np.all(norm > 1e-10):
        _warn("istft: the window and overlap do not satisfy the NOLA condition; parts of the signal cannot be "
              "recovered")
    x = x / _qb.asarray(_np.where(norm > 1e-10, norm, 1.0)).astype(real_dtype)
    if input_onesided:
        x = _qb.real(x)
    if x.ndim > 1 and time_axis != z.ndim - 1:
        target = time_axis - 1 if freq_axis < time_axis else time_axis
        x = _qb.moveaxis(x, -1, target)
    # The times run along the output's first axis: its samples for a 1-D signal (SciPy and JAX
    # both count x.shape[0], also for batched signals; kept so).
    times = _qb.asarray(_np.arange(x.shape[0], dtype=_np.float64)).astype(real_dtype) / fs
    return times, x



for _public in (stft, istft, welch, csd):
    _public.__module__ = "quabla.scipy.signal"  # (where they are documented and imported from)
