"""Probabilistic PCA: the closed-form identities of Tipping & Bishop (seed 002), scikit-learn's
PCA likelihood, EM on complete and on incomplete data, imputation."""
import warnings

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from scipy.stats import multivariate_normal
from sklearn.decomposition import PCA as SkPCA

import manifold_studio as ms
from manifold_studio.algorithms import ppca_em
from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm, iter_checks
from manifold_studio.errors import DataError
from fakes import RecordingProgress  # noqa: E402


def _data(n=400, d=8, k=3, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, k)) * np.array([3.0, 2.0, 1.5])[:k]
    return rng.normal(size=(n, k)) @ W.T + noise * rng.normal(size=(n, d)) + rng.normal(size=d) * 4


def _with_missing(X, fraction, seed=1):
    rng = np.random.default_rng(seed)
    mask = rng.random(X.shape) < fraction
    mask[np.arange(X.shape[0]), rng.integers(0, X.shape[1], X.shape[0])] = False  # never a whole row
    Xm = X.copy()
    Xm[mask] = np.nan
    return Xm, mask


def test_closed_form_identities():
    X = _data()
    n, d = X.shape
    est = ms.get_algorithm("ppca", n_components=3).fit(X)
    S = np.cov(X, rowvar=False)                       # 1/(N − 1), scikit-learn's convention
    lam, U = np.linalg.eigh(S)
    lam, U = lam[::-1], U[:, ::-1]
    sigma2 = lam[3:].mean()                           # σ²_ML = mean of the discarded eigenvalues
    assert est.noise_variance_ == pytest.approx(sigma2, rel=1e-10)
    W = U[:, :3] * np.sqrt(lam[:3] - sigma2)          # W_ML = U_M (L_M − σ²I)^½ (R = I)
    signs = np.sign(np.sum(W * est.components_.T, axis=0))
    np.testing.assert_allclose(est.components_.T, W * signs, atol=1e-9)
    np.testing.assert_allclose(est.mean_, X.mean(axis=0), atol=1e-12)
    # posterior mean E[z|x] = M⁻¹Wᵀ(x − x̄)
    Wf = est.components_.T
    M = Wf.T @ Wf + sigma2 * np.eye(3)
    np.testing.assert_allclose(est.embedding_, np.linalg.solve(M, Wf.T @ (X - X.mean(0)).T).T, atol=1e-9)


def test_score_is_sklearn_pca_likelihood():
    X = _data(seed=2)
    X_new = _data(50, seed=3)
    ours = ms.get_algorithm("ppca", n_components=3).fit(X)
    sk = SkPCA(n_components=3, svd_solver="full").fit(X)
    assert ours.score(X) == pytest.approx(sk.score(X), rel=1e-10)
    np.testing.assert_allclose(ours.score_samples(X_new), sk.score_samples(X_new), rtol=1e-10)
    np.testing.assert_allclose(ours.get_covariance(), sk.get_covariance(), atol=1e-10)
    # and is the Gaussian log-density N(x; μ, WWᵀ + σ²I)
    ref = multivariate_normal(ours.mean_, ours.get_covariance()).logpdf(X_new)
    np.testing.assert_allclose(ours.score_samples(X_new), ref, rtol=1e-10)


def test_inverse_transform_is_pca_reconstruction():
    X = _data(seed=4)
    est = ms.get_algorithm("ppca", n_components=3).fit(X)
    pca = SkPCA(3, svd_solver="full").fit(X)
    np.testing.assert_allclose(est.inverse_transform(est.extend(X)), pca.inverse_transform(pca.transform(X)),
                               atol=1e-8)


def test_wide_data_closed_form_uses_d_minus_m():
    X = _data(n=30, d=400, seed=5)
    est = ms.get_algorithm("ppca", n_components=4).fit(X)
    lam = np.linalg.eigvalsh(np.cov(X, rowvar=False))[::-1]
    assert est.svd_solver_ == "gram"
    assert est.noise_variance_ == pytest.approx(lam[4:].sum() / (400 - 4), rel=1e-8)


def test_em_on_complete_data_converges_to_the_closed_form():
    X = _data(seed=6)
    n = X.shape[0]
    cf = ms.get_algorithm("ppca", n_components=3).fit(X)
    em = ms.get_algorithm("ppca", n_components=3, method="em", tol=1e-13, max_iter=5000, random_state=0).fit(X)
    # from a random start too (the plugin starts from the mean-imputed PCA)
    res = ppca_em.em(X, 3, max_iter=5000, tol=1e-13, random_state=0, init="random")
    assert np.degrees(subspace_angles(res.W, cf.components_.T)).max() < 1e-2
    assert res.sigma2 == pytest.approx(cf.noise_variance_ * (n - 1) / n, rel=1e-4)
    assert np.all(np.diff(res.loglik) >= -1e-10)
    assert np.degrees(subspace_angles(em.components_.T, cf.components_.T)).max() < 1e-3
    # EM maximises the likelihood itself: the 1/N covariance, i.e. (N−1)/N times the closed form's
    assert em.noise_variance_ == pytest.approx(cf.noise_variance_ * (n - 1) / n, rel=1e-6)
    C = cf.get_covariance() * (n - 1) / n
    np.testing.assert_allclose(em.get_covariance(), C, atol=1e-4 * np.abs(C).max())
    assert np.all(np.diff(em.loglik_curve_) >= -1e-10)        # EM never lowers the likelihood


@pytest.mark.parametrize("fraction", [0.1, 0.2])
def test_em_with_missing_values_recovers_the_subspace(fraction):
    X = _data(n=600, seed=7)
    Xm, mask = _with_missing(X, fraction)
    cf = ms.get_algorithm("ppca", n_components=3).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # EM's slow linear convergence may reach max_iter
        em = ms.get_algorithm("ppca", n_components=3, method="em", tol=1e-9, max_iter=500,
                              random_state=0).fit(Xm)
    assert np.degrees(subspace_angles(em.components_.T, cf.components_.T)).max() < 2.0
    assert em.noise_variance_ == pytest.approx(cf.noise_variance_, rel=0.15)
    assert np.all(np.diff(em.loglik_curve_) >= -1e-9)
    # imputation: observed entries unchanged, missing ones much closer than the column means
    imp = em.impute(Xm)
    np.testing.assert_array_equal(imp[~mask], X[~mask])
    assert not np.isnan(imp).any()
    col_mean = np.nanmean(Xm, axis=0)
    err_model = np.sqrt(np.mean((imp[mask] - X[mask]) ** 2))
    err_mean = np.sqrt(np.mean((col_mean[np.nonzero(mask)[1]] - X[mask]) ** 2))
    assert err_model < 0.4 * err_mean


def test_impute_is_the_conditional_gaussian_expectation():
    X = _data(n=300, seed=8)
    est = ms.get_algorithm("ppca", n_components=3, method="em", tol=1e-9, random_state=0).fit(X)
    C, mu = est.get_covariance(), est.mean_
    row = X[5].copy()
    m = np.array([1, 4, 6])
    o = np.setdiff1d(np.arange(X.shape[1]), m)
    row[m] = np.nan
    expected = mu[m] + C[np.ix_(m, o)] @ np.linalg.solve(C[np.ix_(o, o)], X[5, o] - mu[o])
    np.testing.assert_allclose(est.impute(row[None])[0, m], expected, rtol=1e-9)
    np.testing.assert_array_equal(est.impute(row[None])[0, o], X[5, o])
    # the marginal likelihood of the observed coordinates
    ref = multivariate_normal(mu[o], C[np.ix_(o, o)]).logpdf(X[5, o])
    assert est.score_samples(row[None])[0] == pytest.approx(ref, rel=1e-10)


def test_posterior_groups_patterns_like_a_row_loop():
    X = _data(n=80, seed=9)
    Xm, _ = _with_missing(X, 0.2)
    rng = np.random.default_rng(0)
    W, mu, s2 = rng.normal(size=(8, 3)), rng.normal(size=8), 0.7
    post = ppca_em.posterior(Xm, mu, W, s2, loglik=True)
    for i in range(0, 80, 7):
        o = ~np.isnan(Xm[i])
        Wo = W[o]
        M = Wo.T @ Wo + s2 * np.eye(3)
        np.testing.assert_allclose(post.mean[i], np.linalg.solve(M, Wo.T @ (Xm[i, o] - mu[o])), atol=1e-12)
        ref = multivariate_normal(mu[o], Wo @ Wo.T + s2 * np.eye(o.sum())).logpdf(Xm[i, o])
        assert post.loglik[i] == pytest.approx(ref, rel=1e-10)


def test_nan_refused_unless_em():
    X = _data(n=50)
    X[3, 2] = np.nan
    with pytest.raises(DataError, match=r"NaN.*row 3 column 2.*ppca, method='em'"):
        ms.get_algorithm("ppca").fit(X)
    with pytest.raises(DataError, match=r"ppca, method='em'"):
        ms.get_algorithm("pca").fit(X)
    with pytest.raises(DataError, match=r"ppca, method='em'"):
        ms.get_algorithm("nmf").fit(np.abs(X))
    est = ms.get_algorithm("ppca", method="em", max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert est.fit(X).embedding_.shape == (50, 2)
    Y = X.copy()
    Y[0, 0] = np.inf
    with pytest.raises(DataError, match="infinite"):
        ms.get_algorithm("ppca", method="em").fit(Y)


def test_too_many_components():
    with pytest.raises(DataError, match=r"n_components=9 is too large: n_components must be at most min\(n, n_features\)"):
        ms.get_algorithm("ppca", n_components=9).fit(_data())


def test_em_cancel_keeps_the_current_model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ms.get_algorithm("ppca", method="em", tol=0.0, max_iter=500).fit(_data(), progress=CancelAfter(5))
    assert est.stopped_early_ and est.n_iter_ == 4     # 5 checkpoints passed: the start and 4 iterations
    assert np.all(np.isfinite(est.embedding_))


def test_em_curve_is_published():
    rec = RecordingProgress()
    seen = rec.partials
    est = ms.get_algorithm("ppca", method="em", tol=1e-8, random_state=0).fit(_data(), progress=rec)
    assert seen[-1].final
    np.testing.assert_allclose(seen[-1].series["nll"], -est.loglik_curve_)
    assert est.training_curve().series["nll"][-1] == pytest.approx(-est.loglik_curve_[-1])


def test_conformance_kit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_algorithm(type(ms.get_algorithm("ppca")))
        # EM: every check except the refusal of NaN (EM accepts missing values by design)
        for name, check in iter_checks(type(ms.get_algorithm("ppca")), params={"method": "em"}):
            if name != "check_nan_refused":
                check()


def test_as_many_components_as_features_is_scikit_learns_full_pca():
    # scikit-learn's PCA(n_components=d) keeps every direction with noise_variance_ 0; the closed
    # form does too (EM needs a discarded direction and still refuses)
    from sklearn.decomposition import PCA
    X = np.random.default_rng(0).normal(size=(60, 3)) @ np.diag([3.0, 1.0, 0.2])
    est = ms.get_algorithm("ppca", n_components=3).fit(X)
    ref = PCA(3).fit(X)
    assert est.noise_variance_ == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(est.get_covariance(), ref.get_covariance(), atol=1e-12)
    np.testing.assert_allclose(est.score_samples(X), ref.score_samples(X), rtol=1e-10)
    with pytest.raises(DataError, match="method='em'"):
        ms.get_algorithm("ppca", n_components=3, method="em").fit(X)
