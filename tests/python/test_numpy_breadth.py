"""jax.numpy and jax names of python/quabla/_numpy_breadth.py (and quabla.dtypes): values and
dtypes against jax.numpy (float64, x64 on) or NumPy, the same under qb.jit, derivatives
against central differences, errors by type and message, and JAX's top-level helpers."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import quabla as qb
import quabla.numpy as qnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(11)
A = RNG.normal(size=(3, 4))
V = RNG.normal(size=6)
M4 = np.arange(12.0).reshape(3, 4)


def same(got, want, rtol=1e-13, atol=1e-15, dtype=True):
    """got (Quabla) equals want (jax.numpy or NumPy) in structure, shape, dtype and value."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (type(got), got)
        for g, w in zip(got, want):
            same(g, w, rtol, atol, dtype)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if dtype:
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
    if g.dtype == bool or np.issubdtype(g.dtype, np.integer):
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def fd_grad(f, x, h=1e-6):
    """Central differences of the scalar function f at the float64 array x."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (float(f(qb.asarray(x + e))) - float(f(qb.asarray(x - e)))) / (2 * h)
    return out


# ---- values against jax.numpy: each case runs the same call on qb and on jnp ----------------------

CASES = [
    ("angle_int", lambda m: m.angle(np.array([-1, 0, 2]))),
    ("angle_float", lambda m: m.angle(np.array([-0.0, 0.0, -2.0, 3.0, np.nan]))),
    ("angle_deg", lambda m: m.angle(np.array([-2.0, 1.0]), deg=True)),
    ("choose_wrap", lambda m: m.choose(np.array([0, 3, -1]), [np.arange(3), np.arange(3) + 10], mode="wrap")),
    ("choose_clip", lambda m: m.choose(np.array([0, 3, -1]), [np.arange(3), np.arange(3) + 10], mode="clip")),
    ("choose_raise", lambda m: m.choose(np.array([1, 0, 1]), [np.arange(3), np.arange(3) + 10])),
    ("choose_broadcast", lambda m: m.choose(np.array([[0], [1]]), [np.arange(3), np.arange(3) * 10])),
    ("choose_array_choices", lambda m: m.choose(np.array([0, 1, 0]), np.array([[1, 2, 3], [4, 5, 6]]))),
    ("choose_mixed_dtypes", lambda m: m.choose(np.array([0, 1]), [np.arange(2), np.array([1.5, 2.5])])),
    ("compress_axis0", lambda m: m.compress(np.array([True, False, True]), M4, axis=0)),
    ("compress_short_condition", lambda m: m.compress(np.array([True, False]), M4, axis=1)),
    ("compress_flat_int_condition", lambda m: m.compress(np.array([1, 0, 1]), M4)),
    ("compress_size", lambda m: m.compress(np.array([True, False, True]), np.arange(4.0), size=3, fill_value=-1)),
    ("compress_size_axis1", lambda m: m.compress(np.array([False, True, True, True]), M4, axis=1, size=2)),
    ("extract", lambda m: m.extract(np.array([[1, 0], [0, 1]]), np.arange(4.0).reshape(2, 2))),
    ("extract_size", lambda m: m.extract(np.array([[1, 0], [0, 1]]), np.arange(4.0).reshape(2, 2), size=3,
                                         fill_value=9)),
    ("place", lambda m: m.place(np.arange(6.0), np.array([1, 0, 1, 0, 1, 1]), np.array([9.0, 8.0]), inplace=False)),
    ("place_2d", lambda m: m.place(M4, M4 % 3 == 0, np.array([-1.0, -2.0, -3.0]), inplace=False)),
    ("put_default", lambda m: m.put(np.arange(6.0), np.array([0, 7, -2]), np.array([9.0, 8.0, 7.0]), inplace=False)),
    ("put_wrap", lambda m: m.put(np.arange(6.0), np.array([0, 7, -1]), np.array([9.0, 8.0]), mode="wrap",
                                 inplace=False)),
    ("put_clip_2d", lambda m: m.put(np.arange(6.0).reshape(2, 3), np.array([0, 7, -8]), np.array([9.0, 8.0, 7.0]),
                                    mode="clip", inplace=False)),
    ("put_along_axis", lambda m: m.put_along_axis(np.arange(6.0).reshape(2, 3), np.array([[0], [2]]), 9.0, axis=1,
                                                  inplace=False)),
    ("put_along_axis_axis0", lambda m: m.put_along_axis(M4, np.array([[2, 0, 1, 2]]), np.array([[7.0, 6, 5, 4]]),
                                                        axis=0, inplace=False)),
    ("put_along_axis_none", lambda m: m.put_along_axis(np.arange(6.0).reshape(2, 3), np.array([0, 5]),
                                                       np.array([7.0, 9.0]), axis=None, inplace=False)),
    ("diag_indices_from", lambda m: m.diag_indices_from(np.zeros((3, 3, 3)))),
    ("tril_indices_from", lambda m: m.tril_indices_from(np.zeros((3, 4)), k=1)),
    ("triu_indices_from", lambda m: m.triu_indices_from(np.zeros((3, 4)), k=-1)),
    ("fromfunction", lambda m: m.fromfunction(lambda i, j: i + 10 * j, (2, 3))),
    ("fromfunction_int", lambda m: m.fromfunction(lambda i, j: i * j + 1, (3, 2), dtype=int)),
    ("fromfunction_vmapped", lambda m: m.fromfunction(lambda i: m.sum(i) + m.ones(2) * i, (3,))),
    ("histogram_bin_edges", lambda m: m.histogram_bin_edges(np.array([1.0, 2, 5]), bins=4)),
    ("histogram_bin_edges_range", lambda m: m.histogram_bin_edges(np.array([1.0, 2, 5]), bins=4, range=(0, 10))),
    ("histogram_bin_edges_equal", lambda m: m.histogram_bin_edges(np.array([2.0, 2, 2]), bins=2)),
    ("histogram_bin_edges_given", lambda m: m.histogram_bin_edges(np.array([2.0]), bins=np.array([0.0, 1, 3]))),
    ("histogram2d", lambda m: m.histogram2d(np.array([1.0, 2, 3, 4]), np.array([0.0, 1, 1, 2]), bins=2)),
    ("histogram2d_bins_list", lambda m: m.histogram2d(np.array([1.0, 2, 3, 4]), np.array([0.0, 1, 1, 2]),
                                                      bins=[2, 3])),
    ("histogram2d_density", lambda m: m.histogram2d(np.array([1.0, 2, 3, 4]), np.array([0.0, 1, 1, 2]), bins=2,
                                                    density=True)),
    ("histogram2d_weights_range", lambda m: m.histogram2d(np.array([1.0, 2, 3, 4]), np.array([0.0, 1, 1, 2]),
                                                          bins=2, range=[(0, 4), (0, 4)],
                                                          weights=np.array([1.0, 2, 3, 4]))),
    ("histogram2d_edges", lambda m: m.histogram2d(np.array([1.0, 2, 3, 4]), np.array([0.0, 1, 1, 2]),
                                                  bins=np.array([0.0, 1.5, 5.0]))),
    ("histogramdd", lambda m: m.histogramdd(np.array([[1.0, 0], [2, 1], [3, 1], [4, 2]]), bins=2)),
    ("histogramdd_outside", lambda m: m.histogramdd(np.array([[1.0, 0], [2, 1], [3, 1], [9, 2]]), bins=2,
                                                    range=[(0, 4), (0, 2)])),
    ("histogramdd_right_edge", lambda m: m.histogramdd(np.array([[4.0, 2]]), bins=2, range=[(0, 4), (0, 2)])),
    ("histogramdd_weights", lambda m: m.histogramdd(np.array([[1.0, 0], [2, 1], [3, 1], [4, 2]]), bins=(2, 1),
                                                    weights=np.array([1.0, 2, 3, 4]), range=[(0, 5), None])),
    ("histogramdd_edges", lambda m: m.histogramdd(np.array([[1.0, 0], [2, 1], [3, 1], [4, 2]]),
                                                  bins=[np.array([0.0, 2, 5]), 2])),
    ("histogramdd_density_3d", lambda m: m.histogramdd(RNG_3D, bins=(2, 3, 2), density=True)),
    ("histogramdd_int_sample", lambda m: m.histogramdd(np.array([[1, 0], [2, 1]]), bins=2)),
    ("bartlett", lambda m: [m.bartlett(k) for k in (0, 1, 2, 5, 6)]),
    ("blackman", lambda m: [m.blackman(k) for k in (0, 1, 4, 7)]),
    ("hamming", lambda m: [m.hamming(k) for k in (0, 1, 4, 7)]),
    ("hanning", lambda m: [m.hanning(k) for k in (0, 1, 4, 7)]),
    ("kaiser", lambda m: [m.kaiser(k, 3.0) for k in (0, 1, 4, 7)] + [m.kaiser(5, 0.0), m.kaiser(6, 8.6)]),
    ("window_float_M", lambda m: m.hamming(3.0)),
    ("poly", lambda m: m.poly(np.array([1.0, 2, 3]))),
    ("poly_int", lambda m: m.poly(np.array([1, 2]))),
    ("poly_scalar", lambda m: m.poly(np.array(2.0))),
    ("poly_empty", lambda m: m.poly(np.array([]))),
    ("polyadd", lambda m: m.polyadd(np.array([1.0, 2]), np.array([1.0, 2, 3]))),
    ("polyadd_int", lambda m: m.polyadd(np.array([1, 2, 3]), np.array([4]))),
    ("polysub", lambda m: m.polysub(np.array([1, 2]), np.array([1, 2, 3]))),
    ("polymul", lambda m: m.polymul(np.array([0.0, 1, 2]), np.array([1.0, 2, 3]))),
    ("polymul_trim", lambda m: m.polymul(np.array([0.0, 1, 2]), np.array([1.0, 2, 3]), trim_leading_zeros=True)),
    ("polymul_int", lambda m: m.polymul(np.array([1, 2]), np.array([3]))),
    ("polyder", lambda m: [m.polyder(np.array([1.0, 2, 3, 4]), k) for k in (0, 1, 2, 3, 4, 5)]),
    ("polyder_int", lambda m: m.polyder(np.array([1, 2, 3, 4]))),
    ("polyint", lambda m: m.polyint(np.array([3, 2, 1]))),
    ("polyint_k", lambda m: m.polyint(np.array([1.0, 2, 3]), m=2, k=np.array([1.0, 2.0]))),
    ("polyint_k_scalar", lambda m: m.polyint(np.array([3, 2, 1]), m=2, k=5)),
    ("polyint_float32", lambda m: m.polyint(np.array([1.0, 3.0], np.float32), m=2, k=2.0)),
    ("polyder_float32", lambda m: m.polyder(np.array([1.0, 3.0, 5.0], np.float32))),
    ("polymul_float32", lambda m: m.polymul(np.array([1.0, 0.5], np.float32), np.array([2.0, 3.0], np.float32))),
    ("polyint_m0", lambda m: m.polyint(np.array([3.0, 2, 1]), m=0)),
    ("polydiv", lambda m: m.polydiv(np.array([1.0, 2, 3, 4]), np.array([2.0, 1]))),
    ("polydiv_int", lambda m: m.polydiv(np.array([1, 2, 3, 4]), np.array([2, 1]))),
    ("polydiv_trim", lambda m: m.polydiv(np.array([1.0, 2, 3, 4]), np.array([1.0, 2, 3]), trim_leading_zeros=True)),
    ("polydiv_short", lambda m: m.polydiv(np.array([1.0, 2]), np.array([1.0, 2, 3]))),
    ("resize", lambda m: m.resize(np.arange(3), (2, 4))),
    ("resize_int", lambda m: m.resize(np.arange(3), 5)),
    ("resize_shrink", lambda m: m.resize(M4, (2, 2))),
    ("resize_empty", lambda m: m.resize(np.array([]), (2,))),
    ("rollaxis", lambda m: [m.rollaxis(np.zeros((2, 3, 4, 5)), a, s).shape
                            for a, s in ((3, 1), (1, 4), (-1, 0), (2, 2), (0, -2), (1, 2))]),
    ("trim_zeros", lambda m: m.trim_zeros(np.array([0, 0, 1, 2, 0, 3, 0]))),
    ("trim_zeros_f", lambda m: m.trim_zeros(np.array([0, 0, 1, 2, 0, 3, 0]), "f")),
    ("trim_zeros_b", lambda m: m.trim_zeros(np.array([0.0, 0, 1, 2, 0, 3, 0]), "B")),
    ("trim_zeros_all_zero", lambda m: m.trim_zeros(np.array([0, 0]))),
    ("trim_zeros_2d", lambda m: m.trim_zeros(np.array([[0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 0, 0]]))),
    ("trim_zeros_2d_axis", lambda m: m.trim_zeros(np.array([[0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 0, 0]]), axis=1)),
    ("unwrap", lambda m: m.unwrap(np.array([0.0, 3.0, 6.5, 0.1, -3.2, 9.0]))),
    ("unwrap_int", lambda m: m.unwrap(np.array([0, 3, 7, 1, 10]), period=6)),
    ("unwrap_int_float_period", lambda m: m.unwrap(np.array([0, 3, 7, 1]))),
    ("unwrap_axis0", lambda m: m.unwrap(np.array([[0.0, 1.0], [5.0, -4.0], [0.5, 2.0]]), axis=0)),
    ("unwrap_discont", lambda m: m.unwrap(np.array([0.0, 4.0, 9.0, 1.0]), discont=4.5)),
    ("unwrap_period", lambda m: m.unwrap(np.array([0.0, 150.0, 350.0, 10.0]), period=360.0)),
    ("unwrap_empty", lambda m: m.unwrap(np.zeros((2, 0)))),
    ("matrix_transpose", lambda m: m.matrix_transpose(np.arange(24.0).reshape(2, 3, 4))),
    ("mask_indices", lambda m: m.mask_indices(3, m.triu, 1)),
    ("mask_indices_size", lambda m: m.mask_indices(3, m.triu, 1, size=4)),
    ("iscomplex", lambda m: m.iscomplex(np.array([1.0, 2.0]))),
    ("isreal", lambda m: m.isreal(np.array([[1, 2]]))),
    ("iscomplex_complex_numpy", lambda m: m.iscomplex(np.array([1 + 1j, 2 + 0j]))),
    ("isreal_complex_numpy", lambda m: m.isreal(np.array([1 + 1j, 2 + 0j]))),
    ("bitwise_invert", lambda m: m.bitwise_invert(np.array([1, 0, -3]))),
    ("bitwise_invert_bool", lambda m: m.bitwise_invert(np.array([True, False]))),
    ("bitwise_left_shift", lambda m: m.bitwise_left_shift(np.array([1, 2, 3]), np.array([1, 3, 0]))),
    ("bitwise_right_shift", lambda m: m.bitwise_right_shift(np.array([-8, 8, 9]), 2)),
    ("frombuffer", lambda m: m.frombuffer(np.arange(3, dtype=np.float32).tobytes(), dtype=m.float32)),
    ("frombuffer_default", lambda m: m.frombuffer(np.arange(4.0).tobytes(), count=3, offset=8)),
    ("frombuffer_int", lambda m: m.frombuffer(np.arange(5, dtype=np.int32).tobytes(), dtype=m.int32, offset=4)),
    ("fromstring", lambda m: m.fromstring("1 2 3.5", sep=" ")),
    ("fromstring_int", lambda m: m.fromstring("1,2,3", dtype=int, count=2, sep=",")),
]
RNG_3D = RNG.normal(size=(20, 3))


@pytest.mark.parametrize("name, call", CASES, ids=[c[0] for c in CASES])
def test_values_match_jax_numpy(name, call):
    same(call(qb), call(jnp))


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_long_windows_are_symmetric_and_match_numpy(name):
    for m in (64, 65):
        w = np.asarray(getattr(qb, name)(m))
        np.testing.assert_array_equal(w, w[::-1])
        np.testing.assert_allclose(w, getattr(np, name)(m), rtol=1e-13, atol=1e-15)
    w = np.asarray(qb.kaiser(64, 14.0))
    np.testing.assert_array_equal(w, w[::-1])
    np.testing.assert_allclose(w, np.kaiser(64, 14.0), rtol=1e-12, atol=1e-15)


def test_histogramdd_density_matches_numpy():
    counts, edges = qb.histogramdd(RNG_3D, bins=(2, 3, 2), density=True)
    want, want_edges = np.histogramdd(RNG_3D, bins=(2, 3, 2), density=True)
    same(counts, want, rtol=1e-12)
    same(edges, want_edges)


def test_poly_of_a_square_matrix_is_its_real_characteristic_polynomial():
    # jax.numpy returns complex coefficients here; Quabla computes them in real arithmetic.
    m = RNG.normal(size=(4, 4))
    same(qb.poly(m), np.poly(m).real, rtol=1e-10, atol=1e-12)
    s = m + m.T
    np.testing.assert_allclose(np.asarray(qb.poly(s)), np.real(jnp.poly(s)), rtol=1e-10, atol=1e-12)


def test_poly_roundtrip_with_polyval_and_polydiv():
    roots = np.array([0.5, -1.25, 2.0])
    p = qb.poly(roots)
    same(qb.polyval(p, qb.asarray(roots)), np.zeros(3), atol=1e-14)
    q, r = qb.polydiv(p, qb.asarray([1.0, -2.0]))  # exact factor (x - 2)
    same(q, np.poly([0.5, -1.25]), rtol=1e-14)
    same(r, np.zeros(4), atol=1e-14)


def test_choose_from_an_array_of_choices_and_mode_raise_eagerly():
    choices = RNG.normal(size=(3, 2, 4))
    a = np.array([[0, 2, 1, 2], [1, 1, 0, 0]])
    same(qb.choose(a, choices), np.choose(a, choices))
    same(qb.choose(a, qb.asarray(choices)), np.choose(a, choices))


def test_put_and_place_agree_with_numpy_in_place_versions():
    ref = np.arange(10.0)
    np.put(ref, [1, 4, 6], [-1.0, -2.0])
    same(qb.put(np.arange(10.0), np.array([1, 4, 6]), np.array([-1.0, -2.0]), inplace=False), ref)
    ref = M4.copy()
    np.place(ref, ref > 5, [10.0, 20.0, 30.0])
    same(qb.place(M4, M4 > 5, np.array([10.0, 20.0, 30.0]), inplace=False), ref)
    ref = M4.copy()
    idx = np.array([[3], [0], [1]])
    np.put_along_axis(ref, idx, np.array([[1.0], [2.0], [3.0]]), axis=1)
    same(qb.put_along_axis(M4, idx, np.array([[1.0], [2.0], [3.0]]), axis=1, inplace=False), ref)


def test_resize_and_rollaxis_agree_with_numpy():
    same(qb.resize(M4, (5, 3)), np.resize(M4, (5, 3)))
    for axis, start in ((0, 3), (3, 0), (2, -1), (-2, 4)):
        assert qb.rollaxis(np.zeros((2, 3, 4, 5)), axis, start).shape == np.rollaxis(np.zeros((2, 3, 4, 5)), axis,
                                                                                     start).shape
    x = RNG.normal(size=(2, 3, 4))
    same(qb.rollaxis(x, 2), np.rollaxis(x, 2))


# ---- unique_* --------------------------------------------------------------------------------------

X_UNIQUE = np.array([[3, 1], [3, 2]])


@pytest.mark.parametrize("kwargs", [{}, {"size": 4, "fill_value": 0}, {"size": 4}, {"size": 2}])
def test_unique_all_counts_inverse_values_match_jax(kwargs):
    got = qb.unique_all(X_UNIQUE, **kwargs)
    want = jnp.unique_all(X_UNIQUE, **kwargs)
    assert got._fields == want._fields == ("values", "indices", "inverse_indices", "counts")
    same(tuple(got), tuple(want))
    same(tuple(qb.unique_counts(X_UNIQUE, **kwargs)), tuple(jnp.unique_counts(X_UNIQUE, **kwargs)))
    same(tuple(qb.unique_inverse(X_UNIQUE, **kwargs)), tuple(jnp.unique_inverse(X_UNIQUE, **kwargs)))
    same(qb.unique_values(X_UNIQUE, **kwargs), jnp.unique_values(X_UNIQUE, **kwargs))
    assert qb.unique_counts(X_UNIQUE, **kwargs)._fields == ("values", "counts")
    assert qb.unique_inverse(X_UNIQUE, **kwargs)._fields == ("values", "inverse_indices")


@pytest.mark.parametrize("kwargs", [{}, {"size": 5}, {"size": 6, "fill_value": -1.0}])
def test_unique_all_keeps_nans_distinct_as_the_array_api(kwargs):
    x = np.array([1.0, np.nan, np.nan, 0.0, 1.0])
    same(tuple(qb.unique_all(x, **kwargs)), tuple(jnp.unique_all(x, **kwargs)))
    np.testing.assert_array_equal(np.asarray(qb.unique_values(x)), np.unique_values(x))


def test_unique_all_under_jit_with_size_and_error_without():
    x = qb.asarray([5, 9, 6, 4, 9, 5])
    got = qb.jit(lambda v: tuple(qb.unique_all(v, size=6, fill_value=0)))(x)
    same(got, tuple(jnp.unique_all(np.asarray(x), size=6, fill_value=0)))
    with pytest.raises(ValueError, match="unique_values: size= is required under jit"):
        qb.jit(qb.unique_values)(x)


# ---- small helpers -----------------------------------------------------------------------------------

def test_index_expressions_iterable_and_complex_predicates():
    assert qb.s_[1:3, ::2] == np.s_[1:3, ::2]
    assert qb.s_[2] == 2
    assert qb.index_exp[2] == (2,) == np.index_exp[2]
    assert qb.index_exp[1:2, None] == np.index_exp[1:2, None]
    x = qb.arange(10.0)
    same(x[qb.s_[2:8:3]], np.arange(10.0)[2:8:3])
    assert [qb.iterable(v) for v in (qb.zeros(2), qb.zeros(()), 3, [1], "ab")] == [True, False, False, True, True]
    assert qb.iscomplexobj(qb.zeros(2)) is False and qb.isrealobj(qb.zeros(2)) is True
    assert qb.iscomplexobj(1j) is True and qb.iscomplexobj(np.array([1j])) is True
    assert qb.iscomplexobj(1.0) is False and qb.iscomplexobj([1.0, 2.0]) is False and qb.iscomplexobj("a") is False
    assert qb.iscomplexobj(np.complex64) is True and qb.isrealobj(np.float32) is True
    assert qb.iscomplex(3.0).shape == () and bool(qb.isreal(3.0))


def test_dtype_aliases():
    assert qb.bool == qb.bool_ and qnp.bool == qb.bool_ and isinstance(qb.bool, qb.DType)
    assert qb.float_ == qb.float64 and qb.double == qb.float64 and qb.single == qb.float32 and qb.int_ == qb.int64
    assert qb.float_ is qb.double and qnp.int_ is qb.int_
    assert qb.zeros(2, dtype=qb.bool).dtype == qb.bool_
    assert qb.float0 == jax.float0 and qnp.float0 == jax.float0
    # the package's own code still sees the builtin bool (qb.grad's argument dispatch uses it)
    assert float(qb.grad(lambda x: x * x, argnums=(0,))(3.0)[0]) == 6.0
    assert "bool" not in qb.__all__


def test_quabla_dtypes_module():
    import quabla.dtypes as qd
    assert qd is qb.dtypes
    assert qd.float0 == jax.dtypes.float0
    assert qd.canonicalize_dtype(np.float64) == qb.float64 and qd.canonicalize_dtype(int) == qb.int64
    assert isinstance(qd.canonicalize_dtype("float32"), qb.DType)
    assert qd.issubdtype(qb.float32, np.floating) and not qd.issubdtype(qb.int32, np.floating)
    assert qd.result_type(qb.zeros(2, dtype=qb.int32), 1.5) == qb.float64
    assert qd.finfo(qb.float32).eps == np.finfo(np.float32).eps and qd.iinfo(qb.int32).max == 2 ** 31 - 1
    qb.config.update("jax_enable_x64", False)
    try:
        assert qd.canonicalize_dtype(qb.float64) == qb.float32 and qd.canonicalize_dtype(np.int64) == qb.int32
        assert qd.canonicalize_dtype(float) == qb.float32 and qd.canonicalize_dtype(qb.bool_) == qb.bool_
    finally:
        qb.config.update("jax_enable_x64", True)


def test_printoptions_go_through_numpy():
    assert qb.get_printoptions() == np.get_printoptions()
    x = qb.asarray([1.23456789, 2.0])
    with qb.printoptions(precision=2):
        assert repr(x) == "Array([1.23, 2.  ], dtype=float64)"
        assert qb.get_printoptions()["precision"] == 2
    assert qb.get_printoptions()["precision"] == 8
    old = np.get_printoptions()
    try:
        qb.set_printoptions(precision=3)
        assert str(x) == "[1.235 2.   ]"
    finally:
        np.set_printoptions(**old)


def test_array_repr_and_str():
    x = qb.asarray([1.55555, 2.0])
    assert qb.array_repr(x) == repr(x)
    assert qb.array_repr(x, precision=2) == "Array([1.56, 2.  ], dtype=float64)"
    assert qb.array_repr(qb.zeros((0, 2))) == repr(qb.zeros((0, 2)))
    assert qb.array_str(x, precision=2) == jnp.array_str(jnp.asarray(np.asarray(x)), precision=2) == "[1.56 2.  ]"
    assert qb.array_str(qb.asarray([1e-9, 1.0]), suppress_small=True) == "[0. 1.]"


def test_fromiter_and_einsum_path():
    same(qb.fromiter(iter([1.0, 2.0, 3.0]), dtype=float), np.array([1.0, 2.0, 3.0]))
    same(qb.fromiter((i * i for i in range(5)), dtype=qb.int32, count=3), np.array([0, 1, 4], dtype=np.int32))
    ops = [np.zeros((2, 3)), np.zeros((3, 4)), np.zeros((4, 5))]
    for opt in ("greedy", "optimal"):
        assert qb.einsum_path("ij,jk,kl->il", *[qb.asarray(o) for o in ops], optimize=opt) == \
            np.einsum_path("ij,jk,kl->il", *ops, optimize=opt)
    assert qb.einsum_path("ij,jk,kl->il", *ops)[0] == np.einsum_path("ij,jk,kl->il", *ops, optimize="greedy")[0]
    specs = [qb.ShapeDtype(o.shape, qb.float64) for o in ops]
    assert qb.einsum_path("ij,jk,kl->il", *specs, optimize=[(0, 1), (0, 1)])[0] == ["einsum_path", (0, 1), (0, 1)]


# ---- under jit ---------------------------------------------------------------------------------------

JIT_CASES = [
    ("choose_wrap", lambda m, a, c: m.choose(a, [c, 2 * c, -c], mode="wrap")),
    ("choose_clip", lambda m, a, c: m.choose(a, [c, 2 * c, -c], mode="clip")),
    ("compress_size", lambda m, a, c: m.compress(a > 1, c, size=3, fill_value=-5.0)),
    ("extract_size", lambda m, a, c: m.extract(a % 2 == 0, c, size=4)),
    ("place", lambda m, a, c: m.place(c, a > 1, m.asarray([7.0, 8.0]), inplace=False)),
    ("put", lambda m, a, c: m.put(c, a, c[:2] * 10, inplace=False)),
    ("put_wrap", lambda m, a, c: m.put(c, a * 3, -c, mode="wrap", inplace=False)),
    ("put_along_axis", lambda m, a, c: m.put_along_axis(c, m.clip(a, 0, 5), c * 2, axis=0, inplace=False)),
    ("histogramdd", lambda m, a, c: m.histogramdd(m.stack([c, c * c], axis=1), bins=3)),
    ("histogram2d_weights", lambda m, a, c: m.histogram2d(c, -c, bins=(2, 3), weights=c * c)),
    ("windows", lambda m, a, c: (m.hamming(5), m.kaiser(4, c[0] + 3.0), m.bartlett(4))),
    ("poly", lambda m, a, c: (m.poly(c[:3]), m.polyder(c, 2), m.polyint(c, 2, k=c[:2]), m.polymul(c, c[:2]))),
    ("polydiv", lambda m, a, c: m.polydiv(c, c[:3] + 1.0)),
    ("unwrap", lambda m, a, c: m.unwrap(c * 4.0)),
    ("angle", lambda m, a, c: m.angle(c, deg=True)),
    ("resize", lambda m, a, c: m.resize(c, (4, 4))),
    ("mask_indices", lambda m, a, c: m.mask_indices(4, m.tril, -1, size=7)),
]
JIT_A = np.array([0, 4, 2, -1, 5, 1])
JIT_C = np.array([1.5, -2.0, 0.25, 3.0, -0.5, 2.0])


@pytest.mark.parametrize("name, call", JIT_CASES, ids=[c[0] for c in JIT_CASES])
def test_under_jit_matches_jax_jit(name, call):
    got = qb.jit(lambda a, c: call(qb, a, c))(qb.asarray(JIT_A), qb.asarray(JIT_C))
    want = jax.jit(lambda a, c: call(jnp, a, c))(JIT_A, JIT_C)
    same(got, want, rtol=1e-12)


def test_fromfunction_passes_kwargs_unmapped():
    # (jax.numpy maps keyword arguments too, so a scalar one fails there; here they are constants)
    same(qb.fromfunction(lambda i, j, scale: i * scale + j, (2, 3), scale=2.5),
         np.fromfunction(lambda i, j, scale: i * scale + j, (2, 3), scale=2.5))


def test_fromfunction_under_jit_and_vmap():
    f = qb.jit(lambda s: qb.fromfunction(lambda i, j: (i - j) * s, (3, 2)))
    same(f(qb.asarray(2.0)), jnp.fromfunction(lambda i, j: (i - j) * 2.0, (3, 2)))


# ---- derivatives against central differences (float64) -------------------------------------------------

def test_grads_against_finite_differences():
    c = RNG.normal(size=4)
    checks = [
        (lambda x: qb.sum(qb.choose(qb.asarray([0, 1, 1, 0]), [x, x * x]) ** 2), c),
        (lambda x: qb.sum(qb.compress(x > 0.0, qb.sin(x), size=2, fill_value=1.0) * qb.asarray([1.0, 3.0])), c),
        (lambda x: qb.sum(qb.put_along_axis(qb.zeros((2, 4)), qb.asarray([[1], [3]]), x[:2, None] ** 2, axis=1,
                                            inplace=False) * qb.arange(8.0).reshape(2, 4)), c),
        (lambda x: qb.sum(qb.unwrap(x * 3.0) ** 2), c),
        (lambda x: qb.sum(qb.poly(x) * qb.arange(1.0, 6.0)), c),
        (lambda x: qb.sum(qb.polydiv(qb.concatenate([x, x]), x[:2] + 3.0)[0]), c),
        (lambda x: qb.sum(qb.kaiser(5, x[0] ** 2 + 1.0)), c),
        (lambda x: qb.sum(qb.polyint(x, 2, k=x[:2]) * qb.polyder(qb.concatenate([x, x]), 1)[:6]), c),
        (lambda x: qb.sum(qb.place(x, qb.asarray([True, False, True, True]), x[:1] * 5.0, inplace=False) ** 2), c),
        (lambda x: qb.sum(qb.poly(qb.outer(x, x) + qb.eye(4)) ** 2), c),
        (lambda x: qb.sum(qb.histogramdd(qb.asarray(RNG_3D[:4]), bins=2, weights=x * x)[0] * qb.arange(8.0).reshape(
            2, 2, 2)), c),
        (lambda x: qb.sum(qb.angle(x - 0.1) * x), c),
    ]
    for f, x in checks:
        g = qb.grad(f)(qb.asarray(x))
        np.testing.assert_allclose(np.asarray(g), fd_grad(f, x), rtol=1e-6, atol=1e-7)


# ---- errors ------------------------------------------------------------------------------------------

ERRORS = [
    (lambda: qb.choose(np.array([0, 3]), [np.arange(2), np.arange(2)]), ValueError, "out of range for 2 choices"),
    (lambda: qb.choose(np.array([0.0]), [np.arange(1)]), ValueError, "must hold integers"),
    (lambda: qb.choose(np.array([0]), [np.arange(1)], mode="x"), ValueError, "mode='x' not understood"),
    (lambda: qb.choose(np.array([0]), []), ValueError, "choices is empty"),
    (lambda: qb.choose(np.array([0]), qb.asarray(1.0)), ValueError, "an array of at least one dimension"),
    (lambda: qb.compress(np.ones((2, 2), bool), M4), ValueError, "condition must be a 1-D array"),
    (lambda: qb.compress(np.array([True, False, True, False, True]), np.arange(4.0)), ValueError,
     "true entries past the end of axis 0"),
    (lambda: qb.compress(np.array([True]), np.arange(3.0), size=4), ValueError, r"size must be in \[0, 1\]"),
    (lambda: qb.compress(np.array([True]), M4, axis=2), ValueError, "axis 2 is out of range"),
    (lambda: qb.place(np.arange(3.0), np.array([1, 0, 1]), np.array([1.0])), ValueError,
     "pass inplace=False"),
    (lambda: qb.place(np.arange(3.0), np.array([1, 0]), np.array([1.0]), inplace=False), ValueError,
     "same size, got 3 and 2"),
    (lambda: qb.place(np.arange(3.0), np.array([1, 0, 1]), np.array([]), inplace=False), ValueError,
     "vals is empty"),
    (lambda: qb.put(np.arange(3.0), np.array([0]), 1.0), ValueError, "immutable"),
    (lambda: qb.put(np.arange(3.0), np.array([0]), 1.0, mode="raise", inplace=False), NotImplementedError,
     "mode='raise' is not supported"),
    (lambda: qb.put(np.arange(3.0), np.array([0]), 1.0, mode="fill", inplace=False), ValueError,
     "mode must be None, 'clip' or 'wrap'"),
    (lambda: qb.put(np.arange(3.0), np.array([0.5]), 1.0, inplace=False), TypeError, "ind must be integers"),
    (lambda: qb.put_along_axis(M4, np.array([[0]]), 1.0, axis=1), ValueError, "pass inplace=False"),
    (lambda: qb.put_along_axis(M4, np.array([0]), 1.0, axis=1, inplace=False), ValueError,
     "same number of dimensions, got 2 and 1"),
    (lambda: qb.put_along_axis(M4, np.array([[0, 1]]), np.ones(3), axis=1, inplace=False), ValueError,
     "do not broadcast to the shape of indices"),
    (lambda: qb.diag_indices_from(np.zeros((3, 2))), ValueError, "must be of equal length"),
    (lambda: qb.diag_indices_from(np.zeros(3)), ValueError, "at least 2-D"),
    (lambda: qb.tril_indices_from(np.zeros(3)), ValueError, "only 2-D arrays"),
    (lambda: qb.triu_indices_from(np.zeros((2, 2)), k=1.5), TypeError, "k must be an int"),
    (lambda: qb.fromfunction(3, (2,)), TypeError, "function must be callable"),
    (lambda: qb.resize(np.arange(3), (-1,)), ValueError, "must be non-negative"),
    (lambda: qb.rollaxis(np.zeros((2, 3, 4, 5)), 1, 5), ValueError, r"start=5 must satisfy -4 <= start <= 4"),
    (lambda: qb.rollaxis(np.zeros((2, 3)), 2), ValueError, "axis 2 is out of range"),
    (lambda: qb.hamming(-2), ValueError, "M must be non-negative"),
    (lambda: qb.kaiser(True, 1.0), TypeError, "M must be an int"),
    (lambda: qb.poly(np.zeros((2, 3))), ValueError, "non-empty square 2-D array"),
    (lambda: qb.polyder(np.array([1.0, 2]), -1), ValueError, "order of the derivative must be non-negative"),
    (lambda: qb.polyint(np.array([1.0, 2]), -1), ValueError, "order of the integral must be non-negative"),
    (lambda: qb.polyint(np.array([1.0, 2]), 2, k=np.array([1.0, 2, 3])), ValueError, "length 1 or m=2"),
    (lambda: qb.polyadd(np.zeros((2, 2)), np.zeros(2)), ValueError, "1-D array of coefficients"),
    (lambda: qb.histogramdd(np.array([1.0, 2, 3]), bins=2), ValueError, "sample must be a 2-D array"),
    (lambda: qb.histogramdd(np.zeros((2, 2)), bins=[2, 2, 2]), ValueError, "3 entries for 2 dimensions"),
    (lambda: qb.histogram_bin_edges(np.zeros(3), bins="auto"), NotImplementedError, "string values for bins"),
    (lambda: qb.histogram2d(np.zeros(3), np.zeros(2)), ValueError, "1-D of one length"),
    (lambda: qb.matrix_transpose(np.zeros(2)), ValueError, "at least two-dimensional, got ndim=1"),
    (lambda: qb.unique_all(np.zeros(0), size=2), ValueError, "needs a non-empty array"),
    (lambda: qb.fromstring("1 2", sep=""), ValueError, "sep must be a non-empty separator"),
    (lambda: qb.trim_zeros(np.array([0, 1]), trim=1), TypeError, "trim must be a string"),
    (lambda: qb.bitwise_invert(qb.asarray([1.5])), TypeError, "needs an integer or bool array"),
    (lambda: qb.named_scope(3), TypeError, "name must be a string"),
    (lambda: qb.named_call(3), TypeError, "expected a function"),
    (lambda: qb.typeof([1.0]), TypeError, "list is not an array type"),
    (lambda: qb.local_devices(backend="tpu"), ValueError, "backend must be None, 'cpu'"),
    (lambda: qb.local_devices(process_index=3), ValueError, "only this process's devices are known"),
    (lambda: qb.linear_transpose(lambda x: 3 * x, qb.asarray([1, 2])), TypeError, "must have float dtypes"),
    (lambda: qb.linear_transpose(lambda x: 3 * x, 1.0)((1.0, 2.0)), TypeError, "the cotangent has structure"),
    (lambda: qb.linear_transpose(lambda x: 3 * x, qb.zeros(2))(qb.zeros(3)), TypeError, "cotangent of shape"),
    (lambda: qb.custom_gradient(3), TypeError, "expected a function"),
]


@pytest.mark.parametrize("call, exc, msg", ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_errors_that_need_concrete_values_under_jit():
    a = qb.asarray([0, 1])
    with pytest.raises(qb.TracerError, match="choose: mode='raise' checks the index values"):
        qb.jit(lambda i: qb.choose(i, [qb.arange(2), qb.arange(2) + 10]))(a)
    with pytest.raises(ValueError, match="compress: size= is required under jit"):
        qb.jit(lambda c: qb.compress(c, qb.arange(2.0)))(a > 0)
    with pytest.raises(ValueError, match="extract: size= is required under jit|compress: size= is required"):
        qb.jit(lambda c: qb.extract(c, qb.arange(2.0)))(a > 0)
    with pytest.raises(qb.TracerError, match="trim_zeros: the result's shape depends on the values"):
        qb.jit(qb.trim_zeros)(a)
    with pytest.raises(qb.TracerError, match="polymul: trim_leading_zeros=True"):
        qb.jit(lambda p: qb.polymul(p, p, trim_leading_zeros=True))(qb.asarray([0.0, 1.0]))
    # without the option polymul jits
    same(qb.jit(lambda p: qb.polymul(p, p))(qb.asarray([0.0, 1.0])), np.array([0.0, 0.0, 1.0]))


# ---- JAX's top-level helpers ----------------------------------------------------------------------------

def test_clear_caches_makes_jitted_functions_trace_again():
    f = qb.jit(lambda x: x * 2.0 + 1.0)
    x = qb.asarray([1.0, 2.0])
    same(f(x), np.array([3.0, 5.0]))
    same(f(x), np.array([3.0, 5.0]))
    assert f.trace_count == 1
    qb.clear_caches()
    same(f(x), np.array([3.0, 5.0]))
    assert f.trace_count == 2
    same(f(x), np.array([3.0, 5.0]))
    assert f.trace_count == 2


def test_device_and_process_queries():
    assert qb.default_backend() == jax.default_backend() == "cpu"
    assert qb.local_devices() == ["cpu"] == qb.local_devices(backend="cpu")
    assert qb.device_count() == qb.local_device_count() == jax.device_count() == 1
    assert qb.process_count() == qb.host_count() == 1 and qb.process_index() == qb.host_id() == 0
    assert qb.local_devices(process_index=0) == ["cpu"]


def test_named_call_named_scope_and_ensure_compile_time_eval():
    f = lambda x: x + 1.0  # noqa: E731
    assert qb.named_call(f, name="inc") is f
    with qb.named_scope("layer") as scope:
        assert scope is not None

    @qb.named_scope("decorated")
    def g(x):
        return x * 3.0
    same(qb.jit(g)(qb.asarray(2.0)), np.array(6.0))

    def h(x):
        with qb.ensure_compile_time_eval():
            c = qb.sin(qb.asarray(1.0))
            assert not c._is_tracer  # a constant, computed while tracing
        return x + c
    same(qb.jit(h)(qb.asarray(1.0)), np.array(1.0 + math.sin(1.0)))


def test_typeof():
    t = qb.typeof(qb.zeros((2, 3)))
    assert isinstance(t, qb.ShapeDtype) and t.shape == (2, 3) and t.dtype == qb.float64
    assert (qb.typeof(1.0).shape, qb.typeof(1.0).dtype) == ((), qb.float64)
    assert qb.typeof(3).dtype == qb.int64 and qb.typeof(True).dtype == qb.bool_
    t = qb.typeof(np.zeros(2, np.int32))
    assert (t.shape, t.dtype) == ((2,), qb.int32)

    def f(x):
        t = qb.typeof(x)
        assert (t.shape, t.dtype) == ((4,), qb.float32)
        return x
    qb.jit(f)(qb.zeros(4, dtype=qb.float32))


def test_print_environment_info(capsys):
    text = qb.print_environment_info(return_string=True)
    assert text.startswith(f"quabla: {qb.__version__}\nnumpy:  {np.__version__}\npython: ")
    assert "devices: cpu" in text and "process_count: 1" in text
    assert qb.print_environment_info() is None
    assert capsys.readouterr().out == text + "\n"


def test_custom_gradient_matches_jax():
    def make(m):
        @m
        def f(x, y):
            return x * y, lambda g: (g * y * 2.0, g * x * 2.0)
        return f
    q, j = make(qb.custom_gradient), make(jax.custom_gradient)
    assert float(q(3.0, 4.0)) == 12.0
    same(qb.grad(q, argnums=(0, 1))(qb.asarray(3.0), qb.asarray(4.0)),
         [np.asarray(v) for v in jax.grad(j, argnums=(0, 1))(3.0, 4.0)])

    @qb.custom_gradient
    def clipped_square(x):
        return x * x, lambda g: qb.clip(g * 2.0 * x, -1.0, 1.0)  # one argument: a bare cotangent
    xs = qb.asarray([0.2, 3.0, -4.0])
    same(qb.grad(lambda v: qb.sum(clipped_square(v)))(xs), np.array([0.4, 1.0, -1.0]))
    same(qb.jit(qb.grad(lambda v: qb.sum(clipped_square(v))))(xs), np.array([0.4, 1.0, -1.0]))
    same(clipped_square(xs), np.asarray(xs) ** 2)

    @qb.custom_gradient
    def bad(x, y):
        return x * y, lambda g: g
    with pytest.raises(TypeError, match=r"custom_gradient\(bad\): vjp must return a tuple of 2 cotangents"):
        qb.grad(bad)(1.0, 2.0)


def test_linear_transpose_matches_jax():
    f = lambda x, y: (2.0 * x + y, x - 3.0 * y)  # noqa: E731
    same(qb.linear_transpose(f, 1.0, 2.0)((1.0, 3.0)),
         [np.asarray(v) for v in jax.linear_transpose(f, 1.0, 2.0)((1.0, 3.0))])
    m = RNG.normal(size=(3, 2))
    g = lambda v: qb.asarray(m) @ v  # noqa: E731
    gt = qb.linear_transpose(g, qb.ShapeDtype((2,), qb.float64))
    ct = RNG.normal(size=3)
    (got,) = gt(qb.asarray(ct))
    same(got, m.T @ ct)
    (got,) = qb.jit(gt)(qb.asarray(ct))
    same(got, m.T @ ct)


def test_closure_convert_eagerly_and_under_grad():
    a = qb.asarray(3.0)
    g2, consts = qb.closure_convert(lambda z: a * z, 1.0)
    assert consts == []
    same(g2(2.0), np.array(6.0))
    with pytest.raises(TypeError, match="the arguments have structure"):
        g2(2.0, 5.0)

    def outer(s):
        def g(z):
            return qb.sin(s) * z * z
        conv, hoisted = qb.closure_convert(g, qb.asarray(1.0))
        assert len(hoisted) == 1 and hoisted[0]._is_tracer
        return conv(qb.asarray(2.0), *hoisted)
    same(qb.grad(outer)(qb.asarray(0.3)), np.array(4.0 * math.cos(0.3)), rtol=1e-14)
    same(qb.jit(qb.grad(outer))(qb.asarray(0.3)), np.array(4.0 * math.cos(0.3)), rtol=1e-14)


def test_closure_convert_with_custom_vjp_differentiates_the_hoisted_constants():
    # JAX's documented use: a custom_vjp rule taking a function (nondiff) must get the values
    # that function closes over as explicit arguments to give them cotangents.
    @functools.partial(qb.custom_vjp, nondiff_argnums=(0,))
    def call(f, x, *consts):
        return f(x, *consts)

    def call_fwd(f, x, *consts):
        return f(x, *consts), (x, consts)

    def call_bwd(f, res, g):
        x, consts = res
        return qb.vjp(f, x, *consts)[1](g)
    call.defvjp(call_fwd, call_bwd)

    def loss(w):
        conv, consts = qb.closure_convert(lambda z: qb.sin(w) * z * z, qb.asarray(1.5))
        assert len(consts) == (1 if w._is_tracer else 0)  # eagerly nothing is hoisted
        return call(conv, qb.asarray(1.5), *consts)  # sin(w) * 2.25
    same(qb.grad(loss)(qb.asarray(0.7)), np.array(2.25 * math.cos(0.7)), rtol=1e-14)
    same(loss(qb.asarray(0.7)), np.array(2.25 * math.sin(0.7)), rtol=1e-14)


def test_names_are_reachable_from_quabla_numpy():
    for name in ("angle", "choose", "unique_all", "s_", "histogramdd", "kaiser", "polydiv", "printoptions",
                 "float_", "int_", "bool", "float0"):
        assert getattr(qnp, name) is getattr(qb, name) or name == "float0"
