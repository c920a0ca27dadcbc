"""The loop compiler: small loop bodies as scalar code, interpreted (tier 0,
QUABLA_LOOP_JIT=0) or compiled to native code (tier 1, QUABLA_LOOP_JIT=sync), give
bitwise the results of the kernel plan (QUABLA_LOOP_SCALAR=0) on every kind of op, in f32
and f64, on loops with pytree carries, xs/ys, nested loops, while loops and their
derivatives (NaN payloads aside). Also the on-disk cache of compiled loops."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import quabla as qb

SPECIAL = [0.0, -0.0, 0.3, -1.7, 2.5, 1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan, 0.999, 3e4]


_MODES = {  # environment per execution path
    "tier1": {"QUABLA_LOOP_JIT": "sync"},                # native code, built at the first call
    "tier0": {"QUABLA_LOOP_JIT": "0"},                   # the scalar interpreter
    "kernels": {"QUABLA_LOOP_SCALAR": "0"},              # the kernel plan
}


def _run_mode(mode, make, *args):
    keys = ("QUABLA_LOOP_JIT", "QUABLA_LOOP_SCALAR")
    old = {k: os.environ.pop(k, None) for k in keys}
    os.environ.update(_MODES[mode])
    try:
        f = qb.jit(make())
        out = f(*args)
        return out, f.lower(*args).compile().stats()
    finally:
        for k, v in old.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v


def _both(make, *args):
    """(native result, kernel-plan result, stats of the scalar program) of qb.jit(make());
    the interpreter's result is checked bitwise against the native one here."""
    fast, stats = _run_mode("tier1", make, *args)
    interp, _ = _run_mode("tier0", make, *args)
    slow, slow_stats = _run_mode("kernels", make, *args)
    assert slow_stats["scalar_loops"] == 0
    _assert_bitwise(fast, interp)
    return fast, slow, stats


def _assert_bitwise(a, b):
    la, lb = qb.tree.leaves(a), qb.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        if x.dtype.kind == "f":
            # NaN payloads and signs are not preserved (a compiler may commute a * b);
            # every other value must match bit for bit, -0.0 included.
            nx, ny = np.isnan(x), np.isnan(y)
            assert (nx == ny).all(), (x, y)
            x, y = np.where(nx, 0, x), np.where(ny, 0, y)
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


# ---------------------------------------------------------------------------------------
# The on-disk cache of compiled loops (each case in fresh processes).

_SCRIPT = """
import numpy as np, quabla as qb
p = qb.array([10.0, 28.0, 8.0 / 3.0])
def step(i, s):
    x, y, z = s[0], s[1], s[2]
    return s + 0.01 * qb.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])
print(np.asarray(qb.jit(lambda s: qb.fori_loop(0, 1000, step, s))(qb.array([1.0, 1.0, 1.0]))).tobytes().hex())
"""


def _spawn(**env):
    full = dict(os.environ)
    full["QUABLA_LOOP_JIT"] = "sync"
    full.update(env)
    return subprocess.Popen([sys.executable, "-c", _SCRIPT], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return out.strip(), err


@pytest.fixture(scope="module")
def reference():
    return _result(_spawn(QUABLA_LOOP_JIT="0"))[0]


def _entries(d):
    return sorted(p.name for p in (d / "loops").iterdir()) if (d / "loops").exists() else []


def test_subprocess_cache_builds_once_then_reuses(tmp_path, reference):
    out, err = _result(_spawn(QUABLA_CACHE_DIR=str(tmp_path), QUABLA_LOOP_JIT_DEBUG="1"))
    assert out == reference and f"tier 1 loaded {tmp_path}" in err
    entries = _entries(tmp_path)
    assert len(entries) == 1 and entries[0].endswith(".so")  # no temporaries left behind
    so = tmp_path / "loops" / entries[0]
    stamp = so.stat().st_mtime_ns
    assert _result(_spawn(QUABLA_CACHE_DIR=str(tmp_path)))[0] == reference
    assert _entries(tmp_path) == entries and so.stat().st_mtime_ns == stamp


def test_subprocess_cache_rebuilds_a_corrupt_entry(tmp_path, reference):
    _result(_spawn(QUABLA_CACHE_DIR=str(tmp_path)))
    so = tmp_path / "loops" / _entries(tmp_path)[0]
    so.write_bytes(b"not a shared object")
    assert _result(_spawn(QUABLA_CACHE_DIR=str(tmp_path)))[0] == reference
    assert so.read_bytes()[:4] == b"\x7fELF"


def test_subprocess_cache_concurrent_writers(tmp_path, reference):
    procs = [_spawn(QUABLA_CACHE_DIR=str(tmp_path)) for _ in range(3)]
    assert [_result(p)[0] for p in procs] == [reference] * 3
    entries = _entries(tmp_path)
    assert len(entries) == 1 and entries[0].endswith(".so")


def test_subprocess_cache_unwritable_falls_back_to_a_private_directory(tmp_path, reference):
    # A cache path under a regular file can never be created (this holds for root too);
    # a read-only directory is the other case, where permissions apply.
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out, err = _result(_spawn(QUABLA_CACHE_DIR=str(blocker / "cache"), QUABLA_LOOP_JIT_DEBUG="1"))
    assert out == reference and "tier 1 loaded" in err and str(blocker) not in err
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        (tmp_path / "ro" / "loops").mkdir(parents=True)
        (tmp_path / "ro" / "loops").chmod(0o555)
        try:
            out, err = _result(_spawn(QUABLA_CACHE_DIR=str(tmp_path / "ro"), QUABLA_LOOP_JIT_DEBUG="1"))
            assert out == reference and "tier 1 loaded" in err
            assert _entries(tmp_path / "ro") == []
        finally:
            (tmp_path / "ro" / "loops").chmod(0o755)


def test_subprocess_cache_without_a_compiler_loops_run_on_tier_0(tmp_path, reference):
    out, err = _result(_spawn(QUABLA_CACHE_DIR=str(tmp_path), QUABLA_CC=str(tmp_path / "no-such-cc"),
                              QUABLA_LOOP_JIT_DEBUG="1"))
    assert out == reference
    assert "tier 1 off: no working C compiler" in err
    assert _entries(tmp_path) == []


def test_while_loops_on_every_tier():
    def make():
        return lambda x: qb.while_loop(lambda c: (c[1] < 500.0) & qb.all(c[0] > -10.0),
                                       lambda c: (qb.sin(c[0]) * 0.9 + qb.sqrt(c[1] + 1.0) * 1e-3, c[1] + 1.0),
                                       (x, qb.asarray(0.0)))

    fast, slow, stats = _both(make, qb.array([0.3, -0.7]))
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)
    assert float(fast[1]) == 500.0


def test_bodies_mixing_small_and_large_values():
    # A 200-element state updated by kernels beside scalar bookkeeping: the large values
    # live in scratch buffers, their ops run their kernels, the small ones are scalar code.
    def make():
        def body(c, x):
            big, t, n = c
            dt = 0.01 * qb.exp(-t) + x * 1e-3
            big = big + dt * qb.sin(big)          # large
            m = qb.max(qb.abs(big))               # large -> small
            n = n + qb.where(m > 1.5, 1.0, 0.0)   # small
            return (big, t + dt, n), (m, big[:3] * t)
        return lambda c, xs: qb.scan(body, c, xs)

    c = (qb.array(np.linspace(-1.0, 1.0, 200)), qb.asarray(0.0), qb.asarray(0.0))
    xs = qb.array(np.linspace(0.0, 1.0, 300))
    fast, slow, stats = _both(make, c, xs)
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)

    def make_while():
        def body(c):
            v, i, a = c
            a = a * 0.5 + qb.sin(i) * qb.cos(a) - qb.sqrt(i + 1.0) * 1e-2
            return qb.tanh(v * 1.01 + a), i + 1.0, a

        return lambda v: qb.while_loop(lambda c: c[1] < 40.0, body, (v, qb.asarray(0.0), qb.asarray(0.2)))

    fast, slow, stats = _both(make_while, qb.array(np.linspace(-2.0, 2.0, 100)))
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)


def test_kernel_run_ops_and_renames_on_a_matrix_state():
    # Ops that run their kernels from the scalar code (reductions over axes, cumsum, sort,
    # searchsorted, scatter, gather, dynamic slices) and the renames on 2-D values
    # (transpose, reverse, concat along axis 1, broadcasts), f32 and f64.
    for dtype in ("float32", "float64"):
        m0 = qb.array(np.linspace(-1.5, 2.0, 12).reshape(3, 4), dtype=dtype)
        grid = qb.array(np.linspace(-2.0, 2.0, 9), dtype=dtype)

        def make():
            def body(m, i):
                k = (i.astype(qb.int32) % 3)
                r = (qb.sum(m, axis=0), qb.prod(m * 0.5, axis=1), qb.max(m, axis=1), qb.min(m), qb.any(m > 1.0),
                     qb.all(m > -2.0, axis=0), qb.cumsum(m, axis=1), qb.sort(m, axis=1), qb.argsort(m[0]),
                     qb.searchsorted(grid, m[1]), m.at[k, 1].set(7.0), m.at[:, k].add(1.0), m[k],
                     qb.lax.dynamic_slice(m, (k, 0), (1, 2)), m.T[::-1], qb.concatenate([m, m[:, :1]], axis=1),
                     qb.logaddexp(m, 0.3), qb.erf(m), qb.sigmoid(m),
                     qb.floor_divide(m, 0.7), qb.remainder(m, 0.7))
                nm = qb.tanh((m @ m.T) @ m * 0.1 + qb.mean(m, axis=0))
                return nm, r
            return lambda m: qb.scan(body, m, qb.arange(6.0))

        fast, slow, stats = _both(make, m0)
        assert stats["scalar_loops"] == 1
        _assert_bitwise(fast, slow)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_sums_are_adds_in_the_kernels_order(dtype):
    # Sums over trailing axes (pairwise with eight accumulators), over a leading axis (one
    # accumulator per output) and over everything, on values with -0.0, large and tiny
    # magnitudes, lengths around the accumulator count: bitwise the reduce kernel's.
    rng = np.random.default_rng(4)
    vals = rng.normal(size=(4, 21)) * np.array([1e-8, 1.0, 1e8, 3.0])[:, None]
    vals[0, :5] = -0.0
    xs = qb.array(vals.reshape(4, 3, 7), dtype=dtype)

    def make():
        def body(c, x):
            return c + qb.sum(x), (qb.sum(x, axis=1), qb.sum(x, axis=0), qb.sum(x[:, :1], axis=1),
                                   qb.sum(x.reshape(-1)[:17]), qb.sum(x * 0.0 - 0.0, axis=1))
        return lambda xs: qb.scan(body, qb.zeros((), dtype=dtype), xs)
    fast, slow, stats = _both(make, xs)
    assert stats["scalar_loops"] == 1
    for a, b in zip(qb.tree.flatten(fast)[0], qb.tree.flatten(slow)[0]):
        _assert_bitwise(a, b)


def test_scatter_into_a_large_carry_runs_in_place_and_matches_the_kernels():
    """A history written one entry per step into a large carry (an adaptive integrator's
    record of its steps) is updated in place; a scatter into a large const, or into a carry
    that is read again after the scatter, or whose result is another carry, must not be."""
    def make_while():
        def body(c):
            hist, other, i, t = c
            t = t * 0.9 + qb.sin(i)
            seen = hist[qb.minimum(i, 499).astype(qb.int32)]        # read before the scatter
            hist = hist.at[i.astype(qb.int32)].set(t + seen)        # in place (its last use)
            return hist, other, i + 1.0, t
        return lambda h, o: qb.while_loop(lambda c: c[2] < 300.0, body, (h, o, qb.asarray(0.0), qb.asarray(1.0)))

    h0, o0 = qb.array(np.linspace(0.0, 1.0, 500)), qb.array(np.linspace(1.0, 2.0, 500))
    fast, slow, stats = _both(make_while, h0, o0)
    assert stats["scalar_loops"] >= 1
    _assert_bitwise(fast, slow)
    assert np.asarray(fast[0])[299] != np.asarray(h0)[299] and np.asarray(fast[0])[400] == np.asarray(h0)[400]

    def small_work(t, x):  # scalar bookkeeping, so the bodies qualify for the scalar form
        for _ in range(6):
            t = qb.sin(t) * 0.5 + x
        return t

    def make_scan():
        def run(c, xs, table):
            def body(c, x):
                hist, acc, t = c
                out = hist.at[3].set(x)           # hist is a carry read again below: not in place
                acc = acc + out[3] + hist[3]
                k = (x * 20.0).astype(qb.int32)
                swapped = table.at[k].set(acc)    # a scatter into a large const: never in place
                seen = swapped[0] + swapped[5] + swapped[10]  # later steps must see the const unchanged
                return (out, acc + seen, small_work(t, x)), seen
            return qb.scan(body, c, xs)
        return run

    c = (qb.array(np.linspace(-1.0, 1.0, 100)), qb.asarray(0.0), qb.asarray(0.1))
    xs = qb.array(np.linspace(0.0, 1.0, 50))
    fast, slow, stats = _both(make_scan, c, xs, qb.array(np.arange(200.0)))
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)

    def make_swap():
        def body(c, x):
            a, b, t = c
            # the scatter of b gives a's next value: not in place
            return (b.at[0].set(x), a, small_work(t, x)), x
        return lambda c, xs: qb.scan(body, c, xs)

    fast, slow, stats = _both(make_swap, (qb.zeros(100), qb.ones(100), qb.asarray(0.0)), qb.array([5.0, 6.0, 7.0]))
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)
    assert np.asarray(fast[0][0])[0] == 7.0 and np.asarray(fast[0][1])[0] == 6.0


@pytest.mark.parametrize("dtype", [qb.float32, qb.float64])
def test_classification_and_exact_conversions_are_bitwise_the_kernels(dtype):
    """isnan / isinf / isfinite, pow, and the exact conversions (bool and integers to every
    dtype, anything to bool) are scalar instructions: bitwise the kernels on special values."""
    vals = qb.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3e38, 1e-45, 7.0], dtype=dtype)

    def make():
        def body(c, x):
            acc, n, m, cnt = c
            fin, nan, inf = qb.isfinite(x), qb.isnan(x), qb.isinf(x)
            i32 = fin.astype(qb.int32) + nan.astype(qb.int32) * 2 + inf.astype(qb.int32) * 4
            i64 = i32.astype(qb.int64) * 3 + n
            back = i64.astype(dtype) + i32.astype(dtype) * 0.5 + fin.astype(dtype)
            finite_is_1 = i32 - 1  # zero exactly where x is finite
            bools = (x.astype(qb.bool_), finite_is_1.astype(qb.bool_), (finite_is_1.astype(qb.int64) + n * 0).astype(
                qb.bool_), (x * 0.0 + finite_is_1.astype(dtype)).astype(qb.bool_))
            as_bool = bools[0].astype(dtype) + bools[1].astype(qb.int64).astype(dtype)
            p = qb.power(qb.abs(x) + 0.5, 1.0 / 3.0) + qb.power(2.0 + acc * 0.0, x * 0.0 + 1.5)
            cnt = cnt + (i64.astype(qb.int32) > 2).astype(qb.int64)
            return (acc + qb.where(fin, back + p, 0.0), i64, m + as_bool, cnt), (back, p, fin, nan, inf, i32, i64) + bools
        return lambda c, xs: qb.scan(body, c, xs)

    c0 = (qb.zeros((), dtype=dtype), qb.asarray(0, dtype=qb.int64), qb.zeros((), dtype=dtype),
          qb.asarray(0, dtype=qb.int64))
    fast, slow, stats = _both(make, c0, vals)
    assert stats["scalar_loops"] == 1
    _assert_bitwise(fast, slow)


def _newton_system(x, p):
    return qb.stack([x[0] ** 2 + x[1] + x[2] - p, x[0] - x[1] ** 3 + 0.5 * x[2] - 0.5 * p,
                     x[0] * x[1] + x[2] ** 3 - 1.0])


def _numpy_newton(x, p):
    for _ in range(50):
        f = np.array([x[0] ** 2 + x[1] + x[2] - p, x[0] - x[1] ** 3 + 0.5 * x[2] - 0.5 * p, x[0] * x[1] + x[2] ** 3 - 1.0])
        if np.max(np.abs(f)) <= 1e-10:
            break
        j = np.array([[2 * x[0], 1.0, 1.0], [1.0, -3 * x[1] ** 2, 0.5], [x[1], x[0], 3 * x[2] ** 2]])
        x = x - np.linalg.solve(j, f)
    return x


@qb.custom_jvp
def _clip_soft(x):
    return 2.0 * qb.tanh(x * 0.5)


@_clip_soft.defjvp
def _clip_soft_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _clip_soft(x), t * (1.0 - qb.tanh(x * 0.5) ** 2)


@qb.custom_vjp
def _scaled_sin(x):
    return qb.sin(x) * 1.5


_scaled_sin.defvjp(lambda x: (_scaled_sin(x), x), lambda x, g: (g * 1.5 * qb.cos(x),))


def _nested_bodies():
    """Loop bodies holding each kind of region op: (name, loop of a 3-vector and a scalar)."""
    def cond_body(i, c):
        x, p = c
        x = qb.cond(x[0] > 0.5, lambda x: x * 0.9 - p, lambda x: x + 0.1 * qb.sin(x), x)
        return x, p

    def while_body(i, c):
        x, p = c
        x, k = qb.while_loop(lambda s: (qb.sum(s[0] ** 2) > 1.0) & (s[1] < 20.0), lambda s: (s[0] * 0.8, s[1] + 1.0),
                             (x + p, qb.asarray(0.0)))
        return x + k * 1e-3, p

    def scan_body(i, c):
        x, p = c
        ws = qb.stack([x * 0.1, x * -0.2, x * 0.05 + p])

        def step(s, w):
            s = qb.tanh(s + w)
            return s, qb.sum(s)

        x, ys = qb.lax.scan(step, x, ws)
        return x + ys[::-1] * 1e-2, p

    def custom_body(i, c):
        x, p = c
        return _scaled_sin(_clip_soft(x * 1.3 + p)), p

    def checkpoint_body(i, c):
        x, p = c
        return qb.checkpoint(lambda x: qb.cos(x * p) + x * 0.3)(x), p

    def newton_body(i, c):
        x, p = c
        return qb.newton(_newton_system, x, args=(p,)), p + 1e-3

    return {"cond": cond_body, "while": while_body, "scan": scan_body, "custom": custom_body,
            "checkpoint": checkpoint_body, "newton": newton_body}


@pytest.mark.parametrize("name", list(_nested_bodies()))
def test_region_ops_inside_small_loop_bodies_take_the_scalar_form(name):
    """A small loop body holding a region op (cond, while, scan with xs and ys, custom_jvp
    and custom_vjp functions, checkpoint, qb.newton's custom_root with its while loop and
    dense solve) runs in the scalar form as a whole, the region op as one call into its own
    scalar regions, on both tiers: bitwise the kernel plan's results."""
    body = _nested_bodies()[name]
    x0, p0 = qb.array([1.0, 1.0, 1.0]), qb.asarray(0.3 if name != "newton" else 2.0)

    def make():
        return lambda x, p: qb.fori_loop(0, 40, body, (x, p))

    fast, slow, stats = _both(make, x0, p0)
    # Every loop, the outer one included (a body with a region op used to keep the kernel plan).
    assert stats["scalar_loops"] == stats["loops"] >= 1, stats
    _assert_bitwise(fast, slow)
    if name == "newton":
        x, p = np.ones(3), 2.0
        for _ in range(40):
            x, p = _numpy_newton(x, p), p + 1e-3
        np.testing.assert_allclose(np.asarray(fast[0]), x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["cond", "custom", "checkpoint", "newton"])
def test_derivatives_of_loops_with_region_ops_in_their_bodies(name):
    """Reverse and forward mode through such loops: the tiers agree bitwise, and the
    gradient matches float64 central differences."""
    body = _nested_bodies()[name]
    x0 = qb.array([1.0, 1.0, 1.0])
    p0 = qb.asarray(0.3 if name != "newton" else 2.0)

    def loss(p, x):
        return qb.sum(qb.fori_loop(0, 20, body, (x, p))[0] ** 2)

    fast, slow, _ = _both(lambda: qb.grad(loss), p0, x0)
    _assert_bitwise(fast, slow)
    h = 1e-6
    fd = (float(loss(p0 + h, x0)) - float(loss(p0 - h, x0))) / (2 * h)
    assert float(fast) == pytest.approx(fd, rel=1e-6, abs=1e-8)
    if name != "custom":  # forward mode of a custom_vjp function is refused by design
        fwd, fwd_slow, _ = _both(lambda: lambda p, x: qb.jvp(lambda p: loss(p, x), (p,), (qb.asarray(1.0),))[1], p0, x0)
        _assert_bitwise(fwd, fwd_slow)
        assert float(fwd) == pytest.approx(float(fast), rel=1e-10, abs=1e-12)
