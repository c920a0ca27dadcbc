"""qb.custom_vjp: JAX's documented examples (gradient clipping, a rule with residuals),
nondiff_argnums, pytree residuals, reverse mode inside fori_loop/scan bodies, vmap, jit,
higher orders through bwd, forward mode refused, and errors at the first use."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb


@qb.custom_vjp
def clip_gradient(lo, hi, x):
    return x  # identity forward


def _clip_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return (None, None, qb.clip(g, lo, hi))


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_gradient_clipping():
    # JAX's example: d/dx sin(clip_gradient(-0.75, 0.75, x)) is cos(x) clipped to +-0.75
    xs = qb.linspace(0.0, 10.0, 21)
    g = qb.vmap(qb.grad(lambda x: qb.sin(clip_gradient(-0.75, 0.75, x))))(xs)
    np.testing.assert_allclose(np.asarray(g), np.clip(np.cos(np.asarray(xs)), -0.75, 0.75), rtol=1e-15)
    assert float(clip_gradient(-0.75, 0.75, qb.asarray(3.0))) == 3.0


@qb.custom_vjp
def f(x, y):
    return qb.sin(x) * y


def _f_fwd(x, y):
    return f(x, y), (qb.cos(x), qb.sin(x), y)


def _f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)


f.defvjp(_f_fwd, _f_bwd)


def test_rule_with_residuals_matches_autodiff_and_jit():
    x, y = qb.asarray(0.3), qb.asarray(2.0)
    gx, gy = qb.grad(f, argnums=(0, 1))(x, y)
    assert float(gx) == pytest.approx(np.cos(0.3) * 2.0, rel=1e-15)
    assert float(gy) == pytest.approx(np.sin(0.3), rel=1e-15)
    gj = qb.jit(qb.grad(f, argnums=(0, 1)))(x, y)
    assert float(gj[0]) == float(gx) and float(gj[1]) == float(gy)
    out, vjp_fun = qb.vjp(f, x, y)
    assert float(out) == pytest.approx(np.sin(0.3) * 2.0)
    assert float(vjp_fun(qb.asarray(1.0))[0]) == float(gx)
    jac = qb.jacrev(lambda v: f(v, qb.full((2,), 2.0)))(qb.array([0.1, 0.2]))
    np.testing.assert_allclose(np.asarray(jac), np.diag(np.cos([0.1, 0.2]) * 2.0), rtol=1e-15)


def test_second_order_goes_through_bwd():
    # d/dx of the rule's cos(x) * y is -sin(x) * y
    h = qb.grad(qb.grad(lambda x: f(x, qb.asarray(2.0))))(qb.asarray(0.3))
    assert float(h) == pytest.approx(-np.sin(0.3) * 2.0, rel=1e-14)


def test_forward_mode_is_refused_as_in_jax():
    with pytest.raises(ValueError, match="forward-mode"):
        qb.jvp(lambda x: f(x, qb.asarray(1.0)), (qb.asarray(0.5),), (qb.asarray(1.0),))
    with pytest.raises(ValueError, match="forward-mode"):
        qb.jacfwd(lambda x: f(x, qb.ones(1)))(qb.array([0.5]))


def test_nondiff_argnums_and_pytree_residuals():
    def scale_fun(k, x):
        return {"a": x["a"] * k, "b": x["b"]}

    scale = qb.custom_vjp(scale_fun, nondiff_argnums=(0,))

    def fwd(k, x):
        return scale(k, x), {"r": x["a"]}

    def bwd(k, res, g):
        return ({"a": g["a"] * k * 10.0, "b": g["b"]},)

    scale.defvjp(fwd, bwd)
    x = {"a": qb.array([1.0, 2.0]), "b": qb.asarray(3.0)}
    g = qb.grad(lambda x: qb.sum(scale(2.0, x)["a"]) + scale(2.0, x)["b"])(x)
    assert g["a"].tolist() == [20.0, 20.0] and float(g["b"]) == 1.0


def test_inside_a_fori_loop_body_in_reverse_mode():
    def body(i, c):
        return f(c, qb.asarray(0.9)) + c

    def plain(i, c):
        return qb.sin(c) * 0.9 + c

    g = qb.grad(lambda c0: qb.fori_loop(0, 4, body, c0))(qb.asarray(0.4))
    expected = qb.grad(lambda c0: qb.fori_loop(0, 4, plain, c0))(qb.asarray(0.4))
    assert float(g) == pytest.approx(float(expected), rel=1e-13)
    g = qb.jit(qb.grad(lambda c0: qb.scan(lambda c, x: (f(c, x), c), c0, qb.array([0.5, 1.5]))[0]))(qb.asarray(0.4))
    c1 = np.sin(0.4) * 0.5
    assert float(g) == pytest.approx(np.cos(c1) * 1.5 * np.cos(0.4) * 0.5, rel=1e-13)


def test_vmap_of_the_function_and_of_its_gradient():
    xs, ys = qb.array([0.1, 0.2, 0.3]), qb.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(qb.vmap(f)(xs, ys)), np.sin([0.1, 0.2, 0.3]) * [1, 2, 3], rtol=1e-15)
    g = qb.vmap(qb.grad(f))(xs, ys)
    np.testing.assert_allclose(np.asarray(g), np.cos([0.1, 0.2, 0.3]) * [1, 2, 3], rtol=1e-15)
    g = qb.grad(lambda v: qb.sum(qb.vmap(f)(v, ys)))(xs)
    np.testing.assert_allclose(np.asarray(g), np.cos([0.1, 0.2, 0.3]) * [1, 2, 3], rtol=1e-15)


def test_errors_at_first_use_name_the_function():
    @qb.custom_vjp
    def h(x):
        return x * 2.0

    with pytest.raises(AttributeError, match="No VJP defined"):
        h(qb.asarray(1.0))
    h.defvjp(lambda x: (h(x), None), lambda res, g: (g, g))
    with pytest.raises(TypeError, match=r"custom_vjp\(h\): bwd returned 2 cotangents for 1"):
        h(qb.asarray(1.0))
    h.defvjp(lambda x: (h(x), None), lambda res, g: (qb.ones(3),))
    with pytest.raises(TypeError, match="cotangent for argument leaf 0 is float64\\[3\\]"):
        h(qb.asarray(1.0))
    h.defvjp(lambda x: h(x), lambda res, g: (g,))
    with pytest.raises(TypeError, match="pair"):
        h(qb.asarray(1.0))
    h.defvjp(lambda x: (qb.ones(2), None), lambda res, g: (g,))
    with pytest.raises(TypeError, match="fwd's output"):
        h(qb.asarray(1.0))


def test_closing_over_a_differentiated_value_is_an_error():
    def loss(w):
        @qb.custom_vjp
        def g(x):
            return x * w

        g.defvjp(lambda x: (g(x), None), lambda res, ct: (ct * w,))
        return g(qb.asarray(2.0))

    with pytest.raises(ValueError, match="closes over a value that is being differentiated"):
        qb.grad(loss)(qb.asarray(1.0))


def test_symbolic_zeros_wrap_primals_and_accept_zero_cotangents():
    cd = qb.custom_derivatives

    @qb.custom_vjp
    def g(x, y, n):
        return qb.sin(x) * y * n

    seen = []

    def g_fwd(x, y, n):
        seen.append([(type(a).__name__, a.perturbed) for a in (x, y, n)])
        return g(x.value, y.value, n.value), (x.value, y.value, n.value)

    def g_bwd(res, ct):
        x, y, n = res
        # y's cotangent deliberately dropped as a symbolic zero.
        return qb.cos(x) * y * n * ct, cd.SymbolicZero(y.shape, y.dtype), None

    g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
    x, y, n = qb.array([1.0, 2.0]), qb.array([3.0, 4.0]), qb.array([2.0, 1.0])
    np.testing.assert_allclose(np.asarray(qb.grad(lambda x: qb.sum(g(x, y, n)))(x)),
                               np.cos([1.0, 2.0]) * [3.0, 4.0] * [2.0, 1.0], rtol=1e-15)
    assert seen[-1] == [("CustomVJPPrimal", True)] * 3
    assert qb.grad(lambda y: qb.sum(g(x, y, n)))(y).tolist() == [0.0, 0.0]
    np.testing.assert_allclose(np.asarray(g(x, y, n)), np.sin([1.0, 2.0]) * [3.0, 4.0] * [2.0, 1.0], rtol=1e-15)
