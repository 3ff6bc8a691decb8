"""Isomap (Tenenbaum, de Silva & Langford 2000; thesis table 4.2, generalised kernel 5.1.3)."""
from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from manifold_studio.algorithms.neighbors_sparse import SPARSE_CONDITION
from manifold_studio.algorithms.sparse_input import SparseInput
from manifold_studio.algorithms import Bool, Choice, Float
from manifold_studio.algorithms import geodesics
from manifold_studio.algorithms.geodesics import min_plus_rows
from manifold_studio.algorithms.params import AT_MOST_N, BELOW_N, Int, n_components_param, random_state_param
from manifold_studio.algorithms.kernels import rows_per_block
from manifold_studio.algorithms.graph_components import connect_components, smallest_connecting_k
from manifold_studio.algorithms.neighbors import (
    NeighborIndex, check_n_neighbors, knn_graph, metric_param, neighbors_param, radius_graph,
)
from manifold_studio.algorithms.spectral import (
    EIGEN_SOLVER_PARAM, SpectralEmbedding, SpectralProblem, centre_new_rows,
)
from manifold_studio.algorithms.training_neighbors import TrainingNeighborsMixin
from manifold_studio.algorithms.progress import SubProgress
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl

#: elements of the (rows, n) geodesic blocks during extension (cache-sized: the k-neighbour
#: minimum makes several passes over them)
_GEODESIC_BLOCK = 131_072


class Isomap(SparseInput, TrainingNeighborsMixin, SpectralEmbedding):
    """Isomap: classical MDS on geodesic (shortest-path) distances of a neighbourhood graph.

    The graph links each point to its ``n_neighbors`` nearest points (or to every point
    closer than ``radius``); geodesics are shortest paths (Dijkstra, scipy.sparse.csgraph);
    the kernel is the double-centred ``-1/2 d_G^2`` and the coordinates ``sqrt(l_k) v_ik``.
    ``extend`` uses the generalised kernel of section 5.1.3: a new point reaches the graph
    through its k nearest training points, ``d_G(x, x_i) = min_z (|x - z| + d_G(z, x_i))``,
    and never shortens paths between training points (the training geodesics are fixed).

    With ``n_landmarks`` the geodesics are measured from that many landmarks only (Landmark
    Isomap, :mod:`manifold_studio.algorithms.geodesics`): classical MDS on the landmarks, every
    other training point placed by the same Nyström formula from its geodesics to them. Without
    it, above about 30,000 points the n x n geodesics exceed the memory limit and the fit stops
    with a message saying so before allocating them.

    As scikit-learn's Isomap: ``n_neighbors`` (default 5) excludes the point itself and must be
    below n, exactly one of ``n_neighbors`` and ``radius`` is set, ``metric='precomputed'`` takes the n x n distance
    matrix (and, to extend, the m x n distances of new points to the fitted points). With
    ``disconnected='largest'`` the points outside the largest piece get NaN coordinates, from
    ``fit_transform`` and from ``transform``/``extend`` alike (a row equal to one of them, or
    at distance 0 from one for 'precomputed'); other new points are placed through the
    largest piece.

    Sparse X (CSR; metric 'euclidean' or 'cosine') is searched exactly by sparse products (by
    NN-descent on the sparse rows with neighbors='approximate', or 'auto' on large data)
    (:mod:`~manifold_studio.algorithms.neighbors_sparse`), never densified: the same map as its
    dense copy; sparse rows extend like dense ones.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("isomap", n_neighbors=10, n_components=2).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    preserves_float32 = True
    id = "isomap"
    holds_gil = True  # scipy's dijkstra holds the GIL for each block of sources: the window fits it in a separate process
    name = "Isomap"
    sparse_condition = SPARSE_CONDITION
    help = ("Unrolls curved manifolds (a swiss roll becomes a flat sheet): links each point to its "
            "nearest neighbours, measures distances along that graph (geodesics) and places the "
            "points so that these geodesic distances are preserved (classical MDS). New points "
            "are placed through their nearest fitted points. If the neighbourhood graph falls "
            "into several pieces, either increase the number of neighbours or embed the largest "
            "piece only. Above about 10,000 points set Landmarks (e.g. 1,000): geodesics are then "
            "measured from the landmarks only, in a fraction of the time and memory.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        # every training point's geodesics to the landmarks (all training points when classic)
        "geodesic_": Fitted(shape=("n_points", "n_train"), required=True),
        "X_fit_": Fitted(shape=("n_points", "n_features_in_"), required=True),
        "landmarks_": Fitted(shape=("n_train",), kinds="iu"),
        "training_projection_": Fitted(shape=("n_points", "n_eigenvectors")),
        "geodesic_sq_row_mean_": Fitted(shape=("n_train",)),
        "embedded_mask_": Fitted(shape=(None,), kinds="b"),
        # points outside the largest component of the neighbourhood graph have NaN coordinates
        "embedding_": Fitted(shape=(None, "n_eigenvectors"), finite=False),
    }

    params = (
        Int("n_neighbors", 5, "Number of nearest neighbours linked in the graph, the point itself "
            "not counted; default 5 and below the number of points, as scikit-learn's Isomap; empty "
            "when a radius is given.", low=1, allow_none=True,
            limit=BELOW_N),
        Float("radius", None, "Link all points closer than this distance instead of a fixed number "
              "of neighbours (then n_neighbors must be empty).", low=0.0, low_open=True, allow_none=True,
              log=True),
        metric_param(),
        neighbors_param(),
        n_components_param(limit=AT_MOST_N),
        Choice("disconnected", "connect", "What to do when the neighbourhood graph falls into several "
               "pieces: 'connect' joins them through their closest pairs of points (the run's log says "
               "which pieces and where), 'largest' embeds only the largest piece (the other points get "
               "NaN coordinates), 'error' stops with a message giving the n_neighbors that connects them.",
               choices=("connect", "largest", "error"), label="Disconnected graph"),
        Int("n_landmarks", None, "Measure geodesics from this many landmarks only (drawn at random "
            "with random_state) and place the other points by the Nyström formula (Landmark "
            "Isomap): shortest paths and memory scale with n x landmarks instead of n x n. Empty: "
            "every point is a landmark (the classic Isomap, as scikit-learn's); needed above about "
            "30,000 points, where n x n geodesics do not fit in memory.", low=1, allow_none=True,
            log=True, label="Landmarks"),
        random_state_param("Seed of the landmark draw (only with n_landmarks; empty: different each run)."),
        Bool("largest_component", False, "Embed only the largest connected piece of a disconnected "
             "graph (the same as disconnected='largest'; kept for older projects)."),
        EIGEN_SOLVER_PARAM,
    )

    def _neighbors_setting(self):
        p = self._p
        if p["radius"] is None:
            return p["neighbors"]
        if p["neighbors"] == "approximate":
            raise InvalidParameterError("radius needs neighbors='exact' or 'auto' (approximate neighbours "
                                        "give a fixed number of neighbours; use n_neighbors instead).")
        return "exact"

    def _check_neighbourhood(self):
        p = self._p
        if p["radius"] is not None and p["n_neighbors"] is not None:
            raise InvalidParameterError(f"Isomap takes either n_neighbors or radius, not both (got "
                                        f"n_neighbors={p['n_neighbors']}, radius={p['radius']:g}); set "
                                        "n_neighbors to None (empty) to link by radius, or radius to None.")
        if p["radius"] is None and p["n_neighbors"] is None:
            raise InvalidParameterError("Isomap needs n_neighbors or radius: both are None (empty).")

    def _graph(self, X, progress):
        p = self._p
        if p["radius"] is not None:
            return radius_graph(X, p["radius"], progress=progress, index=self._index)
        check_n_neighbors(p["n_neighbors"], X.shape[0], what="Isomap")
        return knn_graph(X, p["n_neighbors"], progress=progress, index=self._index)

    def _disconnected_message(self, X, n_comp, sizes):
        p = self._p
        head = ", ".join(f"{s:,}" for s in sizes[:5]) + (", ..." if len(sizes) > 5 else "")
        if p["radius"] is None:
            k = smallest_connecting_k(X, p["n_neighbors"], index=self._index)
            graph = f"The {p['n_neighbors']}-nearest-neighbour graph"
            fix = (f"the smallest n_neighbors that connects them is {k}; set n_neighbors >= {k}"
                   if k is not None else "even a very large n_neighbors does not connect them quickly; "
                   "increase n_neighbors substantially")
        else:
            graph = f"The radius-{p['radius']:.4g} graph"
            fix = "increase the radius (or use n_neighbors instead)"
        return (f"{graph} has {n_comp} separate connected components (sizes {head} points), so "
                f"geodesic distances between them are infinite and Isomap cannot place them in one "
                f"map. {fix[0].upper() + fix[1:]}, set disconnected='connect' to join the pieces through their "
                f"closest points, or disconnected='largest' to embed only the largest one ({sizes[0]:,} points).")

    def _spectral_problem(self, X, progress):
        p = self._p
        n = X.shape[0]
        precomputed = p["metric"] == "precomputed"
        self._set_training_points(X, SubProgress(progress, 0.0, 0.05, "Neighbour index: "))
        with self._phase("neighbours"):
            G = self._graph(X, SubProgress(progress, 0.05, 0.1, "Neighbourhood graph: "))
        with self._phase("graph"):
            from scipy.sparse.csgraph import connected_components   # here: discovery stays light
            n_comp, comp = connected_components(G, directed=False)
        mask = np.ones(n, dtype=bool)
        mode = "largest" if p["largest_component"] else p["disconnected"]
        if n_comp > 1 and mode == "connect":
            sizes = np.sort(np.bincount(comp))[::-1]
            approximate = self._index.approximate
            with self._phase("graph"):
                G, edges = connect_components(X, G, metric=p["metric"], approximate=approximate,
                                              progress=SubProgress(progress, 0.1, 0.15, "Joining pieces: "))
            longest = max(d for _i, _j, d in edges)
            how = ("their closest pairs of points, searched from samples as the neighbours are "
                   "approximate" if approximate else "their closest pairs of points")
            self._warn(f"The neighbourhood graph had {n_comp} separate pieces (sizes "
                       f"{', '.join(f'{s:,}' for s in sizes[:8])}{', ...' if len(sizes) > 8 else ''} points); "
                       f"they were joined through {how} ({len(edges)} edge(s), the "
                       f"longest {longest:.4g}), so distances between pieces run through those links. Set "
                       f"disconnected='largest' or 'error', or more neighbours, to avoid it.")
            self.connecting_edges_ = np.array([(i, j) for i, j, _d in edges], dtype=np.intp)
            n_comp = 1
        if n_comp > 1:
            sizes = np.sort(np.bincount(comp))[::-1]
            if mode == "error":
                raise DataError(self._disconnected_message(X, n_comp, sizes))
            largest = int(np.argmax(np.bincount(comp)))
            mask = comp == largest
            # the points left out: a row equal to one of them extends to NaN, as in the fit
            self.excluded_points_ = np.flatnonzero(~mask) if precomputed else X[~mask]
            X = X[np.ix_(mask, mask)] if precomputed else X[mask]
            G = G[mask][:, mask].tocsr()
            self._set_training_points(X)
            self.warning_component_ = (
                f"The neighbourhood graph has {n_comp} components; only the largest "
                f"({int(mask.sum()):,} of {n:,} points) was embedded, the others have NaN coordinates.")
            if p["radius"] is None:
                check_n_neighbors(p["n_neighbors"], X.shape[0], what="the largest component")
        self.embedded_mask_ = mask
        m = X.shape[0]
        n_landmarks = self._landmark_count(m)
        sub = SubProgress(progress, 0.15, 1.0, "Shortest paths: ")
        with self._phase("shortest paths"):
            if n_landmarks is None:
                # squared geodesics S (float64) for the eigensolver; the geodesics themselves in
                # float32 for extending new points (training points are recognised and take their
                # exact training kernel row, so theorem 5.1 stays exact)
                S, Dg = geodesics.all_pairs(G, sub)
                self.__dict__.pop("landmarks_", None)
            else:
                self.landmarks_ = geodesics.choose_landmarks(m, n_landmarks, p["random_state"])
                S, Dg = geodesics.from_landmarks(G, self.landmarks_, sub)
        if not np.any(S):  # every geodesic is 0: the map would be all zeros, which says nothing
            raise DataError(f"Every {'distance in the matrix' if precomputed else 'geodesic distance'} between "
                            f"the {m:,} points is 0 (they are all at the same place), so Isomap has nothing to "
                            "map and would write a map of zeros: check the data"
                            + (" (a distance matrix of zeros is usually a mistake)." if precomputed else
                               " (every row is the same)."))
        L = S.shape[0]
        row_mean = S.mean(axis=1)
        grand = float(row_mean.mean())
        self.geodesic_ = Dg                      # training geodesics (fixed: never shortened)
        self.geodesic_sq_row_mean_ = row_mean
        self.geodesic_sq_grand_mean_ = grand
        # the double-centred kernel -1/2 H S H, applied without a second L x L matrix
        def matvec(v):
            v = np.asarray(v, dtype=float)
            v = v - v.mean(axis=0)
            w = S @ v
            w -= w.mean(axis=0)
            return -0.5 * w

        op = spla.LinearOperator((L, L), matvec=matvec, matmat=matvec, rmatvec=matvec, dtype=float)
        trace = float(-0.5 * (np.trace(S) - 2.0 * row_mean.sum() + L * grand))
        return SpectralProblem(p["n_components"], matrix=op, trace=trace, match_training=True)

    def _landmark_count(self, m: int) -> int | None:
        """The number of landmarks for m points (None: every point, the classic Isomap)."""
        L = self._p["n_landmarks"]
        if L is None or L >= m:
            return None
        d = self._p["n_components"]
        if L <= d:
            raise InvalidParameterError(f"n_landmarks={L} is too small for n_components={d}: classical "
                                        f"MDS on the landmarks needs more landmarks than components "
                                        f"(at least {d + 1}; a few hundred or more give a faithful map).")
        return int(L)

    def _fit(self, X, y, progress):
        self._check_neighbourhood()
        if self._landmark_count(X.shape[0]) is None:
            geodesics.check_all_pairs_memory(X.shape[0])    # before the neighbours, not after
        self.warning_component_ = ""
        self._timed_fit(self._fit_geodesic_map, X, y, progress)
        mask = self.embedded_mask_
        if not mask.all():
            full = np.full((mask.size, self.embedding_.shape[1]), np.nan)
            full[mask] = self.embedding_
            self.embedding_ = full
        self.warning_ = " ".join(w for w in (self.warning_component_, self.warning_) if w)
        del self.warning_component_

    def _fit_geodesic_map(self, X, y, progress):
        super()._fit(X, y, progress)
        if getattr(self, "landmarks_", None) is not None:
            # Landmark Isomap: every training point placed by the Nyström formula from its
            # geodesics to the landmarks (the landmarks themselves exactly, theorem 5.1); a new
            # point equal to a training point takes that point's row (training_projection_ / l)
            with self._phase("placing points"):
                KV = np.empty((self.geodesic_.shape[0], self.eigenvectors_.shape[1]))
                step = rows_per_block(self.eigenvectors_.shape[0], _GEODESIC_BLOCK)
                for start in range(0, KV.shape[0], step):
                    KV[start:start + step] = self._centred_kernel_times_eigenvectors(
                        self.geodesic_[start:start + step])
                self.training_projection_ = KV
                self.embedding_ = KV * self.nystrom_coef_

    def _fitted_columns(self, X):
        """New points' distance rows restricted to the embedded training points (precomputed
        with disconnected='largest'); X itself otherwise."""
        mask = getattr(self, "embedded_mask_", None)
        if self._p["metric"] == "precomputed" and mask is not None and not mask.all():
            return X[:, mask]
        return X

    def _match_training(self, X):
        return self._index_for_extend().match(self._fitted_columns(X))

    def _extend(self, X):
        out = super()._extend(X)
        excluded = getattr(self, "excluded_points_", None)
        if excluded is not None and len(excluded):
            if self._p["metric"] == "precomputed":
                left_out = (X[:, excluded] <= 0.0).any(axis=1)
            else:
                left_out = NeighborIndex(excluded, metric=self._p["metric"]).match(X) >= 0
            out[left_out] = np.nan
        return out

    def _neighbours_of_new(self, X):
        """(dist, idx, valid) of the training points through which new points join the graph."""
        p = self._p
        X = self._fitted_columns(X)
        index = self._index_for_extend()
        if p["radius"] is None:
            k = min(p["n_neighbors"], index.n)
            dist, idx = index.query(X, k)
            return dist, idx, np.ones_like(dist, dtype=bool)
        indptr, idx_flat, dist_flat = index.query_radius(X, p["radius"])
        counts = np.diff(indptr)
        width = max(int(counts.max()) if counts.size else 1, 1)
        dist = np.full((X.shape[0], width), np.inf)
        idx = np.zeros((X.shape[0], width), dtype=np.intp)
        rows = np.repeat(np.arange(X.shape[0]), counts)
        cols = np.arange(idx_flat.size) - np.repeat(indptr[:-1], counts)
        dist[rows, cols] = dist_flat
        idx[rows, cols] = idx_flat
        lonely = counts == 0  # no training point within the radius: join through the nearest one
        if lonely.any():
            d1, i1 = index.query(X[lonely], 1)
            dist[lonely, 0], idx[lonely, 0] = d1[:, 0], i1[:, 0]
        return dist, idx, np.isfinite(dist)

    def _geodesics_to_training(self, X, neighbours=None):
        """d_G(x, x_i) for new points: min over the joining neighbours z of |x - z| + d_G(z, x_i).
        ``neighbours``: their (dist, idx, valid) when already found."""
        Dg = self.geodesic_
        dist, idx, valid = self._neighbours_of_new(X) if neighbours is None else neighbours
        step = np.where(valid, dist, np.inf).astype(Dg.dtype)
        out = np.empty((X.shape[0], Dg.shape[1]), dtype=Dg.dtype)
        return min_plus_rows(Dg, np.ascontiguousarray(idx, dtype=np.intp), step, out)

    def _kernel_rows(self, X):
        g = self._geodesics_to_training(X).astype(np.float64)
        g *= g
        # kernel 5.1 on geodesics, centred with the training means
        centre_new_rows(g, self.geodesic_sq_row_mean_, self.geodesic_sq_grand_mean_)
        g *= -0.5
        return g

    def _centred_kernel_times_eigenvectors(self, g):
        """K V for a block of geodesic rows g (to the training points or landmarks): the
        kernel -1/2 (g^2 centred with the training means), with the centring applied to the
        (rows, k) product instead of the (rows, n) block."""
        V = self.eigenvectors_
        g = g.astype(np.float64)
        g *= g
        vsum = V.sum(axis=0)
        KV = g @ V
        KV -= g.mean(axis=1)[:, None] * vsum[None, :]
        KV -= (self.geodesic_sq_row_mean_ @ V)[None, :]
        KV += self.geodesic_sq_grand_mean_ * vsum[None, :]
        return -0.5 * KV

    def _kernel_times_eigenvectors(self, X):
        # same as _kernel_rows(X) @ V; blocks bound the memory of the (m, n) geodesic rows
        V = self.eigenvectors_
        out = np.empty((X.shape[0], V.shape[1]))
        step = rows_per_block(V.shape[0], _GEODESIC_BLOCK)
        neighbours = self._neighbours_of_new(X)  # one query for all rows (small blocks cost threads)
        for start in range(0, X.shape[0], step):
            part = tuple(a[start:start + step] for a in neighbours)
            out[start:start + step] = self._centred_kernel_times_eigenvectors(
                self._geodesics_to_training(X[start:start + step], part))
        return out

    def result_summary(self):
        out = super().result_summary()
        if hasattr(self, "embedded_mask_"):
            out["n_embedded"] = int(self.embedded_mask_.sum())
        landmarks = getattr(self, "landmarks_", None)
        out["geodesics"] = ("all pairs of points" if landmarks is None
                            else f"from {len(landmarks):,} landmarks (Landmark Isomap)")
        return out


@hookimpl
def register_algorithms():
    return [Isomap]
