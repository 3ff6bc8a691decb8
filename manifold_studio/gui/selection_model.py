"""The selection in the window: a Qt adapter over the session's selection.

The session owns the selection (one boolean mask of rows per data set,
:mod:`manifold_studio.session.view_state`); every change is a session command that Edit ▸ Undo
records. ``window.selection`` is a :class:`SelectionModel`: a view that lets the user select
points calls :meth:`SelectionModel.select` with *data-set rows* (``run.point_index[i]`` for the
i-th point of a run, never the point index itself), which runs ``session.set_selection``; every
view connects to :attr:`changed` (emitted on the session's ``selection_changed`` events, undo
included) and highlights ``selection.mask(dataset_name)[its rows]``, read from the session.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal

from manifold_studio.session import selection as ops


def mode_for_modifiers(modifiers) -> str:
    """The usual modifiers: Shift adds, Alt removes, Ctrl (Cmd on macOS) toggles, none replaces."""
    mods = Qt.KeyboardModifier(modifiers) if not isinstance(modifiers, Qt.KeyboardModifier) else modifiers
    if mods & Qt.KeyboardModifier.ShiftModifier:
        return ops.ADD
    if mods & Qt.KeyboardModifier.AltModifier:
        return ops.REMOVE
    if mods & Qt.KeyboardModifier.ControlModifier:
        return ops.TOGGLE
    return ops.REPLACE


class SelectionModel(QObject):
    """Reads and changes the session's selection; :attr:`changed` follows the session."""

    #: the selection of a data set changed (its name)
    changed = Signal(str)

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        unsubscribe = session.subscribe(self._on_event)
        self.destroyed.connect(lambda *_: unsubscribe())

    def _on_event(self, event) -> None:
        if event.kind == "selection_changed" and event.dataset is not None:
            self.changed.emit(event.dataset)

    def mask(self, name: str | None) -> np.ndarray:
        """The selection of data set ``name`` as a boolean mask over its rows (all False when
        nothing is selected; empty when the data set is unknown)."""
        return self.session.selection_mask(name)

    def rows(self, name: str | None) -> np.ndarray:
        """Selected rows of ``name``, sorted."""
        return self.session.selected_rows(name)

    def count(self, name: str | None) -> int:
        return int(self.mask(name).sum())

    def select(self, name: str, rows, mode: str = ops.REPLACE) -> None:
        """Select data-set ``rows`` (indices or a mask) of ``name`` with ``mode`` (a session command)."""
        self.session.set_selection(name, rows, mode)

    def invert(self, name: str) -> None:
        self.session.invert_selection(name)

    def select_all(self, name: str) -> None:
        self.session.select_all(name)

    def clear(self, name: str | None = None) -> None:
        """Clear the selection of ``name`` (None: of every data set)."""
        self.session.clear_selection(name)

    def describe(self, name: str | None) -> str:
        return ops.describe(self.mask(name))
