"""The 2-D map: the current run's points coloured by label, with legend and hover.

Up to :data:`FAST_THRESHOLD` points are drawn with pyqtgraph's ScatterPlotItem (symbols,
outlines); above it with :class:`FastPointsItem` (1–3 px points, one draw call per colour), so
a million points still pan and zoom. Hover finds the nearest point in screen pixels on the
view's own arrays and shows its row index and label(s).

What is drawn for a run:
- embedding runs: the first two coordinates of ``run.embedding``;
- clustering / classification runs: the map of the latest embedding run of the same data set
  with the same points if there is one, otherwise the first two data columns;
- extensions of the run (``run.extensions``) are drawn over the map with a distinct marker.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout,
)

from manifold_studio.gui.map_coords import as_map_xy
from manifold_studio.gui.views.base import ResultView, register_view
from manifold_studio.gui.views.palette import Coloring, label_text, make_coloring
from manifold_studio.gui.views.points_item import FastPointsItem
from manifold_studio.gui.widgets import heading_label

#: above this many points the map switches to the cheap FastPointsItem
FAST_THRESHOLD = 100_000
#: up to this many points the fast path draws 2×2 px points, 1 px above
FAST_TWO_PIXEL_LIMIT = 400_000
#: at most this many legend entries (the rest are summarised)
MAX_LEGEND = 20
HOVER_RADIUS_PX = 12

COLOR_DATA, COLOR_RUN, COLOR_NONE = "data", "run", "none"

pg.setConfigOptions(antialias=False, background="w", foreground="k")


@register_view
class MapView(ResultView):
    view_id = "map"
    title = "Map"
    area = "central"
    order = 0

    hovered = Signal(int, str)  # data-set row (-1 when none), text
    #: a run was drawn (after show_run); tools add their decorations (e.g. cluster centres)
    runShown = Signal(object)
    #: the points were redrawn (colours may have changed)
    redrawn = Signal()

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.xy = np.zeros((0, 2))
        self.rows = np.zeros(0, dtype=np.intp)
        self.coloring: Coloring | None = None
        self.color_labels = None
        self._data_labels = None
        self._run_labels = None
        self._label_name = ""
        self._axis_names = ("", "")
        self._item = None
        self._overlays = []
        self._colorbar = None

        self.color_combo = QComboBox()
        self.color_combo.addItem("data labels", COLOR_DATA)
        self.color_combo.addItem("run labels (clusters / classes)", COLOR_RUN)
        self.color_combo.addItem("one colour", COLOR_NONE)
        self.color_combo.setToolTip("What the point colours show.")
        self.color_combo.currentIndexChanged.connect(self._redraw)
        self.size_spin = QSpinBox()
        self.size_spin.setRange(1, 20)
        self.size_spin.setValue(7)
        self.size_spin.setToolTip("Point size in pixels.")
        self.size_spin.valueChanged.connect(self._redraw)
        self.equal_axes = QCheckBox("equal axes")
        self.equal_axes.setToolTip("Same scale on both axes (distances on the map are then true to the embedding).")
        self.equal_axes.toggled.connect(self._set_aspect)
        self.hover_label = QLabel("")
        self.hover_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Colour:"))
        bar.addWidget(self.color_combo)
        bar.addWidget(QLabel("Size:"))
        bar.addWidget(self.size_spin)
        bar.addWidget(self.equal_axes)
        bar.addStretch(1)
        self._bar = bar
        bar.addWidget(self.hover_label)

        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(True)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot_item = self.plot.getPlotItem()
        self.legend = self.plot_item.addLegend(offset=(-10, 10), labelTextSize="9pt")
        self.legend.setBrush(pg.mkBrush(255, 255, 255, 210))
        self.legend.setPen(pg.mkPen(200, 200, 200))
        self.title_label = heading_label("No result yet: load data, pick an algorithm and press Run.")

        self._highlight = pg.ScatterPlotItem(size=16, pen=pg.mkPen("k", width=2), brush=None)
        self._highlight.setZValue(1000)
        self.plot.addItem(self._highlight)
        self._hover_text = pg.TextItem("", color=(0, 0, 0), fill=pg.mkBrush(255, 255, 224, 230),
                                       border=pg.mkPen(120, 120, 120), anchor=(0, 1))
        self._hover_text.setZValue(1001)
        self._hover_text.hide()
        self.plot.addItem(self._hover_text, ignoreBounds=True)
        self._mouse_proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                           slot=self._on_mouse_moved)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.title_label)
        layout.addLayout(bar)
        layout.addWidget(self.plot, 1)

    # -- public API -------------------------------------------------------------------------
    def point_count(self) -> int:
        """Number of points of the main layer currently drawn."""
        if self._item is None:
            return 0
        if isinstance(self._item, FastPointsItem):
            return self._item.point_count()
        return len(self._item.data)

    @property
    def uses_fast_path(self) -> bool:
        return isinstance(self._item, FastPointsItem)

    def set_points(self, xy, rows=None, data_labels=None, run_labels=None, title: str = "",
                   axis_names=("", ""), label_name: str = "") -> None:
        """Show ``xy`` ((n, 2) or (n, 1)); ``rows``: the data-set row of each point."""
        self.xy = as_map_xy(xy) if len(xy) else np.zeros((0, 2))
        n = len(self.xy)
        self.rows = np.arange(n) if rows is None else np.asarray(rows)
        self._data_labels = None if data_labels is None else np.asarray(data_labels)
        self._run_labels = None if run_labels is None else np.asarray(run_labels)
        self._label_name = label_name
        self._axis_names = axis_names
        self.title_label.setText(title)
        wanted = COLOR_RUN if self._run_labels is not None else COLOR_DATA
        idx = self.color_combo.findData(wanted)
        self.color_combo.blockSignals(True)
        self.color_combo.setCurrentIndex(idx)
        self.color_combo.blockSignals(False)
        self._redraw()
        self.plot_item.enableAutoRange()
        self.plot_item.autoRange()

    def set_overlays(self, layers) -> None:
        """Extra layers drawn over the map: iterable of (name, xy, symbol)."""
        for item in self._overlays:
            self.plot.removeItem(item)
            self.legend.removeItem(item)
        self._overlays = []
        for name, xy, symbol in layers:
            xy = as_map_xy(xy)
            item = pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1], symbol=symbol, size=9,
                                      pen=pg.mkPen(20, 20, 20, 220, width=1.5),
                                      brush=pg.mkBrush(255, 255, 255, 0), name=name)
            item.setZValue(10)
            self.plot.addItem(item)  # a named item: PlotItem.addItem puts it in the legend
            if not any(sample.item is item for sample, _label in self.legend.items):
                self.legend.addItem(item, name)
            self._overlays.append(item)
        self.legend.setVisible(bool(self.legend.items))

    def hover_text(self, i: int) -> str:
        """Text shown when hovering the i-th drawn point."""
        row = int(self.rows[i])
        parts = [f"point {row}"]
        if self._data_labels is not None:
            name = self._label_name or "label"
            parts.append(f"{name}: {label_text(self._data_labels, i)}")
        if self._run_labels is not None:
            parts.append(f"cluster/class: {label_text(self._run_labels, i)}")
        return " · ".join(parts)

    def nearest_point(self, x: float, y: float, radius_px: float = HOVER_RADIUS_PX) -> int:
        """Index of the drawn point nearest to data coordinates (x, y) within ``radius_px``
        screen pixels, or -1."""
        if not len(self.xy):
            return -1
        vb = self.plot_item.getViewBox()
        px, py = vb.viewPixelSize()
        px, py = (px or 1.0), (py or 1.0)
        dx = (self.xy[:, 0] - x) / px
        dy = (self.xy[:, 1] - y) / py
        d2 = dx * dx + dy * dy
        i = int(np.argmin(d2))
        return i if d2[i] <= radius_px ** 2 else -1

    def show_partial(self, run, values, dataset=None) -> bool:
        """Preview an intermediate embedding published by a running fit (``progress.partial``).
        Returns False (and draws nothing) when ``values`` is not an (n, k) array for the run's points."""
        values = np.asarray(values) if isinstance(values, np.ndarray) else None
        if values is None or values.ndim != 2 or values.shape[0] == 0:
            return False
        rows = run.rows if run.rows is not None else np.arange(values.shape[0])
        if len(rows) != values.shape[0]:
            return False
        labels = None
        if dataset is not None and dataset.labels is not None and len(dataset.labels) > int(np.max(rows)):
            labels = dataset.labels[rows]
        keep_range = len(self.xy) == values.shape[0]
        self.xy = as_map_xy(values)
        self.rows = np.asarray(rows)
        self._data_labels, self._run_labels = labels, None
        self.title_label.setText(f"{run.title()} — running… (intermediate result)")
        self._redraw()
        if not keep_range:
            self.plot_item.autoRange()
        return True

    # -- ResultView -------------------------------------------------------------------------
    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        if run is None or not run.succeeded:
            if run is None:
                self.set_points(np.zeros((0, 2)), title="No result yet: load data, pick an algorithm and press Run.")
                self.set_overlays([])
            return
        rows = run.point_index
        data_labels = None
        label_name = ""
        if dataset is not None and dataset.labels is not None and len(dataset.labels) > int(rows.max(initial=-1)):
            data_labels = dataset.labels[rows]
            label_name = dataset.label_name or "label"
        xy, axes, source = self._coordinates_for(run, dataset)
        if xy is None:
            self.set_points(np.zeros((0, 2)), title=f"{run.title()}: nothing to draw.")
            return
        title = f"{run.title()} — {run.algorithm_name or run.algorithm_id} ({run.params_text()})"
        if run.meta.get("stopped_early"):
            title += " · stopped early"
        if source:
            title += f" · {source}"
        self.set_points(xy, rows, data_labels, run.labels, title, axes, label_name)
        layers = []
        for ext in run.extensions:
            vals = np.asarray(ext.values)
            if run.embedding is not None and vals.ndim == 2 and vals.shape[0]:
                layers.append((f"extended: {ext.name}", vals, "x"))
        fitted = run.meta.get("fitted_rows")  # "fit on a sample": ring the points the model was fitted on
        if fitted is not None and len(self.xy) == run.n_points and 0 < len(fitted) < len(self.xy):
            layers.insert(0, (f"fitted sample ({len(fitted):,} of {len(self.xy):,} points)",
                              self.xy[np.asarray(fitted, dtype=np.intp)], "o"))
        self.set_overlays(layers)
        self.runShown.emit(run)

    def add_toolbar_widget(self, widget) -> None:
        """Put a tool's widget in the map's toolbar (before the hover text)."""
        self._bar.insertWidget(max(0, self._bar.count() - 2), widget)

    def set_run_labels(self, labels) -> None:
        """Recolour the drawn points by new cluster labels (e.g. a dendrogram cut), keeping the view."""
        self._run_labels = None if labels is None else np.asarray(labels)
        idx = self.color_combo.findData(COLOR_RUN if labels is not None else COLOR_DATA)
        self.color_combo.blockSignals(True)
        self.color_combo.setCurrentIndex(idx)
        self.color_combo.blockSignals(False)
        self._redraw()

    def map_run_for(self, run):
        """The run whose embedding is the map ``run`` is drawn on (``run`` itself, its source run
        for "cluster this map", else the latest embedding of the same points), or None."""
        if run is None:
            return None
        if run.embedding is not None:
            return run
        session = getattr(self.window, "session", None)
        if session is None:
            return None
        for rid in (run.meta.get("map_run"), run.source_run):
            other = session.runs.get(rid) if rid is not None else None
            if other is not None and other.succeeded and other.embedding is not None:
                return other
        for other in reversed(list(session.runs.values())):
            if other.succeeded and other.embedding is not None and other.dataset_name == run.dataset_name \
                    and np.array_equal(other.point_index, run.point_index):
                return other
        return None

    def _coordinates_for(self, run, dataset):
        other = self.map_run_for(run)
        if other is not None and other is not run:
            return other.embedding, ("component 1", "component 2"), f"drawn on the map of run #{other.id}"
        if run.embedding is not None:
            k = run.embedding.shape[1] if run.embedding.ndim == 2 else 1
            axes = ("component 1", "component 2" if k > 1 else "")
            return run.embedding, axes, ""
        session = getattr(self.window, "session", None)
        if session is not None:
            for other in reversed(list(session.runs.values())):
                if other.succeeded and other.embedding is not None and other.dataset_name == run.dataset_name \
                        and np.array_equal(other.point_index, run.point_index):
                    return other.embedding, ("component 1", "component 2"), f"drawn on the map of run #{other.id}"
        if dataset is not None:
            X = dataset.X[run.point_index]
            names = dataset.feature_names or [f"column {i}" for i in range(dataset.n_features)]
            return X[:, :2], (names[0], names[1] if len(names) > 1 else ""), "drawn on the first two data columns"
        return None, ("", ""), ""

    # -- drawing ----------------------------------------------------------------------------
    def _set_aspect(self, on: bool) -> None:
        self.plot_item.getViewBox().setAspectLocked(bool(on))
        self.plot_item.autoRange()

    def _current_labels(self):
        mode = self.color_combo.currentData()
        if mode == COLOR_RUN and self._run_labels is not None:
            return self._run_labels, "cluster / class"
        if mode in (COLOR_DATA, COLOR_RUN) and self._data_labels is not None:
            return self._data_labels, self._label_name or "label"
        return None, ""

    def _redraw(self, *_):
        if self._item is not None:
            self.plot.removeItem(self._item)
            self._item = None
        self.legend.clear()
        if self._colorbar is not None:
            self.plot_item.layout.removeItem(self._colorbar)
            self._colorbar.setParentItem(None)
            self._colorbar.scene() and self._colorbar.scene().removeItem(self._colorbar)
            self._colorbar = None
        self._hide_hover()
        n = len(self.xy)
        labels, title = self._current_labels()
        self.color_labels = labels
        self.coloring = make_coloring(labels, n, title)
        self.plot_item.setLabel("bottom", self._axis_names[0])
        self.plot_item.setLabel("left", self._axis_names[1])
        if n == 0:
            return
        size = self.size_spin.value()
        if n > FAST_THRESHOLD:
            item = FastPointsItem(size=2 if n <= FAST_TWO_PIXEL_LIMIT and size >= 4 else 1)
            item.set_data(self.xy, self.coloring.codes, self.coloring.colors)
        else:
            brushes = [pg.mkBrush(*(int(c) for c in rgb), 210) for rgb in self.coloring.colors]
            pen = pg.mkPen(255, 255, 255, 120, width=0.5) if n <= 20_000 else None
            item = pg.ScatterPlotItem(x=self.xy[:, 0], y=self.xy[:, 1], size=size, pen=pen,
                                      brush=[brushes[c] for c in self.coloring.codes],
                                      hoverable=False)
        self._item = item
        self.plot.addItem(item)
        self._draw_legend()
        self.redrawn.emit()

    def _draw_legend(self):
        c = self.coloring
        if c.mode == "categorical":
            shown = min(len(c.names), MAX_LEGEND)
            for i in range(shown):
                sample = pg.ScatterPlotItem(size=10, pen=None, brush=pg.mkBrush(c.qcolor(i)))
                self.legend.addItem(sample, c.names[i])
            if len(c.names) > shown:
                self.legend.addItem(pg.ScatterPlotItem(size=1, pen=None, brush=None),
                                    f"… {len(c.names) - shown} more")
        elif c.mode == "continuous":
            cmap = pg.ColorMap(np.linspace(0, 1, len(c.colors)), c.colors)
            bar = pg.ColorBarItem(values=(c.vmin, c.vmax), colorMap=cmap, interactive=False,
                                  width=14, label=c.title, colorMapMenu=False)
            self.plot_item.layout.addItem(bar, 2, 5)
            self._colorbar = bar
        for item in self._overlays:
            self.legend.addItem(item, item.name())
        self.legend.setVisible(bool(self.legend.items))

    # -- hover ------------------------------------------------------------------------------
    def _hide_hover(self):
        self._hover_text.hide()
        self._highlight.setData([], [])
        self.hover_label.setText("")

    def _on_mouse_moved(self, event):
        pos = event[0]
        vb = self.plot_item.getViewBox()
        if not len(self.xy) or not vb.sceneBoundingRect().contains(pos):
            self._hide_hover()
            self.hovered.emit(-1, "")
            return
        p = vb.mapSceneToView(pos)
        self.hover_at(p.x(), p.y())

    def hover_at(self, x: float, y: float) -> int:
        """Show the hover tip for the point nearest to data coordinates (x, y); returns its
        index among the drawn points or -1."""
        i = self.nearest_point(x, y)
        if i < 0:
            self._hide_hover()
            self.hovered.emit(-1, "")
            return -1
        text = self.hover_text(i)
        px, py = self.xy[i]
        self._highlight.setData([px], [py])
        self._hover_text.setText(text)
        self._hover_text.setPos(px, py)
        self._hover_text.show()
        self.hover_label.setText(text)
        self.hovered.emit(int(self.rows[i]), text)
        return i
