"""File ▸ Export in the window: views to PNG and SVG at a chosen size, the data set with all
result columns to CSV, copy image / selected rows, and the bad-input messages."""
import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image
from PySide6.QtGui import QGuiApplication

from gui_helpers import wait_idle, wait_last_run
from manifold_studio.tables.dataset_columns import dataset_columns
from manifold_studio.fileio.export_paths import MAX_SIDE, MIN_SIDE
from manifold_studio.gui import export as export_module
from manifold_studio.gui.export import ImageExportDialog, install_export
from manifold_studio.tables.export import rows_as_tsv

WINDOW_DIALOGS = False


@pytest.fixture
def win(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    qtbot.wait(50)
    install_export(w)
    return w


def _status(w) -> str:
    return w.statusBar().currentMessage()


def _exported(qtbot, job) -> bool:
    """Wait for an export job; whether it wrote its file."""
    assert job is not None
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    return job.state == "done"


def _hue_counts(path) -> dict:
    """Pixels of clearly coloured points by hue: blue, orange, green (the three species)."""
    hsv = np.asarray(Image.open(path).convert("RGB").convert("HSV")).reshape(-1, 3) / 255.0
    strong = hsv[:, 1] > 0.4
    return {name: int((strong & (hsv[:, 0] >= lo) & (hsv[:, 0] <= hi)).sum())
            for name, (lo, hi) in {"blue": (0.52, 0.62), "orange": (0.04, 0.12), "green": (0.28, 0.38)}.items()}


def test_menu_entries(win):
    assert install_export(win) is win.export  # installing twice adds nothing
    file_actions = [a.text() for a in win.menus["file"].actions()]
    assert file_actions.count("&Export") == 1
    export = win.export.menu
    assert "&Export" in file_actions and file_actions.index("&Export") < file_actions.index("&Quit")
    texts = [a.text() for a in export.actions() if not a.isSeparator()]
    assert texts == ["View as &image (PNG, SVG)…", "&Data set with results as CSV…",
                     "Current run into a new &AnnData file (.h5ad)…", "Add current run to an existing AnnData file…",
                     "&Copy image", "Copy selected &rows"]
    vb_menu = win.map_view.plot_item.getViewBox().menu
    assert win.export.map_menu_action in vb_menu.actions()
    keys = [k for k, _t, _w in win.export.views()]
    assert keys[0] == "map" and not {"data", "algorithm", "runs", "messages"} & set(keys)
    dialog = ImageExportDialog(win.export.views(), "map", (640, 480), win)
    assert dialog.choice() == ("map", 640, 480)
    assert (dialog.width_spin.minimum(), dialog.width_spin.maximum()) == (MIN_SIDE, MAX_SIDE)
    dialog.deleteLater()


def test_map_to_png_and_svg_at_the_chosen_size(win, qtbot, tmp_path):
    item = win.map_view.plot_item
    before = item.geometry()
    png, svg = tmp_path / "map.png", tmp_path / "map.svg"
    assert _exported(qtbot, win.export.export_image("map", png, 1000, 420))
    assert str(png) in _status(win) and "1000 × 420" in _status(win)
    img = Image.open(png)
    img.verify()
    assert Image.open(png).size == (1000, 420)
    hues = _hue_counts(png)
    assert all(n > 100 for n in hues.values()), hues  # the three species' points are there
    assert _exported(qtbot, win.export.export_image("map", svg, 640, 480))
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and (root.get("width"), root.get("height")) == ("640", "480")
    circles = [e for e in root.iter() if e.tag.endswith("path") and e.get("d", "").startswith("M0.5,0 C")]
    assert len(circles) == 150 + 3  # one shape per point, plus the three legend samples
    assert item.geometry() == before  # the map on screen is as it was


def test_every_open_view_exports(win, qtbot, tmp_path):
    for key, _title, _widget in win.export.views():
        name = key.replace(":", "_")
        assert _exported(qtbot, win.export.export_image(key, tmp_path / f"{name}.png", 300, 200)), _status(win)
        assert Image.open(tmp_path / f"{name}.png").size == (300, 200)
        assert _exported(qtbot, win.export.export_image(key, tmp_path / f"{name}.svg", 300, 200)), _status(win)
        root = ET.parse(tmp_path / f"{name}.svg").getroot()
        assert (root.get("width"), root.get("height")) == ("300", "200")


BAD_IMAGE_EXPORTS = [
    ("map.gif", (400, 300), "unknown file extension ('.gif'); allowed: .png, .svg"),
    ("map", (400, 300), "unknown file extension (none); allowed: .png, .svg"),
    ("map.png", (0, 300), f"from {MIN_SIDE} to {MAX_SIDE:,} px"),
    ("map.png", (-20, 300), f"from {MIN_SIDE} to {MAX_SIDE:,} px"),
    ("map.svg", (400, 100_000), f"from {MIN_SIDE} to {MAX_SIDE:,} px"),
]


def test_bad_image_exports_say_what_is_allowed(win, tmp_path):
    for name, size, message in BAD_IMAGE_EXPORTS:
        assert win.export.export_image("map", tmp_path / name, *size) is None
        assert message in _status(win), (name, size)
        assert list(tmp_path.iterdir()) == []
        assert len(win.session.runs) == 1 and win.map_view.point_count() == 150  # nothing lost


def test_unwritable_folder(win, locked):
    assert win.export.export_image("map", locked / "old.png", 400, 300) is None
    assert f"Cannot write to {locked}: permission denied" in _status(win)
    assert win.export.export_csv(locked / "iris.csv") is None
    assert f"Cannot write to {locked}: permission denied" in _status(win)
    assert [p.name for p in locked.iterdir()] == ["old.png"] and (locked / "old.png").read_bytes() == b"old"


def test_a_write_failing_in_the_job_is_reported(win, qtbot, tmp_path, monkeypatch):
    from manifold_studio.fileio.export_paths import ExportError

    def refuse(path, write, binary=True):
        raise ExportError(f"Cannot write to {tmp_path}: permission denied.")

    monkeypatch.setattr(export_module, "write_file", refuse)
    assert not _exported(qtbot, win.export.export_image("map", tmp_path / "map.png", 400, 300))
    assert f"Export failed: Cannot write to {tmp_path}: permission denied" in _status(win)
    assert list(tmp_path.iterdir()) == [] and win.map_view.point_count() == 150


def test_csv_with_every_result_column(win, qtbot, tmp_path):
    name = win.session.current_dataset_name
    cols = dataset_columns(win.session, name)
    path = tmp_path / "iris.csv"
    job = win.export.export_csv(path)
    assert job is not None
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert f"Wrote 150 rows × {len(cols) + 1} columns" in _status(win)  # the row id and every column
    with open(path, newline="") as fh:
        table = list(csv.reader(fh))
    assert table[0] == ["row_id"] + [c.name for c in cols] and any(c.name.endswith("pca 2") for c in cols)
    assert [int(r[0]) for r in table[1:]] == win.session.dataset(name).row_ids.tolist()
    table = [r[1:] for r in table]
    for j, col in enumerate(cols):
        cells = [r[j] for r in table[1:]]
        if col.numeric:
            np.testing.assert_array_equal(np.array(cells, dtype=float), col.values.astype(float))
        else:
            assert cells == [str(v) for v in col.values]
    assert win.export.export_csv(tmp_path / "iris.txt") is None
    assert "allowed: .csv" in _status(win) and not (tmp_path / "iris.txt").exists()


def test_copy_selected_rows_and_image(win, qtbot, monkeypatch):
    clipboard = QGuiApplication.clipboard()
    clipboard.setText("before")
    assert win.export.copy_selected_rows() is None
    assert "Select points first" in _status(win) and clipboard.text() == "before"
    name = win.session.current_dataset_name
    win.selection.select(name, [7, 0, 42])
    text = win.export.copy_selected_rows()
    cols = dataset_columns(win.session, name)
    assert clipboard.text() == text == rows_as_tsv([c.name for c in cols], [c.values for c in cols], [0, 7, 42])
    lines = text.splitlines()
    assert lines[0].split("\t") == [c.name for c in cols] and len(lines) == 4
    ds = win.session.dataset(name)
    assert lines[2].split("\t")[0] == repr(float(ds.X[7, 0]))
    assert "Copied 3 selected rows" in _status(win)
    # a large selection is formatted by a job; the clipboard gets the same text
    monkeypatch.setattr(export_module, "COPY_ROWS_IN_JOB", 2)
    clipboard.setText("before")
    assert win.export.copy_selected_rows() is None
    qtbot.waitUntil(lambda: win.export.job.finished, timeout=10_000)
    assert clipboard.text() == text
    image = win.export.copy_image("map")
    assert not image.isNull() and clipboard.image().size() == image.size()
    assert (image.width(), image.height()) == (win.map_view.width(), win.map_view.height())


def test_the_focused_view_is_the_current_one(win, qtbot):
    from PySide6.QtWidgets import QApplication

    win.activateWindow()
    dock = win.docks["view:spectrum"]
    dock.show()
    dock.raise_()
    target = dock.widget().findChildren(type(win.map_view.plot))[0]
    target.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is target, timeout=5_000)
    assert win.export.current_view() == "view:spectrum"
    win.map_view.plot.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is win.map_view.plot, timeout=5_000)
    assert win.export.current_view() == "map"
