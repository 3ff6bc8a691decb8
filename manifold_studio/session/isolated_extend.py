"""Extending a fitted third-party model in a worker process (Qt-free): what ``run --extend``
does after an isolated fit, so a plugin's extension that crashes, exits or hangs ends only the
worker (reported with its signal or exit code), never the command.

::

    values = extend_in_subprocess(est, X_new, progress, name="mystep + pca")

The model travels as its pickle-free model bytes, the rows as ``.npy`` / sparse ``.npz``; a
pipeline receives the matrix of its training columns in the training order
(``Pipeline.input_matrix``, computed by the caller without plugin code).
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from manifold_studio.files.model_file import model_bytes, model_from_bytes
from manifold_studio.session.isolated_fit import PipeProgress, report_outcome, run_supervised, save_inputs

__all__ = ["extend_in_subprocess"]


def _child(conn, sys_path: list[str], model_path: str, x_path: str) -> None:
    sys.path[:] = sys_path

    def work():
        est = model_from_bytes(Path(model_path).read_bytes(), "the model sent to the worker process")
        X = sp.load_npz(x_path) if x_path.endswith(".npz") else np.load(x_path, allow_pickle=False)
        return (np.asarray(est.extend(X, progress=PipeProgress(conn))),)

    report_outcome(conn, work, stage="extension")


def extend_in_subprocess(est, X, progress=None, *, name: str = "the model", unaffected: str = "") -> np.ndarray:
    """``est.extend(X)`` in a spawned worker process; returns the values. A worker that dies or
    fails raises PluginProcessError naming how (signal, exit code, error)."""
    with tempfile.TemporaryDirectory(prefix="ms-extend-") as tmp:
        model_path = Path(tmp) / "model.msmodel"
        model_path.write_bytes(model_bytes(est))
        x_path, _ = save_inputs(tmp, X)
        (values,) = run_supervised(_child, (list(sys.path), str(model_path), x_path), progress, name,
                                   f"manifold-studio extend {name}", unaffected=unaffected, data_errors=True)
    return values
