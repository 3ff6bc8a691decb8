"""Rectangle and lasso selection on any pyqtgraph plot, and the highlight of the selection.

``SelectionOverlay(window, plot_widget, points)`` makes one plot a place where rows can be
selected and where the selection is shown:

* ``window`` — anything with ``selection`` (the window's
  :class:`~manifold_studio.gui.selection_model.SelectionModel`); ``show_status(msg)`` is used
  when present;
* ``plot_widget`` — a ``pg.PlotWidget`` (or a ``pg.PlotItem``, for a plot inside a
  ``GraphicsLayoutWidget`` grid);
* ``points()`` — a callable returning ``(xy, rows, dataset_name)`` for what the plot currently
  draws: ``xy`` (n, 2) float data coordinates, ``rows`` (n,) the data-set row of each point
  and the data set's name (None when nothing is drawn). It is called at every selection
  gesture and every :meth:`refresh`, so it must be cheap (return the host's arrays, no copy).

What it adds:

* a selection mode — :data:`PAN` (pyqtgraph's own left-drag pan, the default), :data:`RECT`
  or :data:`LASSO` — chosen on its :class:`SelectionModeBar` (``overlay.bar``, a QWidget to put
  in the host's toolbar: Pan / Rectangle / Lasso, Select all, Invert, Clear, Dim others; keys
  P, R, L when the plot has the focus);
* in rectangle / lasso mode a left drag on the plot draws the rubber band or the lasso path and,
  on release, selects the rows of the points inside (Shift adds, Alt removes, Ctrl toggles —
  :func:`~manifold_studio.gui.selection_model.mode_for_modifiers`). A click without a drag
  selects the point under the mouse, or on empty space clears the selection;
* one highlight layer on top of the plot: the selected points of its data set
  (``window.selection.mask(name)[rows]``) as dark rings (pyqtgraph scatter) up to
  :data:`FAST_THRESHOLD` points, as one-colour 2×2 px points (:class:`MarkedPointsItem`, one
  ``drawPoints`` call per pass) above; and an
  optional white veil that dims the other points. It follows ``window.selection.changed``;
  the host calls :meth:`refresh` after it redraws its points.

For a grid of plots (one overlay per small map) keep a reference to each overlay, put one
overlay's ``bar`` in the grid's toolbar and call ``other.follow(first.bar)`` on the others.

Subclasses change what "inside" means (:meth:`rows_in_rect`, :meth:`rows_in_polygon`), what a
click does (:meth:`click_at`) and how the highlight is drawn (:meth:`draw_highlight`) — see the
silhouette view. :func:`install_selection` attaches one overlay to the main map.
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsRectItem, QWidget

from manifold_studio.gui.selection_model import mode_for_modifiers
from manifold_studio.gui.views.selection_items import (  # noqa: F401 - re-exported
    HIGHLIGHT_PEN,
    LASSO,
    PAN,
    RECT,
    MarkedPointsItem,
    SelectionModeBar,
)
from manifold_studio.session import selection as ops

#: above this many points the highlight is a MarkedPointsItem (as the map's own fast path)
FAST_THRESHOLD = 100_000
#: a drag shorter than this (screen pixels) is a click
CLICK_PX = 4
#: a click selects the point nearest the mouse within this many pixels
CLICK_RADIUS_PX = 8
#: lasso vertices closer than this (screen pixels) to the previous one are dropped
LASSO_STEP_PX = 2.0
BAND_PEN = (0, 90, 200)
Z_VEIL, Z_HIGHLIGHT, Z_BAND = 20, 30, 2000


class SelectionOverlay(QObject):
    """Selection gestures and the selection highlight on one plot (see the module docstring)."""

    #: the overlay selected rows (data set name, number of rows its gesture hit)
    selected = Signal(str, int)

    def __init__(self, window, plot_widget, points):
        super().__init__(plot_widget if isinstance(plot_widget, QObject) else None)
        self.window = window
        self.points = points
        self.plot_widget = plot_widget
        self.plot_item = plot_widget.getPlotItem() if hasattr(plot_widget, "getPlotItem") else plot_widget
        self.vb = self.plot_item.getViewBox()
        if self.vb.scene() is None:
            raise ValueError("SelectionOverlay needs a plot that is already in a scene: a pg.PlotWidget, "
                             "or a PlotItem added to a GraphicsLayoutWidget before the overlay is made.")
        shortcut_widget = plot_widget if isinstance(plot_widget, QWidget) else None
        self.bar = SelectionModeBar(shortcut_widget=shortcut_widget)
        self.bar.buttons["all"].clicked.connect(self.select_all)
        self.bar.buttons["invert"].clicked.connect(self.invert)
        self.bar.buttons["clear"].clicked.connect(self.clear)
        self.bar.dim_box.toggled.connect(lambda _on: self.refresh())
        self.bar.modeChanged.connect(self._mode_changed)
        self._highlight = None
        self._veil = None
        self._band = None
        self._path: list[tuple[float, float]] = []
        self._last_px: QPointF | None = None
        self._start_scene: QPointF | None = None
        self._moved_px = 0.0
        self._checked = None  # (rows array, n, rows valid, rows == arange(n))
        #: optional callable -> (codes (n,), colors (m, 3) uint8) of the drawn points, or None:
        #: the selected points of small plots are then redrawn in their own colours, in rings
        self.point_colors = None
        #: seconds the last gesture took from release to highlighted (for benchmarks)
        self.last_timing: dict[str, float] = {}
        self._orig_drag = self.vb.mouseDragEvent
        self.vb.mouseDragEvent = self._drag_event  # the scene looks the handler up on the item
        self.vb.scene().sigMouseClicked.connect(self._scene_clicked)
        window.selection.changed.connect(self._selection_changed)

    # -- mode ---------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self.bar.mode

    def follow(self, bar: "SelectionModeBar") -> None:
        """Take the mode and "dim others" from another overlay's bar — one bar for a grid of
        small maps of the same data set (its All / Invert / Clear act once, through the overlay
        that owns it). This overlay's own bar is then unused."""
        self.bar = bar
        bar.modeChanged.connect(self._mode_changed)
        bar.dim_box.toggled.connect(lambda _on: self.refresh())
        self._mode_changed(bar.mode)

    def set_mode(self, mode: str) -> None:
        """PAN, RECT or LASSO."""
        self.bar.set_mode(mode)

    def _mode_changed(self, mode: str) -> None:
        self._drop_band()
        if isinstance(self.plot_widget, QWidget):
            cursor = Qt.CursorShape.ArrowCursor if mode == PAN else Qt.CursorShape.CrossCursor
            self.plot_widget.viewport().setCursor(cursor)

    # -- what is drawn -------------------------------------------------------------------------
    def current(self):
        """(xy, rows, dataset name) of the plot, validated: rows outside the data set (a stale
        preview) count as nothing drawn. The check of a rows array is done once per array."""
        xy, rows, name = self.points()
        xy = np.zeros((0, 2)) if xy is None else np.asarray(xy)
        rows = np.zeros(0, dtype=np.intp) if rows is None else np.asarray(rows)
        datasets = self.window.selection.session.datasets
        if name is None or len(rows) != len(xy) or name not in datasets:
            return np.zeros((0, 2)), np.zeros(0, dtype=np.intp), None
        n = datasets[name].n_samples
        if self._checked is None or self._checked[0] is not rows or self._checked[1] != n:
            ok = not len(rows) or (0 <= int(rows.min()) and int(rows.max()) < n)
            # rows == 0..n-1 (a map of every row in order): the mask needs no gather
            identity = ok and len(rows) == n and bool(np.array_equal(rows, np.arange(n)))
            self._checked = (rows, n, ok, identity)
        if not self._checked[2]:
            return np.zeros((0, 2)), np.zeros(0, dtype=np.intp), None
        if xy.ndim == 2 and xy.shape[1] == 1:
            xy = np.column_stack([xy[:, 0], np.zeros(len(xy))])
        return xy, rows, name

    # -- selecting ------------------------------------------------------------------------------
    def rows_in_rect(self, x0, y0, x1, y1, xy, rows) -> np.ndarray:
        """Data-set rows whose points lie in the rectangle (data coordinates)."""
        return rows[ops.points_in_rect(xy, x0, y0, x1, y1)]

    def rows_in_polygon(self, polygon, xy, rows) -> np.ndarray:
        """Data-set rows whose points lie inside ``polygon`` (m, 2) in data coordinates."""
        return rows[ops.points_in_polygon(xy, polygon)]

    def select_rect(self, x0, y0, x1, y1, mode: str = ops.REPLACE) -> np.ndarray:
        """Select the points in a rectangle given in data coordinates; returns the rows hit."""
        xy, rows, name = self.current()
        if name is None:
            return self._nothing_drawn()
        return self._apply(name, self.rows_in_rect(x0, y0, x1, y1, xy, rows), mode, "rectangle")

    def select_polygon(self, polygon, mode: str = ops.REPLACE) -> np.ndarray:
        """Select the points inside a lasso given in data coordinates; returns the rows hit."""
        xy, rows, name = self.current()
        if name is None:
            return self._nothing_drawn()
        return self._apply(name, self.rows_in_polygon(np.asarray(polygon, dtype=float), xy, rows), mode, "lasso")

    def click_at(self, x: float, y: float, mode: str = ops.REPLACE) -> np.ndarray:
        """A click at data coordinates (x, y): the nearest point within a few pixels is
        selected (with ``mode``); on empty space a plain click clears the selection."""
        xy, rows, name = self.current()
        if name is None:
            return self._nothing_drawn()
        hit = np.zeros(0, dtype=np.intp)
        if len(xy):
            px, py = self.vb.viewPixelSize()
            px, py = (px or 1.0), (py or 1.0)
            d2 = ((xy[:, 0] - x) / px) ** 2 + ((xy[:, 1] - y) / py) ** 2
            i = int(np.argmin(d2))
            if d2[i] <= CLICK_RADIUS_PX ** 2:
                hit = rows[i:i + 1]
        return self._apply(name, hit, mode, "click")

    def _apply(self, name: str, hit: np.ndarray, mode: str, how: str) -> np.ndarray:
        t0 = time.perf_counter()
        sel = self.window.selection
        if hit.size == 0 and mode != ops.REPLACE:
            self._status(f"Nothing inside the {how}: the selection is unchanged ({sel.describe(name)}).")
            return hit
        sel.select(name, hit, mode)
        self.last_timing = {"select_s": time.perf_counter() - t0}
        if hit.size == 0:
            self._status(f"{name}: nothing selected.")
        self.selected.emit(name, int(hit.size))
        return hit

    def _nothing_drawn(self) -> np.ndarray:
        self._status("Nothing to select: this plot shows no points yet.")
        return np.zeros(0, dtype=np.intp)

    def _status(self, message: str) -> None:
        if self.window is not None:
            self.window.show_status(message)

    def select_all(self) -> None:
        name = self.current()[2]
        if name is not None:
            self.window.selection.select_all(name)

    def invert(self) -> None:
        name = self.current()[2]
        if name is not None:
            self.window.selection.invert(name)

    def clear(self) -> None:
        name = self.current()[2]
        if name is not None:
            self.window.selection.clear(name)

    # -- the gesture -------------------------------------------------------------------------------
    def _drag_event(self, ev, axis=None):
        if axis is not None or self.mode == PAN or ev.button() != Qt.MouseButton.LeftButton:
            return self._orig_drag(ev) if axis is None else self._orig_drag(ev, axis=axis)
        ev.accept()
        if ev.isStart():
            self.press(ev.buttonDownScenePos())
        self.move(ev.scenePos())
        if ev.isFinish():
            self.release(ev.scenePos(), ev.modifiers())

    def press(self, scene_pos: QPointF) -> None:
        """Start a rectangle / lasso at a scene position (the mouse went down on the plot)."""
        self._drop_band()
        self._start_scene = QPointF(scene_pos)
        self._last_px = QPointF(scene_pos)
        self._moved_px = 0.0
        p = self.vb.mapSceneToView(QPointF(scene_pos))
        self._path = [(p.x(), p.y())]
        pen = pg.mkPen(BAND_PEN, width=1.5, style=Qt.PenStyle.DashLine)
        pen.setCosmetic(True)
        if self.mode == RECT:
            self._band = QGraphicsRectItem(QRectF(p, p))
            self._band.setBrush(pg.mkBrush(0, 90, 200, 30))
        else:
            self._band = QGraphicsPathItem()
            self._band.setBrush(pg.mkBrush(0, 90, 200, 25))
        self._band.setPen(pen)
        self._band.setZValue(Z_BAND)
        self.vb.addItem(self._band, ignoreBounds=True)

    def move(self, scene_pos: QPointF) -> None:
        """The mouse moved with the button down: grow the rectangle / the lasso."""
        if self._band is None or self._start_scene is None:
            return
        far = scene_pos - self._start_scene
        self._moved_px = max(self._moved_px, abs(far.x()) + abs(far.y()))
        p = self.vb.mapSceneToView(QPointF(scene_pos))
        if self.mode == RECT:
            x0, y0 = self._path[0]
            self._band.setRect(QRectF(QPointF(x0, y0), p).normalized())
            return
        d = scene_pos - self._last_px
        if abs(d.x()) + abs(d.y()) < LASSO_STEP_PX:
            return
        self._last_px = QPointF(scene_pos)
        self._path.append((p.x(), p.y()))
        path = QPainterPath(QPointF(*self._path[0]))
        for x, y in self._path[1:]:
            path.lineTo(x, y)
        path.closeSubpath()
        self._band.setPath(path)

    def release(self, scene_pos: QPointF, modifiers=Qt.KeyboardModifier.NoModifier) -> np.ndarray:
        """The mouse went up: select what the rectangle / lasso encloses (a click when it hardly
        moved). Returns the rows hit."""
        if self._start_scene is None:
            return np.zeros(0, dtype=np.intp)
        mode = mode_for_modifiers(modifiers)
        moved = scene_pos - self._start_scene
        moved_px = max(self._moved_px, abs(moved.x()) + abs(moved.y()))
        end = self.vb.mapSceneToView(QPointF(scene_pos))
        polygon = list(self._path)
        shape = self.mode
        self._drop_band()
        if moved_px < CLICK_PX:  # the mouse hardly moved: a click
            return self.click_at(end.x(), end.y(), mode)
        if shape == RECT:
            x0, y0 = polygon[0]
            return self.select_rect(x0, y0, end.x(), end.y(), mode)
        polygon.append((end.x(), end.y()))
        return self.select_polygon(polygon, mode)

    def _drop_band(self) -> None:
        if self._band is not None:
            self.vb.removeItem(self._band)
            self._band = None
        self._start_scene = None

    def _scene_clicked(self, ev) -> None:
        if self.mode == PAN or ev.button() != Qt.MouseButton.LeftButton or ev.double():
            return
        if not self.vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        p = self.vb.mapSceneToView(ev.scenePos())
        self.click_at(p.x(), p.y(), mode_for_modifiers(ev.modifiers()))

    # -- the highlight -----------------------------------------------------------------------------
    def _selection_changed(self, name: str) -> None:
        if name == self.current()[2]:
            self.refresh()

    def selected_mask(self) -> np.ndarray:
        """For each drawn point, whether its row is selected."""
        return self._selected_mask(*self.current()[1:])

    def _selected_mask(self, rows, name) -> np.ndarray:
        if name is None or not len(rows):
            return np.zeros(len(rows), dtype=bool)
        mask = self.window.selection.mask(name)
        return mask if self._checked is not None and self._checked[3] else mask[rows]

    def refresh(self) -> None:
        """Redraw the highlight (after the selection changed or the host redrew its points)."""
        t0 = time.perf_counter()
        xy, rows, name = self.current()
        drawn = self._selected_mask(rows, name)
        self.draw_highlight(xy, drawn)
        self._draw_veil(bool(self.highlighted.size) and self.bar.dim_box.isChecked())
        self.last_timing["highlight_s"] = time.perf_counter() - t0

    @property
    def highlighted(self) -> np.ndarray:
        """Indices (among the drawn points) of the points highlighted now."""
        return getattr(self, "_highlighted", np.zeros(0, dtype=np.intp))

    def draw_highlight(self, xy: np.ndarray, drawn: np.ndarray) -> None:
        """Draw the selected points ``xy[drawn]`` on top of the plot."""
        idx = np.flatnonzero(drawn)
        self._highlighted = idx
        fast = len(xy) > FAST_THRESHOLD
        if self._highlight is not None and isinstance(self._highlight, MarkedPointsItem) != fast:
            self.plot_item.removeItem(self._highlight)
            self._highlight = None
        if self._highlight is None:
            if fast:
                self._highlight = MarkedPointsItem()
            else:
                pen = pg.mkPen(HIGHLIGHT_PEN, width=1.6)
                self._highlight = pg.ScatterPlotItem(size=11, pen=pen, brush=None, hoverable=False)
            self._highlight.setZValue(Z_HIGHLIGHT)
            self.plot_item.addItem(self._highlight, ignoreBounds=True)
        if fast:
            self._highlight.set_points(xy if idx.size == len(xy) else xy[idx])
        else:
            self._highlight.setData(xy[idx, 0], xy[idx, 1], brush=self._brushes(idx, len(xy)))

    def _brushes(self, idx: np.ndarray, n: int):
        """Each selected point's own colour (over the veil of "dim others"), else no fill."""
        coloring = self.point_colors() if self.point_colors is not None else None
        codes, colors = coloring if coloring is not None else (None, None)
        if codes is None or colors is None or len(codes) != n or not len(colors):
            return None
        table = [pg.mkBrush(*(int(v) for v in rgb[:3]), 255) for rgb in np.asarray(colors)]
        picked = np.clip(np.asarray(codes)[idx], 0, len(table) - 1)
        return [table[c] for c in picked]

    def _draw_veil(self, on: bool) -> None:
        if not on:
            if self._veil is not None:
                self._veil.hide()
            return
        if self._veil is None:
            self._veil = QGraphicsRectItem()
            self._veil.setBrush(pg.mkBrush(255, 255, 255, 170))
            self._veil.setPen(pg.mkPen(None))
            self._veil.setZValue(Z_VEIL)
            self.vb.addItem(self._veil, ignoreBounds=True)
            self.vb.sigRangeChanged.connect(self._fit_veil)
        self._fit_veil()
        self._veil.show()

    def _fit_veil(self, *_):
        if self._veil is not None:
            (x0, x1), (y0, y1) = self.vb.viewRange()
            self._veil.setRect(QRectF(x0, y0, x1 - x0, y1 - y0).normalized())


def install_selection(window) -> SelectionOverlay:
    """One :class:`SelectionOverlay` on the main map, its mode bar in the map's toolbar.

    The map's arrays are read, never modified: ``map_view.xy``, ``map_view.rows``, the data set
    of the run it shows, its colouring and ``visible`` (points of classes hidden from the legend
    are neither selectable nor highlighted); the highlight follows ``redrawn`` / ``runShown``."""
    view = window.map_view
    shown: dict = {}

    def drawn_index():
        """Indices of the map's points that are drawn (None: all), cached per array."""
        vis = getattr(view, "visible", None)
        if vis is None or len(vis) != len(view.xy):
            return None
        if shown.get("vis") is not vis:
            shown.clear()
            shown.update(vis=vis, idx=np.flatnonzero(vis))
        return shown["idx"]

    def points():
        ds = getattr(view, "dataset", None)
        name = ds.name if ds is not None else None
        idx = drawn_index()
        if idx is None:
            return view.xy, view.rows, name
        if shown.get("xy") is not view.xy or shown.get("rows") is not view.rows:
            shown.update(xy=view.xy, rows=view.rows, pts=(view.xy[idx], view.rows[idx]))
        return (*shown["pts"], name)

    overlay = SelectionOverlay(window, view.plot, points)

    def colors():
        c = getattr(view, "coloring", None)
        codes = getattr(c, "codes", None)
        if c is None or codes is None:
            return None
        idx = drawn_index()
        return (codes if idx is None else codes[idx]), getattr(c, "colors", None)
    overlay.point_colors = colors
    view.add_toolbar_widget(overlay.bar, primary=True)
    view.redrawn.connect(overlay.refresh)
    view.runShown.connect(lambda _run: overlay.refresh())
    window.bridge.datasetsChanged.connect(overlay.refresh)  # a removed data set: no highlight
    window.map_selection = overlay
    return overlay
