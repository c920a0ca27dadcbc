"""One rank of the MPI jobs of test_distributed.py: ``mpirun -np N python distributed_worker.py
MODE OUTDIR``. Each rank writes what it computed to OUTDIR/rank<r>.npz for the test to check.
"""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import quabla as qb
from examples_helper import example


def collectives(out):
    d = qb.distributed
    r, n = d.rank(), d.world_size()
    x = {"a": qb.array(np.arange(6.0).reshape(2, 3) * (r + 1)), "b": qb.array(np.array([r, -r, 7], np.int32))}
    s = d.all_reduce(x, "sum")
    m = d.all_reduce(x, "mean")
    mx = d.all_reduce(x, "max")
    b = d.broadcast({"v": qb.array([10.0 + r, 20.0 + r])}, root=n - 1)
    g = d.all_gather(qb.array([float(r), 2.0 * r]))
    rs = d.reduce_scatter(qb.array(np.arange(2.0 * n * 3).reshape(2 * n, 3) + r))
    d.barrier()
    np.savez(os.path.join(out, f"rank{r}.npz"), netns=os.stat("/proc/self/ns/net").st_ino, sa=np.asarray(s["a"]), sb=np.asarray(s["b"]), ma=np.asarray(m["a"]),
             xa=np.asarray(mx["a"]), xb=np.asarray(mx["b"]), bv=np.asarray(b["v"]), g=np.asarray(g),
             rs=np.asarray(rs), n=n)
    try:
        d.all_reduce(qb.ones(3 + r))  # shapes differ across ranks
    except ValueError as e:
        open(os.path.join(out, f"mismatch{r}.txt"), "w").write(str(e))


def jit_collectives(out):
    """The collectives inside jit (host_call nodes of the compiled program), their
    derivatives and vmap, and a data-parallel gradient whose all-reduce is in the step."""
    d = qb.distributed
    r, n = d.rank(), d.world_size()
    x = qb.array(np.arange(6.0).reshape(2, 3) * (r + 1))
    step = qb.jit(lambda x: (d.all_reduce(x * 1.0, "sum"), d.all_reduce(x, "mean"), d.all_reduce(x, "max"),
                             d.broadcast(x + 0.0, root=n - 1), d.all_gather(x[0]), d.reduce_scatter(x)))
    s, m, mx, b, g, rs = step(x)
    # A gradient through a sum over ranks: y = sum_r p * w_r on every rank, L_r = sum(y^2);
    # rank r's gradient of the job's total loss is (sum over ranks of 2 y) * w_r.
    w = qb.array([1.0 + r, 2.0 - r, 0.5])
    gp = qb.jit(qb.grad(lambda p: qb.sum(d.all_reduce(p * w) ** 2)))(qb.array([0.3, -0.2, 1.1]))
    tangent = qb.jvp(qb.jit(lambda p: d.all_reduce(p * w)), (qb.array([0.3, -0.2, 1.1]),), (qb.ones(3),))[1]
    vm = qb.jit(qb.vmap(lambda v: d.all_reduce(v * (r + 1))))(qb.array(np.arange(8.0).reshape(4, 2)))
    # A collective of a concrete array inside jit runs with the program, at each call.
    const = qb.jit(lambda v: v + d.all_reduce(qb.ones(2) * (r + 1.0)))
    before = d._state["seq"]  # one more per collective run
    const_calls = np.stack([np.asarray(const(qb.zeros(2))), np.asarray(const(qb.ones(2)))])
    const_runs = d._state["seq"] - before
    # Data parallelism with the all-reduce inside the jitted step: each rank's half of a
    # batch; the summed gradients equal the one-process gradient of the whole batch.
    pts = np.linspace(-1.0, 1.0, 16)
    mine = qb.array(pts[r * 8:(r + 1) * 8])

    def loss(p, xs):
        return qb.sum((p[0] * qb.sin(p[1] * xs) - xs ** 2) ** 2) / 16.0
    dp = qb.jit(lambda p, xs: d.all_reduce(qb.grad(loss)(p, xs), "sum"))(qb.array([0.7, 1.3]), mine)
    # Ranks running different programs: their collectives do not pair up, and both raise.
    mismatch = (lambda v: d.all_reduce(v)) if r == 0 else (lambda v: d.all_reduce([v * 2.0, v])[1])
    try:
        qb.jit(mismatch)(qb.ones(3))
    except ValueError as e:
        open(os.path.join(out, f"programs{r}.txt"), "w").write(str(e))
    np.savez(os.path.join(out, f"rank{r}.npz"), s=np.asarray(s), m=np.asarray(m), mx=np.asarray(mx), b=np.asarray(b),
             g=np.asarray(g), rs=np.asarray(rs), gp=np.asarray(gp), tangent=np.asarray(tangent), vm=np.asarray(vm),
             dp=np.asarray(dp), const_calls=const_calls, const_runs=const_runs, full=np.asarray(qb.grad(loss)(qb.array([0.7, 1.3]), qb.array(pts))), n=n)


MLP_SIZES = [(1, 32), (32, 32), (32, 32), (32, 1)]


def mlp_params():
    """The overlap job's starting parameters (also the single-process reference's)."""
    rng = np.random.default_rng(7)
    return [{"w": qb.array(rng.normal(size=s) / np.sqrt(s[0])), "b": qb.array(np.zeros(s[1]))} for s in MLP_SIZES]


def mlp_loss(p, x):
    """A tanh MLP's squared error against sin(3x), over the 64 points of the whole batch."""
    h = x
    for k, layer in enumerate(p):
        h = h @ layer["w"] + layer["b"]
        if k < len(p) - 1:
            h = qb.tanh(h)
    return qb.sum((h - qb.sin(3.0 * x)) ** 2) / 64.0


MLP_POINTS = np.linspace(-1.0, 1.0, 64).reshape(64, 1)


def overlap(out):
    """A jitted data-parallel step holding its all-reduce (one collective per gradient leaf),
    five steps of it; the plan shows where the collectives start."""
    d = qb.distributed
    r = d.rank()
    params = mlp_params()
    mine = qb.array(MLP_POINTS[r * 32:(r + 1) * 32])

    def step(p, x):
        g = d.all_reduce(qb.grad(mlp_loss)(p, x), "sum")
        return qb.tree.map(lambda a, b: a - 0.1 * b, p, g)
    f = qb.jit(step)
    for _ in range(5):
        params = f(params, mine)
    flat = np.concatenate([np.asarray(v).ravel() for v in qb.tree.leaves(params)])
    np.savez(os.path.join(out, f"rank{r}.npz"), params=flat)
    if r == 0:
        open(os.path.join(out, "plan.txt"), "w").write(f.lower(params, mine).compile().plan_text())


def train(out):
    pinn_poisson = example("pinn_poisson")
    d = qb.distributed
    params = pinn_poisson.init_params(qb.random.key(2026 + d.rank()))  # different per rank: replicated from rank 0
    x = qb.array([(i + 1) / 33 for i in range(32)])
    t = qb.Trainer(pinn_poisson.loss, params, qb.optim.Adam(learning_rate=0.01), x, batch_argnums=(0,),
                   data_parallel=True)
    losses = t.fit(150)
    final = t.loss()
    t.save(os.path.join(out, "checkpoint.qb"))
    flat = np.concatenate([np.asarray(v).ravel() for v in qb.tree.leaves(t.params)])
    np.savez(os.path.join(out, f"rank{d.rank()}.npz"), losses=np.array(losses), params=flat, final=final)


def die(out):
    d = qb.distributed
    d.all_reduce(qb.ones(3))
    if d.rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    for _ in range(1000):
        d.all_reduce(qb.ones(3))


def hang(out):
    d = qb.distributed
    d.barrier()
    if d.rank() == 1:
        time.sleep(120)
    try:
        d.all_reduce(qb.ones(3))
    except d.DistributedTimeoutError as e:
        open(os.path.join(out, f"timeout{d.rank()}.txt"), "w").write(str(e))
        raise  # uncaught: the job ends (MPI_Abort), the sleeping rank with it


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    qb.distributed.initialize(timeout=float(os.environ.get("QB_TEST_TIMEOUT", "60")))
    {"collectives": collectives, "jit_collectives": jit_collectives, "train": train, "overlap": overlap, "die": die, "hang": hang}[mode](out)
    qb.distributed.shutdown()
