"""qb.vmap (API.md §3): a function written for one example, applied over a batch axis.

The function is traced once on per-example tracers and its graph is batched by the C++
vmap transform, so the program does not grow with the batch size. in_axes and out_axes
are pytree prefixes (int, None, or a structure of them); negative axes count from the end.
"""
from __future__ import annotations

from typing import Any, Callable

from . import _core
from . import _named_axes
from . import tree as _tree
from ._ad import ExampleOf, _Staged, _is_array_like, _to_array

__all__ = ["vmap"]


def _is_axis_spec(x) -> bool:
    return x is None or (isinstance(x, int) and not isinstance(x, bool))


def _check_axes_spec(spec, what: str, name: str) -> None:
    """in_axes/out_axes are a pytree whose leaves are ints or None (checked when vmap is built)."""
    for path, leaf in _tree.flatten_with_path(spec, is_leaf=lambda x: x is None)[0]:
        if not _is_axis_spec(leaf):
            raise TypeError(f"vmap({name}): {what} must be an int, None, or a pytree (tuple, list, dict, registered "
                            f"class) of them, got {leaf!r} at {_tree.keystr(path, what)}")


def _broadcast_prefix(prefix, full, what: str):
    """One axis spec per leaf of `full`, from a pytree prefix `prefix` of it (any container
    kind: tuples, lists, dicts, NamedTuples, registered classes)."""
    if _is_axis_spec(prefix):
        return [prefix] * len(_tree.leaves(full))
    p_info, f_info = _tree._children(prefix), _tree._children(full)
    sequences = (_tree._TUPLE, _tree._LIST, _tree._NAMEDTUPLE)  # matched by position
    ok = p_info is not None and f_info is not None and len(p_info[2]) == len(f_info[2])
    if ok and not (p_info[0] in sequences and f_info[0] in sequences):
        # dicts by keys; NamedTuples and registered classes by type and fields
        ok = p_info[0] == f_info[0] and type(prefix) is type(full) and p_info[3] == f_info[3]
    if not ok:
        raise ValueError(f"vmap: {what} {prefix!r} is not a prefix of the structure {_tree.structure(full)} "
                         f"(use an int, None, or a matching container of them)")
    p_children, f_children = p_info[2], f_info[2]
    out = []
    for p, f in zip(p_children, f_children):
        out.extend(_broadcast_prefix(p, f, what))
    return out


def _broadcast_outputs(out, out_axes, size, name):
    """Outputs of a vmap that maps nothing (axis_size given): each repeated size times along
    its out_axes (None leaves it as it is)."""
    leaves, treedef = _tree.flatten(out)
    axes = _broadcast_prefix(out_axes, out, "out_axes")
    result = []
    for leaf, ax in zip(leaves, axes):
        a = _core.asarray(leaf)
        if ax is None:
            result.append(a)
            continue
        if not -a.ndim - 1 <= ax <= a.ndim:
            raise ValueError(f"vmap({name}): out_axes {ax} is out of range for an output of rank {a.ndim}")
        ax %= a.ndim + 1
        shape = tuple(a.shape[:ax]) + (size,) + tuple(a.shape[ax:])
        result.append(_core.broadcast_to(_core.expand_dims(a, ax), shape))
    return _tree.unflatten(treedef, result)


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name=None, axis_size: Any = None,
         spmd_axis_name=None) -> Callable:
    """vmap(f, in_axes, out_axes)(*args): f mapped over the in_axes of its arguments.
    Keyword arguments are mapped over their leading axis (as in JAX); axis_size gives the
    batch size when no argument is mapped (the outputs are then broadcast to it). axis_name
    names the mapped axis for the collectives of qb.lax (psum, pmean, all_gather,
    axis_index, ...) inside f; spmd_axis_name is accepted and ignored (one device)."""
    if axis_size is not None and (isinstance(axis_size, bool) or not isinstance(axis_size, int) or axis_size < 1):
        raise ValueError(f"vmap: axis_size must be a positive int, got {axis_size!r}")
    if not callable(fun):
        raise TypeError(f"vmap: expected a callable, got {type(fun).__name__}")
    name = getattr(fun, "__name__", "function")
    _check_axes_spec(in_axes, "in_axes", name)
    _check_axes_spec(out_axes, "out_axes", name)

    def mapped(*args, **kwargs):
        if kwargs:  # mapped over axis 0, as JAX does: passed on as extra positional arguments
            names, n = list(kwargs), len(args)
            spec = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * n
            if len(spec) != n:
                raise ValueError(f"vmap({name}): in_axes has {len(spec)} entries but {n} positional arguments "
                                 "were given")

            def positional(*a):
                return fun(*a[:n], **dict(zip(names, a[n:])))
            positional.__name__ = name
            return vmap(positional, spec + (0,) * len(names), out_axes, axis_name=axis_name, axis_size=axis_size)(
                *args, *(kwargs[k] for k in names))
        spec = in_axes
        if isinstance(spec, list):
            spec = tuple(spec)
        if isinstance(spec, tuple) and len(args) != len(spec):
            raise ValueError(f"vmap({name}): in_axes has {len(spec)} entries but {len(args)} arguments were given")
        axes = _broadcast_prefix(spec, list(args), "in_axes")
        leaves, treedef = _tree.flatten((list(args), {}))
        batch = None
        example_leaves = []
        for leaf, ax in zip(leaves, axes):
            if ax is None:
                example_leaves.append(leaf)
                continue
            if not isinstance(ax, int) or isinstance(ax, bool):
                raise TypeError(f"vmap({name}): in_axes entries must be ints or None, got {ax!r}")
            if not _is_array_like(leaf) and not isinstance(leaf, (int, float)):
                raise ValueError(f"vmap({name}): cannot map over a {type(leaf).__name__} leaf; use in_axes=None for it")
            a = _to_array(leaf, "vmap")
            if a.ndim == 0:
                raise ValueError(f"vmap({name}): cannot map axis {ax} of a scalar; use in_axes=None for it")
            if not -a.ndim <= ax < a.ndim:
                raise ValueError(f"vmap({name}): in_axes {ax} is out of range for an argument of shape {a.shape}")
            ax %= a.ndim
            if batch is None:
                batch = a.shape[ax]
            elif a.shape[ax] != batch:
                raise ValueError(f"vmap({name}): mapped axes have different sizes ({batch} and {a.shape[ax]}); "
                                 f"every mapped argument needs the same batch size")
            example_leaves.append(ExampleOf(a, ax))
        if batch is not None and axis_size is not None and batch != axis_size:
            raise ValueError(f"vmap({name}): axis_size={axis_size} but the mapped axes have size {batch}")
        if batch is None:
            if axis_size is None:
                raise ValueError(f"vmap({name}): in_axes maps no argument; map one, or give axis_size to broadcast")
            if axis_name is None:
                return _broadcast_outputs(fun(*args), out_axes, axis_size, name)
            # Collectives over the name still see axis_size examples: map a placeholder.
            return vmap(lambda _, *a: fun(*a), (0,) + (None,) * len(args), out_axes, axis_name=axis_name)(
                _core.zeros(axis_size), *args)
        ex_args, _ = _tree.unflatten(treedef, example_leaves)
        axis = _named_axes.bound_axis(axis_name, batch) if axis_name is not None else None
        if axis is None:
            staged = _Staged(fun, tuple(ex_args), {}, set(), "vmap")
        else:
            with axis:
                staged = _Staged(fun, tuple(ex_args), {}, set(), "vmap")
        out_leaves, out_def = _tree.flatten(staged.out)
        for k, o in enumerate(out_leaves):
            if isinstance(o, (bool, int, float)):
                out_leaves[k] = _core.asarray(o)  # a Python number: the same value for every example
            elif not isinstance(o, _core.Array):
                staged.trace.close()
                raise TypeError(f"vmap({name}): the function must return arrays, got {type(o).__name__}")
        graph, captured = staged.finish(out_leaves)
        graph_axes = []
        for k in range(len(staged.inputs)):
            leaf = example_leaves[staged.input_leaf[k]]
            graph_axes.append(leaf.axis if isinstance(leaf, ExampleOf) else -1)
        graph_axes += [-1] * len(captured)
        o_axes = _broadcast_prefix(out_axes, _tree.unflatten(out_def, out_leaves), "out_axes")
        mapped_outputs = graph.depends_on([ax >= 0 for ax in graph_axes])
        for j, ax in enumerate(o_axes):
            if ax is None and mapped_outputs[j]:
                raise ValueError(f"vmap({name}): out_axes=None for output {j}, which depends on the mapped axis; "
                                 f"use an integer out_axes for it")
        outs = graph.vmap(graph_axes, batch, axis.id if axis is not None else -1).call(staged.inputs + captured)
        result = []
        for o, ax in zip(outs, o_axes):
            if ax is None:  # the same for every example: one copy
                result.append(o[0])
                continue
            nd = o.ndim
            if not -nd <= ax < nd:
                raise ValueError(f"vmap({name}): out_axes {ax} is out of range for an output of rank {nd}")
            ax %= nd
            if ax != 0:
                perm = list(range(1, nd))
                perm.insert(ax, 0)
                o = _core.transpose(o, tuple(perm))
            result.append(o)
        return _tree.unflatten(out_def, result)

    mapped.__name__ = f"vmap({name})"
    return mapped
