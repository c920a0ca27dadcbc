"""quabla.optax against optax's formulas (written out in NumPy) and, where optax is
installed, against optax itself on the same gradient sequence; inside jit; qb.optim's Adam
takes the same steps."""
import numpy as np
import pytest

import quabla as qb
import quabla.optax as qopt

GRADS = [np.array([[0.5, -1.0], [2.0, 0.25]]) * (k + 1) * (-1) ** k for k in range(6)]
P0 = np.array([[1.0, -2.0], [0.5, 3.0]])


def run(opt, jit=False):
    params = {"w": qb.asarray(P0), "b": qb.asarray(P0[0])}
    state = opt.init(params)

    def step(params, state, g):
        updates, state = opt.update({"w": g, "b": g[0]}, state, params)
        return qopt.apply_updates(params, updates), state
    if jit:
        step = qb.jit(step)
    for g in GRADS:
        params, state = step(params, state, qb.asarray(g))
    return params["w"].numpy(), params["b"].numpy()


def reference_adam(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    p, m, v = P0.copy(), np.zeros_like(P0), np.zeros_like(P0)
    for t, g in enumerate(GRADS, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * p
        p = p - lr * step
    return p


def test_adam_adamw_sgd_rmsprop_adagrad_match_their_formulas():
    np.testing.assert_allclose(run(qopt.adam(0.05))[0], reference_adam(0.05), rtol=1e-13)
    np.testing.assert_allclose(run(qopt.adam(0.05), jit=True)[0], reference_adam(0.05), rtol=1e-13)
    np.testing.assert_allclose(run(qopt.adamw(0.05, weight_decay=0.1))[0], reference_adam(0.05, wd=0.1), rtol=1e-13)
    p, tr = P0.copy(), np.zeros_like(P0)
    for g in GRADS:
        tr = g + 0.9 * tr
        p = p - 0.1 * (g + 0.9 * tr)
    np.testing.assert_allclose(run(qopt.sgd(0.1, momentum=0.9, nesterov=True))[0], p, rtol=1e-13)
    p, nu = P0.copy(), np.zeros_like(P0)
    for g in GRADS:
        nu = 0.9 * nu + 0.1 * g * g
        p = p - 0.01 * g / np.sqrt(nu + 1e-8)
    np.testing.assert_allclose(run(qopt.rmsprop(0.01))[0], p, rtol=1e-13)
    p, sos = P0.copy(), np.full_like(P0, 0.1)
    for g in GRADS:
        sos = sos + g * g
        p = p - 0.1 * g / np.sqrt(sos + 1e-7)
    np.testing.assert_allclose(run(qopt.adagrad(0.1))[0], p, rtol=1e-13)


def test_chain_clip_schedule_and_qb_optim_agree():
    sched = qopt.exponential_decay(0.1, transition_steps=2, decay_rate=0.5)
    opt = qopt.chain(qopt.clip_by_global_norm(1.0), qopt.scale_by_adam(), qopt.scale_by_learning_rate(sched))
    got = run(opt)[0]
    p, m, v = P0.copy(), np.zeros_like(P0), np.zeros_like(P0)
    for t, g in enumerate(GRADS, start=1):
        # The global norm covers both leaves (w and its first row b).
        norm = np.sqrt((g * g).sum() + (g[0] * g[0]).sum())
        g = g * min(1.0, 1.0 / norm)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - 0.1 * 0.5 ** ((t - 1) / 2) * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(got, p, rtol=1e-12)
    # qb.optim.Adam's one-call update takes the same steps as the chain.
    adam = qb.optim.Adam(0.05)
    params = {"w": qb.asarray(P0)}
    st = adam.init(params)
    for g in GRADS:
        params, st = adam.update(params, {"w": qb.asarray(g)}, st)
    np.testing.assert_allclose(params["w"].numpy(), reference_adam(0.05), rtol=1e-13)


def test_schedules():
    lin = qopt.linear_schedule(1.0, 0.0, 4, transition_begin=2)
    np.testing.assert_allclose([float(np.asarray(lin(qb.asarray(c)))) for c in range(8)],
                               [1.0, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0])
    joined = qopt.join_schedules([qopt.constant_schedule(1.0), qopt.linear_schedule(1.0, 0.0, 2)], [3])
    np.testing.assert_allclose([float(np.asarray(joined(qb.asarray(c)))) for c in range(6)],
                               [1.0, 1.0, 1.0, 1.0, 0.5, 0.0])
    poly = qopt.polynomial_schedule(2.0, 0.0, 2.0, 4)
    np.testing.assert_allclose(float(np.asarray(poly(qb.asarray(2)))), 2.0 * 0.25)


def test_masks_and_errors():
    opt = qopt.add_decayed_weights(0.5, mask={"w": True, "b": False})
    u, _ = opt.update({"w": qb.ones(2), "b": qb.ones(2)}, opt.init(None), {"w": qb.ones(2) * 2, "b": qb.ones(2) * 2})
    assert u["w"].numpy().tolist() == [2.0, 2.0] and u["b"].numpy().tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="needs params"):
        opt.update({"w": qb.ones(2)}, opt.init(None))
    z, _ = qopt.zero_nans().update({"w": qb.asarray([1.0, np.nan])}, qopt.EmptyState())
    assert z["w"].numpy().tolist() == [1.0, 0.0]


@pytest.mark.parametrize("name, args", [("adam", (0.05,)), ("adamw", (0.05,)), ("sgd", (0.1, 0.9)),
                                        ("rmsprop", (0.01,)), ("adagrad", (0.1,))])
def test_against_optax_itself(name, args):
    optax = pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    opt = getattr(optax, name)(*args)
    params = {"w": jnp.asarray(P0), "b": jnp.asarray(P0[0])}
    state = opt.init(params)
    for g in GRADS:
        updates, state = opt.update({"w": jnp.asarray(g), "b": jnp.asarray(g[0])}, state, params)
        params = optax.apply_updates(params, updates)
    got_w, got_b = run(getattr(qopt, name)(*args))
    np.testing.assert_allclose(got_w, np.asarray(params["w"]), rtol=1e-12)
    np.testing.assert_allclose(got_b, np.asarray(params["b"]), rtol=1e-12)


def test_state_structures_and_rmsprop_momentum_match_optax():
    optax = pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    params = {"w": P0}
    assert len(qopt.sgd(0.1).init({"w": qb.asarray(P0)})) == len(optax.sgd(0.1).init(params))
    for make in (lambda m: m.rmsprop(m.linear_schedule(0.01, 0.001, 10), momentum=0.9),
                 lambda m: m.rmsprop(0.01, momentum=0.5, nesterov=True)):
        ours, theirs = make(qopt), make(optax)
        qp, jp = {"w": qb.asarray(P0)}, {"w": jnp.asarray(P0)}
        qs, js = ours.init(qp), theirs.init(jp)
        for g in GRADS * 3:
            u, qs = ours.update({"w": qb.asarray(g)}, qs, qp)
            qp = qopt.apply_updates(qp, u)
            u, js = theirs.update({"w": jnp.asarray(g)}, js, jp)
            jp = optax.apply_updates(jp, u)
        np.testing.assert_allclose(qp["w"].numpy(), np.asarray(jp["w"]), rtol=1e-6)  # optax's schedules run in float32


def test_losses_against_optax_formulas():
    rng = np.random.default_rng(0)
    p, t = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    e = p - t
    np.testing.assert_allclose(qopt.l2_loss(qb.asarray(p), qb.asarray(t)).numpy(), 0.5 * e ** 2, rtol=1e-14)
    np.testing.assert_allclose(qopt.squared_error(qb.asarray(p), qb.asarray(t)).numpy(), e ** 2, rtol=1e-14)
    np.testing.assert_allclose(qopt.huber_loss(qb.asarray(p), qb.asarray(t), delta=0.5).numpy(),
                               np.where(np.abs(e) <= 0.5, 0.5 * e ** 2, 0.5 * (np.abs(e) - 0.25)), rtol=1e-14)
    np.testing.assert_allclose(qopt.log_cosh(qb.asarray(p * 400), qb.asarray(t)).numpy(), np.logaddexp(p * 400 - t, t - p * 400)
                               - np.log(2.0), rtol=1e-14)
    labels = np.abs(rng.normal(size=(4, 3)))
    labels /= labels.sum(-1, keepdims=True)
    logp = p - np.log(np.exp(p).sum(-1, keepdims=True))
    np.testing.assert_allclose(qopt.softmax_cross_entropy(qb.asarray(p), qb.asarray(labels)).numpy(),
                               -(labels * logp).sum(-1), rtol=1e-13)
    idx = np.array([0, 2, 1, 1])
    np.testing.assert_allclose(qopt.softmax_cross_entropy_with_integer_labels(qb.asarray(p), qb.asarray(idx)).numpy(),
                               -logp[np.arange(4), idx], rtol=1e-13)
    b = (rng.uniform(size=(4, 3)) > 0.5).astype(float)
    z = p * 30
    np.testing.assert_allclose(qopt.sigmoid_binary_cross_entropy(qb.asarray(z), qb.asarray(b)).numpy(),
                               np.logaddexp(0, -z) * b + np.logaddexp(0, z) * (1 - b), rtol=1e-13)
    np.testing.assert_allclose(qopt.cosine_distance(qb.asarray(p), qb.asarray(t)).numpy(),
                               1 - (p * t).sum(-1) / np.linalg.norm(p, axis=-1) / np.linalg.norm(t, axis=-1), rtol=1e-13)


def test_inject_hyperparams_and_masked():
    opt = qopt.inject_hyperparams(qopt.adam)(learning_rate=0.05)
    state = opt.init({"w": qb.asarray(P0)})
    assert float(state.hyperparams["learning_rate"].item()) == 0.05
    np.testing.assert_allclose(run(opt)[0], reference_adam(0.05), rtol=1e-13)
    sched = qopt.inject_hyperparams(qopt.sgd)(learning_rate=qopt.linear_schedule(0.1, 0.0, 4))
    params, st = {"w": qb.asarray(P0)}, None
    st = sched.init(params)
    seen = []
    for g in GRADS[:5]:
        u, st = sched.update({"w": qb.asarray(g)}, st, params)
        seen.append(float(st.hyperparams["learning_rate"].item()))
        params = qopt.apply_updates(params, u)
    np.testing.assert_allclose(seen, [0.1, 0.075, 0.05, 0.025, 0.0])
    m = qopt.chain(qopt.masked(qopt.add_decayed_weights(0.5), {"w": True, "b": False}), qopt.scale(-1.0))
    u, _ = m.update({"w": qb.ones(2), "b": qb.ones(2)}, m.init({"w": qb.ones(2), "b": qb.ones(2)}),
                    {"w": qb.ones(2) * 2, "b": qb.ones(2) * 2})
    assert u["w"].numpy().tolist() == [-2.0, -2.0] and u["b"].numpy().tolist() == [-1.0, -1.0]


def assert_same_steps(ours, theirs, rtol):
    """Six steps of our transformation and optax's on the same gradients end at the same params."""
    optax = pytest.importorskip("optax")
    import jax.numpy as jnp
    qp = {"w": qb.asarray(P0), "b": qb.asarray(P0[0])}
    jp = {"w": jnp.asarray(P0), "b": jnp.asarray(P0[0])}
    qs, js = ours.init(qp), theirs.init(jp)
    for g in GRADS:
        u, qs = ours.update({"w": qb.asarray(g), "b": qb.asarray(g[0])}, qs, qp)
        qp = qopt.apply_updates(qp, u)
        u, js = theirs.update({"w": jnp.asarray(g), "b": jnp.asarray(g[0])}, js, jp)
        jp = optax.apply_updates(jp, u)
    np.testing.assert_allclose(qp["w"].numpy(), np.asarray(jp["w"]), rtol=rtol)
    np.testing.assert_allclose(qp["b"].numpy(), np.asarray(jp["b"]), rtol=rtol)


def test_inject_and_masked_against_optax_itself():
    optax = pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    for make in (lambda m: m.inject_hyperparams(m.adam)(learning_rate=0.05),
                 lambda m: m.inject_hyperparams(m.sgd)(learning_rate=m.linear_schedule(0.1, 0.01, 4), momentum=0.9),
                 lambda m: m.chain(m.masked(m.add_decayed_weights(0.1), {"w": True, "b": False}), m.sgd(0.1))):
        ours, theirs = make(qopt), make(optax)
        assert_same_steps(ours, theirs, rtol=1e-6)  # optax's schedules run in float32


def test_multi_transform_against_optax_itself():
    optax = pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    labels = {"w": "adam", "b": "sgd"}
    ours = qopt.multi_transform({"adam": qopt.adam(0.05), "sgd": qopt.sgd(0.1, momentum=0.9)}, labels)
    theirs = optax.multi_transform({"adam": optax.adam(0.05), "sgd": optax.sgd(0.1, momentum=0.9)}, labels)
    assert_same_steps(ours, theirs, rtol=1e-12)
    qp = {"w": qb.asarray(P0), "b": qb.asarray(P0[0])}
    with pytest.raises(ValueError, match="no transformation"):
        qopt.multi_transform({"adam": qopt.adam(0.1)}, {"w": "adam", "b": "other"}).init(qp)


# ---- more optimizers, wrappers and schedules against optax 0.2.8 (float64) ---------------------

def _optax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return pytest.importorskip("optax"), jax


def _grad_at(p, k):
    # a gradient that depends on the parameters (a quadratic plus a kick), non-finite never
    return 0.7 * p + (-1.0) ** k * 0.3 * (k + 1) + 0.05 * p ** 3


def _both_runs(make, steps=8, jit=False, rtol=1e-12):
    optax, jax = _optax()
    import jax.numpy as jnp
    p0 = {"w": P0, "b": P0[0] * 0.5}
    ref = make(optax)
    jp = {k: jnp.asarray(v) for k, v in p0.items()}
    js = ref.init(jp)
    mine = make(qopt)
    qp = {k: qb.asarray(v) for k, v in p0.items()}
    qs = mine.init(qp)

    def qstep(qp, qs, k):
        g = {n: _grad_at(v, k) for n, v in qp.items()}
        u, qs = mine.update(g, qs, qp)
        return qopt.apply_updates(qp, u), qs
    step = qb.jit(qstep, static_argnums=2) if jit else qstep
    for k in range(steps):
        g = {n: _grad_at(v, k) for n, v in jp.items()}
        u, js = ref.update(g, js, jp)
        jp = optax.apply_updates(jp, u)
        qp, qs = step(qp, qs, k)
        for n in p0:
            np.testing.assert_allclose(np.asarray(qp[n]), np.asarray(jp[n]), rtol=rtol, atol=1e-14,
                                       err_msg=f"step {k} leaf {n}")
    return qs, js


@pytest.mark.parametrize("name, make", [
    ("nadam", lambda o: o.nadam(0.05)),
    ("radam", lambda o: o.radam(0.05)),
    ("radam_low_threshold", lambda o: o.radam(0.05, b2=0.9, threshold=2.0)),
    ("radam_nesterov", lambda o: o.radam(0.05, threshold=1.0, nesterov=True)),
    ("lion", lambda o: o.lion(0.01, weight_decay=0.1)),
    ("lamb", lambda o: o.lamb(0.05, weight_decay=0.01)),
    ("adabelief", lambda o: o.adabelief(0.05)),
    ("adabelief_nesterov", lambda o: o.adabelief(0.05, nesterov=True)),
    ("yogi", lambda o: o.yogi(0.05)),
    ("adadelta", lambda o: o.adadelta(1.0, rho=0.8, weight_decay=0.01)),
    ("adadelta_no_lr", lambda o: o.adadelta()),
    ("adamax", lambda o: o.adamax(0.05)),
    ("novograd", lambda o: o.novograd(0.05, weight_decay=0.01)),
    ("rmsprop_centered", lambda o: o.rmsprop(0.01, centered=True)),
    ("rmsprop_centered_momentum", lambda o: o.rmsprop(0.01, centered=True, momentum=0.9, eps_in_sqrt=False)),
    ("ema_chain", lambda o: o.chain(o.ema(0.8), o.scale(-0.1))),
    ("ema_no_debias", lambda o: o.chain(o.ema(0.8, debias=False), o.scale(-0.1))),
    ("apply_if_finite", lambda o: o.apply_if_finite(o.adam(0.05), 2)),
])
def test_more_optimizers_follow_optax(name, make):
    _both_runs(make)


@pytest.mark.parametrize("make", [
    lambda o: o.adam(o.cosine_onecycle_schedule(8, 0.1)),
    lambda o: o.sgd(o.linear_onecycle_schedule(7, 0.1)),
    lambda o: o.sgd(o.warmup_exponential_decay_schedule(0.0, 0.1, 3, 2, 0.5)),
])
def test_optimizers_with_the_new_schedules_follow_optax(make):
    # optax divides its int32 step count by an int, which JAX computes in float32 even with
    # x64: its learning rates carry float32 rounding (Quabla's schedules are float64, and
    # match optax's exactly at Python-int counts: test_more_schedules_match_optax).
    _both_runs(make, rtol=1e-6)


def test_more_optimizers_inside_jit():
    _both_runs(lambda o: o.lamb(0.05, weight_decay=0.01), jit=True)
    _both_runs(lambda o: o.radam(0.05, threshold=2.0), jit=True)


def test_apply_if_finite_skips_nonfinite_updates_as_optax():
    optax, jax = _optax()
    import jax.numpy as jnp
    grads = [np.array([1.0, 2.0]), np.array([np.nan, 1.0]), np.array([np.inf, 1.0]), np.array([0.5, -1.0]),
             np.array([np.nan, 0.0]), np.array([np.nan, 0.0]), np.array([np.nan, 0.0]), np.array([1.0, 1.0])]
    ref, mine = optax.apply_if_finite(optax.sgd(0.1, momentum=0.9), 1), qopt.apply_if_finite(qopt.sgd(0.1, 0.9), 1)
    jp, qp = jnp.array([1.0, -1.0]), qb.asarray([1.0, -1.0])
    js, qs = ref.init(jp), mine.init(qp)
    for g in grads:
        u, js = ref.update(jnp.asarray(g), js, jp)
        jp = optax.apply_updates(jp, u)
        v, qs = mine.update(qb.asarray(g), qs, qp)
        qp = qopt.apply_updates(qp, v)
        np.testing.assert_allclose(np.asarray(qp), np.asarray(jp), rtol=1e-13)
        assert int(qs.notfinite_count) == int(js.notfinite_count)
        assert int(qs.total_notfinite) == int(js.total_notfinite)
        assert bool(qs.last_finite) == bool(js.last_finite)


@pytest.mark.parametrize("k, mean", [(3, True), (2, False)])
def test_multisteps_accumulates_as_optax(k, mean):
    optax, jax = _optax()
    import jax.numpy as jnp
    import quabla.numpy as qnp
    ref = optax.MultiSteps(optax.adam(0.1), k, use_grad_mean=mean, accumulator_dtype=jnp.float64)
    mine = qopt.MultiSteps(qopt.adam(0.1), k, use_grad_mean=mean, accumulator_dtype=qnp.float64)
    jp, qp = jnp.asarray(P0), qb.asarray(P0)
    js, qs = ref.init(jp), mine.init(qp)
    step = qb.jit(lambda g, s, p: mine.update(g, s, p))
    for g in GRADS + GRADS:
        u, js = ref.update(jnp.asarray(g), js, jp)
        jp = optax.apply_updates(jp, u)
        v, qs = step(qb.asarray(g), qs, qp)
        qp = qopt.apply_updates(qp, v)
        np.testing.assert_allclose(np.asarray(qp), np.asarray(jp), rtol=1e-12)
        assert bool(mine.has_updated(qs)) == bool(ref.has_updated(js))
        assert int(qs.mini_step) == int(js.mini_step) and int(qs.gradient_step) == int(js.gradient_step)
    with pytest.raises(ValueError, match="every_k_schedule"):
        qopt.MultiSteps(qopt.adam(0.1), 0)


def test_more_schedules_match_optax():
    optax, jax = _optax()
    cases = [
        ("cosine_onecycle_schedule", dict(transition_steps=20, peak_value=0.3)),
        ("cosine_onecycle_schedule", dict(transition_steps=9, peak_value=1.0, pct_start=0.5, div_factor=5.0)),
        ("linear_onecycle_schedule", dict(transition_steps=20, peak_value=0.3)),
        ("warmup_exponential_decay_schedule", dict(init_value=0.0, peak_value=1.0, warmup_steps=5,
                                                   transition_steps=3, decay_rate=0.5)),
        ("warmup_exponential_decay_schedule", dict(init_value=0.1, peak_value=1.0, warmup_steps=4,
                                                   transition_steps=2, decay_rate=0.7, transition_begin=3,
                                                   staircase=True, end_value=0.3)),
        ("polynomial_schedule", dict(init_value=1.0, end_value=0.1, power=2.0, transition_steps=10,
                                     transition_begin=2)),
        ("piecewise_interpolate_schedule", dict(interpolate_type="cosine", init_value=2.0,
                                                boundaries_and_scales={3: 0.5, 8: 0.1})),
    ]
    for name, kw in cases:
        ref, mine = getattr(optax, name)(**kw), getattr(qopt, name)(**kw)
        for c in range(0, 26):
            np.testing.assert_allclose(float(mine(c)), float(ref(c)), rtol=1e-12, atol=1e-15, err_msg=f"{name} {c}")
        assert getattr(qopt.schedules, name) is getattr(qopt, name)
    kw = [dict(init_value=0.0, peak_value=1.0, warmup_steps=2, decay_steps=6),
          dict(init_value=0.1, peak_value=0.5, warmup_steps=1, decay_steps=4, end_value=0.05)]
    ref, mine = optax.sgdr_schedule(kw), qopt.sgdr_schedule(kw)
    for c in range(14):
        np.testing.assert_allclose(float(mine(c)), float(ref(c)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(float(qb.jit(mine)(qb.asarray(3))), float(ref(3)), rtol=1e-12)
    with pytest.raises(ValueError, match="transition_steps"):
        qopt.cosine_onecycle_schedule(0, 0.1)


def test_type_aliases_and_namespaces():
    optax, jax = _optax()
    for name in ("OptState", "Params", "Updates", "GradientTransformation", "GradientTransformationExtraArgs",
                 "Schedule"):
        assert hasattr(qopt, name) and hasattr(optax, name)
    assert isinstance(qopt.adam(0.1), qopt.GradientTransformation)
    assert isinstance(qopt.adam(0.1), qopt.GradientTransformationExtraArgs)
    t = {"a": qb.asarray([1.0, 2.0]), "b": qb.asarray(3.0)}
    j = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}
    np.testing.assert_allclose(float(qopt.tree_utils.tree_l2_norm(t)), float(optax.tree_utils.tree_l2_norm(j)))
    np.testing.assert_allclose(float(qopt.tree_utils.tree_vdot(t, t)), float(optax.tree_utils.tree_vdot(j, j)))
    np.testing.assert_allclose(np.asarray(qopt.tree_utils.tree_add_scalar_mul(t, 2.0, t)["a"]),
                               np.asarray(optax.tree_utils.tree_add_scalar_mul(j, 2.0, j)["a"]))
    np.testing.assert_allclose(float(qopt.schedules.linear_schedule(1.0, 0.0, 4)(1)),
                               float(optax.schedules.linear_schedule(1.0, 0.0, 4)(1)))


# ---- L-BFGS (optax 0.2.8's lbfgs: scale_by_lbfgs + scale_by_zoom_linesearch) -----------------

_LB_A = np.array([[3.0, 0.5, 0.1], [0.5, 2.0, -0.3], [0.1, -0.3, 1.0]])
_LB_B = np.array([1.0, -2.0, 0.5])


def _lb_quadratic(m):
    return lambda x: 0.5 * m.sum(x * (m.asarray(_LB_A) @ x)) - m.sum(m.asarray(_LB_B) * x)


def _lb_rosenbrock(m):
    return lambda x: (1.0 - x[0]) ** 2 + 100.0 * (x[1] - x[0] ** 2) ** 2


def _lb_run(m, o, f, x0, steps, make, jit=False, extra=None):
    extra = extra or {}
    opt = make(o)
    params = m.asarray(x0)
    state = opt.init(params)
    vg = o.value_and_grad_from_state(f)

    def step(params, state):
        value, grad = vg(params, state=state, **extra)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=f, **extra)
        return o.apply_updates(params, updates), state
    if jit:
        step = (qb.jit if m is qb else __import__("jax").jit)(step)
    iterates, ls_steps = [], []
    for _ in range(steps):
        params, state = step(params, state)
        iterates.append(np.asarray(params))
        ls_steps.append(int(state[2].info.num_linesearch_steps))
    return np.array(iterates), ls_steps


_LB_REFERENCES = {}


def _lb_reference(problem, make, fn, x0, maker):
    """optax's iterates (jitted steps: computed once per problem and configuration)."""
    if (problem, make) not in _LB_REFERENCES:
        import jax
        import optax
        _LB_REFERENCES[problem, make] = _lb_run(jax.numpy, optax, fn(jax.numpy), np.array(x0), 20, maker, jit=True)
    return _LB_REFERENCES[problem, make]


@pytest.mark.parametrize("problem,x0,rtol", [("quadratic", [1.0, 1.0, 1.0], 1e-13),
                                             ("rosenbrock", [-1.2, 1.0], 1e-7)])
@pytest.mark.parametrize("make", ["default", "memory 2", "keep guess, max lr"])
@pytest.mark.parametrize("jit", [False, True])
def test_lbfgs_iterates_match_optax(problem, x0, rtol, make, jit):
    pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    makers = {"default": lambda o: o.lbfgs(),
              "memory 2": lambda o: o.lbfgs(memory_size=2),
              "keep guess, max lr": lambda o: o.lbfgs(memory_size=3, scale_init_precond=False,
                                                      linesearch=o.scale_by_zoom_linesearch(
                                                          10, max_learning_rate=0.8, initial_guess_strategy="keep"))}
    fn = {"quadratic": _lb_quadratic, "rosenbrock": _lb_rosenbrock}[problem]
    ref, ref_ls = _lb_reference(problem, make, fn, x0, makers[make])
    got, got_ls = _lb_run(qb, qopt, fn(qb), np.array(x0), 20, makers[make], jit=jit)
    # the same line-search path at every step before convergence (after it, the line search's
    # comparisons are between values equal to rounding, in either library)
    moving = [k for k in range(20) if np.max(np.abs(ref[k] - (ref[k - 1] if k else np.array(x0)))) > 1e-9]
    assert len(moving) >= 8
    assert [got_ls[k] for k in moving] == [ref_ls[k] for k in moving]
    if make == "keep guess, max lr" and problem == "rosenbrock":
        assert 10 in ref_ls and max(ref_ls[1:]) > 3  # a failed search (safe step) and zooms are exercised
    # float64 rounding differences (dot products' summation order) grow along Rosenbrock's valley
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


def test_lbfgs_pytrees_and_extra_arguments_reach_value_fn():
    optax = pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    m = rng.standard_normal((5, 5))
    a, b = m @ m.T + np.eye(5), rng.standard_normal(5)

    def make_f(mod):
        def f(p, scale):
            x = mod.concatenate([p["u"], p["v"]])
            quadratic = 0.5 * mod.sum(x * (mod.asarray(a) @ x)) - mod.sum(mod.asarray(b) * x)
            return scale * quadratic + 0.1 * mod.sum(x ** 4)
        return f

    def run(mod, o):
        f, opt = make_f(mod), o.lbfgs(memory_size=2)
        params = {"u": mod.asarray([1.0, -1.0]), "v": mod.asarray([0.5, 2.0, -0.3])}
        state = opt.init(params)
        vg = o.value_and_grad_from_state(f)

        def step(params, state):
            value, grad = vg(params, 2.0, state=state)
            updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=f, scale=2.0)
            return o.apply_updates(params, updates), state
        if o is optax:
            step = jax.jit(step)
        for _ in range(12):
            params, state = step(params, state)
        return params, state
    ref, ref_state = run(jax.numpy, optax)
    got, got_state = run(qb, qopt)
    for k in ("u", "v"):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(ref[k]), rtol=1e-12, atol=1e-12)
    assert type(got_state[0]).__name__ == type(ref_state[0]).__name__ == "ScaleByLBFGSState"
    assert got_state[0]._fields == ref_state[0]._fields and got_state[2]._fields == ref_state[2]._fields
    np.testing.assert_allclose(float(got_state[2].value), float(ref_state[2].value), rtol=1e-12)


def test_lbfgs_errors_and_chain_extra_args():
    opt = qopt.lbfgs()
    params = qb.array([1.0, 2.0])
    state = opt.init(params)
    f = (lambda x: qb.sum(x ** 2))
    g = qb.grad(f)(params)
    with pytest.raises(TypeError, match="value="):
        opt.update(g, state, params)
    with pytest.raises(TypeError, match="not parameters of value_fn"):
        opt.update(g, state, params, value=f(params), grad=g, value_fn=f, data=3.0)
    with pytest.raises(ValueError, match="memory_size"):
        qopt.scale_by_lbfgs(memory_size=0)
    with pytest.raises(ValueError, match="initial_guess_strategy"):
        qopt.scale_by_zoom_linesearch(10, initial_guess_strategy="two")
    with pytest.raises(ValueError, match="not found in the state"):
        qopt.value_and_grad_from_state(f)(params, state=qopt.adam(0.1).init(params))
    # chain hands extra arguments only to transformations that take them (as optax)
    seen = {}

    def upd(updates, state, params=None, **extra):
        seen.update(extra)
        return updates, state
    chained = qopt.chain(qopt.scale(2.0), qopt.GradientTransformationExtraArgs(lambda p: qopt.EmptyState(), upd))
    out, _ = chained.update(qb.array([1.0]), chained.init(qb.array([0.0])), None, value=1.5)
    assert seen == {"value": 1.5} and float(out[0]) == 2.0
    assert isinstance(chained, qopt.GradientTransformation)
    # one step decreases the objective
    value, grad = qopt.value_and_grad_from_state(f)(params, state=state)
    updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=f)
    assert float(f(qopt.apply_updates(params, updates))) < float(value)


def test_lbfgs_float32_parameters_keep_their_dtype_eager_and_jitted():
    f = _lb_rosenbrock(qb)
    results = []
    for jit in (False, True):
        opt = qopt.lbfgs()
        p = qb.array([-1.2, 1.0], dtype=qb.float32)
        state = opt.init(p)
        vg = qopt.value_and_grad_from_state(f)

        def step(p, state):
            value, grad = vg(p, state=state)
            updates, state = opt.update(grad, state, p, value=value, grad=grad, value_fn=f)
            return qopt.apply_updates(p, updates), state
        step = qb.jit(step) if jit else step
        for _ in range(25):
            p, state = step(p, state)
        assert p.dtype == qb.float32 and state[0].updates.dtype == qb.float32 and state[2].value.dtype == qb.float32
        results.append(p.numpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert float(f(qb.asarray(results[0]))) < 0.2  # from 24.2 at the start (float64: 0.17 after 20 steps)


def test_norms_and_tree_sums_keep_float32_trees_float32_as_optax():
    import quabla.optax as qox
    tree32 = {"a": qb.ones(3, dtype=qb.float32), "b": qb.asarray([[2.0]], dtype=qb.float32)}
    assert qox.global_norm(tree32).dtype == qb.float32
    assert float(qox.global_norm(tree32)) == pytest.approx(np.sqrt(7.0), rel=1e-7)
    assert qox.tree_utils.tree_l2_norm(tree32).dtype == qb.float32
    assert qox.tree_utils.tree_sum(tree32).dtype == qb.float32
    assert qox.global_norm({"a": tree32["a"], "b": qb.ones(2)}).dtype == qb.float64
    # per-example clipping in float32 works without any astype
    scaled = qb.tree.map(lambda g: g * qb.minimum(1.0, 1.0 / qox.global_norm(tree32)), tree32)
    assert scaled["a"].dtype == qb.float32
