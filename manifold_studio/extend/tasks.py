"""Qt-free tasks behind the GUI's out-of-sample tools (extend to a file, hold-out, fit on a
sample, extension quality report). Extending a run to a loaded data set is the session's spec
(:func:`manifold_studio.session.lifecycle.prepare_extension`); every path extends through
:func:`manifold_studio.session.isolated_extend.extend_model` (in a worker process for a model
with a third-party part).

Nothing here imports Qt: each function is a plain callable taking ``progress=`` that the GUI
hands to a worker thread (``window.start_job``) and that a script or a test can call directly.
The GUI only builds the arguments and draws what comes back.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from manifold_studio import load_data
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError, error_message
from manifold_studio.extend.out_of_core import extend_source
from manifold_studio.extend.quality import extension_method, extension_quality
from manifold_studio.extend.sample_fit import fit_on_sample
from manifold_studio.extend.isolated_apply import model_ids
from manifold_studio.files.model_file import load_model_with_metadata, read_metadata
from manifold_studio.plugins.host import get_host
from manifold_studio.session.fitting import ExtendResult
from manifold_studio.session.isolated_extend import extend_model
from manifold_studio.session.isolated_fit import fit_estimator_in_subprocess, third_party_parts
from manifold_studio.session.records import FitOutcome
from manifold_studio.distance_matrix import read_distances_to

__all__ = ["holdout_split", "sample_fit_task", "load_and_extend", "load_distances_and_extend", "ExtendResult",
           "quality_report_task", "mean_ci", "matrix_megabytes", "apply_model_to_file"]


# -- splits -----------------------------------------------------------------------------------

def holdout_split(n: int, fraction: float, seed=None) -> tuple[np.ndarray, np.ndarray]:
    """Random (train_rows, heldout_rows), both sorted, holding out ``round(fraction * n)`` rows
    (at least 1, and at least 2 rows left to train on)."""
    n = int(n)
    if not 0.0 < float(fraction) < 1.0:
        raise DataError(f"The held-out fraction must be between 0 and 1; got {fraction}.")
    k = int(round(float(fraction) * n))
    k = min(max(k, 1), n - 2)
    if k < 1:
        raise DataError(f"{n} points are too few to hold some out (at least 3 are needed).")
    perm = check_random_state(seed).permutation(n)
    return np.sort(perm[k:]), np.sort(perm[:k])


def matrix_megabytes(n: int) -> float:
    """Memory of one dense n x n float64 matrix, in MB (what a full spectral fit needs)."""
    return 8.0 * float(n) * float(n) / 1e6


# -- fit on a sample ----------------------------------------------------------------------------

def sample_fit_of(session, run, n_samples: int, random_state=None, *, isolated: bool = False,
                  in_worker: bool | None = None, unaffected: str | None = None):
    """The task ``task(progress=None) -> FitOutcome`` of ``run`` fitted on ``n_samples`` random rows
    of its data and extended to all (the window's Fit on a sample and ``run --fit-sample``): the
    session's fit spec of the run (its estimator with its chain, X and y) handed to
    :func:`sample_fit_task`. ``isolated``: fit in a worker process and extend in another (the spec
    also isolates a chain with a third-party part); ``in_worker``: decided by the caller instead
    (the command line, whose ``--in-process`` opts out)."""
    spec = session.fit_task(run, isolated=isolated)
    in_worker = spec.in_worker if in_worker is None else in_worker
    distances = bool(session.dataset(run.dataset_name).distance_matrix) and run.source_run is None

    def task(progress=None) -> FitOutcome:
        return sample_fit_task(None, {}, spec.X, n_samples, spec.y, random_state, progress, distances,
                               estimator=spec.estimator, isolated=in_worker, unaffected=unaffected)
    return task


def sample_fit_task(algorithm_cls, params: dict, X: np.ndarray, n_samples: int, y=None,
                    random_state=None, progress=None, distances: bool = False, *, estimator=None,
                    isolated: bool = False, unaffected: str | None = None) -> FitOutcome:
    """Fit on ``n_samples`` random rows of ``X`` and extend to all rows (a FitOutcome for the
    whole data set). ``meta["fitted_rows"]`` lists the rows that were fitted. ``distances``: X is a
    square distance matrix (see :func:`~manifold_studio.extend.sample_fit.fit_on_sample`).
    ``estimator``: the unfitted estimator (e.g. a run's chain and algorithm) instead of
    ``algorithm_cls(**params)``; ``isolated``: fit it in a worker process and extend it in another
    (a third-party plugin that crashes ends only the run); ``unaffected`` ends the message of a
    worker process that died (the command line: nothing was written)."""

    progress = as_progress(progress)
    start = time.perf_counter()
    est = algorithm_cls(**params) if estimator is None else estimator
    fit = extend = None
    if isolated:
        said = {} if unaffected is None else {"unaffected": unaffected}
        fit = lambda X_fit, y_fit, p: fit_estimator_in_subprocess(est, X_fit, y_fit, p, **said).estimator  # noqa: E731
        extend = lambda fitted, rows, p: extend_model(fitted, rows, p, isolated=True, **said)  # noqa: E731
    res = fit_on_sample(est, X, n_samples, y=y, random_state=random_state, progress=progress, clone=False,
                        distances=distances, fit=fit, extend=extend)
    est = res.estimator
    out = np.asarray(res.output)
    embedding = labels = None
    if est.kind == "embedding":
        embedding = out
    else:
        labels = out
    try:
        summary = dict(est.result_summary())
    except Exception as exc:  # noqa: BLE001 - a summary must never lose a finished fit
        summary = {"summary_error": error_message(exc)}
    summary.pop("fit_time_s", None)
    m, N = int(res.sample_indices.size), res.n_total
    summary = {"fitted_on": f"{m:,} of {N:,}", "extend_time_s": round(res.extend_time, 3), **summary}
    meta = {"sample_fit": {"n_fitted": m, "n_total": N, "random_state": random_state,
                           "fit_time_s": res.fit_time, "extend_time_s": res.extend_time}}
    if isolated:   # its later extensions run in a worker process too
        meta["worker_process"] = True
    if m < N:  # JSON-friendly (run.meta is saved with projects); absent when every row was fitted
        meta["fitted_rows"] = res.sample_indices.tolist()
    return FitOutcome(est, embedding, labels, summary, time.perf_counter() - start, meta=meta)


# -- extend -------------------------------------------------------------------------------------

#: a file whose rows take more than this is extended without being kept as a data set
KEEP_DATA_MB = 512.0


def load_and_extend(source: str, estimator, host=None, options: dict | None = None,
                    progress=None, keep_data_mb: float = KEEP_DATA_MB, isolated: bool = False) -> ExtendResult:
    """Extend ``estimator`` to every row of a file (or ``sample:NAME``, a folder of parts),
    reading it chunk by chunk (:func:`manifold_studio.extend.out_of_core.extend_source`): the file is
    never loaded whole; its rows are kept as a data set only while they take at most
    ``keep_data_mb`` MB. ``isolated``: each chunk is extended in a worker process
    (:func:`~manifold_studio.session.isolated_extend.extend_model`); the file is read here."""

    label = source.split(":", 1)[1] if source.startswith("sample:") else Path(source).name
    extend = (lambda X, p: extend_model(estimator, X, p, isolated=True)) if isolated else None
    rep = extend_source(estimator, source, host=host, options=options, keep_values=True,
                        keep_data_mb=keep_data_mb,
                        train_feature_names=_training_feature_names(estimator), progress=progress, extend=extend)
    return ExtendResult(rep.values, rep.seconds, rep.dataset, None, label, rep.correct, rep.notes)


def load_distances_and_extend(source: str, estimator, training: Dataset, host=None, options: dict | None = None,
                              progress=None, isolated: bool = False) -> ExtendResult:
    """Extend ``estimator``, fitted on the distance-matrix data set ``training``, to the points of a
    file holding their distances to its n items (m x n, read by the file's loader and checked by
    :func:`manifold_studio.distance_matrix.read_distances_to`); ``isolated``: as :func:`load_and_extend`."""
    progress = as_progress(progress)
    name = Path(source).name
    options = dict(options or {})
    loader = (host or get_host()).loader_for(source)
    if "missing" in {p.name for p in loader.options}:
        options.setdefault("missing", "keep")   # a gap is reported by name, not silently dropped
    read = load_data(str(source), host, SubProgress(progress, 0.0, 0.2), loader=loader, **options)
    new = read_distances_to(read, training, name)
    start = time.perf_counter()
    values = extend_model(estimator, new.X, SubProgress(progress, 0.2, 1.0), isolated=isolated, what=name)
    return ExtendResult(values, time.perf_counter() - start, new, None, name)


def _training_feature_names(estimator) -> list[str] | None:
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def apply_model_to_file(model_path: str, source: str, host=None, options: dict | None = None,
                        progress=None):
    """Load a saved model and a data file, extend the model to the file.

    A model with a third-party algorithm or step is read without its probe extension and
    extended in worker processes (``isolated`` of :func:`load_and_extend`), as ``apply`` does.
    Returns ``(estimator, metadata, ExtendResult)``."""

    progress = as_progress(progress)
    progress.checkpoint(0.0, f"Reading the model {Path(model_path).name}")
    isolated = bool(third_party_parts(model_ids(read_metadata(model_path))))
    est, meta = load_model_with_metadata(model_path, check_usable=not isolated)
    res = load_and_extend(source, est, host, options, progress=SubProgress(progress, 0.05, 1.0), isolated=isolated)
    return est, meta, res


# -- extension quality --------------------------------------------------------------------------

def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the mean with a Student-t confidence interval."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    if v.size < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return mean, mean - half, mean + half


def quality_report_task(algorithm_cls, params: dict, X: np.ndarray, *, fractions=(0.01, 0.02, 0.05, 0.1, 0.2),
                        n_repeats: int = 3, n_heldout: int = 10, max_points: int | None = 400,
                        random_state=0, progress=None, distances: bool = False, estimator=None,
                        isolated: bool = False) -> dict:
    """Run the section 5.4 experiment and return a plot-ready, JSON-friendly report (``distances``: X
    is a square distance matrix; see :func:`~manifold_studio.extend.quality.extension_quality`).
    ``estimator``: the unfitted estimator (e.g. a run's chain and algorithm) instead of
    ``algorithm_cls(**params)``; ``isolated``: each refit runs in a worker process and each
    extension in another (a third-party algorithm or step that crashes ends only its worker).

    At most ``max_points`` random rows of ``X`` are used (each of the many refits costs a full
    fit). The report holds, per fraction, the mean and 95% interval of the variability, of the
    extension error and of their difference, and the one-sentence explanation.
    """

    progress = as_progress(progress)
    X = np.asarray(X, dtype=float)
    n_all = X.shape[0]
    rng = check_random_state(random_state)
    if max_points is not None and n_all > int(max_points):
        keep = np.sort(rng.choice(n_all, size=int(max_points), replace=False))
        X = X[np.ix_(keep, keep)] if distances else X[keep]
    est = algorithm_cls(**params) if estimator is None else estimator
    fit = extend = None
    if isolated:
        def fit(rows, p):
            outcome = fit_estimator_in_subprocess(est, rows, None, p)
            return outcome.estimator, (outcome.embedding if outcome.embedding is not None
                                       else np.asarray(outcome.estimator.spectral_embedding_))

        def extend(fitted, rows, p):
            return extend_model(fitted, rows, p, isolated=True, method=extension_method(fitted))
    start = time.perf_counter()
    res = extension_quality(est, X, fractions=tuple(fractions), n_repeats=int(n_repeats),
                            n_heldout=int(n_heldout), random_state=rng, progress=progress, distances=distances,
                            fit=fit, extend=extend)
    rows = []
    for r in res.rows:
        var = mean_ci(r.variability)
        err = mean_ci(r.extension_error)
        lo, hi = (float(v) for v in r.difference_ci)
        rows.append({"fraction": float(r.fraction), "n_substituted": int(r.n_substituted),
                     "n_points": int(np.asarray(r.variability).size),
                     "variability": list(var), "extension_error": list(err),
                     "difference": [float(r.difference_mean), lo, hi]})
    return {"method": getattr(getattr(est, "final", None) or est, "id", ""), "params": dict(params), "n_points": int(X.shape[0]),
            "n_available": int(n_all), "n_repeats": int(n_repeats), "n_heldout": int(n_heldout),
            "rows": rows, "sentence": res.explanation(), "time_s": time.perf_counter() - start}
