"""The selection, the views' settings and the report's items are session state in the window
(issue 30): each view reads them from the session, each change in a widget is a session command
on Edit ▸ Undo, and a project saved and reopened in another window shows the same."""
from __future__ import annotations

import html as html_module

import numpy as np
import pytest

from gui_helpers import wait_idle

pytest.importorskip("pytestqt")

from manifold_studio.gui.views.selection_overlay import install_selection  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture
def win(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    if w.map_selection is None:
        install_selection(w)
    w.session.load("sample:iris")
    w.session.run("pca", n_components=2)
    wait_idle(qtbot, w)
    qtbot.wait(10)  # the map notes the colour it chose for the run
    return w


def _highlighted(w) -> np.ndarray:
    return np.sort(w.map_view.rows[w.map_selection.highlighted])


def test_the_selection_is_read_from_the_session_and_undone(qtbot, win):
    w, name = win, win.session.current_dataset_name
    with qtbot.waitSignal(w.selection.changed):
        w.session.set_selection(name, [3, 9, 60])  # a change made in the model (a script, undo)
    np.testing.assert_array_equal(_highlighted(w), [3, 9, 60])  # the map highlights the model's rows
    np.testing.assert_array_equal(w.selection.rows(name), [3, 9, 60])
    w.selection.select(name, [9, 100], "add")  # a view's gesture: a session command
    np.testing.assert_array_equal(w.session.selected_rows(name), [3, 9, 60, 100])
    assert w.undo_action.text().endswith(f"Select 4 row(s) of {name}")
    w.undo_action.trigger()
    np.testing.assert_array_equal(_highlighted(w), [3, 9, 60])
    w.undo_action.trigger()
    assert w.session.selected_rows(name).size == 0 and _highlighted(w).size == 0
    w.redo_action.trigger()
    np.testing.assert_array_equal(_highlighted(w), [3, 9, 60])
    text = w.export.copy_selected_rows()  # the copied rows are the model's
    assert len(text.splitlines()) == 4
    explain = w.map_instruments.explain  # Keep as B: a kept selection in the session
    explain.keep_b()
    np.testing.assert_array_equal(w.session.saved_selection(name, "B"), [3, 9, 60])
    np.testing.assert_array_equal(explain.b_rows, [3, 9, 60])
    w.undo_action.trigger()
    assert explain.b_rows is None and w.session.saved_selections() == {}


def test_colour_by_and_point_size_are_session_settings(qtbot, win):
    w, view = win, win.map_view
    assert w.session.view_setting("map", "colour") == view.color_combo.currentData()  # noted when drawn
    first = view.color_combo.currentData()
    assert view.set_color_column("petal_length")  # chosen in the combo: a command
    assert w.session.view_setting("map", "colour") == "col:petal_length" and view.coloring.mode == "continuous"
    w.undo_action.trigger()
    assert view.color_combo.currentData() == first == w.session.view_setting("map", "colour")
    w.session.set_view_setting("map", "colour", "col:sepal_width")  # the model's change reaches the map
    assert view.color_combo.currentData() == "col:sepal_width" and view.coloring.title.startswith("sepal_width")
    for size in (8, 9, 10):  # spin steps: one undo step
        view.size_spin.setValue(size)
    assert w.session.view_setting("map", "point_size") == 10
    w.undo_action.trigger()
    assert view.size_spin.value() == 7 == w.session.view_setting("map", "point_size")
    density = w.map_instruments.density
    density.box.setChecked(True)
    assert w.session.view_setting("map_instruments", "density")["on"] is True
    w.undo_action.trigger()
    assert not density.box.isChecked() and w.session.view_setting("map_instruments", "density")["on"] is False


def test_report_items_are_commands_the_dialog_follows(qtbot, win):
    w = win
    item = w.report_actions.add_view("map")
    assert item is not None and w.session.report.items == [item]
    dialog = w.report_actions.show_dialog()
    for text in ("T", "Th", "The map"):  # typed: one command
        dialog.edit_caption(text)
    assert item.caption == "The map" and dialog.list.item(0).text().endswith("— The map")
    w.undo_action.trigger()
    assert item.caption == "" and dialog.caption_edit.text() == ""
    w.undo_action.trigger()  # the add
    assert w.session.report.is_empty and dialog.list.count() == 0
    w.redo_action.trigger()
    w.redo_action.trigger()
    assert dialog.list.count() == 1 and item.caption == "The map"
    dialog.list.setCurrentRow(0)
    dialog.remove()
    assert w.session.report.is_empty
    w.undo_action.trigger()
    assert w.session.report.items == [item] and dialog.list.count() == 1
    from manifold_studio.analysis.report_html import report_html
    assert "The map" in html_module.unescape(report_html(w.session.report))  # the HTML renders the model's items


def test_a_reopened_project_shows_the_saved_selection_colour_and_report(qtbot, win, make_window, fresh_host, tmp_path):
    w, name = win, win.session.current_dataset_name
    w.selection.select(name, [1, 2, 3, 140])
    assert w.map_view.set_color_column("sepal_width")
    w.map_view.size_spin.setValue(11)
    w.map_instruments.density.box.setChecked(True)
    w.report_actions.add_view("map")
    w.session.set_report_caption(0, "as saved")
    path = tmp_path / "state.msproj"
    w.project.save_project(path)
    wait_idle(qtbot, w)
    other = make_window(fresh_host)
    if other.map_selection is None:
        install_selection(other)
    other.project.open_project(path)
    wait_idle(qtbot, other)
    qtbot.waitUntil(lambda: other.map_view.point_count() == 150, timeout=5_000)
    np.testing.assert_array_equal(other.session.selected_rows(name), [1, 2, 3, 140])
    np.testing.assert_array_equal(_highlighted(other), [1, 2, 3, 140])
    assert other.map_view.color_combo.currentData() == "col:sepal_width"
    assert other.map_view.size_spin.value() == 11 and other.map_instruments.density.box.isChecked()
    assert [i.caption for i in other.session.report.items] == ["as saved"]
