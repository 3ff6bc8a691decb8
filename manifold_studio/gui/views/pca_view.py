"""PCA loadings and biplot of the data set's features
(:func:`~manifold_studio.analysis.feature_stats.pca_loadings`, the ``pca`` plugin): of the shown
run's prepared data when it went through a preparation chain (its prepared columns), else of
the raw features; the caption says which.

- Loadings: for each feature, its loading on PC1 and PC2 (``components_ × sqrt(explained_variance_)``)
  as grouped bars.
- Biplot: the rows on the first two components coloured by class, each feature an arrow
  (its loadings, scaled to the scores' extent); the names of the longest arrows that fit without
  overlap are written beside their tips, every tip names its feature on hover (:mod:`.biplot_labels`).

Selection (linked brushing), biplot only: rectangle, lasso or click on the points selects rows;
the window's selection is ringed.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QComboBox

from manifold_studio.analysis.feature_stats import pca_loadings
from manifold_studio.gui.views.biplot_labels import BiplotLabels
from manifold_studio.gui.views.feature_base import FeatureView
from manifold_studio.gui.views.scatter_view import drawn_points, point_brushes
from manifold_studio.gui.widgets import message_label

LOADINGS, BIPLOT = "loadings", "biplot"
PC_COLORS = ((31, 119, 180), (255, 127, 14))


class PcaView(FeatureView):
    view_id = "pca_loadings"
    title = "PCA loadings"
    order = 64
    features_only = True

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result = None
        self.items: list = []
        self.xy = np.zeros((0, 2))
        self.rows = np.zeros(0, dtype=np.intp)
        self.drawn_on = ""  #: what the PCA is computed on ("run #2's prepared data: standardize, 13 columns")
        self.info = message_label("PCA loadings and biplot of the features.")
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("pca_mode")
        self.mode_combo.addItems([LOADINGS, BIPLOT])
        self.mode_combo.currentIndexChanged.connect(lambda _i: self._redraw_items())
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.addLegend(offset=(-10, 10))
        self.arrow_labels = BiplotLabels(self.plot)
        #: every how many features the loadings' axis names one (the names never overlap)
        self.tick_step = 1
        vb = self.plot.getPlotItem().getViewBox()
        vb.sigResized.connect(lambda _vb: self._fit_feature_ticks())
        vb.sigXRangeChanged.connect(lambda _vb, _r: self._fit_feature_ticks())
        self.lay_out(["Show:", self.mode_combo], self.plot, self.rect_selection)

    @property
    def mode(self) -> str:
        return self.mode_combo.currentText()

    def set_mode(self, mode: str) -> None:
        self.mode_combo.setCurrentText(mode)

    def points(self):
        if self.mode != BIPLOT or self.result is None:
            return np.zeros((0, 2)), np.zeros(0, dtype=np.intp), None
        return self.xy, self.rows, self.dataset_name

    def draw(self) -> None:
        self.result = None
        if self.dataset is None:
            self.info.setText("PCA loadings and biplot of the features: load a data set.")
            return self._redraw_items()
        X, names, rows, self.drawn_on = self.prepared_features()
        self.compute(pca_loadings, X, names, 2, title="PCA loadings",
                     on_done=lambda result, message, rows=rows: self._computed(result, message, rows))

    def _computed(self, result, message: str, rows=None) -> None:
        if result is not None and rows is not None:  # rows of the matrix -> rows of the data set
            result.rows = np.asarray(rows)[result.rows]
        self.result = result
        if message:
            self.info.setText(f"No PCA: {message}")
        self._redraw_items()

    def _clear(self) -> None:
        for item in self.items:
            self.plot.removeItem(item)
        self.items = []
        self.arrow_labels.clear()
        self.plot.getPlotItem().legend.clear()

    def _add(self, item, name=None) -> None:
        self.plot.addItem(item)
        self.items.append(item)
        if name is not None:
            self.plot.getPlotItem().legend.addItem(item, name)

    def _redraw_items(self) -> None:
        self._clear()
        res = self.result
        self.xy, self.rows = np.zeros((0, 2)), np.zeros(0, dtype=np.intp)
        axis = self.plot.getPlotItem().getAxis("bottom")
        if res is not None:
            k = res.loadings.shape[1]
            ratio = ", ".join(f"PC{i + 1} {r:.1%}" for i, r in enumerate(res.explained_variance_ratio))
            coloured = ""
            if self.mode == BIPLOT and self.labels is not None:  # not the run's clusters: say whose colours
                coloured = f" Points coloured by {self.dataset.label_name or 'class'} (the data set's classes)."
            self.info.setText(f"PCA of {self.dataset_name}, drawn on {self.drawn_on} "
                              f"({len(res.rows):,} complete rows): {ratio} of the variance.{coloured}")
            if self.mode == LOADINGS:
                width = 0.8 / k
                for c in range(k):
                    x = np.arange(len(res.names)) - 0.4 + width * (c + 0.5)
                    self._add(pg.BarGraphItem(x=x, height=res.loadings[:, c], width=width,
                                              brush=pg.mkBrush(*PC_COLORS[c % 2]), pen=None), f"PC{c + 1}")
                self.plot.setLabel("bottom", "feature")
                self.plot.setLabel("left", "loading")
            else:
                axis.setTicks(None)
                self._draw_biplot(res)
        if self.selection_overlay is not None:
            self.selection_overlay.refresh()
        self.plot.getPlotItem().autoRange()
        self._fit_feature_ticks()

    def _fit_feature_ticks(self) -> None:
        """Name every ``tick_step``-th feature under the loadings, the step the smallest at which
        the names do not overlap at the plot's current width and zoom (64 digit pixels in a
        dock piled their names into one smear)."""
        res = self.result
        if res is None or self.mode != LOADINGS:
            return
        item = self.plot.getPlotItem()
        axis, vb = item.getAxis("bottom"), item.getViewBox()
        (x0, x1), _ = vb.viewRange()
        px_per_feature = vb.width() / max(x1 - x0, 1e-9)
        metrics = QFontMetrics(axis.style.get("tickFont") or QFont())
        need = max((metrics.horizontalAdvance(n) for n in res.names), default=0) + 8
        step = max(1, math.ceil(need / px_per_feature)) if px_per_feature > 0 else 1
        self.tick_step = step
        axis.setTicks([[(float(j), n) for j, n in enumerate(res.names) if j % step == 0]])

    def _draw_biplot(self, res) -> None:
        scores = res.scores if res.scores.shape[1] > 1 else np.column_stack([res.scores, np.zeros(len(res.scores))])
        arrows = res.arrows if res.arrows.shape[1] > 1 else np.column_stack([res.arrows, np.zeros(len(res.arrows))])
        self.rows, self.xy = res.rows, scores[:, :2]
        xy, drawn = drawn_points(self.xy, self.rows)
        self._add(pg.ScatterPlotItem(xy[:, 0], xy[:, 1], size=5, pen=None,
                                     brush=point_brushes(self.class_coloring(), drawn, 150)))
        xs = np.column_stack([np.zeros(len(arrows)), arrows[:, 0]]).ravel()
        ys = np.column_stack([np.zeros(len(arrows)), arrows[:, 1]]).ravel()
        self._add(pg.PlotCurveItem(xs, ys, pen=pg.mkPen(180, 20, 20, width=2), connect="pairs"))
        loadings = res.loadings if res.loadings.shape[1] > 1 else np.column_stack([res.loadings, arrows[:, 1]])
        self.arrow_labels.draw(arrows, res.names, loadings)
        self.plot.setLabel("bottom", "PC1")
        self.plot.setLabel("left", "PC2")

    @property
    def drawn_loadings(self) -> np.ndarray:
        """(d, k) bar heights drawn in the loadings plot (for tests)."""
        bars = [np.asarray(i.opts["height"]) for i in self.items if isinstance(i, pg.BarGraphItem)]
        return np.column_stack(bars) if bars else np.zeros((0, 0))
