"""CSV / TSV loader plugin: delimiter sniffing, header detection, a label column, and reports.

Reading rules (everything that is not used is *reported* in ``Dataset.report``):

* The delimiter is sniffed from the first lines (comma, tab, semicolon, pipe, or runs of
  whitespace) unless given; the first row is taken as a header when it holds text above
  numeric columns (or when asked to).
* The user picks the label column, by name or by 0-based index (negative counts from the
  end), or none. Label values that are all integers become an integer array, all numbers a
  float array, otherwise strings.
* Every other column is a feature if all its present values are numbers; a column holding
  text is reported by name (with the first offending value and its line) and left out.
* Missing values (an empty field, ``NA``, ``N/A``, ``NaN``, ``null``, ``None``, ``?``) and
  infinite values are never silently used: by default the rows holding them are dropped and
  listed by line and column in the report; ``missing="error"`` refuses the file instead.
* A ragged row, an empty file, a file that is not text and a file without any numeric
  column raise :class:`~manifold_studio.errors.DataError` naming the file (and the line).

:func:`preview` reads only the first rows, cheaply, for an import dialog.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from manifold_studio.algorithms.params import Choice, Param, validate_params
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl
from manifold_studio_builtins.csv_text import (  # noqa: F401  (MISSING_TOKENS: kept importable from here)
    MISSING_TOKENS, PREVIEW_BYTES, SNIFF_LINES, is_missing, is_number, parse_table, quote, read_text,
    resolve_column, text_encoding,
)


_ALIASES = {",": "comma", "\t": "tab", "\\t": "tab", ";": "semicolon", "|": "pipe",
            " ": "whitespace", "space": "whitespace"}
_REPORT_LIMIT = 10


def _fail(name, value, allowed):
    raise InvalidParameterError(f"Invalid value {value!r} for parameter '{name}': allowed {allowed}.")


class ColumnRef(Param):
    """A column picked by name or by 0-based index (text that is an integer is an index
    unless a column carries that name); ``none`` for no column."""

    def _check(self, value):
        if isinstance(value, bool):
            _fail(self.name, value, self.describe())
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
        _fail(self.name, value, self.describe())

    def _parse(self, text):
        return text

    def _describe(self):
        return "a column name or a 0-based column index"


class DelimiterChoice(Choice):
    """A delimiter by name; the characters themselves (``,`` ``;`` ``|`` tab) are accepted too."""

    def _check(self, value):
        if isinstance(value, str):
            value = _ALIASES.get(value, value.lower())
        return super()._check(value)

    def parse(self, text):
        if isinstance(text, str) and text in ("\t", " "):  # Param.parse would strip them away
            return self.validate(text)
        return super().parse(text)

    def _parse(self, text):
        return text


OPTIONS = (
    ColumnRef("label_column", None,
              "The column holding the labels (class names or values to color by), by name or "
              "0-based index; none when the file has no label column.", allow_none=True,
              label="Label column"),
    DelimiterChoice("delimiter", "auto",
                    "Field separator; 'auto' detects comma, tab, semicolon, pipe or whitespace.",
                    choices=("auto", "comma", "tab", "semicolon", "pipe", "whitespace")),
    Choice("header", "auto",
           "Whether the first row holds column names; 'auto' detects it (text above numbers).",
           choices=("auto", "yes", "no")),
    Choice("missing", "drop",
           "What to do with rows holding missing values (empty, NA, NaN, ?): 'drop' them and list "
           "them in the report, 'keep' them as NaN (for probabilistic PCA with method=em, which fits "
           "with missing values and imputes them; other methods refuse NaN), or refuse the file "
           "with an 'error'.",
           choices=("drop", "keep", "error"), label="Missing values"),
)


# --------------------------------------------------------------------------------------
# reading text
# --------------------------------------------------------------------------------------
def _to_float(tokens: list[str]) -> tuple[np.ndarray | None, int | None]:
    """Convert non-missing tokens; (values, None) or (None, index of the first non-number)."""
    try:
        return np.array(tokens, dtype=np.float64), None
    except ValueError:
        for i, t in enumerate(tokens):
            if not is_number(t):
                return None, i
        return None, 0  # pragma: no cover - numpy and float() disagree


def _labels_array(values: list[str]) -> np.ndarray:
    try:
        arr = np.array(values, dtype=np.float64)
    except ValueError:
        return np.array(values, dtype=str)
    if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)) and np.all(np.abs(arr) < 2 ** 53):
        return arr.astype(np.int64)
    return arr


def _lines_text(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:_REPORT_LIMIT])
    more = f" and {len(lines) - _REPORT_LIMIT} more" if len(lines) > _REPORT_LIMIT else ""
    return shown + more


def read_csv(path, label_column=None, delimiter="auto", header="auto", missing="drop") -> Dataset:
    """Read a CSV/TSV file into a :class:`Dataset` (see the module docstring for the rules)."""
    path = Path(path)
    notes: list[str] = []
    text = read_text(path, notes)
    return _dataset_from_text(path, text, notes, label_column, delimiter, header, missing)


def _dataset_from_text(path: Path, text: str, notes: list[str], label_column, delimiter, header, missing,
                       line_offset: int = 0, features: list[str] | None = None) -> Dataset:
    """The rules of :func:`read_csv` applied to ``text``. For a block of a larger file,
    ``line_offset`` numbers its lines as in the file and ``features`` are the feature columns
    fixed by the first block: a block then keeps exactly those, refuses text in them by line,
    may be left empty by dropped rows, and adds no summary line."""
    table = parse_table(path, text, delimiter, header, notes, line_offset=line_offset)
    names, rows, lines = table.names, table.rows, table.line_numbers
    if not rows and features is None:
        raise DataError(f"{path.name} holds a header but no data rows.")
    n, m = len(rows), len(names)
    columns = list(zip(*rows)) if rows else [()] * m

    label_idx = None if label_column is None else resolve_column(label_column, names, path)
    missing_mask = np.zeros((n, m), dtype=bool)
    values: dict[int, np.ndarray] = {}
    left_out: list[str] = []
    for j in range(m):
        col = columns[j]
        if features is not None and j != label_idx and names[j] not in features:
            continue
        if j != label_idx:
            try:  # fast path: every value is a number ("nan" and "inf" included)
                full = np.array(col, dtype=np.float64)
            except ValueError:
                pass
            else:
                missing_mask[:, j] = ~np.isfinite(full)
                values[j] = full
                continue
        col = [t.strip() for t in col]
        miss = np.fromiter((t.lower() in MISSING_TOKENS for t in col), dtype=bool, count=n)
        if j == label_idx:
            columns[j] = col
            missing_mask[:, j] = miss
            continue
        present = [t for t, mi in zip(col, miss) if not mi]
        if not present and features is None:
            left_out.append(f"column {quote(names[j])} is empty: left out.")
            continue
        arr, bad = _to_float(present)
        if arr is None:
            rows_present = np.flatnonzero(~miss)
            line = lines[rows_present[bad]]
            if features is not None:
                raise DataError(f"{path.name}, line {line}: column {quote(names[j])} holds {present[bad]!r}, "
                                "but its values in the first rows are numbers. Fix the value, or read the "
                                "file whole to leave the column out.")
            n_num = sum(1 for t in present if is_number(t))
            left_out.append(f"column {quote(names[j])} is not numeric (e.g. {present[bad]!r} on line "
                            f"{line}; {n_num} of {len(present)} values are numbers): left out.")
            continue
        full = np.full(n, np.nan)
        full[~miss] = arr
        miss |= ~np.isfinite(full)
        missing_mask[:, j] = miss
        values[j] = full
    notes.extend(left_out)
    feature_idx = sorted(values)
    if features is not None and [names[j] for j in feature_idx] != list(features):
        raise DataError(f"{path.name}, lines {lines[0] if lines else '?'}–{lines[-1] if lines else '?'}: the "
                        f"columns {', '.join(quote(c) for c in features)} of the first rows are not all here.")
    if not feature_idx:
        kinds = ", ".join(quote(nm) + (" (label)" if j == label_idx else " (text)")
                          for j, nm in enumerate(names))
        raise DataError(f"{path.name} has no numeric column to use as features (columns: {kinds}).")

    used = feature_idx + ([label_idx] if label_idx is not None else [])
    if missing == "keep":  # cells stay NaN; only a missing label drops its row
        cells = missing_mask[:, feature_idx]
        if label_idx is not None:
            cells = cells[~missing_mask[:, label_idx]]
        if cells.any():
            for j in feature_idx:
                values[j][missing_mask[:, j]] = np.nan
            notes.append(f"{int(cells.sum()):,} missing or non-finite value(s) in {int(cells.any(axis=1).sum()):,} "
                         "row(s) kept as NaN: probabilistic PCA (method=em) fits with them and imputes "
                         "them; other methods refuse NaN.")
        used = [label_idx] if label_idx is not None else []
    bad_rows = np.flatnonzero(missing_mask[:, used].any(axis=1)) if used else np.zeros(0, dtype=np.intp)
    if len(bad_rows):
        details = []
        for r in bad_rows[:_REPORT_LIMIT]:
            cols = [names[j] for j in used if missing_mask[r, j]]
            details.append(f"line {lines[r]} ({', '.join(quote(c) for c in cols)})")
        more = f" and {len(bad_rows) - _REPORT_LIMIT} more" if len(bad_rows) > _REPORT_LIMIT else ""
        where = "; ".join(details) + more
        if missing == "error":
            raise DataError(f"{path.name} has missing or non-finite values in {len(bad_rows)} row(s): "
                            f"{where}. Fill them in, or drop these rows (missing=drop).")
        if len(bad_rows) == n and features is None:
            raise DataError(f"{path.name}: every row has a missing value ({where}); nothing is left.")
        notes.append(f"{len(bad_rows)} row(s) with missing or non-finite values dropped: {where}.")
    keep = np.ones(n, dtype=bool)
    keep[bad_rows] = False

    X = np.column_stack([values[j][keep] for j in feature_idx]) if n else np.zeros((0, len(feature_idx)))
    labels = None
    label_name = None
    if label_idx is not None:
        labels = _labels_array([t for t, k in zip(columns[label_idx], keep) if k])
        label_name = names[label_idx]
    header_text = "header row" if table.has_header else "no header row"
    summary = (f"Read {int(keep.sum()):,} rows × {len(feature_idx)} numeric columns from {path.name} "
               f"(delimiter: {table.delimiter}, {header_text}"
               f"{', labels: ' + quote(label_name) if label_name else ''}).")
    return Dataset(name=path.stem, X=X, labels=labels,
                   feature_names=[names[j] for j in feature_idx], source=str(path),
                   label_name=label_name, report=([summary] if features is None else []) + notes)


def iter_csv_chunks(path, chunk_rows: int = 100_000, label_column=None, delimiter="auto", header="auto",
                    missing="drop"):
    """A CSV/TSV file as consecutive Dataset chunks, read line by line (memory bounded by
    ``chunk_rows``), with the rules of :func:`read_csv`: delimiter, header and feature columns
    are fixed by the first rows, and every later chunk must agree (text in a numeric column is
    refused with its line). Records spanning several lines (quoted line breaks) are not supported."""
    path = Path(path)
    notes: list[str] = []
    head = read_text(path, notes, limit=PREVIEW_BYTES)
    first = parse_table(path, head, delimiter, header, [], max_rows=SNIFF_LINES, strict=False)
    delimiter, header = first.delimiter, "yes" if first.has_header else "no"
    step = max(1, int(chunk_rows))
    features = None
    try:
        with open(path, encoding=text_encoding(path), newline="") as fh:
            header_line, line_no = "", 0
            if first.has_header:
                for line in fh:
                    line_no += 1
                    if line.strip():
                        header_line = line if line.endswith(("\n", "\r")) else line + "\n"
                        break
            while True:
                block = list(itertools.islice(fh, step))
                if not block:
                    break
                offset = line_no - (1 if first.has_header else 0)
                line_no += len(block)
                if not any(ln.strip() for ln in block):
                    continue
                first_chunk = features is None
                ds = _dataset_from_text(path, header_line + "".join(block), notes if first_chunk else [],
                                        label_column, delimiter, header, missing, offset, features)
                features = ds.feature_names
                if first_chunk:  # the summary speaks of the whole file, not of this chunk
                    ds.report[0] = re.sub(r"^Read [\d,]+ rows × ", f"Reading in chunks of {step:,} rows: ",
                                          ds.report[0])
                else:  # said once, in the first chunk
                    ds.report = [r for r in ds.report if "uses decimal commas" not in r]
                ds.source = str(path)
                yield ds
    except UnicodeDecodeError as exc:
        raise DataError(f"{path.name} is not {exc.encoding} text past its first 256 KiB ({exc.reason}): "
                        "save it as UTF-8.") from None
    if features is None:
        raise DataError(f"{path.name} holds a header but no data rows.")


@dataclass
class CsvPreview:
    """The first rows of a CSV/TSV file as parsed, for an import dialog."""

    path: str
    columns: list[str]
    rows: list[list[str]]
    delimiter: str
    has_header: bool
    #: per column: whether its values in the preview rows are all numbers (or missing)
    numeric: list[bool]
    notes: list[str] = field(default_factory=list)

    @property
    def n_columns(self) -> int:
        return len(self.columns)


def preview(path, max_rows: int = 20, delimiter: str = "auto", header: str = "auto") -> CsvPreview:
    """Parse the header and the first ``max_rows`` rows of a CSV/TSV file (cheap: reads at most
    256 KiB). Rows of the wrong length are padded or cut instead of refused."""
    path = Path(path)
    delimiter = OPTIONS[1].validate(delimiter)
    header = OPTIONS[2].validate(header)
    if not path.exists():
        raise DataError(f"File not found: {path}")
    notes: list[str] = []
    text = read_text(path, notes, limit=PREVIEW_BYTES)
    table = parse_table(path, text, delimiter, header, notes, max_rows=max(int(max_rows), 0) + SNIFF_LINES,
                   strict=False)
    table.rows = [[t.strip() for t in r] for r in table.rows]
    numeric = []
    for j in range(len(table.names)):
        col = [r[j] for r in table.rows if not is_missing(r[j])]
        numeric.append(bool(col) and all(is_number(t) for t in col))
    return CsvPreview(str(path), table.names, table.rows[:max_rows], table.delimiter,
                      table.has_header, numeric, notes)


class CsvLoader(Loader):
    """Reads CSV, TSV and other delimited text files."""

    id = "csv"
    name = "CSV / TSV"
    extensions = (".csv", ".tsv", ".txt", ".tab", ".dat")
    options = OPTIONS

    def _load(self, path, **options) -> Dataset:
        return read_csv(path, **options)

    def iter_chunks(self, path, chunk_rows: int = 100_000, **options):
        opts = {p.name: p.default for p in self.options}
        opts.update(validate_params(self.options, options))
        if not Path(path).exists():
            raise DataError(f"File not found: {path}")
        return iter_csv_chunks(path, chunk_rows, **opts)

    def preview(self, path, max_rows: int = 20, **options) -> CsvPreview:
        return preview(path, max_rows, **options)


@hookimpl
def register_loaders():
    return [CsvLoader()]
