"""A cheap scatter item for large maps: one ``QPainter.drawPoints`` call per colour.

pyqtgraph's ScatterPlotItem costs about 18 ms per frame at 100k points and 190 ms at 1M;
drawing 1–3 px cosmetic points costs about 21 ms at 1M. No per-point symbols, no per-point
hit testing (the map view does hover by nearest-point search on its own arrays).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QPainter, QPen, QTransform


class FastPointsItem(pg.GraphicsObject):
    """Points of 1 px (``size=1``) or 2×2 px (``size=2``: the 1 px set drawn four times, shifted
    by one device pixel; wide pens are 10–30× slower than this)."""

    def __init__(self, size: int = 1):
        super().__init__()
        self._groups: list[tuple[QPen, object]] = []
        self._bounds = QRectF()
        self._xy = np.zeros((0, 2))
        self._size = 2 if size >= 2 else 1

    def set_data(self, xy: np.ndarray, codes: np.ndarray, colors: np.ndarray) -> None:
        """``xy`` (n, 2); ``codes`` (n,) index into ``colors`` ((m, 3) uint8)."""
        self.prepareGeometryChange()
        self._xy = np.asarray(xy, dtype=np.float64)
        self._groups = []
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
        for chunk in np.split(order, bounds):
            if chunk.size == 0:
                continue
            r, g, b = (int(v) for v in colors[codes[chunk[0]]])
            pen = pg.mkPen((r, g, b, 255), width=1)
            pen.setCosmetic(True)
            pen.setCapStyle(Qt.PenCapStyle.SquareCap)
            pts = self._xy[chunk]
            self._groups.append((pen, pg.functions.arrayToQPolygonF(pts[:, 0].copy(), pts[:, 1].copy())))
        if len(self._xy):
            lo, hi = self._xy.min(axis=0), self._xy.max(axis=0)
            self._bounds = QRectF(lo[0], lo[1], max(hi[0] - lo[0], 1e-12), max(hi[1] - lo[1], 1e-12))
        else:
            self._bounds = QRectF()
        self.informViewBoundsChanged()
        self.update()

    def point_count(self) -> int:
        return int(self._xy.shape[0])

    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        if not len(self._xy):
            return None
        col = self._xy[:, ax]
        return float(col.min()), float(col.max())

    def boundingRect(self):
        return QRectF(self._bounds)

    def paint(self, painter, option, widget=None):
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        base = painter.transform()
        shifts = ((0, 0),) if self._size == 1 else ((0, 0), (1, 0), (0, 1), (1, 1))
        for dx, dy in shifts:
            painter.setTransform(base * QTransform.fromTranslate(dx, dy))
            for pen, poly in self._groups:
                painter.setPen(pen)
                painter.drawPoints(poly)
        painter.setTransform(base)
