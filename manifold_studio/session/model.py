"""The session model: loaded data sets, runs, their results and a history (Qt-free).

A :class:`Session` is what the GUI shows and what a script can drive directly::

    from manifold_studio.session.model import Session
    s = Session()
    s.load("sample:iris")                      # becomes the current data set
    run = s.run("pca", n_components=2)         # synchronous: fit and record
    run.status, run.embedding.shape, run.timings["fit_s"]

The GUI uses the same model asynchronously, in three steps, so that only the middle one
runs on a worker thread and the model itself is only ever touched by one (the main) thread::

    run = s.create_run("pca", {"n_components": 2})   # validated, status "queued"
    task = s.fit_task(run)                            # a plain callable, Qt-free, pure
    s.start_run(run.id)                               # status "running"
    outcome = task(progress=some_progress)            # on a worker thread
    s.complete_run(run.id, outcome)                   # or fail_run / cancel_run

Guarantees: adding a data set never replaces another one (names are made unique unless
``replace=True`` is asked for); removing a data set keeps the runs computed from it; a
failed or cancelled run records its error and leaves every earlier run and its results
untouched. Observers are plain callables ``callback(event)`` receiving :class:`SessionEvent`.
The session is not thread-safe: mutate it from one thread (the GUI's main thread).
"""
from __future__ import annotations

import itertools
import time
import traceback
from typing import Callable

import numpy as np

from manifold_studio import load_data
from manifold_studio.analysis.report import Report
from manifold_studio.data import Dataset
from manifold_studio.errors import (
    DataError,
    ManifoldStudioError,
    error_message,
)
from manifold_studio.plugins.host import get_host
from manifold_studio.analysis.chain import chained_estimator, jsonable_params
from manifold_studio.session.distance_methods import distance_params
from manifold_studio.session.lifecycle import prepare_extension, prepare_fit, run_fit
from manifold_studio.session.ready_maps import add_ready_maps, preferred_ready_map
from manifold_studio.session.run_spec import RunSpec
from manifold_studio.session.state import AnalysisState
from manifold_studio.session.view_state import ViewState
from manifold_studio.session.records import (
    CANCELLED,
    DONE,
    FAILED,
    RUNNING,
    Extension,
    FitOutcome,
    LogEntry,
    Run,
    SessionEvent,
    run_end_text,
)

# -- the session ------------------------------------------------------------------------------

class Session(AnalysisState, ViewState):
    """Data sets, runs and history, with plain-callable observers; the preparation chain,
    commands, cuts and prepared data come from :class:`~manifold_studio.session.state.AnalysisState`;
    the selection, view settings and report items from :class:`~manifold_studio.session.view_state.ViewState`."""

    def __init__(self, host=None):
        self._host = host
        self.datasets: dict[str, Dataset] = {}
        self.current_dataset_name: str | None = None
        self.runs: dict[int, Run] = {}
        self.current_run_id: int | None = None
        self.history: list[LogEntry] = []
        self._observers: list[Callable[[SessionEvent], None]] = []
        self._ids = itertools.count(1)
        self._estimators: dict[int, object] = {}  # run id -> its unfitted estimator (until it is fitted)
        #: the report: items added from the views (through add_report_item & co), saved in the project
        self.report = Report()
        self._init_state()
        self._init_view_state()

    # -- plumbing -------------------------------------------------------------------------
    @property
    def host(self):
        if self._host is None:
            self._host = get_host()
        return self._host

    def subscribe(self, callback: Callable[[SessionEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` on every change; returns a function that unsubscribes."""
        self._observers.append(callback)

        def unsubscribe():
            if callback in self._observers:
                self._observers.remove(callback)
        return unsubscribe

    def _notify(self, event: SessionEvent) -> None:
        for cb in list(self._observers):
            try:
                cb(event)
            except Exception as exc:  # noqa: BLE001 - an observer must not break the model
                if event.kind != "log":
                    self.log(f"An observer failed on '{event.kind}': {error_message(exc)}", "error",
                             detail=traceback.format_exc())

    def log(self, message: str, level: str = "info", detail: str = "", run_id: int | None = None,
            dataset: str | None = None) -> LogEntry:
        entry = LogEntry(time.time(), level, message, detail, run_id, dataset)
        self.history.append(entry)
        self._notify(SessionEvent("log", entry=entry, dataset=dataset,
                                  run=self.runs.get(run_id) if run_id is not None else None))
        return entry

    # -- data sets ------------------------------------------------------------------------
    @property
    def current_dataset(self) -> Dataset | None:
        return self.datasets.get(self.current_dataset_name) if self.current_dataset_name else None

    def unique_name(self, name: str) -> str:
        name = name or "data"
        if name not in self.datasets:
            return name
        for i in itertools.count(2):
            candidate = f"{name} ({i})"
            if candidate not in self.datasets:
                return candidate
        raise AssertionError("unreachable")

    def add_dataset(self, dataset: Dataset, *, replace: bool = False, make_current: bool = True) -> str:
        """Add a data set; returns the name it is stored under (made unique unless ``replace``)."""
        if not isinstance(dataset, Dataset):
            raise DataError(f"Expected a Dataset, got {type(dataset).__name__}.")
        name = dataset.name if replace and dataset.name else self.unique_name(dataset.name)
        dataset.name = name
        replaced = name in self.datasets
        self.datasets[name] = dataset
        self._notify(SessionEvent("dataset_added", dataset=name))
        verb = "Replaced" if replaced else "Loaded"
        self.log(f"{verb} {dataset.describe()}" + (f" from {dataset.source}" if dataset.source else ""),
                 dataset=name)
        for note in dataset.report:
            self.log(f"{name}: {note}", "warning", dataset=name)
        if make_current or self.current_dataset_name is None:
            self.set_current_dataset(name)
        if dataset.ready_maps:  # e.g. an AnnData file's obsm['X_umap']: shown like runs
            added = add_ready_maps(self, name)
            if added and make_current:  # the data set shown: show its map (not an empty plot)
                self.set_current_run(preferred_ready_map(added).id)
        return name

    def remove_dataset(self, name: str) -> Dataset:
        """Remove a data set; runs computed from it are kept with their results."""
        ds = self.dataset(name)
        del self.datasets[name]
        self._notify(SessionEvent("dataset_removed", dataset=name))
        self.log(f"Removed data set {name}", dataset=name)
        if self.current_dataset_name == name:
            self.set_current_dataset(next(reversed(self.datasets), None))
        return ds

    def dataset_changed(self, name: str) -> None:
        """Announce that data set ``name`` was edited in place (e.g. its labels): views re-read it."""
        self.dataset(name)
        self._notify(SessionEvent("dataset_changed", dataset=name))

    def run_changed(self, run_id: int) -> None:
        """Announce that run ``run_id``'s record changed after it finished (e.g. its evaluation
        in ``meta``): the runs table and views re-read it."""
        self._update(self.run_by_id(run_id))

    def set_current_dataset(self, name: str | None) -> None:
        if name is not None:
            self.dataset(name)
        if name != self.current_dataset_name:
            self.current_dataset_name = name
            self._notify(SessionEvent("current_dataset", dataset=name))

    def dataset(self, name: str | None = None) -> Dataset:
        name = self.current_dataset_name if name is None else name
        if name is None:
            raise DataError("No data set is loaded: load a file or a sample data set first.")
        try:
            return self.datasets[name]
        except KeyError:
            raise DataError(f"No data set named '{name}' is loaded; loaded are "
                            f"{', '.join(self.datasets) or 'none'}.") from None

    def load(self, source: str, *, make_current: bool = True, **options) -> Dataset:
        """Load a sample (``sample:NAME``) or a file and add it. On failure the error is logged
        and raised; everything already loaded stays."""
        try:
            ds = load_data(source, self.host, **options)
        except Exception as exc:
            self.log(f"Could not load {source}: {error_message(exc)}", "error",
                     detail=traceback.format_exc())
            raise
        self.add_dataset(ds, make_current=make_current)
        return ds

    # -- runs -----------------------------------------------------------------------------
    def new_run_id(self) -> int:
        """A run id never used in this session."""
        return next(self._ids)

    @property
    def current_run(self) -> Run | None:
        return self.runs.get(self.current_run_id) if self.current_run_id is not None else None

    def run_by_id(self, run_id: int) -> Run:
        try:
            return self.runs[run_id]
        except KeyError:
            raise KeyError(f"No run #{run_id} in this session.") from None

    def set_current_run(self, run_id: int | None) -> None:
        if run_id is not None:
            self.run_by_id(run_id)
        if run_id != self.current_run_id:
            self.current_run_id = run_id
            self._notify(SessionEvent("current_run", run=self.current_run))

    def runs_for(self, dataset_name: str | None = None, status: str | None = None) -> list[Run]:
        return [r for r in self.runs.values()
                if (dataset_name is None or r.dataset_name == dataset_name)
                and (status is None or r.status == status)]

    def latest_result(self, dataset_name: str | None = None, kind: str | None = None) -> Run | None:
        """The most recent successful run (optionally of one data set / kind)."""
        for run in reversed(list(self.runs.values())):
            if run.status == DONE and (dataset_name is None or run.dataset_name == dataset_name) \
                    and (kind is None or run.kind == kind):
                return run
        return None

    def create_run(self, algorithm, params: dict | None = None, dataset_name: str | None = None,
                   *, rows=None, source_run: int | None = None, chain=None) -> Run:
        """Validate and record a run request (status ``queued``). ``algorithm`` is an algorithm
        id or an algorithm class already resolved by the caller (the window resolves it once).
        The estimator is built and its parameters validated here, once; :meth:`fit_task` hands
        that estimator to the worker. Raises on invalid input without recording anything."""
        cls = self.host.algorithm_class(algorithm) if isinstance(algorithm, str) else algorithm
        algorithm_id = cls.id
        ds = self.dataset(dataset_name)
        if ds.distance_matrix and source_run is None:  # metric / dissimilarity = 'precomputed', or refused
            params = distance_params(cls, params, self.host.algorithms, ds.name)
            if chain:
                raise DataError(f"'{ds.name}' is a distance matrix: preparation steps transform feature columns "
                                "and do not apply to it; clear the preparation chain.")
        est = cls()
        est.set_params(**(params or {}))
        normalised = est.validate_params()
        if source_run is not None:
            src = self.run_by_id(source_run)
            if src.embedding is None:
                raise DataError(f"Run #{source_run} has no embedding to fit on.")
            if src.dataset_name != ds.name:
                raise DataError(f"Run #{source_run} was computed on '{src.dataset_name}', not '{ds.name}'.")
            if rows is not None:
                raise DataError("Fit either on some rows or on an earlier run's embedding, not both.")
            rows = src.rows  # the source run's points are these rows of the data set
        elif rows is not None:
            rows = np.asarray(rows, dtype=np.intp)
            if rows.ndim != 1 or rows.size == 0 or rows.min() < 0 or rows.max() >= ds.n_samples:
                raise DataError(f"The rows to fit on must be indices between 0 and {ds.n_samples - 1}.")
        chain = [(str(i), dict(p or {})) for i, p in (chain or ())]
        if chain:
            if source_run is not None:
                raise DataError("Preparation steps apply to the data set's columns, not to an earlier "
                                "run's embedding: clear the chain or fit on the data set.")
            est = chained_estimator(chain, est, ds)
        run = Run(next(self._ids), algorithm_id, dict(normalised), ds.name, kind=cls.kind,
                  algorithm_name=cls.name, rows=rows, source_run=source_run)
        if chain:
            run.meta["chain"] = [[i, jsonable_params(p)] for i, p in chain]
        run.timings["created"] = time.time()
        self._estimators[run.id] = est
        self.runs[run.id] = run
        self._notify(SessionEvent("run_added", run=run, dataset=run.dataset_name))
        return run

    def training_data(self, run: Run) -> tuple[np.ndarray, np.ndarray | None]:
        """The (X, y) a run fits on: the data set (or a source run's embedding), its rows."""
        ds = self.dataset(run.dataset_name)
        y = ds.labels if run.rows is None or ds.labels is None else ds.labels[run.rows]
        if run.source_run is not None:
            return self.run_by_id(run.source_run).embedding, y
        if ds.distance_matrix and run.rows is not None:  # the distances between the chosen rows
            return ds.X[np.ix_(run.rows, run.rows)], y
        return (ds.X if run.rows is None else ds.X[run.rows]), y

    def run_estimator(self, run: Run):
        """A fresh, unfitted estimator of ``run`` as :meth:`create_run` builds it: its algorithm
        with its parameters, behind its preparation chain (``run.meta["chain"]``) bound to the
        columns of its data set, and the seed it drew when its ``random_state`` was None
        (:attr:`~manifold_studio.session.records.Run.refit_params`). An evaluation refits it on
        each training part."""
        est = self.host.algorithm_class(run.algorithm_id)(**run.refit_params)
        chain = run.meta.get("chain") if isinstance(run.meta, dict) else None
        if chain:
            est = chained_estimator([(str(i), dict(p or {})) for i, p in chain], est, self.dataset(run.dataset_name))
        return est

    def fit_task(self, run: Run, isolated: bool = False) -> RunSpec:
        """The run's :class:`~manifold_studio.session.run_spec.RunSpec`: a Qt-free callable
        ``spec(progress=None) -> FitOutcome`` that touches no session state (safe on a worker
        thread), holding the estimator :meth:`create_run` built. ``isolated``: fit in a separate
        worker process (:mod:`manifold_studio.session.isolated_fit`), so a crashing plugin cannot
        take the caller down."""
        est = self._estimators.pop(run.id, None)
        if est is None:  # a run recorded otherwise (a project, a script): build it from its record
            est = self.run_estimator(run)
        X, y = self.training_data(run)
        algo = getattr(est, "final", None) or est  # a chained run's labels go to its final algorithm
        if not (type(algo).requires_labels or algo.uses_labels()):
            y_fit = None
        elif y is None and type(algo).requires_labels:
            raise DataError(f"{type(algo).name} needs labels, and data set '{run.dataset_name}' has none.")
        else:
            y_fit = y
        return RunSpec(est, X, y_fit, isolated)

    def _update(self, run: Run) -> None:
        self._notify(SessionEvent("run_updated", run=run, dataset=run.dataset_name))

    def start_run(self, run_id: int) -> Run:
        run = self.run_by_id(run_id)
        run.status = RUNNING
        run.timings["started"] = time.time()
        self._update(run)
        self.log(f"Run {run.title()} started ({run.params_text()})", run_id=run.id,
                 dataset=run.dataset_name)
        return run

    def _stamp_end(self, run: Run) -> None:
        run.timings["finished"] = time.time()
        start = run.timings.get("started", run.timings.get("created", run.timings["finished"]))
        run.timings["duration_s"] = run.timings["finished"] - start

    def complete_run(self, run_id: int, outcome: FitOutcome, make_current: bool = True) -> Run:
        run = self.run_by_id(run_id)
        run.estimator = outcome.estimator
        run.embedding = outcome.embedding
        run.labels = outcome.labels
        run.summary = dict(outcome.summary)
        run.meta.update(getattr(outcome, "meta", None) or {})
        run.status, run.error, run.error_detail = DONE, "", ""
        if getattr(outcome.estimator, "stopped_early_", False):
            run.meta["stopped_early"] = True
        run.timings["fit_s"] = float(getattr(outcome.estimator, "fit_time_", outcome.fit_time))
        self._stamp_end(run)
        self._update(run)
        self.log(f"Run {run.title()} {run_end_text(run)}", run_id=run.id,
                 dataset=run.dataset_name)
        for warning in getattr(outcome.estimator, "fit_warnings_", None) or ():
            self.log(f"Run {run.title()}: {warning}", "warning", run_id=run.id, dataset=run.dataset_name)
        if make_current:
            self.set_current_run(run.id)
        return run

    def fail_run(self, run_id: int, error: BaseException | str, detail: str = "") -> Run:
        """Record a failure; earlier runs and their results are untouched."""
        self._estimators.pop(run_id, None)
        run = self.run_by_id(run_id)
        if isinstance(error, BaseException):
            detail = detail or "".join(traceback.format_exception(type(error), error, error.__traceback__))
            error = error_message(error)
        run.status, run.error, run.error_detail = FAILED, str(error), detail
        self._stamp_end(run)
        self._update(run)
        self.log(f"Run {run.title()} failed: {run.error}", "error", detail=detail, run_id=run.id,
                 dataset=run.dataset_name)
        return run

    def cancel_run(self, run_id: int) -> Run:
        self._estimators.pop(run_id, None)
        run = self.run_by_id(run_id)
        run.status, run.error = CANCELLED, "Cancelled by the user."
        self._stamp_end(run)
        self._update(run)
        self.log(f"Run {run.title()} cancelled", "warning", run_id=run.id, dataset=run.dataset_name)
        return run

    def add_run(self, run: Run, make_current: bool = False) -> Run:
        """Record an already finished run (e.g. read from a project file) under its own id."""
        if run.id in self.runs:
            raise ManifoldStudioError(f"A run #{run.id} already exists in this session.")
        self.runs[run.id] = run
        self._ids = itertools.count(max(max(self.runs) + 1, next(self._ids)))
        self._notify(SessionEvent("run_added", run=run, dataset=run.dataset_name))
        if make_current:
            self.set_current_run(run.id)
        return run

    def remove_run(self, run_id: int) -> Run:
        self._estimators.pop(run_id, None)
        run = self.run_by_id(run_id)
        if run.status == RUNNING:
            raise ManifoldStudioError(f"Run #{run_id} is still running: cancel it first.")
        del self.runs[run_id]
        self._notify(SessionEvent("run_removed", run=run, dataset=run.dataset_name))
        if self.current_run_id == run_id:
            latest = self.latest_result()
            self.set_current_run(latest.id if latest else None)
        return run

    def run(self, algorithm_id: str, dataset_name: str | None = None, progress=None, *,
            rows=None, source_run: int | None = None, chain=None, **params) -> Run:
        """Create, fit and record a run synchronously (scripts, tests, the CLI). ``chain``: the
        preparation steps (default: the session's current chain, none for an earlier run's map).

        A failed fit is recorded (status ``failed``) and its exception re-raised; a
        cancelled fit (``FitCancelled``) is recorded as ``cancelled`` and returned.
        """
        if chain is None:
            chain = self.chain if source_run is None else []
        return run_fit(prepare_fit(self, algorithm_id, params, dataset_name, rows=rows, source_run=source_run,
                                   chain=chain), progress)  # the window runs the same spec on a worker thread

    # -- extension ------------------------------------------------------------------------
    def add_extension(self, run_id: int, values, dataset_name: str | None = None, *,
                      name: str | None = None, rows=None, time_s: float = 0.0) -> Extension:
        run = self.run_by_id(run_id)
        values = np.asarray(values)
        ext = Extension(name or f"{dataset_name or 'new points'} ({values.shape[0]:,} points)",
                        dataset_name, values, None if rows is None else np.asarray(rows), time_s)
        run.extensions.append(ext)
        self._notify(SessionEvent("extension_added", run=run, dataset=dataset_name, extension=ext))
        self.log(f"Extended {run.title()} to {ext.name}", run_id=run.id, dataset=dataset_name)
        return ext

    def extend(self, run_id: int, dataset_name: str | None = None, rows=None, progress=None) -> Extension:
        """Synchronously extend a run to a data set (or some of its rows) and record it."""
        spec = prepare_extension(self, run_id, dataset_name, rows)  # the window's Extend runs the same spec
        return spec.record(spec(progress))
