"""Sparse input (scipy.sparse) without densifying: PCA against scikit-learn's arpack PCA on the
same sparse matrix, NMF and k-means equal to their dense fits, kernel PCA with the linear and the
precomputed kernel, and the refusal message everywhere else."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import PCA as SkPCA
from sklearn.decomposition import KernelPCA as SkKernelPCA

import manifold_studio as ms
from manifold_studio.algorithms.pca_solvers import CentredSparse
from manifold_studio.errors import DataError


def _sparse(n=300, d=80, density=0.05, seed=0):
    X = sp.random(n, d, density=density, random_state=seed, format="csr") * 10.0
    X = X + sp.random(n, d, density=0.02, random_state=seed + 1, format="csr") * 50.0
    return sp.csr_matrix(X)


def _abs_close(A, B, atol):
    """Equal per component up to its sign (columns of embeddings, rows of components)."""
    np.testing.assert_allclose(np.abs(A), np.abs(B), atol=atol)


def test_centred_operator_equals_the_centred_matrix(rng):
    X = _sparse(40, 15)
    mean = np.asarray(X.mean(axis=0)).ravel()
    Xc = X.toarray() - mean
    op = CentredSparse(X, mean)
    M, Q = rng.normal(size=(15, 3)), rng.normal(size=(4, 40))
    np.testing.assert_allclose(op @ M, Xc @ M, atol=1e-12)
    np.testing.assert_allclose(op.T @ Q.T, Xc.T @ Q.T, atol=1e-12)
    np.testing.assert_allclose(Q @ op, Q @ Xc, atol=1e-12)
    np.testing.assert_allclose(op @ M[:, 0], Xc @ M[:, 0], atol=1e-12)


@pytest.mark.parametrize("solver", ["auto", "arpack", "covariance"])
def test_sparse_pca_matches_sklearn_arpack(solver):
    X = _sparse()
    ours = ms.get_algorithm("pca", n_components=5, svd_solver=solver, random_state=0).fit(X)
    ref = SkPCA(n_components=5, svd_solver="arpack", random_state=0).fit(X)
    assert ours.svd_solver_ == ("covariance" if solver == "auto" else solver)   # 80 columns: one pass
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-9)
    np.testing.assert_allclose(ours.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-9)
    np.testing.assert_allclose(ours.mean_, ref.mean_, atol=1e-12)
    _abs_close(ours.components_, ref.components_, 1e-9)
    _abs_close(ours.embedding_, ref.transform(X), 1e-8)
    new = _sparse(20, 80, seed=5)
    _abs_close(ours.transform(new), ref.transform(new), 1e-8)
    # sparse and dense rows extend alike (sample-wise)
    np.testing.assert_allclose(ours.transform(new), ours.transform(new.toarray()), atol=1e-10)


def test_auto_takes_the_covariance_of_dense_blocks_for_counts_and_arpack_for_very_sparse_rows(monkeypatch):
    from manifold_studio.algorithms import pca_sparse

    counts = _sparse(600, 120, density=0.3)               # 43 stored per row: 120² ≤ 20,000 × 43
    wide = _sparse(600, 500, density=0.002, seed=3)       # 2 per row: 500² > 20,000 × 2
    assert pca_sparse.choose_sparse_solver(counts, 10) == "covariance"
    assert pca_sparse.choose_sparse_solver(wide, 10) == "arpack"
    assert pca_sparse.choose_sparse_solver(wide, 0.9) == "covariance"   # a fraction: every axis
    assert pca_sparse.choose_sparse_solver(counts[:100], 10) == "covariance"   # n < d, d small
    assert pca_sparse.choose_sparse_solver(_sparse(300, 1200, density=0.5), 10) == "arpack"   # n < d, d large
    monkeypatch.setattr(pca_sparse, "BLOCK_ELEMENTS", 120 * 50)          # blocks of 50 rows
    for X in (counts, wide):   # dense blocks (counts) and the sparse product (very sparse rows)
        ours = ms.get_algorithm("pca", n_components=6, svd_solver="covariance").fit(X)
        ref = SkPCA(n_components=6, svd_solver="arpack", random_state=0).fit(X)
        np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-9)
        _abs_close(ours.components_, ref.components_, 1e-8)


def test_sparse_randomized_pca_finds_a_clear_subspace(rng):
    # low rank plus small noise: the randomized sketch is then essentially exact
    W = sp.random(400, 4, density=0.5, random_state=1, format="csr")
    H = sp.random(4, 60, density=0.5, random_state=2, format="csr") * 10
    X = sp.csr_matrix(W @ H + sp.random(400, 60, density=0.02, random_state=3) * 0.01)
    ours = ms.get_algorithm("pca", n_components=3, svd_solver="randomized", random_state=0).fit(X)
    ref = SkPCA(n_components=3, svd_solver="arpack", random_state=0).fit(X)
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-6)
    _abs_close(ours.components_, ref.components_, 1e-5)


def test_sparse_pca_never_densifies(monkeypatch):
    X = sp.csr_array(_sparse())
    original = sp.csr_array.toarray

    def guarded(self, *args, **kwargs):   # a few rows may be densified (k-means seeds), never X
        if self.shape[0] > 10:
            raise AssertionError(f"a sparse matrix of shape {self.shape} was densified")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_array, "toarray", guarded)
    monkeypatch.setattr(sp.csr_array, "todense", guarded)
    ms.get_algorithm("pca", n_components=3, svd_solver="arpack").fit(X).transform(X)
    ms.get_algorithm("pca", n_components=3, svd_solver="randomized", random_state=0).fit(X)
    ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit(X).predict(X)
    ms.get_algorithm("nmf", n_components=3, random_state=0, max_iter=30, tol=0).fit(X)
    ms.get_algorithm("kernel_pca", kernel="linear", n_components=2).fit(X).transform(X)


def test_sparse_pca_refuses_dense_only_solvers():
    with pytest.raises(DataError, match="svd_solver is 'auto', 'arpack', 'randomized' or 'covariance'"):
        ms.get_algorithm("pca", svd_solver="full").fit(_sparse())
    with pytest.raises(DataError, match="n_features = 80"):
        ms.get_algorithm("pca", n_components=80, svd_solver="arpack").fit(_sparse())


@pytest.mark.parametrize("loss", ["frobenius", "kl"])
@pytest.mark.parametrize("init", ["nndsvda", "random"])
def test_sparse_nmf_equals_dense(loss, init):
    X = _sparse(200, 60, density=0.1)
    kw = dict(n_components=4, loss=loss, init=init, random_state=0, max_iter=200)
    dense = ms.get_algorithm("nmf", **kw).fit(X.toarray())
    sparse = ms.get_algorithm("nmf", **kw).fit(X)
    assert sparse.n_iter_ == dense.n_iter_
    np.testing.assert_allclose(sparse.embedding_, dense.embedding_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(sparse.components_, dense.components_, rtol=1e-9, atol=1e-11)
    assert sparse.reconstruction_err_ == pytest.approx(dense.reconstruction_err_, rel=1e-10)
    np.testing.assert_allclose(sparse.loss_curve_, dense.loss_curve_, rtol=1e-10)
    # extension: training rows keep their coefficients (recognised by digest), new rows are solved
    np.testing.assert_array_equal(sparse.transform(X[:7]), sparse.embedding_[:7])
    np.testing.assert_array_equal(sparse.transform(X[:7].toarray()), sparse.embedding_[:7])
    new = X[:5] * 2.0
    np.testing.assert_allclose(sparse.transform(new), dense.transform(new.toarray()), atol=1e-9)


def test_sparse_nmf_refuses_negative_values_by_position():
    X = _sparse(30, 10, density=0.3).tolil()
    X[4, 7] = -1.5
    with pytest.raises(DataError, match=r"column 7, e\.g\. row 4: -1\.5"):
        ms.get_algorithm("nmf").fit(X.tocsr())


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_sparse_kmeans_equals_dense(init):
    X = _sparse(300, 20, density=0.2)
    kw = dict(n_clusters=4, init=init, random_state=3)
    dense = ms.get_algorithm("kmeans", **kw).fit(X.toarray())
    sparse = ms.get_algorithm("kmeans", **kw).fit(X)
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    np.testing.assert_allclose(sparse.cluster_centers_, dense.cluster_centers_, atol=1e-10)
    assert sparse.inertia_ == pytest.approx(dense.inertia_, rel=1e-10)
    assert sparse.total_inertia_ == pytest.approx(dense.total_inertia_, rel=1e-10)
    new = _sparse(40, 20, density=0.2, seed=9)
    np.testing.assert_array_equal(sparse.predict(new), dense.predict(new.toarray()))
    np.testing.assert_allclose(sparse.transform_distances(new), dense.transform_distances(new.toarray()),
                               atol=1e-9)


def test_sparse_kmeans_with_weights_equals_dense(rng):
    X = _sparse(200, 15, density=0.3)
    w = rng.uniform(0.2, 3.0, 200)
    dense = ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit(X.toarray(), sample_weight=w)
    sparse = ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit(X, sample_weight=w)
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    assert sparse.inertia_ == pytest.approx(dense.inertia_, rel=1e-10)


def test_sparse_linear_kernel_pca_equals_dense_and_sklearn(rng):
    X = _sparse(250, 30, density=0.1)
    new = _sparse(9, 30, density=0.1, seed=4)
    for solver in ("dense", "arpack"):
        ours = ms.get_algorithm("kernel_pca", kernel="linear", n_components=3, eigen_solver=solver).fit(X)
        ref = SkKernelPCA(n_components=3, kernel="linear").fit(X)
        np.testing.assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
        _abs_close(ours.embedding_, ref.transform(X), 1e-8)
        _abs_close(ours.transform(new), ref.transform(new), 1e-8)


def test_sparse_precomputed_kernel_pca_equals_dense(rng):
    Y = rng.normal(size=(80, 4))
    K = np.maximum(Y @ Y.T, 0.0)          # a sparse, symmetric kernel matrix
    Kn = np.maximum(rng.normal(size=(6, 4)) @ Y.T, 0.0)
    dense = ms.get_algorithm("kernel_pca", kernel="precomputed", n_components=3).fit(K)
    sparse = ms.get_algorithm("kernel_pca", kernel="precomputed", n_components=3,
                              eigen_solver="arpack").fit(sp.csr_matrix(K))
    np.testing.assert_allclose(sparse.eigenvalues_, dense.eigenvalues_, rtol=1e-9)
    _abs_close(sparse.embedding_, dense.embedding_, 1e-8)
    _abs_close(sparse.transform(sp.csr_matrix(Kn)), dense.transform(Kn), 1e-8)


@pytest.mark.parametrize("algorithm_id,params", [("hierarchical", {}), ("kernel_pca", {"kernel": "rbf"}),
                                                 ("ppca", {}), ("mds", {})])
def test_other_methods_refuse_sparse_and_name_those_that_take_it(algorithm_id, params):
    with pytest.raises(DataError) as info:
        ms.get_algorithm(algorithm_id, **params).fit(_sparse(40, 10))
    message = str(info.value)
    assert "sparse" in message and "toarray()" in message
    for taker in ("pca", "nmf", "kmeans", "kernel_pca (kernel is 'linear' or 'precomputed')", "mlp",
                  "umap (metric 'euclidean' or 'cosine')", "tsne (metric 'euclidean' or 'cosine')"):
        assert taker in message
    assert "\n" not in message


def test_sparse_refusal_in_extend_too():
    est = ms.get_algorithm("mds", n_components=2).fit(np.random.default_rng(0).normal(size=(20, 10)))
    with pytest.raises(DataError, match="Methods that take sparse data"):
        est.extend(_sparse(5, 10))


def test_sparse_nan_is_refused_by_position():
    X = _sparse(30, 10, density=0.3).tolil()
    X[3, 2] = np.nan
    with pytest.raises(DataError, match="NaN value.*row 3 column 2"):
        ms.get_algorithm("pca").fit(X.tocsr())
