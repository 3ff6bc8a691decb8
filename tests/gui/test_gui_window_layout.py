"""The window's default layout (issue 33 item 6), at 1366×768 and 1600×1000: the map's plot takes
at least half of the window; Data, Preparation, Algorithm, Runs and Messages are the only docks
shown; a view opens from the View menu as the front tab of its area; no tab title is cut below 6
characters; Test & Score shows at least 8 table rows when opened; View ▸ Reset layout restores
the default; the legend covers no point after the window is resized. Rendered offscreen;
measured from the widgets' geometries."""
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from gui_helpers import discovered_host, wait_idle, wait_last_run  # noqa: E402
from PySide6.QtCore import QPoint, QRect, Qt  # noqa: E402
from PySide6.QtWidgets import QTabBar  # noqa: E402

from manifold_studio.gui.window_layout import DEFAULT_DOCKS  # noqa: E402

WINDOW_DIALOGS = False
SIZES = [(1366, 768), (1600, 1000)]
RIGHT = Qt.DockWidgetArea.RightDockWidgetArea


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca",), ("iris",))


def visible_rect(widget) -> QRect:
    """The part of ``widget`` (window coordinates) its ancestors leave on screen."""
    top = widget.window()
    rect = QRect(widget.mapTo(top, QPoint(0, 0)), widget.size())
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        rect = rect.intersected(QRect(parent.mapTo(top, QPoint(0, 0)), parent.size()))
        parent = parent.parentWidget()
    return rect.intersected(top.rect())


def iris_window(qtbot, make_window, host, size):
    w = make_window(host)
    w.resize(*size)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    qtbot.wait(150)  # the first-show proportions and the legend's placement settle
    return w


def map_share(w) -> float:
    r = visible_rect(w.map_view.plot)
    return r.width() * r.height() / (w.width() * w.height())


def shown_docks(w) -> set[str]:
    return {k for k, d in w.docks.items() if not d.isHidden()}


def cut_tabs(w) -> list[str]:
    """Tabs of visible tab bars whose title is elided to fewer than 6 characters."""
    cut = []
    for bar in w.findChildren(QTabBar):
        if not bar.isVisible():
            continue
        fm = bar.fontMetrics()
        for i in range(bar.count()):
            text = bar.tabText(i).replace("&", "")
            if bar.elideMode() == Qt.TextElideMode.ElideNone:
                continue  # never elided (the bar scrolls instead)
            need = fm.horizontalAdvance(text if len(text) <= 6 else text[:6] + "…")
            if bar.tabRect(i).width() < need:
                cut.append(text)
    return cut


def points_under_legend(view) -> int:
    vb = view.plot_item.getViewBox()
    rect = vb.mapSceneToView(view.legend.sceneBoundingRect()).boundingRect()
    x, y = view.xy[:, 0], view.xy[:, 1]
    return int(np.count_nonzero((x >= rect.left()) & (x <= rect.right()) & (y >= rect.top()) & (y <= rect.bottom())))


@pytest.mark.parametrize("size", [(1280, 800), *SIZES])  # 1280 × 800: `gui --screenshot`'s default
def test_default_layout_gives_the_map_half_the_window(qtbot, make_window, host, size):
    w = iris_window(qtbot, make_window, host, size)
    assert shown_docks(w) == set(DEFAULT_DOCKS)
    assert map_share(w) >= 0.5, f"the map's plot has {map_share(w):.0%} of the window at {size}"
    for key in ("data", "preparation", "algorithm"):  # the left column, beside the map
        assert w.docks[key].geometry().right() < w.map_view.plot.mapTo(w, QPoint(0, 0)).x()
    runs = w.docks["runs"]
    assert runs.isVisible() and runs.geometry().top() > w.map_view.plot.mapTo(w, QPoint(0, 0)).y()
    assert not w.map_view.more_bar.isVisible()  # the map's second bar of controls is folded
    w.map_view.more_button.click()
    assert w.map_view.more_bar.isVisible() and w.map_view.encoding.cmap_combo.isVisible()
    assert cut_tabs(w) == []
    panel = w.data_panel  # loading stays in view: the three buttons whole, with the data set's line
    for button in (panel.load_sample_button, panel.open_button, panel.open_folder_button, panel.dataset_combo):
        assert button.isVisible() and visible_rect(button).size() == button.size(), \
            f"{button.text() if hasattr(button, 'text') else 'data set box'} is clipped at {size}"
    assert panel.load_sample_button.mapTo(w, QPoint(0, 0)).y() < panel.dataset_combo.mapTo(w, QPoint(0, 0)).y()


@pytest.mark.parametrize("size", SIZES)
def test_views_open_from_the_view_menu_with_whole_tab_titles(qtbot, make_window, host, size):
    w = iris_window(qtbot, make_window, host, size)
    keys = [k for k in w.docks if k.startswith("view:") and w.dockWidgetArea(w.docks[k]) == RIGHT]
    assert len(keys) >= 7
    for key in keys:
        w.docks[key].toggleViewAction().trigger()
        qtbot.wait(10)
        assert not w.docks[key].visibleRegion().isEmpty(), f"{key} is not in front after opening it"
    qtbot.wait(100)
    assert cut_tabs(w) == []
    spectrum = w.docks["view:spectrum"]
    assert spectrum.width() >= 0.25 * w.width()  # the right area was given room
    # a view the user opened stays open across runs it applies to
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    assert not spectrum.isHidden()


@pytest.mark.parametrize("size", SIZES)
def test_test_and_score_shows_eight_rows(qtbot, make_window, host, size):
    w = iris_window(qtbot, make_window, host, size)
    w.test_score_action.trigger()
    qtbot.wait(150)
    table = w.test_score.table
    assert table.isVisible()
    rows = visible_rect(table.viewport()).height() / table.verticalHeader().defaultSectionSize()
    assert rows >= 8, f"Test & Score shows {rows:.1f} rows at {size}"
    assert cut_tabs(w) == []


def test_reset_layout_restores_the_default(qtbot, make_window, host):
    w = iris_window(qtbot, make_window, host, SIZES[0])
    default_share = map_share(w)
    w.docks["view:spectrum"].toggleViewAction().trigger()
    w.test_score_action.trigger()
    w.docks["data"].setFloating(True)
    w.docks["messages"].close()
    qtbot.wait(100)
    assert map_share(w) < 0.5
    reset = next(a for a in w.menus["view"].actions() if a.objectName() == "action_reset_layout")
    reset.trigger()
    qtbot.wait(150)
    assert shown_docks(w) == set(DEFAULT_DOCKS)
    assert not w.docks["data"].isFloating()
    assert map_share(w) >= 0.5 and abs(map_share(w) - default_share) < 0.05
    # the views the user had open are forgotten: a new run shows none of them
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    assert shown_docks(w) == set(DEFAULT_DOCKS)


def test_the_legend_covers_no_point_after_a_resize(qtbot, make_window, host):
    """Docks opening shrink the plot (without placing the legend again, it covers 14 and then 48
    of the iris points here): the legend is placed again, and the view grown, after each resize."""
    w = iris_window(qtbot, make_window, host, (1600, 1000))
    view = w.map_view
    assert view.legend.isVisible() and points_under_legend(view) == 0
    w.resize(1366, 768)
    qtbot.wait(250)  # the resize, then the debounced placement
    assert points_under_legend(view) == 0
    w.test_score_action.trigger()  # the bottom area takes half of the height
    qtbot.wait(250)
    assert points_under_legend(view) == 0
    w.docks["view:spectrum"].toggleViewAction().trigger()  # and the right area a third of the width
    qtbot.wait(250)
    vb = view.plot_item.getViewBox()
    assert vb.height() < 200 and vb.width() < 600  # a small plot: the legend fills much of it
    assert points_under_legend(view) == 0


def test_a_layout_saved_by_an_older_version_is_not_restored(qtbot, make_window, host):
    from PySide6.QtCore import QSettings

    from manifold_studio.gui.preferences import SETTINGS_ENV, STATE_KEY, STATE_VERSION

    old = make_window(host)
    old.window_layout.open("view:spectrum")  # a layout with a view open, saved under version 1
    qtbot.wait(50)
    store = QSettings(os.environ[SETTINGS_ENV], QSettings.Format.IniFormat)
    store.setValue(STATE_KEY, old.saveState(STATE_VERSION - 1))
    store.sync()
    again = make_window(host)
    assert not again.layout_restored and shown_docks(again) == set(DEFAULT_DOCKS)
    store.setValue(STATE_KEY, old.saveState(STATE_VERSION))  # the current version is restored
    store.sync()
    third = make_window(host)
    assert third.layout_restored and "view:spectrum" in shown_docks(third)


@pytest.mark.parametrize("sample", ["wine", "digits"])
@pytest.mark.parametrize("size", [SIZES[0], pytest.param(SIZES[1], marks=pytest.mark.slow)])
def test_the_legend_covers_no_point_of_wine_or_digits(qtbot, make_window, sample, size):
    """The issue saw the legend on wine's and digits' points: at both sizes, with the map alone
    and with Test & Score open beneath it, no point lies under the legend (10 rows of digits)."""
    w = make_window(discovered_host(("pca",), (sample,)))
    w.resize(*size)
    w.load_source(f"sample:{sample}")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    qtbot.wait(250)
    view = w.map_view
    assert view.legend.isVisible() and len(view.xy) == len(w.session.current_dataset.X)
    assert points_under_legend(view) == 0
    w.test_score_action.trigger()
    qtbot.wait(250)
    assert points_under_legend(view) == 0
