"""The import dialog for CSV/TSV and Excel files (issue 20): preview of the first rows, one line
per column (type, distinct values, missing count, editable role), reading options, the sheet of a
workbook, and the choices remembered per file; driven with pytest-qt on generated files."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QDialog  # noqa: E402

from manifold_studio.gui import import_dialog  # noqa: E402
from manifold_studio.gui.import_dialog import ImportDialog, options_dialog, remembered  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    return discovered_host(("pca",), ())


def _csv(tmp_path, sep=","):
    rng = np.random.default_rng(0)
    path = tmp_path / "plants.csv"
    lines = [sep.join(["height", "width", "site", "kind"])]
    for i in range(60):
        lines.append(sep.join([f"{rng.normal(10, 2):.3f}", f"{rng.normal(5, 1):.3f}", f"s{i % 4}",
                               "ab"[i % 2]]))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_change_a_role_to_meta_and_the_loaded_data_set_has_it_as_meta(qtbot, make_window, host, tmp_path, monkeypatch):
    path = _csv(tmp_path)
    w = make_window(host)
    loader = host.loader_for(path)
    dlg = options_dialog(loader, path, w)
    assert isinstance(dlg, ImportDialog)
    qtbot.addWidget(dlg)
    # one line per column with the inferred type, distinct values and missing count
    names = [dlg.columns.item(r, 0).text() for r in range(dlg.columns.rowCount())]
    assert names == ["height", "width", "site", "kind"]
    row = {n: r for r, n in enumerate(names)}
    assert dlg.columns.item(row["height"], 1).text() == "numeric"
    assert dlg.columns.item(row["site"], 1).text() == "categorical"
    assert dlg.columns.item(row["site"], 2).text() == "4" and dlg.columns.item(row["site"], 3).text() == "0"
    # the preview shows the first rows as read
    assert dlg.preview.rowCount() == import_dialog.PREVIEW_ROWS
    assert dlg.preview.item(0, names.index("site")).text() == "s0"
    assert dlg.role_boxes["width"].currentText() == "feature"
    # a wrong delimiter shows one column; back to auto gives four
    dlg.form.editor("delimiter").set_value("semicolon")
    assert dlg.columns.rowCount() == 1
    dlg.form.editor("delimiter").set_value("auto")
    assert dlg.columns.rowCount() == 4
    # width → meta; the loaded data set has it as a meta column, not a feature
    dlg.role_boxes["width"].setCurrentText("meta")
    options = dlg.values()
    assert options["roles"] == {"width": "meta"}
    # Open: the window's own dialog (accepted as is) proposes the remembered role of this file
    monkeypatch.setattr(ImportDialog, "exec", lambda self: QDialog.DialogCode.Accepted)
    with qtbot.waitSignal(w.datasetLoaded, timeout=15_000):
        w.open_file(path, ask=True)
    ds = w.session.current_dataset
    assert "width" in ds.table.meta_names and "width" not in ds.feature_names
    assert "height" in ds.feature_names
    np.testing.assert_allclose(np.asarray(ds.column_values("width"), dtype=float)[:3],
                               np.loadtxt(path, delimiter=",", skiprows=1, usecols=1)[:3])


def test_choices_are_remembered_per_file(qtbot, tmp_path):
    from manifold_studio.plugins.host import PluginHost

    host = PluginHost().discover()
    a, b = _csv(tmp_path), tmp_path / "other.csv"
    b.write_text(a.read_text())
    dlg = ImportDialog(host.loader_for(a), a)
    qtbot.addWidget(dlg)
    dlg.form.editor("header").set_value("yes")
    dlg.role_boxes["site"].setCurrentText("skipped")
    dlg.values()
    assert remembered(a)["roles"] == {"site": "skipped"} and remembered(a)["header"] == "yes"
    assert remembered(b) == {}
    again = ImportDialog(host.loader_for(a), a)
    qtbot.addWidget(again)
    assert again.role_boxes["site"].currentText() == "skipped"
    assert again.form.values()["header"] == "yes"
    other = ImportDialog(host.loader_for(b), b)
    qtbot.addWidget(other)
    assert other.role_boxes["site"].currentText() != "skipped"


def test_excel_sheet_choice(qtbot, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("openpyxl")
    from manifold_studio.plugins.host import PluginHost

    path = tmp_path / "book.xlsx"
    with pd.ExcelWriter(path) as xl:
        pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]}).to_excel(xl, sheet_name="first", index=False)
        pd.DataFrame({"x": [1.0, 2.0], "y": [3.0, 4.0], "z": ["p", "q"]}).to_excel(xl, sheet_name="second",
                                                                                   index=False)
    host = PluginHost().discover()
    dlg = options_dialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    assert dlg.sheets == ["first", "second"]
    assert [dlg.columns.item(r, 0).text() for r in range(dlg.columns.rowCount())] == ["a", "b"]
    dlg.sheet_box.setCurrentText("second")
    assert [dlg.columns.item(r, 0).text() for r in range(dlg.columns.rowCount())] == ["x", "y", "z"]
    assert dlg.values()["sheet"] == "second"


def _wait_counts(qtbot, dlg):
    qtbot.waitUntil(lambda: not dlg.counting(), timeout=20000)


def test_counts_come_from_the_whole_column_and_a_text_class_column_is_proposed_as_target(qtbot, host, tmp_path):
    # 300 rows: the class column's first 20 rows hold one value only ('a'); 'b' and 'c' come later,
    # and 'site' has 7 missing cells after the preview rows
    path = tmp_path / "long.csv"
    lines = ["x,y,site,diagnosis"]
    for i in range(300):
        site = "" if i in range(100, 107) else f"s{i % 5}"
        lines.append(f"{i * 0.5:.1f},{(i * 7) % 11:.1f},{site},{'a' if i < 40 else 'bc'[i % 2]}")
    path.write_text("\n".join(lines) + "\n")
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    row = {dlg.columns.item(r, 0).text(): r for r in range(dlg.columns.rowCount())}
    _wait_counts(qtbot, dlg)
    assert dlg.columns.item(row["diagnosis"], 2).text() == "3"      # the preview rows show 1
    assert dlg.columns.item(row["site"], 3).text() == "7"           # the preview rows show 0
    assert dlg.columns.item(row["x"], 2).text() == "300"
    assert "whole column" in dlg.columns.item(row["x"], 2).toolTip()
    # no column was the target: the text column with few classes is proposed, and the loaded
    # data set has it as its target
    assert dlg.role_boxes["diagnosis"].currentText() == "target"
    assert "proposed as the target" in dlg.status.text()
    # the preview's note (diagnosis a meta column with the 1 class of the first 20 rows) is gone
    assert "column 'diagnosis' is not numeric" not in dlg.status.text()
    assert "'diagnosis' (3 classes in the whole column)" in dlg.status.text()
    assert "column 'site' is not numeric" in dlg.status.text()       # the other notes stay
    assert dlg.values()["roles"] == {"diagnosis": "target"}


def test_the_breast_cancer_diagnosis_is_proposed_as_target(qtbot, host):
    from pathlib import Path
    import manifold_studio_builtins
    path = Path(manifold_studio_builtins.__file__).parent / "data" / "breast_cancer.csv"
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    _wait_counts(qtbot, dlg)
    assert dlg.role_boxes["diagnosis"].currentText() == "target"
    assert dlg.columns.item([dlg.columns.item(r, 0).text() for r in range(dlg.columns.rowCount())]
                            .index("diagnosis"), 2).text() == "2"


def test_columns_list_shows_ten_rows_and_is_resizable(qtbot, host, tmp_path):
    path = _csv(tmp_path)
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    dlg.resize(900, 640)
    dlg.show()
    qtbot.waitExposed(dlg)
    row_h = dlg.columns.verticalHeader().defaultSectionSize()
    assert dlg.columns.viewport().height() >= 10 * row_h     # ten whole rows are in sight
    # ...and the whole dialog fits a 1366 x 768 screen with its title bar and a task bar
    assert dlg.minimumSizeHint().height() <= 700
    dlg.resize(900, 10)
    qtbot.waitUntil(lambda: dlg.height() <= 700)
    assert dlg.columns.viewport().height() >= 10 * row_h
    assert dlg.splitter.count() == 2 and dlg.splitter.widget(0).isAncestorOf(dlg.columns)
    _wait_counts(qtbot, dlg)


@pytest.mark.parametrize("chain, expected", [([], "drop"), ([("impute", {}), ("standardize", {})], "keep")])
def test_missing_values_default_follows_the_chain(qtbot, host, tmp_path, chain, expected):
    path = _csv(tmp_path)
    dlg = options_dialog(host.loader_for(path), path, None, chain=chain)
    qtbot.addWidget(dlg)
    assert dlg.form.values()["missing"] == expected
    assert ("imputes" in dlg.missing_note.text()) == (expected == "keep")
    assert (f"<b>{expected}</b>") in dlg.missing_note.text()
    _wait_counts(qtbot, dlg)


# -- issue 33 (items 5 and 7): one target named everywhere, several visible rows, asked roles said --------
def _shipped(name):
    from pathlib import Path

    import manifold_studio_builtins
    return Path(manifold_studio_builtins.__file__).parent / "data" / name


@pytest.mark.parametrize("name, target", [("iris.csv", "species"), ("wine.csv", "cultivar"),
                                          ("breast_cancer.csv", "diagnosis"), ("penguins.csv", "species")])
def test_every_shipped_table_names_its_proposed_target_in_every_field(qtbot, host, name, target):
    pd = pytest.importorskip("pandas")
    import manifold_studio as ms

    path = _shipped(name)
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    _wait_counts(qtbot, dlg)
    assert [n for n, box in dlg.role_boxes.items() if box.currentText() == "target"] == [target]
    assert dlg.form.values()["label_column"] == target
    assert f"'{target}'" in dlg.status.text() and "proposed as the target" in dlg.status.text()
    options = dlg.values()
    assert options["label_column"] == target
    ds = ms.load_data(str(path), **{k: v for k, v in options.items() if v is not None})
    frame = pd.read_csv(path).dropna(subset=ds.feature_names)
    assert ds.label_name == target
    assert [str(v) for v in ds.labels] == [str(v) for v in frame[target]]


def test_the_label_field_and_the_role_boxes_follow_each_other(qtbot, host):
    path = _shipped("penguins.csv")
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    _wait_counts(qtbot, dlg)

    def targets():
        return [n for n, box in dlg.role_boxes.items() if box.currentText() == "target"]

    # a target chosen in the role column fills the field; the former target gets its own role back
    dlg.role_boxes["island"].setCurrentText("target")
    assert targets() == ["island"] and dlg.form.values()["label_column"] == "island"
    assert dlg.role_boxes["species"].currentText() == "meta"
    # no target in the role column: the field says none
    dlg.role_boxes["island"].setCurrentText("meta")
    assert targets() == [] and dlg.form.values()["label_column"] is None
    # a column named in the field (by name or by index) becomes the target
    dlg.form.editor("label_column").set_value("sex")
    _wait_counts(qtbot, dlg)
    assert targets() == ["sex"] and dlg.values()["label_column"] == "sex"
    dlg.form.editor("label_column").set_value(0)
    _wait_counts(qtbot, dlg)
    assert targets() == ["species"]
    # none in the field: no target, and none is proposed again once the whole file is counted
    dlg.form.editor("label_column").set_value(None)
    _wait_counts(qtbot, dlg)
    assert targets() == [] and dlg.form.values()["label_column"] is None
    assert "proposed as the target" not in dlg.status.text()


def test_an_asked_feature_role_replaces_the_readers_note_and_free_text_cannot_be_a_feature(qtbot, host, tmp_path):
    path = _shipped("penguins.csv")
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    _wait_counts(qtbot, dlg)
    assert "column 'sex' is not numeric" in dlg.status.text()
    dlg.role_boxes["sex"].setCurrentText("feature")
    text = dlg.status.text()
    assert "column 'sex' is not numeric" not in text
    assert "'sex' is a feature as asked" in text and "(female=0, male=1)" in text
    assert "its 11 row(s) without a value" in text      # counted over the whole column, not the preview
    assert "'species' (3 classes in the whole column) is proposed as the target" in text   # still said
    assert dlg.values()["roles"] == {"species": "target", "sex": "feature"}
    # a free-text column: its role box does not offer 'feature'
    notes = tmp_path / "notes.csv"
    notes.write_text("x,y,comment\n" + "".join(f"{i},{i % 7},remark number {i}\n" for i in range(30)))
    dlg = ImportDialog(host.loader_for(notes), notes)
    qtbot.addWidget(dlg)
    box = dlg.role_boxes["comment"]
    assert box.currentText() == "meta"
    assert not box.model().item(box.findText("feature")).isEnabled()
    assert box.model().item(box.findText("skipped")).isEnabled()
    _wait_counts(qtbot, dlg)


def _visible_rows(table) -> int:
    """The rows of ``table`` whole in its viewport."""
    area = table.viewport().rect()
    return sum(area.contains(table.visualRect(table.model().index(r, 0)))
               for r in range(table.rowCount()))


def test_at_1366_by_768_ten_column_lines_and_several_preview_rows_are_visible(qtbot, host):
    path = _shipped("breast_cancer.csv")      # 31 columns
    dlg = ImportDialog(host.loader_for(path), path)
    qtbot.addWidget(dlg)
    # the size the dialog takes on a 1366 x 768 screen (its default, less a title bar and a task bar)
    assert import_dialog.DEFAULT_SIZE[0] <= 1366 - 40 and import_dialog.DEFAULT_SIZE[1] <= 768 - 60
    dlg.resize(*import_dialog.DEFAULT_SIZE)
    dlg.show()
    qtbot.waitExposed(dlg)
    assert _visible_rows(dlg.columns) >= 10
    assert _visible_rows(dlg.preview) >= 5
    # the smallest the dialog gets keeps ten column lines and five preview rows
    assert dlg.minimumSizeHint().height() <= 700
    dlg.resize(700, 10)
    qtbot.waitUntil(lambda: dlg.height() <= 700)
    assert _visible_rows(dlg.columns) >= 10 and _visible_rows(dlg.preview) >= 5
    # both splits can be dragged: the columns list grows when the preview shrinks
    sizes = dlg.splitter.sizes()
    dlg.resize(*import_dialog.DEFAULT_SIZE)
    qtbot.waitUntil(lambda: dlg.height() >= 600)
    dlg.splitter.setSizes([sum(dlg.splitter.sizes()) - 10, 10])
    assert _visible_rows(dlg.columns) > 10 and dlg.splitter.sizes()[0] > sizes[0]
    assert dlg.sides.count() == 2 and dlg.sides.widget(1) is dlg.splitter
    _wait_counts(qtbot, dlg)


def test_breast_cancer_opened_in_the_window_as_proposed_has_diagnosis_as_its_labels(qtbot, make_window, host,
                                                                                      monkeypatch):
    pd = pytest.importorskip("pandas")
    path = _shipped("breast_cancer.csv")
    w = make_window(host)
    opened = []

    def accept_when_counted(dlg):      # Open pressed once the whole file is counted, as proposed
        _wait_counts(qtbot, dlg)
        opened.append(dlg.form.values()["label_column"])
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(ImportDialog, "exec", accept_when_counted)
    with qtbot.waitSignal(w.datasetLoaded, timeout=15_000):
        w.open_file(path, ask=True)
    ds = w.session.current_dataset
    assert opened == ["diagnosis"] and ds.label_name == "diagnosis" and "diagnosis" not in ds.feature_names
    assert [str(v) for v in ds.labels] == pd.read_csv(path)["diagnosis"].astype(str).tolist()
    assert ds.X.shape == (569, 30)
