"""Results as tables and files: column names for a result, CSV cells, and writers that write a
result chunk by chunk (CSV or ``.npy``), atomically — the file appears complete or not at all.

Shared by the command line (``run``, ``apply``) and the out-of-core extension
(:mod:`manifold_studio.extend.out_of_core`). Qt-free.

Text cells (labels, headers) that a spreadsheet would read as a formula — starting with ``=``,
``+``, ``-``, ``@``, a tab or a carriage return — are written with a leading single quote, as
OWASP recommends against CSV injection (``=cmd|' /C calc'!A0`` becomes ``'=cmd|' /C calc'!A0``).
Numbers are never changed (``-1.5`` stays ``-1.5``). Every writer takes ``escape_formulas=False``
to write text exactly as it is (the command line's ``--no-escape-formulas``).
"""
from __future__ import annotations

import csv
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError, WriteError
from manifold_studio.fileio.atomic import is_special_file
from manifold_studio.tables.result_formats import BINARY_FORMATS, COLUMNAR_FORMATS, ColumnarSink, output_format


#: the first characters that make a spreadsheet read a cell as a formula (OWASP: CSV injection)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def escape_formula(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would run it as a formula; text that is
    a number (``-1.5``, ``+3``, ``-inf``) is left as it is."""
    if not text or not text.startswith(FORMULA_PREFIXES):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


def escape_cells(cells, escape_formulas: bool = True) -> list[str]:
    """Text cells (e.g. a header) escaped with :func:`escape_formula` when asked."""
    return [escape_formula(c) for c in cells] if escape_formulas else list(cells)


def cell_text(value, escape_formulas: bool = True) -> str:
    """One CSV cell: floats with full precision (repr), integers plain, bytes decoded; text that
    a spreadsheet would read as a formula gets a leading ``'`` (see :func:`escape_formula`); a
    missing value (None) is an empty cell."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return escape_formula(text) if escape_formulas else text


def result_header(result: np.ndarray, prefix: str, kind: str, label_name: str | None = None,
                  with_labels: bool = False) -> list[str]:
    """Column names: ``cluster`` / ``predicted`` for labels, ``<id>_1 ...`` for coordinates,
    plus the true labels' column when ``with_labels``."""
    result = np.asarray(result)
    if result.ndim == 1:
        header = [{"clustering": "cluster", "classification": "predicted"}.get(kind, prefix)]
    else:
        header = [f"{prefix}_{i + 1}" for i in range(int(np.prod(result.shape[1:])))]
    if with_labels:
        name = label_name or "label"
        while name in header:
            name = f"{name}_true"
        header.append(name)
    return header


def result_table(result: np.ndarray, prefix: str, kind: str, labels=None, label_name: str | None = None,
                 row_ids=None, row_id_name: str = "row_id", metas=None):
    """(header, columns) for a result array plus optional true labels, led by the row id column
    when ``row_ids`` are given and then by ``metas`` ((names, columns): the data set's meta
    columns, :func:`~manifold_studio.tables.result_formats.meta_columns`)."""
    result = np.asarray(result)
    header = result_header(result, prefix, kind, label_name, labels is not None)
    if result.ndim == 1:
        columns = [result]
    else:
        result = result.reshape(result.shape[0], -1)
        columns = [result[:, i] for i in range(result.shape[1])]
    if labels is not None:
        columns.append(np.asarray(labels))
    if metas is not None and metas[0]:
        names = [n if n not in header else f"{n}_meta" for n in metas[0]]
        header, columns = [*names, *header], [*(np.asarray(c) for c in metas[1]), *columns]
    if row_ids is not None:
        while row_id_name in header:
            row_id_name += "_"
        header, columns = [row_id_name, *header], [np.asarray(row_ids), *columns]
    return header, columns


def write_result_table(fh, fmt: str, header: list[str], columns, escape_formulas: bool = True,
                       array=None) -> None:
    """Write a whole result table to the open file ``fh`` in format ``fmt`` (see
    :func:`output_format`). ``.npy`` writes ``array``, or the columns as one numeric matrix."""
    if fmt == "npy":
        if array is None:
            if not all(np.asarray(c).dtype.kind in "fiub" for c in columns):
                raise WriteError("This output has text columns: a .npy file holds one numeric array; give a "
                                 ".csv, .tsv, .parquet or .feather file.")
            array = np.column_stack([np.asarray(c) for c in columns]) if columns else np.zeros((0, 0))
        np.save(fh, np.asarray(array), allow_pickle=False)
    elif fmt in COLUMNAR_FORMATS:
        sink = ColumnarSink(fh, fmt)
        sink.write(header, columns)
        sink.close()
    else:
        writer = csv.writer(fh, lineterminator="\n", delimiter="\t" if fmt == "tsv" else ",")
        writer.writerow(escape_cells(header, escape_formulas))
        n = len(columns[0]) if columns else 0
        for i in range(n):
            writer.writerow([cell_text(c[i], escape_formulas) for c in columns])


class ResultWriter:
    """Write a result chunk by chunk to ``path`` in the format its extension names
    (:func:`~manifold_studio.tables.result_formats.output_format`; another extension is refused):
    ``.npy`` (the result only), or CSV, TSV, Parquet or Arrow IPC / Feather (result columns plus the true labels when
    given, led by the row id column ``row_id_name`` when the chunks come with row ids, then by
    the chunks' meta columns when given); ``-`` is standard output (CSV).

    The data go to a temporary file in the target's folder that replaces ``path`` on
    :meth:`commit`; :meth:`abort` (or leaving a ``with`` block by an exception) removes it, so a
    failed or cancelled job leaves the old file, if any, untouched.
    """

    def __init__(self, path: str, prefix: str, kind: str, label_name: str | None = None,
                 escape_formulas: bool = True, row_id_name: str = "row_id"):
        self.row_id_name = row_id_name
        self.path, self.prefix, self.kind, self.label_name = str(path), prefix, kind, label_name
        self.escape_formulas = escape_formulas
        special = self.path != "-" and is_special_file(self.path)
        self.format = "csv" if special else output_format(self.path)
        self.npy = self.format == "npy"
        self._columnar = None
        self.n_rows = 0
        self._fh = None
        self._tmp: str | None = None
        self._writer = None
        self._dtype = None
        self._row_shape: tuple[int, ...] | None = None

        if special:  # /dev/null, a named pipe: write in place
            self._fh = open(self.path, "w", newline="", encoding="utf-8")
        elif self.path != "-":
            folder = Path(self.path).parent if str(Path(self.path).parent) else Path(".")
            if not folder.is_dir():
                raise DataError(f"Cannot write {self.path}: the folder {folder} does not exist.")
            if Path(self.path).is_dir():
                raise DataError(f"Cannot write {self.path}: it is a folder; give a file name.")
            try:
                fd, self._tmp = tempfile.mkstemp(prefix=f".{Path(self.path).name}.", suffix=".partial",
                                                 dir=folder)
            except OSError as exc:
                raise DataError(f"Cannot write in {folder}: {exc.strerror or exc}.") from None
            binary = self.format in BINARY_FORMATS
            self._fh = os.fdopen(fd, "wb" if binary else "w", **({} if binary else
                                                                {"newline": "", "encoding": "utf-8"}))
            if self.format in COLUMNAR_FORMATS:
                self._columnar = ColumnarSink(self._fh, self.format)
        else:
            self._fh = sys.stdout

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        return False

    def write(self, result: np.ndarray, labels=None, row_ids=None, metas=None) -> None:
        result = np.asarray(result)
        if self.npy:
            if self._dtype is None:
                self._dtype, self._row_shape = result.dtype, result.shape[1:]
            elif result.shape[1:] != self._row_shape:
                raise DataError(f"Result chunks disagree in shape: {result.shape[1:]} after {self._row_shape}.")
            self._fh.write(np.ascontiguousarray(result, dtype=self._dtype).tobytes())
        else:
            header, columns = result_table(result, self.prefix, self.kind, labels, self.label_name,
                                           row_ids, self.row_id_name, metas)
            if self._columnar is not None:
                self._columnar.write(header, columns)
                self.n_rows += int(result.shape[0])
                return
            if self._writer is None:
                self._writer = csv.writer(self._fh, lineterminator="\n", delimiter="\t" if self.format == "tsv" else ",")
                self._writer.writerow(escape_cells(header, self.escape_formulas))
            esc = self.escape_formulas
            self._writer.writerows(zip(*([cell_text(v, esc) for v in c] for c in columns)))
        self.n_rows += int(result.shape[0])

    def commit(self) -> None:
        if self._tmp is None:
            self._fh.flush()
            if self._fh is not sys.stdout:
                self._fh.close()
            return
        if self._columnar is not None:
            self._columnar.close()
        self._fh.close()
        if self.npy:
            self._finish_npy()
        os.replace(self._tmp, self.path)
        self._tmp = None

    def _finish_npy(self) -> None:
        """Prefix the raw rows with an .npy header (shape known only now)."""
        dtype = self._dtype if self._dtype is not None else np.dtype(np.float64)
        shape = (self.n_rows, *(self._row_shape or ()))
        final = self._tmp + ".npy"
        with open(final, "wb") as out, open(self._tmp, "rb") as raw:
            np.lib.format.write_array_header_1_0(out, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                       "fortran_order": False, "shape": shape})
            while block := raw.read(1 << 20):
                out.write(block)
        os.replace(final, self._tmp)

    def abort(self) -> None:
        if self._tmp is None:
            return
        try:
            self._fh.close()
        finally:
            for name in (self._tmp, self._tmp + ".npy"):
                try:
                    os.unlink(name)
                except FileNotFoundError:
                    pass
            self._tmp = None
