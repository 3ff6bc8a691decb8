"""Wine in the window (issue 30): the preparation chain is session state saved in the project,
and the views of a run say and use what it was fitted on; a cut is run state (undoable) that
the title, the CSV export and the project follow. Driven by pytest-qt on the real main window.

Coherence of two state elements (rows) with their consumers (columns); each cell names the test
that checks the consumer shows what the state says (``S:`` tests/session/test_analysis_state.py,
``G:`` this module, ``D:`` tests/gui/test_gui_dendrogram_cut.py):

========  ==========================================  ===========================  ==================  ======================
state     views                                       save / reopen                CSV export          report / undo
========  ==========================================  ===========================  ==================  ======================
chain     map (PCA of the prepared data), silhouette, G: chain_saved_reopened…;    (no chain column)   S: chain_is_a_command…
          PCA loadings / biplot, prepared columns of  S: project_keeps_the_chain…                      G: wine_standardized…
          distribution / scatter, cluster centres     (a step not installed: S)                        (Edit ▸ Undo)
          — G: wine_standardized…, feature_views…,
          chained_clustering…; CLI --plot: S
cut       map colours and title (n_clusters=4),       S: project_keeps_the_chain…  G: cut_changes…;    S: cut_is_run_state…
          dendrogram line and k box                   D                            D                   (report facts, undo);
          — G: cut_changes…, a_chosen_k…                                                               G: cut_changes…
========  ==========================================  ===========================  ==================  ======================

Script export and replay of the chain and the cut are covered where they are written (the
script writer reads ``run.meta["chain"]``, ``run.cut_labels`` and ``run.meta["cut"]``).
"""
from __future__ import annotations

import csv

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")
sklearn_metrics = pytest.importorskip("sklearn.metrics")
sklearn_pre = pytest.importorskip("sklearn.preprocessing")
sklearn_decomp = pytest.importorskip("sklearn.decomposition")

from PySide6.QtCore import Qt  # noqa: E402
from scipy.cluster import hierarchy  # noqa: E402

from manifold_studio.analysis.compare_clusterings import compare_on_dataset  # noqa: E402
from manifold_studio.gui.undo import remove_dataset  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 900)
STANDARDIZE = ("standardize", {"with_mean": True, "with_std": True})


@pytest.fixture
def host():
    return discovered_host(("kmeans", "pca", "hierarchical"), ("wine",))


def _run(qtbot, w, algo, **params):
    w.algorithm_panel.select_algorithm(algo)
    for name, value in params.items():
        w.algorithm_panel.form.editor(name).set_value(value)
    assert w.run_controls.run_button.isEnabled(), w.run_blocker()
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    return wait_last_run(qtbot, w, timeout=30_000)


def _same_up_to_sign(a, b):
    for j in range(b.shape[1]):
        s = np.sign(a[:, j] @ b[:, j]) or 1.0
        np.testing.assert_allclose(a[:, j] * s, b[:, j], atol=1e-8)


def test_wine_standardized_kmeans_map_silhouette_and_pca_views(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:wine")
    ds = w.session.dataset()
    prep = w.preparation_panel
    qtbot.mouseClick(prep.advice_button, Qt.MouseButton.LeftButton)  # Add standardize
    assert w.session.chain == [STANDARDIZE] and prep.list.count() == 1
    # the chain is a command: Edit ▸ Undo removes the step, Redo brings it back
    w.undo_stack.undo()
    assert w.session.chain == [] and prep.list.count() == 0 and prep.chain() == []
    w.undo_stack.redo()
    assert prep.chain() == [STANDARDIZE] and prep.list.count() == 1

    run = _run(qtbot, w, "kmeans", n_clusters=3, random_state=0)
    Z = sklearn_pre.StandardScaler().fit_transform(ds.X)
    # the map: the PCA of the standardized data, said so
    view = w.map_view
    qtbot.waitUntil(lambda: view.run is run and len(view.xy) == 178, timeout=10_000)
    ref = sklearn_decomp.PCA(2).fit(Z)
    _same_up_to_sign(view.xy, ref.transform(Z))
    assert "standardize, 13 columns" in view.title_label.text()
    assert view.plot_item.getAxis("bottom").labelText.startswith(f"PC1 ({ref.explained_variance_ratio_[0]:.0%}")
    # the silhouette: on the standardized data, equal to scikit-learn's and compare_clusterings'
    sil = w.views["silhouette"]
    qtbot.waitUntil(lambda: sil.run is run and sil.result is not None, timeout=10_000)
    expected = sklearn_metrics.silhouette_score(Z, run.labels)
    cmp = compare_on_dataset(["kmeans"], ds, [3], chain=[STANDARDIZE], seed=0, validation=None)
    assert np.array_equal(cmp.row("kmeans", 3).labels, run.labels)
    assert abs(sil.result.mean - expected) < 1e-12
    assert abs(sil.result.mean - cmp.row("kmeans", 3).measures["silhouette"]) < 1e-12
    assert "standardize, 13 columns" in sil.info.text()
    # PCA loadings / biplot: of the standardized columns
    pca_view = w.views["pca_loadings"]
    pca_view.show_run(run, ds)
    pca_view.redraw()
    qtbot.waitUntil(lambda: pca_view.result is not None, timeout=10_000)
    np.testing.assert_allclose(pca_view.result.explained_variance_ratio, ref.explained_variance_ratio_, atol=1e-10)
    assert "standardize, 13 columns" in pca_view.info.text()
    # the biplot's points are the data set's classes, not the run's clusters: the caption says so
    pca_view.mode_combo.setCurrentIndex(pca_view.mode_combo.findText("biplot"))
    qtbot.waitUntil(lambda: pca_view.mode == "biplot" and len(pca_view.xy) == 178, timeout=10_000)
    assert "Points coloured by cultivar (the data set's classes)." in pca_view.info.text()


def test_chain_saved_reopened_and_run_gives_the_same_labels(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    w.session.load("sample:wine")
    w.preparation_panel.add_step("standardize")
    run = _run(qtbot, w, "kmeans", n_clusters=3, random_state=0)
    # save, reopen in another window: the dock shows standardize and the next Run uses it
    path = tmp_path / "wine.msproj"
    w.project.save_project(path)
    wait_idle(qtbot, w)
    other = make_window(host)
    other.project.open_project(path)
    wait_idle(qtbot, other)
    assert other.session.chain == [STANDARDIZE]
    assert other.preparation_panel.list.count() == 1 and other.preparation_panel.chain() == [STANDARDIZE]
    again = _run(qtbot, other, "kmeans", n_clusters=3, random_state=0)
    assert again.meta["chain"] == run.meta["chain"]
    np.testing.assert_array_equal(again.labels, run.labels)


def test_cut_changes_title_export_project_and_undo(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    w.session.load("sample:wine")
    w.preparation_panel.add_step("standardize")
    run = _run(qtbot, w, "hierarchical", n_clusters=3, method="ward")
    dend = w.views["dendrogram"]
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is run, timeout=15_000)
    Zl = run.estimator.linkage_matrix_
    hs = np.sort(Zl[:, 2])
    vb = w.map_view.plot_item.getViewBox()
    vb.setRange(xRange=(-1.0, 1.0), yRange=(-1.0, 1.0), padding=0.0)  # zoomed in
    dend.set_cut_height(float(hs[-4] + hs[-3]) / 2)  # 4 clusters
    np.testing.assert_allclose(vb.viewRange(), [[-1.0, 1.0], [-1.0, 1.0]], atol=1e-9)  # the zoom is kept
    assert np.unique(run.cut_labels).size == 4 and run.meta["cut"]["n_clusters"] == 4
    title = w.map_view.title_label.text()
    assert "n_clusters=4," in title and "n_clusters=3," not in title
    np.testing.assert_array_equal(w.map_view.color_labels, run.cut_labels)
    # the CSV export writes the cut
    out = tmp_path / "wine.csv"
    w.export.export_csv(out)
    wait_idle(qtbot, w)
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index(f"#{run.id} hierarchical cluster")
    np.testing.assert_array_equal(np.array([float(r[col]) for r in rows[1:]]), run.cut_labels)
    cut = run.cut_labels.copy()
    # Edit ▸ Undo: the run's own 3 clusters, in the title and the dendrogram; Redo: the cut again
    w.undo_stack.undo()
    assert run.cut_labels is None and "n_clusters=3," in w.map_view.title_label.text()
    assert not dend.reset_button.isEnabled()
    w.undo_stack.redo()
    np.testing.assert_array_equal(run.cut_labels, cut)
    assert "n_clusters=4," in w.map_view.title_label.text()
    # a cut on a run whose data set was removed: a clear message, nothing lost
    assert remove_dataset(w, run.dataset_name)
    dend.cut_line.setValue(float(hs[-6] + hs[-5]) / 2)
    dend.cut_line.sigPositionChangeFinished.emit(dend.cut_line)
    assert "which was removed" in w.statusBar().currentMessage()
    np.testing.assert_array_equal(run.cut_labels, cut)
    assert run.meta["cut"]["n_clusters"] == 4


def test_a_chosen_k_cuts_the_run_through_the_session(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:wine")
    run = _run(qtbot, w, "hierarchical", n_clusters=3, method="ward")
    dend = w.views["dendrogram"]
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is run, timeout=15_000)
    assert dend.k_spin.value() == 3 and dend.k_spin.maximum() == 178
    dend.k_spin.setValue(5)  # a chosen k
    Zl = run.estimator.linkage_matrix_
    expected = hierarchy.fcluster(Zl, 5, criterion="maxclust")
    assert sklearn_metrics.adjusted_rand_score(run.cut_labels, expected) == pytest.approx(1.0)
    assert run.meta["cut"]["n_clusters"] == 5 and "n_clusters=5," in w.map_view.title_label.text()
    assert hierarchy.fcluster(Zl, dend.cut_height, criterion="distance").max() == 5  # the line follows
    w.undo_stack.undo()
    assert run.cut_labels is None and dend.k_spin.value() == 3
    dend.k_spin.setValue(3)
    assert run.cut_labels is None


def test_feature_views_offer_the_run_prepared_columns_and_say_so(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:wine")
    ds = w.session.dataset()
    w.preparation_panel.add_step("standardize")
    run = _run(qtbot, w, "kmeans", n_clusters=3, random_state=0)
    Z = sklearn_pre.StandardScaler().fit_transform(ds.X)
    j = list(ds.feature_names).index("proline")
    view = w.views["distribution"]
    view.show_run(run, ds)
    view.redraw()
    name = f"#{run.id} prepared proline"
    assert name in [c.name for c in view.columns]
    np.testing.assert_allclose(view.values(name), Z[:, j], atol=1e-12)
    view.column_combo.setCurrentText(name)
    view.redraw()
    qtbot.waitUntil(lambda: view.result is not None and view.result.column == name, timeout=10_000)
    assert f"run #{run.id}'s prepared data: standardize, 13 columns" in view.info.text()
    # a run without a chain adds no prepared column
    plain = w.session.run("kmeans", chain=[], n_clusters=3, random_state=0)
    view.show_run(plain, ds)
    view.redraw()
    assert not any(" prepared " in c.name for c in view.columns)


def test_a_chained_clustering_is_drawn_on_a_map_of_the_same_prepared_data_with_its_centres(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:wine")
    raw_map = _run(qtbot, w, "pca", n_components=2)  # a map of the raw data: not what k-means will see
    w.preparation_panel.add_step("standardize")
    std_map = _run(qtbot, w, "pca", n_components=2)
    run = _run(qtbot, w, "kmeans", n_clusters=3, random_state=0)
    view, overlay = w.map_view, w.cluster_overlay
    qtbot.waitUntil(lambda: view.run is run and len(view.xy) == 178, timeout=10_000)
    assert view.map_run_for(run) is std_map and raw_map is not std_map
    np.testing.assert_allclose(view.xy, std_map.embedding, atol=1e-12)
    qtbot.waitUntil(lambda: overlay.centres_run is run and overlay.centres is not None and not overlay.busy,
                    timeout=10_000)
    centres = run.estimator.final.cluster_centers_  # in the standardized columns
    expected = std_map.estimator.final.extend(centres)
    np.testing.assert_allclose(overlay.centres.xy, expected[overlay.centres.labels], atol=1e-9)


def test_choose_k_computes_on_what_the_next_run_fits(qtbot, make_window, host):
    from manifold_studio.analysis.choose_k import choose_k

    w = make_window(host)
    w.session.load("sample:wine")
    w.preparation_panel.add_step("standardize")
    w.choose_k_action.trigger()
    tool = w.choose_k_tool
    tool.start("kmeans", 2, 4)
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=30_000)
    Z = sklearn_pre.StandardScaler().fit_transform(w.session.dataset().X)
    ref = choose_k(Z, range(2, 5), "kmeans", tool._request["params"], validation_fraction=float(tool.validation.value()),
                   random_state=int(tool.seed.value()))
    np.testing.assert_allclose(tool.result.silhouette, ref.silhouette, atol=1e-12)
    assert tool.result.suggested_k == ref.suggested_k
    assert "proline" not in tool.message.text()  # no scale advice: the chain standardizes


def test_a_project_chain_with_a_step_not_installed_is_shown_and_blocks_run(qtbot, make_window, host, tmp_path):
    from manifold_studio.project.project_file import save_project
    from manifold_studio.session.model import Session

    s = Session(host)
    s.load("sample:wine")
    s.restore_chain([STANDARDIZE, ("no_such_step", {})])
    path = save_project(s, tmp_path / "odd.msproj")
    w = make_window(host)
    job = w.project.open_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    wait_idle(qtbot, w)
    prep = w.preparation_panel
    assert prep.chain() == [STANDARDIZE, ("no_such_step", {})]  # nothing lost
    assert prep.list.count() == 2 and prep.list.item(1).text().endswith("no_such_step — not installed")
    assert "'no_such_step' is not installed" in w.run_blocker()
    assert not w.run_controls.run_button.isEnabled()
    assert any("'no_such_step'" in e.message and "not installed" in e.message for e in w.session.history)
    prep.list.setCurrentRow(1)
    prep.remove_current()  # removing it lets Run go
    assert prep.chain() == [STANDARDIZE] and not w.run_blocker()


def test_correlations_and_ranking_read_the_prepared_data(qtbot, make_window, host):
    """Correlations draw the run's prepared data and say so; Feature ranking ranks the columns
    after the current chain, and "Keep the top k" ends the chain with names that exist there."""
    from scipy import stats

    w = make_window(host)
    w.session.load("sample:wine")
    ds = w.session.dataset()
    w.preparation_panel.add_step("log")
    run = _run(qtbot, w, "kmeans", n_clusters=3, random_state=0)
    prepared = w.session.prepared_data(run.id)
    assert prepared.caption.startswith("log")
    corr = w.views["correlations"]
    corr.show_run(run, ds)
    corr.redraw()
    qtbot.waitUntil(lambda: corr.result is not None, timeout=10_000)
    res = corr.result
    a, b = (list(prepared.columns).index(res.names[i]) for i in (0, 1))
    ref = stats.pearsonr(prepared.X[:, a], prepared.X[:, b])[0]
    assert corr.image.image[0, 1] == pytest.approx(ref, abs=1e-12)
    raw = stats.pearsonr(ds.X[:, a], ds.X[:, b])[0]
    assert abs(ref - raw) > 1e-3  # the log changed it: the heatmap is not of the raw data
    assert f"run #{run.id}'s prepared data: {prepared.caption}" in corr.info.text()
    corr.show_pair(res.names[:2])  # the scatter plot shows the same prepared columns
    scatter = w.views["scatter"]
    assert scatter.x_combo.currentText() == f"#{run.id} prepared {res.names[0]}"
    # the ranking: ANOVA F of the log columns, and the top k end the chain
    rank = w.views["feature_ranking"]
    rank.redraw()
    qtbot.waitUntil(lambda: rank.ranking is not None, timeout=10_000)
    now = w.session.prepared_dataset()
    classes = np.unique(ds.labels)
    f = np.array([stats.f_oneway(*[now.X[ds.labels == c, j] for c in classes]).statistic
                  for j in range(now.X.shape[1])])
    np.testing.assert_allclose(rank.ranking.column("anova_f"), f, rtol=1e-10)
    assert f"after the current preparation chain ({now.caption})" in rank.info.text()
    assert rank.keep_top(3, "anova_f") == "preparation"
    chain = w.session.chain
    assert [s for s, _ in chain] == ["log", "select_columns"]
    names = chain[-1][1]["include"]
    assert names == [now.columns[j] for j in np.argsort(-f)[:3]]
    after = w.session.prepared_dataset()
    assert list(after.columns) == names  # the names exist at that point of the chain
    np.testing.assert_allclose(after.X, now.X[:, np.argsort(-f)[:3]], atol=1e-12)


def test_fit_on_names_the_preparation_steps_a_run_fits_through(qtbot, make_window, host):
    """The algorithm panel's "Fit on" does not say "raw data" while the chain standardizes."""
    w = make_window(host)
    w.session.load("sample:wine")
    combo = w.input_selector.combo
    assert combo.currentText() == "raw data (178 × 13)"
    w.preparation_panel.add_step("standardize")
    assert combo.currentText() == "data (178 × 13) → standardize" and w.input_selector.source_run() is None
    assert combo.itemData(0, Qt.ItemDataRole.ToolTipRole) == combo.currentText()  # whole, if the dock cuts it
    w.undo_stack.undo()  # the chain is session state: the entry follows it
    assert combo.currentText() == "raw data (178 × 13)"
