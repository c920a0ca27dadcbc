"""Everyday JAX code runs unchanged: weak Python scalars in every multi-operand function,
jit's static arguments under transforms, jit closing over an outer transform's values,
static dataclass fields, resumable optimizer state, the default dtype switch, and errors
that name what the user called."""
from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest

import quabla as qb

X32 = qb.array([1.0, 2.0], dtype=qb.float32)
S32 = qb.array(2.0, dtype=qb.float32)


# ---------------------------------------------------------------------------------------
# Python scalars are weak everywhere

@pytest.mark.parametrize("make,expected", [
    (lambda: qb.stack([0.0, S32]), [0.0, 2.0]),
    (lambda: qb.stack([S32, 1, 0.5]), [2.0, 1.0, 0.5]),
    (lambda: qb.stack([X32, X32], axis=1), [[1.0, 1.0], [2.0, 2.0]]),
    (lambda: qb.array([0.0, S32]), [0.0, 2.0]),
    (lambda: qb.array([[0.0, 1.0], X32]), [[0.0, 1.0], [1.0, 2.0]]),
    (lambda: qb.asarray([S32, 3.0]), [2.0, 3.0]),
    (lambda: qb.where(X32 > 1.0, 0.5, X32), [1.0, 0.5]),
    (lambda: qb.maximum(1.5, X32), [1.5, 2.0]),
    (lambda: qb.clip(X32, 0.0, 1.5), [1.0, 1.5]),
    (lambda: qb.concatenate([X32, X32]), [1.0, 2.0, 1.0, 2.0]),
])
def test_python_scalars_adopt_the_array_dtype(make, expected):
    r = make()
    assert r.dtype == qb.float32
    np.testing.assert_array_equal(r.numpy(), np.asarray(expected, dtype=np.float32))


def test_stack_of_python_numbers_alone_is_float64_and_bools_stay_bool():
    assert qb.stack([0.0, 1.0]).dtype == qb.float64
    assert qb.stack([True, qb.array(False)]).dtype == qb.bool_


def test_array_of_traced_values_stacks_and_differentiates():
    def f(x):
        v = qb.array([x, 2.0 * x, 1.0])
        return qb.sum(v ** 2)
    np.testing.assert_allclose(float(qb.grad(f)(qb.array(1.5))), 2 * 1.5 + 8 * 1.5)
    np.testing.assert_allclose(float(qb.jit(qb.grad(f))(qb.array(1.5))), 15.0)
    out = qb.vmap(lambda x: qb.array([x, -x]))(qb.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(out.numpy(), [[1, -1], [2, -2], [3, -3]])


def test_mixed_strong_dtypes_and_ragged_sequences_still_raise():
    with pytest.raises(ValueError, match="float32 and float64.*astype"):
        qb.array([S32, qb.array(1.0)])
    with pytest.raises(ValueError, match="array: the nested sequence is not rectangular"):
        qb.array([S32, X32])
    with pytest.raises(ValueError, match="cannot mix"):
        qb.stack([X32, qb.array([1.0, 2.0])])  # a float64 *array* is strong


# ---------------------------------------------------------------------------------------
# jit: static arguments that are tracers; closures over an outer transform's values

def test_static_argument_given_a_tracer_raises_like_the_eager_call():
    f = qb.jit(lambda x, n: qb.sum(x ** n), static_argnums=1)
    with pytest.raises(TypeError, match="static argument 1 must be a hashable Python value, got an array"):
        f(qb.array(2.0), qb.array(3.0))
    with pytest.raises(TypeError, match="static argument 1 .*traced array"):
        qb.grad(f, argnums=1)(qb.array(2.0), qb.array(3.0))
    with pytest.raises(TypeError, match="static argument 1 .*traced array"):
        qb.vmap(f, in_axes=(None, 0))(qb.array(2.0), qb.array([3.0, 4.0]))
    g = qb.jit(lambda x, n: x * n, static_argnames="n")
    with pytest.raises(TypeError, match="static argument 'n' .*traced array"):
        qb.jit(lambda x: g(x, n=x))(qb.array(1.0))
    assert float(qb.grad(f)(qb.array(2.0), 3)) == 12.0  # a Python int is fine


@pytest.mark.parametrize("outer", ["grad", "jvp", "vmap"])
def test_inner_jit_closing_over_an_outer_tracer(outer):
    def inner(w):
        return qb.jit(lambda t: qb.sin(t * w))(qb.array(0.3))

    if outer == "grad":
        np.testing.assert_allclose(float(qb.grad(inner)(qb.array(1.2))), 0.3 * np.cos(0.36), rtol=1e-14)
    elif outer == "jvp":
        _, t = qb.jvp(inner, (qb.array(1.2),), (qb.array(1.0),))
        np.testing.assert_allclose(float(t), 0.3 * np.cos(0.36), rtol=1e-14)
    else:
        out = qb.vmap(inner)(qb.array([1.2, 1.0]))
        np.testing.assert_allclose(out.numpy(), np.sin(0.3 * np.array([1.2, 1.0])), rtol=1e-15)


def test_lowering_a_function_that_closes_over_an_outer_tracer_raises_tracer_error():
    def inner(w):
        qb.jit(lambda t: t * w).lower(qb.array(0.3))
        return w
    with pytest.raises(qb.TracerError, match="closure"):
        qb.grad(inner)(qb.array(1.0))


# ---------------------------------------------------------------------------------------
# register_dataclass: static fields

@qb.tree.register_dataclass
@dataclasses.dataclass
class Layer:
    w: object
    b: object
    activation: str = dataclasses.field(default="tanh", metadata=dict(static=True))
    width: int = dataclasses.field(default=2, metadata=dict(static=True))


def test_static_dataclass_fields_are_structure_not_leaves():
    layer = Layer(qb.ones(2), qb.zeros(2), "sin", 2)
    leaves, treedef = qb.tree.flatten(layer)
    assert len(leaves) == 2
    assert treedef != qb.tree.structure(Layer(qb.ones(2), qb.zeros(2), "tanh", 2))
    calls = []

    def apply(l, x):
        calls.append(1)
        act = getattr(qb, l.activation)
        return qb.sum(act(l.w * x + l.b)) * l.width

    g = qb.grad(apply)(layer, qb.array(0.5))
    assert isinstance(g, Layer) and g.activation == "sin" and g.width == 2
    np.testing.assert_allclose(g.w.numpy(), 2 * 0.5 * np.cos(0.5) * np.ones(2))
    step = qb.jit(apply)
    step(layer, qb.array(0.5))
    step(Layer(qb.ones(2) * 2.0, qb.zeros(2), "sin", 2), qb.array(0.5))
    n = len(calls)
    step(Layer(qb.ones(2), qb.zeros(2), "tanh", 2), qb.array(0.5))  # a static change retraces
    assert len(calls) == n + 1


def test_register_dataclass_with_jax_field_lists():
    @dataclasses.dataclass
    class P:
        a: object
        b: object
        n: int

    qb.tree.register_dataclass(P, data_fields=["a", "b"], meta_fields=["n"])
    leaves, _ = qb.tree.flatten(P(1.0, 2.0, 3))
    assert leaves == [1.0, 2.0]
    assert qb.tree.unflatten(qb.tree.structure(P(0, 0, 3)), [5, 6]) == P(5, 6, 3)


@pytest.mark.parametrize("data,meta,match", [
    (["a"], ["n"], r"\['b'\] are in neither"),
    (["a", "b"], ["n", "zz"], r"\['zz'\] are not fields"),
    (["a", "b", "n"], ["n"], r"\['n'\] listed twice"),
    ("a", ["n"], "must be a sequence of field names"),
])
def test_register_dataclass_rejects_field_lists_that_do_not_cover_every_field(data, meta, match):
    @dataclasses.dataclass
    class Q:
        a: object
        b: object
        n: int

    with pytest.raises((ValueError, TypeError), match=match):
        qb.tree.register_dataclass(Q, data_fields=data, meta_fields=meta)


# ---------------------------------------------------------------------------------------
# Optimizer state: a pytree that saves, loads and resumes a Trainer bit for bit

def _loss(p, x):
    return qb.mean((qb.sin(p["w"] * x) + p["b"] - x) ** 2)


@pytest.mark.parametrize("make", [lambda: qb.optim.Adam(0.05), lambda: qb.optim.AdamW(0.05),
                                  lambda: qb.optim.SGD(0.1)])
def test_trainer_resumes_from_a_checkpoint_bit_for_bit(make):
    x = qb.linspace(0.0, 1.0, 16)
    p0 = {"w": qb.array(0.3), "b": qb.array([0.1])}
    t = qb.Trainer(_loss, p0, make(), x)
    t.fit(25)
    buf = io.BytesIO()
    qb.save(buf, {"params": t.params, "opt": t.state})
    later = t.fit(30)
    buf.seek(0)
    ck = qb.load(buf)
    resumed = qb.Trainer(_loss, ck["params"], make(), x, opt_state=ck["opt"])
    assert resumed.fit(30) == later
    for a, b in zip(qb.tree.leaves((t.params, t.state)), qb.tree.leaves((resumed.params, resumed.state))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_trainer_rejects_a_state_of_another_optimizer_or_parameters():
    x = qb.linspace(0.0, 1.0, 4)
    p = {"w": qb.array(0.3), "b": qb.array([0.1])}
    with pytest.raises(ValueError, match="opt_state has structure"):
        qb.Trainer(_loss, p, qb.optim.Adam(), x, opt_state=qb.optim.SGD().init(p))
    bad = qb.optim.Adam().init({"w": qb.array(0.3), "b": qb.array([0.1, 0.2])})
    with pytest.raises(ValueError, match="opt_state leaf"):
        qb.Trainer(_loss, p, qb.optim.Adam(), x, opt_state=bad)


# ---------------------------------------------------------------------------------------
# The default dtype

CONSTRUCTORS = {
    "zeros": lambda: qb.zeros(3),
    "ones": lambda: qb.ones((2, 2)),
    "full": lambda: qb.full(2, 1.5),
    "arange": lambda: qb.arange(3.0),
    "linspace": lambda: qb.linspace(0, 1, 5),
    "eye": lambda: qb.eye(2),
    "array_float": lambda: qb.array(0.5),
    "array_list": lambda: qb.array([1, 2.5]),
    "asarray_numpy_float": lambda: qb.asarray([1, 0.5]),
    "uniform": lambda: qb.random.uniform(qb.random.key(0), (3,)),
    "normal": lambda: qb.random.normal(qb.random.key(0), (3,)),
    "glorot_normal": lambda: qb.random.glorot_normal(qb.random.key(0), (2, 3)),
    "he_uniform": lambda: qb.random.he_uniform(qb.random.key(0), (2, 3)),
}


RANDOM_FLOAT32 = {
    "uniform": lambda: qb.random.uniform(qb.random.key(0), (3,), qb.float32),
    "normal": lambda: qb.random.normal(qb.random.key(0), (3,), qb.float32),
    "glorot_normal": lambda: qb.random.glorot_normal(qb.random.key(0), (2, 3), qb.float32),
    "he_uniform": lambda: qb.random.he_uniform(qb.random.key(0), (2, 3), qb.float32),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_every_constructor_honours_the_default_dtype(name):
    assert qb.default_dtype() == qb.float64
    assert CONSTRUCTORS[name]().dtype == qb.float64
    with qb.set_default_dtype(qb.float32):
        assert qb.default_dtype() == qb.float32
        a = CONSTRUCTORS[name]()
        assert a.dtype == qb.float32
    assert CONSTRUCTORS[name]().dtype == qb.float64
    if name in RANDOM_FLOAT32:  # float32 draws take their own bits (as JAX's), not float64's rounded
        np.testing.assert_array_equal(a.numpy(), RANDOM_FLOAT32[name]().numpy())
    else:
        np.testing.assert_allclose(a.numpy(), CONSTRUCTORS[name]().numpy(), rtol=1e-6, atol=1e-7)


def test_default_dtype_plain_call_stays_until_changed_and_explicit_dtypes_win():
    try:
        qb.set_default_dtype(qb.float32)
        assert qb.zeros(2).dtype == qb.float32
        assert qb.zeros(2, dtype=qb.float64).dtype == qb.float64
        assert qb.asarray(np.ones(2)).dtype == qb.float32  # float64 NumPy data canonicalized, as JAX's x64 off
        assert qb.asarray(np.ones(2), dtype=qb.float64).dtype == qb.float64
        assert qb.array([True]).dtype == qb.bool_
        assert (0.5 * qb.ones(2, dtype=qb.float64)).dtype == qb.float64  # weak scalars adopt
        params = {"w": qb.random.glorot_normal(qb.random.key(1), (3, 2))}
        g = qb.grad(lambda p, x: qb.sum(qb.tanh(p["w"] @ x)))(params, qb.ones(2))
        assert g["w"].dtype == qb.float32
    finally:
        qb.set_default_dtype(qb.float64)
    assert qb.zeros(2).dtype == qb.float64


def test_set_default_dtype_rejects_non_float_dtypes():
    for bad in (qb.bool_, "int8", None):
        with pytest.raises(TypeError, match="set_default_dtype"):
            qb.set_default_dtype(bad)
    assert qb.default_dtype() == qb.float64


# ---------------------------------------------------------------------------------------
# Errors name what the user called, and hints point at what works

def test_grad_and_value_and_grad_name_themselves():
    with pytest.raises(TypeError, match="^grad: expected a callable"):
        qb.grad("f")
    with pytest.raises(TypeError, match="^value_and_grad: expected a callable"):
        qb.value_and_grad("f")


def test_list_and_numpy_integer_array_indices_gather():
    x = qb.arange(5.0)
    assert x[[0, 2]].tolist() == [0.0, 2.0]
    assert x[np.array([0, 2])].tolist() == [0.0, 2.0]
    assert float(x[np.int64(2)]) == 2.0 and float(x[np.array(3)]) == 3.0


def test_traced_float_index_says_indices_must_be_integers():
    x = qb.arange(5.0)
    with pytest.raises(IndexError) as e:
        qb.jit(lambda x, i: x[i])(x, qb.array(2.0))
    assert "integers" in str(e.value)
    assert float(qb.jit(lambda x, i: x[i])(x, qb.array(2))) == 2.0
    # the suggested one-hot form works under jit
    pick = qb.jit(lambda x, i: qb.sum(qb.where(qb.arange(5) == i, x, 0.0)))
    assert float(pick(x, qb.array(2.0))) == 2.0


def test_huge_python_int_index_is_an_index_error():
    with pytest.raises(IndexError):
        qb.ones(3)[2 ** 63]


def test_jit_retraces_after_the_default_dtype_changes():
    h = qb.jit(lambda x: qb.ones(2) * 2.0)
    assert h(qb.ones(1)).dtype == qb.float64
    with qb.set_default_dtype(qb.float32):
        assert h(qb.ones(1)).dtype == qb.float32
    assert h(qb.ones(1)).dtype == qb.float64
