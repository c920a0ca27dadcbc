"""Loads the BLAS library of the scipy-openblas32 package before the extension.

The extension links against libscipy_openblas.so by its soname; loading it first from the
installed package makes the dynamic loader reuse it, wherever the package lives.
"""
import ctypes
import os


def preload_blas() -> None:
    # Quabla splits GEMMs over its own thread pool and calls OpenBLAS single-threaded
    # (backends/cpu/gemm.cc). OpenBLAS reads its thread count when the library loads, and
    # importing scipy_openblas32 already loads it; with the default count it starts worker
    # threads that busy-wait and take cores from our pool (measured: a quarter of the beam4
    # benchmark's CPU time). The variable is set only around the import and load, so a
    # NumPy imported later keeps its own threading.
    previous = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        try:
            import scipy_openblas32
        except ImportError as exc:  # pragma: no cover - a broken install
            raise ImportError("quabla needs the scipy-openblas32 package: pip install scipy-openblas32") from exc
        path = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True))
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    finally:
        if previous is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = previous
