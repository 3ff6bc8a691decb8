"""Distance matrix files: a square matrix of distances between n items, read as a data set
flagged :attr:`~manifold_studio.data.Dataset.distance_matrix` (Qt-free)::

    ds = ms.load_distance_matrix("D.csv")      # or .tsv, .xlsx, .npy, .npz (dense or sparse), .mtx
    ds.distance_matrix, ds.X.shape             # True, (n, n)
    ds.feature_names                           # the item names (header row / first column), or None
    ms.get_algorithm("isomap", metric="precomputed").fit(ds.X)

:class:`DistanceMatrixLoader` wraps the loader registered for the file's extension, so the file is
read exactly as a data file is (the CSV reader's header and delimiter detection, the NumPy loader's
bounded archive, the Matrix Market reader) and then checked as a distance matrix:

* **Names.** A header row of names (CSV/TSV, Excel), an ``.npz``'s ``feature_names`` array, and a
  first column of row names (a text column, or the ``id_column``) are the item names; when both a
  header and row names are given they must list the same items in the same order. A label column
  (``label_column``; an ``.npz``'s ``y`` / ``label_array``) colours the maps.
* **Checks**, each refused by one line naming the file and what is allowed: not square (the shape
  is given), missing or non-finite entries, negative distances, a non-zero diagonal, asymmetry
  beyond ``symmetry_tolerance`` times the largest distance (the largest difference and where),
  row and column names that disagree. A diagonal or an asymmetry within the tolerance (rounding)
  is set to 0 / symmetrised and reported.
* **Sparse files** (sparse ``.npz``, coordinate ``.mtx``) are made dense; every off-diagonal
  distance must be stored (a k-nearest-neighbour graph is not a distance matrix).
* **Size.** The n x n matrix must fit the load limit (:mod:`manifold_studio.fileio.bounded`); it is
  checked before anything is read: from the ``.npy`` header, the Matrix Market header, the text
  file's line and field counts, or a sparse matrix's shape before it is made dense.

:func:`read_distances_to` reads the other kind of distance file: the distances of m new points to
the n items of a distance-matrix data set (m x n), to extend a model fitted on it.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import Float
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import ENV_VAR, check_npy_file, human_bytes, max_load_bytes
from manifold_studio.tables.model import CATEGORICAL, META, TEXT, quote

#: the default of ``symmetry_tolerance``: relative to the largest distance (rounding of a text file)
SYMMETRY_TOLERANCE = 1e-6
TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".tab", ".dat")
OWN_OPTIONS = (
    Float("symmetry_tolerance", SYMMETRY_TOLERANCE, "Largest difference D[i, j] - D[j, i] (and largest diagonal "
          "value) accepted as rounding, relative to the largest distance; such differences are evened out "
          "(symmetrised, diagonal set to 0) and reported. Larger ones are refused.", low=0.0,
          label="Symmetry tolerance"),
)
_GENERATED = re.compile(r"column_\d+")

__all__ = ["DistanceMatrixLoader", "as_distance_matrix", "read_distances_to", "SYMMETRY_TOLERANCE"]


def _too_large(where: str, rows: int, cols: int) -> DataError | None:
    need = 8 * int(rows) * int(cols)
    limit = max_load_bytes()
    if need <= limit:
        return None
    return DataError(f"{where}: a {rows:,} × {cols:,} distance matrix needs {human_bytes(need)}, more than the "
                     f"load limit of {human_bytes(limit)} (set {ENV_VAR} to raise it).")


#: the most bytes of a text file's first line looked at to count its fields (a longer line: at least that many)
FIRST_LINE_BYTES = 64 * 2**20


def _text_shape(path: Path) -> tuple[int, int]:
    """(lines, fields of the first line) of a text file, read in blocks (nothing kept)."""
    lines, first, last = 0, b"", b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            if not lines and b"\n" not in first and len(first) < FIRST_LINE_BYTES:
                first += block[:block.find(b"\n")] if b"\n" in block else block
            lines += block.count(b"\n")
            last = block[-1:]
    fields = len(re.split(rb"[,;\t| ]+", first.strip())) if first.strip() else 1
    return lines + (last != b"\n"), fields


def check_size_before_reading(path: Path) -> None:
    """Refuse a file whose distance matrix would not fit the load limit, before reading it."""
    suffix, where = path.suffix.lower(), path.name
    if suffix == ".npy":
        shape, _dtype, _size = check_npy_file(path)   # bounded: the header against the limit
        if len(shape) != 2 or shape[0] != shape[1]:
            raise DataError(f"{where} holds an array of shape {shape}: a distance matrix is a square 2-D "
                            "array (n, n) of the distances between n items.")
        problem = _too_large(where, *shape)
    elif where.lower().endswith((".mtx", ".mtx.gz", ".mtx.bz2")):
        import scipy.io

        try:
            rows, cols = scipy.io.mminfo(str(path))[:2]
        except (ValueError, OSError, EOFError) as exc:
            raise DataError(f"{where} cannot be read as a Matrix Market file: {exc}") from None
        problem = _too_large(where, rows, cols)
    elif suffix in TEXT_SUFFIXES:
        rows, cols = _text_shape(path)
        problem = _too_large(where, rows, cols)
    else:
        problem = None  # .npz: the loader's bounded archive; Excel, Parquet: read by pandas
    if problem is not None:
        raise problem


def _numbered_header(ds: Dataset) -> bool:
    """Whether a table read without a header looks like an (n + 1) x (n + 1) matrix whose first row and
    column are item numbers: only its corner cell is empty."""
    X = ds.X
    if ds.table is None or is_sparse(X) or X.shape[0] != X.shape[1] or X.shape[0] < 2:
        return False
    bad = ~np.isfinite(X)
    return bool(bad[0, 0]) and int(bad.sum()) == 1


def _numbers_as_header(ds: Dataset) -> bool:
    """Whether a table read with a header has one row fewer than numeric columns, all named by numbers:
    its first row was a row of distances (beside a column of names), not a header."""
    if ds.table is None or ds.feature_names is None or ds.X.shape[0] + 1 != ds.X.shape[1]:
        return False
    try:
        [float(c) for c in ds.feature_names]
    except ValueError:
        return False
    return True


def _at(i: int, j: int, names) -> str:
    at = f"D[{i}, {j}]"
    return f"{at} ({quote(names[i])} to {quote(names[j])})" if names is not None else at


def _dense(X, where: str) -> np.ndarray:
    """A sparse matrix made dense, when it is square, fits the load limit and stores every
    off-diagonal distance (an absent one would silently read as 0)."""
    n, m = X.shape
    if n != m:
        raise DataError(f"{where} is not a square distance matrix: a sparse matrix of shape ({n:,}, {m:,}); a "
                        "distance matrix has one row and one column per item.")
    problem = _too_large(where, n, n)
    if problem is not None:
        raise problem
    X = X.tocsr()
    X.sum_duplicates()
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    off = np.bincount(rows[X.indices != rows], minlength=n)   # stored off-diagonal entries per row
    short = np.flatnonzero(off < n - 1)
    if short.size:
        r = int(short[0])
        have = set(X.indices[X.indptr[r]:X.indptr[r + 1]].tolist()) | {r}
        c = next(j for j in range(n) if j not in have)
        total = int((n - 1) * n - off.sum())
        raise DataError(f"{where} is a sparse matrix with {total:,} off-diagonal distance(s) not stored (the first "
                        f"D[{r}, {c}]): a distance matrix file must give every distance between two different "
                        "items (a k-nearest-neighbour graph is not one); store them, or save the matrix dense.")
    return X.toarray()


def _name(value) -> str:
    """An item name as text (a whole number read as a float: without '.0')."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _names(ds: Dataset) -> tuple[list[str] | None, list[str] | None, str | None]:
    """(column names, row names, the row-name column) of a loaded data set, as given by the file."""
    cols = ds.feature_names
    if cols is not None and all(_GENERATED.fullmatch(c) for c in cols):
        cols = None   # a CSV without a header row: the reader numbered its columns
    table = ds.table
    if table is None:
        return cols, None, None
    if table.id_column is not None:
        return cols, [_name(v) for v in ds.row_ids], table.id_column
    for c in table.columns:
        if c.role != META or c.name == table.current_target:
            continue
        info = c.info()
        if (c.type in (TEXT, CATEGORICAL) or c.note == "looks like a row id") and info.n_distinct == len(c) \
                and not info.n_missing:
            values = c.decoded() if ds.table_rows is None else c.take(ds.table_rows).decoded()
            return cols, [_name(v) for v in values], c.name
    return cols, None, None


def _labels(ds: Dataset, name_column: str | None):
    """(labels, label name): the file's label column, else its only categorical column besides the names."""
    if ds.labels is not None or ds.table is None:
        return ds.labels, ds.label_name
    table = ds.table
    found = [c for c in table.columns if c.role == META and c.type == CATEGORICAL and c.name != name_column]
    if len(found) != 1:
        return None, None
    col = found[0] if ds.table_rows is None else found[0].take(ds.table_rows)
    return col.label_values(), found[0].name


def as_distance_matrix(ds: Dataset, where: str, symmetry_tolerance: float = SYMMETRY_TOLERANCE,
                       copy: bool = True) -> Dataset:
    """The data set ``ds`` (as a loader read it) checked as a distance matrix and flagged as one;
    see the module docstring for the checks. ``where`` names the file in messages; ``copy=False``
    evens out rounding in ``ds.X`` itself (a loader's fresh array: no second n x n copy)."""
    X = ds.X
    n, m = X.shape
    cols, rows, name_column = _names(ds)
    if m == n + 1 and rows is None and cols is not None and _GENERATED.fullmatch(cols[0]) \
            and not is_sparse(X) and np.isfinite(X[:, 0]).all():
        # a header row with an empty corner cell above a first column of numbers: the items' names
        # (R's write.csv of a matrix)
        rows, name_column = [_name(v) for v in X[:, 0]], cols[0]
        X, m, cols = X[:, 1:], m - 1, cols[1:]
    if n != m:
        hint = ""
        if m == n + 1:
            hint = (" (one column too many: is the first column the items' names? Give it as the id column, "
                    "or make its values text)")
        raise DataError(f"{where} is not a square distance matrix: {n:,} rows × {m:,} columns of numbers{hint}; a "
                        "distance matrix has one row and one column per item (plus an optional header row of "
                        "names and first column of names).")
    D = _dense(X, where) if is_sparse(X) else np.array(X, dtype=np.float64, copy=copy or None)
    if cols is not None and rows is not None and cols != rows:
        k = next(i for i, (a, b) in enumerate(zip(rows, cols)) if a != b)
        raise DataError(f"{where}: its row names and column names disagree (row {k} is {quote(rows[k])}, column {k} "
                        f"is {quote(cols[k])}); both must list the same items in the same order.")
    names = cols if cols is not None else rows
    bad = ~np.isfinite(D)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise DataError(f"{where} has {int(bad.sum()):,} missing or non-finite distance(s) (the first {_at(i, j, names)}): "
                        "every distance must be a finite number.")
    if (D < 0).any():
        i, j = np.unravel_index(int(np.argmin(D)), D.shape)
        raise DataError(f"{where} has {int((D < 0).sum()):,} negative distance(s) (the smallest {D[i, j]:.6g} at "
                        f"{_at(int(i), int(j), names)}): distances must be 0 or more.")
    notes = []
    tol = float(symmetry_tolerance) * float(D.max()) if n else 0.0
    diag = np.diag(D)
    if diag.any():
        k = int(np.argmax(diag))
        if diag[k] > tol:
            raise DataError(f"{where} has {int(np.count_nonzero(diag)):,} non-zero distance(s) on its diagonal (the "
                            f"largest {diag[k]:.6g} at {_at(k, k, names)}): each item's distance to itself must be 0.")
        notes.append(f"{int(np.count_nonzero(diag)):,} diagonal value(s) up to {diag[k]:.3g} (rounding) set to 0.")
        np.fill_diagonal(D, 0.0)
    gap = np.subtract(D, D.T)
    np.abs(gap, out=gap)
    worst = float(gap.max()) if n else 0.0
    if worst > tol:
        i, j = np.unravel_index(int(np.argmax(gap)), gap.shape)
        raise DataError(f"{where} is not symmetric: the largest difference |D[i, j] - D[j, i]| is {worst:.6g}, at "
                        f"{_at(int(i), int(j), names)} ({D[i, j]:.6g} against {D[j, i]:.6g}); allowed is "
                        f"{symmetry_tolerance:g} × the largest distance = {tol:.3g} (symmetrise it, e.g. (D + D.T) / 2, "
                        "or raise symmetry_tolerance).")
    del gap
    if worst > 0:
        D += D.T
        D /= 2
        notes.append(f"Differences D[i, j] - D[j, i] up to {worst:.3g} (rounding) evened out: (D + D.T) / 2.")
    labels, label_name = _labels(ds, name_column)
    named = (f"item names from its {'header row' if cols is not None else 'column ' + quote(name_column)}"
             if names is not None else "no item names")
    lab = f", labels: {quote(label_name)}" if label_name else ""
    kept = [r for r in ds.report if not r.startswith(("Read ", "Reading ", f"{where}: a sparse"))
            and not any(c and quote(c) in r for c in (name_column, label_name))]
    report = [f"Read a {n:,} × {n:,} distance matrix from {where} ({named}{lab})."] + notes + kept
    return Dataset(ds.name, D, labels, names, ds.source, label_name, report,
                   row_ids=None if names is None else np.asarray(names, dtype=object),
                   load_options=dict(ds.load_options), distance_matrix=True)


class DistanceMatrixLoader(Loader):
    """Reads a distance matrix file with ``inner``, the loader registered for its extension, then
    checks it (:func:`as_distance_matrix`). Its options are the inner loader's (but missing values
    are always kept, to be reported as such) and ``symmetry_tolerance``."""

    id = "distance_matrix"
    name = "Distance matrix"

    def __init__(self, inner: Loader):
        self.inner = inner
        self.extensions = inner.extensions
        self.options = tuple(p for p in inner.options if p.name != "missing") + OWN_OPTIONS

    def can_load(self, path) -> bool:
        return self.inner.can_load(path)

    def _load(self, path: Path, symmetry_tolerance: float = SYMMETRY_TOLERANCE, **options) -> Dataset:
        check_size_before_reading(path)
        if "missing" in {p.name for p in self.inner.options}:
            options["missing"] = "keep"   # a gap is reported as such, not dropped into a non-square matrix
        ds = self.inner.load(path, **options)
        if options.get("header") == "auto" and _numbered_header(ds):   # a header row of numbers: read it as one
            ds = self.inner.load(path, **{**options, "header": "yes"})
        elif options.get("header") == "auto" and _numbers_as_header(ds):  # the first row of distances was taken as names
            ds = self.inner.load(path, **{**options, "header": "no"})
        return as_distance_matrix(ds, path.name, symmetry_tolerance, copy=False)


def read_distances_to(ds: Dataset, training: Dataset, where: str) -> Dataset:
    """``ds`` (a loaded file) as the distances of m new points to the n items of the distance-matrix
    data set ``training`` (m x n): the column count must be n, named columns must be the training
    items (in any order: they are put in the training order), every distance finite and >= 0."""
    n = training.n_samples
    X = ds.dense() if is_sparse(ds.X) else np.asarray(ds.X, dtype=np.float64)
    cols, _rows, _name_column = _names(ds)
    if cols is not None and training.feature_names is not None and cols != training.feature_names:
        missing = [c for c in training.feature_names if c not in cols]
        if missing or len(cols) != n:
            extra = [c for c in cols if c not in set(training.feature_names)]
            raise DataError(f"{where}: its columns must be the {n:,} items of '{training.name}' (the distances of each "
                            f"new point to them); {len(missing):,} item(s) have no column (e.g. {quote(missing[0]) if missing else '-'}) "
                            f"and {len(extra):,} column(s) are not items (e.g. {quote(extra[0]) if extra else '-'}).")
        X = X[:, [cols.index(c) for c in training.feature_names]]
    elif X.shape[1] != n:
        raise DataError(f"{where} has {X.shape[1]:,} columns of numbers, but '{training.name}' is a distance matrix "
                        f"of {n:,} items: give each new point's distances to those {n:,} items (an m × {n:,} file, "
                        "one row per new point).")
    bad = ~np.isfinite(X) | (X < 0)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise DataError(f"{where} has {int(bad.sum()):,} missing, non-finite or negative distance(s) (the first at row "
                        f"{i}, column {j}: {X[i, j]}): distances must be finite numbers, 0 or more.")
    report = [f"Read the distances of {X.shape[0]:,} new point(s) to the {n:,} items of '{training.name}' from {where}."]
    return Dataset(ds.name, X, ds.labels, training.feature_names, ds.source, ds.label_name, report,
                   row_ids=ds.row_ids, load_options=dict(ds.load_options))
