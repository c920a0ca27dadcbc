"""Differential test against JAX (optional: skipped where JAX is not installed).

Hypothesis builds small random programs from the op list below (elementwise, reductions,
shape functions, matmul, where) and each runs under Quabla and under JAX (float64, x64
mode): values under jit, gradients, vmap and jvp must agree to rtol 1e-9 (atol 1e-12 scaled
by the output's magnitude). Ops with restricted domains get arguments mapped into their
domain (log(1 + v^2), arcsin(tanh v), ...), so the comparison is about our numerics and
transform rules, not about NaN conventions. Inputs are shifted off the round numbers
hypothesis likes (0, 1, -2) so no argument sits exactly on a kink where the documented
conventions differ from JAX's: the derivative of abs at 0 (Quabla 0, JAX 1; docs/api.md).
Subnormals are not generated: XLA on the CPU flushes them to zero, Quabla does not. The run
is bounded (max_examples, no shrinking
beyond hypothesis's default budget) so CI time stays small.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
jax = pytest.importorskip("jax")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

import quabla as qb  # noqa: E402

RTOL, ATOL = 1e-9, 1e-12


def _ops(m):
    """(name, arity, f(m, *args)) with m the module (qb or jnp)."""
    pos = lambda v: 1.0 + v * v  # noqa: E731  (a positive argument)
    return [
        ("sin", 1, lambda a: m.sin(a)),
        ("cos", 1, lambda a: m.cos(a)),
        ("tanh", 1, lambda a: m.tanh(a)),
        ("exp", 1, lambda a: m.exp(m.tanh(a))),
        ("log", 1, lambda a: m.log(pos(a))),
        ("sqrt", 1, lambda a: m.sqrt(pos(a))),
        ("arcsin", 1, lambda a: m.arcsin(0.9 * m.tanh(a))),
        ("arctan", 1, lambda a: m.arctan(a)),
        ("sinh", 1, lambda a: m.sinh(m.tanh(a))),
        ("softplus", 1, lambda a: jax.nn.softplus(a) if m is jnp else qb.softplus(a)),
        ("sigmoid", 1, lambda a: jax.nn.sigmoid(a) if m is jnp else qb.sigmoid(a)),
        ("square", 1, lambda a: m.square(a)),
        ("abs", 1, lambda a: m.abs(a + 0.1234567)),  # away from 0, where conventions differ (below)
        ("neg", 1, lambda a: -a),
        ("cumsum", 1, lambda a: m.cumsum(a, axis=-1)),
        ("flip", 1, lambda a: m.flip(a, axis=-1)),
        ("roll_sum", 1, lambda a: a + m.sum(a, axis=-1, keepdims=True)),
        ("mean_center", 1, lambda a: a - m.mean(a, axis=-1, keepdims=True)),
        ("logsumexp", 1, lambda a: a - (jax.nn.logsumexp(a, axis=-1, keepdims=True) if m is jnp
                                        else qb.logsumexp(a, axis=-1, keepdims=True))),
        ("softmax", 1, lambda a: jax.nn.softmax(a, axis=-1) if m is jnp else qb.softmax(a, axis=-1)),
        ("max_shift", 1, lambda a: a - m.max(a, axis=-1, keepdims=True)),
        ("add", 2, lambda a, b: a + b),
        ("sub", 2, lambda a, b: a - b),
        ("mul", 2, lambda a, b: a * b),
        ("div", 2, lambda a, b: a / pos(b)),
        ("maximum", 2, lambda a, b: m.maximum(a, b)),
        ("minimum", 2, lambda a, b: m.minimum(a, b)),
        ("atan2", 2, lambda a, b: m.arctan2(a, pos(b))),
        ("hypot", 2, lambda a, b: m.hypot(a, pos(b))),
        ("power", 2, lambda a, b: m.power(pos(a), m.tanh(b))),
        ("logaddexp", 2, lambda a, b: m.logaddexp(a, b)),
        ("where", 2, lambda a, b: m.where(a > 0.1, a, b)),
        ("outer_mm", 2, lambda a, b: (a[..., :, None] * b[..., None, :]) @ b[..., :, None][..., 0]),
        # integer indices (gather/scatter) and sorting
        ("sort", 1, lambda a: m.sort(a, axis=-1)),
        ("argsort_take", 1, lambda a: m.take_along_axis(a, m.argsort(a, axis=-1), axis=-1) * a),
        ("gather_perm", 1, lambda a: a[..., m.asarray([2, 0, 3, 1])]),
        ("at_add", 2, lambda a, b: a.at[..., m.asarray([0, 0, 2])].add(b[..., :3])),
        ("at_set", 2, lambda a, b: a.at[..., m.asarray([3, 1])].set(b[..., 1:3] * 2.0)),
        ("roll", 1, lambda a: m.roll(a, 1, axis=-1)),
        ("take_argmax", 1, lambda a: a * m.take_along_axis(a, m.argmax(a, axis=-1, keepdims=True), axis=-1)),
    ]


QB_OPS, JNP_OPS = _ops(qb), _ops(jnp)
N = 4  # the per-example vector length


def build(program, m_ops):
    """The function of (x, y) that a program (list of (op index, operand picks)) describes."""
    def f(x, y):
        vals = [x, y]
        for op, picks in program:
            _, arity, fn = m_ops[op]
            args = [vals[p % len(vals)] for p in picks[:arity]]
            vals.append(fn(*args))
        return vals[-1]
    return f


programs = st.lists(st.tuples(st.integers(0, len(QB_OPS) - 1), st.lists(st.integers(0, 100), min_size=2, max_size=2)),
                    min_size=1, max_size=6)
arrays = st.lists(st.floats(-2.0, 2.0, allow_nan=False), min_size=2 * N, max_size=2 * N)


def _close(a, b, what):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL * scale, err_msg=what)


# QUABLA_DIFF_EXAMPLES=2000 for a longer local run.
@settings(max_examples=int(os.environ.get("QUABLA_DIFF_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs, arrays)
def test_random_programs_agree_with_jax_under_jit_grad_vmap_and_jvp(program, data):
    fq, fj = build(program, QB_OPS), build(program, JNP_OPS)
    offsets = 0.01234567 * (np.arange(N) + 1.5)
    xs = np.asarray(data[:N]) + offsets, np.asarray(data[N:]) - 2.7 * offsets
    xq, xj = [qb.array(v) for v in xs], [jnp.asarray(v) for v in xs]
    desc = " -> ".join(QB_OPS[op][0] for op, _ in program)
    _close(qb.jit(fq)(*xq).numpy(), jax.jit(fj)(*xj), f"values: {desc}")
    w = np.linspace(0.3, 1.1, N)

    def lq(x, y):
        return qb.sum(fq(x, y) * qb.array(w))

    def lj(x, y):
        return jnp.sum(fj(x, y) * w)

    gq, gj = qb.grad(lq, argnums=(0, 1))(*xq), jax.grad(lj, argnums=(0, 1))(*xj)
    for a, b in zip(gq, gj):
        _close(a.numpy(), b, f"grad: {desc}")
    batch = np.stack([xs[0], xs[0][::-1], xs[0] * 0.5])
    _close(qb.vmap(fq, in_axes=(0, None))(qb.array(batch), xq[1]).numpy(),
           jax.vmap(fj, in_axes=(0, None))(jnp.asarray(batch), xj[1]), f"vmap: {desc}")
    t = np.cos(np.arange(N))
    _, tq = qb.jvp(fq, tuple(xq), (qb.array(t), qb.array(t[::-1].copy())))
    _, tj = jax.jvp(fj, tuple(xj), (jnp.asarray(t), jnp.asarray(t[::-1].copy())))
    _close(tq.numpy(), tj, f"jvp: {desc}")
    # second order: the Hessian-vector product of the scalar loss
    (_, hq), (_, hj) = qb.jvp(qb.grad(lq), (xq[0], xq[1]), (qb.array(t), qb.zeros(N))), \
        jax.jvp(jax.grad(lj), (xj[0], xj[1]), (jnp.asarray(t), jnp.zeros(N)))
    _close(hq.numpy(), hj, f"hvp: {desc}")


# ---------------------------------------------------------------------------------------
# Jacobians of pytrees: JAX's structure and values

def _model(m):
    def f(p, xy):
        h = m.tanh(p["w"] @ xy + p["b"])
        return {"u": m.sum(p["a"] * h), "h": (h * 2.0,)}
    return f


_P = {"w": np.array([[1.0, -0.5], [0.3, 0.8]]), "b": np.array([0.1, -0.2]), "a": np.array([0.7, -1.1])}
_XY = np.array([0.4, 0.7])


def _pairs(q_tree, j_tree):
    q_leaves, q_def = qb.tree.flatten(q_tree)
    j_leaves, j_def = jax.tree_util.tree_flatten(j_tree)
    assert len(q_leaves) == len(j_leaves), (q_def, j_def)
    # same nesting: compare the key paths
    q_paths = [qb.tree.keystr(p) for p, _ in qb.tree.flatten_with_path(q_tree)[0]]
    j_paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(j_tree)[0]]
    assert q_paths == j_paths
    return zip(q_leaves, j_leaves)


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian", "hessian"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_pytree_jacobians_have_jaxs_structure_and_values(name, argnums):
    fq, fj = _model(qb), _model(jnp)
    if name == "hessian":  # of the scalar output
        fq_s, fj_s = (lambda p, xy: fq(p, xy)["u"]), (lambda p, xy: fj(p, xy)["u"])
        q = qb.hessian(fq_s, argnums=argnums)({k: qb.array(v) for k, v in _P.items()}, qb.array(_XY))
        j = jax.hessian(fj_s, argnums=argnums)({k: jnp.asarray(v) for k, v in _P.items()}, jnp.asarray(_XY))
    else:
        q = getattr(qb, name)(fq, argnums=argnums)({k: qb.array(v) for k, v in _P.items()}, qb.array(_XY))
        j = getattr(jax, name if name != "jacobian" else "jacrev")(fj, argnums=argnums)(
            {k: jnp.asarray(v) for k, v in _P.items()}, jnp.asarray(_XY))
    for a, b in _pairs(q, j):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.numpy(), np.asarray(b), rtol=1e-12, atol=1e-14)


def test_solvers_and_implicit_rules_agree_with_jax():
    from jax.scipy.sparse.linalg import bicgstab as jbicgstab
    from jax.scipy.sparse.linalg import cg as jcg
    from jax.scipy.sparse.linalg import gmres as jgmres

    rng = np.random.default_rng(17)
    n = 12
    m = rng.normal(size=(n, n))
    spd = m @ m.T + n * np.eye(n)
    nonsym = m + 2 * n * np.eye(n)
    b = rng.normal(size=n)

    def loss(lib, solver, a_np):
        a_lib = (jnp if lib == "jax" else qb).asarray(a_np)
        xs = jnp if lib == "jax" else qb

        def f(theta, b):
            a = a_lib + theta * xs.eye(n)
            x, _ = solver(lambda v: a @ v, b, tol=1e-12)
            return xs.sum(xs.sin(x) * xs.arange(n))
        return f

    for qs, js, a_np in ((qb.linalg.cg, jcg, spd), (qb.linalg.gmres, jgmres, nonsym),
                         (qb.linalg.bicgstab, jbicgstab, nonsym)):
        fq, fj = loss("qb", qs, a_np), loss("jax", js, a_np)
        _close(np.asarray(fq(qb.asarray(0.3), qb.array(b))), fj(0.3, jnp.asarray(b)), f"{qs.__name__} value")
        gq = qb.grad(fq, argnums=(0, 1))(qb.asarray(0.3), qb.array(b))
        gj = jax.grad(fj, argnums=(0, 1))(0.3, jnp.asarray(b))
        _close(np.asarray(gq[0]), gj[0], f"{qs.__name__} d/dtheta")
        _close(np.asarray(gq[1]), gj[1], f"{qs.__name__} d/db")

    # custom_root: Newton for x^3 = a, derivatives to second order.
    def root(lib):
        xs = jnp if lib == "jax" else qb
        custom_root = jax.lax.custom_root if lib == "jax" else qb.custom_root
        loop = jax.lax.fori_loop if lib == "jax" else qb.fori_loop
        grad = jax.grad if lib == "jax" else qb.grad

        def solve(f, x0):
            return loop(0, 40, lambda i, x: x - f(x) / grad(f)(x), x0)

        def g(a):
            return custom_root(lambda x: x ** 3 - a * xs.sin(x + 1.0), xs.asarray(1.5), solve, lambda h, y: y / h(1.0))
        return g
    rq, rj = root("qb"), root("jax")
    for k in range(3):
        _close(np.asarray(rq(qb.asarray(2.0))), rj(2.0), f"custom_root derivative order {k}")
        rq, rj = qb.grad(rq), jax.grad(rj)
