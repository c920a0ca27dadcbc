"""int32 and int64: arithmetic, bit operations, promotion, conversions, reductions and
interop, against NumPy (values) and JAX's documented results (edge cases NumPy leaves
undefined: integer division by zero, float -> int saturation)."""
from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import quabla as qb
from conftest import check

INT_DTYPES = {"int32": (qb.int32, np.int32), "int64": (qb.int64, np.int64)}
A = [7, -7, 0, 5, -1, 12, -13, 100]
B = [2, 3, -3, 4, 7, -5, 5, -9]  # no zeros: NumPy's own results agree with JAX here


@pytest.fixture(params=sorted(INT_DTYPES))
def idt(request):
    return INT_DTYPES[request.param]


BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "subtract": (lambda a, b: a - b, np.subtract),
    "multiply": (lambda a, b: a * b, np.multiply),
    "floor_divide": (lambda a, b: a // b, np.floor_divide),
    "mod": (lambda a, b: a % b, np.mod),
    "maximum": (qb.maximum, np.maximum),
    "minimum": (qb.minimum, np.minimum),
    "bitwise_and": (lambda a, b: a & b, np.bitwise_and),
    "bitwise_or": (lambda a, b: a | b, np.bitwise_or),
    "bitwise_xor": (lambda a, b: a ^ b, np.bitwise_xor),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_match_numpy(name, idt):
    q, n = BINARY[name]
    qd, nd = idt
    a, b = np.array(A, nd), np.array(B, nd)
    check(q(qb.array(a), qb.array(b)), n(a, b))
    check(qb.jit(q)(qb.array(a), qb.array(b)), n(a, b))


@pytest.mark.parametrize("name", ["negative", "abs", "sign", "invert"])
def test_unary_ops_match_numpy(name, idt):
    qd, nd = idt
    a = np.array(A, nd)
    q = {"negative": lambda x: -x, "abs": qb.abs, "sign": qb.sign, "invert": lambda x: ~x}[name]
    check(q(qb.array(a)), getattr(np, name)(a))


def test_shifts_and_power(idt):
    qd, nd = idt
    a = np.array([1, -8, 5, 3], nd)
    s = np.array([3, 1, 0, 2], nd)
    check(qb.array(a) << qb.array(s), a << s)
    check(qb.array(a) >> qb.array(s), a >> s)
    check(qb.array(a) ** 3, a ** 3)
    check(qb.array(a) ** qb.array(s), a ** s)


def test_division_by_zero_gives_jaxs_results(idt):
    qd, _ = idt
    x = qb.array([7, -7, 0, 5], dtype=qd)
    z = qb.zeros(4, dtype=qd)
    # jnp.floor_divide and jnp.remainder (jax 0.10, x64) print these:
    assert (x // z).tolist() == [-2, -2, -1, -2]
    assert (x % z).tolist() == [0, 0, 0, 0]


def test_overflow_wraps_and_min_int_edges():
    m = qb.array([-(2 ** 31)], dtype=qb.int32)
    assert (-m).tolist() == [-(2 ** 31)] and qb.abs(m).tolist() == [-(2 ** 31)]
    assert (qb.array([2 ** 31 - 1], dtype=qb.int32) + 1).tolist() == [-(2 ** 31)]
    assert (m // -1).tolist() == [-(2 ** 31)] and (m % -1).tolist() == [0]


def test_true_division_and_float_functions_promote_like_jax():
    i32 = qb.array([1, 2, 3], dtype=qb.int32)
    i64 = qb.array([1, 2, 3])
    assert (i32 / 2).dtype == qb.float32 and (i64 / 2).dtype == qb.float64
    assert qb.sqrt(i32).dtype == qb.float32 and qb.sqrt(i64).dtype == qb.float64
    assert qb.mean(i32).dtype == qb.float32 and qb.mean(i64).dtype == qb.float64
    check(i64 / 2, np.array([0.5, 1.0, 1.5]))
    check(qb.exp(i64), np.exp(np.array([1, 2, 3])), rtol=1e-15)


PROMOTION = [  # (left, right, result) as jnp.result_type gives them with x64
    ("int32", "int32", "int32"), ("int32", "int64", "int64"), ("int32", "float32", "float32"),
    ("int64", "float32", "float32"), ("int32", "float64", "float64"), ("bool", "int32", "int32"),
    ("int32", "weak_int", "int32"), ("int32", "weak_float", "float64"), ("int64", "weak_float", "float64"),
    ("float32", "weak_int", "float32"), ("bool", "weak_int", "int64"),
]


def _operand(name):
    if name == "weak_int":
        return 3
    if name == "weak_float":
        return 0.5
    return qb.ones(2, dtype=getattr(qb, name if name != "bool" else "bool_"))


@pytest.mark.parametrize("left, right, result", PROMOTION)
def test_promotion_table(left, right, result):
    a, b = _operand(left), _operand(right)
    assert (a + b).dtype.name == result
    assert (b + a).dtype.name == result


def test_python_ints_and_constructors_give_the_default_integer():
    assert qb.asarray(3).dtype == qb.int64
    assert qb.array([1, 2]).dtype == qb.int64
    assert qb.arange(4).dtype == qb.int64 and qb.arange(4.0).dtype == qb.float64
    assert qb.full(2, 7).dtype == qb.int64
    with qb.set_default_dtype(qb.float32):
        assert qb.arange(4).dtype == qb.int32 and qb.asarray(3).dtype == qb.int32


def test_astype_both_ways():
    x = qb.array([-2.7, 2.7, 1e20, -1e20, np.nan])
    assert x.astype(qb.int32).tolist() == [-2, 2, 2 ** 31 - 1, -(2 ** 31), 0]  # JAX's saturating convert
    assert x[:2].astype(qb.int64).tolist() == [-2, 2]
    i = qb.array([2 ** 40 + 1, -3])
    assert i.astype(qb.float64).tolist() == [2.0 ** 40 + 1, -3.0]
    assert i.astype(qb.int32).tolist() == [1, -3]  # wraps, as NumPy's astype
    assert qb.array([0, 5]).astype(qb.bool_).tolist() == [False, True]


def test_reductions(idt):
    qd, nd = idt
    a = np.array(A, nd).reshape(2, 4)
    x = qb.array(a)
    check(qb.sum(x, axis=1), a.sum(axis=1).astype(np.int64))  # sums accumulate in int64 (JAX x64)
    check(qb.prod(x, axis=0), a.prod(axis=0).astype(np.int64))
    check(qb.max(x, axis=0), a.max(axis=0))
    check(qb.min(x), np.array(a.min()))
    check(qb.cumsum(x, axis=1), a.cumsum(axis=1).astype(nd))


def test_numpy_interop_is_exact():
    big = np.array([2 ** 62 + 1, -(2 ** 62) - 3], dtype=np.int64)
    x = qb.asarray(big)
    assert x.dtype == qb.int64
    np.testing.assert_array_equal(np.asarray(x), big)
    assert np.asarray(qb.array([1, 2], dtype=qb.int32)).dtype == np.int32
    assert qb.asarray(np.array([1, 2], dtype=np.uint8)).dtype == qb.uint8
    assert qb.asarray(np.array([1, 2], dtype=np.uint64)).dtype == qb.int64  # no uint64
    assert type(qb.asarray(7).item()) is int


def test_save_load_round_trips_integers():
    tree = {"a": qb.array([2 ** 40, -1]), "b": qb.array([[1, 2]], dtype=qb.int32)}
    buf = io.BytesIO()
    qb.save(buf, tree)
    buf.seek(0)
    back = qb.load(buf)
    assert back["a"].dtype == qb.int64 and back["a"].tolist() == [2 ** 40, -1]
    assert back["b"].dtype == qb.int32 and back["b"].tolist() == [[1, 2]]


def test_integers_carry_no_derivatives():
    with pytest.raises(TypeError, match="integers carry no derivative"):
        qb.grad(lambda x: qb.sum(x))(qb.array([1, 2]))
    # through an integer cast the derivative is zero, as in JAX
    g = qb.grad(lambda x: qb.sum((x * 3.0).astype(qb.int32).astype(qb.float64)))(qb.ones(3))
    assert g.tolist() == [0.0, 0.0, 0.0]
    out, t = qb.jvp(lambda x: (x * x, qb.floor(x).astype(qb.int64)), (qb.ones(2),), (qb.ones(2),))
    assert t[1].dtype == qb.int64 and t[1].tolist() == [0, 0]
    # integer arguments next to float ones are fine
    assert qb.grad(lambda w, k: qb.sum(w * k))(qb.ones(2), qb.array([2, 3])).tolist() == [2.0, 3.0]


def test_vmap_and_loops_keep_integers_exact():
    x = qb.array([[1, 2], [3, 4]])
    assert qb.vmap(lambda r: r // 2 + r % 2)(x).tolist() == [[1, 1], [2, 2]]
    assert qb.fori_loop(0, 5, lambda i, c: c + i, 0).tolist() == 10
    big = 2 ** 53 + 1  # not a float64
    assert int(qb.fori_loop(0, 3, lambda i, c: c + i, qb.asarray(big))) == big + 3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=1, max_size=8),
       st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=1, max_size=8))
def test_int64_arithmetic_matches_python(a, b):
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    x, y = qb.array(a), qb.array(b)
    assert (x + y).tolist() == [p + q for p, q in zip(a, b)]
    assert (x * y).tolist() == [p * q for p, q in zip(a, b)]
    nz = [q if q != 0 else 1 for q in b]
    yz = qb.array(nz)
    assert (x // yz).tolist() == [p // q for p, q in zip(a, nz)]
    assert (x % yz).tolist() == [p % q for p, q in zip(a, nz)]


# The shape, product and calculus compositions on integer arrays: NumPy's values and dtypes.
A23 = np.arange(1, 7).reshape(2, 3)
INT_COMPOSITIONS = {
    "roll": lambda m, x: m.roll(x, 1, axis=1), "flip": lambda m, x: m.flip(x, 0),
    "tile": lambda m, x: m.tile(x, (2, 1)), "repeat": lambda m, x: m.repeat(x, 2, axis=0),
    "pad": lambda m, x: m.pad(x, 1), "pad_edge": lambda m, x: m.pad(x, 1, mode="edge"),
    "diff": lambda m, x: m.diff(x, axis=1), "diff_prepend": lambda m, x: m.diff(x, axis=1, prepend=0),
    "cumsum": lambda m, x: m.cumsum(x, axis=1), "cumprod": lambda m, x: m.cumprod(x, axis=1),
    "einsum": lambda m, x: m.einsum("ij,kj->ik", x, x), "kron": lambda m, x: m.kron(x, x),
    "outer": lambda m, x: m.outer(x[0], x[1]), "tensordot": lambda m, x: m.tensordot(x, x.T, 1),
    "trace": lambda m, x: m.trace(x), "tril": lambda m, x: m.tril(x), "diag": lambda m, x: m.diag(x),
    "cross": lambda m, x: m.cross(x[0], x[1]), "matmul": lambda m, x: x @ x.T,
    "clip": lambda m, x: m.clip(x, 2, 4), "where": lambda m, x: m.where(x > 2, x, 0),
    "trapezoid": lambda m, x: m.trapezoid(x), "polyval": lambda m, x: m.polyval(x[0], x[1]),
    "vander": lambda m, x: m.vander(x[0]), "gradient": lambda m, x: m.gradient(x[0]),
    "sort": lambda m, x: m.sort(-x, axis=1), "moveaxis": lambda m, x: m.moveaxis(x, 0, 1),
    "interp": lambda m, x: m.interp(x[0] + 0.5, x[0], x[1]), "stack": lambda m, x: m.stack([x, x]),
    "mean": lambda m, x: m.mean(x), "std": lambda m, x: m.std(x), "prod": lambda m, x: m.prod(x),
}


@pytest.mark.parametrize("name", sorted(INT_COMPOSITIONS))
def test_compositions_on_integers_match_numpy(name):
    f = INT_COMPOSITIONS[name]
    expected = np.asarray(f(np, A23))
    check(f(qb, qb.asarray(A23)), expected, rtol=1e-15 if expected.dtype.kind == "f" else None)
