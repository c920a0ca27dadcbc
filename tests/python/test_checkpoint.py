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
