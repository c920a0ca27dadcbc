"""qb.custom_jvp: JAX's documented examples (values and derivatives), higher orders, reverse
mode through the rule, vmap, jit, loops, closures, and errors at the first use."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb


@qb.custom_jvp
def log1pexp(x):
    return qb.log(1.0 + qb.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + qb.exp(x)))


def test_log1pexp_gradient_is_finite_where_autodiff_gives_nan():
    # JAX's example at x = 100 in float32, where exp overflows (float64 needs x = 1000)
    for x in (qb.asarray(100.0, dtype=qb.float32), qb.asarray(1000.0)):
        plain = qb.grad(lambda x: qb.log(1.0 + qb.exp(x)))(x)
        assert np.isnan(float(plain))
        assert float(qb.grad(log1pexp)(x)) == 1.0
    assert float(qb.jit(qb.grad(log1pexp))(qb.asarray(3.0))) == pytest.approx(1 / (1 + np.exp(-3.0)), rel=1e-15)
    assert float(log1pexp(qb.asarray(3.0))) == pytest.approx(np.log1p(np.exp(3.0)), rel=1e-15)


def test_forward_and_reverse_agree_and_vmap():
    xs = qb.array([-2.0, 0.5, 3.0])
    g = qb.vmap(qb.grad(log1pexp))(xs)
    _, t = qb.jvp(log1pexp, (xs,), (qb.ones(3),))
    np.testing.assert_allclose(np.asarray(g), np.asarray(t), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(qb.vmap(log1pexp)(xs)), np.log1p(np.exp(np.asarray(xs))), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(qb.jacfwd(log1pexp)(xs)), np.diag(np.asarray(g)), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(qb.jacrev(log1pexp)(xs)), np.diag(np.asarray(g)), rtol=1e-15)


def test_hessian_through_the_rule():
    # d2/dx2 log1pexp = s(x)(1 - s(x)), from differentiating the rule's tangent expression
    x = 0.7
    s = 1 / (1 + np.exp(-x))
    h = qb.hessian(lambda v: qb.sum(log1pexp(v)))(qb.array([x]))
    assert float(h[0, 0]) == pytest.approx(s * (1 - s), rel=1e-13)
    assert float(qb.grad(qb.grad(log1pexp))(qb.asarray(x))) == pytest.approx(s * (1 - s), rel=1e-13)


def test_the_rule_is_what_differentiates():
    # A deliberately "wrong" rule shows the rule, not the body, is used (JAX's f(x) = x,
    # tangent 2t example style).
    @qb.custom_jvp
    def f(x):
        return qb.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), 2.0 * tangents[0]

    assert float(f(qb.asarray(1.0))) == pytest.approx(np.sin(1.0))
    assert float(qb.grad(f)(qb.asarray(1.0))) == 2.0
    assert float(qb.grad(lambda x: f(x) * x)(qb.asarray(1.5))) == pytest.approx(2.0 * 1.5 + np.sin(1.5))


def test_nondiff_argnums_x_sqrt_style():
    @qb.custom_jvp
    def f(x, y):
        return x * qb.sqrt(y)

    f = qb.custom_jvp(f.fun, nondiff_argnums=(0,))

    @f.defjvp
    def f_jvp(x, primals, tangents):
        (y,), (t,) = primals, tangents
        return f(x, y), x * t / (2.0 * qb.sqrt(y))

    assert float(f(3.0, qb.asarray(4.0))) == 6.0
    assert float(qb.grad(lambda y: f(3.0, y))(qb.asarray(4.0))) == pytest.approx(0.75)


def test_defjvps_and_two_arguments():
    @qb.custom_jvp
    def f(x, y):
        return qb.sin(x) * y

    f.defjvps(lambda x_dot, primal_out, x, y: qb.cos(x) * x_dot * y,
              lambda y_dot, primal_out, x, y: qb.sin(x) * y_dot)
    gx, gy = qb.grad(f, argnums=(0, 1))(qb.asarray(0.3), qb.asarray(2.0))
    assert float(gx) == pytest.approx(np.cos(0.3) * 2.0)
    assert float(gy) == pytest.approx(np.sin(0.3))


def test_inside_loops_and_with_closures():
    w = qb.asarray(0.5)

    def step(i, c):
        return c + log1pexp(c * w)

    g = qb.grad(lambda c0: qb.fori_loop(0, 3, step, c0))(qb.asarray(0.2))

    def plain_step(i, c):
        return c + qb.log(1.0 + qb.exp(c * w))

    expected = qb.grad(lambda c0: qb.fori_loop(0, 3, plain_step, c0))(qb.asarray(0.2))
    assert float(g) == pytest.approx(float(expected), rel=1e-13)
    # closing over an outer value that is not differentiated is fine
    k = qb.asarray(3.0)

    @qb.custom_jvp
    def scaled(x):
        return qb.sin(x) * k

    @scaled.defjvp
    def scaled_jvp(p, t):
        return scaled(p[0]), qb.cos(p[0]) * k * t[0]

    assert float(qb.grad(scaled)(qb.asarray(0.0))) == 3.0


def test_closing_over_a_differentiated_value_is_an_error():
    @qb.custom_jvp
    def f(x):
        return x

    def loss(w):
        @qb.custom_jvp
        def g(x):
            return x * w

        @g.defjvp
        def g_jvp(p, t):
            return g(p[0]), t[0] * w

        return g(qb.asarray(2.0))

    with pytest.raises(ValueError, match="closes over a value that is being differentiated"):
        qb.grad(loss)(qb.asarray(1.0))


def test_rule_errors_name_the_function_and_the_mismatch():
    @qb.custom_jvp
    def f(x):
        return qb.sin(x)

    with pytest.raises(AttributeError, match="No JVP defined"):
        f(qb.asarray(1.0))

    @f.defjvp
    def bad_shape(p, t):
        return f(p[0]), qb.ones(3)

    with pytest.raises(TypeError, match=r"custom_jvp\(f\).*tangent output 0 is float64\[3\]"):
        f(qb.asarray(1.0))

    @f.defjvp
    def bad_structure(p, t):
        return (f(p[0]), f(p[0])), t[0]

    with pytest.raises(TypeError, match="structure"):
        f(qb.asarray(1.0))

    @f.defjvp
    def not_a_pair(p, t):
        return t[0]

    with pytest.raises(TypeError, match="pair"):
        f(qb.asarray(1.0))


def test_printed_program_shows_one_node():
    text = qb.jit(log1pexp).lower(qb.asarray(1.0)).as_text()
    assert "custom_jvp(" in text and "args=1" in text


def test_symbolic_zeros_mark_integer_tangents_and_may_be_returned():
    SymbolicZero = qb.custom_derivatives.SymbolicZero
    seen = []

    @qb.custom_jvp
    def scale(x, y, n):
        return x * y * n

    def scale_jvp(primals, tangents):
        x, y, n = primals
        tx, ty, tn = tangents
        seen.append(tuple(isinstance(t, SymbolicZero) for t in tangents))
        out = x * y * n
        if isinstance(tx, SymbolicZero) and isinstance(ty, SymbolicZero):
            return out, SymbolicZero(out.shape, out.dtype)
        return out, (tx * y + x * ty) * n

    scale.defjvp(scale_jvp, symbolic_zeros=True)
    x, y, n = qb.array([1.0, 2.0]), qb.array([3.0, 4.0]), qb.array([2, 3])
    assert qb.grad(lambda x: qb.sum(scale(x, y, n)))(x).tolist() == [6.0, 12.0]
    assert seen[-1] == (False, False, True)  # the integer argument's tangent is a marker
    _, t = qb.jvp(lambda x, y: scale(x, y, n), (x, y), (qb.ones(2), qb.zeros(2)))
    assert t.tolist() == [6.0, 12.0]
    np.testing.assert_array_equal(np.asarray(qb.hessian(lambda x: qb.sum(scale(x, x, n)))(x)), [[4.0, 0.0], [0.0, 6.0]])
    z = SymbolicZero((2, 3), qb.float32)
    assert z.ndim == 2 and z.size == 6 and z.instantiate().tolist() == [[0.0] * 3] * 2
    with pytest.raises(TypeError, match="marker"):
        z + 1.0
    zs = qb.custom_derivatives.zero_from_primal({"a": x, "b": n}, symbolic_zeros=True)
    assert isinstance(zs["a"], SymbolicZero) and zs["b"].shape == (2,)
    assert qb.custom_derivatives.zero_from_primal(x).tolist() == [0.0, 0.0]
