"""The "Out of sample" panel: extend a fitted run to new points, hold part of the data out,
fit on a sample and extend to all, save a fitted model and apply a saved one to a file.

It is registered as a view (so the main window gives it a dock and tells it the current run)
but it draws nothing itself: every action builds a request, a worker runs a Qt-free task from
:mod:`manifold_studio.extend.tasks` (``window.start_job``: progress bar, Cancel), and
the result goes into the session (``add_extension`` / a new run), which the map then draws —
extended points with an "x", the fitted sample of a "fit on a sample" run with rings.

Nothing is lost on failure or cancel: an extension is only added when it succeeded.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.algorithms.labels import same_labels
from manifold_studio.errors import DataError, ManifoldStudioError, error_message
from manifold_studio.extend.tasks import (
    holdout_split,
    load_and_extend,
    load_distances_and_extend,
    matrix_megabytes,
    sample_fit_of,
)
from manifold_studio.gui.data_panel import LoaderOptionsDialog
from manifold_studio.gui.model_file_actions import ModelFileActions
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.widgets import heading_label, message_label, say, seed_spin_box
from manifold_studio.session.lifecycle import prepare_extension, run_extends_in_worker

HELDOUT, DATASET = "heldout", "dataset"


def _size_text(mb: float) -> str:
    return f"{mb / 1000:,.1f} GB" if mb >= 1000 else f"{mb:,.1f} MB"


def _form_box(title: str, rows: list[tuple[str, QWidget]], *widgets: QWidget) -> QGroupBox:
    """A group box: a form of (label, field) rows, then ``widgets`` one under another."""
    box = QGroupBox(title)
    form = QFormLayout()
    for label, field in rows:
        form.addRow(label, field)
    lay = QVBoxLayout(box)
    lay.addLayout(form)
    for widget in widgets:
        lay.addWidget(widget)
    return box


class ExtendPanel(ModelFileActions, ResultView):
    """Out-of-sample tools for the current run (see the module docstring)."""

    view_id = "extend"
    title = "Out of sample"
    area = "right"
    order = 10

    #: an extension was added (the Extension) / an extension job failed (message) / was cancelled
    extended = Signal(object)
    extendFailed = Signal(str)
    extendCancelled = Signal()

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self._pending_holdout: dict[int, np.ndarray] = {}

        self.run_label = heading_label("No fitted run yet.")

        # -- extend ------------------------------------------------------------------------
        extend_box = QGroupBox("Extend the current run to new points")
        self.target_combo = QComboBox()
        self.target_combo.setToolTip("Points to place into the current map with the fitted model "
                                     "(Nyström extension for spectral methods).")
        self.target_combo.currentIndexChanged.connect(lambda _i: self._update_enabled())
        self.extend_button = QPushButton("Extend")
        self.extend_button.setToolTip("Place the chosen points into the current map (on a worker thread).")
        self.extend_button.clicked.connect(lambda: self.extend_selected())
        self.file_button = QPushButton("Extend to a file…")
        self.file_button.setToolTip("Read a data file with the same columns as the training data and "
                                    "place its points into the current map.")
        self.file_button.clicked.connect(self.choose_file)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stop the running extension; earlier results are kept.")
        self.cancel_button.clicked.connect(self.cancel)
        self.status = message_label()
        row = QHBoxLayout()
        row.addWidget(self.extend_button)
        row.addWidget(self.file_button)
        row.addWidget(self.cancel_button)
        el = QVBoxLayout(extend_box)
        el.addWidget(self.target_combo)
        el.addLayout(row)
        el.addWidget(self.status)

        # -- hold-out split ----------------------------------------------------------------
        self.holdout_fraction = QDoubleSpinBox()
        self.holdout_fraction.setRange(1.0, 90.0)
        self.holdout_fraction.setDecimals(1)
        self.holdout_fraction.setSingleStep(5.0)
        self.holdout_fraction.setValue(20.0)
        self.holdout_fraction.setSuffix(" %")
        self.holdout_fraction.setToolTip("Share of the current data set left out of the fit and then "
                                         "placed by the extension.")
        self.holdout_seed = seed_spin_box("Random seed of the split (same seed, same split).")
        self.holdout_button = QPushButton("Fit on the rest, extend the held-out part")
        self.holdout_button.setToolTip("Fit the algorithm selected in the Algorithm panel on the points "
                                       "not held out, then extend the fit to the held-out points.")
        self.holdout_button.clicked.connect(lambda: self.fit_with_holdout())
        holdout_box = _form_box("Hold out part of the data",
                                [("Held out:", self.holdout_fraction), ("Seed:", self.holdout_seed)],
                                self.holdout_button)

        # -- fit on a sample ---------------------------------------------------------------
        self.sample_size = QSpinBox()
        self.sample_size.setRange(2, 2_000_000_000)
        self.sample_size.setValue(1000)
        self.sample_size.setGroupSeparatorShown(True)
        self.sample_size.setToolTip("m: number of randomly chosen points the model is fitted on; "
                                    "every other point is placed by the extension (cost O(N·m) "
                                    "instead of O(N²)).")
        self.sample_size.valueChanged.connect(lambda _v: self._update_sample_hint())
        self.sample_seed = seed_spin_box("Random seed of the sample.")
        self.sample_hint = QLabel("")
        self.sample_hint.setWordWrap(True)
        self.sample_hint.setStyleSheet("color: #555;")
        self.sample_button = QPushButton("Fit on m points, extend to all")
        self.sample_button.setToolTip("Fit the algorithm selected in the Algorithm panel on m random "
                                      "points of the current data set and extend it to all of them.")
        self.sample_button.clicked.connect(lambda: self.fit_on_sample())
        sample_box = _form_box("Fit on a sample, extend to all",
                               [("Sample size m:", self.sample_size), ("Seed:", self.sample_seed)],
                               self.sample_hint, self.sample_button)

        # -- model files -------------------------------------------------------------------
        model_box = QGroupBox("Fitted model")
        self.save_button = QPushButton("Save model…")
        self.save_button.setToolTip("Save the current run's fitted model to a .npz file (no pickle).")
        self.save_button.clicked.connect(self.choose_save_path)
        self.apply_button = QPushButton("Apply a saved model…")
        self.apply_button.setToolTip("Load a saved model and place the points of a data file with it.")
        self.apply_button.clicked.connect(self.choose_model_and_file)
        ml = QHBoxLayout(model_box)
        ml.addWidget(self.save_button)
        ml.addWidget(self.apply_button)

        inner = QWidget()
        lay = QVBoxLayout(inner)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.run_label)
        lay.addWidget(extend_box)
        lay.addWidget(holdout_box)
        lay.addWidget(sample_box)
        lay.addWidget(model_box)
        lay.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(inner)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

        if window is not None:
            window.bridge.datasetsChanged.connect(self.refresh)
            window.runFinished.connect(self._on_run_finished)
        self.refresh()

    # -- helpers ------------------------------------------------------------------------------
    @property
    def session(self):
        return self.window.session

    def _say(self, text: str, error: bool = False) -> None:
        say(self.status, text, error)

    def _fitted_run(self):
        run = self.run
        if run is None or not run.succeeded or run.estimator is None:
            return None
        return run

    def heldout_rows(self, run) -> np.ndarray | None:
        """Rows of the run's data set that the run was not fitted on (None: it used them all)."""
        if run is None or run.rows is None or run.source_run is not None:
            return None
        ds = self.session.datasets.get(run.dataset_name)
        if ds is None:
            return None
        mask = np.ones(ds.n_samples, dtype=bool)
        mask[np.asarray(run.rows)] = False
        rows = np.flatnonzero(mask)
        return rows if rows.size else None

    # -- ResultView -----------------------------------------------------------------------
    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.refresh()

    def refresh(self) -> None:
        run = self._fitted_run()
        if run is None:
            self.run_label.setText("No fitted run yet: fit a method first, then extend it here.")
        else:
            how = ""
            fitted = run.meta.get("fitted_rows")
            if fitted is not None:
                how = f" — fitted on {len(fitted):,} of {run.n_points:,} points"
            elif run.rows is not None:
                how = f" — fitted on {len(run.rows):,} rows"
            self.run_label.setText(f"Run {run.title()}{how}")
        self.target_combo.clear()
        if run is not None:
            held = self.heldout_rows(run)
            if held is not None:
                self.target_combo.addItem(f"held-out rows of {run.dataset_name} ({held.size:,} points)",
                                          f"{HELDOUT}:{run.dataset_name}")
            n_feat = getattr(run.estimator, "n_features_in_", None)
            for name, ds in self.session.datasets.items():
                if name == run.dataset_name or run.source_run is not None or ds.distance_matrix:
                    continue
                if n_feat is not None and ds.n_features != n_feat:
                    continue
                self.target_combo.addItem(f"data set {name} ({ds.n_samples:,} × {ds.n_features})",
                                          f"{DATASET}:{name}")
        if not self.target_combo.count():
            self.target_combo.addItem("(no other points: hold some out, load data or use a file)", None)
        self._update_enabled()
        self._update_sample_hint()

    def _update_enabled(self) -> None:
        has_run = self._fitted_run() is not None and self._fitted_run().source_run is None
        busy = self.busy
        self.extend_button.setEnabled(has_run and not busy and self.target_combo.currentData() is not None)
        self.file_button.setEnabled(has_run and not busy)
        self.save_button.setEnabled(self._fitted_run() is not None)
        self.cancel_button.setEnabled(busy)
        has_data = self.window is not None and self.session.current_dataset is not None
        self.holdout_button.setEnabled(has_data)
        self.sample_button.setEnabled(has_data)

    def _update_sample_hint(self) -> None:
        ds = self.session.current_dataset if self.window is not None else None
        if ds is None:
            self.sample_hint.setText("Load a data set first.")
            return
        N, m = ds.n_samples, min(self.sample_size.value(), ds.n_samples)
        self.sample_hint.setText(
            f"{ds.name}: N = {N:,} points. A full spectral fit needs an N×N matrix "
            f"({_size_text(matrix_megabytes(N))}); a sample of m = {m:,} needs {_size_text(matrix_megabytes(m))}.")

    # -- extend -------------------------------------------------------------------------------
    def extend_selected(self):
        """Extend the current run to the target chosen in the combo box. Returns the Job."""
        target = self.target_combo.currentData()
        run = self._fitted_run()
        if run is None or target is None:
            self._say("Nothing to extend to: fit a run, then hold out points, load another data set "
                      "or choose a file.", error=True)
            return None
        kind, name = target.split(":", 1)
        if kind == HELDOUT:
            rows = self.heldout_rows(run)
            return self.extend_rows(run, name, rows)
        return self.extend_rows(run, name, None)

    def extend_rows(self, run, dataset_name: str, rows=None):
        """Extend ``run`` to a loaded data set (``rows`` of it, or all rows)."""
        if self.busy:
            self._say("An extension is already running: wait for it or cancel it.", error=True)
            return None
        try:
            ds = self.session.dataset(dataset_name)
        except DataError as exc:
            self._say(error_message(exc), error=True)
            return None
        try:
            spec = prepare_extension(self.session, run.id, ds.name, rows)
        except ManifoldStudioError as exc:
            self._fail(error_message(exc))
            return None
        return self._start(spec, run, spec.label, dataset_name=ds.name)

    def choose_file(self):
        host = self.window.host
        exts = sorted({e for loader in host.loaders.values() for e in loader.extensions})
        filt = f"Data files ({' '.join('*' + e for e in exts)});;All files (*)" if exts else "All files (*)"
        path, _ = QFileDialog.getOpenFileName(self, "Extend the current run to a data file", "", filt)
        if path:
            self.extend_file(path)

    def _options_for(self, path: Path, options: dict | None, ask: bool | None, fail: str):
        """(ok, options): ``options`` when given, else the loader's; not ok when the user cancels
        the dialog or the file cannot be read (then ``fail: reason`` is reported)."""
        if options is not None:
            return True, options
        try:
            return self._loader_options(path, ask)
        except DataError as exc:
            self._fail(f"{fail}: {error_message(exc)}")
            return False, None

    def _loader_options(self, path: Path, ask: bool | None):
        """(ok, options): the loader's options, asked in a dialog when the window asks for them."""
        loader = self.window.host.loader_for(path)
        ask = self.window.ask_loader_options if ask is None else ask
        if ask and loader.options:
            dlg = LoaderOptionsDialog(loader, path, self)
            if dlg.exec() != QDialog.DialogCode.Accepted:
                return False, None
            return True, dlg.form.values()
        return True, None

    def extend_file(self, path, options: dict | None = None, ask: bool | None = None):
        """Read a data file on a worker thread and extend the current run to all of its rows;
        the file becomes a loaded data set (not the current one) only if that succeeds."""
        run = self._fitted_run()
        path = Path(path)
        if run is None:
            self._fail(f"Cannot extend to {path.name}: there is no fitted run.")
            return None
        if self.busy:
            self._say("An extension is already running: wait for it or cancel it.", error=True)
            return None
        ok, options = self._options_for(path, options, ask, f"Cannot extend to {path.name}")
        if not ok:
            return None
        training = self.session.datasets.get(run.dataset_name)
        isolated = run_extends_in_worker(run)   # a third-party model extends in a worker process
        if training is not None and training.distance_matrix and run.source_run is None:
            task = functools.partial(load_distances_and_extend, str(path), run.estimator,
                                     training if run.rows is None else training.subset(run.rows), self.window.host, options,
                                     isolated=isolated)
        else:
            task = functools.partial(load_and_extend, str(path), run.estimator, self.window.host, options,
                                     isolated=isolated)
        return self._start(task, run, path.name, dataset_name=None, source=path.name)

    def _start(self, task, run, label: str, dataset_name: str | None, source: str = ""):
        rid = run.id
        self._say(f"Extending run #{rid} to {label}…")
        return self.start_own_job(
            task, title=f"Extending run #{rid} to {label}",
            on_success=lambda res, rid=rid, dn=dataset_name: self._extended(rid, res, dn),
            on_failure=lambda msg, detail, rid=rid, what=source or label: self._extend_failed(rid, what, msg, detail),
            on_cancel=self._extend_cancelled)

    def cancel(self) -> None:
        if self.busy:
            super().cancel()
            self._say("Cancelling…")

    def _extended(self, run_id: int, res, dataset_name: str | None) -> None:
        if run_id not in self.session.runs:
            self._say(f"Run #{run_id} was removed meanwhile: the extension is dropped.", error=True)
            return
        if res.dataset is not None:  # a file: keep it as a loaded data set, without switching to it
            dataset_name = self.session.add_dataset(res.dataset, make_current=False)
        name = None if dataset_name is not None or not res.label else f"{res.label} ({len(res.values):,} points)"
        ext = self.session.add_extension(run_id, res.values, dataset_name, name=name, rows=res.rows,
                                         time_s=res.time_s)
        correct = res.correct if res.correct is not None else self._correct_on(run_id, res, dataset_name)
        acc = ""
        if correct is not None and correct[1]:
            acc = f"; accuracy {correct[0] / correct[1]:.4f} ({correct[0]:,} of {correct[1]:,} correct)"
            self.session.log(f"Accuracy of {self.session.runs[run_id].title()} on {res.label or ext.name}: "
                             f"{correct[0] / correct[1]:.4f} ({correct[0]:,} of {correct[1]:,} "
                             "correct)", run_id=run_id)
        values = np.asarray(res.values)
        n = int(values.shape[0])
        shown = ("drawn with × over the map" if values.ndim == 2 and self.session.runs[run_id].embedding is not None
                 else "their labels are in the run's extensions")
        self._say(f"Extended run #{run_id} to {n:,} points in {res.time_s:.2f} s ({shown}){acc}.")
        self.window.show_status(f"Extended run #{run_id} to {ext.name} in {res.time_s:.2f} s")
        self.extended.emit(ext)

    def _correct_on(self, run_id: int, res, dataset_name: str | None):
        """(correct, total) of a classifier's predictions against a loaded data set's labels."""

        run = self.session.runs[run_id]
        ds = self.session.datasets.get(dataset_name) if dataset_name else None
        if run.kind != "classification" or ds is None or ds.labels is None:
            return None
        truth = ds.labels if res.rows is None else ds.labels[np.asarray(res.rows)]
        try:
            eq = same_labels(np.asarray(res.values), truth)
        except DataError:
            return None
        return int(eq.sum()), int(eq.size)

    def _fail(self, message: str, detail: str = "") -> None:
        self._say(message, error=True)
        self.window.report_error(message, detail, dialog=True)
        self.extendFailed.emit(message)

    def _extend_failed(self, run_id: int, what: str, message: str, detail: str) -> None:
        self._fail(f"Could not extend run #{run_id} to {what}: {message.rstrip('.')}. Nothing was changed.", detail)

    def _extend_cancelled(self) -> None:
        self._say("Extension cancelled; the earlier results are kept.")
        self.window.show_status("Extension cancelled; the earlier results are kept.")
        self.extendCancelled.emit()

    # -- hold-out split -------------------------------------------------------------------------
    def fit_with_holdout(self, algorithm_id: str | None = None, params: dict | None = None):
        """Fit the selected algorithm without a random held-out part of the current data set,
        then extend the fit to that part. Returns the Run (or None)."""
        ds = self.session.current_dataset
        if ds is None:
            self._fail("Load a data set first.")
            return None
        try:
            train, held = holdout_split(ds.n_samples, self.holdout_fraction.value() / 100.0,
                                        self.holdout_seed.value())
        except DataError as exc:
            self._fail(error_message(exc))
            return None
        run = self.window.run_algorithm(algorithm_id, params, ds.name, rows=train)
        if run is not None and not run.finished:
            self._pending_holdout[run.id] = held
            self._say(f"Fitting run #{run.id} on {train.size:,} points; {held.size:,} held out…")
        return run

    def _on_run_finished(self, run) -> None:
        held = self._pending_holdout.pop(run.id, None)
        if held is None or not run.succeeded:
            return
        self.extend_rows(run, run.dataset_name, held)

    # -- fit on a sample ----------------------------------------------------------------------
    def fit_on_sample(self, algorithm_id: str | None = None, params: dict | None = None, m: int | None = None):
        """Fit the selected algorithm on m random points of the current data set and extend it
        to all of them (one run holding every point). Returns the Run (or None)."""
        ds = self.session.current_dataset
        if ds is None:
            self._fail("Load a data set first.")
            return None
        m = int(self.sample_size.value() if m is None else m)
        seed = int(self.sample_seed.value())
        session, controls = self.session, self.window.run_controls

        def make_task(run):
            # the run's estimator (its chain too) and data, as a plain fit gets them; a third-party
            # part fits in a worker process and extends in another, as a plain run's extension does
            return sample_fit_of(session, run, m, seed, isolated=controls.isolated_for(run.algorithm_id))

        run = self.window.run_algorithm(algorithm_id, params, ds.name, make_task=make_task)
        if run is not None and not run.finished:
            self._say(f"Run #{run.id}: fitting on {min(m, ds.n_samples):,} of {ds.n_samples:,} points, "
                      "then extending to all…")
        return run

    # -- model files --------------------------------------------------------------------------
