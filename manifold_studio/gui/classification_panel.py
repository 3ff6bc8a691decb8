"""The Classification group of the algorithm panel, and the wiring of classification into the window.

Shown when a classification algorithm is selected:

- why Run is not possible (the data set has no labels) — said *before* Run, and Run disabled
  (:meth:`ClassificationPanel.blocker`, consulted by ``MainWindow.run_blocker``);
- a label column that looks continuous asks before running (:meth:`ClassificationPanel.confirm_run`);
- the evaluation: none, a stratified hold-out (test fraction, seed) or stratified k-fold
  cross-validation; after the fit, the evaluation runs as a job (progress, Cancel) and its
  result shows here (accuracy ± spread across folds, per-class precision / recall / F1) and
  in the confusion matrix view.

:func:`install_classification` also adds Tools ▸ Classify this map. Importing this module
registers the classification views (confusion matrix, decision regions, training curve).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QMessageBox,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from manifold_studio.algorithms.labels import looks_continuous
from manifold_studio.analysis.classification_tasks import evaluation_task
from manifold_studio.project.isolated_compare import comparison_needs_worker, evaluation_in_worker
from manifold_studio.evaluation import HOLDOUT, KFOLD, EvaluationResult
from manifold_studio.project.analysis_records import evaluation_from_record, evaluation_record
from manifold_studio.gui.views.palette import label_text
from manifold_studio.gui.widgets import message_label, say, seed_spin_box

NONE = "none"


class ClassificationPanel(QGroupBox):
    #: an evaluation finished (run, EvaluationResult)
    evaluated = Signal(object, object)

    def __init__(self, window, parent=None):
        super().__init__("Classification", parent)
        self.window = window
        self.results: dict[int, EvaluationResult] = {}
        self.eval_job = None
        #: answer to "the labels look continuous, run anyway?" when dialogs are off (tests)
        self.accept_continuous = False
        self.reason_label = message_label("")
        self.reason_label.setObjectName("classification_reason")
        self.method_combo = QComboBox()
        self.method_combo.addItem("hold-out (stratified)", HOLDOUT)
        self.method_combo.addItem("k-fold cross-validation (stratified)", KFOLD)
        self.method_combo.addItem("none (fit only)", NONE)
        self.method_combo.setToolTip("How the classifier's accuracy is estimated after the fit (each "
                                     "evaluation refits fresh models on the training parts).")
        self.fraction_spin = QDoubleSpinBox()
        self.fraction_spin.setRange(0.05, 0.9)
        self.fraction_spin.setSingleStep(0.05)
        self.fraction_spin.setValue(0.25)
        self.fraction_spin.setToolTip("Fraction of every class held out for testing.")
        self.folds_spin = QSpinBox()
        self.folds_spin.setRange(2, 50)
        self.folds_spin.setValue(5)
        self.folds_spin.setToolTip("Number of folds (each class spread evenly over them).")
        self.seed_spin = seed_spin_box("Seed of the random split.")
        self.result_label = message_label("")
        self.result_label.setObjectName("classification_result")
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["precision", "recall", "F1", "support"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setMaximumHeight(150)
        self.table.hide()
        form = QFormLayout()
        form.addRow("Evaluation:", self.method_combo)
        form.addRow("Test fraction:", self.fraction_spin)
        form.addRow("Folds:", self.folds_spin)
        form.addRow("Seed:", self.seed_spin)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.reason_label)
        lay.addLayout(form)
        lay.addWidget(self.result_label)
        lay.addWidget(self.table)
        self.method_combo.currentIndexChanged.connect(self._method_changed)
        self._method_changed()
        window.algorithm_panel.algorithmChanged.connect(lambda _a: self.refresh())
        window.bridge.datasetsChanged.connect(self.refresh)
        window.bridge.currentRunChanged.connect(self._current_run_changed)
        window.runFinished.connect(self._run_finished)
        self.refresh()

    # -- settings --------------------------------------------------------------------------------
    @property
    def method(self) -> str:
        return self.method_combo.currentData()

    def set_evaluation(self, method: str, *, test_fraction: float | None = None, n_splits: int | None = None,
                       seed: int | None = None) -> None:
        self.method_combo.setCurrentIndex(self.method_combo.findData(method))
        if test_fraction is not None:
            self.fraction_spin.setValue(test_fraction)
        if n_splits is not None:
            self.folds_spin.setValue(n_splits)
        if seed is not None:
            self.seed_spin.setValue(seed)

    def _method_changed(self) -> None:
        self.fraction_spin.setEnabled(self.method == HOLDOUT)
        self.folds_spin.setEnabled(self.method == KFOLD)
        self.seed_spin.setEnabled(self.method != NONE)

    def _algorithm_cls(self, algorithm_id: str | None = None, cls=None):
        if cls is None:
            algo = algorithm_id or self.window.algorithm_panel.algorithm_id
            cls = self.window.host.algorithms.get(algo) if algo else None
        return cls if cls is not None and cls.kind == "classification" else None

    # -- before Run ------------------------------------------------------------------------------
    def blocker(self, algorithm_id: str | None = None, cls=None) -> str:
        """Why a classifier cannot run on the current data set ("" when it can); ``cls``: the
        algorithm class when the caller has resolved it already."""
        cls = self._algorithm_cls(algorithm_id, cls)
        ds = self.window.session.current_dataset
        if cls is None or ds is None:
            return ""
        if ds.labels is None:
            return (f"{cls.name} is a classifier: it learns from labels, and data set '{ds.name}' has "
                    "none. Load a data set with a label column (choose it in the loader options).")
        if np.unique(np.asarray(ds.labels).astype(str)).size < 2:
            return f"The labels of '{ds.name}' hold a single class: a classifier needs at least two."
        return ""

    def refresh(self) -> None:
        cls = self._algorithm_cls()
        self.setVisible(cls is not None)
        reason = self.blocker()
        if reason:
            say(self.reason_label, reason, error=True)
        elif cls is not None and self.window.session.current_dataset is not None:
            ds = self.window.session.current_dataset
            question = looks_continuous(ds.labels)
            say(self.reason_label, (f"Labels: '{ds.label_name or 'label'}'. " + question) if question
                else f"Learns from the labels '{ds.label_name or 'label'}' of '{ds.name}'.")
        else:
            say(self.reason_label, "")
        self.window.run_controls.update_run_enabled()

    def confirm_run(self, algorithm_id: str | None = None, cls=None) -> bool:
        """Ask before fitting a classifier on labels that look continuous (False: do not run);
        ``cls``: the algorithm class when the caller has resolved it already."""
        if self._algorithm_cls(algorithm_id, cls) is None:
            return True
        reason = self.blocker(algorithm_id, cls)
        if reason:  # e.g. Ctrl+R with no labels: say why, fit nothing
            say(self.reason_label, reason, error=True)
            self.window.report_error(f"Cannot run: {reason}", log=False)
            return False
        ds = self.window.session.current_dataset
        question = looks_continuous(ds.labels) if ds is not None and ds.labels is not None else ""
        if not question:
            return True
        if self.window.dialogs:
            answer = QMessageBox.question(
                self.window, "Labels look continuous", question + "\n\nFit the classifier anyway?",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
            ok = answer == QMessageBox.StandardButton.Yes
        else:
            ok = self.accept_continuous
        if not ok:
            say(self.reason_label, question + " Not run: choose another label column, or confirm.", error=True)
        return ok

    # -- after the fit: evaluation ---------------------------------------------------------------
    def result_for(self, run) -> EvaluationResult | None:
        return None if run is None else self.results.get(run.id)

    @property
    def busy(self) -> bool:
        return self.eval_job is not None and not self.eval_job.finished

    def _run_finished(self, run) -> None:
        if run is None or run.kind != "classification" or not run.succeeded or self.method == NONE:
            return
        if run.meta.get("stopped_early") or run.meta.get("applied_model"):
            return  # a saved model applied to a file is not refitted; its accuracy is in Out of sample
        self.evaluate(run)

    def evaluate(self, run, method: str | None = None):
        """Start evaluating ``run``'s algorithm and parameters, behind its preparation chain, on
        its data (a foreground job): each fold fits the whole pipeline on its training part."""
        method = method or self.method
        X, y = self.window.session.training_data(run)
        est = self.window.session.run_estimator(run)  # its chain and classifier, refitted per fold
        word = "hold-out" if method == HOLDOUT else f"{self.folds_spin.value()}-fold"
        say(self.result_label, f"Evaluating run #{run.id} ({word})…")
        theirs = comparison_needs_worker([est], host=self.window.host)  # a third-party classifier or step: in a worker process
        self.eval_job = self.window.start_job(
            evaluation_in_worker if theirs else evaluation_task, est, X, y, method,
            test_fraction=self.fraction_spin.value(),
            n_splits=self.folds_spin.value(), random_state=self.seed_spin.value(),
            title=f"Evaluating {run.algorithm_id} ({word})",
            on_success=lambda res, run=run: self._evaluated(run, res),
            on_failure=lambda msg, detail, run=run: self._failed(run, msg, detail),
            on_cancel=lambda: say(self.result_label, f"Evaluation of run #{run.id} cancelled; the fitted "
                                                     "model is kept."))
        return self.eval_job

    def _failed(self, run, message, detail) -> None:
        say(self.result_label, f"Evaluation of run #{run.id} failed: {message}", error=True)
        self.window.report_error(f"Evaluation of run {run.title()} failed: {message}", detail)

    def _evaluated(self, run, result: EvaluationResult) -> None:
        self.results[run.id] = result
        run.meta["evaluation"] = {"summary": result.summary(), "mean_accuracy": result.mean_accuracy,
                                  "std_accuracy": result.std_accuracy,
                                  "fold_accuracy": [float(a) for a in result.fold_accuracy], **result.params}
        self.window.session.log(f"Run #{run.id} evaluation: {result.summary()}", run_id=run.id)
        if run.id in self.window.session.runs:
            self.window.session.run_changed(run.id)  # the Runs table shows the score
        self.evaluated.emit(run, result)
        if self.window.session.current_run is run:
            self._show(run, result)
            view = self.window.views.get("confusion")
            if view is not None:
                view.show_result(run, result)

    # -- projects --------------------------------------------------------------------------------
    def project_analyses(self) -> dict:
        """Every run's evaluation as project records (``evaluation/<run id>``)."""
        return {f"evaluation/{rid}": evaluation_record(res) for rid, res in self.results.items()
                if rid in self.window.session.runs}

    def restore_analyses(self, analyses: dict) -> None:
        """Take the evaluations of an opened project (replacing those of the previous one)."""
        self.results.clear()
        for key, (doc, arrays) in analyses.items():
            kind, _, rid = key.partition("/")
            if kind == "evaluation" and rid.isdigit() and int(rid) in self.window.session.runs:
                self.results[int(rid)] = evaluation_from_record(doc, arrays)
        run = self.window.session.current_run
        self._show(run, self.result_for(run))
        view = self.window.views.get("confusion")
        if view is not None and run is not None and run.kind == "classification":
            view.show_result(run, self.result_for(run))

    def _current_run_changed(self, run) -> None:
        self._show(run, self.result_for(run))
        dock = self.window.docks.get("view:decision")
        if run is not None and run.kind == "classification" and run.succeeded and dock is not None:
            dock.raise_()  # the decision regions first, not a panel tabbed in front of them

    def _show(self, run, result: EvaluationResult | None) -> None:
        if result is None:
            saved = run.meta.get("evaluation") if run is not None else None
            if isinstance(saved, dict) and saved.get("summary"):  # e.g. a run restored from a project
                say(self.result_label, f"Run #{run.id}: <b>{saved['summary']}</b>")
            elif run is not None and run.kind == "classification" and not self.busy:
                say(self.result_label, f"Run #{run.id}: no evaluation.")
            self.table.hide()
            return
        say(self.result_label, f"Run #{run.id}: <b>{result.summary()}</b>")
        K = len(result.classes)
        self.table.setRowCount(K)
        self.table.setVerticalHeaderLabels([label_text(result.classes, i) for i in range(K)])
        for i in range(K):
            for j, v in enumerate((f"{result.precision[i]:.3f}", f"{result.recall[i]:.3f}",
                                   f"{result.f1[i]:.3f}", f"{int(result.support[i]):,}")):
                item = QTableWidgetItem(v)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()
        self.table.show()


def classify_this_map(window) -> int | None:
    """Fit the next run on the map shown now, with a classifier (the panel's, else perceptron)."""
    selector = window.input_selector
    map_run = selector._map_run()
    if map_run is None:
        window.report_error("No map of the current data set is shown: run an embedding first.", log=False)
        return None
    selector.refresh()
    selector.set_source_run(map_run.id)
    panel = window.algorithm_panel
    current = window.host.algorithms.get(panel.algorithm_id)
    if current is None or current.kind != "classification":
        names = sorted(a for a, c in window.host.algorithms.items() if c.kind == "classification")
        pick = next((a for a in ("svm", "perceptron") if a in names), names[0] if names else None)
        if pick:
            panel.select_algorithm(pick)
    window.show_status(f"Classifying the map of run #{map_run.id}: set the parameters and press Run.")
    return map_run.id


def install_classification(window) -> ClassificationPanel:
    """Add the Classification group under the algorithm settings and Tools ▸ Classify this map."""
    panel = ClassificationPanel(window)
    window.algorithm_panel.layout().addWidget(panel)
    window.classification_panel = panel
    act = QAction("C&lassify this map", window)
    act.setToolTip("Fit the next run on the map shown now with a classifier: decision regions on the map.")
    act.triggered.connect(lambda: classify_this_map(window))
    window.add_tool_action(act)
    window.classify_map_action = act
    return panel
