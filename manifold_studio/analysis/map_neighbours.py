"""Neighbours in the original space for the map (Qt-free): a point's k nearest neighbours in the
prepared feature space, and how faithful the map is around each point.

- :class:`IndexCache` keeps the neighbour index of each data set (the shared index of
  :func:`manifold_studio.algorithms.neighbors.make_index`: exact k-d tree / brute force for few
  features or few points, NN-descent above), built once and reused for every click;
- :func:`original_neighbours` answers a click: the k nearest other rows and their distances. On a
  distance-matrix data set the row of the matrix is the answer (no index, no features);
- :func:`local_trustworthiness`: the share of a point's k original neighbours that are also among
  its k nearest points on the map (1 = the map keeps the neighbourhood, 0 = it lost it); the mean
  is the map's global figure.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.neighbors import make_index
from manifold_studio.errors import DataError, InvalidParameterError

#: neighbours stored per point by the index (queries for more search the index)
INDEX_K = 15
#: indexes kept (one per data set / feature space)
CACHE_SIZE = 3
#: a map with more points than this has its global trustworthiness estimated on a uniform random
#: sample of this many rows (seed :data:`TRUST_SEED`): the standard error of the mean is then at
#: most 0.5 / sqrt(20,000) ≈ 0.004
TRUST_SAMPLE = 20_000
TRUST_SEED = 0


@dataclass
class Neighbours:
    row: int
    rows: np.ndarray        # (k,) data-set rows of the neighbours, nearest first
    distances: np.ndarray   # (k,) their distances in the original space


def check_k(k, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameterError(f"Neighbours k={k!r}: use a whole number of at least 1.")
    if n < 2:
        raise DataError(f"Neighbours need at least 2 points; this map has {n}.")
    if k >= n:
        raise InvalidParameterError(f"Neighbours k={k}: the data set has {n} rows, so at most {n - 1} "
                                    "neighbours exist.")
    return int(k)


class IndexCache:
    """The neighbour index of the last few feature spaces, keyed by the caller (a data set's
    name and version) — built on first use, reused afterwards. Thread-safe enough for one
    writer: building happens outside the dictionary update."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._items: OrderedDict = OrderedDict()

    def get(self, key, X: np.ndarray, *, metric: str = "euclidean", progress=None):
        full = (key, X.shape, metric)
        index = self._items.get(full)
        if index is None:
            X = np.asarray(X, dtype=float)
            if not np.isfinite(X).all():
                raise DataError("Neighbours in the original space need every value: the prepared data "
                                "has missing values (impute them first).")
            k = min(INDEX_K, X.shape[0] - 1)
            index = make_index(X, neighbors="auto", metric=metric, n_neighbors=k, progress=progress)
            self._items[full] = index
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        else:
            self._items.move_to_end(full)
        return index

    def __len__(self) -> int:
        return len(self._items)


def original_neighbours(index, row: int, k: int) -> Neighbours:
    """The ``k`` nearest other rows of ``row`` in the index's space, nearest first."""
    n = index.n
    k = check_k(k, n)
    if not 0 <= row < n:
        raise DataError(f"Row {row} is not in the data set (rows 0 to {n - 1}).")
    graph = getattr(index, "_graph_idx", None)
    if graph is not None and k <= graph.shape[1]:
        return Neighbours(row, graph[row, :k].copy(), index._graph_dist[row, :k].copy())
    dist, idx = index.query(index.Y[row:row + 1], min(k + 1, n), prepared=True)
    keep = idx[0] != row
    return Neighbours(row, idx[0][keep][:k], dist[0][keep][:k])


def distance_row_neighbours(D: np.ndarray, row: int, k: int) -> Neighbours:
    """The ``k`` nearest other items of ``row`` read from a distance matrix ``D`` (n, n)."""
    n = D.shape[0]
    k = check_k(k, n)
    if not 0 <= row < n:
        raise DataError(f"Row {row} is not in the distance matrix (rows 0 to {n - 1}).")
    d = np.asarray(D[row], dtype=float).copy()
    d[row] = np.inf
    part = np.argpartition(d, k - 1)[:k]
    order = part[np.lexsort((part, d[part]))]
    return Neighbours(row, order, d[order])


def map_knn(xy: np.ndarray, k: int) -> np.ndarray:
    """Each map point's k nearest other map points (n, k) (exact, k-d tree)."""
    xy = np.asarray(xy, dtype=float)[:, :2]
    k = check_k(k, xy.shape[0])
    from scipy.spatial import cKDTree  # lazy: kept off the start-up

    _d, idx = cKDTree(xy).query(xy, k=k + 1, workers=-1)
    return _drop_self(idx, k)


def _drop_self(idx: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Each row of ``idx`` without its own point (row i is point ``rows[i]``, default i)."""
    n = idx.shape[0]
    own = idx == (np.arange(n) if rows is None else np.asarray(rows))[:, None]
    own[~own.any(axis=1), -1] = True   # duplicates pushed self out: drop the farthest instead
    return idx[~own].reshape(n, -1)[:, :k]


def local_trustworthiness(original_idx: np.ndarray, map_idx: np.ndarray) -> np.ndarray:
    """Per point: the share of its original neighbours (row i of ``original_idx``) that are also
    among its map neighbours (row i of ``map_idx``); both (n, k)."""
    a = np.asarray(original_idx, dtype=np.intp)
    b = np.asarray(map_idx, dtype=np.intp)
    if a.shape != b.shape:
        raise DataError(f"Local trustworthiness: neighbour lists of shape {a.shape} and {b.shape} differ.")
    n, k = a.shape
    if k == 0:
        return np.ones(n)
    # a row's overlap = |a_i ∩ b_i|: sort both, then count common values row by row
    both = np.concatenate([np.sort(a, axis=1), np.sort(b, axis=1)], axis=1)
    both.sort(axis=1)
    common = (both[:, 1:] == both[:, :-1]).sum(axis=1)
    return common / k


def map_faithfulness(index, xy: np.ndarray, k: int = 10, *, distances: np.ndarray | None = None,
                     progress=None) -> np.ndarray:
    """:func:`local_trustworthiness` of every map point (rows of ``xy`` = rows of the index,
    or of the distance matrix ``distances``)."""
    xy = np.asarray(xy, dtype=float)
    n = xy.shape[0]
    k = check_k(k, n)
    if distances is not None:
        D = np.array(distances, dtype=float)
        np.fill_diagonal(D, np.inf)
        orig = np.argpartition(D, k - 1, axis=1)[:, :k]
    else:
        if index.n != n:
            raise DataError(f"The map has {n} points but the data {index.n} rows.")
        _d, orig = index.training_neighbors(k, progress=progress)
    return local_trustworthiness(orig, map_knn(xy, k))


def global_trustworthiness(index, xy: np.ndarray, k: int = 10, *, distances: np.ndarray | None = None,
                           sample: int = TRUST_SAMPLE, seed: int = TRUST_SEED, progress=None):
    """(the map's global figure, rows used): the mean :func:`local_trustworthiness` over every
    row when the map has at most ``sample`` points (then equal to the mean of
    :func:`map_faithfulness`), else over a uniform random sample of ``sample`` rows (``seed``).
    Original neighbours from the shared ``index`` (its graph when it holds k, else a query of
    the sampled rows) or the distance matrix ``distances``; map neighbours among all map points."""
    xy = np.asarray(xy, dtype=float)[:, :2]
    n = xy.shape[0]
    k = check_k(k, n)
    rows = (np.arange(n) if n <= sample else
            np.sort(np.random.default_rng(seed).choice(n, size=int(sample), replace=False)))
    if distances is not None:
        D = np.array(distances[rows], dtype=float)
        D[np.arange(len(rows)), rows] = np.inf
        orig = np.argpartition(D, k - 1, axis=1)[:, :k]
    else:
        if index.n != n:
            raise DataError(f"The map has {n} points but the data {index.n} rows.")
        graph = getattr(index, "_graph_idx", None)
        if graph is not None and k <= graph.shape[1]:
            orig = graph[rows, :k]
        elif len(rows) == n:
            _d, orig = index.training_neighbors(k, progress=progress)
        else:
            _d, idx = index.query(index.Y[rows], min(k + 1, n), prepared=True, progress=progress)
            orig = _drop_self(idx, k, rows)
    from scipy.spatial import cKDTree  # lazy: kept off the start-up

    _d, near = cKDTree(xy).query(xy[rows], k=k + 1, workers=-1)
    return float(np.mean(local_trustworthiness(orig, _drop_self(near, k, rows)))), int(len(rows))
