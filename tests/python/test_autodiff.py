"""Automatic differentiation (API.md §2 derivative conventions, §3 transforms): grad,
value_and_grad, jvp, vjp.

The per-op tests are generated from src/quabla/ir/ops.def through the table in
ad_op_table.py: for every op, in float64, forward and reverse Jacobians are checked against
central finite differences and against each other, and second derivatives (forward over
reverse, reverse over reverse) against finite differences of the gradient.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import quabla as qb

from ad_op_table import CASES, CASE_BY_OP, Case, ops_in_def, traced_text

H = 1e-6          # central difference step
FD_RTOL = 1e-6
FD_ATOL = 1e-7
AGREE_TOL = 1e-10  # forward vs reverse Jacobians

NP = np.asarray


def _ids(cases):
    return [c.op for c in cases]


# ---------------------------------------------------------------------------------------
# Jacobians: finite differences, forward (jvp column by column), reverse (vjp row by row)


def _flat_out(case: Case, np_args) -> np.ndarray:
    return NP(case.fn(*[qb.array(a) for a in np_args])).astype(np.float64).ravel()


@functools.lru_cache(maxsize=None)
def jac_fd(op: str) -> np.ndarray:
    case = CASE_BY_OP[op]
    args = case.np_args()
    cols = []
    for k, a in enumerate(args):
        for j in range(a.size):
            plus = [b.copy() for b in args]
            minus = [b.copy() for b in args]
            plus[k].flat[j] += H
            minus[k].flat[j] -= H
            cols.append((_flat_out(case, plus) - _flat_out(case, minus)) / (2 * H))
    return np.stack(cols, axis=1)


def jac_expected(case: Case) -> np.ndarray:
    if case.exact_jac is not None:
        return case.exact_jac(*case.np_args())
    return jac_fd(case.op)


@functools.lru_cache(maxsize=None)
def jac_fwd(op: str) -> np.ndarray:
    case = CASE_BY_OP[op]
    args = case.args()
    cols = []
    out0 = None
    for k, a in enumerate(args):
        for j in range(a.size):
            tangents = [np.zeros(b.shape) for b in args]
            tangents[k].flat[j] = 1.0
            out, t_out = qb.jvp(case.fn, tuple(args), tuple(qb.array(t) for t in tangents))
            assert isinstance(t_out, qb.Array)
            assert t_out.shape == out.shape and t_out.dtype == out.dtype == qb.float64
            if out0 is None:
                out0 = NP(out).copy()
            else:  # the primal output does not depend on the tangent
                np.testing.assert_array_equal(NP(out), out0)
            cols.append(NP(t_out).ravel().copy())
    np.testing.assert_allclose(out0, NP(case.fn(*args)), rtol=1e-15, atol=0)
    return np.stack(cols, axis=1)


@functools.lru_cache(maxsize=None)
def jac_rev(op: str) -> np.ndarray:
    case = CASE_BY_OP[op]
    args = case.args()
    out, vjp_fun = qb.vjp(case.fn, *args)
    np.testing.assert_allclose(NP(out), NP(case.fn(*args)), rtol=1e-15, atol=0)
    rows = []
    for i in range(out.size):
        ct = np.zeros(out.shape)
        ct.flat[i] = 1.0
        cts = vjp_fun(qb.array(ct))
        assert isinstance(cts, tuple) and len(cts) == len(args)
        for c, a in zip(cts, args):
            assert c is not None and c.shape == a.shape and c.dtype == qb.float64
        rows.append(np.concatenate([NP(c).ravel() for c in cts]))
    return np.stack(rows, axis=0)


def _assert_fd_close(actual, expected, what):
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=FD_RTOL, atol=FD_ATOL * scale, err_msg=what)


# ---------------------------------------------------------------------------------------
# The table covers ops.def


def test_every_op_in_ops_def_has_a_table_entry():
    declared = ops_in_def()
    assert len(declared) == len(set(declared))
    missing = [op for op in declared if op not in CASE_BY_OP]
    stale = [op for op in CASE_BY_OP if op not in declared]
    assert not missing, f"ops without an autodiff/vmap test entry in ad_op_table.py: {missing}"
    assert not stale, f"table entries for ops that ops.def no longer declares: {stale}"


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_entry_reaches_its_op(case):
    args = case.args()
    text = traced_text(case, args)
    ops = (case.op,) if case.ops is None else case.ops
    for op in ops:
        assert f"= {op}(" in text, f"{case.op}: the table's function does not emit {op}:\n{text}"
    if case.op == "parameter":
        assert "%0: f64[3, 4]" in text


# ---------------------------------------------------------------------------------------
# First order, every op


FORWARD = [c for c in CASES if not c.reverse_only]


@pytest.mark.parametrize("case", FORWARD, ids=_ids(FORWARD))
def test_jvp_matches_finite_differences(case):
    _assert_fd_close(jac_fwd(case.op), jac_expected(case), f"{case.op}: jvp Jacobian vs finite differences")


REVERSE = [c for c in CASES if not c.forward_only]


@pytest.mark.parametrize("case", REVERSE, ids=_ids(REVERSE))
def test_vjp_matches_finite_differences(case):
    _assert_fd_close(jac_rev(case.op), jac_expected(case), f"{case.op}: vjp Jacobian vs finite differences")


@pytest.mark.parametrize("case", REVERSE, ids=_ids(REVERSE))
def test_grad_matches_finite_differences(case):
    args = case.args()
    out_shape = case.fn(*args).shape
    w = np.random.default_rng(3).normal(size=out_shape)
    wq = qb.array(w)
    argnums = tuple(range(case.nargs))
    value, grads = qb.value_and_grad(lambda *a: qb.sum(case.fn(*a) * wq), argnums=argnums)(*args)
    assert value.shape == () and value.dtype == qb.float64
    np.testing.assert_allclose(float(value), float(np.sum(NP(case.fn(*args)) * w)), rtol=1e-13)
    assert isinstance(grads, tuple) and len(grads) == case.nargs
    for g, a in zip(grads, args):
        assert g.shape == a.shape and g.dtype == qb.float64
    flat = np.concatenate([NP(g).ravel() for g in grads])
    _assert_fd_close(flat, w.ravel() @ jac_expected(case), f"{case.op}: grad vs finite differences")
    # grad (the single-argument form) agrees with value_and_grad
    g0 = qb.grad(lambda *a: qb.sum(case.fn(*a) * wq))(*args)
    np.testing.assert_array_equal(NP(g0), NP(grads[0]))


@pytest.mark.parametrize("case", [c for c in REVERSE if not c.reverse_only], ids=_ids([c for c in REVERSE if not c.reverse_only]))
def test_forward_and_reverse_jacobians_agree(case):
    fwd, rev = jac_fwd(case.op), jac_rev(case.op)
    assert fwd.shape == rev.shape
    np.testing.assert_allclose(fwd, rev, rtol=AGREE_TOL, atol=AGREE_TOL)


# ---------------------------------------------------------------------------------------
# Second order, every op: forward over reverse and reverse over reverse vs finite
# differences of the gradient (exercises the JVP and transpose rules of the ops that
# derivatives emit: pad, scatter_add, select, broadcasts, ...)

SECOND_ORDER = [c for c in REVERSE if c.op != "stop_gradient"]  # see test_stop_gradient_second_order

# Entries whose gradient does not depend on the inputs (linear or piecewise linear functions):
# reverse over reverse differentiates a function with no tangent dependence.
CONSTANT_GRADIENT = {"parameter", "constant", "floor", "ceil", "round", "rem", "max", "min", "convert"}


def _second_order_setup(case):
    np_args = case.np_args()
    args = [qb.array(a) for a in np_args]
    rng = np.random.default_rng(11)
    w = qb.array(rng.normal(size=case.fn(*args).shape))
    vs = [rng.normal(size=a.shape) for a in np_args]
    argnums = tuple(range(case.nargs))
    g = qb.grad(lambda *a: qb.sum(case.fn(*a) * w), argnums=argnums)

    def g_np(np_a):
        return np.concatenate([NP(t).ravel() for t in g(*[qb.array(a) for a in np_a])])

    fd = (g_np([a + H * v for a, v in zip(np_args, vs)]) - g_np([a - H * v for a, v in zip(np_args, vs)])) / (2 * H)
    return args, vs, argnums, g, fd


@pytest.mark.parametrize("case", SECOND_ORDER, ids=_ids(SECOND_ORDER))
def test_forward_over_reverse_matches_finite_differences_of_the_gradient(case):
    args, vs, argnums, g, fd = _second_order_setup(case)
    _, hv = qb.jvp(g, tuple(args), tuple(qb.array(v) for v in vs))
    hv = np.concatenate([NP(t).ravel() for t in hv])
    _assert_fd_close(hv, fd, f"{case.op}: jvp of grad vs finite differences of grad")


@pytest.mark.parametrize("case", SECOND_ORDER, ids=_ids(SECOND_ORDER))
def test_reverse_over_reverse_matches_finite_differences_of_the_gradient(case):
    args, vs, argnums, g, fd = _second_order_setup(case)
    vq = [qb.array(v) for v in vs]

    def gv(*a):
        return sum(qb.sum(t * v) for t, v in zip(g(*a), vq))

    hv_rr = qb.grad(gv, argnums=argnums)(*args)
    hv_rr = np.concatenate([NP(t).ravel() for t in hv_rr])
    _assert_fd_close(hv_rr, fd, f"{case.op}: grad of grad vs finite differences of grad")
    _, hv = qb.jvp(g, tuple(args), tuple(vq))
    np.testing.assert_allclose(np.concatenate([NP(t).ravel() for t in hv]), hv_rr, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------
# Bool-valued ops carry no derivative

BOOL_CASES = [c for c in CASES if c.bool_op]


@pytest.mark.parametrize("case", BOOL_CASES, ids=_ids(BOOL_CASES))
def test_bool_op_has_zero_tangent_and_a_finite_gradient_through_where(case):
    args = case.args()
    p = case.pred(*args)
    assert p.dtype == qb.bool_
    out, t = qb.jvp(case.pred, tuple(args), tuple(qb.ones_like(a) for a in args))
    np.testing.assert_array_equal(NP(out), NP(p))
    assert t.shape == p.shape
    assert not np.any(NP(t)), f"{case.op}: a bool output got a nonzero tangent"
    grads = qb.grad(lambda *a: qb.sum(case.fn(*a)), argnums=tuple(range(case.nargs)))(*args)
    for g, a in zip(grads, args):
        assert g is not None and g.shape == a.shape and g.dtype == qb.float64
        assert np.all(np.isfinite(NP(g)))


# ---------------------------------------------------------------------------------------
# Derivative conventions (API.md §2)


def _g(f, *args, argnums=0):
    out = qb.grad(f, argnums=argnums)(*[qb.array(a) for a in args])
    if isinstance(out, tuple):
        return tuple(float(o) for o in out)
    return NP(out)


def test_sqrt_derivative_at_zero_forward():
    _, t = qb.jvp(qb.sqrt, (qb.array([0.0, 4.0]),), (qb.array([1.0, 1.0]),))
    np.testing.assert_array_equal(NP(t), [0.0, 0.25])
    _, t2 = qb.jvp(lambda x: qb.jvp(qb.sqrt, (x,), (qb.ones_like(x),))[1], (qb.array(0.0),), (qb.array(1.0),))
    assert float(t2) == 0.0


def test_sqrt_derivative_at_zero_reverse_every_order():
    assert _g(qb.sqrt, 0.0) == 0.0
    assert float(qb.grad(qb.grad(qb.sqrt))(qb.array(0.0))) == 0.0
    assert float(qb.grad(qb.grad(qb.grad(qb.sqrt)))(qb.array(0.0))) == 0.0
    np.testing.assert_array_equal(NP(qb.grad(lambda x: qb.sum(qb.sqrt(x)))(qb.array([0.0, 4.0]))), [0.0, 0.25])
    _, hv = qb.jvp(qb.grad(qb.sqrt), (qb.array(0.0),), (qb.array(1.0),))
    assert float(hv) == 0.0


ZERO_DERIV_FNS = {"floor": qb.floor, "ceil": qb.ceil, "round": qb.round, "sign": qb.sign}


@pytest.mark.parametrize("name", sorted(ZERO_DERIV_FNS))
def test_piecewise_constant_functions_have_zero_derivative_in_composition(name):
    f = ZERO_DERIV_FNS[name]
    x = qb.array([-1.5, -1.0, 0.0, 0.5, 1.0, 2.3])
    # multiplied by x so the output depends on x: d/dx f(x)*x = f(x)
    g = qb.grad(lambda z: qb.sum(f(z) * z))(x)
    np.testing.assert_array_equal(NP(g), NP(f(x)))
    _, t = qb.jvp(f, (x,), (qb.ones_like(x),))
    np.testing.assert_array_equal(NP(t), np.zeros(6))


@pytest.mark.parametrize("name", sorted(ZERO_DERIV_FNS) + ["stop_gradient", "constant"])
def test_grad_of_an_output_without_derivative_is_zero(name):
    fns = dict(ZERO_DERIV_FNS, stop_gradient=qb.stop_gradient, constant=lambda x: qb.sum(qb.zeros(3)) + 0.0 * 0.0)
    f = fns[name]
    x = qb.array([-1.5, 0.0, 0.5, 2.3])
    g = qb.grad(lambda z: qb.sum(f(z)))(x)
    assert g is not None
    np.testing.assert_array_equal(NP(g), np.zeros(4))
    out, vjp_fun = qb.vjp(lambda z: f(z) + 0.0 * 0.0, x)
    np.testing.assert_array_equal(NP(vjp_fun(qb.ones(out.shape))[0]), np.zeros(4))


def test_power_derivative_conventions():
    dx = lambda x, y: _g(qb.power, x, y, argnums=0)  # noqa: E731
    dy = lambda x, y: _g(qb.power, x, y, argnums=1)  # noqa: E731
    # d/dx = y x^(y-1), 0 where x == 0 and y < 1
    for y in (0.5, 0.0, -1.0, -2.5):
        assert dx(0.0, y) == 0.0, y
    assert dx(0.0, 1.0) == 1.0
    assert dx(0.0, 2.0) == 0.0
    assert dx(0.0, 3.0) == 0.0
    np.testing.assert_allclose(dx(2.0, 3.0), 12.0, rtol=1e-15)
    np.testing.assert_allclose(dx(-2.0, 3.0), 12.0, rtol=1e-15)
    # d/dy = x^y ln x, 0 for x <= 0
    assert dy(0.0, 2.0) == 0.0
    assert dy(0.0, 0.5) == 0.0
    assert dy(-2.0, 3.0) == 0.0
    assert dy(-0.5, 2.0) == 0.0
    np.testing.assert_allclose(dy(2.0, 3.0), 8.0 * math.log(2.0), rtol=1e-15)
    # the same through jvp
    _, t = qb.jvp(qb.power, (qb.array([0.0, 0.0, -2.0]), qb.array([0.5, 2.0, 3.0])),
                  (qb.array([1.0, 1.0, 0.0]), qb.array([1.0, 1.0, 1.0])))
    np.testing.assert_array_equal(NP(t), [0.0, 0.0, 0.0])


def test_atan2_and_hypot_derivatives_at_the_origin_are_zero():
    assert _g(qb.arctan2, 0.0, 0.0, argnums=(0, 1)) == (0.0, 0.0)
    assert _g(qb.hypot, 0.0, 0.0, argnums=(0, 1)) == (0.0, 0.0)
    _, t = qb.jvp(qb.arctan2, (qb.array(0.0), qb.array(0.0)), (qb.array(1.0), qb.array(1.0)))
    assert float(t) == 0.0
    # away from the origin: d/da atan2(a, b) = b / (a^2 + b^2)
    np.testing.assert_allclose(_g(qb.arctan2, 1.0, 2.0, argnums=(0, 1)), (2.0 / 5.0, -1.0 / 5.0), rtol=1e-15)


def test_abs_subgradient_is_zero_at_zero():
    x = qb.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(NP(qb.grad(lambda z: qb.sum(qb.abs(z)))(x)), [-1.0, 0.0, 1.0])
    _, t = qb.jvp(qb.abs, (x,), (qb.ones_like(x),))
    np.testing.assert_array_equal(NP(t), [-1.0, 0.0, 1.0])


def test_relu_subgradient_is_zero_at_zero():
    x = qb.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(NP(qb.grad(lambda z: qb.sum(qb.relu(z)))(x)), [0.0, 0.0, 1.0])
    _, t = qb.jvp(qb.relu, (x,), (qb.ones_like(x),))
    np.testing.assert_array_equal(NP(t), [0.0, 0.0, 1.0])


def test_relu_derivative_away_from_zero():
    x = qb.array([-2.0, -1e-3, 1e-3, 3.0])
    np.testing.assert_array_equal(NP(qb.grad(lambda z: qb.sum(qb.relu(z)))(x)), [0.0, 0.0, 1.0, 1.0])


def test_clip_gives_zero_to_x_at_a_bound():
    x = qb.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    g = qb.grad(lambda z: qb.sum(qb.clip(z, 0.0, 1.0)))(x)
    np.testing.assert_array_equal(NP(g), [0.0, 0.0, 1.0, 0.0, 0.0])


def test_maximum_minimum_ties_share_equally():
    for f in (qb.maximum, qb.minimum):
        assert _g(f, 1.0, 1.0, argnums=(0, 1)) == (0.5, 0.5)
        assert float(qb.grad(lambda x: f(x, x))(qb.array(1.5))) == 1.0
        _, t = qb.jvp(f, (qb.array(1.0), qb.array(1.0)), (qb.array(1.0), qb.array(0.0)))
        assert float(t) == 0.5
    assert _g(qb.maximum, 2.0, 1.0, argnums=(0, 1)) == (1.0, 0.0)
    assert _g(qb.minimum, 2.0, 1.0, argnums=(0, 1)) == (0.0, 1.0)


def test_max_min_reduction_ties_share_equally():
    x = qb.array([1.0, 3.0, 3.0, 2.0])
    np.testing.assert_array_equal(NP(qb.grad(qb.max)(x)), [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(NP(qb.grad(qb.min)(qb.array([1.0, 3.0, 1.0, 1.0]))), [1 / 3, 0, 1 / 3, 1 / 3])
    m = qb.array([[1.0, 2.0, 2.0], [5.0, 4.0, 3.0]])
    g = qb.grad(lambda z: qb.sum(qb.max(z, axis=1) * qb.array([1.0, 10.0])))(m)
    np.testing.assert_array_equal(NP(g), [[0.0, 0.5, 0.5], [10.0, 0.0, 0.0]])
    _, t = qb.jvp(qb.max, (x,), (qb.array([0.0, 1.0, 3.0, 7.0]),))
    assert float(t) == 2.0


def test_where_gives_the_mask_and_the_unselected_branch_nothing():
    x = qb.array([-1.0, 2.0, 3.0])
    y = qb.array([5.0, 6.0, 7.0])
    gx, gy = qb.grad(lambda a, b: qb.sum(qb.where(a > 0.0, a * a, b * b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(NP(gx), [0.0, 4.0, 6.0])
    np.testing.assert_array_equal(NP(gy), [10.0, 0.0, 0.0])
    _, t = qb.jvp(lambda a, b: qb.where(a > 0.0, a * a, b * b), (x, y), (qb.ones_like(x), qb.ones_like(y)))
    np.testing.assert_array_equal(NP(t), [10.0, 4.0, 6.0])


def test_where_unselected_branch_is_still_evaluated():
    """API.md §2: both branches are evaluated forward, so a NaN-producing unselected branch
    must be guarded (next test); unguarded, a non-finite local derivative meets the zero
    cotangent and gives NaN, as in JAX. The selected entries are exact either way."""
    x = qb.array([-1.0, 0.0, 4.0])
    g = NP(qb.grad(lambda z: qb.sum(qb.where(z > 0.0, qb.sqrt(z), 0.0)))(x))
    assert np.isnan(g[0]) and g[2] == 0.25


def test_where_with_a_guarded_input_is_finite():
    # The documented guard: make the unselected branch's input safe.
    x = qb.array([-1.0, 0.0, 4.0])

    def f(z):
        safe = qb.where(z > 0.0, z, 1.0)
        return qb.sum(qb.where(z > 0.0, qb.sqrt(safe), 0.0))

    np.testing.assert_array_equal(NP(qb.grad(f)(x)), [0.0, 0.0, 0.25])


def test_stop_gradient_gives_zero():
    x = qb.array([1.0, -2.0, 3.0])
    g = qb.grad(lambda z: qb.sum(qb.stop_gradient(z) * z))(x)
    np.testing.assert_array_equal(NP(g), NP(x))
    g = qb.grad(lambda z: qb.sum(qb.stop_gradient(z * z) + z))(x)
    np.testing.assert_array_equal(NP(g), [1.0, 1.0, 1.0])
    _, t = qb.jvp(lambda z: qb.stop_gradient(z) * 2.0 + z, (x,), (qb.ones_like(x),))
    np.testing.assert_array_equal(NP(t), [1.0, 1.0, 1.0])


def test_stop_gradient_second_order():
    # f = stop(x) x + sin x: f' = x + cos x computed with a stopped x, so f'' = -sin x.
    x = qb.array([0.3, -1.2, 2.0])
    g = qb.grad(lambda z: qb.sum(qb.stop_gradient(z) * z + qb.sin(z)))
    np.testing.assert_allclose(NP(g(x)), NP(x) + np.cos(NP(x)), rtol=1e-15)
    _, hv = qb.jvp(g, (x,), (qb.ones_like(x),))
    np.testing.assert_allclose(NP(hv), -np.sin(NP(x)), rtol=1e-15)
    h_rr = qb.grad(lambda z: qb.sum(g(z)))(x)
    np.testing.assert_allclose(NP(h_rr), -np.sin(NP(x)), rtol=1e-15)


# ---------------------------------------------------------------------------------------
# Higher order


def test_third_derivative_of_x_sin_2x_matches_closed_form():
    f = lambda x: qb.sin(2.0 * x) * x  # noqa: E731
    f3 = qb.grad(qb.grad(qb.grad(f)))
    xs = np.array([-1.3, -0.2, 0.0, 0.7, 2.1])
    expected = -12.0 * np.sin(2 * xs) - 8.0 * xs * np.cos(2 * xs)
    got = np.array([float(f3(qb.array(x))) for x in xs])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # forward over forward over reverse, and elementwise over a vector
    f2 = qb.grad(qb.grad(f))
    got_fwd = np.array([float(qb.jvp(f2, (qb.array(x),), (qb.array(1.0),))[1]) for x in xs])
    np.testing.assert_allclose(got_fwd, expected, rtol=1e-12, atol=1e-12)
    d1 = lambda x: qb.jvp(f, (x,), (qb.ones_like(x),))[1]  # noqa: E731
    d2 = lambda x: qb.jvp(d1, (x,), (qb.ones_like(x),))[1]  # noqa: E731
    _, d3 = qb.jvp(d2, (qb.array(xs),), (qb.ones(5),))
    np.testing.assert_allclose(NP(d3), expected, rtol=1e-12, atol=1e-12)


def _hess_fn():
    A = qb.array(np.random.default_rng(5).normal(size=(4, 5)) * 0.5)

    def f(x):
        return qb.sum(qb.tanh(A @ x) ** 2) + qb.sum(x ** 3) / 3.0 + qb.sum(qb.sin(x[1:] * x[:-1]))

    return f


def test_hessian_vector_product_forward_over_reverse_vs_finite_differences():
    f = _hess_fn()
    g = qb.grad(f)
    rng = np.random.default_rng(6)
    x = rng.normal(size=5)
    cols = []
    for j in range(5):
        v = np.zeros(5)
        v[j] = 1.0
        _, hv = qb.jvp(g, (qb.array(x),), (qb.array(v),))
        fd = (NP(g(qb.array(x + H * v))) - NP(g(qb.array(x - H * v)))) / (2 * H)
        _assert_fd_close(NP(hv), fd, f"H e_{j}")
        cols.append(NP(hv).copy())
    hess = np.stack(cols, axis=1)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12, atol=1e-12)  # symmetric
    v = rng.normal(size=5)
    _, hv = qb.jvp(g, (qb.array(x),), (qb.array(v),))
    np.testing.assert_allclose(NP(hv), hess @ v, rtol=1e-12, atol=1e-12)
    # reverse over reverse gives the same H v
    hv_rr = qb.grad(lambda z: qb.sum(g(z) * qb.array(v)))(qb.array(x))
    np.testing.assert_allclose(NP(hv_rr), hess @ v, rtol=1e-10, atol=1e-10)


def test_grad_of_grad_through_a_closure_over_the_outer_variable():
    # inner: d/dy x y^2 = 2 x y at y = 2x -> 4 x^2; outer: 8 x
    h = qb.grad(lambda x: qb.grad(lambda y: x * y ** 2)(2.0 * x))
    for x in (-1.5, 0.0, 0.25, 3.0):
        assert float(h(qb.array(x))) == pytest.approx(8.0 * x, rel=1e-15, abs=0)
    # forward over reverse through the same closure
    _, t = qb.jvp(lambda x: qb.grad(lambda y: x * y ** 2)(2.0 * x), (qb.array(1.5),), (qb.array(1.0),))
    assert float(t) == 12.0


def test_jit_of_value_and_grad_equals_eager():
    def loss(params, x):
        y = qb.tanh(x @ params["w"] + params["b"])
        return qb.mean((y - qb.sin(x[:, :1])) ** 2) + 1e-3 * qb.sum(params["w"] ** 2)

    rng = np.random.default_rng(7)
    params = {"w": qb.array(rng.normal(size=(3, 1))), "b": qb.array(rng.normal(size=(1,)))}
    x = qb.array(rng.normal(size=(8, 3)))
    v_e, g_e = qb.value_and_grad(loss)(params, x)
    step = qb.jit(qb.value_and_grad(loss))
    for _ in range(2):  # the first call traces, the second reuses the plan
        v_j, g_j = step(params, x)
        np.testing.assert_allclose(float(v_j), float(v_e), rtol=1e-14)
        assert sorted(g_j) == ["b", "w"]
        for k in g_e:
            assert g_j[k].shape == g_e[k].shape and g_j[k].dtype == g_e[k].dtype
            np.testing.assert_allclose(NP(g_j[k]), NP(g_e[k]), rtol=1e-13, atol=1e-15)


def test_per_example_gradients_with_vmap_match_a_loop():
    def loss(params, x):
        return qb.sum((qb.tanh(x * params["w"] + params["b"]) - 0.5) ** 2)

    rng = np.random.default_rng(8)
    params = {"w": qb.array(rng.normal(size=4)), "b": qb.array(0.3)}
    xs = rng.normal(size=(5, 4))
    per = qb.vmap(qb.grad(loss), in_axes=(None, 0))(params, qb.array(xs))
    assert sorted(per) == ["b", "w"]
    assert per["w"].shape == (5, 4) and per["b"].shape == (5,)
    for i in range(5):
        gi = qb.grad(loss)(params, qb.array(xs[i]))
        np.testing.assert_allclose(NP(per["w"])[i], NP(gi["w"]), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(NP(per["b"])[i], NP(gi["b"]), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------
# The transforms' API


def test_jvp_and_vjp_with_pytrees():
    def f(p):
        return {"s": qb.sin(p["a"]) * p["b"][0], "t": (p["b"][1] ** 2,)}

    a, b0, b1 = qb.array([0.1, 0.2]), qb.array(2.0), qb.array([1.0, -1.0, 3.0])
    p = {"a": a, "b": [b0, b1]}
    tp = {"a": qb.array([1.0, 0.0]), "b": [qb.array(0.5), qb.array([0.0, 1.0, 2.0])]}
    out, t = qb.jvp(f, (p,), (tp,))
    assert sorted(out) == ["s", "t"] and isinstance(out["t"], tuple)
    np.testing.assert_allclose(NP(t["s"]), np.cos([0.1, 0.2]) * [1, 0] * 2.0 + np.sin([0.1, 0.2]) * 0.5, rtol=1e-15)
    np.testing.assert_allclose(NP(t["t"][0]), [0.0, -2.0, 12.0], rtol=1e-15)
    out2, vjp_fun = qb.vjp(f, p)
    (ct,) = vjp_fun({"s": qb.ones(2), "t": (qb.ones(3),)})
    assert sorted(ct) == ["a", "b"] and isinstance(ct["b"], list)
    np.testing.assert_allclose(NP(ct["a"]), np.cos([0.1, 0.2]) * 2.0, rtol=1e-15)
    np.testing.assert_allclose(float(ct["b"][0]), np.sum(np.sin([0.1, 0.2])), rtol=1e-15)
    np.testing.assert_allclose(NP(ct["b"][1]), [2.0, -2.0, 6.0], rtol=1e-15)
    # vjp_fun can be called many times
    (ct2,) = vjp_fun({"s": qb.zeros(2), "t": (qb.ones(3) * 2.0,)})
    np.testing.assert_allclose(NP(ct2["b"][1]), [4.0, -4.0, 12.0], rtol=1e-15)


def _with_aux(x):
    return qb.sum(x * x), {"n": qb.sum(x), "tag": "static"}


def test_vjp_has_aux():
    x = qb.array([1.0, 2.0])
    out, vjp_fun, aux = qb.vjp(_with_aux, x, has_aux=True)
    assert float(out) == 5.0 and aux["tag"] == "static"
    np.testing.assert_array_equal(NP(vjp_fun(qb.array(1.0))[0]), [2.0, 4.0])
    assert float(aux["n"]) == 3.0


def test_grad_has_aux():
    f = _with_aux
    x = qb.array([1.0, 2.0])
    g, aux = qb.grad(f, has_aux=True)(x)
    np.testing.assert_array_equal(NP(g), [2.0, 4.0])
    assert float(aux["n"]) == 3.0
    (v, aux), g = qb.value_and_grad(f, has_aux=True)(x)
    assert float(v) == 5.0 and aux["tag"] == "static"


def test_argnums_negative_tuple_and_keyword_decorator():
    f = lambda a, b, c: qb.sum(a * b * b * c)  # noqa: E731
    a, b, c = qb.array(2.0), qb.array(3.0), qb.array(5.0)
    assert float(qb.grad(f, argnums=-1)(a, b, c)) == 18.0
    ga, gc = qb.grad(f, argnums=(0, 2))(a, b, c)
    assert (float(ga), float(gc)) == (45.0, 18.0)
    assert float(qb.grad(argnums=1)(f)(a, b, c)) == 60.0
    # Python numbers are differentiable arguments too
    assert float(qb.grad(lambda x: x * x)(3.0)) == 6.0


def test_grad_of_a_non_scalar_output_raises_pointing_to_jacobian_or_vjp():
    with pytest.raises(ValueError, match="jacobian|vjp"):
        qb.grad(lambda x: x * 2.0)(qb.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="jacobian|vjp"):
        qb.value_and_grad(lambda x: qb.sum(x, axis=0))(qb.ones((2, 3)))


def test_grad_of_a_bool_output_raises():
    with pytest.raises(ValueError):
        qb.grad(lambda x: qb.sum(x) > 0.0)(qb.array([1.0, 2.0]))


@pytest.mark.parametrize("argnums", [2, -3, (0, 2), (0, 0), (1, -1)])
def test_bad_argnums_raise(argnums):
    with pytest.raises(ValueError):
        qb.grad(lambda a, b: qb.sum(a * b), argnums=argnums)(qb.array(1.0), qb.array(2.0))


@pytest.mark.parametrize("ret", [lambda x: qb.sum(x), lambda x: (qb.sum(x),), lambda x: (qb.sum(x), 1, 2),
                                 lambda x: [qb.sum(x), 1]])
def test_has_aux_with_a_non_pair_raises(ret):
    with pytest.raises(TypeError, match="must return a pair"):
        qb.grad(ret, has_aux=True)(qb.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="must return a pair"):
        qb.vjp(ret, qb.array([1.0, 2.0]), has_aux=True)


def test_jvp_with_mismatched_tangents_raises():
    x = qb.array([1.0, 2.0])
    with pytest.raises(ValueError):
        qb.jvp(qb.sin, (x,), (qb.array([1.0, 2.0, 3.0]),))   # shape
    with pytest.raises(ValueError):
        qb.jvp(qb.sin, (x,), (qb.array([1.0, 2.0], dtype=qb.float32),))   # dtype
    with pytest.raises(ValueError):
        qb.jvp(qb.sin, (x,), (x, x))   # count
    with pytest.raises(ValueError):
        qb.jvp(lambda p: qb.sin(p["a"]), ({"a": x},), ({"b": x},))   # structure


def test_vjp_fun_with_a_mismatched_cotangent_raises():
    _, vjp_fun = qb.vjp(qb.sin, qb.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        vjp_fun(qb.ones(3))
    with pytest.raises(ValueError):
        vjp_fun(qb.ones(2, dtype=qb.float32))


def test_bool_leaves_get_none_gradients():
    def f(p):
        return qb.sum(qb.where(p["m"], p["x"] * p["x"], 0.0))

    p = {"x": qb.array([1.0, 2.0, 3.0]), "m": qb.array([True, False, True])}
    g = qb.grad(f)(p)
    assert g["m"] is None
    np.testing.assert_array_equal(NP(g["x"]), [2.0, 0.0, 6.0])
    ga, gb = qb.grad(lambda x, m: qb.sum(qb.where(m, x, 0.0)), argnums=(0, 1))(p["x"], p["m"])
    assert gb is None
    np.testing.assert_array_equal(NP(ga), [1.0, 0.0, 1.0])


def test_gradients_mirror_pytrees_and_keep_float32():
    def f(p):
        a, (b, c) = p["l"][0], p["t"]
        return qb.sum(a * a) + qb.sum(b * c) + qb.sum(p["l"][1])

    p = {"l": [qb.array([1.0, 2.0], dtype=qb.float32), qb.array(3.0, dtype=qb.float32)],
         "t": (qb.array([1.0], dtype=qb.float32), qb.array([4.0], dtype=qb.float32))}
    value, g = qb.value_and_grad(f)(p)
    assert value.dtype == qb.float32
    assert isinstance(g, dict) and sorted(g) == ["l", "t"]
    assert isinstance(g["l"], list) and len(g["l"]) == 2
    assert isinstance(g["t"], tuple) and len(g["t"]) == 2
    assert qb.tree.structure(g) == qb.tree.structure(p)
    for leaf, ref in zip(qb.tree.leaves(g), qb.tree.leaves(p)):
        assert leaf.dtype == qb.float32 and leaf.shape == ref.shape
    np.testing.assert_array_equal(NP(g["l"][0]), np.array([2.0, 4.0], np.float32))
    assert float(g["l"][1]) == 1.0
    np.testing.assert_array_equal(NP(g["t"][0]), [4.0])
    np.testing.assert_array_equal(NP(g["t"][1]), [1.0])


# ---------------------------------------------------------------------------------------
# The README Quickstart transform lines


def test_readme_quickstart_transform_lines():
    # Lines as in the product description's Quickstart (seed/quabla-README.txt).
    x = qb.array([-1.0, 0.5, 1.0, 2.0], dtype=qb.float32)  # from a list
    w = qb.asarray(np.array([0.3, -0.2, 0.1, 0.4], dtype=np.float32))  # dtype from NumPy

    def loss(params, x):
        y = qb.tanh(x * params["w"] + params["b"])
        return qb.sum(qb.where(x > 0.0, y, 0.0) ** 2)  # masked entries contribute 0

    params = {"w": w, "b": qb.array(0.2, dtype=qb.float32)}
    value, grads = qb.value_and_grad(loss)(params, x)  # gradients mirror the dict
    assert value.dtype == qb.float32 and str(value.dtype) == "f32"
    np.testing.assert_allclose(value.item(), 0.6748224496841431, rtol=1e-6)
    assert grads["w"].dtype == qb.float32 and grads["b"].dtype == qb.float32
    np.testing.assert_allclose(grads["w"].tolist(), [-0.0, 0.09867792576551437, 0.53318190574646,
                                                     1.2793999910354614], rtol=1e-6)
    np.testing.assert_allclose(grads["b"].item(), 1.3702377080917358, rtol=1e-6)
    np.testing.assert_allclose(qb.grad(loss, argnums=1)(params, x).tolist(),  # d loss / d x
                               [0.0, -0.03947117179632187, 0.053318191319704056, 0.2558799982070923], rtol=1e-6)

    xs = qb.array([[0.5, 1.0, 2.0, -1.0], [1.0, 1.0, 1.0, 1.0]], dtype=qb.float32)
    per_example = qb.vmap(loss, in_axes=(None, 0))  # params shared, rows of xs mapped
    np.testing.assert_allclose(per_example(params, xs).tolist(), [0.2575097382068634, 0.5868375897407532],
                               rtol=1e-6)

    step = qb.jit(qb.value_and_grad(loss))  # traced and compiled on the first call
    value, grads = step(params, x)  # later calls with the same shapes reuse the plan
    np.testing.assert_allclose([value.item(), grads["b"].item()], [0.6748224496841431, 1.3702377080917358],
                               rtol=1e-6)


# ---------------------------------------------------------------------------------------
# A vmapped PINN residual: the program does not grow with the number of points


def _pinn_nodes(n):
    def u(x, w):
        return qb.sin(w * x)

    def loss(params, x):
        uxx = qb.vmap(qb.grad(qb.grad(u)), in_axes=(0, None))(x, params["w"])
        return qb.mean((uxx + math.pi ** 2 * qb.sin(math.pi * x)) ** 2)

    params = {"w": qb.array(2.5)}
    x = qb.linspace(0.0, 1.0, n)
    compiled = qb.jit(qb.value_and_grad(loss)).lower(params, x).compile()
    # the compiled program computes the right thing: u_xx = -w^2 sin(w x)
    value, g = compiled(params, x)
    xn = np.linspace(0.0, 1.0, n)
    r = -6.25 * np.sin(2.5 * xn) + math.pi ** 2 * np.sin(math.pi * xn)
    np.testing.assert_allclose(float(value), np.mean(r ** 2), rtol=1e-12)
    # d/dw mean(r^2) = mean(2 r (-2 w sin(w x) - w^2 x cos(w x)))
    dr = -2 * 2.5 * np.sin(2.5 * xn) - 6.25 * xn * np.cos(2.5 * xn)
    np.testing.assert_allclose(float(g["w"]), np.mean(2 * r * dr), rtol=1e-11)
    return compiled.stats()["nodes"]


def test_vmapped_pinn_loss_program_size_does_not_depend_on_batch_size():
    small, large = _pinn_nodes(4), _pinn_nodes(4096)
    assert small == large, f"{small} nodes for 4 points, {large} for 4096"
    assert small < 200


# ---------------------------------------------------------------------------------------
# More compositions and edge cases


def test_prod_derivative_with_zero_entries():
    np.testing.assert_array_equal(NP(qb.grad(qb.prod)(qb.array([0.0, 2.0, 3.0]))), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(NP(qb.grad(qb.prod)(qb.array([0.0, 0.0, 3.0]))), [0.0, 0.0, 0.0])
    _, t = qb.jvp(qb.prod, (qb.array([0.0, 2.0, 3.0]),), (qb.array([1.0, 1.0, 1.0]),))
    assert float(t) == 6.0


def test_grad_and_jvp_of_a_jitted_function():
    f = qb.jit(lambda x: qb.sum(qb.sin(x)))
    x = qb.array([0.1, 0.7])
    np.testing.assert_allclose(NP(qb.grad(f)(x)), np.cos([0.1, 0.7]), rtol=1e-15)
    _, t = qb.jvp(f, (x,), (qb.ones(2),))
    np.testing.assert_allclose(float(t), np.sum(np.cos([0.1, 0.7])), rtol=1e-15)


def test_grad_through_vmap_closing_over_the_differentiated_variable():
    xs = np.array([1.0, 2.0, 3.0])
    f = lambda w: qb.sum(qb.vmap(lambda x: qb.sin(w * x))(qb.array(xs)))  # noqa: E731
    np.testing.assert_allclose(float(qb.grad(f)(qb.array(0.5))), np.sum(np.cos(0.5 * xs) * xs), rtol=1e-14)
    np.testing.assert_allclose(float(qb.jit(qb.grad(f))(qb.array(0.5))), np.sum(np.cos(0.5 * xs) * xs), rtol=1e-14)
    _, t = qb.jvp(f, (qb.array(0.5),), (qb.array(1.0),))
    np.testing.assert_allclose(float(t), np.sum(np.cos(0.5 * xs) * xs), rtol=1e-14)


def test_jit_of_grad_and_of_jvp_equal_eager():
    f = lambda x: qb.sum(qb.tanh(x) * qb.cumsum(x))  # noqa: E731
    x = qb.array([0.3, -0.4, 1.1])
    np.testing.assert_allclose(NP(qb.jit(qb.grad(f))(x)), NP(qb.grad(f)(x)), rtol=1e-14)
    hv = lambda x, v: qb.jvp(qb.grad(f), (x,), (v,))[1]  # noqa: E731
    v = qb.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(NP(qb.jit(hv)(x, v)), NP(hv(x, v)), rtol=1e-13, atol=1e-15)
