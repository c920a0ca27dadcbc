"""Named axes: vmap(axis_name=...) and pmap with the collectives of qb.lax (psum, pmean,
pmax, pmin, all_gather, psum_scatter, axis_index, axis_size, ppermute, pshuffle), compared
with JAX itself on the same programs: values, derivatives in both orders (grad of the
vmapped function, vmap of the per-example gradient), jit, nested axes, loops; errors by type
and message."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb
from quabla import lax

jax = pytest.importorskip("jax")
jnp, jlax = jax.numpy, jax.lax
jax.config.update("jax_enable_x64", True)

X = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])
XS = np.array([1.0, 3.0, 2.0])
W = np.array([1.0, 2.0, 3.0])


def both(make):
    """make(lax_module) -> a function of one array; the two results (Quabla, JAX)."""
    return make(lax, qb), make(jlax, jnp)


PROGRAMS = {
    "psum": lambda L, np_: lambda x: L.psum(x, "i"),
    "psum of a constant": lambda L, np_: lambda x: L.psum(2.0, "i") + 0.0 * x,
    "pmean": lambda L, np_: lambda x: x - L.pmean(x, "i"),
    "pmax": lambda L, np_: lambda x: L.pmax(x, "i"),
    "pmin": lambda L, np_: lambda x: L.pmin(x * x, "i"),
    "axis_index": lambda L, np_: lambda x: x * L.axis_index("i"),
    "axis_size": lambda L, np_: lambda x: x * L.axis_size("i"),
    "all_gather": lambda L, np_: lambda x: L.all_gather(x, "i"),
    "all_gather axis 1": lambda L, np_: lambda x: L.all_gather(x, "i", axis=1),
    "all_gather tiled": lambda L, np_: lambda x: L.all_gather(x, "i", tiled=True),
    "psum_scatter tiled": lambda L, np_: lambda x: L.psum_scatter(np_.concatenate([x, x * x, -x]), "i", tiled=True),
    "ppermute": lambda L, np_: lambda x: L.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]),
    "pshuffle": lambda L, np_: lambda x: L.pshuffle(x, "i", [2, 0, 1]),
    "softmax over examples": lambda L, np_: lambda x: np_.exp(x) / L.psum(np_.exp(x), "i"),
    "tuple of names": lambda L, np_: lambda x: L.psum(x, ("i",)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_values_and_jit_equal_jax(name):
    q, j = both(PROGRAMS[name])
    want = np.asarray(jax.vmap(j, axis_name="i")(jnp.asarray(X)))
    got = qb.vmap(q, axis_name="i")(qb.array(X))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14, atol=1e-15)
    assert np.asarray(got).dtype == want.dtype
    jitted = qb.jit(qb.vmap(q, axis_name="i"))(qb.array(X))
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(got))


SCALAR_PROGRAMS = {
    "psum": lambda L, np_: lambda y: L.psum(y ** 2, "i"),
    "pmean": lambda L, np_: lambda y: L.pmean(np_.sin(y) * y, "i"),
    "all_gather": lambda L, np_: lambda y: (L.all_gather(y ** 2, "i") * np_.asarray(W)).sum(),
    "ppermute": lambda L, np_: lambda y: L.ppermute(y ** 3, "i", [(0, 1), (1, 2), (2, 0)]) * y,
    "psum_scatter": lambda L, np_: lambda y: L.psum_scatter(np_.stack([y, y * y, y ** 3]), "i"),
    "normalised": lambda L, np_: lambda y: y / np_.sqrt(L.psum(y * y, "i")),
}


@pytest.mark.parametrize("name", list(SCALAR_PROGRAMS))
def test_derivatives_in_both_orders_equal_jax(name):
    q, j = both(SCALAR_PROGRAMS[name])
    xs, w = qb.array(XS), qb.array(W)
    # grad of the whole vmapped function
    want = jax.grad(lambda x: (jax.vmap(j, axis_name="i")(x) * jnp.asarray(W)).sum())(jnp.asarray(XS))
    got = qb.grad(lambda x: (qb.vmap(q, axis_name="i")(x) * w).sum())(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)
    # vmap of the per-example gradient (the collective's transpose runs inside the vmap)
    want = jax.vmap(jax.grad(j), axis_name="i")(jnp.asarray(XS))
    got = qb.vmap(qb.grad(q), axis_name="i")(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)
    # forward mode against reverse mode
    jac_f = qb.jacfwd(lambda x: qb.vmap(q, axis_name="i")(x))(xs)
    jac_r = qb.jacrev(lambda x: qb.vmap(q, axis_name="i")(x))(xs)
    np.testing.assert_allclose(np.asarray(jac_f), np.asarray(jac_r), rtol=1e-13, atol=1e-15)


def test_pmax_has_a_derivative_in_both_orders():
    """JAX has no derivative rule for pmax; here it is reduce_max's (the mean of the tangents
    of the examples attaining the maximum), the same whichever transform runs first."""
    xs = qb.array([1.0, 3.0, 2.0])
    outer = qb.grad(lambda x: qb.vmap(lambda y: lax.pmax(y, "i"), axis_name="i")(x).sum())(xs)
    inner = qb.vmap(qb.grad(lambda y: lax.pmax(y, "i")), axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(outer), [0.0, 3.0, 0.0])
    np.testing.assert_array_equal(np.asarray(inner), [0.0, 3.0, 0.0])
    ties = qb.grad(lambda x: qb.vmap(lambda y: lax.pmin(y, "i"), axis_name="i")(x).sum())(qb.array([1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(ties), [1.5, 1.5, 0.0])


def test_nested_axes_and_loops():
    a = np.arange(6.0).reshape(3, 2)
    for names in ("i", "j", ("i", "j"), ("j", "i")):
        def q(v, names=names):
            return lax.psum(v, names) + lax.axis_index(names)

        def j(v, names=names):
            return jlax.psum(v, names) + jlax.axis_index(names)
        got = qb.vmap(qb.vmap(q, axis_name="j"), axis_name="i")(qb.array(a))
        want = jax.vmap(jax.vmap(j, axis_name="j"), axis_name="i")(jnp.asarray(a))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # The inner vmap shadows an outer one of the same name, as in JAX.
    got = qb.vmap(qb.vmap(lambda v: lax.axis_index("i"), axis_name="i"), axis_name="i")(qb.array(a))
    np.testing.assert_array_equal(np.asarray(got), [[0, 1]] * 3)

    # A collective inside a loop body inside the vmap (the body is batched with the axis).
    def f(v):
        def body(c, _):
            return c + lax.psum(v, "i") * lax.axis_index("i"), None
        return lax.scan(body, 0.0, None, length=3)[0]
    np.testing.assert_array_equal(np.asarray(qb.vmap(f, axis_name="i")(qb.array(XS))), [0.0, 18.0, 36.0])
    # axis_size with no mapped argument: the collective still sees axis_size examples
    got = qb.vmap(lambda: lax.axis_index("k") * 1.0, axis_name="k", axis_size=4)()
    np.testing.assert_array_equal(np.asarray(got), [0.0, 1.0, 2.0, 3.0])


def test_booleans_and_integers_as_jax():
    x = qb.array(X)
    got = qb.vmap(lambda v: lax.psum(v > 0.3, "i"), axis_name="i")(x)
    want = jax.vmap(lambda v: jlax.psum(v > 0.3, "i"), axis_name="i")(jnp.asarray(X))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.dtype == qb.int32
    got = qb.vmap(lambda v: lax.pmean(qb.int32(3) * lax.axis_index("i"), "i"), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), [3.0, 3.0, 3.0])


def test_pmap_runs_as_a_jitted_vmap():
    f = qb.pmap(lambda v: v - lax.pmean(v, "d"), axis_name="d")
    np.testing.assert_allclose(np.asarray(f(qb.array(X))), X - X.mean(axis=0), rtol=1e-15)
    g = qb.pmap(lambda v, k: v * k + lax.axis_index("d"), axis_name="d", static_broadcasted_argnums=1)
    np.testing.assert_array_equal(np.asarray(g(qb.array(X), 2.0)), X * 2.0 + np.arange(3.0)[:, None])
    np.testing.assert_array_equal(np.asarray(qb.pmap(lambda v: lax.psum(v, "d"), axis_name="d")(qb.ones((1, 3)))),
                                  [[1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="runs on the CPU"):
        qb.pmap(lambda v: v, backend="gpu")


def test_errors():
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.psum(1.0, "i")
    with pytest.raises(NameError, match="unbound axis name: j"):
        qb.vmap(lambda v: lax.psum(v, "j"), axis_name="i")(qb.array(XS))
    with pytest.raises(NameError, match="unbound axis name: i"):
        qb.jit(lambda v: lax.axis_index("i"))(qb.array(XS))
    with pytest.raises(ValueError, match="out of range"):
        qb.vmap(lambda v: lax.ppermute(v, "i", [(0, 5)]), axis_name="i")(qb.array(XS))
    with pytest.raises(ValueError, match="twice"):
        qb.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]), axis_name="i")(qb.array(XS))
    with pytest.raises(ValueError, match="permutation"):
        qb.vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1]), axis_name="i")(qb.array(XS))
    with pytest.raises(ValueError, match="must be 3"):
        qb.vmap(lambda v: lax.psum_scatter(qb.stack([v, v]), "i"), axis_name="i")(qb.array(XS))
    with pytest.raises(ValueError, match="out of range"):
        qb.vmap(lambda v: lax.all_gather(v, "i", axis=2), axis_name="i")(qb.array(XS))
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        qb.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]), axis_name="i")(qb.array(XS))
    with pytest.raises(TypeError, match="hashable"):
        qb.vmap(lambda v: v, axis_name=["i"])(qb.array(XS))
