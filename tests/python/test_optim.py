"""qb.optim against NumPy references of optax's formulas, step by step."""
import math

import numpy as np
import pytest

import quabla as qb
from quabla import optim


def _np_adam(p, grads_seq, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, lr_fn=None):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    out = []
    for t, g in enumerate(grads_seq, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        rate = lr_fn(t - 1) if lr_fn else lr
        p = p - rate * ((m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * p)
        out.append(p.copy())
    return out


def _grads(n_steps, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape) for _ in range(n_steps)]


@pytest.mark.parametrize("cls, kwargs, wd", [(optim.Adam, {}, 0.0), (optim.AdamW, {"weight_decay": 1e-2}, 1e-2)])
def test_adam_and_adamw_match_numpy_over_50_steps(cls, kwargs, wd):
    p0 = np.linspace(-1.0, 1.0, 6)
    gs = _grads(50, p0.shape)
    ref = _np_adam(p0, gs, 0.01, wd=wd)
    opt = cls(learning_rate=0.01, **kwargs)
    params, state = {"w": qb.array(p0)}, None
    state = opt.init(params)
    for g, r in zip(gs, ref):
        params, state = opt.update(params, {"w": qb.array(g)}, state)
        np.testing.assert_allclose(params["w"].numpy(), r, rtol=1e-12, atol=1e-12)
    # The stateful step gives the same trajectory.
    opt2, p = cls(learning_rate=0.01, **kwargs), {"w": qb.array(p0)}
    for g, r in zip(gs, ref):
        p = opt2.step(p, {"w": qb.array(g)})
    np.testing.assert_allclose(p["w"].numpy(), ref[-1], rtol=1e-12, atol=1e-12)
    assert float(opt2.state.count) == 50.0


def test_sgd_matches_numpy():
    p0 = np.array([1.0, -2.0])
    gs = _grads(50, p0.shape, 1)
    p, opt = {"w": qb.array(p0)}, optim.SGD(learning_rate=0.1)
    ref = p0.copy()
    for g in gs:
        p = opt.step(p, {"w": qb.array(g)})
        ref = ref - 0.1 * g
    np.testing.assert_allclose(p["w"].numpy(), ref, rtol=1e-12, atol=1e-12)


def test_float32_parameters_keep_their_dtype():
    opt = optim.Adam(1e-2)
    p = {"w": qb.ones(3, dtype=qb.float32)}
    p = opt.step(p, {"w": qb.ones(3, dtype=qb.float32)})
    assert p["w"].dtype == qb.float32


@pytest.mark.parametrize("name, schedule, formula", [
    ("exponential", optim.exponential_decay(0.1, 10, 0.5), lambda c: 0.1 * 0.5 ** (c / 10)),
    ("exponential_staircase", optim.exponential_decay(0.1, 10, 0.5, staircase=True),
     lambda c: 0.1 * 0.5 ** math.floor(c / 10)),
    ("cosine", optim.cosine_decay(0.1, 40, alpha=0.1),
     lambda c: 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(c, 40) / 40)) + 0.1)),
    ("warmup_cosine", optim.warmup_cosine_decay(0.0, 0.1, 5, 40, end_value=0.01),
     lambda c: 0.1 * c / 5 if c < 5 else 0.01 + 0.09 * 0.5 * (1 + math.cos(math.pi * min(c - 5, 35) / 35))),
    ("piecewise", optim.piecewise_constant(0.1, {10: 0.5, 20: 0.1}),
     lambda c: 0.1 * (0.5 if c >= 10 else 1) * (0.1 if c >= 20 else 1)),
])
def test_schedules_match_their_formulas(name, schedule, formula):
    for c in [0, 1, 4, 5, 9, 10, 11, 19, 20, 39, 40, 60]:
        np.testing.assert_allclose(float(schedule(qb.array(float(c)))), formula(c), rtol=1e-12, atol=1e-15)


def test_adam_with_a_schedule_matches_numpy():
    sched = optim.exponential_decay(0.05, 5, 0.7)
    p0 = np.array([0.5, -0.25, 2.0])
    gs = _grads(30, p0.shape, 2)
    ref = _np_adam(p0, gs, None, lr_fn=lambda c: 0.05 * 0.7 ** (c / 5))
    opt, p = optim.Adam(learning_rate=sched), {"w": qb.array(p0)}
    for g in gs:
        p = opt.step(p, {"w": qb.array(g)})
    np.testing.assert_allclose(p["w"].numpy(), ref[-1], rtol=1e-12, atol=1e-12)


def test_clip_by_global_norm():
    g = {"a": qb.array([3.0, 0.0]), "b": qb.array([[4.0]])}
    clipped = optim.clip_by_global_norm(g, 1.0)
    np.testing.assert_allclose(clipped["a"].numpy(), [0.6, 0.0])
    np.testing.assert_allclose(clipped["b"].numpy(), [[0.8]])
    same = optim.clip_by_global_norm(g, 10.0)
    np.testing.assert_array_equal(same["a"].numpy(), [3.0, 0.0])
    with pytest.raises(ValueError):
        optim.clip_by_global_norm(g, 0.0)


def test_clip_norm_option_clips_before_the_update():
    p0 = np.array([1.0, 1.0])
    g = np.array([30.0, 40.0])
    a = optim.SGD(learning_rate=1.0, clip_norm=5.0).step({"w": qb.array(p0)}, {"w": qb.array(g)})
    np.testing.assert_allclose(a["w"].numpy(), p0 - g / 10.0)


def test_jitted_train_step_traces_once_over_100_steps():
    opt = optim.Adam(0.01)

    def loss(p, x):
        return qb.mean((qb.tanh(x * p["w"] + p["b"]) - 0.5) ** 2)

    @qb.jit
    def train_step(p, state, x):
        value, grads = qb.value_and_grad(loss)(p, x)
        p, state = opt.update(p, grads, state)
        return p, state, value

    p = {"w": qb.array(0.3), "b": qb.array(0.0)}
    state = opt.init(p)
    x = qb.linspace(-1.0, 1.0, 16)
    first = None
    for _ in range(100):
        p, state, value = train_step(p, state, x)
        first = first if first is not None else value.item()
    assert train_step.trace_count == 1
    assert value.item() < first


def test_bad_hyperparameters_raise():
    with pytest.raises(ValueError):
        optim.Adam(learning_rate=-1.0)
    with pytest.raises(ValueError):
        optim.Adam(b1=1.0)
    with pytest.raises(ValueError, match='missing gradient for "w"'):
        optim.SGD().step({"w": qb.ones(2)}, {"v": qb.ones(2)})
    with pytest.raises(ValueError, match="structure"):
        optim.SGD().step([qb.ones(2)], [qb.ones(2), qb.ones(2)])


def test_constant_schedule():
    assert optim.constant(0.3)(qb.array(7.0)) == 0.3
