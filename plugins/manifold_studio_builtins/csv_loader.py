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

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from manifold_studio.algorithms.params import Choice, Param
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl

#: tokens read as a missing value (compared case-insensitively, after stripping blanks)
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "?", "#n/a"})

DELIMITERS = {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|", "whitespace": None}
_ALIASES = {",": "comma", "\t": "tab", "\\t": "tab", ";": "semicolon", "|": "pipe",
            " ": "whitespace", "space": "whitespace"}
_SNIFF_LINES = 60
_PREVIEW_BYTES = 256 * 1024
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
_MAGIC = [
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"PK\x03\x04", "a zip archive (an .npz, .xlsx or .zip file)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"\x89HDF", "an HDF5 file"),
    (b"\xd0\xcf\x11\xe0", "an old Microsoft Office document (.xls)"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\x7fELF", "an executable"),
]


def _not_text(path: Path, head: bytes) -> DataError:
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return DataError(f"{path.name} is not a text (CSV/TSV) file: it looks like {what}. "
                             "Check the file and its extension.")
    return DataError(f"{path.name} is not a text (CSV/TSV) file: it holds binary data. "
                     "Check the file and its extension.")


def _decode(path: Path, raw: bytes, notes: list[str], truncated: bool = False) -> str:
    """Decode bytes as UTF-8 (with or without BOM), UTF-16 with BOM, or Latin-1 text."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            if not truncated:
                raise _not_text(path, raw[:16]) from None
            return raw[:len(raw) - 1 - len(raw) % 2].decode("utf-16", errors="ignore")
    head = raw[:8192]
    if b"\x00" in head:
        raise _not_text(path, head)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if truncated and exc.start >= len(raw) - 4:  # a character cut by the preview limit
            return raw[:exc.start].decode("utf-8-sig")
    control = sum(1 for b in head if b < 32 and b not in (9, 10, 13)) + head.count(b"\x7f")
    if control > max(2, len(head) // 100):
        raise _not_text(path, head)
    notes.append(f"{path.name} is not UTF-8 text: read as Latin-1.")
    return raw.decode("latin-1")


def _read_text(path: Path, notes: list[str], limit: int | None = None) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read() if limit is None else fh.read(limit)
            truncated = limit is not None and len(raw) == limit
    except IsADirectoryError:
        raise DataError(f"{path.name} is a folder, not a CSV/TSV file.") from None
    except OSError as exc:
        raise DataError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if not raw.strip():
        raise DataError(f"{path.name} is empty: it holds no data rows.")
    text = _decode(path, raw, notes, truncated)
    if truncated and "\n" in text:  # drop a line cut by the limit
        text = text[:text.rfind("\n") + 1]
    return text


# --------------------------------------------------------------------------------------
# delimiter and header detection
# --------------------------------------------------------------------------------------
def _split(lines: list[str], delimiter: str | None) -> list[list[str]]:
    if delimiter is None:
        return [ln.split() for ln in lines]
    try:
        return list(csv.reader(lines, delimiter=delimiter, skipinitialspace=True))
    except csv.Error:
        return []


def _sniff_delimiter(lines: list[str], path: Path) -> str:
    """The candidate that splits the first lines into the most, most consistent fields."""
    candidates = ["\t", ",", ";", "|"] if path.suffix.lower() == ".tsv" else [",", "\t", ";", "|"]
    best, best_score = "", (0, 0.0, 0)
    for cand in candidates + [None]:
        if cand is not None and not any(cand in ln for ln in lines):
            continue
        counts = [len(r) for r in _split(lines, cand) if r]
        if not counts:
            continue
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        consistency = counts.count(mode) / len(counts)
        score = (1 if consistency >= 0.99 else 0, consistency, mode)
        if score > best_score:
            best, best_score = cand, score
    if best == "":
        return "comma"  # a single column
    return {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", None: "whitespace"}[best]


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _is_missing(token: str) -> bool:
    return token.strip().lower() in MISSING_TOKENS


#: a number written with a decimal comma, optionally with '.' between groups of thousands
_DECIMAL_COMMA = re.compile(r"^[+-]?(\d{1,3}(\.\d{3})+|\d+)(,\d+)?([eE][+-]?\d+)?$")


def _read_decimal_commas(rows: list[list[str]], notes: list[str]) -> None:
    """Columns whose numbers use decimal commas (1,5 or 1.234,5 — with ';', tab, '|' or blanks
    between fields) are rewritten with decimal points, in place, and reported."""
    width = max(len(r) for r in rows)
    for j in range(width):
        col = [r[j].strip() for r in rows if j < len(r)]
        start = 0 if col and (_DECIMAL_COMMA.match(col[0]) or _is_missing(col[0])) else 1  # a header
        present = [t for t in col[start:] if not _is_missing(t)]
        if not present or not any("," in t for t in present) or not all(_DECIMAL_COMMA.match(t) for t in present):
            continue
        example = next(t for t in present if "," in t)
        for r in rows[start:]:
            if j < len(r) and not _is_missing(r[j]):
                r[j] = r[j].strip().replace(".", "").replace(",", ".")
        name = f"'{col[0]}'" if start else f"column_{j}"
        notes.append(f"column {name} uses decimal commas: {example!r} read as {example.replace('.', '').replace(',', '.')}.")


def _detect_header(rows: list[list[str]]) -> bool:
    first = rows[0]
    if all(_is_number(t) or _is_missing(t) for t in first):
        return False
    body = rows[1:1 + _SNIFF_LINES]
    for j, token in enumerate(first):
        if _is_number(token) or _is_missing(token):
            continue
        column = [r[j] for r in body if j < len(r) and not _is_missing(r[j])]
        if column and all(_is_number(t) for t in column):
            return True  # text above a numeric column
    # only text columns below: a header when the first row is distinct non-numeric names
    names = [t.strip() for t in first]
    if not body:
        return True
    return all(names) and len(set(names)) == len(names) and not any(
        r[:len(first)] == first for r in body)


def _unique_names(names: list[str]) -> list[str]:
    out, seen = [], {}
    for i, name in enumerate(names):
        name = name.strip() or f"column_{i}"
        if name in seen:
            seen[name] += 1
            name = f"{name}.{seen[name]}"
        seen.setdefault(name, 0)
        out.append(name)
    return out


def _quote(name: str) -> str:
    return f"'{name}'"


def _resolve_column(ref, names: list[str], path: Path) -> int:
    n = len(names)
    if isinstance(ref, str):
        if ref in names:
            return names.index(ref)
        lower = [nm.lower() for nm in names]
        if ref.lower() in lower:
            return lower.index(ref.lower())
        try:
            ref = int(ref)
        except ValueError:
            raise DataError(f"{path.name} has no column named {_quote(ref)}: the columns are "
                            f"{', '.join(_quote(c) for c in names)}.") from None
    if -n <= ref < n:
        return ref % n
    raise DataError(f"Label column index {ref} is out of range: {path.name} has {n} column(s), "
                    f"indices 0 to {n - 1}.")


# --------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------
@dataclass
class _Table:
    names: list[str]
    rows: list[list[str]]
    line_numbers: list[int]
    delimiter: str
    has_header: bool
    header_line: int | None
    notes: list[str] = field(default_factory=list)


def _parse(path: Path, text: str, delimiter: str, header: str, notes: list[str],
           max_rows: int | None = None, strict: bool = True) -> _Table:
    head = text[:65536].splitlines(keepends=True)
    if len(text) > 65536 and len(head) > 1:
        head = head[:-1]  # a line cut by the slice
    nonblank = [ln for ln in head[:_SNIFF_LINES * 4] if ln.strip()][:_SNIFF_LINES]
    if not nonblank:
        raise DataError(f"{path.name} is empty: it holds no data rows.")
    if delimiter == "auto":
        delimiter = _sniff_delimiter(nonblank, path)
    char = DELIMITERS[delimiter]

    rows: list[list[str]] = []
    line_numbers: list[int] = []
    if char is None:
        for i, ln in enumerate(text.splitlines(), 1):
            fields = ln.split()
            if fields:
                rows.append(fields)
                line_numbers.append(i)
                if max_rows is not None and len(rows) > max_rows:
                    break
    else:
        reader = csv.reader(io.StringIO(text), delimiter=char, skipinitialspace=True)
        start = 1
        try:
            for fields in reader:  # fields keep trailing blanks: stripped where it matters
                if fields and (len(fields) > 1 or fields[0].strip()):
                    rows.append(fields)
                    line_numbers.append(start)
                    if max_rows is not None and len(rows) > max_rows:
                        break
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(f"{path.name}, line {reader.line_num}: cannot be read as CSV ({exc}).") from None
    if not rows:
        raise DataError(f"{path.name} is empty: it holds no data rows.")

    if char != ",":
        _read_decimal_commas(rows, notes)
    has_header = _detect_header(rows) if header == "auto" else header == "yes"
    if has_header:
        names = _unique_names(rows[0])
        header_line = line_numbers[0]
        rows, line_numbers = rows[1:], line_numbers[1:]
    else:
        names = [f"column_{j}" for j in range(len(rows[0]))]
        header_line = None
    expected = len(names)
    for k, fields in enumerate(rows):
        if len(fields) == expected:
            continue
        if len(fields) > expected and not any(f.strip() for f in fields[expected:]):
            rows[k] = fields[:expected]  # trailing empty fields ("1,2,3,")
            continue
        if strict:
            what = "the header" if has_header else "the first row"
            raise DataError(f"{path.name}, line {line_numbers[k]}: expected {expected} fields "
                            f"(as in {what}) but found {len(fields)}; the file is ragged.")
        rows[k] = (fields + [""] * expected)[:expected]
    if max_rows is not None:
        rows, line_numbers = rows[:max_rows], line_numbers[:max_rows]
    return _Table(names, rows, line_numbers, delimiter, has_header, header_line, notes)


def _to_float(tokens: list[str]) -> tuple[np.ndarray | None, int | None]:
    """Convert non-missing tokens; (values, None) or (None, index of the first non-number)."""
    try:
        return np.array(tokens, dtype=np.float64), None
    except ValueError:
        for i, t in enumerate(tokens):
            if not _is_number(t):
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
    text = _read_text(path, notes)
    table = _parse(path, text, delimiter, header, notes)
    names, rows, lines = table.names, table.rows, table.line_numbers
    if not rows:
        raise DataError(f"{path.name} holds a header but no data rows.")
    n, m = len(rows), len(names)
    columns = list(zip(*rows))

    label_idx = None if label_column is None else _resolve_column(label_column, names, path)
    missing_mask = np.zeros((n, m), dtype=bool)
    values: dict[int, np.ndarray] = {}
    left_out: list[str] = []
    for j in range(m):
        col = columns[j]
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
        if not present:
            left_out.append(f"column {_quote(names[j])} is empty: left out.")
            continue
        arr, bad = _to_float(present)
        if arr is None:
            rows_present = np.flatnonzero(~miss)
            line = lines[rows_present[bad]]
            n_num = sum(1 for t in present if _is_number(t))
            left_out.append(f"column {_quote(names[j])} is not numeric (e.g. {present[bad]!r} on line "
                            f"{line}; {n_num} of {len(present)} values are numbers): left out.")
            continue
        full = np.full(n, np.nan)
        full[~miss] = arr
        miss |= ~np.isfinite(full)
        missing_mask[:, j] = miss
        values[j] = full
    notes.extend(left_out)
    feature_idx = sorted(values)
    if not feature_idx:
        kinds = ", ".join(_quote(nm) + (" (label)" if j == label_idx else " (text)")
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
            details.append(f"line {lines[r]} ({', '.join(_quote(c) for c in cols)})")
        more = f" and {len(bad_rows) - _REPORT_LIMIT} more" if len(bad_rows) > _REPORT_LIMIT else ""
        where = "; ".join(details) + more
        if missing == "error":
            raise DataError(f"{path.name} has missing or non-finite values in {len(bad_rows)} row(s): "
                            f"{where}. Fill them in, or drop these rows (missing=drop).")
        if len(bad_rows) == n:
            raise DataError(f"{path.name}: every row has a missing value ({where}); nothing is left.")
        notes.append(f"{len(bad_rows)} row(s) with missing or non-finite values dropped: {where}.")
    keep = np.ones(n, dtype=bool)
    keep[bad_rows] = False

    X = np.column_stack([values[j][keep] for j in feature_idx])
    labels = None
    label_name = None
    if label_idx is not None:
        labels = _labels_array([t for t, k in zip(columns[label_idx], keep) if k])
        label_name = names[label_idx]
    header_text = "header row" if table.has_header else "no header row"
    summary = (f"Read {int(keep.sum()):,} rows × {len(feature_idx)} numeric columns from {path.name} "
               f"(delimiter: {table.delimiter}, {header_text}"
               f"{', labels: ' + _quote(label_name) if label_name else ''}).")
    return Dataset(name=path.stem, X=X, labels=labels,
                   feature_names=[names[j] for j in feature_idx], source=str(path),
                   label_name=label_name, report=[summary] + notes)


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
    text = _read_text(path, notes, limit=_PREVIEW_BYTES)
    table = _parse(path, text, delimiter, header, notes, max_rows=max(int(max_rows), 0) + _SNIFF_LINES,
                   strict=False)
    table.rows = [[t.strip() for t in r] for r in table.rows]
    numeric = []
    for j in range(len(table.names)):
        col = [r[j] for r in table.rows if not _is_missing(r[j])]
        numeric.append(bool(col) and all(_is_number(t) for t in col))
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

    def preview(self, path, max_rows: int = 20, **options) -> CsvPreview:
        return preview(path, max_rows, **options)


@hookimpl
def register_loaders():
    return [CsvLoader()]
