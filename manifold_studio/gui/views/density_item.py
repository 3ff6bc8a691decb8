"""Density mode of the map: a 2-D histogram image of the points, for maps where points hide
each other (a million points on 800 × 600 pixels).

The bins follow the view: :meth:`DensityItem.update_view` bins the points inside the visible
range into cells of about :data:`BIN_PX` screen pixels (one ``np.bincount``, about 20 ms at
1,000,000 points), so zooming in shows finer structure. Counts are drawn on a log scale
(``log(1 + count)``) through a colour map; empty cells are transparent.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

#: screen pixels per histogram bin (each way)
BIN_PX = 3
MIN_BINS, MAX_BINS = 8, 1024


def density_counts(xy: np.ndarray, x_range, y_range, bins, visible: np.ndarray | None = None) -> np.ndarray:
    """Counts (ny, nx) of the points of ``xy`` inside the closed rectangle ``x_range`` ×
    ``y_range`` in ``bins`` = (nx, ny) equal cells (row 0 at the bottom); points on the upper
    edges go to the last cell, so the total is exactly the number of points in the rectangle.
    ``visible``: optional mask of the points that count."""
    nx, ny = (int(b) for b in bins)
    (x0, x1), (y0, y1) = x_range, y_range
    if not len(xy) or nx < 1 or ny < 1:
        return np.zeros((max(ny, 0), max(nx, 0)), dtype=np.int64)
    sx = nx / (x1 - x0) if x1 > x0 else 0.0
    sy = ny / (y1 - y0) if y1 > y0 else 0.0
    fx = (xy[:, 0] - x0) * sx
    fy = (xy[:, 1] - y0) * sy
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    if visible is not None:
        inside &= visible
    ix = np.minimum(fx[inside].astype(np.intp), nx - 1)
    iy = np.minimum(fy[inside].astype(np.intp), ny - 1)
    return np.bincount(iy * nx + ix, minlength=nx * ny).reshape(ny, nx)


def bins_for(pixels) -> tuple[int, int]:
    """(nx, ny) cells of about :data:`BIN_PX` screen pixels for a view of ``pixels`` = (w, h)."""
    w, h = pixels
    return int(np.clip(w / BIN_PX, MIN_BINS, MAX_BINS)), int(np.clip(h / BIN_PX, MIN_BINS, MAX_BINS))


def lut_indices(counts: np.ndarray, levels: int = 256) -> np.ndarray:
    """Counts on the log scale as entries of a ``levels``-entry lookup table (uint8; 0 = empty):
    what pyqtgraph would compute at paint time from ``log(1 + count)`` with levels (0, max), done
    here so that it can be done on a worker thread."""
    image = np.log1p(np.asarray(counts, dtype=np.float32))
    top = float(image.max()) if image.size else 0.0
    return np.clip(image * (levels / max(top, 1e-6)), 0, levels - 1).astype(np.uint8)


def log_lut(colors: np.ndarray, levels: int = 256) -> np.ndarray:
    """A (levels, 4) RGBA lookup table along ``colors`` ((m, 3) uint8) with entry 0 transparent."""
    colors = np.asarray(colors, dtype=float)
    t = np.linspace(0, 1, levels)
    anchors = np.linspace(0, 1, len(colors))
    rgb = np.stack([np.interp(t, anchors, colors[:, c]) for c in range(3)], axis=1)
    lut = np.concatenate([rgb, np.full((levels, 1), 255.0)], axis=1).round().astype(np.uint8)
    lut[0] = (255, 255, 255, 0)
    return lut


class DensityItem(pg.ImageItem):
    """The histogram image. ``counts`` holds the last raw counts (ny, nx), ``x_range`` /
    ``y_range`` the rectangle they cover."""

    def __init__(self, colors: np.ndarray):
        super().__init__(axisOrder="row-major")
        self.counts = np.zeros((0, 0), dtype=np.int64)
        self.x_range = self.y_range = (0.0, 0.0)
        self._lut = log_lut(colors)
        self.setZValue(-1)

    def set_colors(self, colors: np.ndarray) -> None:
        self._lut = log_lut(colors)
        self.setLookupTable(self._lut)

    def update_view(self, xy: np.ndarray, x_range, y_range, pixels, visible=None) -> None:
        """Bin the points of ``xy`` visible in ``x_range`` × ``y_range`` (a view of ``pixels`` =
        (width, height) screen pixels) into cells of about :data:`BIN_PX` pixels and show them."""
        x_range, y_range = tuple(map(float, x_range)), tuple(map(float, y_range))
        self.show_counts(density_counts(xy, x_range, y_range, bins_for(pixels), visible), x_range, y_range)

    def show_counts(self, counts: np.ndarray, x_range, y_range, indices: np.ndarray | None = None) -> None:
        """Show counts (ny, nx) binned over ``x_range`` × ``y_range`` (e.g. by
        :func:`density_counts` on a worker thread, with their :func:`lut_indices`)."""
        self.x_range, self.y_range = tuple(map(float, x_range)), tuple(map(float, y_range))
        self.counts = counts
        if indices is None:
            indices = lut_indices(counts, len(self._lut))
        # row-major image: row r covers local y in [r, r + 1), mapped onto the rectangle from
        # y0 upwards, so row 0 (the lowest y of the counts) is drawn at the bottom; uint8 entries
        # of the lookup table: Qt draws them as they are (no rescaling at paint time)
        self.setImage(indices, levels=None, lut=self._lut, autoLevels=False)
        (x0, x1), (y0, y1) = self.x_range, self.y_range
        self.setRect(QRectF(x0, y0, max(x1 - x0, 1e-12), max(y1 - y0, 1e-12)))

    def total(self) -> int:
        return int(self.counts.sum())
