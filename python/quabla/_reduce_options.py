"""The dtype=, out=, where= and initial= options of the reductions (sum, prod, max, min,
amax, amin, any, all, mean, var, std), as NumPy and jax.numpy take them: composed around
the plain reduction, which the core calls directly when none is given."""
from __future__ import annotations

from . import _core

_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}
_PLAIN = {"amax": "max", "amin": "min"}


def _combine(name, result, initial):
    from ._numpy_extra import _cast
    initial = _cast(name, _core.asarray(initial), result.dtype, "initial=")
    if name == "sum":
        return result + initial
    if name == "prod":
        return result * initial
    if name == "max":
        return _core.maximum(result, initial)
    if name == "min":
        return _core.minimum(result, initial)
    return _core.logical_or(result, initial) if name == "any" else _core.logical_and(result, initial)


def _mask(where, x, name):
    w = _core.asarray(where)
    if w.dtype != _core.bool_:
        raise TypeError(f"{name}: where= must be a bool array, got {w.dtype.name}")
    return _core.broadcast_to(w, tuple(x.shape))


def reduce(name, x, axis, keepdims, dtype, out, where, initial, ddof):
    if out is not None:
        raise TypeError(f"{name}: out= is not supported: Quabla arrays are immutable; use the returned array")
    name = _PLAIN.get(name, name)
    x = _core.asarray(x)
    if dtype is not None:
        x = x.astype(dtype)
    if name in ("mean", "var", "std"):
        return _moments(name, x, axis, keepdims, where, 0.0 if ddof is None else float(ddof))
    if where is not None:
        w = _mask(where, x, name)
        if name in _IDENTITY:
            fill = _IDENTITY[name]
        elif initial is not None:
            fill = initial
        else:
            raise ValueError(f"{name}: a where= mask needs initial= (the reduction has no identity), as in jax.numpy")
        x = _core.where(w, x, _core.full_like(x, fill))
    if initial is not None and name in ("max", "min") and 0 in tuple(x.shape):
        # An empty array reduces to initial alone (NumPy's and jax.numpy's); the plain max and
        # min refuse it, as they have no identity. sum gives the result's shape.
        shape = tuple(_core.sum(x, axis=axis, keepdims=keepdims).shape)
        from ._numpy_extra import _cast
        return _core.broadcast_to(_cast(name, _core.asarray(initial), x.dtype, "initial="), shape)
    result = getattr(_core, name)(x, axis=axis, keepdims=keepdims)
    if dtype is not None and result.dtype != x.dtype:  # integer sums widen unless dtype= says
        result = result.astype(x.dtype)
    return result if initial is None else _combine(name, result, initial)


def _moments(name, x, axis, keepdims, where, ddof):
    if where is None:
        if name == "mean":
            return _core.mean(x, axis=axis, keepdims=keepdims)
        return getattr(_core, name)(x, axis=axis, ddof=ddof, keepdims=keepdims)
    from ._numpy_extra import _COMPLEX, _real_dtype
    if x.dtype not in (_core.float32, _core.float64) and x.dtype not in _COMPLEX:
        x = x.astype(_core.float64 if _core.default_dtype() == _core.float64 else _core.float32)
    w = _mask(where, x, name)
    zero = _core.zeros_like(x)
    count = _core.sum(w.astype(_real_dtype(x.dtype)), axis=axis, keepdims=True)
    mean = _core.sum(_core.where(w, x, zero), axis=axis, keepdims=True) / count
    if name == "mean":
        return mean if keepdims else _squeeze(mean, axis, x.ndim)
    dev = _core.where(w, x - mean, zero)
    sq = _core._real(dev * _core._conj(dev)) if x.dtype in _COMPLEX else dev * dev  # |dev|^2: var is real
    var = _core.sum(sq, axis=axis, keepdims=True) / (count - ddof)
    out = _core.sqrt(var) if name == "std" else var
    return out if keepdims else _squeeze(out, axis, x.ndim)


def _squeeze(y, axis, ndim):
    if axis is None:
        return _core.reshape(y, ())
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return _core.squeeze(y, axis=tuple(a % ndim for a in axes)) if ndim else y
