"""quabla.example_libraries (optimizers and stax) against jax.example_libraries: every
optimizer step for step (eagerly, under qb.jit and in a fori_loop), the schedules, the
utilities and state (un)packing; stax's layers and combinators for initial parameters
(structure, shapes and values for the same key) and outputs; and one jitted MLP fit whose
final loss equals JAX's."""
import numpy as np
import pytest

import quabla as qb
from quabla.example_libraries import optimizers, stax
from conftest import jax_x64_mode

jax = pytest.importorskip("jax")
pytest.importorskip("jax.example_libraries")
import jax.numpy as jnp  # noqa: E402
from jax.example_libraries import optimizers as jopt, stax as jstax  # noqa: E402


@pytest.fixture
def x64_on():
    """Both libraries in x64 mode (float64 by default) for the test, restored after."""
    with jax_x64_mode():
        yield


def to_np(tree):
    """A pytree of either library's arrays as the same nesting of Python containers with
    NumPy leaves (containers keep their type, so list vs tuple differences show)."""
    if isinstance(tree, dict):
        return {k: to_np(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_np(v) for v in tree)
    if isinstance(tree, (int, float)):
        return tree
    return np.asarray(tree)


def assert_trees_close(got, expected, rtol=1e-12, atol=0.0, path="tree"):
    """Same containers (types, keys, lengths), same leaf shapes and dtypes, values to rtol."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(expected), f"{path}: keys {got} != {expected}"
        for k in expected:
            assert_trees_close(got[k], expected[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected), f"{path}: {type(got).__name__} != {type(expected).__name__}"
        assert len(got) == len(expected), f"{path}: length {len(got)} != {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_trees_close(g, e, rtol, atol, f"{path}[{k}]")
    elif isinstance(expected, (int, float)):
        assert got == expected, f"{path}: {got} != {expected}"
    else:
        assert got.shape == expected.shape, f"{path}: shape {got.shape} != {expected.shape}"
        assert got.dtype == expected.dtype, f"{path}: dtype {got.dtype} != {expected.dtype}"
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=path)


# ---------------------------------------------------------------------------------------------
# Optimizers
# ---------------------------------------------------------------------------------------------

# A small parameter pytree (a dict with a nested list, a 0-d leaf and a 3-d leaf) and the
# quadratic loss sum(0.5 * A * (x - T)**2) whose gradient A * (x - T) drives the steps.
_rs = np.random.RandomState(0)
P0 = {"w": _rs.randn(3, 2), "b": _rs.randn(2), "c": np.array(0.7), "nested": [_rs.randn(2, 2, 2)]}
A = {"w": _rs.uniform(0.5, 2.0, (3, 2)), "b": _rs.uniform(0.5, 2.0, 2), "c": np.array(1.3),
     "nested": [_rs.uniform(0.5, 2.0, (2, 2, 2))]}
T = {"w": _rs.randn(3, 2), "b": _rs.randn(2), "c": np.array(-0.4), "nested": [_rs.randn(2, 2, 2)]}
# Gradients at the start contain an exact zero for one entry of w (so adagrad / sm3 meet
# their "0 where the accumulator is 0" branch on the first step).
T["w"][0, 0] = P0["w"][0, 0]


def quad_grad(params_np):
    """The quadratic loss's gradient, in NumPy, for a NumPy parameter tree."""
    return {"w": A["w"] * (params_np["w"] - T["w"]), "b": A["b"] * (params_np["b"] - T["b"]),
            "c": A["c"] * (params_np["c"] - T["c"]),
            "nested": [A["nested"][0] * (params_np["nested"][0] - T["nested"][0])]}


def tree_map_np(f, tree):
    if isinstance(tree, dict):
        return {k: tree_map_np(f, v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [tree_map_np(f, v) for v in tree]
    return f(tree)


# (name, positional args, keyword args); schedules are built per library from their names.
OPTIMIZER_CASES = [
    ("sgd", (0.1,), {}),
    ("sgd", (("exponential_decay", 0.2, 5, 0.5),), {}),
    ("momentum", (0.1, 0.9), {}),
    ("nesterov", (0.05, 0.9), {}),
    ("adagrad", (0.3,), {}),
    ("adagrad", (0.3,), {"momentum": 0.5}),
    ("rmsprop", (0.01,), {}),
    ("rmsprop", (0.02,), {"gamma": 0.8, "eps": 1e-6}),
    ("rmsprop_momentum", (0.01,), {}),
    ("rmsprop_momentum", (("inverse_time_decay", 0.02, 3, 0.5, True),), {"momentum": 0.7}),
    ("adam", (0.05,), {}),
    ("adam", (("polynomial_decay", 0.1, 6, 0.01, 2.0),), {"b1": 0.8, "b2": 0.99, "eps": 1e-7}),
    ("adamax", (0.05,), {}),
    ("adamax", (("piecewise_constant", [2, 5], [0.1, 0.05, 0.01]),), {"b2": 0.9}),
    ("sm3", (0.1,), {}),
    ("sm3", (("exponential_decay", 0.3, 4, 0.3),), {"momentum": 0.5}),
]
CASE_IDS = [f"{name}-{k}" for k, (name, _, _) in enumerate(OPTIMIZER_CASES)]


def build(lib, name, args, kwargs):
    """lib.name(*args, **kwargs) with schedule specs (tuples) turned into lib's schedules."""
    args = [getattr(lib, a[0])(*a[1:]) if isinstance(a, tuple) else a for a in args]
    return getattr(lib, name)(*args, **kwargs)


def run_jax(name, args, kwargs, steps=10):
    """The parameter and state trajectories of jax.example_libraries' optimizer."""
    init, update, get_params = build(jopt, name, args, kwargs)
    state = init(tree_map_np(jnp.asarray, P0))
    params_seq, state_seq = [], []
    for i in range(steps):
        g = tree_map_np(jnp.asarray, quad_grad(to_np(get_params(state))))
        state = update(i, g, state)
        params_seq.append(to_np(get_params(state)))
        state_seq.append(to_np(list(state.packed_state)))
    return params_seq, state_seq


def check_quabla_against(expected, name, args, kwargs, jit, rtol=1e-12):
    expected_params, expected_states = expected
    init, update, get_params = build(optimizers, name, args, kwargs)
    if jit:
        update = qb.jit(update)
    state = init(tree_map_np(qb.asarray, P0))
    assert isinstance(state, optimizers.OptimizerState)
    for i in range(len(expected_params)):
        g = tree_map_np(qb.asarray, quad_grad(to_np(get_params(state))))
        # Under jit the step is an array (a traced integer); eagerly a Python int.
        state = update(qb.asarray(i) if jit else i, g, state)
        assert isinstance(state, optimizers.OptimizerState)
        assert_trees_close(to_np(get_params(state)), expected_params[i], rtol, path=f"params at step {i}")
        assert_trees_close(to_np(list(state.packed_state)), expected_states[i], rtol,
                           path=f"packed_state at step {i}")


@pytest.mark.parametrize("case", OPTIMIZER_CASES, ids=CASE_IDS)
def test_optimizer_steps_match_jax(case, x64_on):
    name, args, kwargs = case
    expected = run_jax(name, args, kwargs)
    check_quabla_against(expected, name, args, kwargs, jit=False)


@pytest.mark.parametrize("case", OPTIMIZER_CASES, ids=CASE_IDS)
def test_optimizer_steps_match_jax_under_jit(case, x64_on):
    name, args, kwargs = case
    expected = run_jax(name, args, kwargs)
    check_quabla_against(expected, name, args, kwargs, jit=True)


@pytest.mark.parametrize("case", [OPTIMIZER_CASES[k] for k in (1, 9, 11, 13)],
                         ids=[CASE_IDS[k] for k in (1, 9, 11, 13)])
def test_optimizer_in_fori_loop_matches_jax(case, x64_on):
    """The whole loop traced: the step index reaches the schedules as a traced integer."""
    name, args, kwargs = case
    jinit, jupdate, jget = build(jopt, name, args, kwargs)
    qinit, qupdate, qget = build(optimizers, name, args, kwargs)

    def jbody(i, s):
        x = jget(s)
        g = jax.tree.map(lambda a, x, t: a * (x - t), tree_map_np(jnp.asarray, A), x, tree_map_np(jnp.asarray, T))
        return jupdate(i, g, s)

    def qbody(i, s):
        x = qget(s)
        g = qb.tree_util.tree_map(lambda a, x, t: a * (x - t), tree_map_np(qb.asarray, A), x,
                                  tree_map_np(qb.asarray, T))
        return qupdate(i, g, s)

    jfinal = jax.lax.fori_loop(0, 10, jbody, jinit(tree_map_np(jnp.asarray, P0)))
    qfinal = qb.jit(lambda s: qb.fori_loop(0, 10, qbody, s))(qinit(tree_map_np(qb.asarray, P0)))
    assert_trees_close(to_np(qget(qfinal)), to_np(jget(jfinal)), rtol=1e-12)


def test_jitted_update_with_python_int_steps(x64_on):
    """A Python int step is a static argument of qb.jit (one program per value); the steps
    still match JAX's."""
    expected = run_jax("adam", (0.05,), {}, steps=4)
    init, update, get_params = optimizers.adam(0.05)
    update = qb.jit(update)
    state = init(tree_map_np(qb.asarray, P0))
    for i in range(4):
        state = update(i, tree_map_np(qb.asarray, quad_grad(to_np(get_params(state)))), state)
        assert_trees_close(to_np(get_params(state)), expected[0][i], 1e-12)


def test_optimizer_float32(x64):
    """In float32 (x64 off) and float64 (x64 on) alike the steps keep the parameters' dtype
    and follow JAX's."""
    dt_np = np.float64 if x64 else np.float32
    p0 = {"w": P0["w"].astype(dt_np), "b": P0["b"].astype(dt_np)}

    def grads(p):
        return {"w": (A["w"] * (p["w"] - T["w"])).astype(dt_np), "b": (A["b"] * (p["b"] - T["b"])).astype(dt_np)}

    for name, args in [("adam", (0.05,)), ("sm3", (0.1,)), ("adagrad", (0.2,))]:
        jinit, jupdate, jget = getattr(jopt, name)(*args)
        qinit, qupdate, qget = getattr(optimizers, name)(*args)
        js = jinit(tree_map_np(jnp.asarray, p0))
        qs = qinit(tree_map_np(qb.asarray, p0))
        for i in range(5):
            js = jupdate(i, tree_map_np(jnp.asarray, grads(to_np(jget(js)))), js)
            qs = qupdate(i, tree_map_np(qb.asarray, grads(to_np(qget(qs)))), qs)
        assert_trees_close(to_np(qget(qs)), to_np(jget(js)), rtol=1e-12 if x64 else 2e-6)


def test_state_is_a_pytree_with_jax_layout(x64_on):
    for name in ["sgd", "momentum", "adam", "sm3"]:
        args = (0.1, 0.9) if name == "momentum" else (0.1,)
        qs = getattr(optimizers, name)(*args)[0](tree_map_np(qb.asarray, P0))
        js = getattr(jopt, name)(*args)[0](tree_map_np(jnp.asarray, P0))
        # Same packing: one flat list of state leaves per parameter leaf.
        assert type(qs.packed_state) is tuple and len(qs.packed_state) == len(js.packed_state)
        for qflat, jflat in zip(qs.packed_state, js.packed_state):
            assert len(qflat) == len(jflat)
        assert_trees_close(to_np(list(qs.packed_state)), to_np(list(js.packed_state)), rtol=0)
        # The tree definitions are static: only the packed arrays are leaves.
        leaves, treedef = qb.tree_util.tree_flatten(qs)
        assert len(leaves) == len(jax.tree_util.tree_leaves(js))
        assert isinstance(qb.tree_util.tree_unflatten(treedef, leaves), optimizers.OptimizerState)


def test_unpack_and_pack_optimizer_state(x64_on):
    init, update, get_params = optimizers.momentum(0.1, 0.9)
    state = update(0, tree_map_np(qb.asarray, quad_grad(P0)), init(tree_map_np(qb.asarray, P0)))
    marked = optimizers.unpack_optimizer_state(state)
    assert sorted(marked) == ["b", "c", "nested", "w"]
    assert isinstance(marked["nested"][0], optimizers.JoinPoint)
    x, velocity = marked["w"].subtree
    np.testing.assert_array_equal(np.asarray(x), np.asarray(get_params(state)["w"]))
    # JAX's unpacked state has the same values at the same places.
    jinit, jupdate, _ = jopt.momentum(0.1, 0.9)
    jmarked = jopt.unpack_optimizer_state(jupdate(0, tree_map_np(jnp.asarray, quad_grad(P0)),
                                                  jinit(tree_map_np(jnp.asarray, P0))))
    for key in ["w", "b", "c"]:
        assert_trees_close(to_np(marked[key].subtree), to_np(jmarked[key].subtree), rtol=1e-15)
    # pack(unpack(state)) is the state: same structure, same arrays, usable for more steps.
    packed = optimizers.pack_optimizer_state(marked)
    assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
    assert_trees_close(to_np(list(packed.packed_state)), to_np(list(state.packed_state)), rtol=0)
    after = update(1, tree_map_np(qb.asarray, quad_grad(P0)), packed)
    assert_trees_close(to_np(get_params(after)), to_np(get_params(update(1, tree_map_np(
        qb.asarray, quad_grad(P0)), state))), rtol=0)
    with pytest.raises(TypeError, match="JoinPoint"):
        optimizers.pack_optimizer_state({"w": qb.ones(2)})


def test_optimizer_errors():
    init, update, get_params = optimizers.adam(0.1)
    state = init({"a": qb.ones(2), "b": qb.ones(3)})
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(0, {"a": qb.ones(2)}, state)
    with pytest.raises(TypeError, match="OptimizerState"):
        get_params({"a": qb.ones(2)})
    with pytest.raises(TypeError, match="step size must be a scalar or a schedule"):
        optimizers.sgd([0.1, 0.2])
    with pytest.raises(TypeError, match="step size"):
        optimizers.adam("0.1")
    with pytest.raises(TypeError, match="mass must be a scalar"):
        optimizers.momentum(0.1, "heavy")
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="sequences"):
        optimizers.piecewise_constant(1, [0.1, 0.2])
    with pytest.raises(ValueError, match="decay_steps"):
        optimizers.exponential_decay(0.1, 0, 0.5)


def test_custom_optimizer_via_decorator(x64_on):
    """The optimizer decorator lifts per-array functions to pytrees, as JAX's does."""
    def make(lib, np_):
        @lib.optimizer
        def signsgd(step_size):
            def init(x0):
                return (x0,)

            def update(i, g, state):
                return (state[0] - step_size * np_.sign(g),)

            def get_params(state):
                return state[0]
            return init, update, get_params
        return signsgd(0.1)

    qinit, qupdate, qget = make(optimizers, qb)
    jinit, jupdate, jget = make(jopt, jnp)
    qs, js = qinit(tree_map_np(qb.asarray, P0)), jinit(tree_map_np(jnp.asarray, P0))
    for i in range(3):
        qs = qupdate(i, tree_map_np(qb.asarray, quad_grad(to_np(qget(qs)))), qs)
        js = jupdate(i, tree_map_np(jnp.asarray, quad_grad(to_np(jget(js)))), js)
    assert_trees_close(to_np(qget(qs)), to_np(jget(js)), rtol=1e-15)

    # An update that changes its state's structure is refused, with both structures named.
    @optimizers.optimizer
    def broken(step_size):
        return (lambda x0: (x0, x0)), (lambda i, g, s: (s[0],)), (lambda s: s[0])
    binit, bupdate, _ = broken(0.1)
    with pytest.raises(TypeError, match="output structure"):
        bupdate(0, qb.ones(2), binit(qb.ones(2)))


SCHEDULES = [
    ("constant", (0.3,)),
    ("exponential_decay", (0.5, 7, 0.3)),
    ("inverse_time_decay", (0.5, 4, 0.7)),
    ("inverse_time_decay", (0.5, 4, 0.7, True)),
    ("polynomial_decay", (0.5, 10, 0.05)),
    ("polynomial_decay", (0.5, 10, 0.05, 3.0)),
    ("piecewise_constant", ([3, 8, 12], [1.0, 0.5, 0.25, 0.125])),
]


@pytest.mark.parametrize("spec", SCHEDULES, ids=[f"{n}-{k}" for k, (n, _) in enumerate(SCHEDULES)])
def test_schedules_match_jax(spec, x64_on):
    name, args = spec
    qs, js = getattr(optimizers, name)(*args), getattr(jopt, name)(*args)
    q_jit = qb.jit(lambda i: qb.asarray(qs(i)))
    for i in range(0, 16):
        expected = float(js(i))
        assert float(qs(i)) == pytest.approx(expected, rel=1e-14), f"{name} at step {i}"
        assert float(qs(qb.asarray(i))) == pytest.approx(expected, rel=1e-14), f"{name} at array step {i}"
        assert float(q_jit(qb.asarray(i))) == pytest.approx(expected, rel=1e-14), f"{name} traced at step {i}"


def test_make_schedule():
    sched = optimizers.make_schedule(0.25)
    assert sched(0) == 0.25 and sched(100) == 0.25
    decay = optimizers.exponential_decay(1.0, 2, 0.5)
    assert optimizers.make_schedule(decay) is decay
    assert float(optimizers.make_schedule(qb.asarray(0.5))(3)) == 0.5
    with pytest.raises(TypeError):
        optimizers.make_schedule(qb.ones(3))


def test_l2_norm_and_clip_grads(x64_on):
    qtree, jtree = tree_map_np(qb.asarray, P0), tree_map_np(jnp.asarray, P0)
    assert float(optimizers.l2_norm(qtree)) == pytest.approx(float(jopt.l2_norm(jtree)), rel=1e-14)
    for max_norm in [0.5, 2.0, 100.0]:
        assert_trees_close(to_np(optimizers.clip_grads(qtree, max_norm)), to_np(jopt.clip_grads(jtree, max_norm)),
                           rtol=1e-14)
    clipped = optimizers.clip_grads(qtree, 0.5)
    assert float(optimizers.l2_norm(clipped)) == pytest.approx(0.5, rel=1e-14)


# ---------------------------------------------------------------------------------------------
# stax
# ---------------------------------------------------------------------------------------------

def init_both(net_name_builder, input_shape, seed=0, key="key"):
    """(qb (out_shape, params), jax (out_shape, params), qb apply, jax apply) for a network
    built by builder(lib) from each library, initialized from the same seed."""
    q_init, q_apply = net_name_builder(stax)
    j_init, j_apply = net_name_builder(jstax)
    q_out = q_init(getattr(qb.random, key)(seed), input_shape)
    j_out = j_init(getattr(jax.random, key)(seed), input_shape)
    return q_out, j_out, q_apply, j_apply


# Quabla's uniform bits, split and bernoulli equal JAX's exactly, so layers whose
# initializers draw uniform numbers (glorot_uniform, uniform) must equal JAX's bit for bit.
# The default initializers (glorot_normal, normal) go through an inverse error function
# whose last bits differ from XLA's: up to a few float32 ulps and ~1e-14 relative in float64.
NORMAL_RTOL = {True: 5e-14, False: 1e-6}
NORMAL_ATOL = {True: 1e-17, False: 1e-9}


def check_init(q_out, j_out, float64, exact):
    q_shape, q_params = q_out
    j_shape, j_params = j_out
    assert to_np(q_shape) == to_np(j_shape)
    if exact:
        assert_trees_close(to_np(q_params), to_np(j_params), rtol=0, atol=0)
    else:
        assert_trees_close(to_np(q_params), to_np(j_params), rtol=NORMAL_RTOL[float64], atol=NORMAL_ATOL[float64])


def mlp(lib):
    return lib.serial(lib.Dense(16), lib.Tanh, lib.Dense(8), lib.Relu, lib.Dense(6), lib.Sigmoid, lib.Dense(5),
                      lib.Softplus, lib.Dense(4), lib.LogSoftmax)


def activations(lib):
    return lib.serial(lib.Dense(6), lib.Elu, lib.Dense(6), lib.LeakyRelu, lib.Dense(6), lib.Selu, lib.Dense(6),
                      lib.Gelu, lib.Dense(6), lib.Identity, lib.Exp, lib.Dense(3), lib.Softmax)


def fan_sum(lib):
    return lib.serial(lib.Dense(5), lib.FanOut(2), lib.parallel(lib.Dense(4), lib.serial(lib.Dense(4), lib.Tanh)),
                      lib.FanInSum, lib.Dense(2))


def fan_concat(lib):
    return lib.serial(lib.FanOut(3), lib.parallel(lib.Dense(2), lib.Identity, lib.serial(lib.Dense(3), lib.Relu)),
                      lib.FanInConcat(), lib.Dense(2))


def flatten_net(lib):
    return lib.serial(lib.Flatten, lib.Dense(3), lib.LogSoftmax)


def conv_net(lib):
    return lib.serial(lib.Conv(4, (3, 3), padding="SAME"), lib.Relu, lib.MaxPool((2, 2), strides=(2, 2)),
                      lib.Conv(3, (2, 2), strides=(1, 2)), lib.Tanh, lib.AvgPool((2, 2), padding="SAME"),
                      lib.SumPool((1, 2)), lib.BatchNorm(), lib.Flatten, lib.Dense(2))


def shape_dep(lib):
    return lib.serial(lib.shape_dependent(lambda shape: lib.Dense(shape[-1] * 2)), lib.Tanh)


def inits(lib):
    """jax.nn.initializers or qb.nn.initializers, to go with lib."""
    return jax.nn.initializers if lib is jstax else qb.nn.initializers


def mlp_uniform(lib):
    init = inits(lib)
    return lib.serial(lib.Dense(16, W_init=init.glorot_uniform(), b_init=init.uniform(0.1)), lib.Tanh,
                      lib.Dense(8, W_init=init.uniform(), b_init=init.uniform()), lib.Relu,
                      lib.Dense(3, W_init=init.glorot_uniform(), b_init=init.zeros), lib.LogSoftmax)


def fan_uniform(lib):
    init = inits(lib)

    def dense(n):
        return lib.Dense(n, W_init=init.glorot_uniform(), b_init=init.uniform(0.5))
    return lib.serial(dense(5), lib.FanOut(3), lib.parallel(dense(4), lib.serial(dense(4), lib.Tanh), dense(4)),
                      lib.FanInSum, lib.FanOut(2), lib.parallel(dense(2), dense(3)), lib.FanInConcat(), dense(2))


def conv_uniform(lib):
    init = inits(lib)
    w, b = init.glorot_uniform(2, 3), init.uniform(0.2)
    return lib.serial(lib.Conv(4, (3, 3), padding="SAME", W_init=w, b_init=b), lib.Relu,
                      lib.Conv(3, (2, 2), strides=(2, 2), W_init=w, b_init=b), lib.Flatten,
                      lib.Dense(2, W_init=init.glorot_uniform(), b_init=b))


def conv_transpose(lib):
    init = inits(lib)
    w, b = init.glorot_uniform(2, 3), init.uniform(0.2)
    return lib.serial(lib.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME", W_init=w, b_init=b), lib.Relu,
                      lib.ConvTranspose(2, (2, 2), W_init=w, b_init=b), lib.BatchNorm(center=False),
                      lib.BatchNorm(axis=(0, 1, 2), scale=False), lib.BatchNorm(axis=(0, 1), center=False, scale=False))


def conv1d_transpose(lib):
    init = inits(lib)
    return lib.serial(lib.Conv1DTranspose(4, (3,), strides=(2,), W_init=init.glorot_uniform(1, 2),
                                          b_init=init.uniform()), lib.Tanh,
                      lib.GeneralConv(("NHC", "HIO", "NHC"), 2, (2,), W_init=init.glorot_uniform(1, 2),
                                      b_init=init.uniform()),
                      lib.MaxPool((2,), padding="SAME"), lib.AvgPool((3,), strides=(2,), padding="SAME"))


def custom_init(lib):
    init = inits(lib)
    return lib.serial(lib.Dense(4, W_init=lib.randn(0.5), b_init=init.zeros), lib.Dense(3, W_init=lib.glorot(),
                                                                                   b_init=lib.randn()))


# (builder, init input shape, apply input shape, whether the initial parameters are exact).
NETWORKS = [(mlp, (-1, 7), (9, 7), False), (activations, (4, 3), (4, 3), False), (fan_sum, (-1, 3), (5, 3), False),
            (fan_concat, (-1, 4), (6, 4), False), (flatten_net, (-1, 2, 3, 2), (4, 2, 3, 2), False),
            (conv_net, (2, 8, 8, 3), (2, 8, 8, 3), False), (shape_dep, (-1, 3), (2, 3), False),
            (custom_init, (-1, 5), (3, 5), False), (mlp_uniform, (-1, 7), (5, 7), True),
            (fan_uniform, (-1, 3), (4, 3), True), (conv_uniform, (2, 6, 6, 2), (2, 6, 6, 2), True),
            (conv_transpose, (2, 4, 4, 2), (2, 4, 4, 2), True), (conv1d_transpose, (3, 5, 2), (3, 5, 2), True)]
NET_IDS = [n[0].__name__ for n in NETWORKS]


@pytest.mark.parametrize("net", NETWORKS, ids=NET_IDS)
@pytest.mark.parametrize("key", ["key", "PRNGKey"])
def test_stax_init_and_apply_match_jax_float64(net, key, x64_on):
    builder, init_shape, x_shape, exact = net
    q_out, j_out, q_apply, j_apply = init_both(builder, init_shape, seed=3, key=key)
    check_init(q_out, j_out, float64=True, exact=exact)
    x = np.random.RandomState(1).randn(*x_shape)
    got = q_apply(q_out[1], qb.asarray(x))
    expected = j_apply(j_out[1], jnp.asarray(x))
    assert_trees_close(to_np(got), to_np(expected), rtol=1e-12, atol=1e-14)
    # Under qb.jit too, with the parameters as an argument.
    got_jit = qb.jit(q_apply)(q_out[1], qb.asarray(x))
    assert_trees_close(to_np(got_jit), to_np(expected), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("net", NETWORKS, ids=NET_IDS)
def test_stax_init_and_apply_match_jax_float32(net):
    """With x64 off in both libraries the parameters are float32 and equal JAX's (bit for bit
    where the initializers draw uniform numbers)."""
    jax_before, qb_before = jax.config.jax_enable_x64, qb.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    qb.config.update("jax_enable_x64", False)
    try:
        builder, init_shape, x_shape, exact = net
        q_out, j_out, q_apply, j_apply = init_both(builder, init_shape, seed=11)
        check_init(q_out, j_out, float64=False, exact=exact)
        for leaf in qb.tree_util.tree_leaves(q_out[1]):
            assert leaf.dtype == qb.float32
        x = np.random.RandomState(2).randn(*x_shape).astype(np.float32)
        got = q_apply(q_out[1], qb.asarray(x))
        expected = j_apply(j_out[1], jnp.asarray(x))
        assert_trees_close(to_np(got), to_np(expected), rtol=2e-5, atol=2e-6)
    finally:
        jax.config.update("jax_enable_x64", jax_before)
        qb.config.update("jax_enable_x64", qb_before)


def test_package_layout():
    """Importable both ways; the names older code uses are there."""
    import quabla.example_libraries as ex
    assert qb.example_libraries is ex and ex.optimizers is optimizers and ex.stax is stax
    for name in ["sgd", "momentum", "nesterov", "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3",
                 "constant", "exponential_decay", "inverse_time_decay", "polynomial_decay", "piecewise_constant",
                 "make_schedule", "l2_norm", "clip_grads", "optimizer", "OptimizerState", "unpack_optimizer_state",
                 "pack_optimizer_state", "JoinPoint", "Optimizer"]:
        assert hasattr(optimizers, name) and hasattr(jopt, name), name
    for name in ["Dense", "Conv", "GeneralConv", "ConvTranspose", "Conv1DTranspose", "BatchNorm", "Relu", "Tanh",
                 "Sigmoid", "Softplus", "Elu", "LeakyRelu", "Selu", "Gelu", "Exp", "LogSoftmax", "Softmax",
                 "Identity", "Flatten", "FanOut", "FanInSum", "FanInConcat", "Dropout", "MaxPool", "SumPool",
                 "AvgPool", "serial", "parallel", "shape_dependent", "elementwise", "glorot", "randn", "logsoftmax"]:
        assert hasattr(stax, name) and hasattr(jstax, name), name
    init_fn, apply_fn = stax.serial(stax.Dense(64), stax.Tanh, stax.Dense(1))
    out_shape, params = init_fn(qb.random.PRNGKey(0), (-1, 2))
    assert out_shape == (-1, 1) and apply_fn(params, qb.ones((5, 2))).shape == (5, 1)


def test_initializer_aliases(x64_on):
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
    for dtype in [qb.float64, qb.float32]:
        jdtype = jnp.float64 if dtype == qb.float64 else jnp.float32
        float64 = dtype == qb.float64
        q = stax.glorot()(qb.random.key(5), (4, 3), dtype)
        j = jstax.glorot()(jax.random.key(5), (4, 3), jdtype)
        assert q.dtype == dtype
        np.testing.assert_allclose(np.asarray(q), np.asarray(j), rtol=NORMAL_RTOL[float64], atol=NORMAL_ATOL[float64])
        q = stax.randn(0.1)(qb.random.key(6), (7,), dtype)
        j = jstax.randn(0.1)(jax.random.key(6), (7,), jdtype)
        np.testing.assert_allclose(np.asarray(q), np.asarray(j), rtol=NORMAL_RTOL[float64], atol=NORMAL_ATOL[float64])
        assert stax.glorot(1, 0)(qb.random.key(7), (3, 5), dtype).shape == (3, 5)


class _Recorder:
    """An initializer that records the key data and shape it is called with (returning
    zeros), to compare which keys each library's stax hands to which parameter."""

    def __init__(self, key_data, zeros):
        self.calls, self._key_data, self._zeros = [], key_data, zeros

    def __call__(self, key, shape, dtype=None):
        self.calls.append((np.asarray(self._key_data(key)).tolist(), tuple(shape)))
        return self._zeros(tuple(shape))


@pytest.mark.parametrize("key", ["key", "PRNGKey"])
def test_stax_hands_out_jax_keys(key, x64_on):
    """serial / parallel / Dense / Conv split the key exactly as jax's stax: every
    initializer gets the same key for the same parameter."""
    def net(lib, rec):
        dense = lambda n: lib.Dense(n, W_init=rec, b_init=rec)  # noqa: E731
        return lib.serial(dense(3), lib.Tanh, lib.FanOut(2), lib.parallel(dense(2), lib.serial(dense(2), dense(2))),
                          lib.FanInSum, lib.shape_dependent(lambda s: dense(s[-1])),
                          lib.BatchNorm(axis=(0,), beta_init=rec, gamma_init=rec), dense(1))

    q_rec = _Recorder(lambda k: qb.random.key_data(k) if isinstance(k, qb.random.Key) else k, qb.zeros)
    j_rec = _Recorder(lambda k: jax.random.key_data(k) if jnp.issubdtype(k.dtype, jax.dtypes.prng_key) else k,
                      jnp.zeros)
    net(stax, q_rec)[0](getattr(qb.random, key)(42), (-1, 4))
    net(jstax, j_rec)[0](getattr(jax.random, key)(42), (-1, 4))
    assert len(q_rec.calls) == len(j_rec.calls) == 14  # 6 Dense layers (W, b) and BatchNorm (beta, gamma)
    assert q_rec.calls == j_rec.calls

    def conv(lib, rec):
        return lib.serial(lib.Conv(2, (3, 3), W_init=rec, b_init=rec), lib.GeneralConv(
            ("NCHW", "OIHW", "NCHW"), 3, (2, 2), W_init=rec, b_init=rec))
    q_rec.calls, j_rec.calls = [], []
    q_shape, _ = conv(stax, q_rec)[0](getattr(qb.random, key)(1), (2, 7, 7, 3))
    j_shape, _ = conv(jstax, j_rec)[0](getattr(jax.random, key)(1), (2, 7, 7, 3))
    assert tuple(q_shape) == tuple(j_shape) and q_rec.calls == j_rec.calls


def test_batchnorm_integer_axis(x64_on):
    x = np.random.RandomState(5).randn(6, 3)
    for kwargs in [{"axis": 0}, {"axis": 0, "center": False}, {"axis": (0,), "scale": False}]:
        (q_shape, q_params), (j_shape, j_params), q_apply, j_apply = init_both(
            lambda lib: lib.BatchNorm(**kwargs), (-1, 3))
        assert q_shape == j_shape
        assert_trees_close(to_np(q_params), to_np(j_params), rtol=0)
        assert_trees_close(to_np(q_apply(q_params, qb.asarray(x))), to_np(j_apply(j_params, jnp.asarray(x))),
                           rtol=1e-12, atol=1e-14)


def dropout_net(lib, mode):
    return lib.serial(lib.Dense(8), lib.Dropout(0.7, mode=mode), lib.Relu, lib.Dense(3))


@pytest.mark.parametrize("mode", ["train", "test"])
def test_dropout_matches_jax(mode, x64_on):
    q_out, j_out, q_apply, j_apply = init_both(lambda lib: dropout_net(lib, mode), (-1, 4), seed=2)
    check_init(q_out, j_out, float64=True, exact=False)
    x = np.random.RandomState(3).randn(10, 4)
    got = q_apply(q_out[1], qb.asarray(x), rng=qb.random.key(9))
    expected = j_apply(j_out[1], jnp.asarray(x), rng=jax.random.key(9))
    assert_trees_close(to_np(got), to_np(expected), rtol=1e-12, atol=1e-14)


def test_dropout_layer_alone(x64_on):
    init, apply = stax.Dropout(0.6)
    _, jdrop = jstax.Dropout(0.6)
    x = np.random.RandomState(4).randn(50, 8)
    got = np.asarray(apply((), qb.asarray(x), rng=qb.random.key(1)))
    expected = np.asarray(jdrop((), jnp.asarray(x), rng=jax.random.key(1)))
    np.testing.assert_array_equal(got, expected)
    # Kept elements are scaled by 1/rate (rate is the keep probability, as in jax's stax).
    kept = got != 0
    np.testing.assert_allclose(got[kept], x[kept] / 0.6, rtol=1e-15)
    assert 0.4 < kept.mean() < 0.8
    # Another key drops other elements; test mode passes inputs through.
    assert not np.array_equal(got, np.asarray(apply((), qb.asarray(x), rng=qb.random.key(2))))
    _, test_apply = stax.Dropout(0.6, mode="test")
    np.testing.assert_array_equal(np.asarray(test_apply((), qb.asarray(x), rng=qb.random.key(1))), x)
    # Inside qb.jit with the key as an argument.
    got_jit = qb.jit(lambda x, k: apply((), x, rng=k))(qb.asarray(x), qb.random.key(1))
    np.testing.assert_array_equal(np.asarray(got_jit), expected)


def test_stax_errors():
    _, apply = stax.Dropout(0.5)
    with pytest.raises(ValueError, match="PRNG key"):
        apply((), qb.ones(3))
    with pytest.raises(ValueError, match="mode must be 'train' or 'test'"):
        stax.Dropout(0.5, mode="eval")
    with pytest.raises(ValueError, match="probability of keeping"):
        stax.Dropout(1.5)
    with pytest.raises(ValueError, match="positive integer"):
        stax.Dense(0)
    with pytest.raises(TypeError, match="did you pass a layer constructor"):
        stax.serial(stax.Dense, stax.Tanh)
    with pytest.raises(TypeError, match="must be a layer"):
        stax.parallel(stax.Tanh, 3)
    with pytest.raises(TypeError, match="input_shape must be a tuple of ints"):
        stax.Dense(3)[0](qb.random.key(0), 5)
    with pytest.raises(ValueError, match="filter_shape"):
        stax.Conv(3, (3,))
    with pytest.raises(ValueError, match="expects 2 input shapes"):
        stax.parallel(stax.Tanh, stax.Tanh)[0](qb.random.key(0), [(3,)])


# ---------------------------------------------------------------------------------------------
# End to end: fit an MLP with adam, jitted, in both libraries.
# ---------------------------------------------------------------------------------------------

def test_mlp_fit_with_adam_matches_jax(x64_on):
    xs = np.linspace(-2.0, 2.0, 64).reshape(-1, 1)
    ys = np.sin(2.0 * xs) + 0.1 * xs ** 2

    def train(lib, opt_lib, np_, jit, grad, key, x, y):
        init_fn, apply_fn = lib.serial(lib.Dense(32), lib.Tanh, lib.Dense(32), lib.Tanh, lib.Dense(1))
        _, params = init_fn(key, (-1, 1))
        opt_init, opt_update, get_params = opt_lib.adam(1e-2)

        def loss(params):
            return np_.mean((apply_fn(params, x) - y) ** 2)

        @jit
        def step(i, opt_state):
            value, grads = grad(loss)(get_params(opt_state))
            return value, opt_update(i, grads, opt_state)

        opt_state = opt_init(params)
        losses = []
        for i in range(200):
            value, opt_state = step(np_.asarray(i), opt_state)
            losses.append(float(value))
        return losses, float(loss(get_params(opt_state)))

    q_losses, q_final = train(stax, optimizers, qb, qb.jit, qb.value_and_grad, qb.random.key(0),
                              qb.asarray(xs), qb.asarray(ys))
    j_losses, j_final = train(jstax, jopt, jnp, jax.jit, jax.value_and_grad, jax.random.key(0),
                              jnp.asarray(xs), jnp.asarray(ys))
    assert q_final < 0.1 * q_losses[0]  # it learned something
    np.testing.assert_allclose(q_losses, j_losses, rtol=1e-10)
    assert q_final == pytest.approx(j_final, rel=1e-10)
