"""Fitting and extending an estimator, as pure functions (Qt-free): what a run does, on a worker
thread in the window, in a separate process (:mod:`manifold_studio.session.isolated_fit`) or
directly in a script. They touch no session state."""
from __future__ import annotations

import time

import numpy as np

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import error_message
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


def extend_estimator(estimator, X: np.ndarray, progress=None) -> np.ndarray:
    """Extend a fitted estimator to ``X`` (chunked, with progress and cancel). Pure."""
    return np.asarray(estimator.extend(X, progress=progress))
