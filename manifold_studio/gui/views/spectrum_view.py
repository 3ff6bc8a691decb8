"""Eigenvalue spectrum of a spectral result (every estimator with ``eigenvalues_``; PCA too).

Bars: the kept eigenvalues (blue), the eigenvalues the method skips by construction (grey,
e.g. the constant eigenvector of Laplacian eigenmaps or LLE), and negative eigenvalues (red:
for MDS / Isomap they mean the (geodesic) distances are not Euclidean). The text under the plot
gives the values, each one's share of the kernel's trace and the explained fraction. The view
only reads fitted attributes; it computes nothing.
"""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.widgets import heading_label, message_label

KEPT_COLOR = (52, 101, 164)
SKIPPED_COLOR = (160, 160, 160)
NEGATIVE_COLOR = (204, 0, 0)
#: at most this many bars of negative eigenvalues (the most negative first)
MAX_NEGATIVE_BARS = 30


def components_for_fraction(ratios, fraction: float) -> int | None:
    """The smallest M whose first M explained-variance ratios add up to ``fraction`` (None when
    the kept components do not reach it)."""
    cum = np.cumsum(np.asarray(ratios, dtype=float))
    hit = np.flatnonzero(cum >= fraction - 1e-12)
    return int(hit[0]) + 1 if hit.size else None


def spectrum_of(estimator) -> dict | None:
    """The eigenvalues an estimator exposes, as plain arrays (None when it has none)."""
    if estimator is None:
        return None
    vals = getattr(estimator, "eigenvalues_", None)
    source = "eigenvalues_"
    if vals is None:
        vals = getattr(estimator, "explained_variance_", None)  # PCA: covariance eigenvalues
        source = "explained_variance_"
    if vals is None:
        return None
    vals = np.atleast_1d(np.asarray(vals, dtype=float))
    skipped = np.atleast_1d(np.asarray(getattr(estimator, "discarded_eigenvalues_", np.empty(0)), dtype=float))
    negative = np.atleast_1d(np.asarray(getattr(estimator, "negative_eigenvalues_", np.empty(0)), dtype=float))
    n_negative = int(getattr(estimator, "n_negative_eigenvalues_", negative.size) or 0)
    trace = float(getattr(estimator, "kernel_trace_", float("nan")))
    explained = float("nan")
    fn = getattr(estimator, "explained_fraction", None)
    if callable(fn):
        try:
            explained = float(fn())
        except Exception:  # noqa: BLE001 - a missing piece only hides the figure
            explained = float("nan")
    ratios = getattr(estimator, "explained_variance_ratio_", None)
    if ratios is not None:
        ratios = np.asarray(ratios, dtype=float)
        explained = float(ratios.sum())
    elif np.isfinite(trace) and trace > 0:
        ratios = vals / trace
    return {"values": vals, "skipped": skipped, "negative": negative, "n_negative": n_negative,
            "trace": trace, "explained": explained, "ratios": ratios, "source": source,
            "solver": getattr(estimator, "eigen_solver_", "")}


class SpectrumView(ResultView):
    view_id = "spectrum"
    title = "Eigenvalues"
    area = "right"
    order = 60

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.spectrum: dict | None = None
        self.heading = heading_label("No spectral result selected.")
        self.log_box = QCheckBox("log scale (|λ|)")
        self.log_box.setToolTip("Plot the absolute values on a logarithmic axis (small eigenvalues become visible).")
        self.log_box.toggled.connect(self._draw)
        self.plot = pg.PlotWidget()
        self.plot.setMinimumHeight(140)
        self.plot.showGrid(x=False, y=True, alpha=0.2)
        self.plot_item = self.plot.getPlotItem()
        self.plot_item.setLabel("bottom", "eigenvalue index (largest first)")
        self.plot_item.setLabel("left", "eigenvalue λ")
        self.plot_item.setMouseEnabled(x=False, y=False)
        self.legend = self.plot_item.addLegend(offset=(-10, 10), labelTextSize="8pt",
                                               brush=pg.mkBrush(255, 255, 255, 220), pen=pg.mkPen(180, 180, 180))
        self.bars: dict[str, pg.BarGraphItem] = {}
        self.details = message_label()
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # PCA: the cumulative explained variance and the M that keeps a chosen share
        self.cumulative_plot = pg.PlotWidget()
        self.cumulative_plot.setMinimumHeight(120)
        self.cumulative_plot.showGrid(x=False, y=True, alpha=0.2)
        cp = self.cumulative_plot.getPlotItem()
        cp.setLabel("left", "cumulative (%)")
        cp.setLabel("bottom", "number of components M")
        cp.setMouseEnabled(x=False, y=False)
        cp.hideButtons()
        self.keep_spin = QDoubleSpinBox()
        self.keep_spin.setRange(1.0, 100.0)
        self.keep_spin.setDecimals(1)
        self.keep_spin.setValue(90.0)
        self.keep_spin.setSuffix(" %")
        self.keep_spin.setToolTip("Share of the variance to keep: the view gives the number of components it takes.")
        self.keep_spin.valueChanged.connect(lambda _v: self._draw_cumulative())
        self.keep_label = QLabel("")
        self.keep_label.setWordWrap(True)
        keep_row = QHBoxLayout()
        keep_row.addWidget(QLabel("Keep:"))
        keep_row.addWidget(self.keep_spin)
        keep_row.addWidget(self.keep_label, 1)
        self.cumulative_box = QWidget()
        cl = QVBoxLayout(self.cumulative_box)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.cumulative_plot, 1)
        cl.addLayout(keep_row)
        self.keep_components: int | None = None
        top = QHBoxLayout()
        top.addWidget(self.heading, 1)
        top.addWidget(self.log_box)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        # the spectrum, the cumulative curve and the notes share the dock's height (a splitter the
        # user can drag), so a short dock shrinks them instead of cutting the spectrum's axis title
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        details_area = QScrollArea()
        details_area.setWidgetResizable(True)
        details_area.setFrameShape(QScrollArea.Shape.NoFrame)
        details_area.setWidget(self.details)
        details_area.setMinimumHeight(40)
        for widget, stretch in ((self.plot, 3), (self.cumulative_box, 2), (details_area, 1)):
            self.splitter.addWidget(widget)
            self.splitter.setStretchFactor(self.splitter.count() - 1, stretch)
        lay.addWidget(self.splitter, 1)

    # -- ResultView -----------------------------------------------------------------------
    def applies_to(self, run) -> bool:
        return run is not None and run.succeeded and spectrum_of(run.estimator) is not None

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.spectrum = spectrum_of(run.estimator) if run is not None and run.succeeded else None
        if self.spectrum is None:
            self.heading.setText("No spectral result selected: fit a spectral method "
                                 "(kernel PCA, MDS, Isomap, LLE, eigenmaps, spectral clustering).")
        else:
            self.heading.setText(f"{run.title()}: {self.spectrum['values'].size} eigenvalue(s) kept")
        self._draw()

    # -- drawing --------------------------------------------------------------------------
    def bar_heights(self, name: str) -> np.ndarray:
        """Heights of one group of bars ("kept", "skipped", "negative"), for tests."""
        item = self.bars.get(name)
        return np.zeros(0) if item is None else np.asarray(item.opts["height"], dtype=float)

    def _draw(self, *_):
        for item in self.bars.values():
            self.plot.removeItem(item)
        self.bars = {}
        self.legend.clear()
        sp = self.spectrum
        if sp is None:
            self.details.setText("")
            self._draw_cumulative()
            return
        log = self.log_box.isChecked()
        self.plot_item.setLogMode(x=False, y=False)
        self.plot_item.setLabel("left", "|λ| (log₁₀)" if log else "eigenvalue λ")
        groups = []
        skipped, kept = sp["skipped"], sp["values"]
        negative = np.sort(sp["negative"])[:MAX_NEGATIVE_BARS][::-1]  # closest to zero first
        pos = 1
        if skipped.size:
            groups.append(("skipped", "skipped by the method", skipped, pos, SKIPPED_COLOR))
            pos += skipped.size
        pos_kept, nonpos_kept = kept[kept > 0], kept[kept <= 0]
        groups.append(("kept", "kept (the map's axes)", pos_kept, pos, KEPT_COLOR))
        pos += pos_kept.size
        if nonpos_kept.size:
            groups.append(("kept_nonpositive", "kept but ≤ 0 (no information)", nonpos_kept, pos, NEGATIVE_COLOR))
            pos += nonpos_kept.size
        if negative.size:
            pos += 1  # a gap: these are the bottom of the spectrum, not the next ones
            groups.append(("negative", "negative (not Euclidean)", negative, pos, NEGATIVE_COLOR))
        for name, label, values, start, color in groups:
            if not values.size:
                continue
            heights = np.log10(np.maximum(np.abs(values), 1e-300)) if log else values
            x = np.arange(start, start + values.size)
            brush = pg.mkBrush(*color, 200)
            item = pg.BarGraphItem(x=x, height=heights, width=0.75, brush=brush,
                                   pen=pg.mkPen(*color, width=1))
            self.plot.addItem(item)
            self.legend.addItem(item, label)
            self.bars[name] = item
        # ticks: the rank of each top eigenvalue; the negative ones are the bottom of the
        # spectrum, ranked from the last (n = number of points): n-k+1 ... n
        ticks = []
        for name, item in self.bars.items():
            xs = [int(x) for x in item.opts["x"]]
            if name == "negative":
                k = len(xs)
                ticks += [(xs[0], f"n−{k - 1}" if k > 1 else "n")] + ([(xs[-1], "n")] if k > 1 else [])
            else:
                step = 1 if len(xs) <= 15 else 5
                ticks += [(x, str(x)) for x in xs if x % step == 0 or x == xs[0]]
        self.plot_item.getAxis("bottom").setTicks([ticks] if ticks else None)
        self.plot_item.setLabel("bottom", "eigenvalue rank (largest first; n = number of points)"
                                if "negative" in self.bars else "eigenvalue rank (largest first)")
        self.plot_item.enableAutoRange()
        self.plot_item.autoRange()
        # headroom above the tallest bar, so the legend (top right) never hides a bar
        all_heights = np.concatenate([np.asarray(i.opts["height"], dtype=float) for i in self.bars.values()])
        if all_heights.size and np.isfinite(all_heights).all():
            low, high = min(0.0, all_heights.min()), max(0.0, all_heights.max())
            span = (high - low) or 1.0
            self.plot_item.setYRange(low - 0.02 * span, high + 0.45 * span, padding=0)
        self.details.setText(self._details_html(sp))
        self._draw_cumulative()

    def _draw_cumulative(self) -> None:
        """Cumulative explained variance of a PCA-like result, with the M for the chosen share."""
        sp = self.spectrum
        ratios = None if sp is None or sp["source"] != "explained_variance_" else sp["ratios"]
        self.cumulative_box.setVisible(ratios is not None)
        item = self.cumulative_plot.getPlotItem()
        item.clear()
        self.keep_components = None
        if ratios is None:
            return
        cum = 100.0 * np.cumsum(ratios)
        m = np.arange(1, len(cum) + 1)
        item.plot(m, cum, pen=pg.mkPen(*KEPT_COLOR, width=2), symbol="o", symbolSize=5,
                  symbolBrush=pg.mkBrush(*KEPT_COLOR), symbolPen=None)
        share = self.keep_spin.value()
        item.addLine(y=share, pen=pg.mkPen(204, 120, 0, width=1, style=Qt.PenStyle.DashLine))
        self.keep_components = components_for_fraction(ratios, share / 100.0)
        if self.keep_components is not None:
            item.addLine(x=self.keep_components, pen=pg.mkPen(204, 120, 0, width=1, style=Qt.PenStyle.DashLine))
            self.keep_label.setText(f"<b>M = {self.keep_components}</b> component(s) keep {share:g}% of the "
                                    f"variance ({cum[self.keep_components - 1]:.1f}%).")
        else:
            self.keep_label.setText(f"The {len(cum)} kept component(s) explain {cum[-1]:.1f}%: fit with more "
                                    f"components to reach {share:g}%.")
        item.setYRange(0, 100, padding=0.02)
        item.setXRange(0.5, len(cum) + 0.5, padding=0)

    @staticmethod
    def _details_html(sp: dict) -> str:
        vals, ratios = sp["values"], sp["ratios"]
        parts = []
        items = []
        for i, v in enumerate(vals):
            share = ""
            if ratios is not None and i < len(ratios) and np.isfinite(ratios[i]):
                share = f" ({ratios[i]:.1%})"
            color = "#cc0000" if v <= 0 else "#000000"
            items.append(f'<span style="color:{color}">λ{i + 1} = {v:.4g}{share}</span>')
        parts.append("Kept: " + ", ".join(items) + ".")
        if np.isfinite(sp["explained"]):
            what = "of the total variance" if sp["source"] == "explained_variance_" else "of the kernel's trace"
            parts.append(f"<b>Explained fraction: {sp['explained']:.1%}</b> {what}.")
        if sp["skipped"].size:
            parts.append(f"{sp['skipped'].size} eigenvalue(s) skipped by construction "
                         f"({', '.join(f'{v:.4g}' for v in sp['skipped'])}).")
        if sp["n_negative"]:
            neg = sp["negative"]
            most = f" (the most negative is {neg.min():.4g})" if neg.size else ""
            parts.append(f'<span style="color:#cc0000">{sp["n_negative"]} negative eigenvalue(s){most}: '
                         "the distances are not Euclidean, so no map reproduces them exactly.</span>")
        if (vals <= 0).any():
            parts.append('<span style="color:#cc0000">A kept eigenvalue is ≤ 0: ask for fewer components.</span>')
        if sp["solver"]:
            parts.append(f"Solver: {html.escape(str(sp['solver']))}.")
        return " ".join(parts)
