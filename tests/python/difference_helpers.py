"""Finite differences shared by the tests of solvers and integrators."""
from __future__ import annotations

import numpy as np


def central(f, x, eps=1e-6):
    """Central differences of f (scalar or array valued) at x: shape f's + x's."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.moveaxis(np.array(cols), 0, -1).reshape(np.shape(cols[0]) + x.shape)
