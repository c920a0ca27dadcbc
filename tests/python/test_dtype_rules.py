"""Dtype promotion rules of API.md section 1: weak Python scalars, bool as 0/1, comparisons,
astype, logical operators, where, and integer powers."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import quabla as qb
from conftest import check, np_of, NP_DTYPES, QB_DTYPES

# NumPy's own warnings while computing references (x / 0, pow of a negative base, f64 -> f32 overflow)
pytestmark = pytest.mark.filterwarnings(
    "ignore:(divide by zero|invalid value|overflow) encountered:RuntimeWarning")

VALUES = [1.0, -2.5, 0.1, 3.0, 1e-3]


def f(name, values=VALUES):
    return qb.array(np.array(values, dtype=NP_DTYPES[name]))


# ---------------------------------------------------------------- weak scalars

ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


@pytest.mark.parametrize("op", ARITH, ids=lambda o: o.__name__)
@pytest.mark.parametrize("scalar", [0.5, 2, 3.25, -1])
def test_weak_scalar_adopts_float32(op, scalar):
    x = f("float32", [1.0, 2.0, 4.0])
    xn = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    s32 = np.float32(scalar)
    check(op(x, scalar), op(xn, s32), rtol=1e-6)
    check(op(scalar, x), op(s32, xn), rtol=1e-6)


@pytest.mark.parametrize("op", ARITH, ids=lambda o: o.__name__)
@pytest.mark.parametrize("scalar", [0.5, 1, -3])
def test_weak_scalar_with_float64(op, scalar):
    xn = np.array([1.0, 2.0, 4.0])
    x = qb.array(xn)
    check(op(x, scalar), op(xn, float(scalar)), rtol=1e-15)
    check(op(scalar, x), op(float(scalar), xn), rtol=1e-15)


def test_weak_scalar_examples_from_contract():
    x32 = f("float32")
    assert (0.5 * x32).dtype == qb.float32
    check(0.5 * x32, np.float32(0.5) * np.array(VALUES, dtype=np.float32))
    x64 = f("float64")
    assert (x64 + 1).dtype == qb.float64
    check(x64 + 1, np.array(VALUES) + 1.0)
    mask = qb.array([True, False, True])
    check(mask * 2.0, np.array([2.0, 0.0, 2.0]))
    check(mask * 2, np.array([2, 0, 2]))  # bool with a Python int: the default integer
    mask32 = mask.astype(qb.float32)
    check(mask32, np.array([1.0, 0.0, 1.0], dtype=np.float32))
    check(mask32 * 2.0, np.array([2.0, 0.0, 2.0], dtype=np.float32))


def test_weak_scalar_rounds_to_float32():
    # 0.1 becomes float32(0.1): the product is the f32 product, not a rounded f64 product
    x = qb.array([3.0], dtype=qb.float32)
    got = np_of(x * 0.1)[0]
    assert got == np.float32(3.0) * np.float32(0.1)


def test_weak_scalars_in_functions():
    x32 = f("float32")
    xn = np.array(VALUES, dtype=np.float32)
    check(qb.maximum(x32, 0.5), np.maximum(xn, np.float32(0.5)))
    check(qb.minimum(1, x32), np.minimum(np.float32(1), xn))
    check(qb.add(x32, 2), xn + np.float32(2))
    check(qb.arctan2(x32, 2.0), np.arctan2(xn, np.float32(2.0)), rtol=2e-7)
    check(qb.clip(x32, 0.0, 1.0), np.clip(xn, 0, 1).astype(np.float32))
    check(qb.hypot(x32, 1.0), np.hypot(xn, np.float32(1)), rtol=2e-7)


def test_two_weak_scalars_give_float64():
    check(qb.add(1.0, 2.0), np.array(3.0))
    check(qb.multiply(0.1, 3), np.array(0.1 * 3))


def test_result_of_weak_op_is_strong():
    x32 = f("float32")
    y = x32 * 2.0
    assert y.dtype == qb.float32
    with pytest.raises(ValueError, match="astype"):
        y + f("float64")


def test_numpy_float64_scalar_with_float32_array():
    # np.float64 is a Python float subclass; as a Python scalar it is weak.
    x32 = f("float32")
    assert (np.float64(0.5) * x32).dtype == qb.float32
    assert (x32 * np.float64(0.5)).dtype == qb.float32


def test_zero_dim_qb_array_is_strong():
    x32 = f("float32")
    with pytest.raises(ValueError, match="astype"):
        x32 + qb.array(0.5)
    check(x32 + qb.array(0.5, dtype=qb.float32), np.array(VALUES, dtype=np.float32) + np.float32(0.5))


# ---------------------------------------------------------------- bool with floats

@pytest.mark.parametrize("name", ["float32", "float64"])
@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv],
                         ids=lambda o: o.__name__)
def test_bool_with_float_is_zero_one(name, op):
    mn = np.array([True, False, True, False, True])
    xn = np.array(VALUES, dtype=NP_DTYPES[name])
    m, x = qb.array(mn), qb.array(xn)
    check(op(m, x), op(mn.astype(xn.dtype), xn), rtol=1e-7)
    check(op(x, m), op(xn, mn.astype(xn.dtype)), rtol=1e-7)


def test_bool_with_python_scalars():
    m = qb.array([True, False])
    check(m + 1, np.array([2, 1]))
    check(1.5 - m, np.array([0.5, 1.5]))
    check(m / 2, np.array([0.5, 0.0]))


def test_bool_with_float_broadcasts():
    m = qb.array([[True], [False]])
    x = qb.array([1.0, 2.0, 3.0], dtype=qb.float32)
    check(m * x, np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=np.float32))


def test_bool_in_matmul_acts_as_zero_one():
    m = qb.array([[True, False], [True, True]])
    x = qb.array([[1.0, 2.0], [3.0, 4.0]], dtype=qb.float32)
    check(m @ x, np.array([[1.0, 2.0], [4.0, 6.0]], dtype=np.float32))


def test_bool_bool_with_python_bool_scalar_raises():
    m = qb.array([True, False])
    with pytest.raises(TypeError, match="astype"):
        m + True


# ---------------------------------------------------------------- comparisons

CMP = [(operator.lt, "less"), (operator.le, "less_equal"), (operator.gt, "greater"),
       (operator.ge, "greater_equal"), (operator.eq, "equal"), (operator.ne, "not_equal")]


@pytest.mark.parametrize("op, name", CMP, ids=[n for _, n in CMP])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_comparisons_return_bool(op, name, dt):
    an = np.array([1.0, 2.0, np.nan, -np.inf, 0.0, -0.0, 3.0], dtype=NP_DTYPES[dt])
    bn = np.array([1.0, 1.5, np.nan, -np.inf, -0.0, 0.0, np.nan], dtype=NP_DTYPES[dt])
    a, b = qb.array(an), qb.array(bn)
    check(op(a, b), op(an, bn))
    check(getattr(qb, name)(a, b), op(an, bn))
    check(getattr(a, name)(b), op(an, bn))
    check(op(a, 1.5), op(an, NP_DTYPES[dt](1.5)))
    check(op(1.5, a), op(NP_DTYPES[dt](1.5), an))


def test_comparisons_broadcast():
    an = np.arange(6.0).reshape(2, 3)
    bn = np.array([[1.0], [4.0]])
    check(qb.array(an) < qb.array(bn), an < bn)
    check(qb.array(an) == qb.array(np.array([0.0, 4.0, 2.0])), an == np.array([0.0, 4.0, 2.0]))


def test_bool_comparisons():
    an, bn = np.array([True, False, True, False]), np.array([True, True, False, False])
    a, b = qb.array(an), qb.array(bn)
    for op, _ in CMP:
        check(op(a, b), op(an, bn))
    check(a == True, an == True)  # noqa: E712
    check(a > 0.5, an > 0.5)


def test_comparison_with_unconvertible_falls_back():
    x = qb.array([1.0, 2.0])
    assert (x == "a") is False
    assert (x != "a") is True
    assert (x == {}) is False


def test_comparison_with_none():
    x = qb.array([1.0, 2.0])
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711


# ---------------------------------------------------------------- astype

@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_astype_bool_nonzero_and_nan_true(dt):
    tiny = np.finfo(NP_DTYPES[dt]).smallest_subnormal
    vn = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -2.0, tiny, -tiny], dtype=NP_DTYPES[dt])
    x = qb.array(vn)
    expected = np.array([False, False, True, True, True, True, True, True, True])
    check(x.astype(qb.bool_), expected)
    check(qb.astype(x, qb.bool_), expected)
    check(qb.astype(x, "bool"), expected)


def test_astype_bool_to_float():
    m = qb.array([True, False])
    check(m.astype(qb.float32), np.array([1.0, 0.0], dtype=np.float32))
    check(m.astype(qb.float64), np.array([1.0, 0.0]))


def test_astype_float_conversions():
    vn = np.array([0.1, 1e300, -1e300, 1e-50, np.nan, 1.0 + 2.0**-30])
    x = qb.array(vn)
    y = x.astype(qb.float32)
    with np.errstate(over="ignore"):
        check(y, vn.astype(np.float32))
    check(y.astype(qb.float64), vn.astype(np.float32).astype(np.float64))


def test_astype_same_dtype_keeps_values():
    x = qb.array([1.0, 2.0], dtype=qb.float32)
    y = x.astype(qb.float32)
    check(y, np.array([1.0, 2.0], dtype=np.float32))


def test_astype_with_string_and_numpy_dtype():
    x = qb.array([1.5])
    check(x.astype("float32"), np.array([1.5], dtype=np.float32))
    check(x.astype(np.dtype("float32")), np.array([1.5], dtype=np.float32))


# ---------------------------------------------------------------- logic

def test_bool_operators():
    an, bn = np.array([True, False, True, False]), np.array([True, True, False, False])
    a, b = qb.array(an), qb.array(bn)
    check(a & b, an & bn)
    check(a | b, an | bn)
    check(a ^ b, an ^ bn)
    check(~a, ~an)
    check(a & True, an & True)
    check(False | a, False | an)
    check(~(a & b) | (a ^ b), ~(an & bn) | (an ^ bn))


def test_bool_operators_broadcast():
    an, bn = np.array([[True], [False]]), np.array([True, False, True])
    check(qb.array(an) & qb.array(bn), an & bn)
    check(qb.array(an) | qb.array(bn), an | bn)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_bool_operators_reject_floats(dt):
    x = f(dt)
    m = qb.array([True] * len(VALUES))
    for op in (operator.and_, operator.or_, operator.xor):
        with pytest.raises(TypeError, match="bool"):
            op(x, m)
        with pytest.raises(TypeError, match="bool"):
            op(m, x)
    with pytest.raises(TypeError, match="bool"):
        ~x
    with pytest.raises(TypeError, match="bool"):
        m & 1.0


def test_logical_functions():
    an = np.array([0.0, 2.0, np.nan, -1.0, 0.0])
    bn = np.array([0.0, 0.0, 1.0, -0.0, 3.0])
    a, b = qb.array(an), qb.array(bn)
    # NaN is truthy (nonzero), as in NumPy
    check(qb.logical_and(a, b), np.logical_and(an, bn))
    check(qb.logical_or(a, b), np.logical_or(an, bn))
    check(qb.logical_xor(a, b), np.logical_xor(an, bn))
    check(qb.logical_not(a), np.logical_not(an))
    check(a.logical_not(), np.logical_not(an))
    m = qb.array([True, False, True, True, False])
    mn = np.array([True, False, True, True, False])
    check(qb.logical_and(m, a), np.logical_and(mn, an))
    check(qb.logical_or(m, 0.0), np.logical_or(mn, 0.0))
    check(qb.logical_xor(a, 1.0), np.logical_xor(an, 1.0))
    check(qb.logical_not(m), ~mn)
    f32 = qb.array(an.astype(np.float32))
    check(qb.logical_and(f32, b), np.logical_and(an, bn))  # no f32/f64 promotion error for logic


# ---------------------------------------------------------------- where

def test_where_basic_and_broadcast():
    cn = np.array([[True, False, True], [False, False, True]])
    xn = np.arange(6.0).reshape(2, 3)
    yn = np.array([-1.0, -2.0, -3.0])
    check(qb.where(qb.array(cn), qb.array(xn), qb.array(yn)), np.where(cn, xn, yn))
    check(qb.where(qb.array(cn[0]), qb.array(xn), 0.5), np.where(cn[0], xn, 0.5))
    check(qb.where(qb.array([[True], [False]]), 1.0, qb.array(yn)), np.where([[True], [False]], 1.0, yn))


def test_where_weak_scalars():
    x32 = qb.array([1.0, -2.0, 3.0], dtype=qb.float32)
    c = x32 > 0.0
    check(qb.where(c, x32, 0.0), np.array([1.0, 0.0, 3.0], dtype=np.float32))
    check(qb.where(c, 0.25, x32), np.array([0.25, -2.0, 0.25], dtype=np.float32))
    check(qb.where(c, 1.0, 0.0), np.array([1.0, 0.0, 1.0]))  # both weak -> float64
    check(qb.where(c, True, False), np.array([True, False, True]))
    check(qb.where(c, x32, qb.array([True, False, False])), np.array([1.0, 0.0, 3.0], dtype=np.float32))


def test_where_float_condition_uses_truthiness():
    check(qb.where(qb.array([0.0, 2.0, np.nan]), 1.0, -1.0), np.array([-1.0, 1.0, 1.0]))


def test_where_nan_in_unselected_branch():
    x = qb.array([-1.0, 4.0])
    check(qb.where(x > 0, qb.sqrt(qb.where(x > 0, x, 1.0)), 0.0), np.array([0.0, 2.0]))


def test_where_dtype_mix_raises():
    with pytest.raises(ValueError, match="astype"):
        qb.where(qb.array([True]), qb.ones(1, dtype=qb.float32), qb.ones(1))


# ---------------------------------------------------------------- powers

@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 13])
def test_integer_power_is_repeated_multiplication(dt, n):
    rng = np.random.default_rng(n)
    xn = rng.uniform(-3, 3, size=50).astype(NP_DTYPES[dt])
    x = qb.array(xn)
    got = np_of(x ** n)
    assert got.dtype == xn.dtype
    # square-and-multiply: x^n computed only with correctly rounded products of xn
    acc, base, k = None, xn.copy(), n
    while k > 0:
        if k & 1:
            acc = base if acc is None else acc * base
        k >>= 1
        if k:
            base = base * base
    if n == 0:
        acc = np.ones_like(xn)
    np.testing.assert_array_equal(got, acc)
    if n == 3:
        np.testing.assert_array_equal(got, np_of(x * x * x))
        np.testing.assert_array_equal(got, xn * xn * xn)
    check(qb.power(x, n), acc)


def test_integer_power_negative_base_and_special_values():
    x = qb.array([-2.0, np.nan, np.inf, -np.inf, 0.0])
    check(x ** 3, np.array([-8.0, np.nan, np.inf, -np.inf, 0.0]))
    check(x ** 2, np.array([4.0, np.nan, np.inf, np.inf, 0.0]))
    check(x ** 0, np.ones(5))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float_exponent_uses_pow(dt):
    xn = np.array([0.0, 0.25, 2.0, 10.0, -4.0, np.inf], dtype=NP_DTYPES[dt])
    x = qb.array(xn)
    with np.errstate(invalid="ignore"):
        ref = np.power(xn, NP_DTYPES[dt](0.5))
    check(x ** 0.5, ref, rtol=4 * np.finfo(NP_DTYPES[dt]).eps)
    assert np.isnan(np_of(x ** 0.5)[4])  # pow of a negative base: NaN, not an exception
    check(x ** -1, np.power(xn, NP_DTYPES[dt](-1.0)), rtol=4 * np.finfo(NP_DTYPES[dt]).eps)
    check(qb.power(x, 1.5), np.power(xn, NP_DTYPES[dt](1.5)), rtol=4 * np.finfo(NP_DTYPES[dt]).eps)


def test_rpow_and_array_exponent():
    xn = np.array([0.5, 1.0, 3.0], dtype=np.float32)
    x = qb.array(xn)
    check(2.0 ** x, np.power(np.float32(2.0), xn), rtol=4e-7)
    check(x ** x, np.power(xn, xn), rtol=4e-7)


def test_dtypes_are_callable_like_jax_scalar_types():
    # jnp.float32(x) casts; so does qb.float32(x), eagerly and under jit.
    assert qb.float32(3).dtype == qb.float32 and float(qb.float32(3)) == 3.0
    assert qb.int32([1.7, -2.9]).tolist() == [1, -2]
    assert qb.bool_(0.0).tolist() is False
    y = qb.jit(lambda x: qb.float64(x * 2))(qb.ones(2, dtype=qb.float32))
    assert y.dtype == qb.float64 and y.tolist() == [2.0, 2.0]
