"""Fuzz target for ``qb.load`` over arbitrary bytes: any exception other than ValueError, a
crash, a hang or a huge allocation is a finding.

With atheris (coverage-guided, libFuzzer)::

    pip install atheris
    python tests/fuzz/fuzz_load.py -max_total_time=60 [-rss_limit_mb=2048] [CORPUS_DIR ...]

Without atheris, a seeded random-mutation loop over the same target::

    python tests/fuzz/fuzz_load.py --fallback [--seconds 60 | --iterations N] [--seed S]

Each input is read in one of two ways, chosen by its first byte: as a whole checkpoint file
(odd first byte), or (even first byte) as a JSON header that the harness wraps with a valid
preamble and header CRC-32 in front of a fixed 512-byte data section, so that mutations reach
the header validation behind the checksum. Valid checkpoints seed both modes (written to a
temporary corpus directory unless corpus directories are given). Findings are printed with
the input's hex; the fallback exits with status 1 when it finds any.
"""
from __future__ import annotations

import io
import json
import os
import random
import struct
import sys
import tempfile
import time
import traceback
import zlib

DATA = bytes(range(256)) * 2  # the fixed data section of header-mode inputs


def _import_quabla(instrument: bool):
    if instrument:
        import atheris
        with atheris.instrument_imports(include=["quabla"]):
            import quabla as qb
    else:
        import quabla as qb
    return qb


def wrap_header(header: bytes) -> bytes:
    """A file made of `header` (raw JSON bytes) with a valid preamble and CRC, then DATA."""
    pre = struct.pack("<8sQII", b"QUABLA\x00\x01", len(header), zlib.crc32(header), 0)
    head = pre + header
    return head + b"\x00" * (-len(head) % 64) + DATA


def to_file(data: bytes) -> bytes:
    if not data:
        return data
    return data[1:] if data[0] & 1 else wrap_header(data[1:])


def seeds(qb) -> list:
    import numpy as np
    trees = [
        {"w": qb.asarray(np.arange(6, dtype=np.float32).reshape(2, 3)), "b": qb.asarray(np.float64(1.5)),
         "m": qb.asarray(np.array([True, False])), "meta": (1, -2.5, None, True, "é", [], {})},
        [qb.asarray(np.ones((2, 2, 2)))],
        {"a": {"b": [(None,)]}, "n": 10 ** 20, "f": float("nan")},
    ]
    out = []
    for t in trees:
        buf = io.BytesIO()
        qb.save(buf, t)
        out.append(b"\x01" + buf.getvalue())
    # Header-mode seeds: headers whose arrays fit DATA (crc32 of the right slices).
    f32 = {"type": "array", "dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24,
           "crc32": zlib.crc32(DATA[:24])}
    bl = {"type": "array", "dtype": "bool", "shape": [1], "offset": 64, "nbytes": 1,
          "crc32": zlib.crc32(DATA[64:65])}
    f64 = {"type": "array", "dtype": "float64", "shape": [4], "offset": 128, "nbytes": 32,
           "crc32": zlib.crc32(DATA[128:160])}
    tree = {"type": "dict", "keys": ["a", "b", "c", "d"],
            "values": [f32, {"type": "tuple", "items": [bl, {"type": "float", "bits": "7ff8000000000000"}]},
                       {"type": "list", "items": [f64, {"type": "int", "value": 3}]},
                       {"type": "str", "value": "x"}]}
    header = {"format": "quabla", "version": 1, "data_size": len(DATA), "tree": tree}
    out.append(b"\x00" + json.dumps(header).encode())
    header["tree"] = {"type": "none"}
    out.append(b"\x00" + json.dumps(header).encode())
    return out


def make_target(qb):
    def test_one_input(data: bytes) -> None:
        try:
            qb.load(io.BytesIO(to_file(data)))
        except ValueError:
            pass
    return test_one_input


def _mutate(b: bytes, rng: random.Random) -> bytes:
    b = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        if not b:
            b.append(rng.randrange(256))
            continue
        i = rng.randrange(len(b))
        if kind == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            b[i] = rng.randrange(256)
        elif kind == 2:
            del b[i:i + rng.randint(1, 32)]
        elif kind == 3:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif kind == 4:  # interesting numbers in text form (header mode) or binary
            tok = rng.choice([b"-1", b"0", b"18446744073709551616", b"1e309", b"1000000000000000",
                              b"NaN", b'"bool"', b"[]", b"{}", b"null", b"true", b"[" * 3000,
                              struct.pack("<Q", rng.choice([2 ** 64 - 1, 2 ** 63, 10 ** 15]))])
            b[i:i + len(tok)] = tok
        elif kind == 5:  # truncate
            del b[i:]
        else:  # duplicate a span
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 64)]
    return bytes(b)


def run_fallback(argv) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="random-mutation fuzzing of qb.load without atheris")
    ap.add_argument("--fallback", action="store_true")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.seconds is None and args.iterations is None:
        args.seconds = 60.0
    qb = _import_quabla(False)
    target = make_target(qb)
    rng = random.Random(args.seed)
    pool = seeds(qb)
    findings = 0
    n = 0
    t0 = time.monotonic()
    while True:
        if args.iterations is not None and n >= args.iterations:
            break
        if args.seconds is not None and time.monotonic() - t0 >= args.seconds:
            break
        data = _mutate(rng.choice(pool), rng)
        n += 1
        try:
            target(data)
        except Exception:  # anything but ValueError escaped qb.load
            findings += 1
            print(f"FINDING #{findings} on input {data.hex()}", file=sys.stderr)
            traceback.print_exc()
        else:
            if len(pool) < 2000 and rng.random() < 0.05:
                pool.append(data)  # keep some mutants to mutate further
    print(f"fallback fuzzing: {n} inputs in {time.monotonic() - t0:.1f}s, {findings} findings")
    return 1 if findings else 0


def run_atheris(argv) -> None:
    import atheris
    qb = _import_quabla(True)
    target = make_target(qb)
    if not any(not a.startswith("-") for a in argv[1:]):  # no corpus directory given: seed one
        corpus = tempfile.mkdtemp(prefix="quabla_fuzz_corpus_")
        for i, s in enumerate(seeds(qb)):
            with open(os.path.join(corpus, f"seed{i}"), "wb") as f:
                f.write(s)
        argv = argv + [corpus]
        print(f"seed corpus: {corpus}", file=sys.stderr)
    atheris.Setup(argv, target)
    atheris.Fuzz()


def main() -> int:
    if "--fallback" in sys.argv[1:]:
        return run_fallback(sys.argv[1:])
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("atheris is not installed (pip install atheris); running the fallback fuzzer",
              file=sys.stderr)
        return run_fallback([a for a in sys.argv[1:] if a.startswith("--")])
    run_atheris(sys.argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
