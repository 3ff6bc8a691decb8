"""Labelling rows into a column of a data set's table (Qt-free): "Label the selection…".

The selected rows get a value in a *new meta column* or in an existing meta / target column the
user picks; no column is ever renamed. Writing a meta column changes neither the features nor
the current label, so the data set's X, labels and row ids stay as they are: only its table
gets the new column. A data set read without a table of columns (NumPy files, generated
samples) first gets one describing what it holds (its features and its label column).

:func:`snapshot` / :func:`restore` keep and put back a data set's state for undo.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.errors import DataError
from manifold_studio.tables.model import CATEGORICAL, FEATURE, META, NUMERIC, TARGET, TEXT, Column, Table, quote

#: the attributes a labelling may change (what undo puts back)
STATE = ("X", "labels", "feature_names", "label_name", "table", "row_ids", "table_rows")


def snapshot(ds) -> dict:
    return {attr: getattr(ds, attr) for attr in STATE}


def restore(ds, state: dict) -> None:
    for attr, value in state.items():
        setattr(ds, attr, value)


def categorical_column(name: str, values, role: str) -> Column:
    """A categorical column of text values (None = missing), categories sorted."""
    values = np.asarray(values, dtype=object)
    present = np.asarray([v is not None for v in values], dtype=bool)
    cats = np.asarray(sorted({str(v) for v in values[present]}), dtype=object)
    codes = np.full(len(values), -1, dtype=np.intp)
    if present.any():
        codes[present] = np.searchsorted(cats, np.asarray([str(v) for v in values[present]], dtype=object))
    return Column(name, CATEGORICAL, codes, role, cats)


def table_of(ds) -> Table:
    """The data set's table, or one made from its features and labels when it has none."""
    if ds.table is not None:
        return ds.table
    names = ds.feature_names or [f"x{j}" for j in range(ds.n_features)]
    cols = [Column(n, NUMERIC, np.ascontiguousarray(ds.X[:, j]), FEATURE) for j, n in enumerate(names)]
    target = None
    if ds.labels is not None:
        target = ds.label_name or "label"
        cols.append(categorical_column(target, [str(v) for v in ds.labels.tolist()], TARGET))
    return Table(cols, ds.row_ids, current_target=target, name=ds.name, source=ds.source or "")


def writable_columns(ds) -> list[str]:
    """The columns a label may be written into: the current label and the meta / other target
    columns that hold text or categories."""
    out = [ds.label_name or "label"] if ds.labels is not None else []
    if ds.table is not None:
        out += [c.name for c in ds.table.columns if c.role in (META, TARGET) and c.type == CATEGORICAL
                and c.name not in out]
        out += [c.name for c in ds.table.columns if c.role == META and c.type == TEXT and c.name not in out]
    return out


def label_into_column(ds, rows, column: str, value: str) -> str:
    """Give ``rows`` (positions in ``ds``) the label ``value`` in table column ``column``: a new
    meta column (other rows missing), or an existing meta / target column that is not the
    current label (other rows keep their values). Returns a one-line account. The current label
    column is edited by :func:`manifold_studio.session.selection.label_rows` instead."""
    column, value = column.strip(), str(value).strip()
    if not column or not value:
        raise DataError("Give a column name and a label.")
    table = table_of(ds).copy()
    rows = np.asarray(rows, dtype=np.intp)
    table_rows = rows if ds.table_rows is None or ds.table is None else np.asarray(ds.table_rows)[rows]
    if column in table:
        col = table.column(column)
        if col.role not in (META, TARGET):
            raise DataError(f"Column {quote(column)} is a {col.role} column: labels go into a meta or target "
                            "column, or a new one (type a new name).")
        if col.type == NUMERIC:
            try:
                number = float(value)
            except ValueError:
                raise DataError(f"Column {quote(column)} holds numbers: '{value}' is not a number; "
                                "type a new column name for text labels.") from None
            values = col.values.copy()
            values[table_rows] = number
            new = Column(column, NUMERIC, values, col.role, None, col.note)
            verb = "edited"
        elif col.type in (CATEGORICAL, TEXT):
            values = np.asarray(col.decoded(), dtype=object).copy()
            values = np.asarray([None if v is None else str(v) for v in values], dtype=object)
            values[table_rows] = value
            new = categorical_column(column, values, col.role)
            verb = "edited"
        else:
            raise DataError(f"Column {quote(column)} holds {col.type} values: pick a text column or a new name.")
        table._replace(column, new)
    else:
        values = np.full(table.n_rows, None, dtype=object)
        values[table_rows] = value
        table.columns = [*table.columns, categorical_column(column, values, META)]
        verb = "created (a meta column)"
    ds.table = table
    return f"Column {quote(column)} {verb}: {len(rows):,} row(s) labelled '{value}'."
