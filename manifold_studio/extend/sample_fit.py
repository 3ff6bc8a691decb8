"""Fit on a sample, extend to all: how a user maps far more points than an n x n matrix allows.

Qt-free. :func:`fit_on_sample` fits a fresh copy of an estimator on ``m`` randomly chosen rows
of ``X`` and extends the fitted model (Nyström for the spectral methods, the natural extension
for the others) to every other row, in chunks with progress and cancel. The cost of the
spectral methods drops from O(N^2) to O(N m): a million points with m = 5,000 is routine.

    res = fit_on_sample(ms.get_algorithm("isomap"), X, 5000, random_state=0, progress=p)
    res.output            # (N, n_components) coordinates (or (N,) labels for clustering)
    res.sample_indices    # the rows that were fitted (sorted); res.fitted_mask as booleans
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.checks import check_data, check_random_state, check_sparse_data, is_sparse
from manifold_studio.algorithms.pipeline import clone_estimator
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.errors import DataError

#: rows extended per call of ``estimator.extend`` (bounds the temporary copy of the rows)
EXTEND_BLOCK = 200_000

__all__ = ["SampleFitResult", "fit_on_sample", "clone_estimator"]


@dataclass
class SampleFitResult:
    """Outcome of :func:`fit_on_sample`."""

    estimator: object              #: the estimator fitted on the sample
    output: np.ndarray             #: (N, k) coordinates or (N,) labels for every row of X
    sample_indices: np.ndarray     #: sorted indices of the fitted rows
    fit_time: float = 0.0          #: seconds spent fitting the sample
    extend_time: float = 0.0       #: seconds spent extending to the other rows

    @property
    def n_total(self) -> int:
        return int(self.output.shape[0])

    @property
    def fitted_mask(self) -> np.ndarray:
        mask = np.zeros(self.n_total, dtype=bool)
        mask[self.sample_indices] = True
        return mask

    def summary(self) -> dict:
        return {"n_total": self.n_total, "n_fitted": int(self.sample_indices.size),
                "fit_time_s": round(self.fit_time, 4), "extend_time_s": round(self.extend_time, 4)}


def _training_output(est) -> np.ndarray:
    if est.kind == "embedding":
        return np.asarray(est.embedding_)
    if hasattr(est, "labels_"):
        return np.asarray(est.labels_)
    return None


def fit_on_sample(estimator, X, n_samples: int, *, y=None, random_state=None, progress=None,
                  fit_share: float = 0.3, clone: bool = True, fit=None, columns=None,
                  distances: bool = False, extend=None) -> SampleFitResult:
    """Fit on ``n_samples`` random rows of X, extend to all rows; see the module docstring.

    ``fit_share`` is the part of the progress bar given to the fit. ``clone=False`` fits the
    given estimator itself instead of a fresh copy. ``y`` is needed for classifiers only.
    ``fit(X, y, progress)``, if given, does the fitting and returns the fitted estimator (the
    command line fits a third-party plugin in a worker process this way); ``extend(est, rows,
    progress)``, if given, extends the fitted estimator to a block of rows and returns the values
    (a third-party model extends in a worker process this way:
    :func:`manifold_studio.session.isolated_extend.extend_model`). A pipeline
    (:func:`manifold_studio.make_pipeline`) is fitted with the column names ``columns``, and X may
    hold missing values (NaN) for its preparation steps to fill. ``distances``: X is the square
    N x N distance matrix of a method with metric='precomputed': the fit gets the m x m distances
    between the sampled rows, the extension each other row's distances to them.
    """
    progress = as_progress(progress)
    is_pipeline = callable(getattr(estimator, "prepare", None))
    # sparse rows (an .h5ad or .mtx file) stay sparse: the method says whether it takes them
    X = check_sparse_data(X, min_samples=1) if is_sparse(X) else check_data(X, min_samples=1, allow_nan=is_pipeline)
    N = X.shape[0]
    m = int(n_samples)
    if m < 1:
        raise DataError(f"The sample size must be at least 1; got {n_samples}.")
    m = min(m, N)
    rng = check_random_state(random_state)
    idx = np.sort(rng.choice(N, size=m, replace=False)) if m < N else np.arange(N)
    est = clone_estimator(estimator) if clone else estimator
    progress.checkpoint(0.0, f"Fitting on a sample of {m:,} of {N:,} points")
    t0 = time.perf_counter()
    y_fit = None if y is None else np.asarray(y)[idx]
    fit_progress = SubProgress(progress, 0.0, fit_share, "Fit: ")
    X_fit = X[np.ix_(idx, idx)] if distances else X[idx]
    if fit is None:
        est.fit(X_fit, y_fit, progress=fit_progress, **({"columns": columns} if is_pipeline else {}))
    else:
        est = fit(X_fit, y_fit, fit_progress)
    fit_time = time.perf_counter() - t0

    t0 = time.perf_counter()
    train = _training_output(est)
    rest_mask = np.ones(N, dtype=bool)
    out = None
    if train is not None:
        out = np.empty((N,) + train.shape[1:], dtype=train.dtype)
        out[idx] = train
        rest_mask[idx] = False
        if train.dtype.kind == "f" and train.ndim == 2:
            # rows the fit left without coordinates (e.g. outside Isomap's largest component)
            rest_mask[idx[np.isnan(train).any(axis=1)]] = True
    rest = np.flatnonzero(rest_mask)
    n_rest = rest.size
    sub = SubProgress(progress, fit_share, 1.0, "")
    for start in range(0, n_rest, EXTEND_BLOCK):
        stop = min(n_rest, start + EXTEND_BLOCK)
        block = X[np.ix_(rest[start:stop], idx)] if distances else X[rest[start:stop]]
        block_progress = SubProgress(sub, start / max(n_rest, 1), stop / max(n_rest, 1),
                                     f"Extending to {N:,} points: ")
        part = (est.extend(block, progress=block_progress) if extend is None
                else extend(est, block, block_progress))
        part = np.asarray(part)
        if out is None:
            out = np.empty((N,) + part.shape[1:], dtype=part.dtype)
        out[rest[start:stop]] = part
    progress.checkpoint(1.0, f"Extended to {N:,} points")
    return SampleFitResult(est, out, idx, fit_time, time.perf_counter() - t0)
