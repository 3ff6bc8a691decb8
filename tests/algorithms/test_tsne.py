"""t-SNE plugin (issue 10): affinities, gradients, agreement with scikit-learn, extend, bad input."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.manifold import TSNE as SkTSNE
from sklearn.manifold import trustworthiness

from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm
from manifold_studio.algorithms.tsne_affinities import (conditional_probabilities, exact_affinities,
                                                        sparse_affinities)
from manifold_studio.algorithms.tsne_gradient import exact_kl_gradient, fft_kl_gradient
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError
from manifold_studio_builtins.tsne import TSNE
from fakes import RecordingProgress  # noqa: E402


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(160, 8, centers=4, cluster_std=1.0, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def fitted(blobs):
    X, _ = blobs
    return TSNE(perplexity=15, random_state=0, max_iter=500).fit(X)


# -- affinities ---------------------------------------------------------------------------------
@pytest.mark.parametrize("perplexity", [2.0, 10.0, 40.0])
def test_rows_sum_to_one_with_the_requested_perplexity(perplexity):
    rng = np.random.default_rng(1)
    D2 = rng.uniform(0, 50, size=(30, 60)) ** 1.5
    P, beta = conditional_probabilities(D2, perplexity)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    H = -np.sum(P * np.log(np.maximum(P, 1e-300)), axis=1)
    np.testing.assert_allclose(H, np.log(perplexity), atol=1e-5)
    # P really is the Gaussian with the found beta
    W = np.exp(-beta[:, None] * D2)
    np.testing.assert_allclose(P, W / W.sum(axis=1, keepdims=True), rtol=1e-8, atol=1e-14)


def test_joint_affinities_are_symmetric_and_sparse_agrees_with_exact(blobs):
    X, _ = blobs
    P = exact_affinities(X, 10.0)
    np.testing.assert_allclose(P, P.T)
    assert abs(P.sum() - 1.0) < 1e-12 and np.all(np.diag(P) == 0)
    Pc = exact_affinities(X, 10.0, symmetric=False)
    np.testing.assert_allclose(P, (Pc + Pc.T) / (2 * X.shape[0]))
    Ps = sparse_affinities(X, 10.0).toarray()
    assert abs(Ps.sum() - 1.0) < 1e-12
    # 31 neighbours hold almost all the Gaussian mass of perplexity 10
    assert np.abs(Ps - P).sum() < 0.02


# -- gradients ----------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["tsne", "symmetric_sne", "sne"])
def test_exact_gradient_matches_finite_differences(blobs, variant):
    X, _ = blobs
    X = X[:25]
    P = exact_affinities(X, 5.0, symmetric=variant != "sne")
    Y = np.random.default_rng(0).normal(size=(25, 2))
    _, grad = exact_kl_gradient(Y, P, variant)
    eps = 1e-6
    num = np.zeros_like(Y)
    for i in range(Y.shape[0]):
        for d in range(2):
            Yp, Ym = Y.copy(), Y.copy()
            Yp[i, d] += eps
            Ym[i, d] -= eps
            num[i, d] = (exact_kl_gradient(Yp, P, variant)[0] - exact_kl_gradient(Ym, P, variant)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)


def test_fft_gradient_and_kl_approximate_the_exact_ones(blobs):
    X, _ = blobs
    P = sparse_affinities(X, 15.0)
    Pd = P.toarray()
    Y = np.random.default_rng(0).normal(size=(X.shape[0], 2)) * 5
    kl, g = fft_kl_gradient(Y, P, with_kl=True)
    kle, ge = exact_kl_gradient(Y, Pd)
    assert abs(kl - kle) < 1e-3 * kle
    assert np.linalg.norm(g - ge) < 0.02 * np.linalg.norm(ge)


# -- fits ---------------------------------------------------------------------------------------
def test_kl_close_to_scikit_learn_exact(blobs, fitted):
    X, _ = blobs
    sk = SkTSNE(perplexity=15, method="exact", init="pca", random_state=0, max_iter=500,
                learning_rate="auto").fit(X)
    assert fitted.method_ == "exact"
    assert abs(fitted.kl_divergence_ - sk.kl_divergence_) <= 0.05 * sk.kl_divergence_
    # kl_divergence_ is the exact KL of the returned map
    P = exact_affinities(X, 15.0)
    assert fitted.kl_divergence_ == pytest.approx(exact_kl_gradient(fitted.embedding_, P)[0], rel=1e-10)
    assert trustworthiness(X, fitted.embedding_, n_neighbors=10) >= \
        trustworthiness(X, sk.embedding_, n_neighbors=10) - 0.01


def test_fft_trustworthiness_close_to_scikit_learn_barnes_hut():
    X, _ = make_blobs(1000, 20, centers=8, cluster_std=2.0, random_state=3)
    ours = TSNE(perplexity=30, method="fft", random_state=0, max_iter=300).fit(X)
    sk = SkTSNE(perplexity=30, method="barnes_hut", init="pca", random_state=0, max_iter=300).fit(X)
    t_ours = trustworthiness(X, ours.embedding_, n_neighbors=10)
    t_sk = trustworthiness(X, sk.embedding_, n_neighbors=10)
    assert t_ours >= t_sk - 0.01, (t_ours, t_sk)
    assert abs(ours.kl_divergence_ - sk.kl_divergence_) < 0.1 * sk.kl_divergence_


def test_sne_variants_decrease_their_kl(blobs):
    X, y = blobs
    for variant in ("symmetric_sne", "sne"):
        short = TSNE(perplexity=15, variant=variant, random_state=0, max_iter=20, n_iter_early=0).fit(X)
        long = TSNE(perplexity=15, variant=variant, random_state=0, max_iter=300).fit(X)
        assert np.isfinite(long.embedding_).all() and long.kl_divergence_ < short.kl_divergence_
        assert trustworthiness(X, long.embedding_, n_neighbors=10) > 0.9


def _knn_label(X_tr, y_tr, X_new, k=10):
    """The cluster a new point belongs to in the data: majority label of its k nearest training points."""
    d = ((X_new[:, None, :] - X_tr[None]) ** 2).sum(-1)
    nn = np.argsort(d, axis=1)[:, :k]
    return np.array([np.bincount(y_tr[row]).argmax() for row in nn])


# -- extend -------------------------------------------------------------------------------------
def test_extend_is_sample_wise_and_lands_in_the_right_cluster(fitted):
    X_new, y_new = make_blobs(40, 8, centers=4, cluster_std=1.0, random_state=0)  # same centres
    X_tr, y_tr = make_blobs(160, 8, centers=4, cluster_std=1.0, random_state=0)
    Z = fitted.extend(X_new)
    one = np.vstack([fitted.extend(X_new[i:i + 1]) for i in range(0, 40, 7)])
    np.testing.assert_allclose(Z[::7], one, rtol=0, atol=1e-10)
    Y = fitted.embedding_
    centres = np.array([Y[y_tr == c].mean(axis=0) for c in range(4)])
    nearest = np.argmin(((Z[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert np.mean(nearest == _knn_label(X_tr, y_tr, X_new)) == 1.0 and np.mean(nearest == y_new) >= 0.95
    # a copy of a training point keeps its place; a slightly moved one lands near it
    np.testing.assert_array_equal(fitted.extend(X_tr[:20]), Y[:20])
    Zt = fitted.extend(X_tr[:20] + 1e-3)
    spread = np.ptp(Y, axis=0).max()
    assert np.median(np.linalg.norm(Zt - Y[:20], axis=1)) < 0.05 * spread


def test_extend_with_the_fft_repulsion_is_sample_wise():
    X, y = make_blobs(1200, 5, centers=3, cluster_std=0.7, random_state=2)  # separate clusters
    est = TSNE(perplexity=20, method="fft", random_state=0, max_iter=300).fit(X[:1100])
    Z = est.extend(X[1100:])
    one = np.vstack([est.extend(X[1100 + i:1101 + i]) for i in range(0, 100, 13)])
    np.testing.assert_allclose(Z[::13], one, rtol=0, atol=1e-10)
    Y = est.embedding_
    centres = np.array([Y[y[:1100] == c].mean(axis=0) for c in range(3)])
    nearest = np.argmin(((Z[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    assert np.mean(nearest == y[1100:]) == 1.0


def test_state_round_trip_without_pickle(fitted, blobs):
    X, _ = blobs
    state = fitted.fitted_state()
    assert all(isinstance(v, (np.ndarray, int, float, str, bool, list)) or v is None for v in state.values())
    other = TSNE(perplexity=15, random_state=0, max_iter=500).restore_state(state)
    np.testing.assert_allclose(other.extend(X[:5]), fitted.extend(X[:5]))


# -- progress, cancel ---------------------------------------------------------------------------
def test_partial_maps_are_published_and_cancel_keeps_the_current_map(blobs, monkeypatch):
    import manifold_studio_builtins.tsne as mod
    X, _ = blobs
    monkeypatch.setattr(mod, "PARTIAL_INTERVAL", 0.0)
    rec = RecordingProgress(cancel_after=60)
    with pytest.warns(UserWarning, match="Stopped early"):
        est = TSNE(perplexity=15, random_state=0, max_iter=500).fit(X, progress=rec)
    assert est.stopped_early_ and est.n_iter_ < 500
    assert len(rec.partials) >= 10 and all(p.shape == (160, 2) for p in rec.partials)
    np.testing.assert_allclose(est.embedding_, rec.partials[-1], atol=1e2)  # the map reached
    assert np.isfinite(est.kl_divergence_)
    # cancel during the affinities (before any map exists) propagates
    with pytest.raises(FitCancelled):
        TSNE(perplexity=15).fit(X, progress=CancelAfter(0))


# -- bad input ----------------------------------------------------------------------------------
def test_bad_input_is_refused_with_a_clear_message(blobs):
    X, _ = blobs
    # scikit-learn's bound: perplexity < n_samples
    with pytest.raises(DataError, match=r"perplexity=10 is too large: perplexity must be below n = 10"):
        TSNE(perplexity=10).fit(X[:10])
    with pytest.raises(DataError, match="4"):
        TSNE(perplexity=1.5).fit(X[:3])
    with pytest.raises(DataError, match="identical"):
        TSNE(perplexity=2).fit(np.ones((20, 3)))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(DataError, match="NaN"):
        TSNE().fit(Xn)
    for lr in (0, -1.0):
        with pytest.raises(InvalidParameterError, match="learning_rate"):
            TSNE(learning_rate=lr).fit(X)
    with pytest.raises(InvalidParameterError, match="fft"):
        TSNE(method="fft", n_components=3).fit(X)


def test_duplicate_points_get_the_same_place(blobs):
    X, _ = blobs
    Xd = np.vstack([X[:60], X[:10]])
    est = TSNE(perplexity=10, random_state=0, max_iter=300).fit(Xd)
    Y = est.embedding_
    assert np.isfinite(Y).all()
    gap = np.linalg.norm(Y[60:] - Y[:10], axis=1)
    assert np.median(gap) < 0.05 * np.ptp(Y, axis=0).max()


def test_conformance():
    check_algorithm(TSNE, params={"perplexity": 5.0, "max_iter": 100, "extend_iter": 20})


def test_n_iter_means_what_scikit_learn_means():
    from sklearn.manifold import TSNE as SkTSNE
    X = np.random.default_rng(0).normal(size=(30, 4))
    ref = SkTSNE(perplexity=5, max_iter=300, init="random", random_state=0).fit(X)
    ours = TSNE(perplexity=5, max_iter=300, random_state=0).fit(X)
    assert ours.n_iter_ == ref.n_iter_ == 299
    assert ours.n_steps_ == 300
