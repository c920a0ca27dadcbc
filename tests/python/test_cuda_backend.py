"""The CUDA backend without a GPU.

(a) Every generated module (the op table, transformed programs, loops, the README
examples) compiles through NVRTC for sm_90: NVRTC needs no device.
(b) The host emulator (QUABLA_CUDA_EMULATOR=1: cuda:0 runs the same generated source as
C++ on the CPU, with the device plan, buffers, loops and GEMMs of the CUDA executor) gives
the CPU backend's results: float64 to 1e-12, float32 to 1e-5, integers and bools exactly.

On a machine without NVRTC the compile checks skip, unless QUABLA_REQUIRE_NVRTC=1 (set by
.ci/run where the CUDA toolkit is installed), which makes them fail instead.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

import quabla as qb
from examples_helper import example
from ad_op_table import CASES




# QUABLA_TEST_CUDA=gpu (scripts/gpu-check.sh) runs the same comparisons on the GPU.
ON_GPU = os.environ.get("QUABLA_TEST_CUDA") == "gpu"


@pytest.fixture(autouse=True)
def emulator(monkeypatch):
    if ON_GPU:
        monkeypatch.delenv("QUABLA_CUDA_EMULATOR", raising=False)
    else:
        monkeypatch.setenv("QUABLA_CUDA_EMULATOR", "1")


def _nvrtc_available() -> bool:
    info = qb._cuda.info()
    if info["nvrtc_version"]:
        return True
    if os.environ.get("QUABLA_REQUIRE_NVRTC") == "1":
        pytest.fail(f"QUABLA_REQUIRE_NVRTC=1 but NVRTC is not available: {info['nvrtc_reason']}")
    return False


def check_nvrtc(fn, *args):
    """The CUDA source of jit(fn, device='cuda') on args compiles for sm_90 (and sm_80)."""
    if not _nvrtc_available():
        return
    source = qb.jit(fn, device="cuda").lower(*args).compile()._program.cuda_source()
    for arch in ("sm_90", "sm_80"):
        ptx = qb._core.nvrtc_compile(source, arch)
        assert f".target {arch}" in ptx
    assert qb._core.nvrtc_compile_cubin(source, "sm_90")[:4] == b"\x7fELF"  # what a GPU loads


def close(got, want, rtol=1e-12, atol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def both(fn, *args):
    """(CPU result, emulated CUDA result) of jit(fn) as lists of NumPy arrays."""
    ref = qb.jit(fn)(*args)
    got = qb.jit(fn, device="cuda")(*args)
    flat = lambda r: [np.asarray(v) for v in qb.tree.leaves(r)]
    return flat(ref), flat(got)


def assert_same(fn, *args, rtol=1e-12, atol=1e-12):
    ref, got = both(fn, *args)
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        close(g, r, rtol, atol)


# ---------------------------------------------------------------------------------------
# The op table (every op of ops.def, through the public API)

# Every op of ops.def lowers (test_large_matrices_are_not_lowered_yet: the limit), but host
# calls, which run on the CPU only (test_host_calls_run_on_the_cpu_only), and eig
# (test_complex_ops_without_a_device_kernel_raise_clearly).
SUPPORTED = [c for c in CASES if "cuda" in c.runs_on]


@pytest.mark.parametrize("case", SUPPORTED, ids=repr)
def test_op_table_matches_cpu(case):
    args = case.args()
    assert_same(case.fn, *args)
    check_nvrtc(case.fn, *args)


@pytest.mark.parametrize("case", [c for c in SUPPORTED if not c.forward_only], ids=repr)
def test_op_table_gradients_match_cpu(case):
    args = case.args(salt=1)
    f = lambda *a: qb.sum(qb.sin(case.fn(*a)))
    assert_same(qb.grad(f, argnums=tuple(range(len(args)))), *args)


@pytest.mark.parametrize("case", [c for c in SUPPORTED if not c.reverse_only], ids=repr)
def test_op_table_vmap_jvp_match_cpu(case):
    args = case.args(salt=2)
    batched = [qb.stack([a, a * 0.5]) for a in args]
    assert_same(qb.vmap(case.fn), *batched)
    tangents = [qb.ones_like(a) for a in args]
    assert_same(lambda *a: qb.jvp(case.fn, a, tangents)[1], *args)


# ---------------------------------------------------------------------------------------
# Elementwise ops in float32 and on hostile values

UNARY = ["negative", "abs", "sign", "floor", "ceil", "round", "sqrt", "cbrt", "exp", "exp2", "expm1", "log",
         "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
         "arcsinh", "arccosh", "arctanh", "erf", "erfc", "sigmoid", "softplus", "silu"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "arctan2", "hypot", "fmod", "maximum", "minimum",
          "logaddexp"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_elementwise_battery(dtype):
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, 2000).astype(dtype)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e30, 0.5]
    y = rng.uniform(-3, 3, 2000).astype(dtype)
    y[:8] = [np.nan, 0.0, 2.0, -np.inf, 1.0, np.inf, 0.0, -0.5]
    rtol = 1e-5 if dtype == "float32" else 1e-12

    def f(a, b):
        outs = [getattr(qb, name)(a) for name in UNARY]
        outs += [getattr(qb, name)(a, b) for name in BINARY]
        outs.append(qb.gelu(a, approximate=True))
        outs += [qb.isnan(a), qb.isinf(a), qb.isfinite(a), a < b, a == b, qb.where(a > b, a, b)]
        return outs

    with np.errstate(all="ignore"):
        ref, got = both(f, qb.array(x), qb.array(y))
    names = UNARY + BINARY + ["gelu", "isnan", "isinf", "isfinite", "lt", "eq", "where"]
    for name, r, g in zip(names, ref, got):
        try:
            close(g, r, rtol, rtol * 1e-30 if dtype == "float32" else 1e-300)
        except AssertionError as e:
            raise AssertionError(f"{name} ({dtype}): {e}") from None
    check_nvrtc(f, qb.array(x), qb.array(y))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_ops_edges(dtype):
    info = np.iinfo(dtype)
    a = np.array([0, 1, -1, 7, -7, info.min, info.max, 3, -8, 100], dtype)
    b = np.array([0, -1, 0, 2, -2, -1, 1, 40, 3, -3], dtype)

    def f(p, q):
        return [p + q, p - q, p * q, p // q, p % q, qb.fmod(p, q), qb.maximum(p, q), qb.minimum(p, q), -p, qb.abs(p), qb.sign(p), p & q, p | q, p ^ q, ~p,
                p << q, p >> q, p < q, qb.power(p, q), p.astype(qb.float64), (p > 0).astype(p.dtype)]

    assert_same(f, qb.array(a), qb.array(b))
    check_nvrtc(f, qb.array(a), qb.array(b))


def test_float_to_int_conversion_saturates():
    x = qb.array([np.nan, np.inf, -np.inf, 3.7, -3.7, 3e9, -3e9, 1e19, -1e19, 0.0])
    assert_same(lambda v: [v.astype(qb.int32), v.astype(qb.int64), v.astype(qb.bool_),
                           v.astype(qb.float32).astype(qb.int32)], x)


# ---------------------------------------------------------------------------------------
# Reductions, movement, sorting, indexing (shapes that take every code path)

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,axis", [((100000,), None), ((37, 5000), 1), ((5000, 37), 0), ((6, 7, 8, 9), (0, 2)),
                                        ((3, 0, 4), 1), ((1, 1), None), ((64, 300), 1)])
def test_reductions(dtype, shape, axis):
    rng = np.random.default_rng(11)
    x = qb.array(rng.uniform(0.5, 1.5, shape).astype(dtype))
    rtol = 2e-5 if dtype == "float32" else 1e-12
    f = lambda v: [qb.sum(v, axis=axis), qb.max(v, axis=axis) if v.size else qb.sum(v, axis=axis),
                   qb.min(v, axis=axis) if v.size else qb.sum(v, axis=axis), qb.mean(v * v, axis=axis),
                   qb.any(v > 1.4, axis=axis), qb.all(v > 0.6, axis=axis)]
    assert_same(f, x, rtol=rtol, atol=0)
    if len(shape) == 2 and shape[0] * shape[1] < 1000:
        assert_same(lambda v: qb.prod(v, axis=axis), x, rtol=rtol, atol=0)


def test_nan_propagates_through_max_and_sum():
    x = np.ones((4, 1000))
    x[2, 500] = np.nan
    assert_same(lambda v: [qb.max(v, axis=1), qb.min(v, axis=1), qb.sum(v, axis=1)], qb.array(x))


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_cumsum_both_directions(dtype):
    x = qb.array(np.arange(60).reshape(3, 4, 5).astype(dtype))
    assert_same(lambda v: [qb.cumsum(v, axis=a, reverse=r) for a in range(3) for r in (False, True)], x)


def test_movement_ops():
    x = qb.array(np.arange(120.0).reshape(2, 3, 4, 5))
    f = lambda v: [qb.transpose(v, (3, 1, 0, 2)), v[1:, ::2, ::-1, 1:4:2], qb.flip(v, axis=(0, 3)),
                   qb.broadcast_to(v[:, :1], (2, 3, 4, 5)) + v, qb.concat([v, v * 2.0], axis=2),
                   qb.reshape(v, (6, 20)).T, qb.pad(v, ((0, 1), (2, 0), (0, 0), (1, 1)))]
    assert_same(f, x)


def test_sorting_with_nan_and_ties():
    x = np.array([[3.0, np.nan, 1.0, 3.0, -2.0, 1.0, np.nan, 0.0] * 9])
    assert_same(lambda v: [qb.argsort(v, axis=1), qb.sort(v, axis=1), qb.sort(v, axis=1, descending=True),
                           qb.argsort(v, axis=1, descending=True)], qb.array(x))
    a = qb.array([-1.0, 0.0, 0.0, 2.0, np.nan])
    v = qb.array([-5.0, 0.0, 1.0, 2.0, 9.0, np.nan])
    assert_same(lambda s, t: [qb.searchsorted(s, t), qb.searchsorted(s, t, side="right")], a, v)


def test_traced_indexing_and_scatter():
    x = qb.array(np.arange(24.0).reshape(4, 6))
    idx = qb.array(np.array([5, 0, 0, 9, -3], np.int32))
    f = lambda v, i: [v[:, i], qb.take(v, i, axis=1, mode="fill"), v.at[:, i].add(1.0), v.at[:, i].set(-1.0),
                      v.at[:, i].max(7.0), v.at[:, i].min(3.0), v.at[:, i].multiply(2.0)]
    assert_same(f, x, idx)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 3, 8, 40])
def test_small_matrix_linalg_batched(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(5, n, n))
    spd = (a @ np.swapaxes(a, 1, 2) + n * np.eye(n)).astype(dtype)
    b = rng.normal(size=(5, n, 2)).astype(dtype)
    rtol = 2e-4 if dtype == "float32" else 1e-10

    def f(m, r):
        lu = qb.linalg.lu(m)
        return [qb.linalg.cholesky(m), qb.linalg.solve(m, r), qb.linalg.slogdet(m)[1], qb.linalg.slogdet(-m)[0],
                qb.linalg.solve_triangular(m, r, lower=True), qb.linalg.solve_triangular(m, r, lower=False, trans=1),
                lu[0], lu[1], lu[2], qb.linalg.det(m), qb.linalg.inv(m)]
    assert_same(f, qb.array(spd), qb.array(b), rtol=rtol, atol=rtol * 1e-3)
    check_nvrtc(f, qb.array(spd), qb.array(b))


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (1, 5), (5, 1), (7, 7)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_lapack(shape, mode):
    rng = np.random.default_rng(sum(shape))
    a = rng.normal(size=(3,) + shape)
    a[1, :, 0] = 0.0  # a zero column: no reflector (tau = 0), as LAPACK
    f = lambda m: list(qb.linalg.qr(m, mode=mode)) if mode != "r" else qb.linalg.qr(m, mode="r")
    assert_same(f, qb.array(a))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 5, 12, 40])
def test_eigh_matches_lapack_up_to_signs(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(4, n, n))
    sym = (a + np.swapaxes(a, 1, 2)).astype(dtype)
    sym[0] = np.triu(rng.normal(size=(n, n)), 1) * 1e3 + np.tril(sym[0])  # one triangle is never read
    x = qb.array(sym)
    ref = qb.jit(qb.linalg.eigh)(x)
    got = qb.jit(qb.linalg.eigh, device="cuda")(x)
    rtol = 1e-4 if dtype == "float32" else 1e-11
    scale = np.max(np.abs(np.asarray(ref.eigenvalues)))
    np.testing.assert_allclose(np.asarray(got.eigenvalues), np.asarray(ref.eigenvalues), rtol=0, atol=rtol * scale)
    v, w = np.asarray(got.eigenvectors), np.asarray(ref.eigenvectors)
    signs = np.sign(np.sum(v * w, axis=1, keepdims=True))  # per eigenvector
    np.testing.assert_allclose(v * signs, w, rtol=0, atol=30 * rtol)
    rebuilt = lambda vec, val: vec @ (val[..., None] * np.swapaxes(vec, 1, 2))
    np.testing.assert_allclose(rebuilt(v, np.asarray(got.eigenvalues)), rebuilt(w, np.asarray(ref.eigenvalues)),
                               rtol=0, atol=rtol * scale * 10)
    check_nvrtc(qb.linalg.eigh, x)


def test_eigh_of_nan_and_of_repeated_eigenvalues():
    # NaN in, NaN out (all of it here; LAPACK may leave a decoupled eigenvalue finite).
    nan = qb.jit(qb.linalg.eigh, device="cuda")(qb.array([[np.nan, 0.0], [0.0, 1.0]]))
    assert np.isnan(np.asarray(nan.eigenvalues)).all() and np.isnan(np.asarray(nan.eigenvectors)).all()
    got = qb.jit(qb.linalg.eigh, device="cuda")(qb.eye(4) * 2.0)
    np.testing.assert_allclose(np.asarray(got.eigenvalues), [2.0] * 4)
    v = np.asarray(got.eigenvectors)
    np.testing.assert_allclose(v.T @ v, np.eye(4), atol=1e-15)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (7, 3), (3, 7), (6, 1), (1, 6), (30, 20)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_lapack_up_to_signs(dtype, shape, full):
    rng = np.random.default_rng(sum(shape))
    a = rng.normal(size=(3,) + shape).astype(dtype)
    a[2] = np.outer(rng.normal(size=shape[0]), rng.normal(size=shape[1]))  # rank 1: zero singular values
    x = qb.array(a)
    ref = qb.jit(lambda m: qb.linalg.svd(m, full_matrices=full))(x)
    got = qb.jit(lambda m: qb.linalg.svd(m, full_matrices=full), device="cuda")(x)
    tol = 1e-4 if dtype == "float32" else 1e-11
    s_ref, s_got = np.asarray(ref.S), np.asarray(got.S)
    scale = s_ref.max()
    np.testing.assert_allclose(s_got, s_ref, rtol=0, atol=tol * scale)
    u, vh = np.asarray(got.U), np.asarray(got.Vh)
    k = min(shape)
    for b in range(3):  # orthonormal factors, and U S Vh rebuilds A
        np.testing.assert_allclose(u[b].T @ u[b], np.eye(u.shape[-1]), atol=30 * tol)
        np.testing.assert_allclose(vh[b] @ vh[b].T, np.eye(vh.shape[-2]), atol=30 * tol)
        np.testing.assert_allclose((u[b][:, :k] * s_got[b]) @ vh[b][:k], a[b], atol=30 * tol * scale)
    # Vectors of distinct nonzero singular values agree with LAPACK's up to sign.
    ur, vr = np.asarray(ref.U)[:2, :, :k], np.asarray(ref.Vh)[:2, :k]
    sign = np.sign(np.sum(u[:2, :, :k] * ur, axis=1, keepdims=True))
    np.testing.assert_allclose(u[:2, :, :k] * sign, ur, atol=100 * tol)
    np.testing.assert_allclose(vh[:2, :k] * np.swapaxes(sign, 1, 2), vr, atol=100 * tol)
    check_nvrtc(lambda m: qb.linalg.svd(m, full_matrices=full), x)


def test_linalg_bad_matrices_give_nan_as_the_cpu():
    bad = np.array([[[1.0, 2.0], [2.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]], [[np.nan, 0.0], [0.0, 1.0]]])
    assert_same(lambda m: [qb.linalg.cholesky(m), qb.linalg.slogdet(m)[0], qb.linalg.slogdet(m)[1],
                           qb.linalg.solve(m, qb.ones((3, 2, 1)))], qb.array(bad))


def test_large_matrices_are_not_lowered_yet():
    with pytest.raises(qb.UnsupportedOperationError, match="200x200.*cuSOLVER") as info:
        qb.jit(qb.linalg.cholesky, device="cuda").lower(qb.eye(200)).compile()
    assert info.value.op == "cholesky"


def test_host_calls_run_on_the_cpu_only():
    f = qb.jit(lambda x: qb.pure_callback(np.sin, qb.ShapeDtype((3,), qb.float64), x), device="cuda")
    with pytest.raises(qb.UnsupportedOperationError, match="host_call is not supported on the CUDA backend") as info:
        f.lower(qb.ones(3)).compile()
    assert info.value.op == "host_call"


def test_second_derivative_through_a_solve():
    f = lambda a, b: qb.sum(qb.linalg.solve(a + 3.0 * qb.eye(3), b) ** 2)
    a = qb.array(np.random.default_rng(0).normal(size=(3, 3)))
    b = qb.array(np.random.default_rng(1).normal(size=(3, 2)))
    assert_same(qb.hessian(f), a, b)


# ---------------------------------------------------------------------------------------
# Transforms, loops and the README examples

def test_special_functions_on_the_device():
    # compositions of core ops (quabla._special): the same programs on the device
    x = qb.array(np.linspace(-4.3, 9.7, 29))
    y = qb.array(np.linspace(-0.999, 0.999, 17))
    sp = qb.scipy.special
    assert_same(lambda v: (sp.gammaln(v), sp.digamma(v), sp.polygamma(2, v), sp.gamma(v)), x, rtol=1e-11)
    assert_same(lambda v: (sp.erfinv(v), sp.ndtri((v + 1.0) / 2.0)), y, rtol=1e-11)
    assert_same(qb.vmap(qb.grad(qb.grad(sp.gammaln))), x, rtol=1e-11)
    assert_same(qb.vmap(qb.grad(sp.erfinv)), y, rtol=1e-11)
    check_nvrtc(lambda v: sp.gammaln(v) + sp.erfinv(v / 10.0), x)


def test_hessian_and_nested_grad():
    f = lambda x: qb.sum(qb.tanh(x) ** 3 * qb.sin(x[::-1]))
    x = qb.array(np.linspace(-1, 1, 7))
    assert_same(qb.hessian(f), x)
    assert_same(qb.vmap(qb.grad(qb.grad(lambda s: qb.sin(s) * qb.exp(s)))), x)


def test_loops_on_the_device():
    def f(x):
        c, ys = qb.scan(lambda c, r: (qb.tanh(c + r), c * r), x[0], x)
        w = qb.while_loop(lambda s: s[0] < 10.0, lambda s: (s[0] + 1.0, s[1] * 1.1), (0.0, c))
        k = qb.fori_loop(0, 5, lambda i, v: v * 0.5 + i, ys)
        return qb.cond(qb.sum(k) > 0.0, lambda a: a * 2.0, lambda a: -a, k), w[1]
    x = qb.array(np.linspace(-1, 1, 12).reshape(4, 3))
    assert_same(f, x)
    assert_same(qb.grad(lambda v: qb.sum(f(v)[0])), x)
    check_nvrtc(f, x)


# Vmapped small loops run as one kernel, one thread per example (loop kernels), when their
# per-example bodies have a self-contained scalar form; otherwise from the host.

def _loop_kernels(fn, *args):
    return qb.jit(fn, device="cuda").lower(*args).compile().stats()["loop_kernels"]


def _pendulum(i, s):
    a = -qb.sin(s[0]) - 0.1 * s[1]
    return qb.stack([s[0] + 0.01 * s[1], s[1] + 0.01 * a])


def _newton_sqrt(x0, c):  # per-example trip counts differ
    return qb.while_loop(lambda s: qb.abs(s[0] * s[0] - c) > 1e-12,
                         lambda s: (s[0] - (s[0] * s[0] - c) / (2 * s[0]), s[1] + 1), (x0, qb.array(0)))


def _scan_with_xs(c0, xs, w):
    c, ys = qb.scan(lambda c, x: (c * w + qb.tanh(x), qb.exp(-c * c) + x), c0, xs, reverse=True)
    return c, ys


LOOP_CASES = {
    "fori_pendulum": (qb.vmap(lambda s0: qb.fori_loop(0, 150, _pendulum, s0)),
                      lambda r: (r.normal(size=(33, 2)),)),
    "newton_while": (qb.vmap(_newton_sqrt), lambda r: (np.ones(21), r.uniform(0.5, 40.0, 21))),
    "while_shared_const": (qb.vmap(_newton_sqrt, in_axes=(0, None)), lambda r: (r.uniform(1, 3, 9), np.array(7.0))),
    # batched xs ([batch, T] in, moved to [T, batch] around the loop), shared w, a reverse scan
    "scan_xs": (qb.vmap(_scan_with_xs, in_axes=(0, 0, None)),
                lambda r: (r.normal(size=(6, 2)), r.normal(size=(6, 5, 2)), np.array(0.7))),
    # only the carry is batched: the xs and the w are the same for every example
    "scan_shared_xs": (qb.vmap(_scan_with_xs, in_axes=(0, None, None)),
                       lambda r: (r.normal(size=(4, 3)), r.normal(size=(5, 3)), np.array(-0.4))),
    # a uniform trip count (the predicate reads only an unbatched carry)
    "while_uniform": (qb.vmap(lambda x: qb.while_loop(lambda s: s[0] < 12.0, lambda s: (s[0] + 1.0, qb.cos(s[1]) * 1.01),
                                                      (0.0, x))), lambda r: (r.normal(size=(8, 3)),)),
    "float32": (qb.vmap(lambda s0: qb.fori_loop(0, 40, _pendulum, s0)),
                lambda r: (r.normal(size=(16, 2)).astype(np.float32),)),
    "nested_vmap": (qb.vmap(qb.vmap(lambda s0: qb.fori_loop(0, 30, _pendulum, s0))),
                    lambda r: (r.normal(size=(5, 3, 2)),)),
}


@pytest.mark.parametrize("name", sorted(LOOP_CASES))
def test_vmapped_loops_run_as_one_kernel(name):
    fn, make = LOOP_CASES[name]
    args = [qb.array(a) for a in make(np.random.default_rng(len(name)))]
    f32 = args[0].dtype == qb.float32
    assert_same(fn, *args, rtol=1e-5 if f32 else 1e-12, atol=1e-6 if f32 else 1e-12)
    assert _loop_kernels(fn, *args) >= 1
    check_nvrtc(fn, *args)


def test_loop_kernels_fall_back_where_a_body_does_not_qualify(monkeypatch):
    # A matrix product in the body runs its kernel: the loop stays host-driven, same results.
    f = qb.vmap(lambda m, v: qb.fori_loop(0, 4, lambda i, x: qb.tanh(m @ x), v))
    args = qb.array(np.random.default_rng(3).normal(size=(3, 4, 4))), qb.array(np.ones((3, 4)))
    assert _loop_kernels(f, *args) == 0
    assert_same(f, *args)
    # A gradient through a vmapped scan: the transformed loop is not the one vmap recorded.
    loss = lambda s: qb.sum(LOOP_CASES["fori_pendulum"][0](s) ** 2)
    x = qb.array(np.random.default_rng(4).normal(size=(5, 2)))
    assert_same(qb.grad(loss), x)
    # Switched off: the same results from the host-driven loop.
    fn, make = LOOP_CASES["newton_while"]
    args = [qb.array(a) for a in make(np.random.default_rng(5))]
    monkeypatch.setenv("QUABLA_CUDA_LOOP_KERNELS", "0")
    assert _loop_kernels(fn, *args) == 0
    assert_same(fn, *args)


def test_a_long_while_loop_kernel_is_relaunched():
    # More iterations than one launch runs (kExampleWhileSteps = 16384): the kernel stops,
    # the host polls for Ctrl-C and launches it again on the carries it wrote.
    f = qb.vmap(lambda n: qb.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1.0, s[1] + 0.5 * s[0]), (0.0, 0.0)))
    n = qb.array([3.0, 20000.0, 40000.5, 0.0])
    assert _loop_kernels(f, n) == 1
    got = [np.asarray(v) for v in qb.jit(f, device="cuda")(n)]
    steps = np.ceil(np.asarray(n))
    close(got[0], steps)
    close(got[1], 0.25 * steps * (steps - 1))


def test_readme_pinn_trains_the_same_on_the_emulator():
    pinn_poisson = example("pinn_poisson")
    cpu = pinn_poisson.main(steps=200, figure=None, device="cpu")
    cuda = pinn_poisson.main(steps=200, figure=None, device="cuda")
    assert cuda == pytest.approx(cpu, rel=1e-9)
    params = pinn_poisson.init_params(qb.random.key(1))
    x = qb.array([(i + 1) / 33 for i in range(32)])
    step = qb.value_and_grad(pinn_poisson.loss)
    assert_same(step, params, x)
    check_nvrtc(step, params, x)


def test_readme_glance_loss_and_gradient():
    u_xx = qb.vmap(qb.grad(qb.grad(lambda x, w: qb.sin(w * x))), in_axes=(0, None))
    loss = lambda p, x: qb.mean((u_xx(x, p["w"]) + math.pi ** 2 * qb.sin(math.pi * x)) ** 2)
    args = ({"w": qb.array(2.5)}, qb.linspace(0.05, 0.95, 8))
    assert_same(qb.value_and_grad(loss), *args)
    check_nvrtc(qb.value_and_grad(loss), *args)


def test_float32_mlp_gradient():
    rng = np.random.default_rng(3)
    p = {"w1": qb.array(rng.normal(size=(2, 32)).astype("float32")), "w2": qb.array(rng.normal(size=(32, 1)).astype("float32"))}
    x = qb.array(rng.uniform(-1, 1, (500, 2)).astype("float32"))
    loss = lambda p, x: qb.mean((qb.tanh(x @ p["w1"]) @ p["w2"]) ** 2)
    assert_same(qb.value_and_grad(loss), p, x, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Devices and errors

def test_stats_count_device_launches():
    f = qb.jit(lambda x, y: qb.sum(qb.tanh(x) * y + 1.0, axis=1), device="cuda")
    x = qb.ones((64, 300))
    stats = f.lower(x, x).compile().stats()
    assert stats["fused_kernels"] == 1 and stats["kernels"] == 2  # the fused partial sums, then their total


def test_devices_without_a_gpu(monkeypatch):
    monkeypatch.delenv("QUABLA_CUDA_EMULATOR", raising=False)
    if qb._cuda.info()["gpu_count"]:
        pytest.skip("this machine has a GPU")
    assert qb.devices() == ["cpu"] and qb.devices("cpu") == ["cpu"]
    reason = qb._cuda.info()["reason"]
    assert reason and "." not in reason.rstrip(".")[-1:]
    with pytest.raises(RuntimeError, match="no CUDA device: " + reason[:20]):
        qb.devices("cuda")
    with pytest.raises(qb.UnsupportedOperationError, match="CUDA is not available") as info:
        qb.jit(lambda x: x, device="cuda:0")
    assert info.value.device == "cuda:0"
    with pytest.raises(ValueError, match="backend must be"):
        qb.devices("tpu")


@pytest.mark.skipif(ON_GPU, reason="the emulator's own behaviour")
def test_emulator_is_cuda_zero_only():
    assert qb.devices() == ["cpu", "cuda:0"]
    with pytest.raises(ValueError, match="cuda:0 only"):
        qb.jit(lambda x: x, device="cuda:1")
    assert qb.jit(lambda x: x + 1.0, device="cuda:0")(qb.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_compiled_program_reports_its_device():
    c = qb.jit(lambda x: x * 2.0, device="cuda").lower(qb.ones(3)).compile()
    assert ("cuda:0 (" in c._program.device) if ON_GPU else ("emulator" in c._program.device)
    assert qb.jit(lambda x: x * 2.0).lower(qb.ones(3)).compile()._program.device == "cpu"
    with pytest.raises(ValueError, match="compiled for the CPU"):
        qb.jit(lambda x: x * 2.0).lower(qb.ones(3)).compile()._program.cuda_source()


def test_zero_size_and_scalar_programs():
    assert_same(lambda x: [x * 2.0, qb.sum(x), qb.concat([x, x])], qb.zeros((0, 3)))
    assert_same(lambda a, b: a @ b, qb.zeros((3, 0)), qb.zeros((0, 4)))  # k = 0: zeros
    assert_same(lambda x: [x * 2.0, qb.exp(x), qb.reshape(x, (1, 1))], qb.array(1.5))


def test_nccl_loads_where_the_library_exists():
    info = qb.distributed.nccl_info()
    present = any(Path(d, "libnccl.so.2").exists() for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib"))
    if present:
        assert info["version"].count(".") == 2 and int(info["version"].split(".")[0]) >= 2, info
    else:
        assert info["version"] == "" and "libnccl.so.2" in info["reason"]


def test_nvrtc_reports_a_bad_source():
    if not _nvrtc_available():
        pytest.skip("no NVRTC")
    with pytest.raises(qb.QuablaError, match="NVRTC rejected"):
        qb._core.nvrtc_compile("extern \"C\" __global__ void k() { undefined_name(); }", "sm_90")


# ---------------------------------------------------------------------------------------
# Device arrays and the Trainer on a device

@pytest.mark.parametrize("value", [np.arange(6.0).reshape(2, 3), np.array([1, -2, 3], np.int32),
                                   np.array([True, False]), np.array(2.5, np.float32)])
def test_device_put_round_trip(value):
    d = qb.device_put(value, "cuda")
    assert isinstance(d, qb.DeviceArray) and d.device == "cuda:0"
    assert d.shape == value.shape and d.ndim == value.ndim and d.size == value.size
    assert np.asarray(d).dtype == value.dtype
    np.testing.assert_array_equal(np.asarray(d), value)
    np.testing.assert_array_equal(np.asarray(qb.device_put(d, "cpu")), value)
    assert isinstance(qb.device_put(d, "cpu"), qb.Array)
    assert d.tolist() == value.tolist()
    assert "device='cuda:0'" in repr(d) and repr(d).startswith("DeviceArray(")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_device_arrays_round_trip(dtype):
    z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j], dtype=dtype)
    d = qb.device_put(z, "cuda")
    assert d.dtype == np.dtype(dtype) and d.itemsize == np.dtype(dtype).itemsize
    np.testing.assert_array_equal(np.asarray(d), z)
    assert d.tolist() == z.tolist()
    close(np.asarray(d.real), z.real, 0, 0)
    close(np.asarray(d.imag), z.imag, 0, 0)
    close(np.asarray(d.conj()), z.conj(), 0, 0)


_Z = np.array([[0.3 + 0.2j, -1.5 + 2.0j, 4.0 - 0.5j], [1.0 - 1.0j, 0.5 + 0.25j, -2.0 + 3.0j]])
COMPLEX_PROGRAMS = {
    "elementwise": (lambda z: qb.exp(z) * z / (z - 2.0) + qb.conj(z) * 1j + qb.sqrt(z) - qb.log(z), _Z),
    "abs, parts": (lambda z: qb.abs(z) + qb.real(z) * qb.imag(z) + qb.angle(z), _Z),
    "trig": (lambda z: qb.sin(z) + qb.cosh(z) * qb.tanh(z) + z ** 3, _Z),
    "reductions": (lambda z: [qb.sum(z, axis=0), qb.mean(z), qb.prod(z, axis=1), qb.cumsum(z, axis=1)], _Z),
    "matmul": (lambda z: z @ qb.conj(z.T) + qb.einsum("ij,kj->ik", z, z), _Z),
    "movement": (lambda z: [z.T, z[:, ::-1], qb.concatenate([z, 2 * z]), qb.pad(z, 1), z.reshape(3, 2)], _Z),
    "real to complex": (lambda x: qb.real(qb.exp(1j * x) * (x + 2j)) + qb.abs(x * (1 - 1j)), _Z.real),
    "scan carry": (lambda z: qb.scan(lambda c, x: (c * x + 1j, qb.abs(c)), 1.0 + 0j, z[0]), _Z),
    "vmap": (lambda z: qb.vmap(lambda r: qb.sum(r * qb.conj(r)))(z), _Z),
    "grad": (lambda x: qb.grad(lambda r: qb.sum(qb.abs(qb.exp(1j * r) * (r + 2j) - r ** 2) ** 2))(x), _Z.real),
    "holomorphic grad": (lambda z: qb.grad(lambda w: qb.sum(w ** 3 * qb.exp(w)), holomorphic=True)(z), _Z),
    "complex64": (lambda z: qb.exp(z) * z + qb.abs(z), _Z.astype(np.complex64)),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_PROGRAMS))
def test_complex_programs_run_as_on_the_cpu(name):
    # lowered to real values before the device plan, as on the CPU (lower_complex.h)
    fn, z = COMPLEX_PROGRAMS[name]
    tol = 1e-5 if z.dtype == np.complex64 else 1e-12
    assert_same(fn, z, rtol=tol, atol=tol)
    check_nvrtc(fn, z)
    out = qb.jit(fn, device="cuda")(qb.device_put(z, "cuda"))
    ref = qb.jit(fn)(z)
    for g, r in zip(qb.tree.leaves(out), qb.tree.leaves(ref)):
        assert isinstance(g, qb.DeviceArray) and g.dtype == r.dtype
        close(np.asarray(g), np.asarray(r), tol, tol)


_U8 = np.array([[250, 3, 7], [1, 2, 255]], np.uint8)
NARROW_PROGRAMS = {
    "arithmetic": (lambda x: [(x * 3 + 7) >> 1, -x, ~x, x // 3, x % 7, x ^ (x << 2)], _U8),
    "reductions": (lambda x: [qb.sum(x, axis=0), qb.max(x), qb.cumsum(x, axis=1), x.T @ x], _U8),
    "conversions": (lambda x: [x.astype(qb.float32) / 2, (x.astype(qb.float64) * 1.7).astype(qb.uint8),
                               x.astype(qb.int8), x.astype(qb.uint32) * 20000000], _U8),
    "int8 int16": (lambda x: [x * 100 - 7, (x.astype(qb.int16) * 300) >> 3], _U8.astype(np.int8)),
    "uint32": (lambda x: [x * x, x // 7, x > 2 ** 31], _U8.astype(np.uint32) * np.uint32(16843009)),
    "loop and vmap": (lambda x: [qb.lax.fori_loop(0, 5, lambda i, c: c * 3 + 1, x),
                                 qb.vmap(lambda r: qb.sort(r) * 2)(x)], _U8),
}


@pytest.mark.parametrize("name", sorted(NARROW_PROGRAMS))
def test_narrow_integer_programs_run_as_on_the_cpu(name):
    # computed in int32 / int64 with a wrap after each op (lower_narrow.h), as on the CPU
    fn, x = NARROW_PROGRAMS[name]
    check_nvrtc(fn, x)
    d = qb.device_put(x, "cuda")
    assert d.dtype == np.dtype(x.dtype)
    out = qb.jit(fn, device="cuda")(d)
    ref = qb.jit(fn)(x)
    for g, r in zip(qb.tree.leaves(out), qb.tree.leaves(ref)):
        assert isinstance(g, qb.DeviceArray) and g.dtype == r.dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))


# Lengths: powers of two (radix-2 stages), 1, primes and composites (Bluestein), long ones.
FFT_LENGTHS = [1, 2, 3, 4, 5, 8, 12, 17, 64, 100, 255, 1024, 1000]


@pytest.mark.parametrize("n", FFT_LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fft_matches_the_cpu(n, dtype):
    # generated radix-2 / Bluestein kernels (fft_lowering.h) against the CPU's mixed radix
    rng = np.random.default_rng(n)
    x = rng.normal(size=(3, n)).astype(dtype)
    z = (x + 1j * rng.normal(size=(3, n))).astype(np.complex64 if dtype == "float32" else np.complex128)
    tol = 2e-6 if dtype == "float32" else 1e-12
    f = lambda z, x: [qb.fft.fft(z), qb.fft.ifft(z), qb.fft.rfft(x), qb.fft.irfft(qb.fft.rfft(x), n=n),
                      qb.fft.fft(x), qb.fft.ifft(x), qb.fft.hfft(z[:, : n // 2 + 1], n=n)]
    ref, got = both(f, z, x)
    for r, g in zip(ref, got):
        scale = max(np.max(np.abs(r)), 1.0)
        close(g, r, tol, tol * scale)
    want = np.fft.fft(z.astype(np.complex128))
    np.testing.assert_allclose(got[0], want, rtol=tol, atol=tol * max(np.max(np.abs(want)), 1.0))
    if n in (12, 1024):
        check_nvrtc(f, z, x)


def test_multidimensional_ffts_norms_and_axes():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6, 10))
    z = x + 1j * rng.normal(size=x.shape)
    f = lambda z, x: [qb.fft.fft2(z), qb.fft.ifftn(z, axes=(0, 2)), qb.fft.rfft2(x), qb.fft.irfftn(qb.fft.rfftn(x), x.shape),
                      qb.fft.fft(z, axis=1, norm="ortho"), qb.fft.fftshift(qb.fft.fft(x, n=7, axis=0)),
                      qb.fft.rfft(x, n=16, norm="forward")]
    assert_same(f, z, x)
    np.testing.assert_allclose(np.asarray(qb.jit(qb.fft.rfft2, device="cuda")(x)), np.fft.rfft2(x), rtol=1e-12, atol=1e-12)


def test_fft_gradients_vmap_and_device_arrays():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 24))
    loss = lambda v: qb.sum(qb.abs(qb.fft.rfft(qb.sin(v))) ** 2) + qb.sum(qb.real(qb.fft.ifft(v * (1 + 2j))) ** 3)
    assert_same(qb.grad(loss), x)
    assert_same(qb.vmap(qb.grad(loss)), qb.stack([x, 2 * x]))
    assert_same(lambda v: qb.jvp(lambda u: qb.fft.fft(u * u), (v,), (qb.ones_like(v),))[1], x)
    d = qb.device_put(x + 0j, "cuda")
    out = qb.fft.fft(d)
    assert isinstance(out, qb.DeviceArray) and out.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(out), np.fft.fft(x), rtol=1e-12, atol=1e-12)


def test_a_fourier_layer_trains_as_on_the_cpu():
    # the spectral convolution of a Fourier neural operator: rfft, keep the low modes, mix
    # them with complex weights, irfft; an Adam step's loss and gradients match the CPU's
    rng = np.random.default_rng(6)
    u = rng.normal(size=(8, 2, 64))  # batch, channels, grid
    target = np.roll(u, 3, axis=-1)
    params = {"wr": rng.normal(size=(2, 2, 12)) * 0.3, "wi": rng.normal(size=(2, 2, 12)) * 0.3}

    def layer(p, v):
        vh = qb.fft.rfft(v, axis=-1)[..., :12]
        w = qb.lax.complex(p["wr"], p["wi"])
        mixed = qb.einsum("bim,iom->bom", vh, w)
        return qb.fft.irfft(mixed, n=64, axis=-1)

    loss = lambda p, v, t: qb.mean((layer(p, v) - t) ** 2)
    step = lambda p, v, t: qb.value_and_grad(loss)(p, v, t)
    assert_same(step, params, u, target)
    check_nvrtc(step, params, u, target)


def test_complex_ops_without_a_device_kernel_raise_clearly():
    z = np.array([1 + 2j, 3 - 1j])
    m = np.array([[2.0 + 1j, 0.5], [0.25j, 3.0]])
    for fn, arg in ((qb.linalg.inv, m), (qb.linalg.eigvals, m.real), (qb.linalg.cholesky, m)):
        with pytest.raises(qb.UnsupportedOperationError, match="of complex values is not supported on the CUDA"):
            qb.jit(fn, device="cuda:0")(arg)
    # a real matrix with a complex right-hand side is real solves: it runs
    assert_same(lambda a, b: qb.linalg.solve(a, b), m.real + 2 * np.eye(2), z)


def test_device_put_of_a_pytree_keeps_its_structure():
    t = qb.device_put({"w": np.ones((2, 2)), "b": [1.0, np.zeros(3)]}, "cuda")
    assert isinstance(t["w"], qb.DeviceArray) and isinstance(t["b"], list) and isinstance(t["b"][0], qb.DeviceArray)
    back = qb.device_put(t, "cpu")
    assert isinstance(back["b"][1], qb.Array) and back["b"][1].tolist() == [0.0, 0.0, 0.0]


def test_jit_keeps_device_arrays_on_the_device():
    f = qb.jit(lambda a, b: (qb.sin(a) * b, qb.sum(a)), device="cuda")
    x = np.linspace(0, 1, 6).reshape(2, 3)
    d = qb.device_put(x, "cuda")
    y, s = f(d, d)
    assert isinstance(y, qb.DeviceArray) and isinstance(s, qb.DeviceArray)
    np.testing.assert_allclose(np.asarray(y), np.sin(x) * x, rtol=1e-15)
    assert s.item() == pytest.approx(x.sum(), rel=1e-15)
    y2, _ = f(qb.array(x), qb.array(x))  # host arguments: copied in, host results
    assert isinstance(y2, qb.Array)
    tree = qb.jit(lambda p: {"w": p["w"] * 2.0}, device="cuda")({"w": d})
    assert isinstance(tree["w"], qb.DeviceArray)


def test_device_arrays_refuse_host_work():
    d = qb.device_put(np.ones(3), "cuda")
    f = qb.jit(lambda a, b: a + b, device="cuda")
    with pytest.raises(ValueError, match="argument 1 is a host array"):
        f(d, qb.ones(3))
    with pytest.raises(ValueError, match="not copied implicitly"):
        d + qb.ones(3)
    with pytest.raises(ValueError, match="not copied implicitly"):
        qb.add(d, np.ones(3))
    with pytest.raises(TypeError, match="on cuda:0 where host arrays are expected.*to_host"):
        qb.ones(3) + d  # the host array's operator: no implicit copy either
    with pytest.raises(TypeError, match="compiled for the CPU"):
        qb.jit(lambda a: a * 2.0, device="cpu")(d)
    with pytest.raises(ValueError, match="device must be"):
        qb.device_put(np.ones(3), "gpu")


# ---------------------------------------------------------------------------------------
# Eager operations on device arrays: each runs as a program compiled for the array's device

X = np.linspace(-1.0, 2.0, 12).reshape(3, 4)
Y = np.cos(np.arange(12.0)).reshape(3, 4)
S = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

EAGER = {
    "add": lambda x, y, s: x + y,
    "radd_scalar": lambda x, y, s: 2.0 + x,
    "rsub_int": lambda x, y, s: 3 - x,
    "mul_div_pow": lambda x, y, s: (x * y) / (1.5 + y * y) ** 2,
    "neg_abs": lambda x, y, s: abs(-x),
    "compare": lambda x, y, s: x > y,
    "eq": lambda x, y, s: x == x,
    "functions": lambda x, y, s: qb.sin(x) + qb.exp(y) * qb.tanh(x),
    "where": lambda x, y, s: qb.where(x > 0.5, x, y),
    "maximum": lambda x, y, s: qb.maximum(x, 0.0),
    "index": lambda x, y, s: x[1],
    "slices": lambda x, y, s: x[::2, 1:-1],
    "newaxis": lambda x, y, s: x[..., None, 0],
    "transpose": lambda x, y, s: x.T,
    "reshape": lambda x, y, s: x.reshape(4, 3),
    "sum_axis": lambda x, y, s: x.sum(axis=0),
    "mean": lambda x, y, s: (x * x).mean(),
    "std_keepdims": lambda x, y, s: qb.std(x, axis=1, keepdims=True),
    "astype": lambda x, y, s: x.astype(qb.float32),
    "matmul": lambda x, y, s: x @ y.T,
    "stack": lambda x, y, s: qb.stack([x, y], axis=1),
    "concatenate": lambda x, y, s: qb.concatenate([x, y]),
    "cumsum": lambda x, y, s: qb.cumsum(x, axis=1),
    "sort": lambda x, y, s: qb.sort(y, axis=1),
    "argmax": lambda x, y, s: qb.argmax(y, axis=0),
    "at_set": lambda x, y, s: x.at[0, 1].set(10.0),
    "at_add": lambda x, y, s: x.at[:, 0].add(y[:, 1]),
    "zeros_like": lambda x, y, s: qb.zeros_like(x) + qb.full_like(y, 2.0),
    "moveaxis": lambda x, y, s: qb.moveaxis(x[None], 0, 2),
    "relu": lambda x, y, s: qb.nn.relu(x - 0.5),
    "norm": lambda x, y, s: qb.linalg.norm(x),
    "solve": lambda x, y, s: qb.linalg.solve(s, x[:, :2]),
    "cholesky": lambda x, y, s: qb.linalg.cholesky(s),
    "clip": lambda x, y, s: qb.clip(x, -0.5, 0.5),
}


@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_operations_on_device_arrays(name):
    fn = EAGER[name]
    want = fn(qb.array(X), qb.array(Y), qb.array(S))
    got = fn(*(qb.device_put(v, "cuda") for v in (X, Y, S)))
    assert isinstance(got, qb.DeviceArray) and got.device == "cuda:0"
    close(np.asarray(got), np.asarray(want))


def test_eager_device_results_compose_and_compile_once():
    d = qb.device_put(X, "cuda")
    from quabla import _device_eager
    y = qb.exp(d) - 1.0
    size = _device_eager.cache_size()
    for _ in range(3):
        y = qb.exp(d) - 1.0  # the same operations again: no new programs
    assert _device_eager.cache_size() == size
    close(np.asarray(y), np.expm1(X), rtol=1e-13)
    parts = list(d)  # iteration: one program for the rows
    assert len(parts) == 3 and all(isinstance(p, qb.DeviceArray) for p in parts)
    close(np.asarray(parts[2]), X[2])
    assert [p.shape for p in qb.split(d, 2, axis=1)] == [(3, 2), (3, 2)]
    assert qb.asarray(d) is d and qb.asarray(d, dtype=qb.float32).dtype == qb.float32
    assert d.nbytes == X.nbytes and float(d.sum()) == pytest.approx(X.sum(), rel=1e-14)


def test_value_dependent_shapes_on_device_arrays_say_why():
    d = qb.device_put(X, "cuda")
    with pytest.raises(IndexError, match=r"boolean mask.*runs as a program compiled for that device.*to_host"):
        d[d > 0.5]
    with pytest.raises(ValueError, match=r"size= is required.*qb\.nonzero on arrays on cuda:0.*to_host"):
        qb.nonzero(d > 0.5)
    assert qb.nonzero(d.ravel() > 1.5, size=2)[0].tolist() == [10, 11]  # static size: fine


def test_transforms_of_device_arrays_run_on_the_device():
    f = lambda w, x: qb.sum(qb.sin(w * x) ** 2)
    u_xx = qb.vmap(qb.grad(qb.grad(lambda t, c: qb.sin(c * t))), in_axes=(0, None))
    w, x, c = np.array([0.5, 1.5, -2.0]), np.linspace(0.0, 1.0, 3), np.array(1.7)
    cases = [(qb.grad(f), (w, x)), (qb.grad(f, argnums=(0, 1)), (w, x)), (qb.value_and_grad(f), (w, x)),
             (u_xx, (x, c)), (lambda a, b: qb.jvp(lambda u: qb.tanh(u * b), (a,), (b,)), (w, x)),
             (qb.jit(qb.grad(f)), (w, x))]  # jit without device=: runs where its arguments are
    for transform, args in cases:
        want = qb.tree.leaves(transform(*(qb.array(a) for a in args)))
        got = qb.tree.leaves(transform(*(qb.device_put(a, "cuda") for a in args)))
        assert len(got) == len(want) and all(isinstance(g, qb.DeviceArray) for g in got)
        for g, r in zip(got, want):
            close(np.asarray(g), np.asarray(r))


def test_device_arrays_closed_over_are_constants():
    # jax.grad(lambda p: loss(p, data))(params) with data on the device: the closed-over
    # array is a constant of the traced program (copied once per trace), on either side.
    data = qb.device_put(X, "cuda")
    p = qb.device_put(np.array([0.5, -1.0, 2.0, 0.25]), "cuda")
    loss = lambda q: qb.sum((data @ q - 1.0) ** 2) + qb.sum(q * data[0])
    g = qb.grad(loss)(p)
    want = 2 * X.T @ (X @ np.asarray(p) - 1.0) + X[0]
    assert isinstance(g, qb.DeviceArray)
    close(np.asarray(g), want, rtol=1e-13)
    close(np.asarray(qb.jit(lambda q: data[1] * q)(p)), X[1] * np.asarray(p))
    close(np.asarray(qb.jit(lambda h: h + data)(qb.ones((3, 4)))), X + 1.0)  # a CPU program


def test_device_put_without_a_gpu(monkeypatch):
    monkeypatch.delenv("QUABLA_CUDA_EMULATOR", raising=False)
    if qb._cuda.info()["gpu_count"]:
        pytest.skip("this machine has a GPU")
    with pytest.raises(qb.UnsupportedOperationError, match="CUDA is not available") as info:
        qb.device_put(np.ones(3), "cuda")
    assert info.value.op == "device_put"


def test_trainer_on_the_device_matches_the_cpu():
    u_xx = qb.vmap(qb.grad(qb.grad(lambda x, w: qb.sin(w * x))), in_axes=(0, None))
    loss = lambda p, x: qb.mean((u_xx(x, p["w"]) + math.pi ** 2 * qb.sin(math.pi * x)) ** 2)
    x = qb.linspace(0.05, 0.95, 8)
    runs = {}
    for device in ("cpu", "cuda"):
        t = qb.Trainer(loss, {"w": qb.array(2.5)}, qb.optim.Adam(learning_rate=0.05), x, device=device)
        runs[device] = (t.fit(100), t.params["w"].item(), t)
    assert runs["cuda"][1] == pytest.approx(runs["cpu"][1], rel=1e-12)
    np.testing.assert_allclose(runs["cuda"][0], runs["cpu"][0], rtol=1e-9)
    trainer = runs["cuda"][2]
    assert all(isinstance(v, qb.DeviceArray) for v in trainer._p_leaves + trainer._s_leaves)
    assert isinstance(trainer.params["w"], qb.Array) and isinstance(trainer.step(), qb.DeviceArray)


def test_device_arrays_have_every_public_array_method():
    # installed after every Array method is (some come from modules imported after quabla._cuda)
    missing = sorted(n for n in dir(qb.Array) if not n.startswith("_") and not hasattr(qb.DeviceArray, n))
    assert not missing, missing
    x = qb.device_put(np.array([3.0, 1.0, 2.0]), "cuda")
    assert int(x.argmax()) == 0 and x.sort().tolist() == [1.0, 2.0, 3.0] and x.copy().tolist() == [3.0, 1.0, 2.0]
    assert isinstance(x.argsort(), qb.DeviceArray) and x.argsort().tolist() == [1, 2, 0]
    assert x.block_until_ready() is x and x.itemsize == 8


def test_traced_random_draws_give_the_cpu_bits_through_the_expanded_threefry():
    # CUDA runs ops.def's threefry as int32 rounds (expand_threefry.h), in loop bodies too
    def draws(k):
        u = qb.random.uniform(k, (5, 3))
        s = qb.fori_loop(0, 3, lambda i, c: c + qb.random.normal(qb.random.fold_in(k, i), (4,)), qb.zeros(4))
        return u, s, qb.random.bits(k, (7,)), qb.vmap(lambda kk: qb.random.uniform(kk, (2,)))(qb.random.split(k, 3))
    key = qb.random.key(5)
    ref, got = both(draws, key)
    for r, g in zip(ref, got):
        close(g, r, 1e-12, 1e-12)
    check_nvrtc(draws, key)
