"""The data table dock (issue 11, item 2): a virtual model over the data set's columns, sorting
by numpy argsort, selection linked both ways with ``window.selection``, the Projector-style
search, clipboard copy, and a million rows.

Every window is shut down in teardown (conftest's ``make_window``)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from gui_helpers import wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.tables.search import (  # noqa: E402
    SearchError, factorize, format_value, search_rows, sort_permutation,
)

from manifold_studio.gui.data_table import install_data_table  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 900)
ROLE = Qt.ItemDataRole


@pytest.fixture(scope="module")
def host():
    h = PluginHost().discover()
    h.failures.clear()
    for needed in ("pca", "kmeans"):
        if needed not in h.algorithms:
            pytest.skip(f"the {needed} plugin is not installed")
    if "iris" not in h.samples:
        pytest.skip("the sample data plugin is not installed")
    return h


def _table_window(qtbot, make_window, host):
    w = make_window(host)
    table = getattr(w, "data_table", None) or install_data_table(w)  # the window installs its own
    dock = w.docks["table"]
    dock.show()
    dock.raise_()
    w.resizeDocks([dock], [380], Qt.Orientation.Vertical)  # a dozen rows in view (mouse tests)
    qtbot.waitUntil(table.isVisible, timeout=5_000)
    return w, table


def _iris(qtbot, make_window, host):
    w, table = _table_window(qtbot, make_window, host)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        w.load_source("sample:iris")
    return w, table, w.session.current_dataset


def _add(w, name, X, labels=None, feature_names=None, label_name=None):
    w.session.add_dataset(Dataset(name, X, labels=labels, feature_names=feature_names, label_name=label_name))
    return w.session.dataset(name)


def _column_values(model, j, role=ROLE.UserRole):
    return [model.data(model.index(p, j), role) for p in range(model.rowCount())]


def _click(qtbot, table, position, modifiers=Qt.KeyboardModifier.NoModifier):
    view = table.view
    view.scrollTo(table.model.index(position, 1))
    rect = view.visualRect(table.model.index(position, 1))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifiers, rect.center())


# -- pure helpers ------------------------------------------------------------------------------------
def test_format_value_significant_digits_integers_and_missing():
    assert format_value(1.0) == "1" and format_value(np.float64(-3.0)) == "-3"
    assert format_value(np.pi) == "3.14159" and format_value(1.23456789e-7) == "1.23457e-07"
    assert format_value(np.nan) == "" and format_value(None) == ""
    assert format_value(np.int64(42)) == "42" and format_value("setosa") == "setosa"


def test_sort_permutation_stable_nan_last_and_text_as_text():
    v = np.array([3.0, np.nan, 1.0, 3.0, -2.0, np.nan, 1.0])
    assert sort_permutation(v).tolist() == [4, 2, 6, 0, 3, 1, 5]
    assert sort_permutation(v, descending=True).tolist() == [0, 3, 2, 6, 4, 1, 5]  # ties keep row order
    s = np.array(["b", "", "B", "a", "c", None, "a"], dtype=object)
    order = sort_permutation(s)
    assert [s[i] for i in order] == ["a", "a", "B", "b", "c", "", None]  # text order, missing last
    assert order.tolist()[:2] == [3, 6]
    assert [s[i] for i in sort_permutation(s, descending=True)][:3] == ["c", "b", "B"]
    f = factorize(s)
    assert f.texts == ["a", "B", "b", "c"] and f.codes.tolist() == [2, -1, 1, 0, 3, -1, 0]


def test_sort_permutation_equals_numpy_stable_argsort_on_ties_nan_and_large_columns():
    rng = np.random.default_rng(7)
    cases = [np.round(rng.normal(size=200_000), 4),                 # ties among many values (radix path)
             rng.normal(size=50_000),                               # no ties (introsort path)
             rng.integers(0, 5, 30_000).astype(float),              # a cluster column
             rng.integers(-3, 3, 1_000)]                            # integers
    cases[1][rng.choice(50_000, 500, replace=False)] = np.nan
    cases[2][::7] = np.nan
    for v in cases:
        for descending in (False, True):
            assert np.array_equal(sort_permutation(v, descending), np.argsort(-v if descending else v, kind="stable"))


# -- model cells -------------------------------------------------------------------------------------
def test_cells_equal_the_arrays_and_runs_add_their_columns(qtbot, make_window, host):
    w, table, ds = _iris(qtbot, make_window, host)
    m = table.model
    assert m.rowCount() == ds.n_samples == 150
    headers = [m.headerData(j, Qt.Orientation.Horizontal) for j in range(m.columnCount())]
    assert headers == ["row"] + ds.feature_names + [ds.label_name]
    assert _column_values(m, 0) == list(range(150))
    for j in range(ds.n_features):
        assert np.array_equal(np.array(_column_values(m, j + 1), dtype=float), ds.X[:, j])
        assert _column_values(m, j + 1, ROLE.DisplayRole) == [format_value(v) for v in ds.X[:, j]]
    assert _column_values(m, 5, ROLE.DisplayRole) == ds.labels.tolist()
    assert "Feature 'petal_length'" in m.headerData(3, Qt.Orientation.Horizontal, ROLE.ToolTipRole)
    assert "Label column 'species'" in m.headerData(5, Qt.Orientation.Horizontal, ROLE.ToolTipRole)

    pca = w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    qtbot.waitUntil(lambda: m.columnCount() == 8, timeout=5_000)
    for k in range(2):
        j = m.column_index(f"#{pca.id} pca {k + 1}")
        assert j is not None
        assert np.array_equal(np.array(_column_values(m, j), dtype=float), pca.embedding[:, k])
        tip = m.headerData(j, Qt.Orientation.Horizontal, ROLE.ToolTipRole)
        assert f"run #{pca.id}" in tip and "PCA" in tip
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    qtbot.waitUntil(lambda: m.column_index(f"#{km.id} kmeans cluster") is not None, timeout=5_000)
    j = m.column_index(f"#{km.id} kmeans cluster")
    assert np.array_equal(np.array(_column_values(m, j), dtype=float), km.labels.astype(float))
    assert _column_values(m, j, ROLE.DisplayRole) == [str(int(v)) for v in km.labels]  # integral: no ".0"
    assert f"run #{km.id}" in m.headerData(j, Qt.Orientation.Horizontal, ROLE.ToolTipRole)


def test_nan_cells_are_empty_and_a_hidden_table_catches_up_when_shown(qtbot, make_window, host):
    w, table = _table_window(qtbot, make_window, host)
    X = np.array([[1.0, np.nan], [2.5, 7.0]])
    _add(w, "holes", X)
    m = table.model
    assert _column_values(m, 2, ROLE.DisplayRole) == ["", "7"]
    w.docks["table"].hide()  # closed (or behind another tab): no work until shown
    qtbot.waitUntil(lambda: not table.isVisible(), timeout=5_000)
    _add(w, "later", np.arange(12.0).reshape(4, 3))
    assert table.name == "holes" and "updates when shown" in table.info.text()
    w.docks["table"].show()
    qtbot.waitUntil(lambda: table.name == "later", timeout=5_000)
    assert m.rowCount() == 4 and _column_values(m, 3) == [2.0, 5.0, 8.0, 11.0]


# -- sorting -----------------------------------------------------------------------------------------
def test_header_click_sorts_with_argsort_and_keeps_the_row_column(qtbot, make_window, host):
    w, table = _table_window(qtbot, make_window, host)
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(200, 3)), 1)  # ties on purpose
    X[rng.choice(200, 15, replace=False), 1] = np.nan
    labels = np.array(["pear", "Apple", "fig", "banana"], dtype=object)[rng.integers(0, 4, 200)]
    _add(w, "fruit", X, labels=labels, feature_names=["a", "b", "c"], label_name="fruit")
    m, header = table.model, table.view.horizontalHeader()

    def click_header(section):
        x = header.sectionViewportPosition(section) + header.sectionSize(section) // 2
        QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                         QPoint(x, header.height() // 2))

    click_header(2)  # column "b"
    expected = np.argsort(X[:, 1], kind="stable")
    assert np.array_equal(np.array(_column_values(m, 0)), expected)  # the row column follows the rows
    shown = np.array(_column_values(m, 2), dtype=float)
    assert np.array_equal(shown[:185], np.sort(X[:, 1])[:185]) and np.isnan(shown[185:]).all()  # NaN last
    click_header(2)  # descending, NaN still last
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    rows = np.array(_column_values(m, 0))
    assert np.array_equal(rows, np.argsort(-X[:, 1], kind="stable"))
    assert np.isnan(X[rows[-15:], 1]).all()
    click_header(4)  # text, sorted as text (case-insensitive)
    shown = _column_values(m, 4, ROLE.DisplayRole)
    assert shown == sorted(labels.tolist(), key=str.casefold)
    assert np.array_equal(np.array(_column_values(m, 0)),
                          np.argsort(np.array([s.casefold() for s in labels]), kind="stable"))
    for p in (0, 57, 199):  # every cell of a sorted row is that row's
        r = m.data(m.index(p, 0), ROLE.UserRole)
        assert [m.data(m.index(p, j), ROLE.UserRole) for j in (1, 3)] == [X[r, 0], X[r, 2]]


# -- selection, both ways ----------------------------------------------------------------------------
def test_selecting_rows_in_the_table_sets_the_data_set_selection(qtbot, make_window, host):
    w, table, ds = _iris(qtbot, make_window, host)
    name, m = ds.name, table.model
    _click(qtbot, table, 3)
    assert w.selection.rows(name).tolist() == [3]
    _click(qtbot, table, 7, Qt.KeyboardModifier.ShiftModifier)
    assert w.selection.rows(name).tolist() == [3, 4, 5, 6, 7]
    _click(qtbot, table, 5, Qt.KeyboardModifier.ControlModifier)  # toggle off
    assert w.selection.rows(name).tolist() == [3, 4, 6, 7]
    _click(qtbot, table, 20, Qt.KeyboardModifier.ControlModifier)  # toggle on
    assert w.selection.rows(name).tolist() == [3, 4, 6, 7, 20]
    _click(qtbot, table, 30, Qt.KeyboardModifier.AltModifier)  # remove: 30 was not selected
    assert w.selection.rows(name).tolist() == [3, 4, 6, 7, 20]
    _click(qtbot, table, 6, Qt.KeyboardModifier.AltModifier)
    assert w.selection.rows(name).tolist() == [3, 4, 7, 20]
    _click(qtbot, table, 40)
    QTest.keyClick(table.view, Qt.Key.Key_Down)  # arrows move the selected row
    assert w.selection.rows(name).tolist() == [41]
    QTest.keyClick(table.view, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(table.view, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    assert w.selection.rows(name).tolist() == [41, 42, 43]
    # after sorting by petal_length (descending), positions map to the sorted rows
    table.view.sortByColumn(3, Qt.SortOrder.DescendingOrder)
    order = np.argsort(-ds.X[:, 2], kind="stable")
    assert np.array_equal(m.order, order)
    _click(qtbot, table, 10)
    _click(qtbot, table, 14, Qt.KeyboardModifier.ShiftModifier)
    assert sorted(w.selection.rows(name).tolist()) == sorted(order[10:15].tolist())
    assert np.array_equal(table.selected_rows(), order[10:15])
    # dragging from position 2 to position 6
    view = table.view
    view.scrollToTop()
    y = lambda p: view.visualRect(m.index(p, 1)).center()  # noqa: E731
    QTest.mousePress(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, y(2))
    QTest.mouseMove(view.viewport(), y(6))
    QTest.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, y(6))
    assert sorted(w.selection.rows(name).tolist()) == sorted(order[2:7].tolist())
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert w.selection.count(name) == 150


def test_the_data_set_selection_shows_in_the_table_and_scrolls_to_it(qtbot, make_window, host):
    w, table = _table_window(qtbot, make_window, host)
    X = np.random.default_rng(5).normal(size=(2000, 3))
    ds = _add(w, "many", X)
    m = table.model
    table.view.sortByColumn(1, Qt.SortOrder.AscendingOrder)
    chosen = np.array([1500, 1501, 1502, 17, 999])
    w.selection.select(ds.name, chosen)
    assert np.array_equal(m.selected, w.selection.mask(ds.name))
    highlighted = [m.data(m.index(p, 0), ROLE.UserRole) for p in range(m.rowCount())
                   if m.data(m.index(p, 1), ROLE.BackgroundRole) is not None]
    assert sorted(highlighted) == sorted(chosen.tolist())
    first = int(np.min(m.positions[chosen]))
    assert table.view.rowAt(table.view.visualRect(m.index(first, 0)).center().y()) == first  # scrolled to it
    assert table.view.viewport().rect().contains(table.view.visualRect(m.index(first, 0)).center())
    # "selected rows only": the filter follows the selection made elsewhere
    table.only_selected.setChecked(True)
    assert m.rowCount() == 5 and np.array_equal(m.order, np.sort(chosen)[np.argsort(X[np.sort(chosen), 0],
                                                                                    kind="stable")])
    w.selection.select(ds.name, [3, 4])
    assert sorted(m.order.tolist()) == [3, 4]
    _click(qtbot, table, 0)  # a click in the filtered table selects that shown row
    assert w.selection.rows(ds.name).tolist() == [m.order[0]] and m.rowCount() == 2
    table.only_selected.setChecked(False)
    assert m.rowCount() == 2000
    w.selection.clear(ds.name)
    assert not m.selected.any() and m.data(m.index(0, 1), ROLE.BackgroundRole) is None


# -- search ------------------------------------------------------------------------------------------
def test_search_by_label_text_row_range_and_condition(qtbot, make_window, host):
    w, table, ds = _iris(qtbot, make_window, host)
    name = ds.name
    box = table.search
    box.setText("VERSI")
    QTest.keyClick(box, Qt.Key.Key_Return)
    assert np.array_equal(w.selection.mask(name), ds.labels == "versicolor")
    assert "50 rows match" in w.statusBar().currentMessage()
    assert table.run_search("A") == 100  # setosa and virginica
    assert np.array_equal(w.selection.mask(name), ds.labels != "versicolor")
    assert table.run_search("12") == 1 and w.selection.rows(name).tolist() == [12]
    assert table.run_search("10-20") == 11 and w.selection.rows(name).tolist() == list(range(10, 21))
    assert table.run_search("20..10") == 11 and w.selection.rows(name).tolist() == list(range(10, 21))
    assert table.run_search("petal_length > 5") == int((ds.X[:, 2] > 5).sum())
    assert np.array_equal(w.selection.mask(name), ds.X[:, 2] > 5)
    assert table.run_search("Sepal_Width<=3") == int((ds.X[:, 1] <= 3).sum())
    assert np.array_equal(w.selection.mask(name), ds.X[:, 1] <= 3)
    assert table.run_search("species == setosa") == 50
    assert np.array_equal(w.selection.mask(name), ds.labels == "setosa")
    assert table.run_search("row >= 140") == 10 and w.selection.rows(name).tolist() == list(range(140, 150))
    # the table shows the match (scrolled to the first selected row)
    assert table.model.selected[140] and table.view.rowAt(
        table.view.visualRect(table.model.index(140, 0)).center().y()) == 140


@pytest.mark.parametrize("query, words", [
    ("", ["Type a label text"]),
    ("   ", ["Type a label text"]),
    ("999", ["Row 999 does not exist", "0 to 149"]),
    ("400-500", ["do not exist"]),
    ("height > 5", ["Unknown column 'height'", "petal_length", "species", "row"]),
    ("petal_length > big", ["numeric", "not 'big'"]),
    ("species > 3", ["only == and !="]),
    ("dragonfruit", ["No row matches", "unchanged"]),
    ("petal_length > 100", ["No row matches"]),
])
def test_bad_search_input_says_why_and_changes_nothing(qtbot, make_window, host, query, words):
    w, table, ds = _iris(qtbot, make_window, host)
    w.selection.select(ds.name, [1, 2, 3])
    assert table.run_search(query) == 0
    message = w.statusBar().currentMessage()
    assert message == table.last_message and all(word in message for word in words), message
    assert w.selection.rows(ds.name).tolist() == [1, 2, 3]


def test_search_without_a_text_column_explains_what_to_type():
    from manifold_studio.tables.dataset_columns import Column

    cols = [Column("x1", np.arange(5.0), "feature")]
    with pytest.raises(SearchError, match="no label or text column"):
        search_rows("hello", cols, 5)
    assert search_rows("x1 != 2", cols, 5).mask.tolist() == [True, True, False, True, True]


# -- clipboard ---------------------------------------------------------------------------------------
def test_copy_puts_the_selected_rows_on_the_clipboard(qtbot, make_window, host):
    w, table, ds = _iris(qtbot, make_window, host)
    table.copy_action.trigger()  # nothing selected: a message, the clipboard is untouched
    assert "Nothing is selected" in w.statusBar().currentMessage()
    w.selection.select(ds.name, [2, 50])
    table.view.setFocus()
    QTest.keyClick(table.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    text = QApplication.clipboard().text()
    lines = text.splitlines()
    assert lines[0].split("\t") == ["row"] + ds.feature_names + ["species"]
    assert lines[1].split("\t") == ["2"] + [repr(float(v)) for v in ds.X[2]] + [ds.labels[2]]
    assert lines[2].split("\t") == ["50"] + [repr(float(v)) for v in ds.X[50]] + [ds.labels[50]]
    assert len(lines) == 3 and "Copied 2 rows" in w.statusBar().currentMessage()
    table.view.sortByColumn(0, Qt.SortOrder.DescendingOrder)  # copied in the table's order
    table.copy_action.trigger()
    assert [ln.split("\t")[0] for ln in QApplication.clipboard().text().splitlines()[1:]] == ["50", "2"]


# -- a million rows ----------------------------------------------------------------------------------
def test_a_million_rows_build_scroll_sort_and_select_quickly(qtbot, make_window, host):
    w, table = _table_window(qtbot, make_window, host)
    n = 1_000_000
    X = np.random.default_rng(11).normal(size=(n, 10))
    labels = np.array(["alpha", "beta", "gamma"], dtype=object)[np.arange(n) % 3]
    t0 = time.perf_counter()
    ds = _add(w, "million", X, labels=labels)  # every listener of the window, the table's included
    QApplication.processEvents()
    add_s = time.perf_counter() - t0
    m, view = table.model, table.view
    t0 = time.perf_counter()
    table.refresh()  # the table alone: columns from the session, a new model content
    QApplication.processEvents()
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    view.scrollToBottom()
    QApplication.processEvents()
    last = m.data(m.index(n - 1, 10), ROLE.DisplayRole)
    scroll_s = time.perf_counter() - t0
    assert m.rowCount() == n and last == format_value(X[n - 1, 9])
    assert view.rowAt(view.viewport().height() - 2) >= n - 3  # really at the end

    t0 = time.perf_counter()
    view.sortByColumn(1, Qt.SortOrder.AscendingOrder)
    QApplication.processEvents()
    sort_s = time.perf_counter() - t0
    assert m.data(m.index(0, 0), ROLE.UserRole) == int(np.argmin(X[:, 0]))
    t0 = time.perf_counter()
    view.sortByColumn(11, Qt.SortOrder.DescendingOrder)  # the text label
    QApplication.processEvents()
    sort_text = time.perf_counter() - t0
    assert m.data(m.index(0, 11), ROLE.DisplayRole) == "gamma"

    chosen = np.random.default_rng(12).choice(n, 100_000, replace=False)
    t0 = time.perf_counter()
    w.selection.select(ds.name, chosen)
    QApplication.processEvents()
    select_s = time.perf_counter() - t0

    assert int(m.selected.sum()) == 100_000
    first = int(m.positions[chosen].min())
    assert m.data(m.index(first, 1), ROLE.BackgroundRole) is not None

    t0 = time.perf_counter()
    count = table.run_search("x3 > 1.5")
    search_s = time.perf_counter() - t0
    assert count == int((X[:, 2] > 1.5).sum())
    print(f"\n1M x 10 table: add the data set (whole window) {add_s:.3f} s, table refresh {build:.3f} s, "
          f"scroll to the end {scroll_s:.3f} s, sort numeric {sort_s:.3f} s, "
          f"sort text {sort_text:.3f} s, select 100k scattered rows {select_s:.3f} s, "
          f"search 'x3 > 1.5' {search_s:.3f} s")
    assert build + scroll_s < 10 and sort_s < 10 and select_s < 10  # loose: the machine is shared
