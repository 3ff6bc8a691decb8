"""Scatter plot of any two columns of the current data set — features, a numeric label, or a
run's result column (coordinates, cluster) — coloured by class, on chosen axes.

Selection (linked brushing): rectangle, lasso or click on the plot selects rows in the window;
the window's selection is ringed (:class:`~.selection_overlay.SelectionOverlay`). Above
:data:`~.small_map.MAX_DRAWN` points a fixed sample is drawn; selecting uses every point.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from manifold_studio.gui.views.feature_base import FeatureView, column_combo, refill
from manifold_studio.gui.views.small_map import drawn_sample
from manifold_studio.gui.widgets import message_label


def drawn_points(xy, rows):
    """(xy, rows) of the points drawn: all, or above :data:`~.small_map.MAX_DRAWN` a fixed sample
    (the same rows in every plot of the data set). Selecting still uses every point."""
    idx = drawn_sample(rows)
    return (xy, rows) if idx is None else (xy[idx], rows[idx])


def point_brushes(coloring, rows, alpha=200):
    """One brush per class colour, indexed per row (pyqtgraph shares equal brushes)."""
    if coloring.mode == "none":
        return pg.mkBrush(70, 110, 200, alpha)
    table = [pg.mkBrush(*coloring.rgba(i, alpha)) for i in range(len(coloring.colors))]
    return [table[int(c)] for c in coloring.codes[rows]]


class ScatterView(FeatureView):
    view_id = "scatter"
    title = "Scatter plot"
    order = 61

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.xy = np.zeros((0, 2))
        self.rows = np.zeros(0, dtype=np.intp)
        self.info = message_label("Two columns of the data set against each other.")
        self.x_combo = column_combo("scatter_x", "The column on the x axis.")
        self.y_combo = column_combo("scatter_y", "The column on the y axis.")
        for combo in (self.x_combo, self.y_combo):
            combo.currentIndexChanged.connect(lambda _i: self.draw())
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.scatter = pg.ScatterPlotItem(size=6, pen=None, hoverable=False)
        self.plot.addItem(self.scatter)
        self.lay_out(["x:", self.x_combo, "y:", self.y_combo], self.plot, self.rect_selection)

    def columns_changed(self, names) -> None:
        refill(self.x_combo, names, 0)
        refill(self.y_combo, names, 1)

    def set_axes(self, x: str, y: str) -> None:
        """Choose the columns on the axes (by name)."""
        self.x_combo.setCurrentText(x)
        self.y_combo.setCurrentText(y)
        self.draw()

    def points(self):
        return self.xy, self.rows, self.dataset_name if len(self.rows) else None

    def draw(self) -> None:
        xname, yname = self.x_combo.currentText(), self.y_combo.currentText()
        x, y = self.values(xname), self.values(yname)
        if x is None or y is None:
            self.xy, self.rows = np.zeros((0, 2)), np.zeros(0, dtype=np.intp)
            self.scatter.setData([], [])
            self.info.setText("Two columns of the data set against each other: load a data set.")
        else:
            self.rows = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
            self.xy = np.column_stack([x[self.rows], y[self.rows]])
            xy, rows = drawn_points(self.xy, self.rows)
            self.scatter.setData(xy[:, 0], xy[:, 1], brush=point_brushes(self.class_coloring(), rows))
            left = len(x) - len(self.rows)
            self.info.setText(f"<b>{yname}</b> against <b>{xname}</b> ({len(self.rows):,} rows"
                              + (f"; {left:,} with a missing value left out" if left else "") + ")"
                              + self.column_note(xname, yname))
            self.plot.setLabel("bottom", xname)
            self.plot.setLabel("left", yname)
            self.plot.getPlotItem().autoRange()
        if self.selection_overlay is not None:
            self.selection_overlay.refresh()
