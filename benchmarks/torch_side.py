"""The PyTorch column (torch.func), run when torch is installed: the same four PINN
workloads written as a torch.func user writes them: functional parameters (a dict of
tensors), torch.func.vmap/grad/hessian for the derivatives, grad_and_value for the loss
gradient and the same Adam update as the JAX side, in eager mode (torch.compile does not
trace through nested torch.func transforms reliably, and its compile would dominate these
short runs). Each function returns the dict the Quabla and JAX sides return, with no
compile time (eager mode compiles nothing; its first step is not a compile)."""
from __future__ import annotations

import math
import time
import warnings

import numpy as np

from .harness import adam_update


def load_torch():
    """torch, or None when it is not installed (or does not import)."""
    # torch.func's hessian goes through a deprecated torch.jit path that warns on first use.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\..*")
    try:
        import torch
        import torch.func  # noqa: F401
    except Exception:  # an install without its native libraries fails with OSError
        return None
    return torch


class _Vmap:
    """vmap with JAX's keyword (in_axes), so the workloads' generic code runs unchanged."""

    def __init__(self, torch):
        self.torch = torch

    def __call__(self, f, in_axes=0):
        return self.torch.func.vmap(f, in_dims=in_axes)


def _tree_map(f, *trees):
    return {k: f(*(t[k] for t in trees)) for k in trees[0]}




def _train(torch, loss, params, data, lr, steps):
    """(first step s, median step s, total s, final params, last loss)."""
    gv = torch.func.grad_and_value(loss)
    update = adam_update(torch, _tree_map, lr)
    zeros = _tree_map(torch.zeros_like, params)
    state = {"p": params, "s": (0, zeros, zeros)}

    def one():
        grads, value = gv(state["p"], *data)
        state["p"], state["s"] = update(state["p"], grads, state["s"])
        return value

    t0 = time.perf_counter()
    value = one()
    first = time.perf_counter() - t0
    times = []
    for _ in range(steps - 1):
        t = time.perf_counter()
        value = one()
        times.append(time.perf_counter() - t)
    med = float(np.median(times))
    return first, med, first + float(np.sum(times)), state["p"], float(value)


def run_loss(torch, loss_factory, params_np, data_np, lr, steps, dtype):
    """A pde-style workload: the dict _run_jax returns (step, compile, loss)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        loss = loss_factory(torch, torch.func.grad, _Vmap(torch), torch.func.hessian)
        params = {k: torch.asarray(v) for k, v in params_np.items()}
        data = [torch.asarray(d) for d in data_np]
        _, med, _, _, value = _train(torch, loss, params, data, lr, steps)
    finally:
        torch.set_default_dtype(old)
    return {"step": med, "compile": None, "loss": value}


def glance(torch, steps=300):
    torch.set_default_dtype(torch.float64)
    f = torch.func

    def u(x, w):
        return torch.sin(w * x)
    u_xx = f.vmap(f.grad(f.grad(u)), in_dims=(0, None))

    def loss(params, x):
        return torch.mean((u_xx(x, params["w"]) + math.pi ** 2 * torch.sin(math.pi * x)) ** 2)

    x = torch.linspace(0.05, 0.95, 8)
    _, med, total, params, value = _train(torch, loss, {"w": torch.tensor(2.5)}, [x], 0.05, steps)
    return {"compile_s": None, "step_s": med, "total_s": total, "result": float(params["w"]), "loss": value}


def figure(torch, init_np, xs, x_eval, steps=3000):
    torch.set_default_dtype(torch.float64)
    f = torch.func

    def u(p, x):
        h = torch.tanh(torch.reshape(x, (1, 1)) @ p["w1"] + p["b1"])
        return torch.reshape(h @ p["w2"] + p["b2"], ())

    u_xx = f.vmap(f.grad(f.grad(u, argnums=1), argnums=1), in_dims=(None, 0))
    u_b = f.vmap(u, in_dims=(None, 0))

    def loss(p, x):
        res = u_xx(p, x) + math.pi ** 2 * torch.sin(math.pi * x)
        ub = u_b(p, torch.tensor([0.0, 1.0]))
        return torch.mean(res ** 2) + torch.mean(ub ** 2)

    params = {k: torch.asarray(v) for k, v in init_np.items()}
    _, med, total, params, value = _train(torch, loss, params, [torch.asarray(xs)], 0.01, steps)
    pred = u_b(params, torch.asarray(x_eval)).numpy()
    err = float(np.max(np.abs(pred - np.sin(np.pi * x_eval))))
    return {"compile_s": None, "step_s": med, "total_s": total, "result": err, "loss": value}
