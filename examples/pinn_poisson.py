"""The README figure: a 1 -> 16 -> 1 tanh MLP trained as a PINN for u'' = -pi^2 sin(pi x) on
[0, 1] with u(0) = u(1) = 0 (exact solution sin(pi x)), float64, 3000 Adam steps (lr 0.01)
on 32 interior collocation points, Glorot-normal weights from qb.random.key(1) (the weights
jax.random.PRNGKey(1) gives: our random bits are JAX's).

Prints the final loss and the max abs error against sin(pi x) on 201 points, and writes
docs/assets/pinn_poisson.png (solution vs exact, pointwise error, loss curve) when
matplotlib is installed (scripts/setup.sh installs it).
"""
from __future__ import annotations

import math
import os
import sys
import time

import quabla as qb


def init_params(key):
    k1, k2 = qb.random.split(key)
    return {"w1": qb.random.glorot_normal(k1, (1, 16)), "b1": qb.zeros(16),
            "w2": qb.random.glorot_normal(k2, (16, 1)), "b2": qb.zeros(1)}


def u(p, x):  # the network at one point x (a scalar)
    h = qb.tanh(qb.reshape(x, (1, 1)) @ p["w1"] + p["b1"])
    return qb.reshape(h @ p["w2"] + p["b2"], ())


u_xx = qb.vmap(qb.grad(qb.grad(u, argnums=1), argnums=1), in_axes=(None, 0))  # exact u'' per point
u_batch = qb.vmap(u, in_axes=(None, 0))


def loss(p, x):
    residual = u_xx(p, x) + math.pi ** 2 * qb.sin(math.pi * x)
    boundary = u_batch(p, qb.array([0.0, 1.0]))
    return qb.mean(residual ** 2) + qb.mean(boundary ** 2)


def main(steps: int = 3000, figure: str = "docs/assets/pinn_poisson.png", device: str = "cpu"):
    params = init_params(qb.random.key(1))
    x = qb.array([(i + 1) / 33 for i in range(32)])
    adam = qb.optim.Adam(learning_rate=0.01)
    step = qb.jit(qb.value_and_grad(loss), device=device)
    history = []
    start = time.perf_counter()
    for _ in range(steps):
        value, grads = step(params, x)
        params = adam.step(params, grads)
        history.append(value.item())
    elapsed = time.perf_counter() - start
    x_eval = qb.linspace(0.0, 1.0, 201)
    pred = qb.jit(u_batch, device=device)(params, x_eval)
    exact = qb.sin(math.pi * x_eval)
    err = qb.max(qb.abs(pred - exact)).item()
    print(f"steps = {steps}, final loss = {history[-1]:.3e}, max abs error = {err:.2e} "
          f"({elapsed:.2f} s including compilation)")
    if figure:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib not installed: no figure written", file=sys.stderr)
            return err
        os.makedirs(os.path.dirname(figure) or ".", exist_ok=True)
        xs, ps, es = x_eval.numpy(), pred.numpy(), exact.numpy()
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        axes[0].plot(xs, es, "k-", lw=2, label="exact sin(pi x)")
        axes[0].plot(xs, ps, "r--", lw=1.5, label="PINN")
        axes[0].plot(x.numpy(), [0] * 32, "b|", ms=8, label="collocation points")
        axes[0].set_title("solution")
        axes[0].legend(fontsize=8)
        axes[1].plot(xs, ps - es, "r-")
        axes[1].set_title(f"error (max abs {err:.1e})")
        axes[2].semilogy(history)
        axes[2].set_title("loss")
        axes[2].set_xlabel("Adam step")
        fig.tight_layout()
        fig.savefig(figure, dpi=110)
        print(f"wrote {figure}")
    return err


if __name__ == "__main__":
    # python examples/pinn_poisson.py [--device cuda] [--no-figure]
    main(figure=None if "--no-figure" in sys.argv else "docs/assets/pinn_poisson.png",
         device=sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu")
