"""qb.nn.initializers: jax.nn.initializers' factories. Each returns an initializer
``init(key, shape, dtype=None)`` drawing from qb.random; fans follow JAX (fan_in =
shape[in_axis] x receptive field, fan_out = shape[out_axis] x receptive field, the
receptive field being the product of the other axes that are not batch axes)."""
from __future__ import annotations

import math

from . import random as _random
from ._package import qb as _qb

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal", "variance_scaling", "glorot_normal",
           "glorot_uniform", "xavier_normal", "xavier_uniform", "he_normal", "he_uniform", "kaiming_normal",
           "kaiming_uniform", "lecun_normal", "lecun_uniform", "orthogonal"]

def _shape(shape):
    return (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)


def zeros(key, shape, dtype=None):
    """An initializer: zeros."""
    return _qb.zeros(_shape(shape), dtype)


def ones(key, shape, dtype=None):
    """An initializer: ones."""
    return _qb.ones(_shape(shape), dtype)


def constant(value, dtype=None):
    def init(key, shape, dtype=dtype):
        return _qb.full(_shape(shape), value, dtype=dtype)
    return init


def uniform(scale=1e-2, dtype=None):
    """U[0, scale): U[0, 1) times scale, as JAX."""
    def init(key, shape, dtype=dtype):
        u = _random.uniform(key, _shape(shape), dtype)
        return u * _qb.asarray(float(scale)).astype(u.dtype)
    return init


def normal(stddev=1e-2, dtype=None):
    """N(0, stddev^2)."""
    def init(key, shape, dtype=dtype):
        return _random.normal(key, _shape(shape), dtype) * stddev
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """stddev times a standard normal truncated to [lower, upper]."""
    def init(key, shape, dtype=dtype):
        return _random.truncated_normal(key, lower, upper, _shape(shape), dtype) * stddev
    return init


def _axes(axes, ndim):
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(a + ndim if a < 0 else a for a in axes)


def _fans(shape, in_axis, out_axis, batch_axis):
    if len(shape) == 0:
        raise ValueError("qb.nn.initializers: variance scaling needs a shape with at least one dimension")
    if len(shape) == 1:  # JAX's convention for vectors: both fans are the length
        return float(shape[0]), float(shape[0])
    ins, outs, batch = _axes(in_axis, len(shape)), _axes(out_axis, len(shape)), _axes(batch_axis, len(shape))
    for a in ins + outs + batch:
        if not 0 <= a < len(shape):
            raise ValueError(f"qb.nn.initializers: axis {a} is out of range for shape {shape}")
    fan_in_size = math.prod(shape[a] for a in ins)
    fan_out_size = math.prod(shape[a] for a in outs)
    receptive = math.prod(d for i, d in enumerate(shape) if i not in ins + outs + batch)
    return float(fan_in_size * receptive), float(fan_out_size * receptive)


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Samples with variance scale / fan (mode 'fan_in', 'fan_out' or 'fan_avg') from a
    'truncated_normal', 'normal' or 'uniform' distribution."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"qb.nn.initializers.variance_scaling: invalid mode {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"qb.nn.initializers.variance_scaling: invalid distribution {distribution!r}")

    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        denom = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0,
                 "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        return _random._scaled_draw(key, shape, dtype, scale / denom, distribution)
    return init


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


xavier_normal, xavier_uniform = glorot_normal, glorot_uniform
kaiming_normal, kaiming_uniform = he_normal, he_uniform


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """scale times a uniformly random matrix with orthonormal rows or columns (the
    column_axis holds the columns; other leading axes are flattened into the rows)."""
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError("qb.nn.initializers.orthogonal: the shape needs at least two dimensions")
        axis = column_axis + len(shape) if column_axis < 0 else column_axis
        n_cols = shape[axis]
        n_rows = math.prod(shape) // n_cols
        q = _random.orthogonal(key, n_rows, (), dtype, m=n_cols) * scale
        rest = tuple(d for i, d in enumerate(shape) if i != axis)
        return _qb.moveaxis(q.reshape(rest + (n_cols,)), -1, axis)
    return init
