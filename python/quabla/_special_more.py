"""More of jax.scipy.special: rel_entr, kl_div, exp1 and expi, as compositions of core
operations (so jit, grad, vmap apply); float32 inputs stay float32.

exp1 (E1, x > 0): the power series -gamma - log x - sum (-x)^k / (k k!) for x <= 1, the
continued fraction of E1(x) e^x (modified Lentz, a fixed 200 terms) above. expi (Ei):
gamma + log|x| + sum x^k / (k k!) for 0 < x <= 40, the asymptotic series e^x / x sum
k! / x^k above 40, and -E1(-x) for x < 0. Derivatives by custom_jvp from the closed forms
E1' = -e^-x / x and Ei' = e^x / x.
"""
from __future__ import annotations

from . import _core
from ._custom import custom_jvp
from ._special import _float

__all__ = ["rel_entr", "kl_div", "exp1", "expi"]

_EULER = 0.5772156649015328606


def rel_entr(x, y):
    """x log(x / y) for x > 0, y > 0; 0 where x == 0 and y >= 0; inf otherwise
    (scipy.special.rel_entr)."""
    x, y = _core.asarray(x), _core.asarray(y)
    x, y = _float(x), _float(y)
    both = (x > 0) & (y > 0)
    xs, ys = _core.where(both, x, 1.0), _core.where(both, y, 1.0)
    value = xs * (_core.log(xs) - _core.log(ys))
    zero = (x == 0) & (y >= 0)
    out = _core.where(both, value, _core.where(zero, 0.0, float("inf")))
    return _core.where(_core.isnan(x) | _core.isnan(y), float("nan"), out)


def kl_div(x, y):
    """x log(x / y) - x + y for x > 0, y > 0; y where x == 0 and y >= 0; inf otherwise
    (scipy.special.kl_div)."""
    x, y = _float(_core.asarray(x)), _float(_core.asarray(y))
    both = (x > 0) & (y > 0)
    xs, ys = _core.where(both, x, 1.0), _core.where(both, y, 1.0)
    value = xs * (_core.log(xs) - _core.log(ys)) - xs + ys
    zero = (x == 0) & (y >= 0)
    out = _core.where(both, value, _core.where(zero, y, float("inf")))
    return _core.where(_core.isnan(x) | _core.isnan(y), float("nan"), out)


def _e1_series(x):
    term, acc = -x, -x
    for k in range(2, 30):
        term = term * (-x) / k
        acc = acc + term / k
    return -_EULER - _core.log(x) - acc


def _e1_scaled_cf(x):
    # e^x E1(x) = 1 / (x + 1 - 1 / (x + 3 - 4 / (x + 5 - ...))) (Numerical Recipes' expint)
    b = x + 1.0
    c = _core.full_like(x, 1e30)
    d = 1.0 / b
    h = d
    for i in range(1, 200):
        an = -float(i * i)
        b = b + 2.0
        d = 1.0 / (an * d + b)
        c = b + an / c
        h = h * (c * d)
    return h


def _exp1_value(x):
    small = x <= 1.0
    pos = x > 0
    xs = _core.where(small & pos, x, 0.5)
    xl = _core.where(small, 2.0, x)
    big = _core.where(xl > 750.0, 750.0, xl)
    out = _core.where(small, _e1_series(xs), _e1_scaled_cf(big) * _core.exp(-xl))
    out = _core.where(x == 0, float("inf"), out)
    return _core.where(x < 0, float("nan"), out)


@custom_jvp
def _exp1(x):
    return _exp1_value(x)


@_exp1.defjvp
def _exp1_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _exp1(x), t * (-_core.exp(-x) / x)


def exp1(x):
    """The exponential integral E1(x) = integral from x to inf of e^-t / t dt, for x > 0
    (inf at 0, NaN for x < 0, as scipy.special.exp1 on real input)."""
    return _exp1(_float(x))


def _ei_series(x):
    term, acc = x, x
    for k in range(2, 160):
        term = term * x / k
        acc = acc + term / k
    return _EULER + _core.log(x) + acc


def _ei_asymptotic(x):
    term, acc = _core.ones_like(x), _core.ones_like(x)
    for k in range(1, 40):
        term = term * (k / x)
        acc = acc + term
    return _core.exp(x) / x * acc


def _expi_value(x):
    pos = x > 0
    mid = pos & (x <= 40.0)
    xs = _core.where(mid, x, 1.0)
    xa = _core.where(x > 40.0, x, 50.0)
    xn = _core.where(x < 0, -x, 1.0)
    out = _core.where(mid, _ei_series(xs), _ei_asymptotic(xa))
    out = _core.where(x < 0, -_exp1_value(xn), out)
    return _core.where(x == 0, float("-inf"), out)


@custom_jvp
def _expi(x):
    return _expi_value(x)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi(x), t * (_core.exp(x) / x)


def expi(x):
    """The exponential integral Ei(x) = principal value of the integral from -inf to x of
    e^t / t dt (-inf at 0, -E1(-x) for x < 0), as scipy.special.expi."""
    return _expi(_float(x))
