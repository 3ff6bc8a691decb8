"""Sparse (CSR) input for the neighbour methods: the exact sparse neighbour index against the
dense one, each method on a sparse matrix equal to its fit on the dense copy, extension of sparse
rows equal to the dense rows' and sample-wise."""
import numpy as np
import pytest
import scipy.sparse as sp

import manifold_studio as ms
from manifold_studio.algorithms.neighbors import make_index
from manifold_studio.algorithms.neighbors_sparse import SparseNeighborIndex, sparse_distance_matrix
from manifold_studio.algorithms.tsne_affinities import exact_affinities
from manifold_studio.errors import DataError


def curve(n=160, seed=0):
    """A noisy curve in 12 dimensions with 40 % of the entries zero (connected graphs)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 3, n)
    X = np.column_stack([np.cos(t), np.sin(t), t] + [rng.normal(0, 0.05, n) for _ in range(9)]) + 1
    X = np.where(rng.random(X.shape) < 0.4, 0.0, X)
    X[:, 0] += 0.5
    return X, (t > 1.5).astype(int)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_sparse_index_finds_the_dense_neighbours(metric):
    X, _ = curve()
    X[5] = X[9]                                     # a copy: at distance exactly 0
    dense, sparse = make_index(X, neighbors="exact", metric=metric), make_index(sp.csr_matrix(X), metric=metric)
    assert isinstance(sparse, SparseNeighborIndex)
    d1, i1 = dense.training_neighbors(8)
    d2, i2 = sparse.training_neighbors(8)
    copies = np.isin(i1, [5, 9]) & np.isin(i2, [5, 9])      # equally near: either order
    assert np.all((i1 == i2) | copies)
    np.testing.assert_allclose(d1, d2, atol=1e-12)
    assert d2[5, 0] == 0.0 and i2[5, 0] == 9
    new = X[:6] * 1.01
    np.testing.assert_allclose(dense.query(new, 5)[0], sparse.query(sp.csr_matrix(new), 5)[0], atol=1e-12)
    np.testing.assert_array_equal(sparse.match(sp.csr_matrix(X[[3, 9]])), [3, 5])
    r1 = dense.query_radius(new, 0.3)
    r2 = sparse.query_radius(sp.csr_matrix(new), 0.3)
    np.testing.assert_array_equal(r1[0], r2[0])


def test_auto_keeps_the_exact_sparse_search_on_small_data():
    X, _ = curve()
    index = make_index(sp.csr_matrix(X), neighbors="auto", n_neighbors=10)
    assert not index.approximate and index.recall() == 1.0
    est = ms.get_algorithm("isomap", n_neighbors=10, neighbors="auto").fit(sp.csr_matrix(X))
    assert est.neighbors_method_ == "sparse" and est.neighbors_recall_ is None


def test_sparse_index_refuses_manhattan_and_zero_rows_under_cosine():
    X, _ = curve()
    with pytest.raises(DataError, match="metric='manhattan' does not take sparse data"):
        make_index(sp.csr_matrix(X), metric="manhattan")
    X[3] = 0.0
    with pytest.raises(DataError, match="non-zero length"):
        make_index(sp.csr_matrix(X), metric="cosine")


METHODS = [("isomap", {"n_neighbors": 10}),
           ("laplacian_eigenmaps", {"n_neighbors": 10}),
           ("lle", {"n_neighbors": 10}),
           ("spectral_clustering", {"n_clusters": 3, "affinity": "nearest_neighbors", "random_state": 0}),
           ("isomap", {"n_neighbors": 10, "n_landmarks": 50, "random_state": 0}),
           ("umap", {"n_epochs": 60, "random_state": 0}),
           ("umap", {"n_epochs": 60, "random_state": 0, "densmap": True}),
           ("umap", {"n_epochs": 60, "random_state": 0, "target_weight": 0.5})]


def _result(est):
    return np.asarray(getattr(est, "embedding_", None) if hasattr(est, "embedding_") else est.labels_, float)


@pytest.mark.parametrize("name,params", METHODS)
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_method_on_sparse_equals_dense_and_extends_sparse_rows(name, params, metric):
    X, y = curve()
    Xs = sp.csr_matrix(X)
    a = ms.get_algorithm(name, metric=metric, **params).fit(Xs, y)
    b = ms.get_algorithm(name, metric=metric, **params).fit(X, y)
    np.testing.assert_allclose(_result(a), _result(b), atol=1e-8)
    new = X[:9] * 1.02 + 0.01
    ext = a.extend(sp.csr_matrix(new))
    np.testing.assert_allclose(ext, b.extend(new), atol=1e-8)
    one_by_one = np.concatenate([a.extend(sp.csr_matrix(new[i:i + 1])) for i in range(new.shape[0])])
    # sample-wise (to BLAS rounding, as the dense path: a batch's products may be blocked otherwise)
    np.testing.assert_allclose(one_by_one, ext, rtol=0, atol=1e-12)


def test_tsne_on_sparse_has_the_dense_affinities_and_an_equally_good_map():
    X, _ = curve()
    Xs = sp.csr_matrix(X)
    np.testing.assert_allclose(exact_affinities(sparse_distance_matrix(Xs, "euclidean"), 30.0, metric="precomputed"),
                               exact_affinities(X, 30.0), atol=1e-15)
    from sklearn.manifold import trustworthiness
    a = ms.get_algorithm("tsne", max_iter=300, random_state=0).fit(Xs)
    b = ms.get_algorithm("tsne", max_iter=300, random_state=0).fit(X)
    # the map itself depends chaotically on rounding-size differences (as the dense fit of X and of
    # X * (1 + 1e-14) do): its quality and final KL are compared
    t_sparse = trustworthiness(X, a.embedding_, n_neighbors=10)
    assert abs(t_sparse - trustworthiness(X, b.embedding_, n_neighbors=10)) < 0.01
    assert abs(a.kl_divergence_ - b.kl_divergence_) < 0.05 * b.kl_divergence_
    new = sp.csr_matrix(X[:5] * 1.02)
    ext = a.extend(new)
    np.testing.assert_array_equal(np.vstack([a.extend(new[i:i + 1]) for i in range(5)]), ext)
    np.testing.assert_array_equal(a.extend(Xs[:3]), a.embedding_[:3])   # training rows keep their places


def test_mlp_on_sparse_equals_dense():
    X, y = curve()
    a = ms.get_algorithm("mlp", max_iter=60, random_state=0).fit(sp.csr_matrix(X), y)
    b = ms.get_algorithm("mlp", max_iter=60, random_state=0).fit(X, y)
    np.testing.assert_allclose(a.predict_proba(sp.csr_matrix(X)), b.predict_proba(X), atol=1e-10)
    rows = sp.csr_matrix(X[:6])
    np.testing.assert_allclose(np.vstack([a.predict_proba(rows[i:i + 1]) for i in range(6)]),
                               a.predict_proba(rows), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["umap", "isomap", "tsne"])
def test_a_model_fitted_on_sparse_data_saves_and_loads(tmp_path, name):
    from manifold_studio.files.model_file import load_model, save_model
    X, _ = curve()
    params = {"umap": {"n_epochs": 40, "random_state": 0}, "tsne": {"max_iter": 250, "random_state": 0}}
    est = ms.get_algorithm(name, **params.get(name, {})).fit(sp.csr_matrix(X))
    save_model(est, tmp_path / "model.msmodel")
    back = load_model(tmp_path / "model.msmodel")
    new = sp.csr_matrix(X[:5] * 1.03)
    np.testing.assert_array_equal(back.extend(new), est.extend(new))


def test_precomputed_sparse_matrix_is_refused_clearly():
    X, _ = curve()
    D = sp.csr_matrix(X[:, :1] @ X[:, :1].T)
    for name, params in (("tsne", {"init": "random"}), ("umap", {}), ("isomap", {})):
        with pytest.raises(DataError, match="metric='precomputed' does not take sparse data"):
            ms.get_algorithm(name, metric="precomputed", **params).fit(D)
