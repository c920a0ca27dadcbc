"""Edge cases found by an audit, each checked against NumPy or JAX: scans without xs, norms
of empty arrays, repeated-index .at[].power, zero-size shape functions, Jacobians of empty
arrays, integer arguments of grad, argnums types, OrderedDict pytrees and empty reprs."""
import collections

import numpy as np
import pytest

import quabla as qb

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def same(actual, expected, rtol=1e-12):
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=0)


# ---- 1. scan with xs=None passes None, as jax.lax.scan --------------------------------------

def _scan_step(seen):
    def f(c, x):
        seen.append(x)
        return c * 2.0 + 1.0, (c, x)
    return f


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_without_xs_calls_f_with_none_like_jax(reverse):
    seen_q, seen_j = [], []
    cq, (yq, nq) = qb.scan(_scan_step(seen_q), qb.array(0.5), None, length=4, reverse=reverse)
    cj, (yj, nj) = jax.lax.scan(_scan_step(seen_j), 0.5, None, length=4, reverse=reverse)
    assert seen_q and all(x is None for x in seen_q) and all(x is None for x in seen_j)
    assert nq is None and nj is None
    same(cq, cj)
    same(yq, yj)


def test_scan_without_xs_under_jit_vmap_and_grad():
    def fq(c):
        return qb.scan(lambda c, x: (c * c * 0.5 + 1.0, c), c, None, length=3)

    def fj(c):
        return jax.lax.scan(lambda c, x: (c * c * 0.5 + 1.0, c), c, None, length=3)
    cs = np.array([0.5, -1.0, 2.0])
    cq, yq = qb.vmap(fq)(qb.asarray(cs))
    cj, yj = jax.vmap(fj)(jnp.asarray(cs))
    same(cq, cj)
    same(yq, yj)
    same(qb.jit(lambda c: fq(c)[0])(qb.array(0.7)), fj(0.7)[0])
    same(qb.grad(lambda c: fq(c)[0])(0.7), jax.grad(lambda c: fj(c)[0])(0.7))
    same(qb.vmap(qb.grad(lambda c: fq(c)[0]))(qb.asarray(cs)), jax.vmap(jax.grad(lambda c: fj(c)[0]))(cs))


def test_scan_without_xs_none_cannot_index_so_closures_are_the_way():
    table = qb.array([1.0, 2.0, 4.0])
    c, _ = qb.scan(lambda c, x: ((c[0] + table[c[1]], c[1] + 1), None), (qb.array(0.0), qb.array(0)), None,
                   length=3)
    assert float(c[0]) == 7.0 and int(c[1]) == 3


# ---- 2. norms of empty arrays ----------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((0,), None), ((2, 0), 1), ((2, 0), 0), ((0, 3), None), ((0, 2), 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_qb_norm_of_empty_arrays_is_zero(shape, axis, keepdims):
    x = np.zeros(shape)
    expected = np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    same(qb.norm(qb.asarray(x), axis=axis, keepdims=keepdims), expected)
    same(qb.jit(lambda v: qb.norm(v, axis=axis, keepdims=keepdims))(qb.asarray(x)), expected)


def test_qb_norm_nonempty_unchanged_and_empty_gradient():
    x = np.array([[3.0, 4.0], [1e300, 1e300]])
    same(qb.norm(qb.asarray(x), axis=1), [5.0, np.sqrt(2.0) * 1e300])
    assert qb.grad(lambda v: qb.norm(v))(qb.zeros(0)).shape == (0,)
    assert qb.norm(qb.zeros(0, dtype=qb.int32)).dtype == qb.float32
    with pytest.raises(ValueError, match="norm"):
        qb.norm(qb.zeros((2, 0)), axis=5)


VECTOR_ORDS = [None, 2, 1, 3, 0.5, 0, np.inf, -np.inf, -1, -2]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _numpy_or_error(fn):
    try:
        with np.errstate(all="ignore"):
            return fn(), None
    except ValueError as e:
        return None, e


@pytest.mark.parametrize("shape,axis", [((0,), None), ((0,), 0), ((2, 0), 1), ((2, 0), 0), ((3, 0, 2), 1)])
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_linalg_vector_norms_of_empty_input_match_numpy(shape, axis, ord):
    x = np.zeros(shape)
    expected, err = _numpy_or_error(lambda: np.linalg.norm(x, ord=ord, axis=axis))
    if err is not None:
        with pytest.raises(ValueError, match="empty"):
            qb.linalg.norm(qb.asarray(x), ord=ord, axis=axis)
        return
    same(qb.linalg.norm(qb.asarray(x), ord=ord, axis=axis), expected)
    same(qb.jit(lambda v: qb.linalg.norm(v, ord=ord, axis=axis))(qb.asarray(x)), expected)
    if ord is not None:
        with np.errstate(divide="ignore"):
            expected = np.linalg.vector_norm(x, ord=ord, axis=axis)
        same(qb.linalg.vector_norm(qb.asarray(x), ord=ord, axis=axis), expected)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 0, 3), (2, 3, 0)])
@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("keepdims", [False, True])
def test_linalg_matrix_norms_of_empty_input_match_numpy(shape, ord, keepdims):
    x = np.zeros(shape)
    expected, err = _numpy_or_error(lambda: np.linalg.norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims))
    if err is not None:
        with pytest.raises(ValueError, match="empty"):
            qb.linalg.norm(qb.asarray(x), ord=ord, axis=(-2, -1), keepdims=keepdims)
        with pytest.raises(ValueError, match="empty"):
            qb.linalg.matrix_norm(qb.asarray(x), ord=ord, keepdims=keepdims)
        return
    same(qb.linalg.norm(qb.asarray(x), ord=ord, axis=(-2, -1), keepdims=keepdims), expected)
    if ord is not None:
        same(qb.linalg.matrix_norm(qb.asarray(x), ord=ord, keepdims=keepdims),
             np.linalg.matrix_norm(x, ord=ord, keepdims=keepdims))
    if len(shape) == 2:
        same(qb.linalg.norm(qb.asarray(x), ord=ord, keepdims=keepdims),
             np.linalg.norm(x, ord=ord, keepdims=keepdims))


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_linalg_matrix_norms_nonempty_unchanged(ord):
    x = np.random.default_rng(0).standard_normal((3, 4, 2))
    same(qb.linalg.norm(qb.asarray(x), ord=ord, axis=(1, 2)), np.linalg.norm(x, ord=ord, axis=(1, 2)), rtol=1e-10)


# ---- 3. .at[] with repeated indices ----------------------------------------------------------

X3 = np.array([3.0, 2.0, 5.0])
IDX = np.array([0, 0, 2, 0])
VALS = np.array([2.0, 3.0, 2.0, 0.5])


@pytest.mark.parametrize("method,values", [("power", 2.0), ("power", VALS), ("multiply", VALS), ("divide", VALS),
                                           ("min", np.array([2.0, 3.0, 7.0, 0.5])),
                                           ("max", np.array([2.0, 3.0, 7.0, 0.5])), ("add", VALS)])
def test_at_updates_with_repeated_indices_match_jax(method, values):
    expected = getattr(jnp.asarray(X3).at[IDX], method)(values)
    v = values if isinstance(values, float) else qb.asarray(values)
    same(getattr(qb.asarray(X3).at[IDX], method)(v), expected)
    same(qb.jit(lambda x, i: getattr(x.at[i], method)(v))(qb.asarray(X3), qb.asarray(IDX)), expected)


def test_at_power_cases_from_the_audit_and_modes():
    assert float(qb.array([3.0]).at[np.array([0, 0])].power(2.0)[0]) == 81.0
    same(qb.array([3, 2, 5]).at[IDX].power(2), jnp.array([3, 2, 5]).at[IDX].power(2))
    for mode in (None, "clip"):
        same(qb.asarray(X3).at[np.array([0, 5])].power(2.0, mode=mode),
             jnp.asarray(X3).at[np.array([0, 5])].power(2.0, mode=mode))
    same(qb.grad(lambda x: qb.sum(x.at[IDX].power(2.0)))(qb.asarray(X3)),
         jax.grad(lambda x: jnp.sum(x.at[IDX].power(2.0)))(jnp.asarray(X3)))
    assert qb.array([3.0], dtype=qb.float32).at[np.array([0, 0])].power(2.0).dtype == qb.float32


# ---- 4. zero-size shape functions, eagerly and under jit -----------------------------------

ZERO_SIZE_CASES = {
    "tile 0": (lambda m, x: m.tile(x, 0), np.arange(3.0)),
    "tile (0, 2)": (lambda m, x: m.tile(x, (0, 2)), np.ones((2, 3))),
    "tile (2, 1, 0)": (lambda m, x: m.tile(x, (2, 1, 0)), np.ones((2, 3))),
    "diag k past": (lambda m, x: m.diag(x, 5), np.ones((2, 3))),
    "diag k below": (lambda m, x: m.diag(x, -4), np.ones((2, 3))),
    "diag empty": (lambda m, x: m.diag(x), np.ones((0, 3))),
    "diagonal offset past": (lambda m, x: m.diagonal(x, 3, 1, 2), np.ones((4, 2, 3))),
    "trapezoid 1 sample": (lambda m, x: m.trapezoid(x), np.array([3.0])),
    "trapezoid 0 samples": (lambda m, x: m.trapezoid(x), np.zeros(0)),
    "trapezoid 1 sample x": (lambda m, x: m.trapezoid(x, x=m.ones(1)), np.ones((2, 1))),
    "trapezoid int": (lambda m, x: m.trapezoid(x), np.array([3])),
    "polyval no coefficients": (lambda m, x: m.polyval(m.zeros(0), x), np.ones(3)),
    "polyval []": (lambda m, x: m.polyval([], x), np.ones(3)),
    "polyval [] int": (lambda m, x: m.polyval([], x), np.array([1, 2])),
    "diff n > len": (lambda m, x: m.diff(x, 5), np.ones(3)),
    "diff n > len axis 0": (lambda m, x: m.diff(x, 5, axis=0), np.ones((2, 3))),
    "diff of empty": (lambda m, x: m.diff(x), np.zeros(0)),
    "diff int n = len": (lambda m, x: m.diff(x, 3), np.array([1, 4, 9])),
    "roll empty": (lambda m, x: m.roll(x, 2), np.zeros(0)),
    "roll empty axis": (lambda m, x: m.roll(x, 1, axis=1), np.zeros((2, 0))),
    "roll empty flat": (lambda m, x: m.roll(x, 1), np.zeros((2, 0))),
    "roll empty two axes": (lambda m, x: m.roll(x, (1, 3), axis=(0, 1)), np.zeros((2, 0))),
    "roll nonempty": (lambda m, x: m.roll(x, (1, -1), axis=(0, 1)), np.arange(6.0).reshape(2, 3)),
    "trapezoid nonempty": (lambda m, x: m.trapezoid(x ** 2, x=x * 0.5), np.arange(5.0)),
    "diff nonempty": (lambda m, x: m.diff(x ** 3, 2), np.arange(6.0)),
}


@pytest.mark.parametrize("name", sorted(ZERO_SIZE_CASES))
@pytest.mark.parametrize("jit", [False, True])
def test_zero_size_shape_functions_match_numpy(name, jit):
    fn, x = ZERO_SIZE_CASES[name]
    expected = np.asarray(fn(np, x))
    got = (qb.jit(lambda v: fn(qb, v)) if jit else (lambda v: fn(qb, v)))(qb.asarray(x))
    assert tuple(got.shape) == expected.shape
    assert np.asarray(got).dtype == expected.dtype
    same(got, expected)


SPLITS = [(np.arange(5.0), [1, 10], 0), (np.arange(5.0), [3, 1], 0), (np.arange(5.0), [0, 0, 7, -9], 0),
          (np.arange(10.0).reshape(2, 5), np.array([-2, 2]), 1), (np.arange(6.0), [2, 4], 0), (np.arange(6.0), [], 0),
          (np.arange(6.0), 3, 0), (np.zeros(0), 2, 0), (np.arange(12.0).reshape(3, 4), (4, 4), 1)]


@pytest.mark.parametrize("k", range(len(SPLITS)))
@pytest.mark.parametrize("jit", [False, True])
def test_split_with_empty_pieces_matches_numpy(k, jit):
    x, idx, axis = SPLITS[k]
    expected = np.split(x, idx, axis=axis)
    fn = (lambda v: qb.split(v, idx, axis=axis))
    got = (qb.jit(fn) if jit else fn)(qb.asarray(x))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        same(g, e)


def test_zero_size_errors_stay_clear():
    with pytest.raises(ValueError, match="non-negative"):
        qb.tile(qb.ones(3), -1)
    with pytest.raises(ValueError, match="equal sections"):
        qb.split(qb.arange(6.0), 4)
    with pytest.raises(TypeError, match="split"):
        qb.split(qb.arange(6.0), [1.5])
    with pytest.raises(ValueError, match="non-negative"):
        qb.diff(qb.ones(3), -1)


# ---- 5. zero-size arrays round-trip through qb.save / qb.load: see test_io.py -----------------

# ---- 6. Jacobians of empty inputs and outputs -----------------------------------------------

JAC_CASES = {
    "empty in, empty out": (lambda m: (lambda v: v * 2), lambda m: (m.zeros(0),), {}),
    "empty in, scalar out": (lambda m: (lambda v: m.sum(v)), lambda m: (m.zeros(0),), {}),
    "empty out": (lambda m: (lambda v: v[:0]), lambda m: (m.ones(3),), {}),
    "outer of empty": (lambda m: (lambda v: m.outer(v, v)), lambda m: (m.zeros(0),), {}),
    "transpose (2, 0)": (lambda m: (lambda v: v.T), lambda m: (m.zeros((2, 0)),), {}),
    "two args": (lambda m: (lambda v, w: (v * 2, w.sum())), lambda m: (m.zeros(0), m.ones(2)), {"argnums": (0, 1)}),
    "dict out": (lambda m: (lambda v: {"a": v[:0], "b": v.sum()}), lambda m: (m.ones(3),), {}),
    "float32": (lambda m: (lambda v: v[:0] * 2), lambda m: (m.ones(3, dtype=m.float32),), {}),
}


def _tree_same(actual, expected):
    a_leaves, a_def = qb.tree.flatten(actual)
    e_leaves = jax.tree.leaves(expected)
    assert len(a_leaves) == len(e_leaves)
    for a, e in zip(a_leaves, e_leaves):
        assert np.asarray(a).dtype == np.asarray(e).dtype
        same(a, e)


@pytest.mark.parametrize("case", sorted(JAC_CASES))
@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "jacobian"])
@pytest.mark.parametrize("jit", [False, True])
def test_jacobians_with_zero_size_inputs_or_outputs_match_jax(case, transform, jit):
    fun, args, kw = JAC_CASES[case]
    expected = getattr(jax, transform)(fun(jnp), **kw)(*args(jnp))
    jac = getattr(qb, transform)(fun(qb), **kw)
    got = (qb.jit(jac) if jit else jac)(*args(qb))
    _tree_same(got, expected)


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_hessian_of_empty_input_matches_jax(shape):
    assert qb.hessian(qb.sum)(qb.zeros(shape)).shape == jax.hessian(jnp.sum)(jnp.zeros(shape)).shape
    _tree_same(qb.jit(qb.hessian(lambda v: qb.sum(v ** 3)))(qb.zeros(shape)),
               jax.hessian(lambda v: jnp.sum(v ** 3))(jnp.zeros(shape)))
    _tree_same(qb.hessian(lambda a, b: qb.sum(a) * qb.sum(b ** 2), argnums=(0, 1))(qb.zeros(shape), qb.ones(2)),
               jax.hessian(lambda a, b: jnp.sum(a) * jnp.sum(b ** 2), argnums=(0, 1))(jnp.zeros(shape), jnp.ones(2)))


def test_jvp_vjp_hvp_of_empty_arrays_match_jax():
    _tree_same(qb.jvp(lambda v: v * 2, (qb.zeros(0),), (qb.zeros(0),)),
               jax.jvp(lambda v: v * 2, (jnp.zeros(0),), (jnp.zeros(0),)))
    _tree_same(qb.vjp(lambda v: v * 2, qb.zeros((0, 2)))[1](qb.zeros((0, 2))),
               jax.vjp(lambda v: v * 2, jnp.zeros((0, 2)))[1](jnp.zeros((0, 2))))
    _tree_same(qb.vjp(lambda v: v[:0], qb.ones(2))[1](qb.zeros(0)),
               jax.vjp(lambda v: v[:0], jnp.ones(2))[1](jnp.zeros(0)))
    _tree_same(qb.hvp(lambda v: qb.sum(v ** 2), (qb.zeros(0),), (qb.zeros(0),))[1][0],
               jax.jvp(jax.grad(lambda v: jnp.sum(v ** 2)), (jnp.zeros(0),), (jnp.zeros(0),))[1])
    _tree_same(qb.vmap(qb.jacrev(lambda v: v[:0]))(qb.ones((4, 3))),
               jax.vmap(jax.jacrev(lambda v: v[:0]))(jnp.ones((4, 3))))


# ---- 7. integer arguments of the derivative transforms raise TypeError, as JAX --------------

TRANSFORMS = ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian", "jacobian"]


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("x", [3, np.int32(3), np.int64(3)], ids=["int", "np.int32", "np.int64"])
def test_integer_arguments_raise_type_error_like_jax(transform, x):
    def f(v):
        return v * v * 2.0
    with pytest.raises(TypeError):
        getattr(jax, transform)(f)(x)
    with pytest.raises(TypeError, match="int"):
        getattr(qb, transform)(f)(x)


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_float_and_undifferentiated_int_arguments_still_work(transform):
    f = (lambda v, w: v * v * w)
    same(getattr(qb, transform)(f)(3.0, 2), getattr(jax, transform)(f)(3.0, 2))
    same(getattr(qb, transform)(f, argnums=1)(3, 2.0), getattr(jax, transform)(f, argnums=1)(3, 2.0))


# ---- 8. argnums must be an int or a tuple of ints -------------------------------------------

@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("argnums", [0.0, (0, 1.0), None, "0", (True,)])
def test_bad_argnums_raise_type_error_at_construction(transform, argnums):
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        getattr(qb, transform)(lambda x: x * x, argnums=argnums)


def test_integer_like_argnums_still_accepted():
    f = (lambda x, y: x * y)
    assert float(qb.grad(f, argnums=np.int64(1))(2.0, 3.0)) == 2.0
    assert [float(g) for g in qb.grad(f, argnums=[0, 1])(2.0, 3.0)] == [3.0, 2.0]


# ---- 9. OrderedDict pytrees keep insertion order, as JAX -------------------------------------

def test_ordered_dict_flattens_in_insertion_order_like_jax():
    od = collections.OrderedDict([("b", 1.0), ("a", 2.0), ("c", 3.0)])
    leaves, treedef = qb.tree.flatten(od)
    assert leaves == jax.tree.leaves(od) == [1.0, 2.0, 3.0]
    back = qb.tree.unflatten(treedef, [4.0, 5.0, 6.0])
    assert type(back) is collections.OrderedDict and list(back.items()) == [("b", 4.0), ("a", 5.0), ("c", 6.0)]
    assert [p for p, _ in qb.tree.flatten_with_path(od)[0]] == [("b",), ("a",), ("c",)]
    # plain dicts still sort
    assert qb.tree.leaves({"b": 1.0, "a": 2.0}) == jax.tree.leaves({"b": 1.0, "a": 2.0}) == [2.0, 1.0]


def test_ordered_dict_treedef_equality_and_hash():
    d1 = qb.tree.structure(collections.OrderedDict([("b", 1), ("a", 2)]))
    d2 = qb.tree.structure(collections.OrderedDict([("b", 5), ("a", 7)]))
    d3 = qb.tree.structure(collections.OrderedDict([("a", 1), ("b", 2)]))
    d4 = qb.tree.structure({"a": 1, "b": 2})
    assert d1 == d2 and hash(d1) == hash(d2)
    assert d1 != d3 and d3 != d4 and d1 != d4
    j = [jax.tree.structure(t) for t in (collections.OrderedDict([("b", 1), ("a", 2)]),
                                         collections.OrderedDict([("a", 1), ("b", 2)]), {"a": 1, "b": 2})]
    assert (j[0] == j[1], j[1] == j[2]) == (d1 == d3, d3 == d4)
    with pytest.raises(ValueError, match="structure"):
        qb.tree.map(lambda x, y: x + y, collections.OrderedDict([("a", 1.0), ("b", 2.0)]), {"a": 1.0, "b": 2.0})


def test_defaultdict_keeps_its_type_and_factory():
    dd = collections.defaultdict(list, {"b": 1.0, "a": 2.0})
    leaves, treedef = qb.tree.flatten(dd)
    assert leaves == jax.tree.leaves(dd) == [2.0, 1.0]
    back = qb.tree.unflatten(treedef, [3.0, 4.0])
    assert type(back) is collections.defaultdict and back.default_factory is list and back == {"a": 3.0, "b": 4.0}


def test_ordered_dict_pytrees_through_tree_util_jit_grad_vmap():
    od = collections.OrderedDict([("b", qb.array(1.5)), ("a", qb.array(2.0))])
    assert list(qb.tree_util.tree_map(lambda x: x * 2, od)) == ["b", "a"]
    assert qb.tree_util.tree_leaves(od)[0] is od["b"]
    out = qb.jit(lambda d: collections.OrderedDict((k, v * 2.0) for k, v in d.items()))(od)
    assert type(out) is collections.OrderedDict and list(out) == ["b", "a"] and float(out["b"]) == 3.0
    g = qb.grad(lambda d: d["b"] * 3.0 + d["a"] ** 2)(od)
    jod = collections.OrderedDict([("b", 1.5), ("a", 2.0)])
    gj = jax.grad(lambda d: d["b"] * 3.0 + d["a"] ** 2)(jod)
    assert type(g) is collections.OrderedDict and list(g) == list(gj) == ["b", "a"]
    assert [float(v) for v in g.values()] == [float(v) for v in gj.values()]
    batch = collections.OrderedDict([("b", qb.ones(3)), ("a", qb.arange(3.0))])
    same(qb.vmap(lambda d: d["b"] * d["a"])(batch), [0.0, 1.0, 2.0])


# ---- 10. the repr of an empty array shows its shape -----------------------------------------

@pytest.mark.parametrize("shape,dtype", [((0,), "float64"), ((0, 3), "float32"), ((2, 0), "int32"), ((0,), "bool")])
def test_empty_array_repr_shows_the_shape_like_jax(shape, dtype):
    x = qb.zeros(shape, dtype=getattr(qb, dtype if dtype != "bool" else "bool_"))
    assert repr(x) == repr(jnp.zeros(shape, dtype=dtype)) == f"Array([], shape={shape}, dtype={dtype})"
    assert repr(qb.ones(2)) == "Array([1., 1.], dtype=float64)"


def test_iter_unravel_index_and_at_dtypes_as_jax():
    import numpy as np
    import pytest
    import quabla as qb
    with pytest.raises(TypeError, match="zero-dimensional"):
        iter(qb.zeros(()))  # raised by iter() itself, as NumPy's
    # Out-of-range flat indices: negative ones count from the end once, then clip (jnp's values).
    np.testing.assert_array_equal(np.asarray(qb.unravel_index(qb.asarray([7, -7, -1, 5]), (6,))[0]), [5, 0, 5, 5])
    rows, cols = qb.unravel_index(qb.asarray([7, -7, -1, 13, 4]), (2, 3))
    np.testing.assert_array_equal(np.asarray(rows), [1, 0, 1, 1, 1])
    np.testing.assert_array_equal(np.asarray(cols), [2, 0, 2, 2, 1])
    # .at[] updates take the array's dtype (float64 values into float32, floats into int32).
    a = qb.zeros(3, dtype=qb.float32).at[qb.asarray([0])].set(qb.asarray([1.0]))
    assert a.dtype == qb.float32 and a.tolist() == [1.0, 0.0, 0.0]
    b = qb.zeros(3, dtype=qb.int32).at[qb.asarray([0, 2])].add(np.array([1.7, -2.2]))
    assert b.dtype == qb.int32 and b.tolist() == [1, 0, -2]


def test_unique_nan_handling_and_padding_as_jnp():
    import numpy as np
    import quabla as qb
    nan = float("nan")
    np.testing.assert_array_equal(np.asarray(qb.unique(qb.asarray([nan, nan, 1.0]), equal_nan=False)), [1.0, nan, nan])
    np.testing.assert_array_equal(np.asarray(qb.unique(qb.asarray([nan, nan, 1.0]))), [1.0, nan])
    # size= pads with the smallest value (not NaN) and its index, as jnp.unique
    np.testing.assert_array_equal(np.asarray(qb.unique(qb.asarray([1.0, nan, 0.0]), size=4)), [0.0, 1.0, nan, 0.0])
    np.testing.assert_array_equal(np.asarray(qb.unique(qb.asarray([5, 4, 6]), return_index=True, size=4)[1]),
                                  [1, 0, 2, 1])


def test_ldexp_bool_extremum_scatters_and_top_k_indices_as_numpy_and_jax():
    import numpy as np
    import quabla as qb
    got = qb.ldexp(qb.asarray([2.0 ** -149], dtype=qb.float32), qb.asarray([276], dtype=qb.int32))
    np.testing.assert_array_equal(np.asarray(got), np.ldexp(np.float32(2.0 ** -149), 276))  # finite, no inf between
    e = np.array([-2000, -2097, 1, 1100])
    x = np.array([3.0, 2.0 ** 1023, 1.5, 2.0 ** -1074])
    np.testing.assert_array_equal(np.asarray(qb.ldexp(qb.asarray(x), qb.asarray(e))), np.ldexp(x, e))
    b = qb.asarray([True, False, False])
    assert b.at[qb.asarray([1])].max(qb.asarray([True])).tolist() == [True, True, False]  # or
    assert b.at[qb.asarray([0, 2])].min(False).tolist() == [False, False, False]         # and
    assert qb.lax.top_k(qb.asarray([1.0, 3.0, 2.0]), 2)[1].dtype == qb.int32


def test_array_of_a_list_mixing_numbers_and_arrays_promotes_as_jnp_array():
    import numpy as np
    import pytest
    import quabla as qb
    i = qb.asarray(3, dtype=qb.int32)
    assert qb.array([2.5, i]).tolist() == [2.5, 3.0]  # was [2, 3]: the float cut to an int
    assert qb.array([[2.5], [i]]).tolist() == [[2.5], [3.0]]
    assert qb.jit(lambda n: qb.array([0.5, n]))(qb.asarray(4, dtype=qb.int32)).tolist() == [0.5, 4.0]
    assert qb.array([np.float64(2.5), i]).tolist() == [2.5, 3.0]
    cases = [([qb.asarray(1.5, dtype=qb.float32), i], qb.float32), ([i, qb.asarray(2)], qb.int64),
             ([qb.asarray(True), qb.asarray(2.0)], qb.float64), ([qb.asarray(1.5, dtype=qb.float32), 2.5], qb.float32),
             ([qb.asarray([1, 2], dtype=qb.int32), [2.5, 1]], qb.float64), ([True, qb.asarray(False)], qb.bool_)]
    for items, want in cases:
        assert qb.array(items).dtype == want, items
    with pytest.raises(ValueError, match="float32 and float64"):
        qb.array([qb.ones((), dtype=qb.float32), qb.ones(())])


def test_quantiles_propagate_nan_and_take_numpys_methods():
    import numpy as np
    import pytest
    import quabla as qb
    x = np.array([3.0, np.nan, -1.0, 2.0])
    assert np.isnan(float(qb.median(qb.asarray(x)))) and np.isnan(float(qb.quantile(qb.asarray(x), 0.5)))
    z = np.array([[1.0, 2.0, np.nan], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda a: qb.median(a, axis=1))(qb.asarray(z))), [np.nan, 5.0])
    np.testing.assert_array_equal(np.asarray(qb.nanmedian(qb.asarray(z), axis=1)), [1.5, 5.0])
    rng = np.random.default_rng(0)
    for n in (4, 7):
        y = rng.normal(size=(3, n))
        for method in ("linear", "lower", "higher", "nearest", "midpoint"):
            for q in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0, 1 / 6):
                np.testing.assert_allclose(np.asarray(qb.quantile(qb.asarray(y), q, axis=1, method=method)),
                                           np.quantile(y, q, axis=1, method=method), rtol=1e-14, atol=1e-15)
    with pytest.raises(ValueError, match="method='weibull'"):
        qb.quantile(qb.asarray(x), 0.5, method="weibull")


def test_at_apply_applies_once_per_occurrence_as_jax():
    import numpy as np
    import quabla as qb
    x = qb.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(x.at[qb.array([1, 1])].apply(qb.sin)), [0.0, np.sin(np.sin(1.0)), 2.0],
                               rtol=1e-15)
    np.testing.assert_allclose(np.asarray(qb.jit(lambda v: v.at[qb.array([1, 1, 2])].apply(qb.sin))(x)),
                               [0.0, np.sin(np.sin(1.0)), np.sin(2.0)], rtol=1e-15)
    g = qb.grad(lambda v: v.at[qb.array([1, 1])].apply(qb.sin).sum())(x)
    np.testing.assert_allclose(np.asarray(g), [1.0, np.cos(np.sin(1.0)) * np.cos(1.0), 1.0], rtol=1e-14)
    assert x.at[1].apply(lambda v: v * 3).tolist() == [0.0, 3.0, 2.0]
    assert qb.array([1, 2]).at[0].apply(lambda v: v + 1).tolist() == [2, 2]


def test_jax_numpy_keyword_arguments_of_cumsum_ravel_stack_nansum():
    import numpy as np
    import quabla as qb
    x = qb.asarray([[1, 2], [3, 4]], dtype=qb.int32)
    got = qb.cumsum(x, dtype=qb.float32)
    assert got.dtype == qb.float32 and got.tolist() == [1.0, 3.0, 6.0, 10.0]
    assert qb.cumprod(x, 0, qb.float32).tolist() == [[1.0, 2.0], [3.0, 8.0]]
    assert qb.cumsum(x, 0, reverse=True).tolist() == [[4, 6], [3, 4]]
    assert qb.ravel(x, order="F").tolist() == [1, 3, 2, 4] and qb.ravel(x).tolist() == [1, 2, 3, 4]
    assert qb.jit(lambda a: qb.ravel(a, order="F"))(x).tolist() == [1, 3, 2, 4]
    assert qb.nansum(x, dtype=qb.float32).dtype == qb.float32
    assert qb.stack([x, x], dtype=qb.float32).dtype == qb.float32
    np.testing.assert_array_equal(np.asarray(qb.searchsorted(qb.asarray([1.0, 2.0]), 1.5)), 1)
    assert qb.searchsorted(qb.asarray([1.0, 2.0]), 1.5).dtype == qb.int32  # as JAX's, also with x64


def test_cov_weights_interp_period_num_nodes_and_optax_tree_get():
    import numpy as np
    import quabla as qb
    import quabla.optax as qox
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3, 6))
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), rng.uniform(0.5, 2.0, size=6)
    for kw in ({"aweights": aw}, {"fweights": fw}, {"fweights": fw, "aweights": aw}, {"aweights": aw, "ddof": 0},
               {"aweights": aw, "bias": True}):
        got = qb.cov(qb.asarray(m), **{k: qb.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
        np.testing.assert_allclose(np.asarray(got), np.cov(m, **kw), rtol=1e-13, atol=1e-15)
    xp, fp = np.array([170.0, 10.0, 190.0, 350.0]), np.array([1.0, 2.0, 3.0, 4.0])
    x = np.array([-180.0, -170.0, -185.0, 185.0, -10.0, -5.0, 0.0, 365.0])
    np.testing.assert_allclose(np.asarray(qb.jit(lambda a: qb.interp(a, qb.asarray(xp), qb.asarray(fp), period=360))(
        qb.asarray(x))), np.interp(x, xp, fp, period=360), rtol=1e-15)
    assert qb.tree.structure([1, (2, None)]).num_nodes == 5 and qb.tree.structure({"a": 1, "b": [2, 3]}).num_nodes == 5
    state = qox.chain(qox.clip_by_global_norm(1.0), qox.adam(1e-3)).init({"w": qb.ones(3)})
    assert int(qox.tree_utils.tree_get(state, "count")) == 0 and qox.tree_utils.tree_get(state, "nope", 7) == 7


def test_float64_numpy_data_is_float32_under_a_float32_default_as_jax_x64_off():
    import numpy as np
    import quabla as qb
    with qb.set_default_dtype(qb.float32):
        pts = np.linspace(0.0, 1.0, 3)
        assert qb.asarray(pts).dtype == qb.float32
        assert (qb.ones(3) * pts).dtype == qb.float32  # was "cannot mix float32 and float64"
        assert qb.jit(lambda a: a * 2.0)(pts).dtype == qb.float32
        assert qb.asarray(pts, dtype=qb.float64).dtype == qb.float64  # an explicit dtype wins
    assert qb.asarray(np.linspace(0.0, 1.0, 3)).dtype == qb.float64
    assert qb.asarray(np.float32([1.0])).dtype == qb.float32
