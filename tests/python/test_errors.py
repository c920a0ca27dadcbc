"""Every error of API.md section 1: exception type and message content. After each error the
interpreter and the library keep working (the `_still_works` check at the end of each test)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import quabla as qb
from conftest import check, shape_pattern


def _still_works():
    """The library is usable after an error: an eager op gives the right answer."""
    x = qb.array([1.0, 2.0, 3.0], dtype=qb.float32)
    check(x * 2.0 + 1.0, np.array([3.0, 5.0, 7.0], dtype=np.float32))
    check(qb.sum(qb.ones((2, 3)), axis=1), np.array([3.0, 3.0]))


@pytest.fixture(autouse=True)
def after_each_error():
    yield
    _still_works()


# ---------------------------------------------------------------- construction

@pytest.mark.parametrize("obj", [
    [[1.0, 2.0], [3.0]],
    [[1.0, 2.0], 3.0],
    [1.0, [2.0, 3.0]],
    [[[1.0], [2.0]], [[3.0], [4.0, 5.0]]],
    [[1.0, 2.0], [3.0, [4.0]]],
    ((1.0, 2.0), (3.0,)),
])
def test_ragged_lists(obj):
    with pytest.raises(ValueError, match="ragged"):
        qb.array(obj)
    with pytest.raises(ValueError, match="ragged"):
        qb.asarray(obj)


@pytest.mark.parametrize("obj, tname", [({}, "dict"), ({"a": 1}, "dict"), ("abc", "str"), (object(), "object"),
                                        ({1, 2}, "set")])
def test_unsupported_types(obj, tname):
    with pytest.raises(TypeError) as e:
        qb.array(obj)
    if tname is not None:
        assert tname in str(e.value)
        assert "quabla array" in str(e.value)


def test_none_is_type_error():
    with pytest.raises(TypeError):
        qb.array(None)
    with pytest.raises(TypeError):
        qb.sin(None)


@pytest.mark.parametrize("obj, tname", [([1.0, "a"], "str"), ([[1.0], [None]], "NoneType"), ([{}], "dict")])
def test_unsupported_elements_in_lists(obj, tname):
    with pytest.raises(TypeError, match=tname):
        qb.array(obj)


def test_unsupported_numpy_dtypes():
    with pytest.raises(TypeError, match="complex256|clongdouble|format"):
        qb.array(np.ones(3, dtype=np.clongdouble))
    with pytest.raises(TypeError):
        qb.array(np.array(["a", "b"]))


def test_float16_numpy_rejected():
    with pytest.raises(TypeError, match="float16"):
        qb.array(np.ones(3, dtype=np.float16))
    with pytest.raises(TypeError, match="float16"):
        qb.asarray(np.float16(1.0))
    with pytest.raises(TypeError, match="float16"):
        qb.array([1.0], dtype="float16")
    with pytest.raises(TypeError, match="float16"):
        qb.zeros(2, dtype=np.dtype("float16"))


@pytest.mark.parametrize("dtype", ["uint64", "complex256", "float128", np.dtype("uint64"), 3])
def test_unsupported_dtype_argument(dtype):
    with pytest.raises(TypeError, match="dtype"):
        qb.zeros(2, dtype=dtype)


def test_astype_none_dtype():
    with pytest.raises(TypeError, match="astype"):
        qb.ones(2).astype(None)


# ---------------------------------------------------------------- zero extents

ZERO_EXTENT = {  # constructor -> the NumPy array it must equal (shape, dtype and values)
    "zeros": (lambda: qb.zeros((0, 3)), np.zeros((0, 3))),
    "ones": (lambda: qb.ones(0), np.ones(0)),
    "full": (lambda: qb.full((2, 0), 1.0), np.full((2, 0), 1.0)),
    "zeros_3d": (lambda: qb.zeros((3, 0, 2)), np.zeros((3, 0, 2))),
    "empty_list": (lambda: qb.array([]), np.array([])),
    "empty_nested": (lambda: qb.array([[]]), np.array([[]])),
    "empty_tuple": (lambda: qb.array(()), np.array(())),
    "numpy_2x0": (lambda: qb.array(np.ones((2, 0))), np.ones((2, 0))),
    "asarray": (lambda: qb.asarray(np.zeros(0)), np.zeros(0)),
    "eye": (lambda: qb.eye(0), np.eye(0)),
    "arange": (lambda: qb.arange(0), np.arange(0)),
    "arange_backwards": (lambda: qb.arange(3, 1), np.arange(3, 1)),
    "linspace": (lambda: qb.linspace(0, 1, 0), np.linspace(0, 1, 0)),
}


@pytest.mark.parametrize("name", sorted(ZERO_EXTENT))
def test_zero_extent_constructors_match_numpy(name):
    make, expected = ZERO_EXTENT[name]
    check(make(), expected)


def test_zero_extent_reductions_follow_numpy():
    e = np.zeros((0, 3))
    x = qb.zeros((0, 3))
    check(qb.sum(x, axis=0), e.sum(axis=0))
    check(qb.prod(x, axis=0), e.prod(axis=0))
    check(qb.sum(x, axis=1), e.sum(axis=1))
    check(qb.any(x > 0, axis=0), np.any(e > 0, axis=0))
    check(qb.all(x > 0, axis=0), np.all(e > 0, axis=0))
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        qb.max(x)
    with pytest.raises(ValueError, match="minimum"):
        qb.min(x, axis=0)
    check(qb.max(x, axis=1), e.max(axis=1))  # nothing reduced is empty: fine, as NumPy


def test_zero_size_through_the_transforms():
    # An empty boundary set in a PINN loss: its sum is 0 and the gradient comes from the rest.
    xb, xi = qb.zeros((0, 2)), qb.ones((5, 2))

    def loss(w):
        return qb.mean(qb.tanh(xi @ w) ** 2) + qb.sum(qb.tanh(xb @ w) ** 2)

    val, g = qb.jit(qb.value_and_grad(loss))(qb.ones((2, 3)))
    t = np.tanh(2.0)
    assert float(val) == pytest.approx(t * t)
    np.testing.assert_allclose(np.asarray(g), np.full((2, 3), 2 * t * (1 - t * t) / 3), rtol=1e-12)
    # vmap over an empty batch, also of a gradient; a scalar constant is broadcast into it
    assert qb.vmap(lambda x: x * 2.0)(qb.zeros((0, 3))).shape == (0, 3)
    assert qb.vmap(qb.grad(lambda x: qb.sum(qb.sin(x) * 3.0)))(qb.zeros((0, 3))).shape == (0, 3)
    check(qb.jit(lambda x: qb.concat([x, qb.ones(2)]))(qb.zeros(0)), np.ones(2))


@pytest.mark.parametrize("index", [slice(3, None), slice(2, 1), slice(None, 0), slice(0, 3, -1), slice(-1, 0, 1)])
def test_slicing_to_empty(index):
    x = np.arange(3.0)
    check(qb.array(x)[index], x[index])


def test_slicing_to_empty_2d_and_differentiating_through_it():
    x = np.ones((2, 3))
    check(qb.array(x)[:, 5:], x[:, 5:])
    check(qb.array(x)[1:1, :], x[1:1, :])
    g = qb.grad(lambda a: qb.sum(a[:, 5:]) + qb.sum(a[1:1] * 2.0) + qb.sum(a))(qb.array(x))
    check(g, np.ones((2, 3)))


def test_split_leaving_empty_piece():
    # empty pieces are NumPy's result (they used to raise); unequal sections still raise
    for idx in ([2, 2], [0, 2], [4]):
        got = qb.split(qb.arange(4.0), idx)
        want = np.split(np.arange(4.0), idx)
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="equal sections"):
        qb.split(qb.arange(4.0), 3)


# ---------------------------------------------------------------- shapes and dtypes

@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / b, lambda a, b: a < b,
    lambda a, b: qb.maximum(a, b), lambda a, b: qb.atan2(a, b), lambda a, b: qb.where(a > 0, a, b),
    lambda a, b: a ** b,
])
def test_mismatched_shapes(op):
    a, b = qb.ones((2, 3)), qb.ones((4,))
    with pytest.raises(ValueError) as e:
        op(a, b)
    msg = str(e.value)
    assert re.search(shape_pattern((2, 3)), msg), msg
    assert re.search(shape_pattern((4,)), msg), msg


def test_mismatched_shapes_3d():
    with pytest.raises(ValueError) as e:
        qb.ones((2, 3, 4)) + qb.ones((2, 5, 1))
    msg = str(e.value)
    assert re.search(shape_pattern((2, 3, 4)), msg) and re.search(shape_pattern((2, 5, 1)), msg), msg
    assert "broadcast" in msg


@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: b * a, lambda a, b: a - b, lambda a, b: a / b, lambda a, b: a ** b,
    lambda a, b: a < b, lambda a, b: a == b, lambda a, b: qb.maximum(a, b), lambda a, b: qb.where(a > 0, a, b),
    lambda a, b: qb.concat([a, b]), lambda a, b: qb.stack([a, b]), lambda a, b: a @ b, lambda a, b: qb.dot(a, b),
    lambda a, b: qb.hypot(a, b), lambda a, b: qb.logaddexp(a, b),
])
def test_float32_float64_mix(op):
    a = qb.array([1.0, 2.0], dtype=qb.float32)
    b = qb.array([3.0, 4.0], dtype=qb.float64)
    with pytest.raises(ValueError) as e:
        op(a, b)
    msg = str(e.value)
    assert "astype" in msg and "float32" in msg and "float64" in msg, msg


def test_float32_with_strong_float64_scalar_array():
    # A qb array is strong even when zero-dimensional.
    with pytest.raises(ValueError, match="astype"):
        qb.array(1.0) + qb.ones(3, dtype=qb.float32)


@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: qb.maximum(a, b),
    lambda a, b: qb.power(a, b), lambda a, b: a @ b, lambda a, b: a % b, lambda a, b: qb.arctan2(a, b),
])
def test_bool_bool_arithmetic(op):
    a, b = qb.array([True, False]), qb.array([True, True])
    with pytest.raises(TypeError, match="astype"):
        op(a, b)


@pytest.mark.parametrize("name", [
    "sin", "cos", "exp", "log", "sqrt", "tanh", "abs", "negative", "floor", "sigmoid", "square", "reciprocal",
    "relu", "softplus", "erf", "sign", "round", "silu", "gelu",
])
def test_unary_math_on_bool(name):
    m = qb.array([True, False])
    with pytest.raises(TypeError, match="astype"):
        getattr(qb, name)(m)
    with pytest.raises(TypeError, match="astype"):
        getattr(m, name)()


def test_unary_operators_on_bool():
    m = qb.array([True, False])
    with pytest.raises(TypeError, match="astype"):
        -m
    with pytest.raises(TypeError, match="astype"):
        abs(m)
    with pytest.raises(TypeError, match="astype"):
        m ** 2


@pytest.mark.parametrize("name", ["max", "min", "var", "std", "logsumexp", "softmax",
                                  "log_softmax", "norm", "amax", "amin"])
def test_reductions_on_bool(name):
    m = qb.array([[True, False], [True, True]])
    with pytest.raises(TypeError, match="astype"):
        getattr(qb, name)(m)


def test_counting_reductions_on_bool_give_integers():
    # sum/prod/cumsum of bools count in the default integer and mean averages in the default
    # float, as NumPy and JAX do.
    m = qb.array([[True, False], [True, True]])
    assert qb.sum(m).dtype == qb.int64 and int(qb.sum(m)) == 3
    assert int(qb.prod(m)) == 0
    assert qb.cumsum(m).tolist() == [1, 1, 2, 3]
    assert qb.mean(m).dtype == qb.float64 and float(qb.mean(m)) == 0.75


def test_any_all_on_bool_work():
    m = qb.array([[True, False], [True, True]])
    check(qb.any(m, axis=0), np.array([True, True]))
    check(qb.all(m, axis=1), np.array([False, True]))


# ---------------------------------------------------------------- axes

@pytest.mark.parametrize("call", [
    lambda x: qb.sum(x, axis=2), lambda x: qb.sum(x, axis=-3), lambda x: qb.mean(x, axis=(0, 5)),
    lambda x: qb.max(x, axis=(0, 0)), lambda x: qb.sum(x, axis=(1, -1)), lambda x: qb.var(x, axis=3),
    lambda x: qb.logsumexp(x, axis=2), lambda x: qb.softmax(x, axis=2), lambda x: qb.log_softmax(x, axis=-3),
    lambda x: qb.cumsum(x, axis=2), lambda x: qb.norm(x, axis=7), lambda x: qb.any(x, axis=2),
    lambda x: qb.transpose(x, (0, 0)), lambda x: qb.transpose(x, (0,)), lambda x: qb.transpose(x, (0, 2)),
    lambda x: qb.squeeze(x, 0), lambda x: qb.squeeze(x, 4), lambda x: qb.expand_dims(x, 3),
    lambda x: qb.flip(x, 2), lambda x: qb.concat([x, x], axis=2), lambda x: qb.stack([x, x], axis=3),
    lambda x: qb.split(x, 2, axis=2), lambda x: x.transpose(1, 1),
])
def test_bad_axes(call):
    x = qb.ones((2, 3))
    with pytest.raises(ValueError, match="axis|axes"):
        call(x)


def test_bad_axis_message():
    with pytest.raises(ValueError) as e:
        qb.sum(qb.ones((2, 3)), axis=2)
    msg = str(e.value)
    assert "sum" in msg and "2" in msg and "out of range" in msg


@pytest.mark.parametrize("axis", ["a", 1.0, [0.5]])
def test_axis_wrong_type(axis):
    with pytest.raises(TypeError):
        qb.sum(qb.ones((2, 3)), axis=axis)


# ---------------------------------------------------------------- indexing

@pytest.mark.parametrize("index, word", [
    (3, "out of bounds"), (-4, "out of bounds"), ((0, 3), "out of bounds"), ((slice(None), -5), "out of bounds"),
    (100, "out of bounds"),
])
def test_out_of_range_indices(index, word):
    x = qb.ones(3) if not isinstance(index, tuple) else qb.ones((2, 3))
    with pytest.raises(IndexError, match=word):
        x[index]


def test_out_of_range_message_names_axis_and_size():
    with pytest.raises(IndexError) as e:
        qb.ones((2, 3))[:, 3]
    msg = str(e.value)
    assert "3" in msg and "axis 1" in msg and "size 3" in msg


@pytest.mark.parametrize("index", [(0, 0), (0, 0, 0), (slice(None), 0), (Ellipsis, 0, 0), (None, 0, 0)])
def test_too_many_indices(index):
    with pytest.raises(IndexError, match="too many indices"):
        qb.ones(3)[index]


def test_too_many_indices_on_scalar():
    with pytest.raises(IndexError, match="too many indices"):
        qb.array(1.0)[0]


def test_two_ellipses():
    with pytest.raises(IndexError, match="ellipsis"):
        qb.ones((2, 2))[..., ...]


@pytest.mark.parametrize("index", [1.5, "a"])
def test_invalid_index_types(index):
    with pytest.raises(IndexError, match="valid indices"):
        qb.ones(3)[index]


def test_zero_step():
    with pytest.raises(ValueError, match="zero"):
        qb.ones(3)[::0]


# ---------------------------------------------------------------- reshape and other shape errors

@pytest.mark.parametrize("shape", [(4, 2), (5,), (7, -1), (-1, -1), (0, 6), (2, -2), (4, -1)])
def test_reshape_mismatch(shape):
    x = qb.ones(6)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(shape)
    with pytest.raises(ValueError, match="reshape"):
        qb.reshape(x, shape)


def test_reshape_message_has_shapes():
    with pytest.raises(ValueError) as e:
        qb.ones((2, 3)).reshape(4, 2)
    msg = str(e.value)
    assert re.search(shape_pattern((2, 3)), msg) and re.search(shape_pattern((4, 2)), msg), msg


def test_other_shape_errors():
    with pytest.raises(ValueError, match="broadcast"):
        qb.broadcast_to(qb.ones((2, 3)), (3, 3))
    with pytest.raises(ValueError, match="broadcast"):
        qb.broadcast_to(qb.ones((2, 3)), (3,))
    with pytest.raises(ValueError, match="concat"):
        qb.concat([qb.ones((2, 3)), qb.ones((3, 2))])
    with pytest.raises(ValueError, match="stack"):
        qb.stack([qb.ones((2, 3)), qb.ones((3, 2))])
    with pytest.raises(ValueError, match="equal sections"):
        qb.split(qb.ones(5), 2)
    with pytest.raises(ValueError, match="positive"):
        qb.split(qb.ones(5), 0)
    with pytest.raises(ValueError, match="squeeze"):
        qb.squeeze(qb.ones((2, 3)), 0)
    with pytest.raises(ValueError, match="rank"):
        qb.tril(qb.ones(3))
    with pytest.raises(ValueError, match="meshgrid"):
        qb.meshgrid(qb.ones(2), qb.ones(3), indexing="xx")
    with pytest.raises(ValueError, match="1-D"):
        qb.meshgrid(qb.ones((2, 2)))
    with pytest.raises(ValueError):
        qb.concat([])
    with pytest.raises(ValueError, match="step"):
        qb.arange(0, 1, 0)


def test_matmul_errors():
    with pytest.raises(ValueError) as e:
        qb.ones((2, 3)) @ qb.ones((2, 3))
    msg = str(e.value)
    assert "matmul" in msg and "aligned" in msg
    assert re.search(shape_pattern((2, 3)), msg)
    with pytest.raises(ValueError, match="1-D"):
        qb.matmul(qb.ones(3), 2.0)
    with pytest.raises(ValueError, match="matmul"):
        qb.ones((2, 2, 3)) @ qb.ones((3, 3, 4))  # batch (2,) vs (3,)
    with pytest.raises(ValueError, match="aligned"):
        qb.dot(qb.ones((2, 3, 4)), qb.ones((2, 5, 6)))


def test_logical_operators_on_floats():
    x = qb.ones(3)
    m = qb.array([True, False, True])
    with pytest.raises(TypeError, match="bool"):
        x & m
    with pytest.raises(TypeError, match="bool"):
        m | x
    with pytest.raises(TypeError, match="bool"):
        x ^ x
    with pytest.raises(TypeError, match="logical_not|astype"):
        ~x


def test_item_and_setitem_errors():
    with pytest.raises(ValueError, match="size 1"):
        qb.ones((2, 2)).item()
    with pytest.raises(TypeError, match="immutable"):
        qb.ones(2)[0] = 1.0


def test_many_errors_in_a_row_leave_library_usable():
    for _ in range(50):
        with pytest.raises(ValueError):
            qb.ones(3, dtype=qb.float32) + qb.ones(3)
        with pytest.raises(IndexError):
            qb.ones(3)[5]
        with pytest.raises(TypeError):
            qb.array({})
    _still_works()


def test_shape_errors_are_both_numpys_value_error_and_jaxs_type_error():
    cases = [lambda: qb.ones((2, 3)) @ qb.ones((2, 3)), lambda: qb.reshape(qb.ones(4), (3,)),
             lambda: qb.concatenate([qb.ones((2, 3)), qb.ones((2, 4))]), lambda: qb.ones(3) + qb.ones(4),
             lambda: qb.jit(lambda a: a @ a)(qb.ones((2, 3))), lambda: qb.grad(lambda x: x * 2)(qb.ones(3)),
             lambda: qb.stack([qb.ones(2), qb.ones(3)])]
    for f in cases:
        with pytest.raises(qb.ShapeError) as info:
            f()
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    with pytest.raises(ValueError) as info:  # other value errors stay plain ValueErrors
        qb.sum(qb.ones(3), axis=5)
    assert not isinstance(info.value, TypeError)
