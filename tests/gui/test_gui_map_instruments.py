"""The map instruments in the real window (issue 31): what each draws, checked on its items, and
its numbers against an independent computation (pandas query, scipy, brute force, PCA)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyqtgraph as pg
import pytest
from scipy import stats
from scipy.spatial.distance import cdist

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.analysis.map_density import kde_grid  # noqa: E402
from manifold_studio.errors import ManifoldStudioError  # noqa: E402
from manifold_studio.gui.views.density_layer import DENSITY_COLOR_KEY  # noqa: E402
from manifold_studio.gui.views.neighbour_layer import FAITHFUL_COLOR_KEY  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca", "mds"), ("wine",))


def _window(qtbot, make_window, host, sample="wine", algo="pca"):
    w = make_window(host)
    w.session.load(f"sample:{sample}")
    w.session.run(algo)
    assert len(w.map_view.xy) == w.session.current_dataset.n_samples
    return w, w.map_instruments


def test_search_marks_the_rows_pandas_query_finds(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    ds = w.session.current_dataset
    mi.search.edit.setText("alcohol > 13 and hue < 1")
    mi.search.run()
    qtbot.waitUntil(lambda: mi.search.match is not None, timeout=10_000)
    frame = pd.DataFrame(ds.X, columns=ds.feature_names)
    expected = frame.eval("alcohol > 13 and hue < 1").to_numpy()
    np.testing.assert_array_equal(mi.search.match.mask, expected)
    # the marks come from a worker thread (made again there when the map changed meanwhile)
    qtbot.waitUntil(lambda: mi.search.marks.count == expected.sum(), timeout=10_000)
    assert mi.search.marks.isVisible()
    assert mi.search.count.text().startswith(f"{expected.sum()} matches")
    mi.search.select()
    np.testing.assert_array_equal(w.selection.rows(ds.name), np.flatnonzero(expected))
    mi.search.edit.setText("alcohol >")
    mi.search.run()
    qtbot.waitUntil(lambda: "Position" in mi.search.count.text(), timeout=10_000)
    assert not mi.search.marks.isVisible()


def test_density_layer_draws_shading_and_contours(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    mi.density.box.setChecked(True)
    qtbot.waitUntil(lambda: mi.density.result is not None, timeout=10_000)
    res = mi.density.result
    ref = stats.gaussian_kde(w.map_view.xy.T)
    np.testing.assert_allclose(res.grid.at(w.map_view.xy), ref(w.map_view.xy.T), rtol=0.03)
    image, curves = mi.density.items[0], mi.density.items[1:]
    assert image.image.shape == res.grid.values.shape and image in w.map_view.plot_item.items
    assert len(curves) == len(res.levels)
    x, y = curves[1].getData()
    np.testing.assert_allclose(res.grid.at(np.c_[x, y]), res.levels[1], rtol=0.05)
    z_below = image.zValue()
    mi.density.fade.setChecked(True)
    assert image.zValue() > z_below
    mi.density.per_class.setChecked(True)
    qtbot.waitUntil(lambda: mi.density.result is not None and bool(mi.density.result.class_segments), timeout=10_000)
    assert len(mi.density.result.class_segments) == 3
    mi.density.box.setChecked(False)
    assert not mi.density.items


def test_colour_by_local_density_and_faithfulness(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    view = w.map_view
    view.color_combo.setCurrentIndex(view.color_combo.findData(DENSITY_COLOR_KEY))
    qtbot.waitUntil(lambda: view._color_name == "local density (map)", timeout=10_000)
    expected = kde_grid(view.xy).at(view.xy)
    np.testing.assert_allclose(view.color_labels, expected)
    assert view.coloring.mode == "continuous"
    view.color_combo.setCurrentIndex(view.color_combo.findData(FAITHFUL_COLOR_KEY))
    qtbot.waitUntil(lambda: view._color_name.startswith("map faithfulness"), timeout=20_000)
    trust = view.color_labels
    assert trust.shape == (len(view.xy),) and 0 <= trust.min() and trust.max() <= 1
    assert view.run.summary["local_trustworthiness_k10"] == pytest.approx(trust.mean(), abs=1e-4)


def test_neighbours_of_a_clicked_point_are_the_brute_force_ones(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    ds = w.session.current_dataset
    mi.neighbours.box.setChecked(True)
    vb = w.map_view.plot_item.getViewBox()
    scene_pos = vb.mapViewToScene(pg.Point(*w.map_view.xy[5]))   # a click on row 5's point
    mi.neighbours._clicked(SimpleNamespace(button=lambda: Qt.MouseButton.LeftButton, scenePos=lambda: scene_pos))
    qtbot.waitUntil(lambda: mi.neighbours.result is not None, timeout=20_000)
    assert mi.neighbours.result.row == 5
    nb = mi.neighbours.result
    d = cdist(ds.X[5:6], ds.X)[0]
    d[5] = np.inf
    np.testing.assert_array_equal(np.sort(nb.rows), np.sort(np.argsort(d)[:10]))
    np.testing.assert_allclose(nb.distances, d[nb.rows])
    x, y = mi.neighbours.lines.getData()
    assert len(x) == 20 and np.allclose(np.c_[x[0::2], y[0::2]], w.map_view.xy[5])
    np.testing.assert_allclose(np.c_[x[1::2], y[1::2]], w.map_view.xy[nb.rows])
    assert mi.neighbours.list.count() == 11
    assert mi.index_cache is mi.neighbours.cache and len(mi.index_cache) == 1


def test_explain_panel_ranks_features_like_scipy(qtbot, make_window, host, tmp_path):
    w, mi = _window(qtbot, make_window, host)
    ds = w.session.current_dataset
    panel = mi.explain
    panel.run()
    qtbot.waitUntil(lambda: "no row is selected" in panel.status.text(), timeout=10_000)
    sel = np.flatnonzero(ds.labels.astype(str) == "1")
    w.selection.select(ds.name, sel)
    panel.run()
    qtbot.waitUntil(lambda: panel.result is not None, timeout=10_000)
    top = panel.result.rows[0]
    rest = np.setdiff1d(np.arange(ds.n_samples), sel)
    numeric = [r for r in panel.result.rows if r.feature in ds.feature_names]
    assert {r.kind for r in panel.result.rows if r.feature == "cultivar"} == {"categorical"}
    assert len(numeric) == ds.n_features
    for r in numeric:
        j = ds.feature_names.index(r.feature)
        assert r.p == pytest.approx(stats.mannwhitneyu(ds.X[sel, j], ds.X[rest, j]).pvalue)
    assert panel.table.rowCount() == len(panel.result.rows)
    assert panel.table.item(0, 0).text() == top.feature
    assert not panel.table.item(0, 9).icon().isNull()
    out = tmp_path / "explain.csv"
    panel.export_csv(str(out))
    frame = pd.read_csv(out)
    assert len(frame) == len(panel.result.rows) and frame["feature"][0] == top.feature
    exact = pd.read_csv(out, float_precision="round_trip")["p"].to_numpy()
    np.testing.assert_array_equal(exact, [r.p for r in panel.result.rows])   # full precision
    from manifold_studio.analysis.explain_selection import Explanation, ExplainRow
    panel.result = Explanation([ExplainRow("=cmd|' /C calc'!A0", "categorical", 1.0, 0.01, 0.02, "fisher",
                                           category="=1+1", mean_a=0.5, mean_b=0.1, odds_ratio=9.0)],
                               5, 10, "the rest")
    panel.export_csv(str(out))
    text = out.read_text()
    assert "'=cmd" in text and "'=1+1" in text   # no formula runs when a spreadsheet opens the file
    with pytest.raises(ManifoldStudioError, match="no/such: the folder does not exist"):
        panel.export_csv(str(tmp_path / "no" / "such" / "x.csv"))
    w.selection.select(ds.name, np.arange(ds.n_samples))
    panel.run()
    qtbot.waitUntil(lambda: "all 178 rows are selected" in panel.status.text(), timeout=10_000)


def test_explain_on_a_wide_sparse_data_set_ranks_every_feature():
    import scipy.sparse as sp

    from manifold_studio.analysis.explain_selection import MANN_WHITNEY
    from manifold_studio.data import Dataset
    from manifold_studio.gui.views.explain_panel import explain_task, spark_heights
    from manifold_studio.gui.views.map_encoding import ColumnCache
    from manifold_studio.session.model import Session
    from manifold_studio.tables.dataset_columns import SPARSE_TABLE_COLUMNS

    session = Session()
    X = sp.random(60, SPARSE_TABLE_COLUMNS + 30, density=0.3, format="csr", random_state=0) * 5
    name = session.add_dataset(Dataset("cells", X, feature_names=[f"g{j}" for j in range(X.shape[1])]))
    res, sparks = explain_task(session, name, ColumnCache(), np.arange(20), None, MANN_WHITNEY)
    assert sorted(r.feature for r in res.rows) == sorted(f"g{j}" for j in range(X.shape[1]))
    assert not any("first" in note for note in res.notes)
    D = X.toarray()
    for r, spark in zip(res.rows, sparks):   # the small plots equal the dense column's
        ha, hb = spark_heights(r, D[:, int(r.feature[1:])], np.arange(20), np.arange(20, 60))
        np.testing.assert_allclose(spark[0], ha, atol=1e-12)
        np.testing.assert_allclose(spark[1], hb, atol=1e-12)


def test_explain_panel_fills_thousands_of_rows_a_batch_per_turn(qtbot):
    from manifold_studio.analysis.explain_selection import Explanation, ExplainRow
    from manifold_studio.gui.views.explain_panel import FILL_ROWS, ExplainPanel

    panel = ExplainPanel(None, None)
    qtbot.addWidget(panel)
    rows = [ExplainRow(f"g{j}", "numeric", 1.0 / (j + 1), 0.01, 0.02, "mann-whitney", mean_a=1.0, mean_b=0.5)
            for j in range(3 * FILL_ROWS + 7)]
    sparks = [(np.full(16, 0.5), np.full(16, 0.25))] * len(rows)
    panel.show_result((Explanation(rows, 10, 20, "the rest"), sparks))
    assert panel.table.rowCount() == len(rows) and panel.table.item(FILL_ROWS - 1, 0).text() == f"g{FILL_ROWS - 1}"
    assert panel.table.item(FILL_ROWS, 0) is None          # the rest arrive over the next turns
    qtbot.waitUntil(lambda: panel.table.item(len(rows) - 1, 0) is not None, timeout=5_000)
    assert [panel.table.item(i, 0).text() for i in range(len(rows))] == [r.feature for r in rows]
    assert not panel.table.item(len(rows) - 1, 9).icon().isNull()
    panel.show_result((Explanation(rows[:3], 10, 20, "the rest"), sparks[:3]))   # a newer result stops the old fill
    qtbot.wait(50)
    assert panel.table.rowCount() == 3


def test_colour_cross_filter_and_labels_reach_every_feature_of_a_sparse_data_set(qtbot, make_window, host):
    import scipy.sparse as sp

    from manifold_studio.data import Dataset
    from manifold_studio.gui.views.column_cache import ON_DEMAND_COLUMNS, ColumnCache
    from manifold_studio.gui.views.label_layer import TEXT_FEATURES, labels_task
    from manifold_studio.gui.views.map_encoding import COLUMN_PREFIX
    from manifold_studio.tables.dataset_columns import SPARSE_TABLE_COLUMNS

    X = sp.random(120, SPARSE_TABLE_COLUMNS + 25, density=0.3, format="csr", random_state=2) * 5
    X = sp.csr_array(X)
    names = [f"g{j}" for j in range(X.shape[1])]
    far = names[-1]
    w = make_window(host)
    name = w.session.add_dataset(Dataset("cells", X, feature_names=names))
    w.session.run("pca", name)
    mi, view = w.map_instruments, w.map_view
    qtbot.waitUntil(lambda: len(view.xy) == 120, timeout=10_000)
    combo = view.color_combo
    assert combo.isEditable() and combo.completer() is not None        # searchable among thousands
    idx = combo.findData(COLUMN_PREFIX + far)
    assert idx >= 0 and combo.itemText(idx) == f"{far} (feature)"
    combo.setCurrentIndex(idx)
    np.testing.assert_array_equal(view._column_values(far), X.toarray()[view.rows, -1])
    strip = mi.cross_filter
    assert strip.column_combo.findText(far) >= 0
    strip.add_chart(far)
    qtbot.waitUntil(lambda: far in strip.plots and strip.plots[far]["all"] is not None, timeout=10_000)
    edges = np.asarray(strip.filter.chart(far).labels)
    np.testing.assert_array_equal(strip.plots[far]["all"].opts["height"], np.histogram(X.toarray()[:, -1], edges)[0])
    cache = ColumnCache()   # densified on demand, the last few kept: memory bounded
    for j in range(SPARSE_TABLE_COLUMNS, SPARSE_TABLE_COLUMNS + ON_DEMAND_COLUMNS + 4):
        np.testing.assert_array_equal(cache.find(w.session, name, names[j]).values, X.toarray()[:, j])
    assert len(cache._fetched) == ON_DEMAND_COLUMNS and cache.find(w.session, name, "nope") is None
    unnamed = w.session.add_dataset(Dataset("unnamed", X))   # a Matrix Market file: x1, x2, … as in the table
    assert cache.more_features(w.session, unnamed)[-1] == f"x{X.shape[1]}"
    np.testing.assert_array_equal(cache.find(w.session, unnamed, f"x{X.shape[1]}").values, X.toarray()[:, -1])
    # "text: features" labels rank every gene, not only the listed ones
    ds = w.session.datasets[name]
    codes = (X.toarray()[:, -1] > 0).astype(np.intp)
    cands = labels_task(ds, np.arange(120), np.asarray(view.xy), codes, None, "colours", TEXT_FEATURES)
    assert any(far in c.text for c in cands)


def test_labels_are_placed_without_overlap_and_follow_zoom(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    mi.labels.box.setChecked(True)
    qtbot.waitUntil(lambda: bool(mi.labels.candidates) and bool(mi.labels.shown), timeout=20_000)
    shown = [mi.labels.items[i] for i in range(len(mi.labels.shown))]
    assert all(item.isVisible() for item in shown)
    texts = {item.toPlainText() for item in shown}
    assert texts and all("%" in t for t in texts)
    rects = [item.mapRectToScene(item.boundingRect()) for item in shown]
    for a in range(len(rects)):
        for b in range(a + 1, len(rects)):
            assert not rects[a].intersects(rects[b])
    vb = w.map_view.plot_item.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    vb.setRange(xRange=(x0 * 50, x1 * 50), yRange=(y0 * 50, y1 * 50), padding=0)
    assert len(mi.labels.shown) <= len(shown)


def test_labels_of_a_continuous_colour_name_groups_not_majority_values():
    from manifold_studio.gui.views.label_layer import GROUPS_DENSITY, TEXT_MAJORITY, labels_task

    rng = np.random.default_rng(0)
    xy = np.r_[rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 8]
    rows = np.arange(400)
    density = rng.random(400)   # e.g. coloured by local density or faithfulness: no classes
    texts = {c.text for c in labels_task(None, rows, xy, None, density, GROUPS_DENSITY, TEXT_MAJORITY)}
    assert texts == {"group 1", "group 2"}
    kinds = np.where(xy[:, 0] > 4, "far", "near").astype(object)   # coloured by a categorical column
    codes = (xy[:, 0] > 4).astype(np.intp)
    texts = {c.text for c in labels_task(None, rows, xy, codes, kinds, GROUPS_DENSITY, TEXT_MAJORITY)}
    assert texts == {"near (100 %)", "far (100 %)"}


def test_inverse_map_decodes_like_pca_and_walks(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    run = w.map_view.run
    inv = mi.inverse
    assert "decodes" in inv.status_text()
    row = inv.decode_at(1.0, -2.0)
    codes = np.zeros((1, run.embedding.shape[1]))
    codes[0, :2] = (1.0, -2.0)
    codes[0, 2:] = run.embedding[:, 2:].mean(axis=0)
    np.testing.assert_allclose(row, run.estimator.inverse_transform(codes)[0])
    assert inv.table.rowCount() == w.session.current_dataset.n_features
    inv.set_end(0, (0.0, 0.0))
    inv.set_end(1, (10.0, 5.0))
    inv.walk()
    assert inv.table.columnCount() == 1 + inv.steps.value()
    w.session.run("mds")   # classical MDS has no inverse: it says so, and decoding draws nothing
    assert w.map_view.run.algorithm_id == "mds"
    assert "cannot decode" in inv.status_text()
    assert inv.decode_at(0.0, 0.0) is None and "cannot decode" in inv.status.text()


def test_cross_filters_dim_the_map_and_become_a_selection(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    ds = w.session.current_dataset
    strip = mi.cross_filter
    strip.add_chart("alcohol")
    strip.add_chart("cultivar")   # at once: both charts arrive
    qtbot.waitUntil(lambda: "alcohol" in strip.plots and "cultivar" in strip.plots, timeout=10_000)
    # the bars come with the counts, from a worker thread
    qtbot.waitUntil(lambda: all(strip.plots[c]["all"] is not None for c in ("alcohol", "cultivar")), timeout=10_000)
    alcohol = ds.X[:, ds.feature_names.index("alcohol")]
    heights = strip.plots["alcohol"]["all"].opts["height"]
    np.testing.assert_array_equal(heights, np.histogram(alcohol, np.asarray(strip.filter.chart("alcohol").labels))[0])
    assert not strip.veil.isVisible()
    strip.plots["alcohol"]["region"].setRegion((12.0, 13.0))
    qtbot.waitUntil(lambda: strip.passing is not None, timeout=5_000)
    labels = strip.filter.chart("cultivar").labels
    strip.filter.toggle_category("cultivar", labels.index("1"))
    strip.update_counts()
    expected = (alcohol >= 12.0) & (alcohol <= 13.0) & (ds.labels.astype(str) == "1")
    np.testing.assert_array_equal(strip.passing, expected)
    assert strip.veil.isVisible() and strip.marks.count == expected.sum()
    cultivar_bars = strip.plots["cultivar"]["pass"].opts["height"]
    in_range = ds.labels[(alcohol >= 12.0) & (alcohol <= 13.0)].astype(str)
    assert cultivar_bars[labels.index("1")] == (in_range == "1").sum() and cultivar_bars.sum() == expected.sum()
    strip.select_filtered()
    np.testing.assert_array_equal(w.selection.rows(ds.name), np.flatnonzero(expected))
    strip.clear_filters()
    assert strip.passing is None and not strip.veil.isVisible()
    said = []
    w.show_status = lambda text, *a, **k: said.append(text)
    strip.add_chart("alcohl")
    assert said == [strip.status.text()] and said[0].startswith(
        "Cross-filters: there is no column 'alcohl'; the columns are 'alcohol', 'malic_acid'")
    assert set(strip.plots) == {"alcohol", "cultivar"}


def test_settings_round_trip_in_one_window(qtbot, make_window, host):
    w, mi = _window(qtbot, make_window, host)
    mi.density.slider.setValue(150)
    mi.labels.text_combo.setCurrentIndex(1)
    mi.neighbours.k_spin.setValue(7)
    mi.search.edit.setText("hue < 1")
    saved = mi.settings()
    mi.density.slider.setValue(60)
    mi.labels.text_combo.setCurrentIndex(0)
    mi.neighbours.k_spin.setValue(3)
    mi.search.edit.setText("")
    mi.apply_settings(saved)
    assert mi.settings() == saved
    mi.density.per_class.setChecked(True)
    mi.apply_settings({"density": "nonsense", "labels": {"groups": 12, "on": "yes"},
                       "neighbours": {"k": "7"}, "cross_filter": [{"column": 3}]})
    after = mi.settings()   # invalid entries are ignored, missing ones leave things as they are
    assert after["density"] == {**saved["density"], "per_class": True}
    assert after["labels"] == saved["labels"] and after["neighbours"] == saved["neighbours"]


@pytest.mark.slow
def test_instruments_are_saved_with_the_project_and_added_to_the_report(qtbot, make_window, host, tmp_path):
    from gui_helpers import wait_idle

    w, mi = _window(qtbot, make_window, host)
    ds = w.session.current_dataset
    mi.density.slider.setValue(150)
    mi.density.box.setChecked(True)
    mi.search.edit.setText("hue < 1")
    mi.search.run()
    mi.cross_filter.add_chart("alcohol")
    qtbot.waitUntil(lambda: "alcohol" in mi.cross_filter.plots and mi.density.result is not None, timeout=10_000)
    mi.cross_filter.filter.set_range("alcohol", 12.0, 13.0)
    w.selection.select(ds.name, np.arange(40))
    mi.explain.run()
    qtbot.waitUntil(lambda: mi.explain.result is not None, timeout=10_000)
    mi.tabs.setCurrentWidget(mi.explain)
    item = mi.tabs.report_item("wine explained", None)
    facts = dict(item.facts)
    assert item.title == "Map instruments — Explain selection"
    assert facts["compared"].startswith("40 selected rows") and len(item.facts) > 5
    w.window_layout.open("map_instruments")  # View ▸ Map instruments (hidden until opened, issue 33)
    added = w.report_actions.add_view("map_instruments", caption="wine explained")
    assert added is not None and added.image is not None and dict(added.facts) == facts
    path = tmp_path / "instruments.msproj"
    job = w.project.save_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    w2 = make_window(host)
    job = w2.project.open_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    wait_idle(qtbot, w2)
    mi2 = w2.map_instruments
    assert mi2.density.box.isChecked() and mi2.density.slider.value() == 150
    assert mi2.search.edit.text() == "hue < 1"
    qtbot.waitUntil(lambda: "alcohol" in mi2.cross_filter.plots, timeout=10_000)
    assert mi2.cross_filter.filter.chart("alcohol").filter == (12.0, 13.0)
    assert mi2.settings()["cross_filter"] == mi.settings()["cross_filter"]


def test_many_marks_are_drawn_as_one_image_of_the_marked_cells(qtbot, make_window, host, monkeypatch):
    from manifold_studio.gui.views import mark_layer

    monkeypatch.setattr(mark_layer, "FEW_POINTS", 10)   # wine's 178 points stand in for a million
    w, mi = _window(qtbot, make_window, host)
    ds = w.session.current_dataset
    mi.search.edit.setText("hue < 1")
    mi.search.run()
    qtbot.waitUntil(lambda: mi.search.match is not None, timeout=10_000)
    marks = mi.search.marks
    expected = ds.X[:, ds.feature_names.index("hue")] < 1
    qtbot.waitUntil(lambda: marks.count == expected.sum() > 10, timeout=10_000)
    assert marks.image.isVisible() and not marks.points.isVisible()
    (x0, x1), (y0, y1) = w.map_view.plot_item.getViewBox().viewRange()
    xy = w.map_view.xy
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    assert marks.image.total() == (expected & inside).sum()   # every marked point in the view, once
