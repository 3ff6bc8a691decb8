"""The selection, view settings and report items are session state (issue 30): each change is a
command that undo records, observers hear of it, and the project keeps it. Qt-free."""
from __future__ import annotations

import numpy as np
import pytest

from manifold_studio.analysis.report import run_item, view_item
from manifold_studio.errors import InvalidParameterError
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.project.recovery import snapshot


def _events(s):
    seen = []
    s.subscribe(lambda e: seen.append((e.kind, e.dataset, e.setting)))
    return seen


def test_selection_commands_combine_rows_and_undo_redo(iris):
    seen = _events(iris)
    cmd = iris.set_selection("Iris", [0, 3, 7])
    np.testing.assert_array_equal(iris.selected_rows("Iris"), [0, 3, 7])
    assert cmd.text == "Select 3 row(s) of Iris" and ("selection_changed", "Iris", None) in seen
    iris.set_selection("Iris", [9, 3], mode="add")
    np.testing.assert_array_equal(iris.selected_rows("Iris"), [0, 3, 7, 9])
    iris.set_selection("Iris", [0, 1], mode="toggle")
    np.testing.assert_array_equal(iris.selected_rows("Iris"), [1, 3, 7, 9])
    iris.set_selection("Iris", [3, 7], mode="remove")
    np.testing.assert_array_equal(iris.selected_rows("Iris"), [1, 9])
    assert iris.set_selection("Iris", [1, 9]) is None  # the same selection: nothing recorded
    iris.invert_selection("Iris")
    assert iris.selection_mask("Iris").sum() == 148 and not iris.selection_mask("Iris")[[1, 9]].any()
    iris.clear_selection()
    assert not iris.selection_mask("Iris").any() and iris.selections() == {}
    assert iris.clear_selection() is None
    iris.undo()  # back to the inverted selection, then to [1, 9], ...
    assert iris.selection_mask("Iris").sum() == 148
    iris.undo()
    np.testing.assert_array_equal(iris.selected_rows("Iris"), [1, 9])
    iris.redo()
    assert iris.selection_mask("Iris").sum() == 148
    iris.select_all("Iris")
    assert iris.selection_mask("Iris").all()


def test_removing_from_nothing_selects_nothing_and_bad_rows_are_refused(iris):
    assert iris.set_selection("Iris", [2, 4], mode="remove") is None
    with pytest.raises(InvalidParameterError, match=r"Selected rows must lie in 0\.\.149"):
        iris.set_selection("Iris", [150])
    with pytest.raises(InvalidParameterError, match="Selection mode must be one of"):
        iris.set_selection("Iris", [1], mode="xor")
    assert not iris.selection_mask("Iris").any()


def test_a_selection_belongs_to_its_data_set_object(iris):
    iris.set_selection("Iris", [5, 6])
    ds = iris.remove_dataset("Iris")
    assert iris.selection_mask("Iris").size == 0  # not loaded
    iris.add_dataset(ds, replace=True)  # Edit ▸ Undo of the removal: the same object is back
    np.testing.assert_array_equal(iris.selected_rows("Iris"), [5, 6])
    iris.remove_dataset("Iris")
    iris.load("sample:iris")  # another data set under the same name: nothing selected
    assert iris.current_dataset_name == "Iris" and not iris.selection_mask("Iris").any()
    import gc
    import weakref
    gone = weakref.ref(ds)
    del ds
    gc.collect()
    assert gone() is None  # the selection (and its undo steps) do not keep a removed data set alive


def test_a_kept_selection_is_a_command_and_keeps_its_rows(iris):
    """Explain selection's "Keep as B": a named selection of the data set, undoable."""
    seen = _events(iris)
    assert iris.save_selection("Iris", "B") is None and iris.saved_selection("Iris", "B") is None  # nothing selected
    iris.set_selection("Iris", [4, 8])
    cmd = iris.save_selection("Iris", "B")
    assert cmd.text == "Keep 2 row(s) of Iris as selection B" and ("saved_selection_changed", "Iris", None) in seen
    iris.set_selection("Iris", [1])  # the current selection moves on; B stays
    np.testing.assert_array_equal(iris.saved_selection("Iris", "B"), [4, 8])
    iris.save_selection("Iris", "B", rows=[7])
    assert iris.saved_selections() == {"Iris": {"B": [7]}}
    iris.undo()
    np.testing.assert_array_equal(iris.saved_selection("Iris", "B"), [4, 8])
    iris.undo(), iris.undo()
    assert iris.saved_selection("Iris", "B") is None and iris.saved_selections() == {}


def test_view_settings_are_commands_with_plain_values(iris):
    seen = _events(iris)
    assert iris.view_setting("map", "colour", "") == ""
    cmd = iris.set_view_setting("map", "colour", "column:petal_length")
    assert cmd.text.startswith("Set the map's colour to") and ("view_setting_changed", None, ("map", "colour")) in seen
    iris.set_view_setting("map", "point_size", np.int64(9))
    density = iris.set_view_setting("map_instruments", "density", {"on": True, "bandwidth": 30})
    assert density.text == "Change the map instruments' density settings"
    iris.undo()
    assert iris.view_settings() == {"map": {"colour": "column:petal_length", "point_size": 9}}
    assert iris.set_view_setting("map", "point_size", 9) is None
    iris.undo()
    assert iris.view_settings() == {"map": {"colour": "column:petal_length"}}
    iris.undo()
    assert iris.view_setting("map", "colour") is None and iris.view_settings() == {}
    iris.redo()
    assert iris.view_setting("map", "colour") == "column:petal_length"
    with pytest.raises(InvalidParameterError, match="map.opacity must be a finite number"):
        iris.set_view_setting("map", "opacity", float("nan"))
    with pytest.raises(InvalidParameterError, match="must be plain data"):
        iris.set_view_setting("map", "thing", object())


def test_report_items_add_remove_move_caption_through_commands(iris):
    run = iris.run("pca", n_components=2)
    seen = _events(iris)
    a, b, c = run_item(run), view_item("B"), view_item("C")
    for item in (a, b, c):
        iris.add_report_item(item)
    assert [i.title for i in iris.report.items][1:] == ["B", "C"] and ("report_changed", None, None) in seen
    iris.move_report_item(2, 0)
    assert iris.report.items == [c, a, b]
    assert iris.move_report_item(0, 0) is None
    iris.remove_report_item(1)
    assert iris.report.items == [c, b]
    for text in ("T", "Th", "The C"):  # typing: one command
        iris.set_report_caption(0, text)
    assert c.caption == "The C"
    iris.undo()
    assert c.caption == ""
    iris.undo()  # the removal: a is back where it was
    assert iris.report.items == [c, a, b]
    iris.undo()
    assert iris.report.items == [a, b, c]
    iris.redo(), iris.redo(), iris.redo()
    assert iris.report.items == [c, b] and c.caption == "The C"
    with pytest.raises(IndexError, match="there is no item 5"):
        iris.remove_report_item(5)


def test_project_and_recovery_keep_selection_view_settings_and_report(iris, tmp_path):
    """Save / reopen (and the autosave's snapshot) read the selection, the kept selections, the
    views' settings and the report from the session; a damaged selection is left out, said."""
    iris.load("sample:wine")
    iris.set_selection("Iris", [1, 2, 40])
    iris.set_selection("Wine", np.arange(10))
    iris.set_view_setting("map", "colour", "column:sepal_width")
    iris.set_view_setting("map_instruments", "density", {"on": True, "bandwidth": 30})
    iris.add_report_item(view_item("The map", "as chosen"))
    iris.save_selection("Wine", "B", rows=[3, 5])
    for source in (iris, snapshot(iris)):  # the autosave writes a snapshot
        back = read_project(save_project(source, tmp_path / "p.msproj")).session
        np.testing.assert_array_equal(back.selected_rows("Iris"), [1, 2, 40])
        np.testing.assert_array_equal(back.selected_rows("Wine"), np.arange(10))
        assert back.view_settings() == iris.view_settings()
        np.testing.assert_array_equal(back.saved_selection("Wine", "B"), [3, 5])
        assert [(i.title, i.caption) for i in back.report.items] == [("The map", "as chosen")]


def _rewritten(path, out, change):
    """A copy of project ``path`` at ``out`` whose document and arrays ``change(meta, arrays)`` edits."""
    import json

    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(str(arrays["__manifold_studio_project__"]))
    change(meta, arrays)
    arrays["__manifold_studio_project__"] = np.array(json.dumps(meta))
    np.savez_compressed(str(out) + ".npz", **arrays)
    (out.parent / (out.name + ".npz")).rename(out)
    return out


def test_a_project_from_before_keeps_its_map_colour(iris, tmp_path):
    """A project written before the views' settings were session state kept the map's colour in
    the window's settings: it is read into the session."""
    def older(meta, _arrays):
        del meta["views"], meta["selection"], meta["saved_selections"]
        meta["view_settings"] = {"map_colour": "col:petal_length", "algorithm": "pca"}

    path = _rewritten(save_project(iris, tmp_path / "p.msproj"), tmp_path / "old.msproj", older)
    contents = read_project(path)
    assert not contents.problems and contents.session.view_settings() == {"map": {"colour": "col:petal_length"}}


def test_a_damaged_selection_in_a_project_is_left_out_and_said(iris, tmp_path):
    iris.set_selection("Iris", [1, 2])

    def damage(meta, arrays):
        arrays["selection/0"] = np.array([1, 500])  # rows the data set does not have
        meta["saved_selections"] = {"Iris": {"B": "no/such/member"}}

    path = _rewritten(save_project(iris, tmp_path / "p.msproj"), tmp_path / "bad.msproj", damage)
    contents = read_project(path)
    assert contents.session.selections() == {} and contents.session.saved_selections() == {}
    assert any("the selection of 'Iris' is damaged" in p and "not a list of rows" in p for p in contents.problems)
    assert any("selection B of 'Iris' is damaged" in p and "no/such/member" in p for p in contents.problems)
