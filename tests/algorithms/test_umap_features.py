"""UMAP as scientists use it (umap-learn's meanings): semi-supervised labels (-1 unlabelled),
numeric targets, densMAP, inverse_transform, the precomputed metric and small data. The
comparisons with umap-learn itself are in test_umap_vs_umap_learn.py (slow)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from scipy.stats import pearsonr
from sklearn.datasets import make_blobs
from sklearn.metrics import silhouette_score
from sklearn.neighbors import NearestNeighbors

import manifold_studio as ms
from manifold_studio.algorithms.umap_target import (categorical_intersection, general_intersection,
                                                    target_codes)
from manifold_studio.errors import DataError, InvalidParameterError


def umap(**params):
    return ms.get_algorithm("umap", **{"n_epochs": 100, "random_state": 0, **params})


def overlapping_blobs():
    return make_blobs(300, 10, centers=4, cluster_std=4.0, random_state=0)


def log_radii(Z, k=10):
    d, _ = NearestNeighbors(n_neighbors=k + 1).fit(Z).kneighbors(Z)
    return np.log(d[:, 1:].mean(axis=1))


# -- semi-supervised and supervised ---------------------------------------------------------
def test_target_codes_keep_minus_one_and_missing_as_unlabelled():
    np.testing.assert_array_equal(target_codes(np.array([3, -1, 5, 3]), 4), [0, -1, 1, 0])
    np.testing.assert_array_equal(target_codes(np.array(["a", "-1", "b", None], dtype=object), 4),
                                  [0, -1, 1, -1])
    np.testing.assert_array_equal(target_codes(np.array([1.0, np.nan, 2.0]), 3), [0, -1, 1])


def test_unlabelled_edges_get_the_fixed_weight_not_the_far_one():
    # umap-learn's fast_intersection: an edge touching -1 is times exp(-1), between two classes
    # times exp(-far); then each row scaled to maximum 1 and the fuzzy union taken
    G = sp.csr_matrix(np.array([[0, .8, .6, .5], [.8, 0, .4, 0], [.6, .4, 0, .3], [.5, 0, .3, 0]]))
    labels = np.array([0, 0, 1, -1])
    far = 5.0
    A = G.toarray().copy()
    for i in range(4):
        for j in range(4):
            if labels[i] < 0 or labels[j] < 0:
                A[i, j] *= np.exp(-1.0)
            elif labels[i] != labels[j]:
                A[i, j] *= np.exp(-far)
    A = A / A.max(axis=1, keepdims=True)
    expected = A + A.T - A * A.T
    np.testing.assert_allclose(categorical_intersection(G, labels, far).toarray(), expected, rtol=1e-12)


def test_semi_supervised_map_separates_the_classes_better_than_unsupervised():
    X, y = overlapping_blobs()
    ys = y.copy()
    ys[np.random.default_rng(0).random(y.size) < 0.5] = -1
    est = umap(target_weight=0.5).fit(X, ys)
    assert est.n_unlabelled_ == int(np.sum(ys == -1))
    semi = silhouette_score(est.embedding_, y)
    plain = silhouette_score(umap().fit(X).embedding_, y)
    assert semi > plain + 0.05, (semi, plain)


def test_a_single_labelled_class_is_refused():
    X, _ = overlapping_blobs()
    with pytest.raises(DataError, match=r"at least two classes.*single class \('2'\).*target_weight=0"):
        umap(target_weight=0.5).fit(X, np.where(np.arange(300) % 2 == 0, 2, -1))


def test_numeric_target_intersection_and_map():
    # umap-learn's general_simplicial_set_intersection on a union of edges, weight 0.5 (w >= 1/2):
    # l^((1-w)/w) * r with missing values at half the smallest membership, then the reset
    L = sp.csr_matrix(np.array([[0, .9, 0], [.9, 0, .2], [0, .2, 0]]))
    R = sp.csr_matrix(np.array([[0, .5, .4], [.5, 0, 0], [.4, 0, 0]]))
    lmin, rmin = max(.2 / 2, 1e-8), min(max(.4 / 2, 1e-8), 1e-4)
    M = np.zeros((3, 3))
    for i, j in [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0)]:
        lv = L[i, j] if L[i, j] else lmin
        rv = R[i, j] if R[i, j] else rmin
        M[i, j] = lv * rv
    M = M / M.max(axis=1, keepdims=True)
    np.testing.assert_allclose(general_intersection(L, R, 0.5).toarray(), M + M.T - M * M.T, rtol=1e-12)
    # a continuous target orders the map along it
    X, _ = overlapping_blobs()
    t = X[:, 0] + np.random.default_rng(1).normal(0, 0.1, 300)
    plain = umap().fit(X).embedding_
    sup = umap(target_weight=0.7, target_metric="euclidean").fit(X, t).embedding_
    r = lambda Y: max(abs(pearsonr(Y[:, 0], t)[0]), abs(pearsonr(Y[:, 1], t)[0]))  # noqa: E731
    assert r(sup) > r(plain)


# -- densMAP -------------------------------------------------------------------------------------
def test_densmap_keeps_the_local_density():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (150, 5)), rng.normal(5, 2.0, (150, 5))])
    plain = umap(n_epochs=150).fit(X).embedding_
    dense = umap(n_epochs=150, densmap=True).fit(X)
    r0 = log_radii(X)
    c_plain, c_dens = pearsonr(r0, log_radii(plain))[0], pearsonr(r0, log_radii(dense.embedding_))[0]
    assert c_dens > 0.8 and c_dens > c_plain + 0.3, (c_dens, c_plain)
    assert dense.n_epochs_ == 150
    assert umap(n_epochs=None, densmap=True, n_neighbors=5).fit(X[:40]).n_epochs_ == 700  # umap-learn: +200


# -- inverse transform -------------------------------------------------------------------------
def test_inverse_transform_reconstructs_and_is_sample_wise():
    X, _ = overlapping_blobs()
    est = umap().fit(X)
    back = est.inverse_transform(est.embedding_)
    err = np.linalg.norm(back - X, axis=1).mean()
    assert err < 0.7 * np.linalg.norm(X - X.mean(axis=0), axis=1).mean()
    Y = est.embedding_[:6] + 0.05
    np.testing.assert_array_equal(np.vstack([est.inverse_transform(Y[i:i + 1]) for i in range(6)]),
                                  est.inverse_transform(Y))
    with pytest.raises(DataError, match="2 column"):
        est.inverse_transform(X[:3])
    with pytest.raises(InvalidParameterError, match="metric='cosine'"):
        umap(metric="cosine").fit(X).inverse_transform(Y)


# -- precomputed distances -----------------------------------------------------------------------
def test_precomputed_distances_give_the_euclidean_map():
    X, _ = overlapping_blobs()
    D = cdist(X, X)
    pre = umap(metric="precomputed", extend_epochs=0).fit(D)
    euc = umap(extend_epochs=0).fit(X)
    np.testing.assert_allclose(pre.embedding_, euc.embedding_, atol=1e-3)
    # new points are their distances to the training points; a training point keeps its place
    np.testing.assert_array_equal(pre.extend(D[:4]), pre.embedding_[:4])
    # the same neighbours and memberships: the same start (before the per-row SGD, whose random
    # stream is seeded from the row itself, here distances instead of coordinates)
    new = X[:5] + 0.3
    np.testing.assert_allclose(pre.extend(cdist(new, X)), euc.extend(new), atol=1e-4)
    with pytest.raises(DataError, match="square"):
        umap(metric="precomputed").fit(D[:, :50])


# -- small data ---------------------------------------------------------------------------------
def test_small_data_truncates_n_neighbors_as_umap_learn():
    X, _ = overlapping_blobs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = ms.get_algorithm("umap", random_state=0).fit(X[:12])
    assert est.n_neighbors_ == 11
    assert any("truncated to 11" in str(w.message) for w in caught)
    assert np.isfinite(est.embedding_).all() and est.extend(X[12:15]).shape == (3, 2)
