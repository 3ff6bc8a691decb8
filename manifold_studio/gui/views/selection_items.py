"""The widgets and items of :mod:`.selection_overlay`: the selection mode bar (Pan / Rectangle
/ Lasso, All / Invert / Clear, dim others) and the one-colour point item that highlights large
selections."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QPainter, QTransform
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QToolButton, QWidget

PAN, RECT, LASSO = "pan", "rect", "lasso"
HIGHLIGHT_PEN = (20, 20, 20)


class MarkedPointsItem(pg.GraphicsObject):
    """The highlight of large selections: points of one colour, a diagonal pair of pixels up to
    100,000 points, 1 px above (the 1 px set drawn once per pixel: wide pens are many times
    slower; each pass costs about as much as the map's own 1 px points) — at most about
    200,000 point draws a frame beyond the selection itself."""

    PASSES = ((100_000, ((0, 0), (1, 1))),)

    def __init__(self, color=HIGHLIGHT_PEN):
        super().__init__()
        self._pen = pg.mkPen(color, width=1)
        self._pen.setCosmetic(True)
        self._poly = None
        self._n = 0
        self._shifts = ((0, 0),)
        self._bounds = QRectF()

    def set_points(self, xy: np.ndarray) -> None:
        self.prepareGeometryChange()
        self._n = int(len(xy))
        if self._n:
            x, y = np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1])
            self._shifts = next((sh for limit, sh in self.PASSES if self._n <= limit), ((0, 0),))
            self._poly = pg.functions.arrayToQPolygonF(x, y)
            x0, x1, y0, y1 = float(x.min()), float(x.max()), float(y.min()), float(y.max())
            self._bounds = QRectF(x0, y0, max(x1 - x0, 1e-12), max(y1 - y0, 1e-12))
        else:
            self._poly, self._bounds = None, QRectF()
        self.update()

    def point_count(self) -> int:
        return self._n

    def boundingRect(self):
        return QRectF(self._bounds)

    def paint(self, painter, option, widget=None):
        if self._poly is None:
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.setPen(self._pen)
        base = painter.transform()
        for dx, dy in self._shifts:
            painter.setTransform(base * QTransform.fromTranslate(dx, dy))
            painter.drawPoints(self._poly)
        painter.setTransform(base)


class SelectionModeBar(QWidget):
    """Pan / Rectangle / Lasso tool buttons, Select all / Invert / Clear, and "dim others"."""

    modeChanged = Signal(str)

    def __init__(self, parent=None, shortcut_widget: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("selection_mode_bar")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.actions_by_mode: dict[str, QAction] = {}
        tips = {PAN: ("Pan", "P", "Drag to pan, wheel to zoom (no selection)."),
                RECT: ("Rectangle", "R", "Drag a rectangle to select the points inside. "
                                         "Shift adds, Alt removes, Ctrl toggles; a click on empty space clears."),
                LASSO: ("Lasso", "L", "Draw a lasso around the points to select. "
                                      "Shift adds, Alt removes, Ctrl toggles; a click on empty space clears.")}
        for mode, (text, key, tip) in tips.items():
            act = QAction(text, self)
            act.setCheckable(True)
            act.setData(mode)
            act.setShortcut(QKeySequence(key))
            act.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            act.setToolTip(f"{tip} ({key})")
            self.group.addAction(act)
            if shortcut_widget is not None:
                shortcut_widget.addAction(act)  # keys act while the plot has the focus
            button = QToolButton()
            button.setObjectName(f"selection_{mode}")
            button.setDefaultAction(act)
            button.setAutoRaise(True)
            lay.addWidget(button)
            self.actions_by_mode[mode] = act
        self.actions_by_mode[PAN].setChecked(True)
        self.group.triggered.connect(lambda act: self.modeChanged.emit(act.data()))
        self.buttons: dict[str, QToolButton] = {}
        for key, text, tip in (("all", "All", "Select every point of this data set."),
                               ("invert", "Invert", "Select the points that are not selected, and only those."),
                               ("clear", "Clear", "Select nothing.")):
            b = QToolButton()
            b.setObjectName(f"selection_{key}")
            b.setText(text)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            lay.addWidget(b)
            self.buttons[key] = b
        self.dim_box = QCheckBox("dim others")
        self.dim_box.setToolTip("Fade the points that are not selected.")
        lay.addWidget(self.dim_box)

    @property
    def mode(self) -> str:
        act = self.group.checkedAction()
        return act.data() if act is not None else PAN

    def set_mode(self, mode: str) -> None:
        self.actions_by_mode[mode].setChecked(True)
        self.modeChanged.emit(mode)
