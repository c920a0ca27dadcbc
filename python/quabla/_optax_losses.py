"""quabla.optax.losses: optax's loss functions (optax.losses.<name>), written with quabla's
array functions, so they are differentiable, batchable and jittable. Every one is also
available as quabla.optax.<name>, as in optax.

Each loss is written from the formula optax documents; where optax's numbers follow a
particular convention (which axes a reduction covers, where an epsilon sits), the function
follows it so ported code gets the same values, and says so in its docstring.
Not available: ctc_loss, ctc_loss_with_forward_probs and make_fenchel_young_loss."""
from __future__ import annotations

import math
from typing import Optional

from . import _core
from ._package import qb as _qb

__all__ = ["l2_loss", "squared_error", "huber_loss", "log_cosh", "softmax_cross_entropy",
           "softmax_cross_entropy_with_integer_labels", "sigmoid_binary_cross_entropy", "cosine_similarity",
           "cosine_distance", "kl_divergence", "kl_divergence_with_log_targets", "convex_kl_divergence",
           "generalized_kl_divergence", "hinge_loss", "multiclass_hinge_loss", "perceptron_loss",
           "multiclass_perceptron_loss", "sigmoid_focal_loss", "smooth_labels", "poly_loss_cross_entropy",
           "safe_softmax_cross_entropy", "triplet_margin_loss", "dice_loss", "binary_dice_loss",
           "multiclass_generalized_dice_loss", "ntxent", "sparsemax_loss", "multiclass_sparsemax_loss",
           "ranking_softmax_loss"]

_NOT_SUPPORTED = ("ctc_loss", "ctc_loss_with_forward_probs", "make_fenchel_young_loss")


def __getattr__(name):
    # A clear message for optax's losses that have no quabla counterpart (hasattr stays False).
    if name in _NOT_SUPPORTED:
        raise AttributeError(f"quabla.optax.losses.{name} is not supported (optax.losses.{name} has no quabla "
                             f"counterpart yet); compute this loss another way or keep it in JAX")
    raise AttributeError(f"module 'quabla.optax.losses' has no attribute {name!r}")


def _float(x):
    a = _core.asarray(x)
    return a if a.dtype in (_core.float32, _core.float64) else a.astype(_qb.default_dtype())


def _like(x, ref):
    return _core.asarray(x).astype(ref.dtype)


def _masked(terms, where):
    # terms where `where` holds, 0 elsewhere (optax's reductions with where=)
    return terms if where is None else _core.where(_core.asarray(where), terms, _core.zeros_like(terms))


def _pick(x, labels, axis=-1):
    # x[..., labels[...], ...] along axis: one entry per integer label
    axis = axis % x.ndim
    idx = _core.expand_dims(_core.asarray(labels), axis)
    return _core.squeeze(_qb.take_along_axis(x, idx, axis=axis), axis=axis)


# ---- regression ------------------------------------------------------------------------------

def _err(predictions, targets):
    p = _core.asarray(predictions)
    return p if targets is None else p - _core.asarray(targets).astype(p.dtype)


def l2_loss(predictions, targets=None):
    """0.5 (predictions - targets)^2, elementwise."""
    e = _err(predictions, targets)
    return 0.5 * e * e


def squared_error(predictions, targets=None):
    """(predictions - targets)^2, elementwise."""
    e = _err(predictions, targets)
    return e * e


def huber_loss(predictions, targets=None, *, delta: float = 1.0):
    """0.5 e^2 where |e| <= delta, delta (|e| - delta / 2) beyond, elementwise."""
    e = _err(predictions, targets)
    a = _core.abs(e)
    return _core.where(a <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))


def log_cosh(predictions, targets=None):
    """log(cosh(e)), without overflow, elementwise."""
    e = _err(predictions, targets)
    return _core.logaddexp(e, -e) - math.log(2.0)


def cosine_similarity(predictions, targets, epsilon: float = 0.0, *, axis=-1, where=None):
    """The cosine of the angle between predictions and targets along axis (each norm at
    least epsilon); where= restricts the sums to the marked entries."""
    p, t = _core.asarray(predictions), _core.asarray(targets)
    num = _core.sum(_masked(p * t, where), axis=axis)
    den = _core.sqrt(_core.maximum(_core.sum(_masked(p * p, where), axis=axis), epsilon * epsilon)) * \
        _core.sqrt(_core.maximum(_core.sum(_masked(t * t, where), axis=axis), epsilon * epsilon))
    return num / den


def cosine_distance(predictions, targets, epsilon: float = 0.0, *, axis=-1, where=None):
    return 1.0 - cosine_similarity(predictions, targets, epsilon, axis=axis, where=where)


# ---- classification --------------------------------------------------------------------------

def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """-sum(labels * log_softmax(logits)) over axis."""
    logits = _core.asarray(logits)
    logp = _qb.nn.log_softmax(logits, axis=axis, where=where)
    return -_core.sum(_masked(_core.asarray(labels).astype(logp.dtype) * logp, where), axis=axis)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1):
    """logsumexp(logits) - logits[label] over axis, for integer class labels."""
    logits = _core.asarray(logits)
    return _core.logsumexp(logits, axis=axis % logits.ndim) - _pick(logits, labels, axis)


def safe_softmax_cross_entropy(logits, labels):
    """softmax_cross_entropy over the last axis, with labels * log_softmax(logits) taken as 0
    where labels is 0 (so -inf logits of zero-probability classes give no NaN)."""
    logits = _core.asarray(logits)
    logp = _qb.nn.log_softmax(logits, axis=-1)
    labels = _like(labels, logp)
    zero = labels == 0
    # the zero-label entries never touch log_softmax's value (which may be -inf), in the
    # value or in the gradient
    terms = _core.where(zero, _core.zeros_like(logp), labels * _core.where(zero, _core.zeros_like(logp), logp))
    return -_core.sum(terms, axis=-1)


def sigmoid_binary_cross_entropy(logits, labels):
    """-labels log sigmoid(logits) - (1 - labels) log sigmoid(-logits), elementwise."""
    logits = _core.asarray(logits)
    labels = _core.asarray(labels).astype(logits.dtype)
    return -labels * -_core.softplus(-logits) - (1.0 - labels) * -_core.softplus(logits)


def sigmoid_focal_loss(logits, labels, *, alpha: Optional[float] = None, gamma: float = 2.0):
    """Focal loss (optax.sigmoid_focal_loss), elementwise: the binary cross entropy times
    (1 - p_t)^gamma, p_t = p where labels is 1 and 1 - p where it is 0 (labels may be soft,
    in [0, 1]); with alpha, times alpha labels + (1 - alpha) (1 - labels). The modulating
    factor is exp(gamma log(1 - p_t)), with log(1 - p_t) from log-sigmoids, so large logits
    do not lose it to rounding."""
    logits = _float(logits)
    labels = _like(labels, logits)
    log_p, log_q = -_core.softplus(-logits), -_core.softplus(logits)  # log p, log (1 - p)
    ce = -(labels * log_p + (1.0 - labels) * log_q)
    # 1 - p_t = labels (1 - p) + (1 - labels) p, in log space; log(0) = -inf drops a term
    log_1m_pt = _core.logaddexp(_core.log(labels) + log_q, _core.log(1.0 - labels) + log_p)
    loss = ce * _core.exp(gamma * log_1m_pt)
    if alpha is not None:
        loss = (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss
    return loss


def smooth_labels(labels, alpha, *, axis=-1, where=None):
    """Label smoothing (optax.smooth_labels): (1 - alpha) labels + alpha / n, n the number of
    classes along axis (an int or a tuple), or with where= the number of marked entries
    there (every entry is smoothed, marked or not, as optax's)."""
    labels = _float(labels)
    if where is not None:
        n = _core.sum(_core.asarray(where).astype(labels.dtype), axis=axis, keepdims=True)
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        n = 1
        for a in axes:
            n *= labels.shape[a]
    return (1.0 - alpha) * labels + alpha / n


def poly_loss_cross_entropy(logits, labels, *, epsilon: float = 2.0, axis=-1, where=None):
    """PolyLoss (optax.poly_loss_cross_entropy): softmax_cross_entropy + epsilon *
    sum(labels * (1 - softmax(logits))) over axis (epsilon (1 - p_t) for one-hot labels;
    optax's form, which also holds for labels that do not sum to 1, or sum to 0)."""
    logits = _core.asarray(logits)
    labels_ = _like(labels, logits)
    p = _qb.nn.softmax(logits, axis=axis, where=where)
    poly = _core.sum(_masked(labels_ * (1.0 - p), where), axis=axis)
    return softmax_cross_entropy(logits, labels_, axis=axis, where=where) + epsilon * poly


def hinge_loss(predictor_outputs, targets):
    """max(0, 1 - predictor_outputs * targets), elementwise; targets in {-1, 1}."""
    s = _float(predictor_outputs)
    return _core.maximum(1.0 - s * _like(targets, s), 0.0)


def perceptron_loss(predictor_outputs, targets):
    """max(0, -predictor_outputs * targets), elementwise; targets in {-1, 1}."""
    s = _float(predictor_outputs)
    return _core.maximum(-s * _like(targets, s), 0.0)


def multiclass_hinge_loss(scores, labels):
    """max_j(scores_j + [j != label]) - scores_label over the last axis (integer labels)."""
    scores = _float(scores)
    off = 1.0 - _qb.nn.one_hot(labels, scores.shape[-1], dtype=scores.dtype)
    return _core.max(scores + off, axis=-1) - _pick(scores, labels)


def multiclass_perceptron_loss(scores, labels):
    """max_j scores_j - scores_label over the last axis (integer labels)."""
    scores = _float(scores)
    return _core.max(scores, axis=-1) - _pick(scores, labels)


def _sparsemax(scores):
    # The Euclidean projection of scores onto the simplex along the last axis: max(s - tau, 0),
    # tau fixed by the k largest scores with 1 + k s_(k) > sum of the k largest.
    srt = -_qb.sort(-scores, axis=-1)
    csum = _core.cumsum(srt, axis=-1)
    k = _core.arange(1, scores.shape[-1] + 1).astype(scores.dtype)
    support = _core.sum((1.0 + k * srt > csum).astype(_core.int32), axis=-1, keepdims=True)
    tau = (_qb.take_along_axis(csum, support - 1, axis=-1) - 1.0) / support.astype(scores.dtype)
    return _core.maximum(scores - tau, 0.0)


def sparsemax_loss(logits, labels):
    """Binary sparsemax loss (optax.sparsemax_loss), elementwise: sparse_plus(logits) -
    labels * logits, zero exactly where sparse_sigmoid(logits) == labels (labels 0 or 1)."""
    logits = _float(logits)
    return _qb.nn.sparse_plus(logits) - _like(labels, logits) * logits


def multiclass_sparsemax_loss(scores, labels):
    """Multiclass sparsemax loss (optax.multiclass_sparsemax_loss) over the last axis, for
    integer labels: <p, s> - ||p||^2 / 2 - s_label + 1/2, p = sparsemax(s) (any leading batch
    shape; optax's takes one batch axis)."""
    scores = _float(scores)
    p = _sparsemax(scores)
    return _core.sum(p * (scores - 0.5 * p), axis=-1) - _pick(scores, labels) + 0.5


def _mean(x):
    """The mean of every entry (ranking_softmax_loss's default reduce_fn, as optax's jnp.mean)."""
    return _core.mean(x)


def ranking_softmax_loss(logits, labels, *, where=None, weights=None, reduce_fn=_mean):
    """Ranking softmax loss (optax.losses.ranking_softmax_loss): -sum_i y_i log softmax(s)_i
    over the last axis (the list), y = labels (times weights). where= drops items: their
    labels and their logits (from the softmax's normalization). reduce_fn (default the mean,
    as optax's jnp.mean; None keeps one loss per list) reduces the per-list losses."""
    logits = _float(logits)
    y = _like(labels, logits)
    if weights is not None:
        y = y * _like(weights, logits)
    valid = _core.ones(logits.shape, dtype=_core.bool_) if where is None else \
        _core.broadcast_to(_core.asarray(where), logits.shape)
    # a log-softmax over the valid items that stays finite everywhere (a list without valid
    # items gives 0, in the value and in the gradient)
    any_valid = _core.any(valid, axis=-1, keepdims=True)
    shift = _qb.stop_gradient(_core.where(any_valid, _core.max(_core.where(valid, logits, -math.inf), axis=-1,
                                                                  keepdims=True), 0.0))
    e = _core.where(valid, _core.exp(logits - shift), _core.zeros_like(logits))
    total = _core.sum(e, axis=-1, keepdims=True)
    logp = logits - shift - _core.log(_core.where(any_valid, total, _core.ones_like(total)))
    loss = -_core.sum(_core.where(valid & (y != 0), y * logp, _core.zeros_like(logp)), axis=-1)
    return loss if reduce_fn is None else reduce_fn(loss)


# ---- divergences -----------------------------------------------------------------------------

def _xlogx_minus_xlogq(targets, log_predictions):
    # targets * (log targets - log_predictions), 0 where targets is 0 (0 log 0 = 0)
    zero = targets == 0
    safe_t = _core.where(zero, _core.ones_like(targets), targets)
    return _core.where(zero, _core.zeros_like(targets), targets * (_core.log(safe_t) - log_predictions))


def kl_divergence(log_predictions, targets, axis=-1, where=None):
    """KL(targets || predictions) = sum(targets (log targets - log_predictions)) over axis,
    with 0 log 0 = 0; predictions are given as log-probabilities."""
    lp = _float(log_predictions)
    return _core.sum(_masked(_xlogx_minus_xlogq(_like(targets, lp), lp), where), axis=axis)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """kl_divergence with the targets also given as log-probabilities:
    sum(exp(log_targets) (log_targets - log_predictions)) over axis."""
    lp = _float(log_predictions)
    lt = _like(log_targets, lp)
    return _core.sum(_masked(_core.exp(lt) * (lt - lp), where), axis=axis)


def convex_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """kl_divergence + sum(exp(log_predictions) - targets) over axis: convex in
    log_predictions, and defined for unnormalized distributions."""
    lp = _float(log_predictions)
    t = _like(targets, lp)
    return kl_divergence(lp, t, axis=axis, where=where) + _core.sum(_masked(_core.exp(lp) - t, where), axis=axis)


def generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """The generalized KL divergence (the Bregman divergence of x log x - x):
    sum(targets (log targets - log_predictions) - targets + exp(log_predictions)) over axis."""
    lp = _float(log_predictions)
    t = _like(targets, lp)
    return _core.sum(_masked(_xlogx_minus_xlogq(t, lp) - t + _core.exp(lp), where), axis=axis)


# ---- metric learning -------------------------------------------------------------------------

def triplet_margin_loss(anchors, positives, negatives, axis: int = -1, norm_degree=2, margin=1.0, eps=1e-6):
    """max(d(anchors, positives) - d(anchors, negatives) + margin, 0), d(x, y) =
    (sum((x - y)^norm_degree over axis) + eps)^(1 / norm_degree). As optax's, the differences
    are raised to norm_degree without an absolute value (an even degree, the default 2, is
    the usual norm; an odd one can give NaN)."""
    a = _float(anchors)
    p, n = _like(positives, a), _like(negatives, a)

    def dist(x, y):
        return _core.power(_core.sum(_core.power(x - y, norm_degree), axis=axis) + eps, 1.0 / norm_degree)
    return _core.maximum(dist(a, p) - dist(a, n) + margin, 0.0)


def ntxent(embeddings, labels, temperature=0.07):
    """NT-Xent (optax.ntxent), a scalar: for each positive pair (i, j), i != j with equal
    labels, -log(exp(s_ij) / (exp(s_ij) + sum over i's negatives k of exp(s_ik))), s the
    cosine similarities over temperature; averaged over the positive pairs (NaN when
    there are none). embeddings: [batch, features]; labels: [batch]."""
    e = _float(embeddings)
    if e.ndim != 2:
        raise ValueError(f"optax.ntxent: embeddings must be [batch, features], got shape {tuple(e.shape)}")
    labels = _core.asarray(labels)
    unit = e / _core.sqrt(_core.sum(e * e, axis=-1, keepdims=True))
    s = _core.matmul(unit, _core.transpose(unit)) / temperature
    same = _core.expand_dims(labels, 1) == _core.expand_dims(labels, 0)
    eye = _core.eye(e.shape[0]).astype(_core.bool_)
    positive, negative = same & ~eye, ~same
    # shifted by each row's largest similarity (|s| <= 1 / temperature), so exp stays finite
    shift = _qb.stop_gradient(_core.max(s, axis=-1, keepdims=True))
    z = s - shift
    neg_sum = _core.sum(_core.where(negative, _core.exp(z), _core.zeros_like(z)), axis=-1, keepdims=True)
    terms = _core.log(_core.exp(z) + neg_sum) - z
    pairs = _core.sum(positive.astype(e.dtype))
    return _core.sum(_core.where(positive, terms, _core.zeros_like(terms))) / pairs


# ---- segmentation ----------------------------------------------------------------------------

def dice_loss(predictions, targets, *, class_weights=None, smooth=1.0, alpha=0.5, beta=0.5, apply_softmax=True,
              reduction: str = "mean", ignore_background: bool = False, axis=None):
    """Soft Dice / Tversky loss (optax.losses.dice_loss), per class c:
    1 - (I_c + smooth) / (I_c + alpha (P_c - I_c) + beta (T_c - I_c) + smooth), I_c = sum(p t),
    P_c = sum(p), T_c = sum(t) over axis (default: every axis but the first and the last),
    then reduced over the classes (the last axis): "mean" (of the class_weights-weighted
    losses), "sum" or "none". predictions are logits (softmax over classes; sigmoid when
    there is one class) unless apply_softmax=False; targets are one-hot."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"optax.losses.dice_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    p = _float(predictions)
    t = _like(targets, p)
    if p.ndim == 0:
        raise ValueError("optax.losses.dice_loss: predictions must have a class axis (the last), got a scalar")
    if apply_softmax:
        p = _core.sigmoid(p) if p.shape[-1] == 1 else _qb.nn.softmax(p, axis=-1)
    if axis is None:
        axes = tuple(range(1, p.ndim - 1))
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
    inter = _core.sum(p * t, axis=axes)
    p_sum, t_sum = _core.sum(p, axis=axes), _core.sum(t, axis=axes)
    loss = 1.0 - (inter + smooth) / (inter + alpha * (p_sum - inter) + beta * (t_sum - inter) + smooth)
    w = None if class_weights is None else _like(class_weights, p)
    if ignore_background:
        loss = loss[..., 1:]
        w = None if w is None else w[1:]
    if w is not None:
        loss = loss * w
    if reduction == "mean":
        return _core.mean(loss, axis=-1)
    if reduction == "sum":
        return _core.sum(loss, axis=-1)
    return loss


def binary_dice_loss(predictions, targets, *, smooth=1.0, apply_sigmoid: bool = True):
    """dice_loss for one class: predictions (logits, or probabilities with
    apply_sigmoid=False) and targets of shape [...] or [..., 1]; a trailing axis of size 1 is
    added where the last one is not."""
    p, t = _float(predictions), _core.asarray(targets)
    if p.ndim == 0 or p.shape[-1] != 1:
        p, t = _core.expand_dims(p, -1), _core.expand_dims(t, -1)
    return dice_loss(p, t, smooth=smooth, apply_softmax=apply_sigmoid)


def multiclass_generalized_dice_loss(predictions, targets, *, smooth=1.0, apply_softmax: bool = True,
                                     ignore_background: bool = False):
    """Generalized Dice loss (optax.losses.multiclass_generalized_dice_loss), a scalar: the
    mean over batch and classes of dice_loss with class weights 1 / (T_c^2 + 1e-7), T_c the
    class's target sum over every axis but the last, normalized to sum to the number of
    classes (as optax's; with ignore_background, class 0 is dropped after weighting)."""
    p = _float(predictions)
    t = _like(targets, p)
    t_sum = _core.sum(t, axis=tuple(range(t.ndim - 1)))
    w = 1.0 / (t_sum * t_sum + 1e-7)
    w = w / _core.sum(w) * t.shape[-1]
    return _core.mean(dice_loss(p, t, class_weights=w, smooth=smooth, apply_softmax=apply_softmax,
                                ignore_background=ignore_background))
