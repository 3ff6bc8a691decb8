"""Selection and linked brushing in the real window (pytest-qt, offscreen).

A lasso drawn with synthetic mouse events on the map's viewport selects exactly the rows whose
points lie inside it (compared with an independent point-in-polygon computation) and a second
map of the same data set highlights the same rows; modifiers add / remove / toggle; the
Selection menu makes a subset data set with its provenance, labels the selection, extends the
fitted model to it; the silhouette and dendrogram views follow the selection; bad input
(nothing selected, everything selected on a million points, labelling with the existing label
column's name) gets a clear message.
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
import pytest

from gui_helpers import wait_idle, wait_last_run
from geometry import brute_inside

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QMouseEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from manifold_studio.session import selection as ops  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.selection_actions import SELECT_FIRST, install_selection_actions  # noqa: E402
from manifold_studio.gui.views.selection_overlay import (  # noqa: E402
    LASSO, PAN, RECT, SelectionOverlay, install_selection,
)

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)
L = Qt.MouseButton.LeftButton
NOB = Qt.MouseButton.NoButton
NOMOD = Qt.KeyboardModifier.NoModifier


def _window(qtbot, make_window, host, sample="iris", options=None, algo="pca"):
    w = make_window(host)
    overlay = getattr(w, "map_selection", None) or install_selection(w)
    actions = getattr(w, "selection_actions", None) or install_selection_actions(w)
    if sample is not None:  # synchronous load and fit: the map shows the run at once
        w.session.load(f"sample:{sample}", **(options or {}))
        w.session.run(algo)
        assert w.map_view.run is not None and len(w.map_view.xy) == w.session.current_dataset.n_samples
    return w, overlay, actions


def _mouse(widget, kind, pos: QPoint, buttons, button=L, mods=NOMOD):
    """One synthetic mouse event on ``widget`` (pyqtgraph drops moves < 10 ms apart: wait)."""
    time.sleep(0.012)
    ev = QMouseEvent(kind, QPointF(pos), QPointF(widget.mapToGlobal(pos)), button, buttons, mods)
    QApplication.sendEvent(widget, ev)


def _drag(plot, path: list[QPoint], mods=NOMOD):
    """Press at path[0], move along the path, release at its end: real viewport events."""
    vp = plot.viewport()
    _mouse(vp, QEvent.Type.MouseButtonPress, path[0], L, L, mods)
    for p in path[1:]:
        _mouse(vp, QEvent.Type.MouseMove, p, L, NOB, mods)
    _mouse(vp, QEvent.Type.MouseButtonRelease, path[-1], NOB, L, mods)


def _to_widget(plot, x, y) -> QPoint:
    vb = plot.getPlotItem().getViewBox()
    return plot.mapFromScene(vb.mapViewToScene(QPointF(x, y)))


def _to_data(plot, p: QPoint):
    vb = plot.getPlotItem().getViewBox()
    q = vb.mapSceneToView(plot.mapToScene(p))
    return q.x(), q.y()


def _lasso_path(plot, cx, cy, r, n=40):
    """A closed, concave lasso around (cx, cy) in widget pixels (integer positions)."""
    t = np.linspace(0, 2 * np.pi, n)
    rr = r * (1 + 0.35 * np.sin(3 * t))
    c = _to_widget(plot, cx, cy)
    return [QPoint(int(c.x() + a * np.cos(s)), int(c.y() + a * np.sin(s))) for a, s in zip(rr, t)]


def _second_map(qtbot, w, name, xy):
    """Another plot of the same data set (other coordinates, rows in reverse order)."""
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    rows = np.arange(len(xy))[::-1].copy()
    pts = np.asarray(xy)[rows]
    plot.addItem(pg.ScatterPlotItem(x=pts[:, 0], y=pts[:, 1]))
    overlay = SelectionOverlay(w, plot, lambda: (pts, rows, name))
    overlay.refresh()
    return overlay, rows


def test_lasso_with_mouse_events_selects_the_rows_inside_and_a_second_map_highlights_them(
        qtbot, make_window, fresh_host):
    w, ov, _actions = _window(qtbot, make_window, fresh_host)
    view, ds = w.map_view, w.session.current_dataset
    plot = view.plot
    assert ov.bar.parent() is not None and ov.mode == PAN
    qtbot.waitExposed(w)
    view.plot_item.autoRange()
    ov.set_mode(LASSO)
    cx, cy = np.median(view.xy, axis=0)
    span = float(np.ptp(view.xy[:, 0]))
    path = _lasso_path(plot, cx, cy, 0.12 * plot.viewport().width() * 1.0)
    _drag(plot, path)
    # independent computation: the same screen points mapped to data coordinates by hand
    poly = np.array([_to_data(plot, p) for p in path])
    expected = np.sort(view.rows[brute_inside(view.xy, poly)])
    got = w.selection.rows(ds.name)
    assert 5 < got.size < ds.n_samples and span > 0
    assert np.array_equal(got, expected)
    # the map highlights exactly these rows
    assert np.array_equal(np.sort(view.rows[ov.highlighted]), expected)
    # a second map of the same data set (other coordinates, other order) highlights the same rows
    second, rows2 = _second_map(qtbot, w, ds.name, ds.X[:, 2:4])
    assert np.array_equal(np.sort(rows2[second.highlighted]), expected)
    # and the Table dock highlights exactly these rows (cells painted from the same selection)
    table = w.data_table
    w.window_layout.open("table")  # View ▸ Table (hidden until opened, issue 33)
    qtbot.waitUntil(table.isVisible, timeout=5_000)
    assert np.array_equal(np.sort(table.selected_rows()), expected)
    model = table.model
    painted = [int(model.data(model.index(p, 0))) for p in range(model.rowCount())
               if model.data(model.index(p, 1), Qt.ItemDataRole.BackgroundRole) is not None]
    assert np.array_equal(np.sort(painted), expected)
    assert w.statusBar().currentMessage() == f"{ds.name}: {len(expected)} of 150 rows selected"
    # the highlight layer is drawn over the map's points
    assert ov._highlight.scene() is plot.scene() and ov._highlight.zValue() > 10
    n_hl = len(ov._highlight.data)
    assert n_hl == len(expected)
    # each selected point is redrawn in its own colour (over the veil of "dim others")
    fills = [tuple(b.color().getRgb()[:3]) for b in ov._highlight.data["brush"]]
    codes = view.coloring.codes[ov.highlighted]
    assert fills == [tuple(int(v) for v in view.coloring.colors[c]) for c in codes]


def test_rectangle_with_modifiers_adds_removes_toggles(qtbot, make_window, fresh_host):
    w, ov, _actions = _window(qtbot, make_window, fresh_host)
    view, name = w.map_view, w.session.current_dataset_name
    plot = view.plot
    qtbot.waitExposed(w)
    view.plot_item.autoRange()
    ov.set_mode(RECT)
    xy, rows = view.xy, view.rows
    x0, x1 = np.percentile(xy[:, 0], [10, 50])
    y0, y1 = np.percentile(xy[:, 1], [5, 95])

    def rect_drag(a, b, mods=NOMOD):
        pa, pb = _to_widget(plot, *a), _to_widget(plot, *b)
        steps = [QPoint(int(pa.x() + (pb.x() - pa.x()) * t), int(pa.y() + (pb.y() - pa.y()) * t))
                 for t in np.linspace(0, 1, 6)]
        _drag(plot, steps, mods)
        (dx0, dy0), (dx1, dy1) = _to_data(plot, steps[0]), _to_data(plot, steps[-1])
        return set(rows[ops.points_in_rect(xy, dx0, dy0, dx1, dy1)].tolist())

    first = rect_drag((x0, y0), (x1, y1))
    assert set(w.selection.rows(name).tolist()) == first and first
    xa, xb = np.percentile(xy[:, 0], [40, 80])
    second = rect_drag((xa, y0), (xb, y1), Qt.KeyboardModifier.ShiftModifier)  # add
    assert set(w.selection.rows(name).tolist()) == first | second
    third = rect_drag((x0, y0), (xa, y1), Qt.KeyboardModifier.AltModifier)  # remove
    assert set(w.selection.rows(name).tolist()) == (first | second) - third
    fourth = rect_drag((xa, y0), (xb, y1), Qt.KeyboardModifier.ControlModifier)  # toggle
    assert set(w.selection.rows(name).tolist()) == ((first | second) - third) ^ fourth
    # the overlay's own handlers, driven with scene positions, do the same as real events
    before = set(w.selection.rows(name).tolist())
    sa = view.plot_item.getViewBox().mapViewToScene(QPointF(x0, y0))
    sb = view.plot_item.getViewBox().mapViewToScene(QPointF(x1, y1))
    ov.press(sa)
    ov.move(sb)
    hit = ov.release(sb, Qt.KeyboardModifier.ShiftModifier)
    assert set(w.selection.rows(name).tolist()) == before | set(hit.tolist())


def test_empty_rectangle_clears_and_actions_say_select_first(qtbot, make_window, fresh_host):
    w, ov, actions = _window(qtbot, make_window, fresh_host)
    name = w.session.current_dataset_name
    w.selection.select(name, [1, 2, 3])
    assert actions.subset_action.isEnabled() and actions.label_action.isEnabled()
    far = 1e6 + np.abs(w.map_view.xy).max()
    hit = ov.select_rect(far, far, far + 1, far + 1)  # nothing inside
    assert hit.size == 0 and w.selection.count(name) == 0
    assert "nothing selected" in w.statusBar().currentMessage()
    assert not actions.subset_action.isEnabled() and not actions.label_action.isEnabled()
    assert not actions.extend_action.isEnabled()
    assert actions.subset_action.toolTip() == SELECT_FIRST
    n_sets = len(w.session.datasets)
    assert actions.new_dataset() is None and len(w.session.datasets) == n_sets
    assert w.statusBar().currentMessage() == SELECT_FIRST
    assert actions.label_selection("species", "x") is False
    assert actions.extend_selection() is None
    # an empty lasso with Shift leaves the selection as it was, and says so
    w.selection.select(name, [4])
    ov.select_polygon([[far, far], [far + 1, far], [far, far + 1]], ops.ADD)
    assert w.selection.rows(name).tolist() == [4]
    assert "unchanged" in w.statusBar().currentMessage()
    # a click on empty space in a selection mode clears
    ov.set_mode(RECT)
    ov.click_at(far, far)
    assert w.selection.count(name) == 0


def test_select_all_invert_clear_from_the_menu(qtbot, make_window, fresh_host):
    w, ov, actions = _window(qtbot, make_window, fresh_host)
    name = w.session.current_dataset_name
    menu = w.menus["selection"]
    titles = [a.text() for a in w.menuBar().actions()]
    assert titles.index(menu.title()) == titles.index(w.menus["help"].title()) - 1  # before Help
    assert actions.select_all_action.shortcut().toString() == "Ctrl+A"
    assert actions.invert_action.shortcut().toString() == "Ctrl+I"
    assert actions.clear_action.shortcut().toString() == "Esc"
    w.selection.select(name, [0, 5])
    actions.invert_action.trigger()
    assert w.selection.count(name) == 148 and not w.selection.mask(name)[[0, 5]].any()
    actions.select_all_action.trigger()
    assert w.selection.count(name) == 150 and len(ov.highlighted) == 150
    actions.clear_action.trigger()
    assert w.selection.count(name) == 0 and len(ov.highlighted) == 0
    # the map's right-click menu holds the Selection menu too
    vb_menu = w.map_view.plot_item.getViewBox().menu
    assert menu.menuAction() in vb_menu.actions()


def test_new_dataset_from_selection_has_the_rows_and_provenance(qtbot, make_window, fresh_host):
    w, _ov, actions = _window(qtbot, make_window, fresh_host)
    ds = w.session.current_dataset
    run = w.map_view.run
    rows = np.array([3, 7, 60, 61, 149])
    w.selection.select(ds.name, rows)
    new = actions.new_dataset()
    sub = w.session.datasets[new]
    assert new == f"{ds.name} selection" and sub.n_samples == 5
    np.testing.assert_array_equal(sub.X, ds.X[rows])
    np.testing.assert_array_equal(sub.labels, ds.labels[rows])
    line = f"rows 3, 7, 60, 61, 149 of {ds.name} (selected on the map of run #{run.id})"
    assert sub.source == line
    assert any(line in e.message and new in e.message for e in w.session.history)
    assert w.session.current_dataset_name == ds.name  # the analyst stays where they were
    assert w.selection.count(ds.name) == 5  # and keeps the selection


def test_label_the_selection_creates_then_edits_the_label_column(qtbot, make_window, fresh_host):
    w, _ov, actions = _window(qtbot, make_window, fresh_host, sample=None)
    rng = np.random.default_rng(1)
    w.session.add_dataset(Dataset("plain", rng.normal(size=(80, 3))))
    w.session.run("pca")
    ds = w.session.datasets["plain"]
    assert ds.labels is None
    w.selection.select("plain", np.arange(10))
    asked = []

    def answer(dlg):  # the analyst types in the dialog, reads its note and presses OK
        dlg.column.setCurrentText("outlier?")
        dlg.value.setCurrentText("yes")
        asked.append(dlg.note.text())
        return dlg.values()
    actions.ask_label = answer
    assert actions.label_selection()
    assert "Creates the label column 'outlier?'" in asked[0]
    assert ds.label_name == "outlier?" and ds.labels[:10].tolist() == ["yes"] * 10
    assert set(ds.labels[10:].tolist()) == {""}
    # the map recolours by the new labels
    assert w.map_view.color_labels is not None and set(w.map_view.color_labels.tolist()) == {"yes", ""}
    assert any("Labelled rows 0, 1, 2" in e.message for e in w.session.history)
    # the data table (a dock of the window) shows the new label column at once
    table = getattr(w, "data_table", None)
    if table is not None:
        w.window_layout.open("table")  # View ▸ Table (hidden until opened, issue 33)
        qtbot.waitUntil(table.isVisible, timeout=5_000)
        model = table.model
        col = model.column_index("outlier?")
        assert col is not None
        assert model.data(model.index(0, col)) == "yes" and model.data(model.index(20, col)) == ""
    # labelling with the existing label column's name edits it, and the dialog says so first
    w.selection.select("plain", [10, 11])
    asked.clear()
    assert actions.label_selection()
    assert "already this data set's label column: it is edited, not created" in asked[0]
    assert "'yes' is already a class: they join it" in asked[0]
    assert ds.labels[:12].tolist() == ["yes"] * 12 and ds.labels[12] == ""
    # cancelling the dialog changes nothing
    actions.ask_label = lambda dlg: None
    w.selection.select("plain", [20])
    assert not actions.label_selection() and ds.labels[20] == ""
    # an empty label is refused with a message
    assert not actions.label_selection("outlier?", "  ") and ds.labels[20] == ""
    assert "Type the label" in w.statusBar().currentMessage()


def test_label_dialog_on_labelled_data_offers_classes_and_never_renames(qtbot, make_window, fresh_host):
    w, _ov, actions = _window(qtbot, make_window, fresh_host)
    ds = w.session.current_dataset
    w.selection.select(ds.name, [0, 1])
    from manifold_studio.gui.selection_actions import LabelDialog
    dlg = LabelDialog(ds, 2)
    qtbot.addWidget(dlg)
    assert dlg.column.currentText() == "species"
    assert [dlg.value.itemText(i) for i in range(dlg.value.count())] == ["setosa", "versicolor", "virginica"]
    ok_button = dlg.buttons.button(dlg.buttons.StandardButton.Ok)
    assert not ok_button.isEnabled()  # no label yet
    dlg.value.setCurrentText("virginica")
    assert ok_button.isEnabled() and "join it" in dlg.note.text() and "edited, not created" in dlg.note.text()
    dlg.column.setCurrentText("kind")  # another name: a new meta column, the label column unchanged
    assert "Creates the meta column 'kind'" in dlg.note.text() and "'species' is not changed" in dlg.note.text()
    dlg.column.setCurrentText("sepal_length")
    assert not ok_button.isEnabled() and "is a feature" in dlg.note.text()
    assert actions.label_selection("species", "virginica")
    assert ds.labels[:2].tolist() == ["virginica"] * 2 and ds.label_name == "species"
    assert (ds.labels == "virginica").sum() == 52


def test_extend_the_selection_adds_an_extension_of_the_selected_rows(qtbot, make_window, fresh_host):
    w, _ov, actions = _window(qtbot, make_window, fresh_host)
    ds, run = w.session.current_dataset, w.map_view.run
    rows = np.array([2, 40, 41, 99, 120])
    w.selection.select(ds.name, rows)
    assert actions.extend_action.isEnabled()
    job = actions.extend_selection()
    assert job is not None
    qtbot.waitUntil(lambda: len(run.extensions) == 1, timeout=15_000)
    ext = run.extensions[0]
    assert ext.name == f"selection of 5 rows of {ds.name}" and ext.dataset_name == ds.name
    np.testing.assert_array_equal(ext.rows, rows)
    np.testing.assert_allclose(ext.values, run.estimator.extend(ds.X[rows]), atol=1e-10)
    wait_idle(qtbot, w)


def test_selection_survives_a_redraw_and_another_run(qtbot, make_window, fresh_host):
    w, ov, _actions = _window(qtbot, make_window, fresh_host)
    name = w.session.current_dataset_name
    rows = np.arange(0, 150, 7)
    w.selection.select(name, rows)
    view = w.map_view
    view.size_spin.setValue(view.size_spin.value() + 2)  # the map redraws its points
    assert np.array_equal(np.sort(view.rows[ov.highlighted]), rows)
    ov.bar.dim_box.setChecked(True)
    assert ov._veil is not None and ov._veil.isVisible()
    w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    assert np.array_equal(np.sort(view.rows[ov.highlighted]), rows)
    assert w.selection.rows(name).tolist() == rows.tolist()
    w.selection.clear(name)
    assert not ov._veil.isVisible()


# -- linked views: silhouette and dendrogram ---------------------------------------------------------
def test_silhouette_highlights_the_selection_and_selects_bars_and_clusters(qtbot, make_window, fresh_host):
    w, _ov, _actions = _window(qtbot, make_window, fresh_host)
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    sil = w.views["silhouette"]
    qtbot.waitUntil(lambda: sil.result is not None and sil.run is km, timeout=15_000)
    so = sil.selection_overlay
    name = km.dataset_name
    assert so.mode == RECT and sorted(sil.bar_rows.tolist()) == list(range(150))
    # the bars are the run's silhouettes: bar k is the row bar_rows[k]
    from manifold_studio.analysis import metrics
    s = metrics.silhouette_samples(w.session.datasets[name].X, km.labels)
    np.testing.assert_allclose(sil._bar_xy[:, 0], s[sil.bar_rows], atol=1e-12)
    # a selection made elsewhere is highlighted bar by bar
    rows = np.array([0, 1, 50, 51, 100, 149])
    w.selection.select(name, rows)
    assert sorted(sil.bar_rows[so.highlighted].tolist()) == rows.tolist()
    np.testing.assert_allclose(np.sort(so._highlight.opts["width"]), np.sort(s[rows]), atol=1e-12)
    # a rectangle over a range of bars selects their rows (whatever their value)
    y = sil._bar_xy[:, 1]
    hit = so.select_rect(-1.0, y[10] - 0.2, 1.0, y[29] + 0.2)
    assert sorted(hit.tolist()) == sorted(sil.bar_rows[10:30].tolist())
    assert sorted(w.selection.rows(name).tolist()) == sorted(sil.bar_rows[10:30].tolist())
    # a click on a bar selects its whole cluster
    k = 80
    hit = so.click_at(sil._bar_xy[k, 0] / 2, y[k])
    cluster = sil.bar_labels[k]
    assert w.selection.rows(name).tolist() == np.flatnonzero(km.labels == cluster).tolist()
    # and the map shows the same rows
    assert np.array_equal(np.sort(w.map_view.rows[w.map_selection.highlighted]), w.selection.rows(name))


def test_dendrogram_marks_leaves_of_selected_rows_and_click_selects_a_subtree(qtbot, make_window, fresh_host):
    from scipy.cluster import hierarchy
    w, _ov, _actions = _window(qtbot, make_window, fresh_host)
    h = w.run_algorithm("hierarchical", {"n_clusters": 3, "method": "ward"})
    wait_last_run(qtbot, w)
    dend = w.views["dendrogram"]
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is h and len(dend.leaf_of_point) > 0, timeout=15_000)
    Z = h.estimator.linkage_matrix_
    assert dend.result.truncated  # 150 points, 80 leaves drawn
    # independent: the members of each drawn subtree from scipy's tree
    drawn = hierarchy.dendrogram(Z, truncate_mode="lastp", p=dend.result.n_leaves, no_plot=True)["leaves"]
    nodes = hierarchy.to_tree(Z, rd=True)[1]
    expected = np.empty(150, dtype=int)
    for pos, node in enumerate(drawn):
        expected[nodes[node].pre_order()] = pos
    assert np.array_equal(dend.leaf_of_point, expected)
    name = h.dataset_name
    rows = np.flatnonzero(expected == 7)[:1].tolist() + np.flatnonzero(expected == 20).tolist()
    w.selection.select(name, rows)
    sizes = np.bincount(expected, minlength=dend.result.n_leaves)
    want = np.zeros(dend.result.n_leaves)
    want[7] = 1 / sizes[7]
    want[20] = 1.0
    np.testing.assert_allclose(dend.leaf_fraction, want)
    marks = dend.selection_overlay._highlight.getData()[0]
    assert sorted(marks.tolist()) == [75.0, 205.0]  # under leaves 7 and 20
    # a click at a merge's height above leaf 0 selects the subtree under it
    height = float(np.sort(Z[:, 2])[-4])  # the 4th highest merge
    dend.selection_overlay.click_at(5.0, height)
    flat = hierarchy.fcluster(Z, height, criterion="distance")
    members = flat == flat[np.flatnonzero(expected == 0)[0]]
    assert w.selection.rows(name).tolist() == np.flatnonzero(members).tolist()
    assert 1 < members.sum() < 150
    # a rectangle selects the rows of the leaves under it
    dend.selection_overlay.select_rect(0.0, 1.0, 30.0, 2.0)  # leaves 0, 1, 2
    assert w.selection.rows(name).tolist() == np.flatnonzero(expected <= 2).tolist()


# -- a million points ------------------------------------------------------------------------------
def test_a_million_points_select_all_lasso_and_subset_stay_fast(qtbot, make_window, fresh_host):
    """Bad input "selecting everything on a million points": select all, a lasso of ~100,000
    points and a rectangle, each timed from the gesture to the highlighted map (printed, bounded
    loosely: the machine is shared), then "New data set from selection" of every row."""
    w, ov, actions = _window(qtbot, make_window, fresh_host, sample=None)
    rng = np.random.default_rng(3)
    n = 1_000_000
    w.session.add_dataset(Dataset("million", rng.normal(size=(n, 2))))
    w.session.run("pca")
    view = w.map_view
    assert len(view.xy) == n and view.uses_fast_path

    paints = []

    def timed(fn, *args):
        """(result, seconds from the call to the highlight built); the repaint that follows
        (Qt drawing the map and the highlight offscreen) is recorded in ``paints``."""
        QApplication.processEvents()
        t0 = time.perf_counter()
        out = fn(*args)
        t1 = time.perf_counter()
        view.plot.grab()  # a full repaint of the map with its highlight
        paints.append(time.perf_counter() - t1)
        return out, t1 - t0

    _none, t_all = timed(actions.select_all_action.trigger)
    assert w.selection.count("million") == n and len(ov.highlighted) == n
    assert "1,000,000 of 1,000,000 rows selected" in w.statusBar().currentMessage()
    t = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    cx, cy = np.median(view.xy, axis=0)
    r = 0.459 * np.std(view.xy[:, 0])  # 1 - exp(-r²/2) = 10 % of a standard normal cloud
    poly = np.c_[cx + r * np.cos(t), cy + r * np.sin(t)]
    hit, t_lasso = timed(ov.select_polygon, poly)
    assert 95_000 < hit.size < 105_000
    assert np.array_equal(w.selection.rows("million"), np.sort(hit))
    assert len(ov.highlighted) == hit.size
    x0, x1 = np.percentile(view.xy[:, 0], [40, 60])
    hit_r, t_rect = timed(ov.select_rect, x0, -1e9, x1, 1e9)
    assert abs(hit_r.size - 200_000) < 2_000
    print(f"\n1,000,000 points, gesture to highlight built (then one full repaint of the map): "
          f"select all {t_all * 1000:.0f} ms ({paints[0] * 1000:.0f} ms), "
          f"lasso (400 vertices, {hit.size:,} points) {t_lasso * 1000:.0f} ms ({paints[1] * 1000:.0f} ms), "
          f"rectangle ({hit_r.size:,} points) {t_rect * 1000:.0f} ms ({paints[2] * 1000:.0f} ms)")
    assert max(t_all, t_lasso, t_rect) < 5.0  # loose: a shared 2-core machine; figures are printed
    # New data set from selection with every row
    actions.select_all()
    new, t_subset = timed(actions.new_dataset)
    sub = w.session.datasets[new]
    assert sub.n_samples == n and np.array_equal(sub.X, w.session.datasets["million"].X)
    assert sub.source.startswith("rows 0, 1, 2, 3, 4, 5, … (1,000,000 rows) of million")
    print(f"new data set from 1,000,000 selected rows: {t_subset * 1000:.0f} ms")
    assert "million" in w.session.datasets  # nothing lost


def test_grid_of_plots_shares_one_mode_bar_and_the_selection(qtbot, make_window, fresh_host):
    """The comparison grid's use: several PlotItems in one GraphicsLayoutWidget, one overlay each,
    one mode bar; a selection on one small map is highlighted on the others and on the main map."""
    w, main_ov, _actions = _window(qtbot, make_window, fresh_host)
    ds = w.session.current_dataset
    grid = pg.GraphicsLayoutWidget()
    qtbot.addWidget(grid)
    grid.resize(800, 400)
    grid.show()
    overlays = []
    for j in range(2):
        item = grid.addPlot(row=0, col=j)
        xy = ds.X[:, 2 * j:2 * j + 2]
        item.addItem(pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1]))
        overlays.append(SelectionOverlay(w, item, lambda xy=xy: (xy, np.arange(len(xy)), ds.name)))
    first, second = overlays
    second.follow(first.bar)
    first.set_mode(LASSO)
    assert second.mode == LASSO
    # a rectangle on the second small map, through its own handlers with scene positions
    second.bar.set_mode(RECT)
    qtbot.waitExposed(grid)
    vb = second.vb
    x0, x1 = np.percentile(ds.X[:, 2], [20, 60])
    y0, y1 = np.percentile(ds.X[:, 3], [0, 100])
    second.press(vb.mapViewToScene(QPointF(x0, y0)))
    second.move(vb.mapViewToScene(QPointF(x1, y1)))
    hit = second.release(vb.mapViewToScene(QPointF(x1, y1)))
    want = ops.points_in_rect(ds.X[:, 2:4], x0, y0, x1, y1)
    assert np.array_equal(np.sort(hit), want) and want.size
    assert np.array_equal(first.highlighted, want) and np.array_equal(second.highlighted, want)
    assert np.array_equal(np.sort(w.map_view.rows[main_ov.highlighted]), want)
    # one Invert on the shared bar inverts once
    first.bar.buttons["invert"].click()
    assert w.selection.count(ds.name) == 150 - want.size


def test_mode_keys_act_on_the_focused_plot(qtbot, make_window, fresh_host):
    from PySide6.QtTest import QTest
    w, ov, _actions = _window(qtbot, make_window, fresh_host, sample=None)
    plot = w.map_view.plot
    w.activateWindow()
    plot.setFocus()
    qtbot.waitUntil(lambda: plot.hasFocus(), timeout=5_000)
    QTest.keyClick(plot, Qt.Key.Key_L)
    assert ov.mode == LASSO
    QTest.keyClick(plot, Qt.Key.Key_R)
    assert ov.mode == RECT and plot.viewport().cursor().shape() == Qt.CursorShape.CrossCursor
    QTest.keyClick(plot, Qt.Key.Key_P)
    assert ov.mode == PAN
    # Ctrl+A / Ctrl+I / Esc act on the map's data set while the map has the focus
    w.session.load("sample:iris")
    w.session.run("pca")
    name = w.session.current_dataset_name
    plot.setFocus()
    QTest.keyClick(plot, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert w.selection.count(name) == 150
    QTest.keyClick(plot, Qt.Key.Key_Escape)
    assert w.selection.count(name) == 0
    QTest.keyClick(plot, Qt.Key.Key_I, Qt.KeyboardModifier.ControlModifier)
    assert w.selection.count(name) == 150


def test_points_of_hidden_classes_are_not_selected_on_the_map(qtbot, make_window, fresh_host):
    w, ov, _actions = _window(qtbot, make_window, fresh_host)
    view, name = w.map_view, w.session.current_dataset_name
    if not hasattr(view, "toggle_class"):
        pytest.skip("the map cannot hide classes")
    codes = view.coloring.codes.copy()
    view.toggle_class(0)  # hide the first class from the legend
    assert view.visible is not None and not view.visible[codes == 0].any()
    lo, hi = view.xy.min(axis=0) - 1, view.xy.max(axis=0) + 1
    hit = ov.select_rect(lo[0], lo[1], hi[0], hi[1])  # a rectangle around everything
    assert np.array_equal(np.sort(hit), np.sort(view.rows[codes != 0]))
    w.selection.select_all(name)  # selected elsewhere: only the drawn points are highlighted
    assert np.array_equal(np.sort(view.rows[codes != 0]), np.sort(ov.current()[1][ov.highlighted]))
    view.toggle_class(0)
    assert len(ov.highlighted) == 150


def test_label_the_selection_writes_a_new_meta_column_or_a_picked_one_and_undoes(qtbot, make_window, fresh_host):
    """Issue 20: a new meta column or a column the user picks; never a rename; Edit > Undo."""
    from manifold_studio.gui.undo import undo_stack
    from manifold_studio.tables.dataset_columns import META, dataset_columns

    w, _ov, actions = _window(qtbot, make_window, fresh_host)
    ds = w.session.current_dataset
    labels, X = ds.labels.copy(), ds.X
    w.selection.select(ds.name, [3, 4, 5])
    assert actions.label_selection("kind", "odd")
    # the label column is untouched; 'kind' is a new meta column with the value on the selected rows only
    assert ds.label_name == "species" and np.array_equal(ds.labels, labels) and ds.X is X
    kind = ds.column_values("kind")
    assert kind[3:6].tolist() == ["odd"] * 3 and all(v is None for v in np.delete(kind, [3, 4, 5]))
    assert ds.table.column("kind").role == "meta"
    cols = {c.name: c for c in dataset_columns(w.session, ds.name)}
    assert cols["kind"].kind == META and cols["kind"].values[3] == "odd" and cols["kind"].values[0] == ""
    assert w.map_view.set_color_column("kind")  # the colour box offers it at once
    # picking the existing column writes into it: the other rows keep their values
    w.selection.select(ds.name, [5, 6])
    assert actions.label_selection("kind", "even")
    kind = ds.column_values("kind")
    assert kind[3:7].tolist() == ["odd", "odd", "even", "even"] and kind[7] is None
    # the dialog lists the label column and the meta column to pick from
    from manifold_studio.gui.selection_actions import LabelDialog
    dlg = LabelDialog(ds, 2)
    qtbot.addWidget(dlg)
    assert [dlg.column.itemText(i) for i in range(dlg.column.count())][:2] == ["species", "kind"]

    # Edit > Undo: first the second labelling, then the second selection and the map's colour
    # (session commands too), then the new column disappears
    stack = undo_stack(w)
    assert stack.count() == 5 and w.undo_action.isEnabled()
    assert stack.text(0) == f"Select 3 row(s) of {ds.name}" and stack.text(3) == f"Select 2 row(s) of {ds.name}"
    w.undo_action.trigger()
    assert ds.column_values("kind")[3:7].tolist() == ["odd", "odd", "odd", None]
    w.undo_action.trigger()
    np.testing.assert_array_equal(w.selection.rows(ds.name), [3, 4, 5])
    w.undo_action.trigger()
    assert w.map_view.color_combo.currentData() != "col:kind"
    w.undo_action.trigger()
    assert ds.table is None or "kind" not in ds.table
    assert ds.label_name == "species" and np.array_equal(ds.labels, labels)
    w.redo_action.trigger()
    assert ds.column_values("kind")[3:6].tolist() == ["odd"] * 3
    # the current label column is edited in place (undoable too), never renamed
    w.selection.select(ds.name, [0])
    assert actions.label_selection("species", "virginica")
    assert ds.labels[0] == "virginica" and ds.label_name == "species"
    w.undo_action.trigger()
    assert ds.labels[0] == labels[0]
