"""qb.jit at scale: elementwise fusion (one tiled kernel, small peak memory), results
independent of the thread count, and hypothesis-generated random programs whose jit
results must equal eager execution bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quabla as qb
from jit_helpers import assert_bitwise, assert_tree_bitwise

NP = {"float32": np.float32, "float64": np.float64}
QB = {"float32": qb.float32, "float64": qb.float64}


# ---------------------------------------------------------------------------------------
# Fusion

def chain50(x):
    y = x
    for i in range(50):
        k = i % 5
        if k == 0:
            y = qb.sin(y)
        elif k == 1:
            y = y * 1.0001 + 0.5
        elif k == 2:
            y = qb.tanh(y)
        elif k == 3:
            y = qb.exp(-y * y)
        else:
            y = qb.maximum(y, x) - 0.25
    return y


@pytest.fixture(scope="module")
def big32():
    return qb.array(np.random.default_rng(0).standard_normal(10**6).astype(np.float32))


def test_fusion_chain_of_50_ops_is_one_kernel(big32):
    x = big32
    f = qb.jit(chain50)
    compiled = f.lower(x).compile()
    stats = compiled.stats()
    n_ops = sum(1 for line in compiled.as_text().splitlines() if "= " in line and "constant" not in line)
    assert n_ops >= 50
    assert stats["kernels"] == 1, stats
    in_bytes = out_bytes = 4 * 10**6
    assert stats["peak_bytes"] <= in_bytes + out_bytes + 64 * 1024, stats
    assert_bitwise(f(x), chain50(x))
    assert_bitwise(compiled(x), chain50(x))


def test_fusion_with_broadcast_row_and_masks_matches_eager():
    rng = np.random.default_rng(3)
    x = qb.array(rng.standard_normal((1000, 777)).astype(np.float32))
    row = qb.array(rng.standard_normal(777).astype(np.float32))
    col = qb.array(rng.standard_normal((1000, 1)).astype(np.float32))

    def fn(x, row, col):
        m = (x > row) | (x < col)
        y = qb.where(m, qb.sin(x * row), qb.cos(x + col)) * 0.5
        z = m.astype(qb.float32) + y * y - qb.exp(-qb.abs(x))
        return z, m

    f = qb.jit(fn)
    assert_tree_bitwise(f(x, row, col), fn(x, row, col))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_fusion_bool_slot_not_overwritten_by_float(dt):
    # Regression: in a fused chain a bool value (1 byte/element) must survive float work done
    # after it, over many tiles, with f32 <-> f64 <-> bool conversions in the same kernel.
    n = 5 * 1024 + 37
    rng = np.random.default_rng(11)
    xn = rng.standard_normal(n).astype(NP[dt])
    xn[::97] = np.nan
    x = qb.array(xn)
    other = qb.float64 if dt == "float32" else qb.float32

    def fn(x):
        mask = x > 0.1
        f = qb.exp(x) * 3.0 - 1.0
        g = qb.sin(f.astype(other)) + 0.5
        bmask = g.astype(qb.bool_)
        h = qb.where(mask, f, g.astype(x.dtype)) + mask.astype(x.dtype)
        k = qb.where(bmask & ~mask, h * 2.0, -h) + bmask.astype(x.dtype) * 7.0
        return mask, bmask, k, h, mask.astype(x.dtype) * qb.tanh(k)

    f = qb.jit(fn)
    got, expected = f(x), fn(x)
    assert_tree_bitwise(got, expected)
    # and check the mask against NumPy, independently of the eager path
    np.testing.assert_array_equal(got[0].numpy(), xn > 0.1)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("rows", [100, 513, 1030])
def test_scalar_broadcast_shared_by_two_fused_kernels(dt, rows):
    # Regression (found by the random programs below): CSE merges the two broadcasts of the
    # weak scalar 2.0 into one value that two fused kernels read, with a reduction between
    # them; the second kernel read an unmaterialised buffer (inf/NaN in all rows but the first).
    rng = np.random.default_rng(rows)
    xn = rng.standard_normal((rows, 2)).astype(NP[dt])
    x = qb.array(xn)

    def two_sums(x):
        return qb.sum(x, axis=1) / 2.0 + qb.sum(x * x, axis=1) / 2.0

    def std_rows(x):
        return qb.std(x, axis=1, keepdims=True)

    for fn in (two_sums, std_rows):
        got = qb.jit(fn)(x)
        assert_bitwise(got, fn(x), where=fn.__name__)
    np.testing.assert_allclose(qb.jit(std_rows)(x).numpy(), xn.std(axis=1, keepdims=True),
                               rtol=1e-5 if dt == "float32" else 1e-12)


# ---------------------------------------------------------------------------------------
# Thread-count independence

def big_program(x, m, z):
    y = qb.tanh(x * 1.5 + 0.25) * qb.exp(-x * x) + qb.sin(x) - qb.where(x > 0.3, x, -x) * 0.125
    zz = y.reshape(1000, 1000)
    return {
        "y": y, "sum": qb.sum(y), "mean": qb.mean(y * y), "max": qb.max(y), "var": qb.var(x),
        "lse": qb.logsumexp(x), "cols": qb.sum(zz, axis=0), "rows": qb.sum(zz, axis=1),
        "softmax": qb.softmax(zz, axis=-1), "mm": m @ m, "mm2": qb.matmul(zz[:256, :256], m) + z,
        "norm": qb.norm(x), "std_rows": qb.std(zz, axis=1),
    }


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_results_independent_of_thread_count(dt):
    rng = np.random.default_rng(5)
    x = qb.array(rng.standard_normal(10**6).astype(NP[dt]))
    m = qb.array(rng.standard_normal((256, 256)).astype(NP[dt]))
    z = qb.array(rng.standard_normal(256).astype(NP[dt]))
    original = qb.num_threads()
    results = []
    try:
        for nt in (1, 2):
            qb.set_num_threads(nt)
            assert qb.num_threads() == nt
            f = qb.jit(big_program)
            results.append((f(x, m, z), big_program(x, m, z)))
    finally:
        qb.set_num_threads(original)
    assert qb.num_threads() == original
    (j1, e1), (j2, e2) = results
    assert_tree_bitwise(j2, j1)
    assert_tree_bitwise(e1, j1)
    assert_tree_bitwise(e2, j1)
    # a sanity check that the values are right at all
    np.testing.assert_allclose(float(j1["sum"]), float(np.sum(j1["y"].numpy().astype(np.float64))),
                               rtol=1e-4 if dt == "float32" else 1e-10)


# ---------------------------------------------------------------------------------------
# Hypothesis: random programs, jit vs eager bitwise

SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

UNARY = ["sin", "cos", "exp", "log", "sqrt", "tanh", "abs", "negative", "square", "floor", "ceil", "round",
         "sigmoid", "softplus", "expm1", "log1p", "erf", "relu", "reciprocal", "sign", "arctan", "cbrt",
         "gelu", "silu", "arcsinh", "nan_to_num", "isnan_f", "sinh", "exp2", "erfc"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "hypot", "atan2",
          "logaddexp", "fmod", "mod"]
SCALAR = ["mul_s", "add_s", "rsub_s", "div_s", "rdiv_s", "pow2", "pow3", "pow_s"]
CMP = ["gt", "le", "eq", "ne", "ge", "lt"]
BOOL = ["and", "or", "xor", "not"]
REDUCE = ["sum", "mean", "max", "min", "var", "logsumexp", "prod", "std", "softmax", "log_softmax",
          "cumsum", "any", "all"]
CAST = ["to_bool", "to_float", "to_other", "from_other"]


@st.composite
def programs(draw):
    dt = draw(st.sampled_from(["float32", "float64"]))
    big = draw(st.booleans())
    if big:   # several fusion tiles (1024 elements each)
        shape = draw(st.sampled_from([(2049,), (3, 1500), (1030, 2), (2, 3, 700)]))
    else:
        shape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=3)))
    seed = draw(st.integers(0, 2**31 - 1))
    special = draw(st.sampled_from([0.0, 0.05, 0.3]))
    n_steps = draw(st.integers(1, 14))
    steps = []
    for _ in range(n_steps):
        kind = draw(st.sampled_from(["unary"] * 4 + ["binary"] * 4 + ["scalar"] * 2 + ["cmp", "bool", "where",
                                     "reduce", "reduce", "cast"]))
        op = draw(st.sampled_from({"unary": UNARY, "binary": BINARY, "scalar": SCALAR, "cmp": CMP, "bool": BOOL,
                                   "where": ["where"], "reduce": REDUCE, "cast": CAST}[kind]))
        picks = draw(st.lists(st.integers(0, 10**6), min_size=3, max_size=3))
        axis = draw(st.integers(-1, max(len(shape) - 1, 0)))
        scalar = draw(st.sampled_from([0.5, -1.5, 2.0, 3.0, 1e-3, 0.0, -0.0, 7.25]))
        steps.append((kind, op, picks, axis, scalar))
    n_out = draw(st.integers(1, 3))
    return dt, shape, seed, special, steps, n_out


def make_values(dt, shape, seed, special):
    rng = np.random.default_rng(seed)
    t = NP[dt]
    x = (rng.standard_normal(shape) * 3).astype(t)
    y = (rng.standard_normal(shape) * 2).astype(t)
    row = rng.standard_normal(shape[-1:]).astype(t)
    if special:
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40 if dt == "float64" else 1e-42, 1e300
                             if dt == "float64" else 3e38], dtype=t)
        for arr in (x, y):
            flat = arr.reshape(-1)
            hit = rng.random(flat.size) < special
            flat[hit] = rng.choice(specials, size=int(hit.sum()))
    return [qb.array(x), qb.array(y), qb.array(row)]


def interpret(steps, n_out, dt):
    """The program as a Python function of (x, y, row); the same code runs eagerly and under jit.
    Every value is broadcastable to the full shape (reductions keep dims), so any two combine."""
    main = QB[dt]
    other = qb.float64 if dt == "float32" else qb.float32

    def fn(x, y, row):
        vals = [x, y, row]

        def pick(p, want):
            cands = [v for v in vals if v.dtype == want]
            return cands[p % len(cands)] if cands else None

        for kind, op, picks, axis, scalar in steps:
            a = vals[picks[0] % len(vals)]
            fl = a.dtype if a.dtype != qb.bool_ else main
            if kind in ("unary", "binary", "scalar", "reduce") and a.dtype == qb.bool_ and op not in ("any", "all"):
                a = a.astype(fl)
            if kind == "unary":
                if op == "isnan_f":
                    r = qb.isnan(a).astype(fl)
                else:
                    r = getattr(qb, op)(a)
            elif kind == "binary":
                b = pick(picks[1], a.dtype)
                r = {"atan2": qb.atan2}.get(op, getattr(qb, op, None))(a, b)
            elif kind == "scalar":
                r = {"mul_s": lambda: a * scalar, "add_s": lambda: a + scalar, "rsub_s": lambda: scalar - a,
                     "div_s": lambda: a / scalar, "rdiv_s": lambda: scalar / a, "pow2": lambda: a ** 2,
                     "pow3": lambda: a ** 3, "pow_s": lambda: a ** scalar}[op]()
            elif kind == "cmp":
                b = pick(picks[1], a.dtype) if a.dtype != qb.bool_ else None
                if b is None:
                    a = a.astype(main) if a.dtype == qb.bool_ else a
                    b = a * 0.5
                r = {"gt": a > b, "le": a <= b, "eq": a == b, "ne": a != b, "ge": a >= b, "lt": a < b}[op]
            elif kind == "bool":
                p = a if a.dtype == qb.bool_ else a > 0.0
                q = pick(picks[1], qb.bool_)
                q = q if q is not None else vals[picks[2] % len(vals)].astype(qb.bool_)
                r = {"and": lambda: p & q, "or": lambda: p | q, "xor": lambda: qb.logical_xor(p, q),
                     "not": lambda: ~p}[op]()
            elif kind == "where":
                m = pick(picks[0], qb.bool_)
                m = m if m is not None else x > y
                b = pick(picks[1], main)
                c = pick(picks[2], main)
                r = qb.where(m, b, c)
            elif kind == "reduce":
                ax = axis if a.ndim else None
                if ax is not None and a.ndim:
                    ax = ax % a.ndim
                if op in ("any", "all"):
                    p = a if a.dtype == qb.bool_ else a > 0.0
                    r = getattr(qb, op)(p, axis=ax, keepdims=True)
                elif op in ("softmax", "log_softmax"):
                    r = getattr(qb, op)(a, axis=ax) if a.ndim else a
                elif op == "cumsum":
                    r = qb.cumsum(a, axis=ax) if ax is not None else a
                else:
                    r = getattr(qb, op)(a, axis=ax, keepdims=True)
            else:  # cast
                if op == "to_bool":
                    r = a.astype(qb.bool_)
                elif op == "to_float":
                    r = a.astype(main)
                elif op == "to_other":
                    r = a.astype(other)
                else:
                    o = pick(picks[1], other)
                    r = o.astype(main) if o is not None else a.astype(other).astype(main)
            vals.append(r)
        return tuple(vals[-n_out:])
    return fn


@SETTINGS
@given(programs())
def test_random_programs_jit_matches_eager(prog):
    dt, shape, seed, special, steps, n_out = prog
    args = make_values(dt, shape, seed, special)
    fn = interpret(steps, n_out, dt)
    with np.errstate(all="ignore"):
        expected = fn(*args)
    f = qb.jit(fn)
    assert_tree_bitwise(f(*args), expected)
    assert_tree_bitwise(f(*args), expected)
    assert f.trace_count == 1


# ---- reduction epilogues: a trailing-axis sum of a fused chain is done tile by tile

@pytest.mark.parametrize("shape, axis", [((4096, 64), 1), ((3, 5000), 1), ((7, 3, 1500), (1, 2)),
                                         ((100000,), 0), ((5, 2048), -1), ((2, 3, 1025), -1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_epilogue_matches_op_by_op_bitwise(shape, axis, dtype):
    x = qb.array(np.random.default_rng(3).normal(size=shape).astype(dtype))

    def g(x):
        return qb.sum(qb.exp(x * 0.5) * x - 1.0, axis=axis)

    f = qb.jit(g)
    compiled = f.lower(x).compile()
    assert compiled.stats()["kernels"] == 1
    assert "[epilogue]" in compiled.plan_text()
    # Eager runs each op as its own program: the unfused order.
    step = qb.exp(x * 0.5) * x - 1.0
    assert_bitwise(f(x), qb.sum(step, axis=axis))


@pytest.mark.parametrize("shape, axis", [((256, 50, 256), 1), ((8, 7, 3000), 1), ((3, 5, 2), 1), ((2, 3, 4, 700), (1, 2)),
                                         ((6, 1, 5), 1), ((9, 2049), 0), ((50, 33), 0), ((2, 3, 4, 5), (0, 1)),
                                         ((1000, 3, 5), 1), ((257, 1, 32), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_middle_axis_sum_epilogue_matches_op_by_op_bitwise(shape, axis, dtype):
    """A sum over leading or middle axes (the direction axis of a batched Laplacian) is an
    epilogue too: each output adds its values in axis order, as the plain reduction does."""
    x = qb.array(np.random.default_rng(5).normal(size=shape).astype(dtype))

    def g(x):
        return qb.sum(qb.sin(x) * x + 0.25, axis=axis)

    f = qb.jit(g)
    compiled = f.lower(x).compile()
    assert compiled.stats()["kernels"] == 1
    assert "[epilogue]" in compiled.plan_text()
    assert_bitwise(f(x), qb.sum(qb.sin(x) * x + 0.25, axis=axis))
    for threads in (1, 2):
        old = qb.num_threads()
        qb.set_num_threads(threads)
        try:
            assert_bitwise(f(x), qb.sum(qb.sin(x) * x + 0.25, axis=axis))
        finally:
            qb.set_num_threads(old)


def test_a_large_sum_over_the_leading_axis_stays_unfused():
    """A bias gradient's sum over a large batch axis has one output row to split over
    threads: its chain runs unfused over every thread, then the plain reduction."""
    x = qb.array(np.random.default_rng(6).normal(size=(4096, 64)).astype(np.float32))
    f = qb.jit(lambda x: qb.sum(qb.tanh(x) * x, axis=0))
    assert "[epilogue]" not in f.lower(x).compile().plan_text()
    assert_bitwise(f(x), qb.sum(qb.tanh(x) * x, axis=0))


def test_epilogue_not_used_when_the_summed_value_is_also_returned():
    x = qb.array(np.random.default_rng(4).normal(size=(64, 300)).astype(np.float32))

    def g(x):
        y = qb.tanh(x) * 2.0
        return y, qb.sum(y, axis=1)

    f = qb.jit(g)
    assert "[epilogue]" not in f.lower(x).compile().plan_text()
    y, s = f(x)
    assert_bitwise(s, qb.sum(qb.tanh(x) * 2.0, axis=1))


def test_plan_text_lists_fused_members_in_tiles():
    x = qb.ShapeDtype((1000,), qb.float32)
    plan = qb.jit(lambda x: qb.sin(qb.exp(x) + 1.0) * 3.0).lower(x).compile().plan_text()
    assert "fused [1000]" in plan
    assert plan.count("[tile]") >= 2


def test_next_layers_bias_broadcast_is_loaded_in_its_own_kernel():
    """A bias broadcast whose input is ready early must not be materialised by the previous
    layer's kernel: it moves to the kernel that reads it (a tile load). Results are unchanged."""
    rng = np.random.default_rng(11)
    ws = [qb.array(rng.normal(0, 0.2, (16, 16)).astype(np.float32)) for _ in range(3)]
    bs = [qb.array(rng.normal(0, 0.1, 16).astype(np.float32)) for _ in range(3)]
    x = qb.array(rng.normal(0, 1, (3000, 16)).astype(np.float32))

    def mlp(ws, bs, x):
        h = x
        for w, b in zip(ws, bs):
            h = qb.tanh(h @ w + b)
        return h

    compiled = qb.jit(mlp).lower(ws, bs, x).compile()
    plan = compiled.plan_text()
    assert all("[tile]" in line for line in plan.splitlines() if "broadcast_in_dim" in line), plan
    assert compiled.stats()["kernels"] == 6  # 3 GEMMs + 3 fused bias+tanh kernels
    assert_bitwise(qb.jit(mlp)(ws, bs, x), mlp(ws, bs, x))


def test_a_transpose_read_only_by_matmuls_is_a_view_passed_to_blas():
    rng = np.random.default_rng(5)
    a = qb.array(rng.normal(size=(300, 7)))
    b = qb.array(rng.normal(size=(300, 4)))
    f = qb.jit(lambda a, b: (a.T @ b, b @ (a.T @ b).T))  # A^T and B^T operands
    compiled = f.lower(a, b).compile()
    plan = compiled.plan_text()
    assert all(line.lstrip().startswith("view:") for line in plan.splitlines() if "= transpose(" in line), plan
    x, y = f(a, b)
    an, bn = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(np.asarray(x), an.T @ bn, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(y), bn @ (an.T @ bn).T, rtol=1e-12)
    # a transpose that is also a result is materialised
    g = qb.jit(lambda a: (a.T, a.T @ a))
    assert any(line.lstrip().startswith("kernel") and "= transpose(" in line
               for line in g.lower(a).compile().plan_text().splitlines())
    np.testing.assert_array_equal(np.asarray(g(a)[0]), an.T)


@pytest.mark.parametrize("m,k,n", [(7, 5, 3), (64, 48, 32), (300, 64, 64), (256, 32, 32)])
def test_matmul_through_a_transpose_view_equals_eager_bitwise(m, k, n):
    # jit passes BLAS a transpose flag; eager materialises the transpose first. OpenBLAS's
    # kernels here give the same bits either way (checked, not assumed).
    rng = np.random.default_rng(m)
    a = qb.array(rng.normal(size=(k, m)))
    b = qb.array(rng.normal(size=(k, n)))
    c = qb.array(rng.normal(size=(n, k)))
    assert_bitwise(qb.jit(lambda a, b: a.T @ b)(a, b), a.T @ b)
    assert_bitwise(qb.jit(lambda a, c: a.T @ c.T)(a, c), a.T @ c.T)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_vector_and_vector_dot_products_in_every_layout(dtype):
    # n = 1 products run BLAS gemv / dot rather than gemm: every transposition of the
    # stored operands, batched and not, against NumPy.
    rng = np.random.default_rng(7)
    a = rng.normal(size=(300, 200)).astype(dtype)
    x = rng.normal(size=200).astype(dtype)
    y = rng.normal(size=300).astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-12
    cases = [
        (lambda a, x, y: a @ x, a @ x),
        (lambda a, x, y: a.T @ y, a.T @ y),
        (lambda a, x, y: y @ a, y @ a),
        (lambda a, x, y: x @ x, x @ x),
        (lambda a, x, y: qb.matmul(a, x[:, None])[:, 0], a @ x),
        (lambda a, x, y: qb.matmul(x[None, :], a.T)[0], x @ a.T),
        (lambda a, x, y: qb.einsum("bij,bj->bi", qb.stack([a, 2 * a]), qb.stack([x, x])), np.stack([a @ x, 2 * a @ x])),
    ]
    for k, (f, want) in enumerate(cases):
        got = qb.jit(f)(qb.array(a), qb.array(x), qb.array(y))
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol * 10, err_msg=f"case {k}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_slices_fuse_as_strided_loads_and_match_op_by_op(dtype):
    """A stencil's shifted views (slices, strided ones too) are loads inside the fused
    kernel, not materialised copies; values are bitwise those of op-by-op execution,
    including slices of a value made by an earlier fused chain and of a loop carry."""
    rng = np.random.default_rng(3)
    u = qb.array(rng.normal(size=(64, 48)).astype(dtype))

    def stencil(u):
        p = qb.pad(qb.exp(u * 0.1), 1)  # the padded value comes from an earlier chain
        lap = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
        return qb.tanh(lap) + u[::2, ::3].sum() * p[1:-1:1, 2:].mean()

    compiled = qb.jit(stencil).lower(u).compile()
    plan = compiled.plan_text()
    slices = [line for line in plan.splitlines() if "= slice(" in line]
    assert len(slices) >= 5 and sum("[tile]" in line for line in slices) >= 5, plan
    assert_bitwise(qb.jit(stencil)(u), stencil(u))

    def looped(u):
        return qb.fori_loop(0, 3, lambda i, v: qb.pad(v, 1)[2:, 1:-1] * 0.5 + v, u)
    assert_bitwise(qb.jit(looped)(u), looped(u))


def test_reverses_and_strided_views_fuse_as_loads():
    # a reverse is a load with negative strides; a slice of a slice is one slice
    x = np.random.default_rng(3).normal(size=(6, 40))
    g = lambda a: qb.flip(a, -1)[:, :39] * 2.0 + a[:, ::2][:, 1::3].sum() + qb.flip(a[:, 1:], -1)[:, :39] * a[:, :39].sum()
    expect = np.flip(x, -1)[:, :39] * 2.0 + x[:, ::2][:, 1::3].sum() + np.flip(x[:, 1:], -1)[:, :39] * x[:, :39].sum()
    np.testing.assert_allclose(np.asarray(qb.jit(g)(qb.asarray(x))), expect, rtol=1e-13)
    plan = qb.jit(lambda a: qb.flip(a, -1) * 2.0 + a).lower(qb.asarray(x)).compile().plan_text()
    assert "reverse" not in "".join(line for line in plan.splitlines() if line.lstrip().startswith("kernel")), plan
    nested = qb.jit(lambda a: a[:, ::2][:, 1::3]).lower(qb.asarray(x)).compile().plan_text()
    assert nested.count("slice(") == 1, nested
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda a: a[:, ::2][:, 1::3])(qb.asarray(x))), x[:, ::2][:, 1::3])
