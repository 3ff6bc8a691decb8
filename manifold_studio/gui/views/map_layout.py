"""The map's layout: its extent (from the data points only), where its legend goes (the
emptiest corner), how a column is coloured (classes or a colour bar), the data's own PCA map
for runs without a map, and the marker and colours of extended points. Functions of a
:class:`~manifold_studio.gui.views.map_view.MapView`."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QTimer, Signal
from PySide6.QtGui import QPainterPath, QPolygonF, QTransform

from manifold_studio.analysis.feature_stats import pca_map
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.gui.views.view_box import SettledViewBox, settle
from manifold_studio.gui.worker import LatestJob
from manifold_studio.render.legend_corner import MAX_POINTS, covered_points, emptiest_corner, make_room, occupied_cell_corners

#: a numeric column with more distinct values than this is coloured with the colour map (a
#: colour bar), fewer become classes
MAX_COLUMN_CLASSES = 12


def column_kind(values, key: str) -> str | None:
    """How to colour by a data-set column (``key`` "col:…"): "continuous" for a numeric column
    with more than MAX_COLUMN_CLASSES distinct values (integers included), "categorical" for
    fewer or for text; None (guess) for labels and run results."""
    if not key.startswith("col:") or values is None:
        return None
    values = np.asarray(values)
    if values.dtype.kind not in "iuf":
        return "categorical"
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    return "continuous" if np.unique(finite[:200_000]).size > MAX_COLUMN_CLASSES else "categorical"


def data_pca_map(view, dataset):
    """(xy of every row, axis titles) of ``dataset``'s 2-D PCA map (the ``pca`` plugin), cached
    on ``view`` per data set (recomputed when its matrix is replaced); None when the PCA cannot
    be computed (no plugin, too few complete rows)."""
    cache = view.__dict__.setdefault("_pca_maps", {})
    hit = cache.get(dataset.name)
    if hit is not None and hit[0] is dataset.X:
        return hit[1]
    try:
        xy, ratio = pca_map(dataset.X, 2)
    except (ManifoldStudioError, ValueError, np.linalg.LinAlgError):
        result = None
    else:
        axes = tuple(f"PC{i + 1} ({r:.0%} of the variance)" for i, r in enumerate(ratio))
        result = (xy, axes + ("",) * (2 - len(axes)))
    cache[dataset.name] = (dataset.X, result)
    return result


def run_pca_map(view, run, dataset):
    """(xy of the run's points, axis titles, caption) of the PCA map a run without a map is drawn
    on: the PCA of the matrix the run was fitted on (``session.prepared_data``: its data set
    through its fitted preparation chain) — the data set's own PCA map (cached per data set,
    :func:`data_pca_map`) when the run has no chain. None when it cannot be computed."""
    session = view.window.session if view.window is not None else None
    chain = run.meta.get("chain") if isinstance(run.meta, dict) else None
    if not chain or session is None:
        pca = data_pca_map(view, dataset)
        return None if pca is None else (pca[0][run.point_index], pca[1], "drawn on the data's PCA map")
    cache = view.__dict__.setdefault("_run_pca_maps", {})
    try:
        prepared = session.prepared_data(run.id)
    except ManifoldStudioError:
        return None
    hit = cache.get(run.id)
    if hit is not None and hit[0] is prepared.X:
        return hit[1]
    try:
        xy, ratio = pca_map(prepared.X, 2)
    except (ManifoldStudioError, ValueError, np.linalg.LinAlgError):
        result = None
    else:
        axes = tuple(f"PC{i + 1} ({r:.0%} of the variance)" for i, r in enumerate(ratio))
        result = (xy, axes + ("",) * (2 - len(axes)), f"drawn on the PCA map of the prepared data ({prepared.caption})")
    cache[run.id] = (prepared.X, result)
    return result


def fit_to_points(view) -> None:
    """Show the data points' extent (5% margin): computed from the points alone, so
    decorations (cluster centres, extended points, the hover ring, a selection) never widen
    it and a new run always starts at its own extent."""
    xy = view.xy[np.isfinite(view.xy).all(axis=1)] if len(view.xy) else view.xy
    if not len(xy):
        view.plot_item.autoRange()
        return
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.where(hi - lo > 0, hi - lo, np.maximum(np.abs(hi), 1.0))  # one point, or a flat map
    lo, hi = lo - (span - (hi - lo)) / 2, hi + (span - (hi - lo)) / 2
    view.plot_item.setRange(xRange=(lo[0], hi[0]), yRange=(lo[1], hi[1]), padding=0.05)
    place_legend(view, grow=True)            # now, while the range is the fitted one
    QTimer.singleShot(0, lambda: place_legend(view, grow=shows_all_points(view)))


class FittingViewBox(SettledViewBox):
    """The map's view box: ``fitted`` is emitted (synchronously) after every programmatic
    ``autoRange`` (Zoom to fit, a test), never after the user's pan or zoom; settled at every
    resize (one paint, not two: :mod:`.view_box`)."""

    fitted = Signal()

    def autoRange(self, *args, **kwargs):  # noqa: N802 - pyqtgraph's name
        super().autoRange(*args, **kwargs)
        self.fitted.emit()


def shows_all_points(view) -> bool:
    """Whether every point of the map is inside its view (the user has not zoomed in): then a
    resize may grow the view to keep the legend off the points. Uses the drawn points' bounds,
    kept per map (no reduction over a million points on the window's thread)."""
    if not len(view.xy):
        return False
    (lo, hi), _columns = view._xy_cache()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return False
    (x0, x1), (y0, y1) = view.plot_item.getViewBox().viewRange()
    return bool(lo[0] >= x0 and hi[0] <= x1 and lo[1] >= y0 and hi[1] <= y1)


def legend_points(view) -> np.ndarray:
    """The points the legend must keep off: the map's own up to MAX_POINTS; for a larger map the
    corners of its occupied grid cells (:func:`occupied_cell_corners`, conservative), computed
    once per map on a worker and reused by every placement (a strided sample meanwhile; the
    legend is placed again when the grid is ready). Without a window running jobs: at once."""
    xy = view.xy
    if len(xy) <= MAX_POINTS:
        return xy
    cached = view.__dict__.get("_legend_grid")
    if cached is not None and cached[0] is xy:
        return cached[1]
    if view.job_window is None:
        view._legend_grid = (xy, occupied_cell_corners(xy))
        return view._legend_grid[1]
    job = view.__dict__.get("_legend_grid_job")
    if job is None:
        job = view._legend_grid_job = LatestJob()
    if getattr(view, "_legend_grid_for", None) is not xy:
        view._legend_grid_for = xy

        def ready(result):
            if result[0] is view.xy:
                view._legend_grid = result
                place_legend(view, grow=shows_all_points(view))

        job.start(view.window, _grid_task, xy, title="Legend placement", on_success=ready,
                  on_failure=lambda *_: None)
    return xy[np.linspace(0, len(xy) - 1, MAX_POINTS).astype(np.intp)]


def _grid_task(xy, progress=None):
    return xy, occupied_cell_corners(xy)


def place_legend(view, grow: bool = False) -> None:
    """Put the legend in the plot's emptiest corner (it can still be dragged elsewhere); with
    ``grow`` (the view was just fitted to its points: never while the user pans or zooms), when
    even that corner holds points, grow the view on that side until the legend covers none
    (of :func:`legend_points`)."""
    vb = view.plot_item.getViewBox()
    w, h = vb.width(), vb.height()
    if not len(view.xy) or w <= 0 or h <= 0:
        return
    size = view.legend.boundingRect()
    if not view.legend.isVisible() or size.width() <= 0 or size.height() <= 0:
        return
    ranges = tuple(tuple(r) for r in vb.viewRange())
    box = ((size.width() + 10) / w, (size.height() + 10) / h)
    points = legend_points(view)
    corner = emptiest_corner(points, *ranges, box)
    if grow and covered_points(points, *ranges, box, corner):
        xr, yr = make_room(points, *ranges, box, corner)
        vb.setRange(xRange=xr, yRange=yr, padding=0)
        settle(vb)   # one paint for the new range, not two
    cx, cy = corner
    view.legend.anchor(itemPos=(cx, cy), parentPos=(cx, cy), offset=(-10 if cx else 10, -10 if cy else 10))


def _thick_cross(half_width: float = 0.16) -> QPainterPath:
    """An × with arms ``2 * half_width`` wide (of a unit symbol): room for a fill colour inside a
    dark outline (pyqtgraph's own "x" is too thin to show one)."""
    a = half_width
    corners = ((-0.5, -a), (-a, -a), (-a, -0.5), (a, -0.5), (a, -a), (0.5, -a),
               (0.5, a), (a, a), (a, 0.5), (-a, 0.5), (-a, a), (-0.5, a))
    path = QPainterPath()
    path.addPolygon(QPolygonF([QPointF(x, y) for x, y in corners]))
    path.closeSubpath()
    return QTransform().rotate(45).map(path)


#: the marker of extended points (layers drawn with symbol "x")
EXTENDED_SYMBOL = _thick_cross()
#: their outline, and their fill when they have no label colour
EXTENDED_PEN = pg.mkPen(20, 20, 20, 200, width=1.0)
EXTENDED_FILL = (255, 255, 255, 230)


def overlay_item(name: str, xy: np.ndarray, symbol: str, labels=None) -> pg.ScatterPlotItem:
    """A layer drawn over the map: extended points (``symbol`` "x") as :data:`EXTENDED_SYMBOL`
    keeping their ``labels`` for :func:`color_overlays`; other symbols as dark outlines."""
    ext = symbol == "x"
    item = pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1], symbol=EXTENDED_SYMBOL if ext else symbol,
                              size=10 if ext else 9, name=name,
                              pen=EXTENDED_PEN if ext else pg.mkPen(20, 20, 20, 220, width=1.5),
                              brush=pg.mkBrush(*EXTENDED_FILL) if ext else pg.mkBrush(255, 255, 255, 0))
    item.point_labels = labels if ext else None
    return item


def extension_labels(ext, run, dataset):
    """The data-set labels of an extension's points when they are rows of the run's own data
    set (a held-out part), else None (a file, another data set: their labels are not the map's)."""
    if dataset is None or dataset.labels is None or ext.rows is None or ext.dataset_name != run.dataset_name:
        return None
    rows = np.asarray(ext.rows, dtype=np.intp)
    return dataset.labels[rows] if rows.size == len(ext.values) and rows.max(initial=-1) < len(dataset.labels) else None


def color_overlays(view) -> None:
    """Fill each extended point (an overlay with ``point_labels``) with the colour the map gives
    its label when the map is coloured by the data's labels (so a point placed in its class's
    cluster shows it); white otherwise, and for a label no drawn point has."""
    c, drawn = view.coloring, view.color_labels
    by_label = c is not None and c.mode == "categorical" and drawn is not None and drawn is view._data_labels
    if by_label and len(drawn):
        uniq, first = np.unique(drawn, return_index=True)
        codes_of = c.codes[first]
    for item in view._overlays:
        labels = getattr(item, "point_labels", None)
        if labels is None:
            continue
        white = pg.mkBrush(*EXTENDED_FILL)
        if not (by_label and len(drawn)):
            item.setBrush([white] * len(labels))  # per point: a single brush would not replace theirs
            continue
        pos = np.clip(np.searchsorted(uniq, labels), 0, len(uniq) - 1)
        known = uniq[pos] == labels
        brushes = {int(k): pg.mkBrush(*c.rgba(int(k), 255)) for k in np.unique(codes_of[pos][known])}
        item.setBrush([brushes[int(k)] if ok else white for k, ok in zip(codes_of[pos], known)])
