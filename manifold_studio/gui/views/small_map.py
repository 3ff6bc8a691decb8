"""Small maps: one pg.PlotWidget per map with points coloured by the data set's labels and the
data set's selection highlighted — the cells of the 'Compare runs' grid and of the 3-D view's
2-D pairs — and what they share: one Pan / Rectangle / Lasso bar for a group of maps, a
selection overlay per map, the colours of a data set's rows.

Large maps (above :data:`MAX_DRAWN` points) draw a fixed pseudo-random sample of their rows —
the same rows in every map, so the maps stay comparable — while selection and highlight work
on every point.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from manifold_studio.gui.views import selection_overlay
from manifold_studio.gui.views.palette import Coloring, make_coloring
from manifold_studio.gui.views.points_item import FastPointsItem
from manifold_studio.analysis.map_coords import as_map_xy

#: above this many points a small map draws with FastPointsItem
SMALL_MAP_FAST = 3_000   # above, 2×2 px points in one cheap item (a symbol per point cost 160 ms at 20,000)
#: a small map draws at most this many points (a sample of rows, the same in every map)
MAX_DRAWN = 40_000
#: above this many selected points the highlight is drawn with FastPointsItem
HIGHLIGHT_FAST = 5_000


def drawn_sample(rows, max_drawn: int = MAX_DRAWN) -> np.ndarray | None:
    """Positions of the points a small map draws: None (all) up to ``max_drawn`` points, else
    about ``max_drawn`` of them chosen by a hash of their data-set row (so every map of the same
    data set draws the same rows). Qt-free, vectorised."""
    rows = np.asarray(rows)
    n = len(rows)
    if n <= max_drawn:
        return None
    h = (rows.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(1 << 32)  # Knuth's multiplicative hash
    return np.flatnonzero(h < np.uint64(int((1 << 32) * max_drawn / n)))


def finite_bounds(xy: np.ndarray):
    """((xmin, ymin), (xmax, ymax)) of the finite points of ``xy`` (n, 2), or None."""
    xy = np.asarray(xy, dtype=float)
    if not len(xy):
        return None
    finite = np.isfinite(xy).all(axis=1)
    if not finite.all():
        xy = xy[finite]
        if not len(xy):
            return None
    return xy.min(axis=0), xy.max(axis=0)


def shared_mode_bar(window, dataset_name, maps):
    """One Pan / Rectangle / Lasso bar for a group of small maps (``maps()`` -> list of
    :class:`SmallMap`; ``dataset_name()`` -> the name of their data set): its mode, "dim others"
    and Select all / Invert / Clear act on every map's selection overlay. None when the
    selection overlay is not available."""
    module = selection_overlay
    if module is None or window is None:
        return None
    try:
        return _linked_mode_bar(module, window, dataset_name, maps)
    except Exception as exc:  # noqa: BLE001 - without the bar the maps still show and highlight
        window.session.log(f"No selection bar on the small maps ({type(exc).__name__}: {exc})", "warning")
        return None


def _linked_mode_bar(module, window, dataset_name, maps):
    bar = module.SelectionModeBar()

    def each_overlay(fn):
        for m in maps():
            if m.overlay is not None:
                fn(m.overlay)

    def on_dataset(fn):
        name = dataset_name()
        if name is not None and name in window.session.datasets:
            fn(name)

    bar.modeChanged.connect(lambda mode: each_overlay(lambda ov: ov.bar.set_mode(mode)))
    bar.dim_box.toggled.connect(lambda on: each_overlay(lambda ov: ov.bar.dim_box.setChecked(on)))
    bar.buttons["all"].clicked.connect(lambda: on_dataset(window.selection.select_all))
    bar.buttons["invert"].clicked.connect(lambda: on_dataset(window.selection.invert))
    bar.buttons["clear"].clicked.connect(lambda: on_dataset(window.selection.clear))
    return bar


def attach_selection_overlay(window, small_map: "SmallMap", mode_bar=None) -> None:
    """Give ``small_map`` a selection overlay (rectangle / lasso into ``window.selection``, and
    the highlight), following ``mode_bar``'s mode. Without the overlay module the map keeps
    its own highlight."""
    module = selection_overlay
    if module is None or window is None or small_map.dataset_name is None:
        return
    try:
        overlay = module.SelectionOverlay(window, small_map, small_map.points)
    except Exception as exc:  # noqa: BLE001 - selecting by hand is a bonus; the map still shows
        window.session.log(f"No selection tool on a small map ({type(exc).__name__}: {exc})", "warning")
        return
    small_map.overlay = overlay
    small_map._draw_highlight()  # the overlay draws the highlight from now on
    try:
        if mode_bar is not None:
            overlay.bar.set_mode(mode_bar.mode)
            overlay.bar.dim_box.setChecked(mode_bar.dim_box.isChecked())
        overlay.refresh()
    except Exception as exc:  # noqa: BLE001
        window.session.log(f"The selection tool of a small map is incomplete ({type(exc).__name__}: {exc})",
                           "warning")


class SmallMap(pg.PlotWidget):
    """One small map: points coloured by the data labels, the data set's selection highlighted,
    a title. ``points()`` gives ``(xy, rows, dataset_name)`` of every point (what a selection
    overlay needs), also when only a sample is drawn."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMenuEnabled(False)
        self.hideButtons()
        self.setMinimumSize(150, 130)
        self.xy = np.zeros((0, 2))
        self.rows = np.zeros(0, dtype=np.intp)
        self.dataset_name: str | None = None
        self.coloring: Coloring | None = None
        self.title_text = ""
        #: positions of the drawn points (None: all)
        self.drawn: np.ndarray | None = None
        #: for each point, whether its row is selected (the highlight draws the drawn ones)
        self.highlighted = np.zeros(0, dtype=bool)
        self.overlay = None
        self.run_id: int | None = None
        self.alignment = None
        self._item = None
        self._highlight = None

    def set_title(self, text: str) -> None:
        """``text`` as the title (a " — " starts a second line, so narrow maps keep it whole)."""
        self.title_text = text
        self.setTitle(text.replace(" — ", "<br>"), size="9pt")

    def set_points(self, xy, rows, coloring: Coloring, dataset_name: str | None, title: str = "",
                   axis_names=("", ""), drawn="auto", auto_range: bool = True) -> None:
        """Show ``xy`` (n, 2) whose data-set rows are ``rows``; ``drawn``: the positions to draw
        (None: all; "auto": :func:`drawn_sample` of the rows)."""
        self.xy = as_map_xy(xy) if len(xy) else np.zeros((0, 2))
        self.rows = np.asarray(rows, dtype=np.intp)
        self.dataset_name = dataset_name
        self.coloring = coloring
        if isinstance(drawn, str):
            drawn = drawn_sample(self.rows)
        self.drawn = None if drawn is None else np.asarray(drawn, dtype=np.intp)
        if self.drawn is not None and len(self.drawn) >= len(self.xy):
            self.drawn = None
        self.set_title(title)
        self.setLabel("bottom", axis_names[0])
        self.setLabel("left", axis_names[1])
        if self._item is not None:
            self.removeItem(self._item)
            self._item = None
        xy, codes = (self.xy, coloring.codes) if self.drawn is None else (self.xy[self.drawn], coloring.codes[self.drawn])
        finite = np.isfinite(xy).all(axis=1)
        if not finite.all():
            xy, codes = xy[finite], codes[finite]
        if len(xy) > SMALL_MAP_FAST:
            item = FastPointsItem(size=2)
            item.set_data(xy, codes, coloring.colors)
        else:
            brushes = [pg.mkBrush(*(int(c) for c in rgb), 220) for rgb in coloring.colors]
            item = pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1], size=5, pen=None,
                                      brush=[brushes[c] for c in codes], hoverable=False)
        self._item = item
        self.addItem(item)
        self.highlighted = np.zeros(len(self.xy), dtype=bool)
        self._draw_highlight()
        if auto_range:
            self.getPlotItem().enableAutoRange()
        if self.overlay is not None:
            self.overlay.refresh()

    def drawn_count(self) -> int:
        return len(self.xy) if self.drawn is None else len(self.drawn)

    def points(self):
        """(xy (n, 2), data-set rows (n,), data-set name) of every point of the map."""
        return self.xy, self.rows, self.dataset_name

    def show_selection(self, mask: np.ndarray) -> None:
        """Highlight the points whose data-set row is True in ``mask`` (a mask over the data
        set's rows)."""
        mask = np.asarray(mask, dtype=bool)
        if len(self.rows) and mask.size > int(self.rows.max()):
            self.highlighted = mask[self.rows]
        else:
            self.highlighted = np.zeros(len(self.rows), dtype=bool)
        self._draw_highlight()

    def highlighted_rows(self) -> np.ndarray:
        """Data-set rows of the highlighted points (by the overlay, or by the map), sorted."""
        if self.overlay is not None:
            return np.unique(self.rows[self.overlay.highlighted])
        return np.unique(self.rows[self.highlighted])

    def _draw_highlight(self) -> None:
        if self._highlight is not None:
            self.removeItem(self._highlight)
            self._highlight = None
        if self.overlay is not None or not self.highlighted.any():
            return  # a selection overlay draws the selection itself
        if self.drawn is None:
            xy = self.xy[self.highlighted]
        else:
            xy = self.xy[self.drawn[self.highlighted[self.drawn]]]
        if len(xy) > HIGHLIGHT_FAST:
            item = FastPointsItem(size=2)
            item.set_data(xy, np.zeros(len(xy), dtype=np.intp), np.array([[0, 0, 0]], dtype=np.uint8))
        else:
            item = pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1], size=8, pen=pg.mkPen(0, 0, 0, width=1.5),
                                      brush=None, hoverable=False)
        item.setZValue(100)
        self._highlight = item
        self.addItem(item, ignoreBounds=True)


#: the colouring of every row of a data set, by its labels array (the latest few)
_ROW_COLORINGS: dict[int, tuple] = {}
_CACHE_SIZE = 4


def dataset_coloring(dataset, rows) -> Coloring:
    """Colours of the points at ``rows`` by the data set's labels: the categories of the whole
    data set (a class has the same colour in every map, whatever rows a run has), computed once
    per labels array; a run's points only index it."""
    rows = np.asarray(rows, dtype=np.intp)
    labels = getattr(dataset, "labels", None)
    if labels is None or len(labels) <= int(rows.max(initial=-1)):
        return make_coloring(None, len(rows))
    hit = _ROW_COLORINGS.get(id(labels))
    if hit is None or hit[0] is not labels:
        hit = (labels, make_coloring(np.asarray(labels), len(labels), getattr(dataset, "label_name", "") or "label"))
        _ROW_COLORINGS[id(labels)] = hit
        while len(_ROW_COLORINGS) > _CACHE_SIZE:
            _ROW_COLORINGS.pop(next(iter(_ROW_COLORINGS)))
    c = hit[1]
    return Coloring(c.mode, c.codes[rows], c.colors, c.names, c.vmin, c.vmax, c.title)
