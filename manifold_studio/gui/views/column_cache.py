"""The data-set columns the map's tools offer (colour by, cross-filters, Explain, search), kept
until the data set or its runs change, and a searchable column chooser.

A sparse data set lists only its first :data:`~manifold_studio.tables.dataset_columns.SPARSE_TABLE_COLUMNS`
features as densified columns (a single-cell set has thousands of genes); every other feature
is offered by name (:meth:`ColumnCache.more_features`) and densified on demand when chosen, the
last :data:`ON_DEMAND_COLUMNS` of them kept, so memory stays bounded.
"""
from __future__ import annotations

from collections import OrderedDict

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QCompleter

from manifold_studio.tables.dataset_columns import FEATURE, Column, dataset_columns

#: sparse features densified on demand and kept (each n_samples × 8 bytes)
ON_DEMAND_COLUMNS = 8


class ColumnCache:
    """``dataset_columns(session, name)`` kept until the data set (its labels or table) or its
    runs change; a sparse data set's other features by name, densified when asked for."""

    def __init__(self):
        self._key = None
        self._cols: list = []
        self._more: list[str] = []
        self._index: dict = {}
        self._fetched: OrderedDict = OrderedDict()

    def get(self, session, name: str | None) -> list:
        ds = session.datasets.get(name) if session is not None and name else None
        if ds is None:
            return []
        key = (name, id(ds), ds.n_samples, ds.n_features, id(ds.table), id(ds.labels),  # labelling replaces them
               tuple((r.id, r.status, len(r.extensions)) for r in session.runs.values()
                     if r.dataset_name == name))
        if key != self._key:
            self._cols, self._key = dataset_columns(session, name), key
            listed = {c.name for c in self._cols}
            names = ds.feature_names or [f"x{j + 1}" for j in range(ds.n_features)]   # as dataset_columns
            self._index = {f: j for j, f in enumerate(names)} if ds.is_sparse else {}
            self._more = [f for f in self._index if f not in listed]
            self._fetched.clear()
        return self._cols

    def more_features(self, session, name: str | None) -> list[str]:
        """The names of a sparse data set's features that :meth:`get` leaves out (none for dense)."""
        self.get(session, name)
        return self._more

    def find(self, session, name: str | None, column: str):
        """Column ``column`` of data set ``name``: a listed one, or a sparse feature densified now
        (None when there is no such column)."""
        hit = next((c for c in self.get(session, name) if c.name == column), None)
        if hit is not None or column not in self._index:
            return hit
        if column in self._fetched:
            self._fetched.move_to_end(column)
            return self._fetched[column]
        ds = session.datasets[name]
        col = Column(column, ds.dense(cols=self._index[column]), FEATURE)
        self._fetched[column] = col
        while len(self._fetched) > ON_DEMAND_COLUMNS:
            self._fetched.popitem(last=False)
        return col


def make_searchable(combo: QComboBox) -> QComboBox:
    """Let the user type part of an entry's text to find it among many (thousands of genes):
    an editable combo that never adds what is typed, completing on any part of the text."""
    combo.setEditable(True)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    completer = QCompleter(combo.model(), combo)
    completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
    completer.setFilterMode(Qt.MatchFlag.MatchContains)
    completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
    combo.setCompleter(completer)
    return combo
