"""Principal component analysis (seed 001 §PCA, seed 002 §PCA, thesis ch. 3).

The principal axes are the right singular vectors of the centred design matrix
X_c = U S Vᵀ; the variance along axis i is λ_i = s_i² / (n − 1). The route to them
(``svd_solver``: full SVD, d × d covariance, n × n Gram matrix — seed 002's "N×N trick" —
or randomized SVD) is chosen by :mod:`manifold_studio.algorithms.pca_solvers`.
"""
from __future__ import annotations

import numpy as np
from manifold_studio.algorithms import AnyOf, Bool, Choice, EmbeddingAlgorithm, Float, Int
from manifold_studio.algorithms.params import DataLimit, random_state_param
from manifold_studio.algorithms.pca_solvers import SOLVERS, SPARSE_SOLVERS, principal_axes, project
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl


class PCA(EmbeddingAlgorithm):
    """Principal component analysis.

    Parameters
    ----------
    n_components : int or float
        Number of components to keep, or, as a fraction in (0, 1), the smallest number of
        components whose cumulated explained variance reaches that fraction.
    whiten : bool
        Return sphered coordinates x·v_i / sqrt(λ_i) (unit variance along every axis).
    svd_solver : {'auto', 'full', 'covariance', 'gram', 'randomized', 'arpack'}
        How the axes are computed. 'full': SVD of the centred data. 'covariance':
        eigendecomposition of the d × d matrix X_cᵀX_c (fast when n ≫ d). 'gram':
        eigendecomposition of the n × n Gram matrix X_c X_cᵀ (fast when d ≫ n). 'randomized':
        Halko et al.'s randomized SVD with power iterations, seeded by ``random_state``
        (approximate; large matrices, few components). 'arpack': ARPACK's truncated SVD
        (scipy's svds, start vector seeded by ``random_state``; n_components < min(n, d)).
        'auto' takes covariance when d ≤ 1000
        and n ≥ 10·d, gram when n ≤ 1000 and d ≥ 10·n, full when max(n, d) ≤ 500 or
        n_components is a fraction, randomized when n_components < 0.8·min(n, d), full
        otherwise (scikit-learn's rule plus the Gram route). The exact routes agree to
        rounding; signs are fixed the same way on every route (largest loading positive).
        **Sparse X** (scipy.sparse) is never densified whole: 'arpack' and 'randomized' centre it
        implicitly, 'covariance' sums centred dense blocks of at most 8M values (or the sparse
        product for very sparse rows); 'auto' takes 'covariance' when d ≤ 4096, n ≥ d (or
        d ≤ 1000) and d² ≤ 20,000 × (stored values per row) (count data: one pass instead of ARPACK's hundreds),
        else 'arpack' (:mod:`manifold_studio.algorithms.pca_sparse`); 'full' and 'gram' refuse it.
    random_state : int or None
        Seed of the randomized route's Gaussian sketch and of ARPACK's start vector.

    Data types: float32 data give float32 results (``embedding_``, ``components_``, ``mean_``,
    the variances, and ``transform`` of float32 data); the computation runs in float64.

    Attributes
    ----------
    embedding_ : (n, k) coordinates of the training points.
    components_ : (k, d) principal axes (rows, unit norm).
    explained_variance_ : (k,) variance along each axis, λ_i.
    explained_variance_ratio_ : (k,) λ_i divided by the total variance.
    singular_values_ : (k,) singular values of the centred data.
    mean_ : (d,) training mean.
    noise_variance_ : mean of the discarded variances (0 when none are discarded).
    svd_solver_ : the route actually taken ('full', 'covariance', 'gram' or 'randomized').

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("pca", n_components=2).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "pca"
    name = "Principal component analysis (PCA)"
    help = ("Finds the orthogonal directions of largest variance and projects the data onto the "
            "first few of them: the best affine subspace in the least-squares sense. Linear, fast "
            "and exact; new points are projected onto the same axes, and data can be reconstructed "
            "from its reduced coordinates.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "mean_": Fitted(shape=("n_features_in_",), required=True),
        "components_": Fitted(shape=("n_components_", "n_features_in_"), required=True),
        "singular_values_": Fitted(shape=("n_components_",)),
        "explained_variance_": Fitted(shape=("n_components_",)),
        "explained_variance_ratio_": Fitted(shape=("n_components_",)),
        "embedding_": Fitted(shape=(None, "n_components_")),
    }

    params = (
        AnyOf("n_components", 2,
              "How many components to keep: a count (1, 2, 3, ...) or a fraction of the variance "
              "to explain (e.g. 0.95 keeps as many components as needed to explain 95%).",
              options=(Int("n_components", 2, low=1),
                       Float("n_components", 0.95, low=0.0, high=1.0, low_open=True, high_open=True)),
              limit=DataLimit("min")),
        Bool("whiten", False,
             "Sphered coordinates: divide each coordinate by the standard deviation along its axis, "
             "so every output dimension has unit variance."),
        Choice("svd_solver", "auto",
               "How the axes are computed: 'full' SVD; 'covariance' (d×d eigendecomposition, fast "
               "when there are many more rows than columns); 'gram' (n×n, fast when there are many "
               "more columns than rows); 'randomized' (approximate, fast for few components of a "
               "large matrix); 'arpack' (ARPACK's truncated SVD, exact, few components); 'auto' picks "
               "the fastest of these for the shape (and density of sparse data).",
               choices=SOLVERS),
        random_state_param("Seed of the randomized and ARPACK solvers (none: different every run)."),
    )
    accepts_sparse = True
    sparse_condition = "svd_solver is " + ", ".join(repr(s) for s in SPARSE_SOLVERS[:-1]) + f" or {SPARSE_SOLVERS[-1]!r}"
    preserves_float32 = True
    float32_attributes = ("components_", "mean_", "explained_variance_", "explained_variance_ratio_",
                          "singular_values_")

    def accepts_sparse_input(self) -> bool:
        return getattr(self, "svd_solver", "auto") in SPARSE_SOLVERS

    def _fit(self, X, y, progress):
        n, d = X.shape
        k_req = self._p["n_components"]
        max_k = min(n, d)
        if isinstance(k_req, int) and k_req > max_k:
            raise DataError(f"n_components={k_req} is larger than min(n_samples, n_features) = "
                            f"min({n}, {d}) = {max_k}; choose at most {max_k}.")
        try:
            axes = principal_axes(X, k_req, solver=self._p["svd_solver"],
                                  random_state=self._p["random_state"], progress=progress)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        s, Vt = axes.singular_values, axes.components
        self.mean_ = axes.mean
        self.svd_solver_ = axes.solver
        variance = s ** 2 / max(n - 1, 1)
        total = axes.total_variance
        ratio = variance / total if total > 0 else np.zeros_like(variance)
        if isinstance(k_req, float):
            k = int(np.searchsorted(np.cumsum(ratio), k_req, side="right") + 1)
            k = min(k, max_k)
        else:
            k = k_req
        self.n_components_ = k
        self.components_ = Vt[:k].copy()
        self.singular_values_ = s[:k].copy()
        self.explained_variance_ = variance[:k].copy()
        self.explained_variance_ratio_ = ratio[:k].copy()
        self.total_variance_ = float(total)
        rest = min(n, d) - k
        self.noise_variance_ = float(max(total - variance[:k].sum(), 0.0) / rest) if rest > 0 else 0.0
        self.n_samples_ = n
        progress.checkpoint(0.95, "Projecting the training points")
        self.embedding_ = project(X, self.mean_, self.components_)
        if self._p["whiten"]:
            self.embedding_ = self.embedding_ / self._scale()
        progress.checkpoint(1.0, "Done")

    def _scale(self):
        sd = np.sqrt(self.explained_variance_)
        return np.where(sd > 0, sd, 1.0)

    def _extend(self, X):
        Z = project(X, self.mean_, self.components_)   # as the training embedding and scikit-learn's transform
        return Z / self._scale() if self.whiten else Z

    def reconstruct(self, Z):
        """Data reconstructed from reduced coordinates Z (n, k): mean + Z·V (un-whitened)."""
        self.check_is_fitted("reconstruct")
        Z_in = Z
        Z = np.atleast_2d(np.asarray(Z, dtype=float))
        if Z.shape[1] != self.n_components_:
            raise DataError(f"Reduced coordinates have {Z.shape[1]} columns; the model has "
                            f"{self.n_components_} components.")
        if self.whiten:
            Z = Z * self._scale()
        return self._in_precision_of(Z @ self.components_ + self.mean_, Z_in)

    inverse_transform = reconstruct

    def reconstruction_error(self, X):
        """Mean squared reconstruction error per sample of X through k components."""
        X = self._check_new_data(X, "reconstruction_error")
        R = self.reconstruct(self._extend(X))
        return float(np.mean(np.sum((X - R) ** 2, axis=1)))

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_components"] = int(self.n_components_)
            out["explained_variance_ratio"] = round(float(self.explained_variance_ratio_.sum()), 6)
        return out


@hookimpl
def register_algorithms():
    return [PCA]
