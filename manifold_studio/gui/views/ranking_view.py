"""Feature ranking: one row per feature with its ANOVA F (and p-value) against the class, its
mutual information with the class, variance and share of missing values
(:func:`~manifold_studio.analysis.feature_stats.feature_ranking`), sortable by any column
(click a header). "Keep the top k" puts a ``select_columns`` step with the k best features by
the chosen score at the head of the preparation chain (or, without that step installed, makes a
new data set with those columns: the session's ``add_dataset``, with a provenance line).

The table is of columns, not rows: it has no row selection to link.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
)

from manifold_studio.analysis.feature_stats import RANKING_COLUMNS, feature_ranking
from manifold_studio.data import Dataset
from manifold_studio.gui.views.feature_base import FeatureView
from manifold_studio.gui.widgets import message_label

HEADERS = {"anova_f": "ANOVA F", "anova_p": "p-value", "mutual_info": "mutual info (nats)",
           "variance": "variance", "missing_share": "missing"}


class RankingModel(QAbstractTableModel):
    """The ranking as a table: feature name, then :data:`RANKING_COLUMNS`; sorted by :meth:`sort`."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ranking = None
        self.order = np.zeros(0, dtype=np.intp)  # displayed row -> feature index

    def set_ranking(self, ranking) -> None:
        self.beginResetModel()
        self.ranking = ranking
        self.order = np.arange(len(ranking.names)) if ranking is not None else np.zeros(0, dtype=np.intp)
        self.endResetModel()

    def rowCount(self, parent=None):  # noqa: N802 - Qt
        return 0 if parent is not None and parent.isValid() else len(self.order)

    def columnCount(self, parent=None):  # noqa: N802 - Qt
        return 0 if parent is not None and parent.isValid() else 1 + len(RANKING_COLUMNS)

    def value(self, row: int, col: int):
        j = int(self.order[row])
        if col == 0:
            return self.ranking.names[j]
        return float(self.ranking.column(RANKING_COLUMNS[col - 1])[j])

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or self.ranking is None:
            return None
        v = self.value(index.row(), index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            if isinstance(v, str):
                return v
            if np.isnan(v):
                return "—"
            return f"{v:.1%}" if RANKING_COLUMNS[index.column() - 1] == "missing_share" else f"{v:.4g}"
        if role == Qt.ItemDataRole.UserRole:
            return v
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802 - Qt
        if role != Qt.ItemDataRole.DisplayRole or orientation != Qt.Orientation.Horizontal:
            return None
        return "feature" if section == 0 else HEADERS[RANKING_COLUMNS[section - 1]]

    def sort(self, column, order=Qt.SortOrder.AscendingOrder):
        if self.ranking is None:
            return
        self.layoutAboutToBeChanged.emit()
        descending = order == Qt.SortOrder.DescendingOrder
        if column == 0:
            self.order = np.argsort(np.array(self.ranking.names, dtype=object), kind="stable")
            if descending:
                self.order = self.order[::-1]
        else:
            self.order = self.ranking.order(RANKING_COLUMNS[column - 1], descending)
        self.layoutChanged.emit()

    def column_values(self, col: int) -> list:
        return [self.value(r, col) for r in range(self.rowCount())]


class RankingView(FeatureView):
    view_id = "feature_ranking"
    title = "Feature ranking"
    order = 65
    features_only = True

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.ranking = None
        self._ranked = None  # the data set the ranking's k and score were chosen for
        self.info = message_label("The features ranked against the class.")
        self.model = RankingModel(self)
        self.table = QTableView()
        self.table.setObjectName("feature_ranking_table")
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.k_spin = QSpinBox()
        self.k_spin.setObjectName("ranking_k")
        self.k_spin.setRange(1, 1)
        self.by_combo = QComboBox()
        self.by_combo.setObjectName("ranking_by")
        for key in RANKING_COLUMNS:
            self.by_combo.addItem(HEADERS[key], key)
        self.keep_button = QPushButton("Keep the top k")
        self.keep_button.setToolTip("Put a select_columns step keeping the k best features by the chosen "
                                    "score (largest first; smallest for the p-value and the missing share) "
                                    "at the head of the preparation chain (without that step: a new data set).")
        self.keep_button.clicked.connect(lambda: self.keep_top())
        bottom = QHBoxLayout()
        for w in (QLabel("k:"), self.k_spin, QLabel("by"), self.by_combo, self.keep_button):
            bottom.addWidget(w)
        bottom.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        lay.addWidget(self.table, 1)
        lay.addLayout(bottom)

    def draw(self) -> None:
        self.ranking = None
        if self.dataset is None:
            self.info.setText("The features ranked against the class: load a data set.")
            return self._computed(None, "")
        X, names = self.feature_matrix()
        self.compute(feature_ranking, X, self.labels, names, on_done=self._computed, title="Feature ranking")

    def _computed(self, ranking, message: str) -> None:
        self.ranking = ranking
        if message:
            self.info.setText(message)
        if ranking is not None:
            d = len(ranking.names)
            new_data = self._ranked != self.dataset_name
            self._ranked = self.dataset_name
            self.k_spin.setRange(1, max(d, 1))
            if new_data:  # a new data set: default k and score; kept while the same one is redrawn
                self.k_spin.setValue(min(d, max(1, d // 2)))
                by = "anova_f" if self.labels is not None else "variance"
                self.by_combo.setCurrentIndex(self.by_combo.findData(by))
            cls = "against the class" if self.labels is not None else "(no class: F and mutual information need labels)"
            self.info.setText(f"The {d} features of {self.dataset_name} {cls}. Click a header to sort.")
        self.model.set_ranking(self.ranking)
        self.keep_button.setEnabled(self.ranking is not None)
        if self.ranking is not None:
            col = 1 + RANKING_COLUMNS.index(self.by_combo.currentData())
            self.table.sortByColumn(col, Qt.SortOrder.DescendingOrder)

    def keep_top(self, k: int | None = None, by: str | None = None) -> str | None:
        """Keep the ``k`` best features by ``by``: a ``select_columns`` step (include = those
        columns) at the head of the Preparation dock's chain when that step is installed, so the
        next runs fit only them and the chain records it; else a new data set with those columns.
        Returns ``"preparation"`` or the new data set's name."""
        if self.ranking is None or self.dataset is None:
            return None
        k = int(k or self.k_spin.value())
        by = by or self.by_combo.currentData()
        idx = self.ranking.top(by, k)
        ds = self.dataset
        names = [self.ranking.names[j] for j in idx]
        kept = f"Kept the top {k} of the {ds.n_features} features of '{ds.name}' by {HEADERS[by]}: " + ", ".join(names)
        panel = self.window.preparation_panel
        step = self.window.host.preprocessors.get("select_columns") if panel is not None else None
        if step is not None:
            params = {p.name: p.default for p in step.params}
            params["include"] = list(names)
            rest = [s for s in panel.chain() if s[0] != "select_columns"]
            panel.set_chain([("select_columns", params), *rest], f"Keep the top {k} features")
            line = kept + " — select_columns (include these) is now the first step of the preparation chain."
            self.session.log(line)
            self.window.show_status(line)
            return "preparation"
        line = kept + f" (the preparation step select_columns with include={','.join(names)})"
        new = Dataset(f"{ds.name} top {k}", ds.X[:, idx].copy(), None if ds.labels is None else ds.labels.copy(),
                      names, ds.source, ds.label_name, [*ds.report, line],
                      None if ds.images is None else ds.images)
        name = self.session.add_dataset(new)
        self.window.show_status(line)
        return name
