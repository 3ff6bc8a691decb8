"""The report renders from state (issue 30, item 5): *Add to report* draws a view off screen at a
fixed size whether its tab is visible or not; a view with nothing to show cannot be added (its
button greyed, saying why); captions are edited in the report, not in a box on every add."""
import io

import numpy as np
import pytest
from PIL import Image

from gui_helpers import wait_idle, wait_last_run
from manifold_studio.gui.report_actions import BUTTON_TIP, FIGURE_SIZE

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture
def win(qtbot, make_window, fresh_host, monkeypatch):
    monkeypatch.setattr("PySide6.QtWidgets.QInputDialog.getText",
                        lambda *a, **k: pytest.fail("Add to report must not open a caption box"))
    w = make_window(fresh_host)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    return w


def _drawn(png: bytes) -> int:
    """Pixels that are not the background (the most common colour)."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(np.uint32)
    _, counts = np.unique((pixels[:, 0] << 16) | (pixels[:, 1] << 8) | pixels[:, 2], return_counts=True)
    return int(len(pixels) - counts.max())


@pytest.mark.parametrize("view_id", ["correlations", "distribution"])
def test_a_view_behind_another_tab_gives_a_drawn_figure(qtbot, win, view_id):
    w = win
    key = f"view:{view_id}"
    dock, other = w.docks[key], w.docks["view:spectrum"]
    w.tabifyDockWidget(dock, other)
    dock.show()  # opened (views are hidden until opened, issue 33) ...
    other.show()
    other.raise_()  # the feature view's tab is behind the spectrum's
    qtbot.wait(50)
    view = w.views[view_id]
    assert not view.on_screen()
    item = w.report_actions.add_view(key)
    assert item is not None, w.statusBar().currentMessage()
    pixels = np.asarray(Image.open(io.BytesIO(item.image)).convert("RGB"))
    assert pixels.shape[:2] == (FIGURE_SIZE[1], FIGURE_SIZE[0])
    assert _drawn(item.image) > 3_000  # axes, bars or cells: not blank axes
    assert item.kind == "data" and item.caption == ""


def test_a_view_with_nothing_to_show_is_greyed_and_says_why(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    for key in ("view:distribution", "test_score"):  # hidden until opened (issue 33)
        w.window_layout.open(key)
    actions = w.report_actions
    actions.refresh_buttons()
    map_button = actions.buttons["map"]
    assert not map_button.isEnabled() and "draws nothing yet" in map_button.toolTip()
    button = actions.buttons["view:distribution"]
    assert not button.isEnabled() and "load a data set first" in button.toolTip()
    assert actions.add_view("map") is None and len(w.session.report) == 0
    assert "draws nothing yet" in w.statusBar().currentMessage()
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    qtbot.waitUntil(button.isEnabled, timeout=5_000)
    assert button.toolTip() == BUTTON_TIP
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    qtbot.waitUntil(map_button.isEnabled, timeout=5_000)
    assert map_button.toolTip() == BUTTON_TIP
    assert actions.buttons["test_score"].isEnabled() is False
    assert "run Test & Score first" in actions.buttons["test_score"].toolTip()


def test_captions_are_edited_in_the_report(qtbot, win):
    w, actions = win, win.report_actions
    first = actions.add_view("map")
    second = actions.add_dataset()
    assert first.caption == second.caption == ""
    dialog = actions.show_dialog()
    assert dialog.list.currentRow() == 1  # the item added last, ready for its caption
    dialog.list.setCurrentRow(0)
    assert dialog.caption_edit.isEnabled() and dialog.caption_edit.text() == ""
    dialog.caption_edit.selectAll()
    qtbot.keyClicks(dialog.caption_edit, "The PCA map")
    assert first.caption == "The PCA map" and "The PCA map" in dialog.list.item(0).text()
    dialog.list.setCurrentRow(1)
    assert dialog.caption_edit.text() == ""
    qtbot.keyClicks(dialog.caption_edit, "Iris")
    assert [it.caption for it in w.session.report.items] == ["The PCA map", "Iris"]
    dialog.list.setCurrentRow(0)
    assert dialog.caption_edit.text() == "The PCA map"
