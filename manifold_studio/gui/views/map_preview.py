"""The map's public partial-result API: :meth:`MapPreviewMixin.show_partial` draws an
intermediate embedding of a running fit (t-SNE and UMAP iterations),
:meth:`MapPreviewMixin.show_partial_labels` colours the drawn points by a clustering's
intermediate labels (k-means steps, on a map of the same points). The
window's router (:mod:`manifold_studio.gui.fit_partials`) only calls it; everything it touches
(the drawn item, the coordinates, pyqtgraph's caches) is the map's own.

The first preview of a run is drawn in full (points, colours, legend: about 70 ms at 3,000
points) unless the map already draws the same points (the map of an earlier embedding of the
same rows); the next ones only move the drawn points (under 1 ms at 3,000 points) and keep the
view's range while the points stay well inside it (:func:`keep_in_view`): every change of range
makes pyqtgraph lay out and repaint its axes and grid (about 30 ms). While a preview is shown
the axes and the legend are cached as pixmaps: pyqtgraph replays each axis with its grid lines at
every repaint, about 20 ms per axis at 1200×900; with the cache a frame costs 5–15 ms.
A map of more than :data:`~.preview_points.PREVIEW_RASTER_ABOVE` points moves into a
:class:`~.preview_points.PreviewPointsItem` (one image of the points, rendered off the window's
thread) at the first move; the finished run is drawn with the normal interactive item again.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsItem

from manifold_studio.gui.views.map_encoding import SYMBOL_ALPHA, brushes_for
from manifold_studio.gui.views.palette import make_coloring
from manifold_studio.gui.views.points_item import FastPointsItem, xy_bounds
from manifold_studio.gui.views.preview_points import PREVIEW_RASTER_ABOVE, PreviewPointsItem
from manifold_studio.gui.views.view_box import settle
from manifold_studio.analysis.map_coords import as_map_xy

#: the view's range is changed when the points leave it or fill less than this fraction of it
MIN_FILL = 0.35
#: margin added around the points when the range is changed (fraction of their extent per side)
RANGE_MARGIN = 0.35
_AXES = ("left", "bottom", "top", "right")


def keep_in_view(vb, xy: np.ndarray, bounds=None) -> bool:
    """Change the view box's range only when the points leave it or fill less than
    :data:`MIN_FILL` of it in both directions; returns True when it changed. ``bounds``: the
    points' (lo, hi) when the caller has them."""
    # per column: a reduction over axis 0 of a million rows takes ~40 ms
    lo, hi = xy_bounds(xy) if bounds is None else bounds
    (x0, x1), (y0, y1) = vb.viewRange()
    inside = lo[0] >= x0 and hi[0] <= x1 and lo[1] >= y0 and hi[1] <= y1
    extent = np.maximum(hi - lo, 1e-12)
    small = extent[0] < MIN_FILL * (x1 - x0) and extent[1] < MIN_FILL * (y1 - y0)
    vb.disableAutoRange()  # the range follows the points in steps, not at every preview
    if inside and not small:
        return False
    pad = RANGE_MARGIN * extent
    vb.setRange(xRange=(lo[0] - pad[0], hi[0] + pad[0]), yRange=(lo[1] - pad[1], hi[1] + pad[1]), padding=0)
    settle(vb)   # the new transform now: one paint of the plot, not two
    return True


class MapPreviewMixin:
    """Mixed into :class:`~manifold_studio.gui.views.map_view.MapView`."""

    #: the id of the run whose intermediate result the map shows (None: a finished result)
    previewing_run: int | None = None

    def show_partial(self, run, values, dataset=None) -> bool:
        """Show ``values``, an intermediate (n, k) embedding of running ``run``'s points. Returns
        False (and draws nothing) when it is not one: not an (n, k) array, or not n = the run's
        number of points. The points are moved in place when the map draws them already."""
        values = np.asarray(values) if isinstance(values, np.ndarray) else None
        if values is None or values.ndim != 2 or values.shape[0] == 0:
            return False
        rows = np.asarray(run.rows) if run.rows is not None else np.arange(values.shape[0])
        if len(rows) != values.shape[0]:
            return False
        if (self.previewing_run == run.id or self._draws_points_of(run, rows)) and self._move_points(values):
            if self.previewing_run != run.id:  # the map of an earlier run of the same points
                self._begin_preview(run)
            return True
        labels = None
        if dataset is not None and dataset.labels is not None and len(dataset.labels) > int(np.max(rows)):
            labels = dataset.labels[rows]
        keep_range = len(self.xy) == values.shape[0]
        self.xy = as_map_xy(values)
        self.rows = rows
        self._data_labels, self._run_labels = labels, None
        self._points_changed(dataset, run.dataset_name, keep_hidden=keep_range)
        self._redraw()
        if not keep_range:
            self.fit_to_points()
        self._begin_preview(run)
        return True

    def show_partial_labels(self, run, labels, rows) -> bool:
        """Colour the drawn points by ``labels``, the intermediate clusters of running ``run``
        (k-means steps) for data-set ``rows``. Returns False (nothing changed) unless the map draws
        exactly these rows of the run's data set (a map of the same points)."""
        labels = np.asarray(labels)
        rows = np.asarray(rows)
        item = self._item
        fast = isinstance(item, FastPointsItem)
        if labels.ndim != 1 or len(labels) != len(rows) or not self._shows_rows_of(run, rows) \
                or self._density is not None or (self.visible is not None and not np.all(self.visible)) \
                or not (isinstance(item, pg.ScatterPlotItem) and len(item.data) == len(labels)
                        or fast and item.point_count() == len(labels)):
            return False
        # only the colours change (a full redraw with the legend takes 50-70 ms): the legend
        # follows when the finished run is shown
        self.set_run_labels(labels, redraw=False)
        self.coloring = make_coloring(labels, len(labels), "cluster / class", self.encoding.cmap())
        self.color_labels = labels
        if fast:   # one colour table lookup, redrawn as one image
            item.recolor(self.coloring.codes, self.coloring.colors)
        elif not (len(labels) > PREVIEW_RASTER_ABOVE and self._to_preview_item(item, *self._xy_cache())):
            # a small map keeps its symbols (about 9 ms at 3,000 points; 20,000 QBrushes: 40 ms)
            brushes = brushes_for(self.coloring, self.encoding.alpha(SYMBOL_ALPHA))
            item.setBrush([brushes[k] for k in self.coloring.codes])
        if self.previewing_run != run.id:
            self._begin_preview(run)
        return True

    def end_preview(self) -> None:
        """A finished result is shown: axes and legend repaint normally again."""
        if self.previewing_run is not None:
            self.previewing_run = None
            self._cache_axes(False)
            self.title_label.setMinimumHeight(0)

    def report_blocker(self) -> str:
        """Why the map cannot be added to the report ("" when it draws points)."""
        if not len(self.xy):
            return "The map draws nothing yet: load data or run an algorithm first."
        if self.previewing_run is not None:
            return "The map shows a running fit's intermediate result: add it once the run is done."
        return ""

    # -- private ----------------------------------------------------------------------------------
    def _begin_preview(self, run) -> None:
        if self.previewing_run is None and self.title_label.isVisible():
            # the (shorter) preview title must not give the plot a line more: a resized plot is
            # laid out and repainted in full, twice (its legend is placed again)
            self.title_label.setMinimumHeight(self.title_label.height())
        self.previewing_run = run.id
        self.title_label.setText(f"{run.title()} — running… (intermediate result)")
        self._cache_axes(True)

    def _shows_rows_of(self, run, rows) -> bool:
        if self.previewing_run == run.id:
            return len(rows) == len(self.xy)
        shown = self.run
        return shown is not None and shown.dataset_name == run.dataset_name and len(rows) == len(self.xy) \
            and np.array_equal(self.rows, rows)

    def _draws_points_of(self, run, rows) -> bool:
        """The map already draws exactly the points ``run`` fits (the same rows of its data set),
        coloured by something that belongs to those rows rather than to another run's result."""
        shown = self.run
        if shown is None or shown.dataset_name != run.dataset_name or self._run_labels is not None:
            return False
        return len(rows) == len(self.xy) and np.array_equal(self.rows, rows)

    def _move_points(self, values: np.ndarray) -> bool:
        """Move the drawn points to ``values`` (same points, same colours) without rebuilding the
        item, its colours or the legend. False (nothing changed) unless every one of these points
        is drawn by the map's point item (a ScatterPlotItem, or the fast raster item of a large
        map: no density image, no hidden class for the former)."""
        item = self._item
        fast = isinstance(item, FastPointsItem)
        if values.shape[0] != len(self.xy) or self._density is not None or not (
                fast or (isinstance(item, pg.ScatterPlotItem) and len(item.data) == len(self.xy))):
            return False
        if not fast and self.visible is not None and not np.all(self.visible):
            return False
        xy = as_map_xy(values)
        if not np.all(np.isfinite(xy)):
            return False
        self.xy = xy  # a new array: the hover index is rebuilt for it
        bounds, columns = self._xy_cache()   # kept by the map for its hover and legend
        if fast:   # precomputed bounds and columns: no pass over the points here
            item.move_points(xy, bounds=bounds, columns=columns)
        elif not (len(xy) > PREVIEW_RASTER_ABOVE and self._to_preview_item(item, bounds, columns)):
            self._move_item(item, xy)   # a small map keeps its symbols
        keep_in_view(self.plot_item.getViewBox(), xy, bounds)
        self.redrawn.emit()
        return True

    def awaiting_paint(self) -> bool:
        """Whether the map's last intermediate points are not painted yet (a large map's raster
        item or the preview item, whose image is rendered off this thread; the router then waits before drawing the next: never two redraws queued)."""
        item = self._item
        return (self.previewing_run is not None and isinstance(item, FastPointsItem) and self.isVisible()
                and item.painted_version < item.version)

    def _to_preview_item(self, item: pg.ScatterPlotItem, bounds, columns) -> bool:
        """Replace the map's ScatterPlotItem by a :class:`PreviewPointsItem` of the same points
        (their colours, opacity and sizes) at the positions ``self.xy``, in the same place of the
        drawing order; False (nothing changed) when the map's colours are not those of these
        points. Vectorised: nothing here loops over the points in Python."""
        c = self.coloring
        if c is None or len(c.codes) != len(self.xy):
            return False
        sizes = np.asarray(item.data["size"], dtype=float)
        sizes = np.where(sizes < 0, float(item.opts["size"]), sizes)   # -1: the item's default size
        preview = PreviewPointsItem(sizes if np.ptp(sizes) > 0 else float(sizes[0]))
        preview.set_data(self.xy, c.codes, c.colors, alpha=self.encoding.alpha(SYMBOL_ALPHA), bounds=bounds,
                         columns=columns)
        self.plot.addItem(preview)
        preview.setZValue(item.zValue())
        preview.stackBefore(item)
        self.plot.removeItem(item)
        self._item = preview
        return True

    @staticmethod
    def _move_item(item: pg.ScatterPlotItem, xy: np.ndarray) -> None:
        """Write new positions into the item's point table and tell pyqtgraph its bounds changed
        (what ``ScatterPlotItem.setData`` does, without rebuilding brushes, pens and symbols)."""
        data = item.data
        data["x"] = xy[:, 0]
        data["y"] = xy[:, 1]
        item.prepareGeometryChange()
        item.informViewBoundsChanged()
        item.bounds = [None, None]
        item.invalidate()
        item.sigPlotChanged.emit(item)

    def _cache_axes(self, on: bool) -> None:
        """Cache the axes (with their grid lines) and the legend as device pixmaps while ``on``:
        re-rendered only when the range or the labels change."""
        mode = QGraphicsItem.CacheMode.DeviceCoordinateCache if on else QGraphicsItem.CacheMode.NoCache
        for item in [self.plot_item.getAxis(name) for name in _AXES] + [self.legend]:
            item.setCacheMode(mode)
