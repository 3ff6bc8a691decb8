"""A placeholder whose content widget is made when it is first shown or first asked for.

Docks the window starts with hidden (Test & Score, Choose k, ...) hold pyqtgraph plots that cost
several milliseconds each to build; made on first use, they no longer delay the first map.
The owner keeps its public attributes (``panel.plot``) as properties over :meth:`LazySlot.content`,
so code and tests reach them as before; reading one builds the content."""
from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QVBoxLayout, QWidget

from manifold_studio.gui.views.view_box import SettledViewBox


class LazySlot(QWidget):
    """Holds ``make()``'s widget, made on the first :meth:`content` call or show."""

    def __init__(self, make: Callable[[], QWidget], parent=None):
        super().__init__(parent)
        self._make = make
        self._content: QWidget | None = None
        self._making = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)

    @property
    def built(self) -> bool:
        return self._content is not None

    def content(self) -> QWidget:
        if self._content is None:
            if self._making:
                raise RuntimeError("a lazy content's maker read its own content before making it")
            self._making = True
            try:
                self._content = self._make()
            finally:
                self._making = False
            self.layout().addWidget(self._content)
        return self._content

    def showEvent(self, event) -> None:  # noqa: N802 - Qt
        self.content()
        super().showEvent(event)


class LazyPart:
    """A part of a widget's lazy content, read as a plain attribute: ``plot = LazyPart()`` in
    the class, ``self._lazy_slot = LazySlot(self._make_content)`` in ``__init__``, and
    ``_make_content`` sets ``self.plot = ...`` as ``__init__`` did. The first read builds the
    content; the maker's assignment then holds the value in the instance, which Python finds
    before this (non-data) descriptor, so later reads cost nothing."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        obj._lazy_slot.content()
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__}.{self.name}: its lazy content does not set it") from None


def legend_plot(view, grid_alpha: float, offset: tuple, text_size: str, pen=None):
    """The usual lazy content of a view: a plot with a grid and a framed legend, set as the view's
    ``plot``, ``plot_item`` and ``legend``; returns the plot (for ``_make_content``)."""
    import pyqtgraph as pg

    view.plot = pg.PlotWidget(viewBox=SettledViewBox())   # one paint per resize, not two
    view.plot.setMenuEnabled(False)
    view.plot.showGrid(x=True, y=True, alpha=grid_alpha)
    view.plot_item = view.plot.getPlotItem()
    view.legend = view.plot_item.addLegend(offset=offset, labelTextSize=text_size)
    view.legend.setBrush(pg.mkBrush(255, 255, 255, 220))
    if pen is not None:
        view.legend.setPen(pg.mkPen(*pen))
    return view.plot
