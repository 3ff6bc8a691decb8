"""What the map's points encode: colour by any column (colour map + colour bar, or palette +
legend whose entries toggle classes), size by a numeric column, opacity, density mode.

Functions here are shared by every map-like view (the comparison grid colours its small maps
with :func:`column_coloring` and :func:`brushes_for`); :class:`EncodingControls` holds the
toolbar widgets and :class:`EncodingLegend` the legend / colour bar of one plot.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton, QSlider

from manifold_studio.gui.views.palette import (
    COLOR_MAP_NAMES,
    DEFAULT_COLOR_MAP,
    NAN_NAME,
    Coloring,
    label_text,
    make_coloring,
)
from manifold_studio.gui.views.column_cache import ColumnCache  # noqa: F401  (kept importable from here)
from manifold_studio.tables.dataset_columns import FEATURE

#: colour combo entries: the labels, then one per data-set column (this prefix + its name)
COLOR_DATA, COLOR_RUN, COLOR_NONE = "data", "run", "none"
FIXED_COLOR_ENTRIES = (("data labels", COLOR_DATA), ("run labels (clusters / classes)", COLOR_RUN),
                       ("one colour", COLOR_NONE))
COLUMN_PREFIX = "col:"
SIZE_FIXED = ""
#: the slider's default: opaque (semi-transparent points cost about 40 % more paint time at 1M points)
DEFAULT_OPACITY = 1.0
#: symbols (ScatterPlotItem, up to 100k points) at full opacity keep this alpha, so overlaps show
SYMBOL_ALPHA = 210
#: at most this many legend entries (the rest are summarised)
MAX_LEGEND = 20
#: a legend with more entries than this is laid out in LEGEND_COLUMNS columns (a third as tall:
#: it covers less of the map, e.g. the ten digits and the extended points)
LEGEND_ONE_COLUMN_MAX = 8
LEGEND_COLUMNS = 3
#: features listed in the hover text
HOVER_FEATURES = 4


# -- computations (no widgets) ----------------------------------------------------------------
def column_coloring(values, rows=None, cmap: str = DEFAULT_COLOR_MAP, title: str = "") -> Coloring:
    """Colours of a data-set column for the drawn points: ``values[rows]`` (all values when
    ``rows`` is None) through :func:`make_coloring` — categorical for text / few integer
    values (palette), continuous otherwise (colour map ``cmap``); NaN and "" are grey."""
    values = np.asarray(values)
    if rows is not None:
        values = values[np.asarray(rows, dtype=np.intp)]
    return make_coloring(values, len(values), title, cmap)


def column_scale(values) -> tuple[np.ndarray, float, float]:
    """(t, vmin, vmax): ``values`` scaled linearly onto [0, 1] (NaN: 0) and their finite range."""
    vals = np.asarray(values, dtype=float)
    finite = np.isfinite(vals)
    if not finite.any():
        return np.zeros(len(vals)), 0.0, 0.0
    vmin, vmax = float(vals[finite].min()), float(vals[finite].max())
    span = vmax - vmin if vmax > vmin else 1.0
    t = np.where(finite, (vals - vmin) / span, 0.0)
    return np.clip(t, 0.0, 1.0), vmin, vmax


def size_range(base: int) -> tuple[int, int]:
    """Pixel range of "size by column" for a base point size."""
    return max(2, base // 2), 2 * base + 2


def visible_mask(coloring: Coloring | None, hidden) -> np.ndarray | None:
    """Points whose class is not hidden (None: all are shown)."""
    if coloring is None or not hidden or coloring.mode != "categorical":
        return None
    keep = np.ones(len(coloring.colors), dtype=bool)
    keep[[h for h in hidden if 0 <= h < len(keep)]] = False
    return keep[coloring.codes]


def brushes_for(coloring: Coloring, alpha: int) -> list:
    """One QBrush per colour of ``coloring`` with opacity ``alpha`` (0–255)."""
    return [pg.mkBrush(int(r), int(g), int(b), int(alpha)) for r, g, b in coloring.colors]


def value_text(v) -> str:
    """One value as the hover and legend show it (4 significant digits; NaN: "no value")."""
    if isinstance(v, (float, np.floating)) and np.isnan(v):
        return NAN_NAME
    return label_text(np.asarray([v]), 0)


def row_summary(dataset, row: int, n: int = HOVER_FEATURES) -> str:
    """The first ``n`` feature values of data-set ``row``: "x1 = 0.5, x2 = 3 (+6 more)"; for a distance
    matrix its ``n`` nearest other items: "nearest: b (0.1), c (0.3), ..."."""
    if dataset is None or row < 0 or row >= dataset.n_samples:
        return ""
    if getattr(dataset, "distance_matrix", False):   # an item: its nearest other items, not n distances
        dist = np.asarray(dataset.X[int(row)], dtype=float).copy()
        dist[int(row)] = np.inf
        near = np.argsort(dist, kind="stable")[:min(n, dataset.n_samples - 1)]
        names = dataset.feature_names or [f"#{j}" for j in range(dataset.n_samples)]
        return "nearest: " + ", ".join(f"{names[j]} ({value_text(dist[j])})" for j in near)
    d = dataset.n_features
    names = dataset.feature_names or [f"x{j + 1}" for j in range(d)]
    vals = dataset.dense(int(row), slice(0, n))
    text = ", ".join(f"{names[j]} = {value_text(v)}" for j, v in enumerate(vals))
    return text + (f" (+{d - n} more)" if d > n else "")


# -- toolbar controls -------------------------------------------------------------------------
class EncodingControls(QObject):
    """Colour map, size-by column, opacity, density mode and "show all classes" widgets.
    ``changed`` fires when one of them changes what is drawn; ``showAll`` on the button."""

    changed = Signal()
    showAll = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.cmap_combo = QComboBox()
        for name in COLOR_MAP_NAMES:
            self.cmap_combo.addItem(name, name)
        self.cmap_combo.setToolTip("Colour map of continuous columns (viridis, magma and cividis are "
                                   "perceptually uniform; coolwarm is diverging).")
        self.size_combo = QComboBox()
        self.size_combo.addItem("fixed size", SIZE_FIXED)
        self.size_combo.setToolTip("Scale each point's size by a numeric column.")
        self.opacity_slider = QSlider(Qt.Orientation.Horizontal)
        self.opacity_slider.setRange(5, 100)
        self.opacity_slider.setValue(round(100 * DEFAULT_OPACITY))
        self.opacity_slider.setFixedWidth(90)
        self.opacity_slider.setToolTip("Point opacity: lower it on dense maps to see where points pile up.")
        self.density_box = QCheckBox("density")
        self.density_box.setToolTip("Draw a 2-D histogram (log colour scale) instead of the points: for maps "
                                    "where points hide each other. The bins follow the zoom.")
        self.show_all_button = QPushButton("show all")
        self.show_all_button.setToolTip("Show the classes hidden by clicking their legend entries.")
        self.show_all_button.setEnabled(False)
        self.cmap_combo.currentIndexChanged.connect(lambda _i: self.changed.emit())
        self.size_combo.currentIndexChanged.connect(lambda _i: self.changed.emit())
        self.opacity_slider.valueChanged.connect(lambda _v: self.changed.emit())
        self.density_box.toggled.connect(lambda _on: self.changed.emit())
        self.show_all_button.clicked.connect(self.showAll.emit)

    def widgets(self) -> list:
        return [QLabel("Map:"), self.cmap_combo, QLabel("Size by:"), self.size_combo,
                QLabel("Opacity:"), self.opacity_slider, self.density_box, self.show_all_button]

    def cmap(self) -> str:
        return self.cmap_combo.currentData() or DEFAULT_COLOR_MAP

    def opacity(self) -> float:
        return self.opacity_slider.value() / 100.0

    def alpha(self, full: int = 255) -> int:
        """The opacity as an alpha value, ``full`` at 100 %."""
        return int(round(full * self.opacity()))

    def size_column(self) -> str:
        return self.size_combo.currentData() or SIZE_FIXED

    def set_size_columns(self, names) -> None:
        """The numeric columns offered for "size by" (the current choice is kept if still there)."""
        keep = self.size_column()
        self.size_combo.blockSignals(True)
        self.size_combo.clear()
        self.size_combo.addItem("fixed size", SIZE_FIXED)
        for name in names:
            self.size_combo.addItem(name, name)
        self.size_combo.setCurrentIndex(max(self.size_combo.findData(keep), 0))
        self.size_combo.blockSignals(False)

    def set_cmap(self, name: str) -> bool:
        idx = self.cmap_combo.findData(name)
        if idx >= 0:
            self.cmap_combo.setCurrentIndex(idx)
        return idx >= 0


def fill_color_combo(combo: QComboBox, fixed, columns, more=()) -> None:
    """``combo``'s entries: the ``fixed`` (text, data) pairs, then one per data-set column
    (data ``COLUMN_PREFIX + name``), then the ``more`` feature names (a sparse data set's other
    features, fetched when chosen); the current entry is kept when it is still there."""
    keep = combo.currentData()
    combo.blockSignals(True)
    combo.clear()
    for text, data in fixed:
        combo.addItem(text, data)
    if columns:
        combo.insertSeparator(combo.count())
    for col in columns:
        combo.addItem(f"{col.name} ({col.kind})", COLUMN_PREFIX + col.name)
    for name in more:
        combo.addItem(f"{name} ({FEATURE})", COLUMN_PREFIX + name)
    combo.setCurrentIndex(max(combo.findData(keep), 0))
    combo.blockSignals(False)


# -- legend and colour bar ---------------------------------------------------------------------
class EncodingLegend(QObject):
    """The categorical legend (click an entry: hide / show that class) or the colour bar of a
    continuous colouring, plus notes (size, density). ``classClicked(code)`` on a click."""

    classClicked = Signal(int)

    def __init__(self, plot_item, legend):
        super().__init__()
        self.plot_item = plot_item
        self.legend = legend
        self.colorbar = None  # the colour bar while shown
        self._bar = None      # made once (about 100 ms), then recoloured
        self._samples: dict[int, object] = {}  # id(sample item) -> class code
        self._items: dict[int, object] = {}
        legend.sigSampleClicked.connect(self._on_sample_clicked)

    def clear(self) -> None:
        self.legend.clear()
        self._samples, self._items = {}, {}
        if self.colorbar is not None:
            bar, self.colorbar = self.colorbar, None
            self.plot_item.layout.removeItem(bar)
            bar.hide()

    def prepare_colorbar(self) -> None:
        """Make the colour bar now (about 100 ms, once), so that the first colouring by a
        continuous column of a large map does not pay for it."""
        if self._bar is None:
            self._bar = pg.ColorBarItem(values=(0.0, 1.0), interactive=False, width=14, colorMapMenu=False)
            self._bar.getAxis("left").setWidth(20)  # room for the title beside the bar, whatever its length
            self._bar.hide()

    def draw(self, c: Coloring, hidden, notes=(), overlays=(), density: bool = False) -> None:
        """Entries for colouring ``c`` (``hidden`` class codes shown with a closed eye), one text
        line per note, then the ``overlays`` items (named pyqtgraph items). In ``density`` mode a
        continuous colouring has no colour bar (:meth:`show_density_bar` shows the counts')."""
        self.clear()
        if c.mode == "categorical":
            shown = min(len(c.names), MAX_LEGEND)
            for i in range(shown):
                sample = pg.ScatterPlotItem(size=10, pen=None, brush=pg.mkBrush(c.rgba(i)))
                sample.setVisible(i not in hidden)
                self._samples[id(sample)] = i
                self._items[i] = sample
                self.legend.addItem(sample, c.names[i])
            if len(c.names) > shown:
                self._note(f"… {len(c.names) - shown} more")
        elif c.mode == "continuous" and not density:
            self.show_bar(c.map_colors, c.vmin, c.vmax, c.title)
            if c.nan_code >= 0:
                self.legend.addItem(pg.ScatterPlotItem(size=10, pen=None, brush=pg.mkBrush(c.rgba(c.nan_code))),
                                    "no value")
        for note in notes:
            self._note(note)
        for item in overlays:
            self.legend.addItem(item, item.name())
        self.legend.setColumnCount(LEGEND_COLUMNS if len(self.legend.items) > LEGEND_ONE_COLUMN_MAX else 1)
        self.legend.setVisible(bool(self.legend.items))

    def show_bar(self, colors, vmin: float, vmax: float, title: str, ticks=None) -> None:
        """The colour bar: ``colors`` ((m, 3) uint8) from ``vmin`` to ``vmax``; ``ticks``:
        optional [(value, text), ...] instead of the automatic ones."""
        cmap = pg.ColorMap(np.linspace(0, 1, len(colors)), np.asarray(colors))
        self.prepare_colorbar()
        bar = self._bar
        bar.setColorMap(cmap)
        bar.setLevels(values=(vmin, vmax))
        bar.getAxis("left").setLabel(title)
        bar.axis.setTicks(None if ticks is None else [ticks])
        if self.colorbar is None:
            self.plot_item.layout.addItem(bar, 2, 5)
            bar.show()
            self.colorbar = bar

    def show_density_bar(self, colors, max_count: int) -> None:
        """The colour bar of the density image: log(1 + count) levels labelled with counts."""
        top = float(np.log1p(max(int(max_count), 1)))
        ticks = [(float(np.log1p(v)), f"{v:,}") for v in (10 ** k for k in range(10)) if v <= max(max_count, 1)]
        self.show_bar(colors, 0.0, top, "points / cell (log)", ticks)

    def _note(self, text: str) -> None:
        self.legend.addItem(pg.ScatterPlotItem(size=1, pen=None, brush=None), text)

    def set_hidden(self, hidden) -> None:
        for code, sample in self._items.items():
            sample.setVisible(code not in hidden)
        for sample, _label in self.legend.items:
            sample.update()

    def sample_for(self, code: int):
        """The legend's sample entry (an ItemSample) of class ``code``, or None."""
        item = self._items.get(code)
        return next((s for s, _label in self.legend.items if s.item is item), None) if item is not None else None

    def _on_sample_clicked(self, item) -> None:
        code = self._samples.get(id(item))
        if code is not None:
            self.classClicked.emit(code)


# -- the map view's encoding API ---------------------------------------------------------------
class MapEncodingMixin:
    """Public encoding API of :class:`~manifold_studio.gui.views.map_view.MapView` (it uses the
    view's ``color_combo``, ``size_spin``, ``encoding``, ``encoding_legend``, ``coloring``,
    ``rows`` and drawing methods)."""

    def settings(self) -> dict:
        """What preferences may remember: point size, colour map name, opacity (0–1)."""
        return {"point_size": self.size_spin.value(), "colormap": self.encoding.cmap(),
                "opacity": self.encoding.opacity()}

    def apply_settings(self, settings: dict) -> None:
        """Apply a :meth:`settings` dict (unknown keys and invalid values are ignored); one redraw."""
        widgets = (self.size_spin, self.encoding.cmap_combo, self.encoding.opacity_slider)
        for w in widgets:
            w.blockSignals(True)
        try:
            size = settings.get("point_size")
            if isinstance(size, (int, float)) and not isinstance(size, bool):
                self.size_spin.setValue(int(size))
            if isinstance(settings.get("colormap"), str):
                self.encoding.set_cmap(settings["colormap"])
            op = settings.get("opacity")
            if isinstance(op, (int, float)) and not isinstance(op, bool) and np.isfinite(op):
                self.encoding.opacity_slider.setValue(int(round(100 * float(op))))
        finally:
            for w in widgets:
                w.blockSignals(False)
        self._redraw()

    def set_color_column(self, name: str) -> bool:
        """Colour by data-set column ``name`` (as if chosen in the colour combo)."""
        idx = self.color_combo.findData(COLUMN_PREFIX + name)
        if idx >= 0:
            self.color_combo.setCurrentIndex(idx)
        return idx >= 0

    def set_size_column(self, name: str | None) -> bool:
        """Scale point sizes by numeric column ``name`` (None or "": fixed size)."""
        idx = self.encoding.size_combo.findData(name or SIZE_FIXED)
        if idx >= 0:
            self.encoding.size_combo.setCurrentIndex(idx)
        return idx >= 0

    def set_density(self, on: bool) -> None:
        self.encoding.density_box.setChecked(bool(on))

    def toggle_class(self, code: int) -> None:
        """Hide (or show again) the points of legend class ``code`` of the categorical colouring."""
        self.set_hidden_classes(self.hidden_classes ^ {int(code)})

    def show_all_classes(self) -> None:
        self.set_hidden_classes(set())

    def set_hidden_classes(self, codes) -> None:
        """Hide the points of these categorical classes (not drawn, not hoverable)."""
        c = self.coloring
        n_classes = len(c.names) if c is not None and c.mode == "categorical" else 0
        self.hidden_classes = {int(k) for k in codes if 0 <= int(k) < n_classes}
        self.encoding_legend.set_hidden(self.hidden_classes)
        self._draw_points()
        self.redrawn.emit()

    def _points_changed(self, dataset=None, dataset_name=None, keep_hidden: bool = False) -> None:
        """New coordinates / rows: forget what was computed for the old ones (the hidden
        classes too, unless ``keep_hidden``: a running fit's next intermediate map)."""
        self._coloring_cache = {}
        if not keep_hidden:
            self.hidden_classes = set()
        self._index, self._index_xy = None, None
        if dataset is not None:
            self._hover_dataset = dataset
        if dataset_name is not None:
            self._refresh_columns(dataset_name)

    def _refresh_columns(self, dataset_name) -> None:
        session = self.window.session if self.window is not None else None
        self._dataset_name = dataset_name
        cols = self._columns.get(session, dataset_name)
        if cols is self._shown_columns:
            return
        self._shown_columns = cols
        fill_color_combo(self.color_combo, FIXED_COLOR_ENTRIES + self._source_entries(), cols,
                         self._columns.more_features(session, dataset_name))
        self.encoding.set_size_columns([c.name for c in cols if c.numeric])

    # -- computed colour options added by tools (issue 31: local density, map faithfulness) -----
    def add_color_source(self, key: str, text: str, values) -> None:
        """A colour option computed by a tool: ``values()`` gives one number per drawn point,
        or None while it is not ready (the labels colour the map meanwhile)."""
        if not hasattr(self, "_color_sources"):
            self._color_sources = {}
        self._color_sources[key] = (text, values)
        session = self.window.session if self.window is not None else None
        fill_color_combo(self.color_combo, FIXED_COLOR_ENTRIES + self._source_entries(),
                         self._shown_columns or [], self._columns.more_features(session, getattr(self, "_dataset_name", None))
                         if self._shown_columns else ())

    def _source_entries(self) -> tuple:
        return tuple((text, key) for key, (text, _fn) in getattr(self, "_color_sources", {}).items())

    def color_source_values(self, mode: str):
        """(values, title) of the computed colour option ``mode``, or None."""
        source = getattr(self, "_color_sources", {}).get(mode)
        values = source[1]() if source is not None else None
        return None if values is None else (values, source[0])

    def _column_values(self, name: str):
        """Values of data-set column ``name`` for the drawn points (None if unknown / rows differ)."""
        session = self.window.session if self.window is not None else None
        col = self._columns.find(session, self._dataset_name, name)
        top, every_row = self._rows_info()
        if col is None or top < 0 or top >= len(col.values):
            return None
        return col.values if every_row and len(col.values) == len(self.rows) else col.values[self.rows]

    def _rows_info(self) -> tuple[int, bool]:
        """(largest drawn row or -1, whether the drawn rows are 0, 1, …, n-1), kept per ``rows``."""
        if getattr(self, "_rows_info_of", None) is not self.rows:
            r = self.rows
            top = int(r.max()) if len(r) else -1
            every = top == len(r) - 1 and bool(np.array_equal(r, np.arange(len(r))))
            self._rows_info_of, self._rows_info_value = r, (top, every)
        return self._rows_info_value

    def _on_color_source_changed(self, *_):
        self.hidden_classes = set()
        self._redraw()
