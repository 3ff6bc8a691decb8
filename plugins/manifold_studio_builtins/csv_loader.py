"""CSV / TSV loader plugin: a typed table with roles, read by pandas (manifold_studio.tables).

Reading rules (everything that is not used is *reported* in ``Dataset.report``):

* The delimiter is sniffed from the first lines (comma, tab, semicolon, pipe, or runs of
  whitespace) unless given; the first row is taken as a header when it holds text above
  numeric columns (or when asked to); decimal commas (``1,5``, ``1.234,5``) are found per column.
* The user picks the label column, by name or by 0-based index (negative counts from the
  end), or none. Label values that are all integers become an integer array, all numbers a
  float array, otherwise strings. ``id_column`` picks a column of unique row ids (else the
  file's line numbers are the row ids); ``roles`` overrides the proposed roles.
* Numeric columns are features. A column of numbers with a stray text cell stays numeric with
  that cell missing (reported with its line); other text columns are kept as meta columns
  (categorical or free text), reported by name with the first text value and its line.
* Missing values (an empty field, ``NA``, ``N/A``, ``NaN``, ``null``, ``None``, ``?``) and
  infinite values are never silently used: by default the rows holding them are dropped and
  listed by line and column in the report; ``missing="keep"`` keeps them as NaN (for an impute
  step) and ``missing="error"`` refuses the file instead.
* A ragged row, an empty file, a file that is not text and a file without any numeric
  column raise :class:`~manifold_studio.errors.DataError` naming the file (and the line).

:func:`preview` reads only the first rows, cheaply, for an import dialog.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from manifold_studio.algorithms.params import Choice, TextList, validate_params
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl
from manifold_studio.tables.options import (  # noqa: F401  (ColumnRef: kept importable from here)
    ID_COLUMN, LABEL_COLUMN, MISSING, ROLES_OPTION, ColumnRef, DelimiterChoice,
)
from manifold_studio.tables.readers import DECIMALS, iter_csv_tables, read_csv_table
from manifold_studio.tables.sniff import (  # noqa: F401  (MISSING_TOKENS: kept importable from here)
    MISSING_TOKENS, PREVIEW_BYTES, SNIFF_LINES, is_missing, is_number, parse_table, read_text,
)

OPTIONS = (
    LABEL_COLUMN,
    DelimiterChoice("delimiter", "auto",
                    "Field separator; 'auto' detects comma, tab, semicolon, pipe or whitespace.",
                    choices=("auto", "comma", "tab", "semicolon", "pipe", "whitespace")),
    Choice("header", "auto",
           "Whether the first row holds column names; 'auto' detects it (text above numbers).",
           choices=("auto", "yes", "no")),
    MISSING,
    Choice("decimal", "auto", "The decimal mark: 'auto' finds columns written with decimal commas (1,5) "
           "when fields are not comma-separated; 'point' or 'comma' for the whole file.", choices=DECIMALS),
    Choice("encoding", "auto", "The text encoding; 'auto' reads UTF-8 (with or without BOM), UTF-16 with "
           "BOM, or else Latin-1 (reported).", choices=("auto", "utf-8", "utf-16", "latin-1", "cp1252")),
    ID_COLUMN,
    ROLES_OPTION,
    TextList("na_values", None, "More spellings of a missing value (comma-separated, e.g. -999, missing), "
             "besides empty, NA, N/A, NaN, null, None, ? and #N/A.", allow_none=True, label="Missing-value codes"),
)


def read_csv(path, label_column=None, delimiter="auto", header="auto", missing="drop", decimal="auto",
             encoding="auto", id_column=None, roles=None, na_values=None) -> Dataset:
    """Read a CSV/TSV file into a :class:`Dataset` with its table (see the module docstring)."""
    result = read_csv_table(path, delimiter=delimiter, header=header, decimal=decimal, encoding=encoding,
                            label_column=label_column, id_column=id_column, roles=roles, na_values=na_values)
    return Dataset.from_table(result.table, missing=missing, detail=result.detail)


def iter_csv_chunks(path, chunk_rows: int = 100_000, label_column=None, delimiter="auto", header="auto",
                    missing="drop", decimal="auto", encoding="auto", id_column=None, roles=None, na_values=None):
    """A CSV/TSV file as consecutive Dataset chunks (memory bounded by ``chunk_rows``), with the
    rules of :func:`read_csv`: delimiter, header, column types and roles are fixed by the first
    rows, and every later chunk must agree (text in a numeric column is refused with its line)."""
    step = max(1, int(chunk_rows))
    for table, plan, first in iter_csv_tables(path, step, label_column=label_column, id_column=id_column,
                                              roles=roles, delimiter=delimiter, header=header, decimal=decimal,
                                              encoding=encoding, na_values=na_values):
        ds = Dataset.from_table(table, missing=missing, summary=first, in_chunks=True)
        if first:
            lab = f", labels: '{table.current_target}'" if table.current_target else ""
            ds.report.insert(0, f"Reading in chunks of {step:,} rows: {ds.n_features} numeric columns from "
                                f"{Path(path).name} ({plan.detail}{lab}).")
        yield ds


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
