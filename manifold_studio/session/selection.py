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


# -- geometry: which points a rectangle or a lasso encloses ------------------------------------

def points_in_rect(xy: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    """Indices of the points of ``xy`` (n, 2) inside the rectangle with corners (x0, y0) and
    (x1, y1) (edges included, corners in any order)."""
    xy = np.asarray(xy, dtype=float)
    if not len(xy):
        return np.zeros(0, dtype=np.intp)
    (xa, xb), (ya, yb) = sorted((x0, x1)), sorted((y0, y1))
    x, y = xy[:, 0], xy[:, 1]
    return np.flatnonzero((x >= xa) & (x <= xb) & (y >= ya) & (y <= yb))


def points_in_polygon(xy: np.ndarray, polygon) -> np.ndarray:
    """Indices of the points of ``xy`` (n, 2) inside the closed ``polygon`` (m, 2), by the
    even-odd rule (ray casting towards +x; self-intersecting lassos work as in a paint program).

    Cost: a bounding-box filter, a sort of the candidates by y, then for each edge only the
    candidates whose y lies in the edge's span (found with a binary search) — about
    O(c log c + c·k) for c candidates and k crossings per horizontal line (2 for a convex
    lasso), not O(n·m): 100,000 of 1,000,000 points in a few tens of milliseconds.
    """
    xy = np.asarray(xy, dtype=float)
    poly = np.asarray(polygon, dtype=float).reshape(-1, 2)
    if len(poly) and np.array_equal(poly[0], poly[-1]):
        poly = poly[:-1]
    if len(xy) == 0 or len(poly) < 3 or not np.all(np.isfinite(poly)):
        return np.zeros(0, dtype=np.intp)
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    cand = points_in_rect(xy, lo[0], lo[1], hi[0], hi[1])
    if not cand.size:
        return cand
    order = np.argsort(xy[cand, 1])
    sorted_cand = cand[order]
    px, py = xy[sorted_cand, 0], xy[sorted_cand, 1]
    inside = np.zeros(cand.size, dtype=bool)
    xi, yi = poly[:, 0], poly[:, 1]
    xj, yj = np.roll(xi, 1), np.roll(yi, 1)
    # edge (j -> i) crosses the horizontal line of a point p when min(yi, yj) <= p.y < max(yi, yj)
    starts = np.searchsorted(py, np.minimum(yi, yj), side="left")
    stops = np.searchsorted(py, np.maximum(yi, yj), side="left")
    for e in np.flatnonzero(stops > starts):
        s, t = starts[e], stops[e]
        # x where the edge meets each point's horizontal line
        x_cross = xi[e] + (py[s:t] - yi[e]) * ((xj[e] - xi[e]) / (yj[e] - yi[e]))
        inside[s:t] ^= px[s:t] < x_cross
    keep = np.empty_like(inside)
    keep[order] = inside  # back to the candidates' own (increasing) order: no second sort
    return cand[keep]


def rows_text(rows, limit: int = 6) -> str:
    """'3, 7, 12' or '3, 7, 12, … (1,204 rows)' for a provenance line."""
    rows = np.asarray(rows).ravel()
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    if rows.size <= limit:
        return shown
    return f"{shown}, … ({rows.size:,} rows)"


def provenance(rows, dataset_name: str, where: str = "") -> str:
    """The provenance line of a data set made from a selection:
    'rows 3, 7, … (1,204 rows) of iris (selected on the map of run #2)'."""
    rows = np.asarray(rows).ravel()
    word = "row" if rows.size == 1 else "rows"
    text = f"{word} {rows_text(rows)} of {dataset_name}"
    return f"{text} ({where})" if where else text


def coerce_label(value, labels: np.ndarray | None):
    """``value`` (typed text) converted to the type of existing ``labels``: '3' stays 3 for
    integer labels, 2.5 for float labels; text otherwise. Returns (value, labels) where the
    labels are converted to text when the value does not fit their type."""
    text = str(value).strip()
    if labels is None:
        return text, None
    kind = labels.dtype.kind
    if kind in "iu":
        try:
            return int(text), labels
        except ValueError:
            pass
    elif kind == "f":
        try:
            return float(text), labels
        except ValueError:
            pass
    elif kind == "b":
        if text.lower() in ("true", "false"):
            return text.lower() == "true", labels
    else:
        return text, labels
    return text, np.array([str(v) for v in labels.tolist()], dtype=object)


def label_rows(labels: np.ndarray | None, rows, value, n: int, unlabelled: str = ""):
    """New labels: ``labels`` (or a new column of ``unlabelled`` when None) with ``rows`` set to
    ``value`` (coerced to the labels' type, see :func:`coerce_label`). Returns
    (new labels, value as stored, whether that value was already a class)."""
    value, base = coerce_label(value, labels)
    if base is None:
        base = np.full(n, unlabelled, dtype=object)
    elif base.dtype.kind in "US":  # fixed-width strings would truncate a longer value
        base = base.astype(object)
    out = base.copy()
    existed = bool(np.any(out == value)) if out.size else False
    out[as_mask(rows, n)] = value
    return out, value, existed
