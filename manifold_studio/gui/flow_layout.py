"""A layout that places widgets left to right and wraps them onto the next line when the width
runs out (Qt's flow layout example), so a toolbar of many controls never forces the window wider
than the screen.

Keep a label with its control by putting both in :func:`group` (they then wrap together).
"""
from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLayout, QSizePolicy, QToolButton, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent=None, spacing: int = 6, line_spacing: int = 3):
        super().__init__(parent)
        self._items = []
        self._spacing = spacing
        self._line_spacing = line_spacing
        self.setContentsMargins(0, 0, 0, 0)

    # -- QLayout ------------------------------------------------------------------------------
    def addItem(self, item):
        self._items.append(item)

    def insertWidget(self, index: int, widget: QWidget) -> None:
        """Insert ``widget`` at ``index`` (as QBoxLayout.insertWidget)."""
        self.addChildWidget(widget)
        from PySide6.QtWidgets import QWidgetItem

        index = len(self._items) if index < 0 else min(index, len(self._items))
        self._items.insert(index, QWidgetItem(widget))
        self.invalidate()

    def count(self):
        return len(self._items)

    def itemAt(self, index):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index):
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def hasHeightForWidth(self):
        return True

    def heightForWidth(self, width):
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect):
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self):
        return self.minimumSize()

    def minimumSize(self):
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    # -- placement ------------------------------------------------------------------------------
    def _arrange(self, rect: QRect, move: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_h = area.x(), area.y(), 0
        for item in self._items:
            if item.widget() is not None and not item.widget().isVisibleTo(item.widget().parentWidget()):
                continue
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and line_h > 0:
                x, y = area.x(), y + line_h + self._line_spacing
                line_h = 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._spacing
            line_h = max(line_h, hint.height())
        return y + line_h - rect.y() + m.bottom()


def group(*widgets: QWidget) -> QWidget:
    """One widget holding ``widgets`` side by side (a label and its control wrap together)."""
    box = QWidget()
    lay = QHBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(4)
    for w in widgets:
        lay.addWidget(w)
    box.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return box


class FoldingBar:
    """A toolbar row (:attr:`row`, a :class:`FlowLayout`) ending in a *More ▾* button that
    unfolds a second bar (:attr:`more_bar`, hidden at first) for the controls used less often."""

    def __init__(self, tooltip: str = ""):
        self.row = FlowLayout()
        self.button = QToolButton()
        self.button.setText("More ▾")
        self.button.setCheckable(True)
        self.button.setToolTip(tooltip)
        self.button.toggled.connect(self.unfold)
        self.row.addWidget(self.button)
        self.more = FlowLayout()
        self.more_bar = QWidget()
        self.more_bar.setLayout(self.more)
        self.more_bar.setVisible(False)

    def add(self, widget: QWidget, primary: bool = False) -> None:
        """``widget`` in the row (``primary``, before the button) or in the folded bar."""
        if primary:
            self.row.insertWidget(self.row.indexOf(self.button), widget)
        else:
            self.more.insertWidget(self.more.count(), widget)

    def unfold(self, on: bool = True) -> None:
        self.more_bar.setVisible(bool(on))
        self.button.setText("Less ▴" if on else "More ▾")
        if self.button.isChecked() != bool(on):
            self.button.setChecked(bool(on))
