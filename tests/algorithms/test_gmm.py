"""Gaussian mixture (EM) against scikit-learn's GaussianMixture."""
import numpy as np
import pytest

from manifold_studio.algorithms.conformance import CancelAfter
from sklearn.datasets import make_blobs
from sklearn.mixture import GaussianMixture as SKGaussianMixture

import manifold_studio as ms
from manifold_studio.errors import DataError, FitCancelled
from manifold_studio_builtins.gmm import GaussianMixture


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(3000, 3, centers=4, cluster_std=[0.6, 1.0, 1.5, 0.8], random_state=11)
    X = X @ np.array([[1.0, 0.4, 0.0], [0.0, 1.0, 0.3], [0.2, 0.0, 1.0]])   # elongated clusters
    return X, y


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical"])
def test_mean_log_likelihood_matches_sklearn(blobs, covariance_type):
    X, _ = blobs
    ours = GaussianMixture(n_components=4, covariance_type=covariance_type, random_state=0).fit(X)
    ref = SKGaussianMixture(4, covariance_type=covariance_type, random_state=0).fit(X)
    assert abs(ours.score(X) - ref.score(X)) < 1e-3
    assert ours.log_likelihood_ == pytest.approx(ours.score(X), rel=1e-12)
    # same model up to the order of the components
    order = np.argsort(ours.means_[:, 0])
    ref_order = np.argsort(ref.means_[:, 0])
    np.testing.assert_allclose(ours.means_[order], ref.means_[ref_order], atol=2e-2)
    np.testing.assert_allclose(ours.weights_[order], ref.weights_[ref_order], atol=1e-2)
    np.testing.assert_allclose(ours.score_samples(X[:100]), ref.score_samples(X[:100]), atol=2e-2)
    assert ours.covariances_.shape == ref.covariances_.shape


def test_em_increases_likelihood_and_predictions(blobs):
    X, _ = blobs
    est = ms.get_algorithm("gmm", n_components=4, random_state=1, tol=1e-8, max_iter=200).fit(X)
    hist = est.log_likelihood_history_
    assert np.all(np.diff(hist) >= -1e-10)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(est.extend(X), np.argmax(proba, axis=1))
    np.testing.assert_array_equal(est.labels_, est.extend(X))
    summary = est.result_summary()
    assert summary["log_likelihood"] == pytest.approx(est.log_likelihood_, abs=1e-6)
    assert summary["converged"] is True
    assert est.bic(X) == pytest.approx(summary["bic"], rel=1e-6)


def test_n_init_keeps_the_best_run(blobs):
    X, _ = blobs
    one = GaussianMixture(n_components=6, n_init=1, random_state=3).fit(X)
    five = GaussianMixture(n_components=6, n_init=4, random_state=3).fit(X)
    assert five.log_likelihood_ >= one.log_likelihood_ - 1e-12


def test_singular_covariance_and_identical_points():
    X = np.column_stack([np.arange(40.0), 3.0 * np.arange(40.0)])   # on a line
    with pytest.raises(DataError, match="singular"):
        GaussianMixture(n_components=2, reg_covar=0.0, random_state=0).fit(X)
    est = GaussianMixture(n_components=2, random_state=0).fit(X)      # regularised: fine
    assert np.isfinite(est.log_likelihood_)
    same = np.ones((30, 2))
    with pytest.raises(DataError, match="zero|singular"):
        GaussianMixture(n_components=1, covariance_type="diag", reg_covar=0.0).fit(same)
    assert np.isfinite(GaussianMixture(n_components=1).fit(same).log_likelihood_)
    with pytest.raises(DataError, match="n_components=2 .*only 1 distinct"):
        GaussianMixture(n_components=2).fit(same)


def test_cancel(blobs):
    X, _ = blobs

    with pytest.raises(FitCancelled):
        GaussianMixture(n_components=4, tol=0.0, max_iter=50).fit(X, progress=CancelAfter(4))


def test_convergence_warning_at_max_iter_is_a_user_warning(blobs):
    import warnings

    from manifold_studio.errors import ConvergenceWarning

    X, _ = blobs
    est = GaussianMixture(n_components=6, max_iter=3, tol=1e-12, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=3") as record:
        est.fit(X)
    assert not est.converged_ and est.n_iter_ == 3 and est.fit_warnings_
    ref = SKGaussianMixture(6, max_iter=3, tol=1e-12, random_state=0)
    from sklearn.exceptions import ConvergenceWarning as SKConvergenceWarning
    with pytest.warns(SKConvergenceWarning):   # scikit-learn warns in the same case
        ref.fit(X)
    assert issubclass(ConvergenceWarning, UserWarning) and record[0].category is ConvergenceWarning
    # scikit-learn-style filters on UserWarning silence it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=UserWarning)
        GaussianMixture(n_components=6, max_iter=3, tol=1e-12, random_state=0).fit(X)
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    # converged: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ok = GaussianMixture(n_components=4, random_state=0).fit(X)
    assert ok.converged_ and ok.n_iter_ < 100
    import manifold_studio.errors as errors

    assert errors.ConvergenceWarning is ConvergenceWarning   # importable where it always was
