"""What is drawn is what is exported and saved: a dendrogram cut dragged in the window becomes
the run's labels in the CSV export and in the project, and comes back on reopen (issue 21)."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from scipy.cluster import hierarchy  # noqa: E402

from manifold_studio.analysis import metrics  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    return discovered_host(("pca", "hierarchical"), ("iris",))


def _drag_to(dend, height):
    """What a drag of the cut line does: move it, then release (sigPositionChangeFinished)."""
    dend.cut_line.setValue(height)
    dend.cut_line.sigPositionChangeFinished.emit(dend.cut_line)


def test_dragged_cut_is_exported_saved_and_restored(qtbot, make_window, host, tmp_path):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    run = w.run_algorithm("hierarchical", {"n_clusters": 3, "method": "ward"})
    wait_last_run(qtbot, w)
    dend = w.views["dendrogram"]
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is run, timeout=15_000)
    Z = run.estimator.linkage_matrix_
    hs = np.sort(Z[:, 2])
    height = float(hs[-4] + hs[-3]) / 2  # between two merges: 4 clusters
    _drag_to(dend, height)
    expected = hierarchy.fcluster(Z, height, criterion="distance")
    assert np.unique(run.cut_labels).size == 4 and np.unique(run.labels).size == 3
    assert metrics.adjusted_rand_index(run.cut_labels, expected) == pytest.approx(1.0)
    assert np.array_equal(w.map_view.color_labels, run.cut_labels)
    assert run.meta["cut"]["height"] == pytest.approx(height) and run.meta["cut"]["n_clusters"] == 4

    # File ▸ Export data set: the cluster column is the cut on screen
    out = tmp_path / "iris.csv"
    w.export.export_csv(out)
    wait_idle(qtbot, w)
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index(f"#{run.id} hierarchical cluster")
    exported = np.array([float(r[col]) for r in rows[1:]])
    assert np.unique(exported).size == 4
    np.testing.assert_array_equal(exported, run.cut_labels)

    # save, reopen in another window: the cut and its labels come back
    path = tmp_path / "cut.msproj"
    w.project.save_project(path)
    wait_idle(qtbot, w)
    other = make_window(host)
    other.project.open_project(path)
    wait_idle(qtbot, other)
    back = other.session.runs[run.id]
    np.testing.assert_array_equal(back.cut_labels, run.cut_labels)
    np.testing.assert_array_equal(back.labels, run.labels)
    assert back.meta["cut"]["height"] == pytest.approx(height)
    other.show_run(back)
    odend = other.views["dendrogram"]
    qtbot.waitUntil(lambda: odend.result is not None and odend.run is back, timeout=15_000)
    assert odend.cut_height == pytest.approx(height) and odend.clusters_at(odend.cut_height) == 4
    assert "4 clusters" in odend.cut_label.text() and odend.reset_button.isEnabled()
    qtbot.waitUntil(lambda: other.map_view.run is back, timeout=5_000)
    assert len(other.map_view.coloring.names) == 4
    np.testing.assert_array_equal(other.map_view.color_labels, run.cut_labels)
    # "Run's cut" goes back to the run's 3 clusters, in the export too
    odend.reset_cut()
    assert back.cut_labels is None and "cut" not in back.meta
    out2 = tmp_path / "reset.csv"
    other.export.export_csv(out2)
    wait_idle(qtbot, other)
    with open(out2, newline="") as fh:
        rows = list(csv.reader(fh))
    assert len({r[col] for r in rows[1:]}) == 3


def _session_with_cut(cut):
    from manifold_studio.data import Dataset
    from manifold_studio.session.model import Session
    from manifold_studio.session.records import DONE, Run

    s = Session()
    X = np.arange(20, dtype=float).reshape(10, 2)
    s.add_dataset(Dataset("d", X))
    run = Run(1, "hierarchical", {"n_clusters": 2}, "d", kind="clustering", status=DONE,
              labels=np.repeat([0, 1], 5), meta={"cut": {"note": "cut", "height": 1.5, "n_clusters": 4}},
              cut_labels=cut)
    s.runs[1] = run
    return s


def test_project_file_keeps_the_cut_and_drops_one_that_does_not_fit(tmp_path):
    from manifold_studio.project.project_file import read_project, save_project

    cut = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 3])
    save_project(_session_with_cut(cut), tmp_path / "a.msproj")
    back = read_project(tmp_path / "a.msproj")
    run = back.session.runs[1]
    np.testing.assert_array_equal(run.cut_labels, cut)
    np.testing.assert_array_equal(run.shown_labels, cut)
    assert run.meta["cut"] == {"note": "cut", "height": 1.5, "n_clusters": 4} and not back.problems

    save_project(_session_with_cut(cut[:7]), tmp_path / "b.msproj")  # a cut of 7 labels for 10 points
    back = read_project(tmp_path / "b.msproj")
    run = back.session.runs[1]
    assert run.cut_labels is None and "cut" not in run.meta
    np.testing.assert_array_equal(run.shown_labels, np.repeat([0, 1], 5))
    assert any("dendrogram cut has shape (7,)" in p for p in back.problems)
