"""A uniform grid over 2-D points for nearest-point queries (hover on a map of a million points).

Built once per point set: every finite point gets a cell of a G × G grid over the points'
bounding box, the points are ordered by cell (row-major: cell = iy * G + ix) and ``start[c]``
is the position of cell c's first point in that order. The points of one grid row between two
columns are then one contiguous slice, so a rectangular query is one slice per grid row.

Queries are anisotropic: the map's x and y scales differ, so "within r screen pixels" is an
ellipse in data units with half-axes (rx, ry) = (r · pixel width, r · pixel height). The
distance used is ``(dx / rx)² + (dy / ry)²`` (1 on the ellipse), i.e. pixels² / r².

Qt-free (the map view passes the pixel size of its view box).
"""
from __future__ import annotations

import numpy as np

#: average number of points per cell aimed at
POINTS_PER_CELL = 4
MAX_CELLS_PER_AXIS = 1024
#: a query gathering more candidates than this first tries a smaller ellipse (scaled by 1/4)
MAX_CANDIDATES = 40_000


def _cell_order(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
    """Indices ordering points by (iy, ix): two stable 16-bit sorts (numpy's radix sort)."""
    o = np.argsort(ix.astype(np.uint16), kind="stable")
    return o[np.argsort(iy[o].astype(np.uint16), kind="stable")]


class GridIndex:
    """Nearest-point queries on fixed 2-D points ``xy`` ((n, 2)); non-finite points are never found."""

    def __init__(self, xy: np.ndarray):
        xy = np.asarray(xy, dtype=np.float64)
        self.n = len(xy)
        x, y = np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1])
        finite = None
        if self.n and not np.isfinite(x.sum() + y.sum()):  # some NaN / inf (or an overflow): drop them
            finite = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
            x, y = x[finite], y[finite]
        m = len(x)
        g = int(np.clip(np.ceil(np.sqrt(max(m, 1) / POINTS_PER_CELL)), 1, MAX_CELLS_PER_AXIS))
        self.g = g
        if m:
            self.lo = np.array([x.min(), y.min()])
            span = np.array([x.max(), y.max()]) - self.lo
        else:
            self.lo, span = np.zeros(2), np.ones(2)
        span = np.where(span > 0, span, 1.0)
        self.scale = g / span  # cells per data unit, per axis
        ix = np.minimum(((x - self.lo[0]) * self.scale[0]).astype(np.intp), g - 1)
        iy = np.minimum(((y - self.lo[1]) * self.scale[1]).astype(np.intp), g - 1)
        order = _cell_order(ix, iy)
        self.start = np.zeros(g * g + 1, dtype=np.intp)
        np.cumsum(np.bincount(iy * g + ix, minlength=g * g), out=self.start[1:])
        self.order = order if finite is None else finite[order]  # original index of each sorted point
        self.sx = x[order]
        self.sy = y[order]

    # -- queries ---------------------------------------------------------------------------------
    def _slices(self, x: float, y: float, rx: float, ry: float):
        """(starts, lengths) of the sorted points in the cells meeting the box |dx| ≤ rx, |dy| ≤ ry."""
        g = self.g
        fx0 = (x - rx - self.lo[0]) * self.scale[0]
        fx1 = (x + rx - self.lo[0]) * self.scale[0]
        fy0 = (y - ry - self.lo[1]) * self.scale[1]
        fy1 = (y + ry - self.lo[1]) * self.scale[1]
        if not (fx1 >= 0 and fy1 >= 0 and fx0 <= g and fy0 <= g):  # also catches NaN
            return np.zeros(0, np.intp), np.zeros(0, np.intp)
        i0, i1 = max(int(fx0), 0), min(int(fx1), g - 1)
        j0, j1 = max(int(fy0), 0), min(int(fy1), g - 1)
        rows = np.arange(j0, j1 + 1) * g
        starts = self.start[rows + i0]
        lengths = self.start[rows + i1 + 1] - starts
        return starts, lengths

    @staticmethod
    def _gather(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        keep = lengths > 0
        starts, lengths = starts[keep], lengths[keep]
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(0, np.intp)
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        return offsets + np.arange(total)

    def nearest(self, x: float, y: float, rx: float, ry: float, visible: np.ndarray | None = None) -> int:
        """Index (into the original ``xy``) of the point nearest to (x, y) in the metric
        ``(dx/rx)² + (dy/ry)²`` among those with that distance ≤ 1 (and ``visible[i]`` when a
        boolean mask is given), or -1."""
        if self.n == 0 or not (rx > 0 and ry > 0):
            return -1
        # shrink the ellipse while it would gather too many candidates: a point found within a
        # smaller ellipse is the nearest of all (anything nearer is inside it too)
        scales = [1.0]
        while scales[-1] > 1e-3:
            starts, lengths = self._slices(x, y, rx * scales[-1], ry * scales[-1])
            if int(lengths.sum()) <= MAX_CANDIDATES:
                break
            scales.append(scales[-1] / 4)
        for s in reversed(scales):
            cand = self._gather(*self._slices(x, y, rx * s, ry * s))
            if visible is not None and cand.size:
                cand = cand[visible[self.order[cand]]]
            if not cand.size:
                continue
            dx = (self.sx[cand] - x) / rx
            dy = (self.sy[cand] - y) / ry
            d2 = dx * dx + dy * dy
            k = int(np.argmin(d2))
            if d2[k] <= s * s:
                return int(self.order[cand[k]])
        return -1


def brute_force_nearest(xy: np.ndarray, x: float, y: float, rx: float, ry: float,
                        visible: np.ndarray | None = None) -> int:
    """The same answer as :meth:`GridIndex.nearest` by a scan of every point (reference / fallback)."""
    if not len(xy) or not (rx > 0 and ry > 0):
        return -1
    dx = (xy[:, 0] - x) / rx
    dy = (xy[:, 1] - y) / ry
    d2 = dx * dx + dy * dy
    d2 = np.where(np.isfinite(d2), d2, np.inf)
    if visible is not None:
        d2 = np.where(visible, d2, np.inf)
    i = int(np.argmin(d2))
    return i if d2[i] <= 1.0 else -1
