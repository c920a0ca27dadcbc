"""qb.distributed: data parallelism over processes on MPI (API.md §10).

Processes are launched the usual ways (``mpirun -np 4 python train.py``, ``srun``); each calls
``qb.distributed.initialize()`` and then works on its share of the data. MPI is reached
through mpi4py (``pip install quabla[mpi]``) over the system's MPI library (Open MPI or MPICH,
e.g. ``apt-get install openmpi-bin``): mpi4py already handles each MPI's ABI and launcher
environment, which a home-made dlopen of libmpi would have to restate.

Collectives take arrays or pytrees of arrays and return host arrays; inside jit they are part
of the compiled program (host_call nodes, run when it runs; sum, mean, broadcast, gather and
scatter are differentiable, as JAX's psum and friends; a program's collective runs on a
communication thread while the program computes what does not need it, such as the rest of a
backward pass). Reductions are
deterministic and bitwise identical on every rank: each rank's values are gathered to all
ranks and combined there in rank order, whatever MPI's own algorithms and timing do. Every
collective waits at most ``timeout`` seconds (``initialize(timeout=...)``, default 300): a
rank that does not arrive makes the others raise :class:`DistributedTimeoutError` naming it,
and a rank whose arrays disagree in structure, shape or dtype makes every rank raise
``ValueError`` naming both ranks' types. An exception that no code catches ends the whole job
(MPI_Abort), so no rank is left waiting.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Optional

import numpy as np

from . import _core
from . import tree as _tree
from .errors import QuablaError

__all__ = ["initialize", "is_initialized", "rank", "world_size", "local_devices", "nccl_info", "shutdown", "all_reduce",
           "broadcast", "all_gather", "reduce_scatter", "barrier", "DistributedTimeoutError"]


class DistributedTimeoutError(QuablaError, TimeoutError):
    """A collective did not complete in time: some rank died, hung or left the job."""


_state: dict = {"comm": None, "timeout": 300.0, "seq": 0, "worker": None, "overlap": True}
_ENV_RANK = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK")
_ENV_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE")
_TAG_ARRIVE = 7301


def _env_int(names) -> Optional[int]:
    for n in names:
        v = os.environ.get(n)
        if v is not None and v.strip().lstrip("-").isdigit():
            return int(v)
    return None


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("qb.distributed needs mpi4py and an MPI library: pip install quabla[mpi] (mpi4py) and "
                          "install MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev)") from e
    return MPI


def initialize(rank: Optional[int] = None, world_size: Optional[int] = None, coordinator: Optional[str] = None,
               backend: str = "mpi", timeout: float = 300.0) -> None:
    """Joins the job the launcher started (mpirun/srun environment). Explicit ``rank`` and
    ``world_size`` are checked against MPI's; ``coordinator`` is accepted for launchers that
    name one but MPI needs none. Calling it again changes only the timeout."""
    if backend != "mpi":
        raise ValueError(f"qb.distributed.initialize: backend must be 'mpi', got {backend!r} (NCCL for CUDA "
                         f"devices is not built yet)")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"qb.distributed.initialize: timeout must be a positive number of seconds, got {timeout!r}")
    _state["timeout"] = float(timeout)
    if _state["comm"] is not None:
        return
    MPI = _mpi()
    comm = MPI.COMM_WORLD
    env_rank, env_size = _env_int(_ENV_RANK), _env_int(_ENV_SIZE)
    for what, given, env, actual in (("rank", rank, env_rank, comm.Get_rank()),
                                     ("world_size", world_size, env_size, comm.Get_size())):
        if given is not None and given != actual:
            raise ValueError(f"qb.distributed.initialize: {what}={given} but MPI says {actual} "
                             f"(the launcher's environment says {env}); drop the argument or launch accordingly")
    del coordinator
    _state["comm"] = comm
    _state["overlap"] = os.environ.get("QUABLA_DISTRIBUTED_OVERLAP", "1") != "0"
    _state["worker"] = _CommThread()
    _abort_on_uncaught(comm)


class _CommThread:
    """Runs this process's MPI exchanges one at a time, in the order they were asked for, so
    every rank issues its collectives in one order (as MPI requires) whichever thread asked.
    One that a compiled program starts (a host call with ``submit``, _callback.py) runs on
    this thread while the program computes on, and the program waits where it first reads
    the result (the CPU executor starts each host call right after its operands are ready
    and runs without the GIL). An eager collective runs on the caller's thread when nothing
    is queued (no thread switch), else after the queued ones."""

    def __init__(self):
        self._jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        self._pending = 0                  # submitted or running, under _count
        self._count = threading.Lock()
        self._exchanging = threading.Lock()  # held while an exchange runs, on either thread
        self._thread = threading.Thread(target=self._serve, name="quabla-collectives", daemon=True)
        self._thread.start()
        atexit.register(self.stop)  # before mpi4py finalizes MPI

    def _serve(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn = job
            if future.set_running_or_notify_cancel():
                with self._exchanging:
                    try:
                        future.set_result(fn())
                    except BaseException as e:  # noqa: BLE001 - re-raised where the result is read
                        future.set_exception(e)
            with self._count:
                self._pending -= 1

    def here(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, fn: Callable) -> Future:
        future: Future = Future()
        with self._count:
            self._pending += 1
            self._jobs.put((future, fn))
        return future

    def run(self, fn: Callable):
        """fn() after the exchanges asked for before it."""
        with self._count:
            idle = self._pending == 0
            if idle:
                self._pending += 1  # later submissions queue behind this one
        if not idle:
            return self.submit(fn).result()
        try:
            with self._exchanging:
                return fn()
        finally:
            with self._count:
                self._pending -= 1

    def stop(self):
        if self._thread.is_alive() and not self.here():
            self._jobs.put(None)
            self._thread.join(timeout=_state["timeout"])
        atexit.unregister(self.stop)


def _serially(fn: Callable):
    """fn() in the process's order of exchanges (_CommThread.run)."""
    worker = _state["worker"]
    if worker is None or worker.here():
        return fn()
    return worker.run(fn)


def _start(job: Callable):
    """A compiled program's collective: started on the communication thread (a future of the
    result, waited for where the program reads it), or run now when overlapping is off
    (QUABLA_DISTRIBUTED_OVERLAP=0) or after shutdown() (the exchange then raises as usual)."""
    worker = _state["worker"]
    if worker is None or not _state["overlap"] or worker.here():
        return job()
    return worker.submit(job)


def _abort_on_uncaught(comm) -> None:
    """An exception nothing catches ends the whole job (MPI_Abort after the traceback), as
    ``python -m mpi4py`` does: otherwise this rank would finalize and exit while the others
    wait in their next collective, or a hung rank would keep the job alive."""
    import sys
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        try:
            sys.stderr.flush()
            comm.Abort(1)
        except Exception:  # noqa: BLE001 - already tearing down
            pass
    if getattr(sys.excepthook, "_quabla_abort", False):
        return
    hook._quabla_abort = True
    sys.excepthook = hook


def is_initialized() -> bool:
    return _state["comm"] is not None


def _comm():
    if _state["comm"] is None:
        raise RuntimeError("qb.distributed: call qb.distributed.initialize() first (in every process of the job)")
    return _state["comm"]


def rank() -> int:
    return _comm().Get_rank()


def world_size() -> int:
    return _comm().Get_size()


def local_devices():
    """The devices this process can use: "cpu", and the CUDA devices of its node."""
    from . import devices
    return devices()


def nccl_info() -> dict:
    """{"version": "2.x.y"} when NCCL loads (from the nvidia-nccl wheel or the system), else
    {"version": "", "reason": why}. NCCL collectives on CUDA device arrays are not built yet."""
    from . import _cuda
    _cuda._ensure_library_dirs()
    return dict(_core.nccl_info())


def shutdown() -> None:
    """Leaves the job: later collectives raise until initialize() is called again."""
    worker, _state["worker"] = _state["worker"], None
    if worker is not None:
        worker.stop()  # after the exchanges already submitted
    _state["comm"] = None


def _wait(requests, what: str, arrivals=None) -> None:
    """Waits for MPI requests with the job's timeout; names the ranks that did not arrive."""
    MPI = _mpi()
    deadline = time.monotonic() + _state["timeout"]
    pause = 1e-5
    while not MPI.Request.Testall(requests):
        if time.monotonic() > deadline:
            missing = []
            if arrivals is not None:
                for r, req in arrivals.items():
                    if not req.Test():
                        missing.append(r)
            who = f"rank(s) {missing}" if missing else "some rank"
            raise DistributedTimeoutError(
                f"qb.distributed.{what}: {who} did not arrive within {_state['timeout']:g} s (rank {rank()} of "
                f"{world_size()} waited); a rank died, hung or is running other collectives; raise the limit with "
                f"qb.distributed.initialize(timeout=...)")
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)


def _arrive(what: str):
    """Posts this rank's arrival at the next collective to every other rank; returns the
    receives of theirs (rank -> request), so a timeout can name the ranks that never came."""
    comm = _comm()
    _state["seq"] += 1
    tag = _TAG_ARRIVE + (_state["seq"] % 1000)
    me, n = comm.Get_rank(), comm.Get_size()
    token = np.array([_state["seq"]], np.int64)
    sends = [comm.Isend(token, dest=r, tag=tag) for r in range(n) if r != me]
    bufs = {r: np.zeros(1, np.int64) for r in range(n) if r != me}
    recvs = {r: comm.Irecv(bufs[r], source=r, tag=tag) for r in bufs}
    return sends, recvs


def _allgather_bytes(payload: bytes, what: str) -> list:
    """Every rank's payload (any length), in rank order (exchanged on the communication thread)."""
    _comm()  # raises before initialize()
    return _serially(lambda: _allgather_now(payload, what))


def _allgather_now(payload, what: str) -> list:
    comm = _comm()
    sends, recvs = _arrive(what)
    _wait(list(recvs.values()), what, recvs)
    n = comm.Get_size()
    data = np.frombuffer(payload, np.uint8) if len(payload) else np.zeros(0, np.uint8)
    size = np.array([data.size], np.int64)
    sizes = np.zeros(n, np.int64)
    _wait([comm.Iallgather(size, sizes)], what)
    out = np.empty(int(sizes.sum()), np.uint8)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    _wait([comm.Iallgatherv(data, [out, sizes, displs, _mpi().BYTE])], what)
    _wait(sends, what)
    return [out[displs[r]:displs[r] + sizes[r]] for r in range(n)]  # views: no copy per rank


def _leaves(tree, what):
    leaves, treedef = _tree.flatten(tree)
    arrays = []
    for x in leaves:
        if isinstance(x, _core.DeviceArray):
            x = x.to_host()
        a = np.asarray(x)
        if a.dtype == object:
            raise TypeError(f"qb.distributed.{what}: leaves must be arrays or numbers, got {type(x).__name__}")
        arrays.append(np.asarray(a, order="C"))  # 0-d stays 0-d (ascontiguousarray makes it 1-d)
    return arrays, treedef


def _signature(arrays, treedef) -> str:
    return repr(treedef) + "|" + ";".join(f"{a.dtype.str}{list(a.shape)}" for a in arrays)


# Which collective of a compiled program the communication thread is running ("all_reduce of
# leaf 3"): exchanged with the data, so ranks whose programs started their collectives in
# different orders get an error instead of each other's gradients.
_running = threading.local()


def _aligned(n: int) -> int:
    return (n + 15) // 16 * 16


def _exchange(tree, what: str):
    """(every rank's leaves as NumPy arrays, in rank order; treedef), after checking that all
    ranks passed the same structure, shapes and dtypes."""
    arrays, treedef = _leaves(tree, what)
    sig = _signature(arrays, treedef)
    tag = getattr(_running, "tag", "an eager collective")
    # One buffer per rank: the header's length, the header (which collective, the types),
    # then the leaves' bytes; what comes back is read in place.
    # Each part starts at a multiple of 16 bytes, so the leaves read back are aligned arrays.
    header = tag.encode() + b"\0" + sig.encode()
    offsets, end = [], _aligned(8 + len(header))
    for a in arrays:
        offsets.append(end)
        end = _aligned(end + a.nbytes)
    payload = np.zeros(end, np.uint8)
    payload[:8] = np.frombuffer(np.int64(len(header)).tobytes(), np.uint8)
    payload[8:8 + len(header)] = np.frombuffer(header, np.uint8)
    for a, off in zip(arrays, offsets):
        payload[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
    got = _allgather_bytes(payload, what)
    per_rank = []
    for r, blob in enumerate(got):
        length = int(np.frombuffer(blob[:8].tobytes(), np.int64)[0])
        other_tag, other = bytes(blob[8:8 + length]).decode().split("\0", 1)
        if other_tag != tag:
            raise ValueError(f"qb.distributed.{what}: rank {r} ran {other_tag} while rank {rank()} ran {tag}; "
                             f"every rank must run the same program (the same jitted function on arrays of the same "
                             f"shapes), so that their collectives pair up")
        if other != sig:
            raise ValueError(f"qb.distributed.{what}: rank {r} passed {other!r} but rank {rank()} passed "
                             f"{sig!r}; every rank must pass arrays of the same structure, shapes and dtypes")
        per_rank.append([blob[off:off + a.nbytes].view(a.dtype).reshape(a.shape) for a, off in zip(arrays, offsets)])
    return per_rank, treedef


def _to_qb(a):
    return _core.asarray(np.array(a))


# Each collective on NumPy arrays: the eager functions below and, inside jit, the host-call
# functions the compiled program runs (qb.pure_callback's mechanism, _callback.py).
def _reduce_np(tree, op: str, what: str = "all_reduce"):
    per_rank, treedef = _exchange(tree, what)
    out = []
    for k in range(len(per_rank[0])):
        acc = per_rank[0][k].copy() if len(per_rank) == 1 else None
        for r in range(1, len(per_rank)):  # in rank order; the first step writes a new array
            a = per_rank[0][k] if acc is None else acc
            acc = np.maximum(a, per_rank[r][k]) if op == "max" else a + per_rank[r][k]
        if op == "mean":
            acc = (acc / len(per_rank)).astype(acc.dtype, copy=False) if acc.dtype.kind == "f" else acc / len(per_rank)
        out.append(acc)
    return out, treedef


def _check_op(op, what):
    if op not in ("sum", "mean", "max"):
        raise ValueError(f"qb.distributed.{what}: op must be 'sum', 'mean' or 'max', got {op!r}")


def _check_root(root):
    n = world_size()
    if not (isinstance(root, int) and not isinstance(root, bool)) or not 0 <= root < n:
        raise ValueError(f"qb.distributed.broadcast: root must be a rank in [0, {n}), got {root!r}")


def _block_len(shape, what):
    n = world_size()
    if len(shape) == 0 or shape[0] % n:
        raise ValueError(f"qb.distributed.{what}: the leading axis of every leaf must divide by the {n} ranks, got "
                         f"shape {list(shape)}")
    return shape[0] // n


def _traced(tree) -> bool:
    """Inside a trace a collective is part of the program (run with it, on every rank at the
    same point), also on concrete arrays."""
    from ._callback import staged
    return staged(_tree.flatten(tree)[0])


def _in_jit(name, tree, per_leaf):
    """The collective inside a trace: per leaf, one host_call node running
    per_leaf(leaf) = (function, its transpose or None, result shape, result dtype, vmap
    method) on the host when the program runs. A linear collective (sum, mean, broadcast,
    gather, scatter) is its own JVP and transposes to its transpose's call, so jvp, grad and
    vmap of a jitted step work through it; max has no derivative."""
    from . import _callback
    leaves, treedef = _tree.flatten(tree)
    outs = []
    for k, x in enumerate(leaves):
        x = x if isinstance(x, _core.Array) else _core.asarray(x)
        fn, transpose, shape, dtype, vmap_method = per_leaf(x)
        fid = _callback.register(_tagged(fn, f"{name} of leaf {k}"), f"qb.distributed.{name}", submit=_start)
        tid = -1
        if transpose is not None:
            tid = _callback.register(_tagged(transpose, f"the transpose of {name} of leaf {k}"),
                                     f"the transpose of qb.distributed.{name}", submit=_start)
        outs.append(_core.host_call(fid, [x], list(shape), dtype, tid, vmap_method))
    return _tree.unflatten(treedef, outs)


def _tagged(fn, tag):
    def run(*arrays):
        _running.tag = tag
        try:
            return fn(*arrays)
        finally:
            del _running.tag
    return run


_BROADCAST_ALL, _SEQUENTIAL = 2, 1  # host_call vmap methods (ops.def)


def all_reduce(tree: Any, op: str = "sum") -> Any:
    """The sum, mean or max over ranks of each leaf, identical on every rank (combined in
    rank order after an all-gather). Inside jit it is part of the compiled program and runs
    when the program runs; sum and mean are differentiable (their own transposes)."""
    _check_op(op, "all_reduce")
    if _traced(tree):
        def leaf(x):
            floating = x.dtype in (_core.float32, _core.float64)
            dtype = x.dtype if floating or op != "mean" else _core.float64
            fn = lambda a: _reduce_np(a, op)[0][0]
            return fn, (fn if op != "max" and floating else None), x.shape, dtype, _BROADCAST_ALL
        return _in_jit("all_reduce", tree, leaf)
    out, treedef = _reduce_np(tree, op)
    return _tree.unflatten(treedef, [_to_qb(a) for a in out])


def broadcast(tree: Any, root: int = 0) -> Any:
    """Rank root's values on every rank (the structure, shapes and dtypes must agree)."""
    _check_root(root)
    if _traced(tree):
        def to_root(c):  # the transpose: every rank's cotangent summed on root, zeros elsewhere
            total = _reduce_np(c, "sum", "broadcast")[0][0]
            return total if rank() == root else np.zeros_like(total)
        return _in_jit("broadcast", tree, lambda x: (lambda a: _exchange(a, "broadcast")[0][root][0], to_root, x.shape, x.dtype,
                                        _BROADCAST_ALL))
    per_rank, treedef = _exchange(tree, "broadcast")
    return _tree.unflatten(treedef, [_to_qb(a) for a in per_rank[root]])


def all_gather(tree: Any) -> Any:
    """Each leaf stacked over ranks along a new leading axis (rank order)."""
    if _traced(tree):
        def gather(a):
            return np.stack([leaves[0] for leaves in _exchange(a, "all_gather")[0]])

        def own_share(c):  # the transpose: the sum over ranks of their cotangents' row for this rank
            return _reduce_np(c, "sum", "all_gather")[0][0][rank()]
        return _in_jit("all_gather", tree, lambda x: (gather, own_share, (world_size(),) + tuple(x.shape), x.dtype, _SEQUENTIAL))
    per_rank, treedef = _exchange(tree, "all_gather")
    return _tree.unflatten(treedef, [_to_qb(np.stack([leaves[k] for leaves in per_rank]))
                                     for k in range(len(per_rank[0]))])


def reduce_scatter(tree: Any, op: str = "sum") -> Any:
    """all_reduce, then this rank's block of the leading axis (which must divide by the
    number of ranks)."""
    _check_op(op, "reduce_scatter")
    n = world_size()
    if _traced(tree):
        def leaf(x):
            m = _block_len(tuple(x.shape), "reduce_scatter")
            floating = x.dtype in (_core.float32, _core.float64)
            dtype = x.dtype if floating or op != "mean" else _core.float64

            def scatter(a):
                me = rank()
                return _reduce_np(a, op, "reduce_scatter")[0][0][me * m:(me + 1) * m]

            def gather_blocks(c):  # the transpose: every rank's block cotangent, in rank order
                blocks = np.concatenate([leaves[0] for leaves in _exchange(c, "reduce_scatter")[0]])
                return (blocks / n).astype(c.dtype) if op == "mean" else blocks
            transpose = gather_blocks if op != "max" and floating else None
            return scatter, transpose, (m,) + tuple(x.shape[1:]), dtype, _SEQUENTIAL
        return _in_jit("reduce_scatter", tree, leaf)
    reduced, treedef = _reduce_np(tree, op, "reduce_scatter")
    me = rank()
    out = []
    for a in reduced:
        m = _block_len(a.shape, "reduce_scatter")
        out.append(_to_qb(a[me * m:(me + 1) * m]))
    return _tree.unflatten(treedef, out)


def barrier() -> None:
    """Returns once every rank has called it (or raises DistributedTimeoutError)."""
    _allgather_bytes(b"", "barrier")


def params_digest(tree: Any) -> str:
    """A hash of a pytree's bytes (the data-parallel Trainer's consistency check)."""
    import hashlib
    h = hashlib.sha256()
    arrays, treedef = _leaves(tree, "params_digest")
    h.update(_signature(arrays, treedef).encode())
    for a in arrays:
        h.update(a.tobytes())
    return h.hexdigest()
