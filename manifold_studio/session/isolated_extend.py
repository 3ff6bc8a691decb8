"""Extending a fitted third-party model in a worker process (Qt-free): what ``run --extend``,
``run --fit-sample`` and the window's Extend panel do with a model that holds a third-party
algorithm or preparation step (or was fitted in a worker process), so a plugin's extension that
crashes, exits or hangs ends only the worker (reported with its signal or exit code), never the
command or the window.

::

    values = extend_model(est, X_new, progress, isolated=extends_in_worker(est))   # the one path
    values = extend_in_subprocess(est, X_new, progress, name="mystep + pca")     # always a worker

The model travels as its pickle-free model bytes, the rows as ``.npy`` / sparse ``.npz``; a
pipeline receives the matrix of its training columns in the training order
(``Pipeline.input_matrix``, computed by the caller without plugin code).
"""
from __future__ import annotations

import inspect
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.pipeline import PIPELINE_ID
from manifold_studio.files.model_file import model_bytes, model_from_bytes
from manifold_studio.session.fitting import check_features, extend_estimator
from manifold_studio.session.isolated_fit import (
    PipeProgress,
    estimator_ids,
    report_outcome,
    run_supervised,
    save_inputs,
    third_party_parts,
)

__all__ = ["WorkerModel", "extend_in_subprocess", "extend_model", "extends_in_worker", "extension_name"]

#: what a dead extension worker could not harm, in the window
WINDOW_UNAFFECTED = "The window, your data and your runs are unaffected."


#: the methods of a fitted model a worker may run on new rows: ``extend``, the spectral embedding
#: of new points of a spectral clustering (``extend_embedding``, the extension-quality experiment's),
#: a classifier's scores, a decoder's ``inverse_transform`` (its input: map positions, not data
#: rows) and probabilistic PCA's ``impute``
METHODS = ("extend", "extend_embedding", "predict", "decision_function", "predict_proba", "transform",
           "inverse_transform", "impute")
#: those whose input is not rows of the training columns (not matched to them)
_CODES_IN = ("inverse_transform",)


def _method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"Unknown extension {method!r}; allowed: {', '.join(METHODS)}.")
    return method


def _call(est, method: str, X, progress):
    """``est.<method>(X)``, with ``progress=`` when the method takes it."""
    fn = getattr(est, _method(method))
    try:
        takes = "progress" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes = False
    return fn(X, progress=progress) if takes else fn(X)


def _child(conn, sys_path: list[str], model_path: str, x_path: str, method: str = "extend") -> None:
    sys.path[:] = sys_path

    def work():
        est = model_from_bytes(Path(model_path).read_bytes(), "the model sent to the worker process")
        X = sp.load_npz(x_path) if x_path.endswith(".npz") else np.load(x_path, allow_pickle=False)
        return (np.asarray(_call(est, method, X, PipeProgress(conn))),)

    report_outcome(conn, work, stage="extension")


def extend_in_subprocess(est, X, progress=None, *, name: str = "the model", unaffected: str = "",
                         method: str = "extend") -> np.ndarray:
    """``est.extend(X)`` (or another of :data:`METHODS`) in a spawned worker process; returns the
    values. A worker that dies or fails raises PluginProcessError naming how (signal, exit code, error)."""
    with tempfile.TemporaryDirectory(prefix="ms-extend-") as tmp:
        model_path = Path(tmp) / "model.msmodel"
        model_path.write_bytes(model_bytes(est))
        x_path, _ = save_inputs(tmp, X)
        (values,) = run_supervised(_child, (list(sys.path), str(model_path), x_path, _method(method)), progress,
                                   name, f"manifold-studio extend {name}", unaffected=unaffected, data_errors=True)
    return values


def extends_in_worker(est, fitted_in_worker: bool = False) -> bool:
    """Whether the extension of the fitted ``est`` runs in a worker process: when it holds a
    third-party algorithm or preparation step, or when its fit ran in one (``fitted_in_worker``:
    a run's ``meta["worker_process"]``)."""
    return bool(fitted_in_worker) or bool(third_party_parts(estimator_ids(est)))


def extension_name(est) -> str:
    """The extension in messages, naming its parts and the third-party ones among them."""
    ids = [i for i in estimator_ids(est) if i]
    parts = third_party_parts(ids)
    return (f"the extension by {' → '.join(ids) or 'the model'}"
            + (f" (third-party: {', '.join(parts)})" if parts else ""))


def extend_model(est, X, progress=None, *, isolated: bool, what: str = "The data", name: str | None = None,
                 unaffected: str = WINDOW_UNAFFECTED, method: str = "extend") -> np.ndarray:
    """The one extension of a fitted model whoever asks (the window's Extend panel, ``run --extend``,
    ``run --fit-sample``, ``Session.extend``): :func:`~manifold_studio.session.fitting.extend_estimator`
    in this process, or with ``isolated`` (see :func:`extends_in_worker`) the same in a worker
    process: a pipeline's columns are matched here (``input_matrix``, no plugin code), its steps
    and algorithm run there. A worker that dies raises PluginProcessError naming ``name`` (default:
    the model's parts) and the signal or exit code, then ``unaffected``. ``method``:
    ``"extend_embedding"`` gives a spectral clustering's embedding of the new points instead."""
    if not isolated and _method(method) == "extend":
        return extend_estimator(est, X, progress, what=what)
    if method in _CODES_IN:
        X = np.asarray(X, dtype=float)
    elif getattr(est, "id", "") == PIPELINE_ID:
        X = est.input_matrix(X)
    else:
        X = X if is_sparse(X) else np.asarray(X, dtype=float)
        check_features(est, X, what)
    if not isolated:
        return np.asarray(_call(est, method, X, progress))
    return extend_in_subprocess(est, X, progress, name=name or extension_name(est), unaffected=unaffected,
                                method=method)


class WorkerModel:
    """A fitted model whose :data:`METHODS` run in worker processes (each call by
    :func:`extend_model` with ``isolated=True``): what the window hands to a task that would call
    a third-party model's ``predict``, ``decision_function``, ``extend``, ``inverse_transform`` or
    ``impute`` (decision regions, projected cluster centres, imputation). Its fitted attributes
    (``classes_``, ``embedding_``, ...) are the model's, read here. ``describe`` names the work
    in a dead worker's message."""

    def __init__(self, est, *, name: str | None = None, unaffected: str = WINDOW_UNAFFECTED):
        self.model, self._name, self._unaffected = est, name, unaffected

    def __getattr__(self, attr):
        value = getattr(self.__dict__["model"], attr)   # AttributeError as the model gives it
        if not callable(value):
            return value
        if attr not in METHODS:   # (never its other methods here: they would run its code in this process)
            raise AttributeError(f"{attr} of a model that runs in a worker process is not called here "
                                 f"(a worker runs {', '.join(METHODS)}).")
        return lambda X, progress=None: extend_model(self.model, X, progress, isolated=True, method=attr,
                                                     name=self._name, unaffected=self._unaffected)
