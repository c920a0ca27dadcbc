"""qb.jit (API.md §3): jit and eager agree bitwise on a battery of programs, the trace cache
(signatures, static arguments, LRU eviction), devices, tracer misuse, nested jit,
lower/compile and the compiler passes visible in the compiled program's text."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import quabla as qb
from jit_helpers import assert_bitwise, assert_tree_bitwise

QB = {"float32": qb.float32, "float64": qb.float64}
NP = {"float32": np.float32, "float64": np.float64}


# ---------------------------------------------------------------------------------------
# Inputs: a (3, 4) with special values, b (3, 4) finite, r a row (4,), c a column (3, 1),
# m a (4, 5) matrix, p (3, 4) strictly positive.

def make_inputs(dt):
    rng = np.random.default_rng(1234)
    t = NP[dt]
    a = rng.standard_normal((3, 4)).astype(t) * 3
    a[0, 0], a[0, 1], a[1, 2], a[2, 3], a[2, 0], a[1, 0] = np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30 if dt == "float64" else 3e38
    b = rng.standard_normal((3, 4)).astype(t)
    r = rng.standard_normal(4).astype(t)
    c = rng.standard_normal((3, 1)).astype(t)
    m = rng.standard_normal((4, 5)).astype(t)
    p = rng.uniform(0.1, 4.0, (3, 4)).astype(t)
    return tuple(qb.array(v) for v in (a, b, r, c, m, p))


def _softmax_axes(a, b, r, c, m, p):
    return [qb.softmax(b, axis=ax) for ax in (0, 1, -1)] + [qb.log_softmax(b, axis=0), qb.log_softmax(b)]


def _reductions(a, b, r, c, m, p):
    out = {}
    for ax in (None, 0, 1, -1, (0, 1)):
        for kd in (False, True):
            k = f"{ax}_{kd}"
            out["sum" + k] = qb.sum(b, axis=ax, keepdims=kd)
            out["mean" + k] = qb.mean(b, axis=ax, keepdims=kd)
            out["max" + k] = qb.max(b, axis=ax, keepdims=kd)
            out["min" + k] = qb.min(b * 2.0 + 1.0, axis=ax, keepdims=kd)
            out["var" + k] = qb.var(b, axis=ax, keepdims=kd)
            out["std" + k] = qb.std(p, axis=ax, keepdims=kd, ddof=1)
            out["lse" + k] = qb.logsumexp(b * 3.0, axis=ax, keepdims=kd)
            out["prod" + k] = qb.prod(p, axis=ax, keepdims=kd)
    out["nan_max"] = qb.max(a, axis=1)        # NaN propagates
    out["nan_sum"] = qb.sum(a, axis=0)
    out["any"] = qb.any(a > 1.0, axis=0)
    out["all"] = qb.all(b < 2.0, axis=1)
    out["norm"] = qb.norm(b, axis=1)
    out["cumsum"] = qb.cumsum(b, axis=1)
    return out


def _shapes(a, b, r, c, m, p):
    s1, s2 = qb.split(b, 2, axis=1)
    parts = qb.split(qb.ravel(b), [1, 5])
    return [
        b.reshape(4, 3), b.reshape(-1), b.T, qb.transpose(b[None], (2, 0, 1)), b[1:, ::-2], b[None, :, 0],
        b[..., 1], b[-1], b[::2, 1:3], qb.concat([a, b], axis=0), qb.concat([b, c, c], axis=1),
        qb.stack([a, b], axis=1), qb.stack([r, r * 2.0]), s1 * s2, parts[0], parts[1], parts[2],
        qb.flip(b, 1), qb.expand_dims(r, 0) + c, qb.squeeze(c, 1), qb.broadcast_to(r, (2, 3, 4)),
        qb.tril(b), qb.triu(b, 1), qb.reshape(qb.transpose(b) * 2.0, (2, 6)) + 1.0,
    ]


def _mixed(a, b, r, c, m, p):
    # Bool values kept alive across float work in one fused chain: a regression for a fusion
    # bug where a bool scratch slot was overwritten in place by a float result.
    dt = b.dtype
    other = qb.float64 if dt == qb.float32 else qb.float32
    mask = a > b
    s = qb.sin(b) * 2.0 + 1.0
    t = qb.where(mask, s, -s)
    m2 = qb.isnan(a) | (s > 0.5)
    f = mask.astype(dt) + m2.astype(dt) * 10.0 + t
    g = qb.exp(b.astype(other)) * 0.5      # f64 <-> f32 inside the chain
    h = g.astype(dt) + f
    bb = h.astype(qb.bool_)                # nonzero and NaN are True
    k = qb.where(bb & mask, h, qb.astype(bb, dt))
    return mask, m2, t, f, g, h, bb, k, qb.logical_not(mask) ^ bb, mask.astype(dt) * s


def _closure_factory(dt):
    rng = np.random.default_rng(7)
    K = qb.array(rng.standard_normal((3, 4)).astype(NP[dt]))
    row = qb.array(rng.standard_normal(4).astype(NP[dt]))

    def fn(a, b, r, c, m, p):
        return b * K + qb.sum(K) - row, qb.where(K > 0, b, K), qb.tanh(K) @ m
    return fn


PROGRAMS = {
    "weak_scalar_chain": lambda a, b, r, c, m, p: qb.tanh(b * 0.5 + 1.0) - 2.0 * qb.exp(-qb.abs(b)) / 3.0
    + b ** 2 - qb.sqrt(qb.abs(b) + 1e-3) + 1.0 / (p + 0.25) - (3.0 - b) ** 3,
    "special_values_chain": lambda a, b, r, c, m, p: (
        qb.exp(a), qb.log(a), qb.sqrt(a), a * 0.0, a / a, qb.sin(a), qb.maximum(a, b), qb.minimum(a, 0.0),
        qb.sign(a), qb.floor(a) + qb.ceil(a) - qb.round(a), qb.nan_to_num(a), qb.clip(a, -1.0, 1.0),
        qb.sigmoid(a), qb.softplus(a), qb.square(a), qb.reciprocal(a), qb.relu(a), -a, a ** 0.5),
    "unary_battery": lambda a, b, r, c, m, p: [
        fn(b) for fn in (qb.sin, qb.cos, qb.tan, qb.arctan, qb.sinh, qb.cosh, qb.tanh, qb.arcsinh, qb.exp,
                         qb.expm1, qb.exp2, qb.cbrt, qb.erf, qb.erfc, qb.silu, qb.gelu, qb.abs)] + [
        fn(p) for fn in (qb.log, qb.log1p, qb.log2, qb.log10, qb.sqrt, qb.arccosh)] + [
        fn(b * 0.3) for fn in (qb.arcsin, qb.arccos, qb.arctanh)],
    "binary_battery": lambda a, b, r, c, m, p: (
        qb.power(p, b), qb.atan2(b, a), qb.hypot(a, b), qb.fmod(b * 5.0, p), qb.mod(b * 5.0, p),
        qb.logaddexp(a, b), b - a, b / a, qb.remainder(a, p)),
    "broadcast_row_col_scalar": lambda a, b, r, c, m, p: (
        a * r + c - r * c, b + 1.0, 2.0 - b, qb.maximum(b, r) * qb.minimum(b, c), r / c, c ** 2 + r,
        qb.where(c > 0, r, b), qb.full_like(b, 3.0) + c),
    "where_select_nan": lambda a, b, r, c, m, p: (
        qb.where(qb.isnan(a), 0.0, a), qb.where(a > b, a, b), qb.where(a > 0, qb.log(a), -a),
        qb.where(qb.isfinite(a), a, 0.0) * 2.0, qb.where(b > 0, a, r), qb.where(qb.isinf(a), b, 1.0),
        qb.where(a != a, b, a)),
    "comparisons_bool_logic": lambda a, b, r, c, m, p: (
        (a > b) & ~(b <= r) | (a == a), qb.logical_xor(a < 0, b >= 0), a != b, qb.equal(b, b),
        qb.greater_equal(a, c), qb.logical_or(qb.isnan(a), qb.isinf(a)), qb.logical_and(a > 0, b > 0),
        qb.less(b, 0.5), (a > 0).astype(b.dtype) * b),
    "reductions": _reductions,
    "softmax": _softmax_axes,
    "shapes_indexing": _shapes,
    "matmul_dot": lambda a, b, r, c, m, p: (
        b @ m, qb.dot(r, r), qb.matmul(b, m) + 1.0, qb.stack([b, b * 2.0]) @ m, r @ m, b @ r,
        qb.dot(b, m), qb.matmul(qb.tanh(b), qb.exp(m * 0.1)) * 0.5),
    "mixed_dtypes": _mixed,
    "pytree_output": lambda a, b, r, c, m, p: {
        "z": qb.sum(b), "pair": (b + 1.0, [r, 3.5, None]), "n": None, "k": 7, "flag": True,
        "list": [qb.sin(c), {"deep": qb.mean(b, axis=0)}]},
}


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS) + ["closure_constants"])
def test_jit_matches_eager_bitwise(name, dt):
    fn = _closure_factory(dt) if name == "closure_constants" else PROGRAMS[name]
    args = make_inputs(dt)
    with np.errstate(all="ignore"):
        expected = fn(*args)
    jf = qb.jit(fn)
    assert_tree_bitwise(jf(*args), expected)
    assert_tree_bitwise(jf(*args), expected)   # the cached (fast) path
    assert jf.trace_count == 1
    compiled = jf.lower(*args).compile()
    assert_tree_bitwise(compiled(*args), expected)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_pytree_input_and_output(dt):
    a, b, r, c, m, p = make_inputs(dt)

    def fn(params, xs, scale):
        w, bias = params["w"], params["b"]
        h = qb.tanh(xs[0] @ w + bias) * scale
        return {"h": h, "extra": (xs[1] * 2.0, scale), "cnt": len(xs)}

    params = {"w": m, "b": qb.array(np.linspace(-1, 1, 5).astype(NP[dt]))}
    jf = qb.jit(fn)
    assert_tree_bitwise(jf(params, [b, r], 0.5), fn(params, [b, r], 0.5))
    assert_tree_bitwise(jf(params, [b, c], 0.5), fn(params, [b, c], 0.5))
    assert jf.trace_count == 2
    out = jf(params, [b, r], 0.5)
    assert isinstance(out["extra"][1], float) and out["extra"][1] == 0.5 and out["cnt"] == 2
    assert jf.trace_count == 2


def test_closure_constant_values_are_captured_at_trace_time():
    K = qb.array([1.0, 2.0, 3.0])
    f = qb.jit(lambda x: x * K)
    x = qb.array([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(f(x).numpy(), [1.0, 2.0, 3.0])
    assert "constant" in f.lower(x).as_text()


def test_weak_scalar_keeps_float32():
    f = qb.jit(lambda x: 0.5 * x + 1.0)
    out = f(qb.array([1.0, 2.0], dtype=qb.float32))
    assert out.dtype == qb.float32
    np.testing.assert_array_equal(out.numpy(), np.array([1.5, 2.0], np.float32))


def test_jit_promotion_error_matches_eager():
    f = qb.jit(lambda x, y: x + y)
    x32, x64 = qb.ones((2,), dtype=qb.float32), qb.ones((2,), dtype=qb.float64)
    with pytest.raises(ValueError, match="astype"):
        f(x32, x64)
    assert_bitwise(f(x32, x32), x32 + x32)


# ---------------------------------------------------------------------------------------
# Caching semantics

def _x(n=3, dt=qb.float32):
    return qb.array(np.arange(n, dtype=np.float64) + 1.0, dtype=dt)


def test_same_signature_reuses_trace():
    calls = []

    def fn(x):
        calls.append(1)
        return x * 2.0

    f = qb.jit(fn)
    for k in range(5):
        out = f(_x() + float(k))
        np.testing.assert_array_equal(out.numpy(), (np.arange(3.0) + 1 + k).astype(np.float32) * 2)
    assert f.trace_count == 1 and len(calls) == 1


def test_new_shape_dtype_structure_retrace():
    f = qb.jit(lambda x: qb.tree.map(lambda v: v + 1.0, x))
    f(_x(3))
    assert f.trace_count == 1
    f(_x(4))
    assert f.trace_count == 2
    f(_x(3, qb.float64))
    assert f.trace_count == 3
    f(_x(3).reshape(1, 3))
    assert f.trace_count == 4
    f((_x(3),))
    assert f.trace_count == 5
    f([_x(3)])
    assert f.trace_count == 6
    f({"a": _x(3)})
    assert f.trace_count == 7
    f({"b": _x(3)})
    assert f.trace_count == 8
    out = f({"a": _x(3)})
    assert f.trace_count == 8
    np.testing.assert_array_equal(out["a"].numpy(), np.array([2, 3, 4], np.float32))
    f(_x(3))
    f(_x(4))
    assert f.trace_count == 8


def test_python_scalars_are_static_keyed_by_type_and_value():
    f = qb.jit(lambda x, s: x * s)
    x = _x()
    f(x, 1)
    f(x, 1.0)
    f(x, True)
    assert f.trace_count == 3
    f(x, 1)
    f(x, 1.0)
    f(x, True)
    assert f.trace_count == 3
    f(x, 2.0)
    assert f.trace_count == 4
    out1 = f(x, float("nan"))
    out2 = f(x, float("nan"))
    assert f.trace_count == 5
    assert np.isnan(out1.numpy()).all() and np.isnan(out2.numpy()).all()
    f(x, 0.0)
    f(x, -0.0)
    assert f.trace_count == 7   # -0.0 and 0.0 are different static values
    assert np.signbit(f(x, -0.0).numpy()).all() and not np.signbit(f(x, 0.0).numpy()).any()


def test_python_scalar_is_baked_into_the_program():
    f = qb.jit(lambda x, s: x + s)
    x = _x()
    np.testing.assert_array_equal(f(x, 1.5).numpy(), np.array([2.5, 3.5, 4.5], np.float32))
    np.testing.assert_array_equal(f(x, 2.5).numpy(), np.array([3.5, 4.5, 5.5], np.float32))
    assert f.trace_count == 2


def test_python_scalar_branches_are_allowed():
    f = qb.jit(lambda x, flag: x * 2.0 if flag else x - 1.0)
    x = _x()
    np.testing.assert_array_equal(f(x, True).numpy(), np.array([2, 4, 6], np.float32))
    np.testing.assert_array_equal(f(x, False).numpy(), np.array([0, 1, 2], np.float32))


def test_static_argnums():
    f = qb.jit(lambda x, n, mode: x * n if mode == "mul" else x + n, static_argnums=(1, 2))
    x = _x()
    np.testing.assert_array_equal(f(x, 3, "mul").numpy(), np.array([3, 6, 9], np.float32))
    np.testing.assert_array_equal(f(x, 3, "add").numpy(), np.array([4, 5, 6], np.float32))
    f(x, 3, "mul")
    assert f.trace_count == 2
    f(x, 4, "mul")
    assert f.trace_count == 3


def test_static_argnums_negative():
    f = qb.jit(lambda x, shape: qb.reshape(x, shape), static_argnums=-1)
    x = qb.array(np.arange(6.0))
    assert f(x, (2, 3)).shape == (2, 3)
    assert f(x, (3, 2)).shape == (3, 2)
    f(x, (2, 3))
    assert f.trace_count == 2


def test_static_argnums_unhashable_is_type_error():
    f = qb.jit(lambda x, shape: qb.reshape(x, shape), static_argnums=1)
    with pytest.raises(TypeError, match="hashable"):
        f(qb.array(np.arange(6.0)), [2, 3])
    assert f(qb.array(np.arange(6.0)), (2, 3)).shape == (2, 3)


@pytest.mark.parametrize("argnums", [2, -3, (0, 5)])
def test_static_argnums_out_of_range(argnums):
    with pytest.raises(ValueError, match="static_argnums"):
        qb.jit(lambda x, y: x + y, static_argnums=argnums)


def test_static_argnames():
    f = qb.jit(lambda x, *, power=2, label=None: x ** power, static_argnames=("power", "label"))
    x = _x()
    np.testing.assert_array_equal(f(x, power=3).numpy(), np.array([1, 8, 27], np.float32))
    f(x, power=3)
    assert f.trace_count == 1
    np.testing.assert_array_equal(f(x, power=2).numpy(), np.array([1, 4, 9], np.float32))
    assert f.trace_count == 2
    with pytest.raises(TypeError, match="hashable"):
        f(x, power=2, label=["x"])
    g = qb.jit(lambda x, mode="a": x * 2.0 if mode == "a" else x * 3.0, static_argnames="mode")
    np.testing.assert_array_equal(g(x, mode="b").numpy(), np.array([3, 6, 9], np.float32))
    np.testing.assert_array_equal(g(x, mode="a").numpy(), np.array([2, 4, 6], np.float32))


def test_keyword_arguments():
    f = qb.jit(lambda x, y, scale=1.0: (x - y) * scale)
    x, y = _x(), _x() * 0.5
    expected = ((np.arange(3.0) + 1) * 0.5 * 2.0).astype(np.float32)
    np.testing.assert_array_equal(f(x, y=y, scale=2.0).numpy(), expected)
    np.testing.assert_array_equal(f(x=x, y=y, scale=2.0).numpy(), expected)
    n = f.trace_count
    f(x, y=y * 3.0, scale=2.0)
    assert f.trace_count == n
    np.testing.assert_array_equal(f(y=y, x=x, scale=2.0).numpy(), expected)   # kwargs order is irrelevant
    assert f.trace_count == n        # same as the earlier f(x=x, y=y, scale=2.0)


def test_kwarg_order_does_not_retrace():
    f = qb.jit(lambda x, y: x - y)
    x, y = _x(), _x() * 0.5
    f(x=x, y=y)
    f(y=y, x=x)
    assert f.trace_count == 1
    np.testing.assert_array_equal(f(y=y, x=x).numpy(), (x - y).numpy())


def test_numpy_argument_works_like_qb_array():
    f = qb.jit(lambda a: qb.sin(a) * 2.0)
    xn = np.linspace(-1, 1, 7)
    out = f(xn)
    assert isinstance(out, qb.Array) and out.dtype == qb.float64
    assert_bitwise(out, qb.sin(qb.array(xn)) * 2.0)
    f(qb.array(xn))
    assert f.trace_count == 1
    out32 = f(xn.astype(np.float32))
    assert out32.dtype == qb.float32 and f.trace_count == 2
    assert_bitwise(out32, qb.sin(qb.array(xn.astype(np.float32))) * 2.0)
    f(xn + 1.0)
    assert f.trace_count == 2


def test_max_traces_lru_eviction_warns_and_retraces():
    f = qb.jit(lambda x: x * 2.0, max_traces=2)
    a, b, c = (qb.ones((n,), dtype=qb.float32) for n in (1, 2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", qb.RetraceWarning)
        f(a)
        f(b)
    with pytest.warns(qb.RetraceWarning):
        f(c)                       # evicts a, the least recently used
    assert f.trace_count == 3
    np.testing.assert_array_equal(f(c).numpy(), np.full(3, 2.0, np.float32))
    assert f.trace_count == 3
    with pytest.warns(qb.RetraceWarning):
        out = f(a)                 # a was evicted: traced again (evicting b)
    assert f.trace_count == 4
    np.testing.assert_array_equal(out.numpy(), np.full(1, 2.0, np.float32))


def test_max_traces_lru_respects_recent_use():
    f = qb.jit(lambda x: x * 2.0, max_traces=2)
    a, b, c = (qb.ones((n,), dtype=qb.float32) for n in (1, 2, 3))
    f(a)
    f(b)
    f(a)                           # a is now the most recently used
    with pytest.warns(qb.RetraceWarning):
        f(c)                       # must evict b
    with warnings.catch_warnings():
        warnings.simplefilter("error", qb.RetraceWarning)
        f(a)
    assert f.trace_count == 3


def test_max_traces_lru_respects_recent_use_slow_path():
    # Keyword calls bypass the fast path; there the LRU order is maintained.
    f = qb.jit(lambda x: x * 2.0, max_traces=2)
    a, b, c = (qb.ones((n,), dtype=qb.float32) for n in (1, 2, 3))
    f(x=a)
    f(x=b)
    f(x=a)
    with pytest.warns(qb.RetraceWarning):
        f(x=c)
    with warnings.catch_warnings():
        warnings.simplefilter("error", qb.RetraceWarning)
        f(x=a)
    assert f.trace_count == 3
    with pytest.warns(qb.RetraceWarning):
        f(x=b)
    assert f.trace_count == 4


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_max_traces_must_be_positive_int(bad):
    with pytest.raises(ValueError):
        qb.jit(lambda x: x, max_traces=bad)


def test_jit_decorator_forms():
    @qb.jit
    def f(x):
        return x + 1.0

    @qb.jit(static_argnums=1)
    def g(x, n):
        return x * n

    assert f.__name__ == "f"
    np.testing.assert_array_equal(f(_x()).numpy(), np.array([2, 3, 4], np.float32))
    np.testing.assert_array_equal(g(_x(), 2).numpy(), np.array([2, 4, 6], np.float32))
    with pytest.raises(TypeError):
        qb.jit(3)


# ---------------------------------------------------------------------------------------
# Devices

def test_device_cpu():
    f = qb.jit(lambda x: qb.exp(x), device="cpu")
    assert_bitwise(f(_x()), qb.exp(_x()))


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3", "mlx"])
def test_unbuilt_device_raises_unsupported(device):
    if device.startswith("cuda") and any(d.startswith("cuda") for d in qb.devices()):
        pytest.skip("this machine has a CUDA device")
    if device == "mlx" and "mlx" in qb.devices():
        pytest.skip("this build has the MLX backend")
    with pytest.raises(qb.UnsupportedOperationError) as info:
        qb.jit(lambda x: x, device=device)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, NotImplementedError)
    assert isinstance(err, qb.QuablaError)
    assert err.device == device


def test_device_put_mlx_without_the_backend():
    if "mlx" in qb.devices():
        pytest.skip("this build has the MLX backend")
    with pytest.raises(qb.UnsupportedOperationError, match="no MLX backend.*mlx\\[cpu\\]") as info:
        qb.device_put(qb.ones(3), "mlx")
    assert info.value.device == "mlx" and info.value.op == "device_put"
    with pytest.raises(RuntimeError, match="no MLX backend"):
        qb.devices("mlx")


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "", 0])
def test_unknown_device_is_value_error(device):
    with pytest.raises(ValueError) as info:
        qb.jit(lambda x: x, device=device)
    assert not isinstance(info.value, qb.UnsupportedOperationError)


# ---------------------------------------------------------------------------------------
# Tracer misuse

def _while_misuse(x):
    while x[0] < 10.0:
        x = x + 1.0
    return x


MISUSE = {
    "if": lambda x: x if qb.sum(x) > 0 else -x,
    "while": lambda x: _while_misuse(x),
    "float": lambda x: float(x[0]),
    "int": lambda x: int(x[0]),
    "item": lambda x: x[0].item(),
    "tolist": lambda x: x.tolist(),
    "numpy": lambda x: x.numpy(),
    "np.asarray": lambda x: np.asarray(x),
    "np.array": lambda x: np.array(x) + 1.0,
}


@pytest.mark.parametrize("name", sorted(MISUSE))
def test_tracer_misuse_raises_tracer_error(name):
    f = qb.jit(MISUSE[name])
    x = _x()
    with pytest.raises(qb.TracerError) as info:
        f(x)
    assert isinstance(info.value, TypeError) and isinstance(info.value, qb.QuablaError)
    assert f.trace_count == 0


@pytest.mark.parametrize("name", [n for n in sorted(MISUSE)])
def test_tracer_misuse_message_points_to_where_and_cond(name):
    with pytest.raises(qb.TracerError) as info:
        qb.jit(MISUSE[name])(_x())
    msg = str(info.value)
    assert "qb.where" in msg and "qb.cond" in msg, msg


@pytest.mark.parametrize("name", sorted(MISUSE))
def test_jitted_function_still_works_after_tracer_error(name):
    bad = MISUSE[name]
    state = {"bad": True}

    def fn(x):
        if state["bad"]:
            return bad(x)
        return x * 3.0

    f = qb.jit(fn)
    with pytest.raises(qb.TracerError):
        f(_x())
    state["bad"] = False
    assert_bitwise(f(_x()), _x() * 3.0)
    assert f.trace_count == 1
    # eager work is unaffected too
    assert_bitwise(qb.sin(_x()), qb.sin(_x()))


def test_mixed_up_tracer_error_inside_pytree_output_function():
    f = qb.jit(lambda x: {"a": x, "v": float(qb.sum(x))})
    with pytest.raises(qb.TracerError):
        f(_x())


def _escape():
    box = []

    @qb.jit
    def f(x):
        box.append(x * 2.0)
        return x + 1.0

    out = f(_x())
    np.testing.assert_array_equal(out.numpy(), np.array([2, 3, 4], np.float32))
    return f, box[0]


ESCAPED_USES = {
    "add": lambda t: t + 1.0,
    "sin": lambda t: qb.sin(t),
    "sum": lambda t: qb.sum(t),
    "index": lambda t: t[0],
    "with_eager": lambda t: t * _x(),
    "reshape": lambda t: t.reshape(3, 1),
    "in_new_jit": lambda t: qb.jit(lambda y: y * t)(_x()),
    "numpy": lambda t: t.numpy(),
    "float": lambda t: float(t),
    "jit_arg": lambda t: qb.jit(lambda y: y * 2.0)(t),
}


@pytest.mark.parametrize("use", list(ESCAPED_USES.values()), ids=list(ESCAPED_USES))
def test_escaped_tracer_raises(use):
    f, t = _escape()
    with pytest.raises(qb.TracerError, match="escaped"):
        use(t)
    assert_bitwise(f(_x()), _x() + 1.0)
    assert f.trace_count == 1


def test_escaped_tracer_shape_metadata_is_available():
    _, t = _escape()
    assert t.shape == (3,) and t.dtype == qb.float32


def test_repr_of_tracer_inside_jit():
    seen = []

    @qb.jit
    def f(x):
        seen.append(repr(x))
        return x

    f(_x())
    assert "3" in seen[0] and ("float32" in seen[0] or "f32" in seen[0])


# ---------------------------------------------------------------------------------------
# Nested jit

def test_nested_jit_is_inlined():
    g = qb.jit(lambda x: qb.sin(x) * 2.0)

    @qb.jit
    def f(x):
        return g(x) + g(x + 1.0)

    x = _x()
    expected = qb.sin(x) * 2.0 + qb.sin(x + 1.0) * 2.0
    assert_bitwise(f(x), expected)
    assert g.trace_count == 0 and f.trace_count == 1
    f(_x(5))
    assert g.trace_count == 0 and f.trace_count == 2
    assert_bitwise(g(x), qb.sin(x) * 2.0)
    assert g.trace_count == 1
    text = f.lower(x).as_text()
    assert "call" not in text and text.count("sin(") == 2


def test_nested_jit_with_static_args_inlined():
    g = qb.jit(lambda x, n: x * n, static_argnums=1)
    f = qb.jit(lambda x: g(x, 3) + g(x, 4))
    assert_bitwise(f(_x()), _x() * 3 + _x() * 4)
    assert g.trace_count == 0


def test_outer_tracer_used_in_nested_jit_closure():
    @qb.jit
    def f(x):
        inner = qb.jit(lambda y: y * x)   # closes over the outer tracer; inlined
        return inner(x + 1.0)

    assert_bitwise(f(_x()), (_x() + 1.0) * _x())


# ---------------------------------------------------------------------------------------
# lower / compile

def test_lower_with_shape_dtype():
    f = qb.jit(lambda x: qb.tanh(x) * 2.0 + qb.exp(x))
    lowered = f.lower(qb.ShapeDtype((4,), qb.float32))
    text = lowered.as_text()
    for op in ("tanh", "exp", "mul", "add"):
        assert op in text, text
    assert "f32[4]" in text
    assert f.trace_count == 1
    compiled = lowered.compile()
    ctext = compiled.as_text()
    assert "tanh" in ctext and "exp" in ctext
    x = qb.array(np.linspace(-2, 2, 4), dtype=qb.float32)
    assert_bitwise(compiled(x), qb.tanh(x) * 2.0 + qb.exp(x))
    # lower() shares the cache with calls
    assert_bitwise(f(x), qb.tanh(x) * 2.0 + qb.exp(x))
    assert f.trace_count == 1
    stats = compiled.stats()
    assert set(stats) >= {"kernels", "buffers", "peak_bytes", "nodes"}


def test_shape_dtype():
    s = qb.ShapeDtype((2, 3), qb.float64)
    assert s.shape == (2, 3) and s.dtype == qb.float64
    assert qb.ShapeDtype(5, qb.bool_).shape == (5,)
    f = qb.jit(lambda x: x.T)
    assert "f64[3, 2]" in f.lower(s).as_text()


def test_lower_pytree_and_static():
    f = qb.jit(lambda d, n: {"y": d["a"] * n + d["b"]}, static_argnums=1)
    lo = f.lower({"a": qb.ShapeDtype((2,), qb.float64), "b": qb.ShapeDtype((2,), qb.float64)}, 3)
    a, b = qb.array([1.0, 2.0]), qb.array([0.5, 0.25])
    out = lo.compile()({"a": a, "b": b}, 3)
    assert_bitwise(out["y"], a * 3 + b)


def test_compiled_rejects_wrong_signature():
    compiled = qb.jit(lambda x: x + 1.0).lower(qb.ShapeDtype((4,), qb.float32)).compile()
    with pytest.raises(TypeError):
        compiled(qb.ones((5,), dtype=qb.float32))
    with pytest.raises(TypeError):
        compiled(qb.ones((4,), dtype=qb.float64))


# ---------------------------------------------------------------------------------------
# Compiler passes visible in the compiled program

def _ops(text):
    """Op names of the program text, one per '%n = op(' line."""
    return re.findall(r"%\d+ = ([a-z_]+)\(", text)


def _texts(fn, *sd):
    lo = qb.jit(fn).lower(*sd)
    return lo.as_text(), lo.compile().as_text(), lo.compile()


S4 = qb.ShapeDtype((4,), qb.float32)


def test_cse_computes_tanh_once():
    traced, compiled, prog = _texts(lambda x: qb.tanh(x) + qb.tanh(x), S4)
    assert _ops(traced).count("tanh") == 2
    assert _ops(compiled).count("tanh") == 1, compiled
    x = qb.array([-1.0, 0.0, 0.5, 3.0], dtype=qb.float32)
    assert_bitwise(prog(x), qb.tanh(x) + qb.tanh(x))


def test_cse_across_outputs():
    traced, compiled, prog = _texts(lambda x: (x * 2.0, x * 2.0, qb.sin(x) * qb.sin(x)), S4)
    ops = _ops(compiled)
    assert ops.count("mul") == 2 and ops.count("sin") == 1, compiled


def test_cse_treats_add_and_mul_as_commutative_but_not_sub_or_max():
    def fn(x, y):
        return (x * y + y * x) - (x + y) * (y + x) + (x - y) * (y - x) + qb.maximum(x, y) * qb.maximum(y, x)

    traced, compiled, prog = _texts(fn, S4, S4)
    ops = _ops(compiled)
    assert ops.count("mul") == 4 and ops.count("sub") == 3 and ops.count("max") == 2, compiled
    x = qb.array([-1.0, 0.0, 0.5, 3.0], dtype=qb.float32)
    y = qb.array([2.0, -0.0, 0.5, -3.0], dtype=qb.float32)
    assert_bitwise(prog(x, y), fn(x, y))


def test_dead_code_eliminated():
    def fn(x):
        unused = qb.exp(x) * 3.0
        qb.cosh(unused)
        return qb.sin(x)

    traced, compiled, _ = _texts(fn, S4)
    assert "exp" in _ops(traced) and "cosh" in _ops(traced)
    assert _ops(compiled) == ["sin"], compiled


def test_constant_folding():
    def fn(x):
        k = qb.sin(qb.zeros_like(x) + 1.0) * 2.0   # constants only
        return x + k

    traced, compiled, prog = _texts(fn, S4)
    assert sorted(_ops(compiled)) == ["add", "constant"], compiled
    x = qb.array([1.0, 2.0, 3.0, 4.0], dtype=qb.float32)
    assert_bitwise(prog(x), fn(x))


def test_constant_folding_of_weak_scalar_conversion():
    traced, compiled, prog = _texts(lambda x: x * 2.0 + 3.0, S4)
    assert "convert" in _ops(traced) and "broadcast_in_dim" in _ops(traced)
    ops = _ops(compiled)
    # The weak scalars' conversions fold to float32 scalars; their broadcasts stay (folding
    # never makes a literal larger than its operands: programs do not grow with shapes).
    assert "convert" not in ops, compiled
    assert ops.count("constant") == 2 and ops.count("mul") == 1 and ops.count("add") == 1
    x = qb.array([1.0, 2.0, 3.0, 4.0], dtype=qb.float32)
    assert_bitwise(prog(x), x * 2.0 + 3.0)


def test_identity_reshape_and_astype_dropped():
    def fn(x):
        return qb.exp(x.astype(qb.float32).reshape(4)) + qb.reshape(x, (4,)) + qb.broadcast_to(x, (4,))

    traced, compiled, prog = _texts(fn, S4)
    ops = _ops(compiled)
    assert "reshape" not in ops and "convert" not in ops and "broadcast_in_dim" not in ops, compiled
    x = qb.array([1.0, 2.0, 3.0, 4.0], dtype=qb.float32)
    assert_bitwise(prog(x), fn(x))


def test_reshape_chain_merged():
    traced, compiled, prog = _texts(lambda x: x.reshape(2, 2).reshape(1, 4).reshape(4, 1) * 2.0, S4)
    assert _ops(traced).count("reshape") == 3
    assert _ops(compiled).count("reshape") == 1, compiled
    x = qb.array([1.0, 2.0, 3.0, 4.0], dtype=qb.float32)
    assert_bitwise(prog(x), x.reshape(4, 1) * 2.0)


def test_reshape_chain_to_identity_dropped():
    traced, compiled, prog = _texts(lambda x: qb.reshape(qb.reshape(x, (2, 2)), (4,)) + 1.0, S4)
    assert _ops(traced).count("reshape") == 2
    assert "reshape" not in _ops(compiled), compiled
    _, compiled2, _ = _texts(lambda x: x.reshape(3, 2).reshape(6).reshape(2, 3) * 2.0, qb.ShapeDtype((2, 3), qb.float32))
    assert "reshape" not in _ops(compiled2), compiled2


def test_reshape_chain_to_identity_still_correct():
    _, _, prog = _texts(lambda x: qb.reshape(qb.reshape(x, (2, 2)), (4,)) + 1.0, S4)
    x = qb.array([1.0, 2.0, 3.0, 4.0], dtype=qb.float32)
    assert_bitwise(prog(x), x + 1.0)


def test_stats_keys_and_types():
    _, _, prog = _texts(lambda x: qb.sum(qb.exp(x)), S4)
    st = prog.stats()
    for k in ("kernels", "buffers", "peak_bytes", "nodes"):
        assert isinstance(st[k], int) and st[k] >= 0
    assert st["nodes"] == len(prog.as_text().strip().splitlines()) - 3 + 1
