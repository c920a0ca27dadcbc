"""qb.random gives jax.random's numbers for the same key: keys, splits, fold_in and the
integer and uniform draws bit for bit, normals and the distributions built on logs within
the last bits of the libm functions behind them (checked against JAX itself, eagerly and
under jit, with JAX's x64 mode on and off)."""
import math

import numpy as np
import pytest

import quabla as qb
from quabla import random as R

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")



def words(k):
    return np.asarray(k).view(np.uint32)


def exact(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        if b.dtype.kind == "u":  # JAX's unsigned words: compare the bits of ours
            assert a.dtype.itemsize == b.dtype.itemsize, (a.dtype, b.dtype)
            a = a.view(b.dtype)
        np.testing.assert_array_equal(a.astype(np.int64) if b.dtype.kind == "i" else a, b)
    else:
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_array_equal(a, b)


def close(a, b, rtol, atol=0.0):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


SEEDS = [0, 42, 2026, 2**40 + 7]


@pytest.mark.parametrize("seed", SEEDS)
def test_keys_splits_and_fold_in_are_jax_words(seed, x64):
    if not x64 and seed >= 2**31:
        pytest.skip("JAX takes 32-bit seeds without x64")
    k, j = R.PRNGKey(seed), jax.random.PRNGKey(seed)
    exact(words(k), j)
    exact(words(R.key(seed).data), jax.random.key_data(jax.random.key(seed)))
    exact(words(R.split(k, 5)), jax.random.split(j, 5))
    exact(words(R.split(k, (2, 3))), jax.random.split(j, (2, 3)))
    exact(words(R.fold_in(k, 123)), jax.random.fold_in(j, 123))
    exact(words(R.fold_in(R.fold_in(k, 1), 2**32 - 1)), jax.random.fold_in(jax.random.fold_in(j, 1), 2**32 - 1))
    exact(words(qb.jit(lambda kk: R.split(kk, 4))(k)), jax.random.split(j, 4))
    exact(words(qb.jit(lambda kk, d: R.fold_in(kk, d))(k, qb.asarray(77))), jax.random.fold_in(j, 77))


def test_negative_and_array_seeds_as_jax(x64):
    for seed in (-1, -5, 7):
        exact(words(R.PRNGKey(seed)), jax.random.PRNGKey(seed))
        exact(words(qb.jit(lambda s: R.key(s).data)(qb.asarray(seed))), jax.random.PRNGKey(jnp.asarray(seed)))


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_bits_uniform_and_integers_are_bit_exact(seed, x64):
    k, j = R.PRNGKey(seed), jax.random.PRNGKey(seed)
    exact(R.bits(k, (9,)), jax.random.bits(j, (9,)))
    exact(R.bits(k, (9,), qb.int32), jax.random.bits(j, (9,), jnp.uint32))
    for dtype, jdtype in ((None, None), (qb.float32, jnp.float32)) + (((qb.float64, jnp.float64),) if x64 else ()):
        exact(R.uniform(k, (1000,), dtype), jax.random.uniform(j, (1000,), jdtype))
        exact(R.uniform(k, (3, 100), dtype, -3.0, 5.5), jax.random.uniform(j, (3, 100), jdtype, -3.0, 5.5))
        lo, hi = np.array([0.0, -1.0, 10.0]), np.array([1.0, 1.0, 10.5])
        exact(R.uniform(k, (100, 3), dtype, lo, hi), jax.random.uniform(j, (100, 3), jdtype, lo, hi))
        exact(qb.jit(lambda kk: R.uniform(kk, (500,), dtype))(k), jax.random.uniform(j, (500,), jdtype))
    exact(R.bernoulli(k, 0.3, (1000,)), jax.random.bernoulli(j, 0.3, (1000,)))
    p = np.linspace(0.0, 1.0, 7, dtype=np.float64 if x64 else np.float32)  # JAX would cast float64 to float32
    exact(R.bernoulli(k, p), jax.random.bernoulli(j, p))
    exact(R.rademacher(k, (100,)), jax.random.rademacher(j, (100,)))
    bounds = [(0, 10), (3, 17), (-7, 100000), (-5, 2**31 - 1), (5, 5), (9, 2)]
    if x64:
        bounds += [(-5, 10**12), (0, 2**33 + 7), (-(2**40), 2**44)]
    for lo, hi in bounds:
        exact(R.randint(k, (1000,), lo, hi), jax.random.randint(j, (1000,), lo, hi))
        exact(R.randint(k, (1000,), lo, hi, qb.int32) if hi < 2**31 else 0,
              jax.random.randint(j, (1000,), lo, hi, jnp.int32) if hi < 2**31 else 0)
    exact(R.randint(k, (500,), -2**31, 2**31 - 1, qb.int32), jax.random.randint(j, (500,), -2**31, 2**31 - 1, jnp.int32))
    exact(R.randint(k, (4, 3), np.array([0, 10, -3]), np.array([5, 1000, 3])),
          jax.random.randint(j, (4, 3), np.array([0, 10, -3]), np.array([5, 1000, 3])))
    exact(qb.jit(lambda kk: R.randint(kk, (300,), 0, 1000))(k), jax.random.randint(j, (300,), 0, 1000))
    exact(qb.jit(lambda kk: R.randint(kk, (300,), -9, 70000, qb.int32))(k),
          jax.random.randint(j, (300,), -9, 70000, jnp.int32))


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_permutations_and_choices_are_jax(seed, x64):
    k, j = R.PRNGKey(seed), jax.random.PRNGKey(seed)
    for n in (1, 10, 5000):  # 5000 takes two sort rounds
        exact(R.permutation(k, n), jax.random.permutation(j, n))
    fl = np.float64 if x64 else np.float32  # without x64 JAX casts float64 inputs to float32
    x = np.arange(12.0, dtype=fl).reshape(4, 3)
    exact(R.permutation(k, x), jax.random.permutation(j, x))
    exact(R.permutation(k, x, axis=1, independent=True), jax.random.permutation(j, x, axis=1, independent=True))
    exact(qb.jit(lambda kk: R.permutation(kk, 50))(k), jax.random.permutation(j, 50))
    exact(R.choice(k, 10, (6,)), jax.random.choice(j, 10, (6,)))
    exact(R.choice(k, 10, (6,), replace=False), jax.random.choice(j, 10, (6,), replace=False))
    exact(R.choice(k, x, (2,), replace=False, axis=1), jax.random.choice(j, x, (2,), replace=False, axis=1))
    p = np.array([0.1, 0.2, 0.3, 0.4], dtype=fl)
    exact(R.choice(k, 4, (20,), p=p), jax.random.choice(j, 4, (20,), p=p))
    exact(R.choice(k, 4, (3,), replace=False, p=p), jax.random.choice(j, 4, (3,), replace=False, p=p))
    logits = np.log(np.arange(1.0, 13.0, dtype=fl)).reshape(3, 4)
    exact(R.categorical(k, logits), jax.random.categorical(j, logits))
    exact(R.categorical(k, logits, axis=0), jax.random.categorical(j, logits, axis=0))
    exact(R.categorical(k, logits, shape=(5, 3)), jax.random.categorical(j, logits, shape=(5, 3)))
    exact(R.categorical(k, logits, shape=(2, 3), replace=False),
          jax.random.categorical(j, logits, shape=(2, 3), replace=False))


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_normals_and_initializers_match_jax(seed, x64):
    k, j = R.PRNGKey(seed), jax.random.PRNGKey(seed)
    # float64: XLA's erfinv is about 1.5e-13 off in the tails (ours is within a few ulp).
    dtypes = [(qb.float32, jnp.float32, 1e-6, 3e-7)] + ([(qb.float64, jnp.float64, 5e-13, 1e-15)] if x64 else [])
    for dtype, jdtype, rtol, atol in dtypes:
        close(R.normal(k, (20000,), dtype), jax.random.normal(j, (20000,), jdtype), rtol, atol)
        close(qb.jit(lambda kk: R.normal(kk, (2000,), dtype))(k), jax.random.normal(j, (2000,), jdtype), rtol, atol)
        # Truncated normals: erf(lower / sqrt 2) may differ by an ulp, moving u by 1e-7 in float32.
        tr = (rtol, 1e-6) if dtype == qb.float32 else (rtol, 1e-14)
        close(R.truncated_normal(k, -2.0, 2.0, (5000,), dtype), jax.random.truncated_normal(j, -2.0, 2.0, (5000,), jdtype),
              *tr)
        close(R.truncated_normal(k, np.array([-1.0, 0.0]), np.array([1.0, 3.0]), (100, 2), dtype),
              jax.random.truncated_normal(j, np.array([-1.0, 0.0]), np.array([1.0, 3.0]), (100, 2), jdtype), *tr)
        for name in ("glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal"):
            close(getattr(R, name)(k, (16, 32), dtype), getattr(jax.nn.initializers, name)()(j, (16, 32), jdtype), *tr)
            close(getattr(qb.nn.initializers, name)()(k, (3, 3, 8, 4), dtype),
                  getattr(jax.nn.initializers, name)()(j, (3, 3, 8, 4), jdtype), *tr)
        close(qb.nn.initializers.uniform(0.3)(k, (50,), dtype), jax.nn.initializers.uniform(0.3)(j, (50,), jdtype), 0, 0)
        close(qb.nn.initializers.normal(0.3)(k, (50,), dtype), jax.nn.initializers.normal(0.3)(j, (50,), jdtype), rtol, atol)
        # Distributions made of logs of uniforms: within JAX's own log/log1p accuracy (about 1e-14).
        lrtol = 2e-6 if dtype == qb.float32 else 1e-13
        for name in ("gumbel", "exponential", "laplace", "logistic", "cauchy"):
            close(getattr(R, name)(k, (2000,), dtype), getattr(jax.random, name)(j, (2000,), jdtype), lrtol, 10 * atol)
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    if x64:
        close(R.multivariate_normal(k, np.zeros(2), cov, (50,)), jax.random.multivariate_normal(j, np.zeros(2), cov, (50,)),
              1e-12, 1e-14)
        close(R.orthogonal(k, 4), jax.random.orthogonal(j, 4), 1e-12, 1e-14)


def test_a_ported_training_setup_draws_jax_numbers():
    """The opening lines of a JAX PINN script, run unchanged: the same parameters and batches."""
    def setup(random, initializers, np_):
        key = random.PRNGKey(2026)
        key, k1, k2 = random.split(key, 3)
        w1 = initializers.glorot_normal()(k1, (2, 16))
        w2 = initializers.glorot_normal()(k2, (16, 1))
        key, sub = random.split(key)
        batch = random.uniform(sub, (64, 2), minval=-1.0, maxval=1.0)
        idx = random.choice(key, 64, (8,), replace=False)
        return [np.asarray(w1), np.asarray(w2), np.asarray(batch), np.asarray(idx)]

    jax_before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        ours = setup(R, qb.nn.initializers, qb)
        theirs = setup(jax.random, jax.nn.initializers, jnp)
    finally:
        jax.config.update("jax_enable_x64", jax_before)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert math.isclose(float(ours[2][0, 0]), float(theirs[2][0, 0]), rel_tol=0, abs_tol=0)
