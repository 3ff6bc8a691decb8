"""Correlation heatmap of the columns a run was fitted on (the prepared data of the run shown,
``session.prepared_data``, when it went through a preparation chain, else the data set's
features; the caption says which), Pearson or Spearman
(:func:`~manifold_studio.analysis.feature_stats.correlations`), rows and columns ordered by
hierarchical clustering of 1 − |r| so that correlated features sit together. Diverging colours
(−1 blue, 0 white, +1 red) with the coefficients written in the cells up to
:data:`MAX_TEXT` features.

Linked to the other views: a click on a cell shows that pair in the scatter plot view. The
heatmap is of columns, not rows, so it has no row selection to highlight.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QComboBox

from manifold_studio.analysis.feature_stats import PEARSON, SPEARMAN, correlations
from manifold_studio.gui.lazy_slot import LazyPart, LazySlot
from manifold_studio.gui.views.feature_base import PREPARED_PREFIX, FeatureView
from manifold_studio.gui.widgets import message_label

MAX_TEXT = 15


def cell_font() -> QFont:
    """The font of the values written in the cells (smaller than the window's)."""
    font = QFont()
    font.setPointSizeF(7.5)
    return font


class CorrelationView(FeatureView):
    view_id = "correlations"
    title = "Correlations"
    order = 63
    features_only = True

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result = None
        self.drawn_on = ""  #: what the heatmap is of ("run #2's prepared data: standardize, 13 columns")
        self._pair_prefix = ""  #: the scatter plot's prefix of the drawn columns ("#2 prepared ")
        self.texts: list = []
        self.info = message_label("Correlations between the features.")
        self.method_combo = QComboBox()
        self.method_combo.setObjectName("correlation_method")
        self.method_combo.addItem("Pearson", PEARSON)
        self.method_combo.addItem("Spearman", SPEARMAN)
        self.method_combo.currentIndexChanged.connect(lambda _i: self.draw())
        self._lazy_slot = LazySlot(self._make_content)   # the heatmap: made when first shown or drawn
        self.lay_out(["Method:", self.method_combo], self._lazy_slot)

    plot, image = LazyPart(), LazyPart()

    def _make_content(self) -> pg.PlotWidget:
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get("CET-D1"))
        self.plot.addItem(self.image)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.plot.getPlotItem().vb.sigResized.connect(lambda _vb: self.fit_labels())
        return self.plot

    @property
    def method(self) -> str:
        return self.method_combo.currentData()

    def set_method(self, method: str) -> None:
        self.method_combo.setCurrentIndex(self.method_combo.findData(method))

    def draw(self) -> None:
        for t in self.texts:
            self.plot.removeItem(t)
        self.texts = []
        self.result = None
        if self.dataset is None:
            self.image.clear()
            self.info.setText("Correlations between the features: load a data set.")
            return
        X, names, _rows, self.drawn_on = self.prepared_features()
        prepared = self.drawn_on.startswith("run #")
        self._pair_prefix = PREPARED_PREFIX % self.run.id if prepared else ""
        self._n_rows = X.shape[0]
        self.compute(correlations, X, names, self.method, on_done=self._computed, title="Correlations")

    def _computed(self, res, message: str) -> None:
        self.result = res
        if res is None:
            self.image.clear()
            self.info.setText(message)
            return
        d = len(res.names)
        self.image.setImage(np.nan_to_num(res.r, nan=0.0), levels=(-1.0, 1.0))
        self.image.setRect(0, 0, d, d)
        self.plot.getPlotItem().getAxis("left").setTicks([[(j + 0.5, f"{n} ({j + 1})")
                                                           for j, n in enumerate(res.names)]])
        if d <= MAX_TEXT:
            for a in range(d):
                for b in range(d):
                    v = res.r[a, b]
                    t = pg.TextItem("—" if np.isnan(v) else f"{v:.2f}", anchor=(0.5, 0.5),
                                    color=(255, 255, 255) if abs(np.nan_to_num(v)) > 0.6 else (20, 20, 20))
                    t.setFont(cell_font())
                    t.setPos(b + 0.5, a + 0.5)
                    self.plot.addItem(t)
                    self.texts.append(t)
        self.plot.getPlotItem().setRange(xRange=(0, d), yRange=(0, d), padding=0.02)
        self.fit_labels()
        left = self._n_rows - res.n_rows
        self.info.setText(f"{'Pearson' if self.method == PEARSON else 'Spearman'} correlations of the "
                          f"{d} columns of {self.dataset_name} ({self.drawn_on}), ordered by clustering of 1 − |r|"
                          + (f" ({left:,} rows with a missing value left out)" if left else "")
                          + ". Click a cell to see the pair in the scatter plot.")

    def fit_labels(self) -> None:
        """Column names under the heatmap where they fit side by side, else the numbers the row
        names carry; the values in the cells only where a cell is wide enough for them."""
        res = self.result
        if res is None:
            return
        d = len(res.names)
        cell = self.plot.getPlotItem().vb.width() / max(d, 1)
        metrics = QFontMetrics(self.plot.getPlotItem().getAxis("bottom").style.get("tickFont") or QFont())
        wide = max((metrics.horizontalAdvance(n) for n in res.names), default=0) + 6 <= cell
        self.plot.getPlotItem().getAxis("bottom").setTicks(
            [[(j + 0.5, n if wide else str(j + 1)) for j, n in enumerate(res.names)]])
        show = cell >= QFontMetrics(cell_font()).horizontalAdvance("-0.00") + 6
        for t in self.texts:
            t.setVisible(show)

    def cell_at(self, x: float, y: float):
        """(column name, row name) of the cell at data coordinates (x, y), or None."""
        if self.result is None:
            return None
        d = len(self.result.names)
        b, a = int(np.floor(x)), int(np.floor(y))
        if 0 <= a < d and 0 <= b < d:
            return self.result.names[b], self.result.names[a]
        return None

    def _clicked(self, ev) -> None:
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        p = vb.mapSceneToView(ev.scenePos())
        self.show_pair(self.cell_at(p.x(), p.y()))

    def show_pair(self, pair) -> None:
        """Show the pair (x column, y column) in the window's scatter plot view."""
        scatter = self.window.views.get("scatter") if self.window is not None else None
        if pair is None or scatter is None:
            return
        dock = self.window.docks.get("view:scatter")
        if dock is not None:
            dock.show()
            dock.raise_()
        scatter.redraw()
        scatter.set_axes(*(self._pair_prefix + name for name in pair))  # the columns drawn here
