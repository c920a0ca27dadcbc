"""The CUDA backend's Python side: finding the CUDA libraries, listing devices and
resolving ``device=`` strings. Nothing here loads CUDA at import: the libraries are opened
(with dlopen, in C++) the first time a CUDA device is asked for.

``QUABLA_CUDA_EMULATOR=1`` makes ``cuda:0`` the host emulator: CUDA plans and their
generated kernels run as C++ on the CPU (slow; for testing the backend without a GPU).
"""
import glob
import os
import sys
from typing import Optional, Tuple

from . import _core
from .errors import UnsupportedOperationError

_dirs_set = False


def _wheel_library_dirs():
    """lib folders of the nvidia-* wheels (nvidia-cuda-nvrtc-cu12, nvidia-cublas-cu12, ...)."""
    dirs = []
    for base in sys.path:
        for pattern in ("nvidia/*/lib", "nvidia/cu*/lib"):
            for d in sorted(glob.glob(os.path.join(base or ".", pattern))):
                if d not in dirs:
                    dirs.append(d)
    return dirs


def _ensure_library_dirs():
    global _dirs_set
    if not _dirs_set:
        _core.cuda_set_library_dirs(_wheel_library_dirs())
        _dirs_set = True


def emulating() -> bool:
    return os.environ.get("QUABLA_CUDA_EMULATOR", "").lower() in ("1", "true", "yes")


def info() -> dict:
    """gpu_count, reason (why there is none), devices, nvrtc_version / nvrtc_reason."""
    _ensure_library_dirs()
    return _core.cuda_info()


def device_names():
    if emulating():
        return ["cuda:0"]
    return [f"cuda:{i}" for i in range(info()["gpu_count"])]


def unavailable_reason() -> Optional[str]:
    if emulating():
        return None
    i = info()
    return None if i["gpu_count"] else i["reason"]


def resolve(device: str, what: str = "jit") -> Tuple[int, bool]:
    """(ordinal, emulate) for "cuda" / "cuda:N"; raises when that device does not exist."""
    ordinal = int(device.split(":")[1]) if ":" in device else 0
    if emulating():
        if ordinal != 0:
            raise ValueError(f"{what}: the CUDA host emulator (QUABLA_CUDA_EMULATOR=1) is cuda:0 only, got {device!r}")
        return 0, True
    reason = unavailable_reason()
    if reason is not None:
        raise UnsupportedOperationError(
            f"{what}: CUDA is not available on this machine: {reason}; qb.devices() lists the available targets "
            f"(use device='cpu')", op=what, device=device)
    count = info()["gpu_count"]
    if ordinal >= count:
        raise ValueError(f"{what}: {device!r} does not exist; this machine has {count} CUDA device(s): "
                         f"{', '.join(device_names())}")
    return ordinal, False
