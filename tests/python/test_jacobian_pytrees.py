"""jacfwd/jacrev/jacobian/hessian/hvp with pytrees (JAX's structure), static Python numbers
in non-differentiated arguments, has_aux, and the per-op table under jit and vmap.

JAX's structure: the Jacobian mirrors the output pytree; each output leaf holds the
differentiated argument's pytree (a tuple of them for a tuple argnums) whose leaves have
shape out_leaf.shape + in_leaf.shape.
"""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb
from quabla import _ad

from ad_op_table import CASES
from test_autodiff import REVERSE, _assert_fd_close, _ids, jac_expected

NP = np.asarray
TRANSFORMS = {"jacfwd": qb.jacfwd, "jacrev": qb.jacrev, "jacobian": qb.jacobian}


def fd_wrt(fun, x: np.ndarray, eps=1e-6):
    """Central differences of fun (NumPy in, NumPy out) along every element of x: out + x shape."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        cols.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


# A PINN-style model: params is a dict, xy a point.
RNG = np.random.default_rng(0)
PARAMS_NP = {"w1": RNG.normal(size=(4, 2)), "b1": RNG.normal(size=4), "w2": RNG.normal(size=(1, 4))}


def params_qb():
    return {k: qb.array(v) for k, v in PARAMS_NP.items()}


def u(params, xy):
    h = qb.tanh(params["w1"] @ xy + params["b1"])
    return qb.sum(params["w2"] @ h)


def u_np(params, xy):
    return float(np.sum(params["w2"] @ np.tanh(params["w1"] @ xy + params["b1"])))


XY = np.array([0.3, -0.7])


@pytest.mark.parametrize("name", ["hessian", "jacfwd_of_grad", "jacrev_of_grad"])
def test_hessian_in_the_point_with_dict_params_passed_through(name):
    p = params_qb()
    if name == "hessian":
        h = qb.hessian(u, argnums=1)(p, qb.array(XY))
    else:
        h = TRANSFORMS[name.split("_")[0]](qb.grad(u, argnums=1), argnums=1)(p, qb.array(XY))
    assert h.shape == (2, 2)
    g = lambda xy: qb.grad(u, argnums=1)(p, qb.array(xy)).numpy()  # noqa: E731
    np.testing.assert_allclose(h.numpy(), fd_wrt(g, XY), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h.numpy(), h.numpy().T, rtol=1e-12, atol=1e-14)


def test_hessian_of_a_scalar_wrt_a_dict_is_a_dict_of_dicts():
    p = params_qb()
    h = qb.hessian(u)(p, qb.array(XY))
    assert set(h) == set(PARAMS_NP)
    for a in PARAMS_NP:
        assert set(h[a]) == set(PARAMS_NP)
        for b in PARAMS_NP:
            assert h[a][b].shape == PARAMS_NP[a].shape + PARAMS_NP[b].shape
    # blocks against finite differences of the gradient, and symmetry H[a][b] = H[b][a]^T
    for b in PARAMS_NP:
        def grad_a(vb, b=b):
            q = dict(params_qb())
            q[b] = qb.array(vb)
            return qb.grad(u)(q, qb.array(XY))
        for a in PARAMS_NP:
            fd = fd_wrt(lambda vb: grad_a(vb)[a].numpy(), PARAMS_NP[b])
            np.testing.assert_allclose(h[a][b].numpy(), fd, rtol=1e-6, atol=1e-8, err_msg=f"H[{a}][{b}]")
            na, nb = PARAMS_NP[a].ndim, PARAMS_NP[b].ndim
            swapped = np.transpose(h[b][a].numpy(), tuple(range(nb, nb + na)) + tuple(range(nb)))
            np.testing.assert_allclose(h[a][b].numpy(), swapped, rtol=1e-12, atol=1e-14)


def model_out(params):
    """A pytree output: a dict holding an array and a tuple."""
    s = qb.sin(params["w1"])
    return {"s": s * 2.0, "t": (qb.sum(params["b1"] ** 2), params["w2"] @ qb.tanh(params["b1"]))}


def model_out_np(params):
    s = np.sin(params["w1"])
    return {"s": s * 2.0, "t": (np.sum(params["b1"] ** 2), params["w2"] @ np.tanh(params["b1"]))}


OUT_LEAVES = [("s",), ("t", 0), ("t", 1)]


def _get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian"])
@pytest.mark.parametrize("wrap", ["eager", "jit"])
def test_jacobian_of_pytree_to_pytree_mirrors_out_then_in_and_matches_fd(name, wrap):
    fn = TRANSFORMS[name](model_out)
    if wrap == "jit":
        fn = qb.jit(fn)
    j = fn(params_qb())
    assert set(j) == {"s", "t"} and isinstance(j["t"], tuple) and len(j["t"]) == 2
    for path in OUT_LEAVES:
        block = _get(j, path)
        assert isinstance(block, dict) and set(block) == set(PARAMS_NP)
        for k, v in PARAMS_NP.items():
            out_shape = np.shape(_get(model_out_np(PARAMS_NP), path))
            assert block[k].shape == out_shape + v.shape, (path, k)

            def f(x, k=k, path=path):
                p = dict(PARAMS_NP)
                p[k] = x
                return _get(model_out_np(p), path)
            np.testing.assert_allclose(block[k].numpy(), fd_wrt(f, v), rtol=1e-6, atol=1e-8, err_msg=f"{path} {k}")


def test_forward_and_reverse_pytree_jacobians_agree_and_chunking_is_invisible(monkeypatch):
    jf, jr = qb.jacfwd(model_out)(params_qb()), qb.jacrev(model_out)(params_qb())
    monkeypatch.setattr(_ad, "JACOBIAN_CHUNK", 3)  # 18 inputs, 13 outputs: several chunks each way
    jf3, jr3 = qb.jacfwd(model_out)(params_qb()), qb.jacrev(model_out)(params_qb())
    for path in OUT_LEAVES:
        for k in PARAMS_NP:
            a = _get(jf, path)[k].numpy()
            np.testing.assert_allclose(_get(jr, path)[k].numpy(), a, rtol=1e-12, atol=1e-14)
            np.testing.assert_array_equal(_get(jf3, path)[k].numpy(), a)
            np.testing.assert_allclose(_get(jr3, path)[k].numpy(), a, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian"])
def test_tuple_argnums_give_a_tuple_per_output_leaf(name):
    def f(a, s, b):
        return {"y": a * b["c"] * s, "z": qb.sum(qb.sin(a))}

    a, b = qb.array([0.5, -1.0, 2.0]), {"c": qb.array(1.5)}
    j = TRANSFORMS[name](f, argnums=(0, 2))(a, 3.0, b)
    assert isinstance(j["y"], tuple) and len(j["y"]) == 2
    assert j["y"][0].shape == (3, 3) and set(j["y"][1]) == {"c"} and j["y"][1]["c"].shape == (3,)
    assert j["z"][0].shape == (3,) and j["z"][1]["c"].shape == ()
    np.testing.assert_allclose(j["y"][0].numpy(), np.diag([4.5, 4.5, 4.5]))
    np.testing.assert_allclose(j["y"][1]["c"].numpy(), a.numpy() * 3.0)
    np.testing.assert_allclose(j["z"][0].numpy(), np.cos(a.numpy()))
    assert float(j["z"][1]["c"]) == 0.0


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian", "hessian"])
def test_non_differentiated_python_numbers_stay_static(name):
    # n drives fori_loop's trip count: traced, it would become a while_loop, whose reverse
    # mode raises; static, it is a plain bounded loop.
    def g(k, n):
        return qb.fori_loop(0, n, lambda i, c: c * k, k)  # k ** (n + 1)

    k = qb.array([1.1])
    j = TRANSFORMS.get(name, qb.hessian)(g)(k, 5)
    expected = 6 * 5 * 1.1 ** 4 if name == "hessian" else 6 * 1.1 ** 5
    np.testing.assert_allclose(j.numpy().ravel(), [expected], rtol=1e-12)
    seen = []

    def h(x, t):
        seen.append(type(t))
        return qb.sum(x * t)

    x32 = qb.array([1.0, 2.0], dtype=qb.float32)
    j = TRANSFORMS.get(name, qb.hessian)(h)(x32, 0.5)
    assert j.dtype == qb.float32  # a weak Python float: no float32/float64 mixing error
    assert set(seen) == {float}


@pytest.mark.parametrize("name", ["jacfwd", "jacrev", "jacobian", "hessian"])
def test_has_aux_returns_the_aux_at_the_primal(name):
    def f(x):
        y = qb.sum(qb.sin(x) ** 2)
        return y, {"y": y, "n": 3}

    fn = TRANSFORMS.get(name, qb.hessian)
    j, aux = fn(f, has_aux=True)(qb.array([0.2, 0.4]))
    x = np.array([0.2, 0.4])
    assert aux["n"] == 3
    np.testing.assert_allclose(float(aux["y"]), np.sum(np.sin(x) ** 2), rtol=1e-14)
    if name == "hessian":
        np.testing.assert_allclose(j.numpy(), np.diag(2 * np.cos(2 * x)), rtol=1e-12, atol=1e-15)
    else:
        np.testing.assert_allclose(j.numpy(), np.sin(2 * x), rtol=1e-12)


def test_jacobians_under_vmap_match_a_loop():
    batch = np.linspace(-1.0, 1.0, 10).reshape(5, 2)
    hess = qb.vmap(qb.hessian(u, argnums=1), in_axes=(None, 0))(params_qb(), qb.array(batch))
    jac = qb.vmap(qb.jacrev(model_out), in_axes=0)({k: qb.array(np.stack([v] * 3)) for k, v in PARAMS_NP.items()})
    assert hess.shape == (5, 2, 2)
    for i, xy in enumerate(batch):
        np.testing.assert_allclose(hess.numpy()[i], qb.hessian(u, argnums=1)(params_qb(), qb.array(xy)).numpy(),
                                   rtol=1e-12, atol=1e-14)
    single = qb.jacrev(model_out)(params_qb())
    for path in OUT_LEAVES:
        for k in PARAMS_NP:
            b = _get(jac, path)[k].numpy()
            assert b.shape[0] == 3
            for i in range(3):
                np.testing.assert_allclose(b[i], _get(single, path)[k].numpy(), rtol=1e-12, atol=1e-14)


def test_pinn_residual_loss_with_hessian_trains_under_jit_value_and_grad():
    # The idiom this fixes: the Laplacian from qb.hessian(u, argnums=1) with dict params.
    def laplacian(params, xy):
        h = qb.hessian(u, argnums=1)(params, xy)
        return h[0, 0] + h[1, 1]

    pts = qb.array(np.linspace(0.1, 0.9, 8).reshape(4, 2))

    def loss(params):
        return qb.mean(qb.vmap(laplacian, in_axes=(None, 0))(params, pts) ** 2)

    value, grads = qb.jit(qb.value_and_grad(loss))(params_qb())
    assert set(grads) == set(PARAMS_NP)
    for k, v in PARAMS_NP.items():
        def lf(x, k=k):
            p = params_qb()
            p[k] = qb.array(x)
            return float(loss(p))
        np.testing.assert_allclose(grads[k].numpy(), fd_wrt(lf, v, eps=1e-5), rtol=1e-5, atol=1e-7)


def test_hvp_returns_gradients_and_products_per_primal_with_pytrees():
    p = params_qb()
    v = {k: qb.array(np.full(a.shape, 0.1)) for k, a in PARAMS_NP.items()}
    (g,), (hv,) = qb.hvp(lambda q: u(q, qb.array(XY)), (p,), (v,))
    h = qb.hessian(u)(p, qb.array(XY))
    for a in PARAMS_NP:
        expect = sum(np.tensordot(h[a][b].numpy(), v[b].numpy(), axes=PARAMS_NP[b].ndim) for b in PARAMS_NP)
        np.testing.assert_allclose(hv[a].numpy(), expect, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g[a].numpy(), qb.grad(u)(p, qb.array(XY))[a].numpy(), rtol=1e-14)


@pytest.mark.parametrize("name,expected", [("jacfwd", "jacfwd"), ("jacrev", "jacrev"), ("jacobian", "jacobian"),
                                           ("hessian", "hessian")])
def test_errors_name_the_transform_the_user_called(name, expected):
    fn = TRANSFORMS.get(name, qb.hessian)
    with pytest.raises(TypeError, match=rf"^{expected}: .*args\[0\]\['m'\].*bool"):
        fn(lambda p: qb.sum(p["x"]))({"x": qb.ones(2), "m": qb.array([True, False])})
    with pytest.raises(TypeError, match=rf"^{expected}: .*args\[0\]\['s'\].*str"):
        fn(lambda p: qb.sum(p["x"]))({"x": qb.ones(2), "s": "label"})
    with pytest.raises(TypeError, match=rf"^{expected}: expected a callable"):
        fn("not a function")
    with pytest.raises(ValueError, match=rf"^{expected}: argnums 3 is out of range"):
        fn(lambda x: x, argnums=3)(qb.ones(2))
    if name != "hessian":
        with pytest.raises(TypeError, match=rf"^{expected}: .*out\['k'\].*bool"):
            fn(lambda x: {"k": x > 0.0, "v": x})(qb.ones(2))


# ---------------------------------------------------------------------------------------
# The op table: every op's Jacobian through pytrees (a dict argument, a static Python
# number beside it, a dict output) under jit and vmap equals the flat finite-difference
# Jacobian of test_autodiff.

PYTREE_CASES = [c for c in REVERSE if c.op not in ("parameter",)]


def _pytree_fn(case):
    names = [f"a{i}" for i in range(case.nargs)]

    def f(p, scale):
        y = case.fn(*[p[n] for n in names])
        return {"y": y * scale, "ys": (y,)}
    return names, f


@pytest.mark.parametrize("name", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("case", PYTREE_CASES, ids=_ids(PYTREE_CASES))
def test_every_op_pytree_jacobian_under_jit_and_vmap(case, name):
    if name == "jacfwd" and case.reverse_only:
        pytest.skip("forward mode through custom_vjp raises (tests/python/test_custom_vjp.py checks it)")
    names, f = _pytree_fn(case)
    args = case.args()
    p = dict(zip(names, args))
    j = qb.jit(TRANSFORMS[name](f), static_argnums=1)(p, 2.0)
    expected = jac_expected(case)  # (out.size, sum of in sizes)
    out_shape = case.fn(*args).shape
    blocks = []
    for n, a in zip(names, args):
        blk = j["ys"][0][n]
        assert blk.shape == out_shape + a.shape and blk.dtype == qb.float64
        np.testing.assert_allclose(j["y"][n].numpy(), 2.0 * blk.numpy(), rtol=1e-14, atol=0)
        blocks.append(blk.numpy().reshape(int(np.prod(out_shape)), a.size))
    _assert_fd_close(np.concatenate(blocks, axis=1), expected, f"{case.op}: {name} of a pytree vs fd")
    # vmap over a batch of two copies of the dict gives the same blocks twice
    batched = {n: qb.stack([a, a]) for n, a in p.items()}
    jb = qb.vmap(lambda q: TRANSFORMS[name](f)(q, 2.0))(batched)
    for n in names:
        b = jb["ys"][0][n].numpy()
        np.testing.assert_allclose(b[0], j["ys"][0][n].numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b[1], j["ys"][0][n].numpy(), rtol=1e-12, atol=1e-12)


def test_empty_pytrees_give_empty_structures():
    x = qb.ones(3)
    assert qb.jacfwd(lambda d, x: x * 2.0)({}, x) == {}
    assert qb.jacfwd(lambda d, x: {"a": x, "b": (x,)})({}, x) == {"a": {}, "b": ({},)}
    for name in ("jacfwd", "jacrev", "jacobian"):
        assert TRANSFORMS[name](lambda x: {})(x) == {}


def test_hessian_has_aux_evaluates_the_function_once_more_not_its_jacobian():
    calls = []

    def f(x):
        calls.append(1)
        return qb.sum(qb.sin(x)), x * 2.0

    h, aux = qb.hessian(f, has_aux=True)(qb.ones(4))
    assert len(calls) == 2  # the traced jacrev, and one forward evaluation for aux
    np.testing.assert_allclose(h.numpy(), np.diag(-np.sin(np.ones(4))), rtol=1e-14)
    np.testing.assert_array_equal(aux.numpy(), [2.0] * 4)
