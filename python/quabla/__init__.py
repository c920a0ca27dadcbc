"""Quabla: differentiable scientific computing for physics-informed neural networks.

``import quabla as qb``. Arrays and math run on a C++20 core (``quabla._core``); this
package adds the thin Python layer: NumPy export, compositions such as meshgrid, errors.
"""
from ._loader import preload_blas as _preload_blas

_preload_blas()

from . import _core  # noqa: E402
from ._core import (  # noqa: E402,F401
    Array, DType, float32, float64, bool_, int32, int64,
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
from .errors import QuablaError, TracerError, UnsupportedOperationError, RetraceWarning  # noqa: E402,F401
from ._shapes import meshgrid  # noqa: E402,F401
from ._numpy_extra import (  # noqa: E402,F401
    moveaxis, swapaxes, roll, tile, repeat, diagonal, diag, trace, outer, inner, tensordot, kron, cross, diff,
    gradient, trapezoid, interp, polyval, vander, identity, pad, einsum, cumprod, cummax, cummin,
)
from ._indexing import (  # noqa: E402,F401
    take, take_along_axis, argsort, sort, argmax, argmin, searchsorted, nonzero, flatnonzero, argwhere, unique,
)
from . import lax  # noqa: E402,F401
from ._constructors import array, asarray, default_dtype, set_default_dtype  # noqa: E402,F401
from . import _array_methods  # noqa: E402
from . import tree  # noqa: E402,F401
from ._jit import jit, ShapeDtype  # noqa: E402,F401
from ._ad import grad, value_and_grad, jvp, vjp, jacfwd, jacrev, jacobian, hessian, hvp  # noqa: E402,F401
from ._vmap import vmap  # noqa: E402,F401
from ._taylor import laplacian, taylor  # noqa: E402,F401
from ._control import cond, fori_loop, scan, while_loop  # noqa: E402,F401
from ._custom import custom_jvp, custom_vjp, checkpoint, remat, checkpoint_policies, stop_gradient  # noqa: E402,F401,F811
from ._implicit import custom_linear_solve, custom_root, newton  # noqa: E402,F401
from . import custom_derivatives  # noqa: E402,F401
from . import optim  # noqa: E402,F401
from . import random  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
from . import ode  # noqa: E402,F401
from .optim import Trainer  # noqa: E402,F401
from .io import save, load  # noqa: E402,F401

_array_methods.install()


def devices():
    """The targets this build can compile for."""
    return ["cpu"]

__version__ = "0.1.0"
