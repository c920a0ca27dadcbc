"""jax.scipy.stats.gaussian_kde: a kernel density estimate with Gaussian kernels, as
scipy.stats.gaussian_kde (weighted data, Scott's or Silverman's bandwidth, a scalar or a
callable one), on Quabla's own ops: differentiable in the data and the points, usable inside
qb.jit (the estimator is a pytree), resampled with qb.random."""
from __future__ import annotations

import math

from .._package import qb as _qb
from . import special as _sp

_LOG_2PI = math.log(2.0 * math.pi)


def _is_complex(x):
    return _qb.issubdtype(_qb.asarray(x).dtype, _qb.complexfloating)


def _gauss_log_density(diff, cov):
    """log N(diff; 0, cov) summed over the first axis of diff (shape (d, ...)), for a (d, d)
    covariance: the quadratic form through the Cholesky factor of cov."""
    d = cov.shape[0]
    chol = _qb.linalg.cholesky(cov)
    flat = diff.reshape((d, -1))
    y = _qb.linalg.solve_triangular(chol, flat, lower=True)
    energy = 0.5 * _qb.sum(y * y, axis=0).reshape(tuple(diff.shape[1:]))
    log_det = 2.0 * _qb.sum(_qb.log(_qb.diagonal(chol)))
    return -energy - 0.5 * (d * _LOG_2PI + log_det)


@_qb.tree_util.register_pytree_node_class
class gaussian_kde:  # noqa: N801 (SciPy's and JAX's name)
    """Gaussian kernel density estimate of `dataset` (shape (d, n): n points in d dimensions;
    a 1-D array is n points on a line).

    bw_method: 'scott' (the default, neff^(-1/(d+4))), 'silverman'
    ((neff (d+2) / 4)^(-1/(d+4))), a scalar factor, or a callable taking the estimator and
    returning the factor. weights: one per point (normalised to sum 1). The kernel covariance
    is the weighted data covariance times factor^2. Attributes as JAX's: dataset, weights,
    neff, covariance, inv_cov, d, n (and SciPy's factor)."""

    def __init__(self, dataset, bw_method=None, weights=None):
        from .._numpy_names import common_float
        if _is_complex(dataset):
            raise NotImplementedError("gaussian_kde: complex data is not supported (as in JAX); pass real data")
        data = _qb.atleast_2d(_qb.asarray(dataset))
        if data.ndim != 2:
            raise ValueError(f"gaussian_kde: dataset must be 1-D (n points) or 2-D (d dimensions, n points), got "
                             f"shape {tuple(data.shape)}")
        if data.size <= 1:
            raise ValueError("gaussian_kde: dataset must have more than one element (n points, or a (d, n) array)")
        d, n = data.shape
        dtype = common_float(data) if weights is None else common_float(data, weights)
        data = data.astype(dtype)
        if weights is None:
            w = _qb.full((n,), 1.0 / n, dtype=dtype)
        else:
            if _is_complex(weights):
                raise ValueError("gaussian_kde: weights must be real")
            w = _qb.atleast_1d(_qb.asarray(weights)).astype(dtype)
            if w.ndim != 1:
                raise ValueError(f"gaussian_kde: weights must be one-dimensional, got shape {tuple(w.shape)}")
            if w.shape[0] != n:
                raise ValueError(f"gaussian_kde: weights must have one entry per point ({n}), got {w.shape[0]}")
            w = w / _qb.sum(w)
        self.dataset = data
        self.weights = w
        self.neff = 1.0 / _qb.sum(w * w)
        self.set_bandwidth(bw_method)

    # ---- pytree (so an estimator can be passed through qb.jit, qb.vmap, qb.grad) ----------

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov, self.factor), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov, kde.factor = children
        return kde

    @property
    def d(self):
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points."""
        return self.dataset.shape[1]

    def set_bandwidth(self, bw_method=None):
        """Sets the bandwidth factor (as in __init__) and recomputes the kernel covariance.
        (JAX's estimator is immutable and raises here; SciPy's updates itself, as this one.)"""
        d = self.d
        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            factor = self.neff ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str):
            raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a scalar or a callable, got "
                             f"{bw_method!r}")
        elif callable(bw_method):
            factor = _qb.asarray(bw_method(self))
        elif isinstance(bw_method, (int, float)) or getattr(bw_method, "ndim", None) == 0:
            factor = _qb.asarray(bw_method)
        else:
            raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a scalar or a callable, got "
                             f"{type(bw_method).__name__}")
        factor = _qb.asarray(factor).astype(self.dataset.dtype)
        if factor.ndim != 0:
            raise ValueError(f"gaussian_kde: the bandwidth factor must be a scalar, got shape {tuple(factor.shape)}")
        # The weighted covariance of the data, with the unbiased normalisation for normalised
        # (reliability) weights: sum w (x - m)(x - m)^T / (1 - sum w^2).
        w = self.weights
        mean = _qb.sum(self.dataset * w, axis=1, keepdims=True)
        centred = self.dataset - mean
        data_cov = (centred * w) @ centred.T / (1.0 - _qb.sum(w * w))
        self.factor = factor
        self.covariance = data_cov * factor ** 2
        self.inv_cov = _qb.linalg.inv(data_cov) / factor ** 2

    def covariance_factor(self):
        """The bandwidth factor (SciPy's method)."""
        return self.factor

    def _points(self, points):
        """points as a (d, m) array: a 1-D array is m points when d = 1, one point when its
        length is d."""
        if _is_complex(points):
            raise NotImplementedError("gaussian_kde: complex points are not supported (as in JAX)")
        pts = _qb.atleast_2d(_qb.asarray(points)).astype(self.dataset.dtype)
        if pts.ndim != 2:
            raise ValueError(f"gaussian_kde: points must be a (d, m) array, got shape {tuple(pts.shape)}")
        if pts.shape[0] != self.d:
            if pts.shape[0] == 1 and pts.shape[1] == self.d:
                return pts.reshape((self.d, 1))
            raise ValueError(f"gaussian_kde: points have dimension {pts.shape[0]}, the dataset has dimension "
                             f"{self.d}; pass a ({self.d}, m) array")
        return pts

    def _log_kernels(self, points):
        """log(w_i K(x_j - X_i)) for data point i and query point j, shape (n, m)."""
        pts = self._points(points)
        diff = pts[:, None, :] - self.dataset[:, :, None]  # (d, n, m)
        return _gauss_log_density(diff, self.covariance) + _qb.log(self.weights)[:, None]

    def evaluate(self, points):
        """The estimated density at points ((d, m) or as _points accepts), shape (m,)."""
        return _qb.sum(_qb.exp(self._log_kernels(points)), axis=0)

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        """The log of the estimated density, by log-sum-exp over the kernels (finite far out in
        the tails, where the density itself underflows)."""
        return _sp.logsumexp(self._log_kernels(x), axis=0)

    def integrate_box_1d(self, low, high):
        """The estimate's mass between low and high (1-D data only)."""
        if self.d != 1:
            raise ValueError(f"gaussian_kde.integrate_box_1d: the data must be 1-D, it has {self.d} dimensions")
        low, high = (_qb.asarray(v).astype(self.dataset.dtype) for v in (low, high))
        sigma = _qb.sqrt(self.covariance[0, 0])
        x = self.dataset[0]
        upper = _sp.ndtr((high[..., None] - x) / sigma)
        lower = _sp.ndtr((low[..., None] - x) / sigma)
        return _qb.sum(self.weights * (upper - lower), axis=-1)

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not available (as in JAX): it needs the multivariate normal CDF."""
        raise NotImplementedError("gaussian_kde.integrate_box is not implemented (as in JAX); for 1-D data use "
                                  "integrate_box_1d")

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the Gaussian N(mean, cov)."""
        mean = _qb.atleast_1d(_qb.asarray(mean)).astype(self.dataset.dtype)
        cov = _qb.atleast_2d(_qb.asarray(cov)).astype(self.dataset.dtype)
        if tuple(mean.shape) != (self.d,):
            raise ValueError(f"gaussian_kde.integrate_gaussian: mean must have shape ({self.d},), got "
                             f"{tuple(mean.shape)}")
        if tuple(cov.shape) != (self.d, self.d):
            raise ValueError(f"gaussian_kde.integrate_gaussian: cov must have shape ({self.d}, {self.d}), got "
                             f"{tuple(cov.shape)}")
        # Each kernel times N(mean, cov) integrates to N(X_i - mean; 0, covariance + cov).
        log_terms = _gauss_log_density(self.dataset - mean[:, None], self.covariance + cov)
        return _qb.sum(self.weights * _qb.exp(log_terms))

    def integrate_kde(self, other):
        """The integral of the product of this estimate and another one."""
        if other.d != self.d:
            raise ValueError(f"gaussian_kde.integrate_kde: the estimates have {self.d} and {other.d} dimensions")
        diff = self.dataset[:, :, None] - other.dataset[:, None, :]  # (d, n, n_other)
        log_terms = _gauss_log_density(diff, self.covariance + other.covariance)
        return _qb.sum(self.weights[:, None] * other.weights[None, :] * _qb.exp(log_terms))

    def resample(self, key, shape=()):
        """Draws from the estimate with a qb.random key, shape (d,) + shape: a data point
        chosen by weight plus a kernel-covariance normal offset (JAX's draws: the key split in
        two, qb.random.choice then qb.random.multivariate_normal)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        choice_key, offset_key = _qb.random.split(key)
        index = _qb.random.choice(choice_key, self.n, shape=shape, p=self.weights)
        offset = _qb.random.multivariate_normal(offset_key, _qb.zeros((self.d,), dtype=self.covariance.dtype),
                                                self.covariance, shape=shape, dtype=self.dataset.dtype)
        return self.dataset[:, index] + _qb.moveaxis(offset, -1, 0)


gaussian_kde.__module__ = "quabla.scipy.stats"  # (where it is documented and imported from)
