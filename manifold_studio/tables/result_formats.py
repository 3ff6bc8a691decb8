"""The file formats of result outputs (``run --out`` / ``--extend-out``, ``apply --out``, and
the other commands' ``--out``): the extension names the format, on every path.

- CSV (``.csv``; also a name without extension, ``-`` for standard output, and special files
  such as ``/dev/null``), TSV (``.tsv``): the header and the cells of
  :func:`~manifold_studio.tables.result_table.cell_text`;
- ``.npy``: the result array alone (no row ids, metas or labels), ``allow_pickle=False``;
- Parquet (``.parquet``): one file, the same columns as the CSV with their types (a row group
  per chunk written), read back by ``pandas.read_parquet`` as the ``--dask`` path's Parquet;
- Arrow IPC / Feather (``.feather``, ``.arrow``): one Arrow IPC file (Feather version 2), the
  same columns and types (a record batch per chunk written), read back by ``pandas.read_feather``
  or ``pyarrow.ipc.open_file``.

Any other extension is refused before anything is computed, naming the ones allowed
(:func:`output_format`). :func:`~manifold_studio.tables.result_table.write_result_table` writes a
whole table, :class:`~manifold_studio.tables.result_table.ResultWriter` one chunk at a time.
:func:`meta_columns` gives a data set's meta columns for an output
(they follow the row id). Qt-free.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from manifold_studio.errors import WriteError

#: extension -> format of a result output
OUTPUT_FORMATS = {".csv": "csv", ".tsv": "tsv", ".npy": "npy", ".parquet": "parquet", ".feather": "arrow",
                  ".arrow": "arrow"}
#: the formats written to a binary file
BINARY_FORMATS = ("npy", "parquet", "arrow")
#: the formats written column by column with their types (pyarrow): :class:`ColumnarSink`
COLUMNAR_FORMATS = ("parquet", "arrow")


def output_format(path) -> str:
    """The format a result output ``path`` names by its extension ("csv", "tsv", "npy",
    "parquet", "arrow"); CSV for ``-`` and a name without extension. Raises WriteError for another
    extension, naming the allowed ones."""
    text = str(path)
    suffix = Path(text).suffix.lower() if text != "-" else ""
    if not suffix:
        return "csv"
    fmt = OUTPUT_FORMATS.get(suffix)
    if fmt is None:
        allowed = ", ".join(OUTPUT_FORMATS)
        raise WriteError(f"Cannot write {text}: '{suffix}' is not a format results are written in; give a file "
                         f"ending in {allowed} (CSV, tab-separated, a NumPy array, Parquet, Arrow IPC / Feather) or, for run and "
                         "apply, .h5ad (AnnData).")
    return fmt


def meta_columns(ds) -> tuple[list[str], list[np.ndarray]]:
    """(names, values) of the data set's meta columns for its rows (the id column left out: it
    is the output's row id), in the table's order; none without a table."""
    table = getattr(ds, "table", None)
    if table is None:
        return [], []
    names = [n for n in table.meta_names if n != table.id_column]
    return names, [_whole(np.asarray(ds.column_values(n))) for n in names]


def _whole(values: np.ndarray) -> np.ndarray:
    """A numeric column of whole numbers as integers ("1", not "1.0"; None where missing)."""
    if values.dtype.kind != "f":
        return values
    ok = np.isfinite(values)
    if not np.all(values[ok] == np.round(values[ok])) or np.any(np.abs(values[ok]) >= 2.0 ** 53):
        return values
    if ok.all():
        return values.astype(np.int64)
    out = np.empty(len(values), dtype=object)
    out[ok] = values[ok].astype(np.int64).tolist()
    out[~ok] = None
    return out


def _arrow_array(values):
    import pyarrow as pa

    v = np.asarray(values)
    if v.dtype.kind != "O":
        return pa.array(v)
    cells = [None if x is None or (isinstance(x, float) and x != x) else x for x in v.tolist()]
    try:
        return pa.array(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed kinds of values: their text
        return pa.array([None if x is None else str(x) for x in cells], type=pa.string())


class ColumnarSink:
    """Writes (header, columns) chunks to one file opened as ``fh``: a row group each of a Parquet
    file (``fmt="parquet"``) or a record batch each of an Arrow IPC file (``fmt="arrow"``, the
    Feather version 2 format)."""

    def __init__(self, fh, fmt: str = "parquet"):
        if fmt not in COLUMNAR_FORMATS:
            raise ValueError(f"fmt={fmt!r}: one of {COLUMNAR_FORMATS}")
        self.fh, self.fmt = fh, fmt
        self.writer = None
        self.schema = None

    @property
    def what(self) -> str:
        return "Parquet" if self.fmt == "parquet" else "Arrow"

    def _open(self, schema):
        import pyarrow as pa
        import pyarrow.parquet as pq

        return pq.ParquetWriter(self.fh, schema) if self.fmt == "parquet" else pa.ipc.new_file(self.fh, schema)

    def write(self, header: list[str], columns) -> None:
        import pyarrow as pa

        table = pa.Table.from_arrays([_arrow_array(c) for c in columns], names=list(header))
        if self.writer is None:
            self.writer, self.schema = self._open(table.schema), table.schema
        elif table.schema != self.schema:
            try:
                table = table.cast(self.schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise WriteError(f"A chunk's columns do not match the first chunk's in the {self.what} output: "
                                 f"{exc}") from None
        self.writer.write_table(table)

    def close(self, header: list[str] | None = None) -> None:
        if self.writer is None:  # no rows: the columns alone
            import pyarrow as pa

            table = pa.table({h: pa.array([], type=pa.float64()) for h in header or []})
            self.writer = self._open(table.schema)
            self.writer.write_table(table)
        self.writer.close()
