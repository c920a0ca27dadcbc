"""Shared helpers for the Python test suite of Quabla's array and eager-operation layer."""
from __future__ import annotations

import contextlib
import os
import re
import sys


def _disable_editable_rebuild() -> None:
    """With SKBUILD_EDITABLE_SKIP set, import the installed extension as it is: switch off the
    scikit-build-core editable finder's rebuild-on-import (newer hooks only honour a build-dir
    path in that variable, and then stop resolving the package altogether)."""
    if not os.environ.get("SKBUILD_EDITABLE_SKIP") or "quabla" in sys.modules:
        return
    for finder in sys.meta_path:
        if type(finder).__name__ == "ScikitBuildRedirectingFinder" and hasattr(finder, "rebuild_flag"):
            finder.rebuild_flag = False


_disable_editable_rebuild()

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import quabla as qb  # noqa: E402

QB_DTYPES = {"float32": qb.float32, "float64": qb.float64, "bool": qb.bool_}
NP_DTYPES = {"float32": np.float32, "float64": np.float64, "bool": np.bool_, "int32": np.int32, "int64": np.int64,
             "int8": np.int8, "int16": np.int16, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32}
FLOAT_NAMES = ["float32", "float64"]

# Tolerances for exactly rounded (or nearly so) operations and for reductions, by dtype name.
EXACT_RTOL = {"float32": 1e-6, "float64": 1e-12}
REDUCE_RTOL = {"float32": 2e-5, "float64": 1e-12}


def np_of(x) -> np.ndarray:
    """A quabla array as NumPy (through the buffer protocol)."""
    assert isinstance(x, qb.Array), f"expected a qb.Array, got {type(x).__name__}"
    return np.asarray(x)


def check(actual, expected, *, rtol=None, atol=0.0, dtype=None, equal_nan=True):
    """Asserts that qb array `actual` equals NumPy `expected` in shape, dtype and values.

    dtype defaults to expected's dtype name; rtol defaults to exact equality.
    """
    expected = np.asarray(expected)
    name = dtype if dtype is not None else expected.dtype.name
    assert isinstance(actual, qb.Array), f"expected a qb.Array, got {type(actual).__name__}"
    assert actual.dtype.name == name, f"dtype {actual.dtype.name} != {name}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    got = np.asarray(actual)
    assert got.dtype == np.dtype(NP_DTYPES[name])
    if name == "bool" or rtol is None and atol == 0.0:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))
    else:
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=rtol, atol=atol, equal_nan=equal_nan)


def shape_pattern(shape) -> str:
    """A regex matching a shape written as a tuple '(2, 3)' or a list '[2, 3]'."""
    inner = ", ".join(str(d) for d in shape)
    if len(shape) == 1:
        inner_t = inner + ",?"
    else:
        inner_t = re.escape(inner)
    return r"[\[(]" + inner_t + r"[\])]"


@pytest.fixture(params=FLOAT_NAMES)
def fdt(request):
    """A float dtype name, 'float32' or 'float64'."""
    return request.param


@contextlib.contextmanager
def jax_x64_mode(on: bool = True):
    """JAX's x64 mode and ours (default float64/int64) set in step, for tests against JAX;
    both restored on exit."""
    jax = pytest.importorskip("jax")
    jax_before, qb_before = jax.config.jax_enable_x64, qb.config.jax_enable_x64
    jax.config.update("jax_enable_x64", on)
    qb.config.update("jax_enable_x64", on)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", jax_before)
        qb.config.update("jax_enable_x64", qb_before)


@pytest.fixture(params=[True, False], ids=["x64", "x32"])
def x64(request):
    """Both x64 modes in turn (jax_x64_mode)."""
    with jax_x64_mode(request.param):
        yield request.param
