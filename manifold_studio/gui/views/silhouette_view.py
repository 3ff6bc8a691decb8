"""Silhouette plot of a clustering run: one horizontal bar per point, grouped by cluster and
sorted within each cluster, in the cluster colours, with the mean silhouette as a dashed line.

The silhouettes are computed on a worker thread (:func:`~manifold_studio.analysis.cluster_tasks.silhouette_task`,
at most ``SILHOUETTE_MAX_POINTS`` points drawn at random) on the data the run was fitted on
(``session.prepared_data``: its data set through its preparation chain, or the map for "cluster
this map"; the caption says which), for the run's labels (a cut recomputes them).

Selection (linked brushing): the bars of selected rows are drawn dark over their cluster colour;
a rectangle or a lasso on the plot selects the rows of the bars it covers (a range of bars), and
a click on a bar selects every row of that bar's cluster (all of the run's points, not only the
sample drawn) — :class:`SilhouetteSelection`.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout

from manifold_studio.analysis.cluster_tasks import SilhouetteResult, silhouette_task
from manifold_studio.errors import error_message
from manifold_studio.gui.cluster_overlay import ClusterOverlay
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import make_coloring
from manifold_studio.gui.views.selection_overlay import RECT, SelectionOverlay
from manifold_studio.gui.widgets import message_label
from manifold_studio.gui.worker import LatestJob

GAP = 3  # empty rows between clusters


def silhouette_order(result: SilhouetteResult) -> np.ndarray:
    """Index into ``result`` of each bar, bottom-up: clusters in turn, sorted within each."""
    _uniq, codes = np.unique(result.labels, return_inverse=True)
    return np.lexsort((result.values, codes.ravel()))


def silhouette_layout(result: SilhouetteResult):
    """(y position, value, cluster code) of every bar: clusters bottom-up, sorted within each."""
    uniq, codes = np.unique(result.labels, return_inverse=True)
    codes = codes.ravel()
    order = silhouette_order(result)
    y = np.arange(len(order)) + GAP * codes[order]
    return y, result.values[order], codes[order], uniq


class SilhouetteSelection(SelectionOverlay):
    """Selection on the silhouette plot: each bar is the point (value, y) of one row; a rectangle
    selects the bars it touches, a lasso the bars whose middle it encloses, a click a cluster."""

    def __init__(self, view):
        super().__init__(view.window, view.plot, view.bar_points)
        self.view = view
        self.set_mode(RECT)

    def rows_in_rect(self, x0, y0, x1, y1, xy, rows):
        (xa, xb), (ya, yb) = sorted((x0, x1)), sorted((y0, y1))
        v, y = xy[:, 0], xy[:, 1]
        lo, hi = np.minimum(v, 0.0), np.maximum(v, 0.0)  # each bar spans 0..value
        return rows[(y + 0.5 >= ya) & (y - 0.5 <= yb) & (hi >= xa) & (lo <= xb)]

    def rows_in_polygon(self, polygon, xy, rows):
        middles = np.column_stack([xy[:, 0] / 2.0, xy[:, 1]])
        return super().rows_in_polygon(polygon, middles, rows)

    def click_at(self, x, y, mode="replace"):
        """A click on a bar selects its whole cluster; elsewhere, a plain click clears."""
        xy, rows, name = self.current()
        if name is None:
            return self._nothing_drawn()
        hit = np.zeros(0, dtype=np.intp)
        if len(xy):
            i = int(np.argmin(np.abs(xy[:, 1] - y)))
            v = xy[i, 0]
            if abs(xy[i, 1] - y) <= 0.5 + GAP / 2 and min(v, 0.0) - 0.05 <= x <= max(v, 0.0) + 0.05:
                hit = self.view.cluster_rows(self.view.bar_labels[i])
        return self._apply(name, hit, mode, "click")

    def draw_highlight(self, xy, drawn):
        idx = np.flatnonzero(drawn)
        self._highlighted = idx
        if self._highlight is not None:
            self.plot_item.removeItem(self._highlight)
            self._highlight = None
        if idx.size:
            self._highlight = pg.BarGraphItem(x0=np.zeros(idx.size), y=xy[idx, 1], height=1.0,
                                              width=xy[idx, 0], brush=pg.mkBrush(20, 20, 20, 220), pen=None)
            self._highlight.setZValue(30)
            self.plot_item.addItem(self._highlight)


class SilhouetteView(ResultView):
    view_id = "silhouette"
    title = "Silhouette"
    area = "right"
    order = 20

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result: SilhouetteResult | None = None
        self.bars: list = []
        self.latest = LatestJob()
        self.info = message_label("Silhouette of a clustering run: run a clustering method.")
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("bottom", "silhouette s(x)")
        self.plot.setLabel("left", "points, by cluster")
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        self.plot.getPlotItem().getAxis("left").setStyle(showValues=False)
        self.mean_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(200, 0, 0, width=2, style=Qt.PenStyle.DashLine),
                                         label="mean {value:.3f}",
                                         labelOpts={"position": 0.97, "anchors": [(0, 0), (0, 0)], "color": (200, 0, 0), "fill": (255, 255, 255, 200)})
        self.mean_line.hide()
        self.mean_line.setZValue(100)  # over the bars
        self.plot.addItem(self.mean_line)
        self._bar_xy = np.zeros((0, 2))
        self.bar_rows = np.zeros(0, dtype=np.intp)  #: data-set row of each bar, bottom-up
        self.bar_labels = np.zeros(0)               #: cluster of each bar
        self.drawn_on = ""  #: what the silhouettes are computed on ("standardize, 13 columns")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        self.selection_overlay = None
        if window is not None:
            self.selection_overlay = SilhouetteSelection(self)
            lay.addWidget(self.selection_overlay.bar)
        lay.addWidget(self.plot, 1)
        if window is not None and window.map_view is not None:
            ClusterOverlay.for_window(window).labelsChanged.connect(self._labels_changed)

    def applies_to(self, run) -> bool:
        return run is not None and run.kind == "clustering"

    @property
    def n_bars(self) -> int:
        return len(self.bar_values)

    @property
    def busy(self) -> bool:
        return self.latest.busy

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self._start(run)

    def _labels_changed(self, run) -> None:
        if run is self.run:
            self._start(run)

    def _start(self, run) -> None:
        self.latest.drop()
        if run is None or not run.succeeded or run.labels is None or self.window is None:
            self._draw(None)
            self.info.setText("Silhouette of a clustering run: run a clustering method.")
            return
        labels = ClusterOverlay.for_window(self.window).labels_for(run)
        try:  # what the run was fitted on: its prepared data, or the map it clustered
            prepared = self.window.session.prepared_data(run.id)
        except Exception as exc:  # noqa: BLE001 - the data set was removed, the chain cannot run
            self._draw(None)
            self.info.setText(f"No silhouette: {error_message(exc)}")
            return
        X, self.drawn_on = prepared.X, prepared.caption
        if np.unique(labels).size < 2:
            self._draw(None)
            self.info.setText("The silhouette needs at least two clusters: this partition has one.")
            return
        self.info.setText(f"Computing the silhouettes of {run.title()}…")
        self.latest.start(
            self.window, silhouette_task, X, labels, title="Silhouette",
            on_success=lambda res, run=run, on=prepared.caption: self._done(run, res, on),
            on_failure=lambda msg, detail: self._failed(msg))

    def _done(self, run, result: SilhouetteResult, src: str) -> None:
        self._draw(result)
        sample = (f" on a random sample of {len(result.values):,} of {result.n_total:,} points"
                  if len(result.values) < result.n_total else "")
        note = ClusterOverlay.for_window(self.window).labels_note(run)
        self.info.setText(f"{run.title()}: mean silhouette <b>{result.mean:.3f}</b> "
                          f"({len(np.unique(result.labels))} clusters, computed on {src}{sample})"
                          + (f"; {note}" if note else ""))

    def _failed(self, message) -> None:
        self._draw(None)
        self.info.setText(f"No silhouette: {message}")

    # -- selection ------------------------------------------------------------------------------
    def bar_points(self):
        """(xy, rows, data set) of the bars, for the selection overlay: (value, y) of each bar."""
        run = self.run
        name = run.dataset_name if run is not None and self.result is not None else None
        return self._bar_xy, self.bar_rows, name

    def cluster_rows(self, label) -> np.ndarray:
        """Data-set rows of every point of the run in cluster ``label`` (as displayed)."""
        run = self.run
        labels = ClusterOverlay.for_window(self.window).labels_for(run) if run is not None else None
        if labels is None:
            return np.zeros(0, dtype=np.intp)
        return run.point_index[np.asarray(labels) == label]

    def _set_bars(self, result: SilhouetteResult | None) -> None:
        if result is None or self.run is None:
            self._bar_xy, self.bar_rows, self.bar_labels = np.zeros((0, 2)), np.zeros(0, dtype=np.intp), np.zeros(0)
            return
        y, values, _codes, _uniq = silhouette_layout(result)
        order = silhouette_order(result)
        self._bar_xy = np.column_stack([values, y.astype(float)])
        self.bar_rows = self.run.point_index[result.index[order]]
        self.bar_labels = result.labels[order]

    def _draw(self, result: SilhouetteResult | None) -> None:
        for b in self.bars:
            self.plot.removeItem(b)
        self.bars = []
        self.result = result
        self._set_bars(result)
        if self.selection_overlay is not None:
            self.selection_overlay.refresh()
        if result is None:
            self.mean_line.hide()
            return
        y, values, codes, uniq = silhouette_layout(result)
        coloring = make_coloring(uniq, len(uniq), "cluster")
        for c in range(len(uniq)):
            sel = codes == c
            color = coloring.rgba(int(coloring.codes[c]))
            bar = pg.BarGraphItem(x0=np.zeros(sel.sum()), y=y[sel], height=1.0, width=values[sel],
                                  brush=pg.mkBrush(color), pen=pg.mkPen(color) if sel.sum() < 400 else None)
            self.plot.addItem(bar)
            self.bars.append(bar)
            text = pg.TextItem(f"cluster {coloring.names[c]}", color=(30, 30, 30), anchor=(1.05, 0.5))
            text.setPos(min(0.0, float(values[sel].min())), float(y[sel].mean()))
            self.plot.addItem(text)
            self.bars.append(text)
        self.mean_line.show()  # before setValue: a hidden line does not update its label
        self.mean_line.setValue(result.mean)
        lo = min(-0.1, float(values.min())) - 0.3  # room for the cluster names
        self.plot.setXRange(lo, 1.0, padding=0.02)
        self.plot.setYRange(-1, float(y.max()) + 1, padding=0.01)

    @property
    def bar_values(self) -> np.ndarray:
        """The values of the bars drawn (for tests)."""
        vals = [np.asarray(b.opts["width"]) for b in self.bars if isinstance(b, pg.BarGraphItem)]
        return np.concatenate(vals) if vals else np.zeros(0)
