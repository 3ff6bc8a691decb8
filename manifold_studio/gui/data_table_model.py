"""The data table's model: a virtual table over a data set's numpy columns.

Nothing is precomputed per row: :meth:`DataTableModel.data` formats one cell when the view asks
for it, through ``order`` — the data-set rows in display order (a numpy permutation from
sorting, optionally restricted to the selected rows). Sorting is a stable numpy ``argsort``
(:func:`manifold_studio.tables.search.sort_permutation`), not a ``QSortFilterProxyModel``, so a
million rows sort in a fraction of a second.

The selection is not Qt's: the model holds the data set's selection mask (from
``window.selection``) and paints selected rows with the highlight colours, so a selection of
any size and shape (100,000 scattered rows after a lasso) costs nothing to show.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush, QPalette
from PySide6.QtWidgets import QApplication

from manifold_studio.tables.search import (
    ROW_COLUMN,
    Factors,
    factorize,
    format_value,
    is_numeric,
    sort_permutation,
)

_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)


class DataTableModel(QAbstractTableModel):
    """Column 0 is the data-set row index (``row``); columns 1.. are ``columns``."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list = []          # dataset_columns.Column objects
        self.tooltips: list[str] = []    # one per column (without the row column)
        self.n_rows = 0
        #: data-set row shown at each position (display order)
        self.order = np.zeros(0, dtype=np.intp)
        self._sorted = np.zeros(0, dtype=np.intp)  # the sort permutation before filtering
        self._positions: np.ndarray | None = None  # position of each data-set row (-1: hidden)
        self.selected = np.zeros(0, dtype=bool)     # selection mask over data-set rows
        self.filter_mask: np.ndarray | None = None  # show only these data-set rows
        self.sort_name: str | None = None           # sorted column (None: data-set order)
        self.descending = False
        self._numeric: list[bool] = []
        self._factors: dict[int, Factors] = {}
        pal = QApplication.palette()
        self._hl_bg = QBrush(pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Highlight))
        self._hl_fg = QBrush(pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.HighlightedText))

    # -- content ------------------------------------------------------------------------------------
    def set_columns(self, columns: list, n_rows: int, tooltips: list[str] | None = None) -> None:
        """Show new columns over ``n_rows`` rows (keeps the sort by column name when it still exists)."""
        self.beginResetModel()
        self.columns = list(columns)
        self.tooltips = list(tooltips) if tooltips is not None else [c.name for c in columns]
        self._numeric = [is_numeric(c.values) for c in self.columns]
        self._factors = {}
        if n_rows != self.n_rows:
            self.selected = np.zeros(n_rows, dtype=bool)
            self.filter_mask = None
        self.n_rows = n_rows
        if self.sort_name is not None and self.column_index(self.sort_name) is None:
            self.sort_name = None
        self._sorted = self._permutation()
        self._apply_filter()
        self.endResetModel()

    def column_index(self, name: str) -> int | None:
        """Model column of the column called ``name`` (0 for ``row``)."""
        if name == ROW_COLUMN:
            return 0
        for j, col in enumerate(self.columns):
            if col.name == name:
                return j + 1
        return None

    def factors(self, col) -> Factors:
        """The (cached) factorisation of a text column, for sorting and searching."""
        key = id(col.values)
        if key not in self._factors:
            self._factors[key] = factorize(col.values)
        return self._factors[key]

    def _permutation(self) -> np.ndarray:
        j = None if self.sort_name is None else self.column_index(self.sort_name)
        if not j:  # None or the row column
            rows = np.arange(self.n_rows, dtype=np.intp)
            return rows[::-1].copy() if (j == 0 and self.descending) else rows
        col = self.columns[j - 1]
        factors = None if self._numeric[j - 1] else self.factors(col)
        return sort_permutation(col.values, self.descending, factors).astype(np.intp, copy=False)

    def _apply_filter(self) -> None:
        if self.filter_mask is not None and self.filter_mask.shape == (self.n_rows,):
            self.order = self._sorted[self.filter_mask[self._sorted]]
        else:
            self.filter_mask = None
            self.order = self._sorted
        self._positions = None

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        """Sort by a column (the header's click): a stable argsort, missing values last."""
        if column < 0 or column > len(self.columns):
            name, descending = None, False
        else:
            name = ROW_COLUMN if column == 0 else self.columns[column - 1].name
            descending = order == Qt.SortOrder.DescendingOrder
        if (name, descending) == (self.sort_name, self.descending) and self._sorted.size == self.n_rows:
            return  # the header asks twice (sortByColumn and the indicator's signal)
        self.beginResetModel()
        self.sort_name, self.descending = name, descending
        self._sorted = self._permutation()
        self._apply_filter()
        self.endResetModel()

    def set_filter(self, mask: np.ndarray | None) -> None:
        """Show only the data-set rows of ``mask`` (None: every row), in the sort order."""
        self.beginResetModel()
        self.filter_mask = None if mask is None else np.asarray(mask, dtype=bool).copy()
        self._apply_filter()
        self.endResetModel()

    def set_selected(self, mask: np.ndarray) -> None:
        """The selection mask over data-set rows (painted with the highlight colours)."""
        mask = np.asarray(mask, dtype=bool)
        self.selected = mask if mask.shape == (self.n_rows,) else np.zeros(self.n_rows, dtype=bool)
        if self.order.size and self.columnCount():
            self.dataChanged.emit(self.index(0, 0), self.index(self.order.size - 1, self.columnCount() - 1),
                                  [Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ForegroundRole])

    # -- positions <-> data-set rows ----------------------------------------------------------------
    @property
    def positions(self) -> np.ndarray:
        """Display position of every data-set row (-1 where the row is filtered out)."""
        if self._positions is None:
            pos = np.full(self.n_rows, -1, dtype=np.intp)
            pos[self.order] = np.arange(self.order.size, dtype=np.intp)
            self._positions = pos
        return self._positions

    def rows_at(self, positions) -> np.ndarray:
        """Data-set rows shown at display ``positions``."""
        return self.order[np.asarray(positions, dtype=np.intp)]

    def selected_positions(self) -> np.ndarray:
        """Display positions of the selected rows, in display order."""
        return np.flatnonzero(self.selected[self.order]) if self.selected.size else np.zeros(0, dtype=np.intp)

    # -- QAbstractTableModel ------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else int(self.order.size)

    def columnCount(self, parent=QModelIndex()) -> int:
        if parent.isValid() or not (self.columns or self.n_rows):
            return 0
        return len(self.columns) + 1

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        r = int(self.order[index.row()])
        c = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return str(r) if c == 0 else format_value(self.columns[c - 1].values[r])
        if role == Qt.ItemDataRole.BackgroundRole:
            return self._hl_bg if self.selected[r] else None
        if role == Qt.ItemDataRole.ForegroundRole:
            return self._hl_fg if self.selected[r] else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if c == 0 or self._numeric[c - 1] else _LEFT
        if role == Qt.ItemDataRole.UserRole:  # the raw value
            return r if c == 0 else self.columns[c - 1].values[r]
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return ROW_COLUMN if section == 0 else self.columns[section - 1].name
        if role == Qt.ItemDataRole.ToolTipRole:
            return "Row index in the data set" if section == 0 else self.tooltips[section - 1]
        return None

    def flags(self, index):
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable if index.isValid() else Qt.ItemFlag.NoItemFlags
