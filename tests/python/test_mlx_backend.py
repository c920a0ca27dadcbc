"""The MLX backend (jit(device="mlx")) against the CPU backend, on MLX's CPU build for
Linux (pip install mlx[cpu]; scripts/mlx-tests.sh builds Quabla with it and runs this file).

float32 agrees to 1e-5 (relative and absolute). float64 runs in float64 on MLX's CPU, but
its transcendental functions are accurate to about float32's precision there, so float64
is compared to 1e-6. Without the MLX backend in this build these tests skip, unless
QUABLA_REQUIRE_MLX=1, which makes them fail.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import quabla as qb
from examples_helper import example
from ad_op_table import CASES

BUILT = qb._core.mlx_info()["available"]

if not BUILT and os.environ.get("QUABLA_REQUIRE_MLX") == "1":
    raise RuntimeError(f"QUABLA_REQUIRE_MLX=1 but this build has no MLX backend: {qb._core.mlx_info()['reason']}")

if not BUILT:
    pytest.skip("this build has no MLX backend (scripts/mlx-tests.sh builds one and runs this file)",
                allow_module_level=True)

TOL = {"float32": 1e-5, "float64": 1e-6}


def results(fn, args, device=None):
    return [np.asarray(v) for v in qb.tree.leaves(qb.jit(fn, device=device)(*args))]


def assert_same(fn, *args, dtype="float32", tol=None):
    tol = TOL[dtype] if tol is None else tol
    ref, got = results(fn, args), results(fn, args, "mlx")
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        assert r.dtype == g.dtype and r.shape == g.shape
        if r.dtype.kind in "biu":
            np.testing.assert_array_equal(g, r)
        else:
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol, equal_nan=True)


def cast(args, dtype):
    return [qb.asarray(np.asarray(a).astype(dtype)) for a in args]


def _cpu_runs(fn, args):
    try:
        qb.jit(fn)(*args)
        return True
    except (TypeError, ValueError):
        return False  # a case that mixes in float64 constants refuses float32 arguments


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [c for c in CASES if "mlx" in c.runs_on], ids=repr)
def test_op_table(case, dtype):
    args = cast(case.args(), dtype)
    if not _cpu_runs(case.fn, args):
        pytest.skip("the case needs float64 arguments")
    assert_same(case.fn, *args, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [c for c in CASES if not c.forward_only and "mlx" in c.runs_on], ids=repr)
def test_op_table_gradients(case, dtype):
    args = cast(case.args(salt=1), dtype)
    f = qb.grad(lambda *a: qb.sum(qb.sin(case.fn(*a))), argnums=tuple(range(len(args))))
    if not _cpu_runs(f, args):
        pytest.skip("the case needs float64 arguments")
    # float64: derivatives amplify MLX's float32-accurate float64 math (module docstring).
    assert_same(f, *args, dtype=dtype, tol=None if dtype == "float32" else 1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [c for c in CASES if not c.reverse_only and "mlx" in c.runs_on], ids=repr)
def test_op_table_vmap_and_jvp(case, dtype):
    args = cast(case.args(salt=2), dtype)
    batched = [qb.stack([a, a * 0.5]) for a in args]
    if not _cpu_runs(qb.vmap(case.fn), batched):
        pytest.skip("the case needs float64 arguments")
    assert_same(qb.vmap(case.fn), *batched, dtype=dtype)
    tangents = [qb.ones_like(a) for a in args]
    assert_same(lambda *a: qb.jvp(case.fn, a, tangents)[1], *args, dtype=dtype,
                tol=None if dtype == "float32" else 1e-5)


def test_hessian_and_nested_derivatives():
    f = lambda x: qb.sum(qb.tanh(x) ** 3 * qb.sin(x[::-1]))
    x = qb.array(np.linspace(-1, 1, 7).astype(np.float32))
    assert_same(qb.hessian(f), x)
    assert_same(qb.vmap(qb.grad(qb.grad(lambda s: qb.sin(s) * qb.exp(s)))), x)


def test_host_calls_run_on_the_cpu_only():
    f = qb.jit(lambda x: qb.pure_callback(np.sin, qb.ShapeDtype((3,), qb.float32), x), device="mlx")
    with pytest.raises(qb.UnsupportedOperationError, match="host_call") as info:
        f(qb.ones(3, dtype=qb.float32))
    assert info.value.op == "host_call"


def test_integer_edges():
    a = np.array([0, 1, -1, 7, -7, -2**31, 2**31 - 1, 3, -8, 100], np.int32)
    b = np.array([0, -1, 0, 2, -2, -1, 1, 40, 3, -3], np.int32)
    f = lambda p, q: [p + q, p * q, p // q, p % q, qb.fmod(p, q), p << q, p >> q, qb.power(p, q), -p, qb.abs(p)]
    assert_same(f, qb.array(a), qb.array(b))
    x = qb.array([np.nan, np.inf, -np.inf, 3.7, -3.7, 3e9, -3e9, 0.0], dtype=qb.float32)
    assert_same(lambda v: [v.astype(qb.int32), v.astype(qb.int64), v.astype(qb.bool_)], x)


def test_sorting_nan_order_and_ties():
    x = np.array([[3.0, np.nan, 1.0, 3.0, -2.0, 1.0, np.nan, 0.0] * 5], np.float32)
    assert_same(lambda v: [qb.argsort(v, axis=1), qb.argsort(v, axis=1, descending=True), qb.sort(v, axis=1)],
                qb.array(x))


def test_loops_and_cond():
    def f(x):
        c, ys = qb.scan(lambda c, r: (qb.tanh(c + r), c * r), x[0], x)
        w = qb.while_loop(lambda s: s[0] < 10.0, lambda s: (s[0] + 1.0, s[1] * 1.1), (0.0, c))
        k = qb.fori_loop(0, 5, lambda i, v: v * 0.5 + i, ys)
        return qb.cond(qb.sum(k) > 0.0, lambda a: a * 2.0, lambda a: -a, k), w[1]
    x = qb.array(np.linspace(-1, 1, 12).reshape(4, 3).astype(np.float32))
    assert_same(f, x)
    assert_same(qb.grad(lambda v: qb.sum(f(v)[0])), x)


def test_compiled_unless_regions():
    x = qb.ones(3, dtype=qb.float32)
    plain = qb.jit(lambda v: qb.sin(v) * 2.0, device="mlx").lower(x).compile()._program
    loop = qb.jit(lambda v: qb.fori_loop(0, 3, lambda i, c: c * 2.0, v), device="mlx").lower(x).compile()._program
    assert plain.device == "mlx" and plain.mlx_compiled and not loop.mlx_compiled


def test_readme_pinn_on_mlx():
    pinn_poisson = example("pinn_poisson")
    cpu = pinn_poisson.main(steps=300, figure=None, device="cpu")
    mlx = pinn_poisson.main(steps=300, figure=None, device="mlx")
    assert mlx == pytest.approx(cpu, rel=1e-3)


def test_complex_values_stay_on_the_cpu_with_a_clear_error():
    z = qb.array([1 + 2j, 3 - 1j], dtype=qb.complex64)
    with pytest.raises(TypeError, match="complex arrays .* are not supported on MLX yet"):
        qb.device_put(z, "mlx")
    with pytest.raises(qb.UnsupportedOperationError, match="complex numbers are not supported on the MLX backend yet"):
        qb.jit(lambda x: qb.real(qb.exp(1j * x)), device="mlx")(qb.array([0.5, 1.0], dtype=qb.float32))


def test_narrow_integers_stay_on_the_cpu_with_a_clear_error():
    u = qb.asarray(np.array([1, 200], np.uint8))
    with pytest.raises(TypeError, match="uint8 arrays are not supported on MLX yet"):
        qb.device_put(u, "mlx")
    with pytest.raises(qb.UnsupportedOperationError, match="uint16 and uint32 are not supported on the MLX backend"):
        qb.jit(lambda x: (x * 2.0).astype(qb.uint8).astype(qb.float32), device="mlx")(qb.array([0.5, 1.0], dtype=qb.float32))


def test_mlx_arrays_stay_in_mlx():
    x = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    d = qb.device_put(x, "mlx")
    assert isinstance(d, qb.DeviceArray) and d.device == "mlx" and d.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(d), x)
    f = qb.jit(lambda a, b: (qb.sin(a) * b, qb.sum(a)), device="mlx")
    y, s = f(d, d)
    assert isinstance(y, qb.DeviceArray) and y.device == "mlx"
    np.testing.assert_allclose(np.asarray(y), np.sin(x) * x, rtol=1e-6)
    assert isinstance(f(qb.array(x), qb.array(x))[0], qb.Array)  # host in, host out
    with pytest.raises(ValueError, match="argument 1 is a host array"):
        f(d, qb.array(x))
    with pytest.raises(ValueError, match="not copied implicitly"):
        qb.sin(d) + qb.array(x)
    with pytest.raises(TypeError, match="compiled for the CPU"):
        qb.jit(lambda a: a * 2.0, device="cpu")(d)
    assert isinstance(qb.device_put(d, "cpu"), qb.Array)


def test_eager_operations_on_mlx_arrays():
    # Each eager operation on MLX arrays runs as a program compiled for MLX (MLX arrays out);
    # transforms and jit without device= follow the arrays there too.
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(3, 4)
    d = qb.device_put(x, "mlx")
    cases = [
        (lambda a: (a * 2.0 - 1.0) / (1.0 + a * a), lambda a: (a * 2 - 1) / (1 + a * a)),
        (lambda a: qb.sin(a).sum(axis=0), lambda a: np.sin(a).sum(axis=0)),
        (lambda a: a[1:, ::2].T, lambda a: a[1:, ::2].T),
        (lambda a: qb.where(a > 0.5, a, 0.0), lambda a: np.where(a > 0.5, a, 0)),
        (lambda a: a.at[0, 0].set(5.0), lambda a: np.where(np.arange(12).reshape(3, 4) == 0, 5.0, a)),
        (lambda a: qb.argmax(a, axis=1), lambda a: np.argmax(a, axis=1)),
        (lambda a: qb.linalg.norm(a), lambda a: np.linalg.norm(a)),
        (qb.grad(lambda a: qb.sum(qb.sin(a) ** 2)), lambda a: 2 * np.sin(a) * np.cos(a)),
        (qb.jit(lambda a: qb.exp(a) @ a.T), lambda a: np.exp(a) @ a.T),
    ]
    for fn, ref in cases:
        got = fn(d)
        assert isinstance(got, qb.DeviceArray) and got.device == "mlx"
        np.testing.assert_allclose(np.asarray(got), ref(x), rtol=2e-6, atol=2e-6)


def test_special_functions_on_mlx():
    x = np.linspace(0.3, 9.7, 19).astype(np.float32)
    y = np.linspace(-0.99, 0.99, 13).astype(np.float32)
    sp = qb.scipy.special
    for fn, arg in ((sp.gammaln, x), (sp.digamma, x), (sp.erfinv, y), (qb.grad(lambda v: qb.sum(sp.gammaln(v))), x)):
        want = np.asarray(qb.jit(fn)(qb.array(arg)))
        got = np.asarray(qb.jit(fn, device="mlx")(qb.array(arg)))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_trainer_on_mlx():
    u_xx = qb.vmap(qb.grad(qb.grad(lambda x, w: qb.sin(w * x))), in_axes=(0, None))
    loss = lambda p, x: qb.mean((u_xx(x, p["w"]) + math.pi ** 2 * qb.sin(math.pi * x)) ** 2)
    x = qb.linspace(0.05, 0.95, 8, dtype=qb.float32)
    ws = {}
    for device in ("cpu", "mlx"):
        t = qb.Trainer(loss, {"w": qb.array(2.5, dtype=qb.float32)}, qb.optim.Adam(learning_rate=0.05), x, device=device)
        t.fit(300)
        ws[device] = t.params["w"].item()
        if device == "mlx":  # parameters and Adam state stayed MLX arrays between steps
            assert all(isinstance(v, qb.DeviceArray) and v.device == "mlx" for v in t._p_leaves + t._s_leaves)
    assert ws["mlx"] == pytest.approx(ws["cpu"], rel=1e-4) and ws["mlx"] == pytest.approx(math.pi, rel=1e-4)


def test_devices():
    assert "mlx" in qb.devices() and qb.devices("mlx") == ["mlx"]
