"""qb.laplacian and qb.taylor: the collapsed Taylor-mode transform (transforms/taylor.h).

Values against the trace of qb.hessian (float64, 1e-12 relative) for MLPs of several
activations and depths in dimensions 1..100; every op of ops.def through the op table
against nested forward-mode derivatives; the biharmonic against four nested grads; higher
orders against nested grads; derivatives through the operator against central differences
and against the same loss written with hessian; composition with jit, vmap, grad, control
flow; errors.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import quabla as qb

from ad_op_table import CASES

NP = np.asarray

ACTIVATIONS = {
    "tanh": qb.tanh, "sin": qb.sin, "softplus": qb.softplus, "sigmoid": qb.sigmoid, "silu": qb.silu,
    "gelu": qb.gelu, "exp": lambda z: qb.exp(0.3 * z), "cube": lambda z: z * z * z,
}


def _mlp_params(rng, sizes):
    return [(qb.array(rng.normal(0, 1 / math.sqrt(a), (a, b))), qb.array(rng.normal(0, 0.3, b)))
            for a, b in zip(sizes[:-1], sizes[1:])]


def _mlp(act):
    def u(params, x):
        h = x
        for w, b in params[:-1]:
            h = act(h @ w + b)
        w, b = params[-1]
        return (h @ w + b)[0]
    return u


def _hessian_trace(f, x):
    return float(np.trace(NP(qb.hessian(f)(x)).reshape(x.size, x.size)))


@pytest.mark.parametrize("act", sorted(ACTIVATIONS))
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_mlp_laplacian_equals_the_hessian_trace(act, depth):
    rng = np.random.default_rng(depth * 31 + len(act))
    for dim in (1, 2, 7):
        params = _mlp_params(rng, [dim] + [12] * depth + [1])
        u = _mlp(ACTIVATIONS[act])
        x = qb.array(rng.uniform(-1, 1, dim))
        f = lambda x: u(params, x)
        lap = qb.laplacian(f)(x)
        assert lap.shape == () and lap.dtype == qb.float64
        ref = _hessian_trace(f, x)
        np.testing.assert_allclose(float(lap), ref, rtol=1e-12, atol=1e-12 * max(1.0, abs(ref)))


@pytest.mark.parametrize("dim", [30, 100])
def test_high_dimensional_laplacian_equals_the_hessian_trace(dim):
    rng = np.random.default_rng(dim)
    params = _mlp_params(rng, [dim, 32, 32, 1])
    u = _mlp(qb.tanh)
    xs = qb.array(rng.uniform(-1, 1, (3, dim)))
    lap = qb.vmap(qb.laplacian(u, argnums=1), in_axes=(None, 0))(params, xs)
    for i in range(3):
        ref = _hessian_trace(lambda x: u(params, x), xs[i])
        np.testing.assert_allclose(float(lap[i]), ref, rtol=1e-12, atol=1e-13)


def test_array_argument_of_any_shape_and_vector_outputs():
    rng = np.random.default_rng(1)
    a = qb.array(rng.normal(size=(2, 3)))

    def f(x):  # x: [2, 3] -> [4]: each output element has its own Laplacian
        s = qb.sum(qb.sin(x * a), axis=1)
        return qb.stack([s[0] * s[1], qb.exp(s[0]), qb.sum(x ** 3), qb.prod(x)])

    x = qb.array(rng.uniform(-1, 1, (2, 3)))
    lap = NP(qb.laplacian(f)(x))
    ref = [np.trace(NP(qb.hessian(lambda x, i=i: f(x)[i])(x)).reshape(6, 6)) for i in range(4)]
    assert lap.shape == (4,)
    np.testing.assert_allclose(lap, ref, rtol=1e-12, atol=1e-13)


def test_pytree_argument_sums_over_every_leaf():
    rng = np.random.default_rng(2)
    p = {"a": qb.array(rng.uniform(-1, 1, 3)), "b": qb.array(rng.uniform(-1, 1, (2, 2)))}

    def f(p):
        return qb.sum(qb.sin(p["a"])) * qb.sum(p["b"] ** 2) + qb.tanh(p["a"][0] * p["b"][1, 1])

    flat = lambda z: f({"a": z[:3], "b": qb.reshape(z[3:], (2, 2))})
    z = qb.concatenate([p["a"], qb.ravel(p["b"])])
    np.testing.assert_allclose(float(qb.laplacian(f)(p)), _hessian_trace(flat, z), rtol=1e-12)


def test_pytree_outputs_keep_their_structure_and_integers_get_zeros():
    x = qb.array([0.3, -0.7])
    out = qb.laplacian(lambda x: {"s": qb.sum(x ** 4), "v": qb.sin(x), "i": qb.argmax(x)})(x)
    assert set(out) == {"s", "v", "i"}
    np.testing.assert_allclose(float(out["s"]), float(qb.sum(12 * x ** 2)), rtol=1e-14)
    np.testing.assert_allclose(NP(out["v"]), -np.sin(NP(x)), rtol=1e-14)
    assert out["i"].dtype == qb.int32 or out["i"].dtype == qb.int64
    assert int(out["i"]) == 0


def test_float32_programs_stay_float32():
    rng = np.random.default_rng(3)
    with qb.set_default_dtype(qb.float32):
        params = [(qb.array(rng.normal(0, 0.5, (3, 8)), dtype=qb.float32), qb.zeros(8)),
                  (qb.array(rng.normal(0, 0.5, (8, 1)), dtype=qb.float32), qb.zeros(1))]
    x = qb.array([0.1, 0.2, -0.3], dtype=qb.float32)
    f = lambda x: _mlp(qb.tanh)(params, x)
    lap = qb.laplacian(f)(x)
    assert lap.dtype == qb.float32
    np.testing.assert_allclose(float(lap), _hessian_trace(f, x), rtol=1e-5)


# ---- every op of the op table ---------------------------------------------------------


def _nested_second(f, x, v):
    """d^2/dt^2 f(x + t v) at t = 0 by forward over forward (qb.jvp twice)."""
    return qb.jvp(lambda y: qb.jvp(f, (y,), (v,))[1], (x,), (v,))[1]


@pytest.mark.parametrize("case", [c for c in CASES if not c.reverse_only], ids=lambda c: c.op)
def test_every_op_matches_nested_forward_mode(case):
    """The collapsed second-order coefficient along three weighted random directions over
    all of an entry's arguments (as one pytree) equals the weighted sum of nested-jvp second
    directional derivatives; the first-order ones equal jvp's."""
    args = tuple(case.args())
    f = lambda xs: case.fn(*xs)
    rng = np.random.default_rng(len(case.op))
    dirs = tuple(qb.array(rng.normal(size=(3,) + a.shape)) for a in args)
    w = np.array([1.0, -0.5, 2.0])
    got = NP(qb.taylor(f, dirs, weights=w)(args))
    ref = sum(w[k] * NP(_nested_second(f, args, tuple(d[k] for d in dirs))) for k in range(3))
    scale = max(1.0, float(np.max(np.abs(ref)))) if np.size(ref) else 1.0
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10 * scale, err_msg=case.op)
    first = NP(qb.taylor(f, dirs, weights=w, order=1)(args))
    ref1 = sum(w[k] * NP(qb.jvp(f, (args,), (tuple(d[k] for d in dirs),))[1]) for k in range(3))
    np.testing.assert_allclose(first, ref1, rtol=1e-12, atol=1e-12 * scale, err_msg=case.op)


def test_custom_vjp_has_no_forward_mode_and_says_so():
    case = next(c for c in CASES if c.op == "custom_vjp")
    with pytest.raises(Exception, match="(?i)custom_vjp|forward"):
        qb.laplacian(case.fn)(*case.args())


# ---- higher orders -----------------------------------------------------------------------


def _nested_grads(f, x, axes):
    g = f
    for a in axes:
        g = (lambda g, a: (lambda x: qb.grad(g)(x)[a]))(g, a)
    return float(g(x))


def test_biharmonic_is_laplacian_of_laplacian_and_matches_four_nested_grads():
    f = lambda x: qb.sin(x[0] * x[1]) * qb.exp(x[2]) + qb.tanh(qb.sum(x)) * x[0] ** 3
    x = qb.array([0.3, -0.4, 0.2])
    got = float(qb.laplacian(qb.laplacian(f))(x))
    ref = sum(_nested_grads(f, x, (i, i, j, j)) for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, ref, rtol=1e-11)


def test_taylor_orders_one_to_five_in_one_dimension():
    u = lambda x: qb.sin(2 * x) * qb.exp(0.5 * x) + x ** 5 / (1 + x * x)
    x = qb.array(0.7)
    g = u
    for order in range(1, 6):
        g = qb.grad(g)
        ref = float(g(x))
        got = float(qb.taylor(u, qb.array([1.0]), order=order)(x))
        np.testing.assert_allclose(got, ref, rtol=1e-11, err_msg=f"order {order}")
        # two directions with weights: sum_k w_k v_k^order u^(order)
        got2 = float(qb.taylor(u, qb.array([2.0, -1.0]), weights=[0.25, 3.0], order=order)(x))
        np.testing.assert_allclose(got2, (0.25 * 2.0 ** order + 3.0 * (-1.0) ** order) * ref, rtol=1e-11)


def test_fourth_order_along_directions_in_two_dimensions():
    f = lambda x: qb.exp(x[0]) * qb.sin(x[1]) + x[0] ** 2 * x[1] ** 3
    x = qb.array([0.4, -0.3])
    v = np.array([[1.0, 0.0], [0.6, 0.8]])
    got = float(qb.taylor(f, qb.array(v), order=4)(x))

    def along(f, v):
        return lambda x: qb.jvp(f, (x,), (qb.array(v),))[1]
    ref = 0.0
    for k in range(2):
        g = f
        for _ in range(4):
            g = along(g, v[k])
        ref += float(g(x))
    np.testing.assert_allclose(got, ref, rtol=1e-11)


def test_diffusion_tensor_operator_is_trace_of_a_times_hessian():
    rng = np.random.default_rng(5)
    b = rng.normal(size=(4, 4))
    a = b @ b.T - 2.0 * np.eye(4)  # symmetric, indefinite
    lam, q = np.linalg.eigh(a)
    f = lambda x: qb.sum(qb.tanh(x)) * qb.sin(x[0] - x[3]) + qb.prod(x)
    x = qb.array(rng.uniform(-1, 1, 4))
    got = float(qb.taylor(f, qb.array(q.T), weights=lam)(x))
    ref = float(np.sum(a * NP(qb.hessian(f)(x))))
    np.testing.assert_allclose(got, ref, rtol=1e-12)


# ---- composition -------------------------------------------------------------------------


def _poisson_losses():
    rng = np.random.default_rng(8)
    params = _mlp_params(rng, [2, 10, 10, 1])
    u = _mlp(qb.tanh)
    xs = qb.array(rng.uniform(0, 1, (16, 2)))

    def loss_lap(params, xs):
        lap = qb.vmap(qb.laplacian(u, argnums=1), in_axes=(None, 0))(params, xs)
        return qb.mean((lap + qb.sin(xs[:, 0])) ** 2)

    def loss_hess(params, xs):
        tr = qb.vmap(lambda p, x: qb.trace(qb.hessian(u, argnums=1)(p, x)), in_axes=(None, 0))(params, xs)
        return qb.mean((tr + qb.sin(xs[:, 0])) ** 2)
    return params, xs, loss_lap, loss_hess


def test_training_gradient_equals_the_hessian_formulation_and_finite_differences():
    params, xs, loss_lap, loss_hess = _poisson_losses()
    v1, g1 = qb.jit(qb.value_and_grad(loss_lap))(params, xs)
    v2, g2 = qb.value_and_grad(loss_hess)(params, xs)
    np.testing.assert_allclose(float(v1), float(v2), rtol=1e-12)
    for a, b in zip(qb.tree.leaves(g1), qb.tree.leaves(g2)):
        np.testing.assert_allclose(NP(a), NP(b), rtol=1e-10, atol=1e-13)
    # central differences on a few weights of the first layer
    w0 = NP(params[0][0])
    h = 1e-6
    for (i, j) in [(0, 0), (1, 3), (0, 7)]:
        def at(delta):
            w = w0.copy()
            w[i, j] += delta
            p = [(qb.array(w), params[0][1])] + list(params[1:])
            return float(loss_lap(p, xs))
        fd = (at(h) - at(-h)) / (2 * h)
        np.testing.assert_allclose(float(NP(g1[0][0])[i, j]), fd, rtol=1e-6, atol=1e-9)


def test_forward_over_the_laplacian_equals_reverse():
    params, xs, loss_lap, _ = _poisson_losses()
    x = xs[3]
    f = lambda x: qb.laplacian(lambda z: _mlp(qb.tanh)(params, z))(x)
    g_rev = NP(qb.grad(f)(x))
    g_fwd = NP(qb.jacfwd(f)(x))
    np.testing.assert_allclose(g_rev, g_fwd, rtol=1e-12, atol=1e-14)
    # the gradient of the Laplacian is the Laplacian of the gradient
    g_lap = NP(qb.laplacian(qb.grad(lambda z: _mlp(qb.tanh)(params, z)))(x))
    np.testing.assert_allclose(g_rev, g_lap, rtol=1e-11, atol=1e-13)


def test_control_flow_inside_the_operator():
    def f(x):
        y = qb.fori_loop(0, 3, lambda i, y: qb.sin(y) * x + y * 0.5, x)
        y = qb.cond(qb.sum(x) > 0, lambda y: y ** 3, lambda y: qb.exp(y), y)

        def body(c, xi):
            c = qb.tanh(c * xi + 0.1)
            return c, c * c
        c, ys = qb.scan(body, 0.2, y)
        return c + qb.sum(ys)

    for x in (qb.array([0.3, -0.2, 0.5]), qb.array([-0.3, -0.2, 0.1])):
        np.testing.assert_allclose(float(qb.jit(qb.laplacian(f))(x)), _hessian_trace(f, x), rtol=1e-11)


def test_closures_over_tracers_of_an_enclosing_transform():
    # d/da of the Laplacian of sin(a x) in x: the closure's a is differentiated by grad.
    def lap_of(a, x):
        return qb.laplacian(lambda x: qb.sum(qb.sin(a * x)))(x)
    a, x = qb.array(0.7), qb.array([0.2, 0.5])
    got = float(qb.grad(lap_of)(a, x))
    xn = NP(x)
    ref = float(np.sum(-2 * a.item() * np.sin(a.item() * xn) - a.item() ** 2 * xn * np.cos(a.item() * xn)))
    np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_the_program_has_no_hessian_in_it():
    """The collapsed pass carries K first-order coefficients and one second-order one: the
    compiled Laplacian of a D-input MLP does fewer matrix-product FLOPs than the Hessian."""
    rng = np.random.default_rng(9)
    params = _mlp_params(rng, [20, 32, 32, 1])
    u = _mlp(qb.tanh)
    xs = qb.array(rng.uniform(-1, 1, (8, 20)))
    lap = qb.jit(qb.vmap(qb.laplacian(u, argnums=1), in_axes=(None, 0)))
    hes = qb.jit(qb.vmap(lambda p, x: qb.trace(qb.hessian(u, argnums=1)(p, x)), in_axes=(None, 0)))
    fl = lap.lower(params, xs).compile().stats()["matmul_flops"]
    fh = hes.lower(params, xs).compile().stats()["matmul_flops"]
    assert fl < 0.5 * fh, (fl, fh)
    np.testing.assert_allclose(NP(lap(params, xs)), NP(hes(params, xs)), rtol=1e-11)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_random_directions_and_weights(dim, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    f = lambda x: qb.sum(qb.sin(qb.array(a) @ x) * qb.exp(0.2 * x)) + qb.sum(x) ** 3
    x = qb.array(rng.uniform(-1, 1, dim))
    v = rng.normal(size=(k, dim))
    w = rng.normal(size=k)
    got = float(qb.taylor(f, qb.array(v), weights=w)(x))
    hess = NP(qb.hessian(f)(x))
    ref = float(sum(w[i] * v[i] @ hess @ v[i] for i in range(k)))
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-11)


# ---- errors ------------------------------------------------------------------------------


def test_errors_are_clear():
    f = lambda x: qb.sum(x ** 2)
    x = qb.array([1.0, 2.0])
    with pytest.raises(TypeError, match="callable"):
        qb.laplacian(3)
    with pytest.raises(TypeError, match="argnums must be one int"):
        qb.laplacian(f, argnums=(0,))(x)
    with pytest.raises(ValueError, match="out of range"):
        qb.laplacian(f, argnums=2)(x)
    with pytest.raises(TypeError, match="float arrays"):
        qb.laplacian(lambda i: qb.sum(i * 1.0))(qb.array([1, 2]))
    with pytest.raises(TypeError, match="must return arrays"):
        qb.laplacian(lambda x: "nope")(x)
    with pytest.raises(ValueError, match=r"shape \(K,\)"):
        qb.taylor(f, qb.array([1.0, 2.0, 3.0]))(x)
    with pytest.raises(ValueError, match="weights must have shape"):
        qb.taylor(f, qb.array([[1.0, 0.0]]), weights=[1.0, 2.0])(x)
    with pytest.raises(ValueError, match="order must be a positive int"):
        qb.taylor(f, qb.array([[1.0, 0.0]]), order=0)
    with pytest.raises(ValueError, match="at least one direction"):
        qb.taylor(f, qb.zeros((0, 2)))(x)
    with pytest.raises(ValueError, match="structure"):
        qb.taylor(lambda p: qb.sum(p["a"]), {"b": qb.zeros((1, 2))})({"a": x})
    # the laplacian of x with no array in it
    with pytest.raises(ValueError, match="no arrays"):
        qb.laplacian(lambda t: qb.sum(x) * 2.0)(())


@pytest.mark.parametrize("case", [c for c in CASES if not c.reverse_only and not c.forward_only], ids=lambda c: c.op)
def test_every_op_reverse_mode_through_the_operator_equals_forward_mode(case):
    """Training differentiates through the operator in reverse mode: for every op, the
    gradient of the collapsed coefficient (summed) dotted with a direction equals its jvp."""
    args = tuple(case.args())
    rng = np.random.default_rng(len(case.op) + 1)
    dirs = tuple(qb.array(rng.normal(size=(2,) + a.shape)) for a in args)
    op = qb.taylor(lambda xs: case.fn(*xs), dirs)
    loss = lambda xs: qb.sum(op(xs))
    g = qb.grad(loss)(args)
    u = tuple(qb.array(rng.normal(size=a.shape)) for a in args)
    fwd = float(qb.jvp(loss, (args,), (u,))[1])
    rev = float(sum(np.sum(NP(gi) * NP(ui)) for gi, ui in zip(g, u)))
    np.testing.assert_allclose(rev, fwd, rtol=1e-9, atol=1e-9 * max(1.0, abs(fwd)), err_msg=case.op)


def test_many_coordinates_run_in_chunks_of_directions(monkeypatch):
    import quabla._taylor as taylor_module
    monkeypatch.setattr(taylor_module, "LAPLACIAN_CHUNK", 4)
    rng = np.random.default_rng(11)
    a = qb.array(rng.normal(size=(3, 3)))
    f = lambda p: qb.sum(qb.tanh(p["x"] @ a) * p["y"][0]) + qb.sum(p["y"] ** 3)
    p = {"x": qb.array(rng.uniform(-1, 1, (2, 3))), "y": qb.array(rng.uniform(-1, 1, 5))}  # 11 coordinates
    flat = lambda z: f({"x": qb.reshape(z[:6], (2, 3)), "y": z[6:]})
    z = qb.concatenate([qb.ravel(p["x"]), p["y"]])
    np.testing.assert_allclose(float(qb.laplacian(f)(p)), _hessian_trace(flat, z), rtol=1e-12)
    np.testing.assert_allclose(float(qb.jit(qb.laplacian(f))(p)), _hessian_trace(flat, z), rtol=1e-12)


def test_empty_arguments_have_a_zero_laplacian():
    out = qb.laplacian(lambda x: qb.sum(x) + 1.0)(qb.zeros((0, 3)))
    assert float(out) == 0.0
