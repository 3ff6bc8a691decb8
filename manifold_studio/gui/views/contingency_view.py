"""Contingency table of a clustering run against the data set's labels, with the adjusted Rand
index (computed on a worker thread; follows a dendrogram cut)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QVBoxLayout

from manifold_studio.analysis.cluster_tasks import ContingencyResult, contingency_task
from manifold_studio.gui.cluster_overlay import ClusterOverlay
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import label_text
from manifold_studio.gui.widgets import message_label
from manifold_studio.gui.worker import LatestJob


def _data_labels(run, dataset):
    if run is None or dataset is None or dataset.labels is None or run.labels is None:
        return None
    rows = run.point_index
    if len(rows) and int(rows.max()) >= len(dataset.labels):
        return None
    return np.asarray(dataset.labels)[rows]


class ContingencyView(ResultView):
    view_id = "contingency"
    title = "Clusters vs labels"
    area = "right"
    order = 25

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result: ContingencyResult | None = None
        self.latest = LatestJob()
        self.ari_label = message_label("Clusters against the data labels.")
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(False)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.ari_label)
        lay.addWidget(self.table, 1)
        if window is not None and window.map_view is not None:
            ClusterOverlay.for_window(window).labelsChanged.connect(
                lambda run: self._start(run) if run is self.run else None)

    def applies_to(self, run) -> bool:
        if run is None or run.kind != "clustering" or self.window is None:
            return False
        return _data_labels(run, self.window.session.datasets.get(run.dataset_name)) is not None

    @property
    def busy(self) -> bool:
        return self.latest.busy

    @property
    def ari(self) -> float | None:
        return None if self.result is None else self.result.ari

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self._start(run)

    def _start(self, run) -> None:
        self.latest.drop()
        truth = _data_labels(run, self.dataset)
        if truth is None or self.window is None:
            self._draw(None)
            self.ari_label.setText("Clusters against the data labels: needs a clustering run on labelled data.")
            return
        labels = ClusterOverlay.for_window(self.window).labels_for(run)
        self.ari_label.setText("Computing…")
        self.latest.start(
            self.window, contingency_task, labels, truth, title="Contingency table",
            on_success=lambda res, run=run: self._done(run, res),
            on_failure=lambda msg, detail: self._failed(msg))

    def _done(self, run, result: ContingencyResult) -> None:
        self._draw(result)
        name = (self.dataset.label_name if self.dataset is not None and self.dataset.label_name else "label")
        note = ClusterOverlay.for_window(self.window).labels_note(run)
        self.ari_label.setText(
            f"{run.title()}: adjusted Rand index against '{name}' = <b>{result.ari:.4f}</b> "
            "(1: the same partition, about 0: chance)" + (f"; {note}" if note else ""))

    def _failed(self, message) -> None:
        self._draw(None)
        self.ari_label.setText(f"No contingency table: {message}")

    def _draw(self, result: ContingencyResult | None) -> None:
        self.result = result
        self.table.clear()
        if result is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            return
        counts = result.counts
        R, C = counts.shape
        self.table.setRowCount(R + 1)
        self.table.setColumnCount(C + 1)
        self.table.setHorizontalHeaderLabels([label_text(result.classes, j) for j in range(C)] + ["total"])
        self.table.setVerticalHeaderLabels([f"cluster {label_text(result.clusters, i)}" for i in range(R)]
                                           + ["total"])
        row_tot, col_tot = counts.sum(axis=1), counts.sum(axis=0)
        peak = max(int(counts.max()), 1)
        for i in range(R + 1):
            for j in range(C + 1):
                if i < R and j < C:
                    v = int(counts[i, j])
                elif i < R:
                    v = int(row_tot[i])
                elif j < C:
                    v = int(col_tot[j])
                else:
                    v = int(counts.sum())
                item = QTableWidgetItem(f"{v:,}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if i < R and j < C and v:
                    shade = int(255 - 150 * v / peak)
                    item.setBackground(QBrush(QColor(shade, shade + (255 - shade) // 2, 255)))
                if i == R or j == C:
                    f = item.font()
                    f.setBold(True)
                    item.setFont(f)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()
