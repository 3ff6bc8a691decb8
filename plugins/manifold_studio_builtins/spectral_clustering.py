"""Spectral clustering (Ng, Jordan & Weiss 2002; thesis table 4.5, kernel 5.2)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.neighbors_sparse import SPARSE_CONDITION, as_csr, sparse_unit_rows
from manifold_studio.algorithms.sparse_input import SparseInput
from manifold_studio.algorithms import Choice, ClusteringAlgorithm, Float
from manifold_studio.algorithms.params import (
    n_clusters_param, n_init_param, n_neighbors_param, random_state_param,
)
from manifold_studio.algorithms.kernels import (
    check_rbf_width, kernel_matrix, normalised_heat_kernel, rows_per_block, squared_distances,
)
from manifold_studio.algorithms.kmeans_core import assign_nearest, kmeans

from manifold_studio.algorithms.neighbors import (
    check_precomputed, knn_graph, metric_param, neighbor_rows, neighbors_param, unit_rows,
)
from manifold_studio.algorithms.progress import SubProgress
from manifold_studio.algorithms.spectral import (
    EIGEN_SOLVER_PARAM, SpectralMixin, SpectralProblem, normalised_laplacian,
)
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.algorithms.training_neighbors import TrainingNeighborsMixin
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl


def _normalise_rows(E: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(E, axis=1, keepdims=True)
    return E / np.where(norm > 0, norm, 1.0)


class SpectralClustering(SparseInput, TrainingNeighborsMixin, SpectralMixin, ClusteringAlgorithm):
    """Ng–Jordan–Weiss spectral clustering with the Nyström extension to new points.

    Table 4.5: Gaussian affinity ``exp(-|x_i - x_j|^2 / (2 sigma^2))`` with a zero diagonal (or
    the symmetrised k-NN connectivity), ``M = D^-1/2 K D^-1/2``, its ``n_clusters`` leading
    eigenvectors as columns of E, rows of E scaled to unit norm, k-means with restarts on
    them. A new point gets its row of E through the Nyström formula with kernel 5.2 (its
    affinities to the training points divided by the square roots of both points' degrees),
    normalised, then the label of the nearest k-means centre. ``spectral_embedding_`` holds E
    and :meth:`extend_embedding` its extension (the quantity compared in section 5.4).

    As scikit-learn's SpectralClustering, the 'nearest_neighbors' affinity counts the point
    itself in ``n_neighbors`` (``kneighbors_graph(include_self=True)``: ``n_neighbors - 1``
    others) and weighs the connectivity 0.5 (A + A^T); ``metric`` is the distance of both
    affinities ('precomputed': X is the n x n distance matrix, new points come as their
    distances to the fitted points).

    Sparse X (CSR; metric 'euclidean' or 'cosine') is searched exactly by sparse products (by
    NN-descent on the sparse rows with neighbors='approximate', or 'auto' on large data)
    (:mod:`~manifold_studio.algorithms.neighbors_sparse`), never densified: the same clusters as
    its dense copy; sparse rows extend like dense ones.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("spectral_clustering", n_clusters=3, random_state=0).fit(X)
    >>> est.labels_.shape
    (150,)
    >>> len(set(est.labels_.tolist()))
    3
    >>> est.extend(X[:5]).shape
    (5,)
    """

    id = "spectral_clustering"
    name = "Spectral clustering"
    sparse_condition = SPARSE_CONDITION
    help = ("Spectral clustering (Ng, Jordan & Weiss): groups points that are connected through "
            "chains of close neighbours, so it separates rings, moons and other non-convex shapes "
            "that k-means cannot. Points are mapped with the leading eigenvectors of a normalised "
            "affinity matrix, then clustered by k-means. New points get the label of the nearest "
            "cluster through the same mapping.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "X_fit_": Fitted(shape=("n_train", "n_features_in_"), required=True),
        "degrees_": Fitted(shape=("n_train",)),
        "cluster_centers_": Fitted(shape=(None, "n_eigenvectors"), required=True),
        "labels_": Fitted(shape=("n_train",), kinds="iu"),
    }

    params = (
        n_clusters_param(2, "Number of clusters."),
        Choice("affinity", "rbf", "'rbf': Gaussian affinity between all pairs of points; "
               "'nearest_neighbors': each point linked to its nearest neighbours (sparse, scales to "
               "many points).", choices=("rbf", "nearest_neighbors")),
        Float("sigma", 1.0, "Width of the Gaussian affinity (same unit as the data): points much "
              "farther apart than sigma are unrelated.", low=0.0, low_open=True, log=True),
        n_neighbors_param("Neighbourhood size of the 'nearest_neighbors' affinity, the point itself "
                          "included (as scikit-learn): each point is linked to n_neighbors - 1 others."),
        metric_param(),
        neighbors_param(),
        random_state_param("Seed of the k-means restarts (empty: different each run)."),
        n_init_param(10, "Number of k-means restarts (the best is kept)."),
        EIGEN_SOLVER_PARAM,
    )

    # -- kernel --------------------------------------------------------------------------
    def _spectral_problem(self, X, progress):
        p = self._p
        n = X.shape[0]
        if p["n_clusters"] > n:
            raise DataError(f"n_clusters={p['n_clusters']} is larger than the number of points ({n}).")
        if p["affinity"] == "rbf":
            self._set_training_points(X)
            gamma = 1.0 / (2.0 * p["sigma"] ** 2)
            if p["metric"] == "euclidean":
                check_rbf_width(X, gamma, parameter="sigma", value=p["sigma"], what="Gaussian affinity")
                K = kernel_matrix(X, None, "rbf", gamma=gamma, progress=progress)
            else:
                K = np.exp(-gamma * self._squared_metric_distances(X, fit=True))
            np.fill_diagonal(K, 0.0)           # table 4.5: K_ii = 0
            deg = K.sum(axis=1)
            self._check_degrees(deg)
            s = 1.0 / np.sqrt(deg)
            K *= s[:, None]
            K *= s[None, :]
            self.degrees_ = deg
            return SpectralProblem(p["n_clusters"], matrix=K, scaling="unit", match_training=True)
        k = p["n_neighbors"] - 1    # the point itself counts (scikit-learn)
        if problem := _neighbours_problem(p, n):
            raise DataError(problem)
        index = self._set_training_points(X, progress, n_neighbors=k)
        with self._phase("neighbours"):
            A = knn_graph(X, k, mode="connectivity", index=index, progress=progress, symmetrize="mean")
        deg = np.asarray(A.sum(axis=1)).ravel()
        self.degrees_ = deg
        L = normalised_laplacian(A, deg)
        return SpectralProblem(p["n_clusters"], laplacian=L, scaling="unit", match_training=True)

    def _input_problems(self, p, n_samples, n_features):
        """The nearest-neighbours graph's n_neighbors against n (the form says it before Run)."""
        out = super()._input_problems(p, n_samples, n_features)
        if p["affinity"] != "rbf" and n_samples is not None and (problem := _neighbours_problem(p, n_samples)):
            out.append(problem)
        return out

    def _squared_metric_distances(self, X, fit=False):
        """Squared distances (metric 'cosine', 'manhattan' or 'precomputed') of X to the
        training points."""
        metric = self._p["metric"]
        if metric == "precomputed":
            D = check_precomputed(X, None if fit else self.X_fit_.shape[0])
        elif metric == "cosine":
            U = _unit_rows(X)
            G = U @ (U if fit else _unit_rows(self.X_fit_)).T
            D = np.maximum(1.0 - (G.toarray() if sp.issparse(G) else np.asarray(G)), 0.0)
        else:
            from scipy.spatial.distance import cdist  # lazy: kept off the start-up
            D = cdist(X, X if fit else self.X_fit_, "cityblock")
        return D * D

    def _neighbors_setting(self):
        # the dense Gaussian affinity uses the index only to recognise training points
        return "exact" if self._p["affinity"] == "rbf" else self._p["neighbors"]

    def _check_degrees(self, deg):
        dead = deg <= 0
        if dead.any():
            raise DataError(
                f"The kernel width sigma={self._p['sigma']:.3g} is too small: {int(dead.sum())} point(s) "
                f"(e.g. row {int(np.flatnonzero(dead)[0])}) have all their affinities underflow to 0, "
                "so they are related to no other point; use a larger sigma.")

    def _affinity_rows(self, X, directional: bool):
        """Kernel 5.2 rows for new points (dense for rbf, sparse for nearest_neighbors)."""
        p = self._p
        n = self.X_fit_.shape[0]
        if p["affinity"] == "rbf":
            D2 = (squared_distances(X, self.X_fit_) if p["metric"] == "euclidean"
                  else self._squared_metric_distances(X))
            return normalised_heat_kernel(D2, p["sigma"], self.degrees_, directional=directional)
        k = min(p["n_neighbors"], n)
        _, idx = self._index_for_extend().query(X, k)
        vals = np.full(idx.shape, 1.0 / np.sqrt(k)) / np.sqrt(self.degrees_[idx])
        return neighbor_rows(vals, idx, n)

    def _kernel_rows(self, X):
        return self._affinity_rows(X, directional=False)

    def _rows_direction(self, X):
        """Rows of E for new points up to a positive factor (enough for the labels)."""
        V = self.eigenvectors_
        out = np.empty((X.shape[0], V.shape[1]))
        match = self._match_training(X)
        hit = match >= 0
        out[hit] = self.training_projection_[match[hit]] * self.nystrom_coef_
        rest = np.flatnonzero(~hit)
        step = rows_per_block(V.shape[0])
        for start in range(0, rest.size, step):
            sel = rest[start:start + step]
            out[sel] = (self._affinity_rows(X[sel], directional=True) @ V) * self.nystrom_coef_
        return out

    # -- fit / extend --------------------------------------------------------------------
    def _fit(self, X, y, progress):
        self._timed_fit(self._fit_clusters, X, y, progress, last_phase="eigensolve and k-means")

    def _fit_clusters(self, X, y, progress):
        p = self._p
        self._fit_spectral(X, SubProgress(progress, 0.0, 0.8))
        self.warning_ = self._spectral_warning
        Y = _normalise_rows(self.spectral_embedding_)
        res = kmeans(Y, p["n_clusters"], n_init=p["n_init"], random_state=p["random_state"],
                     progress=SubProgress(progress, 0.8, 1.0, "k-means: "))
        self.cluster_centers_ = res.centers
        self.labels_ = res.labels
        self.inertia_ = float(res.inertia)
        self.embedding_ = Y

    def _extend(self, X):
        Y = _normalise_rows(self._rows_direction(X))
        labels, _ = assign_nearest(Y, self.cluster_centers_)
        return labels

    def extend_embedding(self, X, progress=None):
        """Nyström extension of the (unnormalised) spectral coordinates E to new points."""
        X = self._check_new_data(X)
        return self.map_chunks(self._nystrom, X, progress, message="Extending spectral coordinates")

    def result_summary(self):
        out = super().result_summary()
        out.update(self.spectral_summary())
        if hasattr(self, "labels_"):
            out["inertia"] = round(self.inertia_, 6)
            out["cluster_sizes"] = np.bincount(self.labels_, minlength=self._p["n_clusters"]).tolist()
        return out


@hookimpl
def register_algorithms():
    return [SpectralClustering]


def _unit_rows(X):
    """Rows of unit length, sparse rows kept sparse (metric='cosine')."""
    return sparse_unit_rows(as_csr(X)) if sp.issparse(X) else unit_rows(X)


def _neighbours_problem(p, n: int) -> str:
    """Why ``n_neighbors`` does not fit ``n`` points ("" when it does): it counts the point itself."""
    if p["n_neighbors"] < 2 or p["n_neighbors"] > n:
        return (f"n_neighbors={p['n_neighbors']} does not fit {n} points: it counts the point itself (as "
                f"scikit-learn's SpectralClustering), so use 2 <= n_neighbors <= {n}.")
    return ""
