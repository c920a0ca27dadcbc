"""Broadcast and slice loads inside fused kernels with short rows (fusion.cc's
strided_range_copy fast paths): a vector broadcast against [n, d] (x[None, :], the
per-coordinate bounds of collocation points), a column against [n, m], and slices of whole
rows, for sizes that cross tile boundaries, against NumPy bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb


def same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 7, 4097, 100_003])
@pytest.mark.parametrize("d", [1, 2, 3, 15, 16, 17])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_row_and_column_broadcasts_in_fused_kernels(n, d, dtype):
    g = np.random.default_rng(n * 31 + d)
    x = (g.standard_normal((n, d)) * 10).astype(dtype)
    row = (g.standard_normal(d) * 10).astype(dtype)
    col = (g.standard_normal((n, 1)) * 10).astype(dtype)
    if dtype == np.bool_:
        f = qb.jit(lambda x, r, c: [(x ^ r[None, :]) | c, qb.broadcast_to(r, (n, d)) & x])
        want = [(x ^ row[None, :]) | col, np.broadcast_to(row, (n, d)) & x]
    else:
        f = qb.jit(lambda x, r, c: [x * r[None, :] + c, qb.broadcast_to(c, (n, d)) - x, qb.maximum(x, r)])
        want = [x * row[None, :] + col, np.broadcast_to(col, (n, d)) - x, np.maximum(x, row)]
    for got, w in zip(f(x, row, col), want):
        same(got, w.astype(dtype))


@pytest.mark.parametrize("shape", [(2, 100_001, 2), (3, 5, 1), (2, 1, 7), (2, 40_000, 3)])
def test_slices_of_whole_rows_are_contiguous_copies(shape):
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    f = qb.jit(lambda a: [a[0] * 2.0, a[1] + 1.0, a[:, 1:] - 1.0])
    for got, want in zip(f(x), [x[0] * 2.0, x[1] + 1.0, x[:, 1:] - 1.0]):
        same(got, want)


def test_a_broadcast_of_a_matrix_block_repeats_with_the_right_phase():
    # [3, 2] broadcast against [n, 3, 2]: the period is the whole block, and tiles start at
    # any phase of it
    g = np.random.default_rng(5)
    blk = g.standard_normal((3, 2))
    x = g.standard_normal((50_001, 3, 2))
    same(qb.jit(lambda a, b: a - b[None])(x, blk), x - blk[None])
