"""The item that draws a running fit's intermediate maps of more than a few thousand points.

pyqtgraph's ScatterPlotItem costs the window's thread 4–10 ms of Python and Qt calls per frame
at 20,000 points (its symbols' fragments, bounds and masks), and every Python call made from
Qt's paint has to take the interpreter lock back from the fit's threads: under load a frame of
a t-SNE preview stalled the event loop 60–130 ms. :class:`PreviewPointsItem` instead draws one
image of the points, rasterised on a worker thread as discs of the scatter's sizes and colours
(:func:`~manifold_studio.render.point_stamps.stamp_points`). Its paint only draws the newest
image (stretched to the current view range when that changed since) and, when the points or the
range changed, asks for the next image: at most one render is in flight, never a queue of them.
The first paint of the item renders at once, so the map never shows an empty frame.

Once the fit ends the map draws its normal interactive item again (``MapView.show_run``).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PySide6.QtCore import QPointF, QTimer, Signal
from PySide6.QtGui import QImage, QTransform

from manifold_studio.gui.views.points_item import FastPointsItem
from manifold_studio.gui.worker import lower_priority
from manifold_studio.render.point_stamps import stamp_points

__all__ = ["PreviewPointsItem", "PREVIEW_RASTER_ABOVE"]

#: intermediate maps of more points than this are drawn by :class:`PreviewPointsItem`
PREVIEW_RASTER_ABOVE = 4_000
#: renders the intermediate maps' images off the window's thread, one at a time, at a worker's
#: priority (the window's thread gets the CPU first)
_RENDER_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="map-preview", initializer=lower_priority)


class PreviewPointsItem(FastPointsItem):
    """Points as discs of ``diameters`` px (one int, or one per point), drawn as one image
    rendered on a worker thread. Positions, colours and bounds as for :class:`FastPointsItem`
    (``set_data`` without ``sides``, ``move_points``, ``version`` / ``painted_version``)."""

    #: (key, image or the exception that stopped its rendering), from the render thread
    _rendered = Signal(object)

    def __init__(self, diameters):
        super().__init__(size=1)
        self._diameters = diameters if np.ndim(diameters) == 0 else np.asarray(diameters)
        #: (key, params, (H, W) uint32 image, QImage over it) of the newest image
        self._image = None
        self._pending = None   # the key being rendered
        #: images rendered in the window's thread (only the first) and on the render thread
        self.main_thread_renders = 0
        self.worker_renders = 0
        self._rendered.connect(self._on_rendered)

    @property
    def rendering(self) -> bool:
        """Whether an image is being rendered on the worker thread."""
        return self._pending is not None

    def _paint_image(self, painter, t, area):
        w, h = area.width(), area.height()
        # data → image pixels: px = x * sx + ox (the image's top-left at the area's top-left)
        params = (t.m11(), t.m22(), t.dx() - area.left(), t.dy() - area.top(), w, h)
        key = (params, self._version)
        if self._image is None:   # the item's first frame: drawn now, never an empty map
            self._store(key, self._render(params))
            self.main_thread_renders += 1
        elif self._image[0] != key and self._pending is None:
            # started once this paint is over: waking the render thread now would make this
            # thread wait for the interpreter lock in the middle of the frame
            self._pending = key
            QTimer.singleShot(0, self, lambda: self._submit(key, params))
        (_p, version), (sx0, sy0, ox0, oy0, _w, _h), _img, qimage = self._image
        if sx0 == 0 or sy0 == 0:
            return
        a, b = t.m11() / sx0, t.m22() / sy0   # the image's data → the current device pixels
        painter.save()
        painter.setTransform(QTransform(a, 0, 0, b, t.dx() - ox0 * a, t.dy() - oy0 * b))
        painter.drawImage(QPointF(0, 0), qimage)
        painter.restore()
        self.painted_version = version

    def recolor(self, codes: np.ndarray, colors: np.ndarray) -> None:
        """New colours (as :meth:`FastPointsItem.recolor`): the image in the new colours is
        rendered on the worker thread before the item repaints (one paint, not a paint of the
        old image first)."""
        if self._image is None or self._pending is not None:
            super().recolor(codes, colors)
            return
        self._set_colors(codes, colors)
        params = self._image[1]
        self._pending = key = (params, self._version)
        self._submit(key, params)

    # -- rendering ----------------------------------------------------------------------------
    def _render(self, params):
        sx, sy, ox, oy, w, h = params
        return stamp_points(self._x, self._y, self._rgb, self._diameters, (sx, sy), (ox, oy), (h, w), self._alpha)

    def _submit(self, key, params) -> None:
        sx, sy, ox, oy, w, h = params
        future = _RENDER_POOL.submit(stamp_points, self._x, self._y, self._rgb, self._diameters, (sx, sy),
                                     (ox, oy), (h, w), self._alpha)
        future.add_done_callback(lambda f: self._deliver(key, f))

    def _deliver(self, key, future) -> None:
        """On the render thread: hand the image to the window's thread."""
        error = future.exception()
        try:
            self._rendered.emit((key, future.result() if error is None else error))
        except RuntimeError:   # the item was deleted meanwhile (the fit ended): nothing to draw
            pass

    def _on_rendered(self, result) -> None:
        key, image = result
        if key == self._pending:
            self._pending = None
        if isinstance(image, BaseException):
            raise image
        self.worker_renders += 1
        if self._image is None or key[1] >= self._image[0][1]:
            self._store(key, image)
            self.update()

    def _store(self, key, image: np.ndarray) -> None:
        h, w = image.shape
        self._image = (key, key[0], image, QImage(image.data, w, h, 4 * w, QImage.Format.Format_ARGB32))
