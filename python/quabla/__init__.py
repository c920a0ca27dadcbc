"""Quabla: differentiable scientific computing for physics-informed neural networks.

``import quabla as qb``. Arrays and math run on a C++20 core (``quabla._core``); this
package adds the thin Python layer: NumPy export, compositions such as meshgrid, errors.
"""
import sys as _sys

from ._loader import preload_blas as _preload_blas

_preload_blas()

from . import _core  # noqa: E402
from ._core import (  # noqa: E402,F401
    Array, DType, float32, float64, bool_, int32, int64, complex64, complex128, int8, int16, uint8, uint16, uint32,
    from_dlpack, floor_divide, bitwise_and, bitwise_or, bitwise_xor, bitwise_not, invert, left_shift, right_shift,
    zeros, ones, full, zeros_like, ones_like, full_like, arange, linspace, eye,
    sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh,
    exp, expm1, exp2, log, log1p, log2, log10, sqrt, cbrt, erf, erfc, abs, absolute, sign,
    floor, ceil, round, sigmoid, softplus, negative, stop_gradient, square, reciprocal, relu,
    silu, gelu, nan_to_num, isnan, isinf, isfinite,
    add, subtract, multiply, divide, true_divide, power, arctan2, atan2, hypot, fmod, mod,
    remainder, maximum, minimum, logaddexp, clip,
    greater, greater_equal, less, less_equal, equal, not_equal,
    logical_and, logical_or, logical_xor, logical_not, where, astype,
    sum, prod, max, min, amax, amin, any, all, mean, var, std, logsumexp, softmax,
    log_softmax, norm, cumsum,
    reshape, ravel, transpose, broadcast_to, squeeze, expand_dims, flip, tril, triu,
    concat, concatenate, stack, split, matmul, dot, gather, scatter_add,
    set_num_threads, num_threads, release_cached_buffers,
)
from .errors import QuablaError, TracerError, ShapeError, UnsupportedOperationError, RetraceWarning  # noqa: E402,F401
from ._shapes import meshgrid  # noqa: E402,F401
from ._numpy_extra import (  # noqa: E402,F401
    moveaxis, swapaxes, roll, tile, repeat, diagonal, diag, trace, outer, inner, tensordot, kron, cross, diff,
    gradient, trapezoid, interp, polyval, vander, identity, pad, einsum, cumprod, cummax, cummin,
)
from ._numpy_extra import norm, split  # noqa: E402,F401,F811  (the core's, with NumPy's empty cases)
from ._numpy_extra import dot, matmul  # noqa: E402,F401,F811  (the core's, with jax.numpy's precision=)
from ._numpy_extra import cumsum, ravel  # noqa: E402,F401,F811  (the core's, with jax.numpy's dtype= and order=)
from ._indexing import (  # noqa: E402,F401
    take, take_along_axis, argsort, sort, argmax, argmin, searchsorted, nonzero, flatnonzero, argwhere, unique,
)
from . import lax  # noqa: E402,F401
from ._constructors import array, asarray, default_dtype, set_default_dtype  # noqa: E402,F401
from . import _array_methods  # noqa: E402
from . import tree  # noqa: E402,F401
from ._jit import jit, ShapeDtype  # noqa: E402,F401
from ._callback import pure_callback  # noqa: E402,F401
from ._ad import grad, value_and_grad, jvp, vjp, jacfwd, jacrev, jacobian, hessian, hvp  # noqa: E402,F401
from ._vmap import vmap  # noqa: E402,F401
from ._taylor import laplacian, taylor  # noqa: E402,F401
from ._control import cond, fori_loop, scan, while_loop  # noqa: E402,F401
from ._custom import custom_jvp, custom_vjp, checkpoint, remat, checkpoint_policies, stop_gradient  # noqa: E402,F401,F811
from ._custom import checkpoint_name  # noqa: E402,F401
from . import ad_checkpoint  # noqa: E402,F401  (jax.ad_checkpoint)
from ._implicit import custom_linear_solve, custom_root, newton  # noqa: E402,F401
from . import custom_derivatives  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import random  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
from . import fft  # noqa: E402,F401
from . import ops  # noqa: E402,F401  (jax.ops: segment reductions)
from . import image  # noqa: E402,F401  (jax.image: resize)
from . import ode  # noqa: E402,F401
from . import debug  # noqa: E402,F401
from . import _numpy_more  # noqa: E402
from ._numpy_more import (  # noqa: E402,F401
    pi, e, inf, nan, newaxis, euler_gamma, atleast_1d, atleast_2d, atleast_3d, hstack, vstack, row_stack, dstack,
    column_stack, broadcast_arrays, broadcast_shapes, array_split, hsplit, vsplit, dsplit, fliplr, flipud, rot90,
    append, isclose, allclose, array_equal, array_equiv, isneginf, isposinf, isscalar, nansum, nanprod, nanmax,
    nanmin, nanmean, nanvar, nanstd, nanargmax, nanargmin, nancumsum, nancumprod, average, ptp, count_nonzero,
    quantile, percentile, median, nanquantile, nanpercentile, nanmedian, cov, corrcoef, digitize, deg2rad, rad2deg,
    radians, degrees, trunc, fix, rint, fabs, fmax, fmin, heaviside, signbit, copysign, round, around, copy, sinc, float_power, positive, logaddexp2, real,
    imag, conj, conjugate, empty, empty_like, logspace, geomspace, tri, tril_indices, triu_indices, diag_indices,
    indices, diagflat, ndim, shape, size, vdot, select, unravel_index, ravel_multi_index, isin, convolve, correlate,
    polyfit, finfo, iinfo, result_type, promote_types, can_cast, issubdtype, union1d, intersect1d, setdiff1d, setxor1d,
)
from . import nn  # noqa: E402,F401
from . import tree_util  # noqa: E402,F401  (jax.tree_util: quabla.tree's objects as a module)
from ._jit import ShapeDtype as ShapeDtypeStruct  # noqa: E402,F401  (jax.ShapeDtypeStruct's name)
from ._numpy_more import block_until_ready, device_get, linearize, eval_shape, bincount, histogram  # noqa: E402,F401
from . import _numpy_breadth  # noqa: E402
from ._numpy_breadth import (  # noqa: E402,F401
    angle, choose, compress, extract, place, put, put_along_axis, diag_indices_from, tril_indices_from,
    triu_indices_from, fromfunction, histogram_bin_edges, histogram2d, histogramdd, bartlett, blackman, hamming,
    hanning, kaiser, poly, roots, sort_complex, polyadd, polysub, polymul, polyder, polyint, polydiv, resize, rollaxis, trim_zeros, unwrap,
    unique_all, unique_counts, unique_inverse, unique_values, matrix_transpose, mask_indices, s_, index_exp, iterable,
    iscomplex, isreal, iscomplexobj, isrealobj, bitwise_invert, bitwise_left_shift, bitwise_right_shift, printoptions,
    get_printoptions, set_printoptions, array_repr, array_str, frombuffer, fromiter, fromstring, einsum_path, float_,
    double, single, int_,
)
from ._jax_api import (  # noqa: E402,F401
    clear_caches, custom_gradient, linear_transpose, closure_convert, default_backend, device_count,
    local_device_count, local_devices, process_count, process_index, host_count, host_id, named_call, named_scope,
    ensure_compile_time_eval, typeof, print_environment_info,
)
from . import dtypes  # noqa: E402,F401  (jax.dtypes)
from ._named_axes import pmap  # noqa: E402,F401  (jax.pmap: a jitted vmap with a named axis)
from .optim import Trainer  # noqa: E402,F401
from ._config import config, disable_jit  # noqa: E402,F401  (jax.config, jax.disable_jit)
from . import flatten_util  # noqa: E402,F401
from . import optax  # noqa: E402,F401  (optax's transformations, for code ported from JAX)
from . import example_libraries  # noqa: E402,F401
from . import _numpy_names  # noqa: E402
from ._numpy_names import (  # noqa: E402,F401,F811
    acos, asin, atan, acosh, asinh, atanh, atan2, pow, permute_dims, unstack, cumulative_sum, cumulative_prod, vecdot,
    matvec, vecmat, divmod, gcd, lcm, insert, delete, lexsort, partition, argpartition, fill_diagonal, mgrid, ogrid,
    r_, c_, ix_, vectorize, apply_along_axis, apply_over_axes, piecewise, ediff1d, modf, ldexp, frexp, nextafter,
    spacing, bitwise_count, linspace, reshape, full_like, block, isdtype, full, nan_to_num,
)
from ._special_incomplete import i0  # noqa: E402,F401  (numpy.i0)
ndarray = Array  # jax.numpy.ndarray / numpy.ndarray's role: isinstance(x, jnp.ndarray)


def make_jaxpr(fun, static_argnums=()):
    """make_jaxpr(f)(*args): the program f traces to, as text (jax.make_jaxpr's role; the
    text is Quabla's IR, printed as qb.jit(f).lower(*args).as_text())."""
    def traced(*args, **kwargs):
        return _ProgramText(_jit_fn(fun, static_argnums=static_argnums).lower(*args, **kwargs).as_text())
    return traced


class _ProgramText(str):
    """The printed program (a str, so print() and comparisons work)."""
from .io import save, load  # noqa: E402,F401

_array_methods.install()
_array_methods.install_more()
from . import _concrete_control  # noqa: E402
_concrete_control.install()  # if/int() on values under eager derivatives (see the module)
from . import _pickle  # noqa: E402,F401  (pickling of arrays, dtypes and keys)


from ._cuda import device_put  # noqa: E402,F401
DeviceArray = _core.DeviceArray

# Python compositions given device arrays compile for that device as a whole.
from . import _device_eager, _numpy_extra, _indexing, _shapes, _krylov, _special, _special_incomplete  # noqa: E402
_device_eager.install([_sys.modules[__name__]], [_numpy_extra, _indexing, _numpy_more, _shapes, linalg, nn, lax,
                                                  _krylov, _special, _numpy_names, _special_incomplete])


from ._device import Device  # noqa: E402,F401


def devices(backend=None):
    """The devices programs can run on: "cpu", then "cuda:N" for each CUDA GPU present.

    ``devices("cuda")`` lists only CUDA devices and raises RuntimeError, saying why in one
    sentence, when there is none (no driver, no GPU, no NVRTC); "mlx" is listed when this
    build has the MLX backend (``devices("mlx")`` likewise). QUABLA_CUDA_EMULATOR=1 makes
    "cuda:0" the host emulator (for testing the backend without a GPU).
    """
    from . import _cuda
    if backend == "gpu":  # JAX's name for CUDA devices
        backend = "cuda"
    if backend not in (None, "cpu", "cuda", "mlx"):
        raise ValueError(f"devices: backend must be None, 'cpu', 'cuda' (or 'gpu') or 'mlx', got {backend!r}")
    cuda = _cuda.device_names() if backend in (None, "cuda") else []
    if backend == "cuda" and not cuda:
        raise RuntimeError(f"devices: no CUDA device: {_cuda.unavailable_reason()}")
    mlx_info = _core.mlx_info()
    mlx = ["mlx"] if backend in (None, "mlx") and mlx_info["available"] else []
    if backend == "mlx" and not mlx:
        raise RuntimeError(f"devices: no MLX backend: {mlx_info['reason']}")
    return [Device(d) for d in (["cpu"] if backend in (None, "cpu") else []) + cuda + mlx]


# ---- Quabla v0.1 compatibility (docs/migration.md) ------------------------------------------
from ._facade import Compiler, Program, Executable  # noqa: E402,F401
from ._compat import (  # noqa: E402,F401
    Tensor, TensorView, TensorCpuExecutionPlan, TensorCudaAdamOptimizer, TensorCudaExecutionPlan,
    TensorMlxAdamOptimizer, TensorMlxExecutionPlan,
)
from . import _compat  # noqa: E402
import builtins as _builtins  # noqa: E402
from . import legacy  # noqa: E402,F401

TraceTensor = Array  # v0.1's name for a traced array (a tracer is an Array)
dtype = DType  # callable as jnp.dtype: qb.dtype("float32") is qb.float32
_compat.install_array_methods()
# Device arrays get every Array method, now that all of them are installed (quabla._cuda's
# own pass at its import ran before _array_methods and _compat added theirs).
from . import _cuda as _cuda_methods  # noqa: E402
_cuda_methods._install_device_array_methods()


def _is_legacy_grad_call(args, kwargs) -> bool:
    """grad(function, input_specs, values, output_cotangent): v0.1's 2D form (four
    arguments, or its keywords, or a list of specs second; a tuple of ints is argnums)."""
    # (any/all are quabla's here: the builtins by name)
    if len(args) > 3 or _builtins.any(k in kwargs for k in ("function", "input_specs", "values", "output_cotangent")):
        return True
    if len(args) >= 2:
        second = args[1]
        return isinstance(second, list) or (isinstance(second, tuple) and not _builtins.all(
            isinstance(a, int) and not isinstance(a, bool) for a in second))
    return False


_grad, _jit_fn, _trace_numpy = grad, jit, trace


def _wraps(core):
    def deco(f):
        f.__name__, f.__qualname__, f.__doc__, f.__wrapped__ = core.__name__, core.__qualname__, core.__doc__, core
        f.__module__ = __name__
        return f
    return deco


@_wraps(_grad)
def grad(*args, **kwargs):  # noqa: F811
    if _is_legacy_grad_call(args, kwargs):
        return legacy.grad(*args, **kwargs)
    return _grad(*args, **kwargs)


@_wraps(_jit_fn)
def jit(*args, **kwargs):  # noqa: F811
    if "input_specs" in kwargs or (args and isinstance(args[0], (list, tuple))):
        return legacy.jit(*args, **kwargs)
    return _jit_fn(*args, **kwargs)


@_wraps(_trace_numpy)
def trace(*args, **kwargs):  # noqa: F811
    if (args and callable(args[0])) or "function" in kwargs or "input_specs" in kwargs:
        import warnings
        if "trace" not in _compat._warned:
            _compat._warned.add("trace")
            warnings.warn("quabla.trace(function, input_specs) is deprecated; use quabla.legacy.trace (the 2D API) "
                          "or qb.Compiler().trace(function, specs). The old form remains available through 0.x.",
                          DeprecationWarning, stacklevel=2)
        return legacy.trace(*args, **kwargs)
    return _trace_numpy(*args, **kwargs)


_where_core, _concat_core, _concatenate_core = where, concat, concatenate
_LEGACY_2D = (legacy.Matrix, legacy.TraceMatrix)


_stack_core, _einsum_core = stack, einsum
# Operand types that go straight to the core: the v0.1 dispatch below costs the common
# eager call nothing but these type lookups.
_PLAIN = frozenset({Array, float, int, bool})


def _plain(items) -> bool:
    for m in items:
        if type(m) not in _PLAIN:
            return False
    return True


@_wraps(_where_core)
def where(condition, x=None, y=None, *, size=None, fill_value=None):  # noqa: F811
    """where(condition, x, y): x where condition holds, else y (broadcast); where(condition)
    alone is nonzero(condition) (with size= and fill_value= under jit). Three quabla.legacy
    Matrix (or TraceMatrix) operands take v0.1's 2D where; v0.1 trace values (trace_tensor)
    record a traced where."""
    if type(condition) in _PLAIN and type(x) in _PLAIN and type(y) in _PLAIN:
        return _where_core(condition, x, y)
    if x is None or y is None or size is not None or fill_value is not None:
        return _where_core(condition, x, y, size=size, fill_value=fill_value)
    if isinstance(condition, _LEGACY_2D) or isinstance(x, _LEGACY_2D) or isinstance(y, _LEGACY_2D):
        return legacy.where(condition, x, y)
    if _compat.has_trace_values((condition, x, y)):
        return _compat.TraceTensorValue.lift(_where_core, condition, x, y)
    return _where_core(condition, x, y)


def _concat_dispatch(core):
    @_wraps(core)
    def join(arrays, axis=0, dtype=None):
        if axis is None:  # NumPy's axis=None: the arrays flattened, then joined
            arrays, axis = [reshape(asarray(a), (-1,)) for a in arrays], 0
        if dtype is not None:
            arrays = [asarray(a).astype(dtype) for a in arrays]
        items = arrays if isinstance(arrays, (list, tuple)) else None
        if items and _builtins.all(isinstance(k, random.Key) for k in items):  # key arrays: their words
            return random._join_keys(items, axis, stack=False)
        if items is None or _plain(items):
            return core(arrays, axis=axis)
        if items and _builtins.any(isinstance(m, _LEGACY_2D) for m in items):
            if not (_builtins.all(isinstance(m, legacy.Matrix) for m in items) or
                    _builtins.all(isinstance(m, legacy.TraceMatrix) for m in items)):
                raise TypeError(f"{core.__name__} expects a sequence containing only Matrix, Tensor, TraceMatrix, or "
                                f"TraceTensor operands (one kind at a time)")
            return legacy.concat(items, axis)
        if items and _compat.has_trace_values(items):
            return _compat.TraceTensorValue.lift(lambda xs: core(xs, axis=axis), list(items))
        return core(arrays, axis=axis)
    return join


concat = _concat_dispatch(_concat_core)  # noqa: F811
concatenate = _concat_dispatch(_concatenate_core)  # noqa: F811


@_wraps(_stack_core)
def stack(arrays, axis=0, out=None, dtype=None):  # noqa: F811
    if isinstance(arrays, (list, tuple)) and arrays and _builtins.all(isinstance(k, random.Key) for k in arrays):
        return random._join_keys(arrays, axis, stack=True)
    if out is not None:
        raise TypeError("stack: out= is not supported (arrays are immutable); use the result")
    if dtype is not None:  # as jnp.stack: the arrays are cast first
        arrays = [asarray(a).astype(dtype) for a in arrays]
    if isinstance(arrays, (list, tuple)) and not _plain(arrays) and _compat.has_trace_values(arrays):
        return _compat.TraceTensorValue.lift(lambda xs: _stack_core(xs, axis=axis), list(arrays))
    return _stack_core(arrays, axis=axis)


@_wraps(_einsum_core)
def einsum(subscripts, *operands, **kwargs):  # noqa: F811
    # v0.1's einsum(equation, [a, b]): one list of operands.
    if isinstance(subscripts, str) and len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    # jax.numpy's contraction-order and precision hints: the core picks its own order.
    for hint in ("optimize", "precision", "_dot_general"):
        kwargs.pop(hint, None)
    out_type = kwargs.pop("preferred_element_type", None)
    out = _einsum_core(subscripts, *operands, **kwargs)
    return out if out_type is None else out.astype(out_type)


_NUMPY_ABSTRACT_TYPES = _numpy_more._ABSTRACT


def __getattr__(name):
    if name in _NUMPY_ABSTRACT_TYPES:  # NumPy's scalar type hierarchy, for qb.issubdtype(d, qb.floating)
        return getattr(_numpy_more, name)
    # jnp.bool (a global of that name would shadow the builtin in this module's own code) and
    # jax.float0 (a NumPy dtype: made on first use, so that importing quabla needs no NumPy).
    if name == "bool":
        return bool_
    if name == "float0":
        return _numpy_breadth._float0()
    if name in ("distributed", "numpy", "scipy"):  # imported on first use (distributed needs NumPy and mpi4py)
        import importlib
        return importlib.import_module("." + name, __name__)
    if name in _compat.DEPRECATED or name in _compat.LEGACY:
        return _compat.deprecated(name)
    raise AttributeError(f"module 'quabla' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_compat.migrated_names()) | {"distributed", "numpy", "scipy"} |
                  set(_NUMPY_ABSTRACT_TYPES))


__all__ = sorted({n for n in globals() if not n.startswith("_")} | set(_compat.migrated_names()))

__version__ = "0.1.0"
