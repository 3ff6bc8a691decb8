"""Extend, cluster-assign and classify on Dask: data larger than one machine (optional extra).

``pip install "manifold-studio[dask]"`` brings dask (array, dataframe), distributed and pyarrow.
A fitted model is small and ``extend`` is sample-wise, so extending N rows is embarrassingly
parallel: :func:`extend_dask` maps the model over the row blocks of a ``dask.array`` (or a
``dask.dataframe``'s numeric columns) and returns a lazy dask array of the results
(coordinates, cluster labels or predicted classes), identical to a single-process ``extend``
of the same rows (to 1e-12; BLAS blocking aside, bit for bit).

The model travels **without pickle**: it is serialised with the project's own model format
(:func:`manifold_studio.files.model_file.model_bytes`, numpy arrays and JSON), the bytes are sent to
every worker once (``Client.scatter(..., broadcast=True)`` when a distributed client is active;
one shared graph value otherwise), and each worker process rebuilds the estimator once and keeps
it in a per-process cache. Workers need Manifold Studio and the model's plugin installed;
a missing plugin is reported by name.

Inputs (:func:`read_input`): Parquet files (a path or glob), ``.npy`` parts (a folder or glob;
read by the workers themselves through memory maps), CSV globs, Zarr arrays. Outputs
(:func:`write_output`): Parquet, a folder of ``.npy`` parts, one ``.npy`` (written block by block
into a memory map) or one CSV.
"""
from __future__ import annotations

import glob as globmod
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError, ManifoldStudioError
from manifold_studio.fileio.atomic import atomic_write
from manifold_studio.files.model_file import model_bytes, model_from_bytes
from manifold_studio.plugins.host import get_host
from manifold_studio.tables.readers import exact_floats
from manifold_studio.tables.result_table import escape_formula, result_header

INSTALL_HINT = 'pip install "manifold-studio[dask]"'
#: estimators rebuilt in this process, by the digest of their model bytes
_MODELS: dict[str, object] = {}


class MissingExtraError(ManifoldStudioError):
    """An optional extra is not installed (the message names the pip command)."""


def require_dask():
    """Import dask.array, dask.dataframe and distributed, or say how to install them."""
    import importlib.util

    try:
        import dask.array as da
        import dask.dataframe as dd
    except ImportError as exc:
        raise MissingExtraError(f"Running on Dask needs the optional extra: {INSTALL_HINT} "
                                f"({exc.name or exc} is not installed).") from None
    if importlib.util.find_spec("distributed") is None:
        raise MissingExtraError(f"Running on Dask needs the optional extra: {INSTALL_HINT} "
                                "(distributed is not installed).")
    return da, dd


def _estimator_for(blob: bytes, digest: str):
    est = _MODELS.get(digest)
    if est is None:
        est = _MODELS[digest] = model_from_bytes(blob, "the model sent to this worker")
    return est


def _extend_block(block, blob, digest, ndim, dtype):
    """One row block through the model (runs on the workers)."""
    X = np.asarray(block, dtype=np.float64)
    est = _estimator_for(blob, digest)
    if X.shape[0] == 0:
        shape = (0,) if ndim == 1 else (0, ndim)
        return np.empty(shape, dtype=dtype)
    return np.asarray(est.extend(X)).astype(dtype, copy=False)


def as_dask_array(X, columns=None):
    """A 2-D float dask array of the rows of ``X`` (dask array or dataframe: its numeric
    columns, or ``columns``), with one chunk across the columns."""
    da, dd = require_dask()
    if isinstance(X, dd.DataFrame):
        frame = X[list(columns)] if columns is not None else X.select_dtypes(include="number")
        if not len(frame.columns):
            raise DataError("The data frame has no numeric column to extend.")
        X = frame.to_dask_array(lengths=True)
    elif not isinstance(X, da.Array):
        X = da.from_array(np.asarray(X))
    if X.ndim != 2:
        raise DataError(f"Dask data must be 2-D (rows × columns); got {X.ndim} dimension(s).")
    return X.astype(np.float64).rechunk({1: -1})


def _client():
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def extend_dask(model, X, columns=None, blob: bytes | None = None):
    """A lazy dask array of ``model.extend`` over the rows of ``X`` (see the module docstring).
    ``blob``: the model file's bytes when the caller read them (sent to the workers as they are,
    instead of serialising the model again)."""

    X = as_dask_array(X, columns)
    n_features = int(getattr(model, "n_features_in_"))
    if X.shape[1] != n_features:
        raise DataError(f"The data have {X.shape[1]} column(s) but the model was fitted on {n_features}.")
    blob = model_bytes(model) if blob is None else blob
    digest = hashlib.sha256(blob).hexdigest()
    # the result's shape and type, from the model itself (no data computed)
    probe = np.asarray(model.extend(np.zeros((1, n_features))))
    ndim = 1 if probe.ndim == 1 else int(probe.shape[1])
    dtype = probe.dtype
    client = _client()
    payload = client.scatter(blob, broadcast=True, hash=False) if client is not None else blob
    if ndim == 1:
        return X.map_blocks(_extend_block, payload, digest, 1, dtype, dtype=dtype, drop_axis=1,
                            chunks=(X.chunks[0],))
    return X.map_blocks(_extend_block, payload, digest, ndim, dtype, dtype=dtype,
                        chunks=(X.chunks[0], (ndim,)))


# -- inputs ---------------------------------------------------------------------------------------

def _files(pattern: str) -> list[str]:
    path = Path(pattern)
    if path.is_dir():
        return sorted(str(p) for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    files = sorted(globmod.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
    if not files or not Path(files[0]).exists():
        raise DataError(f"No file matches {pattern}.")
    return files


#: rows per block when a large .npy part is cut for the workers
NPY_BLOCK_ROWS = 50_000


def _npy_rows(path: str, start: int, stop: int):
    """Rows start:stop of a .npy file, read through a memory map (on a worker)."""
    return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False)[start:stop], dtype=np.float64)


def read_input(source: str, label_column: str | None = None):
    """(dask array of the features, dask array of the labels or None, feature names or None)
    for Parquet, ``.npy`` parts, CSV or Zarr — nothing is read until computed."""
    table = read_table(source, label_column)
    return table.X, table.labels, table.names


@dataclass
class DaskTable:
    """A Dask input: the features ``X``, the labels, the feature names, and — in the blocks of
    ``X`` — the row ids (``id_name``: the id column's name, else ``row_id``) and the meta columns
    (the columns that are neither features, labels nor the id), as the in-memory reader gives
    them to an output."""
    X: object
    labels: object = None
    names: list[str] | None = None
    row_ids: object = None
    id_name: str = "row_id"
    metas: list[tuple[str, object]] = field(default_factory=list)


def read_table(source: str, label_column: str | None = None, id_column: str | None = None) -> DaskTable:
    """The features, labels, row ids and metas of Parquet, ``.npy`` parts, CSV or Zarr (lazy).
    Row ids: the ``id_column``'s values; else a single CSV/TSV file's line numbers (2, 3, ...), a
    single Parquet file's row numbers (1, 2, ...), the rows' positions (0, 1, ...) otherwise."""
    da, dd = require_dask()
    import dask

    files = _files(source)
    suffix = Path(files[0]).suffix.lower()
    if suffix == ".zarr" or source.rstrip("/").endswith(".zarr"):
        try:
            X = da.from_zarr(source.rstrip("/"))
        except ImportError:
            raise MissingExtraError(f"Reading Zarr needs the zarr package: {INSTALL_HINT}") from None
        X = as_dask_array(X)
        return DaskTable(X, row_ids=_positions(X, files, id_column))
    if suffix == ".npy":
        parts, width = [], None
        for f in files:
            if Path(f).suffix.lower() != ".npy":
                continue
            head = np.load(f, mmap_mode="r", allow_pickle=False)
            if head.ndim != 2:
                raise DataError(f"{Path(f).name} is a {head.ndim}-D array; every .npy part must be 2-D.")
            if width is not None and head.shape[1] != width:
                raise DataError(f"{Path(f).name} has {head.shape[1]} column(s) but the first part has {width}: "
                                "every part needs the same columns.")
            width = head.shape[1]
            for start in range(0, head.shape[0], NPY_BLOCK_ROWS):
                stop = min(start + NPY_BLOCK_ROWS, head.shape[0])
                parts.append(da.from_delayed(dask.delayed(_npy_rows)(f, start, stop), shape=(stop - start, width),
                                             dtype=np.float64))
        X = da.concatenate(parts).rechunk({1: -1})
        return DaskTable(X, row_ids=_positions(X, files, id_column))
    if suffix == ".parquet" or Path(source).is_dir():
        frame = dd.read_parquet(files if len(files) > 1 else files[0])
    elif suffix in (".csv", ".tsv", ".txt"):
        sep = _sniffed_separator(files[0], get_host())
        frame = dd.read_csv(files, sep=sep, **exact_floats())   # numbers to the last bit, as our reader
    else:
        raise DataError(f"Dask reads Parquet, .npy parts, CSV or Zarr; not {Path(files[0]).name}.")
    if label_column is not None and label_column not in frame.columns:
        raise DataError(f"{source} has no column '{label_column}': the columns are "
                        f"{', '.join(map(str, frame.columns))}.")
    if id_column is not None and id_column not in frame.columns:
        raise DataError(f"{source} has no column '{id_column}' (--id-column): the columns are "
                        f"{', '.join(map(str, frame.columns))}.")
    names = [str(c) for c in frame._meta.select_dtypes(include="number").columns
             if c not in (label_column, id_column)]
    if not names:
        raise DataError(f"{source} has no numeric column to use as features.")
    # one delayed object per partition: the features and the labels are cut from the same pieces
    # (dask may otherwise fuse small files differently for different column selections)
    parts = frame.to_delayed(optimize_graph=True)
    lengths = dask.compute(*[dask.delayed(len)(p) for p in parts])
    X = da.concatenate([da.from_delayed(dask.delayed(_frame_features)(p, names), shape=(n, len(names)),
                                        dtype=np.float64) for p, n in zip(parts, lengths)])

    def column(name):
        dtype = frame._meta[name].to_numpy().dtype
        return da.concatenate([da.from_delayed(dask.delayed(_frame_column)(p, name), shape=(n,), dtype=dtype)
                               for p, n in zip(parts, lengths)])

    labels = None if label_column is None else column(label_column)
    metas = [(str(c), column(c)) for c in frame.columns if str(c) not in names and c not in (label_column, id_column)]
    if id_column is not None:
        ids, id_name = column(id_column), str(id_column)
    else:
        ids, id_name = _positions(X, files, None), "row_id"
    return DaskTable(X.rechunk({1: -1}), labels, names, ids, id_name, metas)


def _positions(X, files: list[str], id_column):
    """Row ids of an input without an id column, in the blocks of ``X`` (:func:`read_table`)."""
    if id_column is not None:
        raise DataError(f"--id-column {id_column}: {Path(files[0]).name} is an array without named columns.")
    da, _ = require_dask()
    suffix = Path(files[0]).suffix.lower() if len(files) == 1 else ""
    start = 2 if suffix in (".csv", ".tsv", ".txt") else 1 if suffix == ".parquet" else 0
    return da.arange(start, start + int(X.shape[0]), chunks=(X.chunks[0],))


def _frame_features(frame, names):
    return frame[names].to_numpy(dtype=np.float64)


def _frame_column(frame, name):
    return frame[name].to_numpy()


def _sniffed_separator(path: str, host) -> str:
    """The delimiter the CSV loader plugin would use for this file (its preview's sniffing)."""
    loader = host.loader_for(Path(path))
    preview = getattr(loader, "preview", None)
    name = preview(path, max_rows=5).delimiter if callable(preview) else "comma"
    return {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|"}.get(name, r"\s+")


# -- outputs --------------------------------------------------------------------------------------

def write_output(result, out: str, prefix: str = "x", kind: str = "embedding", labels=None,
                 label_name: str | None = None, escape_formulas: bool = True, row_ids=None,
                 id_name: str = "row_id", metas=()) -> str:
    """Compute ``result`` into ``out``: ``.parquet`` (a folder of Parquet parts), ``.feather`` /
    ``.arrow`` (one Arrow IPC file, a record batch per partition, replaced atomically), ``.npy`` (one
    file, written block by block into a memory map), ``.csv`` (one file) or a folder (``.npy``
    parts). ``row_ids`` (a dask array): the first column (named ``id_name``) of a CSV or Parquet
    output; ``metas`` (``[(name, dask array)]``): the columns after it, as the in-memory path
    writes them. Returns what was written."""
    da, dd = require_dask()

    if out == "-":
        raise DataError("Results computed on Dask are written to files: give --out a .parquet, .feather, .npy or .csv "
                        "file, or a folder for .npy parts.")
    target = Path(out)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise DataError(f"Cannot write {out}: the folder {parent} does not exist.")
    import os

    if not os.access(parent, os.W_OK) or (target.is_dir() and not os.access(target, os.W_OK)):
        raise DataError(f"Cannot write {out}: the folder {target if target.is_dir() else parent} is not writable.")
    header = result_header(np.empty((0,) + tuple(result.shape[1:]), dtype=result.dtype), prefix, kind)
    suffix = target.suffix.lower()
    if suffix == ".npy":
        _store_npy(result, target)
        return f"{target} ({_shape(result.shape)})"
    columns = result if result.ndim == 2 else result[:, None]
    frame = dd.from_dask_array(columns, columns=header)
    if labels is not None:
        frame[label_name or "label"] = dd.from_dask_array(labels)
    rest, front, text = list(frame.columns), [], []
    if row_ids is not None:
        name = id_name
        while name in rest:
            name += "_"
        frame[name] = dd.from_dask_array(row_ids)
        front.append(name)
        if np.dtype(row_ids.dtype).kind in "OUS":
            text.append(name)
    for meta_name, values in metas:
        if meta_name in rest or meta_name in front:
            continue  # a result column of that name wins (as in memory)
        frame[meta_name] = dd.from_dask_array(values)
        front.append(meta_name)
        if np.dtype(values.dtype).kind in "OUS":
            text.append(meta_name)
    if front:
        frame = frame[[*front, *rest]]
    if suffix == ".parquet":
        frame.to_parquet(str(target), write_index=False)
        return f"{target} (Parquet parts)"
    if suffix in (".feather", ".arrow"):
        _store_arrow(frame, target)
        return str(target)
    if suffix in (".csv", ".tsv"):
        name = label_name or "label"
        if escape_formulas and labels is not None and np.dtype(labels.dtype).kind in "OUS":
            # text labels that a spreadsheet would run as formulas get a leading quote
            frame[name] = frame[name].map(lambda v: escape_formula(str(v)), meta=(name, "object"))
        for meta_name in text if escape_formulas else ():
            frame[meta_name] = frame[meta_name].map(_escaped_cell, meta=(meta_name, "object"))
        if escape_formulas and name != escape_formula(name):
            frame = frame.rename(columns={name: escape_formula(name)})
        frame.to_csv(str(target), single_file=True, index=False, sep="\t" if suffix == ".tsv" else ",")
        return str(target)
    target.mkdir(parents=True, exist_ok=True)
    da.to_npy_stack(str(target), result, axis=0)
    return f"{target}/ (.npy parts)"


def _store_arrow(frame, target: Path) -> None:
    """Write a Dask frame to one Arrow IPC file, a partition at a time (memory bounded by a
    partition), through a temporary file in the same folder that replaces ``target`` at the end."""
    import pyarrow as pa

    def emit(fh):
        writer = schema = None
        for part in frame.to_delayed():
            table = pa.Table.from_pandas(part.compute(), preserve_index=False)
            if writer is None:
                schema = table.schema.remove_metadata()
                writer = pa.ipc.new_file(fh, schema)
            writer.write_table(table.replace_schema_metadata(None).cast(schema))
        if writer is not None:
            writer.close()

    atomic_write(str(target), emit, binary=True)


def _escaped_cell(value):
    """A text cell as the CSV writer escapes it; a missing one (None, NaN, pandas' NA) stays missing."""
    import pandas as pd

    return value if pd.isna(value) else escape_formula(str(value))


def _store_npy(result, target: Path) -> None:
    """Write the blocks as they are computed (in parallel) into one .npy memory map, here: the
    workers' processes cannot write into this process's map. A failure leaves no file."""
    import os
    import tempfile

    if any(np.isnan(c) for c in result.chunks[0]):
        result = result.compute_chunk_sizes()
    blocks = result.to_delayed().ravel().tolist()
    offsets = np.concatenate([[0], np.cumsum(result.chunks[0])]).astype(int)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent or ".")
    os.close(fd)
    try:
        mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=result.dtype, shape=result.shape)
        client = _client()
        if client is not None:
            from distributed import as_completed

            futures = client.compute(blocks)
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                i = index[fut.key]
                mm[offsets[i]:offsets[i + 1]] = fut.result()
                fut.release()
        else:
            import dask

            for i, block in enumerate(blocks):
                mm[offsets[i]:offsets[i + 1]] = dask.compute(block)[0]
        mm.flush()
        del mm
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _shape(shape) -> str:
    return " × ".join(f"{int(s):,}" for s in shape)


def sample_rows(X, m: int, random_state=0) -> tuple[np.ndarray, np.ndarray]:
    """(sorted row indices, their rows computed) of ``m`` random rows of a dask array, drawn
    without materialising the rest."""
    n = int(X.shape[0])
    if not 0 < m <= n:
        raise DataError(f"--fit-sample {m} is not between 1 and the {n:,} rows of the data.")
    rows = np.sort(np.random.default_rng(random_state).choice(n, size=m, replace=False))
    return rows, np.asarray(X[rows].compute(), dtype=np.float64)


def connect(address: str | None = None, timeout: float = 5.0):
    """A distributed Client: to ``address`` (a scheduler), or a LocalCluster with one worker per
    core. A scheduler that does not answer gives a clear message within ``timeout`` seconds."""
    require_dask()
    from distributed import Client, LocalCluster

    if address:
        try:
            return Client(address, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as exc:
            raise DataError(f"The Dask scheduler at {address} does not answer ({exc}); check the address "
                            "and that the scheduler runs.") from None
    import os

    cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster)
