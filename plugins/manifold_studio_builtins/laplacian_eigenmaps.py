"""Laplacian eigenmaps (Belkin & Niyogi 2003) with the normalised-kernel Nyström extension (kernel 5.2)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.neighbors_sparse import SPARSE_CONDITION
from manifold_studio.algorithms.sparse_input import SparseInput
from manifold_studio.algorithms import Choice, Float
from manifold_studio.algorithms.params import AT_MOST_N, SPECTRAL_SKIP_ONE, n_components_param, n_neighbors_param
from manifold_studio.algorithms.kernels import normalised_heat_kernel
from manifold_studio.algorithms.neighbors import (
    knn_graph, metric_param, neighbor_rows, neighbors_param,
)
from manifold_studio.algorithms.progress import SubProgress
from manifold_studio.algorithms.spectral import (
    EIGEN_SOLVER_PARAM, SpectralEmbedding, SpectralProblem, check_n_components, normalised_laplacian,
)
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.algorithms.training_neighbors import TrainingNeighborsMixin, check_embedding
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl


def heat_affinity(G: sp.csr_matrix, sigma: float) -> sp.csr_matrix:
    """exp(-d^2 / (2 sigma^2)) on the edges of a distance graph (zero diagonal)."""
    A = G.copy().tocsr()
    A.data = np.exp(-(A.data ** 2) / (2.0 * sigma * sigma))
    A.setdiag(0.0)
    A.eliminate_zeros()
    return A


def symmetrised_affinity(H: sp.csr_matrix, symmetrize: str) -> sp.csr_matrix:
    """The symmetric affinity of a directed k-NN heat-kernel graph ``H`` (row i: point i's
    neighbours): ``0.5 (H + H^T)`` (``'mean'``, scikit-learn's SpectralEmbedding: an edge found
    in one direction only weighs half) or ``max(H, H^T)`` (``'max'``, the union at full weight)."""
    return (0.5 * (H + H.T) if symmetrize == "mean" else H.maximum(H.T)).tocsr()


def check_degrees(deg: np.ndarray, sigma: float, typical: float, what: str) -> None:
    """DataError when the heat kernel underflows (all, or some points' affinities are 0)."""
    dead = deg <= 0
    if dead.all():
        raise DataError(f"The kernel width sigma={sigma:.3g} is too small for {what}: every affinity "
                        f"between two different points underflows to 0, so the graph carries no "
                        f"information. Typical distances between neighbours are about {typical:.3g}; "
                        f"use sigma of that order (or leave sigma empty for the automatic choice).")
    if dead.any():
        raise DataError(f"The kernel width sigma={sigma:.3g} is too small for {what}: "
                        f"{int(dead.sum())} point(s) (e.g. row {int(np.flatnonzero(dead)[0])}) have all "
                        f"their affinities underflow to 0. Typical distances between neighbours are about "
                        f"{typical:.3g}; use a larger sigma.")


class LaplacianEigenmaps(SparseInput, TrainingNeighborsMixin, SpectralEmbedding):
    """Laplacian eigenmaps on the symmetrised k-NN graph with heat-kernel weights.

    ``A_ij = exp(-|x_i - x_j|^2 / (2 sigma^2))`` when x_j is among x_i's nearest neighbours
    (0 otherwise, zero diagonal); the graph is ``W = 0.5 (A + A^T)`` (``symmetrize='mean'``, the
    default, as scikit-learn's SpectralEmbedding with affinity='nearest_neighbors': a mutual edge
    has its full weight, a one-way edge half of it), or the union ``W = max(A, A^T)`` at full
    weight (``symmetrize='max'``, the thesis' symmetrised graph). Degrees ``d_i``; normalised
    kernel ``M = D^-1/2 W D^-1/2`` (the normalised Laplacian is ``I - M``). With a large
    ``sigma`` the weights are 0/1 and the map is scikit-learn's up to sign (tested). The leading
    eigenvector (eigenvalue 1, proportional to sqrt(d)) is dropped. ``extend`` uses the normalised kernel 5.2: a new point's heat-kernel weights to its
    ``n_neighbors`` nearest training points divided by the square roots of both points' degrees,
    through the Nyström formula; with 'mean' an edge weighs half unless it is mutual (the new
    point is within that training point's own neighbour radius, ``neighbour_radius_``), as in the
    graph. This gives the eigenfunction value f_k(x); a training point extends to its own
    embedding exactly (``f_k = v_ik``: its training kernel row is used).
    With ``normalization='symmetric'`` the coordinates are ``sqrt(n) f_k(x)`` (the thesis'
    fixed rescaling); with ``'random_walk'`` (default: Belkin–Niyogi's generalised problem
    ``L y = l D y``, as scikit-learn) they are ``sqrt(n) f_k(x) sqrt(mean(d) / d(x))`` with
    ``d(x)`` the same degree function the kernel uses (the training degree at training points).

    ``n_neighbors`` counts the point itself, as scikit-learn's SpectralEmbedding (its
    ``kneighbors_graph(include_self=True)``): each point is linked to its ``n_neighbors - 1``
    nearest other points; a new point to its ``n_neighbors`` nearest fitted points.

    Sparse X (CSR; metric 'euclidean' or 'cosine') is searched exactly by sparse products (by
    NN-descent on the sparse rows with neighbors='approximate', or 'auto' on large data)
    (:mod:`~manifold_studio.algorithms.neighbors_sparse`), never densified: the same map as its
    dense copy; sparse rows extend like dense ones.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("laplacian_eigenmaps", n_neighbors=10, n_components=2).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "laplacian_eigenmaps"
    # scipy's sparse LU / eigensolver holds the GIL (about 0.1-0.2 s at 20,000 points): the window
    # fits it in a separate process
    holds_gil = True
    name = "Laplacian eigenmaps"
    sparse_condition = SPARSE_CONDITION
    help = ("Laplacian eigenmaps: links each point to its nearest neighbours with Gaussian (heat "
            "kernel) weights and finds coordinates that keep linked points close, from the "
            "eigenvectors of the normalised graph Laplacian. Sparse, so tens of thousands of points "
            "fit. New points are placed through their weights to the nearest fitted points.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "X_fit_": Fitted(shape=("n_train", "n_features_in_"), required=True),
        "degrees_": Fitted(shape=("n_train",)),
        # each training point's distance to its (n_neighbors - 1)-th nearest other point
        "neighbour_radius_": Fitted(shape=("n_train",)),
    }

    params = (
        n_neighbors_param("Size of each point's neighbourhood, the point itself included (as "
                          "scikit-learn's SpectralEmbedding): linked to its n_neighbors - 1 nearest others.",
                          limit=AT_MOST_N),
        n_components_param(limit=SPECTRAL_SKIP_ONE),
        Float("sigma", None, "Heat-kernel width (same unit as the data); empty: the median distance "
              "between linked neighbours.", low=0.0, low_open=True, allow_none=True, log=True),
        Choice("normalization", "random_walk", "'random_walk': Belkin–Niyogi coordinates D^-1/2 v "
               "(eigenvectors of the random-walk Laplacian; the usual eigenmaps, as scikit-learn); "
               "'symmetric': the eigenvectors v of the normalised kernel 5.2 themselves (thesis).",
               choices=("random_walk", "symmetric")),
        Choice("symmetrize", "mean", "How the one-way neighbour relations become one graph: 'mean' "
               "0.5 (A + A^T), as scikit-learn's SpectralEmbedding (a one-way edge weighs half); "
               "'max': the union max(A, A^T), every edge at full weight.",
               choices=("mean", "max"), label="Graph symmetrisation"),
        metric_param(),
        neighbors_param(),
        EIGEN_SOLVER_PARAM,
    )

    _sparse_kernel_rows = True

    def _spectral_problem(self, X, progress):
        p = self._p
        n = X.shape[0]
        k = p["n_neighbors"] - 1    # the point itself counts (scikit-learn)
        if k < 1:
            raise DataError("n_neighbors=1 links each point to itself only (n_neighbors counts the point "
                            "itself, as scikit-learn); use n_neighbors >= 2.")
        if p["n_neighbors"] > n:
            raise DataError(f"n_neighbors={p['n_neighbors']} is too large for Laplacian eigenmaps: the data "
                            f"has {n} points and n_neighbors counts the point itself (as scikit-learn), so "
                            f"use n_neighbors <= {n} (typically 5 to 20).")
        check_n_components(p["n_components"], n, 1)
        index = self._set_training_points(X, SubProgress(progress, 0.0, 0.1, "Neighbour index: "),
                                          n_neighbors=k)
        with self._phase("neighbours"):
            H = knn_graph(X, k, index=index, symmetric=False,
                          progress=SubProgress(progress, 0.1, 0.6, "Neighbours: "))
        G = H.maximum(H.T).tocsr()   # every linked pair's distance once each way (sigma's median)
        if not G.nnz or float(G.data.max()) <= np.finfo(float).tiny:
            raise DataError(f"All distances between linked neighbours are 0 (constant or repeated data: "
                            f"each point's {k} nearest others are copies of it), so the heat kernel "
                            "has no scale and Laplacian eigenmaps has no embedding; remove duplicates "
                            "or use more neighbours.")
        typical = float(np.median(G.data))
        self.sigma_ = float(p["sigma"]) if p["sigma"] is not None else (typical if typical > 0 else 1.0)
        self.neighbour_radius_ = np.asarray(H.max(axis=1).todense(), dtype=float).ravel()
        A = symmetrised_affinity(heat_affinity(H, self.sigma_), p["symmetrize"])
        deg = np.asarray(A.sum(axis=1)).ravel()
        check_degrees(deg, self.sigma_, typical, "Laplacian eigenmaps")
        self.degrees_ = deg
        from scipy.sparse.csgraph import connected_components   # here: discovery stays light
        n_comp = connected_components(A, directed=False)[0]
        self._graph_warning = ""
        if n_comp > 1:
            self._graph_warning = (
                f"The neighbourhood graph has {n_comp} separate components: each component is "
                "embedded on its own and their relative placement is arbitrary; increase "
                "n_neighbors for a connected map.")
        with self._phase("graph"):
            L = normalised_laplacian(A, deg)
        progress.checkpoint(1.0, "Normalised Laplacian")
        return SpectralProblem(p["n_components"], laplacian=L, skip=1, scaling="sqrt_n",
                               match_training=True, trace=None)

    def _fit(self, X, y, progress):
        self._timed_fit(super()._fit, X, y, progress)
        check_embedding(self.embedding_, "Laplacian eigenmaps", "the graph gives no non-constant "
                        "eigenvector; check the data and n_neighbors")
        self.warning_ = " ".join(w for w in (self._graph_warning, self.warning_) if w)
        if self._p["normalization"] == "random_walk":
            self.embedding_ = self.embedding_ * self._rw_factor(self.degrees_)[:, None]

    def _rw_factor(self, deg):
        """Per-point factor sqrt(mean degree / d(x)) of the random-walk coordinates."""
        return np.sqrt(np.mean(self.degrees_) / deg)

    def _extend(self, X):
        if self._p["normalization"] == "symmetric":
            return self._nystrom(X)
        # random walk: y(x) = f(x) sqrt(mean d / d(x)) with f the Nyström eigenfunction; written as
        # (1/l) sum_i P(x, i) v_i / sqrt(d_i) with P(x, i) = K(x, x_i) / d(x) it is stable far away
        out = np.empty((X.shape[0], self.eigenvectors_.shape[1]))
        match = self._match_training(X)
        hit = match >= 0
        out[hit] = (self.training_projection_[match[hit]] * self.nystrom_coef_
                    * self._rw_factor(self.degrees_[match[hit]])[:, None])
        rest = ~hit
        if rest.any():
            n = self.X_fit_.shape[0]
            k = min(self._p["n_neighbors"], n)
            dist, idx = self._index_for_extend().query(X[rest], k)
            a = dist * dist / (2.0 * self.sigma_ ** 2)
            e = np.exp(-(a - a.min(axis=1, keepdims=True))) * self._edge_weights(dist, idx)
            P = e / e.sum(axis=1, keepdims=True)
            vals = P / np.sqrt(self.degrees_[idx])
            R = neighbor_rows(vals, idx, n)
            out[rest] = (R @ self.eigenvectors_) * self.nystrom_coef_ * np.sqrt(np.mean(self.degrees_))
        return out

    def _kernel_rows(self, X):
        # kernel 5.2 on the k nearest training points (the graph's neighbourhoods)
        n = self.X_fit_.shape[0]
        k = min(self._p["n_neighbors"], n)
        dist, idx = self._index_for_extend().query(X, k)
        K = normalised_heat_kernel(dist * dist, self.sigma_, self.degrees_[idx],
                                   edge_weights=self._edge_weights(dist, idx))
        return neighbor_rows(K, idx, n)

    def _edge_weights(self, dist, idx):
        """The graph's weight of each edge from new points to their nearest training points:
        1 for a mutual edge (the new point within the training point's own neighbour radius) and
        for the union ('max'); 0.5 for a one-way edge with 'mean' (a model saved before
        ``neighbour_radius_`` existed was fitted on the union)."""
        radius = getattr(self, "neighbour_radius_", None)
        if self._p["symmetrize"] == "max" or radius is None:
            return np.ones_like(dist)
        return np.where(dist <= radius[idx], 1.0, 0.5)

    def result_summary(self):
        out = super().result_summary()
        out.pop("explained_fraction", None)
        if hasattr(self, "sigma_"):
            out["sigma"] = self.sigma_
        return out


@hookimpl
def register_algorithms():
    return [LaplacianEigenmaps]
