"""qb.pure_callback: a Python function called from inside traced programs (as
``jax.pure_callback``), and the registry behind the IR's host_call op (ops.def), which
qb.distributed's collectives also use inside jit.

A traced call becomes a host_call node: when the compiled program runs, the CPU executor
hands the operands to :func:`dispatch`, which calls the registered function with NumPy arrays
and checks that it returned exactly the declared shape and dtype. The function is treated as
pure: it may run once per result leaf (a pytree of results is one node per leaf), and a
result nobody uses may never be computed. It has no derivative (wrap it in qb.custom_jvp or
qb.custom_vjp to give it one); under vmap it needs ``vmap_method``. It runs on the CPU
backend only.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Dict, Optional

from . import _core
from . import tree as _tree

__all__ = ["pure_callback", "register", "dispatch"]

_VMAP_METHODS = {None: 0, "sequential": 1, "broadcast_all": 2, "legacy_vectorized": 2, "expand_dims": 3}
_registry: Dict[int, tuple] = {}  # id -> (function, name for messages, run for its effect)
_ids = itertools.count(1)
_lock = threading.Lock()


def register(fn: Callable, name: str = "pure_callback", effect: bool = False,
             submit: Optional[Callable] = None) -> int:
    """An id for fn in the host-call registry (name: what messages call it; effect: fn runs
    for its effect, what it returns is ignored; submit: runs a job elsewhere and returns a
    concurrent.futures.Future of its result, so the program goes on while fn runs and waits
    where it first reads the result, as qb.distributed's collectives do on their thread).
    Entries stay for the life of the process, as long as compiled programs may call them."""
    with _lock:
        i = next(_ids)
        _registry[i] = (fn, name, effect, submit)
    return i


# NumPy is imported by the functions that use it (``import quabla`` does not need it).


def staged(leaves) -> bool:
    """Whether a host call on these leaves belongs in a program being traced: a leaf is a
    tracer, or a trace is open (a call with concrete or no operands still runs with the
    program, not once at trace time)."""
    return any(isinstance(x, _core.Array) and x._is_tracer for x in leaves) or _core.tracing()


def _np_dtype(name: str):
    import numpy as np
    return np.dtype(np.bool_) if name == "bool" else np.dtype(name)


def _result(value, shape: tuple, dtype, where: str):
    import numpy as np
    try:
        a = np.asarray(value)
    except Exception as e:  # noqa: BLE001 (any conversion failure is the callback's)
        raise TypeError(f"{where}: the callback returned {type(value).__name__}, which is not an array") from e
    if a.shape != tuple(shape) or a.dtype != dtype:
        raise TypeError(f"{where}: the callback returned an array of shape {a.shape} and dtype {a.dtype}, but "
                        f"result_shape_dtypes declared shape {tuple(shape)} and dtype {dtype}; return exactly "
                        f"that (e.g. np.asarray(out, dtype={dtype.name!r}))")
    return a


def dispatch(callback: int, vmap_method: int, batch_axes: int, operands: list, out_dtype: str, out_shape: tuple):
    """Runs registered function `callback` for a host_call node: operands are (bytes, dtype,
    shape) triples; returns the result as a contiguous array (or, for an entry with ``submit``,
    a future of it, which the program waits for where it first reads the result). A call vmapped with 'sequential' runs the
    function once per example over its leading batch_axes axes."""
    import numpy as np
    entry = _registry.get(callback)
    if entry is None:
        raise RuntimeError(f"host_call: callback {callback} is not registered in this process (a program "
                           f"compiled in another process cannot call back into this one)")
    fn, name, effect, submit = entry
    # Writable copies for user functions; a job for elsewhere (qb.distributed's, which only
    # reads them) takes the operands' bytes as they are: already a copy of the program's.
    arrays = [np.frombuffer(data, _np_dtype(dt)).reshape(shape) for data, dt, shape in operands]
    if submit is None:
        arrays = [a.copy() for a in arrays]
    dtype = _np_dtype(out_dtype)
    if effect:  # qb.debug: the result is a placeholder nothing reads
        if vmap_method == 1 and batch_axes > 0:  # once per example, in order (jax.debug's under vmap)
            for idx in np.ndindex(*tuple(out_shape[:batch_axes])):
                fn(*[a[idx] for a in arrays])
        else:
            fn(*arrays)
        return np.zeros(tuple(out_shape), dtype)

    def run():
        if vmap_method == 1 and batch_axes > 0:
            lead = tuple(out_shape[:batch_axes])
            out = np.empty(tuple(out_shape), dtype)
            for idx in np.ndindex(*lead):
                out[idx] = _result(fn(*[a[idx] for a in arrays]), out_shape[batch_axes:], dtype, name)
        else:
            out = _result(fn(*arrays), out_shape, dtype, name)
        return np.ascontiguousarray(out)  # the core copies it out through the buffer protocol
    # The operands are copies: the job reads nothing of the running program's.
    return submit(run) if submit is not None else run()


def _spec_of(s, where: str):
    import numpy as np
    shape, dtype = getattr(s, "shape", None), getattr(s, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"{where}: result_shape_dtypes leaves must have .shape and .dtype (qb.ShapeDtype, "
                        f"jax.ShapeDtypeStruct, an array), got {type(s).__name__}")
    _core.check_shape(shape, where)
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    return shape, np.dtype(np.asarray(_core.zeros(1, dtype=dtype)).dtype)


def _to_numpy(x):
    import numpy as np
    if isinstance(x, _core.DeviceArray):
        x = x.to_host()
    return np.asarray(x)


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args, vmap_method: Optional[str] = None,
                  **kwargs) -> Any:
    """Calls ``callback(*args, **kwargs)`` on NumPy arrays, also from inside jit, grad's and
    vmap's traces (as ``jax.pure_callback``). ``result_shape_dtypes`` is a pytree of objects
    with ``.shape`` and ``.dtype`` (qb.ShapeDtype, jax.ShapeDtypeStruct, arrays) that the
    results must match exactly. ``vmap_method``: ``"sequential"`` (one call per example),
    ``"broadcast_all"`` (one call, every operand with the batch axis first),
    ``"expand_dims"`` (one call, unbatched operands with a leading axis of 1), or None
    (vmap raises). The callback must be pure: it may be called once per result leaf, or not
    at all when its results are unused. No derivatives; the CPU backend only.
    """
    where = "pure_callback"
    if not callable(callback):
        raise TypeError(f"{where}: callback must be callable, got {type(callback).__name__}")
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"{where}: vmap_method must be None, 'sequential', 'broadcast_all' or 'expand_dims', got "
                         f"{vmap_method!r}")
    specs, out_def = _tree.flatten(result_shape_dtypes)
    specs = [_spec_of(s, where) for s in specs]
    leaves, in_def = _tree.flatten((args, kwargs))
    traced = staged(leaves)

    def call(*arrays):
        a, k = _tree.unflatten(in_def, list(arrays))
        out_leaves, got_def = _tree.flatten(callback(*a, **k))
        if got_def != out_def:
            raise TypeError(f"{where}: the callback returned a {got_def}, but result_shape_dtypes is a {out_def}")
        return out_leaves

    if not traced:
        import numpy as np
        outs = call(*[_to_numpy(x) for x in leaves])
        return _tree.unflatten(out_def, [_core.asarray(np.array(_result(o, s, d, where)))
                                         for o, (s, d) in zip(outs, specs)])
    inputs = [x if isinstance(x, _core.Array) else _core.asarray(x) for x in leaves]
    method = _VMAP_METHODS[vmap_method]
    outs = []
    for j, (shape, dtype) in enumerate(specs):
        cid = register(lambda *arrays, j=j: call(*arrays)[j])
        outs.append(_core.host_call(cid, inputs, list(shape), dtype.name, -1, method))
    return _tree.unflatten(out_def, outs)
