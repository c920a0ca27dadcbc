"""NumPy's answers where an audit found Quabla's differing: integer fmod exactly, floor
division of infinities, int32 overflow at construction, integer arrays as Python indices,
divmod() and item(i); and a clear error for a non-linear custom_jvp rule under grad."""
import operator

import numpy as np
import pytest

import quabla as qb


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_fmod_is_exact_and_integer(dtype):
    a = np.array([7, -7, 7, -7, 2**30 + 1, 5, 0, -9], dtype)
    b = np.array([2, 2, -2, -2, 2**29, 0, 3, 4], dtype)
    got = qb.fmod(qb.array(a), qb.array(b))
    assert got.dtype == qb.dtype(dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got.numpy(), np.fmod(a, b))  # x fmod 0 is 0, as NumPy
    np.testing.assert_array_equal(qb.jit(qb.fmod)(qb.array(a), qb.array(b)).numpy(), got.numpy())


def test_floor_division_of_infinities_is_nan_as_numpy():
    x = np.array([np.inf, -np.inf, 1.0, -1.0, 0.0, 5.0, -1.0, np.inf, 7.0])
    y = np.array([2.0, 2.0, 0.0, 0.0, 0.0, np.inf, np.inf, np.inf, -2.0])
    with np.errstate(all="ignore"):
        expected = np.floor_divide(x, y)
    np.testing.assert_array_equal(qb.floor_divide(qb.array(x), qb.array(y)).numpy(), expected)
    np.testing.assert_array_equal((qb.array(x) // qb.array(y)).numpy(), expected)


@pytest.mark.parametrize("make", [lambda: qb.array([2**31], dtype=qb.int32), lambda: qb.int32(2**31),
                                  lambda: qb.asarray(-2**31 - 1, dtype=qb.int32), lambda: qb.full(3, 2**40, dtype=qb.int32),
                                  lambda: qb.array([[1, 2], [3, 2**35]], dtype=qb.int32)])
def test_int32_overflow_at_construction_raises_as_numpy(make):
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        make()


def test_int32_bounds_themselves_are_fine():
    np.testing.assert_array_equal(qb.array([2**31 - 1, -2**31], dtype=qb.int32).numpy(), [2**31 - 1, -2**31])


def test_integer_scalar_arrays_are_python_indices():
    assert list(range(qb.array(3))) == [0, 1, 2]
    assert [10, 20, 30][qb.array(2, dtype=qb.int32)] == 30
    assert operator.index(qb.array(-4)) == -4
    for bad in (qb.array(1.0), qb.array([1, 2]), qb.array(True)):
        with pytest.raises(TypeError, match="only integer scalar arrays"):
            operator.index(bad)


def test_divmod_and_item_with_an_index():
    q, r = divmod(qb.array([7.0, -7.0, 7.5]), 2.0)
    eq, er = divmod(np.array([7.0, -7.0, 7.5]), 2.0)
    np.testing.assert_array_equal(q.numpy(), eq)
    np.testing.assert_array_equal(r.numpy(), er)
    q, r = divmod(9, qb.array([2, -4]))
    np.testing.assert_array_equal(q.numpy(), [4, -3])
    np.testing.assert_array_equal(r.numpy(), [1, -3])
    a = np.arange(6.0).reshape(2, 3)
    x = qb.array(a)
    assert x.item(4) == a.item(4) and x.item(-1) == a.item(-1) and x.item(1, 2) == a.item(1, 2)
    assert x.item((0, 1)) == a.item((0, 1)) and qb.array(2.5).item() == 2.5
    with pytest.raises(IndexError):
        x.item(6)
    with pytest.raises(ValueError):
        x.item()


def test_a_nonlinear_custom_jvp_rule_under_grad_says_what_to_fix():
    @qb.custom_jvp
    def f(x):
        return qb.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return qb.sin(x), qb.where(t > 0, t, 0.0)  # not linear in t

    assert float(qb.jvp(f, (1.0,), (1.0,))[1]) == 1.0
    with pytest.raises(TypeError, match="custom_jvp rule must return a tangent output linear"):
        qb.grad(f)(1.0)
