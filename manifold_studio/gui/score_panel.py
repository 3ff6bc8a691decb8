"""Test & Score (Tools ▸ Test & Score, a dock): several classifiers scored on the same folds of
the current data set (:func:`manifold_studio.evaluation.compare_learners`, on a worker thread with
progress and Cancel).

Every learner is the Preparation dock's chain followed by its classifier: the pipeline a run
fits (:func:`manifold_studio.analysis.chain.chained_estimator`, bound to the data set's columns),
refitted whole on each training part; the line above the table names the chain scored.

Left: the host's classifiers as a checkable list, the settings of the highlighted one (the
generated parameter form; each classifier keeps its own), the scheme (stratified k-fold,
repeated k-fold, hold-out, leave-one-out) and the seed. Right: the table (one row per learner,
mean ± spread over the folds), the paired comparison (folds won), and the ROC, calibration and
confusion-matrix views (:mod:`manifold_studio.gui.score_plots`); a confusion cell selects
its rows on the map.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.analysis.compare_learners import METRICS, TITLES
from manifold_studio.analysis.report import view_item
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.project.isolated_compare import compare_learners_in_worker, comparison_needs_worker
from manifold_studio.evaluation import compare_learners
from manifold_studio.project.analysis_records import (
    comparison_from_record,
    comparison_record,
)
from manifold_studio.gui.fit_scroll import scrollable
from manifold_studio.gui.method_list import ComparisonJob, MethodList
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.score_plots import CalibrationView, LearnerConfusion, RocView
from manifold_studio.gui.widgets import message_label, say, seed_spin_box
from manifold_studio.analysis.chain import chain_text, chained_estimator

KFOLD, REPEATED, HOLDOUT, LOO = "kfold", "repeated", "holdout", "loo"


def spread_text(mean: float, spread: float, metric: str) -> str:
    if not np.isfinite(mean):
        return "n/a"
    digits = 4 if metric.endswith("time") else 3
    return f"{mean:.{digits}f} ± {spread:.{digits}f}"


class ScorePanel(ComparisonJob, QWidget):
    JOB_TITLE = "Test & Score"

    #: a comparison finished and is shown (Comparison)
    compared = Signal(object)

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.init_job(window, "Run Test && Score", "Tick two or more classifiers and press Run.")
        self.learners = MethodList(
            window.host, [a for a, cls in sorted(window.host.algorithms.items()) if cls.kind == "classification"],
            tooltip="Tick the classifiers to compare; the highlighted one's settings are below.",
            copy_tooltip="Add another learner of the highlighted classifier, with its own settings "
                         "(e.g. an SVM with an RBF kernel and one with a linear kernel).")
        self.learner_list = self.learners.list
        self.scheme_combo = QComboBox()
        for text, key in (("stratified k-fold", KFOLD), ("repeated stratified k-fold", REPEATED),
                          ("stratified hold-out", HOLDOUT), ("leave-one-out", LOO)):
            self.scheme_combo.addItem(text, key)
        self.folds_spin = QSpinBox()
        self.folds_spin.setRange(2, 100)
        self.folds_spin.setValue(5)
        self.repeats_spin = QSpinBox()
        self.repeats_spin.setRange(1, 100)
        self.repeats_spin.setValue(3)
        self.fraction_spin = QDoubleSpinBox()
        self.fraction_spin.setRange(0.05, 0.9)
        self.fraction_spin.setSingleStep(0.05)
        self.fraction_spin.setValue(0.3)
        self.seed_spin = seed_spin_box("Seed of the folds (scikit-learn's StratifiedKFold with this random_state). "
                                       "Each learner's own seed (random_state) is in its settings, 0 by default: "
                                       "the same settings give the same figures on every run and in 'score'.")
        self.scheme_combo.currentIndexChanged.connect(lambda _i: self._scheme_changed())
        self.prep_label = message_label("")
        self.prep_label.setObjectName("test_score_preparation")
        self.prep_label.setToolTip("Every learner is the preparation chain (the Preparation dock's steps) "
                                   "followed by its classifier, fitted on each training part only.")
        self.table = QTableWidget(0, len(METRICS))
        self.table.setHorizontalHeaderLabels([TITLES[m] for m in METRICS])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.compare_combo = QComboBox()
        for m in METRICS:
            self.compare_combo.addItem(TITLES[m], m)
        self.compare_combo.currentIndexChanged.connect(lambda _i: self._show_wins())
        self.wins_table = QTableWidget()
        self.wins_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.roc_view = RocView()
        self.calibration_view = CalibrationView()
        self.confusion_view = LearnerConfusion(on_select=self.select_rows)
        self._layout()
        self._scheme_changed()
        prep = window.preparation_panel
        if prep is not None:
            prep.chainChanged.connect(self.show_preparation)
        self.show_preparation()

    def _layout(self) -> None:
        form = QFormLayout()
        form.addRow("Scheme:", self.scheme_combo)
        form.addRow("Folds:", self.folds_spin)
        form.addRow("Repeats:", self.repeats_spin)
        form.addRow("Test fraction:", self.fraction_spin)
        form.addRow("Seed:", self.seed_spin)
        left = self.settings_column(self.learners, form, 2)
        wins = QWidget()
        wl = QVBoxLayout(wins)
        wl.setContentsMargins(2, 2, 2, 2)
        row = QHBoxLayout()
        row.addWidget(message_label("Folds where the row learner beats the column learner, on:"), 1)
        row.addWidget(self.compare_combo)
        wl.addLayout(row)
        wl.addWidget(self.wins_table, 1)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table, "Scores")
        self.tabs.addTab(wins, "Paired comparison")
        self.tabs.addTab(self.roc_view, "ROC")
        self.tabs.addTab(self.calibration_view, "Calibration")
        self.tabs.addTab(self.confusion_view, "Confusion")
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(2, 2, 2, 2)
        rl.addWidget(self.status)
        rl.addWidget(self.prep_label)
        rl.addWidget(self.tabs, 1)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(1, 3)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)

    # -- settings --------------------------------------------------------------------------------
    def _scheme_changed(self) -> None:
        scheme = self.scheme_combo.currentData()
        self.folds_spin.setEnabled(scheme in (KFOLD, REPEATED))
        self.repeats_spin.setEnabled(scheme in (REPEATED, HOLDOUT))
        self.fraction_spin.setEnabled(scheme == HOLDOUT)
        self.seed_spin.setEnabled(scheme != LOO)

    def set_scheme(self, scheme: str, *, folds: int | None = None, repeats: int | None = None,
                   fraction: float | None = None, seed: int | None = None) -> None:
        self.scheme_combo.setCurrentIndex(self.scheme_combo.findData(scheme))
        for spin, value in ((self.folds_spin, folds), (self.repeats_spin, repeats),
                            (self.fraction_spin, fraction), (self.seed_spin, seed)):
            if value is not None:
                spin.setValue(value)

    def add_copy(self, name: str | None = None) -> str:
        """Add (ticked) another learner of learner ``name``'s classifier (default: the highlighted
        one) starting from its settings; returns the new learner's name ("svm #2")."""
        return self.learners.add_copy(name)

    def form(self, name: str) -> ParamForm:
        """The settings of learner ``name`` (an algorithm id, or a copy's name)."""
        return self.learners.form(name)

    def check(self, name: str, checked: bool = True) -> None:
        self.learners.check(name, checked)

    def checked(self) -> list[str]:
        return self.learners.checked()

    def scheme_kwargs(self) -> dict:
        scheme = self.scheme_combo.currentData()
        seed = self.seed_spin.value()
        if scheme == KFOLD:
            return {"cv": self.folds_spin.value(), "seed": seed}
        if scheme == REPEATED:
            return {"cv": self.folds_spin.value(), "repeats": self.repeats_spin.value(), "seed": seed}
        if scheme == HOLDOUT:
            return {"holdout": self.fraction_spin.value(), "repeats": self.repeats_spin.value(), "seed": seed}
        return {"cv": "loo"}

    # -- the preparation chain -------------------------------------------------------------------
    def chain(self) -> list[tuple[str, dict]]:
        """The Preparation dock's steps: every learner is scored behind them."""
        return self.window.preparation_chain()

    def learner(self, algo: str, params: dict, chain, ds):
        """A learner as a run would fit it: classifier ``algo`` with ``params``, behind the
        preparation ``chain`` (the run's pipeline, bound to the columns of ``ds``)."""
        if not chain:
            return algo, params
        est = self.window.host.algorithm_class(algo)(**params)
        est.validate_params()
        return chained_estimator(chain, est, ds)

    def show_preparation(self) -> None:
        """"Preparation: standardize → select_columns(...)" above the table: the chain of the
        comparison shown, and the Preparation dock's when the next run would use another one."""
        now = chain_text(self.chain(), brief=True) or "none"
        if self.comparison is None:
            text = f"Preparation: {now}"
        else:
            shown = self.comparison.preparation()
            text = f"Preparation: {shown}"
            if shown != now:
                text += f" (the Preparation dock now has: {now}; Run scores with it)"
        self.prep_label.setText(text)

    # -- running ---------------------------------------------------------------------------------
    def run(self):
        """Start the comparison of the ticked classifiers (a foreground job); None when it cannot."""
        ds = self.window.session.current_dataset
        names = self.checked()
        reason = ("Load a data set with labels first." if ds is None else
                  f"Data set '{ds.name}' has no labels: Test & Score needs a label column." if ds.labels is None else
                  "Tick at least one classifier." if not names else "")
        chain = self.chain()
        prep_panel = self.window.preparation_panel
        if not reason and prep_panel is not None and prep_panel.errors():
            reason = prep_panel.errors()
        learners = []
        if not reason:
            try:
                learners = [self.learner(algo, params, chain, ds) for algo, params in self.learners.specs(names)]
            except ManifoldStudioError as exc:
                reason = str(exc)
        if reason:
            say(self.status, reason, error=True)
            return None
        self.dataset_name = ds.name
        prep = chain_text(chain, brief=True) or "none"
        theirs = comparison_needs_worker(learners, chain, self.window.host)  # third-party code runs in a worker process
        where = f"; {', '.join(theirs)} from a plugin: in a worker process" if theirs else ""
        say(self.status, f"Scoring {', '.join(names)} on '{ds.name}' (preparation: {prep}{where})…")
        score = compare_learners_in_worker if theirs else compare_learners
        return self.launch(score, learners, ds.X, ds.labels, names=names, **self.scheme_kwargs())

    def _cancelled(self) -> None:
        say(self.status, "Test & Score cancelled.")

    def _done(self, comparison) -> None:
        self.show_comparison(comparison, self.dataset_name)
        self.window.session.log(f"Test & Score on '{self.dataset_name}': "
                                + "; ".join(f"{r.name} CA {r.mean('accuracy'):.3f}" for r in comparison.learners))

    # -- showing ---------------------------------------------------------------------------------
    def show_comparison(self, comparison, dataset_name: str | None) -> None:
        self.comparison, self.dataset_name = comparison, dataset_name
        self.show_preparation()
        L = len(comparison.learners) if comparison is not None else 0
        self.table.setRowCount(L)
        self.table.setVerticalHeaderLabels([r.name for r in comparison.learners] if L else [])
        for i in range(L):
            r = comparison.learners[i]
            for j, m in enumerate(METRICS):
                item = QTableWidgetItem(spread_text(r.mean(m), r.spread(m), m))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if m == "auc" and r.auc_note:
                    item.setToolTip(r.auc_note)
                self.table.setItem(i, j, item)
        self.table.resizeColumnsToContents()
        self._show_wins()
        for view in (self.roc_view, self.calibration_view, self.confusion_view):
            view.set_comparison(comparison)
        if comparison is not None:
            problems = [m for r in comparison.learners for m in r.failures]
            notes = [r.auc_note for r in comparison.learners if r.auc_note]
            text = (f"{L} learner(s) on '{dataset_name}', {len(comparison.folds)} fold(s); mean ± spread over folds.")
            if problems or notes:
                text += " " + " ".join(problems + notes)
            say(self.status, text, error=bool(problems))
            self.compared.emit(comparison)

    def _show_wins(self) -> None:
        c = self.comparison
        if c is None:
            self.wins_table.setRowCount(0)
            self.wins_table.setColumnCount(0)
            return
        wins, paired = c.wins(self.compare_combo.currentData())
        names = [r.name for r in c.learners]
        self.wins_table.setRowCount(len(names))
        self.wins_table.setColumnCount(len(names))
        self.wins_table.setHorizontalHeaderLabels(names)
        self.wins_table.setVerticalHeaderLabels(names)
        for i in range(len(names)):
            for j in range(len(names)):
                text = "—" if i == j else f"{wins[i, j]}/{paired[i, j]}"
                self.wins_table.setItem(i, j, QTableWidgetItem(text))
        self.wins_table.resizeColumnsToContents()

    # -- projects --------------------------------------------------------------------------------
    def project_analyses(self) -> dict:
        if self.comparison is None:
            return {}
        doc, arrays = comparison_record(self.comparison)
        doc["dataset"] = self.dataset_name
        return {"test_score": (doc, arrays)}

    def restore_analyses(self, analyses: dict) -> None:
        saved = analyses.get("test_score")
        if saved is None:
            self.show_comparison(None, None)
            say(self.status, "Tick two or more classifiers and press Run.")
            return
        doc, arrays = saved
        self.show_comparison(comparison_from_record(doc, arrays), doc.get("dataset"))

    def report_blocker(self) -> str:
        """Why *Add to report* cannot add this dock yet ("" when it can)."""
        return "" if self.comparison is not None else "Nothing to report: run Test & Score first."

    def report_item(self, caption: str = "", png: bytes | None = None):
        """The report item of this dock (*Add to report*): the data set, the preparation chain,
        the scheme and each learner's settings and main figures, with the dock as shown."""
        c = self.comparison
        if c is None:
            raise ManifoldStudioError("Nothing to report: run Test & Score first.")
        sc = c.scheme
        scheme = (f"stratified hold-out of {sc['holdout']:g}" if sc.get("holdout") is not None else
                  "leave-one-out" if sc.get("cv") == "loo" else f"stratified {sc.get('cv')}-fold")
        if sc.get("repeats", 1) > 1:
            scheme += f", {sc['repeats']} repeats"
        facts = [("Data set", str(self.dataset_name)), ("Preparation", c.preparation()),
                 ("Scheme", f"{scheme}, seed {sc.get('seed')}, {len(c.folds)} fold(s)")]
        for r in c.learners:
            params = ", ".join(f"{k}={v!r}" for k, v in r.params.items())
            ca = spread_text(r.mean("accuracy"), r.spread("accuracy"), "accuracy")
            facts.append((r.name, f"{r.algorithm}({params}): CA {ca}, "
                          f"ROC AUC {spread_text(r.mean('auc'), r.spread('auc'), 'auc')}"))
        return view_item("Test and Score", caption, png, facts)

    def select_rows(self, rows) -> None:
        if self.dataset_name is not None and self.dataset_name in self.window.session.datasets:
            self.window.selection.select(self.dataset_name, np.asarray(rows, dtype=np.intp))


def install_test_score(window) -> ScorePanel:
    """The Test & Score dock (bottom area) as ``window.test_score`` and Tools ▸ Test & Score."""
    panel = ScorePanel(window)
    window.test_score = panel
    dock = window.add_dock("test_score", "Test and Score", scrollable(panel), "bottom")
    act = QAction("&Test && Score…", window)
    act.setToolTip("Compare several classifiers on the same cross-validation folds: scores, ROC, calibration, "
                   "confusion matrices.")

    def show():
        dock.show()
        dock.raise_()

    act.triggered.connect(show)
    window.add_tool_action(act)
    window.test_score_action = act
    return panel
