"""jax.flatten_util: a pytree of arrays as one flat vector and back."""
from __future__ import annotations

from typing import Any, Callable, Tuple

from ._package import qb as _qb

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> Tuple[Any, Callable[[Any], Any]]:
    """(flat, unravel): the leaves raveled and concatenated in tree order (in their common
    promoted dtype), and the function that splits such a vector back into the pytree (each
    leaf its shape and dtype). Both differentiate, vmap and jit."""
    leaves, treedef = _qb.tree.flatten(pytree)
    arrays = [_qb.asarray(x) for x in leaves]
    shapes = [tuple(a.shape) for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = [a.size for a in arrays]
    if not arrays:
        return _qb.zeros((0,)), lambda flat: _qb.tree.unflatten(treedef, [])
    dtype = dtypes[0]
    for d in dtypes[1:]:
        dtype = _qb.promote_types(dtype, d)
    flat = _qb.concatenate([a.reshape(-1).astype(dtype) for a in arrays])
    total = sum(sizes)

    def unravel(v):
        v = _qb.asarray(v)
        if v.ndim != 1 or v.shape[0] != total:
            raise ValueError(f"ravel_pytree's unravel: expected a vector of {total} elements, got shape {tuple(v.shape)}")
        out, start = [], 0
        for shape, d, n in zip(shapes, dtypes, sizes):
            out.append(v[start:start + n].reshape(shape).astype(d))
            start += n
        return _qb.tree.unflatten(treedef, out)
    return flat, unravel
