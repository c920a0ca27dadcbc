"""More of jax.scipy.linalg on Quabla's linear algebra: the special matrices (circulant,
companion, convolution_matrix, fiedler, fiedler_companion, hadamard, hankel, helmert,
hilbert, invhilbert, pascal, invpascal, leslie), hessenberg, qr_multiply, schur (real
Schur form), sqrtm (real results) and solve_sylvester (real). Re-exported by
quabla.scipy.linalg.

schur, sqrtm, hessenberg and qr_multiply are real algorithms: where JAX returns complex
arrays (sqrtm, schur's output='complex') these give the real answer when there is one and
raise ValueError otherwise, and complex input raises TypeError (their complex forms are not
written yet; the special matrices that only arrange their entries, such as circulant,
hankel and leslie, keep a complex dtype)."""
from __future__ import annotations

import math

from . import _core
from . import linalg as _la
from ._numpy_names import common_float
from ._numpy_extra import _no_complex
from ._package import qb

__all__ = ["circulant", "companion", "convolution_matrix", "fiedler", "fiedler_companion", "hadamard", "hankel",
           "helmert", "hilbert", "invhilbert", "invpascal", "leslie", "pascal", "hessenberg", "qr_multiply", "rsf2csf",
           "schur", "sqrtm", "solve_sylvester"]

_FLOATS = (_core.float32, _core.float64)


def _traced(x) -> bool:
    return bool(getattr(x, "_is_tracer", False))


def _array(x, fname, what):
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{fname}: {what} must be an array of numbers, got {type(x).__name__}")
    return qb.asarray(x)


def _floats(fname, *named):
    """The arrays as one float dtype (JAX's promotion: integers become the default float)."""
    arrays = [_array(x, fname, what) for what, x in named]
    _no_complex(f"qb.scipy.linalg.{fname}", *arrays)
    d = common_float(*arrays)
    return [a.astype(d) for a in arrays]


def _size(fname, n, what="n", minimum=0) -> int:
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"{fname}: {what} must be an int, got {type(n).__name__} {n!r}")
    n = int(n)
    if n < minimum:
        raise ValueError(f"{fname}: {what} must be at least {minimum}, got {n}")
    return n


def _gather(values, index, cols=None):
    """A matrix (..., r, c) whose entry is values[..., index[r][c]], or 0 where the index is
    -1: one take from values with a zero appended (cols: c, needed when there are no rows)."""
    import numpy as np
    index = np.asarray(index, dtype=np.int64).reshape((len(index), len(index[0]) if index else (cols or 0)))
    m = values.shape[-1]
    padded = qb.concatenate([values, qb.zeros(tuple(values.shape[:-1]) + (1,), dtype=values.dtype)], axis=-1)
    return qb.take(padded, qb.asarray(np.where(index < 0, m, index)), axis=-1)


# ---- special matrices ----------------------------------------------------------------------

def circulant(c):
    """The circulant matrix whose first column is c (..., n): entry (i, j) is c[(i - j) mod n];
    batched over c's leading axes, c's dtype kept."""
    c = _array(c, "circulant", "c")
    if c.ndim == 0:
        c = c.reshape((1,))
    n = c.shape[-1]
    return _gather(c, [[(i - j) % n for j in range(n)] for i in range(n)])


def companion(a):
    """The companion matrix (n - 1, n - 1) of the polynomial with coefficients a (..., n),
    highest degree first: first row -a[1:] / a[0], ones below the diagonal. Batched; a
    zero leading coefficient gives inf (as JAX; SciPy raises)."""
    (a,) = _floats("companion", ("a", a))
    if a.ndim < 1 or a.shape[-1] < 2:
        raise ValueError(f"companion: a must have at least two coefficients along its last axis, got shape "
                         f"{tuple(a.shape)}")
    n = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    ones = qb.ones(tuple(a.shape[:-1]) + (1,), dtype=a.dtype)
    vals = qb.concatenate([first, ones], axis=-1)  # index n is the 1 below the diagonal
    return _gather(vals, [[j if i == 0 else (n if j == i - 1 else -1) for j in range(n)] for i in range(n)])


def convolution_matrix(a, n, mode: str = "full"):
    """The matrix A with A @ v = numpy.convolve(a, v, mode) for v of length n: 'full' has
    m + n - 1 rows, 'same' max(m, n) (centred as numpy's), 'valid' max(m, n) - min(m, n) + 1
    (m = a's length; batched over a's leading axes)."""
    a = _array(a, "convolution_matrix", "a")
    n = _size("convolution_matrix", n, minimum=1)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: mode must be one of 'full', 'valid', 'same'; got {mode!r}")
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError(f"convolution_matrix: a must have at least one entry along its last axis, got shape "
                         f"{tuple(a.shape)}")
    m = a.shape[-1]
    if mode == "full":
        rows, off = m + n - 1, 0
    elif mode == "same":
        rows, off = max(m, n), (min(m, n) - 1) // 2
    else:
        rows, off = max(m, n) - min(m, n) + 1, min(m, n) - 1
    return _gather(a, [[(i + off - j) if 0 <= i + off - j < m else -1 for j in range(n)] for i in range(rows)], n)


def fiedler(a):
    """The symmetric Fiedler matrix |a[i] - a[j]| of a (..., n); batched, a's dtype kept."""
    a = _array(a, "fiedler", "a")
    if a.ndim < 1:
        raise ValueError("fiedler: a must have at least one dimension")
    return qb.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler's pentadiagonal companion matrix (n - 1, n - 1) of the polynomial with
    coefficients a (..., n), highest degree first: the same eigenvalues as companion(a).
    Batched; (0, 0) for one coefficient."""
    (a,) = _floats("fiedler_companion", ("a", a))
    if a.ndim < 1 or a.shape[-1] < 1:
        raise ValueError(f"fiedler_companion: a must have at least one coefficient along its last axis, got shape "
                         f"{tuple(a.shape)}")
    k = a.shape[-1] - 1
    c = -a[..., 1:] / a[..., :1]  # -c_1 .. -c_k at indices 0 .. k - 1
    ones = qb.ones(tuple(a.shape[:-1]) + (1,), dtype=a.dtype)
    vals = qb.concatenate([c, ones], axis=-1)  # index k is a 1
    index = [[-1] * k for _ in range(k)]
    if k:
        index[0][0] = 0
    for i in range(2, k + 1):  # c_i: (i - 2, i - 1) for even i, (i - 1, i - 2) for odd i
        r, col = (i - 2, i - 1) if i % 2 == 0 else (i - 1, i - 2)
        index[r][col] = i - 1
    if k >= 2:
        index[1][0] = k
    for j in range(0, k):  # the ones: (2j, 2j + 2) and (2j + 3, 2j + 1)
        if 2 * j + 2 < k:
            index[2 * j][2 * j + 2] = k
        if 2 * j + 3 < k:
            index[2 * j + 3][2 * j + 1] = k
    return _gather(vals, index)


def hadamard(n, dtype=int):
    """Sylvester's Hadamard matrix of order n (a power of 2): entry (i, j) is (-1) to the
    number of bits i and j share; dtype int (the default integer dtype) unless given."""
    n = _size("hadamard", n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2; got {n}")
    d = qb.asarray(0).dtype if dtype is int else _core.zeros((), dtype).dtype
    i = qb.arange(n)
    shared = i[:, None] & i[None, :]
    parity = qb.zeros((n, n), dtype=shared.dtype)
    for b in range(max(1, n.bit_length() - 1)):
        parity = parity ^ ((shared >> b) & 1)
    return (1 - 2 * parity).astype(d)


def hankel(c, r=None):
    """The Hankel matrix with first column c and last row r (zeros when None; r[0] is
    ignored, as SciPy's): entry (i, j) is c[i + j] for i + j < len(c), else r[i + j - len(c) + 1].
    Batched over leading axes of c and r."""
    c = _array(c, "hankel", "c")
    c = c.reshape((1,)) if c.ndim == 0 else c
    r = qb.zeros_like(c) if r is None else _array(r, "hankel", "r")
    r = r.reshape((1,)) if r.ndim == 0 else r
    d = qb.result_type(c, r)
    batch = tuple(qb.broadcast_shapes(tuple(c.shape[:-1]), tuple(r.shape[:-1])))
    c = qb.broadcast_to(c.astype(d), batch + (c.shape[-1],))
    r = qb.broadcast_to(r.astype(d), batch + (r.shape[-1],))
    n, m = c.shape[-1], r.shape[-1]
    vals = qb.concatenate([c, r[..., 1:]], axis=-1)
    return _gather(vals, [[i + j for j in range(m)] for i in range(n)], m)


def helmert(n, full: bool = False):
    """The Helmert matrix of order n: orthonormal rows, row i (1 <= i < n) is i entries
    1 / sqrt(i (i + 1)), then -i / sqrt(i (i + 1)), then zeros; with full=True the first row
    ones / sqrt(n) is included ((n, n)), else not ((n - 1, n))."""
    n = _size("helmert", n, minimum=1)
    d = qb.default_dtype()
    i = qb.arange(n).astype(d)
    body = qb.tril(qb.ones((n, n), dtype=d), -1) - qb.diag(i)
    scale = 1.0 / qb.sqrt(i * (i + 1.0))
    h = body * qb.where(i == 0, qb.zeros_like(i), scale)[:, None]
    first = qb.full((1, n), 1.0 / math.sqrt(n), dtype=d)
    return qb.concatenate([first, h[1:]], axis=0) if full else h[1:]


def hilbert(n):
    """The Hilbert matrix 1 / (i + j + 1) of order n (the default float dtype)."""
    n = _size("hilbert", n)
    i = qb.arange(n).astype(qb.default_dtype())
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


def invhilbert(n):
    """The exact inverse of hilbert(n): (-1)^(i+j) (i + j + 1) C(n + i, n - j - 1)
    C(n + j, n - i - 1) C(i + j, i)^2, computed in integers and rounded once to the default
    float dtype."""
    n = _size("invhilbert", n)
    c = math.comb
    rows = [[(-1) ** (i + j) * (i + j + 1) * c(n + i, n - j - 1) * c(n + j, n - i - 1) * c(i + j, i) ** 2
             for j in range(n)] for i in range(n)]
    return qb.asarray([[float(v) for v in row] for row in rows], dtype=qb.default_dtype()).reshape((n, n))


def _pascal_kind(fname, kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"{fname}: kind must be 'symmetric', 'lower' or 'upper'; got {kind!r}")
    return kind


def _integer_matrix(rows, n):
    return qb.asarray([[float(v) for v in row] for row in rows], dtype=qb.default_dtype()).reshape((n, n))


def pascal(n, kind=None):
    """The Pascal matrix of order n: 'symmetric' (default) C(i + j, i), 'lower' C(i, j),
    'upper' C(j, i); the exact binomials rounded once to the default float dtype (JAX computes
    them through gammaln in float32, SciPy returns integers)."""
    n = _size("pascal", n)
    kind = _pascal_kind("pascal", kind)
    c = math.comb
    if kind == "symmetric":
        rows = [[c(i + j, i) for j in range(n)] for i in range(n)]
    elif kind == "lower":
        rows = [[c(i, j) for j in range(n)] for i in range(n)]
    else:
        rows = [[c(j, i) for j in range(n)] for i in range(n)]
    return _integer_matrix(rows, n)


def invpascal(n, kind=None):
    """The exact inverse of pascal(n, kind): 'lower' (-1)^(i-j) C(i, j), 'upper' its
    transpose, 'symmetric' (lower^-1)^T lower^-1 (the symmetric Pascal matrix is lower
    times upper), summed in integers and rounded once to the default float dtype."""
    n = _size("invpascal", n)
    kind = _pascal_kind("invpascal", kind)
    c = math.comb
    low = [[(-1) ** (i - j) * c(i, j) if j <= i else 0 for j in range(n)] for i in range(n)]
    if kind == "lower":
        rows = low
    elif kind == "upper":
        rows = [[low[j][i] for j in range(n)] for i in range(n)]
    else:
        rows = [[sum(low[k][i] * low[k][j] for k in range(max(i, j), n)) for j in range(n)] for i in range(n)]
    return _integer_matrix(rows, n)


def leslie(f, s):
    """The Leslie matrix (n, n) of fecundities f (..., n) and survival rates s (..., n - 1):
    first row f, s on the subdiagonal. Batched over leading axes."""
    f, s = _array(f, "leslie", "f"), _array(s, "leslie", "s")
    if f.ndim < 1 or s.ndim < 1 or f.shape[-1] < 1 or s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(f"leslie: the length of s along the last axis must be one less than the length of f; got "
                         f"f shape {tuple(f.shape)} and s shape {tuple(s.shape)}")
    d = qb.result_type(f, s)
    batch = tuple(qb.broadcast_shapes(tuple(f.shape[:-1]), tuple(s.shape[:-1])))
    n = f.shape[-1]
    f = qb.broadcast_to(f.astype(d), batch + (n,))
    s = qb.broadcast_to(s.astype(d), batch + (n - 1,))
    vals = qb.concatenate([f, s], axis=-1)
    return _gather(vals, [[j if i == 0 else (n + i - 1 if j == i - 1 else -1) for j in range(n)] for i in range(n)])


# ---- factorizations --------------------------------------------------------------------------

def _householder(x):
    """LAPACK's elementary reflector for the vector x (..., m): (v, tau, beta) with
    (I - tau v v^T) x = beta e_1, v[0] = 1, beta = -sign(x[0]) ||x||; tau = 0 (the identity)
    when x[1:] is zero."""
    alpha = x[..., 0]
    rest = x[..., 1:]
    s = qb.sum(rest * rest, axis=-1)
    trivial = s == 0
    norm = qb.sqrt(alpha * alpha + qb.where(trivial, qb.ones_like(s), s))  # safe where trivial
    beta = qb.where(alpha >= 0, -norm, norm)
    denom = qb.where(trivial, qb.ones_like(alpha), alpha - beta)
    v = qb.concatenate([qb.ones_like(alpha)[..., None], rest / denom[..., None]], axis=-1)
    tau = qb.where(trivial, qb.zeros_like(alpha), (beta - alpha) / qb.where(trivial, qb.ones_like(beta), beta))
    return v, tau, qb.where(trivial, alpha, beta)


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The upper Hessenberg form H of a (..., n, n), a = Q H Q^T with Q orthogonal, by n - 2
    Householder reflections with LAPACK's sign conventions (so H and Q are SciPy's): H, or
    (H, Q) with calc_q=True. Batched and differentiable (made of array operations)."""
    _no_complex("qb.scipy.linalg.hessenberg", a)
    a = _la._square("hessenberg", a)
    n = a.shape[-1]
    h = a
    q = qb.broadcast_to(qb.eye(n, dtype=a.dtype), a.shape) if calc_q else None
    for k in range(n - 2):
        v, tau, _ = _householder(h[..., k + 1:, k])
        full = qb.concatenate([qb.zeros(tuple(v.shape[:-1]) + (k + 1,), dtype=a.dtype), v], axis=-1)
        t = tau[..., None, None]
        vc, vr = full[..., :, None], full[..., None, :]
        h = h - t * (vc @ (vr @ h))  # (I - tau v v^T) h
        h = h - t * ((h @ vc) @ vr)  # ... (I - tau v v^T)
        if calc_q:
            q = q - t * ((q @ vc) @ vr)
    h = qb.triu(h, -1)
    return (h, q) if calc_q else h


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """(Q c, R) (mode='left', c of shape (..., K, P)) or (c Q, R) (mode='right', the default,
    c of shape (..., P, M)) with Q (M, K) and R (K, N) the reduced QR of a (..., M, N), K =
    min(M, N), as scipy.linalg.qr_multiply. A 1-D c is a column (left) or a row (right) and
    the product comes back 1-D. conjugate has no effect on real arrays."""
    _no_complex("qb.scipy.linalg.qr_multiply", a, c)
    if pivoting:
        raise NotImplementedError("qr_multiply: pivoting=True is not available (Quabla has no pivoted QR)")
    if mode not in ("left", "right"):
        raise ValueError(f"qr_multiply: mode must be 'left' or 'right', got {mode!r}")
    a, c = _floats("qr_multiply", ("a", a), ("c", c))
    if a.ndim < 2:
        raise ValueError(f"qr_multiply: a must be a matrix or a stack of them (..., M, N), got shape {tuple(a.shape)}")
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    q, r = _la.qr(a, mode="reduced")
    vector = c.ndim == 1
    if mode == "left":
        c2 = c[:, None] if vector else c
        if c2.ndim < 2 or c2.shape[-2] != k:
            raise ValueError(f"qr_multiply: with mode='left' c must have shape (..., {k}, P) (K = min(M, N)), got "
                             f"{tuple(c.shape)}")
        out = q @ c2
        return (out[..., 0] if vector else out), r
    c2 = c[None, :] if vector else c
    if c2.ndim < 2 or c2.shape[-1] != m:
        raise ValueError(f"qr_multiply: with mode='right' c must have shape (..., P, {m}) (M = a.shape[-2]), got "
                         f"{tuple(c.shape)}")
    out = c2 @ q
    return (out[..., 0, :] if vector else out), r


# ---- the real Schur form ---------------------------------------------------------------------

def _eps(d) -> float:
    return 1.1920928955078125e-07 if d == _core.float32 else 2.220446049250313e-16


def _sign(x):
    """Fortran's SIGN(1, x): +1 for x >= 0 (zero included), -1 below."""
    return qb.where(x >= 0, qb.ones_like(x), -qb.ones_like(x))


def _standardizing_rotation(a, b, c, d, eps):
    """(cs, sn) of the rotation G = [[cs, -sn], [sn, cs]] that brings the 2 x 2 blocks
    [[a, b], [c, d]] (elementwise over arrays) to LAPACK's standard form G^T block G: upper
    triangular when the eigenvalues are real, else equal diagonal entries and off-diagonal
    entries of opposite signs (the rotations of Anderson's dlanv2, written from its
    description), and whether the block's eigenvalues are a complex pair."""
    one, zero = qb.ones_like(a), qb.zeros_like(a)
    temp = a - d
    p = 0.5 * temp
    bcmax = qb.maximum(qb.abs(b), qb.abs(c))
    bcmis = qb.minimum(qb.abs(b), qb.abs(c)) * _sign(b) * _sign(c)
    scale = qb.maximum(qb.abs(p), bcmax)
    safe_scale = qb.where(scale == 0, one, scale)
    z = p / safe_scale * p + bcmax / safe_scale * bcmis
    real = z >= 4.0 * eps
    # real eigenvalues: rotate the eigenvector of a + z to e_1
    zr = p + _sign(p) * qb.sqrt(safe_scale) * qb.sqrt(qb.where(real, z, one))
    tau_r = qb.sqrt(c * c + zr * zr)
    tau_r = qb.where(tau_r == 0, one, tau_r)
    cs_r, sn_r = zr / tau_r, c / tau_r
    # complex (or nearly equal real) eigenvalues: equalise the diagonal
    sigma = b + c
    tau = qb.sqrt(sigma * sigma + temp * temp)
    tau = qb.where(tau == 0, one, tau)
    cs_c = qb.sqrt(0.5 * (1.0 + qb.abs(sigma) / tau))
    sn_c = -(p / (tau * cs_c)) * _sign(sigma)
    aa, bb = a * cs_c + b * sn_c, -a * sn_c + b * cs_c
    cc, dd = c * cs_c + d * sn_c, -c * sn_c + d * cs_c
    b2 = bb * cs_c + dd * sn_c
    c2 = -aa * sn_c + cc * cs_c
    split = (c2 != 0) & (b2 != 0) & (_sign(b2) == _sign(c2))  # real after all: one more rotation
    sab, sac = qb.sqrt(qb.abs(b2)), qb.sqrt(qb.abs(c2))
    t2 = qb.sqrt(qb.abs(b2 + c2))
    t2 = qb.where(t2 == 0, one, t2)
    cs1, sn1 = sab / t2, sac / t2
    cs_s = qb.where(split, cs_c * cs1 - sn_c * sn1, cs_c)
    sn_s = qb.where(split, cs_c * sn1 + sn_c * cs1, sn_c)
    cs = qb.where(real, cs_r, cs_s)
    sn = qb.where(real, sn_r, sn_s)
    standard = (temp == 0) & (_sign(b) != _sign(c))
    cs = qb.where(c == 0, one, qb.where(b == 0, zero, qb.where(standard, one, cs)))
    sn = qb.where(c == 0, zero, qb.where(b == 0, one, qb.where(standard, zero, sn)))
    complex_pair = (c != 0) & (b != 0) & (standard | (~real & ~split))
    return cs, sn, complex_pair


def _blocks(h, n):
    """(zero subdiagonal flags (n - 1), each row's block start and end (n)) of a Hessenberg h:
    the diagonal blocks it splits into at its zero subdiagonal entries."""
    idx = qb.arange(n)
    zero = qb.diagonal(h, -1) == 0
    true = qb.asarray([True])
    split_after = qb.concatenate([zero, true])  # a block ends at row j
    starts = qb.concatenate([true, zero])  # a block starts at row j
    upper = idx[None, :] >= idx[:, None]
    end = qb.min(qb.where(upper & split_after[None, :], idx[None, :], n), axis=1)
    start = qb.max(qb.where(~upper | (idx[None, :] == idx[:, None]), qb.where(starts[None, :], idx[None, :], -1), -1),
                   axis=1)
    return zero, start, end


def _schur2d(a):
    """(T, Z, converged) for one real matrix: Hessenberg reduction, then double-shift QR
    steps (explicit: Q from the QR of (H - s1)(H - s2) restricted to the active window, the
    lowest unreduced diagonal block larger than 2 x 2; Wilkinson's pair of shifts from its
    trailing 2 x 2, an exceptional pair after 10 steps without deflation), deflating
    subdiagonal entries below eps (|h_ii| + |h_i+1,i+1|); finally each 2 x 2 block is rotated to
    LAPACK's standard form."""
    n = a.shape[-1]
    d = a.dtype
    if n <= 1:
        return a, qb.ones_like(a), qb.asarray(True)
    eps = _eps(d)
    h, z = hessenberg(a, calc_q=True)
    idx = qb.arange(n)
    eye = qb.eye(n, dtype=d)
    big = qb.sqrt(qb.sum(a * a))
    tiny = qb.where(big == 0, qb.ones_like(big), big) * eps

    def deflate(h):
        sub = qb.diagonal(h, -1)
        diag = qb.abs(qb.diagonal(h))
        scale = diag[:-1] + diag[1:]
        small = qb.abs(sub) <= eps * qb.where(scale == 0, tiny / eps, scale)
        return h * (1.0 - qb.diag(small.astype(d), -1))

    def window(h):
        _, start, end = _blocks(h, n)
        active = (end - start + 1) >= 3
        hi = qb.max(qb.where(active, idx, -1))
        lo = qb.sum(qb.where(idx == hi, start, 0))
        return qb.any(active), lo, hi

    def cond(state):
        h, _, it, _, _ = state
        return window(h)[0] & (it < max(100, 30 * n))

    def body(state):
        h, z, it, stall, zeros_before = state
        h = deflate(h)
        _, lo, hi = window(h)
        nzero = qb.sum((qb.diagonal(h, -1) == 0).astype(_core.int32)).astype(_core.int32)
        stall = qb.where(nzero > zeros_before, qb.zeros_like(stall), stall + 1)
        hi_c = qb.maximum(hi, 2)
        flat = h.reshape((-1,))
        a11, a12 = flat[(hi_c - 1) * n + hi_c - 1], flat[(hi_c - 1) * n + hi_c]
        a21, a22 = flat[hi_c * n + hi_c - 1], flat[hi_c * n + hi_c]
        a32 = flat[(hi_c - 1) * n + hi_c - 2]
        s, t = a11 + a22, a11 * a22 - a12 * a21
        x = qb.abs(a21) + qb.abs(a32)
        ex = 0.75 * x + a22
        exceptional = (stall > 0) & (stall % 10 == 0)
        s = qb.where(exceptional, 2.0 * ex, s)
        t = qb.where(exceptional, ex * ex + 0.4375 * x * x, t)
        inside = ((idx >= lo) & (idx <= hi)).astype(d)
        mask = inside[:, None] * inside[None, :]
        m = (h @ h - s * h + t * eye) * mask + eye * (1.0 - mask)
        q, _ = _la.qr(m, mode="complete")
        q = q * mask + eye * (1.0 - mask)  # exactly the identity outside the window
        h = qb.triu(q.T @ h @ q, -1)
        return h, z @ q, it + 1, stall, nzero

    start = (deflate(h), z, qb.asarray(0, dtype=_core.int32), qb.asarray(0, dtype=_core.int32),
             qb.asarray(0, dtype=_core.int32))
    h, z, _, _, _ = qb.while_loop(cond, body, start)
    h = deflate(h)
    converged = ~window(h)[0]
    # standardise the 2 x 2 blocks
    _, start_, end_ = _blocks(h, n)
    first = (end_ - start_ == 1) & (start_ == idx)  # row i starts a 2 x 2 block
    first = first[:-1]
    dg, up, lo_ = qb.diagonal(h), qb.diagonal(h, 1), qb.diagonal(h, -1)
    cs, sn, pair = _standardizing_rotation(dg[:-1], up, lo_, dg[1:], eps)
    cs = qb.where(first, cs, qb.ones_like(cs))
    sn = qb.where(first, sn, qb.zeros_like(sn))
    on_first = qb.concatenate([cs, qb.ones((1,), dtype=d)])
    on_second = qb.concatenate([qb.ones((1,), dtype=d), cs])
    starts_here = qb.concatenate([first, qb.asarray([False])])
    second_here = qb.concatenate([qb.asarray([False]), first])
    g_diag = qb.where(starts_here, on_first, qb.where(second_here, on_second, qb.ones((n,), dtype=d)))
    g = qb.diag(g_diag) + qb.diag(-sn, 1) + qb.diag(sn, -1)
    h = g.T @ h @ g
    z = z @ g
    # exact structure: nothing below the subdiagonal, a subdiagonal entry only inside a
    # complex 2 x 2 block, whose diagonal entries are made equal
    sub = qb.diagonal(h, -1)
    keep = first & pair
    dg = qb.diagonal(h)
    mean = 0.5 * (dg[:-1] + dg[1:])
    keep_first = qb.concatenate([keep, qb.asarray([False])])
    keep_second = qb.concatenate([qb.asarray([False]), keep])
    mean_first = qb.concatenate([mean, qb.zeros((1,), dtype=d)])
    mean_second = qb.concatenate([qb.zeros((1,), dtype=d), mean])
    new_diag = qb.where(keep_first, mean_first, qb.where(keep_second, mean_second, dg))
    h = qb.triu(h, 1) + qb.diag(new_diag) + qb.diag(qb.where(keep, sub, qb.zeros_like(sub)), -1)
    return h, z, converged


def schur(a, output: str = "real"):
    """The real Schur form (T, Z) of a (..., n, n): a = Z T Z^T with Z orthogonal and T
    quasi-upper-triangular, its 2 x 2 diagonal blocks (one per complex pair of eigenvalues)
    in LAPACK's standard form (equal diagonal entries, off-diagonal entries of opposite
    signs). By Hessenberg reduction and shifted double QR steps; the eigenvalues may come in
    another order along the diagonal than SciPy's (a Schur form is not unique).
    output='complex': the complex Schur form (T upper triangular, Z unitary, a = Z T Z^H)
    by rsf2csf of the real one (real input only). Not differentiable in general (the
    iteration count depends on the values); a matrix where the iteration does not converge
    (30 n steps) raises ValueError (NaN under jit)."""
    _no_complex("qb.scipy.linalg.schur", a)
    if output not in ("real", "r", "complex", "c"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    if output in ("complex", "c"):
        return rsf2csf(*schur(a, "real"))
    a = _la._square("schur", a)
    if a.ndim > 2:
        batch = tuple(a.shape[:-2])
        flat = a.reshape((-1,) + tuple(a.shape[-2:]))
        t, z, ok = qb.vmap(_schur2d)(flat)
        t, z, ok = t.reshape(a.shape), z.reshape(a.shape), ok.reshape(batch)
        okm = ok[..., None, None]
    else:
        t, z, ok = _schur2d(a)
        okm = ok
    if not _traced(ok):
        if not bool(qb.all(ok)):
            raise ValueError("schur: the QR iteration did not converge (the Schur form was not found)")
        return t, z
    nan = qb.full_like(t, math.nan)
    return qb.where(okm, t, nan), qb.where(okm, z, nan)


def rsf2csf(T, Z, check_finite: bool = True):
    """The complex Schur form (T, Z) from a real one (scipy.linalg.rsf2csf): each 2 x 2
    diagonal block of T (a complex pair of eigenvalues) is made upper triangular by a complex
    Givens rotation, applied to T from both sides and to Z, bottom block first (SciPy's
    order), so a = Z T Z^H still holds, with T upper triangular and Z unitary. Blocks whose
    subdiagonal entry is below eps (|T_m-1,m-1| + |T_mm|) count as split. Works under jit
    (rotations by the identity where a block is split) and on stacks of matrices."""
    T, Z = _la._inexact(T, "rsf2csf"), _la._inexact(Z, "rsf2csf")
    if T.ndim < 2 or T.shape[-1] != T.shape[-2] or tuple(Z.shape) != tuple(T.shape):
        raise ValueError(f"rsf2csf: expected square T and Z of one shape, got {tuple(T.shape)} and "
                         f"{tuple(Z.shape)}")
    _no_complex("qb.scipy.linalg.rsf2csf (of a complex T or Z, which is already complex)", T, Z)
    ct = qb.complex64 if T.dtype == qb.float32 else qb.complex128
    eps = _eps(T.dtype)
    T, Z = T.astype(ct), Z.astype(ct)
    n = T.shape[-1]
    for m in range(n - 1, 0, -1):
        sub = T[..., m, m - 1]
        split = qb.abs(sub) <= eps * (qb.abs(T[..., m - 1, m - 1]) + qb.abs(T[..., m, m]))
        # the block's eigenvalue mu = (a + d)/2 + sqrt(((a - d)/2)^2 + bc), less T_mm
        a_, b_, d_ = T[..., m - 1, m - 1], T[..., m - 1, m], T[..., m, m]
        half = (a_ - d_) * 0.5
        mu = half + qb.sqrt(half * half + b_ * sub)
        r = qb.sqrt(qb.abs(mu) ** 2 + qb.abs(sub) ** 2)
        r = qb.where(split | (r == 0), 1.0, r)
        c = qb.where(split, 1.0, mu / r)
        s = qb.where(split, 0.0, sub / r)
        g = qb.stack([qb.stack([qb.conj(c), s], axis=-1), qb.stack([-s, c], axis=-1)], axis=-2)  # (..., 2, 2)
        gh = qb.conj(qb.swapaxes(g, -1, -2))
        T = T.at[..., m - 1:m + 1, m - 1:].set(g @ T[..., m - 1:m + 1, m - 1:])
        T = T.at[..., :m + 1, m - 1:m + 1].set(T[..., :m + 1, m - 1:m + 1] @ gh)
        Z = Z.at[..., :, m - 1:m + 1].set(Z[..., :, m - 1:m + 1] @ gh)
        T = T.at[..., m, m - 1].set(0.0)
    return T, Z


# ---- the matrix square root ------------------------------------------------------------------

def _mT(x):
    return qb.swapaxes(x, -1, -2)


_SQRTM_PSD = {}


def _sqrtm_psd_rule():
    """V sqrt(max(w, 0)) V^T from eigh, with the derivative of the square root itself: dX
    solves X dX + dX X = dA, in the eigenbasis (V^T dA V)_ij / (s_i + s_j), finite where
    eigenvalues repeat (eigh's own derivative is not)."""
    if "rule" not in _SQRTM_PSD:
        def parts(a):
            w, v = _la.eigh(a)
            s = qb.sqrt(qb.maximum(w, 0.0))
            return s, v, (v * s[..., None, :]) @ _mT(v)

        @qb.custom_jvp
        def sqrtm_psd(a):
            return parts(a)[2]

        @sqrtm_psd.defjvp
        def _rule(primals, tangents):
            (a,), (da,) = primals, tangents
            s, v, x = parts(a)
            e = _mT(v) @ da @ v
            return x, v @ (e / (s[..., :, None] + s[..., None, :])) @ _mT(v)
        _SQRTM_PSD["rule"] = sqrtm_psd
    return _SQRTM_PSD["rule"]


def _sqrtm_symmetric(a):
    """(X, ok) for symmetric a: ok where no eigenvalue is below -100 n eps max|w| (smaller
    negative ones are rounding and count as 0)."""
    n = a.shape[-1]
    w = _la.eigvalsh(qb.stop_gradient(a))
    tol = 100.0 * n * _eps(a.dtype) * qb.max(qb.abs(w), axis=-1)
    return _sqrtm_psd_rule()(a), qb.min(w, axis=-1) >= -tol


_DB_TRACED_STEPS = 30


def _sqrtm_db(a, concrete: bool):
    """(X, ok) by the Denman-Beavers iteration Y <- (Y + Z^-1) / 2, Z <- (Z + Y^-1) / 2 from
    Y = a, Z = I, with determinant scaling; Y converges quadratically to the principal
    square root when a has no eigenvalue on the closed negative real axis. Concrete input
    iterates until Y settles (at most 60 steps), traced input a fixed 30 (differentiable
    through the steps). ok where the result squares back to a (relative residual
    ||X X - a|| / ||X||^2 below sqrt(eps))."""
    n = a.shape[-1]
    eps = _eps(a.dtype)
    y = a
    z = qb.broadcast_to(qb.eye(n, dtype=a.dtype), a.shape)
    previous = math.inf
    for step in range(60 if concrete else _DB_TRACED_STEPS):
        logdet = _la.slogdet(y)[1] + _la.slogdet(z)[1]
        mu = qb.exp(-logdet / (2.0 * n))[..., None, None]
        mu = qb.where(qb.isfinite(mu), mu, qb.ones_like(mu))
        y, z = mu * y, mu * z
        y_new, z = 0.5 * (y + _la.inv(z)), 0.5 * (z + _la.inv(y))
        if concrete:
            change = float(qb.max(qb.sqrt(qb.sum(qb.abs(y_new - y) ** 2, axis=(-2, -1)))
                                  / qb.maximum(qb.sqrt(qb.sum(qb.abs(y_new) ** 2, axis=(-2, -1))), 1e-300)))
            y = y_new
            if not math.isfinite(change) or change <= 10.0 * n * eps or (change < 1e-3 and change > previous / 2):
                break
            previous = change
        else:
            y = y_new
    residual = qb.sqrt(qb.sum(qb.abs(y @ y - a) ** 2, axis=(-2, -1)))
    scale = qb.sum(qb.abs(y) ** 2, axis=(-2, -1))
    ok = qb.isfinite(residual) & (residual <= math.sqrt(eps) * qb.where(scale == 0, qb.ones_like(scale), scale))
    return y, ok


def sqrtm(A, blocksize: int = 1):
    """The principal square root X of A (..., n, n) (X X = A). Real A gives a real matrix: for
    (nearly, to 100 eps) symmetric A by eigh (NaN, or ValueError for concrete input, where
    A has a negative eigenvalue: that root is complex); for other A by the Denman-Beavers
    iteration, which needs A nonsingular with no eigenvalue on the negative real axis (else
    the principal root is complex or does not exist: ValueError / NaN). JAX returns a complex
    array; the values agree where the root is real. Complex A: the Denman-Beavers iteration in
    complex arithmetic, with the same condition (no eigenvalue on the closed negative real
    axis; the Schur method SciPy uses there is not written yet).
    Differentiable: the symmetric path by the root's own derivative (dX solves X dX + dX X =
    dA), the general one through the iteration's steps. blocksize other than 1 is not
    supported (as in JAX)."""
    if blocksize != 1:
        raise NotImplementedError("sqrtm: blocksize other than 1 is not available (as in JAX)")
    a = _la._square("sqrtm", A)
    n = a.shape[-1]
    if n == 0:
        return a
    if a.dtype in (qb.complex64, qb.complex128):
        concrete = not _traced(a)
        x, ok = _sqrtm_db(a, concrete)
        if concrete:
            if not bool(qb.all(ok)):
                raise ValueError("sqrtm: the Denman-Beavers iteration did not converge to a square root of this "
                                 "complex matrix (it needs no eigenvalue on the closed negative real axis; the Schur "
                                 "method for such matrices is not supported yet)")
            return x
        return qb.where(ok[..., None, None], x, qb.full_like(x, complex(math.nan, math.nan)))
    eps = _eps(a.dtype)
    gap = qb.max(qb.abs(a - _mT(a)), axis=(-2, -1))
    sym = gap <= 100.0 * eps * qb.max(qb.abs(a), axis=(-2, -1))
    concrete = not _traced(a) and not _traced(sym)
    if concrete and bool(qb.all(sym)):
        x, ok = _sqrtm_symmetric(a)
    elif concrete and not bool(qb.any(sym)):
        x, ok = _sqrtm_db(a, True)
    else:  # both, each on an input that is safe where the other one is used
        eye = qb.broadcast_to(qb.eye(n, dtype=a.dtype), a.shape)
        s = sym[..., None, None]
        xs, oks = _sqrtm_symmetric(qb.where(s, a, eye))
        xd, okd = _sqrtm_db(qb.where(s, eye, a), concrete)
        x, ok = qb.where(s, xs, xd), qb.where(sym, oks, okd)
    if concrete:
        if not bool(qb.all(ok)):
            raise ValueError("sqrtm: the principal square root of this matrix is not real (a negative eigenvalue, or a "
                             "complex pair on the negative real axis) or does not exist (singular and not "
                             "symmetric); the complex root (SciPy and JAX return a complex array here) is not "
                             "supported yet")
        return x
    return qb.where(ok[..., None, None], x, qb.full_like(x, math.nan))


# ---- the Sylvester equation ------------------------------------------------------------------

_SYLVESTER_MAX = 2500  # m n: the vectorised system is (m n) x (m n)


def _eigenvalues(a):
    """(real parts, imaginary parts) of a's eigenvalues (..., n) from its real Schur form."""
    t, _ = schur(a)
    n = a.shape[-1]
    dg = qb.diagonal(t, axis1=-2, axis2=-1)
    if n < 2:
        return dg, qb.zeros_like(dg)
    sub = qb.diagonal(t, -1, axis1=-2, axis2=-1)
    sup = qb.diagonal(t, 1, axis1=-2, axis2=-1)
    mu = qb.sqrt(qb.maximum(-sub * sup, 0.0))  # nonzero sub only inside a complex 2 x 2 block
    pad = qb.zeros(tuple(mu.shape[:-1]) + (1,), dtype=mu.dtype)
    imag = qb.concatenate([mu, pad], axis=-1) - qb.concatenate([pad, mu], axis=-1)
    return dg, imag


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """X with A X + X B = C for real A (..., m, m), B (..., n, n), C (..., m, n) (batch axes
    broadcast), by one LU solve of the vectorised system (A kron I + I kron B^T) vec(X) =
    vec(C), so m n is limited to 2500 (ValueError above); method 'schur' and 'eigen' (JAX's
    names) both take this path. As JAX, the result is NaN where some eigenvalues of A and B
    sum to within tol of zero (the equation then has no unique solution; eigenvalues from
    schur). Differentiable in A, B and C."""
    _no_complex("qb.scipy.linalg.solve_sylvester", A, B, C)
    if method not in ("schur", "eigen"):
        raise ValueError(f'solve_sylvester: unrecognized method {method!r}; the two valid methods are "schur" and '
                         f'"eigen"')
    A, B, C = _floats("solve_sylvester", ("A", A), ("B", B), ("C", C))
    for what, x in (("A", A), ("B", B)):
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            raise ValueError(f"solve_sylvester: {what} must be a square matrix or a stack of them, got shape "
                             f"{tuple(x.shape)}")
    m, n = A.shape[-1], B.shape[-1]
    if C.ndim < 2 or tuple(C.shape[-2:]) != (m, n):
        raise ValueError(f"solve_sylvester: C must have shape (..., {m}, {n}) for A of shape {tuple(A.shape)} and B "
                         f"of shape {tuple(B.shape)}, got {tuple(C.shape)}")
    if m * n > _SYLVESTER_MAX:
        raise ValueError(f"solve_sylvester: m n = {m * n} is above {_SYLVESTER_MAX}: the equation is solved as one "
                         f"dense system of m n unknowns; solve smaller problems, or reduce the sizes")
    batch = tuple(qb.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]), tuple(C.shape[:-2])))
    A = qb.broadcast_to(A, batch + (m, m))
    B = qb.broadcast_to(B, batch + (n, n))
    C = qb.broadcast_to(C, batch + (m, n))
    if m * n == 0:
        return C
    # row-major vec: vec(A X) = (A kron I_n) vec(X), vec(X B) = (I_m kron B^T) vec(X)
    im, i_n = qb.eye(m, dtype=A.dtype), qb.eye(n, dtype=A.dtype)
    k = qb.einsum("...ik,jl->...ijkl", A, i_n) + qb.einsum("ik,...lj->...ijkl", im, B)
    k = k.reshape(batch + (m * n, m * n))
    x = _la.solve(k, C.reshape(batch + (m * n, 1))).reshape(batch + (m, n))
    # JAX's check: NaN where an eigenvalue of A and one of B sum to (almost) zero
    ar, ai = _eigenvalues(qb.stop_gradient(A))
    br, bi = _eigenvalues(qb.stop_gradient(B))
    sums = qb.sqrt((ar[..., :, None] + br[..., None, :]) ** 2 + (ai[..., :, None] + bi[..., None, :]) ** 2)
    bad = qb.any(sums < tol, axis=(-2, -1))[..., None, None]
    return qb.where(bad, qb.full_like(x, math.nan), x)
