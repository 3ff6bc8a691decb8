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
from manifold_studio.tables.model import Table

__all__ = ["as_named_matrix", "frame_to_matrix", "match_columns", "table_matrix"]


def as_named_matrix(X, columns=None, categories=None, what: str = "X"):
    """``(float64 matrix, column names, categories)`` from an array, a DataFrame or a
    :class:`~manifold_studio.tables.Table` (its feature columns)."""
    if isinstance(X, Table):
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


def table_matrix(table, names: list[str], categories: dict, what: str) -> np.ndarray:
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
            out[:, j] = col.as_float()
    return out
