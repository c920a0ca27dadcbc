"""jax.scipy.stats: the log densities, densities and distribution functions of common
distributions (CDFs through the incomplete gamma and beta functions where needed), as compositions of the core ops (jit, vmap and gradients in every argument,
on every backend). Each distribution is a namespace of functions, as in jax.scipy.stats
(`from quabla.scipy.stats import norm; norm.logpdf(x, loc, scale)`); loc and scale
standardise z = (x - loc) / scale and the densities divide by scale. Outside the support a
log density is -inf and a density 0, as SciPy's. Log tails are taken from whichever tail is
small, so they keep their relative accuracy at both ends. Also the summary statistics
rankdata, sem and mode, and gaussian_kde (in ._kde)."""
from __future__ import annotations

import math
from collections import namedtuple
from types import SimpleNamespace

from .._package import qb as _qb
from . import special as _sp
from ._kde import gaussian_kde  # noqa: F401  (in ._kde: a class of its own)

__all__ = ["norm", "uniform", "expon", "laplace", "logistic", "cauchy", "t", "gamma", "beta", "chi2", "pareto",
           "gumbel_r", "gumbel_l", "gennorm", "truncnorm", "vonmises", "wrapcauchy", "poisson", "bernoulli", "binom",
           "betabinom", "geom", "nbinom", "multinomial", "multivariate_normal", "dirichlet",
           "rankdata", "sem", "mode", "ModeResult", "gaussian_kde"]

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


def _nan_unless(valid, value):
    """value where the parameters are valid, NaN elsewhere (SciPy's answer for bad parameters)."""
    return _qb.where(valid, value, _qb.full_like(value, math.nan))


def _log_prob(p, q):
    """log p for a probability p whose complement q = 1 - p is known just as accurately: log p
    itself while p <= 1/2, log1p(-q) above it (where log p would lose the digits of a small q).
    Each branch only sees safe values, so gradients stay finite in the branch not taken."""
    direct = p <= 0.5  # (NaN: False, and log1p(-NaN) is NaN)
    p_safe = _qb.where(direct, p, _qb.ones_like(p))
    q_safe = _qb.where(direct, _qb.zeros_like(q), q)
    return _qb.where(direct, _qb.log(p_safe), _qb.log1p(-q_safe))


def _log_prob_from_logs(log_p, log_q):
    """log p given accurate logs of p and of its complement q = 1 - p: log p itself up to
    p = 1/2, log1p(-exp(log q)) above (log p near 0 then keeps q's relative accuracy)."""
    direct = log_p < -math.log(2.0)
    q_safe = _qb.where(direct, _qb.full_like(log_q, -1.0), log_q)
    return _qb.where(direct, log_p, _qb.log1p(-_qb.exp(q_safe)))


def _log1mexp(t):
    """log(1 - exp(-t)) for t >= 0: log(-expm1(-t)) below log 2, log1p(-exp(-t)) above, each
    where it is exact (-inf at t = 0, 0 at t = inf)."""
    small = t < math.log(2.0)
    t_small = _qb.where(small, t, _qb.ones_like(t))
    t_large = _qb.where(small, _qb.ones_like(t), t)
    return _qb.where(small, _qb.log(-_qb.expm1(-t_small)), _qb.log1p(-_qb.exp(-t_large)))


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


def _expon_logcdf(x, loc=0.0, scale=1.0):
    z, _ = _std(x, loc, scale)
    inside = z >= 0
    value = _log1mexp(_qb.where(inside, z, _qb.ones_like(z)))  # log(1 - e^-z)
    return _nan_where(z, _qb.where(inside, value, _qb.full_like(z, -math.inf)))


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
    logcdf=_expon_logcdf,
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


def _cauchy_tails(x, loc, scale):
    """(P(X <= x), P(X > x)) as arctan2(1, -z) / pi and arctan2(1, z) / pi: each keeps its
    relative accuracy in its own tail (0.5 + arctan(z) / pi cancels there)."""
    z, _ = _std(x, loc, scale)
    one = _qb.ones_like(z)
    return _qb.arctan2(one, -z) / math.pi, _qb.arctan2(one, z) / math.pi


def _cauchy_logcdf(x, loc=0.0, scale=1.0):
    lower, upper = _cauchy_tails(x, loc, scale)
    return _log_prob(lower, upper)


def _cauchy_logsf(x, loc=0.0, scale=1.0):
    lower, upper = _cauchy_tails(x, loc, scale)
    return _log_prob(upper, lower)


def _cauchy_isf(q, loc=0.0, scale=1.0):
    """The z with P(Z > z) = q: cot(pi q) near the ends (exact for tiny q, +-inf at q = 0 and
    1), tan(pi (1/2 - q)) in the middle (1/2 - q is exact there); NaN outside [0, 1]."""
    q, loc, scale = _f(q, loc, scale)
    upper = q > 0.5
    r = _qb.where(upper, 1.0 - q, q)  # the nearer end's distance (exact for q in [1/2, 1])
    near_end = r < 0.25
    r_end = _qb.where(near_end, r, _qb.full_like(r, 0.125))
    r_mid = _qb.where(near_end, _qb.full_like(r, 0.375), r)
    z = _qb.where(near_end, _qb.cos(math.pi * r_end) / _qb.sin(math.pi * r_end), _qb.tan(math.pi * (0.5 - r_mid)))
    z = _qb.where(upper, -z, z)
    return _nan_unless((q >= 0) & (q <= 1), loc + scale * z)


cauchy = _namespace(
    "cauchy",
    logpdf=_cauchy_logpdf,
    pdf=_with_pdf(_cauchy_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: 0.5 + _qb.arctan(_std(x, loc, scale)[0]) / math.pi,
    logcdf=_cauchy_logcdf,
    sf=lambda x, loc=0.0, scale=1.0: _cauchy_tails(x, loc, scale)[1],
    logsf=_cauchy_logsf,
    ppf=lambda q, loc=0.0, scale=1.0: (lambda q, loc, scale: loc + scale * _qb.tan(math.pi * (q - 0.5)))(
        *_f(q, loc, scale)),
    isf=_cauchy_isf,
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


def _gamma_logcdf(x, a, loc=0.0, scale=1.0):
    return _log_prob(_gamma_tail(x, a, loc, scale, False), _gamma_tail(x, a, loc, scale, True))


def _gamma_logsf(x, a, loc=0.0, scale=1.0):
    return _log_prob(_gamma_tail(x, a, loc, scale, True), _gamma_tail(x, a, loc, scale, False))


gamma = _namespace("gamma", logpdf=_gamma_logpdf, pdf=_with_pdf(_gamma_logpdf),
                   cdf=lambda x, a, loc=0.0, scale=1.0: _gamma_tail(x, a, loc, scale, False),
                   logcdf=_gamma_logcdf,
                   sf=lambda x, a, loc=0.0, scale=1.0: _gamma_tail(x, a, loc, scale, True),
                   logsf=_gamma_logsf)


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


beta = _namespace("beta", logpdf=_beta_logpdf, pdf=_with_pdf(_beta_logpdf), cdf=_beta_cdf, sf=_beta_sf,
                  logcdf=lambda x, a, b, loc=0.0, scale=1.0: _log_prob(_beta_cdf(x, a, b, loc, scale),
                                                                      _beta_sf(x, a, b, loc, scale)),
                  logsf=lambda x, a, b, loc=0.0, scale=1.0: _log_prob(_beta_sf(x, a, b, loc, scale),
                                                                     _beta_cdf(x, a, b, loc, scale)))


def _chi2_logpdf(x, df, loc=0.0, scale=1.0):
    x, df, loc, scale = _f(x, df, loc, scale)
    return _gamma_logpdf(x, 0.5 * df, loc, 2.0 * scale)


def _chi2_tail(x, df, loc, scale, upper):
    return _gamma_tail(x, 0.5 * _qb.asarray(df), loc, 2.0 * _qb.asarray(scale), upper)


chi2 = _namespace("chi2", logpdf=_chi2_logpdf, pdf=_with_pdf(_chi2_logpdf),
                  cdf=lambda x, df, loc=0.0, scale=1.0: _chi2_tail(x, df, loc, scale, False),
                  sf=lambda x, df, loc=0.0, scale=1.0: _chi2_tail(x, df, loc, scale, True),
                  logcdf=lambda x, df, loc=0.0, scale=1.0: _log_prob(_chi2_tail(x, df, loc, scale, False),
                                                                      _chi2_tail(x, df, loc, scale, True)),
                  logsf=lambda x, df, loc=0.0, scale=1.0: _log_prob(_chi2_tail(x, df, loc, scale, True),
                                                                     _chi2_tail(x, df, loc, scale, False)))


def _pareto_logpdf(x, b, loc=0.0, scale=1.0):
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    safe = _qb.where(z >= 1, z, _qb.ones_like(z))
    return _neg_inf_outside(z >= 1, _qb.log(b) - (b + 1.0) * _qb.log(safe) - _qb.log(scale))


def _pareto_cdf(x, b, loc=0.0, scale=1.0):
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    return _qb.where(z >= 1, 1.0 - _qb.maximum(z, 1.0) ** (-b), _qb.zeros_like(z))


def _pareto_z(x, b, loc, scale):
    """z = (x - loc) / scale, whether it is in the support z >= 1, and z moved to 1 outside it."""
    x, b, loc, scale = _f(x, b, loc, scale)
    z = (x - loc) / scale
    inside = z >= 1
    return z, b, inside, _qb.where(inside, z, _qb.ones_like(z))


def _pareto_sf(x, b, loc=0.0, scale=1.0):
    z, b, inside, safe = _pareto_z(x, b, loc, scale)
    return _nan_where(z, _qb.where(inside, safe ** (-b), _qb.ones_like(z)))


def _pareto_logsf(x, b, loc=0.0, scale=1.0):
    z, b, inside, safe = _pareto_z(x, b, loc, scale)
    return _nan_where(z, _qb.where(inside, -b * _qb.log(safe), _qb.zeros_like(z)))


def _pareto_logcdf(x, b, loc=0.0, scale=1.0):
    z, b, inside, safe = _pareto_z(x, b, loc, scale)
    value = _log1mexp(b * _qb.log(safe))  # log(1 - z^-b), -inf at z = 1
    return _nan_where(z, _qb.where(inside, value, _qb.full_like(z, -math.inf)))


def _pareto_ppf(q, b, loc=0.0, scale=1.0):
    q, b, loc, scale = _f(q, b, loc, scale)
    inside = (q >= 0) & (q <= 1)
    safe = _qb.where(inside, q, _qb.zeros_like(q))
    return _nan_unless(inside, loc + scale * (1.0 - safe) ** (-1.0 / b))


pareto = _namespace("pareto", logpdf=_pareto_logpdf, pdf=_with_pdf(_pareto_logpdf), cdf=_pareto_cdf,
                    logcdf=_pareto_logcdf, sf=_pareto_sf, logsf=_pareto_logsf, ppf=_pareto_ppf)


def _gumbel_r_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return -z - _qb.exp(-z) - _qb.log(scale)


def _gumbel_l_logpdf(x, loc=0.0, scale=1.0):
    z, scale = _std(x, loc, scale)
    return z - _qb.exp(z) - _qb.log(scale)


def _gumbel_ppf(p, loc, scale, left):
    """gumbel_r: loc - scale log(-log p); gumbel_l: loc + scale log(-log1p(-p)) (-inf and inf
    at the ends, NaN outside [0, 1])."""
    p, loc, scale = _f(p, loc, scale)
    inside = (p >= 0) & (p <= 1)
    safe = _qb.where(inside, p, _qb.full_like(p, 0.5))
    z = _qb.log(-_qb.log1p(-safe)) if left else -_qb.log(-_qb.log(safe))
    return _nan_unless(inside, loc + scale * z)


gumbel_r = _namespace(
    "gumbel_r",
    logpdf=_gumbel_r_logpdf,
    pdf=_with_pdf(_gumbel_r_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: _qb.exp(-_qb.exp(-_std(x, loc, scale)[0])),
    logcdf=lambda x, loc=0.0, scale=1.0: -_qb.exp(-_std(x, loc, scale)[0]),
    # 1 - exp(-e^-z) by expm1, exact in the right tail; its log by log1mexp
    sf=lambda x, loc=0.0, scale=1.0: -_qb.expm1(-_qb.exp(-_std(x, loc, scale)[0])),
    logsf=lambda x, loc=0.0, scale=1.0: _log1mexp(_qb.exp(-_std(x, loc, scale)[0])),
    ppf=lambda p, loc=0.0, scale=1.0: _gumbel_ppf(p, loc, scale, left=False),
)
gumbel_l = _namespace(
    "gumbel_l",
    logpdf=_gumbel_l_logpdf,
    pdf=_with_pdf(_gumbel_l_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: -_qb.expm1(-_qb.exp(_std(x, loc, scale)[0])),
    logcdf=lambda x, loc=0.0, scale=1.0: _log1mexp(_qb.exp(_std(x, loc, scale)[0])),
    sf=lambda x, loc=0.0, scale=1.0: _qb.exp(-_qb.exp(_std(x, loc, scale)[0])),
    logsf=lambda x, loc=0.0, scale=1.0: -_qb.exp(_std(x, loc, scale)[0]),
    ppf=lambda p, loc=0.0, scale=1.0: _gumbel_ppf(p, loc, scale, left=True),
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


def _wrapcauchy_logpdf(x, c):
    """log((1 - c^2) / (2 pi (1 + c^2 - 2 c cos x))) on 0 <= x <= 2 pi, for 0 < c < 1; the
    denominator as (1 - c)^2 + 4 c sin^2(x / 2), which does not cancel as c -> 1, x -> 0."""
    x, c = _f(x, c)
    inside = (x >= 0) & (x <= 2.0 * math.pi)
    s = _qb.sin(0.5 * x)
    value = (_qb.log1p(-c) + _qb.log1p(c) - _LOG_2PI
             - _qb.log((1.0 - c) * (1.0 - c) + 4.0 * c * (s * s)))
    return _nan_where(x, _nan_unless((c > 0) & (c < 1), _neg_inf_outside(inside, value)))


wrapcauchy = _namespace("wrapcauchy", logpdf=_wrapcauchy_logpdf, pdf=_with_pdf(_wrapcauchy_logpdf))


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


def _truncnorm_log_tails(x, a, b, loc, scale):
    """(log P(X <= x), log P(X > x)) for the normal truncated to [a, b] (standardised bounds):
    each from the log of the normal mass between two points, which is exact in either tail,
    and the one near 0 from the other's complement. -inf / 0 outside [a, b], NaN for NaN x."""
    x, a, b, loc, scale = _f(x, a, b, loc, scale)
    z = (x - loc) / scale
    inside = (z > a) & (z < b)
    # A point strictly inside [a, b] stands in for z outside it (no infinite terms, so no
    # NaN gradients, in the branch that is thrown away).
    finite_a, finite_b = _qb.isfinite(a), _qb.isfinite(b)
    mid = _qb.where(finite_a & finite_b, 0.5 * (a + b),
                    _qb.where(finite_a, a + 1.0, _qb.where(finite_b, b - 1.0, _qb.zeros_like(a))))
    zs = _qb.where(inside, z, mid)
    log_total = _log_mass_between(a, b)
    log_below = _log_mass_between(a, zs) - log_total
    log_above = _log_mass_between(zs, b) - log_total
    log_cdf = _log_prob_from_logs(log_below, log_above)
    log_sf = _log_prob_from_logs(log_above, log_below)
    below_a = z <= a
    log_cdf = _qb.where(inside, log_cdf, _qb.where(below_a, _qb.full_like(z, -math.inf), _qb.zeros_like(z)))
    log_sf = _qb.where(inside, log_sf, _qb.where(below_a, _qb.zeros_like(z), _qb.full_like(z, -math.inf)))
    return _nan_where(z, log_cdf), _nan_where(z, log_sf)


truncnorm = _namespace(
    "truncnorm",
    logpdf=_truncnorm_logpdf,
    pdf=_with_pdf(_truncnorm_logpdf),
    cdf=_truncnorm_cdf,
    logcdf=lambda x, a, b, loc=0.0, scale=1.0: _truncnorm_log_tails(x, a, b, loc, scale)[0],
    sf=lambda x, a, b, loc=0.0, scale=1.0: _qb.exp(_truncnorm_log_tails(x, a, b, loc, scale)[1]),
    logsf=lambda x, a, b, loc=0.0, scale=1.0: _truncnorm_log_tails(x, a, b, loc, scale)[1],
)


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


# The entropy's asymptotic series, H(mu) = log(2 pi e mu) / 2 + sum_j c_j mu^-j: its exact
# rational coefficients follow from E[log K!] expanded in the Poisson central moments, with
# Stirling's series for the derivatives of log Gamma. Twelve terms are below double rounding
# from mu = 50 on; below that the defining sum is taken term by term.
_POISSON_ENTROPY_SERIES = (
    -1 / 12, -1 / 24, -19 / 360, -9 / 80, -863 / 2520, -1375 / 1008, -33953 / 5040, -57281 / 1440,
    -3250433 / 11880, -378351 / 176, -13695779093 / 720720, -24466579093 / 131040)
_POISSON_ENTROPY_SWITCH = 50.0
_POISSON_ENTROPY_TERMS = 160  # k = 0..159: the mass above is below 1e-30 for mu < 50


def _poisson_entropy(mu, loc=0.0):
    """-sum_k p_k log p_k of Poisson(mu) (loc shifts the support, not the entropy): the sum
    itself for mu < 50, the asymptotic series above; NaN for mu < 0."""
    mu, loc = _f(mu, loc)
    mu = mu + _qb.zeros_like(loc)  # (the broadcast shape of both)
    small = mu < _POISSON_ENTROPY_SWITCH
    # The direct sum, on mu moved into [0, 50) (the other branch is thrown away there).
    m = _qb.where(small & (mu >= 0), mu, _qb.ones_like(mu))[..., None]
    k = _qb.arange(_POISSON_ENTROPY_TERMS).astype(mu.dtype)
    log_p = _sp.xlogy(k, m) - m - _sp.gammaln(k + 1.0)
    p = _qb.exp(log_p)
    direct = _qb.sum(_qb.where(p > 0, -p * log_p, _qb.zeros_like(p)), axis=-1)
    # The series, on mu moved to >= 50.
    big = _qb.where(small, _qb.full_like(mu, _POISSON_ENTROPY_SWITCH), mu)
    inv = 1.0 / big
    tail = _qb.zeros_like(big)
    for c in reversed(_POISSON_ENTROPY_SERIES):  # Horner in 1/mu
        tail = (tail + c) * inv
    series = 0.5 * (_qb.log(2.0 * math.pi * big) + 1.0) + tail
    return _nan_unless(mu >= 0, _qb.where(small, direct, series))


poisson = _namespace("poisson", logpmf=_poisson_logpmf, pmf=_with_pdf(_poisson_logpmf),
                     cdf=lambda k, mu, loc=0.0: _poisson_tail(k, mu, loc, False),
                     sf=lambda k, mu, loc=0.0: _poisson_tail(k, mu, loc, True),
                     entropy=_poisson_entropy)


def _bernoulli_logpmf(k, p, loc=0.0):
    k, p, loc = _f(k, p, loc)
    k = k - loc
    valid = (k == 0) | (k == 1)
    safe = _qb.where(valid, k, _qb.zeros_like(k))
    return _neg_inf_outside(valid, _sp.xlogy(safe, p) + _sp.xlog1py(1.0 - safe, -p))


def _bernoulli_cdf(k, p, loc=0.0):
    k, p, loc = _f(k, p, loc)
    k = _qb.floor(k - loc)
    value = _qb.where(k < 0, _qb.zeros_like(k), _qb.where(k >= 1, _qb.ones_like(k), 1.0 - p))
    return _nan_where(k, _nan_unless((p >= 0) & (p <= 1), value))


def _bernoulli_ppf(q, p, loc=0.0):
    """The least k with cdf(k) >= q, as SciPy: -1 at q = 0 (one below the support), 1 at q = 1,
    else 0 while q <= 1 - p; NaN for q outside [0, 1] or p outside [0, 1]."""
    q, p, loc = _f(q, p, loc)
    value = _qb.where(q <= 1.0 - p, _qb.zeros_like(q), _qb.ones_like(q))
    value = _qb.where(q == 0, _qb.full_like(q, -1.0), _qb.where(q == 1, _qb.ones_like(q), value))
    return _nan_unless((q >= 0) & (q <= 1) & (p >= 0) & (p <= 1), value + loc)


bernoulli = _namespace("bernoulli", logpmf=_bernoulli_logpmf, pmf=_with_pdf(_bernoulli_logpmf),
                       cdf=_bernoulli_cdf, ppf=_bernoulli_ppf)


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


def _betabinom_logpmf(k, n, a, b, loc=0.0):
    """log of C(n, k) B(k + a, n - k + b) / B(a, b) on k = 0..n, with C(n, k) written as
    1 / ((n + 1) B(n - k + 1, k + 1)); -inf off the support, NaN unless n is a whole number
    >= 0 and a, b > 0 (as SciPy)."""
    k, n, a, b, loc = _f(k, n, a, b, loc)
    k = k - loc
    valid = _is_integer(k) & (k >= 0) & (k <= n)
    safe = _qb.where(valid, k, _qb.zeros_like(k))
    n_safe = _qb.where(valid, n, safe)
    value = (-_qb.log1p(n_safe) - _sp.betaln(n_safe - safe + 1.0, safe + 1.0)
             + _sp.betaln(safe + a, n_safe - safe + b) - _sp.betaln(a, b))
    good = _is_integer(n) & (n >= 0) & (a > 0) & (b > 0)
    return _nan_where(k, _nan_unless(good, _neg_inf_outside(valid, value)))


betabinom = _namespace("betabinom", logpmf=_betabinom_logpmf, pmf=_with_pdf(_betabinom_logpmf))


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


# ---- summary statistics ----------------------------------------------------------------------

ModeResult = namedtuple("ModeResult", ("mode", "count"))
ModeResult.__module__ = "quabla.scipy.stats"


def _check_nan_policy(fname, a, nan_policy, allowed):
    """Rejects an unknown nan_policy; for 'raise', a ValueError when a holds a NaN (which needs
    a concrete a: under qb.jit the check cannot run, and says so)."""
    if nan_policy not in allowed:
        choices = ", ".join(repr(p) for p in allowed)
        raise ValueError(f"{fname}: nan_policy must be one of {choices}, got {nan_policy!r}")
    if nan_policy == "raise" and _qb.issubdtype(a.dtype, _qb.floating):
        try:
            has_nan = bool(_qb.any(_qb.isnan(a)))
        except _qb.errors.TracerError:
            raise ValueError(f"{fname}: nan_policy='raise' must look at the values, which are traced here (inside "
                             "qb.jit or a transform); check for NaN outside, or use 'propagate' or 'omit'") from None
        if has_nan:
            raise ValueError(f"{fname}: the input contains NaN (nan_policy='raise')")


def _axis_last(fname, a, axis):
    """a with `axis` moved last (a flattened when axis is None), and the axis normalised."""
    if axis is None:
        return a.reshape(-1), None
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{fname}: axis must be an int or None, got {type(axis).__name__}")
    if a.ndim == 0 or not -a.ndim <= axis < a.ndim:
        raise ValueError(f"{fname}: axis {axis} is out of bounds for an array of {a.ndim} dimensions "
                         "(axis=None ranks the flattened array)")
    axis %= a.ndim
    return _qb.moveaxis(a, axis, -1), axis


def _tie_runs(sorted_x, same_as_previous):
    """For values sorted along the last axis, with same_as_previous[..., i] telling whether
    entry i + 1 ties entry i: the position of the first and of the last entry of the run of
    ties each entry belongs to."""
    n = sorted_x.shape[-1]
    pos = _qb.broadcast_to(_qb.arange(n), tuple(sorted_x.shape))
    true = _qb.ones(tuple(sorted_x.shape[:-1]) + (1,), dtype=_qb.bool_)
    starts = _qb.concatenate([true, ~same_as_previous], axis=-1)  # a run begins here
    ends = _qb.concatenate([~same_as_previous, true], axis=-1)  # a run ends here
    first = _qb.lax.cummax(_qb.where(starts, pos, _qb.zeros_like(pos)), axis=sorted_x.ndim - 1)
    last = _qb.lax.cummin(_qb.where(ends, pos, _qb.full_like(pos, n - 1)), axis=sorted_x.ndim - 1, reverse=True)
    return first, last, starts


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a, method: str = "average", *, axis=None, nan_policy: str = "propagate"):
    """The ranks (from 1) of a's entries along axis (of the flattened array when axis is None),
    ties resolved by method: 'average' (the mean of the tied ranks), 'min', 'max', 'dense' (the
    next integer after the previous distinct value) or 'ordinal' (by position). Floats, as JAX.
    nan_policy 'propagate' (a NaN makes its whole slice NaN, as JAX and SciPy), 'omit' (NaN
    entries rank NaN, the others rank among themselves, as SciPy) or 'raise'."""
    if method not in _RANK_METHODS:
        raise ValueError(f"rankdata: unknown method {method!r}; use one of {', '.join(_RANK_METHODS)}")
    a = _qb.asarray(a)
    from .._numpy_extra import _no_complex
    _no_complex("qb.scipy.stats.rankdata", a, hint="complex numbers have no order")
    _check_nan_policy("rankdata", a, nan_policy, ("propagate", "omit", "raise"))
    x, axis = _axis_last("rankdata", a, axis)
    dtype = _qb.default_dtype()
    if x.shape[-1] == 0:
        ranks = _qb.zeros(tuple(x.shape), dtype=dtype)
    else:
        order = _qb.argsort(x, axis=-1, stable=True)  # NaN last
        s = _qb.take_along_axis(x, order, axis=-1)
        first, last, starts = _tie_runs(s, s[..., 1:] == s[..., :-1])
        if method == "ordinal":
            in_order = _qb.broadcast_to(_qb.arange(1, x.shape[-1] + 1), tuple(x.shape))
        elif method == "dense":
            in_order = _qb.cumsum(starts.astype(_qb.int64), axis=-1)
        elif method == "min":
            in_order = first + 1
        elif method == "max":
            in_order = last + 1
        else:
            in_order = (first + last).astype(dtype) * 0.5 + 1.0
        # Back from sorted order to the entries' own places (the inverse permutation).
        ranks = _qb.take_along_axis(in_order.astype(dtype), _qb.argsort(order, axis=-1), axis=-1)
        if _qb.issubdtype(x.dtype, _qb.floating):
            nan = _qb.isnan(x)
            if nan_policy == "propagate":
                nan = _qb.broadcast_to(_qb.any(nan, axis=-1, keepdims=True), tuple(x.shape))
            ranks = _qb.where(nan, _qb.full_like(ranks, math.nan), ranks)
    return ranks if axis is None else _qb.moveaxis(ranks, -1, axis)


def _reduce_axes(fname, a, axis):
    """The axes a reduction over `axis` covers (None: all), checked."""
    if axis is None:
        return tuple(range(a.ndim))
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{fname}: axis must be an int or None, got {type(axis).__name__}")
    if not -a.ndim <= axis < a.ndim or a.ndim == 0:
        raise ValueError(f"{fname}: axis {axis} is out of bounds for an array of {a.ndim} dimensions "
                         "(axis=None uses all entries)")
    return (axis % a.ndim,)


def sem(a, axis=0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
    """The standard error of the mean, std(a, ddof) / sqrt(n), along axis (all entries when
    None). nan_policy 'propagate' (NaN in, NaN out) or 'omit' (the NaNs left out of n, the mean
    and the deviations), as JAX; NaN where n - ddof <= 0."""
    if nan_policy not in ("propagate", "omit"):
        raise ValueError(f"sem: nan_policy must be 'propagate' or 'omit', got {nan_policy!r} (as in JAX)")
    a = _f(a)[0]
    axes = _reduce_axes("sem", a, axis)
    if nan_policy == "omit":
        valid = ~_qb.isnan(a)
        count = _qb.sum(valid.astype(a.dtype), axis=axes, keepdims=True)
        total = _qb.sum(_qb.where(valid, a, _qb.zeros_like(a)), axis=axes, keepdims=True)
        mean = total / count
        dev = _qb.where(valid, a - mean, _qb.zeros_like(a))
    else:
        count = _qb.full((1,) * a.ndim, float(math.prod(a.shape[i] for i in axes)), dtype=a.dtype)
        dev = a - _qb.mean(a, axis=axes, keepdims=True)
    dof = count - ddof
    var = _qb.sum(dev * dev, axis=axes, keepdims=True) / _qb.where(dof > 0, dof, _qb.ones_like(dof))
    out = _nan_unless(dof > 0, _qb.sqrt(var / count))
    out = _qb.broadcast_to(out, tuple(1 if i in axes else a.shape[i] for i in range(a.ndim)))
    return out if keepdims else out.reshape(tuple(a.shape[i] for i in range(a.ndim) if i not in axes))


def mode(a, axis=0, nan_policy: str = "propagate", keepdims: bool = False):
    """The most common value along axis (of the flattened array when None) and how often it
    occurs, as ModeResult(mode, count); ties go to the smallest value, NaNs count as equal to
    one another (as JAX and SciPy). nan_policy 'propagate', 'omit' (NaNs not counted; an all-NaN
    slice gives NaN, 0, as SciPy) or 'raise'. An empty slice gives NaN and a count of 0."""
    a = _qb.asarray(a)
    from .._numpy_extra import _no_complex
    _no_complex("qb.scipy.stats.mode", a, hint="complex numbers have no order")
    _check_nan_policy("mode", a, nan_policy, ("propagate", "omit", "raise"))
    ndim = a.ndim
    if ndim == 0:
        a, ndim = a.reshape(1), 1
        axis = 0 if axis is not None else None
    x, axis = _axis_last("mode", a, axis)
    n = x.shape[-1]
    is_float = _qb.issubdtype(x.dtype, _qb.floating)
    if n == 0:  # nothing to count: NaN and 0 (floats both, as JAX and SciPy)
        dtype = x.dtype if is_float else _qb.default_dtype()
        value = _qb.full(tuple(x.shape[:-1]), math.nan, dtype=dtype)
        count = _qb.zeros(tuple(x.shape[:-1]), dtype=dtype)
    else:
        s = _qb.sort(x, axis=-1)  # NaN last
        same = s[..., 1:] == s[..., :-1]
        if is_float:
            same = same | (_qb.isnan(s[..., 1:]) & _qb.isnan(s[..., :-1]))
        first, last, _ = _tie_runs(s, same)
        counts = last - first + 1  # at each entry: the size of its run of equal values
        if nan_policy == "omit" and is_float:
            counts = _qb.where(_qb.isnan(s), _qb.zeros_like(counts), counts)
        best = _qb.argmax(counts, axis=-1)[..., None]  # the first largest run: the smallest value
        value = _qb.take_along_axis(s, best, axis=-1)[..., 0]
        count = _qb.take_along_axis(counts, best, axis=-1)[..., 0]
    if keepdims:
        if axis is None:
            value, count = value.reshape((1,) * ndim), count.reshape((1,) * ndim)
        else:
            value, count = _qb.expand_dims(value, axis), _qb.expand_dims(count, axis)
    return ModeResult(value, count)
