"""k-means clustering (seed 000 "K-means", seed 001 §V.2.a).

Minimises the within-cluster inertia W(Π) = Σ_k Σ_{i∈π_k} ||x_i − x̄_k||² by Lloyd's
iterations (assign every point to its nearest centre, move every centre to the mean of its
points) until W stops decreasing, restarting ``n_init`` times and keeping the lowest W.
The iteration itself is the project's one implementation,
:func:`manifold_studio.algorithms.kmeans_core.kmeans`.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Choice, ClusteringAlgorithm
from manifold_studio.algorithms.params import (
    max_iter_param, n_clusters_param, n_init_param, random_state_param, tol_param,
)
from manifold_studio.algorithms.kmeans_core import assign_nearest, kmeans
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.hookspecs import hookimpl


class KMeans(ClusteringAlgorithm):
    """k-means clustering.

    Parameters
    ----------
    n_clusters : int
        Number of clusters k.
    init : {"k-means++", "random"}
        "random" takes k distinct data points drawn uniformly as the initial centres (as in the
        seeds); "k-means++" draws them one by one with probability proportional to the squared
        distance to the centres already chosen (greedy variant with a few local trials).
    n_init : int
        Number of runs from different initial centres; the run with the lowest inertia is kept.
    max_iter : int
        Maximum number of centre updates in one run.
    tol : float
        A run stops when the inertia decreases by at most ``tol`` times its previous value
        (0: when it stops decreasing at all).
    random_state : int or None
        Seed of the initialisations (None: different every time).

    Attributes
    ----------
    labels_ : (n,) cluster of each training point.
    cluster_centers_ : (k, d) centres (means of their points).
    inertia_ : within-cluster inertia W of the result.
    n_iter_ : number of centre updates of the best run.
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
        Choice("init", "k-means++",
               "How to choose the initial centres: 'random' picks k data points at random; "
               "'k-means++' spreads them out (each new centre drawn with probability proportional "
               "to its squared distance to the centres already chosen), which usually converges "
               "faster and to better partitions.", choices=("k-means++", "random")),
        n_init_param(10, "Number of runs from different initial centres; the partition with the "
                     "lowest within-cluster inertia is kept."),
        max_iter_param(300, "Maximum number of iterations (centre updates) per run."),
        tol_param(1e-4, "Stop a run when the within-cluster inertia decreases by less than this "
                  "fraction of its value (0: iterate until it stops decreasing)."),
        random_state_param("Seed of the random initialisations, for reproducible results "
                           "(empty: a different seed every run)."),
    )
    min_samples = 1

    def _fit(self, X, y, progress):
        p = self._p
        res = kmeans(X, p["n_clusters"], init=p["init"], n_init=p["n_init"], max_iter=p["max_iter"],
                     tol=p["tol"], random_state=p["random_state"], progress=progress)
        self.labels_ = res.labels
        self.cluster_centers_ = res.centers
        self.inertia_ = float(res.inertia)
        self.n_iter_ = int(res.n_iter)
        self.inertia_history_ = np.asarray(res.inertia_history, dtype=float)
        self.total_inertia_ = float(np.sum((X - X.mean(axis=0)) ** 2))
        self.n_clusters_ = int(res.centers.shape[0])

    def _extend(self, X):
        return assign_nearest(X, self.cluster_centers_)[0]

    def transform_distances(self, X, progress=None):
        """(m, k) Euclidean distances of new points to every centre."""
        X = self._check_new_data(X, "transform_distances")
        C = self.cluster_centers_

        def dist(chunk):
            d2 = (np.einsum("ij,ij->i", chunk, chunk)[:, None] - 2.0 * chunk @ C.T
                  + np.einsum("ij,ij->i", C, C)[None, :])
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


@hookimpl
def register_algorithms():
    return [KMeans]
