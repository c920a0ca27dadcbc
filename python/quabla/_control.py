"""Control flow (API.md §4): cond, fori_loop, scan, while_loop.

Each body is traced once into a graph and becomes a region of one IR node, never a Python
branch or an unrolled loop: a 10,000-step loop is one node, run by the C++ executor without
re-entering Python, and every transform (jvp, vjp with O(sqrt T) checkpoints, vmap) has a
rule for it. Bodies may close over concrete arrays (baked in as constants) and over tracers
of enclosing transforms (passed to the node as extra operands). Called on concrete values
the node is compiled and run at once; the results equal those of the traced program.

Carries are pytrees whose structure, shapes and dtypes a body must keep. A Python number in
a carry is weak, as everywhere in Quabla: it takes the float dtype the body gives it.
"""
from __future__ import annotations

from typing import Any, Callable

from . import _core
from . import tree as _tree

__all__ = ["cond", "fori_loop", "scan", "while_loop"]


def _describe(x) -> str:
    if isinstance(x, _core.Array):
        return f"{x.dtype.name}{list(x.shape)}"
    return type(x).__name__


def _leaf_array(x, what: str):
    """A carry/operand leaf as an array; Python numbers become weak-typed stand-ins."""
    if isinstance(x, _core.Array):
        return x, False
    if isinstance(x, bool):
        return _core.asarray(x), False
    if isinstance(x, int):
        return _core.asarray(x), True  # a weak int: it becomes a float if the body makes it one
    if isinstance(x, (float, complex)):
        return _core.asarray(x), True
    if hasattr(x, "__array__") or hasattr(x, "__array_interface__"):
        return _core.asarray(x), False
    raise TypeError(f"{what}: leaves must be arrays or Python numbers, got {type(x).__name__}")


def _carry_leaves(tree, what: str, root: str = "carry"):
    """(leaf arrays, weak flags, treedef) of an initial carry (or any operand pytree named
    `root`); `what` names it in errors."""
    paths, treedef = _tree.flatten_with_path(tree)
    leaves, weak = [], []
    for path, leaf in paths:
        a, w = _leaf_array(leaf, f"{what} {_tree.keystr(path, root)}")
        leaves.append(a)
        weak.append(w)
    return leaves, weak, treedef


class _Region:
    """A body traced on fresh tracers: its graph, captured outer tracers, outputs."""

    def __init__(self, fun: Callable, name: str, make_args: Callable, specs: list, stage_everything: bool = False):
        # specs: (shape, dtype, weak) per parameter, in order. stage_everything (cond
        # branches): what the body computes from closed-over values stays in the body, so
        # it runs, and is differentiated, only when the branch is selected.
        trace = _core.Trace()
        if stage_everything:
            trace.stage_everything()
        try:
            self.params = [trace.parameter(shape, dtype, weak) for shape, dtype, weak in specs]
            out = make_args(fun, self.params)
        except BaseException:
            trace.close()
            raise
        self.trace = trace
        self.out = out
        self.name = name

    def finish(self, leaves: list):
        try:
            arrays = [leaf if isinstance(leaf, _core.Array) else _core.asarray(leaf) for leaf in leaves]
            graph, captured = _core.finish_graph(self.trace, arrays)
        except BaseException:
            self.close()
            raise
        return graph, list(captured), arrays

    def close(self):
        self.trace.close()


def _spec(a, weak=False):
    return (tuple(a.shape), a.dtype, weak)


def _check_carry(name: str, what: str, init_leaves, init_def, out):
    """The body's carry output against the init: same structure, shapes and dtypes."""
    out_paths, out_def = _tree.flatten_with_path(out)
    if out_def != init_def:
        raise TypeError(f"{name}: {what} must return a carry of the structure of init_val {init_def}, got "
                        f"{out_def}; return the same containers with the same keys")
    leaves = []
    for (path, o), a in zip(out_paths, init_leaves):
        if not isinstance(o, _core.Array):
            if isinstance(o, (int, float)) and not isinstance(o, bool) and a.shape == ():
                o = _core.asarray(float(o)).astype(a.dtype)
            else:
                raise TypeError(f"{name}: {what} returned {type(o).__name__} for carry leaf {_tree.keystr(path, 'carry')}; "
                                f"carries hold arrays")
        if tuple(o.shape) != tuple(a.shape) or o.dtype != a.dtype:
            raise TypeError(f"{name}: {what} changed carry leaf {_tree.keystr(path, 'carry')} from {_describe(a)} to "
                            f"{_describe(o)}; a loop carry must keep its shape and dtype (convert with .astype, "
                            f"or start from an init_val of the final shape)")
        leaves.append(o)
    return leaves


def _stage_carry_body(name, what, fun, call, init_leaves, init_weak, init_def, extra_specs, split_out):
    """Traces a loop body until the carry types settle: a weak (Python number) init leaf
    adopts the dtype the body gives it, and the body is traced again with that dtype. Each
    retrace makes at least one leaf strong, so there are at most len(init_leaves) + 1."""
    for _attempt in range(len(init_leaves) + 1):
        specs = extra_specs[0] + [_spec(a, w) for a, w in zip(init_leaves, init_weak)] + extra_specs[1]
        region = _Region(fun, name, call, specs)
        try:
            carry_out, rest = split_out(region.out)
            out_leaves, out_def = _tree.flatten(carry_out)
            retry = False
            if out_def == init_def:
                for k, (o, a, w) in enumerate(zip(out_leaves, init_leaves, init_weak)):
                    if (w and isinstance(o, _core.Array) and o.dtype != a.dtype and tuple(o.shape) == tuple(a.shape)
                            and o.dtype != _core.bool_):
                        init_leaves[k] = a.astype(o.dtype)
                        init_weak[k] = False
                        retry = True
            if not retry:
                return region, _check_carry(name, what, init_leaves, init_def, carry_out), rest
        except BaseException:
            region.close()
            raise
        region.close()
    raise TypeError(f"{name}: the carry's dtypes did not settle: {what} keeps changing the dtype of a Python-number "
                    f"carry leaf; give init_val arrays of the intended dtypes")


# Loop bounds and lengths: the index is a float64 scalar, exact for integers up to 2^53.
_MAX_BOUND = 2 ** 53


def _static_int(x, name: str, what: str) -> int:
    if isinstance(x, bool):
        raise TypeError(f"{name}: {what} must be an int, got bool")
    if isinstance(x, int):
        v = x
    elif isinstance(x, _core.Array) and not x._is_tracer and x.ndim == 0:
        f = float(x)
        if f != f or f in (float("inf"), float("-inf")):
            raise ValueError(f"{name}: {what} must be a finite integer, got {f}")
        if f != int(f):
            raise ValueError(f"{name}: {what} must be an integer, got {f}")
        v = int(f)
    elif hasattr(x, "__index__"):
        v = int(x.__index__())
    else:
        raise TypeError(f"{name}: {what} must be a Python int (or a concrete integral scalar), got {_describe(x)}")
    if not -_MAX_BOUND <= v <= _MAX_BOUND:
        raise ValueError(f"{name}: {what} = {v} is out of range; loop bounds and lengths must lie within "
                         f"+-2^53 (the loop index is a float64 scalar)")
    return v


def scan(f: Callable, init: Any, xs: Any = None, length: int = None, reverse: bool = False, unroll: Any = 1, *,
         operands: Any = ()):
    """scan(f, init, xs=None, length=None, reverse=False, unroll=1, *, operands=()) -> (carry, ys).

    f(carry, x) -> (carry, y) over the leading axis of xs (a pytree of arrays); ys stacks the
    y's (a pytree) along a new leading axis. With xs=None, f receives None as x (as in JAX)
    and `length` gives the step count. With
    reverse=True steps run from the last index down (ys stay in index order). `unroll` is
    accepted as in JAX (a code-generation hint; results are the same). v0.1's form
    `operands=(a, b)` passes them after x: f(carry, x, a, b)."""
    return _scan(f, init, xs, length, reverse, operands, pass_index=False)


def _scan(f, init, xs, length, reverse, operands, pass_index):
    """scan with pass_index=True hands f the step index (a weak float64) in place of None."""
    name = "scan"
    if not callable(f):
        raise TypeError(f"scan: f must be callable, got {type(f).__name__}")
    if operands:
        ops, body = tuple(operands), f
        f = lambda c, x: body(c, x, *ops)  # noqa: E731
    init_leaves, init_weak, init_def = _carry_leaves(init, "scan: init")
    x_leaves, x_def = _tree.flatten(xs)
    x_arrays = []
    for leaf in x_leaves:
        a, _ = _leaf_array(leaf, "scan: xs")
        if a.ndim == 0:
            raise ValueError("scan: every xs leaf needs a leading axis to scan over, got a scalar")
        x_arrays.append(a)
    if x_arrays:
        n = x_arrays[0].shape[0]
        for a in x_arrays:
            if a.shape[0] != n:
                raise ValueError(f"scan: xs leaves have different leading sizes ({n} and {a.shape[0]}); they must agree")
        if length is not None and _static_int(length, name, "length") != n:
            raise ValueError(f"scan: length={length} differs from the leading size {n} of xs")
        length = n
    elif length is None:
        raise ValueError("scan: with xs=None, pass length= (the number of steps)")
    length = _static_int(length, name, "length")
    if length < 0:
        raise ValueError(f"scan: length must be >= 0, got {length}")
    use_index = xs is None and pass_index
    nk = len(init_leaves)

    def call(fun, params):
        index = params[0]
        carry = _tree.unflatten(init_def, params[1:1 + nk])
        if use_index:  # private: v0.1's tensor_scan_region wants the step index
            return fun(carry, index)
        return fun(carry, _tree.unflatten(x_def, params[1 + nk:]))

    def split(out):
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan: f must return a pair (carry, y), got {type(out).__name__}")
        return out[0], out[1]

    x_specs = [(tuple(a.shape[1:]), a.dtype, False) for a in x_arrays]
    region, carry_leaves, y = _stage_carry_body(name, "f", f, call, init_leaves, init_weak, init_def,
                                                ([((), _core.float64, True)], x_specs), split)
    y_leaves, y_def = _tree.flatten(y)
    for leaf in y_leaves:
        if not isinstance(leaf, (_core.Array, int, float)):
            region.close()
            raise TypeError(f"scan: f returned a {type(leaf).__name__} inside y; y must be a pytree of arrays")
    graph, captured, _ = region.finish(carry_leaves + list(y_leaves))
    # Node operands: consts (captured), carry, xs. Region params: index, consts, carry, xs.
    nc = len(captured)
    feed = [0] + [1 + nc + k for k in range(nk)] + [1 + nc + nk + i for i in range(len(x_arrays))] \
        + [1 + i for i in range(nc)]
    outs = _core.region_call("scan", [(graph, feed)], captured + init_leaves + x_arrays, length=length, start=0,
                             reverse=bool(reverse), num_consts=nc, num_carry=nk)
    carry = _tree.unflatten(init_def, outs[:nk])
    ys = _tree.unflatten(y_def, outs[nk:])
    return carry, ys


def _index(i):
    """The loop's float64 step counter (exact for integers) as the default integer dtype."""
    return _core._weak_index(i)


def fori_loop(lower, upper, body_fun: Callable, init_val: Any, *, unroll: Any = None, operands: Any = ()):
    """fori_loop(lower, upper, body_fun, init_val): val = body_fun(i, val) for i in
    range(lower, upper). The index is a weak integer scalar of the default integer dtype
    (int64, or int32 with qb.set_default_dtype(qb.float32)), so x[i] and
    lax.dynamic_slice(x, (i,), ...) work in the body. With int bounds the loop is a scan
    (differentiable both ways); traced bounds make it a while_loop (forward-mode only).
    `unroll` is accepted as in JAX (a hint; results are the same); v0.1's form
    `operands=(a, b)` passes them after the carry: body_fun(i, val, a, b)."""
    if not callable(body_fun):
        raise TypeError(f"fori_loop: body_fun must be callable, got {type(body_fun).__name__}")
    if operands:
        ops, body = tuple(operands), body_fun
        body_fun = lambda i, v: body(i, v, *ops)  # noqa: E731
    traced = any(isinstance(b, _core.Array) and b._is_tracer for b in (lower, upper))
    if traced:
        lo = lower if isinstance(lower, _core.Array) else _core.asarray(float(lower))
        hi = upper if isinstance(upper, _core.Array) else _core.asarray(float(upper))
        lo = lo.astype(_core.float64)
        hi = hi.astype(_core.float64)
        # The index carry is weak, as with int bounds, and carries no derivative.
        _, val = _while_loop(lambda c: c[0] < hi, lambda c: (c[0] + 1.0, body_fun(_index(c[0]), c[1])),
                             (lo, init_val), "fori_loop", weak_leaves=(0,))
        return val
    lo = _static_int(lower, "fori_loop", "lower")
    hi = _static_int(upper, "fori_loop", "upper")
    init_leaves, init_weak, init_def = _carry_leaves(init_val, "fori_loop: init_val")
    nk = len(init_leaves)

    def call(fun, params):
        return fun(_index(params[0]), _tree.unflatten(init_def, params[1:1 + nk]))

    region, carry_leaves, _ = _stage_carry_body("fori_loop", "body_fun", body_fun, call, init_leaves, init_weak,
                                                init_def, ([((), _core.float64, True)], []), lambda out: (out, None))
    graph, captured, _ = region.finish(carry_leaves)
    nc = len(captured)
    feed = [0] + [1 + nc + k for k in range(nk)] + [1 + i for i in range(nc)]
    outs = _core.region_call("scan", [(graph, feed)], captured + init_leaves, length=max(hi - lo, 0), start=lo,
                             reverse=False, num_consts=nc, num_carry=nk)
    return _tree.unflatten(init_def, outs)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any):
    """while_loop(cond_fun, body_fun, init_val): while cond_fun(val): val = body_fun(val).
    Forward-mode differentiable (jvp, jacfwd); reverse mode raises ValueError when a carry
    depends on the differentiated values (use a fori_loop with a bound on the steps)."""
    return _while_loop(cond_fun, body_fun, init_val, "while_loop")


def _while_loop(cond_fun, body_fun, init_val, name, weak_leaves=()):
    for f, what in ((cond_fun, "cond_fun"), (body_fun, "body_fun")):
        if not callable(f):
            raise TypeError(f"{name}: {what} must be callable, got {type(f).__name__}")
    init_leaves, init_weak, init_def = _carry_leaves(init_val, f"{name}: init_val")
    for k in weak_leaves:
        init_weak[k] = True
    nk = len(init_leaves)

    def call(fun, params):
        return fun(_tree.unflatten(init_def, params[:nk]))

    body, carry_leaves, _ = _stage_carry_body(name, "body_fun", body_fun, call, init_leaves, init_weak,
                                              init_def, ([], []), lambda out: (out, None))
    body_graph, body_captured, _ = body.finish(carry_leaves)
    cond = _Region(cond_fun, name, call, [_spec(a, w) for a, w in zip(init_leaves, init_weak)])
    p = cond.out
    if isinstance(p, bool):
        p = _core.asarray(p)
    if not isinstance(p, _core.Array) or p.shape != () or p.dtype != _core.bool_:
        cond.close()
        raise TypeError(f"{name}: cond_fun must return a bool scalar, got {_describe(p)}; "
                        f"reduce with qb.all/qb.any or compare to get one")
    cond_graph, cond_captured, _ = cond.finish([p])
    captured = body_captured + cond_captured
    nc = len(captured)
    # Node operands: consts (body's captures, then cond's), carry.
    body_feed = [nc + k for k in range(nk)] + list(range(len(body_captured)))
    cond_feed = [nc + k for k in range(nk)] + [len(body_captured) + i for i in range(len(cond_captured))]
    outs = _core.region_call("while", [(cond_graph, cond_feed), (body_graph, body_feed)], captured + init_leaves,
                             num_consts=nc)
    return _tree.unflatten(init_def, outs)


_NO_OPERAND = object()


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """cond(pred, true_fun, false_fun, *operands): true_fun(*operands) if pred else
    false_fun(*operands). Only the selected branch runs (a NaN in the other reaches neither
    values nor gradients); under vmap with a batched predicate both run and where selects.
    Both branches must return the same structure, shapes and dtypes. JAX's older
    cond(pred, true_fun, false_fun, operand=x) passes the one operand x."""
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("cond: pass the operands positionally or as operand=, not both")
        operands = (operand,)
    for f, what in ((true_fun, "true_fun"), (false_fun, "false_fun")):
        if not callable(f):
            raise TypeError(f"cond: {what} must be callable, got {type(f).__name__}")
    if isinstance(pred, (bool, int, float)) and not isinstance(pred, _core.Array):
        pred = _core.asarray(bool(pred))
    if not isinstance(pred, _core.Array) and (hasattr(pred, "__array__") or hasattr(pred, "__array_interface__")):
        pred = _core.asarray(pred)
    if not isinstance(pred, _core.Array):
        raise TypeError(f"cond: pred must be a bool scalar, got {type(pred).__name__}")
    if pred.shape != ():
        raise TypeError(f"cond: pred must be a scalar, got shape {tuple(pred.shape)}; for elementwise choices use "
                        f"qb.where(pred, a, b), or reduce pred with qb.all/qb.any")
    if pred.dtype != _core.bool_:
        pred = pred != 0
    op_leaves, op_weak, op_def = _carry_leaves(list(operands), "cond: operand", "operands")

    def call(fun, params):
        return fun(*_tree.unflatten(op_def, params))

    branches = []
    for fun in (false_fun, true_fun):
        try:
            branches.append(_Region(fun, "cond", call, [_spec(a, w) for a, w in zip(op_leaves, op_weak)],
                                    stage_everything=True))
        except BaseException:
            for b in branches:
                b.close()
            raise
    try:
        (f_paths, f_def), (t_paths, t_def) = (_tree.flatten_with_path(b.out) for b in branches)
        if f_def != t_def:
            raise TypeError(f"cond: true_fun and false_fun must return the same structure, got {t_def} and {f_def}")
        for (path, fo), (_, to) in zip(f_paths, t_paths):
            fa = fo if isinstance(fo, _core.Array) else None
            ta = to if isinstance(to, _core.Array) else None
            if fa is None or ta is None:
                for bad in (o for o, a in ((to, ta), (fo, fa)) if a is None):
                    if not isinstance(bad, (int, float)):
                        raise TypeError(f"cond: branches must return arrays, got {type(bad).__name__} at "
                                        f"{_tree.keystr(path, 'output')}")
                continue
            if tuple(fa.shape) != tuple(ta.shape) or fa.dtype != ta.dtype:
                raise TypeError(f"cond: true_fun and false_fun disagree at {_tree.keystr(path, 'output')}: "
                                f"{_describe(ta)} and {_describe(fa)}; both branches must return the same shapes "
                                f"and dtypes (convert with .astype or broadcast_to)")
    except BaseException:
        for b in branches:
            b.close()
        raise
    # Python numbers in one branch take the other branch's dtype.
    f_leaves, t_leaves = [l for _, l in f_paths], [l for _, l in t_paths]
    for k, (fo, to) in enumerate(zip(f_leaves, t_leaves)):
        if not isinstance(fo, _core.Array) and isinstance(to, _core.Array):
            f_leaves[k] = _core.full(to.shape, float(fo), dtype=to.dtype)
        elif not isinstance(to, _core.Array) and isinstance(fo, _core.Array):
            t_leaves[k] = _core.full(fo.shape, float(to), dtype=fo.dtype)
    try:
        f_graph, f_captured, _ = branches[0].finish(f_leaves)
    except BaseException:
        branches[1].close()
        raise
    t_graph, t_captured, _ = branches[1].finish(t_leaves)
    no = len(op_leaves)
    f_feed = list(range(no)) + [no + i for i in range(len(f_captured))]
    t_feed = list(range(no)) + [no + len(f_captured) + i for i in range(len(t_captured))]
    outs = _core.region_call("cond", [(f_graph, f_feed), (t_graph, t_feed)],
                             [pred] + op_leaves + f_captured + t_captured)
    return _tree.unflatten(f_def, outs)
