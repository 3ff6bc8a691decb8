"""UMAP (McInnes, Healy & Melville 2018), animated while it optimises, extendable, supervised and
semi-supervised, densMAP, inverse transform, sparse or precomputed input."""
from __future__ import annotations

import time
import warnings
import weakref

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms import Bool, Choice, EmbeddingAlgorithm, Float, Int
from manifold_studio.algorithms.checks import check_data
from manifold_studio.algorithms.neighbors import (PhaseTimer, make_index, metric_param, neighbors_param,
                                                  neighbour_summary)
from manifold_studio.algorithms.params import n_components_param, random_state_param
from manifold_studio.algorithms.progress import FitCancelled, SubProgress
from manifold_studio.algorithms.neighbors_sparse import SPARSE_CONDITION, check_sparse_metric
from manifold_studio.algorithms.sparse_input import SparseInput, all_rows_identical
from manifold_studio.algorithms.umap_densmap import original_radii
from manifold_studio.algorithms.umap_graph import (METRICS, check_graph_size, fuzzy_graph, memberships,
                                                   query_knn, same_points, smooth_knn_dist, training_knn)
from manifold_studio.algorithms.umap_inverse import inverse_points
from manifold_studio.algorithms.umap_layout import (find_ab_params, optimize_layout, place_points,
                                                    rescale_init, spectral_init)
from manifold_studio.algorithms.umap_target import (TARGET_METRICS, categorical_intersection,
                                                    general_intersection, numeric_target, target_codes)
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.hookspecs import hookimpl

#: seconds between two published intermediate maps
PARTIAL_INTERVAL = 0.1
_CACHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class UMAP(SparseInput, EmbeddingAlgorithm):
    """Uniform manifold approximation and projection (McInnes, Healy & Melville 2018).

    The fuzzy simplicial set of the data: each point's ``n_neighbors - 1`` nearest neighbours
    (``n_neighbors`` counts the point itself, as umap-learn) get memberships
    ``exp(-(d - rho_i) / sigma_i)``, with ``rho_i`` the distance to the nearest other point
    (local connectivity) and ``sigma_i`` set by binary search so memberships sum to
    ``log2(n_neighbors)``; the directed graph is symmetrised by the fuzzy union
    ``A + A^T - A * A^T``. The map starts from the graph's Laplacian eigenmaps (a uniform random
    start if ARPACK fails) and minimises the fuzzy cross-entropy with the
    low-dimensional memberships ``1 / (1 + a d^(2b))`` (``a``, ``b`` fitted to ``min_dist`` and
    ``spread``) by SGD with negative sampling, as umap-learn. A disconnected graph starts from
    each component's eigenmap placed around its centroid (umap-learn's multi-component layout).

    Supervised: with labels ``y`` and ``target_weight > 0``, edges between different labels
    are weakened by ``exp(-2.5 / (1 - target_weight))`` (umap-learn's categorical
    intersection; ``target_weight = 1`` cuts them) and local connectivity is restored.
    ``target_weight = 0`` ignores ``y``. Semi-supervised: labels ``-1`` (or missing) mean
    unlabelled, as in umap-learn: an edge touching an unlabelled point is weakened by the fixed
    ``exp(-1)``, whatever the other point's class. A numeric target (``target_metric``
    'euclidean' or 'manhattan') has its own fuzzy graph, combined with the data's by umap-learn's
    general intersection with weight ``target_weight``.

    densMAP (``densmap=True``; Narayan, Berger & Cho 2021, umap-learn's ``dens_lambda``,
    ``dens_frac``, ``dens_var_shift``): the last ``dens_frac`` of the epochs also maximise the
    correlation between the map's local radii and the data's (200 more epochs by default).

    ``inverse_transform(Y)`` sends map points back to the data space (umap-learn's method: the
    weighted mean of the training points placed nearest, then SGD in the data space; Euclidean
    dense data, not densMAP). ``metric='precomputed'``: X is the square distance matrix and new
    points are their distances to the training points. ``n_neighbors`` larger than the data is
    truncated to n - 1 with a warning (as umap-learn). Sparse X (CSR; 'euclidean' or 'cosine')
    is searched exactly by sparse products, or by NN-descent on the sparse rows themselves
    (neighbors='approximate', or 'auto' on large data), and extended from sparse rows alike.

    ``extend`` links each new point to its ``n_neighbors - 1`` nearest training points with
    memberships ``exp(-d / sigma)`` (no local connectivity, as umap-learn's transform), starts
    it at the membership-weighted mean of their places and moves it alone for ``extend_epochs``
    epochs against the fixed map (learning rate / 4, as umap-learn's transform), with a random
    stream seeded from its own coordinates: extension is sample-wise. A new point equal to a
    training point gets that point's place.

    The neighbours come from the shared neighbour layer (``neighbors``: 'exact', 'approximate'
    NN-descent, or 'auto', approximate from 20,000 points with more than 15 features); extend
    queries the fit's index (a loaded model rebuilds it on the same seed: the same graph).
    ``neighbors_method_`` and ``neighbors_recall_`` (recall@10 estimated on a sample when
    approximate) and ``timings_`` (seconds of the phases: neighbours, fuzzy graph, spectral
    start, sgd) go to the run's log.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("umap", n_neighbors=15, n_epochs=100, random_state=0).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "umap"
    name = "UMAP"
    help = ("Draws a map where points that are near neighbours in the data stay close, like t-SNE, "
            "but keeps more of the large-scale arrangement and is fast on large data. n_neighbors "
            "balances local detail (small) against global structure (large); min_dist sets how "
            "tightly points may pack. With labels and a target weight above 0 it separates the "
            "classes (supervised UMAP). Animated while it optimises; new points are placed into a "
            "finished map by their nearest fitted points.")
    min_samples = 4
    sparse_condition = SPARSE_CONDITION
    extend_chunk_size = 4096
    # the spectral start's ARPACK calls hold the GIL (about 0.1 s at 3,000 points on a busy
    # machine): the window fits large data in a separate process (previews still arrive)
    holds_gil = True
    fitted_schema = {
        "training_points_": Fitted(shape=("n_train", "n_features_in_"), required=True),
        "embedding_": Fitted(shape=("n_train", "n_components"), required=True),
    }

    params = (
        Int("n_neighbors", 15, "Size of the neighbourhood each point sees, counting the point itself "
            "(as umap-learn): 2 to 100; small values show local detail, large values global structure.",
            low=2),
        Float("min_dist", 0.1, "Smallest distance between points in the map (at most spread): small "
              "values pack clusters tightly, large values spread them evenly.", low=0.0),
        Float("spread", 1.0, "Scale of the map's distances; with min_dist it sets how clumped the "
              "points are.", low=0.0, low_open=True),
        n_components_param(2, "Number of output dimensions."),
        metric_param(METRICS),
        neighbors_param(),
        Int("n_epochs", None, "Optimisation epochs; empty: 500 up to 10,000 points, 200 above "
            "(as umap-learn).", low=1, allow_none=True),
        Float("learning_rate", 1.0, "Initial SGD step (decays linearly to 0).", low=0.0,
              low_open=True),
        Int("negative_sample_rate", 5, "Random repulsive samples per attractive sample.", low=1),
        random_state_param("Seed of the start's jitter and of the negative sampling; empty = a "
                           "different map every run."),
        Float("target_weight", 0.0, "Supervised UMAP: how strongly the labels pull classes apart "
              "(0 = ignore labels, 1 = cut every edge between different labels); needs labels. umap-learn's "
              "default is 0.5 because it sees labels only when they are passed on purpose; here a data "
              "set's labels also colour the map, so supervision is asked for by setting a weight.",
              low=0.0, high=1.0),
        Choice("target_metric", "categorical", "What the target y is: 'categorical' (classes; -1 = "
               "unlabelled, semi-supervised) or a number compared by 'euclidean' or 'manhattan' "
               "distance.", choices=TARGET_METRICS),
        Bool("densmap", False, "densMAP: also preserve the local density of the data (points in dense "
             "regions stay packed, sparse regions stay spread)."),
        Float("dens_lambda", 2.0, "densMAP: weight of the density term.", low=0.0),
        Float("dens_frac", 0.3, "densMAP: fraction of the epochs (the last ones) with the density term.",
              low=0.0, high=1.0),
        Float("dens_var_shift", 0.1, "densMAP: small constant added to the variance of the map's local "
              "radii (numerical stability).", low=0.0),
        Int("extend_epochs", None, "Epochs when placing new points into the fitted map; empty: 100 "
            "(umap-learn's transform of up to 10,000 points), or a third of n_epochs when n_epochs is "
            "given.", low=0, allow_none=True),
    )

    # -- fit ----------------------------------------------------------------------------
    def uses_labels(self) -> bool:
        """Labels are used (supervised UMAP) when target_weight > 0."""
        try:
            return float(self.target_weight) > 0.0
        except (TypeError, ValueError):
            return False

    def _check(self, X, y) -> int:
        """Checks before any work; returns the n_neighbors used (truncated to n - 1, as umap-learn)."""
        p = self._p
        n = X.shape[0]
        if p["min_dist"] > p["spread"]:
            raise InvalidParameterError(
                f"min_dist={p['min_dist']:g} is larger than spread={p['spread']:g}: min_dist must be "
                f"at most spread (e.g. min_dist=0.1, spread=1).")
        if sp.issparse(X):
            check_sparse_metric(p["metric"])
        k = p["n_neighbors"]
        if k >= n:
            self._warn(f"n_neighbors={k} is larger than the data ({n} points): truncated to {n - 1} "
                       "(as umap-learn).")
            k = n - 1
        check_graph_size(k, n)
        if _all_identical(X, p["metric"]):
            raise DataError(f"All {n} points are identical (constant data): UMAP needs distances "
                            "between points to define neighbours.")
        if p["target_weight"] > 0 and y is None:
            raise DataError(f"target_weight={p['target_weight']:g} asks for supervised UMAP, but no "
                            "labels were given: pass y (choose a label column) or set target_weight=0.")
        return k

    def _make_index(self, X, neighbors, progress=None):
        """The search index over the training points (the fit's and, for a loaded model, the same
        one rebuilt: NN-descent is deterministic for its seed) holding n_neighbors - 1 neighbours."""
        p = self._p
        return make_index(X, neighbors=neighbors, metric=p["metric"], n_neighbors=self._k() - 1,
                          random_state=p["random_state"] or 0, progress=progress)

    def _k(self) -> int:
        """n_neighbors as used by the fit (truncated on small data)."""
        return int(getattr(self, "n_neighbors_", None) or self._p["n_neighbors"])

    def _with_target(self, graph, y, n, k):
        """Supervised / semi-supervised UMAP: the graph combined with the target y."""
        p = self._p
        tw = p["target_weight"]
        if p["target_metric"] == "categorical":
            codes = target_codes(y, n)
            self.n_unlabelled_ = int(np.sum(codes < 0))
            return categorical_intersection(graph, codes, 2.5 / (1.0 - tw) if tw < 1.0 else 1e12)
        t = numeric_target(y, n)
        t_index = make_index(t, neighbors="exact", metric=p["target_metric"])
        t_dist, t_idx = training_knn(t_index, k - 1)
        return general_intersection(graph, fuzzy_graph(t_dist, t_idx, k)[0], tw)

    def _fit(self, X, y, progress):
        p = self._p
        k = self._check(X, y)
        self.n_neighbors_ = int(k)
        n = X.shape[0]
        rng = np.random.default_rng(p["random_state"])
        timer = PhaseTimer()
        with timer("neighbours"):
            index = self._make_index(X, p["neighbors"], SubProgress(progress, 0.0, 0.2, "Neighbour index: "))
            dist, idx = training_knn(index, k - 1, progress=SubProgress(progress, 0.2, 0.3, "Neighbours: "))
            self.neighbors_method_ = "approximate" if index.approximate else "exact"
            self.neighbors_recall_ = index.recall() if index.approximate else None
        with timer("fuzzy graph"):
            graph, sigma, rho, mean_d = fuzzy_graph(dist, idx, k)
            self._warn_duplicates(dist)
            if p["target_weight"] > 0:
                graph = self._with_target(graph, y, n, k)
            n_epochs = p["n_epochs"] or (500 if n <= 10_000 else 200) + (200 if p["densmap"] else 0)
            G = graph.tocoo()
            keep = G.data >= G.data.max() / n_epochs
            G.data, G.row, G.col = G.data[keep], G.row[keep], G.col[keep]
            dens = None
            if p["densmap"]:
                R, mu_sum = original_radii(X, G, p["metric"])
                dens = (p["dens_lambda"], p["dens_frac"], p["dens_var_shift"], R, mu_sum)
        progress.checkpoint(0.3, "Spectral start")
        with timer("spectral start"):
            # the start is the pruned graph's (as umap-learn: the edges the SGD will sample)
            Y0, how, n_comp = spectral_init(G.tocsr(), p["n_components"], rng,
                                            SubProgress(progress, 0.3, 0.4, "Spectral start: "), X=X)
            a, b = find_ab_params(p["spread"], p["min_dist"])
            Y = rescale_init(Y0).astype(np.float32)
        if n_comp > 1:
            self._warn(f"The neighbour graph has {n_comp} separate components: each starts from its own "
                       "spectral map around its centroid's place; their relative placement means little. "
                       "Increase n_neighbors for a connected graph.")
        elif how == "random" and n > p["n_components"] + 1:
            self._warn("The spectral start did not converge (ARPACK): the map starts from random "
                       "positions.")
        last = [time.monotonic()]
        reached = [0]

        def publish(Ycur, epoch):
            reached[0] = epoch
            now = time.monotonic()
            if now - last[0] >= PARTIAL_INTERVAL:
                last[0] = now
                progress.partial(Ycur.astype(float))

        done = n_epochs
        with timer("sgd"):
            try:
                Y, done = optimize_layout(Y, G, n_epochs, a, b, rng=rng, learning_rate=p["learning_rate"],
                                          negative_sample_rate=p["negative_sample_rate"], progress=progress,
                                          start=0.4, end=1.0, on_slice=publish, densmap=dens)
            except FitCancelled:
                done = reached[0]
                self._stop_early(f"after {done:,} of {n_epochs:,} epochs")
        self.embedding_ = np.asarray(Y, dtype=float)
        self.a_, self.b_ = a, b
        self.n_epochs_ = int(n_epochs)
        self.n_iter_ = int(done)
        self.init_ = how
        self.mean_distance_ = float(mean_d)
        self.sigmas_, self.rhos_ = np.asarray(sigma, dtype=float), np.asarray(rho, dtype=float)
        self.training_points_ = X if sp.issparse(X) else np.ascontiguousarray(X)
        self.seed_ = int(rng.integers(0, 2 ** 31 - 1))
        self.timings_ = dict(timer.timings)
        _CACHES[self] = (self.training_points_, index)     # extend reuses the fit's index
        if done == n_epochs:
            progress.checkpoint(1.0, "Done")

    def _warn_duplicates(self, dist):
        only_copies = int(np.sum(dist[:, -1] == 0.0))
        if only_copies:
            self._warn(f"{only_copies} point(s) have at least n_neighbors - 1 exact duplicates (zero "
                       "distances): their neighbourhoods hold only copies of themselves, so the copies "
                       "land on one spot; remove duplicate rows or increase n_neighbors.")

    # -- extend -------------------------------------------------------------------------
    def _index(self):
        """Search index over the training points, kept outside __dict__ (extend must not change
        the estimator): the fit's, or after loading a model the same kind rebuilt on the same
        seed (an approximate index is then the fit's graph again)."""
        cache = _CACHES.get(self)
        if cache is None or cache[0] is not self.training_points_:
            kind = getattr(self, "neighbors_method_", None) or self._p["neighbors"]
            cache = (self.training_points_, self._make_index(self.training_points_, kind))
            _CACHES[self] = cache
        return cache[1]

    def _extend(self, X):
        p = self._p
        index = self._index()
        k = self._k()
        dist, idx = query_knn(index, X, k - 1)
        # no local connectivity (rho = 0), as umap-learn's transform: softer memberships, no single
        # neighbour at 1 (measured: more new points land inside their own cluster)
        sigma, rho, _ = smooth_knn_dist(dist, k, local_connectivity=0.0, mean_distance=self.mean_distance_)
        w = memberships(dist, sigma, rho)
        epochs = p["extend_epochs"]
        if epochs is None:
            epochs = 100 if p["n_epochs"] is None else max(1, p["n_epochs"] // 3)
        Y = place_points(X, idx, w, self.embedding_, self.a_, self.b_, seed=self.seed_, n_epochs=epochs,
                         learning_rate=p["learning_rate"] / 4.0,
                         negative_sample_rate=p["negative_sample_rate"])
        if p["metric"] == "precomputed":
            same = np.where(dist[:, 0] <= 0.0, idx[:, 0], -1)
        else:
            same = same_points(self.training_points_, X, idx)
        Y[same >= 0] = self.embedding_[same[same >= 0]]
        return Y

    def cannot_inverse(self) -> str:
        """Why this fitted UMAP has no inverse transform ("" when it has one): the map's decoder
        asks before offering to decode."""
        p = self._p
        why = ("no memberships of the training points saved (a model from an older version: refit it)"
               if getattr(self, "sigmas_", None) is None else
               "sparse training data" if sp.issparse(self.training_points_) else
               f"metric={p['metric']!r}" if p["metric"] != "euclidean" else
               "densmap=True" if p["densmap"] else "")
        return (f"inverse_transform needs a UMAP fitted with metric='euclidean' on dense data without densMAP "
                f"(as umap-learn); this one has {why}.") if why else ""

    def inverse_transform(self, Y, progress=None):
        """Points of the data space for points ``Y`` (m, n_components) of the map (umap-learn's
        inverse transform: see the class docstring); each row on its own."""
        self.check_is_fitted("inverse_transform")
        p = self._p
        why = self.cannot_inverse()
        if why:
            raise InvalidParameterError(why)
        if self.embedding_.shape[1] >= 8:
            warnings.warn("inverse_transform works best with low-dimensional maps (as umap-learn warns): "
                          f"with n_components={self.embedding_.shape[1]} the reconstruction may be poor.",
                          UserWarning, stacklevel=2)
        Y = check_data(Y, name="Y", min_samples=1)
        if Y.shape[1] != self.embedding_.shape[1]:
            raise DataError(f"inverse_transform takes points of the map: {self.embedding_.shape[1]} "
                            f"column(s), got {Y.shape[1]}.")
        n = self.training_points_.shape[0]
        epochs = (100 if n <= 10_000 else 30) if p["n_epochs"] is None else max(1, p["n_epochs"] // 3)
        return self.map_chunks(
            lambda part: inverse_points(part, self.embedding_, self.training_points_, self.sigmas_, self.rhos_,
                                        self.a_, self.b_, seed=self.seed_, n_epochs=epochs,
                                        learning_rate=p["learning_rate"] / 4.0,
                                        negative_sample_rate=p["negative_sample_rate"]),
            Y, progress, message="Inverse transform")

    # -- results ------------------------------------------------------------------------
    def result_summary(self):
        out = super().result_summary()
        if hasattr(self, "a_"):
            out.update(a=round(self.a_, 6), b=round(self.b_, 6), n_epochs=self.n_iter_, init=self.init_)
        out.update(neighbour_summary(self))
        return out


def _all_identical(X, metric: str) -> bool:
    """Whether every point equals every other (for 'precomputed': all distances 0)."""
    if metric == "precomputed":
        return not np.any(np.asarray(X) > 0)
    return all_rows_identical(X)


@hookimpl
def register_algorithms():
    return [UMAP]
