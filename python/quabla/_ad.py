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

from . import _core
from . import tree as _tree

__all__ = ["grad", "value_and_grad", "jvp", "vjp"]


def _is_array_like(x) -> bool:
    return isinstance(x, _core.Array) or hasattr(x, "__array__") or hasattr(x, "__array_interface__")


def _to_array(x, name: str):
    if isinstance(x, _core.Array):
        return x
    if isinstance(x, bool):
        return _core.asarray(x)
    if isinstance(x, (int, float)) or _is_array_like(x):
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


def _check_scalar_loss(value, name: str):
    if not isinstance(value, _core.Array):
        raise TypeError(f"{name}: the function must return a scalar array, got {type(value).__name__}")
    if value.shape != () or value.dtype == _core.bool_:
        raise ValueError(f"{name}: the function must return a rank-0 float array (a scalar loss), got "
                         f"{value.dtype.name}{list(value.shape)}; for vector outputs use qb.jacobian or qb.vjp")


def value_and_grad(fun: Callable = None, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False):
    """value_and_grad(f)(*args) -> (f(*args), gradient with respect to args[argnums]).

    The gradient mirrors the differentiated argument's pytree and keeps its dtypes (bool
    leaves get None). With has_aux, f returns (value, aux) and the result is
    ((value, aux), gradient)."""
    if fun is None:
        return lambda f: value_and_grad(f, argnums=argnums, has_aux=has_aux)
    if not callable(fun):
        raise TypeError(f"value_and_grad: expected a callable, got {type(fun).__name__}")
    name = getattr(fun, "__name__", "function")

    def vg(*args, **kwargs):
        nums, single = _normalize_argnums(argnums, len(args), "grad")
        positions = _leaf_positions(args, kwargs, nums)
        diff = {p for ps in positions.values() for p in ps}
        staged = _Staged(fun, args, kwargs, diff, "grad")
        out = staged.out
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                staged.trace.close()
                raise ValueError(f"grad({name}) with has_aux=True: the function must return (value, aux), got "
                                 f"{type(out).__name__}")
            value, aux = out
        else:
            value, aux = out, None
        try:
            _check_scalar_loss(value, f"grad({name})")
        except BaseException:
            staged.trace.close()
            raise
        aux_leaves, aux_def = _tree.flatten(aux)
        aux_arrays = [i for i, leaf in enumerate(aux_leaves) if isinstance(leaf, _core.Array)]
        graph, captured = staged.finish([value] + [aux_leaves[i] for i in aux_arrays])
        wrt = [staged.input_leaf[k] in diff and staged.inputs[k].dtype != _core.bool_
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


def grad(fun: Callable = None, argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False):
    """grad(f)(*args): the gradient of the scalar f with respect to args[argnums]."""
    if fun is None:
        return lambda f: grad(f, argnums=argnums, has_aux=has_aux)
    vg = value_and_grad(fun, argnums=argnums, has_aux=has_aux)
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
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists of arguments")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    p_leaves, p_def = _tree.flatten(list(primals))
    t_leaves, t_def = _tree.flatten(list(tangents))
    if p_def != t_def:
        raise ValueError(f"jvp: tangents have structure {t_def}, primals {p_def}")
    staged = _Staged(fun, tuple(primals), {}, set(range(len(p_leaves))), "jvp")
    out_leaves, out_def = _tree.flatten(staged.out)
    if not all(isinstance(o, _core.Array) for o in out_leaves):
        staged.trace.close()
        raise TypeError("jvp: the function must return arrays (or pytrees of arrays)")
    graph, captured = staged.finish(out_leaves)
    tangent_args = []
    wrt = []
    for k, a in enumerate(staged.inputs):
        t = _to_array(t_leaves[staged.input_leaf[k]], "jvp")
        float_input = a.dtype != _core.bool_
        if float_input:
            if t.shape != a.shape or t.dtype != a.dtype:
                raise ValueError(f"jvp: tangent {k} is {t.dtype.name}{list(t.shape)}, its primal "
                                 f"{a.dtype.name}{list(a.shape)}; they must match")
            tangent_args.append(t)
        wrt.append(float_input)
    wrt += [False] * len(captured)
    outs = graph.jvp(wrt).call(staged.inputs + captured + tangent_args)
    n = len(out_leaves)
    primal_out = outs[:n]
    dys = iter(outs[n:])
    tangent_out = [next(dys) if o.dtype != _core.bool_ else _core.zeros_like(o) for o in primal_out]
    return _tree.unflatten(out_def, primal_out), _tree.unflatten(out_def, tangent_out)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """(fun(*primals), vjp_fun[, aux]): vjp_fun(cotangent) gives the cotangents of primals
    (a tuple, one per primal). vjp_fun can be called many times."""
    staged = _Staged(fun, primals, {}, set(range(len(_tree.leaves(list(primals))))), "vjp")
    out = staged.out
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            staged.trace.close()
            raise ValueError("vjp with has_aux=True: the function must return (output, aux)")
        out, aux = out
    out_leaves, out_def = _tree.flatten(out)
    aux_leaves, aux_def = _tree.flatten(aux)
    aux_arrays = [i for i, leaf in enumerate(aux_leaves) if isinstance(leaf, _core.Array)]
    graph, captured = staged.finish(out_leaves + [aux_leaves[i] for i in aux_arrays])
    wrt = [a.dtype != _core.bool_ for a in staged.inputs] + [False] * len(captured)
    seed = [o.dtype != _core.bool_ for o in out_leaves] + [False] * len(aux_arrays)
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
            if o.dtype == _core.bool_:
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

def _single_array_arg(args, argnums, name):
    nums, single = _normalize_argnums(argnums, len(args), name)
    for i in nums:
        if not isinstance(args[i], _core.Array) and not _is_array_like(args[i]) and not isinstance(args[i], (int, float)):
            raise TypeError(f"{name}: argument {i} must be an array (pytrees are not supported here yet)")
    return nums, single


def _with_arg(args, i, value):
    return tuple(value if j == i else a for j, a in enumerate(args))


# Directions per batched pass of jacfwd/jacrev: memory stays bounded by this many JVPs or
# VJPs at once, whatever the input or output size.
JACOBIAN_CHUNK = 256


def _chunked_vmap(fn, basis):
    """vmap(fn) over the rows of basis, JACOBIAN_CHUNK rows at a time, results concatenated."""
    from ._vmap import vmap
    n = basis.shape[0]
    if n <= JACOBIAN_CHUNK:
        return vmap(fn)(basis)
    pieces = [vmap(fn)(basis[s:min(n, s + JACOBIAN_CHUNK)]) for s in range(0, n, JACOBIAN_CHUNK)]
    if isinstance(pieces[0], tuple):
        return tuple(_core.concat([p[k] for p in pieces], axis=0) for k in range(len(pieces[0])))
    return _core.concat(pieces, axis=0)


def jacfwd(fun: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Jacobian by forward mode: one JVP per input element, batched with vmap in chunks
    of JACOBIAN_CHUNK directions. Shape: output shape + input shape."""
    def jac(*args):
        nums, single = _single_array_arg(args, argnums, "jacfwd")
        outs = []
        for i in nums:
            x = _to_array(args[i], "jacfwd")
            n = x.size
            basis = _core.reshape(_core.eye(n, dtype=x.dtype), (n,) + x.shape)

            def column(t, i=i, x=x):
                tangents = tuple(t if j == i else _core.zeros_like(_to_array(a, "jacfwd"))
                                 for j, a in enumerate(args))
                return jvp(fun, tuple(_to_array(a, "jacfwd") for a in args), tangents)[1]

            cols = _chunked_vmap(column, basis)  # [n, *out]
            out_nd = cols.ndim - 1
            perm = tuple(range(1, out_nd + 1)) + (0,)
            j = _core.transpose(cols, perm) if out_nd else cols
            outs.append(_core.reshape(j, j.shape[:out_nd] + x.shape))
        return outs[0] if single else tuple(outs)

    return jac


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Jacobian by reverse mode: one VJP per output element, batched with vmap in chunks
    of JACOBIAN_CHUNK directions. Shape: output shape + input shape."""
    def jac(*args):
        nums, single = _single_array_arg(args, argnums, "jacrev")
        arrays = tuple(_to_array(a, "jacrev") for a in args)
        out, fn = vjp(fun, *arrays)
        if not isinstance(out, _core.Array):
            raise TypeError("jacrev: the function must return one array")
        m = out.size
        basis = _core.reshape(_core.eye(m, dtype=out.dtype), (m,) + out.shape)
        rows = _chunked_vmap(fn, basis)  # tuple over args of [m, *in]
        results = []
        for i in nums:
            r = rows[i]
            results.append(_core.reshape(r, out.shape + arrays[i].shape))
        return results[0] if single else tuple(results)

    return jac


def jacobian(fun: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Jacobian: reverse mode when the output has fewer elements than the inputs,
    forward mode otherwise (JAX's jacrev/jacfwd choice, made per call)."""
    def jac(*args):
        nums, _ = _normalize_argnums(argnums, len(args), "jacobian")
        staged_out = _probe_output_size(fun, args)
        n_in = sum(_to_array(args[i], "jacobian").size for i in nums)
        chosen = jacrev if staged_out < n_in else jacfwd
        return chosen(fun, argnums)(*args)
    return jac


def _probe_output_size(fun, args) -> int:
    staged = _Staged(fun, tuple(args), {}, set(), "jacobian")
    out = staged.out
    staged.trace.close()
    if not isinstance(out, _core.Array):
        raise TypeError("jacobian: the function must return one array")
    return out.size


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0):
    """The Hessian of a scalar function: forward over reverse (jacfwd of jacrev)."""
    return jacfwd(jacrev(fun, argnums), argnums)


def hvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]):
    """Hessian-vector product of a scalar function, forward over reverse:
    (grad f(primals), H tangents) without forming H."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("hvp: primals and tangents must be tuples or lists")
    argnums = tuple(range(len(primals)))
    g = grad(fun, argnums=argnums)
    out, tan = jvp(lambda *xs: g(*xs), tuple(primals), tuple(tangents))
    return out, tan


__all__ += ["jacfwd", "jacrev", "jacobian", "hessian", "hvp"]
