"""qb.random keys as values (jax.random's model): traced keys under jit, vmap and loops give
the bits of concrete keys; raw keys; the samplers beyond uniform and normal against their
distributions (Kolmogorov-Smirnov against SciPy, frequencies, moments); errors."""
import math

import numpy as np
import pytest
import scipy.stats as st

import quabla as qb
from quabla import _core

R = qb.random


def test_composed_rounds_give_the_cores_bits():
    for seed in (0, 1, 2**40 + 3, -7):
        k = R.key(seed)
        first, second = _core.random_blocks(*k.words, (3, 700))
        tf, ts = R._traced_blocks(k, (3, 700))  # the composition, run eagerly
        np.testing.assert_array_equal(first.numpy(), tf.numpy())
        np.testing.assert_array_equal(second.numpy(), ts.numpy())
    # Known answer through the composition (Random123's vector, as in test_random.py).
    x0, x1 = R._threefry(0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3)
    assert (int(x0.item()) & 0xFFFFFFFF, int(x1.item()) & 0xFFFFFFFF) == (0xC4923A9C, 0x483DF7A0)


@pytest.mark.parametrize("dtype", [qb.float32, qb.float64])
def test_jitted_draws_equal_eager_draws(dtype):
    k = R.key(11)
    shape = (37, 5)
    eager_u = R.uniform(k, shape, dtype).numpy()
    jit_u = qb.jit(lambda kk: R.uniform(kk, shape, dtype))(k).numpy()
    np.testing.assert_array_equal(eager_u, jit_u)  # the same bits, exactly
    tol = 1e-6 if dtype == qb.float32 else 1e-13
    np.testing.assert_allclose(qb.jit(lambda kk: R.normal(kk, shape, dtype))(k).numpy(),
                               R.normal(k, shape, dtype).numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(qb.jit(lambda kk: R.truncated_normal(kk, -0.5, 1.5, shape, dtype))(k).numpy(),
                               R.truncated_normal(k, -0.5, 1.5, shape, dtype).numpy(), rtol=tol, atol=tol)
    np.testing.assert_array_equal(qb.jit(lambda kk: R.randint(kk, shape, -3, 9))(k).numpy(),
                                  R.randint(k, shape, -3, 9).numpy())


def test_key_derivation_under_jit_equals_eager():
    k = R.key(5)
    assert qb.jit(lambda kk: R.split(kk, 3))(k) == R.split(k, 3)
    assert qb.jit(lambda kk: R.fold_in(kk, 12))(k) == R.fold_in(k, 12)
    assert qb.jit(lambda kk, i: R.fold_in(kk, i))(k, qb.asarray(12)) == R.fold_in(k, 12)
    for seed, dtype in ((0, qb.int32), (123, qb.int32), (-5, qb.int32), (-5, qb.int64), (2**33 + 1, qb.int64)):
        s = qb.asarray(seed, dtype=dtype)
        assert qb.jit(R.key)(s) == R.key(s)
        # JAX's words: an int64 seed's two halves; an int32 one's high word is 0.
        assert R.key(s).words == ((seed >> 32) & 0xFFFFFFFF if dtype == qb.int64 else 0, seed & 0xFFFFFFFF)
    assert R.split(k, (2, 3)).shape == (2, 3)
    assert R.split(k, (2, 3))[1, 2] == R.split(k, 6)[5]


def test_a_new_key_does_not_retrace():
    traces = []

    @qb.jit
    def step(x, key):
        traces.append(1)
        key, sub = R.split(key)
        return x + R.normal(sub, (4,)).sum(), key

    x, key = qb.asarray(0.0), R.key(0)
    expected_x, expected_key = 0.0, R.key(0)
    for _ in range(5):
        x, key = step(x, key)
        expected_key, sub = R.split(expected_key)
        expected_x += float(R.normal(sub, (4,)).sum().item())
    assert len(traces) == 1
    assert key == expected_key
    assert abs(float(x.item()) - expected_x) < 1e-12


def test_vmap_over_split_keys_equals_a_loop():
    keys = R.split(R.key(3), 6)
    batched = qb.vmap(lambda kk: R.uniform(kk, (4,)))(keys).numpy()
    looped = np.stack([R.uniform(kk, (4,)).numpy() for kk in keys])
    np.testing.assert_array_equal(batched, looped)
    init = qb.vmap(lambda kk: R.glorot_normal(kk, (3, 2)))(keys).numpy()
    np.testing.assert_allclose(init, np.stack([R.glorot_normal(kk, (3, 2)).numpy() for kk in keys]), rtol=1e-13)
    # Raw keys batch the same way.
    raw = R.split(R.PRNGKey(3), 6)
    assert tuple(raw.shape) == (6, 2) and raw.dtype == qb.uint32
    np.testing.assert_array_equal(qb.vmap(lambda kk: R.uniform(kk, (4,)))(raw).numpy(), looped)


def test_keys_in_loop_carries():
    def body(i, carry):
        key, acc = carry
        key, sub = R.split(key)
        return key, acc + R.normal(sub, (3,))

    key, acc = R.key(9), np.zeros(3)
    for _ in range(4):
        key, sub = R.split(key)
        acc = acc + R.normal(sub, (3,)).numpy()
    out_key, out = qb.jit(lambda k: qb.fori_loop(0, 4, body, (k, qb.zeros(3))))(R.key(9))
    assert out_key == key
    np.testing.assert_allclose(out.numpy(), acc, rtol=1e-13)
    out_key2, _ = qb.lax.scan(lambda c, _: (R.split(c)[0], None), R.key(9), None, length=4)
    k = R.key(9)
    for _ in range(4):
        k = R.split(k)[0]
    assert out_key2 == k


def test_raw_keys_and_key_data():
    raw = R.PRNGKey(0)
    assert tuple(raw.shape) == (2,) and raw.dtype == qb.uint32  # JAX's raw keys are uint32
    assert R.wrap_key_data(raw) == R.key(0)
    assert R.key_data(R.key(0)).dtype == qb.uint32
    np.testing.assert_array_equal(R.key_data(R.key(0)).numpy(), raw.numpy())
    # JAX's uint32 words (a NumPy array) and int32 words with the same bits are one key.
    as_int32 = raw.numpy().view(np.int32)
    np.testing.assert_array_equal(R.uniform(as_int32, (5,)).numpy(), R.uniform(R.key(0), (5,)).numpy())
    np.testing.assert_array_equal(R.uniform(raw.numpy(), (5,)).numpy(), R.uniform(R.key(0), (5,)).numpy())
    assert R.split(raw).dtype == qb.uint32 and R.fold_in(raw, 3).dtype == qb.uint32
    sub = R.split(raw)
    assert not isinstance(sub, R.Key) and tuple(sub.shape) == (2, 2)
    assert R.wrap_key_data(sub[1]) == R.split(R.key(0))[1]
    assert tuple(R.fold_in(raw, 3).shape) == (2,)
    a, b = R.split(R.key(0))
    assert a != b and hash(a) == hash(R.split(R.key(0))[0])


def test_samplers_follow_their_distributions():
    k = R.key(2026)
    n = 50000
    for name, dist in (("gumbel", st.gumbel_r), ("exponential", st.expon), ("laplace", st.laplace),
                       ("logistic", st.logistic), ("cauchy", st.cauchy)):
        x = getattr(R, name)(k, (n,)).numpy()
        assert np.all(np.isfinite(x)), name
        assert st.kstest(x, dist.cdf).pvalue > 1e-3, name
    z = R.truncated_normal(k, -1.0, 2.0, (n,)).numpy()
    assert z.min() >= -1.0 and z.max() <= 2.0
    assert st.kstest(z, st.truncnorm(-1.0, 2.0).cdf).pvalue > 1e-3
    r = R.rademacher(k, (n,)).numpy()
    assert set(np.unique(r)) == {-1, 1} and abs(r.mean()) < 0.02
    b = R.bernoulli(k, qb.asarray([0.1, 0.5, 0.9]), (n, 3)).numpy()
    np.testing.assert_allclose(b.mean(axis=0), [0.1, 0.5, 0.9], atol=0.01)
    assert R.bernoulli(k, qb.asarray([0.0, 1.0])).numpy().tolist() == [False, True]


def test_randint():
    k = R.key(4)
    x = R.randint(k, (60000,), -3, 7).numpy()
    assert x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    assert st.chisquare(counts).pvalue > 1e-3
    # Array bounds broadcast; maxval <= minval gives minval; bounds clip to the dtype.
    y = R.randint(k, (1000, 2), qb.asarray([0, 10]), qb.asarray([2, 13])).numpy()
    assert set(np.unique(y[:, 0])) == {0, 1} and set(np.unique(y[:, 1])) == {10, 11, 12}
    assert np.all(R.randint(k, (20,), 5, 5).numpy() == 5)
    big = R.randint(k, (2000,), -2**40, 2**40, dtype=qb.int32).numpy()
    assert big.dtype == np.int32 and big.min() < -2**30 and big.max() > 2**30
    assert R.randint(k, (), 0, 10).dtype == qb.asarray(0).dtype


def test_permutation_and_choice():
    k = R.key(6)
    p = R.permutation(k, 50).numpy()
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    x = qb.arange(12.0).reshape(3, 4)
    cols = R.permutation(k, x, axis=1).numpy()
    assert sorted(cols[0].tolist()) == [0, 1, 2, 3] and np.array_equal(cols, x.numpy()[:, cols[0].astype(int)])
    ind = R.permutation(k, x, axis=1, independent=True).numpy()
    assert all(sorted(row) == sorted(orig) for row, orig in zip(ind.tolist(), x.numpy().tolist()))
    c = R.choice(k, 10, (10,), replace=False).numpy()
    assert sorted(c.tolist()) == list(range(10))
    w = qb.asarray([0.2, 0.0, 0.5, 0.3])
    draws = R.choice(k, qb.asarray([10.0, 20.0, 30.0, 40.0]), (40000,), p=w).numpy()
    freq = np.array([(draws == v).mean() for v in (10.0, 20.0, 30.0, 40.0)])
    np.testing.assert_allclose(freq, [0.2, 0.0, 0.5, 0.3], atol=0.01)
    assert freq[1] == 0.0
    no_rep = R.choice(k, 4, (3,), replace=False, p=w).numpy()
    assert len(set(no_rep.tolist())) == 3 and 1 not in no_rep.tolist()
    rows = R.choice(k, x, (2,), replace=False, axis=0).numpy()
    assert rows.shape == (2, 4) and len({tuple(r) for r in rows.tolist()}) == 2


def test_categorical():
    k = R.key(8)
    logits = qb.asarray([[0.0, math.log(3.0)], [math.log(9.0), 0.0]])
    draws = R.categorical(k, logits, shape=(20000, 2)).numpy()
    np.testing.assert_allclose(draws.mean(axis=0), [0.75, 0.1], atol=0.01)
    by_axis0 = R.categorical(k, logits, axis=0).numpy()
    assert by_axis0.shape == (2,)


def test_multivariate_normal_and_orthogonal():
    k = R.key(10)
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    for method in ("cholesky", "eigh", "svd"):
        x = R.multivariate_normal(k, qb.asarray(mean), qb.asarray(cov), (100000,), method=method).numpy()
        np.testing.assert_allclose(x.mean(axis=0), mean, atol=0.02)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.03)
    q = R.orthogonal(k, 4, (3,)).numpy()
    assert q.shape == (3, 4, 4)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (3, 4, 4)), atol=1e-13)
    wide = R.orthogonal(k, 2, m=5).numpy()
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-13)


def test_uniform_with_array_bounds_and_empty_draws():
    k = R.key(12)
    lo, hi = qb.asarray([0.0, -1.0]), qb.asarray([1.0, 3.0])
    x = R.uniform(k, (5000, 2), minval=lo, maxval=hi).numpy()
    assert np.all(x >= [0.0, -1.0]) and np.all(x < [1.0, 3.0])
    np.testing.assert_allclose(x.mean(axis=0), [0.5, 1.0], atol=0.05)
    np.testing.assert_array_equal(qb.jit(lambda kk: R.uniform(kk, (5000, 2), minval=lo, maxval=hi))(k).numpy(), x)
    assert R.uniform(k, (0, 3)).shape == (0, 3)
    assert R.normal(k, (2, 0)).shape == (2, 0)


def test_nn_initializers():
    k = R.key(13)
    init = qb.nn.initializers
    np.testing.assert_array_equal(init.glorot_normal()(k, (64, 32)).numpy(), R.glorot_normal(k, (64, 32)).numpy())
    w = init.he_uniform()(k, (256, 128)).numpy()
    limit = math.sqrt(6.0 / 256)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    conv = init.lecun_normal(in_axis=-2, out_axis=-1)(k, (3, 3, 16, 8)).numpy()
    assert abs(conv.std() / math.sqrt(1.0 / (9 * 16)) - 1.0) < 0.06
    n = init.normal(0.5)(k, (40000,)).numpy()
    assert abs(n.std() - 0.5) < 0.01
    assert init.zeros(k, (2, 3)).numpy().tolist() == [[0.0] * 3] * 2
    assert init.constant(7.0)(k, (2,)).numpy().tolist() == [7.0, 7.0]
    q = init.orthogonal(scale=2.0)(k, (5, 3)).numpy()
    np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(3), atol=1e-12)
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_x", "normal")


def test_bad_keys_and_arguments_raise():
    k = R.key(0)
    with pytest.raises(TypeError, match="single key"):
        R.normal(R.split(k, 3), (2,))
    with pytest.raises(TypeError, match="expected a key"):
        R.uniform(np.array([0.5, 0.5]), (2,))
    with pytest.raises(TypeError, match=r"shape \(\.\.\., 2\)"):
        R.uniform(np.array([1, 2, 3]), (2,))
    with pytest.raises(TypeError, match="expected a key"):
        R.uniform(7, (2,))
    with pytest.raises(ValueError, match="without replacement"):
        R.choice(k, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="p must have shape"):
        R.choice(k, 3, (2,), p=qb.asarray([0.5, 0.5]))
    with pytest.raises(ValueError, match="method"):
        R.multivariate_normal(k, qb.zeros(2), qb.eye(2), method="qr")
    with pytest.raises(TypeError, match="traced"):
        qb.jit(lambda kk: hash(kk) and kk)(k)
    with pytest.raises(TypeError, match="integer dtype"):
        R.randint(k, (2,), 0, 3, dtype=qb.float32)


def test_rejection_samplers_follow_their_distributions():
    k = R.key(2026)
    n = 40000
    for a in (0.3, 1.0, 2.5, 30.0):
        assert st.kstest(R.gamma(k, a, (n,)).numpy(), st.gamma(a).cdf).pvalue > 1e-3, a
    assert st.kstest(R.beta(k, 2.0, 0.5, (n,)).numpy(), st.beta(2.0, 0.5).cdf).pvalue > 1e-3
    assert st.kstest(R.chisquare(k, 3.0, (n,)).numpy(), st.chi2(3.0).cdf).pvalue > 1e-3
    assert st.kstest(R.t(k, 4.0, (n,)).numpy(), st.t(4.0).cdf).pvalue > 1e-3
    assert st.kstest(np.exp(R.loggamma(k, 2.0, (n,)).numpy()), st.gamma(2.0).cdf).pvalue > 1e-3
    d = R.dirichlet(k, qb.asarray([1.0, 2.0, 3.0]), (n,)).numpy()
    assert d.shape == (n, 3)
    np.testing.assert_allclose(d.sum(1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(d.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.005)
    for lam in (0.5, 4.0, 9.99, 10.0, 50.0, 1000.0):  # both of poisson's methods
        c = R.poisson(k, lam, (n,)).numpy()
        assert c.dtype == np.dtype(qb.asarray(0).dtype.name) and c.min() >= 0
        obs = np.bincount(c)
        expected = st.poisson(lam).pmf(np.arange(len(obs))) * n
        keep = expected > 5
        assert st.chisquare(obs[keep], expected[keep] / expected[keep].sum() * obs[keep].sum()).pvalue > 1e-3, lam


def test_rejection_samplers_edges_and_transforms():
    k = R.key(7)
    g = R.gamma(k, qb.asarray([-1.0, 0.0, np.nan, 2.0])).numpy()
    assert np.isnan(g[0]) and g[1] == 0.0 and np.isnan(g[2]) and g[3] > 0
    assert R.poisson(k, qb.asarray([-1.0, 0.0, 3.0])).numpy().tolist()[:2] == [-1, 0]
    assert R.gamma(k, 2.0, (0,)).shape == (0,)
    assert R.gamma(k, qb.asarray([1.0, 5.0]), (3, 2)).shape == (3, 2)
    np.testing.assert_array_equal(qb.jit(lambda kk: R.gamma(kk, 2.0, (5,)))(k).numpy(), R.gamma(k, 2.0, (5,)).numpy())
    keys = R.split(k, 3)
    np.testing.assert_array_equal(qb.vmap(lambda kk: R.poisson(kk, 20.0, (4,)))(keys).numpy(),
                                  np.stack([R.poisson(kk, 20.0, (4,)).numpy() for kk in keys]))
    with pytest.raises(ValueError, match="broadcast-compatible"):
        R.gamma(k, qb.ones(3), (2,))
    with pytest.raises(TypeError, match="integer dtype"):
        R.poisson(k, 1.0, (2,), dtype=qb.float64)


def test_review_edges_of_bounds_shapes_and_ints():
    k = R.key(0)
    with pytest.raises(ValueError, match="does not broadcast to the sample shape"):
        R.uniform(k, (), minval=qb.zeros(3))
    with pytest.raises(ValueError, match="does not broadcast to the sample shape"):
        R.randint(k, (), qb.asarray([0, 0, 0]), 100)
    with pytest.raises(ValueError, match="negative dimension"):
        qb.jit(lambda kk: R.normal(kk, (-1, 4)))(k)
    with pytest.raises(ValueError, match="out of range"):
        R.permutation(k, qb.ones((2, 2)), axis=2)
    with pytest.raises(OverflowError):
        R.key(2 ** 70)
    t3 = R.truncated_normal(k, qb.asarray([-1.0, -1.0, -1.0]), 2.0).numpy()
    assert t3.shape == (3,) and len(set(t3.tolist())) == 3
    full = R.randint(k, (4000,), -2 ** 63, 2 ** 63 - 1, dtype=qb.int64).numpy()
    assert (full < 0).mean() > 0.4 and (full > 0).mean() > 0.4
    upper = R.randint(k, (4000,), 0, 2 ** 63 - 1, dtype=qb.int64).numpy()
    assert 0.45 < (upper > 2 ** 62).mean() < 0.55  # the whole span is reached
    assert R.split(k, 0).shape == (0,)
    np.testing.assert_array_equal(R.permutation(k, np.int64(5)).numpy(), R.permutation(k, 5).numpy())
    np.testing.assert_array_equal(R.permutation(k, qb.asarray(5)).numpy(), R.permutation(k, 5).numpy())
    np.testing.assert_array_equal(R.choice(k, np.int64(5), (2,)).numpy(), R.choice(k, 5, (2,)).numpy())


def test_ball_and_generalized_normal():
    k = R.key(3)
    x = R.ball(k, 3, shape=(20000,)).numpy()
    r = np.linalg.norm(x, axis=1)
    assert x.shape == (20000, 3) and r.max() < 1.0
    assert st.kstest(r ** 3, "uniform").pvalue > 1e-3  # uniform in volume: P(r < s) = s^3
    assert np.abs(R.ball(k, 2, p=1.0, shape=(5000,)).numpy()).sum(1).max() < 1.0
    assert st.kstest(R.generalized_normal(k, 1.5, (20000,)).numpy(), st.gennorm(1.5).cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="positive int"):
        R.ball(k, 0)


@pytest.mark.parametrize("n, p", [(10, 0.3), (5, 0.9), (100, 0.05), (100, 0.5), (1000, 0.3), (50, 0.8)])
def test_binomial_follows_its_distribution(n, p):
    draws = 40000
    c = R.binomial(R.key(5), n, p, (draws,)).numpy()
    assert c.dtype == np.float64 and c.min() >= 0 and c.max() <= n and np.all(c == np.floor(c))
    obs = np.bincount(c.astype(int), minlength=n + 1)
    expected = st.binom(n, p).pmf(np.arange(len(obs))) * draws
    keep = expected > 5
    assert st.chisquare(obs[keep], expected[keep] / expected[keep].sum() * obs[keep].sum()).pvalue > 1e-3


def test_binomial_edges():
    k = R.key(5)
    assert R.binomial(k, 0, 0.5, (5,)).numpy().tolist() == [0.0] * 5
    assert R.binomial(k, 7, 0.0, (5,)).numpy().tolist() == [0.0] * 5
    assert R.binomial(k, 7, 1.0, (5,)).numpy().tolist() == [7.0] * 5
    b = R.binomial(k, qb.asarray([-1.0, 3.5, 5.0]), qb.asarray([0.5, 0.5, 1.5])).numpy()
    assert np.isnan(b[0]) and np.isnan(b[2]) and b[1] in (0.0, 1.0, 2.0, 3.0)  # n = 3.5 is floored, as in JAX
    np.testing.assert_array_equal(qb.jit(lambda kk: R.binomial(kk, 20.0, 0.5, (4,)))(k).numpy(),
                                  R.binomial(k, 20.0, 0.5, (4,)).numpy())


def test_loggamma_is_finite_for_tiny_shapes():
    lg = R.loggamma(R.key(1), 1e-3, (50000,)).numpy()
    assert np.all(np.isfinite(lg))
    assert abs(lg.mean() - ss_digamma(1e-3)) < 5 * 1000 / np.sqrt(50000)  # E log X = digamma(a), sd 1/a
    np.testing.assert_allclose(np.exp(R.loggamma(R.key(2), 0.5, (50,)).numpy()), R.gamma(R.key(2), 0.5, (50,)).numpy(),
                               rtol=1e-12)


def ss_digamma(a):
    import scipy.special
    return scipy.special.digamma(a)


def test_gamma_family_gradients_by_implicit_reparameterisation():
    k = R.key(0)
    a = 2.5
    x = R.gamma(k, a, (6,)).numpy()
    per_sample = qb.jacfwd(lambda s: R.gamma(k, s, (6,)))(qb.asarray(a)).numpy()
    u = st.gamma(a).cdf(x)  # the sample's quantile, held fixed
    h = 1e-5
    fd = (st.gamma(a + h).ppf(u) - st.gamma(a - h).ppf(u)) / (2 * h)
    np.testing.assert_allclose(per_sample, fd, rtol=1e-6)
    rev = qb.grad(lambda s: qb.sum(R.gamma(k, s, (6,))))(qb.asarray(a)).item()
    np.testing.assert_allclose(rev, per_sample.sum(), rtol=1e-12)
    n = 40000  # expectations: d/da E[x] for Gamma (1), Beta (b / (a + b)^2), chi-square (1)
    assert abs(qb.grad(lambda s: qb.mean(R.gamma(k, s, (n,))))(qb.asarray(0.5)).item() - 1.0) < 0.02
    assert abs(qb.grad(lambda s: qb.mean(R.beta(k, s, 3.0, (n,))))(qb.asarray(2.0)).item() - 0.12) < 0.005
    assert abs(qb.grad(lambda s: qb.mean(R.chisquare(k, s, (n,))))(qb.asarray(3.0)).item() - 1.0) < 0.02
    g = qb.grad(lambda s: qb.mean(R.dirichlet(k, s, (n,))[:, 0]))(qb.asarray([1.0, 2.0, 3.0])).numpy()
    np.testing.assert_allclose(g, [5 / 36, -1 / 36, -1 / 36], atol=0.005)
    # Plain sampling is unchanged by the rule (the same draws as before, eager and jitted).
    np.testing.assert_array_equal(qb.jit(lambda kk: R.gamma(kk, 2.5, (6,)))(k).numpy(), x)


def test_traced_draws_use_the_threefry_primitive_and_equal_eager_ones():
    # jit and vmap draw through ops.def's threefry (the eager kernel on the CPU), bit for bit
    key = qb.random.key(11)
    text = qb.jit(lambda k: qb.random.uniform(k, (5, 3))).lower(key).as_text()
    assert "threefry(" in text
    for shape in [(), (0,), (7,), (3, 4), (1000, 2)]:
        eager = np.asarray(qb.random.bits(key, shape))
        np.testing.assert_array_equal(np.asarray(qb.jit(lambda k, s=shape: qb.random.bits(k, s))(key)), eager)
        np.testing.assert_array_equal(np.asarray(qb.jit(lambda k, s=shape: qb.random.normal(k, s))(key)),
                                      np.asarray(qb.random.normal(key, shape)))
    keys = qb.random.split(key, 300)  # many small draws: split over keys
    got = np.asarray(qb.vmap(lambda k: qb.random.uniform(k, (4,)))(keys))
    want = np.stack([np.asarray(qb.random.uniform(keys[i], (4,))) for i in range(300)])
    np.testing.assert_array_equal(got, want)
