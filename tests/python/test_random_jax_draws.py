"""qb.random's rejection samplers give jax.random's numbers for the same key: gamma, loggamma
and what is built on them (beta, dirichlet, chisquare, t, f, generalized_normal, ball),
poisson, binomial and multinomial run JAX's algorithms with its key splits and its arithmetic
in the sample dtype. Checked against JAX itself (jax 0.10.2) with x64 on and off, for several
keys, shapes and parameters, eagerly, under jit and under vmap over keys; and the implicit
reparameterisation derivatives against JAX's.

Floats agree to the last bits of the libm functions inside (log, pow, erfinv: about 1e-12
relative in float64, 1e-5 in float32, where XLA's float32 pow and log are a few ulp off and
the formulas amplify them); counts are equal. An accept/reject decision can go the other way
where its two sides tie to the last bit: for poisson at large lam (float32, as JAX's, in both
modes) the bound -lam + k log lam - lgamma(k + 1) cancels terms of size lam log lam, so the
flips grow with lam (none in 10^5 draws at lam <= 30, about 2 in 10^4 at lam = 1000; every one
a tie at one ulp of lgamma(k + 1)); the keys, shapes and parameters here have none."""
import numpy as np
import pytest

import quabla as qb
from quabla import random as R

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

SEEDS = [0, 42, 2026]
SHAPES = [(), (7,), (3, 4)]


def tol(dtype_name):
    """(rtol, atol) for floats of dtype_name; atol absorbs XLA's flushing of float32
    subnormals to zero and the cancellation of loggamma's log d + log v^3 near 0."""
    return (1e-12, 1e-13) if dtype_name == "float64" else (1e-5, 1e-6)


def close(got, want, atol=None):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    rtol, default_atol = tol(want.dtype.name)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=default_atol if atol is None else atol, equal_nan=True)


def dtypes(x64):
    """(quabla dtype, JAX dtype) pairs to draw in: the default float, and float32 with x64."""
    return [(None, None)] + ([(qb.float32, jnp.float32)] if x64 else [])


_JITTED = {}


def check_cases(name, cases, seed, x64, atol=None):
    """cases: (label, quabla draw of a key, JAX draw of a key). JAX's draws of each test run in
    one jitted function (one compilation per test and x64 mode instead of one per draw; the
    values are those of the eager calls, which JAX jits internally too)."""
    if (name, x64) not in _JITTED:
        _JITTED[name, x64] = jax.jit(lambda kk: [fj(kk) for _, _, fj in cases])
    wants = _JITTED[name, x64](jax.random.key(seed))
    k = R.key(seed)
    for (label, fq, _), want in zip(cases, wants):
        try:
            close(fq(k), want, atol=atol)
        except AssertionError as e:
            raise AssertionError(f"{label}: {e}") from None


# ---------------------------------------------------------------------------------------------
# gamma and loggamma
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_gamma_and_loggamma_are_jax_draws(seed, x64):
    cases = []
    for a in (0.3, 1.0, 2.5, 40.0):
        for shape in SHAPES:
            cases.append((("gamma", a, shape), lambda k, a=a, s=shape: R.gamma(k, a, s),
                          lambda j, a=a, s=shape: jax.random.gamma(j, a, s)))
        shape = SHAPES[int(a) % 3]
        cases.append((("loggamma", a, shape), lambda k, a=a, s=shape: R.loggamma(k, a, s),
                      lambda j, a=a, s=shape: jax.random.loggamma(j, a, s)))
        if x64:  # float32 draws with x64 on: JAX's float32 arithmetic too
            cases.append((("gamma float32", a), lambda k, a=a: R.gamma(k, a, (3, 4), qb.float32),
                          lambda j, a=a: jax.random.gamma(j, a, (3, 4), jnp.float32)))
    check_cases("gamma", cases, seed, x64)


@pytest.mark.parametrize("seed", SEEDS)
def test_gamma_with_broadcast_parameters(seed, x64):
    fdt = np.float64 if x64 else np.float32
    a = np.array([[0.3], [1.0], [40.0]], dtype=fdt)
    row = np.array([0.3, 1.0, 2.5, 40.0], dtype=fdt)
    many = np.linspace(0.05, 60.0, 200).astype(fdt)  # tiny to large shapes in one draw
    cases = [("column", lambda k: R.gamma(k, a, (3, 4)), lambda j: jax.random.gamma(j, a, (3, 4))),
             ("row", lambda k: R.gamma(k, row, (3, 4)), lambda j: jax.random.gamma(j, row, (3, 4))),
             ("a's shape", lambda k: R.gamma(k, row), lambda j: jax.random.gamma(j, row)),
             ("loggamma", lambda k: R.loggamma(k, a, (3, 4)), lambda j: jax.random.loggamma(j, a, (3, 4))),
             ("many", lambda k: R.gamma(k, many), lambda j: jax.random.gamma(j, many))]
    check_cases("gamma broadcast", cases, seed, x64, atol=1.2e-38)  # XLA flushes float32 subnormals


def test_gamma_edges_follow_jax(x64):
    a = np.array([0.0, np.nan, np.inf, 1e-3, 2.0])
    # a = 0 gives 0 (log: -inf), NaN NaN, inf inf
    check_cases("gamma edges", [("gamma", lambda k: R.gamma(k, a), lambda j: jax.random.gamma(j, a)),
                                ("loggamma", lambda k: R.loggamma(k, a), lambda j: jax.random.loggamma(j, a))],
                7, x64, atol=1.2e-38)
    # a < 0: NaN (JAX's algorithm gives NaN below about -2/3 and meaningless values between)
    k = R.key(7)
    assert np.all(np.isnan(R.gamma(k, np.array([-1.0, -0.5, -0.1])).numpy()))
    assert np.all(np.isnan(R.loggamma(k, np.array([-1.0, -0.5, -0.1])).numpy()))


# ---------------------------------------------------------------------------------------------
# The distributions built on gamma
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_beta_chisquare_t_f_are_jax_draws(seed, x64):
    fdt = np.float64 if x64 else np.float32
    # (a, b, shape): scalars, and a row of the parameters broadcast over (3, 4)
    grid = [(2.5, 0.7, ()), (0.3, 2.0, (7,)), (np.array([0.3, 1.0, 2.5, 40.0], dtype=fdt),
                                              np.array([2.0, 1.0, 0.7, 3.0], dtype=fdt), (3, 4))]
    cases = []
    for qd, jd in dtypes(x64):
        for a, b, shape in grid if qd is None else grid[2:]:
            if qd is not None:  # JAX refuses to cast float64 parameters to a float32 sample
                a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
            lab = (shape, jd)
            cases += [(("beta",) + lab, lambda k, a=a, b=b, s=shape, d=qd: R.beta(k, a, b, s, d),
                       lambda j, a=a, b=b, s=shape, d=jd: jax.random.beta(j, a, b, s, d)),
                      (("chisquare",) + lab, lambda k, a=a, s=shape, d=qd: R.chisquare(k, a, s, d),
                       lambda j, a=a, s=shape, d=jd: jax.random.chisquare(j, a, s, d)),
                      (("t",) + lab, lambda k, a=a, s=shape, d=qd: R.t(k, a, s, d),
                       lambda j, a=a, s=shape, d=jd: jax.random.t(j, a, s, d)),
                      # (JAX's f divides without broadcasting: parameters of the sample's shape)
                      (("f",) + lab, lambda k, a=a, b=b, s=shape, d=qd: R.f(k, a, b, s, d),
                       lambda j, a=np.broadcast_to(a, shape), b=np.broadcast_to(b, shape), s=shape, d=jd:
                       jax.random.f(j, a, b, s, d))]
    a, b, c = np.array([0.5, 3.0, 20.0], dtype=fdt), np.array([[2.0], [0.4]], dtype=fdt), np.array([2.0, 0.4, 7.0])
    cases += [("beta arrays", lambda k: R.beta(k, a, b), lambda j: jax.random.beta(j, a, b)),
              ("chisquare array", lambda k: R.chisquare(k, a, (2, 3)), lambda j: jax.random.chisquare(j, a, (2, 3))),
              ("t array", lambda k: R.t(k, a), lambda j: jax.random.t(j, a)),
              ("f arrays", lambda k: R.f(k, a, c.astype(fdt)), lambda j: jax.random.f(j, a, c.astype(fdt)))]
    check_cases("beta chisquare t f", cases, seed, x64, atol=1.2e-38)


@pytest.mark.parametrize("seed", SEEDS)
def test_dirichlet_is_jax_draws(seed, x64):
    alpha = np.array([0.3, 1.0, 2.5, 40.0])
    cases = [(("dirichlet", shape), lambda k, s=shape: R.dirichlet(k, alpha, s),
              lambda j, s=shape: jax.random.dirichlet(j, alpha, s)) for shape in SHAPES]
    batch = np.array([[0.3, 1.0, 2.5], [5.0, 5.0, 0.1]], dtype=np.float64 if x64 else np.float32)
    zero = np.array([0.0, 1.0, 1e-3])
    cases += [("batch", lambda k: R.dirichlet(k, batch), lambda j: jax.random.dirichlet(j, batch)),
              ("zero", lambda k: R.dirichlet(k, zero), lambda j: jax.random.dirichlet(j, zero))]
    check_cases("dirichlet", cases, seed, x64)


@pytest.mark.parametrize("seed", SEEDS)
def test_generalized_normal_and_ball_are_jax_draws(seed, x64):
    cases = []
    for p, shape in ((0.5, (3, 4)), (1.0, (7,)), (2.0, ()), (3.7, (3, 4))):
        cases += [(("generalized_normal", p, shape), lambda k, p=p, s=shape: R.generalized_normal(k, p, s),
                   lambda j, p=p, s=shape: jax.random.generalized_normal(j, p, s)),
                  (("ball", p, shape), lambda k, p=p, s=shape: R.ball(k, 3, p, s),
                   lambda j, p=p, s=shape: jax.random.ball(j, 3, p, s))]
    cases.append(("ball d=1", lambda k: R.ball(k, 1, 2.0, (5,)), lambda j: jax.random.ball(j, 1, 2.0, (5,))))
    if x64:  # 1 / p in float64, the samples in float32 (as JAX's weakly typed p)
        cases.append(("float32", lambda k: R.generalized_normal(k, 0.3, (7,), qb.float32),
                      lambda j: jax.random.generalized_normal(j, 0.3, (7,), jnp.float32)))
    check_cases("generalized_normal ball", cases, seed, x64)


# ---------------------------------------------------------------------------------------------
# poisson, binomial, multinomial
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_poisson_is_jax_draws(seed, x64):
    # Knuth's method below 10, the rejection method above; each lam over (3, 7)
    lams = np.array([0.0, 0.5, 4.0, 9.99, 10.0, 25.0, 300.0])
    column = np.array([[0.5], [12.0], [150.0]])
    # 0 at lam = 0, -1 for negative and NaN lam, JAX's counts for lam = inf
    edges = np.array([-1.0, 0.0, np.nan, 3.0, np.inf, 20.0, -np.inf])
    cases = [("knuth", lambda k: R.poisson(k, 4.0), lambda j: jax.random.poisson(j, 4.0)),
             ("ptrs", lambda k: R.poisson(k, 25.0, (7,)), lambda j: jax.random.poisson(j, 25.0, (7,))),
             ("grid", lambda k: R.poisson(k, lams, (3, 7)), lambda j: jax.random.poisson(j, lams, (3, 7))),
             ("broadcast", lambda k: R.poisson(k, column, (3, 4)), lambda j: jax.random.poisson(j, column, (3, 4))),
             ("lam's shape", lambda k: R.poisson(k, column), lambda j: jax.random.poisson(j, column)),
             ("int32", lambda k: R.poisson(k, 7.0, (50,), qb.int32),
              lambda j: jax.random.poisson(j, 7.0, (50,), jnp.int32)),
             ("edges", lambda k: R.poisson(k, edges), lambda j: jax.random.poisson(j, edges))]
    check_cases("poisson", cases, seed, x64)


@pytest.mark.parametrize("seed", SEEDS)
def test_binomial_is_jax_draws(seed, x64):
    fdt = np.float64 if x64 else np.float32
    # inversion where n min(p, 1 - p) <= 10, BTRS above; each (n, p) over (3, 7)
    ns = np.array([10.0, 5.0, 100.0, 100.0, 1000.0, 50.0, 7.5], dtype=fdt)
    ps = np.array([0.3, 0.9, 0.05, 0.5, 0.3, 0.8, 0.2], dtype=fdt)
    n, p = np.array([[3.0], [40.0], [500.0]], dtype=fdt), np.array([0.1, 0.5, 0.7, 0.99], dtype=fdt)
    # NaN for negative or NaN n and p outside [0, 1] or NaN, inf for n = inf, floored n
    en = np.array([-1.0, 3.5, 5.0, np.inf, np.nan, 7, 7, 7, 0, 30, 30, np.inf])
    ep = np.array([0.5, 0.5, 1.5, 0.3, 0.5, np.nan, 0.0, 1.0, 0.5, 0.6, -0.1, 0.7])
    cases = [("inversion", lambda k: R.binomial(k, 10.0, 0.3), lambda j: jax.random.binomial(j, 10.0, 0.3)),
             ("btrs", lambda k: R.binomial(k, 1000.0, 0.7, (7,)), lambda j: jax.random.binomial(j, 1000.0, 0.7, (7,))),
             ("grid", lambda k: R.binomial(k, ns, ps, (3, 7)), lambda j: jax.random.binomial(j, ns, ps, (3, 7))),
             ("arrays", lambda k: R.binomial(k, n, p), lambda j: jax.random.binomial(j, n, p)),
             ("edges", lambda k: R.binomial(k, en, ep), lambda j: jax.random.binomial(j, en, ep))]
    if x64:
        cases.append(("float32", lambda k: R.binomial(k, ns.astype(np.float32), ps.astype(np.float32), (3, 7)),
                      lambda j: jax.random.binomial(j, ns.astype(np.float32), ps.astype(np.float32), (3, 7))))
    check_cases("binomial", cases, seed, x64)


@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_is_jax_draws(seed, x64):
    p = np.array([0.2, 0.5, 0.3], dtype=np.float64 if x64 else np.float32)
    cases = [(("multinomial", n), lambda k, n=n: R.multinomial(k, n, p, shape=(4, 3)),
              lambda j, n=n: jax.random.multinomial(j, n, p, shape=(4, 3))) for n in (10.0, 100.0)]
    cases.append(("p's shape", lambda k: R.multinomial(k, 30.0, p), lambda j: jax.random.multinomial(j, 30.0, p)))
    check_cases("multinomial", cases, seed, x64)


# ---------------------------------------------------------------------------------------------
# jit, vmap over keys, derivatives
# ---------------------------------------------------------------------------------------------


def _samplers(fdt):
    a = np.array([[0.3], [2.5]], dtype=fdt)
    alpha = np.array([0.5, 2.0], dtype=fdt)
    return {
        "gamma": (lambda kk: R.gamma(kk, a, (2, 3)), lambda kk: jax.random.gamma(kk, a, (2, 3))),
        "loggamma": (lambda kk: R.loggamma(kk, 0.3, (4,)), lambda kk: jax.random.loggamma(kk, 0.3, (4,))),
        "beta": (lambda kk: R.beta(kk, a, 1.5, (2, 3)), lambda kk: jax.random.beta(kk, a, 1.5, (2, 3))),
        "dirichlet": (lambda kk: R.dirichlet(kk, alpha, (3,)), lambda kk: jax.random.dirichlet(kk, alpha, (3,))),
        "chisquare": (lambda kk: R.chisquare(kk, 3.0, (4,)), lambda kk: jax.random.chisquare(kk, 3.0, (4,))),
        "t": (lambda kk: R.t(kk, 4.0, (4,)), lambda kk: jax.random.t(kk, 4.0, (4,))),
        "f": (lambda kk: R.f(kk, 2.0, 5.0, (4,)), lambda kk: jax.random.f(kk, 2.0, 5.0, (4,))),
        "generalized_normal": (lambda kk: R.generalized_normal(kk, 1.5, (4,)),
                               lambda kk: jax.random.generalized_normal(kk, 1.5, (4,))),
        "ball": (lambda kk: R.ball(kk, 3, 2.0, (2,)), lambda kk: jax.random.ball(kk, 3, 2.0, (2,))),
        "poisson": (lambda kk: R.poisson(kk, np.array([3.0, 15.0]), (3, 2)),
                    lambda kk: jax.random.poisson(kk, np.array([3.0, 15.0]), (3, 2))),
        "binomial": (lambda kk: R.binomial(kk, np.array([8.0, 50.0]), 0.3, (3, 2)),
                     lambda kk: jax.random.binomial(kk, np.array([8.0, 50.0]), 0.3, (3, 2))),
        "multinomial": (lambda kk: R.multinomial(kk, 20.0, alpha / 2.5, shape=(3, 2)),
                        lambda kk: jax.random.multinomial(kk, 20.0, alpha / 2.5, shape=(3, 2))),
    }


def test_jit_and_vmap_over_keys_give_jax_draws(x64):
    samplers = _samplers(np.float64 if x64 else np.float32)
    # JAX's draws for five keys, all samplers in one vmapped, jitted function
    keys = jax.random.split(jax.random.key(3), 5)
    wants = jax.jit(jax.vmap(lambda kk: [fj(kk) for _, fj in samplers.values()]))(keys)
    qkeys = R.split(R.key(3), 5)
    for (name, (fq, _)), want in zip(samplers.items(), wants):
        want = np.asarray(want)
        for how, got in (("eager", fq(qkeys[1])), ("jit", qb.jit(fq)(qkeys[1]))):
            try:
                close(got, want[1])
            except AssertionError as e:
                raise AssertionError(f"{name} {how}: {e}") from None
        for how, f in (("vmap", qb.vmap(fq)), ("jit of vmap", qb.jit(qb.vmap(fq)))):
            try:
                close(f(qkeys), want)
            except AssertionError as e:
                raise AssertionError(f"{name} {how}: {e}") from None


def test_reparameterisation_derivatives_are_jaxs(x64):
    k, j = R.key(1), jax.random.key(1)
    rtol = 1e-10 if x64 else 5e-5
    cases = [
        ("gamma", lambda s: R.gamma(k, s, (5,)), lambda s: jax.random.gamma(j, s, (5,))),
        ("loggamma", lambda s: R.loggamma(k, s, (5,)), lambda s: jax.random.loggamma(j, s, (5,))),
        ("beta", lambda s: R.beta(k, s, 2.0, (5,)), lambda s: jax.random.beta(j, s, 2.0, (5,))),
        ("chisquare", lambda s: R.chisquare(k, s, (5,)), lambda s: jax.random.chisquare(j, s, (5,))),
        ("dirichlet", lambda s: R.dirichlet(k, qb.stack([s, s * 2.0]), (5,))[:, 0],
         lambda s: jax.random.dirichlet(j, jnp.stack([s, s * 2.0]), (5,))[:, 0]),
    ]
    jac = jax.jit(jax.vmap(lambda s: [jax.jacfwd(fj)(s) for _, _, fj in cases]))
    a = np.array([0.3, 2.5], dtype=np.float64 if x64 else np.float32)
    wants = jac(jnp.asarray(a))
    for (name, fq, _), want in zip(cases, wants):
        want = np.asarray(want)
        for i, ai in enumerate(a):
            np.testing.assert_allclose(qb.jacfwd(fq)(qb.asarray(ai)).numpy(), want[i], rtol=rtol, err_msg=name)
            np.testing.assert_allclose(qb.grad(lambda s: qb.sum(fq(s)))(qb.asarray(ai)).item(), want[i].sum(),
                                       rtol=rtol, err_msg=name)
