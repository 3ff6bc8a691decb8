"""Fitting and extending an estimator, as pure functions (Qt-free): what a run does, on a worker
thread in the window, in a separate process (:mod:`manifold_studio.session.isolated_fit`) or
directly in a script. They touch no session state."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError, error_message
from manifold_studio.session.records import FitOutcome


def fit_estimator(est, X: np.ndarray, y=None, progress=None) -> FitOutcome:
    """Fit an (unfitted, parameterised) estimator and read it out. Pure: touches no session state."""
    progress = as_progress(progress)
    start = time.perf_counter()
    est.fit(X, y, progress)
    embedding = getattr(est, "embedding_", None)
    labels = getattr(est, "labels_", None)
    if labels is None and getattr(est, "kind", "") == "classification":
        labels = est.predict(X, progress)
    try:
        summary = dict(est.result_summary())
    except Exception as exc:  # noqa: BLE001 - a summary must never lose a finished fit
        summary = {"summary_error": error_message(exc)}
    return FitOutcome(est, None if embedding is None else np.asarray(embedding),
                      None if labels is None else np.asarray(labels), summary,
                      time.perf_counter() - start)


@dataclass
class ExtendResult:
    """What an extension returns (to the window, a script, the command line)."""

    values: np.ndarray
    time_s: float
    dataset: object = None           #: a data set loaded by the job (None: an existing one)
    rows: np.ndarray | None = None
    #: the file's name when its rows were too many to keep as a data set
    label: str = ""
    #: (correct, total) of a classifier against the file's labels
    correct: tuple[int, int] | None = None
    notes: list[str] | None = None


def check_features(estimator, X, what: str = "The data") -> None:
    """``X`` has the columns the model was fitted on, or a DataError names both counts."""
    expected = getattr(estimator, "n_features_in_", None)
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise DataError(f"{what} must be a table of rows and columns (a 2-D array); got shape {shape}.")
    if expected is not None and shape[1] != expected:
        raise DataError(f"{what} has {shape[1]} column(s) but the model was fitted on {expected}: "
                        "extend it to data with the same columns as the training data.")


def extend_estimator(estimator, X, progress=None, what: str = "The data") -> np.ndarray:
    """Extend a fitted estimator to ``X`` (chunked, with progress and cancel). Pure; the one
    extension path of the window, the command line and the API. A scipy.sparse matrix is passed
    as it is (the methods that take sparse input extend it without densifying; the others say
    so); anything else becomes a float array."""
    if not _is_sparse(X):
        X = np.asarray(X, dtype=float)
    check_features(estimator, X, what)
    return np.asarray(estimator.extend(X, progress=progress))


def _is_sparse(X) -> bool:
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a core dependency
        return False
    return sp.issparse(X)
