"""Inputs found by fuzzing the public API that gave wrong numbers, a wrong shape, or an unclear
error where NumPy and JAX give a result or a clear one. Each test names what it guards."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

jnp = qb.numpy


# ---- qb.fft ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [qb.fft.irfft, qb.fft.hfft])
@pytest.mark.parametrize("n", [0, -2])
def test_irfft_and_hfft_refuse_a_non_positive_n(fn, n):
    # was: n=0 returned [0.], and n=-2 said "n must be at least 1, got 0" (NumPy raises)
    with pytest.raises(ValueError, match=f"n must be at least 1, got {n}"):
        fn(jnp.arange(4.0) + 0j, n=n)


@pytest.mark.parametrize("fn", [qb.fft.fftn, qb.fft.ifftn, qb.fft.irfftn, qb.fft.rfftn])
def test_fftn_refuses_more_sizes_than_axes(fn):
    # was: s=(3, 3, 3) on a 2-d array transformed one axis twice (NumPy and JAX raise)
    with pytest.raises(ValueError, match="s has 3 entries but the array has only 2 dimensions"):
        fn(jnp.ones((2, 3)), s=(3, 3, 3))


@pytest.mark.parametrize("fn", [qb.fft.rfftn, qb.fft.irfftn])
def test_real_fftn_with_no_axes_says_so(fn):
    # was: IndexError "list index out of range"
    with pytest.raises(ValueError, match="needs at least one axis to transform"):
        fn(jnp.ones((2, 2)), axes=())


# ---- indexing with narrow integers -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [qb.int8, qb.int16, qb.uint8, qb.uint16, qb.uint32])
def test_narrow_integer_index_arrays_index(dtype):
    # was: IndexError "array indices must be integers, got uint8" (NumPy and JAX index with them)
    x = jnp.arange(5.0)
    idx = jnp.array([1, 3], dtype=dtype)
    np.testing.assert_array_equal(x[idx], [1.0, 3.0])
    np.testing.assert_array_equal(x.at[idx].set(0.0), [0.0, 0.0, 2.0, 0.0, 4.0])
    np.testing.assert_array_equal(jnp.take(x, idx), [1.0, 3.0])
    np.testing.assert_array_equal(jnp.take_along_axis(x, idx, axis=0), [1.0, 3.0])
    np.testing.assert_array_equal(qb.lax.dynamic_slice(x, (jnp.array(2, dtype=dtype),), (2,)), [2.0, 3.0])
    np.testing.assert_array_equal(qb.jit(lambda a, i: a[i])(x, idx), [1.0, 3.0])
    np.testing.assert_array_equal(qb.ops.segment_sum(jnp.ones(4), jnp.array([0, 1, 1, 2], dtype=dtype)),
                                  [1.0, 2.0, 1.0])


def test_negative_int8_indices_count_from_the_end():
    np.testing.assert_array_equal(jnp.arange(5.0)[jnp.array([-1, -5], dtype=qb.int8)], [4.0, 0.0])


@pytest.mark.parametrize("dtype, fill", [(qb.int8, -128), (qb.int16, -32768), (qb.uint8, 255),
                                         (qb.uint16, 65535), (qb.uint32, 2 ** 32 - 1)])
def test_take_fills_narrow_integers_as_jax(dtype, fill):
    # was: out-of-bounds take of a narrow integer array filled with 1 (True); JAX fills with the
    # most negative value of a signed dtype and the largest of an unsigned one
    x = jnp.arange(3, dtype=dtype)
    assert jnp.take(x, jnp.array([5])).tolist() == [fill]
    assert x.at[jnp.array([7])].get(mode="fill").tolist() == [fill]


def test_at_get_refuses_an_unknown_mode():
    # was: silently ignored (JAX raises)
    with pytest.raises(ValueError, match="unknown gather mode 'bogus'"):
        jnp.ones(3).at[0].get(mode="bogus")


# ---- qb.image ----------------------------------------------------------------------------------

def test_resize_refuses_float_sizes():
    # was: (2.5, 2) truncated to (2, 2) (jax.image raises TypeError)
    with pytest.raises(TypeError, match="image.resize: shape must be a sequence of ints"):
        qb.image.resize(jnp.ones((4, 4)), (2.5, 2), "linear")


@pytest.mark.parametrize("method", ["linear", "nearest", "cubic"])
def test_resize_refuses_to_grow_an_empty_axis(method):
    # was: zeros (linear) from no data at all
    with pytest.raises(ValueError, match="axis 0 of the image is empty"):
        qb.image.resize(jnp.ones((0, 4)), (2, 2), method)


def test_scale_and_translate_checks_spatial_dims_and_scale():
    img, s, t = jnp.ones((4, 4)), jnp.array([2.0, 2.0]), jnp.array([0.0, 0.0])
    # was: axis 5 taken modulo the rank (JAX raises)
    with pytest.raises(ValueError, match="spatial dimension 5 is out of bounds"):
        qb.image.scale_and_translate(img, (8, 8), (0, 5), s, t, "linear")
    with pytest.raises(ValueError, match="spatial_dims must be distinct"):
        qb.image.scale_and_translate(img, (8, 8), (0, 0), s, t, "linear")
    with pytest.raises(ValueError, match="scale must be a scalar or hold one entry per spatial dimension"):
        qb.image.scale_and_translate(img, (8, 8), (0, 1), jnp.array([2.0, 2.0, 2.0]), t, "linear")


# ---- qb.scipy.signal and ndimage ---------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda s: s.convolve(jnp.ones(4), jnp.ones(0)),
    lambda s: s.correlate(jnp.ones(0), jnp.ones(3)),
    lambda s: s.convolve2d(jnp.ones((4, 4)), jnp.ones((0, 3))),
])
def test_signal_convolutions_of_empty_inputs_say_so(call):
    # was: "stack: needs at least one array"
    with pytest.raises(ValueError, match="correlate: inputs cannot be empty"):
        call(qb.scipy.signal)


def test_detrend_of_an_empty_axis_says_so():
    # was: "concat: needs at least one array"
    with pytest.raises(ValueError, match="detrend: data is empty along axis -1"):
        qb.scipy.signal.detrend(jnp.ones(0))


def test_map_coordinates_of_a_0d_input_says_so():
    # was: nanobind's "reshape(): incompatible function arguments"
    with pytest.raises(ValueError, match="map_coordinates: input must have at least one dimension"):
        qb.scipy.ndimage.map_coordinates(jnp.array(1.0), [], order=1)


# ---- numpy-style functions ---------------------------------------------------------------------

def test_einsum_refuses_a_repeated_subscript_over_unequal_axes():
    # was: einsum("ii", ones((2, 3))) returned 2.0 (NumPy and JAX raise)
    with pytest.raises(ValueError, match="subscript 'i' repeats in one operand over axes of sizes 2 and 3"):
        jnp.einsum("ii", jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="subscript 'j' repeats"):
        jnp.einsum("ij,jj->i", jnp.ones((2, 3)), jnp.ones((3, 4)))
    np.testing.assert_array_equal(jnp.einsum("ii->i", jnp.eye(3)), [1.0, 1.0, 1.0])


def test_repeat_refuses_negative_repeats():
    # was: [1, -1, 2] repeats gave three elements (NumPy raises)
    with pytest.raises(ValueError, match=r"repeat: repeats must be non-negative, got \[1, -1, 2\]"):
        jnp.repeat(jnp.ones(3), jnp.array([1, -1, 2]))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative, got -1"):
        jnp.repeat(jnp.ones(3), -1)


def test_repeat_zero_times_gives_an_empty_array():
    # was: ValueError "zero-extent arrays are not supported" (NumPy and JAX give an empty array)
    assert jnp.repeat(jnp.ones(3), 0).shape == (0,)
    assert jnp.repeat(jnp.ones((2, 3)), 0, axis=1).shape == (2, 0)
    assert jnp.repeat(jnp.arange(3), jnp.array([0, 0, 0])).shape == (0,)
    np.testing.assert_array_equal(jnp.repeat(jnp.arange(3), jnp.array([0, 2, 1])), [1, 1, 2])


def test_repeat_refuses_a_float_count_by_name():
    # was: TypeError "'float' object is not iterable"
    with pytest.raises(TypeError, match="repeat: repeats must be an int or a sequence of ints, got float"):
        jnp.repeat(jnp.ones(3), 2.5)


def test_repeat_with_traced_repeats_asks_for_total_repeat_length():
    with pytest.raises(ValueError, match="total_repeat_length"):
        qb.jit(lambda r: jnp.repeat(jnp.ones(3), r))(jnp.array([1, 2, 3]))


def test_histogram_of_data_spanning_one_half():
    # was: data with max - min == 0.5 got the edges [-0.5, 0, 0.5] (the test for an empty range
    # ran after the upper end had moved)
    counts, edges = jnp.histogram(jnp.array([0.0, 0.5]), bins=2)
    np.testing.assert_array_equal(edges, [0.0, 0.25, 0.5])
    np.testing.assert_array_equal(counts, [1.0, 1.0])
    counts, edges = jnp.histogram(jnp.array([1.0, 1.0]), bins=2)
    np.testing.assert_array_equal(edges, [0.5, 1.0, 1.5])


def test_histogram_checks_range_and_edges():
    # was: silently wrong counts (NumPy raises)
    with pytest.raises(ValueError, match="min <= max"):
        jnp.histogram(jnp.ones(3), bins=3, range=(2, 1))
    with pytest.raises(ValueError, match="range must be finite"):
        jnp.histogram(jnp.ones(3), bins=3, range=(0, np.inf))
    with pytest.raises(ValueError, match="bins must increase monotonically"):
        jnp.histogram(jnp.ones(3), bins=jnp.array([3.0, 1.0, 2.0]))


def test_max_and_min_of_empty_arrays_with_initial():
    # was: ValueError "zero-size array to reduction operation" (NumPy and JAX return initial)
    assert float(jnp.max(jnp.ones((0,)), initial=3.0)) == 3.0
    np.testing.assert_array_equal(jnp.min(jnp.ones((0, 3)), axis=0, initial=1.0), [1.0, 1.0, 1.0])
    assert jnp.max(jnp.ones((0, 3)), axis=1, initial=1.0).shape == (0,)
    assert int(jnp.amin(jnp.ones((0,), dtype=qb.int32), initial=7)) == 7
    assert float(qb.jit(lambda x: jnp.max(x, initial=-1.0))(jnp.ones((0, 2)))) == -1.0


@pytest.mark.parametrize("fn", [jnp.nonzero, jnp.argwhere, jnp.flatnonzero, jnp.unique])
def test_negative_size_is_named(fn):
    # was: "full: every dimension must be positive"
    with pytest.raises(ValueError, match="size must be non-negative, got -1"):
        fn(jnp.ones(3), size=-1)


def test_interp_with_no_sample_points_says_so():
    # was: IndexError "index 0 is out of bounds"
    with pytest.raises(ValueError, match="interp: xp and fp are empty"):
        jnp.interp(1.0, jnp.ones(0), jnp.ones(0))


@pytest.mark.parametrize("mode", ["reflect", "edge", "maximum", "wrap"])
def test_pad_of_an_empty_axis_says_so(mode):
    # was: "pads at most -1 elements" (reflect), a broadcast_to error (edge)
    with pytest.raises(ValueError, match="only mode 'constant' can pad an empty axis"):
        jnp.pad(jnp.ones(0), 2, mode=mode)
    assert jnp.pad(jnp.ones(0), 2).shape == (4,)


def test_full_refuses_none():
    # was: nanobind's "full(): incompatible function arguments"
    with pytest.raises(TypeError, match="full: fill_value must be a number"):
        jnp.full((2,), None)


@pytest.mark.parametrize("value", [np.datetime64("2020-01-01"), np.timedelta64(5, "s"), b"abc", np.bytes_(b"xy")])
def test_array_refuses_dates_and_bytes(value):
    # was: their raw bytes as uint8 data (JAX raises TypeError)
    with pytest.raises(TypeError, match="only numbers and bools are array data"):
        jnp.array(value)
    with pytest.raises(TypeError, match="only numbers and bools are array data"):
        jnp.asarray(value)
    # byte buffers stay uint8 data, as in NumPy and JAX
    np.testing.assert_array_equal(jnp.array(bytearray(b"ab")), [97, 98])
    np.testing.assert_array_equal(jnp.asarray(memoryview(b"ab")), [97, 98])


# ---- transformations ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [qb.int8, qb.int16, qb.uint8, qb.uint16, qb.uint32])
def test_grad_of_narrow_integer_inputs_names_the_dtype(dtype):
    # was: ShapeError "must return a rank-0 float array ... got int64[]"
    with pytest.raises(TypeError, match=f"requires float inputs, but argument leaf 0 is {dtype.name}"):
        qb.grad(lambda x: x.sum())(jnp.ones(3, dtype=dtype))


def test_jit_checks_static_argnums_and_argnames_types():
    f = lambda x, n: x * n  # noqa: E731
    # was: TypeError "'<=' not supported between instances of 'int' and 'str'"
    with pytest.raises(TypeError, match="static_argnums must be an int or a sequence of ints"):
        qb.jit(f, static_argnums="a")
    # was: TypeError "'int' object is not iterable"
    with pytest.raises(TypeError, match="static_argnames must be a str or a sequence of str"):
        qb.jit(f, static_argnames=5)
    assert qb.jit(f, static_argnums=np.int64(1))(jnp.ones(2), 3).tolist() == [3.0, 3.0]


def test_switch_refuses_a_float_or_array_index():
    branches = [lambda: 1.0, lambda: 2.0]
    # was: 1.5 truncated to branch 1 (jax.lax.switch raises TypeError)
    with pytest.raises(TypeError, match="switch: the branch index must be an integer, got float64"):
        qb.lax.switch(1.5, branches)
    with pytest.raises(TypeError, match=r"switch: the branch index must be a scalar, got shape \(2,\)"):
        qb.lax.switch(jnp.array([0, 1]), branches)
    assert float(qb.lax.switch(jnp.array(1, dtype=qb.uint8), branches)) == 2.0
    np.testing.assert_array_equal(qb.vmap(lambda i: qb.lax.switch(i, branches))(jnp.array([0, 1])), [1.0, 2.0])


def test_associative_scan_checks_its_axis():
    # was: axis=4 on a 1-d array taken modulo the rank
    with pytest.raises(ValueError, match="associative_scan: axis 4 is out of range"):
        qb.lax.associative_scan(lambda a, b: a + b, jnp.ones(3), axis=4)


# ---- qb.random, qb.linalg, qb.scipy.linalg, stax ----------------------------------------------

@pytest.mark.parametrize("shape", [(2.5,), 2.5, (2, 3.0)])
def test_random_shapes_refuse_floats(shape):
    # was: (2.5,) truncated to (2,) (JAX raises TypeError)
    with pytest.raises(TypeError, match="qb.random: shape must be an int or a sequence of ints"):
        qb.random.normal(qb.random.PRNGKey(0), shape)
    assert qb.random.normal(qb.random.PRNGKey(0), (np.int64(2), 3)).shape == (2, 3)


def test_norm_checks_its_axis():
    # was: axis=3 of a 1-d array taken modulo the rank (NumPy and JAX raise)
    with pytest.raises(ValueError, match="norm: axis 3 is out of range for an array of rank 1"):
        jnp.linalg.norm(jnp.ones(3), axis=3)
    with pytest.raises(ValueError, match="norm: axis names one axis twice"):
        jnp.linalg.norm(jnp.ones((2, 2)), axis=(0, -2))
    with pytest.raises(TypeError, match="norm: axis must be None, an int or a pair of ints"):
        jnp.linalg.norm(jnp.ones((2, 2)), axis=1.0)
    # was: TypeError "'numpy.int64' object is not iterable"
    np.testing.assert_allclose(jnp.linalg.norm(jnp.ones((2, 2)), axis=np.int64(1)), [2 ** 0.5] * 2)


def test_scipy_eigh_refuses_a_subset_it_would_ignore():
    # was: eigvals=(0, 1) returned all eigenpairs (jax.scipy raises NotImplementedError)
    with pytest.raises(NotImplementedError, match="only eigvals=None is supported"):
        qb.scipy.linalg.eigh(jnp.eye(3), eigvals=(0, 1))
    with pytest.raises(NotImplementedError, match="only subset_by_index=None is supported"):
        qb.scipy.linalg.eigh(jnp.eye(3), subset_by_index=(0, 1))


def test_stax_checks_feature_and_filter_sizes():
    from quabla.example_libraries import stax
    init, _ = stax.Dense(4)
    # was: ValueError "math domain error"
    with pytest.raises(ValueError, match="Dense: the feature dimension .* must be a positive integer"):
        init(qb.random.PRNGKey(0), (2, -3))
    assert init(qb.random.PRNGKey(0), (-1, 3))[0] == (-1, 4)  # -1: a batch size decided later
    # was: ZeroDivisionError "float division by zero"
    with pytest.raises(ValueError, match="filter_shape entries must be positive integers"):
        init, _ = stax.Conv(4, (0, 3))
        init(qb.random.PRNGKey(0), (1, 5, 5, 1))


# ---------------------------------------------------------------------------------------
# Fixed in the C++ core (found by the same fuzzing)

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_unsigned_floor_division_by_zero_is_all_ones_as_jax(dtype):
    # JAX's floor_divide on unsigned integers is lax.div: x // 0 has every bit set
    x = qb.asarray(np.array([7, 0, 5], dtype))
    z = qb.asarray(np.array([0, 0, 2], dtype))
    want = np.array([np.iinfo(dtype).max, np.iinfo(dtype).max, 2], dtype)
    np.testing.assert_array_equal(np.asarray(x // z), want)
    np.testing.assert_array_equal(np.asarray(qb.jit(lambda a, b: a // b)(x, z)), want)
    np.testing.assert_array_equal(np.asarray(qb.lax.div(x, z)), want)


def test_integer_arange_wraps_into_a_narrow_dtype():
    np.testing.assert_array_equal(np.asarray(qb.arange(250, 260, dtype=qb.uint8)),
                                  np.arange(250, 260).astype(np.uint8))
    np.testing.assert_array_equal(np.asarray(qb.arange(120, 130, dtype=qb.int8)), np.arange(120, 130).astype(np.int8))
    np.testing.assert_array_equal(np.asarray(qb.arange(0, 10, 3, dtype=qb.uint16)), [0, 3, 6, 9])


@pytest.mark.parametrize("value", [b"ab", np.bytes_(b"ab"), np.datetime64("2020-01-01"), np.timedelta64(3, "s"),
                                   np.str_("ab")])
def test_bytes_dates_and_strings_are_not_numbers_in_operations(value):
    with pytest.raises(TypeError, match="not numbers"):
        qb.ones(3) + value
    with pytest.raises(TypeError, match="not numbers"):
        qb.sin(value)


@pytest.mark.parametrize("expr", ["x + None", "None - x", "x * None", "x / None", "x ** None", "x @ None", "x & None",
                                  "x // None", "x % None", "None << x"])
def test_arithmetic_with_none_is_pythons_unsupported_operand_error(expr):
    x = qb.ones(3)
    with pytest.raises(TypeError, match="unsupported operand type"):
        eval(expr)
    assert (x == None) is False  # noqa: E711 (a comparison stays Python's identity fallback, as JAX's)


def test_none_shapes_and_fill_values_say_what_was_wrong():
    with pytest.raises(TypeError, match="zeros: shape must be an int or a tuple of ints, got None"):
        qb.zeros(None)
    with pytest.raises(TypeError, match="ones: shape"):
        qb.ones(None)
    with pytest.raises(TypeError, match="fill_value"):
        qb.full((2,), None)
    with pytest.raises(TypeError, match="NoneType"):
        qb.full_like(qb.ones(2), None)
