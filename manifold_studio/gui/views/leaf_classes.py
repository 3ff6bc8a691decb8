"""The data set's classes under a dendrogram's leaves: a strip below the tree where each drawn
leaf is a column split by the share of its rows in each class (a leaf of one row is one colour;
a truncated subtree or a cluster leaf shows its mix), in the map's class colours, with a legend.

One :class:`pyqtgraph.BarGraphItem` per class (its bars: the leaves holding that class, stacked
in class order), so the legend names each class by its colour.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from manifold_studio.gui.views.palette import is_categorical, make_coloring

#: the strip's height, as a share of the tree's height
STRIP_SHARE = 0.06
#: more classes than this: no strip (a continuous target has no classes to show)
MAX_STRIP_CLASSES = 20


def leaf_class_shares(leaf_of_point: np.ndarray, codes: np.ndarray, n_leaves: int, n_classes: int) -> np.ndarray:
    """(n_leaves, n_classes): the share of each leaf's points in each class (rows sum to 1, or 0
    for a leaf without points)."""
    counts = np.zeros((n_leaves, n_classes))
    np.add.at(counts, (np.asarray(leaf_of_point, dtype=np.intp), np.asarray(codes, dtype=np.intp)), 1.0)
    total = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)


class LeafClassStrip:
    """Draws and clears the class strip and its legend on a dendrogram's plot."""

    def __init__(self, plot: pg.PlotWidget):
        self.plot = plot
        self.items: list[pg.BarGraphItem] = []
        self.names: list[str] = []
        self.shares = np.zeros((0, 0))
        self.height = 0.0  #: the strip's height in the plot's units (0: no strip)
        self.legend = None

    def clear(self) -> None:
        for item in self.items:
            self.plot.removeItem(item)
        self.items, self.names, self.shares, self.height = [], [], np.zeros((0, 0)), 0.0
        if self.legend is not None:
            self.legend.clear()
            self.legend.hide()

    def draw(self, leaf_of_point, labels, n_leaves: int, tree_height: float, title: str = "class") -> float:
        """The strip for ``labels`` (the class of each point of the run, in the order of
        ``leaf_of_point``) under ``n_leaves`` leaves; returns its height (0: none drawn)."""
        self.clear()
        if labels is None or not len(leaf_of_point) or len(labels) != len(leaf_of_point) \
                or not is_categorical(np.asarray(labels)):
            return 0.0
        coloring = make_coloring(labels, len(labels), title, kind="categorical")
        n_classes = len(coloring.colors)
        if n_classes > MAX_STRIP_CLASSES:
            return 0.0
        self.shares = leaf_class_shares(leaf_of_point, coloring.codes, n_leaves, n_classes)
        self.names = list(coloring.names)
        self.height = STRIP_SHARE * (tree_height if tree_height > 0 else 1.0)
        x = 5.0 + 10.0 * np.arange(n_leaves)
        bottom = -1.15 * self.height + np.zeros(n_leaves)
        if self.legend is None:
            self.legend = self.plot.getPlotItem().addLegend(offset=(-10, 10), labelTextSize="8pt")
        self.legend.show()
        for c in range(n_classes):
            h = self.shares[:, c] * self.height
            has = h > 0
            item = pg.BarGraphItem(x=x[has], y0=bottom[has], height=h[has], width=9.0,
                                   brush=pg.mkBrush(*coloring.rgba(c)), pen=None)
            item.setToolTip(f"{title}: {self.names[c]}")
            bottom = bottom + h
            self.plot.addItem(item)
            self.items.append(item)
            self.legend.addItem(item, self.names[c])
        return self.height
