"""quabla.scipy.ndimage: map_coordinates, as jax.scipy.ndimage's (interpolation of a grid at
arbitrary points: semi-Lagrangian advection, warping, sampling fields at particles)."""
from __future__ import annotations

import itertools

from .. import _core
from .._package import qb

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "mirror", "wrap", "reflect")


def _fix_index(i, n: int, mode: str):
    """Integer indices i into an axis of n samples under the boundary mode (constant mode
    keeps them; its out-of-range corners are masked by the caller)."""
    if mode == "nearest":
        return qb.clip(i, 0, n - 1)
    if mode == "wrap":  # SciPy's grid-wrap: periodic with period n
        return qb.remainder(i, n)
    if mode == "mirror":  # reflected about the edge samples: period 2 (n - 1)
        if n == 1:
            return qb.zeros_like(i)
        p = qb.remainder(i, 2 * (n - 1))
        return qb.where(p >= n, 2 * (n - 1) - p, p)
    if mode == "reflect":  # reflected about the edges: period 2 n
        p = qb.remainder(i, 2 * n)
        return qb.where(p >= n, 2 * n - 1 - p, p)
    return i


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):  # noqa: A002 (SciPy's name)
    """input (N-d) interpolated at coordinates (a sequence of N arrays of one shape, the
    fractional indices along each axis): order 0 (the nearest sample, halves rounded away from
    zero) or 1 (multilinear). Points outside the grid follow mode: 'constant' (cval
    beyond the samples: SciPy's grid-constant), 'nearest', 'mirror', 'wrap' (SciPy's
    grid-wrap) or 'reflect', as jax.scipy.ndimage.map_coordinates. Differentiable in input
    and (order 1) in the coordinates."""
    x = input if isinstance(input, _core.Array) else qb.asarray(input)
    if x.ndim == 0:
        raise ValueError("map_coordinates: input must have at least one dimension, got a 0-d array")
    if isinstance(coordinates, _core.Array):
        if coordinates.ndim == 0:
            raise ValueError("map_coordinates: coordinates must be a sequence of arrays, one per input axis, "
                             "got a 0-d array")
        coordinates = [coordinates[i] for i in range(coordinates.shape[0])]
    coords = [c if isinstance(c, _core.Array) else qb.asarray(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise ValueError(f"map_coordinates: needs one coordinate array per input axis ({x.ndim}), got {len(coords)}")
    if order not in (0, 1):
        raise NotImplementedError(f"map_coordinates: order must be 0 or 1 (as jax.scipy.ndimage), got {order!r}")
    if mode not in _MODES:
        raise ValueError(f"map_coordinates: mode must be one of {_MODES}, got {mode!r}")
    shape = tuple(coords[0].shape) if coords else ()
    if any(tuple(c.shape) != shape for c in coords):
        raise ValueError(f"map_coordinates: the coordinate arrays must share one shape, got "
                         f"{[tuple(c.shape) for c in coords]}")
    if x.dtype.kind not in "fc":
        x = x.astype(qb.default_dtype())
    coords = [c.astype(x.dtype if x.dtype.kind == "f" else qb.default_dtype()) if c.dtype.kind != "f" else c
              for c in coords]
    # per axis: the (index, weight) pairs of the corners around each point
    axes = []
    for c in coords:
        if order == 0:
            axes.append([(qb.lax.round(c).astype(qb.int64), None)])  # halves away from zero, as JAX's
        else:
            lo = qb.floor(c)
            w = c - lo
            lo = lo.astype(qb.int64)
            axes.append([(lo, 1.0 - w), (lo + 1, w)])
    flat = qb.reshape(x, (-1,))
    strides = [1] * x.ndim
    for k in range(x.ndim - 2, -1, -1):
        strides[k] = strides[k + 1] * x.shape[k + 1]
    out = None
    for corner in itertools.product(*axes):
        valid = None
        linear = None
        weight = None
        for k, (i, w) in enumerate(corner):
            n = x.shape[k]
            if mode == "constant":
                inside = (i >= 0) & (i < n)
                valid = inside if valid is None else valid & inside
                i = qb.clip(i, 0, n - 1)
            else:
                i = _fix_index(i, n, mode)
            linear = i * strides[k] if linear is None else linear + i * strides[k]
            if w is not None:
                weight = w if weight is None else weight * w
        value = qb.take(flat, qb.reshape(linear, (-1,)), axis=0).reshape(shape) if x.size else \
            qb.zeros(shape, dtype=x.dtype)
        if valid is not None:
            value = qb.where(valid, value, qb.asarray(cval).astype(x.dtype))
        term = value if weight is None else value * weight
        out = term if out is None else out + term
    return out
