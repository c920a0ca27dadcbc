"""Elementwise accuracy: every elementwise function is within 4 ULP of a correctly rounded
reference over a sweep of its domain, in float32 and float64, including ±0, ±inf, NaN and
subnormals (no flush-to-zero).

The references (tests/python/ulp_reference.py) are computed with mpmath at 200 bits or
exactly with rationals, then rounded to nearest-even straight into the target format.
A (function, dtype) case that is known to exceed 4 ULP is listed in KNOWN_INACCURATE with
its worst case and marked xfail(strict=True): the tolerance is never widened, and fixing
the kernel turns the case into an XPASS failure, so the entry must then be removed.
"""
from __future__ import annotations

import functools
import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import quabla as qb

from ulp_reference import (
    F32,
    F64,
    FORMATS,
    around,
    assemble,
    bits_sweep,
    fmt_consts,
    is_odd_integer,
    lin_sweep,
    log_sweep,
    mpf_of,
    reference_binary,
    reference_unary,
    round_to,
    specials,
    ulp_distance,
)

MAX_ULP = 4
DTYPES = ("float32", "float64")

nan, inf = math.nan, math.inf


def _isint(x: float) -> bool:
    return math.isfinite(x) and x == math.floor(x)


# ----------------------------------------------------------------------------------------
# Unary references: f(x: float) -> mpf | mpc | Fraction | float (exact specials).

def _mp(fn, big=None):
    """Wrap an mpmath function: NaN in, NaN out; `big` = (threshold, f_limit) short-cuts
    arguments with |x| > threshold, where the rounded result is already the limit."""
    def ref(x):
        if math.isnan(x):
            return nan
        if big is not None and abs(x) > big[0]:
            return big[1](x)
        return fn(mpf_of(x))
    return ref


def ref_sin(x):
    return nan if not math.isfinite(x) else mpmath.sin(mpf_of(x))


def ref_cos(x):
    return nan if not math.isfinite(x) else mpmath.cos(mpf_of(x))


def ref_tan(x):
    return nan if not math.isfinite(x) else mpmath.tan(mpf_of(x))


def ref_asin(x):
    return nan if math.isnan(x) or abs(x) > 1 else mpmath.asin(mpf_of(x))


def ref_acos(x):
    return nan if math.isnan(x) or abs(x) > 1 else mpmath.acos(mpf_of(x))


def ref_acosh(x):
    return nan if math.isnan(x) or x < 1 else mpmath.acosh(mpf_of(x))


def ref_atanh(x):
    if math.isnan(x) or abs(x) > 1:
        return nan
    if abs(x) == 1:
        return math.copysign(inf, x)
    return mpmath.atanh(mpf_of(x))


def ref_erfinv(x):
    if math.isnan(x) or abs(x) > 1:
        return nan
    if abs(x) == 1:
        return math.copysign(inf, x)
    return mpmath.erfinv(mpf_of(x))


def ref_exp2(x):
    if math.isnan(x):
        return nan
    if x > 1e5:
        return inf
    if x < -1e5:
        return 0.0
    if _isint(x):
        return Fraction(2) ** int(x)  # exact (ties at the subnormal boundary matter)
    return mpmath.power(2, mpf_of(x))


def ref_log(x):
    if math.isnan(x) or x < 0:
        return nan
    if x == 0:
        return -inf
    return mpmath.log(mpf_of(x))


def _log_base(b):
    def ref(x):
        if math.isnan(x) or x < 0:
            return nan
        if x == 0:
            return -inf
        if x == inf:
            return inf
        return mpmath.log(mpf_of(x)) / mpmath.log(b)
    return ref


def ref_log1p(x):
    if math.isnan(x) or x < -1:
        return nan
    if x == -1:
        return -inf
    return mpmath.log1p(mpf_of(x))


def ref_sqrt(x):
    if math.isnan(x) or x < 0:
        return nan
    return mpmath.sqrt(mpf_of(x))


def ref_cbrt(x):
    if not math.isfinite(x):
        return x
    r = mpmath.cbrt(abs(mpf_of(x)))
    return -r if x < 0 else r


def ref_sign(x):
    if math.isnan(x):
        return nan
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def _int_fn(f):
    def ref(x):
        if not math.isfinite(x):
            return x
        return Fraction(f(x))
    return ref


def _sq(x):
    return x * x if not math.isfinite(x) else Fraction(x) ** 2


def ref_reciprocal(x):
    if math.isnan(x):
        return nan
    if x == 0:
        return math.copysign(inf, x)
    if math.isinf(x):
        return 0.0
    return 1 / Fraction(x)


def ref_relu(x):
    return nan if math.isnan(x) else max(x, 0.0)


def _sigmoid(z):
    return 1 / (1 + mpmath.exp(-z))


def ref_sigmoid(x):
    if math.isnan(x):
        return nan
    if abs(x) > 1e4:
        return 1.0 if x > 0 else 0.0
    return _sigmoid(mpf_of(x))


def ref_softplus(x):
    if math.isnan(x):
        return nan
    if abs(x) > 1e4:
        return x if x > 0 else 0.0
    return mpmath.log1p(mpmath.exp(mpf_of(x)))


def ref_silu(x):
    # x * sigmoid(x); at -inf the limit 0 (not inf * 0 = NaN).
    if math.isnan(x):
        return nan
    if abs(x) > 1e4:
        return x if x > 0 else 0.0
    X = mpf_of(x)
    return X * _sigmoid(X)


def ref_gelu(x):
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) = x * sigmoid(2 sqrt(2/pi) (...)), the
    # second form free of cancellation; at -inf the limit 0.
    if math.isnan(x):
        return nan
    if abs(x) > 1e4:
        return x if x > 0 else 0.0
    X = mpf_of(x)
    z = mpmath.sqrt(2 / mpmath.pi) * (X + mpmath.mpf("0.044715") * X**3)
    return X * _sigmoid(2 * z)


# ----------------------------------------------------------------------------------------
# Binary references (IEEE 754 / C99 Annex F special cases written out).

def ref_add(x, y):
    if not (math.isfinite(x) and math.isfinite(y)):
        return x + y
    return Fraction(x) + Fraction(y)


def ref_sub(x, y):
    if not (math.isfinite(x) and math.isfinite(y)):
        return x - y
    return Fraction(x) - Fraction(y)


def ref_mul(x, y):
    if not (math.isfinite(x) and math.isfinite(y)):
        return x * y
    return Fraction(x) * Fraction(y)


def ref_div(x, y):
    if math.isnan(x) or math.isnan(y):
        return nan
    if y == 0:
        if x == 0:
            return nan
        neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
        return -inf if neg else inf
    if not (math.isfinite(x) and math.isfinite(y)):
        return x / y
    return Fraction(x) / Fraction(y)


def ref_pow(x, y):
    """C99 Annex F pow."""
    if y == 0:
        return 1.0
    if x == 1:
        return 1.0
    if math.isnan(x) or math.isnan(y):
        return nan
    odd = is_odd_integer(y)
    if x == 0:
        if y < 0:
            return math.copysign(inf, x) if odd else inf
        return math.copysign(0.0, x) if odd else 0.0
    if math.isinf(y):
        if x == -1:
            return 1.0
        if (abs(x) < 1) == (y < 0):
            return inf
        return 0.0
    if math.isinf(x):
        if x < 0:
            if y < 0:
                return -0.0 if odd else 0.0
            return -inf if odd else inf
        return 0.0 if y < 0 else inf
    if x < 0 and not _isint(y):
        return nan
    neg = x < 0 and odd
    ax = abs(x)
    # magnitude guard: |y log2|x|| far outside the exponent range -> 0 or inf
    l2 = math.log2(ax) * y
    if l2 > 5000:
        return -inf if neg else inf
    if l2 < -5000:
        return -0.0 if neg else 0.0
    if _isint(y) and abs(y) <= 1100:
        r = Fraction(ax) ** int(y)  # exact
    else:
        r = mpmath.power(mpf_of(ax), mpf_of(y))
    return -r if neg else r


def ref_atan2(y, x):
    """C99 Annex F atan2(y, x)."""
    if math.isnan(x) or math.isnan(y):
        return nan
    sy = -1 if math.copysign(1, y) < 0 else 1
    pi = mpmath.pi
    if y == 0:
        if x > 0 or (x == 0 and math.copysign(1, x) > 0):
            return 0.0
        return sy * pi
    if math.isinf(y):
        if x == inf:
            return sy * pi / 4
        if x == -inf:
            return sy * 3 * pi / 4
        return sy * pi / 2
    if x == 0:
        return sy * pi / 2
    if x == inf:
        return 0.0
    if x == -inf:
        return sy * pi
    return mpmath.atan2(mpf_of(y), mpf_of(x))


def ref_hypot(x, y):
    if math.isinf(x) or math.isinf(y):
        return inf
    if math.isnan(x) or math.isnan(y):
        return nan
    return mpmath.hypot(mpf_of(x), mpf_of(y))


def ref_fmod(x, y):
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return nan
    if math.isinf(y) or x == 0:
        return x
    fx, fy = Fraction(x), Fraction(y)
    q = fx / fy
    t = math.floor(q) if q > 0 else math.ceil(q)  # truncate
    return fx - t * fy  # exact, and exactly representable


def ref_mod(x, y):
    """x - y*floor(x/y) (the sign of the divisor), as NumPy/JAX mod."""
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return nan
    if x == 0:
        return 0.0
    if math.isinf(y):
        return x if (x > 0) == (y > 0) else y
    fx, fy = Fraction(x), Fraction(y)
    return fx - math.floor(fx / fy) * fy  # exact; rounded once by round_to


def ref_max(x, y):
    return nan if math.isnan(x) or math.isnan(y) else max(x, y)


def ref_min(x, y):
    return nan if math.isnan(x) or math.isnan(y) else min(x, y)


def ref_logaddexp(a, b):
    if math.isnan(a) or math.isnan(b):
        return nan
    if math.isinf(a) or math.isinf(b):
        if a == inf or b == inf:
            return inf
        return b if a == -inf else a  # a == -inf or b == -inf
    A, B = mpf_of(a), mpf_of(b)
    m = max(A, B)
    d = mpmath.fsub(A, B, exact=True)
    return m + mpmath.log1p(mpmath.exp(-abs(d)))


# ----------------------------------------------------------------------------------------
# Sweeps. Every unary sweep contains the specials and a log-spaced sweep of magnitudes over
# the whole format (smallest subnormal to largest finite, both signs) plus random bit
# patterns (uniform in exponent), then points chosen for the function: its interesting
# range, the windows where results overflow or become subnormal, and neighbours of zeros,
# poles and thresholds.

def _limits(fmt):
    tiny_sub, tiny, big = fmt_consts(fmt)
    ln_big = math.log(big)  # exp overflow threshold
    ln_sub = math.log(tiny_sub)  # exp underflow-to-zero threshold (about)
    return tiny_sub, tiny, big, ln_big, ln_sub


def _base(fmt, seed, n_full=100, n_bits=150, lo=0.0, hi=math.inf, signs=(1, -1)):
    return [np.array(specials(fmt)), log_sweep(fmt, lo, hi, n_full, seed + 101, signs=signs),
            bits_sweep(fmt, n_bits, seed + 102, lo, hi, signs=signs)]


def _pi_multiples(k):
    return [float(mpmath.pi * j / 4) for j in range(-k, k + 1) if j != 0]


# Known hard cases for argument reduction (x nearly a multiple of pi/2).
HARD_TRIG_F64 = [math.ldexp(6381956970095103, 797), 1e22, 2.0**1023, 1.0e300, 5.319372648326541e255]
HARD_TRIG_F32 = [float(np.float32(v))
                 for v in (1e22, 3.4e38, 2.0**127, 1.0e30, 16367173.0 * 2**72, 1.0e4, 2.0**24)]


def pts_trig(fmt, seed):
    hard = HARD_TRIG_F64 if fmt is F64 else HARD_TRIG_F32
    return assemble(fmt, *_base(fmt, seed, 150, 250), lin_sweep(fmt, -10, 10, 150, seed + 1),
                    around(fmt, _pi_multiples(16), 2), np.array(hard),
                    lin_sweep(fmt, -1e6, 1e6, 60, seed + 2), log_sweep(fmt, 1e3, 1e12, 60, seed + 3))


def pts_unit(fmt, seed):  # arcsin, arccos, arctanh: domain [-1, 1]
    return assemble(fmt, *_base(fmt, seed, 120, 200, hi=1.0), lin_sweep(fmt, -1, 1, 150, seed + 1),
                    around(fmt, [1, -1, 0.5, -0.5], 3), np.array([1.5, -2.0, 1e10, -1e30]))


def pts_full(fmt, seed, lin=(-10, 10)):
    return assemble(fmt, *_base(fmt, seed, 150, 250), lin_sweep(fmt, lin[0], lin[1], 150, seed + 1),
                    around(fmt, [1, -1], 2))


def _exp_windows(fmt, seed, scale=1.0):
    """Arguments x/scale whose exp(x) overflows or lands in the subnormal range."""
    tiny_sub, tiny, big, ln_big, ln_sub = _limits(fmt)
    ln_tiny = math.log(tiny)
    return [lin_sweep(fmt, (ln_sub - 1) / scale, (ln_tiny + 1) / scale, 80, seed),
            lin_sweep(fmt, (ln_big - 2) / scale, (ln_big + 2) / scale, 40, seed + 1),
            around(fmt, [v / scale for v in (ln_big, ln_sub, ln_tiny, ln_sub - math.log(2) / 2)], 2)]


def pts_exp(fmt, seed):  # exp, expm1, sinh, cosh, sigmoid, softplus, silu
    _, _, big, ln_big, ln_sub = _limits(fmt)
    r = 1.05 * abs(ln_sub)
    return assemble(fmt, *_base(fmt, seed, 60, 100), log_sweep(fmt, 0, r, 150, seed + 1),
                    lin_sweep(fmt, -30, 30, 100, seed + 2), *_exp_windows(fmt, seed + 3),
                    *[-w for w in _exp_windows(fmt, seed + 4)],
                    around(fmt, [ln_big + math.log(2), -(ln_big + math.log(2))], 2))


def pts_exp2(fmt, seed):
    emax = fmt.emax
    lo_sub = fmt.emin - fmt.p + 1
    ints = [float(k) for k in (emax, emax + 1, fmt.emin, lo_sub, lo_sub - 1, lo_sub - 2, -1, 1, 10, -10)]
    return assemble(fmt, *_base(fmt, seed, 60, 100), log_sweep(fmt, 0, 1.05 * abs(lo_sub), 150, seed + 1),
                    lin_sweep(fmt, -5, 5, 60, seed + 2),
                    lin_sweep(fmt, lo_sub - 2, fmt.emin + 1, 80, seed + 3),
                    lin_sweep(fmt, emax - 1, emax + 2, 30, seed + 4), np.array(ints), around(fmt, ints, 1))


def pts_log(fmt, seed):
    return assemble(fmt, *_base(fmt, seed, 200, 250, signs=(1,)),
                    lin_sweep(fmt, 0, 10, 100, seed + 1), lin_sweep(fmt, 0.5, 2, 60, seed + 2),
                    around(fmt, [1.0, 2.0, 10.0, 0.5], 3),
                    np.array([-1.0, -1e-30, -1e30, 1024.0, 1e10 if fmt is F32 else 1e22]))


def pts_log1p(fmt, seed):
    return assemble(fmt, *_base(fmt, seed, 150, 200, signs=(1,)),
                    log_sweep(fmt, 0, 1, 120, seed + 1, signs=(-1,)),
                    bits_sweep(fmt, 100, seed + 2, 0, 1, signs=(-1,)), lin_sweep(fmt, -1, 3, 80, seed + 3),
                    around(fmt, [-1.0, 0.0, 1.0, -0.5], 3), np.array([-2.0, -1e30]))


def pts_acosh(fmt, seed):
    return assemble(fmt, *_base(fmt, seed, 150, 200, lo=1.0, signs=(1,)),
                    1 + log_sweep(fmt, 0, 1, 80, seed + 1, signs=(1,)).astype(np.float64),
                    lin_sweep(fmt, 1, 10, 80, seed + 2), around(fmt, [1.0], 4), np.array([0.5, 0.0, -3.0]))


def pts_tanh(fmt, seed):
    return assemble(fmt, *_base(fmt, seed, 100, 150), log_sweep(fmt, 0, 40, 150, seed + 1),
                    lin_sweep(fmt, -5, 5, 100, seed + 2), lin_sweep(fmt, -25, 25, 60, seed + 3))


def pts_erf(fmt, seed):
    return assemble(fmt, *_base(fmt, seed, 100, 150), log_sweep(fmt, 0, 10, 150, seed + 1),
                    lin_sweep(fmt, -6, 6, 120, seed + 2))


def pts_erfc(fmt, seed):
    top = 27.3 if fmt is F64 else 10.1  # erfc underflows to 0 past here
    sub = 26.5 if fmt is F64 else 9.1  # and is subnormal past here
    return assemble(fmt, *_base(fmt, seed, 60, 100), lin_sweep(fmt, -6, top, 200, seed + 1),
                    log_sweep(fmt, 0, 30, 80, seed + 2), lin_sweep(fmt, sub, top + 0.2, 60, seed + 3))


def pts_round(fmt, seed):
    halves = np.arange(-10.5, 11, 1.0)
    p = fmt.p
    edges = [2.0 ** (p - 1), 2.0 ** p, 2.0 ** (p - 2) + 0.5, 0.5, 1.5, 2.5, 0.49999999999999994]
    return assemble(fmt, *_base(fmt, seed, 150, 200), halves, lin_sweep(fmt, -10, 10, 100, seed + 1),
                    around(fmt, edges + [-e for e in edges], 1))


def pts_rcp(fmt, seed):
    _, tiny, big, _, _ = _limits(fmt)
    return assemble(fmt, *_base(fmt, seed, 150, 200), around(fmt, [1 / big, tiny, 1 / tiny, 4 / big], 2),
                    lin_sweep(fmt, -10, 10, 60, seed + 1))


def pts_sqrt(fmt, seed):
    return assemble(fmt, *_base(fmt, seed, 150, 250), lin_sweep(fmt, 0, 100, 80, seed + 1),
                    np.array([4.0, 9.0, 2.0, 0.25, 27.0, -8.0, 1e-300 if fmt is F64 else 1e-40]))


def pts_sigmoid(fmt, seed):  # sigmoid, softplus, silu: also the subnormal tails of the result
    _, tiny, _, _, ln_sub = _limits(fmt)
    return assemble(fmt, pts_exp(fmt, seed), lin_sweep(fmt, ln_sub - 8, math.log(tiny) + 2, 80, seed + 9))


def pts_gelu(fmt, seed):
    # gelu(x) ~ x e^(-2 sqrt(2/pi) 0.044715 |x|^3) for x << 0: subnormal results near
    # x = -13.4 (float64 ~ -27.6 zeroes it) and x = -7.4..-8.3 in float32.
    tail = (-28.0, -24.0) if fmt is F64 else (-10.5, -7.0)
    return assemble(fmt, *_base(fmt, seed, 80, 120),
                    log_sweep(fmt, 0, 60 if fmt is F64 else 20, 150, seed + 1),
                    lin_sweep(fmt, -15, 5, 150, seed + 2), lin_sweep(fmt, tail[0], tail[1], 60, seed + 3))


def _pairs(fmt, a, b, seed):
    """Random pairing of two point sets (same length)."""
    rng = np.random.default_rng(seed)
    return rng.permutation(a), rng.permutation(b)


def _grid(fmt, vals_x, vals_y):
    dt = fmt.np_dtype
    xs, ys = np.meshgrid(np.array(vals_x, dtype=dt), np.array(vals_y, dtype=dt), indexing="ij")
    return xs.ravel(), ys.ravel()


def _cat(*pairs):
    xs = np.concatenate([p[0] for p in pairs])
    ys = np.concatenate([p[1] for p in pairs])
    return xs, ys


def _full_pairs(fmt, seed, n=150):
    """Pairs over the whole format: log-spaced and random bit patterns, both signs."""
    a = np.concatenate([log_sweep(fmt, 0, inf, n, seed), bits_sweep(fmt, 2 * n, seed + 3)])
    b = np.concatenate([log_sweep(fmt, 0, inf, n, seed + 1), bits_sweep(fmt, 2 * n, seed + 4)])
    return _pairs(fmt, a, b, seed + 2)


def _as(fmt, a):
    with np.errstate(over="ignore", under="ignore"):
        return np.asarray(a, dtype=np.float64).astype(fmt.np_dtype)


def pairs_arith(fmt, seed):
    S = specials(fmt) + [2.0, 0.5, 3.0]
    tiny_sub, tiny, big = fmt_consts(fmt)
    rng = np.random.default_rng(seed + 7)
    # products/quotients landing in the subnormal range (catches flush-to-zero)
    h = (2 * fmt.emin - fmt.p) / 4  # x, y ~ 2^h: x*y ~ 2^(emin - p/2), mid-subnormal
    sx = _as(fmt, np.exp2(rng.uniform(h - 3, h + 3, 60)) * rng.choice([-1, 1], 60))
    sy = _as(fmt, np.exp2(rng.uniform(h - 3, h + 3, 60)))
    dx = _as(fmt, np.exp2(rng.uniform(fmt.emin - 5, fmt.emin + 5, 60)))
    dy = _as(fmt, rng.uniform(1.5, 60, 60))
    # near-cancellation for add/subtract
    cx = log_sweep(fmt, 1e-30, 1e30, 20, seed + 3)
    cy = np.nextafter(cx, fmt.np_dtype(np.inf))
    lx = lin_sweep(fmt, -10, 10, 100, seed + 4)
    ly = lin_sweep(fmt, -10, 10, 100, seed + 5)[::-1]
    return _cat(_grid(fmt, S, S), _full_pairs(fmt, seed), (sx, sy), (dx, dy), (cx, -cy), (cx, cy),
                (lx, ly), (np.full(3, tiny_sub, fmt.np_dtype), np.array([0.5, 1.0, 3.0], fmt.np_dtype)))


def pairs_pow(fmt, seed):
    S = specials(fmt)
    Y = S + [0.5, 2.0, 3.0, -2.0, -3.0, 2.5, -0.5, 1e6, -1e6]
    X = S + [0.5, 2.0, -2.0, -0.5]
    rng = np.random.default_rng(seed)
    # positive x over the whole range, y chosen so x^y spans the range (and a bit past it)
    x1 = np.concatenate([log_sweep(fmt, 0, inf, 150, seed + 1, signs=(1,)),
                         bits_sweep(fmt, 150, seed + 5, signs=(1,))])
    x1 = x1[x1 != 1]
    lo = fmt.emin - fmt.p - 4
    t = rng.uniform(lo, fmt.emax + 4, len(x1))
    y1 = _as(fmt, t / np.log2(x1.astype(np.float64)))
    # moderate bases and exponents
    x2 = lin_sweep(fmt, 0, 10, 100, seed + 2)
    y2 = lin_sweep(fmt, -20, 20, 100, seed + 3)
    # negative bases with integer exponents
    x3 = -lin_sweep(fmt, 0.5, 10, 80, seed + 4)
    kmax = 300 if fmt is F64 else 36
    y3 = rng.integers(-kmax, kmax, 80).astype(fmt.np_dtype)
    # bases next to 1 with large exponents
    x4 = around(fmt, [1.0], 3)
    y4 = _as(fmt, np.full(len(x4), 2.0 ** (fmt.p + 2)))
    # negative bases with fractional exponent -> NaN
    x5 = np.array([-2.0, -0.5], fmt.np_dtype)
    y5 = np.array([0.5, 1.5], fmt.np_dtype)
    return _cat(_grid(fmt, X, Y), (x1, y1), (x2, y2), (x3, y3), (x4, y4), (x5, y5))


def pairs_atan2(fmt, seed):
    S = specials(fmt) + [2.0]
    tiny_sub, tiny, big = fmt_consts(fmt)
    lx = lin_sweep(fmt, -10, 10, 100, seed + 4)
    ly = lin_sweep(fmt, -10, 10, 100, seed + 5)[::-1]
    edge = (np.array([tiny_sub, -tiny_sub, 1.0, -1.0, 1e-10], fmt.np_dtype),
            np.array([big, -big, -big, -1e30, -1.0], fmt.np_dtype))
    return _cat(_grid(fmt, S, S), _full_pairs(fmt, seed), (lx, ly), edge)


def pairs_hypot(fmt, seed):
    S = specials(fmt) + [3.0]
    tiny_sub, tiny, big = fmt_consts(fmt)
    sub = log_sweep(fmt, tiny_sub, tiny, 30, seed + 3)
    sub2 = log_sweep(fmt, tiny_sub, tiny, 30, seed + 4)
    hb = log_sweep(fmt, big / 4, big, 15, seed + 5)
    return _cat(_grid(fmt, S, S), _full_pairs(fmt, seed), (sub, sub2), (hb, hb[::-1]),
                (lin_sweep(fmt, -10, 10, 60, seed + 6), lin_sweep(fmt, -10, 10, 60, seed + 7)))


def pairs_mod(fmt, seed):
    S = specials(fmt) + [3.0, -3.0, 0.5]
    tiny_sub = fmt_consts(fmt)[0]
    lx = lin_sweep(fmt, -100, 100, 120, seed + 4)
    ly = lin_sweep(fmt, -10, 10, 120, seed + 5)
    ly = np.where(ly == 0, fmt.np_dtype(1), ly)
    edge = (np.array([-tiny_sub, tiny_sub, -1e-30, 1e30, -1e30, 5.5, -5.5], fmt.np_dtype),
            np.array([1.0, -1.0, 1.0, 3.0, 3.0, 2.0, 2.0], fmt.np_dtype))
    return _cat(_grid(fmt, S, S), _full_pairs(fmt, seed), (lx, ly), edge)


def pairs_minmax(fmt, seed):
    S = specials(fmt)
    return _cat(_grid(fmt, S, S), _full_pairs(fmt, seed, 100))


def pairs_logaddexp(fmt, seed):
    S = specials(fmt) + [0.5, -745.0 if fmt is F64 else -104.0]
    r = 800 if fmt is F64 else 110
    ax = lin_sweep(fmt, -r, r, 120, seed + 1)
    ay = lin_sweep(fmt, -r, r, 120, seed + 2)[::-1]
    bx = lin_sweep(fmt, -5, 5, 80, seed + 3)
    by = _as(fmt, bx.astype(np.float64) + np.random.default_rng(seed).uniform(-3, 3, 80))
    # e^a + e^b close to 1: the result is near its zero (cancellation in a + log1p(...))
    ca = lin_sweep(fmt, -4, -0.05, 16, seed + 4).astype(np.float64)
    cb = np.log1p(-np.exp(ca))
    ln2 = around(fmt, [-math.log(2)], 2)
    return _cat(_grid(fmt, S, S), _full_pairs(fmt, seed, 100), (ax, ay), (bx, by),
                (_as(fmt, ca), _as(fmt, cb)), (ln2, ln2[::-1]), (ln2, ln2))


# ----------------------------------------------------------------------------------------
# Function table: name -> (quabla function, reference, sweep).

_sinh_big = (1e4, lambda x: math.copysign(inf, x))
_exp_big = (1e4, lambda x: inf if x > 0 else 0.0)
_expm1_big = (1e4, lambda x: inf if x > 0 else -1.0)
_erf_big = (100, lambda x: math.copysign(1.0, x))
_erfc_big = (100, lambda x: 0.0 if x > 0 else 2.0)

UNARY = {
    "sin": (qb.sin, ref_sin, pts_trig),
    "cos": (qb.cos, ref_cos, pts_trig),
    "tan": (qb.tan, ref_tan, pts_trig),
    "arcsin": (qb.arcsin, ref_asin, pts_unit),
    "arccos": (qb.arccos, ref_acos, pts_unit),
    "arctan": (qb.arctan, _mp(mpmath.atan), pts_full),
    "sinh": (qb.sinh, _mp(mpmath.sinh, _sinh_big), pts_exp),
    "cosh": (qb.cosh, _mp(mpmath.cosh, (1e4, lambda x: inf)), pts_exp),
    "tanh": (qb.tanh, _mp(mpmath.tanh, (1e4, lambda x: math.copysign(1.0, x))), pts_tanh),
    "arcsinh": (qb.arcsinh, _mp(mpmath.asinh), pts_full),
    "arccosh": (qb.arccosh, ref_acosh, pts_acosh),
    "arctanh": (qb.arctanh, ref_atanh, pts_unit),
    "erf_inv": (qb.lax.erf_inv, ref_erfinv, pts_unit),
    "exp": (qb.exp, _mp(mpmath.exp, _exp_big), pts_exp),
    "expm1": (qb.expm1, _mp(mpmath.expm1, _expm1_big), pts_exp),
    "exp2": (qb.exp2, ref_exp2, pts_exp2),
    "log": (qb.log, ref_log, pts_log),
    "log1p": (qb.log1p, ref_log1p, pts_log1p),
    "log2": (qb.log2, _log_base(2), pts_log),
    "log10": (qb.log10, _log_base(10), pts_log),
    "sqrt": (qb.sqrt, ref_sqrt, pts_sqrt),
    "cbrt": (qb.cbrt, ref_cbrt, pts_sqrt),
    "erf": (qb.erf, _mp(mpmath.erf, _erf_big), pts_erf),
    "erfc": (qb.erfc, _mp(mpmath.erfc, _erfc_big), pts_erfc),
    "abs": (qb.abs, lambda x: abs(x), pts_full),
    "sign": (qb.sign, ref_sign, pts_full),
    "floor": (qb.floor, _int_fn(math.floor), pts_round),
    "ceil": (qb.ceil, _int_fn(math.ceil), pts_round),
    "round": (qb.round, _int_fn(round), pts_round),  # Python's round(float) is half to even
    "square": (qb.square, _sq, pts_full),
    "reciprocal": (qb.reciprocal, ref_reciprocal, pts_rcp),
    "relu": (qb.relu, ref_relu, pts_full),
    "sigmoid": (qb.sigmoid, ref_sigmoid, pts_sigmoid),
    "softplus": (qb.softplus, ref_softplus, pts_sigmoid),
    "silu": (qb.silu, ref_silu, pts_sigmoid),
    "gelu": (lambda x: qb.gelu(x, approximate=True), ref_gelu, pts_gelu),
}

BINARY = {
    "add": (qb.add, ref_add, pairs_arith),
    "subtract": (qb.subtract, ref_sub, pairs_arith),
    "multiply": (qb.multiply, ref_mul, pairs_arith),
    "divide": (qb.divide, ref_div, pairs_arith),
    "power": (qb.power, ref_pow, pairs_pow),
    "arctan2": (qb.arctan2, ref_atan2, pairs_atan2),
    "hypot": (qb.hypot, ref_hypot, pairs_hypot),
    "fmod": (qb.fmod, ref_fmod, pairs_mod),
    "mod": (qb.mod, ref_mod, pairs_mod),
    "maximum": (qb.maximum, ref_max, pairs_minmax),
    "minimum": (qb.minimum, ref_min, pairs_minmax),
    "logaddexp": (qb.logaddexp, ref_logaddexp, pairs_logaddexp),
}


def _seed(name):
    return sum(ord(c) * 31**i for i, c in enumerate(name)) % 100003


@functools.lru_cache(maxsize=None)
def unary_case(name, dtype):
    fmt = FORMATS[dtype]
    _, ref, pts = UNARY[name]
    xs = pts(fmt, _seed(name))
    return xs, reference_unary(ref, xs, fmt)


@functools.lru_cache(maxsize=None)
def binary_case(name, dtype):
    fmt = FORMATS[dtype]
    _, ref, pts = BINARY[name]
    xs, ys = pts(fmt, _seed(name))
    xs, ys = xs.astype(fmt.np_dtype), ys.astype(fmt.np_dtype)
    return xs, ys, reference_binary(ref, xs, ys, fmt)


def evaluate(name, dtype):
    """(inputs tuple, got, ref, ulps) for one case."""
    fmt = FORMATS[dtype]
    if name in UNARY:
        xs, ref = unary_case(name, dtype)
        got = UNARY[name][0](qb.array(xs)).numpy()
        args = (xs,)
    else:
        xs, ys, ref = binary_case(name, dtype)
        got = BINARY[name][0](qb.array(xs), qb.array(ys)).numpy()
        args = (xs, ys)
    assert got.dtype == fmt.np_dtype, f"{name}: result dtype {got.dtype}, expected {fmt.np_dtype}"
    assert got.shape == ref.shape
    return args, got, ref, ulp_distance(got, ref, fmt)


def _fmt_val(v):
    return np.format_float_scientific(v, unique=True) if np.isfinite(v) else repr(float(v))


def failure_report(name, dtype, limit=12):
    args, got, ref, d = evaluate(name, dtype)
    bad = np.flatnonzero(d > MAX_ULP)
    if bad.size == 0:
        return None
    order = bad[np.argsort(-d[bad], kind="stable")]
    lines = [f"{name} {dtype}: {bad.size}/{d.size} points exceed {MAX_ULP} ULP; worst first:"]
    for i in order[:limit]:
        inp = ", ".join(_fmt_val(a[i]) for a in args)
        lines.append(f"  {name}({inp}) = {_fmt_val(got[i])}, reference {_fmt_val(ref[i])}, {d[i]:.4g} ULP")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------
# Known failures: (function, dtype) -> worst case. Strict xfail: remove the entry once the
# kernel meets 4 ULP (the case then XPASSes and fails).

KNOWN_INACCURATE: dict[tuple[str, str], str] = {
}


def _params(names):
    out = []
    for name in names:
        for dtype in DTYPES:
            reason = KNOWN_INACCURATE.get((name, dtype))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, dtype, marks=marks, id=f"{name}-{dtype}"))
    return out


@pytest.mark.parametrize("name,dtype", _params(UNARY))
def test_unary_within_4_ulp(name, dtype):
    report = failure_report(name, dtype)
    if report:
        pytest.fail(report, pytrace=False)


@pytest.mark.parametrize("name,dtype", _params(BINARY))
def test_binary_within_4_ulp(name, dtype):
    report = failure_report(name, dtype)
    if report:
        pytest.fail(report, pytrace=False)


# ----------------------------------------------------------------------------------------
# The harness itself: correct rounding into float32 (including subnormals and overflow)
# and the ULP distance.

def test_round_to_float32_is_direct_not_via_float64():
    # 1 + 2^-24 + 2^-80 rounds up to 1 + 2^-23 in float32; through float64 it would first
    # become the tie 1 + 2^-24 and then round to even (1.0).
    v = Fraction(1) + Fraction(1, 2**24) + Fraction(1, 2**80)
    assert round_to(v, F32) == 1 + 2.0**-23
    assert float(np.float32(float(v))) == 1.0
    # subnormal rounding and the tie at half the smallest subnormal
    s = 2.0**-149
    assert round_to(Fraction(3, 2) * Fraction(s), F32) == 2 * s  # tie -> even
    assert round_to(Fraction(s) / 2, F32) == 0.0  # tie -> even (zero)
    assert round_to(Fraction(s) * Fraction(3, 4), F32) == s
    # overflow threshold: max + half ulp rounds to inf, just below it to max
    big = float(np.finfo(np.float32).max)
    half = Fraction(2) ** (127 - 24)
    assert round_to(Fraction(big) + half, F32) == inf
    assert round_to(Fraction(big) + half - 1, F32) == big
    assert round_to(mpmath.mpf(2) ** -1074, F64) == 5e-324
    assert round_to(mpmath.mpf(2) ** -1075, F64) == 0.0


def test_ulp_distance_conventions():
    f = np.float32
    a = np.array([0.0, -0.0, np.nan, np.inf, 1.0, 1.0, -1e-45, 3.4028235e38], f)
    b = np.array([-0.0, 0.0, np.nan, np.inf, np.nextafter(f(1), f(2)), np.nan, 1e-45, np.inf], f)
    d = ulp_distance(a, b, F32)
    assert list(d) == [0, 0, 0, 0, 1, inf, 2, inf]
    x = np.array([2.0**-1074], np.float64)
    assert ulp_distance(x, np.array([0.0]), F64)[0] == 1


# ----------------------------------------------------------------------------------------
# Special-value semantics.

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn,arg", [
    (qb.log, -1.0), (qb.log2, -1.0), (qb.log10, -1.0), (qb.log1p, -2.0), (qb.sqrt, -1.0),
    (qb.arcsin, 2.0), (qb.arccos, -2.0), (qb.arccosh, 0.5), (qb.arctanh, 2.0), (qb.sin, inf),
    (qb.cos, -inf), (qb.tan, inf),
], ids=lambda v: getattr(v, "__name__", repr(v)))
def test_nan_outside_domain_never_raises(fn, arg, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = fn(qb.array(np.array([arg], dtype=dtype))).numpy()
    assert r.dtype == np.dtype(dtype) and np.isnan(r[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_outside_domain_binary(dtype):
    a = lambda *v: qb.array(np.array(v, dtype=dtype))  # noqa: E731
    assert np.isnan(qb.power(a(-2.0), a(0.5)).numpy()[0])
    assert np.isnan(qb.fmod(a(1.0), a(0.0)).numpy()[0])
    assert np.isnan(qb.mod(a(inf), a(2.0)).numpy()[0])
    assert np.isnan(qb.divide(a(0.0), a(0.0)).numpy()[0])
    assert np.isnan(qb.subtract(a(inf), a(inf)).numpy()[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_infinities_at_poles(dtype):
    a = lambda *v: qb.array(np.array(v, dtype=dtype))  # noqa: E731
    np.testing.assert_array_equal(qb.log(a(0.0, -0.0)).numpy(), [-inf, -inf])
    np.testing.assert_array_equal(qb.log2(a(0.0)).numpy(), [-inf])
    np.testing.assert_array_equal(qb.log10(a(0.0)).numpy(), [-inf])
    np.testing.assert_array_equal(qb.log1p(a(-1.0)).numpy(), [-inf])
    np.testing.assert_array_equal(qb.arctanh(a(1.0, -1.0)).numpy(), [inf, -inf])
    np.testing.assert_array_equal(qb.reciprocal(a(0.0, -0.0)).numpy(), [inf, -inf])
    np.testing.assert_array_equal(qb.divide(a(1.0, 1.0, -1.0), a(0.0, -0.0, 0.0)).numpy(), [inf, -inf, -inf])
    np.testing.assert_array_equal(qb.power(a(0.0, -0.0, 0.0), a(-1.0, -1.0, -2.0)).numpy(), [inf, -inf, inf])
    np.testing.assert_array_equal(qb.exp(a(inf, -inf)).numpy(), [inf, 0.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_signed_zero_preserved(dtype):
    a = lambda *v: qb.array(np.array(v, dtype=dtype))  # noqa: E731
    neg0 = a(-0.0)
    for fn in (qb.sin, qb.tan, qb.arcsin, qb.arctan, qb.sinh, qb.tanh, qb.arcsinh, qb.arctanh,
               qb.expm1, qb.log1p, qb.sqrt, qb.cbrt, qb.erf, qb.sign, qb.floor, qb.ceil, qb.round):
        r = fn(neg0).numpy()[0]
        assert r == 0 and np.signbit(r), fn.__name__
    assert np.signbit(qb.round(a(-0.4)).numpy()[0]) and np.signbit(qb.ceil(a(-0.5)).numpy()[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_flush_to_zero(dtype):
    fmt = FORMATS[dtype]
    dt = fmt.np_dtype
    s = np.nextafter(dt(0), dt(1))  # smallest subnormal
    a = lambda *v: qb.array(np.array(v, dtype=dtype))  # noqa: E731
    # subnormal inputs are kept by arithmetic
    assert qb.multiply(a(s), 1.0).numpy()[0] == s
    assert qb.add(a(s), a(0.0)).numpy()[0] == s
    assert qb.multiply(a(s), a(3.0)).numpy()[0] == 3 * s
    assert qb.abs(a(-s)).numpy()[0] == s
    assert qb.maximum(a(s), a(0.0)).numpy()[0] == s
    # subnormal results are produced, not flushed
    tiny = dt(np.finfo(dt).tiny)
    assert qb.multiply(a(tiny), a(0.25)).numpy()[0] == tiny / 4
    assert qb.divide(a(tiny), a(8.0)).numpy()[0] == tiny / 8
    lo = -140.0 if fmt is F32 else -1070.0
    r = qb.exp2(a(lo)).numpy()[0]
    assert r == dt(2.0**lo) and r < tiny
    r = qb.exp(a(-100.0 if fmt is F32 else -740.0)).numpy()[0]
    assert 0 < r < tiny
    # functions of a subnormal input
    assert qb.sqrt(a(s)).numpy()[0] > 0
    assert qb.sin(a(s)).numpy()[0] == s
    assert qb.expm1(a(s)).numpy()[0] == s
    expected = math.log(2.0) * (fmt.emin - fmt.p + 1)
    assert abs(qb.log(a(s)).numpy()[0] / expected - 1) < 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,x,expected", [
    ("sigmoid", inf, 1.0), ("sigmoid", -inf, 0.0), ("softplus", inf, inf), ("softplus", -inf, 0.0),
    ("silu", inf, inf),
    ("silu", -inf, 0.0),
    ("gelu", inf, inf),
    ("gelu", -inf, 0.0),
    ("relu", -inf, 0.0), ("relu", inf, inf),
])
def test_activation_limits_at_infinity(name, x, expected, dtype):
    """Activations take their limits at ±inf (as exp(-inf) = 0), not inf * 0 = NaN."""
    r = UNARY[name][0](qb.array(np.array([x], dtype=dtype))).numpy()[0]
    assert r == expected, f"{name}({x}) = {r}, expected {expected}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["log10", "log2", "exp2", "cbrt"])
def test_exact_results_at_exact_arguments(name, dtype):
    """Where the result is exactly representable the answer is exact, as in glibc:
    log10(10^k), log2(2^k), exp2(k), cbrt(n^3). Each value is tested alone (an eager scalar),
    inside a vector (every lane position) and in place."""
    f32 = dtype == "float32"
    if name == "log10":
        ks = range(0, 11 if f32 else 23)  # 10^k exactly representable
        xs, want = [10.0 ** k for k in ks], [float(k) for k in ks]
    elif name == "log2":
        ks = range(-126 if f32 else -1022, 128 if f32 else 1024, 7)
        xs, want = [2.0 ** k for k in ks], [float(k) for k in ks]
    elif name == "exp2":
        ks = range(-126 if f32 else -1022, 128 if f32 else 1024, 7)
        xs, want = [float(k) for k in ks], [2.0 ** k for k in ks]
    else:
        ns = list(range(-200, 201)) if f32 else list(range(-200000, 200001, 97))
        xs, want = [float(n) ** 3 for n in ns], [float(n) for n in ns]
    fn = getattr(qb, name)
    got = fn(qb.array(xs, dtype=dtype)).numpy()
    np.testing.assert_array_equal(got, np.asarray(want, dtype=dtype), err_msg=f"{name} {dtype} vector")
    for x, w in list(zip(xs, want))[:: max(1, len(xs) // 25)]:
        assert fn(qb.array(x, dtype=dtype)).item() == w, f"{name}({x}) {dtype}"
