"""Where the intermediate results of a running fit go (``progress.partial`` on the worker).

- a :class:`~manifold_studio.algorithms.curves.TrainingCurve` (a classifier's loss or mistakes
  per epoch) → the training curve view, raised so the user sees it live;
- anything else (an (n, k) intermediate embedding, e.g. t-SNE iterations) → the map's preview.

A preview must never break the fit: failures are logged as warnings. Previews that arrive faster
than they can be drawn are coalesced: only the newest of each kind is drawn, at most every
max(50 ms, 3 × the last drawing time), so a fit that publishes often (t-SNE every few iterations
on 100,000 points) never stalls the window.

Drawing a preview is cheap after the first one: the first preview of a run goes through
``MapView.show_partial`` (points, colours, legend: about 70 ms at 3,000 points) unless the map
already draws the same points (the map of an earlier embedding of the same rows), the next ones
only move the drawn points (:func:`move_points`, under 1 ms at 3,000 points) and keep the view's range while the points stay well inside it (:func:`keep_in_view`), since
every change of range makes pyqtgraph lay out and repaint its axes and grid (about 30 ms).
While a preview is shown the map's axes and legend are cached as pixmaps (:func:`cache_axes`): pyqtgraph
replays each axis with its grid lines at every repaint of the plot, about 20 ms per axis at
1200×900 — with the cache a frame of the animation costs about 5–15 ms instead of 30–100 ms.
"""
from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QGraphicsItem

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.errors import error_message
from manifold_studio.analysis.map_coords import as_map_xy

MIN_INTERVAL_MS = 50
#: the view's range is changed when the points leave it or fill less than this fraction of it
MIN_FILL = 0.35
#: margin added around the points when the range is changed (fraction of their extent per side)
RANGE_MARGIN = 0.35


class PartialRouter(QObject):
    """Keeps the newest preview of each kind per run and draws them on a timer."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.pending: dict[tuple[int, bool], object] = {}
        self.interval_ms = MIN_INTERVAL_MS
        self.drawn = 0
        #: the run whose preview the map shows (its points can be moved in place)
        self.previewed_run: int | None = None
        #: drawing time of each flush (ms), for diagnostics and the responsiveness tests
        self.flush_ms: list[float] = []
        self._seen: set[tuple[int, bool]] = set()
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.flush)

    def push(self, run_id: int, result) -> None:
        key = (run_id, isinstance(result, TrainingCurve))
        if key not in self._seen:  # the first preview of a run is drawn at once
            self._seen.add(key)
            self.pending[key] = result
            self.flush()
            return
        self.pending[key] = result
        if not self.timer.isActive():
            self.timer.start(self.interval_ms)

    def flush(self) -> None:
        items, self.pending = self.pending, {}
        start = time.perf_counter()
        for (run_id, _curve), result in items.items():
            draw_partial(self.window, run_id, result, self)
            self.drawn += 1
        spent_ms = 1000.0 * (time.perf_counter() - start)
        self.flush_ms.append(spent_ms)
        self.interval_ms = int(max(MIN_INTERVAL_MS, 3.0 * spent_ms))


def route_partial(window, run_id: int, result) -> None:
    """Queue a preview of a running fit (drawn soon, coalesced with later ones)."""
    router_for(window).push(run_id, result)


def router_for(window) -> PartialRouter:
    router = getattr(window, "_partial_router", None)
    if router is None:
        router = window._partial_router = PartialRouter(window)
    return router


def draw_partial(window, run_id: int, result, router: PartialRouter | None = None) -> None:
    run = window.session.runs.get(run_id)
    if run is None or run.finished:
        return
    try:
        if isinstance(result, TrainingCurve):
            view = window.views.get("training_curve")
            if view is not None:
                dock = window.docks.get("view:training_curve")
                if dock is not None and not dock.isVisible():
                    # showing the dock lays the window out again and paints it: the curve is
                    # drawn on the next turn of the event loop, not in the same stall
                    dock.setVisible(True)
                    QTimer.singleShot(0, lambda: None if run.finished else _show_curve(window, view, run, result))
                    return
                view.show_partial(run, result)
            return
        view = window.map_view
        if view is None:
            return
        if router is not None and (router.previewed_run == run_id or _draws_points_of(view, run)) \
                and move_points(view, result):
            if router.previewed_run != run_id:  # the map of an earlier run of the same points
                router.previewed_run = run_id
                view.title_label.setText(f"{run.title()} — running… (intermediate result)")
                cache_axes(view, True)
            return
        shown = view.show_partial(run, result, window.session.datasets.get(run.dataset_name))
        if shown:
            cache_axes(view, True)
        if router is not None:
            router.previewed_run = run_id if shown else None
    except Exception as exc:  # noqa: BLE001 - a preview must never break the fit
        window.session.log(f"Could not draw an intermediate result: {error_message(exc)}", "warning")


def _draws_points_of(view, run) -> bool:
    """The map already draws exactly the points ``run`` fits (the same rows of its data set),
    coloured by something that belongs to those rows rather than to another run's result."""
    shown = getattr(view, "run", None)
    if shown is None or shown.dataset_name != run.dataset_name or getattr(view, "_run_labels", None) is not None:
        return False
    rows = run.rows if run.rows is not None else np.arange(len(view.xy))
    return len(rows) == len(view.xy) and np.array_equal(view.rows, rows)


def _show_curve(window, view, run, curve) -> None:
    try:
        view.show_partial(run, curve)
    except Exception as exc:  # noqa: BLE001 - a preview must never break the fit
        window.session.log(f"Could not draw an intermediate result: {error_message(exc)}", "warning")


def move_points(view, values) -> bool:
    """Move the points the map draws to ``values`` (same points, same colours) without
    rebuilding the item, its colours or the legend. False (nothing changed: the caller draws the
    preview in full) unless the map draws every one of these points with pyqtgraph's
    ScatterPlotItem (no density image, no hidden class)."""
    if not isinstance(values, np.ndarray) or values.ndim != 2 or values.shape[0] != len(view.xy):
        return False
    item = getattr(view, "_item", None)
    data = getattr(item, "data", None)
    if not isinstance(data, np.ndarray) or data.dtype.names is None or "x" not in data.dtype.names \
            or len(data) != len(view.xy) or getattr(view, "_density", None) is not None:
        return False
    visible = getattr(view, "visible", None)
    if visible is not None and not np.all(visible):
        return False
    xy = as_map_xy(values)
    if not np.all(np.isfinite(xy)):
        return False
    view.xy = xy  # a new array: the hover index is rebuilt for it
    data["x"] = xy[:, 0]
    data["y"] = xy[:, 1]
    item.prepareGeometryChange()
    item.informViewBoundsChanged()
    item.bounds = [None, None]
    item.invalidate()
    item.sigPlotChanged.emit(item)
    keep_in_view(view.plot_item.getViewBox(), xy)
    view.redrawn.emit()
    return True


_AXES = ("left", "bottom", "top", "right")


def cache_axes(view, on: bool) -> None:
    """Cache the map's axes (and their grid lines) and its legend as device pixmaps while
    ``on``; they are
    re-rendered only when the range or the labels change. Turned off again when a finished run
    is shown (``runShown``)."""
    mode = QGraphicsItem.CacheMode.DeviceCoordinateCache if on else QGraphicsItem.CacheMode.NoCache
    items = [view.plot_item.getAxis(name) for name in _AXES] + [getattr(view, "legend", None)]
    for item in items:
        if item is not None:
            item.setCacheMode(mode)
    if on and not getattr(view, "_partial_cache_hooked", False):
        view._partial_cache_hooked = True
        view.runShown.connect(lambda _run, view=view: cache_axes(view, False))


def keep_in_view(vb, xy: np.ndarray) -> bool:
    """Change the view box's range only when the points leave it or fill less than
    :data:`MIN_FILL` of it in both directions; returns True when it changed."""
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    (x0, x1), (y0, y1) = vb.viewRange()
    inside = lo[0] >= x0 and hi[0] <= x1 and lo[1] >= y0 and hi[1] <= y1
    extent = np.maximum(hi - lo, 1e-12)
    small = extent[0] < MIN_FILL * (x1 - x0) and extent[1] < MIN_FILL * (y1 - y0)
    vb.disableAutoRange()  # the range follows the points in steps, not at every preview
    if inside and not small:
        return False
    pad = RANGE_MARGIN * extent
    vb.setRange(xRange=(lo[0] - pad[0], hi[0] + pad[0]), yRange=(lo[1] - pad[1], hi[1] + pad[1]), padding=0)
    return True
