"""Matrices with column names: arrays, DataFrames and tables to float64 matrices, and new data
matched to training columns by name (shared by preparation steps and pipelines).

The float form of a categorical column is its category value when the categories are numbers,
else the index of its category (see :class:`manifold_studio.tables.Table`); a value outside the
training categories, or missing, is NaN.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.errors import DataError

__all__ = ["as_named_matrix", "frame_to_matrix", "match_columns", "table_matrix", "first_non_number",
           "check_numeric", "check_numeric_columns", "is_table", "is_dataset", "STRAY_TEXT"]

#: the note of a column read as numbers whose few text cells were read as missing
#: (:mod:`manifold_studio.tables.infer`; the table's report names the first such cell)
STRAY_TEXT = "numbers with stray text"


# ``algorithms`` is the bottom layer of the contract in pyproject.toml: it cannot import
# ``tables`` or ``data``, so it recognises their objects by what they offer (duck typing).
def is_table(X) -> bool:
    """True for a :class:`manifold_studio.tables.Table` (typed columns with roles)."""
    return all(hasattr(X, a) for a in ("feature_matrix", "names_with_role", "categories"))


def is_dataset(X) -> bool:
    """True for a :class:`manifold_studio.data.Dataset` (a matrix, its labels, its table)."""
    return all(hasattr(X, a) for a in ("table_rows", "table", "labels", "feature_names"))


def as_named_matrix(X, columns=None, categories=None, what: str = "X"):
    """``(float64 matrix, column names, categories)`` from an array, a DataFrame or a
    :class:`~manifold_studio.tables.Table` (its feature columns)."""
    if is_table(X):
        names = X.feature_names
        cats = {k: v for k, v in X.categories().items() if k in names}
        return X.feature_matrix(names), names, cats
    frame_columns = getattr(X, "columns", None)
    if frame_columns is not None and hasattr(X, "dtypes"):
        return frame_to_matrix(X, categories or {})
    try:
        arr = sparse_float(X) if is_sparse(X) else np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what} must be numbers: {exc}.") from None
    if arr.ndim != 2:
        raise DataError(f"{what} must be a 2-D matrix (rows × columns), got shape {arr.shape}.")
    names = [f"x{j}" for j in range(arr.shape[1])] if columns is None else [str(c) for c in columns]
    if len(names) != arr.shape[1]:
        raise DataError(f"{len(names)} column names for {arr.shape[1]} columns.")
    if len(set(names)) != len(names):
        raise DataError(f"Column names repeat: {sorted({n for n in names if names.count(n) > 1})}.")
    return arr, names, dict(categories or {})


def sparse_float(X):
    """A scipy.sparse matrix as a CSR array of float64 (kept sparse)."""
    import scipy.sparse as sp

    return sp.csr_array(X, dtype=np.float64)


def match_columns(frame, names: list[str], what: str):
    """``frame`` (a DataFrame) restricted to ``names`` in that order; a missing one is refused."""
    have = [str(c) for c in frame.columns]
    missing = [n for n in names if n not in have]
    if missing:
        raise DataError(f"The new data lack column {', '.join(repr(m) for m in missing)}, which {what} was "
                        f"fitted with (the data have: {', '.join(repr(h) for h in have[:30])}"
                        f"{' ...' if len(have) > 30 else ''}).")
    frame = frame.copy()
    frame.columns = have
    return frame[names]


def _encode(values, categories: list) -> np.ndarray:
    """Category values (numbers) or indices (text) of ``values``; unknown or missing → NaN."""
    numeric = all(isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool)
                  for c in categories)
    out = np.full(len(values), np.nan)
    if numeric:
        lookup = {float(c): float(c) for c in categories}
        for i, v in enumerate(values):
            try:
                out[i] = lookup.get(float(v), np.nan)
            except (TypeError, ValueError):
                pass
    else:
        lookup = {str(c): float(k) for k, c in enumerate(categories)}
        for i, v in enumerate(values):
            if v is not None and not (isinstance(v, float) and np.isnan(v)):
                out[i] = lookup.get(str(v).strip(), np.nan)
    return out


def frame_to_matrix(frame, categories: dict | None = None):
    """``(float64 matrix, names, categories)`` of a DataFrame. Columns in ``categories`` are
    encoded with those categories; other non-numeric columns become categorical with their
    sorted distinct values (learned here)."""
    import pandas as pd

    categories = dict(categories or {})
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        raise DataError(f"Column names repeat: {sorted({n for n in names if names.count(n) > 1})}.")
    out = np.empty((len(frame), len(names)))
    for j, (nm, col) in enumerate(zip(names, frame.columns)):
        series = frame[col]
        if nm in categories:
            out[:, j] = _encode(series.to_numpy(dtype=object), categories[nm])
        elif pd.api.types.is_bool_dtype(series.dtype) or pd.api.types.is_numeric_dtype(series.dtype):
            out[:, j] = series.to_numpy(dtype=np.float64, na_value=np.nan)
        elif pd.api.types.is_datetime64_any_dtype(series.dtype):
            vals = series.to_numpy(dtype="datetime64[ns]")
            out[:, j] = np.where(np.isnat(vals), np.nan, vals.astype(np.int64) / 1e9)
        else:
            present = series.dropna().astype(str).str.strip()
            cats = sorted(set(present.tolist()))
            categories[nm] = cats
            out[:, j] = _encode(series.to_numpy(dtype=object), cats)
    return out, names, categories


def table_matrix(table, names: list[str], categories: dict, what: str, text_as_missing: bool = False) -> np.ndarray:
    """The columns ``names`` of ``table`` as a float64 matrix: ``categories`` ({name: training
    categories}) encode the categorical ones; a column numeric at fit time must be numeric here
    (:func:`check_numeric`), or, with ``text_as_missing`` (the chain imputes), its cells that
    are not numbers become missing."""
    missing = [n for n in names if n not in table]
    if missing:
        raise DataError(f"The new data lack column {', '.join(repr(m) for m in missing)}, which {what} was "
                        f"fitted with (the data have: {', '.join(repr(h) for h in table.names)}).")
    out = np.empty((table.n_rows, len(names)))
    for j, nm in enumerate(names):
        col = table.column(nm)
        if nm in categories and col.type != "numeric":
            out[:, j] = _encode(col.decoded() if col.type == "categorical" else col.values, categories[nm])
        elif nm in categories:
            out[:, j] = _encode(col.values, categories[nm])
        else:
            out[:, j] = check_numeric(table, nm, what, text_as_missing)
    return out


def first_non_number(table, name: str) -> tuple[str, object] | None:
    """(where — ``line N`` or ``row ID`` —, the cell) of the first present cell of column
    ``name`` of ``table`` that is not a number, or None when every present cell is one."""
    col = table.column(name)
    if col.type not in ("categorical", "text"):
        return None
    values = col.decoded() if col.type == "categorical" else col.values
    for i, value in enumerate(values):
        if value is None:
            continue
        try:
            float(str(value))
            continue
        except ValueError:
            pass
        rid = table.row_ids[i]
        return (f"line {rid}" if table.id_column is None else f"row {rid!r}"), value
    return None


def check_numeric(table, name: str, what: str, text_as_missing: bool = False) -> np.ndarray:
    """Column ``name`` of ``table`` as float64, for ``what`` (a model or a pipeline) that was
    fitted on it as a numeric column: a column that is not numeric here (some cells hold text, so
    it was read as categorical or text) is refused naming the column, the line and the cell —
    never recoded to category codes — unless ``text_as_missing``: then those cells are missing."""
    col = table.column(name)
    if col.type in ("numeric", "datetime") or (col.type == "categorical" and col.numeric_categories):
        return col.as_float()  # numbers (dates: seconds, as when fitted)
    if text_as_missing and col.type in ("categorical", "text"):
        import pandas as pd

        values = col.decoded() if col.type == "categorical" else col.values
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
    raise DataError(_not_numeric_message(table, name, what))


def _stray_cell(table, name: str) -> tuple[str, object, str] | None:
    """(``line N``, the cell, the other lines) of the first text cell of a numeric column whose
    text cells were read as missing, from the line the reader wrote into the table's report."""
    start = f"column '{name}' is numeric but "
    line = next((ln for ln in getattr(table, "report", None) or () if ln.startswith(start)), "")
    tail = line[len(start):].partition("read as missing: ")[2].rstrip(".")
    cell, _, rest = tail.rpartition(" on line ")
    if not cell:
        return None
    try:
        import ast

        cell = ast.literal_eval(cell)   # the reader wrote repr() of the cell
    except (ValueError, SyntaxError):
        pass
    number, _, others = rest.partition(" ")
    return f"line {number}", cell, others


def _not_numeric_message(table, name: str, what: str) -> str:
    col = table.column(name)
    if col.type == "numeric":   # numbers with stray text cells, read as missing
        found = _stray_cell(table, name)
        cell = (f": on {found[0]} it holds {str(found[1])!r}" + (f" {found[2]}" if found[2] else "")
                if found is not None else " (the reader read them as missing)")
        return (f"Column '{name}' was numeric when {what} was fitted, but in the new data some of its cells are "
                f"not numbers{cell}. Fix the cells (or make them missing for an impute step to fill); they are "
                "not recoded.")
    found = first_non_number(table, name)
    cell = f": on {found[0]} it holds {str(found[1])!r}" if found is not None else ""
    return (f"Column '{name}' was numeric when {what} was fitted, but in the new data it is "
            f"{col.type}{cell}. Fix the cell (or make it missing for an impute step to fill); "
            "it is not recoded.")


def check_numeric_columns(table, names, what: str, *, where: str = "", imputes: bool = False) -> list[str]:
    """The one type check of new data (``apply``, ``run --extend``, ``replay``, the window):
    each of ``names`` — columns ``what`` was fitted on as numbers — must be numbers in ``table``.
    A column read as categorical or text, or read as numbers whose few text cells became missing
    (:data:`STRAY_TEXT`), is refused with a DataError naming the column, the line and the cell
    (``where``: the file, before it); it is never recoded. With ``imputes`` (a chain with an impute
    step) those cells are read as missing for it to fill: returns one note per such column."""
    notes: list[str] = []
    prefix = f"{where}: " if where else ""
    for name in names:
        if name not in table:
            continue
        col = table.column(name)
        stray = col.type == "numeric" and col.note == STRAY_TEXT
        if not stray and (col.type in ("numeric", "datetime") or (col.type == "categorical" and col.numeric_categories)):
            continue
        if not imputes:
            raise DataError(prefix + _not_numeric_message(table, name, what))
        found = _stray_cell(table, name) if stray else first_non_number(table, name)
        cell = f"{found[1]!r} on {found[0]}" if found is not None else "text cells"
        notes.append(f"{prefix}column '{name}' holds text ({cell}); {what} reads it as missing for its impute "
                     "step to fill.")
    return notes
