"""The command line's ``--dask`` paths (``run ... --fit-sample M --dask``, ``apply ... --dask``):
the fit is local, on a sample drawn by Dask without materialising the data; the extension is
distributed (:mod:`manifold_studio.extend.dask_extend`)."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import name_list
from manifold_studio.extend.dask_extend import (
    connect,
    extend_dask,
    read_table,
    sample_rows,
    write_output,
)
from manifold_studio.cli.console import UsageError
from manifold_studio.extend.out_of_core import match_columns
from manifold_studio.files.model_file import model_from_bytes, save_model


def _describe_client(client) -> str:
    workers = client.scheduler_info().get("workers", {})
    return f"{len(workers)} Dask worker(s) at {client.scheduler.address}"


def refuse_chunk_options(args) -> None:
    """--data-option, --chunk-rows and --role configure the local reader, not Dask's: refuse them
    (--id-column applies: :func:`_write`)."""
    given = [flag for flag, value in (("--data-option", getattr(args, "data_option", None)),
                                      ("--chunk-rows", getattr(args, "chunk_rows", None)),
                                      ("--role", getattr(args, "role", None))) if value]
    if given:
        raise UsageError(f"{' and '.join(given)} do not apply with --dask (Dask reads the data in its own "
                         f"blocks: CSV/TSV with a header, .npy, Parquet); leave {'them' if len(given) > 1 else 'it'} out")


def apply_on_dask(args, model_blob: bytes, console) -> tuple[str, int, float]:
    """Extend the model (``model_blob``: the model file's bytes, read once) to ``args.data`` on
    Dask and write ``args.out``: (what was written, rows, seconds)."""
    refuse_chunk_options(args)
    est, meta = model_from_bytes(model_blob, Path(args.model).name, with_metadata=True)
    table = read_table(args.data, args.label_column, getattr(args, "id_column", None))
    X, names = table.X, table.names
    train = meta.get("training_data") or {}
    if callable(getattr(est, "prepare", None)):  # a pipeline: its training columns, matched by name
        X = X[:, pipeline_columns(est, names, args.data)]
        idx = None
    else:
        idx = match_columns(names, train.get("feature_names"))
    if idx is not None:
        console.note(f"columns matched to the training data by name ({name_list(train['feature_names'], 12)}).")
        X = X[:, idx]
    client = connect(args.dask or None)
    try:
        console.note(f"running on {_describe_client(client)}")
        start = time.perf_counter()
        result = extend_dask(est, X, blob=model_blob)
        written = _write(args, est, result, table)
        return written, int(result.shape[0]), time.perf_counter() - start
    finally:
        _close(client)


def run_on_dask(args, est, console) -> tuple[str, int, int, float]:
    """Fit ``est`` on ``--fit-sample`` rows drawn by Dask, extend to all rows on Dask, write
    ``--out`` (and ``--save-model``): (what was written, rows, sample size, seconds)."""

    refuse_chunk_options(args)
    if args.fit_sample is None:
        raise DataError("--dask fits on a sample and extends to all rows: give --fit-sample M.")
    if args.extend is not None:
        raise DataError("--extend does not apply with --dask: run 'apply --dask' on the other data.")
    table = read_table(args.data, args.label_column, getattr(args, "id_column", None))
    X, labels, names = table.X, table.labels, table.names
    if est.requires_labels and labels is None:
        raise DataError(f"{est.id} needs labels: name the label column with --label-column.")
    client = connect(args.dask or None)
    try:
        console.note(f"running on {_describe_client(client)}")
        start = time.perf_counter()
        rows, Xs = sample_rows(X, args.fit_sample, args.sample_seed)
        uses = getattr(getattr(est, "final", None) or est, "uses_labels", None)
        wanted = uses() if callable(uses) else est.requires_labels
        ys = None if labels is None or not wanted else np.asarray(labels[rows].compute())
        est.fit(Xs, ys, **({"columns": names} if callable(getattr(est, "prepare", None)) else {}))
        result = extend_dask(est, X)
        written = _write(args, est, result, table)
        seconds = time.perf_counter() - start
    finally:
        _close(client)
    if args.save_model is not None:
        save_model(est, args.save_model, data={"source": str(args.data), "feature_names": names,
                                               "n_samples": int(X.shape[0]), "n_features": int(X.shape[1])})
    return written, int(X.shape[0]), len(rows), seconds


def _write(args, est, result, table) -> str:
    """Write ``--out`` as the in-memory path does: the row ids (the id column's values, or the
    table's row numbers), the meta columns (unless --no-metas), the result, the labels."""
    return write_output(result, args.out, _prefix(est), est.kind, table.labels, args.label_column,
                        args.escape_formulas, table.row_ids, table.id_name,
                        table.metas if getattr(args, "metas", True) else ())


def pipeline_columns(pipe, names: list[str] | None, source: str) -> list[int]:
    """Where each of a pipeline's training columns is among the numeric columns ``names`` Dask
    read; a missing column is refused naming it."""
    have = list(names or [])
    missing = [c for c in pipe.columns_in_ if c not in have]
    if missing:
        raise DataError(f"{source} lacks column {', '.join(repr(m) for m in missing)}, which the pipeline was "
                        f"fitted with (its numeric columns are: {', '.join(repr(h) for h in have) or 'none'}).")
    return [have.index(c) for c in pipe.columns_in_]


def _prefix(est) -> str:
    """The output columns' prefix: the algorithm's id (a pipeline's final algorithm)."""
    final = getattr(est, "final", None)
    return final.id if final is not None else est.id


def _close(client) -> None:
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None and type(cluster).__name__ == "LocalCluster":
        cluster.close()
