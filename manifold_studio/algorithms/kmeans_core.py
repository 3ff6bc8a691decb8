"""The k-means iteration of the project (Lloyd's algorithm), shared by every method that
needs it (the ``kmeans`` plugin, spectral clustering, hierarchical divisive clustering,
the Gaussian-mixture initialisation, "choose k").

Algorithm (seed 000 / 001)::

    initialise the k centres from data points ("random") or by greedy k-means++
    repeat
        assign each point to its nearest centre          s_i = argmin_j ||x_i - mu_j||^2
        W = sum_i ||x_i - mu_{s_i}||^2                  (within-cluster inertia)
        mu_j = mean of the points assigned to j
    until the assignment did not change, or sum_j ||mu_j(new) - mu_j(old)||^2 <= tol * mean
          feature variance (scikit-learn's rule), or max_iter; then assign once more

repeated ``n_init`` times, keeping the run with the lowest inertia.

Implementation notes
--------------------
* Dense data are centred once (their mean subtracted) so that the expansion
  ``||x||^2 - 2 x.c + ||c||^2`` used by k-means++ and :func:`assign_nearest` does not lose
  precision on data far from the origin.
* The centred data are stored once as a transposed, augmented (d + 2, n) array so that one
  matrix product per block of points gives a (k, block) slab of squared distances (k-means++,
  :func:`assign_nearest`, sparse data): no Python loop over points, no (n, k, d) temporary.
* Lloyd's iterations on dense data run compiled, with Hamerly's bounds (most points are not
  compared with every centre once the centres move little; the labels are those of the plain
  assignment) and cluster sums kept up to date as points change cluster, on every core
  (:mod:`manifold_studio.algorithms.kmeans_lloyd`). The inertia of an assignment comes from
  those sums (``sum ||x||^2 - 2 sum_k S_k.c_k + sum_k n_k ||c_k||^2``).
* Sparse data (scipy.sparse) are not centred and never densified: the same expansion, one
  sparse-dense product per block, cluster sums from one product with the one-hot assignment
  (:mod:`manifold_studio.algorithms.kmeans_data` holds both storages).
* Sample weights (``sample_weight``, scikit-learn's meaning): centres are weighted means, the
  inertia a weighted sum, k-means++ draws with probability proportional to weight × squared
  distance and "random" draws k distinct points with probability proportional to weight.
* Empty clusters are re-seeded with the points farthest from their centres.
* When fewer than ``n_clusters`` distinct points exist, a :class:`DataError` says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.algorithms.checks import check_random_state, is_sparse
from manifold_studio.algorithms.kmeans_data import DenseData, SparseData, augment, count_distinct_rows
from manifold_studio.algorithms.kmeans_lloyd import DenseAssigner
from manifold_studio.algorithms.progress import NullProgress, as_progress
from manifold_studio.errors import DataError, InvalidParameterError

__all__ = ["KMeansResult", "kmeans", "assign_nearest", "count_distinct_rows", "blas_single_thread",
           "check_sample_weight"]

#: entries of one (k, block) slab of squared distances (256 kB: bounded memory, cache resident)
_BLOCK_ENTRIES = 1 << 15


@dataclass
class KMeansResult:
    """Result of :func:`kmeans` for the best of the ``n_init`` runs."""

    centers: np.ndarray          #: (k, d) cluster centres (means of their points)
    labels: np.ndarray           #: (n,) index of the nearest centre of each point
    inertia: float               #: within-cluster inertia W = sum ||x_i - mu_{s_i}||^2
    n_iter: int                  #: number of centre updates of the best run
    inertia_history: np.ndarray = field(default_factory=lambda: np.empty(0))  #: W after each assignment


def _rows_per_block(k: int) -> int:
    return max(128, _BLOCK_ENTRIES // max(int(k), 1))


def _too_few_distinct_data(data, n_clusters: int) -> DataError:
    return _too_few(data.distinct_count(), data.n, n_clusters)


def _too_few(m: int, n: int, n_clusters: int) -> DataError:
    return DataError(f"Cannot form n_clusters={n_clusters} clusters: the data have only {m} distinct "
                     f"point(s) (out of {n} samples). Choose n_clusters <= {m}.")


def _sq_dist_rows(data, Y: np.ndarray) -> np.ndarray:
    """(m, n) squared distances between rows of Y and every point (expansion, clipped at 0)."""
    D = data.slab(augment(Y), 0, data.n)
    np.maximum(D, 0.0, out=D)
    return D


def _assign(data, centers: np.ndarray, labels_out: np.ndarray) -> None:
    """Nearest centre of each point (labels written into ``labels_out``); sparse data and
    :func:`assign_nearest` (dense Lloyd iterations use :mod:`~manifold_studio.algorithms.kmeans_lloyd`).

    Each (k, block) slab of squared distances comes from one product with the augmented data
    (clipped at 0). Non-negative doubles order like their int64 bit patterns, so the centre
    index is packed into the lowest ``ceil(log2 k)`` mantissa bits and one
    ``np.minimum.reduce`` over the k contiguous rows gives minimum and argmin at once
    (numpy's row-wise argmin over short rows is call-bound). Distances equal to within a
    relative 2**-(52 - bits) resolve to the lower index.
    """
    n = data.n
    k = centers.shape[0]
    if k == 1:
        labels_out[:] = 0
        return
    bits = max(1, int(k - 1).bit_length())
    low = np.int64((1 << bits) - 1)
    high = ~low
    aug = augment(centers)
    step = _rows_per_block(k)
    index_block = np.empty((k, min(step, n)), dtype=np.int64)
    index_block[:] = np.arange(k, dtype=np.int64)[:, None]
    for start in range(0, n, step):
        stop = min(start + step, n)
        D = data.slab(aug, start, stop)       # (k, block) squared distances
        np.maximum(D, 0.0, out=D)
        V = D.view(np.int64)
        V &= high
        V |= index_block[:, :stop - start]
        best = np.minimum.reduce(V, axis=0)
        np.bitwise_and(best, low, out=labels_out[start:stop], casting="unsafe")


def kmeans_plusplus(data, n_clusters: int, rng: np.random.Generator,
                    n_local_trials: int | None = None, progress=None) -> np.ndarray:
    """Greedy k-means++ seeding (Arthur & Vassilvitskii 2007, with local trials).

    Each new centre is the best of ``n_local_trials`` candidates drawn with probability
    proportional to the (weight times the) squared distance to the closest centre already chosen;
    the first is drawn uniformly (with probability proportional to the weight).
    Returns the indices of the chosen points. Raises DataError when the data have fewer
    than ``n_clusters`` distinct points.
    """
    n = data.n
    if n_local_trials is None:
        n_local_trials = 2 + int(math.log(n_clusters))
    w = data.w
    idx = np.empty(n_clusters, dtype=np.intp)
    # the same draw with or without weights (uniform weights give the unweighted result)
    idx[0] = rng.choice(n, p=_draw_probabilities(w, n))
    closest = _sq_dist_rows(data, data.rows(idx[:1]))[0]
    closest[idx[0]] = 0.0
    pot = closest.sum() if w is None else closest @ w
    trial_rows = np.arange(n_local_trials)
    for c in range(1, n_clusters):
        if progress is not None and c % 8 == 0:
            progress.checkpoint()
        if not pot > 0.0:
            raise _too_few_distinct_data(data, n_clusters)
        cum = np.cumsum(closest if w is None else closest * w)
        r = rng.random(n_local_trials) * cum[-1]
        cand = np.searchsorted(cum, r, side="right")
        np.minimum(cand, n - 1, out=cand)
        D = _sq_dist_rows(data, data.rows(cand))      # (trials, n), contiguous rows
        D[trial_rows, cand] = 0.0
        np.minimum(D, closest, out=D)
        pots = D.sum(axis=1) if w is None else D @ w
        best = int(np.argmin(pots))
        idx[c] = cand[best]
        closest = D[best]
        pot = pots[best]
    return idx


class _Ticker:
    """Adapts the k-means loop's (run, iteration) position to a 0..1 fraction."""

    def __init__(self, progress, n_init: int, max_iter: int):
        self.progress = progress
        self.n_init = n_init
        self.max_iter = max_iter
        self.run = 0
        self.it = 0

    def checkpoint(self, fraction=None, message=None):  # arguments ignored: position is tracked here
        inner = min(self.it / max(self.max_iter, 1), 1.0)
        frac = (self.run + inner) / self.n_init
        self.progress.checkpoint(frac, f"k-means run {self.run + 1}/{self.n_init}, iteration {self.it}")


class _PlainAssigner:
    """Lloyd's assignment step on sparse data (every distance, by the expansion, each step), with
    the interface of :class:`~manifold_studio.algorithms.kmeans_lloyd.DenseAssigner`."""

    def __init__(self, data, k: int):
        self.data = data
        self.k = k
        self.labels = np.full(data.n, -1, dtype=np.intp)

    def assign(self, C):
        new = np.empty(self.data.n, dtype=np.intp)
        _assign(self.data, C, new)
        changed = int(np.count_nonzero(new != self.labels))
        self.labels = new
        sums, counts = self.data.cluster_sums(new, self.k)
        return new, sums, counts, changed


def _farthest(data, centers, labels, m: int) -> np.ndarray:
    """The m points farthest from their centres (points without weight excluded); DataError
    when fewer than m points lie off their centres (too few distinct points)."""
    d2 = data.sq_dist_to_assigned(centers, labels)
    if data.w is not None:
        d2[data.w <= 0] = 0.0     # a point without weight cannot hold a cluster
    far = np.argpartition(-d2, m - 1)[:m]
    if not np.all(d2[far] > 0.0):
        raise _too_few_distinct_data(data, centers.shape[0])
    return far


def _reseed_empty(data, centers, labels, sums, counts):
    """Clusters of weight 0 take the points farthest from their centres (scikit-learn's
    relocation): those points leave their own cluster's sums. Modifies sums and counts."""
    empty = np.flatnonzero(counts == 0)
    far = _farthest(data, centers, labels, empty.size)
    far_points = data.rows(far)
    fw = np.ones(far.size) if data.w is None else data.w[far]
    np.subtract.at(sums, labels[far], far_points * fw[:, None])
    np.subtract.at(counts, labels[far], fw)
    sums[empty] = far_points * fw[:, None]
    counts[empty] = fw
    if np.any(counts <= 0):  # a re-seeded point emptied its own cluster (rare)
        counts[counts <= 0] = 1.0


def _lloyd(data, centers, max_iter, tol, ticker, publish, mean):
    """One k-means run from ``centers``; returns (centers, labels, inertia, n_iter, history).

    scikit-learn's iteration and stopping rule: each iteration assigns the points to the
    centres and moves the centres to the means of their points; the run stops when the
    assignment did not change (strict convergence) or when the squared centre moves of the
    iteration sum to at most ``tol`` (already scaled by the mean feature variance), and then
    assigns the points once more to the final centres (unless strictly converged).
    ``history``: the inertia of each assignment (n_iter + 1 values, non-increasing)."""
    k = centers.shape[0]
    assigner = _PlainAssigner(data, k) if data.sparse else DenseAssigner(data, k)
    history = []

    def inertia(sums, counts, C):
        # W(labels, C) = sum ||x||^2 - 2 sum_k S_k.c_k + sum_k n_k ||c_k||^2
        w = data.x_sq_sum - 2.0 * np.einsum("ij,ij->", sums, C) + float(counts @ np.einsum("ij,ij->i", C, C))
        return max(w, 0.0)

    strict = False
    n_iter = 0
    for it in range(max_iter):
        ticker.it = it + 1
        ticker.checkpoint()
        labels, sums, counts, changed = assigner.assign(centers)
        history.append(inertia(sums, counts, centers))
        if np.any(counts == 0):
            _reseed_empty(data, centers, labels, sums, counts)
        new_centers = sums / counts[:, None]
        shift = float(np.sum((new_centers - centers) ** 2))
        centers = new_centers
        n_iter = it + 1
        if publish is not None:
            publish({"step": "kmeans", "run": ticker.run, "iteration": n_iter,
                     "centers": centers + mean, "labels": labels.copy(), "inertia": history[-1]})
        if it > 0 and changed == 0:
            strict = True     # the centres are the means of an unchanged assignment: a fixed point
            break
        if shift <= tol:
            break
    if strict:
        history.append(history[-1])
    else:
        labels, sums, counts, _ = assigner.assign(centers)
        history.append(inertia(sums, counts, centers))
    w = history[-1]
    if np.any(counts == 0):
        # the last assignment left a cluster empty: re-seed it once more and reassign
        empty = np.flatnonzero(counts == 0)
        centers = centers.copy()
        centers[empty] = data.rows(_farthest(data, centers, labels, empty.size))
        _assign(data, centers, labels)
        w = float(_weighted_sum(data, data.sq_dist_to_assigned(centers, labels)))
    return centers, labels, w, n_iter, np.asarray(history)


def _weighted_sum(data, values: np.ndarray) -> float:
    return float(values.sum() if data.w is None else values @ data.w)


def _draw_probabilities(w: np.ndarray | None, n: int) -> np.ndarray:
    """Probabilities of drawing each point as a centre: proportional to its weight (uniform
    without weights); one code path, so constant weights draw what no weights draw."""
    return np.full(n, 1.0 / n) if w is None else w / w.sum()


def check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    """Sample weights as a float (n,) array (None stays None: every weight 1), or an error naming
    the problem: one finite, non-negative weight per sample, not all zero."""
    if sample_weight is None:
        return None
    if np.isscalar(sample_weight):
        w = np.full(n, float(sample_weight))
    else:
        try:
            w = np.asarray(sample_weight, dtype=float)
        except (TypeError, ValueError):
            raise DataError("sample_weight must hold numbers (one weight per sample).") from None
    if w.ndim != 1 or w.shape[0] != n:
        raise DataError(f"sample_weight has shape {w.shape}; expected ({n},), one weight per sample.")
    if not np.all(np.isfinite(w)):
        raise DataError("sample_weight contains NaN or infinite values.")
    if np.any(w < 0):
        raise DataError(f"sample_weight must be non-negative: weight {int(np.argmax(w < 0))} is "
                        f"{w[np.argmax(w < 0)]:g}.")
    if not w.sum() > 0:
        raise DataError("sample_weight are all zero (they sum to 0): at least one sample needs a positive weight.")
    return w


def kmeans(X, n_clusters: int, *, init: str = "k-means++", n_init: int = 10, max_iter: int = 300,
           tol: float = 1e-4, random_state=None, progress=None, sample_weight=None) -> KMeansResult:
    """k-means clustering (Lloyd iterations, best of ``n_init`` runs).

    Parameters
    ----------
    X : (n, d) array of finite floats, or a scipy.sparse matrix (never densified).
    n_clusters : number of clusters k (1 <= k <= number of distinct points).
    init : ``"k-means++"`` (greedy k-means++ seeding) or ``"random"`` (k data points drawn
        uniformly without replacement, as in the seeds; duplicates are re-seeded like empty
        clusters), or a (k, d) array of initial centres (then ``n_init`` is 1).
    n_init : number of runs from different initialisations; the lowest inertia wins.
    max_iter : maximum number of centre updates per run.
    tol : scikit-learn's meaning: a run stops when the squared moves of the centres in one
        iteration sum to at most ``tol`` times the mean variance of the features (0: only when
        the assignment stops changing), or when the assignment did not change.
    random_state : None, int or numpy Generator.
    progress : object with ``checkpoint(fraction, message)`` (raises FitCancelled on cancel) and
        optionally ``partial(result)``, which receives a dict (centers, labels, inertia,
        iteration, run) after every iteration.
    sample_weight : None or (n,) non-negative weights (scikit-learn's meaning: a weight 2 counts
        the point twice in the centres and the inertia).

    Returns
    -------
    KMeansResult of the best run: centers, labels, inertia, n_iter, inertia_history.
    """
    sparse = is_sparse(X)
    X = sp.csr_array(X, dtype=float) if sparse else np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise DataError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
    n, d = X.shape
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) or n_clusters < 1:
        raise InvalidParameterError(f"Invalid value {n_clusters!r} for parameter 'n_clusters': "
                                    "allowed an integer >= 1.")
    n_clusters = int(n_clusters)
    if n < n_clusters:
        raise DataError(f"Cannot form n_clusters={n_clusters} clusters from {n} sample(s): "
                        f"choose n_clusters <= {n}.")
    if not np.all(np.isfinite(X.data if sparse else X)):
        raise DataError("X contains NaN or infinite values; remove or impute them first.")
    explicit = None
    if not isinstance(init, str):
        explicit = np.asarray(init, dtype=float)
        if explicit.shape != (n_clusters, d):
            raise InvalidParameterError(f"Invalid initial centres for parameter 'init': expected shape "
                                        f"({n_clusters}, {d}), got {explicit.shape}.")
        n_init = 1
    elif init not in ("k-means++", "random"):
        raise InvalidParameterError(f"Invalid value {init!r} for parameter 'init': allowed one of "
                                    "'k-means++', 'random' or an array of initial centres.")
    if int(n_init) < 1:
        raise InvalidParameterError(f"Invalid value {n_init!r} for parameter 'n_init': allowed an integer >= 1.")
    if int(max_iter) < 1:
        raise InvalidParameterError(f"Invalid value {max_iter!r} for parameter 'max_iter': allowed an integer >= 1.")
    if not tol >= 0:
        raise InvalidParameterError(f"Invalid value {tol!r} for parameter 'tol': allowed a number >= 0.")
    n_init, max_iter, tol = int(n_init), int(max_iter), float(tol)

    weights = check_sample_weight(sample_weight, n)
    if weights is not None and np.all(weights == 1.0):
        weights = None  # unit weights are no weights (scikit-learn gives the identical result)
    if weights is not None and explicit is None and init == "random" and np.count_nonzero(weights) < n_clusters:
        raise DataError(f"init='random' draws n_clusters={n_clusters} distinct points with positive "
                        f"weight; only {np.count_nonzero(weights)} have one.")

    progress = as_progress(progress)
    rng = check_random_state(random_state)

    with blas_single_thread():
        return _kmeans(X, n_clusters, init, explicit, n_init, max_iter, tol, rng, progress, weights)


def _tolerance(X, tol: float) -> float:
    """scikit-learn's absolute tolerance: ``tol`` times the mean variance of the features
    (unweighted, as scikit-learn)."""
    if tol == 0:
        return 0.0
    if is_sparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean * mean
        return float(np.mean(np.maximum(var, 0.0)) * tol)
    return float(np.mean(np.var(X, axis=0)) * tol)


def _kmeans(X, n_clusters, init, explicit, n_init, max_iter, tol, rng, progress, weights=None):
    n = X.shape[0]
    tol = _tolerance(X, tol)
    publish = None if isinstance(progress, NullProgress) else getattr(progress, "partial", None)
    ticker = _Ticker(progress, n_init, max_iter)
    ticker.checkpoint()
    if is_sparse(X):
        mean = np.zeros(X.shape[1])
        data = SparseData(X, weights)
    else:
        mean = X.mean(axis=0)
        data = DenseData(X - mean, weights)

    best = None
    for run in range(n_init):
        ticker.run, ticker.it = run, 0
        ticker.checkpoint()
        if explicit is not None:
            centers = explicit - mean
        elif init == "k-means++":
            centers = data.rows(kmeans_plusplus(data, n_clusters, rng, progress=ticker))
        else:
            centers = data.rows(rng.choice(n, size=n_clusters, replace=False,
                                           p=_draw_probabilities(weights, n)))
        centers, labels, w, n_iter, hist = _lloyd(data, np.array(centers, dtype=float),
                                                  max_iter, tol, ticker, publish, mean)
        # a later run wins only when clearly better: runs reaching the same partition (labels
        # permuted) differ by rounding only, and the first of them is kept (dense and sparse agree)
        if best is None or w < best[2] - 1e-9 * abs(best[2]):
            best = (centers, labels, w, n_iter, hist)
    centers, labels, _, n_iter, hist = best
    # exact inertia of the returned partition (no expansion round-off)
    inertia = _weighted_sum(data, data.sq_dist_to_assigned(centers, labels))
    hist = hist.copy()
    hist[-1] = inertia
    progress.checkpoint(1.0, f"k-means done: inertia {inertia:.6g}")
    return KMeansResult(centers=centers + mean, labels=labels, inertia=inertia, n_iter=n_iter,
                        inertia_history=hist)


def assign_nearest(X, centers) -> tuple[np.ndarray, np.ndarray]:
    """Labels of the nearest centre of each row of ``X`` and the squared distance to it.

    Sample-wise (each row's result depends on that row only), vectorised in row chunks.
    The squared distances are computed directly as ``||x - c||^2`` (no cancellation) for dense
    X; a sparse X (never densified) uses the expansion ``||x||^2 - 2 x.c + ||c||^2``.
    """
    centers = np.asarray(centers, dtype=float)
    if is_sparse(X):
        data = SparseData(X)
        if data.d != centers.shape[1] or centers.ndim != 2 or centers.shape[0] == 0:
            raise DataError(f"X of shape {X.shape} and centres of shape {centers.shape} do not match.")
        labels = np.empty(data.n, dtype=np.intp)
        with blas_single_thread():
            _assign(data, centers, labels)
        return labels, data.sq_dist_to_assigned(centers, labels)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or centers.ndim != 2 or X.shape[1] != centers.shape[1]:
        raise DataError(f"X of shape {X.shape} and centres of shape {centers.shape} do not match.")
    if centers.shape[0] == 0:
        raise DataError("No centres given.")
    # centre both on the centres' mean (a constant of the model: keeps extension sample-wise)
    shift = centers.mean(axis=0)
    Cc = centers - shift
    data = DenseData(X - shift)
    labels = np.empty(X.shape[0], dtype=np.intp)
    with blas_single_thread():
        _assign(data, Cc, labels)
    d2 = data.sq_dist_to_assigned(Cc, labels)
    return labels, d2
