"""scipy.sparse input for the perceptron, the linear classifier and the SVM: the same model as
the dense data, without a dense copy of X (issue 22)."""
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.svm import SVC

import manifold_studio as ms
from manifold_studio.errors import DataError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 30))
    X[rng.random(X.shape) < 0.8] = 0.0
    y2 = (X[:, 0] + X[:, 1] - X[:, 2] > 0).astype(int)
    y3 = np.digitize(X[:, 0] + X[:, 3], [-0.3, 0.3])
    X_new = rng.normal(size=(25, 30)) * (rng.random((25, 30)) < 0.3)
    return X, y2, y3, X_new


CASES = [
    ("perceptron", {}, 1e-12),
    ("perceptron", {"shuffle": True, "random_state": 3}, 1e-12),
    ("perceptron", {"kernel": "rbf"}, 1e-11),
    ("perceptron", {"kernel": "linear"}, 1e-10),
    ("linear_classifier", {"loss": "logistic"}, 1e-8),
    ("linear_classifier", {"loss": "logistic", "multi_class": "multinomial"}, 1e-8),
    ("linear_classifier", {"loss": "squared"}, 1e-10),
    ("linear_classifier", {"loss": "squared", "C": float("inf")}, 1e-9),
    ("linear_classifier", {"solver": "seed", "loss": "logistic", "C": float("inf")}, 1e-12),
    ("linear_classifier", {"solver": "seed", "loss": "squared", "C": 10.0}, 1e-10),
    ("linear_classifier", {"solver": "seed", "loss": "logistic", "multi_class": "multinomial"}, 1e-10),
    ("svm", {"tol": 1e-9}, 1e-6),
    ("svm", {"kernel": "linear", "tol": 1e-9}, 1e-6),
    ("svm", {"kernel": "poly", "tol": 1e-9, "decision_function_shape": "ovo"}, 1e-6),
    ("svm", {"kernel": "rbf+linear", "tol": 1e-9, "probability": True, "random_state": 0}, 1e-6),
]


@pytest.mark.parametrize("algorithm_id,params,atol", CASES)
def test_sparse_fit_and_extend_equal_dense(data, algorithm_id, params, atol):
    X, y2, y3, X_new = data
    S, S_new = sparse.csr_matrix(X), sparse.csr_matrix(X_new)
    for y in (y2, y3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the seed rules may stop at max_iter: the same on both
            dense = ms.get_algorithm(algorithm_id, **params).fit(X, y)
            sp = ms.get_algorithm(algorithm_id, **params).fit(S, y)
        scores = (lambda m, Z: m.predict_proba(Z)) if params.get("probability") else \
            (lambda m, Z: m.decision_function(Z))
        ref = scores(dense, X_new)
        np.testing.assert_allclose(scores(sp, S_new), ref, rtol=0, atol=atol)
        np.testing.assert_allclose(scores(sp, X_new), ref, rtol=0, atol=atol)      # dense rows, sparse model
        np.testing.assert_allclose(scores(dense, S_new), ref, rtol=1e-11, atol=1e-12)  # sparse rows, dense model
        np.testing.assert_array_equal(sp.predict(S), dense.predict(X))
        # sample-wise on sparse rows too
        one = np.concatenate([sp.predict(S_new[i:i + 1]) for i in range(5)])
        np.testing.assert_array_equal(one, sp.predict(S_new)[:5])


def test_every_sparse_format_and_index_width(data):
    X, y2, _, X_new = data
    ref = ms.get_algorithm("perceptron").fit(X, y2).decision_function(X_new)
    for fmt in ("csr", "csc", "coo", "lil", "dok", "bsr"):
        S = sparse.csr_matrix(X).asformat(fmt)
        m = ms.get_algorithm("perceptron").fit(S, y2)
        np.testing.assert_allclose(m.decision_function(sparse.coo_matrix(X_new)), ref, atol=1e-12)
    S = sparse.csr_array(X)
    S.indices, S.indptr = S.indices.astype(np.int64), S.indptr.astype(np.int64)
    np.testing.assert_allclose(ms.get_algorithm("perceptron").fit(S, y2).decision_function(X_new), ref, atol=1e-12)


def test_svm_sparse_agrees_with_sklearn_and_keeps_support_vectors_sparse(data):
    X, y2, y3, X_new = data
    S = sparse.csr_matrix(X)
    for y in (y2, y3):
        m = ms.get_algorithm("svm", tol=1e-8).fit(S, y)
        ref = SVC(tol=1e-8).fit(S, y)
        assert m.gamma_ == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-12)
        assert sparse.issparse(m.support_vectors_)
        np.testing.assert_array_equal(m.support_, ref.support_)
        np.testing.assert_allclose(m.decision_function(sparse.csr_matrix(X_new)),
                                   ref.decision_function(sparse.csr_matrix(X_new)), atol=1e-5)
    lin = ms.get_algorithm("svm", kernel="linear", tol=1e-8).fit(S, y2)
    assert isinstance(lin.coef_, np.ndarray) and lin.coef_.shape == (1, 30)
    np.testing.assert_allclose(lin.coef_, SVC(kernel="linear", tol=1e-8).fit(X, y2).coef_, atol=1e-5)


def test_wide_sparse_data_is_never_densified():
    # 300 rows x 2 million columns: a dense copy would need 4.8 GB
    rng = np.random.default_rng(1)
    n, d = 300, 2_000_000
    rows = np.repeat(np.arange(n), 10)
    cols = rng.integers(0, d, size=rows.size)
    cols[::10] = np.arange(n) % 2     # column 0 / 1 tells the class
    S = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
    y = np.arange(n) % 2
    for algorithm_id, params in (("perceptron", {}), ("svm", {"kernel": "linear"}), ("svm", {}),
                                 ("linear_classifier", {"loss": "logistic", "solver": "seed", "max_iter": 5})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = ms.get_algorithm(algorithm_id, **params).fit(S, y)
        assert m.score(S, y) == 1.0, algorithm_id


def test_sparse_input_messages(data):
    X, y2, _, _ = data
    bad = sparse.csr_matrix(X)
    bad.data[5] = np.nan
    with pytest.raises(DataError, match="NaN or infinite.*row"):
        ms.get_algorithm("svm").fit(bad, y2)
    m = ms.get_algorithm("perceptron").fit(sparse.csr_matrix(X), y2)
    with pytest.raises(DataError, match="30 features"):
        m.predict(sparse.csr_matrix(X[:, :10]))
    K = X @ X.T
    with pytest.raises(DataError, match="dense"):
        ms.get_algorithm("svm", kernel="precomputed").fit(sparse.csr_matrix(K), y2)
    with pytest.raises(DataError, match="0/1"):
        ms.get_algorithm("svm", kernel="set").fit(sparse.csr_matrix(X), y2)
    A = sparse.csr_matrix((np.random.default_rng(0).random((60, 8)) < 0.4).astype(float))
    ya = (A[:, 0].toarray().ravel() > 0).astype(int)
    np.testing.assert_allclose(ms.get_algorithm("svm", kernel="set").fit(A, ya).decision_function(A),
                               ms.get_algorithm("svm", kernel="set").fit(A.toarray(), ya).decision_function(A.toarray()),
                               atol=1e-9)


@pytest.mark.parametrize("algorithm_id,params", [("svm", {}), ("perceptron", {"kernel": "rbf"})])
def test_model_fitted_on_sparse_data_saves_and_loads(data, tmp_path, algorithm_id, params):
    from manifold_studio.files.model_file import load_model, save_model

    X, _, y3, X_new = data
    m = ms.get_algorithm(algorithm_id, **params).fit(sparse.csr_matrix(X), y3)
    assert sparse.issparse(m.support_vectors_)
    back = load_model(save_model(m, tmp_path / "model.npz"))
    assert sparse.issparse(back.support_vectors_)
    np.testing.assert_array_equal(back.support_vectors_.toarray(), m.support_vectors_.toarray())
    np.testing.assert_allclose(back.decision_function(sparse.csr_matrix(X_new)),
                               m.decision_function(X_new), rtol=0, atol=1e-12)
