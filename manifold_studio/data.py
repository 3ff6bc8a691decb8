"""Data sets and the loader / sample contracts (Qt-free).

A :class:`Dataset` is what every loader returns and every algorithm consumes: a name, an
(n, d) float matrix, optional labels, optional feature names, where it came from and the
load report (columns left out, rows with missing values, ...). The matrix is a float64 NumPy
array, or a scipy.sparse CSR matrix (``csr_array``, float64) for sparse files (Matrix Market,
scipy's sparse ``.npz``): the methods that declare ``accepts_sparse`` take it as it is, the others
refuse it with a message naming those that do; :meth:`Dataset.dense` gives dense pieces of it
for views (a few columns, a few rows).

A data set read from a table (CSV/TSV, Excel, Parquet) also keeps that typed table with its
column roles (:class:`~manifold_studio.tables.Table`, :attr:`Dataset.table`) and one row id per row
of ``X`` (:attr:`Dataset.row_ids`: the file's line number, or an id column). ``X`` holds the
feature columns, ``labels`` the current target; :meth:`Dataset.set_role`,
:meth:`Dataset.set_target` and :meth:`Dataset.set_roles` change the roles and recompute them::

    ds = ms.load_data("penguins.csv", label_column="species")
    [str(c) for c in ds.columns]        # name, type, role, distinct values, missing count
    ds.set_role("year", "skipped")      # X loses 'year'
    ds.set_target("island")             # labels are now the islands

Loader plugins subclass :class:`Loader`; sample data plugins subclass :class:`Sample`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import Param, validate_params
from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import check_regular_file, out_of_memory
from manifold_studio.tables.model import CATEGORICAL, FEATURE, NUMERIC, TARGET, TEXT, ColumnInfo, Table, quote
from manifold_studio.tables.options import ROLES_OPTION
from manifold_studio.tables.role_notes import restate

MISSING_POLICIES = ("drop", "keep", "error")
_REPORT_LIMIT = 10


def _distinct_and_missing(X, j: int) -> tuple[int, int]:
    """Distinct values and missing count of column ``j`` of a dense or sparse matrix (a sparse
    column's implicit zeros count as the value 0)."""
    if is_sparse(X):
        col = X[:, [j]].tocsc() if hasattr(X, "tocsc") else X[:, [j]]
        stored = np.asarray(col.data, dtype=float)
        present = stored[~np.isnan(stored)]
        has_zero = col.shape[0] > stored.size
        values = np.unique(np.concatenate([present, [0.0]]) if has_zero else present)
        return int(values.size), int(np.isnan(stored).sum())
    column = np.asarray(X[:, j], dtype=float)
    missing = np.isnan(column)
    return int(np.unique(column[~missing]).size), int(missing.sum())


def _nan_rows(X: np.ndarray) -> np.ndarray:
    """Whether each row of X holds a NaN; a finite sum of X proves at once that none does (a NaN
    propagates through the sum), which spares the element-wise test of a large clean matrix."""
    if X.size and np.isfinite(X.sum()):
        return np.zeros(len(X), dtype=bool)
    return np.isnan(X).any(axis=1)


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    labels: np.ndarray | None = None
    feature_names: list[str] | None = None
    source: str = ""
    label_name: str | None = None
    #: human-readable notes from loading (e.g. "column 'species' is not numeric: left out")
    report: list[str] = field(default_factory=list)
    #: optional per-row images (n, h, w) for thumbnails
    images: np.ndarray | None = None
    #: the typed table with roles this data set was read from (None for plain arrays)
    table: Table | None = None
    #: one id per row of X: the file's line number or the id column's value (default 0..n-1)
    row_ids: np.ndarray | None = None
    #: the rows of ``table`` that X holds, in order (None: all of them)
    table_rows: np.ndarray | None = None
    #: the rows of ``table`` this data set covers before rows with missing values were dropped
    #: (None: all of them); role changes recompute X over these rows
    table_scope: np.ndarray | None = None
    #: what was done with missing values: 'drop' the rows, 'keep' them as NaN, or 'error'
    missing: str = "drop"
    #: the loader or sample options it was loaded with (``ms.load_data(source, **load_options)``)
    load_options: dict = field(default_factory=dict)
    #: the file it was read from: absolute path, size, modification time (and SHA-256 once a
    #: project saved it), see :mod:`manifold_studio.fileio.source_file`; None for samples
    source_file: dict | None = None
    #: X is the square n x n matrix of distances between the n rows (``ms.load_distance_matrix``):
    #: only methods with ``metric`` / ``dissimilarity`` = 'precomputed' fit it; a subset keeps both
    #: its rows and their columns; ``feature_names`` (and the row ids) are the item names
    distance_matrix: bool = False
    #: ready-made maps stored with the data ({name: (n, k) array}, e.g. an AnnData file's
    #: ``obsm['X_umap']``): shown, coloured and compared like a run's embedding
    ready_maps: dict = field(default_factory=dict)
    #: whether X is made of the table's feature columns (False: X came from a matrix beside the
    #: table, e.g. AnnData's X with ``obs`` as the table; role changes then only move the target)
    table_features: bool = True

    def __post_init__(self):
        if is_sparse(self.X):
            import scipy.sparse as sp   # deferred: only sparse data sets need it

            X = sp.csr_array(self.X, dtype=np.float64)
        else:
            X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2:
            raise DataError(f"Data set '{self.name}': the matrix must be 2-D, got shape {X.shape}.")
        self.X = X
        if self.labels is not None:
            labels = np.asarray(self.labels)
            if labels.shape != (X.shape[0],):
                raise DataError(f"Data set '{self.name}': {labels.shape[0] if labels.ndim else 0} labels "
                                f"for {X.shape[0]} rows.")
            self.labels = labels
        if self.feature_names is not None:
            self.feature_names = [str(f) for f in self.feature_names]
            if len(self.feature_names) != X.shape[1]:
                raise DataError(f"Data set '{self.name}': {len(self.feature_names)} feature names "
                                f"for {X.shape[1]} columns.")
        if self.distance_matrix:
            if self.is_sparse or X.shape[0] != X.shape[1]:
                raise DataError(f"Data set '{self.name}': a distance matrix must be dense and square, got "
                                f"shape {X.shape}.")
            if self.row_ids is None and self.feature_names is not None:
                self.row_ids = np.asarray(self.feature_names, dtype=object)
        if self.row_ids is None:
            if self.table is not None:
                ids = self.table.row_ids
                self.row_ids = ids if self.table_rows is None else ids[self.table_rows]
            else:
                self.row_ids = np.arange(X.shape[0])
        self.row_ids = np.asarray(self.row_ids)
        if self.row_ids.shape != (X.shape[0],):
            raise DataError(f"Data set '{self.name}': {len(self.row_ids)} row ids for {X.shape[0]} rows.")
        maps = {}
        for key, value in (self.ready_maps or {}).items():
            value = np.asarray(value, dtype=np.float64)
            if value.ndim != 2 or value.shape[0] != X.shape[0]:
                raise DataError(f"Data set '{self.name}': the ready map {key!r} has shape {value.shape}; "
                                f"it needs one row per sample ({X.shape[0]}).")
            maps[str(key)] = value
        self.ready_maps = maps

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    @property
    def is_sparse(self) -> bool:
        """Whether X is a scipy.sparse matrix (see the module docstring)."""
        return is_sparse(self.X)

    def dense(self, rows=None, cols=None) -> np.ndarray:
        """X[rows][:, cols] as a dense float array (rows, cols: an index, a slice or None for
        all; a single row index gives a 1-D array); for sparse data keep the piece small."""
        single = isinstance(rows, (int, np.integer))
        X = self.X if rows is None else self.X[slice(rows, rows + 1) if single else rows]
        if cols is not None:
            X = X[:, cols]
        out = X.toarray() if is_sparse(X) else np.asarray(X)
        return out[0] if single else out

    def describe(self) -> str:
        lab = f", labels: {self.label_name or 'yes'}" if self.has_labels else ", no labels"
        sparse = f", sparse ({self.X.nnz:,} non-zero values)" if self.is_sparse else ""
        dist = " distance matrix" if self.distance_matrix else ""
        return f"{self.name}: {self.n_samples:,} × {self.n_features}{dist}{sparse}{lab}"

    def subset(self, rows, name: str | None = None) -> "Dataset":
        rows = np.asarray(rows)
        if self.distance_matrix:  # the distances between the chosen items: their rows and columns
            rows = np.arange(self.n_samples)[rows]
            return Dataset(name or self.name, self.X[np.ix_(rows, rows)],
                           None if self.labels is None else self.labels[rows],
                           None if self.feature_names is None else [self.feature_names[r] for r in rows],
                           self.source, self.label_name, [], row_ids=self.row_ids[rows], distance_matrix=True)
        table_rows = None
        if self.table is not None:
            table_rows = (np.arange(self.n_samples) if self.table_rows is None else self.table_rows)[rows]
        return Dataset(name or self.name, self.X[rows],
                       None if self.labels is None else self.labels[rows],
                       self.feature_names, self.source, self.label_name, [],
                       None if self.images is None else self.images[rows],
                       table=self.table, row_ids=self.row_ids[rows], table_rows=table_rows,
                       table_scope=table_rows, missing=self.missing,
                       ready_maps={k: v[rows] for k, v in self.ready_maps.items()},
                       table_features=self.table_features)

    # -- columns and roles --------------------------------------------------------------
    @property
    def columns(self) -> list[ColumnInfo]:
        """One :class:`~manifold_studio.tables.ColumnInfo` per column: name, type, role, distinct
        values and missing count (the features and the label for a data set without a table)."""
        if self.table is not None:
            return self.table.infos()
        names = self.feature_names or [f"x{j}" for j in range(self.n_features)]
        out = [ColumnInfo(nm, NUMERIC, FEATURE, *_distinct_and_missing(self.X, j)) for j, nm in enumerate(names)]
        if self.labels is not None:
            out.append(ColumnInfo(self.label_name or "label", "categorical", TARGET,
                                  int(len(np.unique(self.labels.astype(str)))), 0))
        return out

    def column_values(self, name: str) -> np.ndarray:
        """The values of any column of the table (feature, target, meta or skipped) for the rows
        of X, in order: numbers as float64 (NaN where missing), categories and text decoded (None
        where missing), dates as datetime64 — for colouring, hover, the table view and export."""
        col = self._require_table(f"column {quote(name)}").column(name)
        rows = np.arange(self.table.n_rows) if self.table_rows is None else self.table_rows
        return col.take(rows).decoded()

    def _require_table(self, what: str) -> Table:
        if self.table is None:
            raise DataError(f"Data set '{self.name}' has no table of columns ({what} needs one: it was "
                            "not read from a CSV/TSV, Excel or Parquet file).")
        return self.table

    def set_roles(self, roles: dict[str, str]) -> "Dataset":
        """Give columns roles ({name: 'feature' | 'target' | 'meta' | 'skipped'}) and recompute
        X, labels, feature names and row ids (in place; returns self). Nothing changes when the
        new roles are refused (e.g. no feature column left)."""
        features = set(self.table.feature_names) if self.table is not None else set()
        if self.distance_matrix and any((r == FEATURE) != (n in features) for n, r in roles.items()):
            raise DataError(f"Data set '{self.name}' is a distance matrix: its columns are its items and stay features.")
        table = self._require_table("changing roles").copy()
        before = table.roles
        table.set_roles(roles)
        restate(table, before)
        return self._rebuild(table)

    def set_role(self, name: str, role: str) -> "Dataset":
        return self.set_roles({name: role})

    def set_target(self, name: str | None) -> "Dataset":
        """Make column ``name`` the current label (None: no label) and recompute (in place)."""
        table = self._require_table("choosing the label column").copy()
        table.set_target(name)
        return self._rebuild(table)

    def set_missing(self, missing: str) -> "Dataset":
        """Change what is done with rows holding missing values ('drop', 'keep' as NaN for an
        impute step, 'error') and recompute (in place; returns self)."""
        if missing not in MISSING_POLICIES:
            raise DataError(f"Invalid missing {missing!r}: allowed are {', '.join(MISSING_POLICIES)}.")
        table = self._require_table("changing how missing values are handled").copy()
        old, self.missing = self.missing, missing
        try:
            return self._rebuild(table)
        except DataError:
            self.missing = old
            raise

    def _rebuild(self, table: Table) -> "Dataset":
        if not self.table_features:
            return self._retarget(table)
        old_notes = list(self.table.report) if self.table is not None else []
        new = Dataset.from_table(table, name=self.name, source=self.source, missing=self.missing,
                                 scope=self.table_scope, images=None, summary=False)
        images = self.images
        if images is not None and self.table_rows is not None and new.table_rows is not None:
            where = {int(r): k for k, r in enumerate(self.table_rows)}
            images = images[[where[int(r)] for r in new.table_rows]] if all(int(r) in where for r in new.table_rows) else None
        for attr in ("X", "labels", "feature_names", "label_name", "table", "row_ids", "table_rows"):
            setattr(self, attr, getattr(new, attr))
        if not str(self.source or "").startswith("sample:"):  # reloading the file gives these roles again
            self.load_options = {**self.load_options, "label_column": self.label_name, "missing": self.missing,
                                 "roles": {c.name: c.role for c in self.table.infos()}}
        self.images = images if images is None or len(images) == self.n_samples else None
        # the table's notes that its new roles no longer hold (see tables.role_notes) go, its new ones come
        stale, added = set(old_notes) - set(table.report), [r for r in table.report if r not in old_notes]
        self.report = [r for r in self.report if "dropped" not in r and "kept as NaN" not in r and r not in stale] \
            + added + new.report
        return self

    def _retarget(self, table: Table) -> "Dataset":
        """Role changes of a table beside X (AnnData's ``obs``): the columns stay annotations;
        only the target (the labels) can change."""
        if table.feature_names:
            raise DataError(f"Data set '{self.name}': the columns of its annotations ({', '.join(map(quote, table.feature_names))}) "
                            "cannot become features (the features are the file's matrix); give them the role "
                            "meta or target.")
        target = table.current_target
        rows = np.arange(table.n_rows) if self.table_rows is None else self.table_rows
        labels = None if target is None else table.column(target).take(rows).label_values()
        self.table, self.labels, self.label_name = table, labels, target
        self.load_options = {**self.load_options, "label_column": target}
        return self

    @classmethod
    def from_table(cls, table: Table, *, name: str | None = None, source: str | None = None,
                   missing: str = "drop", scope=None, images=None, detail: str = "", summary: bool = True,
                   where: str | None = None, in_chunks: bool = False) -> "Dataset":
        """The data set of a table: the feature columns as X (float64), the current target as
        labels, one row id per row. Rows with a missing feature or label are dropped and
        reported by line and column (``missing='drop'``), kept as NaN (``'keep'``, a missing
        label still drops its row) or refused (``'error'``). ``scope`` limits it to some rows of
        the table. ``detail`` goes into the summary line ("delimiter: comma, header row").
        ``in_chunks``: the table is one chunk of a larger file (it may be emptied by dropped
        rows, and no summary line is written)."""
        if missing not in MISSING_POLICIES:
            raise DataError(f"Invalid missing {missing!r}: allowed are {', '.join(MISSING_POLICIES)}.")
        where = where or (Path(table.source).name if table.source else (name or table.name))
        features = table.feature_names
        target = table.current_target
        if not features:
            kinds = ", ".join(quote(c.name) + (" (label)" if c.name == target else
                                               " (row id)" if c.note == "looks like a row id" else
                                               " (text)" if c.type == TEXT or (c.type == CATEGORICAL and
                                                                               not c.numeric_categories) else
                                               f" ({c.type})")
                              for c in table.columns)
            ids = [c.name for c in table.columns if c.note == "looks like a row id"]
            hint = (f"; its only numeric column(s) {', '.join(quote(i) for i in ids)} look like row ids "
                    "(give them the role feature to fit them anyway)" if ids else "")
            raise DataError(f"{where} has no numeric column to use as features (columns: {kinds}){hint}.")
        scope = np.arange(table.n_rows) if scope is None else np.asarray(scope)
        full = scope.shape[0] == table.n_rows and (scope.shape[0] == 0 or (scope[0] == 0 and
                                                   bool(np.all(np.diff(scope) == 1))))
        X = table.feature_matrix()
        if not full:
            X = X[scope]
        lines = table.row_ids[scope]
        label_missing = table.column(target).missing[scope] if target is not None else None
        notes: list[str] = []
        bad_cells = _nan_rows(X) if missing != "keep" else np.zeros(len(scope), dtype=bool)
        if missing == "keep":
            n_cells = np.isnan(X if label_missing is None else X[~label_missing])
            if n_cells.any():
                notes.append(f"{int(n_cells.sum()):,} missing or non-finite value(s) in "
                             f"{int(n_cells.any(axis=1).sum()):,} row(s) kept as NaN: probabilistic PCA (method=em) "
                             "fits with them and imputes them; other methods refuse NaN.")
        bad = bad_cells if label_missing is None else bad_cells | label_missing
        bad_rows = np.flatnonzero(bad)
        if len(bad_rows):
            details = []
            for r in bad_rows[:_REPORT_LIMIT]:
                cols = [nm for j, nm in enumerate(features) if missing != "keep" and np.isnan(X[r, j])]
                if label_missing is not None and label_missing[r]:
                    cols.append(target)
                details.append(f"line {lines[r]} ({', '.join(quote(c) for c in cols)})")
            more = f" and {len(bad_rows) - _REPORT_LIMIT} more" if len(bad_rows) > _REPORT_LIMIT else ""
            spots = "; ".join(details) + more
            if missing == "error":
                raise DataError(f"{where} has missing or non-finite values in {len(bad_rows)} row(s): "
                                f"{spots}. Fill them in, or drop these rows (missing=drop).")
            if len(bad_rows) == len(scope) and not in_chunks:
                raise DataError(f"{where}: every row has a missing value ({spots}); nothing is left.")
            notes.append(f"{len(bad_rows)} row(s) with missing or non-finite values dropped: {spots}.")
            keep = ~bad
            X = X[keep]
            rows = scope[keep]
        else:
            rows = scope
        labels = None
        if target is not None:
            labels = table.column(target).take(rows).label_values()
        report = list(table.report) if summary else []
        if summary and not in_chunks:
            lab = f", labels: {quote(target)}" if target else ""
            report.insert(0, f"Read {len(rows):,} rows × {len(features)} numeric columns from {where} "
                             f"({detail}{lab})." if detail else
                             f"Read {len(rows):,} rows × {len(features)} feature columns from {where}{lab and ' (' + lab[2:] + ')'}.")
        return cls(name or table.name, X, labels, features, table.source if source is None else source,
                   target, report + notes, images, table=table, row_ids=table.row_ids[rows],
                   table_rows=None if full and len(rows) == table.n_rows else rows,
                   table_scope=None if full else scope, missing=missing)


class Loader:
    """A file loader plugin: declares the extensions it reads and its options."""

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    #: lower-case extensions with the dot, e.g. (".csv", ".tsv")
    extensions: ClassVar[tuple[str, ...]] = ()
    #: options (label column, delimiter, ...) as constraints, like algorithm parameters
    options: ClassVar[tuple[Param, ...]] = ()

    def can_load(self, path: Path) -> bool:
        return Path(path).suffix.lower() in self.extensions

    def load(self, path, **options) -> Dataset:
        path = Path(path)
        opts = {p.name: p.default for p in self.options}
        opts.update(validate_params(self.options, options))
        if not path.exists():
            raise DataError(f"File not found: {path}")
        check_regular_file(path, "data file")  # a FIFO or a device would block or never end
        if path.is_file() and path.stat().st_size == 0:
            raise DataError(f"{path.name} is empty (0 bytes).")
        try:
            return self._load(path, **opts)
        except MemoryError as exc:
            raise out_of_memory(path.name, None, exc) from None

    def _load(self, path: Path, **options) -> Dataset:  # pragma: no cover - abstract
        raise NotImplementedError

    def iter_chunks(self, path, chunk_rows: int = 100_000, **options):
        """The file as consecutive :class:`Dataset` chunks of at most ``chunk_rows`` rows, with the
        same columns, for files larger than memory (``manifold_studio.extend.out_of_core``). The first
        chunk's report holds the load remarks. This default loads the whole file and slices it;
        loaders that can read part of a file (CSV, .npy) override it to keep memory bounded."""
        ds = self.load(path, **options)
        step = max(1, int(chunk_rows))
        for start in range(0, max(ds.n_samples, 1), step):
            part = ds.subset(np.arange(start, min(start + step, ds.n_samples)))
            part.report = list(ds.report) if start == 0 else []
            yield part


def set_roles_after_load(ds: Dataset, roles: dict | None, source: str) -> Dataset:
    """Give the columns of ``ds``, loaded from ``source`` by a loader or sample without a ``roles``
    option, the ``roles`` asked for ({name: role}, as the ``roles`` loader option; None: none)."""
    if not roles:
        return ds
    if ds.table is None:
        raise DataError(f"Column roles do not apply to {source}: it has no table of named columns (its features "
                        f"are {', '.join(map(quote, ds.feature_names[:5]))}{', …' if ds.n_features > 5 else ''}).")
    return ds.set_roles(ROLES_OPTION.validate(roles))


class Sample:
    """A built-in sample data set, generated or shipped with the plugin."""

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: generator options such as n_samples, noise, random_state
    options: ClassVar[tuple[Param, ...]] = ()

    def load(self, **options) -> Dataset:
        opts = {p.name: p.default for p in self.options}
        opts.update(validate_params(self.options, options))
        ds = self._make(**opts)
        ds.source = f"sample:{self.id}"
        return ds

    def _make(self, **options) -> Dataset:  # pragma: no cover - abstract
        raise NotImplementedError
