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
