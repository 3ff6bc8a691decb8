"""Sniffing delimited text: decoding (UTF-8, UTF-16, Latin-1), refusing binary files, finding the
delimiter, the header row and decimal commas from the first lines, and splitting those lines into
rows (for the import dialog's preview).

The values of the whole file are read by pandas (:mod:`manifold_studio.tables.readers`) with the
options found here; :func:`parse_table` only ever sees the first 256 KiB.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import check_regular_file

#: tokens read as a missing value (compared case-insensitively, after stripping blanks)

MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "-nan", "null", "none", "?", "#n/a"})
DELIMITERS = {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|", "whitespace": None}
SNIFF_LINES = 60
PREVIEW_BYTES = 256 * 1024


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


def text_encoding(path: Path) -> str:
    """The encoding :func:`read_text` would use for this file, judged from its first 256 KiB
    (for reading it line by line)."""
    with open(path, "rb") as fh:
        raw = fh.read(PREVIEW_BYTES)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    try:
        raw.decode("utf-8-sig")
        return "utf-8-sig"
    except UnicodeDecodeError as exc:
        return "utf-8-sig" if len(raw) == PREVIEW_BYTES and exc.start >= len(raw) - 4 else "latin-1"


def read_text(path: Path, notes: list[str], limit: int | None = None) -> str:
    check_regular_file(path, "CSV/TSV file")  # a FIFO or a device would block or never end
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


def is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def is_missing(token: str) -> bool:
    return token.strip().lower() in MISSING_TOKENS


#: a number written with a decimal comma, optionally with '.' between groups of thousands
DECIMAL_COMMA = re.compile(r"^[+-]?(\d{1,3}(\.\d{3})+|\d+)(,\d+)?([eE][+-]?\d+)?$")


def _read_decimal_commas(rows: list[list[str]], notes: list[str]) -> list[int]:
    """Columns whose numbers use decimal commas (1,5 or 1.234,5 — with ';', tab, '|' or blanks
    between fields) are rewritten with decimal points, in place, and reported; returns their
    indices."""
    found = []
    width = max(len(r) for r in rows)
    for j in range(width):
        col = [r[j].strip() for r in rows if j < len(r)]
        start = 0 if col and (DECIMAL_COMMA.match(col[0]) or is_missing(col[0])) else 1  # a header
        present = [t for t in col[start:] if not is_missing(t)]
        if not present or not any("," in t for t in present) or not all(DECIMAL_COMMA.match(t) for t in present):
            continue
        example = next(t for t in present if "," in t)
        for r in rows[start:]:
            if j < len(r) and not is_missing(r[j]):
                r[j] = r[j].strip().replace(".", "").replace(",", ".")
        found.append(j)
        name = f"'{col[0]}'" if start else f"column_{j}"
        notes.append(f"column {name} uses decimal commas: {example!r} read as {example.replace('.', '').replace(',', '.')}.")
    return found


def _detect_header(rows: list[list[str]]) -> bool:
    first = rows[0]
    if all(is_number(t) or is_missing(t) for t in first):
        return False
    body = rows[1:1 + SNIFF_LINES]
    for j, token in enumerate(first):
        if is_number(token) or is_missing(token):
            continue
        column = [r[j] for r in body if j < len(r) and not is_missing(r[j])]
        if column and all(is_number(t) for t in column):
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


def quote(name: str) -> str:
    return f"'{name}'"


def resolve_column(ref, names: list[str], path: Path, what: str = "label column") -> int:
    """The position of column ``ref`` (a name, any case, or a 0-based index) among ``names``;
    ``what`` names the option in the message (``label column``, ``id column``)."""
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
            raise DataError(f"{path.name} has no column named {quote(ref)}: the columns are "
                            f"{', '.join(quote(c) for c in names)}.") from None
    if -n <= ref < n:
        return ref % n
    raise DataError(f"{what[:1].upper()}{what[1:]} index {ref} is out of range: {path.name} has {n} "
                    f"column(s), indices 0 to {n - 1}.")


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
    #: indices of the columns written with decimal commas
    decimal_columns: list[int] = field(default_factory=list)


def _csv_problem(exc: Exception) -> str:
    """What a csv.Error means, in the words of this application (never the module's own text)."""
    text = str(exc).lower()
    if "new-line" in text or "newline" in text:
        return "a line break inside an unquoted field"
    if "nul" in text:
        return "it holds NUL bytes: is it a binary file?"
    if "field larger than" in text:
        return "a field is longer than 128 KiB: is a quote left open?"
    if "quote" in text or "delimiter" in text or "escape" in text:
        return "a quoted field is malformed"
    return "malformed CSV"


def parse_table(path: Path, text: str, delimiter: str, header: str, notes: list[str],
                max_rows: int | None = None, strict: bool = True, line_offset: int = 0) -> _Table:
    """Split ``text`` into a header and rows of fields. ``line_offset`` is added to every line
    number (for a block of a larger file)."""
    head = text[:65536].splitlines(keepends=True)
    if len(text) > 65536 and len(head) > 1:
        head = head[:-1]  # a line cut by the slice
    nonblank = [ln for ln in head[:SNIFF_LINES * 4] if ln.strip()][:SNIFF_LINES]
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
                line_numbers.append(i + line_offset)
                if max_rows is not None and len(rows) > max_rows:
                    break
    else:
        # newline=None: universal line ends (a Mac's CR-only file reads like any other)
        reader = csv.reader(io.StringIO(text, newline=None), delimiter=char, skipinitialspace=True)
        start = 1
        try:
            for fields in reader:  # fields keep trailing blanks: stripped where it matters
                if fields and (len(fields) > 1 or fields[0].strip()):
                    rows.append(fields)
                    line_numbers.append(start + line_offset)
                    if max_rows is not None and len(rows) > max_rows:
                        break
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(f"{path.name}, line {reader.line_num + line_offset}: cannot be read as CSV "
                            f"({_csv_problem(exc)}).") from None
    if not rows:
        raise DataError(f"{path.name} is empty: it holds no data rows.")

    decimal_columns = _read_decimal_commas(rows, notes) if char != "," else []
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
    return _Table(names, rows, line_numbers, delimiter, has_header, header_line, notes, decimal_columns)
