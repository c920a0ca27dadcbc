"""quabla.image: resizing arrays on a grid, as jax.image (downsampling and upsampling fields
between resolutions in operator learning and multigrid-style training)."""
from __future__ import annotations

import math
import operator

from . import _core
from ._package import qb

__all__ = ["resize", "scale_and_translate", "ResizeMethod"]


class ResizeMethod:
    """The method names resize takes (jax.image.ResizeMethod's)."""
    NEAREST = "nearest"
    LINEAR = "linear"
    CUBIC = "cubic"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"


_ALIASES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
            "triangle": "linear", "cubic": "cubic", "bicubic": "cubic", "tricubic": "cubic",
            "lanczos3": "lanczos3", "lanczos5": "lanczos5"}


def _method(method, name):
    m = getattr(method, "value", method)
    m = _ALIASES.get(str(m).lower()) if isinstance(m, str) else None
    if m is None:
        raise ValueError(f"{name}: unknown method {method!r}; expected one of {sorted(set(_ALIASES))}")
    return m


def _shape(shape, x, name):
    """shape as a tuple of non-negative ints of the image's rank (a float or traced entry is
    refused, as jax.image does, never truncated), and no empty input axis resized to a
    non-empty one (there is nothing to interpolate from)."""
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a sequence of ints, got {shape!r}") from None
    out = []
    for s in shape:
        if isinstance(s, bool) or (isinstance(s, float) or getattr(s, "dtype", None) is not None
                                   and getattr(s.dtype, "kind", "i") not in "iu"):
            raise TypeError(f"{name}: shape must be a sequence of ints, got {shape!r}")
        try:
            out.append(operator.index(s))
        except TypeError:
            raise TypeError(f"{name}: shape must be a sequence of ints, got {shape!r}") from None
    shape = tuple(out)
    if len(shape) != x.ndim:
        raise ValueError(f"{name}: shape {shape} must have the image's rank {x.ndim} (got shape "
                         f"{tuple(x.shape)})")
    if any(s < 0 for s in shape):
        raise ValueError(f"{name}: negative output size in {shape}")
    for axis, (n_in, n_out) in enumerate(zip(x.shape, shape)):
        if n_in == 0 and n_out > 0:
            raise ValueError(f"{name}: axis {axis} of the image is empty (shape {tuple(x.shape)}) and cannot be "
                             f"resized to {n_out} entries")
    return shape


def _kernel(method):
    """The interpolation kernel of a method, a function of |distance| in input samples."""
    if method == "linear":
        return lambda x: qb.maximum(0.0, 1.0 - x)
    if method == "cubic":  # Keys' cubic convolution with a = -0.5
        return lambda x: qb.where(x < 1.0, (1.5 * x - 2.5) * x * x + 1.0,
                                  qb.where(x < 2.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, 0.0))
    radius = 3.0 if method == "lanczos3" else 5.0
    return lambda x: qb.where(x > radius, 0.0, qb.sinc(x) * qb.sinc(x / radius))


def _weights(in_size: int, out_size: int, scale, translation, kernel, antialias: bool, dtype):
    """The (in_size, out_size) matrix taking one axis of samples to the resized axis: output
    sample j sits at input coordinate (j + 0.5 - translation) / scale - 0.5; its weights are
    the kernel (widened by 1/scale when shrinking with antialias) normalised to sum 1, and
    zero for output samples outside the input's extent."""
    scale = qb.asarray(scale).astype(dtype)
    translation = qb.asarray(translation).astype(dtype)
    inv = 1.0 / scale
    kernel_scale = qb.maximum(inv, 1.0) if antialias else qb.ones_like(inv)
    sample = (qb.arange(out_size, dtype=dtype) + 0.5) * inv - translation * inv - 0.5
    x = qb.abs(sample[None, :] - qb.arange(in_size, dtype=dtype)[:, None]) / kernel_scale
    w = kernel(x)
    total = qb.sum(w, axis=0, keepdims=True)
    eps = float(qb.finfo(dtype).eps)
    w = qb.where(qb.abs(total) > 1000.0 * eps, w / qb.where(total != 0, total, 1.0), 0.0)
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return qb.where(inside[None, :], w, 0.0)


def _apply_axes(x, axes, out_shape, scales, translations, method, antialias):
    kernel = _kernel(method)
    for axis, size, s, t in zip(axes, out_shape, scales, translations):
        w = _weights(x.shape[axis], size, s, t, kernel, antialias, x.dtype if x.dtype.kind == "f" else qb.default_dtype())
        if x.dtype.kind == "c":
            w = w.astype(x.dtype)
        moved = qb.moveaxis(x, axis, -1)
        x = qb.moveaxis(qb.matmul(moved, w.astype(moved.dtype) if moved.dtype.kind == "f" else w), -1, axis)
    return x


def scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias: bool = True,
                        precision=None):
    """image resampled along spatial_dims to the sizes in shape (one per spatial dim), each
    output coordinate mapped as (x + 0.5 - translation) / scale - 0.5 into the input, as
    jax.image.scale_and_translate (methods linear, cubic, lanczos3, lanczos5)."""
    x = image if isinstance(image, _core.Array) else qb.asarray(image)
    m = _method(method, "image.scale_and_translate")
    if m == "nearest":
        raise ValueError("image.scale_and_translate: the nearest method is not supported (as in JAX); use resize")
    shape = _shape(shape, x, "image.scale_and_translate")
    dims = []
    for d in spatial_dims:
        d = operator.index(d)
        if not -x.ndim <= d < x.ndim:
            raise ValueError(f"image.scale_and_translate: spatial dimension {d} is out of bounds for an image of "
                             f"{x.ndim} dimensions")
        dims.append(d % x.ndim)
    if len(set(dims)) != len(dims):
        raise ValueError(f"image.scale_and_translate: spatial_dims must be distinct, got {tuple(spatial_dims)}")
    if x.dtype.kind not in "fc":
        x = x.astype(qb.default_dtype())
    sizes = [shape[d] for d in dims]
    scale = qb.asarray(scale)
    translation = qb.asarray(translation)
    for what, v in (("scale", scale), ("translation", translation)):
        if v.ndim > 1 or (v.ndim == 1 and v.shape[0] != len(dims)):
            raise ValueError(f"image.scale_and_translate: {what} must be a scalar or hold one entry per spatial "
                             f"dimension ({len(dims)}), got shape {tuple(v.shape)}")
    scales = [scale[i] for i in range(len(dims))] if scale.ndim else [scale] * len(dims)
    trans = [translation[i] for i in range(len(dims))] if translation.ndim else [translation] * len(dims)
    return _apply_axes(x, dims, sizes, scales, trans, m, antialias)


def resize(image, shape, method, antialias: bool = True, precision=None):
    """image resized to shape (same rank) by method: "nearest", "linear" (bilinear,
    trilinear), "cubic" (Keys, a = -0.5), "lanczos3" or "lanczos5", each axis whose size
    changes resampled with the half-pixel-centre convention and, when shrinking with
    antialias, the kernel widened to avoid aliasing: jax.image.resize's. Differentiable in
    image (every method but nearest is a linear map per axis)."""
    x = image if isinstance(image, _core.Array) else qb.asarray(image)
    m = _method(method, "image.resize")
    shape = _shape(shape, x, "image.resize")
    if m == "nearest":
        for axis, (n_in, n_out) in enumerate(zip(x.shape, shape)):
            if n_in != n_out:
                idx = [math.floor((j + 0.5) * n_in / n_out) for j in range(n_out)]
                x = qb.take(x, qb.asarray(idx, dtype=qb.int32), axis=axis)
        return x
    if x.dtype.kind not in "fc":
        x = x.astype(qb.default_dtype())
    axes = [a for a in range(x.ndim) if x.shape[a] != shape[a]]
    scales = [shape[a] / x.shape[a] if x.shape[a] else 1.0 for a in axes]
    return _apply_axes(x, axes, [shape[a] for a in axes], scales, [0.0] * len(axes), m, antialias)
