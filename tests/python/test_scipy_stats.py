"""quabla.scipy.stats against scipy.stats: log densities, densities, CDFs and quantiles at
random points (inside and outside the supports), loc/scale, the tails of the normal and
truncated normal, and gradients with respect to parameters against closed forms."""
import numpy as np
import pytest
import scipy.special as ss
import scipy.stats as S

import quabla as qb
from quabla.scipy import stats as Q

rng = np.random.default_rng(0)
X = rng.normal(size=40) * 2 + 0.5
POS = np.abs(X) + 0.1
U = rng.uniform(0.001, 0.999, 40)
K = np.arange(-2, 15).astype(float)
A = qb.asarray

CASES = [
    ("norm.logpdf", lambda: Q.norm.logpdf(A(X), 0.3, 1.7), lambda: S.norm.logpdf(X, 0.3, 1.7)),
    ("norm.pdf", lambda: Q.norm.pdf(A(X), 0.3, 1.7), lambda: S.norm.pdf(X, 0.3, 1.7)),
    ("norm.cdf", lambda: Q.norm.cdf(A(X), 0.3, 1.7), lambda: S.norm.cdf(X, 0.3, 1.7)),
    ("norm.logcdf tails", lambda: Q.norm.logcdf(A(X * 10)), lambda: S.norm.logcdf(X * 10)),
    ("norm.sf", lambda: Q.norm.sf(A(X)), lambda: S.norm.sf(X)),
    ("norm.logsf tails", lambda: Q.norm.logsf(A(X * 10)), lambda: S.norm.logsf(X * 10)),
    ("norm.ppf", lambda: Q.norm.ppf(A(U), 1.0, 2.0), lambda: S.norm.ppf(U, 1.0, 2.0)),
    ("norm.isf", lambda: Q.norm.isf(A(U)), lambda: S.norm.isf(U)),
    ("uniform.logpdf", lambda: Q.uniform.logpdf(A(X), -1.0, 3.0), lambda: S.uniform.logpdf(X, -1.0, 3.0)),
    ("uniform.cdf", lambda: Q.uniform.cdf(A(X), -1.0, 3.0), lambda: S.uniform.cdf(X, -1.0, 3.0)),
    ("uniform.ppf", lambda: Q.uniform.ppf(A(U), -1.0, 3.0), lambda: S.uniform.ppf(U, -1.0, 3.0)),
    ("expon.logpdf", lambda: Q.expon.logpdf(A(X), 0.2, 1.5), lambda: S.expon.logpdf(X, 0.2, 1.5)),
    ("expon.cdf", lambda: Q.expon.cdf(A(X), 0.2, 1.5), lambda: S.expon.cdf(X, 0.2, 1.5)),
    ("expon.sf", lambda: Q.expon.sf(A(X), 0.2, 1.5), lambda: S.expon.sf(X, 0.2, 1.5)),
    ("expon.ppf", lambda: Q.expon.ppf(A(U), 0.2, 1.5), lambda: S.expon.ppf(U, 0.2, 1.5)),
    ("laplace.logpdf", lambda: Q.laplace.logpdf(A(X), 0.2, 1.5), lambda: S.laplace.logpdf(X, 0.2, 1.5)),
    ("laplace.cdf", lambda: Q.laplace.cdf(A(X), 0.2, 1.5), lambda: S.laplace.cdf(X, 0.2, 1.5)),
    ("logistic.logpdf", lambda: Q.logistic.logpdf(A(X * 30), 0.2, 1.5), lambda: S.logistic.logpdf(X * 30, 0.2, 1.5)),
    ("logistic.cdf", lambda: Q.logistic.cdf(A(X), 0.2, 1.5), lambda: S.logistic.cdf(X, 0.2, 1.5)),
    ("logistic.ppf", lambda: Q.logistic.ppf(A(U), 0.2, 1.5), lambda: S.logistic.ppf(U, 0.2, 1.5)),
    ("logistic.isf", lambda: Q.logistic.isf(A(U), 0.2, 1.5), lambda: S.logistic.isf(U, 0.2, 1.5)),
    ("cauchy.logpdf", lambda: Q.cauchy.logpdf(A(X), 0.2, 1.5), lambda: S.cauchy.logpdf(X, 0.2, 1.5)),
    ("cauchy.cdf", lambda: Q.cauchy.cdf(A(X), 0.2, 1.5), lambda: S.cauchy.cdf(X, 0.2, 1.5)),
    ("cauchy.ppf", lambda: Q.cauchy.ppf(A(U), 0.2, 1.5), lambda: S.cauchy.ppf(U, 0.2, 1.5)),
    ("t.logpdf", lambda: Q.t.logpdf(A(X), 3.5, 0.2, 1.5), lambda: S.t.logpdf(X, 3.5, 0.2, 1.5)),
    ("gamma.logpdf", lambda: Q.gamma.logpdf(A(X), 2.5, 0.1, 1.5), lambda: S.gamma.logpdf(X, 2.5, 0.1, 1.5)),
    ("gamma.logpdf a<1", lambda: Q.gamma.logpdf(A(POS), 0.5), lambda: S.gamma.logpdf(POS, 0.5)),
    ("beta.logpdf", lambda: Q.beta.logpdf(A(U), 2.5, 0.7), lambda: S.beta.logpdf(U, 2.5, 0.7)),
    ("beta.logpdf scaled", lambda: Q.beta.logpdf(A(X), 2.5, 0.7, -1.0, 3.0), lambda: S.beta.logpdf(X, 2.5, 0.7, -1.0, 3.0)),
    ("chi2.logpdf", lambda: Q.chi2.logpdf(A(POS), 3.0), lambda: S.chi2.logpdf(POS, 3.0)),
    ("pareto.logpdf", lambda: Q.pareto.logpdf(A(POS * 2), 2.5), lambda: S.pareto.logpdf(POS * 2, 2.5)),
    ("gumbel_r.logpdf", lambda: Q.gumbel_r.logpdf(A(X), 0.2, 1.5), lambda: S.gumbel_r.logpdf(X, 0.2, 1.5)),
    ("gumbel_r.cdf", lambda: Q.gumbel_r.cdf(A(X), 0.2, 1.5), lambda: S.gumbel_r.cdf(X, 0.2, 1.5)),
    ("gumbel_l.logpdf", lambda: Q.gumbel_l.logpdf(A(X), 0.2, 1.5), lambda: S.gumbel_l.logpdf(X, 0.2, 1.5)),
    ("gumbel_l.cdf", lambda: Q.gumbel_l.cdf(A(X), 0.2, 1.5), lambda: S.gumbel_l.cdf(X, 0.2, 1.5)),
    ("gennorm.logpdf", lambda: Q.gennorm.logpdf(A(X), 1.3, 0.2, 1.5), lambda: S.gennorm.logpdf(X, 1.3, 0.2, 1.5)),
    ("poisson.logpmf", lambda: Q.poisson.logpmf(A(K), 3.3), lambda: S.poisson.logpmf(K, 3.3)),
    ("poisson.pmf off-integer", lambda: Q.poisson.pmf(A(K + 0.5), 3.3), lambda: S.poisson.pmf(K + 0.5, 3.3)),
    ("bernoulli.logpmf", lambda: Q.bernoulli.logpmf(A(K), 0.3), lambda: S.bernoulli.logpmf(K, 0.3)),
    ("binom.logpmf", lambda: Q.binom.logpmf(A(K), 10, 0.3), lambda: S.binom.logpmf(K, 10, 0.3)),
    ("geom.logpmf", lambda: Q.geom.logpmf(A(K), 0.3), lambda: S.geom.logpmf(K, 0.3)),
    ("nbinom.logpmf", lambda: Q.nbinom.logpmf(A(K), 4.5, 0.3), lambda: S.nbinom.logpmf(K, 4.5, 0.3)),
]


@pytest.mark.parametrize("name, got, expected", CASES, ids=[c[0] for c in CASES])
def test_against_scipy(name, got, expected):
    np.testing.assert_allclose(np.asarray(got()), expected(), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("a, b", [(-1.0, 2.0), (3.0, 6.0), (-8.0, -5.0), (-0.5, 0.5), (10.0, 12.0)])
def test_truncnorm_in_both_tails(a, b):
    z = np.linspace(a - 0.5, b + 0.5, 30)
    np.testing.assert_allclose(Q.truncnorm.logpdf(A(z), a, b).numpy(), S.truncnorm.logpdf(z, a, b), rtol=1e-11)
    np.testing.assert_allclose(Q.truncnorm.cdf(A(z), a, b).numpy(), S.truncnorm.cdf(z, a, b), rtol=1e-10, atol=1e-15)


def test_multivariate():
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    pts = rng.normal(size=(7, 3))
    np.testing.assert_allclose(Q.multivariate_normal.logpdf(A(pts), A(mean), A(cov)).numpy(),
                               S.multivariate_normal.logpdf(pts, mean, cov), rtol=1e-13)
    np.testing.assert_allclose(Q.multivariate_normal.pdf(A(pts[0]), A(mean), A(cov)).numpy(),
                               S.multivariate_normal.pdf(pts[0], mean, cov), rtol=1e-13)
    np.testing.assert_allclose(Q.multivariate_normal.logpdf(A(0.3), A(0.1), A(2.0)).numpy(),
                               S.multivariate_normal.logpdf(0.3, 0.1, 2.0), rtol=1e-13)
    xs = np.array([[2.0, 3.0, 5.0], [1.0, 1.0, 8.0], [2.0, 2.0, 5.0]])
    np.testing.assert_allclose(Q.multinomial.logpmf(A(xs), 10, A([0.2, 0.3, 0.5])).numpy(),
                               S.multinomial.logpmf(xs, 10, [0.2, 0.3, 0.5]), rtol=1e-13)
    alpha = np.array([1.5, 2.0, 0.7])
    xd = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]).T
    np.testing.assert_allclose(Q.dirichlet.logpdf(A(xd), A(alpha)).numpy(), S.dirichlet.logpdf(xd, alpha), rtol=1e-13)
    with pytest.raises(ValueError, match="mean must have shape"):
        Q.multivariate_normal.logpdf(A(pts), A(mean[:2]), A(cov))


def test_gradients_and_jit():
    g = qb.grad(lambda m: Q.norm.logpdf(A(X), m, 1.7).sum())(A(0.3))
    np.testing.assert_allclose(float(g.item()), ((X - 0.3) / 1.7 ** 2).sum(), rtol=1e-13)
    g = qb.grad(lambda a: Q.gamma.logpdf(A(POS), a).sum())(A(2.5))
    np.testing.assert_allclose(float(g.item()), (np.log(POS) - ss.digamma(2.5)).sum(), rtol=1e-12)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    gm = qb.grad(lambda m: Q.multivariate_normal.logpdf(A([0.5, 0.1]), m, A(cov)))(A([0.0, 0.0])).numpy()
    np.testing.assert_allclose(gm, np.linalg.solve(cov, [0.5, 0.1]), rtol=1e-13)
    np.testing.assert_allclose(qb.jit(lambda v: Q.t.logpdf(v, 3.0))(A(X)).numpy(), S.t.logpdf(X, 3.0), rtol=1e-12)
    np.testing.assert_allclose(qb.vmap(lambda s: Q.norm.logpdf(A(1.0), 0.0, s))(A([1.0, 2.0])).numpy(),
                               S.norm.logpdf(1.0, 0.0, [1.0, 2.0]), rtol=1e-13)


CDF_CASES = [
    ("gamma.cdf", lambda: Q.gamma.cdf(A(X), 2.5, 0.1, 1.5), lambda: S.gamma.cdf(X, 2.5, 0.1, 1.5)),
    ("gamma.sf", lambda: Q.gamma.sf(A(POS), 0.7), lambda: S.gamma.sf(POS, 0.7)),
    ("chi2.cdf", lambda: Q.chi2.cdf(A(POS * 3), 4.0), lambda: S.chi2.cdf(POS * 3, 4.0)),
    ("chi2.sf", lambda: Q.chi2.sf(A(POS * 3), 4.0), lambda: S.chi2.sf(POS * 3, 4.0)),
    ("t.cdf", lambda: Q.t.cdf(A(X), 3.5, 0.2, 1.5), lambda: S.t.cdf(X, 3.5, 0.2, 1.5)),
    ("beta.cdf", lambda: Q.beta.cdf(A(X), 2.5, 0.7, -1.0, 3.0), lambda: S.beta.cdf(X, 2.5, 0.7, -1.0, 3.0)),
    ("pareto.cdf", lambda: Q.pareto.cdf(A(POS * 2), 2.5), lambda: S.pareto.cdf(POS * 2, 2.5)),
    ("gennorm.cdf", lambda: Q.gennorm.cdf(A(X), 1.3, 0.2, 1.5), lambda: S.gennorm.cdf(X, 1.3, 0.2, 1.5)),
    ("vonmises.logpdf", lambda: Q.vonmises.logpdf(A(X), 2.5), lambda: S.vonmises.logpdf(X, 2.5)),
    ("poisson.cdf", lambda: Q.poisson.cdf(A(K + 0.5), 3.3), lambda: S.poisson.cdf(K + 0.5, 3.3)),
    ("poisson.sf", lambda: Q.poisson.sf(A(K), 3.3), lambda: S.poisson.sf(K, 3.3)),
    ("binom.cdf", lambda: Q.binom.cdf(A(K), 10, 0.3), lambda: S.binom.cdf(K, 10, 0.3)),
    ("geom.cdf", lambda: Q.geom.cdf(A(K), 0.3), lambda: S.geom.cdf(K, 0.3)),
    ("nbinom.cdf", lambda: Q.nbinom.cdf(A(K), 4.5, 0.3), lambda: S.nbinom.cdf(K, 4.5, 0.3)),
]


@pytest.mark.parametrize("name, got, expected", CDF_CASES, ids=[c[0] for c in CDF_CASES])
def test_cdfs_against_scipy(name, got, expected):
    np.testing.assert_allclose(np.asarray(got()), expected(), rtol=1e-11, atol=1e-15)


def test_review_tails_nans_float32_and_gradients():
    np.testing.assert_allclose(Q.poisson.sf(A(30.0), 3.0).item(), S.poisson.sf(30, 3), rtol=1e-12)
    np.testing.assert_allclose(Q.binom.sf(A(9.0), 10, 0.01).item(), S.binom.sf(9, 10, 0.01), rtol=1e-12)
    np.testing.assert_allclose(Q.beta.sf(A(0.999), 2, 3).item(), S.beta.sf(0.999, 2, 3), rtol=1e-12)
    np.testing.assert_allclose(Q.t.sf(A(1e3), 3.0).item(), S.t.sf(1e3, 3), rtol=1e-12)
    np.testing.assert_allclose(Q.gennorm.cdf(A(-5.0), 2.0).item(), S.gennorm.cdf(-5.0, 2.0), rtol=1e-12)
    np.testing.assert_allclose(Q.t.cdf(A([1e-8, -1e-9]), 3.0).numpy(), S.t.cdf([1e-8, -1e-9], 3), rtol=1e-15)
    np.testing.assert_allclose(qb.grad(lambda x: Q.t.cdf(x, 3.0))(A(0.0)).item(), S.t.pdf(0, 3), rtol=1e-13)
    np.testing.assert_allclose(qb.grad(lambda x: Q.gennorm.cdf(x, 2.0))(A(0.0)).item(), S.gennorm.pdf(0, 2), rtol=1e-13)
    assert Q.expon.logsf(A(800.0)).item() == -800.0 and qb.grad(Q.expon.logsf)(A(800.0)).item() == -1.0
    assert np.isnan(Q.expon.ppf(A(-0.1)).item())
    np.testing.assert_allclose(Q.norm.isf(A(1e-20)).item(), S.norm.isf(1e-20), rtol=1e-13)
    for value in (Q.binom.cdf(A(np.nan), 10.0, 0.3), Q.poisson.cdf(A(np.nan), 3.0), Q.poisson.sf(A(np.nan), 3.0),
                  Q.expon.cdf(A(np.nan)), Q.beta.logpdf(A(np.nan), 2.0, 3.0), Q.uniform.logpdf(A(np.nan))):
        assert np.isnan(value.item())
    f32 = qb.ones(3, dtype=qb.float32)
    assert Q.norm.logpdf(f32).dtype == qb.float32 and Q.gamma.cdf(f32, 2.0).dtype == qb.float32
    np.testing.assert_allclose(Q.dirichlet.logpdf(A([0.2, 0.3]), A([1.5, 2.0, 0.7])).item(),
                               S.dirichlet.logpdf([0.2, 0.3, 0.5], [1.5, 2.0, 0.7]), rtol=1e-13)
