"""What to do with a selection: the Selection menu and the map's context menu.

* Select all (Ctrl+A), Invert (Ctrl+I), Clear (Esc) — of the data set shown on the map; the
  keys act while the map has the focus (the data table keeps its own Ctrl+A, "every shown row",
  and a search box its Esc), the menu entries anywhere;
* **New data set from selection** — ``dataset.subset(rows)`` added to the session, with its
  provenance ("rows 3, 7, … of iris (selected on the map of run #2)") as the new data set's
  source and in the log;
* **Label the selection…** — manual annotation: a dialog asks for a column and a label; the
  current label column's name edits the labels (a label that is already a class joins it),
  an existing meta / target column is written into, a new name makes a new meta column (the
  label column when the data set has none). No column is ever renamed; the dialog says what
  will happen before anything changes, and Edit ▸ Undo takes it back. The map recolours.
* **Extend / classify the selection** — when the map's run has a fitted model, extend it to
  the selected rows on a worker thread (``window.start_job``); the extension is named after the
  selection and lands in the run's extensions (drawn with × on the map for embeddings).

The status bar says what is selected after every change. Actions that need a selection are
disabled while nothing is selected, and say "Select points first" when called anyway.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QMenu,
    QVBoxLayout,
)

from manifold_studio.errors import ManifoldStudioError, error_message
from manifold_studio.gui.undo import push_label
from manifold_studio.session import annotate
from manifold_studio.session import selection as ops
from manifold_studio.session.annotate import writable_columns
from manifold_studio.session.lifecycle import prepare_extension

SELECT_FIRST = "Select points first: drag a rectangle or a lasso on the map (Rectangle / Lasso in its toolbar)."
#: at most this many existing classes are offered in the label dialog
MAX_OFFERED_CLASSES = 200
DEFAULT_LABEL_COLUMN = "annotation"


def label_plan(dataset, column: str, value: str, n_selected: int) -> tuple[bool, str]:
    """(allowed, sentence) — what labelling ``n_selected`` rows of ``dataset`` with ``value`` in
    ``column`` will do, said before it is done. No column is ever renamed: the current label
    column's name edits the labels, another existing meta / target column is written into, and
    a new name makes a new meta column (the label column when the data set has no label yet)."""
    column, value = column.strip(), str(value).strip()
    if not column:
        return False, "Type the name of the column to write into (a new name makes a new column)."
    if not value:
        return False, "Type the label to give the selected rows."
    rows = f"{n_selected:,} selected row{'s' if n_selected != 1 else ''}"
    current = (dataset.label_name or "label") if dataset.labels is not None else None
    table = dataset.table
    if column == current:
        stored, converted = ops.coerce_label(value, dataset.labels)
        joins = bool(np.any(dataset.labels == stored)) if converted is dataset.labels else False
        klass = f"'{value}' is already a class: they join it" if joins else f"'{value}' is a new class"
        text = "" if converted is dataset.labels else " The labels become text."
        return True, (f"'{column}' is already this data set's label column: it is edited, not created — "
                      f"the {rows} get '{value}' ({klass}); the other rows keep their labels.{text}")
    if table is not None and column in table:
        role = table.column(column).role
        if role not in ("meta", "target"):
            return False, (f"'{column}' is a {role} column: labels go into a meta or target column, or a new "
                           "one (type a new name).")
        return True, (f"Writes into the {role} column '{column}': the {rows} get '{value}'; the other rows "
                      "keep their values.")
    if table is None and dataset.feature_names and column in dataset.feature_names:
        return False, f"'{column}' is a feature: type a new column name."
    if current is None:
        return True, (f"Creates the label column '{column}': the {rows} get '{value}', the other "
                      f"{dataset.n_samples - n_selected:,} rows are left unlabelled ('').")
    return True, (f"Creates the meta column '{column}': the {rows} get '{value}', the other "
                  f"{dataset.n_samples - n_selected:,} rows have no value; the label column '{current}' "
                  "is not changed.")


class LabelDialog(QDialog):
    """Column name and label for "Label the selection…", with a sentence saying what will happen."""

    def __init__(self, dataset, n_selected: int, parent=None):
        super().__init__(parent)
        self.dataset, self.n_selected = dataset, n_selected
        self.setWindowTitle(f"Label the selection ({n_selected:,} rows of {dataset.name})")
        self.column = QComboBox()
        self.column.setEditable(True)
        self.column.setObjectName("label_column")
        names = writable_columns(dataset)
        self.column.addItems(names or [DEFAULT_LABEL_COLUMN])
        if names and DEFAULT_LABEL_COLUMN not in names:
            self.column.addItem(DEFAULT_LABEL_COLUMN)  # a new meta column
        self.value = QComboBox()
        self.value.setEditable(True)
        self.value.setObjectName("label_value")
        if dataset.labels is not None:
            classes = np.unique(dataset.labels.astype(str)) if dataset.labels.dtype.kind != "O" \
                else sorted({str(v) for v in dataset.labels.tolist()})
            self.value.addItems([str(c) for c in list(classes)[:MAX_OFFERED_CLASSES]])
        self.value.setCurrentText("")
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setObjectName("label_note")
        form = QFormLayout()
        form.addRow("Column:", self.column)
        form.addRow("Label:", self.value)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.note)
        lay.addWidget(self.buttons)
        self.column.editTextChanged.connect(lambda _t: self._update())
        self.value.editTextChanged.connect(lambda _t: self._update())
        self._update()

    def values(self) -> tuple[str, str]:
        return self.column.currentText().strip(), self.value.currentText().strip()

    def _update(self) -> None:
        ok, text = label_plan(self.dataset, *self.values(), self.n_selected)
        self.note.setText(text)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)


class SelectionActions(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.session = window.session
        self.job = None
        #: tests replace this to answer the label dialog: f(dialog) -> (column, value) or None
        self.ask_label = None
        w = window

        def action(text, slot, shortcut=None, tip=""):
            act = QAction(text, w)
            if shortcut:
                act.setShortcut(QKeySequence(shortcut))
            act.setToolTip(tip or text)
            act.setStatusTip(tip or text)
            act.triggered.connect(lambda _=False: slot())
            return act

        self.select_all_action = action("Select &all", self.select_all, "Ctrl+A", "Select every row of the data set on the map.")
        self.invert_action = action("&Invert selection", self.invert, "Ctrl+I", "Select exactly the rows not selected.")
        self.clear_action = action("&Clear selection", self.clear, "Esc", "Select nothing.")
        self.subset_action = action("&New data set from selection", self.new_dataset,
                                    tip="Add the selected rows as a new data set (with a provenance line).")
        self.label_action = action("&Label the selection…", self.label_selection,
                                   tip="Give the selected rows a label (creates or edits the label column).")
        self.extend_action = action("&Extend / classify the selection", self.extend_selection,
                                    tip="Apply the map's fitted model to the selected rows (out-of-sample extension).")
        self.needs_selection = (self.subset_action, self.label_action, self.extend_action)
        menu = self.menu = QMenu("&Selection", w)
        for act in (self.select_all_action, self.invert_action, self.clear_action):
            menu.addAction(act)
        menu.addSeparator()
        for act in self.needs_selection:
            menu.addAction(act)
        help_menu = w.menus.get("help")
        if help_menu is not None:
            w.menuBar().insertMenu(help_menu.menuAction(), menu)
        else:
            w.menuBar().addMenu(menu)
        w.menus["selection"] = menu
        view = w.map_view
        keyed = (self.select_all_action, self.invert_action, self.clear_action)
        for act in keyed:  # keys while the map (or its toolbar) has the focus
            act.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            if view is not None:
                view.addAction(act)
        if view is not None:  # the map's right-click menu gets the same actions
            vb_menu = view.plot_item.getViewBox().menu
            if vb_menu is not None:
                vb_menu.addSeparator()
                vb_menu.addMenu(menu)
            view.runShown.connect(lambda _run: self.update_enabled())
        w.selection.changed.connect(self._changed)
        w.bridge.datasetsChanged.connect(self.update_enabled)
        self.update_enabled()

    # -- which data set --------------------------------------------------------------------------
    def dataset_name(self) -> str | None:
        """The data set the actions work on: the map's, else the current one."""
        view = self.window.map_view
        ds = getattr(view, "dataset", None) if view is not None else None
        if ds is not None and ds.name in self.session.datasets and self.session.datasets[ds.name] is ds:
            return ds.name
        return self.session.current_dataset_name

    def _selected(self):
        """(data set, selected rows) or (None, None) after saying why."""
        name = self.dataset_name()
        if name is None:
            self.window.report_error("No data set is loaded: load data first.", log=False)
            return None, None
        rows = self.window.selection.rows(name)
        if not rows.size:
            self.window.report_error(SELECT_FIRST, log=False)
            return None, None
        return self.session.datasets[name], rows

    def _changed(self, name: str) -> None:
        self.window.show_status(f"{name}: {self.window.selection.describe(name)}")
        self.update_enabled()

    def update_enabled(self) -> None:
        name = self.dataset_name()
        any_data = name is not None
        has = any_data and self.window.selection.count(name) > 0
        for act in (self.select_all_action, self.invert_action, self.clear_action):
            act.setEnabled(any_data)
        for act in self.needs_selection:
            act.setEnabled(has)
            act.setToolTip(act.statusTip() if has else SELECT_FIRST)
        self.extend_action.setEnabled(has and self.fitted_run() is not None)

    # -- simple ones ------------------------------------------------------------------------------
    def select_all(self) -> None:
        name = self.dataset_name()
        if name is not None:
            self.window.selection.select_all(name)

    def invert(self) -> None:
        name = self.dataset_name()
        if name is not None:
            self.window.selection.invert(name)

    def clear(self) -> None:
        name = self.dataset_name()
        if name is not None:
            self.window.selection.clear(name)

    def where(self, name: str) -> str:
        """Where the selection was made, for the provenance line."""
        run = self.window.map_view.run
        if run is not None and run.dataset_name == name:
            return f"selected on the map of run #{run.id}"
        return "selected"

    # -- new data set ---------------------------------------------------------------------------
    def new_dataset(self, name: str | None = None) -> str | None:
        """Add the selected rows as a new data set; returns its name (None when nothing is selected)."""
        ds, rows = self._selected()
        if ds is None:
            return None
        line = ops.provenance(rows, ds.name, self.where(ds.name))
        sub = ds.subset(rows, name or f"{ds.name} selection")
        sub.source = line
        new_name = self.session.add_dataset(sub, make_current=False)
        self.session.log(f"New data set '{new_name}' ({len(rows):,} rows) from {line}", dataset=new_name)
        self.window.show_status(f"New data set '{new_name}': {len(rows):,} rows of {ds.name}.")
        return new_name

    # -- labels ---------------------------------------------------------------------------------
    def label_selection(self, column: str | None = None, value: str | None = None) -> bool:
        """Label the selected rows with ``value`` in label column ``column`` (asked in a dialog when
        not given). Returns True when the labels changed."""
        ds, rows = self._selected()
        if ds is None:
            return False
        if column is None or value is None:
            dlg = LabelDialog(ds, len(rows), self.window)
            if self.ask_label is not None:
                answer = self.ask_label(dlg)
            else:
                answer = dlg.values() if dlg.exec() == QDialog.DialogCode.Accepted else None
            if answer is None:
                return False
            column, value = answer
        ok, plan = label_plan(ds, column, value, len(rows))
        if not ok:
            self.window.report_error(plan, log=False)
            return False
        column = column.strip()
        before = annotate.snapshot(ds)
        try:
            if ds.labels is None and (ds.table is None or column not in ds.table):
                ds.labels, stored, _existed = ops.label_rows(None, rows, value, ds.n_samples)
                ds.label_name = column
            elif ds.labels is not None and column == (ds.label_name or "label"):
                ds.labels, stored, _existed = ops.label_rows(ds.labels, rows, value, ds.n_samples)
            else:
                annotate.label_into_column(ds, rows, column, value)
                stored = value.strip()
        except Exception as exc:  # noqa: BLE001 - refused: nothing changed
            annotate.restore(ds, before)
            self.window.report_error(f"Could not label the selection: {error_message(exc)}", log=False)
            return False
        self.session.log(f"Labelled {ops.provenance(rows, ds.name)} as '{stored}' in column "
                         f"'{column}': {plan}", dataset=ds.name)
        self.window.show_status(plan, 20_000)
        push_label(self.window, ds.name, before, annotate.snapshot(ds), f"Label {len(rows):,} rows '{stored}'")
        self.dataset_edited(ds.name)
        return True

    def dataset_edited(self, name: str) -> None:
        """Tell the session and the views that data set ``name`` changed in place."""
        self.session.dataset_changed(name)
        self._redraw(name)

    def _redraw(self, name: str) -> None:
        """Show the current run again so that every view reads the new labels."""
        run = self.session.current_run
        if run is not None and run.dataset_name == name:
            self.window.show_run(run)

    # -- extend ---------------------------------------------------------------------------------
    def fitted_run(self):
        """The map's run when it has a fitted model that can extend, else None."""
        run = self.window.map_view.run
        if run is None or not run.succeeded or run.estimator is None or not hasattr(run.estimator, "extend"):
            return None
        return run

    @property
    def busy(self) -> bool:
        return self.job is not None and not self.job.finished

    def extend_selection(self):
        """Extend the map's fitted run to the selected rows on a worker thread; returns the job."""
        ds, rows = self._selected()
        if ds is None:
            return None
        run = self.fitted_run()
        if run is None:
            self.window.report_error("Extend / classify needs a fitted model: show a finished run on the "
                                     "map first.", log=False)
            return None
        if self.busy:
            self.window.report_error("The selection is already being extended: wait for it or cancel it.", log=False)
            return None
        ext_name = f"selection of {len(rows):,} rows of {ds.name}"
        try:
            spec = prepare_extension(self.session, run.id, ds.name, rows, what=f"The selection of {ds.name}")
        except ManifoldStudioError as exc:
            self.window.report_error(f"Cannot extend run #{run.id} to the {ext_name}: {error_message(exc)}", log=False)
            return None
        rid, dname = run.id, ds.name
        self.job = self.window.start_job(
            spec, title=f"Extending run #{rid} to the {ext_name}",
            on_success=lambda res: self._extended(rid, dname, ext_name, res),
            on_failure=lambda msg, detail: self.window.report_error(
                f"Could not extend run #{rid} to the {ext_name}: {msg}", detail),
            on_cancel=lambda: self.window.show_status(f"Extension of run #{rid} to the {ext_name} cancelled."))
        return self.job

    def _extended(self, run_id: int, dataset_name: str, ext_name: str, res) -> None:
        if run_id not in self.session.runs:
            self.window.report_error(f"Run #{run_id} was removed meanwhile: the extension is dropped.")
            return
        try:
            self.session.add_extension(run_id, res.values, dataset_name, name=ext_name, rows=res.rows,
                                       time_s=res.time_s)
        except Exception as exc:  # noqa: BLE001 - say why, keep everything
            self.window.report_error(f"Could not record the extension: {error_message(exc)}")
            return
        self.window.show_status(f"Run #{run_id} extended to the {ext_name} in {res.time_s:.2f} s.")


def install_selection_actions(window) -> SelectionActions:
    """The Selection menu (before Help), the map's context menu entries and the status line."""
    window.selection_actions = SelectionActions(window)
    return window.selection_actions
