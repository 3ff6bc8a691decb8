"""The perceptron plugin: the seed's rule step for step, agreement with scikit-learn's
Perceptron (same schedule), non-separable data, the kernel perceptron, cancel, conformance."""
import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_circles
from sklearn.linear_model import Perceptron as SKPerceptron

import manifold_studio as ms
from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm
from manifold_studio.errors import ConvergenceWarning, DataError, FitCancelled


def perceptron_cls():
    return type(ms.get_algorithm("perceptron"))


def seed_literal(X, u, tau, epochs):
    """The seed's algorithm written literally (plain Python); (a, b) after each epoch."""
    a = [0.0] * X.shape[1]
    b = 0.0
    history = []
    for _ in range(epochs):
        for x, ui in zip(X.tolist(), u.tolist()):
            s = 0.0
            for aj, xj in zip(a, x):
                s += aj * xj
            s += b
            if s * ui <= 0:
                a = [aj + tau * ui * xj for aj, xj in zip(a, x)]
                b = b + tau * ui
        history.append((np.array(a), b))
    return history


def blobs(n=120, d=3, k=2, std=1.0, seed=0):
    return make_blobs(n, d, centers=k, cluster_std=std, random_state=seed)


def test_seed_rule_step_for_step():
    X, y = blobs(n=60, std=6.0, seed=3)            # overlapping: many epochs with mistakes
    tau = 0.7
    u = np.where(y == 1, 1.0, -1.0)
    history = seed_literal(X, u, tau, 8)
    for epochs, (a, b) in enumerate(history, start=1):
        est = ms.get_algorithm("perceptron", tau=tau, max_epochs=epochs)
        with pytest.warns(ConvergenceWarning):
            est.fit(X, y)
        assert est.n_epochs_ == epochs and not est.converged_
        np.testing.assert_array_equal(est.coef_, a[None, :])
        np.testing.assert_array_equal(est.intercept_, [b])


def test_converges_on_separable_data_and_stops_after_a_clean_epoch():
    X, y = blobs(std=0.8)
    est = ms.get_algorithm("perceptron").fit(X, y)
    assert est.converged_ and est.mistakes_[-1] == 0 and np.all(est.mistakes_[:-1] > 0)
    assert est.n_epochs_ == len(est.mistakes_) < 1000
    assert est.coef_.shape == (1, 3) and est.intercept_.shape == (1,)
    u = np.where(y == 1, 1.0, -1.0)
    assert np.all(u * (X @ est.coef_[0] + est.intercept_[0]) > 0)   # the seed's goal, reached
    assert est.score(X, y) == 1.0 and not getattr(est, "fit_warnings_", [])
    curve = est.training_curve()
    np.testing.assert_array_equal(curve.series["mistakes"], est.mistakes_)
    np.testing.assert_array_equal(curve.x, np.arange(1, est.n_epochs_ + 1))


@pytest.mark.parametrize("k,std", [(2, 0.8), (2, 4.0), (3, 0.8), (4, 3.0)])
def test_equals_scikit_learn_perceptron(k, std):
    X, y = blobs(n=150, d=4, k=k, std=std, seed=k)
    tau, epochs = 0.5, 30
    est = ms.get_algorithm("perceptron", tau=tau, max_epochs=epochs)
    est.fit(X, y)
    sk = SKPerceptron(shuffle=False, tol=None, eta0=tau, alpha=0.0, max_iter=epochs).fit(X, y)
    np.testing.assert_allclose(est.coef_, sk.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(est.intercept_, sk.intercept_, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(est.predict(X), sk.predict(X))
    np.testing.assert_allclose(est.decision_function(X), sk.decision_function(X), rtol=1e-10, atol=1e-10)
    if k > 2:
        assert est.coef_.shape == (k, 4) and est.mistakes_per_class_.shape[0] == k
        np.testing.assert_array_equal(est.mistakes_, est.mistakes_per_class_.sum(axis=0))


def test_not_separable_stops_at_max_epochs_with_a_warning_in_the_log():
    X, y = blobs(std=5.0)
    est = ms.get_algorithm("perceptron", max_epochs=7)
    with pytest.warns(ConvergenceWarning, match="did not converge in 7 epochs"):
        est.fit(X, y)
    assert not est.converged_ and est.n_epochs_ == 7 and est.mistakes_.shape == (7,)
    assert any("not linearly separable" in w for w in est.fit_warnings_)
    assert est.result_summary()["converged"] is False


def test_string_labels_and_classes_1_is_positive():
    X, y = blobs(std=0.8)
    names = np.array(["cat", "dog"])[y]
    est = ms.get_algorithm("perceptron").fit(X, names)
    assert list(est.classes_) == ["cat", "dog"]
    assert np.all((est.decision_function(X) > 0) == (names == "dog"))
    assert list(est.predict(X)) == list(names)
    # reversing the names flips the problem: the +1 class is always classes_[1]
    other = np.array(["dog", "cat"])[y]
    flipped = ms.get_algorithm("perceptron").fit(X, other)
    assert np.all((flipped.decision_function(X) > 0) == (other == "dog"))


def test_shuffle_is_seeded():
    X, y = blobs(std=2.5)
    fits = [ms.get_algorithm("perceptron", shuffle=True, random_state=s, max_epochs=5) for s in (1, 1, 2)]
    for est in fits:
        est.fit(X, y)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert not np.array_equal(fits[0].coef_, fits[2].coef_)


def test_kernel_perceptron_is_the_seed_remark():
    """a = Σ α_x x with α_x = τ N(x) u: the linear kernel gives the primal perceptron."""
    X, y = blobs(n=90, k=3, std=2.0, seed=5)
    primal = ms.get_algorithm("perceptron", tau=0.5, max_epochs=20).fit(X, y)
    dual = ms.get_algorithm("perceptron", tau=0.5, max_epochs=20, kernel="linear").fit(X, y)
    np.testing.assert_allclose(dual.coef_, primal.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dual.intercept_, primal.intercept_, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(dual.mistakes_per_class_, primal.mistakes_per_class_)
    np.testing.assert_array_equal(dual.mistake_counts_.sum(axis=1), primal.mistakes_per_class_.sum(axis=1))
    np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X), atol=1e-8)


def test_rbf_kernel_perceptron_separates_circles():
    X, y = make_circles(200, factor=0.4, noise=0.05, random_state=0)
    assert not ms.get_algorithm("perceptron", max_epochs=20).fit(X, y).converged_
    est = ms.get_algorithm("perceptron", kernel="rbf", gamma=2.0).fit(X, y)
    assert est.converged_ and est.score(X, y) == 1.0
    assert 0 < est.support_vectors_.shape[0] < 200 and not hasattr(est, "coef_")
    Xt, yt = make_circles(200, factor=0.4, noise=0.05, random_state=1)
    assert est.score(Xt, yt) > 0.95


def test_kernel_perceptron_refuses_too_many_rows(monkeypatch):
    import manifold_studio_builtins.perceptron as module
    monkeypatch.setattr(module, "MAX_KERNEL_ROWS", 50)
    X, y = blobs(n=60)
    with pytest.raises(DataError, match="at most 50 training rows"):
        ms.get_algorithm("perceptron", kernel="rbf").fit(X, y)
    assert ms.get_algorithm("perceptron").fit(X, y).converged_       # the primal one has no limit


def test_curve_published_live_and_cancel():
    X, y = blobs(std=4.0, k=3)
    curves = []

    class Recorder(CancelAfter):
        def partial(self, result):
            curves.append(result)

    est = ms.get_algorithm("perceptron", max_epochs=30)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y, progress=Recorder(10 ** 9))
    finals = [c for c in curves if c.final]                       # one final curve per class
    assert [c.title for c in finals] == [f"Mistakes per epoch (class '{k}' vs rest)" for k in range(3)]
    for k, c in enumerate(finals):
        np.testing.assert_array_equal(c.series["mistakes"], est.mistakes_per_class_[k])
    progress = CancelAfter(0)                        # before any complete epoch: really cancelled
    with pytest.raises(FitCancelled):
        ms.get_algorithm("perceptron", max_epochs=1000).fit(X, y, progress=progress)
    assert progress.calls == 1


def test_cancel_after_an_epoch_keeps_the_current_hyperplane():
    X, y = blobs(std=5.0)
    progress = CancelAfter(4)                        # one checkpoint per epoch on these data
    est = ms.get_algorithm("perceptron", max_epochs=100).fit(X, y, progress=progress)
    assert est.stopped_early_ and est.n_epochs_ == 4 and not est.converged_
    assert any("Stopped early" in w and "after 4 of at most 100 epochs" in w for w in est.fit_warnings_)
    ref = ms.get_algorithm("perceptron", max_epochs=4)
    with pytest.warns(ConvergenceWarning):
        ref.fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    # several classes: the problems not reached are named, the fitted ones kept
    X3, y3 = blobs(std=5.0, k=3)
    est = ms.get_algorithm("perceptron", max_epochs=5).fit(X3, y3, progress=CancelAfter(8))
    assert est.stopped_early_ and list(est.n_epochs_per_class_) == [5, 2, 0]
    assert "not trained: class '2' vs rest" in est.fit_warnings_[-1]
    assert np.all(est.coef_[2] == 0)


@pytest.mark.parametrize("params", [{}, {"kernel": "rbf"}, {"kernel": "poly", "degree": 2}])
def test_conformance_kit(params):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_algorithm(perceptron_cls(), params=params)
