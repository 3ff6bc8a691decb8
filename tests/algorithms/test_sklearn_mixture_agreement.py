"""Agreement of ``gmm`` with scikit-learn's GaussianMixture (issue 33).

Adapted from sklearn/mixture/tests/test_gaussian_mixture.py where it applies to this
product's parameters (``covariance_type`` full / diag / spherical; scikit-learn's 'tied' is not
offered). scikit-learn is the oracle. Both start from a k-means partition (scikit-learn's
``init_params='kmeans'``: the M-step of its labels); the k-means draws differ, so scikit-learn
is given this product's start through ``weights_init``, ``means_init`` and ``precisions_init``
(the first E-step reads only those), after which EM is the same computation: every iterate
agrees to rounding. Names that differ: ``log_likelihood_`` is the mean log-likelihood of the
final model (after the last M-step); scikit-learn's ``lower_bound_`` is the one of the last
E-step, ``log_likelihood_history_[-2]`` here.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

import manifold_studio as ms
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.gmm_em import m_step
from manifold_studio.algorithms.kmeans_core import kmeans
from manifold_studio.errors import ConvergenceWarning, DataError

COVARIANCE_TYPES = ("full", "diag", "spherical")


@pytest.fixture(scope="module")
def blobs():
    """Three overlapping elongated Gaussians: EM moves far from the k-means start."""
    rng = np.random.default_rng(0)
    parts = [rng.normal([0, 0], [1, 0.5], (150, 2)), rng.normal([3, 1], [0.7, 1.2], (100, 2)),
             rng.normal([0, 4], [1.5, 0.6], (120, 2))]
    return np.vstack(parts), np.repeat([0, 1, 2], [150, 100, 120])


def _sklearn_from_our_start(X, k, cov_type, reg=1e-6, seed=0, **kw):
    """scikit-learn's GaussianMixture started where this product's first run starts: the M-step
    of the k-means partition drawn from ``random_state=seed``."""
    labels = kmeans(X, k, n_init=1, random_state=check_random_state(seed)).labels
    weights, means, cov = m_step(X, np.eye(k)[labels], cov_type, reg)
    prec = np.linalg.inv(cov) if cov_type == "full" else 1.0 / cov
    return GaussianMixture(k, covariance_type=cov_type, reg_covar=reg, weights_init=weights,
                           means_init=means, precisions_init=prec, **kw)


@pytest.mark.parametrize("cov_type", COVARIANCE_TYPES)
def test_em_iterates_match_from_the_same_start(blobs, cov_type):
    """25 EM iterations (tol=0: no early stop) give scikit-learn's weights, means, covariances,
    precision Cholesky factors, probabilities, log-densities, BIC and AIC to rounding."""
    X, _ = blobs
    ours = ms.get_algorithm("gmm", covariance_type=cov_type, tol=0.0, max_iter=25, random_state=0)
    with pytest.warns(ConvergenceWarning):
        ours.fit(X)
    with pytest.warns(Warning):   # scikit-learn's ConvergenceWarning
        sk = _sklearn_from_our_start(X, 3, cov_type, tol=0.0, max_iter=25).fit(X)
    assert ours.n_iter_ == sk.n_iter_ == 25 and not ours.converged_ and not sk.converged_
    np.testing.assert_allclose(ours.weights_, sk.weights_, atol=1e-12)
    np.testing.assert_allclose(ours.means_, sk.means_, atol=1e-12)
    np.testing.assert_allclose(ours.covariances_, sk.covariances_, atol=1e-12)
    np.testing.assert_allclose(ours.precisions_cholesky_, sk.precisions_cholesky_, atol=1e-11)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), atol=1e-12)
    np.testing.assert_allclose(ours.score_samples(X), sk.score_samples(X), atol=1e-11)
    np.testing.assert_array_equal(ours.labels_, sk.predict(X))
    np.testing.assert_array_equal(ours.predict(X), sk.predict(X))
    assert ours._n_parameters() == sk._n_parameters()
    assert ours.bic(X) == pytest.approx(sk.bic(X), abs=1e-9)
    assert ours.aic(X) == pytest.approx(sk.aic(X), abs=1e-9)


def test_convergence_with_default_tol_matches(blobs):
    """With the default tol=1e-3 both stop at the same iteration with the same model; the last
    E-step's mean log-likelihood is scikit-learn's lower_bound_."""
    X, _ = blobs
    ours = ms.get_algorithm("gmm", random_state=0).fit(X)
    sk = _sklearn_from_our_start(X, 3, "full").fit(X)
    assert ours.n_iter_ == sk.n_iter_ and ours.converged_ and sk.converged_
    assert ours.log_likelihood_history_[-2] == pytest.approx(sk.lower_bound_, abs=1e-12)
    assert ours.log_likelihood_ == pytest.approx(sk.score(X), abs=1e-12)
    np.testing.assert_allclose(ours.means_, sk.means_, atol=1e-12)


@pytest.mark.parametrize("cov_type", COVARIANCE_TYPES)
def test_score_samples_against_scipy(blobs, cov_type):
    """test_gaussian_mixture_estimate_log_prob_resp / test_score_samples: log p(x) is the
    log-sum-exp of the weighted component densities (scipy's multivariate normal), score its mean."""
    X, _ = blobs
    ours = ms.get_algorithm("gmm", covariance_type=cov_type, random_state=0).fit(X)
    covs = {"full": ours.covariances_,
            "diag": [np.diag(c) for c in np.atleast_2d(ours.covariances_)],
            "spherical": [c * np.eye(2) for c in np.atleast_1d(ours.covariances_)]}[cov_type]
    logp = np.column_stack([np.log(w) + multivariate_normal(m, c).logpdf(X)
                            for w, m, c in zip(ours.weights_, ours.means_, covs)])
    np.testing.assert_allclose(ours.score_samples(X), logsumexp(logp, axis=1), atol=1e-10)
    assert ours.score(X) == pytest.approx(logsumexp(logp, axis=1).mean(), abs=1e-10)
    np.testing.assert_allclose(ours.predict_proba(X), np.exp(logp - logsumexp(logp, axis=1)[:, None]),
                               atol=1e-10)


@pytest.mark.parametrize("cov_type", COVARIANCE_TYPES)
def test_predict_predict_proba(blobs, cov_type):
    """test_gaussian_mixture_predict_predict_proba: predict is the argmax of predict_proba and
    recovers the true components (adjusted Rand index above 0.8, as scikit-learn's)."""
    X, truth = blobs
    ours = ms.get_algorithm("gmm", covariance_type=cov_type, random_state=0).fit(X)
    proba = ours.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(ours.predict(X), proba.argmax(axis=1))
    assert adjusted_rand_score(truth, ours.predict(X)) > 0.8


@pytest.mark.parametrize("cov_type", COVARIANCE_TYPES)
def test_n_parameters_bic_and_aic(cov_type):
    """test_gaussian_mixture_n_parameters and test_gaussian_mixture_aic_bic: the parameter counts
    are scikit-learn's, and on one Gaussian AIC and BIC are close to their closed forms."""
    rng = np.random.RandomState(0)
    n, d = 100, 3
    X = rng.randn(n, d)
    ours = ms.get_algorithm("gmm", n_components=2, covariance_type=cov_type, random_state=0).fit(X)
    assert ours._n_parameters() == GaussianMixture(2, covariance_type=cov_type).fit(X)._n_parameters()
    one = ms.get_algorithm("gmm", n_components=1, covariance_type=cov_type, random_state=0,
                           max_iter=200).fit(X)
    sgh = 0.5 * (np.linalg.slogdet(np.cov(X.T, bias=True))[1] + d * (1 + np.log(2 * np.pi)))
    k = one._n_parameters()
    bound = d / np.sqrt(n)
    assert (2 * n * sgh + 2 * k - one.aic(X)) / n < bound
    assert (2 * n * sgh + np.log(n) * k - one.bic(X)) / n < bound


@pytest.mark.parametrize("cov_type", COVARIANCE_TYPES)
def test_bic_1d_1component(cov_type):
    """test_bic_1d_1component: on one 1-d Gaussian the BIC is lowest with one component."""
    X = np.random.RandomState(0).randn(100, 1)
    bic = [ms.get_algorithm("gmm", n_components=k, covariance_type=cov_type, random_state=0).fit(X).bic(X)
           for k in range(1, 5)]
    assert int(np.argmin(bic)) == 0


def test_monotonic_likelihood_and_multiple_init(blobs):
    """test_monotonic_likelihood: EM never lowers the log-likelihood; test_multiple_init: more
    runs never give a worse model."""
    X, _ = blobs
    one = ms.get_algorithm("gmm", random_state=1, tol=1e-8, max_iter=300).fit(X)
    assert np.all(np.diff(one.log_likelihood_history_) >= -1e-12)
    five = ms.get_algorithm("gmm", n_init=5, random_state=1, tol=1e-8, max_iter=300).fit(X)
    assert five.log_likelihood_ >= one.log_likelihood_ - 1e-12


def test_convergence_warning():
    """test_gaussian_mixture_fit_convergence_warning: max_iter too small warns."""
    X = np.random.RandomState(0).randn(60, 2)
    with pytest.warns(ConvergenceWarning):
        est = ms.get_algorithm("gmm", n_components=2, max_iter=1, tol=0.0).fit(X)
    assert est.n_iter_ == 1 and not est.converged_


def test_regularisation():
    """test_regularisation: components on coinciding points need reg_covar > 0; scikit-learn
    refuses reg_covar=0 there (ValueError), this product with a DataError; with the default
    1e-6 the variance of each such component is reg_covar, as scikit-learn's."""
    X = np.vstack([np.ones((20, 3)), np.zeros((20, 3))])
    with pytest.raises(ValueError):
        GaussianMixture(2, reg_covar=0.0).fit(X)
    with pytest.raises(DataError, match="reg_covar"):
        ms.get_algorithm("gmm", n_components=2, reg_covar=0.0).fit(X)
    ours = ms.get_algorithm("gmm", n_components=2).fit(X)
    sk = GaussianMixture(2, random_state=0).fit(X)
    np.testing.assert_allclose(np.sort(ours.means_[:, 0]), np.sort(sk.means_[:, 0]))
    np.testing.assert_allclose(ours.covariances_, sk.covariances_, atol=1e-15)


def test_float32_kept(blobs):
    X, _ = blobs
    X32 = X.astype(np.float32)
    ours = ms.get_algorithm("gmm", random_state=0).fit(X32)
    sk = GaussianMixture(3, random_state=0).fit(X32)    # (float64 *_init arrays would give float64)
    for name in ("weights_", "means_", "covariances_", "precisions_cholesky_"):
        assert getattr(ours, name).dtype == getattr(sk, name).dtype == np.float32, name
    sk64 = _sklearn_from_our_start(X, 3, "full").fit(X)
    np.testing.assert_allclose(ours.means_, sk64.means_, atol=1e-4)
    assert ours.predict_proba(X32).dtype == np.float32
