"""Reading workbooks and columnar files into a typed :class:`Table` (Qt-free): Excel (.xlsx, with
its sheets), Parquet and Arrow IPC / Feather, through pandas and pyarrow (imported at the first
read); the CSV reader is :mod:`manifold_studio.tables.readers`, which dispatches to these by
extension."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError
from manifold_studio.tables.infer import table_from_frame
from manifold_studio.tables.model import ReadResult, quote
from manifold_studio.tables.sniff import MISSING_TOKENS, resolve_column

__all__ = ["excel_sheets", "read_excel_table", "read_parquet_table", "read_arrow_table", "NA_SPELLINGS",
           "EXCEL_EXTENSIONS", "PARQUET_EXTENSIONS", "ARROW_EXTENSIONS"]

#: every spelling of a missing value pandas is told about (MISSING_TOKENS in common cases)
NA_SPELLINGS = sorted({v for t in MISSING_TOKENS for v in (t, t.upper(), t.capitalize(), t.title())})
EXCEL_EXTENSIONS = (".xlsx", ".xlsm")
PARQUET_EXTENSIONS = (".parquet", ".pq")
ARROW_EXTENSIONS = (".feather", ".arrow", ".arrows", ".ipc")


def _column_name(ref, names: list[str], path: Path, what: str = "label column") -> str | None:
    if ref is None:
        return None
    return names[resolve_column(ref, names, path, what)]


def _na_values(extra) -> list[str]:
    return NA_SPELLINGS + [str(v) for v in (extra or ())]


def excel_sheets(path) -> list[str]:
    """The sheet names of an .xlsx workbook."""
    import pandas as pd

    path = Path(path)
    try:
        with pd.ExcelFile(path, engine="openpyxl") as book:
            return [str(s) for s in book.sheet_names]
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds for a damaged file
        raise DataError(f"{path.name} is not a readable Excel workbook ({type(exc).__name__}: {exc}).") from None


def read_excel_table(path, *, sheet=None, header: str = "yes", na_values=(), label_column=None,
                     id_column=None, roles: dict | None = None, types: dict | None = None,
                     max_rows: int | None = None) -> ReadResult:
    """Read one sheet of an .xlsx workbook. ``sheet`` is a sheet name or 0-based index; a workbook
    with several sheets needs one (the message lists them). Row ids are the sheet's row numbers."""
    import pandas as pd

    path = Path(path)
    sheets = excel_sheets(path)
    if sheet is None:
        if len(sheets) > 1:
            raise DataError(f"{path.name} has {len(sheets)} sheets ({', '.join(quote(s) for s in sheets)}): "
                            "pick one with the sheet option.")
        sheet = sheets[0]
    elif isinstance(sheet, (int, np.integer)) or (isinstance(sheet, str) and sheet.isdigit() and sheet not in sheets):
        k = int(sheet)
        if not 0 <= k < len(sheets):
            raise DataError(f"{path.name} has no sheet {k}: its sheets are {', '.join(quote(s) for s in sheets)}.")
        sheet = sheets[k]
    elif sheet not in sheets:
        raise DataError(f"{path.name} has no sheet named {quote(sheet)}: its sheets are "
                        f"{', '.join(quote(s) for s in sheets)}.")
    has_header = header != "no"
    try:
        frame = pd.read_excel(path, sheet_name=sheet, header=0 if has_header else None, engine="openpyxl",
                              na_values=_na_values(na_values), keep_default_na=False, nrows=max_rows)
    except Exception as exc:  # noqa: BLE001
        raise DataError(f"{path.name}, sheet {quote(sheet)}: cannot be read ({type(exc).__name__}: {exc}).") from None
    if not has_header:
        frame.columns = [f"column_{j}" for j in range(frame.shape[1])]
    frame.columns = [f"column_{j}" if str(c).startswith("Unnamed: ") else str(c) for j, c in enumerate(frame.columns)]
    if not len(frame):
        raise DataError(f"{path.name}, sheet {quote(sheet)} holds no data rows.")
    names = list(frame.columns)
    lines = np.arange(len(frame), dtype=np.int64) + (2 if has_header else 1)
    table = table_from_frame(frame, lines, where=f"{path.name} (sheet {quote(sheet)})", name=path.stem,
                             source=str(path), label_column=_column_name(label_column, names, path), roles=roles,
                             types=types, id_column=_column_name(id_column, names, path, "id column"), report=[])
    return ReadResult(table, f"sheet {quote(sheet)}", {"sheet": sheet, "sheets": sheets})


def _arrow_frame(path: Path):
    """An Arrow IPC file (Feather v2) or stream as a DataFrame."""
    import pyarrow as pa
    import pyarrow.feather as feather

    try:
        return feather.read_table(path).to_pandas()
    except (pa.ArrowInvalid, OSError):
        with pa.OSFile(str(path), "rb") as source:   # the stream format (no footer)
            return pa.ipc.open_stream(source).read_all().to_pandas()


def read_parquet_table(path, *, label_column=None, id_column=None, roles: dict | None = None,
                       types: dict | None = None, max_rows: int | None = None) -> ReadResult:
    """Read a Parquet file (all its columns); row ids are row numbers from 1."""
    import pandas as pd

    return _read_columnar(Path(path), lambda p: pd.read_parquet(p, engine="pyarrow"), "Parquet", label_column,
                          id_column, roles, types, max_rows)


def read_arrow_table(path, *, label_column=None, id_column=None, roles: dict | None = None,
                     types: dict | None = None, max_rows: int | None = None) -> ReadResult:
    """Read an Arrow IPC file or stream (Feather v2; all its columns); row ids are row numbers from 1."""
    return _read_columnar(Path(path), _arrow_frame, "Arrow IPC / Feather", label_column, id_column, roles, types,
                          max_rows)


def _read_columnar(path: Path, read, kind: str, label_column, id_column, roles, types, max_rows) -> ReadResult:
    """A typed column file (Parquet, Arrow) read whole with ``read(path)`` into a table."""
    try:
        frame = read(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a damaged file
        raise DataError(f"{path.name} is not a readable {kind} file ({type(exc).__name__}: {exc}).") from None
    frame.columns = [str(c) for c in frame.columns]
    if max_rows is not None:
        frame = frame.head(max_rows)
    if not len(frame):
        raise DataError(f"{path.name} holds no data rows.")
    names = list(frame.columns)
    lines = np.arange(1, len(frame) + 1, dtype=np.int64)
    table = table_from_frame(frame, lines, where=path.name, name=path.stem, source=str(path),
                             label_column=_column_name(label_column, names, path), roles=roles, types=types,
                             id_column=_column_name(id_column, names, path, "id column"), report=[])
    return ReadResult(table, kind, {})
