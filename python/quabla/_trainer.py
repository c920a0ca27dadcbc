"""Trainer: loss, gradient and optimizer update compiled into one retained program over
flat leaves. `step()` runs it and reads nothing back; `fit(steps)` runs many, optionally
printing progress, and returns the loss history (read back once, at the end).

Checkpoints: `trainer.params` and `trainer.state` (the optimizer state, a pytree) can be
saved with qb.save; `Trainer(..., opt_state=loaded_state)` resumes from them and continues
bit for bit as if the run had not stopped.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Optional, Sequence

from . import _core
from . import tree as _tree
from ._ad import value_and_grad
from ._cuda import device_put
from ._jit import jit

__all__ = ["Trainer"]


class Trainer:
    def __init__(self, loss: Callable, params: Any, optimizer: Any, *data: Any, device: str = "cpu",
                 batch_argnums: Sequence[int] = (), precision: Optional[str] = None, opt_state: Any = None,
                 data_parallel: bool = False):
        if not callable(loss):
            raise TypeError("Trainer: loss must be callable")
        if not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
            raise TypeError("Trainer: optimizer must have init(params) and update(params, grads, state)")
        nums = tuple(batch_argnums)
        for i in nums:
            if not 0 <= i < len(data):
                raise ValueError(f"Trainer: batch_argnums {i} is out of range for {len(data)} data arguments")
        self._batch_argnums = nums
        self._dp = None
        if data_parallel:
            self._dp = _DataParallel(nums, device)
            params = self._dp.replicate(params)
            if opt_state is not None:
                opt_state = self._dp.replicate(opt_state)
            data = tuple(self._dp.shard(d) if i in nums else d for i, d in enumerate(data))
        self._data = list(data)
        self._optimizer = optimizer
        p_leaves, self._p_def = _tree.flatten(params)
        init_state = optimizer.init(params)
        s_leaves, self._s_def = _tree.flatten(init_state)
        if opt_state is not None:
            s_leaves = _checked_state(opt_state, s_leaves, self._s_def)
        self._p_leaves, self._s_leaves = list(p_leaves), list(s_leaves)
        # On a CUDA device (or MLX) the parameters, optimizer state and data live in its
        # memory from here on: a step copies nothing in or out (the loss stays there until read).
        self._on_device = isinstance(device, str) and (device.startswith("cuda") or device == "mlx")
        if self._on_device:
            self._device = device
            self._p_leaves = [self._put(x) for x in self._p_leaves]
            self._s_leaves = [self._put(x) for x in self._s_leaves]
            self._data = [self._put_tree(d) for d in self._data]
        n_p, n_s = len(p_leaves), len(s_leaves)
        p_def, s_def = self._p_def, self._s_def
        vg = value_and_grad(loss)

        def flat_step(*xs):
            p = _tree.unflatten(p_def, xs[:n_p])
            s = _tree.unflatten(s_def, xs[n_p:n_p + n_s])
            value, grads = vg(p, *xs[n_p + n_s:])
            new_p, new_s = optimizer.update(p, grads, s)
            return tuple(_tree.leaves(new_p)) + tuple(_tree.leaves(new_s)) + (value,)

        self._step = jit(flat_step, device=device, precision=precision)
        if self._dp is not None:
            # Data parallel: this rank's loss and gradient, all-reduced in rank order (weighted
            # by shard sizes, so the result is the full batch's mean), then the same update on
            # every rank.
            def flat_value_grad(*xs):
                value, grads = vg(_tree.unflatten(p_def, xs[:n_p]), *xs[n_p:])
                return (value,) + tuple(_tree.leaves(grads))

            self._value_grad = jit(flat_value_grad, precision=precision)
            self._update = jit(flat_update_fn(optimizer.update, p_def, s_def), precision=precision)
        self._loss_fn = jit(lambda *xs: loss(_tree.unflatten(p_def, xs[:n_p]), *xs[n_p:]), device=device,
                            precision=precision)
        self._last = None
        self.steps = 0

    def step(self, *batches):
        """One optimizer step; `batches` replace the data arguments named by batch_argnums.
        Returns the loss before the step as an array (no readback)."""
        if batches:
            if len(batches) != len(self._batch_argnums):
                raise ValueError(f"Trainer.step: expected {len(self._batch_argnums)} batches, got {len(batches)}")
            for i, b in zip(self._batch_argnums, batches):
                if self._dp is not None:
                    b = self._dp.shard(b)
                self._data[i] = self._put_tree(b) if self._on_device else b
        n_p, n_s = len(self._p_leaves), len(self._s_leaves)
        if self._dp is not None:
            local = self._value_grad(*self._p_leaves, *self._data)
            value, *grads = self._dp.reduce(local)
            outs = tuple(self._update(*self._p_leaves, *grads, *self._s_leaves)) + (value,)
            self._dp.check(self._p_leaves, self.steps)
        else:
            outs = self._step(*self._p_leaves, *self._s_leaves, *self._data)
        self._p_leaves = list(outs[:n_p])
        self._s_leaves = list(outs[n_p:n_p + n_s])
        self._last = outs[-1]
        self.steps += 1
        return self._last

    def _put(self, x):
        return device_put(x, self._device) if isinstance(x, (_core.Array, _core.DeviceArray)) or hasattr(x, "__array__") \
            else x

    def _put_tree(self, tree):
        return _tree.map(self._put, tree)

    @staticmethod
    def _host(leaves):
        return [x.to_host() if isinstance(x, _core.DeviceArray) else x for x in leaves]

    @property
    def params(self):
        """The current parameters (host copies when training on a device)."""
        return _tree.unflatten(self._p_def, self._host(self._p_leaves))

    @property
    def state(self):
        """The optimizer state (host copies when training on a device)."""
        return _tree.unflatten(self._s_def, self._host(self._s_leaves))

    def loss(self) -> float:
        """The loss at the current parameters (one evaluation and readback); data parallel:
        over the whole batch (every rank's shard)."""
        if self._dp is not None:
            return self._dp.reduce((self._loss_fn(*self._p_leaves, *self._data),))[0].item()
        return self._loss_fn(*self._p_leaves, *self._data).item()

    def save(self, file) -> None:
        """Writes {"params", "state", "steps"} with qb.save (atomically); data parallel: rank 0
        writes, and every rank returns once the file is complete."""
        from .io import save
        if self._dp is None or self._dp.rank == 0:
            save(file, {"params": self.params, "state": self.state, "steps": self.steps})
        if self._dp is not None:
            from . import distributed
            distributed.barrier()

    def fit(self, steps: int, progress: Optional[bool] = None, every: int = 100):
        """Runs `steps` steps and returns the losses (before each step) as floats. Progress
        lines (step, loss, steps/s) go to stderr when it is a terminal, or when progress=True."""
        if steps < 0:
            raise ValueError("Trainer.fit: steps must be non-negative")
        show = sys.stderr.isatty() if progress is None else progress
        losses = []
        start = time.perf_counter()
        for k in range(steps):
            losses.append(self.step())
            if show and ((k + 1) % every == 0 or k + 1 == steps):
                rate = (k + 1) / max(time.perf_counter() - start, 1e-9)
                print(f"step {self.steps:>7d}  loss {losses[-1].item():.4e}  {rate:,.0f} steps/s", file=sys.stderr)
        return [l.item() for l in losses]


def flat_update_fn(update, p_def, s_def):
    """update(params, grads, state) over flat leaves: (*params, *grads, *state) -> (*new
    params, *new state), so one compiled program takes and returns plain arrays."""
    n = p_def.num_leaves

    def flat_update(*xs):
        p = _tree.unflatten(p_def, xs[:n])
        g = _tree.unflatten(p_def, xs[n:2 * n])
        s = _tree.unflatten(s_def, xs[2 * n:])
        new_p, new_s = update(p, g, s)
        return tuple(_tree.leaves(new_p)) + tuple(_tree.leaves(new_s))
    return flat_update


class _DataParallel:
    """Sharding, the fixed-order gradient all-reduce and the consistency check of
    Trainer(data_parallel=True) over qb.distributed (MPI)."""

    def __init__(self, batch_argnums, device):
        from . import distributed
        if not distributed.is_initialized():
            raise RuntimeError("Trainer(data_parallel=True): call qb.distributed.initialize() first, in every process")
        if not batch_argnums:
            raise ValueError("Trainer(data_parallel=True) shards the data arguments named by batch_argnums along their "
                             "leading axis; pass batch_argnums=(...)")
        if device != "cpu":
            raise ValueError(f"Trainer(data_parallel=True) runs on CPU processes over MPI; device={device!r} needs NCCL, "
                             f"which is not built yet")
        self.dist = distributed
        self.rank, self.size = distributed.rank(), distributed.world_size()
        self.weight = None
        self.debug = os.environ.get("QUABLA_DISTRIBUTED_CHECK", "") not in ("", "0")

    def replicate(self, tree):
        """Rank 0's values everywhere, so every rank starts from the same parameters."""
        return self.dist.broadcast(tree, 0)

    def shard(self, tree):
        """This rank's contiguous block of the leading axis (sizes differ by at most one);
        its weight in the all-reduce is its share of the rows."""
        import numpy as np
        leaves = _tree.leaves(tree)
        if not leaves:
            return tree
        n = int(np.shape(leaves[0])[0]) if np.ndim(leaves[0]) else 0
        if n < self.size:
            raise ValueError(f"Trainer(data_parallel=True): a batch of {n} rows cannot be shared by {self.size} ranks")
        for x in leaves:
            if np.ndim(x) == 0 or np.shape(x)[0] != n:
                raise ValueError(f"Trainer(data_parallel=True): every leaf of a batch argument needs the same leading "
                                 f"axis, got {list(np.shape(x))} beside {n} rows")
        base, extra = divmod(n, self.size)
        lo = self.rank * base + min(self.rank, extra)
        hi = lo + base + (self.rank < extra)
        self.weight = (hi - lo) / n
        return _tree.map(lambda x: x[lo:hi], tree)

    def reduce(self, values):
        """sum over ranks of weight_r * values_r, in rank order (identical bits everywhere)."""
        w = self.weight if self.weight is not None else 1.0 / self.size
        return list(self.dist.all_reduce([v * w for v in values], "sum"))

    def check(self, p_leaves, step):
        if not self.debug:
            return
        digests = self.dist.all_gather({"d": _core.asarray(
            [int(c, 16) for c in self.dist.params_digest(p_leaves)[:12]])})["d"].tolist()
        if any(d != digests[0] for d in digests):
            bad = [r for r, d in enumerate(digests) if d != digests[0]]
            raise RuntimeError(f"Trainer(data_parallel=True): after step {step} the parameters of rank(s) {bad} differ "
                               f"from rank 0's (QUABLA_DISTRIBUTED_CHECK)")


def _checked_state(state, like_leaves, like_def):
    """The leaves of a given optimizer state, which must match the optimizer's own state for
    these parameters (structure, shapes and dtypes)."""
    leaves, treedef = _tree.flatten(state)
    if treedef != like_def:
        raise ValueError(f"Trainer: opt_state has structure {treedef}, but the optimizer's state for these "
                         f"parameters is {like_def}; pass the state saved from a Trainer with the same "
                         f"optimizer and parameters")
    for i, (a, b) in enumerate(zip(leaves, like_leaves)):
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape != b.shape or dtype != b.dtype:
            raise ValueError(f"Trainer: opt_state leaf {i} is {dtype}{list(shape or [])}, expected "
                             f"{b.dtype.name}{list(b.shape)}")
    return list(leaves)
