"""The map's density layer (issue 31): shading and contour lines of a binned KDE of the drawn
points (:func:`~manifold_studio.analysis.map_density.density_layers`), over all points or per
class, computed on a worker thread; and "colour by local density", a colour option of the map.

Controls (in the map's toolbar): *Density* on/off, the bandwidth slider (a factor of Scott's
rule, 0.2–3), *per class* (one set of contour lines per class, in the class colours) and *fade
points* (the shading is drawn above the points, half opaque, so they fade under it).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QRectF, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QSlider

from manifold_studio.analysis.map_density import DensityLayers, density_layers, point_density
from manifold_studio.errors import ManifoldStudioError, error_message
from manifold_studio.gui.flow_layout import group
from manifold_studio.gui.views.density_item import log_lut
from manifold_studio.gui.worker import LatestJob

DENSITY_COLOR_KEY = "density"
SHADE_COLORS = np.array([[255, 255, 255], [200, 215, 235], [120, 150, 200], [40, 70, 140]], dtype=np.uint8)
CONTOUR_PEN = (40, 40, 40)
#: z of the shading below / above the points, and of the contour lines
Z_BELOW, Z_ABOVE, Z_LINES = -10, 15, 16


def _segments_curve(seg: np.ndarray, pen) -> pg.PlotCurveItem:
    pts = seg.reshape(-1, 2)
    item = pg.PlotCurveItem(pts[:, 0], pts[:, 1], connect="pairs", pen=pen)
    item.setZValue(Z_LINES)
    return item


class DensityLayer(QObject):
    #: a density was drawn (DensityLayers)
    drawn = Signal(object)

    def __init__(self, window, view):
        super().__init__(view)
        self.window, self.view = window, view
        self.result: DensityLayers | None = None
        self.items: list = []
        self.latest = LatestJob()
        self._point_density = (None, None)   # ((xy, factor) it belongs to, values)
        self._density_job = LatestJob()
        self.box = QCheckBox("Density")
        self.box.setObjectName("density_layer")
        self.box.setToolTip("Shade the map by a kernel density estimate and draw its contour lines "
                            "(25, 50, 75 and 90 % of the points inside).")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(20, 300)
        self.slider.setValue(100)
        self.slider.setFixedWidth(80)
        self.slider.setToolTip("Bandwidth: a factor of Scott's rule (1 in the middle-left; smaller = finer detail).")
        self.per_class = QCheckBox("per class")
        self.per_class.setToolTip("One set of contour lines per class, in the class colours.")
        self.fade = QCheckBox("fade points")
        self.fade.setToolTip("Draw the shading above the points so that they fade under it.")
        self.box.toggled.connect(self.refresh)
        self.slider.sliderReleased.connect(self._bandwidth_changed)
        self.slider.valueChanged.connect(lambda _v: None if self.slider.isSliderDown() else self._bandwidth_changed())
        self.per_class.toggled.connect(self.refresh)
        self.fade.toggled.connect(self._place)
        view.runShown.connect(lambda _run: self.refresh())
        view.redrawn.connect(self._maybe_refresh)
        view.add_color_source(DENSITY_COLOR_KEY, "local density (map)", self.density_values)
        self._drawn_for = None

    @property
    def factor(self) -> float:
        return self.slider.value() / 100.0

    def widget(self):
        return group(self.box, QLabel("bw"), self.slider, self.per_class, self.fade)

    # -- the layer --------------------------------------------------------------------------
    def _inputs(self):
        view = self.view
        xy = view.xy
        vis = view.visible
        codes = getattr(view.coloring, "codes", None)
        if vis is not None:
            xy = xy[vis]
            codes = None if codes is None else codes[vis]
        per_class = self.per_class.isChecked() and codes is not None and view.coloring.mode != "continuous"
        return xy, (codes if per_class else None)

    def _bandwidth_changed(self):
        self.refresh()
        if (self.view.color_combo.currentData() or "") == DENSITY_COLOR_KEY:
            self.view.encoding.changed.emit()   # colour by density follows the bandwidth

    def _inputs_key(self):
        """What the layer depends on: the points, the visible ones and, for per-class contours
        only, the colouring (a colour change, e.g. to local density, recomputes nothing else)."""
        view = self.view
        return (id(view.xy), id(view.visible), id(view.coloring) if self.per_class.isChecked() else None)

    def _maybe_refresh(self):
        if self.box.isChecked() and self._inputs_key() != self._drawn_for:
            self.refresh()

    def refresh(self, *_):
        self._drawn_for = self._inputs_key()
        if not self.box.isChecked() or len(self.view.xy) == 0:
            self.latest.drop()
            self.clear()
            return
        xy, codes = self._inputs()
        self.latest.start(self.window, density_layers, xy, factor=self.factor, codes=codes,
                          title="Map density", on_success=self._draw, on_failure=self._failed)

    def _failed(self, message, _detail):
        self.clear()
        status = self.window.show_status if self.window is not None else None
        if status is not None:
            status(f"Density: {message}")

    def clear(self):
        for item in self.items:
            self.view.plot.removeItem(item)
        self.items = []
        self.result = None

    def _draw(self, result: DensityLayers):
        self.clear()
        self.result = result
        g = result.grid
        image = pg.ImageItem(axisOrder="row-major")
        v = g.values / max(float(g.values.max()), 1e-300)
        lut = log_lut(SHADE_COLORS)
        lut[:, 3] = np.linspace(0, 200, len(lut)).astype(np.uint8)
        image.setImage(v, levels=(0.0, 1.0), lut=lut)
        x0, y0, w, h = g.rect
        dx, dy = w / (len(g.x) - 1), h / (len(g.y) - 1)
        image.setRect(QRectF(x0 - dx / 2, y0 - dy / 2, w + dx, h + dy))
        self.items.append(image)
        if result.class_segments:
            colors = getattr(self.view.coloring, "colors", None)
            for code, per_level in result.class_segments.items():
                rgb = tuple(int(c) for c in colors[code][:3]) if colors is not None and code < len(colors) else CONTOUR_PEN
                for k, seg in enumerate(per_level):
                    if len(seg):
                        self.items.append(_segments_curve(seg, pg.mkPen(rgb, width=2 if k == 1 else 1)))
        else:
            for k, seg in enumerate(result.segments):
                if len(seg):
                    self.items.append(_segments_curve(seg, pg.mkPen(CONTOUR_PEN, width=2 if k == 1 else 1)))
        for item in self.items:
            self.view.plot.addItem(item, ignoreBounds=True)
        self._place()
        self.drawn.emit(result)

    def _place(self, *_):
        if self.items:
            image = self.items[0]
            image.setZValue(Z_ABOVE if self.fade.isChecked() else Z_BELOW)
            image.setOpacity(0.85 if self.fade.isChecked() else 1.0)

    # -- colour by local density --------------------------------------------------------------
    def density_values(self):
        """The density at each drawn point (None while it is computed: the map is redrawn
        when it is ready)."""
        xy = self.view.xy
        key = self._point_density[0]
        if key is not None and key[0] is xy and key[1] == self.factor:
            return self._point_density[1]
        if len(xy) >= 3:
            self._density_job.start(self.window, _point_density_task, xy, self.factor,
                                    title="Local density", on_success=self._density_ready,
                                    on_failure=self._failed)
        elif len(xy):   # 1 or 2 points: say why there is no colour (the check is instant)
            try:
                point_density(xy, factor=self.factor)
            except ManifoldStudioError as exc:
                self._failed(error_message(exc), None)
        return None

    def _density_ready(self, result):
        xy, factor, values = result
        if xy is self.view.xy:
            self._point_density = ((xy, factor), values)
            self.view.encoding.changed.emit()  # redraw with the values


def _point_density_task(xy, factor, progress=None):
    return xy, factor, point_density(xy, factor=factor)
