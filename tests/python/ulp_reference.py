"""Correctly rounded references and ULP distances for the elementwise accuracy tests.

References are computed with mpmath at high precision (or exactly, with rationals) and then
rounded to nearest-even directly into the target format (float32 or float64), subnormals
included, with the format's own exponent range (no round-through-float64 for float32).
Special operands (±0, ±inf, NaN) follow IEEE 754 / C99 Annex F, written out here as tables
rather than taken from the libm under test.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import mpmath
import numpy as np

mp = mpmath.mp

# Working precision of the references (bits). Far above 53, so rounding the mpmath value to
# float64/float32 is the correctly rounded result except for astronomically rare hard cases.
PREC = 200


@dataclass(frozen=True)
class Format:
    name: str
    np_dtype: type
    int_dtype: type
    p: int  # significand bits, implicit bit included
    emin: int  # exponent of the smallest normal
    emax: int  # exponent of the largest finite


F32 = Format("float32", np.float32, np.int32, 24, -126, 127)
F64 = Format("float64", np.float64, np.int64, 53, -1022, 1023)
FORMATS = {"float32": F32, "float64": F64}


# ----------------------------------------------------------------------------------------
# Correct rounding into a binary format.

def _round_rational(neg: bool, num: int, den: int, fmt: Format) -> float:
    """Round (-1)^neg * num/den (num, den > 0 integers) to nearest-even in fmt."""
    # e = floor(log2(num/den))
    e = num.bit_length() - den.bit_length()
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1
    q = max(e, fmt.emin) - (fmt.p - 1)  # exponent of the unit in the last place
    sn = num << -q if q < 0 else num
    sd = den << q if q > 0 else den
    n, rem = divmod(sn, sd)
    if 2 * rem > sd or (2 * rem == sd and n & 1):
        n += 1
    if n == 0:
        return -0.0 if neg else 0.0
    if n.bit_length() + q - 1 > fmt.emax:  # n * 2^q >= 2^(emax+1)
        return -math.inf if neg else math.inf
    v = math.ldexp(n, q)  # exact: n has at most p bits, 2^q is within float64's range
    return -v if neg else v


def round_to(value, fmt: Format) -> float:
    """Correctly round an mpf / mpc / Fraction / int / float to fmt; returns a Python float
    whose value is exactly representable in fmt. Complex values with a nonzero imaginary
    part (mpmath's answer outside a real domain) become NaN."""
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            return math.nan
        value = value.real
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or value == 0:
            return value
        value = Fraction(value)
    if isinstance(value, int):
        value = Fraction(value)
    if isinstance(value, Fraction):
        if value == 0:
            return 0.0
        return _round_rational(value < 0, abs(value.numerator), value.denominator, fmt)
    value = mpmath.mpf(value)
    if mpmath.isnan(value):
        return math.nan
    if mpmath.isinf(value):
        return math.inf if value > 0 else -math.inf
    if value == 0:
        return 0.0
    sign, man, exp, bc = value._mpf_
    top = exp + bc  # 2^(top-1) <= |value| < 2^top
    if top < fmt.emin - fmt.p - 1:  # below half the smallest subnormal
        return -0.0 if sign else 0.0
    if top > fmt.emax + 2:
        return -math.inf if sign else math.inf
    if exp >= 0:
        return _round_rational(bool(sign), int(man) << exp, 1, fmt)
    return _round_rational(bool(sign), int(man), 1 << -exp, fmt)


# ----------------------------------------------------------------------------------------
# ULP distance.

def _ordered(a: np.ndarray, fmt: Format) -> np.ndarray:
    bits = np.ascontiguousarray(a, dtype=fmt.np_dtype).view(fmt.int_dtype).astype(np.int64)
    mag = bits & np.int64((1 << (fmt.p + (8 if fmt is F32 else 11) - 1)) - 1)  # drop sign bit
    return np.where(bits < 0, -mag, mag)  # -0 and +0 both map to 0


def ulp_distance(got: np.ndarray, ref: np.ndarray, fmt: Format) -> np.ndarray:
    """Distance in units in the last place, counted as the number of representable values
    between got and ref (subnormal spacing below the normal range). ±0 are equal; NaN only
    matches NaN; an infinity only matches the same infinity (else the distance is inf)."""
    got = np.asarray(got, dtype=fmt.np_dtype)
    ref = np.asarray(ref, dtype=fmt.np_dtype)
    d = np.abs(_ordered(got, fmt) - _ordered(ref, fmt)).astype(np.float64)
    gn, rn = np.isnan(got), np.isnan(ref)
    d = np.where(gn | rn, np.where(gn & rn, 0.0, np.inf), d)
    gi, ri = np.isinf(got), np.isinf(ref)
    with np.errstate(invalid="ignore"):
        inf_mismatch = (gi | ri) & ~(got == ref)
    d = np.where(inf_mismatch & ~(gn | rn), np.inf, d)
    return d


# ----------------------------------------------------------------------------------------
# Input sweeps.

def fmt_consts(fmt: Format):
    f = np.finfo(fmt.np_dtype)
    tiny_sub = float(np.nextafter(fmt.np_dtype(0), fmt.np_dtype(1)))
    return tiny_sub, float(f.tiny), float(f.max)


def specials(fmt: Format) -> list[float]:
    tiny_sub, tiny, big = fmt_consts(fmt)
    return [0.0, -0.0, math.inf, -math.inf, math.nan, tiny_sub, -tiny_sub, tiny, -tiny,
            big, -big, 1.0, -1.0]


def log_sweep(fmt: Format, lo: float, hi: float, n: int, seed: int, signs=(1, -1)) -> np.ndarray:
    """n magnitudes per sign, log-uniform in [lo, hi], with random significands."""
    tiny_sub, _, big = fmt_consts(fmt)
    lo, hi = max(lo, tiny_sub), min(hi, big)
    rng = np.random.default_rng(seed)
    out = []
    # even spacing in log scale, jittered, so the whole range is covered deterministically
    grid = np.linspace(math.log2(lo), math.log2(hi), n)
    jitter = rng.uniform(-0.5, 0.5, n) * (grid[1] - grid[0] if n > 1 else 0)
    e = np.clip(grid + jitter, math.log2(lo), math.log2(hi))
    with np.errstate(over="ignore"):
        mags = np.clip(np.exp2(e), lo, hi)
    for s in signs:
        out.append(s * mags)
    return _cast(np.concatenate(out), fmt)


def bits_sweep(fmt: Format, n: int, seed: int, lo: float = 0.0, hi: float = math.inf,
               signs=(1, -1)) -> np.ndarray:
    """n random floats uniform over bit patterns with magnitude in [lo, hi] (so uniform in
    exponent: subnormal, small, normal and huge alike), with a random sign from signs."""
    rng = np.random.default_rng(seed)
    _, _, big = fmt_consts(fmt)
    dt, it = fmt.np_dtype, fmt.int_dtype
    a = int(np.array(dt(lo)).view(it))
    b = int(np.array(dt(min(hi, big))).view(it))
    mags = rng.integers(a, b, n, endpoint=True).astype(it).view(dt)
    sgn = rng.choice(np.array(signs, dtype=dt), n)
    return (mags * sgn).astype(dt)


def lin_sweep(fmt: Format, lo: float, hi: float, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return _cast(np.sort(rng.uniform(lo, hi, n)), fmt)


def around(fmt: Format, values: Sequence[float], k: int = 2) -> np.ndarray:
    """Each value rounded to fmt and its k neighbours on either side."""
    out = []
    dt = fmt.np_dtype
    for v in values:
        c = dt(v)
        out.append(c)
        up = down = c
        for _ in range(k):
            up = np.nextafter(up, dt(np.inf))
            down = np.nextafter(down, dt(-np.inf))
            out.extend([up, down])
    return np.array(out, dtype=dt)


def _cast(a, fmt: Format) -> np.ndarray:
    with np.errstate(over="ignore", under="ignore"):
        return np.asarray(a, dtype=np.float64).astype(fmt.np_dtype)


def assemble(fmt: Format, *parts) -> np.ndarray:
    arrs = [np.asarray(_cast(p, fmt) if not isinstance(p, np.ndarray) or p.dtype != fmt.np_dtype else p)
            for p in parts]
    a = np.concatenate([np.atleast_1d(x) for x in arrs])
    # dedupe by bit pattern (keeps -0 and +0 apart, and one NaN)
    bits = a.view(fmt.int_dtype)
    _, idx = np.unique(bits, return_index=True)
    return a[np.sort(idx)]


# ----------------------------------------------------------------------------------------
# Reference evaluation.

def mpf_of(x: float) -> mpmath.mpf:
    return mpmath.mpf(float(x))  # exact: every float32/float64 is an mpf


def is_odd_integer(y: float) -> bool:
    return math.isfinite(y) and y == math.floor(y) and abs(y) < 2.0**64 and int(y) % 2 == 1


def reference_unary(f: Callable[[float], object], xs: np.ndarray, fmt: Format) -> np.ndarray:
    out = np.empty(len(xs), dtype=fmt.np_dtype)
    with mpmath.workprec(PREC):
        for i, x in enumerate(xs):
            out[i] = round_to(f(float(x)), fmt)
    return out


def reference_binary(f: Callable[[float, float], object], xs: np.ndarray, ys: np.ndarray,
                     fmt: Format) -> np.ndarray:
    out = np.empty(len(xs), dtype=fmt.np_dtype)
    with mpmath.workprec(PREC):
        for i, (x, y) in enumerate(zip(xs, ys)):
            out[i] = round_to(f(float(x), float(y)), fmt)
    return out
