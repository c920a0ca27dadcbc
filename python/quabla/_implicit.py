"""Implicit differentiation (API.md §9): qb.custom_linear_solve and qb.custom_root.

custom_linear_solve records one ``linear_solve`` IR node owning four regions (solve,
transpose_solve, matvec and its transpose vecmat, all traced at the call). Transforms never
look inside solve: the JVP is x' = A^-1 (b' - A'(x)) (one more solve, A' from
differentiating matvec), the transpose swaps solve with transpose_solve and matvec with
vecmat, and vmap batches the regions. So an iterative solver's loop is never differentiated,
and reverse mode works although while loops have no transpose.

custom_root is a custom_jvp node whose rule reads the node's own output x* (so higher orders
use the rule again) and returns the implicit-function tangent -(df/dx)^-1 (df/dtheta) dtheta
as a custom_linear_solve over tangent_solve. The function's closed-over values (theta) are
made explicit arguments first (closure conversion through its traced graph).
"""
from __future__ import annotations

from typing import Any, Callable

from . import _core
from . import tree as _tree
from ._control import _Region, _carry_leaves, _spec, while_loop

_FLOATS = (_core.float32, _core.float64, _core.complex64, _core.complex128)


def _describe(a) -> str:
    return f"{a.dtype.name}{list(a.shape)}"


def _float_leaves(tree, name: str, root: str):
    """(leaf arrays, treedef) of a pytree of floating-point arrays (Python floats become
    float arrays of the default float dtype)."""
    paths, treedef = _tree.flatten_with_path(tree)
    leaves, _weak, _ = _carry_leaves(tree, f"{name}: {root}", root)
    out = []
    for (path, _leaf), a in zip(paths, leaves):
        if a.dtype not in _FLOATS:
            raise TypeError(f"{name}: {_tree.keystr(path, root)} is {_describe(a)}; it must be floating point "
                            f"(convert it with .astype(qb.float32) or .astype(qb.float64))")
        out.append(a)
    if not out:
        raise ValueError(f"{name}: {root} has no arrays")
    return out, treedef


def _like(name: str, what: str, out, leaves, treedef) -> list:
    """out (a pytree) as leaf arrays with exactly the structure, shapes and dtypes of leaves."""
    o_leaves, o_def = _tree.flatten(out)
    if o_def != treedef:
        raise TypeError(f"{name}: {what} returned structure {o_def}, expected {treedef} (the structure of b)")
    arrays = []
    for k, (o, a) in enumerate(zip(o_leaves, leaves)):
        if not isinstance(o, _core.Array):
            o = _core.asarray(o, dtype=a.dtype)
        if tuple(o.shape) != tuple(a.shape):
            raise TypeError(f"{name}: {what} returned {_describe(o)} for leaf {k}, expected {_describe(a)}")
        arrays.append(o if o.dtype == a.dtype else o.astype(a.dtype))
    return arrays


def _transpose_of(matvec: Callable, leaves, treedef) -> Callable:
    """y -> A^T y for the linear map matvec (its VJP, which does not depend on the point)."""
    from ._ad import vjp

    def vecmat(y):
        zero = _tree.unflatten(treedef, [_core.zeros_like(a) for a in leaves])
        _, pull = vjp(matvec, zero)
        return pull(y)[0]
    return vecmat


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable, transpose_solve: Callable = None,
                        symmetric: bool = False, has_aux: bool = False):
    """x solving matvec(x) = b, computed by ``solve(matvec, b)``, differentiated implicitly.

    As ``jax.lax.custom_linear_solve``: ``matvec`` is a linear function of pytrees (x has
    b's structure), ``solve(matvec, b)`` any solver (an iterative loop, a factorization);
    ``transpose_solve(vecmat, b)`` solves with the transposed operator and is needed for
    reverse mode unless ``symmetric=True`` (then solve serves both). Derivatives never go
    through solve: x' = A^-1 (b' - A'(x)) in forward mode, cotangents by transpose_solve, to
    any order, under jit and vmap. With ``has_aux=True`` solve (and transpose_solve) return
    ``(x, aux)`` and the call returns ``(x, aux)``; aux is not differentiated.
    """
    name = "custom_linear_solve"
    for f, what in ((matvec, "matvec"), (solve, "solve")):
        if not callable(f):
            raise TypeError(f"{name}: {what} must be a function, got {type(f).__name__}")
    if transpose_solve is not None and not callable(transpose_solve):
        raise TypeError(f"{name}: transpose_solve must be a function or None, got {type(transpose_solve).__name__}")
    leaves, treedef = _float_leaves(b, name, "b")
    nb = len(leaves)
    specs = [_spec(a) for a in leaves]

    def vec(params):
        return _tree.unflatten(treedef, list(params[:nb]))

    aux_def = None
    aux_like = []

    def split(what, out):
        if not has_aux:
            return out, None
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"{name}: with has_aux=True, {what} must return a pair (x, aux), got {type(out).__name__}")
        return out[0], out[1]

    def call_solve(fun, params):
        nonlocal aux_def, aux_like
        x, aux = split("solve", fun(matvec, vec(params)))
        xs = _like(name, "solve", x, leaves, treedef)
        if not has_aux:
            return xs
        a_leaves, aux_def = _tree.flatten(aux)
        aux_like = [a if isinstance(a, _core.Array) else _core.asarray(a) for a in a_leaves]
        return xs + aux_like

    # Without transpose_solve (and not symmetric) nothing may transpose the node (mode bit
    # 1 makes that raise), so solve and matvec stand in for the transposed pair.
    transposable = symmetric or transpose_solve is not None
    vecmat = matvec if symmetric or not transposable else _transpose_of(matvec, leaves, treedef)

    def call_tsolve(fun, params):
        # transpose_solve's aux is not an output of the node: zeros stand in for solve's.
        x, _ = split("transpose_solve", fun(vecmat, vec(params)))
        return _like(name, "transpose_solve", x, leaves, treedef) + [_core.zeros_like(a) for a in aux_like]

    def call_map(what):
        def call(fun, params):
            return _like(name, what, fun(vec(params)), leaves, treedef)
        return call

    tsolve = transpose_solve if transpose_solve is not None else solve
    plan = ((solve, "solve", call_solve), (tsolve, "transpose_solve", call_tsolve),
            (matvec, "matvec", call_map("matvec")), (vecmat, "vecmat", call_map("the transpose of matvec")))
    regions, finished = [], []
    try:
        for fun, what, call in plan:
            regions.append(_Region(fun, f"{name} {what}", call, specs))
        for r in regions:
            finished.append(r.finish(r.out))
    except BaseException:
        for r in regions[len(finished):]:
            r.close()
        raise
    operands = list(leaves)
    feeds = []
    for graph, captured, _ in finished:
        feeds.append((graph, list(range(nb)) + [len(operands) + i for i in range(len(captured))]))
        operands.extend(captured)
    mode = 0 if transposable else 1
    outs = _core.region_call("linear_solve", feeds, operands, num_consts=nb, mode=mode)
    x = _tree.unflatten(treedef, outs[:nb])
    if has_aux:
        return x, _tree.unflatten(aux_def, outs[nb:])
    return x


def _closure_convert(fun: Callable, leaves, treedef, name: str):
    """(graph, consts, out treedef): fun traced at x's shapes; graph.call(x_leaves + consts)
    gives fun's output leaves, with the values fun closes over (consts) made explicit."""
    out_def = [None]

    def call(f, params):
        out = f(_tree.unflatten(treedef, list(params)))
        o_leaves, out_def[0] = _tree.flatten(out)
        return [o if isinstance(o, _core.Array) else _core.asarray(o) for o in o_leaves]

    region = _Region(fun, name, call, [_spec(a) for a in leaves])
    graph, captured, _ = region.finish(region.out)
    return graph, list(captured), out_def[0]


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
    """A root x of f (f(x) = 0) from ``solve(f, initial_guess)``, differentiated implicitly.

    As ``jax.lax.custom_root``: derivatives with respect to the values f closes over come
    from the implicit function theorem, dx = -(df/dx)^-1 (df/dtheta) dtheta, never from
    solve's iterations; ``tangent_solve(g, y)`` solves the linear system g(x) = y for the
    linear map g = df/dx at the root (e.g. ``lambda g, y: qb.linalg.solve(qb.jacfwd(g)(y), y)``
    for a scalar or small dense system). The initial guess gets no derivative. Works in
    forward and reverse mode, to any order, under jit and vmap, inside loops. With
    ``has_aux=True`` solve returns ``(x, aux)`` and so does the call.
    """
    from ._ad import jvp
    from ._custom import stop_gradient

    name = "custom_root"
    for fn, what in ((f, "f"), (solve, "solve"), (tangent_solve, "tangent_solve")):
        if not callable(fn):
            raise TypeError(f"{name}: {what} must be a function, got {type(fn).__name__}")
    x_leaves, x_def = _float_leaves(initial_guess, name, "initial_guess")
    nx = len(x_leaves)
    graph, consts, out_def = _closure_convert(f, x_leaves, x_def, f"{name} f")
    if out_def != x_def:
        raise TypeError(f"{name}: f must return a value of initial_guess's structure {x_def}, got {out_def}")
    nk = len(consts)
    float_consts = [k for k, c in enumerate(consts) if c.dtype in _FLOATS]

    def f_of(x, cs):
        out = graph.call(list(_tree.flatten(x)[0]) + list(cs))
        return _tree.unflatten(x_def, list(out))

    aux_def = [None]

    def call_primal(_fun, params):
        x0 = _tree.unflatten(x_def, list(params[:nx]))
        cs = params[nx:nx + nk]
        guess = _tree.map(stop_gradient, x0)
        out = solve(lambda x: f_of(x, cs), guess)
        aux = None
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{name}: with has_aux=True, solve must return a pair (x, aux)")
            out, aux = out
        xs = _like(name, "solve", out, x_leaves, x_def)
        if not has_aux:
            return xs
        a_leaves, aux_def[0] = _tree.flatten(aux)
        a_arrays = [a if isinstance(a, _core.Array) else _core.asarray(a) for a in a_leaves]
        return xs + a_arrays

    specs = [_spec(a) for a in x_leaves] + [_spec(c) for c in consts]
    primal = _Region(solve, f"{name} solve", call_primal, specs)
    p_graph, p_captured, out_arrays = primal.finish(primal.out)
    n_all = len(out_arrays)
    out_floats = [k for k, o in enumerate(out_arrays) if o.dtype in _FLOATS]

    def call_rule(_fun, params):
        # params: x0..., consts..., tangents of the float args (x0's, then the float consts'),
        # then the node's outputs (x*, aux...).
        cs = params[nx:nx + nk]
        t = params[nx + nk:nx + nk + nx + len(float_consts)]
        outs = params[nx + nk + nx + len(float_consts):]
        x_star = _tree.unflatten(x_def, list(outs[:nx]))
        dcs = list(t[nx:])
        rule_outs = list(outs)
        if float_consts:
            def f_theta(*fc):
                full = list(cs)
                for j, k in enumerate(float_consts):
                    full[k] = fc[j]
                return f_of(x_star, full)
            _, df = jvp(f_theta, tuple(cs[k] for k in float_consts), tuple(dcs))
            rhs = _tree.map(lambda v: -v, df)

            def matvec(v):
                return jvp(lambda x: f_of(x, cs), (x_star,), (v,))[1]

            dx = custom_linear_solve(matvec, rhs, lambda mv, r: tangent_solve(mv, r),
                                     transpose_solve=lambda vm, r: tangent_solve(vm, r))
            dx_leaves = _tree.flatten(dx)[0]
        else:
            dx_leaves = [_core.zeros_like(a) for a in x_leaves]
        tangents = []
        for k in out_floats:
            tangents.append(dx_leaves[k] if k < nx else _core.zeros_like(out_arrays[k]))
        return rule_outs + tangents

    rule_specs = specs + [_spec(a) for a in x_leaves] + [_spec(consts[k]) for k in float_consts] \
        + [_spec(o) for o in out_arrays]
    rule = _Region(tangent_solve, f"{name} rule", call_rule, rule_specs)
    r_graph, r_captured, _ = rule.finish(rule.out)
    args = list(x_leaves) + consts
    na = len(args)
    # What solve closes over (e.g. the parameter its iteration uses) gets no derivative: by
    # the implicit function theorem the root's derivative comes from f alone, as in JAX.
    p_captured = [stop_gradient(c) for c in p_captured]
    operands = args + p_captured + r_captured
    p_feed = list(range(na)) + [na + i for i in range(len(p_captured))]
    nt = nx + len(float_consts)
    n0 = na + len(p_captured) + len(r_captured)  # rule-layout positions past the operands
    r_feed = list(range(na)) + [n0 + j for j in range(nt)] + [n0 + nt + j for j in range(n_all)] \
        + [na + len(p_captured) + i for i in range(len(r_captured))]
    outs = _core.region_call("custom_jvp", [(p_graph, p_feed), (r_graph, r_feed)], operands, num_consts=na, mode=1)
    x = _tree.unflatten(x_def, outs[:nx])
    if has_aux:
        return x, _tree.unflatten(aux_def[0], outs[nx:])
    return x


def newton(f: Callable, x0: Any, *, args: tuple = (), tol: float = None, maxiter: int = 50, info: bool = False,
           linear_solver: str = "dense", line_search: bool = False):
    """A root of ``f(x, *args) = 0`` by Newton's method (x a pytree of float arrays, f's
    output of x's structure), one while loop in the IR.

    Each step solves J dx = f(x) with J = df/dx: ``linear_solver="dense"`` builds J by
    jacfwd and solves it with qb.linalg.solve (small systems; the own kernels up to 32
    unknowns); ``"gmres"`` or ``"cg"`` solve matrix-free with J v by jvp (Newton-Krylov;
    cg needs J symmetric positive definite). ``line_search=True`` halves the step (up to 30
    times) until max|f| decreases. Stops when max|f(x)| <= tol (default 1e-10 in float64,
    1e-5 in float32) or after maxiter steps. Derivatives with respect to args (and to what f
    closes over) by the implicit function theorem, in forward and reverse mode, to any
    order; x0 gets none. Returns x, or ``(x, SolverInfo)`` with ``info=True``.
    """
    from ._ad import jacfwd, jvp
    from ._krylov import SolverInfo, _Flat, cg, gmres
    from .linalg import solve as dense_solve

    name = "newton"
    if not callable(f):
        raise TypeError(f"{name}: f must be a function f(x, *args), got {type(f).__name__}")
    if linear_solver not in ("dense", "cg", "gmres"):
        raise ValueError(f"{name}: linear_solver must be 'dense', 'cg' or 'gmres', got {linear_solver!r}")
    if isinstance(maxiter, bool) or not isinstance(maxiter, int) or maxiter < 0:
        raise ValueError(f"{name}: maxiter must be a non-negative int, got {maxiter!r}")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0):
        raise ValueError(f"{name}: tol must be a number >= 0 or None, got {tol!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"{name}: args must be a tuple, got {type(args).__name__}")
    leaves, treedef = _float_leaves(x0, name, "x0")
    flat = _Flat(leaves, treedef)
    if tol is None:
        tol = 1e-10 if flat.dtype == _core.float64 else 1e-5

    def F(v):
        out = f(flat.unravel(v), *args)
        _like(name, "f", out, leaves, treedef)
        return flat.ravel(out)

    def linear(g, y):
        if linear_solver == "dense":
            return dense_solve(jacfwd(g)(y), y)
        solver = cg if linear_solver == "cg" else gmres
        return solver(g, y, tol=min(1e-3, tol) if flat.dtype == _core.float32 else 1e-10)[0]

    def solve(fun, guess):
        def resid(fx):
            return _core.max(_core.abs(fx))

        def step(x, fx):
            return linear(lambda v: jvp(fun, (x,), (v,))[1], fx)

        def cond(c):
            _x, _fx, res, k = c
            return (res > tol) & (k < maxiter)

        def body(c):
            x, fx, res, k = c
            dx = step(x, fx)
            if line_search:
                def ls_cond(s):
                    t, _xn, _fn, rn, i = s
                    return (rn >= res) & (i < 30)

                def ls_body(s):
                    t, _xn, _fn, _rn, i = s
                    t = t * 0.5
                    xn = x - t * dx
                    fn = fun(xn)
                    return t, xn, fn, resid(fn), i + 1
                xn = x - dx
                fn = fun(xn)
                one = _core.asarray(1.0, dtype=x.dtype)
                _t, xn, fn, rn, _i = while_loop(ls_cond, ls_body, (one, xn, fn, resid(fn),
                                                                    _core.asarray(0, dtype=_core.int32)))
            else:
                xn = x - dx
                fn = fun(xn)
                rn = resid(fn)
            return xn, fn, rn, k + 1

        f0 = fun(guess)
        x, _fx, res, k = while_loop(cond, body, (guess, f0, resid(f0), _core.asarray(0, dtype=_core.int32)))
        return x, (k, res, res <= tol)

    x, aux = custom_root(F, flat.ravel(x0), solve, linear, has_aux=True)
    x = flat.unravel(x)
    return (x, SolverInfo(*aux)) if info else x
