"""Array construction, properties, conversions and NumPy interop (API.md section 1)."""
from __future__ import annotations

import array as pyarray

import numpy as np
import pytest

import quabla as qb
from conftest import NP_DTYPES, check, np_of


# ---------------------------------------------------------------- constructors: array/asarray

@pytest.mark.parametrize(
    "obj, expected",
    [
        (2.5, np.array(2.5)),
        (3, np.array(3)),  # Python ints give the default integer (int64), as NumPy
        (-7, np.array(-7)),
        (True, np.array(True)),
        (False, np.array(False)),
        ([1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0])),
        ([1, 2, 3], np.array([1, 2, 3])),
        ([1, 2.5], np.array([1.0, 2.5])),
        ([[1, 2], [3, 4], [5, 6]], np.array([[1, 2], [3, 4], [5, 6]])),
        ((1.0, 2.0), np.array([1.0, 2.0])),
        (((1, 2), (3, 4)), np.array([[1, 2], [3, 4]])),
        ([(1, 2), [3, 4]], np.array([[1, 2], [3, 4]])),
        ([[[1], [2]], [[3], [4]]], np.arange(1, 5).reshape(2, 2, 1)),
        ([True, False, True], np.array([True, False, True])),
        ([[True], [False]], np.array([[True], [False]])),
        ([True, 2.0], np.array([1.0, 2.0])),  # not every element a bool -> float64
        ([1, True], np.array([1, 1])),
    ],
)
def test_array_from_python(obj, expected):
    check(qb.array(obj), expected)
    check(qb.asarray(obj), expected)


@pytest.mark.parametrize("np_dtype, qb_name", [
    (np.float32, "float32"), (np.float64, "float64"), (np.bool_, "bool"),
    # Integers keep their dtype, but uint64 (which Quabla lacks) becomes int64.
    (np.int64, "int64"), (np.int32, "int32"), (np.int8, "int8"), (np.int16, "int16"), (np.uint8, "uint8"),
    (np.uint16, "uint16"), (np.uint32, "uint32"), (np.uint64, "int64"),
])
def test_array_from_numpy_dtypes(np_dtype, qb_name):
    src = (np.arange(12).reshape(3, 4) % 5).astype(np_dtype)
    x = qb.array(src)
    expected = src.astype(NP_DTYPES[qb_name])
    check(x, expected)


def test_array_from_numpy_float32_values_exact():
    src = np.array([1e-30, 3.1415927, -2.5e30, np.inf, -np.inf], dtype=np.float32)
    x = qb.array(src)
    assert x.dtype == qb.float32
    np.testing.assert_array_equal(np_of(x), src)
    y = qb.array(np.array([np.nan], dtype=np.float32))
    assert np.isnan(np_of(y)[0])


def test_array_from_large_numpy_int64_is_exact():
    src = np.array([2**40, -(2**40) - 1, 2**62 + 1], dtype=np.int64)
    check(qb.array(src), src)


@pytest.mark.parametrize("scalar, name, value", [
    (np.float32(2.5), "float32", 2.5),
    (np.float64(-1.25), "float64", -1.25),
    (np.bool_(True), "bool", True),
    (np.int64(7), "int64", 7),
    (np.int32(-3), "int32", -3),
])
def test_array_from_numpy_scalars(scalar, name, value):
    x = qb.array(scalar)
    assert x.shape == ()
    assert x.dtype.name == name
    assert x.item() == value
    assert type(x.item()) is {"bool": bool, "int64": int, "int32": int}.get(name, float)


def test_array_from_zero_dim_numpy():
    x = qb.array(np.array(4.0, dtype=np.float32))
    assert x.shape == () and x.dtype == qb.float32 and x.item() == 4.0


def test_array_from_list_of_numpy_scalars():
    check(qb.array([np.float32(1.5), np.float64(2.0), np.int64(3)]), np.array([1.5, 2.0, 3.0]))


def test_array_from_non_contiguous_numpy():
    base = np.arange(24.0).reshape(4, 6)
    for view in (base[:, ::2], base.T, base[::-1, 1:5:3], base[1:3, ::-2]):
        assert not view.flags.c_contiguous
        check(qb.array(view), np.ascontiguousarray(view))


def test_array_from_buffer_protocol_objects():
    check(qb.array(pyarray.array("d", [1.5, 2.5])), np.array([1.5, 2.5]))
    check(qb.array(pyarray.array("f", [1.5, 2.5])), np.array([1.5, 2.5], dtype=np.float32))
    check(qb.array(pyarray.array("i", [1, -2])), np.array([1, -2], dtype=np.int32))
    check(qb.array(memoryview(np.array([[1.0, 2.0]], dtype=np.float32))), np.array([[1.0, 2.0]], dtype=np.float32))


def test_array_from_dunder_array_object():
    class HasArray:
        def __array__(self, dtype=None, copy=None):
            return np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)

    check(qb.array(HasArray()), np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))


@pytest.mark.parametrize("dtype, expected", [
    (qb.float32, np.array([1.0, 0.0, 2.5], dtype=np.float32)),
    (qb.float64, np.array([1.0, 0.0, 2.5])),
    (qb.bool_, np.array([True, False, True])),
    ("float32", np.array([1.0, 0.0, 2.5], dtype=np.float32)),
    ("float64", np.array([1.0, 0.0, 2.5])),
    (np.dtype("float32"), np.array([1.0, 0.0, 2.5], dtype=np.float32)),
    (float, np.array([1.0, 0.0, 2.5])),
    (bool, np.array([True, False, True])),
])
def test_array_dtype_argument(dtype, expected):
    check(qb.array([1, 0, 2.5], dtype=dtype), expected)
    check(qb.asarray([1, 0, 2.5], dtype=dtype), expected)


@pytest.mark.parametrize("np_type, expected", [
    (np.float32, np.array([1.0, 2.0], dtype=np.float32)),
    (np.float64, np.array([1.0, 2.0])),
])
def test_array_dtype_argument_numpy_type(np_type, expected):
    check(qb.array([1, 2], dtype=np_type), expected)


def test_array_dtype_argument_converts_numpy_and_qb_arrays():
    src = np.array([0.5, 0.0, np.nan, -2.0])
    check(qb.array(src, dtype=qb.float32), src.astype(np.float32))
    check(qb.array(src, dtype=qb.bool_), np.array([True, False, True, True]))
    x = qb.array(src)
    check(qb.array(x, dtype=qb.float32), src.astype(np.float32))
    check(qb.asarray(x, dtype=qb.float32), src.astype(np.float32))


def test_float64_to_float32_rounds_to_nearest():
    v = 1.0 + 2.0**-24 + 2.0**-40  # just above the f32 halfway point: rounds up
    x = qb.array([v], dtype=qb.float32)
    assert np_of(x)[0] == np.float32(v)


def test_asarray_returns_same_object_for_matching_array():
    x = qb.array([1.0, 2.0], dtype=qb.float32)
    assert qb.asarray(x) is x
    assert qb.asarray(x, dtype=qb.float32) is x
    y = qb.asarray(x, dtype=qb.float64)
    assert y is not x
    check(y, np.array([1.0, 2.0]))
    check(x, np.array([1.0, 2.0], dtype=np.float32))  # unchanged


def test_array_returns_new_object():
    x = qb.array([1.0, 2.0])
    y = qb.array(x)
    assert y is not x
    check(y, np.array([1.0, 2.0]))


def test_array_class_constructor():
    check(qb.Array([1, 2]), np.array([1, 2]))
    check(qb.Array([1, 2], dtype=qb.float32), np.array([1.0, 2.0], dtype=np.float32))


# ---------------------------------------------------------------- factories

@pytest.mark.parametrize("shape", [3, (3,), (2, 3), [2, 1, 4], ()])
def test_zeros_ones_default_float64(shape):
    np_shape = tuple(shape) if isinstance(shape, list) else shape
    check(qb.zeros(shape), np.zeros(np_shape))
    check(qb.ones(shape), np.ones(np_shape))


@pytest.mark.parametrize("dtype, np_dtype", [(qb.float32, np.float32), (qb.float64, np.float64), (qb.bool_, np.bool_)])
def test_factories_with_dtype(dtype, np_dtype):
    check(qb.zeros((2, 3), dtype=dtype), np.zeros((2, 3), dtype=np_dtype))
    check(qb.ones((2, 3), dtype=dtype), np.ones((2, 3), dtype=np_dtype))
    check(qb.full((4,), 2.0, dtype=dtype), np.full((4,), 2.0, dtype=np_dtype))
    check(qb.eye(3, dtype=dtype), np.eye(3, dtype=np_dtype))
    check(qb.arange(1, 4, dtype=dtype), np.arange(1, 4).astype(np_dtype))
    check(qb.linspace(0, 1, 5, dtype=dtype), np.linspace(0, 1, 5).astype(np_dtype))


def test_full():
    check(qb.full((2, 3), 1.5), np.full((2, 3), 1.5))
    check(qb.full((2,), 3), np.full((2,), 3))
    check(qb.full(3, -0.25), np.full(3, -0.25))
    check(qb.full((2,), True), np.full((2,), True))
    check(qb.full((2, 2), qb.array(2.5, dtype=qb.float32)), np.full((2, 2), 2.5, dtype=np.float32))
    check(qb.full((2,), np.inf), np.full((2,), np.inf))


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((5.0,), {}), ((2, 7), {}), ((1, 2, 0.25), {}), ((5, 1, -1.5), {}), ((0, 1, 0.1), {}),
    ((-3, 3), {}), ((0.5,), {}), ((1, 10, 3), {}), ((10,), {"step": 2}), ((0, 1), {"step": 0.3}),
])
def test_arange_vs_numpy(args, kwargs):
    # NumPy's dtype rule: integer arguments give integers (int64), any float a float64.
    expected = np.arange(*args, **kwargs)
    check(qb.arange(*args, **kwargs), expected, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("start, stop, num", [(0, 1, 5), (-2, 3, 11), (1, 0, 4), (0, 1, 1), (3.5, 3.5, 3), (0, 1e10, 7), (0, 1, 50)])
def test_linspace_vs_numpy(start, stop, num):
    got = qb.linspace(start, stop, num)
    check(got, np.linspace(start, stop, num), rtol=1e-15, atol=1e-15)
    if num > 1:
        assert got.tolist()[-1] == stop  # inclusive, exactly
    assert got.tolist()[0] == start


def test_linspace_default_num_and_endpoint():
    check(qb.linspace(0, 2), np.linspace(0, 2), rtol=1e-15)
    check(qb.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False), rtol=1e-15)


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((3,), {}), ((2, 4), {}), ((4, 2), {}), ((3,), {"k": 1}),
                                          ((3, 4), {"k": -1}), ((3, 3), {"k": 5})])
def test_eye_vs_numpy(args, kwargs):
    check(qb.eye(*args, **kwargs), np.eye(*args, **kwargs))


def test_eye_m_keyword():
    check(qb.eye(3, m=5), np.eye(3, 5))
    check(qb.eye(2, m=4, k=2), np.eye(2, 4, k=2))


@pytest.mark.parametrize("src", [
    np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32), np.arange(6.0).reshape(3, 2, 1),
    np.array([True, False]),
])
def test_like_factories(src):
    x = qb.array(src)
    check(qb.zeros_like(x), np.zeros_like(src))
    check(qb.ones_like(x), np.ones_like(src))
    check(qb.full_like(x, 1), np.full_like(src, 1))
    check(qb.zeros_like(x, dtype=qb.float64), np.zeros(src.shape))
    check(qb.ones_like(x, dtype=qb.float32), np.ones(src.shape, dtype=np.float32))
    check(qb.full_like(x, 2.5, dtype=qb.float64), np.full(src.shape, 2.5))
    # from NumPy input directly
    check(qb.zeros_like(src), np.zeros_like(src))


def test_full_like_keeps_float32():
    x = qb.ones((2, 2), dtype=qb.float32)
    check(qb.full_like(x, 0.1), np.full((2, 2), 0.1, dtype=np.float32))


# ---------------------------------------------------------------- properties and dtypes

def test_properties():
    x = qb.zeros((2, 3, 4), dtype=qb.float32)
    assert x.shape == (2, 3, 4) and type(x.shape) is tuple
    assert x.ndim == 3
    assert x.size == 24
    assert x.dtype == qb.float32
    s = qb.array(1.0)
    assert s.shape == () and s.ndim == 0 and s.size == 1
    v = qb.arange(5)
    assert v.shape == (5,) and v.ndim == 1 and v.size == 5
    assert len(qb.zeros((4, 2))) == 4


@pytest.mark.parametrize("dt, name, short, itemsize", [
    (qb.float32, "float32", "f32", 4), (qb.float64, "float64", "f64", 8), (qb.bool_, "bool", "bool", 1),
])
def test_dtype_objects(dt, name, short, itemsize):
    assert dt.name == name
    assert str(dt) == short
    assert dt.itemsize == itemsize
    assert dt == dt
    assert dt == name
    assert dt == np.dtype(name)
    assert hash(dt) == hash(qb.zeros(2, dtype=dt).dtype)
    assert qb.zeros(2, dtype=dt).dtype == dt
    assert isinstance(dt, qb.DType)
    assert qb.zeros((3, 2), dtype=dt).nbytes == 6 * itemsize


def test_dtypes_distinct_and_usable_as_keys():
    dts = [qb.float32, qb.float64, qb.bool_]
    for i, a in enumerate(dts):
        for j, b in enumerate(dts):
            assert (a == b) == (i == j)
            assert (a != b) == (i != j)
    table = {qb.float32: "a", qb.float64: "b", qb.bool_: "c"}
    assert len(table) == 3
    assert table[qb.ones(1, dtype=qb.float32).dtype] == "a"
    assert table[qb.ones(1).dtype] == "b"
    assert table[qb.array([True]).dtype] == "c"
    assert len({qb.float32, qb.array([1.0], dtype=qb.float32).dtype}) == 1
    assert qb.float32 != "float64"
    assert qb.float32 != 3


# ---------------------------------------------------------------- tolist / item / float

def test_tolist():
    src = np.arange(6.0).reshape(2, 3) / 4
    assert qb.array(src).tolist() == src.tolist()
    assert qb.array([True, False]).tolist() == [True, False]
    t = qb.array([True, False]).tolist()
    assert all(type(v) is bool for v in t)
    f = qb.array([1.5], dtype=qb.float32).tolist()
    assert type(f[0]) is float and f == [1.5]
    assert qb.array(2.0).tolist() == 2.0
    assert qb.array(np.float32(0.1)).tolist() == float(np.float32(0.1))


def test_item_and_float():
    assert qb.array([[3.25]]).item() == 3.25
    assert qb.array(-1.0, dtype=qb.float32).item() == -1.0
    assert qb.array([True]).item() is True
    assert float(qb.array([2.5])) == 2.5
    assert float(qb.array(0.1, dtype=qb.float32)) == float(np.float32(0.1))
    assert float(qb.array(True)) == 1.0
    assert int(qb.array(3.0)) == 3
    with pytest.raises(ValueError, match="size 1"):
        qb.array([1.0, 2.0]).item()
    with pytest.raises(TypeError, match="only size-1 arrays"):  # NumPy and JAX raise TypeError
        float(qb.array([1.0, 2.0]))


# ---------------------------------------------------------------- NumPy export

@pytest.mark.parametrize("src", [
    np.arange(6.0).reshape(2, 3), np.arange(4, dtype=np.float32), np.array([True, False, True]), np.array(5.0),
])
def test_numpy_export_zero_copy_readonly(src):
    x = qb.array(src)
    a = x.numpy()
    b = x.numpy()
    assert isinstance(a, np.ndarray)
    assert a.dtype == src.dtype and a.shape == src.shape
    np.testing.assert_array_equal(a, src)
    assert np.shares_memory(a, b)
    assert np.shares_memory(a, np.asarray(x))
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[(0,) * a.ndim] = 1
    with pytest.raises(ValueError):
        a += 1
    np.testing.assert_array_equal(x.numpy(), src)  # unchanged


def test_numpy_export_cannot_be_made_writeable():
    a = qb.arange(3).numpy()
    with pytest.raises(ValueError):
        a.setflags(write=True)


def test_np_asarray_and_array():
    x = qb.array([[1.0, 2.0], [3.0, 4.0]], dtype=qb.float32)
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.shape == (2, 2)
    np.testing.assert_array_equal(a, [[1, 2], [3, 4]])
    c = np.array(x)  # np.array copies: writeable
    assert c.flags.writeable and not np.shares_memory(c, a)
    c[0, 0] = 100
    assert x.tolist()[0][0] == 1.0
    d = np.asarray(x, dtype=np.float64)
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d, [[1, 2], [3, 4]])


def test_dunder_array_copy_flags():
    x = qb.arange(3)
    c = x.__array__(copy=True)
    assert c.flags.writeable and not np.shares_memory(c, x.numpy())
    with pytest.raises(ValueError):
        x.__array__(dtype=np.float32, copy=False)


def test_memoryview():
    x = qb.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = memoryview(x)
    assert m.readonly
    assert m.shape == (2, 3)
    assert m.format == "d"
    assert m.itemsize == 8
    assert m.nbytes == 48
    assert m.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert memoryview(qb.ones(2, dtype=qb.float32)).format == "f"
    assert memoryview(qb.ones(2, dtype=qb.float32)).itemsize == 4
    mb = memoryview(qb.array([True, False]))
    assert mb.format == "?" and mb.itemsize == 1 and mb.tolist() == [True, False]
    with pytest.raises(TypeError):
        m[0, 0] = 9.0


def test_physical_storage_sizes():
    for dt, size in ((qb.float32, 4), (qb.float64, 8), (qb.bool_, 1)):
        a = qb.ones((5, 3), dtype=dt).numpy()
        assert a.itemsize == size and a.nbytes == 15 * size
        assert a.flags.c_contiguous
        assert a.strides == (3 * size, size)


def test_reshape_views_share_storage():
    x = qb.arange(12.0)
    y = x.reshape(3, 4)
    z = qb.reshape(y, (2, 6))
    assert x._shares_storage_with(y)
    assert x._shares_storage_with(z)
    assert x._shares_storage_with(z.ravel())
    assert x._shares_storage_with(qb.expand_dims(y, 0))
    assert np.shares_memory(x.numpy(), y.numpy())
    check(y, np.arange(12.0).reshape(3, 4))
    # a computed array does not share
    assert not x._shares_storage_with(x + 1.0)
    assert not x._shares_storage_with(qb.arange(12.0))


def test_import_copies():
    src = np.arange(4.0)
    x = qb.array(src)
    y = qb.asarray(src)
    src[0] = 100.0
    src[3] = -1.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not np.shares_memory(x.numpy(), src)
    src32 = np.ones(3, dtype=np.float32)
    x32 = qb.asarray(src32)
    src32[:] = 7
    assert x32.tolist() == [1.0, 1.0, 1.0]


def test_import_copies_list():
    lst = [1.0, 2.0]
    x = qb.array(lst)
    lst[0] = 5.0
    assert x.tolist() == [1.0, 2.0]


def test_export_import_round_trip_keeps_values():
    x = qb.array([0.1, 0.2], dtype=qb.float32)
    y = qb.array(x.numpy())
    assert y.dtype == qb.float32
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_round_trip_million_elements():
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        src = rng.standard_normal(1_000_000).astype(dtype)
        x = qb.array(src)
        assert x.size == 1_000_000 and x.shape == (1_000_000,)
        back = np.asarray(x)
        assert back.dtype == dtype
        np.testing.assert_array_equal(back, src)
    src = rng.standard_normal((1000, 1000))
    np.testing.assert_array_equal(qb.array(src).numpy(), src)
    mask = rng.standard_normal(1_000_000) > 0
    np.testing.assert_array_equal(qb.array(mask).numpy(), mask)


# ---------------------------------------------------------------- repr / str

@pytest.mark.parametrize("x, text", [
    (lambda: qb.array([1.0, 2.0], dtype=qb.float32), "Array([1., 2.], dtype=float32)"),
    (lambda: qb.array([1.0, 2.0]), "Array([1., 2.], dtype=float64)"),
    (lambda: qb.array([0.5, -3.0]), "Array([ 0.5, -3. ], dtype=float64)"),
    (lambda: qb.array([True, False]), "Array([ True, False], dtype=bool)"),
    (lambda: qb.array(2.0), "Array(2., dtype=float64)"),
    (lambda: qb.array([[1.0, 2.0], [3.0, 4.0]]), "Array([[1., 2.],\n       [3., 4.]], dtype=float64)"),
])
def test_repr(x, text):
    assert repr(x()) == text


def test_repr_summarised_past_1000_elements():
    small = repr(qb.arange(1000.0))
    assert "..." not in small
    assert "999." in small
    big = qb.arange(1001.0)
    r = repr(big)
    assert "..." in r
    assert r.startswith("Array([") and r.endswith("dtype=float64)")
    assert "500." not in r
    assert "1000." in r and "0.," in r
    r2 = repr(qb.zeros((100, 100), dtype=qb.float32))
    assert "..." in r2 and r2.endswith("dtype=float32)")
    assert len(r2) < 2000


def test_str_matches_numpy():
    src = np.array([[1.5, 2.0], [3.0, 4.0]])
    assert str(qb.array(src)) == str(src)


# ---------------------------------------------------------------- truthiness, hashing, iteration

def test_truthiness():
    assert bool(qb.array([True])) is True
    assert bool(qb.array(False)) is False
    assert bool(qb.array([[1.0]])) is True
    assert bool(qb.array(0.0)) is False
    x = qb.array([3.0])
    took = "yes" if x > 2.0 else "no"
    assert took == "yes"
    for big in (qb.array([True, False]), qb.ones((2, 2)), qb.array([False, False])):
        with pytest.raises(ValueError, match="ambiguous"):
            bool(big)
    with pytest.raises(ValueError):
        if qb.arange(3.0) > 1.0:
            pass


def test_unhashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(qb.array([1.0]))
    with pytest.raises(TypeError):
        {qb.array(1.0): 1}
    with pytest.raises(TypeError):
        set([qb.zeros(2)])


def test_iteration():
    x = qb.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    rows = list(x)
    assert len(rows) == 3
    for r, exp in zip(rows, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]):
        check(r, np.array(exp))
    with pytest.raises(TypeError):
        iter(qb.array(1.0)).__next__()
    with pytest.raises(TypeError):
        len(qb.array(1.0))


def test_immutable_setitem():
    x = qb.array([1.0, 2.0])
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 5.0
    assert x.tolist() == [1.0, 2.0]
