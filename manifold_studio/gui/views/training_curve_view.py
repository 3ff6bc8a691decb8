"""Training curves of a classification run, live while it trains.

Training loops publish :class:`~manifold_studio.algorithms.curves.TrainingCurve` objects with
``progress.partial``; the main window routes them here (:mod:`manifold_studio.gui.fit_partials`)
and the view redraws the curve (mistakes per epoch, training / validation loss, SVM objective),
on a log scale when the curve asks for it. When the run is shown afterwards, the final curve is
``estimator.training_curve()``; for a model with a third-party part (its code runs in worker
processes only, never in the window's) it is the last curve its fit published.

A live curve costs one paint of the plot: the new range is settled when the curve is drawn (not
in the paint), the title and labels are set only when they change, the axes only grow and the
info line keeps its height while the fit trains (each of these laid the plot out again: a second
paint). The router draws the next curve only once this one is painted (:meth:`awaiting_paint`).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QVBoxLayout

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.gui.lazy_slot import LazyPart, LazySlot, legend_plot
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import CATEGORICAL
from manifold_studio.gui.views.view_box import settle
from manifold_studio.gui.widgets import message_label
from manifold_studio.session.isolated_fit import estimator_ids, third_party_parts


class TrainingCurveView(ResultView):
    view_id = "training_curve"
    title = "Training curve"
    area = "right"
    order = 34

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.curve: TrainingCurve | None = None
        self.n_partials = 0
        #: curves drawn (by show_partial / show_run) and the number drawn when the plot was last painted
        self.drawn = self.painted = 0
        self._published: dict[int, TrainingCurve] = {}   # run id -> the last curve its fit published
        self.info = message_label("Training curve of a classifier (mistakes or loss per epoch).")
        self._lazy_slot = LazySlot(self._make_content)   # the plot: made when first shown or drawn
        self.items: dict[str, pg.PlotDataItem] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        lay.addWidget(self._lazy_slot, 1)

    plot, plot_item, legend = LazyPart(), LazyPart(), LazyPart()

    def _make_content(self) -> pg.PlotWidget:
        plot = legend_plot(self, 0.2, (-10, 10), "9pt")
        for side in ("left", "bottom"):   # an axis that only grows: no new layout at every live curve
            self.plot_item.getAxis(side).setStyle(autoReduceTextSpace=False)
        plot.viewport().installEventFilter(self)
        return plot

    def prepare(self) -> None:
        """Build the plot now (a fit that may publish curves starts): its first curve then only
        draws, in a turn of the event loop of its own."""
        self._lazy_slot.content()

    def awaiting_paint(self) -> bool:
        """Whether the last curve drawn is not painted yet (the window's router then holds the
        next one back: never two curve redraws queued)."""
        return self.isVisible() and self._lazy_slot.built and self.painted < self.drawn

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt
        if event.type() == QEvent.Type.Paint:
            self.painted = self.drawn
        return False

    def applies_to(self, run) -> bool:
        return run is not None and run.kind == "classification"

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.info.setMinimumHeight(0)
        curve = None
        if run is not None and run.succeeded and run.estimator is not None:
            if third_party_parts(estimator_ids(run.estimator)):   # its code never runs here
                curve = self._published.get(run.id)
            else:
                try:
                    curve = run.estimator.training_curve()
                except Exception:  # noqa: BLE001 - no curve rather than a broken view
                    curve = None
        if curve is None:
            self._draw(None)
            self.info.setText("This run has no training curve." if run is not None
                              else "Training curve of a classifier (mistakes or loss per epoch).")
            return
        self._draw(curve)
        self.info.setText(f"{run.title()}: {curve.title} ({len(curve.x):,} points)")

    def show_partial(self, run, curve: TrainingCurve) -> bool:
        """Draw a curve a running fit published; returns False when ``curve`` is not one."""
        if not isinstance(curve, TrainingCurve):
            return False
        self.n_partials += 1
        if run is not None:
            self._published[run.id] = curve
        if self.info.isVisible():   # a new text may not wrap onto fewer lines: no new layout of the plot
            self.info.setMinimumHeight(self.info.height())
        self._draw(curve)
        self.info.setText(f"{run.title() if run is not None else ''}: {curve.title} — training… "
                          f"({len(curve.x):,} points)")
        return True

    def _draw(self, curve: TrainingCurve | None) -> None:
        same = (curve is not None and self.curve is not None and set(curve.series) == set(self.items)
                and curve.log_y == self.curve.log_y and curve.title == self.curve.title)
        self.curve = curve
        self.drawn += 1
        if not same:
            self.plot.clear()
            self.legend.clear()
            self.items = {}
        if curve is None:
            return
        if not same:   # set again, a label or the title lays the plot out and repaints it in full
            self.plot_item.setLogMode(x=False, y=bool(curve.log_y))
            self.plot_item.setTitle(curve.title, size="10pt")
        y_label = curve.y_label + (" (log scale)" if curve.log_y else "")
        for side, text in (("bottom", curve.x_label), ("left", y_label)):
            if not same or self.plot_item.getAxis(side).labelText != text:
                self.plot_item.setLabel(side, text)
        for i, (name, values) in enumerate(curve.series.items()):
            x, v = curve.x, values
            if curve.log_y:  # a log axis cannot show 0 or negative values
                keep = v > 0
                x, v = x[keep], v[keep]
            item = self.items.get(name)
            if item is None:
                rgb = tuple(int(c) for c in CATEGORICAL[i % len(CATEGORICAL)])
                item = self.plot.plot(x, v, pen=pg.mkPen(*rgb, width=2), name=name,
                                      symbol="o" if len(x) <= 60 else None, symbolSize=5,
                                      symbolBrush=pg.mkBrush(*rgb))
                self.items[name] = item
            else:
                item.setData(x, v)
        self.plot_item.enableAutoRange()
        settle(self.plot_item.getViewBox())   # the new range now: one paint of the plot, not two

    @property
    def series(self) -> dict[str, np.ndarray]:
        return {} if self.curve is None else dict(self.curve.series)
