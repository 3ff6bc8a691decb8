"""The inverse map (issue 31): with *Decode* on, hovering an empty place of the map shows the
data point it decodes to (:mod:`~manifold_studio.analysis.inverse_map`): an image for image data
sets, the values of the features otherwise. *A here* / *B here* (or a click with Shift / Alt while
decoding) fix two places; *Walk* decodes the straight path between them, as a strip of images or
a table. Methods that cannot decode say so.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QCheckBox, QHBoxLayout, QLabel, QPushButton, QSpinBox, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from manifold_studio.analysis.inverse_map import decode, decoder_status, walk
from manifold_studio.analysis.reconstruction import image_shape
from manifold_studio.errors import ManifoldStudioError, error_message
from manifold_studio.session.isolated_fit import estimator_ids, third_party_parts
from manifold_studio.session.ready_maps import READY_MAP

IMAGE_PX = 96
MAX_VALUES = 60


def to_pixmap(values: np.ndarray, shape, px: int = IMAGE_PX) -> QPixmap:
    """A decoded row drawn as a grey (h, w) or colour (h, w, 3) image, scaled to ``px``."""
    img = np.asarray(values, dtype=float).reshape(shape)
    lo, hi = float(np.nanmin(img)), float(np.nanmax(img))
    u8 = np.ascontiguousarray(np.clip((img - lo) / ((hi - lo) or 1.0) * 255, 0, 255).astype(np.uint8))
    h, w = shape[:2]
    fmt = QImage.Format.Format_RGB888 if len(shape) == 3 else QImage.Format.Format_Grayscale8
    q = QImage(u8.data, w, h, u8.strides[0], fmt).copy()
    return QPixmap.fromImage(q).scaled(px, px, Qt.AspectRatioMode.KeepAspectRatio)


def _in_worker(run) -> bool:
    """Whether ``run``'s model holds a third-party part, whose code runs in worker processes only:
    not decoded here (hover decodes at once, in this process)."""
    est = getattr(run, "estimator", None)
    return est is not None and bool(third_party_parts(estimator_ids(est)))


class InversePanel(QWidget):
    #: a position was decoded: (positions (m, 2), decoded rows (m, d))
    decoded = Signal(object)

    def __init__(self, window, view, parent=None):
        super().__init__(parent)
        self.window, self.view = window, view
        self.last_position = None
        self.ends = [None, None]
        self.box = QCheckBox("Decode")
        self.box.setObjectName("inverse_map")
        self.box.setToolTip("Hover an empty place of the map: the data point it decodes to (methods with an inverse).")
        self.a_button, self.b_button = QPushButton("A here"), QPushButton("B here")
        self.steps = QSpinBox()
        self.steps.setRange(2, 24)
        self.steps.setValue(8)
        self.steps.setPrefix("steps ")
        self.walk_button = QPushButton("Walk A → B")
        self.status = QLabel("Turn on Decode and hover an empty place of the map.")
        self.status.setWordWrap(True)
        self.image = QLabel()
        self.strip = QHBoxLayout()
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(("feature", "value"))
        bar = QHBoxLayout()
        for w in (self.box, self.a_button, self.b_button, self.steps, self.walk_button):
            bar.addWidget(w)
        bar.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(self.status)
        lay.addWidget(self.image)
        lay.addLayout(self.strip)
        lay.addWidget(self.table, 1)
        lay.addStretch(0)
        self.a_button.clicked.connect(lambda: self.set_end(0))
        self.b_button.clicked.connect(lambda: self.set_end(1))
        self.walk_button.clicked.connect(self.walk)
        self.markers = pg.ScatterPlotItem(size=12, symbol="x", pen=pg.mkPen(0, 120, 0, width=2))
        self.markers.setZValue(26)
        view.plot.addItem(self.markers, ignoreBounds=True)
        self._proxy = pg.SignalProxy(view.plot.scene().sigMouseMoved, rateLimit=30, slot=self._moved)
        view.runShown.connect(lambda _run: self._run_changed())

    # -- what decodes ------------------------------------------------------------------------
    def map_run(self):
        finder = getattr(self.view, "map_run_for", None)
        run = self.view.run
        return finder(run) if finder is not None else run

    def _decoder(self, run) -> tuple:
        """(estimator, name, in_worker, stored) of ``run`` for the inverse map's functions."""
        if run is None:
            return None, "this map", False, False
        return (run.estimator, run.algorithm_name or run.algorithm_id, _in_worker(run),
                run.algorithm_id == READY_MAP)

    def status_text(self) -> str:
        return decoder_status(*self._decoder(self.map_run())).message

    def _run_changed(self):
        self.ends = [None, None]
        self.markers.setData(pos=np.zeros((0, 2)))
        self.status.setText(self.status_text())

    def decode_at(self, x: float, y: float) -> np.ndarray | None:
        """Decode one map position and show it; None (and the reason shown) when the run cannot."""
        run = self.map_run()
        est, name, in_worker, stored = self._decoder(run)
        try:
            row = decode(est, [[x, y]], getattr(run, "embedding", np.zeros((0, 2))), name, in_worker, stored)[0]
        except ManifoldStudioError as exc:
            self.status.setText(error_message(exc))
            return None
        self.last_position = (x, y)
        self._show_rows(np.array([[x, y]]), row[None, :])
        self.status.setText(f"Decoded at ({x:.3g}, {y:.3g}). {self.status_text()}")
        return row

    def _shape(self, d: int):
        ds = self.view.dataset
        return image_shape(getattr(ds, "images", None), d) if ds is not None else None

    def _names(self, d: int):
        ds = self.view.dataset
        names = getattr(ds, "feature_names", None)
        return names if names is not None and len(names) == d else [f"x{j + 1}" for j in range(d)]

    def _show_rows(self, positions, rows):
        shape = self._shape(rows.shape[1])
        while self.strip.count():
            w = self.strip.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.table.setVisible(shape is None)
        self.layout().setStretch(self.layout().count() - 1, 0 if shape is None else 1)
        if shape is not None:
            self.table.setRowCount(0)
            if len(rows) == 1:
                self.image.setPixmap(to_pixmap(rows[0], shape))
            else:
                self.image.clear()
                for r in rows:
                    label = QLabel()
                    label.setPixmap(to_pixmap(r, shape, IMAGE_PX // 2))
                    self.strip.addWidget(label)
        else:
            self.image.clear()
            names = self._names(rows.shape[1])[:MAX_VALUES]
            self.table.setColumnCount(1 + len(rows))
            self.table.setHorizontalHeaderLabels(["feature"] + [f"({p[0]:.3g}, {p[1]:.3g})" for p in positions])
            self.table.setRowCount(len(names))
            for j, name in enumerate(names):
                self.table.setItem(j, 0, QTableWidgetItem(name))
                for i, r in enumerate(rows):
                    self.table.setItem(j, 1 + i, QTableWidgetItem(f"{r[j]:.4g}"))
        self.decoded.emit((positions, rows))

    # -- interaction -------------------------------------------------------------------------
    def _moved(self, event):
        if not self.box.isChecked():
            return
        pos = event[0]
        vb = self.view.plot_item.getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return
        p = vb.mapSceneToView(pos)
        if self.view.nearest_point(p.x(), p.y()) < 0:  # an empty place
            self.decode_at(p.x(), p.y())

    def set_end(self, which: int, position=None) -> None:
        position = position if position is not None else self.last_position
        if position is None:
            self.status.setText("Hover an empty place with Decode on first, then fix it as A or B.")
            return
        self.ends[which] = tuple(position)
        self.markers.setData(pos=[e for e in self.ends if e is not None])

    def walk(self) -> None:
        if None in self.ends:
            self.status.setText("Fix both ends of the walk first (A here, B here).")
            return
        run = self.map_run()
        est, name, in_worker, stored = self._decoder(run)
        try:
            positions, rows = walk(est, self.ends[0], self.ends[1], getattr(run, "embedding", np.zeros((0, 2))),
                                   self.steps.value(), name, in_worker, stored)
        except ManifoldStudioError as exc:
            self.status.setText(error_message(exc))
            return
        self._show_rows(positions, rows)
        self.status.setText(f"Walk of {len(positions)} steps from A to B.")
