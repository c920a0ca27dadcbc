"""qb.checkpoint / qb.remat: the same values and derivatives as the plain function (bitwise
for reverse mode), fewer stored intermediates, and the transforms through it."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

RNG = np.random.default_rng(3)


def _layer(h, w, b):
    return qb.tanh(h @ w + b)


def _mlp_loss(params, x, layer):
    h = x
    for w, b in params:
        h = layer(h, w, b)
    return qb.mean(h ** 2)


def _params(n_layers, width):
    return [(qb.array(RNG.normal(0, 1 / np.sqrt(width), (width, width))), qb.array(RNG.normal(0, 0.1, width)))
            for _ in range(n_layers)]


def test_gradient_is_bitwise_the_plain_one_and_plans_less_memory():
    params, x = _params(6, 64), qb.array(RNG.normal(size=(256, 64)))
    plain = qb.jit(qb.grad(lambda p, x: _mlp_loss(p, x, _layer)))
    ck = qb.jit(qb.grad(lambda p, x: _mlp_loss(p, x, qb.checkpoint(_layer))))
    for (gw, gb), (cw, cb) in zip(plain(params, x), ck(params, x)):
        np.testing.assert_array_equal(np.asarray(gw), np.asarray(cw))
        np.testing.assert_array_equal(np.asarray(gb), np.asarray(cb))
    peak_plain = plain.lower(params, x).compile().stats()["peak_bytes"]
    peak_ck = ck.lower(params, x).compile().stats()["peak_bytes"]
    assert peak_ck < 0.7 * peak_plain
    assert "checkpoint(" in ck.lower(params, x).as_text()


def test_values_forward_mode_vmap_and_second_order():
    f = qb.remat(lambda x, y: qb.sin(x) * y + x ** 3)
    x, y = qb.asarray(0.4), qb.asarray(1.5)
    assert float(f(x, y)) == pytest.approx(np.sin(0.4) * 1.5 + 0.064)
    _, t = qb.jvp(f, (x, y), (qb.asarray(1.0), qb.asarray(0.0)))
    assert float(t) == pytest.approx(np.cos(0.4) * 1.5 + 3 * 0.16)
    assert float(qb.grad(f)(x, y)) == pytest.approx(float(t), rel=1e-15)
    h = qb.grad(qb.grad(f))(x, y)
    assert float(h) == pytest.approx(-np.sin(0.4) * 1.5 + 6 * 0.4, rel=1e-14)
    xs = qb.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(np.asarray(qb.vmap(qb.grad(f))(xs, qb.ones(3))),
                               np.cos([0.1, 0.2, 0.3]) + 3 * np.array([0.1, 0.2, 0.3]) ** 2, rtol=1e-15)


def test_static_argnums_policies_closures_and_loops():
    k = qb.asarray(2.0)

    def g(x, n):
        for _ in range(n):
            x = qb.sin(x) * k
        return x

    ck = qb.checkpoint(g, static_argnums=(1,))
    assert float(qb.grad(lambda x: ck(x, 3))(qb.asarray(0.3))) == pytest.approx(
        float(qb.grad(lambda x: g(x, 3))(qb.asarray(0.3))), rel=1e-15)
    every = qb.checkpoint(g, static_argnums=(1,), policy=qb.checkpoint_policies.everything_saveable)
    assert float(every(qb.asarray(0.3), 2)) == float(g(qb.asarray(0.3), 2))
    with pytest.raises(NotImplementedError, match="policies"):
        qb.checkpoint(g, policy=lambda *a: True)
    body = qb.checkpoint(lambda c: qb.tanh(c * 1.1))
    gl = qb.grad(lambda c: qb.fori_loop(0, 5, lambda i, c: body(c), c))(qb.asarray(0.2))
    gp = qb.grad(lambda c: qb.fori_loop(0, 5, lambda i, c: qb.tanh(c * 1.1), c))(qb.asarray(0.2))
    assert float(gl) == float(gp)


def test_stop_gradient_on_pytrees():
    tree = qb.stop_gradient({"a": qb.ones(2), "b": (qb.asarray(2.0), 3.0)})
    assert tree["a"].tolist() == [1.0, 1.0] and float(tree["b"][1]) == 3.0
    g = qb.grad(lambda x: qb.sum(qb.stop_gradient({"w": x})["w"] * x))(qb.array([1.0, 2.0]))
    assert g.tolist() == [1.0, 2.0]
    assert qb.lax.stop_gradient is qb.stop_gradient


def _count_matmuls(text):
    return text.count("matmul(")


@pytest.mark.parametrize("policy", ["dots_saveable", "dots_with_no_batch_dims_saveable", "checkpoint_dots"])
def test_dots_policies_keep_the_products_and_recompute_the_rest(policy):
    pol = getattr(qb.checkpoint_policies, policy)
    params, x = _params(4, 32), qb.array(RNG.normal(size=(64, 32)))
    plain = qb.jit(qb.grad(lambda p, x: _mlp_loss(p, x, _layer)))
    nothing = qb.jit(qb.grad(lambda p, x: _mlp_loss(p, x, qb.checkpoint(_layer))))
    dots = qb.jit(qb.grad(lambda p, x: _mlp_loss(p, x, qb.checkpoint(_layer, policy=pol))))
    for (gw, gb), (cw, cb) in zip(plain(params, x), dots(params, x)):
        np.testing.assert_array_equal(np.asarray(gw), np.asarray(cw))
        np.testing.assert_array_equal(np.asarray(gb), np.asarray(cb))
    # The products are stored (more memory than saving nothing) and not recomputed: the
    # program has the forward products and the backward ones (2 per layer but the first's
    # input gradient), nothing saves one fewer product per layer than it recomputes.
    assert dots.lower(params, x).compile().stats()["peak_bytes"] > nothing.lower(params, x).compile().stats()["peak_bytes"]
    text_dots, text_nothing = dots.lower(params, x).as_text(), nothing.lower(params, x).as_text()
    assert "policy=" in text_dots and "policy=" not in text_nothing
    assert _count_matmuls(text_nothing) - _count_matmuls(text_dots) == 4


def test_dots_with_no_batch_dims_saves_only_unbatched_products():
    w = qb.array(RNG.normal(size=(3, 4, 4)))
    x = qb.array(RNG.normal(size=(3, 5, 4)))

    def block(x, w):
        return qb.sum(qb.tanh(x @ w))

    ref = qb.grad(block, argnums=(0, 1))(x, w)
    counts = {}
    for name in ("dots_saveable", "dots_with_no_batch_dims_saveable"):
        f = qb.jit(qb.grad(qb.checkpoint(block, policy=getattr(qb.checkpoint_policies, name)), argnums=(0, 1)))
        for a, b in zip(ref, f(x, w)):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-14)
        counts[name] = _count_matmuls(f.lower(x, w).as_text())
    # The batched product is saved by dots_saveable only; the other recomputes it.
    assert counts["dots_with_no_batch_dims_saveable"] == counts["dots_saveable"] + 1


def test_dots_policy_under_vmap_jvp_and_second_order():
    w = qb.array(RNG.normal(size=(3, 3)))
    f = qb.checkpoint(lambda x: qb.sum(qb.sin(x @ w) * x), policy=qb.checkpoint_policies.dots_saveable)
    g = lambda x: qb.sum(qb.sin(x @ w) * x)  # noqa: E731
    x = qb.array(RNG.normal(size=(2, 3)))
    np.testing.assert_allclose(np.asarray(qb.hessian(f)(x)), np.asarray(qb.hessian(g)(x)), rtol=1e-13, atol=1e-14)
    xs = qb.array(RNG.normal(size=(4, 2, 3)))
    np.testing.assert_allclose(np.asarray(qb.vmap(qb.grad(f))(xs)), np.asarray(qb.vmap(qb.grad(g))(xs)), rtol=1e-14)
    t = qb.ones((2, 3))
    np.testing.assert_allclose(float(qb.jvp(f, (x,), (t,))[1]), float(qb.jvp(g, (x,), (t,))[1]), rtol=1e-14)
    # Differences in float64 against the gradient.
    gx = np.asarray(qb.grad(f)(x))
    e = np.zeros((2, 3))
    e[1, 2] = 1e-6
    fd = (float(f(x + qb.array(e))) - float(f(x - qb.array(e)))) / 2e-6
    assert gx[1, 2] == pytest.approx(fd, rel=1e-7)


def test_nested_checkpoints_plan_less_than_per_layer_ones():
    # Groups of 4 checkpointed layers, each layer checkpointed too: the outer plan keeps a
    # group's input only; the group's backward recomputes its layers' inputs. The peak
    # counts the regions' own buffers (stats() includes what region bodies hold).
    params, x = _params(8, 32), qb.array(RNG.normal(size=(512, 32)))
    layer = qb.checkpoint(_layer)

    def group(h, ps):
        for w, b in ps:
            h = layer(h, w, b)
        return h

    def nested(p, x):
        h = x
        for i in range(0, len(p), 4):
            h = qb.checkpoint(group)(h, p[i:i + 4])
        return qb.mean(h ** 2)

    per_layer = qb.jit(qb.grad(lambda p, x: _mlp_loss(p, x, layer)))
    nest = qb.jit(qb.grad(nested))
    for (gw, gb), (cw, cb) in zip(per_layer(params, x), nest(params, x)):
        np.testing.assert_array_equal(np.asarray(gw), np.asarray(cw))
        np.testing.assert_array_equal(np.asarray(gb), np.asarray(cb))
    peak = {k: f.lower(params, x).compile().stats()["peak_bytes"] for k, f in (("layer", per_layer), ("nest", nest))}
    act = 512 * 32 * 8
    assert peak["nest"] < peak["layer"] - 2 * act
    # The forward pass of a group computes no tangents (nested checkpoints' zero tangent
    # outputs are pruned): one checkpoint node per group and per layer, one output each.
    lines = [ln for ln in nest.lower(params, x).as_text().split("\n") if "= checkpoint(" in ln]
    assert lines and not any(ln.rstrip().endswith(": f64[512, 32] f64[512, 32]") for ln in lines)


def test_name_based_policies_and_checkpoint_name_give_the_same_values():
    from quabla.ad_checkpoint import checkpoint_name
    pol = qb.checkpoint_policies

    def block(x):
        h = checkpoint_name(qb.sin(x) * x, "hidden")
        return qb.sum(qb.tanh(h) ** 2)
    x = qb.array([0.3, -1.2, 2.0])
    want = qb.grad(block)(x)
    for policy in (pol.save_only_these_names("hidden"), pol.save_any_names_but_these("hidden"),
                   pol.save_and_offload_only_these_names(names_which_can_be_saved=["hidden"]),
                   pol.save_from_both_policies(pol.dots_saveable, pol.save_only_these_names("a"))):
        got = qb.jit(qb.grad(qb.checkpoint(block, policy=policy)))(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-15)
    assert qb.checkpoint_name({"a": x}, "n")["a"] is x
    with pytest.raises(TypeError, match="names must be strings"):
        pol.save_only_these_names(3)
    with pytest.raises(TypeError, match="name must be a string"):
        checkpoint_name(x, None)
