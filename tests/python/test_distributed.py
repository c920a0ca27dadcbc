"""qb.distributed over MPI: 2-process jobs launched with mpirun (Open MPI from Debian,
installed by scripts/setup.sh --tests) running distributed_worker.py, checked against NumPy
and against single-process training. Skips without mpirun and mpi4py, unless
QUABLA_REQUIRE_MPI=1 (CI), which makes it fail instead.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import quabla as qb
from examples_helper import example

HERE = Path(__file__).resolve().parent
WORKER = HERE / "distributed_worker.py"


def _mpi_ready():
    if shutil.which("mpirun") is None:
        return "mpirun not found (apt-get install openmpi-bin)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py not installed (pip install quabla[mpi])"
    return None


WHY = _mpi_ready()
if WHY and os.environ.get("QUABLA_REQUIRE_MPI") == "1":
    raise RuntimeError(f"QUABLA_REQUIRE_MPI=1 but MPI is not usable here: {WHY}")
if WHY:
    pytest.skip(WHY, allow_module_level=True)


def _env(**extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_job(mode, tmp_path, n=2, timeout=60, limit=120, launch=()):
    start = time.monotonic()
    p = subprocess.run([*launch, "mpirun", "-np", str(n), sys.executable, str(WORKER), mode, str(tmp_path)]
                       if not launch else [*launch, sys.executable, str(WORKER), mode, str(tmp_path)],
                       capture_output=True, text=True, timeout=limit, env=_env(QB_TEST_TIMEOUT=timeout))
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


def check_collectives(tmp_path):
    n = 2
    a = [np.arange(6.0).reshape(2, 3) * (r + 1) for r in range(n)]
    b = [np.array([r, -r, 7], np.int32) for r in range(n)]
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(n)]
    for r, got in enumerate(ranks):
        np.testing.assert_array_equal(got["sa"], a[0] + a[1])
        np.testing.assert_array_equal(got["sb"], b[0] + b[1])
        assert got["sb"].dtype == np.int32
        np.testing.assert_array_equal(got["ma"], (a[0] + a[1]) / 2)
        np.testing.assert_array_equal(got["xa"], np.maximum(a[0], a[1]))
        np.testing.assert_array_equal(got["xb"], np.maximum(b[0], b[1]))
        np.testing.assert_array_equal(got["bv"], [10.0 + n - 1, 20.0 + n - 1])
        np.testing.assert_array_equal(got["g"], [[0.0, 0.0], [1.0, 2.0]])
        full = sum(np.arange(2.0 * n * 3).reshape(2 * n, 3) + q for q in range(n))
        np.testing.assert_array_equal(got["rs"], full[2 * r:2 * r + 2])
        msg = (tmp_path / f"mismatch{r}.txt").read_text()
        assert "rank" in msg and "f8[3]" in msg and "f8[4]" in msg
    return ranks


def test_collectives_against_numpy(tmp_path):
    rc, out, _ = run_job("collectives", tmp_path)
    assert rc == 0, out
    check_collectives(tmp_path)


def test_collectives_inside_jit_their_derivatives_and_vmap(tmp_path):
    rc, out, _ = run_job("jit_collectives", tmp_path)
    assert rc == 0, out
    n = 2
    a = [np.arange(6.0).reshape(2, 3) * (r + 1) for r in range(n)]
    w = [np.array([1.0 + r, 2.0 - r, 0.5]) for r in range(n)]
    p = np.array([0.3, -0.2, 1.1])
    y = sum(p * wr for wr in w)
    for r in range(n):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_array_equal(got["s"], a[0] + a[1])
        np.testing.assert_array_equal(got["m"], (a[0] + a[1]) / 2)
        np.testing.assert_array_equal(got["mx"], np.maximum(a[0], a[1]))
        np.testing.assert_array_equal(got["b"], a[n - 1])
        np.testing.assert_array_equal(got["g"], np.stack([a[0][0], a[1][0]]))
        np.testing.assert_array_equal(got["rs"], (a[0] + a[1])[r:r + 1])
        np.testing.assert_allclose(got["gp"], n * 2 * y * w[r], rtol=1e-14)
        np.testing.assert_allclose(got["tangent"], w[0] + w[1], rtol=1e-14)
        np.testing.assert_array_equal(got["vm"], np.arange(8.0).reshape(4, 2) * 3)
        np.testing.assert_allclose(got["dp"], got["full"], rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(got["const_calls"], [[3.0, 3.0], [4.0, 4.0]])
        assert int(got["const_runs"]) == 2  # at each call, not once while tracing
        msg = (tmp_path / f"programs{r}.txt").read_text()
        assert "all_reduce of leaf 0" in msg and "all_reduce of leaf 1" in msg and "the same program" in msg


def test_collectives_in_a_jitted_step_overlap_with_its_backward_pass(tmp_path):
    """The step's collectives start while its backward pass still runs (each right after its
    gradient is computed) and give the same bits as when each runs where
    it stands (QUABLA_DISTRIBUTED_OVERLAP=0), equal to one process on the whole batch."""
    runs = {}
    for flag in ("1", "0"):
        out = tmp_path / flag
        out.mkdir()
        p = subprocess.run(["mpirun", "-np", "2", sys.executable, str(WORKER), "overlap", str(out)], capture_output=True,
                           text=True, timeout=120, env=_env(QB_TEST_TIMEOUT=60, QUABLA_DISTRIBUTED_OVERLAP=flag))
        assert p.returncode == 0, p.stdout + p.stderr
        runs[flag] = [np.load(out / f"rank{r}.npz")["params"] for r in range(2)]
        np.testing.assert_array_equal(runs[flag][0], runs[flag][1])
    np.testing.assert_array_equal(runs["1"][0], runs["0"][0])
    plan = (tmp_path / "1" / "plan.txt").read_text().splitlines()
    calls = [i for i, line in enumerate(plan) if "host_call" in line]
    matmuls = [i for i, line in enumerate(plan) if "matmul" in line]
    # 4 forward and 7 backward products; the output layer's bias gradient is ready before the
    # first backward product, and all but the input layer's weights before the last one.
    assert len(calls) == 8 and len(matmuls) == 11, "\n".join(plan)
    assert calls[0] < matmuls[4] and sum(c < matmuls[-1] for c in calls) == 7, "\n".join(plan)
    # One process, the whole batch, the same five steps.
    from distributed_worker import MLP_POINTS, mlp_loss, mlp_params
    p = mlp_params()
    for _ in range(5):
        p = qb.tree.map(lambda a, b: a - 0.1 * b, p, qb.grad(mlp_loss)(p, qb.array(MLP_POINTS)))
    flat = np.concatenate([np.asarray(v).ravel() for v in qb.tree.leaves(p)])
    np.testing.assert_allclose(runs["1"][0], flat, rtol=1e-12, atol=1e-14)


def check_training(tmp_path):
    r0, r1 = (np.load(tmp_path / f"rank{r}.npz") for r in range(2))
    np.testing.assert_array_equal(r0["params"], r1["params"])  # identical on every rank
    np.testing.assert_array_equal(r0["losses"], r1["losses"])
    pinn_poisson = example("pinn_poisson")
    params = pinn_poisson.init_params(qb.random.key(2026))  # rank 0's, which the job replicated
    x = qb.array([(i + 1) / 33 for i in range(32)])
    t = qb.Trainer(pinn_poisson.loss, params, qb.optim.Adam(learning_rate=0.01), x)
    losses = t.fit(150)
    flat = np.concatenate([np.asarray(v).ravel() for v in qb.tree.leaves(t.params)])
    np.testing.assert_allclose(r0["losses"], losses, rtol=1e-12)
    np.testing.assert_allclose(r0["params"], flat, rtol=1e-12, atol=1e-14)
    assert float(r0["final"]) == pytest.approx(t.loss(), rel=1e-12)
    saved = qb.load(tmp_path / "checkpoint.qb")  # rank 0's checkpoint, complete
    assert saved["steps"] == 150
    np.testing.assert_array_equal(np.concatenate([np.asarray(v).ravel() for v in qb.tree.leaves(saved["params"])]),
                                  r0["params"])


def test_data_parallel_training_equals_one_process(tmp_path):
    rc, out, _ = run_job("train", tmp_path)
    assert rc == 0, out
    check_training(tmp_path)


AGENT = """#!/bin/sh
# Open MPI's remote launcher ("ssh") into the network namespace of a host address.
host="$1"; shift
case "$host" in
  {a}) ns={na} ;;
  {b}) ns={nb} ;;
  *) echo "unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" sh -c "$*"
"""


@pytest.fixture
def two_hosts(tmp_path):
    """Two network namespaces joined by a veth pair (10.77.<k>.1 and .2): two hosts for MPI
    over TCP; an agent script stands in for ssh."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    tag = f"qb{os.getpid() % 100000}"
    na, nb, k = f"{tag}a", f"{tag}b", os.getpid() % 200 + 20
    a, b = f"10.77.{k}.1", f"10.77.{k}.2"
    cmds = [["ip", "netns", "add", na], ["ip", "netns", "add", nb],
            ["ip", "link", "add", f"{tag}x", "type", "veth", "peer", "name", f"{tag}y"],
            ["ip", "link", "set", f"{tag}x", "netns", na], ["ip", "link", "set", f"{tag}y", "netns", nb],
            ["ip", "netns", "exec", na, "ip", "addr", "add", f"{a}/24", "dev", f"{tag}x"],
            ["ip", "netns", "exec", nb, "ip", "addr", "add", f"{b}/24", "dev", f"{tag}y"]]
    for ns, dev in ((na, f"{tag}x"), (nb, f"{tag}y")):
        cmds += [["ip", "netns", "exec", ns, "ip", "link", "set", dev, "up"],
                 ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]]
    try:
        for c in cmds:
            subprocess.run(c, check=True, capture_output=True)
        agent = tmp_path / "agent.sh"
        agent.write_text(AGENT.format(a=a, b=b, na=na, nb=nb))
        agent.chmod(0o755)
        subnet = f"10.77.{k}.0/24"
        yield ["ip", "netns", "exec", na, "mpirun", "-np", "2", "-H", f"{a},{b}", "--mca", "plm_rsh_agent", str(agent),
               "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", subnet, "--mca", "oob_tcp_if_include",
               subnet, "-x", "PATH", "-x", "OMPI_ALLOW_RUN_AS_ROOT", "-x", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
               "-x", "QB_TEST_TIMEOUT"]
    finally:
        for ns in (na, nb):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_across_two_hosts_over_tcp(tmp_path, two_hosts):
    out_c, out_t = tmp_path / "c", tmp_path / "t"
    out_c.mkdir()
    out_t.mkdir()
    rc, out, _ = run_job("collectives", out_c, launch=two_hosts)
    assert rc == 0, out
    ranks = check_collectives(out_c)
    assert ranks[0]["netns"] != ranks[1]["netns"]  # the ranks ran in different network namespaces
    rc, out, _ = run_job("train", out_t, launch=two_hosts)
    assert rc == 0, out
    check_training(out_t)


def test_a_killed_rank_ends_the_job(tmp_path):
    rc, out, elapsed = run_job("die", tmp_path, timeout=5)
    assert rc != 0 and elapsed < 30, (rc, elapsed, out)
    assert "rank 1" in out


def test_a_hung_rank_is_named_within_the_timeout(tmp_path):
    rc, out, elapsed = run_job("hang", tmp_path, timeout=3)
    assert rc != 0 and elapsed < 30, (rc, elapsed, out)
    msg = (tmp_path / "timeout0.txt").read_text()
    assert "rank(s) [1] did not arrive within 3 s" in msg
    assert "DistributedTimeoutError" in out


def _single(code):
    """Runs code in a fresh one-process MPI job (mpi4py's singleton init)."""
    p = subprocess.run([sys.executable, "-c", "import quabla as qb\n" + code], capture_output=True, text=True,
                       timeout=60, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_one_process_job_and_errors():
    out = _single("""
import numpy as np
d = qb.distributed
try:
    d.rank()
except RuntimeError as e:
    print("before:", e)
try:
    d.initialize(backend="nccl")
except ValueError as e:
    print("backend:", e)
try:
    d.initialize(world_size=4)
except ValueError as e:
    print("size:", e)
d.initialize(timeout=10)
print("ranks", d.rank(), d.world_size(), d.local_devices()[0])
print("sum", d.all_reduce({"x": qb.array([1.0, 2.0])})["x"].tolist())
try:
    d.all_reduce(qb.ones(2), op="min")
except ValueError as e:
    print("op:", e)
try:
    qb.Trainer(lambda p, x: qb.sum(p * x), qb.ones(2), qb.optim.Adam(), qb.ones((4, 2)), data_parallel=True)
except ValueError as e:
    print("dp:", e)
""")
    assert "before: qb.distributed: call qb.distributed.initialize() first" in out
    assert "backend: " in out and "'nccl'" in out
    assert "size: qb.distributed.initialize: world_size=4 but MPI says 1" in out
    assert "ranks 0 1 cpu" in out and "sum [1.0, 2.0]" in out
    assert "op: " in out and "'min'" in out
    assert "dp: Trainer(data_parallel=True) shards the data arguments named by batch_argnums" in out
