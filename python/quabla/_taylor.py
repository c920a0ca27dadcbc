"""Laplacians and other sums of directional derivatives in one forward pass (API.md §3).

`laplacian(f)` and `taylor(f, directions, weights, order)` stage f into a graph and apply
the C++ collapsed Taylor-mode transform (transforms/taylor.h): a forward pass that carries
each value's K directional first derivatives and a single, already summed second-order
coefficient. No Hessian is formed and no reverse pass runs; the result is an ordinary
traced program, so it nests in jit, vmap, grad (training) and in itself (the biharmonic
is laplacian(laplacian(f))). Higher orders along a direction nest the second-order pass.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from . import _core
from . import tree as _tree
from ._ad import _Staged, _is_float, _leaf_positions, _normalize_argnums

__all__ = ["laplacian", "taylor"]

# Directions per collapsed pass of laplacian: memory stays bounded by this many first-order
# coefficients per value, whatever the number of coordinates (as jacfwd's chunks).
LAPLACIAN_CHUNK = 512


def _one_argnum(argnums, nargs: int, name: str) -> int:
    if not isinstance(argnums, int) or isinstance(argnums, bool):
        raise TypeError(f"{name}: argnums must be one int (the argument whose coordinates the operator "
                        f"acts on), got {argnums!r}; for several arrays pass them as one pytree argument")
    return _normalize_argnums(argnums, nargs, name)[0][0]


def _second_order(fun: Callable, args: tuple, kwargs: dict, argnum: int, directions, weights, name: str):
    """(fun(*args), Y1, Y2) as pytrees of fun's output: Y1 leaves [K, *out.shape] hold the
    directional derivatives along directions[k], Y2 leaves sum_k w_k d^2/dt^2 out(x + t v_k).
    `directions(leaves)` gives, per float leaf of args[argnum], its [K, *leaf.shape] array;
    `weights` is None or a [K] array."""
    positions = _leaf_positions(args, kwargs, (argnum,))
    diff = set(positions[argnum])
    staged = _Staged(fun, args, kwargs, diff, name)
    out_leaves, out_def = _tree.flatten(staged.out)
    try:
        if not all(isinstance(o, _core.Array) for o in out_leaves):
            raise TypeError(f"{name}: the function must return arrays (or pytrees of arrays)")
        moving = []
        for k, a in enumerate(staged.inputs):
            if staged.input_leaf[k] not in diff:
                continue
            if not _is_float(a.dtype):
                raise TypeError(f"{name}: argument {argnum} must hold float arrays, but leaf "
                                f"{staged.input_leaf[k]} is {a.dtype.name} (integers carry no derivative); "
                                f"convert it with .astype(qb.float64)")
            moving.append(a)
        if not moving:
            raise ValueError(f"{name}: argument {argnum} holds no arrays to differentiate")
        dirs = directions(moving)
        k_dirs = int(dirs[0].shape[0])
        if weights is not None:
            weights = _core.asarray(weights) if not isinstance(weights, _core.Array) else weights
            if weights.shape != (k_dirs,):
                raise ValueError(f"{name}: weights must have shape ({k_dirs},), one per direction, got "
                                 f"{list(weights.shape)}")
            weights = weights.astype(_core.float64)
    except BaseException:
        staged.trace.close()
        raise
    graph, captured = staged.finish(out_leaves)
    wrt = [staged.input_leaf[k] in diff for k in range(len(staged.inputs))] + [False] * len(captured)
    transformed = graph.taylor2(wrt, k_dirs, weights is not None)
    extra = [weights] if weights is not None else []
    outs = transformed.call(staged.inputs + captured + list(dirs) + extra)
    n = len(out_leaves)
    primal = outs[:n]
    floats = [i for i, o in enumerate(primal) if _is_float(o.dtype)]
    y1 = [None] * n
    y2 = [None] * n
    for j, i in enumerate(floats):
        y1[i] = outs[n + j]
        y2[i] = outs[n + len(floats) + j]
    for i, o in enumerate(primal):
        if y1[i] is None:  # integer/bool outputs: no derivative, as jvp gives
            y2[i] = _core.zeros_like(o)
            y1[i] = _core.zeros((k_dirs,) + tuple(o.shape), dtype=o.dtype)
    return (_tree.unflatten(out_def, primal), _tree.unflatten(out_def, y1), _tree.unflatten(out_def, y2))


def laplacian(fun: Callable, argnums: int = 0):
    """laplacian(f)(*args): the sum of the unmixed second derivatives of f over every
    coordinate of args[argnums] (an array of any shape, or a pytree of arrays whose elements
    are all coordinates). f may return any array or pytree: each output element gets its own
    Laplacian (the result has the output's structure). Computed by the forward-Laplacian
    (collapsed Taylor-mode) transform: one forward pass, no Hessian; composes with jit,
    vmap, grad and itself (qb.laplacian(qb.laplacian(f)) is the biharmonic)."""
    if not callable(fun):
        raise TypeError(f"laplacian: expected a callable, got {type(fun).__name__}")
    name = getattr(fun, "__name__", "function")

    def lap(*args, **kwargs):
        argnum = _one_argnum(argnums, len(args), "laplacian")
        sizes = [math.prod(getattr(a, "shape", ())) for a in _tree.leaves(args[argnum])]
        total = sum(sizes)
        if sizes and total == 0:  # no coordinates (empty arrays): the empty sum
            return _tree.map(lambda o: _core.zeros_like(o), fun(*args, **kwargs))
        result = None
        # Coordinates in chunks of LAPLACIAN_CHUNK directions: the first-order coefficients
        # of every value hold one row per direction, so memory stays bounded for large
        # inputs (the primal is recomputed per chunk).
        for c0 in range(0, max(total, 1), LAPLACIAN_CHUNK):
            c1 = min(total, c0 + LAPLACIAN_CHUNK)

            def identity_rows(leaves, c0=c0, c1=c1):
                # Rows c0..c1 of the identity over all coordinates, cut into the leaves' columns.
                dirs, offset = [], 0
                for a in leaves:
                    size = math.prod(a.shape)
                    block = _core.eye(c1 - c0, size, c0 - offset, dtype=a.dtype)
                    dirs.append(_core.reshape(block, (c1 - c0,) + tuple(a.shape)))
                    offset += size
                return dirs

            part = _second_order(fun, args, kwargs, argnum, identity_rows, None, f"laplacian({name})")[2]
            result = part if result is None else _tree.map(lambda a, b: a + b, result, part)
        return result

    lap.__name__ = f"laplacian({name})"
    return lap


def _direction_leaves(directions, arg, name: str):
    """The direction arrays per float leaf of `arg`: `directions` has arg's structure with a
    leading axis of K directions on every leaf."""
    d_leaves, d_def = _tree.flatten(directions)
    a_leaves, a_def = _tree.flatten(arg)
    if d_def != a_def:
        raise ValueError(f"{name}: directions must have the structure of the argument ({a_def}), with a leading "
                         f"axis of directions on each leaf; got {d_def}")
    out, k_dirs = [], None
    for d, a in zip(d_leaves, a_leaves):
        d = d if isinstance(d, _core.Array) else _core.asarray(d)
        shape = tuple(getattr(a, "shape", ()))
        if d.ndim != len(shape) + 1 or tuple(d.shape[1:]) != shape:
            raise ValueError(f"{name}: each direction leaf must have shape (K,) + the argument leaf's shape "
                             f"{shape}, got {list(d.shape)}")
        if k_dirs is None:
            k_dirs = d.shape[0]
        elif d.shape[0] != k_dirs:
            raise ValueError(f"{name}: direction leaves disagree on the number of directions "
                             f"({k_dirs} and {d.shape[0]})")
        out.append(d)
    if not k_dirs:
        raise ValueError(f"{name}: needs at least one direction")
    return out


def _along(fun: Callable, argnum: int, v, order: int, name: str) -> Callable:
    """The function d^order/dt^order fun(x + t v) at t = 0 (v a pytree like args[argnum]):
    the second-order pass nested order // 2 times, with one first-order pass for odd order."""
    inner = fun if order <= 2 else _along(fun, argnum, v, order - 2, name)

    def g(*args, **kwargs):
        # One direction: each leaf of v with a leading axis of one, in its argument leaf's
        # dtype (the argument's float leaves, the ones _second_order differentiates).
        def one_direction(leaves):
            return [_core.expand_dims(_core.asarray(d), 0).astype(a.dtype) for d, a in zip(_tree.leaves(v), leaves)]

        _, y1, y2 = _second_order(inner, args, kwargs, argnum, one_direction, None, name)
        if order == 1:
            return _tree.map(lambda y: y[0], y1)
        return y2

    return g


def taylor(fun: Callable, directions: Any, weights: Any = None, order: int = 2, argnums: int = 0):
    """taylor(f, directions, weights=None, order=2)(*args) = sum_k w_k (d/dt)^order
    f(..., x + t v_k, ...) at t = 0, with x = args[argnums] and v_k = directions[k] (the
    directions carry a leading axis of K on each leaf of x's pytree; weights default to 1).

    order 2 is one collapsed Taylor-mode pass (the K second derivatives are never formed
    one by one): with v_k the eigenvectors of a symmetric A and w_k its eigenvalues it is
    trace(A Hessian), the divergence of a constant diffusion tensor. Orders 3 and up nest
    the second-order pass along each direction (vmapped over the directions); order 4 with
    one direction is a beam's u''''. Composes with jit, vmap and grad."""
    if not callable(fun):
        raise TypeError(f"taylor: expected a callable, got {type(fun).__name__}")
    if not isinstance(order, int) or isinstance(order, bool) or order < 1:
        raise ValueError(f"taylor: order must be a positive int, got {order!r}")
    name = f"taylor({getattr(fun, '__name__', 'function')})"

    def op(*args, **kwargs):
        argnum = _one_argnum(argnums, len(args), "taylor")
        dirs = _direction_leaves(directions, args[argnum], name)

        def cast(leaves):
            return [d.astype(a.dtype) for d, a in zip(dirs, leaves)]

        if order <= 2:
            _, y1, y2 = _second_order(fun, args, kwargs, argnum, cast, weights, name)
            if order == 2:
                return y2
            w = None if weights is None else _core.asarray(weights)
            return _tree.map(lambda y: _weighted_sum(y, w), y1)

        def per_direction(*v_leaves):
            v = _tree.unflatten(_tree.flatten(args[argnum])[1], list(v_leaves))
            return _along(fun, argnum, v, order, name)(*args, **kwargs)

        from ._vmap import vmap
        stacked = vmap(per_direction)(*dirs)
        w = None if weights is None else _core.asarray(weights)
        return _tree.map(lambda y: _weighted_sum(y, w), stacked)

    op.__name__ = name
    return op


def _weighted_sum(y, w):
    if w is None:
        return _core.sum(y, axis=0)
    w = w.astype(y.dtype)
    return _core.sum(y * _core.reshape(w, (-1,) + (1,) * (y.ndim - 1)), axis=0)
