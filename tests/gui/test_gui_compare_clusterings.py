"""pytest-qt: Compare clusterings in the window (Tools ▸ Compare clusterings dock).

Two methods over k = 2..5 on the shipped iris sample: the table holds one row per (method, k) with
the core's numbers, the plot one curve per method with the core's values, a row becomes a run with
k clusters (in the Runs table, labels equal to the row's), the project keeps the table, Add to
report adds it, and Cancel stops the comparison.
"""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

import manifold_studio as ms  # noqa: E402
from manifold_studio.analysis.compare_clusterings import MEASURES, format_value  # noqa: E402
from manifold_studio.evaluation import compare_clusterings  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1400, 900)


@pytest.fixture
def host():
    return discovered_host(("kmeans", "gmm", "hierarchical", "pca"), ("iris",))


def _iris(w):
    ds = ms.load_data("sample:iris")
    w.session.add_dataset(ds)
    return ds


def _compare(qtbot, w, methods=("kmeans", "gmm"), k=(2, 5), seed=3):
    panel = w.compare_clusterings
    for m in methods:
        panel.check(m)
    panel.set_range(*k, seed=seed, validation=0.25)
    job = panel.run()
    assert job is not None, panel.status.text()
    qtbot.waitUntil(lambda: job.finished, timeout=120_000)
    wait_idle(qtbot, w)
    assert panel.comparison is not None, panel.status.text()
    return panel


def _table_texts(table):
    return [[table.item(i, j).text() for j in range(table.columnCount())] for i in range(table.rowCount())]


def _col(panel, key):
    """The table column of ``key`` ("method", "k" or a measure), found by its header text."""
    from manifold_studio.gui.cluster_compare_panel import COLUMNS, HEADERS

    headers = [panel.table.horizontalHeaderItem(j).text() for j in range(panel.table.columnCount())]
    return headers.index(HEADERS[COLUMNS.index(key)])


def test_two_methods_table_plot_and_make_run(qtbot, make_window, host):
    w = make_window(host)
    ds = _iris(w)
    w.compare_clusterings_action.trigger()
    assert w.docks["compare_clusterings"].isVisible()
    panel = _compare(qtbot, w)
    ref = compare_clusterings(["kmeans", "gmm"], ds.X, range(2, 6), seed=3, validation=0.25)
    # one row per (method, k), the core's numbers
    assert panel.table.rowCount() == 8
    mcol, kcol = _col(panel, "method"), _col(panel, "k")
    for i in range(8):
        method, k = panel.table.item(i, mcol).text(), int(panel.table.item(i, kcol).text())
        expect = ref.row(method, k)
        got = panel.comparison.row(method, k)
        np.testing.assert_array_equal(got.labels, expect.labels)
        for m in MEASURES:
            assert got.value(m) == expect.value(m)
            assert panel.table.item(i, _col(panel, m)).text() == format_value(expect.value(m), m)
    assert np.isfinite([r.value("validation_log_likelihood") for r in ref.rows]).all()
    # the plot: one curve per method, y = the chosen measure over k
    for measure in ("silhouette", "validation_log_likelihood", "davies_bouldin"):
        panel.set_measure(measure)
        assert sorted(panel.curves) == ["gmm", "kmeans"]
        items = [it for it in panel.plot.getPlotItem().listDataItems() if it.name()]
        assert len(items) == 2
        for name, curve in panel.curves.items():
            x, y = curve.getData()
            np.testing.assert_array_equal(x, [2, 3, 4, 5])
            np.testing.assert_array_equal(y, ref.values(name, measure))
    # sorting by a measure reorders the rows, and the selected row is still the right one
    panel.table.sortItems(_col(panel, "silhouette"))
    sil = [float(panel.table.item(i, _col(panel, "silhouette")).text()) for i in range(8)]
    assert sil == sorted(sil)
    target = next(i for i in range(8) if panel.table.item(i, mcol).text() == "kmeans"
                  and panel.table.item(i, kcol).text() == "4")
    panel.table.selectRow(target)
    assert panel.make_run_button.isEnabled()
    row = panel.selected_row()
    assert (row.method, row.k) == ("kmeans", 4)
    n_before = w.run_log.rowCount()
    run = panel.make_run()
    assert run is not None
    run = wait_last_run(qtbot, w, timeout=60_000)
    wait_idle(qtbot, w)
    assert w.run_log.rowCount() == n_before + 1 and w.run_log.row_of(run.id) >= 0
    assert run.algorithm_id == "kmeans" and run.params["n_clusters"] == 4 and run.params["random_state"] == 3
    assert np.unique(run.labels).size == 4
    np.testing.assert_array_equal(run.labels, row.labels)  # the row's partition, not another one
    # a double click makes a run too
    g = next(i for i in range(8) if panel.table.item(i, mcol).text() == "gmm")
    panel.table.cellDoubleClicked.emit(g, 0)
    run2 = wait_last_run(qtbot, w, timeout=60_000)
    wait_idle(qtbot, w)
    assert run2.id != run.id and run2.algorithm_id == "gmm"
    assert np.unique(run2.labels).size == int(panel.table.item(g, kcol).text())


def test_the_project_keeps_the_comparison_and_the_report_adds_it(qtbot, make_window, host, tmp_path, monkeypatch):
    monkeypatch.setenv("MANIFOLD_STUDIO_RECOVERY_DIR", str(tmp_path / "recovery"))
    w = make_window(host)
    ds = _iris(w)
    w.compare_clusterings_action.trigger()
    panel = _compare(qtbot, w, methods=("kmeans", "hierarchical"), k=(2, 4))
    table = _table_texts(panel.table)
    curves = {n: np.asarray(c.getData()[1]) for n, c in panel.curves.items()}
    item = panel.add_to_report()
    assert item is not None and item.title == "Compare clusterings" and item.image is not None
    facts = dict(item.facts)
    assert facts["Methods"] == "hierarchical, kmeans"  # list order and facts["k"] == "2 to 4"
    best = panel.comparison.best("kmeans", "silhouette")
    assert f"kmeans: {best}" in facts["Best k by Silhouette"]
    assert len(w.session.report) == 1
    path = tmp_path / "clusterings.msproj"
    job = w.project.save_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    w2 = make_window(host)
    job = w2.project.open_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    wait_idle(qtbot, w2)
    p2 = w2.compare_clusterings
    assert p2.comparison is not None and p2.dataset_name == ds.name
    assert _table_texts(p2.table) == table
    for name, c in p2.curves.items():
        np.testing.assert_array_equal(c.getData()[1], curves[name])
    for a, b in zip(p2.comparison.rows, panel.comparison.rows):
        np.testing.assert_array_equal(a.labels, b.labels)
        assert a.params == b.params and a.notes == b.notes
    # a restored row still makes its run
    p2.table.selectRow(0)
    assert p2.make_run() is not None
    run = wait_last_run(qtbot, w2, timeout=60_000)
    wait_idle(qtbot, w2)
    np.testing.assert_array_equal(run.labels, p2.selected_row().labels)


def test_says_why_it_cannot_run_and_cancels(qtbot, make_window, host):
    w = make_window(host)
    panel = w.compare_clusterings
    assert panel.run() is None and "Load a data set" in panel.status.text()
    _iris(w)
    assert panel.run() is None and "Tick" in panel.status.text()
    panel.check("kmeans")
    panel.set_range(5, 3)
    assert panel.run() is None and "empty" in panel.status.text()
    # only clustering methods with a number of clusters are offered
    offered = {panel.methods.list.item(i).data(0x0100) for i in range(panel.methods.list.count())}
    assert {"kmeans", "gmm", "hierarchical"} <= offered and "pca" not in offered
    # a k above n - 1: the job fails with the message, nothing is shown
    panel.set_range(2, 150)
    job = panel.run()
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert job.state == job.FAILED and "n − 1 = 149" in panel.status.text() and panel.comparison is None
    # cancel: the job ends cancelled, nothing is shown, Compare is enabled again
    panel.form("kmeans").editor("n_init").set_value(200)
    panel.set_range(2, 149)
    job = panel.run()
    assert panel.cancel_button.isEnabled()
    panel.cancel()
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert job.state == job.CANCELLED and "cancelled" in panel.status.text()
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled() and panel.comparison is None
