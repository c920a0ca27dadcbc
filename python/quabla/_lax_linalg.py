"""qb.lax.linalg: jax.lax.linalg's names and conventions on Quabla's factorizations
(qb.linalg underneath): cholesky, eig, eigh (returning (eigenvectors, eigenvalues), as JAX's),
lu (lu, pivots, permutation), lu_pivots_to_permutation, qr, svd, schur, triangular_solve
(left_side=False solves x op(a) = b, as JAX's default) and tridiagonal_solve (the Thomas
algorithm as a scan, differentiable). Batched over leading axes, jit, vmap and grad as the
functions they call."""
from __future__ import annotations

from . import _core
from ._package import qb

__all__ = ["cholesky", "eig", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd", "schur", "triangular_solve",
           "tridiagonal_solve"]


def _arr(x):
    return x if isinstance(x, _core.Array) else qb.asarray(x)


def _mT(x):
    return qb.swapaxes(x, -1, -2)


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor L (x = L L^H); NaN where x is not positive definite. Without
    symmetrize_input only x's lower triangle is read."""
    if symmetrize_input:
        return qb.linalg.cholesky(x)
    return qb.linalg._cholesky_triangle(x, True, "lax.linalg.cholesky")


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True, use_magma=None):
    """[w, vl, vr] as jax.lax.linalg.eig: the eigenvalues, then the left and right
    eigenvectors asked for. vl's columns satisfy vl^H x = diag(w) vl^H: the conjugated rows
    of vr^-1, of unit norm with their largest component real and positive (LAPACK's left
    vectors agree up to a sign); a defective matrix has no such basis."""
    x = _arr(x)
    w, vr = qb.linalg.eig(x)
    out = [w]
    if compute_left_eigenvectors:
        vl = qb.conj(_mT(qb.linalg.inv(vr)))
        vl = vl / qb.linalg.norm(vl, axis=-2, keepdims=True)
        big = qb.take_along_axis(vl, qb.argmax(qb.abs(vl), axis=-2)[..., None, :], axis=-2)
        out.append(vl * (qb.abs(big) / big))
    if compute_right_eigenvectors:
        out.append(vr)
    return out


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None):
    """(v, w) as jax.lax.linalg.eigh: eigenvectors (columns) and ascending eigenvalues."""
    if not sort_eigenvalues:
        raise NotImplementedError("lax.linalg.eigh: sort_eigenvalues=False is not supported (they come ascending)")
    res = qb.linalg.eigh(x, UPLO="L" if lower else "U", symmetrize_input=symmetrize_input)
    v, w = res.eigenvectors, res.eigenvalues
    if subset_by_index is not None:
        lo, hi = subset_by_index
        v, w = v[..., lo:hi], w[..., lo:hi]
    return v, w


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation the row interchanges `pivots` make (row i swapped with row pivots[i],
    in turn): perm with (P x)[i] = x[perm[i]], of length permutation_size."""
    pivots = _arr(pivots)
    if pivots.dtype.kind not in "iu":
        raise TypeError(f"lax.linalg.lu_pivots_to_permutation: pivots must be integers, got {pivots.dtype.name}")
    k = pivots.shape[-1]
    if permutation_size < k:
        raise ValueError(f"lax.linalg.lu_pivots_to_permutation: permutation_size {permutation_size} is below the "
                         f"{k} pivots")
    batch = tuple(pivots.shape[:-1])
    perm = qb.broadcast_to(qb.arange(permutation_size, dtype=qb.int32), batch + (permutation_size,))
    piv = pivots.astype(qb.int32)

    def swap(i, p):
        j = piv[..., i]
        pi = p[..., i]
        pj = qb.take_along_axis(p, j[..., None], axis=-1)[..., 0]
        cols = qb.arange(permutation_size)
        p = qb.where(cols == i, pj[..., None], p)
        return qb.where(cols == j[..., None], pi[..., None], p)
    return qb.lax.fori_loop(0, k, swap, perm)


def lu(x):
    """(lu, pivots, permutation) as jax.lax.linalg.lu: L (unit diagonal, not stored) and U
    in one matrix, the 0-based row interchanges, and the permutation they make (int32)."""
    lu_, piv = qb.linalg.lu_factor(x)
    return lu_, piv, lu_pivots_to_permutation(piv, lu_.shape[-2])


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """(q, r) as jax.lax.linalg.qr: complete unless full_matrices=False."""
    if pivoting:
        raise NotImplementedError("lax.linalg.qr: pivoting=True is not supported")
    q, r = qb.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q, r


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
    """(u, s, vh) as jax.lax.linalg.svd, or s alone without compute_uv."""
    if subset_by_index is not None:
        raise NotImplementedError("lax.linalg.svd: subset_by_index is not supported")
    if not compute_uv:
        return qb.linalg.svd(x, compute_uv=False)
    u, s, vh = qb.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable=None):
    """(t, z) as jax.lax.linalg.schur: x = z t z^H (the real Schur form of a real matrix)."""
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("lax.linalg.schur: sorting the eigenvalues is not supported")
    t, z = qb.scipy.linalg.schur(x)
    return (t, z) if compute_schur_vectors else t


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """x with op(a) x = b (left_side=True) or x op(a) = b (left_side=False, JAX's default),
    op(a) = a, a^T or (conjugate_a) their conjugates; a triangular (its lower or upper
    triangle read)."""
    a, b = _arr(a), _arr(b)
    if conjugate_a and a.dtype.kind == "c":
        a = qb.conj(a)
    if left_side:
        return qb.linalg.solve_triangular(a, b, trans=1 if transpose_a else 0, lower=lower,
                                          unit_diagonal=unit_diagonal)
    # x op(a) = b  <=>  op(a)^T x^T = b^T
    xt = qb.linalg.solve_triangular(a, _mT(b), trans=0 if transpose_a else 1, lower=lower, unit_diagonal=unit_diagonal)
    return _mT(xt)


def tridiagonal_solve(dl, d, du, b):
    """x with A x = b for the tridiagonal A of sub-diagonal dl (dl[..., 0] unused), diagonal
    d and super-diagonal du (du[..., -1] unused), b of shape (..., m, n): the Thomas
    algorithm (no pivoting, as LAPACK's gtsv without it), as a scan over the m rows."""
    dl, d, du, b = (_arr(v) for v in (dl, d, du, b))
    m = d.shape[-1]
    if dl.shape != d.shape or du.shape != d.shape or b.ndim < 2 or b.shape[-2] != m:
        raise ValueError(f"lax.linalg.tridiagonal_solve: dl, d, du must share a shape (..., m) and b be (..., m, n); "
                         f"got {tuple(dl.shape)}, {tuple(d.shape)}, {tuple(du.shape)}, {tuple(b.shape)}")
    rows = lambda v: qb.moveaxis(v, -1, 0)  # noqa: E731  (..., m) -> (m, ...)
    brows = qb.moveaxis(b, -2, 0)  # (m, ..., n)
    zero_c = qb.zeros_like(d[..., 0])
    zero_r = qb.zeros_like(b[..., 0, :])

    def forward(carry, row):
        c_prev, r_prev = carry
        a_i, d_i, c_i, b_i = row
        denom = d_i - a_i * c_prev
        c_new = c_i / denom
        r_new = (b_i - a_i[..., None] * r_prev) / denom[..., None]
        return (c_new, r_new), (c_new, r_new)

    _, (cs, rs) = qb.lax.scan(forward, (zero_c, zero_r), (rows(dl), rows(d), rows(du), brows))

    def backward(x_next, row):
        c_i, r_i = row
        x_i = r_i - c_i[..., None] * x_next
        return x_i, x_i

    _, xs = qb.lax.scan(backward, zero_r, (cs, rs), reverse=True)
    return qb.moveaxis(xs, 0, -2)
