"""The op table shared by test_autodiff.py and test_vmap.py.

Every op of src/quabla/ir/ops.def (parsed at test time) has an entry here: a small function
of float64 arrays on a safe domain that reaches the op through the public API. A test
asserts the table covers ops.def exactly, so an op added later without an entry (and thus
without derivative and batching tests) fails the suite; another asserts each entry's traced
program really contains its op.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

import quabla as qb

ROOT = Path(__file__).resolve().parents[2]
OPS_DEF = ROOT / "src" / "quabla" / "ir" / "ops.def"


def ops_in_def() -> list:
    """The text names of every QB_OP line of ops.def, in order."""
    text = OPS_DEF.read_text()
    names = re.findall(r'^\s*QB_OP\(\s*\w+\s*,\s*"([^"]+)"', text, flags=re.M)
    assert names, "no QB_OP lines found in ops.def"
    return names


@dataclass
class Case:
    op: str
    fn: Callable
    specs: Sequence  # one (shape, lo, hi) per argument (uniform on [lo, hi])
    # Ops that must appear in the traced program ("= name("); defaults to (op,).
    ops: Optional[tuple] = None
    # When finite differences cannot see the derivative (stop_gradient, f32 round trips):
    # the exact Jacobian from the NumPy arguments, shape (out.size, sum(in.size)).
    exact_jac: Optional[Callable] = None
    bool_op: bool = False  # the op yields bools; it is exercised through qb.where
    forward_only: bool = False  # no reverse mode (while): test_control_flow checks the error
    reverse_only: bool = False  # no forward mode (custom_vjp): test_custom_vjp checks the error
    pred: Optional[Callable] = None  # for bool ops: the bool-valued function itself
    # The device backends whose tables run it (host calls run on the CPU only; MLX has no
    # complex numbers; eig has no device kernel yet).
    runs_on: tuple = ("cuda", "mlx")
    extra: dict = field(default_factory=dict)

    @property
    def nargs(self) -> int:
        return len(self.specs)

    def np_args(self, salt: int = 0) -> list:
        rng = np.random.default_rng(zlib.crc32(self.op.encode()) + 7919 * salt)
        return [rng.uniform(lo, hi, size=shape) for shape, lo, hi in self.specs]

    def args(self, salt: int = 0) -> list:
        return [qb.array(a) for a in self.np_args(salt)]

    def __repr__(self):
        return self.op


S = (3, 4)  # the default argument shape
C34 = np.linspace(-1.0, 1.5, 12).reshape(3, 4)
C234 = np.linspace(0.5, 2.0, 24).reshape(2, 3, 4)


def _pad_via_slice_grad(x):
    # The gradient of a strided slice is a pad (the transpose of slice).
    return qb.grad(lambda z: qb.sum(qb.sin(z[1:, ::2]) * qb.cos(z[1:, ::2])))(x) * x


def _stop_gradient_jac(x):
    return np.diag((x + np.cos(x)).ravel())


def _convert_jac(x):
    return np.diag((2.0 + (x > 0)).ravel())


@qb.custom_jvp
def _softplus_custom(x):
    return qb.log(1.0 + qb.exp(x))


@_softplus_custom.defjvp
def _softplus_custom_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softplus_custom(x), t * qb.sigmoid(x)


@qb.custom_vjp
def _cube_custom(x):
    return x * x * x


_cube_custom.defvjp(lambda x: (_cube_custom(x), x), lambda x, g: (3.0 * x * x * g,))


@qb.custom_jvp
def _sin_on_host(x):
    # NumPy's sin through a host call; its derivative from the custom rule (host calls have none).
    return qb.pure_callback(np.sin, qb.ShapeDtype(x.shape, x.dtype), x, vmap_method="broadcast_all")


@_sin_on_host.defjvp
def _sin_on_host_jvp(primals, tangents):
    return _sin_on_host(primals[0]), qb.cos(primals[0]) * tangents[0]


def _linear_solve_case(x, y):
    # x + 3 I solved by a dense factorization behind qb.custom_linear_solve: derivatives
    # in both x (through matvec) and y (the right-hand side) come from the op's own rules.
    a = x + 3.0 * qb.eye(3)
    return qb.custom_linear_solve(lambda v: a @ v, y, lambda mv, r: qb.linalg.solve(a, r),
                                  transpose_solve=lambda vm, r: qb.linalg.solve(a.T, r))


CASES = [
    # Leaves
    Case("parameter", lambda x: x, [(S, -2, 2)], ops=()),
    Case("constant", lambda x: x * qb.array(C34) + 2.5, [(S, -2, 2)]),
    # Unary float -> float
    Case("neg", lambda x: -qb.sin(x), [(S, -2, 2)]),
    Case("abs", lambda x: qb.abs(x) * x, [(S, -2, 2)]),
    Case("sign", lambda x: qb.sign(x) * qb.sin(x), [(S, -2, 2)]),
    Case("floor", lambda x: qb.floor(3.0 * x) * x, [(S, -2, 2)]),
    Case("ceil", lambda x: qb.ceil(3.0 * x) * x, [(S, -2, 2)]),
    Case("round", lambda x: qb.round(3.0 * x) * x, [(S, -2, 2)]),
    Case("sqrt", qb.sqrt, [(S, 0.2, 3)]),
    Case("cbrt", qb.cbrt, [(S, 0.3, 3)]),
    Case("exp", qb.exp, [(S, -2, 2)]),
    Case("exp2", qb.exp2, [(S, -2, 2)]),
    Case("expm1", qb.expm1, [(S, -2, 2)]),
    Case("log", qb.log, [(S, 0.3, 3)]),
    Case("log2", qb.log2, [(S, 0.3, 3)]),
    Case("log10", qb.log10, [(S, 0.3, 3)]),
    Case("log1p", qb.log1p, [(S, -0.5, 2)]),
    Case("sin", qb.sin, [(S, -3, 3)]),
    Case("cos", qb.cos, [(S, -3, 3)]),
    Case("tan", qb.tan, [(S, -1.2, 1.2)]),
    Case("asin", qb.arcsin, [(S, -0.9, 0.9)]),
    Case("acos", qb.arccos, [(S, -0.9, 0.9)]),
    Case("atan", qb.arctan, [(S, -3, 3)]),
    Case("sinh", qb.sinh, [(S, -2, 2)]),
    Case("cosh", qb.cosh, [(S, -2, 2)]),
    Case("tanh", qb.tanh, [(S, -2, 2)]),
    Case("asinh", qb.arcsinh, [(S, -3, 3)]),
    Case("acosh", qb.arccosh, [(S, 1.2, 3)]),
    Case("atanh", qb.arctanh, [(S, -0.9, 0.9)]),
    Case("erf", qb.erf, [(S, -2, 2)]),
    Case("erfc", qb.erfc, [(S, -2, 2)]),
    Case("erf_inv", qb.lax.erf_inv, [(S, -0.9, 0.9)]),
    Case("logistic", qb.sigmoid, [(S, -4, 4)]),
    Case("softplus", qb.softplus, [(S, -4, 4)]),
    Case("silu", qb.silu, [(S, -4, 4)]),
    Case("gelu_tanh", lambda x: qb.gelu(x, approximate=True), [(S, -4, 4)]),
    Case("stop_gradient", lambda x: qb.stop_gradient(x) * x + qb.sin(x), [(S, -2, 2)],
         exact_jac=_stop_gradient_jac),
    # Unary float -> bool
    Case("is_nan", lambda x: qb.where(qb.isnan(x), 0.0, x * x), [(S, -2, 2)], bool_op=True, pred=qb.isnan),
    Case("is_inf", lambda x: qb.where(qb.isinf(x), 0.0, qb.sin(x)), [(S, -2, 2)], bool_op=True, pred=qb.isinf),
    Case("is_finite", lambda x: qb.where(qb.isfinite(x), qb.exp(x), 0.0), [(S, -2, 2)], bool_op=True,
         pred=qb.isfinite),
    # Unary bool -> bool
    Case("not", lambda x: qb.where(qb.logical_not(x > 0.0), qb.sin(x), x * x), [(S, -2, 2)], bool_op=True,
         pred=lambda x: qb.logical_not(x > 0.0)),
    # Binary float x float -> float
    Case("add", lambda x, y: qb.sin(x) + y, [(S, -2, 2), (S, -2, 2)]),
    Case("sub", lambda x, y: x - qb.cos(y), [(S, -2, 2), (S, -2, 2)]),
    Case("mul", lambda x, y: x * y, [(S, -2, 2), (S, -2, 2)]),
    Case("div", lambda x, y: x / y, [(S, -2, 2), (S, 0.5, 2)]),
    Case("pow", qb.power, [(S, 0.3, 2), (S, -1.5, 1.5)]),
    Case("atan2", qb.arctan2, [(S, -2, 2), (S, -2, 2)]),
    Case("hypot", qb.hypot, [(S, -2, 2), (S, -2, 2)]),
    Case("rem", qb.fmod, [(S, -3, 3), (S, 0.7, 1.3)]),
    Case("max", qb.maximum, [(S, -2, 2), (S, -2, 2)]),
    Case("min", qb.minimum, [(S, -2, 2), (S, -2, 2)]),
    Case("logaddexp", qb.logaddexp, [(S, -2, 2), (S, -2, 2)]),
    # Binary bool x bool -> bool
    Case("and", lambda x, y: qb.where(qb.logical_and(x > 0.0, y > 0.0), x * y, x - y), [(S, -2, 2), (S, -2, 2)],
         bool_op=True, pred=lambda x, y: qb.logical_and(x > 0.0, y > 0.0)),
    Case("or", lambda x, y: qb.where(qb.logical_or(x > 0.0, y > 0.0), x * y, x - y), [(S, -2, 2), (S, -2, 2)],
         bool_op=True, pred=lambda x, y: qb.logical_or(x > 0.0, y > 0.0)),
    # Comparisons
    Case("lt", lambda x, y: qb.where(x < y, x * y, x + y), [(S, -2, 2), (S, -2, 2)], bool_op=True,
         pred=lambda x, y: x < y),
    Case("le", lambda x, y: qb.where(x <= y, qb.sin(x), y * y), [(S, -2, 2), (S, -2, 2)], bool_op=True,
         pred=lambda x, y: x <= y),
    Case("gt", lambda x, y: qb.where(x > y, x * y, x + y), [(S, -2, 2), (S, -2, 2)], bool_op=True,
         pred=lambda x, y: x > y),
    Case("ge", lambda x, y: qb.where(x >= y, qb.exp(x), y), [(S, -2, 2), (S, -2, 2)], bool_op=True,
         pred=lambda x, y: x >= y),
    Case("eq", lambda x, y: qb.where(x == y, x, x * y), [(S, -2, 2), (S, -2, 2)], bool_op=True,
         pred=lambda x, y: x == y),
    Case("ne", lambda x, y: qb.where(x != y, x * y, y), [(S, -2, 2), (S, -2, 2)], bool_op=True,
         pred=lambda x, y: x != y),
    # select
    Case("select", lambda x, y: qb.where(x > 0.0, qb.sin(x) * y, qb.cos(y)), [(S, -2, 2), (S, -2, 2)]),
    # Conversions and data movement
    Case("convert", lambda x: (x.astype(qb.float32) * 2.0).astype(qb.float64) + (x > 0.0).astype(qb.float64) * x,
         [(S, -2, 2)], exact_jac=_convert_jac),
    Case("reshape", lambda x: qb.sin(qb.reshape(x, (2, 6))) * qb.reshape(x, (2, 6)), [(S, -2, 2)]),
    # broadcast_to, and NumPy broadcasting of size-1 axes: (3, 1) * (1, 4)
    Case("broadcast_in_dim", lambda x: qb.sin(qb.broadcast_to(x, (2, 3, 4)) * qb.array(C234)) + x[:, :1] * x[:1, :],
         [(S, -2, 2)]),
    Case("transpose", lambda x: qb.transpose(x) * qb.sin(qb.transpose(x)), [(S, -2, 2)]),
    Case("slice", lambda x: qb.sin(x[1:, ::2]) * x[:2, 1::2] + x[::-2, ::-3] ** 2, [(S, -2, 2)]),
    Case("reverse", lambda x: qb.flip(x, axis=1) * x, [(S, -2, 2)]),
    Case("concat", lambda x, y: qb.concat([x * x, qb.sin(y)], axis=1), [(S, -2, 2), ((3, 2), -2, 2)]),
    Case("pad", _pad_via_slice_grad, [(S, -2, 2)]),
    # Reductions
    Case("reduce_sum", lambda x: qb.sum(x * x, axis=1), [(S, -2, 2)]),
    Case("reduce_prod", lambda x: qb.prod(x, axis=1), [(S, 0.5, 1.5)]),
    Case("reduce_max", lambda x: qb.max(qb.sin(x), axis=1), [(S, -1.5, 1.5)]),
    Case("reduce_min", lambda x: qb.min(x * x, axis=0), [(S, -2, 2)]),
    Case("reduce_any", lambda x: qb.where(qb.any(x > 1.0, axis=1, keepdims=True), x, -x * x), [(S, -2, 2)],
         bool_op=True, pred=lambda x: qb.any(x > 1.0, axis=1)),
    Case("reduce_all", lambda x: qb.where(qb.all(x > -1.0, axis=0, keepdims=True), x * x, qb.sin(x)),
         [(S, -2, 2)], bool_op=True, pred=lambda x: qb.all(x > -1.0, axis=0)),
    Case("cumsum", lambda x: qb.cumsum(x, axis=1) * qb.cumsum(x, axis=0, reverse=True), [(S, -2, 2)]),
    # Static integer indices
    Case("gather", lambda x: qb.gather(x, [2, 0, 2, 3], axis=1) ** 2, [(S, -2, 2)]),
    Case("scatter_add", lambda x, u: qb.scatter_add(x, [0, 2, 0], u * u, axis=1), [(S, -2, 2), ((3, 3), -2, 2)]),
    # Traced integer indices and integer ops (the integer parts carry no derivative)
    Case("xor", lambda x: x * ((x > 0).astype(qb.int32) ^ (x > 1).astype(qb.int32)).astype(qb.float64) + qb.sin(x),
         [(S, -2, 2)]),
    Case("shift_left", lambda x: x * ((x > 0).astype(qb.int32) << 2).astype(qb.float64) + x, [(S, -2, 2)]),
    Case("shift_right", lambda x: x * (((x > 0).astype(qb.int64) * 8) >> 1).astype(qb.float64) + x, [(S, -2, 2)]),
    Case("take", lambda x: x[:, qb.array([3, 0, 3, 1])] ** 2 + qb.take(x, qb.array([[2, 1, 5]]), axis=0, mode="clip")[0],
         [(S, -2, 2)]),
    Case("scatter", lambda x, u: x.at[:, qb.array([0, 2, 0])].add(u * u) * x.at[:, qb.array([1, 3])].set(u[:, :2])
         + x.at[qb.array([1, 2])].max(qb.sin(u[:2, :1])), [(S, -2, 2), ((3, 3), -2, 2)]),
    Case("argsort", lambda x: qb.sort(x, axis=1) * x + qb.sort(x, axis=0, descending=True), [(S, -2, 2)],
         ops=("argsort", "take")),
    # A traced key (its seed computed from x, constant near the point) draws through threefry.
    Case("threefry", lambda x: x * qb.random.uniform(qb.random.key((x[0, 0] > 100.0).astype(qb.int32)), x.shape)
         + qb.sin(x), [(S, -2, 2)]),
    Case("searchsorted", lambda x: x * qb.searchsorted(qb.array([-1.0, 0.0, 1.0]), x).astype(qb.float64),
         [(S, -2, 2)]),
    # Custom derivative rules: the rule (exact here) is what the transforms use
    Case("custom_jvp", lambda x: _softplus_custom(x * x) * qb.sin(x), [(S, -2, 2)]),
    # custom_vjp's reverse mode is a custom_vjp_lin node, transposed by running bwd
    Case("custom_vjp", lambda x: _cube_custom(qb.sin(x)) + x, [(S, -2, 2)], reverse_only=True),
    Case("custom_vjp_lin", lambda x: qb.grad(lambda z: qb.sum(_cube_custom(z * z)))(x) * x, [(S, -2, 2)],
         reverse_only=True, ops=()),  # the lin node lives only inside the vjp transform
    Case("linear_solve", _linear_solve_case, [((3, 3), -1, 1), ((3, 2), -2, 2)]),
    Case("checkpoint", lambda x: qb.checkpoint(lambda z: qb.sin(z) * z)(x) * x + x, [(S, -2, 2)]),
    Case("host_call", lambda x: _sin_on_host(x * x) * x, [(S, -2, 2)], runs_on=()),
    # Collectives over a named vmap axis: the vmap of the axis computes them, so the traced
    # program holds reductions, transposes and iotas instead (ops=()).
    Case("named_axis", lambda x: qb.vmap(lambda r: r * qb.lax.psum(qb.sin(r), "i") + qb.lax.all_gather(r * r, "i")[0]
                                         * qb.lax.axis_index("i") + qb.lax.ppermute(r, "i", [(0, 2), (2, 1), (1, 0)])
                                         + qb.lax.pmax(r, "i"), axis_name="i")(x), [(S, -2, 2)], ops=()),
    # Complex numbers (real functions of real arguments through complex intermediates; MLX
    # refuses complex programs)
    Case("real", lambda x: qb.real(qb.exp(1j * x) * (x + 2j)), [(S, -2, 2)], runs_on=("cuda",)),
    Case("imag", lambda x: qb.imag(qb.sin(x * (1 + 0.5j)) * x), [(S, -2, 2)], runs_on=("cuda",)),
    Case("conj", lambda x: qb.imag(qb.conj(qb.exp(1j * x)) * (x - 1j)), [(S, -2, 2)], runs_on=("cuda",)),
    Case("complex", lambda x, y: qb.real(qb.lax.complex(x, y) * qb.lax.complex(y * y, x)), [(S, -2, 2), (S, -2, 2)],
         runs_on=("cuda",)),
    Case("fft", lambda x: qb.real(qb.fft.fft(x * (1 + 0.5j))) * x + qb.imag(qb.fft.ifft(x * x, axis=0)),
         [(S, -2, 2)], runs_on=("cuda",)),
    # Products
    Case("matmul", lambda x, y: x @ y + qb.reshape(x @ y[:, 0], (3, 1)) * (x[0] @ y), [(S, -2, 2), ((4, 2), -2, 2)]),
    # Dense linear algebra on well-conditioned matrices built from the arguments.
    Case("cholesky", lambda x: qb.linalg.cholesky(x @ x.T + 3.0 * qb.eye(3)), [((3, 3), -1, 1)]),
    Case("triangular_solve", lambda x, y: qb.linalg.solve_triangular(x + 3.0 * qb.eye(3), y, lower=True)
         + qb.linalg.solve_triangular(x + 3.0 * qb.eye(3), y, trans=1, unit_diagonal=True),
         [((3, 3), -1, 1), ((3, 2), -2, 2)]),
    Case("solve", lambda x, y: qb.linalg.solve(x + 3.0 * qb.eye(3), y), [((3, 3), -1, 1), ((3, 2), -2, 2)]),
    Case("slogdet", lambda x: qb.linalg.slogdet(x + 3.0 * qb.eye(3))[1] * x, [((3, 3), -1, 1)]),
    Case("svd", lambda x: (lambda r: r.S * 2.0 + r.U[0] ** 2 + r.Vh[:, 0] ** 2)(qb.linalg.svd(
        x + qb.array(np.array([[3.0, 0.0, 0.0], [0.0, 1.5, 0.0], [0.0, 0.0, 0.5], [0.0, 0.0, 0.0]])), full_matrices=False)),
         [((4, 3), -0.2, 0.2)]),
    Case("qr", lambda x: (lambda r: r.Q * 2.0 + r.R[0] ** 2)(qb.linalg.qr(x + qb.array(np.eye(4, 3) * 2.0))),
         [((4, 3), -1, 1)]),
    Case("lu", lambda x: (lambda r: r[1] * 2.0 + r[2] ** 2)(qb.linalg.lu(x + qb.array(np.diag([0.5, -2.0, 1.0])))),
         [((3, 3), -1, 1)]),
    Case("eigh", lambda x: (lambda r: r.eigenvalues * 2.0 + r.eigenvectors[0] ** 2)(
        qb.linalg.eigh(x + x.T + qb.array(np.diag([0.0, 4.0, 8.0])))), [((3, 3), -1, 1)]),
    # A general matrix with a complex pair (1 +- 2i) and a real eigenvalue (5), well apart: the
    # eigenvalues' and the normalised eigenvectors' derivatives (complex results, real outputs).
    Case("eig", lambda x: (lambda r: qb.real(r.eigenvalues) * 2.0 + qb.imag(r.eigenvalues) ** 2
                           + qb.real(r.eigenvectors[0]) * qb.imag(r.eigenvectors[1]) + qb.abs(r.eigenvectors[2]))(
        qb.linalg.eig(x + qb.array(np.array([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 5.0]])))),
         [((3, 3), -0.3, 0.3)], runs_on=()),
    # Control flow (regions). Both branches of cond are taken (one per call); under vmap the
    # predicates are per example. The while loop runs 2 or 3 steps depending on the data.
    Case("cond", lambda x: qb.cond(qb.max(x) > -5.0, lambda a: qb.sin(a) * a, lambda a: qb.cos(a) * 2.0, x)
         + qb.cond(qb.min(x) > 5.0, lambda a: a * a, lambda a: qb.exp(a) * a[0], x), [(S, -2, 2)]),
    Case("scan", lambda x, y: (lambda c, ys: ys * c + y[0])(*qb.scan(lambda c, r: (qb.tanh(c * r + y[1]), qb.sin(c) * r),
                                                                       x[0], x)),
         [(S, -2, 2), ((3, 4), -1, 1)]),
    Case("while", lambda x: qb.while_loop(lambda c: c[0] < 2.0 + (qb.max(x) > 0.0),
                                          lambda c: (c[0] + 1.0, qb.sin(c[1]) * 1.5 + x), (qb.asarray(0.0), x))[1],
         [(S, -2, 2)], forward_only=True),
]

CASE_BY_OP = {}
for _c in CASES:
    assert _c.op not in CASE_BY_OP, f"duplicate op table entry {_c.op}"
    CASE_BY_OP[_c.op] = _c


def traced_text(case: Case, args) -> str:
    return qb.jit(case.fn).lower(*args).as_text()


def stack_np(results) -> np.ndarray:
    return np.stack([np.asarray(r) for r in results])
