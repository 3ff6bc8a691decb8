"""Explain this selection (issue 31): a panel that ranks the features by how the selected rows
differ from the rest, or from a second selection B
(:func:`~manifold_studio.analysis.explain_selection.explain`, on a worker thread). Each row has
a small plot of the two distributions (selection in orange, the other group in grey: histograms
on shared bins for numbers, the two shares for a category). The table can be exported as CSV.
"""
from __future__ import annotations


import numpy as np
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QLabel, QPushButton, QTableWidget, QTableWidgetItem,
    QVBoxLayout, QWidget,
)

from manifold_studio.analysis.explain_selection import KS, MANN_WHITNEY, Explanation, explain, selection_groups
from manifold_studio.analysis.explain_sparse import SparseFeatures, membership
from manifold_studio.errors import DataError, ManifoldStudioError, error_message
from manifold_studio.gui.views.column_cache import ColumnCache
from manifold_studio.gui.worker import LatestJob
from manifold_studio.tables.dataset_columns import FEATURE
from manifold_studio.tables.export import write_table_csv

HEADERS = ("feature", "category", "effect", "selected", "other", "odds ratio", "test", "p", "q", "distribution")
SPARK_W, SPARK_H, SPARK_BINS = 90, 22, 16
#: table rows filled per turn of the event loop
FILL_ROWS = 100
#: rows per group behind a small distribution plot
SPARK_ROWS = 50_000
SEL_COLOR, OTHER_COLOR = QColor(255, 120, 0, 200), QColor(120, 120, 120, 160)
AGAINST_REST, AGAINST_B = "rest", "b"
#: the name of the kept selection Explain compares with (session.save_selection)
SELECTION_B = "B"


def spark_heights(row, values, rows_a, rows_b) -> tuple[np.ndarray, np.ndarray]:
    """Bar heights (0–1) of the selection's and the other group's distribution for one row."""
    if row.kind != "numeric":
        return np.array([row.mean_a]), np.array([row.mean_b])
    v = np.asarray(values, dtype=float)
    a, b = v[rows_a], v[rows_b]
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    both = np.concatenate([a, b])
    if not both.size:
        return np.zeros(SPARK_BINS), np.zeros(SPARK_BINS)
    edges = np.histogram_bin_edges(both, bins=SPARK_BINS)
    ha = np.histogram(a, edges)[0] / max(a.size, 1)
    hb = np.histogram(b, edges)[0] / max(b.size, 1)
    top = max(ha.max(initial=0), hb.max(initial=0)) or 1.0
    return ha / top, hb / top


def spark_pixmap(ha: np.ndarray, hb: np.ndarray) -> QPixmap:
    pm = QPixmap(SPARK_W, SPARK_H)
    pm.fill(Qt.GlobalColor.white)
    p = QPainter(pm)
    w = SPARK_W / max(len(ha), 1)
    for heights, color, off, frac in ((hb, OTHER_COLOR, 0.0, 1.0), (ha, SEL_COLOR, 0.25, 0.5)):
        for i, h in enumerate(heights):
            bh = float(h) * (SPARK_H - 2)
            p.fillRect(QRectF(i * w + off * w, SPARK_H - 1 - bh, w * frac if len(ha) > 1 else w * 0.45,
                              bh), color)
    p.end()
    return pm


def explain_task(session, name, cache: ColumnCache, selected, other, test, progress=None):
    """(Explanation, sparkline heights per row) on a worker thread: the columns, the ranking and
    the small distributions are all computed off the GUI thread."""
    cols = cache.get(session, name)
    ds = session.datasets[name]
    features = None
    if ds.is_sparse:   # every feature, column by column from the sparse matrix (never densified)
        names = ds.feature_names or [f"x{j + 1}" for j in range(ds.n_features)]
        features = SparseFeatures(ds.X, names)
        cols = [c for c in cols if c.kind != FEATURE]
    res = explain(cols, selected, other, test=test, progress=progress, features=features)
    by_name = {c.name: c for c in cols}
    sparse_index = {f: j for j, f in enumerate(features.names)} if features is not None else {}
    rows_a, rows_b, _against = selection_groups(selected, other, ds.n_samples)
    rng = np.random.default_rng(0)   # the small plots show shapes: a sample of each group is enough
    rows_a, rows_b = (np.sort(rng.choice(r, SPARK_ROWS, replace=False)) if r.size > SPARK_ROWS else r
                      for r in (rows_a, rows_b))
    member = membership(ds.n_samples, (rows_a, rows_b)) if features is not None else None
    sparks = []
    for r in res.rows:
        col = by_name.get(r.feature)
        if col is not None:
            sparks.append(spark_heights(r, col.values, rows_a, rows_b))
        elif r.feature in sparse_index:
            ha, hb = features.histograms(sparse_index[r.feature], rows_a, rows_b, SPARK_BINS, member)
            top = max(ha.max(initial=0), hb.max(initial=0)) or 1.0
            sparks.append((ha / top, hb / top))
        else:
            sparks.append(None)
    return res, sparks


def _fmt(v) -> str:
    if isinstance(v, str):
        return v
    if v is None or not np.isfinite(v):
        return "" if v is None or np.isnan(v) else ("inf" if v > 0 else "-inf")
    return f"{v:.3g}"


class ExplainPanel(QWidget):
    explained = Signal(object)

    def __init__(self, window, view, parent=None):
        super().__init__(parent)
        self.window, self.view = window, view
        self.result: Explanation | None = None
        self._fill_generation = 0
        self.columns = ColumnCache()
        self.latest = LatestJob()
        self.explain_button = QPushButton("Explain selection")
        self.set_b_button = QPushButton("Keep as B")
        self.set_b_button.setToolTip("Keep the current selection as B, to compare a later selection with it.")
        self.against = QComboBox()
        self.against.addItem("vs the rest", AGAINST_REST)
        self.against.addItem("vs selection B", AGAINST_B)
        self.test = QComboBox()
        self.test.addItem("Mann–Whitney", MANN_WHITNEY)
        self.test.addItem("Kolmogorov–Smirnov", KS)
        self.export_button = QPushButton("Export CSV…")
        self.export_button.setEnabled(False)
        self.status = QLabel("Select points on the map, then press Explain selection.")
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setIconSize(QPixmap(SPARK_W, SPARK_H).size())
        top = QHBoxLayout()
        for w in (self.explain_button, self.against, self.test, self.set_b_button, self.export_button):
            top.addWidget(w)
        top.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.status)
        lay.addWidget(self.table, 1)
        self.explain_button.clicked.connect(self.run)
        self.set_b_button.clicked.connect(self.keep_b)
        self.export_button.clicked.connect(self._export_dialog)

    def _name(self):
        ds = self.view.dataset
        return ds.name if ds is not None else None

    @property
    def b_rows(self) -> np.ndarray | None:
        """The rows kept as selection B of the map's data set (session state, saved in the project)."""
        return self.window.session.saved_selection(self._name(), SELECTION_B)

    def keep_b(self):
        name = self._name()
        if name is not None:
            self.window.session.save_selection(name, SELECTION_B)  # a command: Edit ▸ Undo forgets it
            kept = self.b_rows
            self.status.setText(f"Selection B: {0 if kept is None else len(kept):,} rows.")

    def run(self):
        name = self._name()
        if name is None:
            self.status.setText("No data set on the map.")
            return
        selected = self.window.selection.rows(name)
        other = self.b_rows if self.against.currentData() == AGAINST_B else None
        if self.against.currentData() == AGAINST_B and other is None:
            self.status.setText("Keep a selection as B first (Keep as B).")
            return
        self.status.setText(f"Explaining {len(selected):,} rows…")
        self.latest.start(self.window, explain_task, self.window.session, name, self.columns, selected, other,
                          self.test.currentData(), title="Explain selection", on_success=self.show_result,
                          on_failure=lambda message, _detail: self.failed(message))

    def failed(self, message: str):
        self.result = None
        self.table.setRowCount(0)
        self.export_button.setEnabled(False)
        self.status.setText(message)

    def show_result(self, result) -> None:
        """Fill the table with an :func:`explain_task` result ((Explanation, sparkline heights)):
        the first :data:`FILL_ROWS` rows at once, the others :data:`FILL_ROWS` per turn of the
        event loop (a sparse data set ranks thousands of genes; the window keeps responding)."""
        res, sparks = result
        self.result = res
        self._fill_generation += 1
        self.table.setRowCount(len(res.rows))
        self._fill(res, sparks, 0, self._fill_generation)
        self.table.resizeColumnsToContents()
        notes = " ".join(res.notes)
        self.status.setText(f"{res.n_a:,} selected rows against {res.against} ({res.n_b:,} rows). {notes}".strip())
        self.export_button.setEnabled(bool(res.rows))
        self.explained.emit(res)

    def _fill(self, res, sparks, start: int, generation: int) -> None:
        if generation != self._fill_generation:   # a newer result replaced this one
            return
        stop = min(start + FILL_ROWS, len(res.rows))
        for i in range(start, stop):
            r = res.rows[i]
            values = (r.feature, r.category, r.effect, r.mean_a, r.mean_b, r.odds_ratio, r.test, r.p, r.q)
            for j, v in enumerate(values):
                item = QTableWidgetItem(_fmt(v))
                if not isinstance(v, str):
                    item.setData(Qt.ItemDataRole.UserRole, float(v))
                self.table.setItem(i, j, item)
            spark = QTableWidgetItem("")
            if sparks[i] is not None:
                spark.setIcon(QIcon(spark_pixmap(*sparks[i])))
            self.table.setItem(i, len(values), spark)
        if stop < len(res.rows):
            QTimer.singleShot(0, self, lambda: self._fill(res, sparks, stop, generation))

    def export_csv(self, path: str) -> None:
        """Write the table to ``path`` (CSV, one line per row)."""
        if self.result is None:
            raise DataError("Explain a selection first: there is no table to export.")
        rows = self.result.table()
        header = list(rows[0]) if rows else ["feature"]
        columns = [np.array([r[k] for r in rows], dtype=object) for k in header]
        # as every table export: atomic, and a category that a spreadsheet would run as a formula escaped
        write_table_csv(path, header, columns)

    def _export_dialog(self):
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getSaveFileName(self, "Export explanation", "explain_selection.csv", "CSV (*.csv)")
        if path:
            try:
                self.export_csv(path)
            except (OSError, ManifoldStudioError) as exc:
                self.status.setText(f"Could not write {path}: {error_message(exc)}")

