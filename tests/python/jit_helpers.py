"""Helpers shared by the qb.jit test files: bitwise comparison of results and pytrees."""
from __future__ import annotations

import numpy as np

import quabla as qb

_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def assert_bitwise(actual, expected, where="result"):
    """Two qb arrays are identical: dtype, shape, every bit of every element (-0.0 and 0.0
    differ); NaNs must sit at the same positions (their payloads are not compared)."""
    assert isinstance(actual, qb.Array), f"{where}: jit gave {type(actual).__name__}, not a qb.Array"
    assert isinstance(expected, qb.Array), f"{where}: eager gave {type(expected).__name__}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype.name} != {expected.dtype.name}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    a = np.array(actual.numpy(), copy=True)
    e = np.array(expected.numpy(), copy=True)
    if a.dtype == np.bool_:
        np.testing.assert_array_equal(a, e, err_msg=where)
        return
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    if not np.array_equal(a_nan, e_nan):
        idx = np.argwhere(a_nan != e_nan)[:5]
        raise AssertionError(f"{where}: NaN positions differ at {idx.tolist()}: jit {a[tuple(idx.T)]} "
                             f"eager {e[tuple(idx.T)]}")
    ab = a.view(_UINT[a.dtype])[~a_nan]
    eb = e.view(_UINT[e.dtype])[~e_nan]
    if not np.array_equal(ab, eb):
        bad = np.nonzero(ab != eb)[0][:5]
        raise AssertionError(f"{where}: {np.count_nonzero(ab != eb)} elements differ bitwise; first: jit "
                             f"{a[~a_nan][bad].tolist()} eager {e[~e_nan][bad].tolist()}")


def assert_tree_bitwise(actual, expected):
    """Same pytree structure; array leaves bitwise equal; other leaves equal and of the same type."""
    a_leaves, a_def = qb.tree.flatten(actual)
    e_leaves, e_def = qb.tree.flatten(expected)
    assert a_def == e_def, f"structure {a_def} != {e_def}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        if isinstance(e, qb.Array):
            assert_bitwise(a, e, where=f"leaf {i}")
        else:
            assert type(a) is type(e), f"leaf {i}: {type(a).__name__} != {type(e).__name__}"
            if isinstance(e, float) and np.isnan(e):
                assert np.isnan(a)
            else:
                assert a == e, f"leaf {i}: {a!r} != {e!r}"
