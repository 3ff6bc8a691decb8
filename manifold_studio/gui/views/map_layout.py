"""The map's layout: its extent (from the data points only), where its legend goes (the
emptiest corner), how a column is coloured (classes or a colour bar) and the data's own PCA map
for runs without a map. Functions of a :class:`~manifold_studio.gui.views.map_view.MapView`."""
from __future__ import annotations

import numpy as np

from manifold_studio.analysis.feature_stats import pca_map
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.render.legend_corner import emptiest_corner

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


def place_legend(view) -> None:
    """Put the legend in the plot's emptiest corner (it can still be dragged elsewhere)."""
    vb = view.plot_item.getViewBox()
    w, h = vb.width(), vb.height()
    if not len(view.xy) or w <= 0 or h <= 0:
        return
    size = view.legend.boundingRect()
    (x0, x1), (y0, y1) = vb.viewRange()
    cx, cy = emptiest_corner(view.xy, (x0, x1), (y0, y1), ((size.width() + 10) / w, (size.height() + 10) / h))
    view.legend.anchor(itemPos=(cx, cy), parentPos=(cx, cy), offset=(-10 if cx else 10, -10 if cy else 10))
