"""Every column that can be shown for a data set: its features, its labels, and the result
columns of every finished run on it (coordinates, cluster, predicted class, extensions).

One list serves the data table, "colour / size by any column" and the CSV export, so the three
always agree on names and values. A result only covers the rows a run was fitted on (or
extended to); the other rows hold NaN (numbers) or "" (text). Qt-free.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEATURE, LABEL, RESULT = "feature", "label", "result"


@dataclass
class Column:
    """One column over the rows of a data set."""

    name: str
    values: np.ndarray  # (n_rows,) floats (NaN = no value) or objects / strings
    kind: str           # FEATURE, LABEL or RESULT
    run_id: int | None = None

    @property
    def numeric(self) -> bool:
        return self.values.dtype.kind in "fiub"


def _spread(n: int, rows, values: np.ndarray) -> np.ndarray:
    """``values`` given for ``rows`` of an n-row data set, as an n-row column."""
    values = np.asarray(values)
    if values.dtype.kind in "fiub":
        out = np.full(n, np.nan)
    else:
        out = np.full(n, "", dtype=object)
    idx = np.arange(len(values)) if rows is None else np.asarray(rows, dtype=np.intp)
    out[idx] = values
    return out


def result_columns(run, n_rows: int) -> list[Column]:
    """The columns of one finished run on an ``n_rows`` data set: ``#3 pca 1``, ``#3 pca 2``…
    for coordinates, ``#3 kmeans cluster`` / ``#3 svm predicted`` for labels, and the same
    for each of its extensions to this data set (values placed on the extended rows)."""
    if not run.succeeded:
        return []
    prefix = f"#{run.id} {run.algorithm_id}"
    label_word = {"classification": "predicted"}.get(run.kind, "cluster")
    cols: list[Column] = []

    def add(values, rows, name_tail: str):
        values = np.asarray(values)
        if values.ndim == 1:
            cols.append(Column(f"{prefix} {name_tail}".rstrip(), _spread(n_rows, rows, values), RESULT, run.id))
        elif values.ndim == 2:
            for j in range(values.shape[1]):
                cols.append(Column(f"{prefix} {name_tail}{j + 1}".rstrip(),
                                   _spread(n_rows, rows, values[:, j]), RESULT, run.id))

    point_rows = run.point_index
    if run.embedding is not None and len(point_rows) and int(point_rows.max()) < n_rows:
        add(run.embedding, point_rows, "")
    labels = run.shown_labels  # a dendrogram cut, when the user chose one, is what is exported
    if labels is not None and len(point_rows) and int(point_rows.max()) < n_rows:
        add(labels, point_rows, label_word)
    for ext in run.extensions:
        if ext.dataset_name != run.dataset_name:
            continue
        vals = np.asarray(ext.values)
        rows = ext.rows
        if rows is None and len(vals) != n_rows:
            continue
        tail = f"extended {label_word}" if vals.ndim == 1 else "extended "
        add(vals, rows, tail)
    return cols


#: feature columns of a sparse data set shown in the table (and exported with it)
SPARSE_TABLE_COLUMNS = 50


def dataset_columns(session, name: str) -> list[Column]:
    """Features, then the label column, then the result columns of every finished run on
    data set ``name`` (in run order)."""
    ds = session.dataset(name)
    names = ds.feature_names or [f"x{j + 1}" for j in range(ds.n_features)]
    if ds.is_sparse:   # a sparse data set may have thousands of columns: the first few, densified
        cols = [Column(names[j], ds.dense(cols=j), FEATURE) for j in range(min(ds.n_features, SPARSE_TABLE_COLUMNS))]
    else:
        cols = [Column(names[j], ds.X[:, j], FEATURE) for j in range(ds.n_features)]
    if ds.labels is not None:
        cols.append(Column(ds.label_name or "label", ds.labels, LABEL))
    for run in session.runs.values():
        if run.dataset_name == name:
            cols.extend(result_columns(run, ds.n_samples))
    return cols
