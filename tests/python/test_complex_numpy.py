"""Complex input to the Python layer's NumPy / jax.numpy-style functions: each either gives
NumPy's (or, where they differ, jax.numpy's) result, complex dtype included, or raises a
TypeError that names the function and says complex input is not supported yet. Never an
imaginary part dropped silently: run with ``-W error`` so a ComplexWarning from internal code
(``x.astype(real_dtype)`` of a complex array) fails the test."""
import math
import warnings

import numpy as np
import pytest

import quabla as qb
from quabla import _numpy_names

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

RTOL = 1e-12


@pytest.fixture(autouse=True)
def _complex_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        yield


def crand(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def close(got, want, rtol=RTOL, atol=1e-13):
    """got (a Quabla array or a tuple of them) against want: shape, dtype kind and values."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, rtol, atol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype.kind == w.dtype.kind, (g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


Z = crand(6)
Z2 = crand(6, seed=1)
M = crand(4, 4, seed=2)
M2 = crand(4, 4, seed=3)


# ---- functions that now give NumPy's / jax.numpy's complex results ----------------------------

def test_vdot_conjugates_the_first_argument():
    close(qb.vdot(qb.asarray(Z), qb.asarray(Z2)), np.vdot(Z, Z2))
    close(qb.vdot(qb.asarray(M), qb.asarray(M2)), np.vdot(M, M2))
    close(qb.vdot(qb.asarray(Z.real), qb.asarray(Z2)), np.vdot(Z.real, Z2))


def test_vecdot_and_vecmat_conjugate_x1():
    close(qb.vecdot(qb.asarray(M), qb.asarray(M2)), jnp.vecdot(M, M2))
    close(qb.linalg.vecdot(qb.asarray(M), qb.asarray(M2[0])), jnp.linalg.vecdot(M, M2[0]))
    close(qb.vecmat(qb.asarray(M[0]), qb.asarray(M2)), jnp.vecmat(M[0], M2))
    close(qb.matvec(qb.asarray(M), qb.asarray(M2[0])), jnp.matvec(M, M2[0]))  # (no conjugate there)


@pytest.mark.parametrize("ord_", [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5])
def test_vector_norms_use_the_modulus(ord_):
    close(qb.linalg.norm(qb.asarray(Z), ord_), np.linalg.norm(Z, ord_))
    close(qb.linalg.vector_norm(qb.asarray(M), ord=2 if ord_ is None else ord_),
          jnp.linalg.vector_norm(M, ord=2 if ord_ is None else ord_))


@pytest.mark.parametrize("ord_", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norms_use_the_modulus(ord_):
    close(qb.linalg.norm(qb.asarray(M), ord_), np.linalg.norm(M, ord_))
    close(qb.linalg.norm(qb.asarray(M), ord_, axis=(0, 1), keepdims=True), np.linalg.norm(M, ord_, (0, 1), True))


def test_qb_norm_and_matrix_norm():
    close(qb.norm(qb.asarray(M)), np.linalg.norm(M))
    close(qb.norm(qb.asarray(M), axis=1), np.linalg.norm(M, axis=1))
    close(qb.linalg.matrix_norm(qb.asarray(M)), jnp.linalg.matrix_norm(M))


@pytest.mark.parametrize("ord_", [2, -2, "nuc"])
def test_matrix_norms_of_singular_values_are_numpys(ord_):
    close(qb.linalg.norm(qb.asarray(M), ord_), np.linalg.norm(M, ord_))


def test_average():
    a = qb.asarray(M)
    close(qb.average(a), np.average(M))
    close(qb.average(a, axis=1), np.average(M, axis=1))
    w = np.arange(1.0, 5.0)
    close(qb.average(a, axis=0, weights=qb.asarray(w)), np.average(M, axis=0, weights=w))
    close(qb.average(a, axis=0, weights=qb.asarray(w), returned=True), np.average(M, axis=0, weights=w, returned=True))
    close(qb.average(qb.asarray(M.real), axis=0, weights=qb.asarray(Z2[:4])), np.average(M.real, 0, weights=Z2[:4]))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate(mode):
    a, v = Z, Z2[:4]
    close(qb.convolve(qb.asarray(a), qb.asarray(v), mode), np.convolve(a, v, mode))
    close(qb.correlate(qb.asarray(a), qb.asarray(v), mode), np.correlate(a, v, mode))
    close(qb.correlate(qb.asarray(v), qb.asarray(a), mode), np.correlate(v, a, mode))
    close(qb.correlate(qb.asarray(a.real), qb.asarray(v), mode), np.correlate(a.real, v, mode))


def test_sinc():
    z = np.concatenate([Z, [0j]])
    close(qb.sinc(qb.asarray(z)), np.sinc(z))


@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round_rounds_each_part(decimals):
    z = Z * 37.3
    close(qb.round(qb.asarray(z), decimals), np.round(z, decimals))
    close(qb.around(qb.asarray(z), decimals), np.around(z, decimals))
    close(qb.asarray(z).round(decimals), np.round(z, decimals))


def test_rint_rounds_each_part():
    z = Z * 5.5
    close(qb.rint(qb.asarray(z)), np.rint(z))


def test_full_and_full_like_with_complex_fill_values():
    close(_numpy_names.full((2, 3), 1 + 2j), np.full((2, 3), 1 + 2j))
    close(_numpy_names.full((2,), 1j, dtype=qb.complex64), np.full((2,), 1j, dtype=np.complex64))
    assert _numpy_names.full((2,), 1j, dtype=qb.complex64).dtype == qb.complex64
    close(qb.full_like(qb.asarray(Z), 2 - 1j), np.full_like(Z, 2 - 1j))
    close(qb.full_like(qb.zeros((3,)), 1j, dtype=qb.complex128), np.full_like(np.zeros(3), 1j, dtype=complex))
    close(qb.full_like(qb.asarray(Z), 3j, shape=(2, 2)), np.full((2, 2), 3j))
    close(qb.full_like(qb.asarray(Z), 1.5), np.full_like(Z, 1.5))


def test_complex_fill_value_into_a_real_dtype_raises():
    with pytest.raises(TypeError, match="full_like: the fill value 1j is complex but the dtype is float64"):
        qb.full_like(qb.zeros((3,)), 1j)
    with pytest.raises(TypeError, match="full: the fill value .* is complex"):
        _numpy_names.full((3,), 1 + 1j, dtype=qb.float64)


def test_linspace_logspace_geomspace():
    close(qb.linspace(1 + 1j, 2 - 3j, 7), np.linspace(1 + 1j, 2 - 3j, 7))
    close(qb.linspace(0, 2j, 4, endpoint=False), np.linspace(0, 2j, 4, endpoint=False))
    close(qb.linspace(1j, 3.0, 5, retstep=True), np.linspace(1j, 3.0, 5, retstep=True))
    close(qb.linspace(qb.asarray(Z), qb.asarray(Z2), 3, axis=1), np.linspace(Z, Z2, 3, axis=1))
    close(qb.logspace(1j, 2, 5), np.logspace(1j, 2, 5))
    close(qb.logspace(0, 1, 4, base=2j), np.logspace(0, 1, 4, base=2j))
    for start, stop in [(1 + 1j, 2 - 3j), (1j, 1000j), (-1 + 0j, 1 + 0j), (1 + 0j, -1 + 0j), (-2 + 0.5j, -1 - 1j)]:
        close(qb.geomspace(start, stop, 5), np.geomspace(start, stop, 5), atol=1e-12)
    close(qb.geomspace(qb.asarray(Z), qb.asarray(Z2), 4), np.geomspace(Z, Z2, 4), atol=1e-12)
    with pytest.raises(TypeError, match="linspace: complex start or stop with dtype=float64"):
        qb.linspace(0, 1j, 3, dtype=qb.float64)


def test_float_power_is_complex_for_complex_input():
    close(qb.float_power(qb.asarray(Z), 2), np.float_power(Z, 2))
    close(qb.float_power(qb.asarray(Z), qb.asarray(Z2)), np.float_power(Z, Z2), rtol=1e-11)
    close(qb.float_power(2.0, qb.asarray(Z)), np.float_power(2.0, Z))
    assert qb.float_power(qb.asarray(Z.astype(np.complex64)), 2).dtype == qb.complex128  # as NumPy


def test_nan_to_num_applies_to_both_parts():
    z = np.array([complex(np.nan, np.inf), complex(-np.inf, 2), 1 + 1j, complex(3, -np.inf)])
    close(_numpy_names.nan_to_num(qb.asarray(z)), np.nan_to_num(z))
    close(_numpy_names.nan_to_num(qb.asarray(z), nan=1.0, posinf=5.0, neginf=-5.0),
          np.nan_to_num(z, nan=1.0, posinf=5.0, neginf=-5.0))
    close(_numpy_names.nan_to_num(qb.asarray(z.real)), np.nan_to_num(z.real))
    with pytest.raises(TypeError, match="nan_to_num: nan must be a real number"):
        _numpy_names.nan_to_num(qb.asarray(z), nan=1j)


def test_interp_with_complex_fp():
    x, xp = np.linspace(-1, 4, 11), np.arange(4.0)
    fp = Z[:4]
    close(qb.interp(qb.asarray(x), qb.asarray(xp), qb.asarray(fp)), np.interp(x, xp, fp))
    close(qb.interp(qb.asarray(x), qb.asarray(xp), qb.asarray(fp), left=1j, right=-2.0),
          np.interp(x, xp, fp, left=1j, right=-2.0))
    xq = np.array([0.0, 0.7, 1.5, 2.2])
    close(qb.interp(qb.asarray(x), qb.asarray(xq), qb.asarray(fp), period=3.0), np.interp(x, xq, fp, period=3.0))
    with pytest.raises(TypeError, match="interp: complex input .*not supported yet"):
        qb.interp(qb.asarray(Z), qb.asarray(xp), qb.asarray(fp))


def test_polynomials():
    p = Z[:4]
    close(qb.polyval(qb.asarray(p), qb.asarray(Z2)), np.polyval(p, Z2))
    close(qb.polyval(qb.asarray(p.real), qb.asarray(Z2)), np.polyval(p.real, Z2))
    close(qb.poly(qb.asarray(Z[:3])), jnp.poly(Z[:3]))
    close(qb.polyadd(qb.asarray(p), qb.asarray(Z2[:2])), np.polyadd(p, Z2[:2]))
    close(qb.polysub(qb.asarray(p), qb.asarray(Z2[:2])), np.polysub(p, Z2[:2]))
    close(qb.polymul(qb.asarray(p), qb.asarray(Z2[:3])), np.polymul(p, Z2[:3]))
    close(qb.polyder(qb.asarray(p), 2), np.polyder(p, 2))
    close(qb.polyint(qb.asarray(p), 2, k=1j), np.polyint(p, 2, k=1j))
    close(qb.polydiv(qb.asarray(Z), qb.asarray(Z2[:3])), jnp.polydiv(Z, Z2[:3]), rtol=1e-10)
    close(qb.vander(qb.asarray(Z[:3]), 4), np.vander(Z[:3], 4))
    with pytest.raises(TypeError, match="polyfit: complex input .*not supported yet"):
        qb.polyfit(qb.asarray(Z.real), qb.asarray(Z2), 2)


def test_products_and_shapes():
    a, b = qb.asarray(M), qb.asarray(M2)
    close(qb.cumprod(qb.asarray(Z)), np.cumprod(Z))
    close(qb.cumprod(a, axis=1), np.cumprod(M, axis=1))
    close(qb.cumulative_prod(qb.asarray(Z), include_initial=True), jnp.cumulative_prod(Z, include_initial=True))
    close(qb.nancumprod(qb.asarray(Z)), np.nancumprod(Z))
    close(qb.kron(a, b), np.kron(M, M2))
    close(qb.outer(qb.asarray(Z), qb.asarray(Z2)), np.outer(Z, Z2))
    close(qb.inner(a, b), np.inner(M, M2))
    close(qb.tensordot(a, b, 1), np.tensordot(M, M2, 1))
    close(qb.trace(a), np.trace(M))
    close(qb.diagonal(a, 1), np.diagonal(M, 1))
    close(qb.diag(qb.asarray(Z), -1), np.diag(Z, -1))
    close(qb.diagflat(qb.asarray(Z[:3])), np.diagflat(Z[:3]))
    close(qb.einsum("ij,jk->ik", a, b), np.einsum("ij,jk->ik", M, M2))
    close(qb.cross(qb.asarray(Z[:3]), qb.asarray(Z2[:3])), np.cross(Z[:3], Z2[:3]))
    close(qb.diff(qb.asarray(Z), 2), np.diff(Z, 2))
    close(qb.gradient(qb.asarray(Z), 0.5), np.gradient(Z, 0.5))
    close(qb.trapezoid(qb.asarray(Z)), np.trapezoid(Z))
    close(qb.linalg.multi_dot([a, b, a]), np.linalg.multi_dot([M, M2, M]))
    close(qb.linalg.matrix_power(a, 3), np.linalg.matrix_power(M, 3))


def test_pad_modes():
    z = qb.asarray(Z)
    close(qb.pad(z, 2, constant_values=1j), np.pad(Z, 2, constant_values=1j))
    close(qb.pad(z, (1, 2)), np.pad(Z, (1, 2)))
    close(qb.pad(z, 1, constant_values=2.5), np.pad(Z, 1, constant_values=2.5))
    close(qb.pad(qb.asarray(M), ((1, 0), (0, 2)), constant_values=(1j, 2.0)),
          np.pad(M, ((1, 0), (0, 2)), constant_values=(1j, 2.0)))
    close(qb.pad(z, (1, 2), mode="linear_ramp", end_values=1j), np.pad(Z, (1, 2), mode="linear_ramp", end_values=1j))
    for mode in ("edge", "reflect", "symmetric", "wrap", "mean"):
        close(qb.pad(z, 2, mode=mode), np.pad(Z, 2, mode=mode))
    with pytest.raises(TypeError, match="pad: constant_values 1j is complex but the array is float64"):
        qb.pad(qb.zeros((3,)), 1, constant_values=1j)
    with pytest.raises(TypeError, match="pad: the fill value 1j is complex but the dtype is float64"):
        qb.pad(qb.zeros((3,)), 1, constant_values=(1j, 0.0))
    with pytest.raises(TypeError, match=r"pad\(mode='maximum'\): complex input"):
        qb.pad(z, 1, mode="maximum")


def test_closeness_and_equality():
    a = qb.asarray(Z)
    b = qb.asarray(Z + 1e-9j)
    zn = np.array([complex(np.nan, 1), 1 + 1j, complex(np.inf, 0)])
    close(qb.isclose(a, b), np.isclose(Z, Z + 1e-9j))
    close(qb.isclose(a, b, rtol=0, atol=1e-12), np.isclose(Z, Z + 1e-9j, rtol=0, atol=1e-12))
    close(qb.isclose(qb.asarray(zn), qb.asarray(zn), equal_nan=True), np.isclose(zn, zn, equal_nan=True))
    close(qb.isclose(qb.asarray(zn), qb.asarray(zn)), np.isclose(zn, zn))
    assert bool(qb.allclose(a, b)) and not bool(qb.allclose(a, qb.asarray(Z + 1e-3j)))
    assert bool(qb.array_equal(a, qb.asarray(Z))) and not bool(qb.array_equal(a, b))
    assert bool(qb.array_equal(qb.asarray(zn), qb.asarray(zn), equal_nan=True))
    assert not bool(qb.array_equal(qb.asarray(zn), qb.asarray(zn)))
    close(qb.isin(a, qb.asarray(Z[::2])), np.isin(Z, Z[::2]))


def test_cov_and_corrcoef_conjugate():
    close(qb.cov(qb.asarray(M)), np.cov(M))
    close(qb.cov(qb.asarray(M), rowvar=False, bias=True), np.cov(M, rowvar=False, bias=True))
    close(qb.cov(qb.asarray(Z), qb.asarray(Z2)), np.cov(Z, Z2))
    close(qb.cov(qb.asarray(Z)), np.cov(Z))
    fw, aw = np.array([1, 2, 1, 3]), np.array([0.5, 1.0, 2.0, 1.5])
    close(qb.cov(qb.asarray(M), fweights=qb.asarray(fw), aweights=qb.asarray(aw)), np.cov(M, fweights=fw, aweights=aw))
    close(qb.corrcoef(qb.asarray(M)), np.corrcoef(M))
    close(qb.corrcoef(qb.asarray(Z), qb.asarray(Z2)), np.corrcoef(Z, Z2))
    with pytest.raises(TypeError, match="cov: complex input .*the weights must be real"):
        qb.cov(qb.asarray(M), aweights=qb.asarray(Z[:4]))


def test_nan_aware_reductions():
    z = Z.copy()
    z[1] = complex(np.nan, 1.0)
    z[4] = complex(2.0, np.nan)
    a = qb.asarray(z)
    close(qb.nansum(a), np.nansum(z))
    close(qb.nanprod(a), np.nanprod(z))
    close(qb.nanmean(a), np.nanmean(z))
    close(qb.nanvar(a), np.nanvar(z))
    close(qb.nanstd(a, ddof=1), np.nanstd(z, ddof=1))
    close(qb.nancumsum(a), np.nancumsum(z))
    zm = M.copy()
    zm[0, 1] = complex(np.nan, 0)
    close(qb.nanmean(qb.asarray(zm), axis=0), np.nanmean(zm, axis=0))
    close(qb.nanvar(qb.asarray(zm), axis=1, keepdims=True), np.nanvar(zm, axis=1, keepdims=True))


def test_reductions_with_where():
    a = qb.asarray(M)
    w = np.array([[True, False, True, True]] * 4)
    close(qb.mean(a, axis=1, where=qb.asarray(w)), np.mean(M, axis=1, where=w))
    close(qb.var(a, axis=1, where=qb.asarray(w)), np.var(M, axis=1, where=w))
    close(qb.std(a, where=qb.asarray(w)), np.std(M, where=w))
    close(qb.sum(a, where=qb.asarray(w), initial=1j), np.sum(M, where=w, initial=1j))


def test_elementwise_helpers():
    a = qb.asarray(Z)
    close(qb.deg2rad(a), jnp.deg2rad(Z))  # (NumPy's ufuncs refuse complex input here; jax.numpy's)
    close(qb.rad2deg(a), jnp.rad2deg(Z))
    close(qb.positive(a), np.positive(Z))
    close(qb.angle(a, deg=True), np.angle(Z, deg=True))
    close(qb.real(a), Z.real)
    close(qb.imag(a), Z.imag)
    close(qb.conj(a), np.conj(Z))
    close(qb.count_nonzero(qb.asarray(np.array([0j, 1j, 0, 2]))), np.count_nonzero(np.array([0j, 1j, 0, 2])))
    close(qb.lax.reciprocal(a), 1 / Z)


def test_sort_and_argsort_in_jax_order():
    rng = np.random.default_rng(5)
    z = (rng.integers(0, 3, (4, 7)) + 1j * rng.integers(0, 3, (4, 7))).astype(complex)
    z[0, 1], z[1, 2], z[2, 3] = complex(np.nan, 1), complex(1, np.nan), complex(np.nan, np.nan)
    a = qb.asarray(z)
    for axis in (0, -1, None):
        for descending in (False, True):
            close(qb.argsort(a, axis=axis, descending=descending), jnp.argsort(z, axis=axis, descending=descending))
            close(qb.sort(a, axis=axis, descending=descending), jnp.sort(z, axis=axis, descending=descending))
    close(qb.sort(qb.asarray(Z)), np.sort(Z))  # (without NaNs NumPy's order is the same)
    close(qb.lexsort([qb.asarray(z[0]), qb.asarray(z[1])]), jnp.lexsort([z[0], z[1]]))


def test_bincount_with_complex_weights():
    x = np.array([0, 2, 2, 5, 0, 1])
    close(qb.bincount(qb.asarray(x), weights=qb.asarray(Z)), jnp.bincount(x, weights=Z))  # (NumPy refuses them)
    with pytest.raises(TypeError, match="bincount: x must hold integers, got complex128"):
        qb.bincount(qb.asarray(Z))


def test_sets_and_unique_eagerly():
    z = np.array([1 + 1j, 2j, 1 + 1j, -1, 2j, 3])
    a = qb.asarray(z)
    close(qb.unique(a), np.unique(z))
    close(qb.unique(a, return_counts=True, return_inverse=True), np.unique(z, return_counts=True, return_inverse=True))
    close(qb.union1d(a, qb.asarray(Z[:2])), np.union1d(z, Z[:2]))
    close(qb.intersect1d(a, qb.asarray(z[:2])), np.intersect1d(z, z[:2]))
    close(qb.setdiff1d(a, qb.asarray(z[:2])), np.setdiff1d(z, z[:2]))
    close(qb.unique_values(a), jnp.unique_values(z))


def test_indexing_and_updates():
    a = qb.asarray(Z)
    close(a.at[1].set(2j), np.where(np.arange(6) == 1, 2j, Z))
    close(a.at[qb.asarray([0, 0, 2])].add(1j), Z + np.array([2j, 0, 1j, 0, 0, 0]))
    close(qb.take(a, qb.asarray([0, 9])), jnp.take(Z, jnp.asarray([0, 9])))  # fill: NaN in both parts
    close(qb.take(a, qb.asarray([0, 9]), fill_value=1j), jnp.take(Z, jnp.asarray([0, 9]), fill_value=1j))
    close(qb.insert(a, 1, 5j), np.insert(Z, 1, 5j))
    close(qb.put(a, qb.asarray([0, 2]), qb.asarray([1j, 2j]), inplace=False), jnp.put(Z, jnp.asarray([0, 2]),
                                                                                        jnp.asarray([1j, 2j]),
                                                                                        inplace=False))
    close(qb.fill_diagonal(qb.asarray(M), 7j, inplace=False), jnp.fill_diagonal(M, 7j, inplace=False))
    close(qb.ediff1d(a, to_begin=1j), np.ediff1d(Z, to_begin=1j))
    close(qb.select([a.real > 0], [a], 1j), np.select([Z.real > 0], [Z], 1j))
    close(qb.trim_zeros(qb.asarray(np.array([0j, 1j, 2, 0]))), np.trim_zeros(np.array([0j, 1j, 2, 0])))


@pytest.mark.parametrize("update", [
    lambda x: x.at[0].set(1j),
    lambda x: x.at[0].add(qb.asarray([1j])),
    lambda x: qb.put(x, qb.asarray([0]), qb.asarray([1j]), inplace=False),
    lambda x: qb.place(x, x > 0, qb.asarray([1j]), inplace=False),
    lambda x: qb.insert(x, 0, 1j),
    lambda x: qb.fill_diagonal(x.reshape((2, 3)), 1j, inplace=False),
    lambda x: qb.ediff1d(x, to_end=qb.asarray([1j])),
    lambda x: qb.take(x, qb.asarray([9]), fill_value=1j),
])
def test_complex_values_into_a_real_array_raise(update):
    with pytest.raises(TypeError, match="cannot store complex|would lose its imaginary part"):
        update(qb.arange(6.0))


def test_complex_scatters_without_a_complex_form_raise():
    with pytest.raises(TypeError, match=r"x.at\[...\].multiply: complex input"):
        qb.asarray(Z).at[0].multiply(2j)
    with pytest.raises(TypeError, match=r"x.at\[...\].max: complex input"):
        qb.asarray(Z).at[0].max(2j)


def test_scipy_linalg_constructions_keep_complex():
    sl = pytest.importorskip("scipy.linalg")
    c, r = Z[:3], Z2[:4]
    close(qb.scipy.linalg.toeplitz(qb.asarray(c), qb.asarray(r)), sl.toeplitz(c, r))
    close(qb.scipy.linalg.toeplitz(qb.asarray(c)), sl.toeplitz(c))  # Hermitian: r = conj(c)
    close(qb.scipy.linalg.block_diag(qb.asarray(M[:2, :2]), qb.asarray([1.0, 2.0])),
          sl.block_diag(M[:2, :2], [1.0, 2.0]))
    close(qb.scipy.linalg.circulant(qb.asarray(c)), sl.circulant(c))
    close(qb.scipy.linalg.hankel(qb.asarray(c), qb.asarray(r)), sl.hankel(c, r))


def test_complex64_keeps_its_precision():
    z = Z.astype(np.complex64)
    a = qb.asarray(z)
    assert qb.average(a).dtype == qb.complex64
    assert qb.nanvar(a).dtype == qb.float32
    assert qb.round(a, 1).dtype == qb.complex64
    assert qb.linalg.norm(a).dtype == qb.float32
    assert qb.cov(a).dtype == qb.complex64
    assert qb.sort(a).dtype == qb.complex64
    assert qb.linspace(qb.asarray(z[0]), qb.asarray(z[1]), 3).dtype == qb.complex64
    np.testing.assert_allclose(np.asarray(qb.vdot(a, a)), np.vdot(z, z), rtol=1e-5)


def test_isdtype_knows_complex():
    assert qb.isdtype(qb.complex64, "complex floating") and qb.isdtype(qb.complex128, "numeric")
    assert not qb.isdtype(qb.complex128, "real floating") and not qb.isdtype(qb.float64, "complex floating")


# ---- functions that raise TypeError for complex input -----------------------------------------

_A = qb.asarray(Z)
_MA = qb.asarray(M)
_R = qb.asarray(Z.real)

UNSUPPORTED = {
    "median": lambda: qb.median(_A),
    "percentile": lambda: qb.percentile(_A, 50),
    "quantile": lambda: qb.quantile(_A, 0.5),
    "nanmedian": lambda: qb.nanmedian(_A),
    "nanpercentile": lambda: qb.nanpercentile(_A, 10),
    "nanquantile": lambda: qb.nanquantile(_A, 0.1),
    "nanmax": lambda: qb.nanmax(_A),
    "nanmin": lambda: qb.nanmin(_A),
    "nanargmax": lambda: qb.nanargmax(_A),
    "nanargmin": lambda: qb.nanargmin(_A),
    "argmax": lambda: qb.argmax(_A),
    "argmin": lambda: qb.argmin(_A, axis=0),
    "ptp": lambda: qb.ptp(_A),
    "searchsorted": lambda: qb.searchsorted(_R, _A),
    "digitize": lambda: qb.digitize(_A, _R),
    "partition": lambda: qb.partition(_A, 2),
    "argpartition": lambda: qb.argpartition(_A, 2),
    "top_k": lambda: qb.lax.top_k(_A, 2),
    "unique": lambda: qb.unique(_A, size=3),
    "union1d": lambda: qb.union1d(_A, _A, size=3),
    "fmax": lambda: qb.fmax(_A, _R),
    "fmin": lambda: qb.fmin(_R, _A),
    "trunc": lambda: qb.trunc(_A),
    "fabs": lambda: qb.fabs(_A),
    "signbit": lambda: qb.signbit(_A),
    "copysign": lambda: qb.copysign(_A, _R),
    "heaviside": lambda: qb.heaviside(_A, 0.5),
    "isneginf": lambda: qb.isneginf(_A),
    "isposinf": lambda: qb.isposinf(_A),
    "logaddexp2": lambda: qb.logaddexp2(_A, _A),
    "histogram": lambda: qb.histogram(_A),
    "histogram_bin_edges": lambda: qb.histogram_bin_edges(_A),
    "histogram2d": lambda: qb.histogram2d(_A, _R),
    "histogramdd": lambda: qb.histogramdd(_MA),
    "unwrap": lambda: qb.unwrap(_A),
    "modf": lambda: qb.modf(_A),
    "frexp": lambda: qb.frexp(_A),
    "ldexp": lambda: qb.ldexp(_A, qb.asarray([1] * 6)),
    "nextafter": lambda: qb.nextafter(_A, _R),
    "spacing": lambda: qb.spacing(_A),
    "divmod": lambda: qb.divmod(_A, _A),
    "polyfit": lambda: qb.polyfit(_R, _A, 1),
    "kaiser": lambda: qb.kaiser(4, 1j),
    "lax.igamma_grad_a": lambda: qb.lax.igamma_grad_a(_A, _R),
    "lax.random_gamma_grad": lambda: qb.lax.random_gamma_grad(_R, _A),
    "qb.scipy.signal.correlate": lambda: qb.scipy.signal.correlate(_A, _R),
    "qb.scipy.signal.convolve": lambda: qb.scipy.signal.convolve(_R, _A),
    "qb.scipy.linalg.companion": lambda: qb.scipy.linalg.companion(_A),
    "qb.scipy.linalg.schur": lambda: qb.scipy.linalg.schur(_MA),
    "qb.scipy.linalg.hessenberg": lambda: qb.scipy.linalg.hessenberg(_MA),
    "qb.scipy.linalg.eigh_tridiagonal": lambda: qb.scipy.linalg.eigh_tridiagonal(_A, _A[:5]),
    "qb.scipy.interpolate.RegularGridInterpolator": lambda: qb.scipy.interpolate.RegularGridInterpolator(
        (qb.arange(6.0),), _A),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_functions_raise_a_clear_type_error(name):
    with pytest.raises(TypeError, match=rf"^{name.replace('.', '[.]')}: complex input \(complex(128)?\) is not "
                                        rf"supported yet by this function; "):
        UNSUPPORTED[name]()


SPECIAL = ["gammaln", "digamma", "erfinv", "erfcinv", "ndtri", "i0", "i0e", "i1", "i1e", "exp1", "expi", "dawsn",
           "erfcx", "spence", "gammasgn", "loggamma", "log_ndtr", "factorial"]


@pytest.mark.parametrize("name", SPECIAL)
def test_special_functions_raise_for_complex(name):
    with pytest.raises(TypeError, match=rf"^{name}: complex input \(complex128\) is not supported yet"):
        getattr(qb.scipy.special, name)(_A)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erf_inv", "bessel_i0e", "bessel_i1e"])
def test_lax_special_functions_raise_for_complex(name):
    with pytest.raises(TypeError, match="complex input .* is not supported yet"):
        getattr(qb.lax, name)(_A)


@pytest.mark.parametrize("name", ["igamma", "igammac", "zeta", "gammainc", "betaln"])
def test_two_argument_special_functions_raise_for_complex(name):
    f = getattr(qb.lax, name, None) or getattr(qb.scipy.special, name)
    with pytest.raises(TypeError, match="complex input .* is not supported yet"):
        f(_R + 2.0, _A)


def test_stats_raise_for_complex():
    with pytest.raises(TypeError, match="^norm_logpdf: complex input .* is not supported yet"):
        qb.scipy.stats.norm.logpdf(_A)


def test_real_inputs_are_unchanged():
    # The same functions on real input still give NumPy's real results.
    x = Z.real
    close(qb.vdot(qb.asarray(x), qb.asarray(Z2.real)), np.vdot(x, Z2.real))
    close(qb.round(qb.asarray(x * 10), 1), np.round(x * 10, 1))
    close(qb.sinc(qb.asarray(x)), np.sinc(x))
    close(qb.cov(qb.asarray(M.real)), np.cov(M.real))
    close(qb.correlate(qb.asarray(x), qb.asarray(x[:3]), "full"), np.correlate(x, x[:3], "full"))
    close(qb.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5))
    close(qb.geomspace(1.0, 8.0, 4), np.geomspace(1.0, 8.0, 4))
    close(qb.float_power(qb.asarray(x), 2), np.float_power(x, 2))
    close(qb.linalg.norm(qb.asarray(M.real), 2), np.linalg.norm(M.real, 2))
    assert math.isclose(float(qb.average(qb.asarray(x))), float(np.average(x)), rel_tol=1e-12)
