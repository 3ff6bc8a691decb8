"""Marks on the map for a subset of its points (search matches, rows passing the cross-filters).

Up to :data:`FEW_POINTS` marked points are drawn one by one in one colour
(:class:`~manifold_studio.gui.views.selection_items.MarkedPointsItem`); above, as a one-colour
image of the screen cells that hold a marked point (the density image's binning,
:class:`~manifold_studio.gui.views.density_item.DensityItem`, recomputed shortly after the view
range changes): its cost does not grow with the number of marked points, so marking 700,000 of a
million points neither stalls the update nor slows every frame.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, QTimer

from manifold_studio.gui.views.density_item import DensityItem
from manifold_studio.gui.views.selection_items import MarkedPointsItem

FEW_POINTS = 100_000
RANGE_DELAY_MS = 40


class MarkLayer(QObject):
    def __init__(self, view, color, z: float):
        super().__init__(view)
        self.view = view
        self.count = 0
        self._mask: np.ndarray | None = None
        self.points = MarkedPointsItem(color)
        rgb = np.array([color[:3], color[:3]], dtype=np.uint8)
        self.image = DensityItem(rgb)
        for item in (self.points, self.image):
            item.setZValue(z)
            item.setVisible(False)
            view.plot.addItem(item, ignoreBounds=True)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(RANGE_DELAY_MS)
        self.timer.timeout.connect(self._update_image)
        view.plot_item.getViewBox().sigRangeChanged.connect(lambda *_: self._mask is not None and self.timer.start())

    def isVisible(self) -> bool:
        return self.points.isVisible() or self.image.isVisible()

    def set_mask(self, hit: np.ndarray | None) -> None:
        """Mark the drawn points where ``hit`` (one bool per drawn point) holds; None: none."""
        self.count = 0 if hit is None else int(np.count_nonzero(hit))
        self._mask = None
        if self.count == 0:
            self.points.setVisible(False)
            self.image.setVisible(False)
        elif self.count <= FEW_POINTS:
            self.points.set_points(self.view.xy[hit])
            self.points.setVisible(True)
            self.image.setVisible(False)
        else:
            self._mask = hit
            self._update_image()
            self.points.setVisible(False)
            self.image.setVisible(True)

    def _update_image(self) -> None:
        if self._mask is None or len(self._mask) != len(self.view.xy):
            return
        vb = self.view.plot_item.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        rect = vb.sceneBoundingRect()
        self.image.update_view(self.view.xy, (x0, x1), (y0, y1),
                               (max(rect.width(), 1.0), max(rect.height(), 1.0)), visible=self._mask)
