"""Where a legend covers no point: the emptiest corner of a plot, and the room to make there
when even that corner holds points (Qt-free)."""
from __future__ import annotations

import numpy as np

#: (horizontal, vertical) anchor of each corner: 0 = left / top, 1 = right / bottom
CORNERS = ((1, 0), (0, 0), (1, 1), (0, 1))
MAX_POINTS = 20_000  # a sample is enough to compare corners


def emptiest_corner(xy: np.ndarray, x_range, y_range, box_fraction) -> tuple[int, int]:
    """The corner (see :data:`CORNERS`, top-right first on ties) whose box of ``box_fraction``
    (width, height: the legend's size as fractions of the plot's) holds the fewest of the points
    ``xy`` shown in the view ``x_range`` × ``y_range`` (data units, y up)."""
    xy = np.asarray(xy, dtype=float)
    if len(xy) > MAX_POINTS:
        xy = xy[np.linspace(0, len(xy) - 1, MAX_POINTS).astype(np.intp)]
    (x0, x1), (y0, y1) = x_range, y_range
    fw, fh = (min(max(float(f), 0.0), 1.0) for f in box_fraction)
    bw, bh = (x1 - x0) * fw, (y1 - y0) * fh
    best, best_count = CORNERS[0], None
    for corner in CORNERS:
        count = int(np.count_nonzero(_inside(xy, x_range, y_range, (fw, fh), corner)))
        if best_count is None or count < best_count:
            best, best_count = corner, count
    return best


def _box(x_range, y_range, box_fraction, corner):
    """(left, right, bottom, top) in data units of the legend's box in ``corner``."""
    (x0, x1), (y0, y1) = x_range, y_range
    fw, fh = box_fraction
    bw, bh = (x1 - x0) * fw, (y1 - y0) * fh
    cx, cy = corner
    left = x1 - bw if cx else x0
    top = y1 if cy == 0 else y0 + bh   # pixel top is data y1
    return left, left + bw, top - bh, top


def _inside(xy, x_range, y_range, box_fraction, corner) -> np.ndarray:
    left, right, bottom, top = _box(x_range, y_range, box_fraction, corner)
    return (xy[:, 0] >= left) & (xy[:, 0] <= right) & (xy[:, 1] >= bottom) & (xy[:, 1] <= top)


def covered_points(xy, x_range, y_range, box_fraction, corner) -> int:
    """How many of the points ``xy`` a legend box in ``corner`` covers."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    fw, fh = (min(max(float(f), 0.0), 1.0) for f in box_fraction)
    return int(np.count_nonzero(_inside(xy, x_range, y_range, (fw, fh), corner)))


def _grown(values, span, fraction, high_side: bool, margin: float):
    """(relative growth, new span) moving one end of ``span`` so that a box of ``fraction`` of it
    at that end holds none of ``values`` (the others keep their place)."""
    lo, hi = span
    width = hi - lo
    if high_side:
        new = (values.max() - fraction * lo) / (1 - fraction) + margin * width
        return (new - hi) / width, (lo, new)
    new = (values.min() - fraction * hi) / (1 - fraction) - margin * width
    return (lo - new) / width, (new, hi)


def make_room(xy, x_range, y_range, box_fraction, corner, margin: float = 0.02):
    """``(x_range, y_range)`` grown on the side of ``corner`` just enough that its legend box
    (``box_fraction`` of the plot, which keeps its pixel size) covers none of the points ``xy``:
    the view taller (more room above a top corner, below a bottom one) or wider, whichever grows
    the view less. The ranges as given when the box is already empty, or when the legend is as
    large as the plot (no growth can make room)."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    fw, fh = (min(max(float(f), 0.0), 1.0) for f in box_fraction)
    (x0, x1), (y0, y1) = (float(v) for v in x_range), (float(v) for v in y_range)
    inside = _inside(xy, (x0, x1), (y0, y1), (fw, fh), corner)
    if not inside.any() or fw >= 0.95 or fh >= 0.95:
        return (x0, x1), (y0, y1)
    left, right, bottom, top = _box((x0, x1), (y0, y1), (fw, fh), corner)
    cx, cy = corner
    # taller: the box's x interval stays, the points under it set how far the edge moves; wider:
    # its y interval stays
    in_x = xy[(xy[:, 0] >= left) & (xy[:, 0] <= right), 1]
    in_y = xy[(xy[:, 1] >= bottom) & (xy[:, 1] <= top), 0]
    growth_y, yr = _grown(in_x, (y0, y1), fh, cy == 0, margin)
    growth_x, xr = _grown(in_y, (x0, x1), fw, cx == 1, margin)
    options = [(growth_y, (x0, x1), yr), (growth_x, xr, (y0, y1))]
    _growth, xr, yr = min(options, key=lambda o: o[0])
    return xr, yr


#: the occupancy grid's cells per side (:func:`occupied_cell_corners`)
GRID_BINS = 256


def occupied_cell_corners(xy: np.ndarray, bins: int = GRID_BINS) -> np.ndarray:
    """The corners of the cells of a ``bins`` × ``bins`` grid over the finite points' bounding
    box that hold at least one point: a stand-in for a large map's points when placing its legend
    (at most ``(bins + 1)²`` points however many the map has). A legend box (larger than a cell)
    that covers none of these corners covers no point of an occupied cell, so
    :func:`covered_points` and :func:`make_room` stay conservative: the room they make is at most
    one cell (1/``bins`` of the map's extent) larger than the points alone need."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    xy = xy[np.isfinite(xy).all(axis=1)]
    if not len(xy):
        return np.empty((0, 2))
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    cells = np.minimum(((xy - lo) * (bins / span)).astype(np.intp), bins - 1)
    occupied = np.unique(cells[:, 0] * bins + cells[:, 1])
    i, j = np.divmod(occupied, bins)
    corners = np.concatenate([np.stack([i + di, j + dj], axis=1) for di in (0, 1) for dj in (0, 1)])
    corners = np.unique(corners[:, 0] * (bins + 1) + corners[:, 1])
    ci, cj = np.divmod(corners, bins + 1)
    return lo + np.stack([ci, cj], axis=1) * (span / bins)
