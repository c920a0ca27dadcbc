"""quabla.ops: jax.ops' segment reductions (graph networks, particle binning, ragged
batches): ``segment_sum(data, segment_ids, num_segments)`` reduces the rows of data that
share a segment id, as ``jax.ops.segment_sum``. Ids outside [0, num_segments) are dropped
(JAX's default mode); with mode="clip" they are clipped into range. An empty segment holds
the reduction's identity (0, 1, the dtype's lowest / highest value: -inf / inf for floats).
Differentiable in data (the ids are integers), under jit (give num_segments: the output
size must be static), vmap and every transform."""
from __future__ import annotations

from typing import Optional

from . import _core

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _segments(name, data, segment_ids, num_segments, mode):
    import quabla as qb
    data = data if isinstance(data, _core.Array) else qb.asarray(data)
    ids = segment_ids if isinstance(segment_ids, _core.Array) else qb.asarray(segment_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"ops.{name}: segment_ids must be integers, got {ids.dtype.name}")
    if ids.ndim != 1 or data.ndim < 1 or ids.shape[0] != data.shape[0]:
        raise ValueError(f"ops.{name}: segment_ids must be 1-D with one id per row of data (data shape "
                         f"{tuple(data.shape)}), got shape {tuple(ids.shape)}")
    if num_segments is None:
        if ids._is_tracer:
            raise ValueError(f"ops.{name}: inside jit or a transform the number of segments must be static; pass "
                             f"num_segments=")
        num_segments = int(qb.max(ids)) + 1 if ids.size else 0
    if isinstance(num_segments, bool) or not hasattr(num_segments, "__index__") or int(num_segments) < 0:
        raise TypeError(f"ops.{name}: num_segments must be a non-negative int, got {num_segments!r}")
    n = int(num_segments)
    mode = getattr(mode, "name", mode)
    mode = None if mode is None else str(mode).lower()
    if mode == "clip":
        ids = qb.clip(ids, 0, max(n - 1, 0))
    elif mode not in (None, "drop", "fill_or_drop", "promise_in_bounds"):
        raise ValueError(f"ops.{name}: mode must be None, 'drop' or 'clip', got {mode!r}")
    ids = qb.where(ids < 0, n, ids)  # negative ids are out of range too: dropped, not counted from the end
    return qb, data, ids, n


def _identity(qb, dtype, lowest: bool):
    if dtype.kind in "iu":
        info = qb.iinfo(dtype)
        return int(info.min) if lowest else int(info.max)
    if dtype == qb.bool_:
        return not lowest
    return -float("inf") if lowest else float("inf")


def segment_sum(data, segment_ids, num_segments: Optional[int] = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: Optional[int] = None, mode=None):
    """The sum of the rows of data in each segment: out[s] = sum of data[i] with segment_ids[i] == s."""
    qb, data, ids, n = _segments("segment_sum", data, segment_ids, num_segments, mode)
    return qb.zeros((n,) + tuple(data.shape[1:]), dtype=data.dtype).at[ids].add(data, mode="drop")


def segment_prod(data, segment_ids, num_segments: Optional[int] = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False, bucket_size: Optional[int] = None, mode=None):
    """The product of the rows of data in each segment (1 for an empty one)."""
    qb, data, ids, n = _segments("segment_prod", data, segment_ids, num_segments, mode)
    return qb.ones((n,) + tuple(data.shape[1:]), dtype=data.dtype).at[ids].multiply(data, mode="drop")


def segment_max(data, segment_ids, num_segments: Optional[int] = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: Optional[int] = None, mode=None):
    """The largest row of data in each segment, elementwise (the dtype's lowest value for an empty one)."""
    qb, data, ids, n = _segments("segment_max", data, segment_ids, num_segments, mode)
    init = qb.full((n,) + tuple(data.shape[1:]), _identity(qb, data.dtype, True), dtype=data.dtype)
    return init.at[ids].max(data, mode="drop")


def segment_min(data, segment_ids, num_segments: Optional[int] = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: Optional[int] = None, mode=None):
    """The smallest row of data in each segment, elementwise (the dtype's highest value for an empty one)."""
    qb, data, ids, n = _segments("segment_min", data, segment_ids, num_segments, mode)
    init = qb.full((n,) + tuple(data.shape[1:]), _identity(qb, data.dtype, False), dtype=data.dtype)
    return init.at[ids].min(data, mode="drop")
