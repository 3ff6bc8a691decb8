"""Confusion matrix of a classifier's evaluation (hold-out or summed over the k folds): rows are
the true classes, columns the predicted ones, with per-class precision / recall and totals.

The evaluation runs on a worker thread (:mod:`manifold_studio.gui.classification_panel`); this
view only draws its :class:`~manifold_studio.evaluation.EvaluationResult`."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QVBoxLayout

from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import label_text
from manifold_studio.gui.widgets import message_label


class ConfusionView(ResultView):
    view_id = "confusion"
    title = "Confusion matrix"
    area = "right"
    order = 32

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result = None
        self.info = message_label("Confusion matrix of a classifier's evaluation: run a classifier on labelled data.")
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        lay.addWidget(self.table, 1)

    def applies_to(self, run) -> bool:
        return run is not None and run.kind == "classification"

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        panel = self.window.classification_panel if self.window is not None else None
        self.show_result(run, panel.result_for(run) if panel is not None and run is not None else None)

    @property
    def counts(self) -> np.ndarray | None:
        return None if self.result is None else self.result.confusion

    def show_result(self, run, result) -> None:
        """Draw ``result`` (an EvaluationResult of ``run``, or None)."""
        self.result = result
        self.table.clear()
        if result is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.info.setText("Confusion matrix: no evaluation of this run yet (press Run with an "
                              "evaluation chosen in the Classification panel)." if run is not None
                              else "Confusion matrix of a classifier's evaluation.")
            return
        how = ("summed over the test folds" if result.method == "kfold" else "on the hold-out test rows")
        self.info.setText(f"{run.title() if run is not None else ''}: {result.summary()}. "
                          f"Rows: true class, columns: predicted class ({how}).")
        cm = result.confusion
        K = cm.shape[0]
        names = [label_text(result.classes, i) for i in range(K)]
        self.table.setRowCount(K + 1)
        self.table.setColumnCount(K + 2)
        self.table.setHorizontalHeaderLabels([f"→ {n}" for n in names] + ["total", "recall"])
        self.table.setVerticalHeaderLabels([f"{n}" for n in names] + ["precision"])
        peak = max(int(cm.max()), 1)

        def put(i, j, text, bg=None, bold=False):
            item = QTableWidgetItem(text)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if bg is not None:
                item.setBackground(QBrush(bg))
            if bold:
                f = item.font()
                f.setBold(True)
                item.setFont(f)
            self.table.setItem(i, j, item)

        for i in range(K):
            for j in range(K):
                v = int(cm[i, j])
                bg = None
                if v:
                    t = v / peak
                    bg = (QColor(int(255 - 140 * t), int(255 - 60 * t), int(255 - 140 * t)) if i == j
                          else QColor(255, int(255 - 120 * t), int(255 - 120 * t)))
                put(i, j, f"{v:,}", bg, bold=(i == j))
            put(i, K, f"{int(cm[i].sum()):,}", bold=True)
            put(i, K + 1, f"{result.recall[i]:.3f}")
        for j in range(K):
            put(K, j, f"{result.precision[j]:.3f}")
        put(K, K, f"{int(cm.sum()):,}", bold=True)
        put(K, K + 1, f"acc {np.trace(cm) / max(cm.sum(), 1):.3f}", bold=True)
        self.table.resizeColumnsToContents()
