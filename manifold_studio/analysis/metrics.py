"""Cluster quality measures (Qt-free), with the definitions of seed 001 §V.2.

For a partition Π = {π_1, ..., π_K} of the points x_1..x_N with centroids x̄_k and global
mean x̄:

* inertia (:func:`inertia_decomposition`): T = Σ_i ||x_i − x̄||², within
  W(Π) = Σ_k Σ_{i∈π_k} ||x_i − x̄_k||², between B(Π) = Σ_k |π_k| ||x̄_k − x̄||², and T = W + B
  (König–Huygens);
* homogeneity (:func:`homogeneity`): H_k = (1/|π_k|) Σ_{i∈π_k} ||x_i − x̄_k|| (mean distance to
  the centroid, *not* squared) and H(Π) = (1/K) Σ_k H_k;
* separability (:func:`separability`): S(Π) = 2 / (K(K−1)) Σ_{k<l} ||x̄_k − x̄_l||;
* Davies–Bouldin (:func:`davies_bouldin`): DB_k = max_{l≠k} (H_k + H_l) / ||x̄_k − x̄_l|| and
  DB(Π) = (1/K) Σ_k DB_k (smaller is better);
* silhouette (:func:`silhouette_samples`, :func:`silhouette`): s(x_i) = (b_i − a_i) / max(a_i, b_i)
  with a_i the mean distance from x_i to the other points of its cluster and b_i the smallest
  mean distance to the points of another cluster; s(Π) is the mean over the points.

  Seed 001 writes a_i with the factor 1/|π_k| although the sum excludes i; the standard
  definition (Rousseeuw 1987, scikit-learn) divides by |π_k| − 1 and gives a point alone in
  its cluster s = 0. The standard form is the default; ``convention="seed"`` gives the
  seed's literal formula (then a singleton has a = 0 and s = 1).

Also the comparison of two labelings: :func:`contingency_table` and
:func:`adjusted_rand_index` (Hubert & Arabie 1985); and the Gaussian mixture built from a
partition with its log-likelihood (seed 000's criterion for choosing k:
:func:`mixture_from_partition`, :func:`mixture_log_likelihood`; the EM of the ``gmm`` plugin
uses the same EM numerics, :mod:`manifold_studio.algorithms.gmm_em`).

Every function takes ``(X, labels)`` with any hashable labels (integers, strings), checks that
there is one label per row and raises :class:`UndefinedMetricError` — never a made-up number —
when the measure is undefined for the partition (e.g. K = 1 for Davies–Bouldin).
Silhouette works in row blocks: memory is O(block × N), never an N × N matrix.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from manifold_studio.algorithms.checks import check_data, label_vector
from manifold_studio.algorithms.gmm_em import log_gaussian, logsumexp_rows, m_step, precision_cholesky
from manifold_studio.algorithms.kmeans_core import blas_single_thread
from manifold_studio.errors import DataError, ManifoldStudioError

__all__ = ["UndefinedMetricError", "InertiaDecomposition", "Homogeneity", "ContingencyTable",
           "inertia_decomposition", "homogeneity", "separability", "davies_bouldin",
           "silhouette_samples", "silhouette", "contingency_table", "adjusted_rand_index",
           "cluster_centroids", "GaussianMixtureParams", "mixture_from_partition",
           "mixture_from_responsibilities", "mixture_log_likelihood", "log_gaussian",
           "logsumexp_rows", "precision_cholesky", "m_step"]

#: entries of one block of distances in silhouette computations (2 MB of float64: small
#: products stay cache-resident and are not slowed down by BLAS threads on a busy machine)
_SILHOUETTE_BLOCK_ENTRIES = 1 << 18


class UndefinedMetricError(ManifoldStudioError, ValueError):
    """A quality measure is undefined for the given partition (e.g. a single cluster)."""


class InertiaDecomposition(NamedTuple):
    total: float           #: T = Σ ||x_i − x̄||²
    within: float          #: W(Π) = Σ_k Σ_{i∈π_k} ||x_i − x̄_k||²
    between: float         #: B(Π) = Σ_k |π_k| ||x̄_k − x̄||²
    within_per_cluster: np.ndarray  #: (K,) contribution of each cluster to W
    clusters: np.ndarray   #: (K,) the distinct labels, in the order of the per-cluster arrays

    @property
    def between_ratio(self) -> float:
        """B / T, the share of the inertia explained by the partition (0 when T = 0)."""
        return self.between / self.total if self.total > 0 else 0.0


class Homogeneity(NamedTuple):
    overall: float         #: H(Π) = mean of the H_k
    per_cluster: np.ndarray  #: (K,) H_k, mean distance of a cluster's points to its centroid
    clusters: np.ndarray   #: (K,) the distinct labels


class ContingencyTable(NamedTuple):
    table: np.ndarray      #: (R, C) counts of points with label rows[r] in a and cols[c] in b
    rows: np.ndarray       #: distinct labels of the first labeling
    cols: np.ndarray       #: distinct labels of the second labeling


# -- input checks -------------------------------------------------------------------------
def _labels_1d(labels, n: int | None, name: str = "labels") -> np.ndarray:
    if labels is None:
        raise DataError(f"{name} is missing: give one cluster label per sample.")
    if hasattr(labels, "to_numpy"):
        labels = labels.to_numpy()
    arr = label_vector(labels, name)
    if n is not None and arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} entries but X has {n} samples: give exactly one "
                        "cluster label per sample.")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise DataError(f"{name} contains NaN; every sample needs a cluster label.")
    return arr


def _prepare(X, labels):
    """(X as float array, codes 0..K-1, distinct labels, counts)."""
    X = check_data(X, name="X", min_samples=1)
    lab = _labels_1d(labels, X.shape[0])
    clusters, codes = np.unique(lab, return_inverse=True)
    codes = codes.reshape(-1)
    counts = np.bincount(codes, minlength=clusters.shape[0])
    return X, codes, clusters, counts


def _need_two_clusters(K: int, what: str):
    if K < 2:
        raise UndefinedMetricError(
            f"{what} is undefined for a partition with {K} cluster: it compares clusters with each "
            "other, so it needs at least 2 clusters.")


def _centroids(X, codes, counts):
    sums = np.zeros((counts.shape[0], X.shape[1]))
    np.add.at(sums, codes, X) if X.shape[0] < 64 else _sum_by_code(X, codes, sums)
    return sums / counts[:, None]


def _sum_by_code(X, codes, out):
    for j in range(X.shape[1]):  # loop over features, not points
        out[:, j] = np.bincount(codes, weights=X[:, j], minlength=out.shape[0])
    return out


def _row_norms_to(X, centroids, codes, squared: bool) -> np.ndarray:
    """||x_i − centroid(codes_i)|| (or squared), computed directly in row chunks."""
    n, d = X.shape
    out = np.empty(n)
    step = max(256, (1 << 20) // max(d, 1))
    for s in range(0, n, step):
        diff = X[s:s + step] - centroids[codes[s:s + step]]
        out[s:s + step] = np.einsum("ij,ij->i", diff, diff)
    return out if squared else np.sqrt(out, out=out)


def cluster_centroids(X, labels) -> tuple[np.ndarray, np.ndarray]:
    """Centroids (K, d) of the clusters and the distinct labels (K,) in the same order."""
    X, codes, clusters, counts = _prepare(X, labels)
    return _centroids(X, codes, counts), clusters


# -- inertia, homogeneity, separability, Davies–Bouldin ------------------------------------
def inertia_decomposition(X, labels) -> InertiaDecomposition:
    """Total, within-cluster and between-cluster inertia, T = W + B (seed 001)."""
    X, codes, clusters, counts = _prepare(X, labels)
    mean = X.mean(axis=0)
    Xc = X - mean                      # centring changes none of T, W, B
    cent = _centroids(Xc, codes, counts)
    total = float(np.einsum("ij,ij->", Xc, Xc))
    d2 = _row_norms_to(Xc, cent, codes, squared=True)
    within_k = np.bincount(codes, weights=d2, minlength=clusters.shape[0])
    between = float(np.sum(counts * np.einsum("ij,ij->i", cent, cent)))
    return InertiaDecomposition(total=total, within=float(within_k.sum()), between=between,
                                within_per_cluster=within_k, clusters=clusters)


def _homogeneity_parts(X, codes, counts):
    cent = _centroids(X, codes, counts)
    dist = _row_norms_to(X, cent, codes, squared=False)
    H = np.bincount(codes, weights=dist, minlength=counts.shape[0]) / counts
    return cent, H


def homogeneity(X, labels) -> Homogeneity:
    """Homogeneity H_k (mean distance to the centroid) of every cluster and H(Π), their mean.

    Smaller is more homogeneous.
    """
    X, codes, clusters, counts = _prepare(X, labels)
    _, H = _homogeneity_parts(X - X.mean(axis=0), codes, counts)
    return Homogeneity(overall=float(H.mean()), per_cluster=H, clusters=clusters)


def _centroid_distances(cent):
    sq = np.einsum("ij,ij->i", cent, cent)
    D2 = sq[:, None] + sq[None, :] - 2.0 * cent @ cent.T
    np.maximum(D2, 0.0, out=D2)
    D = np.sqrt(D2)
    np.fill_diagonal(D, 0.0)
    return D


def separability(X, labels) -> float:
    """Separability S(Π): mean distance between the centroids of two different clusters."""
    X, codes, clusters, counts = _prepare(X, labels)
    K = clusters.shape[0]
    _need_two_clusters(K, "Separability")
    cent = _centroids(X - X.mean(axis=0), codes, counts)
    D = _centroid_distances(cent)
    iu = np.triu_indices(K, 1)
    return float(D[iu].mean())


def davies_bouldin(X, labels, *, per_cluster: bool = False):
    """Davies–Bouldin index DB(Π) (seed 001); with ``per_cluster`` also the (K,) DB_k.

    Undefined (UndefinedMetricError) for fewer than 2 clusters, and when two clusters have the
    same centroid (division by a zero distance).
    """
    X, codes, clusters, counts = _prepare(X, labels)
    K = clusters.shape[0]
    _need_two_clusters(K, "The Davies–Bouldin index")
    cent, H = _homogeneity_parts(X - X.mean(axis=0), codes, counts)
    D = _centroid_distances(cent)
    off = ~np.eye(K, dtype=bool)
    if np.any(D[off] == 0.0):
        i, j = np.argwhere((D == 0.0) & off)[0]
        raise UndefinedMetricError(
            f"The Davies–Bouldin index is undefined: clusters {clusters[i]!r} and {clusters[j]!r} have "
            "the same centroid (their distance, a denominator, is 0).")
    with np.errstate(divide="ignore", invalid="ignore"):
        R = (H[:, None] + H[None, :]) / np.where(off, D, np.inf)
    db_k = R.max(axis=1)
    value = float(db_k.mean())
    return (value, db_k) if per_cluster else value


# -- silhouette ---------------------------------------------------------------------------
def silhouette_samples(X, labels, *, convention: str = "standard", block_size: int | None = None,
                       progress=None) -> np.ndarray:
    """Silhouette coefficient s(x_i) of every point (seed 001), in row blocks.

    Parameters
    ----------
    convention : "standard" (a_i divides by |π_k| − 1 and a point alone in its cluster has
        s = 0; equals scikit-learn's ``silhouette_samples``) or "seed" (a_i divides by |π_k| as
        written in seed 001).
    block_size : rows per block (default: about 262,000 distances per block).
    progress : optional object with ``checkpoint(fraction, message)`` (may raise FitCancelled).

    Memory is O(block_size × N); the N × N distance matrix is never formed.
    """
    if convention not in ("standard", "seed"):
        raise ValueError(f"Invalid value {convention!r} for 'convention': allowed 'standard' or 'seed'.")
    X, codes, clusters, counts = _prepare(X, labels)
    n = X.shape[0]
    K = clusters.shape[0]
    if K < 2 or K > n - 1:
        raise UndefinedMetricError(
            f"The silhouette is undefined for {K} cluster(s) on {n} points: it needs between 2 and "
            f"n − 1 = {n - 1} clusters (it compares each point's own cluster with the others).")
    Xc = X - X.mean(axis=0)
    x_sq = np.einsum("ij,ij->i", Xc, Xc)
    # squared distances from one product: [-2x, 1, |x|^2] . [y, |y|^2, 1] = |x|^2 - 2 x.y + |y|^2
    ones = np.ones((n, 1))
    left = np.hstack([-2.0 * Xc, ones, x_sq[:, None]])
    right_T = np.ascontiguousarray(np.hstack([Xc, x_sq[:, None], ones]).T)
    if block_size is None:
        block_size = max(1, _SILHOUETTE_BLOCK_ENTRIES // max(n, 1))
    block_size = int(max(1, block_size))
    # per-cluster sums of distances: one (n, K) one-hot product, or a segment sum over columns
    # sorted by cluster when K is large
    use_onehot = n * K <= (1 << 24)
    if use_onehot:
        onehot = np.zeros((n, K))
        onehot[np.arange(n), codes] = 1.0
    else:
        order = np.argsort(codes, kind="stable")
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    own_div = (counts - 1.0) if convention == "standard" else counts.astype(float)
    own_div = np.where(own_div > 0, own_div, 1.0)
    s = np.empty(n)
    with blas_single_thread():
        for start in range(0, n, block_size):
            if progress is not None:
                progress.checkpoint(start / n, f"Silhouette {start:,}/{n:,} points")
            stop = min(start + block_size, n)
            rows = np.arange(start, stop)
            D = left[start:stop] @ right_T
            np.maximum(D, 0.0, out=D)
            np.sqrt(D, out=D)
            D[rows - start, rows] = 0.0            # exact zero self-distance
            if use_onehot:
                sums = D @ onehot                   # (block, K)
            else:
                sums = np.add.reduceat(D[:, order], starts, axis=1)
            own = codes[start:stop]
            a = sums[rows - start, own] / own_div[own]
            means = sums / counts[None, :]
            means[rows - start, own] = np.inf
            b = means.min(axis=1)
            denom = np.maximum(a, b)
            with np.errstate(divide="ignore", invalid="ignore"):
                sb = np.where(denom > 0, (b - a) / denom, 0.0)
            if convention == "standard":
                sb[counts[own] == 1] = 0.0
            s[start:stop] = sb
    if progress is not None:
        progress.checkpoint(1.0, f"Silhouette {n:,}/{n:,} points")
    return s


def silhouette(X, labels, *, convention: str = "standard", block_size: int | None = None,
               progress=None) -> float:
    """Silhouette coefficient of the partition s(Π): mean of :func:`silhouette_samples`."""
    return float(np.mean(silhouette_samples(X, labels, convention=convention, block_size=block_size,
                                            progress=progress)))


# -- comparing two labelings ----------------------------------------------------------------
def contingency_table(a, b) -> ContingencyTable:
    """Counts n_rc of points labelled rows[r] in ``a`` and cols[c] in ``b``."""
    a = _labels_1d(a, None, "a")
    b = _labels_1d(b, None, "b")
    if a.shape[0] != b.shape[0]:
        raise DataError(f"The two labelings have different lengths ({a.shape[0]} and {b.shape[0]}): "
                        "they must label the same samples.")
    rows, ia = np.unique(a, return_inverse=True)
    cols, ib = np.unique(b, return_inverse=True)
    R, C = rows.shape[0], cols.shape[0]
    table = np.bincount(ia.reshape(-1) * C + ib.reshape(-1), minlength=R * C).reshape(R, C)
    return ContingencyTable(table=table.astype(np.int64), rows=rows, cols=cols)


def _comb2(x):
    x = np.asarray(x, dtype=np.float64)
    return x * (x - 1.0) / 2.0


def adjusted_rand_index(a, b) -> float:
    """Adjusted Rand index between two labelings (1 = identical partitions, ~0 = chance).

    ARI = (Σ_rc C(n_rc, 2) − E) / (½ (Σ_r C(a_r, 2) + Σ_c C(b_c, 2)) − E) with
    E = Σ_r C(a_r, 2) Σ_c C(b_c, 2) / C(n, 2); when the denominator is 0 (both labelings put
    everything in one cluster, or everything in singletons) the partitions are identical and 1
    is returned.
    """
    ct = contingency_table(a, b)
    n = int(ct.table.sum())
    if n == 0:
        raise DataError("The labelings are empty.")
    sum_comb = float(_comb2(ct.table).sum())
    sum_a = float(_comb2(ct.table.sum(axis=1)).sum())
    sum_b = float(_comb2(ct.table.sum(axis=0)).sum())
    total = float(_comb2(n))
    expected = sum_a * sum_b / total if total > 0 else 0.0
    max_index = 0.5 * (sum_a + sum_b)
    if max_index == expected:
        return 1.0
    return float((sum_comb - expected) / (max_index - expected))


# -- Gaussian mixtures (seed 000: the log-likelihood criterion for choosing k) --------------------
class GaussianMixtureParams(NamedTuple):
    weights: np.ndarray        #: (K,) mixing proportions
    means: np.ndarray          #: (K, d)
    covariances: np.ndarray    #: (K, d, d) full, (K, d) diag, (K,) spherical
    covariance_type: str
    precisions_cholesky: np.ndarray


def mixture_from_responsibilities(X, resp, covariance_type: str = "full",
                                  reg_covar: float = 1e-6) -> GaussianMixtureParams:
    """M-step: the Gaussian mixture of (soft) responsibilities ``resp`` (n, K)."""
    if covariance_type not in ("full", "diag", "spherical"):
        raise ValueError(f"Invalid value {covariance_type!r} for 'covariance_type': allowed 'full', "
                         "'diag' or 'spherical'.")
    weights, means, cov = m_step(X, resp, covariance_type, reg_covar)
    return GaussianMixtureParams(weights, means, cov, covariance_type,
                                 precision_cholesky(cov, covariance_type, reg_covar))


def mixture_from_partition(X, labels, covariance_type: str = "full",
                           reg_covar: float = 1e-6) -> GaussianMixtureParams:
    """The Gaussian mixture built from a partition (seed 000): weight = proportion of the points
    in the cluster, mean = centroid, covariance = within-cluster covariance (+ reg_covar·I)."""
    X, codes, clusters, counts = _prepare(X, labels)
    resp = np.zeros((X.shape[0], clusters.shape[0]))
    resp[np.arange(X.shape[0]), codes] = 1.0
    return mixture_from_responsibilities(X, resp, covariance_type, reg_covar)


def mixture_log_likelihood(X, mixture: GaussianMixtureParams) -> np.ndarray:
    """(n,) log p(x_i) of each row under a Gaussian mixture."""
    X = check_data(X, name="X", min_samples=1)
    if X.shape[1] != mixture.means.shape[1]:
        raise DataError(f"X has {X.shape[1]} feature(s) but the mixture has {mixture.means.shape[1]}.")
    wlp = log_gaussian(X, mixture.means, mixture.precisions_cholesky, mixture.covariance_type)
    return logsumexp_rows(wlp + np.log(mixture.weights))
