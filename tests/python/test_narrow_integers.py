"""The narrow integer dtypes (int8, int16, uint8, uint16, uint32): values against NumPy's
modular arithmetic, promotion and conversions against JAX's, in eager calls, jit, vmap,
loops and the CUDA emulator. The compiler computes them in int32 / int64 and wraps each
result (transforms/lower_narrow.h); these tests are what says the wrap is everywhere."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import quabla as qb

NARROW = ["int8", "int16", "uint8", "uint16", "uint32"]
INTS = NARROW + ["int32", "int64"]


def qdt(name):
    return getattr(qb, name)


def same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def values(name, n, seed=0):
    info = np.iinfo(name)
    rng = np.random.default_rng(seed)
    edge = np.array([info.min, info.max, 0, 1, info.max // 2 + 1], dtype=name)
    return np.concatenate([edge, rng.integers(info.min, int(info.max) + 1, n, dtype=name)])


@pytest.mark.parametrize("name", NARROW)
def test_dtype_objects_and_numpy_interop(name):
    d = qdt(name)
    assert d.name == name and d.itemsize == np.dtype(name).itemsize and d.kind == np.dtype(name).kind
    assert qb.dtype(name) == d and qb.dtype(np.dtype(name)) == d and d == np.dtype(name)
    v = values(name, 20)
    x = qb.asarray(v)
    assert x.dtype == d
    same(x, v)
    assert x.tolist() == v.tolist() and type(x[0].item()) is int
    same(qb.from_dlpack(v), v)
    same(np.from_dlpack(x), v)
    same(qb.asarray(memoryview(v)), v)
    assert qb.iinfo(d).max == np.iinfo(name).max
    same(qb.zeros(3, d), np.zeros(3, name))
    same(qb.arange(5, dtype=d), np.arange(5, dtype=name))
    same(qb.asarray([1, 2, 3], dtype=d), np.array([1, 2, 3], dtype=name))


BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "subtract": (lambda a, b: a - b, np.subtract),
    "multiply": (lambda a, b: a * b, np.multiply),
    "maximum": (qb.maximum, np.maximum),
    "minimum": (qb.minimum, np.minimum),
    "and": (lambda a, b: a & b, np.bitwise_and),
    "or": (lambda a, b: a | b, np.bitwise_or),
    "xor": (lambda a, b: a ^ b, np.bitwise_xor),
    "less": (lambda a, b: a < b, np.less),
    "equal": (lambda a, b: a == b, np.equal),
    "greater_equal": (lambda a, b: a >= b, np.greater_equal),
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("name", NARROW)
def test_binary_ops_wrap_as_numpy(name, op):
    fq, fn = BINARY[op]
    a, b = values(name, 200, 1), values(name, 200, 2)
    want = fn(a, b)
    with np.errstate(over="ignore"):
        same(fq(qb.asarray(a), qb.asarray(b)), want)
        same(qb.jit(fq)(a, b), want)
        same(qb.vmap(fq)(a, b), want)


@pytest.mark.parametrize("name", NARROW)
def test_unary_division_and_powers(name):
    a = values(name, 200, 3)
    b = values(name, 200, 4)
    b = np.where(b == 0, np.array(3, name), b)
    if name.startswith("int"):  # NumPy's min // -1 overflows with a warning; XLA gives min too
        b = np.where(b == np.array(-1, name), np.array(2, name), b)
    x, y = qb.asarray(a), qb.asarray(b)
    with np.errstate(over="ignore"):
        same(-x, -a)
        same(~x, ~a)
        same(qb.abs(x), np.abs(a))
        same(qb.sign(x), np.sign(a))
        same(x // y, a // b)
        same(x % y, a % b)
        same(qb.jit(lambda u, v: (u // v, u % v))(a, b)[0], a // b)
        same(x ** 3, a ** np.array(3, name))
        same(qb.square(x), np.square(a))


@pytest.mark.parametrize("name", NARROW)
def test_shifts(name):
    bits = 8 * np.dtype(name).itemsize
    a = values(name, 100, 5)
    s = (np.arange(a.size) % bits).astype(name)
    x, k = qb.asarray(a), qb.asarray(s)
    same(x << k, np.left_shift(a, s))
    same(x >> k, np.right_shift(a, s))  # arithmetic for signed, logical for unsigned (NumPy's)
    same(qb.jit(lambda u, v: u << v)(a, s), np.left_shift(a, s))


def test_shifts_and_bit_helpers_against_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    for name in NARROW:
        a = values(name, 50, 6)
        bits = 8 * np.dtype(name).itemsize
        s = (np.arange(a.size) % (bits + 3)).astype(name)  # amounts past the width too
        x, k = qb.asarray(a), qb.asarray(s)
        ja, js = jnp.asarray(a), jnp.asarray(s)
        for q, j in ((qb.left_shift, jnp.left_shift), (qb.right_shift, jnp.right_shift),
                     (qb.lax.shift_right_logical, jax.lax.shift_right_logical),
                     (qb.lax.shift_right_arithmetic, jax.lax.shift_right_arithmetic)):
            same(q(x, k), np.asarray(j(ja, js)))
        same(qb.lax.population_count(x), np.asarray(jax.lax.population_count(ja)))
        same(qb.lax.clz(x), np.asarray(jax.lax.clz(ja)))
        same(qb.lax.mulhi(x, x), np.asarray(jax.lax.mulhi(ja, ja)))


@pytest.mark.parametrize("name", NARROW)
def test_reductions_cumulative_and_matmul_wrap(name):
    a = values(name, 59, 7).reshape(8, 8)
    x = qb.asarray(a)
    acc = np.int64  # the default integer (JAX's uint64 for unsigned ones with x64; Quabla has no uint64)
    same(qb.sum(x), a.astype(acc).sum())
    same(qb.sum(x, axis=0), a.astype(acc).sum(axis=0))
    with np.errstate(over="ignore"):
        same(qb.prod(x[:2], axis=0), np.prod(a[:2].astype(acc), axis=0))
        same(qb.cumsum(x, axis=1), np.cumsum(a, axis=1, dtype=name))  # cumsum keeps the dtype (JAX's)
        same(x @ x, (a.astype(np.uint64) @ a.astype(np.uint64)).astype(name))
        same(qb.jit(lambda u: u @ u)(a), (a.astype(np.uint64) @ a.astype(np.uint64)).astype(name))
    same(qb.max(x, axis=1), a.max(axis=1))
    same(qb.min(x), a.min())
    same(qb.argmax(x, axis=0), a.argmax(axis=0))
    same(qb.sort(x, axis=1), np.sort(a, axis=1))
    same(qb.argsort(x.reshape(-1), stable=True), np.argsort(a.reshape(-1), kind="stable"))
    wide = a.astype(np.float64)
    assert qb.mean(x).dtype == qb.float32 and abs(float(qb.mean(x)) - wide.mean()) <= 1e-6 * np.abs(wide).max()


def test_sums_under_a_float32_default_are_32_bit():
    a = np.array([200, 100], np.uint8)
    with qb.set_default_dtype(qb.float32):
        assert qb.sum(qb.asarray(a)).dtype == qb.uint32  # JAX's without x64
        assert qb.sum(qb.asarray(a.astype(np.int8))).dtype == qb.int32
    assert qb.sum(qb.asarray(a)).dtype == qb.int64


@pytest.mark.parametrize("name", NARROW)
def test_out_of_range_intermediates_are_wrapped_before_exact_readers(name):
    # y = x * 3 + 200 is only congruent to its narrow value inside the program; every reader
    # that needs the value itself must see it wrapped (lower_narrow's lazy wraps)
    a = values(name, 40, 11)
    three, c = np.array(3, name), np.array(200 % (np.iinfo(name).max + 1), name)
    with np.errstate(over="ignore"):
        y = a * three + c
        s_ = np.cumsum(y, dtype=name)
    n = a.size

    def readers(x):
        y = x * 3 + int(c)
        s = qb.cumsum(y)
        return [y > 100, y // 7, y % 5, y >> 2, qb.max(y), qb.sort(y), y.astype(qb.float64), y.astype(qb.int64),
                qb.maximum(y, 5), s < s[3], qb.take(x, (y % n).astype(qb.int32)), qb.argmax(y),
                y.astype(qb.uint16 if x.dtype != qb.uint16 else qb.uint32),
                qb.lax.fori_loop(0, 2, lambda i, v: v // 3, y), qb.where(y == y[0], y, x)]

    with np.errstate(over="ignore"):
        wide = np.uint16 if name != "uint16" else np.uint32
        want = [y > 100, y // 7, y % 5, y >> 2, y.max(), np.sort(y), y.astype(np.float64), y.astype(np.int64),
                np.maximum(y, np.array(5, name)), s_ < s_[3], a[(y % n).astype(np.int32)], y.argmax(),
                y.astype(wide), y // 3 // 3, np.where(y == y[0], y, a)]
    for got in (readers(qb.asarray(a)), qb.jit(readers)(a)):
        for g, w in zip(got, want):
            same(g, np.asarray(w))
    same(qb.vmap(lambda x: (x * 3 + int(c)) // 7)(a), y // 7)


@pytest.mark.parametrize("name", NARROW)
def test_movement_indexing_and_updates(name):
    a = values(name, 19, 8).reshape(4, 6)
    x = qb.asarray(a)
    same(x.T, a.T)
    same(x[::-1, 1:5:2], a[::-1, 1:5:2])
    same(qb.concatenate([x, x[:1]]), np.concatenate([a, a[:1]]))
    same(qb.pad(x, 1), np.pad(a, 1))
    same(qb.where(x > x[0], x, x[1]), np.where(a > a[0], a, a[1]))
    same(x[qb.asarray([2, 0, 2])], a[[2, 0, 2]])
    same(qb.take_along_axis(x, qb.argsort(x, axis=1), axis=1), np.take_along_axis(a, np.argsort(a, axis=1), axis=1))
    b = a.copy()
    np.add.at(b, ([0, 0, 3], [1, 1, 2]), np.array([250, 7, 9]).astype(name))
    same(x.at[qb.asarray([0, 0, 3]), qb.asarray([1, 1, 2])].add(qb.asarray(np.array([250, 7, 9]).astype(name))), b)
    same(x.at[0].set(5), np.concatenate([np.full((1, 6), 5, name), a[1:]]))
    same(qb.broadcast_to(x[0], (3, 6)), np.broadcast_to(a[0], (3, 6)))


@pytest.mark.parametrize("name", NARROW)
def test_conversions_saturate_from_floats_and_wrap_from_integers(name):
    jnp = pytest.importorskip("jax.numpy")
    f = np.array([300.0, -5.0, 2.7, -2.7, np.nan, 1e10, -1e10, 65535.9, 255.5])
    want = np.asarray(jnp.asarray(f).astype(name))  # XLA's: toward zero, saturating, NaN -> 0
    same(qb.asarray(f).astype(qdt(name)), want)
    same(qb.jit(lambda v: v.astype(qdt(name)))(f), want)
    same(qb.asarray(f.astype(np.float32)).astype(qdt(name)), np.asarray(jnp.asarray(f.astype(np.float32)).astype(name)))
    i = np.array([300, -5, 70000, 2 ** 33 + 7, -(2 ** 40)], np.int64)
    same(qb.asarray(i).astype(qdt(name)), i.astype(name))  # modular, as NumPy's astype
    v = values(name, 30, 9)
    for other in INTS + ["float32", "float64", "bool"]:
        with np.errstate(over="ignore"):
            same(qb.asarray(v).astype(qdt(other) if other != "bool" else qb.bool_), v.astype(other))


def test_promotion_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    names = INTS + ["float32", "float64", "bool"]
    for a in names:
        for b in names:
            if {a, b} == {"float32", "float64"}:
                continue  # Quabla raises there (explicit promotion)
            if a == b == "bool":
                continue
            want = jnp.promote_types(a, b).name
            if want == "uint64":
                continue  # no uint64 here
            x = qb.ones(2, dtype=qb.dtype(a))
            y = qb.ones(2, dtype=qb.dtype(b))
            got = (x * y).dtype.name if "bool" not in (a, b) else qb.where(x > 0, x, y).dtype.name
            assert got == want, (a, b, got, want)
            assert qb.result_type(x, y).name == want, (a, b)
    # Python scalars are weak: the array's dtype; a value it cannot hold raises
    u = qb.asarray(np.array([250], np.uint8))
    assert (u + 1).dtype == qb.uint8 and (u + 1).tolist() == [251]
    assert (u + 1.5).dtype == qb.float64
    with pytest.raises(ValueError, match="does not fit in uint8"):
        u + 300
    with pytest.raises(ValueError, match="does not fit in uint8"):
        u - (-1)
    assert (qb.asarray(np.array([1], np.uint32)) + qb.asarray(np.array([1], np.int32))).dtype == qb.int64


@pytest.mark.parametrize("name", NARROW)
def test_loops_carry_narrow_values(name):
    a = values(name, 5, 10)
    with np.errstate(over="ignore"):
        want = a.copy()
        for _ in range(7):
            want = want * np.array(3, name) + np.array(1, name)
    got = qb.lax.fori_loop(0, 7, lambda i, c: c * 3 + 1, qb.asarray(a))
    same(got, want)
    same(qb.jit(lambda v: qb.lax.fori_loop(0, 7, lambda i, c: c * 3 + 1, v))(a), want)
    ys = qb.lax.scan(lambda c, v: (c + v, c), qb.asarray(a[0]), qb.asarray(a))[1]
    with np.errstate(over="ignore"):
        same(ys, np.concatenate([[a[0]], a[0] + np.cumsum(a, dtype=name)[:-1]]).astype(name))
    # a while loop whose condition reads the wrapped value
    def body(c):
        return c[0] + 1, c[1] * np.array(2, name)
    n, v = qb.lax.while_loop(lambda c: c[1] != 0, body, (0, qb.asarray(np.array(1, name))))
    assert int(n) == 8 * np.dtype(name).itemsize and v.dtype == qdt(name)


def test_grad_through_narrow_integer_data():
    labels = np.array([2, 0, 1, 2], np.uint8)
    def loss(w):
        onehot = qb.nn.one_hot(qb.asarray(labels), 3)
        return qb.sum((w * onehot) ** 2) + qb.sum(labels.astype(np.float64) * w[:, 0])
    w = np.linspace(0.1, 1.2, 12).reshape(4, 3)
    g = qb.grad(loss)(w)
    want = 2 * w * np.eye(3)[labels]
    want[:, 0] += labels
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-14)
    assert qb.grad(lambda w: qb.sum(w * qb.asarray(labels)))(w[:, 0]).dtype == qb.float64


def test_random_bits_and_keys_are_jax_words():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    k, jk = qb.random.key(7), jax.random.key(7)
    for name in ("uint8", "uint16", "uint32"):
        same(qb.random.bits(k, (3, 5), qdt(name)), np.asarray(jax.random.bits(jk, (3, 5), name)))
        same(qb.jit(lambda kk: qb.random.bits(kk, (9,), qdt(name)))(k), np.asarray(jax.random.bits(jk, (9,), name)))
    same(qb.random.key_data(k), np.asarray(jax.random.key_data(jk)))
    same(qb.random.PRNGKey(3), np.asarray(jax.random.PRNGKey(3)))
    same(qb.random.split(qb.random.PRNGKey(3)), np.asarray(jax.random.split(jax.random.PRNGKey(3))))
    w = qb.asarray(np.array([1.5, -2.0, np.inf], np.float32))
    same(qb.lax.bitcast_convert_type(w, qb.uint32),
         np.asarray(jax.lax.bitcast_convert_type(jax.numpy.asarray(np.asarray(w)), jax.numpy.uint32)))
    same(qb.lax.bitcast_convert_type(qb.lax.bitcast_convert_type(w, qb.uint32), qb.float32), np.asarray(w))


def test_save_load_and_pickle_round_trip(tmp_path):
    import pickle
    tree = {n: qb.asarray(values(n, 4)) for n in NARROW}
    qb.save(tmp_path / "t.qb", tree)
    back = qb.load(tmp_path / "t.qb")
    for n in NARROW:
        same(back[n], np.asarray(tree[n]))
        same(pickle.loads(pickle.dumps(tree[n])), np.asarray(tree[n]))
    assert pickle.loads(pickle.dumps(qb.uint16)) == qb.uint16


def test_host_callbacks_see_the_narrow_dtype():
    seen = []
    def host(v):
        seen.append(v.dtype)
        return (v.astype(np.int64) * 2).astype(v.dtype)
    a = np.array([200, 7], np.uint8)
    out = qb.jit(lambda v: qb.pure_callback(host, qb.ShapeDtypeStruct((2,), qb.uint8), v + 1))(a)
    same(out, ((a + 1).astype(np.int64) * 2).astype(np.uint8))
    assert seen and all(d == np.uint8 for d in seen)


def test_uint64_and_unknown_dtypes_raise_clearly():
    with pytest.raises(TypeError, match="uint64"):
        qb.zeros(2, dtype="uint64")
    assert qb.asarray(np.array([1, 2], np.uint64)).dtype == qb.int64  # values kept where int64 holds them


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NARROW), data=st.data())
def test_random_chains_match_numpy(name, data):
    info = np.iinfo(name)
    ints = st.integers(int(info.min), int(info.max))
    a = np.array(data.draw(st.lists(ints, min_size=1, max_size=12)), dtype=name)
    b = np.array(data.draw(st.lists(ints, min_size=a.size, max_size=a.size)), dtype=name)
    c = int(data.draw(st.integers(0, min(int(info.max), 1000))))
    def chain(x, y):
        return ((x * y + c) ^ (x - y)) * (x | y) - (x & c)
    with np.errstate(over="ignore"):
        cc = np.array(c, name)
        want = ((a * b + cc) ^ (a - b)) * (a | b) - (a & cc)
    same(chain(qb.asarray(a), qb.asarray(b)), want)
    same(qb.jit(chain)(a, b), want)


@pytest.mark.parametrize("name", ["uint8", "int8", "uint32"])
def test_named_axis_collectives_wrap(name):
    a = values(name, 6, 12)
    with np.errstate(over="ignore"):
        total = np.sum(a, dtype=name)
    same(qb.vmap(lambda v: qb.lax.psum(v, "i"), axis_name="i")(a), np.full(a.shape, total, name))
    same(qb.jit(qb.vmap(lambda v: qb.lax.psum(v * 3, "i") > 100, axis_name="i"))(a),
         np.full(a.shape, np.sum(a * np.array(3, name), dtype=name) > 100))
    same(qb.vmap(lambda v: qb.lax.pmax(v, "i"), axis_name="i")(a), np.full(a.shape, a.max(), name))
