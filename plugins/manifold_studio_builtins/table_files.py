"""Excel (.xlsx), Parquet and Arrow IPC / Feather loader plugins: typed tables with roles (manifold_studio.tables).

The rules are the CSV loader's (label column, id column, roles, missing values; see
:mod:`manifold_studio_builtins.csv_loader`). An Excel workbook with several sheets needs the
``sheet`` option; the message lists the sheets.
"""
from __future__ import annotations

from manifold_studio.algorithms.params import Choice
from manifold_studio.data import Dataset, Loader
from manifold_studio.hookspecs import hookimpl
from manifold_studio.tables.options import SHEET, TABLE_OPTIONS
from manifold_studio.tables.readers import (
    ARROW_EXTENSIONS, EXCEL_EXTENSIONS, PARQUET_EXTENSIONS, excel_sheets, read_arrow_table, read_excel_table,
    read_parquet_table,
)


class _TableFileLoader(Loader):
    """A loader whose reader gives a typed table (``read(path, **options)``)."""

    read = None

    def _load(self, path, missing="drop", **options) -> Dataset:
        result = type(self).read(path, **options)
        return Dataset.from_table(result.table, missing=missing, detail=result.detail)


class ExcelLoader(_TableFileLoader):
    """Reads one sheet of an Excel workbook (.xlsx, .xlsm)."""

    id = "excel"
    name = "Excel workbook"
    extensions = EXCEL_EXTENSIONS
    options = (SHEET, *TABLE_OPTIONS,
               Choice("header", "yes", "Whether the sheet's first row holds column names.", choices=("yes", "no")))

    read = staticmethod(read_excel_table)

    def sheets(self, path) -> list[str]:
        """The workbook's sheet names (for an import dialog)."""
        return excel_sheets(path)


class ParquetLoader(_TableFileLoader):
    """Reads a Parquet file (all its columns, with their stored types)."""

    id = "parquet"
    name = "Parquet"
    extensions = PARQUET_EXTENSIONS
    options = TABLE_OPTIONS

    read = staticmethod(read_parquet_table)


class ArrowLoader(_TableFileLoader):
    """Reads an Arrow IPC file or stream (Feather v2: .feather, .arrow), all its columns."""

    id = "arrow"
    name = "Arrow IPC / Feather"
    extensions = ARROW_EXTENSIONS
    options = TABLE_OPTIONS

    read = staticmethod(read_arrow_table)


@hookimpl
def register_loaders():
    return [ExcelLoader(), ParquetLoader(), ArrowLoader()]
