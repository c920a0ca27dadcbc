"""The gamma family and the inverse error function (jax.scipy.special / jax.lax names):
gammaln (lax.lgamma), gamma, digamma, polygamma, betaln, beta, erfinv (lax.erf_inv),
erfcinv and ndtri, as compositions of the core ops (so they jit, vmap and run on every
backend) and differentiate by ordinary autodiff: the series below differentiate term by
term into the series of the next derivative (d/dx gammaln is digamma's series to rounding),
and through the Newton steps of erfinv the derivative is 1 / erf'(erfinv(y)) to the final
residual. Every branch that a `where` discards is evaluated at a harmless argument, so no
NaN or inf of an unused branch reaches a derivative.

Formulas: Lanczos's approximation (g = 7, 9 terms) for log Gamma on [0.5, inf); the
asymptotic series of digamma after shifting the argument to at least 10; Euler-Maclaurin
summation of the Hurwitz zeta function for polygamma; reflection through sin / cot(pi x)
below 0.5, with pi x reduced to [-pi/2, pi/2] first (exact for large |x|); Giles's
single-precision approximation of erfinv refined by two Newton steps on erf (erfc in the
tails). Values and edge cases follow JAX: poles of gammaln and gamma give inf, of digamma
and polygamma(0) NaN; erfinv(+-1) = +-inf.
"""
from __future__ import annotations

import math
from fractions import Fraction

from . import _core
from ._numpy_extra import _reject_complex
from ._indexing import take as _take

__all__ = ["gammaln", "lgamma", "gamma", "digamma", "polygamma", "betaln", "beta", "erfinv", "erf_inv", "erfcinv",
           "ndtri"]

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _float(x):
    """x as a float array (integers and bools become the default float dtype, as in JAX)."""
    x = _core.asarray(x)
    if x.dtype in (_core.float32, _core.float64):
        return x
    _reject_complex(x)  # (these functions are of real arguments only: never a dropped imaginary part)
    return x.astype(_core.float64 if _core.zeros(()).dtype == _core.float64 else _core.float32)


def _sinpi_cospi(x):
    """sin(pi x) and cos(pi x) with pi x reduced to [-pi/2, pi/2] first (x - round(x) is
    exact), so large |x| and the integers lose nothing."""
    n = _core.round(x)
    r = x - n
    s, c = _core.sin(math.pi * r), _core.cos(math.pi * r)
    odd = _core.fmod(n, 2.0) != 0
    return _core.where(odd, -s, s), _core.where(odd, -c, c)


def _lanczos_lgamma(x):
    """log Gamma(x) for x >= 0.5."""
    z = x - 1.0
    a = _LANCZOS[0]
    for k in range(1, len(_LANCZOS)):
        a = a + _LANCZOS[k] / (z + float(k))
    t = z + (_LANCZOS_G + 0.5)
    return _HALF_LOG_2PI + (z + 0.5) * _core.log(t) - t + _core.log(a)


def _zeta_float(k: int) -> float:
    """zeta(k) for an integer k >= 2 (Euler-Maclaurin at 10, in Python floats)."""
    n = 10
    total = sum(j ** -k for j in range(1, n)) + n ** (1 - k) / (k - 1) + 0.5 * n ** -k
    rising = Fraction(k)
    for j in range(1, 9):
        total += float(_B[2 * j] / math.factorial(2 * j) * rising) * n ** (-k - 2 * j + 1)
        rising *= (k + 2 * j - 1) * (k + 2 * j)
    return total


def _lgamma_near_one(e):
    """log Gamma(1 + e) for |e| <= 0.25: -gamma e + sum_k (-1)^k zeta(k) / k e^k (to e^27),
    relative accuracy kept next to the zero at e = 0."""
    acc = _core.zeros_like(e)
    for c in reversed(_NEAR_ONE):
        acc = (acc + c) * e
    return acc


def gammaln(x):
    """log |Gamma(x)| (jax.scipy.special.gammaln, lax.lgamma); inf at the poles. Next to its
    zeros at 1 and 2 a series in x - 1 keeps the relative accuracy (Lanczos alone leaves an
    absolute error of about 1e-15 there)."""
    x = _float(x)
    small = x < 0.5
    finite = _core.isfinite(x)
    xa = _core.where(small, 1.0 - x, x)  # >= 0.5 on both sides: one Lanczos evaluation
    lg = _lanczos_lgamma(_core.where(finite, xa, 1.0))
    near1, near2 = _core.abs(xa - 1.0) <= 0.25, _core.abs(xa - 2.0) <= 0.25
    e = _core.where(near1, xa - 1.0, _core.where(near2, xa - 2.0, 0.0))
    series = _lgamma_near_one(e)
    lg = _core.where(near1, series, _core.where(near2, series + _core.log1p(e), lg))  # lgamma(2 + e) = log(1 + e) + lgamma(1 + e)
    s, _ = _sinpi_cospi(_core.where(small & finite, x, 0.25))
    reflected = math.log(math.pi) - _core.log(_core.abs(s)) - lg
    out = _core.where(small, reflected, lg)
    out = _core.where(_core.isinf(x), _core.full_like(x, math.inf), out)
    return _core.where(_core.isnan(x), x, out)


lgamma = gammaln


def _digamma_positive(x):
    """psi(x) for x >= 0.5: the asymptotic series at y = x (+10 when x < 10)."""
    shift = x < 10.0
    acc = _core.zeros_like(x)
    for k in range(10):
        acc = acc + 1.0 / (x + float(k))
    y = _core.where(shift, x + 10.0, x)
    inv2 = 1.0 / (y * y)
    # B_2k / (2k) for k = 1..7, in Horner form in 1/y^2
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (
        1.0 / 132 - inv2 * (691.0 / 32760 - inv2 * (1.0 / 12)))))))
    psi = _core.log(y) - 0.5 / y - series
    return _core.where(shift, psi - acc, psi)


def _bernoulli(m):
    """B_0 .. B_m as Fractions (B_1 = -1/2)."""
    b = [Fraction(0)] * (m + 1)
    for n in range(m + 1):
        b[n] = Fraction(1) if n == 0 else -sum(math.comb(n + 1, k) * b[k] for k in range(n)) / (n + 1)
    return b


_B = _bernoulli(20)
_NEAR_ONE = [-0.57721566490153286061] + [(-1) ** k * _zeta_float(k) / k for k in range(2, 28)]


def _hurwitz_zeta(s: int, x):
    """zeta(s, x) = sum_k (x + k)^-s for an integer s >= 2 and x >= 0.5: ten terms, then
    Euler-Maclaurin at x + 10 with eight Bernoulli corrections."""
    acc = _core.zeros_like(x)
    for k in range(10):
        acc = acc + (x + float(k)) ** (-s)
    y = x + 10.0
    tail = y ** (1 - s) / (s - 1) + 0.5 * y ** (-s)
    rising = Fraction(s)  # s (s + 1) ... (s + 2j - 2)
    for j in range(1, 9):
        coeff = float(_B[2 * j] / math.factorial(2 * j) * rising)
        tail = tail + coeff * y ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return acc + tail


def _cot_derivative_polynomial(n: int):
    """Coefficients (constant first) of P with d^n/dx^n cot(pi x) = P(cot(pi x))."""
    p = [0, 1]  # cot
    for _ in range(n):
        dp = [k * p[k] for k in range(1, len(p))] or [0]  # P'(c)
        out = [0] * (len(dp) + 2)  # times -pi (1 + c^2)
        for k, a in enumerate(dp):
            out[k] -= a * math.pi
            out[k + 2] -= a * math.pi
        p = out
    return p


def _polygamma_positive(n: int, x):
    if n == 0:
        return _digamma_positive(x)
    return (-1.0) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x)


def _polygamma(n: int, x):
    x = _float(x)
    small = x < 0.5
    finite = _core.isfinite(x)
    xa = _core.where(small, 1.0 - x, x)
    pos = _polygamma_positive(n, _core.where(finite, xa, 1.0))
    s, c = _sinpi_cospi(_core.where(small & finite, x, 0.25))
    cot = c / s
    poly = _core.zeros_like(x)
    for a in reversed(_cot_derivative_polynomial(n)):
        poly = poly * cot + float(a)
    # psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi d^n/dx^n cot(pi x)
    reflected = (-1.0) ** n * pos - math.pi * poly
    out = _core.where(small, reflected, pos)
    pole = (x <= 0) & (_core.floor(x) == x)
    undefined = (x == -math.inf) | _core.isnan(x)
    if n == 0:
        out = _core.where(pole | undefined, _core.full_like(x, math.nan), out)
        return _core.where(x == math.inf, _core.full_like(x, math.inf), out)
    big = (-1.0) ** (n + 1) * math.inf  # the sign of psi^(n) near a pole is that of x -> 0+
    out = _core.where(pole, _core.full_like(x, math.inf if n % 2 else big), out)
    out = _core.where(x == math.inf, _core.zeros_like(x), out)
    return _core.where(undefined, _core.full_like(x, math.nan), out)


def digamma(x):
    """psi(x) = d/dx log Gamma(x) (jax.scipy.special.digamma, lax.digamma); NaN at the poles."""
    return _polygamma(0, x)


def polygamma(n, x):
    """The n-th derivative of digamma (n a non-negative Python int), for every real x."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative Python int, got {n!r}")
    return _polygamma(n, x)


def gamma(x):
    """Gamma(x) (as exp(gammaln) with its sign: relative error about |gammaln(x)| ulp);
    inf at 0 and the overflow past 171.6, NaN at the negative integers."""
    x = _float(x)
    lg = gammaln(x)
    negative_odd = (x < 0) & (_core.fmod(_core.floor(x), 2.0) != 0)  # Gamma < 0 on (-1, 0), (-3, -2), ...
    out = _core.where(negative_odd, -_core.exp(lg), _core.exp(lg))
    # the positive integers up to 23 exactly ((n - 1)! is exact in float64 there)
    integer = (x >= 1) & (x <= 23) & (_core.floor(x) == x)
    index = _core.where(integer, x - 1.0, 0.0).astype(_core.int32)
    table = _core.asarray([float(math.factorial(k)) for k in range(23)]).astype(x.dtype)
    exact = _take(table, index) * _core.exp(lg - _core.stop_gradient(lg))  # the value exactly, the derivative Gamma psi
    out = _core.where(integer, exact, out)
    pole = (x < 0) & (_core.floor(x) == x)
    out = _core.where(pole | (x == -math.inf) | _core.isnan(x), _core.full_like(x, math.nan), out)
    signed_zero = _core.where(_core.where(x == 0, _core.ones_like(x), _core.zeros_like(x)) / x < 0,
                              _core.full_like(x, -math.inf),
                              _core.full_like(x, math.inf))
    return _core.where(x == 0, signed_zero, out)


def betaln(a, b):
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    a, b = _float(a), _float(b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def beta(a, b):
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b) (positive a and b: exp(betaln))."""
    return _core.exp(betaln(a, b))


# ---- the inverse error function

def _central_initial(v):
    """Giles's single-precision erfinv(v) for |v| <= 0.5 (w = -log(1 - v^2) < 5), odd in v."""
    w = -_core.log((1.0 - v) * (1.0 + v)) - 2.5
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p = c + p * w
    return p * v


def _tail_initial(a, om):
    """erfinv(a) for 0.5 < a < 1 given om = 1 - a (exact), to about 1e-7: Giles's
    approximation while w = -log(1 - a^2) < 16 (all of float32), then the asymptotic inverse
    of erfc(x) ~ exp(-x^2) / (x sqrt(pi))."""
    w = -_core.log(om * (1.0 + a))
    far = w >= 16.0
    wt = _core.sqrt(_core.clip(w, 0.0, 16.0)) - 3.0
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        q = c + q * wt
    big = -_core.log(_core.where(far, om, 1e-8))
    w_central = -_core.log(om * (1.0 + a)) < 5.0  # a little above 0.5: Giles's central form
    central = _central_initial(_core.where(w_central, a, 0.5))
    return _core.where(far, _core.sqrt(big - 0.5 * _core.log(math.pi * big)), _core.where(w_central, central, q * a))


def _halley(x, residual_of):
    """Three Halley steps on f(x) = 0 with f' = 2/sqrt(pi) exp(-x^2) and f'' / f' = -2x."""
    for _ in range(3):
        step = residual_of(x) / ((2.0 / math.sqrt(math.pi)) * _core.exp(-x * x))
        x = x - step / (1.0 + x * step)
    return x


def _inverse(v, a, om, negative):
    """erfinv(v) with a = |v| and om = 1 - a given exactly: around 0 from v itself (odd and
    differentiable at 0, refined on erf(x) - v); for a > 0.5 from om (refined on erfc, where
    erf(x) - a would cancel), negated where `negative`; +-inf at a = 1."""
    tail = a > 0.5
    inside = om > 0
    vc = _core.where(tail, 0.0, v)
    central = _halley(_central_initial(vc), lambda x: _core.erf(x) - vc)
    at, omt = _core.where(tail & inside, a, 0.75), _core.where(tail & inside, om, 0.25)
    far = _halley(_core.minimum(_tail_initial(at, omt), 27.0), lambda x: omt - _core.erfc(x))
    far = _core.where(inside, far, _core.full_like(far, math.inf))
    return _core.where(tail, _core.where(negative, -far, far), central)


def erfinv(y):
    """The inverse of erf on [-1, 1] (jax.scipy.special.erfinv, lax.erf_inv): +-inf at +-1,
    NaN outside."""
    return _core.erf_inv(_float(y))  # a primitive: vectorised kernels, d/dy = sqrt(pi)/2 exp(x^2)


erf_inv = erfinv


def erfcinv(z):
    """The inverse of erfc on [0, 2], accurate for z near 0 (the tail erfinv(1 - z) loses):
    +inf at 0, -inf at 2, NaN outside."""
    z = _float(z)
    zc = _core.clip(z, 0.0, 2.0)
    upper = zc > 1.0
    om = _core.where(upper, 2.0 - zc, zc)  # 1 - |1 - z|, exact: z itself below 1, 2 - z (Sterbenz) above
    out = _inverse(1.0 - zc, 1.0 - om, om, upper)
    return _core.where((z < 0) | (z > 2) | _core.isnan(z), _core.full_like(z, math.nan), out)


def ndtri(p):
    """The inverse of the standard normal CDF: -sqrt(2) erfcinv(2 p), accurate in both tails."""
    p = _float(p)
    return -math.sqrt(2.0) * erfcinv(2.0 * p)
