"""jax.scipy.special's functions: those the core ops cover exactly, and the gamma family and
inverse error functions of quabla._special."""
from __future__ import annotations

import math

from .._package import qb as _qb
from .._numpy_extra import _no_complex

from .._special import beta, betaln, digamma, erfcinv, erfinv, gamma, gammaln, ndtri, polygamma  # noqa: F401
from .._special_incomplete import betainc, gammainc, gammaincc, i0, i0e, i1, i1e  # noqa: F401
from .._special_more import rel_entr, kl_div, exp1, expi  # noqa: F401
from .._special_extra import (bernoulli, bessel_jn, boxcox, boxcox1p, comb, dawsn, erfcx, expn,  # noqa: F401
                              fresnel, gammasgn, hyp1f1, hyp2f1, loggamma, owens_t, poch, sici, spence, zeta)

__all__ = ["erf", "erfc", "expit", "logit", "logsumexp", "softmax", "log_softmax", "xlogy", "xlog1py", "ndtr",
           "log_ndtr", "entr", "gammaln", "gamma", "digamma", "psi", "polygamma", "betaln", "beta", "erfinv", "erfcinv",
           "ndtri", "gammainc", "gammaincc", "betainc", "i0", "i0e", "i1", "i1e", "factorial", "multigammaln", "rel_entr", "kl_div", "exp1", "expi",
           "bernoulli", "bessel_jn", "boxcox", "boxcox1p", "comb", "dawsn", "erfcx", "expn", "fresnel", "gammasgn",
           "hyp1f1", "hyp2f1", "loggamma", "owens_t", "poch", "sici", "spence", "zeta"]

psi = digamma

def erf(x):
    """The error function."""
    return _qb.erf(x)


def erfc(x):
    """The complementary error function."""
    return _qb.erfc(x)


def expit(x):
    """1 / (1 + exp(-x))."""
    return _qb.sigmoid(x)


def logit(p):
    """log(p / (1 - p))."""
    p = _qb.asarray(p)
    return _qb.log(p) - _qb.log1p(-p)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
    """log(sum(b * exp(a))) without overflow (b: weights; with return_sign, (log|s|, sign(s)),
    else NaN where the weighted sum s is negative); jax.nn.logsumexp."""
    return _qb.nn.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) along axis (all axes when None, as SciPy)."""
    x = _qb.asarray(x)
    if axis is not None:
        return _qb.softmax(x, axis=axis)
    return _qb.softmax(x.reshape(-1), axis=-1).reshape(tuple(x.shape))


def log_softmax(x, axis=None):
    """x - logsumexp(x) along axis (all axes when None)."""
    x = _qb.asarray(x)
    if axis is not None:
        return _qb.log_softmax(x, axis=axis)
    return _qb.log_softmax(x.reshape(-1), axis=-1).reshape(tuple(x.shape))


def xlogy(x, y):
    """x * log(y), 0 where x == 0."""
    x, y = _qb.asarray(x), _qb.asarray(y)
    safe = _qb.where(x == 0, _qb.ones_like(y), y)
    return _qb.where(x == 0, _qb.zeros_like(x * y), x * _qb.log(safe))


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0."""
    x, y = _qb.asarray(x), _qb.asarray(y)
    safe = _qb.where(x == 0, _qb.zeros_like(y), y)
    return _qb.where(x == 0, _qb.zeros_like(x * y), x * _qb.log1p(safe))


def ndtr(x):
    """The standard normal CDF."""
    return 0.5 * _qb.erfc(-_qb.asarray(x) / math.sqrt(2.0))


def log_ndtr(x):
    """log of the standard normal CDF: log1p(-ndtr(-x)) above 0 (relative accuracy in the upper
    tail, where log(ndtr(x)) would round to 0), log(ndtr(x)) down to x = -30, below it the
    asymptotic series -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8)
    (ndtr itself underflows near -38). Computed in float64 (float32's ndtr underflows near
    -14) and returned in x's float dtype."""
    x = _qb.asarray(x)
    _no_complex("log_ndtr", x)
    out_dtype = x.dtype if x.dtype in (_qb.float32, _qb.float64) else _qb.default_dtype()
    x = x.astype(_qb.float64)
    tail = x < -30.0
    xt = _qb.where(tail, x, _qb.full_like(x, -31.0))  # each branch on values it is valid for
    xn = _qb.where(tail, _qb.full_like(x, 0.0), x)
    z = 1.0 / (xt * xt)
    series = 1.0 - z + 3.0 * z * z - 15.0 * z ** 3 + 105.0 * z ** 4
    asym = -0.5 * xt * xt - _qb.log(-xt) - 0.5 * math.log(2.0 * math.pi) + _qb.log(series)
    upper = xn > 0
    xu = _qb.where(upper, xn, _qb.zeros_like(xn))
    xm = _qb.where(upper, _qb.zeros_like(xn), xn)
    return _qb.where(tail, asym, _qb.where(upper, _qb.log1p(-ndtr(-xu)), _qb.log(ndtr(xm)))).astype(out_dtype)


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf for x < 0."""
    x = _qb.asarray(x)
    safe = _qb.where(x > 0, x, _qb.ones_like(x))
    return _qb.where(x > 0, -x * _qb.log(safe), _qb.where(x == 0, _qb.zeros_like(x), _qb.full_like(x, -math.inf)))


def factorial(n, exact: bool = False):
    """n! as a float (Gamma(n + 1)); 0 for negative n, as SciPy's and JAX's."""
    if exact:
        raise ValueError("factorial: exact=True is not supported (as in jax.scipy); use math.factorial for ints")
    n = _qb.asarray(n)
    _no_complex("factorial", n)
    n = n if n.dtype in (_qb.float32, _qb.float64) else n.astype(_qb.default_dtype())
    return _qb.where(n < 0, _qb.zeros_like(n), gamma(_qb.where(n < 0, _qb.zeros_like(n), n) + 1.0))


def multigammaln(a, d: int):
    """log of the multivariate gamma function of dimension d."""
    if isinstance(d, bool) or not hasattr(d, "__index__") or int(d) < 1:
        raise ValueError(f"multigammaln: d must be a positive int, got {d!r}")
    d = int(d)
    a = _qb.asarray(a)
    _no_complex("multigammaln", a)
    a = a if a.dtype in (_qb.float32, _qb.float64) else a.astype(_qb.default_dtype())
    total = 0.25 * d * (d - 1) * math.log(math.pi)
    for j in range(d):
        total = total + gammaln(a - 0.5 * j)
    return total
