"""Scatter-plot matrix of up to :data:`MAX_COLUMNS` chosen columns: every pair as a small
scatter plot coloured by class, each column's histogram on the diagonal.

Selection (linked brushing): a rectangle or lasso in any off-diagonal cell selects the rows of
its points (one Pan / Rectangle / Lasso bar for the grid); the window's selection is ringed in
every cell.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QScrollArea, QSplitter, QVBoxLayout

from manifold_studio.gui.views.feature_base import FeatureView
from manifold_studio.gui.views.scatter_view import drawn_points, point_brushes
from manifold_studio.gui.views.selection_overlay import RECT, SelectionOverlay
from manifold_studio.gui.widgets import message_label

MAX_COLUMNS = 8
DEFAULT_COLUMNS = 4
#: a cell is never drawn smaller than this (pixels): below it the matrix scrolls
MIN_CELL = 90
#: column names on the diagonal are cut to this many characters (the tooltip has them whole)
NAME_CHARS = 16
#: point size of the tick labels
TICK_POINTS = 7


def short_name(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


class ScatterMatrixView(FeatureView):
    view_id = "scatter_matrix"
    title = "Scatter-plot matrix"
    order = 62

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.cells: dict[tuple[int, int], pg.PlotItem] = {}
        self.cell_xy: dict[tuple[int, int], np.ndarray] = {}
        self.cell_rows: dict[tuple[int, int], np.ndarray] = {}
        self.overlays: dict[tuple[int, int], SelectionOverlay] = {}
        self.chosen: list[str] = []
        self.info = message_label(f"Pairs of up to {MAX_COLUMNS} columns.")
        self.list = QListWidget()
        self.list.setObjectName("scatter_matrix_columns")
        self.list.setToolTip(f"Tick up to {MAX_COLUMNS} columns.")
        self.list.setMinimumWidth(60)
        self.list.itemChanged.connect(self._ticked)
        self.grid = pg.GraphicsLayoutWidget()
        self.grid.ci.setSpacing(2)
        self.grid.setToolTip("Each column's name and histogram are on the diagonal; cell (row, column) "
                             "plots the row's column against the column's.")
        # the matrix keeps readable cells: it scrolls when the dock is smaller than k × MIN_CELL
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.grid)
        self.mode_bar = None
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("scatter_matrix_splitter")
        self.splitter.addWidget(self.list)
        self.splitter.addWidget(self.scroll)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([130, 600])
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(2, 2, 2, 2)
        self._lay.addWidget(self.info)
        self._lay.addWidget(self.splitter, 1)

    def columns_changed(self, names) -> None:
        kept = [n for n in self.chosen if n in names]
        if not kept:
            kept = [c.name for c in self.columns if c.kind == "feature"][:DEFAULT_COLUMNS]
        self.list.blockSignals(True)
        self.list.clear()
        for n in names:
            item = QListWidgetItem(n)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if n in kept else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        self.chosen = kept

    def _ticked(self, item) -> None:
        ticked = [self.list.item(i).text() for i in range(self.list.count())
                  if self.list.item(i).checkState() == Qt.CheckState.Checked]
        if len(ticked) > MAX_COLUMNS:
            self.list.blockSignals(True)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.list.blockSignals(False)
            self.info.setText(f"At most {MAX_COLUMNS} columns: untick one first.")
            return
        self.set_columns(ticked)

    def set_columns(self, names: list[str]) -> None:
        """Show the matrix of ``names`` (at most :data:`MAX_COLUMNS`, in the list's order)."""
        if len(names) > MAX_COLUMNS:
            raise ValueError(f"{len(names)} columns chosen: the scatter-plot matrix shows at most {MAX_COLUMNS}.")
        self.chosen = list(names)
        self.list.blockSignals(True)
        for i in range(self.list.count()):
            it = self.list.item(i)
            it.setCheckState(Qt.CheckState.Checked if it.text() in names else Qt.CheckState.Unchecked)
        self.list.blockSignals(False)
        self.draw()

    def _drop_cells(self) -> None:
        for ov in self.overlays.values():
            self.window.selection.changed.disconnect(ov._selection_changed)
            ov.vb.scene().sigMouseClicked.disconnect(ov._scene_clicked)
            ov.deleteLater()
        self.overlays = {}
        self.grid.clear()
        self.cells, self.cell_xy, self.cell_rows = {}, {}, {}

    def _points_of(self, key):
        return lambda: (self.cell_xy.get(key, np.zeros((0, 2))), self.cell_rows.get(key, np.zeros(0, dtype=np.intp)),
                        self.dataset_name if key in self.cell_rows else None)

    def draw(self) -> None:
        self._drop_cells()
        names = [n for n in self.chosen if self.column(n) is not None]
        if len(names) < 2:
            self.info.setText("Tick at least two columns to draw their scatter-plot matrix.")
            return
        self.info.setText(f"{len(names)} columns of {self.dataset_name}: {len(names) * (len(names) - 1)} "
                          "scatter plots, histograms on the diagonal.")
        coloring = self.class_coloring()
        vals = [self.values(n) for n in names]
        k = len(names)
        self.grid.setMinimumSize(k * MIN_CELL, k * MIN_CELL)
        tick_font = QFont()
        tick_font.setPointSize(TICK_POINTS)
        for i in range(k):          # row: y column
            for j in range(k):      # column: x column
                cell = self.grid.addPlot(row=i, col=j)
                cell.setMenuEnabled(False)
                cell.hideButtons()
                # tick values on the outer cells only, small; the names on the diagonal
                cell.showAxis("left", j == 0)
                cell.showAxis("bottom", i == k - 1)
                for side in ("left", "bottom"):
                    axis = cell.getAxis(side)
                    axis.setStyle(tickFont=tick_font, tickLength=-3)
                    axis.setTextPen(pg.mkPen(70, 70, 70))
                cell.getAxis("left").setWidth(34)
                cell.getAxis("bottom").setHeight(20)
                self.cells[(i, j)] = cell
                if i == j:
                    cell.setTitle(f"<b>{short_name(names[i])}</b>", size=f"{TICK_POINTS + 1}pt")
                    v = vals[i][np.isfinite(vals[i])]
                    if v.size:
                        counts, edges = np.histogram(v, bins="auto")
                        cell.addItem(pg.BarGraphItem(x0=edges[:-1], width=np.diff(edges), height=counts,
                                                     brush=pg.mkBrush(120, 140, 190), pen=None))
                    continue
                x, y = vals[j], vals[i]
                rows = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
                self.cell_rows[(i, j)] = rows
                self.cell_xy[(i, j)] = np.column_stack([x[rows], y[rows]])
                xy, drawn = drawn_points(self.cell_xy[(i, j)], rows)
                cell.addItem(pg.ScatterPlotItem(xy[:, 0], xy[:, 1], size=4, pen=None,
                                                brush=point_brushes(coloring, drawn, 170)))
        self._attach_overlays()

    def _attach_overlays(self) -> None:
        if self.window is None:
            return
        first = None
        for key in self.cell_rows:
            ov = SelectionOverlay(self.window, self.cells[key], self._points_of(key))
            if first is None:
                first = ov
                ov.set_mode(RECT)
                if self.mode_bar is not None:
                    self._lay.removeWidget(self.mode_bar)
                    self.mode_bar.deleteLater()
                self.mode_bar = ov.bar
                self._lay.insertWidget(1, ov.bar)
            else:
                ov.follow(first.bar)
            ov.refresh()
            self.overlays[key] = ov

    def highlighted_rows(self, key) -> np.ndarray:
        """Data-set rows ringed in cell ``key`` (for tests)."""
        ov = self.overlays.get(key)
        return self.cell_rows[key][ov.highlighted] if ov is not None else np.zeros(0, dtype=np.intp)
