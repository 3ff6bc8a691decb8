"""What the analyst looks at, owned by the session (Qt-free): the selection, the views' settings
and the report's items. Each change is a command (:mod:`manifold_studio.session.view_commands`)
that undo records; every view, the project, the report and the CSV export of the selected rows
read them here. The window's :class:`~manifold_studio.gui.selection_model.SelectionModel` is a Qt
adapter over :meth:`ViewState.selection_mask` / :meth:`ViewState.set_selection`.

::

    s.set_selection("iris", [0, 3, 7])                  # rows of the data set (REPLACE)
    s.set_selection("iris", [9], mode="add")            # Shift: add; "remove", "toggle"
    s.selected_rows("iris")                             # array([0, 3, 7, 9])
    s.set_view_setting("map", "colour", "column:petal_length")
    s.view_setting("map", "colour")
    s.add_report_item(run_item(run)); s.set_report_caption(0, "The tree"); s.undo()

A selection belongs to the data set object it was made on: a data set removed and put back
(Edit ▸ Undo) keeps it; another one loaded under the same name starts with nothing selected.
"""
from __future__ import annotations

import weakref

import numpy as np

from manifold_studio.analysis.report import Report, ReportItem
from manifold_studio.errors import InvalidParameterError
from manifold_studio.session import selection as ops
from manifold_studio.session.records import SessionEvent
from manifold_studio.session.view_commands import (
    UNSET,
    AddReportItem,
    MoveReportItem,
    RemoveReportItem,
    SetReportCaption,
    SetSelection,
    SetViewSetting,
)

#: view settings are plain JSON data (the project stores them as they are)
_JSON_SCALARS = (str, int, float, bool, type(None))


def _plain(value, where: str):
    """``value`` as plain JSON data (lists for tuples), or InvalidParameterError naming ``where``."""
    if isinstance(value, _JSON_SCALARS):
        if isinstance(value, float) and not np.isfinite(value):
            raise InvalidParameterError(f"View setting {where} must be a finite number, not {value!r}.")
        return value
    if isinstance(value, np.generic):
        return _plain(value.item(), where)
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, where) for k, v in value.items()}
    raise InvalidParameterError(f"View setting {where} must be plain data (text, numbers, lists, "
                                f"dicts), not {type(value).__name__}.")


class ViewState:
    """Mixed into :class:`~manifold_studio.session.model.Session` (which provides ``datasets``,
    ``dataset``, ``report``, ``execute`` and ``_notify``)."""

    def _init_view_state(self) -> None:
        #: data set name -> (a weak reference to the Dataset it was made on, boolean mask over its
        #: rows): a removed data set is not kept alive by its selection
        self._selection: dict[str, tuple] = {}
        #: (data set name, selection name) -> (Dataset, mask): kept selections (Explain's "B")
        self._saved_selections: dict[tuple[str, str], tuple] = {}
        #: view -> {key: plain JSON value}
        self._view_settings: dict[str, dict] = {}

    # -- events (the commands call these) ---------------------------------------------------------
    def notify_selection(self, name: str, saved: bool = False) -> None:
        self._notify(SessionEvent("saved_selection_changed" if saved else "selection_changed", dataset=name))

    def notify_setting(self, view: str, key: str) -> None:
        self._notify(SessionEvent("view_setting_changed", setting=(view, key)))

    def notify_report(self) -> None:
        self._notify(SessionEvent("report_changed"))

    # -- the selection ----------------------------------------------------------------------------
    def selection_mask(self, name: str | None) -> np.ndarray:
        """The selection of data set ``name`` as a boolean mask over its rows (all False when
        nothing is selected; empty when the data set is not loaded)."""
        return self._mask(name, self._selection.get(name))

    def _mask(self, name: str | None, entry) -> np.ndarray:
        ds = self.datasets.get(name) if name is not None else None
        if ds is None:
            return np.zeros(0, dtype=bool)
        if entry is None or entry[0]() is not ds or entry[1].shape != (ds.n_samples,):
            return np.zeros(ds.n_samples, dtype=bool)
        return entry[1]

    def selected_rows(self, name: str | None) -> np.ndarray:
        """The selected rows of data set ``name``, sorted."""
        return np.flatnonzero(self.selection_mask(name))

    def selections(self) -> dict[str, np.ndarray]:
        """Every loaded data set with rows selected: name -> its selected rows."""
        out = {name: self.selected_rows(name) for name in self._selection if name in self.datasets}
        return {name: rows for name, rows in out.items() if rows.size}

    def set_selection(self, name: str, rows, mode: str = ops.REPLACE, text: str = ""):
        """Select ``rows`` (indices or a mask) of data set ``name`` with ``mode`` (replace, add,
        remove, toggle): a command, None when the selection stays the same."""
        ds = self.dataset(name)
        current = self.selection_mask(name)
        mask = ops.combine(current, rows, ds.n_samples, mode)
        return self._select({name: mask}, text or f"Select {int(mask.sum()):,} row(s) of {name}")

    def select_all(self, name: str):
        return self._select({name: np.ones(self.dataset(name).n_samples, dtype=bool)}, f"Select all rows of {name}")

    def invert_selection(self, name: str):
        self.dataset(name)
        return self._select({name: ~self.selection_mask(name)}, f"Invert the selection of {name}")

    def clear_selection(self, name: str | None = None):
        """Clear the selection of ``name`` (None: of every data set); one command."""
        names = [n for n in self._selection if n in self.datasets] if name is None else [name]
        return self._select({n: None for n in names},
                            "Clear the selection" + (f" of {name}" if name else ""))

    def _select(self, changes: dict, text: str):
        changes = {n: (None if m is None or not m.any() else m) for n, m in changes.items()}
        changes = {n: m for n, m in changes.items()
                   if not (m is None and not self.selection_mask(n).any())
                   and not (m is not None and np.array_equal(m, self.selection_mask(n)))}
        if not changes:
            return None
        return self.execute(SetSelection(self, changes, text))

    # -- kept (named) selections ------------------------------------------------------------------
    def saved_selection(self, name: str | None, label: str) -> np.ndarray | None:
        """The rows kept as selection ``label`` of data set ``name`` (None: none kept)."""
        rows = np.flatnonzero(self._mask(name, self._saved_selections.get((name, label))))
        return rows if rows.size else None

    def save_selection(self, name: str, label: str, rows=None):
        """Keep ``rows`` (default: the current selection) of data set ``name`` as selection
        ``label`` (a command; an empty selection forgets it)."""
        ds = self.dataset(name)
        mask = self.selection_mask(name) if rows is None else ops.as_mask(rows, ds.n_samples)
        now = self.saved_selection(name, label)
        if (now is None and not mask.any()) or (now is not None and np.array_equal(np.flatnonzero(mask), now)):
            return None
        return self.execute(SetSelection(self, {(name, str(label)): mask if mask.any() else None},
                                         f"Keep {int(mask.sum()):,} row(s) of {name} as selection {label}", saved=True))

    def saved_selections(self) -> dict[str, dict[str, np.ndarray]]:
        """Every loaded data set's kept selections: name -> {label: rows}."""
        out: dict[str, dict] = {}
        for name, label in self._saved_selections:
            rows = self.saved_selection(name, label)
            if rows is not None:
                out.setdefault(name, {})[label] = rows
        return out

    def restore_selections(self, selections: dict, saved: dict | None = None) -> None:
        """Set selections (name -> rows) without a command: a project being opened."""
        for name in list(self._selection):
            self._selection.pop(name)
            self.notify_selection(name)
        for name, rows in selections.items():
            ds = self.datasets.get(name)
            if ds is not None:
                self._selection[name] = (weakref.ref(ds), ops.as_mask(rows, ds.n_samples))
                self.notify_selection(name)
        self._saved_selections = {}
        for name, kept in (saved or {}).items():
            ds = self.datasets.get(name)
            for label, rows in (kept.items() if ds is not None else ()):
                self._saved_selections[(name, str(label))] = (weakref.ref(ds), ops.as_mask(rows, ds.n_samples))
            if ds is not None:
                self.notify_selection(name, saved=True)

    # -- view settings ----------------------------------------------------------------------------
    def view_setting(self, view: str, key: str, default=None):
        """Setting ``key`` of view ``view`` (``default`` when it was never set)."""
        return self._view_settings.get(view, {}).get(key, default)

    def view_settings(self) -> dict[str, dict]:
        """Every view's settings: ``{view: {key: value}}`` (a copy)."""
        return {view: dict(values) for view, values in self._view_settings.items() if values}

    def set_view_setting(self, view: str, key: str, value, text: str = "", merge: bool = False):
        """Give setting ``key`` of ``view`` the plain-data ``value``: a command, None when it
        already has it. ``merge``: a slider's or a text field's change, joined with the next change
        of the same setting into one undo step."""
        if not view or not key:
            raise InvalidParameterError("A view setting needs a view and a key.")
        value = _plain(value, f"{view}.{key}")
        if key in self._view_settings.get(view, {}) and self._view_settings[view][key] == value:
            return None
        return self.execute(SetViewSetting(self, view, key, value, text, merge))

    def note_view_setting(self, view: str, key: str, value) -> None:
        """Record what a view shows of its own accord, without a command: the colour a new run's
        map starts with, the settings a view starts with (so that undoing the analyst's first
        change brings them back)."""
        value = _plain(value, f"{view}.{key}")
        if self._view_settings.get(view, {}).get(key, UNSET) != value:
            self._view_settings.setdefault(view, {})[key] = value
            self.notify_setting(view, key)

    def restore_view_settings(self, settings: dict, announce: bool = True) -> None:
        """Set every view's settings without a command (a project being opened); values that are
        not plain data are left out."""
        old = self._view_settings
        self._view_settings = {}
        for view, values in (settings or {}).items():
            if isinstance(values, dict):
                for key, value in values.items():
                    try:
                        self._view_settings.setdefault(str(view), {})[str(key)] = _plain(value, f"{view}.{key}")
                    except InvalidParameterError:
                        continue
        if announce:
            for view, key in {(v, k) for d in (old, self._view_settings) for v in d for k in d[v]}:
                self.notify_setting(view, key)

    # -- the report -------------------------------------------------------------------------------
    def add_report_item(self, item: ReportItem):
        return self.execute(AddReportItem(self, item))

    def remove_report_item(self, index: int):
        return self.execute(RemoveReportItem(self, index))

    def move_report_item(self, index: int, to: int):
        """Move item ``index`` to position ``to`` (None when it is there already)."""
        if not self.report.items:
            raise IndexError("The report has no items to move.")
        index = self.report._index(index) % len(self.report)
        if max(0, min(int(to), len(self.report) - 1)) == index:
            return None
        return self.execute(MoveReportItem(self, index, to))

    def set_report_caption(self, index: int, caption: str):
        if self.report.items[self.report._index(index)].caption == str(caption):
            return None
        return self.execute(SetReportCaption(self, index, caption))

    def restore_report(self, items) -> None:
        """Make ``items`` the report without a command (a project being opened)."""
        self.report = Report(list(items))
        self.notify_report()
