"""jax.scipy.stats: the log densities, densities and distribution functions of common
distributions (CDFs through the incomplete gamma and beta functions where needed), as compositions of the core ops (jit, vmap and gradients in every argument,
on every backend). Each distribution is a namespace of functions, as in jax.scipy.stats
(`from quabla.scipy.stats import norm; norm.logpdf(x, loc, scale)`); loc and scale
standardise z = (x - loc) / scale and the densities divide by scale. Outside the support a
log density is -inf and a density 0, as SciPy's."""
from __future__ import annotations

import math
from types import SimpleNamespace

from .._package import qb as _qb
from . import special as _sp

__all__ = ["norm", "uniform", "expon", "laplace", "logistic", "cauchy", "t", "gamma", "beta", "chi2", "pareto",
           "gumbel_r", "gumbel_l", "gennorm", "truncnorm", "vonmises", "poisson", "bernoulli", "binom", "geom",
           "nbinom", "multinomial", "multivariate_normal", "dirichlet"]

_LOG_2PI = math.log(2.0 * math.pi)


def _f(*xs):
    """The arguments as float arrays of one dtype (JAX's promotion; Python scalars weak)."""
    from .._numpy_names import common_float
    from .._numpy_extra import _reject_complex
    _reject_complex(*xs)  # (distributions of real variables: never a dropped imaginary part)
    dtype = common_float(*xs)
    return [_qb.asarray(x).astype(dtype) for x in xs]


def _std(x, loc, scale):
    x, loc, scale = _f(x, loc, scale)
    return (x - loc) / scale, scale


def _neg_inf_outside(inside, value, x=None):
    """value inside the support, -inf outside it, NaN where x is NaN (as SciPy)."""
    out = _qb.where(inside, value, _qb.full_like(value, -math.inf))
    return out if x is None else _nan_where(x, out)


def _nan_where(x, value):
    return _qb.where(_qb.isnan(x), _qb.full_like(value, math.nan), value)


def _namespace(name, **functions):
    for fname, fn in functions.items():
        fn.__name__ = fn.__qualname__ = fname
        fn.__module__ = f"quabla.scipy.stats.{name}"
    return SimpleNamespace(**functions)


def _with_pdf(logpdf):
    def pdf(*args, **kwargs):
        return _qb.exp(logpdf(*args, **kwargs))
    return pdf


# ---- continuous ------------------------------------------------------------------------------

def _norm_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -0.5 * (z * z) - 0.5 * _LOG_2PI - _qb.log(scale)


def _norm_cdf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _sp.ndtr(z)


def _norm_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _f(q, loc, scale)
    return loc + scale * _sp.ndtri(q)


norm = _namespace(
    "norm",
    logpdf=_norm_logpdf,
    pdf=_with_pdf(_norm_logpdf),
    cdf=_norm_cdf,
    logcdf=lambda x, loc=0.0, scale=1.0: _sp.log_ndtr(_std(x, loc, scale)[0]),
    sf=lambda x, loc=0.0, scale=1.0: _sp.ndtr(-_std(x, loc, scale)[0]),
    logsf=lambda x, loc=0.0, scale=1.0: _sp.log_ndtr(-_std(x, loc, scale)[0]),
    ppf=_norm_ppf,
    isf=lambda q, loc=0.0, scale=1.0: (lambda q, loc, scale: loc - scale * _sp.ndtri(q))(*_f(q, loc, scale)),
)


def _uniform_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return _neg_inf_outside((z >= 0) & (z <= 1), _qb.zeros_like(z) - _qb.log(scale), z)


def _uniform_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _f(q, loc, scale)
    return _qb.where((q >= 0) & (q <= 1), loc + q * scale, _qb.full_like(q, math.nan))


uniform = _namespace(
    "uniform",
    logpdf=_uniform_logpdf,
    pdf=_with_pdf(_uniform_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: _qb.clip(_std(x, loc, scale)[0], 0.0, 1.0),
    ppf=_uniform_ppf,
)


def _expon_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return _neg_inf_outside(z >= 0, -z - _qb.log(scale), z)


def _expon_cdf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _nan_where(z, _qb.where(z >= 0, -_qb.expm1(-_qb.maximum(z, 0.0)), _qb.zeros_like(z)))


def _expon_sf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _nan_where(z, _qb.where(z >= 0, _qb.exp(-_qb.maximum(z, 0.0)), _qb.ones_like(z)))


def _expon_logsf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _nan_where(z, _qb.where(z >= 0, -z, _qb.zeros_like(z)))


def _expon_ppf(q, loc=0.0, scale=1.0):
    q, loc, scale = _f(q, loc, scale)
    inside = (q >= 0) & (q <= 1)
    safe = _qb.where(inside, q, _qb.zeros_like(q))
    return _qb.where(inside, loc - scale * _qb.log1p(-safe), _qb.full_like(q, math.nan))


expon = _namespace(
    "expon",
    logpdf=_expon_logpdf,
    pdf=_with_pdf(_expon_logpdf),
    cdf=_expon_cdf,
    sf=_expon_sf,
    logsf=_expon_logsf,
    ppf=_expon_ppf,
)


def _laplace_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -math.log(2.0) - _qb.log(scale) - _qb.abs(z)


def _laplace_cdf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    return _qb.where(z < 0, 0.5 * _qb.exp(_qb.minimum(z, 0.0)), 1.0 - 0.5 * _qb.exp(-_qb.maximum(z, 0.0)))


laplace = _namespace("laplace", logpdf=_laplace_logpdf, pdf=_with_pdf(_laplace_logpdf), cdf=_laplace_cdf)


def _logistic_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -_qb.abs(z) - 2.0 * _qb.log1p(_qb.exp(-_qb.abs(z))) - _qb.log(scale)


logistic = _namespace(
    "logistic",
    logpdf=_logistic_logpdf,
    pdf=_with_pdf(_logistic_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: _qb.sigmoid(_std(x, loc, scale)[0]),
    sf=lambda x, loc=0.0, scale=1.0: _qb.sigmoid(-_std(x, loc, scale)[0]),
    ppf=lambda q, loc=0.0, scale=1.0: (lambda q, loc, scale: loc + scale * _sp.logit(q))(*_f(q, loc, scale)),
    isf=lambda q, loc=0.0, scale=1.0: (lambda q, loc, scale: loc - scale * _sp.logit(q))(*_f(q, loc, scale)),
)


def _cauchy_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -math.log(math.pi) - _qb.log(scale) - _qb.log1p(z * z)


cauchy = _namespace(
    "cauchy",
    logpdf=_cauchy_logpdf,
    pdf=_with_pdf(_cauchy_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: 0.5 + _qb.arctan(_std(x, loc, scale)[0]) / math.pi,
    ppf=lambda q, loc=0.0, scale=1.0: (lambda q, loc, scale: loc + scale * _qb.tan(math.pi * (q - 0.5)))(
        *_f(q, loc, scale)),
)


def _t_logpdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _f(x, df, loc, scale)
    z = (x - loc) / scale
    half = 0.5 * (df + 1.0)
    return (_sp.gammaln(half) - _sp.gammaln(0.5 * df) - 0.5 * _qb.log(df * math.pi) - _qb.log(scale)
            - half * _qb.log1p(z * z / df))


_TINY_Z = 1e-150  # z below this is moved to it: the central form's x^(1/2) has no derivative at 0


def _t_cdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _f(x, df, loc, scale)
    z = (x - loc) / scale
    z = z + _qb.where(_qb.abs(z) < _TINY_Z, _qb.full_like(z, _TINY_Z), _qb.zeros_like(z))  # keeps dz
    z2 = z * z
    # The tails from I_{df/(df+z^2)}(df/2, 1/2); the centre from I_{z^2/(df+z^2)}(1/2, df/2),
    # which keeps the absolute accuracy (and the derivative) near z = 0.
    central = z2 < df
    tail = 0.5 * _sp.betainc(0.5 * df, _qb.full_like(df, 0.5), df / (df + z2))
    half_mass = 0.5 * _sp.betainc(_qb.full_like(df, 0.5), 0.5 * df, z2 / (df + z2))
    low = _qb.where(central, 0.5 - half_mass, tail)  # P(T <= -|z|)
    return _nan_where(z, _qb.where(z < 0, low, 1.0 - low))


t = _namespace("t", logpdf=_t_logpdf, pdf=_with_pdf(_t_logpdf), cdf=_t_cdf,
               sf=lambda x, df, loc=0.0, scale=1.0: _t_cdf(2.0 * _qb.asarray(loc) - _qb.asarray(x), df, loc, scale))


def _gamma_logpdf(x, a, loc=0.0, scale=1.0):
    x, a, loc, scale = _f(x, a, loc, scale)
    z = (x - loc) / scale
    safe = _qb.where(z >= 0, z, _qb.ones_like(z))
    return _neg_inf_outside(z >= 0, _sp.xlogy(a - 1.0, safe) - safe - _sp.gammaln(a) - _qb.log(scale))


def _gamma_tail(x, a, loc, scale, upper):
    x, a, loc, scale = _f(x, a, loc, scale)
    z = (x - loc) / scale
    return _nan_where(z, (_sp.gammaincc if upper else _sp.gammainc)(a, _qb.maximum(z, 0.0)))


gamma = _namespace("gamma", logpdf=_gamma_logpdf, pdf=_with_pdf(_gamma_logpdf),
                   cdf=lambda x, a, loc=0.0, scale=1.0: _gamma_tail(x, a, loc, scale, False),
                   sf=lambda x, a, loc=0.0, scale=1.0: _gamma_tail(x, a, loc, scale, True))


def _beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    safe = _qb.where(inside, z, _qb.full_like(z, 0.5))
    return _neg_inf_outside(inside, _sp.xlogy(a - 1.0, safe) + _sp.xlog1py(b - 1.0, -safe) - _sp.betaln(a, b)
                            - _qb.log(scale), z)


def _beta_cdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    return _nan_where(z, _sp.betainc(a, b, _qb.clip(z, 0.0, 1.0)))


def _beta_sf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    return _nan_where(z, _sp.betainc(b, a, 1.0 - _qb.clip(z, 0.0, 1.0)))  # I_{1-x}(b, a): exact in the tail


beta = _namespace("beta", logpdf=_beta_logpdf, pdf=_with_pdf(_beta_logpdf), cdf=_beta_cdf, sf=_beta_sf)


def _chi2_logpdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _f(x, df, loc, scale)
    return _gamma_logpdf(x, 0.5 * df, loc, 2.0 * scale)


chi2 = _namespace("chi2", logpdf=_chi2_logpdf, pdf=_with_pdf(_chi2_logpdf),
                  cdf=lambda x, df, loc=0.0, scale=1.0: _gamma_tail(x, 0.5 * _qb.asarray(df), loc,
                                                                     2.0 * _qb.asarray(scale), False),
                  sf=lambda x, df, loc=0.0, scale=1.0: _gamma_tail(x, 0.5 * _qb.asarray(df), loc,
                                                                    2.0 * _qb.asarray(scale), True))


def _pareto_logpdf(x, b, loc=0.0, scale=1.0):
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    safe = _qb.where(z >= 1, z, _qb.ones_like(z))
    return _neg_inf_outside(z >= 1, _qb.log(b) - (b + 1.0) * _qb.log(safe) - _qb.log(scale))


def _pareto_cdf(x, b, loc=0.0, scale=1.0):
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    return _qb.where(z >= 1, 1.0 - _qb.maximum(z, 1.0) ** (-b), _qb.zeros_like(z))


pareto = _namespace("pareto", logpdf=_pareto_logpdf, pdf=_with_pdf(_pareto_logpdf), cdf=_pareto_cdf)


def _gumbel_r_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -z - _qb.exp(-z) - _qb.log(scale)


def _gumbel_l_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return z - _qb.exp(z) - _qb.log(scale)


gumbel_r = _namespace(
    "gumbel_r",
    logpdf=_gumbel_r_logpdf,
    pdf=_with_pdf(_gumbel_r_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: _qb.exp(-_qb.exp(-_std(x, loc, scale)[0])),
    logcdf=lambda x, loc=0.0, scale=1.0: -_qb.exp(-_std(x, loc, scale)[0]),
)
gumbel_l = _namespace(
    "gumbel_l",
    logpdf=_gumbel_l_logpdf,
    pdf=_with_pdf(_gumbel_l_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: -_qb.expm1(-_qb.exp(_std(x, loc, scale)[0])),
    logsf=lambda x, loc=0.0, scale=1.0: -_qb.exp(_std(x, loc, scale)[0]),
)


def _gennorm_logpdf(x, beta, loc=0.0, scale=1.0):
    x, beta, loc, scale = _f(x, beta, loc, scale)
    z = (x - loc) / scale
    return _qb.log(beta) - math.log(2.0) - _sp.gammaln(1.0 / beta) - _qb.abs(z) ** beta - _qb.log(scale)


def _gennorm_cdf(x, beta, loc=0.0, scale=1.0):
    x, beta, loc, scale = _f(x, beta, loc, scale)
    z = (x - loc) / scale
    z = z + _qb.where(_qb.abs(z) < _TINY_Z, _qb.full_like(z, _TINY_Z), _qb.zeros_like(z))  # keeps dz
    # The left tail as 0.5 Q(1/beta, |z|^beta) (no cancellation), the right as its mirror.
    lower = 0.5 * _sp.gammaincc(1.0 / beta, _qb.abs(z) ** beta)
    return _nan_where(z, _qb.where(z < 0, lower, 1.0 - lower))


gennorm = _namespace("gennorm", logpdf=_gennorm_logpdf, pdf=_with_pdf(_gennorm_logpdf), cdf=_gennorm_cdf)


def _vonmises_logpdf(x, kappa, loc=0.0, scale=1.0):
    x, kappa, loc, scale = _f(x, kappa, loc, scale)
    z = (x - loc) / scale
    return kappa * (_qb.cos(z) - 1.0) - _LOG_2PI - _qb.log(_sp.i0e(kappa)) - _qb.log(scale)


vonmises = _namespace("vonmises", logpdf=_vonmises_logpdf, pdf=_with_pdf(_vonmises_logpdf))


def _log_mass_between(a, b):
    """log(Phi(b) - Phi(a)) for a < b, accurate in both tails (by symmetry, the side where
    the two CDFs are not both near 1 is used)."""
    flip = a > 0  # both in the upper tail: use the lower tail of the mirror image
    lo, hi = _qb.where(flip, -b, a), _qb.where(flip, -a, b)
    log_hi, log_lo = _sp.log_ndtr(hi), _sp.log_ndtr(lo)
    return log_hi + _qb.log1p(-_qb.exp(log_lo - log_hi))


def _truncnorm_logpdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    inside = (z >= a) & (z <= b)
    return _neg_inf_outside(inside, -0.5 * z * z - 0.5 * _LOG_2PI - _log_mass_between(a, b) - _qb.log(scale))


def _truncnorm_cdf(x, a, b, loc=0.0, scale=1.0):
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = _qb.clip((x - loc) / scale, a, b)
    flip = a > 0
    # In the upper tail, 1 - (Phi(-z) - Phi(-b)) / (Phi(-a) - Phi(-b)), computed the same way.
    num = _qb.where(flip, _log_mass_between(-b, -z), _log_mass_between(a, z))
    frac = _qb.exp(num - _log_mass_between(a, b))
    return _qb.where(z <= a, _qb.zeros_like(z), _qb.where(z >= b, _qb.ones_like(z), _qb.where(flip, 1.0 - frac, frac)))


truncnorm = _namespace("truncnorm", logpdf=_truncnorm_logpdf, pdf=_with_pdf(_truncnorm_logpdf), cdf=_truncnorm_cdf)


# ---- discrete --------------------------------------------------------------------------------

def _is_integer(k):
    return k == _qb.floor(k)


def _poisson_logpmf(k, mu, loc=0.0):
    k, mu, loc = _f(k, mu, loc)
    k = k - loc
    valid = _is_integer(k) & (k >= 0)
    safe = _qb.where(valid, k, _qb.zeros_like(k))
    return _neg_inf_outside(valid, _sp.xlogy(safe, mu) - _sp.gammaln(safe + 1.0) - mu)


def _poisson_tail(k, mu, loc, upper):
    k, mu, loc = _f(k, mu, loc)
    k = _qb.floor(k - loc)
    inside = k >= 0
    safe = _qb.where(inside, k, _qb.zeros_like(k))
    if upper:  # P(K > k) = P(k + 1, mu) directly: 1 - cdf would lose the tail
        value = _qb.where(inside, _sp.gammainc(safe + 1.0, mu), _qb.ones_like(k))
    else:
        value = _qb.where(inside, _sp.gammaincc(safe + 1.0, mu), _qb.zeros_like(k))
    return _nan_where(k, value)


poisson = _namespace("poisson", logpmf=_poisson_logpmf, pmf=_with_pdf(_poisson_logpmf),
                     cdf=lambda k, mu, loc=0.0: _poisson_tail(k, mu, loc, False),
                     sf=lambda k, mu, loc=0.0: _poisson_tail(k, mu, loc, True))


def _bernoulli_logpmf(k, p, loc=0.0):
    k, p, loc = _f(k, p, loc)
    k = k - loc
    valid = (k == 0) | (k == 1)
    safe = _qb.where(valid, k, _qb.zeros_like(k))
    return _neg_inf_outside(valid, _sp.xlogy(safe, p) + _sp.xlog1py(1.0 - safe, -p))


bernoulli = _namespace("bernoulli", logpmf=_bernoulli_logpmf, pmf=_with_pdf(_bernoulli_logpmf))


def _binom_logpmf(k, n, p, loc=0.0):
    k, n, p, loc = _f(k, n, p, loc)
    k = k - loc
    valid = _is_integer(k) & (k >= 0) & (k <= n)
    safe = _qb.where(valid, k, _qb.zeros_like(k))
    comb = _sp.gammaln(n + 1.0) - _sp.gammaln(safe + 1.0) - _sp.gammaln(n - safe + 1.0)
    return _neg_inf_outside(valid, comb + _sp.xlogy(safe, p) + _sp.xlog1py(n - safe, -p))


def _binom_tail(k, n, p, loc, upper):
    k, n, p, loc = _f(k, n, p, loc)
    k = _qb.floor(k - loc)
    inside = (k >= 0) & (k < n)
    safe = _qb.where(inside, k, _qb.zeros_like(k))
    n_safe = _qb.where(inside, n, safe + 1.0)
    if upper:  # P(K > k) = I_p(k + 1, n - k)
        value = _sp.betainc(safe + 1.0, n_safe - safe, p)
        value = _qb.where(k >= n, _qb.zeros_like(value), _qb.where(k < 0, _qb.ones_like(value), value))
    else:
        value = _sp.betainc(n_safe - safe, safe + 1.0, 1.0 - p)
        value = _qb.where(k >= n, _qb.ones_like(value), _qb.where(k < 0, _qb.zeros_like(value), value))
    return _nan_where(k, value)


binom = _namespace("binom", logpmf=_binom_logpmf, pmf=_with_pdf(_binom_logpmf),
                   cdf=lambda k, n, p, loc=0.0: _binom_tail(k, n, p, loc, False),
                   sf=lambda k, n, p, loc=0.0: _binom_tail(k, n, p, loc, True))


def _geom_logpmf(k, p, loc=0.0):
    k, p, loc = _f(k, p, loc)
    k = k - loc
    valid = _is_integer(k) & (k >= 1)
    safe = _qb.where(valid, k, _qb.ones_like(k))
    return _neg_inf_outside(valid, _sp.xlog1py(safe - 1.0, -p) + _qb.log(p))


def _geom_cdf(k, p, loc=0.0):
    k, p, loc = _f(k, p, loc)
    k = _qb.floor(k - loc)
    return _nan_where(k, _qb.where(k >= 1, -_qb.expm1(_qb.maximum(k, 1.0) * _qb.log1p(-p)), _qb.zeros_like(k)))


geom = _namespace("geom", logpmf=_geom_logpmf, pmf=_with_pdf(_geom_logpmf), cdf=_geom_cdf)


def _nbinom_logpmf(k, n, p, loc=0.0):
    k, n, p, loc = _f(k, n, p, loc)
    k = k - loc
    valid = _is_integer(k) & (k >= 0)
    safe = _qb.where(valid, k, _qb.zeros_like(k))
    comb = _sp.gammaln(n + safe) - _sp.gammaln(safe + 1.0) - _sp.gammaln(n)
    return _neg_inf_outside(valid, comb + n * _qb.log(p) + _sp.xlog1py(safe, -p))


def _nbinom_cdf(k, n, p, loc=0.0):
    k, n, p, loc = _f(k, n, p, loc)
    k = _qb.floor(k - loc)
    safe = _qb.maximum(k, 0.0)
    return _nan_where(k, _qb.where(k >= 0, _sp.betainc(n, safe + 1.0, p), _qb.zeros_like(k)))


nbinom = _namespace("nbinom", logpmf=_nbinom_logpmf, pmf=_with_pdf(_nbinom_logpmf), cdf=_nbinom_cdf)


def _multinomial_logpmf(x, n, p):
    x, n, p = _f(x, n, p)
    valid = _qb.all(_is_integer(x) & (x >= 0), axis=-1) & (_qb.sum(x, axis=-1) == n)
    value = _sp.gammaln(n + 1.0) + _qb.sum(_sp.xlogy(x, p) - _sp.gammaln(x + 1.0), axis=-1)
    return _neg_inf_outside(valid, value)


multinomial = _namespace("multinomial", logpmf=_multinomial_logpmf, pmf=_with_pdf(_multinomial_logpmf))


# ---- multivariate ----------------------------------------------------------------------------

def _mvn_logpdf(x, mean, cov, allow_singular=None):
    x, mean, cov = _f(x, mean, cov)
    if cov.ndim == 0 or mean.ndim == 0:
        z = (x - mean) / _qb.sqrt(cov)
        return -0.5 * z * z - 0.5 * _LOG_2PI - 0.5 * _qb.log(cov)
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2] or cov.shape[-1] != mean.shape[-1]:
        raise ValueError(f"multivariate_normal.logpdf: mean must have shape (..., n) and cov (..., n, n), got "
                         f"{tuple(mean.shape)} and {tuple(cov.shape)}")
    n = mean.shape[-1]
    chol = _qb.linalg.cholesky(cov)
    diff = x - mean
    batch = tuple(_qb.broadcast_shapes(tuple(diff.shape[:-1]), tuple(chol.shape[:-2])))
    chol = _qb.broadcast_to(chol, batch + (n, n))
    diff = _qb.broadcast_to(diff, batch + (n,))
    y = _qb.linalg.solve_triangular(chol, diff[..., None], lower=True)[..., 0]
    log_det = 2.0 * _qb.sum(_qb.log(_qb.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (n * _LOG_2PI + log_det + _qb.sum(y * y, axis=-1))


multivariate_normal = _namespace("multivariate_normal", logpdf=_mvn_logpdf, pdf=_with_pdf(_mvn_logpdf))


def _dirichlet_logpdf(x, alpha):
    x, alpha = _f(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be a vector, got shape {tuple(alpha.shape)}")
    if x.shape[0] == alpha.shape[0] - 1:  # the last component implied, as SciPy and JAX accept
        x = _qb.concatenate([x, (1.0 - _qb.sum(x, axis=0))[None]], axis=0)
    if x.shape[0] != alpha.shape[0]:
        raise ValueError(f"dirichlet.logpdf: x's first axis ({x.shape[0]}) must have len(alpha) = "
                         f"{alpha.shape[0]} entries (or one fewer)")
    a = alpha.reshape((alpha.shape[0],) + (1,) * (x.ndim - 1))
    norm_const = _qb.sum(_sp.gammaln(alpha)) - _sp.gammaln(_qb.sum(alpha))
    inside = _qb.all((x >= 0) & (x <= 1), axis=0) & (_qb.abs(_qb.sum(x, axis=0) - 1.0) < 1e-6)
    safe = _qb.where(x > 0, x, _qb.ones_like(x))
    return _neg_inf_outside(inside, _qb.sum(_sp.xlogy(a - 1.0, safe), axis=0) - norm_const)


dirichlet = _namespace("dirichlet", logpdf=_dirichlet_logpdf, pdf=_with_pdf(_dirichlet_logpdf))
