"""The biplot's variable labels, placed without overlap.

:func:`place_arrow_labels` (numpy only) works in screen pixels: longest arrows first, the label
of each arrow longer than :data:`MIN_ARROW_PX` tries places just beyond its tip, then shifted
sideways and further out (moved inside the plot when it would stick out), and takes the first
one that overlaps no label placed before; a label with no such place is not drawn.
:class:`BiplotLabels` draws the placed labels in a small font, re-places them when the plot is
zoomed or resized, and marks every arrow's tip with a dot whose tooltip names the variable (and
its loadings), so the unlabelled arrows are named on hover.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont

LABEL_PT = 8
LABEL_COLOR = (150, 10, 10)
LABEL_Z = 20  # the labels above the arrows (z 0), their tips and the points
GAP_PX, PAD_PX = 3.0, 1.0
#: sideways shifts (in label heights) and pushes outward (in pixels) tried, in this order
SHIFTS = (0.0, 1.0, -1.0, 2.0, -2.0)
PUSHES = (0.0, 12.0, 24.0)
#: shorter arrows (on screen) get no label: it could not point at its arrow; hover names them
MIN_ARROW_PX = 16.0


def _overlaps(box, boxes) -> bool:
    return any(box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for o in boxes)


def place_arrow_labels(tips: np.ndarray, sizes: np.ndarray, bounds=None) -> list[tuple[int, float, float]]:
    """(index, x, y) of the label centres kept, longest arrows first.

    ``tips``: (n, 2) arrow tips in pixels (arrows start at 0, 0); ``sizes``: (n, 2) label
    widths and heights in pixels; ``bounds``: (x0, y0, x1, y1) the labels must stay within.
    """
    tips, sizes = np.asarray(tips, dtype=float), np.asarray(sizes, dtype=float)
    lengths = np.hypot(tips[:, 0], tips[:, 1])
    kept, boxes = [], []
    for i in np.argsort(-lengths, kind="stable"):
        if lengths[i] < MIN_ARROW_PX:
            break
        u = tips[i] / lengths[i]
        normal = np.array([-u[1], u[0]])
        w, h = sizes[i] + 2 * PAD_PX
        reach = abs(u[0]) * w / 2 + abs(u[1]) * h / 2 + GAP_PX
        for push in PUSHES:
            for shift in SHIFTS:
                cx, cy = tips[i] + u * (reach + push) + normal * shift * h
                if bounds is not None:  # moved inside the plot (a tip near its edge)
                    if bounds[2] - bounds[0] < w or bounds[3] - bounds[1] < h:
                        continue
                    cx = min(max(cx, bounds[0] + w / 2), bounds[2] - w / 2)
                    cy = min(max(cy, bounds[1] + h / 2), bounds[3] - h / 2)
                box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                if not _overlaps(box, boxes):
                    break
            else:
                continue
            kept.append((int(i), float(cx), float(cy)))
            boxes.append(box)
            break
    return kept


class BiplotLabels:
    """The variable labels and tip markers of a biplot on ``plot`` (a PlotWidget)."""

    def __init__(self, plot: pg.PlotWidget):
        self.plot = plot
        self.texts: list[pg.TextItem] = []
        self.tips = None
        self.arrows = np.zeros((0, 2))
        self.names: list[str] = []
        vb = plot.getPlotItem().getViewBox()
        vb.sigRangeChanged.connect(lambda *_: self.place())
        vb.sigResized.connect(lambda *_: self.place())

    def clear(self) -> None:
        for item in self.texts + ([self.tips] if self.tips is not None else []):
            self.plot.removeItem(item)
        self.texts, self.tips, self.arrows, self.names = [], None, np.zeros((0, 2)), []

    def draw(self, arrows: np.ndarray, names, loadings: np.ndarray) -> None:
        """Labels for arrows ``arrows`` ((d, 2), in the plot's units) named ``names``."""
        self.clear()
        self.arrows, self.names = np.asarray(arrows, dtype=float)[:, :2], list(names)
        font = QFont()
        font.setPointSize(LABEL_PT)
        for name in self.names:
            # over the arrows, their tips and the points, on a light ground (another arrow's tip
            # hid the first letter of wine's 'flavanoids')
            t = pg.TextItem(name, color=LABEL_COLOR, anchor=(0.5, 0.5), fill=pg.mkBrush(255, 255, 255, 190))
            t.setZValue(LABEL_Z)
            t.setFont(font)
            t.setVisible(False)
            self.plot.addItem(t, ignoreBounds=True)
            self.texts.append(t)
        tips = [f"{n}: loadings {a:.3g}, {b:.3g}" for n, (a, b) in zip(self.names, np.asarray(loadings)[:, :2])]
        self.tips = pg.ScatterPlotItem(self.arrows[:, 0], self.arrows[:, 1], size=6, pen=None,
                                       brush=pg.mkBrush(*LABEL_COLOR), hoverable=True, data=tips,
                                       tip=lambda x, y, data: data)
        self.plot.addItem(self.tips)
        self.place()

    @property
    def shown(self) -> list[str]:
        return [n for n, t in zip(self.names, self.texts) if t.isVisible()]

    def place(self) -> None:
        """Place the labels for the current zoom and size (cheap: a few dozen boxes)."""
        if not self.texts:
            return
        vb = self.plot.getPlotItem().getViewBox()
        px, py = vb.viewPixelSize()
        if not (px > 0 and py > 0):
            return
        (x0, x1), (y0, y1) = vb.viewRange()
        sizes = np.array([[t.textItem.boundingRect().width(), t.textItem.boundingRect().height()]
                          for t in self.texts])
        kept = place_arrow_labels(self.arrows / (px, py), sizes, (x0 / px, y0 / py, x1 / px, y1 / py))
        for t in self.texts:
            t.setVisible(False)
        for i, cx, cy in kept:
            self.texts[i].setPos(cx * px, cy * py)
            self.texts[i].setVisible(True)
