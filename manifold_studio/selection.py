"""Selections of rows of a data set, as boolean masks: the set operations behind the usual
modifiers (replace, add with Shift, remove with Alt, toggle with Ctrl), invert and clear.

Qt-free: the GUI's :class:`~manifold_studio.gui.selection_model.SelectionModel` keeps one mask
per data set and announces changes; anything else (the command line, tests) can use these
functions directly.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.errors import InvalidParameterError

REPLACE, ADD, REMOVE, TOGGLE = "replace", "add", "remove", "toggle"
MODES = (REPLACE, ADD, REMOVE, TOGGLE)


def as_mask(rows, n: int) -> np.ndarray:
    """A boolean mask of length ``n`` from row indices or a boolean mask."""
    rows = np.asarray(rows)
    if rows.dtype == bool:
        if rows.shape != (n,):
            raise InvalidParameterError(f"A selection mask has {rows.size} entries for {n} rows.")
        return rows.copy()
    mask = np.zeros(n, dtype=bool)
    if rows.size:
        idx = rows.astype(np.intp, copy=False).ravel()
        if idx.min() < 0 or idx.max() >= n:
            raise InvalidParameterError(f"Selected rows must lie in 0..{n - 1}; got "
                                        f"{int(idx.min())}..{int(idx.max())}.")
        mask[idx] = True
    return mask


def combine(current: np.ndarray | None, rows, n: int, mode: str = REPLACE) -> np.ndarray:
    """The selection after selecting ``rows`` with ``mode`` over ``current`` (a mask or None)."""
    if mode not in MODES:
        raise InvalidParameterError(f"Selection mode must be one of {', '.join(MODES)}; got {mode!r}.")
    new = as_mask(rows, n)
    if current is None or mode == REPLACE:
        return new
    if mode == ADD:
        return current | new
    if mode == REMOVE:
        return current & ~new
    return current ^ new


def describe(mask: np.ndarray | None) -> str:
    """'3 of 150 rows selected' / 'nothing selected'."""
    if mask is None or not mask.any():
        return "nothing selected"
    return f"{int(mask.sum()):,} of {mask.size:,} rows selected"
