"""Undo for removing a run or a data set, and for labelling a selection: ``window.undo_stack`` and Edit ▸ Undo / Redo.

Removing goes through :func:`remove_run` / :func:`remove_dataset`, which push a command on the
window's QUndoStack; its redo removes, its undo puts the very same object back into the session
(the Run under its own id, the Dataset under its own name with ``replace=True``), so the run log,
the data panel and the views follow through the session's events as for any other change. A
data set's selection is put back too. Opening a project clears the history (its runs and data
sets are then other objects). The session keeps a removed data set's selection with it, so
undoing the removal brings its selection back.
"""
from __future__ import annotations

from PySide6.QtGui import QKeySequence, QUndoCommand, QUndoStack

from manifold_studio.errors import error_message
from manifold_studio.gui.preferences import edit_menu
from manifold_studio.session.records import RUNNING

#: steps kept (each holds a removed data set or run in memory)
UNDO_LIMIT = 20


def undo_stack(window) -> QUndoStack:
    """``window.undo_stack`` (made on first use, so panels may push before the menu exists)."""
    stack = window.undo_stack
    if stack is None:
        stack = window.undo_stack = QUndoStack(window)
        stack.setUndoLimit(UNDO_LIMIT)
    return stack


class _SessionCommand(QUndoCommand):
    """A command whose failures are reported to the window instead of escaping into Qt."""

    def __init__(self, window, text: str):
        super().__init__(text)
        self.window = window

    def _guarded(self, fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - e.g. the session changed under the history
            self.setObsolete(True)
            self.window.report_error(f"Could not {self.text().lower()}: {error_message(exc)}")

    def redo(self) -> None:
        self._guarded(self._redo)

    def undo(self) -> None:
        self._guarded(self._undo)


class RemoveRunCommand(_SessionCommand):
    def __init__(self, window, run_id: int):
        super().__init__(window, f"Remove run #{run_id}")
        self.run = window.session.run_by_id(run_id)
        self.was_current = False

    def _redo(self) -> None:
        session = self.window.session
        self.was_current = session.current_run_id == self.run.id
        session.remove_run(self.run.id)
        self.window.show_status(f"Removed run {self.run.title()} (Edit ▸ Undo brings it back).")

    def _undo(self) -> None:
        self.window.session.add_run(self.run, make_current=self.was_current)
        self.window.show_status(f"Run {self.run.title()} is back.")


class RemoveDatasetCommand(_SessionCommand):
    def __init__(self, window, name: str):
        super().__init__(window, f"Remove data set {name}")
        self.name = name
        self.dataset = window.session.dataset(name)
        self.was_current = False

    def _redo(self) -> None:
        session = self.window.session
        self.was_current = session.current_dataset_name == self.name
        session.remove_dataset(self.name)
        self.window.show_status(f"Removed data set {self.name} (Edit ▸ Undo brings it back).")

    def _undo(self) -> None:
        session = self.window.session
        other = session.datasets.get(self.name)
        if other is not None and other is not self.dataset:
            raise ValueError(f"another data set named '{self.name}' was loaded since; remove or rename it first")
        session.add_dataset(self.dataset, replace=True, make_current=self.was_current)  # with its selection
        self.window.show_status(f"Data set {self.name} is back.")


class LabelCommand(_SessionCommand):
    """A labelling already done (Label the selection…): undo puts the data set's columns back as
    they were, redo as they were made (:func:`manifold_studio.session.annotate.snapshot`)."""

    def __init__(self, window, name: str, before: dict, after: dict, text: str):
        super().__init__(window, text)
        self.name, self.before, self.after = name, before, after
        self.done = True  # pushed after the change: the first redo does nothing

    def _apply(self, state: dict) -> None:
        ds = self.window.session.datasets.get(self.name)
        if ds is None:
            raise ValueError(f"data set '{self.name}' was removed since")
        for attr, value in state.items():
            setattr(ds, attr, value)
        actions = self.window.selection_actions
        if actions is not None:
            actions.dataset_edited(self.name)
        else:
            self.window.session.dataset_changed(self.name)

    def _redo(self) -> None:
        if self.done:
            self.done = False
            return
        self._apply(self.after)
        self.window.show_status(f"Redone: {self.text()}.")

    def _undo(self) -> None:
        self._apply(self.before)
        self.window.show_status(f"Undone: {self.text()}.")


def push_label(window, name: str, before: dict, after: dict, text: str) -> None:
    """Record a labelling of data set ``name`` (already applied) for Edit ▸ Undo."""
    undo_stack(window).push(LabelCommand(window, name, before, after, text))


def remove_run(window, run_id: int) -> bool:
    """Remove run ``run_id`` (undoable). A running run is refused with a message."""
    run = window.session.runs.get(run_id)
    if run is None:
        window.report_error(f"There is no run #{run_id} to remove.", log=False)
        return False
    if run.status == RUNNING:
        window.report_error(f"Run #{run_id} is still running: cancel it (Ctrl+.) before removing it.", log=False)
        return False
    undo_stack(window).push(RemoveRunCommand(window, run_id))
    return run_id not in window.session.runs


def remove_dataset(window, name: str | None = None) -> bool:
    """Remove data set ``name`` (default: the current one), undoable; its runs are kept."""
    name = name or window.session.current_dataset_name
    if not name or name not in window.session.datasets:
        window.report_error("There is no data set to remove." if not name
                            else f"There is no data set named '{name}'.", log=False)
        return False
    undo_stack(window).push(RemoveDatasetCommand(window, name))
    return name not in window.session.datasets


def install_undo(window) -> QUndoStack:
    """Edit ▸ Undo (Ctrl+Z) / Redo (Ctrl+Shift+Z, Ctrl+Y) over ``window.undo_stack``. Idempotent."""

    stack = undo_stack(window)
    if window.undo_action is not None:
        return stack
    undo = window.undo_action = stack.createUndoAction(window, "&Undo")
    undo.setShortcut(QKeySequence.StandardKey.Undo)
    undo.setObjectName("action_undo")
    redo = window.redo_action = stack.createRedoAction(window, "&Redo")
    redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    redo.setObjectName("action_redo")
    menu = edit_menu(window)
    first = menu.actions()[0] if menu.actions() else None
    menu.insertAction(first, undo)
    menu.insertAction(first, redo)
    if first is not None:
        menu.insertSeparator(first)
    project = window.project
    if project is not None:
        project.path_listeners.append(lambda _path, what: what == "opened" and stack.clear())
    return stack
