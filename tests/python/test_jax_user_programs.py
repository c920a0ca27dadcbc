"""What realistic programs ported from JAX ran into (an audit of JAX-style PINN and
scientific-ML code): jitted methods, traced fill values and shifts, jax.ops' segment
reductions, SciPy's one-triangle Cholesky, JAX's configuration flags, integer sums with
dtype=, hard_tanh's slope at its bounds, float32 running sums, shapes given as arrays."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import quabla as qb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def test_jit_on_methods_binds_self():
    class Model:
        def __init__(self, k):
            self.k = k

        @qb.jit
        def double(self, x):
            return x * 2.0

        @functools.partial(qb.jit, static_argnums=0)
        def scale(self, x):
            return x * self.k

    m = Model(3.0)
    np.testing.assert_array_equal(np.asarray(m.double(qb.ones(2))), [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(m.scale(qb.ones(2))), [3.0, 3.0])
    assert np.asarray(Model(5.0).scale(qb.ones(1)))[0] == 5.0  # another instance: another static value
    assert isinstance(Model.double, type(qb.jit(lambda x: x)))  # looked up on the class: the jitted function


def test_full_with_traced_and_array_fill_values():
    assert np.asarray(qb.jit(lambda v: qb.full((3,), v))(qb.asarray(2.0))).tolist() == [2.0, 2.0, 2.0]
    assert float(qb.grad(lambda v: qb.sum(qb.full_like(qb.ones(3), v)))(2.0)) == 3.0
    np.testing.assert_array_equal(np.asarray(qb.vmap(lambda v: qb.full((2,), v))(qb.arange(3.0))),
                                  np.repeat(np.arange(3.0)[:, None], 2, axis=1))
    np.testing.assert_array_equal(np.asarray(qb.full((2, 2), qb.asarray([1.0, 2.0]))), np.full((2, 2), [1.0, 2.0]))
    assert float(qb.grad(lambda t: qb.sum(qb.lax.full((4,), t) ** 2))(1.5)) == pytest.approx(12.0)
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda t: qb.pad(qb.ones(2), 1, constant_values=(t, 2 * t)))(
        qb.asarray(3.0))), [3.0, 1.0, 1.0, 6.0])
    with pytest.raises(ValueError, match="does not broadcast"):
        qb.full((2, 3), qb.asarray([1.0, 2.0]))


@pytest.mark.parametrize("name", ["segment_sum", "segment_prod", "segment_max", "segment_min"])
def test_segment_reductions_match_jax(name):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(12, 3))
    ids = np.array([0, 2, 2, 5, -1, 1, 0, 7, 3, 3, 5, 5])  # -1 and 7 are out of range: dropped
    q, j = getattr(qb.ops, name), getattr(jax.ops, name)
    np.testing.assert_allclose(np.asarray(q(data, ids, 6)), np.asarray(j(data, ids, 6)), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(qb.jit(lambda d: q(d, ids, num_segments=6))(data)),
                               np.asarray(j(data, ids, 6)), rtol=1e-14)
    loss_q = lambda d: qb.sum(qb.where(qb.isfinite(q(d, ids, 6)), q(d, ids, 6), 0.0) ** 2)  # noqa: E731
    loss_j = lambda d: jnp.sum(jnp.where(jnp.isfinite(j(d, ids, 6)), j(d, ids, 6), 0.0) ** 2)  # noqa: E731
    if name == "segment_prod":  # repeated ids: JAX raises NotImplementedError, Quabla a ValueError saying so
        with pytest.raises(ValueError, match="unique indices"):
            qb.grad(loss_q)(data)
    else:
        np.testing.assert_allclose(np.asarray(qb.grad(loss_q)(data)), np.asarray(jax.grad(loss_j)(data)), rtol=1e-12)
    ints = np.arange(5)
    np.testing.assert_array_equal(np.asarray(q(ints, np.array([0, 0, 1, 3, 3]))),
                                  np.asarray(j(jnp.asarray(ints), jnp.array([0, 0, 1, 3, 3]))))


def test_segment_reduction_errors():
    with pytest.raises(ValueError, match="num_segments="):
        qb.jit(lambda i: qb.ops.segment_sum(qb.ones(3), i))(qb.asarray([0, 1, 1]))
    with pytest.raises(TypeError, match="integers"):
        qb.ops.segment_sum(qb.ones(3), qb.asarray([0.0, 1.0, 1.0]), 2)
    with pytest.raises(ValueError, match="one id per row"):
        qb.ops.segment_sum(qb.ones(3), qb.asarray([0, 1]), 2)


@pytest.mark.parametrize("lower", [True, False])
def test_scipy_cholesky_reads_one_triangle(lower):
    import scipy.linalg as sl
    a = np.array([[2.0, 1.0, 0.3], [0.5, 3.0, -0.2], [0.1, 0.7, 4.0]])  # not symmetric
    np.testing.assert_allclose(np.asarray(qb.scipy.linalg.cholesky(a, lower=lower)), sl.cholesky(a, lower=lower),
                               rtol=1e-14)
    c, low = qb.scipy.linalg.cho_factor(a, lower=lower)
    np.testing.assert_allclose(np.asarray(qb.scipy.linalg.cho_solve((c, low), np.ones(3))),
                               sl.cho_solve(sl.cho_factor(a, lower=lower), np.ones(3)), rtol=1e-13)
    # the derivative is that of a function of the triangle read: central differences along
    # any direction, and JAX's along symmetric ones
    f = lambda m: qb.sum(qb.scipy.linalg.cholesky(m, lower=lower) ** 3)  # noqa: E731
    g = np.asarray(qb.grad(f)(a))
    rng = np.random.default_rng(1)
    for d in (rng.normal(size=(3, 3)), None):
        if d is None:
            d = rng.normal(size=(3, 3))
            d = d + d.T
            gj = np.asarray(jax.grad(lambda m: jnp.sum(jax.scipy.linalg.cholesky(m, lower=lower) ** 3))(a))
            assert np.sum(g * d) == pytest.approx(np.sum(gj * d), rel=1e-12)
        h = 1e-6
        fd = (float(f(qb.asarray(a + h * d))) - float(f(qb.asarray(a - h * d)))) / (2 * h)
        assert np.sum(g * d) == pytest.approx(fd, rel=1e-7)
    assert np.all((np.triu(g, 1) if lower else np.tril(g, -1)) == 0)


def test_jax_flags_are_accepted():
    qb.config.update("jax_log_compiles", True)
    assert qb.config.jax_log_compiles is True
    qb.config.update("jax_log_compiles", False)
    with pytest.warns(RuntimeWarning, match="does not check results for NaN"):
        qb.config.update("jax_debug_nans", True)
    qb.config.update("jax_debug_nans", False)
    qb.config.update("jax_threefry_partitionable", True)
    with pytest.raises(ValueError, match="accepts"):
        qb.config.update("jax_threefry_partitionable", False)
    with pytest.raises(ValueError, match="not a setting Quabla has"):
        qb.config.update("jax_no_such_flag", 1)
    with pytest.raises(AttributeError, match="no setting"):
        qb.config.jax_no_such_flag  # noqa: B018


def test_integer_sums_with_dtype_and_hard_tanh_slope():
    x = qb.asarray(np.array([2 ** 30, 2 ** 30, 3], np.int32))
    s = qb.sum(x, dtype=qb.int32)
    assert s.dtype == qb.int32 and int(s) == int(np.sum(np.asarray(x), dtype=np.int32))
    assert qb.prod(x, dtype=qb.int32).dtype == qb.int32 and qb.sum(x).dtype == qb.int64
    for v in (1.0, -1.0, 0.3, 1.5, -2.0):
        assert float(qb.grad(qb.nn.hard_tanh)(v)) == float(jax.grad(jax.nn.hard_tanh)(v))
    np.testing.assert_array_equal(np.asarray(qb.nn.hard_tanh(qb.asarray([2.0, -3.0, 0.5]))), [1.0, -1.0, 0.5])


def test_float32_running_sums_are_accurate():
    x = np.full(10 ** 5, 0.1, np.float32)
    exact = np.cumsum(x.astype(np.float64))
    for got in (qb.cumsum(qb.asarray(x)), qb.jit(qb.cumsum)(qb.asarray(x))):
        got = np.asarray(got)
        assert got.dtype == np.float32
        assert np.max(np.abs(got - exact) / exact) < 1e-7  # one rounding per output (float32 steps: 1.4e-4)
    y = np.random.default_rng(2).normal(size=(3, 500, 4)).astype(np.float32)
    want = np.cumsum(y.astype(np.float64)[:, ::-1], axis=1)[:, ::-1]
    assert np.max(np.abs(np.asarray(qb.lax.cumsum(qb.asarray(y), axis=1, reverse=True)) - want)) < 1e-5


def test_array_valued_shifts_spacings_fill_values_and_shapes():
    x = qb.arange(5.0)
    np.testing.assert_array_equal(np.asarray(qb.roll(x, qb.asarray(2))), np.roll(np.arange(5.0), 2))
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda s: qb.roll(x, s))(qb.asarray(-1))), np.roll(np.arange(5.0), -1))
    np.testing.assert_array_equal(np.asarray(qb.vmap(lambda s: qb.roll(x, s))(qb.asarray([0, 1, 7]))),
                                  np.stack([np.roll(np.arange(5.0), k) for k in (0, 1, 7)]))
    np.testing.assert_array_equal(np.asarray(qb.grad(lambda v: qb.sum(qb.roll(v, qb.asarray(1)) * x))(x)),
                                  np.roll(np.arange(5.0), -1))
    with pytest.raises(TypeError, match="integer scalar"):
        qb.roll(x, qb.asarray(1.5))
    np.testing.assert_allclose(np.asarray(qb.jit(lambda h: qb.gradient(x ** 2, h))(qb.asarray(0.5))),
                               np.gradient(np.arange(5.0) ** 2, 0.5))
    v = qb.asarray([1.0, np.nan, np.inf, -np.inf])
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda t: qb.nan_to_num(v, nan=t, posinf=t * 2))(qb.asarray(5.0))),
                                  np.nan_to_num(np.asarray(v), nan=5.0, posinf=10.0))
    assert float(qb.grad(lambda t: qb.sum(qb.nan_to_num(v, nan=t, posinf=2 * t, neginf=0.0)))(1.0)) == 3.0
    assert qb.zeros(qb.asarray(3)).shape == (3,) and qb.ones((np.int64(2), qb.asarray(3))).shape == (2, 3)
    with pytest.raises(qb.TracerError):
        qb.jit(lambda n: qb.zeros(n))(qb.asarray(3))
    with pytest.raises(TypeError, match="shape"):
        qb.zeros(qb.asarray(3.0))


def test_custom_root_solve_may_close_over_the_parameter():
    def make(np_, lax):
        def fixed_point(th):
            f = lambda x: x - np_.cos(th * x)  # noqa: E731
            solve = lambda f, x0: lax.fori_loop(0, 50, lambda i, x: x - f(x) / (1 + th * np_.sin(th * x)), x0)  # noqa: E731
            return lax.custom_root(f, 0.5, solve, lambda g, y: y / g(1.0))
        return fixed_point
    q, j = make(qb, qb.lax), make(jnp, jax.lax)
    assert float(qb.grad(q)(1.0)) == pytest.approx(float(jax.grad(j)(1.0)), rel=1e-13)
    assert float(qb.grad(qb.grad(q))(1.0)) == pytest.approx(float(jax.grad(jax.grad(j))(1.0)), rel=1e-12)
    np.testing.assert_allclose(np.asarray(qb.jit(qb.vmap(qb.grad(q)))(qb.asarray([0.5, 1.0]))),
                               np.asarray(jax.vmap(jax.grad(j))(jnp.asarray([0.5, 1.0]))), rtol=1e-13)


def test_devices_have_jax_device_attributes(monkeypatch):
    cpu = qb.devices()[0]
    assert cpu == "cpu" and cpu.platform == "cpu" and cpu.id == 0 and cpu.process_index == 0
    assert qb.ones(2).device == "cpu" and qb.ones(2).devices() == {"cpu"}
    assert repr(qb.devices()) == "['cpu']"  # still the names
    monkeypatch.delenv("QUABLA_CUDA_EMULATOR", raising=False)
    if not qb._cuda.device_names():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            qb.devices("gpu")  # JAX's name; RuntimeError when there is none, as JAX's
    monkeypatch.setenv("QUABLA_CUDA_EMULATOR", "1")
    gpu = qb.devices("gpu")[0]
    assert gpu == "cuda:0" and gpu.platform == "gpu" and gpu.id == 0
    x = qb.device_put(np.ones(2), gpu)
    assert x.device == "cuda:0" and x.device.platform == "gpu" and x.devices() == {"cuda:0"}
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda a: a * 2.0, device=gpu)(x)), [2.0, 2.0])


def test_numpy_and_jax_keyword_arguments():
    a = np.arange(6.0).reshape(2, 3)
    x = qb.asarray(a)
    assert float(qb.var(x, correction=1)) == pytest.approx(np.var(a, ddof=1), rel=1e-15)
    np.testing.assert_allclose(np.asarray(x.std(axis=0, correction=1)), np.std(a, axis=0, ddof=1), rtol=1e-15)
    with pytest.raises(ValueError, match="ddof or correction"):
        qb.var(x, ddof=1, correction=1)
    i8 = qb.asarray(np.array([100, 100, 100], np.int8))
    assert qb.sum(i8, promote_integers=False).dtype == qb.int8 and int(qb.sum(i8, promote_integers=False)) == 44
    assert qb.sum(i8).dtype == qb.int64 and x.sum(promote_integers=False).dtype == qb.float64
    assert qb.array([1.0, 2.0], copy=False).tolist() == [1.0, 2.0] and qb.asarray([1.0], copy=True).shape == (1,)
    assert qb.array([1.0, 2.0], ndmin=3).shape == (1, 1, 2) and qb.array(3.0, ndmin=1).shape == (1,)
    with pytest.raises(ValueError, match="C-ordered"):
        qb.array([1.0], order="F")
    np.testing.assert_array_equal(np.asarray(x.ravel(order="F")), a.ravel(order="F"))
    assert x.cumsum(dtype=qb.float32).dtype == qb.float32
    np.testing.assert_array_equal(np.asarray(x.cumprod(axis=1)), a.cumprod(axis=1))
    assert float(x.ptp()) == 5.0
    np.testing.assert_array_equal(np.asarray(x.compress([True, False], axis=0)), a.compress([True, False], axis=0))
    assert x.__array_namespace__() is qb.numpy
    m = np.array([[1, 2], [1, 2], [0, 1]])
    for got, want in zip(qb.unique(qb.asarray(m), axis=0, return_counts=True), np.unique(m, axis=0, return_counts=True)):
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(NotImplementedError, match="axis="):
        qb.jit(lambda v: qb.unique(v, axis=0, size=2))(m)


def test_lax_sort_of_several_operands_and_interleaved_einsum():
    k = np.array([3, 1, 2, 1, 3])
    k2 = np.array([0.0, 5.0, 1.0, 2.0, -1.0])
    v = np.arange(5.0)
    for num_keys in (1, 2):
        got = qb.lax.sort((qb.asarray(k), qb.asarray(k2), qb.asarray(v)), num_keys=num_keys)
        want = jax.lax.sort((jnp.asarray(k), jnp.asarray(k2), jnp.asarray(v)), num_keys=num_keys)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    with pytest.raises(ValueError, match="num_keys"):
        qb.lax.sort((qb.asarray(k),), num_keys=2)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(qb.einsum(a, [0, 1], b, [1, 2], [0, 2])), a @ b)
    np.testing.assert_allclose(np.asarray(qb.einsum(a, [Ellipsis, 1], np.ones(3), [1])), a.sum(-1))
    with pytest.raises(ValueError, match="sublist"):
        qb.einsum(a, [0, "i"])


def test_tree_prefix_map_children_flatten_up_to_and_transpose():
    f = lambda a, b: (a, b)  # noqa: E731
    assert qb.tree_util.tree_map(f, [1, 2], [(3, 4), 5]) == jax.tree_util.tree_map(f, [1, 2], [(3, 4), 5])
    with pytest.raises(ValueError, match="prefix"):
        qb.tree.map(f, [1, 2], [1, 2, 3])
    td = qb.tree_util.tree_structure([1, (2, 3)])
    assert [str(c) for c in td.children()] == ["TreeDef(*)", "TreeDef((*, *))"]
    assert qb.tree_util.tree_structure([1, 2]).flatten_up_to([(3, 4), {"a": 5}]) == [(3, 4), {"a": 5}]
    with pytest.raises(ValueError, match="prefix"):
        qb.tree_util.tree_structure([1, 2]).flatten_up_to((1, 2))
    t = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert qb.tree.transpose(qb.tree.structure([0, 0]), None, t) == {"a": [1, 3], "b": [2, 4]}


def test_grad_of_a_python_complex_argument():
    assert complex(qb.grad(lambda z: qb.abs(z) ** 2)(1.0 + 2j)) == complex(jax.grad(lambda z: jnp.abs(z) ** 2)(1.0 + 2j))
    assert complex(qb.grad(lambda z: z ** 2, holomorphic=True)(1.0 + 2j)) == 2 + 4j


def test_key_arrays_stack_reshape_and_have_a_key_dtype():
    k = qb.random.key(0)
    ks, jks = qb.random.split(k, 4), jax.random.split(jax.random.key(0), 4)
    assert str(k.dtype) == str(jax.random.key(0).dtype) == "key<fry>"
    assert qb.issubdtype(k.dtype, qb.dtypes.prng_key) and not qb.issubdtype(qb.float32, qb.dtypes.prng_key)
    for got, want in ((qb.stack([k, ks[1]]), jnp.stack([jax.random.key(0), jks[1]])),
                      (qb.concatenate([ks, ks[:2]]), jnp.concatenate([jks, jks[:2]])),
                      (ks.reshape(2, 2).T, jks.reshape(2, 2).T), (qb.stack([ks, ks], axis=1), jnp.stack([jks, jks], axis=1)),
                      (ks.reshape(2, 2).ravel(), jks.reshape(2, 2).ravel())):
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(qb.random.key_data(got)), np.asarray(jax.random.key_data(want)))
    np.testing.assert_allclose(np.asarray(qb.jit(lambda kk: qb.random.normal(qb.stack([kk, kk])[1], (3,)))(k)),
                               np.asarray(jax.random.normal(jax.random.key(0), (3,))), rtol=1e-15)
    with pytest.raises(ValueError, match="out of range"):
        qb.stack([k, k], axis=2)


def test_lax_linalg_matches_jax():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    b = rng.normal(size=(4, 3))
    L = qb.lax.linalg
    J = jax.lax.linalg
    np.testing.assert_allclose(np.asarray(L.cholesky(spd)), np.asarray(J.cholesky(spd)), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(L.cholesky(np.tril(spd), symmetrize_input=False)),
                               np.asarray(J.cholesky(np.tril(spd), symmetrize_input=False)), rtol=1e-13)
    (v, w), (jv, jw) = L.eigh(spd), J.eigh(spd)
    np.testing.assert_allclose(np.asarray(w), np.asarray(jw), rtol=1e-13)
    np.testing.assert_allclose(np.abs(np.asarray(v)), np.abs(np.asarray(jv)), atol=1e-12)
    for got, want in zip(L.lu(a), J.lu(a)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(np.asarray(L.lu_pivots_to_permutation(np.array([2, 2, 3]), 5)),
                                  np.asarray(J.lu_pivots_to_permutation(jnp.array([2, 2, 3], jnp.int32), 5)))
    q, r = L.qr(a[:, :3])
    assert q.shape == (4, 4) and np.allclose(np.asarray(q @ r), a[:, :3])
    np.testing.assert_allclose(np.asarray(L.svd(a, compute_uv=False)), np.asarray(J.svd(a, compute_uv=False)), rtol=1e-13)
    t = np.triu(a) + 3 * np.eye(4)
    for left in (True, False):
        for transpose in (False, True):
            rhs = b if left else b.T
            np.testing.assert_allclose(
                np.asarray(L.triangular_solve(t, rhs, left_side=left, transpose_a=transpose)),
                np.asarray(J.triangular_solve(t, rhs, left_side=left, transpose_a=transpose)), rtol=1e-12)
    dl, d, du = np.r_[0, rng.normal(size=3)], rng.normal(size=4) + 5, np.r_[rng.normal(size=3), 0]
    np.testing.assert_allclose(np.asarray(L.tridiagonal_solve(dl, d, du, b)), np.asarray(J.tridiagonal_solve(dl, d, du, b)),
                               rtol=1e-12)
    g = qb.grad(lambda dd: qb.sum(L.tridiagonal_solve(dl, dd, du, b) ** 2))(d)
    gj = jax.grad(lambda dd: jnp.sum(J.tridiagonal_solve(dl, dd, du, b) ** 2))(d)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-11)
    w, vl, vr = L.eig(a)
    jw, jvl, jvr = J.eig(a)
    np.testing.assert_allclose(np.asarray(w), np.asarray(jw), rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(vl)), np.abs(np.asarray(jvl)), atol=1e-12)
    vl = np.asarray(vl)
    np.testing.assert_allclose(vl.conj().T @ a, np.diag(np.asarray(w)) @ vl.conj().T, atol=1e-12)


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "mirror", "wrap", "reflect"])
def test_map_coordinates_matches_jax(order, mode):
    rng = np.random.default_rng(3)
    img = rng.normal(size=(5, 7))
    c = [rng.uniform(-3, 8, size=(4, 6)), rng.uniform(-4, 10, size=(4, 6))]
    c[0][0, :4] = [0.5, 1.5, 2.5, -0.5]  # halves: order 0 rounds them away from zero
    got = qb.scipy.ndimage.map_coordinates(img, c, order, mode=mode, cval=1.5)
    want = jax.scipy.ndimage.map_coordinates(img, c, order, mode=mode, cval=1.5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13, atol=1e-13)
    if order == 1:
        def f(m, nd):
            return lambda cc: m.sum(nd.map_coordinates(img, [cc, c[1]], 1, mode=mode) ** 2)
        np.testing.assert_allclose(np.asarray(qb.grad(f(qb, qb.scipy.ndimage))(c[0])),
                                   np.asarray(jax.grad(f(jnp, jax.scipy.ndimage))(c[0])), rtol=1e-11)


def test_map_coordinates_errors():
    with pytest.raises(NotImplementedError, match="order"):
        qb.scipy.ndimage.map_coordinates(np.ones(3), [np.zeros(2)], 3)
    with pytest.raises(ValueError, match="one coordinate array per input axis"):
        qb.scipy.ndimage.map_coordinates(np.ones((3, 3)), [np.zeros(2)], 1)
    with pytest.raises(ValueError, match="mode"):
        qb.scipy.ndimage.map_coordinates(np.ones(3), [np.zeros(2)], 1, mode="grid-wrap")


@pytest.mark.parametrize("method", ["nearest", "linear", "cubic", "lanczos3", "lanczos5"])
def test_image_resize_matches_jax(method):
    rng = np.random.default_rng(4)
    img = rng.normal(size=(9, 13, 2))
    for shape in [(5, 20, 2), (18, 7, 2), (9, 13, 2), (1, 3, 2)]:
        for antialias in (True, False):
            np.testing.assert_allclose(np.asarray(qb.image.resize(img, shape, method, antialias=antialias)),
                                       np.asarray(jax.image.resize(img, shape, method, antialias=antialias)),
                                       rtol=1e-12, atol=1e-12)
    if method != "nearest":
        g = qb.grad(lambda x: qb.sum(qb.image.resize(x, (5, 20, 2), method) ** 2))(img)
        gj = jax.grad(lambda x: jnp.sum(jax.image.resize(x, (5, 20, 2), method) ** 2))(img)
        np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-11, atol=1e-12)
        got = qb.image.scale_and_translate(img, (12, 10, 2), (0, 1), qb.asarray([1.3, 0.7]), qb.asarray([0.5, -1.0]),
                                           method)
        want = jax.image.scale_and_translate(img, (12, 10, 2), (0, 1), jnp.array([1.3, 0.7]), jnp.array([0.5, -1.0]),
                                             method)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


def test_image_resize_errors():
    with pytest.raises(ValueError, match="unknown method"):
        qb.image.resize(np.ones((2, 2)), (3, 3), "bogus")
    with pytest.raises(ValueError, match="rank"):
        qb.image.resize(np.ones((2, 2)), (3,), "linear")
