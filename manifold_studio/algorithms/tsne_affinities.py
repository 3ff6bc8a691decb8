"""Input affinities of SNE / t-SNE (seed 002): Gaussian conditionals p_{j|i} with a per-point
bandwidth sigma_i found by binary search so that the perplexity 2^{H(P_i)} (here exp of the
entropy in nats) equals the requested value, then the symmetric p_ij = (p_{j|i} + p_{i|j}) / 2n.

Two forms share the same search (a compiled loop over rows):

- exact: every other point is a neighbour (dense (n, n) matrices; small n);
- sparse: the ``3 * perplexity`` nearest neighbours only (a kd-tree / blockwise index from
  :mod:`manifold_studio.algorithms.neighbors`), the usual approximation for large n
  (van der Maaten 2014): the Gaussian weight of farther points is negligible.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.threads import run_shares
from manifold_studio.algorithms.neighbors import NeighborIndex, knn_query

__all__ = ["conditional_probabilities", "neighbour_affinities", "exact_affinities",
           "sparse_affinities", "n_affinity_neighbours"]

_TOL = 1e-10        # on the entropy (nats)
_MAX_STEPS = 200


@jit
def _search_rows(D2, log_perplexity, out_p, out_beta):
    """Binary search of beta_i = 1 / (2 sigma_i^2) per row of squared distances D2 (m, k)."""
    m, k = D2.shape
    for i in range(m):
        dmin = np.inf
        for j in range(k):
            if D2[i, j] < dmin:
                dmin = D2[i, j]
        beta, lo, hi = 1.0, 0.0, np.inf
        for _step in range(200):
            s = 0.0
            sd = 0.0
            for j in range(k):
                w = math.exp(-(D2[i, j] - dmin) * beta)
                out_p[i, j] = w
                s += w
                sd += w * (D2[i, j] - dmin)
            # entropy H = log s + beta * E[d - dmin]
            H = math.log(s) + beta * sd / s
            diff = H - log_perplexity
            if abs(diff) <= 1e-10:
                break
            if diff > 0.0:   # too flat: sharpen
                lo = beta
                beta = beta * 2.0 if hi == np.inf else 0.5 * (beta + hi)
            else:
                hi = beta
                beta = 0.5 * (beta + lo)
        for j in range(k):
            out_p[i, j] /= s
        out_beta[i] = beta


def conditional_probabilities(D2: np.ndarray, perplexity: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows p_{.|i} (m, k) of a Gaussian matching ``perplexity`` on squared distances ``D2``
    (m, k), and the betas 1/(2 sigma_i^2). Rows sum to one; entropy = log(perplexity)."""
    D2 = np.ascontiguousarray(D2, dtype=np.float64)
    P = np.empty_like(D2)
    beta = np.empty(D2.shape[0])
    if D2.size:
        logp = float(np.log(perplexity))
        run_shares(lambda a, b: _search_rows(D2[a:b], logp, P[a:b], beta[a:b]), D2.shape[0], 1024)
    return P, beta


def n_affinity_neighbours(perplexity: float, n_reference: int) -> int:
    """3 * perplexity neighbours (van der Maaten 2014), at most every other reference point."""
    return int(min(n_reference, max(1, math.floor(3.0 * perplexity + 1))))


def affinity_distances(dist: np.ndarray, metric: str) -> np.ndarray:
    """The distances the Gaussian conditionals use: squared for 'euclidean', as they are for
    the other metrics (scikit-learn's TSNE does the same)."""
    return dist * dist if metric == "euclidean" else dist


def neighbour_affinities(X, perplexity, *, index=None, exclude_self=False, progress=None):
    """Conditional affinities of rows of X to their 3*perplexity nearest reference points:
    (P (m, k), idx (m, k))."""
    k = n_affinity_neighbours(perplexity, index.n - (1 if exclude_self else 0))
    dist, idx = knn_query(index.Y, X, k, exclude_self=exclude_self, progress=progress, index=index)
    P, _beta = conditional_probabilities(affinity_distances(dist, index.metric), perplexity)
    return P, idx


def exact_affinities(X: np.ndarray, perplexity: float, *, symmetric: bool = True,
                     metric: str = "euclidean") -> np.ndarray:
    """Dense affinities over all pairs: symmetric p_ij (sum 1) or conditional p_{j|i} (rows sum 1).
    ``metric`` other than 'euclidean': the distances themselves (X the distance matrix for
    'precomputed')."""
    n = X.shape[0]
    if metric == "euclidean":
        sq = np.einsum("ij,ij->i", X, X)
        D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    elif metric == "precomputed":
        D2 = np.asarray(X, dtype=float)
    else:
        from scipy.spatial.distance import cdist

        D2 = cdist(X, X, "cosine" if metric == "cosine" else "cityblock")
    off = ~np.eye(n, dtype=bool)
    Pc, _beta = conditional_probabilities(D2[off].reshape(n, n - 1), perplexity)
    P = np.zeros((n, n))
    P[off] = Pc.ravel()
    if not symmetric:
        return P
    return (P + P.T) / (2.0 * n)


def sparse_affinities(X: np.ndarray, perplexity: float, *, progress=None, index=None,
                      neighbours=None) -> sp.csr_matrix:
    """Symmetric p_ij on the 3*perplexity nearest-neighbour graph (CSR, sums to one); ``index``:
    the search index over X (exact Euclidean when not given); ``neighbours``: each point's
    (dist, idx) of its 3*perplexity nearest others, when already found."""
    n = X.shape[0]
    index = index if index is not None else NeighborIndex(X)
    if neighbours is None:
        Pc, idx = neighbour_affinities(X, perplexity, index=index, exclude_self=True, progress=progress)
    else:
        dist, idx = neighbours
        Pc, _beta = conditional_probabilities(affinity_distances(dist, index.metric), perplexity)
    k = idx.shape[1]
    C = sp.csr_matrix((Pc.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    P = (C + C.T).tocsr()
    P.sum_duplicates()
    P.sort_indices()
    P.data /= 2.0 * n
    return P
