"""A placeholder whose content widget is made when it is first shown or first asked for.

Docks the window starts with hidden (Test & Score, Choose k, ...) hold pyqtgraph plots that cost
several milliseconds each to build; made on first use, they no longer delay the first map.
The owner keeps its public attributes (``panel.plot``) as properties over :meth:`LazySlot.content`,
so code and tests reach them as before; reading one builds the content."""
from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QVBoxLayout, QWidget


class LazySlot(QWidget):
    """Holds ``make()``'s widget, made on the first :meth:`content` call or show."""

    def __init__(self, make: Callable[[], QWidget], parent=None):
        super().__init__(parent)
        self._make = make
        self._content: QWidget | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)

    @property
    def built(self) -> bool:
        return self._content is not None

    def content(self) -> QWidget:
        if self._content is None:
            self._content = self._make()
            self.layout().addWidget(self._content)
        return self._content

    def showEvent(self, event) -> None:  # noqa: N802 - Qt
        self.content()
        super().showEvent(event)
