"""qb.nn: the activation functions and helpers of jax.nn, with its names and semantics
(compositions of the core ops: differentiable, batchable, jittable)."""
from __future__ import annotations

from ._core import relu, sigmoid, softplus, silu, gelu, logsumexp, softmax, log_softmax, tanh  # noqa: F401
from ._numpy_more import _float as _f
from ._package import qb as _qb

__all__ = ["relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish", "log_sigmoid", "leaky_relu",
           "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "elu", "celu", "selu", "gelu", "glu",
           "logsumexp", "log_softmax", "softmax", "standardize", "one_hot", "mish", "squareplus", "tanh"]

swish = silu


def relu6(x):
    """min(max(x, 0), 6)."""
    return _qb.clip(_f(x), 0.0, 6.0)


def soft_sign(x):
    """x / (|x| + 1)."""
    x = _f(x)
    return x / (_qb.abs(x) + 1.0)


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    return -softplus(-_f(x))


def leaky_relu(x, negative_slope: float = 1e-2):
    """x where x >= 0, negative_slope * x elsewhere."""
    x = _f(x)
    return _qb.where(x >= 0, x, negative_slope * x)


def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(_f(x) + 3.0) / 6.0


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    x = _f(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def hard_tanh(x):
    """x clipped to [-1, 1]."""
    return _qb.clip(_f(x), -1.0, 1.0)


def elu(x, alpha: float = 1.0):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere (the exp never overflows)."""
    x = _f(x)
    safe = _qb.where(x > 0, _qb.zeros_like(x), x)  # (a where, not minimum: the derivative at 0 is exp(0))
    return _qb.where(x > 0, x, alpha * _qb.expm1(safe))


def celu(x, alpha: float = 1.0):
    """max(x, 0) + alpha * min(0, exp(x / alpha) - 1)."""
    x = _f(x)
    safe = _qb.where(x > 0, _qb.zeros_like(x), x)
    return _qb.where(x > 0, x, alpha * _qb.expm1(safe / alpha))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def glu(x, axis: int = -1):
    """The gated linear unit: the first half of axis times the sigmoid of the second half."""
    x = _f(x)
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"glu: axis {axis} has odd length {n}; it must split into two halves")
    a, b = _qb.split(x, 2, axis=axis)
    return a * sigmoid(b)


def standardize(x, axis=-1, mean=None, variance=None, epsilon: float = 1e-5):
    """(x - mean) / sqrt(variance + epsilon), mean and variance along axis unless given."""
    x = _f(x)
    if mean is None:
        mean = _qb.mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = _qb.mean(_qb.square(x - mean), axis=axis, keepdims=True)
    return (x - mean) / _qb.sqrt(variance + epsilon)


def one_hot(x, num_classes: int, dtype=None, axis: int = -1):
    """One-hot encoding of integer x along a new axis of num_classes (all zeros for an
    out-of-range index)."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be a non-negative int, got {num_classes!r}")
    x = x if isinstance(x, _qb.Array) else _qb.asarray(x)
    hot = _qb.expand_dims(x, -1) == _qb.arange(num_classes)
    out = hot.astype(dtype or _qb.float64)
    if axis != -1:
        out = _qb.moveaxis(out, -1, axis)
    return out


def mish(x):
    """x * tanh(softplus(x))."""
    x = _f(x)
    return x * _qb.tanh(softplus(x))


def squareplus(x, b: float = 4.0):
    """(x + sqrt(x^2 + b)) / 2."""
    x = _f(x)
    return (x + _qb.sqrt(x * x + b)) / 2.0

