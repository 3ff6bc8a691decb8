"""Data sets with missing values (NaN cells, e.g. a CSV read with missing=keep).

Only probabilistic PCA fitted by EM (``ppca``, ``method="em"``) uses rows with missing cells;
for every other method Run says so *before* running, and names the way out. After a ppca EM
run, *Tools ▸ Impute missing values* makes a new data set where every missing cell is replaced
by its conditional expectation under the fitted model (observed cells unchanged), which every
method can then use.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QAction

from manifold_studio.session.lifecycle import run_model

_COUNTS: dict[int, int] = {}  # id(X) -> number of NaN cells (data sets are not modified in place)


def missing_count(dataset) -> int:
    if dataset is None:
        return 0
    key = id(dataset.X)
    if key not in _COUNTS:
        values = dataset.X.data if getattr(dataset, "is_sparse", False) else dataset.X
        _COUNTS[key] = int(np.isnan(values).sum())
    return _COUNTS[key]


def missing_blocker(window, algorithm_id: str) -> str:
    """Why this algorithm cannot run on the current data set's missing values ("" if it can)."""
    ds = window.session.current_dataset
    n = missing_count(ds)
    if not n:
        return ""
    selector = window.input_selector
    if selector is not None and selector.source_run() is not None:
        return ""  # fitted on a map: no missing values there
    if any(step_id == "impute" for step_id, _ in window.preparation_chain()):
        return ""  # the chain fills them before the algorithm sees them
    try:
        est = window.host.algorithm_class(algorithm_id)(**window.algorithm_panel.values())
        if est.accepts_missing_values():
            return ""
    except Exception:  # noqa: BLE001 - the form's own checks report bad values
        return ""
    return (f"'{ds.name}' has {n:,} missing value(s): only probabilistic PCA with method = em uses them "
            "(then Tools ▸ Impute missing values gives a complete data set); or reload the file with "
            "missing = drop.")


class MissingValues:
    def __init__(self, window):
        self.window = window
        self.action = QAction("Impute missing values (probabilistic PCA)", window)
        self.action.setObjectName("impute_action")
        self.action.setStatusTip("A new data set with each missing cell replaced by its expectation under "
                                 "the current probabilistic PCA model.")
        self.action.triggered.connect(lambda: self.impute())
        window.add_tool_action(self.action)
        window.bridge.currentRunChanged.connect(lambda *_: self.update())
        window.bridge.datasetsChanged.connect(lambda *_: self.update())
        self.update()

    def _source(self):
        run = self.window.session.current_run
        if run is None or not run.succeeded or not callable(getattr(run.estimator, "impute", None)):
            return None, None
        ds = self.window.session.datasets.get(run.dataset_name)
        return (run, ds) if missing_count(ds) else (None, None)

    def update(self) -> None:
        run, _ds = self._source()
        self.action.setEnabled(run is not None)

    def impute(self):
        """Start the imputation job for the current run's data set; returns the Job or None."""
        run, ds = self._source()
        if run is None:
            self.window.report_error("Impute missing values needs a probabilistic PCA (method = em) run on a "
                                     "data set with missing values.")
            return None
        est, X = run_model(run), ds.X   # a third-party model imputes in a worker process

        def task(progress=None):
            progress.checkpoint(0.0, "Imputing missing values")
            return est.impute(X)

        def done(Xi):
            new = ds.subset(np.arange(ds.n_samples), name=f"{ds.name} (imputed)")
            new.X = np.asarray(Xi, dtype=float)
            new.report = [f"{missing_count(ds):,} missing value(s) of '{ds.name}' replaced by their conditional "
                          f"expectation under run #{run.id} ({run.algorithm_id}); observed values unchanged."]
            name = self.window.session.add_dataset(new)
            self.window.show_status(f"Added data set '{name}' with the missing values imputed")

        return self.window.start_job(task, title="Impute missing values", on_success=done)


def install_missing_values(window) -> MissingValues:
    window.missing_values = MissingValues(window)
    return window.missing_values
