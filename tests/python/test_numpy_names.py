"""jax.numpy / NumPy names and options beyond the core (quabla._numpy_names, the lax and
linalg additions, nn's masked softmax and weighted logsumexp, SGD momentum, vmap's kwargs
and axis_size, jit's accepted-and-ignored options): values against NumPy and SciPy,
gradients against central differences, and the same results under jit."""
import math

import numpy as np
import pytest
import scipy.special as ss

import quabla as qb

A = np.arange(12.0).reshape(3, 4)


def close(got, expected, **kw):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            close(g, e, **kw)
        return
    g = np.asarray(got)
    assert g.shape == np.shape(expected), (g.shape, np.shape(expected))
    np.testing.assert_allclose(g, expected, **kw)


def fill_diag(z, val, wrap=False):
    np.fill_diagonal(z, val, wrap=wrap)
    return z


@pytest.mark.parametrize("name, got, expected", [
    ("acos", lambda: qb.acos(qb.asarray([0.5, -1.0])), np.arccos([0.5, -1.0])),
    ("atanh", lambda: qb.atanh(qb.asarray([0.5])), np.arctanh([0.5])),
    ("pow", lambda: qb.pow(qb.asarray([2.0, 3.0]), 2), np.power([2.0, 3.0], 2)),
    ("permute_dims", lambda: qb.permute_dims(qb.asarray(A), (1, 0)), A.T),
    ("unstack", lambda: qb.unstack(qb.asarray(A), axis=1), [A[:, i] for i in range(4)]),
    ("cumulative_sum", lambda: qb.cumulative_sum(qb.asarray(A), axis=1, include_initial=True),
     np.concatenate([np.zeros((3, 1)), np.cumsum(A, 1)], 1)),
    ("cumulative_prod", lambda: qb.cumulative_prod(qb.asarray([1.0, 2.0, 3.0])), np.cumprod([1.0, 2.0, 3.0])),
    ("vecdot", lambda: qb.vecdot(qb.asarray(A), qb.ones(4)), A.sum(1)),
    ("matvec", lambda: qb.matvec(qb.asarray(A), qb.arange(4.0)), A @ np.arange(4.0)),
    ("vecmat", lambda: qb.vecmat(qb.arange(3.0), qb.asarray(A)), np.arange(3.0) @ A),
    ("divmod", lambda: qb.divmod(qb.asarray([7, -7, 7]), qb.asarray([3, 3, -3])), np.divmod([7, -7, 7], [3, 3, -3])),
    ("gcd", lambda: qb.gcd(qb.asarray([12, 0, -18, 7, 0, 832040]), qb.asarray([18, 5, 12, 0, 0, 514229])),
     np.gcd([12, 0, -18, 7, 0, 832040], [18, 5, 12, 0, 0, 514229])),
    ("lcm", lambda: qb.lcm(qb.asarray([4, 0, -6]), qb.asarray([6, 5, 4])), np.lcm([4, 0, -6], [6, 5, 4])),
    ("insert int", lambda: qb.insert(qb.arange(5.0), 2, qb.asarray([9.0, 8.0])), np.insert(np.arange(5.0), 2, [9.0, 8.0])),
    ("insert negative", lambda: qb.insert(qb.arange(5.0), -1, 9.0), np.insert(np.arange(5.0), -1, 9.0)),
    ("insert list", lambda: qb.insert(qb.arange(5.0), [1, 1, 4, 5], qb.asarray([7.0, 8.0, 9.0, 10.0])),
     np.insert(np.arange(5.0), [1, 1, 4, 5], [7.0, 8.0, 9.0, 10.0])),
    ("insert column", lambda: qb.insert(qb.asarray(A), 1, qb.asarray([7.0, 8.0, 9.0]), axis=1),
     np.insert(A, 1, [7.0, 8.0, 9.0], axis=1)),
    ("insert rows", lambda: qb.insert(qb.asarray(A), [0, 2], 5.0, axis=0), np.insert(A, [0, 2], 5.0, axis=0)),
    ("insert flat", lambda: qb.insert(qb.asarray(A), 3, 1.0), np.insert(A, 3, 1.0)),
    ("delete", lambda: qb.delete(qb.asarray(A), [0, -1], axis=1), np.delete(A, [0, -1], axis=1)),
    ("delete slice", lambda: qb.delete(qb.arange(10.0), slice(2, 8, 2)), np.delete(np.arange(10.0), slice(2, 8, 2))),
    ("lexsort", lambda: qb.lexsort((qb.asarray([3, 1, 2, 1, 0]), qb.asarray([1, 1, 0, 0, 2]))),
     np.lexsort(([3, 1, 2, 1, 0], [1, 1, 0, 0, 2]))),
    ("fill_diagonal", lambda: qb.fill_diagonal(qb.zeros((3, 4)), qb.asarray([1.0, 2.0]), inplace=False),
     fill_diag(np.zeros((3, 4)), [1.0, 2.0])),
    ("fill_diagonal wrap", lambda: qb.fill_diagonal(qb.zeros((7, 3)), 5.0, wrap=True, inplace=False),
     fill_diag(np.zeros((7, 3)), 5.0, wrap=True)),
    ("fill_diagonal 3d", lambda: qb.fill_diagonal(qb.zeros((3, 3, 3)), 5.0, inplace=False),
     fill_diag(np.zeros((3, 3, 3)), 5.0)),
    ("mgrid", lambda: qb.mgrid[0:1:5j, 0:3], np.mgrid[0:1:5j, 0:3]),
    ("mgrid 1d", lambda: qb.mgrid[0:5], np.mgrid[0:5]),
    ("ogrid", lambda: qb.ogrid[0:3, 0:2], np.ogrid[0:3, 0:2]),
    ("r_", lambda: qb.r_[qb.asarray([1, 2]), 0, 4:6], np.r_[np.array([1, 2]), 0, 4:6]),
    ("r_ count", lambda: qb.r_[qb.asarray([1.0, 2.0]), 0:1:3j], np.r_[np.array([1.0, 2.0]), 0:1:3j]),
    ("r_ directive", lambda: qb.r_["0,2", qb.asarray([1, 2, 3]), qb.asarray([4, 5, 6])],
     np.r_["0,2", np.array([1, 2, 3]), np.array([4, 5, 6])]),
    ("r_ axis", lambda: qb.r_["-1", qb.asarray(A), qb.asarray(A)], np.r_["-1", A, A]),
    ("c_", lambda: qb.c_[qb.asarray([1, 2, 3]), qb.asarray([4, 5, 6])], np.c_[np.array([1, 2, 3]), np.array([4, 5, 6])]),
    ("c_ matrix", lambda: qb.c_[qb.asarray(A), qb.ones(3)], np.c_[A, np.ones(3)]),
    ("ix_", lambda: qb.ix_(qb.asarray([0, 2]), qb.asarray([True, False, True, True])),
     np.ix_([0, 2], [True, False, True, True])),
    ("ediff1d", lambda: qb.ediff1d(qb.asarray([1.0, 4.0, 9.0]), to_begin=0.0, to_end=qb.asarray([7.0, 8.0])),
     np.ediff1d([1.0, 4.0, 9.0], to_begin=0.0, to_end=[7.0, 8.0])),
    ("apply_over_axes", lambda: qb.apply_over_axes(qb.sum, qb.asarray(A), [0, 1]), np.apply_over_axes(np.sum, A, [0, 1])),
    ("ldexp", lambda: qb.ldexp(qb.asarray([1e-300, 3.0, 0.5]), qb.asarray([1100, -2, 1])),
     np.ldexp([1e-300, 3.0, 0.5], [1100, -2, 1])),
    ("spacing", lambda: qb.spacing(qb.asarray([1.0, -3.0, 1e300])), np.spacing([1.0, -3.0, 1e300])),
    ("bitwise_count", lambda: qb.bitwise_count(qb.asarray([7, -8, 0])), [3, 1, 0]),
    ("linspace retstep", lambda: qb.linspace(0, 1, 5, retstep=True), np.linspace(0, 1, 5, retstep=True)),
    ("linspace arrays", lambda: qb.linspace(qb.asarray([0.0, 1.0]), qb.asarray([1.0, 3.0]), 4),
     np.linspace([0.0, 1.0], [1.0, 3.0], 4)),
    ("linspace axis", lambda: qb.linspace(qb.asarray([0.0, 1.0]), qb.asarray([1.0, 3.0]), 4, axis=1, endpoint=False),
     np.linspace([0.0, 1.0], [1.0, 3.0], 4, axis=1, endpoint=False)),
    ("reshape F", lambda: qb.reshape(qb.asarray(A), (-1, 2), order="F"), np.reshape(A, (-1, 2), order="F")),
    ("method reshape F", lambda: qb.asarray(A).reshape(2, 6, order="F"), A.reshape(2, 6, order="F")),
    ("full_like shape", lambda: qb.full_like(qb.ones(3), 2.0, shape=(2,)), np.full_like(np.ones(3), 2.0, shape=(2,))),
    ("concatenate None", lambda: qb.concatenate([qb.asarray(A), qb.ones(2)], axis=None),
     np.concatenate([A, np.ones(2)], axis=None)),
    ("meshgrid sparse", lambda: qb.meshgrid(qb.arange(3.0), qb.arange(2.0), sparse=True),
     np.meshgrid(np.arange(3.0), np.arange(2.0), sparse=True)),
    ("repeat total", lambda: qb.repeat(qb.arange(3.0), [1, 0, 2], total_repeat_length=5), [0.0, 2.0, 2.0, 2.0, 2.0]),
])
def test_values_match_numpy(name, got, expected):
    close(got(), expected, rtol=1e-14, atol=0)


def test_float_decomposition_edges():
    v = np.array([-2.5, 0.0, 3.75, np.inf, -np.inf, 1e-310, 6e300, np.nan, -0.0, 0.75, 1.0])
    close(qb.modf(qb.asarray(v)), np.modf(v))
    m, e = qb.frexp(qb.asarray(v))
    em, ee = np.frexp(v)
    np.testing.assert_array_equal(m.numpy(), em)
    np.testing.assert_array_equal(e.numpy(), ee)
    assert np.signbit(qb.modf(qb.asarray([-0.5]))[1].numpy()).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_matches_numpy_bitwise(dtype):
    rng = np.random.default_rng(0)
    scale = 300 if dtype == np.float64 else 36
    r = (rng.normal(size=500) * 10.0 ** rng.integers(-scale, scale, 500)).astype(dtype)
    smallest = np.finfo(dtype).smallest_subnormal
    powers = (2.0 ** np.arange(-140 if dtype == np.float32 else -1070, 100, 3.0)).astype(dtype)
    x = np.concatenate([r, r, powers, powers, np.array([0, 0, smallest, -smallest, np.inf, -np.inf, 1, np.nan, 1], dtype)])
    y = np.concatenate([-r, 2 * r, np.zeros_like(powers), 2 * powers,
                        np.array([1, -1, 0, 1, 0, 0, 1, 0, np.nan], dtype)])
    got = qb.nextafter(qb.asarray(x), qb.asarray(y)).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.nextafter(x, y))


def test_vectorize_apply_along_axis_and_piecewise():
    x = qb.asarray(A)
    close(qb.vectorize(lambda a, b: a * b + 1)(x, qb.asarray([1.0, 2.0, 3.0, 4.0])), A * [1, 2, 3, 4] + 1)
    close(qb.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")(x, qb.ones(4)), A.sum(1))
    outer = qb.vectorize(lambda a, b: qb.stack([a * b, a + b]), signature="(),()->(k)")
    close(outer(qb.arange(3.0), 2.0), np.stack([np.arange(3.0) * 2, np.arange(3.0) + 2], -1))
    close(qb.vectorize(lambda a, p: a ** p, excluded={1})(qb.asarray([1.0, 2.0, 3.0]), 2), [1.0, 4.0, 9.0])
    close(qb.jit(qb.vectorize(lambda a: qb.sin(a) * 2))(x), np.sin(A) * 2, rtol=1e-15)
    close(qb.apply_along_axis(lambda v: v.sum(), 0, x), A.sum(0))
    close(qb.apply_along_axis(lambda v: qb.stack([v.min(), v.max()]), 1, x),
          np.apply_along_axis(lambda v: np.stack([v.min(), v.max()]), 1, A))
    close(qb.apply_along_axis(lambda v: v[::-1], 0, x), np.apply_along_axis(lambda v: v[::-1], 0, A))
    t = np.linspace(-2, 2, 9)
    funcs_q = [lambda v: -v, lambda v: v ** 2, 0.5]
    close(qb.piecewise(qb.asarray(t), [qb.asarray(t < 0), qb.asarray(t >= 1)], funcs_q),
          np.piecewise(t, [t < 0, t >= 1], [lambda v: -v, lambda v: v ** 2, 0.5]))
    # Gradients flow through the compositions: d/dt piecewise = -1, 0, 2t.
    g = qb.grad(lambda s: qb.piecewise(s, [s < 0, s >= 1], funcs_q).sum())(qb.asarray(t)).numpy()
    np.testing.assert_allclose(g, np.where(t < 0, -1.0, np.where(t >= 1, 2 * t, 0.0)))
    gv = qb.grad(lambda s: qb.vectorize(lambda a: a ** 3)(s).sum())(qb.asarray([1.0, 2.0])).numpy()
    np.testing.assert_allclose(gv, [3.0, 12.0])


def test_partition_property_and_gcd_under_jit():
    a = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    p = qb.partition(qb.asarray(a), 2).numpy()
    assert p[2] == np.sort(a)[2] and np.all(p[:2] <= p[2]) and np.all(p[3:] >= p[2])
    idx = qb.argpartition(qb.asarray(a), 2).numpy()
    assert a[idx[2]] == 3.0
    close(qb.jit(qb.gcd)(qb.asarray([12, 7]), qb.asarray([18, 21])), [6, 7])
    close(qb.vmap(qb.gcd)(qb.asarray([12, 7]), qb.asarray([18, 21])), [6, 7])


def test_insert_gradient():
    x = qb.asarray([1.0, 2.0, 3.0])
    g = qb.grad(lambda v, w: (qb.insert(v, 1, w) ** 2).sum(), argnums=(0, 1))(x, qb.asarray(4.0))
    np.testing.assert_allclose(g[0].numpy(), 2 * x.numpy())
    np.testing.assert_allclose(g[1].numpy(), 8.0)


def test_lax_additions():
    L = qb.lax
    x = qb.asarray(A)
    close(L.reduce_sum(x, (0,)), A.sum(0))
    close(L.reduce_max(x, (0, 1)), A.max())
    close(L.reduce_min(x, (1,)), A.min(1))
    close(L.reduce_prod(qb.asarray([1.0, 2.0, 3.0]), (0,)), 6.0)
    close(L.dot(x, qb.ones(4)), A.sum(1))
    close(L.broadcasted_iota(qb.int32, (2, 3), 1), np.broadcast_to(np.arange(3), (2, 3)))
    close(L.transpose(x, (1, 0)), A.T)
    close(L.rev(x, (0, 1)), A[::-1, ::-1])
    close(L.round(qb.asarray([0.5, 1.5, -0.5, -2.5])), [1.0, 2.0, -1.0, -3.0])
    close(L.round(qb.asarray([0.5, 1.5, -0.5, -2.5]), L.RoundingMethod.TO_NEAREST_EVEN), [0.0, 2.0, -0.0, -2.0])
    close(L.cumlogsumexp(qb.asarray([1.0, 2.0, 3.0])), np.logaddexp.accumulate([1.0, 2.0, 3.0]), rtol=1e-14)
    bits = np.array([-8, 7, -1, 2**31 - 1], dtype=np.int32)
    for shift in (0, 1, 5, 31):
        close(L.shift_right_logical(qb.asarray(bits), shift), (bits.view(np.uint32) >> shift).view(np.int32))
    close(L.shift_right_logical(qb.asarray(bits), 32), np.zeros(4, np.int32))
    close(L.population_count(qb.asarray(bits)), [bin(int(v) & 0xFFFFFFFF).count("1") for v in bits])
    for name, op in (("eq", np.equal), ("lt", np.less), ("ge", np.greater_equal)):
        close(getattr(L, name)(qb.asarray([1, 2, 3]), qb.asarray([2, 2, 2])), op([1, 2, 3], [2, 2, 2]))
    close(L.map(lambda r: r * 2, qb.arange(10.0).reshape(5, 2), batch_size=2), np.arange(10.0).reshape(5, 2) * 2)
    close(L.map(lambda r: r.sum(), qb.arange(12.0).reshape(6, 2), batch_size=3), np.arange(12.0).reshape(6, 2).sum(1))
    close(L.cond(True, lambda v: v, lambda v: -v, operand=qb.ones(2)), [1.0, 1.0])
    with pytest.raises(ValueError, match="batch_size"):
        L.map(lambda r: r, qb.ones(3), batch_size=0)


def test_linalg_additions():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 4))
    q = qb.asarray(x)
    LA = qb.linalg
    close(LA.vector_norm(q), np.linalg.norm(x.ravel()), rtol=1e-14)
    close(LA.vector_norm(q, axis=(0, 2)), np.sqrt((x ** 2).sum(axis=(0, 2))), rtol=1e-14)
    close(LA.vector_norm(q, axis=1, ord=1, keepdims=True), np.abs(x).sum(1, keepdims=True), rtol=1e-14)
    close(LA.matrix_norm(q), np.linalg.norm(x, axis=(-2, -1)), rtol=1e-14)
    close(LA.matrix_norm(q, ord=2), np.linalg.norm(x, ord=2, axis=(-2, -1)), rtol=1e-12)
    close(LA.trace(q, offset=1), np.trace(x, offset=1, axis1=-2, axis2=-1), rtol=1e-14)
    close(LA.diagonal(q), np.diagonal(x, axis1=-2, axis2=-1))
    close(LA.outer(qb.ones(2), qb.arange(3.0)), np.outer(np.ones(2), np.arange(3.0)))
    close(LA.cross(qb.asarray([1.0, 0.0, 0.0]), qb.asarray([0.0, 1.0, 0.0])), [0.0, 0.0, 1.0])
    close(LA.vecdot(q, q), (x * x).sum(-1), rtol=1e-14)
    close(LA.matrix_transpose(q), np.swapaxes(x, -1, -2))
    a, b = rng.normal(size=(6, 2, 3)), rng.normal(size=(6,))
    close(LA.tensorsolve(qb.asarray(a), qb.asarray(b)), np.linalg.tensorsolve(a, b), rtol=1e-10)
    t = rng.normal(size=(4, 6, 8, 3))
    close(LA.tensorinv(qb.asarray(t), 2), np.linalg.tensorinv(t, 2), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="length 3"):
        LA.cross(qb.ones(2), qb.ones(2))


def test_nn_masked_softmax_and_weighted_logsumexp():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = np.array([[True, False, True], [True, True, False]])
    e = np.where(m, np.exp(x), 0.0)
    close(qb.nn.softmax(qb.asarray(x), where=qb.asarray(m)), e / e.sum(-1, keepdims=True), rtol=1e-14)
    ls = qb.nn.log_softmax(qb.asarray(x), where=qb.asarray(m)).numpy()
    np.testing.assert_allclose(ls[m], np.log(np.where(m, e / e.sum(-1, keepdims=True), 1.0))[m], rtol=1e-14)
    assert np.all(np.isneginf(ls[~m]))
    close(qb.nn.softmax(qb.asarray(x), axis=(0, 1)), ss.softmax(x, axis=(0, 1)), rtol=1e-14)
    close(qb.nn.log_softmax(qb.asarray(x), axis=None), ss.log_softmax(x, axis=None), rtol=1e-14)
    b = np.array([1.0, -2.0, 0.5])
    v, s = qb.nn.logsumexp(qb.asarray([1.0, 2.0, 0.0]), b=qb.asarray(b), return_sign=True)
    ev, es = ss.logsumexp([1.0, 2.0, 0.0], b=b, return_sign=True)
    close(v, ev, rtol=1e-14)
    close(s, es)
    assert math.isnan(float(qb.nn.logsumexp(qb.asarray([1.0, 2.0]), b=qb.asarray([1.0, -2.0])).item()))
    close(qb.nn.logsumexp(qb.asarray(x), axis=1, where=qb.asarray(m)), np.log(e.sum(1)), rtol=1e-14)
    close(qb.scipy.special.logsumexp(qb.asarray(x), axis=0, b=qb.asarray(x)), ss.logsumexp(x, axis=0, b=x), rtol=1e-14)
    # Gradient of the weighted form against central differences.
    f = lambda a: qb.nn.logsumexp(a, b=qb.asarray([1.0, 2.0, 0.5]))  # noqa: E731
    a0 = np.array([0.3, -1.2, 2.0])
    g = qb.grad(f)(qb.asarray(a0)).numpy()
    h = 1e-6
    fd = [(float(f(qb.asarray(a0 + h * np.eye(3)[i])).item()) - float(f(qb.asarray(a0 - h * np.eye(3)[i])).item()))
          / (2 * h) for i in range(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-8)


def test_sgd_momentum_matches_optax_formulas():
    for nesterov in (False, True):
        opt = qb.optim.SGD(0.1, momentum=0.9, nesterov=nesterov)
        p = {"w": qb.ones(2)}
        st = opt.init(p)
        w, trace = np.ones(2), np.zeros(2)
        for k in range(4):
            g = np.array([1.0, -2.0]) * (k + 1)
            p, st = opt.update(p, {"w": qb.asarray(g)}, st)
            trace = g + 0.9 * trace
            w = w - 0.1 * ((g + 0.9 * trace) if nesterov else trace)
        np.testing.assert_allclose(p["w"].numpy(), w, rtol=1e-14)
    jitted = qb.jit(qb.optim.SGD(0.1, momentum=0.5).update)
    opt = qb.optim.SGD(0.1, momentum=0.5)
    p2, _ = jitted({"w": qb.ones(2)}, {"w": qb.ones(2)}, opt.init({"w": qb.ones(2)}))
    np.testing.assert_allclose(p2["w"].numpy(), [0.9, 0.9])
    with pytest.raises(ValueError, match="nesterov"):
        qb.optim.SGD(0.1, nesterov=True)


def test_vmap_kwargs_axis_size_and_jit_options():
    close(qb.vmap(lambda x, y=1.0: x * y)(qb.ones(2), y=qb.arange(2.0)), [0.0, 1.0])
    close(qb.vmap(lambda x, *, scale: x * scale, in_axes=(None,))(qb.ones(2), scale=qb.arange(3.0)),
          np.outer(np.arange(3.0), np.ones(2)))
    close(qb.vmap(lambda x: x + 1.0, in_axes=None, axis_size=3)(qb.ones(2)), np.full((3, 2), 2.0))
    close(qb.vmap(lambda x: x * 2, axis_size=2)(qb.ones(2)), [2.0, 2.0])
    with pytest.raises(ValueError, match="axis_size"):
        qb.vmap(lambda x: x, axis_size=3)(qb.ones(2))
    close(qb.jit(lambda x: x + 1, donate_argnums=0)(qb.ones(2)), [2.0, 2.0])
    close(qb.jit(lambda x: x + 1, backend="cpu", keep_unused=True)(qb.ones(2)), [2.0, 2.0])
    assert qb.ones(3).astype(qb.float32, copy=False).dtype == qb.float32
    close(qb.einsum("ij,j->i", qb.asarray(A), qb.ones(4), optimize="greedy"), A.sum(1))


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match="inplace=False"):
        qb.fill_diagonal(qb.zeros((2, 2)), 1.0)
    with pytest.raises(TypeError, match="integers"):
        qb.gcd(qb.asarray([1.0]), qb.asarray([2.0]))
    with pytest.raises(IndexError, match="out of bounds"):
        qb.delete(qb.arange(3.0), 5)
    with pytest.raises(ValueError, match="signature"):
        qb.vectorize(lambda a: a, signature="(n)->")
    with pytest.raises(ValueError, match="functions"):
        qb.piecewise(qb.ones(3), [qb.ones(3) > 0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="order"):
        qb.reshape(qb.ones(4), (2, 2), order="K")
    with pytest.raises(TypeError, match="static"):
        qb.jit(lambda i: qb.delete(qb.arange(3.0), i))(qb.asarray(1))


def test_review_edges():
    # Masked terms give zero gradients, not NaN, even when their logits are huge.
    g = qb.grad(lambda a: qb.nn.logsumexp(a, where=qb.asarray([True, False])))(qb.asarray([0.0, 1000.0]))
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0])
    gs = qb.grad(lambda a: qb.nn.softmax(a, where=qb.asarray([True, False, True]))[0])(qb.asarray([0.0, 1000.0, 1.0]))
    assert np.all(np.isfinite(gs.numpy())) and gs.numpy()[1] == 0.0
    close(qb.lax.round(qb.asarray([0.49999999999999994, 4503599627370497.0, -2.5, 2.5])),
          [0.0, 4503599627370497.0, -3.0, 3.0], rtol=0)
    close(qb.lax.round(qb.asarray(np.float32([0.49999997, 8388609.0]))), np.float32([0.0, 8388609.0]), rtol=0)
    assert qb.lax.reduce_sum(qb.asarray([1, 2], dtype=qb.int32), (0,)).dtype == qb.int32
    assert int(qb.lax.reduce_and(qb.asarray([6, 3]), (0,)).item()) == 2
    assert int(qb.lax.reduce_or(qb.asarray([6, 1]), (0,)).item()) == 7
    assert qb.lax.map(lambda v: v * 2, qb.zeros((0,)), batch_size=2).shape == (0,)
    assert qb.linalg.trace(qb.ones((2, 2)), dtype=qb.float32).dtype == qb.float32
    close(qb.linspace(-5, 0, 4, dtype=qb.int64), np.linspace(-5, 0, 4, dtype=np.int64))
    close(qb.pad(qb.asarray([0, 0]), (3, 0), mode="linear_ramp", end_values=-10),
          np.pad([0, 0], (3, 0), mode="linear_ramp", end_values=-10))
    close(qb.pad(qb.asarray([-1, -2]), 1, mode="mean"), np.pad([-1, -2], 1, mode="mean"))
    f32 = qb.asarray(np.float32([1.0]))
    assert qb.nextafter(f32, 2.0).dtype == qb.float32 and qb.linspace(f32, 1.0, 3).dtype == qb.float32
    assert qb.gcd(qb.asarray([12], dtype=qb.int32), 8).dtype == qb.int32
    close(qb.delete(qb.arange(4.0), np.int64(1)), [0.0, 2.0, 3.0])
    close(qb.delete(qb.arange(4.0), np.array([0, 1])), [2.0, 3.0])
    close(qb.linspace(0.0, 1.0, np.int64(3), retstep=True), (np.linspace(0.0, 1.0, 3), 0.5))
    for bad in (lambda: qb.delete(qb.ones((2, 2)), 0, axis=2), lambda: qb.insert(qb.ones((2, 2)), 0, 5.0, axis=2),
                lambda: qb.apply_along_axis(qb.sum, 3, qb.ones((2, 2, 2)))):
        with pytest.raises(ValueError, match="out of range"):
            bad()
    assert (qb.float32 == None) is False  # noqa: E711 (NumPy's answer, not a TypeError)


def test_block_isdtype_and_ndarray():
    e, z = np.eye(2), np.zeros((2, 2))
    close(qb.block([[qb.eye(2), qb.zeros((2, 2))], [qb.zeros((2, 2)), qb.eye(2)]]), np.block([[e, z], [z, e]]))
    close(qb.block([qb.ones(2), qb.zeros(3)]), np.block([np.ones(2), np.zeros(3)]))
    close(qb.block([[qb.ones((2, 1)), qb.zeros((2, 2))], [qb.ones((1, 3))]]),
          np.block([[np.ones((2, 1)), np.zeros((2, 2))], [np.ones((1, 3))]]))
    close(qb.block([[1.0, 2.0], [3.0, 4.0]]), np.block([[1.0, 2.0], [3.0, 4.0]]))
    import quabla.numpy as jnp
    assert isinstance(qb.ones(2), jnp.ndarray)
    assert qb.isdtype(qb.float32, "real floating") and qb.isdtype(qb.int32, ("bool", "integral"))
    assert not qb.isdtype(qb.float32, qb.float64) and not qb.isdtype(qb.int64, "unsigned integer")


def test_sequences_holding_numpy_arrays():
    close(qb.asarray([np.array([1.0, 2.0])]), [[1.0, 2.0]])
    assert qb.asarray([[1, 2], np.array([3, 4])]).dtype == qb.int64
    mixed = qb.asarray([np.array([1, 2]), np.array([3.0, 4.0])])  # NumPy's promotion
    assert mixed.dtype == qb.float64
    close(mixed, [[1.0, 2.0], [3.0, 4.0]])
    close(qb.asarray([qb.ones(2), np.zeros(2)]), [[1.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError):
        qb.asarray([np.ones(2), np.ones(3)])


def _reference_attention(q, k, v, bias=None, mask=None, scale=None, is_causal=False):
    n, kv = q.shape[2], k.shape[2]
    k, v = np.repeat(k, n // kv, axis=2), np.repeat(v, n // kv, axis=2)
    s = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("btnh,bsnh->bnts", q, k) * s + (0.0 if bias is None else bias)
    keep = np.ones(logits.shape, bool) if mask is None else np.broadcast_to(mask, logits.shape)
    if is_causal:
        keep = keep & (np.arange(logits.shape[-2])[:, None] >= np.arange(logits.shape[-1])[None, :])
    logits = np.where(keep, logits, -np.inf)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return np.einsum("bnts,bsnh->btnh", p / p.sum(-1, keepdims=True), v)


def test_dot_product_attention_and_sparse_activations():
    gen = np.random.default_rng(1)
    q, k, v = gen.normal(size=(2, 6, 4, 8)), gen.normal(size=(2, 6, 2, 8)), gen.normal(size=(2, 6, 2, 8))
    bias = np.random.default_rng(2).normal(size=(2, 4, 6, 6))
    mask = np.random.default_rng(3).uniform(size=(2, 4, 6, 6)) > 0.3
    for kw in (dict(), dict(bias=bias), dict(mask=mask), dict(scale=0.3), dict(is_causal=True)):
        qkw = {name: (qb.asarray(val) if isinstance(val, np.ndarray) else val) for name, val in kw.items()}
        got = qb.nn.dot_product_attention(qb.asarray(q), qb.asarray(k), qb.asarray(v), **qkw).numpy()
        np.testing.assert_allclose(got, _reference_attention(q, k, v, **kw), rtol=1e-13, atol=1e-14)
    one = qb.nn.dot_product_attention(qb.asarray(q[0]), qb.asarray(k[0]), qb.asarray(v[0])).numpy()
    np.testing.assert_allclose(one, _reference_attention(q[:1], k[:1], v[:1])[0], rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="multiple"):
        qb.nn.dot_product_attention(qb.ones((1, 2, 3, 4)), qb.ones((1, 2, 2, 4)), qb.ones((1, 2, 2, 4)))
    x = np.linspace(-2, 2, 9)
    close(qb.nn.sparse_plus(qb.asarray(x)), np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)))
    close(qb.nn.sparse_sigmoid(qb.asarray(x)), np.clip((x + 1) / 2, 0, 1))


def test_float32_inputs_stay_float32():
    x = qb.asarray(np.float32([-0.0, 1.0, -2.0]))
    assert qb.signbit(x).numpy().tolist() == [True, False, True]
    c = qb.copysign(qb.ones(3, dtype=qb.float32), x)
    assert c.dtype == qb.float32 and c.numpy().tolist() == [-1.0, 1.0, -1.0]
    assert qb.modf(x)[1].dtype == qb.float32
    assert qb.logspace(qb.asarray(np.float32([0.0, 1.0])), 2.0, 3).dtype == qb.float32
    close(qb.logspace(0, 2, 3), np.logspace(0, 2, 3))


def test_scalar_and_missing_argument_errors_are_clear():
    s = qb.asarray(2.5)
    for call, exc, text in [
        (lambda: qb.polyval(s, s), ValueError, "1-D sequence"),
        (lambda: qb.nn.glu(s), ValueError, "at least one dimension"),
        (lambda: qb.lax.dynamic_index_in_dim(s, 0), ValueError, "out of range"),
        (lambda: qb.linalg.cross(s, s), ValueError, "length 3"),
        (lambda: qb.linalg.matrix_transpose(qb.ones(3)), ValueError, "two dimensions"),
        (lambda: qb.histogram(qb.ones(3), bins=qb.ones((2, 2))), ValueError, "1-D array of edges"),
        (lambda: qb.reshape(qb.ones(4)), TypeError, "missing the shape"),
    ]:
        with pytest.raises(exc, match=text):
            call()


def test_nextafter_promotes_mixed_float_arrays_as_jax():
    got = qb.nextafter(qb.asarray(np.float32([1.0])), qb.asarray([2.0]))
    assert got.dtype == qb.float64
    np.testing.assert_array_equal(got.numpy(), np.nextafter(np.float64(1.0), 2.0))
