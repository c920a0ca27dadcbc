"""quabla.optax's later additions against optax 0.2.8 itself (float64, jax_enable_x64): the
losses of optax.losses (values on random inputs, gradients through qb.grad against
jax.grad), qb.optax.losses as a namespace, and the optimizers and transformations added
with them, step for step on a small quadratic and an MLP's parameter pytree."""
import functools
import warnings

import numpy as np
import pytest

import quabla as qb
import quabla.optax as qopt


def _optax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return pytest.importorskip("optax"), jax


def _q(x):
    return qb.asarray(x) if isinstance(x, np.ndarray) else x


def _close(got, want, rtol=1e-12, atol=1e-14, msg=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{msg}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=msg)


# ---- losses ------------------------------------------------------------------------------------

def _inputs(seed=0):
    r = np.random.default_rng(seed)
    d = {}
    d["logp"] = np.log(r.dirichlet(np.ones(5), size=3))
    t = r.dirichlet(np.ones(5), size=3)
    t[0, 1] = 0.0  # a zero-probability target (0 log 0 = 0)
    d["t"] = t
    d["where35"] = r.random((3, 5)) > 0.3
    d["s"] = r.normal(size=(4, 6))
    d["pm1"] = r.choice([-1.0, 1.0], size=(4, 6))
    d["lab"] = r.integers(0, 6, 4)
    d["onehot"] = np.eye(6)[d["lab"]]
    d["soft"] = r.dirichlet(np.ones(6), 4)
    d["z"] = r.normal(size=(4, 6)) * 3
    d["bin"] = (r.random((4, 6)) > 0.5) * 1.0
    d["unit"] = r.random((4, 6))
    d["where46"] = r.random((4, 6)) > 0.3
    d["a"], d["p"], d["n"] = r.normal(size=(3, 4, 5))
    d["img"] = r.normal(size=(2, 4, 5, 3))
    d["seg"] = np.eye(3)[r.integers(0, 3, (2, 4, 5))]
    d["emb"] = r.normal(size=(6, 3))
    d["emb_lab"] = np.array([0, 0, 1, 1, 1, 2])
    rel = r.integers(0, 3, (4, 6)).astype(float)
    rel[3] = 0.0  # a list without relevant items
    d["rel"] = rel
    d["w46"] = r.random((4, 6))
    ninf = d["s"].copy()
    ninf[0, 2] = -np.inf
    d["s_ninf"] = ninf
    oh = d["onehot"].copy()
    oh[0] = 0.0
    oh[0, 0] = 1.0
    d["onehot_ninf"] = oh
    return d


# (name, positional input names, keyword arguments (array values name inputs too))
LOSS_CASES = [
    ("kl_divergence", ("logp", "t"), {}),
    ("kl_divergence", ("logp", "t"), {"where": "where35"}),
    ("kl_divergence", ("logp", "t"), {"axis": 0}),
    ("kl_divergence_with_log_targets", ("logp", "logp_t"), {}),
    ("kl_divergence_with_log_targets", ("logp", "logp_t"), {"where": "where35"}),
    ("convex_kl_divergence", ("logp", "t"), {}),
    ("convex_kl_divergence", ("logp", "t"), {"where": "where35"}),
    ("generalized_kl_divergence", ("logp", "t"), {}),
    ("generalized_kl_divergence", ("logp", "t"), {"axis": 0}),
    ("hinge_loss", ("s", "pm1"), {}),
    ("perceptron_loss", ("s", "pm1"), {}),
    ("multiclass_hinge_loss", ("s", "lab"), {}),
    ("multiclass_perceptron_loss", ("s", "lab"), {}),
    ("sigmoid_focal_loss", ("z", "bin"), {}),
    ("sigmoid_focal_loss", ("z", "unit"), {"alpha": 0.3, "gamma": 1.5}),
    ("sigmoid_focal_loss", ("z", "bin"), {"gamma": 0.0}),
    ("sigmoid_focal_loss", ("z20", "bin"), {"gamma": 0.5}),
    ("smooth_labels", ("onehot", 0.1), {}),
    ("smooth_labels", ("onehot", 0.1), {"where": "where46"}),
    ("smooth_labels", ("onehot", 0.2), {"axis": (0, 1)}),
    ("poly_loss_cross_entropy", ("s", "onehot"), {}),
    ("poly_loss_cross_entropy", ("s", "unit"), {"epsilon": -1.0}),
    ("poly_loss_cross_entropy", ("s", "onehot_masked"), {"where": "where46"}),
    ("safe_softmax_cross_entropy", ("s_ninf", "onehot_ninf"), {}),
    ("safe_softmax_cross_entropy", ("s", "soft"), {}),
    ("triplet_margin_loss", ("a", "p", "n"), {}),
    ("triplet_margin_loss", ("a", "p", "n"), {"margin": 0.3, "eps": 0.01, "norm_degree": 4}),
    ("triplet_margin_loss", ("a", "p", "n"), {"axis": 0}),
    ("dice_loss", ("img", "seg"), {}),
    ("dice_loss", ("img", "seg"), {"alpha": 0.3, "beta": 0.7, "smooth": 0.5, "reduction": "sum"}),
    ("dice_loss", ("img", "seg"), {"class_weights": "cw", "ignore_background": True}),
    ("dice_loss", ("img", "seg"), {"reduction": "none", "axis": (1,)}),
    ("dice_loss", ("img1", "seg1"), {}),
    ("dice_loss", ("img_prob", "seg"), {"apply_softmax": False}),
    ("binary_dice_loss", ("img0", "seg0"), {}),
    ("binary_dice_loss", ("img1", "seg1"), {"smooth": 0.2}),
    ("binary_dice_loss", ("vec", "vec_t"), {}),
    ("multiclass_generalized_dice_loss", ("img", "seg"), {}),
    ("multiclass_generalized_dice_loss", ("img", "seg"), {"smooth": 0.3, "ignore_background": True}),
    ("ntxent", ("emb", "emb_lab"), {}),
    ("ntxent", ("emb", "emb_lab", 0.5), {}),
    ("sparsemax_loss", ("z", "bin"), {}),
    ("multiclass_sparsemax_loss", ("s", "lab"), {}),
    ("multiclass_sparsemax_loss", ("s_small", "lab"), {}),
    ("ranking_softmax_loss", ("s", "rel"), {}),
    ("ranking_softmax_loss", ("s", "rel"), {"reduce_fn": None, "where": "where46", "weights": "w46"}),
    ("ranking_softmax_loss", ("s", "rel"), {"reduce_fn": "fn:sum"}),
    ("cosine_similarity", ("s", "z"), {"axis": 0}),
    ("cosine_distance", ("s", "z"), {"where": "where46", "epsilon": 0.1}),
]


def _materialize(d, m, spec):
    """The inputs named by spec, as arrays of module m (qb or jax.numpy)."""
    extra = {
        "logp_t": np.log(d["t"] + 0.1), "z20": d["z"] * 20, "onehot_masked": d["onehot"] * d["where46"],
        "img1": d["img"][..., :1], "seg1": d["seg"][..., :1], "img0": d["img"][..., 0], "seg0": d["seg"][..., 0],
        "vec": d["img"][0, 0, :, 0], "vec_t": d["seg"][0, 0, :, 0], "cw": np.array([0.2, 1.0, 3.0]),
        "s_small": d["s"] * 0.1,
        "img_prob": np.exp(d["img"]) / np.exp(d["img"]).sum(-1, keepdims=True),
    }

    def one(v):
        if v == "fn:sum":
            return m.sum
        if isinstance(v, str) and (v in d or v in extra):
            return m.asarray(d[v] if v in d else extra[v])
        return v  # a plain argument (a number, reduction="sum", ...)
    return one


@pytest.mark.parametrize("name, args, kwargs", LOSS_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LOSS_CASES)])
def test_losses_match_optax(name, args, kwargs):
    optax, jax = _optax()
    import jax.numpy as jnp
    d = _inputs()
    qv, jv = _materialize(d, qb, name), _materialize(d, jnp, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # optax's convex_kl_divergence
        want = getattr(optax.losses, name)(*[jv(a) for a in args], **{k: jv(v) for k, v in kwargs.items()})
    got = getattr(qopt.losses, name)(*[qv(a) for a in args], **{k: qv(v) for k, v in kwargs.items()})
    assert isinstance(got, qb.Array)
    _close(got, want, atol=1e-13, msg=name)


GRAD_CASES = [
    ("kl_divergence", ("logp", "t"), {"where": "where35"}),
    ("convex_kl_divergence", ("logp", "t"), {}),
    ("multiclass_hinge_loss", ("s", "lab"), {}),
    ("sigmoid_focal_loss", ("z", "unit"), {"alpha": 0.3, "gamma": 1.5}),
    ("sigmoid_focal_loss", ("z", "bin"), {}),
    ("poly_loss_cross_entropy", ("s", "onehot"), {"epsilon": 1.5}),
    ("safe_softmax_cross_entropy", ("s_ninf", "onehot_ninf"), {}),
    ("triplet_margin_loss", ("a", "p", "n"), {"margin": 2.0}),
    ("dice_loss", ("img", "seg"), {"alpha": 0.3, "beta": 0.7}),
    ("multiclass_generalized_dice_loss", ("img", "seg"), {}),
    ("ntxent", ("emb", "emb_lab", 0.5), {}),
    ("sparsemax_loss", ("z", "bin"), {}),
    ("multiclass_sparsemax_loss", ("s", "lab"), {}),
    ("ranking_softmax_loss", ("s", "rel"), {"where": "where46", "weights": "w46"}),
]


@pytest.mark.parametrize("name, args, kwargs", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_loss_gradients_match_jax(name, args, kwargs):
    optax, jax = _optax()
    import jax.numpy as jnp
    d = _inputs(1)
    qv, jv = _materialize(d, qb, name), _materialize(d, jnp, name)
    qrest, jrest = [qv(a) for a in args[1:]], [jv(a) for a in args[1:]]
    qkw, jkw = {k: qv(v) for k, v in kwargs.items()}, {k: jv(v) for k, v in kwargs.items()}

    def qf(x):
        return qb.sum(getattr(qopt.losses, name)(x, *qrest, **qkw))

    def jf(x):
        return jnp.sum(getattr(optax.losses, name)(x, *jrest, **jkw))
    got = qb.grad(qf)(qv(args[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # optax's convex_kl_divergence
        want = jax.grad(jf)(jv(args[0]))
    assert np.all(np.isfinite(np.asarray(got))), name
    _close(got, want, rtol=1e-10, atol=1e-12, msg=name)


def test_losses_namespace_covers_optax_losses():
    optax, jax = _optax()
    unsupported = {"ctc_loss", "ctc_loss_with_forward_probs", "make_fenchel_young_loss"}
    names = [n for n in dir(optax.losses) if not n.startswith("_") and n not in unsupported]
    missing = [n for n in names if not hasattr(qopt.losses, n)]
    assert not missing, f"qb.optax.losses lacks {missing}"
    for n in names:
        # the same functions at the top level, as optax has them
        assert getattr(qopt, n) is getattr(qopt.losses, n), n
    for n in unsupported:
        with pytest.raises(AttributeError, match="not supported"):
            getattr(qopt.losses, n)
    import quabla.optax.losses as by_import
    from quabla.optax.losses import ntxent
    assert by_import is qopt.losses and ntxent is qopt.ntxent


def test_losses_inside_jit_and_errors():
    d = _inputs()
    f = qb.jit(lambda s, lab: qopt.losses.multiclass_sparsemax_loss(s, lab) + qopt.losses.multiclass_hinge_loss(s, lab))
    _close(f(qb.asarray(d["s"]), qb.asarray(d["lab"])),
           qopt.multiclass_sparsemax_loss(qb.asarray(d["s"]), qb.asarray(d["lab"]))
           + qopt.multiclass_hinge_loss(qb.asarray(d["s"]), qb.asarray(d["lab"])))
    # the sparsemax loss is 0 exactly when sparsemax puts all mass on the label
    assert float(qopt.multiclass_sparsemax_loss(qb.asarray([5.0, 0.0, 0.1]), qb.asarray(0))) == 0.0
    with pytest.raises(ValueError, match="reduction"):
        qopt.dice_loss(qb.asarray(d["img"]), qb.asarray(d["seg"]), reduction="max")
    with pytest.raises(ValueError, match=r"\[batch, features\]"):
        qopt.ntxent(qb.asarray(d["img"]), qb.asarray(d["emb_lab"]))


# ---- optimizers and transformations, step for step ---------------------------------------------

P0 = np.array([[1.0, -2.0], [0.5, 3.0]])


def _grad_at(p, k):
    # a gradient that depends on the parameters (a quadratic plus a kick)
    return 0.7 * p + (-1.0) ** k * 0.3 * (k + 1) + 0.05 * p ** 3


def _state_leaves(jax, tree):
    out = []
    for leaf in jax.tree_util.tree_leaves(tree):
        if hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        out.append(np.asarray(leaf))
    return out


def _both_runs(make, steps=8, extra=None, jit=False, rtol=1e-12, check_state=True):
    """make(module) built from optax and from qb.optax, run on the same parameter-dependent
    gradients; parameters compared after every step, the states' leaves at the end."""
    optax, jax = _optax()
    import jax.numpy as jnp
    p0 = {"w": P0, "b": P0[0] * 0.5}
    ref, mine = make(optax), make(qopt)
    jp = {k: jnp.asarray(v) for k, v in p0.items()}
    js = ref.init(jp)
    qp = {k: qb.asarray(v) for k, v in p0.items()}
    qs = mine.init(qp)

    def qstep(qp, qs, k):
        g = {n: _grad_at(v, k) for n, v in qp.items()}
        u, qs = mine.update(g, qs, qp, **(extra(qb, qp) if extra else {}))
        return qopt.apply_updates(qp, u), qs
    step = qb.jit(qstep, static_argnums=2) if jit else qstep
    for k in range(steps):
        g = {n: _grad_at(v, k) for n, v in jp.items()}
        u, js = ref.update(g, js, jp, **(extra(jnp, jp) if extra else {}))
        jp = optax.apply_updates(jp, u)
        qp, qs = step(qp, qs, k)
        for n in p0:
            _close(qp[n], jp[n], rtol=rtol, msg=f"step {k} leaf {n}")
    if check_state:
        jl, ql = _state_leaves(jax, js), [np.asarray(x) for x in qb.tree.leaves(qs)]
        assert len(jl) == len(ql), f"state leaves: {len(ql)} != optax's {len(jl)}"
        for i, (a, b) in enumerate(zip(ql, jl)):
            _close(a.astype(b.dtype) if a.dtype != b.dtype and b.dtype != np.bool_ else a, b, rtol=rtol,
                   msg=f"state leaf {i}")
    return qs, js


def _value(m, p):
    return {"value": m.sum(p["w"] ** 2) + m.sum(p["b"] ** 2)}


OPT_CASES = [
    ("adam_nesterov", lambda o: o.adam(0.05, nesterov=True)),
    ("adamw_nesterov", lambda o: o.adamw(0.05, weight_decay=0.1, nesterov=True)),
    ("nadamw", lambda o: o.nadamw(0.05, weight_decay=0.1)),
    ("amsgrad", lambda o: o.amsgrad(0.05)),
    ("amsgrad_no_bias_correction", lambda o: o.amsgrad(0.05, b2=0.9, bias_correction_mu=False,
                                                         bias_correction_nu=False)),
    ("noisy_sgd", lambda o: o.noisy_sgd(0.05, key=3)),
    ("noisy_sgd_eta_gamma", lambda o: o.noisy_sgd(0.05, eta=0.3, gamma=0.9, key=1)),
    ("add_noise_chain", lambda o: o.chain(o.add_noise(0.1, 0.5, key=7), o.adam(0.05))),
    ("fromage", lambda o: o.fromage(0.1)),
    ("optimistic_gradient_descent", lambda o: o.optimistic_gradient_descent(0.05, alpha=0.7, beta=0.4)),
    ("optimistic_gradient_descent_default", lambda o: o.optimistic_gradient_descent(0.05)),
    ("clip_by_block_rms", lambda o: o.chain(o.clip_by_block_rms(0.9), o.sgd(0.1))),
    ("sign_sgd", lambda o: o.sign_sgd(0.05)),
    ("signum", lambda o: o.signum(0.05)),
    ("adamaxw", lambda o: o.adamaxw(0.05, weight_decay=0.1)),
    ("lars", lambda o: o.lars(0.5, weight_decay=0.01)),
    ("lars_masks", lambda o: o.lars(0.5, weight_decay=0.01, weight_decay_mask={"w": True, "b": False},
                                    trust_ratio_mask={"w": False, "b": True}, nesterov=True)),
    ("adan", lambda o: o.adan(0.05)),
    ("adan_weight_decay", lambda o: o.adan(0.05, b1=0.9, eps_root=0.01, weight_decay=0.1)),
    ("adaptive_grad_clip", lambda o: o.chain(o.adaptive_grad_clip(0.1), o.sgd(0.1))),
    ("adaptive_grad_clip_axis", lambda o: o.chain(o.adaptive_grad_clip(0.05, axis=-1), o.sgd(0.1))),
    ("scale_by_param_block_norm", lambda o: o.chain(o.scale_by_param_block_norm(), o.sgd(0.1))),
    ("scale_by_param_block_rms", lambda o: o.chain(o.scale_by_param_block_rms(), o.sgd(0.1))),
    ("centralize", lambda o: o.chain(o.centralize(), o.sgd(0.1))),
    ("keep_params_nonnegative", lambda o: o.chain(o.sgd(0.5), o.keep_params_nonnegative())),
    ("normalize_by_update_norm", lambda o: o.chain(o.normalize_by_update_norm(0.3), o.scale(-1.0))),
    ("apply_every", lambda o: o.chain(o.apply_every(3), o.sgd(0.1))),
    ("zero_nans", lambda o: o.chain(o.zero_nans(), o.sgd(0.1))),
]


@pytest.mark.parametrize("name, make", OPT_CASES, ids=[c[0] for c in OPT_CASES])
def test_new_optimizers_follow_optax(name, make):
    _both_runs(make)


@pytest.mark.parametrize("make", [
    lambda o: o.polyak_sgd(max_learning_rate=0.5, f_min=0.1),
    lambda o: o.polyak_sgd(scaling=0.3, eps=0.01),
    lambda o: o.polyak_sgd(f_min=10.0, variant="sps+"),
    lambda o: o.chain(o.scale_by_polyak(max_learning_rate=0.2), o.scale(-1.0)),
], ids=["polyak_sgd", "polyak_scaling", "polyak_sps_plus", "scale_by_polyak"])
def test_polyak_follows_optax(make):
    _both_runs(make, extra=_value)


def test_new_optimizers_inside_jit():
    _both_runs(lambda o: o.noisy_sgd(0.05, key=3), jit=True)
    _both_runs(lambda o: o.optimistic_gradient_descent(0.05, alpha=0.7, beta=0.4), jit=True)
    _both_runs(lambda o: o.amsgrad(0.05), jit=True)
    _both_runs(lambda o: o.adam(0.05, nesterov=True), jit=True)
    _both_runs(lambda o: o.chain(o.apply_every(2), o.sgd(0.1)), jit=True)
    _both_runs(lambda o: o.polyak_sgd(max_learning_rate=0.5), extra=_value, jit=True)


def test_warmup_constant_schedule_matches_optax():
    optax, jax = _optax()
    ref, mine = optax.warmup_constant_schedule(0.01, 0.1, 4), qopt.warmup_constant_schedule(0.01, 0.1, 4)
    for c in range(8):
        _close(mine(c), ref(c), rtol=1e-12, msg=f"count {c}")
    assert qopt.schedules.warmup_constant_schedule is qopt.warmup_constant_schedule


def _mlp_init(m, seed=0):
    r = np.random.default_rng(seed)
    return {"layers": [{"w": m.asarray(r.normal(size=(3, 5)) * 0.5), "b": m.asarray(np.zeros(5))},
                       {"w": m.asarray(r.normal(size=(5, 2)) * 0.5), "b": m.asarray(r.normal(size=2) * 0.1)}]}


def _mlp_loss(m, nn, losses, params, x, y):
    h = x
    for i, layer in enumerate(params["layers"]):
        h = h @ layer["w"] + layer["b"]
        if i == 0:
            h = nn.relu(h) + 0.1 * m.tanh(h)
    return m.mean(losses.softmax_cross_entropy_with_integer_labels(h, y))


@pytest.mark.parametrize("make", [
    lambda o: o.amsgrad(0.02),
    lambda o: o.adamw(0.02, weight_decay=0.05, nesterov=True),
    lambda o: o.lars(0.5, weight_decay=1e-3),
    lambda o: o.fromage(0.05),
    lambda o: o.noisy_sgd(0.1, eta=0.001, key=11),
    lambda o: o.adan(0.02, weight_decay=0.01),
    lambda o: o.chain(o.clip_by_block_rms(0.05), o.optimistic_gradient_descent(0.1)),
], ids=["amsgrad", "nadamw", "lars", "fromage", "noisy_sgd", "adan", "clip_by_block_rms+ogd"])
def test_mlp_training_follows_optax(make):
    optax, jax = _optax()
    import jax.numpy as jnp
    r = np.random.default_rng(5)
    x, y = r.normal(size=(16, 3)), r.integers(0, 2, 16)
    qp, jp = _mlp_init(qb), _mlp_init(jnp)
    mine, ref = make(qopt), make(optax)
    qs, js = mine.init(qp), ref.init(jp)
    qx, qy, jx, jy = qb.asarray(x), qb.asarray(y), jnp.asarray(x), jnp.asarray(y)
    for k in range(6):
        qv, qg = qb.value_and_grad(lambda p: _mlp_loss(qb, qb.nn, qopt, p, qx, qy))(qp)
        jv, jg = jax.value_and_grad(lambda p: _mlp_loss(jnp, jax.nn, optax, p, jx, jy))(jp)
        _close(qv, jv, rtol=1e-11, msg=f"loss at step {k}")
        u, qs = mine.update(qg, qs, qp)
        qp = qopt.apply_updates(qp, u)
        u, js = ref.update(jg, js, jp)
        jp = optax.apply_updates(jp, u)
        for a, b in zip(qb.tree.leaves(qp), jax.tree_util.tree_leaves(jp)):
            _close(a, b, rtol=1e-10, atol=1e-13, msg=f"step {k}")


def test_rprop_is_the_textbook_rprop_and_optax_lags_one_step():
    # optax 0.2.8's scale_by_rprop emits the previous step's update (zeros first; 0 where the
    # current gradient flips sign); ours is the current one. Their states agree.
    optax, jax = _optax()
    import jax.numpy as jnp
    grads = [np.array([1.0, -1.0, 0.0, 2.0]), np.array([2.0, 1.0, 1.0, 0.0]), np.array([1.0, 1.0, -1.0, 3.0]),
             np.array([-1.0, 1.0, -1.0, 3.0]), np.array([-2.0, 0.5, 1.0, 1.0])]
    ref, mine = optax.rprop(0.1), qopt.rprop(0.1)
    js, qs = ref.init(jnp.zeros(4)), mine.init(qb.zeros(4))
    step, prev_update = np.full(4, 0.1), np.zeros(4)
    ours = []
    for k, g in enumerate(grads):
        ju, js = ref.update(jnp.asarray(g), js)
        qu, qs = mine.update(qb.asarray(g), qs)
        # Rprop written out: grow or shrink each step size by the sign agreement
        prod = g * prev_update
        step = np.where(prod > 0, np.minimum(step * 1.2, 50.0), np.where(prod < 0, np.maximum(step * 0.5, 1e-6), step))
        prev_update = np.where(prod < 0, 0.0, step * np.sign(g))
        _close(qu, -prev_update, msg=f"step {k}")
        _close(qs[0].step_sizes, js[0].step_sizes, msg=f"step sizes {k}")
        _close(qs[0].prev_updates, js[0].prev_updates, msg=f"prev updates {k}")
        if k > 0:
            _close(ju, np.where(prod < 0, 0.0, ours[-1]), msg=f"optax's lagged update {k}")
        ours.append(np.asarray(qu))


# ---- helpers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("x", [np.zeros(3), np.array([0.3, -0.4, 1.2]), np.array([[1e-3, 0.0], [0.0, 0.0]]),
                               np.array([[1.0, 2.0], [0.1, -0.2]])], ids=["zero", "vector", "tiny", "matrix"])
@pytest.mark.parametrize("kw", [{}, {"ord": 1}, {"axis": -1, "keepdims": True}, {"axis": 0}],
                         ids=["plain", "ord1", "keepdims", "axis0"])
def test_safe_norm_values_and_gradients_match_optax(x, kw):
    optax, jax = _optax()
    import jax.numpy as jnp
    got = qopt.safe_norm(qb.asarray(x), 0.5, **kw)
    want = optax.safe_norm(jnp.asarray(x), 0.5, **kw)
    _close(got, want)
    g = qb.grad(lambda t: qb.sum(qopt.safe_norm(t, 0.5, **kw) ** 2))(qb.asarray(x))
    gj = jax.grad(lambda t: jnp.sum(optax.safe_norm(t, 0.5, **kw) ** 2))(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g)))
    _close(g, gj)


def test_safe_rms_increment_moments_and_small_helpers_match_optax():
    optax, jax = _optax()
    import jax.numpy as jnp
    for x in (np.zeros(3), np.array([0.3, -0.4, 1.2])):
        _close(qopt.safe_root_mean_squares(qb.asarray(x), 0.2), optax.safe_root_mean_squares(jnp.asarray(x), 0.2))
        _close(qb.grad(lambda t: qopt.safe_root_mean_squares(t, 0.2))(qb.asarray(x)),
               jax.grad(lambda t: optax.safe_root_mean_squares(t, 0.2))(jnp.asarray(x)))
    top = np.iinfo(np.int32).max
    assert int(qopt.safe_increment(qb.asarray(5, dtype=qb.int32))) == 6
    assert int(qopt.safe_increment(qb.asarray(top, dtype=qb.int32))) == top == int(
        optax.safe_increment(jnp.asarray(top, dtype=jnp.int32)))
    m = {"a": np.array([1.0, -2.0]), "b": np.array([[0.5]])}
    g = {"a": np.array([0.3, -1.5]), "b": np.array([[2.0]])}
    qm, qg = qb.tree.map(qb.asarray, m), qb.tree.map(qb.asarray, g)
    jm, jg = jax.tree_util.tree_map(jnp.asarray, m), jax.tree_util.tree_map(jnp.asarray, g)
    pairs = [
        (qopt.bias_correction(qm, 0.9, 3), optax.bias_correction(jm, 0.9, 3)),
        (qopt.update_moment(qg, qm, 0.9, 2), optax.update_moment(jg, jm, 0.9, 2)),
        (qopt.update_infinity_moment(qg, qm, 0.9, 0.1), optax.update_infinity_moment(jg, jm, 0.9, 0.1)),
        (qopt.update_moment_per_elem_norm(qg, qm, 0.9, 3), optax.update_moment_per_elem_norm(jg, jm, 0.9, 3)),
        (qopt.update_moment_per_elem_norm(qg, qm, 0.9, 2), optax.update_moment_per_elem_norm(jg, jm, 0.9, 2)),
        (qopt.incremental_update(qg, qm, 0.3), optax.incremental_update(jg, jm, 0.3)),
    ]
    for i, (a, b) in enumerate(pairs):
        for x, y in zip(qb.tree.leaves(a), jax.tree_util.tree_leaves(b)):
            _close(x, y, msg=f"helper {i}")
    # skip functions for MultiSteps
    u = {"a": np.array([1.0, np.nan, np.inf]), "b": np.array([2.0])}
    skip, info = qopt.skip_not_finite(qb.tree.map(qb.asarray, u), 0, None)
    jskip, jinfo = optax.skip_not_finite(jax.tree_util.tree_map(jnp.asarray, u), 0, None)
    assert bool(skip) == bool(jskip) and int(info["num_not_finite"]) == int(jinfo["num_not_finite"]) == 2
    u = {"a": np.array([1.0, 2.0]), "b": np.array([2.0])}
    for bound in (8.0, 9.0, 10.0):
        skip, info = qopt.skip_large_updates(qb.tree.map(qb.asarray, u), 0, None, bound)
        jskip, jinfo = optax.skip_large_updates(jax.tree_util.tree_map(jnp.asarray, u), 0, None, bound)
        assert bool(skip) == bool(jskip), bound
        _close(info["norm_squared"], jinfo["norm_squared"])
    # MultiSteps with a should_skip_update_fn from these
    ms = qopt.MultiSteps(qopt.sgd(0.1), 2, should_skip_update_fn=functools.partial(qopt.skip_large_updates,
                                                                                     max_squared_norm=1.0))
    st = ms.init({"a": qb.zeros(2)})
    _, st = ms.update({"a": qb.asarray([3.0, 0.0])}, st, {"a": qb.zeros(2)})
    assert int(st.mini_step) == 0  # skipped


def test_scale_gradient_stateless_and_extra_args():
    optax, jax = _optax()
    import jax.numpy as jnp
    got = qb.grad(lambda x: qb.sum(qopt.scale_gradient({"a": x}, 0.25)["a"] ** 2))(qb.asarray([1.0, 2.0]))
    want = jax.grad(lambda x: jnp.sum(optax.scale_gradient({"a": x}, 0.25)["a"] ** 2))(jnp.asarray([1.0, 2.0]))
    _close(got, want)
    _close(qopt.scale_gradient(qb.asarray([1.0, 2.0]), 0.25), [1.0, 2.0])
    tx = qopt.stateless(lambda u, p: qb.tree.map(lambda g, q: g + q, u, p))
    u, s = tx.update({"a": qb.asarray([1.0])}, tx.init(None), {"a": qb.asarray([2.0])})
    assert float(u["a"][0]) == 3.0 and s == qopt.EmptyState()
    tx = qopt.stateless_with_tree_map(lambda g, p: 2 * g if p is None else g - p)
    assert float(tx.update({"a": qb.asarray([1.0])}, qopt.init_empty_state(None))[0]["a"][0]) == 2.0
    assert float(tx.update({"a": qb.asarray([1.0])}, qopt.EmptyState(), {"a": qb.asarray([3.0])})[0]["a"][0]) == -2.0
    wrapped = qopt.with_extra_args_support(qopt.scale(2.0))
    assert isinstance(wrapped, qopt.GradientTransformationExtraArgs)
    assert float(wrapped.update(qb.asarray(1.0), wrapped.init(None), None, value=3.0)[0]) == 2.0
    assert qopt.with_extra_args_support(wrapped) is wrapped
    for name in ("AddDecayedWeightsState", "ClipState", "ScaleState", "ClipByGlobalNormState",
                 "ScaleByTrustRatioState", "NonNegativeParamsState", "AdaptiveGradClipState"):
        assert getattr(qopt, name) is qopt.EmptyState and getattr(optax, name) is optax.EmptyState


def test_noise_key_forms_and_errors():
    optax, jax = _optax()
    p = {"w": qb.zeros(3)}
    g = {"w": qb.ones(3)}
    by_int = qopt.add_noise(0.1, 0.5, key=4)
    by_key = qopt.add_noise(0.1, 0.5, key=qb.random.PRNGKey(4))
    by_typed = qopt.add_noise(0.1, 0.5, key=qb.random.key(4))
    by_seed = qopt.add_noise(0.1, 0.5, seed=4)
    outs = [t.update(g, t.init(p))[0]["w"] for t in (by_int, by_key, by_typed, by_seed)]
    for o in outs[1:]:
        _close(o, outs[0])
    with pytest.warns(UserWarning, match="no key"):
        qopt.noisy_sgd(0.1).init(p)
    with pytest.raises(TypeError, match="key must be"):
        qopt.add_noise(0.1, 0.5, key="seven").init(p)
    opt = qopt.polyak_sgd()
    with pytest.raises(TypeError, match="value=loss"):
        opt.update(g, opt.init(p), p)
    with pytest.raises(ValueError, match="variant"):
        qopt.scale_by_polyak(variant="sps++")
    with pytest.raises(TypeError, match="schedule"):
        qopt.fromage(qopt.constant_schedule(0.1))
    with pytest.raises(ValueError, match="k must be"):
        qopt.apply_every(0)
    with pytest.raises(ValueError, match="needs the params"):
        qopt.keep_params_nonnegative().update(g, qopt.EmptyState())
    with pytest.raises(ValueError, match="axis="):
        qopt.adaptive_grad_clip(0.1).update({"w": qb.ones((1,) * 6)}, qopt.EmptyState(), {"w": qb.ones((1,) * 6)})


def test_adamw_keeps_optax_argument_order():
    # optax.adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask, *, nesterov)
    import inspect
    names = list(inspect.signature(qopt.adamw).parameters)
    assert names == ["learning_rate", "b1", "b2", "eps", "eps_root", "mu_dtype", "weight_decay", "mask", "nesterov"]
    tx = qopt.adam(0.1, mu_dtype=qb.float32)
    st = tx.init({"w": qb.zeros(2)})
    assert st[0].mu["w"].dtype == qb.float32
    _, st = tx.update({"w": qb.ones(2)}, st)
    assert st[0].mu["w"].dtype == qb.float32 and st[0].nu["w"].dtype == qb.float64


# ---- adafactor, and moments kept in another dtype ------------------------------------------------

def _run_both(tq, tj, params, steps=6):
    """Runs a Quabla and an optax transformation side by side on the same gradients; returns
    the largest relative parameter difference over the steps."""
    optax, jax = _optax()
    jnp = jax.numpy
    pq = {k: qb.asarray(v) for k, v in params.items()}
    pj = {k: jnp.asarray(v) for k, v in params.items()}
    sq, sj = tq.init(pq), tj.init(pj)
    worst = 0.0
    for step in range(steps):
        g = {k: np.sin(np.asarray(pq[k]) * (step + 1)) + 0.1 * np.asarray(pq[k]) for k in pq}
        uq, sq = tq.update({k: qb.asarray(v) for k, v in g.items()}, sq, pq)
        uj, sj = tj.update({k: jnp.asarray(v) for k, v in g.items()}, sj, pj)
        pq, pj = qb.optax.apply_updates(pq, uq), optax.apply_updates(pj, uj)
        for k in pj:
            want = np.asarray(pj[k])
            worst = max(worst, float(np.max(np.abs(np.asarray(pq[k]) - want)) / np.max(np.abs(want))))
    return worst


@pytest.mark.parametrize("kwargs", [dict(learning_rate=1e-2), dict(), dict(learning_rate=1e-2, momentum=0.9),
                                    dict(learning_rate=1e-2, weight_decay_rate=1e-3, decay_offset=2),
                                    dict(learning_rate=1e-2, factored=False, clipping_threshold=None,
                                         multiply_by_parameter_scale=False)])
def test_adafactor_matches_optax(kwargs):
    rng = np.random.default_rng(7)
    # a factored matrix (both axes >= 128), a factored 3-D leaf, and unfactored small leaves
    params = {"w": rng.normal(size=(130, 140)), "big3": rng.normal(size=(2, 129, 131)), "b": rng.normal(size=(140,)),
              "k": rng.normal(size=(3, 4, 5))}
    optax, _ = _optax()
    assert _run_both(qb.optax.adafactor(**kwargs), optax.adafactor(**kwargs), params) < 1e-13
    state = qb.optax.scale_by_factored_rms().init({k: qb.asarray(v) for k, v in params.items()})
    assert state.v_row["w"].shape == (130,) and state.v_col["w"].shape == (140,) and state.v["w"].shape == (1,)
    assert state.v["b"].shape == (140,) and state.v_row["big3"].shape == (2, 129)


def test_float32_moments_for_float64_updates_match_optax():
    rng = np.random.default_rng(8)
    params = {"w": rng.normal(size=(5, 3)), "b": rng.normal(size=(3,))}
    optax, jax = _optax()
    jnp = jax.numpy
    assert _run_both(qb.optax.adam(1e-2, mu_dtype=qb.float32), optax.adam(1e-2, mu_dtype=jnp.float32), params) < 1e-13
    assert _run_both(qb.optax.ema(0.9, debias=False, accumulator_dtype=qb.float32),
                     optax.ema(0.9, debias=False, accumulator_dtype=jnp.float32), params) < 1e-13
