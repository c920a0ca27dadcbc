"""Trainer: one compiled step, same trajectory as the explicit loop, progress and batches."""
import math

import numpy as np
import pytest

import quabla as qb


def loss(p, x, y):
    return qb.mean((qb.tanh(x * p["w"] + p["b"]) - y) ** 2)


def _data():
    x = qb.linspace(-1.0, 1.0, 32)
    return x, qb.tanh(0.7 * x - 0.2)


def test_trainer_matches_the_explicit_loop_and_traces_once():
    x, y = _data()
    p0 = {"w": qb.array(0.1), "b": qb.array(0.0)}
    tr = qb.Trainer(loss, p0, qb.optim.Adam(0.05), x, y)
    history = tr.fit(200, progress=False)
    adam, p = qb.optim.Adam(0.05), dict(p0)
    step = qb.jit(qb.value_and_grad(loss))
    ref = []
    for _ in range(200):
        v, g = step(p, x, y)
        ref.append(v.item())
        p = adam.step(p, g)
    np.testing.assert_allclose(history, ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tr.params["w"].item(), p["w"].item(), rtol=1e-12)
    assert tr._step.trace_count == 1 and tr.steps == 200
    assert math.isclose(tr.loss(), loss(tr.params, x, y).item(), rel_tol=1e-12)
    assert history[-1] < 1e-3 * history[0]


def test_step_returns_an_array_and_batches_replace_data():
    x, y = _data()
    tr = qb.Trainer(loss, {"w": qb.array(0.1), "b": qb.array(0.0)}, qb.optim.SGD(0.1), x, y, batch_argnums=(0, 1))
    v = tr.step(x[:16], y[:16])
    assert isinstance(v, qb.Array) and v.shape == ()
    with pytest.raises(ValueError):
        tr.step(x)


def test_progress_lines(capsys):
    x, y = _data()
    tr = qb.Trainer(loss, {"w": qb.array(0.1), "b": qb.array(0.0)}, qb.optim.Adam(0.05), x, y)
    tr.fit(20, progress=True, every=10)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("step") and "loss" in err[0] and "steps/s" in err[0]


def test_bad_arguments():
    x, y = _data()
    with pytest.raises(TypeError):
        qb.Trainer(loss, {"w": qb.array(0.1)}, object(), x, y)
    with pytest.raises(ValueError):
        qb.Trainer(loss, {"w": qb.array(0.1), "b": qb.array(0.0)}, qb.optim.SGD(), x, y, batch_argnums=(5,))
