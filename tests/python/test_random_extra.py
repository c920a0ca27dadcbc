"""qb.random's lognormal, pareto, weibull_min, maxwell, double_sided_maxwell and triangular
give jax.random's samples for the same key (JAX's formulas on JAX's bits), in float64 and
float32, eagerly and under jit, with grad and vmap where JAX's work."""
import numpy as np
import pytest

import quabla as qb
from quabla import random as R

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def x64():
    before, qb_before = jax.config.jax_enable_x64, qb.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    qb.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)
    qb.config.update("jax_enable_x64", qb_before)


CASES = [
    ("lognormal", lambda m, k, d: m.lognormal(k, 0.7, (50,), dtype=d)),
    ("lognormal_array_sigma", lambda m, k, d: m.lognormal(k, m_arr(m, [0.2, 1.0, 2.5], d), dtype=d)),
    ("pareto", lambda m, k, d: m.pareto(k, 3.0, (40,), dtype=d)),
    ("pareto_array_b", lambda m, k, d: m.pareto(k, m_arr(m, [[1.0], [4.0]], d), (2, 5), dtype=d)),
    ("weibull_min", lambda m, k, d: m.weibull_min(k, 2.0, 1.5, (60,), dtype=d)),
    ("maxwell", lambda m, k, d: m.maxwell(k, (7, 3), dtype=d)),
    ("double_sided_maxwell", lambda m, k, d: m.double_sided_maxwell(k, 1.0, 2.0, (30,), dtype=d)),
    ("double_sided_maxwell_params", lambda m, k, d: m.double_sided_maxwell(
        k, m_arr(m, [0.0, 5.0], d), m_arr(m, [1.0, 0.5], d), (3,), dtype=d)),
    ("double_sided_maxwell_no_shape", lambda m, k, d: m.double_sided_maxwell(
        k, m_arr(m, [0.0, 5.0], d), 1.0, dtype=d)),
    ("triangular", lambda m, k, d: m.triangular(k, -1.0, 0.5, 2.0, (80,), dtype=d)),
    ("triangular_arrays", lambda m, k, d: m.triangular(k, m_arr(m, [0.0, 1.0], d), m_arr(m, [0.2, 3.0], d),
                                                       m_arr(m, [1.0, 3.5], d), dtype=d)),
]


def m_arr(module, values, d):
    return (jnp if module is jax.random else qb).asarray(values, dtype=d)


@pytest.mark.parametrize("name, draw", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_samples_equal_jax_for_the_same_key(name, draw, dtype):
    qd, jd = getattr(qb, dtype), getattr(jnp, dtype)
    for seed in (0, 7, 123456789):
        got = draw(R, R.key(seed), qd)
        want = draw(jax.random, jax.random.key(seed), jd)
        assert got.dtype == qd and tuple(got.shape) == tuple(want.shape)
        rtol = 1e-13 if dtype == "float64" else 2e-6
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=0)
    raw = draw(R, R.PRNGKey(3), qd)
    np.testing.assert_allclose(np.asarray(raw), np.asarray(draw(jax.random, jax.random.PRNGKey(3), jd)),
                               rtol=1e-13 if dtype == "float64" else 2e-6)
    jitted = qb.jit(lambda k: draw(R, k, qd))(R.key(11))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(draw(jax.random, jax.random.key(11), jd)),
                               rtol=1e-13 if dtype == "float64" else 2e-6)


def test_default_shapes_and_moments():
    k = R.key(5)
    assert R.lognormal(k).shape == () and R.pareto(k, qb.ones((2, 3))).shape == (2, 3)
    assert R.weibull_min(k, 1.0, 1.0).shape == () and R.maxwell(k).shape == ()
    n = 200_000
    x = np.asarray(R.lognormal(k, 0.5, (n,)))
    np.testing.assert_allclose(x.mean(), np.exp(0.125), rtol=1e-2)
    x = np.asarray(R.weibull_min(k, 2.0, 1.0, (n,)))  # concentration 1: exponential with mean 2
    np.testing.assert_allclose(x.mean(), 2.0, rtol=1e-2)
    x = np.asarray(R.maxwell(k, (n,)))
    np.testing.assert_allclose(x.mean(), 2 * np.sqrt(2 / np.pi), rtol=1e-2)
    x = np.asarray(R.triangular(k, 0.0, 1.0, 4.0, (n,)))
    assert x.min() >= 0.0 and x.max() <= 4.0
    np.testing.assert_allclose(x.mean(), 5.0 / 3.0, rtol=1e-2)


def test_grad_and_vmap_match_jax():
    g = qb.grad(lambda s: qb.sum(R.lognormal(R.key(1), s, (5,))))(qb.asarray(0.8))
    jg = jax.grad(lambda s: jnp.sum(jax.random.lognormal(jax.random.key(1), s, (5,))))(0.8)
    np.testing.assert_allclose(float(g), float(jg), rtol=1e-12)
    g = qb.grad(lambda c: qb.sum(R.weibull_min(R.key(2), 1.5, c, (5,))))(qb.asarray(2.0))
    jg = jax.grad(lambda c: jnp.sum(jax.random.weibull_min(jax.random.key(2), 1.5, c, (5,))))(2.0)
    np.testing.assert_allclose(float(g), float(jg), rtol=1e-12)
    g = qb.grad(lambda m: qb.sum(R.triangular(R.key(4), 0.0, m, 2.0, (6,))))(qb.asarray(0.7))
    jg = jax.grad(lambda m: jnp.sum(jax.random.triangular(jax.random.key(4), 0.0, m, 2.0, (6,))))(0.7)
    np.testing.assert_allclose(float(g), float(jg), rtol=1e-12)
    keys, jkeys = R.split(R.key(9), 4), jax.random.split(jax.random.key(9), 4)
    got = qb.vmap(lambda k: R.pareto(k, 2.0, (3,)))(keys)
    want = jax.vmap(lambda k: jax.random.pareto(k, 2.0, (3,)))(jkeys)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="dtype"):
        R.maxwell(R.key(0), (2,), dtype=qb.int32)
    with pytest.raises(ValueError, match="broadcast"):
        R.pareto(R.key(0), qb.ones(3), (2,))
    with pytest.raises(ValueError, match="broadcast"):
        R.triangular(R.key(0), qb.zeros(2), 0.5, 1.0, (3,))
