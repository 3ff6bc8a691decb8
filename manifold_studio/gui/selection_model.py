"""The selection: one boolean mask of rows per data set, shared by every view of that data set.

``window.selection`` is a :class:`SelectionModel`. A view that lets the user select points
calls :meth:`SelectionModel.select` with *data-set rows* (``run.point_index[i]`` for the i-th
point of a run, never the point index itself); every view connects to :attr:`changed` and
highlights ``selection.mask(dataset_name)[its rows]``. The set operations are Qt-free
(:mod:`manifold_studio.session.selection`).
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
    #: the selection of a data set changed (its name)
    changed = Signal(str)

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        self._masks: dict[str, np.ndarray] = {}

    def _n(self, name: str) -> int:
        return self.session.dataset(name).n_samples

    def mask(self, name: str | None) -> np.ndarray:
        """The selection of data set ``name`` as a boolean mask over its rows (all False when
        nothing is selected or the data set is unknown)."""
        if name is None or name not in self.session.datasets:
            return np.zeros(0, dtype=bool)
        n = self._n(name)
        mask = self._masks.get(name)
        if mask is None or mask.shape != (n,):
            return np.zeros(n, dtype=bool)
        return mask

    def rows(self, name: str | None) -> np.ndarray:
        """Selected rows of ``name``, sorted."""
        return np.flatnonzero(self.mask(name))

    def count(self, name: str | None) -> int:
        return int(self.mask(name).sum())

    def select(self, name: str, rows, mode: str = ops.REPLACE) -> None:
        """Select data-set ``rows`` (indices or a mask) of ``name`` with ``mode``."""
        n = self._n(name)
        current = self._masks.get(name)
        if current is not None and current.shape != (n,):
            current = None
        self._set(name, ops.combine(current, rows, n, mode))

    def invert(self, name: str) -> None:
        self._set(name, ~self.mask(name))

    def select_all(self, name: str) -> None:
        self._set(name, np.ones(self._n(name), dtype=bool))

    def clear(self, name: str | None = None) -> None:
        """Clear the selection of ``name`` (None: of every data set)."""
        names = list(self._masks) if name is None else [name]
        for nm in names:
            if self._masks.pop(nm, None) is not None:
                self.changed.emit(nm)

    def forget(self, name: str) -> None:
        """Drop the selection of a removed data set (no signal)."""
        self._masks.pop(name, None)

    def _set(self, name: str, mask: np.ndarray) -> None:
        self._masks[name] = mask
        self.changed.emit(name)

    def describe(self, name: str | None) -> str:
        return ops.describe(self.mask(name))
