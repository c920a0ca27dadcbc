"""Traced integer indices: x[idx], x.at[idx], take, take_along_axis, dynamic slices, and
sorting/selection, against NumPy (values), central differences (gradients, float64), each
other (forward vs reverse) and under jit and vmap; plus three PINN workflows written the JAX
way (periodic finite differences with roll, resampling with argsort + take, minibatches with
traced indices under jit(value_and_grad))."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import quabla as qb
from conftest import check, jax_x64_mode
import jax
import jax.numpy as jnp

RNG = np.random.default_rng(7)
X34 = RNG.uniform(-2, 2, (3, 4))


def fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# ---- gathers: table of index forms, values vs NumPy eagerly and under jit

GATHERS = {
    "int_array": lambda x: x[np.array([2, 0, 2])],
    "negative": lambda x: x[np.array([-1, 0])],
    "list": lambda x: x[[1, 2]],
    "two_arrays": lambda x: x[np.array([0, 2, 1]), np.array([3, 3, 0])],
    "slice_then_array": lambda x: x[:, np.array([1, 3])],
    "int_and_array": lambda x: x[1, np.array([0, 2])],
    "array_int_nonadjacent": lambda x: x[np.array([[0, 1]]), 1:3, np.array([2])] if x.ndim == 3 else x[np.array([0]), 1],
    "ellipsis": lambda x: x[..., np.array([0, 0, 3])],
    "newaxis": lambda x: x[None, np.array([1, 2])],
    "2d_index": lambda x: x[np.array([[0, 1], [2, 2]])],
    "bool_mask": lambda x: x[np.array([True, False, True])],
}


def _qb_index(fn, x):
    """fn applied to a qb array with its NumPy index arrays turned into qb int arrays."""
    class Conv:
        def __init__(self, a):
            self.a = a

        def __getitem__(self, idx):
            items = idx if isinstance(idx, tuple) else (idx,)
            items = tuple(qb.asarray(i) if isinstance(i, np.ndarray) else i for i in items)
            return self.a[items if isinstance(idx, tuple) else items[0]]

        @property
        def ndim(self):
            return self.a.ndim
    return fn(Conv(x))


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather_forms_match_numpy(name):
    fn = GATHERS[name]
    expected = fn(X34)
    check(_qb_index(fn, qb.array(X34)), expected)
    check(qb.jit(lambda x: _qb_index(fn, x))(qb.array(X34)), expected)


def test_gather_with_3d_nonadjacent_arrays_moves_them_first():
    x = RNG.uniform(size=(2, 5, 3))
    i, k = np.array([[0, 1]]), np.array([2])
    expected = x[i, 1:3, k]
    check(qb.array(x)[qb.asarray(i), 1:3, qb.asarray(k)], expected)


def test_traced_scalar_index_and_out_of_bounds_clamp():
    x = qb.arange(5.0)
    f = qb.jit(lambda x, i: x[i])
    assert float(f(x, qb.asarray(3))) == 3.0
    assert float(f(x, qb.asarray(-1))) == 4.0
    assert float(f(x, qb.asarray(17))) == 4.0  # clamped, as JAX's gather


def test_traced_bool_mask_says_to_use_where():
    with pytest.raises(IndexError, match="where"):
        qb.jit(lambda x: x[x > 0])(qb.array(X34))


def test_float_index_is_an_error():
    with pytest.raises(IndexError, match="integers"):
        qb.arange(3.0)[qb.array([0.0])]


# ---- hypothesis: gathers and scatters against NumPy

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.lists(st.integers(-8, 8), min_size=1, max_size=7))
def test_gather_property(n, m, idx):
    x = RNG.uniform(size=(n, m))
    i = np.array(idx)
    expected = x[np.clip(np.where(i < 0, i + n, i), 0, n - 1)]
    check(qb.array(x)[qb.asarray(i)], expected)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(-8, 8), min_size=1, max_size=7), st.sampled_from(
    ["set", "add", "multiply", "min", "max"]))
def test_scatter_property(n, idx, how):
    x = RNG.uniform(-1, 1, size=(n, 2))
    i = np.array(idx)
    u = RNG.uniform(-1, 1, size=(len(idx), 2))
    expected = x.copy()
    for k, j in enumerate(i):  # NumPy-style sequential updates; out-of-bounds dropped (JAX)
        if not -n <= j < n:
            continue
        j = j % n
        if how == "set":
            expected[j] = u[k]
        elif how == "add":
            expected[j] += u[k]
        elif how == "multiply":
            expected[j] *= u[k]
        elif how == "min":
            expected[j] = np.minimum(expected[j], u[k])
        else:
            expected[j] = np.maximum(expected[j], u[k])
    got = getattr(qb.array(x).at[qb.asarray(i)], how)(qb.array(u))
    check(got, expected)


def test_at_with_slices_static_indices_and_get():
    x = np.arange(12.0).reshape(3, 4)
    e = x.copy()
    e[1:, np.array([0, 2])] += 10
    check(qb.array(x).at[1:, qb.asarray([0, 2])].add(10.0), e)
    e = x.copy()
    e[0] = -1
    check(qb.array(x).at[0].set(-1.0), e)
    e = x.copy()
    e[:, 1] *= 2
    check(qb.array(x).at[:, 1].multiply(2.0), e)
    got = qb.array(x).at[qb.asarray([0, 5])].get(mode="fill", fill_value=-7.0)
    check(got, np.array([x[0], np.full(4, -7.0)]))


# ---- derivatives: gather <-> scatter-add, forward vs reverse vs central differences

DIFF = {
    "gather_repeats": lambda x: qb.sum(x[qb.asarray([2, 0, 2, 1])] ** 2),
    "gather_2d": lambda x: qb.sum(qb.sin(x[qb.asarray([0, 2]), qb.asarray([3, 1])])),
    "take_along_axis": lambda x: qb.sum(qb.take_along_axis(x, qb.asarray([[1], [0], [3]]), axis=1) ** 3),
    "at_add": lambda x: qb.sum(x.at[qb.asarray([0, 0, 2])].add(x[1] * x[1]) ** 2),
    "at_set": lambda x: qb.sum(x.at[:, qb.asarray([1, 1])].set(qb.stack([x[:, 0], x[:, 2]], axis=1) * 2.0) ** 2),
    "at_max": lambda x: qb.sum(x.at[qb.asarray([1])].max(qb.sin(x[0:1])) ** 2),
    "at_multiply_unique": lambda x: qb.sum(x.at[qb.asarray([2, 0])].multiply(x[1:3] + 3.0, unique_indices=True)),
    "sort": lambda x: qb.sum(qb.sort(x, axis=1) * qb.arange(4.0)),
    "dynamic_slice": lambda x: qb.sum(qb.lax.dynamic_slice(x, (qb.asarray(1), qb.asarray(1)), (2, 2)) ** 2),
    "dynamic_update_slice": lambda x: qb.sum(qb.lax.dynamic_update_slice(x, x[:2, :2] * 3.0, (qb.asarray(1), qb.asarray(2))) ** 2),
    "top_k": lambda x: qb.sum(qb.lax.top_k(x, 2)[0] ** 2),
}


@pytest.mark.parametrize("name", sorted(DIFF))
def test_gradients_match_central_differences(name):
    f = DIFF[name]
    x = X34.copy()
    g = qb.grad(f)(qb.array(x))
    expected = fd_grad(lambda a: float(f(qb.array(a))), x)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-6, atol=1e-6)
    gj = qb.jit(qb.grad(f))(qb.array(x))
    np.testing.assert_allclose(np.asarray(gj), np.asarray(g), rtol=1e-12, atol=1e-12)
    # forward mode agrees with reverse mode
    jf = qb.jacfwd(f)(qb.array(x))
    np.testing.assert_allclose(np.asarray(jf), np.asarray(g), rtol=1e-10, atol=1e-12)


def test_multiply_without_unique_indices_refuses_the_updates_derivative():
    with pytest.raises(ValueError, match="unique_indices"):
        qb.grad(lambda u: qb.sum(qb.ones(3).at[qb.asarray([0, 0])].multiply(u)))(qb.ones(2))


def test_vmap_with_batched_indices_and_arrays():
    xs = RNG.uniform(size=(5, 6))
    idx = RNG.integers(-2, 8, size=(5, 3))
    got = qb.vmap(lambda x, i: x[i])(qb.array(xs), qb.asarray(idx))
    expected = np.stack([x[np.clip(np.where(i < 0, i + 6, i), 0, 5)] for x, i in zip(xs, idx)])
    check(got, expected)
    got = qb.vmap(lambda x, i: x.at[i].add(1.0))(qb.array(xs), qb.asarray(idx))
    expected = xs.copy()
    for b in range(5):
        for j in idx[b]:
            if -6 <= j < 6:
                expected[b, j % 6] += 1.0
    check(got, expected)
    # shared array, batched indices; batched array, shared indices
    check(qb.vmap(lambda i: qb.array(xs[0])[i])(qb.asarray([[0, 1], [5, 2]])), xs[0][np.array([[0, 1], [5, 2]])])
    check(qb.vmap(lambda x: x[qb.asarray([1, 1])])(qb.array(xs)), xs[:, [1, 1]])


# ---- sorting and selection vs NumPy

VALS = np.array([3.0, -1.0, np.nan, 2.0, -1.0, 7.0])


def test_sort_argsort_stable_with_nan_last():
    check(qb.sort(qb.array(VALS)), np.sort(VALS))
    check(qb.argsort(qb.array(VALS)), np.argsort(VALS, kind="stable"))
    m = RNG.integers(0, 3, size=(4, 5))
    check(qb.argsort(qb.asarray(m), axis=0), np.argsort(m, axis=0, kind="stable"))
    check(qb.sort(qb.asarray(m), axis=None), np.sort(m, axis=None))
    check(qb.argsort(qb.array([1.0, 3.0, 3.0, 2.0]), descending=True), np.array([1, 2, 3, 0]))


def test_argmax_argmin_first_occurrence_and_nan():
    a = np.array([[1.0, 5.0, 5.0], [2.0, np.nan, 0.0]])
    check(qb.argmax(qb.array(a), axis=1), np.argmax(a, axis=1))
    check(qb.argmin(qb.array(a), axis=1), np.argmin(a, axis=1))
    check(qb.argmax(qb.array(a)), np.array(np.argmax(a)))
    check(qb.argmin(qb.array(a[:1]), axis=1, keepdims=True), np.argmin(a[:1], axis=1, keepdims=True))
    with pytest.raises(ValueError, match="empty"):
        qb.argmax(qb.zeros((0,)))


def test_top_k_searchsorted_nonzero_unique():
    v, i = qb.lax.top_k(qb.array([1.0, 5.0, 3.0, 5.0]), 3)
    assert v.tolist() == [5.0, 5.0, 3.0] and i.tolist() == [1, 3, 2]
    a = np.array([1.0, 2.0, 2.0, 3.0])
    q = np.array([[0.0, 2.0], [2.5, 9.0]])
    for side in ("left", "right"):
        check(qb.searchsorted(qb.array(a), qb.array(q), side=side), np.searchsorted(a, q, side=side).astype(np.int32))  # int32, as JAX
    m = np.array([[0, 3], [1, 0]])
    got = qb.jit(lambda m: qb.nonzero(m, size=3, fill_value=-1))(qb.asarray(m))
    assert [g.tolist() for g in got] == [[0, 1, -1], [1, 0, -1]]
    assert qb.flatnonzero(qb.asarray(m), size=2).tolist() == [1, 2]
    assert qb.argwhere(qb.asarray(m), size=2).tolist() == [[0, 1], [1, 0]]
    u = qb.jit(lambda x: qb.unique(x, size=4, fill_value=0))(qb.asarray([3, 1, 3, 2, 1]))
    assert u.tolist() == [1, 2, 3, 0]
    vals, idx, inv, cnt = qb.unique(qb.asarray([3, 1, 3, 2, 1]), size=3, return_index=True, return_inverse=True,
                                    return_counts=True)
    ev, ei, einv, ec = np.unique([3, 1, 3, 2, 1], return_index=True, return_inverse=True, return_counts=True)
    assert vals.tolist() == ev.tolist() and idx.tolist() == ei.tolist() and cnt.tolist() == ec.tolist()
    assert inv.tolist() == einv.tolist()
    with pytest.raises(ValueError, match="size="):
        qb.jit(lambda m: qb.nonzero(m))(qb.asarray(m))


# ---- PINN workflows in their JAX spelling

def test_periodic_finite_difference_step_with_roll():
    n = 64
    xg = np.linspace(0, 2 * np.pi, n, endpoint=False)
    h = xg[1] - xg[0]

    def residual(u):
        lap = (qb.roll(u, -1) - 2.0 * u + qb.roll(u, 1)) / h ** 2
        return qb.mean((lap + qb.sin(qb.array(xg))) ** 2)

    u0 = qb.array(np.sin(xg) * 0.5)
    val, g = qb.jit(qb.value_and_grad(residual))(u0)
    expected = fd_grad(lambda a: float(residual(qb.array(a))), np.asarray(u0), eps=1e-7)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5, atol=1e-7)


def test_resampling_step_with_argsort_and_take():
    # Residual-based adaptive resampling: keep the points with the largest residuals.
    pts = qb.array(RNG.uniform(0, 1, 32))

    def resample(w, pts):
        r = (w * pts - qb.sin(pts)) ** 2
        keep = qb.argsort(-r)[:8]
        chosen = qb.take(pts, keep)
        return qb.mean((w * chosen - qb.sin(chosen)) ** 2)

    val, g = qb.jit(qb.value_and_grad(resample))(qb.asarray(0.3), pts)
    p = np.asarray(pts)
    r = (0.3 * p - np.sin(p)) ** 2
    chosen = p[np.argsort(-r, kind="stable")[:8]]
    np.testing.assert_allclose(float(val), np.mean((0.3 * chosen - np.sin(chosen)) ** 2), rtol=1e-12)
    np.testing.assert_allclose(float(g), np.mean(2 * (0.3 * chosen - np.sin(chosen)) * chosen), rtol=1e-12)


def test_minibatch_step_with_traced_indices_under_jit_value_and_grad():
    data_x = qb.array(RNG.uniform(-1, 1, 40))
    data_y = qb.sin(data_x)
    perm = qb.asarray(RNG.permutation(40))

    def loss(w, step):
        idx = qb.lax.dynamic_slice(perm, (step * 8,), (8,))
        xb, yb = data_x[idx], data_y[idx]
        return qb.mean((w[0] * xb + w[1] * xb ** 3 - yb) ** 2)

    step_fn = qb.jit(qb.value_and_grad(loss))
    w = qb.array([0.5, 0.0])
    for step in range(5):
        val, g = step_fn(w, qb.asarray(step))
        idx = np.asarray(perm)[step * 8:(step + 1) * 8]
        xb, yb = np.asarray(data_x)[idx], np.sin(np.asarray(data_x)[idx])
        wn = np.asarray(w)
        res = wn[0] * xb + wn[1] * xb ** 3 - yb
        np.testing.assert_allclose(float(val), np.mean(res ** 2), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g), [np.mean(2 * res * xb), np.mean(2 * res * xb ** 3)], rtol=1e-10)
        w = w - 0.5 * g


# ---- edge cases found in review

def test_unique_default_fill_under_jit_is_the_minimum():
    got = qb.jit(lambda x: qb.unique(x, size=4))(qb.asarray([3, 1, 3]))
    assert got.tolist() == [1, 3, 1, 1]


def test_at_subtract_and_divide_keep_dtype_rules():
    check(qb.zeros(3, dtype=qb.float32).at[0].subtract(1.0), np.array([-1.0, 0.0, 0.0], dtype=np.float32))
    check(qb.arange(4).at[1].divide(2), np.array([0.0, 0.5, 2.0, 3.0]))  # integer / -> float, as JAX
    check(qb.arange(4.0).at[qb.asarray([1, 1])].divide(2.0), np.array([0.0, 0.25, 2.0, 3.0]))


def test_negative_dynamic_starts_count_from_the_end():
    x = qb.arange(5.0)
    assert qb.lax.dynamic_slice(x, (-1,), (1,)).tolist() == [4.0]
    assert qb.lax.dynamic_slice(x, (-2,), (3,)).tolist() == [2.0, 3.0, 4.0]  # then clamped to fit
    assert qb.lax.dynamic_update_slice(x, qb.zeros(1), (-1,)).tolist() == [0.0, 1.0, 2.0, 3.0, 0.0]
    assert float(qb.lax.dynamic_index_in_dim(x, -2, keepdims=False)) == 3.0


def test_static_out_of_bounds_updates_are_dropped():
    assert qb.arange(3.0).at[7].set(9.0).tolist() == [0.0, 1.0, 2.0]
    assert qb.arange(3.0).at[-1].add(1.0).tolist() == [0.0, 1.0, 3.0]
    got = qb.arange(3.0).at[5].get(mode="fill", fill_value=-1.0)
    assert float(got) == -1.0


def test_take_fill_defaults_follow_the_array_dtype():
    with qb.set_default_dtype(qb.float32):
        x = qb.asarray(np.arange(3))  # int64 data stays int64
        assert qb.take(x, qb.asarray([5])).tolist() == [-(2 ** 63)]
    assert np.isnan(float(qb.take(qb.arange(3.0), qb.asarray([5]))[0]))


def test_take_along_axis_broadcasts_zero_extents():
    arr = qb.zeros((0, 3))
    assert qb.take_along_axis(arr, qb.asarray([[0, 1]]), axis=1).shape == (0, 2)


def test_scatter_derivative_on_an_empty_axis():
    out, t = qb.jvp(lambda u: qb.zeros(0).at[qb.asarray([0])].set(u), (qb.ones(1),), (qb.ones(1),))
    assert out.shape == (0,) and t.shape == (0,)


def test_python_ints_that_int32_cannot_hold_raise():
    x = qb.array([1, 2], dtype=qb.int32)
    for f in (lambda: x + 2 ** 40, lambda: qb.jit(lambda a: a * 2 ** 40)(x), lambda: x.at[0].set(2 ** 40)):
        with pytest.raises(ValueError, match="does not fit in int32"):
            f()
    assert (x + 5).tolist() == [6, 7]


def test_argmax_keepdims_without_axis_and_bool_with_python_ints():
    assert qb.argmax(qb.ones((2, 3)), keepdims=True).shape == (1, 1)
    with qb.set_default_dtype(qb.float32):
        assert (qb.array([True]) + 1).dtype == qb.int32


def test_clip_mode_clamps_single_index_arrays_in_scatters_and_gets():
    # One index array under mode="clip": clamped into the axis (was dropped by the scatter)
    x = qb.arange(5.0)
    for op, want in (("set", [0, 1, 2, 3, 9]), ("add", [0, 1, 2, 3, 13]), ("max", [0, 1, 2, 3, 9]),
                     ("multiply", [0, 1, 2, 3, 36])):
        got = getattr(x.at[qb.array([9])], op)(9.0, mode="clip")
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(x.at[qb.array([-9])].set(7.0, mode="clip")), [7, 1, 2, 3, 4])
    jitted = qb.jit(lambda v, i: v.at[i].set(-1.0, mode="clip"))(x, qb.array([9, -1, 2]))
    np.testing.assert_array_equal(np.asarray(jitted), [0, 1, -1, 3, -1])
    np.testing.assert_array_equal(np.asarray(x.at[9].set(3.0, mode="clip")), [0, 1, 2, 3, 3])
    assert float(x.at[9].get()) == 4.0 and float(x.at[9].get(mode="clip")) == 4.0 and float(x.at[-9].get()) == 0.0
    np.testing.assert_array_equal(np.asarray(x.at[qb.array([9])].set(1.0)), [0, 1, 2, 3, 4])  # default: dropped
    with pytest.raises(IndexError):
        x[9]  # plain indexing raises, as NumPy


def _random_basic_index(rng, shape):
    items = []
    for n in shape:
        r = rng.random()
        if r < 0.25:
            items.append(int(rng.integers(-n, n)))
        elif r < 0.45:
            items.append(slice(None))
        else:
            bounds = [None] + list(range(-n - 1, n + 2))
            items.append(slice(bounds[rng.integers(len(bounds))], bounds[rng.integers(len(bounds))],
                               [None, 1, 2, 3, -1, -2][rng.integers(6)]))
    if rng.random() < 0.3:
        k = int(rng.integers(len(items) + 1))
        items = items[:k] + [Ellipsis] + items[k + 1:]
    return tuple(items)


@pytest.mark.parametrize("how", ["set", "add", "multiply", "min", "max"])
def test_at_updates_of_static_slices_match_numpy(how):
    # blocks covering half the array or more take the padded path (no scatter), smaller ones
    # the scatter: both against NumPy's in-place updates, eagerly and jitted
    rng = np.random.default_rng(["set", "add", "multiply", "min", "max"].index(how))
    done = 0
    while done < 120:
        shape = tuple(int(n) for n in rng.integers(1, 6, size=rng.integers(1, 4)))
        x = rng.normal(size=shape)
        index = _random_basic_index(rng, shape)
        try:
            region = x[index]
        except IndexError:
            continue
        u = rng.normal(size=region.shape)
        want = x.copy()
        op = {"set": lambda a, b: b, "add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[how]
        want[index] = op(want[index], u)
        got = getattr(qb.asarray(x).at[index], how)(qb.asarray(u))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-15, err_msg=f"{shape} {index}")
        jitted = qb.jit(lambda a, b: getattr(a.at[index], how)(b))(qb.asarray(x), qb.asarray(u))
        np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-15, err_msg=f"{shape} {index}")
        done += 1


def test_large_static_block_updates_are_pads_and_differentiate_as_jax():
    with jax_x64_mode():
        _large_block_checks()


def _large_block_checks():
    x = qb.asarray(np.random.default_rng(1).normal(size=(6, 8)))
    u = qb.asarray(np.random.default_rng(2).normal(size=(5, 7)))
    f = lambda a, b: a.at[:0:-1, 1:].set(b * a[0, 0])
    plan = qb.jit(f).lower(x, u).compile().plan_text()
    assert "scatter" not in plan and "pad(" in plan
    loss = lambda a, b: qb.sum(qb.sin(f(a, b)) ** 2)
    jloss = lambda a, b: jnp.sum(jnp.sin(a.at[:0:-1, 1:].set(b * a[0, 0])) ** 2)
    got = qb.grad(loss, argnums=(0, 1))(x, u)
    want = jax.grad(jloss, argnums=(0, 1))(np.asarray(x), np.asarray(u))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-15)
    # a Python int that the dtype cannot hold raises as the scatter does
    with pytest.raises(ValueError, match="does not fit in int32"):
        qb.array([1, 2], dtype=qb.int32).at[:].set(2 ** 40)
