"""The views of a Test & Score comparison (:class:`~manifold_studio.evaluation.Comparison`):
ROC curves (one per learner, for a chosen positive class, from the out-of-fold scores of the
first repeat), a calibration plot (learners with probabilities) and a confusion matrix per learner
whose cells select their rows on the map. Drawing only; the numbers come from
:mod:`manifold_studio.analysis.classifier_scores`."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from manifold_studio.analysis import classifier_scores as cs
from manifold_studio.gui.lazy_slot import LazySlot
from manifold_studio.gui.views.palette import CATEGORICAL, label_text
from manifold_studio.gui.widgets import message_label


def learner_pen(i: int, width: float = 2.0):
    r, g, b = (int(v) for v in CATEGORICAL[i % len(CATEGORICAL)])
    return pg.mkPen(QColor(r, g, b), width=width)


def _plot(xlabel: str, ylabel: str) -> pg.PlotWidget:
    plot = pg.PlotWidget()
    plot.setMenuEnabled(False)
    plot.showGrid(x=True, y=True, alpha=0.2)
    plot.setLabel("bottom", xlabel)
    plot.setLabel("left", ylabel)
    plot.setXRange(0, 1, padding=0.02)
    plot.setYRange(0, 1, padding=0.02)
    legend = plot.getPlotItem().addLegend(offset=(-10, -10), labelTextSize="9pt")
    legend.setBrush(pg.mkBrush(255, 255, 255, 220))
    return plot


class _ClassCurves(QWidget):
    """A plot of one curve per learner for a chosen positive class."""

    what = ""

    def __init__(self, xlabel: str, ylabel: str, parent=None):
        super().__init__(parent)
        self.comparison = None
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.class_combo = QComboBox()
        self.class_combo.currentIndexChanged.connect(lambda _i: self.redraw())
        self.info = message_label("")
        self._plot_slot = LazySlot(lambda: _plot(xlabel, ylabel))   # made when first shown or drawn
        top = QHBoxLayout()
        top.addWidget(QLabel("Positive class:"))
        top.addWidget(self.class_combo, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.info)
        lay.addWidget(self._plot_slot, 1)

    @property
    def plot(self) -> pg.PlotWidget:
        return self._plot_slot.content()

    def set_comparison(self, comparison) -> None:
        self.comparison = comparison
        self.class_combo.blockSignals(True)
        self.class_combo.clear()
        if comparison is not None:
            for k in range(len(comparison.classes)):
                self.class_combo.addItem(label_text(comparison.classes, k), k)
            self.class_combo.setCurrentIndex(1 if len(comparison.classes) == 2 else 0)
        self.class_combo.blockSignals(False)
        self.redraw()

    @property
    def positive(self) -> int:
        k = self.class_combo.currentData()
        return 0 if k is None else int(k)

    def redraw(self) -> None:
        item = self.plot.getPlotItem()
        item.clear()
        item.legend.clear()
        self.curves = {}
        self._draw_reference(item)
        if self.comparison is not None:
            self._draw(item)

    def _draw_reference(self, item) -> None:
        item.plot([0, 1], [0, 1], pen=pg.mkPen((150, 150, 150), width=1, style=Qt.PenStyle.DashLine))

    def _draw(self, item) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class RocView(_ClassCurves):
    """ROC curves of the chosen class against the rest, one per learner with scores."""

    def __init__(self, parent=None):
        super().__init__("false positive rate", "true positive rate", parent)

    def _draw(self, item) -> None:
        c, k = self.comparison, self.positive
        missing = []
        for i, r in enumerate(c.learners):
            if r.scores is None:
                missing.append(r.name)
                continue
            m = r.predicted(0)
            fpr, tpr, _ = cs.roc_curve(c.y_idx[m] == k, r.scores[0][m, k])
            auc = cs.binary_auc(c.y_idx[m] == k, r.scores[0][m, k])
            self.curves[r.name] = item.plot(fpr, tpr, pen=learner_pen(i), name=f"{r.name} (AUC {auc:.3f})")
        cls = label_text(c.classes, k)
        text = f"ROC of class '{cls}' against the rest, out-of-fold scores" + (
            " (first repeat)" if c.n_repeats > 1 else "") + "."
        if missing:
            text += f" No scores (no curve): {', '.join(missing)}."
        self.info.setText(text)


class CalibrationView(_ClassCurves):
    """Observed frequency of the chosen class against the mean predicted probability (10 bins)."""

    n_bins = 10

    def __init__(self, parent=None):
        super().__init__("mean predicted probability", "observed fraction", parent)

    def _draw(self, item) -> None:
        c, k = self.comparison, self.positive
        missing = []
        for i, r in enumerate(c.learners):
            if r.proba is None:
                missing.append(r.name)
                continue
            m = r.predicted(0)
            mean_p, frac, _ = cs.calibration_curve(c.y_idx[m] == k, r.proba[0][m, k], self.n_bins)
            self.curves[r.name] = item.plot(mean_p, frac, pen=learner_pen(i), symbol="o", symbolSize=6,
                                            symbolBrush=learner_pen(i).color(), name=r.name)
        text = (f"Calibration of class '{label_text(c.classes, k)}' ({self.n_bins} bins of the out-of-fold "
                "probabilities).")
        if missing:
            text += f" Without probabilities: {', '.join(missing)}."
        self.info.setText(text)


class LearnerConfusion(QWidget):
    """The out-of-fold confusion matrix of a chosen learner; a click on a cell selects its rows."""

    def __init__(self, on_select=None, parent=None):
        super().__init__(parent)
        self.comparison = None
        self.on_select = on_select
        self.learner_combo = QComboBox()
        self.learner_combo.currentIndexChanged.connect(lambda _i: self.redraw())
        self.info = message_label("")
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.cellClicked.connect(self._clicked)
        top = QHBoxLayout()
        top.addWidget(QLabel("Learner:"))
        top.addWidget(self.learner_combo, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.info)
        lay.addWidget(self.table, 1)

    def set_comparison(self, comparison) -> None:
        self.comparison = comparison
        self.learner_combo.blockSignals(True)
        self.learner_combo.clear()
        for r in comparison.learners if comparison is not None else []:
            self.learner_combo.addItem(r.name)
        self.learner_combo.blockSignals(False)
        self.redraw()

    @property
    def learner(self) -> str | None:
        return self.learner_combo.currentText() or None

    @property
    def counts(self) -> np.ndarray | None:
        return None if self.comparison is None or self.learner is None else self.comparison.confusion(self.learner)

    def redraw(self) -> None:
        self.table.clear()
        cm = self.counts
        if cm is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.info.setText("Run Test & Score to see each learner's confusion matrix.")
            return
        c = self.comparison
        K = cm.shape[0]
        names = [label_text(c.classes, i) for i in range(K)]
        self.table.setRowCount(K)
        self.table.setColumnCount(K)
        self.table.setHorizontalHeaderLabels([f"→ {n}" for n in names])
        self.table.setVerticalHeaderLabels(names)
        peak = max(int(cm.max()), 1)
        for i in range(K):
            for j in range(K):
                v = int(cm[i, j])
                item = QTableWidgetItem(f"{v:,}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if v:
                    t = v / peak
                    item.setBackground(QBrush(QColor(int(255 - 140 * t), int(255 - 60 * t), int(255 - 140 * t))
                                              if i == j else QColor(255, int(255 - 120 * t), int(255 - 120 * t))))
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()
        self.info.setText(f"{self.learner}: out-of-fold predictions" + (" (first repeat)" if c.n_repeats > 1 else "")
                          + f"; accuracy {np.trace(cm) / max(cm.sum(), 1):.3f}. Rows: true class, columns: "
                          "predicted. Click a cell to select its rows on the map.")

    def cell_rows(self, i: int, j: int) -> np.ndarray:
        return self.comparison.cell_rows(self.learner, i, j)

    def _clicked(self, i: int, j: int) -> None:
        if self.comparison is not None and self.learner is not None and self.on_select is not None:
            self.on_select(self.cell_rows(i, j))
