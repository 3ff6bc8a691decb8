"""The "Table" dock: the current data set as a table, linked both ways with the selection.

- Columns: ``row`` (the data-set row index), the features, the label and the result columns of
  every finished run (:func:`manifold_studio.tables.dataset_columns.dataset_columns`); a new run adds its
  columns. Header tooltips say where a column comes from.
- A virtual model (:mod:`.data_table_model`): a million rows scroll and sort at once.
- Selection: the table shows ``window.selection`` for its data set (highlighted rows) and
  selecting in the table sets it — click, Shift-click (range from the last clicked row),
  Ctrl-click (toggle a row), Ctrl+Shift-click (add a range), Alt-click (remove a row), dragging,
  Shift+arrows, Ctrl+A (every shown row). "Selected rows only" hides the other rows.
- Search (the Projector's): label text, a row (``12``), a range (``10-20``) or a condition
  (``petal_length > 5``); Enter selects the matching rows in every view
  (:func:`manifold_studio.tables.search.search_rows`).
- Ctrl+C copies the selected rows (tab-separated, with a header) to the clipboard.

Install with :func:`install_data_table` (``window.data_table``).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.gui.data_table_model import DataTableModel
from manifold_studio.session import selection as ops
from manifold_studio.tables.dataset_columns import FEATURE, LABEL, META, dataset_columns
from manifold_studio.tables.export import rows_as_tsv
from manifold_studio.tables.search import ROW_COLUMN, SearchError, search_rows

#: above this many rows, the clipboard text is built on a worker thread
COPY_IN_THREAD_ABOVE = 20_000

_NAV_KEYS = {Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown, Qt.Key.Key_Home,
             Qt.Key.Key_End}
_CTRL, _SHIFT, _ALT = (Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier,
                       Qt.KeyboardModifier.AltModifier)


def _span(a: int, b: int) -> np.ndarray:
    lo, hi = (a, b) if a <= b else (b, a)
    return np.arange(lo, hi + 1, dtype=np.intp)


class DataTableView(QTableView):
    """A table view whose selection is the data set's selection mask (see the model): mouse and
    keys are turned into :meth:`DataTable.pick` calls with display positions."""

    def __init__(self, table: "DataTable"):
        super().__init__(table)
        self.table = table
        self.anchor: int | None = None   # the last clicked position (Shift ranges start there)
        self._drag: tuple | None = None  # (anchor, mask before the press, mode) while dragging
        self._drag_last: int | None = None
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setWordWrap(False)
        self.setCornerButtonEnabled(False)
        vh = self.verticalHeader()
        vh.hide()
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.fontMetrics().height() + 6)
        hh = self.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setDefaultSectionSize(96)
        hh.setHighlightSections(False)
        if hasattr(hh, "setSortIndicatorClearable"):  # a third click returns to data-set order
            hh.setSortIndicatorClearable(True)
        hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.setWhatsThis("Click a row to select it; Shift-click selects a range, Ctrl-click toggles a row, "
                        "Alt-click removes it; drag to select several. Ctrl+A selects every shown row, "
                        "Ctrl+C copies the selected rows. Click a header to sort.")

    def _position_at(self, y: int) -> int:
        n = self.model().rowCount() if self.model() is not None else 0
        if n == 0:
            return -1
        y = min(max(y, 0), max(self.viewport().height() - 1, 0))
        p = self.rowAt(y)
        return n - 1 if p < 0 else p

    def mousePressEvent(self, event):
        self._drag = None
        super().mousePressEvent(event)
        if event.button() != Qt.MouseButton.LeftButton:
            return
        p = self.rowAt(int(event.position().y()))
        if p < 0:
            return
        mods = event.modifiers()
        base = self.table.model.selected.copy()
        if mods & _SHIFT and self.anchor is not None:
            mode = ops.ADD if mods & _CTRL else ops.REPLACE
            self.table.pick(_span(self.anchor, p), mode)
            self._drag = (self.anchor, base, mode)
        else:
            mode = ops.REMOVE if mods & _ALT else ops.TOGGLE if mods & _CTRL else ops.REPLACE
            self.table.pick(np.array([p]), mode)
            self.anchor = p
            self._drag = (p, base, ops.ADD if mode == ops.TOGGLE else mode)
        self._drag_last = p

    def mouseMoveEvent(self, event):
        if self._drag is None or not event.buttons() & Qt.MouseButton.LeftButton:
            super().mouseMoveEvent(event)
            return
        p = self._position_at(int(event.position().y()))
        if p < 0 or p == self._drag_last:
            return
        self._drag_last = p
        anchor, base, mode = self._drag
        self.table.pick(_span(anchor, p), mode, base=base)
        self.scrollTo(self.model().index(p, max(self.currentIndex().column(), 0)))

    def mouseReleaseEvent(self, event):
        self._drag = None
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event):
        if event.matches(QKeySequence.StandardKey.SelectAll):
            self.table.select_all_shown()
            return
        if event.matches(QKeySequence.StandardKey.Copy):
            self.table.copy_selection()
            return
        super().keyPressEvent(event)
        if event.key() not in _NAV_KEYS or not self.currentIndex().isValid():
            return
        p = self.currentIndex().row()
        mods = event.modifiers()
        if mods & _SHIFT and self.anchor is not None:
            self.table.pick(_span(self.anchor, p), ops.REPLACE)
        elif not mods & (_CTRL | _ALT):
            self.anchor = p
            self.table.pick(np.array([p]), ops.REPLACE)


class DataTable(QWidget):
    """The table of the current data set (``window.session.current_dataset_name``)."""

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.name: str | None = None
        self.last_message = ""  # the last message shown (search / copy), for tests and tooltips
        self._key = None
        self._dirty = True
        self._own_change = False

        self.search = QLineEdit()
        self.search.setClearButtonEnabled(True)
        self.search.setPlaceholderText("Search: label text, row 12, rows 10-20 or petal_length > 5 — Enter selects")
        self.search.setToolTip("Enter selects the matching rows in every view of this data set:\n"
                               "• text: rows whose label (or any text column) contains it, any case\n"
                               "• 12: row 12 of the data set;  10-20: rows 10 to 20\n"
                               "• column op number, e.g. petal_length > 5 (op: < <= > >= == !=)\n"
                               "• conditions joined by and / or, e.g. proline > 1000 and flavanoids > 3")
        self.search.returnPressed.connect(self.run_search)
        self.only_selected = QCheckBox("Selected rows only")
        self.only_selected.setToolTip("Show only the selected rows (updated when the selection changes elsewhere).")
        self.only_selected.toggled.connect(self._filter_toggled)
        self.info = QLabel()
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.info.setToolTip("Click a row to select it; Shift-click selects a range, Ctrl-click toggles a row, "
                             "Alt-click removes it; drag to select several. Ctrl+A selects every shown row, "
                             "Ctrl+C copies the selected rows. Click a header to sort (a third click: data-set order).")

        self.model = DataTableModel(self)
        self.view = DataTableView(self)
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)

        self.copy_action = QAction("&Copy selected rows", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.setToolTip("Copy the selected rows to the clipboard as tab-separated text with a header.")
        self.copy_action.triggered.connect(self.copy_selection)
        self.view.addAction(self.copy_action)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.only_selected)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.info)

        window.bridge.datasetsChanged.connect(self._content_may_have_changed)
        window.bridge.runChanged.connect(self._run_changed)
        window.selection.changed.connect(self._selection_changed)
        self.refresh()

    # -- content ------------------------------------------------------------------------------------
    def _content_key(self):
        session = self.window.session
        name = session.current_dataset_name
        ds = session.datasets.get(name) if name else None
        if ds is None:
            return None
        runs = tuple((r.id, len(r.extensions), id(r.embedding), id(r.labels))  # only finished runs have columns
                     for r in session.runs.values() if r.dataset_name == name and r.succeeded)
        return (name, id(ds), ds.n_samples, id(ds.labels), runs)

    def _content_may_have_changed(self, *_args) -> None:
        if self._content_key() == self._key:
            return
        self._dirty = True
        if self.isVisible():
            self.refresh()
        else:  # hidden behind another tab: refresh when shown
            self._update_info()

    def _run_changed(self, run) -> None:
        if run is None or run.dataset_name == self.window.session.current_dataset_name:
            self._content_may_have_changed()

    def showEvent(self, event):
        super().showEvent(event)
        if self._dirty or self._content_key() != self._key:
            self.refresh()

    def refresh(self) -> None:
        """Rebuild the columns from the session (the current data set and its runs)."""
        session = self.window.session
        key = self._content_key()
        self._key, self._dirty = key, False
        if key is None:
            self.name = None
            self.model.set_columns([], 0)
            self._update_info()
            return
        name = key[0]
        ds = session.dataset(name)
        columns = dataset_columns(session, name)
        if name != self.name:
            self.model.set_filter(None)
            self.view.anchor = None
        self.name = name
        self.model.set_columns(columns, ds.n_samples, [self._tooltip(c, name) for c in columns])
        self._fit_header_widths()
        self._sync_selection(scroll=False)

    def _fit_header_widths(self) -> None:
        """Columns at least as wide as their names (not measured over the rows: a million rows)."""
        hh = self.view.horizontalHeader()
        fm = hh.fontMetrics()
        for j in range(self.model.columnCount()):
            name = self.model.headerData(j, Qt.Orientation.Horizontal)
            hh.resizeSection(j, min(260, max(64 if j == 0 else hh.defaultSectionSize(),
                                             fm.horizontalAdvance(name) + 28)))

    def _tooltip(self, col, dataset_name: str) -> str:
        kind = "numbers" if col.numeric else "text"
        if col.kind == FEATURE:
            return f"Feature '{col.name}' of data set '{dataset_name}' ({kind})"
        if col.kind == LABEL:
            return f"Label column '{col.name}' of data set '{dataset_name}' ({kind})"
        if col.kind == META:
            return f"Column '{col.name}' of data set '{dataset_name}', not a feature ({kind})"
        run = self.window.session.runs.get(col.run_id)
        if run is None:
            return f"Result column '{col.name}'"
        algo = run.algorithm_name or run.algorithm_id
        params = run.params_text()
        return (f"Result of run #{run.id} {algo} ({run.kind or 'run'}{'; ' + params if params else ''}); "
                f"empty where the run has no value for a row")

    def _update_info(self) -> None:
        m = self.model
        if self.name is None:
            self.info.setText("No data set loaded.")
            return
        shown = f"{m.rowCount():,} of {m.n_rows:,} rows shown" if m.filter_mask is not None else f"{m.n_rows:,} rows"
        stale = " (updates when shown)" if self._dirty else ""
        self.info.setText(f"{self.name}: {shown} · {len(m.columns)} columns · "
                          f"{self.window.selection.describe(self.name)}{stale}")

    # -- selection ----------------------------------------------------------------------------------
    def pick(self, positions: np.ndarray, mode: str = ops.REPLACE, base: np.ndarray | None = None) -> None:
        """Select the rows at display ``positions`` with ``mode`` (over ``base``, a mask, when given:
        a drag recomputes its range from the selection at the press)."""
        if self.name is None or self.model.n_rows == 0:
            return
        rows = self.model.rows_at(positions)
        self._own_change = True
        try:
            if base is not None and base.shape == (self.model.n_rows,):
                self.window.selection.select(self.name, ops.combine(base, rows, self.model.n_rows, mode))
            else:
                self.window.selection.select(self.name, rows, mode)
        finally:
            self._own_change = False

    def select_all_shown(self) -> None:
        """Ctrl+A: select every row shown (every row, or the filtered rows)."""
        if self.name is not None and self.model.rowCount():
            self.pick(np.arange(self.model.rowCount()), ops.REPLACE)

    def selected_rows(self) -> np.ndarray:
        """The selected data-set rows shown in the table, in display order."""
        return self.model.rows_at(self.model.selected_positions())

    def _selection_changed(self, name: str) -> None:
        if name == self.name:
            self._sync_selection(scroll=not self._own_change)

    def _sync_selection(self, scroll: bool) -> None:
        mask = self.window.selection.mask(self.name)
        if self.only_selected.isChecked() and not self._own_change:
            self.model.set_filter(mask)
        self.model.set_selected(mask)
        if scroll:
            pos = self.model.selected_positions()
            if pos.size:
                self.view.scrollTo(self.model.index(int(pos[0]), 0), QAbstractItemView.ScrollHint.PositionAtTop)
        self._update_info()

    def _filter_toggled(self, on: bool) -> None:
        self.model.set_filter(self.window.selection.mask(self.name) if on and self.name else None)
        self.view.anchor = None
        self._update_info()

    # -- search -------------------------------------------------------------------------------------
    def run_search(self, text: str | None = None) -> int:
        """Select the rows matched by the search box's text (or ``text``); returns how many.
        Bad input reports a clear message and changes nothing."""
        if text is not None:
            self.search.setText(text)
        query = self.search.text()
        if self._dirty or self._content_key() != self._key:
            self.refresh()
        if self.name is None:
            return self._fail("No data set is loaded: there is nothing to search.")
        try:
            result = search_rows(query, self.model.columns, self.model.n_rows, self.model.factors)
        except SearchError as exc:
            return self._fail(str(exc))
        if result.count == 0:
            return self._fail(f"No row matches {result.description}; the selection is unchanged.")
        if self.only_selected.isChecked():
            self.only_selected.setChecked(False)  # the matches must be visible
        self.window.selection.select(self.name, result.mask)
        self.last_message = f"{result.count:,} row{'s' * (result.count != 1)} match {result.description}: selected."
        self.window.show_status(self.last_message)
        return result.count

    def _fail(self, message: str) -> int:
        self.last_message = message
        self.window.report_error(message, log=False)
        return 0

    # -- clipboard ----------------------------------------------------------------------------------
    def copy_selection(self) -> None:
        """Copy the selected rows (in the table's order) as tab-separated text with a header and
        full-precision numbers (:func:`manifold_studio.tables.export.rows_as_tsv`, as File ▸ Export)."""
        rows = self.selected_rows()
        if rows.size == 0:
            self._fail("Nothing is selected: select rows in the table or on a map, then copy.")
            return
        header = [ROW_COLUMN] + [c.name for c in self.model.columns]
        columns = [np.arange(self.model.n_rows)] + [c.values for c in self.model.columns]
        if rows.size <= COPY_IN_THREAD_ABOVE:
            self._copied(rows_as_tsv(header, columns, rows), rows.size)
            return

        def build(progress=None):
            return rows_as_tsv(header, columns, rows)

        self.window.start_job(build, title=f"Copying {rows.size:,} rows",
                              on_success=lambda text, n=rows.size: self._copied(text, n))

    def _copied(self, text: str, n: int) -> None:
        QApplication.clipboard().setText(text)
        self.last_message = f"Copied {n:,} row{'s' * (n != 1)} to the clipboard (tab-separated, with a header)."
        self.window.show_status(self.last_message)


def install_data_table(window) -> DataTable:
    """Create the "Table" dock (bottom area) as ``window.data_table``."""
    table = DataTable(window)
    window.data_table = table
    window.add_dock("table", "Table", table, "bottom")
    return table
