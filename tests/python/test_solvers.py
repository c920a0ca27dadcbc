"""Iterative solvers, Newton and the implicit-differentiation building blocks
(qb.custom_linear_solve, qb.custom_root): values against SciPy and dense solves,
derivatives against central differences and against differentiating unrolled iterations."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl
from hypothesis import given, settings
from hypothesis import strategies as st

import quabla as qb
from difference_helpers import central


def poisson(n):
    """The 2D 5-point Laplacian on an n x n grid (Dirichlet), matrix-free and as SciPy's."""
    def matvec(u):
        p = qb.pad(u.reshape(n, n), 1)
        return (4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]).reshape(-1)
    t = sp.diags([4 * np.ones(n), -np.ones(n - 1), -np.ones(n - 1)], [0, 1, -1])
    off = sp.diags([-np.ones(n - 1), -np.ones(n - 1)], [1, -1])
    return matvec, (sp.kron(sp.eye(n), t) + sp.kron(off, sp.eye(n))).tocsr()


def convection_diffusion(n, c=0.3):
    """A nonsymmetric operator: 1D diffusion plus upwind convection, n unknowns."""
    main = (2 + c) * np.ones(n)
    a = sp.diags([main, -np.ones(n - 1), -(1 + c) * np.ones(n - 1)], [0, 1, -1]).tocsr()
    dense = qb.array(a.toarray())
    return (lambda x: dense @ x), a


def scipy_iterations(solver, a, b, **kw):
    count = [0]
    if solver is spl.gmres:
        kw.setdefault("callback_type", "pr_norm")
    x, _ = solver(a, b, callback=lambda *_: count.__setitem__(0, count[0] + 1), **kw)
    return x, count[0]


@pytest.mark.parametrize("n", [16, 40])
def test_cg_matches_scipy_iterations_and_residual(n):
    mv, a = poisson(n)
    b = np.random.default_rng(n).normal(size=n * n)
    x, info = qb.linalg.cg(mv, qb.array(b), tol=1e-8, info=True)
    xs, its = scipy_iterations(spl.cg, a, b, rtol=1e-8)
    assert abs(int(info.iterations) - its) <= 2
    assert bool(info.converged)
    r = np.linalg.norm(b - a @ np.asarray(x))
    assert r <= 1e-8 * np.linalg.norm(b) and abs(float(info.residual_norm) - r) <= 1e-6 * np.linalg.norm(b)
    np.testing.assert_allclose(np.asarray(x), xs, atol=1e-9 * np.abs(xs).max() * n)


@pytest.mark.parametrize("restart", [5, 20])
def test_gmres_matches_scipy_on_a_nonsymmetric_operator(restart):
    mv, a = convection_diffusion(120)
    b = np.random.default_rng(restart).normal(size=120)
    x, info = qb.linalg.gmres(mv, qb.array(b), tol=1e-8, restart=restart, info=True)
    xs, its = scipy_iterations(spl.gmres, a, b, rtol=1e-8, restart=restart)
    assert abs(int(info.iterations) - its) <= 2
    assert bool(info.converged)
    np.testing.assert_allclose(np.asarray(x), spl.spsolve(a.tocsc(), b), rtol=1e-6, atol=1e-8)


def test_bicgstab_converges_like_scipy():
    mv, a = convection_diffusion(200)
    b = np.random.default_rng(3).normal(size=200)
    x, info = qb.linalg.bicgstab(mv, qb.array(b), tol=1e-8, info=True)
    _xs, its = scipy_iterations(spl.bicgstab, a, b, rtol=1e-8)
    assert bool(info.converged)
    assert np.linalg.norm(b - a @ np.asarray(x)) <= 1e-8 * np.linalg.norm(b)
    # BiCGSTAB's trajectory depends on rounding; on this operator it stays within a couple.
    assert abs(int(info.iterations) - its) <= 2


def test_matrix_operator_pytrees_x0_preconditioner_and_args():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(6, 6))
    spd = m @ m.T + 6 * np.eye(6)
    ref = np.linalg.solve(spd, np.arange(6.0))
    # A matrix operator, the default info placeholder None, as JAX.
    x, info = qb.linalg.cg(qb.array(spd), qb.array(np.arange(6.0)), tol=1e-12)
    assert info is None
    np.testing.assert_allclose(np.asarray(x), ref, rtol=1e-9)
    # A pytree right-hand side and operator; x0; a Jacobi preconditioner; args.
    d = np.diag(spd)

    def op(tree, scale):
        v = qb.concatenate([tree["a"], tree["b"]])
        w = scale * (qb.array(spd) @ v)
        return {"a": w[:2], "b": w[2:]}
    b = {"a": qb.array([0.0, 1.0]), "b": qb.array([2.0, 3.0, 4.0, 5.0])}
    pre = lambda t: {"a": t["a"] / qb.array(d[:2]), "b": t["b"] / qb.array(d[2:])}
    for solver in (qb.linalg.cg, qb.linalg.gmres, qb.linalg.bicgstab):
        x, info = solver(op, b, {"a": qb.ones(2), "b": qb.ones(4)}, args=(qb.asarray(2.0),), M=pre, tol=1e-12,
                         info=True)
        got = np.concatenate([np.asarray(x["a"]), np.asarray(x["b"])])
        np.testing.assert_allclose(got, ref / 2, rtol=1e-8, err_msg=solver.__name__)
        assert bool(info.converged)


def test_zero_right_hand_side_and_maxiter():
    mv, _ = poisson(8)
    for solver in (qb.linalg.cg, qb.linalg.gmres, qb.linalg.bicgstab):
        x, info = solver(mv, qb.zeros(64), info=True)
        assert np.all(np.asarray(x) == 0) and int(info.iterations) == 0 and bool(info.converged)
    x, info = qb.linalg.cg(mv, qb.ones(64), tol=1e-12, maxiter=3, info=True)
    assert int(info.iterations) == 3 and not bool(info.converged)
    assert float(info.residual_norm) > 1e-6


def test_solver_argument_errors():
    mv, _ = poisson(4)
    b = qb.ones(16)
    with pytest.raises(ValueError, match="cg: tol must be a number >= 0"):
        qb.linalg.cg(mv, b, tol=-1.0)
    with pytest.raises(ValueError, match="maxiter must be a non-negative int"):
        qb.linalg.gmres(mv, b, maxiter=1.5)
    with pytest.raises(ValueError, match="restart must be a positive int"):
        qb.linalg.gmres(mv, b, restart=0)
    with pytest.raises(ValueError, match="square matrix"):
        qb.linalg.cg(qb.ones((3, 4)), qb.ones(3))
    with pytest.raises(TypeError, match="b.* must be floating point"):
        qb.linalg.cg(mv, qb.ones(16, dtype=qb.int32))
    with pytest.raises(ValueError, match="x0 must have b's structure"):
        qb.linalg.cg(mv, b, qb.ones(15))
    with pytest.raises(TypeError, match="cg: A returned"):
        qb.linalg.cg(lambda x: x[:3], b)
    with pytest.raises(TypeError, match="preconditioner"):
        qb.linalg.bicgstab(mv, b, M=3)
    with pytest.raises(ValueError, match="solve_method"):
        qb.linalg.gmres(mv, b, solve_method="qr")


@pytest.mark.parametrize("solver", ["cg", "gmres", "bicgstab"])
def test_implicit_gradients_against_differences_and_forward_mode(solver):
    rng = np.random.default_rng(1)
    n = 5
    m = rng.normal(size=(n, n))
    base = m @ m.T + n * np.eye(n) if solver == "cg" else m + 2 * n * np.eye(n)
    b0 = rng.normal(size=n)
    fn = getattr(qb.linalg, solver)

    def loss(theta, b):
        a = qb.array(base) + theta * qb.eye(n)
        x, _ = fn(lambda v, a: a @ v, b, args=(a,), tol=1e-13)
        return qb.sum(qb.sin(x))

    theta = qb.asarray(0.7)
    gt, gb = qb.grad(loss, argnums=(0, 1))(theta, qb.array(b0))
    ft = central(lambda t: float(loss(qb.asarray(float(t)), qb.array(b0))), 0.7)
    fb = central(lambda b: float(loss(theta, qb.array(b))), b0)
    np.testing.assert_allclose(float(gt), ft, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(gb), fb, rtol=1e-6, atol=1e-9)
    # Forward mode agrees with reverse.
    d = rng.normal(size=n)
    _, tang = qb.jvp(loss, (theta, qb.array(b0)), (qb.asarray(0.3), qb.array(d)))
    np.testing.assert_allclose(float(tang), 0.3 * float(gt) + np.dot(np.asarray(gb), d), rtol=1e-9)
    # And under jit.
    gj = qb.jit(qb.grad(loss))(theta, qb.array(b0))
    np.testing.assert_allclose(float(gj), float(gt), rtol=1e-12)


def test_cg_gradient_matches_an_unrolled_iteration_and_second_derivatives():
    # A diagonally dominant system: 400 Jacobi sweeps (differentiated through the loop)
    # converge to machine precision, so their derivatives are the exact ones too.
    rng = np.random.default_rng(2)
    n = 6
    off = rng.uniform(-0.2, 0.2, size=(n, n))
    off = (off + off.T) / 2
    np.fill_diagonal(off, 0)
    b0 = rng.normal(size=n)

    def system(theta):
        return qb.array(off) * theta + qb.eye(n) * (2.0 + theta)

    def via_cg(theta, b):
        a = system(theta)
        return qb.linalg.cg(lambda v: a @ v, b, tol=1e-14)[0]

    def via_jacobi(theta, b):
        a = system(theta)
        d = qb.diagonal(a)
        return qb.fori_loop(0, 400, lambda i, x: (b - (a @ x - d * x)) / d, qb.zeros(n))

    def loss(f):
        return lambda theta, b: qb.sum(f(theta, b) ** 3)
    theta, b = qb.asarray(0.5), qb.array(b0)
    for argnums in (0, 1):
        g1 = qb.grad(loss(via_cg), argnums=argnums)(theta, b)
        g2 = qb.grad(loss(via_jacobi), argnums=argnums)(theta, b)
        np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), rtol=1e-8, atol=1e-12)
    # Second derivatives: reverse-over-reverse, forward-over-reverse and the unrolled loop.
    h1 = qb.grad(qb.grad(loss(via_cg)))(theta, b)
    h2 = qb.jacfwd(qb.grad(loss(via_cg)))(theta, b)
    h3 = qb.grad(qb.grad(loss(via_jacobi)))(theta, b)
    np.testing.assert_allclose(float(h1), float(h3), rtol=1e-7)
    np.testing.assert_allclose(float(h2), float(h3), rtol=1e-7)
    hb = qb.hessian(loss(via_cg), argnums=1)(theta, b)
    hb_ref = qb.hessian(lambda b: qb.sum(qb.linalg.solve(system(theta), b) ** 3))(b)
    np.testing.assert_allclose(np.asarray(hb), np.asarray(hb_ref), rtol=1e-8, atol=1e-12)


def test_vmap_gives_per_example_iteration_counts():
    mv, a = poisson(12)
    rng = np.random.default_rng(4)
    bs = rng.normal(size=(4, 144))
    bs[1] = 0.0          # converged at once
    bs[2] = np.asarray(a @ np.ones(144))  # a smooth solution: fewer iterations
    solve = lambda b: qb.linalg.cg(mv, b, tol=1e-10, info=True)
    x, info = qb.vmap(solve)(qb.array(bs))
    for k in range(4):
        xk, ik = solve(qb.array(bs[k]))
        assert int(info.iterations[k]) == int(ik.iterations)
        np.testing.assert_allclose(np.asarray(x[k]), np.asarray(xk), rtol=1e-12, atol=1e-14)
    assert len(set(np.asarray(info.iterations).tolist())) > 1
    # Batched gradients equal per-example ones.
    g = qb.vmap(qb.grad(lambda b: qb.sum(qb.linalg.cg(mv, b, tol=1e-10)[0] ** 2)))(qb.array(bs))
    for k in (0, 3):
        gk = qb.grad(lambda b: qb.sum(qb.linalg.cg(mv, b, tol=1e-10)[0] ** 2))(qb.array(bs[k]))
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(gk), rtol=1e-10)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 2**16), batch=st.sampled_from([(), (2,)]))
def test_custom_linear_solve_matches_dense_solve(n, seed, batch):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, n))
    a = qb.array(m @ m.T + n * np.eye(n))
    b = qb.array(rng.normal(size=batch + (n,)))

    def f(a, b):
        def one(b):
            return qb.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: qb.linalg.solve(a, r),
                                          transpose_solve=lambda vm, r: qb.linalg.solve(a.T, r))
        x = qb.vmap(one)(b) if batch else one(b)
        return qb.sum(qb.tanh(x))

    def g(a, b):
        return qb.sum(qb.tanh(qb.linalg.solve(a, b[..., None])[..., 0]))
    np.testing.assert_allclose(float(f(a, b)), float(g(a, b)), rtol=1e-10, atol=1e-12)
    for argnums in (0, 1):
        np.testing.assert_allclose(np.asarray(qb.grad(f, argnums=argnums)(a, b)),
                                   np.asarray(qb.grad(g, argnums=argnums)(a, b)), rtol=1e-8, atol=1e-10)
    h1 = qb.hessian(f, argnums=1)(a, b)
    h2 = qb.hessian(g, argnums=1)(a, b)
    np.testing.assert_allclose(np.asarray(h1), np.asarray(h2), rtol=1e-7, atol=1e-10)


def test_custom_linear_solve_semantics_and_errors():
    a = qb.array([[4.0, 1.0], [0.5, 3.0]])
    b = qb.array([1.0, 2.0])
    solve = lambda mv, r: qb.linalg.solve(a, r)
    # has_aux: the aux comes back and is not differentiated.
    x, aux = qb.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: (qb.linalg.solve(a, r), qb.sum(r)),
                                    has_aux=True)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(np.asarray(a), [1.0, 2.0]))
    assert float(aux) == 3.0
    # Forward mode without transpose_solve works; reverse mode names what is missing.
    t = qb.jvp(lambda b: qb.custom_linear_solve(lambda x: a @ x, b, solve), (b,), (qb.array([1.0, 0.0]),))[1]
    np.testing.assert_allclose(np.asarray(t), np.linalg.solve(np.asarray(a), [1.0, 0.0]))
    with pytest.raises(ValueError, match="needs transpose_solve"):
        qb.grad(lambda b: qb.sum(qb.custom_linear_solve(lambda x: a @ x, b, solve)))(b)
    with pytest.raises(TypeError, match="matvec must be a function"):
        qb.custom_linear_solve(a, b, solve)
    with pytest.raises(TypeError, match="solve returned structure"):
        qb.custom_linear_solve(lambda x: a @ x, b, lambda mv, r: (r, r))
    with pytest.raises(TypeError, match="must be floating point"):
        qb.custom_linear_solve(lambda x: x, qb.array([1, 2]), lambda mv, r: r)
    with pytest.raises(TypeError, match="with has_aux=True, solve must return a pair"):
        qb.custom_linear_solve(lambda x: a @ x, b, solve, has_aux=True)


def _scalar_newton(f, x0):
    return qb.fori_loop(0, 40, lambda i, x: x - f(x) / qb.grad(f)(x), x0)


def test_custom_root_derivatives_to_third_order_jit_and_vmap():
    def cube_root(a):  # x^3 = a
        return qb.custom_root(lambda x: x ** 3 - a, qb.asarray(1.0), _scalar_newton, lambda g, y: y / g(1.0))
    a = qb.asarray(2.0)
    np.testing.assert_allclose(float(cube_root(a)), 2 ** (1 / 3), rtol=1e-14)
    exact = [(1 / 3) * 2 ** (-2 / 3), (-2 / 9) * 2 ** (-5 / 3), (10 / 27) * 2 ** (-8 / 3)]
    d = cube_root
    for k in range(3):
        d = qb.grad(d)
        np.testing.assert_allclose(float(d(a)), exact[k], rtol=1e-10)
    fwd = qb.jacfwd(qb.jacfwd(cube_root))(a)
    np.testing.assert_allclose(float(fwd), exact[1], rtol=1e-10)
    np.testing.assert_allclose(float(qb.jit(qb.grad(cube_root))(a)), exact[0], rtol=1e-12)
    xs = qb.array([1.0, 8.0, 27.0])
    np.testing.assert_allclose(np.asarray(qb.vmap(qb.grad(cube_root))(xs)), [1 / 3, 1 / 12, 1 / 27], rtol=1e-10)
    # The initial guess gets no derivative.
    g = qb.grad(lambda x0: qb.custom_root(lambda x: x ** 3 - a, x0, _scalar_newton, lambda g, y: y / g(1.0)))(
        qb.asarray(1.5))
    assert float(g) == 0.0


def test_custom_root_errors():
    with pytest.raises(TypeError, match="custom_root: tangent_solve must be a function"):
        qb.custom_root(lambda x: x, qb.asarray(1.0), _scalar_newton, None)
    with pytest.raises(TypeError, match="f must return a value of initial_guess's structure"):
        qb.custom_root(lambda x: (x, x), qb.asarray(1.0), _scalar_newton, lambda g, y: y)


def _system(x, p):
    return qb.stack([x[0] ** 2 + x[1] - p[0], x[0] - x[1] ** 3 - p[1]])


@pytest.mark.parametrize("linear_solver", ["dense", "gmres"])
def test_newton_values_info_and_implicit_jacobians(linear_solver):
    p = qb.array([3.0, 0.5])
    x, info = qb.newton(_system, qb.array([1.0, 1.0]), args=(p,), info=True, linear_solver=linear_solver)
    assert bool(info.converged) and 0 < int(info.iterations) < 10
    assert float(info.residual_norm) <= 1e-10
    np.testing.assert_allclose(np.asarray(_system(x, p)), 0.0, atol=1e-10)
    solve = lambda p: qb.newton(_system, qb.array([1.0, 1.0]), args=(p,), linear_solver=linear_solver)
    jr = np.asarray(qb.jacrev(solve)(p))
    jf = np.asarray(qb.jacfwd(solve)(p))
    fd = central(lambda q: np.asarray(solve(qb.array(q))), np.asarray(p))
    np.testing.assert_allclose(jr, fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jf, jr, rtol=1e-10)
    # Second derivative of a component, against differences of the first.
    h = np.asarray(qb.hessian(lambda p: solve(p)[0])(p))
    hfd = central(lambda q: np.asarray(qb.grad(lambda p: solve(p)[0])(qb.array(q))), np.asarray(p))
    np.testing.assert_allclose(h, hfd, rtol=1e-5, atol=1e-8)


def test_newton_line_search_maxiter_and_errors():
    f = lambda x: qb.arctan(x)  # plain Newton from 2 diverges; halving steps converges
    x, info = qb.newton(f, qb.asarray(2.0), info=True)
    assert not bool(info.converged) or not np.isfinite(float(x))
    x, info = qb.newton(f, qb.asarray(2.0), info=True, line_search=True)
    assert bool(info.converged) and abs(float(x)) <= 1e-10
    x, info = qb.newton(lambda x: x ** 2 - 2.0, qb.asarray(1.0), info=True, maxiter=2)
    assert int(info.iterations) == 2 and not bool(info.converged)
    x = qb.newton(lambda x, a: x ** 2 - a, qb.asarray(1.0, dtype=qb.float32), args=(qb.asarray(2.0, dtype=qb.float32),))
    assert x.dtype == qb.float32 and abs(float(x) - 2 ** 0.5) < 1e-5
    with pytest.raises(ValueError, match="linear_solver must be"):
        qb.newton(f, qb.asarray(1.0), linear_solver="lu")
    with pytest.raises(TypeError, match="args must be a tuple"):
        qb.newton(f, qb.asarray(1.0), args=qb.asarray(1.0))
    with pytest.raises(TypeError, match="newton: f returned"):
        qb.newton(lambda x: qb.stack([x, x]), qb.asarray(1.0))


def test_implicit_euler_heat_equation_gradient_through_200_steps():
    # u_{n+1} = (I - dt k L)^-1 u_n on a 1D grid, each step a cg solve inside fori_loop;
    # reverse mode with respect to the diffusion coefficient k against differences.
    n, dt, steps = 24, 1e-3, 200
    h = 1.0 / (n + 1)
    grid = np.linspace(h, 1 - h, n)
    u0 = qb.array(np.sin(np.pi * grid) + 0.3 * np.sin(3 * np.pi * grid))

    def lap(u):
        p = qb.pad(u, 1)
        return (p[:-2] - 2 * u + p[2:]) / h ** 2

    def final(k):
        def step(i, u):
            return qb.linalg.cg(lambda v: v - dt * k * lap(v), u, x0=u, tol=1e-13)[0]
        return qb.sum(qb.fori_loop(0, steps, step, u0) ** 2)
    k = qb.asarray(0.8)
    g = float(qb.grad(final)(k))
    fd = central(lambda kk: float(final(qb.asarray(float(kk)))), 0.8, eps=1e-5)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    gj = float(qb.jit(qb.grad(final))(k))
    np.testing.assert_allclose(gj, g, rtol=1e-10)


def test_newton_inside_a_loop_reverse_mode():
    # A nonlinear implicit step u_{n+1} - dt (k - u_{n+1}^3) = u_n, solved by newton.
    dt = 0.05

    def final(k):
        def step(i, u):
            return qb.newton(lambda v, u, k: v - dt * (k - v ** 3) - u, u, args=(u, k))
        return qb.sum(qb.fori_loop(0, 50, step, qb.array([0.1, 0.5, -0.3])))
    k = qb.asarray(1.3)
    g = float(qb.grad(final)(k))
    fd = central(lambda kk: float(final(qb.asarray(float(kk)))), 1.3)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
