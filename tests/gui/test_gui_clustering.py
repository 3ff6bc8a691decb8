"""pytest-qt tests of the clustering GUI driving the real main window (headless).

"Cluster this map", clusters and centres on the map, the silhouette, dendrogram (cut line) and
contingency views, the Choose k tool (progress, cancel, run with the suggested k) and bad input.
Every window is shut down in teardown, which cancels its jobs and joins every worker thread.
"""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from scipy.cluster import hierarchy  # noqa: E402

from manifold_studio.analysis import metrics  # noqa: E402
from manifold_studio.session.records import DONE, FAILED

from manifold_studio.gui.cluster_overlay import MEAN  # noqa: E402
from manifold_studio.gui.main_window import MainWindow  # noqa: E402

NEEDED = ("pca", "kmeans", "hierarchical")

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture
def host():
    return discovered_host(NEEDED, ("iris", "blobs"))


def _idle(qtbot, *views, timeout=10_000):
    qtbot.waitUntil(lambda: all(not v.busy for v in views), timeout=timeout)


def _load(qtbot, w, sample, **options):
    assert w.data_panel.select_sample(sample)
    for name, value in options.items():
        w.data_panel.sample_form.editor(name).set_value(value)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        qtbot.mouseClick(w.data_panel.load_sample_button, Qt.MouseButton.LeftButton)
    return w.session.current_dataset


# -- cluster this map -----------------------------------------------------------------------------
def test_cluster_this_map_colours_points_draws_centres_and_silhouettes(qtbot, make_window, host):
    w = make_window(host)
    ds = _load(qtbot, w, "blobs", n_samples=300, random_state=3)
    w.algorithm_panel.select_algorithm("pca")
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    pca = wait_last_run(qtbot, w)

    w.cluster_map_action.trigger()  # Tools > Cluster this map
    assert w.algorithm_panel.algorithm_id == "kmeans"
    assert w.input_selector.source_run() == pca.id
    w.algorithm_panel.form.editor("n_clusters").set_value(3)
    w.algorithm_panel.form.editor("random_state").set_value(0)
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    km = wait_last_run(qtbot, w)
    assert km.algorithm_id == "kmeans" and km.source_run == pca.id
    assert km.estimator.cluster_centers_.shape == (3, 2)  # fitted on the 2-D map

    view = w.map_view
    assert view.run is km and np.allclose(view.xy, pca.embedding[:, :2])
    assert f"run #{pca.id}" in view.title_label.text()
    assert view.color_combo.currentData() == "run" and len(view.coloring.names) == 3
    overlay = w.cluster_overlay
    assert overlay.centres is not None and overlay.centres.how == "fitted"
    assert np.allclose(overlay.centres.xy, km.estimator.cluster_centers_)
    assert len(overlay._item.data) == 3 and overlay._item.scene() is view.plot.scene()
    # the star of each cluster is filled with that cluster's colour
    brushes = [overlay._item.data[i]["brush"].color().getRgb()[:3] for i in range(3)]
    assert brushes == [tuple(int(v) for v in view.coloring.colors[i]) for i in range(3)]

    sil = w.views["silhouette"]
    w.window_layout.open("view:silhouette")  # the result views open from the View menu (issue 33)
    qtbot.waitUntil(lambda: sil.result is not None and sil.run is km, timeout=10_000)
    assert sil.n_bars == ds.n_samples  # one bar per point
    expected = metrics.silhouette(pca.embedding, km.labels)  # computed on the map it clustered
    assert sil.result.mean == pytest.approx(expected, abs=1e-12)
    assert np.mean(sil.bar_values) == pytest.approx(expected, abs=1e-12)
    assert sil.mean_line.isVisible() and sil.mean_line.value() == pytest.approx(expected)
    assert f"{expected:.3f}" in sil.info.text()
    assert w.docks["view:silhouette"].isVisible()


def test_raw_data_clusters_on_an_embedding_map_get_projected_or_mean_centres(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    pca = wait_last_run(qtbot, w)
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    assert km.source_run is None and km.estimator.cluster_centers_.shape == (3, 4)
    overlay = w.cluster_overlay
    qtbot.waitUntil(lambda: not overlay.busy and overlay.centres is not None and overlay.centres_run is km,
                    timeout=15_000)
    assert overlay.centres.how == "projected"
    projected = pca.estimator.extend(km.estimator.cluster_centers_)[:, :2]
    assert np.allclose(overlay.centres.xy, projected)
    overlay.set_mode(MEAN)
    assert overlay.centres.how == "mean"
    for j in range(3):
        assert np.allclose(overlay.centres.xy[j], pca.embedding[km.labels == j, :2].mean(axis=0))
    overlay.set_mode("hidden")
    assert overlay.centres is None and overlay._item is None


# -- dendrogram -----------------------------------------------------------------------------------
def test_dendrogram_cut_line_recolours_the_map_without_refitting(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    pca = wait_last_run(qtbot, w)
    h = w.run_algorithm("hierarchical", {"n_clusters": 3, "method": "ward"})
    wait_last_run(qtbot, w)
    dend = w.views["dendrogram"]
    w.window_layout.open("view:dendrogram")  # the result views open from the View menu (issue 33)
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is h, timeout=15_000)
    assert w.docks["view:dendrogram"].isVisible()
    assert len(dend._curve.xData) == 6 * dend.result.icoord.shape[0]
    assert dend.cut_line.isVisible() and dend.clusters_at(dend.cut_height) == 3
    assert "3 clusters" in dend.cut_label.text()
    n_runs = len(w.session.runs)

    Z = h.estimator.linkage_matrix_
    height = float(np.sort(Z[:, 2])[-6] + np.sort(Z[:, 2])[-5]) / 2  # between two merges: 6 clusters
    expected = hierarchy.fcluster(Z, height, criterion="distance")
    labels = dend.set_cut_height(height)
    k = np.unique(expected).size
    assert k == 6 and np.unique(labels).size == k == dend.clusters_at(height)
    assert metrics.adjusted_rand_index(labels, expected) == pytest.approx(1.0)
    assert f"{k} clusters" in dend.cut_label.text()
    view = w.map_view
    assert view.run is h and np.allclose(view.xy, pca.embedding[:, :2])
    assert len(view.coloring.names) == k and np.array_equal(view.color_labels, labels)
    assert len(w.session.runs) == n_runs and np.unique(h.labels).size == 3  # no refit
    # the views that depend on the partition follow the cut
    sil, cont = w.views["silhouette"], w.views["contingency"]
    qtbot.waitUntil(lambda: sil.result is not None and np.unique(sil.result.labels).size == k, timeout=15_000)
    assert sil.result.mean == pytest.approx(metrics.silhouette(w.session.current_dataset.X, labels))
    qtbot.waitUntil(lambda: cont.result is not None and cont.result.counts.shape[0] == k, timeout=15_000)
    qtbot.waitUntil(lambda: w.cluster_overlay.centres is not None and len(w.cluster_overlay.centres.xy) == k,
                    timeout=15_000)
    # back to the run's own partition
    dend.reset_cut()
    assert len(view.coloring.names) == 3 and np.array_equal(view.color_labels, h.labels)


def test_divisive_tree_cut_merges_clusters(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    h = w.run_algorithm("hierarchical", {"n_clusters": 5, "method": "divisive", "random_state": 0})
    wait_last_run(qtbot, w)
    dend = w.views["dendrogram"]
    w.window_layout.open("view:dendrogram")  # the result views open from the View menu (issue 33)
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is h, timeout=15_000)
    assert dend.result.n_leaves == 5 and dend.clusters_at(dend.cut_height) == 5
    Z = h.estimator.linkage_matrix_
    labels = dend.set_cut_height(float(Z[:, 2].max()) * 0.999)
    assert np.unique(labels).size == 2 and len(w.map_view.coloring.names) == 2


# -- contingency ----------------------------------------------------------------------------------
def test_contingency_table_and_adjusted_rand_index_on_iris(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 1})
    wait_last_run(qtbot, w)
    cont = w.views["contingency"]
    qtbot.waitUntil(lambda: cont.result is not None and cont.run is km, timeout=15_000)
    truth = w.session.current_dataset.labels
    expected = metrics.adjusted_rand_index(km.labels, truth)
    assert cont.ari == pytest.approx(expected, abs=1e-12)
    assert f"{expected:.4f}" in cont.ari_label.text()
    table = metrics.contingency_table(km.labels, truth)
    assert np.array_equal(cont.result.counts, table.table)
    t = cont.table
    assert t.rowCount() == 4 and t.columnCount() == 4
    assert [t.horizontalHeaderItem(j).text() for j in range(3)] == ["setosa", "versicolor", "virginica"]
    assert t.item(3, 3).text() == "150"
    assert int(t.item(0, 0).text()) == table.table[0, 0]
    # an embedding run: the clustering views the user opened do not apply (docks hidden) ...
    w.window_layout.open("view:contingency")
    w.window_layout.open("view:dendrogram")
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    assert not w.docks["view:contingency"].isVisible() and not w.docks["view:dendrogram"].isVisible()
    # ... and come back with the next clustering run
    w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 1})
    wait_last_run(qtbot, w)
    assert not w.docks["view:contingency"].isHidden() and w.docks["view:dendrogram"].isHidden()


# -- choose k -------------------------------------------------------------------------------------
def test_choose_k_tool_plots_four_curves_marks_k_and_runs_it(qtbot, make_window, host):
    w = make_window(host)
    _load(qtbot, w, "blobs", n_samples=400, random_state=2)
    w.choose_k_action.trigger()
    tool = w.choose_k_tool
    assert w.docks["choose_k"].isVisible()
    partials = []
    job = tool.start("kmeans", 2, 6)
    job.partial.connect(partials.append)
    assert w.busy and w.run_controls.cancel_button.isEnabled()  # progress bar + Cancel wired
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=30_000)
    res = tool.result
    assert list(res.k) == [2, 3, 4, 5, 6]
    for key, curve in tool.curves.items():
        xs, ys = curve.getData()
        assert list(xs) == [2, 3, 4, 5, 6] and np.all(np.isfinite(ys)), key
    assert all(m.isVisible() and m.value() == res.suggested_k for m in tool.marks.values())
    assert res.suggested_k == 3  # three blobs
    assert f"k = {res.suggested_k}" in tool.message.text()
    assert tool.apply_button.isEnabled() and tool.apply_button.text() == "Run with k = 3"
    qtbot.mouseClick(tool.apply_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    assert run.algorithm_id == "kmeans" and run.params["n_clusters"] == 3 and np.unique(run.labels).size == 3


def test_choose_k_cancel_keeps_the_tool_usable(qtbot, make_window, host):
    w = make_window(host)
    _load(qtbot, w, "blobs", n_samples=3000, n_features=5, centers=8, random_state=0)
    tool = w.choose_k_tool
    job = tool.start("kmeans", 2, 60)
    qtbot.waitUntil(lambda: len(tool.rows) >= 1, timeout=30_000)
    qtbot.mouseClick(w.run_controls.cancel_button, Qt.MouseButton.LeftButton)  # the window's Cancel
    qtbot.waitUntil(lambda: job.finished, timeout=10_000)
    assert job.state == "cancelled" and tool.result is None
    assert "Cancelled" in tool.message.text() and not tool.apply_button.isEnabled()
    assert tool.start_button.isEnabled() and not w.busy
    assert len(tool.curves["within"].getData()[0]) == len(tool.rows) < 59  # partial curves stay


# -- bad input ------------------------------------------------------------------------------------
def test_too_many_clusters_is_a_clear_error_and_keeps_earlier_results(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    sil = w.views["silhouette"]
    qtbot.waitUntil(lambda: sil.result is not None and sil.run is km, timeout=15_000)
    mean = sil.result.mean
    bad = w.run_algorithm("kmeans", {"n_clusters": 500})
    wait_last_run(qtbot, w, FAILED)
    assert "500" in bad.error and "150" in bad.error
    assert "500" in w.statusBar().currentMessage()
    assert w.session.current_run is km and w.map_view.run is km and len(w.map_view.coloring.names) == 3
    assert sil.run is km and sil.result.mean == mean and w.cluster_overlay.centres_run is km

    # the same through Choose k: a message, the previous curves kept
    tool = w.choose_k_tool
    tool.start("kmeans", 2, 4)
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=10_000)
    previous = tool.result
    tool.start("kmeans", 2, 400)
    qtbot.waitUntil(lambda: not tool.busy, timeout=10_000)
    assert "larger than" in tool.message.text() and "kept" in tool.message.text()
    assert tool.result is previous and list(tool.curves["within"].getData()[0]) == [2, 3, 4]
    assert tool.apply_button.isEnabled()
    assert tool.start("kmeans", 5, 2) is None and "empty" in tool.message.text()


def test_a_clustering_can_be_drawn_on_any_map_of_the_same_points(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    first = wait_last_run(qtbot, w)
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    second = w.run_algorithm("pca", {"whiten": True})
    wait_last_run(qtbot, w)
    w.session.set_current_run(km.id)
    view, overlay = w.map_view, w.cluster_overlay
    assert view.run is km and np.allclose(view.xy, second.embedding[:, :2])  # the latest map
    combo = overlay.map_combo
    assert not combo.isHidden() and combo.count() == 3
    combo.setCurrentIndex(combo.findData(first.id))
    combo.activated.emit(combo.currentIndex())
    assert km.meta["map_run"] == first.id and np.allclose(view.xy, first.embedding[:, :2])
    assert f"run #{first.id}" in view.title_label.text() and len(view.coloring.names) == 3
    qtbot.waitUntil(lambda: not overlay.busy and overlay.centres is not None and overlay.centres_run is km,
                    timeout=15_000)
    assert np.allclose(overlay.centres.xy, first.estimator.extend(km.estimator.cluster_centers_)[:, :2])


def test_choose_k_says_when_the_columns_scales_differ(qtbot, make_window, host):
    """On wine-like data one column outweighs the others (issue 23): the tool says so, naming
    the columns and the ratio, next to its suggestion."""
    from manifold_studio.analysis.scales import scale_advice
    from manifold_studio.data import Dataset

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(750, 300, size=150), rng.normal(1.0, 0.2, size=150), rng.normal(size=150)])
    advice = scale_advice(X, ["proline", "hue", "x"])
    assert advice is not None and (advice.widest, advice.narrowest) == ("proline", "hue")
    assert 1000 < advice.ratio < 2000
    assert scale_advice(X / X.std(axis=0)) is None
    w = make_window(host)
    w.session.add_dataset(Dataset("winelike", X, feature_names=["proline", "hue", "x"]))
    w.choose_k_action.trigger()
    tool = w.choose_k_tool
    tool.start("kmeans", 2, 4)
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=30_000)
    text = tool.message.text()
    assert "'proline'" in text and "'hue'" in text and "Standardize" in text
