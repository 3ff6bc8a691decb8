"""Extend a fitted model to data larger than memory, on one machine, with no new dependency.

Fit on a sample and extend to all is how a map of millions of points is made: the fitted
model is small and ``extend`` is sample-wise, so the rows can go through it in chunks. The input
is read chunk by chunk by its loader (:meth:`manifold_studio.data.Loader.iter_chunks`: a
memory-mapped ``.npy``, a CSV/TSV read line by line, any other loader whole) — one file, a
folder of parts (``.npy`` / CSV files, in name order) or a glob pattern — and the result is
written as it goes (:class:`manifold_studio.tables.result_table.ResultWriter`: CSV or ``.npy``), so
memory stays bounded by the chunk size. Progress and cancel between chunks; a cancelled or
failed job leaves no partial output.

:func:`extend_source` is the one loop, used by ``manifold-studio apply`` and the window's
"Extend to a file…".
"""
from __future__ import annotations

import glob as globmod
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from manifold_studio import load_data
from manifold_studio.algorithms.labels import same_labels
from manifold_studio.algorithms.named_columns import STRAY_TEXT, check_numeric_columns
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import check_regular_file, name_list
from manifold_studio.plugins.host import get_host
from manifold_studio.tables.result_formats import meta_columns
from manifold_studio.tables.result_table import ResultWriter

try:
    import resource
except ImportError:  # Windows: no getrusage
    resource = None

#: rows per chunk by default (a chunk of 100 features is 40 MB)
CHUNK_ROWS = 50_000
#: extensions of the part files taken from a folder
PART_EXTENSIONS = (".npy", ".csv", ".tsv", ".txt")


@dataclass
class ExtendReport:
    n_rows: int = 0
    n_chunks: int = 0
    parts: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: the process's peak resident memory (MB) when the job ended
    peak_memory_mb: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: (correct, total) against the data's labels, for a classifier
    correct: tuple[int, int] | None = None
    #: the results, when asked to keep them
    values: np.ndarray | None = None
    #: the rows read, when asked to keep them and they fit in ``keep_data_mb``
    dataset: Dataset | None = None

    @property
    def accuracy(self) -> float | None:
        return None if self.correct is None or not self.correct[1] else self.correct[0] / self.correct[1]


def _stored_bytes(X) -> int:
    """The memory a matrix's values take (a scipy.sparse matrix: its stored entries and indices)."""
    if sp.issparse(X):
        X = sp.csr_array(X)   # the canonical form of sparse data here: no copy
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(np.asarray(X).nbytes)


def peak_memory_mb() -> float:
    """The process's peak resident set size so far, in MB (NaN where the platform has no getrusage)."""
    if resource is None:
        return float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def data_parts(source: str) -> list[Path]:
    """The files of ``source``: one file, the data files of a folder, or a glob pattern's matches
    (both in name order)."""
    text = str(source)
    if text.startswith("sample:"):
        return []
    if any(ch in text for ch in "*?["):
        files = [Path(p) for p in sorted(globmod.glob(text)) if Path(p).is_file()]
        if not files:
            raise DataError(f"No file matches {text}.")
        return files
    path = Path(text)
    if not path.exists():
        raise DataError(f"File not found: {text}")
    check_regular_file(path, "data file")
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in PART_EXTENSIONS
                       and not p.name.startswith("."))
        if not files and _one_data_set(path):   # a 10x folder, a folder of images: one data set
            return [path]
        if not files:
            raise DataError(f"The folder {text} holds no data parts ({', '.join(PART_EXTENSIONS)} files).")
        return files
    return [path]


def _named_rows(ds: Dataset) -> bool:
    """Whether a table-less data set's rows have names of their own (a 10x folder's barcodes), not
    the positions a chunk numbers from 0."""
    return ds.row_ids is not None and np.asarray(ds.row_ids).dtype.kind not in "iuf"


def _one_data_set(folder: Path) -> bool:
    """Whether a loader reads the folder as one data set (a 10x folder, a folder of images)."""
    try:
        get_host().loader_for(folder)
    except DataError:
        return False
    return True


def match_columns(names: list[str] | None, train_names: list[str] | None) -> list[int] | None:
    """Where each training column is among ``names`` (new data matched to the training data by
    name, in any order), or None when they cannot be matched by name (no names, a training
    column missing) or need no reordering."""
    if not train_names or not names or list(names) == list(train_names) or not set(train_names) <= set(names):
        return None
    return [list(names).index(c) for c in train_names]


def align_features(ds: Dataset, train_names: list[str] | None, n_features: int) -> tuple[np.ndarray, str | None]:
    """(the matrix of ``ds`` with columns in the training order, a note when they were matched
    by name). Columns are matched by name when the training names are all present."""
    X, names = ds.X, ds.feature_names
    where = Path(ds.source).name if ds.source else ds.name
    if train_names and ds.table is not None:
        # a column the model was fitted on as numbers that holds text here (read as categorical or
        # text, so no feature here, or as numbers with its text cells missing) is refused naming the
        # line and the cell: never recoded, its rows never dropped
        table, features = ds.table, set(names or [])
        check_numeric_columns(table, [n for n in train_names if n in table and (
            n not in features or table.column(n).note == STRAY_TEXT)], "the model", where=where)
    idx = match_columns(names, train_names)
    if idx is not None:
        note = None
        if len(names) != len(train_names) or idx != list(range(len(idx))):
            note = f"{ds.name}: columns matched to the training data by name ({name_list(train_names, 12)})."
        return X[:, idx], note
    if X.shape[1] != n_features:
        have = f" ({', '.join(names)})" if names and len(names) <= 12 else ""
        want = f" ({', '.join(train_names)})" if train_names and len(train_names) <= 12 else ""
        raise DataError(f"{where} has {X.shape[1]} numeric column(s){have} but the model was fitted on "
                        f"{n_features}{want}: give data with the same columns as the training data")
    return X, None


def pipeline_types(pipeline, ds: Dataset, where: str) -> list[str]:
    """Refuse text in the columns a fitted pipeline took as numbers (its columns without training
    categories), naming the line and the cell; notes instead when its chain imputes (see
    :func:`~manifold_studio.algorithms.named_columns.check_numeric_columns`)."""
    return chain_types(getattr(pipeline, "columns_in_", None), getattr(pipeline, "categories_in_", None),
                       bool(getattr(pipeline, "imputes", False)), ds, where)


def chain_types(columns, categories, imputes: bool, ds: Dataset, where: str) -> list[str]:
    """:func:`pipeline_types` before the fit: ``columns`` (and their ``categories``) are those a
    chain is fitted on, e.g. the training data set's (``run --extend`` checks the new file
    before it fits)."""
    if ds.table is None or not ds.table_features:
        return []
    categories = categories or {}
    numeric = [str(n) for n in columns or () if n not in categories]
    return check_numeric_columns(ds.table, numeric, "the model", where=where, imputes=imputes)


def dataset_table(ds: Dataset):
    """The rows of ``ds`` as a table with named columns (its table restricted to the rows it
    kept), for a pipeline to match by name; the bare matrix when it has no table."""
    if ds.table is None or not ds.table_features:   # (AnnData: obs annotates X, its features are elsewhere)
        return ds.X
    return ds.table if ds.table_rows is None else ds.table.take(ds.table_rows)


def row_id_header(ds: Dataset) -> str:
    """The header of the row id column: the id column's name, else ``row_id`` (line numbers)."""
    return str(ds.table.id_column) if ds.table is not None and ds.table.id_column else "row_id"


def _count_rows(files: list[Path]) -> int:
    """Rows to expect (for progress): .npy shapes from their headers, lines of text files."""
    total = 0
    for f in files:
        if f.suffix.lower() == ".npy":
            try:
                total += int(np.load(f, mmap_mode="r", allow_pickle=False).shape[0])
                continue
            except Exception:  # noqa: BLE001 - the loader will say what is wrong
                pass
        try:
            with open(f, "rb") as fh:
                total += sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 22), b""))
        except OSError:
            pass
    return max(total, 1)


def iter_source(source: str, host, options: dict | None = None, chunk_rows: int = CHUNK_ROWS):
    """(part, Dataset chunk) for every chunk of every part of ``source``, checking that the
    parts have the same columns (the file is named otherwise)."""
    if str(source).startswith("sample:"):  # generated: read whole, sliced

        ds = load_data(str(source), host, **(options or {}))
        step = max(1, int(chunk_rows))
        for start in range(0, ds.n_samples, step):
            part = ds.subset(np.arange(start, min(start + step, ds.n_samples)))
            part.report = list(ds.report) if start == 0 else []
            yield Path(str(source)), part
        return
    columns = None
    for part in data_parts(source):
        loader = host.loader_for(part)
        for ds in loader.iter_chunks(part, chunk_rows, **(options or {})):
            names = ds.feature_names or [f"column_{j}" for j in range(ds.n_features)]
            if columns is None:
                columns = (ds.n_features, names)
            elif ds.n_features != columns[0] or (ds.feature_names and list(names) != list(columns[1])):
                raise DataError(f"{part.name} has {ds.n_features} column(s) ({', '.join(names[:8])}) but the "
                                f"first part has {columns[0]} ({', '.join(columns[1][:8])}): every part needs "
                                "the same columns.")
            yield part, ds


def extend_source(estimator, source: str, *, host=None, options: dict | None = None, out: str | None = None,
                  train_feature_names: list[str] | None = None, chunk_rows: int = CHUNK_ROWS,
                  keep_values: bool = False, keep_data_mb: float = 0.0, progress=None,
                  escape_formulas: bool = True, metas: bool = False, extend=None) -> ExtendReport:
    """Extend ``estimator`` to every row of ``source``, chunk by chunk.

    ``out``: write the result there (CSV or ``.npy``; ``-`` for standard output) as it goes.
    ``keep_values``: also return the results (small: n × k). ``keep_data_mb``: return the rows
    read as a Dataset while they take at most this many MB (the window keeps a small file as a
    loaded data set; a large one is not kept). Rows whose cells are missing are dropped by the
    loader's rules and reported. A pipeline gets each chunk's table: its columns are matched to
    the training columns by name (any order) and a missing one is refused naming it. A CSV
    output starts with the row id column: one table file's line numbers (or id column values),
    else the rows' positions over all the parts. ``escape_formulas``: see
    :class:`~manifold_studio.tables.result_table.ResultWriter`. ``metas``: the data's meta columns
    follow the row id (CSV, TSV, Parquet). ``extend(X, progress) -> values``, if given, extends each
    chunk's matrix instead of ``estimator.extend`` (the window extends a third-party model in a
    worker process this way: :func:`manifold_studio.session.isolated_extend.extend_model`).
    """

    if host is None:
        host = get_host()
    progress = as_progress(progress)
    files = data_parts(source)
    expected = _count_rows(files)
    report = ExtendReport(parts=[str(f) for f in files])
    n_features = int(getattr(estimator, "n_features_in_"))
    final = getattr(estimator, "final", None)  # a pipeline's columns are named after its algorithm
    prefix = final.id if final is not None else estimator.id
    start = time.perf_counter()
    writer = None
    values, kept, labels_kept, correct, total = [], [], [], 0, 0
    keep_data = keep_data_mb > 0
    first = None
    # row ids: a table's (its line numbers or id column) when there is one file; else the rows'
    # positions over all the parts (0, 1, ...), which stay unique
    by_line = len(files) <= 1
    progress.checkpoint(0.0, f"Extending to {Path(str(source)).name}")
    try:
        for part, ds in iter_source(source, host, options, chunk_rows):
            first = first or ds
            report.notes.extend(ds.report)
            by_line = by_line and (ds.table is not None or _named_rows(ds)) or not files
            if callable(getattr(estimator, "prepare", None)):  # a pipeline: columns by name
                for text in pipeline_types(estimator, ds, part.name):
                    if text not in report.notes:
                        report.notes.append(text)
                X, note = estimator.input_matrix(dataset_table(ds)), None
            else:
                X, note = align_features(ds, train_feature_names, n_features)
            if note and note not in report.notes:
                report.notes.append(note)
            if X.shape[0]:
                result = np.asarray(estimator.extend(X) if extend is None else extend(X, SubProgress(
                    progress, min(report.n_rows / expected, 0.99), min((report.n_rows + X.shape[0]) / expected, 0.99))))
                if out is not None:
                    if writer is None:
                        writer = ResultWriter(out, prefix, estimator.kind, ds.label_name, escape_formulas,
                                              row_id_name=row_id_header(ds) if by_line else "row_id")
                    writer.write(result, ds.labels, row_ids=ds.row_ids if by_line else
                                 report.n_rows + np.arange(X.shape[0]), metas=meta_columns(ds) if metas else None)
                if keep_values:
                    values.append(result)
                if estimator.kind == "classification" and ds.labels is not None:
                    eq = same_labels(result, ds.labels)
                    correct, total = correct + int(eq.sum()), total + eq.size
                if keep_data:
                    kept.append(X)
                    labels_kept.append(ds.labels)
                    if sum(_stored_bytes(k) for k in kept) > keep_data_mb * 1e6:
                        keep_data, kept, labels_kept = False, [], []
                        report.notes.append(f"The rows read take more than {keep_data_mb:,.0f} MB: they are "
                                            "not kept as a data set (the results are).")
            report.n_rows += int(X.shape[0])
            report.n_chunks += 1
            progress.checkpoint(min(report.n_rows / expected, 0.99),
                                f"{report.n_rows:,} rows extended ({part.name})")
        if first is None:
            raise DataError(f"{source} holds no data rows.")
        if writer is None and out is not None:  # every row was dropped: still write the header
            writer = ResultWriter(out, prefix, estimator.kind, first.label_name, escape_formulas,
                                  row_id_name=row_id_header(first))
        if writer is not None:
            writer.commit()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    report.seconds = time.perf_counter() - start
    report.peak_memory_mb = peak_memory_mb()
    if total:
        report.correct = (correct, total)
    if keep_values:
        report.values = np.concatenate(values) if values else np.zeros((0,))
    if keep_data and kept:
        labels = None if any(lab is None for lab in labels_kept) else np.concatenate(labels_kept)
        name = Path(str(source)).stem if len(files) == 1 else Path(str(source)).name
        stacked = sp.csr_array(sp.vstack(kept, format="csr")) if any(sp.issparse(k) for k in kept) else np.vstack(kept)
        report.dataset = Dataset(name, stacked, labels=labels,
                                 feature_names=train_feature_names or first.feature_names,
                                 source=str(source), label_name=first.label_name, report=list(report.notes))
    progress.checkpoint(1.0, f"Extended {report.n_rows:,} rows in {report.seconds:.2f} s")
    return report
