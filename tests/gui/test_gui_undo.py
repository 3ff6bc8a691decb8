"""Undo / redo for removing a run (run log: context action, Delete key) and a data set (the data
panel's Remove): the same objects come back, the run log, the data panel, the map and the
selection follow."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.gui.undo import install_undo, remove_dataset, remove_run  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import RUNNING

WINDOW_DIALOGS = False


@pytest.fixture(scope="module")
def host():
    return PluginHost().discover()


@pytest.fixture
def window(make_window, host):
    w = make_window(host)
    install_undo(w)
    w.session.load("sample:iris")
    w.session.run("pca", n_components=2)
    w.session.run("pca", n_components=3)
    w.session.run("kmeans", n_clusters=3)
    return w


def _text(action):
    return action.text().replace("&", "")


def _log_ids(w):
    return [int(w.run_log.item(r, 0).text()) for r in range(w.run_log.rowCount())]


def test_remove_run_from_the_run_log_then_undo_and_redo(qtbot, window):
    w = window
    w.session.set_current_run(2)
    run = w.session.runs[2]
    w.run_log.selectRow(w.run_log.row_of(2))
    assert w.run_log.remove_action in w.run_log.actions()  # the context menu's action
    w.run_log.remove_action.trigger()
    assert 2 not in w.session.runs and _log_ids(w) == [1, 3]
    assert w.undo_action.isEnabled() and _text(w.undo_action) == "Undo Remove run #2"
    assert w.session.current_run_id == 3  # the latest result is shown instead

    w.undo_action.trigger()
    assert w.session.runs[2] is run  # the very same object, its results intact
    assert _log_ids(w) == [1, 2, 3]  # back in its place
    assert w.session.current_run_id == 2  # it was the shown run: shown again
    qtbot.waitUntil(lambda: w.map_view.point_count() == 150, timeout=5_000)
    np.testing.assert_array_equal(w.map_view.xy, run.embedding[:, :2])
    assert _text(w.redo_action) == "Redo Remove run #2"

    w.redo_action.trigger()
    assert 2 not in w.session.runs and _log_ids(w) == [1, 3]
    w.undo_action.trigger()
    assert list(w.session.runs) == [1, 3, 2] and _log_ids(w) == [1, 2, 3]


def test_delete_key_in_the_run_log_removes_the_selected_run(qtbot, window):
    w = window
    w.run_log.setFocus()
    w.run_log.selectRow(w.run_log.row_of(1))
    qtbot.waitUntil(w.run_log.hasFocus, timeout=2_000)
    qtbot.keyClick(w.run_log, Qt.Key.Key_Delete)
    assert 1 not in w.session.runs and _log_ids(w) == [2, 3]
    qtbot.keyClick(w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # Ctrl+Z
    assert 1 in w.session.runs and _log_ids(w) == [1, 2, 3]


def test_a_running_run_is_not_removed(window):
    w = window
    run = w.session.create_run("pca", {"n_components": 2})
    w.session.start_run(run.id)
    assert w.session.runs[run.id].status == RUNNING
    assert not remove_run(w, run.id)
    assert run.id in w.session.runs and w.undo_stack.count() == 0
    assert "still running" in w.statusBar().currentMessage()
    w.session.cancel_run(run.id)
    assert not remove_run(w, 999) and "no run #999" in w.statusBar().currentMessage()


def test_remove_data_set_with_the_panel_then_undo_and_redo(qtbot, window):
    w = window
    w.session.load("sample:moons")
    w.session.set_current_dataset("Iris")
    iris = w.session.datasets["Iris"]
    w.selection.select("Iris", [0, 5, 7])
    combo = w.data_panel.dataset_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["Iris", "Two moons"]

    qtbot.mouseClick(w.data_panel.remove_button, Qt.MouseButton.LeftButton)
    assert "Iris" not in w.session.datasets
    assert [combo.itemText(i) for i in range(combo.count())] == ["Two moons"]
    assert len(w.session.runs) == 3  # runs of a removed data set are kept
    assert _text(w.undo_action) == "Undo Remove data set Iris"

    w.undo_action.trigger()
    assert w.session.datasets["Iris"] is iris
    assert w.session.current_dataset_name == "Iris"  # it was the current one
    assert sorted(combo.itemText(i) for i in range(combo.count())) == ["Iris", "Two moons"]
    np.testing.assert_array_equal(w.selection.rows("Iris"), [0, 5, 7])  # its selection too

    w.redo_action.trigger()
    assert "Iris" not in w.session.datasets and w.selection.count("Iris") == 0
    w.undo_action.trigger()
    assert w.session.datasets["Iris"] is iris


def test_undo_refuses_to_overwrite_a_data_set_loaded_since(window):
    w = window
    old = w.session.datasets["Iris"]
    assert remove_dataset(w, "Iris")
    w.session.load("sample:iris")  # the same name again, another object
    new = w.session.datasets["Iris"]
    assert new is not old
    w.undo_action.trigger()
    assert w.session.datasets["Iris"] is new  # nothing loaded is lost
    assert "another data set named 'Iris'" in w.statusBar().currentMessage()


def test_opening_a_project_clears_the_history(qtbot, window, tmp_path):
    from gui_helpers import wait_idle

    w = window
    w.project.save_project(tmp_path / "p.msproj")
    wait_idle(qtbot, w)
    remove_run(w, 1)
    assert w.undo_stack.count() == 1
    w.project.open_project(tmp_path / "p.msproj")
    wait_idle(qtbot, w)
    assert w.undo_stack.count() == 0 and not w.undo_action.isEnabled()
