"""The rest of jax.scipy.stats and jax.scipy.signal in quabla.scipy, against JAX itself (x64,
float64) and, where JAX is less accurate than SciPy or departs from it, against SciPy (and a
few mpmath reference values): the new distribution methods, betabinom and wrapcauchy,
rankdata, sem, mode, gaussian_kde, fftconvolve, detrend, stft, istft, welch and csd, with
gradients (qb.grad against jax.grad) and qb.jit."""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.signal as JSIG  # noqa: E402
import jax.scipy.stats as JS  # noqa: E402
import scipy.signal as SSIG  # noqa: E402
import scipy.stats as S  # noqa: E402

import quabla as qb  # noqa: E402
from quabla.scipy import signal as QSIG  # noqa: E402
from conftest import jax_x64_mode  # noqa: E402
from quabla.scipy import stats as Q  # noqa: E402
from quabla.scipy._spectral import get_window  # noqa: E402

A = qb.asarray


@pytest.fixture(autouse=True, scope="module")
def _x64():
    """JAX (and Quabla) in x64 mode for this module, restored after."""
    with jax_x64_mode():
        yield


def close(got, expected, rtol=1e-12, atol=0.0, scaled=None):
    """Same shape, same NaNs and infinities, values within rtol (or, with `scaled`, within
    scaled times the largest magnitude expected: for spectra and FFT results)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if scaled is not None:
        rtol, atol = 0.0, scaled * float(np.max(np.abs(expected))) if expected.size else 0.0
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def jax_batch(thunks):
    """JAX's results for a list of argument-free functions, computed as one jax.jit program:
    one compilation instead of JAX's many op-by-op ones (which would take minutes here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = jax.jit(lambda: [thunk() for thunk in thunks])()
    return jax.tree_util.tree_map(np.asarray, out)


rng = np.random.default_rng(7)
XS = rng.normal(size=25) * 2.0  # moderate points, where JAX is accurate
POS = np.abs(XS) + 0.05
UNIT = rng.uniform(0.02, 0.98, 25)
KS = np.arange(-1.0, 12.0)

# ---- distributions: the new methods against JAX at moderate points --------------------------------

JAX_CASES = [
    ("bernoulli.cdf", (np.array([-1.0, -0.5, 0.0, 0.3, 1.0, 2.0]), 0.3), 1e-15),
    ("bernoulli.ppf", (UNIT, 0.3), 0.0),
    ("beta.logcdf", (UNIT, 2.5, 0.7), 1e-12),
    ("beta.logsf", (UNIT, 2.5, 0.7), 1e-12),
    ("beta.logcdf", (XS, 2.5, 1.7, -4.0, 9.0), 1e-11),
    ("cauchy.sf", (XS, 0.2, 1.5), 1e-12),
    ("cauchy.logcdf", (XS, 0.2, 1.5), 1e-12),
    ("cauchy.logsf", (XS, 0.2, 1.5), 1e-12),
    ("cauchy.isf", (UNIT, 0.2, 1.5), 1e-12),
    ("chi2.logcdf", (POS * 2, 3.0), 1e-12),
    ("chi2.logsf", (POS * 2, 3.0), 1e-12),
    ("expon.logcdf", (XS, -0.5, 1.5), 1e-12),
    ("gamma.logcdf", (POS * 2, 2.5, 0.1, 1.5), 1e-12),
    ("gamma.logsf", (POS * 2, 2.5, 0.1, 1.5), 1e-10),  # JAX's log(Q) loses 3e-11 where Q ~ 1; SciPy below
    ("gumbel_l.logcdf", (XS, 0.2, 1.5), 1e-12),
    ("gumbel_l.sf", (XS, 0.2, 1.5), 1e-12),
    ("gumbel_l.ppf", (UNIT, 0.2, 1.5), 1e-12),
    ("gumbel_r.logsf", (XS, 0.2, 1.5), 1e-12),
    ("gumbel_r.sf", (XS, 0.2, 1.5), 1e-12),
    ("gumbel_r.ppf", (UNIT, 0.2, 1.5), 1e-12),
    ("pareto.logcdf", (POS * 3, 2.5, 0.1, 0.7), 1e-12),
    ("pareto.logsf", (POS * 3, 2.5, 0.1, 0.7), 1e-12),
    ("pareto.sf", (POS * 3, 2.5), 1e-12),
    ("pareto.ppf", (UNIT, 2.5, 0.2, 0.7), 1e-12),
    ("poisson.entropy", (np.array([0.0, 1e-3, 0.5, 3.3, 12.0, 30.0]),), 1e-11),
    ("truncnorm.logcdf", (XS / 2, -1.0, 2.0, 0.1, 1.1), 1e-12),
    ("truncnorm.logsf", (XS / 2, -1.0, 2.0, 0.1, 1.1), 1e-12),
    ("truncnorm.sf", (XS / 2, -1.0, 2.0, 0.1, 1.1), 1e-12),
    ("truncnorm.logcdf", (np.linspace(9.5, 12.5, 9), 10.0, 12.0), 1e-13),  # the upper tail
    ("truncnorm.logsf", (np.linspace(-12.5, -9.5, 9), -12.0, -10.0), 1e-13),  # the lower tail
    ("wrapcauchy.logpdf", (np.array([-1.0, 0.0, 0.5, 3.0, 2 * np.pi, 7.0]), 0.3), 1e-13),
    ("wrapcauchy.pdf", (POS, 0.6), 1e-13),
    # JAX's betaln is good to about 1e-6 only here (SciPy's and Quabla's to 1e-14, see below).
    ("betabinom.logpmf", (KS, 10.0, 2.5, 0.7), 5e-6),
    ("betabinom.pmf", (KS, 10.0, 2.5, 0.7, 1.0), 5e-6),
]


def _call(module, name, args):
    dist, fn = name.split(".")
    return getattr(getattr(module, dist), fn)(*args)


@pytest.fixture(scope="module")
def jax_distributions(_x64):
    return jax_batch([lambda name=name, args=args: _call(JS, name, args) for name, args, _ in JAX_CASES])


@pytest.mark.parametrize("index", range(len(JAX_CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(JAX_CASES)])
def test_distribution_methods_against_jax(index, jax_distributions):
    name, args, rtol = JAX_CASES[index]
    got = _call(Q, name, [A(a) if isinstance(a, np.ndarray) else a for a in args])
    close(got, jax_distributions[index], rtol=rtol, atol=1e-300)


# ---- ... and against SciPy in the tails and at the edges, where JAX loses digits or differs --------

XT = np.array([-1e10, -30.0, -1.0, 0.0, 1e-9, 1.0, 30.0, 1e10, np.inf, -np.inf, np.nan])
PT = np.array([-1.0, 0.0, 1e-300, 1e-20, 0.5, 3.0, 50.0, 800.0, np.inf, np.nan])
QT = np.array([-0.1, 0.0, 1e-20, 0.2, 0.5, 0.7, 1 - 1e-12, 1.0, 1.1, np.nan])
SCIPY_CASES = [
    ("bernoulli.ppf", (QT, 0.3), 0.0),  # SciPy's -1 at q = 0 (JAX: 0)
    ("bernoulli.ppf", (QT, 0.0), 0.0),  # and 1 at q = 1 also for p = 0 (JAX: 0)
    ("bernoulli.cdf", (np.array([-1.0, 0.0, 0.5, 1.0, np.nan]), 1.3), 0.0),  # bad p: NaN
    ("beta.logsf", (np.array([-0.5, 0.0, 1e-10, 0.3, 0.999, 1.0, 1.5, np.nan]), 2.5, 0.7), 1e-13),  # JAX: 0 at 1e-10
    ("cauchy.sf", (XT, 0.2, 1.5), 1e-14),  # JAX loses 1e-7 at 1e10
    ("cauchy.logcdf", (XT, 0.2, 1.5), 1e-14),
    ("cauchy.logsf", (XT, 0.2, 1.5), 1e-14),
    ("cauchy.isf", (QT, 0.2, 1.5), 1e-14),  # +-inf at the ends, NaN outside (JAX: finite)
    ("chi2.logcdf", (PT, 3.0), 1e-13),  # JAX loses 4e-7 near 1 (50.0) and 0 at 800
    ("chi2.logsf", (PT, 3.0), 1e-13),
    ("gamma.logcdf", (PT, 2.5, 0.1, 1.5), 1e-13),
    ("gamma.logsf", (PT, 0.7), 1e-13),
    ("expon.logcdf", (np.array([-1.0, 0.0, 1e-20, 1e-5, 0.5, 40.0, np.inf, np.nan]),), 1e-14),  # JAX: -inf at 1e-20
    ("gumbel_l.ppf", (QT, 0.2, 1.5), 1e-14),  # -inf / inf at the ends (JAX: NaN)
    ("gumbel_r.ppf", (QT, 0.2, 1.5), 1e-14),
    ("gumbel_r.sf", (XT, 0.2, 1.5), 1e-14),  # JAX loses 3e-9 at 30
    ("gumbel_l.logcdf", (XT, 0.2, 1.5), 1e-14),
    ("pareto.logsf", (np.array([-1.0, 0.5, 1.0, 1 + 1e-12, 3.0, 1e10, np.inf, np.nan]), 2.5), 1e-11),
    ("pareto.sf", (np.array([-1.0, 0.5, 1.0, 3.0, 1e10, np.inf, np.nan]), 2.5), 1e-14),
    ("pareto.ppf", (QT, 2.5, 0.2, 0.7), 1e-14),
    ("truncnorm.sf", (np.array([-3.0, -1.0, 0.0, 2.0, 3.0, np.nan]), -1.0, 2.0), 1e-14),  # JAX: 1 at NaN
    ("truncnorm.logcdf", (np.array([-3.0, -0.5, 0.0, 2.5, np.nan]), 0.0, np.inf), 1e-13),
    ("truncnorm.logsf", (np.array([-3.0, -0.5, 0.0, 2.5, np.nan]), -np.inf, 1.0), 1e-13),
    ("betabinom.logpmf", (np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 10.0, 11.0, np.nan]), 10.0, 2.5, 0.7), 1e-13),
    ("betabinom.pmf", (KS, 10.5, 2.5, 0.7), 0.0),  # n not a whole number: NaN (JAX: a value)
    ("betabinom.pmf", (KS, 10.0, -2.5, 0.7), 0.0),
    ("wrapcauchy.logpdf", (np.array([0.0, 0.5, 3.0, np.nan]), 0.3), 1e-14),  # JAX: -inf at NaN
]


@pytest.mark.parametrize("name, args, rtol", SCIPY_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SCIPY_CASES)])
def test_distribution_methods_against_scipy(name, args, rtol):
    got = _call(Q, name, [A(a) if isinstance(a, np.ndarray) else a for a in args])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _call(S, name, args)
    close(got, expected, rtol=rtol, atol=1e-300)


def test_accuracy_beyond_scipy_and_jax():
    # poisson.entropy: the direct sum below mu = 50 and the asymptotic series from there,
    # against mpmath (SciPy's sum stops early at 1e4; JAX's large-mu form is off by 1e-6 at 100).
    mus = [49.9, 50.0, 75.5, 100.0, 1000.0, 1e4]
    exact = [3.3722618502538649263, 3.3732662611702073252, 3.5798936727082554587, 3.7206860722602588868,
             4.8727327976428506462, 6.0241003854427113208]
    close(Q.poisson.entropy(A(mus)), exact, rtol=2e-14)
    close(Q.poisson.entropy(A([-1.0, np.nan]), 2.0), [np.nan, np.nan])
    # wrapcauchy near c = 1, where 1 + c^2 - 2c cos x cancels (SciPy loses 1e-11 there)
    assert abs(Q.wrapcauchy.logpdf(A(0.0), 0.999).item() - 5.7625252680910535) < 1e-14
    # betabinom where JAX is off by 5e-8 (SciPy and mpmath agree to 1e-15)
    close(Q.betabinom.logpmf(A(1.0), 10, 2.5, 0.7), S.betabinom.logpmf(1, 10, 2.5, 0.7), rtol=1e-13)


P12 = POS[:12]
GRAD_CASES = [  # (quabla function, JAX function, point), d/d(parameter) of a sum
    (lambda a: Q.gamma.logcdf(A(P12), a).sum(), lambda a: JS.gamma.logcdf(P12, a).sum(), 2.5),
    (lambda a: Q.gamma.logsf(A(P12), a).sum(), lambda a: JS.gamma.logsf(P12, a).sum(), 0.7),
    (lambda a: Q.chi2.logcdf(A(P12), a).sum(), lambda a: JS.chi2.logcdf(P12, a).sum(), 2.5),
    (lambda s: Q.beta.logcdf(A(UNIT[:8] / 2), 2.0, 1.5, 0.0, s).sum(),
     lambda s: JS.beta.logcdf(UNIT[:8] / 2, 2.0, 1.5, 0.0, s).sum(), 1.3),
    (lambda m: Q.cauchy.logsf(A(XS), m, 1.5).sum(), lambda m: JS.cauchy.logsf(XS, m, 1.5).sum(), 0.3),
    (lambda a: Q.truncnorm.logcdf(A(XS / 4), a, 2.0).sum(), lambda a: JS.truncnorm.logcdf(XS / 4, a, 2.0).sum(), -2.5),
    (lambda b: Q.pareto.logcdf(A(P12 + 1.0), b).sum(), lambda b: JS.pareto.logcdf(P12 + 1.0, b).sum(), 2.5),
    (lambda s: Q.gumbel_r.logsf(A(XS), 0.2, s).sum(), lambda s: JS.gumbel_r.logsf(XS, 0.2, s).sum(), 1.5),
    (lambda s: Q.expon.logcdf(A(P12), 0.0, s).sum(), lambda s: JS.expon.logcdf(P12, 0.0, s).sum(), 1.5),
    (lambda c: Q.wrapcauchy.logpdf(A(P12), c).sum(), lambda c: JS.wrapcauchy.logpdf(P12, c).sum(), 0.7),
    (lambda m: Q.poisson.entropy(m), lambda m: JS.poisson.entropy(m), 0.7),
    # JAX's own betaln is good to about 2e-7 only
    (lambda a: Q.betabinom.logpmf(A(KS), 10.0, a, 0.7).sum(), lambda a: JS.betabinom.logpmf(KS, 10.0, a, 0.7).sum(),
     2.5),
]


def test_distribution_gradients_against_jax(_x64):
    expected = jax_batch([lambda f=f, at=at: jax.grad(f)(at) for _, f, at in GRAD_CASES])
    for (qf, _, at), e in zip(GRAD_CASES, expected):
        rtol = 1e-6 if qf is GRAD_CASES[-1][0] else 1e-11
        np.testing.assert_allclose(qb.grad(qf)(A(at)).item(), float(e), rtol=rtol)
    # ... and jit
    f = qb.jit(lambda v: Q.truncnorm.logsf(v, -1.0, 2.0) + Q.cauchy.logcdf(v) + Q.gamma.logsf(qb.abs(v), 1.5))
    close(f(A(XS / 2)), Q.truncnorm.logsf(A(XS / 2), -1.0, 2.0) + Q.cauchy.logcdf(A(XS / 2))
          + Q.gamma.logsf(A(np.abs(XS / 2)), 1.5), rtol=1e-14)
    close(f(A(XS / 2)), S.truncnorm.logsf(XS / 2, -1.0, 2.0) + S.cauchy.logcdf(XS / 2)
          + S.gamma.logsf(np.abs(XS / 2), 1.5), rtol=1e-12)


def test_distribution_float32():
    f32 = qb.asarray(np.float32([0.2, 0.5, 2.0]))
    for value in (Q.gamma.logcdf(f32, 2.0), Q.cauchy.isf(f32 / 4), Q.truncnorm.sf(f32, -1.0, 1.0),
                  Q.wrapcauchy.logpdf(f32, 0.5), Q.betabinom.logpmf(f32, 4, 1.5, 2.0), Q.poisson.entropy(f32),
                  Q.pareto.logcdf(f32 + 1, 2.0), Q.gumbel_l.ppf(f32 / 4), Q.bernoulli.ppf(f32 / 4, 0.5)):
        assert value.dtype == qb.float32


# ---- rankdata, sem, mode ------------------------------------------------------------------------

DATA = rng.integers(0, 4, size=(5, 7)).astype(float)
DATA_NAN = DATA.copy()
DATA_NAN[1, 2] = np.nan
RANK_METHODS = ["average", "min", "max", "dense", "ordinal"]
RANK_CASES = [(m, axis, data) for m in RANK_METHODS for axis, data in ((None, DATA_NAN), (1, DATA_NAN), (0, DATA))]
SEM_DATA = np.array([[1.0, 2, np.nan, 3], [4, np.nan, np.nan, 1], [1, 2, 3, 4], [0.5, 1, 7, 2]])
SEM_CASES = [(axis, ddof, policy, keepdims) for axis in (None, 0, 1) for ddof in (0, 1, 2)
             for policy in ("propagate", "omit") for keepdims in (False, True)]
MODE_DATA = rng.integers(0, 3, size=(6, 5)).astype(float)
MODE_DATA[0, 0] = MODE_DATA[1, 0] = np.nan
MODE_INTS = np.array([[1, 2, 1, 3, 2, 1], [3, 1, 3, 2, 1, 3], [1, 2, 2, 3, 1, 2]])
MODE_CASES = [(MODE_DATA, axis, keepdims) for axis in (None, 0, 1) for keepdims in (False, True)]
MODE_CASES += [(MODE_INTS, 1, False), (MODE_INTS, 0, True)]


@pytest.fixture(scope="module")
def jax_summaries(_x64):
    thunks = [lambda m=m, axis=axis, data=data: JS.rankdata(data, m, axis=axis) for m, axis, data in RANK_CASES]
    thunks += [lambda c=c: JS.sem(SEM_DATA, axis=c[0], ddof=c[1], nan_policy=c[2], keepdims=c[3]) for c in SEM_CASES]
    thunks += [lambda c=c: tuple(JS.mode(c[0], axis=c[1], keepdims=c[2])) for c in MODE_CASES]
    thunks += [lambda: JS.rankdata(jnp.array([3, 1, 2, 1])), lambda: JS.sem(jnp.array([1, 2, 4])),
               lambda: jax.grad(lambda v: JS.sem(v))(SEM_DATA[2])]
    out = jax_batch(thunks)
    n1, n2 = len(RANK_CASES), len(RANK_CASES) + len(SEM_CASES)
    return out[:n1], out[n1:n2], out[n2:n2 + len(MODE_CASES)], out[n2 + len(MODE_CASES):]


def test_rankdata(jax_summaries):
    for (method, axis, data), expected in zip(RANK_CASES, jax_summaries[0]):
        close(Q.rankdata(A(data), method, axis=axis), expected, rtol=0)
    close(Q.rankdata(A([3, 1, 2, 1])), jax_summaries[3][0], rtol=0)
    for method in RANK_METHODS:
        for axis in (None, 0, 1, -1):
            # the rest against SciPy, which JAX follows; and 'omit' (JAX does not have it): the
            # NaNs rank NaN, the rest among themselves
            for policy in ("propagate", "omit"):
                close(Q.rankdata(A(DATA_NAN), method, axis=axis, nan_policy=policy),
                      S.rankdata(DATA_NAN, method, axis=axis, nan_policy=policy), rtol=0)


def test_rankdata_edges_and_errors():
    close(Q.rankdata(A(5.0)), [1.0], rtol=0)  # (JAX too: a 0-d input ranks as one entry)
    assert Q.rankdata(A(np.zeros(0))).shape == (0,)
    assert Q.rankdata(A([3, 1, 3]), "min").dtype == qb.float64  # floats for every method, as JAX
    close(qb.jit(lambda v: Q.rankdata(v, "max", axis=1))(A(DATA_NAN)), S.rankdata(DATA_NAN, "max", axis=1), rtol=0)
    with pytest.raises(ValueError, match="unknown method 'foo'"):
        Q.rankdata(A(DATA), "foo")
    with pytest.raises(ValueError, match="contains NaN"):
        Q.rankdata(A(DATA_NAN), nan_policy="raise")
    with pytest.raises(ValueError, match="traced"):
        qb.jit(lambda v: Q.rankdata(v, nan_policy="raise"))(A(DATA))
    with pytest.raises(ValueError, match="nan_policy must be one of"):
        Q.rankdata(A(DATA), nan_policy="skip")
    with pytest.raises(ValueError, match="out of bounds"):
        Q.rankdata(A(DATA), axis=2)
    with pytest.raises(TypeError, match="complex"):
        Q.rankdata(A([1j, 2.0]))


def test_sem(jax_summaries):
    for (axis, ddof, policy, keepdims), expected in zip(SEM_CASES, jax_summaries[1]):
        close(Q.sem(A(SEM_DATA), axis=axis, ddof=ddof, nan_policy=policy, keepdims=keepdims), expected, rtol=1e-14)
    close(Q.sem(A(SEM_DATA), axis=-1, nan_policy="omit"), S.sem(SEM_DATA, axis=-1, nan_policy="omit"), rtol=1e-14)
    close(Q.sem(A([1, 2, 4])), jax_summaries[3][1], rtol=1e-14)
    close(qb.grad(lambda v: Q.sem(v))(A(SEM_DATA[2])), jax_summaries[3][2], rtol=1e-13)
    assert np.isnan(Q.sem(A([1.0])).item())  # n - ddof = 0
    with pytest.raises(ValueError, match="'propagate' or 'omit'"):
        Q.sem(A(SEM_DATA), nan_policy="raise")
    with pytest.raises(ValueError, match="out of bounds"):
        Q.sem(A(3.0))


def test_mode(jax_summaries):
    for (data, axis, keepdims), (mode, count) in zip(MODE_CASES, jax_summaries[2]):
        got = Q.mode(A(data), axis=axis, keepdims=keepdims)
        assert isinstance(got, Q.ModeResult) and got._fields == ("mode", "count")
        close(got.mode, mode, rtol=0)
        close(got.count, count, rtol=0)
        assert got.count.dtype == qb.int64 and got.mode.dtype == qb.asarray(data).dtype
    for axis in (None, 0, 1):
        for keepdims in (False, True):  # 'omit' as SciPy (JAX has no 'omit')
            got = Q.mode(A(MODE_DATA), axis=axis, keepdims=keepdims, nan_policy="omit")
            expected = S.mode(MODE_DATA, axis=axis, keepdims=keepdims, nan_policy="omit")
            close(got.mode, expected.mode, rtol=0)
            close(got.count, expected.count, rtol=0)
    got = Q.mode(A([np.nan, 1.0, np.nan]))  # NaNs count as equal, as JAX and SciPy
    assert np.isnan(got.mode.item()) and got.count.item() == 2
    got = Q.mode(A(np.zeros(0)))  # nothing to count: NaN, 0 (as JAX and SciPy)
    assert np.isnan(got.mode.item()) and got.count.item() == 0
    close(qb.jit(lambda v: Q.mode(v, axis=0).count)(A(MODE_INTS)), S.mode(MODE_INTS, axis=0).count, rtol=0)


# ---- gaussian_kde -------------------------------------------------------------------------------

KDE_DATA = rng.normal(size=(2, 30))
KDE_WEIGHTS = rng.uniform(0.1, 1.0, 30)
KDE_POINTS = rng.normal(size=(2, 7))
KDE_1D = rng.normal(size=40)
KDE_CASES = [(None, False), ("silverman", True), (0.4, True), ("callable", False)]


def _bw(bw):
    return (lambda kde: 0.3 * kde.n ** -0.2) if bw == "callable" else bw


def _kde_summary(module, kde, key, arr):
    """What the comparison looks at, for one estimator (JAX's or Quabla's)."""
    return (kde.covariance, kde.inv_cov, kde.neff, kde.evaluate(arr(KDE_POINTS)), kde(arr(KDE_POINTS)),
            kde.pdf(arr(KDE_POINTS)), kde.logpdf(arr(KDE_POINTS)),
            kde.integrate_gaussian(arr([0.1, -0.2]), arr(np.eye(2) * 0.5)), kde.resample(key, (4,)))


@pytest.fixture(scope="module")
def jax_kde(_x64):
    thunks = [lambda bw=bw, w=w: _kde_summary(JS, JS.gaussian_kde(KDE_DATA, _bw(bw), KDE_WEIGHTS if w else None),
                                              jax.random.key(3), jnp.asarray) for bw, w in KDE_CASES]
    thunks += [
        lambda: JS.gaussian_kde(KDE_1D).integrate_box_1d(-0.5, 1.0),
        lambda: JS.gaussian_kde(KDE_1D).integrate_kde(JS.gaussian_kde(KDE_1D[:20] + 1)),
        lambda: JS.gaussian_kde(KDE_1D).logpdf(jnp.array([-50.0, 0.5])),
        lambda: JS.gaussian_kde(KDE_DATA).evaluate(jnp.array([0.1, 0.2])),
        lambda: jax.grad(lambda data: JS.gaussian_kde(data).logpdf(KDE_POINTS).sum())(KDE_DATA),
        lambda: jax.grad(lambda p: JS.gaussian_kde(KDE_1D).pdf(p).sum())(jnp.array([0.3, -1.0])),
    ]
    out = jax_batch(thunks)
    return out[:len(KDE_CASES)], out[len(KDE_CASES):]


def test_gaussian_kde_against_jax(jax_kde):
    for (bw, weighted), expected in zip(KDE_CASES, jax_kde[0]):
        kde = Q.gaussian_kde(A(KDE_DATA), bw_method=_bw(bw), weights=A(KDE_WEIGHTS) if weighted else None)
        got = _kde_summary(Q, kde, qb.random.key(3), A)
        # (resample: the same draws as JAX, the key split then qb.random.choice and
        # multivariate_normal)
        for g, e in zip(got, expected):
            close(g, e, rtol=1e-12)
        reference = S.gaussian_kde(KDE_DATA, _bw(bw) if bw != "callable" else 0.3 * 30 ** -0.2,
                                   KDE_WEIGHTS if weighted else None)
        close(kde.logpdf(A(KDE_POINTS)), reference.logpdf(KDE_POINTS), rtol=1e-12)
    assert (kde.d, kde.n) == (2, 30)
    kde1 = Q.gaussian_kde(A(KDE_1D))
    more = jax_kde[1]
    close(kde1.integrate_box_1d(-0.5, 1.0), more[0], rtol=1e-13)
    close(kde1.integrate_kde(Q.gaussian_kde(A(KDE_1D[:20] + 1))), more[1], rtol=1e-13)
    close(kde1.logpdf(A([-50.0, 0.5])), more[2], rtol=1e-13)  # no underflow far out
    close(Q.gaussian_kde(A(KDE_DATA)).evaluate(A([0.1, 0.2])), more[3], rtol=1e-12)  # a 1-D point of length d
    # gradients in the data and in the points
    close(qb.grad(lambda data: Q.gaussian_kde(data).logpdf(A(KDE_POINTS)).sum())(A(KDE_DATA)), more[4], rtol=1e-11)
    close(qb.grad(lambda p: kde1.pdf(p).sum())(A([0.3, -1.0])), more[5], rtol=1e-11)


def test_gaussian_kde_resample_jit_and_errors():
    kde1, kde2 = Q.gaussian_kde(A(KDE_1D)), Q.gaussian_kde(A(KDE_DATA))
    assert kde1.resample(qb.random.key(0)).shape == (1,)
    assert kde1.resample(qb.random.key(0), (2, 3)).shape == (1, 2, 3)  # (JAX's .T breaks on 2-d shapes)
    draws = kde1.resample(qb.random.key(1), (4000,)).numpy()[0]
    assert abs(draws.mean() - KDE_1D.mean()) < 0.1 and abs(draws.var() / (KDE_1D.var(ddof=1) + kde1.covariance.item())
                                                         - 1.0) < 0.1
    # the estimator through jit (it is a pytree)
    close(qb.jit(lambda k, p: k.logpdf(p))(kde2, A(KDE_POINTS)), S.gaussian_kde(KDE_DATA).logpdf(KDE_POINTS),
          rtol=1e-12)
    kde2.set_bandwidth("silverman")  # (JAX raises here; SciPy updates, as this one)
    close(kde2.covariance, S.gaussian_kde(KDE_DATA, "silverman").covariance, rtol=1e-12)
    with pytest.raises(ValueError, match="more than one element"):
        Q.gaussian_kde(A([1.0]))
    with pytest.raises(ValueError, match="one entry per point"):
        Q.gaussian_kde(A(KDE_1D), weights=A(np.ones(3)))
    with pytest.raises(ValueError, match="bw_method must be"):
        Q.gaussian_kde(A(KDE_1D), bw_method="wide")
    with pytest.raises(ValueError, match="points have dimension 3"):
        kde2.evaluate(A(np.ones((3, 2))))
    with pytest.raises(ValueError, match="must be 1-D"):
        kde2.integrate_box_1d(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="integrate_box"):
        kde2.integrate_box(A([0.0, 0.0]), A([1.0, 1.0]))
    with pytest.raises(NotImplementedError, match="complex"):
        Q.gaussian_kde(A([1j, 2.0, 3.0]))


# ---- fftconvolve, detrend -----------------------------------------------------------------------

SIG_A = rng.normal(size=(5, 7))
SIG_B = rng.normal(size=(3, 4))
SIG_C = SIG_A + 1j * SIG_A[::-1]
SIG_B_ROWS = SIG_B[:1] * np.ones((5, 1))
CONV_X, CONV_K = rng.normal(size=60), rng.normal(size=9)
CONV_CASES = [(a, b, mode, axes) for mode in ("full", "same", "valid")
              for a, b, axes in ((SIG_A, SIG_B, None), (SIG_B, SIG_A, None), (SIG_A[0], SIG_B[0], None),
                                 (SIG_A, SIG_B_ROWS, [1]), (SIG_C, SIG_B, None), (CONV_X, CONV_K, None))]
TREND_X = rng.normal(size=(4, 20)) + np.arange(20) * 0.3
TREND_CASES = [{}, {"type": "constant"}, {"axis": 0}, {"bp": [5, 12]}, {"bp": 5}, {"bp": np.array([12, 5])},
               {"bp": [0, 20]}, {"type": "constant", "bp": 3}]


@pytest.fixture(scope="module")
def jax_conv_trend(_x64):
    thunks = [lambda c=c: JSIG.fftconvolve(c[0], c[1], c[2], axes=c[3]) for c in CONV_CASES]
    thunks += [lambda kw=kw: JSIG.detrend(TREND_X, **kw) for kw in TREND_CASES]
    thunks += [lambda: JSIG.detrend(np.arange(6) ** 2),
               lambda: jax.grad(lambda v: (JSIG.fftconvolve(v, CONV_K, "same") ** 2).sum())(CONV_X),
               lambda: jax.grad(lambda kk: (JSIG.fftconvolve(CONV_X, kk, "valid") ** 2).sum())(CONV_K),
               lambda: jax.grad(lambda v: (JSIG.detrend(v, bp=[7, 13]) ** 3).sum())(TREND_X[0])]
    out = jax_batch(thunks)
    n = len(CONV_CASES)
    return out[:n], out[n:n + len(TREND_CASES)], out[n + len(TREND_CASES):]


def test_fftconvolve(jax_conv_trend):
    for (a, b, mode, axes), expected in zip(CONV_CASES, jax_conv_trend[0]):
        got = QSIG.fftconvolve(A(a), A(b), mode, axes=axes)  # ('valid' swaps when in2 is larger)
        close(got, expected, scaled=1e-14)
        close(got, SSIG.fftconvolve(a, b, mode, axes=axes), scaled=1e-14)
    for mode in ("full", "same", "valid"):  # SciPy (not JAX) broadcasts size-1 axes not convolved
        close(QSIG.fftconvolve(A(SIG_A), A(SIG_B[:1]), mode, axes=1), SSIG.fftconvolve(SIG_A, SIG_B[:1], mode, axes=1),
              scaled=1e-14)
    grads = jax_conv_trend[2]
    close(qb.grad(lambda v: (QSIG.fftconvolve(v, A(CONV_K), "same") ** 2).sum())(A(CONV_X)), grads[1], rtol=1e-12)
    close(qb.grad(lambda kk: (QSIG.fftconvolve(A(CONV_X), kk, "valid") ** 2).sum())(A(CONV_K)), grads[2], rtol=1e-12)
    close(qb.jit(lambda v: QSIG.fftconvolve(v, A(CONV_K)))(A(CONV_X)), SSIG.fftconvolve(CONV_X, CONV_K), scaled=1e-14)
    close(QSIG.fftconvolve(A(2.0), A(3.0)), 6.0)
    assert QSIG.fftconvolve(A(np.ones(3, np.float32)), A(np.ones(2, np.float32))).dtype == qb.float32
    with pytest.raises(ValueError, match="same number of dimensions"):
        QSIG.fftconvolve(A(np.ones((3, 4))), A(np.ones(2)))
    with pytest.raises(ValueError, match="at least as large"):
        QSIG.fftconvolve(A(np.ones((3, 4))), A(np.ones((2, 5))), "valid")
    with pytest.raises(ValueError, match="mode must be"):
        QSIG.fftconvolve(A(np.ones(3)), A(np.ones(2)), "wrap")
    with pytest.raises(ValueError, match="equal sizes or size 1"):
        QSIG.fftconvolve(A(np.ones((3, 4))), A(np.ones((2, 4))), axes=[1])


def test_detrend(jax_conv_trend):
    for kwargs, expected in zip(TREND_CASES, jax_conv_trend[1]):
        close(QSIG.detrend(A(TREND_X), **kwargs), expected, scaled=1e-14)
    close(QSIG.detrend(A(np.arange(6) ** 2)), jax_conv_trend[2][0], scaled=1e-14)
    close(QSIG.detrend(A(TREND_X + 1j * TREND_X[::-1])), SSIG.detrend(TREND_X + 1j * TREND_X[::-1]), scaled=1e-14)
    close(qb.grad(lambda v: (QSIG.detrend(v, bp=[7, 13]) ** 3).sum())(A(TREND_X[0])), jax_conv_trend[2][3], rtol=1e-12)
    with pytest.raises(ValueError, match="type must be 'linear' or 'constant'"):
        QSIG.detrend(A(TREND_X), type="quadratic")
    with pytest.raises(ValueError, match="between 0 and the length"):
        QSIG.detrend(A(TREND_X), bp=[25])
    with pytest.raises(ValueError, match="at least one dimension"):
        QSIG.detrend(A(2.0))


# ---- windows, welch, csd, stft, istft -----------------------------------------------------------

WINDOWS = ["hann", "hamming", "blackman", "nuttall", "blackmanharris", "flattop", "boxcar", "ones", "triang",
           "bartlett", "parzen", "bohman", "barthann", "cosine", "exponential", "tukey", ("tukey", 0.3),
           ("tukey", 1.0), "lanczos", ("kaiser", 5.0), ("gaussian", 2.0), ("general_gaussian", 1.5, 3.0),
           ("general_cosine", [0.5, 0.3, 0.2]), ("general_hamming", 0.6), ("exponential", None, 3.0)]


def test_windows_against_scipy_get_window():
    for window in WINDOWS:
        for m in (1, 2, 7, 16):
            np.testing.assert_allclose(get_window(window, m), SSIG.get_window(window, m), rtol=0, atol=1e-14,
                                       err_msg=str(window))
    with pytest.raises(ValueError, match="unknown window 'hanning'"):
        get_window("hanning", 8)
    with pytest.raises(ValueError, match="needs 1 parameter"):
        get_window("kaiser", 8)
    with pytest.raises(NotImplementedError, match="pass the window itself"):
        get_window(("dpss", 3.0), 8)


SIGNAL_X = rng.normal(size=(2, 300))
SIGNAL_Y = rng.normal(size=(2, 300))
SIGNAL_3D = rng.normal(size=(3, 100, 2))
SPECTRAL_KWARGS = [
    {"nperseg": 64}, {"nperseg": 64, "noverlap": 10}, {"nperseg": 64, "nfft": 100}, {"nperseg": 63},
    {"nperseg": 64, "window": "hamming"}, {"nperseg": 64, "window": ("tukey", 0.3)},
    {"nperseg": 64, "window": np.hanning(64)}, {"nperseg": 64, "detrend": "linear"},
    {"nperseg": 64, "detrend": False}, {"nperseg": 64, "return_onesided": False},
    {"nperseg": 64, "scaling": "spectrum"}, {"nperseg": 64, "average": "median"}, {"nperseg": 64, "fs": 10.0},
    {"nperseg": 64, "axis": 0},
]
STFT_KWARGS = [
    {}, {"nperseg": 64}, {"nperseg": 64, "noverlap": 10}, {"nperseg": 64, "nfft": 100}, {"nperseg": 63},
    {"nperseg": 64, "window": "hamming"}, {"nperseg": 64, "boundary": None}, {"nperseg": 64, "boundary": "even"},
    {"nperseg": 64, "boundary": "odd"}, {"nperseg": 64, "boundary": "constant"}, {"nperseg": 64, "padded": False},
    {"nperseg": 64, "padded": False, "boundary": None}, {"nperseg": 64, "return_onesided": False},
    {"nperseg": 64, "detrend": "linear"}, {"nperseg": 64, "fs": 3.0},
]
ISTFT_KWARGS = [
    {}, {"nperseg": 64}, {"nperseg": 64, "noverlap": 10}, {"nperseg": 64, "nfft": 100},
    {"nperseg": 64, "window": "hamming"}, {"nperseg": 64, "boundary": False}, {"nperseg": 64, "input_onesided": False},
    {"nperseg": 64, "fs": 3.0},
]


def _pair(kwargs):
    return (SIGNAL_X, SIGNAL_Y) if kwargs.get("axis", -1) == -1 else (SIGNAL_X.T, SIGNAL_Y.T)


def _istft_input(kwargs):
    """SciPy's STFT of SIGNAL_X with the settings an istft call with kwargs inverts."""
    stft_kwargs = {k: v for k, v in kwargs.items() if k not in ("boundary", "input_onesided")}
    stft_kwargs["boundary"] = "zeros" if kwargs.get("boundary", True) else None
    stft_kwargs["return_onesided"] = kwargs.get("input_onesided", True)
    return SSIG.stft(SIGNAL_X, **stft_kwargs)[2]


Z_PLAIN = SSIG.stft(SIGNAL_X, nperseg=64)[2]
Z_4D = SSIG.stft(rng.normal(size=(3, 200, 2)), nperseg=32, axis=1)[2]
Z_SHORT = SSIG.stft(SIGNAL_X[0, :100], nperseg=32)[2]
ISTFT_AXES = ((-1, 1), (1, 3), (0, 2))


@pytest.fixture(scope="module")
def jax_spectra(_x64):
    x, y = SIGNAL_X, SIGNAL_Y
    thunks = [lambda kw=kw: (JSIG.welch(_pair(kw)[0], **kw), JSIG.csd(*_pair(kw), **kw)) for kw in SPECTRAL_KWARGS]
    thunks += [lambda kw=kw: JSIG.stft(x, **kw) for kw in STFT_KWARGS]
    thunks += [lambda kw=kw: JSIG.istft(_istft_input(kw), **kw) for kw in ISTFT_KWARGS]
    thunks += [lambda: JSIG.welch(x + 1j * y, nperseg=64), lambda: JSIG.csd(x, None, nperseg=64),
               lambda: JSIG.csd(x, x, nperseg=64), lambda: JSIG.csd(x, y[:1], nperseg=64),
               lambda: JSIG.csd(x, y[:, :200], nperseg=64), lambda: JSIG.welch(SIGNAL_3D, nperseg=32, axis=1),
               lambda: jax.grad(lambda v: JSIG.welch(v, nperseg=64)[1].sum())(x[0, :200]),
               lambda: JSIG.csd(x[0], x[0, ::-1], nperseg=64, average="median"),
               lambda: JSIG.stft(x + 1j * y, nperseg=64), lambda: JSIG.stft(SIGNAL_3D, nperseg=16, axis=1),
               lambda: jax.grad(lambda v: (jnp.abs(JSIG.stft(v, nperseg=32)[2]) ** 2).sum())(x[0, :100]),
               lambda: JSIG.istft(Z_PLAIN.T, time_axis=0, freq_axis=1),
               lambda: [JSIG.istft(Z_4D, time_axis=t, freq_axis=f) for t, f in ISTFT_AXES],
               lambda: jax.grad(lambda v: (JSIG.istft(v, nperseg=32)[1] ** 2).sum())(Z_SHORT)]
    out = jax_batch(thunks)
    n1, n2 = len(SPECTRAL_KWARGS), len(SPECTRAL_KWARGS) + len(STFT_KWARGS)
    n3 = n2 + len(ISTFT_KWARGS)
    return {"welch_csd": out[:n1], "stft": out[n1:n2], "istft": out[n2:n3], "more": out[n3:]}


def test_welch_and_csd_against_jax(jax_spectra):
    for kwargs, (welch, csd) in zip(SPECTRAL_KWARGS, jax_spectra["welch_csd"]):
        x, y = _pair(kwargs)
        for got, expected in ((QSIG.welch(A(x), **kwargs), welch), (QSIG.csd(A(x), A(y), **kwargs), csd)):
            close(got[0], expected[0], rtol=1e-14)
            assert got[1].dtype == qb.asarray(expected[1]).dtype, kwargs
            close(got[1], expected[1], scaled=1e-14)
    more = jax_spectra["more"]
    x, y = SIGNAL_X, SIGNAL_Y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (complex input: two-sided)
        close(QSIG.welch(A(x + 1j * y), nperseg=64)[1], more[0][1], scaled=1e-14)
    close(QSIG.csd(A(x), None, nperseg=64)[1], more[1][1], scaled=1e-14)  # y=None: x's PSD, real
    assert QSIG.csd(A(x), None, nperseg=64)[1].dtype == qb.float64
    close(QSIG.csd(A(x), A(x), nperseg=64)[1], more[2][1], scaled=1e-14)  # y given: complex, as JAX
    close(QSIG.csd(A(x), A(y[:1]), nperseg=64)[1], more[3][1], scaled=1e-14)  # broadcast
    close(QSIG.csd(A(x), A(y[:, :200]), nperseg=64)[1], more[4][1], scaled=1e-14)  # zero-padded to one length
    close(QSIG.welch(A(SIGNAL_3D), nperseg=32, axis=1)[1], more[5][1], scaled=1e-14)
    g = qb.grad(lambda v: QSIG.welch(v, nperseg=64)[1].sum())(A(x[0, :200]))
    close(g, more[6], scaled=1e-14)
    close(qb.jit(lambda v: QSIG.csd(v, v[::-1], nperseg=64, average="median")[1])(A(x[0])), more[7][1], scaled=1e-14)
    close(qb.jit(lambda v: QSIG.welch(v, nperseg=64)[1])(A(x)), SSIG.welch(x, nperseg=64)[1], scaled=1e-14)


def test_welch_csd_scipy_cases_and_errors():
    x = SIGNAL_X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (nperseg longer than the signal)
        # nperseg=None: 256 (at most the length), as both document and SciPy does; JAX 0.10
        # takes the whole signal instead.
        close(QSIG.welch(A(x))[1], SSIG.welch(x)[1], scaled=1e-14)
        close(QSIG.welch(A(x[:, :40]))[1], SSIG.welch(x[:, :40])[1], scaled=1e-14)
    close(QSIG.welch(A(SIGNAL_3D), nperseg=32, axis=-2, detrend=lambda d: 2.0 * d)[1],
          SSIG.welch(SIGNAL_3D, nperseg=32, axis=-2, detrend=lambda d: 2.0 * d)[1], scaled=1e-14)
    close(QSIG.welch(A(x[:, :64]), nperseg=64)[1], SSIG.welch(x[:, :64], nperseg=64)[1], scaled=1e-14)  # 1 segment
    assert QSIG.welch(A(x.astype(np.float32)), nperseg=64)[1].dtype == qb.float32
    for kwargs, message in (({"nperseg": 64, "noverlap": 64}, "noverlap"), ({"nperseg": 64, "nfft": 32}, "nfft"),
                            ({"nperseg": 0}, "positive integer"), ({"nperseg": 64, "scaling": "power"}, "scaling"),
                            ({"nperseg": 64, "average": "mode"}, "average"),
                            ({"nperseg": 64, "detrend": "quad"}, "detrend"),
                            ({"nperseg": 64, "window": np.ones(10)}, "window's length"),
                            ({"window": np.ones((2, 5))}, "1-D"), ({"window": "hanning"}, "unknown window")):
        with pytest.raises(ValueError, match=message):
            QSIG.welch(A(x), **kwargs)


def test_stft_against_jax(jax_spectra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kwargs, expected in zip(STFT_KWARGS, jax_spectra["stft"]):
            got = QSIG.stft(A(SIGNAL_X), **kwargs)
            for g, e in zip(got, expected):
                close(g, e, scaled=1e-14)
        more = jax_spectra["more"]
        close(QSIG.stft(A(SIGNAL_X + 1j * SIGNAL_Y), nperseg=64)[2], more[8][2], scaled=1e-14)
    close(QSIG.stft(A(SIGNAL_3D), nperseg=16, axis=1)[2], more[9][2], scaled=1e-14)
    g = qb.grad(lambda v: (qb.abs(QSIG.stft(v, nperseg=32)[2]) ** 2).sum())(A(SIGNAL_X[0, :100]))
    close(g, more[10], scaled=1e-13)
    close(qb.jit(lambda v: QSIG.stft(v, nperseg=32)[2])(A(SIGNAL_X)), SSIG.stft(SIGNAL_X, nperseg=32)[2],
          scaled=1e-14)
    with pytest.raises(ValueError, match="boundary must be"):
        QSIG.stft(A(SIGNAL_X), nperseg=32, boundary="wrap")


def test_istft_against_jax(jax_spectra):
    for kwargs, expected in zip(ISTFT_KWARGS, jax_spectra["istft"]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = QSIG.istft(A(_istft_input(kwargs)), **kwargs)
        # without the boundary extension the periodic Hann window's first zero is not covered
        assert any("NOLA" in str(w.message) for w in caught) == (kwargs.get("boundary") is False)
        close(got[0], expected[0], rtol=1e-14)  # (both count the times along x.shape[0], as SciPy)
        close(got[1], expected[1], scaled=1e-13)
    more = jax_spectra["more"]
    close(QSIG.istft(A(Z_PLAIN.T), time_axis=0, freq_axis=1)[1], more[11][1], scaled=1e-14)
    for (time_axis, freq_axis), expected in zip(ISTFT_AXES, more[12]):
        got = QSIG.istft(A(Z_4D), time_axis=time_axis, freq_axis=freq_axis)
        close(got[0], expected[0], rtol=1e-14)
        close(got[1], expected[1], scaled=1e-14)
    g = qb.grad(lambda v: (QSIG.istft(v, nperseg=32)[1] ** 2).sum())(A(Z_SHORT))
    close(g, more[13], scaled=1e-13)


def test_istft_roundtrip_scipy_cases_and_errors():
    z = QSIG.stft(A(SIGNAL_X), nperseg=64)[2]
    close(QSIG.istft(z)[1][:, :300], SIGNAL_X, rtol=0, atol=1e-14)
    close(qb.jit(lambda v: QSIG.istft(v)[1])(z)[:, :300], SIGNAL_X, rtol=0, atol=1e-14)
    # odd nperseg and non-overlapping boxcar segments: JAX 0.10 fails or drops samples; SciPy
    for stft_kwargs in ({"nperseg": 63}, {"nperseg": 64, "noverlap": 0, "window": "boxcar"}):
        zz = SSIG.stft(SIGNAL_X, **stft_kwargs)[2]
        close(QSIG.istft(A(zz), **stft_kwargs)[1], SSIG.istft(zz, **stft_kwargs)[1], scaled=1e-13)
    with pytest.raises(ValueError, match="at least two dimensions"):
        QSIG.istft(A(np.ones(5)))
    with pytest.raises(ValueError, match="must differ"):
        QSIG.istft(z, time_axis=0, freq_axis=0)
    with pytest.raises(ValueError, match="noverlap"):
        QSIG.istft(z, noverlap=64)
