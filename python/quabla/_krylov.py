"""Matrix-free Krylov solvers (API.md §9): qb.linalg.cg, gmres and bicgstab.

Each solver is one while loop in the IR wrapped in qb.custom_linear_solve, so derivatives
with respect to b and to whatever the operator closes over (or takes through ``args``) come
from the implicit function theorem (another solve), never from the iterations; vmap gives
per-example iteration counts (a batched while loop freezes the examples that are done).

The operator and b may be pytrees: the solvers work on one flat vector (the leaves raveled
and concatenated in the common float dtype) and give x b's structure back. Convergence, as
SciPy and JAX: ||b - A x|| <= max(tol * ||b||, atol); maxiter defaults to 10 * b.size
(gmres: restarts).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from . import _core
from . import tree as _tree
from ._control import while_loop, fori_loop
from ._implicit import _float_leaves, _like, custom_linear_solve

__all__ = ["cg", "gmres", "bicgstab", "SolverInfo"]


class SolverInfo(NamedTuple):
    """What a solve did: ``iterations`` (int32; gmres: inner Arnoldi steps over all
    restarts), the final ``residual_norm`` ||b - A x|| and whether it ``converged``."""
    iterations: _core.Array
    residual_norm: _core.Array
    converged: _core.Array


class _Flat:
    """Ravels a pytree of float arrays into one vector of their common dtype and back."""

    def __init__(self, leaves, treedef):
        self.leaves = leaves
        self.treedef = treedef
        self.shapes = [tuple(a.shape) for a in leaves]
        self.dtypes = [a.dtype for a in leaves]
        self.sizes = [int(a.size) for a in leaves]
        self.size = sum(self.sizes)
        self.dtype = _core.float64 if _core.float64 in self.dtypes else _core.float32

    def ravel(self, tree):
        leaves = _tree.flatten(tree)[0]
        parts = [_core.asarray(leaf).reshape(-1).astype(self.dtype) for leaf in leaves]
        return parts[0] if len(parts) == 1 else _core.concatenate(parts)

    def ravel_checked(self, tree, name: str, what: str):
        """ravel(tree) after checking tree has the structure, shapes and dtypes of b."""
        return self.ravel(_tree.unflatten(self.treedef, _like(name, what, tree, self.leaves, self.treedef)))

    def unravel_stacked(self, vs):
        """unravel of each row of vs, the leaves stacked on a new leading axis."""
        return _tree.unflatten(self.treedef, list(self._pieces(vs, (vs.shape[0],))))

    def unravel(self, v):
        return _tree.unflatten(self.treedef, list(self._pieces(v, ())))

    def _pieces(self, v, lead):
        start = 0
        for shape, dtype, n in zip(self.shapes, self.dtypes, self.sizes):
            yield v[..., start:start + n].reshape(lead + shape).astype(dtype)
            start += n


def _operator(A, args, name: str):
    """A as a function of x: a callable A(x, *args), or a square matrix."""
    if callable(A):
        return lambda x: A(x, *args)
    if args:
        raise TypeError(f"{name}: args= needs A to be a function A(x, *args), got a matrix")
    a = A if isinstance(A, _core.Array) else _core.asarray(A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name}: A must be a function or a square matrix, got shape {list(a.shape)}")
    return lambda x: _core.matmul(a, x)


def _check_numbers(name, tol, atol, maxiter):
    for what, v in (("tol", tol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"{name}: {what} must be a number >= 0, got {v!r}")
    if maxiter is not None and (isinstance(maxiter, bool) or not isinstance(maxiter, int) or maxiter < 0):
        raise ValueError(f"{name}: maxiter must be a non-negative int or None, got {maxiter!r}")


def _dot(a, b):
    return _core.matmul(a, b)


def _solve(name, A, b, x0, args, M, tol, atol, maxiter, info, loop, symmetric=False):
    """The shared driver: checks the arguments, ravels b (and x0, the operator and the
    preconditioner) into one vector, and runs ``loop(A, b, x0, M, maxiter)`` (a while loop
    returning (x, (iterations, residual norm, converged))) under custom_linear_solve. The
    transposed system (reverse mode) is solved by the same loop from zero, or by ``loop``
    itself on the same operator when it is symmetric."""
    _check_numbers(name, tol, atol, maxiter)
    if M is not None and not callable(M):
        raise TypeError(f"{name}: M (the preconditioner) must be a function x -> M x, got {type(M).__name__}")
    leaves, treedef = _float_leaves(b, name, "b")
    flat = _Flat(leaves, treedef)
    op = _operator(A, args, name)
    if x0 is not None:
        x0_leaves, x0_def = _tree.flatten(x0)
        if x0_def != treedef or any(tuple(_core.asarray(x).shape) != s for x, s in zip(x0_leaves, flat.shapes)):
            raise ValueError(f"{name}: x0 must have b's structure and shapes ({treedef})")
    maxiter = 10 * flat.size if maxiter is None else maxiter
    matvec = lambda v: flat.ravel_checked(op(flat.unravel(v)), name, "A")
    precond = (lambda v: v) if M is None else (lambda v: flat.ravel_checked(M(flat.unravel(v)), name, "M"))
    b_vec = flat.ravel(b)
    x0_vec = _core.zeros_like(b_vec) if x0 is None else flat.ravel(x0)

    def solve(mv, rhs):
        return loop(mv, rhs, x0_vec, precond, maxiter)

    def transpose_solve(vm, rhs):  # the preconditioner is not transposed: it only steers
        return loop(vm, rhs, _core.zeros_like(rhs), precond, maxiter)

    x, aux = custom_linear_solve(matvec, b_vec, solve, transpose_solve=None if symmetric else transpose_solve,
                                 symmetric=symmetric, has_aux=True)
    return flat.unravel(x), (SolverInfo(*aux) if info else None)


def _residual(b, A, x):
    r = b - A(x)
    return _core.sqrt(_dot(r, r))


def _cg_loop(A, b, x0, M, tol, atol, maxiter, preconditioned):
    bs = _dot(b, b)
    atol2 = _core.maximum(tol * tol * bs, atol * atol)
    r0 = b - A(x0)
    z0 = M(r0)
    gamma0 = _dot(r0, z0)
    k0 = _core.asarray(0, dtype=_core.int32)

    def cond(c):
        _x, r, gamma, _p, k = c
        rs = _dot(r, r) if preconditioned else gamma
        return (rs > atol2) & (k < maxiter)

    def body(c):
        x, r, gamma, p, k = c
        ap = A(p)
        alpha = gamma / _dot(p, ap)
        x = x + alpha * p
        r = r - alpha * ap
        z = M(r)
        gamma_new = _dot(r, z)
        p = z + (gamma_new / gamma) * p
        return x, r, gamma_new, p, k + 1

    x, r, _g, _p, k = while_loop(cond, body, (x0, r0, gamma0, z0, k0))
    rr = _dot(r, r)
    return x, (k, _core.sqrt(rr), rr <= atol2)


def cg(A, b, x0=None, *, args=(), tol: float = 1e-5, atol: float = 0.0, maxiter: int = None, M: Callable = None,
       info: bool = False):
    """Conjugate gradients for A x = b, A symmetric positive definite (as
    ``jax.scipy.sparse.linalg.cg``): A a function ``A(x, *args)`` or a matrix, b and x0
    pytrees. Returns ``(x, info)``: info is None (JAX's placeholder) unless ``info=True``,
    then a SolverInfo. Gradients with respect to b, x's operator and args by the implicit
    function theorem (the operator is taken as symmetric)."""
    return _solve("cg", A, b, x0, args, M, tol, atol, maxiter, info, symmetric=True,
                  loop=lambda A, b, x0, P, n: _cg_loop(A, b, x0, P, tol, atol, n, M is not None))


def _bicgstab_loop(A, b, x0, M, tol, atol, maxiter):
    bs = _dot(b, b)
    atol2 = _core.maximum(tol * tol * bs, atol * atol)
    r0 = b - A(x0)
    one = _core.asarray(1.0, dtype=b.dtype)
    k0 = _core.asarray(0, dtype=_core.int32)

    def cond(c):
        _x, r, *_rest, k = c
        return (_dot(r, r) > atol2) & (k < maxiter)

    def body(c):
        x, r, rhat, p, v, rho, alpha, omega, k = c
        rho_new = _dot(rhat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = r + beta * (p - omega * v)
        phat = M(p)
        v = A(phat)
        alpha = rho_new / _dot(rhat, v)
        s = r - alpha * v
        shat = M(s)
        t = A(shat)
        tt = _dot(t, t)
        # s already small (or t zero): stop with the half step, as the textbook method does.
        omega = _core.where(tt > 0, _dot(t, s) / _core.where(tt > 0, tt, one), 0.0)
        x = x + alpha * phat + omega * shat
        r = s - omega * t
        return x, r, rhat, p, v, rho_new, alpha, _core.where(omega == 0, one, omega), k + 1

    z = _core.zeros_like(b)
    x, r, *_rest, k = while_loop(cond, body, (x0, r0, r0, z, z, one, one, one, k0))
    rr = _dot(r, r)
    return x, (k, _core.sqrt(rr), rr <= atol2)


def bicgstab(A, b, x0=None, *, args=(), tol: float = 1e-5, atol: float = 0.0, maxiter: int = None,
             M: Callable = None, info: bool = False):
    """BiCGSTAB for A x = b, A any nonsingular operator (as
    ``jax.scipy.sparse.linalg.bicgstab``); arguments and result as cg. Reverse mode solves
    with the transposed operator (its VJP) by BiCGSTAB too."""
    return _solve("bicgstab", A, b, x0, args, M, tol, atol, maxiter, info,
                  loop=lambda A, b, x0, P, n: _bicgstab_loop(A, b, x0, P, tol, atol, n))


def _gmres_loop(A, b, x0, M, tol, atol, restart, maxiter):
    n = b.shape[0]
    m = max(1, min(restart, n))
    dt = b.dtype
    b_norm = _core.sqrt(_dot(b, b))
    atol_ = _core.maximum(tol * b_norm, atol)
    mb = M(b)
    mb_norm = _core.sqrt(_dot(mb, mb))
    # The inner loop watches the preconditioned residual, scaled as the true one's target.
    ptol = mb_norm * _core.minimum(1.0, atol_ / _core.where(b_norm > 0, b_norm, 1.0))
    eye_m = _core.eye(m, dtype=dt)
    idx_m = _core.arange(m)
    idx_m1 = _core.arange(m + 1)
    zero_i = _core.asarray(0, dtype=_core.int32)

    def arnoldi(x):
        """One restart cycle from x: returns the new x and the number of inner steps."""
        r = M(b - A(x))
        beta = _core.sqrt(_dot(r, r))
        v0 = _core.where(beta > 0, r / _core.where(beta > 0, beta, 1.0), 0.0)
        V = _core.zeros((m + 1, n), dtype=dt).at[0].set(v0)
        R = _core.zeros((m, m), dtype=dt)
        cs = _core.zeros((m,), dtype=dt)
        sn = _core.zeros((m,), dtype=dt)
        g = _core.zeros((m + 1,), dtype=dt).at[0].set(beta)

        def cond(c):
            _V, _R, _cs, _sn, g, j = c
            return (j < m) & (_core.abs(g[j]) > ptol)

        def body(c):
            V, R, cs, sn, g, j = c
            w = M(A(V[j]))
            live = (idx_m1 <= j).astype(dt)
            # Classical Gram-Schmidt twice (stable like modified Gram-Schmidt, two products).
            h = _core.matmul(V, w) * live
            w = w - _core.matmul(h, V)
            h2 = _core.matmul(V, w) * live
            w = w - _core.matmul(h2, V)
            h = h + h2
            hn = _core.sqrt(_dot(w, w))
            V = V.at[j + 1].set(_core.where(hn > 0, w / _core.where(hn > 0, hn, 1.0), 0.0))
            col = h.at[j + 1].set(hn)

            def rotate(i, col):  # the earlier rotations, in order, on this column
                a, bb = col[i], col[i + 1]
                on = i < j
                na = _core.where(on, cs[i] * a + sn[i] * bb, a)
                nb = _core.where(on, -sn[i] * a + cs[i] * bb, bb)
                return col.at[i].set(na).at[i + 1].set(nb)
            col = fori_loop(0, m, rotate, col)
            a, bb = col[j], col[j + 1]
            rad = _core.sqrt(a * a + bb * bb)
            c = _core.where(rad > 0, a / _core.where(rad > 0, rad, 1.0), 1.0)
            s = _core.where(rad > 0, bb / _core.where(rad > 0, rad, 1.0), 0.0)
            col = col.at[j].set(rad).at[j + 1].set(0.0)
            R = R.at[:, j].set(col[:m])
            gj = g[j]
            g = g.at[j].set(c * gj).at[j + 1].set(-s * gj)
            return V, R, cs.at[j].set(c), sn.at[j].set(s), g, j + 1

        V, R, cs, sn, g, j = while_loop(cond, body, (V, R, cs, sn, g, zero_i))
        used = idx_m < j
        # Columns past j are unused: a unit diagonal and a zero right-hand side give y = 0 there.
        Rf = _core.where(used[None, :] & used[:, None], R, eye_m * (~used).astype(dt)[:, None])
        y = _solve_upper(Rf, _core.where(used, g[:m], 0.0))
        return x + _core.matmul(y, V[:m]), j

    def cond(c):
        _x, res, k, _it = c
        return (res > atol_) & (k < maxiter)

    def body(c):
        x, _res, k, it = c
        x, j = arnoldi(x)
        return x, _residual(b, A, x), k + 1, it + j

    res0 = _residual(b, A, x0)
    x, res, _k, it = while_loop(cond, body, (x0, res0, zero_i, zero_i))
    return x, (it, res, res <= atol_)


def _solve_upper(R, y):
    from .linalg import solve_triangular
    return solve_triangular(R, y, lower=False)


def gmres(A, b, x0=None, *, args=(), tol: float = 1e-5, atol: float = 0.0, restart: int = 20, maxiter: int = None,
          M: Callable = None, solve_method: str = "incremental", info: bool = False):
    """Restarted GMRES for A x = b, A any nonsingular operator (as
    ``jax.scipy.sparse.linalg.gmres``): Arnoldi with Givens rotations, ``restart`` steps per
    cycle, at most ``maxiter`` cycles; left preconditioner M. ``solve_method`` is accepted
    for JAX compatibility ("incremental" and "batched" both run the Givens-rotation form,
    which gives the same iterates). Arguments and result otherwise as cg."""
    if solve_method not in ("incremental", "batched"):
        raise ValueError(f"gmres: solve_method must be 'incremental' or 'batched', got {solve_method!r}")
    if isinstance(restart, bool) or not isinstance(restart, int) or restart < 1:
        raise ValueError(f"gmres: restart must be a positive int, got {restart!r}")
    return _solve("gmres", A, b, x0, args, M, tol, atol, maxiter, info,
                  loop=lambda A, b, x0, P, n: _gmres_loop(A, b, x0, P, tol, atol, restart, n))
