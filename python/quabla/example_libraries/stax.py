"""quabla.example_libraries.stax: jax.example_libraries.stax for Quabla, a small library of
neural-network layers.

A layer is a pair of functions ``(init_fun, apply_fun)``:

- ``init_fun(rng, input_shape)`` takes a PRNG key (``qb.random.key(seed)`` or
  ``qb.random.PRNGKey(seed)``) and the input shape (a tuple; a batch dimension may be -1)
  and returns ``(output_shape, params)``;
- ``apply_fun(params, inputs, **kwargs)`` applies the layer. Layers that use randomness
  (Dropout) take a key as ``rng=``; the combinators pass keyword arguments on to every
  layer, splitting ``rng`` among them.

Layer constructors are CamelCase (``Dense(64)``, ``Conv(32, (3, 3))``); the parameterless
layers are pairs already (``Tanh``, ``Relu``, ``Flatten``, ``Identity``, ``FanInSum``).
Combinators build layers from layers: ``serial``, ``parallel`` and ``shape_dependent``.

For the same key the initial parameters are jax.example_libraries.stax's (its key
splitting and its initializers: glorot-normal weights and normal(1e-2) biases for Dense),
in float64 when x64 is on (Quabla's default) and in float32 otherwise.
"""
from __future__ import annotations

import functools
import math
import numbers

from .. import lax as _lax
from .. import random as _random
from .._package import qb
from ..nn import (relu, log_softmax, softmax, softplus, sigmoid, elu,  # noqa: F401  (re-exported, as stax's)
                  leaky_relu, selu, gelu, standardize)
from ..nn import initializers as _initializers

__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose", "ConvTranspose",
           "BatchNorm", "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid",
           "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut",
           "FanInSum", "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent", "glorot", "randn",
           "logsoftmax", "glorot_normal", "normal", "ones", "zeros"]

# The names older code uses for the initializers and log_softmax (as jax's stax defines them).
# The initializers stax's layers use by default (re-exported under these names, as stax's).
glorot_normal = _initializers.glorot_normal
normal = _initializers.normal
ones = _initializers.ones
zeros = _initializers.zeros

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# ---------------------------------------------------------------------------------------------
# Argument checks (clear errors at construction time rather than deep inside a trace).
# ---------------------------------------------------------------------------------------------

def _positive_int(value, name, who):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{who}: {name} must be a positive integer, got {value!r}")
    return int(value)


def _shape_tuple(input_shape, who):
    """The input shape as a tuple of ints (a list is accepted too)."""
    if isinstance(input_shape, (tuple, list)) and all(
            isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in input_shape):
        return tuple(int(d) for d in input_shape)
    raise TypeError(f"{who}: input_shape must be a tuple of ints (use -1 for a batch dimension to be decided "
                    f"later), got {input_shape!r}")


def _check_layer(layer, position, who):
    if not (isinstance(layer, tuple) and len(layer) == 2 and callable(layer[0]) and callable(layer[1])):
        hint = " (did you pass a layer constructor such as Dense instead of Dense(n), or FanOut for FanOut(n)?)" \
            if callable(layer) else ""
        raise TypeError(f"{who}: argument {position} must be a layer, an (init_fun, apply_fun) pair, got "
                        f"{type(layer).__name__}{hint}")


# ---------------------------------------------------------------------------------------------
# Layers with parameters.
# ---------------------------------------------------------------------------------------------

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A dense (fully connected) layer: ``inputs @ W + b`` with W of shape
    ``(input_shape[-1], out_dim)`` (initialized by ``W_init``, glorot normal) and b of shape
    ``(out_dim,)`` (``b_init``, normal with stddev 1e-2)."""
    out_dim = _positive_int(out_dim, "out_dim", "Dense")

    def init_fun(rng, input_shape):
        input_shape = _shape_tuple(input_shape, "Dense")
        if not input_shape:
            raise ValueError("Dense: the input must have at least one dimension (its features)")
        if input_shape[-1] < 1:
            raise ValueError(f"Dense: the feature dimension (the last of input_shape) must be a positive integer, "
                             f"got input_shape {input_shape}")
        output_shape = input_shape[:-1] + (out_dim,)
        k1, k2 = _random.split(rng)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return qb.dot(inputs, W) + b

    return init_fun, apply_fun


def _check_dimension_numbers(dimension_numbers, filter_shape, who):
    if not (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
            and all(isinstance(s, str) for s in dimension_numbers)):
        raise TypeError(f"{who}: dimension_numbers must be three strings (lhs, rhs, out), e.g. "
                        f"('NHWC', 'HWIO', 'NHWC'), got {dimension_numbers!r}")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if not (len(lhs_spec) == len(rhs_spec) == len(out_spec)) or 'I' not in rhs_spec or 'O' not in rhs_spec \
            or 'C' not in lhs_spec or 'C' not in out_spec:
        raise ValueError(f"{who}: dimension_numbers {dimension_numbers!r} must be three specs of one length, the "
                         f"rhs with 'I' and 'O', the lhs and out with 'C'")
    try:
        filter_shape = tuple(int(d) for d in filter_shape)
    except TypeError:
        raise TypeError(f"{who}: filter_shape must be a tuple of ints, got {filter_shape!r}") from None
    if len(filter_shape) != len(rhs_spec) - 2:
        raise ValueError(f"{who}: filter_shape {filter_shape} must have {len(rhs_spec) - 2} entries (one per "
                         f"spatial dimension of {rhs_spec!r})")
    if any(d < 1 for d in filter_shape):
        raise ValueError(f"{who}: filter_shape entries must be positive integers, got {filter_shape}")
    return lhs_spec, rhs_spec, out_spec, filter_shape


def _conv_init(lhs_spec, rhs_spec, out_spec, out_chan, filter_shape, input_shape, W_init, b_init, rng,
               shape_tuple, strides, padding, dimension_numbers):
    """(output_shape, (W, b)) of a convolution layer: the kernel's shape follows rhs_spec
    (out_chan at 'O', the input's channels at 'I', the filter dimensions in order elsewhere),
    the bias is 1 everywhere but at the output's 'C'."""
    filters = iter(filter_shape)
    kernel_shape = [out_chan if c == 'O' else input_shape[lhs_spec.index('C')] if c == 'I' else next(filters)
                    for c in rhs_spec]
    output_shape = shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)
    bias_shape = [out_chan if c == 'C' else 1 for c in out_spec]
    k1, k2 = _random.split(rng)
    return tuple(output_shape), (W_init(k1, kernel_shape), b_init(k2, bias_shape))


def _conv_setup(dimension_numbers, out_chan, filter_shape, strides, W_init, who):
    """The checked arguments of a (transposed) convolution layer: the three layout specs,
    the filter shape, out_chan, unit strides/dilations, strides, the weight initializer
    (glorot normal over the kernel's 'I' and 'O' axes by default) and the layouts tuple."""
    lhs_spec, rhs_spec, out_spec, filter_shape = _check_dimension_numbers(dimension_numbers, filter_shape, who)
    out_chan = _positive_int(out_chan, "out_chan", who)
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else one
    W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))
    return lhs_spec, rhs_spec, out_spec, filter_shape, out_chan, one, strides, W_init, (lhs_spec, rhs_spec, out_spec)


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding='VALID', W_init=None,
                b_init=normal(1e-6)):
    """A general convolution layer (qb.lax.conv_general_dilated) with the layouts of
    ``dimension_numbers = (lhs_spec, rhs_spec, out_spec)``, ``out_chan`` output channels and a
    kernel of spatial shape ``filter_shape``; weights glorot normal over the kernel's 'I' and
    'O' axes unless ``W_init`` is given, bias normal with stddev 1e-6."""
    lhs_spec, rhs_spec, out_spec, filter_shape, out_chan, one, strides, W_init, dimension_numbers = _conv_setup(
        dimension_numbers, out_chan, filter_shape, strides, W_init, "GeneralConv")

    def init_fun(rng, input_shape):
        input_shape = _shape_tuple(input_shape, "GeneralConv")
        return _conv_init(lhs_spec, rhs_spec, out_spec, out_chan, filter_shape, input_shape, W_init, b_init, rng,
                          _lax.conv_general_shape_tuple, strides, padding, dimension_numbers)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                         dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ('NHWC', 'HWIO', 'NHWC'))
Conv.__doc__ = "A 2-d convolution layer on NHWC inputs with an HWIO kernel: GeneralConv(('NHWC', 'HWIO', 'NHWC'), ...)."


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None, padding='VALID', W_init=None,
                         b_init=normal(1e-6)):
    """A general transposed-convolution layer (qb.lax.conv_transpose); the arguments are
    GeneralConv's."""
    lhs_spec, rhs_spec, out_spec, filter_shape, out_chan, one, strides, W_init, dimension_numbers = _conv_setup(
        dimension_numbers, out_chan, filter_shape, strides, W_init, "GeneralConvTranspose")

    def init_fun(rng, input_shape):
        input_shape = _shape_tuple(input_shape, "GeneralConvTranspose")
        return _conv_init(lhs_spec, rhs_spec, out_spec, out_chan, filter_shape, input_shape, W_init, b_init, rng,
                          _lax.conv_transpose_shape_tuple, strides, padding, dimension_numbers)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ('NHC', 'HIO', 'NHC'))
Conv1DTranspose.__doc__ = "A 1-d transposed convolution: GeneralConvTranspose(('NHC', 'HIO', 'NHC'), ...)."
ConvTranspose = functools.partial(GeneralConvTranspose, ('NHWC', 'HWIO', 'NHWC'))
ConvTranspose.__doc__ = "A 2-d transposed convolution: GeneralConvTranspose(('NHWC', 'HWIO', 'NHWC'), ...)."


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones):
    """Batch normalization: standardizes the inputs over ``axis`` (the batch statistics of
    each call; no running averages are kept) and, with ``scale`` / ``center``, multiplies by
    gamma and adds beta, both of the shape of the axes not in ``axis``."""
    axis = (int(axis),) if isinstance(axis, numbers.Integral) else tuple(int(a) for a in axis)

    def init_fun(rng, input_shape):
        input_shape = _shape_tuple(input_shape, "BatchNorm")
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = _random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # Index that puts the parameters' axes back among the normalized (size-1) axes.
        expand = tuple(None if i in axis else slice(None) for i in range(qb.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[expand] * z + beta[expand]
        if center:
            return z + beta[expand]
        if scale:
            return gamma[expand] * z
        return z

    return init_fun, apply_fun


# ---------------------------------------------------------------------------------------------
# Elementwise layers (no parameters).
# ---------------------------------------------------------------------------------------------

def elementwise(fun, **fun_kwargs):
    """A layer without parameters that applies ``fun(inputs, **fun_kwargs)``."""
    if not callable(fun):
        raise TypeError(f"elementwise: fun must be a function, got {type(fun).__name__}")

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(qb.tanh)
Relu = elementwise(relu)
Exp = elementwise(qb.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# ---------------------------------------------------------------------------------------------
# Pooling layers (qb.lax.reduce_window).
# ---------------------------------------------------------------------------------------------

def _with_unit_axes(window, strides, spec, n_spatial):
    """Window and strides over all axes: 1 at the batch and channel axes ('N' and 'C' of
    spec; the first and last axes without one)."""
    if spec is None:
        non_spatial = (0, n_spatial + 1)
    else:
        non_spatial = (spec.index('N'), spec.index('C'))
    window, strides = list(window), list(strides)
    for i in sorted(non_spatial):
        window.insert(i, 1)
        strides.insert(i, 1)
    return tuple(window), tuple(strides), non_spatial


def _pooling_layer(name, reducer, init_val, average=False):
    def PoolingLayer(window_shape, strides=None, padding='VALID', spec=None):
        window_shape = tuple(_positive_int(d, "window_shape entries", name) for d in window_shape)
        strides = tuple(strides) if strides else (1,) * len(window_shape)
        if len(strides) != len(window_shape):
            raise ValueError(f"{name}: strides {strides} must have one entry per window dimension "
                             f"{window_shape}")
        if spec is not None and ('N' not in spec or 'C' not in spec or len(spec) != len(window_shape) + 2):
            raise ValueError(f"{name}: spec {spec!r} must name the 'N' and 'C' axes and have "
                             f"{len(window_shape) + 2} letters")
        spatial_window, spatial_strides = window_shape, strides
        full_window, full_strides, non_spatial = _with_unit_axes(window_shape, strides, spec, len(window_shape))

        def init_fun(rng, input_shape):
            input_shape = _shape_tuple(input_shape, name)
            pads = _lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
            unit = (1,) * len(full_window)
            out_shape = _lax.reduce_window_shape_tuple(input_shape, full_window, full_strides, pads, unit, unit)
            return tuple(out_shape), ()

        def apply_fun(params, inputs, **kwargs):
            out = _lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
            if not average:
                return out
            # AvgPool: divide by the number of inputs each window covered (fewer at padded edges).
            spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
            counts = _lax.reduce_window(qb.ones(spatial_shape, dtype=inputs.dtype), 0.0, _lax.add,
                                        spatial_window, spatial_strides, padding)
            for i in sorted(non_spatial):
                counts = qb.expand_dims(counts, i)
            return out / counts

        return init_fun, apply_fun

    PoolingLayer.__name__ = name
    PoolingLayer.__doc__ = (f"A {name} layer over windows of spatial shape window_shape (with strides, padding "
                            f"'VALID' / 'SAME' / explicit pairs, and spec naming the 'N' and 'C' axes; by default "
                            f"the first and last).")
    return PoolingLayer


MaxPool = _pooling_layer("MaxPool", _lax.max, -math.inf)
SumPool = _pooling_layer("SumPool", _lax.add, 0.0)
AvgPool = _pooling_layer("AvgPool", _lax.add, 0.0, average=True)


# ---------------------------------------------------------------------------------------------
# Shape and plumbing layers.
# ---------------------------------------------------------------------------------------------

def _flatten_layer():
    """Flattens every dimension but the leading (batch) one."""
    def init_fun(rng, input_shape):
        input_shape = _shape_tuple(input_shape, "Flatten")
        if not input_shape:
            raise ValueError("Flatten: the input must have a leading (batch) dimension")
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return qb.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten_layer()


def _identity_layer():
    """Returns its inputs."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs

    return init_fun, apply_fun


Identity = _identity_layer()


def FanOut(num):
    """A layer that passes its input on ``num`` times, as a list (to feed ``parallel``)."""
    num = _positive_int(num, "num", "FanOut")

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum_layer():
    """Sums a sequence of inputs of one shape."""
    def init_fun(rng, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not input_shape \
                or not isinstance(input_shape[0], (list, tuple)):
            raise TypeError(f"FanInSum: expects a sequence of input shapes (e.g. after parallel), got "
                            f"{input_shape!r}")
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum_layer()


def FanInConcat(axis=-1):
    """A layer that concatenates a sequence of inputs along ``axis``."""
    def init_fun(rng, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not input_shape \
                or not isinstance(input_shape[0], (list, tuple)):
            raise TypeError(f"FanInConcat: expects a sequence of input shapes (e.g. after parallel), got "
                            f"{input_shape!r}")
        first = tuple(input_shape[0])
        ax = axis % len(first)
        size = sum(shape[ax] for shape in input_shape)
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return qb.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate, mode='train'):
    """Dropout, as jax's stax defines it: note that ``rate`` is the probability of KEEPING an
    element. In ``mode='train'`` each element is kept with probability ``rate`` and scaled by
    ``1 / rate`` (dropped elements are 0); in ``mode='test'`` the inputs pass unchanged. In
    both modes apply_fun must be called with a key, ``apply_fun(params, inputs, rng=key)``
    (serial and parallel split their ``rng`` among their layers)."""
    if mode not in ('train', 'test'):
        raise ValueError(f"Dropout: mode must be 'train' or 'test', got {mode!r}")
    if isinstance(rate, numbers.Number) and not isinstance(rate, bool) and not 0 < rate <= 1:
        raise ValueError(f"Dropout: rate is the probability of keeping an element (as in jax's stax) and must "
                         f"be in (0, 1], got {rate!r}")

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get('rng', None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key argument. That is, "
                             "instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, "
                             "rng=key)` where `key` is a PRNG key (e.g. from `qb.random.key`).")
        if mode == 'train':
            keep = _random.bernoulli(rng, rate, inputs.shape)
            return qb.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


# ---------------------------------------------------------------------------------------------
# Combinators.
# ---------------------------------------------------------------------------------------------

def _split_rng(rng, n):
    """n keys from rng for n layers, or n Nones when no key was given."""
    if rng is None or n == 0:
        return [None] * n
    return list(_random.split(rng, n))


def serial(*layers):
    """The composition of ``layers`` in order: a layer whose params are the list of the
    layers' params. init_fun splits its key once per layer (``rng, layer_rng = split(rng)``);
    apply_fun splits ``rng`` (when given) into one key per layer."""
    for k, layer in enumerate(layers):
        _check_layer(layer, k, "serial")
    init_funs = [layer[0] for layer in layers]
    apply_funs = [layer[1] for layer in layers]

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = _random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop('rng', None)
        if len(params) != len(apply_funs):
            raise ValueError(f"serial: got params for {len(params)} layers, but this serial has "
                             f"{len(apply_funs)}; pass the params its init_fun returned")
        for fun, param, layer_rng in zip(apply_funs, params, _split_rng(rng, len(apply_funs))):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side: a layer that takes a sequence of inputs (one per layer, e.g.
    from FanOut) and returns the list of the layers' outputs; its params are the tuple of the
    layers' params and its output shape the tuple of their output shapes."""
    for k, layer in enumerate(layers):
        _check_layer(layer, k, "parallel")
    init_funs = [layer[0] for layer in layers]
    apply_funs = [layer[1] for layer in layers]
    n = len(layers)

    def init_fun(rng, input_shape):
        if len(input_shape) != n:
            raise ValueError(f"parallel: expects {n} input shapes (one per layer), got {input_shape!r}")
        shapes, params = [], []
        for init, layer_rng, shape in zip(init_funs, _random.split(rng, n), input_shape):
            out_shape, param = init(layer_rng, shape)
            shapes.append(out_shape)
            params.append(param)
        return tuple(shapes), tuple(params)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop('rng', None)
        if len(inputs) != n or len(params) != n:
            raise ValueError(f"parallel: expects {n} inputs and {n} params (one per layer), got {len(inputs)} "
                             f"inputs and {len(params)} params")
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, _split_rng(rng, n))]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built when its input shape is known: ``make_layer(input_shape)`` returns an
    (init_fun, apply_fun) pair; init_fun calls it with the input shape it is given, apply_fun
    with ``inputs.shape``."""
    if not callable(make_layer):
        raise TypeError(f"shape_dependent: make_layer must be a function of the input shape, got "
                        f"{type(make_layer).__name__}")

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
