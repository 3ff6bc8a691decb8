"""t-SNE (and SNE, symmetric SNE) of seed 002, animated while it optimises, extendable."""
from __future__ import annotations

import time
import weakref

import numpy as np

import scipy.sparse as sp
import scipy.sparse.linalg as spla

from manifold_studio.algorithms.neighbors_sparse import check_sparse_metric, sparse_distance_matrix, sparse_unit_rows
from manifold_studio.algorithms.pca_solvers import CentredSparse
from manifold_studio.algorithms.neighbors_sparse import SPARSE_CONDITION
from manifold_studio.algorithms.sparse_input import SparseInput, all_rows_identical, column_mean
from manifold_studio.algorithms import Choice, EmbeddingAlgorithm, Float, Int
from manifold_studio.algorithms.neighbors import (
    METRICS, PhaseTimer, check_precomputed, make_index, metric_param, neighbors_param, neighbour_summary,
    unit_rows,
)
from manifold_studio.algorithms.params import (
    AnyOf, DataLimit, max_iter_param, n_components_param, random_state_param,
)
from manifold_studio.algorithms.progress import FitCancelled, SubProgress
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.algorithms.tsne_affinities import (exact_affinities, n_affinity_neighbours,
                                                        neighbour_affinities, sparse_affinities)
from manifold_studio.algorithms.tsne_gradient import (FixedRepulsion, exact_kl_gradient,
                                                      exact_repulsion, fft_kl_gradient,
                                                      fixed_attractive_forces, p_log_p)
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl

#: 'auto' uses exact gradients up to this many points, the FFT approximation above
EXACT_MAX_N = 500
#: seconds between two published intermediate maps
PARTIAL_INTERVAL = 0.1
MIN_GAIN = 0.01
_CACHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _gd_step(Y, update, gains, grad, momentum, lr):
    """Gradient descent with momentum and per-coordinate gains (Jacobs 1988), as in
    van der Maaten's and scikit-learn's t-SNE: gains grow by 0.2 where the gradient changes
    sign against the last update and shrink by 0.8 otherwise."""
    inc = update * grad < 0.0
    gains[inc] += 0.2
    gains[~inc] *= 0.8
    np.clip(gains, MIN_GAIN, None, out=gains)
    update *= momentum
    update -= lr * (gains * grad)
    Y += update


def auto_learning_rate(n: int, early_exaggeration: float, variant: str) -> float:
    """scikit-learn's rule max(n / early_exaggeration / 4, 50) for t-SNE. The Gaussian map
    kernels lack t-SNE's damping factor w_ij, so symmetric SNE takes n / early_exaggeration / 4
    without the floor, and SNE (conditional P: every row sums to one, n times the joint mass)
    that divided by n."""
    base = n / early_exaggeration / 4.0
    if variant == "tsne":
        return max(base, 50.0)
    return base if variant == "symmetric_sne" else base / n


class TSNE(SparseInput, EmbeddingAlgorithm):
    """t-distributed stochastic neighbour embedding (seed 002), with SNE and symmetric SNE.

    Input affinities p_{j|i} are Gaussian with sigma_i set by binary search so that the
    perplexity exp(H(P_i)) equals ``perplexity``; p_ij = (p_{j|i} + p_{i|j}) / 2n. The map
    minimises KL(P || Q) with q_ij proportional to (1 + |y_i - y_j|^2)^-1 ('tsne'), to
    exp(-|y_i - y_j|^2) ('symmetric_sne'), or the sum over i of KL(P_i || Q_i) with
    conditional Gaussians ('sne'). Optimisation: gradient descent with momentum and gains,
    ``early_exaggeration`` multiplying P for the first ``n_iter_early`` iterations.

    ``method='exact'`` uses dense O(n^2) gradients; ``'fft'`` (2-D t-SNE) uses the sparse P
    of the 3 * perplexity nearest neighbours and FIt-SNE's FFT-accelerated interpolation for
    the repulsive forces; ``'auto'`` picks exact up to 500 points (about 5 ms per iteration there; above, the FFT route is faster at the same quality). ``kl_divergence_`` is
    the final KL (exact for the exact method, the sparse-P / interpolated-Z value otherwise).

    ``extend`` places new points into the fixed map (openTSNE's transform): affinities to
    their 3 * perplexity nearest training points with the training perplexity, start at the
    affinity-weighted mean of those points' positions, then ``extend_iter`` iterations moving
    each new point alone (attraction to its neighbours, repulsion from all training points
    normalised per point), so extension is sample-wise. A new point equal to a training point
    gets that point's place.

    As scikit-learn's TSNE: ``perplexity`` must be below the number of points (from n - 1 on,
    the affinities are uniform over the other points); ``n_iter_`` is the index of the last
    gradient iteration run, counted from 0 (``max_iter - 1`` unless Cancel stopped the fit, as
    scikit-learn reports it); ``n_steps_`` is the number of steps taken; ``metric`` other than
    'euclidean' uses the distances themselves rather than their squares in the Gaussians;
    'precomputed' takes the n x n distance matrix (and init='random'), and extends new points
    given by their distances to the fitted points. The neighbours of the 'fft' method are exact
    or approximate (``neighbors``); ``timings_`` gives the seconds spent on neighbours,
    affinities and optimisation, ``neighbors_recall_`` the recall@10 of approximate neighbours.

    Sparse X (CSR; metric 'euclidean' or 'cosine') is searched exactly by sparse products (by
    NN-descent on the sparse rows with neighbors='approximate', or 'auto' on large data)
    (:mod:`~manifold_studio.algorithms.neighbors_sparse`), never densified; its affinities are
    those of the dense copy, and sparse rows extend like dense ones.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("tsne", perplexity=20, max_iter=300, random_state=0).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    preserves_float32 = True
    id = "tsne"
    name = "t-SNE"
    sparse_condition = SPARSE_CONDITION
    help = ("Draws a map where points that are close neighbours in the data stay close: clusters "
            "appear as separate islands (distances between islands and island sizes mean little). "
            "The perplexity is roughly the number of neighbours each point cares about (5 to 50). "
            "The map is animated while it optimises; Cancel keeps the current map. New points are "
            "placed into a finished map by their nearest fitted points.")
    min_samples = 4
    extend_chunk_size = 4096
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "training_points_": Fitted(shape=("n_train", "n_features_in_"), required=True),
        "embedding_": Fitted(shape=("n_train", None), required=True),
    }

    #: on a distance matrix (metric='precomputed') there are no coordinates for a PCA start
    distance_defaults = {"init": "random"}
    params = (
        Float("perplexity", 30.0, "Effective number of neighbours of each point (must be less than "
              "the number of points, as scikit-learn; below 1 each point keeps about one neighbour).",
              low=0.0, low_open=True, log=True, limit=DataLimit("n_samples", strict=True, why="as scikit-learn; from n - 1 on "
                                                 "the affinities are uniform; typical values are 5 to 50")),
        n_components_param(2, "Number of output dimensions (the fft method needs 2)."),
        Float("early_exaggeration", 12.0, "Factor multiplying the affinities during the first "
              "n_iter_early iterations (forms tight, well separated clusters).", low=1.0),
        AnyOf("learning_rate", "auto", "Step size: 'auto' = max(n / early_exaggeration / 4, 50) as "
              "scikit-learn for t-SNE (smaller for the SNE variants), or a positive number.",
              options=(Choice("learning_rate", "auto", "", choices=("auto",)),
                       Float("learning_rate", 200.0, "", low=0.0, low_open=True))),
        max_iter_param(1000, "Total number of gradient iterations (early exaggeration included)."),
        Int("n_iter_early", 250, "Iterations with early exaggeration and momentum 0.5.", low=0),
        Float("momentum", 0.8, "Momentum after the early-exaggeration phase (0.5 before).",
              low=0.0, high=1.0, high_open=True),
        Choice("init", "pca", "Starting map: 'pca' (first principal components scaled to standard "
               "deviation 1e-4) or 'random' (Gaussian, standard deviation 1e-4).",
               choices=("pca", "random")),
        random_state_param("Seed of the random start (and of PCA's sign); empty = a different map every run."),
        metric_param(METRICS),
        neighbors_param(),
        Choice("method", "auto", "Gradient: 'exact' (O(n^2), any variant and dimension), 'fft' "
               "(FIt-SNE interpolation, 2-D t-SNE, large n) or 'auto' (exact up to 500 points).",
               choices=("auto", "exact", "fft")),
        Choice("variant", "tsne", "'tsne' (Student-t map kernel), 'symmetric_sne' (Gaussian, joint P) "
               "or 'sne' (Gaussian, conditional P) as derived in the seed; the SNE variants are exact only.",
               choices=("tsne", "symmetric_sne", "sne")),
        Int("extend_iter", 250, "Iterations when placing new points into the fitted map.", low=0),
        Float("extend_learning_rate", 0.1, "Step size when placing new points (per-point gradient).",
              low=0.0, low_open=True),
    )

    # -- fit ----------------------------------------------------------------------------
    def _resolve_method(self, n):
        p = self._p
        method = p["method"]
        if method == "auto":
            method = "exact" if (n <= EXACT_MAX_N or p["variant"] != "tsne" or p["n_components"] != 2) else "fft"
        if method == "fft" and (p["variant"] != "tsne" or p["n_components"] != 2):
            raise InvalidParameterError(
                f"method='fft' needs variant='tsne' and n_components=2 (got variant={p['variant']!r}, "
                f"n_components={p['n_components']}); use method='exact'.")
        return method

    def _check(self, X):
        n = X.shape[0]
        p = self._p
        perp = p["perplexity"]
        if perp >= n:
            raise DataError(f"perplexity={perp:g} is too large for {n} points: it must be less than the "
                            f"number of points, {n} (as scikit-learn; from {n - 1} on the affinities are "
                            f"uniform); typical values are 5 to 50 (e.g. {max(1.0, (n - 1) / 3):.3g}).")
        if sp.issparse(X):
            check_sparse_metric(p["metric"])
        if p["metric"] == "precomputed":
            check_precomputed(X)
            if p["init"] == "pca":
                raise InvalidParameterError("init='pca' cannot be used with metric='precomputed' (there are "
                                            "no coordinates to project); use init='random'.")
            if float(X.max()) == 0.0:
                raise DataError(f"All {n} points are at distance 0 from each other: t-SNE needs distances "
                                "between points to define neighbours.")
            return
        if sp.issparse(X):
            if p["metric"] == "cosine":
                sparse_unit_rows(sp.csr_array(X))
        elif p["metric"] == "cosine":
            unit_rows(X)
        if all_rows_identical(X):
            raise DataError(f"All {n} points are identical (constant data): t-SNE needs distances "
                            "between points to define neighbours.")

    def _init_map(self, X, rng):
        n, k = X.shape[0], self._p["n_components"]
        if self._p["init"] == "pca" and X.shape[1] >= 1:
            if sp.issparse(X):
                Y = self._sparse_pca_start(X, k)
            elif X.shape[0] > 4 * X.shape[1]:
                Xc = X - X.mean(axis=0)
                # principal axes from the d x d covariance (the thin SVD of an n x d matrix took
                # 7 s of a 10,000-point fit on a loaded machine; this takes milliseconds)
                w, V = np.linalg.eigh(Xc.T @ Xc)
                Y = Xc @ V[:, ::-1][:, :k]
            else:
                U, S, Vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
                Y = U[:, :k] * S[:k]
            if Y.shape[1] < k:
                Y = np.column_stack([Y, rng.normal(size=(n, k - Y.shape[1]))])
            signs = np.sign(Y[np.argmax(np.abs(Y), axis=0), np.arange(k)])
            Y = Y * np.where(signs == 0, 1.0, signs)
            std = Y[:, 0].std()
            return Y / (std if std > 0 else 1.0) * 1e-4
        return 1e-4 * rng.normal(size=(n, k))

    @staticmethod
    def _sparse_pca_start(X, k):
        """Principal coordinates of sparse X without densifying it: from the d x d covariance
        X^T X - n mu mu^T when n > 4 d, else by ARPACK on the centred operator."""
        mean = column_mean(X)
        n, d = X.shape
        if n > 4 * d:
            C = (X.T @ X).toarray() - n * np.outer(mean, mean)
            _, V = np.linalg.eigh(C)
            V = V[:, ::-1][:, :k]
            return np.asarray(X @ V) - mean @ V
        r = min(k, min(n, d) - 1)
        op = CentredSparse(sp.csr_matrix(X), mean).as_operator()
        U, S, _ = spla.svds(op, k=r, v0=np.ones(min(n, d)) / np.sqrt(min(n, d)))
        order = np.argsort(S)[::-1]
        return U[:, order] * S[order]

    def _fit(self, X, y, progress):
        p = self._p
        n = X.shape[0]
        self._check(X)
        method = self._resolve_method(n)
        variant = p["variant"]
        timer = PhaseTimer()
        progress.checkpoint(0.0, "Affinities")
        aff = SubProgress(progress, 0.0, 0.1, "Affinities: ")
        self.neighbors_recall_ = None
        index = None
        if method == "exact":
            with timer("affinities"):
                if sp.issparse(X):    # all pairs from sparse products (squared Euclidean or 1 - cos)
                    P = exact_affinities(sparse_distance_matrix(X, p["metric"]), p["perplexity"],
                                         symmetric=variant != "sne", metric="precomputed")
                else:
                    P = exact_affinities(X, p["perplexity"], symmetric=variant != "sne", metric=p["metric"])
            aff.checkpoint(1.0, "done")
            plogp = p_log_p(P)   # constant during the fit
            grad_fn = lambda Y, ex, kl: exact_kl_gradient(Y, P, variant, ex, plogp)  # noqa: E731
            self.neighbors_method_ = "all pairs"
        else:
            with timer("neighbours"):
                k = n_affinity_neighbours(p["perplexity"], n - 1)
                index = make_index(X, neighbors=p["neighbors"], metric=p["metric"], n_neighbors=k,
                                   random_state=p["random_state"] or 0,
                                   progress=SubProgress(aff, 0.0, 0.5, "Neighbour index: "))
                found = index.training_neighbors(k, progress=SubProgress(aff, 0.5, 0.9, "Neighbours: "))
                self.neighbors_method_ = "approximate" if index.approximate else index.method
                if index.approximate:
                    self.neighbors_recall_ = index.recall()
            with timer("affinities"):
                P = sparse_affinities(X, p["perplexity"], index=index, neighbours=found)
            grad_fn = lambda Y, ex, kl: fft_kl_gradient(Y, P, ex, with_kl=kl)  # noqa: E731
        rng = np.random.default_rng(p["random_state"])
        Y = self._init_map(X, rng)
        lr = p["learning_rate"]
        if lr == "auto":
            lr = auto_learning_rate(n, p["early_exaggeration"], variant)
        update = np.zeros_like(Y)
        gains = np.ones_like(Y)
        max_iter = p["max_iter"]
        n_early = min(p["n_iter_early"], max_iter)
        kl_iters, kl_values = [], []
        last_pub = time.monotonic()
        it = 0
        t_opt = time.perf_counter()
        try:
            for it in range(max_iter):
                early = it < n_early
                progress.checkpoint(0.1 + 0.9 * it / max_iter, f"Iteration {it:,}/{max_iter:,}"
                                    + (" (early exaggeration)" if early else ""))
                want_kl = (it + 1) % 50 == 0
                kl, grad = grad_fn(Y, p["early_exaggeration"] if early else 1.0, want_kl)
                if want_kl and not early:
                    kl_iters.append(it + 1)
                    kl_values.append(kl)
                if it == n_early:  # leaving early exaggeration: fresh gains (scikit-learn does the same)
                    update[:] = 0.0
                    gains[:] = 1.0
                _gd_step(Y, update, gains, grad, 0.5 if early else p["momentum"], lr)
                now = time.monotonic()
                if now - last_pub >= PARTIAL_INTERVAL:
                    last_pub = now
                    progress.partial(Y.copy())
            it = max_iter
        except FitCancelled:
            self._stop_early(f"after {it:,} of {max_iter:,} iterations")
        self.n_steps_ = int(it)    # gradient steps taken
        # scikit-learn's n_iter_: the index of the last iteration run (299 for max_iter=300)
        self.n_iter_ = max(int(it) - 1, 0)
        timer.timings["optimisation"] = time.perf_counter() - t_opt
        self.timings_ = dict(timer.timings)
        self.method_ = method
        self.learning_rate_ = float(lr)
        self.embedding_ = Y
        kl, _ = grad_fn(Y, 1.0, True)
        self.kl_divergence_ = float(kl)
        self.kl_curve_iterations_ = np.asarray(kl_iters, dtype=np.intp)
        self.kl_curve_ = np.asarray(kl_values, dtype=float)
        self.training_points_ = X if sp.issparse(X) else np.ascontiguousarray(X)
        if index is not None:   # extend reuses the fit's search index
            _CACHES[self] = [self.training_points_, self.embedding_, index, None]
        if it == max_iter:  # after Cancel, another checkpoint would raise FitCancelled again
            progress.checkpoint(1.0, "Done")

    # -- extend -------------------------------------------------------------------------
    def _cached(self):
        """Search index over the training points and the fixed map's repulsion potentials, kept
        outside the estimator's __dict__ (extend must not change the estimator)."""
        cache = _CACHES.get(self)
        if cache is None or cache[0] is not self.training_points_ or cache[1] is not self.embedding_:
            p = self._p
            k = n_affinity_neighbours(p["perplexity"], self.training_points_.shape[0])
            index = make_index(self.training_points_, neighbors=p["neighbors"], metric=p["metric"],
                               n_neighbors=min(k, self.training_points_.shape[0] - 1),
                               random_state=p["random_state"] or 0)
            cache = [self.training_points_, self.embedding_, index, None]
            _CACHES[self] = cache
        if cache[3] is None and self.embedding_.shape[1] == 2:
            cache[3] = FixedRepulsion(self.embedding_)
        return cache[2], cache[3]

    def _extend(self, X):
        p = self._p
        Ytr = self.embedding_
        index, rep = self._cached()
        Pc, idx = neighbour_affinities(X, p["perplexity"], index=index)
        nb = Ytr[idx]                                            # (m, k, dim)
        Y = np.einsum("mk,mkd->md", Pc, nb)                      # affinity-weighted mean
        same = index.match(X)  # a copy of a training point keeps that point's place
        if p["extend_iter"] == 0:
            Y[same >= 0] = Ytr[same[same >= 0]]
            return Y
        exact = rep is None
        update = np.zeros_like(Y)
        gains = np.ones_like(Y)
        lr = p["extend_learning_rate"]
        for it in range(p["extend_iter"]):
            attr = fixed_attractive_forces(Pc, idx, Y, Ytr)
            if exact:
                Z, F = exact_repulsion(Y, Ytr)
            else:
                Z, F = rep(Y)
            # per-point KL(P_i || Q_i), q_{j|i} = w_ij / Z_i: gradient 2 (attr - F / Z)
            grad = 2.0 * (attr - F / Z[:, None])
            _gd_step(Y, update, gains, grad, 0.5 if it < 50 else 0.8, lr)
        Y[same >= 0] = Ytr[same[same >= 0]]
        return Y

    def extend(self, X, progress=None):
        X_in = X
        X = self._check_new_data(X)
        return self._in_precision_of(self.map_chunks(self._extend, X, progress), X_in)

    # -- results ------------------------------------------------------------------------
    def result_summary(self):
        out = super().result_summary()
        if hasattr(self, "kl_divergence_"):
            out["kl_divergence"] = round(self.kl_divergence_, 6)
            out["n_iter"] = self.n_iter_
            out["method"] = self.method_
        out.update(neighbour_summary(self))
        return out


@hookimpl
def register_algorithms():
    return [TSNE]
