"""Never silently wrong: derivatives at extreme arguments against mpmath (every unary and
binary op, float64), and the specific wrong results, stale programs and error types found
by differential fuzzing against JAX and by hostile inputs."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import quabla as qb

from extreme_derivatives import BINARY, UNARY, close, reference

NP = np.asarray


# ---------------------------------------------------------------------------------------
# Derivatives at extreme arguments: subnormals, 1e-300, 1e300, infinities

@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_derivative_at_extreme_arguments_matches_mpmath(name):
    f, d, points = UNARY[name]
    xs = qb.array(points)
    # grad per point and the vectorised derivative (vmap of grad) agree with mpmath
    batched = qb.vmap(qb.grad(f))(xs).numpy()
    for x, b in zip(points, batched):
        ref = reference(d, x)
        got = float(qb.grad(f)(qb.array(x)))
        assert close(got, ref, 1e-13), f"{name}'({x!r}) = {got!r}, mpmath {ref!r}"
        assert close(float(b), ref, 1e-13), f"vmap {name}'({x!r}) = {b!r}, mpmath {ref!r}"


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_partial_derivatives_at_extreme_arguments_match_mpmath(name):
    f, d, points = BINARY[name]
    for a, b in points:
        ref = reference(d, a, b)
        if ref is None:
            continue
        g = qb.grad(f, argnums=(0, 1))(qb.array(a), qb.array(b))
        bq = qb.array(b)
        _, t0 = qb.jvp(lambda x: f(x, bq), (qb.array(a),), (qb.array(1.0),))
        for k in range(2):
            assert close(float(g[k]), ref[k], 1e-13), f"d{k} {name}({a!r}, {b!r}) = {float(g[k])!r}, mpmath {ref[k]!r}"
        assert close(float(t0), ref[0], 1e-13), f"jvp {name}({a!r}, {b!r}) = {float(t0)!r}, mpmath {ref[0]!r}"


def test_second_derivatives_at_extreme_scales():
    # atan2's Hessian at (1e150, 2e150): -2ab/(a^2+b^2)^2 and (a^2-b^2)/(a^2+b^2)^2 at 1e-301
    h = qb.hessian(lambda v: qb.atan2(v[0], v[1]))(qb.array([1e150, 2e150])).numpy()
    np.testing.assert_allclose(h, [[-1.6e-301, -1.2e-301], [-1.2e-301, 1.6e-301]], rtol=1e-12)
    assert float(qb.grad(qb.grad(qb.arcsinh))(qb.array(math.inf))) == 0.0
    assert float(qb.grad(qb.grad(qb.arcsinh))(qb.array(1e200))) == 0.0  # -1e-400 underflows
    np.testing.assert_allclose(float(qb.grad(qb.grad(qb.arcsinh))(qb.array(0.3))), -0.3 / 1.09 ** 1.5, rtol=1e-14)
    np.testing.assert_allclose(float(qb.grad(qb.grad(qb.sigmoid))(qb.array(30.0))), -math.exp(-30.0), rtol=1e-12)


@pytest.mark.parametrize("dtype,x,expected", [(qb.float32, 20.0, 2.0611537e-09), (qb.float64, 40.0, 4.248354255291589e-18)])
def test_sigmoid_derivative_does_not_underflow_by_cancellation(dtype, x, expected):
    np.testing.assert_allclose(float(qb.grad(qb.sigmoid)(qb.array(x, dtype=dtype))), expected, rtol=1e-6)
    np.testing.assert_allclose(float(qb.grad(qb.sigmoid)(qb.array(-x, dtype=dtype))), expected, rtol=1e-6)


def test_hypot_gradient_at_subnormal_inputs_float32():
    g = qb.grad(qb.hypot, argnums=(0, 1))(qb.array(3e-42, dtype=qb.float32), qb.array(4e-42, dtype=qb.float32))
    np.testing.assert_allclose([float(g[0]), float(g[1])], [0.6, 0.8], rtol=2e-3)  # subnormal inputs: few bits


def test_arcsin_and_arctanh_derivatives_near_one_are_accurate():
    import mpmath
    mpmath.mp.prec = 200
    x = 0.999
    ref_asin = float(1 / mpmath.sqrt(1 - mpmath.mpf(x) ** 2))
    ref_atanh = float(1 / (1 - mpmath.mpf(x) ** 2))
    np.testing.assert_allclose(float(qb.grad(qb.arcsin)(qb.array(x))), ref_asin, rtol=1e-15)
    np.testing.assert_allclose(float(qb.grad(qb.arctanh)(qb.array(x))), ref_atanh, rtol=1e-15)


def test_logaddexp_derivative_at_a_tie_is_one_half():
    for v in (0.3, -2.0, 1e300, -math.inf, math.inf):
        g = qb.grad(qb.logaddexp, argnums=(0, 1))(qb.array(v), qb.array(v))
        assert float(g[0]) == float(g[1]) == 0.5, v


# ---------------------------------------------------------------------------------------
# prod: Hessians with zero entries; float32 partial products

def _prod_hessian(v):
    n = len(v)
    return np.array([[0.0 if i == j else np.prod([v[k] for k in range(n) if k not in (i, j)]) for j in range(n)]
                     for i in range(n)])


@pytest.mark.parametrize("v", [[2.0, 0.0, -3.0, 7.0, 5.0], [2.0, 0.0, -3.0, 0.0, 5.0], [0.0, 0.0, 0.0],
                               [1.5, -2.0, 0.5, 3.0], [4.0]])
def test_hessian_of_prod_with_zero_entries_is_exact_and_symmetric(v):
    x = qb.array(v)
    for h in (qb.hessian(qb.prod)(x), qb.jacrev(qb.grad(qb.prod))(x), qb.jacfwd(qb.jacfwd(qb.prod))(x)):
        np.testing.assert_allclose(h.numpy(), _prod_hessian(v), rtol=1e-14, atol=0)


def test_prod_gradient_over_axes_and_float32_partial_products():
    m = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4, 5))
    g = qb.grad(lambda m: qb.sum(qb.prod(m, axis=(0, 2))))(qb.array(m)).numpy()
    np.testing.assert_allclose(g, m.prod(axis=(0, 2), keepdims=True) / m, rtol=1e-12)
    # the full product overflows float32 while the products of the others do not
    g32 = qb.grad(qb.prod)(qb.array([1e30, 1e30, 1e-30], dtype=qb.float32)).numpy()
    np.testing.assert_allclose(g32[:2], [1.0, 1.0], rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Elementwise edge values against NumPy / JAX conventions

def test_clip_with_a_nan_bound_is_nan():
    x = qb.array([0.5, 2.0, -1.0])
    assert np.isnan(qb.clip(x, math.nan, 1.0).numpy()).all()
    assert np.isnan(qb.clip(x, 0.0, math.nan).numpy()).all()
    np.testing.assert_array_equal(qb.clip(x, 0.0, 1.0).numpy(), [0.5, 1.0, 0.0])
    g = qb.grad(lambda x: qb.sum(qb.clip(x, 0.0, 1.0)))(qb.array([0.0, 0.5, 1.0, 2.0]))
    np.testing.assert_array_equal(g.numpy(), [0.0, 1.0, 0.0, 0.0])


def test_mod_gives_zero_the_divisors_sign_and_keeps_its_derivative():
    a, b = np.array([6.0, -6.0, 5.0, -5.0, 0.0, -0.0]), np.array([-2.0, 2.0, -3.0, 3.0, 1.0, -1.0])
    got = qb.mod(qb.array(a), qb.array(b)).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.mod(a, b)))
    np.testing.assert_array_equal(got, np.mod(a, b))
    assert qb.mod(qb.array(1.0), qb.array(-math.inf)).item() == -math.inf  # NumPy's value
    g = qb.grad(lambda x: qb.sum(qb.mod(x, qb.array(b))))(qb.array(a))
    np.testing.assert_array_equal(g.numpy(), np.ones(6))


def test_clip_by_global_norm_of_huge_gradients():
    g = qb.optim.clip_by_global_norm({"a": qb.array([1e200, -1e200])}, 1.0)
    np.testing.assert_allclose(g["a"].numpy(), [0.7071067811865476, -0.7071067811865476], rtol=1e-15)
    np.testing.assert_allclose(float(qb.optim.global_norm({"a": qb.array([3e-200]), "b": qb.array([4e-200])})),
                               5e-200, rtol=1e-15)


@pytest.mark.parametrize("dtype", [qb.float32, qb.float64])
def test_uniform_stays_in_half_open_bounds_without_overflow(dtype):
    k = qb.random.key(3)
    top = 1 + 2 ** -52 if dtype == qb.float64 else float(np.nextafter(np.float32(1), np.float32(2)))
    u = qb.random.uniform(k, (200000,), dtype=dtype, minval=1.0, maxval=top).numpy()
    assert (u >= 1.0).all() and (u < top).all()
    w = qb.random.uniform(k, (20000,), dtype=qb.float64, minval=-1e308, maxval=1e308).numpy()
    assert np.isfinite(w).all() and w.min() < -1e307 and w.max() > 1e307
    w32 = qb.random.uniform(k, (20000,), dtype=qb.float32, minval=-3e38, maxval=3e38).numpy()
    assert np.isfinite(w32).all() and w32.min() < -2e38 and w32.max() > 2e38 and len(np.unique(w32)) > 19000


def test_exact_log10_is_only_for_normal_powers():
    got = qb.log10(qb.array(np.full(8, 1e-40, np.float32))).numpy()
    np.testing.assert_array_equal(got, np.float32(-40.000004))  # float32(1e-40) is not 10^-40
    assert qb.log10(qb.array(np.full(8, 1e-30, np.float32))).numpy()[0] == -30.0


def test_exact_powers_are_exact():
    assert qb.log10(qb.array(1e7)).item() == 7.0
    assert qb.cbrt(qb.array(27.0)).item() == 3.0
    assert qb.cbrt(qb.array(27.0, dtype=qb.float32)).item() == 3.0
    t = qb.tan(qb.array(2.5, dtype=qb.float32)).item()
    assert t == float(np.float32(math.tan(2.5)))  # correctly rounded


# ---------------------------------------------------------------------------------------
# Gradients: symbolic zeros through loops

def test_nan_in_a_loop_carry_that_does_not_reach_the_result_stays_out_of_the_gradient():
    def f(c0):
        a, _ = qb.fori_loop(0, 3, lambda i, c: (c[0] * 2.0, qb.log(c[1])), (c0, c0))
        return a
    assert float(qb.grad(f)(qb.array(-1.0))) == 8.0
    assert float(qb.jit(qb.grad(f))(qb.array(-1.0))) == 8.0

    def long(c0):  # blocks of checkpoints (more than 8 steps)
        a, _ = qb.fori_loop(0, 50, lambda i, c: (c[0] * 1.01, qb.sqrt(c[1])), (c0, c0))
        return a
    np.testing.assert_allclose(float(qb.grad(long)(qb.array(-1.0))), 1.01 ** 50, rtol=1e-13)


def test_nan_in_unused_scan_outputs_stays_out_of_the_gradient():
    def g(c0):
        c, _ = qb.scan(lambda c, x: (c * x, qb.sqrt(c)), c0, qb.array([1.0, 2.0, 3.0]))
        return c
    assert float(qb.grad(g)(qb.array(-1.0))) == 6.0


def test_carries_that_feed_the_result_still_get_their_gradient():
    def h(c0):
        a, _ = qb.fori_loop(0, 3, lambda i, c: (c[0] * 2.0 + c[1], c[1] * 3.0), (c0, c0))
        return a
    assert float(qb.grad(h)(qb.array(1.0))) == 27.0  # 8 + (4 + 2*3 + 9)


# ---------------------------------------------------------------------------------------
# Stale compiled programs, inner jit closures

def test_compiled_program_checks_its_static_arguments_and_shapes():
    f = qb.jit(lambda x, n: qb.sum(x ** n), static_argnums=1)
    x = qb.array([1.0, 2.0])
    c = f.lower(x, 2).compile()
    assert float(c(x, 2)) == 5.0
    with pytest.raises(TypeError, match=r"static arguments \[3\] differ .* \[2\]"):
        c(x, 3)
    with pytest.raises(TypeError, match="compiled for"):
        c(qb.ones(3), 2)
    assert float(f(x, 3)) == 9.0  # the jitted function compiles the new signature


def test_inner_jit_closing_over_a_grad_tracer():
    v = qb.grad(lambda w: qb.jit(lambda t: qb.sin(t * w))(qb.array(0.3)))(qb.array(1.2))
    np.testing.assert_allclose(float(v), 0.3 * math.cos(0.36), rtol=1e-15)


# ---------------------------------------------------------------------------------------
# Structure and error types

def test_register_dataclass_field_lists_must_cover_every_field():
    @dataclasses.dataclass
    class D:
        a: object
        b: object

    with pytest.raises(ValueError, match="neither data_fields nor meta_fields"):
        qb.tree.register_dataclass(D, data_fields=["a"], meta_fields=[])


def test_vmap_with_a_dataclass_prefix_unmapped_outputs_and_scalar_outputs():
    @qb.tree.register_dataclass
    @dataclasses.dataclass
    class P:
        a: object
        b: object

    out = qb.vmap(lambda p: p.a * p.b, in_axes=(P(0, None),))(P(qb.ones(3), qb.array(2.0)))
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0, 2.0])
    y, z = qb.vmap(lambda x, w: (x * w, w * 3.0), in_axes=(0, None), out_axes=(0, None))(qb.ones(3), qb.array(2.0))
    assert y.shape == (3,) and z.shape == () and float(z) == 6.0
    np.testing.assert_array_equal(qb.vmap(lambda x: 3.0)(qb.ones(4)).numpy(), [3.0] * 4)
    with pytest.raises(ValueError, match="out_axes=None for output 0, which depends on the mapped axis"):
        qb.vmap(lambda x: x * 2.0, out_axes=None)(qb.ones(3))


def test_stop_gradient_of_bools_returns_them():
    m = qb.array([True, False])
    np.testing.assert_array_equal(qb.stop_gradient(m).numpy(), [True, False])


def test_error_types_match_numpy_and_jax():
    with pytest.raises(TypeError, match="only size-1 arrays"):
        float(qb.ones(3))
    with pytest.raises(TypeError, match="only size-1 arrays"):
        int(qb.ones(3))
    with pytest.raises(ValueError, match="size 1"):
        qb.ones(3).item()
    with pytest.raises(TypeError, match="must return a pair"):
        qb.grad(lambda x: x, has_aux=True)(qb.array(1.0))
    with pytest.raises(TypeError, match="in_axes must be an int, None"):
        qb.vmap(lambda x: x, in_axes="0")  # raised when vmap is built
    with pytest.raises(TypeError, match="missing the shape"):
        qb.ones(3).reshape()
