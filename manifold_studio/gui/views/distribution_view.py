"""Distribution of one column per class: a histogram with a density curve per class, or box
plots, or violins (:func:`~manifold_studio.analysis.feature_stats.distribution`).

A text column (the label) is drawn as one bar per category with its count.

Selection (linked brushing): in the histogram (and the category counts) a rectangle selects the rows whose value lies in
its x range (whatever its height) and the selected rows are drawn as dark bars over the
histogram; in box / violin plots every row is the point (class position, value), a rectangle
or lasso selects those inside and selected rows are ringed.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QSpinBox

from manifold_studio.analysis.feature_stats import distribution
from manifold_studio.gui.views.feature_base import FeatureView, column_combo, refill
from manifold_studio.gui.views.selection_overlay import RECT, SelectionOverlay
from manifold_studio.gui.widgets import message_label

HISTOGRAM, BOX, VIOLIN = "histogram", "box plot", "violin"


def group_color(coloring, rows, alpha=255):
    """The colour of a group of rows (its first row's class colour)."""
    if coloring.mode == "none" or not len(rows):
        return (90, 120, 200, alpha)
    return coloring.rgba(int(coloring.codes[rows[0]]), alpha)


class DistributionSelection(SelectionOverlay):
    def __init__(self, view):
        super().__init__(view.window, view.plot, view.points)
        self.view = view
        self.set_mode(RECT)

    def rows_in_rect(self, x0, y0, x1, y1, xy, rows):
        if self.view.mode != HISTOGRAM and not self.view.categorical:
            return super().rows_in_rect(x0, y0, x1, y1, xy, rows)
        xa, xb = sorted((x0, x1))
        return rows[(xy[:, 0] >= xa) & (xy[:, 0] <= xb)]

    def draw_highlight(self, xy, drawn):
        view = self.view
        as_bars = view.categorical or (view.mode == HISTOGRAM and view.result is not None)
        if not as_bars:
            if isinstance(self._highlight, pg.BarGraphItem):
                self.plot_item.removeItem(self._highlight)
                self._highlight = None
            return super().draw_highlight(xy, drawn)
        idx = np.flatnonzero(drawn)
        self._highlighted = idx
        if self._highlight is not None:
            self.plot_item.removeItem(self._highlight)
            self._highlight = None
        if idx.size:
            if view.categorical:  # bars of width 0.7 centred on each category
                counts = np.bincount(xy[idx, 0].astype(np.intp), minlength=len(view.categories))
                x0, width = np.arange(len(counts)) - 0.35, np.full(len(counts), 0.7)
            else:
                edges = view.result.edges
                counts = np.histogram(xy[idx, 0], bins=edges)[0]
                x0, width = edges[:-1], np.diff(edges)
            view.selected_counts = counts
            self._highlight = pg.BarGraphItem(x0=x0, width=width, height=counts,
                                              brush=pg.mkBrush(20, 20, 20, 170), pen=None)
            self._highlight.setZValue(30)
            self.plot_item.addItem(self._highlight)
        else:
            view.selected_counts = np.zeros(0, dtype=np.int64)


class DistributionView(FeatureView):
    view_id = "distribution"
    title = "Distribution"
    order = 60
    text_labels = True

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result = None
        self.items: list = []
        self.selected_counts = np.zeros(0, dtype=np.int64)
        self._xy, self._rows = np.zeros((0, 2)), np.zeros(0, dtype=np.intp)
        self.info = message_label("The distribution of a column, per class.")
        self.column_combo = column_combo("distribution_column", "The column to show: a feature, the "
                                         "label (if numeric) or a run's result column.")
        self.categorical = False  # a text column is drawn: counts per category
        self.categories, self.category_counts = np.zeros(0, dtype=str), np.zeros(0, dtype=np.int64)
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("distribution_mode")
        self.mode_combo.addItems([HISTOGRAM, BOX, VIOLIN])
        self.bins = QSpinBox()
        self.bins.setRange(0, 500)
        self.bins.setSpecialValueText("auto")
        self.bins.setToolTip("Number of histogram bins (auto: numpy's 'auto' rule).")
        self.column_combo.currentIndexChanged.connect(lambda _i: self.draw())
        self.mode_combo.currentIndexChanged.connect(lambda _i: self.render())
        self.bins.valueChanged.connect(lambda _v: self.draw())
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.addLegend(offset=(-10, 10))
        self.lay_out(["Column:", self.column_combo, self.mode_combo, "bins:", self.bins], self.plot,
                     lambda: DistributionSelection(self))

    @property
    def mode(self) -> str:
        return self.mode_combo.currentText()

    def columns_changed(self, names) -> None:
        refill(self.column_combo, names)

    def points(self):
        name = self.dataset_name if self.result is not None or self.categorical else None
        return self._xy, self._rows, name

    def _clear(self) -> None:
        for item in self.items:
            self.plot.removeItem(item)
        self.items = []
        self.plot.getPlotItem().legend.clear()

    def _add(self, item, name=None):
        self.plot.addItem(item)
        self.items.append(item)
        if name is not None:
            self.plot.getPlotItem().legend.addItem(item, name)

    def draw(self) -> None:
        self.result = None
        name = self.column_combo.currentText()
        col = self.column(name) if name else None
        if col is not None and not col.numeric:
            return self._draw_categories(col)
        values = self.values(name) if name else None
        if values is None:
            self.info.setText("The distribution of a column, per class: load a data set.")
            return self.render()
        self.compute(distribution, values, self.labels, bins=self.bins.value() or "auto", column=name,
                     on_done=self._computed, title=f"Distribution of {name}")

    def _computed(self, result, message: str) -> None:
        self.result, self.categorical = result, False
        if message:
            self.info.setText(message)
        self.render()

    def render(self) -> None:
        """Draw :attr:`result` in the chosen mode."""
        if self.categorical:
            return self.draw()
        self._clear()
        self._xy, self._rows = np.zeros((0, 2)), np.zeros(0, dtype=np.intp)
        if self.result is None:
            return self._done()
        res, coloring = self.result, self.class_coloring()
        name = res.column
        missing = f"; {res.n_missing:,} missing values left out" if res.n_missing else ""
        self.info.setText(f"<b>{name}</b> of {self.dataset_name}{self.column_note(name)} by "
                          f"{len(res.classes)} {'class' if len(res.classes) == 1 else 'classes'}{missing}.")
        if self.mode == HISTOGRAM:
            self._draw_histogram(res, coloring)
        else:
            self._draw_boxes(res, coloring, violin=self.mode == VIOLIN)
        self._done()

    def _draw_histogram(self, res, coloring) -> None:
        edges = res.edges
        for i, cls in enumerate(res.classes):
            color = group_color(coloring, res.rows[i])
            bars = pg.BarGraphItem(x0=edges[:-1], width=np.diff(edges), height=res.counts[i],
                                   brush=pg.mkBrush(*color[:3], 90), pen=pg.mkPen(*color[:3], 200))
            self._add(bars, cls)
            curve = res.curve_counts(i)
            if curve is not None:
                self._add(pg.PlotCurveItem(res.grid, curve, pen=pg.mkPen(*color[:3], 255, width=2)))
        self.plot.setLabel("bottom", res.column)
        self.plot.setLabel("left", "count")
        self.plot.getPlotItem().getAxis("bottom").setTicks(None)
        rows = np.concatenate(res.rows)
        self._rows = rows
        self._xy = np.column_stack([self.values(res.column)[rows], np.zeros(rows.size)])

    def _draw_boxes(self, res, coloring, violin: bool) -> None:
        xs, rows_all = [], []
        values = self.values(res.column)
        for i, cls in enumerate(res.classes):
            color = group_color(coloring, res.rows[i])
            box = res.boxes[i]
            if box is None:
                continue
            if violin and res.violins[i] is not None:
                y, dens = res.violins[i]
                half = 0.4 * dens / dens.max()
                shape = pg.PlotCurveItem(np.concatenate([i - half, (i + half)[::-1]]),
                                         np.concatenate([y, y[::-1]]), pen=pg.mkPen(*color[:3], 255),
                                         brush=pg.mkBrush(*color[:3], 90), fillLevel=None)
                shape.setFillLevel(None)
                shape.setBrush(pg.mkBrush(*color[:3], 90))
                self._add(shape)
            width = 0.12 if violin else 0.5
            rect = pg.BarGraphItem(x=[i], y0=[box.q1], height=[box.q3 - box.q1], width=width,
                                   brush=pg.mkBrush(*color[:3], 60 if violin else 120), pen=pg.mkPen(*color[:3], 255))
            self._add(rect)  # no legend entry: the axis names each class under its box (a legend covered the third)
            pen = pg.mkPen(30, 30, 30, width=2)
            self._add(pg.PlotCurveItem([i - width / 2, i + width / 2], [box.median] * 2, pen=pen))
            self._add(pg.PlotCurveItem([i, i, i, i, i], [box.whisker_low, box.q1, np.nan, box.q3, box.whisker_high],
                                       pen=pg.mkPen(60, 60, 60), connect="finite"))
            if box.outliers.size:
                self._add(pg.ScatterPlotItem(np.full(box.outliers.size, float(i)), box.outliers, size=5,
                                             pen=None, brush=pg.mkBrush(*color[:3], 200)))
            xs.append(np.full(len(res.rows[i]), float(i)))
            rows_all.append(res.rows[i])
        if rows_all:
            self._rows = np.concatenate(rows_all)
            self._xy = np.column_stack([np.concatenate(xs), values[self._rows]])
        self.plot.setLabel("bottom", self.dataset.label_name or "class" if self.labels is not None else "")
        self.plot.setLabel("left", res.column)
        self.plot.getPlotItem().getAxis("bottom").setTicks([[(float(i), c) for i, c in enumerate(res.classes)]])

    def _draw_categories(self, col) -> None:
        """A text column (the label): one bar per category with its count; a rectangle over
        bars selects their rows."""
        self._clear()
        text = np.asarray(col.values).astype(str)
        self.categories, codes, self.category_counts = np.unique(text, return_inverse=True, return_counts=True)
        codes = codes.ravel()
        coloring = self.class_coloring()
        for i, cat in enumerate(self.categories):
            rows = np.flatnonzero(codes == i)
            self._add(pg.BarGraphItem(x=[i], height=[self.category_counts[i]], width=0.7,
                                      brush=pg.mkBrush(*group_color(coloring, rows)[:3], 160), pen=None), cat)
        self._rows = np.arange(len(text))
        self._xy = np.column_stack([codes.astype(float), np.zeros(len(text))])
        self.result = None
        self.categorical = True
        self.plot.setLabel("bottom", col.name)
        self.plot.setLabel("left", "count")
        self.plot.getPlotItem().getAxis("bottom").setTicks([[(float(i), c) for i, c in enumerate(self.categories)]])
        self.info.setText(f"<b>{col.name}</b> of {self.dataset_name}: {len(self.categories)} categories.")
        self._done()

    def _done(self) -> None:
        # the range of what this mode drew only: the selection's highlight of the previous mode
        # (a histogram's x is the value, a box or violin's the class position) must not widen it
        if self.items:
            self.plot.getPlotItem().getViewBox().autoRange(items=self.items)
        if self.selection_overlay is not None:
            self.selection_overlay.refresh()

    @property
    def drawn_boxes(self) -> list[tuple[float, float]]:
        """(q1, q3) of every box drawn, from the drawn items (for tests)."""
        out = []
        for item in self.items:
            if isinstance(item, pg.BarGraphItem) and item.opts.get("y0") is not None:
                y0 = float(np.asarray(item.opts["y0"])[0])
                out.append((y0, y0 + float(np.asarray(item.opts["height"])[0])))
        return out

    @property
    def drawn_counts(self) -> list[np.ndarray]:
        """Bar heights of every histogram drawn (for tests)."""
        return [np.asarray(item.opts["height"]) for item in self.items
                if isinstance(item, pg.BarGraphItem) and item.opts.get("x0") is not None]

    @property
    def drawn_counts_by_category(self) -> list[np.ndarray]:
        """Bar heights of the category counts drawn, one per category (for tests)."""
        return [np.asarray(item.opts["height"]) for item in self.items
                if isinstance(item, pg.BarGraphItem) and item.opts.get("x") is not None]
