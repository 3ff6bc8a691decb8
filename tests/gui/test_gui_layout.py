"""Visual regression (issue 23): the window at 1280×800 and 1600×1000 with each main view in
front — map, eigenvalues, clustering (silhouette, dendrogram, contingency), classification
(decision regions, confusion matrix, training curve), compare, table. In every shown plot no
axis title and no legend is clipped, and the map's extent holds all its points within 10% of
their bounding box. Rendered offscreen; checks read the widgets' visible regions and items."""
import numpy as np
import pytest

pytest.importorskip("PySide6")

import pyqtgraph as pg  # noqa: E402
from gui_helpers import discovered_host, wait_idle, wait_last_run  # noqa: E402
from PySide6.QtCore import QPoint, QRect  # noqa: E402
from PySide6.QtWidgets import QDockWidget  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    return discovered_host(("pca", "hierarchical", "svm"), ("iris", "moons"))


def shown_plots(window):
    """The plot widgets the user can see now, at least in part (in a raised dock or the central
    area; a dock's tab behind another is not shown)."""
    def on_screen(widget):
        dock = widget.parentWidget()
        while dock is not None and not isinstance(dock, QDockWidget):
            dock = dock.parentWidget()
        # a dock whose tab is behind another stays "visible" but is moved out of the window
        return dock is None or window.rect().contains(dock.geometry())

    return [w for w in window.findChildren(pg.PlotWidget)
            if w.isVisible() and w.width() > 0 and w.height() > 0 and on_screen(w)]


def visible_rect(widget) -> QRect:
    """The part of ``widget`` (its own coordinates) that its ancestors (scroll viewports, docks,
    splitters, the window) leave on screen."""
    top = widget.window()
    rect = QRect(widget.mapTo(top, QPoint(0, 0)), widget.size())
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        rect = rect.intersected(QRect(parent.mapTo(top, QPoint(0, 0)), parent.size()))
        parent = parent.parentWidget()
    return rect.translated(-widget.mapTo(top, QPoint(0, 0)))


def assert_not_clipped(plot: pg.PlotWidget, what: str) -> None:
    visible = visible_rect(plot)
    full = QRect(0, 0, plot.width(), plot.height())
    chain, parent = [], plot.parentWidget()
    while parent is not None:
        chain.append(type(parent).__name__ + (f":{parent.objectName()}" if parent.objectName() else ""))
        parent = parent.parentWidget()
    assert visible == full, (f"{what}: the plot in {' < '.join(chain[:5])} is clipped ({visible} of {full}): "
                             "its axis titles are cut")
    item = plot.getPlotItem()
    for side in ("bottom", "left"):
        axis = item.getAxis(side)
        if axis.isVisible() and axis.labelText:
            # the title's text box carries a few pixels of padding around its glyphs
            r = plot.mapFromScene(axis.label.sceneBoundingRect()).boundingRect().adjusted(4, 4, -4, -4)
            assert full.contains(r), f"{what}: the {side} axis title '{axis.labelText}' is cut ({r} outside {full})"
    legend = item.legend
    if legend is not None and legend.isVisible() and legend.items:
        r = plot.mapFromScene(legend.sceneBoundingRect()).boundingRect()
        assert full.contains(r), f"{what}: the legend is cut ({r} outside {full})"


def assert_map_extent(view):
    """Every point shown, and the view no wider than the points' extent (5 % margins) plus the
    room the legend needs when no corner was free (render.legend_corner.make_room)."""
    from gui_helpers import legend_room

    (x0, x1), (y0, y1) = view.plot_item.getViewBox().viewRange()
    lo, hi = view.xy.min(axis=0), view.xy.max(axis=0)
    span = hi - lo
    allowed = legend_room(view, span)
    assert x0 <= lo[0] and x1 >= hi[0] and y0 <= lo[1] and y1 >= hi[1]
    assert lo[0] - x0 <= allowed[0] and x1 - hi[0] <= allowed[0]
    assert lo[1] - y0 <= allowed[1] and y1 - hi[1] <= allowed[1]


def bring_forward(window, qtbot, key):
    window.window_layout.open(key)  # as View ▸ <view> does
    qtbot.wait(30)


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)])
def test_no_view_is_clipped(qtbot, make_window, host, size):
    w = make_window(host)
    w.resize(*size)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    checked = []

    def check(label):
        wait_idle(qtbot, w)
        qtbot.wait(300)  # docks and scroll areas settle over a few event-loop turns
        for plot in shown_plots(w):
            assert_not_clipped(plot, f"{label} at {size[0]}x{size[1]}")
            checked.append(label)
        assert_map_extent(w.map_view)

    check("map")
    bring_forward(w, qtbot, "view:spectrum")
    check("eigenvalues")
    w.run_algorithm("hierarchical", {"n_clusters": 3, "method": "ward"})
    wait_last_run(qtbot, w)
    for key in ("view:silhouette", "view:dendrogram", "view:contingency"):
        bring_forward(w, qtbot, key)
        check(key)
    w.load_source("sample:two_moons")
    wait_idle(qtbot, w)
    w.run_algorithm("svm", {"kernel": "rbf"})
    wait_last_run(qtbot, w)
    for key in ("view:decision", "view:confusion", "view:training_curve"):
        if key in w.docks:
            bring_forward(w, qtbot, key)
            check(key)
    bring_forward(w, qtbot, "view:compare")
    check("compare")
    if "table" in w.docks:
        bring_forward(w, qtbot, "table")
        check("table")
    assert {"map", "eigenvalues", "view:dendrogram", "view:decision"} <= set(checked)


def test_the_selected_algorithm_row_is_wholly_visible(qtbot, make_window, host):
    w = make_window(host)
    w.resize(1280, 800)
    tree = w.algorithm_panel.tree
    for algo in ("pca", "svm", "hierarchical"):
        assert w.algorithm_panel.select_algorithm(algo)
        qtbot.wait(20)
        row = tree.visualItemRect(tree.currentItem())
        assert tree.viewport().rect().contains(row), f"{algo}'s row {row} is not wholly in {tree.viewport().rect()}"


def test_run_says_why_it_is_off_in_words_and_the_load_report_grows(qtbot, make_window, host):
    from manifold_studio.data import Dataset

    w = make_window(host)
    X = np.random.default_rng(0).normal(size=(40, 3))
    X[3, 1] = np.nan
    report = [f"remark {i}: something the loader had to say about column c{i}" for i in range(8)]
    w.session.add_dataset(Dataset("gappy", X, report=report))
    w.algorithm_panel.select_algorithm("pca")
    qtbot.wait(20)
    controls = w.run_controls
    assert not controls.run_button.isEnabled()
    assert controls.reason_label.isVisible() and "missing" in controls.reason_label.text().lower()
    assert w.data_panel.report.maximumHeight() > w.data_panel.report.fontMetrics().lineSpacing() * 6
