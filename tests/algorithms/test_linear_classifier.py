"""The linear_classifier plugin: logistic loss equal to scikit-learn's LogisticRegression
(binary, multinomial, one-vs-rest), the squared loss equal to the ridge normal equations,
the seed's Widrow–Hoff rule step for step and its convergence, conformance, bad input."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.multiclass import OneVsRestClassifier

import manifold_studio as ms
from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm
from manifold_studio.errors import ConvergenceWarning, DataError, FitCancelled, InvalidParameterError


def data(k=2, n=300, d=5, seed=0):
    return make_classification(n, d, n_informative=3, n_redundant=1, n_classes=k, random_state=seed)


def rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-12)


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("C", [0.05, 1.0, 100.0])
def test_logistic_equals_scikit_learn(k, C):
    X, y = data(k, seed=k)
    est = ms.get_algorithm("linear_classifier", loss="logistic", C=C, tol=1e-10, max_iter=1000).fit(X, y)
    sk = LogisticRegression(C=C, tol=1e-10, max_iter=1000).fit(X, y)      # multinomial for k > 2
    assert est.multinomial_ == (k > 2)
    assert est.coef_.shape == sk.coef_.shape and est.intercept_.shape == sk.intercept_.shape
    assert rel(est.coef_, sk.coef_) < 1e-4 and rel(est.intercept_, sk.intercept_) < 1e-4
    np.testing.assert_allclose(est.predict_proba(X), sk.predict_proba(X), atol=1e-5)
    np.testing.assert_array_equal(est.predict(X), sk.predict(X))
    assert est.converged_ and est.loss_curve_.shape == (est.n_iter_,)


def test_logistic_one_vs_rest_equals_scikit_learn():
    X, y = data(3, seed=7)
    est = ms.get_algorithm("linear_classifier", loss="logistic", multi_class="ovr", C=0.5,
                           tol=1e-10, max_iter=1000).fit(X, y)
    ovr = OneVsRestClassifier(LogisticRegression(C=0.5, tol=1e-10, max_iter=1000)).fit(X, y)
    assert rel(est.coef_, np.vstack([e.coef_ for e in ovr.estimators_])) < 1e-4
    np.testing.assert_allclose(est.predict_proba(X), ovr.predict_proba(X), atol=1e-5)
    assert est.n_iter_per_class_.shape == (3,)


def test_objective_is_scikit_learns_convention():
    """½‖a‖² + C Σ log(1 + e^(−u z)) is minimal at the fitted (a, b): its gradient vanishes."""
    X, y = data(2, seed=1)
    C = 0.3
    est = ms.get_algorithm("linear_classifier", loss="logistic", C=C, tol=1e-12, max_iter=1000).fit(X, y)
    a, b = est.coef_[0], est.intercept_[0]
    u = np.where(y == 1, 1.0, -1.0)
    r = -u / (1.0 + np.exp(u * (X @ a + b)))
    np.testing.assert_allclose(a + C * X.T @ r, 0.0, atol=1e-6)     # bias not penalised:
    assert abs(C * r.sum()) < 1e-6                                  # ∂/∂b = C Σ r = 0
    assert np.isclose(est.loss_curve_[-1], np.mean(np.logaddexp(0, -u * (X @ a + b))) + a @ a / (2 * C * len(y)))


@pytest.mark.parametrize("k", [2, 3])
def test_squared_loss_is_the_ridge_solution(k):
    X, y = data(k, seed=3)
    C = 0.7
    est = ms.get_algorithm("linear_classifier", loss="squared", C=C).fit(X, y)
    # normal equations of ½‖a‖² + C Σ ½(a·x + b − u)², u = ±1 per one-vs-rest problem
    Xb = np.column_stack([X, np.ones(len(X))])
    reg = np.eye(X.shape[1] + 1) / C
    reg[-1, -1] = 0.0
    for j, k_pos in enumerate([1] if k == 2 else range(k)):
        u = np.where(y == k_pos, 1.0, -1.0)
        w = np.linalg.solve(Xb.T @ Xb + reg, Xb.T @ u)
        np.testing.assert_allclose(est.coef_[j], w[:-1], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(est.intercept_[j], w[-1], rtol=1e-9, atol=1e-10)
    sk = RidgeClassifier(alpha=1.0 / C).fit(X, y)
    np.testing.assert_allclose(est.coef_, np.reshape(sk.coef_, est.coef_.shape), rtol=1e-8, atol=1e-10)
    assert not est._has_proba() and not hasattr(est, "predict_proba")


def widrow_hoff_literal(X, u, tau, epochs):
    """The seed's Descente en gradient, literally (plain Python)."""
    a, b = [0.0] * X.shape[1], 0.0
    history = []
    for _ in range(epochs):
        for x, ui in zip(X.tolist(), u.tolist()):
            z = 0.0
            for aj, xj in zip(a, x):
                z += aj * xj
            z += b
            a = [aj + tau * (ui - z) * xj for aj, xj in zip(a, x)]
            b = b + tau * (ui - z)
        history.append((np.array(a), b))
    return history


def test_widrow_hoff_step_for_step():
    X, y = data(2, n=80, seed=4)
    u = np.where(y == 1, 1.0, -1.0)
    tau = 0.02
    for epochs, (a, b) in enumerate(widrow_hoff_literal(X, u, tau, 5), start=1):
        est = ms.get_algorithm("linear_classifier", loss="squared", solver="seed", C=np.inf,
                               learning_rate=tau, max_iter=epochs, tol=0.0).fit(X, y)
        assert est.n_iter_ == epochs
        np.testing.assert_allclose(est.coef_[0], a, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(est.intercept_[0], b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_seed_rule_converges_to_the_exact_solution_for_small_steps(loss):
    X, y = data(2, n=200, seed=5)
    X = (X - X.mean(0)) / X.std(0)
    exact = ms.get_algorithm("linear_classifier", loss=loss, C=1.0, tol=1e-12, max_iter=1000).fit(X, y)
    errors = []
    for tau in (0.01, 0.001):
        est = ms.get_algorithm("linear_classifier", loss=loss, solver="seed", C=1.0, learning_rate=tau,
                               max_iter=int(20 / tau), tol=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
        errors.append(rel(est.coef_, exact.coef_))
        assert np.all(np.diff(est.loss_curve_[: est.n_iter_ // 2]) < 1e-3 * tau)   # nearly monotone
    assert errors[1] < errors[0] / 3 and errors[1] < 0.02, errors


def softmax_literal(X, y, K, tau, epochs):
    """The per-example rule on the softmax loss, literally: w_k += τ([y = k] − p_k) x."""
    W, b = np.zeros((K, X.shape[1])), np.zeros(K)
    for _ in range(epochs):
        for x, yi in zip(X, y):
            z = np.array([sum(wj * xj for wj, xj in zip(W[k], x)) + b[k] for k in range(K)])
            e = np.exp(z - z.max())
            g = tau * ((np.arange(K) == yi) - e / e.sum())
            W += g[:, None] * x[None, :]
            b += g
    return W, b


def test_multinomial_seed_rule_step_for_step_and_towards_the_exact_solution():
    X, y = data(3, n=90, seed=11)
    X = (X - X.mean(0)) / X.std(0)
    W, b = softmax_literal(X, y, 3, 0.05, 3)
    est = ms.get_algorithm("linear_classifier", loss="logistic", solver="seed", C=np.inf, learning_rate=0.05,
                           max_iter=3, tol=0.0).fit(X, y)
    assert est.multinomial_ and est.coef_.shape == (3, 5)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.intercept_, b, rtol=1e-10, atol=1e-12)
    exact = ms.get_algorithm("linear_classifier", loss="logistic", C=1.0, tol=1e-12, max_iter=1000).fit(X, y)
    seed = ms.get_algorithm("linear_classifier", loss="logistic", solver="seed", C=1.0, learning_rate=0.002,
                            max_iter=3000, tol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        seed.fit(X, y)
    # the softmax is invariant to a common shift of the intercepts: compare centred ones
    assert rel(seed.coef_, exact.coef_) < 0.02
    assert rel(seed.intercept_ - seed.intercept_.mean(), exact.intercept_ - exact.intercept_.mean()) < 0.05
    np.testing.assert_allclose(seed.predict_proba(X), exact.predict_proba(X), atol=0.02)


def test_divergent_step_is_refused_with_a_message():
    X, y = data(2, seed=6)
    est = ms.get_algorithm("linear_classifier", solver="seed", learning_rate=5.0, max_iter=50)
    with pytest.raises(InvalidParameterError, match="learning_rate"):
        est.fit(X * 10, y)


def test_automatic_step_is_stable_on_unscaled_data():
    X, y = data(2, seed=6)
    X = X * 50 + 200
    est = ms.get_algorithm("linear_classifier", solver="seed", max_iter=20, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert est.learning_rate_ == 1.0 / (1.0 + np.max((X ** 2).sum(axis=1)))
    assert np.all(np.isfinite(est.coef_)) and est.loss_curve_[-1] < est.loss_curve_[0]


def test_scikit_learn_check_estimator_beyond_the_defaults():
    from sklearn.utils.estimator_checks import check_estimator
    for params in ({"loss": "logistic"}, {"solver": "seed"}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = list(check_estimator(ms.get_algorithm("linear_classifier", **params), on_fail=None))
        failed = {r["check_name"]: str(r["exception"])[:200] for r in results if r["status"] == "failed"}
        assert not failed, (params, failed)


def test_not_converged_warns_into_the_log():
    X, y = data(3, seed=8)
    est = ms.get_algorithm("linear_classifier", loss="logistic", max_iter=2)
    with pytest.warns(ConvergenceWarning, match="did not converge in 2"):
        est.fit(X, y)
    assert est.fit_warnings_ and not est.converged_


def test_bad_input():
    X, y = data(2)
    names = np.array(["no", "yes"])[y]
    est = ms.get_algorithm("linear_classifier", loss="logistic").fit(X, names)
    assert list(est.classes_) == ["no", "yes"] and est.score(X, names) > 0.7
    assert np.all((est.decision_function(X) > 0) == (est.predict(X) == "yes"))
    with pytest.raises(DataError, match="single class"):
        ms.get_algorithm("linear_classifier").fit(X, np.zeros(len(X)))
    with pytest.raises(DataError, match="labels but X has"):
        ms.get_algorithm("linear_classifier").fit(X, y[:-1])
    with pytest.raises(InvalidParameterError, match="multi_class"):
        ms.get_algorithm("linear_classifier", loss="squared", multi_class="multinomial").fit(*data(3))
    with pytest.raises(DataError, match="feature"):
        est.predict(X[:, :3])


def test_curves_published_and_cancel():
    X, y = data(3, seed=9)
    curves = []

    class Recorder(CancelAfter):
        def partial(self, result):
            curves.append(result)

    est = ms.get_algorithm("linear_classifier", loss="logistic", solver="seed", multi_class="ovr",
                           max_iter=20, tol=0.0).fit(X, y, progress=Recorder(10 ** 9))
    finals = [c for c in curves if c.final]
    assert len(finals) == 3 and all("vs rest" in c.title for c in finals)
    np.testing.assert_allclose(sum(c.series["train"] for c in finals), est.loss_curve_)
    curve = est.training_curve()
    assert curve.x_label == "epoch" and curve.series["train"].shape == (20,)
    for params in ({"loss": "logistic"}, {"solver": "seed"}, {"loss": "squared"}):
        progress = CancelAfter(0)                      # before any iteration: really cancelled
        with pytest.raises(FitCancelled):
            ms.get_algorithm("linear_classifier", **params).fit(X, y, progress=progress)


def test_cancel_after_an_iteration_keeps_the_current_coefficients():
    X, y = data(2, seed=12)
    est = ms.get_algorithm("linear_classifier", solver="seed", learning_rate=0.001, max_iter=50, tol=0.0)
    est.fit(X, y, progress=CancelAfter(3))            # one checkpoint per epoch on these data
    ref = ms.get_algorithm("linear_classifier", solver="seed", learning_rate=0.001, max_iter=3, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y)
    assert est.stopped_early_ and est.n_iter_ == 3 and not est.converged_
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    assert "after 3 of at most 50 epochs" in est.fit_warnings_[-1]
    # L-BFGS, one-vs-rest: the problems not reached are named; before any iteration: cancelled
    X3, y3 = data(3, seed=12)
    est = ms.get_algorithm("linear_classifier", loss="logistic", multi_class="ovr").fit(
        X3, y3, progress=CancelAfter(4))
    assert est.stopped_early_ and est.n_iter_per_class_[-1] == 0 and np.all(est.coef_[-1] == 0)
    assert "after 4 of at most 100 L-BFGS iterations of class '0' vs rest; not trained (a = 0, b = 0): class '1' vs rest, class '2' vs rest" in est.fit_warnings_[-1]
    with pytest.raises(FitCancelled):
        ms.get_algorithm("linear_classifier", loss="logistic").fit(X3, y3, progress=CancelAfter(0))


@pytest.mark.parametrize("params", [{}, {"loss": "logistic"}, {"solver": "seed", "learning_rate": 0.001}])
def test_conformance_kit(params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_algorithm(type(ms.get_algorithm("linear_classifier")), params=params)
