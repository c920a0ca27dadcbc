"""qb.pure_callback (the host_call op): a Python function called with NumPy arrays when the
compiled program runs, eagerly, under jit, vmap (each vmap_method) and inside loops on both
loop tiers; results checked against NumPy; errors by type and message."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

F64 = qb.float64


def spec(shape, dtype=F64):
    return qb.ShapeDtype(shape, dtype)


def test_eager_and_jit_values_pytrees_and_kwargs():
    x = np.array([0.1, -0.7, 2.0])

    def f(a, scale=1.0):
        return {"s": np.sin(a) * scale, "n": np.array(np.sum(a > 0), np.int32)}

    out_spec = {"s": spec((3,)), "n": spec((), qb.int32)}
    eager = qb.pure_callback(f, out_spec, qb.array(x), scale=3.0)
    np.testing.assert_allclose(np.asarray(eager["s"]), np.sin(x) * 3.0, rtol=1e-15)
    assert int(eager["n"]) == 2 and eager["n"].dtype == qb.int32
    jitted = qb.jit(lambda a: qb.pure_callback(f, out_spec, a * 2.0, scale=0.5))(qb.array(x))
    np.testing.assert_allclose(np.asarray(jitted["s"]), np.sin(2 * x) * 0.5, rtol=1e-15)
    assert int(jitted["n"]) == 2


def test_runs_when_the_program_runs_never_at_trace_time_nor_folded():
    calls = []

    def f(a):
        calls.append(a.copy())
        return a + 1.0

    g = qb.jit(lambda a: qb.pure_callback(f, spec((2,)), qb.array([1.0, 2.0])) * a)  # a constant operand
    text = g.lower(qb.ones(2)).compile().plan_text()
    assert "host_call" in text and not calls  # compiling ran nothing
    for k in range(3):
        np.testing.assert_array_equal(np.asarray(g(qb.full(2, float(k)))), np.array([2.0, 3.0]) * k)
    assert len(calls) == 3
    np.testing.assert_array_equal(calls[0], [1.0, 2.0])


def test_result_mismatches_and_bad_arguments_raise_clearly():
    x = qb.array([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"returned an array of shape \(3,\) and dtype float32.*declared shape \(3,\) "
                                        r"and dtype float64"):
        qb.jit(lambda a: qb.pure_callback(lambda v: v.astype(np.float32), spec((3,)), a))(x)
    with pytest.raises(TypeError, match=r"shape \(2,\).*declared shape \(3,\)"):
        qb.jit(lambda a: qb.pure_callback(lambda v: v[:2], spec((3,)), a))(x)
    with pytest.raises(TypeError, match="the callback returned a"):
        qb.jit(lambda a: qb.pure_callback(lambda v: (v, v), spec((3,)), a))(x)
    with pytest.raises(TypeError, match="callback must be callable"):
        qb.pure_callback(3, spec((3,)), x)
    with pytest.raises(ValueError, match="vmap_method must be None, 'sequential'"):
        qb.pure_callback(np.sin, spec((3,)), x, vmap_method="vectorize")
    with pytest.raises(TypeError, match="must have .shape and .dtype"):
        qb.pure_callback(np.sin, (3,), x)
    # What the callback raises reaches the caller unchanged.
    def boom(v):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        qb.jit(lambda a: qb.pure_callback(boom, spec((3,)), a))(x)


def test_no_derivative_unless_a_custom_rule_gives_one():
    x = qb.array([0.3, 1.2])
    with pytest.raises(ValueError, match="can't differentiate a host call.*qb.custom_jvp or qb.custom_vjp"):
        qb.grad(lambda a: qb.sum(qb.pure_callback(np.sin, spec((2,)), a)))(x)
    # Operands that carry no tangent are fine.
    g = qb.grad(lambda a: qb.sum(a * qb.pure_callback(np.cos, spec((2,)), qb.stop_gradient(a))))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos([0.3, 1.2]), rtol=1e-15)

    @qb.custom_jvp
    def sin_cb(a):
        return qb.pure_callback(np.sin, spec(a.shape), a)

    @sin_cb.defjvp
    def _(p, t):
        return sin_cb(p[0]), qb.cos(p[0]) * t[0]

    @qb.custom_vjp
    def exp_cb(a):
        return qb.pure_callback(np.exp, spec(a.shape), a)

    exp_cb.defvjp(lambda a: (exp_cb(a), a), lambda a, c: (c * qb.exp(a),))
    for fn, d in ((sin_cb, np.cos), (exp_cb, np.exp)):
        for grad in (qb.grad, lambda f: qb.jit(qb.grad(f))):
            got = grad(lambda a: qb.sum(fn(a) * 2.0))(x)
            np.testing.assert_allclose(np.asarray(got), 2.0 * d(np.array([0.3, 1.2])), rtol=1e-14)


def test_vmap_methods():
    xs = qb.array(np.arange(12.0).reshape(4, 3))
    w = qb.array([1.0, -1.0, 2.0])
    seen = []

    def dot(a, b):
        seen.append((a.shape, b.shape))
        return np.asarray(np.sum(a * b, axis=-1), np.float64)

    with pytest.raises(ValueError, match="vmap of a qb.pure_callback needs vmap_method"):
        qb.vmap(lambda a: qb.pure_callback(dot, spec(()), a, w))(xs)
    ref = np.arange(12.0).reshape(4, 3) @ np.array([1.0, -1.0, 2.0])
    for method, shapes in (("sequential", [((3,), (3,))] * 4), ("broadcast_all", [((4, 3), (4, 3))]),
                           ("expand_dims", [((4, 3), (1, 3))])):
        seen.clear()
        got = qb.jit(qb.vmap(lambda a: qb.pure_callback(dot, spec(()), a, w, vmap_method=method)))(xs)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-15)
        assert seen == shapes, (method, seen)
    # Nested vmap, one call per example of both levels.
    seen.clear()
    nested = qb.vmap(qb.vmap(lambda a: qb.pure_callback(dot, spec(()), a, w, vmap_method="sequential")))
    got = nested(qb.array(np.arange(24.0).reshape(2, 4, 3)))
    np.testing.assert_allclose(np.asarray(got), np.arange(24.0).reshape(2, 4, 3) @ np.array([1.0, -1.0, 2.0]))
    assert len(seen) == 8


@pytest.mark.parametrize("tier", ["sync", "0"])
def test_inside_loops_on_both_tiers(tier, monkeypatch):
    monkeypatch.setenv("QUABLA_LOOP_JIT", tier)
    count = []

    def halve(s):
        count.append(1)
        return s * 0.5

    step = lambda i, s: qb.pure_callback(halve, spec((3,)), s) + qb.sin(s)  # noqa: E731
    got = qb.jit(lambda s: qb.fori_loop(0, 6, step, s))(qb.array([0.1, 0.2, 0.3]))
    ref = np.array([0.1, 0.2, 0.3])
    for _ in range(6):
        ref = ref * 0.5 + np.sin(ref)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-15)
    assert len(count) == 6
    # A while loop whose condition reads a callback, and an exception from a late step.
    w = qb.jit(lambda s: qb.while_loop(lambda c: qb.pure_callback(lambda v: np.asarray(v[0] < 10.0), spec((), qb.bool_), c),
                                       lambda c: c * 2.0, s))(qb.array([1.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(w), [16.0, 16.0])

    def late(s):
        if s[0] > 3.0:
            raise RuntimeError("late step failed")
        return s

    with pytest.raises(RuntimeError, match="late step failed"):
        qb.jit(lambda s: qb.fori_loop(0, 10, lambda i, s: qb.pure_callback(late, spec((3,)), s) + 1.0, s))(
            qb.zeros(3))


def _started_call(fn, shape, x, submit):
    """A host call whose job runs through `submit` (what qb.distributed's collectives use)."""
    from quabla import _callback, _core
    return _core.host_call(_callback.register(fn, "started", submit=submit), [x], list(shape), "float64", -1, 0)


def test_a_started_call_overlaps_with_the_rest_of_the_program():
    """A call started on another thread runs while the program computes on: its function
    waits for an event that only a later step of the same program sets, which would hang a
    program that ran the call where it stands (the wait is bounded, so that fails instead)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(1)
    reached = threading.Event()
    log = []

    def slow(a):
        log.append(("started", reached.is_set()))
        assert reached.wait(20), "the rest of the program never ran while the call was pending"
        return a * 10.0

    def later(b):
        reached.set()
        return b

    def step(x, y):
        early = _started_call(slow, (3,), x * 2.0, pool.submit)  # as an all-reduce of one gradient
        rest = qb.pure_callback(later, spec((3,)), qb.tanh(y) @ qb.ones((3, 3)))  # the rest of the work
        return early + rest, early

    f = qb.jit(step)
    x, y = qb.array([1.0, 2.0, 3.0]), qb.array([0.5, 0.0, -0.5])
    out, early = f(x, y)
    np.testing.assert_allclose(np.asarray(early), 20.0 * np.array([1.0, 2.0, 3.0]), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(out), 20.0 * np.array([1.0, 2.0, 3.0]) + np.tanh([0.5, 0.0, -0.5]).sum(),
                               rtol=1e-15)
    assert log == [("started", False)]
    # Recorded after a chain that does not need it, it still starts before the chain.
    late = qb.jit(lambda x, y: (qb.tanh(y) @ qb.ones((3, 3)), _started_call(slow, (3,), x * 2.0, pool.submit)))
    plan = late.lower(x, y).compile().plan_text()
    assert plan.index("host_call") < plan.index("matmul"), plan
    # Errors of the job surface when the program reads the result; the program ends cleanly.
    def failing(a):
        raise ValueError("the started job failed")
    g = qb.jit(lambda x: _started_call(failing, (3,), x, pool.submit) + 1.0)
    with pytest.raises(ValueError, match="the started job failed"):
        g(x)
    # grad and vmap through a program holding started calls run without the GIL as well.
    h = qb.jit(qb.vmap(lambda v: qb.pure_callback(lambda a: a + 1.0, spec((3,)), v, vmap_method="sequential")))
    np.testing.assert_array_equal(np.asarray(h(qb.ones((2, 3)))), np.full((2, 3), 2.0))
    pool.shutdown()
