"""qb.debug.print and qb.debug.callback (effect host calls): they run each time the compiled
program reaches them, in program order, survive dead-code elimination, pass through
derivatives and vmap, and run inside loops and taken cond branches only."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb


def test_print_inside_jit_runs_per_call_with_the_values(capsys):
    f = qb.jit(lambda x: (qb.debug.print("x = {} and {k}", x * 2, k=qb.sum(x)), x + 1)[1])
    assert capsys.readouterr().out == ""
    f(qb.array([1.0, 2.0]))
    f(qb.array([3.0, 4.0]))
    assert capsys.readouterr().out == "x = [2. 4.] and 3.0\nx = [6. 8.] and 7.0\n"
    qb.debug.print("eager {}", qb.array([1, 2]))  # at once when nothing is traced
    assert capsys.readouterr().out == "eager [1 2]\n"


def test_callbacks_survive_dead_code_run_in_order_and_take_static_leaves():
    seen = []

    def f(x):
        qb.debug.callback(lambda a, tag: seen.append((tag, a.tolist())), x, "first")
        y = qb.sin(x)
        qb.debug.callback(lambda a, tag: seen.append((tag, a.tolist())), y * 0.0, tag="second")
        qb.debug.callback(lambda: seen.append(("no operands", None)))
        return x * 3.0  # nothing reads the callbacks' results

    g = qb.jit(f)
    assert "effect" in g.lower(qb.zeros(2)).compile().plan_text()
    np.testing.assert_array_equal(np.asarray(g(qb.array([1.0, 2.0]))), [3.0, 6.0])
    assert seen == [("first", [1.0, 2.0]), ("second", [0.0, 0.0]), ("no operands", None)]


def test_derivatives_pass_through_and_print_the_primal(capsys):
    f = lambda x: (qb.debug.print("x={}", x), qb.sum(x ** 2))[1]  # noqa: E731
    g = qb.jit(qb.grad(f))(qb.array([1.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 6.0])
    assert capsys.readouterr().out == "x=[1. 3.]\n"
    h = qb.jit(qb.hessian(f))(qb.array([1.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(h), 2 * np.eye(2))
    j = qb.jvp(qb.jit(f), (qb.array([1.0, 3.0]),), (qb.array([1.0, 0.0]),))[1]
    assert float(j) == 2.0


def test_loops_conds_and_vmap():
    seen = []
    body = lambda i, s: (qb.debug.callback(lambda k, v: seen.append((int(k), float(v))), i, s), s * 2.0)[1]  # noqa: E731
    out = qb.jit(lambda s: qb.fori_loop(0, 4, body, s))(qb.asarray(1.0))
    assert float(out) == 16.0
    assert seen == [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0)]
    seen.clear()
    branch = lambda x: qb.cond(x > 0, lambda v: (qb.debug.callback(lambda: seen.append("pos")), v)[1],  # noqa: E731
                               lambda v: (qb.debug.callback(lambda: seen.append("neg")), -v)[1], x)
    f = qb.jit(branch)
    f(qb.asarray(2.0))
    f(qb.asarray(-2.0))
    assert seen == ["pos", "neg"]
    seen.clear()
    qb.jit(qb.vmap(lambda x: (qb.debug.callback(lambda a: seen.append(a.tolist()), x), x)[1]))(
        qb.arange(6.0).reshape(2, 3))
    assert seen == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]  # once per example, in order (jax.debug's)


def test_reverse_mode_through_a_loop_prints_forward_values_only():
    """The backward pass replays each step's primal part without its effects: what a body
    prints comes from forward passes (the value and the tape: documented), never reversed."""
    seen = []
    body = lambda i, s, p: (qb.debug.callback(lambda v: seen.append(float(v)), s), s * p)[1]  # noqa: E731
    g = qb.jit(qb.grad(lambda p: qb.fori_loop(0, 3, lambda i, s: body(i, s, p), qb.asarray(1.0))))
    assert float(g(qb.asarray(2.0))) == 12.0
    assert seen and len(seen) % 3 == 0 and seen == [1.0, 2.0, 4.0] * (len(seen) // 3), seen


def test_bad_arguments():
    with pytest.raises(TypeError, match="fmt must be a str"):
        qb.debug.print(3)
    with pytest.raises(TypeError, match="callback must be callable"):
        qb.debug.callback(None)
