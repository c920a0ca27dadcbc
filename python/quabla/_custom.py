"""Custom derivative rules (API.md §5): qb.custom_jvp.

A call records one custom_jvp IR node that owns two regions: the function's body and the
JVP rule, both traced on fresh tracers at the call (closures over outer tracers become node
operands, as for control-flow bodies). Running the node runs the body; the JVP transform
inlines the rule, so the rule's own derivatives give higher orders and transposing its
linear part gives reverse mode, as in JAX.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from . import _core
from . import tree as _tree
from ._control import _Region, _carry_leaves, _spec

_FLOATS = (_core.float32, _core.float64, _core.complex64, _core.complex128)


def _describe(a) -> str:
    return f"{a.dtype.name}{list(a.shape)}"


class SymbolicZero:
    """A tangent or cotangent known to be zero, passed to (and accepted from) custom rules
    defined with ``symbolic_zeros=True`` (as jax.custom_derivatives.SymbolicZero). It is a
    marker, not an array: test for it with ``isinstance`` or ``type(t) is SymbolicZero``,
    and use ``t.instantiate()`` for an array of zeros."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def instantiate(self):
        return _core.zeros(self.shape, dtype=self.dtype)

    def __repr__(self) -> str:
        return f"SymbolicZero({self.dtype.name}{list(self.shape)})"

    def __array__(self, *_args, **_kwargs):
        raise TypeError("a SymbolicZero is a marker for a zero tangent, not an array; call .instantiate() for zeros")

    def _refuse(self, *_args, **_kwargs):
        raise TypeError("a SymbolicZero is a marker for a zero tangent, not an array: test for it "
                        "(isinstance(t, qb.custom_derivatives.SymbolicZero)) or call t.instantiate() for zeros")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __neg__ = __matmul__ = __rmatmul__ = __pow__ = __getitem__ = _refuse


class CustomVJPPrimal:
    """An argument of a custom_vjp ``fwd`` defined with ``symbolic_zeros=True``: its
    ``value`` and whether it is ``perturbed`` (may carry a nonzero tangent)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value, perturbed: bool):
        self.value = value
        self.perturbed = bool(perturbed)

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def zero_from_primal(val, symbolic_zeros: bool = False):
    """A zero tangent for each leaf of ``val``: SymbolicZero markers when symbolic_zeros,
    else arrays of zeros."""
    def one(x):
        a = x if isinstance(x, _core.Array) else _core.asarray(x)
        return SymbolicZero(a.shape, a.dtype) if symbolic_zeros else _core.zeros_like(a)
    return _tree.map(one, val)


def _instantiate(x, like):
    """x, with a SymbolicZero leaf replaced by zeros shaped like `like`."""
    return _core.zeros_like(like) if isinstance(x, SymbolicZero) else x


class _CustomRule:
    """What custom_jvp and custom_vjp share: the wrapped function, nondiff_argnums, and
    splitting a call's arguments into the static ones and the differentiable leaves."""

    kind = "custom"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        if not callable(fun):
            raise TypeError(f"{self.kind}: expected a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(int(i) for i in nondiff_argnums)
        self._in_rule = 0  # > 0 while this function's own rules are being traced

    @property
    def _name(self) -> str:
        return getattr(self.fun, "__name__", "function")

    def _merge(self, nondiff, diff):
        """The full positional argument list from the nondiff and the differentiable ones."""
        args, nd, d = [], list(nondiff), list(diff)
        n = len(nd) + len(d)
        static = {i % n for i in self.nondiff_argnums} if n else set()
        for i in range(n):
            args.append(nd.pop(0) if i in static else d.pop(0))
        return args

    def _caller(self, nondiff, in_def):
        """call(f, params): f on the full argument list rebuilt from the leaf params."""
        def call(fun, params):
            return fun(*self._merge(nondiff, _tree.unflatten(in_def, params)))
        return call

    def _split(self, args):
        """(nondiff args, diff args, their leaf arrays, weak flags, treedef, float leaf positions)."""
        name = self._name
        for i in self.nondiff_argnums:
            if not -len(args) <= i < len(args):
                raise ValueError(f"{self.kind}({name}): nondiff_argnums {i} is out of range for {len(args)} arguments")
        static = {i % len(args) for i in self.nondiff_argnums}
        nondiff = [a for i, a in enumerate(args) if i in static]
        diff = [a for i, a in enumerate(args) if i not in static]
        leaves, weak, in_def = _carry_leaves(diff, f"{self.kind}({name}): argument", "args")
        floats = [k for k, a in enumerate(leaves) if a.dtype in _FLOATS]
        return nondiff, diff, leaves, weak, in_def, floats


class custom_jvp(_CustomRule):
    """custom_jvp(fun, nondiff_argnums=()): fun with a user-defined JVP rule.

    ``@f.defjvp`` registers ``rule(primals, tangents) -> (primal_out, tangent_out)`` (with
    nondiff_argnums, ``rule(*nondiff_args, primals, tangents)``). Tangents of arguments the
    caller does not differentiate arrive as zeros. The rule is traced at the first use and
    its output structure, shapes and dtypes are checked against fun's.
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        if not callable(jvp):
            raise TypeError(f"custom_jvp({self._name}).defjvp: expected a function, got {type(jvp).__name__}")
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps: Callable):
        """One rule per positional argument: ``jvp_i(g_i, primal_out, *primals)`` gives that
        argument's contribution to the output tangent (None: it contributes nothing)."""
        fun = self.fun

        def rule(*args):
            *nondiff, primals, tangents = args
            out = fun(*self._merge(nondiff, primals))
            total = None
            for j, t in zip(jvps, tangents):
                if j is None:
                    continue
                c = j(t, out, *primals)
                total = c if total is None else _tree.map(lambda a, b: a + b, total, c)
            if total is None:
                total = _tree.map(lambda o: _core.zeros_like(o), out)
            return out, total

        self.jvp = rule
        self.symbolic_zeros = False
        return rule

    def __call__(self, *args: Any):
        name = self._name
        if self._in_rule:
            # The rule calling the function itself (``return f(x), ...``): the plain body.
            # The JVP takes the primal outputs from the node, not from the rule, so this
            # value only feeds the rule's tangent expression.
            return self.fun(*args)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        nondiff, diff, leaves, weak, in_def, floats = self._split(args)
        nl = len(leaves)
        call_fun = self._caller(nondiff, in_def)

        def call_rule(rule, params):
            primals = _tree.unflatten(in_def, params[:nl])
            # Integer and bool arguments have zero tangents: SymbolicZero markers when the
            # rule asked for them, else arrays of zeros. A float argument's tangent is an
            # array, zeros when it is not differentiated (the compiler folds them away).
            if self.symbolic_zeros:
                tl = [SymbolicZero(a.shape, a.dtype) for a in params[:nl]]
            else:
                tl = [_core.zeros_like(a) for a in params[:nl]]
            for j, k in enumerate(floats):
                tl[k] = params[nl + j]
            tangents = _tree.unflatten(in_def, tl)
            return rule(*nondiff, tuple(primals), tuple(tangents))

        specs = [_spec(a, w) for a, w in zip(leaves, weak)]
        primal = _Region(self.fun, "custom_jvp", call_fun, specs)
        self._in_rule += 1
        try:
            rule = _Region(self.jvp, "custom_jvp rule", call_rule, specs + [_spec(leaves[k]) for k in floats])
        except BaseException:
            primal.close()
            raise
        finally:
            self._in_rule -= 1
        try:
            out_leaves, out_def = _tree.flatten(primal.out)
            out_arrays = [o if isinstance(o, _core.Array) else _core.asarray(o) for o in out_leaves]
            rule_out = rule.out
            if not (isinstance(rule_out, (tuple, list)) and len(rule_out) == 2):
                raise TypeError(f"custom_jvp({name}): the JVP rule must return a pair (primal_out, tangent_out), "
                                f"got {type(rule_out).__name__}")
            r_primal, r_tangent = rule_out
            rp_leaves, rp_def = _tree.flatten(r_primal)
            rt_leaves, rt_def = _tree.flatten(r_tangent)
            if rp_def != out_def or rt_def != out_def:
                bad = rp_def if rp_def != out_def else rt_def
                which = "primal_out" if rp_def != out_def else "tangent_out"
                raise TypeError(f"custom_jvp({name}): the JVP rule's {which} has structure {bad}, but {name} "
                                f"returns {out_def}")
            rp_arrays = [o if isinstance(o, _core.Array) else _core.asarray(o) for o in rp_leaves]
            rt_leaves = [_instantiate(t, o) for t, o in zip(rt_leaves, out_arrays)]
            rt_arrays = [o if isinstance(o, _core.Array) else _core.asarray(o) for o in rt_leaves]
            rule_results = []
            for k, (o, p, t) in enumerate(zip(out_arrays, rp_arrays, rt_arrays)):
                if tuple(p.shape) != tuple(o.shape) or (p.dtype != o.dtype and not _weak_number(rp_leaves[k])):
                    raise TypeError(f"custom_jvp({name}): the JVP rule's primal output {k} is {_describe(p)}, "
                                    f"but {name} returns {_describe(o)}")
                rule_results.append(p if p.dtype == o.dtype else p.astype(o.dtype))
            for k, (o, t) in enumerate(zip(out_arrays, rt_arrays)):
                if o.dtype not in _FLOATS:
                    continue
                if tuple(t.shape) != tuple(o.shape) or (t.dtype != o.dtype and not _weak_number(rt_leaves[k])):
                    raise TypeError(f"custom_jvp({name}): the JVP rule's tangent output {k} is {_describe(t)}, "
                                    f"but the primal output is {_describe(o)}; tangents have the primal's shape "
                                    f"and dtype")
                rule_results.append(t if t.dtype == o.dtype else t.astype(o.dtype))
        except BaseException:
            primal.close()
            rule.close()
            raise
        try:
            p_graph, p_captured, _ = primal.finish(out_arrays)
        except BaseException:
            rule.close()
            raise
        r_graph, r_captured, _ = rule.finish(rule_results)
        ncp, ncr, nf = len(p_captured), len(r_captured), len(floats)
        operands = leaves + p_captured + r_captured
        p_feed = list(range(nl)) + [nl + i for i in range(ncp)]
        tangent0 = nl + ncp + ncr
        r_feed = list(range(nl)) + [tangent0 + j for j in range(nf)] + [nl + ncp + i for i in range(ncr)]
        outs = _core.region_call("custom_jvp", [(p_graph, p_feed), (r_graph, r_feed)], operands, num_consts=nl)
        return _tree.unflatten(out_def, outs)


def _weak_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class custom_vjp(_CustomRule):
    """custom_vjp(fun, nondiff_argnums=()): fun with a user-defined VJP.

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)`` (residuals any pytree of
    arrays), ``bwd(residuals, out_cotangent) -> tuple`` of one cotangent per argument (None
    for zero); with nondiff_argnums, ``bwd(*nondiff_args, residuals, g)`` and its tuple skips
    them. Reverse mode (grad, vjp, jacrev) uses the rule; forward mode raises, as in JAX.
    """

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False):
        for f, what in ((fwd, "fwd"), (bwd, "bwd")):
            if not callable(f):
                raise TypeError(f"custom_vjp({self._name}).defvjp: {what} must be a function, got {type(f).__name__}")
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    def __call__(self, *args: Any):
        name = self._name
        if self._in_rule:
            return self.fun(*args)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        nondiff, diff, leaves, weak, in_def, floats = self._split(args)
        arg_trees = [_tree.flatten(a) for a in diff]
        nl = len(leaves)
        specs = [_spec(a, w) for a, w in zip(leaves, weak)]
        call_fun = self._caller(nondiff, in_def)

        def call_fwd(fwd, params):
            if self.symbolic_zeros:
                # Every float argument may be perturbed (which ones are is only known once a
                # transform runs); integer and bool ones never are.
                params = [CustomVJPPrimal(p, p.dtype in _FLOATS) for p in params]
            return call_fun(fwd, params)

        regions = []
        try:
            regions.append(_Region(self.fun, "custom_vjp", call_fun, specs))
            self._in_rule += 1
            try:
                regions.append(_Region(self.fwd, "custom_vjp fwd", call_fwd, specs))
            finally:
                self._in_rule -= 1
            primal, fwd = regions
            out_leaves, out_def = _tree.flatten(primal.out)
            out_arrays = [o if isinstance(o, _core.Array) else _core.asarray(o) for o in out_leaves]
            fo = fwd.out
            if not (isinstance(fo, (tuple, list)) and len(fo) == 2):
                raise TypeError(f"custom_vjp({name}): fwd must return a pair (output, residuals), got "
                                f"{type(fo).__name__}")
            f_out_leaves, f_out_def = _tree.flatten(fo[0])
            if f_out_def != out_def:
                raise TypeError(f"custom_vjp({name}): fwd's output has structure {f_out_def}, but {name} returns "
                                f"{out_def}")
            f_out = []
            for k, (p, o) in enumerate(zip(f_out_leaves, out_arrays)):
                p = p if isinstance(p, _core.Array) else _core.asarray(p, dtype=o.dtype)
                if tuple(p.shape) != tuple(o.shape) or p.dtype != o.dtype:
                    raise TypeError(f"custom_vjp({name}): fwd's output {k} is {_describe(p)}, but {name} returns "
                                    f"{_describe(o)}")
                f_out.append(p)
            res_leaves, res_def = _tree.flatten(fo[1])
            res_arrays = []
            for k, r in enumerate(res_leaves):
                if not isinstance(r, (_core.Array, int, float)):
                    raise TypeError(f"custom_vjp({name}): residuals must be a pytree of arrays, got "
                                    f"{type(r).__name__} at leaf {k}")
                res_arrays.append(r if isinstance(r, _core.Array) else _core.asarray(r))
            out_floats = [k for k, o in enumerate(out_arrays) if o.dtype in _FLOATS]
            nres = len(res_arrays)

            def call_bwd(bwd, params):
                res = _tree.unflatten(res_def, params[:nres])
                cts = [_core.zeros_like(o) for o in out_arrays]
                for j, k in enumerate(out_floats):
                    cts[k] = params[nres + j]
                return bwd(*nondiff, res, _tree.unflatten(out_def, cts))

            bspecs = [_spec(r) for r in res_arrays] + [_spec(out_arrays[k]) for k in out_floats]
            self._in_rule += 1
            try:
                regions.append(_Region(self.bwd, "custom_vjp bwd", call_bwd, bspecs))
            finally:
                self._in_rule -= 1
            bwd_out = regions[2].out
            bwd_cts = self._check_bwd(bwd_out, diff, arg_trees, leaves, floats)
        except BaseException:
            for r in regions:
                r.close()
            raise
        graphs = []
        for k, (r, results) in enumerate(zip(regions, (out_arrays, f_out + res_arrays, bwd_cts))):
            try:
                graphs.append(r.finish(results))
            except BaseException:
                for rest in regions[k + 1:]:
                    rest.close()
                raise
        (p_graph, p_cap, _), (f_graph, f_cap, _), (b_graph, b_cap, _) = graphs
        operands = leaves + p_cap + f_cap + b_cap
        nb = nres + len(out_floats)
        p_feed = list(range(nl)) + [nl + i for i in range(len(p_cap))]
        f_feed = list(range(nl)) + [nl + len(p_cap) + i for i in range(len(f_cap))]
        b_feed = list(range(nb)) + [nb + nl + len(p_cap) + len(f_cap) + i for i in range(len(b_cap))]
        outs = _core.region_call("custom_vjp", [(p_graph, p_feed), (f_graph, f_feed), (b_graph, b_feed)], operands,
                                 num_consts=nl, num_carry=nres)
        return _tree.unflatten(out_def, outs)

    def _check_bwd(self, bwd_out, diff, arg_trees, leaves, floats):
        """bwd's cotangents as one array per float argument leaf, checked against the args."""
        name = self._name
        if not isinstance(bwd_out, (tuple, list)):
            raise TypeError(f"custom_vjp({name}): bwd must return a tuple of cotangents (one per argument), got "
                            f"{type(bwd_out).__name__}")
        if len(bwd_out) != len(diff):
            raise TypeError(f"custom_vjp({name}): bwd returned {len(bwd_out)} cotangents for {len(diff)} "
                            f"differentiable arguments; return one per argument (None for zero)")
        flat = []
        for i, (ct, (arg_leaves, arg_def)) in enumerate(zip(bwd_out, arg_trees)):
            if ct is None or isinstance(ct, SymbolicZero):
                flat.extend([None] * len(arg_leaves))
                continue
            ct_leaves, ct_def = _tree.flatten(ct)
            if ct_def != arg_def:
                raise TypeError(f"custom_vjp({name}): bwd's cotangent {i} has structure {ct_def}, the argument "
                                f"{arg_def}")
            flat.extend(ct_leaves)
        out = []
        for k in floats:
            a, c = leaves[k], flat[k]
            if c is None or isinstance(c, SymbolicZero):
                out.append(_core.zeros_like(a))
                continue
            c = c if isinstance(c, _core.Array) else _core.asarray(c, dtype=a.dtype)
            if tuple(c.shape) != tuple(a.shape) or c.dtype != a.dtype:
                raise TypeError(f"custom_vjp({name}): bwd's cotangent for argument leaf {k} is {_describe(c)}, the "
                                f"argument {_describe(a)}; cotangents have their argument's shape and dtype")
            out.append(c)
        return out


class checkpoint_policies:
    """Which intermediates a checkpointed block keeps for reverse mode (jax's names)."""

    @staticmethod
    def nothing_saveable(*_args, **_kwargs):
        return False

    @staticmethod
    def everything_saveable(*_args, **_kwargs):
        return True

    @staticmethod
    def dots_saveable(*_args, **_kwargs):
        """Keep the results of matrix products (matmul, dot, einsum contractions); recompute
        the rest."""
        return True

    @staticmethod
    def dots_with_no_batch_dims_saveable(*_args, **_kwargs):
        """Keep the results of matrix products whose operands have no batch axes (at most
        two dimensions); recompute the rest."""
        return True

    checkpoint_dots = dots_saveable
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    # The name-based policies (values tagged with checkpoint_name): accepted, and every
    # intermediate is recomputed. Which values a policy saves changes memory and time, never
    # the results, so programs written for them run unchanged.
    @staticmethod
    def save_only_these_names(*names):
        return _named_policy("save_only_these_names", names)

    @staticmethod
    def save_any_names_but_these(*names):
        return _named_policy("save_any_names_but_these", names)

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved=(), names_which_can_be_offloaded=(),
                                          offload_src="device", offload_dst="pinned_host"):
        return _named_policy("save_and_offload_only_these_names",
                             tuple(names_which_can_be_saved) + tuple(names_which_can_be_offloaded))

    @staticmethod
    def save_from_both_policies(policy_1, policy_2):
        """Saves what either policy saves: the stronger of the two here."""
        for p in (policy_1, policy_2):
            if p is not checkpoint_policies.everything_saveable and p not in _POLICY_MODES:
                raise TypeError(f"checkpoint_policies.save_from_both_policies: {p!r} is not a checkpoint policy")
        if checkpoint_policies.everything_saveable in (policy_1, policy_2):
            return checkpoint_policies.everything_saveable
        return policy_1 if _POLICY_MODES[policy_1] >= _POLICY_MODES[policy_2] else policy_2


def _named_policy(kind: str, names):
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"checkpoint_policies.{kind}: names must be strings, got {type(n).__name__}")

    def policy(*_args, **_kwargs):
        return False
    policy.__name__ = f"{kind}({', '.join(map(repr, names))})"
    _POLICY_MODES[policy] = 0  # recompute everything (see checkpoint_policies)
    return policy


def checkpoint_name(x: Any, name: str) -> Any:
    """Tags x (a pytree) with a name for the name-based checkpoint policies
    (jax.ad_checkpoint.checkpoint_name): returns x unchanged."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a string, got {type(name).__name__}")
    return x


# policy -> the checkpoint node's mode (0: save nothing; 1 and 2: the matrix products).
_POLICY_MODES = {None: 0, checkpoint_policies.nothing_saveable: 0, checkpoint_policies.dots_saveable: 1,
                 checkpoint_policies.dots_with_no_batch_dims_saveable: 2}


def checkpoint(fun: Callable = None, *, prevent_cse: bool = True, policy: Callable = None,
               static_argnums: Sequence[int] = ()):
    """checkpoint(fun) / remat: reverse mode through fun stores only its inputs and
    recomputes its intermediates in the backward pass (one checkpoint IR node).

    policy: None or ``checkpoint_policies.nothing_saveable`` (recompute everything),
    ``dots_saveable`` (keep the matrix products' results, recompute the rest),
    ``dots_with_no_batch_dims_saveable`` (the same for products without batch axes),
    ``everything_saveable`` (an ordinary call: nothing recomputed).
    static_argnums are passed through as Python values. The recomputation runs in the
    node's own region, so it is never merged with the forward pass (prevent_cse is always
    in effect; the flag is accepted for JAX compatibility).
    """
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)
    if not callable(fun):
        raise TypeError(f"checkpoint: expected a function, got {type(fun).__name__}")
    if policy is not checkpoint_policies.everything_saveable and policy not in _POLICY_MODES:
        raise NotImplementedError(
            f"checkpoint: unsupported policy {getattr(policy, '__name__', policy)!r}; supported are "
            "checkpoint_policies.nothing_saveable, dots_saveable, dots_with_no_batch_dims_saveable and "
            "everything_saveable")
    mode = _POLICY_MODES.get(policy, 0)
    static = tuple(int(i) for i in static_argnums)
    name = getattr(fun, "__name__", "function")

    @functools.wraps(fun)
    def wrapped(*args):
        if policy is checkpoint_policies.everything_saveable:
            return fun(*args)
        fixed = {i % len(args): args[i] for i in static if -len(args) <= i < len(args)}
        dyn = [a for i, a in enumerate(args) if i not in fixed]
        leaves, weak, in_def = _carry_leaves(dyn, f"checkpoint({name}): argument", "args")

        def call(f, params):
            d = iter(_tree.unflatten(in_def, params))
            return f(*[fixed[i] if i in fixed else next(d) for i in range(len(args))])

        region = _Region(fun, f"checkpoint({name})", call, [_spec(a, w) for a, w in zip(leaves, weak)])
        try:
            out_leaves, out_def = _tree.flatten(region.out)
            outs = []
            for k, o in enumerate(out_leaves):
                if not isinstance(o, (_core.Array, int, float)):
                    raise TypeError(f"checkpoint({name}): the function must return arrays, got {type(o).__name__}")
                outs.append(o if isinstance(o, _core.Array) else _core.asarray(o))
        except BaseException:
            region.close()
            raise
        graph, captured, _ = region.finish(outs)
        nl = len(leaves)
        feed = list(range(nl)) + [nl + i for i in range(len(captured))]
        results = _core.region_call("checkpoint", [(graph, feed)], leaves + captured, mode=mode)
        return _tree.unflatten(out_def, results)

    return wrapped


remat = checkpoint


def stop_gradient(x):
    """stop_gradient(x): x with a zero derivative; x may be an array, a Python number or
    any pytree of them (as jax.lax.stop_gradient)."""
    if isinstance(x, _core.Array) or isinstance(x, (int, float)):
        return _core.stop_gradient(x)
    return _tree.map(_core.stop_gradient, x)
