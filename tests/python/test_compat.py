"""Code written for Quabla v0.1 runs (docs/migration.md): the compiler facade and the seed
README's Quickstart block, every name of the v0.1 name mapping (value, container, warning
once, error type), quabla.legacy's 2D API, and the v0.1 call forms."""
from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import quabla as qb
from quabla import legacy

NP = np.asarray

# The 132 names of v0.1's dir(quabla), by status.
DEPRECATED = [
    'Adam', 'TensorBatchCudaJitFunction', 'TensorBatchCudaValueAndGradFunction', 'TensorBatchJitFunction',
    'TensorBatchMlxValueAndGradFunction', 'TensorBatchValueAndGradFunction', 'TensorCondFunction',
    'TensorCondJvpFunction', 'TensorCondValueAndGradFunction', 'TensorCudaValueAndGradFunction',
    'TensorGradScalarFunction', 'TensorHessianScalarFunction', 'TensorHvpScalarFunction', 'TensorJacobianFunction',
    'TensorJitFunction', 'TensorJvpFunction', 'TensorMlxValueAndGradFunction', 'TensorTraceGraph', 'TensorTraceResult',
    'TensorValueAndGradFunction', 'TensorVjpFunction', 'TensorVmapCudaFunction', 'TensorVmapCudaHvpScalarFunction',
    'TensorVmapCudaJvpFunction', 'TensorVmapCudaVjpFunction', 'TensorVmapFunction', 'TensorVmapHvpScalarFunction',
    'TensorVmapJvpFunction', 'TensorVmapMlxFunction', 'TensorVmapMlxJvpFunction', 'TensorVmapMlxVjpFunction',
    'TensorVmapVjpFunction', 'cuda_adam_loss_optimizer', 'cuda_adam_optimizer', 'cuda_adam_step',
    'cuda_adam_vjp_optimizer', 'mlx_adam_loss_optimizer', 'quabla', 'sum_gradients', 'tensor_cond', 'tensor_cond_fn',
    'tensor_cond_jvp_fn', 'tensor_cond_value_and_grad_fn', 'tensor_fori_loop', 'tensor_fori_loop_region',
    'tensor_grad_scalar_fn', 'tensor_hessian_scalar_fn', 'tensor_hvp_scalar_fn', 'tensor_jacobian_fn',
    'tensor_jit_batch_cuda_fn', 'tensor_jit_batch_fn', 'tensor_jit_cuda_fn', 'tensor_jit_fn', 'tensor_jvp_fn',
    'tensor_scan', 'tensor_scan_region', 'tensor_value_and_grad_batch_cuda_fn', 'tensor_value_and_grad_batch_fn',
    'tensor_value_and_grad_batch_mlx_fn', 'tensor_value_and_grad_cuda_fn', 'tensor_value_and_grad_data_parallel_cuda_fn',
    'tensor_value_and_grad_fn', 'tensor_value_and_grad_mlx_fn', 'tensor_vjp_fn', 'tensor_vmap_cuda_fn',
    'tensor_vmap_fn', 'tensor_vmap_hvp_scalar_cuda_fn', 'tensor_vmap_hvp_scalar_fn', 'tensor_vmap_jvp_cuda_fn',
    'tensor_vmap_jvp_fn', 'tensor_vmap_jvp_mlx_fn', 'tensor_vmap_mlx_fn', 'tensor_vmap_vjp_cuda_fn',
    'tensor_vmap_vjp_fn', 'tensor_vmap_vjp_mlx_fn', 'trace_tensor']
ADVANCED = ['Compiler', 'Executable', 'Program', 'TensorCpuExecutionPlan', 'TensorCudaAdamOptimizer',
            'TensorCudaExecutionPlan', 'TensorMlxAdamOptimizer', 'TensorMlxExecutionPlan']
LEGACY = ['CpuExecutionPlan', 'GradFunction', 'GradScalarFunction', 'GradScalarTransform', 'JacobianFunction',
          'JacobiansFunction', 'JitFunction', 'JitTransform', 'JvpFunction', 'Matrix', 'TraceGraph', 'TraceMatrix',
          'TraceResult', 'ValueAndGradFunction', 'VjpFunction', 'grad_fn', 'grad_scalar', 'grad_scalar_fn',
          'jacobian_fn', 'jacobians_fn', 'jvp_fn', 'trace', 'value_and_grad_fn', 'vjp_fn']
CORE = ['Tensor', 'TensorView', 'TraceTensor', 'bool_', 'concat', 'dtype', 'einsum', 'equal', 'float32', 'float64',
        'greater', 'greater_equal', 'isfinite', 'isnan', 'less', 'less_equal', 'logical_and', 'logical_not',
        'logical_or', 'not_equal', 'stack', 'where', 'grad', 'jit']
DEVICE = [n for n in DEPRECATED if ("cuda" in n or "mlx" in n) and not n[0].isupper()]


def _run(code: str, *flags) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code)], capture_output=True, text=True)


def test_the_mapping_has_all_132_names():
    assert len(DEPRECATED) == 76 and len(ADVANCED) == 8 and len(LEGACY) == 24 and len(CORE) == 24
    assert len(set(DEPRECATED + ADVANCED + LEGACY + CORE)) == 132


# ---- warnings -----------------------------------------------------------------------------


def test_every_migrated_name_warns_once_naming_its_replacement():
    code = f"""
    import warnings
    import quabla as qb
    names = {DEPRECATED + [n for n in LEGACY if n != 'trace']!r}
    for n in names:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            obj = getattr(qb, n)
            again = getattr(qb, n)
        assert obj is again, n
        msgs = [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]
        assert len(msgs) == 1, (n, msgs)
        assert msgs[0].startswith(f"quabla.{{n}} is deprecated; use ") and "remains available through 0.x" in msgs[0], msgs
    print("ok")
    """
    out = _run(code)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_documented_warning_text():
    out = _run("import quabla as qb\nqb.tensor_jit_fn", "-W", "always::DeprecationWarning")
    assert "DeprecationWarning: quabla.tensor_jit_fn is deprecated; use qb.jit(f). The old name remains available " \
           "through 0.x." in out.stderr


def test_star_import_binds_the_old_names_silently():
    out = _run("""
    from quabla import *
    print(tensor_jit_fn.__name__, Matrix.__name__, Adam.__name__, callable(sum_gradients))
    """, "-W", "error::DeprecationWarning")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["tensor_jit_fn", "Matrix", "Adam", "True"]


@pytest.mark.parametrize("name", CORE + ADVANCED)
def test_core_and_advanced_names_never_warn(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert getattr(qb, name) is not None


@pytest.mark.parametrize("name", [n for n in LEGACY if n != "trace"] + ["trace", "grad", "jit", "where", "concat"])
def test_legacy_module_has_the_2d_names_without_warnings(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert getattr(legacy, name) is not None
    if name in LEGACY and name != "trace":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert getattr(qb, name) is getattr(legacy, name)


def test_unknown_attributes_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'tensor_nonexistent_fn'"):
        qb.tensor_nonexistent_fn
    assert "tensor_jit_fn" in dir(qb) and "Matrix" in dir(qb)


# ---- the compiler facade and the README Quickstart --------------------------------------

# The Quickstart's compiler-facade block is run from the README itself, after the blocks
# before it (tests/python/test_readme.py), and must print the product description's cpu line.


def _program():
    f = lambda x, w: qb.sum(qb.sin(x * w) ** 2)
    return qb.Compiler().trace(f, [("x", [3]), ("w", [3], qb.float64)]), f


def test_program_transforms_match_the_core_api():
    program, f = _program()
    x, w = qb.array([0.1, 0.5, -0.3]), qb.array([1.5, -0.7, 2.0])
    inputs = {"x": x, "w": w}
    assert program.output_shape == [] and program.output_shapes == [[]]
    assert float(program.compile()(inputs)) == float(f(x, w))
    grads = program.vjp("ct")
    assert list(grads) == ["w", "x"]
    g = NP(grads["x"].compile()({**inputs, "ct": qb.array(2.0)}))
    np.testing.assert_allclose(g, 2.0 * NP(qb.grad(f)(x, w)), rtol=1e-15)
    # coordinate JVP: the tangent of ones for x; twice gives the second coordinate derivative
    d1 = float(program.jvp("x").compile()(inputs))
    np.testing.assert_allclose(d1, float(qb.jvp(f, (x, w), (qb.ones(3), qb.zeros(3)))[1]), rtol=1e-15)
    d2 = program.jvp("x").jvp("x")
    ref = qb.jvp(lambda x: qb.jvp(f, (x, w), (qb.ones(3), qb.zeros(3)))[1], (x,), (qb.ones(3),))[1]
    np.testing.assert_allclose(float(d2.compile()(inputs)), float(ref), rtol=1e-14)
    # and the JVP program differentiates again in reverse mode
    gg = d2.vjp("s")["w"].compile()({**inputs, "s": qb.array(1.0)})
    assert gg.shape == (3,)
    assert "sin" in program.lower_text()
    assert repr(program) == "Program(output_shape=[])"
    assert program.compile().target == "cpu" and program.compile().node_count > 0


def test_facade_errors_are_clear():
    program, _ = _program()
    c = qb.Compiler()
    with pytest.raises(ValueError, match="target must be one of"):
        c.capability("tpu")
    with pytest.raises(ValueError, match="target must be one of"):
        program.compile("gpu")
    if "cuda" not in qb.devices():
        with pytest.raises(qb.UnsupportedOperationError, match="CUDA is not available on this machine: "):
            program.compile("cuda")
    with pytest.raises(ValueError, match="no input named 'y'"):
        program.jvp("y")
    with pytest.raises(ValueError, match="already an input name"):
        program.vjp("x")
    with pytest.raises(TypeError, match="must return one array"):
        c.trace(lambda x: (x, x), [("x", [2])])
    with pytest.raises(TypeError, match="input spec"):
        c.trace(lambda x: x, [("x",)])
    with pytest.raises(TypeError, match="shape must be a list"):
        c.trace(lambda x: x, [("x", 3)])
    with pytest.raises(ValueError, match="appears twice"):
        c.trace(lambda x, y: x, [("x", [1]), ("x", [1])])
    exe = program.compile()
    with pytest.raises(ValueError, match="missing input 'w'"):
        exe({"x": qb.zeros(3)})
    with pytest.raises(ValueError, match="has shape"):
        exe({"x": qb.zeros(4), "w": qb.zeros(3)})


# ---- the rank-N helpers: values against the core API --------------------------------------


def _f(x, w):
    return qb.sum(qb.tanh(x @ w) ** 2)


SPECS = [("x", [2, 3]), ("w", [3])]
X = np.array([[0.2, -0.4, 0.7], [1.0, 0.3, -0.5]])
W = np.array([0.5, -1.0, 0.25])
VALUES = {"x": qb.array(X), "w": qb.array(W)}


def _quiet(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return getattr(qb, name)


def test_jit_value_and_grad_grad_scalar_vjp_jvp():
    x, w = VALUES["x"], VALUES["w"]
    ref_v, (gx, gw) = qb.value_and_grad(_f, argnums=(0, 1))(x, w)
    f = _quiet("tensor_jit_fn")(_f, SPECS)
    assert isinstance(f, _quiet("TensorJitFunction"))
    assert float(f(VALUES)) == float(ref_v)
    v, g = _quiet("tensor_value_and_grad_fn")(_f, SPECS)(VALUES)
    assert float(v) == float(ref_v) and list(g) == ["w", "x"]
    np.testing.assert_array_equal(NP(g["x"]), NP(gx))
    g2 = _quiet("tensor_grad_scalar_fn")(_f, SPECS)(VALUES)
    np.testing.assert_array_equal(NP(g2["w"]), NP(gw))
    out, g3 = _quiet("tensor_vjp_fn")(_f, SPECS)(VALUES, qb.array(3.0))
    np.testing.assert_allclose(NP(g3["w"]), 3 * NP(gw), rtol=1e-15)
    out, t = _quiet("tensor_jvp_fn")(_f, SPECS)(VALUES, {"w": qb.array([1.0, 0.0, 0.0])})
    np.testing.assert_allclose(float(t), float(NP(gw)[0]), rtol=1e-14)
    with pytest.raises(ValueError, match="unknown inputs"):
        _quiet("tensor_jvp_fn")(_f, SPECS)(VALUES, {"q": qb.zeros(3)})
    with pytest.raises(ValueError, match="scalar float output"):
        _quiet("tensor_value_and_grad_fn")(lambda x, w: x @ w, SPECS)
    with pytest.raises(ValueError, match="missing input 'w'"):
        f({"x": VALUES["x"]})


def test_jacobian_hessian_hvp_give_lists_and_arrays():
    g = lambda x, w: qb.tanh(x @ w)
    jac = _quiet("tensor_jacobian_fn")(g, SPECS, "w")(VALUES)
    assert isinstance(jac, list) and len(jac) == 2 and len(jac[0]) == 3
    np.testing.assert_allclose(jac, NP(qb.jacobian(g, argnums=1)(VALUES["x"], VALUES["w"])), rtol=1e-15)
    hess = _quiet("tensor_hessian_scalar_fn")(_f, SPECS, "x")(VALUES)
    assert len(hess) == 6 and len(hess[0]) == 6
    np.testing.assert_allclose(hess, NP(qb.hessian(_f)(VALUES["x"], VALUES["w"])).reshape(6, 6), rtol=1e-13)
    v = qb.array([0.3, 0.1, -0.2])
    hvp = _quiet("tensor_hvp_scalar_fn")(_f, SPECS, "w")(VALUES, v)
    ref = NP(qb.hessian(_f, argnums=1)(VALUES["x"], VALUES["w"])) @ NP(v)
    np.testing.assert_allclose(NP(hvp), ref, rtol=1e-13)


def test_vmap_helpers():
    per = lambda x, w: qb.sum(qb.sin(x * w))  # one example x: [3]
    specs = [("x", [3]), ("w", [3])]
    f = _quiet("tensor_vmap_fn")(per, specs, 2, in_axes=[0, None])
    out = f(VALUES)
    np.testing.assert_allclose(NP(out), [float(per(VALUES["x"][i], VALUES["w"])) for i in range(2)], rtol=1e-15)
    _, t = _quiet("tensor_vmap_jvp_fn")(per, specs, 2, in_axes=[0, None])(VALUES, {"w": qb.ones(3)})
    assert t.shape == (2,)
    _, g = _quiet("tensor_vmap_vjp_fn")(per, specs, 2, in_axes=[0, None])(VALUES, qb.ones(2))
    ref = sum(NP(qb.grad(per, argnums=1)(VALUES["x"][i], VALUES["w"])) for i in range(2))
    np.testing.assert_allclose(NP(g["w"]), ref, rtol=1e-14)  # unmapped gradients summed over the batch
    hvp = _quiet("tensor_vmap_hvp_scalar_fn")(per, specs, 2, "x", in_axes=[0, None])(VALUES, qb.ones((2, 3)))
    np.testing.assert_allclose(NP(hvp), -np.sin(X * W) * W * W, rtol=1e-13)
    with pytest.raises(ValueError, match="must be mapped"):
        _quiet("tensor_vmap_hvp_scalar_fn")(per, specs, 2, "w", in_axes=[0, None])
    with pytest.raises(ValueError, match="batch_size"):
        _quiet("tensor_vmap_fn")(per, specs, 0)


def test_batch_helpers_specialise_per_batch_size_up_to_the_limit():
    f = _quiet("tensor_jit_batch_fn")(lambda x: qb.sum(x * x, axis=1), ["x"], max_specializations=2)
    for b in (2, 3, 2):
        out = f({"x": qb.ones((b, 4), dtype=qb.float32)})
        assert out.dtype == qb.float64 and out.shape == (b,)
    assert f.specialization_count == 2 and f.max_specializations == 2
    with pytest.raises(ValueError, match="reached max_specializations=2 before batch size 5"):
        f({"x": qb.ones((5, 4))})
    with pytest.raises(ValueError, match="expects exactly inputs"):
        f({"y": qb.ones((2, 4))})
    vg = _quiet("tensor_value_and_grad_batch_fn")(lambda x, w: qb.mean((x @ w) ** 2), ["x", "w"], in_axes=[0, None])
    v, g = vg({"x": qb.array(X), "w": qb.array(W)})
    ref_v, (gx, gw) = qb.value_and_grad(lambda x, w: qb.mean((x @ w) ** 2), argnums=(0, 1))(qb.array(X), qb.array(W))
    assert float(v) == float(ref_v) and list(g) == ["w", "x"]
    np.testing.assert_array_equal(NP(g["w"]), NP(gw))


def test_cond_helpers_run_the_selected_branch():
    specs = [("x", [3])]
    f = _quiet("tensor_cond_fn")(lambda x: qb.sum(x), lambda x: qb.sum(x * x), specs)
    x = {"x": qb.array([1.0, 2.0, 3.0])}
    assert float(f(True, x)) == 6.0 and float(f(False, x)) == 14.0
    _, t = _quiet("tensor_cond_jvp_fn")(lambda x: qb.sum(x), lambda x: qb.sum(x * x), specs)(False, x,
                                                                                             {"x": qb.ones(3)})
    assert float(t) == 12.0
    v, g = _quiet("tensor_cond_value_and_grad_fn")(lambda x: qb.sum(x), lambda x: qb.sum(x * x), specs)(False, x)
    assert NP(g["x"]).tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(ValueError, match="must match"):
        _quiet("tensor_cond_fn")(lambda x: x, lambda x: qb.sum(x), specs)
    with pytest.raises(TypeError, match="Python bool"):
        f("yes", x)


def test_trace_tensor_symbolic_transforms_and_plans():
    u = lambda x: qb.sum(qb.sin(2.0 * x))
    traced = _quiet("trace_tensor")(u, [("x", [3])])
    assert isinstance(traced, _quiet("TensorTraceResult")) and isinstance(traced.graph, _quiet("TensorTraceGraph"))
    u_xx = traced.symbolic_jvp("x").symbolic_jvp("x")
    x = qb.array([0.1, 0.2, 0.3])
    plan = u_xx.compile_cpu()
    assert isinstance(plan, qb.TensorCpuExecutionPlan)
    # the coordinate JVP twice: d^2/dt^2 u(x + t * ones) = sum_i -4 sin(2 x_i)
    np.testing.assert_allclose(float(plan.evaluate({"x": x})), float(qb.sum(-4.0 * qb.sin(2.0 * x))), rtol=1e-13)
    grads = traced.symbolic_vjp("ct")
    g = grads["x"].compile_cpu().evaluate({"x": x, "ct": qb.array(1.0)})
    np.testing.assert_allclose(NP(g), 2 * np.cos(2 * NP(x)), rtol=1e-14)
    value, vg = traced.compile_cpu().evaluate_value_and_vjp({"x": x}, qb.array(1.0))
    np.testing.assert_allclose(NP(vg["x"]), NP(g), rtol=1e-15)
    if "mlx" not in qb.devices():
        with pytest.raises(qb.UnsupportedOperationError, match="mlx backend is not built"):
            traced.compile_mlx()


def test_region_builders():
    x = qb.array([1.0, 2.0])
    assert NP(_quiet("tensor_fori_loop")(0, 3, lambda i, c: c * 2.0 + i, x)).tolist() == [12.0, 20.0]
    region = _quiet("tensor_fori_loop_region")(0, 3, lambda i, c, a: c * a + i, x, [qb.array(2.0)])
    assert NP(region).tolist() == [12.0, 20.0]
    c, ys = _quiet("tensor_scan")(3, lambda i, c: (c + i, c * 1.0), x)
    assert NP(c).tolist() == [4.0, 5.0] and ys.shape == (3, 2)
    c2, ys2 = _quiet("tensor_scan_region")(1, 4, lambda i, c, a: (c + i * a, c * 1.0), x, [qb.array(1.0)])
    assert NP(c2).tolist() == [7.0, 8.0] and NP(ys2)[0].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="upper > lower"):
        _quiet("tensor_scan_region")(2, 2, lambda i, c: (c, c), x, [])
    out = _quiet("tensor_cond")(qb.array(True), lambda a, b: a + b, lambda a, b: a - b, [x, x])
    assert NP(out).tolist() == [2.0, 4.0]
    # inside jit the region builders trace as qb.cond / qb.fori_loop / qb.scan
    f = qb.jit(lambda x: _quiet("tensor_fori_loop_region")(0, 4, lambda i, c, a: c + a, x, [x]))
    assert NP(f(x)).tolist() == [5.0, 10.0]


def test_v01_call_forms_of_fori_loop_and_scan():
    assert float(qb.fori_loop(0, 3, lambda i, c, a: c + a, qb.array(0.0), operands=(qb.array(2.0),))) == 6.0
    c, ys = qb.scan(lambda c, i, a: (c + a, c), qb.array(0.0), length=3, operands=(qb.array(1.5),))
    assert float(c) == 4.5 and NP(ys).tolist() == [0.0, 1.5, 3.0]
    assert float(qb.fori_loop(0, 3, lambda i, c: c + 1.0, qb.array(0.0), unroll=True)) == 3.0


def test_sum_gradients():
    sg = _quiet("sum_gradients")
    a = {"w": qb.array([1.0, 2.0]), "b": qb.array(1.0)}
    b = {"w": qb.array([3.0, 4.0]), "b": qb.array(2.0)}
    out = sg([a, b])
    assert NP(out["w"]).tolist() == [4.0, 6.0] and float(out["b"]) == 3.0
    assert list(sg([a, b], ["w"])) == ["w"]
    with pytest.raises(ValueError, match="at least one"):
        sg([])
    with pytest.raises(ValueError, match="identical keys"):
        sg([a, {"w": a["w"]}])
    with pytest.raises(ValueError, match='missing gradient for "q"'):
        sg([a, b], ["q"])


def test_adam_alias_keeps_v01_keywords_and_stateful_step():
    adam_cls = _quiet("Adam")
    assert adam_cls is qb.optim.Adam
    opt = adam_cls(learning_rate=0.1, beta1=0.8, beta2=0.99, epsilon=1e-7)
    assert (opt.b1, opt.b2, opt.eps) == (0.8, 0.99, 1e-7)
    params = {"w": qb.array([1.0, -1.0])}
    grads = {"w": qb.array([0.5, -0.5])}
    p1 = opt.step(params, grads)
    np.testing.assert_allclose(NP(p1["w"]), [0.9, -0.9], rtol=1e-6)  # the first Adam step moves by lr
    p2 = opt.step(p1, grads)
    np.testing.assert_allclose(NP(p2["w"]), [0.8, -0.8], rtol=1e-5)


def test_quabla_alias_is_the_v01_namespace():
    mod = _quiet("quabla")
    import quabla.quabla
    assert mod is quabla.quabla
    assert mod.Matrix is legacy.Matrix and mod.grad is legacy.grad and mod.tensor_jit_fn is _quiet("tensor_jit_fn")
    assert mod.sin is qb.sin


@pytest.mark.parametrize("name", DEVICE)
def test_device_helpers_raise_the_unavailable_device_error(name):
    if "cuda" in name and "cuda" in qb.devices() or "mlx" in name and "mlx" in qb.devices():
        pytest.skip("backend built")
    device = "cuda" if "cuda" in name else "mlx"
    expected = "CUDA is not available on this machine: " if device == "cuda" else "the mlx backend is not built"
    with pytest.raises(qb.UnsupportedOperationError, match=expected):
        _quiet(name)(lambda x: x, [("x", [1])], ["x"])


@pytest.mark.parametrize("name", ["TensorCudaExecutionPlan", "TensorMlxExecutionPlan", "TensorCudaAdamOptimizer",
                                  "TensorMlxAdamOptimizer"])
def test_device_plan_classes_raise_until_their_backend_exists(name):
    with pytest.raises(qb.UnsupportedOperationError, match="backend is not built|CUDA is not available"):
        getattr(qb, name)()


_PER = lambda x, w: qb.sum(qb.sin(x * w))  # noqa: E731
_RESULTS = {  # each CPU helper (called on small programs) and the v0.1 class of what it returns
    "TensorJitFunction": lambda: _quiet("tensor_jit_fn")(_f, SPECS),
    "TensorValueAndGradFunction": lambda: _quiet("tensor_value_and_grad_fn")(_f, SPECS),
    "TensorGradScalarFunction": lambda: _quiet("tensor_grad_scalar_fn")(_f, SPECS),
    "TensorVjpFunction": lambda: _quiet("tensor_vjp_fn")(_f, SPECS),
    "TensorJvpFunction": lambda: _quiet("tensor_jvp_fn")(_f, SPECS),
    "TensorJacobianFunction": lambda: _quiet("tensor_jacobian_fn")(_f, SPECS, "w"),
    "TensorHessianScalarFunction": lambda: _quiet("tensor_hessian_scalar_fn")(_f, SPECS, "w"),
    "TensorHvpScalarFunction": lambda: _quiet("tensor_hvp_scalar_fn")(_f, SPECS, "w"),
    "TensorVmapFunction": lambda: _quiet("tensor_vmap_fn")(_PER, [("x", [3]), ("w", [3])], 2),
    "TensorVmapJvpFunction": lambda: _quiet("tensor_vmap_jvp_fn")(_PER, [("x", [3]), ("w", [3])], 2),
    "TensorVmapVjpFunction": lambda: _quiet("tensor_vmap_vjp_fn")(_PER, [("x", [3]), ("w", [3])], 2),
    "TensorVmapHvpScalarFunction": lambda: _quiet("tensor_vmap_hvp_scalar_fn")(_PER, [("x", [3]), ("w", [3])], 2, "x"),
    "TensorBatchJitFunction": lambda: _quiet("tensor_jit_batch_fn")(_PER, ["x", "w"]),
    "TensorBatchValueAndGradFunction": lambda: _quiet("tensor_value_and_grad_batch_fn")(_PER, ["x", "w"]),
    "TensorCondFunction": lambda: _quiet("tensor_cond_fn")(_f, _f, SPECS),
    "TensorCondJvpFunction": lambda: _quiet("tensor_cond_jvp_fn")(_f, _f, SPECS),
    "TensorCondValueAndGradFunction": lambda: _quiet("tensor_cond_value_and_grad_fn")(_f, _f, SPECS),
}


@pytest.mark.parametrize("name", sorted(_RESULTS))
def test_cpu_helpers_return_their_v01_result_classes(name):
    obj = _RESULTS[name]()
    assert type(obj) is _quiet(name)


def test_device_result_classes_are_their_cpu_counterparts_subclasses():
    pairs = [("TensorCudaValueAndGradFunction", "TensorValueAndGradFunction"),
             ("TensorMlxValueAndGradFunction", "TensorValueAndGradFunction"),
             ("TensorBatchCudaJitFunction", "TensorBatchJitFunction"),
             ("TensorVmapCudaFunction", "TensorVmapFunction"), ("TensorVmapMlxVjpFunction", "TensorVmapVjpFunction")]
    for device, cpu in pairs:
        assert issubclass(_quiet(device), _quiet(cpu))


# ---- core names: Tensor, TensorView, TraceTensor, dtype ---------------------------------------


def test_tensor_constructor_and_views():
    t = qb.Tensor([2, 3], [1, 2, 3, 4, 5, 6])
    assert isinstance(t, qb.Tensor) and isinstance(t, qb.Array) and t.dtype == qb.float64
    assert t.to_flat_list() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    f = qb.Tensor([], [2.5], dtype=qb.float32)
    assert f.dtype == qb.float32 and f.shape == ()
    assert qb.Tensor([2, 2], np.ones(4)).shape == (2, 2)
    with pytest.raises(TypeError, match="shape must be a list"):
        qb.Tensor(np.ones((2, 2)), [1.0])
    with pytest.raises(TypeError, match="flat sequence"):
        qb.Tensor([2, 2], [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="needs 4 values"):
        qb.Tensor([2, 2], [1.0])
    assert qb.Tensor.eye(2).to_flat_list() == [1.0, 0.0, 0.0, 1.0]
    assert qb.Tensor.zeros([2]).dtype == qb.float64
    v = t.slice(1, 0, 2, step=2)
    assert isinstance(v, qb.TensorView)
    assert v.shape == (2, 2) and v.strides == (3, 2) and v.offset == 0 and v.ndim == 2
    assert v.to_flat_list() == [1.0, 3.0, 4.0, 6.0]
    assert NP(v.to_tensor()).tolist() == [[1.0, 3.0], [4.0, 6.0]]
    with pytest.raises(ValueError, match="do not fit"):
        t.slice(1, 2, 3)
    assert qb.TraceTensor is qb.Array and qb.dtype is qb.DType and qb.float32.name == "float32"


def test_core_ops_of_the_mapping_behave_as_numpy():
    a, b = qb.array([1.0, np.nan, 3.0]), qb.array([2.0, np.nan, 1.0])
    assert NP(qb.not_equal(a, b)).tolist() == [True, True, True]
    assert NP(qb.equal(a, a)).tolist() == [True, False, True]
    assert NP(qb.greater(a, b)).tolist() == [False, False, True]
    assert NP(qb.isnan(a)).tolist() == [False, True, False]
    m = qb.einsum("ij,jk->ik", qb.eye(2), qb.array([[1.0, 2.0], [3.0, 4.0]]))
    assert NP(m).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert qb.bool_.name == "bool"


# ---- the legacy 2D API ----------------------------------------------------------------------


def test_matrix_arithmetic_and_errors():
    m = legacy.Matrix([[1.0, 2.0], [3.0, 4.0]])
    assert m.shape == (2, 2) and repr(m) == "Matrix(shape=(2, 2))"
    assert (m + 1).to_list() == [[2.0, 3.0], [4.0, 5.0]] and (1 - m).to_list() == [[0.0, -1.0], [-2.0, -3.0]]
    assert (m @ m).to_list() == [[7.0, 10.0], [15.0, 22.0]]
    assert (m ** 2).to_list() == [[1.0, 4.0], [9.0, 16.0]] and (m ** 0).to_list() == [[1.0, 1.0], [1.0, 1.0]]
    assert m.T.to_list() == [[1.0, 3.0], [2.0, 4.0]] and m.reshape(1, 4).to_list() == [[1.0, 2.0, 3.0, 4.0]]
    assert m.sum().to_list() == [[10.0]] and m.sum(axis=0).to_list() == [[4.0, 6.0]]
    assert m.mean(axis=1).to_list() == [[1.5], [3.5]]
    assert (m + legacy.Matrix([[10.0, 20.0]])).to_list() == [[11.0, 22.0], [13.0, 24.0]]  # row broadcast
    assert m.gt(2.5).to_list() == [[0.0, 0.0], [1.0, 1.0]]
    assert legacy.where(m.gt(2.5), m, -m).to_list() == [[-1.0, -2.0], [3.0, 4.0]]
    assert legacy.concat([m, m], 0).shape == (4, 2)
    with pytest.raises(ValueError, match="ragged"):
        legacy.Matrix([[1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match=r"division by zero scalar"):
        m / 0
    with pytest.raises(ValueError, match="division by zero is not supported"):
        m / legacy.Matrix([[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match=r"incompatible \+ shapes: \(2, 2\) \+ \(3, 1\)"):
        m + legacy.Matrix([[1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match=r"incompatible matmul shapes"):
        m @ legacy.Matrix([[1.0, 2.0, 3.0]])
    with pytest.raises(TypeError, match="modulo"):
        pow(m, 2, 3)
    with pytest.raises(TypeError, match="numeric scalar"):
        m + "a"
    with pytest.raises(ValueError, match="axis must be 0 or 1"):
        m.sum(axis=2)
    with pytest.raises(ValueError, match="cannot reshape"):
        m.reshape(3, 1)


def _model(x, w):
    return ((x @ w).tanh() * 2.0 + x.sum()).sum()


L_SPECS = [("x", (1, 2)), ("w", (2, 3))]
L_VALUES = {"x": legacy.Matrix([[0.5, -1.0]]), "w": legacy.Matrix([[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]])}


def _ref_grads():
    x, w = qb.array(NP(L_VALUES["x"])), qb.array(NP(L_VALUES["w"]))
    f = lambda x, w: qb.sum(qb.tanh(x @ w) * 2.0 + qb.sum(x))
    return f(x, w), qb.grad(f, argnums=(0, 1))(x, w)


def test_trace_graph_inspection():
    result = legacy.trace(_model, L_SPECS)
    assert isinstance(result, legacy.TraceResult) and isinstance(result.output, legacy.TraceMatrix)
    lines = result.graph.describe()
    assert lines[0] == "0 input x shape=(1, 2)" and lines[1] == "1 input w shape=(2, 3)"
    assert lines[2] == "2 matmul inputs=[0, 1] shape=(1, 3)"
    ir = result.graph.ir()
    assert ir[0] == {"id": 0, "op": "input", "shape": (1, 2), "inputs": [], "name": "x"}
    assert any(n["op"] == "scalar_constant" and n["attrs"] == {"value": 2.0} for n in ir)
    text = result.graph.lower_text()
    assert text.splitlines()[0] == "%0 = input[name=x] : tensor<1x2xf64>"
    assert "%2 = matmul(%0, %1) : tensor<1x3xf64>" in text
    assert result.graph.vjp_ir(result.output.node_id)[0]["op"] == "seed"
    with pytest.raises(ValueError, match="VJP is only implemented"):
        result.graph.vjp_ir(0)
    with pytest.raises(ValueError, match="output node 99 does not exist"):
        result.graph.evaluate(99, L_VALUES)


def test_legacy_transforms_match_the_core_api():
    value, (gx, gw) = _ref_grads()
    seed = legacy.Matrix([[1.0]])
    g = legacy.grad(_model, L_SPECS, L_VALUES, seed)
    assert list(g) == ["w", "x"] and isinstance(g["w"], legacy.Matrix)
    np.testing.assert_allclose(NP(g["w"]), NP(gw), rtol=1e-15)
    np.testing.assert_allclose(NP(legacy.grad_fn(_model, L_SPECS, seed)(L_VALUES)["x"]), NP(gx), rtol=1e-15)
    np.testing.assert_allclose(NP(legacy.grad_scalar_fn(_model, L_SPECS)(L_VALUES)["x"]), NP(gx), rtol=1e-15)
    decorated = legacy.grad_scalar(L_SPECS)(_model)
    assert isinstance(decorated, legacy.GradScalarFunction)
    v, g2 = legacy.value_and_grad_fn(_model, L_SPECS, seed)(L_VALUES)
    assert v.to_list() == [[float(value)]]
    v3, g3 = legacy.vjp_fn(_model, L_SPECS)(L_VALUES, legacy.Matrix([[2.0]]))
    np.testing.assert_allclose(NP(g3["w"]), 2 * NP(gw), rtol=1e-15)
    jitted = legacy.jit(L_SPECS)(_model)
    assert isinstance(jitted, legacy.JitFunction) and jitted(L_VALUES).to_list() == [[float(value)]]
    tangents = {"x": legacy.Matrix([[1.0, 0.0]]), "w": legacy.Matrix([[0.0] * 3, [0.0] * 3])}
    _, t = legacy.jvp_fn(_model, L_SPECS)(L_VALUES, tangents)
    np.testing.assert_allclose(t.to_list()[0][0], NP(gx)[0, 0], rtol=1e-14)
    jacs = legacy.jacobians_fn(lambda x, w: (x @ w).tanh(), L_SPECS)(L_VALUES)
    assert jacs["w"].shape == (3, 6) and jacs["x"].shape == (3, 2)
    jac = legacy.jacobian_fn(lambda x: x.sin(), [("x", (1, 2))])({"x": L_VALUES["x"]})
    np.testing.assert_allclose(NP(jac), np.diag(np.cos([0.5, -1.0])), rtol=1e-15)
    with pytest.raises(ValueError, match="exactly one input spec"):
        legacy.jacobian_fn(_model, L_SPECS)


def test_gradients_leave_out_inputs_the_cotangent_never_reaches():
    g = legacy.grad_scalar_fn(lambda x, w: x.sum() + w.gt(0.0).sum(), L_SPECS)(L_VALUES)
    assert list(g) == ["x"]


def test_legacy_input_validation():
    f = legacy.grad_scalar_fn(_model, L_SPECS)
    with pytest.raises(ValueError, match="missing input matrix for w"):
        f({"x": L_VALUES["x"]})
    with pytest.raises(ValueError, match=r"input x shape \(2, 2\) does not match traced shape \(1, 2\)"):
        f({"x": legacy.Matrix([[1.0, 2.0], [3.0, 4.0]]), "w": L_VALUES["w"]})
    with pytest.raises(ValueError, match=r"output cotangent shape \(1, 2\) does not match output shape \(1, 1\)"):
        legacy.vjp_fn(_model, L_SPECS)(L_VALUES, legacy.Matrix([[1.0, 1.0]]))
    with pytest.raises(ValueError, match="missing tangent matrix for w"):
        legacy.jvp_fn(_model, L_SPECS)(L_VALUES, {"x": L_VALUES["x"]})
    with pytest.raises(ValueError, match="same trace graph"):
        legacy.TraceGraph().input("a", (1, 1)) @ legacy.TraceGraph().input("b", (1, 1))


def test_compile_cpu_plan():
    result = legacy.trace(_model, L_SPECS)
    plan = result.graph.compile_cpu(result.output.node_id)
    value, _ = _ref_grads()
    assert plan.evaluate(L_VALUES).to_list() == [[float(value)]]
    v, g = plan.evaluate_value_and_vjp(L_VALUES, legacy.Matrix([[1.0]]))
    assert list(g) == ["w", "x"] and plan.output_shape == (1, 1) and plan.node_count > 0
    assert repr(plan).startswith("CpuExecutionPlan(output_node_id=")


def test_grad_jit_trace_dispatch_the_v01_forms():
    seed = legacy.Matrix([[1.0]])
    g = qb.grad(_model, L_SPECS, L_VALUES, seed)
    assert isinstance(g["x"], legacy.Matrix)
    assert isinstance(qb.jit(L_SPECS), legacy.JitTransform)
    with pytest.warns(DeprecationWarning, match="quabla.trace"):
        result = qb.trace(_model, L_SPECS)
    assert isinstance(result, legacy.TraceResult)
    # the v0.2 forms are untouched
    assert float(qb.grad(lambda x: x * x)(qb.array(3.0))) == 6.0
    assert qb.grad(lambda x, y: x * y, argnums=(0, 1))(qb.array(2.0), qb.array(3.0))[1].item() == 2.0
    assert float(qb.trace(qb.eye(3))) == 3.0
    assert float(qb.jit(lambda x: x + 1)(qb.array(1.0))) == 2.0


def test_top_level_where_and_concat_take_legacy_matrices():
    m = legacy.Matrix([[1.0, -2.0], [-3.0, 4.0]])
    assert qb.where(m.gt(0.0), m, -m).to_list() == [[1.0, 2.0], [3.0, 4.0]]
    assert qb.concat([m, m], 1).shape == (2, 4) and qb.concatenate([m], 0).shape == (2, 2)
    g = legacy.TraceGraph()
    a = g.input("a", (1, 2))
    assert isinstance(qb.where(a.gt(0.0), a, a * 2.0), legacy.TraceMatrix)
    assert isinstance(qb.concat([a, a], 0), legacy.TraceMatrix)
    with pytest.raises(TypeError, match="three Matrix"):
        qb.where(m, qb.ones((2, 2)), m)
    # arrays are untouched
    assert NP(qb.where(qb.array([True, False]), 1.0, 2.0)).tolist() == [1.0, 2.0]


def test_v01_pinn_pattern_extends_a_trace_after_tracing():
    """v0.1's PINN idiom: u_xx by two coordinate JVPs of a traced u, then a loss built on
    u_xx.output and the graph's input x, compiled and differentiated with a (scalar) seed."""
    u = lambda x, w: qb.tanh(x * w)
    traced = _quiet("trace_tensor")(u, [("x", [4]), ("w", [])])
    u_xx = traced.symbolic_jvp("x").symbolic_jvp("x")
    x_in = u_xx.graph.input("x")
    loss = ((u_xx.output + x_in.sin()).powi(2)).mean()
    assert "TraceTensor(node_id=" in repr(loss) and loss.shape == () and loss.dtype == qb.float64
    plan = loss.compile_cpu()
    x, w = qb.array([0.1, 0.4, 0.7, 1.0]), qb.array(1.3)
    value, grads = plan.evaluate_value_and_vjp({"x": x, "w": w}, qb.Tensor([], [1.0]))

    def ref_loss(x, w):
        t = qb.tanh(x * w)
        return qb.mean((-2.0 * w * w * t * (1.0 - t * t) + qb.sin(x)) ** 2)
    ref_v, (gx, gw) = qb.value_and_grad(ref_loss, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(float(value), float(ref_v), rtol=1e-13)
    assert list(grads) == ["w", "x"]
    np.testing.assert_allclose(float(grads["w"]), float(gw), rtol=1e-12)
    np.testing.assert_allclose(NP(grads["x"]), NP(gx), rtol=1e-12, atol=1e-15)
    with pytest.raises(qb.TracerError, match="control flow"):
        bool(loss)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        loss.nonsense


def test_review_fixes_adam_dictionary_step():
    vag = _quiet("tensor_value_and_grad_fn")(lambda x, w: qb.sum((x * w - 1.0) ** 2), [("x", [3]), ("w", [])])
    params = {"w": qb.array(0.5)}
    loss, grads = vag({"x": qb.array([1.0, 2.0, 3.0]), **params})
    assert sorted(grads) == ["w", "x"]
    new = _quiet("Adam")(0.1).step(params, grads)  # the data input's gradient is ignored
    assert list(new) == ["w"] and new["w"].shape == ()
    with pytest.raises(ValueError, match='missing gradient for "w"'):
        qb.optim.Adam(0.1).step(params, {"x": qb.array(1.0)})
    with pytest.raises(ValueError, match="gradient shape"):
        qb.optim.Adam(0.1).step({"w": qb.array(1.0)}, {"w": qb.array([1.0, 1.0])})


def test_review_fixes_trace_values_combine_like_arrays():
    u = _quiet("trace_tensor")(lambda x: x * 2.0, [("x", [3])])
    out = u.output
    x = qb.array([-1.0, 0.5, 2.0])
    run = lambda v: v.compile_cpu().evaluate({"x": x})
    assert NP(run(qb.where(out > 0.0, out, 0.0))).tolist() == [0.0, 1.0, 4.0]
    assert run(qb.concat([out, out])).shape == (6,) and run(qb.stack([out, out], axis=1)).shape == (3, 2)
    assert float(run(out[1])) == 1.0 and NP(run(abs(out))).tolist() == [2.0, 1.0, 4.0]
    assert NP(run(out.gt(0.0))).tolist() == [0.0, 1.0, 1.0]
    assert NP(run((out > 0.0).where_select(out, -out))).tolist() == [2.0, 1.0, 4.0]
    assert float(run(out.matmul(out))) == 4 * float(qb.sum(x * x))
    assert NP(run(2.0 ** out)).tolist() == [0.25, 2.0, 16.0]
    with pytest.raises(ValueError, match="same trace graph"):
        out + _quiet("trace_tensor")(lambda x: x, [("x", [3])]).output


def test_review_fixes_plans_read_only_the_inputs_they_need():
    u = _quiet("trace_tensor")(lambda x: qb.sum(x * x), [("x", [2])])
    grads = u.symbolic_vjp("ct")
    assert float((u.output * 2.0).compile_cpu().evaluate({"x": qb.ones(2)})) == 4.0  # no "ct" needed
    assert NP(grads["x"].compile_cpu().evaluate({"x": qb.ones(2), "ct": qb.array(1.0)})).tolist() == [2.0, 2.0]
    g = u.graph
    assert g.hessian_scalar(u.output.node_id, "x", {"x": qb.ones(2)}) == [[2.0, 0.0], [0.0, 2.0]]
    assert NP(g.hvp_scalar(u.output.node_id, "x", {"x": qb.ones(2)}, qb.array([1.0, 0.0]))).tolist() == [2.0, 0.0]
    if "mlx" not in qb.devices():
        with pytest.raises(qb.UnsupportedOperationError):
            g.compile_mlx(u.output.node_id)
    assert "mul" in g.lower_text() or g.lower_text()


def test_review_fixes_array_methods_and_forms():
    c = qb.Compiler()
    p = c.trace(lambda x: x.powi(2).sum() + x.slice(0, 1, 3).sum() + x.gt(0.0).sum(), [("x", [4])])
    x = qb.array([1.0, -2.0, 3.0, 4.0])
    assert float(p.compile()({"x": x})) == 30.0 + 1.0 + 3.0
    assert qb.Tensor([2], [1.0, 3.0]).gt(2.0).tolist() == [0.0, 1.0]
    assert NP(qb.einsum("ij,jk->ik", [qb.eye(2), qb.ones((2, 2))])).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    keys = qb.Tensor.split_key(0, 3)
    assert len(keys) == 3 and len(set(keys)) == 3 and all(isinstance(k, int) for k in keys)
    a, b = qb.Tensor.random_normal([1000], 7, 1.0, 2.0), qb.Tensor.random_normal([1000], 7, 1.0, 2.0)
    assert NP(a).tolist() == NP(b).tolist() and abs(float(qb.mean(a)) - 1.0) < 0.3
    assert qb.Tensor.glorot_normal([4, 5], 1).shape == (4, 5)
    u = qb.Tensor.random_uniform([100], 3, -1.0, 1.0)
    assert float(qb.min(u)) >= -1.0 and float(qb.max(u)) < 1.0
    with pytest.raises(TypeError, match="traced array computed from its inputs"):
        c.trace(lambda x: qb.ones(2), [("x", [2])])


def test_review_fixes_legacy_checks():
    g, g3 = legacy.TraceGraph(), legacy.TraceGraph()
    x, z = g.input("x", (1, 2)), g3.input("z", (1, 2))
    with pytest.raises(ValueError, match="same trace graph"):
        legacy.where(x.gt(0.0), x, z)
    with pytest.raises(ValueError, match="division by zero scalar"):
        x / 0.0
    with pytest.raises(TypeError, match="only Matrix, Tensor, TraceMatrix, or TraceTensor"):
        qb.concat([legacy.Matrix([[1.0]]), qb.ones((1, 1))], 0)
    assert repr(legacy.jacobian_fn(lambda a: a.sin(), [("a", (2, 2))])).startswith(
        "JacobianFunction(output_node_id=1, input_shape=(2, 2), output_shape=(2, 2))")
    out = _run("""
    import warnings
    import quabla as qb
    f = lambda a: a.sin()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        qb.trace(f, [("a", (1, 1))]); qb.trace(f, [("a", (1, 1))])
    print(len([x for x in w if issubclass(x.category, DeprecationWarning)]))
    """)
    assert out.stdout.strip() == "1", out.stderr


def test_review_fixes_batch_helpers_keep_non_batch_shapes():
    b = _quiet("tensor_jit_batch_fn")(lambda x, w: x * w, ["x", "w"], [0, None])
    b({"x": qb.ones((3, 2)), "w": qb.ones(2)})
    b({"x": qb.ones((4, 2)), "w": qb.ones(2)})
    with pytest.raises(ValueError, match="only the batch size may change"):
        b({"x": qb.ones((3, 5)), "w": qb.ones(5)})
