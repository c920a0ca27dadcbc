"""qb.random: the generator's known answers, reproducibility, independence, moments and
initializer scales."""
import math

import numpy as np
import pytest

import quabla as qb
from quabla import _core


def test_threefry_matches_random123_known_answers():
    assert tuple(_core.threefry2x32(0, 0, 0, 0)) == (0x6B200159, 0x99BA4EFE)
    assert tuple(_core.threefry2x32(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)) == (0x1CB996FC, 0xBB002BE7)
    assert tuple(_core.threefry2x32(0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3)) == (0xC4923A9C, 0x483DF7A0)


def test_same_key_same_numbers_and_thread_count_independent():
    k = qb.random.key(7)
    a = qb.random.normal(k, (300000,)).numpy()
    old = qb.num_threads()
    try:
        qb.set_num_threads(1)
        b = qb.random.normal(qb.random.key(7), (300000,)).numpy()
    finally:
        qb.set_num_threads(old)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, qb.random.normal(qb.random.key(8), (300000,)).numpy())


def test_split_and_fold_in_keys_are_distinct_and_independent():
    k = qb.random.key(0)
    # As in JAX, fold_in(k, i) is split(k, n)[i]: both are block i of k.
    assert [qb.random.fold_in(k, i) for i in range(4)] == list(qb.random.split(k, 4))
    keys = list(qb.random.split(k, 4)) + [qb.random.fold_in(k, 1000 + i) for i in range(4)] + [k]
    assert len({kk.words for kk in keys}) == len(keys)
    samples = np.stack([qb.random.uniform(kk, (20000,)).numpy() for kk in keys])
    corr = np.corrcoef(samples)
    off = corr[~np.eye(len(keys), dtype=bool)]
    assert np.max(np.abs(off)) < 0.05
    assert qb.random.split(k, 3)[:2] == qb.random.split(k, 2)  # split is prefix-stable


@pytest.mark.parametrize("dtype", [qb.float32, qb.float64])
def test_moments(dtype):
    n = 400000
    u = qb.random.uniform(qb.random.key(1), (n,), dtype).numpy()
    assert u.dtype == np.dtype(dtype.name)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < 0.002
    z = qb.random.normal(qb.random.key(2), (n,), dtype).numpy()
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.std() - 1.0) < 0.005
    assert abs(np.mean(z ** 4) - 3.0) < 0.05  # kurtosis of a normal
    b = qb.random.bernoulli(qb.random.key(3), 0.3, (n,)).numpy()
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.005
    r = qb.random.uniform(qb.random.key(4), (n,), dtype, -2.0, 6.0).numpy()
    assert -2.0 <= r.min() and r.max() < 6.0 and abs(r.mean() - 2.0) < 0.02


@pytest.mark.parametrize("name, shape, std", [
    ("glorot_normal", (64, 32), math.sqrt(2 / 96)),
    ("glorot_normal", (3, 3, 16, 8), math.sqrt(2 / (9 * 24))),
    ("he_normal", (128, 64), math.sqrt(2 / 128)),
])
def test_normal_initializer_scales(name, shape, std):
    w = getattr(qb.random, name)(qb.random.key(5), shape).numpy()
    assert w.shape == shape
    assert abs(w.std() / std - 1.0) < 0.05
    assert np.abs(w).max() <= 2.0 * std / 0.87962566103423978 + 1e-12  # truncated at two (scaled) sigmas


def test_glorot_uniform_limit():
    w = qb.random.glorot_uniform(qb.random.key(6), (200, 100)).numpy()
    limit = math.sqrt(6 / 300)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    assert abs(w.std() - limit / math.sqrt(3)) / (limit / math.sqrt(3)) < 0.02


def test_bad_arguments():
    with pytest.raises(TypeError):
        qb.random.normal(2026, (3,))
    with pytest.raises(ValueError):
        qb.random.split(qb.random.key(0), -1)
    with pytest.raises(ValueError):
        qb.random.uniform(qb.random.key(0), (-1, 3))
    with pytest.raises(TypeError):
        qb.random.normal(qb.random.key(0), (3,), qb.bool_)
    with pytest.raises(ValueError):
        qb.random.bernoulli(qb.random.key(0), 1.5, (3,))
