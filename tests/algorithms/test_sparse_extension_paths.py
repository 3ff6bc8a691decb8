"""Two sparse paths that failed (issue 30: sparse data sets extend for every method that takes
sparse input): spectral clustering's extension of new sparse rows (its Gaussian affinity rows took
squared distances of dense arrays only) and t-SNE's PCA start on sparse data with n <= 4 d (ARPACK
was handed an operator it does not take). Checked against the dense copy and scikit-learn."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

import manifold_studio as ms
from manifold_studio.algorithms.distances import row_squares, squared_distances

sk_decomposition = pytest.importorskip("sklearn.decomposition")


def _sparse(n, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.2, random_state=seed, format="csr") * 4.0
    y = rng.integers(0, 2, n)
    return sp.csr_matrix(X + sp.csr_matrix((y[:, None] * np.eye(1, d, 0)) * 3.0))


@pytest.mark.parametrize("a_sparse,b_sparse", [(True, True), (True, False), (False, True)])
def test_squared_distances_of_sparse_rows_are_scipys(a_sparse, b_sparse):
    A, B = _sparse(20, seed=1), _sparse(15, seed=2)
    ref = cdist(A.toarray(), B.toarray(), "sqeuclidean")
    got = squared_distances(A if a_sparse else A.toarray(), B if b_sparse else B.toarray())
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(row_squares(A), (A.toarray() ** 2).sum(axis=1), rtol=1e-14)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_spectral_clustering_extends_sparse_rows_as_their_dense_copy(metric):
    X, new = _sparse(60, seed=0), _sparse(25, seed=1)
    sparse = ms.get_algorithm("spectral_clustering", n_clusters=2, metric=metric).fit(X)
    dense = ms.get_algorithm("spectral_clustering", n_clusters=2, metric=metric).fit(X.toarray())
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    np.testing.assert_array_equal(sparse.extend(new), dense.extend(new.toarray()))
    np.testing.assert_array_equal(sparse.extend(X[:10]), sparse.labels_[:10])   # training rows keep theirs


def test_tsne_pca_start_of_sparse_data_is_the_principal_coordinates():
    from manifold_studio_builtins.tsne import TSNE

    X = _sparse(60, seed=3)                       # n = 60 <= 4 d = 120: the ARPACK route
    start = TSNE._sparse_pca_start(X, 2)
    ref = sk_decomposition.PCA(2, svd_solver="full").fit_transform(X.toarray())
    for j in range(2):
        s = np.sign(start[:, j] @ ref[:, j])
        np.testing.assert_allclose(start[:, j] * s, ref[:, j], rtol=1e-7, atol=1e-8)
    Y = ms.get_algorithm("tsne", perplexity=10.0, max_iter=250).fit_transform(X)
    assert Y.shape == (60, 2) and np.all(np.isfinite(Y))
