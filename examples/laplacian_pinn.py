"""A 2-D Poisson PINN whose loss takes the Laplacian with qb.laplacian (the README's
"Laplacians" section): -Laplace(u) = 2 pi^2 sin(pi x) sin(pi y) on the unit square with
u = 0 on the boundary (exact solution sin(pi x) sin(pi y)), the boundary condition built in
as u = x (1 - x) y (1 - y) N(x, y) with N a 2 -> 16 -> 16 -> 1 tanh MLP, float64, 3,000 Adam
steps (lr 0.01) on a 16 x 16 grid of collocation points.

Prints the loss, the max abs error on a 41 x 41 grid, and the Laplacian at one point by
qb.laplacian and by the trace of qb.hessian (the same number, computed without a Hessian).
"""
from __future__ import annotations

import math

import quabla as qb


def init_params(key):
    sizes = [(2, 16), (16, 16), (16, 1)]
    keys = qb.random.split(key, len(sizes))
    return [(qb.random.glorot_normal(k, s), qb.zeros(s[1])) for k, s in zip(keys, sizes)]


def u(params, xy):  # the model at one point xy = (x, y); zero on the boundary by construction
    h = xy
    for w, b in params[:-1]:
        h = qb.tanh(h @ w + b)
    w, b = params[-1]
    x, y = xy[0], xy[1]
    return x * (1 - x) * y * (1 - y) * (h @ w + b)[0]


laplace_u = qb.vmap(qb.laplacian(u, argnums=1), in_axes=(None, 0))  # exact Laplacian per point


def loss(params, xy):
    source = 2 * math.pi ** 2 * qb.sin(math.pi * xy[:, 0]) * qb.sin(math.pi * xy[:, 1])
    return qb.mean((laplace_u(params, xy) + source) ** 2)


def grid(n, lo, hi):
    g = qb.linspace(lo, hi, n)
    gx, gy = qb.meshgrid(g, g)
    return qb.stack([qb.ravel(gx), qb.ravel(gy)], axis=1)


def main(steps: int = 3000):
    params = init_params(qb.random.key(7))
    xy = grid(16, 0.03, 0.97)
    adam = qb.optim.Adam(learning_rate=0.01)
    step = qb.jit(qb.value_and_grad(loss))
    for _ in range(steps):
        value, grads = step(params, xy)
        params = adam.step(params, grads)
    test = grid(41, 0.0, 1.0)
    exact = qb.sin(math.pi * test[:, 0]) * qb.sin(math.pi * test[:, 1])
    err = qb.max(qb.abs(qb.vmap(u, in_axes=(None, 0))(params, test) - exact)).item()
    print(f"steps = {steps}, loss = {value.item():.2e}, max abs error = {err:.1e}")
    p = qb.array([0.3, 0.6])
    by_laplacian = qb.laplacian(u, argnums=1)(params, p).item()
    by_hessian = qb.trace(qb.hessian(u, argnums=1)(params, p)).item()
    print(f"laplacian at (0.3, 0.6): {by_laplacian:.6f} (trace of the Hessian: {by_hessian:.6f})")


if __name__ == "__main__":
    main()
