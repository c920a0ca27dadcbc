"""Keyed, splittable, reproducible random numbers: jax.random's interface and its bits.

The generator is Threefry-2x32 with 20 rounds (our C++ implementation passes Random123's
known-answer vectors), and keys, splits and samples are derived exactly as jax.random's
default (partitionable) scheme derives them, so a program gives JAX's numbers for the same
seed: key(seed) is the seed's two 32-bit halves; block i of a key is threefry(key, (i >> 32,
i & 0xFFFFFFFF)); split(key, n)[i] is block i and fold_in(key, d) block d; a 32-bit sample i
takes the xor of block i's words, a 64-bit one both words. Uniform floats are the dtype's
mantissa bits (u = m 2^-23 or m 2^-52), then max(lo, u (hi - lo) + lo) in the sample dtype;
normals are sqrt(2) erfinv(u) for u uniform in (-1, 1); integers, permutations, choices and
the distributions built on them follow jax.random's formulas. Equal to JAX: keys and every
integer and uniform draw bit for bit; float32 normals to the last bit or two (log1p's
implementations differ), float64 ones within a few ulp (erfinv's do). The rejection
samplers (gamma, loggamma and the distributions built on them: beta, dirichlet, chisquare,
t, f, generalized_normal, ball; poisson; binomial and multinomial) run jax.random's
algorithms with its key splits and arithmetic, so they give JAX's numbers to the last bits
of the libm functions inside (an accept/reject decision on such a tie may rarely go the
other way); rayleigh, wald and geometric are JAX's formulas on the same bits.

Keys are values, as in JAX: a `Key` holds its words as an int32 array of shape
(*batch, 2) (the bits of JAX's uint32 words; we have no unsigned dtype) and is a pytree
node, so keys pass through `jit` as dynamic arguments (a new key does not retrace), ride
in loop carries and are batched by `vmap` (`vmap(f)(split(key, 8))`). `split(key, n)`
gives a batch of n keys that indexes, iterates and unpacks. JAX's legacy raw keys work too:
`PRNGKey(seed)` is that int32 array itself, every function takes it, and `split`/`fold_in`
of a raw key return raw keys. A concrete key samples in C++ (one pass over the output); a
traced one (under jit or vmap) draws its bits through the threefry primitive (the same C++
kernel on the CPU; other backends expand it into int32 rounds),
which gives the same bits and, for the floats, the same values up to the last bits of the
erfinv behind normals.

Initializers follow JAX's variance-scaling definitions, fans and arithmetic (fan_in =
shape[-2] x receptive field, fan_out = shape[-1] x receptive field).
"""
from __future__ import annotations

import math
import operator
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

    @property
    def dtype(self) -> "KeyDType":
        """The key dtype (JAX's key<fry>: jnp.issubdtype(k.dtype, qb.dtypes.prng_key) holds)."""
        return KEY_DTYPE

    def reshape(self, *shape):
        """The keys in a new batch shape (their words stay whole)."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Key(data=_core.reshape(self._key_data(), tuple(shape) + (2,)))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):  # noqa: N802 (NumPy's name)
        return Key(data=_core.transpose(self._key_data(), tuple(reversed(range(self.ndim))) + (self.ndim,)))

    def _key_data(self):
        return self.data if self._data is not None else _core.asarray(self.data)

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


class KeyDType:
    """The dtype of key arrays (JAX's key<fry>, a Threefry key)."""

    name = "key<fry>"
    kind = "V"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType) or other == self.name

    def __hash__(self):
        return hash(self.name)


KEY_DTYPE = KeyDType()


def _join_keys(keys, axis, stack: bool):
    """qb.stack / qb.concatenate of keys: the keys' words joined along a batch axis."""
    datas = [k.data for k in keys]
    nd = keys[0].ndim + (1 if stack else 0)
    if not -nd <= axis < nd:
        raise ValueError(f"{'stack' if stack else 'concatenate'}: axis {axis} is out of range for keys of shape "
                         f"{keys[0].shape}")
    axis = axis % nd  # a batch axis: the words' axis stays last
    return Key(data=(qb.stack if stack else qb.concatenate)(datas, axis=axis))


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
    elif data.dtype == _core.uint32:  # the same bits (a modular conversion)
        data = data.astype(_core.int32)
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
    """Both words of blocks 0 .. size-1 of key k, shaped: the threefry primitive (the CPU
    runs the eager draws' vectorised kernel; other backends its int32 rounds)."""
    size = math.prod(shape)
    if size >= 1 << 31:
        raise ValueError(f"qb.random: a traced draw of {size} samples is too large (at most 2^31 - 1)")
    k0, k1 = _words_of(k)
    blocks = _core.random_threefry(_int32(k0), _int32(k1), tuple(shape))
    return blocks[0], blocks[1]


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


def _unit(first, second, d):
    """[0, 1) from the words of blocks, as jax.random.uniform maps its bits: float32 from the
    top 23 of the 32-bit word first ^ second, float64 from the top 52 of (first, second)."""
    if d == _core.float32:
        return (((first ^ second) >> 9) & 0x7FFFFF).astype(_core.float32) * (2.0 ** -23)
    low = ((second >> 12) & 0xFFFFF).astype(_core.float64)
    return (_unsigned(first) * 1048576.0 + low) * (2.0 ** -52)


def _traced_uniform01(k, shape, dtype):
    first, second = _traced_blocks(k, shape)
    return _unit(first, second, _float_dtype(dtype, "uniform"))


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------

def key(seed) -> Key:
    """A key from an integer seed (any int that fits in 64 bits, negative ones wrap; an
    integer array under jit): its words are the seed's high and low 32 bits, as JAX's
    (an int32 array seed has a high word of 0)."""
    if isinstance(seed, bool):
        raise TypeError("qb.random.key: seed must be an int, got bool")
    if isinstance(seed, int):
        if not -(1 << 63) <= seed < (1 << 64):
            raise OverflowError(f"qb.random.key: seed {seed} does not fit in 64 bits")
        if -(1 << 31) <= seed < 0 and qb.asarray(0).dtype == _core.int32:
            return Key((0, seed & _MASK))  # an int32 seed, as JAX's without x64
        return Key(((seed >> 32) & _MASK, seed & _MASK))
    if isinstance(seed, _core.Array) or _traced(seed):
        if seed.shape != () or seed.dtype not in (_core.int32, _core.int64):
            raise TypeError(f"qb.random.key: seed must be an int or an integer scalar, got {seed.dtype} of shape "
                            f"{tuple(seed.shape)}")
        if not _traced(seed):
            return key(int(seed.item()) & (_MASK if seed.dtype == _core.int32 else (1 << 64) - 1))
        if seed.dtype == _core.int32:
            return Key(data=qb.stack([qb.zeros_like(seed), seed]))
        hi = ((((seed >> 32) + (1 << 31)) & _MASK) - (1 << 31)).astype(_core.int32)
        lo = (((seed + (1 << 31)) & _MASK) - (1 << 31)).astype(_core.int32)
        return Key(data=qb.stack([hi, lo]))
    try:
        import numpy as np
        if isinstance(seed, np.integer) or (isinstance(seed, np.ndarray) and seed.shape == () and seed.dtype.kind in "iu"):
            v = int(seed)
            return key(v & _MASK if np.dtype(seed.dtype).itemsize <= 4 else v)
    except ImportError:
        pass
    raise TypeError(f"qb.random.key: seed must be an int, got {type(seed).__name__}")


def PRNGKey(seed):
    """JAX's legacy raw key: the words of key(seed) as a uint32 array of shape (2,)."""
    return key(seed).data.astype(_core.uint32)


def key_data(keys):
    """The words of a key (or key array) as a uint32 array of shape (*keys.shape, 2), as JAX's."""
    k, _ = _key_arg(keys, "key_data", single=False)
    return k.data.astype(_core.uint32)


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
        shape = tuple(operator.index(d) for d in num)
    except TypeError:
        raise ValueError(f"qb.random.{fname}: num must be a positive int or a shape, got {num!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"qb.random.{fname}: the shape {shape} has a negative dimension")
    return shape


def split(k, num=2):
    """`num` new keys (an int, or a shape): a Key array of shape (num,) (iterate, index or
    unpack it); for a raw key, raw words of shape (num, 2). Key i is block i of k, as in JAX."""
    key_, raw = _key_arg(k, "split")
    shape = _num_shape(num, "split")
    if key_._concrete_words() is not None:
        first, second = _core.random_blocks(*key_.words, shape)
    else:
        first, second = _traced_blocks(key_, shape)
    data = qb.stack([first, second], axis=-1)
    return data.astype(_core.uint32) if raw else Key(data=data)


def fold_in(k, data) -> Key:
    """A new key determined by k and an integer (e.g. a step or a process index; an integer
    scalar under jit): block data mod 2^32 of k, as in JAX."""
    key_, raw = _key_arg(k, "fold_in")
    if isinstance(data, bool):
        raise TypeError("qb.random.fold_in: data must be an int, got bool")
    concrete_key = key_._concrete_words() is not None
    if isinstance(data, int) or (hasattr(data, "__index__") and not isinstance(data, _core.Array)):
        if concrete_key:
            w = key_.words
            out = Key(_core.threefry2x32(w[0], w[1], 0, int(data) & _MASK))
            return out.data.astype(_core.uint32) if raw else out
        counter = _s32(int(data))
    elif isinstance(data, _core.Array) or _traced(data):
        if data.shape != () or data.dtype.kind not in "iu":
            raise TypeError(f"qb.random.fold_in: data must be an int or an integer scalar, got {data.dtype} of shape "
                            f"{tuple(data.shape)}")
        if not _traced(data) and concrete_key:
            return fold_in(k, int(data.item()))
        counter = (((data + (1 << 31)) & _MASK) - (1 << 31)).astype(_core.int32) if data.dtype == _core.int64 \
            else data.astype(_core.int32)
    else:
        raise TypeError(f"qb.random.fold_in: data must be an int, got {type(data).__name__}")
    k0, k1 = _words_of(key_)
    x0, x1 = _threefry(k0, k1, 0, counter)
    out = qb.stack([x0, x1])
    return out.astype(_core.uint32) if raw else Key(data=out)


# ---------------------------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------------------------

def _shape(shape) -> Tuple[int, ...]:
    if shape is None:
        return ()
    try:
        # operator.index: a float entry is refused, as in JAX, never truncated
        shape = (operator.index(shape),) if hasattr(shape, "__index__") else tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"qb.random: shape must be an int or a sequence of ints, got {shape!r}") from None
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
    """Random words, JAX's: with dtype=qb.uint32, uint16 or uint8, JAX's words of that width
    (qb.int32: the uint32 words' bits as int32); with qb.int64, 64-bit ones (the bits of JAX's
    uint64 words, which Quabla lacks). The default is the default integer dtype (int64, as
    JAX's uint64 with x64 enabled)."""
    key_, _ = _key_arg(k, "bits")
    d = qb.asarray(0).dtype if dtype is None else _core.zeros((), dtype).dtype
    if d not in (_core.int32, _core.int64, _core.uint8, _core.uint16, _core.uint32):
        raise TypeError(f"qb.random.bits: dtype must be qb.uint8, qb.uint16, qb.uint32, qb.int32 or qb.int64, got "
                        f"{d.name}")
    first, second = _blocks(key_, _shape(shape))
    if d != _core.int64:  # JAX's narrow words are the low bits of the 32-bit ones
        return (first ^ second).astype(d)
    return (first.astype(_core.int64) << 32) | (second.astype(_core.int64) & _MASK)


_FLOAT_MAX = {"f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308}


def _finite_span(lo: float, hi: float, d) -> bool:
    """Whether hi - lo, rounded to d, is finite (JAX's formula then applies)."""
    big = _FLOAT_MAX["f32" if d == _core.float32 else "f64"]
    return abs(lo) <= big and abs(hi) <= big and hi - lo <= big


def uniform(k, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform samples in [minval, maxval) (bounds may be arrays broadcasting to shape): JAX's
    max(minval, u (maxval - minval) + minval) in the sample dtype, u = the mantissa bits."""
    key_, _ = _key_arg(k, "uniform")
    shape = _shape(shape)
    d = _float_dtype(dtype, "uniform")
    scalar_bounds = isinstance(minval, (int, float)) and isinstance(maxval, (int, float))
    if scalar_bounds:
        if not minval < maxval:
            raise ValueError(f"qb.random.uniform: minval {minval} must be below maxval {maxval}")
        lo, hi = float(minval), float(maxval)
        if not _finite_span(lo, hi, d):
            # The span overflows the sample dtype (e.g. -1e308 to 1e308), where JAX's formula
            # gives inf and NaN: interpolate instead.
            u = uniform(key_, shape, d)
            r = u * hi + (1.0 - u) * lo
            return qb.clip(r, lo, qb.nextafter(qb.asarray(hi).astype(d), qb.asarray(lo).astype(d)))
        if key_._concrete_words() is not None:
            return _core.random_uniform(*key_.words, shape, d, lo, hi)
    u = _traced_uniform01(key_, shape, d) if key_._concrete_words() is None else \
        _core.random_uniform(*key_.words, shape, d)
    if scalar_bounds and (float(minval), float(maxval)) == (0.0, 1.0):
        return u  # max(0, u 1 + 0) is u
    lo = qb.asarray(minval).astype(d)
    hi = qb.asarray(maxval).astype(d)
    if not scalar_bounds:
        _fits("uniform", "minval", lo, shape)
        _fits("uniform", "maxval", hi, shape)
    r = qb.maximum(lo, u * (hi - lo) + lo)
    # Below maxval: where rounding reaches it (JAX then returns maxval), the float below it.
    return qb.where(r >= hi, qb.nextafter(hi, lo), r)


def _giles_f32(x):
    """erfinv of float32 x by Giles's single-precision approximation, in float32 operation for
    operation as XLA's ErfInv (and the C++ draw) evaluate it."""
    w = -qb.log1p(-(x * x))
    lt = w < 5.0
    s = qb.where(lt, w - 2.5, qb.sqrt(w) - 3.0)
    coeffs = ((2.81022636e-08, -0.000200214257), (3.43273939e-07, 0.000100950558), (-3.5233877e-06, 0.00134934322),
              (-4.39150654e-06, -0.00367342844), (0.00021858087, 0.00573950773), (-0.00125372503, -0.0076224613),
              (-0.00417768164, 0.00943887047), (0.246640727, 1.00167406), (1.50140941, 2.83297682))
    p = qb.where(lt, qb.full_like(x, coeffs[0][0]), qb.full_like(x, coeffs[0][1]))
    for central, tail in coeffs[1:]:
        p = qb.where(lt, qb.full_like(x, central), qb.full_like(x, tail)) + p * s
    return qb.where(qb.abs(x) == 1.0, x * math.inf, p * x)


def _sqrt2_erfinv(u):
    """sqrt(2) erfinv(u) as the normal samplers take it (float32: Giles's, as XLA; float64:
    the accurate inverse)."""
    if u.dtype == _core.float32:
        return math.sqrt(2.0) * _giles_f32(u)
    return math.sqrt(2.0) * _core.erf_inv(u)


def _above_minus_one(d) -> float:
    """The float of dtype d next above -1 (normals draw u in (-1, 1), as JAX)."""
    return -0.99999994039535522 if d == _core.float32 else math.nextafter(-1.0, 0.0)


def normal(k, shape=(), dtype=None):
    """Standard normal samples: sqrt(2) erfinv(u), u uniform in (-1, 1), as JAX. A complex
    dtype gives (re + i im) / sqrt(2) from two independent real draws (split keys), as JAX."""
    if dtype is not None and qb.dtype(dtype) in (_core.complex64, _core.complex128):
        part = _core.float32 if qb.dtype(dtype) == _core.complex64 else _core.float64
        k_re, k_im = split(k)
        sqrt2 = math.sqrt(2.0)
        return _core._complex(normal(k_re, shape, part) / sqrt2, normal(k_im, shape, part) / sqrt2)
    key_, _ = _key_arg(k, "normal")
    shape = _shape(shape)
    if key_._concrete_words() is not None:
        return _core.random_normal(*key_.words, shape, dtype)
    d = _float_dtype(dtype, "normal")
    return _sqrt2_erfinv(uniform(key_, shape, d, _above_minus_one(d), 1.0))


def truncated_normal(k, lower=-2.0, upper=2.0, shape=None, dtype=None):
    """Standard normal samples conditioned on [lower, upper]: sqrt(2) erfinv of u uniform
    between erf(lower / sqrt 2) and erf(upper / sqrt 2), kept strictly inside the bounds (JAX's)."""
    key_, _ = _key_arg(k, "truncated_normal")
    if shape is None:
        shape = tuple(qb.broadcast_shapes(tuple(getattr(lower, "shape", ())), tuple(getattr(upper, "shape", ()))))
    shape = _shape(shape)
    _fits("truncated_normal", "lower", lower, shape)
    _fits("truncated_normal", "upper", upper, shape)
    scalar_bounds = isinstance(lower, (int, float)) and isinstance(upper, (int, float))
    if scalar_bounds and not lower < upper:
        raise ValueError("truncated_normal: lower must be below upper")
    if key_._concrete_words() is not None and scalar_bounds:
        return _core.random_truncated_normal(*key_.words, float(lower), float(upper), shape, dtype)
    d = _float_dtype(dtype, "truncated_normal")
    lo = qb.asarray(lower).astype(d)
    hi = qb.asarray(upper).astype(d)
    sqrt2 = qb.asarray(math.sqrt(2.0)).astype(d)
    a, b = qb.erf(lo / sqrt2), qb.erf(hi / sqrt2)
    if key_._concrete_words() is not None:
        u = _core.random_uniform(*key_.words, shape, d)
    else:
        u = _traced_uniform01(key_, shape, d)
    x = _sqrt2_erfinv(qb.maximum(a, u * (b - a) + a))
    return qb.clip(x, qb.nextafter(lo, qb.full_like(lo, math.inf)), qb.nextafter(hi, qb.full_like(hi, -math.inf)))


def bernoulli(k, p=0.5, shape=None):
    """Bool samples, True with probability p (p may be an array; shape defaults to p's):
    uniform(key, shape, p's dtype) < p, as JAX."""
    if isinstance(p, (int, float)) and not 0.0 <= p <= 1.0:
        raise ValueError(f"qb.random.bernoulli: p must be in [0, 1], got {p}")
    if shape is None:
        shape = () if isinstance(p, (int, float)) else tuple(qb.asarray(p).shape)
    if isinstance(p, (int, float)):
        d = qb.default_dtype()
    else:
        p = qb.asarray(p)
        d = p.dtype if p.dtype in (_core.float32, _core.float64) else qb.default_dtype()
        p = p.astype(d)
    return uniform(k, shape, d) < p


def _int_dtype(dtype):
    d = _core.zeros((), dtype).dtype if dtype is not None else qb.asarray(0).dtype
    if d not in (_core.int32, _core.int64):
        raise TypeError("randint: dtype must be an integer dtype (qb.int32 or qb.int64)")
    return d


def _u32(words):
    """int32 words as their unsigned values, in int64."""
    return words.astype(_core.int64) & _MASK


def _mod64(words, span):
    """The 64-bit unsigned value of (first, second) words mod span (int64, 0 < span < 2^47):
    Horner's rule over its 16-bit limbs, every partial product below 2^63."""
    first, second = words
    r = None
    for limb in ((first >> 16) & 0xFFFF, first & 0xFFFF, (second >> 16) & 0xFFFF, second & 0xFFFF):
        limb = limb.astype(_core.int64)
        r = limb % span if r is None else (r * 65536 + limb) % span
    return r


def _mulmod(a, b, span):
    """a b mod span for 0 <= a, b < span <= 2^32 (int64), without overflowing int64."""
    return (((a * (b >> 16)) % span) * 65536 + a * (b & 0xFFFF)) % span


def randint(k, shape, minval, maxval, dtype=None):
    """Integers uniform in [minval, maxval) (bounds broadcast to shape and are clipped to the
    dtype's range; where maxval <= minval the result is minval), by JAX's algorithm and bits:
    twice the dtype's bits from two split keys, reduced modulo the span (a bias below
    span^2 / 2^bits, as JAX notes). int64 spans of 2^47 and more are drawn from 53 bits in
    floating point instead (not JAX's bits there)."""
    key_, _ = _key_arg(k, "randint")
    d = _int_dtype(dtype)
    shape = _shape(shape)
    info = (-(1 << 31), (1 << 31) - 1) if d == _core.int32 else (-(1 << 63), (1 << 63) - 1)
    lo_in, hi_in = qb.asarray(minval), qb.asarray(maxval)
    lo_in = lo_in if lo_in.dtype in (_core.int32, _core.int64) else lo_in.astype(_core.int64)
    hi_in = hi_in if hi_in.dtype in (_core.int32, _core.int64) else hi_in.astype(_core.int64)
    lo = qb.clip(lo_in.astype(_core.int64), info[0], info[1])
    hi = qb.clip(hi_in.astype(_core.int64), info[0], info[1])
    _fits("randint", "minval", lo, shape)
    _fits("randint", "maxval", hi, shape)
    out_of_range = hi_in.astype(_core.int64) > info[1]
    k1, k2 = split(key_)
    high, low = _blocks(k1, shape), _blocks(k2, shape)
    if d == _core.int32:
        # JAX's uint32 arithmetic, in int64 (every value stays below 2^33).
        span = (hi - lo) & _MASK
        span = qb.where(hi <= lo, 1, span)
        span = qb.where(out_of_range & (hi > lo), (span + 1) & _MASK, span)
        wrapped = span == 0  # the whole int32 range: x mod 0 is x in XLA
        s = qb.where(wrapped, 1, span)
        m = qb.where(wrapped, 65536, 65536 % s)
        m = qb.where(wrapped, (m * m) & _MASK, ((m * m) & _MASK) % s)
        hb, lb = _u32(high[0] ^ high[1]), _u32(low[0] ^ low[1])
        off = qb.where(wrapped, hb, hb % s) * m + qb.where(wrapped, lb, lb % s)
        off = qb.where(wrapped, off & _MASK, (off & _MASK) % s)
        return ((((lo + off) + (1 << 31)) & _MASK) - (1 << 31)).astype(_core.int32)
    span = qb.where(hi <= lo, 1, hi - lo)  # below 2^63 unless the difference overflowed
    exact = (span > 0) & (span < (1 << 47))
    s = qb.where(exact, span, 1)
    small = s <= (1 << 32)
    # multiplier = (2^32 mod span)^2 mod span, which wraps to 0 in uint64 above 2^32.
    m32 = (1 << 32) % s
    mult = qb.where(small, _mulmod(qb.where(small, m32, 0), qb.where(small, m32, 0), qb.where(small, s, 1)), 0)
    hr, lr = _mod64(high, s), _mod64(low, s)
    off = qb.where(small, (_mulmod(qb.where(small, hr, 0), mult, qb.where(small, s, 1)) + lr) % s, lr)
    out = lo + off
    wide = (hi > lo) & ~exact
    flo, fhi = lo.astype(_core.float64), hi.astype(_core.float64)
    u = _unit(low[0], low[1], _core.float64)
    approx = qb.clip(flo + u * (fhi - flo), -9.223372036854775e18, 9.223372036854775e18).astype(_core.int64)
    return qb.where(wide, qb.minimum(qb.maximum(approx, lo), hi - 1), out)


def _checked_axis(axis, ndim, fname):
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"qb.random.{fname}: axis must be an int, got {type(axis).__name__}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"qb.random.{fname}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def _shuffle(key_, x, axis):
    """x shuffled along axis as JAX's _shuffle: rounds of a stable sort by fresh 32-bit keys
    (enough rounds that all keys differ with high probability: ceil(3 ln n / ln(2^32 - 1)))."""
    size = math.prod(tuple(x.shape))
    rounds = math.ceil(3 * math.log(max(1, size)) / math.log(_MASK))
    for _ in range(rounds):
        key_, sub = split(key_)
        sort_keys = bits(sub, tuple(x.shape), _core.int32) ^ (-(1 << 31))  # the unsigned order, as int32
        x = qb.take_along_axis(x, qb.argsort(sort_keys, axis=axis, stable=True), axis=axis)
    return x


def permutation(k, x, axis=0, independent=False):
    """A random permutation of range(x) (an int) or of x's entries along axis (of each
    slice independently when independent=True), as JAX's."""
    key_, _ = _key_arg(k, "permutation")
    if _isint(x):
        n = int(x)
        if n < 0:
            raise ValueError(f"qb.random.permutation: x must be non-negative, got {n}")
        return _shuffle(key_, qb.arange(n), 0)
    x = qb.asarray(x)
    if x.ndim == 0:
        raise ValueError("qb.random.permutation: x must be an int or an array of at least one dimension")
    axis = _checked_axis(axis, x.ndim, "permutation")
    if independent or x.ndim == 1:
        return _shuffle(key_, x, axis)
    return qb.take(x, _shuffle(key_, qb.arange(x.shape[axis]), 0), axis=axis)


def choice(k, a, shape=(), replace=True, p=None, axis=0):
    """Samples of a (an int n means range(n)) along axis: with replacement by default, with
    probabilities p when given (normalised); JAX's algorithms (randint, a permutation's head,
    the inverse CDF, Gumbel top-k)."""
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
        if p.dtype not in (_core.float32, _core.float64):
            p = p.astype(qb.default_dtype())
    if p is None and replace:
        idx = randint(key_, shape, 0, n)
    elif p is None:
        idx = permutation(key_, n)[:count].reshape(shape)
    elif replace:
        cdf = qb.cumsum(p)
        r = cdf[-1] * (1.0 - uniform(key_, shape, p.dtype))
        idx = qb.minimum(qb.searchsorted(cdf, r), n - 1).astype(qb.asarray(0).dtype)
    else:
        g = gumbel(key_, (n,), p.dtype) + qb.log(p)
        idx = qb.argsort(-g, stable=True)[:count].reshape(shape)
    if arr is None:
        return idx
    return qb.take(arr, idx, axis=axis)


def _tiny_uniform(k, shape, dtype, fname):
    """Uniform samples in [tiny, 1) (positive, so their logs are finite)."""
    d = _float_dtype(dtype, fname)
    tiny = 1.1754943508222875e-38 if d == _core.float32 else 2.2250738585072014e-308
    return uniform(k, shape, d, tiny, 1.0)


def gumbel(k, shape=(), dtype=None):
    """Standard Gumbel samples: -log(-log(u)), u uniform in [tiny, 1) (JAX's default mode)."""
    return -qb.log(-qb.log(_tiny_uniform(k, shape, dtype, "gumbel")))


def categorical(k, logits, axis=-1, shape=None, replace=True):
    """Indices drawn with probabilities softmax(logits) along axis (the Gumbel-max trick, with
    JAX's noise layout); shape defaults to logits' shape without axis. replace=False draws
    distinct indices (Gumbel top-k): shape's leading dimensions count the draws."""
    key_, _ = _key_arg(k, "categorical")
    logits = qb.asarray(logits)
    if logits.ndim == 0:
        raise ValueError("qb.random.categorical: logits must have at least one dimension")
    axis = _checked_axis(axis, logits.ndim, "categorical") - logits.ndim  # negative, as JAX
    batch = tuple(d for i, d in enumerate(logits.shape) if i != logits.ndim + axis)
    shape = batch if shape is None else _shape(shape)
    if not _broadcasts_to(batch, shape):
        raise ValueError(f"qb.random.categorical: shape {shape} is not broadcast-compatible with the batch shape "
                         f"{batch} of logits")
    dtype = logits.dtype if logits.dtype in (_core.float32, _core.float64) else None
    if dtype is None:
        logits = logits.astype(qb.default_dtype())
    prefix = shape[:len(shape) - len(batch)]
    if not replace:
        draws = math.prod(prefix)
        n = logits.shape[axis]
        if draws > n:
            raise ValueError(f"qb.random.categorical: cannot draw {draws} samples without replacement from {n} "
                             f"categories")
        noisy = qb.moveaxis(logits + gumbel(key_, tuple(logits.shape), dtype), axis, -1)
        top = qb.argsort(-noisy, axis=-1, stable=True)[..., :draws]  # (*batch, draws)
        return qb.moveaxis(top, -1, 0).reshape(shape)
    noise_shape = list(shape[len(shape) - len(batch):])
    noise_shape.insert(axis % logits.ndim, logits.shape[axis])
    noise = gumbel(key_, prefix + tuple(noise_shape), dtype)
    return qb.argmax(noise + logits.reshape((1,) * len(prefix) + tuple(logits.shape)), axis=axis)


def exponential(k, shape=(), dtype=None):
    """Standard exponential samples: -log1p(-u)."""
    return -qb.log1p(-uniform(k, shape, _float_dtype(dtype, "exponential")))


def laplace(k, shape=(), dtype=None):
    """Standard Laplace samples."""
    d = _float_dtype(dtype, "laplace")
    u = uniform(k, shape, d, _above_minus_one(d), 1.0)
    return qb.sign(u) * qb.log1p(-qb.abs(u))


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
# Rejection samplers, by jax.random's algorithms with its key splits and its arithmetic (in
# the sample dtype), so the same key gives JAX's numbers. gamma (and everything built on it)
# gives every element its own key, split(key, size)[i], and runs JAX's per-element chain of
# splits on it, for all elements at once; poisson and binomial draw the whole array each
# round from one chain of splits, as JAX's. Each is a while_loop over rounds (traced keys,
# jit and vmap work), and the result depends on the key, the shape and the parameters only.
# ---------------------------------------------------------------------------------------------

_MAX_ROUNDS = 10000  # a cap that valid parameters never reach (JAX's loops have none)


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


def _stack_blocks(k0, k1, shape):
    """Both words of blocks 0 .. n-1 (n = shape's size) of every key of a stack (the int32
    words k0, k1, of one shape K): (first, second), each of shape K + shape."""
    b = _core.random_threefry(k0, k1, tuple(shape))
    lead = (slice(None),) * k0.ndim
    return b[lead + (0,)], b[lead + (1,)]


def _stack_split(k0, k1, num):
    """split(key, num) of every key of a stack: num (k0, k1) pairs of word arrays."""
    first, second = _stack_blocks(k0, k1, (num,))
    return [(first[..., j], second[..., j]) for j in range(num)]


def _stack_normal(k0, k1, d):
    """normal(key, (), d) of every key of a stack: u in (-1, 1) from block 0, then
    sqrt(2) erfinv(u), as normal's traced draw computes it."""
    u = _unit(*_stack_blocks(k0, k1, ()), d)
    lo, hi = qb.asarray(_above_minus_one(d)).astype(d), qb.asarray(1.0).astype(d)
    r = qb.maximum(lo, u * (hi - lo) + lo)
    return _sqrt2_erfinv(qb.where(r >= hi, qb.nextafter(hi, lo), r))


def _gamma_draws(key_, a, shape, log_space):
    """Gamma(a, 1) samples of a's dtype (or their logs), jax.random's: element i takes key
    split(key, size)[i] = (k, sub) = split of it, and Marsaglia and Tsang's method runs on
    alpha = a (a + 1 where a < 1) with d = alpha - 1/3, c = (1/3) / sqrt(d): every round
    (k, x_key, u_key) = split(k, 3), normals x from the chain (x_key, s) = split(x_key)
    until v = 1 + c x > 0, u = uniform(u_key), accepting where u < 1 - 0.0331 x^4 or
    log u < x^2 / 2 + d (1 - v^3 + log v^3); the sample is d v^3, times (1 - uniform(sub))^(1/a)
    where a < 1 (log space: log d + log v^3 + log1p(-uniform(sub)) / a). All elements step
    together; an accepted one stops changing. NaN where a < 0 or is NaN."""
    d = a.dtype
    n = math.prod(shape)
    if n == 0:
        return qb.zeros(shape, d)
    a = qb.broadcast_to(a, shape).reshape((n,))
    (l0, l1), (s0, s1) = _stack_split(*_blocks(key_, (n,)), 2)
    boost_mask = a >= 1.0
    alpha = qb.where(boost_mask, a, a + 1.0)
    dd = alpha - 1.0 / 3.0
    c = (1.0 / 3.0) / qb.sqrt(dd)

    def body(carry):
        i, l0, l1, x0, x1, inner, u, cube, done = carry
        fresh = ~inner  # a new round (else: a normal draw again, the last v was <= 0)
        (n0, n1), (y0, y1), (w0, w1) = _stack_split(l0, l1, 3)
        l0, l1 = qb.where(fresh, n0, l0), qb.where(fresh, n1, l1)
        x0, x1 = qb.where(fresh, y0, x0), qb.where(fresh, y1, x1)
        u = qb.where(fresh, _unit(*_stack_blocks(w0, w1, ()), d), u)
        (x0, x1), (z0, z1) = _stack_split(x0, x1, 2)
        x = _stack_normal(z0, z1, d)
        v = 1.0 + x * c
        inner = v <= 0.0
        xx, vvv = x * x, v * v * v
        reject = (u >= 1.0 - 0.0331 * (xx * xx)) & (qb.log(u) >= xx * 0.5 + dd * ((1.0 - vvv) + qb.log(vvv)))
        accepted = ~done & ~inner & ~reject
        return i + 1, l0, l1, x0, x1, inner, u, qb.where(accepted, vvv, cube), done | accepted

    def more(carry):
        return (carry[0] < _MAX_ROUNDS) & ~qb.all(carry[-1])
    zero = qb.zeros_like(a)
    start = (qb.asarray(0, dtype=_core.int32), l0, l1, l0, l1, qb.zeros(a.shape, _core.bool_), zero, zero,
             (a < 0) | qb.isnan(a))
    cube = qb.while_loop(more, body, start)[7]
    u = _unit(*_stack_blocks(s0, s1, ()), d)
    if log_space:
        lu = qb.log1p(-u)  # -exponential(sub)
        boost = qb.where(boost_mask | (lu == 0.0), qb.zeros_like(lu), lu * (1.0 / a))
        out = qb.log(dd) + qb.log(cube) + boost
    else:
        out = dd * cube * qb.where(boost_mask, qb.ones_like(u), qb.power(1.0 - u, 1.0 / a))
    return qb.where(a < 0, qb.full_like(out, math.nan), out).reshape(shape)


_IMPLICIT = {}
_TINY = {"float32": 1.1754943508222875e-38, "float64": 2.2250738585072014e-308}


def _implicit_gamma_rule(log_space: bool):
    """x itself, with the implicit reparameterisation gradient dx/da = -(dF/da)(x) / pdf(x)
    (F the Gamma(a) CDF): the derivative of the sample at a fixed quantile, as JAX's. In log
    space (x = log of the sample) d log s / da = (ds/da) / s with s = exp(x), at least the
    dtype's tiny (as JAX's). The rule runs only when a is differentiated; plain sampling
    never evaluates it."""
    if log_space not in _IMPLICIT:
        from ._special import gammaln
        from ._special_incomplete import gammainc

        @qb.custom_jvp
        def implicit(a, x):
            return x

        @implicit.defjvp
        def _rule(primals, tangents):
            a, x = primals
            da, _ = tangents
            s = qb.maximum(qb.exp(x), _TINY[x.dtype.name]) if log_space else x
            dF = qb.jvp(lambda b: gammainc(b, s), (a,), (qb.ones_like(a),))[1]
            log_pdf = (a - 1.0) * qb.log(s) - s - gammaln(a)  # log_space: of log s, pdf(s) s
            if log_space:
                log_pdf = log_pdf + qb.log(s)
            return x, -dF * qb.exp(-log_pdf) * da
        _IMPLICIT[log_space] = implicit
    return _IMPLICIT[log_space]


def _gamma_sample(key_, a, shape, log_space: bool = False):
    """Gamma(a) samples (their logs with log_space) of a's dtype, differentiable in a (the
    sampler's loop sees a constant a)."""
    a = qb.broadcast_to(a, shape)
    x = _gamma_draws(key_, qb.stop_gradient(a), shape, log_space)
    if not _traced(a):
        return x
    return _implicit_gamma_rule(log_space)(a, x)


def gamma(k, a, shape=None, dtype=None):
    """Gamma(a, 1) samples (a broadcast to shape), jax.random.gamma's numbers: Marsaglia and
    Tsang's method per element (a < 1 boosted), in the sample dtype; 0 where a = 0, NaN where
    a < 0 or is NaN (JAX: NaN below about -2/3, meaningless values between); differentiable in
    a by implicit reparameterisation (as JAX's)."""
    key_, _ = _key_arg(k, "gamma")
    d = _float_dtype(dtype, "gamma")
    a = qb.asarray(a).astype(d)
    return _gamma_sample(key_, a, _param_shape("gamma", shape, a))


def loggamma(k, a, shape=None, dtype=None):
    """log of Gamma(a, 1) samples, computed in log space (finite for tiny a, where the samples
    themselves underflow): jax.random.loggamma's numbers, the same draws as gamma's; -inf at
    a = 0; differentiable in a."""
    key_, _ = _key_arg(k, "loggamma")
    d = _float_dtype(dtype, "loggamma")
    a = qb.asarray(a).astype(d)
    return _gamma_sample(key_, a, _param_shape("loggamma", shape, a), log_space=True)


def beta(k, a, b, shape=None, dtype=None):
    """Beta(a, b) samples X / (X + Y), X ~ Gamma(a) from the first half of split(key) and Y ~
    Gamma(b) from the second, from their logs (exp(log X - m) / (exp(log X - m) + exp(log Y -
    m)), m the larger), as jax.random.beta."""
    key_, _ = _key_arg(k, "beta")
    d = _float_dtype(dtype, "beta")
    a, b = qb.asarray(a).astype(d), qb.asarray(b).astype(d)
    shape = _param_shape("beta", shape, a, b)
    ka, kb = split(key_)
    log_x, log_y = _gamma_sample(ka, a, shape, log_space=True), _gamma_sample(kb, b, shape, log_space=True)
    m = qb.maximum(log_x, log_y)
    x, y = qb.exp(log_x - m), qb.exp(log_y - m)
    return x / (x + y)


def dirichlet(k, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples of shape (*shape, len(alpha)) (alpha's last axis holds the
    concentrations): the softmax of loggamma(key, alpha) draws along it, as jax.random's."""
    key_, _ = _key_arg(k, "dirichlet")
    d = _float_dtype(dtype, "dirichlet")
    alpha = qb.asarray(alpha).astype(d)
    if alpha.ndim < 1:
        raise ValueError("qb.random.dirichlet: alpha must have at least one dimension")
    batch = _param_shape("dirichlet", shape, alpha[..., 0])
    log_g = _gamma_sample(key_, alpha, batch + (alpha.shape[-1],), log_space=True)
    e = qb.exp(log_g - qb.max(log_g, axis=-1, keepdims=True))
    return e / qb.sum(e, axis=-1, keepdims=True)


def chisquare(k, df, shape=None, dtype=None):
    """Chi-square samples with df degrees of freedom: 2 exp(loggamma(key, df / 2)), as
    jax.random's."""
    key_, _ = _key_arg(k, "chisquare")
    d = _float_dtype(dtype, "chisquare")
    df = qb.asarray(df).astype(d)
    shape = _param_shape("chisquare", shape, df)
    return qb.exp(_gamma_sample(key_, df / 2.0, shape, log_space=True)) * 2.0


def t(k, df, shape=None, dtype=None):
    """Student's t samples n sqrt((df / 2) / g), n ~ N(0, 1) from the first half of split(key)
    and g ~ Gamma(df / 2) from the second, as jax.random.t; shape defaults to df's."""
    key_, _ = _key_arg(k, "t")
    d = _float_dtype(dtype, "t")
    df = qb.asarray(df).astype(d)
    shape = _param_shape("t", shape, df)
    kn, kg = split(key_)
    z = normal(kn, shape, d)
    half_df = df / 2.0
    return z * qb.sqrt(half_df / _gamma_sample(kg, half_df, shape))


def _reciprocal(p, d):
    """1 / p computed in the default float dtype (as JAX divides its weakly typed p), then d."""
    w = qb.default_dtype()
    return (qb.asarray(1.0).astype(w) / qb.asarray(p).astype(w)).astype(d)


def generalized_normal(k, p, shape=(), dtype=None):
    """Samples with density proportional to exp(-|x|^p): rademacher(k2) * gamma(k1, 1/p)^(1/p),
    (k1, k2) = split(key), as jax.random's."""
    key_, _ = _key_arg(k, "generalized_normal")
    d = _float_dtype(dtype, "generalized_normal")
    p = float(p)
    if not p > 0:
        raise ValueError(f"qb.random.generalized_normal: p must be positive, got {p}")
    shape = _shape(shape)
    kg, ks = split(key_)
    inv_p = _reciprocal(p, d)
    return rademacher(ks, shape, d) * qb.power(_gamma_sample(kg, inv_p, shape), inv_p)


def ball(k, d, p=2.0, shape=(), dtype=None):
    """Points uniform in the d-dimensional unit p-norm ball, of shape (*shape, d): g / (sum |g|^p
    + e)^(1/p), g generalized normal from the first half of split(key), e exponential from the
    second, as jax.random's."""
    key_, _ = _key_arg(k, "ball")
    if not _isint(d) or int(d) < 1:
        raise ValueError(f"qb.random.ball: d must be a positive int, got {d!r}")
    dt = _float_dtype(dtype, "ball")
    shape = _shape(shape)
    kg, ke = split(key_)
    g = generalized_normal(kg, p, shape + (int(d),), dt)
    e = exponential(ke, shape, dt)
    norm = qb.sum(qb.power(qb.abs(g), qb.asarray(float(p)).astype(dt)), axis=-1) + e
    return g / qb.power(norm, _reciprocal(float(p), dt))[..., None]


def _float_to_int(x, out):
    """x converted to the integer dtype out as XLA converts (JAX's counts): NaN to 0, values
    beyond the range to its ends."""
    lo, hi = (-(1 << 31), (1 << 31) - 1) if out == _core.int32 else (-(1 << 63), (1 << 63) - 1)
    above, below = x >= float(hi), x <= float(lo)
    r = qb.where(qb.isnan(x) | above | below, qb.zeros_like(x), x).astype(out)
    return qb.where(above, qb.full_like(r, hi), qb.where(below, qb.full_like(r, lo), r))


def poisson(k, lam, shape=None, dtype=None):
    """Poisson(lam) counts (integers of dtype, the default integer dtype by default), by
    jax.random.poisson's algorithms, keys and float32 arithmetic (lam is float32, as JAX's,
    even with x64): Knuth's (count uniforms until their log sum reaches -lam, a chain of
    splits of key) where lam < 10 or is NaN, Hoermann's transformed rejection (PTRS, rounds
    of split(key, 3) from key again) elsewhere, both over the whole array. 0 where lam = 0, -1
    where lam < 0 or is NaN (JAX's)."""
    key_, _ = _key_arg(k, "poisson")
    out = qb.asarray(0).dtype if dtype is None else _core.zeros((), dtype).dtype
    if out not in (_core.int32, _core.int64):
        raise TypeError("qb.random.poisson: dtype must be an integer dtype")
    f32 = _core.float32
    lam = qb.asarray(lam).astype(f32)
    shape = _param_shape("poisson", shape, lam)
    lam = qb.broadcast_to(lam, shape)
    use_knuth = qb.isnan(lam) | (lam < 10.0)
    lam_knuth = qb.where(use_knuth, lam, qb.zeros_like(lam))
    lam_ptrs = qb.where(use_knuth, qb.full_like(lam, 1e5), lam)  # JAX's stand-in, which sets the rounds too
    from ._special import gammaln

    def knuth(carry):
        i, count, key_i, log_prod = carry
        key_i, sub = split(key_i)
        count = qb.where(log_prod > -lam_knuth, count + 1, count)
        return i + 1, count, key_i, log_prod + qb.log(uniform(sub, shape, f32))
    start = (qb.asarray(0, dtype=_core.int32), qb.zeros(shape, out), key_, qb.zeros(shape, f32))
    knuth_count = qb.while_loop(lambda c: (c[0] < _MAX_ROUNDS) & qb.any(c[3] > -lam_knuth), knuth, start)[1] - 1

    log_lam = qb.log(lam_ptrs)
    b = 0.931 + 2.53 * qb.sqrt(lam_ptrs)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2.0)

    def ptrs(carry):
        # Every round redraws every element; the last accepted proposal counts (as JAX's).
        i, count, accepted, key_i = carry
        key_i, k_u, k_v = split(key_i, 3)
        u = uniform(k_u, shape, f32) - 0.5
        v = uniform(k_v, shape, f32)
        us = 0.5 - qb.abs(u)
        x = qb.floor((2.0 * a / us + b) * u + lam_ptrs + 0.43)
        s = qb.log(v * inv_alpha / (a / (us * us) + b))
        bound = -lam_ptrs + x * log_lam - gammaln(x + 1.0)
        reject = (x < 0) | ((us < 0.013) & (v > us))
        accept = ((us >= 0.07) & (v <= v_r)) | (~reject & (s <= bound))
        return i + 1, qb.where(accept, x, count), accepted | accept, key_i
    start = (qb.asarray(0, dtype=_core.int32), qb.full(shape, -1.0, f32), qb.zeros(shape, _core.bool_), key_)
    ptrs_count = qb.while_loop(lambda c: (c[0] < _MAX_ROUNDS) & ~qb.all(c[2]), ptrs, start)[1]
    counts = qb.where(use_knuth, knuth_count, _float_to_int(ptrs_count, out))
    return qb.where(lam == 0, qb.zeros_like(counts), counts)


# Stirling's series tails log k! - (k + 1/2) log(k + 1) + (k + 1) - log(2 pi) / 2 for k = 0 .. 9
# (TensorFlow's and JAX's table for BTRS).
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    """The tail of Stirling's series at k, as JAX's BTRS takes it: the table up to 9; above,
    the series 1/12 - ... evaluated at min(k, 9) (JAX clamps before evaluating it)."""
    c = qb.clip(k, 0.0, 9.0)
    sq = (c + 1.0) * (c + 1.0)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / sq) / sq) / (c + 1.0)
    table = qb.take(qb.asarray(_STIRLING_TAIL).astype(k.dtype), qb.floor(c).astype(_core.int32), mode="clip")
    return qb.where(k <= 9.0, table, series)


def binomial(k, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats (dtype, the default float by default), by
    jax.random.binomial's algorithms, keys and arithmetic (in p's float dtype, the default
    float for Python numbers): with q = min(p, 1 - p), inversion by geometric waiting times (a
    chain of splits of key) where n q <= 10, Hoermann's BTRS (rounds of split(key, 3) from key
    again) elsewhere; n - the count where p >= 1/2. n is floored (as JAX's); NaN where n < 0
    or is NaN, or p is outside [0, 1] or NaN; inf where n is inf."""
    key_, _ = _key_arg(k, "binomial")
    d = _float_dtype(dtype, "binomial")
    p = qb.asarray(p)
    w = p.dtype if p.dtype in (_core.float32, _core.float64) else qb.default_dtype()
    p, n = p.astype(w), qb.asarray(n).astype(w)
    shape = _param_shape("binomial", shape, n, p)
    count, prob = qb.broadcast_to(n, shape), qb.broadcast_to(p, shape)
    p_below_half = prob < 0.5
    q = qb.where(p_below_half, prob, 1.0 - prob)
    count_nan_or_neg = qb.isnan(count) | (count < 0.0)
    count_inf = qb.isinf(count)
    q_nan, q_neg = qb.isnan(q), q < 0.0
    q = qb.where(q_nan | q_neg, qb.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = qb.floor(count)
    count_inv = qb.where(use_inversion, count, qb.zeros_like(count))
    count_btrs = qb.where(use_inversion, qb.full_like(count, 1e4), count)  # JAX's stand-ins, which set the rounds
    q_btrs = qb.where(use_inversion, qb.full_like(q, 0.5), q)

    log1m_q = qb.log1p(-q)

    def invert(carry):
        i, num, total, key_i = carry
        sub, key_i = split(key_i)
        num = qb.where(total <= count_inv, num + 1.0, num)
        return i + 1, num, total + qb.ceil(qb.log(uniform(sub, shape, w)) / log1m_q), key_i
    start = (qb.asarray(0, dtype=_core.int32), qb.zeros(shape, w), qb.zeros(shape, w), key_)
    inverted = qb.while_loop(lambda c: (c[0] < _MAX_ROUNDS) & qb.any(c[2] <= count_inv), invert, start)[1] - 1.0

    sd = qb.sqrt(count_btrs * q_btrs * (1.0 - q_btrs))
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * q_btrs
    c = count_btrs * q_btrs + 0.5
    v_r = 0.92 - 4.2 / b
    r = q_btrs / (1.0 - q_btrs)
    alpha = (2.83 + 5.1 / b) * sd
    m = qb.floor((count_btrs + 1.0) * q_btrs)
    head = (m + 0.5) * qb.log((m + 1.0) / (r * (count_btrs - m + 1.0)))

    def btrs(carry):
        # Every round redraws every element; the last accepted proposal counts (as JAX's).
        i, out, accepted, key_i = carry
        key_i, k_u, k_v = split(key_i, 3)
        u = uniform(k_u, shape, w) - 0.5
        v = uniform(k_v, shape, w)
        us = 0.5 - qb.abs(u)
        x = qb.floor((2.0 * a / us + b) * u + c)
        reject = (x < 0.0) | (x > count_btrs)
        log_v = qb.log(v * alpha / (a / (us * us) + b))
        bound = (head + (count_btrs + 1.0) * qb.log((count_btrs - m + 1.0) / (count_btrs - x + 1.0))
                 + (x + 0.5) * qb.log(r * (count_btrs - x + 1.0) / (x + 1.0))
                 + _stirling_tail(m) + _stirling_tail(count_btrs - m)
                 - _stirling_tail(x) - _stirling_tail(count_btrs - x))
        accept = ((us >= 0.07) & (v <= v_r)) | (~reject & (log_v <= bound))
        return i + 1, qb.where(accept, x, out), accepted | accept, key_i
    start = (qb.asarray(0, dtype=_core.int32), qb.full(shape, -1.0, w), qb.zeros(shape, _core.bool_), key_)
    drawn = qb.while_loop(lambda c: (c[0] < _MAX_ROUNDS) & ~qb.all(c[2]), btrs, start)[1]

    samples = qb.where(use_inversion, inverted.astype(d), drawn.astype(d))
    invalid = q_neg | q_nan | count_nan_or_neg
    samples = qb.where(invalid, qb.full_like(samples, math.nan), samples)
    samples = qb.where(count_inf & ~invalid, qb.full_like(samples, math.inf), samples)
    return qb.where(p_below_half | count_nan_or_neg | q_nan | count_inf, samples, count.astype(d) - samples)


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


def _scaled_draw(k, shape, dtype, variance: float, distribution: str):
    """A variance-scaling draw with JAX's arithmetic, in the sample dtype: a truncated normal
    times sqrt(variance) / 0.8796..., a normal times sqrt(variance), or U[-1, 1) times
    sqrt(3 variance)."""
    d = _float_dtype(dtype, "initializer")
    var = qb.asarray(variance).astype(d)
    if distribution == "truncated_normal":
        return truncated_normal(k, -2.0, 2.0, shape, d) * (qb.sqrt(var) / qb.asarray(_TRUNC_STD).astype(d))
    if distribution == "normal":
        return normal(k, shape, d) * qb.sqrt(var)
    return uniform(k, shape, d, -1.0, 1.0) * qb.sqrt(3.0 * var)


def _variance_scaling(k, shape, dtype, scale, mode, distribution):
    fan_in, fan_out = _fans(shape)
    denom = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode]
    return _scaled_draw(k, _shape(shape), dtype, scale / denom, distribution)


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


# ---------------------------------------------------------------------------------------------
# More samplers: jax.random's lognormal, pareto, weibull_min, maxwell, double_sided_maxwell,
# triangular, with JAX's formulas on the same bits (the same key gives JAX's samples).
# ---------------------------------------------------------------------------------------------

def _param(v, d):
    return qb.asarray(v).astype(d)


def lognormal(k, sigma=1.0, shape=None, dtype=None):
    """exp(sigma * normal(key, shape)) (jax.random.lognormal); shape defaults to sigma's."""
    d = _float_dtype(dtype, "lognormal")
    sigma = _param(sigma, d)
    return qb.exp(normal(k, _param_shape("lognormal", shape, sigma), d) * sigma)


def pareto(k, b, shape=None, dtype=None):
    """Pareto(b) samples exp(exponential(key, shape) / b) (jax.random.pareto); shape
    defaults to b's."""
    d = _float_dtype(dtype, "pareto")
    b = _param(b, d)
    return qb.exp(exponential(k, _param_shape("pareto", shape, b), d) / b)


def weibull_min(k, scale, concentration, shape=(), dtype=None):
    """Weibull samples (-log1p(-u)) ** (1 / concentration) * scale, u uniform in [0, 1)
    (jax.random.weibull_min)."""
    d = _float_dtype(dtype, "weibull_min")
    u = uniform(k, _shape(shape), d, 0.0, 1.0)
    return qb.power(-qb.log1p(-u), 1.0 / _param(concentration, d)) * _param(scale, d)


def maxwell(k, shape=(), dtype=None):
    """Maxwell samples: the norm of 3 standard normals (jax.random.maxwell)."""
    d = _float_dtype(dtype, "maxwell")
    z = normal(k, _shape(shape) + (3,), d)
    return qb.sqrt(qb.sum(z * z, axis=-1))


def double_sided_maxwell(k, loc, scale, shape=(), dtype=None):
    """Double-sided Maxwell samples sign * maxwell * scale + loc (jax.random's): the sample
    shape is shape + the parameters' broadcast shape (or that shape alone when shape is
    empty), the magnitude and the sign from the two halves of split(key)."""
    key_, _ = _key_arg(k, "double_sided_maxwell")
    d = _float_dtype(dtype, "double_sided_maxwell")
    loc, scale = _param(loc, d), _param(scale, d)
    params = tuple(qb.broadcast_shapes(tuple(loc.shape), tuple(scale.shape)))
    shape = _shape(shape)
    shape = (shape or params) + params
    km, ks = split(key_)
    return rademacher(ks, shape, d) * maxwell(km, shape, d) * scale + loc


def triangular(k, left, mode, right, shape=None, dtype=None):
    """Triangular samples on [left, right] with the given mode, by inverting the CDF of one
    uniform draw (jax.random.triangular); shape defaults to the parameters' broadcast."""
    d = _float_dtype(dtype, "triangular")
    left, mode, right = _param(left, d), _param(mode, d), _param(right, d)
    shape = _param_shape("triangular", shape, left, mode, right)
    left, mode, right = (qb.broadcast_to(v, shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = uniform(k, shape, d)
    low = left + qb.sqrt(u * (right - left) * (mode - left))
    high = right - qb.sqrt((1.0 - u) * (right - left) * (right - mode))
    return qb.where(u < fc, low, high)


__all__ += ["lognormal", "pareto", "weibull_min", "maxwell", "double_sided_maxwell", "triangular"]


# ---------------------------------------------------------------------------------------------
# jax.random's rayleigh, wald, geometric and f (JAX's formulas on the same bits: the same key
# gives JAX's samples), and multinomial (built on binomial).
# ---------------------------------------------------------------------------------------------

def _float_param(v, d, fname, what):
    """A distribution parameter as an array of the sample dtype d."""
    if isinstance(v, (str, bytes)) or v is None:
        raise TypeError(f"qb.random.{fname}: {what} must be a number or an array of numbers, got "
                        f"{type(v).__name__}")
    a = qb.asarray(v)
    if a.dtype == _core.bool_:
        raise TypeError(f"qb.random.{fname}: {what} must be a number or a numeric array, got a bool array")
    return a.astype(d)


def rayleigh(k, scale, shape=None, dtype=None):
    """Rayleigh(scale) samples scale sqrt(-2 log u), u = uniform(key, shape) (jax.random's
    formula and bits); shape defaults to scale's."""
    key_, _ = _key_arg(k, "rayleigh")
    d = _float_dtype(dtype, "rayleigh")
    scale = _float_param(scale, d, "rayleigh", "scale")
    shape = _param_shape("rayleigh", shape, scale)
    u = uniform(key_, shape, d)
    return qb.broadcast_to(scale, shape) * qb.sqrt(qb.log(u) * -2.0)


def wald(k, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian with unit shape) samples of the given mean, by
    Michael-Schucany-Haas with jax.random's arithmetic and bits: v ~ N(0, 1) from the first
    half of split(key), z ~ U[0, 1) from the second, y = v^2, x = mean + mean^2 y / 2 -
    mean / 2 sqrt(4 mean y + mean^2 y^2), then x where z <= mean / (mean + x), else mean^2 / x.
    shape defaults to mean's."""
    key_, _ = _key_arg(k, "wald")
    d = _float_dtype(dtype, "wald")
    mean = _float_param(mean, d, "wald", "mean")
    shape = _param_shape("wald", shape, mean)
    k1, k2 = split(key_)
    mean = qb.broadcast_to(mean, shape)
    v = normal(k1, shape, d)
    z = uniform(k2, shape, d)
    y = v * v
    y_sq = y * y
    mean_sq = mean * mean
    sqrt_term = qb.sqrt(4.0 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2.0 - mean / 2.0 * sqrt_term
    return qb.where(z <= mean / (mean + x), x, mean_sq / x)


def geometric(k, p, shape=None, dtype=None):
    """Geometric(p) samples on {1, 2, ...} (the number of trials to the first success), as
    integers of dtype (the default integer dtype): floor(log u / log1p(-p)) + 1 with u =
    uniform(key, shape) in p's float dtype (0 replaced by 1), jax.random's formula and bits.
    shape defaults to p's."""
    key_, _ = _key_arg(k, "geometric")
    out = qb.asarray(0).dtype if dtype is None else _core.zeros((), dtype).dtype
    if out not in (_core.int32, _core.int64):
        raise ValueError(f"qb.random.geometric: dtype must be an integer dtype (qb.int32 or qb.int64), got {out}")
    if isinstance(p, (str, bytes)) or p is None:
        raise TypeError(f"qb.random.geometric: p must be a number or an array of numbers, got {type(p).__name__}")
    p = qb.asarray(p)
    d = p.dtype if p.dtype in (_core.float32, _core.float64) else qb.default_dtype()
    p = p.astype(d)
    shape = _param_shape("geometric", shape, p)
    u = uniform(key_, shape, d)
    u = qb.where(u == 0, qb.ones_like(u), u)
    g = qb.floor(qb.log(u) / qb.broadcast_to(qb.log1p(-p), shape)) + 1.0
    return g.astype(out)


def f(k, dfnum, dfden, shape=None, dtype=None):
    """F(dfnum, dfden) samples (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden), the numerator
    from the second half of split(key) and the denominator from the first, as jax.random.f
    arranges them (so JAX's numbers, as chisquare's). shape defaults to the parameters'
    broadcast shape."""
    key_, _ = _key_arg(k, "f")
    d = _float_dtype(dtype, "f")
    dfnum = _float_param(dfnum, d, "f", "dfnum")
    dfden = _float_param(dfden, d, "f", "dfden")
    shape = _param_shape("f", shape, dfnum, dfden)
    key_dfd, key_dfn = split(key_)
    num = chisquare(key_dfn, dfnum, shape, d) / dfnum
    den = chisquare(key_dfd, dfden, shape, d) / dfden
    return num / den


def multinomial(k, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts (floats, as jax.random.multinomial; categories along p's last
    axis, each row's counts summing to n exactly) by JAX's sequential scheme: category i's
    count is binomial(keys[i], remaining trials, p_i / (p_i + ... + p_last)), keys =
    split(key, number of categories), computed in the float dtype n and p promote to (the
    default float for Python numbers and integers), as JAX's: JAX's numbers. shape is the
    whole result shape (its last entry the number of categories, as JAX's code takes it); by
    default the broadcast of p's shape and n's shape + (categories,). unroll is accepted for
    JAX's signature (the loop over categories is unrolled in Python)."""
    key_, _ = _key_arg(k, "multinomial")
    d = _float_dtype(dtype, "multinomial")
    w = _core.float64
    for v, what in ((n, "n"), (p, "p")):
        _float_param(v, w, "multinomial", what)  # the argument checks
    w = qb.result_type(n, p)
    if w not in (_core.float32, _core.float64):
        w = qb.default_dtype()
    n = _float_param(n, w, "multinomial", "n")
    p = _float_param(p, w, "multinomial", "p")
    if p.ndim < 1:
        raise ValueError("qb.random.multinomial: p must have at least one dimension (the categories along its last "
                         "axis)")
    cats = p.shape[-1]
    if shape is None:
        shape = tuple(qb.broadcast_shapes(tuple(p.shape), tuple(n.shape) + (cats,)))
    else:
        shape = _shape(shape)
        if not shape or shape[-1] != cats:
            raise ValueError(f"qb.random.multinomial: shape {shape} must end with the number of categories {cats} "
                             f"(p's last axis); pass shape=batch + ({cats},)")
        for what, v, target in (("p", p, shape), ("n", n, shape[:-1])):
            if not _broadcasts_to(tuple(v.shape), target):
                raise ValueError(f"qb.random.multinomial: {what} of shape {tuple(v.shape)} does not broadcast to "
                                 f"{target}")
    remainder = qb.broadcast_to(n, shape[:-1])
    p = qb.broadcast_to(p, shape)
    remaining = qb.flip(qb.cumsum(qb.flip(p, axis=-1), axis=-1), axis=-1)  # p_i + ... + p_last
    ratios = qb.clip(p / qb.where(remaining == 0, qb.ones_like(remaining), remaining), 0.0, 1.0)
    counts = []
    for i, ki in enumerate(split(key_, cats)):
        c = binomial(ki, remainder, ratios[..., i], dtype=w)
        counts.append(c)
        remainder = remainder - c
    return qb.stack(counts, axis=-1).astype(d)


__all__ += ["rayleigh", "wald", "geometric", "f", "multinomial"]
