"""Agreement of ``linear_classifier`` and ``perceptron`` with scikit-learn (issue 33).

Adapted from scikit-learn's own tests (sklearn/linear_model/tests/test_logistic.py,
test_perceptron.py, test_sgd.py) where they apply to this product's parameters; scikit-learn
is the oracle. Names that differ on purpose:

* ``linear_classifier`` with ``loss='logistic'`` is ``LogisticRegression`` (L2, lbfgs, ``C``
  the same inverse strength, the intercept not penalised, ``C=inf`` = ``penalty=None``); its
  default ``loss='squared'`` (the seed's Widrow–Hoff error) is ``RidgeClassifier(alpha=1/C)``.
* ``perceptron``'s ``tau`` is scikit-learn's ``eta0`` and its ``max_epochs`` stops at the first
  epoch without a mistake (the seed's rule), where ``Perceptron``'s ``max_iter`` stops on
  ``tol``; with ``shuffle=False, tol=None`` scikit-learn runs the same updates. scikit-learn's
  SGD damps the intercept's updates on sparse input (``intercept_decay`` 0.01); here sparse
  input gives exactly the dense result, on purpose (test_sparse_input_equals_dense_...).
  ``shuffle=True`` draws another order than scikit-learn's (not compared).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_classification
from sklearn.linear_model import LogisticRegression, Perceptron, RidgeClassifier
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

import manifold_studio as ms
from manifold_studio.errors import ConvergenceWarning, ManifoldStudioError
from manifold_studio_builtins.linear_classifier import _multinomial_fun_grad

#: tight tolerances on both sides, so both optimisers reach the same minimum
TIGHT = {"tol": 1e-10, "max_iter": 1000}


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def binary():
    return make_classification(200, 5, n_informative=3, random_state=0)


def _logistic(**kw):
    return ms.get_algorithm("linear_classifier", loss="logistic", **{**TIGHT, **kw})


# -- logistic regression (test_logistic.py) ---------------------------------------------------
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0, np.inf])
def test_binary_logistic_regression_matches(binary, C):
    X, y = binary
    ours = _logistic(C=C).fit(X, y)
    sk = (LogisticRegression(penalty=None, **TIGHT) if np.isinf(C) else LogisticRegression(C=C, **TIGHT)).fit(X, y)
    assert ours.coef_.shape == sk.coef_.shape == (1, 5) and ours.intercept_.shape == (1,)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, atol=1e-6)
    np.testing.assert_allclose(ours.decision_function(X), sk.decision_function(X), atol=1e-5)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-7)
    np.testing.assert_allclose(ours.predict_log_proba(X), sk.predict_log_proba(X), atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X), sk.predict(X))


@pytest.mark.parametrize("scaled", [True, False])
def test_multinomial_logistic_regression_matches(iris, scaled):
    """test_logistic_regression_multinomial: the softmax loss with L2 on iris. Both L-BFGS runs
    stop on the relative decrease of the objective: the objectives agree to 1e-10; on the
    unscaled (ill-conditioned) iris the flat directions leave 1e-4 in the coefficients."""
    X, y = iris
    if scaled:
        X = StandardScaler().fit_transform(X)
    ours = _logistic().fit(X, y)
    sk = LogisticRegression(**TIGHT).fit(X, y)
    assert ours.multinomial_ and ours.coef_.shape == sk.coef_.shape == (3, 4)
    Y = np.eye(3)[y].T
    value = [_multinomial_fun_grad(np.concatenate([m.coef_.ravel(), m.intercept_]), X, Y, 1 / len(y), 3)[0]
             for m in (ours, sk)]
    assert abs(value[0] - value[1]) < 1e-10
    atol = 1e-5 if scaled else 1e-4
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=atol)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, atol=10 * atol)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-5)
    np.testing.assert_array_equal(ours.predict(X), sk.predict(X))


def test_multinomial_identifiability(iris):
    """With the L2 penalty the softmax coefficients (and the intercepts, at the optimum) sum to
    0 over the classes, as scikit-learn's (test_multinomial_identifiability_properties)."""
    X, y = iris
    ours = _logistic().fit(X, y)
    np.testing.assert_allclose(ours.coef_.sum(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(ours.intercept_.sum(), 0.0, atol=1e-6)


def test_one_vs_rest_logistic_regression_matches(iris):
    """multi_class='ovr' is scikit-learn's OneVsRestClassifier(LogisticRegression()): the same
    binary problems and its normalised probabilities."""
    X, y = iris
    ours = _logistic(multi_class="ovr").fit(X, y)
    sk = OneVsRestClassifier(LogisticRegression(**TIGHT)).fit(X, y)
    np.testing.assert_allclose(ours.coef_, np.vstack([e.coef_ for e in sk.estimators_]), atol=1e-6)
    np.testing.assert_allclose(ours.intercept_, np.concatenate([e.intercept_ for e in sk.estimators_]), atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-8)
    np.testing.assert_array_equal(ours.predict(X), sk.predict(X))


@pytest.mark.parametrize("y", [np.array([0, 1, 1]), np.array([2, 1, 0])])
def test_predict_2_and_3_classes(y):
    """test_predict_2_classes / test_predict_3_classes (check_predictions): tiny data, classes
    learned exactly, probabilities consistent with predict, as scikit-learn."""
    X = np.array([[-1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    for C in (1.0, 100.0):
        ours = _logistic(C=C).fit(X, y)
        sk = LogisticRegression(C=C, **TIGHT).fit(X, y)
        np.testing.assert_array_equal(ours.classes_, np.unique(y))
        np.testing.assert_array_equal(ours.predict(X), sk.predict(X))
        proba = ours.predict_proba(X)
        assert proba.shape == (3, len(np.unique(y)))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(ours.classes_[proba.argmax(axis=1)], ours.predict(X))
        np.testing.assert_allclose(proba, sk.predict_proba(X), atol=1e-5)


def test_predict_iris(iris):
    """test_predict_iris: string labels, accuracy above 0.95 for both multi-class schemes."""
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    for multi_class in ("multinomial", "ovr"):
        ours = _logistic(multi_class=multi_class).fit(X, names)
        pred = ours.predict(X)
        np.testing.assert_array_equal(ours.classes_, ["setosa", "versicolor", "virginica"])
        assert np.mean(pred == names) > 0.95
        np.testing.assert_array_equal(ours.classes_[ours.predict_proba(X).argmax(axis=1)], pred)


def test_intercept_is_not_penalised(binary):
    """scikit-learn's lbfgs leaves the intercept out of the penalty: shifting the data only
    moves the intercept (with the penalty on it the slope would change too)."""
    X, y = binary
    a = _logistic(C=0.1).fit(X, y)
    b = _logistic(C=0.1).fit(X + 10.0, y)
    np.testing.assert_allclose(b.coef_, a.coef_, atol=1e-6)
    np.testing.assert_allclose(b.intercept_, a.intercept_ - 10.0 * a.coef_.sum(), atol=1e-5)


def test_write_parameters(binary):
    """test_write_parameters: coefficients set by hand are the ones used."""
    X, y = binary
    ours = _logistic().fit(X, y)
    ours.coef_ = np.zeros_like(ours.coef_)
    ours.intercept_ = np.zeros_like(ours.intercept_)
    np.testing.assert_allclose(ours.decision_function(X), 0.0)
    np.testing.assert_allclose(ours.predict_proba(X), 0.5)


def test_sparse_input_matches_dense(binary):
    X, y = binary
    dense = _logistic(C=0.5).fit(X, y)
    sparse = _logistic(C=0.5).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-8)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, atol=1e-8)


def test_dtype_match(binary):
    """test_dtype_match: float32 in, float32 coefficients out (as scikit-learn), close to the
    float64 fit."""
    X, y = binary
    ours32 = _logistic().fit(X.astype(np.float32), y)
    ours64 = _logistic().fit(X, y)
    sk32 = LogisticRegression(**TIGHT).fit(X.astype(np.float32), y)
    assert ours32.coef_.dtype == sk32.coef_.dtype == np.float32
    np.testing.assert_allclose(ours32.coef_, ours64.coef_, rtol=1e-4, atol=1e-5)


def test_max_iter_and_convergence_warning(iris):
    """test_max_iter: n_iter_ is at most max_iter; stopping at it warns (ConvergenceWarning)."""
    X, y = iris
    with pytest.warns(ConvergenceWarning):
        ours = ms.get_algorithm("linear_classifier", loss="logistic", max_iter=2).fit(X, y)
    assert ours.n_iter_ <= 2 and not ours.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ours = ms.get_algorithm("linear_classifier", loss="logistic", max_iter=1000).fit(X, y)
    assert 1 <= ours.n_iter_ < 1000 and ours.converged_


def test_refuses_nan_and_a_single_class(iris):
    """test_nan / test_logistic_regression_... single class: a clear error, as scikit-learn's
    ValueError (ManifoldStudioError subclasses are ValueErrors too where scikit-learn raises one)."""
    X, y = iris
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ManifoldStudioError, match="NaN"):
        _logistic().fit(bad, y)
    with pytest.raises(ManifoldStudioError, match="single class"):
        _logistic().fit(X, np.zeros(len(y)))


@pytest.mark.parametrize("C", [0.01, 1.0, np.inf])
def test_squared_loss_is_ridge_classifier(iris, C):
    """The default loss='squared' minimises ½‖a‖² + C Σ ½(a·x + b − u)²: scikit-learn's
    RidgeClassifier with alpha = 1/C (targets ±1 per class, intercept not penalised)."""
    X, y = iris
    ours = ms.get_algorithm("linear_classifier", C=C).fit(X, y)
    sk = RidgeClassifier(alpha=0.0 if np.isinf(C) else 1.0 / C, solver="svd").fit(X, y)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-10)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, atol=1e-10)
    np.testing.assert_allclose(ours.decision_function(X), sk.decision_function(X), atol=1e-9)


# -- perceptron (test_perceptron.py, test_sgd.py) ------------------------------------------------
class _MyPerceptron:
    """The reference of scikit-learn's test_perceptron_correctness: the textbook rule."""

    def __init__(self, n_iter=1):
        self.n_iter = n_iter

    def fit(self, X, y):
        self.w = np.zeros(X.shape[1])
        self.b = 0.0
        for _ in range(self.n_iter):
            for i in range(X.shape[0]):
                if np.sign(X[i] @ self.w + self.b) != y[i]:
                    self.w += y[i] * X[i]
                    self.b += y[i]
        return self


def test_perceptron_correctness(iris):
    """test_perceptron_correctness: the same weights as the textbook rule and as scikit-learn."""
    X, y = iris
    y_bin = np.where(y == 1, 1, -1)
    ref = _MyPerceptron(n_iter=2).fit(X, y_bin)
    ours = ms.get_algorithm("perceptron", max_epochs=2).fit(X, y_bin)
    sk = Perceptron(max_iter=2, shuffle=False, tol=None).fit(X, y_bin)
    np.testing.assert_allclose(ours.coef_.ravel(), ref.w, atol=1e-12)
    np.testing.assert_allclose(ours.intercept_, [ref.b], atol=1e-12)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-12)


@pytest.mark.parametrize("tau", [1.0, 0.1])
@pytest.mark.parametrize("epochs", [1, 5, 30])
@pytest.mark.parametrize("data", ["binary", "iris"])
def test_perceptron_matches_sgd_perceptron(binary, iris, data, epochs, tau):
    """The seed's rule is scikit-learn's Perceptron (SGD, perceptron loss, constant step eta0,
    no penalty) in data order: identical coefficients, epoch for epoch, binary and one-vs-rest."""
    X, y = binary if data == "binary" else iris
    ours = ms.get_algorithm("perceptron", max_epochs=epochs, tau=tau).fit(X, y)
    sk = Perceptron(max_iter=epochs, eta0=tau, shuffle=False, tol=None).fit(X, y)
    np.testing.assert_allclose(ours.coef_, sk.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.intercept_, sk.intercept_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.decision_function(X), sk.decision_function(X), atol=1e-9)
    np.testing.assert_array_equal(ours.predict(X), sk.predict(X))


def test_perceptron_stops_after_an_epoch_without_mistakes(iris):
    """max_epochs is not scikit-learn's max_iter: the seed stops at the first epoch without a
    mistake, and then scikit-learn's further epochs change nothing (same coefficients)."""
    X, y = iris
    X, y = X[y != 2], y[y != 2]          # linearly separable
    ours = ms.get_algorithm("perceptron").fit(X, y)
    assert ours.converged_ and ours.n_epochs_ < 1000 and ours.mistakes_[-1] == 0
    sk = Perceptron(max_iter=ours.n_epochs_ + 10, shuffle=False, tol=None).fit(X, y)
    np.testing.assert_allclose(ours.coef_, sk.coef_, atol=1e-12)
    assert ours.score(X, y) == sk.score(X, y) == 1.0


def test_perceptron_accuracy_dense_and_sparse(iris):
    """test_perceptron_accuracy: above 0.7 on iris, dense and sparse. Sparse input gives the
    dense result exactly (scikit-learn damps the intercept on sparse input; this product does not)."""
    X, y = iris
    order = np.arange(len(y))
    np.random.RandomState(12).shuffle(order)          # scikit-learn's test shuffles iris once
    X, y = X[order], y[order]
    dense = ms.get_algorithm("perceptron", max_epochs=100).fit(X, y)
    sparse = ms.get_algorithm("perceptron", max_epochs=100).fit(sp.csr_matrix(X), y)
    sk = Perceptron(max_iter=100, tol=None, shuffle=False).fit(X, y)
    assert dense.score(X, y) == sk.score(X, y) > 0.7
    np.testing.assert_array_equal(sparse.coef_, dense.coef_)
    np.testing.assert_array_equal(sparse.intercept_, dense.intercept_)


def test_perceptron_undefined_methods(iris):
    """test_undefined_methods: no predict_proba / predict_log_proba, as scikit-learn's."""
    X, y = iris
    ours = ms.get_algorithm("perceptron", max_epochs=5).fit(X, y)
    sk = Perceptron(max_iter=5).fit(X, y)
    for name in ("predict_proba", "predict_log_proba"):
        assert not hasattr(ours, name) and not hasattr(sk, name)


def test_perceptron_multiclass_decision_and_two_labels(iris):
    """test_sgd.py: one-vs-rest decision of shape (n, K) whose argmax is predict; a single class
    is refused (test_sgd_at_least_two_labels)."""
    X, y = iris
    ours = ms.get_algorithm("perceptron", max_epochs=10).fit(X, y)
    D = ours.decision_function(X)
    assert D.shape == (150, 3)
    np.testing.assert_array_equal(ours.classes_[D.argmax(axis=1)], ours.predict(X))
    with pytest.raises(ManifoldStudioError, match="single class"):
        ms.get_algorithm("perceptron").fit(X, np.ones(150))


def test_perceptron_keeps_float32(binary):
    X, y = binary
    ours = ms.get_algorithm("perceptron", max_epochs=5).fit(X.astype(np.float32), y)
    sk = Perceptron(max_iter=5, shuffle=False, tol=None).fit(X.astype(np.float32), y)
    assert ours.coef_.dtype == sk.coef_.dtype == np.float32
    np.testing.assert_allclose(ours.coef_, sk.coef_, rtol=1e-5, atol=1e-5)
