"""vmap (API.md §3): batching rules of every op, against a Python loop over examples.

The per-op tests are generated from src/quabla/ir/ops.def through the table in
ad_op_table.py. Each entry is mapped with in_axes=0, with the batch axis elsewhere, with
some arguments unmapped (in_axes=None), nested, and through its gradient and its jvp, and
compared with a loop over examples (to 1e-12; the batched program may sum in another order).
"""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

from ad_op_table import CASES, CASE_BY_OP, ops_in_def

B = 3
RTOL = 1e-12
ATOL = 1e-13
NP = np.asarray


def _ids(cases):
    return [c.op for c in cases]


def _close(actual, expected, what=""):
    assert isinstance(actual, qb.Array)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == qb.float64
    np.testing.assert_allclose(NP(actual), expected, rtol=RTOL, atol=ATOL, err_msg=what)


def _batch(case):
    """B examples of every argument: a list (per argument) of arrays with a leading batch axis."""
    examples = [case.np_args(salt=i) for i in range(B)]
    return [np.stack([ex[k] for ex in examples]) for k in range(case.nargs)]


def _loop(fn, batched, axes):
    """fn applied example by example: batched[k] is indexed along axes[k] (None: shared)."""
    outs = []
    for i in range(B):
        args = [qb.array(np.take(a, i, axis=ax)) if ax is not None else qb.array(a) for a, ax in zip(batched, axes)]
        outs.append(NP(fn(*args)).copy())
    return np.stack(outs)


MULTI = [c for c in CASES if c.nargs > 1]


def test_every_op_in_ops_def_has_a_vmap_entry():
    declared = ops_in_def()
    missing = [op for op in declared if op not in CASE_BY_OP]
    assert not missing, f"ops without a vmap test entry in ad_op_table.py: {missing}"


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_vmap_matches_a_loop(case):
    xs = _batch(case)
    got = qb.vmap(case.fn)(*[qb.array(a) for a in xs])
    _close(got, _loop(case.fn, xs, [0] * case.nargs), case.op)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_vmap_with_the_batch_axis_inside_and_out_axes(case):
    xs = _batch(case)
    moved = [np.moveaxis(a, 0, 1) for a in xs]  # batch axis at position 1
    expected = _loop(case.fn, xs, [0] * case.nargs)
    got = qb.vmap(case.fn, in_axes=1)(*[qb.array(a) for a in moved])
    _close(got, expected, f"{case.op} in_axes=1")
    got = qb.vmap(case.fn, in_axes=tuple([-a.ndim + 1 for a in moved]))(*[qb.array(a) for a in moved])
    _close(got, expected, f"{case.op} negative in_axes")
    got = qb.vmap(case.fn, out_axes=-1)(*[qb.array(a) for a in xs])
    _close(got, np.moveaxis(expected, 0, -1), f"{case.op} out_axes=-1")


@pytest.mark.parametrize("case", MULTI, ids=_ids(MULTI))
@pytest.mark.parametrize("mapped", [0, 1])
def test_vmap_with_unmapped_arguments(case, mapped):
    xs = _batch(case)
    axes = [None] * case.nargs
    axes[mapped] = 0
    args = [qb.array(a) if ax == 0 else qb.array(a[0]) for a, ax in zip(xs, axes)]
    shared = [a if ax == 0 else a[0] for a, ax in zip(xs, axes)]
    got = qb.vmap(case.fn, in_axes=tuple(axes))(*args)
    _close(got, _loop(case.fn, shared, axes), f"{case.op} in_axes={tuple(axes)}")


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_nested_vmap_matches_a_double_loop(case):
    rng_examples = [[case.np_args(salt=10 * i + j) for j in range(2)] for i in range(B)]
    xs = [np.stack([np.stack([ex[k] for ex in row]) for row in rng_examples]) for k in range(case.nargs)]
    got = qb.vmap(qb.vmap(case.fn))(*[qb.array(a) for a in xs])
    expected = np.stack([np.stack([NP(case.fn(*[qb.array(a) for a in ex])) for ex in row]) for row in rng_examples])
    _close(got, expected, f"{case.op} nested")
    # the inner map over the second axis, the outer over the first
    got = qb.vmap(qb.vmap(case.fn, in_axes=0), in_axes=1)(*[qb.array(np.swapaxes(a, 0, 1)) for a in xs])
    _close(got, expected, f"{case.op} nested, outer in_axes=1")


GRAD_CASES = [c for c in CASES if not c.forward_only]


@pytest.mark.parametrize("case", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_vmap_of_grad_matches_a_loop(case):
    """Per-example gradients: batches the ops that derivatives emit (pad, scatter_add,
    select, broadcasts, ...), with the weights unmapped."""
    xs = _batch(case)
    w = np.random.default_rng(2).normal(size=case.fn(*case.args()).shape)
    argnums = tuple(range(case.nargs))

    def g(wt, *a):
        return qb.grad(lambda *b: qb.sum(case.fn(*b) * wt), argnums=argnums)(*a)

    got = qb.vmap(g, in_axes=(None,) + (0,) * case.nargs)(qb.array(w), *[qb.array(a) for a in xs])
    assert isinstance(got, tuple) and len(got) == case.nargs
    for k in range(case.nargs):
        expected = _loop(lambda *a: g(qb.array(w), *a)[k], xs, [0] * case.nargs)
        _close(got[k], expected, f"{case.op} grad argument {k}")


@pytest.mark.parametrize("case", [c for c in CASES if not c.reverse_only], ids=_ids([c for c in CASES if not c.reverse_only]))
def test_vmap_of_jvp_over_a_basis_gives_the_jacobian(case):
    """Only the tangents are mapped: exercises the rules with unbatched primal operands."""
    args = case.args()
    n_out = case.fn(*args).size
    for k, a in enumerate(args):
        basis = np.eye(a.size).reshape((a.size,) + a.shape)

        def col(t, k=k):
            tangents = [qb.zeros_like(b) for b in args]
            tangents[k] = t
            return qb.jvp(case.fn, tuple(args), tuple(tangents))[1]

        got = qb.vmap(col)(qb.array(basis))
        expected = []
        for j in range(a.size):
            tangents = [qb.zeros_like(b) for b in args]
            tangents[k] = qb.array(basis[j])
            expected.append(NP(qb.jvp(case.fn, tuple(args), tuple(tangents))[1]).copy())
        _close(got, np.stack(expected), f"{case.op} vmap of jvp, argument {k}")
        assert got.size == a.size * n_out


# ---------------------------------------------------------------------------------------
# The vmap API


def test_vmap_pytree_in_axes_prefix_and_outputs():
    def f(p, x):
        return {"y": p["w"] * x + p["b"], "s": (qb.sum(x),)}

    rng = np.random.default_rng(4)
    w, b, xs = rng.normal(size=3), rng.normal(), rng.normal(size=(5, 3))
    p = {"w": qb.array(w), "b": qb.array(b)}
    out = qb.vmap(f, in_axes=({"w": None, "b": None}, 0))(p, qb.array(xs))
    assert sorted(out) == ["s", "y"] and isinstance(out["s"], tuple)
    _close(out["y"], w * xs + b)
    _close(out["s"][0], xs.sum(axis=1))
    # a list in_axes works like a tuple; mapping a dict leaf while another is shared
    ws = rng.normal(size=(5, 3))
    out = qb.vmap(f, in_axes=[{"w": 0, "b": None}, 0])({"w": qb.array(ws), "b": qb.array(b)}, qb.array(xs))
    _close(out["y"], ws * xs + b)


def test_vmap_unmapped_result_is_broadcast():
    out = qb.vmap(lambda x, c: (x * 2.0, c * 3.0), in_axes=(0, None))(qb.array([1.0, 2.0, 3.0]), qb.array([1.0, 2.0]))
    _close(out[0], [2.0, 4.0, 6.0])
    _close(out[1], [[3.0, 6.0]] * 3)


def test_vmap_program_size_does_not_grow_with_the_batch():
    def f(x, w):
        return qb.sum(qb.tanh(x @ w) ** 2) + qb.max(qb.cumsum(x, axis=0))

    w = qb.array(np.ones((3, 2)))
    sizes = []
    for n in (2, 64, 1024):
        x = qb.ones((n, 4, 3))
        compiled = qb.jit(lambda x, w: qb.vmap(f, in_axes=(0, None))(x, w)).lower(x, w).compile()
        sizes.append(compiled.stats()["nodes"])
    assert sizes[0] == sizes[1] == sizes[2], sizes


def test_vmap_mismatched_batch_sizes_raise():
    with pytest.raises(ValueError):
        qb.vmap(lambda a, b: a + b)(qb.ones(3), qb.ones(4))
    with pytest.raises(ValueError):
        qb.vmap(lambda a, b: a + b, in_axes=(0, 1))(qb.ones((3, 2)), qb.ones((3, 2)))


def test_vmap_with_nothing_mapped_raises():
    with pytest.raises(ValueError):
        qb.vmap(lambda a: a * 2.0, in_axes=None)(qb.ones(3))
    with pytest.raises(ValueError):
        qb.vmap(lambda a, b: a * b, in_axes=(None, None))(qb.ones(3), qb.ones(3))


def test_vmap_in_axes_out_of_range_raise():
    with pytest.raises(ValueError):
        qb.vmap(lambda a: a * 2.0, in_axes=2)(qb.ones((3, 2)))
    with pytest.raises(ValueError):
        qb.vmap(lambda a: a * 2.0, in_axes=-3)(qb.ones((3, 2)))
    with pytest.raises(ValueError):
        qb.vmap(lambda a: a * 2.0, in_axes=0)(qb.array(1.0))  # a scalar has no axis
    with pytest.raises(ValueError):
        qb.vmap(lambda a, b: a * b, in_axes=(0, 0, 0))(qb.ones(3), qb.ones(3))
    with pytest.raises(ValueError):
        qb.vmap(lambda a: a * 2.0, out_axes=2)(qb.ones((3, 2)))


# ---------------------------------------------------------------------------------------
# Compositions


def test_nested_vmap_closing_over_the_outer_example():
    xs, ys = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    out = qb.vmap(lambda x: qb.vmap(lambda y: qb.sin(x) * y)(qb.array(ys)))(qb.array(xs))
    _close(out, np.sin(xs)[:, None] * ys[None, :])


def test_vmap_of_grad_closing_over_the_mapped_variable():
    ws = np.array([1.0, 2.0, 3.0])
    out = qb.vmap(lambda w: qb.grad(lambda x: qb.sin(w * x))(qb.array(1.0)))(qb.array(ws))
    _close(out, ws * np.cos(ws))


def test_jvp_of_vmap_and_vmap_of_vjp():
    x = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    v = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
    f = qb.vmap(lambda r: qb.sin(r) * qb.sum(r))
    out, t = qb.jvp(f, (qb.array(x),), (qb.array(v),))
    s = x.sum(axis=1, keepdims=True)
    _close(out, np.sin(x) * s)
    _close(t, np.cos(x) * v * s + np.sin(x) * v.sum(axis=1, keepdims=True))
    cts = qb.vmap(lambda c: qb.vjp(qb.sin, qb.array(x[0]))[1](c)[0])(qb.array(v))
    _close(cts, np.cos(x[0])[None, :] * v)


def test_jit_of_vmap_equals_eager():
    f = qb.vmap(lambda x, w: qb.tanh(x @ w) * qb.max(x), in_axes=(0, None))
    rng = np.random.default_rng(9)
    x, w = qb.array(rng.normal(size=(5, 2, 3))), qb.array(rng.normal(size=(3, 4)))
    np.testing.assert_allclose(NP(qb.jit(f)(x, w)), NP(f(x, w)), rtol=1e-14, atol=1e-15)


def test_vmap_of_a_jitted_function():
    x = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    _close(qb.vmap(qb.jit(lambda r: qb.sin(r) * 2.0))(qb.array(x)), np.sin(x) * 2.0)
