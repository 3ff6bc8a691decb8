"""A data set's typed table in a project file (project format 2), without pickle.

A data set read from a table keeps its columns with their types and roles (feature, target,
meta, skipped), the current target, the id column and its row ids (:class:`~manifold_studio.tables.Table`),
plus which rows of the table it holds. Format 1 saved only X and the labels, so roles changed in
the session and meta columns added by labelling were lost on reopening; format 2 saves the table:

- document: ``{"name", "source", "id_column", "current_target", "report", "row_ids",
  "columns": [{"name", "type", "role", "note", "values", "categories", "missing"}]}``, where
  ``values`` / ``categories`` / ``missing`` / ``row_ids`` name arrays of the archive;
- arrays: numbers as float64, categories as integer codes plus their categories (text or
  numbers), free text as text plus a missing mask (None is not an array value), dates as
  ``datetime64[ns]``.

:func:`unpack_table` rebuilds the table and checks it against the data set it belongs to
(:func:`table_problem`), so a damaged table is dropped with a note and the data set still opens.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from manifold_studio.tables.model import CATEGORICAL, TEXT, Column, Table

__all__ = ["pack_table", "unpack_table", "table_problem"]


def _text(values) -> tuple[np.ndarray, np.ndarray]:
    missing = np.asarray([v is None for v in values], dtype=bool)
    text = np.asarray(["" if v is None else str(v) for v in values], dtype=str)
    return (text if len(text) else np.zeros(0, dtype="<U1")), missing


def pack_table(table: Table, prefix: str, put: Callable[[str, np.ndarray], str]) -> dict:
    """The document of ``table``; ``put(key, array)`` stores an array and returns its key."""
    columns = []
    for j, col in enumerate(table.columns):
        key = f"{prefix}/{j}"
        entry = {"name": col.name, "type": col.type, "role": col.role, "note": col.note,
                 "categories": None, "missing": None}
        if col.type == TEXT:
            text, missing = _text(col.values)
            entry["values"], entry["missing"] = put(f"{key}/values", text), put(f"{key}/missing", missing)
        else:
            entry["values"] = put(f"{key}/values", np.asarray(col.values))
        if col.type == CATEGORICAL:
            cats = np.asarray(col.categories)
            entry["categories"] = put(f"{key}/categories", cats.astype(str) if cats.dtype == object else cats)
        columns.append(entry)
    ids = np.asarray(table.row_ids)
    return {"name": table.name, "source": table.source, "id_column": table.id_column,
            "current_target": table.current_target, "report": list(table.report),
            "row_ids": put(f"{prefix}/row_ids", ids.astype(str) if ids.dtype == object else ids),
            "columns": columns}


def unpack_table(doc: dict, array: Callable[[str, str], np.ndarray], field: str) -> Table:
    """The table of a :func:`pack_table` document; ``array(key, field)`` reads an array.
    Raises DataError (from the table model) or ValueError when the document is inconsistent."""
    columns = []
    for i, c in enumerate(doc["columns"]):
        where = f"{field}.columns[{i}]"
        values = array(c["values"], f"{where}.values")
        if values.ndim != 1:
            raise ValueError(f"column '{c['name']}' is not one value per row (shape {values.shape})")
        categories = None
        if c["type"] == TEXT:
            missing = array(c["missing"], f"{where}.missing")
            if missing.shape != values.shape or missing.dtype != bool:
                raise ValueError(f"the missing mask of column '{c['name']}' does not fit its values")
            values = values.astype(object)
            values[missing] = None
        elif c["type"] == CATEGORICAL:
            categories = array(c["categories"], f"{where}.categories")
            if values.dtype.kind not in "iu" or categories.ndim != 1 or \
                    (values.size and (values.min() < -1 or values.max() >= len(categories))):
                raise ValueError(f"the codes of column '{c['name']}' do not fit its {len(categories)} categories")
        columns.append(Column(c["name"], c["type"], values, c["role"], categories, c.get("note") or ""))
    row_ids = array(doc["row_ids"], f"{field}.row_ids")
    table = Table(columns, row_ids, id_column=doc.get("id_column"), name=doc.get("name") or "",
                  source=doc.get("source") or "", report=list(doc.get("report") or []))
    table.current_target = doc.get("current_target")
    if table.current_target is not None and table.current_target not in table.target_names:
        raise ValueError(f"its current target '{table.current_target}' is not one of its target columns")
    return table


def table_problem(table: Table, ds) -> str:
    """Why ``table`` cannot be the table of data set ``ds`` (its rows, features or label), or ''."""
    rows = ds.table_rows
    if rows is None and table.n_rows != ds.n_samples:
        return f"it has {table.n_rows:,} rows for the data set's {ds.n_samples:,}"
    if rows is not None and (rows.ndim != 1 or len(rows) != ds.n_samples or rows.dtype.kind not in "iu"
                             or (rows.size and (rows.min() < 0 or rows.max() >= table.n_rows))):
        return f"its row numbers do not fit its {table.n_rows:,} rows"
    names = table.feature_names
    if not ds.table_features:   # annotations beside X (AnnData's obs): none of them is a feature
        if names:
            return f"its columns {names} are features, but it only annotates the data set's matrix"
    elif (ds.feature_names is not None and names != list(ds.feature_names)) or len(names) != ds.n_features:
        return f"its feature columns {names} are not the data set's {ds.feature_names}"
    if ds.label_name is not None and table.current_target != ds.label_name:
        return f"its label column '{table.current_target}' is not the data set's '{ds.label_name}'"
    return ""
