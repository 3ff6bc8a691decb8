"""Extension quality report: the experiment of thesis section 5.4 (table 5.1, figure 5.2) for
the current run's method and data.

For several substitution fractions it compares how far a point moves when a fraction of the
training set is swapped (the method's own variability: F∪R1 vs F∪R2 after the best affine
alignment) with how far its out-of-sample extension lands from its in-sample embedding. The
view builds the request; :func:`~manifold_studio.extend.tasks.quality_report_task` runs
on a worker thread; the report (JSON-friendly, kept in ``run.meta["extension_quality"]``) is
drawn as two plots with 95% confidence intervals, a table and one plain sentence.
"""
from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.extend.tasks import quality_report_task
from manifold_studio.gui.lazy_slot import LazySlot
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.widgets import (
    ERROR_STYLE,
    button_row,
    column,
    heading_label,
    message_label,
    seed_spin_box,
)
from manifold_studio.session.lifecycle import run_extends_in_worker

META_KEY = "extension_quality"
SERIES = {  # name: (legend, colour, symbol, x offset)
    "variability": ("map moves when training points are swapped", (52, 101, 164), "o", -0.07),
    "extension_error": ("extension vs in-sample position", (230, 120, 20), "s", 0.07),
    "difference": ("variability − extension error", (60, 140, 60), "d", 0.0),
}
TABLE_COLUMNS = ("substituted", "points", "variability", "extension error",
                 "difference [95% CI]")


def _parse_fractions(text: str) -> list[float]:
    """'1, 2, 5' (percent) -> [0.01, 0.02, 0.05]; raises ValueError with a clear message."""
    parts = [p for p in text.replace(";", ",").replace("%", "").replace(" ", ",").split(",") if p.strip()]
    try:
        values = sorted({float(p) for p in parts})
    except ValueError:
        raise ValueError("Fractions must be numbers in percent, e.g. 1, 2, 5, 10, 20.") from None
    if not values or any(not 0 < v < 50 for v in values):
        raise ValueError("Fractions must be percentages strictly between 0 and 50, e.g. 1, 2, 5, 10, 20.")
    return [v / 100.0 for v in values]


class ExtensionQualityView(ResultView):
    view_id = "extension_quality"
    title = "Extension quality"
    area = "bottom"
    order = 70

    #: a report was computed and drawn (the report dict)
    reportReady = Signal(object)
    reportFailed = Signal(str)   #: the message shown when the experiment failed (e.g. a worker process died)

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.report: dict | None = None
        self.error_bars: dict[str, pg.ErrorBarItem] = {}
        self._curves: list = []

        self.heading = heading_label("Fit an embedding method first.")
        self.sentence_label = message_label()
        self.sentence_label.setStyleSheet("font-size: 10.5pt; color: #1a1a1a;")

        self.fractions_edit = QLineEdit("1, 2, 5, 10, 20")
        self.fractions_edit.setToolTip("Substitution fractions |R1|/n in percent (each below 50).")
        self.repeats_spin = QSpinBox()
        self.repeats_spin.setRange(1, 50)
        self.repeats_spin.setValue(3)
        self.repeats_spin.setToolTip("Random splits F ∪ R1 ∪ R2 per fraction.")
        self.heldout_spin = QSpinBox()
        self.heldout_spin.setRange(1, 200)
        self.heldout_spin.setValue(10)
        self.heldout_spin.setToolTip("Points of F left out one at a time per split (one refit each).")
        self.points_spin = QSpinBox()
        self.points_spin.setRange(20, 100_000)
        self.points_spin.setValue(400)
        self.points_spin.setGroupSeparatorShown(True)
        self.points_spin.setToolTip("Random points of the run's data used (every refit costs a full fit).")
        self.seed_spin = seed_spin_box("Random seed of the splits.")
        self.cost_label = QLabel("")
        self.cost_label.setWordWrap(True)
        self.cost_label.setStyleSheet("color: #555;")
        for w in (self.repeats_spin, self.heldout_spin):
            w.valueChanged.connect(lambda _v: self._update_cost())
        self.fractions_edit.textChanged.connect(lambda _t: self._update_cost())
        self.compute_button = QPushButton("Compute report")
        self.compute_button.setToolTip("Run the section 5.4 experiment for this run's method and "
                                       "parameters on a worker thread.")
        self.compute_button.clicked.connect(lambda: self.compute())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        form = QFormLayout()
        form.addRow("Fractions (%):", self.fractions_edit)
        form.addRow("Repeats:", self.repeats_spin)
        form.addRow("Held out / repeat:", self.heldout_spin)
        form.addRow("Points used:", self.points_spin)
        form.addRow("Seed:", self.seed_spin)
        settings = column(form, button_row(self.compute_button, self.cancel_button), self.cost_label, None)
        settings.setMaximumWidth(260)

        self._figure: dict = {}   # the two plots and their legends, made when first shown or drawn
        self._plots_slot = plots = LazySlot(self._make_figure)

        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(TABLE_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(plots, "Figure (5.2)")
        self.tabs.addTab(self.table, "Table (5.1)")

        body = QHBoxLayout()
        body.addWidget(settings)
        body.addWidget(self.tabs, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.setSpacing(2)
        lay.addWidget(self.heading)
        lay.addWidget(self.sentence_label)
        lay.addLayout(body, 1)
        self._update_cost()
        self._update_enabled()

    def _make_figure(self) -> QWidget:
        distance, difference = self._make_plot("distance (%)"), self._make_plot("difference (%)")
        difference.getPlotItem().addLine(y=0, pen=pg.mkPen(120, 120, 120, width=1, style=Qt.PenStyle.DashLine))
        self._figure = {
            "distance_plot": distance, "difference_plot": difference,
            "distance_legend": distance.getPlotItem().addLegend(offset=(8, 5), labelTextSize="8pt"),
            "difference_legend": difference.getPlotItem().addLegend(offset=(8, 5), labelTextSize="8pt")}
        plots = QWidget()
        pl = QHBoxLayout(plots)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(distance, 1)
        pl.addWidget(difference, 1)
        return plots

    def _part(self, name: str):
        self._plots_slot.content()
        return self._figure[name]

    distance_plot = property(lambda self: self._part("distance_plot"))
    difference_plot = property(lambda self: self._part("difference_plot"))
    distance_legend = property(lambda self: self._part("distance_legend"))
    difference_legend = property(lambda self: self._part("difference_legend"))

    @staticmethod
    def _make_plot(ylabel: str) -> pg.PlotWidget:
        plot = pg.PlotWidget()
        plot.setMinimumHeight(120)
        item = plot.getPlotItem()
        item.showGrid(x=False, y=True, alpha=0.2)
        item.setLabel("left", ylabel)
        item.getAxis("left").setToolTip("Distances in percent of the map's size (root mean square distance "
                                        "of the points to their centre).")
        item.setLabel("bottom", "share of training points substituted")
        item.setMouseEnabled(x=False, y=False)
        item.hideButtons()
        item.getAxis("left").enableAutoSIPrefix(False)
        return plot

    # -- ResultView -----------------------------------------------------------------------
    def applies_to(self, run) -> bool:
        if run is None or not run.succeeded or run.estimator is None:
            return False
        return run.kind == "embedding" or hasattr(run.estimator, "extend_embedding")

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        if run is None or not self.applies_to(run):
            self.heading.setText("Fit an embedding method (or spectral clustering) first.")
        else:
            self.heading.setText(f"How good is the out-of-sample extension of {run.title()}? "
                                 f"({run.algorithm_name or run.algorithm_id}, {run.params_text()})")
        self.draw(run.meta.get(META_KEY) if run is not None else None)
        self._update_enabled()

    def _n_available(self, run) -> int:
        if run is None or self.window is None:
            return 0
        try:
            return int(self.window.session.training_data(run)[0].shape[0])
        except Exception:  # noqa: BLE001 - e.g. the data set was removed
            return 0

    # -- compute --------------------------------------------------------------------------
    def report_blocker(self) -> str:
        if self.run is None or self.report is None:
            return f"{self.title} draws nothing yet: press Compute first."
        return ""

    def _update_enabled(self) -> None:
        ok = self.run is not None and self.applies_to(self.run)
        self.compute_button.setEnabled(ok and not self.busy)
        self.cancel_button.setEnabled(self.busy)

    def _update_cost(self) -> None:
        try:
            k = len(_parse_fractions(self.fractions_edit.text()))
        except ValueError as exc:
            self.cost_label.setStyleSheet(ERROR_STYLE)
            self.cost_label.setText(str(exc))
            self.compute_button.setEnabled(False)
            return
        self.cost_label.setStyleSheet("color: #555;")
        fits = k * self.repeats_spin.value() * (2 + self.heldout_spin.value())
        self.cost_label.setText(f"About {fits:,} fits of the method.")
        self._update_enabled()

    def compute(self):
        """Start the experiment for the current run on a worker thread. Returns the Job."""
        run, window = self.run, self.window
        if run is None or not self.applies_to(run) or self.busy:
            return None
        try:
            fractions = _parse_fractions(self.fractions_edit.text())
            X, _y = window.session.training_data(run)
            # the run's estimator as fitted (its chain too); a third-party part (or a run fitted in a
            # worker) is refitted in worker processes and extended in others, never in this one
            estimator = window.session.run_estimator(run)
            isolated = run_extends_in_worker(run) or window.run_controls.isolated_for(run.algorithm_id)
        except Exception as exc:  # noqa: BLE001 - say why, start nothing
            window.report_error(f"Cannot compute the extension quality report: {exc}")
            return None
        task = functools.partial(quality_report_task, None, dict(run.params), X, fractions=fractions,
                                 estimator=estimator, isolated=isolated,
                                 n_repeats=self.repeats_spin.value(), n_heldout=self.heldout_spin.value(),
                                 max_points=self.points_spin.value(), random_state=self.seed_spin.value(),
                                 distances=window.session.dataset(run.dataset_name).distance_matrix and run.source_run is None)
        rid = run.id
        self.sentence_label.setText("Computing… (each refit is a full fit of the method)")
        return self.start_own_job(task, title=f"Extension quality of run #{rid}",
                                  on_success=lambda report, rid=rid: self._done(rid, report),
                                  on_failure=lambda msg, detail, rid=rid: self._failed(rid, msg, detail),
                                  on_cancel=lambda rid=rid: self._cancelled(rid))

    def _done(self, run_id: int, report: dict) -> None:
        run = self.window.session.runs.get(run_id)
        if run is None:
            return
        run.meta[META_KEY] = report
        self.window.session.log(f"Extension quality of {run.title()}: {report['sentence']}", run_id=run_id)
        if self.run is run:
            self.draw(report)
        self.reportReady.emit(report)

    def _failed(self, run_id: int, message: str, detail: str) -> None:
        text = f"The extension quality report of run #{run_id} failed: {message}"
        self.window.report_error(text, detail)
        if self.run is not None and self.run.id == run_id:
            self.draw(self.run.meta.get(META_KEY))
        self.reportFailed.emit(text)

    def _cancelled(self, run_id: int) -> None:
        self.window.show_status(f"Extension quality report of run #{run_id} cancelled.")
        if self.run is not None and self.run.id == run_id:
            self.draw(self.run.meta.get(META_KEY))

    # -- drawing --------------------------------------------------------------------------
    def series(self, name: str):
        """(mean, low, high) arrays of one series of the shown report (for tests)."""
        rows = (self.report or {}).get("rows", [])
        arr = np.array([r[name] for r in rows], dtype=float).reshape(-1, 3)
        return arr[:, 0], arr[:, 1], arr[:, 2]

    def _clear(self) -> None:
        if self._plots_slot.built:   # nothing drawn yet otherwise
            self.distance_legend.clear()
            self.difference_legend.clear()
        for item, plot in self._curves:
            plot.removeItem(item)
        self._curves = []
        self.error_bars = {}
        self.table.setRowCount(0)

    def draw(self, report: dict | None) -> None:
        self._clear()
        self.report = report
        if not report or not report.get("rows"):
            self.sentence_label.setText("")
            if self.run is not None and self.applies_to(self.run):
                self.sentence_label.setText(
                    "<i>No report yet for this run: press Compute report. It refits the method many times "
                    "to compare where the extension places a point with where refitting would.</i>")
            return
        rows = report["rows"]
        x = np.arange(len(rows), dtype=float)
        ticks = [[(i, f"{r['fraction']:.0%}" if r["fraction"] >= 0.01 else f"{r['fraction']:.1%}")
                  for i, r in enumerate(rows)]]
        for name, plot, legend in (("variability", self.distance_plot, self.distance_legend),
                                   ("extension_error", self.distance_plot, self.distance_legend),
                                   ("difference", self.difference_plot, self.difference_legend)):
            label, color, symbol, dx = SERIES[name]
            mean, lo, hi = (100.0 * v for v in self.series(name))  # drawn in percent of the map's size
            xs = x + dx
            bars = pg.ErrorBarItem(x=xs, y=mean, top=np.maximum(hi - mean, 0), bottom=np.maximum(mean - lo, 0),
                                   beam=0.12, pen=pg.mkPen(*color, width=1.5))
            curve = pg.PlotDataItem(xs, mean, pen=pg.mkPen(*color, width=1.5), symbol=symbol, symbolSize=8,
                                    symbolBrush=pg.mkBrush(*color), symbolPen=None)
            plot.addItem(bars)
            plot.addItem(curve)
            legend.addItem(curve, label + " (95% CI)")
            self._curves += [(bars, plot), (curve, plot)]
            self.error_bars[name] = bars
        for plot in (self.distance_plot, self.difference_plot):
            item = plot.getPlotItem()
            item.getAxis("bottom").setTicks(ticks)
            item.setXRange(-0.5, len(rows) - 0.5, padding=0)
            item.enableAutoRange(axis="y")
        self.sentence_label.setText(report.get("sentence", ""))
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            var, err, diff = r["variability"], r["extension_error"], r["difference"]
            cells = (f"{r['fraction']:.1%} ({r['n_substituted']:,} points)", f"{r['n_points']:,}",
                     f"{var[0]:.2%}", f"{err[0]:.2%}", f"{diff[0]:+.2%} [{diff[1]:+.2%}, {diff[2]:+.2%}]")
            for j, text in enumerate(cells):
                self.table.setItem(i, j, QTableWidgetItem(text))
        self.table.setToolTip(f"{report.get('n_points', '?')} points of {report.get('n_available', '?')}, "
                              f"{report.get('n_repeats', '?')} repeats, {report.get('n_heldout', '?')} "
                              f"held out per repeat; computed in {report.get('time_s', 0):.1f} s.")
