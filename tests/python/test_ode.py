"""qb.ode.odeint: accuracy against closed forms and SciPy's solve_ivp, step counts,
saveat, pytrees, errors, and derivatives (against central differences, forward against
reverse, second order, vmap against a loop)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import quabla as qb
from difference_helpers import central

A_LIN = np.array([[-0.5, 2.0], [-2.0, -0.5]])


def linear(y, t):
    return qb.array(A_LIN) @ y


def linear_exact(y0, t):
    from scipy.linalg import expm
    return expm(A_LIN * t) @ y0


def lotka(y, t, a, b, c, d):
    return qb.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


def lotka_np(t, y):
    return [1.5 * y[0] - y[0] * y[1], -3.0 * y[1] + y[0] * y[1]]


def lorenz(y, t, s, r, b):
    return qb.stack([s * (y[1] - y[0]), y[0] * (r - y[2]) - y[1], y[0] * y[1] - b * y[2]])


def lorenz_np(t, y):
    return [10 * (y[1] - y[0]), y[0] * (28 - y[2]) - y[1], y[0] * y[1] - 8 / 3 * y[2]]


LV_ARGS = (1.5, 1.0, 3.0, 1.0)


def qargs(vals):
    return tuple(qb.asarray(v) for v in vals)


@pytest.mark.parametrize("method,order", [("euler", 1), ("heun", 2), ("rk4", 4)])
def test_fixed_step_methods_converge_at_their_order(method, order):
    y0 = np.array([1.0, 0.5])
    exact = linear_exact(y0, 2.0)
    errs = [np.abs(np.asarray(qb.ode.odeint(linear, qb.array(y0), (0.0, 2.0), method=method, steps=n)) - exact).max()
            for n in (200, 400)]
    assert errs[0] / errs[1] == pytest.approx(2 ** order, rel=0.15)


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
@pytest.mark.parametrize("problem", ["lotka", "lorenz", "linear"])
def test_adaptive_5_4_pairs_against_scipy_accuracy_and_step_counts(problem, method):
    if problem == "lotka":
        f, fnp, y0, t1, args = lotka, lotka_np, [1.0, 1.0], 5.0, qargs(LV_ARGS)
    elif problem == "lorenz":
        f, fnp, y0, t1, args = lorenz, lorenz_np, [1.0, 1.0, 1.0], 1.0, qargs((10.0, 28.0, 8 / 3))
    else:
        f, fnp, y0, t1, args = linear, (lambda t, y: A_LIN @ y), [1.0, 0.5], 4.0, ()
    ref = solve_ivp(fnp, (0, t1), y0, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    for tol in (1e-6, 1e-9):
        y, info = qb.ode.odeint(f, qb.array(y0), (0.0, t1), method=method, args=args, rtol=tol, atol=tol,
                                max_steps=4000, info=True)
        assert int(info.status) == 0
        scale = np.abs(ref).max() + 1
        assert np.abs(np.asarray(y) - ref).max() <= 200 * tol * scale
        theirs = solve_ivp(fnp, (0, t1), y0, method="RK45", rtol=tol, atol=tol)
        steps = int(info.accepted) + int(info.rejected)
        assert abs(steps - (theirs.t.size - 1)) <= 0.25 * (theirs.t.size - 1) + 2, (steps, theirs.t.size - 1)
        assert int(info.evaluations) == 6 * steps + 2


def test_saveat_save_pytrees_and_backwards_time():
    ts = np.array([0.0, 0.5, 1.5, 3.0])
    y0 = np.array([1.0, 0.5])
    want = np.stack([linear_exact(y0, t) for t in ts])
    ys = qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), method="dopri5", saveat=qb.array(ts), rtol=1e-10,
                       atol=1e-10, max_steps=2000)
    np.testing.assert_allclose(np.asarray(ys), want, atol=1e-8)
    ys = qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), method="rk4", saveat=ts, steps=50)
    np.testing.assert_allclose(np.asarray(ys), want, atol=1e-7)
    traj = qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), method="rk4", steps=30, save=True)
    assert traj.shape == (31, 2)
    np.testing.assert_allclose(np.asarray(traj[0]), y0)
    np.testing.assert_allclose(np.asarray(traj[-1]), linear_exact(y0, 3.0), atol=1e-4)
    end = qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), method="rk4", steps=30)
    np.testing.assert_allclose(np.asarray(traj[-1]), np.asarray(end), rtol=1e-13)
    # A pytree state, mixed shapes.
    def f(state, t):
        return {"x": state["v"], "v": -state["x"]}
    out = qb.ode.odeint(f, {"x": qb.asarray(1.0), "v": qb.asarray(0.0)}, (0.0, np.pi / 2), method="dopri5",
                        rtol=1e-10, atol=1e-10)
    assert abs(float(out["x"])) < 1e-8 and abs(float(out["v"]) + 1.0) < 1e-8
    # Integrating backwards in time undoes the forward integration.
    y1 = qb.ode.odeint(linear, qb.array(y0), (0.0, 2.0), method="dopri5", rtol=1e-11, atol=1e-11, max_steps=3000)
    back = qb.ode.odeint(linear, y1, (2.0, 0.0), method="dopri5", rtol=1e-11, atol=1e-11, max_steps=3000)
    np.testing.assert_allclose(np.asarray(back), y0, atol=1e-8)


def test_odeint_errors_and_max_steps_status():
    y0 = qb.array([1.0, 0.5])
    with pytest.raises(ValueError, match="method must be one of"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="rk45")
    with pytest.raises(ValueError, match="pass steps=N"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="rk4")
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="rk4", steps=0)
    with pytest.raises(ValueError, match="t_span must be a pair"):
        qb.ode.odeint(linear, y0, 1.0, method="rk4", steps=3)
    with pytest.raises(ValueError, match="adjoint='backsolve' is not available"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="dopri5", adjoint="backsolve")
    with pytest.raises(ValueError, match="saveat must run from"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="dopri5", saveat=[0.5, 0.2])
    with pytest.raises(ValueError, match="saveat must run from"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="dopri5", saveat=[0.5, 2.0])
    with pytest.raises(ValueError, match="save=True is for fixed-step"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="dopri5", save=True)
    with pytest.raises(ValueError, match="rtol must be a number > 0"):
        qb.ode.odeint(linear, y0, (0.0, 1.0), method="dopri5", rtol=0.0)
    with pytest.raises(TypeError, match="y0.* must be floating point"):
        qb.ode.odeint(linear, qb.array([1, 2]), (0.0, 1.0), method="rk4", steps=2)
    with pytest.raises(TypeError, match="odeint: f returned"):
        qb.ode.odeint(lambda y, t: y[:1], y0, (0.0, 1.0), method="rk4", steps=2)
    with pytest.raises(ValueError, match="max_steps.* did not reach"):
        qb.ode.odeint(linear, y0, (0.0, 10.0), method="dopri5", rtol=1e-10, atol=1e-10, max_steps=10)
    with pytest.raises(ValueError, match="t_span must be finite"):
        qb.ode.odeint(linear, y0, (0.0, float("nan")), method="dopri5")
    with pytest.raises(ValueError, match="became NaN or infinite"):
        qb.ode.odeint(lambda y, t: y * qb.log(t - 0.5), y0, (0.0, 1.0), method="dopri5")
    _, bad = qb.jit(lambda y0: qb.ode.odeint(lambda y, t: y * qb.log(t - 0.5), y0, (0.0, 1.0), method="tsit5",
                                             info=True))(y0)
    assert int(bad.status) == 2 and int(bad.accepted) + int(bad.rejected) < 10
    # Inside jit nothing can raise: the status says it.
    y, info = qb.jit(lambda y0: qb.ode.odeint(linear, y0, (0.0, 10.0), method="dopri5", rtol=1e-10, atol=1e-10,
                                              max_steps=10, info=True))(y0)
    assert int(info.status) == 1 and int(info.accepted) + int(info.rejected) == 10


@pytest.mark.parametrize("method", ["euler", "heun", "rk4", "dopri5", "tsit5", "rosenbrock23"])
def test_gradients_against_differences_forward_and_second_order(method):
    if method in ("euler", "heun", "rk4"):
        kw = dict(method=method, steps=200)
    elif method == "rosenbrock23":
        kw = dict(method=method, rtol=1e-12, atol=1e-12, max_steps=60000)
    else:
        kw = dict(method=method, rtol=1e-10, atol=1e-10, max_steps=3000)

    def loss(y0, p, t1, ts):
        args = (p[0], p[1], p[2], p[3])
        ys = qb.ode.odeint(lotka, y0, (0.0, t1), args=args, saveat=ts, **kw)
        end = qb.ode.odeint(lotka, y0, (0.0, t1), args=args, **kw)
        return qb.sum(ys[:, 0] * qb.arange(1.0, 3.0)) + qb.sum(end ** 2)

    y0, p, t1, ts = np.array([1.0, 1.0]), np.array(LV_ARGS), 2.0, np.array([0.5, 1.5])
    qa = (qb.array(y0), qb.array(p), qb.asarray(t1), qb.array(ts))
    grads = qb.grad(loss, argnums=(0, 1, 2, 3))(*qa)
    fds = [central(lambda v: float(loss(qb.array(v), *qa[1:])), y0),
           central(lambda v: float(loss(qa[0], qb.array(v), *qa[2:])), p),
           central(lambda v: float(loss(qa[0], qa[1], qb.asarray(float(v)), ts=qa[3])), t1),
           central(lambda v: float(loss(*qa[:3], qb.array(v))), ts)]
    for k, (g, fd) in enumerate(zip(grads, fds)):
        np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-7, err_msg=f"argument {k}")
    # Forward mode equals reverse.
    d = np.array([0.3, -0.2, 0.1, 0.5])
    _, t = qb.jvp(lambda p: loss(qa[0], p, qa[2], qa[3]), (qa[1],), (qb.array(d),))
    np.testing.assert_allclose(float(t), np.dot(np.asarray(grads[1]), d), rtol=1e-9)
    # Second order: the Hessian in the parameters against differences of the gradient.
    h = qb.hessian(lambda p: loss(qa[0], p, qa[2], qa[3]))(qa[1])
    hfd = central(lambda v: np.asarray(qb.grad(lambda p: loss(qa[0], p, qa[2], qa[3]))(qb.array(v))), p)
    np.testing.assert_allclose(np.asarray(h), hfd, rtol=1e-5, atol=1e-6)


def test_vmap_over_initial_conditions_equals_a_loop_and_jit():
    rng = np.random.default_rng(0)
    y0s = rng.uniform(0.5, 2.0, size=(64, 2))
    solve = lambda y0: qb.ode.odeint(lotka, y0, (0.0, 3.0), method="dopri5", args=qargs(LV_ARGS), rtol=1e-8,
                                     atol=1e-8, max_steps=1000)
    batched = np.asarray(qb.vmap(solve)(qb.array(y0s)))
    for k in (0, 17, 63):
        np.testing.assert_allclose(batched[k], np.asarray(solve(qb.array(y0s[k]))), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(qb.jit(solve)(qb.array(y0s[5]))), batched[5], rtol=1e-12, atol=1e-13)
    g = qb.vmap(qb.grad(lambda y0: qb.sum(solve(y0))))(qb.array(y0s[:4]))
    for k in range(4):
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(qb.grad(lambda y0: qb.sum(solve(y0)))(qb.array(y0s[k]))),
                                   rtol=1e-10)


def robertson(y, t):
    return qb.stack([-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                     3e7 * y[1] ** 2])


def robertson_np(t, y):
    return [-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2]


def test_rosenbrock23_on_stiff_problems_against_radau():
    ref = solve_ivp(robertson_np, (0, 40), [1.0, 0.0, 0.0], method="Radau", rtol=1e-11, atol=1e-13).y[:, -1]
    y, info = qb.ode.odeint(robertson, qb.array([1.0, 0.0, 0.0]), (0.0, 40.0), method="rosenbrock23", rtol=1e-6,
                            atol=1e-10, max_steps=3000, info=True)
    assert int(info.status) == 0
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-9)
    # The explicit method needs far more steps on the same stiff problem (to t = 1).
    _, stiff = qb.ode.odeint(robertson, qb.array([1.0, 0.0, 0.0]), (0.0, 1.0), method="rosenbrock23", rtol=1e-6,
                             atol=1e-10, max_steps=3000, info=True)
    _, explicit = qb.ode.odeint(robertson, qb.array([1.0, 0.0, 0.0]), (0.0, 1.0), method="dopri5", rtol=1e-6,
                                atol=1e-10, max_steps=20000, info=True)
    assert int(explicit.accepted) > 5 * int(stiff.accepted)
    # Van der Pol, mu = 1000, through its first sharp transition.
    mu = 1000.0
    vdp_np = lambda t, y: [y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]]
    ref = solve_ivp(vdp_np, (0, 1000), [2.0, 0.0], method="Radau", rtol=1e-11, atol=1e-11).y[:, -1]
    y = qb.ode.odeint(lambda y, t, mu: qb.stack([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]]), qb.array([2.0, 0.0]),
                      (0.0, 1000.0), method="rosenbrock23", args=(qb.asarray(mu),), rtol=1e-7, atol=1e-7,
                      max_steps=4000)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-3, atol=1e-6)


def test_rosenbrock23_gradients_and_a_non_autonomous_problem():
    # y' = -k (y - cos t): stiff for large k, non-autonomous (df/dt enters the method).
    def f(y, t, k):
        return -k * (y - qb.cos(t))

    def exact(k, t, y0=2.0):
        a = k / (k * k + 1)
        c = k * a
        return (y0 - c) * np.exp(-k * t) + c * np.cos(t) + a * np.sin(t)
    y = qb.ode.odeint(f, qb.array([2.0]), (0.0, 3.0), method="rosenbrock23", args=(qb.asarray(50.0),), rtol=1e-8,
                      atol=1e-10, max_steps=3000)
    np.testing.assert_allclose(float(y[0]), exact(50.0, 3.0), rtol=1e-6)

    def loss(k, y0):
        y = qb.ode.odeint(f, y0, (0.0, 0.2), method="rosenbrock23", args=(k,), rtol=1e-11, atol=1e-13,
                          max_steps=20000)
        return qb.sum(y ** 2)
    k, y0 = qb.asarray(20.0), qb.array([2.0])
    gk, gy = qb.grad(loss, argnums=(0, 1))(k, y0)
    np.testing.assert_allclose(float(gk), central(lambda v: float(loss(qb.asarray(float(v)), y0)), 20.0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gy), central(lambda v: float(loss(k, qb.array(v))), np.array([2.0])),
                               rtol=1e-6)
    _, t = qb.jvp(loss, (k, y0), (qb.asarray(1.0), qb.array([0.0])))
    np.testing.assert_allclose(float(t), float(gk), rtol=1e-9)


def test_neural_ode_example_trains():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "neural_ode.py"
    spec = importlib.util.spec_from_file_location("neural_ode_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    y0s = qb.array([[1.0, 0.0], [0.0, 1.0]])
    truth = qb.vmap(lambda y0: qb.ode.odeint(module.oscillator, y0, (0.0, 6.0), method="dopri5", saveat=module.TS,
                                             rtol=1e-10, atol=1e-10))(y0s)
    params = module.init_params(qb.random.key(0))
    opt = qb.optim.Adam(1e-2)
    state = opt.init(params)
    step = qb.jit(lambda p, s: (lambda v, g: (*opt.update(p, g, s), v))(*qb.value_and_grad(module.loss)(p, y0s, truth)))
    first = None
    for _ in range(60):
        params, state, value = step(params, state)
        first = value.item() if first is None else first
    assert value.item() < 0.5 * first


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_implicit_solves_inside_f_cg_and_newton(method):
    """f itself solves: y' = -A(k)^-1 y with the solve by qb.linalg.cg (A symmetric positive
    definite), and y' = -z(y) with z + z^3 = y by qb.newton. Values against SciPy with the
    same f done by NumPy, gradients in the parameter against central differences."""
    m = np.array([[2.0, 0.3, 0.0], [0.3, 1.5, 0.2], [0.0, 0.2, 1.0]])
    y0 = np.array([1.0, -0.5, 0.25])
    kw = dict(method=method, steps=40) if method == "rk4" else dict(method=method, rtol=1e-10, atol=1e-12)

    def f_cg(y, t, k):
        a = qb.array(m) + k * qb.eye(3)
        return -qb.linalg.cg(lambda v: a @ v, y, tol=1e-13, maxiter=50)[0]

    def end_cg(k):
        return qb.ode.odeint(f_cg, qb.array(y0), (0.0, 1.0), args=(k,), **kw)

    ref = solve_ivp(lambda t, y: -np.linalg.solve(m + 0.5 * np.eye(3), y), (0.0, 1.0), y0, rtol=1e-12,
                    atol=1e-12).y[:, -1]
    np.testing.assert_allclose(np.asarray(end_cg(qb.asarray(0.5))), ref, rtol=1e-7, atol=1e-9)
    g = float(qb.grad(lambda k: qb.sum(end_cg(k)))(qb.asarray(0.5)))
    fd = central(lambda k: float(qb.sum(end_cg(qb.asarray(k)))), 0.5)
    np.testing.assert_allclose(g, fd, rtol=1e-6)

    def f_newton(y, t, c):
        return -qb.newton(lambda z, y: z + c * z ** 3 - y, y * 0.5, args=(y,), tol=1e-13)

    def end_newton(c):
        return qb.ode.odeint(f_newton, qb.array(y0), (0.0, 1.0), args=(c,), **kw)

    from scipy.optimize import brentq

    def f_np(t, y):
        return [-brentq(lambda z: z + 0.7 * z ** 3 - v, -5, 5, xtol=1e-15) for v in y]
    ref = solve_ivp(f_np, (0.0, 1.0), y0, rtol=1e-12, atol=1e-12).y[:, -1]
    np.testing.assert_allclose(np.asarray(end_newton(qb.asarray(0.7))), ref, rtol=1e-7, atol=1e-9)
    g = float(qb.grad(lambda c: qb.sum(end_newton(c)))(qb.asarray(0.7)))
    fd = central(lambda c: float(qb.sum(end_newton(qb.asarray(c)))), 0.7)
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_odeint_inside_fori_loop_and_its_gradient():
    """Integrating in three chunks inside qb.fori_loop equals one integration (fixed steps
    that line up), and reverse mode goes through the loop and the solver."""
    def chunked(p):
        return qb.fori_loop(0, 3, lambda i, y: qb.ode.odeint(lotka, y, (0.0, 0.5), method="rk4", steps=25,
                                                             args=(p, 1.0, 3.0, 1.0)), qb.array([1.0, 1.0]))

    def whole(p):
        return qb.ode.odeint(lotka, qb.array([1.0, 1.0]), (0.0, 1.5), method="rk4", steps=75, args=(p, 1.0, 3.0, 1.0))

    p = qb.asarray(1.5)
    np.testing.assert_allclose(np.asarray(chunked(p)), np.asarray(whole(p)), rtol=1e-12)
    g1 = float(qb.grad(lambda p: qb.sum(chunked(p)))(p))
    g2 = float(qb.grad(lambda p: qb.sum(whole(p)))(p))
    np.testing.assert_allclose(g1, g2, rtol=1e-10)
    np.testing.assert_allclose(g1, central(lambda v: float(qb.sum(whole(qb.asarray(v)))), 1.5), rtol=1e-6)


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_dense_output_interpolants_have_order_four(method):
    """The saveat values of the explicit pairs come from their interpolants (Shampine's for
    Dormand-Prince, Tsitouras's): on y' = -y one step's interpolant at th = 0.3, 0.5, 0.8
    has local error O(h^5) (halving h divides it by about 32), and at th = 1 it is the step."""
    from quabla.ode import _dopri5_step, _tsit5_step
    stepper = _dopri5_step if method == "dopri5" else _tsit5_step
    f = lambda y, t: -y
    th = qb.reshape(qb.array([0.3, 0.5, 0.8, 1.0]), (-1, 1))
    errs = []
    for h in (0.2, 0.1, 0.05):
        y0 = qb.array([1.0])
        y1, _, _, _, ks = stepper(f, qb.asarray(0.0), y0, qb.asarray(h), f(y0, 0.0))
        vals = np.asarray(stepper.interp(y0, y1, ks, qb.asarray(h), th))[:, 0]
        exact = np.exp(-h * np.array([0.3, 0.5, 0.8, 1.0]))
        np.testing.assert_allclose(vals[-1], float(np.asarray(y1)[0]), rtol=1e-15)
        errs.append(np.max(np.abs(vals[:3] - exact[:3])))
    assert errs[0] / errs[1] > 25 and errs[1] / errs[2] > 25, errs


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_saveat_does_not_change_the_steps_of_the_explicit_pairs(method):
    """Outputs come from the interpolant: 60 output times cost no extra steps, and the
    values are within the tolerance of the closed form; gradients with respect to the output
    times equal f at the interpolated points to the interpolant's accuracy."""
    y0 = np.array([1.0, 0.0])
    ts = np.linspace(0.0, 3.0, 60)
    kw = dict(method=method, rtol=1e-9, atol=1e-11, info=True)
    ys, info = qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), saveat=qb.array(ts), **kw)
    _, info_end = qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), **kw)
    assert int(info.accepted) == int(info_end.accepted)
    exact = np.stack([linear_exact(y0, t) for t in ts])
    np.testing.assert_allclose(np.asarray(ys), exact, atol=1e-8)
    # d y(ts_j) / d ts_j is the interpolant's slope there: about f(y(ts_j))
    g = np.asarray(qb.jacfwd(lambda s: qb.ode.odeint(linear, qb.array(y0), (0.0, 3.0), saveat=s, method=method,
                                                     rtol=1e-9, atol=1e-11))(qb.array(ts)))
    slopes = np.stack([g[j, :, j] for j in range(len(ts))])
    np.testing.assert_allclose(slopes, exact @ A_LIN.T, atol=1e-6)
