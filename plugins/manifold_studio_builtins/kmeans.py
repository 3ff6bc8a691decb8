"""k-means clustering (seed 000 "K-means", seed 001 §V.2.a).

Minimises the within-cluster inertia W(Π) = Σ_k Σ_{i∈π_k} ||x_i − x̄_k||² by Lloyd's
iterations (assign every point to its nearest centre, move every centre to the mean of its
points) until the assignment stops changing or the centres barely move (scikit-learn's rule),
restarting ``n_init`` times and keeping the lowest W.
The iteration itself is the project's one implementation,
:func:`manifold_studio.algorithms.kmeans_core.kmeans`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms import Choice, ClusteringAlgorithm
from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import (
    max_iter_param, n_clusters_param, n_init_param, random_state_param, tol_param,
)
from manifold_studio.algorithms.kmeans_core import assign_nearest, check_sample_weight, kmeans
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import InvalidParameterError
from manifold_studio.hookspecs import hookimpl

INIT_METHODS = ("k-means++", "random")


@dataclass(frozen=True)
class InitParam(Choice):
    """'k-means++', 'random' or an (n_clusters, n_features) array of initial centres (scripts)."""

    def _check(self, value):
        if isinstance(value, str):
            return super()._check(value)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.ndim != 2 or arr.size == 0 or not np.all(np.isfinite(arr)):
            raise InvalidParameterError(f"Invalid value for parameter 'init': allowed {self.describe()}.")
        return arr

    def _describe(self):
        return super()._describe() + " or an (n_clusters, n_features) array of initial centres"


class KMeans(ClusteringAlgorithm):
    """k-means clustering.

    Parameters
    ----------
    n_clusters : int
        Number of clusters k.
    init : {"k-means++", "random"} or array of shape (n_clusters, n_features)
        "random" takes k distinct data points drawn uniformly as the initial centres (as in the
        seeds); "k-means++" draws them one by one with probability proportional to the squared
        distance to the centres already chosen (greedy variant with a few local trials). An array
        gives the initial centres themselves: one run only (as scikit-learn: ``n_init`` > 1 is
        then overridden to 1 with a RuntimeWarning).
    n_init : int
        Number of runs from different initial centres; the run with the lowest inertia is kept.
    max_iter : int
        Maximum number of centre updates in one run.
    tol : float
        scikit-learn's meaning: a run stops when the squared moves of the centres in one
        iteration sum to at most ``tol`` times the mean variance of the features, or when the
        assignment did not change (0: only then).
    random_state : int or None
        Seed of the initialisations (None: different every time).

    ``fit(X, sample_weight=w)`` weighs the points (scikit-learn's meaning): the centres are
    weighted means, the inertia a weighted sum, and the initialisations draw points with
    probability proportional to their weight. X may be a scipy.sparse matrix: the distances come
    from ||x||² − 2x·c + ||c||², nothing is densified, and the result equals the dense one.
    Data types: float32 data give float32 ``cluster_centers_`` (computed in float64).

    Attributes
    ----------
    labels_ : (n,) cluster of each training point.
    cluster_centers_ : (k, d) centres (means of their points).
    inertia_ : within-cluster inertia W of the result (weighted by sample_weight).
    n_iter_ : number of iterations (centre updates) of the best run.
    inertia_history_ : W after each assignment of the best run (non-increasing).
    total_inertia_ : total inertia T of the training data (W / T is the unexplained part).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit(X)
    >>> est.labels_.shape
    (150,)
    >>> len(set(est.labels_.tolist()))
    3
    >>> est.extend(X[:5]).shape
    (5,)
    """

    id = "kmeans"
    name = "k-means"
    help = ("Partitions the data into k clusters, each represented by its centre, by alternating "
            "two steps: assign every point to its nearest centre, then move every centre to the "
            "mean of its points. The within-cluster inertia decreases until it stabilises in a "
            "local minimum, so the algorithm is restarted from several random initialisations and "
            "the best partition kept. Fast and simple; finds compact, roughly spherical clusters "
            "of similar spread. New points go to the nearest centre.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "cluster_centers_": Fitted(shape=("n_clusters_", "n_features_in_"), required=True),
        "labels_": Fitted(shape=(None,), kinds="iu"),
    }

    params = (
        n_clusters_param(3, "Number of clusters k."),
        InitParam("init", "k-means++",
               "How to choose the initial centres: 'random' picks k data points at random; "
               "'k-means++' spreads them out (each new centre drawn with probability proportional "
               "to its squared distance to the centres already chosen), which usually converges "
               "faster and to better partitions. (Scripts may pass an array of initial centres.)",
               choices=INIT_METHODS),
        n_init_param(10, "Number of runs from different initial centres; the partition with the "
                     "lowest within-cluster inertia is kept."),
        max_iter_param(300, "Maximum number of iterations (centre updates) per run."),
        tol_param(1e-4, "Stop a run when the centres barely move: the sum of their squared moves "
                  "in one iteration is at most this times the mean variance of the features "
                  "(0: iterate until the assignment stops changing)."),
        random_state_param("Seed of the random initialisations, for reproducible results "
                           "(empty: a different seed every run)."),
    )
    min_samples = 1
    accepts_sparse = True
    preserves_float32 = True
    float32_attributes = ("cluster_centers_",)

    def fit(self, X, y=None, progress=None, sample_weight=None):
        """Fit on X (dense or sparse); ``sample_weight``: one non-negative weight per sample."""
        self._sample_weight = sample_weight
        try:
            return super().fit(X, y, progress)
        finally:
            del self._sample_weight

    def fit_predict(self, X, y=None, progress=None, sample_weight=None):
        return self.fit(X, y, progress, sample_weight=sample_weight).labels_

    def _fit(self, X, y, progress):
        p = self._p
        w = check_sample_weight(self._sample_weight, X.shape[0])
        init, n_init = p["init"], p["n_init"]
        if not isinstance(init, str) and n_init != 1:
            self._warn(f"Explicit initial center position passed: performing only one init in k-means "
                       f"instead of n_init={n_init}.", RuntimeWarning)
            n_init = 1
        res = kmeans(X, p["n_clusters"], init=init, n_init=n_init, max_iter=p["max_iter"],
                     tol=p["tol"], random_state=p["random_state"], progress=progress, sample_weight=w)
        self.labels_ = res.labels
        self.cluster_centers_ = res.centers
        self.inertia_ = float(res.inertia)
        self.n_iter_ = int(res.n_iter)
        self.inertia_history_ = np.asarray(res.inertia_history, dtype=float)
        self.total_inertia_ = _total_inertia(X, w)
        self.n_clusters_ = int(res.centers.shape[0])

    def _extend(self, X):
        return assign_nearest(X, self.cluster_centers_)[0]

    def transform_distances(self, X, progress=None):
        """(m, k) Euclidean distances of new points to every centre (X dense or sparse)."""
        X = self._check_new_data(X, "transform_distances")
        C = np.asarray(self.cluster_centers_, dtype=float)

        def dist(chunk):
            sq = (np.asarray(chunk.multiply(chunk).sum(axis=1)).ravel() if is_sparse(chunk)
                  else np.einsum("ij,ij->i", chunk, chunk))
            d2 = sq[:, None] - 2.0 * np.asarray(chunk @ C.T) + np.einsum("ij,ij->i", C, C)[None, :]
            return np.sqrt(np.maximum(d2, 0.0))

        return self.map_chunks(dist, X, progress, "Distances")

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_clusters"] = self.n_clusters_
            out["inertia"] = round(self.inertia_, 6)
            out["n_iter"] = self.n_iter_
            if self.total_inertia_ > 0:
                out["between_over_total"] = round(1.0 - self.inertia_ / self.total_inertia_, 6)
        return out


def _total_inertia(X, w) -> float:
    """Total (weighted) inertia Σ w_i ||x_i − x̄_w||² (x̄_w the weighted mean); sparse X by columns."""
    n = X.shape[0]
    w = np.ones(n) if w is None else w
    total_w = float(w.sum())
    if is_sparse(X):
        mean = np.asarray(X.T @ w).ravel() / total_w
        col_sq = np.asarray(X.multiply(X).T @ w).ravel()
        return float(np.sum(np.maximum(col_sq - total_w * mean * mean, 0.0)))
    mean = (w @ X) / total_w
    return float(w @ np.einsum("ij,ij->i", X - mean, X - mean))


@hookimpl
def register_algorithms():
    return [KMeans]
