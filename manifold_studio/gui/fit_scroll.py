"""Docked widgets in scroll areas that fit them: a dock never makes the window taller than asked,
and a view's axes are never cut (:class:`FitScrollArea`)."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, QTimer
from PySide6.QtWidgets import QScrollArea, QStyle, QWidget

#: the widest a side dock may insist on being (the map keeps the rest)
MAX_DOCK_WIDTH = 460


class FitScrollArea(QScrollArea):
    """A frameless scroll area that sizes its widget to the viewport, never below the widget's
    minimum size: scroll bars appear only when the dock is smaller than that minimum.
    (QScrollArea's own ``widgetResizable`` takes the *preferred* height of a layout with
    word-wrapped labels, so a view grew taller than its dock and its plots' axis titles were
    scrolled out of sight.)"""

    def __init__(self, widget: QWidget):
        super().__init__()
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setWidgetResizable(False)
        self.setWidget(widget)
        widget.installEventFilter(self)

    def fit(self) -> None:
        widget = self.widget()
        if widget is None:
            return
        least = widget.minimumSizeHint().expandedTo(widget.minimumSize())
        port = self.maximumViewportSize()  # the viewport without scroll bars
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        w, h = max(port.width(), least.width()), max(port.height(), least.height())
        if h > port.height():  # a vertical scroll bar will take its width from the viewport
            w = max(port.width() - bar, least.width())
        if w > port.width() - (bar if h > port.height() else 0):  # and a horizontal one its height
            h = max(port.height() - bar, least.height())
        widget.resize(w, h)

    def minimumSizeHint(self) -> QSize:
        """As wide as the widget needs plus a vertical scroll bar (at most MAX_DOCK_WIDTH), so
        its dock is never narrower than the view and its axes are not cut; short enough that
        the dock can be shrunk (it then scrolls vertically)."""
        widget = self.widget()
        if widget is None:
            return super().minimumSizeHint()
        least = widget.minimumSizeHint().expandedTo(widget.minimumSize())
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return QSize(min(least.width() + bar + 2, MAX_DOCK_WIDTH), min(least.height(), 120))

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self.fit()

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.LayoutRequest and obj is self.widget():
            self.updateGeometry()  # the dock asks for the new minimum width
            QTimer.singleShot(0, self, self.fit)  # (not run once this area is deleted)
        return super().eventFilter(obj, event)


def scrollable(widget: QWidget) -> QScrollArea:
    """``widget`` in a :class:`FitScrollArea` (scroll bars only when the dock is smaller than the
    widget's minimum size)."""
    return FitScrollArea(widget)
