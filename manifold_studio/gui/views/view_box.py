"""A pyqtgraph view box that settles its range and transform when it is resized.

pyqtgraph updates a resized view box's auto range and transform in the next paint's
preparation (``GraphicsScene.prepareForPaint``). The new transform marks every item of the plot
dirty again *while* that paint runs, so Qt paints the plot a second time right after it (and a
range changed there repaints the axes): two full paints of the plot for every resize (a dock
that opens, a label that wraps onto another line). :class:`SettledViewBox` does that work in
its resize instead, and :func:`settle` does it for a view box whose items just changed, so the
next paint is the only one.
"""
from __future__ import annotations

import pyqtgraph as pg

__all__ = ["SettledViewBox", "settle"]


def settle(view_box: pg.ViewBox) -> None:
    """Update ``view_box``'s auto range and transform now rather than in its next paint."""
    view_box.prepareForPaint()   # pyqtgraph: updateAutoRange (when queued) + updateMatrix
    if view_box._autoRangeNeedsUpdate:   # the new transform re-queued it: the same range, settled too
        view_box.prepareForPaint()


class SettledViewBox(pg.ViewBox):
    """A ``pg.ViewBox`` settled at every resize (:func:`settle`)."""

    def resizeEvent(self, ev):  # noqa: N802 - Qt
        super().resizeEvent(ev)
        settle(self)
