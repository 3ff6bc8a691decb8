"""Writing a command's result table to ``--out`` / ``--extend-out`` in the format the file's
extension names (:mod:`manifold_studio.tables.result_formats`: CSV, TSV, ``.npy``, Parquet, Arrow IPC / Feather),
and refusing another extension before any work is done."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from manifold_studio.cli.console import UsageError
from manifold_studio.fileio.atomic import atomic_write, is_special_file
from manifold_studio.tables.result_formats import BINARY_FORMATS, output_format
from manifold_studio.tables.result_table import write_result_table


def check_output_format(path: str | None) -> None:
    """Refuse an output whose extension names no format results are written in (WriteError,
    naming the allowed ones); ``-`` and special files (``/dev/null``) are CSV; an AnnData .h5ad file
    is written by :mod:`~manifold_studio.cli.h5ad_output`."""
    if path is not None and path != "-" and not is_special_file(path) and not str(path).lower().endswith(".h5ad"):
        output_format(path)


def write_csv(path: str, header: list[str], columns: list[np.ndarray], escape_formulas: bool = True,
              array=None) -> None:
    """Write columns with a header in the format the extension names (CSV, TSV, Parquet, Arrow; .npy:
    ``array``, the result alone; :mod:`~manifold_studio.tables.result_formats`); ``-`` is standard
    output (CSV); files are replaced atomically. Text cells that a spreadsheet would run as
    formulas get a leading ``'`` unless ``escape_formulas`` is False (``--no-escape-formulas``)."""
    fmt = "csv" if path == "-" or is_special_file(path) else output_format(path)

    def emit(fh):
        write_result_table(fh, fmt, header, columns, escape_formulas, array)

    if path == "-":
        emit(sys.stdout)
        sys.stdout.flush()
        return

    folder = Path(path).parent if str(Path(path).parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write {path}: the folder {folder} does not exist")
    atomic_write(path, emit, binary=fmt in BINARY_FORMATS)
