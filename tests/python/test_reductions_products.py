"""Reductions (sum prod max min any all mean var std logsumexp softmax log_softmax norm cumsum)
and products (matmul, dot, @) against NumPy/SciPy in float32 and float64."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import quabla as qb
from conftest import check, np_of, NP_DTYPES

RTOL = {"float32": 3e-6, "float64": 1e-13}


def data(shape, dt, lo=-2.0, hi=2.0, seed=0):
    rng = np.random.default_rng(seed + len(shape) * 7 + sum(shape))
    return rng.uniform(lo, hi, size=shape).astype(NP_DTYPES[dt])


def close(got, expected, dt, scale=None, rtol=None):
    """Compares with a relative tolerance, plus an absolute one scaled by `scale` (the sum of
    magnitudes entering a reduction: cancellation makes a tiny result's relative error large)."""
    expected = np.asarray(expected)
    rtol = rtol if rtol is not None else RTOL[dt]
    atol = 0.0 if scale is None else rtol * float(np.max(scale))
    check(got, expected.astype(NP_DTYPES[dt]), rtol=rtol, atol=atol, dtype=dt)


SHAPES_AXES = [
    ((7,), None), ((7,), 0), ((7,), -1), ((7,), (0,)),
    ((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((3, 4), -2), ((3, 4), (0, 1)), ((3, 4), (1, 0)),
    ((2, 3, 4), None), ((2, 3, 4), 1), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 0)), ((2, 3, 4), (0, 1, 2)),
    ((2, 3, 4), -2), ((2, 1, 3, 2), (1, 3)), ((5, 1), 1),
]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", SHAPES_AXES)
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
def test_basic_reductions(name, shape, axis, keepdims, fdt):
    a = data(shape, fdt, 0.5, 1.5) if name == "prod" else data(shape, fdt)
    a64 = a.astype(np.float64)
    npf = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
           "amax": np.max, "amin": np.min}[name]
    expected = npf(a64, axis=axis, keepdims=keepdims)
    scale = np.sum(np.abs(a64), axis=axis, keepdims=keepdims) if name in ("sum", "mean") else None
    if name == "mean":
        scale = np.mean(np.abs(a64), axis=axis, keepdims=keepdims)
    x = qb.array(a)
    rtol = RTOL[fdt] * (4 if name == "prod" else 1)
    close(getattr(qb, name)(x, axis=axis, keepdims=keepdims), expected, fdt, scale, rtol)
    close(getattr(x, name)(axis=axis, keepdims=keepdims), expected, fdt, scale, rtol)
    if not keepdims:
        close(getattr(qb, name)(x, axis), expected, fdt, scale, rtol)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std", "norm", "logsumexp"])
def test_reduction_defaults_and_scalar_input(name, fdt):
    a = data((3, 4), fdt, 0.5, 1.5)
    ref = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod, "var": np.var,
           "std": np.std, "norm": np.linalg.norm, "logsumexp": scipy.special.logsumexp}[name]
    close(getattr(qb, name)(qb.array(a)), ref(a.astype(np.float64)), fdt, rtol=RTOL[fdt] * 4)
    s = qb.array(np.array(1.5, dtype=NP_DTYPES[fdt]))
    close(getattr(qb, name)(s), ref(np.array(1.5)), fdt, rtol=RTOL[fdt] * 4)


def test_empty_axis_tuple_is_identity():
    a = data((2, 3), "float64")
    check(qb.sum(qb.array(a), axis=()), np.sum(a, axis=()))
    check(qb.max(qb.array(a), axis=()), np.max(a, axis=()))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", SHAPES_AXES)
def test_any_all(shape, axis, keepdims):
    rng = np.random.default_rng(len(shape))
    m = rng.random(shape) < 0.5
    x = qb.array(m)
    check(qb.any(x, axis=axis, keepdims=keepdims), np.any(m, axis=axis, keepdims=keepdims))
    check(qb.all(x, axis=axis, keepdims=keepdims), np.all(m, axis=axis, keepdims=keepdims))
    check(x.any(axis=axis, keepdims=keepdims), np.any(m, axis=axis, keepdims=keepdims))
    check(x.all(axis=axis, keepdims=keepdims), np.all(m, axis=axis, keepdims=keepdims))
    ones = np.ones(shape, dtype=bool)
    check(qb.all(qb.array(ones), axis=axis, keepdims=keepdims), np.all(ones, axis=axis, keepdims=keepdims))
    zeros = np.zeros(shape, dtype=bool)
    check(qb.any(qb.array(zeros), axis=axis, keepdims=keepdims), np.any(zeros, axis=axis, keepdims=keepdims))


def test_any_all_on_floats_use_truthiness(fdt):
    a = np.array([[0.0, np.nan, -0.0], [0.0, 0.0, 0.0], [1.0, 2.0, -3.0]], dtype=NP_DTYPES[fdt])
    check(qb.any(qb.array(a), axis=1), np.any(a, axis=1))
    check(qb.all(qb.array(a), axis=1), np.all(a, axis=1))
    check(qb.any(qb.array(a)), np.any(a))


@pytest.mark.parametrize("ddof", [0, 1, 2, 0.5])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", [((7,), None), ((3, 4), 0), ((3, 4), -1), ((3, 4), None),
                                         ((2, 3, 4), (0, 2)), ((4, 5, 3), 1)])
def test_var_std(shape, axis, ddof, keepdims, fdt):
    a = data(shape, fdt) + 3.0
    a64 = a.astype(np.float64)
    x = qb.array(a)
    rtol = RTOL[fdt] * 10
    close(qb.var(x, axis=axis, ddof=ddof, keepdims=keepdims), np.var(a64, axis=axis, ddof=ddof, keepdims=keepdims), fdt,
          rtol=rtol)
    close(qb.std(x, axis=axis, ddof=ddof, keepdims=keepdims), np.std(a64, axis=axis, ddof=ddof, keepdims=keepdims), fdt,
          rtol=rtol)
    close(x.var(axis=axis, ddof=ddof, keepdims=keepdims), np.var(a64, axis=axis, ddof=ddof, keepdims=keepdims), fdt,
          rtol=rtol)
    close(x.std(axis=axis, ddof=ddof, keepdims=keepdims), np.std(a64, axis=axis, ddof=ddof, keepdims=keepdims), fdt,
          rtol=rtol)


def test_var_of_constant_is_zero(fdt):
    a = np.full((4, 5), 0.1, dtype=NP_DTYPES[fdt])
    check(qb.var(qb.array(a), axis=1), np.zeros(4, dtype=NP_DTYPES[fdt]), atol=1e-7 if fdt == "float32" else 1e-16,
          rtol=0.0)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", SHAPES_AXES)
def test_logsumexp(shape, axis, keepdims, fdt):
    a = data(shape, fdt, -5.0, 5.0)
    expected = scipy.special.logsumexp(a.astype(np.float64), axis=axis, keepdims=keepdims)
    x = qb.array(a)
    close(qb.logsumexp(x, axis=axis, keepdims=keepdims), expected, fdt, scale=np.abs(expected) + 1,
          rtol=RTOL[fdt] * 4)
    close(x.logsumexp(axis=axis, keepdims=keepdims), expected, fdt, scale=np.abs(expected) + 1, rtol=RTOL[fdt] * 4)


def test_logsumexp_extremes(fdt):
    big = 80.0 if fdt == "float32" else 700.0
    a = np.array([[big, big - 1, big - 2], [-big, -big - 1, -big - 2], [-np.inf, -np.inf, -np.inf],
                  [np.inf, 1.0, 2.0], [-np.inf, 0.0, -np.inf]], dtype=NP_DTYPES[fdt])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = scipy.special.logsumexp(a.astype(np.float64), axis=1)
    close(qb.logsumexp(qb.array(a), axis=1), expected, fdt, rtol=RTOL[fdt] * 4)
    big2 = np.full((3,), 1000.0 if fdt == "float64" else 100.0, dtype=NP_DTYPES[fdt])
    close(qb.logsumexp(qb.array(big2)), scipy.special.logsumexp(big2.astype(np.float64)), fdt, rtol=RTOL[fdt] * 4)


@pytest.mark.parametrize("shape, axis", [((5,), -1), ((5,), 0), ((3, 4), -1), ((3, 4), 0), ((3, 4), 1),
                                         ((2, 3, 4), 1), ((2, 3, 4), -3), ((2, 3, 4), 2)])
def test_softmax_log_softmax(shape, axis, fdt):
    a = data(shape, fdt, -10.0, 10.0)
    a64 = a.astype(np.float64)
    x = qb.array(a)
    sm = scipy.special.softmax(a64, axis=axis)
    lsm = scipy.special.log_softmax(a64, axis=axis)
    rtol = RTOL[fdt] * 10
    close(qb.softmax(x, axis=axis), sm, fdt, rtol=rtol, scale=np.full(1, 1e-30))
    close(x.softmax(axis), sm, fdt, rtol=rtol, scale=np.full(1, 1e-30))
    close(qb.log_softmax(x, axis=axis), lsm, fdt, rtol=rtol, scale=np.abs(lsm) + 1)
    close(x.log_softmax(axis), lsm, fdt, rtol=rtol, scale=np.abs(lsm) + 1)
    np.testing.assert_allclose(np.sum(np_of(qb.softmax(x, axis=axis)), axis=axis), 1.0, rtol=rtol * 10)


def test_softmax_default_axis_is_last(fdt):
    a = data((3, 4), fdt)
    close(qb.softmax(qb.array(a)), scipy.special.softmax(a.astype(np.float64), axis=-1), fdt, rtol=RTOL[fdt] * 10)
    close(qb.log_softmax(qb.array(a)), scipy.special.log_softmax(a.astype(np.float64), axis=-1), fdt,
          rtol=RTOL[fdt] * 10, scale=np.ones(1))


def test_softmax_large_inputs_do_not_overflow(fdt):
    a = np.array([1000.0, 1001.0, 999.0], dtype=NP_DTYPES[fdt])
    close(qb.softmax(qb.array(a)), scipy.special.softmax(a.astype(np.float64)), fdt, rtol=RTOL[fdt] * 10)
    # x - logsumexp(x): the absolute error is a few ULP of |x| ~ 1000
    eps = np.finfo(NP_DTYPES[fdt]).eps
    check(qb.log_softmax(qb.array(a)), scipy.special.log_softmax(a.astype(np.float64)).astype(NP_DTYPES[fdt]),
          rtol=0.0, atol=4 * eps * 1001)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", SHAPES_AXES)
def test_norm(shape, axis, keepdims, fdt):
    a = data(shape, fdt)
    a64 = a.astype(np.float64)
    expected = np.sqrt(np.sum(a64 * a64, axis=axis, keepdims=keepdims))
    close(qb.norm(qb.array(a), axis=axis, keepdims=keepdims), expected, fdt, rtol=RTOL[fdt] * 4)
    close(qb.array(a).norm(axis=axis, keepdims=keepdims), expected, fdt, rtol=RTOL[fdt] * 4)


def test_norm_no_overflow_or_underflow(fdt):
    big = 1e30 if fdt == "float32" else 1e200
    tiny = 1e-30 if fdt == "float32" else 1e-200
    for s in (big, tiny):
        a = np.array([3.0 * s, 4.0 * s], dtype=NP_DTYPES[fdt])
        close(qb.norm(qb.array(a)), np.array(5.0 * s), fdt, rtol=RTOL[fdt] * 4)
    check(qb.norm(qb.zeros(3, dtype=qb.float32)), np.array(0.0, dtype=np.float32))
    check(qb.norm(qb.array([np.inf, 1.0])), np.array(np.inf))
    assert np.isnan(qb.norm(qb.array([np.nan, 1.0])).item())


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape, axis", [((6,), None), ((6,), 0), ((6,), -1), ((3, 4), None), ((3, 4), 0),
                                         ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), 1), ((2, 3, 4), -1)])
def test_cumsum(shape, axis, reverse, fdt):
    a = data(shape, fdt)
    a64 = a.astype(np.float64)
    if axis is None:
        flat = a64.ravel()
        expected = np.flip(np.cumsum(np.flip(flat))) if reverse else np.cumsum(flat)
    else:
        expected = np.flip(np.cumsum(np.flip(a64, axis), axis), axis) if reverse else np.cumsum(a64, axis)
    scale = np.sum(np.abs(a64)) * np.ones_like(expected)
    x = qb.array(a)
    close(qb.cumsum(x, axis=axis, reverse=reverse), expected, fdt, scale=scale)
    close(x.cumsum(axis=axis, reverse=reverse), expected, fdt, scale=scale)


def test_cumsum_default_flattens():
    a = np.arange(6.0).reshape(2, 3)
    check(qb.cumsum(qb.array(a)), np.cumsum(a))


# ---------------------------------------------------------------- NaN propagation

@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
def test_max_min_propagate_nan(name, fdt):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0], [np.nan, -np.inf, np.inf]], dtype=NP_DTYPES[fdt])
    npf = np.max if name in ("max", "amax") else np.min
    x = qb.array(a)
    check(getattr(qb, name)(x, axis=1), npf(a, axis=1))
    check(getattr(qb, name)(x, axis=0), npf(a, axis=0))
    check(getattr(qb, name)(x), npf(a))
    assert np.isnan(getattr(qb, name)(qb.array(np.array([np.nan, 1.0]))).item())
    assert np.isnan(getattr(qb, name)(qb.array(np.array([1.0, np.nan]))).item())


def test_sum_mean_with_nan_and_inf(fdt):
    a = np.array([[1.0, np.nan], [np.inf, 1.0], [np.inf, -np.inf]], dtype=NP_DTYPES[fdt])
    with np.errstate(invalid="ignore"):
        check(qb.sum(qb.array(a), axis=1), np.sum(a, axis=1))
        check(qb.mean(qb.array(a), axis=1), np.mean(a, axis=1))


def test_max_min_of_signed_zero_and_inf(fdt):
    a = np.array([-np.inf, -1.0, np.inf], dtype=NP_DTYPES[fdt])
    assert qb.max(qb.array(a)).item() == np.inf
    assert qb.min(qb.array(a)).item() == -np.inf


# ---------------------------------------------------------------- matmul and dot

MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((1, 1), (1, 1)), ((5, 7), (7, 6)),
    ((4, 2, 3), (4, 3, 5)), ((4, 2, 3), (3, 5)), ((2, 3), (4, 3, 5)), ((2, 1, 2, 3), (5, 3, 4)),
    ((3,), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 4, 2, 3), (6, 1, 3, 2)), ((33, 65), (65, 17)),
]


@pytest.mark.parametrize("sx, sy", MATMUL_SHAPES)
def test_matmul_numpy_rules(sx, sy, fdt):
    a, b = data(sx, fdt), data(sy, fdt, seed=1)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    k = sx[-1]
    scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    rtol = RTOL[fdt] * max(4, k // 4)
    x, y = qb.array(a), qb.array(b)
    close(qb.matmul(x, y), expected, fdt, scale=scale, rtol=rtol)
    close(x @ y, expected, fdt, scale=scale, rtol=rtol)
    close(x.matmul(y), expected, fdt, scale=scale, rtol=rtol)


def test_matmul_exact_small_integers(fdt):
    a = np.arange(6.0).reshape(2, 3).astype(NP_DTYPES[fdt])
    b = np.arange(12.0).reshape(3, 4).astype(NP_DTYPES[fdt])
    check(qb.array(a) @ qb.array(b), a @ b)
    check(qb.array(a[0]) @ qb.array(b), a[0] @ b)
    check(qb.array(a) @ qb.array(b[:, 0]), a @ b[:, 0])


def test_matmul_with_numpy_operand():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    check(qb.array(a) @ b, a @ b)
    check(a @ qb.array(b), a @ b)


@pytest.mark.parametrize("sx, sy", [((2, 3), (2, 3)), ((3,), (4,)), ((2, 3), (4,)), ((4,), (3, 2)),
                                    ((2, 2, 3), (3, 3, 4)), ((2, 3, 4), (2, 5, 6))])
def test_matmul_mismatch(sx, sy):
    with pytest.raises(ValueError, match="matmul"):
        qb.matmul(qb.ones(sx), qb.ones(sy))
    with pytest.raises(ValueError, match="matmul"):
        qb.ones(sx) @ qb.ones(sy)


def test_matmul_scalar_operand_rejected():
    with pytest.raises(ValueError, match="1-D"):
        qb.matmul(qb.array(2.0), qb.ones(3))


@pytest.mark.parametrize("sx, sy", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((), (3,)),
                                    ((2, 3), ()), ((2, 3, 4), (4,))])
def test_dot(sx, sy, fdt):
    a, b = data(sx, fdt), data(sy, fdt, seed=1)
    expected = np.dot(a.astype(np.float64), b.astype(np.float64))
    scale = np.abs(np.dot(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))) + 1e-30
    close(qb.dot(qb.array(a), qb.array(b)), expected, fdt, scale=scale, rtol=RTOL[fdt] * 4)
    close(qb.array(a).dot(qb.array(b)), expected, fdt, scale=scale, rtol=RTOL[fdt] * 4)


@pytest.mark.parametrize("sx, sy", [((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)),
                                    ((2, 2, 3), (3, 3, 1, 3, 2))])
def test_dot_nd(sx, sy, fdt):
    a, b = data(sx, fdt), data(sy, fdt, seed=1)
    expected = np.dot(a.astype(np.float64), b.astype(np.float64))
    scale = np.dot(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    close(qb.dot(qb.array(a), qb.array(b)), expected, fdt, scale=scale, rtol=RTOL[fdt] * 4)
    close(qb.array(a).dot(qb.array(b)), expected, fdt, scale=scale, rtol=RTOL[fdt] * 4)


def test_dot_mismatch():
    with pytest.raises(ValueError, match="aligned"):
        qb.dot(qb.ones((2, 3)), qb.ones((4, 2)))
    with pytest.raises(ValueError):
        qb.dot(qb.ones(3), qb.ones(4))


# ---- the vectorised kernel paths: reductions of a contiguous row in 16 lanes plus a tail,
# branch-free selects, comparisons into bools (each checked on lengths around the lane
# count, with NaNs and signed zeros placed anywhere)

@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 31, 33, 1000, 4099])
def test_row_reductions_match_numpy_at_every_length(n):
    rng = np.random.default_rng(n)
    x = rng.uniform(-2.0, 2.0, n)
    for op in ("max", "min", "prod", "sum"):
        np.testing.assert_allclose(np.asarray(getattr(qb, op)(qb.array(x))), getattr(np, op)(x), rtol=1e-13)
    for pos in {0, n // 2, n - 1}:
        y = x.copy()
        y[pos] = np.nan
        for op in ("max", "min", "prod"):
            assert np.isnan(float(getattr(qb, op)(qb.array(y)))), (op, pos)
        b = y > 0
        assert bool(qb.any(qb.array(b))) == b.any() and bool(qb.all(qb.array(b))) == b.all()
        b[:] = False
        b[pos] = True
        assert bool(qb.any(qb.array(b))) and bool(qb.all(qb.array(b))) == (n == 1)
        assert not bool(qb.any(qb.array(~b))) or n > 1
    i = rng.integers(-2**62, 2**62, n)
    assert int(qb.sum(qb.array(i))) == int(np.sum(i))  # wraps as NumPy's int64 does
    np.testing.assert_array_equal(np.asarray(qb.max(qb.array(i.reshape(1, n)), axis=1)), i.reshape(1, n).max(axis=1))
    m = rng.uniform(-1, 1, (3, n))
    np.testing.assert_allclose(np.asarray(qb.max(qb.array(m), axis=1)), m.max(axis=1))
    np.testing.assert_allclose(np.asarray(qb.max(qb.array(m), axis=0)), m.max(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_select_and_comparisons_every_operand_shape(dtype):
    rng = np.random.default_rng(3)
    a, c = rng.uniform(-5, 5, 37).astype(dtype), rng.uniform(-5, 5, 37).astype(dtype)
    p = rng.uniform(size=37) < 0.5
    for pv in (p, np.bool_(True), np.bool_(False)):
        for av in (a, a[3]):
            for cv in (c, c[5]):
                got = qb.where(qb.array(pv), qb.array(av), qb.array(cv))
                np.testing.assert_array_equal(np.asarray(got), np.broadcast_to(np.where(pv, av, cv), (37,)))
    if dtype != np.bool_:
        for op in ("less", "less_equal", "greater", "equal", "not_equal"):
            np.testing.assert_array_equal(np.asarray(getattr(qb, op)(qb.array(a), qb.array(c))), getattr(np, op)(a, c))
            np.testing.assert_array_equal(np.asarray(getattr(qb, op)(qb.array(a), qb.array(a[7]))), getattr(np, op)(a, a[7]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_fused_broadcast_and_strided_loads_of_every_item_size(dtype):
    # A per-row value broadcast along the last axis (a fill), a strided slice (a gather) and a
    # 0-d operand, all loaded inside one fused kernel, for items of 1, 4 and 8 bytes.
    rng = np.random.default_rng(11)
    m = (rng.uniform(-4, 4, (7, 36)) * 3).astype(dtype)
    col, row = m[:, 3].copy(), m[2].copy()
    if dtype == np.bool_:
        f = lambda a, c, r: (a ^ c[:, None]) | (r[None, :] & a[:, ::-1])
        want = (m ^ col[:, None]) | (row[None, :] & m[:, ::-1])
    else:
        f = lambda a, c, r: a * c[:, None] + r[None, :] - a[:, ::-1] + a[::2, 1::3].sum()
        want = m * col[:, None] + row[None, :] - m[:, ::-1] + m[::2, 1::3].sum()
    got = qb.jit(f)(qb.array(m), qb.array(col), qb.array(row))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    pair = (lambda a: a[:, ::3] | a[:, 1::3]) if dtype == np.bool_ else (lambda a: a[:, ::3] + a[:, 1::3])
    np.testing.assert_array_equal(np.asarray(qb.jit(pair)(qb.array(m))), pair(m))
