"""The jax.lax names of quabla/_lax_more.py against jax.lax itself on the same inputs (x64
enabled): gather and the scatters with their dimension numbers and modes, the transposed,
patch and local convolutions and their shape helpers, and the small elementwise, shape and
bit-level functions. Values, dtypes and shapes eagerly and under qb.jit, derivatives
against jax.grad where JAX differentiates, and errors by type and message."""
import numpy as np
import pytest

import quabla as qb

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
L = jax.lax
Q = qb.lax

rng = np.random.default_rng(7)


def same(got, want, tol=None):
    """got (a qb array, or a tuple/list of them) equals want (JAX's) in shape, dtype and value."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, tol)
        return
    assert isinstance(got, qb.Array), type(got)
    w = np.asarray(want)
    g = np.asarray(got)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert got.dtype.name == w.dtype.name, (got.dtype.name, w.dtype.name)
    if tol is None:
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def eager_and_jit(f, *args):
    """f(*args) eagerly and under qb.jit (args are qb arrays)."""
    return f(*args), qb.jit(f)(*args)


# -- gather --------------------------------------------------------------------------------------

GATHERS = [
    # (operand shape, start_indices, dimension numbers, slice_sizes)
    ((5, 3), [[0], [4], [2], [7], [-1]], dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3)),
    ((3, 4), [[[1, 3], [0, 0]], [[2, 1], [5, -2]]],
     dict(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)), (1, 1)),
    ((4, 5), [[1, 2], [3, 0], [-1, 4], [2, 2]], dict(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1)),
     (2, 3)),
    ((4, 5), [[1, 2], [3, 0], [0, 9]], dict(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1, 0)),
     (2, 1)),
    ((3, 4), [[1], [2], [0], [3]], dict(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,)), (3, 1)),
    ((3, 4, 5), [[2], [1], [4]], dict(offset_dims=(1,), collapsed_slice_dims=(0, 1), start_index_map=(1,)), (1, 1, 5)),
    ((3, 4, 5), [[0, 1], [2, 0]], dict(offset_dims=(0, 2), collapsed_slice_dims=(1,), start_index_map=(0, 2)),
     (2, 1, 4)),
    ((5,), np.zeros((2, 0), np.int64), dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=()), (3,)),
    ((2, 3, 4), [[[0, 1], [2, 3]], [[1, 1], [0, 0]], [[2, 9], [1, -1]]][:2],
     dict(offset_dims=(), collapsed_slice_dims=(1, 2), start_index_map=(1, 2), operand_batching_dims=(0,),
          start_indices_batching_dims=(0,)), (1, 1, 1)),
    ((2, 3, 4), [[[1], [2], [0]], [[0], [1], [3]]],
     dict(offset_dims=(2,), collapsed_slice_dims=(2,), start_index_map=(2,), operand_batching_dims=(0,),
          start_indices_batching_dims=(0,)), (1, 3, 1)),
]


@pytest.mark.parametrize("case", range(len(GATHERS)))
@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
def test_gather_layouts_and_modes(case, mode):
    shape, idx, dn, sizes = GATHERS[case]
    x = rng.normal(size=shape)
    idx = np.asarray(idx, dtype=np.int64)
    want = L.gather(x, idx, L.GatherDimensionNumbers(**dn), sizes, mode=mode)
    qdn = Q.GatherDimensionNumbers(**dn)
    for got in eager_and_jit(lambda a, i: Q.gather(a, i, qdn, sizes, mode=mode), qb.asarray(x), qb.asarray(idx)):
        same(got, want)


def test_gather_fill_values_dtypes_and_int32_indices():
    dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1))
    idx = np.array([[1, 3], [0, 0], [-1, 2], [2, 2]], np.int32)
    for x in (np.arange(12).reshape(3, 4), np.arange(12, dtype=np.int32).reshape(3, 4),
              rng.normal(size=(3, 4)).astype(np.float32), np.arange(12).reshape(3, 4) % 3 == 0):
        want = L.gather(x, idx, L.GatherDimensionNumbers(**dn), (1, 2), mode="fill")
        same(Q.gather(qb.asarray(x), qb.asarray(idx), Q.GatherDimensionNumbers(**dn), (1, 2), mode="fill"), want)
    x = rng.normal(size=(3, 4))
    want = L.gather(x, idx, L.GatherDimensionNumbers(**dn), (1, 2), mode="fill", fill_value=-7.5)
    same(Q.gather(qb.asarray(x), qb.asarray(idx), Q.GatherDimensionNumbers(**dn), (1, 2), mode="fill",
                  fill_value=-7.5), want)
    # JAX's own dimension numbers and mode enum are accepted too.
    same(Q.gather(qb.asarray(x), qb.asarray(idx), L.GatherDimensionNumbers(**dn), (1, 2),
                  mode=L.GatherScatterMode.FILL_OR_DROP),
         L.gather(x, idx, L.GatherDimensionNumbers(**dn), (1, 2), mode="fill"))


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_gradient(mode):
    dn = dict(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    x = rng.normal(size=(4, 5))
    idx = np.array([[1, 2], [3, 0], [-1, 4], [1, 2]])
    wts = rng.normal(size=(4, 2, 3))

    def f(lib, lx, dnc, a):
        return (lx.gather(a, idx if lib is jnp else qb.asarray(idx), dnc(**dn), (2, 3), mode=mode) * wts).sum()
    want = jax.grad(lambda a: f(jnp, L, L.GatherDimensionNumbers, a))(x)
    got = qb.grad(lambda a: f(qb, Q, Q.GatherDimensionNumbers, a))(qb.asarray(x))
    same(got, want, 1e-12)
    got = qb.jit(qb.grad(lambda a: f(qb, Q, Q.GatherDimensionNumbers, a)))(qb.asarray(x))
    same(got, want, 1e-12)


def test_gather_under_vmap():
    dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    xs = rng.normal(size=(3, 5, 2))
    idx = np.array([[4], [0], [2]])
    want = jax.vmap(lambda a: L.gather(a, idx, L.GatherDimensionNumbers(**dn), (1, 2)))(xs)
    got = qb.vmap(lambda a: Q.gather(a, qb.asarray(idx), Q.GatherDimensionNumbers(**dn), (1, 2)))(qb.asarray(xs))
    same(got, want)


def test_gather_errors():
    x = qb.asarray(rng.normal(size=(3, 4)))
    dn = Q.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    with pytest.raises(TypeError, match="integer type"):
        Q.gather(x, qb.asarray([[0.0]]), dn, (1, 4))
    with pytest.raises(TypeError, match="slice size 1"):
        Q.gather(x, qb.asarray([[0]]), dn, (2, 4))
    with pytest.raises(TypeError, match=r"slice size 5 on axis 1 must be in \[0, 4\]"):
        Q.gather(x, qb.asarray([[0]]), dn, (1, 5))
    with pytest.raises(TypeError, match="one entry per index vector"):
        Q.gather(x, qb.asarray([[0, 1]]), dn, (1, 4))
    with pytest.raises(TypeError, match="offset_dims"):
        Q.gather(x, qb.asarray([[0]]), Q.GatherDimensionNumbers((), (0,), (0,)), (1, 4))
    with pytest.raises(TypeError, match="must be sorted"):
        Q.gather(qb.zeros((2, 3, 4)), qb.asarray([[0, 0]]), Q.GatherDimensionNumbers((1,), (1, 0), (0, 1)),
                 (1, 1, 4))
    with pytest.raises(TypeError, match="rank >= 1"):
        Q.gather(x, qb.asarray(0), dn, (1, 4))
    with pytest.raises(TypeError, match="GatherDimensionNumbers"):
        Q.gather(x, qb.asarray([[0]]), ((1,), (0,), (0,)), (1, 4))
    with pytest.raises(ValueError, match='Unknown gather mode "bogus"'):
        Q.gather(x, qb.asarray([[0]]), dn, (1, 4), mode="bogus")
    with pytest.raises(NotImplementedError, match="ONE_HOT"):
        Q.gather(x, qb.asarray([[0]]), dn, (1, 4), mode="one_hot")
    with pytest.raises(TypeError, match="pair up"):
        Q.gather(x, qb.asarray([[0]]), Q.GatherDimensionNumbers((), (1,), (1,), (0,), ()), (1, 1))


def test_gather_scatter_mode_from_any():
    M = Q.GatherScatterMode
    assert M.from_any("clip") is M.CLIP
    assert M.from_any("fill") is M.FILL_OR_DROP and M.from_any("drop") is M.FILL_OR_DROP
    assert M.from_any("promise_in_bounds") is M.PROMISE_IN_BOUNDS
    assert M.from_any(None) is M.FILL_OR_DROP
    assert M.from_any(L.GatherScatterMode.CLIP) is M.CLIP
    assert [m.name for m in M] == [m.name for m in L.GatherScatterMode]
    with pytest.raises(ValueError, match="Unknown gather mode"):
        M.from_any("CLIP")
    assert Q.GatherDimensionNumbers._fields == L.GatherDimensionNumbers._fields
    assert Q.ScatterDimensionNumbers._fields == L.ScatterDimensionNumbers._fields


# -- scatter -------------------------------------------------------------------------------------

SCATTERS = [
    # (operand shape, scatter_indices, dimension numbers, updates shape)
    ((4, 3), [[0], [3], [1], [0], [6], [-1]],
     dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)), (6, 3)),
    ((3, 4), [[[1, 3], [0, 0]], [[2, 1], [0, 0]], [[5, 1], [1, -1]]],
     dict(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1)), (3, 2)),
    ((3, 4), [[1, 3], [0, 0], [-1, 2], [2, 1], [0, 0]],
     dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1)), (5, 2)),
    ((4, 5), [[1, 2], [3, 0], [0, 1]],
     dict(update_window_dims=(0, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(1, 0)), (2, 3, 3)),
    ((2, 3, 4), [[[1], [2], [0]], [[0], [2], [3]]],
     dict(update_window_dims=(), inserted_window_dims=(2,), scatter_dims_to_operand_dims=(2,),
          operand_batching_dims=(0, 1), scatter_indices_batching_dims=(0, 1)), (2, 3)),
    ((5,), np.zeros((2, 0), np.int64),
     dict(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=()), (2, 3)),
]

SCATTER_FNS = ["scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"]


@pytest.mark.parametrize("case", range(len(SCATTERS)))
@pytest.mark.parametrize("fn", SCATTER_FNS)
@pytest.mark.parametrize("mode", [None, "clip", "promise_in_bounds", "drop"])
def test_scatter_layouts_and_modes(case, fn, mode):
    shape, idx, dn, ushape = SCATTERS[case]
    x = rng.normal(size=shape)
    u = rng.normal(size=ushape)
    idx = np.asarray(idx, dtype=np.int64)
    want = getattr(L, fn)(x, idx, u, L.ScatterDimensionNumbers(**dn), mode=mode)
    qdn = Q.ScatterDimensionNumbers(**dn)
    for got in eager_and_jit(lambda a, i, v: getattr(Q, fn)(a, i, v, qdn, mode=mode), qb.asarray(x), qb.asarray(idx),
                             qb.asarray(u)):
        same(got, want, 1e-13)


UNIQUE = [  # scatter (set) cases whose in-bounds windows do not overlap
    ((4, 3), [[0], [3], [6], [-1]],
     dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)), (4, 3)),
    ((3, 4), [[1, 3], [0, 0], [9, 9], [2, 1]],
     dict(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1)), (4,)),
    ((2, 3, 4), [[[1], [2], [0]], [[0], [2], [3]]],
     dict(update_window_dims=(), inserted_window_dims=(2,), scatter_dims_to_operand_dims=(2,),
          operand_batching_dims=(0, 1), scatter_indices_batching_dims=(0, 1)), (2, 3)),
]


@pytest.mark.parametrize("case", range(len(UNIQUE)))
@pytest.mark.parametrize("mode", [None, "clip"])
def test_scatter_set(case, mode):
    shape, idx, dn, ushape = UNIQUE[case]
    x, u = rng.normal(size=shape), rng.normal(size=ushape)
    idx = np.asarray(idx)
    if mode == "clip" and case == 1:
        idx = idx[[0, 1, 3]]
        u = u[:3]
    want = L.scatter(x, idx, u, L.ScatterDimensionNumbers(**dn), mode=mode)
    qdn = Q.ScatterDimensionNumbers(**dn)
    for got in eager_and_jit(lambda a, i, v: Q.scatter(a, i, v, qdn, mode=mode), qb.asarray(x), qb.asarray(idx),
                             qb.asarray(u)):
        same(got, want)


def test_scatter_integer_and_bool_operands():
    dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [2], [0], [5]])
    for dt in (np.int32, np.int64):
        x = np.arange(4, dtype=dt) * 3
        u = np.array([5, -1, 7, 9], dtype=dt)
        for fn in ("scatter_add", "scatter_mul", "scatter_min", "scatter_max", "scatter_sub"):
            same(getattr(Q, fn)(qb.asarray(x), qb.asarray(idx), qb.asarray(u), Q.ScatterDimensionNumbers(**dn)),
                 getattr(L, fn)(x, idx, u, L.ScatterDimensionNumbers(**dn)))
    b = np.array([True, False, False, True])
    ub = np.array([False, True, True, True])
    for fn in ("scatter_min", "scatter_max"):
        same(getattr(Q, fn)(qb.asarray(b), qb.asarray(idx), qb.asarray(ub), Q.ScatterDimensionNumbers(**dn)),
             getattr(L, fn)(b, idx, ub, L.ScatterDimensionNumbers(**dn)))


WINDOW_DN = dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1))


def _scatter_grad_case(fn, idx, argnums, **kw):
    x = rng.normal(size=(3, 4)) + 2.0
    u = rng.normal(size=(len(idx), 2)) + 2.0
    wts = rng.normal(size=(3, 4))
    idx = np.asarray(idx)

    def loss(lx, dnc, a, v, i):
        return (getattr(lx, fn)(a, i, v, dnc(**WINDOW_DN), **kw) * wts).sum()
    want = jax.grad(lambda a, v: loss(L, L.ScatterDimensionNumbers, a, v, idx), argnums=argnums)(x, u)
    qi = qb.asarray(idx)
    got = qb.grad(lambda a, v: loss(Q, Q.ScatterDimensionNumbers, a, v, qi), argnums=argnums)(qb.asarray(x),
                                                                                             qb.asarray(u))
    same(list(got), list(want), 1e-12)
    got = qb.jit(qb.grad(lambda a, v: loss(Q, Q.ScatterDimensionNumbers, a, v, qi), argnums=argnums))(
        qb.asarray(x), qb.asarray(u))
    same(list(got), list(want), 1e-12)


def test_scatter_gradients():
    dup = [[1, 2], [0, 0], [2, 1], [0, 0], [-1, 0]]
    _scatter_grad_case("scatter_add", dup, (0, 1))
    _scatter_grad_case("scatter_sub", dup, (0, 1), mode="clip")
    _scatter_grad_case("scatter_mul", dup, (0,))
    _scatter_grad_case("scatter_mul", [[1, 2], [0, 0], [5, 0]], (0, 1), unique_indices=True)
    _scatter_grad_case("scatter", [[1, 2], [0, 0], [2, 0]], (0, 1), unique_indices=True)
    _scatter_grad_case("scatter_min", [[1, 2], [0, 0], [2, 0]], (0, 1))
    _scatter_grad_case("scatter_max", [[1, 2], [0, 0], [2, 0]], (0, 1))


def test_scatter_under_vmap():
    dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    xs, us = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    idx = np.array([[0], [2], [0]])
    want = jax.vmap(lambda a, u: L.scatter_add(a, idx, u, L.ScatterDimensionNumbers(**dn)))(xs, us)
    got = qb.vmap(lambda a, u: Q.scatter_add(a, qb.asarray(idx), u, Q.ScatterDimensionNumbers(**dn)))(
        qb.asarray(xs), qb.asarray(us))
    same(got, want, 1e-14)


def test_scatter_errors():
    x = qb.asarray(rng.normal(size=(3, 4)))
    dn = Q.ScatterDimensionNumbers(**WINDOW_DN)
    idx = qb.asarray([[0, 0]])
    with pytest.raises(TypeError, match="same dtypes, got float64, float32"):
        Q.scatter_add(x, idx, qb.ones((1, 2), dtype=qb.float32), dn)
    with pytest.raises(TypeError, match="updates must have rank 2"):
        Q.scatter_add(x, idx, qb.ones((2,)), dn)
    with pytest.raises(TypeError, match="scatter axes of updates"):
        Q.scatter_add(x, idx, qb.ones((2, 2)), dn)
    with pytest.raises(TypeError, match="larger than operand axis"):
        Q.scatter_add(x, idx, qb.ones((1, 5)), dn)
    with pytest.raises(TypeError, match="account for the operand"):
        Q.scatter_add(x, idx, qb.ones((1, 2)), Q.ScatterDimensionNumbers((1,), (), (0, 1)))
    with pytest.raises(TypeError, match="integer type"):
        Q.scatter(x, qb.asarray([[0.5, 0.0]]), qb.ones((1, 2)), dn)
    with pytest.raises(TypeError, match="does not accept bool"):
        Q.scatter_add(qb.asarray([True, False]), qb.asarray([[0]]), qb.asarray([True]),
                      Q.ScatterDimensionNumbers((), (0,), (0,)))
    with pytest.raises(TypeError, match="ScatterDimensionNumbers"):
        Q.scatter(x, idx, qb.ones((1, 2)), Q.GatherDimensionNumbers((1,), (0,), (0, 1)))
    with pytest.raises(NotImplementedError, match="ONE_HOT"):
        Q.scatter(x, idx, qb.ones((1, 2)), dn, mode=Q.GatherScatterMode.ONE_HOT)


def test_scatter_apply():
    dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    x = rng.normal(size=(5,))
    idx = np.array([[0], [0], [2], [9], [0], [4]])
    want = L.scatter_apply(x, idx, jnp.sin, L.ScatterDimensionNumbers(**dn), update_shape=(6,))
    qdn = Q.ScatterDimensionNumbers(**dn)
    for got in eager_and_jit(lambda a, i: Q.scatter_apply(a, i, qb.sin, qdn, update_shape=(6,)), qb.asarray(x),
                             qb.asarray(idx)):
        same(got, want, 1e-15)
    # windows, clip mode
    x2 = rng.normal(size=(3, 4))
    idx2 = np.array([[1, 3], [0, 0]])
    want = L.scatter_apply(x2, idx2, lambda v: v * 2 + 1, L.ScatterDimensionNumbers(**WINDOW_DN), update_shape=(2, 2),
                           mode="clip")
    same(Q.scatter_apply(qb.asarray(x2), qb.asarray(idx2), lambda v: v * 2 + 1, Q.ScatterDimensionNumbers(**WINDOW_DN),
                         update_shape=(2, 2), mode="clip"), want, 1e-15)
    # unique indices: differentiable (JAX gives scatter_apply no derivative): cos where applied, 1 elsewhere
    g = qb.grad(lambda a: Q.scatter_apply(a, qb.asarray([[0], [2]]), qb.sin, qdn, update_shape=(2,),
                                          unique_indices=True).sum())(qb.asarray(x))
    np.testing.assert_allclose(np.asarray(g), [np.cos(x[0]), 1, np.cos(x[2]), 1, 1], rtol=1e-14)
    # repeated indices, eagerly: func applied twice at 0, so the derivative there is cos(sin x0) cos x0
    g = qb.grad(lambda a: Q.scatter_apply(a, qb.asarray([[0], [0], [2]]), qb.sin, qdn, update_shape=(3,)).sum())(
        qb.asarray(x))
    np.testing.assert_allclose(np.asarray(g), [np.cos(np.sin(x[0])) * np.cos(x[0]), 1, np.cos(x[2]), 1, 1],
                               rtol=1e-14)
    with pytest.raises(TypeError, match="func must be callable"):
        Q.scatter_apply(qb.asarray(x), qb.asarray(idx), None, qdn, update_shape=(6,))


def test_index_take():
    src = rng.normal(size=(2, 3, 4))
    idxs = (np.array([1, 0, 5, -1]), np.array([2, 3, -1, 4]))  # taken modulo the sizes, as JAX
    want = L.index_take(src, tuple(jnp.asarray(i) for i in idxs), (0, 2))
    for got in eager_and_jit(lambda s, a, b: Q.index_take(s, (a, b), (0, 2)), qb.asarray(src), *map(qb.asarray, idxs)):
        same(got, want)
    wts = rng.normal(size=want.shape)
    gw = jax.grad(lambda s: (L.index_take(s, tuple(jnp.asarray(i) for i in idxs), (0, 2)) * wts).sum())(src)
    gq = qb.grad(lambda s: (Q.index_take(s, tuple(qb.asarray(i) for i in idxs), (0, 2)) * wts).sum())(qb.asarray(src))
    same(gq, gw, 1e-14)
    with pytest.raises(ValueError, match="one per axis"):
        Q.index_take(qb.asarray(src), (qb.asarray([0]),), (0, 1))


# -- products and shapes ---------------------------------------------------------------------------

def test_batch_matmul():
    a, b = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 5, 2))
    for got in eager_and_jit(Q.batch_matmul, qb.asarray(a), qb.asarray(b)):
        same(got, L.batch_matmul(a, b), 1e-12)
    same(Q.batch_matmul(qb.asarray(a[0, 0]), qb.asarray(b[0, 0])), L.batch_matmul(a[0, 0], b[0, 0]), 1e-12)
    same(Q.batch_matmul(qb.asarray(a.astype(np.float32)), qb.asarray(b.astype(np.float32))),
         L.batch_matmul(a.astype(np.float32), b.astype(np.float32)), 1e-5)
    gw = jax.grad(lambda x, y: (L.batch_matmul(x, y) ** 2).sum(), argnums=(0, 1))(a, b)
    gq = qb.grad(lambda x, y: (Q.batch_matmul(x, y) ** 2).sum(), argnums=(0, 1))(qb.asarray(a), qb.asarray(b))
    same(list(gq), list(gw), 1e-12)
    with pytest.raises(ValueError, match="same ndim"):
        Q.batch_matmul(qb.ones((3, 4)), qb.ones((2, 4, 5)))
    with pytest.raises(TypeError, match="batch shapes"):
        Q.batch_matmul(qb.ones((1, 3, 4)), qb.ones((2, 4, 5)))
    with pytest.raises(ValueError, match="rank >= 2"):
        Q.batch_matmul(qb.ones((3,)), qb.ones((3,)))
    with pytest.raises(TypeError, match="contracting sizes"):
        Q.batch_matmul(qb.ones((2, 3, 4)), qb.ones((2, 3, 5)))


def test_broadcast_helpers():
    for shapes in [((2, 3), (3,)), ((2, 1), (1, 3)), ((), (4, 1, 2)), ((5,),)]:
        assert Q.broadcast_shapes(*shapes) == L.broadcast_shapes(*shapes)
    with pytest.raises(ValueError, match="incompatible shapes"):
        Q.broadcast_shapes((2, 3), (4,))
    x = rng.normal(size=(3,))
    for r in (0, 1, 3):
        same(Q.broadcast_to_rank(qb.asarray(x), r), L.broadcast_to_rank(x, r))
    same(qb.jit(lambda v: Q.broadcast_to_rank(v, 3))(qb.asarray(x)), L.broadcast_to_rank(x, 3))
    same(Q.broadcast_like(qb.asarray(x), qb.zeros((2, 3))), L.broadcast_like(x, jnp.zeros((2, 3))))
    y = rng.normal(size=(2, 1))
    same(Q.broadcast_like(qb.asarray(y), qb.zeros((2, 3))), L.broadcast_like(y, jnp.zeros((2, 3))))
    with pytest.raises(ValueError, match="does not broadcast"):
        Q.broadcast_like(qb.asarray(x), qb.zeros((2, 4)))


def test_collapse_stack_unstack_tile_split():
    x = rng.normal(size=(2, 3, 4, 5))
    qx = qb.asarray(x)
    for args in [(1, 3), (1,), (-2,), (0, 4), (1, 1), (-3, -1)]:
        same(Q.collapse(qx, *args), L.collapse(x, *args))
    with pytest.raises(ValueError, match="invalid dimension range"):
        Q.collapse(qx, 3, 1)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    for ax in (0, 1, 2, -1):
        same(Q.stack([qb.asarray(a), qb.asarray(b)], ax), L.stack([a, b], ax))
    with pytest.raises(TypeError, match="same dtypes"):
        Q.stack([qb.asarray(a), qb.asarray(a.astype(np.float32))])
    with pytest.raises(ValueError, match="same shape"):
        Q.stack([qb.asarray(a), qb.ones((2,))])
    for ax in (0, 1, -1):
        got = Q.unstack(qx, ax)
        assert isinstance(got, tuple)
        same(list(got), list(L.unstack(x, ax)))
    same(Q.tile(qb.asarray(a), (2, 3)), L.tile(a, (2, 3)))
    same(qb.jit(lambda v: Q.tile(v, (1, 2)))(qb.asarray(a)), L.tile(a, (1, 2)))
    with pytest.raises(TypeError, match="reps length must be equal"):
        Q.tile(qb.asarray(a), (2,))
    pieces = Q.split(qx, (1, 0, 2), axis=1)
    assert isinstance(pieces, list)
    same(pieces, L.split(x, (1, 0, 2), axis=1))
    same(qb.jit(lambda v: Q.split(v, (3, 2), axis=-1))(qx), L.split(x, (3, 2), axis=-1))
    with pytest.raises(ValueError, match="add up to 4"):
        Q.split(qx, (2, 2), axis=3)
    g = qb.grad(lambda v: (Q.split(v, (1, 2), axis=1)[1] ** 2).sum())(qx)
    same(g, jax.grad(lambda v: (L.split(v, (1, 2), axis=1)[1] ** 2).sum())(x), 1e-14)


def test_dynamic_update_index_in_dim():
    x = rng.normal(size=(4, 3))
    u = rng.normal(size=(3,))
    for i in (1, -1, 7, -9):
        same(Q.dynamic_update_index_in_dim(qb.asarray(x), qb.asarray(u), i, 0),
             L.dynamic_update_index_in_dim(x, u, i, 0))
        same(Q.dynamic_update_index_in_dim(qb.asarray(x), qb.asarray(u[None]), i, 0, allow_negative_indices=False),
             L.dynamic_update_index_in_dim(x, u[None], i, 0, allow_negative_indices=False))
    v4 = rng.normal(size=(4,))
    for i in (2, -1, 5):  # a traced index
        same(qb.jit(lambda a, v, j: Q.dynamic_update_index_in_dim(a, v, j, 1))(qb.asarray(x), qb.asarray(v4),
                                                                               qb.asarray(i)),
             L.dynamic_update_index_in_dim(x, v4, i, 1))
    gw = jax.grad(lambda a, v: (L.dynamic_update_index_in_dim(a, v, 2, 0) ** 2).sum(), argnums=(0, 1))(x, u)
    gq = qb.grad(lambda a, v: (Q.dynamic_update_index_in_dim(a, v, 2, 0) ** 2).sum(), argnums=(0, 1))(
        qb.asarray(x), qb.asarray(u))
    same(list(gq), list(gw), 1e-14)
    with pytest.raises(ValueError, match="one slice"):
        Q.dynamic_update_index_in_dim(qb.asarray(x), qb.ones((2, 3)), 0, 0)


# -- elementwise, selection and sorting ------------------------------------------------------------

def test_reciprocal():
    x = rng.normal(size=(5,))
    for dt in (np.float32, np.float64):
        for got in eager_and_jit(Q.reciprocal, qb.asarray(x.astype(dt))):
            same(got, L.reciprocal(x.astype(dt)), 1e-6 if dt == np.float32 else 1e-15)
    same(qb.grad(lambda v: Q.reciprocal(v).sum())(qb.asarray(x)), jax.grad(lambda v: L.reciprocal(v).sum())(x), 1e-14)
    same(Q.reciprocal(qb.asarray([0.0, -0.0])), L.reciprocal(np.array([0.0, -0.0])))
    with pytest.raises(TypeError, match="needs a float array, got int64"):
        Q.reciprocal(qb.asarray([2]))


def _wide_floats(dt, n=4000):
    """Floats of both signs across the whole exponent range (subnormals included), and the
    specials."""
    info = np.finfo(dt)
    e = rng.uniform(np.log2(float(info.smallest_subnormal)), np.log2(float(info.max)), size=n)
    v = (np.sign(rng.normal(size=n)) * np.exp2(e)).astype(dt)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 65504, 65519.99, 65520, 6.1e-5, 3e-5, 1.5, 2.5,
                        1.0009765625, 1.00146484375, float(info.max), float(info.tiny), float(info.smallest_subnormal)],
                       dtype=dt)
    return np.concatenate([v, special, -special])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("bits", [(5, 10), (8, 7), (8, 10), (8, 23), (11, 20), (11, 52), (4, 3), (6, 0), (3, 1),
                                  (11, 0), (8, 1)])
def test_reduce_precision_against_jax(dt, bits):
    v = _wide_floats(dt)
    same(Q.reduce_precision(qb.asarray(v), *bits), L.reduce_precision(v, *bits))


def test_reduce_precision_jit_grad_and_errors():
    v = _wide_floats(np.float32, 200)
    same(qb.jit(lambda a: Q.reduce_precision(a, 5, 10))(qb.asarray(v)), L.reduce_precision(v, 5, 10))
    x = rng.normal(size=(6,)) * 3
    w = rng.normal(size=(6,))
    gw = jax.grad(lambda a: (L.reduce_precision(a, 5, 2) * w).sum())(x)
    gq = qb.grad(lambda a: (Q.reduce_precision(a, 5, 2) * w).sum())(qb.asarray(x))
    same(gq, gw)
    with pytest.raises(ValueError, match="exponent_bits must be positive"):
        Q.reduce_precision(qb.asarray(x), 0, 2)
    with pytest.raises(ValueError, match="mantissa_bits must be non-negative"):
        Q.reduce_precision(qb.asarray(x), 2, -1)
    with pytest.raises(TypeError, match="exponent_bits must be a Python int"):
        Q.reduce_precision(qb.asarray(x), 2.0, 1)
    with pytest.raises(TypeError, match="float32 or float64"):
        Q.reduce_precision(qb.asarray([1, 2]), 5, 10)


def test_select_n():
    cases = [rng.normal(size=(2, 3)) for _ in range(5)]
    which = np.array([[0, 4, 2], [3, 1, 0]])
    for n in (2, 3, 5):
        w = np.minimum(which, n - 1)
        for wd in (np.int32, np.int64):
            for got in eager_and_jit(lambda ww, *cs: Q.select_n(ww, *cs), qb.asarray(w.astype(wd)),
                                     *map(qb.asarray, cases[:n])):
                same(got, L.select_n(w.astype(wd), *cases[:n]))
    b = np.array([[True, False, True], [False, False, True]])
    same(Q.select_n(qb.asarray(b), *map(qb.asarray, cases[:2])), L.select_n(b, *cases[:2]))
    same(Q.select_n(True, *map(qb.asarray, cases[:2])), L.select_n(True, *cases[:2]))
    same(Q.select_n(qb.asarray(2, dtype=qb.int32), *map(qb.asarray, cases[:3])),
         L.select_n(np.int32(2), *cases[:3]))
    same(Q.select_n(qb.asarray(b), qb.asarray(cases[0])), L.select_n(b, cases[0]))
    gw = jax.grad(lambda a, c: (L.select_n(which % 2 == 0, a, c) * 3).sum(), argnums=(0, 1))(cases[0], cases[1])
    gq = qb.grad(lambda a, c: (Q.select_n(qb.asarray(which % 2 == 0), a, c) * 3).sum(), argnums=(0, 1))(
        qb.asarray(cases[0]), qb.asarray(cases[1]))
    same(list(gq), list(gw))
    c0, c1 = qb.asarray(cases[0]), qb.asarray(cases[1])
    with pytest.raises(ValueError, match="at least one case"):
        Q.select_n(True)
    with pytest.raises(TypeError, match="cannot have more than 2 cases"):
        Q.select_n(qb.asarray(b), c0, c1, c1)
    with pytest.raises(TypeError, match="same dtypes"):
        Q.select_n(True, c0, c1.astype(qb.float32))
    with pytest.raises(TypeError, match="which must be scalar or have the same shape"):
        Q.select_n(qb.asarray([True, False]), c0, c1)
    with pytest.raises(TypeError, match="boolean or integer"):
        Q.select_n(qb.asarray(1.0), c0, c1)
    with pytest.raises(TypeError, match="same shape"):
        Q.select_n(True, c0, qb.ones((3,)))


def test_sort_key_val():
    keys = rng.permutation(24).reshape(4, 6).astype(np.float64)
    keys[0, :3] = 5.0  # ties keep their order (stable)
    vals = rng.normal(size=(4, 6))
    for dim in (-1, 0, 1):
        want = L.sort_key_val(keys, vals, dim)
        for got in eager_and_jit(lambda k, v: Q.sort_key_val(k, v, dim), qb.asarray(keys), qb.asarray(vals)):
            same(got, want)
    ivals = np.arange(24).reshape(4, 6)
    same(Q.sort_key_val(qb.asarray(keys), qb.asarray(ivals)), L.sort_key_val(keys, ivals))
    w = rng.normal(size=(4, 6))
    gw = jax.grad(lambda k, v: ((L.sort_key_val(k, v)[1] + L.sort_key_val(k, v)[0] ** 2) * w).sum(),
                  argnums=(0, 1))(keys, vals)
    gq = qb.grad(lambda k, v: ((Q.sort_key_val(k, v)[1] + Q.sort_key_val(k, v)[0] ** 2) * w).sum(),
                 argnums=(0, 1))(qb.asarray(keys), qb.asarray(vals))
    same(list(gq), list(gw), 1e-14)
    with pytest.raises(TypeError, match="equal shapes"):
        Q.sort_key_val(qb.asarray(keys), qb.ones((3,)))


def test_optimization_barrier():
    tree = {"a": qb.asarray([1.0, 2.0]), "b": (qb.asarray(3), 4.0)}
    out = Q.optimization_barrier(tree)
    assert qb.tree.structure(out) == qb.tree.structure(tree)
    same(out["a"], np.array([1.0, 2.0]))
    same(out["b"][1], L.optimization_barrier(4.0))
    got = qb.jit(lambda t: Q.optimization_barrier(t)["a"] * 2)(tree)
    same(got, np.array([2.0, 4.0]))
    g = qb.grad(lambda x: (Q.optimization_barrier((x, x))[1] ** 2).sum())(qb.asarray([1.0, -3.0]))
    same(g, jax.grad(lambda x: (L.optimization_barrier((x, x))[1] ** 2).sum())(jnp.array([1.0, -3.0])))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nextafter(dt):
    info = np.finfo(dt)
    x = np.array([0.0, -0.0, 1.0, 1.0, -1.0, float(info.max), float(info.tiny), float(info.smallest_subnormal), 2.0,
                  np.inf, -np.inf, np.nan, 3.5], dt)
    y = np.array([1.0, -1.0, 2.0, 0.0, -2.0, np.inf, 0.0, 0.0, 2.0, 0.0, 0.0, 1.0, np.nan], dt)
    for got in eager_and_jit(Q.nextafter, qb.asarray(x), qb.asarray(y)):
        same(got, L.nextafter(x, y))
    with pytest.raises(TypeError, match="same dtypes"):
        Q.nextafter(qb.asarray([1.0]), qb.asarray([2.0], dtype=qb.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        Q.nextafter(qb.asarray([1]), qb.asarray([2]))


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_clz_and_mulhi(dt):
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, size=300, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, size=300, dtype=dt, endpoint=True)
    small = np.array([0, 1, -1, 2, 3, 255, 256, info.max, info.min, info.min + 1, 1 << 20], dt)
    a = np.concatenate([a, small, small])
    b = np.concatenate([b, small, small[::-1]])
    a = np.concatenate([a, a >> rng.integers(0, info.bits, size=a.size).astype(dt)])
    b = np.concatenate([b, b])
    for got in eager_and_jit(Q.clz, qb.asarray(a)):
        same(got, L.clz(a))
    for got in eager_and_jit(Q.mulhi, qb.asarray(a), qb.asarray(b)):
        same(got, L.mulhi(a, b))
    with pytest.raises(TypeError, match="needs an integer array"):
        Q.clz(qb.asarray([True]))
    with pytest.raises(TypeError, match="needs an integer array"):
        Q.mulhi(qb.asarray([1.0]), qb.asarray([1.0]))
    with pytest.raises(TypeError, match="same dtypes"):
        Q.mulhi(qb.asarray([1], dtype=qb.int32), qb.asarray([1], dtype=qb.int64))


def test_reduce_xor():
    x = rng.integers(-1000, 1000, size=(3, 4, 5))
    for axes in [(0,), (1, 2), (), (0, 1, 2)]:
        for dt in (np.int32, np.int64):
            same(Q.reduce_xor(qb.asarray(x.astype(dt)), axes), L.reduce_xor(x.astype(dt), axes))
        b = x % 3 == 0
        same(Q.reduce_xor(qb.asarray(b), axes), L.reduce_xor(b, axes))
    same(qb.jit(lambda v: Q.reduce_xor(v, (1,)))(qb.asarray(x)), L.reduce_xor(x, (1,)))
    with pytest.raises(TypeError, match="integer or bool"):
        Q.reduce_xor(qb.asarray([1.0]), (0,))


def test_empty_dtype_zeta():
    for shape, dt in [((2, 3), qb.float32), ((0,), qb.int32), ((), qb.bool_)]:
        got = Q.empty(shape, dt)
        same(got, L.empty(shape, np.dtype(dt.name)))
    same(Q.empty((2,), "float64"), L.empty((2,), "float64"))
    with pytest.raises(NotImplementedError, match="out_sharding"):
        Q.empty((2,), qb.float32, out_sharding="x")
    for v in (1.0, 1, True, np.float32, "int32", np.dtype("float32"), float, int, bool, np.ones(2, np.int32),
              np.ones(2, np.float32)):
        assert Q.dtype(v).name == L.dtype(v).name, v
    assert Q.dtype(qb.float32) == qb.float32 and Q.dtype(qb.ones(2, dtype=qb.int32)) == qb.int32
    with pytest.raises(ValueError, match="None"):
        Q.dtype(None)
    x = np.array([2.0, 3.0, 4.5, 1.5])
    q = np.array([1.0, 2.0, 0.5, 3.0])
    for got in eager_and_jit(Q.zeta, qb.asarray(x), qb.asarray(q)):
        same(got, L.zeta(x, q), 1e-12)


@pytest.mark.parametrize("which", ["approx_max_k", "approx_min_k"])
def test_approx_k(which):
    x = rng.permutation(60).reshape(5, 12).astype(np.float64) / 7
    for k, dim in [(3, -1), (1, 1), (4, 0), (12, 1), (5, 0)]:
        want = getattr(L, which)(x, k, reduction_dimension=dim)
        for got in eager_and_jit(lambda v: getattr(Q, which)(v, k, reduction_dimension=dim), qb.asarray(x)):
            same(list(got), list(want))
    x32 = x.astype(np.float32)
    same(list(getattr(Q, which)(qb.asarray(x32), 2)), list(getattr(L, which)(x32, 2)))
    w = rng.normal(size=(5, 3))
    gw = jax.grad(lambda v: (getattr(L, which)(v, 3)[0] * w).sum())(x)
    gq = qb.grad(lambda v: (getattr(Q, which)(v, 3)[0] * w).sum())(qb.asarray(x))
    same(gq, gw)
    for k in (13, 0):
        with pytest.raises(ValueError, match="k must be in"):
            getattr(Q, which)(qb.asarray(x), k)
    with pytest.raises(ValueError, match="floating type"):
        getattr(Q, which)(qb.asarray([[3, 1, 2]]), 2)
    with pytest.raises(ValueError, match="recall_target"):
        getattr(Q, which)(qb.asarray(x), 2, recall_target=1.5)


def _f32_specials():
    v = _wide_floats(np.float32, 500)
    return v[~np.isnan(v)]


def test_bitcast_convert_type_same_width():
    f32 = _f32_specials()
    want = L.bitcast_convert_type(f32, jnp.int32)
    for got in eager_and_jit(lambda v: Q.bitcast_convert_type(v, qb.int32), qb.asarray(f32)):
        same(got, want)
    bits = np.asarray(want)
    same(Q.bitcast_convert_type(qb.asarray(bits), qb.float32), f32)
    f64 = _wide_floats(np.float64, 500)
    f64 = f64[~np.isnan(f64)]
    want = L.bitcast_convert_type(f64, jnp.int64)
    for got in eager_and_jit(lambda v: Q.bitcast_convert_type(v, "int64"), qb.asarray(f64)):
        same(got, want)
    same(Q.bitcast_convert_type(qb.asarray(np.asarray(want)), qb.float64), f64)
    rnd = rng.integers(-2 ** 31, 2 ** 31, size=400).astype(np.int32)
    same(Q.bitcast_convert_type(qb.asarray(rnd), qb.float32), L.bitcast_convert_type(rnd, jnp.float32))
    # NaN: the canonical quiet NaN's bits (payloads are not kept)
    same(Q.bitcast_convert_type(qb.asarray(np.array([np.nan], np.float32)), qb.int32),
         np.array([0x7FC00000], np.int32))
    same(Q.bitcast_convert_type(qb.asarray(np.array([3], np.int32)), qb.int32), np.array([3], np.int32))


def test_bitcast_convert_type_width_changes():
    f64 = _wide_floats(np.float64, 300)
    f64 = f64[~np.isnan(f64)]
    for to in (jnp.int32, jnp.float32):
        want = np.asarray(L.bitcast_convert_type(f64, to))
        if to == jnp.float32:  # words that are NaN patterns become the canonical NaN (payloads are not kept)
            got = np.asarray(Q.bitcast_convert_type(qb.asarray(f64), qb.float32))
            assert got.dtype == np.float32 and got.shape == want.shape
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            keep = ~np.isnan(want)
            np.testing.assert_array_equal(got[keep].view(np.int32), want[keep].view(np.int32))
        else:
            same(Q.bitcast_convert_type(qb.asarray(f64), qb.int32), want)
    pairs = np.asarray(L.bitcast_convert_type(f64, jnp.int32))
    same(Q.bitcast_convert_type(qb.asarray(pairs), qb.float64), f64)
    i64 = rng.integers(-2 ** 63, 2 ** 63 - 1, size=(4, 50), dtype=np.int64)
    same(Q.bitcast_convert_type(qb.asarray(i64), qb.int32), L.bitcast_convert_type(i64, jnp.int32))
    same(Q.bitcast_convert_type(qb.asarray(np.asarray(L.bitcast_convert_type(i64, jnp.int32))), qb.int64), i64)
    with pytest.raises(ValueError, match="last axis of 2"):
        Q.bitcast_convert_type(qb.asarray(np.array([1, 2, 3], np.int32)), qb.int64)
    with pytest.raises(TypeError, match="converts among"):
        Q.bitcast_convert_type(qb.asarray([True]), qb.int32)


def test_igamma_grad_a_and_random_gamma_grad():
    a = np.array([0.3, 0.5, 1.0, 2.0, 3.5, 10.0, 25.0, 2.0])
    x = np.array([0.2, 3.0, 1.0, 1.5, 2.0, 8.0, 30.0, 0.01])
    for got in eager_and_jit(Q.igamma_grad_a, qb.asarray(a), qb.asarray(x)):
        same(got, L.igamma_grad_a(a, x), 1e-9)
    for got in eager_and_jit(Q.random_gamma_grad, qb.asarray(a), qb.asarray(x)):
        same(got, L.random_gamma_grad(a, x), 1e-9)
    same(Q.igamma_grad_a(qb.asarray(2.0), qb.asarray(x)), L.igamma_grad_a(2.0, x), 1e-9)


# -- convolutions ----------------------------------------------------------------------------------

CONV_TRANSPOSE = [
    dict(strides=(1, 1), padding="SAME"),
    dict(strides=(2, 2), padding="SAME"),
    dict(strides=(2, 1), padding="VALID"),
    dict(strides=(3, 2), padding=((1, 2), (0, 1))),
    dict(strides=(2, 2), padding="SAME", rhs_dilation=(2, 1)),
    dict(strides=(2, 2), padding=((1, 1), (0, 1)), use_consistent_padding=True),
    dict(strides=(2, 3), padding="VALID", use_consistent_padding=True),
]


@pytest.mark.parametrize("kw", CONV_TRANSPOSE)
def test_conv_transpose_default_layout(kw):
    x, w = rng.normal(size=(2, 7, 6, 3)), rng.normal(size=(3, 2, 3, 4))  # NHWC, HWIO
    want = L.conv_transpose(x, w, **kw)
    for got in eager_and_jit(lambda a, b: Q.conv_transpose(a, b, **kw), qb.asarray(x), qb.asarray(w)):
        same(got, want, 1e-12)
    shape = Q.conv_transpose_shape_tuple(x.shape, w.shape, kw["strides"], kw["padding"], ("NHWC", "HWIO", "NHWC"))
    if "rhs_dilation" not in kw and "use_consistent_padding" not in kw:
        assert shape == want.shape
    wts = rng.normal(size=want.shape)
    gw = jax.grad(lambda a, b: (L.conv_transpose(a, b, **kw) * wts).sum(), argnums=(0, 1))(x, w)
    gq = qb.grad(lambda a, b: (Q.conv_transpose(a, b, **kw) * wts).sum(), argnums=(0, 1))(qb.asarray(x),
                                                                                        qb.asarray(w))
    same(list(gq), list(gw), 1e-11)


def test_conv_transpose_layouts_and_kernel_transpose():
    x = rng.normal(size=(2, 7, 6, 3))
    wt = rng.normal(size=(3, 2, 4, 3))
    same(Q.conv_transpose(qb.asarray(x), qb.asarray(wt), (2, 2), "VALID", transpose_kernel=True),
         L.conv_transpose(x, wt, (2, 2), "VALID", transpose_kernel=True), 1e-12)
    xn, wn = rng.normal(size=(2, 3, 7, 6)), rng.normal(size=(3, 4, 3, 2))
    dn = ("NCHW", "IOHW", "NCHW")
    same(Q.conv_transpose(qb.asarray(xn), qb.asarray(wn), (2, 1), "SAME", dimension_numbers=dn),
         L.conv_transpose(xn, wn, (2, 1), "SAME", dimension_numbers=dn), 1e-12)
    x1, w1 = rng.normal(size=(2, 9, 3)), rng.normal(size=(4, 3, 5))  # 1-d: NHC, HIO
    same(Q.conv_transpose(qb.asarray(x1), qb.asarray(w1), (3,), "SAME"), L.conv_transpose(x1, w1, (3,), "SAME"), 1e-12)
    same(Q.conv_transpose(qb.asarray(x.astype(np.float32)), qb.asarray(wt[..., :3, :].astype(np.float32)), (2, 2),
                          "SAME"),
         L.conv_transpose(x.astype(np.float32), wt[..., :3, :].astype(np.float32), (2, 2), "SAME"), 1e-5)
    with pytest.raises(ValueError, match="padding must be 'SAME', 'VALID'"):
        Q.conv_transpose(qb.asarray(x), qb.asarray(wt[..., :3, :]), (2, 2), "SAME_LOWER")
    with pytest.raises(ValueError, match="one rank of at least 3"):
        Q.conv_transpose(qb.ones((2, 3)), qb.ones((3, 3)), (1,), "SAME")


PATCHES = [
    dict(filter_shape=(3, 2), window_strides=(1, 1), padding="VALID"),
    dict(filter_shape=(2, 3), window_strides=(2, 1), padding="SAME", rhs_dilation=(1, 2)),
    dict(filter_shape=(2, 2), window_strides=(1, 1), padding=((1, 0), (2, 1)), lhs_dilation=(2, 1)),
    dict(filter_shape=(3, 2), window_strides=(1, 2), padding="SAME", dimension_numbers=("NHWC", "WHIO", "NHWC")),
    dict(filter_shape=(3, 2), window_strides=(1, 2), padding="SAME", dimension_numbers=("NHWC", "OIWH", "CNHW")),
]


@pytest.mark.parametrize("kw", PATCHES)
def test_conv_general_dilated_patches(kw):
    nhwc = kw.get("dimension_numbers", ("NCHW",))[0] == "NHWC"
    x = rng.normal(size=(2, 7, 6, 3) if nhwc else (2, 3, 7, 6))
    want = L.conv_general_dilated_patches(x, **kw)
    for got in eager_and_jit(lambda a: Q.conv_general_dilated_patches(a, **kw), qb.asarray(x)):
        same(got, want, 1e-14)
    wts = rng.normal(size=want.shape)
    gw = jax.grad(lambda a: (L.conv_general_dilated_patches(a, **kw) * wts).sum())(x)
    gq = qb.grad(lambda a: (Q.conv_general_dilated_patches(a, **kw) * wts).sum())(qb.asarray(x))
    same(gq, gw, 1e-12)


def test_conv_general_dilated_local():
    x = rng.normal(size=(2, 3, 7, 6))
    out_sp = L.conv_general_dilated_patches(x, (3, 2), (1, 1), "VALID").shape[2:]
    w = rng.normal(size=(5, 3 * 6) + out_sp)
    want = L.conv_general_dilated_local(x, w, (1, 1), "VALID", (3, 2))
    for got in eager_and_jit(lambda a, b: Q.conv_general_dilated_local(a, b, (1, 1), "VALID", (3, 2)), qb.asarray(x),
                             qb.asarray(w)):
        same(got, want, 1e-12)
    gw = jax.grad(lambda a, b: (L.conv_general_dilated_local(a, b, (1, 1), "VALID", (3, 2)) ** 2).sum(),
                  argnums=(0, 1))(x, w)
    gq = qb.grad(lambda a, b: (Q.conv_general_dilated_local(a, b, (1, 1), "VALID", (3, 2)) ** 2).sum(),
                 argnums=(0, 1))(qb.asarray(x), qb.asarray(w))
    same(list(gq), list(gw), 1e-11)
    x4 = rng.normal(size=(2, 7, 6, 3))
    dn = ("NHWC", "HWIO", "NHWC")
    ps = L.conv_general_dilated_patches(x4, (2, 3), (2, 1), "SAME", dimension_numbers=dn).shape
    w4 = rng.normal(size=(ps[1], ps[2], 3 * 6, 4))
    same(Q.conv_general_dilated_local(qb.asarray(x4), qb.asarray(w4), (2, 1), "SAME", (2, 3), rhs_dilation=(1, 1),
                                      dimension_numbers=dn),
         L.conv_general_dilated_local(x4, w4, (2, 1), "SAME", (2, 3), dimension_numbers=dn), 1e-12)
    with pytest.raises(ValueError, match="input features x window"):
        Q.conv_general_dilated_local(qb.asarray(x), qb.asarray(w[:, :5]), (1, 1), "VALID", (3, 2))


def test_conv_shape_helpers():
    for args in [((5, 6), (3, 2), (2, 1), "SAME"), ((5, 6), (3, 2), (2, 1), "SAME_LOWER"),
                 ((5, 6), (3, 2), (2, 1), "same"), ((9, 1), (4, 3), (3, 1), "VALID")]:
        assert Q.padtype_to_pads(*args) == L.padtype_to_pads(*args)
    with pytest.raises(ValueError, match="'VALID', 'SAME' or 'SAME_LOWER'"):
        Q.padtype_to_pads((5,), (3,), (1,), "FULL")
    with pytest.raises(TypeError, match="padding must be"):
        Q.padtype_to_pads((5,), (3,), (1,), ((1, 1),))
    for args, kw in [(((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), ((1, 1), (0, 2))), {}),
                     (((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), "SAME"), {}),
                     (((2, 3, 2, 8), (4, 3, 3, 2), (1, 1), "VALID"), {}),
                     (((4, 3, 9, 8), (4, 3, 3, 2), (1, 1), "VALID"), dict(batch_group_count=2))]:
        assert Q.conv_shape_tuple(*args, **kw) == tuple(int(v) for v in L.conv_shape_tuple(*args, **kw))
    for args in [((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), "SAME", ("NHWC", "HWIO", "NHWC")),
                 ((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), ((1, 0), (2, 2)), ("NHWC", "HWIO", "NCHW"))]:
        assert Q.conv_general_shape_tuple(*args) == tuple(int(v) for v in L.conv_general_shape_tuple(*args))
    for args in [((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), "SAME", ("NHWC", "HWIO", "NHWC")),
                 ((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), "VALID", ("NHWC", "HWIO", "NCHW")),
                 ((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), ((1, 2), (0, 1)), ("NHWC", "HWIO", "NCHW"))]:
        assert Q.conv_transpose_shape_tuple(*args) == tuple(int(v) for v in L.conv_transpose_shape_tuple(*args))
    for dn in [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIWH", "CHWN"), ("NCH", "OIH", "NCH")]:
        assert Q.conv_general_permutations(dn) == L.conv_general_permutations(dn)
    with pytest.raises(TypeError, match="three layout strings"):
        Q.conv_general_permutations(("NCHW", "OIHW"))
    with pytest.raises(ValueError, match="spatial letters"):
        Q.conv_general_permutations(("NCHW", "OIHW", "NCXW"))
    for args in [((5, 6), (3, 2), (2, 1), ((1, 1), (0, 0)), (1, 2), (2, 1)), ((2,), (5,), (1,), ((0, 0),)),
                 ((7, 4), (2, 2), (1, 3), ((0, 1), (2, 0)))]:
        assert Q.reduce_window_shape_tuple(*args) == tuple(int(v) for v in L.reduce_window_shape_tuple(*args))
        x = qb.zeros(args[0])
        kw = dict(zip(("base_dilation", "window_dilation"), args[4:]))
        if all(s > 0 for s in Q.reduce_window_shape_tuple(*args)):
            assert Q.reduce_window(x, 0.0, qb.lax.add, args[1], args[2], args[3], **kw).shape == \
                Q.reduce_window_shape_tuple(*args)


def test_type_names_exist():
    for name in ("DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "PrecisionLike"):
        assert hasattr(Q, name)
