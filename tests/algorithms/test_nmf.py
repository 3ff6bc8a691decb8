"""NMF (Lee & Seung's multiplicative updates) against scikit-learn's NMF(solver='mu')."""
import warnings

import numpy as np
import pytest
from scipy.optimize import nnls
from sklearn.decomposition import NMF as SkNMF
from sklearn.decomposition._nmf import _beta_divergence

import manifold_studio as ms
from manifold_studio.algorithms import nmf_updates as nu
from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm, default_data
from manifold_studio.errors import DataError

SK_LOSS = {"frobenius": "frobenius", "kl": "kullback-leibler"}


def _data(n=120, d=30, k=4, seed=0):
    rng = np.random.default_rng(seed)
    return np.abs(rng.normal(size=(n, k))) @ np.abs(rng.normal(size=(k, d))) + 0.1 * np.abs(rng.normal(size=(n, d)))


@pytest.mark.parametrize("loss", ["frobenius", "kl"])
def test_updates_equal_sklearn_step_by_step(loss):
    X = _data()
    rng = np.random.default_rng(1)
    W0, H0 = np.abs(rng.normal(size=(120, 4))), np.abs(rng.normal(size=(4, 30)))
    W, H = W0.copy(), H0.copy()
    for _ in range(25):
        nu.mu_step(X, W, H, loss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = SkNMF(4, solver="mu", beta_loss=SK_LOSS[loss], init="custom", max_iter=25, tol=0)
        W_sk = sk.fit_transform(X, W=W0.copy(), H=H0.copy())
    np.testing.assert_allclose(W, W_sk, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(H, sk.components_, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("loss", ["frobenius", "kl"])
@pytest.mark.parametrize("init", ["nndsvda", "nndsvd", "random"])
def test_reconstruction_error_equal_or_lower_than_sklearn(loss, init):
    X = _data(seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = ms.get_algorithm("nmf", n_components=4, loss=loss, init=init, max_iter=150, tol=0,
                                random_state=0).fit(X)
        sk = SkNMF(4, solver="mu", beta_loss=SK_LOSS[loss], init=init, max_iter=150, tol=0, random_state=0).fit(X)
    assert ours.n_iter_ == sk.n_iter_ == 150
    slack = 1e-6 if init != "random" else 0.05     # random inits differ (other generator)
    assert ours.reconstruction_err_ <= sk.reconstruction_err_ * (1 + slack)
    # reconstruction_err_ has scikit-learn's meaning
    beta = 2 if loss == "frobenius" else 1
    ref = _beta_divergence(X, ours.embedding_, ours.components_, beta, square_root=True)
    assert ours.reconstruction_err_ == pytest.approx(ref, rel=1e-10)
    if loss == "frobenius":
        assert ours.reconstruction_err_ == pytest.approx(np.linalg.norm(X - ours.inverse_transform(ours.embedding_)))


def test_stopping_rule_is_sklearns():
    X = _data(seed=3)
    ours = ms.get_algorithm("nmf", n_components=4, max_iter=500, tol=1e-3).fit(X)
    sk = SkNMF(4, solver="mu", init="nndsvda", max_iter=500, tol=1e-3, random_state=0).fit(X)
    assert ours.n_iter_ == sk.n_iter_ < 500


@pytest.mark.parametrize("loss", ["frobenius", "kl"])
def test_cost_never_increases(loss):
    """Lee & Seung's theorems: each multiplicative update does not increase its cost."""
    X = _data(seed=4)
    W, H = nu.initialize(X, 5, "random", 0)
    costs = [nu.cost(X, W, H, loss)]
    for _ in range(60):
        nu.update_w(X, W, H, loss)
        costs.append(nu.cost(X, W, H, loss))
        nu.update_h(X, W, H, loss)
        costs.append(nu.cost(X, W, H, loss))
    diffs = np.diff(costs)
    assert np.all(diffs <= 1e-10 * np.abs(costs[:-1]))
    assert costs[-1] < 0.5 * costs[0]


def test_loss_curve_decreases_and_is_published():
    X = _data(seed=5)
    seen = []

    class P:
        def checkpoint(self, f, m=""):
            pass

        def partial(self, r):
            seen.append(r)

    est = ms.get_algorithm("nmf", n_components=4, loss="kl", max_iter=100, tol=0).fit(X, progress=P())
    assert np.all(np.diff(est.loss_curve_) <= 0)
    assert seen and seen[-1].final and seen[-1].series["cost"][-1] == pytest.approx(est.loss_curve_[-1])
    assert est.training_curve().x[-1] == 100


def test_extend_frobenius_is_row_wise_nnls():
    X = _data(seed=6)
    est = ms.get_algorithm("nmf", n_components=4, max_iter=100).fit(X)
    X_new = _data(10, 30, seed=7)
    W = est.extend(X_new)
    for i in range(10):
        np.testing.assert_allclose(W[i], nnls(est.components_.T, X_new[i])[0], atol=1e-10)
        np.testing.assert_allclose(est.extend(X_new[i:i + 1])[0], W[i], atol=1e-12)
    assert np.all(W >= 0)


def test_extend_kl_minimises_the_divergence_with_h_fixed():
    X = _data(seed=8)
    est = ms.get_algorithm("nmf", n_components=4, loss="kl", max_iter=300, tol=1e-6).fit(X)
    X_new = _data(8, 30, seed=9)
    W = est.extend(X_new)
    H = est.components_
    from scipy.optimize import minimize

    for i in range(8):
        np.testing.assert_allclose(est.extend(X_new[i:i + 1])[0], W[i], rtol=1e-12)
        x = X_new[i:i + 1]
        ours = nu.kl_cost(x, W[i:i + 1], H)

        def f(w):
            wh = np.maximum(w @ H, 1e-300)
            return float(np.sum(x[0] * np.log(x[0] / wh) - x[0] + wh)), (1 - x[0] / wh) @ H.T

        best = minimize(f, W[i], jac=True, method="L-BFGS-B", bounds=[(0, None)] * 4,
                        options={"ftol": 1e-14, "gtol": 1e-12, "maxiter": 2000}).fun
        assert best <= ours <= best * (1 + 1e-3) + 1e-9     # within 0.1% of the optimum with H fixed


def test_negative_data_names_the_first_negative_column():
    X = _data()
    X[7, 12] = -0.5
    X[3, 20] = -1.0
    with pytest.raises(DataError, match=r"negative values \(first in column 12"):
        ms.get_algorithm("nmf").fit(X)
    est = ms.get_algorithm("nmf").fit(_data())
    bad = _data(3, 30)
    bad[1, 5] = -2
    with pytest.raises(DataError, match="column 5"):
        est.extend(bad)


def test_nndsvd_needs_few_components():
    with pytest.raises(DataError, match="n_components ≤ min"):
        ms.get_algorithm("nmf", n_components=40, init="nndsvd").fit(_data())
    est = ms.get_algorithm("nmf", n_components=40, init="random", max_iter=20).fit(_data())
    assert est.components_.shape == (40, 30)


def test_cancel_keeps_the_current_factors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ms.get_algorithm("nmf", n_components=3, max_iter=100).fit(_data(), progress=CancelAfter(6))
    assert est.stopped_early_ and est.n_iter_ == 5
    assert np.all(est.embedding_ >= 0)


def test_conformance_kit():
    X, y = default_data()
    check_algorithm(type(ms.get_algorithm("nmf")), X=np.abs(X), y=y)


def test_training_rows_keep_their_coefficients_through_extend_and_saving(tmp_path):
    from manifold_studio.files.model_file import load_model, save_model

    X = _data(seed=11)
    est = ms.get_algorithm("nmf", n_components=4, max_iter=50).fit(X)
    np.testing.assert_array_equal(est.extend(X), est.embedding_)        # fit_transform == transform
    np.testing.assert_array_equal(est.extend(X[3:4])[0], est.embedding_[3])
    mixed = np.vstack([X[:2], _data(2, 30, seed=12)])
    W = est.extend(mixed)
    np.testing.assert_allclose(W[2], nnls(est.components_.T, mixed[2])[0], atol=1e-10)  # new rows solved
    save_model(est, tmp_path / "nmf.npz")
    np.testing.assert_array_equal(load_model(tmp_path / "nmf.npz").extend(X[:5]), est.embedding_[:5])
