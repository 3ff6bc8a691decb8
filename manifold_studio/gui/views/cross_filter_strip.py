"""Cross-filters (issue 31): a strip of linked histograms (numeric columns) and bar charts
(categorical columns) under the map (:mod:`~manifold_studio.analysis.cross_filter`).

Drag a histogram's range or click bars to filter; filters combine, every chart shows the rows
that pass the other filters (blue over the grey of all rows), and the map dims the rows that do
not pass (a white veil under the passing points, drawn on top in dark blue). *Select filtered*
makes the passing rows the selection. Charts are binned on a worker thread; a brush update is a
few passes over the rows (coalesced to one per :data:`UPDATE_MS`), counted on a worker thread
too (:func:`brush_task`, on a snapshot of the filters; one at a time, the newest brush next): the
main thread only sets the bars' heights and the map's marks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QGraphicsRectItem, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from manifold_studio.analysis.cross_filter import CrossFilter, make_chart
from manifold_studio.analysis.explain_selection import is_categorical
from manifold_studio.errors import ManifoldStudioError, error_message
from manifold_studio.gui.views.column_cache import ColumnCache, make_searchable
from manifold_studio.gui.views.mark_layer import MarkLayer, MarkPlan, MarkView, plan_marks
from manifold_studio.gui.worker import LatestJob

UPDATE_MS = 30
ALL_BRUSH, PASS_BRUSH = (200, 200, 200), (40, 90, 190)
PASS_COLOR = (20, 60, 160)
Z_VEIL, Z_PASS = 18, 19
CHART_HEIGHT = 120


@dataclass(frozen=True, eq=False)
class BrushResult:
    """One brush update counted off the main thread (:func:`brush_task`)."""

    names: list
    totals: list
    filtered: list
    passing: np.ndarray
    active: bool
    marks: MarkPlan


def brush_task(filt: CrossFilter, view: MarkView, progress=None) -> BrushResult:
    """Every chart's counts, the passing rows and their marks on the map (any thread)."""
    totals, filtered, passing = filt.counts()
    return BrushResult([c.name for c in filt.charts], totals, filtered, passing, filt.active,
                       plan_marks(passing if filt.active else None, view))


class CrossFilterStrip(QWidget):
    #: the filters changed: the passing rows mask (or None when no filter)
    filtered = Signal(object)

    def __init__(self, window, view, parent=None):
        super().__init__(parent)
        self.window, self.view = window, view
        self.columns = ColumnCache()
        self.filter: CrossFilter | None = None
        self.dataset_name = None
        self.plots: dict = {}
        self.passing: np.ndarray | None = None
        #: filters to apply when their chart arrives (a restored project)
        self.pending: dict = {}
        self.latest = LatestJob()
        #: the filters changed while a brush update was counted: count again when it is done
        self._again = False
        #: a brush update is being counted on a worker thread
        self._counting = False
        self.column_combo = make_searchable(QComboBox())   # a sparse data set offers every gene
        self.column_combo.setMinimumContentsLength(14)
        self.add_button = QPushButton("Add chart")
        self.clear_button = QPushButton("Clear filters")
        self.select_button = QPushButton("Select filtered")
        self.select_button.setToolTip("Make the rows that pass every filter the selection.")
        self.status = QLabel("Add charts of columns; drag a range or click bars to filter the map.")
        self.layout_widget = pg.GraphicsLayoutWidget()
        self.layout_widget.setMinimumHeight(CHART_HEIGHT)
        bar = QHBoxLayout()
        for w in (self.column_combo, self.add_button, self.clear_button, self.select_button):
            bar.addWidget(w)
        bar.addWidget(self.status, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(self.layout_widget, 1)
        self.add_button.clicked.connect(lambda: self.add_chart(self.column_combo.currentText()))
        self.clear_button.clicked.connect(self.clear_filters)
        self.select_button.clicked.connect(self.select_filtered)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(UPDATE_MS)
        self.timer.timeout.connect(self.request_update)
        self.veil = QGraphicsRectItem()
        self.veil.setBrush(pg.mkBrush(255, 255, 255, 170))
        self.veil.setPen(pg.mkPen(None))
        self.veil.setZValue(Z_VEIL)
        self.veil.setVisible(False)
        self.marks = MarkLayer(view, PASS_COLOR, Z_PASS)
        view.plot.addItem(self.veil, ignoreBounds=True)
        view.runShown.connect(lambda _run: self._dataset_changed())
        view.redrawn.connect(self.draw_map)
        view.plot_item.getViewBox().sigRangeChanged.connect(self._fit_veil)

    # -- charts ------------------------------------------------------------------------------
    def _cols(self):
        return self.columns.get(self.window.session if self.window is not None else None, self.dataset_name)

    def _dataset_changed(self):
        ds = self.view.dataset
        name = ds.name if ds is not None else None
        self.column_combo.clear()
        if name != self.dataset_name or self.filter is None or ds is None or self.filter.n != ds.n_samples:
            self.dataset_name = name
            self.filter = CrossFilter(ds.n_samples) if ds is not None else None
            self.layout_widget.clear()
            self.plots = {}
        self.column_combo.addItems([c.name for c in self._cols()])
        session = self.window.session if self.window is not None else None
        self.column_combo.addItems(self.columns.more_features(session, self.dataset_name))
        self.request_update()

    def add_chart(self, name: str) -> None:
        """Chart column ``name`` (binned on a worker thread)."""
        if self.filter is None or not name or name in self.plots:
            return
        col = self.columns.find(self.window.session if self.window is not None else None, self.dataset_name, name)
        if col is None:   # e.g. a saved chart whose run was removed: said in the status bar too
            names = ", ".join(f"'{c.name}'" for c in self._cols()) or "none"
            message = f"Cross-filters: there is no column '{name}'; the columns are {names}."
            self.status.setText(message)
            if self.window is not None:
                self.window.show_status(message)
            return
        # one job per chart (adding several charts quickly keeps them all)
        self.window.start_job(_chart_task, name, col.values, is_categorical(col, np.asarray(col.values)),
                              title="Cross-filter chart", foreground=False, on_success=self._chart_ready,
                              on_failure=lambda m, _d: self.status.setText(m))

    def restore(self, charts: list[dict]) -> None:
        """Chart these columns again with their filters ([{"column", "filter"}], as saved)."""
        for entry in charts:
            self.pending[entry["column"]] = entry.get("filter")
            self.add_chart(entry["column"])

    def _chart_ready(self, chart):
        if self.filter is None or chart.codes.size != self.filter.n or chart.name in self.plots:
            return
        self.filter.charts.append(chart)
        saved = self.pending.pop(chart.name, None)
        if isinstance(saved, list) and saved:
            try:
                if chart.kind == "numeric" and len(saved) == 2:
                    self.filter.set_range(chart.name, *saved)
                elif chart.kind == "categorical":
                    self.filter.set_categories(chart.name, saved)
            except (ManifoldStudioError, TypeError, ValueError) as exc:
                self.status.setText(f"The saved filter of '{chart.name}' was not applied: {error_message(exc)}")
        plot = self.layout_widget.addPlot(title=chart.name)
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(x=False, y=False)
        plot.hideButtons()
        entry = {"plot": plot, "all": None, "pass": None, "region": None}
        if chart.kind == "numeric":
            edges = np.asarray(chart.labels)
            shown = chart.filter if chart.filter is not None else (edges[0], edges[-1])
            region = pg.LinearRegionItem(values=shown, brush=pg.mkBrush(255, 160, 0, 50))
            region.sigRegionChanged.connect(lambda r, name=chart.name: self._brushed(name, r))
            plot.addItem(region)
            entry["region"] = region
        else:
            plot.scene().sigMouseClicked.connect(lambda ev, name=chart.name, p=plot: self._bar_clicked(name, p, ev))
            ax = plot.getAxis("bottom")
            ax.setTicks([list(enumerate(chart.labels))])
        self.plots[chart.name] = entry
        self.request_update()

    def _brushed(self, name, region):
        lo, hi = region.getRegion()
        edges = self.filter.chart(name).labels
        if lo <= edges[0] and hi >= edges[-1]:
            self.filter.chart(name).filter = None   # the whole range: no filter
        else:
            self.filter.set_range(name, lo, hi)
        self.timer.start()

    def _bar_clicked(self, name, plot, ev):
        vb = plot.getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        x = vb.mapSceneToView(ev.scenePos()).x()
        index = int(round(x))
        if 0 <= index < self.filter.chart(name).n_bars:
            self.filter.toggle_category(name, index)
            self.request_update()

    def clear_filters(self):
        if self.filter is None:
            return
        self.filter.clear()
        for name, entry in self.plots.items():
            if entry["region"] is not None:
                edges = self.filter.chart(name).labels
                entry["region"].blockSignals(True)
                entry["region"].setRegion((edges[0], edges[-1]))
                entry["region"].blockSignals(False)
        self.passing = None  # no filter: the map at once, the bars when recounted
        self.draw_map()
        self.request_update()

    # -- one brush update ----------------------------------------------------------------------
    def _no_charts(self) -> bool:
        if self.filter is not None and self.filter.charts:
            return False
        self.latest.drop()
        self._counting = False
        self.passing = None
        self.draw_map()
        return True

    def update_counts(self):
        """Recount every chart and redraw it and the map's dimming, here and now."""
        self.timer.stop()
        if not self._no_charts():
            self._show_counts(brush_task(self.filter.snapshot(), self.marks.view_now()))

    def request_update(self):
        """Recount on a worker thread (after the one counting now, if any)."""
        self.timer.stop()
        if self._no_charts():
            return
        if self.window is None:
            self.update_counts()
            return
        if self._counting:
            self._again = True
            return
        self._again, self._counting = False, True
        self.latest.start(self.window, brush_task, self.filter.snapshot(), self.marks.view_now(),
                          title="Cross-filter", on_success=self._counted, on_failure=self._count_failed)

    def _counted(self, result: BrushResult) -> None:
        self._counting = False
        self._show_counts(result)
        if self._again:
            self.request_update()

    def _count_failed(self, message: str, _detail: str) -> None:
        self._counting = False
        self.status.setText(message)

    def _show_counts(self, result: BrushResult) -> None:
        """Set the bars, the status and the map's marks from a :func:`brush_task` result."""
        if (self.filter is None or result.passing.size != self.filter.n
                or result.names != [c.name for c in self.filter.charts]):
            self._again = True   # counted for other charts: count again
            return
        for chart, tot, fil in zip(self.filter.charts, result.totals, result.filtered):
            entry = self.plots.get(chart.name)
            if entry is None:
                continue
            if chart.kind == "numeric":
                edges = np.asarray(chart.labels)
                x, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])
            else:
                x, width = np.arange(chart.n_bars, dtype=float), 0.8
                sel = chart.filter or set()
                fil = fil * np.array([not sel or i in sel for i in range(chart.n_bars)])
            for key, heights, brush in (("all", tot, ALL_BRUSH), ("pass", fil, PASS_BRUSH)):
                if entry[key] is None:
                    entry[key] = pg.BarGraphItem(x=x, height=heights, width=width, brush=brush, pen=None)
                    entry["plot"].addItem(entry[key])
                else:
                    entry[key].setOpts(x=x, height=heights, width=width)
        self.passing = result.passing if result.active else None
        n_pass = int(np.count_nonzero(result.passing))
        self.status.setText(f"{n_pass:,} of {self.filter.n:,} rows pass the filters." if result.active
                            else "No filter: drag a range or click bars.")
        if self.passing is None or not self.marks.show_plan(result.marks):
            self.draw_map()   # no filter, or the map changed meanwhile
        else:
            self._fit_veil()
            self.veil.setVisible(True)
        self.filtered.emit(self.passing)

    def draw_map(self):
        rows = self.view.rows
        if self.passing is None or not len(rows) or rows.max() >= self.passing.size:
            self.veil.setVisible(False)
            self.marks.draw_mask(None)
            return
        self.marks.draw_mask(self.passing)
        self._fit_veil()
        self.veil.setVisible(True)

    def _fit_veil(self, *_):
        (x0, x1), (y0, y1) = self.view.plot_item.getViewBox().viewRange()
        self.veil.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))

    def select_filtered(self):
        if self.passing is not None and self.dataset_name is not None:
            self.window.selection.select(self.dataset_name, np.flatnonzero(self.passing))


def _chart_task(name, values, categorical, progress=None):
    return make_chart(name, values, categorical=categorical)
