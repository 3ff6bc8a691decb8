"""The 2-D map: the current run's points coloured by a label or any column, with legend and hover.

Up to :data:`FAST_THRESHOLD` points are drawn with pyqtgraph's ScatterPlotItem (symbols,
outlines); above it with :class:`FastPointsItem` (1–3 px points rasterised with numpy into one
image: about 20 ms a frame at a million points); the density mode draws a 2-D histogram instead
(:mod:`~manifold_studio.gui.views.density_item`). Colour, size and opacity encodings, the legend
and the colour bar live in :mod:`~manifold_studio.gui.views.map_encoding`. Hover finds the
nearest point in screen pixels with a grid index (:mod:`manifold_studio.render.spatial_grid`, built in
the background for large maps) and shows the row's labels and values.

What is drawn for a run:
- embedding runs: the first two coordinates of ``run.embedding``;
- clustering / classification runs: the map of the latest embedding run of the same data set
  with the same points if there is one, otherwise the data's own 2-D PCA map (the ``pca``
  plugin, cached per data set; the first two data columns only if no PCA can be computed);
- extensions of the run (``run.extensions``) are drawn over the map with a distinct marker.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QLabel,
    QSpinBox,
    QVBoxLayout,
)

from manifold_studio.gui.flow_layout import FoldingBar, group
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.density_item import DensityItem
from manifold_studio.gui.views.column_cache import ColumnCache, make_searchable
from manifold_studio.gui.views.map_encoding import (  # noqa: F401  (COLOR_*: the view's public names)
    COLOR_DATA,
    COLOR_NONE,
    COLOR_RUN,
    COLUMN_PREFIX,
    FIXED_COLOR_ENTRIES,
    SYMBOL_ALPHA,
    EncodingControls,
    EncodingLegend,
    MapEncodingMixin,
    brushes_for,
    column_scale,
    size_range,
    value_text,
    visible_mask,
)
from manifold_studio.gui.views.map_layout import (FittingViewBox, color_overlays, extension_labels,
                                                  run_pca_map, fit_to_points, overlay_item, place_legend,
                                                  shows_all_points)
from manifold_studio.gui.views.map_hover import HOVER_RADIUS_PX, MapHoverMixin  # noqa: F401
from manifold_studio.gui.views.map_preview import MapPreviewMixin
from manifold_studio.gui.views.map_coloring import cached_coloring
from manifold_studio.gui.views.palette import Coloring, color_map
from manifold_studio.gui.views.points_item import MAX_SIDE, FastPointsItem, xy_bounds
from manifold_studio.gui.widgets import heading_label
from manifold_studio.analysis.map_coords import as_map_xy
from manifold_studio.render.spatial_grid import GridIndex

#: above this many points the map switches to the cheap FastPointsItem
FAST_THRESHOLD = 100_000
#: up to this many points the fast path draws 2×2 px points, 1 px above
FAST_TWO_PIXEL_LIMIT = 400_000
#: the density image is recomputed this long after the view range stops changing (ms)
DENSITY_DELAY_MS = 40
#: the legend is placed again this long after the plot stops being resized (ms)
LEGEND_DELAY_MS = 60

pg.setConfigOptions(antialias=False, background="w", foreground="k")


class MapView(MapPreviewMixin, MapHoverMixin, MapEncodingMixin, ResultView):
    view_id = "map"
    title = "Map"
    area = "central"
    order = 0

    hovered = Signal(int, str)  # data-set row (-1 when none), text
    #: a run was drawn (after show_run); tools add their decorations (e.g. cluster centres)
    runShown = Signal(object)
    #: the points were redrawn (colours, sizes or the visible classes may have changed)
    redrawn = Signal()

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.xy = np.zeros((0, 2))
        self.rows = np.zeros(0, dtype=np.intp)
        self.coloring: Coloring | None = None
        self.color_labels = None
        #: points drawn and hoverable (None: all); hidden legend classes are False
        self.visible: np.ndarray | None = None
        self.hidden_classes: set[int] = set()
        self._data_labels = None
        self._run_labels = None
        self._label_name = ""
        self._axis_names = ("", "")
        self._item = None
        self._density: DensityItem | None = None
        self._overlays = []
        self._hover_dataset = None
        self._color_values = self._size_values = None
        self._color_name = self._size_name = ""
        self._coloring_cache: dict = {}
        self._columns = ColumnCache()
        self._dataset_name = None
        self._shown_columns = None
        self._index: GridIndex | None = None
        self._index_future = None
        self._index_xy = None
        self._bounds = self._bounds_of = None

        self.color_combo = make_searchable(QComboBox())   # a sparse data set offers every gene
        for text, data in FIXED_COLOR_ENTRIES:
            self.color_combo.addItem(text, data)
        self.color_combo.setToolTip("What the point colours show: labels, or any feature or result column.")
        self.color_combo.currentIndexChanged.connect(self._on_color_source_changed)
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
        self.encoding = EncodingControls(self)
        self.encoding.changed.connect(self._redraw)
        self.encoding.showAll.connect(self.show_all_classes)

        # one toolbar row that wraps onto more lines when the map is narrow: colour, size and the
        # tools that ask for it (selection modes, Add to report); every other control (encodings,
        # equal axes, the map instruments, ...) is in a second bar folded under "More" so the
        # plot keeps most of the window (issue 33). Tools add widgets with add_toolbar_widget.
        self._toolbar = FoldingBar("Show or hide the map's other controls: colour map, size by, opacity, "
                                   "equal axes, search, density, labels, neighbours, ...")
        self._toolbar.add(group(QLabel("Colour:"), self.color_combo), primary=True)
        self._toolbar.add(group(QLabel("Size:"), self.size_spin), primary=True)
        self._toolbar.add(self.equal_axes)
        enc = self.encoding.widgets()
        for i in range(len(enc)):
            w = enc[i]
            if isinstance(w, QLabel):
                continue
            prev = enc[i - 1] if i else None
            self._toolbar.add(group(prev, w) if isinstance(prev, QLabel) else w)
        self.more_button, self.more_bar = self._toolbar.button, self._toolbar.more_bar

        self.plot = pg.PlotWidget(viewBox=FittingViewBox())
        self.plot.setMenuEnabled(True)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot_item = self.plot.getPlotItem()
        for name in ("left", "bottom"):  # grid lines at two tick levels, not three: 3× cheaper frames
            self.plot_item.getAxis(name).setStyle(maxTickLevel=1)
        self.legend = self.plot_item.addLegend(offset=(-10, 10), labelTextSize="9pt")
        self.legend.setBrush(pg.mkBrush(255, 255, 255, 210))
        self.legend.setPen(pg.mkPen(200, 200, 200))
        self.encoding_legend = EncodingLegend(self.plot_item, self.legend)
        self.encoding_legend.classClicked.connect(self.toggle_class)
        self.title_label = heading_label("No result yet: load data, pick an algorithm and press Run.")

        self._highlight = pg.ScatterPlotItem(size=16, pen=pg.mkPen("k", width=2), brush=None)
        self._highlight.setZValue(1000)
        self.plot.addItem(self._highlight, ignoreBounds=True)
        self._hover_text = pg.TextItem("", color=(0, 0, 0), fill=pg.mkBrush(255, 255, 224, 230),
                                       border=pg.mkPen(120, 120, 120), anchor=(0, 1))
        self._hover_text.setZValue(1e6)  # a top-level scene item: above the legend and every plot item
        self._hover_text.hide()
        self.plot.scene().addItem(self._hover_text)
        self._mouse_proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                           slot=self._on_mouse_moved)
        self._density_timer = QTimer(self)
        self._density_timer.setSingleShot(True)
        self._density_timer.setInterval(DENSITY_DELAY_MS)
        self._density_timer.timeout.connect(self.update_density)
        self.plot_item.getViewBox().sigRangeChanged.connect(self._on_range_changed)
        self.plot_item.getViewBox().fitted.connect(lambda: place_legend(self, grow=True))
        # a resized plot (window, docks) moves points under the legend: place it again, once
        # the resizing stops
        self._legend_timer = QTimer(self)
        self._legend_timer.setSingleShot(True)
        self._legend_timer.setInterval(LEGEND_DELAY_MS)
        self._legend_timer.timeout.connect(lambda: place_legend(self, grow=shows_all_points(self)))
        self.plot_item.getViewBox().sigResized.connect(lambda *_: self._legend_timer.start())

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.title_label)
        layout.addLayout(self._toolbar.row)
        layout.addWidget(self.more_bar)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.hover_label)

    # -- public API -------------------------------------------------------------------------
    def point_count(self) -> int:
        """Number of points of the main layer currently drawn (in density mode: binned)."""
        if self._density is not None:
            return int(len(self.xy) if self.visible is None else np.count_nonzero(self.visible))
        if self._item is None:
            return 0
        if isinstance(self._item, FastPointsItem):
            return self._item.point_count()
        return len(self._item.data)

    @property
    def uses_fast_path(self) -> bool:
        return isinstance(self._item, FastPointsItem)

    @property
    def density_item(self) -> DensityItem | None:
        return self._density

    @property
    def colorbar(self):
        """The colour bar of a continuous colouring (pg.ColorBarItem), or None."""
        return self.encoding_legend.colorbar

    _colorbar = colorbar  # the name older code and tests use

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
        self._points_changed()
        self.title_label.setText(title)
        wanted = COLOR_RUN if self._run_labels is not None else COLOR_DATA
        current = self.color_combo.currentData() or ""
        if current.startswith(COLUMN_PREFIX) and self._run_labels is None:
            wanted = current  # keep "colour by column" across runs of the data set (not for new clusters)
        idx = self.color_combo.findData(wanted)
        self.color_combo.blockSignals(True)
        self.color_combo.setCurrentIndex(max(idx, 0))
        self.color_combo.blockSignals(False)
        self._redraw()
        self.fit_to_points()
        if n > FAST_THRESHOLD:
            self.spatial_index()  # start building the hover index in the background
            QTimer.singleShot(0, self.encoding_legend.prepare_colorbar)

    def set_overlays(self, layers) -> None:
        """Extra layers drawn over the map: iterable of (name, xy, symbol[, labels]); symbol "x"
        (extended points) fills each point with its label's colour (:func:`.map_layout.color_overlays`)."""
        for item in self._overlays:
            self.plot.removeItem(item)
            self.legend.removeItem(item)
        self._overlays = []
        for name, xy, symbol, *labels in layers:
            item = overlay_item(name, as_map_xy(xy), symbol, labels[0] if labels else None)
            item.setZValue(10)
            self.plot.addItem(item, ignoreBounds=True)  # a decoration: never widens the extent
            if not any(sample.item is item for sample, _label in self.legend.items):
                self.legend.addItem(item, name)
            self._overlays.append(item)
        color_overlays(self)
        self.legend.setVisible(bool(self.legend.items))

    # -- ResultView -------------------------------------------------------------------------
    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.end_preview()
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
        self._hover_dataset = dataset
        self._refresh_columns(run.dataset_name)
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
                layers.append((f"extended: {ext.name}", vals, "x", extension_labels(ext, run, dataset)))
        fitted = run.meta.get("fitted_rows")  # "fit on a sample": ring the points the model was fitted on
        if fitted is not None and len(self.xy) == run.n_points and 0 < len(fitted) < len(self.xy):
            layers.insert(0, (f"fitted sample ({len(fitted):,} of {len(self.xy):,} points)",
                              self.xy[np.asarray(fitted, dtype=np.intp)], "o"))
        self.set_overlays(layers)
        self.runShown.emit(run)

    def add_toolbar_widget(self, widget, primary: bool = False) -> None:
        """Put a tool's widget in the map's toolbar: the always-shown row (``primary``) or the
        bar that *More* unfolds."""
        self._toolbar.add(widget, primary)

    def show_more_controls(self, on: bool = True) -> None:
        """Unfold (or fold) the map's second bar of controls."""
        self._toolbar.unfold(on)

    def set_run_labels(self, labels, redraw: bool = True) -> None:
        """Recolour the points by new cluster labels (a dendrogram cut), keeping the view; redraw=False: keep them only."""
        self._run_labels = None if labels is None else np.asarray(labels)
        self.color_combo.blockSignals(True)
        self.color_combo.setCurrentIndex(self.color_combo.findData(COLOR_RUN if labels is not None else COLOR_DATA))
        self.color_combo.blockSignals(False)
        if redraw:
            self._redraw()

    def map_run_for(self, run):
        """The run whose embedding is the map ``run`` is drawn on (``run`` itself, its source run
        for "cluster this map", else the latest embedding of the same points), or None."""
        if run is None:
            return None
        if run.embedding is not None:
            return run
        session = self.window.session if self.window is not None else None
        if session is None:
            return None
        for rid in (run.meta.get("map_run"), run.source_run):
            other = session.runs.get(rid) if rid is not None else None
            if other is not None and other.succeeded and other.embedding is not None:
                return other
        for other in reversed(list(session.runs.values())):
            if other.succeeded and other.embedding is not None and other.dataset_name == run.dataset_name \
                    and np.array_equal(other.point_index, run.point_index) \
                    and other.meta.get("chain") == run.meta.get("chain"):  # a map of the same prepared data
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
        pca = run_pca_map(self, run, dataset) if dataset is not None else None
        if pca is not None:  # the PCA of what the run was fitted on (its prepared data)
            return pca
        if dataset is not None:
            X = dataset.dense(run.point_index, slice(0, 2))
            names = dataset.feature_names or [f"column {i}" for i in range(dataset.n_features)]
            return X, (names[0], names[1] if len(names) > 1 else ""), "drawn on the first two data columns"
        return None, ("", ""), ""

    # -- drawing ----------------------------------------------------------------------------
    def _set_aspect(self, on: bool) -> None:
        self.plot_item.getViewBox().setAspectLocked(bool(on))
        self.fit_to_points()

    def fit_to_points(self) -> None:
        """Show the data points' extent (:func:`.map_layout.fit_to_points`)."""
        fit_to_points(self)

    def _current_labels(self):
        """(values per drawn point, title, cache key) of the colour source."""
        mode = self.color_combo.currentData() or ""
        computed = self.color_source_values(mode)  # a tool's colour option (issue 31)
        if computed is not None:
            return computed[0], computed[1], f"{COLUMN_PREFIX}{mode}#{id(computed[0])}"
        if mode.startswith(COLUMN_PREFIX):
            name = mode[len(COLUMN_PREFIX):]
            values = self._column_values(name)
            if values is not None:
                return values, name, mode
            if self.window is not None and len(self.xy):
                self.window.show_status(f"Column '{name}' is not available for these points (its run was "
                                        "removed?): coloured by the labels instead.")
            mode = COLOR_DATA
        if mode == COLOR_RUN and self._run_labels is not None:
            return self._run_labels, "cluster / class", COLOR_RUN
        if mode in (COLOR_DATA, COLOR_RUN) and self._data_labels is not None:
            return self._data_labels, self._label_name or "label", COLOR_DATA
        return None, "", COLOR_NONE

    def _make_coloring(self):
        """The current option's colouring; None while a worker computes it (:mod:`.map_coloring`)."""
        labels, title, key = self._current_labels()
        cmap = self.encoding.cmap()
        coloring = cached_coloring(self, labels, title, key, cmap, (key, cmap, id(labels) if key in (COLOR_RUN, COLOR_DATA) else None))
        if coloring is None:
            return None
        self.color_labels, self._colored_xy = labels, self.xy
        self._color_values, self._color_name = (labels, title) if key.startswith(COLUMN_PREFIX) else (None, "")
        return coloring

    def _xy_cache(self):
        """(bounds, (x, y) contiguous columns) of the drawn points, kept until ``xy`` changes."""
        if self._bounds_of is not self.xy:
            cols = (np.ascontiguousarray(self.xy[:, 0]), np.ascontiguousarray(self.xy[:, 1]))
            self._bounds, self._bounds_of = (xy_bounds(self.xy), cols), self.xy
        return self._bounds

    def _redraw(self, *_):
        """Recompute the colouring and sizes, draw the points (or the density) and the legend."""
        coloring = self._make_coloring()
        if coloring is None:   # on a worker: this map keeps its colours meanwhile
            return
        self._hide_hover()
        self.coloring = coloring
        continuous = self.coloring.mode == "continuous" or self._density is not None
        self.encoding.cmap_combo.setEnabled(continuous)  # classes take the categorical palette
        self.plot_item.setLabel("bottom", self._axis_names[0])
        self.plot_item.setLabel("left", self._axis_names[1])
        size_col = self.encoding.size_column()
        self._size_values = self._column_values(size_col) if size_col else None
        self._size_name = size_col if self._size_values is not None else ""
        self.encoding.show_all_button.setEnabled(bool(self.hidden_classes))
        self._draw_points()
        color_overlays(self)
        self._draw_legend()
        self.redrawn.emit()

    def _draw_points(self) -> None:
        """(Re)draw only the main layer: points or the density image, without hidden classes."""
        for attr in ("_item", "_density"):
            item = getattr(self, attr)
            if item is not None:
                self.plot.removeItem(item)
                setattr(self, attr, None)
        self._hide_hover()
        c = self.coloring
        n = len(self.xy)
        self.visible = visible_mask(c, self.hidden_classes)
        self.encoding.show_all_button.setEnabled(bool(self.hidden_classes))
        if n == 0 or c is None:
            return
        if self.encoding.density_box.isChecked():
            self._density = DensityItem(color_map(self.encoding.cmap()))
            self.plot.addItem(self._density)
            self.update_density()
            return
        t = column_scale(self._size_values)[0] if self._size_values is not None else None
        size = self.size_spin.value()
        vis = self.visible
        if n > FAST_THRESHOLD:
            item = FastPointsItem(size=2 if n <= FAST_TWO_PIXEL_LIMIT and size >= 4 else 1)
            sides = None if t is None else 1 + np.rint(t * (MAX_SIDE - 1)).astype(np.intp)
            bounds, columns = self._xy_cache()
            item.set_data(self.xy, c.codes, c.colors, alpha=self.encoding.alpha(), visible=vis, sides=sides,
                          bounds=bounds, columns=columns)
        else:
            alpha = self.encoding.alpha(SYMBOL_ALPHA)
            brushes = brushes_for(c, alpha)
            idx = np.arange(n) if vis is None else np.flatnonzero(vis)
            codes = c.codes[idx]
            if t is not None:
                lo, hi = size_range(size)
                size = lo + t[idx] * (hi - lo)
            pen = pg.mkPen(255, 255, 255, min(120, alpha), width=0.5) if n <= 20_000 else None
            item = pg.ScatterPlotItem(x=self.xy[idx, 0], y=self.xy[idx, 1], size=size, pen=pen,
                                      brush=[brushes[k] for k in codes], hoverable=False)
        self._item = item
        self.plot.addItem(item)

    def _draw_legend(self):
        c = self.coloring
        notes = []
        if self._size_values is not None:
            _t, vmin, vmax = column_scale(self._size_values)
            lo, hi = size_range(self.size_spin.value()) if len(self.xy) <= FAST_THRESHOLD else (1, MAX_SIDE)
            notes.append(f"size: {self._size_name} ({value_text(vmin)} … {value_text(vmax)} → {lo}–{hi} px)")
        density = self._density is not None
        self.encoding_legend.draw(c, self.hidden_classes, notes, self._overlays, density=density)
        if density:
            self.encoding_legend.show_density_bar(color_map(self.encoding.cmap()), int(self._density.counts.max(initial=0)))
        QTimer.singleShot(0, self.place_legend)  # once the legend has its size

    def place_legend(self) -> None:
        """Put the legend in the plot's emptiest corner (:func:`.map_layout.place_legend`)."""
        place_legend(self)

    def update_density(self) -> None:
        """Re-bin the density image over the current view range (density mode only)."""
        if self._density is None:
            return
        vb = self.plot_item.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        self._density.update_view(self.xy, (x0, x1), (y0, y1), (vb.width() or 400, vb.height() or 300),
                                  self.visible)
        self.encoding_legend.show_density_bar(color_map(self.encoding.cmap()), int(self._density.counts.max(initial=0)))

    def _on_range_changed(self, *_):
        if self._density is not None:
            self._density_timer.start()
