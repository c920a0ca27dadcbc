"""Python control flow on values under eager derivatives (python/quabla/_concrete_control.py):
as JAX's grad, an `if` on a value, int() and index conversions are decided on the concrete
arguments outside jit; the derivative is that of the path taken, checked against JAX and
closed forms; inside jit or vmap, and for float(), the TracerError stays."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def piecewise(np_):
    return lambda x: 3.0 * x ** 2 if x < 3 else -4.0 * x


def newton_sqrt(a):
    x = a
    for _ in range(60):
        if abs(x * x - a) < 1e-12:
            break
        x = 0.5 * (x + a / x)
    return x


def test_if_on_a_value_under_grad_as_jax():
    for x in (2.0, 4.0):
        assert float(qb.grad(piecewise(qb))(x)) == float(jax.grad(piecewise(jnp))(x))
    np.testing.assert_allclose(float(qb.grad(newton_sqrt)(2.0)), 0.5 / np.sqrt(2.0), rtol=1e-12)
    assert float(qb.grad(lambda x: x * int(x))(2.5)) == 2.0  # int() is a constant of the path
    got = qb.grad(lambda x: x * qb.array([1.0, 2.0, 3.0])[int(x)])(2.0)
    assert float(got) == 3.0


def test_jacobians_hessian_and_value_and_grad_take_the_path():
    f = lambda x: x ** 2 if x.sum() > 0 else -x  # noqa: E731
    for x in ([1.0, 2.0], [-1.0, -2.0]):
        for qt, jt in ((qb.jacfwd, jax.jacfwd), (qb.jacrev, jax.jacrev)):
            np.testing.assert_array_equal(np.asarray(qt(f)(qb.array(x))), np.asarray(jt(f)(jnp.array(x))))
    assert float(qb.hessian(lambda x: x ** 3 if x > 0 else -x)(2.0)) == 12.0
    value, g = qb.value_and_grad(lambda x: qb.sum(x ** 2) if qb.sum(x) > 0 else qb.sum(-x))(qb.array([-1.0, -2.0]))
    assert float(value) == 3.0 and g.tolist() == [-1.0, -1.0]
    tree = qb.grad(lambda p: (p["w"] * 2).sum() if p["w"].sum() > 0 else 0.0 * p["w"].sum())({"w": np.array([1.0, 2.0])})
    assert tree["w"].tolist() == [2.0, 2.0]


def test_where_values_are_traced_it_still_raises():
    with pytest.raises(qb.TracerError, match="Python scalar"):
        qb.grad(lambda x: float(x) * x)(2.0)  # float() of a traced value: JAX raises too
    with pytest.raises(qb.TracerError, match="bool"):
        qb.vmap(qb.grad(piecewise(qb)))(qb.array([1.0, 4.0]))
    with pytest.raises(qb.TracerError, match="bool"):
        qb.jit(qb.grad(piecewise(qb)))(qb.asarray(2.0))
    with pytest.raises(IndexError):  # the function's own error, from the eager run
        qb.grad(lambda x: x * qb.array([1.0, 2.0, 3.0])[int(x)])(4.0)
