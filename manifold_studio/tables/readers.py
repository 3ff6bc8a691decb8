"""Reading tables with pandas: CSV/TSV, Excel (.xlsx), Parquet and Arrow IPC / Feather, into a typed :class:`Table`.

::

    from manifold_studio.tables import read_table
    result = read_table("penguins.csv", label_column="species")
    result.table.describe()          # one line per column: type, role, distinct, missing
    result.table.report              # what was skipped, missing or coerced, and why

CSV/TSV: the delimiter, the header row and decimal commas are found from the first 256 KiB
(:mod:`~manifold_studio.tables.sniff`), unless given; the encoding is UTF-8 (with or without BOM),
UTF-16 with BOM, or Latin-1 (reported), unless given; the missing-value spellings are empty,
``NA``, ``N/A``, ``NaN``, ``null``, ``None``, ``?``, ``#N/A`` (any case) plus ``na_values``. Then
pandas' C parser reads the whole file, and :mod:`~manifold_studio.tables.lines` gives every row its
line number (the row id) and refuses ragged rows by line (for a plain file of numbers, from counts
taken as pandas reads it, without a second pass).

Excel: one sheet; a workbook with several sheets is refused with their names unless ``sheet``
names one. Parquet and Arrow IPC / Feather (file or stream format): the columns and their types as
stored.

Every failure is a :class:`~manifold_studio.errors.DataError` naming the file (and the line or the
column). The pandas, openpyxl and pyarrow imports are deferred to the first read.
"""
from __future__ import annotations

import atexit
import codecs
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError
from manifold_studio.tables.infer import table_from_block, table_from_frame
from manifold_studio.tables.lines import TallyReader, byte_scannable, record_lines
from manifold_studio.tables.model import ReadResult
from manifold_studio.tables.sheet_readers import (
    ARROW_EXTENSIONS, EXCEL_EXTENSIONS, NA_SPELLINGS, PARQUET_EXTENSIONS, _column_name, _na_values, excel_sheets,
    read_arrow_table, read_excel_table, read_parquet_table,
)
from manifold_studio.tables.sniff import (
    DECIMAL_COMMA,
    DELIMITERS,
    PREVIEW_BYTES,
    SNIFF_LINES,
    parse_table,
    read_text,
    text_encoding,
)

DECIMALS = ("auto", "point", "comma")

__all__ = ["read_table", "preview_table", "read_csv_table", "plan_csv", "iter_csv_tables", "CsvPlan", "read_excel_table", "read_parquet_table", "read_arrow_table", "excel_sheets",
           "NA_SPELLINGS", "EXCEL_EXTENSIONS", "PARQUET_EXTENSIONS", "ARROW_EXTENSIONS", "DECIMALS"]


def _check_encoding(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise DataError(f"Unknown encoding {encoding!r}: use e.g. utf-8, utf-16, latin-1 or cp1252.") from None


class EncodingChanged(Exception):
    """Raised by :meth:`CsvPlan.chunks` after switching to Latin-1: read the file again."""


#: rows per chunk of the all-numbers fast path (bounded temporary memory)
FAST_CHUNK_ROWS = 65_536


@dataclass
class CsvPlan:
    """How a delimited file is read: what sniffing found and the arguments for pandas."""

    path: Path
    delimiter: str
    has_header: bool
    encoding: str
    names: list[str]
    line_numbers: np.ndarray | None   # None until :attr:`lines` is first asked for
    decimal_names: list[str]
    kwargs: dict
    notes: list[str] = field(default_factory=list)
    row_estimate: int = 0             # rows expected from the file size and its first 256 KiB
    spaced: bool = True               # whether a field of the first 256 KiB opens with a space

    @property
    def lines(self) -> np.ndarray:
        """The line of every data record, after checking no record is ragged (scans the file once)."""
        if self.line_numbers is None:
            lines = record_lines(self.path, self.encoding, DELIMITERS[self.delimiter], self.has_header,
                                 self.path.name)
            if not len(lines):
                raise DataError(f"{self.path.name} holds a header but no data rows.")
            self.line_numbers = lines
        return self.line_numbers

    @property
    def detail(self) -> str:
        return f"delimiter: {self.delimiter}, {'header row' if self.has_header else 'no header row'}"

    def read(self, **extra):
        """``pandas.read_csv`` with the plan (``extra``: e.g. chunksize), failures as DataError."""
        import pandas as pd

        path = self.path
        try:
            try:
                return pd.read_csv(path, encoding=self.encoding, **self.kwargs, **extra)
            except UnicodeDecodeError:
                self.notes.append(f"{path.name} is not {self.encoding} text past its first 256 KiB: read as Latin-1.")
                self.encoding = "latin-1"
                return pd.read_csv(path, encoding=self.encoding, **self.kwargs, **extra)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, UnicodeError, OSError) as exc:
            text = str(exc).strip()
            raise DataError(f"{path.name} cannot be read as {self.delimiter}-separated text: "
                            f"{text.splitlines()[-1] if text else type(exc).__name__}.") from None

    def chunks(self, rows: int, source=None, **extra):
        """The file (or ``source``, an open binary file of it) as DataFrames of at most ``rows``
        rows (failures as DataError; ``extra`` overrides pandas arguments). When the file turns out
        not to be in the sniffed encoding, the plan switches to Latin-1 (noted) and
        :class:`EncodingChanged` is raised: read again."""
        import pandas as pd

        try:
            with pd.read_csv(source or self.path, chunksize=rows,
                             **{"encoding": self.encoding, **self.kwargs, **extra}) as reader:
                yield from reader
        except UnicodeDecodeError:
            self.notes.append(f"{self.path.name} is not {self.encoding} text past its first 256 KiB: read as Latin-1.")
            self.encoding = "latin-1"
            raise EncodingChanged() from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, UnicodeError, OSError) as exc:
            text = str(exc).strip()
            raise DataError(f"{self.path.name} cannot be read as {self.delimiter}-separated text: "
                            f"{text.splitlines()[-1] if text else type(exc).__name__}.") from None

    def fix_decimal_commas(self, frame) -> None:
        """Columns read as text because the first rows wrote them with decimal commas: the values
        that match (1,5 and 1.234,5) get decimal points; the rest stays text (and is reported by
        inference as stray text when the column is otherwise numeric)."""
        for nm in self.decimal_names:
            t = frame[nm].astype("object").where(frame[nm].notna(), None)
            t = t.map(lambda v: v.strip() if isinstance(v, str) else v)
            match = t.map(lambda v: isinstance(v, str) and DECIMAL_COMMA.match(v) is not None).astype(bool)
            t[match] = t[match].map(lambda v: v.replace(".", "").replace(",", "."))
            frame[nm] = t


def _with_line_feeds(path: Path) -> Path:
    """``path`` itself, or, for a file whose lines end in a bare carriage return (an old Mac's
    CSV), a copy with line feeds under the same name in a private temporary folder (removed at
    exit): the record scan and pandas then read it like any other file."""
    if not path.is_file():
        return path  # a FIFO or device is never opened here: the reader refuses it by name
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return path  # the reader says what is wrong with the file
    if b"\r" not in head or b"\n" in head:
        return path
    folder = Path(tempfile.mkdtemp(prefix="ms-cr-"))
    atexit.register(shutil.rmtree, folder, True)
    copy = folder / path.name
    with open(path, "rb") as src, open(copy, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk.replace(b"\r", b"\n"))
    return copy


def exact_floats() -> dict:
    """Numbers read to the last bit: pandas 3 parses correctly rounded by default; pandas 2's
    default ("high") can be an ulp off, so it is asked for the round-trip parser."""
    import pandas as pd

    return {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


def plan_csv(path, *, delimiter: str = "auto", header: str = "auto", decimal: str = "auto",
             encoding: str = "auto", na_values=(), head_rows: int | None = None, scan: bool = True) -> CsvPlan:
    """Sniff a delimited file (first 256 KiB), number its records and check they are not ragged.
    With ``head_rows``, only that many first rows are planned (a preview: no scan of the file);
    with ``scan=False`` the records are numbered when :attr:`CsvPlan.lines` is first asked for."""
    path = _with_line_feeds(Path(path))
    if decimal not in DECIMALS:
        raise DataError(f"Invalid decimal {decimal!r}: allowed are {', '.join(DECIMALS)}.")
    notes: list[str] = []
    head = read_text(path, notes, limit=PREVIEW_BYTES)
    if encoding != "auto":
        enc = _check_encoding(encoding)
        notes = [n for n in notes if "Latin-1" not in n]
        with open(path, "rb") as fh:
            head = fh.read(PREVIEW_BYTES).decode(enc, errors="replace")
    else:
        enc = text_encoding(path)
    sniff_notes: list[str] = []
    first = parse_table(path, head, delimiter, header, sniff_notes, strict=False,
                        max_rows=SNIFF_LINES if head_rows is None else max(SNIFF_LINES, int(head_rows)))
    decimal_columns = first.decimal_columns if decimal == "auto" else []
    if decimal == "auto":
        notes.extend(sniff_notes)
    char = DELIMITERS[first.delimiter]
    if head_rows is not None:
        lines = np.asarray(first.line_numbers[:max(int(head_rows), 0)], dtype=np.int64)
    else:
        lines = record_lines(path, enc, char, first.has_header, path.name) if scan else None
    if lines is not None and not len(lines):
        raise DataError(f"{path.name} holds a header but no data rows.")
    names = first.names
    kwargs = dict(sep=char if char is not None else r"\s+", header=0 if first.has_header else None,
                  names=names, index_col=False, usecols=list(range(len(names))), na_values=_na_values(na_values),
                  keep_default_na=False, skipinitialspace=True, engine="c", **exact_floats(),
                  dtype={names[j]: "str" for j in decimal_columns} or None,
                  decimal="," if decimal == "comma" else ".", thousands="." if decimal == "comma" else None,
                  nrows=None if head_rows is None else len(lines))
    per_line = len(head) / max(head.count("\n"), 1)
    estimate = int(path.stat().st_size / max(per_line, 1.0) * 1.02) + 16 if path.is_file() else 0
    spaced = char is None or head.startswith(" ") or f"{char} " in head or "\n " in head
    return CsvPlan(path, first.delimiter, first.has_header, enc, names, lines,
                   [names[j] for j in decimal_columns], kwargs, notes, estimate, spaced)


def read_csv_table(path, *, delimiter: str = "auto", header: str = "auto", decimal: str = "auto",
                   encoding: str = "auto", na_values=(), label_column=None, id_column=None,
                   roles: dict | None = None, types: dict | None = None) -> ReadResult:
    """Read a delimited text file (see the module docstring). ``delimiter`` is ``auto``, ``comma``,
    ``tab``, ``semicolon``, ``pipe`` or ``whitespace``; ``header`` ``auto``/``yes``/``no``;
    ``decimal`` ``auto``/``point``/``comma``; ``label_column`` and ``id_column`` a column name or
    0-based index; ``roles``/``types`` override inference ({column: role or type})."""
    path = Path(path)
    plan = plan_csv(path, delimiter=delimiter, header=header, decimal=decimal, encoding=encoding,
                    na_values=na_values, scan=False)
    label = _column_name(label_column, plan.names, path)
    id_name = _column_name(id_column, plan.names, path, "id column")
    choices = dict(label_column=label, roles=roles, types=types, id_column=id_name, report=plan.notes)
    extra = {"delimiter": plan.delimiter, "has_header": plan.has_header}
    read = _chunked_columns(plan)
    if read is not None:
        block, numeric, others, lines = read
        if others is not None:
            plan.fix_decimal_commas(others)
        table = table_from_block(block, numeric, lines, where=path.name, name=path.stem, source=str(path),
                                 others=others, order=plan.names, **choices)
        return ReadResult(table, plan.detail, {**extra, "encoding": plan.encoding})
    frame = plan.read()
    lines = plan.lines
    if len(frame) != len(lines):  # line ends pandas and the scan see differently (a lone \r)
        lines = record_lines(path, plan.encoding, DELIMITERS[plan.delimiter], plan.has_header, path.name,
                             careful=True)
        if len(frame) != len(lines):
            lines = np.arange(len(frame), dtype=np.int64) + (2 if plan.has_header else 1)
            plan.notes.append(f"{path.name}: the line numbers quoted are row positions (the line ends are unusual).")
    if not len(frame):
        raise DataError(f"{path.name} holds a header but no data rows.")
    plan.fix_decimal_commas(frame)
    table = table_from_frame(frame, lines, where=path.name, name=path.stem, source=str(path), **choices)
    return ReadResult(table, plan.detail, {**extra, "encoding": plan.encoding})


def _chunked_columns(plan: CsvPlan):
    """``(block, numeric names, DataFrame of the other columns, line numbers)`` read chunk by chunk:
    the columns that are numbers go straight into one C-ordered float64 array (infinite values as
    NaN; peak memory about the array and one chunk), the others (text, dates, booleans) are
    gathered as they are. A plain 8-bit or UTF-8 file is read through a :class:`TallyReader`: when
    no record lacks its last field and the counts show one record of the header's width per line,
    the line numbers follow without scanning the file again; otherwise the scan numbers the
    records (and refuses ragged ones). When no field of the first 256 KiB opens with a space,
    pandas' (slower) skipping of opening spaces is off, and the counts confirm it did not matter.
    None when a numeric column meets text in a later chunk (the
    whole-file path then reports the stray cells) or the rows do not match the lines."""
    import pandas as pd

    char = DELIMITERS[plan.delimiter]
    known = plan.line_numbers is not None or not byte_scannable(plan.encoding, char)
    capacity = len(plan.lines) if known else max(plan.row_estimate, 16)
    block = numeric = other = None
    parts: dict[str, list] = {}
    pos, short = 0, False
    last = plan.names[-1]
    source = None if known else TallyReader(plan.path, char)
    extra = {} if known or plan.spaced else {"skipinitialspace": False}
    if not known and plan.encoding == "utf-8-sig":
        extra["encoding"] = "utf-8"   # bytes straight to the C parser (which drops a BOM), not decoded twice
    try:
        for chunk in plan.chunks(FAST_CHUNK_ROWS, source, **extra):
            kinds = [dt.kind in "fiu" for dt in chunk.dtypes]
            if numeric is None:
                numeric = [nm for nm, k in zip(plan.names, kinds) if k]  # (a few dozen names: list is fine)
                other = [nm for nm, k in zip(plan.names, kinds) if not k]
                block = np.empty((capacity, len(numeric)), dtype=np.float64)
                parts = {nm: [] for nm in other}
            elif any(nm in numeric and not k for nm, k in zip(plan.names, kinds)):
                return None  # text met in a column that was numbers
            if pos + len(chunk) > len(block):
                if known:
                    return None
                block = _grown(block, pos + len(chunk))
            short = short or bool(chunk[last].isna().any())  # a short record has no last field
            part = block[pos:pos + len(chunk)]
            if numeric:   # (column by column into the block: no interleaved temporary)
                np.stack([chunk[nm].to_numpy(dtype=np.float64, na_value=np.nan) for nm in numeric], axis=1,
                         out=part)
                if not np.isfinite(part).all():
                    part[np.isinf(part)] = np.nan
            for nm in other:
                parts[nm].append(chunk[nm] if chunk[nm].dtype.kind in "Ob" else chunk[nm].astype(object))
            pos += len(chunk)
    except EncodingChanged:
        return None
    finally:
        if source is not None:
            source.close()
    if numeric is None or not pos or (extra and source.opening_spaces):
        return None   # (the whole-file path says what is wrong, or reads the spaced fields right)
    lines = None if known or short else source.record_lines(pos, len(plan.names), plan.has_header)
    if lines is None:
        lines = plan.lines   # the scan (refuses ragged records)
    else:
        plan.line_numbers = lines
    if pos != len(lines):
        return None
    others = pd.DataFrame({nm: pd.concat(parts[nm], ignore_index=True) for nm in other}) if other else None
    return block[:pos], numeric, others, lines


def _grown(block: np.ndarray, rows: int) -> np.ndarray:
    """``block`` copied into a larger array of at least ``rows`` rows (the row estimate was short)."""
    bigger = np.empty((max(rows, int(len(block) * 1.5)), block.shape[1]), dtype=block.dtype)
    bigger[:len(block)] = block
    return bigger


def iter_csv_tables(path, chunk_rows: int, *, label_column=None, id_column=None, roles: dict | None = None,
                    types: dict | None = None, **plan_options):
    """A delimited file as consecutive tables of at most ``chunk_rows`` rows (files larger than
    memory). The first chunk fixes the columns' types and roles; text in a column that was
    numeric there is refused with its line. Yields ``(table, plan, first)``."""
    path = Path(path)
    plan = plan_csv(path, **plan_options)
    label = _column_name(label_column, plan.names, path)
    id_name = _column_name(id_column, plan.names, path, "id column")
    fixed, first_table, offset = None, None, 0
    for frame in _chunks_once(plan, max(1, int(chunk_rows))):
        lines = plan.lines[offset:offset + len(frame)]
        offset += len(frame)
        plan.fix_decimal_commas(frame)
        if first_table is None:
            table = table_from_frame(frame, lines, where=path.name, name=path.stem, source=str(path),
                                     label_column=label, roles=roles, types=types, id_column=id_name,
                                     report=plan.notes)
            first_table = table
            fixed = {c.name: c.type for c in table.columns}
        else:
            table = table_from_frame(frame, lines, where=path.name, name=path.stem, source=str(path),
                                     label_column=label, id_column=id_name, report=[], fixed=fixed)
            table.set_roles({c.name: c.role for c in first_table.columns if c.name in table})
            table.set_target(first_table.current_target)
        yield table, plan, table is first_table
    if first_table is None:
        raise DataError(f"{path.name} holds a header but no data rows.")


def _chunks_once(plan: CsvPlan, rows: int):
    try:
        yield from plan.chunks(rows)
    except EncodingChanged:
        raise DataError(f"{plan.path.name} is not UTF-8 text past its first 256 KiB: save it as UTF-8 to read "
                        "it in chunks.") from None


def preview_table(path, max_rows: int = 100, **options) -> ReadResult:
    """The first ``max_rows`` rows of a CSV/TSV, Excel or Parquet file as a typed table with
    proposed roles (cheap: a CSV's first 256 KiB at most, no scan of the whole file), for an
    import dialog: ``result.table.infos()`` gives one line per column (type, role, distinct
    values, missing count) and ``result.table.to_frame()`` the preview rows. Options as
    :func:`read_table`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in EXCEL_EXTENSIONS:
        return read_excel_table(path, max_rows=max_rows, **options)
    if suffix in PARQUET_EXTENSIONS:
        return read_parquet_table(path, max_rows=max_rows, **options)
    if suffix in ARROW_EXTENSIONS:
        return read_arrow_table(path, max_rows=max_rows, **options)
    plan_options = {k: options.pop(k) for k in ("delimiter", "header", "decimal", "encoding", "na_values")
                    if k in options}
    plan = plan_csv(path, head_rows=max_rows, **plan_options)
    frame = plan.read()
    plan.fix_decimal_commas(frame)
    lines = plan.lines[:len(frame)]
    if len(lines) != len(frame):
        lines = np.arange(len(frame), dtype=np.int64) + (2 if plan.has_header else 1)
    table = table_from_frame(frame, lines, where=path.name, name=path.stem, source=str(path), report=plan.notes,
                             label_column=_column_name(options.pop("label_column", None), plan.names, path),
                             id_column=_column_name(options.pop("id_column", None), plan.names, path, "id column"), **options)
    return ReadResult(table, plan.detail, {"delimiter": plan.delimiter, "has_header": plan.has_header,
                                           "encoding": plan.encoding})


def read_table(path, **options) -> ReadResult:
    """Read a CSV/TSV, Excel, Parquet or Arrow/Feather file by its extension (options as in each reader)."""
    suffix = Path(path).suffix.lower()
    if suffix in EXCEL_EXTENSIONS:
        return read_excel_table(path, **options)
    if suffix in PARQUET_EXTENSIONS:
        return read_parquet_table(path, **options)
    if suffix in ARROW_EXTENSIONS:
        return read_arrow_table(path, **options)
    return read_csv_table(path, **options)
