"""A chosen k is run state (issue 30, What to build 4): Choose k's "Run with k" CUTS the
hierarchical run on the same input (``session.cut``, the dendrogram's command, no refit), so the
window, the CSV export, the reopened project, the exported script run in a fresh process and
``manifold-studio replay`` all give the same k-cluster labels; a method that cannot be cut
(k-means) gets a new run with k through the window's fit path, and the tool says which it did.
Driven by pytest-qt on the real main window, on the shipped wine table."""
from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")
sklearn_cluster = pytest.importorskip("sklearn.cluster")
sklearn_pre = pytest.importorskip("sklearn.preprocessing")

from PySide6.QtCore import Qt  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.gui.undo import remove_dataset  # noqa: E402
from manifold_studio.project.project_file import read_project  # noqa: E402
from manifold_studio.reproduce.script_export import run_output_name, write_script  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 900)


@pytest.fixture
def host():
    return discovered_host(("kmeans", "hierarchical"), ("wine",))


def _wine_csv(tmp_path):
    wine = ms.load_data("sample:wine")
    path = tmp_path / "wine.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*wine.feature_names, "kind"])
        for row, c in zip(wine.X.tolist(), wine.labels):
            w.writerow([*map(repr, row), str(c)])
    return path, wine


def _hierarchical_then_choose(qtbot, w, k_max=6):
    """Standardize + Ward hierarchical with 3 clusters from the form, then Choose k on the same
    input (the data set through the chain)."""
    w.preparation_panel.add_step("standardize")
    w.algorithm_panel.select_algorithm("hierarchical")
    w.algorithm_panel.form.editor("n_clusters").set_value(3)
    w.algorithm_panel.form.editor("method").set_value("ward")
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w, timeout=30_000)
    wait_idle(qtbot, w)
    w.choose_k_action.trigger()
    tool = w.choose_k_tool
    assert tool.start("hierarchical", 2, k_max) is not None
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=30_000)
    assert tool.k_choice.isEnabled() and tool.k_choice.value() == tool.result.suggested_k
    return run, tool


def _csv_column(path, header):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index(header)
    return np.array([int(float(r[col])) for r in rows[1:]])


def _choose_four(qtbot, w, tmp_path):
    data, wine = _wine_csv(tmp_path)
    w.session.load(str(data), label_column="kind")
    run, tool = _hierarchical_then_choose(qtbot, w)
    n_runs = len(w.session.runs)
    tool.k_choice.setValue(4)
    assert tool.apply_button.text() == "Run with k = 4"
    qtbot.mouseClick(tool.apply_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, w)
    assert len(w.session.runs) == n_runs  # no refit: the run is cut
    assert f"Run #{run.id}" in tool.message.text() and "cut into 4 clusters" in tool.message.text()
    labels = run.cut_labels
    ref = sklearn_cluster.AgglomerativeClustering(n_clusters=4, linkage="ward").fit_predict(
        sklearn_pre.StandardScaler().fit_transform(wine.X))
    from sklearn.metrics import adjusted_rand_score
    assert labels is not None and np.unique(labels).size == 4 and adjusted_rand_score(ref, labels) == 1.0
    assert run.meta["cut"]["n_clusters"] == 4 and w.session.current_run is run
    return run, data, labels


def test_a_chosen_k_cuts_the_hierarchical_run_in_the_window_export_and_project(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    run, _data, labels = _choose_four(qtbot, w, tmp_path)
    # the window: title and colours
    assert "n_clusters=4," in w.map_view.title_label.text() and "n_clusters=3," not in w.map_view.title_label.text()
    np.testing.assert_array_equal(w.map_view.color_labels, labels)
    # the CSV export
    out = tmp_path / "wine_out.csv"
    w.export.export_csv(out)
    wait_idle(qtbot, w)
    np.testing.assert_array_equal(_csv_column(out, f"#{run.id} hierarchical cluster"), labels)
    # the project, reopened in a new window
    proj = tmp_path / "wine.msproj"
    w.project.save_project(proj)
    wait_idle(qtbot, w)
    np.testing.assert_array_equal(read_project(proj).session.runs[run.id].cut_labels, labels)
    other = make_window(host)
    other.project.open_project(proj)
    wait_idle(qtbot, other)
    again = other.session.runs[run.id]
    np.testing.assert_array_equal(again.shown_labels, labels)
    assert again.meta["cut"]["n_clusters"] == 4
    # Edit ▸ Undo takes the chosen k back: the run's own 3 clusters
    w.undo_stack.undo()
    assert run.cut_labels is None and "n_clusters=3," in w.map_view.title_label.text()
    # a chosen k for a run whose data set was removed: refused with a clear message, nothing lost
    w.undo_stack.redo()
    assert remove_dataset(w, run.dataset_name)
    assert w.choose_k_tool.run_chosen(5) is None
    assert "Cannot run with k = 5" in w.choose_k_tool.message.text() and "which was removed" in \
        w.choose_k_tool.message.text()
    np.testing.assert_array_equal(run.cut_labels, labels)
    assert run.meta["cut"]["n_clusters"] == 4 and run.id in w.session.runs


@pytest.mark.slow
def test_a_chosen_k_reaches_the_script_in_a_fresh_process_and_cli_replay(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    run, data, labels = _choose_four(qtbot, w, tmp_path)
    proj = tmp_path / "wine.msproj"
    w.project.save_project(proj)
    wait_idle(qtbot, w)
    script = write_script(proj, tmp_path / "analysis.py")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "out" / f"{run_output_name(run)}.csv", newline="") as f:
        got = np.array([int(r[0]) for r in list(csv.reader(f))[1:]])
    np.testing.assert_array_equal(got, labels)
    done = subprocess.run([sys.executable, "-m", "manifold_studio.cli.main", "replay", str(proj), "--data", str(data),
                           "--out-dir", str(tmp_path / "replayed"), "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (out,) = sorted((tmp_path / "replayed").glob(f"run{run.id}_*.csv"))
    replayed = np.loadtxt(out, delimiter=",", skiprows=1, usecols=1).astype(int)
    np.testing.assert_array_equal(replayed, labels)


def test_a_method_that_cannot_be_cut_gets_a_new_run_with_k_and_says_so(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:wine")
    w.choose_k_action.trigger()
    tool = w.choose_k_tool
    tool.start("kmeans", 2, 4)
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=30_000)
    n_runs = len(w.session.runs)
    tool.k_choice.setValue(4)
    qtbot.mouseClick(tool.apply_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    assert len(w.session.runs) == n_runs + 1 and run.algorithm_id == "kmeans" and run.params["n_clusters"] == 4
    assert np.unique(run.labels).size == 4 and run.cut_labels is None
    assert "cannot be cut" in tool.message.text() and "n_clusters=4" in tool.message.text()

