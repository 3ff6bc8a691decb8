"""ranking_svm: recovers a known ranking direction, pairwise accuracy, Joachims' problem, bad input."""
import warnings

import numpy as np
import pytest
from sklearn.svm import SVC

import manifold_studio as ms
from manifold_studio.algorithms.conformance import check_algorithm
from manifold_studio_builtins.ranking_svm import ordered_pairs, ranking_quality
from manifold_studio.errors import DataError


def _data(n_queries=6, per=12, d=4, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    w = np.array([2.0, -1.0, 0.5, 0.0])[:d]
    rows, rel = [], []
    for q in range(n_queries):
        F = rng.normal(size=(per, d)) + rng.normal(size=d)      # query-specific shift
        s = F @ w + noise * rng.normal(size=per)
        r = np.digitize(s, np.quantile(s, [0.33, 0.66]))          # relevance 0, 1, 2
        rows.append(np.column_stack([np.full(per, q), F]))
        rel.append(r)
    return np.vstack(rows), np.concatenate(rel).astype(float), w


def test_recovers_direction_and_ranks_pairs():
    X, y, w = _data()
    m = ms.get_algorithm("ranking_svm", query_column=0, C=10.0).fit(X, y)
    a = m.coef_[0]
    cos = a @ w / np.linalg.norm(a) / np.linalg.norm(w)
    assert cos > 0.95
    q = m.ranking_quality(X, y)
    assert q["pairwise_accuracy"] > 0.97 and q["mean_kendall_tau"] > 0.7
    assert m.embedding_.shape == (X.shape[0], 1)


def test_is_joachims_problem_solved_by_svm_without_bias():
    # the same pairs solved by scikit-learn's libsvm on the symmetric set (bias 0 by symmetry)
    X, y, _ = _data(3, 8, seed=1, noise=1.0)
    C = 0.5
    m = ms.get_algorithm("ranking_svm", query_column=0, C=C, tol=1e-8).fit(X, y)
    P = ordered_pairs(X[:, 0], y)
    Z = X[P[:, 0], 1:] - X[P[:, 1], 1:]
    sk = SVC(kernel="linear", C=C / 2, tol=1e-8).fit(np.vstack([Z, -Z]), np.r_[np.ones(len(Z)), -np.ones(len(Z))])
    np.testing.assert_allclose(m.coef_, sk.coef_, atol=1e-5)
    assert abs(sk.intercept_[0]) < 1e-5
    # primal optimality: objective at a is not above the objective at nearby points
    def primal(a):
        return 0.5 * a @ a + C * np.maximum(0, 1 - Z @ a).sum()
    a = m.coef_[0]
    rng = np.random.default_rng(0)
    assert all(primal(a) <= primal(a + 1e-3 * rng.normal(size=a.size)) + 1e-9 for _ in range(50))


def test_extend_is_samplewise_and_ignores_query_column():
    X, y, _ = _data()
    m = ms.get_algorithm("ranking_svm", query_column=0).fit(X, y)
    full = m.extend(X)
    np.testing.assert_allclose(np.vstack([m.extend(X[i:i + 1]) for i in range(5)]), full[:5])
    X2 = X.copy()
    X2[:, 0] = 99
    np.testing.assert_allclose(m.extend(X2), full)
    np.testing.assert_allclose(full, m.embedding_)


def test_quality_function():
    s = np.array([3.0, 2.0, 1.0, 1.0, 2.0, 3.0])
    r = np.array([2, 1, 0, 0, 1, 2])
    qd = np.array([0, 0, 0, 1, 1, 1])
    out = ranking_quality(s, r, qd)
    assert out["pairwise_accuracy"] == 1.0 and out["n_pairs"] == 6
    assert out["kendall_tau"] == {0: 1.0, 1: 1.0}
    out = ranking_quality(-s, r, qd)
    assert out["pairwise_accuracy"] == 0.0 and out["mean_kendall_tau"] == -1.0


def test_bad_input():
    X, y, _ = _data()
    with pytest.raises(DataError, match="query_column=9 is out of range"):
        ms.get_algorithm("ranking_svm", query_column=9).fit(X, y)
    # one query with all-equal relevances is fine when another has pairs
    y2 = y.copy()
    y2[X[:, 0] == 0] = 1.0
    ms.get_algorithm("ranking_svm", query_column=0).fit(X, y2)
    with pytest.raises(DataError, match="No pair"):
        ms.get_algorithm("ranking_svm", query_column=0).fit(X, np.ones(len(y)))
    # every row its own query: no pair
    with pytest.raises(DataError, match="No pair"):
        ms.get_algorithm("ranking_svm", query_column=1).fit(X, y)
    with pytest.raises(DataError, match="numeric"):
        ms.get_algorithm("ranking_svm", query_column=0).fit(X, np.array(["a", "b"] * (len(y) // 2)))


def test_conformance_kit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_algorithm(ms.algorithm_class("ranking_svm"))
