"""Automatic differentiation (API.md §3): grad, value_and_grad, jvp, vjp, and the
compositions jacobian/jacfwd/jacrev/hessian/hvp.

Each transform traces the function into a Graph (fresh tracers for its array arguments),
applies the C++ IR->IR transform (jvp, or vjp = linearize + transpose) and calls the
result: on concrete arrays it compiles and runs; on tracers of an enclosing jit or
transform it is inlined into that trace, so transforms nest in any order. Values an inner
function reads from an enclosing trace (closures) become extra inputs of its graph, which
the enclosing transform then differentiates through.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Tuple, Union

from . import _concrete_control, _core
from . import tree as _tree

__all__ = ["grad", "value_and_grad", "jvp", "vjp"]


def _is_array_like(x) -> bool:
    return isinstance(x, _core.Array) or hasattr(x, "__array__") or hasattr(x, "__array_interface__")


def _to_array(x, name: str):
    if isinstance(x, _core.Array):
        return x
    if isinstance(x, bool):
        return _core.asarray(x)
    if isinstance(x, (int, float, complex)) or _is_array_like(x):
        return _core.asarray(float(x) if isinstance(x, int) else x)
    raise TypeError(f"{name}: expected arrays (or Python numbers), got {type(x).__name__}")


class ExampleOf:
    """A mapped argument while vmap stages its function: the trace gets a parameter of the
    per-example shape (axis `axis` removed) and the graph is later fed the whole array."""

    __slots__ = ("array", "axis", "shape", "dtype")

    def __init__(self, array, axis: int):
        self.array = array
        self.axis = axis
        self.shape = tuple(d for i, d in enumerate(array.shape) if i != axis)
        self.dtype = array.dtype


class _Staged:
    """A function traced once on fresh tracers: its graph, inputs and output structure."""

    def __init__(self, fun: Callable, args: tuple, kwargs: dict, array_positions: set, name: str):
        leaves, treedef = _tree.flatten((list(args), kwargs))
        trace = _core.Trace()
        self.inputs = []           # the concrete-or-outer-tracer arrays fed to the graph
        self.input_leaf = []       # leaf index of each input
        call_leaves = []
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, ExampleOf):  # vmap: a parameter of the per-example type
                self.inputs.append(leaf.array)
                self.input_leaf.append(i)
                call_leaves.append(trace.parameter(leaf.shape, leaf.dtype))
            elif i in array_positions or _is_array_like(leaf):
                a = _to_array(leaf, name)
                self.inputs.append(a)
                self.input_leaf.append(i)
                call_leaves.append(trace.parameter(a.shape, a.dtype))
            else:
                call_leaves.append(leaf)  # static: baked into the trace (Python scalars are weak)
        call_args, call_kwargs = _tree.unflatten(treedef, call_leaves)
        try:
            self.out = fun(*call_args, **call_kwargs)
        except BaseException:
            trace.close()
            raise
        self.trace = trace
        self.treedef = treedef
        self.leaves = leaves

    def finish(self, results: Sequence[Any]):
        graph, captured = _core.finish_graph(self.trace, list(results))
        return graph, list(captured)


def _leaf_positions(args: tuple, kwargs: dict, argnums: Tuple[int, ...]):
    """Leaf indices (in the flattening of (args, kwargs)) of each argument in argnums."""
    positions = {}
    offset = 0
    for i, a in enumerate(args):
        n = len(_tree.leaves(a))
        if i in argnums:
            positions[i] = list(range(offset, offset + n))
        offset += n
    return positions


def _normalize_argnums(argnums, nargs: int, name: str) -> Tuple[Tuple[int, ...], bool]:
    argnums = _check_argnums_type(argnums, name)
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{name}: argnums must name at least one argument")
    out = []
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"{name}: argnums must be ints, got {a!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{name}: argnums {a} is out of range for {nargs} positional arguments")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: argnums {nums} repeats an argument")
    return tuple(out), single


def _check_argnums_type(argnums, name: str):
    """TypeError unless argnums is an int or a sequence (tuple/list) of ints."""
    import numbers

    def is_int(a):
        return isinstance(a, numbers.Integral) and not isinstance(a, bool)
    if not (is_int(argnums) or (isinstance(argnums, (tuple, list)) and all(is_int(a) for a in argnums))):
        raise TypeError(f"{name}: argnums must be an int or a tuple of ints, got {argnums!r} "
                        f"({type(argnums).__name__})")
    return int(argnums) if is_int(argnums) else tuple(int(a) for a in argnums)


_COMPLEX = (_core.complex64, _core.complex128)


def _is_float(dtype) -> bool:
    """Whether values of `dtype` carry derivatives (float and complex; integers and bools do
    not, as in JAX)."""
    return dtype == _core.float32 or dtype == _core.float64 or dtype in _COMPLEX


def _check_scalar_loss(value, name: str, holomorphic: bool = False):
    if not isinstance(value, _core.Array):
        raise TypeError(f"{name}: the function must return a scalar array, got {type(value).__name__}")
    if value.shape == () and value.dtype in _COMPLEX and not holomorphic:
        raise TypeError(f"{name}: the function returned a complex scalar ({value.dtype.name}); grad needs a real "
                        f"output, or holomorphic=True for a holomorphic function (as in JAX)")
    if holomorphic and (value.shape != () or value.dtype not in _COMPLEX):
        raise TypeError(f"{name} with holomorphic=True: the function must return a complex scalar, got "
                        f"{value.dtype.name}{list(value.shape)}")
    if value.shape != () or not _is_float(value.dtype):
        raise _core.ShapeError(f"{name}: the function must return a rank-0 float array (a scalar loss), got "
                         f"{value.dtype.name}{list(value.shape)}; for vector outputs use qb.jacobian or qb.vjp")


def value_and_grad(fun: Callable = None, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
                   holomorphic: bool = False):
    """value_and_grad(f)(*args) -> (f(*args), gradient with respect to args[argnums]).

    The gradient mirrors the differentiated argument's pytree and keeps its dtypes (bool
    leaves get None). With has_aux, f returns (value, aux) and the result is
    ((value, aux), gradient)."""
    if fun is None:
        return lambda f: value_and_grad(f, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic)
    return _concrete_control.allowing(
        lambda f: _value_and_grad(f, argnums, has_aux, "value_and_grad", holomorphic), fun, argnums)


def _value_and_grad(fun: Callable, argnums, has_aux: bool, transform: str, holomorphic: bool = False):
    if not callable(fun):
        raise TypeError(f"{transform}: expected a callable, got {type(fun).__name__}")
    _check_argnums_type(argnums, transform)  # at construction, as JAX
    name = getattr(fun, "__name__", "function")

    def vg(*args, **kwargs):
        nums, single = _normalize_argnums(argnums, len(args), transform)
        positions = _leaf_positions(args, kwargs, nums)
        diff = {p for ps in positions.values() for p in ps}
        staged = _Staged(fun, args, kwargs, diff, transform)
        out = staged.out
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                staged.trace.close()
                raise TypeError(f"{transform}({name}) with has_aux=True: the function must return a pair "
                                f"(value, aux), got {type(out).__name__}")
            value, aux = out
        else:
            value, aux = out, None
        try:
            for k, a in enumerate(staged.inputs):
                leaf = staged.leaves[staged.input_leaf[k]]
                if staged.input_leaf[k] in diff and isinstance(leaf, int) and not isinstance(leaf, bool):
                    raise TypeError(f"{transform}({name}) requires float inputs, but argument leaf "
                                    f"{staged.input_leaf[k]} is the Python int {leaf!r} (as in JAX, integers carry "
                                    f"no derivative); pass a float such as {float(leaf)!r} or leave it out of argnums")
                if staged.input_leaf[k] in diff and a.dtype.kind in "iu":  # (bool leaves get None gradients)
                    raise TypeError(f"{transform}({name}) requires float inputs, but argument leaf "
                                    f"{staged.input_leaf[k]} is {a.dtype.name} (as in JAX, integers carry no "
                                    f"derivative); convert it with .astype(qb.float64) or leave it out of argnums")
                if holomorphic and staged.input_leaf[k] in diff and a.dtype not in _COMPLEX:
                    raise TypeError(f"{transform}({name}) with holomorphic=True needs complex inputs, but argument "
                                    f"leaf {staged.input_leaf[k]} is {a.dtype.name} (as in JAX)")
            _check_scalar_loss(value, f"{transform}({name})", holomorphic)
        except BaseException:
            staged.trace.close()
            raise
        aux_leaves, aux_def = _tree.flatten(aux)
        aux_arrays = [i for i, leaf in enumerate(aux_leaves) if isinstance(leaf, _core.Array)]
        graph, captured = staged.finish([value] + [aux_leaves[i] for i in aux_arrays])
        wrt = [staged.input_leaf[k] in diff and _is_float(staged.inputs[k].dtype)
               for k in range(len(staged.inputs))] + [False] * len(captured)
        seed = [True] + [False] * len(aux_arrays)
        vjp_graph = graph.vjp(wrt, seed)
        seed_value = _core.ones((), dtype=value.dtype)
        outs = vjp_graph.call(staged.inputs + captured + [seed_value])
        n_res = 1 + len(aux_arrays)
        primal, grads = outs[:n_res], iter(outs[n_res:])
        grad_by_leaf = {}
        for k, flag in enumerate(wrt[:len(staged.inputs)]):
            if flag:
                grad_by_leaf[staged.input_leaf[k]] = next(grads)
        results = []
        for i in nums:
            arg_leaves, arg_def = _tree.flatten(args[i])
            g = [grad_by_leaf.get(p) for p in positions[i]]
            results.append(_tree.unflatten(arg_def, g))
        grad_out = results[0] if single else tuple(results)
        val = primal[0]
        if has_aux:
            aux_out = list(aux_leaves)
            for j, i in enumerate(aux_arrays):
                aux_out[i] = primal[1 + j]
            return (val, _tree.unflatten(aux_def, aux_out)), grad_out
        return val, grad_out

    vg.__name__ = f"value_and_grad({name})"
    return vg


def grad(fun: Callable = None, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
         holomorphic: bool = False):
    """grad(f)(*args): the gradient of the scalar f with respect to args[argnums]. Outside
    jit, Python control flow on values (an ``if x < 3``, int(x)) is decided on the concrete
    arguments, as in JAX (_concrete_control.py)."""
    if fun is None:
        return lambda f: grad(f, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic)
    if callable(fun):
        return _concrete_control.allowing(lambda f: _grad(f, argnums, has_aux, holomorphic), fun, argnums)
    return _grad(fun, argnums, has_aux, holomorphic)


def _grad(fun: Callable, argnums, has_aux: bool, holomorphic: bool = False):
    vg = _value_and_grad(fun, argnums, has_aux, "grad", holomorphic)
    name = getattr(fun, "__name__", "function")

    def g(*args, **kwargs):
        (value_aux), gradient = vg(*args, **kwargs)
        if has_aux:
            return gradient, value_aux[1]
        return gradient

    g.__name__ = f"grad({name})"
    return g


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """(fun(*primals), directional derivative along tangents); primals and tangents are
    sequences of matching pytrees."""
    return _jvp(fun, primals, tangents, "jvp")


def _jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], name: str):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"{name}: primals and tangents must be tuples or lists of arguments")
    if len(primals) != len(tangents):
        raise ValueError(f"{name}: {len(primals)} primals but {len(tangents)} tangents")
    p_leaves, p_def = _tree.flatten(list(primals))
    t_leaves, t_def = _tree.flatten(list(tangents))
    if p_def != t_def:
        raise ValueError(f"{name}: tangents have structure {t_def}, primals {p_def}")
    staged = _Staged(fun, tuple(primals), {}, set(range(len(p_leaves))), name)
    out_leaves, out_def = _tree.flatten(staged.out)
    if not all(isinstance(o, _core.Array) for o in out_leaves):
        staged.trace.close()
        raise TypeError(f"{name}: the function must return arrays (or pytrees of arrays)")
    graph, captured = staged.finish(out_leaves)
    tangent_args = []
    wrt = []
    for k, a in enumerate(staged.inputs):
        t = _to_array(t_leaves[staged.input_leaf[k]], name)
        float_input = _is_float(a.dtype)
        if float_input:
            if t.shape != a.shape or t.dtype != a.dtype:
                raise ValueError(f"{name}: tangent {k} is {t.dtype.name}{list(t.shape)}, its primal "
                                 f"{a.dtype.name}{list(a.shape)}; they must match")
            tangent_args.append(t)
        wrt.append(float_input)
    wrt += [False] * len(captured)
    outs = graph.jvp(wrt).call(staged.inputs + captured + tangent_args)
    n = len(out_leaves)
    primal_out = outs[:n]
    dys = iter(outs[n:])
    tangent_out = [next(dys) if _is_float(o.dtype) else _core.zeros_like(o) for o in primal_out]
    return _tree.unflatten(out_def, primal_out), _tree.unflatten(out_def, tangent_out)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """(fun(*primals), vjp_fun[, aux]): vjp_fun(cotangent) gives the cotangents of primals
    (a tuple, one per primal). vjp_fun can be called many times."""
    return _vjp(fun, primals, has_aux, "vjp")


def _vjp(fun: Callable, primals: tuple, has_aux: bool, name: str):
    staged = _Staged(fun, primals, {}, set(range(len(_tree.leaves(list(primals))))), name)
    out = staged.out
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            staged.trace.close()
            raise TypeError(f"{name} with has_aux=True: the function must return a pair (output, aux), got "
                            f"{type(out).__name__}")
        out, aux = out
    out_leaves, out_def = _tree.flatten(out)
    aux_leaves, aux_def = _tree.flatten(aux)
    aux_arrays = [i for i, leaf in enumerate(aux_leaves) if isinstance(leaf, _core.Array)]
    graph, captured = staged.finish(out_leaves + [aux_leaves[i] for i in aux_arrays])
    wrt = [_is_float(a.dtype) for a in staged.inputs] + [False] * len(captured)
    seed = [_is_float(o.dtype) for o in out_leaves] + [False] * len(aux_arrays)
    vjp_graph = graph.vjp(wrt, seed)
    # The forward values (and aux), computed once.
    computed = graph.call(staged.inputs + captured)
    primal_out = computed[:len(out_leaves)]
    for j, i in enumerate(aux_arrays):
        aux_leaves[i] = computed[len(out_leaves) + j]
    aux = _tree.unflatten(aux_def, aux_leaves) if has_aux else None
    inputs = staged.inputs + captured

    def vjp_fun(cotangent):
        ct_leaves, ct_def = _tree.flatten(cotangent)
        if ct_def != out_def:
            raise ValueError(f"vjp_fun: the cotangent has structure {ct_def}, the output {out_def}")
        cts = []
        for c, o in zip(ct_leaves, primal_out):
            if not _is_float(o.dtype):
                continue
            c = _to_array(c, "vjp_fun")
            if c.shape != o.shape or c.dtype != o.dtype:
                raise ValueError(f"vjp_fun: cotangent {c.dtype.name}{list(c.shape)} does not match the output "
                                 f"{o.dtype.name}{list(o.shape)}")
            cts.append(c)
        outs = vjp_graph.call(inputs + cts)
        grads = iter(outs[len(out_leaves) + len(aux_arrays):])
        by_leaf = {staged.input_leaf[k]: next(grads) for k, flag in enumerate(wrt[:len(staged.inputs)]) if flag}
        result = []
        offset = 0
        for p in primals:
            leaves, d = _tree.flatten(p)
            result.append(_tree.unflatten(d, [by_leaf.get(offset + j) for j in range(len(leaves))]))
            offset += len(leaves)
        return tuple(result)

    out_value = _tree.unflatten(out_def, primal_out)
    return (out_value, vjp_fun, aux) if has_aux else (out_value, vjp_fun)


# ---- compositions: Jacobians, Hessians, Hessian-vector products --------------------------
#
# Structure (as JAX): the Jacobian mirrors the output pytree; each output leaf holds the
# differentiated argument's pytree (a tuple of them when argnums is a tuple) whose leaves
# have shape out_leaf.shape + in_leaf.shape. Arguments not in argnums are passed to the
# function untouched (pytrees, Python numbers that stay static, anything else).

# Directions per batched pass of jacfwd/jacrev: memory stays bounded by this many JVPs or
# VJPs at once, whatever the input or output size.
JACOBIAN_CHUNK = 256

_FLOATS = (_core.float32, _core.float64, _core.complex64, _core.complex128)


class _FlatLeaves:
    """Float array leaves of one or more pytrees laid end to end in one flat vector: their
    offsets, and the maps between the vector and the leaves."""

    def __init__(self, leaves):
        self.leaves = leaves
        self.offsets, n = [], 0
        for a in leaves:
            self.offsets.append(n)
            n += a.size
        self.size = n
        self.dtype = _core.float32 if all(a.dtype == _core.float32 for a in leaves) else _core.float64

    def split(self, vec):
        """Leaf-shaped, leaf-typed pieces of a flat vector of `size` elements."""
        if len(self.leaves) == 1:
            a = self.leaves[0]
            return [_core.reshape(vec, a.shape).astype(a.dtype)]
        return [_core.reshape(vec[o:o + a.size], a.shape).astype(a.dtype)
                for o, a in zip(self.offsets, self.leaves)]

    def rows(self, stacked, k):
        """Rows of `stacked` (leading axis over this vector's elements) that belong to leaf k."""
        if len(self.leaves) == 1:
            return stacked
        o = self.offsets[k]
        return stacked[o:o + self.leaves[k].size]


def _float_leaves(tree, where: str, name: str, what: str):
    """The leaves of `tree` as float arrays; anything else is a TypeError naming its path."""
    pairs, treedef = _tree.flatten_with_path(tree)
    out = []
    for path, leaf in pairs:
        if isinstance(leaf, bool) or not (isinstance(leaf, (int, float)) or _is_array_like(leaf)):
            raise TypeError(f"{name}: {what} {_tree.keystr(path, where)} is a {type(leaf).__name__}; {name} "
                            f"needs float arrays there")
        if isinstance(leaf, int):  # as JAX: an integer carries no derivative (Python ints included)
            raise TypeError(f"{name}: {what} {_tree.keystr(path, where)} is the Python int {leaf!r}; {name} needs "
                            f"float inputs there (pass {float(leaf)!r}, or pass it as an argument not in argnums)")
        a = _to_array(leaf, name)
        if a.dtype not in _FLOATS:
            raise TypeError(f"{name}: {what} {_tree.keystr(path, where)} has dtype {a.dtype.name}; {name} needs "
                            f"float arrays there (convert with astype, or pass it as an argument not in argnums)")
        out.append(a)
    return out, treedef


class _DiffArgs:
    """The arguments of a Jacobian call split into differentiated pytrees (argnums) and the
    rest, which the function receives untouched."""

    def __init__(self, args: tuple, argnums, name: str):
        self.args = args
        self.nums, self.single = _normalize_argnums(argnums, len(args), name)
        self.defs, leaves, self.counts = [], [], []
        for i in self.nums:
            ls, d = _float_leaves(args[i], f"args[{i}]", name, "differentiated argument leaf")
            self.defs.append(d)
            self.counts.append(len(ls))
            leaves += ls
        self.flat = _FlatLeaves(leaves)
        self.primals = tuple(self._trees(leaves))

    def _trees(self, leaves):
        trees, it = [], iter(leaves)
        for d, c in zip(self.defs, self.counts):
            trees.append(_tree.unflatten(d, [next(it) for _ in range(c)]))
        return trees

    def call(self, fun, trees):
        """fun on the original arguments with the differentiated ones replaced by `trees`."""
        args = list(self.args)
        for i, t in zip(self.nums, trees):
            args[i] = t
        return fun(*args)

    def tangents(self, vec):
        return tuple(self._trees(self.flat.split(vec)))

    def result(self, per_leaf):
        """The input-side structure around per-input-leaf blocks: one tree, or a tuple of
        trees for a tuple argnums."""
        trees = self._trees(per_leaf)
        return trees[0] if self.single else tuple(trees)


def _value_and_aux(out, has_aux: bool, name: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{name} with has_aux=True: the function must return a pair (output, aux), got "
                        f"{type(out).__name__}")
    return out


def _basis_chunks(n: int, dtype):
    """Rows of the n x n identity, JACOBIAN_CHUNK at a time (never the whole matrix)."""
    for s in range(0, n, JACOBIAN_CHUNK):
        c = min(JACOBIAN_CHUNK, n - s)
        yield _core.eye(c, n, k=s, dtype=dtype)


def _stacked_over_directions(fn, n: int, dtype):
    """vmap(fn) over every row of the n x n identity in chunks; fn returns a list of arrays,
    and each result is the concatenation over the chunks along the leading axis. None when
    n is 0 (no leaves to differentiate, or none to differentiate)."""
    from ._vmap import vmap
    if n == 0:
        return None
    pieces = [vmap(fn)(basis) for basis in _basis_chunks(n, dtype)]
    if len(pieces) == 1:
        return list(pieces[0])
    return [_core.concat([p[k] for p in pieces], axis=0) for k in range(len(pieces[0]))]


def _check_outputs(out, name: str):
    leaves, treedef = _tree.flatten_with_path(out)
    for path, leaf in leaves:
        if not isinstance(leaf, _core.Array):
            raise TypeError(f"{name}: the function must return arrays (or pytrees of arrays); output "
                            f"{_tree.keystr(path, 'out')} is a {type(leaf).__name__}")
        if leaf.dtype not in _FLOATS:
            raise TypeError(f"{name}: output {_tree.keystr(path, 'out')} has dtype {leaf.dtype.name}; Jacobians "
                            f"need float outputs")
    return [leaf for _, leaf in leaves], treedef


def _assemble(out_def, out_leaves, d: _DiffArgs, block):
    """The Jacobian pytree: out structure around input structures around block(j, k)."""
    per_out = [d.result([block(j, k) for k in range(len(d.flat.leaves))]) for j in range(len(out_leaves))]
    return _tree.unflatten(out_def, per_out)


def _check_complex_jacobian(dtypes, side: str, name: str, holomorphic: bool):
    """JAX's rules: forward mode needs real inputs and reverse mode real outputs, unless
    holomorphic=True, which needs complex ones."""
    dtypes = list(dtypes)
    if holomorphic:
        bad = [d for d in dtypes if d not in _COMPLEX]
        if bad:
            raise TypeError(f"{name} with holomorphic=True requires {side}s with a complex dtype, got "
                            f"{bad[0].name}")
        return
    bad = [d for d in dtypes if d in _COMPLEX]
    if bad:
        raise TypeError(f"{name} requires real-valued {side}s (a float dtype), but got {bad[0].name}; for a "
                        f"holomorphic function pass holomorphic=True, for other complex functions use qb.vjp or "
                        f"qb.jvp directly (as in JAX)")


def _jacfwd(fun: Callable, argnums, has_aux: bool, name: str, aux_of: Callable = None, holomorphic: bool = False):
    """aux_of(*args) gives the aux output when has_aux (default: fun's second output); the
    aux is one more evaluation at the primal point (forward mode cannot return it from the
    batched directions without out_axes=None for arbitrary aux values)."""
    if not callable(fun):
        raise TypeError(f"{name}: expected a callable, got {type(fun).__name__}")
    _check_argnums_type(argnums, name)

    def jac(*args):
        d = _DiffArgs(args, argnums, name)
        _check_complex_jacobian((a.dtype for a in d.flat.leaves), "input", name, holomorphic)
        info = {}

        def column(direction):  # one JVP: the Jacobian's column along one input element
            def f(*trees):
                return _value_and_aux(d.call(fun, trees), has_aux, name)[0]
            _, t_out = _jvp(f, d.primals, d.tangents(direction), name)
            leaves, info["def"] = _check_outputs(t_out, name)
            return leaves

        cols = _stacked_over_directions(column, d.flat.size, d.flat.dtype)  # per output: [n, *out]
        if cols is None:  # no input elements: blocks of shape out.shape + in.shape hold no values
            out = _value_and_aux(d.call(fun, d.primals), has_aux, name)[0]
            cols = [_core.zeros((0,) + tuple(o.shape), dtype=o.dtype) for o in _check_outputs(out, name)[0]]
            info["def"] = _tree.structure(out)

        def block(j, k):
            c = d.flat.rows(cols[j], k)  # [in_k size, *out_j]
            out_nd = c.ndim - 1
            if out_nd:
                c = _core.transpose(c, tuple(range(1, out_nd + 1)) + (0,))
            return _core.reshape(c, c.shape[:out_nd] + d.flat.leaves[k].shape)

        result = _assemble(info["def"], cols, d, block)
        if has_aux:
            aux = aux_of(*d.call(lambda *a: a, d.primals)) if aux_of else \
                _value_and_aux(d.call(fun, d.primals), True, name)[1]
            return result, aux
        return result

    return jac


def _jacrev(fun: Callable, argnums, has_aux: bool, name: str, holomorphic: bool = False):
    if not callable(fun):
        raise TypeError(f"{name}: expected a callable, got {type(fun).__name__}")
    _check_argnums_type(argnums, name)

    def jac(*args):
        d = _DiffArgs(args, argnums, name)
        if holomorphic:
            _check_complex_jacobian((a.dtype for a in d.flat.leaves), "input", name, True)

        def f(*trees):
            return d.call(fun, trees)

        res = _vjp(f, d.primals, has_aux, name)
        out, pull = res[0], res[1]
        out_leaves, out_def = _check_outputs(out, name)
        _check_complex_jacobian((o.dtype for o in out_leaves), "output", name, holomorphic)
        out_flat = _FlatLeaves(out_leaves)

        def row(direction):  # one VJP: the Jacobian's row for one output element
            cts = _tree.unflatten(out_def, out_flat.split(direction))
            return [g for tree in pull(cts) for g in _tree.leaves(tree)]

        rows = _stacked_over_directions(row, out_flat.size, out_flat.dtype)  # per input: [m, *in]
        if rows is None:  # no output elements: blocks of shape out.shape + in.shape hold no values
            rows = [_core.zeros((0,) + tuple(a.shape), dtype=a.dtype) for a in d.flat.leaves]

        def block(j, k):
            r = out_flat.rows(rows[k], j)
            return _core.reshape(r, out_leaves[j].shape + d.flat.leaves[k].shape)

        result = _assemble(out_def, out_leaves, d, block)
        return (result, res[2]) if has_aux else result

    return jac


def jacfwd(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian by forward mode: one JVP per input element, batched with vmap in chunks
    of JACOBIAN_CHUNK directions. Pytrees in and out (see the section comment); with
    has_aux, fun returns (output, aux) and the result is (jacobian, aux). Inputs must be
    real, or complex with holomorphic=True (as in JAX)."""
    make = lambda f: _jacfwd(f, argnums, has_aux, "jacfwd", holomorphic=holomorphic)  # noqa: E731
    return _concrete_control.allowing(make, fun, argnums) if callable(fun) else make(fun)


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian by reverse mode: one VJP per output element, batched with vmap in chunks
    of JACOBIAN_CHUNK directions. Same structure and has_aux as jacfwd. Outputs must be
    real, or complex with holomorphic=True (as in JAX)."""
    make = lambda f: _jacrev(f, argnums, has_aux, "jacrev", holomorphic=holomorphic)  # noqa: E731
    return _concrete_control.allowing(make, fun, argnums) if callable(fun) else make(fun)


def jacobian(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False,
             holomorphic: bool = False):
    """The Jacobian: reverse mode when the output has fewer elements than the differentiated
    inputs, forward mode otherwise (JAX's jacrev/jacfwd choice, made per call)."""
    if not callable(fun):
        raise TypeError(f"jacobian: expected a callable, got {type(fun).__name__}")
    _check_argnums_type(argnums, "jacobian")

    def jac(*args):
        d = _DiffArgs(args, argnums, "jacobian")
        staged = _Staged(fun, tuple(args), {}, set(), "jacobian")  # traced only to size the output
        staged.trace.close()
        out, _ = _value_and_aux(staged.out, has_aux, "jacobian")
        n_out = sum(getattr(o, "size", 1) for o in _tree.leaves(out))
        complex_out = any(getattr(o, "dtype", None) in _COMPLEX for o in _tree.leaves(out))
        complex_in = any(a.dtype in _COMPLEX for a in d.flat.leaves)
        # Complex outputs of real inputs: forward mode (reverse mode refuses them).
        reverse = n_out < d.flat.size and not (complex_out and not complex_in and not holomorphic)
        chosen = _jacrev if reverse else _jacfwd
        return chosen(fun, argnums, has_aux, "jacobian", holomorphic=holomorphic)(*args)
    return jac


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False):
    """The Hessian of a scalar function, forward over reverse (jacfwd of jacrev). For a dict
    argument the result is a dict of dicts: H[a][b] has shape a.shape + b.shape."""
    if not callable(fun):
        raise TypeError(f"hessian: expected a callable, got {type(fun).__name__}")
    _check_argnums_type(argnums, "hessian")
    # The aux comes from fun itself at the primal, not from a second inner Jacobian.
    def make(f):
        aux_of = (lambda *args: _value_and_aux(f(*args), True, "hessian")[1]) if has_aux else None
        return _jacfwd(_jacrev(f, argnums, has_aux, "hessian"), argnums, has_aux, "hessian", aux_of)
    return _concrete_control.allowing(make, fun, argnums)


def hvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """Hessian-vector product of a scalar function, forward over reverse, without forming H.

    Returns (gradients, products): two tuples with one entry per primal, gradients[i] =
    d fun / d primals[i] and products[i] = sum_j (d2 fun / d primals[i] d primals[j]) .
    tangents[j], each mirroring primals[i]'s pytree. For one primal, take [0] of each."""
    if not callable(fun):
        raise TypeError(f"hvp: expected a callable, got {type(fun).__name__}")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("hvp: primals and tangents must be tuples or lists of arguments")
    if not primals:
        raise ValueError("hvp: needs at least one primal")
    g = grad(fun, argnums=tuple(range(len(primals))))
    return _jvp(g, tuple(primals), tuple(tangents), "hvp")


__all__ += ["jacfwd", "jacrev", "jacobian", "hessian", "hvp"]
