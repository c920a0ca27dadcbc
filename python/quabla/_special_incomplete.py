"""The regularized incomplete gamma and beta functions and the modified Bessel functions of
orders 0 and 1 (jax.scipy.special's gammainc, gammaincc, betainc, i0, i0e, i1, i1e; jax.lax's
igamma, igammac, betainc, bessel_i0e, bessel_i1e), as compositions of the core ops in float64
(a float32 argument gives a float32 result).

Formulas: the power series of P(a, x) where x < a + 1 and the continued fraction of
Q(a, x) elsewhere (evaluated by Lentz's method); the continued fraction of I_x(a, b) on the
side of the symmetry point (a + 1) / (a + b + 2) where it converges fast; for I0 and I1 the
ascending series up to |x| = 20 and the asymptotic expansion beyond. The loops run a fixed
number of steps (a fori_loop, so the functions jit, vmap and differentiate in every
argument by ordinary autodiff; further steps of a converged series add nothing). The fixed
count bounds the parameters they are accurate for: the series and fractions need O(sqrt(a))
steps near x = a, so for a above about 1e3 gammainc is NaN in a band around x = a (it
checks its last step) rather than a truncated value; betainc converges for a, b up to 1e6.
"""
from __future__ import annotations

import math

from . import _core
from ._package import qb as _qb
from ._numpy_extra import _reject_complex
from ._special import betaln, gammaln

__all__ = ["gammainc", "gammaincc", "betainc", "i0", "i0e", "i1", "i1e"]

_STEPS = 256
_TINY = 1e-300


def _as_f64(*xs):
    arrs = [_qb.asarray(x) for x in xs]
    _reject_complex(*arrs)  # (functions of real arguments only: never a dropped imaginary part)
    # Python numbers are weak (they take the arrays' dtype), as in arithmetic.
    floats = [a.dtype for a, x in zip(arrs, xs)
              if a.dtype in (_core.float32, _core.float64) and not isinstance(x, (int, float))]
    out = _core.float32 if floats and all(d == _core.float32 for d in floats) else _qb.default_dtype()
    if not floats:
        out = _qb.default_dtype()
    shape = tuple(_qb.broadcast_shapes(*(tuple(a.shape) for a in arrs)))
    return [_qb.broadcast_to(a.astype(_core.float64), shape) for a in arrs], out


def _guard(v):
    return _qb.where(_qb.abs(v) < _TINY, _qb.full_like(v, _TINY), v)


def _log_prefix(a, x):
    """log(x^a e^-x / Gamma(a))."""
    return a * _qb.log(x) - x - gammaln(a)


# A fixed step count converges everywhere except near x = a for a above about 1e3; there
# the result is NaN (the last step still changed it), never a silently truncated value.
_CONVERGED = 1e-15


def _gamma_p_series(a, x):
    def body(i, carry):
        ap, term, total = carry
        ap = ap + 1.0
        term = term * x / ap
        return ap, term, total + term
    first = 1.0 / a
    _, term, total = _qb.fori_loop(0, _STEPS, body, (a, first, first))
    converged = _qb.stop_gradient(term) <= _CONVERGED * _qb.stop_gradient(total)
    return total * _qb.exp(_log_prefix(a, x)), converged


def _gamma_q_fraction(a, x):
    b = x + 1.0 - a
    c = _qb.full_like(x, 1.0 / _TINY)
    d = 1.0 / b

    def body(i, carry):
        b, c, d, h, _ = carry
        k = (i + 1).astype(_core.float64)
        an = -k * (k - a)
        b = b + 2.0
        d = 1.0 / _guard(an * d + b)
        c = _guard(b + an / c)
        return b, c, d, h * d * c, d * c
    _, _, _, h, last = _qb.fori_loop(0, _STEPS, body, (b, c, d, d, _qb.zeros_like(d)))
    converged = _qb.abs(_qb.stop_gradient(last) - 1.0) <= 1e-14
    return h * _qb.exp(_log_prefix(a, x)), converged


def _incomplete_gamma(a, x, upper: bool):
    (a, x), out = _as_f64(a, x)
    edge = (a == 0) & (x > 0)  # SciPy's limit: P(0, x) = 1
    valid = (a > 0) & (x >= 0)
    finite = valid & (x > 0) & _qb.isfinite(x)
    series = x < a + 1.0
    # Each branch runs on arguments it is valid for, so a discarded branch gives no NaN.
    a_s = _qb.where(finite, a, _qb.ones_like(a))
    x_p = _qb.where(finite & series, x, 0.5 * a_s)
    x_q = _qb.where(finite & ~series, x, a_s + 1.0)
    p, p_ok = _gamma_p_series(a_s, x_p)
    q, q_ok = _gamma_q_fraction(a_s, x_q)
    low = _qb.where(series, p, 1.0 - q)
    high = _qb.where(series, 1.0 - p, q)
    value = high if upper else low
    value = _qb.where(_qb.where(series, p_ok, q_ok) | ~finite, value, _qb.full_like(value, math.nan))
    at_zero, at_inf = (1.0, 0.0) if upper else (0.0, 1.0)
    value = _qb.where(x == 0, _qb.full_like(x, at_zero), value)
    value = _qb.where(_qb.isinf(x) & (x > 0), _qb.full_like(x, at_inf), value)
    value = _qb.where(valid, value, _qb.full_like(x, math.nan))
    return _qb.where(edge, _qb.full_like(x, at_inf), value).astype(out)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (a > 0, x >= 0, and SciPy's
    P(0, x) = 1 for x > 0; NaN elsewhere)."""
    return _incomplete_gamma(a, x, upper=False)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _incomplete_gamma(a, x, upper=True)


def _beta_fraction(a, b, x):
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = _qb.ones_like(x)
    d = 1.0 / _guard(1.0 - qab * x / qap)

    def body(i, carry):
        c, d, h = carry
        m = (i + 1).astype(_core.float64)
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 / _guard(1.0 + aa * d)
        c = _guard(1.0 + aa / c)
        h = h * d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 / _guard(1.0 + aa * d)
        c = _guard(1.0 + aa / c)
        return c, d, h * d * c
    _, _, h = _qb.fori_loop(0, _STEPS, body, (c, d, d))
    log_front = a * _qb.log(x) + b * _qb.log1p(-x) - betaln(a, b)
    return _qb.exp(log_front) * h / a


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (a, b > 0, 0 <= x <= 1; NaN elsewhere)."""
    (a, b, x), out = _as_f64(a, b, x)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    inner = valid & (x > 0) & (x < 1)
    flip = x > (a + 1.0) / (a + b + 2.0)
    a_s = _qb.where(inner, a, _qb.ones_like(a))
    b_s = _qb.where(inner, b, _qb.ones_like(b))
    x_s = _qb.where(inner, x, _qb.full_like(x, 0.25))
    direct = _beta_fraction(a_s, b_s, _qb.where(flip, _qb.full_like(x_s, 0.25), x_s))
    mirrored = 1.0 - _beta_fraction(b_s, a_s, _qb.where(flip, 1.0 - x_s, _qb.full_like(x_s, 0.25)))
    value = _qb.where(flip, mirrored, direct)
    value = _qb.where(x == 0, _qb.zeros_like(x), _qb.where(x == 1, _qb.ones_like(x), value))
    value = _qb.where(valid, value, _qb.full_like(x, math.nan))
    # SciPy's limits: all mass at 0 when a = 0, at 1 when b = 0.
    in_range = (x >= 0) & (x <= 1)
    value = _qb.where((a == 0) & (b > 0) & in_range, _qb.where(x > 0, _qb.ones_like(x), _qb.zeros_like(x)), value)
    value = _qb.where((b == 0) & (a > 0) & in_range, _qb.where(x < 1, _qb.zeros_like(x), _qb.ones_like(x)), value)
    return value.astype(out)


# ---- modified Bessel functions of the first kind, orders 0 and 1 ---------------------------

_SERIES_TERMS = 64
_ASYMPTOTIC_TERMS = 32
_SWITCH = 20.0


def _bessel_e(x, order: int):
    """exp(-|x|) I_order(x) for order 0 or 1 (I1 is odd: its series runs on the signed x, so
    its derivative at 0 is 1/2; the asymptotic branch takes the sign)."""
    (x,), out = _as_f64(x)
    ax = _qb.abs(x)
    small = ax <= _SWITCH
    xs = _qb.where(small, x if order == 1 else ax, _qb.ones_like(ax))
    xl = _qb.where(small, _qb.full_like(ax, 2.0 * _SWITCH), ax)
    # Ascending series: sum (x/2)^(2k + order) / (k! (k + order)!).
    q = 0.25 * xs * xs
    term = _qb.ones_like(xs) if order == 0 else 0.5 * xs
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * q / (k * (k + order))
        total = total + term
    series = total * _qb.exp(-_qb.abs(xs))
    # Asymptotic: (2 pi x)^(-1/2) sum_k (-1)^k prod_{j<=k} (mu - (2j - 1)^2) / (k! (8x)^k), mu = 4 order^2.
    mu = 4.0 * order * order
    term = _qb.ones_like(xl)
    total = term
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * (-(mu - (2 * k - 1) ** 2)) / (k * 8.0 * xl)
        total = total + term
    asymptotic = total / _qb.sqrt(2.0 * math.pi * xl)
    if order == 1:
        asymptotic = _qb.sign(x) * asymptotic
    return _qb.where(small, series, asymptotic), out, x


def i0e(x):
    """exp(-|x|) I0(x)."""
    v, out, _ = _bessel_e(x, 0)
    return v.astype(out)


def i0(x):
    """The modified Bessel function of the first kind of order 0."""
    v, out, x = _bessel_e(x, 0)
    return (v * _qb.exp(_qb.abs(x))).astype(out)


def i1e(x):
    """exp(-|x|) I1(x)."""
    v, out, x = _bessel_e(x, 1)
    return v.astype(out)


def i1(x):
    """The modified Bessel function of the first kind of order 1."""
    v, out, x = _bessel_e(x, 1)
    return (v * _qb.exp(_qb.abs(x))).astype(out)
