"""Spectral clustering: rings and moons, agreement with scikit-learn, extension to labels."""
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score as ari

import manifold_studio as ms
from manifold_studio.algorithms.kmeans_core import kmeans
from manifold_studio.errors import DataError
from spectral_data import circles, moons


@pytest.mark.parametrize("data", [circles, moons])
@pytest.mark.parametrize("affinity", ["rbf", "nearest_neighbors"])
def test_agrees_with_sklearn(data, affinity):
    from sklearn.cluster import SpectralClustering

    X, y = data(500)
    ours = ms.get_algorithm("spectral_clustering", n_clusters=2, affinity=affinity, sigma=0.1,
                            n_neighbors=10, random_state=0).fit(X)
    sk = SpectralClustering(n_clusters=2, affinity=affinity, gamma=1 / (2 * 0.1 ** 2), n_neighbors=10,
                            random_state=0).fit(X)
    assert ari(sk.labels_, ours.labels_) > 0.99
    assert ari(y, ours.labels_) > 0.99


def test_concentric_circles_separated_where_kmeans_fails():
    X, y = circles(600)
    sc = ms.get_algorithm("spectral_clustering", n_clusters=2, sigma=0.1, random_state=0).fit(X)
    assert ari(y, sc.labels_) > 0.95
    assert ari(y, kmeans(X, 2, random_state=0).labels) < 0.1


def test_extension_labels_new_points():
    X, y = circles(600)
    X_new, y_new = circles(300, seed=1)
    sc = ms.get_algorithm("spectral_clustering", n_clusters=2, sigma=0.1, random_state=0).fit(X)
    assert ari(y_new, sc.extend(X_new)) > 0.95
    # far away points still get a label (stable kernel 5.2, no 0/0)
    far = sc.extend(X_new[:4] * 50)
    assert far.shape == (4,) and set(far) <= {0, 1}


def test_sigma_underflow_message():
    X, _ = circles(100)
    with pytest.raises(DataError, match="sigma=1e-05.*underflows to 0"):
        ms.get_algorithm("spectral_clustering", sigma=1e-5).fit(X)


def test_summary():
    X, _ = circles(200)
    s = ms.get_algorithm("spectral_clustering", sigma=0.1, random_state=0).fit(X).result_summary()
    assert sorted(s["cluster_sizes"]) == [100, 100] and len(s["eigenvalues"]) == 2
