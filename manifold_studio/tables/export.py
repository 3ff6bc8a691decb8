"""A data set with every result column as a table: CSV files and tab-separated text (the
clipboard's "copy selected rows"). Qt-free.

The columns are :func:`manifold_studio.tables.dataset_columns.dataset_columns` — features, labels, and
the result columns of every finished run — so the file, the data table and "colour by" agree on
names and values. Numbers are written with full precision (``repr``: they read back equal);
missing values and rows a run has no value for are empty cells; text that a spreadsheet would run
as a formula gets a leading ``'`` unless ``escape_formulas=False`` (see
:func:`manifold_studio.tables.result_table.escape_formula`). Files are written atomically
(the target appears complete or not at all), in chunks with progress and cancel.
"""
from __future__ import annotations

import csv

import numpy as np

from manifold_studio.fileio.export_paths import (
    TABLE_EXTENSIONS,
    check_output_path,
    write_file,
)
from manifold_studio.tables.dataset_columns import dataset_columns
from manifold_studio.tables.result_table import cell_text, escape_cells

CHUNK_ROWS = 50_000


def dataset_table(session, name: str) -> tuple[list[str], list[np.ndarray]]:
    """(header, columns) of data set ``name``: every column of ``dataset_columns``."""

    cols = dataset_columns(session, name)
    return [c.name for c in cols], [np.asarray(c.values) for c in cols]


def column_text(values, *, tsv: bool = False, escape_formulas: bool = True) -> list[str]:
    """The cells of one column as text (vectorised per column: about 0.3 µs a cell); text cells
    that would run as spreadsheet formulas are escaped unless ``escape_formulas`` is False."""
    v = np.asarray(values)
    if v.dtype.kind == "f":
        out = list(map(repr, v.astype(float).tolist()))
        for i in np.flatnonzero(np.isnan(v)):
            out[i] = ""
        return out
    if v.dtype.kind in "iu":
        return list(map(str, v.tolist()))
    out = ["" if x is None or (isinstance(x, float) and x != x) else cell_text(x, escape_formulas)
           for x in v.tolist()]
    if tsv:
        out = [s.replace("\t", " ").replace("\r", " ").replace("\n", " ") for s in out]
    return out


def write_table_csv(path, header: list[str], columns: list[np.ndarray], progress=None,
                    chunk_rows: int = CHUNK_ROWS, *, escape_formulas: bool = True) -> int:
    """Write ``columns`` under ``header`` to the CSV file ``path`` atomically; returns the number
    of rows. ``progress.checkpoint`` is called per chunk (it raises to cancel: the old file stays)."""
    check_output_path(path, TABLE_EXTENSIONS, "the table")
    n = len(columns[0]) if columns else 0
    plain = all(np.asarray(c).dtype.kind in "fiu" for c in columns)

    def emit(fh):
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(escape_cells(header, escape_formulas))
        for start in range(0, n, chunk_rows):
            if progress is not None:
                progress.checkpoint(start / max(n, 1), f"writing rows {start:,}–{min(n, start + chunk_rows):,}")
            stop = min(n, start + chunk_rows)
            rows = zip(*(column_text(c[start:stop], escape_formulas=escape_formulas) for c in columns))
            if plain:  # numbers only: nothing to quote, join directly (about twice as fast)
                fh.write("".join(",".join(r) + "\n" for r in rows))
            else:
                writer.writerows(rows)
        if progress is not None:
            progress.checkpoint(1.0, f"wrote {n:,} rows")

    write_file(path, emit, binary=False)
    return n


def export_dataset_csv(session, name: str, path, progress=None, *, escape_formulas: bool = True) -> tuple[int, int]:
    """Data set ``name`` with all result columns to ``path``; returns (rows, columns)."""
    check_output_path(path, TABLE_EXTENSIONS, "the table")  # before any work
    header, columns = with_row_ids(session, name, *dataset_table(session, name))
    return write_table_csv(path, header, columns, progress, escape_formulas=escape_formulas), len(header)


def with_row_ids(session, name: str, header: list[str], columns: list[np.ndarray]):
    """The table with the data set's row id (its file's line number, or its id column) as the
    first column, so exported rows line up with the input file even where rows were dropped."""
    ids = getattr(session.dataset(name), "row_ids", None)
    if ids is None or "row_id" in header or len(ids) != (len(columns[0]) if columns else len(ids)):
        return header, columns
    return ["row_id", *header], [np.asarray(ids), *columns]


def rows_as_tsv(header: list[str], columns: list[np.ndarray], rows, *, escape_formulas: bool = True) -> str:
    """Tab-separated text of ``rows`` (data-set rows) with a header line (tabs and line breaks
    inside cells become spaces), as spreadsheets paste it."""
    rows = np.asarray(rows, dtype=np.intp)
    texts = [column_text(c[rows], tsv=True, escape_formulas=escape_formulas) for c in columns]
    lines = ["\t".join(h.replace("\t", " ") for h in escape_cells(header, escape_formulas))]
    lines.extend("\t".join(cells) for cells in zip(*texts))
    return "\n".join(lines) + "\n"
