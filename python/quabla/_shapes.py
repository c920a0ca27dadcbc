"""Shape functions composed from the core ones."""
from __future__ import annotations

from . import _core


def meshgrid(*xs, indexing: str = "xy", sparse: bool = False, copy: bool = True):
    """Coordinate grids from 1-D arrays, as numpy.meshgrid (``indexing`` "xy" or "ij";
    ``sparse`` returns each grid with length-1 axes, broadcasting to the full grid)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [_core.asarray(x) for x in xs]
    for i, a in enumerate(arrays):
        if a.ndim != 1:
            raise ValueError(f"meshgrid: argument {i} must be 1-D, got shape {a.shape}")
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) >= 2 and i < 2:
            axis = 1 - i
        view = [1] * len(arrays)
        view[axis] = a.shape[0]
        grid = _core.reshape(a, tuple(view))
        out.append(grid if sparse else _core.broadcast_to(grid, tuple(shape)))
    return out
