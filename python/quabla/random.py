"""Keyed, splittable, reproducible random numbers (API.md §7).

The generator is Threefry-2x32 with 20 rounds (the counter-based generator JAX uses; our
C++ implementation passes Random123's known-answer vectors). A key is two 32-bit words;
sample i of a draw is a function of (key, i) only, so results do not depend on the thread
count or on how a draw is split, and `split`/`fold_in` derive keys in counter domains that
never collide with samples. Samples: uniform floats take the top 24 (float32) or 52
(float64) bits of a block; normals use Box-Muller on one block (computed in double);
truncated normals use the inverse CDF. Bits are identical everywhere; float results go
through libm's log/cos/erf, so they match across platforms to within libm's rounding.

Keys are small immutable Python objects (hashable, so a key passed to a jitted function is
a static argument). Initializers follow JAX's variance-scaling definitions and fans
(fan_in = shape[-2] x receptive field, fan_out = shape[-1] x receptive field).
"""
from __future__ import annotations

import math
import struct
from typing import Sequence, Tuple

from . import _core

__all__ = ["Key", "key", "split", "fold_in", "uniform", "normal", "truncated_normal", "bernoulli",
           "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal"]


class Key:
    """A random key: two 32-bit words. Immutable and hashable."""

    __slots__ = ("_words",)

    def __init__(self, words: Tuple[int, int]):
        self._words = (int(words[0]) & 0xFFFFFFFF, int(words[1]) & 0xFFFFFFFF)

    @property
    def words(self) -> Tuple[int, int]:
        return self._words

    def __eq__(self, other):
        return isinstance(other, Key) and other._words == self._words

    def __hash__(self):
        return hash(("qb.random.Key", self._words))

    def __repr__(self):
        return f"Key({self._words[0]:#010x}, {self._words[1]:#010x})"


def _check_key(k, fname) -> Tuple[int, int]:
    if not isinstance(k, Key):
        raise TypeError(f"qb.random.{fname}: expected a key from qb.random.key(seed), got {type(k).__name__}")
    return k.words


def key(seed: int) -> Key:
    """A key from an integer seed (any int that fits in 64 bits, negative ones wrap)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"qb.random.key: seed must be an int, got {type(seed).__name__}")
    return Key(_core.random_key(seed & 0xFFFFFFFFFFFFFFFF))


def split(k: Key, num: int = 2):
    """`num` new keys, independent of each other and of k's own samples (a list)."""
    w = _check_key(k, "split")
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ValueError(f"qb.random.split: num must be a positive int, got {num!r}")
    return [Key(words) for words in _core.random_split(w[0], w[1], num)]


def fold_in(k: Key, data: int) -> Key:
    """A new key determined by k and an integer (e.g. a step or a process index)."""
    w = _check_key(k, "fold_in")
    if isinstance(data, bool) or not isinstance(data, int):
        raise TypeError(f"qb.random.fold_in: data must be an int, got {type(data).__name__}")
    return Key(_core.random_fold_in(w[0], w[1], data & 0xFFFFFFFF))


def uniform(k: Key, shape=(), dtype=None, minval: float = 0.0, maxval: float = 1.0):
    """Uniform samples in [minval, maxval)."""
    w = _check_key(k, "uniform")
    if not minval < maxval:
        raise ValueError(f"qb.random.uniform: minval {minval} must be below maxval {maxval}")
    u = _core.random_uniform(w[0], w[1], _shape(shape), dtype)
    if (minval, maxval) == (0.0, 1.0):
        return u
    lo, hi = float(minval), float(maxval)
    largest = 3.4028234663852886e38 if u.dtype == _core.float32 else 1.7976931348623157e308
    if hi - lo <= largest:
        r = u * (hi - lo) + lo
    else:  # the span overflows the sample dtype (e.g. -1e308 to 1e308): interpolate
        r = u * hi + (1.0 - u) * lo
    # Rounding can reach maxval: keep samples in [minval, maxval) of the sample dtype.
    return _core.clip(r, lo, _largest_below(hi, u.dtype))


def _largest_below(x: float, dtype) -> float:
    """The largest value of dtype (float32 or float64) strictly below x."""
    if dtype == _core.float64:
        return math.nextafter(x, -math.inf)
    f = struct.unpack("<f", struct.pack("<f", x))[0] if abs(x) <= 3.4028234663852886e38 else math.copysign(math.inf, x)
    if f < x:
        return f
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    if f == 0.0:
        return -1.401298464324817e-45
    bits = bits - 1 if f > 0 else bits + 1
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def normal(k: Key, shape=(), dtype=None):
    """Standard normal samples."""
    w = _check_key(k, "normal")
    return _core.random_normal(w[0], w[1], _shape(shape), dtype)


def truncated_normal(k: Key, lower: float, upper: float, shape=(), dtype=None):
    """Standard normal samples conditioned on [lower, upper]."""
    w = _check_key(k, "truncated_normal")
    return _core.random_truncated_normal(w[0], w[1], float(lower), float(upper), _shape(shape), dtype)


def bernoulli(k: Key, p: float = 0.5, shape=()):
    """Bool samples, True with probability p."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"qb.random.bernoulli: p must be in [0, 1], got {p}")
    return uniform(k, shape, _core.float64) < p


def _shape(shape) -> Tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


def _fans(shape: Sequence[int]) -> Tuple[float, float]:
    shape = _shape(shape)
    if len(shape) == 0:
        raise ValueError("initializers need a shape with at least one dimension")
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


# The standard deviation of a standard normal truncated to [-2, 2] (JAX's constant).
_TRUNC_STD = 0.87962566103423978


def _variance_scaling(k, shape, dtype, scale, mode, distribution):
    fan_in, fan_out = _fans(shape)
    denom = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode]
    variance = scale / denom
    if distribution == "truncated_normal":
        return truncated_normal(k, -2.0, 2.0, shape, dtype) * (math.sqrt(variance) / _TRUNC_STD)
    limit = math.sqrt(3.0 * variance)
    return uniform(k, shape, dtype, -limit, limit)


def glorot_normal(k: Key, shape, dtype=None):
    """Glorot (Xavier) normal: truncated normal, variance 2 / (fan_in + fan_out)."""
    return _variance_scaling(k, shape, dtype, 1.0, "fan_avg", "truncated_normal")


def glorot_uniform(k: Key, shape, dtype=None):
    """Glorot (Xavier) uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out))."""
    return _variance_scaling(k, shape, dtype, 1.0, "fan_avg", "uniform")


def he_normal(k: Key, shape, dtype=None):
    """He (Kaiming) normal: truncated normal, variance 2 / fan_in."""
    return _variance_scaling(k, shape, dtype, 2.0, "fan_in", "truncated_normal")


def he_uniform(k: Key, shape, dtype=None):
    return _variance_scaling(k, shape, dtype, 2.0, "fan_in", "uniform")


def lecun_normal(k: Key, shape, dtype=None):
    return _variance_scaling(k, shape, dtype, 1.0, "fan_in", "truncated_normal")
