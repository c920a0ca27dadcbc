"""Weak types as in JAX: results computed from Python numbers only stay weak (they adopt
the dtype of the arrays they meet, and their own dtype is the default of its kind), NumPy
scalars are weak as Python numbers are, dtype=float is the default float, and a boolean
mask index must match the axes it indexes."""
import numpy as np
import pytest

import quabla as qb


@pytest.fixture
def x32():
    return qb.ones(3, dtype=qb.float32)


@pytest.mark.parametrize("make", [
    lambda: qb.sqrt(2.0), lambda: qb.exp(1.0), lambda: qb.maximum(0.0, 1.0), lambda: qb.clip(0.5, 0.0, 1.0),
    lambda: qb.where(qb.array([True, False, True]), 1.0, 0.0), lambda: qb.stack([1.0, 2.0, 3.0]),
    lambda: qb.sum(2.0), lambda: qb.jit(lambda: qb.sqrt(2.0))(),
], ids=["sqrt", "exp", "maximum", "clip", "where", "stack", "sum", "jit"])
def test_results_of_python_numbers_are_weak(make, x32):
    w = make()
    assert w.weak_type and w.dtype == qb.float64
    assert (x32 * w).dtype == qb.float32 and not (x32 * w).weak_type  # adopts float32, as in JAX
    assert (qb.ones(3) * w).dtype == qb.float64
    with qb.set_default_dtype(qb.float32):
        w32 = make()
        assert w32.weak_type and w32.dtype == qb.float32
    np.testing.assert_allclose(float(w32.reshape(-1)[0]), float(w.reshape(-1)[0]), rtol=1e-7)


def test_strong_inputs_give_strong_results(x32):
    assert not qb.sqrt(qb.asarray(2.0)).weak_type and not qb.asarray(2.0).weak_type  # a 0-d array is strong
    with pytest.raises(ValueError, match="cannot mix"):
        x32 * qb.sqrt(qb.asarray(2.0))
    assert not (x32 * 2.0).weak_type


def test_weak_arguments_keep_their_type_under_jit(x32):
    f = qb.jit(lambda a, x: a * x)
    w = qb.sqrt(2.0)
    assert f(w, x32).dtype == qb.float32
    assert f(qb.asarray(2.0), qb.ones(3)).dtype == qb.float64
    assert f.trace_count == 2  # weak and strong arguments are different signatures, as in JAX
    f(qb.sqrt(3.0), x32)
    assert f.trace_count == 2


@pytest.mark.parametrize("scalar", [np.float64(0.5), np.float32(0.5), np.int64(3), np.int32(3)],
                         ids=["f64", "f32", "i64", "i32"])
def test_numpy_scalars_are_weak_as_python_numbers(scalar, x32):
    assert (x32 * scalar).dtype == qb.float32
    assert (qb.ones(3) * scalar).dtype == qb.float64
    assert (qb.ones(3, dtype=qb.int32) + np.int64(2)).dtype == qb.int32
    np.testing.assert_array_equal((x32 * scalar).numpy(), np.ones(3, np.float32) * np.float32(scalar))


def test_dtype_float_is_the_default_float():
    assert qb.zeros(2, dtype=float).dtype == qb.float64 and qb.arange(3).astype(float).dtype == qb.float64
    with qb.set_default_dtype(qb.float32):
        assert qb.zeros(2, dtype=float).dtype == qb.float32
        assert qb.arange(3).astype(float).dtype == qb.float32
        assert qb.zeros(2, dtype="float").dtype == qb.float32
        assert qb.zeros(2, dtype="float64").dtype == qb.float64
    assert qb.dtype("float32") is not None and qb.dtype("float32") == qb.float32 and qb.dtype is qb.DType
    assert qb.dtype(np.int32) == qb.int32 and qb.dtype(qb.ones(2)) == qb.float64 and qb.dtype(None) == qb.float64


@pytest.mark.parametrize("index", [np.array([True, True]), np.array([True, False, True, False]), np.ones((2, 4), bool),
                                   (slice(None), np.array([True, False])), (np.array([True, False, True]), np.ones(3, bool))])
def test_a_mask_of_the_wrong_shape_raises_as_numpy(index):
    x = qb.arange(12.0).reshape(3, 4)
    with pytest.raises(IndexError):
        np.arange(12.0).reshape(3, 4)[index]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[index]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x.at[index].set(0.0)


@pytest.mark.parametrize("index", [np.array([True, False, True]), np.ones((3, 4), bool), (slice(None), np.array([1, 0, 1, 0], bool)),
                                   (Ellipsis, np.array([1, 0, 0, 1], bool)), (None, np.array([0, 1, 1], bool))])
def test_masks_of_the_right_shape_select_as_numpy(index):
    xn = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(qb.arange(12.0).reshape(3, 4)[index].numpy(), xn[index])
    expected = xn.copy()
    expected[index] = -1.0
    np.testing.assert_array_equal(qb.arange(12.0).reshape(3, 4).at[index].set(-1.0).numpy(), expected)


def test_python_ints_only_give_the_default_integer():
    assert (qb.where(qb.array([True, False]), 1, 0)).dtype == qb.int64
    with qb.set_default_dtype(qb.float32):  # x64 off: the default integer is int32, as JAX's
        assert qb.where(qb.array([True, False]), 1, 0).dtype == qb.int32
        assert qb.lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0).dtype == qb.int32
        assert qb.lax.scan(lambda c, x: (c + 1, c), 0, qb.ones(3))[0].dtype == qb.int32
        assert qb.lax.fori_loop(0, 3, lambda i, c: c + i, 0).dtype == qb.int32
    assert (qb.ones(2, dtype=qb.int32) + qb.ones(2, dtype=qb.int64)).dtype == qb.int64


def test_index_results_are_the_default_integer():
    m = qb.array([True, False, True])
    makes = [lambda: qb.triu_indices(3)[0], lambda: qb.tril_indices(3)[1], lambda: qb.nonzero(m)[0],
             lambda: qb.nonzero(m, size=3)[0], lambda: qb.flatnonzero(m), lambda: qb.argwhere(m, size=2),
             lambda: qb.bincount(qb.array([0, 1, 1])), lambda: qb.indices((2, 2)),
             lambda: qb.jit(lambda a: qb.nonzero(a, size=2)[0])(m)]
    for make in makes:
        assert make().dtype == qb.int64
    with qb.set_default_dtype(qb.float32):  # x64 off: int32, as JAX's
        for make in makes:
            assert make().dtype == qb.int32
        np.testing.assert_array_equal(qb.nonzero(m, size=3)[0].numpy(), [0, 2, 0])
        np.testing.assert_array_equal(qb.bincount(qb.array([0, 1, 1])).numpy(), [1, 2])
