"""Quabla v0.1's 2D API, without warnings: ``Matrix`` (an eager float64 matrix),
``TraceGraph``/``TraceMatrix`` (a recorded 2D program), and the transforms over it
(``grad``, ``grad_fn``, ``jvp_fn``, ``jit``, ...), all taking ``(name, (rows, cols))`` input
specs and dicts of matrices keyed by input name (docs/migration.md).

Thin over the core: a Matrix holds a float64 ``qb`` array; a TraceGraph records nodes (for
``describe``/``ir``/``lower_text``) and is evaluated by replaying them as core operations,
which ``qb.jit``, ``qb.vjp`` and ``qb.jvp`` compile and differentiate.
"""
from __future__ import annotations

from numbers import Real
from typing import Callable, Dict, List, Optional, Tuple

from .. import _core

__all__ = ["Matrix", "TraceGraph", "TraceMatrix", "TraceResult", "CpuExecutionPlan", "GradFunction",
           "GradScalarFunction", "GradScalarTransform", "JacobianFunction", "JacobiansFunction", "JitFunction",
           "JitTransform", "JvpFunction", "ValueAndGradFunction", "VjpFunction", "trace", "grad", "grad_fn",
           "grad_scalar", "grad_scalar_fn", "value_and_grad_fn", "vjp_fn", "jacobian_fn", "jacobians_fn", "jvp_fn",
           "jit", "where", "concat"]

_F64 = _core.float64


def _shape_str(shape) -> str:
    return f"({shape[0]}, {shape[1]})"


def _is_number(x) -> bool:
    return isinstance(x, Real)  # bools included, as v0.1's numeric scalars


def _broadcast_shape(a, b, op: str):
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"incompatible {op} shapes: {_shape_str(a)} {op} {_shape_str(b)}")
        out.append(max(x, y) if x != 0 and y != 0 else 0)
    return tuple(out)


def _axis_shape(shape, axis):
    if axis is None:
        return (1, 1)
    if axis == 0:
        return (1, shape[1])
    if axis == 1:
        return (shape[0], 1)
    raise ValueError(f"axis must be 0 or 1, got {axis}")


# ---- Matrix ---------------------------------------------------------------------------------

class Matrix:
    """An eager 2D float64 matrix: ``Matrix([[1.0, 2.0], [3.0, 4.0]])``."""

    __slots__ = ("_a",)

    def __init__(self, rows):
        if isinstance(rows, _core.Array):
            a = rows.astype(_F64)
            if a.ndim != 2:
                raise ValueError(f"Matrix: expected a 2D array, got shape {list(a.shape)}")
            self._a = a
            return
        if not isinstance(rows, (list, tuple)) or not all(isinstance(r, (list, tuple)) for r in rows):
            raise TypeError("Matrix expects a list of rows (lists of numbers)")
        if len({len(r) for r in rows}) > 1:
            raise ValueError("ragged matrix rows are not supported")
        cols = len(rows[0]) if rows else 0
        flat = [float(v) for r in rows for v in r]
        self._a = _core.reshape(_core.asarray(flat, dtype=_F64), (len(rows), cols))

    @property
    def shape(self) -> Tuple[int, int]:
        return tuple(self._a.shape)

    def to_list(self) -> List[List[float]]:
        return self._a.tolist()

    def numpy(self):
        return self._a.numpy()

    def __array__(self, dtype=None, copy=None):
        return self._a.__array__(dtype)

    @property
    def T(self) -> "Matrix":
        return Matrix(_core.transpose(self._a))

    def transpose(self) -> "Matrix":
        return self.T

    def reshape(self, rows: int, cols: int) -> "Matrix":
        n = self.shape[0] * self.shape[1]
        if rows * cols != n or rows < 0 or cols < 0:
            raise ValueError(f"cannot reshape matrix with {n} elements to ({rows}, {cols})")
        return Matrix(_core.reshape(self._a, (rows, cols)))

    def sum(self, axis=None) -> "Matrix":
        shape = _axis_shape(self.shape, axis)
        return Matrix(_core.reshape(_core.sum(self._a, axis=axis), shape))

    def mean(self, axis=None) -> "Matrix":
        shape = _axis_shape(self.shape, axis)
        return Matrix(_core.reshape(_core.mean(self._a, axis=axis), shape))

    def _operand(self, other, what="operand") -> _core.Array:
        if isinstance(other, Matrix):
            return other._a
        if _is_number(other):
            return _core.full((1, 1), float(other), dtype=_F64)
        raise TypeError(f"expected Matrix or numeric scalar {what}")

    def _binary(self, other, op, fn, what="operand"):
        b = self._operand(other, what)
        _broadcast_shape(self.shape, tuple(b.shape), op)
        return Matrix(fn(self._a, b))

    def add(self, other):
        return self._binary(other, "+", _core.add)

    def sub(self, other):
        return self._binary(other, "-", _core.subtract)

    def mul(self, other):
        return self._binary(other, "*", _core.multiply)

    __add__, __sub__, __mul__ = add, sub, mul

    def __radd__(self, other):
        if not _is_number(other):
            return NotImplemented
        return self.add(other)

    def __rmul__(self, other):
        if not _is_number(other):
            return NotImplemented
        return self.mul(other)

    def __rsub__(self, other):
        if not _is_number(other):
            return NotImplemented
        return Matrix(_core.subtract(self._operand(other), self._a))

    def __neg__(self):
        return Matrix(_core.negative(self._a))

    def __truediv__(self, other):
        if _is_number(other):
            if float(other) == 0.0:
                raise ValueError("division by zero scalar is not supported")
        elif isinstance(other, Matrix):
            if bool(_core.any(other._a == 0.0).item()):
                raise ValueError("division by zero is not supported")
        return self._binary(other, "/", _core.divide, "divisor")

    def __pow__(self, p, modulo=None):
        if modulo is not None:
            raise TypeError("modulo argument is not supported for Matrix power")
        if isinstance(p, bool) or not isinstance(p, Real):
            raise TypeError("expected numeric scalar exponent")
        if isinstance(p, int) and p >= 0:
            out = _core.ones(self.shape, dtype=_F64)
            for _ in range(p):
                out = out * self._a
            return Matrix(out)
        return Matrix(_core.power(self._a, float(p)))

    def gt(self, other) -> "Matrix":
        return self._binary(other, "gt", lambda a, b: (a > b).astype(_F64))

    def matmul(self, other) -> "Matrix":
        if not isinstance(other, Matrix):
            raise TypeError("expected Matrix operand")
        if self.shape[1] != other.shape[0]:
            raise ValueError(f"incompatible matmul shapes: {_shape_str(self.shape)} x {_shape_str(other.shape)}")
        return Matrix(_core.matmul(self._a, other._a))

    __matmul__ = matmul

    def tanh(self):
        return Matrix(_core.tanh(self._a))

    def exp(self):
        return Matrix(_core.exp(self._a))

    def log(self):
        return Matrix(_core.log(self._a))

    def sqrt(self):
        return Matrix(_core.sqrt(self._a))

    def sin(self):
        return Matrix(_core.sin(self._a))

    def cos(self):
        return Matrix(_core.cos(self._a))

    def __repr__(self):
        return f"Matrix(shape={_shape_str(self.shape)})"


def where(mask, on_true, on_false):
    """where(mask, a, b) of three Matrix (mask nonzero -> a) or three TraceMatrix."""
    if all(isinstance(m, TraceMatrix) for m in (mask, on_true, on_false)):
        if on_true._graph is not mask._graph or on_false._graph is not mask._graph:
            raise ValueError("trace where operands must belong to the same trace graph")
        return mask._graph._node("where", [mask, on_true, on_false],
                                 _broadcast_shape(_broadcast_shape(mask.shape, on_true.shape, "where"), on_false.shape,
                                                  "where"))
    if not all(isinstance(m, Matrix) for m in (mask, on_true, on_false)):
        raise TypeError("where expects three Matrix or three TraceMatrix operands")
    _broadcast_shape(_broadcast_shape(mask.shape, on_true.shape, "where"), on_false.shape, "where")
    return Matrix(_core.where(mask._a != 0.0, on_true._a, on_false._a))


def concat(matrices, axis):
    """concat([m, ...], axis) of Matrix (or of TraceMatrix of one graph), axis 0 or 1."""
    items = list(matrices)
    if not items:
        raise ValueError("concat requires at least one matrix")
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 or 1, got {axis}")
    other = 1 - axis
    if len({m.shape[other] for m in items}) > 1:
        raise ValueError(f"concat axis {axis} requires matching {'column' if axis == 0 else 'row'} counts")
    if all(isinstance(m, TraceMatrix) for m in items):
        g = items[0]._graph
        if any(m._graph is not g for m in items):
            raise ValueError("trace concat operands must belong to the same trace graph")
        shape = [items[0].shape[0], items[0].shape[1]]
        shape[axis] = sum(m.shape[axis] for m in items)
        return g._node("concat", items, tuple(shape), {"axis": axis})
    if not all(isinstance(m, Matrix) for m in items):
        raise TypeError("concat expects a sequence containing only Matrix or only TraceMatrix operands")
    return Matrix(_core.concatenate([m._a for m in items], axis=axis))


# ---- TraceGraph / TraceMatrix ------------------------------------------------------------

_UNARY = ("tanh", "exp", "log", "sqrt", "sin", "cos")


class TraceMatrix:
    """A matrix-valued node of a TraceGraph: the same arithmetic as Matrix, recorded."""

    __slots__ = ("_graph", "node_id", "shape")

    def __init__(self, graph: "TraceGraph", node_id: int, shape):
        self._graph, self.node_id, self.shape = graph, node_id, tuple(shape)

    def _operand(self, other) -> "TraceMatrix":
        if isinstance(other, TraceMatrix):
            if other._graph is not self._graph:
                raise ValueError("trace operands must belong to the same trace graph")
            return other
        if _is_number(other):
            return self._graph._node("scalar_constant", [], self.shape, {"value": float(other)})
        raise TypeError("expected TraceMatrix or numeric scalar operand")

    def _binary(self, op, sym, other, reverse=False):
        b = self._operand(other)
        a = self
        if reverse:
            a, b = b, a
        return self._graph._node(op, [a, b], _broadcast_shape(a.shape, b.shape, sym))

    def __add__(self, o):
        return self._binary("add", "+", o)

    def __radd__(self, o):
        return self._binary("add", "+", o, True)

    def __sub__(self, o):
        return self._binary("sub", "-", o)

    def __rsub__(self, o):
        return self._binary("sub", "-", o, True)

    def __mul__(self, o):
        return self._binary("mul", "*", o)

    def __rmul__(self, o):
        return self._binary("mul", "*", o, True)

    def __truediv__(self, o):
        if _is_number(o):
            if float(o) == 0.0:
                raise ValueError("division by zero scalar is not supported")
            return self * (1.0 / float(o))
        return self._binary("div", "/", o)

    def __rtruediv__(self, o):
        return self._binary("div", "/", o, True)

    def __neg__(self):
        return self * -1.0

    def __pow__(self, p, modulo=None):
        if modulo is not None:
            raise TypeError("modulo argument is not supported for TraceMatrix power")
        if isinstance(p, bool) or not isinstance(p, Real):
            raise TypeError("expected numeric scalar exponent")
        if isinstance(p, int) and p >= 0:
            if p == 0:
                return self._graph._node("scalar_constant", [], self.shape, {"value": 1.0})
            out = self
            for _ in range(p - 1):
                out = out * self
            return out
        return self._graph._node("powf", [self], self.shape, {"exponent": float(p)})

    add, sub, mul = __add__, __sub__, __mul__

    def gt(self, o):
        return self._binary("gt", "gt", o)

    def matmul(self, o):
        if not isinstance(o, TraceMatrix):
            raise TypeError("expected TraceMatrix operand")
        if o._graph is not self._graph:
            raise ValueError("trace matmul operands must belong to the same trace graph")
        if self.shape[1] != o.shape[0]:
            raise ValueError(f"incompatible matmul shapes: {_shape_str(self.shape)} x {_shape_str(o.shape)}")
        return self._graph._node("matmul", [self, o], (self.shape[0], o.shape[1]))

    __matmul__ = matmul

    def sum(self, axis=None):
        return self._graph._node("sum", [self], _axis_shape(self.shape, axis), {"axis": axis})

    def mean(self, axis=None):
        return self._graph._node("mean", [self], _axis_shape(self.shape, axis), {"axis": axis})

    @property
    def T(self):
        return self._graph._node("transpose", [self], (self.shape[1], self.shape[0]))

    def transpose(self):
        return self.T

    def reshape(self, rows, cols):
        n = self.shape[0] * self.shape[1]
        if rows * cols != n:
            raise ValueError(f"cannot reshape matrix with {n} elements to ({rows}, {cols})")
        return self._graph._node("reshape", [self], (rows, cols))

    def __repr__(self):
        return f"TraceMatrix(node_id={self.node_id}, shape={_shape_str(self.shape)})"


def _unary_method(op):
    def method(self):
        return self._graph._node(op, [self], self.shape)
    method.__name__ = op
    return method


for _op in _UNARY:
    setattr(TraceMatrix, _op, _unary_method(_op))


class TraceGraph:
    """A recorded 2D program: inputs and nodes, evaluated and differentiated by node id."""

    def __init__(self):
        self._nodes: List[dict] = []
        self._inputs: Dict[str, int] = {}

    def _node(self, op, inputs, shape, attrs=None, name=None) -> TraceMatrix:
        node = {"id": len(self._nodes), "op": op, "shape": tuple(shape), "inputs": [m.node_id for m in inputs]}
        if name is not None:
            node["name"] = name
        if attrs:
            node["attrs"] = dict(attrs)
        self._nodes.append(node)
        return TraceMatrix(self, node["id"], shape)

    def input(self, name: str, shape) -> TraceMatrix:
        if not isinstance(name, str):
            raise TypeError("TraceGraph.input: the name must be a str")
        if name in self._inputs:
            raise ValueError(f"TraceGraph.input: input {name!r} already exists")
        shape = _spec_shape(shape, name)
        m = self._node("input", [], shape, name=name)
        self._inputs[name] = m.node_id
        return m

    # -- inspection
    def describe(self) -> List[str]:
        lines = []
        for n in self._nodes:
            parts = [str(n["id"]), n["op"]]
            if n["op"] == "input":
                parts.append(n["name"])
            for k, v in n.get("attrs", {}).items():
                parts.append(f"{k}={v}")
            if n["inputs"]:
                parts.append(f"inputs={n['inputs']}")
            parts.append(f"shape={_shape_str(n['shape'])}")
            lines.append(" ".join(parts))
        return lines

    def ir(self) -> List[dict]:
        out = []
        for n in self._nodes:
            d = {"id": n["id"], "op": n["op"], "shape": n["shape"], "inputs": list(n["inputs"])}
            if "name" in n:
                d["name"] = n["name"]
            attrs = {k: v for k, v in n.get("attrs", {}).items() if v is not None}
            if attrs:
                d["attrs"] = attrs
            out.append(d)
        return out

    def lower_text(self) -> str:
        lines = []
        for n in self._nodes:
            ty = f"tensor<{n['shape'][0]}x{n['shape'][1]}xf64>"
            if n["op"] == "input":
                lines.append(f"%{n['id']} = input[name={n['name']}] : {ty}")
                continue
            args = ", ".join(f"%{i}" for i in n["inputs"])
            attrs = {k: v for k, v in n.get("attrs", {}).items() if v is not None}
            attr_text = (" {" + ", ".join(f"{k}={v}" for k, v in attrs.items()) + "}") if attrs else ""
            lines.append(f"%{n['id']} = {n['op']}({args}){attr_text} : {ty}")
        return "\n".join(lines)

    def vjp_ir(self, output_node_id: int) -> List[dict]:
        """The reverse sweep from output_node_id: one adjoint node per differentiable node
        it reaches ("target": the forward node whose cotangent it accumulates)."""
        out = self._check(output_node_id)
        if out["op"] in ("input", "gt", "scalar_constant"):
            raise ValueError("VJP is only implemented for add, sub, mul, div, where, matmul, sum, mean, transpose, "
                             "reshape, powf, tanh, exp, log, sqrt, sin, and cos outputs")
        order = [i for i in sorted(self._reachable(output_node_id, differentiable=True), reverse=True)]
        nid = len(self._nodes)
        ir = [{"id": nid, "op": "seed", "shape": out["shape"], "inputs": [], "target": output_node_id}]
        for i in order:
            n = self._nodes[i]
            if n["op"] in ("input", "scalar_constant", "gt"):
                continue
            nid += 1
            ir.append({"id": nid, "op": f"vjp_{n['op']}", "shape": n["shape"], "inputs": list(n["inputs"]),
                       "target": i})
        return ir

    # -- evaluation
    def _check(self, output_node_id) -> dict:
        if not isinstance(output_node_id, int) or not 0 <= output_node_id < len(self._nodes):
            raise ValueError(f"output node {output_node_id} does not exist")
        return self._nodes[output_node_id]

    def _reachable(self, output_node_id, differentiable=False) -> set:
        seen, stack = set(), [output_node_id]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            n = self._nodes[i]
            if differentiable and n["op"] == "gt":
                continue
            ins = n["inputs"][1:] if differentiable and n["op"] == "where" else n["inputs"]
            stack.extend(ins)
        return seen

    def _input_specs(self, output_node_id) -> List[Tuple[str, Tuple[int, int]]]:
        reach = self._reachable(output_node_id)
        return [(name, self._nodes[i]["shape"]) for name, i in self._inputs.items() if i in reach]

    def _function(self, output_node_id) -> Callable:
        """The program as a function of its inputs (in creation order) on core arrays."""
        self._check(output_node_id)
        nodes = self._nodes[:output_node_id + 1]
        names = [name for name, _ in self._input_specs(output_node_id)]
        keep = self._reachable(output_node_id)

        def fn(*args):
            env = dict(zip([self._inputs[n] for n in names], args))
            for n in nodes:
                i = n["id"]
                if i not in keep or i in env:
                    continue
                x = [env[j] for j in n["inputs"]]
                env[i] = _eval_node(n, x)
            return env[output_node_id]
        return fn

    def _bind(self, output_node_id, values, what="input", kind="matrix"):
        specs = self._input_specs(output_node_id)
        if not isinstance(values, dict):
            raise TypeError(f"inputs must be a dict of Matrix keyed by input name, got {type(values).__name__}")
        args = []
        for name, shape in specs:
            if name not in values:
                raise ValueError(f"missing {what} {kind} for {name}")
            m = values[name]
            if not isinstance(m, Matrix):
                raise TypeError(f"{what} {name} must be a Matrix, got {type(m).__name__}")
            if m.shape != shape:
                raise ValueError(f"{what} {name} shape {_shape_str(m.shape)} does not match traced shape "
                                 f"{_shape_str(shape)}")
            args.append(m._a)
        return specs, args

    def _cotangent(self, output_node_id, output_cotangent):
        shape = self._nodes[output_node_id]["shape"]
        if not isinstance(output_cotangent, Matrix):
            raise TypeError(f"the output cotangent must be a Matrix, got {type(output_cotangent).__name__}")
        if output_cotangent.shape != shape:
            raise ValueError(f"output cotangent shape {_shape_str(output_cotangent.shape)} does not match output shape "
                             f"{_shape_str(shape)}")
        return output_cotangent._a

    def evaluate(self, output_node_id, inputs) -> Matrix:
        fn = self._function(output_node_id)
        return Matrix(_jitted(fn)(*self._bind(output_node_id, inputs)[1]))

    def evaluate_value_and_vjp(self, output_node_id, inputs, output_cotangent):
        from .._ad import vjp
        fn = self._function(output_node_id)
        specs, args = self._bind(output_node_id, inputs)
        ct = self._cotangent(output_node_id, output_cotangent)
        reached = self._reachable(output_node_id, differentiable=True)
        value, pullback = vjp(fn, *args)
        grads = pullback(ct)
        out = {name: Matrix(g) for (name, _), g in zip(specs, grads) if self._inputs[name] in reached}
        return Matrix(value), dict(sorted(out.items()))

    def evaluate_vjp(self, output_node_id, inputs, output_cotangent) -> Dict[str, Matrix]:
        return self.evaluate_value_and_vjp(output_node_id, inputs, output_cotangent)[1]

    def evaluate_jvp(self, output_node_id, inputs, input_tangents) -> Tuple[Matrix, Matrix]:
        from .._ad import jvp
        fn = self._function(output_node_id)
        specs, args = self._bind(output_node_id, inputs)
        _, tangents = self._bind(output_node_id, input_tangents, "tangent")
        value, tangent = jvp(fn, tuple(args), tuple(tangents))
        return Matrix(value), Matrix(tangent)

    def compile_cpu(self, output_node_id) -> "CpuExecutionPlan":
        return CpuExecutionPlan(self, output_node_id)

    def __repr__(self):
        return f"TraceGraph(nodes={len(self._nodes)})"


def _jitted(fn):
    from .._jit import jit
    return jit(fn)


def _eval_node(n, x):
    op, shape = n["op"], n["shape"]
    attrs = n.get("attrs", {})
    if op == "scalar_constant":
        return _core.full(shape, attrs["value"], dtype=_F64)
    if op in ("add", "sub", "mul", "div"):
        f = {"add": _core.add, "sub": _core.subtract, "mul": _core.multiply, "div": _core.divide}[op]
        return f(x[0], x[1])  # a traced divisor's zeros give inf/NaN (IEEE); a zero scalar raises when traced
    if op == "gt":
        return _core.stop_gradient((x[0] > x[1]).astype(_F64))
    if op == "where":
        return _core.where(_core.stop_gradient(x[0]) != 0.0, x[1], x[2])
    if op == "concat":
        return _core.concatenate(x, axis=attrs["axis"])
    if op == "matmul":
        return _core.matmul(x[0], x[1])
    if op in ("sum", "mean"):
        f = _core.sum if op == "sum" else _core.mean
        return _core.reshape(f(x[0], axis=attrs.get("axis")), shape)
    if op == "transpose":
        return _core.transpose(x[0])
    if op == "reshape":
        return _core.reshape(x[0], shape)
    if op == "powf":
        return _core.power(x[0], attrs["exponent"])
    if op in _UNARY:
        return getattr(_core, op)(x[0])
    raise ValueError(f"unknown trace op {op!r}")


class TraceResult:
    """trace()'s result: the graph and its output node."""

    def __init__(self, graph: TraceGraph, output: TraceMatrix):
        self.graph, self.output = graph, output

    def __repr__(self):
        return f"TraceResult(output_node_id={self.output.node_id}, output_shape={_shape_str(self.output.shape)})"


class CpuExecutionPlan:
    """A frozen CPU plan of one output node: only the nodes it needs."""

    def __init__(self, graph: TraceGraph, output_node_id: int):
        graph._check(output_node_id)
        self._graph, self.output_node_id = graph, output_node_id
        self.node_count = len(graph._reachable(output_node_id))
        self.output_shape = graph._nodes[output_node_id]["shape"]

    def evaluate(self, inputs):
        return self._graph.evaluate(self.output_node_id, inputs)

    def evaluate_vjp(self, inputs, output_cotangent):
        return self._graph.evaluate_vjp(self.output_node_id, inputs, output_cotangent)

    def evaluate_value_and_vjp(self, inputs, output_cotangent):
        return self._graph.evaluate_value_and_vjp(self.output_node_id, inputs, output_cotangent)

    def evaluate_jvp(self, inputs, tangents):
        return self._graph.evaluate_jvp(self.output_node_id, inputs, tangents)

    def __repr__(self):
        return f"CpuExecutionPlan(output_node_id={self.output_node_id}, output_shape={_shape_str(self.output_shape)})"


# ---- the transforms ------------------------------------------------------------------------

def _spec_shape(shape, name):
    if not (isinstance(shape, (list, tuple)) and len(shape) == 2 and
            all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise ValueError(f"input {name!r}: a legacy 2D spec's shape is (rows, cols), got {shape!r}")
    return tuple(shape)


def _parse_specs(input_specs):
    if isinstance(input_specs, (str, bytes)) or not isinstance(input_specs, (list, tuple)):
        raise TypeError("input specs must be a list of (name, (rows, cols)) tuples")
    out = []
    for spec in input_specs:
        if not isinstance(spec, (list, tuple)) or len(spec) != 2 or not isinstance(spec[0], str):
            raise TypeError(f"a legacy input spec is (name, (rows, cols)), got {spec!r}")
        out.append((spec[0], _spec_shape(spec[1], spec[0])))
    return out


def trace(function, input_specs) -> TraceResult:
    """Traces function once with one TraceMatrix per (name, (rows, cols)) spec."""
    if not callable(function):
        raise TypeError(f"trace: expected a callable, got {type(function).__name__}")
    specs = _parse_specs(input_specs)
    graph = TraceGraph()
    args = [graph.input(name, shape) for name, shape in specs]
    out = function(*args)
    if not isinstance(out, TraceMatrix) or out._graph is not graph:
        raise TypeError("the traced function must return a TraceMatrix of its own trace")
    return TraceResult(graph, out)


class _Traced:
    def __init__(self, function, input_specs):
        self._result = trace(function, input_specs)
        self._graph, self._out = self._result.graph, self._result.output.node_id

    @property
    def output_node_id(self) -> int:
        return self._out

    @property
    def output_shape(self):
        return self._result.output.shape

    def __repr__(self):
        return f"{type(self).__name__}(output_node_id={self._out}, output_shape={_shape_str(self.output_shape)})"


class GradFunction(_Traced):
    """f(values) -> {name: gradient} for a fixed output cotangent."""

    def __init__(self, function, input_specs, output_cotangent):
        super().__init__(function, input_specs)
        self._ct = output_cotangent

    def __call__(self, values):
        return self._graph.evaluate_vjp(self._out, values, self._ct)


class GradScalarFunction(_Traced):
    """f(values) -> {name: gradient} of a (1, 1) output (seeded with 1.0)."""

    def __call__(self, values):
        return self._graph.evaluate_vjp(self._out, values, Matrix([[1.0]]))


class GradScalarTransform:
    """grad_scalar(specs): a decorator tracing the function it is applied to."""

    def __init__(self, input_specs):
        self._specs = input_specs
        self.input_count = len(_parse_specs(input_specs))

    def __call__(self, function) -> GradScalarFunction:
        return GradScalarFunction(function, self._specs)

    def __repr__(self):
        return f"GradScalarTransform(input_count={self.input_count})"


class ValueAndGradFunction(GradFunction):
    """f(values) -> (value, {name: gradient})."""

    def __call__(self, values):
        return self._graph.evaluate_value_and_vjp(self._out, values, self._ct)


class VjpFunction(_Traced):
    """f(values, output_cotangent) -> (value, {name: gradient})."""

    def __call__(self, values, output_cotangent):
        return self._graph.evaluate_value_and_vjp(self._out, values, output_cotangent)


class JvpFunction(_Traced):
    """f(values, tangents) -> (value, tangent)."""

    def __call__(self, values, tangents):
        return self._graph.evaluate_jvp(self._out, values, tangents)


class JacobiansFunction(_Traced):
    """f(values) -> {name: Jacobian (output size, input size)}, rows in row-major output order."""

    def _jacobians(self, values):
        from .._ad import jacrev
        fn = self._graph._function(self._out)
        specs, args = self._graph._bind(self._out, values)
        reached = self._graph._reachable(self._out, differentiable=True)
        jac = jacrev(fn, argnums=tuple(range(len(args))))(*args)
        size_out = self.output_shape[0] * self.output_shape[1]
        out = {}
        for (name, shape), j in zip(specs, jac):
            if self._graph._inputs[name] in reached:
                out[name] = Matrix(_core.reshape(j, (size_out, shape[0] * shape[1])))
        return dict(sorted(out.items()))

    def __call__(self, values):
        return self._jacobians(values)


def _input_count_repr(self):
    return (f"{type(self).__name__}(output_node_id={self._out}, input_count={len(self._graph._inputs)}, "
            f"output_shape={_shape_str(self.output_shape)})")


JacobiansFunction.__repr__ = _input_count_repr
JvpFunction.__repr__ = _input_count_repr


class JacobianFunction(JacobiansFunction):
    """f(values) -> the Jacobian (output size, input size) of the one input."""

    def __init__(self, function, input_specs):
        if len(_parse_specs(input_specs)) != 1:
            raise ValueError("jacobian_fn currently supports exactly one input spec")
        super().__init__(function, input_specs)
        self._name, self._shape = _parse_specs(input_specs)[0]

    def __repr__(self):
        return (f"JacobianFunction(output_node_id={self._out}, input_shape={_shape_str(self._shape)}, "
                f"output_shape={_shape_str(self.output_shape)})")

    def __call__(self, values):
        jac = self._jacobians(values)
        if self._name in jac:
            return jac[self._name]
        size_out = self.output_shape[0] * self.output_shape[1]
        return Matrix(_core.zeros((size_out, self._shape[0] * self._shape[1]), dtype=_F64))


class JitFunction(_Traced):
    """f(values) -> the output, from one compiled plan."""

    def __call__(self, values):
        return self._graph.evaluate(self._out, values)


class JitTransform:
    """jit(specs): a decorator compiling the function it is applied to."""

    def __init__(self, input_specs):
        self._specs = input_specs
        self.input_count = len(_parse_specs(input_specs))

    def __call__(self, function) -> JitFunction:
        return JitFunction(function, self._specs)

    def __repr__(self):
        return f"JitTransform(input_count={self.input_count})"


def grad(function, input_specs, values, output_cotangent) -> Dict[str, Matrix]:
    """The cotangent-weighted gradients at `values`, evaluated at once."""
    return GradFunction(function, input_specs, output_cotangent)(values)


def grad_fn(function, input_specs, output_cotangent) -> GradFunction:
    return GradFunction(function, input_specs, output_cotangent)


def grad_scalar_fn(function, input_specs) -> GradScalarFunction:
    return GradScalarFunction(function, input_specs)


def grad_scalar(input_specs) -> GradScalarTransform:
    return GradScalarTransform(input_specs)


def value_and_grad_fn(function, input_specs, output_cotangent) -> ValueAndGradFunction:
    return ValueAndGradFunction(function, input_specs, output_cotangent)


def vjp_fn(function, input_specs) -> VjpFunction:
    return VjpFunction(function, input_specs)


def jvp_fn(function, input_specs) -> JvpFunction:
    return JvpFunction(function, input_specs)


def jacobian_fn(function, input_specs) -> JacobianFunction:
    return JacobianFunction(function, input_specs)


def jacobians_fn(function, input_specs) -> JacobiansFunction:
    return JacobiansFunction(function, input_specs)


def jit(input_specs) -> JitTransform:
    return JitTransform(input_specs)
