"""Isomap: agreement with scikit-learn, swiss roll, disconnected graphs, k >= n."""
import numpy as np
import pytest
from scipy.stats import spearmanr

import manifold_studio as ms
from manifold_studio.errors import DataError
from procrustes import procrustes_residual
from spectral_data import swiss_roll


def test_matches_sklearn_isomap_fit_and_transform():
    from sklearn.manifold import Isomap

    X, _ = swiss_roll(600)
    X_new, _ = swiss_roll(200, seed=1)
    ours = ms.get_algorithm("isomap", n_neighbors=10, n_components=2).fit(X)
    sk = Isomap(n_neighbors=10, n_components=2).fit(X)
    assert procrustes_residual(sk.embedding_, ours.embedding_, scale=False) < 1e-8
    # new points use float32 geodesics (relative precision ~1e-7)
    assert procrustes_residual(sk.transform(X_new), ours.extend(X_new), scale=False) < 1e-6


def test_radius_graph_matches_sklearn():
    from sklearn.manifold import Isomap

    X, _ = swiss_roll(500)
    ours = ms.get_algorithm("isomap", radius=6.0, n_neighbors=None).fit(X)
    sk = Isomap(n_neighbors=None, radius=6.0).fit(X)
    assert procrustes_residual(sk.embedding_, ours.embedding_, scale=False) < 1e-8


def test_swiss_roll_parameter_is_recovered():
    X, t = swiss_roll(1500)
    emb = ms.get_algorithm("isomap", n_neighbors=10).fit(X).embedding_
    rho = max(abs(spearmanr(emb[:, j], t)[0]) for j in range(2))
    assert rho > 0.99


def _two_blobs():
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(60, 2)), rng.normal(size=(40, 2)) + 50])


def test_disconnected_graph_message_gives_components_and_smallest_k():
    X = _two_blobs()
    with pytest.raises(DataError) as err:
        ms.get_algorithm("isomap", n_neighbors=5, disconnected="error").fit(X)
    msg = str(err.value)
    assert "2 separate connected components" in msg and "60, 40" in msg
    assert "smallest n_neighbors that connects them is 40" in msg
    assert "disconnected='connect'" in msg and "disconnected='largest'" in msg
    ms.get_algorithm("isomap", n_neighbors=40).fit(X)  # the suggestion works


def test_disconnected_graph_is_connected_through_the_closest_pair_by_default():
    from scipy.spatial.distance import cdist

    X = _two_blobs()
    est = ms.get_algorithm("isomap", n_neighbors=5)
    with pytest.warns(UserWarning, match="2 separate pieces .*sizes 60, 40"):
        est.fit(X)
    assert np.isfinite(est.embedding_).all() and "joined through their closest pairs" in est.fit_warnings_[0]
    # the one edge added is the closest pair between the two blobs
    (i, j), = est.connecting_edges_
    D = cdist(X[:60], X[60:])
    a, b = np.unravel_index(np.argmin(D), D.shape)
    assert {int(i), int(j)} == {int(a), int(b) + 60}
    # geodesics between the blobs run through that edge: d(p, q) = d(p, a) + |a - b| + d(b, q)
    Dg = est.geodesic_.astype(float)
    assert Dg[0, 99] == pytest.approx(Dg[0, a] + D[a, b] + Dg[b + 60, 99], rel=1e-5)


def test_largest_component_option():
    X = _two_blobs()
    est = ms.get_algorithm("isomap", n_neighbors=5, largest_component=True).fit(X)
    assert est.embedding_.shape == (100, 2)
    assert np.isnan(est.embedding_[60:]).all() and np.isfinite(est.embedding_[:60]).all()
    assert est.embedded_mask_.sum() == 60 and "largest" in est.warning_
    assert np.isfinite(est.extend(X[:5] + 0.01)).all()


def test_k_not_smaller_than_n():
    X, _ = swiss_roll(10)
    # the parameter's data limit (the form says it before Run): refused before any work
    with pytest.raises(DataError, match="n_neighbors=10 is too large: n_neighbors must be below n = 10"):
        ms.get_algorithm("isomap", n_neighbors=10).fit(X)


def test_new_point_never_shortens_training_paths():
    X, _ = swiss_roll(400)
    est = ms.get_algorithm("isomap").fit(X)
    before = est.geodesic_.copy()
    est.extend(swiss_roll(50, seed=3)[0])
    np.testing.assert_array_equal(est.geodesic_, before)
