"""One lifecycle for fitting, extending and previewing, whoever asks: the window, the command
line, a script. The session creates the specs; the caller only runs them (the window on a worker
thread, relaying progress, partial results and Cancel) and hands the outcome back::

    job = prepare_fit(session, "tsne", {"perplexity": 30}, chain=[("standardize", {})])
    job.start()                      # main thread: the run is "running"
    outcome = job.spec(progress)     # a worker thread (or here): Qt-free, touches no session state
    job.finish(outcome)              # or job.fail(exc) / job.cancel()

    run = run_fit(job, progress)     # all of it synchronously (scripts, the CLI, tests)

    ext = prepare_extension(session, run.id, "new points")   # the rows' X built by the session
    result = ext(progress)                                    # a worker thread: an ExtendResult
    ext.record(result)                                        # the run's extension

    preview = preview_of(session, run.id, partial)            # what a partial result shows

Extension has one path: :func:`~manifold_studio.session.isolated_extend.extend_model` (the window's
Extend, the selection's Extend, hold-out, fit on a sample, the command line and ``Session.extend``),
which keeps a sparse matrix sparse for the methods that take one, and runs the extension of a
model with a third-party part (or fitted in a worker process) in a worker process.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.errors import DataError, FitCancelled, ManifoldStudioError
from manifold_studio.session.fitting import ExtendResult
from manifold_studio.session.isolated_extend import WorkerModel, extend_model, extends_in_worker
from manifold_studio.session.records import DONE, FitOutcome, Run


# -- fit --------------------------------------------------------------------------------------

@dataclass
class FitJob:
    """A run the session recorded (``queued``) and the Qt-free ``spec`` that fits it.

    ``error``: the spec could not be built (the run is recorded as failed; ``spec`` is None)."""

    session: Any
    run: Run
    spec: Callable[..., FitOutcome] | None
    error: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def start(self) -> Run:
        return self.session.start_run(self.run.id)

    def finish(self, outcome: FitOutcome, make_current: bool = True) -> Run:
        return self.session.complete_run(self.run.id, outcome, make_current=make_current)

    def fail(self, error: BaseException | str, detail: str = "") -> Run:
        return self.session.fail_run(self.run.id, error, detail)

    def cancel(self) -> Run:
        return self.session.cancel_run(self.run.id)


def prepare_fit(session, algorithm, params: dict | None = None, dataset_name: str | None = None, *,
                rows=None, source_run: int | None = None, chain=None, isolated: bool = False,
                make_task: Callable[[Run], Callable[..., FitOutcome]] | None = None) -> FitJob:
    """Validate and record a run, and build the spec that fits it.

    Invalid input (an unknown method, a bad parameter, rows out of range) raises and records
    nothing. A spec that cannot be built (e.g. a method that needs labels on a data set without
    them) records the run as failed and returns a job whose ``error`` says why.

    ``chain``: the preparation steps fitted with the run; ``isolated``: fit in a separate process
    (a chained run always fits in this process); ``make_task(run)``: another spec returning a
    FitOutcome (e.g. "fit on a sample, extend to all")."""
    run = session.create_run(algorithm, params, dataset_name, rows=rows, source_run=source_run,
                             chain=chain or [])
    try:
        if make_task is not None:
            spec = make_task(run)
        else:
            spec = session.fit_task(run, isolated=bool(isolated) and "chain" not in run.meta)
    except Exception as exc:  # noqa: BLE001 - recorded as the run's failure, said by the caller
        session.fail_run(run.id, exc)
        return FitJob(session, run, None, exc)
    return FitJob(session, run, spec)


def run_fit(job: FitJob, progress=None) -> Run:
    """Run ``job`` here and record its end. A failure is recorded and re-raised; a cancel
    (``FitCancelled``) is recorded and the cancelled run returned."""
    if job.failed:
        raise job.error
    job.start()
    try:
        outcome = job.spec(progress=progress)
    except FitCancelled:
        return job.cancel()
    except Exception as exc:
        job.fail(exc)
        raise
    return job.finish(outcome)


# -- extend -----------------------------------------------------------------------------------

@dataclass
class ExtendSpec:
    """Extend run ``run_id``'s fitted model to ``X`` (``rows`` of data set ``dataset_name``, or all
    of it; ``dataset_name`` None: points from elsewhere). Calling it is Qt-free and touches no
    session state; :meth:`record` adds the result to the run. ``isolated``: the extension runs in
    a worker process (:func:`~manifold_studio.session.isolated_extend.extends_in_worker`)."""

    session: Any
    run_id: int
    estimator: Any
    X: Any
    rows: np.ndarray | None = None
    dataset_name: str | None = None
    what: str = "The data"
    label: str = ""
    isolated: bool = False

    def __call__(self, progress=None) -> ExtendResult:
        start = time.perf_counter()
        values = extend_model(self.estimator, self.X, progress, isolated=self.isolated, what=self.what)
        return ExtendResult(values, time.perf_counter() - start, None, self.rows)

    def record(self, result: ExtendResult, name: str | None = None):
        return self.session.add_extension(self.run_id, result.values, self.dataset_name, name=name,
                                          rows=result.rows, time_s=result.time_s)


def fitted_run(session, run_id: int) -> Run:
    run = session.run_by_id(run_id)
    if run.status != DONE or run.estimator is None:
        raise ManifoldStudioError(f"Run #{run_id} has no fitted model (status: {run.status}).")
    return run


def run_extends_in_worker(run: Run) -> bool:
    """Whether run ``run``'s extensions run in a worker process (see
    :func:`~manifold_studio.session.isolated_extend.extends_in_worker`)."""
    return extends_in_worker(run.estimator, bool((run.meta or {}).get("worker_process")))


def run_model(run: Run, part=None):
    """Run ``run``'s fitted model (or ``part`` of it, e.g. a pipeline's final algorithm) for a view
    to call: itself, or when its extensions run in a worker (:func:`run_extends_in_worker`) a
    :class:`~manifold_studio.session.isolated_extend.WorkerModel` whose ``predict``, ``extend``,
    ``inverse_transform``, ``impute``, ... run in worker processes."""
    model = run.estimator if part is None else part
    return WorkerModel(model) if run_extends_in_worker(run) else model


def prepare_extension(session, run_id: int, dataset_name: str | None = None, rows=None, *,
                      what: str | None = None) -> ExtendSpec:
    """The spec extending run ``run_id`` to data set ``dataset_name`` (default: the current one),
    its ``rows`` or all of them. A distance-matrix run extends to rows of its own data set: their
    distances to the fitted items. Dense or sparse, the data set's X goes to the model as it is."""
    run = fitted_run(session, run_id)
    ds = session.dataset(dataset_name)
    rows = None if rows is None else np.asarray(rows, dtype=np.intp)
    if rows is not None and rows.size and (rows.min() < 0 or rows.max() >= ds.n_samples):
        raise DataError(f"The rows to extend to must be indices between 0 and {ds.n_samples - 1} of '{ds.name}'.")
    if ds.distance_matrix and run.source_run is None:
        if ds.name != run.dataset_name:
            raise DataError(f"Cannot extend run #{run.id} to '{ds.name}': a distance matrix extends only to its "
                            "own rows; for new points use Extend to a file… (their distances to the "
                            "fitted items).")
        fitted = np.arange(ds.n_samples) if run.rows is None else np.asarray(run.rows)
        X = ds.X[np.ix_(np.arange(ds.n_samples) if rows is None else rows, fitted)]
    else:
        X = ds.X if rows is None else ds.X[rows]
    n = X.shape[0]
    label = f"{ds.name} ({n:,} points)" if rows is None else f"held-out rows of {ds.name} ({n:,} points)"
    return ExtendSpec(session, run.id, run.estimator, X, rows, ds.name, what or f"Data set '{ds.name}'", label,
                      run_extends_in_worker(run))


def prepare_extension_to(session, run_id: int, X, *, what: str = "The data") -> ExtendSpec:
    """The spec extending run ``run_id`` to the points ``X`` of no data set (an array or a sparse
    matrix with the training data's columns)."""
    run = fitted_run(session, run_id)
    return ExtendSpec(session, run.id, run.estimator, X, None, None, what, f"{X.shape[0]:,} new points",
                      run_extends_in_worker(run))


# -- preview ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Preview:
    """What a partial result of a running fit shows: ``kind`` "curve" (a classifier's training
    curve: ``value`` is the TrainingCurve), "map" (an intermediate (n, k) embedding of the run's
    points: ``value``; ``rows`` of the data set, their ``labels`` or None) or "labels" (a
    clustering's intermediate labels of its points, e.g. a k-means step: ``value``, ``rows``)."""

    run: Run
    kind: str
    value: Any
    rows: np.ndarray | None = None
    labels: np.ndarray | None = None


def preview_of(session, run_id: int, result) -> Preview | None:
    """The preview of ``result``, published by run ``run_id`` while it runs; None when the run
    ended, was removed, or ``result`` is nothing a view can show (not a curve, an (n, k) array
    or a dict with the ``labels`` of the run's n points)."""
    run = session.runs.get(run_id)
    if run is None or run.finished:
        return None
    if isinstance(result, TrainingCurve):
        return Preview(run, "curve", result)
    kind = "map"
    if isinstance(result, dict) and isinstance(result.get("labels"), np.ndarray):  # a clustering's step
        kind, result = "labels", result["labels"]
        if result.ndim != 1:
            return None
    elif not isinstance(result, np.ndarray) or result.ndim != 2:
        return None
    ds = session.datasets.get(run.dataset_name)
    if ds is None or result.shape[0] == 0:
        return None
    rows = np.asarray(run.rows) if run.rows is not None else np.arange(ds.n_samples)
    if len(rows) != result.shape[0]:
        return None
    if kind == "labels":
        return Preview(run, "labels", result, rows)
    labels = None
    if ds.labels is not None and len(ds.labels) > int(rows.max()):
        labels = np.asarray(ds.labels)[rows]
    return Preview(run, "map", result, rows, labels)
