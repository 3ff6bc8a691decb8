"""NN-descent on sparse rows (neighbors_approx_sparse.SparseApproximateIndex): the k-NN graph and
the queries of new rows against brute force on clustered sparse log-counts, euclidean and cosine,
without densifying the data; a neighbour method (UMAP) fitted on sparse rows through it."""
import numpy as np
import pytest
import scipy.sparse as sp

import manifold_studio as ms
from manifold_studio.algorithms.neighbors import make_index
from manifold_studio.algorithms.neighbors_approx_sparse import SparseApproximateIndex
from manifold_studio.algorithms.neighbors_sparse import SparseNeighborIndex
from manifold_studio.errors import DataError


def log_counts(n=1500, d=300, types=8, seed=0):
    """Sparse log1p negative-binomial counts of ``types`` cell types, each with raised marker genes."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, types, n)
    mean = np.full((types, d), 0.05)
    for t in range(types):
        mean[t, t * d // (2 * types):(t + 1) * d // (2 * types)] = 2.0
    mu = mean[kind] * rng.lognormal(0.0, 0.3, n)[:, None]
    return sp.csr_matrix(np.log1p(rng.negative_binomial(2, 2 / (2 + mu)).astype(float))), kind


def recall_at(found_dist, true_dist):
    """Fraction of the found neighbours within the true k-th distance (ties count as found)."""
    return float(np.mean(found_dist <= true_dist[:, -1:] * (1 + 1e-9) + 1e-12))


@pytest.fixture
def no_full_densify(monkeypatch):
    """Fail if any sparse matrix of more than 300 rows is densified."""
    for cls in (sp.csr_matrix, sp.csr_array, sp.csc_matrix, sp.csc_array):
        original = cls.toarray

        def guarded(self, *a, _original=original, **kw):
            assert self.shape[0] <= 300, f"a {self.shape} sparse matrix was densified"
            return _original(self, *a, **kw)

        monkeypatch.setattr(cls, "toarray", guarded)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_nn_descent_on_sparse_rows_matches_brute_force(metric, no_full_densify):
    X, _ = log_counts()
    X = X.tolil()
    X[7] = X[3]                                              # a copy: at distance exactly 0
    X = X.tocsr()
    index = make_index(X, neighbors="approximate", metric=metric, n_neighbors=14, random_state=1)
    assert isinstance(index, SparseApproximateIndex) and index.approximate
    exact = SparseNeighborIndex(X, metric)
    d_true, _ = exact.training_neighbors(10)
    dist, idx = index.training_neighbors(10)
    assert recall_at(dist, d_true) >= 0.99
    assert abs(index.recall() - recall_at(dist[index_rows(X.shape[0])], d_true[index_rows(X.shape[0])])) < 1e-12
    # the distances returned are exact (float64, from the sparse differences)
    rows = np.repeat(np.arange(X.shape[0]), 10)
    ref = exact.Y[rows] - exact.Y[idx.ravel()]
    d2 = np.asarray(ref.multiply(ref).sum(axis=1)).ravel().reshape(idx.shape)
    np.testing.assert_allclose(dist, 0.5 * d2 if metric == "cosine" else np.sqrt(d2), rtol=1e-12, atol=1e-12)
    assert dist[3, 0] == 0.0 and idx[3, 0] == 7
    # new rows: each searched on its own, the same as brute force
    new, _ = log_counts(n=120, seed=5)
    dq, iq = index.query(new, 10)
    assert recall_at(dq, exact.query(new, 10)[0]) >= 0.99
    d1, i1 = index.query(new[40:41], 10)
    np.testing.assert_array_equal(i1[0], iq[40])
    assert index.match(X[[3, 10]])[1] == 10 and index.match(X[3])[0] in (3, 7)
    assert index.match(new[:2]).tolist() == [-1, -1]


def index_rows(n, sample=200, seed=0):
    """The rows ApproximateIndex.recall samples."""
    return np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))


def test_sparse_approximate_index_refuses_what_it_cannot_search():
    X, _ = log_counts(n=200)
    with pytest.raises(DataError, match="metric='manhattan' does not take sparse data"):
        SparseApproximateIndex(X, 10, metric="manhattan")
    with pytest.raises(DataError, match="more points than neighbours"):
        SparseApproximateIndex(X[:10], 10)
    X = X.tolil()
    X[4, :] = 0.0
    with pytest.raises(DataError, match="non-zero length"):
        SparseApproximateIndex(X.tocsr(), 10, metric="cosine")


@pytest.mark.slow   # two UMAP fits (about 3 s on an idle machine)
def test_umap_on_sparse_rows_uses_nn_descent_and_keeps_the_map(no_full_densify):
    from sklearn.manifold import trustworthiness

    X, _ = log_counts(n=800)
    params = dict(n_neighbors=15, random_state=0, n_epochs=100)
    approx = ms.get_algorithm("umap", neighbors="approximate", **params).fit(X)
    assert approx.neighbors_method_ == "approximate" and approx.neighbors_recall_ >= 0.99
    exact = ms.get_algorithm("umap", neighbors="exact", **params).fit(X)
    t_a = trustworthiness(X, approx.embedding_, n_neighbors=10)
    t_e = trustworthiness(X, exact.embedding_, n_neighbors=10)
    assert t_a >= t_e - 0.01
    Z = approx.extend(X[:5])
    assert Z.shape == (5, 2) and np.isfinite(Z).all()
