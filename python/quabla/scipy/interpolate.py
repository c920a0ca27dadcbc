"""jax.scipy.interpolate.RegularGridInterpolator: linear or nearest interpolation of values
on a rectilinear grid, as a composition of the core ops (searchsorted, gathers and a
weighted sum over the 2^d corners), so it jits, vmaps and differentiates with respect to
the points and the values."""
from __future__ import annotations

import itertools
import math

from .._package import qb as _qb

__all__ = ["RegularGridInterpolator"]


class RegularGridInterpolator:
    """RegularGridInterpolator(points, values, method='linear', bounds_error=False,
    fill_value=nan): points is a tuple of d strictly increasing 1-D grids; values has shape
    (len(points[0]), ..., len(points[d-1]), ...) (trailing axes are carried along). Calling
    it on xi of shape (..., d) interpolates; outside the grid it gives fill_value, or
    extrapolates linearly when fill_value is None. bounds_error=True is not supported (as in
    JAX)."""

    def __init__(self, points, values, method: str = "linear", bounds_error: bool = False, fill_value=math.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', got {method!r}")
        if bounds_error:
            raise NotImplementedError("RegularGridInterpolator: bounds_error=True is not supported (as in JAX); "
                                      "check the points yourself or use fill_value")
        self.grid = tuple(_qb.asarray(p) for p in points)
        values = _qb.asarray(values)
        from .._numpy_extra import _no_complex
        _no_complex("qb.scipy.interpolate.RegularGridInterpolator", values, *self.grid,
                    hint="interpolate the real and imaginary parts of the values (qb.real(v), qb.imag(v)) separately")
        if values.dtype not in (_qb.float32, _qb.float64):
            values = values.astype(_qb.default_dtype())
        self.values = values
        if len(self.grid) > values.ndim:
            raise ValueError(f"RegularGridInterpolator: {len(self.grid)} grids for values of rank {values.ndim}")
        for i, g in enumerate(self.grid):
            if g.ndim != 1 or g.shape[0] < 1:
                raise ValueError(f"RegularGridInterpolator: points[{i}] must be a non-empty 1-D array, got shape "
                                 f"{tuple(g.shape)}")
            if g.shape[0] != values.shape[i]:
                raise ValueError(f"RegularGridInterpolator: points[{i}] has {g.shape[0]} entries but values has "
                                 f"{values.shape[i]} along axis {i}")
            if not g._is_tracer and g.shape[0] > 1 and not bool(_qb.all(g[1:] > g[:-1]).item()):
                raise ValueError(f"RegularGridInterpolator: points[{i}] must be strictly increasing")
        self.method, self.fill_value = method, fill_value

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', got {method!r}")
        d = len(self.grid)
        from .._numpy_extra import _no_complex
        _no_complex("qb.scipy.interpolate.RegularGridInterpolator", xi, hint="the points xi must be real")
        if isinstance(xi, tuple):  # SciPy's tuple of coordinate arrays: stacked on a last axis
            xi = _qb.stack([_qb.asarray(c).astype(self.values.dtype) for c in xi], axis=-1)
        xi = _qb.asarray(xi).astype(self.values.dtype)
        if d == 1 and (xi.ndim == 0 or xi.shape[-1] != 1):
            xi = xi[..., None]  # points of a 1-d grid may come without their coordinate axis
        if xi.shape[-1] != d:
            raise ValueError(f"RegularGridInterpolator: points of dimension {xi.shape[-1]} for a {d}-dimensional "
                             "grid (the last axis of xi holds the coordinates)")
        batch = tuple(xi.shape[:-1])
        flat = xi.reshape((-1, d))
        lows, weights, outside = [], [], _qb.zeros((flat.shape[0],), _qb.bool_)
        grid = tuple(g.astype(self.values.dtype) for g in self.grid)
        nan_point = _qb.any(_qb.isnan(flat), axis=-1)
        for k, g in enumerate(grid):
            x = flat[:, k]
            n = g.shape[0]
            i = _qb.clip(_qb.searchsorted(g, x, side="right") - 1, 0, max(n - 2, 0))
            lo = _qb.take(g, i)
            hi = _qb.take(g, _qb.minimum(i + 1, n - 1))
            span = _qb.where(hi > lo, hi - lo, _qb.ones_like(lo))
            t = _qb.where(hi > lo, (x - lo) / span, _qb.zeros_like(x))
            outside = outside | (x < g[0]) | (x > g[-1])
            lows.append(i)
            weights.append(t)
        tail = tuple(self.values.shape[d:])
        if method == "nearest":
            idx = tuple(_qb.where(t <= 0.5, i, _qb.minimum(i + 1, g.shape[0] - 1))
                        for i, t, g in zip(lows, weights, grid))
            out = self.values[idx]
        else:
            out = None
            for corner in itertools.product((0, 1), repeat=d):
                idx = tuple(_qb.minimum(i + c, g.shape[0] - 1) for i, c, g in zip(lows, corner, grid))
                w = _qb.ones_like(weights[0]) if d else None
                for t, c in zip(weights, corner):
                    w = w * (t if c else 1.0 - t)
                term = self.values[idx] * w.reshape(w.shape + (1,) * len(tail))
                out = term if out is None else out + term
        if self.fill_value is not None:
            mask = outside.reshape(outside.shape + (1,) * len(tail))
            out = _qb.where(mask, _qb.full_like(out, self.fill_value), out)
        nan_mask = nan_point.reshape(nan_point.shape + (1,) * len(tail))
        out = _qb.where(nan_mask, _qb.full_like(out, math.nan), out)  # a NaN coordinate gives NaN, as SciPy
        return out.reshape(batch + tail)
