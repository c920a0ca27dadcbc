"""Complex numbers (complex64, complex128): construction and conversion against NumPy,
promotion, elementwise values against NumPy in float64 (branch cuts and the edge values the
lowering guards: zeros, infinities, huge real parts), structural ops, and derivatives with
JAX's conventions (grad of a real function of z is df/dx - i df/dy; holomorphic=True), checked
against JAX itself and against finite differences; jit, vmap and loops over complex values;
errors by type and message."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import quabla as qb

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

Z = np.array([0.3 + 0.2j, -0.5 + 1.1j, 2.0 - 0.7j, -1.5 - 2.5j, 0.0 + 1.0j, 4.0 + 0.0j])


def close(actual, expected, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


# ---- construction and conversion ---------------------------------------------------------------

def test_lists_scalars_and_numpy_round_trip():
    z = qb.array([1 + 2j, 3.0, -1j])
    assert z.dtype == qb.complex128 and z.dtype.name == "complex128"
    assert z.tolist() == [1 + 2j, 3 + 0j, -1j]
    assert qb.array(2 - 3j).item() == 2 - 3j
    a = np.array([[1 + 2j, 3 - 4j]], dtype=np.complex64)
    q = qb.asarray(a)
    assert q.dtype == qb.complex64 and q.shape == (1, 2)
    np.testing.assert_array_equal(np.asarray(q), a)
    assert np.asarray(q).dtype == np.complex64
    assert np.asarray(qb.asarray(Z)).dtype == np.complex128
    np.testing.assert_array_equal(np.asarray(qb.asarray(Z)), Z)
    # a strided NumPy view, and NumPy complex scalars in a list
    np.testing.assert_array_equal(np.asarray(qb.asarray(Z[::2])), Z[::2])
    assert qb.array([np.complex64(1 + 1j), 2.0]).tolist() == [1 + 1j, 2 + 0j]


def test_float32_default_gives_complex64():
    with qb.set_default_dtype(qb.float32):
        assert qb.array([1j]).dtype == qb.complex64
        assert qb.asarray(Z).dtype == qb.complex64  # complex128 data, as float64 data becomes float32
        assert qb.asarray(Z, dtype=qb.complex128).dtype == qb.complex128
        assert (qb.ones(2) * 1j).dtype == qb.complex64


def test_dtype_objects_and_astype():
    assert qb.dtype("complex64") == qb.complex64 and qb.dtype(np.complex128) == qb.complex128
    assert qb.dtype(complex) == qb.complex128 and qb.complex64.itemsize == 8 and qb.complex128.itemsize == 16
    x = qb.array([1.5, -2.0])
    z = x.astype(qb.complex128)
    assert z.tolist() == [1.5 + 0j, -2 + 0j]
    w = qb.array([1.5 + 2j, -2.5 - 1j])
    with pytest.warns(np.exceptions.ComplexWarning, match="discards the imaginary part"):
        assert w.astype(qb.float64).tolist() == [1.5, -2.5]  # the real part, as NumPy's astype
    with pytest.warns(np.exceptions.ComplexWarning):
        assert w.astype(qb.int32).tolist() == [1, -2]
    with pytest.warns(np.exceptions.ComplexWarning):
        assert qb.array([0j, 1j, 0.5 + 0j]).astype(qb.bool_).tolist() == [False, True, True]
    assert w.astype(qb.complex64).dtype == qb.complex64
    assert qb.asarray(np.arange(3), dtype=qb.complex128).tolist() == [0j, 1 + 0j, 2 + 0j]


def test_dlpack_round_trip():
    z = qb.asarray(Z)
    np.testing.assert_array_equal(np.from_dlpack(z), Z)
    assert qb.from_dlpack(np.ascontiguousarray(Z)).dtype == qb.complex128


# ---- promotion ---------------------------------------------------------------------------------

def test_dtype_queries_answer_as_jax():
    pairs = [(qb.float32, qb.float64), (qb.complex64, qb.float64), (qb.complex64, qb.float32),
             (qb.float32, qb.complex128), (qb.int32, qb.complex64), (qb.complex64, qb.complex128)]
    for a, b in pairs:
        want = jnp.promote_types(jnp.dtype(a.name), jnp.dtype(b.name))
        assert qb.promote_types(a, b).name == want.name, (a, b)
    assert qb.result_type(qb.zeros(2, dtype=qb.float32), 1j) == qb.complex64
    assert qb.result_type(qb.zeros(2, dtype=qb.complex64), qb.zeros(2, dtype=qb.float32)) == qb.complex64
    with pytest.raises(ValueError, match="cannot mix"):  # as the arithmetic: no implicit float32/float64 mix
        qb.result_type(qb.zeros(2, dtype=qb.complex64), qb.zeros(2, dtype=qb.float64))


def test_promotion():
    c64 = qb.array([1j], dtype=qb.complex64)
    f32 = qb.array([2.0], dtype=qb.float32)
    f64 = qb.array([2.0], dtype=qb.float64)
    assert (c64 + f32).dtype == qb.complex64
    assert (qb.array([1j]) + f64).dtype == qb.complex128
    assert (c64 * 2.5).dtype == qb.complex64 and (f32 * 1j).dtype == qb.complex64
    assert (qb.array([1, 2], dtype=qb.int32) + c64).dtype == qb.complex64
    assert (qb.array([True]) + 1j).dtype == qb.complex128
    with pytest.raises(ValueError, match="cannot mix complex64"):
        c64 + f64
    with pytest.raises(ValueError, match="cannot mix"):
        c64 + qb.array([1j], dtype=qb.complex128)


# ---- elementwise values against NumPy ----------------------------------------------------------

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "expm1", "log1p", "exp2", "log2",
         "log10", "negative", "square", "reciprocal"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_against_numpy(name):
    z = np.concatenate([Z, [-2.0 + 0j, -2.0 - 0j, 1e-9 + 1e-9j, 0.5 - 3.0j]])
    close(getattr(qb, name)(qb.asarray(z)), getattr(np, name)(z), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "tanh", "log"])
def test_unary_jitted_in_complex64(name):
    z = Z.astype(np.complex64)
    out = qb.jit(getattr(qb, name))(qb.asarray(z))
    assert out.dtype == qb.complex64
    close(out, getattr(np, name)(z.astype(np.complex128)), rtol=2e-6, atol=2e-6)


def test_edge_values():
    # exp keeps a zero imaginary part at infinity; sqrt's branch cut follows the sign of -0.
    assert qb.exp(qb.array([complex(np.inf, 0.0)])).tolist() == [complex(np.inf, 0.0)]
    close(qb.sqrt(qb.array([-4 + 0j, 0j, -0.0 - 0j])), [2j, 0j, 0j])
    assert qb.sqrt(qb.asarray(np.array([complex(-4.0, -0.0)]))).tolist() == [-2j]
    close(qb.log(qb.asarray(np.array([complex(-1.0, 0.0), complex(-1.0, -0.0)]))), [np.pi * 1j, -np.pi * 1j])
    # tanh where cosh(2 re) overflows
    big = np.array([800.0 + 0.3j, -900.0 - 1.0j, 30.0 + 2.0j])
    close(qb.tanh(qb.asarray(big)), np.tanh(big), rtol=1e-13, atol=1e-300)
    # division by a divisor with huge parts (Smith's algorithm does not overflow)
    a, b = np.array([1e300 + 1e300j]), np.array([2e300 + 1e300j])
    close(qb.asarray(a) / qb.asarray(b), a / b)
    assert qb.abs(qb.array([3 + 4j])).tolist() == [5.0]
    close(qb.sign(qb.asarray(Z)), Z / np.abs(Z))
    assert qb.sign(qb.array([0j])).tolist() == [0j]


def test_binary_and_predicates():
    w = Z[::-1].copy()
    z, q = qb.asarray(Z), qb.asarray(w)
    close(z + q, Z + w)
    close(z - q, Z - w)
    close(z * q, Z * w)
    close(z / q, Z / w)
    close(z ** q, Z ** w, rtol=1e-12)
    close(z ** 3, Z ** 3)
    close(z ** -2, Z ** -2.0)
    assert (z ** 2).tolist()[4] == -1 + 0j  # an integer power is products: exact
    close(z ** 0.5, Z ** 0.5)
    close(z * 2.5 - 1j, Z * 2.5 - 1j)
    assert (z == q).tolist() == list(Z == w)
    assert qb.equal(z, z).tolist() == [True] * 6 and qb.not_equal(z, q).tolist() == list(Z != w)
    nan_inf = qb.asarray(np.array([complex(np.nan, 0), complex(0, np.inf), 1 + 1j]))
    assert qb.isnan(nan_inf).tolist() == [True, False, False]
    assert qb.isinf(nan_inf).tolist() == [False, True, False]
    assert qb.isfinite(nan_inf).tolist() == [False, False, True]
    close(qb.where(qb.real(z) > 0, z, q), np.where(Z.real > 0, Z, w))


def test_parts_angle_conj():
    z = qb.asarray(Z)
    assert qb.real(z).dtype == qb.float64
    close(qb.real(z), Z.real)
    close(qb.imag(z), Z.imag)
    close(z.real, Z.real)
    close(z.imag, Z.imag)
    close(qb.conj(z), np.conj(Z))
    close(z.conj(), np.conj(Z))
    close(qb.angle(z), np.angle(Z))
    close(qb.angle(z, deg=True), np.angle(Z, deg=True))
    close(qb.lax.complex(qb.array([1.0, 2.0]), qb.array([3.0, -4.0])), [1 + 3j, 2 - 4j])
    assert qb.iscomplexobj(z) and not qb.iscomplexobj(qb.real(z))
    assert qb.iscomplex(z).tolist() == list(np.iscomplex(Z))
    assert qb.isreal(z).tolist() == list(np.isreal(Z))
    # real arrays: real is the array, imag zeros, conj itself
    x = qb.array([1.0, -2.0])
    assert qb.real(x).tolist() == [1.0, -2.0] and qb.imag(x).tolist() == [0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.complex_numbers(max_magnitude=50.0, allow_nan=False, allow_infinity=False), min_size=1,
                max_size=6))
def test_arithmetic_property(values):
    z = np.array(values, dtype=np.complex128)
    q = qb.asarray(z)
    close(q * q + 2.0 * q - 1j, z * z + 2.0 * z - 1j, rtol=1e-12, atol=1e-12)
    close(qb.exp(q / 10.0) * qb.conj(q), np.exp(z / 10.0) * np.conj(z), rtol=1e-12, atol=1e-12)
    close(qb.abs(q), np.abs(z), rtol=1e-14, atol=1e-300)


# ---- structural ops, reductions, products ------------------------------------------------------

def test_structural_and_reductions():
    m = (np.arange(12.0) - 5.0 + 1j * np.arange(12.0)[::-1]).reshape(3, 4)
    q = qb.asarray(m)
    close(q.T, m.T)
    close(q.reshape(4, 3), m.reshape(4, 3))
    close(q[1:, ::2], m[1:, ::2])
    close(q[qb.array([2, 0])], m[[2, 0]])
    close(qb.concatenate([q, q * 1j], axis=0), np.concatenate([m, m * 1j], axis=0))
    close(qb.stack([q, q], axis=1), np.stack([m, m], axis=1))
    close(qb.sum(q, axis=0), m.sum(axis=0))
    close(qb.mean(q), m.mean())
    close(qb.cumsum(q, axis=1), np.cumsum(m, axis=1))
    close(qb.prod(q / 5.0, axis=1), np.prod(m / 5.0, axis=1))
    close(qb.prod(q[:, :3] / 5.0), np.prod(m[:, :3] / 5.0))
    close(qb.grad(lambda z: qb.abs(qb.prod(z)) ** 2)(q[0] / 5.0),
          jax.grad(lambda z: jnp.abs(jnp.prod(z)) ** 2)(m[0] / 5.0))
    close(qb.flip(q, axis=1), np.flip(m, axis=1))
    close(qb.pad(q, ((1, 0), (0, 2))), np.pad(m, ((1, 0), (0, 2))))
    close(qb.broadcast_to(q[0], (2, 4)), np.broadcast_to(m[0], (2, 4)))
    close(q.at[0, 1].set(5j), np.where(np.arange(12).reshape(3, 4) == 1, 5j, m))
    expect = m.copy()
    expect[1] += 1 + 1j
    close(q.at[1].add(1 + 1j), expect)


def test_matmul_and_einsum():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    b = rng.normal(size=(4, 2)) + 1j * rng.normal(size=(4, 2))
    close(qb.asarray(a) @ qb.asarray(b), a @ b)
    close(qb.matmul(qb.asarray(a), qb.asarray(b)), a @ b)
    close(qb.einsum("ij,jk->ik", qb.asarray(a), qb.asarray(b)), a @ b)
    close(qb.dot(qb.asarray(a[0]), qb.asarray(b[:, 0])), a[0] @ b[:, 0])


def test_comparisons_max_and_min_order_lexicographically_as_jax():
    # JAX orders complex numbers by real part, then imaginary part, in lt/le/gt/ge, maximum,
    # minimum, max, min and cummax (argmax, clip and median raise, as in JAX)
    z = np.array([[1 + 2j, 3 - 1j, 3 + 0.5j, -1 + 5j], [3 + 0.5j, 3 + 0.5j, 2 - 2j, 1 + 2j]])
    w = np.array([[1 + 3j, 3 - 1j, 2 + 9j, -1 + 4j], [4 - 9j, 3 + 0.25j, 2 - 1j, 0 + 0j]])
    qz, qw, jz, jw = qb.asarray(z), qb.asarray(w), jnp.asarray(z), jnp.asarray(w)
    for f in (lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b):
        np.testing.assert_array_equal(np.asarray(f(qz, qw)), np.asarray(f(jz, jw)))
        np.testing.assert_array_equal(np.asarray(qb.jit(f)(qz, qw)), np.asarray(f(jz, jw)))
    for qf, jf in ((qb.maximum, jnp.maximum), (qb.minimum, jnp.minimum)):
        close(qf(qz, qw), jf(jz, jw))
        close(qf(qz, 2 + 0j), jf(jz, 2 + 0j))
    for qf, jf in ((qb.max, jnp.max), (qb.min, jnp.min)):
        close(qf(qz), jf(jz))
        close(qf(qz, axis=0), jf(jz, axis=0))
        close(qb.jit(lambda a, f=qf: f(a, axis=1))(qz), jf(jz, axis=1))
    close(qb.cummax(qz, axis=1), jax.lax.cummax(jz, axis=1))
    close(qb.cummin(qz, axis=0), jax.lax.cummin(jz, axis=0))
    # forward mode through the selection: the selected element's tangent
    t = np.ones_like(z) * (0.5 - 1j)
    close(qb.jvp(lambda a: qb.max(a, axis=1), (qz,), (qb.asarray(t),))[1], jax.jvp(lambda a: jnp.max(a, axis=1), (jz,), (jnp.asarray(t),))[1])
    with pytest.raises(TypeError, match="complex"):
        qb.arcsin(qb.asarray(Z))
    with pytest.raises(ValueError, match="^clip: complex values have no ordering"):
        qb.clip(qz, 0, 2)
    with pytest.raises(TypeError, match="argmax"):
        qb.argmax(qz)


# ---- derivatives -------------------------------------------------------------------------------

def real_loss(m):
    def f(z):
        w = m.exp(z) * z + 1j
        return m.sum(m.abs(w) ** 2 + m.real(m.sin(z) * m.conj(z)) + m.imag(m.sqrt(z + 3.0) / (z - 5.0 + 0.5j)))
    return f


def test_grad_matches_jax():
    got = qb.grad(real_loss(qb))(qb.asarray(Z))
    want = jax.grad(real_loss(jnp))(jnp.asarray(Z))
    close(got, want, rtol=1e-12)
    # JAX's convention: for f = |z|^2 the gradient is 2 conj(z)
    close(qb.grad(lambda z: qb.sum(qb.abs(z) ** 2))(qb.asarray(Z)), 2 * np.conj(Z))


def test_grad_matches_finite_differences():
    f = real_loss(qb)
    z0 = Z[:5].copy()  # values where f stays small: the differences' rounding is ~1e-16 |f| / h
    g = np.asarray(qb.grad(f)(qb.asarray(z0)))
    h = 1e-6
    for k in range(len(z0)):
        for direction, part in ((1.0, "re"), (1j, "im")):
            zp, zm = z0.copy(), z0.copy()
            zp[k] += h * direction
            zm[k] -= h * direction
            fd = (f(qb.asarray(zp)).item() - f(qb.asarray(zm)).item()) / (2 * h)
            # grad = df/dx - i df/dy
            want = g[k].real if part == "re" else -g[k].imag
            assert abs(fd - want) < 1e-6 * max(1.0, abs(want)), (k, part, fd, want)


def test_jvp_vjp_and_forward_reverse_agree():
    f = lambda z: qb.exp(z) * qb.sin(z) + z ** 2 / (z + 3.0)  # noqa: E731
    fj = lambda z: jnp.exp(z) * jnp.sin(z) + z ** 2 / (z + 3.0)  # noqa: E731
    t = np.ones_like(Z) * (0.5 - 0.25j)
    _, tan = qb.jvp(f, (qb.asarray(Z),), (qb.asarray(t),))
    _, tan_j = jax.jvp(fj, (jnp.asarray(Z),), (jnp.asarray(t),))
    close(tan, tan_j)
    ct = np.linspace(1, 2, len(Z)) + 1j * np.linspace(-1, 0.5, len(Z))
    _, pull = qb.vjp(f, qb.asarray(Z))
    _, pull_j = jax.vjp(fj, jnp.asarray(Z))
    close(pull(qb.asarray(ct))[0], pull_j(jnp.asarray(ct))[0])
    # A real-valued composition: forward (jacfwd) and reverse (grad) agree.
    loss = lambda x: qb.sum(qb.abs(qb.exp(1j * x) * (x + 2j)) ** 2)  # noqa: E731
    x = qb.array([0.3, -1.2, 2.0])
    close(qb.jacfwd(loss)(x), qb.grad(loss)(x))


def test_holomorphic_grad():
    f = lambda z: z ** 3 + qb.sin(z) * qb.exp(z)  # noqa: E731
    fj = lambda z: z ** 3 + jnp.sin(z) * jnp.exp(z)  # noqa: E731
    close(qb.grad(f, holomorphic=True)(qb.array(0.5 + 0.2j)), jax.grad(fj, holomorphic=True)(0.5 + 0.2j))
    with pytest.raises(TypeError, match="holomorphic=True"):
        qb.grad(lambda z: z * z)(qb.array(0.5 + 0.2j))
    with pytest.raises(TypeError, match="complex inputs"):
        qb.grad(lambda x: x * 1j, holomorphic=True)(qb.array(0.5))


def test_second_derivatives():
    # hessian of a real function of real x through complex intermediates, against JAX
    f = lambda x: qb.sum(qb.real(qb.exp(1j * x) * (x + 1j)) ** 2)  # noqa: E731
    fj = lambda x: jnp.sum(jnp.real(jnp.exp(1j * x) * (x + 1j)) ** 2)  # noqa: E731
    x = np.array([0.3, -0.7, 1.1])
    close(qb.hessian(f)(qb.asarray(x)), jax.hessian(fj)(x), rtol=1e-11)


# ---- transforms over complex programs -----------------------------------------------------------

def test_jit_vmap_and_loops():
    f = qb.jit(lambda z, w: z * w + qb.conj(z))
    close(f(qb.asarray(Z), qb.asarray(Z[::-1].copy())), Z * Z[::-1] + np.conj(Z))
    m = np.stack([Z, 2 * Z])
    close(qb.vmap(lambda z: qb.sum(z * z))(qb.asarray(m)), (m * m).sum(axis=1))
    close(qb.vmap(qb.grad(lambda z: qb.sum(qb.abs(z) ** 2)))(qb.asarray(m)), 2 * np.conj(m))

    def rotate(z, n):  # a complex carry through fori_loop
        return qb.fori_loop(0, n, lambda i, c: c * qb.exp(0.1j), z)
    close(qb.jit(rotate, static_argnums=1)(qb.asarray(Z), 5), Z * np.exp(0.5j))
    ys = qb.lax.scan(lambda c, x: (c + x, c * x), qb.array(0j), qb.asarray(Z))
    c, prods = 0j, []
    for v in Z:
        prods.append(c * v)
        c += v
    close(ys[0], c)
    close(ys[1], prods)
    out = qb.cond(qb.array(True), lambda z: z * 1j, lambda z: z, qb.asarray(Z))
    close(out, Z * 1j)
    # the derivative of a loop over a complex carry, against JAX
    loss = lambda x: qb.abs(qb.fori_loop(0, 4, lambda i, c: c * (x + 1j), qb.array(1 + 0j))) ** 2  # noqa: E731
    loss_j = lambda x: jnp.abs(jax.lax.fori_loop(0, 4, lambda i, c: c * (x + 1j), 1 + 0j)) ** 2  # noqa: E731
    close(qb.grad(loss)(qb.array(0.7)), jax.grad(loss_j)(0.7))


def test_host_call_on_complex_raises_clearly():
    def f(z):
        return qb.pure_callback(lambda a: a, qb.ShapeDtype((6,), qb.complex128), z)
    with pytest.raises(TypeError, match="complex values is not supported yet"):
        qb.jit(f)(qb.asarray(Z))


# ---- the rest of the package with complex values ----------------------------------------------

def test_jacobians_follow_jax_rules():
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        qb.jacrev(lambda x: qb.exp(1j * x))(qb.array([0.5, 1.0]))
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        qb.jacfwd(lambda z: z * z)(qb.array([0.5 + 1j]))
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with a complex dtype"):
        qb.jacfwd(lambda x: x * 1j, holomorphic=True)(qb.array([0.5]))
    f = lambda z: z ** 2 * qb.sin(z)  # noqa: E731
    fj = lambda z: z ** 2 * jnp.sin(z)  # noqa: E731
    z = np.array([0.5 + 1j, -0.3 + 0.2j])
    close(qb.jacfwd(f, holomorphic=True)(qb.asarray(z)), jax.jacfwd(fj, holomorphic=True)(z))
    close(qb.jacrev(f, holomorphic=True)(qb.asarray(z)), jax.jacrev(fj, holomorphic=True)(z))
    # real inputs, complex outputs: jacobian takes forward mode, as jacfwd would
    x = np.array([0.5, 1.0])
    close(qb.jacobian(lambda x: qb.exp(1j * x))(qb.asarray(x)), jax.jacfwd(lambda x: jnp.exp(1j * x))(x))


def test_pickle_save_load_and_scalars(tmp_path):
    import pickle
    z = qb.asarray(np.array([[1 + 2j, 3 - 1j]]))
    for a in (z, z.astype(qb.complex64), qb.array(2j)):
        back = pickle.loads(pickle.dumps(a))
        assert back.dtype == a.dtype and back.tolist() == a.tolist()
    qb.io.save(tmp_path / "c.qb", {"z": z, "w": z.astype(qb.complex64)})
    loaded = qb.io.load(tmp_path / "c.qb")
    assert loaded["z"].dtype == qb.complex128 and loaded["w"].dtype == qb.complex64
    np.testing.assert_array_equal(np.asarray(loaded["z"]), np.asarray(z))
    assert complex(z[0, 1]) == 3 - 1j
    assert f"{z[0, 0].item():.1f}" == "1.0+2.0j"


def test_complex_normal_matches_jax():
    for dt, jdt, tol in ((qb.complex128, jnp.complex128, 1e-15), (qb.complex64, jnp.complex64, 1e-6)):
        a = np.asarray(qb.random.normal(qb.random.PRNGKey(3), (5,), dtype=dt))
        b = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (5,), dtype=jdt))
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_loops_laplacian_and_optimizers_with_complex_values():
    x = np.linspace(0.1, 1.0, 6)

    def loss(m, L):
        def f(w):  # a Python complex as the initial carry (weak, as a Python float)
            def step(c, xi):
                c = c * m.exp(1j * w * xi) + xi
                return c, c * (1 + 0.5j)
            c, ys = L.scan(step, 1 + 0j, x)
            return m.abs(c) ** 2 + m.sum(m.real(ys * m.conj(ys)))
        return f

    close(qb.grad(loss(qb, qb.lax))(qb.array(0.7)), jax.grad(loss(jnp, jax.lax))(0.7))
    close(qb.vmap(qb.grad(loss(qb, qb.lax)))(qb.array([0.7, 1.3])),
          jax.vmap(jax.grad(loss(jnp, jax.lax)))(jnp.array([0.7, 1.3])))
    # the Laplacian (collapsed Taylor mode) through non-analytic complex steps (|z|, rfft)
    h = lambda m: (lambda x: m.sum(m.abs(m.fft.rfft(x * x)) ** 2))  # noqa: E731
    close(qb.laplacian(h(qb))(qb.asarray(x)), jnp.trace(jax.hessian(h(jnp))(x)), rtol=1e-11)
    # Adam on complex parameters: optax's second moment |g|^2
    optax = pytest.importorskip("optax")
    p = {"z": np.array([1 + 1j, -0.5 + 2j])}
    g = {"z": np.array([0.5 - 0.5j, 0.1 + 0.3j])}
    opt = optax.adam(0.1)
    up, _ = opt.update(g, opt.init(p), p)
    want = optax.apply_updates(p, up)["z"]
    close(qb.optim.Adam(0.1).step({"z": qb.asarray(p["z"])}, {"z": qb.asarray(g["z"])})["z"], want)
    qo = qb.optax.adam(0.1)
    qp, qg = {"z": qb.asarray(p["z"])}, {"z": qb.asarray(g["z"])}
    qup, _ = qo.update(qg, qo.init(qp), qp)
    close(qb.optax.apply_updates(qp, qup)["z"], want)
