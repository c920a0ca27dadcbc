"""Derivative references at extreme arguments (mpmath, float64), shared by the tests.

Each unary op has its derivative as an mpmath expression; each binary op its two partial
derivatives. Points: subnormals, 1e-300, 1e-150, ordinary values, 1e150, 1e300 and the
infinities (where the limit exists), with both signs inside each op's domain. References
are evaluated at 200 bits and rounded to float64 (overflow to inf, underflow to 0).
"""
from __future__ import annotations

import math

import mpmath

import quabla as qb

mp = mpmath.mp
mp.prec = 200
INF = math.inf

EXTREME = [5e-324, 3e-320, 1e-310, 1e-300, 1e-150, 0.3, 2.5, 1e150, 1e300]


def signed(values):
    return [v for x in values for v in (x, -x)]


def _f(v):
    """An mpmath value rounded to float64 (inf on overflow, 0 on underflow)."""
    if v == mpmath.inf:
        return INF
    if v == -mpmath.inf:
        return -INF
    return float(v)


def _exp(x):
    return mpmath.exp(x)


# op name -> (quabla function, derivative at mpmath x or None where undefined, points)
UNARY = {
    "sin": (qb.sin, lambda x: mpmath.cos(x), signed(EXTREME)),
    "cos": (qb.cos, lambda x: -mpmath.sin(x), signed(EXTREME)),
    "tan": (qb.tan, lambda x: 1 / mpmath.cos(x) ** 2, signed(EXTREME[:-2])),
    "arcsin": (qb.arcsin, lambda x: 1 / mpmath.sqrt(1 - x * x), signed(EXTREME[:6] + [0.999, 0.9999999])),
    "arccos": (qb.arccos, lambda x: -1 / mpmath.sqrt(1 - x * x), signed(EXTREME[:6] + [0.999, 0.9999999])),
    "arctan": (qb.arctan, lambda x: 1 / (1 + x * x), signed(EXTREME) + [INF, -INF]),
    "sinh": (qb.sinh, lambda x: mpmath.cosh(x), signed(EXTREME[:7] + [700.0, 1e150])),
    "cosh": (qb.cosh, lambda x: mpmath.sinh(x), signed(EXTREME[:7] + [700.0, 1e150])),
    "tanh": (qb.tanh, lambda x: 1 / mpmath.cosh(x) ** 2, signed(EXTREME[:7]) + [1e150, 1e300, INF, -INF]),
    "arcsinh": (qb.arcsinh, lambda x: 1 / mpmath.sqrt(x * x + 1), signed(EXTREME) + [INF, -INF]),
    "arccosh": (qb.arccosh, lambda x: 1 / mpmath.sqrt(x * x - 1), [1.5, 2.5, 1e150, 1e300]),
    "arctanh": (qb.arctanh, lambda x: 1 / (1 - x * x), signed(EXTREME[:6] + [0.999, 0.9999999])),
    "exp": (qb.exp, _exp, signed(EXTREME[:7]) + [700.0, 710.0, -745.0, 1e300, -1e300, -INF]),
    "exp2": (qb.exp2, lambda x: mpmath.power(2, x) * mpmath.log(2), signed(EXTREME[:7]) + [1000.0, -1000.0, -INF]),
    "expm1": (qb.expm1, _exp, signed(EXTREME[:7]) + [700.0, -1e300, -INF]),
    "log": (qb.log, lambda x: 1 / x, EXTREME + [INF]),
    "log2": (qb.log2, lambda x: 1 / (x * mpmath.log(2)), EXTREME + [INF]),
    "log10": (qb.log10, lambda x: 1 / (x * mpmath.log(10)), EXTREME + [INF]),
    "log1p": (qb.log1p, lambda x: 1 / (1 + x), signed(EXTREME[:6]) + [2.5, 1e150, 1e300, INF]),
    "sqrt": (qb.sqrt, lambda x: 1 / (2 * mpmath.sqrt(x)), EXTREME + [INF]),
    "cbrt": (qb.cbrt, lambda x: 1 / (3 * mpmath.cbrt(abs(x)) ** 2), signed(EXTREME) + [INF, -INF]),
    "erf": (qb.erf, lambda x: 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x), signed(EXTREME) + [INF, -INF]),
    "erfc": (qb.erfc, lambda x: -2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x), signed(EXTREME) + [INF, -INF]),
    "sigmoid": (qb.sigmoid, lambda x: mpmath.exp(-abs(x)) / (1 + mpmath.exp(-abs(x))) ** 2,
                signed(EXTREME[:7] + [20.0, 40.0, 700.0, 1e300]) + [INF, -INF]),
    "softplus": (qb.softplus, lambda x: 1 / (1 + mpmath.exp(-x)), signed(EXTREME[:7] + [40.0, 1e300]) + [INF, -INF]),
    "silu": (qb.silu, lambda x: (1 + mpmath.exp(-x) + x * mpmath.exp(-x)) / (1 + mpmath.exp(-x)) ** 2,
             signed(EXTREME[:7] + [40.0, 1e300]) + [INF, -INF]),
    "gelu": (qb.gelu, None, signed(EXTREME[:7] + [40.0, 1e150, 1e300]) + [INF, -INF]),
    "square": (qb.square, lambda x: 2 * x, signed(EXTREME)),
    "reciprocal": (qb.reciprocal, lambda x: -1 / (x * x), signed(EXTREME[2:]) + [INF, -INF]),
    "abs": (qb.abs, lambda x: mpmath.sign(x), signed(EXTREME) + [INF, -INF]),
    "relu": (qb.relu, lambda x: 1 if x > 0 else 0, signed(EXTREME) + [INF, -INF]),
    "negative": (qb.negative, lambda x: -1, signed(EXTREME) + [INF, -INF]),
}


def gelu_derivative(x):
    c, k = mpmath.sqrt(2 / mpmath.pi), mpmath.mpf("0.044715")
    z = c * (x + k * x ** 3)
    t = mpmath.tanh(z)
    return (1 + t) / 2 + x / 2 * (1 - t * t) * c * (1 + 3 * k * x * x)


UNARY["gelu"] = (qb.gelu, gelu_derivative, UNARY["gelu"][2])

BINARY_POINTS = [(a, b) for a in signed([1e-310, 1e-300, 1.5, 1e150, 1e300]) for b in signed([1e-310, 1e-300, 0.7, 1e150,
                                                                                               1e300])]


def _hypot_d(a, b):
    r = mpmath.sqrt(a * a + b * b)
    return a / r, b / r


def _atan2_d(a, b):  # atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
    d = a * a + b * b
    return b / d, -a / d


def _div_d(a, b):
    return 1 / b, -a / (b * b)


def _pow_d(a, b):
    if a <= 0:
        return None
    y = mpmath.power(a, b)
    return b * mpmath.power(a, b - 1), y * mpmath.log(a)


def _logaddexp_d(a, b):
    m = max(a, b)
    ea, eb = mpmath.exp(a - m), mpmath.exp(b - m)
    return ea / (ea + eb), eb / (ea + eb)


BINARY = {
    "add": (qb.add, lambda a, b: (1, 1), BINARY_POINTS),
    "subtract": (qb.subtract, lambda a, b: (1, -1), BINARY_POINTS),
    "multiply": (qb.multiply, lambda a, b: (b, a), BINARY_POINTS),
    "divide": (qb.divide, _div_d, BINARY_POINTS),
    "power": (qb.power, _pow_d, [(a, b) for a in [1e-310, 1e-300, 1.5, 1e150, 1e300] for b in [-2.5, -0.5, 0.5, 2.0, 3.0]]),
    "arctan2": (qb.arctan2, _atan2_d, BINARY_POINTS),
    "hypot": (qb.hypot, _hypot_d, BINARY_POINTS + [(3e-320, 4e-320), (5e-324, 5e-324)]),
    "logaddexp": (qb.logaddexp, _logaddexp_d, BINARY_POINTS + [(0.3, 0.3), (1e300, 1e300), (-1e300, -1e300)]),
    "maximum": (qb.maximum, lambda a, b: (1, 0) if a > b else (0, 1) if a < b else (0.5, 0.5),
                BINARY_POINTS + [(1e-310, 1e-310)]),
    "minimum": (qb.minimum, lambda a, b: (1, 0) if a < b else (0, 1) if a > b else (0.5, 0.5),
                BINARY_POINTS + [(1e-310, 1e-310)]),
    "fmod": (qb.fmod, lambda a, b: (1, -mpmath.floor(abs(a / b)) * mpmath.sign(a / b)),
             [(a, b) for a, b in BINARY_POINTS if abs(a / b) < 1e15]),
}


def reference(d, *args):
    """The derivative(s) at float64 args as float64 (None where undefined)."""
    with mpmath.workprec(200):
        r = d(*[mpmath.mpf(a) if math.isfinite(a) else (mpmath.inf if a > 0 else -mpmath.inf) for a in args])
    if r is None:
        return None
    if isinstance(r, tuple):
        return tuple(_f(mpmath.mpf(v)) for v in r)
    return _f(mpmath.mpf(r))


def close(got: float, ref: float, rtol: float) -> bool:
    """got agrees with the float64 reference: equal, both NaN, or within rtol (relative), or
    both at most 1e-300 in magnitude apart by rtol of the larger (a subnormal reference has
    few significant bits)."""
    if math.isnan(ref):
        return math.isnan(got)
    if math.isinf(ref) or math.isinf(got):
        return got == ref
    if got == ref:
        return True
    scale = max(abs(ref), abs(got))
    tiny = 2.2250738585072014e-308
    if scale < tiny:  # subnormal: absolute precision of the format
        return abs(got - ref) <= 8 * 4.9406564584124654e-324 + rtol * scale
    return abs(got - ref) <= rtol * scale
