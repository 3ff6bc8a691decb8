"""*Add to report* on every view (issue 21, item 4): one button per view, in the map's toolbar
and in every view dock's title bar; clicking it adds the view's figure and caption, in order."""
import io

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton

from gui_helpers import wait_idle, wait_last_run
from manifold_studio.gui.help_pages import shortcut_rows
from manifold_studio.gui.report_actions import BUTTON_TEXT, NOT_VIEWS, ViewTitleBar
from manifold_studio.gui.window_tools import VIEWS

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)
#: the runs that make every view of VIEWS apply to one of them
RUNS = (("pca", {"n_components": 3}), ("isomap", {"n_neighbors": 10, "n_components": 2}),
        ("hierarchical", {"n_clusters": 3, "method": "ward"}), ("perceptron", {}))
#: the tool docks that show a view too (the data table, Test & Score's table and plots, Choose k,
#: Compare clusterings)
TOOL_VIEWS = ("table", "test_score", "choose_k", "compare_clusterings")


@pytest.fixture
def win(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    for algo, params in RUNS:
        w.run_algorithm(algo, params)
        wait_last_run(qtbot, w)
        wait_idle(qtbot, w)
    return w


def _run_panel(qtbot, w, panel):
    job = panel.run()
    assert job is not None, panel.status.text()
    qtbot.waitUntil(lambda: job.finished, timeout=120_000)
    wait_idle(qtbot, w)
    assert panel.comparison is not None, panel.status.text()


def _run_tools(qtbot, w):
    """Test & Score and Compare clusterings have something to report only once they ran."""
    w.test_score.check("perceptron")
    w.test_score.set_scheme("kfold", folds=3, seed=0)
    _run_panel(qtbot, w, w.test_score)
    w.compare_clusterings.check("kmeans")
    w.compare_clusterings.set_range(2, 4, seed=0, validation=0.25)
    _run_panel(qtbot, w, w.compare_clusterings)


def _button(w, key) -> QToolButton:
    if key == "map":
        found = [b for b in w.map_view.findChildren(QToolButton) if b.text() == BUTTON_TEXT]
        assert len(found) == 1
        return found[0]
    bar = w.docks[key].titleBarWidget()
    assert isinstance(bar, ViewTitleBar), key
    assert bar.report_button.text() == BUTTON_TEXT and bar.title.text() == w.docks[key].windowTitle()
    return bar.report_button


def _show(qtbot, w, key) -> str:
    """Make view ``key`` apply and be on screen; returns its title."""
    if key == "map":
        return "Map"
    view_id = key.split(":", 1)[1] if key.startswith("view:") else None
    view = w.views.get(view_id)
    if view is not None:
        run = next((r for r in w.session.runs.values() if view.applies_to(r)), None)
        assert run is not None, f"no run shows {key}"
        w.session.set_current_run(run.id)
        wait_idle(qtbot, w)
    dock = w.docks[key]
    dock.show()
    dock.raise_()
    qtbot.waitUntil(dock.isVisible, timeout=5_000)
    if hasattr(view, "redraw"):
        view.redraw()
    if view is not None and callable(getattr(type(view), "compute", None)) and not hasattr(view, "redraw"):
        view.compute()  # a view with a Compute button (reconstruction, extension quality)
        qtbot.waitUntil(lambda: not view.busy, timeout=30_000)
    qtbot.wait(30)
    return dock.windowTitle()


def _drawn(png: bytes) -> int:
    """How many pixels are not the background (the most common colour)."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(np.uint32)
    # one integer per colour (0xRRGGBB): np.unique of those is far faster than of rows (axis=0)
    _, counts = np.unique((pixels[:, 0] << 16) | (pixels[:, 1] << 8) | pixels[:, 2], return_counts=True)
    return int(len(pixels) - counts.max())


def test_every_view_has_add_to_report_and_each_click_adds_its_figure_in_order(qtbot, win, monkeypatch):
    w, actions = win, win.report_actions
    monkeypatch.setattr("PySide6.QtWidgets.QInputDialog.getText", lambda *a, **k: pytest.fail("no modal caption box"))
    _run_tools(qtbot, w)
    keys = ["map"] + [f"view:{cls.view_id}" for cls in VIEWS if cls.view_id != "map"] + list(TOOL_VIEWS)
    assert not set(keys) & set(NOT_VIEWS)
    titles, blank = [], []
    for key in keys:
        button = _button(w, key)
        title = _show(qtbot, w, key)
        before = len(w.session.report)
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        assert len(w.session.report) == before + 1, (key, w.statusBar().currentMessage())
        item = w.session.report.items[-1]
        assert item.caption == "" and title in item.title, (key, item.title)
        actions.show_dialog().edit_caption(f"about {title}")  # captions are written in the report
        assert item.caption == f"about {title}"
        assert item.image is not None
        if _drawn(item.image) < 500:
            blank.append(key)
        titles.append(title)
    assert not blank, blank  # every figure has something drawn
    assert [it.caption for it in w.session.report.items] == [f"about {t}" for t in titles]
    # a feature view adds its data set, a run view the run it shows
    kinds = {t: it.kind for t, it in zip(titles, w.session.report.items)}
    assert kinds["Map"] == "run" and kinds[w.docks["view:distribution"].windowTitle()] == "data"
    # the panels have no button: they are not views
    for key in NOT_VIEWS:
        if key in w.docks:
            assert not isinstance(w.docks[key].titleBarWidget(), ViewTitleBar), key


def test_a_tool_that_has_not_run_says_so(qtbot, win):
    w = win
    for key, what in (("test_score", "run Test & Score first"), ("compare_clusterings", "first")):
        _show(qtbot, w, key)
        assert w.report_actions.add_view(key, caption="x") is None
        assert what in w.statusBar().currentMessage(), key
    assert len(w.session.report) == 0


def test_a_view_that_draws_nothing_yet_is_not_added_blank(qtbot, win):
    w = win
    _show(qtbot, w, "view:spectrum")
    w.session.set_current_run(next(r.id for r in w.session.runs.values() if r.algorithm_id == "pca"))
    dock = w.docks["view:reconstruction"]
    dock.show()
    dock.raise_()
    qtbot.waitUntil(dock.isVisible, timeout=5_000)
    assert w.views["reconstruction"].series is None  # not computed: an empty plot
    w.report_actions.refresh_buttons()
    button = w.report_actions.buttons["view:reconstruction"]
    assert not button.isEnabled() and "press Compute first" in button.toolTip()  # greyed, saying why
    assert w.report_actions.add_view("view:reconstruction", caption="x") is None
    assert "draws nothing yet" in w.statusBar().currentMessage() and len(w.session.report) == 0


def test_the_title_bar_floats_closes_and_follows_the_title(qtbot, win):
    dock = win.docks["view:spectrum"]
    bar = dock.titleBarWidget()
    dock.setWindowTitle("Spectrum (renamed)")
    assert bar.title.text() == "Spectrum (renamed)"
    float_button, close_button = [b for b in bar.findChildren(QToolButton) if b is not bar.report_button]
    qtbot.mouseClick(float_button, Qt.MouseButton.LeftButton)
    assert dock.isFloating()
    qtbot.mouseClick(float_button, Qt.MouseButton.LeftButton)
    assert not dock.isFloating()
    qtbot.mouseClick(close_button, Qt.MouseButton.LeftButton)
    assert dock.isHidden()


def test_the_report_shortcut_is_in_the_shortcuts_list(win):
    rows = {what: (keys, where) for what, keys, where in shortcut_rows(win)}
    keys, where = rows["Add the view with the focus to the report"]
    assert keys == "Ctrl+Shift+R" and where == "File ▸ Report"
