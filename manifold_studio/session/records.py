"""What the session records: runs (one fit of one algorithm on one data set) with their
extensions and fit outcomes, log entries, the events observers receive, and the run statuses.
Plain data classes (Qt-free); the :class:`~manifold_studio.session.model.Session` creates and updates
them, and :mod:`manifold_studio.session.model` re-exports every name here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
RUN_STATUSES = (QUEUED, RUNNING, DONE, FAILED, CANCELLED)
FINISHED_STATUSES = (DONE, FAILED, CANCELLED)

#: event kinds sent to observers
EVENT_KINDS = ("dataset_added", "dataset_removed", "dataset_changed", "current_dataset", "run_added",
               "run_updated", "run_removed", "current_run", "extension_added", "log",
               # the analysis state (session.state): the chain, a run's cut, a command done
               "chain_changed", "cut_changed", "command",
               # what the analyst looks at (session.view_state)
               "selection_changed", "saved_selection_changed", "view_setting_changed", "report_changed")


@dataclass
class LogEntry:
    """One line of the session history."""

    time: float
    level: str  # "info", "warning", "error"
    message: str
    detail: str = ""
    run_id: int | None = None
    dataset: str | None = None

    def format(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.time))
        return f"{stamp} {self.level.upper():7s} {self.message}"


@dataclass
class SessionEvent:
    """What observers receive: ``kind`` (one of EVENT_KINDS) and the object concerned."""

    kind: str
    run: "Run | None" = None
    dataset: str | None = None
    entry: LogEntry | None = None
    extension: "Extension | None" = None
    command: Any = None  # the Command done ("command" events)
    setting: tuple | None = None  # (view, key) of a "view_setting_changed" event


@dataclass
class FitOutcome:
    """What a fit task returns (computed on a worker thread, recorded by the main thread)."""

    estimator: Any
    embedding: np.ndarray | None = None
    labels: np.ndarray | None = None
    summary: dict = field(default_factory=dict)
    fit_time: float = 0.0
    #: merged into ``Run.meta`` when the run completes (e.g. the rows a sample fit was fitted on)
    meta: dict = field(default_factory=dict)


@dataclass
class Extension:
    """The result of extending a fitted run to other points."""

    name: str
    dataset_name: str | None
    values: np.ndarray
    rows: np.ndarray | None = None  # rows of ``dataset_name`` that were extended (None: all)
    time_s: float = 0.0
    created: float = field(default_factory=time.time)


@dataclass
class Run:
    """One fit of one algorithm with one set of parameters on one data set."""

    id: int
    algorithm_id: str
    params: dict
    dataset_name: str
    kind: str = ""
    algorithm_name: str = ""
    status: str = QUEUED
    error: str = ""
    error_detail: str = ""
    #: rows of the data set used for fitting (None: all rows) — "fit on a sample"
    rows: np.ndarray | None = None
    #: fit on the embedding of this earlier run instead of the raw data ("cluster this map")
    source_run: int | None = None
    estimator: Any = None
    embedding: np.ndarray | None = None
    labels: np.ndarray | None = None
    summary: dict = field(default_factory=dict)
    #: wall-clock stamps (time.time()) and durations in seconds
    timings: dict = field(default_factory=dict)
    extensions: list[Extension] = field(default_factory=list)
    #: free-form metadata for views and tools (e.g. view settings); JSON-friendly values
    meta: dict = field(default_factory=dict)
    #: the partition chosen after the fit without a refit (a dendrogram cut): shown on the map,
    #: written by the CSV export and saved in the project instead of ``labels``;
    #: ``meta["cut"]`` describes it (``note``, ``height``, ``n_clusters``)
    cut_labels: np.ndarray | None = None

    @property
    def shown_labels(self) -> np.ndarray | None:
        """The labels shown and exported: the cut's, else the run's own."""
        return self.cut_labels if self.cut_labels is not None else self.labels

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def succeeded(self) -> bool:
        return self.status == DONE

    @property
    def n_points(self) -> int:
        for arr in (self.embedding, self.labels):
            if arr is not None:
                return int(arr.shape[0])
        return 0

    @property
    def point_index(self) -> np.ndarray:
        """Row of the data set of each result point (``rows``, or all rows in order)."""
        if self.rows is not None:
            return np.asarray(self.rows)
        return np.arange(self.n_points)

    @property
    def shown_params(self) -> dict:
        """The parameters of the partition shown: a cut's ``n_clusters`` replaces the fitted one."""
        params = dict(self.params)
        cut = self.meta.get("cut") if self.cut_labels is not None and isinstance(self.meta, dict) else None
        if isinstance(cut, dict) and cut.get("n_clusters") is not None:
            params["n_clusters"] = int(cut["n_clusters"])
        return params

    @property
    def refit_params(self) -> dict:
        """The parameters that refit this run as it was made: a ``random_state`` left None (a seed
        drawn at the fit) becomes the seed it drew (``summary["random_state_used"]``), so a refit
        (an evaluation, the exported script) reproduces the run."""
        params = dict(self.params)
        used = self.summary.get("random_state_used") if isinstance(self.summary, dict) else None
        if "random_state" in params and params["random_state"] is None and used is not None:
            params["random_state"] = int(used)
        return params

    def params_text(self) -> str:
        """``n_clusters=4, method=ward`` (after a cut: the cut's n_clusters, and where it was cut)."""
        def fmt(v):
            if isinstance(v, tuple):
                return "(" + ", ".join(str(i) for i in v) + ")"
            return str(v)
        text = ", ".join(f"{k}={fmt(v)}" for k, v in self.shown_params.items())
        cut = self.meta.get("cut") if self.cut_labels is not None and isinstance(self.meta, dict) else None
        if isinstance(cut, dict):
            fitted = self.params.get("n_clusters")
            where = f"cut at {float(cut['height']):.4g}" if cut.get("height") is not None else "cut"
            text += f" ({where}" + (f"; fitted with n_clusters={fitted})" if fitted is not None else ")")
        return text

    def title(self) -> str:
        return f"#{self.id} {self.algorithm_id} on {self.dataset_name}"


def run_end_text(run: Run) -> str:
    """How a finished fit ended, after the run's title: "done in 4.71 s", or for a fit Cancel
    stopped early (``meta["stopped_early"]``, its result kept) "stopped after 4.71 s at your
    request (the map when Cancel was pressed is kept)". The log, the status bar and the run
    controls all say it in these words."""
    seconds = float(run.timings.get("duration_s", 0.0))
    if not run.meta.get("stopped_early"):
        return f"done in {seconds:.2f} s"
    kept = "the map" if run.embedding is not None else "the result"
    return f"stopped after {seconds:.2f} s at your request ({kept} when Cancel was pressed is kept)"
