"""The log of runs: one row per run (algorithm, parameters, data, status, time, result and,
for a classifier, the score of its evaluation).

Selecting a finished run shows it in every view; a failed run's row carries its error.
"Remove run" (context menu, Delete key) removes the selected run through the window's undo
history (Edit ▸ Undo brings it back, in its place: rows are kept in run-id order).
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QBrush, QColor, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
)

from manifold_studio.gui.undo import remove_run
from manifold_studio.analysis.chain import chain_text
from manifold_studio.session.records import CANCELLED, DONE, FAILED, RUNNING

COLUMNS = ("#", "Algorithm", "Parameters", "Data", "Status", "Time (s)", "Result", "Score")
STATUS_COLORS = {DONE: QColor(20, 120, 40), FAILED: QColor(176, 0, 32), CANCELLED: QColor(150, 100, 0),
                 RUNNING: QColor(30, 80, 170)}


def score_text(run) -> str:
    """A classifier run's evaluated accuracy ("CA 0.960 ± 0.013, 5-fold"), or ""."""
    ev = run.meta.get("evaluation") if isinstance(run.meta, dict) else None
    if not isinstance(ev, dict) or not isinstance(ev.get("mean_accuracy"), (int, float)):
        return ""
    if ev.get("method") == "kfold":
        return f"CA {ev['mean_accuracy']:.3f} ± {ev.get('std_accuracy', 0.0):.3f}, {ev.get('n_splits', '?')}-fold"
    return f"CA {ev['mean_accuracy']:.3f}, hold-out"


class RunLog(QTableWidget):
    def __init__(self, window, parent=None):
        super().__init__(0, len(COLUMNS), parent)
        self.window = window
        self.setObjectName("run_log")
        self.setHorizontalHeaderLabels(COLUMNS)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(6, QHeaderView.ResizeMode.Stretch)
        self._rows: dict[int, int] = {}
        window.bridge.runChanged.connect(self._on_run_changed)
        window.bridge.currentRunChanged.connect(self._on_current)
        self.itemSelectionChanged.connect(self._on_selection)
        self._updating = False
        self.remove_action = QAction("Remove run", self, shortcut=QKeySequence(Qt.Key.Key_Delete))
        self.remove_action.setObjectName("action_remove_run")
        self.remove_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.remove_action.setToolTip("Remove the selected run (Edit ▸ Undo brings it back).")
        self.remove_action.setProperty("where", "Runs list (right-click)")
        self.remove_action.triggered.connect(self.remove_selected)
        self.addAction(self.remove_action)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    def selected_run_id(self) -> int | None:
        items = self.selectedItems()
        return items[0].data(Qt.ItemDataRole.UserRole) if items else None

    def remove_selected(self) -> bool:
        """Remove the selected run, undoably."""

        run_id = self.selected_run_id()
        if run_id is None:
            self.window.report_error("Select a run in the list to remove it.", log=False)
            return False
        return remove_run(self.window, run_id)

    def row_of(self, run_id: int) -> int:
        return self._rows.get(run_id, -1)

    def refresh_run(self, run) -> None:
        """Re-read ``run``'s row: its record changed without a session event (e.g. a figure a
        view added to its summary, as the map faithfulness does)."""
        self._on_run_changed(run)

    def _on_run_changed(self, run):
        if run is None:
            return
        if run.id not in self.window.session.runs:  # removed
            row = self._rows.pop(run.id, None)
            if row is not None:
                self.removeRow(row)
                self._rows = {rid: (r - 1 if r > row else r) for rid, r in self._rows.items()}
            return
        row = self._rows.get(run.id)
        if row is None:  # in id order: a run put back by Undo returns to its place
            row = sum(1 for rid in self._rows if rid < run.id)
            self.insertRow(row)
            self._rows = {rid: (r + 1 if r >= row else r) for rid, r in self._rows.items()}
            self._rows[run.id] = row
        duration = run.timings.get("duration_s")
        if run.status == DONE:
            shape = (f"{run.embedding.shape[0]:,} × {run.embedding.shape[1] if run.embedding.ndim > 1 else 1}"
                     if run.embedding is not None else f"{run.n_points:,} labels")
            extra = ", ".join(f"{k}={v}" for k, v in run.summary.items() if k != "fit_time_s")
            result = shape + (f"; {extra}" if extra else "")
            if run.extensions:
                result += f"; {len(run.extensions)} extension(s)"
        else:
            result = run.error
        status = "stopped early" if run.status == DONE and run.meta.get("stopped_early") else run.status
        chain = chain_text(run.meta.get("chain"))
        params = f"{chain} → {run.params_text()}" if chain else run.params_text()
        values = (str(run.id), run.algorithm_id, params, run.dataset_name, status,
                  "" if duration is None else f"{duration:.2f}", result, score_text(run))
        for col, text in enumerate(values):
            item = QTableWidgetItem(text)
            item.setToolTip(run.error_detail[-3000:] if col == 6 and run.error_detail else text)
            item.setData(Qt.ItemDataRole.UserRole, run.id)
            if col == 4 and run.status in STATUS_COLORS:
                item.setForeground(QBrush(STATUS_COLORS[run.status]))
            self.setItem(row, col, item)
        self.scrollToItem(self.item(row, 0))

    def _on_current(self, run):
        if run is None:
            return
        row = self._rows.get(run.id)
        if row is not None and self.currentRow() != row:
            self._updating = True
            self.selectRow(row)
            self._updating = False

    def _on_selection(self):
        if self._updating:
            return
        items = self.selectedItems()
        if not items:
            return
        run_id = items[0].data(Qt.ItemDataRole.UserRole)
        run = self.window.session.runs.get(run_id)
        if run is not None and run.status == DONE:
            self.window.session.set_current_run(run_id)
        elif run is not None and run.error:
            self.window.statusBar().showMessage(f"Run #{run.id} {run.status}: {run.error}", 10_000)
