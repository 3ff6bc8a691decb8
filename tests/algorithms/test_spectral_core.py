"""Shared spectral core: eigensolvers, kernels, neighbours, theorem 5.1, cancel, bad input."""
import numpy as np
import pytest

from manifold_studio.algorithms.conformance import CancelAfter
import scipy.sparse as sp

import manifold_studio as ms
from manifold_studio.algorithms import CallbackProgress
from manifold_studio.algorithms.graph_components import smallest_connecting_k
from manifold_studio.algorithms.kernels import check_rbf_width, kernel_matrix
from manifold_studio.algorithms.neighbors import (
    NeighborIndex, knn_graph, knn_query, radius_graph,
)
from manifold_studio.algorithms.spectral import SpectralProblem, leading_eigenpairs
from manifold_studio.errors import DataError, FitCancelled
from spectral_data import circles, swiss_roll

# (id, params, data) for every spectral method; small data, both solver families
METHODS = [
    ("kernel_pca", {"kernel": "rbf", "gamma": 0.02}, "roll"),
    ("kernel_pca", {"kernel": "poly", "gamma": 0.01, "degree": 2}, "roll"),
    ("kernel_pca", {"kernel": "linear"}, "roll"),
    ("mds", {}, "roll"),
    ("mds", {"dissimilarity": "precomputed"}, "dist"),
    ("isomap", {"n_neighbors": 10}, "roll"),
    ("isomap", {"radius": 6.0, "n_neighbors": None}, "roll"),
    ("lle", {"n_neighbors": 10}, "roll"),
    ("laplacian_eigenmaps", {"n_neighbors": 10}, "roll"),
    ("laplacian_eigenmaps", {"normalization": "symmetric"}, "roll"),
    ("spectral_clustering", {"sigma": 0.2}, "circles"),
    ("spectral_clustering", {"affinity": "nearest_neighbors"}, "circles"),
]


def _data(kind, n=400):
    if kind == "roll":
        return swiss_roll(n)[0]
    if kind == "circles":
        return circles(n)[0]
    from scipy.spatial.distance import cdist

    X = swiss_roll(n)[0]
    return cdist(X, X)


def _ids(m):
    return f"{m[0]}-{'-'.join(f'{k}={v}' for k, v in m[1].items())}"


@pytest.mark.parametrize("solver", ["dense", "arpack"])
@pytest.mark.parametrize("method", METHODS, ids=_ids)
def test_theorem_5_1_extend_training_points_reproduces_embedding(method, solver):
    algo, params, kind = method
    X = _data(kind)
    est = ms.get_algorithm(algo, eigen_solver=solver, **params).fit(X)
    if est.kind == "embedding":
        emb = est.embedding_
        ext = est.extend(X)
    else:
        emb = est.spectral_embedding_
        ext = est.extend_embedding(X)
        np.testing.assert_array_equal(est.extend(X), est.labels_)
    scale = np.abs(emb).max()
    assert np.abs(ext - emb).max() <= 1e-8 * scale, (algo, est.eigen_solver_)


@pytest.mark.parametrize("method", METHODS, ids=_ids)
def test_extend_is_sample_wise(method):
    algo, params, kind = method
    X = _data(kind, 400)
    est = ms.get_algorithm(algo, **params).fit(X)
    rng = np.random.default_rng(1)
    if kind == "dist":
        new = X[:5] * 1.01 + 0.1
        np.fill_diagonal(new[:, :5], 0.1)
    else:
        new = X[:5] + 0.05 * rng.normal(size=(5, X.shape[1]))
    whole = est.extend(new)
    one_by_one = np.concatenate([est.extend(new[i:i + 1]) for i in range(5)])
    np.testing.assert_allclose(whole, one_by_one, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", METHODS, ids=_ids)
def test_cancel_mid_fit(method):
    algo, params, kind = method
    X = _data(kind, 400)
    est = ms.get_algorithm(algo, **params)
    with pytest.raises(FitCancelled):
        est.fit(X, progress=CancelAfter(2))
    assert not est.is_fitted


@pytest.mark.parametrize("algo,params", [("isomap", {}), ("lle", {}), ("laplacian_eigenmaps", {}),
                                          ("kernel_pca", {"gamma": 0.02})])
def test_cancel_inside_the_iterative_eigensolver(algo, params):
    X = swiss_roll(700)[0]
    seen = []

    def on_progress(fraction, message):
        seen.append(message)
        if "iteration 3)" in message:
            progress.cancel()

    progress = CallbackProgress(on_progress, min_interval=0.0)
    with pytest.raises(FitCancelled):
        ms.get_algorithm(algo, eigen_solver="arpack", **params).fit(X, progress=progress)
    assert any("Eigenvectors" in m for m in seen)


@pytest.mark.parametrize("method", METHODS, ids=_ids)
def test_nan_gives_clear_message(method):
    algo, params, kind = method
    X = _data(kind, 100).copy()
    X[3, 1] = np.nan
    with pytest.raises(DataError, match="NaN"):
        ms.get_algorithm(algo, **params).fit(X)


def test_result_summary_and_eigenvalues_kept():
    X = swiss_roll(300)[0]
    for algo in ("kernel_pca", "mds", "isomap", "lle", "laplacian_eigenmaps", "spectral_clustering"):
        est = ms.get_algorithm(algo).fit(X)
        assert est.eigenvalues_.ndim == 1 and est.eigenvalues_.size >= 2
        summary = est.result_summary()
        assert "eigenvalues" in summary and "eigen_solver" in summary, algo


# -- eigensolvers -----------------------------------------------------------------------
def test_solvers_agree_on_dense_and_laplacian_problems():
    X = swiss_roll(800)[0]
    K = kernel_matrix(X, None, "rbf", gamma=0.05)
    H = np.eye(len(X)) - 1.0 / len(X)
    M = H @ K @ H
    vd, Vd, used_d = leading_eigenpairs(SpectralProblem(3, matrix=M), 3, solver="dense")
    va, Va, used_a = leading_eigenpairs(SpectralProblem(3, matrix=M), 3, solver="arpack")
    assert (used_d, used_a) == ("dense", "arpack")
    np.testing.assert_allclose(vd, va, rtol=1e-10)
    np.testing.assert_allclose(np.abs(Vd.T @ Va), np.eye(3), atol=1e-8)

    G = knn_graph(X, 10, mode="connectivity")
    d = np.asarray(G.sum(axis=1)).ravel()
    L = sp.identity(len(X)) - sp.diags(d ** -0.5) @ G @ sp.diags(d ** -0.5)
    vd, Vd, _ = leading_eigenpairs(SpectralProblem(4, laplacian=L), 4, solver="dense")
    va, Va, used = leading_eigenpairs(SpectralProblem(4, laplacian=L), 4, solver="arpack")
    assert used == "arpack-shift-invert"
    np.testing.assert_allclose(vd, va, atol=1e-10)
    np.testing.assert_allclose(np.abs(Vd.T @ Va), np.eye(4), atol=1e-6)


def test_factor_solver_is_pca():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5)) * [5, 3, 1, 0.5, 0.1]
    Xc = X - X.mean(0)
    vals, V, used = leading_eigenpairs(SpectralProblem(2, factor=Xc), 2)
    assert used == "svd"
    np.testing.assert_allclose(vals, np.linalg.svd(Xc, compute_uv=False)[:2] ** 2)


# -- neighbours -------------------------------------------------------------------------
def test_knn_tree_and_brute_force_agree_and_exclude_self_with_duplicates():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[10] = X[11]  # a duplicated point keeps its twin (distance 0) as a neighbour
    d_tree, i_tree = knn_query(X, X, 5, exclude_self=True, index=NeighborIndex(X, "tree"))
    d_brute, i_brute = knn_query(X, X, 5, exclude_self=True, index=NeighborIndex(X, "brute"))
    np.testing.assert_allclose(d_tree, d_brute, atol=1e-7)
    assert not (i_tree == np.arange(300)[:, None]).any()
    assert i_tree[10, 0] == 11 and i_tree[11, 0] == 10 and d_tree[10, 0] == 0


def test_radius_graph_and_match():
    X = swiss_roll(300)[0]
    G = radius_graph(X, 3.0)
    from scipy.spatial.distance import cdist

    D = cdist(X, X)
    expected = (D <= 3.0) & ~np.eye(300, dtype=bool)
    assert (G.toarray() > 0).sum() == expected.sum()
    index = NeighborIndex(X)
    match = index.match(np.vstack([X[5], X[7] + 1e-9]))
    assert match.tolist() == [5, -1]


def test_smallest_connecting_k():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(50, 2)), rng.normal(size=(30, 2)) + 100])
    k = smallest_connecting_k(X, 5)
    assert k == 30  # a point of the small blob needs all 29 others plus one of the big blob
    G = knn_graph(X, k)
    from scipy.sparse.csgraph import connected_components

    assert connected_components(G)[0] == 1
    assert connected_components(knn_graph(X, k - 1))[0] == 2


# -- kernels ----------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid", "linear"])
def test_kernels_match_sklearn(kernel):
    from sklearn.metrics.pairwise import pairwise_kernels

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(30, 3))
    kw = {"linear": {}, "rbf": {"gamma": 0.3}, "poly": {"gamma": 0.3, "degree": 3, "coef0": 1},
          "sigmoid": {"gamma": 0.3, "coef0": 1}}[kernel]
    ours = kernel_matrix(X, Y, kernel, block_rows=7, **kw)
    np.testing.assert_allclose(ours, pairwise_kernels(X, Y, metric=kernel, **kw), rtol=1e-12, atol=1e-12)


def test_rbf_underflow_is_a_clear_error():
    X = swiss_roll(100)[0]
    with pytest.raises(DataError, match="underflows to 0"):
        check_rbf_width(X, 1e6)
    check_rbf_width(X, 0.1)  # fine


def test_dense_symmetric_products_read_one_triangle():
    """ARPACK's products with a dense symmetric matrix go through BLAS dsymv (C or F order, no
    copy) and equal the general product; other matrices keep numpy's product."""
    from manifold_studio.algorithms.spectral import _symmetric_matvec

    rng = np.random.default_rng(0)
    A = rng.normal(size=(60, 60))
    M = A + A.T
    v = rng.normal(size=60)
    for order in (M, np.asfortranarray(M)):
        np.testing.assert_allclose(_symmetric_matvec(order)(v), M @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_symmetric_matvec(order)(v[:, None]), M @ v, rtol=1e-12, atol=1e-12)
    assert _symmetric_matvec(M[:, :50]) is None and _symmetric_matvec(M.astype(np.float32)) is None
    assert _symmetric_matvec(M[::2, ::2]) is None
