"""Images on the map, for data sets whose rows are images (digits, a folder of images, .npy stacks).

* **Hover**: the image of the point under the mouse appears, enlarged, in the map's top-left
  corner (beside the text tip).
* **Thumbnails**: a toolbar check box draws every point as its own small image instead of a
  dot (the Embedding Projector's sprites), for maps of up to :data:`MAX_THUMBNAILS` points. The
  thumbnails are one image item each, sized in map units (a fixed share of the map's extent), so
  they grow when you zoom in.

Installed once per window by :func:`install_image_points`; it listens to the map view's
``hovered`` / ``redrawn`` signals and keeps nothing of its own but the drawn items.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QCheckBox, QLabel

MAX_THUMBNAILS = 3000
HOVER_SIZE_PX = 96
#: thumbnail side as a share of the map's larger extent
THUMB_SHARE = 0.035


def grey_pixmap(image: np.ndarray, size_px: int) -> QPixmap:
    """A grey-level image (h, w) as a QPixmap scaled (nearest) so its longer side is ``size_px``."""
    img = np.asarray(image, dtype=float)
    lo, hi = float(np.nanmin(img)), float(np.nanmax(img))
    scaled = np.zeros(img.shape) if hi <= lo else (img - lo) / (hi - lo)
    data = np.ascontiguousarray((255 * (1.0 - scaled)).astype(np.uint8))  # dark ink on white, as on paper
    h, w = data.shape
    qimg = QImage(data.data, w, h, w, QImage.Format.Format_Grayscale8).copy()
    return QPixmap.fromImage(qimg).scaled(size_px, size_px, Qt.AspectRatioMode.KeepAspectRatio,
                                          Qt.TransformationMode.FastTransformation)


class ImagePoints(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        view = self.view = window.map_view
        self.thumbnails: list[pg.ImageItem] = []
        self.hover_image = QLabel(view.plot)
        self.hover_image.setObjectName("hover_image")
        self.hover_image.setStyleSheet("background: white; border: 1px solid #888; padding: 2px;")
        self.hover_image.move(70, 12)
        self.hover_image.hide()
        self.thumbs_box = QCheckBox("thumbnails")
        self.thumbs_box.setObjectName("thumbnails")
        self.thumbs_box.setToolTip(f"Draw each point as its image (data sets of images, up to "
                                   f"{MAX_THUMBNAILS:,} points).")
        self.thumbs_box.setEnabled(False)
        self.thumbs_box.toggled.connect(lambda _on: self.refresh())
        view.add_toolbar_widget(self.thumbs_box)
        view.hovered.connect(self._on_hovered)
        view.redrawn.connect(self.refresh)

    def images(self) -> np.ndarray | None:
        """The (n, h, w) images of the map's data set, or None."""
        ds = self.view.dataset
        images = getattr(ds, "images", None) if ds is not None else None
        return images if images is not None and np.ndim(images) == 3 else None

    def _on_hovered(self, row: int, _text: str) -> None:
        images = self.images()
        if row < 0 or images is None or row >= len(images):
            self.hover_image.hide()
            return
        self.hover_image.setPixmap(grey_pixmap(images[row], HOVER_SIZE_PX))
        self.hover_image.adjustSize()
        self.hover_image.show()
        self.hover_image.raise_()

    def _clear(self) -> None:
        for item in self.thumbnails:
            self.view.plot.removeItem(item)
        self.thumbnails = []

    def refresh(self) -> None:
        """Redraw the thumbnails (after the points were redrawn, or the box toggled)."""
        self._clear()
        images = self.images()
        xy, rows = self.view.xy, self.view.rows
        ok = images is not None and 0 < len(xy) <= MAX_THUMBNAILS and len(rows) and int(np.max(rows)) < len(images)
        self.thumbs_box.setEnabled(bool(ok))
        if not ok:
            self.thumbs_box.setToolTip("Thumbnails need a data set of images and a map of at most "
                                       f"{MAX_THUMBNAILS:,} points.")
            return
        self.thumbs_box.setToolTip(f"Draw each point as its image (up to {MAX_THUMBNAILS:,} points).")
        if not self.thumbs_box.isChecked():
            return
        span = np.ptp(xy, axis=0)
        side = THUMB_SHARE * float(max(span.max(), 1e-12))
        h, w = images.shape[1:3]
        tw, th = (side, side * h / w) if w >= h else (side * w / h, side)
        lo, hi = float(np.nanmin(images)), float(np.nanmax(images))
        levels = (hi, lo) if hi > lo else (lo + 1.0, lo)  # reversed: dark ink on white
        for (x, y), row in zip(xy, rows):
            item = pg.ImageItem(images[int(row)], axisOrder="row-major", levels=levels)
            # row-major image: its first row at the top of the rectangle (y grows upwards)
            item.setRect(QRectF(x - tw / 2, y + th / 2, tw, -th))
            item.setZValue(5)
            item.setOpacity(0.9)
            self.view.plot.addItem(item, ignoreBounds=True)
            self.thumbnails.append(item)


def install_image_points(window) -> ImagePoints:
    window.image_points = ImagePoints(window)
    return window.image_points
