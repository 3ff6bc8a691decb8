"""Feature ranking: one row per feature with its ANOVA F (and p-value) against the class, its
mutual information with the class, variance and share of missing values
(:func:`~manifold_studio.analysis.feature_stats.feature_ranking`), sortable by any column
(click a header). The columns ranked are the data set's after the current preparation chain
(``session.prepared_dataset``; a ``select_columns`` step ending the chain is the one the ranking
replaces, so it is left out), and the caption says so ("standardize, 13 columns"). "Keep the top
k" puts a ``select_columns`` step with the k best columns by the chosen score at the end of that
chain, where those names exist (or, without that step installed, makes a new data set with
those columns: the session's ``add_dataset``, with a provenance line).

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

#: the step "Keep the top k" writes
SELECT = "select_columns"


def ranked_chain(chain) -> list:
    """The part of ``chain`` whose output the ranking ranks: all of it but a ``select_columns``
    step at its end (the step "Keep the top k" replaces)."""
    chain = list(chain or ())
    while chain and chain[-1][0] == SELECT:
        chain.pop()
    return chain


def rank_prepared(session, dataset_name: str, chain, labels):
    """(ranking, prepared data) of data set ``dataset_name`` through ``chain`` (fitted on all its
    rows): what "Keep the top k" selects from. Raises a clear DataError when the chain cannot run."""
    prepared = session.prepared_dataset(dataset_name, chain)
    if labels is not None and len(labels) != prepared.X.shape[0]:
        labels = None
    return feature_ranking(prepared.X, labels, list(prepared.columns)), prepared


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
        self.prepared = None  #: the PreparedData ranked (its caption says what it is)
        self._base: list = []  # the chain the ranked columns come out of
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
        self.keep_button.setToolTip("Put a select_columns step keeping the k best columns by the chosen "
                                    "score (largest first; smallest for the p-value and the missing share) "
                                    "at the end of the preparation chain (without that step: a new data set).")
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
        if window is not None:  # the ranked columns follow the chain
            window.bridge.event.connect(lambda ev: self.refresh() if ev.kind == "chain_changed" else None)

    def draw(self) -> None:
        self.ranking = None
        if self.dataset is None or self.session is None:
            self.info.setText("The features ranked against the class: load a data set.")
            return self._computed(None, "")
        self._base = ranked_chain(self.session.chain)
        theirs = [i for i, _ in self._base if self.window.host.is_third_party(i)]
        if theirs:  # third-party code runs only in a worker process, never in the window's
            self.info.setText(f"Feature ranking: the preparation chain has {', '.join(dict.fromkeys(theirs))} from a "
                              "plugin, which runs only in a worker process; rank without it, or after a run.")
            return self._computed(None, "")
        self.compute(rank_prepared, self.session, self.dataset.name, self._base, self.labels,
                     on_done=self._computed, title="Feature ranking")

    def _computed(self, result, message: str) -> None:
        ranking, self.prepared = result if result is not None else (None, None)
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
            after = "after the current preparation chain " if self.prepared.chain else ""
            self.info.setText(f"The {d} columns of {self.dataset_name} {after}({self.prepared.caption}) {cls}. "
                              "Click a header to sort.")
        self.model.set_ranking(self.ranking)
        self.keep_button.setEnabled(self.ranking is not None)
        if self.ranking is not None:
            col = 1 + RANKING_COLUMNS.index(self.by_combo.currentData())
            self.table.sortByColumn(col, Qt.SortOrder.DescendingOrder)

    def keep_top(self, k: int | None = None, by: str | None = None) -> str | None:
        """Keep the ``k`` best columns by ``by``: a ``select_columns`` step (include = those
        columns) at the end of the chain they were ranked after (the Preparation dock's), when
        that step is installed, so the next runs fit only them and the chain records it; else a
        new data set with those columns. Returns ``"preparation"`` or the new data set's name."""
        if self.ranking is None or self.dataset is None:
            return None
        k = int(k or self.k_spin.value())
        by = by or self.by_combo.currentData()
        idx = self.ranking.top(by, k)
        ds = self.dataset
        names = [self.ranking.names[j] for j in idx]
        d = len(self.ranking.names)
        what = "features" if not self._base else f"columns after {self.prepared.caption.rsplit(',', 1)[0]}"
        kept = f"Kept the top {k} of the {d} {what} of '{ds.name}' by {HEADERS[by]}: " + ", ".join(names)
        panel = self.window.preparation_panel
        step = self.window.host.preprocessors.get(SELECT) if panel is not None else None
        if step is not None:
            params = {p.name: p.default for p in step.params}
            params["include"] = list(names)
            panel.set_chain([*ranked_chain(panel.chain()), (SELECT, params)], f"Keep the top {k} features")
            line = kept + " — select_columns (include these) is now the last step of the preparation chain."
            self.session.log(line)
            self.window.show_status(line)
            return "preparation"
        line = kept + f" (the preparation step select_columns with include={','.join(names)})"
        X = self.prepared.X if self.prepared is not None else ds.X
        new = Dataset(f"{ds.name} top {k}", X[:, idx].copy(), None if ds.labels is None else ds.labels.copy(),
                      names, ds.source, ds.label_name, [*ds.report, line],
                      None if ds.images is None else ds.images)
        name = self.session.add_dataset(new)
        self.window.show_status(line)
        return name
