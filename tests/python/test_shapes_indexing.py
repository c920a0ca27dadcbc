"""Shape functions and NumPy basic indexing, compared with NumPy (API.md sections 1 and 2)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import quabla as qb
from conftest import check, np_of, NP_DTYPES


def src(shape, dt="float64"):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64).reshape(shape) * 0.5 - 1.0).astype(NP_DTYPES[dt])


# ---------------------------------------------------------------- reshape / ravel

@pytest.mark.parametrize("shape, new", [
    ((6,), (2, 3)), ((2, 3), (3, 2)), ((2, 3), (-1,)), ((2, 3), (-1, 2)), ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (2, -1, 3)), ((24,), (2, 3, 4)), ((1,), ()), ((), (1, 1)), ((2, 3), (1, 6, 1)),
])
def test_reshape(shape, new, fdt):
    a = src(shape, fdt)
    x = qb.array(a)
    check(qb.reshape(x, new), a.reshape(new))
    check(x.reshape(new), a.reshape(new))
    if len(new) > 0:
        check(x.reshape(*new), a.reshape(new))
    check(x.reshape(list(new)), a.reshape(new))


def test_reshape_int_shape():
    check(qb.reshape(qb.array(src((2, 3))), 6), src((2, 3)).reshape(6))
    check(qb.array(src((2, 3))).reshape(-1), src((2, 3)).reshape(-1))


def test_reshape_after_transpose_uses_logical_order():
    a = src((2, 3, 4))
    x = qb.transpose(qb.array(a), (2, 0, 1))
    check(x.reshape(-1), a.transpose(2, 0, 1).reshape(-1))
    check(qb.ravel(x), a.transpose(2, 0, 1).ravel())
    check(x.ravel(), a.transpose(2, 0, 1).ravel())


def test_ravel_bool():
    m = np.array([[True, False], [False, True]])
    check(qb.ravel(qb.array(m)), m.ravel())


# ---------------------------------------------------------------- transpose

@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (2, 1, 3, 2), ()])
def test_transpose_default_and_T(shape, fdt):
    a = src(shape, fdt)
    x = qb.array(a)
    check(qb.transpose(x), a.transpose())
    check(x.transpose(), a.transpose())
    check(x.T, a.T)
    check(x.T.T, a)


@pytest.mark.parametrize("shape, axes", [
    ((2, 3), (0, 1)), ((2, 3), (1, 0)), ((2, 3, 4), (1, 0, 2)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 2, 1)),
    ((2, 3, 4), (-1, 0, 1)), ((2, 3, 4, 5), (3, 1, 0, 2)), ((2, 3, 4, 5), (1, 3, 2, 0)),
])
def test_transpose_axes(shape, axes):
    a = src(shape)
    x = qb.array(a)
    check(qb.transpose(x, axes), np.transpose(a, axes))
    check(x.transpose(axes), np.transpose(a, axes))
    check(x.transpose(*axes), np.transpose(a, axes))
    check(qb.transpose(x, list(axes)), np.transpose(a, axes))


def test_transpose_bool():
    m = np.array([[True, False, False], [False, True, True]])
    check(qb.array(m).T, m.T)


# ---------------------------------------------------------------- broadcast_to / squeeze / expand_dims

@pytest.mark.parametrize("shape, target", [
    ((), (3,)), ((1,), (4,)), ((3,), (2, 3)), ((2, 1), (2, 4)), ((1, 3), (5, 2, 3)), ((2, 3), (2, 3)),
    ((2, 1, 1), (2, 3, 4)), ((1, 1), (1, 1)), (3, (2, 3)),
])
def test_broadcast_to(shape, target):
    a = src(shape if isinstance(shape, tuple) else (shape,))
    x = qb.array(a)
    check(qb.broadcast_to(x, target), np.broadcast_to(a, target))
    check(x.broadcast_to(target), np.broadcast_to(a, target))


def test_broadcast_to_bool_and_f32():
    m = np.array([[True], [False]])
    check(qb.broadcast_to(qb.array(m), (2, 3)), np.broadcast_to(m, (2, 3)))
    a = src((3,), "float32")
    check(qb.broadcast_to(qb.array(a), (2, 3)), np.broadcast_to(a, (2, 3)))


@pytest.mark.parametrize("shape, axis", [
    ((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), 2), ((1, 3, 1), -1), ((1, 3, 1), (0, 2)), ((1,), None),
    ((1, 1), (0, 1)), ((2, 3), None), ((4, 1, 2), 1),
])
def test_squeeze(shape, axis):
    a = src(shape)
    x = qb.array(a)
    check(qb.squeeze(x, axis), np.squeeze(a, axis))
    check(x.squeeze(axis), np.squeeze(a, axis))
    if axis is None:
        check(qb.squeeze(x), np.squeeze(a))
        check(x.squeeze(), np.squeeze(a))


@pytest.mark.parametrize("shape, axis", [
    ((3,), 0), ((3,), 1), ((3,), -1), ((2, 3), 1), ((2, 3), (0, 3)), ((2, 3), (0, 1)), ((), 0), ((2, 3), -2),
    ((2, 3), (-1, 0)),
])
def test_expand_dims(shape, axis):
    a = src(shape)
    check(qb.expand_dims(qb.array(a), axis), np.expand_dims(a, axis))


def test_shape_functions_keyword_arguments():
    a = src((2, 3))
    check(qb.expand_dims(qb.array(a), axis=0), np.expand_dims(a, axis=0))
    check(qb.broadcast_to(qb.array(a), shape=(4, 2, 3)), np.broadcast_to(a, shape=(4, 2, 3)))


# ---------------------------------------------------------------- split / concat / stack

def test_split_one_section():
    a = src((2, 3))
    parts = qb.split(qb.array(a), 1)
    assert len(parts) == 1
    check(parts[0], a)


@pytest.mark.parametrize("shape, arg, axis", [
    ((6,), 3, 0), ((6,), 6, 0), ((4, 6), 2, 0), ((4, 6), 3, 1), ((4, 6), 2, -1),
    ((6,), [2], 0), ((6,), [1, 4], 0), ((6,), (2, -2), 0), ((4, 6), [1, 3], 1), ((3, 4, 5), [2], -1),
    ((3, 4, 5), [1, 2], 0),
])
def test_split(shape, arg, axis, fdt):
    a = src(shape, fdt)
    parts = qb.split(qb.array(a), arg, axis=axis)
    ref = np.split(a, arg, axis=axis)
    assert isinstance(parts, (list, tuple))
    assert len(parts) == len(ref)
    for p, r in zip(parts, ref):
        check(p, r)


def test_split_default_axis_positional():
    a = src((4, 2))
    parts = qb.split(qb.array(a), 2)
    for p, r in zip(parts, np.split(a, 2)):
        check(p, r)


@pytest.mark.parametrize("shapes, axis", [
    ([(2,), (3,)], 0), ([(2, 3), (1, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (2, 4)], -1),
    ([(2, 3, 4), (2, 3, 1)], 2), ([(2, 3, 4), (2, 2, 4)], -2), ([(3,)], 0),
])
def test_concat(shapes, axis, fdt):
    arrays = [src(s, fdt) + i for i, s in enumerate(shapes)]
    expected = np.concatenate(arrays, axis=axis)
    check(qb.concat([qb.array(a) for a in arrays], axis=axis), expected)
    check(qb.concatenate(tuple(qb.array(a) for a in arrays), axis), expected)


def test_concat_default_axis_and_bool():
    a, b = np.array([[True, False]]), np.array([[False, False]])
    check(qb.concat([qb.array(a), qb.array(b)]), np.concatenate([a, b]))
    x = np.ones((2, 2), dtype=np.float32)
    check(qb.concat([qb.array(x), qb.array(a)]), np.concatenate([x, a.astype(np.float32)]))


def test_concat_numpy_inputs():
    a, b = src((2,)), src((3,))
    check(qb.concat([a, qb.array(b)]), np.concatenate([a, b]))


@pytest.mark.parametrize("shape, axis", [((3,), 0), ((3,), 1), ((3,), -1), ((2, 3), 0), ((2, 3), 1),
                                         ((2, 3), 2), ((2, 3), -1), ((2, 3), -3), ((), 0)])
def test_stack(shape, axis, fdt):
    arrays = [src(shape, fdt) + i for i in range(3)]
    expected = np.stack(arrays, axis=axis)
    check(qb.stack([qb.array(a) for a in arrays], axis=axis), expected)
    check(qb.stack(tuple(qb.array(a) for a in arrays), axis), expected)


def test_stack_default_axis():
    check(qb.stack([qb.array([1.0, 2.0]), qb.array([3.0, 4.0])]), np.array([[1.0, 2.0], [3.0, 4.0]]))


# ---------------------------------------------------------------- meshgrid

@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(3,), (3, 2), (2, 4), (2, 3, 4), (1, 3), (3, 1, 2)])
def test_meshgrid(sizes, indexing, fdt):
    xs = [np.linspace(-1, 1, n).astype(NP_DTYPES[fdt]) + k for k, n in enumerate(sizes)]
    got = qb.meshgrid(*[qb.array(v) for v in xs], indexing=indexing)
    ref = np.meshgrid(*xs, indexing=indexing)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        check(g, r)


def test_meshgrid_default_is_xy():
    x, y = np.arange(3.0), np.arange(2.0)
    got = qb.meshgrid(qb.array(x), qb.array(y))
    for g, r in zip(got, np.meshgrid(x, y)):
        check(g, r)
    assert got[0].shape == (2, 3)


# ---------------------------------------------------------------- tril / triu / flip

@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 3), (2, 3, 4), (1, 1), (2, 2, 3, 3)])
@pytest.mark.parametrize("k", [0, 1, -1, 2, -3, 10, -10])
def test_tril_triu(shape, k):
    a = src(shape) + 10.0
    x = qb.array(a)
    check(qb.tril(x, k), np.tril(a, k))
    check(qb.triu(x, k), np.triu(a, k))
    check(qb.tril(x, k=k), np.tril(a, k=k))
    check(qb.triu(x, k=k), np.triu(a, k=k))


def test_tril_triu_default_k_and_dtypes():
    a = src((3, 3), "float32") + 10
    check(qb.tril(qb.array(a)), np.tril(a))
    check(qb.triu(qb.array(a)), np.triu(a))
    m = np.ones((3, 3), dtype=bool)
    check(qb.tril(qb.array(m)), np.tril(m))
    check(qb.triu(qb.array(m), 1), np.triu(m, 1))


@pytest.mark.parametrize("shape, axis", [
    ((5,), None), ((5,), 0), ((5,), -1), ((2, 3), None), ((2, 3), 0), ((2, 3), 1), ((2, 3), (0, 1)),
    ((2, 3, 4), (0, 2)), ((2, 3, 4), -2), ((), None),
])
def test_flip(shape, axis):
    a = src(shape)
    x = qb.array(a)
    check(qb.flip(x, axis), np.flip(a, axis))
    check(x.flip(axis), np.flip(a, axis))
    if axis is None:
        check(qb.flip(x), np.flip(a))


def test_flip_bool():
    m = np.array([[True, False, False]])
    check(qb.flip(qb.array(m), 1), np.flip(m, 1))


# ---------------------------------------------------------------- basic indexing

S = slice
INDEX_CASES_3D = [
    0, 1, -1, -4, 3,
    (0, 0), (1, -1), (-2, 2, 3), (3, 4, 5), (-4, -5, -6),
    S(None), S(1, 3), S(None, None, 2), S(None, None, -1), S(3, 0, -1), S(-1, None, -2), S(1, None, 3),
    S(-3, -1), S(0, 100), S(-100, 2), S(100, None, -1), S(None, -100, -1), S(2, -100, -2),
    (S(None), 2), (S(None), S(None), 3), (S(1, 3), S(None, None, -2), S(4, 0, -3)),
    (Ellipsis, 0), (0, Ellipsis), (Ellipsis, S(None, None, -1)), (1, Ellipsis, 2), (Ellipsis,),
    (0, Ellipsis, 0, 0), (Ellipsis, 0, 0, 0),
    (None,), (None, 0), (0, None), (S(None), None, 1), (None, None, Ellipsis, None),
    (None, S(1, 3), None, -1, None, S(None, None, -2)), (Ellipsis, None), (1, None, Ellipsis, None, 2),
    (S(None, None, -1), S(None, None, -1), S(None, None, -1)), (S(2, 3), S(1, 2), S(0, 1)),
    (S(None, None, 5), S(None, None, 7), S(None, None, 11)), (-1, S(-2, None), Ellipsis),
    (S(3, None, -3), 2), (S(1, -1), S(1, -1), S(1, -1)),
]


@pytest.mark.parametrize("index", INDEX_CASES_3D, ids=repr)
def test_basic_indexing_vs_numpy(index, fdt):
    a = src((4, 5, 6), fdt)
    expected = a[index]
    got = qb.array(a)[index]
    check(got, np.asarray(expected))


INDEX_CASES_1D = [0, -1, 6, S(2, 5), S(None, None, -1), S(5, 1, -2), S(None, None, 3), S(-2, None),
                  (None,), Ellipsis, (None, S(1, 3)), (S(None, None, -3), None)]


@pytest.mark.parametrize("index", INDEX_CASES_1D, ids=repr)
def test_basic_indexing_1d(index):
    a = np.array([0.5, -1.5, 2.0, 3.0, np.inf, np.nan, 7.0])
    check(qb.array(a)[index], np.asarray(a[index]))


def test_indexing_scalar_array():
    x = qb.array(5.0)
    check(x[...], np.array(5.0))
    check(x[()], np.array(5.0))
    check(x[None, ...], np.array([5.0]))


def test_indexing_bool_array():
    m = np.array([[True, False, True], [False, False, True]])
    x = qb.array(m)
    for idx in [0, (1, 2), (S(None), -1), (S(None, None, -1), S(None, None, 2)), (None, 1)]:
        check(x[idx], np.asarray(m[idx]))


def test_indexing_numpy_integers():
    a = src((4, 5))
    x = qb.array(a)
    check(x[np.int64(2)], a[2])
    check(x[np.int32(-1), np.int8(3)], np.asarray(a[-1, 3]))
    check(x[np.int64(1):np.int64(3)], a[1:3])


def test_chained_indexing():
    a = src((4, 5, 6))
    x = qb.array(a)
    check(x[1][::-1][2:], a[1][::-1][2:])
    check(x[:, 1:4][..., ::2][0], a[:, 1:4][..., ::2][0])


@pytest.mark.parametrize("index", [(i, j) for i, j in itertools.product(range(-3, 3), range(-2, 2))])
def test_all_scalar_elements(index):
    a = src((3, 2)) * 3.7
    assert qb.array(a)[index].item() == a[index]


def test_random_slices_vs_numpy():
    rng = np.random.default_rng(1234)
    a = src((5, 4, 3))
    x = qb.array(a)
    done = 0
    for _ in range(300):
        idx = []
        for n in a.shape:
            kind = rng.integers(0, 3)
            if kind == 0:
                idx.append(int(rng.integers(-n, n)))
            else:
                step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
                start = None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 2))
                stop = None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 2))
                idx.append(slice(start, stop, step))
        idx = tuple(idx)
        expected = a[idx]
        check(x[idx], np.asarray(expected))  # empty results too (zero-extent axes, as NumPy)
        done += 1
    assert done > 100


def test_bare_none_index():
    a = src((2, 3))
    check(qb.array(a)[None], a[None])
    check(qb.array(a[0])[None], a[0][None])
