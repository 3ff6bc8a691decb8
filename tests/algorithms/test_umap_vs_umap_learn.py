"""Semi-supervised UMAP, densMAP and inverse_transform against umap-learn on the same data
(slow: umap-learn compiles its numba code on first use)."""
import warnings

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.datasets import load_digits
from sklearn.metrics import silhouette_score
from sklearn.neighbors import NearestNeighbors

import manifold_studio as ms

umap_learn = pytest.importorskip("umap")
pytestmark = pytest.mark.slow


def digits(n=1000):
    X, y = load_digits(return_X_y=True)
    return X[:n].astype(float), y[:n]


def log_radii(Z, k=15):
    """Log of each point's mean distance to its k nearest others."""
    d, _ = NearestNeighbors(n_neighbors=k + 1).fit(Z).kneighbors(Z)
    return np.log(d[:, 1:].mean(axis=1))


def test_semi_supervised_separation_at_least_umap_learns():
    X, y = digits()
    ys = y.copy()
    ys[np.random.default_rng(0).random(y.size) < 0.5] = -1
    ours = ms.get_algorithm("umap", target_weight=0.5, random_state=0).fit(X, ys).embedding_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = umap_learn.UMAP(target_weight=0.5, random_state=0).fit(X, ys).embedding_
    s_ours, s_ref = silhouette_score(ours, y), silhouette_score(ref, y)
    print(f"semi-supervised silhouette: ours {s_ours:.4f}, umap-learn {s_ref:.4f}")
    assert s_ours >= s_ref - 0.02


def test_densmap_radius_correlation_close_to_umap_learns():
    X, _ = digits()
    r0 = log_radii(X)
    ours = ms.get_algorithm("umap", densmap=True, random_state=0).fit(X).embedding_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = umap_learn.UMAP(densmap=True, random_state=0).fit(X).embedding_
    c_ours, c_ref = pearsonr(r0, log_radii(ours))[0], pearsonr(r0, log_radii(ref))[0]
    print(f"densMAP radius correlation: ours {c_ours:.4f}, umap-learn {c_ref:.4f}")
    assert abs(c_ours - c_ref) <= 0.05


def test_inverse_transform_error_at_most_1_2_times_umap_learns():
    X, _ = digits()
    rng = np.random.default_rng(1)
    test = rng.choice(X.shape[0], 100, replace=False)
    train = np.setdiff1d(np.arange(X.shape[0]), test)
    ours = ms.get_algorithm("umap", random_state=0).fit(X[train])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = umap_learn.UMAP(random_state=0).fit(X[train])
        back_ref = ref.inverse_transform(ref.transform(X[test]))
    back = ours.inverse_transform(ours.extend(X[test]))
    e_ours = float(np.mean(np.linalg.norm(back - X[test], axis=1)))
    e_ref = float(np.mean(np.linalg.norm(back_ref - X[test], axis=1)))
    print(f"inverse_transform error: ours {e_ours:.4f}, umap-learn {e_ref:.4f}")
    assert e_ours <= 1.2 * e_ref
