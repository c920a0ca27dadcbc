"""The scalar form of small loop bodies (tier 0 of the loop compiler): bitwise the results
of the kernel plan (QUABLA_LOOP_SCALAR=0) on every kind of op, in f32 and f64, on loops
with pytree carries, xs/ys, nested loops, while loops and their derivatives."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import quabla as qb

SPECIAL = [0.0, -0.0, 0.3, -1.7, 2.5, 1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan, 0.999, 3e4]


def _both(make, *args):
    """(scalar result, kernel-plan result, stats of the scalar program) of qb.jit(make())."""
    old = os.environ.pop("QUABLA_LOOP_SCALAR", None)
    try:
        f = qb.jit(make())
        fast = f(*args)
        stats = f.lower(*args).compile().stats()
        os.environ["QUABLA_LOOP_SCALAR"] = "0"
        g = qb.jit(make())
        slow = g(*args)
        assert g.lower(*args).compile().stats()["scalar_loops"] == 0
    finally:
        if old is None:
            os.environ.pop("QUABLA_LOOP_SCALAR", None)
        else:
            os.environ["QUABLA_LOOP_SCALAR"] = old
    return fast, slow, stats


def _assert_bitwise(a, b):
    la, lb = qb.tree.leaves(a), qb.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes(), (x, y)


UNARY = ["sin", "cos", "tan", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "tanh", "sinh",
         "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "abs", "negative", "sign", "floor",
         "ceil", "round", "exp2", "isnan", "isfinite", "logical_not"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "arctan2", "hypot", "fmod",
          "logaddexp", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal"]


def _unary(name):
    if name == "logical_not":
        return lambda x: qb.logical_not(x > 0)
    return getattr(qb, name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_are_bitwise_the_kernels(name, dtype):
    xs = qb.array(np.array(SPECIAL * 2).reshape(-1, 2), dtype=dtype)
    op = _unary(name)

    def make():
        return lambda xs: qb.scan(lambda c, x: (c, op(x)), qb.zeros((), dtype=dtype), xs)[1]

    fast, slow, stats = _both(make, xs)
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_are_bitwise_the_kernels(name, dtype):
    a = np.array(SPECIAL)
    pairs = np.stack(np.meshgrid(a, a), -1).reshape(-1, 2)
    xs = qb.array(pairs, dtype=dtype)
    op = getattr(qb, name)

    def make():
        return lambda xs: qb.scan(lambda c, x: (c, op(x[0], x[1])), qb.zeros((), dtype=dtype), xs)[1]

    fast, slow, stats = _both(make, xs)
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)


def test_integer_bool_select_convert_reduce_matmul_and_indexing():
    xs = qb.array(np.arange(-12, 12).reshape(6, 4), dtype=qb.int32)
    tab = qb.array(np.linspace(-2, 2, 7))
    m = qb.array(np.random.default_rng(0).normal(size=(3, 3)))

    def make():
        def body(c, x):
            i64 = x.astype(qb.int64)
            y = (x * 3 - 7) // 2, x % 3, qb.maximum(i64, 2) * i64, x ^ 5, x << 2
            f = x.astype(qb.float32) * 0.5
            sel = qb.where(x > 0, f, -f)
            red = (qb.sum(f), qb.prod(f[:3]), qb.max(x), qb.cumsum(f))
            v = tab[qb.clip(x[0] + 6, 0, 6)] + qb.take(tab, qb.abs(x) % 7).sum()
            mm = (m @ c) * 0.5 + qb.stack([v, v, v])
            return mm, (y, sel, red, (x > 1) & (x < 4), qb.float64(f[1]))
        return lambda xs: qb.scan(body, qb.ones(3), xs)

    fast, slow, stats = _both(make, xs)
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)


def _lorenz_step(s, p):
    x, y, z = s[0], s[1], s[2]
    return s + 0.01 * qb.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])


def test_pytree_carries_fori_while_and_nested_loops():
    p = qb.array([10.0, 28.0, 8.0 / 3.0])
    s0 = {"s": qb.array([1.0, 1.0, 1.0]), "n": qb.asarray(0.0)}

    def make():
        def inner(i, c):
            return {"s": _lorenz_step(c["s"], p), "n": c["n"] + qb.sin(c["s"][0])}

        def outer(c):
            c = qb.fori_loop(0, 7, inner, c)
            return qb.while_loop(lambda c: c["n"] < 50.0, lambda c: {"s": c["s"] * 0.99, "n": c["n"] + 1.5}, c)

        return lambda c: qb.fori_loop(0, 30, lambda i, c: outer(c), c)

    fast, slow, stats = _both(make, s0)
    assert stats["scalar_loops"] >= 1
    _assert_bitwise(fast, slow)


def test_derivatives_through_scalar_loops():
    p = qb.array([10.0, 28.0, 8.0 / 3.0])
    s = qb.array([1.0, 1.0, 1.0])

    def loss(p, s):
        return qb.sum(qb.fori_loop(0, 300, lambda i, s: _lorenz_step(s, p), s) ** 2)

    fast, slow, stats = _both(lambda: qb.grad(loss), p, s)
    assert stats["scalar_loops"] >= 2
    _assert_bitwise(fast, slow)
    fwd, slow_fwd, _ = _both(lambda: qb.jacfwd(lambda p: qb.fori_loop(0, 300, lambda i, s: _lorenz_step(s, p), s)), p)
    _assert_bitwise(fwd, slow_fwd)
    # Against float64 central differences.
    g = np.asarray(fast)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        fd = (float(loss(p + qb.array(e), s)) - float(loss(p - qb.array(e), s))) / 2e-6
        assert g[k] == pytest.approx(fd, rel=1e-6)
    vm, vm_slow, _ = _both(lambda: qb.vmap(lambda s: qb.grad(loss)(p, s)), qb.array(np.random.default_rng(1).normal(size=(4, 3))))
    _assert_bitwise(vm, vm_slow)


def test_large_bodies_keep_the_kernel_plan():
    xs = qb.ones((3, 100))
    f = qb.jit(lambda xs: qb.scan(lambda c, x: (c + x, c * 2), qb.zeros(100), xs))
    f(xs)
    s = f.lower(xs).compile().stats()
    assert s["loops"] == 1 and s["scalar_loops"] == 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=2, max_size=8),
       st.sampled_from(["sin", "exp", "tanh", "log1p", "sqrt", "arctan"]),
       st.sampled_from(["float32", "float64"]))
def test_random_values_bitwise(values, name, dtype):
    with np.errstate(over="ignore"):
        xs = qb.array(np.array(values, dtype=np.float64).astype(dtype).reshape(-1, 1))
    op = getattr(qb, name)

    def make():
        return lambda xs: qb.scan(lambda c, x: (op(c * 0.5 + x), op(x) * c), qb.ones(1, dtype=dtype), xs)

    fast, slow, _ = _both(make, xs)
    _assert_bitwise(fast, slow)


def test_small_state_gradients_keep_a_tape_bitwise_equal_to_checkpoints():
    # T x carry bytes within the budget: the forward scan stores every carry and the
    # backward scan reads them (no nested block scans); forcing checkpoints
    # (QUABLA_SCAN_TAPE_BYTES=0) recomputes them, with bitwise the same gradient.
    p = qb.array([10.0, 28.0, 8.0 / 3.0])
    s = qb.array([1.0, 1.0, 1.0])

    def loss(p):
        return qb.sum(qb.fori_loop(0, 500, lambda i, s: _lorenz_step(s, p), s) ** 2)

    tape = qb.jit(qb.grad(loss))
    g_tape = tape(p)
    text = tape.lower(p).as_text()
    assert text.count("scan(") == 2 and "length=500" in text
    os.environ["QUABLA_SCAN_TAPE_BYTES"] = "0"
    try:
        ck = qb.jit(qb.grad(loss))
        g_ck = ck(p)
        assert ck.lower(p).as_text().count("scan(") > 2
    finally:
        os.environ.pop("QUABLA_SCAN_TAPE_BYTES", None)
    _assert_bitwise(g_tape, g_ck)
