"""jax.lax's convolutions and window reductions as compositions of the core ops: the input
is padded (interior padding for lhs dilation, then the edge padding), every kernel offset
takes one strided slice, and the slices are contracted with the kernel in one einsum (or
reduced elementwise for reduce_window). So they jit, vmap and differentiate with respect to
both operands on every backend; a k-tap kernel reads its input k times (an im2col), which
suits the small kernels of PDE stencils and surrogate models."""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple, Sequence

from ._package import qb as _qb

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated", "conv",
           "conv_with_general_padding", "reduce_window"]


class ConvDimensionNumbers(NamedTuple):
    lhs_spec: tuple  # (batch axis, feature axis, spatial axes...)
    rhs_spec: tuple  # (out feature axis, in feature axis, spatial axes...)
    out_spec: tuple  # (batch axis, feature axis, spatial axes...)


def _spec_from_string(spec: str, first: str, second: str, name: str):
    if not isinstance(spec, str) or len(set(spec)) != len(spec) or first not in spec or second not in spec:
        raise ValueError(f"conv: invalid {name} layout {spec!r} (expected e.g. 'NCHW', 'OIHW', 'NHWC', 'HWIO')")
    spatial = [c for c in spec if c not in (first, second)]
    return spec.index(first), spec.index(second), spatial


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """jax.lax.conv_dimension_numbers: axis indices from layout strings (or None: NC..., OI...)."""
    nd = len(lhs_shape)
    if dimension_numbers is None:
        default = tuple(range(nd))
        return ConvDimensionNumbers(default, default, default)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    lhs, rhs, out = dimension_numbers
    if len(lhs) != nd or len(rhs) != len(rhs_shape) or len(out) != nd:
        raise ValueError(f"conv: layouts {dimension_numbers} do not match operands of rank {nd} and "
                         f"{len(rhs_shape)}")
    ln, lc, lsp = _spec_from_string(lhs, "N", "C", "lhs")
    ro, ri, rsp = _spec_from_string(rhs, "O", "I", "rhs")
    on, oc, osp = _spec_from_string(out, "N", "C", "out")
    # Spatial axes are matched by their letters in the rhs spec's order (as JAX does).
    if sorted(lsp) != sorted(rsp) or sorted(osp) != sorted(rsp):
        raise ValueError(f"conv: the spatial letters of {dimension_numbers} must agree")
    return ConvDimensionNumbers((ln, lc) + tuple(lhs.index(c) for c in rsp),
                                (ro, ri) + tuple(rhs.index(c) for c in rsp),
                                (on, oc) + tuple(out.index(c) for c in rsp))


def _ints(v, n, name):
    if v is None:
        return (1,) * n
    v = (v,) * n if isinstance(v, int) else tuple(int(x) for x in v)
    if len(v) != n or any(x < 1 for x in v):
        raise ValueError(f"conv: {name} must be {n} positive ints, got {v}")
    return v


def _padding(padding, sizes, kernel, strides, name):
    """(low, high) per spatial axis for 'VALID', 'SAME', 'SAME_LOWER' or explicit pairs."""
    n = len(sizes)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [(0, 0)] * n
        if mode not in ("SAME", "SAME_LOWER"):
            raise ValueError(f"{name}: padding must be 'VALID', 'SAME', 'SAME_LOWER' or (low, high) pairs, got "
                             f"{padding!r}")
        pads = []
        for size, k, s in zip(sizes, kernel, strides):
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            low = total // 2 if mode == "SAME" else total - total // 2
            pads.append((low, total - low))
        return pads
    pads = [tuple(int(x) for x in p) for p in padding]
    if len(pads) != n or any(len(p) != 2 for p in pads):
        raise ValueError(f"{name}: padding needs one (low, high) pair per spatial axis ({n}), got {padding!r}")
    return pads


def _windows(x, first_spatial, kernel, strides, dilation):
    """The strided slices of x (spatial axes from first_spatial on) at every kernel offset:
    a list in row-major kernel order, each of the output's spatial shape."""
    sizes = tuple(x.shape[first_spatial:])
    outs = []
    for size, k, s, d in zip(sizes, kernel, strides, dilation):
        span = (k - 1) * d + 1
        if size < span:
            raise ValueError(f"conv: a window of {span} (kernel {k}, dilation {d}) is larger than the padded input "
                             f"({size})")
        outs.append((size - span) // s + 1)
    pieces = []
    lead = (slice(None),) * first_spatial
    for offset in itertools.product(*(range(k) for k in kernel)):
        index = tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, dilation, outs, strides))
        pieces.append(x[lead + index])
    return pieces, tuple(outs)


def _dilate_and_pad(x, first_spatial, pads, base_dilation, fill):
    config = [(0, 0, 0)] * first_spatial + [(lo, hi, d - 1) for (lo, hi), d in zip(pads, base_dilation)]
    if all(c == (0, 0, 0) for c in config):
        return x
    return _qb.lax.pad(x, _qb.asarray(fill).astype(x.dtype), config)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """jax.lax.conv_general_dilated: an N-d cross-correlation of lhs (batch, features,
    spatial...) with rhs (out features, in features / groups, spatial...), with strides,
    padding, input (lhs) and kernel (rhs) dilation, layouts and feature groups."""
    lhs, rhs = _qb.asarray(lhs), _qb.asarray(rhs)
    if lhs.ndim != rhs.ndim or lhs.ndim < 3:
        raise ValueError(f"conv_general_dilated: lhs and rhs need one rank of at least 3, got shapes "
                         f"{tuple(lhs.shape)} and {tuple(rhs.shape)}")
    if batch_group_count != 1:
        raise NotImplementedError("conv_general_dilated: batch_group_count > 1 is not supported")
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    x = _qb.transpose(lhs, dn.lhs_spec)   # N, C, spatial
    w = _qb.transpose(rhs, dn.rhs_spec)   # O, I, spatial
    nsp = x.ndim - 2
    groups = int(feature_group_count)
    c, o, i = x.shape[1], w.shape[0], w.shape[1]
    if groups < 1 or c % groups or o % groups or c // groups != i:
        raise ValueError(f"conv_general_dilated: {c} input features, kernel of {i} per group and "
                         f"feature_group_count={groups} do not agree (need C = groups * I and O divisible by groups)")
    strides = _ints(window_strides, nsp, "window_strides")
    base = _ints(lhs_dilation, nsp, "lhs_dilation")
    dil = _ints(rhs_dilation, nsp, "rhs_dilation")
    kernel = tuple(w.shape[2:])
    dilated = tuple((s - 1) * b + 1 for s, b in zip(x.shape[2:], base))
    pads = _padding(padding, dilated, tuple((k - 1) * d + 1 for k, d in zip(kernel, dil)), strides,
                    "conv_general_dilated")
    dtype = _qb.result_type(x, w)
    x = _dilate_and_pad(x.astype(dtype), 2, pads, base, 0)
    pieces, out_sizes = _windows(x, 2, kernel, strides, dil)
    patches = _qb.stack(pieces, axis=2)  # N, C, K, out spatial
    n = x.shape[0]
    ktot = math.prod(kernel)
    patches = patches.reshape((n, groups, c // groups, ktot) + out_sizes)
    w = w.astype(dtype).reshape((groups, o // groups, i, ktot))
    out = _qb.einsum("ngck...,gock->ngo...", patches, w).reshape((n, o) + out_sizes)
    inverse = [0] * out.ndim
    for pos, axis in enumerate(dn.out_spec):
        inverse[axis] = pos
    out = _qb.transpose(out, tuple(inverse))
    return out if preferred_element_type is None else out.astype(preferred_element_type)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """jax.lax.conv: conv_general_dilated with NC... / OI... layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)


def _monoid_reducer(computation):
    names = {"add": _qb.sum, "max": _qb.max, "min": _qb.min, "mul": _qb.prod}
    for name, fn in (("add", (_qb.add, _qb.lax.add)), ("max", (_qb.maximum, _qb.lax.max)),
                     ("min", (_qb.minimum, _qb.lax.min)), ("mul", (_qb.multiply, _qb.lax.mul))):
        if any(computation is f for f in fn):
            return names[name]
    return None


def reduce_window(operand, init_value, computation, window_dimensions: Sequence[int], window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
    """jax.lax.reduce_window: computation over every window of operand (padding filled
    with init_value). add, max, min and mul reduce the stacked windows at once; any other
    associative computation folds them pairwise."""
    x = _qb.asarray(operand)
    nd = x.ndim
    window = _ints(window_dimensions, nd, "window_dimensions")
    strides = _ints(window_strides, nd, "window_strides")
    base = _ints(base_dilation, nd, "base_dilation")
    dil = _ints(window_dilation, nd, "window_dilation")
    dilated = tuple((s - 1) * b + 1 for s, b in zip(x.shape, base))
    pads = _padding(padding, dilated, tuple((k - 1) * d + 1 for k, d in zip(window, dil)), strides, "reduce_window")
    init = _qb.asarray(init_value).astype(x.dtype)
    x = _dilate_and_pad(x, 0, pads, base, init)
    pieces, _ = _windows(x, 0, window, strides, dil)
    # The init value joins every window, as XLA's reduce_window defines it.
    pieces.append(_qb.broadcast_to(init, tuple(pieces[0].shape)))
    reducer = _monoid_reducer(computation)
    if reducer is not None:
        return reducer(_qb.stack(pieces), axis=0)
    out = pieces[0]
    for p in pieces[1:]:
        out = computation(out, p)
    return out
