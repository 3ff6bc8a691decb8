"""Inference of column types and roles from a pandas DataFrame (the readers' second half).

Rules, each reported in one line of ``Table.report`` when it changes what a user would expect:

* A numeric column stays numeric; infinite values become missing.
* A text column whose present values are nearly all numbers (at most 5 % text, e.g. one stray
  ``"n/a?"`` in a column of measurements) stays numeric: the stray cells become missing and the
  report names the column, the first value and its line.
* Text that is all ISO dates (``2024-05-01``, ``2024-05-01 10:30``) is a date/time column.
* Other text with few distinct values (at most :data:`MAX_CATEGORIES`, and fewer than half the
  rows) is categorical; the rest is free text. Neither is fitted: both are proposed as ``meta``
  (the label column, when named, is the ``target``).
* A column with no value at all is ``skipped``.
* An integer column named like a row id (``id``, ``index``, ``row``, ``*_id``, ...) whose values
  are unique is proposed as ``meta``, not fitted; an integer column named like a date part
  (``year``, ``month``, ...) is a categorical ``meta``. Either can be given another role.
"""
from __future__ import annotations

import re

import numpy as np

from manifold_studio.algorithms.named_columns import STRAY_TEXT
from manifold_studio.errors import DataError
from manifold_studio.tables.model import (
    CATEGORICAL, DATETIME, FEATURE, META, NUMERIC, SKIPPED, TARGET, TEXT, Column, Table, quote,
)
from manifold_studio.tables.sniff import MISSING_TOKENS
from manifold_studio.tables.role_notes import restate

#: text columns with at most this many distinct values are categorical
MAX_CATEGORIES = 50
#: a text column whose present values are at least this fraction numbers stays numeric
NUMERIC_FRACTION = 0.95
_REPORT_LIMIT = 10
_ID_NAME = re.compile(r"^(id|ids|index|idx|row|rowid|row_id|row id|row_number|no|#|unnamed: ?0|.*[_ ]id)$",
                      re.IGNORECASE)
_DATE_PART_NAME = re.compile(r"^(year|yr|month|day|week|quarter)$", re.IGNORECASE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$")

__all__ = ["table_from_frame", "table_from_block", "columns_from_frame", "columns_from_block", "MAX_CATEGORIES", "lines_text"]


def lines_text(lines, limit: int = _REPORT_LIMIT) -> str:
    lines = list(lines)
    shown = ", ".join(str(n) for n in lines[:limit])
    more = f" and {len(lines) - limit} more" if len(lines) > limit else ""
    return shown + more


def _text_values(series) -> np.ndarray:
    """An object array of stripped str, None where missing (NA spellings included)."""
    out = np.full(len(series), None, dtype=object)
    s = series.astype("object")
    present = s.notna().to_numpy()
    if present.any():
        t = s[present].astype(str).str.strip()
        ok = ~t.str.lower().isin(MISSING_TOKENS).to_numpy()
        out[np.flatnonzero(present)[ok]] = t.to_numpy(dtype=object)[ok]
    return out


def _present(text: np.ndarray) -> np.ndarray:
    return ~np.equal(text, None)


def _numeric_from_text(text: np.ndarray):
    """(float values with NaN where missing or not a number, mask of present non-numbers)."""
    import pandas as pd

    present = _present(text)
    nums = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(dtype=np.float64,
                                                                                   na_value=np.nan).copy()
    return nums, present & np.isnan(nums)


def _categorical(name, text: np.ndarray, role, note) -> Column:
    present = _present(text)
    cats, codes = np.unique(text[present].astype(str), return_inverse=True)
    full = np.full(len(text), -1, dtype=np.int64)
    full[present] = codes
    return Column(name, CATEGORICAL, full, role, cats, note)


def _integer_like(values: np.ndarray) -> bool:
    present = values[~np.isnan(values)]
    return len(present) > 0 and bool(np.all(present == np.round(present)))


def _numeric_column(name, values, role, note, lines, report, where) -> Column:
    values = np.asarray(values, dtype=np.float64)
    if role == FEATURE and (_ID_NAME.match(name) or _DATE_PART_NAME.match(name)) and len(values) > 1 \
            and _integer_like(values):
        present = values[~np.isnan(values)]
        if _ID_NAME.match(name) and len(np.unique(present)) == len(present) and len(present) == len(values):
            report.append(f"column {quote(name)} looks like a row id (unique whole numbers): kept as meta, "
                          "not fitted (make it a feature, or use it as the id column).")
            return Column(name, NUMERIC, values, META, None, "looks like a row id")
        if _DATE_PART_NAME.match(name):
            cats, codes = np.unique(present, return_inverse=True)
            full = np.full(len(values), -1, dtype=np.int64)
            full[~np.isnan(values)] = codes
            report.append(f"column {quote(name)} looks like a date part: kept as a categorical meta "
                          "column, not fitted (make it a feature to fit it).")
            return Column(name, CATEGORICAL, full, META, cats.astype(np.int64), "a date part")
    return Column(name, NUMERIC, values, role, None, note)


def _infer_text_column(name, series, role, lines, report, where, fixed_numeric: bool) -> Column:
    import pandas as pd

    text = _text_values(series)
    nums, stray = _numeric_from_text(text)
    present = _present(text)
    n_present, n_stray = int(present.sum()), int(stray.sum())
    if n_present == 0:
        return None
    if fixed_numeric or (n_stray < n_present and (n_present - n_stray) >= NUMERIC_FRACTION * n_present
                         and role != TARGET):
        if n_stray:
            if fixed_numeric:
                i = int(np.flatnonzero(stray)[0])
                raise DataError(f"{where}, line {lines[i]}: column {quote(name)} holds {text[i]!r}, but its "
                                "values in the first rows are numbers. Fix the value, or read the file whole "
                                "to keep the column with that cell missing.")
            rows = np.flatnonzero(stray)
            report.append(f"column {quote(name)} is numeric but {n_stray} value(s) are not numbers, read as "
                          f"missing: {text[rows[0]]!r} on line {lines[rows[0]]}"
                          + (f" (lines {lines_text(lines[rows])})" if n_stray > 1 else "") + ".")
        nums[~np.isfinite(nums)] = np.nan
        return _numeric_column(name, nums, role, STRAY_TEXT if n_stray else "", lines, report,
                               where)
    sample = [v for v in text[present][:200]]
    if all(_ISO_DATE.match(v) for v in sample):
        dates = pd.to_datetime(pd.Series(text, dtype=object), errors="coerce", format="ISO8601")
        values = dates.to_numpy(dtype="datetime64[ns]")
        report.append(f"column {quote(name)} holds dates: kept as a date/time {role} column.")
        return Column(name, DATETIME, values, role if role != FEATURE else META, None, "ISO dates")
    n_distinct = len(set(text[present].tolist()))
    what = ("" if role == TARGET else
            f"column {quote(name)} is not numeric (e.g. {text[stray][0]!r} on line "
            f"{lines[int(np.flatnonzero(stray)[0])]}; {n_present - n_stray} of {n_present} values are "
            "numbers): left out of the features, kept as ")
    if n_distinct <= MAX_CATEGORIES and (n_distinct < 0.5 * n_present or n_distinct <= 2 or role == TARGET):
        col = _categorical(name, text, META if role == FEATURE else role, "text with few values")
        if what:
            report.append(what + f"a categorical meta column ({n_distinct} distinct values).")
        return col
    if what:
        report.append(what + "a text meta column.")
    return Column(name, TEXT, text, META if role == FEATURE else role, None, "free text")


def table_from_frame(frame, lines: np.ndarray, *, where: str, name: str = "", source: str = "",
                     label_column: str | None = None, roles: dict | None = None, types: dict | None = None,
                     id_column: str | None = None, report: list[str] | None = None,
                     fixed: dict[str, str] | None = None) -> Table:
    """Build a :class:`Table` from a DataFrame whose rows came from ``lines`` of a file.

    ``label_column`` (a column name) becomes the current target. ``roles`` ({name: role}) and
    ``types`` ({name: "categorical" | "numeric"}) override what is inferred. ``id_column`` makes
    that column the row id (unique, or refused naming the first repeated value). ``fixed``
    ({name: type}) is the schema of an earlier chunk of the same file: a numeric column must then
    stay numeric (text in it is refused with its line). ``where`` names the file in messages.
    """
    report = [] if report is None else report
    lines = np.asarray(lines)
    columns = columns_from_frame(frame, lines, where, label_column, report, fixed)
    table = Table(columns, lines, name=name, source=source, report=report)
    return _apply_choices(table, label_column, types, roles, id_column)


def columns_from_frame(frame, lines: np.ndarray, where: str, label_column: str | None, report: list[str],
                       fixed: dict[str, str] | None = None) -> list[Column]:
    """The typed columns of a DataFrame (see :func:`table_from_frame`)."""
    import pandas as pd

    columns: list[Column] = []
    for col_name in frame.columns:
        nm = str(col_name)
        role = TARGET if nm == label_column else FEATURE
        series = frame[col_name]
        if fixed is not None and nm not in fixed:
            continue
        if pd.api.types.is_bool_dtype(series.dtype):
            col = Column(nm, NUMERIC, series.to_numpy(dtype=np.float64, na_value=np.nan), role)
        elif pd.api.types.is_numeric_dtype(series.dtype):
            vals = series.to_numpy(dtype=np.float64, na_value=np.nan).copy()
            vals[~np.isfinite(vals)] = np.nan
            if fixed is not None:
                col = Column(nm, NUMERIC, vals, role)
            elif np.isnan(vals).all():
                col = None
            else:
                col = _numeric_column(nm, vals, role, "", lines, report, where)
        elif pd.api.types.is_datetime64_any_dtype(series.dtype):
            col = Column(nm, DATETIME, series.to_numpy(dtype="datetime64[ns]"), META if role == FEATURE else role)
        else:
            col = _infer_text_column(nm, series, role, lines, report, where,
                                     fixed is not None and fixed.get(nm) == NUMERIC)
        if col is None:
            if fixed is None:
                report.append(f"column {quote(nm)} is empty: left out.")
            col = Column(nm, NUMERIC, np.full(len(frame), np.nan), SKIPPED, None, "empty")
        columns.append(col)
    return columns


def columns_from_block(block: np.ndarray, names: list[str], lines: np.ndarray, where: str,
                       label_column: str | None, report: list[str]) -> list[Column]:
    """Numeric columns that are views of the float64 ``block`` (NaN for missing)."""
    columns = []
    first = block[0] if len(block) else np.full(len(names), np.nan)
    for j, nm in enumerate(names):
        values = block[:, j]
        role = TARGET if nm == label_column else FEATURE
        if np.isnan(first[j]) and np.isnan(values).all():   # (a strided pass only when it may be empty)
            report.append(f"column {quote(nm)} is empty: left out.")
            columns.append(Column(nm, NUMERIC, values, SKIPPED, None, "empty"))
        else:
            columns.append(_numeric_column(nm, values, role, "", lines, report, where))
    return columns


def table_from_block(block: np.ndarray, names: list[str], lines: np.ndarray, *, where: str, name: str = "",
                     source: str = "", label_column: str | None = None, roles: dict | None = None,
                     types: dict | None = None, id_column: str | None = None,
                     report: list[str] | None = None, others=None, order: list[str] | None = None) -> Table:
    """A table whose numeric columns ``names`` are given as one C-ordered float64 array (NaN for
    missing): they are views of ``block``, which is shared with ``X`` when the features are
    exactly these columns (no second copy of a large file). ``others`` is a DataFrame of the
    remaining columns (text, dates), inferred as in :func:`table_from_frame`; ``order`` is the
    file's column order."""
    report = [] if report is None else report
    lines = np.asarray(lines)
    columns = columns_from_block(block, names, lines, where, label_column, report)
    if others is not None and len(others.columns):
        columns += columns_from_frame(others, lines, where, label_column, report)
        if order is not None:
            by_name = {c.name: c for c in columns}
            columns = [by_name[nm] for nm in order]
    table = Table(columns, lines, name=name, source=source, report=report, block=(list(names), block))
    return _apply_choices(table, label_column, types, roles, id_column)


def _apply_choices(table: Table, label_column, types, roles, id_column) -> Table:
    if label_column is not None:
        table.set_target(label_column)
    for col_name, type_ in (types or {}).items():
        table.set_type(col_name, type_)
    before = table.roles
    for col_name, role in (roles or {}).items():
        table.set_role(col_name, role)
    restate(table, before)
    if id_column is not None:
        table.set_id_column(id_column)
    return table
