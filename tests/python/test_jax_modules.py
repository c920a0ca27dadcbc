"""quabla.tree_util / quabla.typing / quabla.experimental.ode as modules (against JAX's),
pickling of arrays and keys, callable dtype, lax.Precision and precision=, real/imag/conj."""
import pickle

import numpy as np
import pytest

import quabla as qb
import quabla.numpy as jnp_qb
from quabla import lax as qlax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.experimental.ode import odeint as jax_odeint  # noqa: E402


# ---- 1. modules -------------------------------------------------------------------------------

def test_tree_util_is_an_importable_module_with_the_tree_objects():
    from quabla.tree_util import tree_map, tree_leaves, tree_structure, Partial
    import quabla.tree_util as tu
    import quabla
    assert quabla.tree_util is tu
    assert tree_map is qb.tree.map and tree_leaves is qb.tree.leaves and Partial is qb.tree.Partial
    t = {"a": [1.0, 2.0], "b": (3.0,)}
    assert tu.tree_leaves(tree_map(lambda x: 2 * x, t)) == jax.tree_util.tree_leaves(jax.tree_util.tree_map(
        lambda x: 2 * x, t))
    assert tree_structure(t).num_leaves == 3
    assert [p for p, _ in tu.tree_leaves_with_path(t)] == [("a", 0), ("a", 1), ("b", 0)]
    assert tu.treedef_is_leaf(tu.tree_structure(1.0)) and not tu.treedef_is_leaf(tu.tree_structure(t))
    assert len(tu.treedef_children(tu.tree_structure(t))) == 2
    assert tu.all_leaves([1.0, qb.ones(2)]) and not tu.all_leaves([[1.0]])


def test_tree_transpose_matches_jax():
    import quabla.tree_util as tu
    x = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    got = tu.tree_transpose(tu.tree_structure([0, 0, 0]), tu.tree_structure({"a": 0, "b": 0}), x)
    want = jax.tree_util.tree_transpose(jax.tree_util.tree_structure([0, 0, 0]),
                                        jax.tree_util.tree_structure({"a": 0, "b": 0}), x)
    assert got == want == {"a": [1, 3, 5], "b": [2, 4, 6]}
    with pytest.raises(ValueError, match="leaves"):
        tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure({"a": 0, "b": 0}), x)
    with pytest.raises(TypeError, match="TreeDef"):
        tu.tree_transpose([0, 0], tu.tree_structure({"a": 0}), x)


def test_typing_aliases_cover_what_jax_typing_does():
    import typing
    from quabla.typing import ArrayLike, DTypeLike
    import quabla.typing as qt
    args = typing.get_args(ArrayLike)
    for member in (qb.Array, np.ndarray, bool, int, float, complex):
        assert member in args
    assert qb.DType in typing.get_args(DTypeLike) and str in typing.get_args(DTypeLike)
    assert set(qt.__all__) == {n for n in dir(jax.typing) if not n.startswith("_")}

    def f(x: ArrayLike, d: DTypeLike = None) -> qb.Array:
        return qb.asarray(x, dtype=d)
    assert f(1.0, "float32").dtype == qb.float32


def _decay(y, t, k):
    return -k * y + qb.sin(t) if isinstance(y, qb.Array) else -k * y + jnp.sin(t)


def _lotka(state, t, a, b):
    np_ = qb if isinstance(state["x"], qb.Array) else jnp
    x, y = state["x"], state["y"]
    return {"x": a * x - b * x * y, "y": -1.5 * y + 0.8 * x * y + 0.0 * np_.cos(t)}


def test_experimental_odeint_matches_jax_on_two_problems():
    from quabla.experimental.ode import odeint
    import quabla.experimental as qe
    assert qe.ode.odeint is odeint
    ts = np.linspace(0.0, 3.0, 7)
    got = odeint(_decay, qb.asarray([1.0, 2.0]), qb.asarray(ts), qb.asarray(0.7))
    want = jax_odeint(_decay, jnp.array([1.0, 2.0]), jnp.array(ts), 0.7)
    assert got.shape == (7, 2)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(np.asarray(got)[0], [1.0, 2.0])
    ts2 = np.array([0.0, 0.5, 1.7, 4.0, 6.0])
    y0 = {"x": 1.0, "y": 0.5}
    got = odeint(_lotka, {k: qb.asarray(v) for k, v in y0.items()}, qb.asarray(ts2), 1.1, 0.4, rtol=1e-9, atol=1e-9)
    want = jax_odeint(_lotka, {k: jnp.asarray(v) for k, v in y0.items()}, jnp.array(ts2), 1.1, 0.4, rtol=1e-9,
                      atol=1e-9)
    for k in ("x", "y"):
        assert got[k].shape == (5,)
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-6)
    jitted = qb.jit(lambda y, t: odeint(_decay, y, t, 0.7))(qb.asarray([1.0, 2.0]), qb.asarray(ts))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(jax_odeint(_decay, jnp.array([1.0, 2.0]),
                                                                         jnp.array(ts), 0.7)), rtol=1e-6)
    single = odeint(_decay, qb.asarray([1.0, 2.0]), qb.asarray([0.5]), 0.7)
    np.testing.assert_array_equal(np.asarray(single), [[1.0, 2.0]])


def test_experimental_odeint_gradients_match_jax():
    from quabla.experimental.ode import odeint
    ts = np.linspace(0.0, 2.0, 5)

    def loss_qb(k, y0):
        return qb.sum(odeint(_decay, y0, qb.asarray(ts), k) ** 2)

    def loss_jax(k, y0):
        return jnp.sum(jax_odeint(_decay, y0, jnp.array(ts), k) ** 2)
    gk, gy = qb.grad(loss_qb, argnums=(0, 1))(qb.asarray(0.7), qb.asarray([1.0, -2.0]))
    jk, jy = jax.grad(loss_jax, argnums=(0, 1))(0.7, jnp.array([1.0, -2.0]))
    np.testing.assert_allclose(float(gk), float(jk), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gy), np.asarray(jy), rtol=1e-6)

    def lv_qb(a, y0):
        out = odeint(_lotka, y0, qb.asarray([0.0, 1.0, 2.5]), a, 0.4)
        return qb.sum(out["x"] * out["y"])

    def lv_jax(a, y0):
        out = jax_odeint(_lotka, y0, jnp.array([0.0, 1.0, 2.5]), a, 0.4)
        return jnp.sum(out["x"] * out["y"])
    ga, gy0 = qb.grad(lv_qb, argnums=(0, 1))(qb.asarray(1.1), {"x": qb.asarray(1.0), "y": qb.asarray(0.5)})
    ja, jy0 = jax.grad(lv_jax, argnums=(0, 1))(1.1, {"x": jnp.asarray(1.0), "y": jnp.asarray(0.5)})
    np.testing.assert_allclose(float(ga), float(ja), rtol=1e-6)
    for k in ("x", "y"):
        np.testing.assert_allclose(float(gy0[k]), float(jy0[k]), rtol=1e-6)


def test_experimental_odeint_bad_input_raises():
    from quabla.experimental.ode import odeint
    with pytest.raises(ValueError, match="increasing"):
        odeint(_decay, qb.asarray([1.0]), qb.asarray([0.0, 2.0, 1.0]), 0.7)
    with pytest.raises(NotImplementedError, match="hmax"):
        odeint(_decay, qb.asarray([1.0]), qb.asarray([0.0, 1.0]), 0.7, hmax=0.1)
    with pytest.raises(ValueError, match="mxstep"):
        odeint(_decay, qb.asarray([1.0]), qb.asarray([0.0, 1.0]), 0.7, mxstep=0)
    with pytest.raises(ValueError, match="max_steps"):
        odeint(_decay, qb.asarray([1.0]), qb.asarray([0.0, 50.0]), 0.7, mxstep=3)
    with pytest.raises(TypeError, match="func"):
        odeint(3, qb.asarray([1.0]), qb.asarray([0.0, 1.0]))


# ---- 2. pickling ------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: qb.ones(3), lambda: qb.asarray(2.5), lambda: qb.asarray(-7, dtype=qb.int32), lambda: qb.zeros((0, 3)),
    lambda: qb.zeros((2, 0), dtype=qb.int64), lambda: qb.asarray([[1, -2], [3, 2 ** 40]], dtype=qb.int64),
    lambda: qb.asarray([True, False, True]), lambda: qb.asarray([1.1, np.nan, -np.inf], dtype=qb.float32),
    lambda: qb.asarray(np.arange(12.0).reshape(3, 4)).T, lambda: qb.asarray(True),
])
def test_arrays_round_trip_through_pickle(make):
    x = make()
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        y = pickle.loads(pickle.dumps(x, protocol=protocol))
        assert isinstance(y, qb.Array)
        assert y.dtype == x.dtype and tuple(y.shape) == tuple(x.shape)
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_pytrees_dtypes_and_keys_pickle():
    tree = {"w": qb.ones((2, 2), dtype=qb.float32), "b": [qb.asarray(0.5), (qb.arange(3),)], "n": None}
    back = pickle.loads(pickle.dumps(tree))
    assert qb.tree.structure(back) == qb.tree.structure(tree)
    for a, b in zip(qb.tree.leaves(back), qb.tree.leaves(tree)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert pickle.loads(pickle.dumps(qb.float32)) is qb.float32
    k = qb.random.key(42)
    ks = qb.random.split(k, 5)
    k2 = pickle.loads(pickle.dumps(k))
    assert isinstance(k2, qb.random.Key) and k2 == k
    np.testing.assert_array_equal(np.asarray(qb.random.normal(k2, (4,))), np.asarray(qb.random.normal(k, (4,))))
    ks2 = pickle.loads(pickle.dumps(ks))
    assert ks2.shape == (5,) and ks2 == ks and pickle.loads(pickle.dumps(ks[3])) == ks[3]
    grid = qb.random.split(k, 6).data.reshape(2, 3, 2)
    g2 = pickle.loads(pickle.dumps(qb.random.wrap_key_data(grid)))
    assert g2.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(g2.data), np.asarray(grid))
    raw = qb.random.PRNGKey(7)
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(raw))), np.asarray(raw))


def test_traced_arrays_and_keys_refuse_to_pickle():
    with pytest.raises(TypeError, match="traced"):
        qb.jit(lambda x: pickle.dumps(x))(qb.ones(2))
    with pytest.raises(TypeError, match="traced"):
        qb.grad(lambda x: len(pickle.dumps(x)) + qb.sum(x))(qb.ones(2))
    with pytest.raises(TypeError, match="traced"):
        qb.jit(lambda k: pickle.dumps(qb.random.Key(data=k)))(qb.random.PRNGKey(0))


# ---- 3. dtype, precision, real/imag/conj ------------------------------------------------------

def test_dtype_is_callable_and_an_isinstance_target():
    for d in (qb.dtype, jnp_qb.dtype):
        assert d("float32") == qb.float32 and d("f8") == qb.float64 and d("int32") == qb.int32
        assert d(np.float32) == qb.float32 and d(np.dtype("int64")) == qb.int64 and d(bool) == qb.bool_
        assert d(qb.ones(2, dtype=qb.float32).dtype) == qb.float32 and d(qb.float64) == qb.float64
        assert d(np.zeros(2, np.int32)) == qb.int32 and d(qb.arange(3)) == qb.arange(3).dtype
        assert isinstance(qb.float32, d) and isinstance(qb.ones(1).dtype, d) and not isinstance("float32", d)
    assert str(jnp.dtype("float32")) == qb.dtype("float32").dtype.name
    assert qb.dtype("complex64") == qb.complex64 and jnp_qb.dtype(np.complex128) == qb.complex128
    with pytest.raises(TypeError):
        qb.dtype("float16")


def test_lax_precision_matches_jax_names():
    P = qlax.Precision
    assert [p.name for p in P] == [p.name for p in jax.lax.Precision]
    assert P("highest") is P.HIGHEST and P("high") is P.HIGH and P("default") is P.DEFAULT
    assert P("float32") is P.HIGHEST and P("tensorfloat32") is P.HIGH and P("bfloat16") is P.DEFAULT
    with pytest.raises(ValueError):
        P("ultra")


@pytest.mark.parametrize("precision", [None, "highest", "high", "default", qlax.Precision.HIGHEST,
                                       ("highest", qlax.Precision.DEFAULT)])
def test_precision_keyword_accepted_everywhere(precision):
    a = np.arange(6.0).reshape(2, 3) / 7
    b = np.arange(12.0).reshape(3, 4) - 2
    ja = jax.lax.Precision.HIGHEST
    A, B = qb.asarray(a), qb.asarray(b)
    cases = [
        (qb.dot(A, B, precision=precision), jnp.dot(a, b, precision=ja)),
        (jnp_qb.matmul(A, B, precision=precision), jnp.matmul(a, b, precision=ja)),
        (qb.tensordot(A, B, axes=1, precision=precision), jnp.tensordot(a, b, axes=1, precision=ja)),
        (jnp_qb.inner(A, A, precision=precision), jnp.inner(a, a, precision=ja)),
        (qb.vdot(A, A, precision=precision), jnp.vdot(a, a, precision=ja)),
        (qlax.dot(A, B, precision=precision), jax.lax.dot(a, b, precision=ja)),
    ]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14)
    f = qb.jit(lambda x, y: qb.matmul(x, y, precision=precision))
    np.testing.assert_allclose(np.asarray(f(A, B)), a @ b, rtol=1e-14)
    g = qb.grad(lambda x: qb.sum(qb.dot(x, B, precision=precision)))(A)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(b.sum(1), a.shape), rtol=1e-14)
    v = qb.vmap(lambda x: qb.vdot(x, x, precision=precision))(A)
    np.testing.assert_allclose(np.asarray(v), (a * a).sum(1), rtol=1e-14)


def test_bad_precision_raises():
    A = qb.ones((2, 2))
    for f in (qb.dot, qb.matmul, qb.inner, qb.vdot, qb.tensordot, qlax.dot):
        with pytest.raises(ValueError, match="precision"):
            f(A, A, precision="ultra")
        with pytest.raises(TypeError, match="precision"):
            f(A, A, precision=3)
    with pytest.raises(ValueError, match="pair"):
        qb.dot(A, A, precision=("high", "high", "high"))
    assert qb.dot(A, A, preferred_element_type=qb.float32).dtype == qb.float32


def test_real_imag_conj_on_real_arrays_match_jax():
    x = np.array([[1.5, -2.0], [0.0, 3.25]])
    X, J = qb.asarray(x), jnp.asarray(x)
    for got, want in ((X.real, J.real), (X.imag, J.imag), (X.conj(), J.conj()), (X.conjugate(), J.conjugate())):
        assert got.dtype == X.dtype and got.shape == X.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert qb.asarray([1, 2]).imag.dtype == qb.asarray([1, 2]).dtype
    g = qb.grad(lambda v: qb.sum(v.real * v.conj() + v.imag))(X)
    np.testing.assert_allclose(np.asarray(g), 2 * x)
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda v: v.real + v.imag)(X)), x)
    np.testing.assert_array_equal(np.asarray(qb.vmap(lambda v: v.conj())(X)), x)
