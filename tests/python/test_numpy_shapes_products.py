"""Shape, product and calculus functions composed from core ops (roll, pad, tile, repeat,
moveaxis, swapaxes, diagonal, diag, trace, outer, inner, tensordot, kron, cross, diff,
trapezoid, polyval, vander, identity): values against NumPy, derivatives against central
differences in float64, and the same results under jit and vmap."""
from __future__ import annotations

import numpy as np
import pytest

import quabla as qb

# NumPy 2 deprecates 2-vectors in np.cross; they are the reference here all the same.
pytestmark = pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 2))
C = RNG.normal(size=(2, 3, 4))
V3, W3 = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 3))
V, P = RNG.normal(size=6), RNG.normal(size=4)
D, S, E = RNG.normal(size=(2, 4, 2)), RNG.normal(size=(4, 4)), RNG.normal(size=(1, 3, 4))
XP, FP = np.array([-1.0, -0.3, 0.2, 0.9, 1.7]), RNG.normal(size=5)
XQ = np.array([[-2.0, -0.95, -0.31], [0.5, 1.1, 2.4]])  # outside, inside, near nodes (not on them)

# name -> (quabla function of the arrays, the NumPy function, the NumPy arguments)
CASES = {
    "moveaxis": (lambda c: qb.moveaxis(c, 0, -1), lambda c: np.moveaxis(c, 0, -1), [C]),
    "moveaxis_multi": (lambda c: qb.moveaxis(c, (0, 1), (2, 0)), lambda c: np.moveaxis(c, (0, 1), (2, 0)), [C]),
    "swapaxes": (lambda c: qb.swapaxes(c, 0, 2), lambda c: np.swapaxes(c, 0, 2), [C]),
    "roll": (lambda a: qb.roll(a, 1, axis=1), lambda a: np.roll(a, 1, axis=1), [A]),
    "roll_negative": (lambda a: qb.roll(a, -5, axis=0), lambda a: np.roll(a, -5, axis=0), [A]),
    "roll_flat": (lambda a: qb.roll(a, 3), lambda a: np.roll(a, 3), [A]),
    "roll_multi": (lambda c: qb.roll(c, (1, -2), axis=(0, 2)), lambda c: np.roll(c, (1, -2), axis=(0, 2)), [C]),
    "tile": (lambda a: qb.tile(a, (2, 3)), lambda a: np.tile(a, (2, 3)), [A]),
    "tile_rank_up": (lambda v: qb.tile(v, (2, 1, 2)), lambda v: np.tile(v, (2, 1, 2)), [V]),
    "tile_int": (lambda a: qb.tile(a, 2), lambda a: np.tile(a, 2), [A]),
    "repeat": (lambda a: qb.repeat(a, 3, axis=1), lambda a: np.repeat(a, 3, axis=1), [A]),
    "repeat_flat": (lambda a: qb.repeat(a, 2), lambda a: np.repeat(a, 2), [A]),
    "repeat_counts": (lambda a: qb.repeat(a, [1, 0, 2], axis=0), lambda a: np.repeat(a, [1, 0, 2], axis=0), [A]),
    "diagonal": (lambda a: qb.diagonal(a), lambda a: np.diagonal(a), [A]),
    "diagonal_offset": (lambda a: qb.diagonal(a, 1), lambda a: np.diagonal(a, 1), [A]),
    "diagonal_negative": (lambda a: qb.diagonal(a, -1), lambda a: np.diagonal(a, -1), [A]),
    "diagonal_axes": (lambda c: qb.diagonal(c, 0, 1, 2), lambda c: np.diagonal(c, 0, 1, 2), [C]),
    "trace": (lambda a: qb.trace(a), lambda a: np.trace(a), [A]),
    "trace_3d": (lambda c: qb.trace(c, 1, 1, 2), lambda c: np.trace(c, 1, 1, 2), [C]),
    "diag_1d": (lambda v: qb.diag(v), lambda v: np.diag(v), [V]),
    "diag_1d_k": (lambda v: qb.diag(v, 2), lambda v: np.diag(v, 2), [V]),
    "diag_1d_negative_k": (lambda v: qb.diag(v, -1), lambda v: np.diag(v, -1), [V]),
    "diag_2d": (lambda a: qb.diag(a, 1), lambda a: np.diag(a, 1), [A]),
    "outer": (lambda v, p: qb.outer(v, p), lambda v, p: np.outer(v, p), [V, P]),
    "inner": (lambda a, p: qb.inner(a, p), lambda a, p: np.inner(a, p), [A, P]),
    "inner_2d": (lambda a, c: qb.inner(a, c), lambda a, c: np.inner(a, c), [A, C]),
    "tensordot_1": (lambda a, b: qb.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1), [A, B]),
    "tensordot_pairs": (lambda c, a: qb.tensordot(c, a, axes=([1, 2], [0, 1])),
                        lambda c, a: np.tensordot(c, a, axes=([1, 2], [0, 1])), [C, A]),
    "tensordot_0": (lambda v, p: qb.tensordot(v, p, 0), lambda v, p: np.tensordot(v, p, 0), [V, P]),
    "kron": (lambda a, b: qb.kron(a, b), lambda a, b: np.kron(a, b), [A, B]),
    "kron_ranks": (lambda v, a: qb.kron(v, a), lambda v, a: np.kron(v, a), [V, A]),
    "cross": (lambda v, w: qb.cross(v, w), lambda v, w: np.cross(v, w), [V3, W3]),
    "cross_axis0": (lambda v, w: qb.cross(v.T, w.T, axis=0), lambda v, w: np.cross(v.T, w.T, axis=0), [V3, W3]),
    "cross_2d": (lambda v, w: qb.cross(v[:, :2], w[:, :2]), lambda v, w: np.cross(v[:, :2], w[:, :2]), [V3, W3]),
    "cross_2_3": (lambda v, w: qb.cross(v[:, :2], w), lambda v, w: np.cross(v[:, :2], w), [V3, W3]),
    "diff": (lambda v: qb.diff(v), lambda v: np.diff(v), [V]),
    "diff_2": (lambda a: qb.diff(a, 2, axis=1), lambda a: np.diff(a, 2, axis=1), [A]),
    "diff_prepend": (lambda v: qb.diff(v, prepend=0.5, append=V[:2]),
                     lambda v: np.diff(v, prepend=0.5, append=V[:2]), [V]),
    "gradient": (lambda v: qb.gradient(v, 0.5), lambda v: np.gradient(v, 0.5), [V]),
    "gradient_axis": (lambda a: qb.gradient(a, axis=1), lambda a: np.gradient(a, axis=1), [A]),
    "gradient_two": (lambda a: qb.gradient(a[:2, :], axis=0), lambda a: np.gradient(a[:2, :], axis=0), [A]),
    "gradient_all": (lambda a: qb.stack(qb.gradient(a, 0.5, 2.0)), lambda a: np.stack(np.gradient(a, 0.5, 2.0)), [A]),
    "trapezoid": (lambda v: qb.trapezoid(v, dx=0.5), lambda v: np.trapezoid(v, dx=0.5), [V]),
    "trapezoid_x": (lambda a, p: qb.trapezoid(a, p, axis=1), lambda a, p: np.trapezoid(a, p, axis=1), [A, np.cumsum(np.abs(P))]),
    "interp": (lambda x, fp: qb.interp(x, qb.array(XP), fp), lambda x, fp: np.interp(x, XP, fp), [XQ, FP]),
    "interp_xp": (lambda xp: qb.interp(qb.array(XQ), xp, qb.array(FP)), lambda xp: np.interp(XQ, xp, FP), [XP]),
    "interp_left_right": (lambda x: qb.interp(x, qb.array(XP), qb.array(FP), left=-7.0, right=9.0),
                          lambda x: np.interp(x, XP, FP, left=-7.0, right=9.0), [XQ]),
    "cumprod": (lambda a: qb.cumprod(a, axis=1), lambda a: np.cumprod(a, axis=1), [A]),
    "cumprod_flat": (lambda a: qb.cumprod(a), lambda a: np.cumprod(a), [A]),
    "cumprod_zero": (lambda v: qb.cumprod(v * qb.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])),
                     lambda v: np.cumprod(v * np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])), [V]),
    "cumprod_reverse": (lambda c: qb.cumprod(c, axis=0, reverse=True),
                        lambda c: np.flip(np.cumprod(np.flip(c, 0), axis=0), 0), [C]),
    "cummax": (lambda a: qb.cummax(a, axis=0), lambda a: np.maximum.accumulate(a, axis=0), [A]),
    "cummin": (lambda v: qb.cummin(v), lambda v: np.minimum.accumulate(v), [V]),
    "polyval": (lambda p, v: qb.polyval(p, v), lambda p, v: np.polyval(p, v), [P, V]),
    "vander": (lambda v: qb.vander(v, 4), lambda v: np.vander(v, 4), [V]),
    "vander_increasing": (lambda v: qb.vander(v, increasing=True), lambda v: np.vander(v, increasing=True), [V]),
    "einsum_matmul": (lambda a, b: qb.einsum("ij,jk->ik", a, b), lambda a, b: np.einsum("ij,jk->ik", a, b), [A, B]),
    "einsum_implicit": (lambda a, b: qb.einsum("ij,jk", a, b), lambda a, b: np.einsum("ij,jk", a, b), [A, B]),
    "einsum_batched": (lambda c, d: qb.einsum("bij,bjk->bik", c, d), lambda c, d: np.einsum("bij,bjk->bik", c, d),
                       [C, D]),
    "einsum_trace": (lambda s: qb.einsum("ii->", s), lambda s: np.einsum("ii->", s), [S]),
    "einsum_diag": (lambda s: qb.einsum("ii->i", s), lambda s: np.einsum("ii->i", s), [S]),
    "einsum_transpose_sum": (lambda c: qb.einsum("ijk->kj", c), lambda c: np.einsum("ijk->kj", c), [C]),
    "einsum_outer": (lambda v, p: qb.einsum("i,j->ji", v, p), lambda v, p: np.einsum("i,j->ji", v, p), [V, P]),
    "einsum_ellipsis": (lambda e, c: qb.einsum("...ij,...jk->...ik", e, qb.swapaxes(c, 1, 2)),
                        lambda e, c: np.einsum("...ij,...jk->...ik", e, np.swapaxes(c, 1, 2)), [E, C]),
    "einsum_chain": (lambda a, b, d: qb.einsum("ij,jk,lmk->ilm", a, b[:, :2], d),
                     lambda a, b, d: np.einsum("ij,jk,lmk->ilm", a, b[:, :2], d), [A, B, D]),
    "einsum_rowdot": (lambda a: qb.einsum("ij,ij->i", a, a), lambda a: np.einsum("ij,ij->i", a, a), [A]),
    "einsum_pinn": (lambda c, s: qb.einsum("bij,jk,bik->b", c, s, c),
                    lambda c, s: np.einsum("bij,jk,bik->b", c, s, c), [C, S]),
    "pad_constant": (lambda a: qb.pad(a, ((1, 2), (0, 3)), constant_values=1.5),
                     lambda a: np.pad(a, ((1, 2), (0, 3)), constant_values=1.5), [A]),
    "pad_edge": (lambda a: qb.pad(a, 2, mode="edge"), lambda a: np.pad(a, 2, mode="edge"), [A]),
    "pad_reflect": (lambda a: qb.pad(a, (2, 1), mode="reflect"), lambda a: np.pad(a, (2, 1), mode="reflect"), [A]),
    "pad_symmetric": (lambda a: qb.pad(a, ((3, 0), (4, 2)), mode="symmetric"),
                      lambda a: np.pad(a, ((3, 0), (4, 2)), mode="symmetric"), [A]),
    "pad_wrap": (lambda a: qb.pad(a, ((1, 3), (4, 4)), mode="wrap"),
                 lambda a: np.pad(a, ((1, 3), (4, 4)), mode="wrap"), [A]),
}

if not hasattr(np, "trapezoid"):  # NumPy < 2.0
    np.trapezoid = np.trapz


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_numpy_eager_and_under_jit(name):
    fq, fn, args = CASES[name]
    want = fn(*args)
    got = fq(*[qb.array(a) for a in args])
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(qb.jit(fq)(*[qb.array(a) for a in args]).numpy(), got.numpy())


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_central_differences(name):
    fq, _, args = CASES[name]
    w = RNG.normal(size=np.shape(fq(*[qb.array(a) for a in args])))

    def loss(*xs):
        return qb.sum(fq(*xs) * qb.array(w))

    grads = qb.grad(loss, argnums=tuple(range(len(args))))(*[qb.array(a) for a in args])
    h = 1e-6
    for k, a in enumerate(args):
        fd = np.zeros_like(a)
        for i in range(a.size):
            plus, minus = [x.copy() for x in args], [x.copy() for x in args]
            plus[k].flat[i] += h
            minus[k].flat[i] -= h
            fd.flat[i] = (float(loss(*map(qb.array, plus))) - float(loss(*map(qb.array, minus)))) / (2 * h)
        np.testing.assert_allclose(grads[k].numpy(), fd, rtol=1e-6, atol=1e-7, err_msg=f"{name} argument {k}")


@pytest.mark.parametrize("name", ["roll", "tile", "repeat", "diagonal", "trace", "kron", "cross", "diff",
                                  "trapezoid", "pad_constant", "pad_reflect", "pad_wrap", "tensordot_1", "einsum_batched",
                                  "einsum_trace", "einsum_pinn", "cumprod", "cummax", "interp"])
def test_vmap_matches_a_loop(name):
    fq, _, args = CASES[name]
    batch = [np.stack([a, 2.0 * a, -a]) for a in args]
    got = qb.vmap(fq)(*[qb.array(b) for b in batch]).numpy()
    for i in range(3):
        np.testing.assert_allclose(got[i], fq(*[qb.array(b[i]) for b in batch]).numpy(), rtol=1e-13, atol=1e-13)


def test_constant_pad_is_one_op_for_every_dtype_and_a_traced_value():
    x = np.arange(12).reshape(3, 4)
    for dtype in (np.int32, np.float32, np.bool_):
        got = qb.pad(qb.array(x.astype(dtype)), ((2, 0), (1, 3)), constant_values=1)
        np.testing.assert_array_equal(got.numpy(), np.pad(x.astype(dtype), ((2, 0), (1, 3)), constant_values=1))
    text = qb.jit(lambda a: qb.pad(a, 1)).lower(qb.array(A)).as_text()
    assert text.count("= pad(") == 1 and "concat" not in text
    # The pad value may be traced: its derivative counts the padded cells.
    g = qb.grad(lambda c: qb.sum(qb.pad(qb.array(A), ((1, 2), (3, 0)), constant_values=c) ** 2))(qb.asarray(0.5))
    cells = (A.shape[0] + 3) * (A.shape[1] + 3) - A.size
    np.testing.assert_allclose(float(g), 2 * 0.5 * cells)
    assert qb.pad(qb.array(A), 0) is not None and qb.pad(qb.array(A), 0).shape == A.shape


def test_identity_and_float32():
    np.testing.assert_array_equal(qb.identity(3).numpy(), np.eye(3))
    a32 = qb.array(A, dtype=qb.float32)
    for f in (lambda a: qb.roll(a, 1, 0), lambda a: qb.pad(a, 1, mode="reflect"), lambda a: qb.kron(a, a),
              lambda a: qb.diff(a, prepend=0.0, axis=0), lambda a: qb.trapezoid(a)):
        assert f(a32).dtype == qb.float32


@pytest.mark.parametrize("call,exc,match", [
    (lambda: qb.pad(qb.ones(3), 3, mode="reflect"), ValueError, "pads at most 2"),
    (lambda: qb.pad(qb.ones(3), 1, mode="median"), ValueError, "mode must be one of"),
    (lambda: qb.pad(qb.ones(3), -1), ValueError, "non-negative"),
    (lambda: qb.tile(qb.ones(3), -1), ValueError, "non-negative"),  # (0 gives an empty axis, as NumPy)
    (lambda: qb.repeat(qb.ones(3), [1, 2]), ValueError, "2 repeats for an axis of length 3"),
    (lambda: qb.diagonal(qb.ones(3)), ValueError, "at least 2 dimensions"),
    (lambda: qb.cross(qb.ones(4), qb.ones(4)), ValueError, "2 or 3 components"),
    (lambda: qb.tensordot(qb.ones((2, 3)), qb.ones((2, 3)), 1), ValueError, "differ in length"),
    (lambda: qb.diff(qb.ones(2), -1), ValueError, "non-negative"),  # (n past the axis: empty, as NumPy)
    (lambda: qb.roll(qb.ones(3), 1.5), TypeError, "shift must be a Python int"),
    (lambda: qb.moveaxis(qb.ones((2, 3)), 0, 5), ValueError, "out of range"),
    (lambda: qb.einsum("ij,jk->ik", qb.ones((2, 3)), qb.ones((4, 2))), ValueError, "sizes 3 and 4"),
    (lambda: qb.interp(qb.ones(2), qb.array([1.0, 0.0]), qb.ones(2)), ValueError, "strictly increasing"),
    (lambda: qb.interp(qb.ones(2), qb.ones(3), qb.ones(2)), ValueError, "same length"),
    (lambda: qb.einsum("ij->iz", qb.ones((2, 3))), ValueError, "appears in no input"),
    (lambda: qb.einsum("ijk", qb.ones((2, 3))), ValueError, "name 3 axes of an operand of rank 2"),
    (lambda: qb.einsum("ij,j", qb.ones((2, 3))), ValueError, "2 operand subscripts for 1 operands"),
])
def test_bad_arguments_raise_naming_the_function(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_array_methods_of_the_compositions():
    a = qb.array(A)
    np.testing.assert_array_equal(a.diagonal(1).numpy(), A.diagonal(1))
    assert float(a.trace()) == pytest.approx(A.trace(), rel=1e-15)
    np.testing.assert_array_equal(a.repeat(2, axis=0).numpy(), A.repeat(2, axis=0))
    np.testing.assert_array_equal(a.swapaxes(0, 1).numpy(), A.swapaxes(0, 1))
