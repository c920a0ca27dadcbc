"""Linear algebra with complex results or complex matrices beside JAX (jax.jit, CPU, float64)
and NumPy: eig and eigvals of a 200x200 real matrix, eigvals of 10,000 8x8 matrices, the
gradient of a loss of the eigenvalues of a 64x64 matrix, complex solves (10,000 4x4
systems, and one 500x500: Quabla solves the real 2n x 2n form), and the complex eigh, svd
and Cholesky of 200x200 matrices (LAPACK's complex routines). Each result is checked
against NumPy or JAX before it is timed."""
from __future__ import annotations

import numpy as np

import quabla as qb

from .harness import alternate, load_jax


def run(quick: bool = False):
    jax, jnp = load_jax(True)
    rows = []
    rounds = 3 if quick else 7
    rng = np.random.default_rng(0)

    def crand(*shape):
        return rng.normal(size=shape) + 1j * rng.normal(size=shape)

    def add(label, q, j=None, n=None, number=3):
        impls = {"quabla": q}
        if j is not None:
            impls["jax"] = j
        if n is not None:
            impls["numpy"] = n
        t = alternate(impls, number=number, rounds=rounds, warmup=2)
        rows.append((label, "ms/call", {k: v * 1e3 for k, v in t.items()}))

    def case(label, f_q, f_j, f_n, *args, number=3, check=None):
        fq = qb.jit(f_q)
        qa = [qb.array(a) for a in args]
        got = fq(*qa)
        if check is not None:
            check(got)
        jcall = None
        if jax and f_j is not None:
            fj = jax.jit(f_j)
            ja = [jnp.asarray(a) for a in args]
            jcall = lambda: jax.block_until_ready(fj(*ja))  # noqa: E731
        add(label, lambda: fq(*qa), jcall, (lambda: f_n(*args)) if f_n is not None else None, number=number)

    def near(want, tol=1e-8):
        def check(got):
            got = [np.asarray(g) for g in (got if isinstance(got, (tuple, list)) else [got])]
            for g, w in zip(got, want if isinstance(want, (tuple, list)) else [want]):
                err = np.max(np.abs(g - w)) / max(1.0, np.max(np.abs(w)))
                assert err < tol, f"complex_linalg: {err:.2e} from the reference"
        return check

    # NumPy's own OpenBLAS build may order a large matrix's eigenvalues differently (JAX
    # calls the same LAPACK as Quabla): eig is checked by its residual, eigvals sorted.
    def eig_residual(a):
        def check(got):
            w, v = (np.asarray(g) for g in got)
            err = np.max(np.abs(a @ v - v * w[..., None, :])) / np.max(np.abs(a))
            assert err < 1e-10, f"complex_linalg: eig residual {err:.2e}"
        return check

    def same_spectrum(a):
        want = np.sort_complex(np.linalg.eigvals(a).reshape(-1, a.shape[-1]))
        return lambda got: near(want)(np.sort_complex(np.asarray(got).reshape(want.shape)))

    a200 = rng.normal(size=(200, 200))
    case("eig 200 f64", lambda a: tuple(qb.linalg.eig(a)), (lambda a: tuple(jnp.linalg.eig(a))) if jax else None,
         np.linalg.eig, a200, number=1, check=eig_residual(a200))
    case("eigvals 200 f64", qb.linalg.eigvals, jnp.linalg.eigvals if jax else None, np.linalg.eigvals, a200,
         number=1, check=same_spectrum(a200))
    a8 = rng.normal(size=(10_000, 8, 8))
    case("eigvals 1e4 x 8x8 f64", qb.linalg.eigvals, jnp.linalg.eigvals if jax else None, np.linalg.eigvals, a8,
         number=1, check=same_spectrum(a8))
    a64 = rng.normal(size=(64, 64))
    loss_q = lambda a: qb.sum(qb.abs(qb.linalg.eigvals(a)) ** 2)  # noqa: E731
    loss_j = (lambda a: jnp.sum(jnp.abs(jnp.linalg.eigvals(a)) ** 2)) if jax else None
    want = np.asarray(jax.jit(jax.grad(loss_j))(a64)) if jax else None
    case("grad |eigvals|^2 64 f64", qb.grad(loss_q), jax.grad(loss_j) if jax else None, None, a64,
         check=near(want) if jax else None)

    c4, b4 = crand(10_000, 4, 4) + 2 * np.eye(4), crand(10_000, 4, 1)
    case("solve 1e4 x 4x4 c128", qb.linalg.solve, jnp.linalg.solve if jax else None, np.linalg.solve, c4, b4,
         check=near(np.linalg.solve(c4, b4)))
    c500, b500 = crand(500, 500), crand(500, 1)
    case("solve 500 c128", qb.linalg.solve, jnp.linalg.solve if jax else None, np.linalg.solve, c500, b500,
         number=1, check=near(np.linalg.solve(c500, b500), 1e-6))
    c200 = crand(200, 200)
    h200 = c200 @ c200.conj().T / 200 + np.eye(200)
    case("eigvalsh 200 c128", qb.linalg.eigvalsh, jnp.linalg.eigvalsh if jax else None, np.linalg.eigvalsh, h200,
         number=1, check=near(np.linalg.eigvalsh(h200)))
    case("svdvals 200 c128", lambda a: qb.linalg.svd(a, compute_uv=False),
         (lambda a: jnp.linalg.svd(a, compute_uv=False)) if jax else None,
         lambda a: np.linalg.svd(a, compute_uv=False), c200, number=1,
         check=near(np.linalg.svd(c200, compute_uv=False)))
    case("cholesky 200 c128", qb.linalg.cholesky, jnp.linalg.cholesky if jax else None, np.linalg.cholesky, h200,
         check=near(np.linalg.cholesky(h200)))
    return rows
