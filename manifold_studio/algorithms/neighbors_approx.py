"""The approximate neighbour index of :mod:`manifold_studio.algorithms.neighbors`
(``neighbors='approximate'``): the NN-descent driver (:class:`NNDescent`, kernels in
:mod:`manifold_studio.algorithms.nndescent`) and :class:`ApproximateIndex`, with exact float64
distances for the neighbours it finds and its recall estimate."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import nndescent as K
from manifold_studio.algorithms.neighbor_metrics import (
    TREE_CHUNK, brute_knn, check_metric, drop_self, exact_hits, unit_rows,
)
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.algorithms.threads import n_threads, run_shares
from manifold_studio.errors import DataError, InvalidParameterError


#: trees whose leaves start a query (``extend``): the graph walk does the rest. Measured on
#: 20,000 x 784 image-like points, 5,000 queries of 15 neighbours: 17 trees (all of them) 1.38 s
#: of CPU, 8 trees 0.74 s, 6 trees 0.63 s, 4 trees 0.47 s, all at recall@10 1.0; 2 trees 0.38 s
#: at 0.9986.
QUERY_TREES = 6


class ApproximateIndex:
    """Approximate k nearest neighbours by NN-descent (:mod:`~manifold_studio.algorithms.nndescent`)
    over reference points ``Y`` for 'euclidean', 'cosine' or 'manhattan'. The k-NN graph of the
    reference points is built once (``k`` neighbours each); ``query`` searches it for new points,
    each row independently of the others. Distances returned are exact (float64) for the
    neighbours found."""

    approximate = True
    method = "approximate"

    def __init__(self, Y: np.ndarray, k: int, *, metric: str = "euclidean", random_state=0,
                 progress=None):
        self.metric = self._checked_metric(metric)
        n = Y.shape[0]
        if k >= n:
            raise DataError(f"neighbors='approximate' needs more points than neighbours: {n} point(s) for "
                            f"{k} neighbours each; use neighbors='exact' (or 'auto'), or fewer neighbours.")
        self.Y = self._reference(Y)
        self.k = int(k)
        seed = 0 if random_state is None else int(random_state)
        self.nnd = self._nndescent(seed, as_progress(progress))
        idx = self.nnd.graph_idx
        bad = (idx < 0).any(axis=1)
        if bad.any():  # tiny or degenerate data: fill incomplete lists exactly
            idx[bad] = _exact_fill(self, np.flatnonzero(bad))
        self._graph_dist = self._exact_distances(self.Y, idx)
        order = np.argsort(self._graph_dist, axis=1, kind="stable")
        self._graph_idx = np.take_along_axis(idx, order, axis=1)
        self._graph_dist = np.take_along_axis(self._graph_dist, order, axis=1)

    # -- what the sparse index (neighbors_approx_sparse.SparseApproximateIndex) replaces ------
    def _checked_metric(self, metric: str) -> str:
        metric = check_metric(metric)
        if metric == "precomputed":
            raise InvalidParameterError("neighbors='approximate' does not apply to metric='precomputed' "
                                        "(every distance is already given); use neighbors='exact' or 'auto'.")
        return metric

    def _reference(self, Y):
        """The reference rows as searched (float64; unit rows for cosine)."""
        Y = np.ascontiguousarray(Y, dtype=float)
        return unit_rows(Y) if self.metric == "cosine" else Y

    def _nndescent(self, seed: int, progress) -> "NNDescent":
        return NNDescent(self.Y, self.k, code=K.MANHATTAN if self.metric == "manhattan" else K.SQEUCLIDEAN,
                         random_state=seed, progress=progress)

    def _packed(self, X):
        """Prepared query rows as :meth:`NNDescent.query` takes them."""
        return X

    def _brute(self, X, k: int):
        """Exact (dist, idx) of the k nearest reference rows of a few prepared rows X, in the
        search metric's distances (Euclidean on unit rows for cosine)."""
        return brute_knn(self.Y, X, k, self._search_metric())

    def _search_metric(self):
        return "manhattan" if self.metric == "manhattan" else "euclidean"

    @property
    def n(self) -> int:
        return self.Y.shape[0]

    def prepare(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=float)
        return unit_rows(X, "new points") if self.metric == "cosine" else X

    def _exact_distances(self, X, idx):
        """Metric distances of the rows of X to the reference points idx (m, k), float64."""
        out = np.empty(idx.shape)
        step = max(1, 4_000_000 // max(1, idx.shape[1] * self.Y.shape[1]))
        for start in range(0, X.shape[0], step):
            diff = self.Y[idx[start:start + step]] - X[start:start + step, None, :]
            if self.metric == "manhattan":
                out[start:start + step] = np.abs(diff).sum(axis=2)
            else:
                d2 = np.einsum("mkd,mkd->mk", diff, diff)
                out[start:start + step] = 0.5 * d2 if self.metric == "cosine" else np.sqrt(d2)
        return out

    def training_neighbors(self, k: int, *, progress=None):
        """Each reference point's k nearest other points from the NN-descent graph (k beyond
        the graph's width: searched like new points, self removed)."""
        if k <= self.k:
            return self._graph_dist[:, :k].copy(), self._graph_idx[:, :k].copy()
        dist, idx = self.query(self.Y, min(k + 1, self.n), progress=progress, prepared=True)
        return drop_self(dist, idx, k)

    def query(self, X: np.ndarray, k: int, *, progress=None, message: str = "Neighbours",
              prepared: bool = False):
        """(dist, idx) (len(X), k) of approximate nearest reference points, sorted."""
        X = X if prepared else self.prepare(X)
        progress = as_progress(progress)
        m = X.shape[0]
        k = int(min(k, self.n))
        dist = np.empty((m, k))
        idx = np.empty((m, k), dtype=np.intp)
        for start in range(0, m, TREE_CHUNK):
            progress.checkpoint(start / max(m, 1), f"{message} {start:,}/{m:,}")
            stop = min(m, start + TREE_CHUNK)
            _d, i = self.nnd.query(self._packed(X[start:stop]), k)
            d = self._exact_distances(X[start:stop], i)
            order = np.lexsort((i, d), axis=1)
            dist[start:stop] = np.take_along_axis(d, order, axis=1)
            idx[start:stop] = np.take_along_axis(i, order, axis=1)
        progress.checkpoint(1.0, f"{message} {m:,}/{m:,}")
        return dist, idx

    def recall(self, k: int = 10, sample: int = 200, seed: int = 0) -> float:
        """Recall@k of an approximate index's graph on ``sample`` of its points: the fraction of the
        k neighbours found that are among the true k nearest (ties at the k-th distance count as
        true)."""
        k = min(k, self.k)
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(self.n, size=min(sample, self.n), replace=False))
        d_true, _ = self._brute(self.Y[rows], k + 1)
        kth = d_true[:, k]                       # (self at distance 0 is the first of k + 1)
        if self.metric == "cosine":
            kth = 0.5 * kth * kth
        found = self._graph_dist[rows, :k]
        return float(np.mean(found <= kth[:, None] * (1 + 1e-9) + 1e-12))

    def query_radius(self, X, radius, **_kw):
        raise InvalidParameterError("A radius neighbourhood needs neighbors='exact' (approximate "
                                    "neighbours give a fixed number of neighbours).")

    def match(self, X: np.ndarray) -> np.ndarray:
        X = self.prepare(X)
        dist, idx = self.query(X, 1, prepared=True)
        return exact_hits(self, X, dist[:, 0], idx[:, 0])


def _exact_fill(index, rows):
    _d, idx = index._brute(index.Y[rows], index.k + 1)
    out = np.empty((rows.size, index.k), dtype=np.intp)
    for r, i in enumerate(rows):
        out[r] = idx[r][idx[r] != i][:index.k]
    return out


class NNDescent:
    """NN-descent k-NN graph of ``data`` (float32, already unit rows for cosine) with a
    random-projection forest kept for queries. ``graph_dist`` / ``graph_idx`` (n, k), sorted,
    self excluded; distances in the search's units (squared Euclidean or L1). ``kernels``: the
    module of the kernels that read the rows (:mod:`~manifold_studio.algorithms.nndescent` for
    dense rows; :mod:`~manifold_studio.algorithms.nndescent_sparse` for sparse rows, ``data``
    then its packed tuple)."""

    def __init__(self, data, k: int, *, code: int = K.SQEUCLIDEAN, random_state: int = 0,
                 n_trees: int | None = None, leaf_size: int | None = None, max_candidates: int | None = None,
                 n_iters: int = 12, delta: float = 0.001, progress=None, kernels=K):
        kernels.compile_kernels()
        self.kernels = kernels
        if kernels is K:
            data = np.ascontiguousarray(data, dtype=np.float32)
        self.data = data
        points = kernels.tree_points(data)
        n = points.shape[0]
        self.k = k = int(k)
        self.code = int(code)
        seed = int(random_state) & 0x3FFFFFFF
        self.n_trees = n_trees or min(32, 5 + int(round(n ** 0.25)))
        self.leaf_size = leaf_size or max(10, min(k, 60))
        C = max_candidates or min(30, k)   # 60 for k = 90 costs 1.6x the time for recall 0.9999 vs 0.9996
        hd = np.full((n, k), np.inf, dtype=np.float32)
        hi = np.full((n, k), -1, dtype=np.int32)
        hf = np.zeros((n, k), dtype=np.uint8)
        # internal nodes and leaves: about 2n / leaf_size each (a tree that runs out of room
        # ends in larger leaves, never writes past its arrays)
        max_nodes = 8 * n // self.leaf_size + 64
        T = self.n_trees
        self.t_order = np.empty((T, n), dtype=np.int32)
        self.t_a = np.full((T, max_nodes), -1, dtype=np.int32)
        self.t_b = np.full((T, max_nodes), -1, dtype=np.int32)
        self.t_child = np.zeros((T, max_nodes, 2), dtype=np.int32)
        self.t_lo = np.zeros((T, max_nodes), dtype=np.int32)
        self.t_hi = np.zeros((T, max_nodes), dtype=np.int32)
        self.t_nodes = np.zeros(T, dtype=np.int64)
        for t in range(T):
            if progress is not None:
                progress.checkpoint(0.3 * t / T, f"random-projection tree {t + 1}/{T}")
            self.t_nodes[t], nl = K._build_tree(points, self.leaf_size, seed + 7919 * t, self.t_order[t], self.t_a[t],
                                  self.t_b[t], self.t_child[t], self.t_lo[t], self.t_hi[t])
            order, lo, hi_ = self.t_order[t], self.t_lo[t], self.t_hi[t]
            run_shares(lambda a, b: kernels._leaf_join(data, order, lo, hi_, a, b, hd, hi, hf, self.code), nl, 64)
        new_c = np.empty((n, C), dtype=np.int32)
        old_c = np.empty((n, C), dtype=np.int32)
        new_p = np.empty((n, C), dtype=np.int32)   # 31-bit priorities
        old_p = np.empty((n, C), dtype=np.int32)
        parts = n_threads()
        block = max(64, min(n, 2_000_000 // max(1, C * C)))
        width = 2 * (C * (C - 1) // 2 + C * C)
        up_src = np.empty((block, width), dtype=np.int32)
        up_dst = np.empty((block, width), dtype=np.int32)
        up_d = np.empty((block, width), dtype=np.float32)
        up_n = np.zeros(block, dtype=np.int64)
        self.n_iter_ = 0
        for it in range(n_iters):
            if progress is not None:
                progress.checkpoint(0.3 + 0.7 * it / n_iters, f"NN-descent round {it + 1}")
            run_shares(lambda a, b: K._candidates(hi, hf, new_c, new_p, old_c, old_p, seed, it + 1, a, parts),
                       parts, 1)
            run_shares(lambda a, b: K._mark_old(hi, hf, new_c, a, b), n, 1024)
            thr = hd[:, 0].copy()
            changed = 0
            for start in range(0, n, block):
                stop = min(n, start + block)
                run_shares(lambda a, b: kernels._local_join(data, new_c, old_c, thr, start + a, start + b, up_src,
                                                    up_dst, up_d, up_n, self.code, start), stop - start, 64)
                changed += sum(run_shares(lambda a, b: K._apply(up_src, up_dst, up_d, up_n, stop - start, hd, hi,
                                                              hf, a, parts), parts, 1))
            self.n_iter_ = it + 1
            if changed <= delta * n * k:
                break
        K._sort_heaps(hd, hi)
        self.graph_dist = hd
        self.graph_idx = hi.astype(np.intp)
        self._search_graph = None

    def search_graph(self):
        """CSR adjacency (k-NN edges plus reverse edges) walked by queries."""
        if self._search_graph is None:
            import scipy.sparse as sp

            n, k = self.graph_idx.shape
            ok = self.graph_idx >= 0
            rows = np.repeat(np.arange(n), k)[ok.ravel()]
            cols = self.graph_idx.ravel()[ok.ravel()]
            G = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))
            G = (G + G.T).tocsr()
            self._search_graph = (G.indptr.astype(np.int64), G.indices.astype(np.int64))
        return self._search_graph

    def query(self, X, k: int, epsilon: float = 0.1):
        """(dist, idx) (m, k) of the approximate k nearest indexed points of each row of X
        (float32 search units; sparse kernels: X packed as the data), each query independent of
        the others."""
        if self.kernels is K:
            X = np.ascontiguousarray(X, dtype=np.float32)
        m = self.kernels.tree_points(X).shape[0]
        out_d = np.empty((m, k), dtype=np.float32)
        out_i = np.empty((m, k), dtype=np.int64)
        if m == 0:
            return out_d, out_i
        indptr, indices = self.search_graph()
        parts = min(n_threads(), m)
        run_shares(lambda a, b: self.kernels._search(self.data, X, int(k), indptr, indices, self.t_a, self.t_b, self.t_child,
                                        self.t_nodes, self.t_order, self.t_lo, self.t_hi,
                                        min(self.n_trees, QUERY_TREES),
                                        float(epsilon), self.code, out_d, out_i, a, parts), parts, 1)
        K._sort_heaps(out_d, out_i)
        return out_d, out_i.astype(np.intp)
