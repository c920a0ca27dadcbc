"""What code ported from JAX reaches for first: qb.config and disable_jit, make_jaxpr,
jax.tree_util's names and Partial, flatten_util.ravel_pytree, formatting and rounding of
arrays, NumPy's reductions and dtypes on Quabla arrays, the reductions' dtype= / where= /
initial= / out=, where(condition) alone, and NumPy integer scalars as sizes and axes."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import quabla as qb
from quabla.flatten_util import ravel_pytree

tu = qb.tree_util


def test_config_x64_and_disable_jit():
    try:
        qb.config.update("jax_enable_x64", False)
        assert qb.zeros(2).dtype == qb.float32 and not qb.config.jax_enable_x64
        qb.config.update("jax_enable_x64", True)
        assert qb.zeros(2).dtype == qb.float64 and qb.config.read("jax_enable_x64")
    finally:
        qb.set_default_dtype(qb.float64)
    qb.config.update("jax_platforms", "cpu")
    with pytest.raises(ValueError, match="not a setting Quabla has"):
        qb.config.update("jax_no_such_flag", True)
    seen = []
    f = qb.jit(lambda x: seen.append(type(x).__name__) or x * 2.0)
    with qb.disable_jit():
        assert float(f(qb.array(3.0))) == 6.0 and float(f(qb.array(3.0))) == 6.0
    assert seen == ["Array", "Array"]  # the body ran twice, on concrete arrays
    assert not qb.config.jax_disable_jit
    f(qb.array(3.0))
    f(qb.array(4.0))
    assert len(seen) == 3  # traced once, then the compiled program


def test_make_jaxpr_prints_the_traced_program():
    text = qb.make_jaxpr(lambda x: qb.sin(x) * 2.0)(qb.array(1.0))
    assert isinstance(text, str) and "sin(" in text and "mul(" in text


def test_tree_util_names_and_partial():
    t = {"b": [qb.zeros(3), 2.0], "a": qb.ones(2)}
    doubled = tu.tree_map(lambda x: x * 2, t)
    assert float(doubled["a"][0]) == 2.0 and doubled["b"][1] == 4.0
    leaves, treedef = tu.tree_flatten(t)
    assert tu.tree_unflatten(treedef, leaves)["b"][1] == 2.0 and tu.tree_structure(t) == treedef
    assert len(tu.tree_leaves(t)) == 3
    assert float(tu.tree_reduce(lambda acc, x: acc + qb.sum(x), t, 0.0)) == 4.0
    assert tu.tree_all([True, 1, qb.array(True)]) and not tu.tree_all([True, 0])
    paths = tu.tree_map_with_path(lambda p, x: tu.keystr(p), {"a": 1, "b": (2, 3)})
    assert paths == {"a": "['a']", "b": ("['b'][0]", "['b'][1]")}
    scale = tu.Partial(lambda w, x: w * x, qb.array(3.0))
    assert float(qb.jit(lambda f, x: f(x))(scale, qb.array(2.0))) == 6.0
    assert float(qb.grad(lambda f: f(2.0))(scale).args[0]) == 2.0  # the bound argument is a leaf

    @tu.register_pytree_node_class
    class Affine:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten(self):
            return (self.w, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    g = qb.grad(lambda p: qb.sum((p.w * 2.0 + p.b) ** 2))(Affine(qb.array([1.0, 2.0]), qb.array(0.5)))
    np.testing.assert_allclose(np.asarray(g.w), [10.0, 18.0])
    assert float(g.b) == pytest.approx(14.0)


def test_ravel_pytree_round_trip_and_gradient():
    tree = {"w": qb.ones((2, 2)), "b": qb.array([1, 2], dtype=qb.int32), "s": qb.array(3.0)}
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(np.asarray(flat), [1, 2, 3, 1, 1, 1, 1])  # keys sorted: b, s, w
    back = unravel(flat)
    assert back["b"].dtype == qb.int32 and back["w"].shape == (2, 2)
    g = qb.grad(lambda v: qb.sum(unravel(v)["w"] ** 2) + unravel(v)["s"])(flat)
    np.testing.assert_array_equal(np.asarray(g), [0, 0, 1, 2, 2, 2, 2])
    with pytest.raises(ValueError, match="expected a vector of 7 elements"):
        unravel(qb.zeros(3))


def test_formatting_rounding_and_copies():
    x = qb.array(2.56789)
    assert f"{x:.3e}" == "2.568e+00" and f"{x:.2f}" == "2.57" and f"{x}" == str(x)
    assert round(x) == 3 and float(round(x, 2)) == 2.57
    np.testing.assert_array_equal(np.asarray(qb.round(qb.array([1.255, 2.5, -0.5]), 2)),
                                  np.round([1.255, 2.5, -0.5], 2))
    np.testing.assert_array_equal(np.asarray(qb.around(qb.array([15, 25, -35]), -1)), np.around([15, 25, -35], -1))
    with pytest.raises(TypeError, match="format x.item"):
        f"{qb.ones(3):.2f}"
    m = qb.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(m.flatten()), np.arange(6.0))
    np.testing.assert_array_equal(np.asarray(m.flatten("F")), np.arange(6.0).reshape(2, 3).flatten("F"))
    assert m.copy() is m and qb.copy(m) is m and copy.deepcopy(m) is m and m.block_until_ready() is m
    assert m.mT.shape == (3, 2) and m.itemsize == 8 and m.round(1).shape == (2, 3)


def test_numpy_functions_and_dtypes_on_quabla_arrays():
    x = np.random.default_rng(0).normal(size=(3, 4))
    q = qb.array(x)
    assert float(np.sum(q)) == pytest.approx(x.sum()) and float(np.mean(q)) == pytest.approx(x.mean())
    np.testing.assert_allclose(np.asarray(np.max(q, axis=0)), x.max(axis=0))
    np.testing.assert_allclose(np.asarray(np.std(q, axis=1)), x.std(axis=1))
    assert np.dtype(q.dtype) == np.float64 and np.zeros(2, dtype=qb.float32).dtype == np.float32
    assert qb.float32.kind == "f" and qb.int32.kind == "i" and qb.bool_.kind == "b" and qb.float64.type is np.float64
    assert qb.asarray([1, 2], dtype="f4").dtype == qb.float32 and qb.asarray([1], dtype="<i8").dtype == qb.int64


def test_reduction_options():
    x = np.random.default_rng(1).normal(size=(3, 4))
    m = x > 0
    q, qm = qb.array(x), qb.array(m)
    np.testing.assert_allclose(np.asarray(qb.sum(q, axis=1, where=qm)), np.sum(x, axis=1, where=m))
    np.testing.assert_allclose(np.asarray(qb.prod(q, axis=0, where=qm)), np.prod(x, axis=0, where=m))
    np.testing.assert_allclose(np.asarray(qb.max(q, axis=1, where=qm, initial=-5.0)),
                               np.max(x, axis=1, where=m, initial=-5.0))
    np.testing.assert_allclose(np.asarray(q.min(initial=-10.0)), -10.0)
    np.testing.assert_allclose(np.asarray(qb.mean(q, axis=0, where=qm)), np.mean(x, axis=0, where=m))
    np.testing.assert_allclose(np.asarray(qb.var(q, where=qm, ddof=1)), np.var(x, where=m, ddof=1))
    np.testing.assert_allclose(np.asarray(qb.std(q, axis=1, where=qm, keepdims=True)),
                               np.std(x, axis=1, where=m, keepdims=True))
    assert bool(qb.any(qm, where=qb.array([[False] * 4] * 3))) is False
    assert qb.sum(qb.array([True, True, False]), dtype=qb.float32).dtype == qb.float32
    with pytest.raises(ValueError, match="needs initial="):
        qb.max(q, where=qm)
    with pytest.raises(TypeError, match="out= is not supported"):
        qb.sum(q, out=np.zeros(()))
    g = qb.grad(lambda v: qb.sum(v ** 2, where=v > 0))(q)
    np.testing.assert_allclose(np.asarray(g), np.where(m, 2 * x, 0.0))
    np.testing.assert_allclose(np.asarray(qb.jit(lambda v, w: qb.mean(v, where=w))(q, qm)), np.mean(x, where=m))


def test_where_with_one_argument_is_nonzero():
    v = qb.array([0, 3, 0, 5])
    (idx,) = qb.where(v > 0)
    np.testing.assert_array_equal(np.asarray(idx), [1, 3])
    (fixed,) = qb.jit(lambda a: qb.where(a > 0, size=3, fill_value=-1))(v)
    np.testing.assert_array_equal(np.asarray(fixed), [1, 3, -1])
    with pytest.raises(TypeError, match="pass both x and y, or neither"):
        qb.where(v > 0, 1.0)


def test_numpy_integer_scalars_as_sizes_and_axes():
    n = np.int64(3)
    assert qb.zeros(n).shape == (3,) and qb.ones((n, np.int32(2))).shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(qb.sum(qb.ones((2, 3)), axis=np.int64(1))), [3.0, 3.0])
    assert [p.shape for p in qb.split(qb.ones(8), np.int64(4))] == [(2,)] * 4  # four sections, not a split at 4
    assert qb.expand_dims(qb.ones(2), np.int64(0)).shape == (1, 2) and qb.tile(qb.ones(2), n).shape == (6,)
    assert qb.moveaxis(qb.ones((2, 3)), np.int64(0), 1).shape == (3, 2) and qb.repeat(qb.ones(2), n).shape == (6,)
    with pytest.raises(TypeError):
        qb.zeros(True)


def test_ravel_pytree_of_mixed_precisions_promotes_as_jax():
    # promote_types answers JAX's lattice, so the flat vector is float64 and unravel restores each
    # leaf's own dtype, as jax.flatten_util.ravel_pytree.
    flat, unravel = ravel_pytree({"a": qb.ones(2, dtype=qb.float32), "b": qb.zeros(3, dtype=qb.float64)})
    assert flat.dtype == qb.float64 and flat.shape == (5,)
    back = unravel(flat)
    assert back["a"].dtype == qb.float32 and back["b"].dtype == qb.float64
    assert back["a"].tolist() == [1.0, 1.0]
