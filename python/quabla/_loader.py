"""Loads the BLAS library of the scipy-openblas32 package before the extension.

The extension links against libscipy_openblas.so by its soname; loading it first from the
installed package makes the dynamic loader reuse it, wherever the package lives.
"""
import ctypes
import os


def preload_blas() -> None:
    try:
        import scipy_openblas32
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ImportError("quabla needs the scipy-openblas32 package: pip install scipy-openblas32") from exc
    path = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True))
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
