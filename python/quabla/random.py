"""Keyed, splittable, reproducible random numbers (jax.random's interface).

The generator is Threefry-2x32 with 20 rounds (the counter-based generator JAX uses; our
C++ implementation passes Random123's known-answer vectors). A key is two 32-bit words;
sample i of a draw is a function of (key, i) only, so results do not depend on the thread
count or on how a draw is split, and `split`/`fold_in` derive keys in counter domains that
never collide with samples. Samples: uniform floats take the top 24 (float32) or 52
(float64) bits of a block; normals use Box-Muller on one block (computed in double);
truncated normals use the inverse CDF. The streams are our own: the same seed gives other
numbers than JAX's.

Keys are values, as in JAX: a `Key` holds its words as an int32 array of shape
(*batch, 2) (the bits of JAX's uint32 words; we have no unsigned dtype) and is a pytree
node, so keys pass through `jit` as dynamic arguments (a new key does not retrace), ride
in loop carries and are batched by `vmap` (`vmap(f)(split(key, 8))`). `split(key, n)`
gives a batch of n keys that indexes, iterates and unpacks. JAX's legacy raw keys work too:
`PRNGKey(seed)` is that int32 array itself, every function takes it, and `split`/`fold_in`
of a raw key return raw keys. A concrete key samples in C++ (one pass over the output); a
traced one (under jit or vmap) samples by the same Threefry rounds composed of int32 ops,
which gives the same bits and, for the floats, the same values up to the last bits of the
log, cos and erf behind normals.

Initializers follow JAX's variance-scaling definitions and fans (fan_in = shape[-2] x
receptive field, fan_out = shape[-1] x receptive field).
"""
from __future__ import annotations

import math
import struct
from typing import Sequence, Tuple

from . import _core
from . import tree as _tree
from ._numpy_names import _isint
from ._package import qb

__all__ = ["Key", "key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "clone", "bits", "uniform",
           "normal", "truncated_normal", "bernoulli", "randint", "choice", "permutation", "categorical", "gumbel",
           "exponential", "laplace", "logistic", "cauchy", "rademacher", "multivariate_normal", "orthogonal",
           "gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "poisson", "binomial", "generalized_normal",
           "ball",
           "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal"]

_MASK = 0xFFFFFFFF
# Counter domains (the high counter word) of threefry.cc: samples use block indices below 2^31.
_SPLIT_DOMAIN = 0x80000000 | 0x53504C
_FOLD_DOMAIN = 0x80000000 | 0x464F4C
_SEED_DOMAIN = 0x80000000 | 0x534545
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _s32(v: int) -> int:
    """The int32 value with the bits of the 32-bit word v."""
    v &= _MASK
    return v - (1 << 32) if v >= 1 << 31 else v


def _traced(x) -> bool:
    return bool(getattr(x, "_is_tracer", False))


class Key:
    """A random key, or an array of keys: Threefry words held as an int32 array of shape
    (*shape, 2). Immutable; a pytree node (its words are the leaf)."""

    __slots__ = ("_data", "_words")

    def __init__(self, words=None, *, data=None):
        if data is None:
            self._words = (int(words[0]) & _MASK, int(words[1]) & _MASK)
            self._data = None
        else:
            self._data = data
            self._words = None

    @property
    def data(self):
        """The words as an int32 array of shape (*self.shape, 2)."""
        if self._data is None:
            self._data = _core.asarray([_s32(self._words[0]), _s32(self._words[1])], dtype=_core.int32)
        return self._data

    @property
    def words(self) -> Tuple[int, int]:
        """The two words of a single concrete key, as Python ints."""
        if self._words is None:
            if _traced(self._data):
                raise TypeError("qb.random.Key.words: this key is traced (inside jit or vmap); its words are not "
                                "known until the program runs")
            if self.shape != ():
                raise TypeError(f"qb.random.Key.words: this is a batch of keys of shape {self.shape}; index it first")
            w = _core.asarray(self._data).tolist()
            self._words = (int(w[0]) & _MASK, int(w[1]) & _MASK)
        return self._words

    @property
    def shape(self) -> Tuple[int, ...]:
        return () if self._data is None else tuple(self._data.shape)[:-1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a single key")
        return self.shape[0]

    def __getitem__(self, index):
        if not self.shape:
            raise IndexError("a single key cannot be indexed")
        if isinstance(index, tuple) and any(i is Ellipsis for i in index):
            raise IndexError("qb.random.Key: index a batch of keys without '...'")
        rows = self.data[index]
        if tuple(rows.shape)[-1:] != (2,):
            raise IndexError("qb.random.Key: index the batch axes of a key array only")
        return Key(data=rows)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a single key")
        if _traced(self.data) or len(self.shape) > 1:
            return (self[i] for i in range(self.shape[0]))
        return iter([Key(w) for w in _core.asarray(self.data).tolist()])

    def _concrete_words(self):
        if self._words is not None:
            return ("scalar", self._words)
        if _traced(self._data):
            return None
        return ("array", _core.asarray(self._data).tolist())

    def __eq__(self, other):
        if not isinstance(other, Key):
            return NotImplemented
        mine, theirs = self._concrete_words(), other._concrete_words()
        if mine is None or theirs is None:
            return self is other
        return self.shape == other.shape and _as_tuple(mine[1]) == _as_tuple(theirs[1])

    def __hash__(self):
        mine = self._concrete_words()
        if mine is None:
            raise TypeError("a traced key is not hashable")
        return hash(("qb.random.Key", self.shape, _as_tuple(mine[1])))

    def __repr__(self):
        mine = self._concrete_words()
        if self.shape == () and mine is not None:
            w = self.words
            return f"Key({w[0]:#010x}, {w[1]:#010x})"
        if mine is None:
            return f"Key(traced, shape={self.shape})"
        return f"Key(shape={self.shape}, words={_core.asarray(self.data).tolist()})"


def _as_tuple(words):
    if isinstance(words, list):
        return tuple(_as_tuple(w) if isinstance(w, list) else int(w) & _MASK for w in words)
    return tuple(int(w) & _MASK for w in words)


_tree.register(Key, lambda k: ((k.data,), None), lambda aux, children: Key(data=children[0]))


def _raw_words(data, fname):
    """A raw key array (JAX's uint32 words, or ours as int32) as our int32 array."""
    if isinstance(data, (bool, int, float)):
        raise TypeError(f"qb.random.{fname}: expected a key (qb.random.key(seed) or qb.random.PRNGKey(seed)), got "
                        f"{type(data).__name__}")
    if not _traced(data) and not isinstance(data, _core.Array):
        try:
            import numpy as np
            a = np.asarray(data)
        except Exception:
            raise TypeError(f"qb.random.{fname}: expected a key, got {type(data).__name__}") from None
        if a.dtype.kind not in "iu":
            raise TypeError(f"qb.random.{fname}: expected a key, got an array of {a.dtype}")
        data = _core.asarray(a.astype(np.uint32).view(np.int32) if a.dtype.kind == "u" else a.astype(np.int64))
    if data.dtype == _core.int64:
        data = (((data + (1 << 31)) & _MASK) - (1 << 31)).astype(_core.int32)
    elif data.dtype != _core.int32:
        raise TypeError(f"qb.random.{fname}: expected a key, got an array of {data.dtype}")
    if tuple(data.shape)[-1:] != (2,):
        raise TypeError(f"qb.random.{fname}: a raw key is an integer array of shape (..., 2), got shape "
                        f"{tuple(data.shape)}")
    return data


def _key_arg(k, fname, single=True):
    """(Key, raw) for a key argument: a Key or a raw key array (raw says which it was)."""
    if isinstance(k, Key):
        key_, raw = k, False
    else:
        key_, raw = Key(data=_raw_words(k, fname)), True
    if single and key_.shape != ():
        raise TypeError(f"qb.random.{fname}: expected a single key, got a batch of keys of shape {key_.shape} "
                        "(index it, or vmap over it)")
    return key_, raw


def _words_of(k: Key):
    """The words of a single key: two Python ints when concrete, else two int32 scalars."""
    if k._words is not None:
        return k._words
    d = k._data
    if not _traced(d):
        return k.words
    return d[0], d[1]


def _rotl(x, r):
    return (x << r) | ((x >> (32 - r)) & ((1 << r) - 1))


def _threefry(k0, k1, c0, c1):
    """Threefry-2x32 (20 rounds) on int32 arrays (or Python ints for the key words): the
    rounds of threefry.cc with int32's wrapping arithmetic and the logical shift right spelt
    as an arithmetic shift and a mask."""
    if isinstance(k0, int) and isinstance(k1, int):
        ks = (_s32(k0), _s32(k1), _s32(k0 ^ k1 ^ 0x1BD11BDA))
    else:
        k0, k1 = _int32(k0), _int32(k1)
        ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0 = _int32(c0) + ks[0]
    x1 = _int32(c1) + ks[1]
    for rnd in range(5):
        for j in range(4):
            x0 = x0 + x1
            x1 = _rotl(x1, _ROTATIONS[(rnd % 2) * 4 + j]) ^ x0
        x0 = x0 + ks[(rnd + 1) % 3]
        x1 = x1 + ks[(rnd + 2) % 3] + (rnd + 1)
    return x0, x1


def _int32(x):
    if isinstance(x, int):
        return _core.asarray(_s32(x), dtype=_core.int32)
    return x if x.dtype == _core.int32 else x.astype(_core.int32)


def _traced_blocks(k: Key, shape):
    """Both words of blocks 0 .. size-1 of key k, shaped, by the composed rounds."""
    size = math.prod(shape)
    if size >= 1 << 31:
        raise ValueError(f"qb.random: a traced draw of {size} samples is too large (at most 2^31 - 1)")
    k0, k1 = _words_of(k)
    counter = qb.arange(size, dtype=_core.int32).reshape(shape)
    return _threefry(k0, k1, 0, counter)


def _blocks(k: Key, shape):
    """(first, second): both int32 words of each sample's block."""
    w = k._concrete_words()
    if w is not None:
        return _core.random_blocks(*k.words, shape)
    return _traced_blocks(k, shape)


def _unsigned(x):
    """int32 words as float64 values in [0, 2^32)."""
    f = x.astype(_core.float64)
    return qb.where(x < 0, f + 4294967296.0, f)


def _float_dtype(dtype, fname):
    d = _core.zeros((), dtype).dtype if dtype is not None else qb.default_dtype()
    if d not in (_core.float32, _core.float64):
        raise TypeError(f"{fname}: dtype must be qb.float32 or qb.float64")
    return d


def _traced_uniform01(k, shape, dtype):
    d = _float_dtype(dtype, "uniform")
    first, second = _traced_blocks(k, shape)
    if d == _core.float32:
        return ((first >> 8) & 0xFFFFFF).astype(_core.float32) * (2.0 ** -24)
    return _u53(first, second)


def _u53(first, second):
    """52 bits of a block as a float64 in [0, 1): (first << 20) ^ (second >> 12) scaled."""
    low = ((second >> 12) & 0xFFFFF).astype(_core.float64)
    return (_unsigned(first) * 1048576.0 + low) * (2.0 ** -52)


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------

def key(seed) -> Key:
    """A key from an integer seed (any int that fits in 64 bits, negative ones wrap; an
    integer array under jit)."""
    if isinstance(seed, bool):
        raise TypeError("qb.random.key: seed must be an int, got bool")
    if isinstance(seed, int):
        if not -(1 << 63) <= seed < (1 << 64):
            raise OverflowError(f"qb.random.key: seed {seed} does not fit in 64 bits")
        return Key(_core.random_key(seed & 0xFFFFFFFFFFFFFFFF))
    if isinstance(seed, _core.Array) or _traced(seed):
        if seed.shape != () or seed.dtype not in (_core.int32, _core.int64):
            raise TypeError(f"qb.random.key: seed must be an int or an integer scalar, got {seed.dtype} of shape "
                            f"{tuple(seed.shape)}")
        if not _traced(seed):
            return key(int(seed.item()))
        s = seed.astype(_core.int64)
        hi = (((s >> 32) + (1 << 31)) & _MASK) - (1 << 31)
        lo = ((s + (1 << 31)) & _MASK) - (1 << 31)
        x0, x1 = _threefry(hi.astype(_core.int32), lo.astype(_core.int32), _SEED_DOMAIN, 0)
        return Key(data=qb.stack([x0, x1]))
    try:
        import numpy as np
        if isinstance(seed, np.integer) or (isinstance(seed, np.ndarray) and seed.shape == () and seed.dtype.kind in "iu"):
            return key(int(seed))
    except ImportError:
        pass
    raise TypeError(f"qb.random.key: seed must be an int, got {type(seed).__name__}")


def PRNGKey(seed):
    """JAX's legacy raw key: the words of key(seed) as an int32 array of shape (2,)."""
    return key(seed).data


def key_data(keys):
    """The words of a key (or key array) as an int32 array of shape (*keys.shape, 2)."""
    k, _ = _key_arg(keys, "key_data", single=False)
    return k.data


def wrap_key_data(data):
    """A Key from raw words (int32 or uint32, shape (..., 2))."""
    return Key(data=_raw_words(data, "wrap_key_data"))


def clone(k):
    """The key itself (keys are immutable values)."""
    return k


def _num_shape(num, fname):
    if isinstance(num, bool):
        raise ValueError(f"qb.random.{fname}: num must be a positive int, got {num!r}")
    if isinstance(num, int) or hasattr(num, "__index__"):
        n = int(num)
        if n < 0:
            raise ValueError(f"qb.random.{fname}: num must be a non-negative int, got {num!r}")
        return (n,)
    try:
        shape = tuple(int(d) for d in num)
    except TypeError:
        raise ValueError(f"qb.random.{fname}: num must be a positive int or a shape, got {num!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"qb.random.{fname}: the shape {shape} has a negative dimension")
    return shape


def split(k, num=2):
    """`num` new keys (an int, or a shape), independent of each other and of k's own samples:
    a Key array of shape (num,) (iterate, index or unpack it); for a raw key, raw words of
    shape (num, 2)."""
    key_, raw = _key_arg(k, "split")
    shape = _num_shape(num, "split")
    n = math.prod(shape)
    if key_._concrete_words() is not None:
        w = key_.words
        data = _core.asarray([[_s32(a), _s32(b)] for a, b in _core.random_split(w[0], w[1], n)],
                             dtype=_core.int32).reshape(shape + (2,)) if n else _core.zeros(shape + (2,), _core.int32)
    else:
        k0, k1 = _words_of(key_)
        x0, x1 = _threefry(k0, k1, _SPLIT_DOMAIN, qb.arange(n, dtype=_core.int32))
        data = qb.stack([x0, x1], axis=-1).reshape(shape + (2,))
    return data if raw else Key(data=data)


def fold_in(k, data) -> Key:
    """A new key determined by k and an integer (e.g. a step or a process index; an integer
    scalar under jit)."""
    key_, raw = _key_arg(k, "fold_in")
    if isinstance(data, bool):
        raise TypeError("qb.random.fold_in: data must be an int, got bool")
    concrete_key = key_._concrete_words() is not None
    if isinstance(data, int) or (hasattr(data, "__index__") and not isinstance(data, _core.Array)):
        if concrete_key:
            w = key_.words
            out = Key(_core.random_fold_in(w[0], w[1], int(data) & _MASK))
            return out.data if raw else out
        counter = _s32(int(data))
    elif isinstance(data, _core.Array) or _traced(data):
        if data.shape != () or data.dtype not in (_core.int32, _core.int64):
            raise TypeError(f"qb.random.fold_in: data must be an int or an integer scalar, got {data.dtype} of shape "
                            f"{tuple(data.shape)}")
        if not _traced(data) and concrete_key:
            return fold_in(k, int(data.item()))
        counter = (((data + (1 << 31)) & _MASK) - (1 << 31)).astype(_core.int32) if data.dtype == _core.int64 else data
    else:
        raise TypeError(f"qb.random.fold_in: data must be an int, got {type(data).__name__}")
    k0, k1 = _words_of(key_)
    x0, x1 = _threefry(k0, k1, _FOLD_DOMAIN, counter)
    out = qb.stack([x0, x1])
    return out if raw else Key(data=out)


# ---------------------------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------------------------

def _shape(shape) -> Tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (int(shape),)
    else:
        shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"qb.random: the shape {shape} has a negative dimension")
    return shape


def _fits(fname, what, value, shape):
    """A bound or parameter array must broadcast to the sample shape (as in JAX): a larger
    one would otherwise repeat one sample across its elements."""
    vs = tuple(getattr(value, "shape", ()))
    if not _broadcasts_to(vs, shape):
        raise ValueError(f"qb.random.{fname}: {what} of shape {vs} does not broadcast to the sample shape {shape}; "
                         f"pass shape={tuple(qb.broadcast_shapes(vs, shape)) if _broadcastable(vs, shape) else vs}")


def _broadcastable(a, b) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def bits(k, shape=(), dtype=None):
    """Random 32-bit words: int32 values holding the bits (JAX returns them as uint32)."""
    key_, _ = _key_arg(k, "bits")
    if dtype is not None and _core.zeros((), dtype).dtype != _core.int32:
        raise TypeError("qb.random.bits: dtype must be qb.int32 (the words' bits; there is no uint32)")
    return _blocks(key_, _shape(shape))[0]


def uniform(k, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform samples in [minval, maxval) (bounds may be arrays broadcasting to shape)."""
    key_, _ = _key_arg(k, "uniform")
    shape = _shape(shape)
    if key_._concrete_words() is not None:
        w = key_.words
        u = _core.random_uniform(w[0], w[1], shape, dtype)
    else:
        u = _traced_uniform01(key_, shape, dtype)
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
        if not minval < maxval:
            raise ValueError(f"qb.random.uniform: minval {minval} must be below maxval {maxval}")
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
    lo = qb.asarray(minval).astype(u.dtype)
    hi = qb.asarray(maxval).astype(u.dtype)
    _fits("uniform", "minval", lo, shape)
    _fits("uniform", "maxval", hi, shape)
    r = u * (hi - lo) + lo
    # At least minval (as JAX), and a rounding up to maxval moved below it (not always to
    # the largest value below: by the spacing of floats at maxval, or the smallest subnormal).
    eps, least = (1.1920928955078125e-07, 1.401298464324817e-45) if u.dtype == _core.float32 else \
        (2.220446049250313e-16, 5e-324)
    return qb.maximum(lo, qb.where(r >= hi, hi - qb.maximum(qb.abs(hi) * eps, least), r))


def _largest_below(x: float, dtype) -> float:
    """The largest value of dtype (float32 or float64) strictly below x."""
    if dtype == _core.float64:
        return math.nextafter(x, -math.inf)
    f = struct.unpack("<f", struct.pack("<f", x))[0] if abs(x) <= 3.4028234663852886e38 else math.copysign(math.inf, x)
    if f < x:
        return f
    b = struct.unpack("<I", struct.pack("<f", f))[0]
    if f == 0.0:
        return -1.401298464324817e-45
    b = b - 1 if f > 0 else b + 1
    return struct.unpack("<f", struct.pack("<I", b))[0]


def normal(k, shape=(), dtype=None):
    """Standard normal samples."""
    key_, _ = _key_arg(k, "normal")
    shape = _shape(shape)
    if key_._concrete_words() is not None:
        w = key_.words
        return _core.random_normal(w[0], w[1], shape, dtype)
    d = _float_dtype(dtype, "normal")
    first, second = _traced_blocks(key_, shape)
    u1 = 1.0 - _unsigned(first) * (2.0 ** -32)  # (0, 1]: log never sees 0
    u2 = _unsigned(second) * (2.0 ** -32)
    return (qb.sqrt(-2.0 * qb.log(u1)) * qb.cos(6.283185307179586 * u2)).astype(d)


def truncated_normal(k, lower=-2.0, upper=2.0, shape=None, dtype=None):
    """Standard normal samples conditioned on [lower, upper]."""
    key_, _ = _key_arg(k, "truncated_normal")
    if shape is None:
        shape = tuple(qb.broadcast_shapes(tuple(getattr(lower, "shape", ())), tuple(getattr(upper, "shape", ()))))
    shape = _shape(shape)
    _fits("truncated_normal", "lower", lower, shape)
    _fits("truncated_normal", "upper", upper, shape)
    if key_._concrete_words() is not None and isinstance(lower, (int, float)) and isinstance(upper, (int, float)):
        w = key_.words
        return _core.random_truncated_normal(w[0], w[1], float(lower), float(upper), shape, dtype)
    if isinstance(lower, (int, float)) and isinstance(upper, (int, float)) and not lower < upper:
        raise ValueError("truncated_normal: lower must be below upper")
    d = _float_dtype(dtype, "truncated_normal")
    first, second = _blocks(key_, shape)
    lo = qb.asarray(lower).astype(_core.float64)
    hi = qb.asarray(upper).astype(_core.float64)
    a, b = qb.erf(lo / math.sqrt(2.0)), qb.erf(hi / math.sqrt(2.0))
    from ._special import erfinv
    x = math.sqrt(2.0) * erfinv(a + (b - a) * _u53(first, second))
    return qb.clip(x, lo, hi).astype(d)


def bernoulli(k, p=0.5, shape=None):
    """Bool samples, True with probability p (p may be an array; shape defaults to p's)."""
    if isinstance(p, (int, float)) and not 0.0 <= p <= 1.0:
        raise ValueError(f"qb.random.bernoulli: p must be in [0, 1], got {p}")
    if shape is None:
        shape = () if isinstance(p, (int, float)) else tuple(qb.asarray(p).shape)
    if not isinstance(p, (int, float)):
        p = qb.asarray(p).astype(_core.float64)
    return uniform(k, shape, _core.float64) < p


def _int_dtype(dtype):
    d = _core.zeros((), dtype).dtype if dtype is not None else qb.asarray(0).dtype
    if d not in (_core.int32, _core.int64):
        raise TypeError("randint: dtype must be an integer dtype (qb.int32 or qb.int64)")
    return d


def _bits63(k: Key, shape):
    """63 random bits per sample as a non-negative int64."""
    first, second = _blocks(k, shape)
    return ((first & 0x7FFFFFFF).astype(_core.int64) << 32) | (second.astype(_core.int64) & 0xFFFFFFFF)


def randint(k, shape, minval, maxval, dtype=None):
    """Integers uniform in [minval, maxval) (bounds broadcast to shape and are clipped to the
    dtype's range; where maxval <= minval the result is minval, as in JAX). The residue of
    63 random bits modulo the span: a bias below span / 2^63 (2^-31 for int32). An int64
    span beyond 2^63 - 1 (it overflows int64) is drawn from 53 bits in floating point."""
    key_, _ = _key_arg(k, "randint")
    d = _int_dtype(dtype)
    shape = _shape(shape)
    info = (-(1 << 31), (1 << 31) - 1) if d == _core.int32 else (-(1 << 63), (1 << 63) - 1)
    lo = qb.clip(qb.asarray(minval).astype(_core.int64), info[0], info[1])
    hi = qb.clip(qb.asarray(maxval).astype(_core.int64), info[0], info[1])
    _fits("randint", "minval", lo, shape)
    _fits("randint", "maxval", hi, shape)
    if d == _core.int32:
        hi = qb.where(qb.asarray(maxval).astype(_core.int64) > info[1], info[1] + 1, hi)
    diff = hi - lo
    bits = _bits63(key_, shape)
    out = lo + bits % qb.maximum(diff, 1)
    if d == _core.int64:
        wide = (hi > lo) & (diff <= 0)  # the span overflowed
        flo, fhi = lo.astype(_core.float64), hi.astype(_core.float64)
        u = (bits >> 10).astype(_core.float64) * (2.0 ** -53)
        approx = qb.clip(flo + u * (fhi - flo), -9.223372036854775e18, 9.223372036854775e18).astype(_core.int64)
        out = qb.where(wide, qb.minimum(qb.maximum(approx, lo), hi - 1), out)
    return out.astype(d)


def _checked_axis(axis, ndim, fname):
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"qb.random.{fname}: axis must be an int, got {type(axis).__name__}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"qb.random.{fname}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def permutation(k, x, axis=0, independent=False):
    """A random permutation of range(x) (an int) or of x's entries along axis (of each
    slice independently when independent=True)."""
    key_, _ = _key_arg(k, "permutation")
    if _isint(x):
        n = int(x)
        if n < 0:
            raise ValueError(f"qb.random.permutation: x must be non-negative, got {n}")
        return qb.argsort(_bits63(key_, (n,))).astype(qb.asarray(0).dtype)
    x = qb.asarray(x)
    if x.ndim == 0:
        raise ValueError("qb.random.permutation: x must be an int or an array of at least one dimension")
    axis = _checked_axis(axis, x.ndim, "permutation")
    if independent:
        return qb.take_along_axis(x, qb.argsort(_bits63(key_, tuple(x.shape)), axis=axis), axis=axis)
    return qb.take(x, qb.argsort(_bits63(key_, (x.shape[axis],))), axis=axis)


def choice(k, a, shape=(), replace=True, p=None, axis=0):
    """Samples of a (an int n means range(n)) along axis: with replacement by default, with
    probabilities p when given (normalised)."""
    key_, _ = _key_arg(k, "choice")
    shape = _shape(shape)
    count = math.prod(shape)
    if _isint(a):
        n, arr = int(a), None
    else:
        arr = qb.asarray(a)
        if arr.ndim == 0:
            raise ValueError("qb.random.choice: a must be an int or an array of at least one dimension")
        axis = _checked_axis(axis, arr.ndim, "choice")
        n = arr.shape[axis]
    if n <= 0 and count:
        raise ValueError("qb.random.choice: a must be greater than 0 unless no samples are taken")
    if not replace and count > n:
        raise ValueError(f"qb.random.choice: cannot take {count} samples from {n} without replacement "
                         "(use replace=True)")
    if p is not None:
        p = qb.asarray(p)
        if tuple(p.shape) != (n,):
            raise ValueError(f"qb.random.choice: p must have shape ({n},), got {tuple(p.shape)}")
        p = p.astype(_core.float64)
    if p is None and replace:
        idx = randint(key_, shape, 0, n)
    elif p is None:
        idx = permutation(key_, n)[:count].reshape(shape)
    elif replace:
        cdf = qb.cumsum(p)
        r = cdf[-1] * (1.0 - uniform(key_, shape, _core.float64))
        idx = qb.minimum(qb.searchsorted(cdf, r), n - 1).astype(qb.asarray(0).dtype)
    else:
        g = gumbel(key_, (n,), _core.float64) + qb.log(p)
        idx = qb.argsort(-g)[:count].reshape(shape)
    if arr is None:
        return idx
    return qb.take(arr, idx, axis=axis)


def _tiny_uniform(k, shape, dtype, fname):
    """Uniform samples in [tiny, 1) (positive, so their logs are finite)."""
    d = _float_dtype(dtype, fname)
    tiny = 1.1754943508222875e-38 if d == _core.float32 else 2.2250738585072014e-308
    return uniform(k, shape, d, tiny, 1.0)


def gumbel(k, shape=(), dtype=None):
    """Standard Gumbel samples: -log(-log(u))."""
    return -qb.log(-qb.log(_tiny_uniform(k, shape, dtype, "gumbel")))


def categorical(k, logits, axis=-1, shape=None):
    """Indices drawn with probabilities softmax(logits) along axis (the Gumbel-max trick);
    shape defaults to logits' shape without axis."""
    key_, _ = _key_arg(k, "categorical")
    logits = qb.asarray(logits)
    if logits.ndim == 0:
        raise ValueError("qb.random.categorical: logits must have at least one dimension")
    axis = axis + logits.ndim if axis < 0 else axis
    moved = qb.moveaxis(logits, axis, -1)
    batch = tuple(moved.shape[:-1])
    shape = batch if shape is None else _shape(shape)
    if not _broadcasts_to(batch, shape):
        raise ValueError(f"qb.random.categorical: shape {shape} is not broadcast-compatible with the batch shape "
                         f"{batch} of logits")
    dtype = moved.dtype if moved.dtype in (_core.float32, _core.float64) else None
    noise = gumbel(key_, shape + (moved.shape[-1],), dtype)
    return qb.argmax(moved + noise, axis=-1)


def exponential(k, shape=(), dtype=None):
    """Standard exponential samples: -log1p(-u)."""
    return -qb.log1p(-uniform(k, shape, _float_dtype(dtype, "exponential")))


def laplace(k, shape=(), dtype=None):
    """Standard Laplace samples."""
    d = _float_dtype(dtype, "laplace")
    u = uniform(k, shape, d, _largest_above(-1.0, d), 1.0)
    return -qb.sign(u) * qb.log1p(-qb.abs(u))


def _largest_above(x, dtype):
    return -_largest_below(-x, dtype)


def logistic(k, shape=(), dtype=None):
    """Standard logistic samples: log(u / (1 - u))."""
    u = _tiny_uniform(k, shape, dtype, "logistic")
    return qb.log(u) - qb.log1p(-u)


def cauchy(k, shape=(), dtype=None):
    """Standard Cauchy samples: tan(pi (u - 1/2))."""
    d = _float_dtype(dtype, "cauchy")
    eps = 1.1920928955078125e-07 if d == _core.float32 else 2.220446049250313e-16
    u = uniform(k, shape, d, eps, 1.0)
    return qb.tan(math.pi * (u - 0.5))


def rademacher(k, shape=(), dtype=None):
    """-1 or +1 with equal probability (an integer dtype by default)."""
    b = bernoulli(k, 0.5, _shape(shape))
    d = qb.asarray(0).dtype if dtype is None else _core.zeros((), dtype).dtype
    return (2 * b.astype(qb.asarray(0).dtype) - 1).astype(d)


def multivariate_normal(k, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal samples with the given mean (..., n) and covariance (..., n, n); shape defaults
    to the broadcast of their batch shapes. method: 'cholesky', 'eigh' or 'svd'."""
    key_, _ = _key_arg(k, "multivariate_normal")
    d = _float_dtype(dtype, "multivariate_normal")
    mean, cov = qb.asarray(mean).astype(d), qb.asarray(cov).astype(d)
    if mean.ndim < 1 or cov.ndim < 2 or tuple(cov.shape[-2:]) != (mean.shape[-1],) * 2:
        raise ValueError(f"qb.random.multivariate_normal: mean must have shape (..., n) and cov (..., n, n), got "
                         f"{tuple(mean.shape)} and {tuple(cov.shape)}")
    batch = tuple(qb.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2])))
    shape = batch if shape is None else _shape(shape)
    if not _broadcasts_to(batch, shape):
        raise ValueError(f"qb.random.multivariate_normal: shape {shape} is not broadcast-compatible with the batch "
                         f"shape {batch} of mean and cov")
    if method == "cholesky":
        factor = qb.linalg.cholesky(cov)
    elif method == "eigh":
        w, v = qb.linalg.eigh(cov)
        factor = v * qb.sqrt(qb.maximum(w, 0.0))[..., None, :]
    elif method == "svd":
        u, s, _ = qb.linalg.svd(cov)
        factor = u * qb.sqrt(s)[..., None, :]
    else:
        raise ValueError(f"qb.random.multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', got {method!r}")
    z = normal(key_, shape + (mean.shape[-1],), d)
    return mean + qb.einsum("...ij,...j->...i", factor, z)


def orthogonal(k, n, shape=(), dtype=None, m=None):
    """Random matrices of shape (*shape, n, m) (m = n by default) with orthonormal rows or
    columns, uniform (Haar) over their group: the Q of a normal matrix, signs fixed by R."""
    key_, _ = _key_arg(k, "orthogonal")
    m = n if m is None else m
    if not (_isint(n) and _isint(m)) or int(n) < 1 or int(m) < 1:
        raise ValueError(f"qb.random.orthogonal: n and m must be positive ints, got n={n!r}, m={m!r}")
    n, m = int(n), int(m)
    shape = _shape(shape)
    rows, cols = max(n, m), min(n, m)
    z = normal(key_, shape + (rows, cols), dtype)
    q, r = qb.linalg.qr(z)
    q = q * qb.sign(qb.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    return q if n >= m else qb.swapaxes(q, -1, -2)


# ---------------------------------------------------------------------------------------------
# Rejection samplers: every element draws until it is accepted, in rounds over the whole
# array (a while_loop, so traced keys, jit and vmap work); round i draws from fold_in(key, i),
# so the result depends on the key and the shape only.
# ---------------------------------------------------------------------------------------------

_MAX_ROUNDS = 10000  # a cap that valid parameters never reach (acceptance is at least 0.95 a round)


def _param_shape(fname, shape, *params):
    batch = tuple(qb.broadcast_shapes(*(tuple(p.shape) for p in params)))
    if shape is None:
        return batch
    shape = _shape(shape)
    if not _broadcasts_to(batch, shape):
        raise ValueError(f"qb.random.{fname}: shape {shape} is not broadcast-compatible with the parameters' shape "
                         f"{batch}")
    return shape


def _broadcasts_to(shape, target) -> bool:
    """Whether an array of `shape` broadcasts to exactly `target`."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _rounds(key_, init, done, step):
    """The accepted proposals, in rounds until every element not done is accepted;
    step(key, value) -> (proposal, accepted)."""
    def body(carry):
        i, value, done = carry
        proposal, ok = step(fold_in(key_, i), value)
        take = ok & ~done
        return i + 1, qb.where(take, proposal, value), done | ok

    def more(carry):
        return (carry[0] < _MAX_ROUNDS) & ~qb.all(carry[2])
    return qb.while_loop(more, body, (qb.asarray(0, dtype=_core.int32), init, done))[1]


def _standard_gamma(key_, a, shape, log_space: bool = False):
    """Gamma(a, 1) samples in float64 (Marsaglia and Tsang's squeeze; for a < 1 a Gamma(a + 1)
    sample times U^(1/a)); NaN where a <= 0 or is NaN. With log_space, their logs, the boost
    added as log(U) / a (so tiny a gives finite logs where the samples underflow)."""
    a = qb.broadcast_to(a, shape)
    valid = a > 0  # a = 0 gives 0 (the limit), below it NaN
    boost = a < 1
    alpha = qb.where(valid, qb.where(boost, a + 1.0, a), qb.ones_like(a))
    d = alpha - 1.0 / 3.0
    c = 1.0 / qb.sqrt(9.0 * d)
    k_draw, k_boost = split(key_)

    def step(k, _):
        kz, ku = split(k)
        z = normal(kz, shape, _core.float64)
        u = uniform(ku, shape, _core.float64)
        v = (1.0 + c * z) ** 3
        positive = v > 0
        safe_v = qb.where(positive, v, qb.ones_like(v))
        ok = positive & (qb.log(u) < 0.5 * z * z + d - d * safe_v + d * qb.log(safe_v))
        return d * safe_v, ok
    x = _rounds(k_draw, qb.zeros_like(a), ~valid, step)
    u = 1.0 - uniform(k_boost, shape, _core.float64)  # (0, 1]
    safe_a = qb.where(valid, a, qb.ones_like(a))
    if log_space:
        lx = qb.log(qb.where(valid, x, qb.ones_like(x)))
        lx = qb.where(boost & valid, lx + qb.log(u) / safe_a, lx)
        return qb.where(valid, lx, qb.where(a == 0, qb.full_like(a, -math.inf), qb.full_like(a, math.nan)))
    x = qb.where(boost & valid, x * u ** (1.0 / safe_a), x)
    return qb.where(valid, x, qb.where(a == 0, qb.zeros_like(a), qb.full_like(a, math.nan)))


_IMPLICIT = {}


def _implicit_gamma_rule():
    """x itself, with the implicit reparameterisation gradient dx/da = -(dF/da)(x) / pdf(x)
    (F the Gamma(a) CDF): the derivative of the sample at a fixed quantile, as JAX's. The
    rule runs only when a is differentiated; plain sampling never evaluates it."""
    if "gamma" not in _IMPLICIT:
        from ._special import gammaln
        from ._special_incomplete import gammainc

        @qb.custom_jvp
        def implicit(a, x):
            return x

        @implicit.defjvp
        def _rule(primals, tangents):
            a, x = primals
            da, _ = tangents
            dF = qb.jvp(lambda s: gammainc(s, x), (a,), (qb.ones_like(a),))[1]
            log_pdf = (a - 1.0) * qb.log(x) - x - gammaln(a)
            return x, -dF * qb.exp(-log_pdf) * da
        _IMPLICIT["gamma"] = implicit
    return _IMPLICIT["gamma"]


def _gamma_reparameterized(key_, a, shape):
    """Gamma(a) samples differentiable in a (the sampler's loop sees a constant a)."""
    a = qb.broadcast_to(a, shape)
    x = _standard_gamma(key_, qb.stop_gradient(a), shape)
    if not _traced(a):
        return x
    return _implicit_gamma_rule()(a, x)


def gamma(k, a, shape=None, dtype=None):
    """Gamma(a, 1) samples (a > 0, broadcast to shape; NaN where a <= 0), differentiable in a
    by implicit reparameterisation (as JAX's)."""
    key_, _ = _key_arg(k, "gamma")
    d = _float_dtype(dtype, "gamma")
    a = qb.asarray(a).astype(_core.float64)
    return _gamma_reparameterized(key_, a, _param_shape("gamma", shape, a)).astype(d)


def loggamma(k, a, shape=None, dtype=None):
    """log of Gamma(a, 1) samples, computed in log space (finite for tiny a, where the samples
    themselves underflow); the same draws as gamma's."""
    key_, _ = _key_arg(k, "loggamma")
    d = _float_dtype(dtype, "loggamma")
    a = qb.asarray(a).astype(_core.float64)
    return _standard_gamma(key_, a, _param_shape("loggamma", shape, a), log_space=True).astype(d)


def beta(k, a, b, shape=None, dtype=None):
    """Beta(a, b) samples: X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b)."""
    key_, _ = _key_arg(k, "beta")
    d = _float_dtype(dtype, "beta")
    a, b = qb.asarray(a).astype(_core.float64), qb.asarray(b).astype(_core.float64)
    shape = _param_shape("beta", shape, a, b)
    ka, kb = split(key_)
    x, y = _gamma_reparameterized(ka, a, shape), _gamma_reparameterized(kb, b, shape)
    return (x / (x + y)).astype(d)


def dirichlet(k, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples of shape (*shape, len(alpha)) (alpha's last axis holds the
    concentrations): normalised Gamma(alpha_i) samples."""
    key_, _ = _key_arg(k, "dirichlet")
    d = _float_dtype(dtype, "dirichlet")
    alpha = qb.asarray(alpha).astype(_core.float64)
    if alpha.ndim < 1:
        raise ValueError("qb.random.dirichlet: alpha must have at least one dimension")
    batch = _param_shape("dirichlet", shape, alpha[..., 0])
    g = _gamma_reparameterized(key_, alpha, batch + (alpha.shape[-1],))
    return (g / qb.sum(g, axis=-1, keepdims=True)).astype(d)


def chisquare(k, df, shape=None, dtype=None):
    """Chi-square samples with df degrees of freedom: 2 Gamma(df / 2)."""
    key_, _ = _key_arg(k, "chisquare")
    d = _float_dtype(dtype, "chisquare")
    df = qb.asarray(df).astype(_core.float64)
    return (2.0 * _gamma_reparameterized(key_, 0.5 * df, _param_shape("chisquare", shape, df))).astype(d)


def t(k, df, shape=(), dtype=None):
    """Student's t samples: N(0, 1) / sqrt(chi2(df) / df)."""
    key_, _ = _key_arg(k, "t")
    d = _float_dtype(dtype, "t")
    df = qb.asarray(df).astype(_core.float64)
    shape = _param_shape("t", shape, df)
    kn, kg = split(key_)
    z = normal(kn, shape, _core.float64)
    g = 2.0 * _gamma_reparameterized(kg, 0.5 * df, shape)
    return (z * qb.sqrt(df / g)).astype(d)


def binomial(k, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats (as jax.random.binomial; n >= 0, 0 <= p <= 1, NaN
    elsewhere): inversion where n min(p, 1 - p) < 10, Hoermann's BTRS above."""
    key_, _ = _key_arg(k, "binomial")
    d = _float_dtype(dtype, "binomial")
    n, p = qb.asarray(n).astype(_core.float64), qb.asarray(p).astype(_core.float64)
    shape = _param_shape("binomial", shape, n, p)
    n, p = qb.broadcast_to(n, shape), qb.broadcast_to(p, shape)
    valid = (n >= 0) & (p >= 0) & (p <= 1) & (n == qb.floor(n))
    flip = p > 0.5
    q = qb.where(valid, qb.where(flip, 1.0 - p, p), qb.full_like(p, 0.25))  # the smaller of p, 1 - p
    n_s = qb.where(valid, n, qb.ones_like(n))
    small = n_s * q < 10.0
    k_inv, k_btrs = split(key_)
    from ._special import gammaln

    # Inversion: walk the CDF from 0 with the pmf recurrence f(x) = f(x - 1) (a / x - s).
    qq = 1.0 - q
    s = q / qq
    a = (n_s + 1.0) * s
    start_u = uniform(k_inv, shape, _core.float64)
    active = small & (q > 0)

    def invert(carry):
        i, x, u, r, done = carry
        step = ~done & (u > r)
        u = qb.where(step, u - r, u)
        x = qb.where(step, x + 1.0, x)
        r = qb.where(step, r * (a / qb.maximum(x, 1.0) - s), r)
        return i + 1, x, u, r, done | ~step | (x >= n_s)
    start = (qb.asarray(0, dtype=_core.int32), qb.zeros_like(n_s), start_u, qq ** n_s, ~active)
    inverted = qb.while_loop(lambda c: (c[0] < _MAX_ROUNDS) & ~qb.all(c[4]), invert, start)[1]

    # BTRS for the rest (q < 0.5 here, n q >= 10).
    nb = qb.where(small, qb.full_like(n_s, 100.0), n_s)
    qb_ = qb.where(small, qb.full_like(q, 0.25), q)
    spq = qb.sqrt(nb * qb_ * (1.0 - qb_))
    b = 1.15 + 2.53 * spq
    aa = -0.0873 + 0.0248 * b + 0.01 * qb_
    c = nb * qb_ + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = qb.log(qb_ / (1.0 - qb_))
    m = qb.floor((nb + 1.0) * qb_)
    h = gammaln(m + 1.0) + gammaln(nb - m + 1.0)

    def btrs(kk, _):
        k1, k2 = split(kk)
        u = uniform(k1, shape, _core.float64) - 0.5
        v = uniform(k2, shape, _core.float64)
        us = 0.5 - qb.abs(u)
        count = qb.floor((2.0 * aa / us + b) * u + c)
        inside = (count >= 0) & (count <= nb)
        quick = (us >= 0.07) & (v <= v_r)
        safe = qb.clip(count, 0.0, nb)
        log_v = qb.log(v * alpha / (aa / (us * us) + b))
        exact = log_v <= h - gammaln(safe + 1.0) - gammaln(nb - safe + 1.0) + (safe - m) * lpq
        return count, inside & (quick | exact)
    rejected = _rounds(k_btrs, qb.zeros_like(nb), small, btrs)
    counts = qb.where(small, inverted, rejected)
    counts = qb.where(flip, n_s - counts, counts)
    return qb.where(valid, counts, qb.full_like(counts, math.nan)).astype(d)


def generalized_normal(k, p, shape=(), dtype=None):
    """Samples with density proportional to exp(-|x|^p): a random sign times Gamma(1/p)^(1/p)."""
    key_, _ = _key_arg(k, "generalized_normal")
    d = _float_dtype(dtype, "generalized_normal")
    p = float(p)
    if not p > 0:
        raise ValueError(f"qb.random.generalized_normal: p must be positive, got {p}")
    shape = _shape(shape)
    kg, ks = split(key_)
    g = _standard_gamma(kg, qb.asarray(1.0 / p), shape)
    sign = rademacher(ks, shape).astype(_core.float64)
    return (sign * g ** (1.0 / p)).astype(d)


def ball(k, d, p=2.0, shape=(), dtype=None):
    """Points uniform in the d-dimensional unit p-norm ball, of shape (*shape, d)."""
    key_, _ = _key_arg(k, "ball")
    if not _isint(d) or int(d) < 1:
        raise ValueError(f"qb.random.ball: d must be a positive int, got {d!r}")
    dt = _float_dtype(dtype, "ball")
    shape = _shape(shape)
    kg, ke = split(key_)
    g = generalized_normal(kg, p, shape + (int(d),), _core.float64)
    e = exponential(ke, shape, _core.float64)
    return (g / ((qb.sum(qb.abs(g) ** float(p), axis=-1) + e) ** (1.0 / float(p)))[..., None]).astype(dt)


def poisson(k, lam, shape=None, dtype=None):
    """Poisson(lam) counts (integers; lam >= 0 broadcast to shape; -1 where lam is negative or
    NaN): Knuth's product of uniforms below lam = 10, Hoermann's transformed rejection (PTRS)
    above."""
    key_, _ = _key_arg(k, "poisson")
    out = qb.asarray(0).dtype if dtype is None else _core.zeros((), dtype).dtype
    if out not in (_core.int32, _core.int64):
        raise TypeError("qb.random.poisson: dtype must be an integer dtype")
    lam = qb.asarray(lam).astype(_core.float64)
    shape = _param_shape("poisson", shape, lam)
    lam = qb.broadcast_to(lam, shape)
    valid = lam >= 0
    small = lam < 10.0
    k_small, k_large = split(key_)

    # Knuth: the number of uniforms whose running product stays above exp(-lam).
    limit = qb.exp(-qb.where(small & valid, lam, qb.zeros_like(lam)))

    def knuth(carry):
        i, count, prod, done = carry
        u = uniform(fold_in(k_small, i), shape, _core.float64)
        prod = qb.where(done, prod, prod * u)
        stop = prod <= limit
        return i + 1, qb.where(done | stop, count, count + 1.0), prod, done | stop

    start = (qb.asarray(0, dtype=_core.int32), qb.zeros_like(lam), qb.ones_like(lam), ~(small & valid))
    knuth_count = qb.while_loop(lambda c: (c[0] < _MAX_ROUNDS) & ~qb.all(c[3]), knuth, start)[1]

    big = qb.where(small | ~valid, qb.full_like(lam, 10.0), lam)
    slam, loglam = qb.sqrt(big), qb.log(big)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    from ._special import gammaln

    def ptrs(kk, _):
        k1, k2 = split(kk)
        u = uniform(k1, shape, _core.float64) - 0.5
        v = uniform(k2, shape, _core.float64)
        us = 0.5 - qb.abs(u)
        count = qb.floor((2.0 * a / us + b) * u + big + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        reject = (count < 0) | ((us < 0.013) & (v > us))
        safe = qb.maximum(count, 0.0)
        exact = (qb.log(v) + qb.log(inv_alpha) - qb.log(a / (us * us) + b)) <= (-big + safe * loglam - gammaln(safe + 1.0))
        return count, quick | (~reject & exact)
    ptrs_count = _rounds(k_large, qb.zeros_like(lam), small | ~valid, ptrs)
    counts = qb.where(small, knuth_count, ptrs_count)
    return qb.where(valid, counts, qb.full_like(counts, -1.0)).astype(out)


# ---------------------------------------------------------------------------------------------
# Initializers
# ---------------------------------------------------------------------------------------------

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
    if distribution == "normal":
        return normal(k, shape, dtype) * math.sqrt(variance)
    limit = math.sqrt(3.0 * variance)
    return uniform(k, shape, dtype, -limit, limit)


def glorot_normal(k, shape, dtype=None):
    """Glorot (Xavier) normal: truncated normal, variance 2 / (fan_in + fan_out)."""
    return _variance_scaling(k, shape, dtype, 1.0, "fan_avg", "truncated_normal")


def glorot_uniform(k, shape, dtype=None):
    """Glorot (Xavier) uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out))."""
    return _variance_scaling(k, shape, dtype, 1.0, "fan_avg", "uniform")


def he_normal(k, shape, dtype=None):
    """He (Kaiming) normal: truncated normal, variance 2 / fan_in."""
    return _variance_scaling(k, shape, dtype, 2.0, "fan_in", "truncated_normal")


def he_uniform(k, shape, dtype=None):
    return _variance_scaling(k, shape, dtype, 2.0, "fan_in", "uniform")


def lecun_normal(k, shape, dtype=None):
    return _variance_scaling(k, shape, dtype, 1.0, "fan_in", "truncated_normal")
