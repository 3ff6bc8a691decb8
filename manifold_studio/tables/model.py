"""Typed tables with column roles (Qt-free, pandas-free).

A :class:`Table` is what a loader reads before anything is fitted: named, typed columns, each with
a role, and one row id per row.

Column types (:data:`COLUMN_TYPES`)
    ``numeric``      float64 values, NaN where missing.
    ``categorical``  integer codes into ``categories`` (-1 where missing). The categories are text
                     ("Adelie", "Gentoo") or numbers (a declared integer code such as a year).
    ``text``         free text, an object array of ``str`` with ``None`` where missing.
    ``datetime``     ``datetime64[ns]``, NaT where missing.

Roles (:data:`ROLES`)
    ``feature``  fitted: the feature columns, in table order, make the float64 matrix ``X``.
    ``target``   a candidate label column; one of them is the table's ``current_target``.
    ``meta``     kept and shown (colour, size, hover, table, filter), never fitted.
    ``skipped``  neither fitted nor shown.

Row ids are the original line numbers of the file (or a chosen id column, which must be unique:
:meth:`Table.set_id_column`). They travel with every subset of rows (:meth:`Table.take`).

The float form of a column (:meth:`Column.as_float`) is what a feature contributes to ``X``:
numeric values; for a categorical column its category value when the categories are numbers,
else the index of its category (a ``one_hot`` step turns such codes into indicator columns);
for a date/time column seconds since 1970. Free text cannot be a feature.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.errors import DataError

NUMERIC, CATEGORICAL, TEXT, DATETIME = "numeric", "categorical", "text", "datetime"
COLUMN_TYPES = (NUMERIC, CATEGORICAL, TEXT, DATETIME)
FEATURE, TARGET, META, SKIPPED = "feature", "target", "meta", "skipped"
ROLES = (FEATURE, TARGET, META, SKIPPED)

__all__ = ["Column", "Table", "ColumnInfo", "COLUMN_TYPES", "ROLES", "NUMERIC", "CATEGORICAL", "TEXT",
           "DATETIME", "FEATURE", "TARGET", "META", "SKIPPED", "quote", "first_repeat"]


def quote(name) -> str:
    return f"'{name}'"


def _names_text(names) -> str:
    return ", ".join(quote(n) for n in names)


def first_repeat(values: np.ndarray) -> tuple[object, int, int] | None:
    """``(value, first index, second index)`` of the first value that occurs twice, or None."""
    seen: dict = {}
    if values.dtype.kind in "iuf":
        uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        if counts.max(initial=0) < 2:
            return None
        dup = counts[inverse] > 1
        candidates = np.flatnonzero(dup)
    else:
        candidates = range(len(values))
    for i in candidates:
        v = values[i]
        key = v.item() if isinstance(v, np.generic) else v
        if key in seen:
            return key, seen[key], int(i)
        seen[key] = int(i)
    return None


@dataclass(frozen=True)
class ColumnInfo:
    """One line of a column summary (an import dialog's column list)."""

    name: str
    type: str
    role: str
    n_distinct: int
    n_missing: int
    note: str = ""

    def __str__(self):
        extra = f" — {self.note}" if self.note else ""
        return (f"{quote(self.name)}: {self.type}, {self.role}, {self.n_distinct:,} distinct, "
                f"{self.n_missing:,} missing{extra}")


@dataclass
class Column:
    """One typed column (see the module docstring for how each type stores its values)."""

    name: str
    type: str
    values: np.ndarray
    role: str = FEATURE
    categories: np.ndarray | None = None
    #: why inference chose this type or role (shown in the import dialog)
    note: str = ""

    def __post_init__(self):
        if self.type not in COLUMN_TYPES:
            raise DataError(f"Column {quote(self.name)}: unknown type {self.type!r}; allowed are "
                            f"{', '.join(COLUMN_TYPES)}.")
        if self.role not in ROLES:
            raise DataError(f"Column {quote(self.name)}: unknown role {self.role!r}; allowed are "
                            f"{', '.join(ROLES)}.")
        if self.type == CATEGORICAL and self.categories is None:
            raise DataError(f"Column {quote(self.name)} is categorical but has no categories.")

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def missing(self) -> np.ndarray:
        v = self.values
        if self.type == NUMERIC:
            return np.isnan(v)
        if self.type == CATEGORICAL:
            return v < 0
        if self.type == DATETIME:
            return np.isnat(v)
        return np.equal(v, None)

    @property
    def n_missing(self) -> int:
        return int(self.missing.sum())

    @property
    def n_distinct(self) -> int:
        if self.type == CATEGORICAL:
            return int(len(np.unique(self.values[self.values >= 0])))
        present = self.values[~self.missing]
        if self.type == TEXT:
            return len(set(present.tolist()))
        return int(len(np.unique(present)))

    @property
    def numeric_categories(self) -> bool:
        return self.categories is not None and self.categories.dtype.kind in "iuf"

    def info(self) -> ColumnInfo:
        return ColumnInfo(self.name, self.type, self.role, self.n_distinct, self.n_missing, self.note)

    def as_float(self) -> np.ndarray:
        """The column as float64 (NaN where missing); see the module docstring."""
        if self.type == NUMERIC:
            return self.values
        if self.type == CATEGORICAL:
            codes = self.values
            base = self.categories.astype(np.float64) if self.numeric_categories else \
                np.arange(len(self.categories), dtype=np.float64)
            out = base[np.clip(codes, 0, None)] if len(base) else np.full(len(codes), np.nan)
            out[codes < 0] = np.nan
            return out
        if self.type == DATETIME:
            out = self.values.astype("datetime64[ns]").astype(np.int64).astype(np.float64) / 1e9
            out[np.isnat(self.values)] = np.nan
            return out
        raise DataError(f"Column {quote(self.name)} holds free text: it cannot be a feature "
                        "(make it categorical, or use it as meta or target).")

    def decoded(self) -> np.ndarray:
        """Display values: categories instead of codes (None where missing)."""
        if self.type != CATEGORICAL:
            return self.values
        out = np.empty(len(self.values), dtype=object)
        ok = self.values >= 0
        out[ok] = self.categories[self.values[ok]]
        out[~ok] = None
        return out

    def label_values(self) -> np.ndarray:
        """The column as a label vector (rows with a missing label must be dropped first):
        integers when every value is a whole number, floats for other numbers, text otherwise."""
        if self.type == NUMERIC:
            vals = self.values
        elif self.type == CATEGORICAL:
            vals = self.categories[np.clip(self.values, 0, None)] if len(self.categories) else \
                np.zeros(0)
        elif self.type == DATETIME:
            return self.values.astype(str)
        else:
            return np.array([("" if v is None else str(v)) for v in self.values], dtype=str)
        if vals.dtype.kind in "iuf":
            vals = vals.astype(np.float64)
            if np.all(np.isfinite(vals)) and np.all(vals == np.round(vals)) and np.all(np.abs(vals) < 2 ** 53):
                return vals.astype(np.int64)
            return vals
        return vals.astype(str)

    def take(self, rows) -> "Column":
        return Column(self.name, self.type, self.values[rows], self.role, self.categories, self.note)

    def with_role(self, role: str) -> "Column":
        return Column(self.name, self.type, self.values, role, self.categories, self.note)


class Table:
    """Named typed columns with roles, a current target and one row id per row.

    ``report`` holds the one-line remarks of reading and inference (what was skipped, missing,
    coerced, and why). ``block`` optionally holds a 2-D float64 array whose columns are the
    values of the named numeric columns (a reader that parsed them together): the feature
    matrix is then that array itself when the features are exactly those columns, not a copy.
    """

    def __init__(self, columns: list[Column], row_ids=None, *, id_column: str | None = None,
                 current_target: str | None = None, name: str = "", source: str = "",
                 report: list[str] | None = None, block: tuple[list[str], np.ndarray] | None = None):
        self.columns: list[Column] = list(columns)
        n = len(self.columns[0]) if self.columns else (0 if row_ids is None else len(row_ids))
        for c in self.columns:
            if len(c) != n:
                raise DataError(f"Column {quote(c.name)} has {len(c)} rows; the table has {n}.")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise DataError(f"Column names repeat: {_names_text(sorted({x for x in names if names.count(x) > 1}))}.")
        self.row_ids = np.arange(1, n + 1) if row_ids is None else np.asarray(row_ids)
        if self.row_ids.shape != (n,):
            raise DataError(f"{len(self.row_ids)} row ids for {n} rows.")
        self.id_column = id_column
        self.name, self.source = name, source
        self.report: list[str] = list(report or [])
        self.block = block
        self.current_target: str | None = None
        targets = self.names_with_role(TARGET)
        if current_target is not None:
            self.set_target(current_target)
        elif targets:
            self.current_target = targets[0]

    # -- access -------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return int(len(self.row_ids))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def __len__(self) -> int:
        return self.n_rows

    def __contains__(self, name) -> bool:
        return any(c.name == name for c in self.columns)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise DataError(f"The table has no column named {quote(name)}: the columns are "
                        f"{_names_text(self.names)}.")

    __getitem__ = column

    def names_with_role(self, role: str) -> list[str]:
        return [c.name for c in self.columns if c.role == role]

    @property
    def feature_names(self) -> list[str]:
        return self.names_with_role(FEATURE)

    @property
    def target_names(self) -> list[str]:
        return self.names_with_role(TARGET)

    @property
    def meta_names(self) -> list[str]:
        return self.names_with_role(META)

    @property
    def roles(self) -> dict[str, str]:
        return {c.name: c.role for c in self.columns}

    def infos(self) -> list[ColumnInfo]:
        """One :class:`ColumnInfo` per column (type, role, distinct values, missing count)."""
        return [c.info() for c in self.columns]

    def categories(self) -> dict[str, list]:
        """The categories of every categorical column (for preparation steps such as one_hot)."""
        return {c.name: c.categories.tolist() for c in self.columns if c.type == CATEGORICAL}

    # -- roles --------------------------------------------------------------------
    def _replace(self, name: str, column: Column) -> None:
        self.columns = [column if c.name == name else c for c in self.columns]

    def set_role(self, name: str, role: str) -> "Table":
        """Give column ``name`` a role (in place; returns self). A free-text column cannot be a
        feature; making a column a target makes it the current one when there is none."""
        col = self.column(name)
        if role not in ROLES:
            raise DataError(f"Unknown role {role!r} for column {quote(name)}: allowed are {', '.join(ROLES)}.")
        if role == FEATURE and col.type == TEXT:
            raise DataError(f"Column {quote(name)} holds free text: it cannot be a feature ({col.n_distinct:,} "
                            "distinct values); allowed roles for it are target, meta or skipped. A text column with few "
                            "distinct values is read as categorical and can be a feature (fitted as the codes of "
                            "its categories, or as indicator columns with the one_hot preparation step).")
        self._replace(name, col.with_role(role))
        if role == TARGET and self.current_target is None:
            self.current_target = name
        elif role != TARGET and self.current_target == name:
            others = self.target_names
            self.current_target = others[0] if others else None
        return self

    def set_roles(self, roles: dict[str, str]) -> "Table":
        for name, role in roles.items():
            self.set_role(name, role)
        return self

    def set_target(self, name: str | None) -> "Table":
        """Make ``name`` the current target (giving it the target role), or none."""
        if name is None:
            self.current_target = None
            return self
        if self.column(name).role != TARGET:
            self.set_role(name, TARGET)
        self.current_target = name
        return self

    def set_type(self, name: str, type_: str, max_categories: int = 1000) -> "Table":
        """Declare a column categorical (a numeric integer code, or text with few values) or
        numeric again (a categorical column with numeric categories)."""
        col = self.column(name)
        if type_ == col.type:
            return self
        if type_ == CATEGORICAL and col.type in (NUMERIC, TEXT):
            present = ~col.missing
            vals = col.values[present]
            if col.type == TEXT:
                vals = vals.astype(str)
            cats, codes = np.unique(vals, return_inverse=True)
            if len(cats) > max_categories:
                raise DataError(f"Column {quote(name)} has {len(cats):,} distinct values: too many "
                                f"categories (at most {max_categories:,}).")
            if cats.dtype.kind == "f" and np.all(cats == np.round(cats)):
                cats = cats.astype(np.int64)
            full = np.full(len(col), -1, dtype=np.int64)
            full[present] = codes
            self._replace(name, Column(name, CATEGORICAL, full, col.role, cats, "declared categorical"))
        elif type_ == NUMERIC and col.type == CATEGORICAL and col.numeric_categories:
            self._replace(name, Column(name, NUMERIC, col.as_float().copy(), col.role, None, "declared numeric"))
        else:
            raise DataError(f"Column {quote(name)} ({col.type}) cannot be made {type_}.")
        if self.block is not None and name in self.block[0]:  # the block no longer holds this column
            self.block = None
        return self

    def set_id_column(self, name: str) -> "Table":
        """Use column ``name`` as the row id: its values must be present and unique. The
        column stays in the table as a meta column."""
        col = self.column(name)
        if col.missing.any():
            line = self.row_ids[np.flatnonzero(col.missing)[0]]
            raise DataError(f"Id column {quote(name)} has a missing value (line {line}): a row id must "
                            "be present on every row.")
        values = col.decoded() if col.type == CATEGORICAL else col.values
        if col.type == NUMERIC and np.all(values == np.round(values)):
            values = values.astype(np.int64)
        if col.type in (TEXT, CATEGORICAL):
            values = np.asarray([str(v) for v in values], dtype=str)
        rep = first_repeat(values)
        if rep is not None:
            value, i, j = rep
            raise DataError(f"Id column {quote(name)} has repeated values: the first is {value!r} "
                            f"(lines {self.row_ids[i]} and {self.row_ids[j]}); a row id must be unique.")
        self.row_ids = values
        self.id_column = name
        if col.role in (FEATURE, TARGET):
            self.set_role(name, META)
        return self

    # -- matrices -----------------------------------------------------------------
    def feature_matrix(self, names: list[str] | None = None) -> np.ndarray:
        """The float64 (n_rows, d) matrix of ``names`` (default: the feature columns)."""
        names = self.feature_names if names is None else list(names)
        if self.block is not None and names == list(self.block[0]):
            return self.block[1]
        if not names:
            return np.zeros((self.n_rows, 0))
        out = np.empty((self.n_rows, len(names)), dtype=np.float64)
        for j, nm in enumerate(names):
            out[:, j] = self.column(nm).as_float()
        return out

    def take(self, rows) -> "Table":
        """A new table of the given rows (indices or a boolean mask), roles and ids kept."""
        rows = np.asarray(rows)
        block = None
        if self.block is not None:
            block = (self.block[0], self.block[1][rows])
            cols = []
            pos = {nm: j for j, nm in enumerate(block[0])}
            for c in self.columns:
                if c.name in pos:
                    cols.append(Column(c.name, c.type, block[1][:, pos[c.name]], c.role, c.categories, c.note))
                else:
                    cols.append(c.take(rows))
        else:
            cols = [c.take(rows) for c in self.columns]
        out = Table(cols, self.row_ids[rows], id_column=self.id_column, name=self.name, source=self.source,
                    block=block)
        out.current_target = self.current_target
        return out

    def copy(self) -> "Table":
        """A table sharing the column data, with its own roles (for changing roles safely)."""
        out = Table(list(self.columns), self.row_ids, id_column=self.id_column, name=self.name,
                    source=self.source, report=self.report, block=self.block)
        out.current_target = self.current_target
        return out

    def to_frame(self):
        """The table as a pandas DataFrame (decoded categories), indexed by row id."""
        import pandas as pd

        data = {}
        for c in self.columns:
            if c.type == CATEGORICAL:
                data[c.name] = pd.Categorical.from_codes(c.values, categories=c.categories)
            else:
                data[c.name] = c.values
        return pd.DataFrame(data, index=pd.Index(self.row_ids, name=self.id_column or "row"))

    def describe(self) -> list[str]:
        """One line per column: type, role, distinct values, missing count (and why)."""
        return [str(i) for i in self.infos()]

    def __repr__(self):
        return (f"Table({self.name!r}, {self.n_rows:,} rows, features={self.feature_names}, "
                f"target={self.current_target!r}, metas={self.meta_names})")


@dataclass
class ReadResult:
    """What a reader returns besides the table: the facts for the load summary."""

    table: Table
    #: e.g. "delimiter: comma, header row" or "sheet 'Data'"
    detail: str = ""
    extra: dict = field(default_factory=dict)
