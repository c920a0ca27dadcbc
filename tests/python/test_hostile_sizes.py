"""Hostile sizes never crash: every constructor, reshape, broadcast, index, loop bound and
scan length, conversion and checkpoint given absurd sizes raises a Python exception naming
the function. Each case runs in a fresh interpreter, so a crash fails the test instead of
killing the test runner."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CASES = [
    # (expression, exception type, text the message contains)
    ("qb.zeros((2**61,))", "ValueError", "zeros: shape"),
    ("qb.zeros((2**64,))", "ValueError", "zeros: shape entries"),
    ("qb.zeros(-5)", "ValueError", "zeros: every dimension must be positive"),
    ("qb.ones((2**62 + 1, 4))", "ValueError", "ones: shape"),
    ("qb.ones((3, 2**63))", "ValueError", "ones: shape entries"),
    ("qb.full((2**40, 2**30), 1.0)", "ValueError", "full: shape"),
    ("qb.eye(2**32)", "ValueError", "eye: shape"),
    ("qb.eye(2**70)", "ValueError", "eye: n and m"),
    ("qb.linspace(0, 1, 2**61)", "ValueError", "linspace: shape"),
    ("qb.linspace(0, 1, 2**64)", "ValueError", "linspace: num"),
    ("qb.arange(0.0, float('inf'))", "ValueError", "arange: start, stop and step must be finite"),
    ("qb.arange(0.0, 1e300)", "ValueError", "arange: the range"),
    ("qb.arange(float('nan'))", "ValueError", "arange"),
    ("qb.random.normal(qb.random.key(0), (2**61,))", "ValueError", "normal: shape"),
    ("qb.random.uniform(qb.random.key(0), (2**62, 8))", "ValueError", "uniform: shape"),
    ("qb.reshape(qb.ones(4), (2**62 + 1, 4))", "ValueError", "reshape"),
    ("qb.reshape(qb.ones(4), (2**62, -1))", "ValueError", "reshape"),
    ("qb.ones(4).reshape((1,) * 65 + (4,))", "ValueError", "at most 64 dimensions"),
    ("qb.broadcast_to(qb.ones(1), (2**62 + 1, 4))", "ValueError", "broadcast_to: shape"),
    ("qb.broadcast_to(qb.ones(1), (2**40, 2**40))", "ValueError", "broadcast_to: shape"),
    ("qb.ones(3)[2**63]", "IndexError", ""),
    ("qb.ones(3)[-2**70]", "IndexError", ""),
    ("qb.ones(3)[5]", "IndexError", ""),
    ("qb.array(nested(50000))", "ValueError", "deeper than 64 levels"),
    ("qb.asarray(nested(70))", "ValueError", "deeper than 64 levels"),
    ("qb.scan(lambda c, x: (c, c), qb.array(0.0), None, length=2**61)", "ValueError", "scan"),
    ("qb.scan(lambda c, x: (c, c), qb.array(0.0), None, length=2**53 - 1)", "(ValueError, MemoryError)", ""),
    ("qb.fori_loop(0, qb.array(float('nan')), lambda i, c: c, 0.0)", "ValueError", "fori_loop: upper must be a finite"),
    ("qb.fori_loop(qb.array(float('inf')), 3, lambda i, c: c, 0.0)", "ValueError", "fori_loop: lower"),
    ("qb.fori_loop(0, 10**20, lambda i, c: c, 0.0)", "ValueError", "fori_loop: upper = 100000000000000000000"),
    ("qb.fori_loop(0, qb.array(2.5), lambda i, c: c, 0.0)", "ValueError", "fori_loop: upper must be an integer"),
    ("qb.set_num_threads(10**9)", "ValueError", "set_num_threads: n must be between 1 and"),
    ("qb.set_num_threads(2**70)", "ValueError", "set_num_threads: n"),
    ("qb.set_num_threads(0)", "ValueError", "set_num_threads"),
    ("qb.jit(lambda x: x).lower(qb.ShapeDtype((2**62 + 1, 4), qb.float32))", "ValueError", "ShapeDtype: shape"),
    ("qb.ShapeDtype((2**64,), qb.float32)", "ValueError", "ShapeDtype"),
    ("qb.load(io.BytesIO(b'QUABLA\\x00\\x01' + (2**63).to_bytes(8, 'little') + bytes(8)))", "ValueError", ""),
    ("qb.zeros((2**40,))", "MemoryError", ""),  # 8 TiB: more than the machine has
    ("qb.ones((2**20, 2**20))", "MemoryError", ""),
]


def _python():
    """This interpreter, with -S when it runs without site (scripts/sanitize-tests.sh: the
    sanitised extension comes from PYTHONPATH, which subprocesses inherit)."""
    return [sys.executable] + (["-S"] if sys.flags.no_site else [])


PRELUDE = """
import io
import quabla as qb

def nested(depth):
    x = 1.0
    for _ in range(depth):
        x = [x]
    return x
"""


@pytest.mark.parametrize("expr,exc,text", CASES, ids=[c[0][:60] for c in CASES])
def test_hostile_size_raises_a_python_exception(expr, exc, text):
    code = PRELUDE + textwrap.dedent(f"""
    try:
        {expr}
    except {exc} as e:
        print("RAISED", type(e).__name__, e)
    else:
        print("NO ERROR")
    """)
    p = subprocess.run(_python() + ["-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"crashed with {p.returncode}: {p.stderr[-2000:]}"
    assert p.stdout.startswith("RAISED"), p.stdout + p.stderr[-2000:]
    assert text in p.stdout, p.stdout


def test_valid_sizes_still_work_after_the_checks():
    import quabla as qb
    assert qb.zeros((3, 4)).shape == (3, 4)
    assert qb.reshape(qb.ones(12), (2, -1)).shape == (2, 6)
    assert qb.broadcast_to(qb.ones(1), (2, 3)).shape == (2, 3)
    x = qb.ones(4).reshape((1,) * 63 + (4,))
    assert x.ndim == 64
    assert qb.arange(5).shape == (5,)
    assert qb.ones(3)[-1].shape == ()


def test_save_and_load_accept_the_same_ranks():
    import io

    import quabla as qb
    x = qb.ones(2).reshape((1,) * 63 + (2,))
    buf = io.BytesIO()
    qb.save(buf, {"x": x})
    buf.seek(0)
    assert qb.load(buf)["x"].shape == x.shape


def test_big_endian_numpy_input_is_byte_swapped():
    import numpy as np

    import quabla as qb
    for dt in (">f8", ">f4", ">i4", ">i8", "<f8"):
        a = np.arange(6).reshape(2, 3).astype(dt)
        np.testing.assert_array_equal(qb.asarray(a).numpy(), a.astype(np.float64))
        np.testing.assert_array_equal(qb.asarray(a[:, ::2]).numpy(), a[:, ::2].astype(np.float64))
    assert qb.asarray(np.array([1.5], dtype=">f4")).dtype == qb.float32


INTERRUPTED = r"""
import sys, time
import quabla as qb
which = sys.argv[1]
loops = {
    "fori_small": lambda: qb.fori_loop(0, 2**50, lambda i, c: c + 1.0, qb.array(0.0)),
    "while_small": lambda: qb.while_loop(lambda c: c >= 0.0, lambda c: c + 1.0, qb.array(0.0)),
    "while_large": lambda: qb.while_loop(lambda c: c >= 0, lambda c: c + qb.sum(qb.ones(100000)), qb.array(0.0)),
    "jit_scan": lambda: qb.jit(lambda x: qb.scan(lambda c, _: (c * 1.0000001, None), x, None, length=2**50))(
        qb.ones(3)),
}
print("start", flush=True)
t = time.time()
try:
    loops[which]()
except KeyboardInterrupt:
    print("interrupted", flush=True)
print(float(qb.fori_loop(0, 10, lambda i, c: c + 1.0, qb.array(0.0))))  # still usable afterwards
"""


@pytest.mark.parametrize("which", ["fori_small", "while_small", "while_large", "jit_scan"])
def test_ctrl_c_interrupts_a_long_compiled_loop(which):
    import signal
    import time
    p = subprocess.Popen(_python() + ["-c", INTERRUPTED, which], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "start"
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0 and out.split() == ["interrupted", "10.0"], out


def test_a_signal_handlers_own_exception_leaves_a_compiled_loop_unchanged():
    code = textwrap.dedent("""
    import signal
    import quabla as qb

    def deadline(*_):
        raise TimeoutError("deadline")

    signal.signal(signal.SIGALRM, deadline)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        qb.while_loop(lambda c: c >= 0.0, lambda c: c + 1.0, qb.array(0.0))
    except TimeoutError as e:
        print("TimeoutError", e)
    """)
    p = subprocess.run(_python() + ["-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "TimeoutError deadline", p.stdout + p.stderr[-2000:]
