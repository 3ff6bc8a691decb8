"""The map's global trustworthiness figure (issue 31: "the global figure goes in the run
summary"), against brute-force neighbours."""
import numpy as np
from scipy.spatial.distance import cdist

from manifold_studio.analysis.map_neighbours import (IndexCache, global_trustworthiness,
                                                     map_faithfulness)

K = 10


def _brute_share(X, xy, rows, k=K):
    def knn(A, r):
        d = cdist(A[r], A)
        d[np.arange(len(r)), r] = np.inf
        return np.argsort(d, axis=1, kind="stable")[:, :k]
    a, b = knn(X, rows), knn(xy, rows)
    return np.mean([len(set(a[i]) & set(b[i])) / k for i in range(len(rows))])


def _data(n=600, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    xy = X[:, :2] + 0.3 * rng.normal(size=(n, 2))
    return X, xy


def test_every_row_matches_brute_force_and_the_faithfulness_colour():
    X, xy = _data()
    index = IndexCache().get("x", X)
    value, used = global_trustworthiness(index, xy, K)
    assert used == len(X)
    assert abs(value - _brute_share(X, xy, np.arange(len(X)))) < 1e-12
    assert abs(value - np.mean(map_faithfulness(index, xy, K))) < 1e-12
    assert 0.05 < value < 0.95


def test_a_sample_uses_the_stated_random_rows():
    X, xy = _data(n=900, seed=2)
    index = IndexCache().get("x", X)
    value, used = global_trustworthiness(index, xy, K, sample=250, seed=7)
    assert used == 250
    rows = np.sort(np.random.default_rng(7).choice(len(X), size=250, replace=False))
    assert abs(value - _brute_share(X, xy, rows)) < 1e-12
    full, _ = global_trustworthiness(index, xy, K)
    assert abs(value - full) < 0.06          # the sample estimates the whole map's figure


def test_distance_matrix_rows():
    X, xy = _data(n=300, seed=3)
    value, used = global_trustworthiness(None, xy, K, distances=cdist(X, X), sample=100, seed=0)
    rows = np.sort(np.random.default_rng(0).choice(300, size=100, replace=False))
    assert used == 100 and abs(value - _brute_share(X, xy, rows)) < 1e-12
