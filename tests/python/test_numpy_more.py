"""More of jax.numpy (python/quabla/_numpy_more.py), qb.nn and jax.lax's helpers (lax.py):
values against NumPy (and closed forms for qb.nn), eagerly and under jit, derivatives against
central differences, error messages."""
from __future__ import annotations

import math

import numpy as np
import pytest

import quabla as qb

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 4))
V = RNG.normal(size=5)
NANNY = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan], [0.5, 4.0, np.nan, 1.0]])


def same(got, want, rtol=1e-12, atol=1e-12):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, rtol, atol)
        return
    g = np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


CASES = [
    # (name, qb call, numpy call)
    ("atleast_1d", lambda m: m.atleast_1d(3.0), None),
    ("atleast_2d", lambda m: m.atleast_2d(V), None),
    ("atleast_3d", lambda m: m.atleast_3d(A), None),
    ("atleast_3d_1d", lambda m: m.atleast_3d(V), None),
    ("hstack", lambda m: m.hstack([A, A[:, :2]]), None),
    ("hstack_1d", lambda m: m.hstack([V, V[:2]]), None),
    ("vstack", lambda m: m.vstack([A, A[:1]]), None),
    ("vstack_1d", lambda m: m.vstack([A[0], A[1]]), None),
    ("dstack", lambda m: m.dstack([A, A]), None),
    ("column_stack", lambda m: m.column_stack([V, V * 2]), None),
    ("broadcast_arrays", lambda m: m.broadcast_arrays(A, A[0], 1.0), None),
    ("array_split", lambda m: m.array_split(np.arange(10.0), 3), None),
    ("array_split_idx", lambda m: m.array_split(A, [1, 3], axis=1), None),
    ("hsplit", lambda m: m.hsplit(A, 2), None),
    ("vsplit", lambda m: m.vsplit(np.arange(12.0).reshape(4, 3), [1]), None),
    ("fliplr", lambda m: m.fliplr(A), None),
    ("flipud", lambda m: m.flipud(A), None),
    ("rot90", lambda m: m.rot90(A), None),
    ("rot90_2", lambda m: m.rot90(A, 2), None),
    ("rot90_3", lambda m: m.rot90(A, 3, axes=(1, 0)), None),
    ("append", lambda m: m.append(A, V), None),
    ("append_axis", lambda m: m.append(A, A[:1], axis=0), None),
    ("isclose", lambda m: m.isclose(np.array([1.0, np.inf, np.nan, 1e-9, -np.inf]),
                                    np.array([1.0 + 1e-6, np.inf, np.nan, 0.0, np.inf])), None),
    ("isclose_nan", lambda m: m.isclose(np.array([np.nan, 1.0]), np.array([np.nan, 2.0]), equal_nan=True), None),
    ("allclose", lambda m: m.allclose(A, A + 1e-9), None),
    ("array_equal", lambda m: m.array_equal(A, A.copy()), None),
    ("array_equal_shape", lambda m: m.array_equal(A, A[:1]), None),
    ("isneginf", lambda m: m.isneginf(np.array([-np.inf, np.inf, 0.0, np.nan])), None),
    ("isposinf", lambda m: m.isposinf(np.array([-np.inf, np.inf, 0.0, np.nan])), None),
    ("nansum", lambda m: m.nansum(NANNY, axis=1), None),
    ("nanprod", lambda m: m.nanprod(NANNY, axis=0), None),
    ("nanmax", lambda m: m.nanmax(NANNY[[0, 2]], axis=1), None),
    ("nanmin", lambda m: m.nanmin(NANNY[[0, 2]]), None),
    ("nanmean", lambda m: m.nanmean(NANNY[[0, 2]], axis=1, keepdims=True), None),
    ("nanvar", lambda m: m.nanvar(NANNY[[0, 2]], axis=1, ddof=1), None),
    ("nanstd", lambda m: m.nanstd(NANNY[[0, 2]]), None),
    ("nanargmax", lambda m: m.nanargmax(NANNY[[0, 2]], axis=1), None),
    ("nanargmin", lambda m: m.nanargmin(NANNY[0]), None),
    ("nancumsum", lambda m: m.nancumsum(NANNY[0]), None),
    ("average", lambda m: m.average(A, axis=1, weights=np.array([1.0, 2.0, 0.5, 3.0])), None),
    ("average_plain", lambda m: m.average(A), None),
    ("ptp", lambda m: m.ptp(A, axis=0), None),
    ("count_nonzero", lambda m: m.count_nonzero(np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]]), axis=1), None),
    ("quantile", lambda m: m.quantile(A, 0.3, axis=1), None),
    ("quantile_vec", lambda m: m.quantile(A, np.array([0.0, 0.25, 1.0])), None),
    ("percentile", lambda m: m.percentile(V, 75.0), None),
    ("median_even", lambda m: m.median(A, axis=1), None),
    ("median_odd", lambda m: m.median(A, axis=0, keepdims=True), None),
    ("nanmedian", lambda m: m.nanmedian(NANNY[[0, 2]], axis=1), None),
    ("nanpercentile", lambda m: m.nanpercentile(NANNY[[0, 2]], 40.0, axis=1), None),
    ("cov", lambda m: m.cov(A), None),
    ("cov_cols", lambda m: m.cov(A, rowvar=False, bias=True), None),
    ("cov_xy", lambda m: m.cov(V, V ** 2), None),
    ("corrcoef", lambda m: m.corrcoef(A), None),
    ("digitize", lambda m: m.digitize(np.array([-1.0, 0.0, 0.5, 2.0, 3.0]), np.array([0.0, 1.0, 2.0])), None),
    ("digitize_right", lambda m: m.digitize(np.array([0.0, 1.0, 2.5]), np.array([0.0, 1.0, 2.0]), right=True), None),
    ("deg2rad", lambda m: m.deg2rad(np.array([0.0, 90.0, 180.0])), None),
    ("rad2deg", lambda m: m.rad2deg(V), None),
    ("trunc", lambda m: m.trunc(np.array([-1.7, -0.2, 0.0, 0.5, 2.9])), None),
    ("fix", lambda m: m.fix(np.array([-1.7, 2.9])), None),
    ("rint", lambda m: m.rint(np.array([0.5, 1.5, -0.5, 2.4])), None),
    ("fabs", lambda m: m.fabs(V), None),
    ("fmax", lambda m: m.fmax(np.array([1.0, np.nan, np.nan]), np.array([np.nan, 2.0, np.nan])), None),
    ("fmin", lambda m: m.fmin(np.array([1.0, np.nan, 3.0]), np.array([np.nan, 2.0, 1.0])), None),
    ("heaviside", lambda m: m.heaviside(np.array([-1.0, 0.0, 2.0, np.nan]), 0.5), None),
    ("sinc", lambda m: m.sinc(np.array([0.0, 0.5, 1.0, -2.5])), None),
    ("float_power", lambda m: m.float_power(np.array([2, 3]), np.array([0.5, 2.0])), None),
    ("logaddexp2", lambda m: m.logaddexp2(V, V * 3), None),
    ("logspace", lambda m: m.logspace(0.0, 2.0, 5), None),
    ("logspace_base", lambda m: m.logspace(0.0, 3.0, 4, base=2.0, endpoint=False), None),
    ("geomspace", lambda m: m.geomspace(1.0, 1000.0, 4), None),
    ("geomspace_neg", lambda m: m.geomspace(-2.0, -32.0, 5), None),
    ("tri", lambda m: m.tri(3, 4, k=1), None),
    ("tril_indices", lambda m: m.tril_indices(4, -1), None),
    ("triu_indices", lambda m: m.triu_indices(3, 1, 4), None),
    ("diag_indices", lambda m: m.diag_indices(3), None),
    ("indices", lambda m: m.indices((2, 3)), None),
    ("diagflat", lambda m: m.diagflat(np.array([[1.0, 2.0], [3.0, 4.0]]), 1), None),
    ("vdot", lambda m: m.vdot(A, A * 2), None),
    ("select", lambda m: m.select([V < -0.5, V < 0.5], [V * 10, V * 100], default=-1.0), None),
    ("unravel_index", lambda m: m.unravel_index(np.array([0, 5, 11]), (3, 4)), None),
    ("ravel_multi_index", lambda m: m.ravel_multi_index((np.array([0, 1, 2]), np.array([3, 0, 1])), (3, 4)), None),
    ("ravel_multi_index_clip", lambda m: m.ravel_multi_index((np.array([5, -1]), np.array([3, 9])), (3, 4),
                                                             mode="clip"), None),
    ("isin", lambda m: m.isin(np.array([[1, 2], [3, 4]]), np.array([2, 4, 7])), None),
    ("convolve", lambda m: m.convolve(V, np.array([1.0, -2.0, 0.5])), None),
    ("convolve_same", lambda m: m.convolve(V, np.array([1.0, -2.0, 0.5, 3.0]), mode="same"), None),
    ("convolve_valid", lambda m: m.convolve(np.array([1.0, 2.0]), V, mode="valid"), None),
    ("correlate", lambda m: m.correlate(V, np.array([1.0, 0.5])), None),
    ("correlate_full", lambda m: m.correlate(V, np.array([1.0, 0.5, -1.0]), mode="full"), None),
    ("polyfit", lambda m: m.polyfit(np.linspace(0, 1, 8), 1 + 2 * np.linspace(0, 1, 8) ** 2, 2), None),
]


def _to_qb(tree):
    if isinstance(tree, np.ndarray):
        return qb.array(tree)
    return tree


@pytest.mark.parametrize("name,call,_", CASES, ids=[c[0] for c in CASES])
def test_against_numpy(name, call, _):
    want = call(np)
    got = call(qb)
    same(got, want, rtol=1e-10, atol=1e-12)
    if isinstance(want, np.ndarray):
        assert np.asarray(got).dtype.kind == want.dtype.kind or (want.dtype.kind in "iu" and
                                                                   np.asarray(got).dtype.kind in "iu"), name


def test_under_jit_and_grad():
    x = qb.array(A)
    f = qb.jit(lambda a: qb.vstack([qb.nanmean(a, axis=0), qb.median(a, axis=0), qb.ptp(a, axis=0)]))
    same(f(x), np.vstack([np.nanmean(A, axis=0), np.median(A, axis=0), np.ptp(A, axis=0)]))
    g = qb.jit(qb.grad(lambda a: qb.sum(qb.sinc(a)) + qb.sum(qb.cov(a)) + qb.median(a)))(x)
    h = 1e-6
    fd = np.zeros_like(A)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            d = np.zeros_like(A)
            d[i, j] = h
            fp = np.sum(np.sinc(A + d)) + np.sum(np.cov(A + d)) + np.median(A + d)
            fm = np.sum(np.sinc(A - d)) + np.sum(np.cov(A - d)) + np.median(A - d)
            fd[i, j] = (fp - fm) / (2 * h)
    same(g, fd, rtol=1e-6, atol=1e-7)
    # sinc's derivative at 0 is 0, not NaN
    assert float(qb.grad(lambda t: qb.sinc(t))(qb.asarray(0.0))) == 0.0


def test_constants_and_dtype_information():
    assert qb.pi == math.pi and qb.e == math.e and qb.inf == math.inf and math.isnan(qb.nan) and qb.newaxis is None
    assert qb.finfo(qb.float32).eps == np.finfo(np.float32).eps
    assert qb.finfo(qb.ones(2)).max == np.finfo(np.float64).max
    assert qb.iinfo(qb.int32).max == 2 ** 31 - 1
    assert qb.issubdtype(qb.float32, qb.floating) and not qb.issubdtype(qb.int32, qb.floating)
    assert qb.issubdtype(qb.int64, qb.integer) and qb.issubdtype(qb.array([1.0]).dtype, qb.inexact)
    assert qb.result_type(qb.ones(2, dtype=qb.float32), 2.0) == qb.float32  # a Python float is weak
    assert qb.result_type(qb.int32, qb.float32) == qb.float32
    assert qb.promote_types(qb.int32, qb.int64) == qb.int64
    assert qb.result_type(qb.bool_, qb.bool_) == qb.bool_ and qb.result_type(True, qb.int32) == qb.int32
    assert qb.can_cast(qb.int32, qb.float64) and not qb.can_cast(qb.float64, qb.int32)
    assert qb.ndim(A) == 2 and qb.shape(A) == (3, 4) and qb.size(A) == 12 and qb.size(A, 1) == 4
    assert qb.isscalar(3.0) and qb.isscalar(qb.asarray(1.0)) and not qb.isscalar(qb.ones(2))
    assert np.asarray(qb.empty((2, 3))).shape == (2, 3) and qb.empty_like(qb.ones(4, dtype=qb.int32)).dtype == qb.int32
    assert qb.ShapeDtypeStruct is qb.ShapeDtype and qb.tree_util.tree_map is qb.tree.tree_map


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="hsplit: axis 1 of length 4 does not split into 3 equal sections"):
        qb.hsplit(qb.array(A), 3)
    with pytest.raises(TypeError, match="vstack: expects a sequence"):
        qb.vstack(qb.array(A))
    with pytest.raises(ValueError, match="broadcast_shapes"):
        qb.broadcast_arrays(qb.ones(3), qb.ones(4))
    with pytest.raises(ValueError, match="geomspace: start and stop must be nonzero and of one sign"):
        qb.geomspace(-1.0, 2.0, 3)
    with pytest.raises(ValueError, match="quantile: method='hazen' is not one of"):
        qb.quantile(qb.array(V), 0.5, method="hazen")
    with pytest.raises(ValueError, match="ravel_multi_index: an index is out of bounds"):
        qb.ravel_multi_index((np.array([3]), np.array([0])), (3, 4))
    with pytest.raises(ValueError, match="select: condlist has 2 entries and choicelist 1"):
        qb.select([qb.ones(2) > 0, qb.ones(2) > 1], [qb.ones(2)])
    with pytest.raises(ValueError, match="convolve: mode must be"):
        qb.convolve(qb.array(V), qb.array(V), mode="middle")


def test_nn_against_closed_forms():
    x = np.linspace(-4.0, 4.0, 17)
    q = qb.array(x)
    sp = np.log1p(np.exp(x))
    sig = 1 / (1 + np.exp(-x))
    table = {
        "relu6": np.clip(x, 0, 6), "soft_sign": x / (np.abs(x) + 1), "log_sigmoid": -np.log1p(np.exp(-x)),
        "leaky_relu": np.where(x >= 0, x, 0.01 * x), "hard_sigmoid": np.clip(x + 3, 0, 6) / 6,
        "hard_silu": x * np.clip(x + 3, 0, 6) / 6, "hard_tanh": np.clip(x, -1, 1),
        "elu": np.where(x > 0, x, np.expm1(x)), "celu": np.where(x > 0, x, np.expm1(x)),
        "selu": 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
        "mish": x * np.tanh(sp), "squareplus": (x + np.sqrt(x * x + 4)) / 2, "swish": x * sig,
        "sigmoid": sig, "relu": np.maximum(x, 0),
    }
    for name, want in table.items():
        same(getattr(qb.nn, name)(q), want, rtol=1e-12, atol=1e-14)
    same(qb.nn.glu(qb.array(A), axis=1), A[:, :2] / (1 + np.exp(-A[:, 2:])), rtol=1e-12)
    st = np.asarray(qb.nn.standardize(qb.array(A), axis=1))
    same(st, (A - A.mean(1, keepdims=True)) / np.sqrt(A.var(1, keepdims=True) + 1e-5))
    oh = np.asarray(qb.nn.one_hot(qb.array(np.array([0, 2, 5])), 3))
    same(oh, np.array([[1.0, 0, 0], [0, 0, 1.0], [0, 0, 0]]))
    assert np.asarray(qb.nn.one_hot(qb.array(np.array([1, 0])), 3, axis=0)).shape == (3, 2)
    g = np.asarray(qb.vmap(qb.grad(qb.nn.elu))(q))
    same(g, np.where(x > 0, 1.0, np.exp(x)), rtol=1e-12)


def test_lax_helpers():
    branches = [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: -v]
    for i, want in ((-3, 4.0), (0, 4.0), (1, 6.0), (2, -3.0), (9, -3.0)):
        assert float(qb.lax.switch(i, branches, qb.asarray(3.0))) == want
        assert float(qb.jit(lambda k, v: qb.lax.switch(k, branches, v))(qb.asarray(i), qb.asarray(3.0))) == want
    same(qb.lax.map(lambda r: qb.sum(r ** 2), qb.array(A)), np.sum(A ** 2, axis=1))
    same(qb.lax.select(qb.array(V) > 0, qb.array(V), qb.zeros(5)), np.where(V > 0, V, 0))
    same(qb.lax.clamp(-0.5, qb.array(V), 0.5), np.clip(V, -0.5, 0.5))
    same(qb.lax.cumsum(qb.array(A), axis=1, reverse=True), np.flip(np.cumsum(np.flip(A, 1), axis=1), 1))
    same(qb.lax.cummax(qb.array(V)), np.maximum.accumulate(V))
    same(qb.lax.rsqrt(qb.array(np.abs(V))), 1 / np.sqrt(np.abs(V)))
    same(qb.lax.integer_pow(qb.array(V), 3), V ** 3)
    same(qb.lax.iota(qb.int32, 4), np.arange(4))
    same(qb.lax.iota(qb.float64, 3, dimension=1, shape=(2, 3)), np.broadcast_to(np.arange(3.0), (2, 3)))
    same(qb.lax.broadcast_in_dim(qb.array(V), (2, 5, 3), (1,)), np.broadcast_to(V[None, :, None], (2, 5, 3)))
    same(qb.lax.broadcast(qb.array(V), (2,)), np.broadcast_to(V, (2, 5)))
    same(qb.lax.reshape(qb.array(A), (4, 3), dimensions=(1, 0)), A.T.reshape(4, 3))
    same(qb.lax.expand_dims(qb.array(V), (0, 2)), V[None, :, None])
    same(qb.lax.squeeze(qb.array(V[None, :, None]), (0, 2)), V)
    same(qb.lax.concatenate([qb.array(A), qb.array(A)], 0), np.concatenate([A, A]))
    same(qb.lax.slice(qb.array(A), (0, 1), (3, 4), (2, 2)), A[0:3:2, 1:4:2])
    same(qb.lax.slice_in_dim(qb.array(A), 1, 3, axis=1), A[:, 1:3])
    same(qb.lax.index_in_dim(qb.array(A), 2, axis=0, keepdims=False), A[2])
    same(qb.jit(lambda s: qb.lax.dynamic_slice_in_dim(qb.array(A), s, 2, axis=1))(qb.asarray(1)), A[:, 1:3])
    same(qb.lax.dynamic_update_slice_in_dim(qb.array(A), qb.zeros((3, 1)), 2, axis=1),
         np.concatenate([A[:, :2], np.zeros((3, 1)), A[:, 3:]], axis=1))
    same(qb.lax.convert_element_type(qb.array(V), qb.float32), V.astype(np.float32), rtol=1e-6)
    same(qb.lax.full((2, 2), 7.0), np.full((2, 2), 7.0))
    same(qb.lax.logistic(qb.array(V)), 1 / (1 + np.exp(-V)))
    same(qb.lax.atan2(qb.array(V), qb.array(V[::-1])), np.arctan2(V, V[::-1]))
    xi, yi = np.array([7, -7, 7, -7, 6]), np.array([2, 2, -2, -2, 3])
    same(qb.lax.div(qb.array(xi), qb.array(yi)), np.trunc(xi / yi).astype(int))
    same(qb.lax.rem(qb.array(xi), qb.array(yi)), np.fmod(xi, yi))
    same(qb.lax.rem(qb.array(V), 0.7), np.fmod(V, 0.7))


def test_linearize_block_until_ready_device_get():
    f = lambda x: qb.sin(x) * x  # noqa: E731
    out, f_jvp = qb.linearize(f, qb.array(V))
    same(out, np.sin(V) * V)
    same(f_jvp(qb.ones(5)), np.cos(V) * V + np.sin(V))
    x = qb.ones(3)
    assert qb.block_until_ready(x) is x
    got = qb.device_get({"a": qb.ones(2), "b": 3})
    assert isinstance(got["a"], np.ndarray) and got["b"] == 3


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9])
def test_associative_scan_matches_a_sequential_scan(n):
    # Affine maps x -> a x + b composed left to right (associative, not commutative).
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))

    def compose(f, g):
        return {"a": g["a"] * f["a"], "b": g["a"] * f["b"] + g["b"]}

    want_a, want_b = np.empty_like(a), np.empty_like(b)
    acc = None
    for i in range(n):
        acc = {"a": a[i], "b": b[i]} if acc is None else compose(acc, {"a": a[i], "b": b[i]})
        want_a[i], want_b[i] = acc["a"], acc["b"]
    got = qb.lax.associative_scan(compose, {"a": qb.array(a), "b": qb.array(b)})
    same(got["a"], want_a, rtol=1e-12)
    same(got["b"], want_b, rtol=1e-12)
    got_t = qb.jit(lambda a, b: qb.lax.associative_scan(compose, {"a": a, "b": b}, axis=1))(qb.array(a.T), qb.array(b.T))
    same(got_t["b"], want_b.T, rtol=1e-12)
    rev = qb.lax.associative_scan(qb.add, qb.array(a), reverse=True)
    same(rev, np.cumsum(a[::-1], axis=0)[::-1], rtol=1e-12)


def test_eval_shape_bincount_histogram():
    out = qb.eval_shape(lambda x, w: {"y": qb.tanh(x @ w), "k": 3}, qb.ShapeDtype((5, 3), qb.float32),
                        qb.ShapeDtype((3, 2), qb.float32))
    assert out["y"].shape == (5, 2) and out["y"].dtype == qb.float32 and out["k"] == 3
    x = np.array([0, 1, 1, 3, 3, 3])
    same(qb.bincount(qb.array(x)), np.bincount(x))
    same(qb.bincount(qb.array(x), minlength=6), np.bincount(x, minlength=6))
    same(qb.bincount(qb.array(x), weights=qb.array(np.arange(6.0))), np.bincount(x, weights=np.arange(6.0)))
    same(qb.jit(lambda v: qb.bincount(v, length=3))(qb.array(np.array([0, 2, -1, 5, 2]))), np.array([1, 0, 2]))
    with pytest.raises(ValueError, match="pass length="):
        qb.jit(lambda v: qb.bincount(v))(qb.array(x))
    with pytest.raises(ValueError, match="non-negative"):
        qb.bincount(qb.array(np.array([1, -2])))
    d = RNG.normal(size=200)
    for kwargs in ({"bins": 7}, {"bins": 4, "range": (-1.0, 1.0)}, {"bins": np.array([-2.0, -0.5, 0.0, 3.0])},
                   {"bins": 5, "weights": np.abs(d)}, {"bins": 6, "density": True}):
        kq = {k: (qb.array(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        counts, edges = qb.histogram(qb.array(d), **kq)
        wc, we = np.histogram(d, **kwargs)
        same(edges, we, rtol=1e-12)
        same(counts, wc.astype(float), rtol=1e-12, atol=1e-12)


# ---- set operations and lax.reduce

SET_A = np.array([3, 1, 2, 2, 7, 1, 9])
SET_B = np.array([2, 9, 4, 4, 0])


@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_operations_match_numpy(name):
    want = getattr(np, name)(SET_A, SET_B)
    ours = getattr(qb, name)
    np.testing.assert_array_equal(np.asarray(ours(qb.array(SET_A), qb.array(SET_B))), want)  # eager: exact size
    n = len(want) + 2
    got = qb.jit(lambda a, b: ours(a, b, size=n, fill_value=-5))(qb.array(SET_A), qb.array(SET_B))
    np.testing.assert_array_equal(np.asarray(got), np.concatenate([want, [-5, -5]]))
    default_fill = np.asarray(ours(qb.array(SET_A), qb.array(SET_B), size=n))
    np.testing.assert_array_equal(default_fill, np.concatenate([want, [want.min()] * 2]))  # the smallest, as jnp
    np.testing.assert_array_equal(np.asarray(ours(qb.array(SET_A), qb.array(SET_B), size=2)), want[:2])
    with pytest.raises(ValueError, match="size= is required"):
        qb.jit(lambda a, b: ours(a, b))(qb.array(SET_A), qb.array(SET_B))


def test_set_operations_on_floats_keep_one_nan():
    a, b = np.array([3.0, np.nan, 1.0, np.nan]), np.array([1.0, 5.0])
    got = np.asarray(qb.setdiff1d(qb.array(a), qb.array(b), size=3, fill_value=0.0))
    np.testing.assert_array_equal(got, [3.0, np.nan, 0.0])
    np.testing.assert_array_equal(np.asarray(qb.union1d(qb.array(a), qb.array(b), size=4)), [1.0, 3.0, 5.0, np.nan])


@pytest.mark.parametrize("dims", [(1,), (0, 2), (0, 1, 2), ()])
def test_lax_reduce_matches_numpy(dims):
    x = np.random.default_rng(9).normal(size=(3, 5, 4))
    for comp, init, ref in ((qb.lax.add, 0.0, np.sum), (qb.lax.mul, 1.0, np.prod), (qb.lax.max, -np.inf, np.max),
                            (qb.lax.min, np.inf, np.min), (lambda a, b: a + b, 0.0, np.sum),
                            (lambda a, b: qb.maximum(a, b), -np.inf, np.max)):
        got = qb.lax.reduce(qb.array(x), init, comp, dims)
        want = ref(x, axis=dims) if dims else x
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)


def test_lax_reduce_of_a_pytree_with_a_custom_computation():
    v, i = np.array([3.0, 9.0, 1.0, 9.0, 2.0, 0.5, 9.0]), np.arange(7)

    def first_max(a, b):  # (value, index) of the largest value, the lowest index among ties
        take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return qb.where(take_a, a[0], b[0]), qb.where(take_a, a[1], b[1])
    best, at = qb.jit(lambda a, b: qb.lax.reduce((a, b), (-np.inf, 7), first_max, (0,)))(qb.array(v), qb.array(i))
    assert float(best) == 9.0 and int(at) == 1
    with pytest.raises(ValueError, match="one structure"):
        qb.lax.reduce((qb.array(v), qb.array(i)), 0.0, first_max, (0,))
