"""Further jax.scipy.special functions as compositions of core operations (so jit, vmap and
grad apply): bernoulli, bessel_jn, boxcox, boxcox1p, comb, dawsn, erfcx, expn, fresnel,
gammasgn, hyp1f1, hyp2f1, loggamma, owens_t, poch, sici, spence and zeta. Except for
gammasgn, which is exact in its argument's dtype, they compute in float64 and return
float32 for float32 arguments (Python scalars do not raise the result dtype).

Methods (the published series, continued fractions and transformations named in each
docstring; loops run a fixed number of steps, so a converged tail adds nothing):
power series near 0 and continued fractions beyond (erfcx, expn, fresnel, sici, the
latter two on complex arguments carried as pairs of real arrays); Rybicki's exponential
sum for Dawson's integral; Gauss-Legendre quadrature of Owen's integral; Euler-Maclaurin
summation for the Hurwitz zeta function; Miller's backward recurrence (on ratios, so
nothing overflows) and Hankel's expansion for Bessel functions of integer order; the
Bernoulli series of the dilogarithm in -log(1 - z); Kummer's transformation and the
three-term recurrence in b for 1F1, Pfaff's, Euler's and the 1 - x transformations (with
the logarithmic forms of Abramowitz & Stegun 15.3.10-11 when c - a - b is an integer) for
2F1; products for integer counts and Stirling's series for ratios of gamma functions with
large arguments (comb, poch), where a difference of gammaln values would cancel.
Derivatives come from custom_jvp rules with the closed-form derivative where one exists
(erfcx, dawsn, fresnel, sici, spence, expn in x, owens_t, comb, poch); the others
differentiate as compositions.

Not provided yet: wofz and sph_harm_y (complex-valued functions).
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction

from . import _core
from ._numpy_extra import _reject_complex
from ._custom import custom_jvp
from ._package import qb as _qb
from ._special import _sinpi_cospi, digamma, gammaln


__all__ = ["bernoulli", "bessel_jn", "boxcox", "boxcox1p", "comb", "dawsn", "erfcx", "expn", "fresnel",
           "gammasgn", "hyp1f1", "hyp2f1", "loggamma", "owens_t", "poch", "sici", "spence", "zeta"]

_F32, _F64 = _core.float32, _core.float64
_EULER = 0.57721566490153286061
_SQRT_PI = math.sqrt(math.pi)
_NAN, _INF = math.nan, math.inf


def _closed_form_derivative(parts, outputs: int):
    """A function of one argument whose `outputs` values and their derivatives come from
    parts(x) -> (values..., derivatives...), through custom_jvp (so derivatives use the
    closed form rather than differentiating the series and branches)."""
    @custom_jvp
    def f(x):
        r = parts(x)
        return r[0] if outputs == 1 else tuple(r[:outputs])

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        r = parts(x)
        if outputs == 1:
            return r[0], r[1] * t
        return tuple(r[:outputs]), tuple(d * t for d in r[outputs:])
    return f


# ---- helpers ---------------------------------------------------------------------------------

def _default_float():
    return _qb.default_dtype()


def _promote(*xs, upcast: bool = True):
    """The arguments as float arrays broadcast together, and the result dtype: float32 when
    every float array among them is float32 (Python scalars are weak, integer arrays take the
    float dtype of the others), else float64; the default float dtype when none is a float.
    With upcast, the arrays are returned in float64 for the computation."""
    arrs, floats = [], []
    for x in xs:
        weak = isinstance(x, (int, float)) and not isinstance(x, bool)
        a = _qb.asarray(x)
        _reject_complex(a)  # (functions of real arguments only: never a dropped imaginary part)
        arrs.append(a)
        if not weak and a.dtype in (_F32, _F64):
            floats.append(a.dtype)
    if floats:
        out = _F32 if all(d == _F32 for d in floats) else _F64
    else:
        out = _default_float()
    work = _F64 if upcast else out
    shape = tuple(_qb.broadcast_shapes(*(tuple(a.shape) for a in arrs)))
    return [_qb.broadcast_to(a.astype(work), shape) for a in arrs], out


def _is_int(x):
    return _qb.floor(x) == x


def _nonpos_int(x):
    return (x <= 0) & (_qb.floor(x) == x)


def _two_square(x):
    """x * x = hi + lo exactly (Dekker's splitting; |x| < 1e150)."""
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    hi = x * x
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    return hi, lo


def _exp_neg_square(x):
    """exp(-x^2) without the rounding of x^2 (|x| < 1e150)."""
    hi, lo = _two_square(x)
    return _qb.exp(-hi) * (1.0 - lo)


def _bernoulli_table(kmax: int):
    """(B_2, B_4, ..., B_2kmax) as exact Fractions, from the tangent numbers (Brent and Harvey's
    integer recurrence): B_2k = (-1)^(k-1) 2k T_k / (4^k (4^k - 1))."""
    t = [0] * (kmax + 1)
    if kmax >= 1:
        t[1] = 1
    for k in range(2, kmax + 1):
        t[k] = (k - 1) * t[k - 1]
    for k in range(2, kmax + 1):
        for j in range(k, kmax + 1):
            t[j] = (j - k) * t[j - 1] + (j - k + 2) * t[j]
    return [Fraction((-1) ** (k - 1) * 2 * k * t[k], 4 ** k * (4 ** k - 1)) for k in range(1, kmax + 1)]


_B2K = _bernoulli_table(24)  # _B2K[k - 1] = B_2k

# Stirling's series: log Gamma(z) = (z - 1/2) log z - z + log(2 pi) / 2 + R(z), R(z) = sum_j
# B_2j / (2j (2j - 1) z^(2j - 1)); eight terms leave under 1e-17 for z >= 10.
_STIRLING = [float(_B2K[j - 1] / (2 * j * (2 * j - 1))) for j in range(1, 9)]


def _stirling_r(z):
    inv2 = 1.0 / (z * z)
    acc = _qb.zeros_like(z)
    for c in reversed(_STIRLING):
        acc = acc * inv2 + c
    return acc / z


def _lgamma_ratio_big(s, d):
    """log Gamma(s + d) - log Gamma(s) for s >= 10, d >= 0, with the leading terms of
    Stirling's series combined so that nothing cancels."""
    t = s + d
    return (s - 0.5) * _qb.log1p(d / s) + d * _qb.log(t) - d + (_stirling_r(t) - _stirling_r(s))


# ---- elementary ------------------------------------------------------------------------------

def gammasgn(x):
    """The sign of Gamma(x): 1 for x > 0 and +0, -1 for -0 and on (-1, 0), (-3, -2), ...;
    NaN at the negative integers (where the sign depends on the side), at -inf and NaN."""
    (x,), out = _promote(x, upcast=False)
    x = x.astype(out)
    fl = _qb.floor(x)
    odd = _qb.fmod(fl, 2.0) != 0
    sign = _qb.where((x < 0) & odd, -1.0, 1.0).astype(out)
    sign = _qb.where(x == 0, _qb.where(_qb.signbit(x), -1.0, 1.0).astype(out), sign)
    return _qb.where(((x < 0) & (fl == x)) | _qb.isnan(x), _NAN, sign).astype(out)


def loggamma(x):
    """The principal branch of log Gamma for real x: gammaln(x) for x > 0 (its accuracy: about
    2e-15 absolute, so 1.7e-14 relative near the minimum at 1.46), inf at +-0 and +inf (as
    SciPy; JAX gives NaN at 0), NaN for x < 0 (the value is complex there) and NaN."""
    (x,), out = _promote(x)
    pos = x > 0
    value = gammaln(_qb.where(pos, x, 1.0))
    value = _qb.where(pos, value, _NAN)
    return _qb.where(x == 0, _INF, value).astype(out)


def _boxcox_from_log(lg, lmbda):
    t = lmbda * lg
    small = (_qb.abs(t) < 1e-3) & _qb.isfinite(lg)
    ts = _qb.where(small, t, 0.0)
    ls = _qb.where(small, lg, 0.0)
    # expm1(t) / lmbda = lg (1 + t/2 + t^2/6 + t^3/24 + t^4/120 + t^5/720) near t = 0: the value
    # and its derivative in lmbda (lg^2 / 2 at 0) without the 0 / 0 of lmbda = 0.
    series = ls * (1.0 + ts * (0.5 + ts * (1.0 / 6 + ts * (1.0 / 24 + ts * (1.0 / 120 + ts / 720.0)))))
    lam = _qb.where(small, 1.0, lmbda)
    general = _qb.expm1(_qb.where(small, 0.0, t)) / lam
    out = _qb.where(small, series, general)
    return _qb.where((lmbda == 0) & ~_qb.isfinite(lg), lg, out)  # log(0) = -inf (and inf, NaN) at lmbda = 0


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda = 0 (as expm1(lmbda log x)
    / lmbda, and its Taylor series where |lmbda log x| < 1e-3: relative accuracy a few ulp);
    NaN for x < 0."""
    (x, lmbda), out = _promote(x, lmbda)
    return _boxcox_from_log(_qb.log(x), lmbda).astype(out)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda = 0; NaN for
    x < -1."""
    (x, lmbda), out = _promote(x, lmbda)
    return _boxcox_from_log(_qb.log1p(x), lmbda).astype(out)


# ---- Bernoulli numbers -----------------------------------------------------------------------

_BERNOULLI_CACHE: list = []  # float(B_2k) for k = 1, 2, ... up to the last finite one


def _even_bernoulli_floats(kmax: int):
    if len(_BERNOULLI_CACHE) < kmax and (not _BERNOULLI_CACHE or math.isfinite(_BERNOULLI_CACHE[-1])):
        table = _bernoulli_table(max(kmax, 16))
        _BERNOULLI_CACHE.clear()
        for frac in table:
            try:
                _BERNOULLI_CACHE.append(float(frac))
            except OverflowError:  # |B_2k| grows with k: every later one overflows too
                _BERNOULLI_CACHE.append(_INF if frac > 0 else -_INF)
                break
    vals = _BERNOULLI_CACHE[:kmax]
    for k in range(len(vals) + 1, kmax + 1):
        vals.append(_INF if k % 2 else -_INF)  # sign (-1)^(k - 1)
    return vals


def bernoulli(n):
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2) as an array of n + 1 floats, exactly
    rounded from the rational values (computed in integers from the tangent numbers); +-inf
    where |B_n| exceeds the float64 range (n >= 260). n must be a non-negative Python
    integer."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"bernoulli: n must be an integer, got {type(n).__name__} {n!r}")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative integer, got {n}")
    even = _even_bernoulli_floats(n // 2)
    vals = [1.0, -0.5][: n + 1]
    for m in range(2, n + 1):
        vals.append(even[m // 2 - 1] if m % 2 == 0 else 0.0)
    return _qb.asarray(vals, dtype=_default_float())


# ---- binomial coefficients and the Pochhammer symbol -------------------------------------------

_PRODUCT_TERMS = 64  # a product of up to 64 factors (error about k ulp) beats exp of Stirling's series


def _binom_value(k, m):
    """Gamma(k + m + 1) / (Gamma(k + 1) Gamma(m + 1)) for k >= 0 and m > -1 (symmetric in k and
    m): a product of k terms for an integer k <= 64, else Stirling's series for the log where
    the arguments are large, gammaln where they are small."""
    lo, hi = _qb.minimum(k, m), _qb.maximum(k, m)
    # an integer count of factors (lo, or k itself when lo = m is not an integer)
    use_lo = _is_int(lo) & (lo >= 0) & (lo <= _PRODUCT_TERMS)
    use_k = ~use_lo & _is_int(k) & (k <= _PRODUCT_TERMS)
    cnt = _qb.where(use_lo, lo, _qb.where(use_k, k, 0.0))
    other = _qb.where(use_lo, hi, m)
    prod = _qb.ones_like(k)
    for j in range(1, _PRODUCT_TERMS + 1):
        prod = prod * _qb.where(cnt >= j, (other + j) / j, 1.0)
    product = use_lo | use_k
    # log of the ratio with the leading terms combined (a = lo + 1, b = hi + 1, n1 = a + b - 1):
    # (a - 1/2) log(n1 / a) + (b - 1/2) log(n1 / b) - log(n1) / 2 + 1 - log(2 pi) / 2 + R(n1) - R(a) - R(b)
    both = lo >= 9.0
    a = _qb.where(both, lo, 9.0) + 1.0
    b = _qb.where(both, hi, 9.0) + 1.0
    n1 = a + b - 1.0
    sym = ((a - 0.5) * _qb.log1p((b - 1.0) / a) + (b - 0.5) * _qb.log1p((a - 1.0) / b) - 0.5 * _qb.log(n1)
           + 1.0 - 0.5 * math.log(2.0 * math.pi) + (_stirling_r(n1) - _stirling_r(a) - _stirling_r(b)))
    one_big = ~both & (hi >= 9.0)
    hb = _qb.where(one_big, hi, 9.0) + 1.0
    lb = _qb.where(one_big, lo, 0.5)
    ratio = _lgamma_ratio_big(hb, lb) - gammaln(lb + 1.0)
    ls, hs = _qb.where(both | one_big, 0.5, lo), _qb.where(both | one_big, 0.5, hi)
    small = gammaln(ls + hs + 1.0) - gammaln(ls + 1.0) - gammaln(hs + 1.0)
    log_value = _qb.where(both, sym, _qb.where(one_big, ratio, small))
    return _qb.where(product, prod, _qb.exp(log_value))


@custom_jvp
def _binom(k, m):
    return _binom_value(k, m)


@_binom.defjvp
def _binom_jvp(primals, tangents):
    (k, m), (tk, tm) = primals, tangents
    value = _binom(k, m)
    psi_n = digamma(k + m + 1.0)
    return value, value * ((psi_n - digamma(k + 1.0)) * tk + (psi_n - digamma(m + 1.0)) * tm)


def comb(N, k, *, repetition: bool = False):
    """The binomial coefficient N choose k = Gamma(N + 1) / (Gamma(k + 1) Gamma(N - k + 1)) as
    a float, for real N and k (scipy.special.comb with exact=False; exact is not supported, as
    in JAX). 0 where N < 0, k < 0 or k > N (and for NaN). With repetition, the number of
    multisets, Gamma(N + k) / (Gamma(N) Gamma(k + 1)) (1 at k = 0; 0 where N < 0 or k < 0, as
    JAX, and at N = 0 < k). Relative accuracy: k ulp for an integer min(k, N - k) <= 64 (a
    product); elsewhere about 2e-16 |log comb| (the exponential of Stirling's series)."""
    if not isinstance(repetition, bool):
        raise TypeError(f"comb: repetition must be a bool, got {repetition!r}")
    (N, k), out = _promote(N, k)
    if repetition:
        valid = (N > 0) & (k > 0)
        m = _qb.where(valid, N - 1.0, 0.0)
        ks = _qb.where(valid, k, 0.0)
        value = _qb.where(valid, _binom(ks, m), 0.0)
        value = _qb.where((k == 0) & (N >= 0), 1.0, value)
        value = _qb.where(valid & (N == _INF), _INF, value)
        return value.astype(out)
    valid = (N >= 0) & (k >= 0) & (k <= N) & _qb.isfinite(N)
    ks = _qb.where(valid, k, 0.0)
    m = _qb.where(valid, N - k, 0.0)
    value = _qb.where(valid, _binom(ks, m), 0.0)
    value = _qb.where((N == _INF) & (k >= 0) & _qb.isfinite(k), _qb.where(k == 0, 1.0, _INF), value)
    return value.astype(out)


def _poch_value(z, m):
    """(z)_m = Gamma(z + m) / Gamma(z) off the poles of both."""
    zm = z + m
    # a product of |m| factors for an integer |m| <= 64
    prod_ok = _is_int(m) & (_qb.abs(m) <= _PRODUCT_TERMS)
    up = prod_ok & (m > 0)
    down = prod_ok & (m < 0)
    num, den = _qb.ones_like(z), _qb.ones_like(z)
    for j in range(_PRODUCT_TERMS):
        num = num * _qb.where(up & (m > j), z + j, 1.0)
        den = den * _qb.where(down & (-m > j), z - (j + 1.0), 1.0)
    product = num / den
    # Stirling's series when both arguments are >= 10
    lo = _qb.minimum(z, zm)
    big = ~prod_ok & (lo >= 10.0)
    s = _qb.where(big, lo, 10.0)
    d = _qb.where(big, _qb.abs(m), 1.0)
    ratio = _lgamma_ratio_big(s, d)
    ratio = _qb.where(m < 0, -ratio, ratio)
    general = ~prod_ok & ~big
    zs = _qb.where(general, z, 1.5)
    zms = _qb.where(general, zm, 2.5)
    sgn = gammasgn(zs) * gammasgn(zms)
    plain = sgn * _qb.exp(gammaln(zms) - gammaln(zs))
    return _qb.where(prod_ok, product, _qb.where(big, _qb.exp(ratio), plain))


@custom_jvp
def _poch(z, m):
    return _poch_value(z, m)


@_poch.defjvp
def _poch_jvp(primals, tangents):
    (z, m), (tz, tm) = primals, tangents
    value = _poch(z, m)
    psi_zm = digamma(z + m)
    return value, value * ((psi_zm - digamma(z)) * tz + psi_zm * tm)


def poch(z, m):
    """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z) for real z and m, as SciPy: 1 at
    m = 0; at a pole z = -n, (-1)^m n! / (n - m)! when z + m is a non-positive integer too, else
    0; inf where only z + m is a pole. Relative accuracy: |m| ulp for an integer |m| <= 64 (a
    product), about 2e-16 |log poch| elsewhere for z, z + m >= 10 (Stirling's series) and
    about 2e-16 (|gammaln(z)| + |gammaln(z + m)|) otherwise. Derivatives poch (psi(z + m) -
    psi(z)) and poch psi(z + m)."""
    (z, m), out = _promote(z, m)
    zm = z + m
    z_pole, zm_pole = _nonpos_int(z), _nonpos_int(zm)
    regular = ~z_pole & ~zm_pole & _qb.isfinite(z) & _qb.isfinite(m)
    value = _poch(_qb.where(regular, z, 1.0), _qb.where(regular, m, 1.0))
    # both poles: the ratio of residues, (-1)^m Gamma(1 - z) / Gamma(1 - z - m)
    both = z_pole & zm_pole
    zr, mr = _qb.where(both, 1.0 - zm, 1.0), _qb.where(both, m, 1.0)
    limit = _poch(zr, mr) * _qb.where(_qb.fmod(m, 2.0) != 0, -1.0, 1.0)
    value = _qb.where(regular, value, _qb.where(both, limit, _qb.where(z_pole, 0.0, _INF)))
    # infinities: z = +inf gives inf, 1 or 0 by the sign of m; m = +inf, inf with Gamma(z)'s sign
    value = _qb.where(z == _INF, _qb.where(m > 0, _INF, _qb.where(m < 0, 0.0, 1.0)), value)
    value = _qb.where((m == _INF) & _qb.isfinite(z), _qb.where(z_pole, 0.0, gammasgn(_qb.where(z_pole, 1.0, z)) * _INF),
                      value)
    value = _qb.where((m == -_INF) | (z == -_INF) | _qb.isnan(z) | _qb.isnan(m), _NAN, value)
    return _qb.where(m == 0, 1.0, value).astype(out)


# ---- erfcx and Dawson's integral -------------------------------------------------------------

_ERFCX_DEPTH = 80  # the continued fraction for x >= 2 (converged to 1e-16 by 50)


def _erfcx_positive(ax):
    """(erfcx(ax), d/dax) for ax >= 0: exp(ax^2) erfc(ax) below 2; Laplace's continued fraction
    erfcx(x) = 1 / (sqrt(pi) T0), T_k = x + ((k + 1) / 2) / T_(k + 1), above, where the
    derivative 2 x erfcx - 2 / sqrt(pi) = -1 / (sqrt(pi) T0 T1) needs no cancellation."""
    big = ax >= 2.0
    xs = _qb.where(big, 0.0, ax)
    small = _qb.exp(xs * xs) * _qb.erfc(xs)
    dsmall = 2.0 * xs * small - 2.0 / _SQRT_PI
    xb = _qb.where(big, ax, 2.0)
    t = xb
    t1 = xb
    for k in range(_ERFCX_DEPTH, 0, -1):
        t1 = t
        t = xb + (0.5 * k) / t
    return _qb.where(big, 1.0 / (_SQRT_PI * t), small), _qb.where(big, -1.0 / (_SQRT_PI * t * t1), dsmall)


def _erfcx_parts(x):
    ax = _qb.abs(x)
    value, deriv = _erfcx_positive(ax)
    neg = x < 0
    xn = _qb.where(neg, _qb.maximum(x, -30.0), 0.0)
    hi, lo = _two_square(xn)
    twice = 2.0 * _qb.exp(hi) * (1.0 + lo)
    negative = twice - value
    value = _qb.where(neg, negative, value)
    deriv = _qb.where(neg, 2.0 * x * negative - 2.0 / _SQRT_PI, deriv)
    return _qb.where(_qb.isnan(x), x, value), deriv


_erfcx = _closed_form_derivative(_erfcx_parts, 1)


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x), for every real x (inf below
    about -26.6 where it overflows). Relative accuracy about 1e-15 (x >= 0: the product below 2
    and a continued fraction above; x < 0: 2 exp(x^2) - erfcx(-x) with x^2 split exactly).
    Derivative 2 x erfcx(x) - 2 / sqrt(pi)."""
    (x,), out = _promote(x)
    return _erfcx(x).astype(out)


_DAWSON_H = 0.2
_DAWSON_PAIRS = 18
_DAWSON_ASYMPTOTIC = 10.0


def _dawson_parts(x):
    """(F(x), F'(x)) for Dawson's integral: the Taylor series F = sum (-2)^k x^(2k+1) / (2k+1)!!
    for |x| <= 1; Rybicki's sum F(x) ~ pi^-1/2 sum over odd n of exp(-(x - n h)^2) / n (h = 0.2,
    error exp(-(pi / 2h)^2)) up to 10; the asymptotic series 1/(2x) sum (2k-1)!! / (2x^2)^k
    beyond, where F' = 1 - 2 x F is the series' tail (no cancellation)."""
    ax = _qb.abs(x)
    sign = _qb.where(x < 0, -1.0, 1.0)
    # Taylor
    near = ax <= 1.0
    xs = _qb.where(near, ax, 0.5)
    q = -2.0 * xs * xs
    term, acc = xs, xs
    for k in range(1, 26):
        term = term * q / (2 * k + 1)
        acc = acc + term
    # Rybicki: n = n0 + j with n0 the even integer nearest x / h and j odd
    mid = ~near & (ax <= _DAWSON_ASYMPTOTIC)
    xm = _qb.where(mid, ax, 2.0)
    n0 = 2.0 * _qb.round(xm / (2.0 * _DAWSON_H))
    xp = xm - n0 * _DAWSON_H
    total = _qb.zeros_like(xm)
    for i in range(_DAWSON_PAIRS):
        j = 2 * i + 1
        e = _qb.exp((2.0 * j * _DAWSON_H) * xp)
        total = total + math.exp(-(j * _DAWSON_H) ** 2) * (e / (n0 + j) + 1.0 / (e * (n0 - j)))
    rybicki = _qb.exp(-xp * xp) * total / _SQRT_PI
    # asymptotic
    far = ax > _DAWSON_ASYMPTOTIC
    xf = _qb.where(far, ax, 2.0 * _DAWSON_ASYMPTOTIC)
    u = 0.5 / (xf * xf)
    term = _qb.ones_like(xf)
    tail = _qb.zeros_like(xf)
    for k in range(1, 40):
        term = term * (2 * k - 1) * u
        tail = tail + term
    asym = (1.0 + tail) / (2.0 * xf)
    value = _qb.where(near, acc, _qb.where(mid, rybicki, asym))
    value = _qb.where(ax == _INF, 0.0, value) * sign
    deriv = _qb.where(far, -tail, 1.0 - 2.0 * x * value)
    return _qb.where(_qb.isnan(x), x, value), deriv


_dawsn = _closed_form_derivative(_dawson_parts, 1)


def dawsn(x):
    """Dawson's integral F(x) = exp(-x^2) integral_0^x exp(t^2) dt (odd; 0 at +-inf). Relative
    accuracy about 1e-15. Derivative 1 - 2 x F(x)."""
    (x,), out = _promote(x)
    return _dawsn(x).astype(out)


# ---- complex arithmetic on pairs -------------------------------------------------------------

def _cinv(re, im):
    d = re * re + im * im
    return re / d, -im / d


def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


# ---- Fresnel integrals -----------------------------------------------------------------------

_FRESNEL_DEPTH = 240
_FRESNEL_SERIES = 1.0


def _fresnel_phase(ax):
    """cos and sin of pi ax^2 / 2 with ax^2 reduced mod 4 exactly (ax < 1e150)."""
    hi, lo = _two_square(ax)
    r = _qb.fmod(hi, 4.0) + _qb.fmod(lo, 4.0)
    r = r - 4.0 * _qb.floor(r / 4.0)
    s, c = _sinpi_cospi(0.5 * r)
    return c, s


def _fresnel_parts(x):
    ax = _qb.abs(x)
    sign = _qb.where(x < 0, -1.0, 1.0)
    # power series: with p = pi x^2 / 2, C = x sum_k (-1)^k p^2k / ((2k)! (4k + 1)) and
    # S = x sum_k (-1)^k p^(2k+1) / ((2k+1)! (4k + 3))
    near = ax <= _FRESNEL_SERIES
    xs = _qb.where(near, ax, 0.5)
    p = 0.5 * math.pi * xs * xs
    e = _qb.ones_like(xs)
    c_acc, s_acc = _qb.zeros_like(xs), _qb.zeros_like(xs)
    for j in range(0, 36):
        if j:
            e = e * p / j
        term = e / (2 * j + 1) * (-1.0 if (j // 2) % 2 else 1.0)
        if j % 2 == 0:
            c_acc = c_acc + term
        else:
            s_acc = s_acc + term
    c_series, s_series = xs * c_acc, xs * s_acc
    # C + iS = (1 + i)/2 (1 - erfc(z)), z = sqrt(pi) (1 - i) x / 2, with erfc(z) = exp(-z^2) K(z) /
    # sqrt(pi), exp(-z^2) = exp(i pi x^2 / 2) and K = 1 / (z + (1/2) / (z + 1 / (z + (3/2) / ...)))
    xf = _qb.minimum(_qb.where(near, 2.0, ax), 1e100)
    qv = 0.5 * _SQRT_PI * xf
    tr, ti = qv, -qv
    for k in range(_FRESNEL_DEPTH, 0, -1):
        ir, ii = _cinv(tr, ti)
        tr, ti = qv + (0.5 * k) * ir, -qv + (0.5 * k) * ii
    kr, ki = _cinv(tr, ti)
    cph, sph = _fresnel_phase(xf)
    gr, gi = _cmul(cph, sph, kr, ki)
    gr, gi = gr / _SQRT_PI, gi / _SQRT_PI
    c_far = 0.5 * (1.0 - gr + gi)
    s_far = 0.5 * (1.0 - gr - gi)
    s_val = _qb.where(near, s_series, s_far)
    c_val = _qb.where(near, c_series, c_far)
    s_val = _qb.where(ax == _INF, 0.5, s_val) * sign
    c_val = _qb.where(ax == _INF, 0.5, c_val) * sign
    nan = _qb.isnan(x)
    # derivatives sin and cos of pi x^2 / 2
    cd, sd = _fresnel_phase(_qb.where(ax < 1e150, ax, 0.0))
    return _qb.where(nan, x, s_val), _qb.where(nan, x, c_val), sd, cd


_fresnel = _closed_form_derivative(_fresnel_parts, 2)


def fresnel(x):
    """The Fresnel integrals (S(x), C(x)) = integrals from 0 to x of (sin, cos)(pi t^2 / 2)
    (odd; +-1/2 at +-inf), in SciPy's order. Power series for |x| <= 1, the continued
    fraction of erfc on the ray arg z = -pi/4 beyond, with x^2 reduced exactly so large x
    keeps its phase. Absolute accuracy about 2e-16, relative about 1e-15. Derivatives
    sin(pi x^2 / 2) and cos(pi x^2 / 2)."""
    (x,), out = _promote(x)
    s, c = _fresnel(x)
    return s.astype(out), c.astype(out)


# ---- sine and cosine integrals ---------------------------------------------------------------

_SICI_DEPTH = 120
_SICI_SERIES = 2.0


def _sici_parts(x):
    ax = _qb.abs(x)
    sign = _qb.where(x < 0, -1.0, 1.0)
    near = ax <= _SICI_SERIES
    xs = _qb.where(near & (ax > 0), ax, 1.0)
    # Si = sum (-1)^k x^(2k+1) / ((2k+1) (2k+1)!), Ci = gamma + log x + sum_k>=1 (-1)^k x^2k / (2k (2k)!)
    u, v = xs, _qb.ones_like(xs)
    si_acc, ci_acc = xs, _qb.zeros_like(xs)
    for k in range(1, 22):
        v = -u * xs / (2 * k)  # (-1)^k x^2k / (2k)!
        u = v * xs / (2 * k + 1)  # (-1)^k x^(2k+1) / (2k+1)!
        ci_acc = ci_acc + v / (2 * k)
        si_acc = si_acc + u / (2 * k + 1)
    si_series = si_acc
    ci_series = _EULER + _qb.log(xs) + ci_acc
    # E1(i x) = exp(-i x) / (i x + 1 - 1 / (i x + 3 - 4 / (i x + 5 - ...))) = -Ci(x) + i (Si(x) - pi/2)
    xf = _qb.minimum(_qb.where(near, 4.0, ax), 1e100)
    tr, ti = _qb.full_like(xf, 2.0 * _SICI_DEPTH + 1.0), xf
    for k in range(_SICI_DEPTH, 0, -1):
        ir, ii = _cinv(tr, ti)
        tr, ti = (2.0 * k - 1.0) - (k * k) * ir, xf - (k * k) * ii
    hr, hi = _cinv(tr, ti)
    cx, sx = _qb.cos(xf), _qb.sin(xf)
    er, ei = _cmul(cx, -sx, hr, hi)
    ci_far = -er
    si_far = 0.5 * math.pi + ei
    huge = ax > 1e100
    xh = _qb.where(huge & (ax < _INF), ax, 1e101)
    ci_far = _qb.where(huge, _qb.sin(xh) / xh, ci_far)
    si_far = _qb.where(huge, 0.5 * math.pi - _qb.cos(xh) / xh, si_far)
    si = _qb.where(near, si_series, si_far)
    ci = _qb.where(near, ci_series, ci_far)
    si = _qb.where(ax == 0, 0.0, _qb.where(ax == _INF, 0.5 * math.pi, si)) * sign
    ci = _qb.where(ax == 0, -_INF, _qb.where(ax == _INF, 0.0, ci))
    ci = _qb.where((x == -_INF) | _qb.isnan(x), _NAN, ci)
    si = _qb.where(_qb.isnan(x), _NAN, si)
    xd = _qb.where(x == 0, 1.0, x)
    dsi = _qb.where(x == 0, 1.0, _qb.sin(xd) / xd)
    dci = _qb.cos(x) / x
    return si, ci, dsi, dci


_sici = _closed_form_derivative(_sici_parts, 2)


def sici(x):
    """The sine and cosine integrals (Si(x), Ci(x)), Si = integral_0^x sin t / t dt, Ci = gamma +
    log x + integral_0^x (cos t - 1) / t dt; for x < 0, Ci(|x|) (the real part, as SciPy),
    Ci(-inf) = NaN. Power series for |x| <= 2, the continued fraction of E1(i x) beyond.
    Absolute accuracy about 3e-16; relative 1e-15 away from the zeros of Ci. Derivatives
    sin x / x and cos x / x."""
    (x,), out = _promote(x)
    si, ci = _sici(x)
    return si.astype(out), ci.astype(out)


# ---- the generalized exponential integral ----------------------------------------------------

_EXPN_SERIES = 40
_EXPN_DEPTH = 128


def _expn_value(n, x):
    """E_n(x) for an integer n >= 0 (as float) and x > 0, finite."""
    small = x <= 1.0
    xs = _qb.where(small, x, 0.5)
    nm1 = n - 1.0
    # E_n(x) = (-x)^(n-1) / (n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)
    term = _qb.ones_like(xs)  # (-x)^k / k!
    acc = _qb.zeros_like(xs)
    special = _qb.zeros_like(xs)
    for k in range(_EXPN_SERIES):
        if k:
            term = term * (-xs) / k
        hit = nm1 == k
        denom = _qb.where(hit, 1.0, k - nm1)
        acc = acc - _qb.where(hit, 0.0, term / denom)
        special = _qb.where(hit, term, special)
    psi = digamma(_qb.where(n >= 1, n, 1.0))
    series = acc + special * (psi - _qb.log(xs))
    # the continued fraction E_n(x) = exp(-x) / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))
    xl = _qb.where(small, 2.0, x)
    t = xl + n + 2.0 * _EXPN_DEPTH
    for i in range(_EXPN_DEPTH, 0, -1):
        t = xl + n + 2.0 * (i - 1) - (i * (nm1 + i)) / t
    fraction = _qb.exp(-xl) / t
    zero = _qb.exp(-x) / x  # E_0
    return _qb.where(n == 0, zero, _qb.where(small, series, fraction))


@custom_jvp
def _expn_core(n, x):
    return _expn_value(n, x)


@_expn_core.defjvp
def _expn_core_jvp(primals, tangents):
    (n, x), (_, t) = primals, tangents
    value = _expn_core(n, x)
    lower = _expn_core(_qb.maximum(n - 1.0, 0.0), x)
    e_minus1 = _qb.exp(-x) * (x + 1.0) / (x * x)  # E_{-1}
    return value, -_qb.where(n == 0, e_minus1, lower) * t


def expn(n, x):
    """The generalized exponential integral E_n(x) = integral_1^inf exp(-x t) / t^n dt for
    integer n >= 0 and x >= 0: 1 / (n - 1) at x = 0 for n >= 2, inf for n <= 1; 0 at inf; NaN for
    a negative or non-integer n (SciPy truncates n; JAX gives NaN) and for x < 0. The series
    for x <= 1, the continued fraction beyond. Relative accuracy about 1e-15. Derivative in x:
    -E_(n-1)(x)."""
    (n, x), out = _promote(n, x)
    valid = (n >= 0) & _is_int(n) & (x >= 0) & _qb.isfinite(n)
    inner = valid & (x > 0) & (x < _INF)
    ns = _qb.where(inner, n, 1.0)
    xs = _qb.where(inner, x, 1.0)
    value = _qb.where(inner, _expn_core(ns, xs), 0.0)
    at_zero = _qb.where(n >= 2, 1.0 / _qb.where(n >= 2, n - 1.0, 1.0), _INF)
    value = _qb.where(x == 0, at_zero, value)
    value = _qb.where(valid, value, _NAN)
    return value.astype(out)


# ---- the dilogarithm --------------------------------------------------------------------------

_LI2_COEFFS = [float(_B2K[k - 1] / math.factorial(2 * k + 1)) for k in range(1, 16)]


def _li2_of_u(u):
    """Li2(w) from u = -log(1 - w) (|u| <= log 2): sum_n B_n u^(n+1) / (n+1)!."""
    u2 = u * u
    acc = _qb.zeros_like(u)
    for c in reversed(_LI2_COEFFS):
        acc = (acc + c) * u2
    return u - 0.25 * u2 + u * acc


def _spence_value(x):
    mid = (x >= 0.5) & (x <= 2.0)
    xm = _qb.where(mid, x, 1.0)
    v_mid = _li2_of_u(-_qb.log(xm))  # Li2(1 - x)
    high = x > 2.0
    xh = _qb.where(high, x, 4.0)
    lh = _qb.log(xh - 1.0)
    v_high = -math.pi ** 2 / 6.0 - 0.5 * lh * lh - _li2_of_u(_qb.log1p(-1.0 / xh))
    low = x < 0.5
    xl = _qb.where(low & (x > 0), x, 0.25)
    v_low = math.pi ** 2 / 6.0 - _qb.log(xl) * _qb.log1p(-xl) - _li2_of_u(-_qb.log1p(-xl))
    value = _qb.where(mid, v_mid, _qb.where(high, v_high, v_low))
    return _qb.where(x == 0, math.pi ** 2 / 6.0, value)


@custom_jvp
def _spence(x):
    return _spence_value(x)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d = x - 1.0
    near = _qb.abs(d) < 0.5
    dn = _qb.where(near & (d != 0), d, 1.0)
    xs = _qb.where(near, 2.0, x)
    slope = _qb.where(near, _qb.where(d == 0, -1.0, -_qb.log1p(dn) / dn), _qb.log(xs) / (1.0 - xs))
    return _spence(x), slope * t


def spence(x):
    """Spence's function integral_1^x log t / (1 - t) dt = Li2(1 - x) for x >= 0 (pi^2/6 at 0); NaN
    for x < 0 and at inf (as JAX and SciPy). The Bernoulli series of Li2 in -log(1 - z) after
    the reflection (x < 1/2) and inversion (x > 2) formulas. Relative accuracy about 1e-15.
    Derivative log(x) / (1 - x)."""
    (x,), out = _promote(x)
    valid = (x >= 0) & (x < _INF)
    value = _spence(_qb.where(valid, x, 1.0))
    return _qb.where(valid, value, _NAN).astype(out)


# ---- the Hurwitz zeta function ---------------------------------------------------------------

_ZETA_TERMS = 10
_ZETA_BERNOULLI = [float(_B2K[j - 1] / math.factorial(2 * j)) for j in range(1, 13)]


def _hurwitz_value(x, q):
    """zeta(x, q) for x > 1 and q > 0 (finite): Euler-Maclaurin summation after ten terms."""
    acc = _qb.zeros_like(x)
    for k in range(_ZETA_TERMS):
        acc = acc + _qb.power(q + k, -x)  # (a correctly rounded power: exp(-x log q) would lose x log q ulp)
    y = q + _ZETA_TERMS
    ypow = _qb.power(y, -x)
    tail = ypow * y / (x - 1.0) + 0.5 * ypow
    rising = x  # x (x + 1) ... (x + 2j - 2)
    inv = ypow / y  # y^(-x - 2j + 1)
    for j, c in enumerate(_ZETA_BERNOULLI, start=1):
        tail = tail + c * rising * inv
        rising = rising * (x + 2 * j - 1) * (x + 2 * j)
        inv = inv / (y * y)
    return acc + tail


def _riemann_zeta(x):
    """zeta(x) for every real x: the Euler-Maclaurin sum at q = 1 for x >= 0 (it continues
    analytically below 1); for x < 0 the functional equation zeta(x) = 2^x pi^(x-1) sin(pi x / 2)
    Gamma(1 - x) zeta(1 - x)."""
    direct_ok = (x >= 0) & (x != 1) & (x < _INF)
    xd = _qb.where(direct_ok, x, 2.0)
    direct = _hurwitz_value(xd, _qb.ones_like(xd))
    neg = (x < 0) & (x > -_INF)
    xn = _qb.where(neg, x, -1.0)
    s = 1.0 - xn
    sin_half, _ = _sinpi_cospi(0.5 * xn)
    log_mag = xn * math.log(2.0) + (xn - 1.0) * math.log(math.pi) + gammaln(s)
    reflected = _qb.where(sin_half == 0, 0.0, sin_half * _qb.exp(log_mag) * _hurwitz_value(s, _qb.ones_like(s)))
    out = _qb.where(neg, reflected, direct)
    out = _qb.where(x == 1, _INF, out)
    out = _qb.where(x == 0, -0.5, out)
    out = _qb.where(x == _INF, 1.0, out)
    return _qb.where((x == -_INF) | _qb.isnan(x), _NAN, out)


def zeta(x, q=None):
    """The Hurwitz zeta function zeta(x, q) = sum_k>=0 (q + k)^-x for x > 1 (inf at x = 1 and at
    the poles q = 0, -1, -2, ...; NaN for x < 1, for other q < 0 (as JAX) and NaN; 0 at q = inf;
    at x = inf: inf for q < 1, 1 at q = 1, 0 above). Euler-Maclaurin summation (ten terms,
    twelve Bernoulli corrections): relative accuracy about 1e-15. With q=None, the Riemann
    zeta function for every real x (JAX raises there): the same sum for x >= 0 (it continues
    analytically below 1), the functional equation below 0 (relative accuracy about
    |gammaln(1 - x)| ulp there, 6e-14 at x = -50; exact zeros at the negative even integers).
    Differentiable in both arguments (d/dq = -x zeta(x + 1, q))."""
    if q is None:
        (x,), out = _promote(x)
        return _riemann_zeta(x).astype(out)
    (x, q), out = _promote(x, q)
    valid = (x > 1) & (q > 0) & (x < _INF) & (q < _INF)
    xs, qs = _qb.where(valid, x, 2.0), _qb.where(valid, q, 1.0)
    value = _qb.where(valid, _hurwitz_value(xs, qs), _NAN)
    value = _qb.where((x > 1) & (q == _INF), 0.0, value)
    value = _qb.where((x >= 1) & _nonpos_int(q), _INF, value)
    value = _qb.where((x == 1) & (q > 0), _INF, value)
    at_inf = _qb.where(q < 1, _INF, _qb.where(q == 1, 1.0, 0.0))
    value = _qb.where((x == _INF) & (q > 0), at_inf, value)
    value = _qb.where(_qb.isnan(x) | _qb.isnan(q), _NAN, value)
    return value.astype(out)


# ---- Owen's T function ------------------------------------------------------------------------

_OWENS_NODES = 24
_GL_CACHE: dict = {}


def _gauss_legendre(n: int):
    if n not in _GL_CACHE:
        import numpy as np
        x, w = np.polynomial.legendre.leggauss(n)
        _GL_CACHE[n] = ([float(v) for v in x], [float(v) for v in w])
    return _GL_CACHE[n]


def _owens_small_a(h, a):
    """T(h, a) for h >= 0 and 0 <= a <= 1: exp(-h^2/2) / (2 pi) integral_0^b exp(-h^2 x^2 / 2) / (1 + x^2) dx,
    b = min(a, 9 / h) (the rest is below 1e-17 of it), by 24-point Gauss-Legendre quadrature."""
    b = _qb.where(h * a > 9.0, 9.0 / _qb.where(h > 0, h, 1.0), a)
    nodes, weights = _gauss_legendre(_OWENS_NODES)
    hh = -0.5 * h * h
    total = _qb.zeros_like(h)
    for t, w in zip(nodes, weights):
        xk = 0.5 * b * (t + 1.0)
        total = total + w * _qb.exp(hh * xk * xk) / (1.0 + xk * xk)
    return _exp_neg_square(h * math.sqrt(0.5)) * (0.5 * b) * total / (2.0 * math.pi)


def _upper_normal(h):
    return 0.5 * _qb.erfc(h * math.sqrt(0.5))


def _owens_value(h, a):
    """T(h, a) for finite h and a."""
    ah, aa = _qb.abs(h), _qb.abs(a)
    small = aa <= 1.0
    a1 = _qb.where(small, aa, 1.0)
    direct = _owens_small_a(ah, a1)
    # a > 1: T(h, a) = (Q(h) + Q(a h)) / 2 - Q(h) Q(a h) - T(a h, 1 / a), Q the upper normal tail
    al = _qb.where(small, 2.0, aa)
    k = al * ah
    q1, q2 = _upper_normal(ah), _upper_normal(k)
    flipped = 0.5 * q1 * (1.0 - 2.0 * q2) + 0.5 * q2 - _owens_small_a(k, 1.0 / al)
    value = _qb.where(small, direct, flipped)
    return _qb.where(a < 0, -value, value)


@custom_jvp
def _owens(h, a):
    return _owens_value(h, a)


@_owens.defjvp
def _owens_jvp(primals, tangents):
    (h, a), (th, ta) = primals, tangents
    dh = -0.5 * _qb.exp(-0.5 * h * h) / math.sqrt(2.0 * math.pi) * _qb.erf(a * h * math.sqrt(0.5))
    da = _qb.exp(-0.5 * h * h * (1.0 + a * a)) / (2.0 * math.pi * (1.0 + a * a))
    return _owens(h, a), dh * th + da * ta


def owens_t(h, a):
    """Owen's T function T(h, a) = 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx
    (even in h, odd in a; T(h, +-inf) = +-erfc(|h| / sqrt 2) / 4, 0 at h = +-inf). Gauss-Legendre
    quadrature on the part of [0, min(|a|, 1)] the integrand lives on, and T(h, a) =
    (Q(h) + Q(ah)) / 2 - Q(h) Q(ah) - T(ah, 1/a) for |a| > 1. Relative accuracy about 1e-14
    (SciPy's own is about 1e-13 in the far tail, where its erfc loses digits). Derivatives
    -exp(-h^2/2) erf(a h / sqrt 2) / (2 sqrt(2 pi)) and exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))."""
    (h, a), out = _promote(h, a)
    finite = _qb.isfinite(h) & _qb.isfinite(a)
    value = _owens(_qb.where(finite, h, 0.0), _qb.where(finite, a, 0.0))
    a_inf = _qb.isinf(a) & _qb.isfinite(h)
    hs = _qb.where(a_inf, _qb.abs(h), 0.0)
    value = _qb.where(a_inf, _qb.where(a > 0, 0.5, -0.5) * _upper_normal(hs), value)
    value = _qb.where(_qb.isinf(h) & ~_qb.isnan(a), 0.0, value)
    value = _qb.where(_qb.isnan(h) | _qb.isnan(a), _NAN, value)
    return value.astype(out)


# ---- Bessel functions of the first kind, integer order -----------------------------------------

_HANKEL_TERMS = 30


def _miller_start(zs: float) -> int:
    """A start order N for the backward recurrence that is exact to rounding for |z| <= zs: the
    ratio J_N / Y_N ~ (e z / 2N)^2N below 1e-20, plus a margin."""
    n = int(zs) + 2
    while 2 * n * math.log(math.e * zs / (2 * n)) > -46.0:
        n += 1
    return n + 10


def _hankel_01(x):
    """J0 and J1 for x >= 25 from Hankel's asymptotic expansion, the phases written with
    sin x and cos x so that no multiple of pi is subtracted from a large x."""
    s, c = _qb.sin(x), _qb.cos(x)
    out = []
    for nu in (0, 1):
        mu = 4.0 * nu * nu
        p, qq = _qb.ones_like(x), _qb.zeros_like(x)
        term = _qb.ones_like(x)
        for k in range(1, 2 * _HANKEL_TERMS):
            term = term * ((mu - (2 * k - 1) ** 2) / (8.0 * k)) / x
            if k % 2:
                qq = qq + (term if (k // 2) % 2 == 0 else -term)
            else:
                p = p + (term if (k // 2) % 2 == 0 else -term)
        if nu == 0:
            cos_chi, sin_chi = (c + s) * math.sqrt(0.5), (s - c) * math.sqrt(0.5)
        else:
            cos_chi, sin_chi = (s - c) * math.sqrt(0.5), -(s + c) * math.sqrt(0.5)
        out.append(_qb.sqrt(2.0 / (math.pi * x)) * (p * cos_chi - qq * sin_chi))
    return out


def bessel_jn(z, *, v, n_iter: int = 50):
    """The Bessel functions of the first kind J_0(z) .. J_v(z) for real z, stacked into an array of
    shape (v + 1, *z.shape) in z's float dtype, as jax.scipy.special.bessel_jn (v a non-negative
    int; J at z = 0 is 1, 0, 0, ...; NaN at +-inf and NaN, as SciPy's jv). For |z| <= max(25, 2v),
    Miller's backward recurrence on the ratios J_n / J_(n-1) from a start order fixed by v,
    normalised by J_0 + 2 sum J_2k = 1; beyond, J_0 and J_1 from Hankel's expansion and the
    forward recurrence (stable for n < |z|). Absolute accuracy about 1e-15 for small v (about
    1e-14 at v = 60); relative accuracy where J_n is small (n > |z|). n_iter is accepted for
    compatibility: the recurrence runs at least that many steps above v."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"bessel_jn: v must be an int, got {type(v).__name__} {v!r}")
    v = operator.index(v)
    if v < 0:
        raise ValueError(f"bessel_jn: v must be non-negative, got {v}")
    if isinstance(n_iter, bool) or not hasattr(n_iter, "__index__") or operator.index(n_iter) < 0:
        raise TypeError(f"bessel_jn: n_iter must be a non-negative int, got {n_iter!r}")
    (z,), out = _promote(z)
    zs = max(25.0, 2.0 * v)
    start = max(_miller_start(zs), v + operator.index(n_iter))
    az = _qb.abs(z)
    near = az <= zs
    zn = _qb.where(near, z, 0.0)
    # ratios r_n = J_n / J_(n-1) = z / (2n - z r_(n+1)); A_n = 1 + r_n r_(n+1) A_(n+2) (odd n) gives
    # sum_k J_2k / J_0 = A_1
    r_next = _qb.zeros_like(zn)
    acc = _qb.ones_like(zn)

    def step(n_float, r_next, acc, odd):
        r = zn / (2.0 * n_float - zn * r_next)
        if isinstance(odd, bool):
            return r, (1.0 + r * r_next * acc) if odd else acc
        return r, _qb.where(odd, 1.0 + r * r_next * acc, acc)

    def body(i, carry):
        r_next, acc = carry
        n = (start - i).astype(_F64)
        r, acc = step(n, r_next, acc, _qb.fmod(n, 2.0) == 1.0)
        return r, acc

    top = start - v  # steps n = start .. v + 1
    r_next, acc = _qb.fori_loop(0, top, body, (r_next, acc))
    ratios = {}
    for n in range(v, 0, -1):
        r_next, acc = step(float(n), r_next, acc, n % 2 == 1)
        ratios[n] = r_next
    j0 = 1.0 / (2.0 * acc - 1.0)
    miller = [j0]
    for n in range(1, v + 1):
        miller.append(miller[-1] * ratios[n])
    # large |z|
    zf = _qb.where(near, 2.0 * zs, az)
    zf = _qb.where(_qb.isfinite(zf), zf, 2.0 * zs)
    h0, h1 = _hankel_01(zf)
    far = [h0, h1]
    for n in range(1, v):
        far.append((2.0 * n / zf) * far[-1] - far[-2])
    flip = z < 0
    rows = []
    bad = ~_qb.isfinite(z)
    for n in range(v + 1):
        f = far[n]
        if n % 2:
            f = _qb.where(flip, -f, f)
        row = _qb.where(near, miller[n], f)
        rows.append(_qb.where(bad, _NAN, row))
    return _qb.stack(rows, axis=0).astype(out)


# ---- Kummer's confluent hypergeometric function 1F1 ---------------------------------------------

_KUMMER_TERMS = 1200
_KUMMER_SWITCH = 700.0
_KUMMER_ASYMPTOTIC = 60
_KUMMER_SHIFT = 64  # the recurrence in b covers a - b (x < 0) or -a (x > 0) up to 63


def _kummer_series(a, b, y, scale):
    """sum_k (a)_k / (b)_k y^k / k! for y >= 0, times exp(-y) if scale (each term scaled, so
    nothing overflows); returns the sum and the largest term's magnitude."""
    t0 = _qb.exp(-y) if scale else _qb.ones_like(y)

    def body(i, carry):
        term, total, peak = carry
        k = i.astype(_F64)
        term = term * (a + k) / (b + k) * y / (k + 1.0)
        return term, total + term, _qb.maximum(peak, _qb.abs(term))
    _, total, peak = _qb.fori_loop(0, _KUMMER_TERMS, body, (t0, t0, _qb.abs(t0)))
    return total, peak


def _kummer_asymptotic(p, r, y):
    """sum_k (p)_k (r)_k / (k! y^k) (the asymptotic series), 60 terms."""
    term, total = _qb.ones_like(y), _qb.ones_like(y)
    for k in range(_KUMMER_ASYMPTOTIC):
        term = term * (p + k) * (r + k) / ((k + 1.0) * y)
        total = total + term
    return total


def _hyp1f1_value(a, b, x):
    poly = _nonpos_int(a)  # a = -m: a polynomial of degree m (valid when b is no pole before it)
    b_pole = _nonpos_int(b)
    poly_ok = poly & (~b_pole | (a >= b))
    # the polynomial (or any series in x directly)
    ap = _qb.where(poly_ok, a, 0.0)
    bp = _qb.where(poly_ok, b, 1.0)
    xp = _qb.where(poly_ok, x, 0.0)

    def pbody(i, carry):
        term, total = carry
        k = i.astype(_F64)
        term = term * (ap + k) / _qb.where(bp + k == 0, 1.0, bp + k) * xp / (k + 1.0)
        return term, total + term
    one = _qb.ones_like(x)
    _, polynomial = _qb.fori_loop(0, _KUMMER_TERMS, pbody, (one, one))
    # general: Kummer's transformation for x < 0, M(a, b, x) = e^x M(b - a, b, -x), so the series
    # runs on y = |x| >= 0 with first parameter a2; its terms keep one sign when a2 >= 0
    general = ~poly_ok & ~b_pole
    neg = x < 0
    y = _qb.abs(x)
    a2 = _qb.where(neg, b - a, a)
    series_ok = general & (y <= _KUMMER_SWITCH)
    # a2 < 0: the terms change sign and cancel. Then 1F1 = pre M(A, b, -y) with A = b - a2 > b, and
    # M(A, b, -y) comes from M(A, b + n, -y), M(A, b + n + 1, -y) (positive series once b + n > A) by
    # the recurrence b (b - 1) M(b - 1) + b (1 - b - z) M(b) + z (b - a) M(b + 1) = 0 in b, run
    # downwards (the direction in which M, the recessive solution as b grows, is stable)
    a_s = _qb.where(series_ok, a2, 1.0)
    b_s = _qb.where(series_ok, b, 2.0)
    y_s = _qb.where(series_ok, y, 1.0)
    scaled, peak = _kummer_series(a_s, b_s, y_s, scale=True)
    # the recurrence wherever it is estimated to beat the plain series, whose rounding error is
    # about eps * peak / |sum|; the recurrence's is eps times its condition number, found by
    # running it on the two unit starts (it is linear: M(A, b) = alpha M_top + beta M_top+1)
    plain_err = peak / _qb.maximum(_qb.abs(scaled), 1e-300)
    big_a = b - a2
    n_up = _qb.floor(big_a - b) + 1.0
    shift = series_ok & (a2 < 0) & (plain_err > 10.0) & (n_up <= _KUMMER_SHIFT - 1.0)
    n_up = _qb.where(shift, n_up, 0.0)
    b_top = b + n_up
    top, _ = _kummer_series(_qb.where(shift, b_top - big_a, 1.0), _qb.where(shift, b_top, 2.0),
                            _qb.where(shift, y_s, 1.0), scale=True)
    a_s1 = _qb.where(shift, b_top + 1.0 - big_a, 1.0)
    b_s1 = _qb.where(shift, b_top + 1.0, 2.0)
    top1, _ = _kummer_series(a_s1, b_s1, _qb.where(shift, y_s, 1.0), scale=True)
    big_s = _qb.where(shift, big_a, 1.0)

    def rbody(i, carry):
        # (M(A, B', -y), M(A, B' + 1, -y)) for the unit starts (1, 0) and (0, 1)
        p1, p2, q1, q2 = carry
        bp = b_top - i.astype(_F64)
        live = shift & (i.astype(_F64) < n_up)
        bps = _qb.where(live, bp, 2.0)
        c1 = -(bps * (1.0 - bps + y_s)) / (bps * (bps - 1.0))
        c2 = y_s * (bps - big_s) / (bps * (bps - 1.0))
        p0, q0 = c1 * p1 + c2 * p2, c1 * q1 + c2 * q2
        return (_qb.where(live, p0, p1), _qb.where(live, p1, p2), _qb.where(live, q0, q1), _qb.where(live, q1, q2))
    zero = _qb.zeros_like(top)
    alpha, _, beta, _ = _qb.fori_loop(0, _KUMMER_SHIFT, rbody, (_qb.ones_like(top), zero, zero, _qb.ones_like(top)))
    shifted = alpha * top + beta * top1
    rec_err = (_qb.abs(alpha * top) + _qb.abs(beta * top1)) / _qb.maximum(_qb.abs(shifted), 1e-300)
    shift = shift & (rec_err < plain_err)
    # x >= 0 with a < 0 went through Kummer once more: 1F1(a; b; x) = e^x M(b - a, b, -x)
    series = _qb.where(neg, scaled, scaled * _qb.exp(y_s))
    series = _qb.where(shift, _qb.where(neg, shifted, shifted * _qb.exp(y_s)), series)
    # |x| > 700: the asymptotic expansions
    far = general & ~series_ok
    af, bf = _qb.where(far, a, 1.0), _qb.where(far, b, 2.0)
    yf = _qb.where(far & _qb.isfinite(y), y, 1000.0)
    # x -> +inf: Gamma(b)/Gamma(a) e^x x^(a-b) sum (b-a)_k (1-a)_k / (k! x^k)
    pos_sum = _kummer_asymptotic(bf - af, 1.0 - af, yf)
    pos_log = gammaln(bf) - gammaln(af) + yf + (af - bf) * _qb.log(yf)
    pos_val = gammasgn(bf) * _rgamma_sign(af) * _qb.exp(pos_log) * pos_sum
    pos_val = _qb.where(_nonpos_int(af), 0.0, pos_val)
    # x -> -inf: Gamma(b)/Gamma(b-a) (-x)^(-a) sum (a)_k (a-b+1)_k / (k! x^k)
    neg_sum = _kummer_asymptotic(af, af - bf + 1.0, yf)
    bma = bf - af
    bma_poly = _nonpos_int(bma)
    neg_log = gammaln(bf) - gammaln(_qb.where(bma_poly, 0.5, bma)) - af * _qb.log(yf)
    neg_val = gammasgn(bf) * _rgamma_sign(bma) * _qb.exp(neg_log) * neg_sum
    # b - a = -m: 1F1 = e^x P(-x) with P = 1F1(-m; b; .) a polynomial; e^x |P| formed in logs
    ab, bb = _qb.where(bma_poly, bma, 0.0), _qb.where(bma_poly, bf, 1.0)

    def qbody(i, carry):
        term, total = carry
        k = i.astype(_F64)
        term = term * (ab + k) / _qb.where(bb + k == 0, 1.0, bb + k) * yf / (k + 1.0)
        return term, total + term
    _, p_neg = _qb.fori_loop(0, _KUMMER_TERMS, qbody, (_qb.ones_like(yf), _qb.ones_like(yf)))
    p_abs = _qb.abs(p_neg)
    poly_val = _qb.sign(p_neg) * _qb.exp(_qb.log(_qb.where(p_abs > 0, p_abs, 1.0)) - yf)
    neg_val = _qb.where(bma_poly, poly_val, neg_val)
    asym = _qb.where(neg, neg_val, pos_val)
    inf_x = _qb.isinf(x)
    asym = _qb.where(inf_x & neg, _qb.where(af > 0, 0.0, _INF), asym)
    asym = _qb.where(inf_x & ~neg, _INF, asym)
    value = _qb.where(poly_ok, polynomial, _qb.where(series_ok, series, asym))
    value = _qb.where(general & (a == b), _qb.exp(x), value)
    value = _qb.where(b_pole & ~poly_ok, _INF, value)
    return _qb.where(a == 0, 1.0, value)


def _rgamma_sign(x):
    """The sign of 1 / Gamma(x) (0 at the poles)."""
    pole = _nonpos_int(x)
    return _qb.where(pole, 0.0, gammasgn(_qb.where(pole, 0.5, x)))


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k / ((b)_k k!) x^k for
    real a, b and x: 1 at a = 0 (also at b = 0, JAX's convention), exp(x) at a = b, a polynomial
    for a = 0, -1, -2, ... when b is not a pole before it (SciPy's convention, also for a = b),
    inf at the other poles b = 0, -1, ... The series (after Kummer's transformation
    e^x 1F1(b - a; b; -x) for x < 0, each term scaled by e^-|x| so nothing overflows) for
    |x| <= 700; where its terms change sign and cancel (a < 0 for x > 0, a > b for x < 0), the
    three-term recurrence in b run downwards from b + n > a, if its estimated error is the
    smaller; the asymptotic expansions for |x| > 700. Relative accuracy about 1e-14 for
    a, b > 0 (JAX's documented domain) and where nothing cancels; 1e-12 over |a|, |b| <= 10,
    |x| <= 800; it degrades (to about 1e-9) when a - b or -a exceeds about 10 with |x| between
    about 30 and 100, where neither the series nor the recurrence is accurate. Differentiable
    in all arguments as a composition (d/dx = a/b 1F1(a + 1; b + 1; x))."""
    (a, b, x), out = _promote(a, b, x)
    value = _hyp1f1_value(a, b, x)
    return _qb.where(_qb.isnan(a) | _qb.isnan(b) | _qb.isnan(x), _NAN, value).astype(out)


# ---- Gauss's hypergeometric function 2F1 ----------------------------------------------------------

_GAUSS_TERMS = 600
_GAUSS_FINITE = 40  # the finite sums of the integer case hold up to c - a - b = 40
_NEAR_INTEGER = 1e-12


def _gauss_series(a, b, c, z, with_error: bool = False):
    """sum_k (a)_k (b)_k / ((c)_k k!) z^k (600 terms); with_error, also an estimate of its
    relative error: the rounding of the largest term and the last term's size over 1 - |z|."""
    def body(i, carry):
        term, total, peak = carry
        k = i.astype(_F64)
        term = term * (a + k) * (b + k) / ((c + k) * (k + 1.0)) * z
        return term, total + term, _qb.maximum(peak, _qb.abs(term))
    one = _qb.ones_like(z)
    term, total, peak = _qb.fori_loop(0, _GAUSS_TERMS, body, (one, one, one))
    if not with_error:
        return total
    size = _qb.maximum(_qb.abs(total), 1e-300)
    return total, (2.2e-16 * peak + _qb.abs(term) / (1.0 - _qb.abs(z))) / size


def _gauss_integer(a, b, m, w):
    """2F1(a, b; a + b + m; 1 - w) for an integer m >= 0 (as float) and 0 < w <= 1/2
    (Abramowitz & Stegun 15.3.10 and 15.3.11)."""
    # the finite sum Gamma(m) Gamma(a+b+m) / (Gamma(a+m) Gamma(b+m)) sum_{n<m} (a)_n (b)_n / (n! (1-m)_n) w^n
    term = _qb.ones_like(w)
    fin = _qb.zeros_like(w)
    for n in range(_GAUSS_FINITE):
        fin = fin + _qb.where(m > n, term, 0.0)
        term = term * (a + n) * (b + n) / ((n + 1.0) * _qb.where(m > n + 1, 1.0 - m + n, 1.0)) * w
    c = a + b + m
    mm = _qb.where(m > 0, m, 1.0)
    log_front = gammaln(mm) + gammaln(c) - gammaln(a + m) - gammaln(b + m)
    sign_front = gammasgn(c) * gammasgn(a + m) * gammasgn(b + m)
    first = _qb.where(m > 0, sign_front * _qb.exp(log_front) * fin, 0.0)
    # the logarithmic series sum_n (a+m)_n (b+m)_n / (n! (n+m)!) w^n [log w - psi(n+1) - psi(n+m+1)
    # + psi(a+n+m) + psi(b+n+m)], the digammas by their recurrences
    psi1 = _qb.full_like(w, -_EULER)
    psim = digamma(m + 1.0)
    psia = digamma(a + m)
    psib = digamma(b + m)
    lw = _qb.log(w)
    coef = _qb.exp(-gammaln(m + 1.0))  # 1 / m!

    def body(i, carry):
        coef, psi1, psim, psia, psib, total = carry
        n = i.astype(_F64)
        total = total + coef * (lw - psi1 - psim + psia + psib)
        psi1 = psi1 + 1.0 / (n + 1.0)
        psim = psim + 1.0 / (n + m + 1.0)
        psia = psia + 1.0 / (a + m + n)
        psib = psib + 1.0 / (b + m + n)
        coef = coef * (a + m + n) * (b + m + n) / ((n + 1.0) * (n + m + 1.0)) * w
        return coef, psi1, psim, psia, psib, total
    carry = (coef, psi1, psim, psia, psib, _qb.zeros_like(w))
    total = _qb.fori_loop(0, _GAUSS_TERMS, body, carry)[-1]
    sign_m = _qb.where(_qb.fmod(m, 2.0) != 0, -1.0, 1.0)
    log_second = gammaln(c) - gammaln(a) - gammaln(b) + m * _qb.log(w)
    second = sign_m * gammasgn(c) * gammasgn(a) * gammasgn(b) * _qb.exp(log_second) * total
    value = first - second
    err = 2.2e-16 * 8.0 * (_qb.abs(first) + _qb.abs(second)) / _qb.maximum(_qb.abs(value), 1e-300)
    return value, err


def _gauss_near_one(a, b, c, z):
    """2F1(a, b; c; z) for 1/2 < z < 1 and c not a pole, a, b not non-positive integers."""
    w = 1.0 - z
    s = c - a - b
    euler = s < 0  # Euler: 2F1(a, b; c; z) = w^s 2F1(c - a, c - b; c; z)
    a2 = _qb.where(euler, c - a, a)
    b2 = _qb.where(euler, c - b, b)
    s2 = _qb.abs(s)
    pref = _qb.where(euler, _qb.exp(s * _qb.log(w)), 1.0)
    poly = _nonpos_int(a2) | _nonpos_int(b2)
    m = _qb.round(s2)
    near_int = _qb.abs(s2 - m) <= _NEAR_INTEGER * _qb.maximum(1.0, s2)
    integer = ~poly & near_int & (m <= _GAUSS_FINITE)
    # non-integer s2: the two-term 1 - z transformation
    gen = ~poly & ~near_int
    sg = _qb.where(gen, s2, 0.5)
    ag, bg = _qb.where(gen, a2, 0.25), _qb.where(gen, b2, 0.25)
    cg = ag + bg + sg
    f1 = _gauss_series(ag, bg, 1.0 - sg, w)
    f2 = _gauss_series(cg - ag, cg - bg, 1.0 + sg, w)
    c1 = gammasgn(cg) * gammasgn(sg) * _rgamma_sign(cg - ag) * _rgamma_sign(cg - bg) * _qb.exp(
        gammaln(cg) + gammaln(sg) - _lg_safe(cg - ag) - _lg_safe(cg - bg))
    c2 = gammasgn(cg) * gammasgn(-sg) * _rgamma_sign(ag) * _rgamma_sign(bg) * _qb.exp(
        gammaln(cg) + gammaln(-sg) - _lg_safe(ag) - _lg_safe(bg) + sg * _qb.log(w))
    two_term = c1 * f1 + c2 * f2
    two_err = 2.2e-16 * 4.0 * (_qb.abs(c1 * f1) + _qb.abs(c2 * f2)) / _qb.maximum(_qb.abs(two_term), 1e-300)
    ai, bi = _qb.where(integer, a2, 0.25), _qb.where(integer, b2, 0.25)
    mi = _qb.where(integer, m, 0.0)
    int_val, int_err = _gauss_integer(ai, bi, mi, w)
    # the series in z itself: for polynomials, integer s2 beyond the finite sums, and wherever
    # it is estimated to be more accurate than the transformation (which can cancel)
    dir_val, dir_err = _gauss_series(a2, b2, c, z, with_error=True)
    trans_err = _qb.where(integer, int_err, two_err)
    direct = poly | (near_int & ~integer) | (dir_err < trans_err)
    return pref * _qb.where(direct, dir_val, _qb.where(integer, int_val, two_term))


def _lg_safe(x):
    return gammaln(_qb.where(_nonpos_int(x), 0.5, x))


def _hyp2f1_value(a, b, c, x):
    # polynomials: a or b = -n; the series in x terminates (valid when c is no pole before it)
    pa, pb = _nonpos_int(a), _nonpos_int(b)
    deg = _qb.where(pa & pb, _qb.minimum(-a, -b), _qb.where(pa, -a, -b))
    poly = pa | pb
    c_pole = _nonpos_int(c)
    poly_ok = poly & (~c_pole | (-c >= deg))
    ap, bp = _qb.where(poly_ok, a, 0.0), _qb.where(poly_ok, b, 0.0)
    cp = _qb.where(poly_ok, c, 1.0)
    xp = _qb.where(poly_ok, x, 0.0)

    def pbody(i, carry):
        term, total = carry
        k = i.astype(_F64)
        live = k < deg
        den = _qb.where(live, (cp + k) * (k + 1.0), 1.0)
        term = _qb.where(live, term * (ap + k) * (bp + k) / den * xp, 0.0)
        return term, total + term
    one = _qb.ones_like(x)
    _, polynomial = _qb.fori_loop(0, _GAUSS_TERMS, pbody, (one, one))
    # for 1/2 < x <= 1 the sum cancels (e.g. 2F1(-m, b; b; x) = (1 - x)^m); with a = -m,
    # 2F1 = (c - b)_m / (c)_m 2F1(-m, b; b - c - m + 1; 1 - x) (A&S 15.3.6, its second term
    # vanishing) unless c - b + m is a positive integer
    am = _qb.where(pa & (~pb | (a >= b)), a, b)  # the terminating parameter -m
    bo = _qb.where(pa & (~pb | (a >= b)), b, a)
    cm = bo - cp - deg + 1.0
    flip = poly_ok & (x > 0.5) & (x <= 1.0) & ~_nonpos_int(cm)
    af, bf, cf = _qb.where(flip, am, 0.0), _qb.where(flip, bo, 0.0), _qb.where(flip, cm, 1.0)
    wf = _qb.where(flip, 1.0 - x, 0.0)
    coef = _qb.ones_like(x)
    for j in range(_GAUSS_FINITE):
        live = flip & (deg > j)
        coef = coef * _qb.where(live, (cp - bo + j) / _qb.where(live, cp + j, 1.0), 1.0)
    flip = flip & (deg <= _GAUSS_FINITE)
    polynomial = _qb.where(flip, coef * _gauss_series(af, bf, cf, wf), polynomial)
    # c - b = -j with 0 <= j < m (there the form above degenerates): Euler's transformation first,
    # 2F1 = (1 - x)^(m - j) 2F1(-j, c + m; c; x), then the 1 - x form of that polynomial:
    # (-m)_j / (c)_j 2F1(-j, c + m; m - j + 1; 1 - x)
    jj = bo - cp
    euler = poly_ok & (x > 0.5) & (x <= 1.0) & _nonpos_int(cm) & _is_int(jj) & (jj >= 0) & (jj < deg)
    euler = euler & (deg <= _GAUSS_FINITE)
    je = _qb.where(euler, jj, 0.0)
    me = _qb.where(euler, deg, 1.0)
    ce = _qb.where(euler, cp, 1.0)
    we = _qb.where(euler, 1.0 - x, 0.0)
    coef = _qb.ones_like(x)
    for j in range(_GAUSS_FINITE):
        live = euler & (je > j)
        coef = coef * _qb.where(live, (j - me) / _qb.where(live, ce + j, 1.0), 1.0)
    ew = _qb.where(euler & (me > je), _qb.power(we, me - je), 1.0)
    polynomial = _qb.where(euler, ew * coef * _gauss_series(-je, ce + me, me - je + 1.0, we), polynomial)
    general = ~poly & ~c_pole & (x < 1)
    # Pfaff for x < 0: 2F1(a, b; c; x) = (1 - x)^-a 2F1(a, c - b; c; x / (x - 1))
    neg = x < 0
    xg = _qb.where(general, x, 0.25)
    z = _qb.where(neg, xg / (xg - 1.0), xg)
    bz = _qb.where(neg, c - b, b)
    pref = _qb.where(neg, _qb.exp(-a * _qb.log1p(-xg)), 1.0)
    ag, bg, cg = _qb.where(general, a, 0.25), _qb.where(general, bz, 0.25), _qb.where(general, c, 1.0)
    low = z <= 0.5
    zl = _qb.where(low, z, 0.25)
    direct = _gauss_series(ag, bg, cg, zl)
    zh = _qb.where(low, 0.75, z)
    # z can be 1 only by rounding of x / (x - 1) for x near -inf
    zh = _qb.minimum(zh, 1.0 - 1e-16)
    near = _gauss_near_one(ag, bg, cg, zh)
    value = pref * _qb.where(low, direct, near)
    value = _qb.where(x == -_INF, _NAN, value)
    # x = 1: Gauss's sum Gamma(c) Gamma(c-a-b) / (Gamma(c-a) Gamma(c-b)) when c - a - b > 0
    s = c - a - b
    at_one = ~poly & ~c_pole & (x == 1)
    ss = _qb.where(at_one & (s > 0), s, 1.0)
    ca, cb, c1 = _qb.where(at_one, c - a, 1.0), _qb.where(at_one, c - b, 1.0), _qb.where(at_one, c, 1.0)
    gauss = gammasgn(c1) * gammasgn(ss) * _rgamma_sign(ca) * _rgamma_sign(cb) * _qb.exp(
        gammaln(c1) + gammaln(ss) - _lg_safe(ca) - _lg_safe(cb))
    # c - a - b <= 0: divergent, with the sign of Gamma(c) Gamma(a + b - c) / (Gamma(a) Gamma(b))
    # (of Gamma(c) / (Gamma(a) Gamma(b)) when c = a + b, where the growth is logarithmic)
    sd = _qb.where(at_one & (s < 0), -s, 1.0)
    ga, gb = _qb.where(at_one, a, 1.0), _qb.where(at_one, b, 1.0)
    div_sign = gammasgn(c1) * gammasgn(sd) * _rgamma_sign(ga) * _rgamma_sign(gb)
    gauss = _qb.where(s > 0, gauss, div_sign * _INF)
    out = _qb.where(poly_ok, polynomial, _qb.where(general, value, _NAN))
    out = _qb.where(at_one, gauss, out)
    out = _qb.where(c_pole & ~poly_ok, _INF, out)
    return _qb.where((a == 0) | (b == 0) | (x == 0), 1.0, out)


def hyp2f1(a, b, c, x):
    """Gauss's hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k / ((c)_k k!) x^k for
    real a, b, c and x <= 1: 1 at x = 0, a = 0 or b = 0; a polynomial (for every x; in 1 - x
    for 1/2 < x <= 1, where its sum in x would cancel) when a or b is a non-positive integer
    and c is no pole before it; inf at the other poles c = 0, -1, ...; Gauss's sum at x = 1
    (+-inf when c - a - b <= 0); NaN for x > 1 otherwise (the value is complex; SciPy gives inf).
    The series for 0 <= x <= 1/2, Pfaff's transformation for x < 0, for 1/2 < x < 1 the
    series or the 1 - x transformation, whichever has the smaller estimated error (after
    Euler's transformation when c - a - b < 0; the logarithmic forms of A&S 15.3.10-11 when
    c - a - b is an integer up to 40). Relative accuracy about 1e-14 (1e-11 at worst over
    random a, b in [-8, 8], c in [-8, 12], x in [-20, 1]); within d of an integer c - a - b the
    two-term formula loses about 1e-16 / d (as SciPy's). Differentiable as a composition (d/dx
    = ab/c 2F1(a+1, b+1; c+1; x)); the derivatives in a, b, c are wrong exactly where
    c - a - b is an integer and the logarithmic form is used."""
    (a, b, c, x), out = _promote(a, b, c, x)
    value = _hyp2f1_value(a, b, c, x)
    nan = _qb.isnan(a) | _qb.isnan(b) | _qb.isnan(c) | _qb.isnan(x)
    return _qb.where(nan, _NAN, value).astype(out)
