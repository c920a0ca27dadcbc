"""qb.nn: the activation functions and helpers of jax.nn, with its names and semantics
(compositions of the core ops: differentiable, batchable, jittable)."""
from __future__ import annotations

import math as _math

from . import _core
from ._core import relu, sigmoid, softplus, silu, gelu, tanh  # noqa: F401
from ._numpy_more import _float as _f
from ._package import qb as _qb
from . import _initializers as initializers  # noqa: F401  (jax.nn.initializers)

__all__ = ["relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish", "log_sigmoid", "leaky_relu",
           "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "elu", "celu", "selu", "gelu", "glu",
           "logsumexp", "log_softmax", "softmax", "standardize", "sparse_plus", "sparse_sigmoid",
           "dot_product_attention", "one_hot", "mish", "squareplus", "tanh", "identity", "log1mexp", "logmeanexp"]

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
    """x clipped to [-1, 1] (JAX's: the slope is 1 at the bounds themselves)."""
    x = _f(x)
    return _qb.where(x > 1.0, _qb.ones_like(x), _qb.where(x < -1.0, -_qb.ones_like(x), x))


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
    if x.ndim == 0:
        raise ValueError("glu: x must have at least one dimension (the axis to split in halves)")
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"glu: axis {axis} has odd length {n}; it must split into two halves")
    a, b = _qb.split(x, 2, axis=axis)
    return a * sigmoid(b)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
    """log(sum(b * exp(a))) over axis without overflow, as jax.nn.logsumexp: b weights the
    terms; where masks them out; with return_sign, (log|s|, sign(s)), else NaN where the
    weighted sum s is negative."""
    if b is None and not return_sign and where is None:
        return _core.logsumexp(a, axis=axis, keepdims=keepdims)
    a = _f(a)
    axes = tuple(range(a.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    b = _qb.ones_like(a) if b is None else _qb.broadcast_to(_qb.asarray(b).astype(a.dtype), tuple(a.shape))
    if where is not None:
        b = _qb.where(_qb.broadcast_to(_qb.asarray(where), tuple(a.shape)), b, _qb.zeros_like(b))
    live = b != 0
    # Masked and zero-weight terms become -inf before exp, so no inf of theirs reaches a gradient.
    a = _qb.where(live, a, _qb.full_like(a, -_math.inf))
    m = _qb.stop_gradient(_qb.max(a, axis=axes, keepdims=True))
    m = _qb.where(_qb.isfinite(m), m, _qb.zeros_like(m))
    s = _qb.sum(_qb.where(live, b * _qb.exp(a - m), _qb.zeros_like(a)), axis=axes, keepdims=True)
    out = _qb.log(_qb.abs(s)) + m
    sign = _qb.sign(s)
    if not keepdims:
        out, sign = _qb.squeeze(out, axis=axes), _qb.squeeze(sign, axis=axes)
    if return_sign:
        return out, sign
    return _qb.where(sign < 0, _qb.full_like(out, _math.nan), out)


def identity(x):
    """The identity activation: x unchanged (as an array; like jax.nn.identity, a list or tuple
    is refused)."""
    if isinstance(x, (list, tuple)):
        raise TypeError(f"identity requires an array or scalar argument, got {type(x).__name__}")
    return x if isinstance(x, _qb.Array) else _qb.asarray(x)


def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0 without cancellation (Maechler's split: log(-expm1(-x)) up to
    log 2, log1p(-exp(-x)) above); -inf at 0, NaN for x < 0."""
    x = _f(x)
    small = x < _math.log(2.0)
    xs = _qb.where(small, x, _qb.ones_like(x))  # each branch on arguments it is accurate for
    xl = _qb.where(small, _qb.ones_like(x), x)
    return _qb.where(small, _qb.log(-_qb.expm1(-xs)), _qb.log1p(-_qb.exp(-xl)))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
    """log(mean(exp(x))) over axis without overflow: logsumexp(x) - log(n), n the number of
    entries reduced (those where `where` is True); NaN where none is."""
    x = _f(x)
    axes = tuple(range(x.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    lse = logsumexp(x, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        count = 1
        for ax in axes:
            count *= x.shape[ax]
        return lse - (_math.log(count) if count else -_math.inf)
    mask = _qb.broadcast_to(_qb.asarray(where), tuple(x.shape)).astype(x.dtype)
    count = _qb.sum(mask, axis=axes, keepdims=keepdims)
    return lse - _qb.log(count)


def _softmax_parts(x, axis, where, name):
    x = _f(x)
    if where is None:
        return x, None, axis
    mask = _qb.broadcast_to(_qb.asarray(where), tuple(x.shape))
    if mask.dtype != _qb.bool_:
        raise TypeError(f"{name}: where= must be a bool array, got {mask.dtype}")
    return x, mask, axis


def softmax(x, axis=-1, where=None, initial=None):
    """exp(x) / sum(exp(x)) along axis (an int, a tuple, or None for all); entries where
    `where` is False are left out and give 0."""
    if where is None and isinstance(axis, int):
        return _core.softmax(x, axis)
    x, mask, axis = _softmax_parts(x, axis, where, "softmax")
    if mask is not None:  # masked logits out before exp (an inf there would poison gradients)
        x = _qb.where(mask, x, _qb.full_like(x, -_math.inf))
    lse = logsumexp(x, axis=axis, keepdims=True, where=mask)
    out = _qb.exp(x - lse)
    return out if mask is None else _qb.where(mask, out, _qb.zeros_like(out))


def log_softmax(x, axis=-1, where=None, initial=None):
    """x - logsumexp(x) along axis (an int, a tuple, or None for all); entries where `where`
    is False give -inf."""
    if where is None and isinstance(axis, int):
        return _core.log_softmax(x, axis)
    x, mask, axis = _softmax_parts(x, axis, where, "log_softmax")
    out = x - logsumexp(x, axis=axis, keepdims=True, where=mask)
    return out if mask is None else _qb.where(mask, out, _qb.full_like(out, -_math.inf))


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



def sparse_plus(x):
    """0 below -1, (x + 1)^2 / 4 between -1 and 1, x above: a piecewise-quadratic softplus."""
    x = _f(x)
    return _qb.where(x <= -1.0, _qb.zeros_like(x), _qb.where(x >= 1.0, x, 0.25 * (x + 1.0) ** 2))


def sparse_sigmoid(x):
    """clip((x + 1) / 2, 0, 1): sparse_plus's derivative."""
    return _qb.clip(0.5 * (_f(x) + 1.0), 0.0, 1.0)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal: bool = False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """Scaled dot-product attention, as jax.nn.dot_product_attention: query (B, T, N, H), key
    and value (B, S, K, H) with N a multiple of K (grouped heads), or the same without B;
    softmax(q k^T * scale + bias, masked) v, scale 1/sqrt(H) by default."""
    for name, v in (("query_seq_lengths", query_seq_lengths), ("key_value_seq_lengths", key_value_seq_lengths),
                    ("local_window_size", local_window_size)):
        if v is not None:
            raise NotImplementedError(f"dot_product_attention: {name} is not supported; pass a mask instead")
    q, k, v = _f(query), _f(key), _f(value)
    batched = q.ndim == 4
    if not batched:
        if q.ndim != 3:
            raise ValueError(f"dot_product_attention: query must have shape (B, T, N, H) or (T, N, H), got "
                             f"{tuple(q.shape)}")
        q, k, v = q[None], k[None], v[None]
    if k.ndim != 4 or v.shape != k.shape or k.shape[-1] != q.shape[-1] or k.shape[0] != q.shape[0]:
        raise ValueError(f"dot_product_attention: key and value must have shape (B, S, K, H) matching query "
                         f"{tuple(q.shape)}, got {tuple(k.shape)} and {tuple(v.shape)}")
    heads, kv_heads = q.shape[2], k.shape[2]
    if heads % kv_heads:
        raise ValueError(f"dot_product_attention: {heads} query heads are not a multiple of {kv_heads} key heads")
    if kv_heads != heads:
        k = _qb.repeat(k, heads // kv_heads, axis=2)
        v = _qb.repeat(v, heads // kv_heads, axis=2)
    s = (1.0 / _math.sqrt(q.shape[-1])) if scale is None else float(scale)
    logits = _qb.einsum("btnh,bsnh->bnts", q, k) * s
    if bias is not None:  # (B, N, T, S) or broadcastable to it ((N, T, S) without a batch)
        logits = logits + _qb.asarray(bias).astype(logits.dtype)
    keep = None
    if mask is not None:
        keep = _qb.broadcast_to(_qb.asarray(mask), tuple(logits.shape))
    if is_causal:
        t, n = logits.shape[-2], logits.shape[-1]
        causal = _qb.arange(t)[:, None] >= _qb.arange(n)[None, :]
        keep = causal if keep is None else keep & causal
    if keep is not None:
        lowest = -3.4028234663852886e38 if logits.dtype == _qb.float32 else -1.7976931348623157e308
        logits = _qb.where(keep, logits, _qb.full_like(logits, lowest))
    probs = softmax(logits, axis=-1)
    out = _qb.einsum("bnts,bsnh->btnh", probs, v)
    return out if batched else out[0]
