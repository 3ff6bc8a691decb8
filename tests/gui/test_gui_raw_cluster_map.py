"""A clustering of the raw data with no map of the same points is drawn on the data's own PCA
map (the pca plugin, cached per data set), not on its first two columns (issue 21)."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_last_run

pytest.importorskip("pytestqt")

import manifold_studio as ms  # noqa: E402
from manifold_studio.analysis.feature_stats import pca_map  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    return discovered_host(("pca", "kmeans"), ("iris",))


def test_raw_data_clustering_is_drawn_on_the_data_pca_map(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:iris")
    run = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    assert run.embedding is None and not any(r.embedding is not None for r in w.session.runs.values())
    view = w.map_view
    qtbot.waitUntil(lambda: view.run is run and len(view.xy) == 150, timeout=10_000)
    X = w.session.dataset().X
    ref = ms.get_algorithm("pca", n_components=2).fit(X)
    np.testing.assert_allclose(view.xy, ref.embedding_, atol=1e-10)
    assert not np.allclose(view.xy, X[:, :2])
    assert "drawn on the data's PCA map" in view.title_label.text()
    label = view.plot_item.getAxis("bottom").labelText
    assert label.startswith("PC1 (") and f"{ref.explained_variance_ratio_[0]:.0%}" in label
    # cached per data set: shown again, the same coordinates object is used
    cached = view._pca_maps[run.dataset_name][1][0]
    w.show_run(run)
    assert view._pca_maps[run.dataset_name][1][0] is cached


def test_pca_map_leaves_incomplete_rows_out():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [3.0, 1.0, 0.2]
    X[5, 1] = np.nan
    xy, ratio = pca_map(X)
    ok = np.isfinite(X).all(axis=1)
    ref = ms.get_algorithm("pca", n_components=2).fit(X[ok])
    assert np.isnan(xy[5]).all()
    np.testing.assert_allclose(xy[ok], ref.embedding_, atol=1e-12)
    np.testing.assert_allclose(ratio, ref.explained_variance_ratio_)
    one, _ = pca_map(X[:, :1][ok])
    assert one.shape == (39, 1)


def test_subset_with_a_new_matrix_gets_its_own_map(qtbot, make_window, host):
    w = make_window(host)
    ds = w.session.load("sample:iris")
    small = Dataset("half", ds.X[::2].copy(), ds.labels[::2])
    w.session.add_dataset(small)
    run = w.run_algorithm("kmeans", {"n_clusters": 2, "random_state": 0})
    wait_last_run(qtbot, w)
    qtbot.waitUntil(lambda: w.map_view.run is run and len(w.map_view.xy) == 75, timeout=10_000)
    np.testing.assert_allclose(w.map_view.xy, pca_map(small.X)[0], atol=1e-10)


def test_cli_plot_of_a_clustering_uses_the_pca_map_too():
    from manifold_studio.render.plot import run_map
    iris = ms.load_data("sample:iris")
    labels = np.arange(150) % 3
    plot = run_map(labels, "clustering", "kmeans", iris, {"n_clusters": 3})
    ref = ms.get_algorithm("pca", n_components=2).fit(iris.X)
    np.testing.assert_allclose(plot.xy, ref.embedding_, atol=1e-10)
    assert "drawn on the data's PCA map" in plot.title and plot.axis_names[0].startswith("PC1 (")
