"""Control flow (API.md §4): cond, fori_loop, scan and while_loop as IR regions.

Every loop is checked against the same computation unrolled in Python (values, gradients,
Hessians, HVPs to 1e-12 relative in float64), including pytree carries and xs, loops long
enough to use the O(sqrt T) checkpointed reverse pass, reverse-over-reverse and
forward-over-reverse. Then: cond laziness and NaN safety, vmap of all four (while with
per-example trip counts), closures over eager arrays and outer tracers, one node per loop in
the lowered program, errors before anything runs, and the memory of a long loop's gradient.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quabla as qb

NP = np.asarray
RTOL = 1e-12


def close(a, b, rtol=RTOL, atol=1e-13):
    np.testing.assert_allclose(NP(a), NP(b), rtol=rtol, atol=atol)


def tree_close(a, b, rtol=RTOL, atol=1e-13):
    la, da = qb.tree.flatten(a)
    lb, db = qb.tree.flatten(b)
    assert da == db
    for x, y in zip(la, lb):
        close(x, y, rtol, atol)


# ---------------------------------------------------------------------------------------
# fori_loop against the unrolled loop


def step(i, c, w):
    """One step with a pytree carry: a damped nonlinear update that reads the index."""
    u, v = c["u"], c["v"]
    return {"u": u + 0.1 * qb.tanh(w[0] * v + 0.01 * i), "v": v - 0.1 * qb.sin(w[1] * u) * v}


def fori(w, u0, T):
    return qb.fori_loop(0, T, lambda i, c: step(i, c, w), {"u": u0, "v": u0 * 0.5 + 1.0})


def unrolled(w, u0, T):
    c = {"u": u0, "v": u0 * 0.5 + 1.0}
    for i in range(T):
        c = step(float(i), c, w)
    return c


def scalar(f):
    return lambda w, u0: qb.sum(f(w, u0)["u"] ** 2) + qb.sum(qb.cos(f(w, u0)["v"]))


W = qb.array([0.7, -1.3])
U0 = qb.array(np.linspace(-1.0, 1.0, 5))


@pytest.mark.parametrize("T", [0, 1, 7, 8, 9, 16, 30, 101])
def test_fori_loop_values_and_gradients_match_the_unrolled_loop(T):
    tree_close(fori(W, U0, T), unrolled(W, U0, T))
    fl = scalar(lambda w, u: fori(w, u, T))
    fu = scalar(lambda w, u: unrolled(w, u, T))
    close(fl(W, U0), fu(W, U0))
    gl = qb.grad(fl, argnums=(0, 1))(W, U0)
    gu = qb.grad(fu, argnums=(0, 1))(W, U0)
    tree_close(gl, gu)
    # forward mode too
    tl = qb.jvp(lambda w: fl(w, U0), (W,), (qb.array([1.0, 0.5]),))[1]
    tu = qb.jvp(lambda w: fu(w, U0), (W,), (qb.array([1.0, 0.5]),))[1]
    close(tl, tu)


@pytest.mark.parametrize("T", [5, 23])
def test_fori_loop_hessian_and_hvp_match_the_unrolled_loop(T):
    fl = lambda w: scalar(lambda w, u: fori(w, u, T))(w, U0)  # noqa: E731
    fu = lambda w: scalar(lambda w, u: unrolled(w, u, T))(w, U0)  # noqa: E731
    close(qb.hessian(fl)(W), qb.hessian(fu)(W))
    v = qb.array([0.3, -2.0])
    close(qb.hvp(fl, (W,), (v,)), qb.hvp(fu, (W,), (v,)))


@pytest.mark.parametrize("T", [4, 19])
def test_reverse_over_reverse_and_forward_over_reverse_through_fori_loop(T):
    fl = lambda w: scalar(lambda w, u: fori(w, u, T))(w, U0)  # noqa: E731
    fu = lambda w: scalar(lambda w, u: unrolled(w, u, T))(w, U0)  # noqa: E731
    v = qb.array([0.3, -2.0])
    rr_l = qb.grad(lambda w: qb.sum(qb.grad(fl)(w) * v))(W)
    rr_u = qb.grad(lambda w: qb.sum(qb.grad(fu)(w) * v))(W)
    close(rr_l, rr_u)
    fr_l = qb.jvp(qb.grad(fl), (W,), (v,))[1]
    close(fr_l, rr_u)
    # and both against central differences of the gradient
    h = 1e-6
    g = qb.grad(fu)
    fd = (NP(g(W + h * v)) - NP(g(W - h * v))) / (2 * h)
    np.testing.assert_allclose(NP(rr_l), fd, rtol=1e-6, atol=1e-7)


def test_gradient_of_a_loop_matches_finite_differences():
    T = 40
    f = lambda w: scalar(lambda w, u: fori(w, u, T))(w, U0)  # noqa: E731
    g = NP(qb.grad(f)(W))
    h = 1e-6
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        fd = (float(f(W + qb.array(e))) - float(f(W - qb.array(e)))) / (2 * h)
        np.testing.assert_allclose(g[k], fd, rtol=1e-7)


def test_nested_loops_differentiate():
    def inner(x):
        return qb.fori_loop(0, 3, lambda j, y: qb.sin(y) + 0.1 * j * x, x)

    def f(x):
        return qb.sum(qb.fori_loop(0, 11, lambda i, c: inner(c) * 0.9 + x, x))

    def fu(x):
        c = x
        for i in range(11):
            y = c
            for j in range(3):
                y = qb.sin(y) + 0.1 * j * c
            c = y * 0.9 + x
        return qb.sum(c)

    x = qb.array([0.2, -0.4, 1.1])
    close(f(x), fu(x))
    close(qb.grad(f)(x), qb.grad(fu)(x))
    close(qb.hessian(f)(x), qb.hessian(fu)(x))


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(T=st.integers(0, 90), lo=st.integers(-5, 5), seed=st.integers(0, 2**16), tape=st.sampled_from(["0", None]))
def test_any_trip_count_and_lower_bound_gives_the_unrolled_gradient(T, lo, seed, tape):
    # Trip counts around the checkpoint block sizes (blocks of ceil(sqrt T) plus a tail),
    # with checkpoints forced (QUABLA_SCAN_TAPE_BYTES=0) or the default full tape.
    if tape is None:
        os.environ.pop("QUABLA_SCAN_TAPE_BYTES", None)
    else:
        os.environ["QUABLA_SCAN_TAPE_BYTES"] = tape
    try:
        _check_trip_count(T, lo, seed)
    finally:
        os.environ.pop("QUABLA_SCAN_TAPE_BYTES", None)


def _check_trip_count(T, lo, seed):
    rng = np.random.default_rng(seed)
    x = qb.array(rng.uniform(-1, 1, 4))
    a = qb.array(rng.uniform(0.5, 1.5))

    def f(a):
        return qb.sum(qb.fori_loop(lo, lo + T, lambda i, c: c + 0.05 * qb.sin(a * c + 0.1 * i), x) ** 2)

    def fu(a):
        c = x
        for i in range(lo, lo + T):
            c = c + 0.05 * qb.sin(a * c + 0.1 * i)
        return qb.sum(c ** 2)

    close(f(a), fu(a))
    close(qb.grad(f)(a), qb.grad(fu)(a))


def test_fori_loop_index_is_exact_and_bounds_follow_range():
    assert float(qb.fori_loop(3, 8, lambda i, c: c + i, 0.0)) == sum(range(3, 8))
    assert float(qb.fori_loop(5, 2, lambda i, c: c + i, 1.5)) == 1.5  # empty range
    # a float32 carry stays float32 (the index is weak)
    out = qb.fori_loop(0, 4, lambda i, c: c * 2.0 + i, qb.array([1.0], dtype=qb.float32))
    assert out.dtype == qb.float32
    close(out, [1.0 * 16 + (0 * 8 + 1 * 4 + 2 * 2 + 3)])


def test_python_number_carry_takes_the_dtype_the_body_gives_it():
    x = qb.array([1.0, 2.0], dtype=qb.float32)
    out = qb.fori_loop(0, 3, lambda i, c: c + qb.sum(x), 0.0)
    assert out.dtype == qb.float32 and out.shape == ()
    assert float(out) == 9.0


def test_jit_of_a_loop_equals_eager_and_traces_once():
    f = qb.jit(lambda w, u: scalar(lambda w, u: fori(w, u, 12))(w, u))
    close(f(W, U0), scalar(lambda w, u: fori(w, u, 12))(W, U0))
    g = qb.jit(qb.grad(lambda w, u: scalar(lambda w, u: fori(w, u, 12))(w, u)))
    close(g(W, U0), qb.grad(scalar(lambda w, u: unrolled(w, u, 12)))(W, U0))


def test_fori_loop_with_traced_bounds_runs_as_a_while_loop():
    f = qb.jit(lambda n, x: qb.fori_loop(0, n, lambda i, c: c * x, qb.ones_like(x)))
    close(f(qb.array(5.0), qb.array([2.0, 3.0])), [32.0, 243.0])
    close(f(qb.array(2.0), qb.array([2.0, 3.0])), [4.0, 9.0])


# ---------------------------------------------------------------------------------------
# scan


def scan_step(c, x, w):
    h = qb.tanh(c["h"] * x["a"] + w * x["b"][0])
    s = c["s"] + qb.sum(h * x["b"][1])
    return {"h": h, "s": s}, {"out": h * c["s"], "sq": s * s}


def xs_tree(T):
    rng = np.random.default_rng(T)
    return {"a": qb.array(rng.uniform(-1, 1, (T, 3))), "b": [qb.array(rng.uniform(-1, 1, (T,))),
                                                           qb.array(rng.uniform(-1, 1, (T, 3)))]}


def scan_unrolled(w, init, xs, reverse=False):
    T = xs["a"].shape[0]
    c, ys = init, [None] * T
    order = range(T - 1, -1, -1) if reverse else range(T)
    for t in order:
        x = {"a": xs["a"][t], "b": [xs["b"][0][t], xs["b"][1][t]]}
        c, ys[t] = scan_step(c, x, w)
    return c, {"out": qb.stack([y["out"] for y in ys]), "sq": qb.stack([y["sq"] for y in ys])}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("T", [1, 6, 27])
def test_scan_with_pytree_carry_and_xs_matches_the_unrolled_loop(T, reverse):
    w = qb.array(0.8)
    init = {"h": qb.array([0.1, -0.2, 0.3]), "s": qb.array(0.5)}
    xs = xs_tree(T)
    got = qb.scan(lambda c, x: scan_step(c, x, w), init, xs, reverse=reverse)
    want = scan_unrolled(w, init, xs, reverse)
    tree_close(got, want)

    def loss(impl):
        def f(w, init, xs):
            c, ys = impl(w, init, xs)
            return qb.sum(ys["out"] * qb.sin(ys["sq"])[:, None]) + c["s"] + qb.sum(c["h"] ** 2)
        return f

    f_scan = loss(lambda w, i, x: qb.scan(lambda c, xx: scan_step(c, xx, w), i, x, reverse=reverse))
    f_unr = loss(lambda w, i, x: scan_unrolled(w, i, x, reverse))
    close(f_scan(w, init, xs), f_unr(w, init, xs))
    tree_close(qb.grad(f_scan, argnums=(0, 1, 2))(w, init, xs), qb.grad(f_unr, argnums=(0, 1, 2))(w, init, xs))
    h_scan = qb.hessian(lambda w: f_scan(w, init, xs))(w)
    h_unr = qb.hessian(lambda w: f_unr(w, init, xs))(w)
    close(h_scan, h_unr)


def test_scan_without_xs_passes_none_and_stacks_ys():
    seen = []

    def step(c, x):
        seen.append(x)
        return c * 2.0 + 1.0, c

    c, ys = qb.scan(step, qb.array(1.0), length=5)
    assert seen and all(x is None for x in seen)  # as jax.lax.scan: f(carry, None)
    assert float(c) == 63.0
    close(ys, [1.0, 3.0, 7.0, 15.0, 31.0])
    c, ys = qb.scan(lambda c, i: (c, None), 0.0, length=3)
    assert ys is None


def test_scan_hvp_matches_the_unrolled_loop():
    w = qb.array([0.8, -0.4, 0.2])
    xs = qb.array(np.random.default_rng(0).uniform(-1, 1, (30, 3)))

    def f_scan(w):
        c, ys = qb.scan(lambda c, x: (qb.sin(c * w + x), c * x), qb.ones(3, dtype=qb.float64), xs)
        return qb.sum(ys ** 2) + qb.sum(c)

    def f_unr(w):
        c, ys = qb.ones(3, dtype=qb.float64), []
        for t in range(30):
            ys.append(c * xs[t])
            c = qb.sin(c * w + xs[t])
        return qb.sum(qb.stack(ys) ** 2) + qb.sum(c)

    v = qb.array([1.0, 2.0, -1.0])
    close(qb.hvp(f_scan, (w,), (v,)), qb.hvp(f_unr, (w,), (v,)))
    close(qb.jacfwd(qb.grad(f_scan))(w), qb.hessian(f_unr)(w))


# ---------------------------------------------------------------------------------------
# cond


def test_cond_selects_a_branch_eagerly_and_traced():
    def f(p, x):
        return qb.cond(p, lambda x: {"a": x * 2.0, "b": qb.sum(x)}, lambda x: {"a": x - 1.0, "b": qb.max(x)}, x)

    x = qb.array([1.0, 3.0])
    tree_close(f(True, x), {"a": qb.array([2.0, 6.0]), "b": qb.array(4.0)})
    tree_close(f(qb.array(False), x), {"a": qb.array([0.0, 2.0]), "b": qb.array(3.0)})
    jf = qb.jit(f)
    tree_close(jf(qb.array(True), x), f(True, x))
    tree_close(jf(qb.array(False), x), f(False, x))


def test_cond_runs_only_the_selected_branch():
    # The unselected branch is an endless loop: it must never run (a subprocess guards CI
    # against a hang if laziness ever broke).
    code = textwrap.dedent("""
        import quabla as qb
        # (stop_gradient: reverse mode cannot go through a while loop, even an unselected one)
        forever = lambda x: qb.while_loop(lambda c: c > -1.0, lambda c: c + 1.0, qb.stop_gradient(x))
        x = qb.array(2.0)
        print(float(qb.cond(x > 0, lambda x: x * 3.0, forever, x)))
        print(float(qb.jit(lambda x: qb.cond(x > 0, lambda x: x * 3.0, forever, x))(x)))
        print(float(qb.grad(lambda x: qb.cond(x < 0, forever, lambda x: x * x, x))(x)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6.0", "6.0", "4.0"]


def test_cond_nan_in_the_other_branch_reaches_neither_value_nor_gradient():
    def f(x):
        return qb.cond(x > 0, lambda x: qb.sqrt(x), lambda x: qb.log(-x) / 0.0, x)

    def g(x):
        return qb.cond(x > 0, lambda x: x * x, lambda x: qb.sqrt(-x - 10.0) / 0.0, x)

    x = qb.array(4.0)
    assert float(g(x)) == 16.0
    assert float(qb.grad(g)(x)) == 8.0  # where() would give NaN here
    assert float(qb.grad(qb.grad(g))(x)) == 2.0
    assert float(f(x)) == 2.0 and float(qb.grad(f)(x)) == 0.25
    # where() evaluates both sides: its gradient is NaN where cond's is not
    assert np.isnan(float(qb.grad(lambda x: qb.where(x > 0, qb.sqrt(x), qb.log(-x) / 0.0))(x)))
    # jit and vmap with an unbatched predicate keep the laziness
    assert float(qb.jit(qb.grad(g))(x)) == 8.0


def test_cond_python_number_operands_are_weak():
    x = qb.array([1.0, 2.0], dtype=qb.float32)
    out = qb.cond(True, lambda s: x * s, lambda s: x - s, 3.0)
    assert out.dtype == qb.float32
    close(out, [3.0, 6.0])


def test_cond_gradients_match_each_branch():
    w = qb.array([0.3, -0.7])

    def f(x):
        return qb.sum(qb.cond(qb.sum(x) > 0, lambda x: qb.sin(x) * w, lambda x: qb.exp(x) * w, x) ** 2)

    for xv in ([0.5, 0.2], [-0.5, 0.2]):
        x = qb.array(xv)
        branch = (lambda x: qb.sin(x) * w) if sum(xv) > 0 else (lambda x: qb.exp(x) * w)
        close(qb.grad(f)(x), qb.grad(lambda x: qb.sum(branch(x) ** 2))(x))
        close(qb.hessian(f)(x), qb.hessian(lambda x: qb.sum(branch(x) ** 2))(x))


# ---------------------------------------------------------------------------------------
# while_loop


def test_while_loop_values_and_forward_mode():
    def f(x):
        return qb.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] + 1.0, c[1] * x), (0.0, qb.ones_like(x)))[1]

    x = qb.array([1.5, -0.5])
    close(f(x), NP(x) ** 10)
    close(qb.jvp(f, (x,), (qb.ones_like(x),))[1], 10 * NP(x) ** 9)
    close(qb.jacfwd(f)(x), np.diag(10 * NP(x) ** 9))
    close(qb.jit(f)(x), NP(x) ** 10)


def test_while_loop_in_reverse_mode_raises_a_value_error_naming_fori_loop():
    def f(x):
        return qb.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)

    with pytest.raises(ValueError, match="fori_loop"):
        qb.grad(f)(qb.array(1.5))
    with pytest.raises(ValueError, match="where"):
        qb.jacrev(lambda x: qb.while_loop(lambda c: qb.sum(c) < 10.0, lambda c: c * x, x))(qb.array([1.5]))


def test_while_loop_on_values_that_are_not_differentiated_is_fine_under_grad():
    def f(x):
        n = qb.while_loop(lambda c: c < 5.0, lambda c: c + 1.0, 0.0)
        return x * n

    assert float(qb.grad(f)(qb.array(2.0))) == 5.0


# ---------------------------------------------------------------------------------------
# vmap of all four


def test_vmap_of_fori_loop_and_scan_match_a_loop_over_examples():
    U = qb.array(np.random.default_rng(1).uniform(-1, 1, (4, 5)))
    got = qb.vmap(lambda u: fori(W, u, 13))(U)
    for k in range(4):
        tree_close({n: got[n][k] for n in got}, fori(W, U[k], 13))
    g = qb.vmap(qb.grad(lambda w, u: scalar(lambda w, u: fori(w, u, 13))(w, u)), in_axes=(None, 0))(W, U)
    for k in range(4):
        close(g[k], qb.grad(scalar(lambda w, u: unrolled(w, u, 13)))(W, U[k]))
    xs = qb.array(np.random.default_rng(2).uniform(-1, 1, (3, 9, 2)))
    f = lambda x: qb.scan(lambda c, r: (c * 0.5 + r, qb.sum(c * r)), qb.zeros(2, dtype=qb.float64), x)  # noqa: E731
    c, ys = qb.vmap(f)(xs)
    for k in range(3):
        ck, yk = f(xs[k])
        close(c[k], ck)
        close(ys[k], yk)


def test_vmap_of_cond_with_a_batched_predicate_selects_per_example():
    f = lambda x: qb.cond(x[0] > 0, lambda x: x * 2.0, lambda x: -x, x)  # noqa: E731
    X = qb.array([[1.0, 2.0], [-1.0, 3.0], [0.5, -4.0]])
    close(qb.vmap(f)(X), [[2.0, 4.0], [1.0, -3.0], [1.0, -8.0]])
    # an unbatched predicate stays a cond over batched branches
    g = lambda p, x: qb.cond(p, lambda x: x * 2.0, lambda x: -x, x)  # noqa: E731
    close(qb.vmap(g, in_axes=(None, 0))(qb.array(True), X), NP(X) * 2)
    text = qb.jit(lambda X: qb.vmap(lambda x: g(qb.array(True), x))(X)).lower(X).as_text()
    assert "= cond(" in text


def test_vmap_of_while_loop_with_per_example_trip_counts():
    def f(x):
        return qb.while_loop(lambda c: c[0] < x, lambda c: (c[0] + 1.0, c[1] * 2.0), (qb.array(0.0), qb.array(1.0)))

    xs = qb.array([1.0, 3.0, 5.0, 0.0, 2.5])
    n, p = qb.vmap(f)(xs)
    close(n, [1.0, 3.0, 5.0, 0.0, 3.0])
    close(p, [2.0, 8.0, 32.0, 1.0, 8.0])
    # forward mode of the batched loop
    t = qb.vmap(lambda x: qb.jvp(lambda y: qb.while_loop(lambda c: c[0] < x, lambda c: (c[0] + 1.0, c[1] * y),
                                                          (qb.array(0.0), qb.array(1.0)))[1], (x,), (qb.array(1.0),))[1])(
        qb.array([2.0, 3.0]))
    close(t, [2 * 2.0, 3 * 3.0 ** 2])


# ---------------------------------------------------------------------------------------
# Closures


def test_bodies_close_over_eager_arrays_and_outer_tracers():
    table = qb.array([1.0, 2.0, 3.0])  # an eager array: a constant of the body

    def f(w):
        # w is a tracer of grad's trace, read by the body: an operand of the loop node
        return qb.sum(qb.fori_loop(0, 6, lambda i, c: c * w + table, qb.zeros(3, dtype=qb.float64)))

    def fu(w):
        c = qb.zeros(3, dtype=qb.float64)
        for _ in range(6):
            c = c * w + table
        return qb.sum(c)

    w = qb.array(0.9)
    close(f(w), fu(w))
    close(qb.grad(f)(w), qb.grad(fu)(w))
    close(qb.jit(qb.grad(f))(w), qb.grad(fu)(w))
    # a closed-over tracer in cond's branches and while's cond
    g = lambda x, y: qb.cond(x > 0, lambda: x * y, lambda: y)  # noqa: E731
    close(qb.grad(g, argnums=(0, 1))(qb.array(2.0), qb.array(3.0)), (3.0, 2.0))
    h = qb.jit(lambda lim: qb.while_loop(lambda c: c < lim, lambda c: c + 1.0, 0.0))
    assert float(h(qb.array(4.5))) == 5.0


# ---------------------------------------------------------------------------------------
# One node per region, whatever the trip count


@pytest.mark.parametrize("T", [10, 10_000])
def test_a_loop_is_one_node_in_the_lowered_program(T):
    def f(x):
        return qb.fori_loop(0, T, lambda i, c: qb.sin(c) + 0.001, x)

    text = qb.jit(f).lower(qb.array([0.1, 0.2])).as_text()
    top = [line for line in text.splitlines() if line.startswith("  %")]
    assert len([line for line in top if "= scan(" in line]) == 1
    assert f"length={T}" in text
    assert len(text.splitlines()) < 20  # the size does not grow with T
    g = qb.jit(qb.grad(lambda x: qb.sum(f(x))))
    gtext = g.lower(qb.array([0.1, 0.2])).as_text()
    assert len(gtext.splitlines()) < 200


def test_carry_buffers_are_reused_across_iterations():
    # 2,000 steps over a 1e6-element carry (8 MB): without reuse the loop would touch
    # 16 GB of fresh memory; the peak grows by a few carries at most.
    code = textwrap.dedent("""
        import resource
        import quabla as qb
        x = qb.ones(1_000_000, dtype=qb.float64)
        f = lambda T: qb.fori_loop(0, T, lambda i, c: c * 0.999 + 0.001, x)
        f(3)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        y = f(2000)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(peak - base, float(y[0]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    growth, y0 = out.stdout.split()
    assert int(growth) < 5 * 8_000_000, f"peak grew {int(growth) / 1e6:.0f} MB"
    assert abs(float(y0) - 1.0) < 1e-12


def test_a_long_loop_runs_without_python_per_step():
    calls = []

    def body(i, c):
        calls.append(1)
        return c + 1.0

    assert float(qb.fori_loop(0, 100_000, body, 0.0)) == 100_000.0
    assert len(calls) == 1  # traced once; the steps run in C++


# ---------------------------------------------------------------------------------------
# Errors, before anything runs


def test_carry_shape_dtype_and_structure_changes_raise_type_errors():
    x = qb.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"fori_loop: body_fun changed carry leaf carry.*float64\[2\].*float64\[1\]"):
        qb.fori_loop(0, 3, lambda i, c: c[:1], x)
    with pytest.raises(TypeError, match=r"carry leaf carry\['b'\] from float64\[2\] to float32\[2\]"):
        qb.fori_loop(0, 3, lambda i, c: {"a": c["a"], "b": c["b"].astype(qb.float32)}, {"a": x, "b": x})
    with pytest.raises(TypeError, match="structure"):
        qb.fori_loop(0, 3, lambda i, c: (c, c), x)
    with pytest.raises(TypeError, match="scan: f changed carry leaf"):
        qb.scan(lambda c, r: (qb.sum(c) * r, r), x, qb.array(np.ones((4, 3))))
    with pytest.raises(TypeError, match="pair"):
        qb.scan(lambda c, r: c, x, qb.array(np.ones((4, 2))))
    with pytest.raises(TypeError, match="while_loop: body_fun changed"):
        qb.while_loop(lambda c: qb.sum(c) < 5.0, lambda c: qb.sum(c), x)


def test_branch_mismatch_and_bad_predicates_raise():
    x = qb.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"cond: true_fun and false_fun disagree at output.*float64\[2\].*float64\[\]"):
        qb.cond(True, lambda x: x, lambda x: qb.sum(x), x)
    with pytest.raises(TypeError, match="same structure"):
        qb.cond(True, lambda x: (x, x), lambda x: x, x)
    with pytest.raises(TypeError, match="pred must be a scalar"):
        qb.cond(qb.array([True, False]), lambda x: x, lambda x: x, x)
    with pytest.raises(TypeError, match="cond_fun must return a bool scalar"):
        qb.while_loop(lambda c: c, lambda c: c + 1.0, x)
    with pytest.raises(TypeError, match="float64"):
        qb.cond(True, lambda x: x, lambda x: x.astype(qb.float32), x)


def test_scan_argument_errors():
    x = qb.array([1.0])
    with pytest.raises(ValueError, match="different leading sizes"):
        qb.scan(lambda c, r: (c, r), x, (qb.ones(3), qb.ones(4)))
    with pytest.raises(ValueError, match="length="):
        qb.scan(lambda c, i: (c, i), x)
    with pytest.raises(ValueError, match="differs from the leading size"):
        qb.scan(lambda c, r: (c, r), x, qb.ones(3), length=4)
    with pytest.raises(TypeError, match="must be a Python int"):
        qb.fori_loop(0, 2.5, lambda i, c: c, x)
    with pytest.raises(TypeError, match="callable"):
        qb.fori_loop(0, 2, None, x)


def test_an_error_inside_a_body_leaves_no_open_trace():
    x = qb.array([1.0])
    with pytest.raises(ZeroDivisionError):
        qb.fori_loop(0, 2, lambda i, c: 1 / 0, x)
    # later calls are unaffected
    assert float(qb.fori_loop(0, 2, lambda i, c: c + 1.0, 0.0)) == 2.0


# ---------------------------------------------------------------------------------------
# Memory: the gradient of a long loop keeps O(sqrt T) carries, not a tape of T


def test_gradient_of_a_long_loop_uses_a_fraction_of_a_full_tape():
    code = textwrap.dedent("""
        import resource
        import numpy as np
        import quabla as qb
        T, N = 4000, 20000
        x0 = qb.array(np.linspace(-1, 1, N))
        body = lambda w: (lambda i, c: c + 0.001 * qb.sin(c * w))
        loss = lambda w, T: qb.sum(qb.fori_loop(0, T, body(w), x0) ** 2)
        w = qb.array(0.7)
        float(qb.grad(lambda w: loss(w, 20))(w))  # warm up every code path on a short loop
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        g = float(qb.grad(lambda w: loss(w, T))(w))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(peak - base, T * N * 8, g)
    """)
    env = dict(os.environ, QUABLA_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    growth, tape, g = out.stdout.split()
    assert np.isfinite(float(g))
    assert int(growth) < int(tape) / 5, f"peak grew {int(growth) / 1e6:.0f} MB; a full tape is {int(tape) / 1e6:.0f} MB"


def test_eager_calls_give_bitwise_the_results_of_jit():
    # Eager calls stage each body once and run the node at once (no Python per step);
    # both branches of cond are staged so mismatches raise eagerly too.
    x = qb.array(np.linspace(-1.0, 1.0, 7))
    funcs = [
        lambda x: qb.fori_loop(0, 50, lambda i, c: qb.sin(c) * 0.9 + 0.01 * i, x),
        lambda x: qb.scan(lambda c, r: (c * 0.5 + r, qb.exp(c) * r), qb.sum(x), x)[1],
        lambda x: qb.cond(qb.sum(x) >= 0, lambda x: qb.tanh(x) * 3.0, lambda x: x, x),
        lambda x: qb.while_loop(lambda c: qb.max(c) < 5.0, lambda c: c * 1.3 + 0.1, x),
        qb.grad(lambda x: qb.sum(qb.fori_loop(0, 30, lambda i, c: qb.cos(c * x), x))),
    ]
    for f in funcs:
        np.testing.assert_array_equal(NP(f(x)), NP(qb.jit(f)(x)))


def test_cond_inside_a_loop_differentiates_like_the_unrolled_loop():
    def step(i, c, w):
        return qb.cond(qb.sum(c) > 0.0, lambda c: c * w - 0.3, lambda c: qb.sin(c) + w, c)

    def f(w):
        return qb.sum(qb.fori_loop(0, 25, lambda i, c: step(i, c, w), qb.array([0.2, -0.1])) ** 2)

    def fu(w):
        c = qb.array([0.2, -0.1])
        for i in range(25):
            c = qb.where(qb.sum(c) > 0.0, c * w - 0.3, qb.sin(c) + w)  # both finite: where is a fine reference
        return qb.sum(c ** 2)

    w = qb.array(0.8)
    close(f(w), fu(w))
    close(qb.grad(f)(w), qb.grad(fu)(w))
    close(qb.hessian(f)(w), qb.hessian(fu)(w))
    ws = qb.array([0.8, 0.5, 1.1])
    close(qb.vmap(qb.grad(f))(ws), [float(qb.grad(fu)(ws[k])) for k in range(3)])


def test_scan_with_no_carry_and_with_no_ys():
    xs = qb.array([1.0, 2.0, 3.0])
    c, ys = qb.scan(lambda c, x: (c, x * x), (), xs)
    assert c == () and NP(ys).tolist() == [1.0, 4.0, 9.0]
    g = qb.grad(lambda xs: qb.sum(qb.scan(lambda c, x: (c, qb.sin(x)), (), xs)[1]))(xs)
    close(g, np.cos(NP(xs)))
    c, ys = qb.scan(lambda c, x: (c + x, None), qb.array(0.0), xs)
    assert float(c) == 6.0 and ys is None


def test_weak_index_and_carries_stay_weak_through_arithmetic():
    x = qb.ones((3,), dtype=qb.float32)
    out = qb.fori_loop(0, 4, lambda i, c: c + i * 0.5 + qb.sin(i * 0.0), x)  # weak * Python float stays weak
    assert out.dtype == qb.float32
    close(out, [4.0, 4.0, 4.0])
    out = qb.fori_loop(0, 3, lambda i, c: c * 2.0 + qb.sum(x), 0.0)
    assert out.dtype == qb.float32 and float(out) == 21.0
    out = qb.cond(True, lambda s: x * (s * 2), lambda s: x, 3.0)
    assert out.dtype == qb.float32
    close(out, [6.0, 6.0, 6.0])
    lim = qb.array(4.5, dtype=qb.float32)
    assert float(qb.while_loop(lambda c: c < lim, lambda c: c + 1.0, 0.0)) == 5.0
    # two weak leaves that settle one after the other
    s = qb.array(2.0, dtype=qb.float32)
    a, b = qb.fori_loop(0, 3, lambda i, c: (c[0] * s, c[1] + c[0]), (1.0, 0.0))
    assert a.dtype == b.dtype == qb.float32 and (float(a), float(b)) == (8.0, 7.0)


def test_traced_bounds_pass_a_weak_index_without_a_derivative():
    x0 = qb.ones((3,), dtype=qb.float32)
    out = qb.jit(lambda n: qb.fori_loop(0, n, lambda i, c: c + i, x0))(qb.array(4.0))
    assert out.dtype == qb.float32
    close(out, [7.0, 7.0, 7.0])
    # d/dlo of sum over i in [lo, 3) of c: only the trip count depends on lo, no tangent flows
    t = qb.jvp(lambda lo: qb.fori_loop(lo, 3.0, lambda i, c: c + i, 0.0), (qb.array(0.0),), (qb.array(1.0),))[1]
    assert float(t) == 0.0


def test_reverse_mode_through_a_while_loop_whose_carry_does_not_depend_on_the_input():
    f = lambda x: qb.while_loop(lambda c: c < x, lambda c: c + 1.0, 0.0) * x  # noqa: E731
    assert float(qb.grad(f)(qb.array(3.5))) == 4.0
    assert float(qb.jit(qb.grad(f))(qb.array(2.5))) == 3.0


def test_cond_branches_returning_non_arrays_raise_type_error():
    with pytest.raises(TypeError, match="branches must return arrays"):
        qb.cond(True, lambda: 1.0, lambda: "abc")
    assert float(qb.cond(False, lambda: 1.0, lambda: 2.0)) == 2.0


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(T=st.integers(1, 12), B=st.integers(1, 4), reverse=st.booleans(),
       mapped=st.tuples(st.booleans(), st.booleans(), st.booleans()).filter(any), seed=st.integers(0, 2**16))
def test_vmap_of_scan_and_its_gradient_match_a_loop_for_any_mapping(T, B, reverse, mapped, seed):
    rng = np.random.default_rng(seed)
    map_c0, map_xs, map_w = mapped
    c0 = rng.uniform(-1, 1, (B, 2) if map_c0 else (2,))
    xs = rng.uniform(-1, 1, (B, T, 2) if map_xs else (T, 2))
    w = rng.uniform(0.5, 1.5, (B,) if map_w else ())

    def f(c0, xs, w):
        c, ys = qb.scan(lambda c, x: (qb.tanh(c * w + x), qb.sum(c * x)), c0, xs, reverse=reverse)
        return qb.sum(c) + qb.sum(ys * ys)

    axes = (0 if map_c0 else None, 0 if map_xs else None, 0 if map_w else None)
    args = (qb.array(c0), qb.array(xs), qb.array(w))
    pick = lambda a, m, k: qb.array(a[k]) if m else qb.array(a)  # noqa: E731
    got = qb.vmap(f, in_axes=axes)(*args)
    grads = qb.vmap(qb.grad(f, argnums=(0, 2)), in_axes=axes)(*args)
    for k in range(B):
        ex = (pick(c0, map_c0, k), pick(xs, map_xs, k), pick(w, map_w, k))
        close(got[k], f(*ex))
        g0, g2 = qb.grad(f, argnums=(0, 2))(*ex)
        close(grads[0][k], g0)
        close(grads[1][k], g2)


def test_an_empty_scan_stacks_empty_outputs_and_returns_the_init():
    c = qb.ones(3, dtype=qb.float64)
    c1, ys = qb.scan(lambda c, x: (c, c * 2.0), c, length=0)
    assert ys.shape == (0, 3) and NP(c1).tolist() == [1.0, 1.0, 1.0]
    c1, ys = qb.scan(lambda c, x: (c + x, x * c), c, qb.zeros((0, 3)))
    assert ys.shape == (0, 3) and NP(c1).tolist() == [1.0, 1.0, 1.0]
    c2, ys = qb.scan(lambda c, i: (c + 1.0, None), c, length=0)
    assert ys is None and NP(c2).tolist() == [1.0, 1.0, 1.0]
    close(qb.grad(lambda c: qb.sum(qb.scan(lambda c, i: (c * 2.0, None), c, length=0)[0] ** 2))(c), [2.0, 2.0, 2.0])


def test_huge_trig_arguments_agree_between_eager_jit_and_loop_bodies():
    # In-place kernels (a fused scratch tile reused by sin) keep the long-double path for
    # |x| >= 2^24 (glibc's vector sin is off there).
    x = qb.array(np.linspace(1e8, 2e8, 9))
    f = lambda x: qb.sin(x * 2.0) * 3.0 + qb.cos(x * 3.0) + qb.tan(x * 0.5)  # noqa: E731
    eager = NP(f(x))
    np.testing.assert_array_equal(NP(qb.jit(f)(x)), eager)
    np.testing.assert_array_equal(NP(qb.fori_loop(0, 1, lambda i, c: f(c), x)), eager)
    xs = np.linspace(1e8, 2e8, 9)
    np.testing.assert_allclose(eager, 3 * np.sin(2 * xs) + np.cos(3 * xs) + np.tan(0.5 * xs), rtol=1e-9, atol=1e-9)
