"""Disconnected neighbourhood graphs: the smallest k that connects them, and joining their
pieces through their closest pairs of points (Isomap's ``disconnected='connect'``).

Joining is Borůvka's rounds: every piece gets an edge to its nearest point outside it, until
one piece is left. Exactly, that nearest outside point costs a brute-force pass over all pairs
of pieces, as much as the exact neighbour search itself; with approximate neighbours
(``approximate=True``) each piece's closest pair is found from a random sample of the outside
points and refined by exact nearest-point steps (:func:`_closest_pair_sampled`), so joining
stays near-linear in n like the search it follows.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.neighbors import NeighborIndex, knn_query, make_index, neighbor_rows, unit_rows
from manifold_studio.algorithms.progress import as_progress

__all__ = ["smallest_connecting_k", "connect_components", "CONNECT_SAMPLE"]

#: outside points each piece is compared with when joining approximately
CONNECT_SAMPLE = 1024
#: inside points of a piece (those closest to the outside sample) whose exact nearest outside
#: point is looked up
_CANDIDATES = 256
#: the best of those pairs, refined by alternating nearest-point steps
_STARTS = 16
#: rows of exact distances to every point computed in one pass
_ROWS_PER_PASS = 512
#: most alternating refinement steps (nearest outside of a point, nearest inside of that one)
_REFINE_STEPS = 8


def smallest_connecting_k(X: np.ndarray, k_start: int, *, index: NeighborIndex | None = None,
                          max_elements: int = 20_000_000) -> int | None:
    """The smallest k whose symmetric k-NN graph on X is connected (None if beyond the budget)."""
    X = X if sp.issparse(X) else np.asarray(X, dtype=float)
    n = X.shape[0]
    index = index or make_index(X, neighbors="exact")
    k_cap = min(n - 1, max(k_start + 1, max_elements // max(n, 1)))

    def connected(idx, k):
        G = neighbor_rows(np.ones((n, k)), idx[:, :k], n)
        from scipy.sparse.csgraph import connected_components   # here: the plugins load without csgraph
        return connected_components(G, directed=False)[0] == 1

    hi = min(k_cap, max(2 * k_start, k_start + 1))
    while True:
        _, idx = knn_query(X, X, hi, exclude_self=True, index=index)
        if connected(idx, hi):
            break
        if hi >= k_cap:
            return None
        hi = min(k_cap, 2 * hi)
    lo = k_start  # known disconnected
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if connected(idx, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _closest_pair_exact(X, inside, outside, metric) -> tuple[float, int, int]:
    """(distance, i, o): the closest pair with i inside and o outside, by brute force."""
    if metric == "precomputed":
        sub = X[np.ix_(inside, outside)]
        j = np.argmin(sub, axis=1)
        dist = sub[np.arange(inside.size), j]
    else:
        dist, j = make_index(X[outside], neighbors="exact", metric=metric).query(X[inside], 1)
        dist, j = dist[:, 0], j[:, 0]
    a = int(np.argmin(dist))
    return float(dist[a]), int(inside[a]), int(outside[j[a]])


class _RowDistances:
    """Metric distances of a few rows of X to every row of X, shape (len(rows), n): for
    'euclidean' and 'cosine' one single-precision BLAS product over the centred (or unit) rows
    (a memory-bound pass; the rows only rank candidates: :meth:`pair` gives a pair's exact
    distance)."""

    def __init__(self, X: np.ndarray, metric: str):
        self.metric = metric
        self.X = unit_rows(X) if metric == "cosine" else X
        self.Xs = (self.X - (self.X.mean(axis=0) if metric == "euclidean" else 0.0)).astype(np.float32)
        self.sq = np.einsum("ij,ij->i", self.Xs, self.Xs) if metric == "euclidean" else None

    def __call__(self, rows, cols=None) -> np.ndarray:
        """Distances of X[rows] to X[cols] (every row of X when cols is None)."""
        Y = self.X if cols is None else self.X[cols]
        if self.metric == "manhattan":
            from scipy.spatial.distance import cdist  # lazy: kept off the start-up
            return cdist(self.X[rows], Y, "cityblock")
        Ys = self.Xs if cols is None else self.Xs[cols]
        G = self.Xs[rows] @ Ys.T
        if self.metric == "cosine":
            return np.maximum(1.0 - G, 0.0)
        G *= -2.0
        G += (self.sq if cols is None else self.sq[cols])[None, :]
        G += self.sq[rows][:, None]
        return np.sqrt(np.maximum(G, 0.0))

    def pair(self, i: int, j: int) -> float:
        """The distance of one pair, from the difference of the rows (no cancellation)."""
        if self.metric == "cosine":
            return float(0.5 * np.sum((self.X[i] - self.X[j]) ** 2))
        from scipy.spatial.distance import cdist
        return float(cdist(self.X[i:i + 1], self.X[j:j + 1],
                           "cityblock" if self.metric == "manhattan" else "euclidean")[0, 0])


def _closest_pairs_sampled(X, rowdist: _RowDistances, comp, n_comp, metric, rng, tick
                           ) -> list[tuple[float, int, int]]:
    """For every component c, (distance, i, o): a close pair with i in c and o outside it,
    found without comparing every pair. Every inside point's distance to a random sample of
    :data:`CONNECT_SAMPLE` outside points ranks them; the :data:`_CANDIDATES` closest (the
    side facing the outside) get their exact nearest outside point; from the :data:`_STARTS`
    best pairs, alternately, the exact nearest inside point of o and the exact nearest outside
    point of that one, while the pair shortens (a step never lengthens it). The exact searches
    of all components share each pass over X (memory-bound)."""
    cands = []
    for c in range(n_comp):
        tick(c)
        inside, outside = np.flatnonzero(comp == c), np.flatnonzero(comp != c)
        sample = (outside if outside.size <= CONNECT_SAMPLE
                  else np.sort(rng.choice(outside, CONNECT_SAMPLE, replace=False)))
        d = np.concatenate([rowdist(inside[a:a + _ROWS_PER_PASS], sample).min(axis=1)
                            for a in range(0, inside.size, _ROWS_PER_PASS)])
        cands.append(inside[np.argsort(d, kind="stable")[:_CANDIDATES]])
    owner = np.repeat(np.arange(n_comp), [len(s) for s in cands])   # the component of each row

    def nearest(rows, comps, inside: bool):
        dist = np.empty(len(rows))
        idx = np.empty(len(rows), dtype=np.intp)
        for a in range(0, len(rows), _ROWS_PER_PASS):
            D = rowdist(rows[a:a + _ROWS_PER_PASS])
            same = comp[None, :] == comps[a:a + _ROWS_PER_PASS, None]
            D[~same if inside else same] = np.inf
            idx[a:a + _ROWS_PER_PASS] = j = np.argmin(D, axis=1)
            dist[a:a + _ROWS_PER_PASS] = D[np.arange(D.shape[0]), j]
        return dist, idx

    i = np.concatenate(cands)
    best, o = nearest(i, owner, inside=False)
    keep = np.concatenate([np.flatnonzero(owner == c)[np.argsort(best[owner == c], kind="stable")[:_STARTS]]
                           for c in range(n_comp)])
    i, o, best, owner = i[keep], o[keep], best[keep], owner[keep]
    active = np.arange(i.size)          # the starts whose pair shortened at the last step
    for _ in range(_REFINE_STEPS):
        _, i2 = nearest(o[active], owner[active], inside=True)
        d2, o2 = nearest(i2, owner[active], inside=False)
        better = d2 < best[active]
        active, i2, o2, d2 = active[better], i2[better], o2[better], d2[better]
        if not active.size:
            break
        best[active], i[active], o[active] = d2, i2, o2
    pairs = []
    for c in range(n_comp):
        rows = np.flatnonzero(owner == c)
        a = int(rows[np.argmin(best[rows])])
        pairs.append((rowdist.pair(int(i[a]), int(o[a])), int(i[a]), int(o[a])))
    return pairs


def connect_components(X: np.ndarray, G: sp.spmatrix, metric: str = "euclidean", *,
                       approximate: bool = False, seed: int = 0, progress=None
                       ) -> tuple[sp.csr_matrix, list[tuple[int, int, float]]]:
    """Join the connected components of the symmetric graph ``G`` on the points ``X`` through
    their closest pairs of points: in rounds (Borůvka), every component gets an edge to its
    nearest point outside it, until one component is left. Returns (the connected graph, the
    edges added as (i, j, distance)). ``metric='precomputed'``: X is the distance matrix.
    ``approximate``: each component's closest pair is searched from a sample of the outside
    points (seeded by ``seed``; see the module's description); never for 'precomputed', whose
    distances are already at hand. ``progress`` is checked once per piece and round."""
    X = X if sp.issparse(X) else np.asarray(X, dtype=float)
    G = sp.csr_matrix(G, dtype=float)
    rng = np.random.default_rng(seed)
    rowdist = _RowDistances(X, metric) if approximate and metric != "precomputed" else None
    progress = as_progress(progress)
    added: list[tuple[int, int, float]] = []
    first = None
    while True:
        from scipy.sparse.csgraph import connected_components   # here: the plugins load without csgraph
        n_comp, comp = connected_components(G, directed=False)
        if n_comp == 1:
            progress.checkpoint(1.0, "joined")
            return G, added
        first = first or n_comp
        done = 1.0 - np.log(n_comp) / np.log(first) if first > 1 else 0.0   # rounds halve the pieces

        def tick(c):
            progress.checkpoint(min(0.99, done + (1.0 - done) * c / n_comp), f"{n_comp} pieces: piece {c + 1:,}")

        if rowdist is not None:
            pairs = _closest_pairs_sampled(X, rowdist, comp, n_comp, metric, rng, tick)
        else:
            pairs = []
            for c in range(n_comp):
                tick(c)
                pairs.append(_closest_pair_exact(X, np.flatnonzero(comp == c), np.flatnonzero(comp != c), metric))
        # one link per pair of components, the shortest found (the same pair may be the best of
        # both ends; from samples, the two ends may find different pairs: a second link between
        # two pieces would be a shortcut no exact closest pair makes)
        links: dict[tuple[int, int], tuple[float, int, int]] = {}
        for d, i, o in pairs:
            key = (min(comp[i], comp[o]), max(comp[i], comp[o]))
            if key not in links or (d, min(i, o)) < links[key][:2]:
                links[key] = (d, min(i, o), max(i, o))
        rows, cols, vals = [], [], []
        for d, i, j in sorted(links.values()):
            rows += [i, j]
            cols += [j, i]
            # a zero length (duplicate points in two components) would be no edge in a sparse graph
            vals += [max(d, np.finfo(float).tiny)] * 2
            added.append((i, j, d))
        G = (G + sp.csr_matrix((vals, (rows, cols)), shape=G.shape)).tocsr()
