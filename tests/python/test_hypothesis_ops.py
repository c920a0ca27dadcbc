"""Property tests: random shapes (rank 0-4, sides 1-5), dtypes and values through the eager
elementwise, comparison, where, reduction and shape operations, compared with NumPy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import quabla as qb
from conftest import check, np_of, NP_DTYPES

SETTINGS = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

dtypes = st.sampled_from(["float32", "float64"])
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5)
EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}


def arrays(dt, shape, lo=-10.0, hi=10.0, exclude_min=False, exclude_max=False):
    width = 32 if dt == "float32" else 64
    if width == 32:  # bounds must be float32 values, inside the requested range
        lo = float(np.nextafter(np.float32(lo), np.float32(np.inf))) if float(np.float32(lo)) < lo else float(np.float32(lo))
        hi = float(np.nextafter(np.float32(hi), np.float32(-np.inf))) if float(np.float32(hi)) > hi else float(np.float32(hi))
    return hnp.arrays(NP_DTYPES[dt], shape, elements=st.floats(
        lo, hi, width=width, allow_nan=False, allow_infinity=False, exclude_min=exclude_min, exclude_max=exclude_max))


def ref(fn, a):
    """The float64 reference of fn at a's values, rounded to a's dtype."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(a.astype(np.float64))).astype(a.dtype)


# name -> (numpy reference, domain (lo, hi, exclude_lo, exclude_hi), exact?)
UNARY = {
    "sin": (np.sin, (-10, 10, False, False), False),
    "cos": (np.cos, (-10, 10, False, False), False),
    "tan": (np.tan, (-1.4, 1.4, False, False), False),
    "arcsin": (np.arcsin, (-1, 1, False, False), False),
    "arccos": (np.arccos, (-1, 1, False, False), False),
    "arctan": (np.arctan, (-10, 10, False, False), False),
    "sinh": (np.sinh, (-10, 10, False, False), False),
    "cosh": (np.cosh, (-10, 10, False, False), False),
    "tanh": (np.tanh, (-10, 10, False, False), False),
    "arcsinh": (np.arcsinh, (-10, 10, False, False), False),
    "arccosh": (np.arccosh, (1, 10, False, False), False),
    "arctanh": (np.arctanh, (-0.99, 0.99, False, False), False),
    "exp": (np.exp, (-10, 10, False, False), False),
    "expm1": (np.expm1, (-10, 10, False, False), False),
    "exp2": (np.exp2, (-10, 10, False, False), False),
    "log": (np.log, (0, 10, True, False), False),
    "log1p": (np.log1p, (-1, 10, True, False), False),
    "log2": (np.log2, (0, 10, True, False), False),
    "log10": (np.log10, (0, 10, True, False), False),
    "sqrt": (np.sqrt, (0, 10, False, False), False),
    "cbrt": (np.cbrt, (-10, 10, False, False), False),
    "erf": (scipy.special.erf, (-5, 5, False, False), False),
    "erfc": (scipy.special.erfc, (-5, 5, False, False), False),
    "sigmoid": (scipy.special.expit, (-10, 10, False, False), False),
    "softplus": (lambda x: np.logaddexp(0.0, x), (-10, 10, False, False), False),
    "abs": (np.abs, (-10, 10, False, False), True),
    "negative": (np.negative, (-10, 10, False, False), True),
    "sign": (np.sign, (-10, 10, False, False), True),
    "floor": (np.floor, (-10, 10, False, False), True),
    "ceil": (np.ceil, (-10, 10, False, False), True),
    "round": (np.round, (-10, 10, False, False), True),
    "square": (np.square, (-10, 10, False, False), True),
    "relu": (lambda x: np.maximum(x, 0.0), (-10, 10, False, False), True),
    "reciprocal": (np.reciprocal, (0.01, 10, False, False), False),
}


@st.composite
def unary_case(draw):
    name = draw(st.sampled_from(sorted(UNARY)))
    dt = draw(dtypes)
    lo, hi, exlo, exhi = UNARY[name][1]
    a = draw(arrays(dt, draw(shapes), lo, hi, exlo, exhi))
    return name, dt, a


@SETTINGS
@given(unary_case())
def test_unary_elementwise(case):
    name, dt, a = case
    fn, _, exact = UNARY[name]
    expected = ref(fn, a)
    x = qb.array(a)
    got = getattr(qb, name)(x)
    if exact:
        check(got, expected)
    else:
        tol = 8 * EPS[dt]
        check(got, expected, rtol=tol, atol=tol)
    check(getattr(x, name)(), np_of(got))  # the method is the same function


@SETTINGS
@given(st.data())
def test_unary_rounding_half_to_even(data):
    dt = data.draw(dtypes)
    k = data.draw(hnp.arrays(np.int64, data.draw(shapes), elements=st.integers(-20, 20)))
    a = (k + 0.5).astype(NP_DTYPES[dt])
    check(qb.round(qb.array(a)), np.round(a))


BINARY = {
    "add": (np.add, None, True),
    "subtract": (np.subtract, None, True),
    "multiply": (np.multiply, None, True),
    "divide": (np.divide, "nonzero", True),
    "maximum": (np.maximum, None, True),
    "minimum": (np.minimum, None, True),
    "hypot": (np.hypot, None, False),
    "arctan2": (np.arctan2, None, False),
    "logaddexp": (np.logaddexp, None, False),
    "power": (np.power, "positive", False),
    "fmod": (np.fmod, "nonzero", True),
    "mod": (np.mod, "nonzero", False),
}


@st.composite
def binary_case(draw):
    name = draw(st.sampled_from(sorted(BINARY)))
    dt = draw(dtypes)
    bs = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=5))
    sx, sy = bs.input_shapes
    kind = BINARY[name][1]
    if kind == "positive":
        a = draw(arrays(dt, sx, 0.1, 5.0))
        b = draw(arrays(dt, sy, -3.0, 3.0))
    else:
        a = draw(arrays(dt, sx))
        b = draw(arrays(dt, sy))
        if kind == "nonzero":
            b = np.where(np.abs(b) < 0.1, np.asarray(1.5, dtype=b.dtype), b).astype(b.dtype)
    return name, dt, a, b


@SETTINGS
@given(binary_case())
def test_binary_broadcasting(case):
    name, dt, a, b = case
    fn, _, correctly_rounded = BINARY[name]
    expected = np.asarray(fn(a.astype(np.float64), b.astype(np.float64))).astype(NP_DTYPES[dt])
    got = getattr(qb, name)(qb.array(a), qb.array(b))
    if correctly_rounded:
        # one correctly rounded operation: the f64 result rounded to the dtype is exact for f32;
        # allow 1 ULP (double rounding) for f32 and exact for f64 up to one ULP
        check(got, expected, rtol=EPS[dt], atol=0.0)
    elif name == "mod":
        # r + y when signs differ: one more rounding, absolute error ~ ULP of |y|
        scale = np.broadcast_to(np.abs(b.astype(np.float64)), expected.shape)
        check(got, expected, rtol=0.0, atol=float(np.max(scale)) * 2 * EPS[dt] + 0.0)
    else:
        tol = 8 * EPS[dt]
        check(got, expected, rtol=tol, atol=tol)


OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


@SETTINGS
@given(st.data())
def test_operators_with_weak_scalars(data):
    dt = data.draw(dtypes)
    a = data.draw(arrays(dt, data.draw(shapes), 0.5, 10.0))
    s = data.draw(st.floats(0.5, 10.0) | st.integers(1, 10))
    op = data.draw(st.sampled_from(sorted(OPS)))
    x = qb.array(a)
    s_typed = NP_DTYPES[dt](s)
    for got, expected in ((eval(f"x {op} s"), OPS[op](a, s_typed)), (eval(f"s {op} x"), OPS[op](s_typed, a))):
        assert got.dtype.name == dt
        check(got, np.asarray(expected).astype(NP_DTYPES[dt]), rtol=EPS[dt], atol=0.0)


CMP = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal"]


@SETTINGS
@given(st.data())
def test_comparisons(data):
    dt = data.draw(dtypes)
    bs = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=5))
    sx, sy = bs.input_shapes
    # small integers so that ties are frequent
    a = data.draw(hnp.arrays(np.int8, sx, elements=st.integers(-3, 3))).astype(NP_DTYPES[dt])
    b = data.draw(hnp.arrays(np.int8, sy, elements=st.integers(-3, 3))).astype(NP_DTYPES[dt])
    name = data.draw(st.sampled_from(CMP))
    check(getattr(qb, name)(qb.array(a), qb.array(b)), getattr(np, name)(a, b))


@SETTINGS
@given(st.data())
def test_where(data):
    dt = data.draw(dtypes)
    bs = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, min_side=1, max_side=5))
    sc, sx, sy = bs.input_shapes
    c = data.draw(hnp.arrays(np.bool_, sc))
    a = data.draw(arrays(dt, sx))
    b = data.draw(arrays(dt, sy))
    check(qb.where(qb.array(c), qb.array(a), qb.array(b)), np.where(c, a, b))
    s = data.draw(st.floats(-5, 5))
    check(qb.where(qb.array(c), qb.array(a), s), np.where(c, a, NP_DTYPES[dt](s)))


@st.composite
def array_and_axes(draw, lo=-10.0, hi=10.0):
    dt = draw(dtypes)
    shape = draw(shapes)
    a = draw(arrays(dt, shape, lo, hi))
    nd = len(shape)
    mode = draw(st.sampled_from(["none", "int", "tuple"])) if nd else "none"
    if mode == "none":
        axis = None
    elif mode == "int":
        axis = draw(st.integers(-nd, nd - 1))
    else:
        chosen = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
        axis = tuple(ax - nd if draw(st.booleans()) else ax for ax in chosen)
    return dt, a, axis, draw(st.booleans())


REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
          "var": np.var, "std": np.std, "norm": None, "logsumexp": scipy.special.logsumexp}


@SETTINGS
@given(array_and_axes(-2.0, 2.0), st.sampled_from(sorted(REDUCE)))
def test_reductions_random_axes(case, name):
    dt, a, axis, keepdims = case
    a64 = a.astype(np.float64)
    if name == "norm":
        expected = np.sqrt(np.sum(a64 * a64, axis=axis, keepdims=keepdims))
    else:
        expected = REDUCE[name](a64, axis=axis, keepdims=keepdims)
    # scipy's logsumexp gives shape (1,) for a 0-d input with keepdims: use NumPy's shape
    expected = np.asarray(expected).reshape(np.sum(a64, axis=axis, keepdims=keepdims).shape)
    got = getattr(qb, name)(qb.array(a), axis=axis, keepdims=keepdims)
    n = max(1, a.size // max(1, expected.size))
    tol = EPS[dt] * 4 * (n + 4)
    if name in ("sum", "mean", "var", "std", "logsumexp"):
        scale = np.sum(np.abs(a64), axis=axis, keepdims=keepdims) + 1.0
        check(got, expected.astype(NP_DTYPES[dt]), rtol=tol, atol=float(np.max(scale)) * tol)
    elif name in ("max", "min"):
        check(got, expected.astype(NP_DTYPES[dt]))
    else:
        check(got, expected.astype(NP_DTYPES[dt]), rtol=tol, atol=tol)


@SETTINGS
@given(st.data())
def test_any_all_random_axes(data):
    shape = data.draw(shapes)
    m = data.draw(hnp.arrays(np.bool_, shape))
    nd = len(shape)
    axis = data.draw(st.none() | st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)) if nd else None
    keepdims = data.draw(st.booleans())
    check(qb.any(qb.array(m), axis=axis, keepdims=keepdims), np.any(m, axis=axis, keepdims=keepdims))
    check(qb.all(qb.array(m), axis=axis, keepdims=keepdims), np.all(m, axis=axis, keepdims=keepdims))


@SETTINGS
@given(st.data())
def test_cumsum_random_axis(data):
    dt = data.draw(dtypes)
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    a = data.draw(arrays(dt, shape, -2.0, 2.0))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    reverse = data.draw(st.booleans())
    a64 = a.astype(np.float64)
    expected = np.flip(np.cumsum(np.flip(a64, axis), axis), axis) if reverse else np.cumsum(a64, axis)
    tol = EPS[dt] * 4 * (shape[axis] + 4)
    check(qb.cumsum(qb.array(a), axis=axis, reverse=reverse), expected.astype(NP_DTYPES[dt]), rtol=tol,
          atol=float(np.sum(np.abs(a64))) * tol)


@SETTINGS
@given(st.data())
def test_transpose_random_permutation(data):
    dt = data.draw(dtypes)
    shape = data.draw(shapes)
    a = data.draw(arrays(dt, shape))
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = qb.array(a)
    check(qb.transpose(x, perm), np.transpose(a, perm))
    check(x.transpose(perm), np.transpose(a, perm))
    check(x.T, a.T)


@st.composite
def reshape_target(draw, shape):
    """A random shape of the same size: prime factors of the size, randomly grouped, plus 1s."""
    n = int(np.prod(shape))
    factors = []
    k, p = n, 2
    while k > 1:
        while k % p == 0:
            factors.append(p)
            k //= p
        p += 1
    factors = draw(st.permutations(factors)) if factors else []
    dims = []
    for f in factors:
        if dims and draw(st.booleans()):
            dims[-1] *= f
        else:
            dims.append(f)
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    if dims and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@SETTINGS
@given(st.data())
def test_reshape_random(data):
    dt = data.draw(dtypes)
    shape = data.draw(shapes)
    a = data.draw(arrays(dt, shape))
    target = data.draw(reshape_target(shape))
    x = qb.array(a)
    y = qb.reshape(x, target)
    check(y, a.reshape(target))
    assert x._shares_storage_with(y)
    check(x.reshape(-1), a.reshape(-1))
    # reshape of a transposed array follows the logical (C) order
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    check(qb.transpose(x, perm).reshape(target), np.transpose(a, perm).reshape(target))


@SETTINGS
@given(st.data())
def test_matmul_random_broadcast(data):
    dt = data.draw(dtypes)
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    bs = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, min_side=1, max_side=3))
    bx, by = bs.input_shapes
    x_vec, y_vec = data.draw(st.booleans()), data.draw(st.booleans())
    sx = (k,) if x_vec else bx + (m, k)
    sy = (k,) if y_vec else by + (k, n)
    a = data.draw(arrays(dt, sx, -2.0, 2.0))
    b = data.draw(arrays(dt, sy, -2.0, 2.0))
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = EPS[dt] * 4 * (k + 2)
    scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    check(qb.array(a) @ qb.array(b), np.asarray(expected).astype(NP_DTYPES[dt]), rtol=tol,
          atol=float(np.max(scale)) * tol)
