"""A cheap scatter item for large maps: the points are rasterised with numpy into one image.

pyqtgraph's ScatterPlotItem costs about 18 ms per frame at 100k points and 190 ms at 1M;
``QPainter.drawPoints`` of 1 px cosmetic points about 21 ms at 1M on an idle machine (and 4–7
times that on a busy one). :class:`FastPointsItem` instead maps the points to device pixels and
writes their colours into an image of the visible area (:func:`raster_points`: a handful of
vectorised passes over the points, no per-point Qt call), then draws that image; opacity is
composited per pixel from the number of points on it (``1 - (1 - a)^count``). No per-point
symbols, no per-point hit testing (the map view does hover with a spatial index on its own arrays).
When the painter's transform is not a plain scale + translation (never the case in a ViewBox)
or the device is not a raster one (SVG export, printing), it falls back to ``drawPoints``.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QImage, QPainter, QPixmap
from PySide6.QtWidgets import QWidget

#: largest point side (px) of the fast path
MAX_SIDE = 3
#: the raster uses float32 coordinates (about the data's centre) while the data span covers
#: fewer device pixels than this, float64 beyond (deep zoom)
FLOAT32_LIMIT_PX = 2 ** 20
#: opacity compositing counts at most this many points per pixel (more look the same)
_MAX_STACK = 64


def rgb_table(colors: np.ndarray) -> np.ndarray:
    """(m, 3) uint8 colours as 0xRRGGBB uint32 values."""
    c = np.asarray(colors, dtype=np.uint32).reshape(-1, 3)
    return (c[:, 0] << 16) | (c[:, 1] << 8) | c[:, 2]


def _dilate(img: np.ndarray, side: int) -> np.ndarray:
    """Grow every painted pixel of ``img`` (H, W) into a side × side square (right and down);
    painted pixels are never overwritten."""
    if side <= 1:
        return img
    out = img.copy()
    h, w = img.shape
    for dy in range(side):
        for dx in range(side):
            if dx == 0 and dy == 0:
                continue
            dst = out[dy:, dx:]
            src = img[:h - dy, :w - dx]
            empty = dst == 0
            dst[empty] = src[empty]
    return out


class RasterScratch:
    """Work arrays of :func:`raster_points` for n points, kept between frames (allocating and
    first touching 20 MB per frame costs as much as the arithmetic)."""

    def __init__(self, n: int, dtype):
        self.n, self.dtype = n, np.dtype(dtype)
        self.fx, self.fy = np.empty(n, self.dtype), np.empty(n, self.dtype)
        self.ix, self.iy = np.empty(n, np.int32), np.empty(n, np.int32)
        self.keep, self.other = np.empty(n, bool), np.empty(n, bool)

    def fits(self, n: int, dtype) -> bool:
        return self.n == n and self.dtype == np.dtype(dtype)


def raster_points(x, y, rgb, levels, scale, offset, shape, alpha: int = 255,
                  scratch: RasterScratch | None = None) -> np.ndarray:
    """An (H, W) ARGB32 (uint32) image of points (x, y) mapped to pixels by
    ``px = x * scale[0] + offset[0]`` (same for y, in the dtype of ``x``: float32 halves the
    memory traffic); ``rgb``: 0xRRGGBB per point; ``levels``: ``[(side, start, stop), ...]``:
    points ``start:stop`` are side × side pixel squares (an int: every point has that side).
    Later points cover earlier ones, smaller squares cover larger; with ``alpha`` < 255 a pixel
    covered by k points has opacity 1 - (1 - alpha/255)^k.

    No boolean compression of the point arrays (the slow part at a million points): points
    outside the image are all written to one extra "trash" pixel that is dropped at the end."""
    h, w = shape
    n = len(x)
    if not n or h <= 0 or w <= 0:
        return np.zeros((max(h, 0), max(w, 0)), dtype=np.uint32)
    s = scratch if scratch is not None and scratch.fits(n, x.dtype) else RasterScratch(n, x.dtype)
    ft = s.dtype.type
    trash = h * w
    with np.errstate(invalid="ignore", over="ignore"):
        np.multiply(x, ft(scale[0]), out=s.fx)
        s.fx += ft(offset[0])
        np.multiply(y, ft(scale[1]), out=s.fy)
        s.fy += ft(offset[1])
        np.copyto(s.ix, s.fx, casting="unsafe")  # NaN / huge values become INT_MIN: outside
        np.copyto(s.iy, s.fy, casting="unsafe")
    np.less(s.ix.view(np.uint32), w, out=s.keep)  # negative values wrap to huge unsigned ones
    np.less(s.iy.view(np.uint32), h, out=s.other)
    s.keep &= s.other
    lin = s.iy
    lin *= w
    lin += s.ix
    np.logical_not(s.keep, out=s.other)
    np.copyto(lin, trash, where=s.other)
    colour = rgb | np.uint32(0xFF000000) if alpha >= 255 else rgb
    if not isinstance(levels, (list, tuple)):
        levels = [(int(levels), 0, n)]
    out = None
    for side, start, stop in sorted(levels, key=lambda lev: -lev[0]):  # small squares on top
        li, co = lin[start:stop], colour[start:stop]
        layer = np.zeros(trash + 1, dtype=np.uint32)
        layer[li] = co
        if alpha < 255:
            count = np.minimum(np.bincount(li, minlength=trash + 1), _MAX_STACK)
            a = alpha / 255.0
            lut = np.round(255 * (1 - (1 - a) ** np.arange(_MAX_STACK + 1))).astype(np.uint32) << 24
            layer |= lut[count]
        layer = _dilate(layer[:trash].reshape(h, w), int(side))
        out = layer if out is None else np.where(layer != 0, layer, out)
    return out


def xy_bounds(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((xmin, ymin), (xmax, ymax)) of the finite coordinates (NaN where a column has none)."""
    if not len(xy):
        return np.full(2, np.nan), np.full(2, np.nan)
    cols = (xy[:, 0], xy[:, 1])  # one column at a time: 20× faster than a reduction over axis 0
    return np.array([np.fmin.reduce(c) for c in cols]), np.array([np.fmax.reduce(c) for c in cols])


class FastPointsItem(pg.GraphicsObject):
    """Points of 1 px (``size=1``), 2×2 px (``size=2``) or 3×3 px, or per-point sides
    (``sides``), drawn as one image rasterised by :func:`raster_points`."""

    def __init__(self, size: int = 1):
        super().__init__()
        self._bounds = QRectF()
        self._lo = self._hi = np.full(2, np.nan)
        self._xy = np.zeros((0, 2))
        self._x = self._y = np.zeros(0)
        self._rgb = np.zeros(0, dtype=np.uint32)
        self._sides = None
        self._index = None
        self._levels = 1
        self._alpha = 255
        self._size = min(max(int(size), 1), MAX_SIDE)
        self._version = 0
        self._scratch = None
        self._x32 = self._y32 = np.zeros(0, np.float32)
        self._centre = self._span = np.zeros(2)
        self._cache_key = self._cache = None
        #: how many times the points were rasterised (not counting repaints from the cache)
        self.rasterised = 0
        #: the version of the points last painted (``painted_version < version``: not yet shown)
        self.painted_version = 0

    @property
    def version(self) -> int:
        """Incremented by every :meth:`set_data` / :meth:`move_points`."""
        return self._version

    def set_data(self, xy: np.ndarray, codes: np.ndarray, colors: np.ndarray, alpha: int = 255,
                 visible: np.ndarray | None = None, sides: np.ndarray | None = None, bounds=None,
                 columns=None) -> None:
        """``xy`` (n, 2); ``codes`` (n,) index into ``colors`` ((m, 3) uint8); ``alpha``: opacity
        0–255; ``visible``: optional (n,) boolean mask of the points to draw; ``sides``: optional
        (n,) point sides in pixels (1 to :data:`MAX_SIDE`), else every point has the item's ``size``;
        ``bounds``: the points' ((xmin, ymin), (xmax, ymax)) and ``columns``: contiguous copies
        (x, y) of ``xy``'s columns, if the caller keeps them (see :func:`xy_bounds`)."""
        self.prepareGeometryChange()
        self._xy = np.asarray(xy, dtype=np.float64)
        idx = None if visible is None else np.flatnonzero(visible)
        take = (lambda a: a) if idx is None else (lambda a: a[idx])
        self._index = idx
        x, y = (self._xy[:, 0], self._xy[:, 1]) if columns is None else columns
        self._x = np.ascontiguousarray(take(x))
        self._y = np.ascontiguousarray(take(y))
        self._rgb = rgb_table(colors)[take(np.asarray(codes))]
        self._levels = self._size
        self._sides = None
        if sides is not None:  # group the points by side (largest first), keeping their order within a side
            side = take(np.clip(np.asarray(sides), 1, MAX_SIDE).astype(np.uint8))
            order = np.argsort(MAX_SIDE - side, kind="stable")
            self._x, self._y, self._rgb, self._sides = self._x[order], self._y[order], self._rgb[order], side[order]
            self._index = order if idx is None else idx[order]
            stops = np.cumsum(np.bincount(MAX_SIDE - self._sides, minlength=MAX_SIDE))
            starts = np.concatenate(([0], stops[:-1]))
            self._levels = [(MAX_SIDE - k, int(a), int(b)) for k, (a, b) in enumerate(zip(starts, stops)) if b > a]
        self._alpha = int(np.clip(alpha, 0, 255))
        self._set_geometry(bounds)

    def move_points(self, xy: np.ndarray, bounds=None, columns=None) -> None:
        """New positions ``xy`` (n, 2) for the same points: their colours, sides, visibility and
        drawing order are kept (a running fit's next intermediate map: no colour lookup, no
        sort). ``bounds`` and ``columns`` as for :meth:`set_data`."""
        xy = np.asarray(xy, dtype=np.float64)
        if xy.shape != self._xy.shape:
            raise ValueError(f"move_points: {xy.shape[0]} positions for {self._xy.shape[0]} points")
        self.prepareGeometryChange()
        self._xy = xy
        x, y = (xy[:, 0], xy[:, 1]) if columns is None else columns
        idx = self._index
        self._x = np.ascontiguousarray(x if idx is None else x[idx])
        self._y = np.ascontiguousarray(y if idx is None else y[idx])
        self._set_geometry(bounds)

    def recolor(self, codes: np.ndarray, colors: np.ndarray) -> None:
        """New colours for the same points (``codes`` (n,) index into ``colors`` (m, 3), per point
        of the ``xy`` given): positions, sides and drawing order are kept; one table lookup, no
        per-point objects (a running clustering's next labels)."""
        self._set_colors(codes, colors)
        self.update()

    def _set_colors(self, codes, colors) -> None:
        codes = np.asarray(codes)
        if codes.shape != (len(self._xy),):
            raise ValueError(f"recolor: {codes.shape[0] if codes.ndim else 0} codes for {len(self._xy)} points")
        self._rgb = rgb_table(colors)[codes if self._index is None else codes[self._index]]
        self._version += 1

    def _set_geometry(self, bounds) -> None:
        """Bounds, float32 coordinates about the centre and a new version (a new raster)."""
        self._version += 1
        lo, hi = xy_bounds(self._xy) if bounds is None else bounds
        self._lo, self._hi = lo, hi
        finite = np.isfinite([lo, hi]).all()
        self._centre = (lo + hi) / 2 if finite else np.zeros(2)
        self._span = (hi - lo) if finite else np.zeros(2)
        self._x32 = (self._x - self._centre[0]).astype(np.float32)  # float32 about the centre:
        self._y32 = (self._y - self._centre[1]).astype(np.float32)  # exact to < 1/8 px up to 2^20 px
        self._bounds = QRectF() if not np.isfinite([lo, hi]).all() else \
            QRectF(lo[0], lo[1], max(hi[0] - lo[0], 1e-12), max(hi[1] - lo[1], 1e-12))
        self.informViewBoundsChanged()
        self.update()

    def point_count(self) -> int:
        """Number of points drawn (the visible ones)."""
        return int(self._x.size)

    def drawn_index(self) -> np.ndarray:
        """Index (into the ``xy`` given) of each drawn point, in drawing order."""
        return np.arange(self._x.size) if self._index is None else self._index

    def point_colors(self) -> np.ndarray:
        """0xRRGGBB colour of each drawn point (in drawing order: by side, then as given)."""
        return self._rgb

    def point_sides(self) -> np.ndarray:
        """Side in pixels of each drawn point (in drawing order)."""
        return np.full(self._x.size, self._size, dtype=np.uint8) if self._sides is None else self._sides

    @property
    def alpha(self) -> int:
        return self._alpha

    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        if not len(self._xy) or not np.isfinite([self._lo[ax], self._hi[ax]]).all():
            return None
        return float(self._lo[ax]), float(self._hi[ax])

    def boundingRect(self):
        return QRectF(self._bounds)

    def _device_area(self, painter):
        """(the painter's transform, the device pixels of the view box's area) for a raster
        paint; None when the points must be drawn as vectors instead (:meth:`_paint_points`:
        SVG, printers, pictures, odd transforms) or nothing is visible (then an empty rect)."""
        t = painter.transform()
        device = painter.device()
        if t.m12() != 0 or t.m21() != 0 or t.isRotating() or not isinstance(device, (QImage, QPixmap, QWidget)) \
                or device.width() <= 0 or device.height() <= 0:
            return None
        area = QRectF(0, 0, device.width(), device.height())
        vb = self.getViewBox()
        if hasattr(vb, "boundingRect"):  # only the view box's area (its children are clipped to it)
            area = area.intersected(t.mapRect(self.mapRectFromItem(vb, vb.boundingRect())))
        return t, area.toAlignedRect()

    def paint(self, painter, option, widget=None):
        """Draw the points as one image (:meth:`_paint_image`), or point by point on a device or
        transform the image does not suit."""
        if not self._x.size:
            return
        found = self._device_area(painter)
        if found is None:
            self._paint_points(painter)
        elif found[1].width() > 0 and found[1].height() > 0:
            self._paint_image(painter, *found)

    def _paint_image(self, painter, t, area):
        """Draw the image of the points into the device ``area`` under the transform ``t``."""
        w, h = area.width(), area.height()
        key = (t.m11(), t.m22(), t.dx(), t.dy(), area.x(), area.y(), w, h, self._version)
        if key != self._cache_key:  # a repaint for the hover tip or a selection reuses the image
            sx, sy = t.m11(), t.m22()
            ox, oy = t.dx() - area.left(), t.dy() - area.top()
            if max(abs(sx) * self._span[0], abs(sy) * self._span[1]) < FLOAT32_LIMIT_PX:
                x, y = self._x32, self._y32
                ox, oy = ox + sx * self._centre[0], oy + sy * self._centre[1]
            else:  # zoomed in very far: float64
                x, y = self._x, self._y
            if self._scratch is None or not self._scratch.fits(len(x), x.dtype):
                self._scratch = RasterScratch(len(x), x.dtype)
            img = raster_points(x, y, self._rgb, self._levels, (sx, sy), (ox, oy), (h, w), self._alpha,
                                self._scratch)
            self._cache = (img, QImage(img.data, w, h, 4 * w, QImage.Format.Format_ARGB32))
            self._cache_key = key
            self.rasterised += 1
        painter.save()
        painter.resetTransform()
        painter.drawImage(QPointF(area.left(), area.top()), self._cache[1])
        painter.restore()
        self.painted_version = self._version

    def _paint_points(self, painter):
        """Fallback for unusual transforms: one cosmetic ``drawPoints`` per colour."""
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        codes, rgbs = np.unique(self._rgb, return_inverse=True)
        for k, rgb in enumerate(codes):
            sel = np.flatnonzero(rgbs == k)
            pen = pg.mkPen(((int(rgb) >> 16) & 255, (int(rgb) >> 8) & 255, int(rgb) & 255, self._alpha), width=1)
            pen.setCosmetic(True)
            pen.setCapStyle(Qt.PenCapStyle.SquareCap)
            painter.setPen(pen)
            painter.drawPoints(pg.functions.arrayToQPolygonF(self._x[sel], self._y[sel]))
