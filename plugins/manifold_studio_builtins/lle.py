"""Locally linear embedding (Roweis & Saul 2000; thesis section 4.3, table 4.3, kernel 5.3)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.neighbors_sparse import SPARSE_CONDITION
from manifold_studio.algorithms.sparse_input import SparseInput
from manifold_studio.algorithms import Float
from manifold_studio.algorithms.params import BELOW_N, SPECTRAL_SKIP_ONE, n_components_param, n_neighbors_param
from manifold_studio.algorithms.neighbors import METRICS, knn_query, metric_param, neighbor_rows, neighbors_param
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.algorithms.spectral import EIGEN_SOLVER_PARAM, SpectralEmbedding, SpectralProblem
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.algorithms.training_neighbors import TrainingNeighborsMixin, check_embedding
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl

#: elements of the (points, k, d) neighbourhood blocks when computing weights
_WEIGHT_BLOCK = 2_000_000


def _rows(X, idx: np.ndarray) -> np.ndarray:
    """X[idx] as a dense array (sparse X: only these rows densified, a block at a time)."""
    if sp.issparse(X):
        return sp.csr_matrix(X)[idx.ravel()].toarray().reshape(*idx.shape, X.shape[1])
    return X[idx]


def reconstruction_weights(X: np.ndarray, Y: np.ndarray, neighbors: np.ndarray, reg: float,
                           progress=None) -> np.ndarray:
    """Weights reconstructing each row of X from its neighbours ``Y[neighbors]`` (rows sum to 1).

    The local Gram matrix ``C_jk = <x - eta_j, x - eta_k>`` (eq. 4.9) is regularised by
    ``reg * trace(C)`` on its diagonal (``reg`` alone when the trace is 0, i.e. when every
    neighbour is a duplicate of the point), which keeps it invertible for duplicated points and
    for more neighbours than dimensions. Batched over points: no Python loop over points.
    Sparse X and Y: the neighbours' rows are densified one bounded block at a time.
    """
    progress = as_progress(progress)
    m, k = neighbors.shape
    W = np.empty((m, k))
    step = max(1, _WEIGHT_BLOCK // max(k * X.shape[1], 1))
    ones = np.ones((k, 1))
    for start in range(0, m, step):
        progress.checkpoint(start / max(m, 1), f"Reconstruction weights {start:,}/{m:,}")
        stop = min(m, start + step)
        Z = _rows(Y, neighbors[start:stop]) - _rows(X, np.arange(start, stop))[:, None, :]   # (b, k, d)
        C = Z @ np.swapaxes(Z, 1, 2)                                   # (b, k, k)
        trace = np.trace(C, axis1=1, axis2=2)
        R = np.where(trace > 0, reg * trace, reg)
        C[:, np.arange(k), np.arange(k)] += R[:, None]
        try:
            w = np.linalg.solve(C, np.broadcast_to(ones, (stop - start, k, 1)))[..., 0]
        except np.linalg.LinAlgError:
            raise DataError("A local Gram matrix of LLE is singular (duplicated points with reg=0); "
                            "set reg > 0 (e.g. 1e-3).") from None
        w /= w.sum(axis=1, keepdims=True)
        W[start:stop] = w
    progress.checkpoint(1.0, f"Reconstruction weights {m:,}/{m:,}")
    return W


class LocallyLinearEmbedding(SparseInput, TrainingNeighborsMixin, SpectralEmbedding):
    """Standard LLE with sparse matrices and a solver that scales to tens of thousands of points.

    Each point is reconstructed from its k nearest neighbours with weights summing to one
    (regularised local Gram); the embedding is given by the bottom eigenvectors of
    ``(I-W)^T (I-W)`` without the constant one, i.e. the leading eigenvectors of the kernel
    ``M = I - (I-W)^T (I-W)`` (section 5.1.4), computed by ARPACK in shift-invert mode on the
    sparse matrix. Coordinates are ``sqrt(n) v_ik`` (unit mean square, eq. 4.13). A new
    point is extended through its reconstruction weights from its k nearest training points
    (kernel 5.3): ``y_k(x) = sqrt(n) / l_k sum_i w(x, x_i) v_ik``. ``n_neighbors`` (default 5,
    below n) excludes the point itself, as scikit-learn's LocallyLinearEmbedding; ``metric`` chooses the
    neighbours (the weights are always computed on the coordinates, so no 'precomputed').

    (kernel 5.3): ``y_k(x) = sqrt(n) / l_k sum_i w(x, x_i) v_ik``.

    Sparse X (CSR; metric 'euclidean' or 'cosine') is searched exactly by sparse products (by
    NN-descent on the sparse rows with neighbors='approximate', or 'auto' on large data)
    (:mod:`~manifold_studio.algorithms.neighbors_sparse`); only each block's neighbour rows are
    densified for the local Gram matrices: the same map as its dense copy.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("lle", n_neighbors=12, n_components=2).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "lle"
    holds_gil = True  # scipy's sparse LU (shift-invert) holds the GIL: the window fits it in a separate process
    name = "Locally linear embedding"
    sparse_condition = SPARSE_CONDITION
    help = ("Locally linear embedding: describes every point as a weighted average of its nearest "
            "neighbours and finds low-dimensional coordinates that keep those same weights, which "
            "unrolls curved manifolds. Works with sparse matrices, so tens of thousands of points "
            "fit. New points are placed with their reconstruction weights from the fitted points.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "X_fit_": Fitted(shape=("n_train", "n_features_in_"), required=True),
        "neighbors_": Fitted(shape=("n_train", None), kinds="iu"),
        "weights_": Fitted(shape=("n_train", None)),
    }

    params = (
        n_neighbors_param("Number of nearest neighbours that reconstruct each point, the point "
                          "itself not counted; default 5 and below the number of points, as "
                          "scikit-learn's LocallyLinearEmbedding.", 5, limit=BELOW_N),
        n_components_param(limit=SPECTRAL_SKIP_ONE),
        Float("reg", 1e-3, "Regularisation of the local Gram matrices, in proportion to their trace "
              "(keeps duplicated points and many neighbours workable; finite).", low=0.0, log=True),
        metric_param(tuple(m for m in METRICS if m != "precomputed")),
        neighbors_param(),
        EIGEN_SOLVER_PARAM,
    )
    _sparse_kernel_rows = True

    def _spectral_problem(self, X, progress):
        p = self._p
        n = X.shape[0]
        if not np.isfinite(p["reg"]):
            raise InvalidParameterError(f"reg={p['reg']} must be a finite number: an infinite "
                                        "regularisation makes every weight equal and leaves no embedding "
                                        "(use e.g. 1e-3).")
        k = self._check_sizes(n, "LLE", skip=1)
        index = self._set_training_points(X, SubProgress(progress, 0.0, 0.1, "Neighbour index: "))
        with self._phase("neighbours"):
            _, nbrs = knn_query(X, X, k, exclude_self=True, index=index,
                                progress=SubProgress(progress, 0.1, 0.3, "Neighbours: "))
        with self._phase("weights"):
            w = reconstruction_weights(X, X, nbrs, p["reg"], progress=SubProgress(progress, 0.3, 0.8, ""))
        self.neighbors_ = nbrs
        self.weights_ = w
        W = neighbor_rows(w, nbrs, n)
        IW = sp.identity(n, format="csr") - W
        L = (IW.T @ IW).tocsr()
        progress.checkpoint(1.0, "Sparse matrix (I-W)^T (I-W)")
        return SpectralProblem(p["n_components"], laplacian=L, skip=1, scaling="sqrt_n",
                               match_training=True, trace=None)

    def _fit(self, X, y, progress):
        self._timed_fit(super()._fit, X, y, progress)
        check_embedding(self.embedding_, "LLE", "the reconstruction weights leave no non-constant "
                        "direction; check reg and n_neighbors")

    def _kernel_rows(self, X):
        # kernel 5.3 between a new point and the training points: k(x, x_i) = w(x, x_i)
        n = self.X_fit_.shape[0]
        k = min(self._p["n_neighbors"], n)
        _, nbrs = self._index_for_extend().query(X, k)
        return neighbor_rows(reconstruction_weights(X, self.X_fit_, nbrs, self._p["reg"]), nbrs, n)

    def result_summary(self):
        out = super().result_summary()
        if hasattr(self, "eigenvalues_"):
            out["reconstruction_cost"] = [float(v) for v in 1.0 - self.eigenvalues_]
        return out


@hookimpl
def register_algorithms():
    return [LocallyLinearEmbedding]
