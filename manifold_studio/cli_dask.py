"""The command line's ``--dask`` paths (``run ... --fit-sample M --dask``, ``apply ... --dask``):
the fit is local, on a sample drawn by Dask without materialising the data; the extension is
distributed (:mod:`manifold_studio.dask_extend`)."""
from __future__ import annotations

import time
import numpy as np

from manifold_studio.errors import DataError


def _select_columns(X, names: list[str] | None, train_names: list[str] | None, console):
    """Columns of ``X`` in the training order, by name when the training names are all present."""
    if train_names and names and list(names) != list(train_names) and set(train_names) <= set(names):
        console.note(f"columns matched to the training data by name ({', '.join(train_names)}).")
        return X[:, [names.index(c) for c in train_names]]
    return X


def _describe_client(client) -> str:
    workers = client.scheduler_info().get("workers", {})
    return f"{len(workers)} Dask worker(s) at {client.scheduler.address}"


def apply_on_dask(args, est, meta, console) -> tuple[str, int, float]:
    """Extend ``est`` to ``args.data`` on Dask and write ``args.out``: (what was written, rows, seconds)."""
    from manifold_studio.dask_extend import connect, extend_dask, read_input, write_output

    X, labels, names = read_input(args.data, args.label_column)
    train = meta.get("training_data") or {}
    X = _select_columns(X, names, train.get("feature_names"), console)
    client = connect(args.dask or None)
    try:
        console.note(f"running on {_describe_client(client)}")
        start = time.perf_counter()
        result = extend_dask(est, X)
        written = write_output(result, args.out, est.id, est.kind, labels, args.label_column)
        return written, int(result.shape[0]), time.perf_counter() - start
    finally:
        _close(client)


def run_on_dask(args, est, console) -> tuple[str, int, int, float]:
    """Fit ``est`` on ``--fit-sample`` rows drawn by Dask, extend to all rows on Dask, write
    ``--out`` (and ``--save-model``): (what was written, rows, sample size, seconds)."""
    from manifold_studio.dask_extend import connect, extend_dask, read_input, sample_rows, write_output

    if args.fit_sample is None:
        raise DataError("--dask fits on a sample and extends to all rows: give --fit-sample M.")
    if args.extend is not None:
        raise DataError("--extend does not apply with --dask: run 'apply --dask' on the other data.")
    X, labels, names = read_input(args.data, args.label_column)
    if est.requires_labels and labels is None:
        raise DataError(f"{est.id} needs labels: name the label column with --label-column.")
    client = connect(args.dask or None)
    try:
        console.note(f"running on {_describe_client(client)}")
        start = time.perf_counter()
        rows, Xs = sample_rows(X, args.fit_sample, args.sample_seed)
        ys = None if labels is None or not est.uses_labels() else np.asarray(labels[rows].compute())
        est.fit(Xs, ys)
        result = extend_dask(est, X)
        written = write_output(result, args.out, est.id, est.kind, labels, args.label_column)
        seconds = time.perf_counter() - start
    finally:
        _close(client)
    if args.save_model is not None:
        from manifold_studio.model_io import save_model

        save_model(est, args.save_model, data={"source": str(args.data), "feature_names": names,
                                               "n_samples": int(X.shape[0]), "n_features": int(X.shape[1])})
    return written, int(X.shape[0]), len(rows), seconds


def _close(client) -> None:
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None and type(cluster).__name__ == "LocalCluster":
        cluster.close()
