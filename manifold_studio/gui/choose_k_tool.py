"""The "Choose k" tool: run a clustering method for every k in a range and plot the criteria.

The computation is :func:`manifold_studio.analysis.choose_k.choose_k` (Qt-free) on a worker thread, with
progress and cancel (the window's Cancel button or the tool's own). After each k the method
publishes that k's criteria (``progress.partial``) and the four curves grow as they come:
the within-cluster inertia W, the Davies–Bouldin index, the mean silhouette and the validation
log-likelihood of the Gaussian mixture built from each partition (seed 000). The suggested k
is marked on every plot and fills the k box; "Run with k = …" makes the chosen k run state
(:func:`~manifold_studio.session.chosen_k.plan_chosen_k`): a hierarchical run on the same input
is CUT into k clusters by ``session.cut`` (the dendrogram's command, undoable, no refit); a method
that cannot be cut (k-means, a mixture, spectral clustering) gets a new run with k through the
window's fit path, and the tool says which it did.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.analysis.choose_k import ChooseKResult, choose_k, cluster_count_param
from manifold_studio.analysis.compare_clusterings import cluster_count_methods
from manifold_studio.analysis.scales import scale_advice
from manifold_studio.session.chosen_k import plan_chosen_k
from manifold_studio.errors import ManifoldStudioError, error_message, with_note
from manifold_studio.gui.lazy_slot import LazySlot
from manifold_studio.gui.input_selector import RAW
from manifold_studio.gui.widgets import message_label, say, seed_spin_box
from manifold_studio.session.isolated_fit import fit_estimator_in_subprocess

CURVES = (("within", "within-cluster inertia W", "min"),
          ("davies_bouldin", "Davies–Bouldin (lower is better)", "min"),
          ("silhouette", "mean silhouette (higher is better)", "max"),
          ("validation_log_likelihood", "validation log-likelihood", "max"))


def _fit_in_worker(est, X, progress):
    """One fit of Choose k in a worker process (a third-party method, as a run fits it): its labels."""
    return fit_estimator_in_subprocess(est, X, None, progress).labels


class ChooseKTool(QWidget):
    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.result: ChooseKResult | None = None
        self.rows: list[dict] = []
        self.job = None
        self._request: dict = {}
        self.method_combo = QComboBox()
        self.method_combo.setObjectName("choose_k_method")
        algorithms = window.host.algorithms
        for aid in sorted(cluster_count_methods(algorithms), key=lambda a: algorithms[a].name.lower()):
            self.method_combo.addItem(algorithms[aid].name, aid)
        idx = self.method_combo.findData("kmeans")
        self.method_combo.setCurrentIndex(max(idx, 0))
        self.input_combo = QComboBox()
        self.input_combo.setToolTip("Cluster the data set through the Preparation dock's chain (what Run fits) "
                                    "or the map (embedding) of an earlier run.")
        self.k_min = QSpinBox()
        self.k_min.setRange(1, 1000)
        self.k_min.setValue(2)
        self.k_max = QSpinBox()
        self.k_max.setRange(1, 100_000)
        self.k_max.setValue(8)
        self.validation = QDoubleSpinBox()
        self.validation.setRange(0.05, 0.9)
        self.validation.setSingleStep(0.05)
        self.validation.setValue(0.25)
        self.validation.setToolTip("Share of the points held out to score the mixture built from each partition.")
        self.seed = seed_spin_box("Seed of the train/validation split and of the method.")
        self.start_button = QPushButton("Compute")
        self.start_button.setObjectName("choose_k_start")
        self.start_button.clicked.connect(lambda: self.start())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.k_choice = QSpinBox()
        self.k_choice.setObjectName("choose_k_choice")
        self.k_choice.setRange(1, 100_000)
        self.k_choice.setPrefix("k = ")
        self.k_choice.setEnabled(False)
        self.k_choice.setToolTip("The k to run: the suggested one, or another. A hierarchical run on the same "
                                 "input is cut into k clusters (no refit); other methods fit a new run.")
        self.k_choice.valueChanged.connect(lambda k: self.apply_button.setText(f"Run with k = {k}"))
        self.apply_button = QPushButton("Run with the suggested k")
        self.apply_button.setObjectName("choose_k_apply")
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(lambda: self.run_chosen())
        self.message = message_label("Run a clustering method for k in a range and compare the criteria.")

        ks = QHBoxLayout()
        ks.addWidget(self.k_min)
        ks.addWidget(QLabel("to"))
        ks.addWidget(self.k_max)
        form = QFormLayout()
        form.addRow("Method:", self.method_combo)
        form.addRow("Input:", self.input_combo)
        form.addRow("k from:", ks)
        form.addRow("Held out:", self.validation)
        form.addRow("Seed:", self.seed)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.cancel_button)

        # the four plots are made when the dock is first shown or a result drawn (lazy_slot.py)
        self._graphics_slot = LazySlot(self._make_graphics)
        self._graphics_slot.setMinimumHeight(260)
        self._plots = self._curves = self._marks = None

        left = QVBoxLayout()
        left.addLayout(form)
        left.addLayout(buttons)
        apply_row = QHBoxLayout()
        apply_row.addWidget(self.k_choice)
        apply_row.addWidget(self.apply_button, 1)
        left.addLayout(apply_row)
        left.addWidget(self.message)
        left.addStretch(1)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        box = QWidget()
        box.setLayout(left)
        box.setMaximumWidth(330)
        lay.addWidget(box)
        lay.addWidget(self._graphics_slot, 1)
        window.bridge.runChanged.connect(lambda _r: self.refresh_inputs())
        window.bridge.datasetsChanged.connect(self.refresh_inputs)
        self.refresh_inputs()

    def _make_graphics(self) -> pg.GraphicsLayoutWidget:
        graphics = pg.GraphicsLayoutWidget()
        plots, curves, marks = {}, {}, {}
        for i, (key, title, _best) in enumerate(CURVES):
            p = graphics.addPlot(row=i // 2, col=i % 2, title=title)
            p.showGrid(x=True, y=True, alpha=0.2)
            p.setLabel("bottom", "k")
            p.setMenuEnabled(False)
            curves[key] = p.plot([], [], pen=pg.mkPen(31, 119, 180, width=2), symbol="o", symbolSize=6,
                                 symbolBrush=(31, 119, 180))
            mark = pg.InfiniteLine(angle=90, pen=pg.mkPen(214, 39, 40, width=2, style=Qt.PenStyle.DashLine))
            mark.hide()
            p.addItem(mark)
            plots[key], marks[key] = p, mark
        graphics.setMinimumHeight(260)
        self._plots, self._curves, self._marks = plots, curves, marks
        return graphics

    @property
    def graphics(self) -> pg.GraphicsLayoutWidget:
        return self._graphics_slot.content()

    @property
    def plots(self) -> dict:
        """The plots by criterion (made on first use, as :attr:`curves` and :attr:`marks`)."""
        self._graphics_slot.content()
        return self._plots

    @property
    def curves(self) -> dict:
        self._graphics_slot.content()
        return self._curves

    @property
    def marks(self) -> dict:
        self._graphics_slot.content()
        return self._marks

    # -- inputs ---------------------------------------------------------------------------------
    def refresh_inputs(self) -> None:
        keep = self.input_combo.currentData()
        self.input_combo.blockSignals(True)
        self.input_combo.clear()
        self.input_combo.addItem("data set (after the Preparation chain)", RAW)
        session = self.window.session
        for r in reversed(list(session.runs.values())):
            if r.succeeded and r.embedding is not None and r.dataset_name == session.current_dataset_name:
                self.input_combo.addItem(f"map of run #{r.id} {r.algorithm_id}", r.id)
        idx = self.input_combo.findData(keep)
        self.input_combo.setCurrentIndex(max(idx, 0))
        self.input_combo.blockSignals(False)

    def set_input(self, run_id: int | None) -> bool:
        self.refresh_inputs()
        idx = self.input_combo.findData(RAW if run_id is None else run_id)
        if idx >= 0:
            self.input_combo.setCurrentIndex(idx)
        return idx >= 0

    @property
    def busy(self) -> bool:
        return self.job is not None and not self.job.finished

    # -- the computation ------------------------------------------------------------------------
    def start(self, method: str | None = None, k_min: int | None = None, k_max: int | None = None):
        """Start the computation on a worker thread (returns the Job, or None with a message)."""
        if self.busy:
            self._say("Already computing: wait or cancel.", error=True)
            return None
        method = method or self.method_combo.currentData()
        k_min = self.k_min.value() if k_min is None else int(k_min)
        k_max = self.k_max.value() if k_max is None else int(k_max)
        session = self.window.session
        if not method:
            self._say("No clustering method with a number of clusters is installed.", error=True)
            return None
        if k_max < k_min:
            self._say(f"The range k = {k_min} to {k_max} is empty: the last k must be at least the first.",
                      error=True)
            return None
        source = self.input_combo.currentData()
        source = None if source in (None, RAW) else int(source)
        try:  # what the next run fits on: the data set through the current chain, or a map
            ds = session.dataset()
            prepared = session.prepared_dataset(ds.name) if source is None else None
            X = prepared.X if source is None else session.run_by_id(source).embedding
        except Exception as exc:  # noqa: BLE001
            self._say(f"Cannot choose k: {exc}", error=True)
            return None
        params = self._method_params(method)
        self._request = {"method": method, "source_run": source, "params": params, "dataset": ds.name,
                         "prepared": prepared, "chain": session.chain if source is None else []}
        self._pending_rows: list[dict] = []
        self.rows = []
        self._clear_marks()
        for key in self.curves:
            self.curves[key].setData([], [])
        self.apply_button.setEnabled(False)
        self.k_choice.setEnabled(False)
        self.start_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        where = f"{ds.name} ({prepared.caption})" if source is None else f"the map of run #{source}"
        self._say(f"Running {method} for k = {k_min}…{k_max} on {where}…")
        self.job = self.window.start_job(
            choose_k, X, range(k_min, k_max + 1), method, params,
            validation_fraction=float(self.validation.value()), random_state=int(self.seed.value()),
            fit=_fit_in_worker if self.window.run_controls.isolated_for(method) else None,
            title=f"Choosing k ({method})",
            on_success=self._done, on_failure=self._failed, on_cancel=self._cancelled)
        self.job.partial.connect(self._partial)
        self.job.ended.connect(self._ended)
        return self.job

    def _method_params(self, method: str) -> dict:
        """The panel's settings when it shows the same method, else the defaults; k is set per run."""
        panel = self.window.algorithm_panel
        params = {}
        if panel.algorithm_id == method:
            try:
                params = dict(panel.values())
            except Exception:  # noqa: BLE001 - invalid form: defaults
                params = {}
        cls = self.window.host.algorithm_class(method)
        params.pop(cluster_count_param(cls), None)
        if "random_state" in cls.param_constraints() \
                and params.get("random_state") is None:
            params["random_state"] = int(self.seed.value())
        return params

    def cancel(self) -> None:
        if self.busy:
            self.job.cancel()
            self._say("Cancelling…")

    def _partial(self, row) -> None:
        if isinstance(row, dict) and row.get("step") == "choose_k":
            self.rows.append(row)
            ks = np.array([r["k"] for r in self.rows], dtype=float)
            for key in self.curves:
                self._set_curve(key, ks, np.array([r[key] for r in self.rows], dtype=float))

    def _set_curve(self, key, ks, values) -> None:
        ok = np.isfinite(values)
        self.curves[key].setData(ks[ok], values[ok])

    def _done(self, result: ChooseKResult) -> None:
        self.result = result
        for key in self.curves:
            self._set_curve(key, result.k.astype(float), np.asarray(getattr(result, key), dtype=float))
        k = int(result.suggested_k)
        for key, mark in self.marks.items():
            mark.setValue(k)
            mark.show()
        self.plots["validation_log_likelihood"].setTitle(f"validation log-likelihood — suggested k = {k}")
        others = ", ".join(f"{name.replace('_', ' ')}: {v}" for name, v in result.suggestions.items()
                           if name != "validation_log_likelihood")
        advice = self._scale_advice()
        self._say(f"<b>Suggested k = {k}</b> ({result.rule}). Other criteria would pick {others}."
                  + (f"<br><b>Note:</b> {advice.text()}" if advice else ""))
        self.k_choice.setRange(int(result.k.min()), int(result.k.max()))
        self.k_choice.setValue(k)
        self.apply_button.setText(f"Run with k = {k}")
        self.apply_button.setEnabled(True)
        self.k_choice.setEnabled(True)
        self.window.show_status(f"Choose k: suggested k = {k}")

    def _scale_advice(self):
        """The scale advice for the (prepared) data the k was chosen on (None on a map, whose axes are
        the method's own)."""
        request = getattr(self, "_request", None) or {}
        prepared = request.get("prepared")
        if request.get("source_run") is not None or prepared is None:
            return None
        return scale_advice(prepared.X, prepared.columns)

    def _failed(self, message: str, detail: str) -> None:
        self._say(with_note(f"Choosing k failed: {message}", "the previous results are kept" if self.result else ""),
                  error=True)
        if self.result is not None:
            self._done_again()
        self.window.report_error(f"Choosing k failed: {message}", detail)

    def _cancelled(self) -> None:
        self._say("Cancelled" + (f" after k = {self.rows[-1]['k']}" if self.rows else "") + ".")
        self.window.show_status("Choosing k cancelled.")

    def _done_again(self) -> None:
        """Redraw the last complete result (after a failed attempt)."""
        res, msg = self.result, self.message.text()
        self._done(res)
        self._say(msg, error=True)

    def _ended(self) -> None:
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def _clear_marks(self) -> None:
        for mark in self.marks.values():
            mark.hide()
        self.plots["validation_log_likelihood"].setTitle("validation log-likelihood")

    def _say(self, text: str, error: bool = False) -> None:
        say(self.message, text, error)

    # -- apply ----------------------------------------------------------------------------------
    def run_suggested(self):
        """Run with the suggested k (see :meth:`run_chosen`)."""
        return None if self.result is None else self.run_chosen(int(self.result.suggested_k))

    def run_chosen(self, k: int | None = None):
        """Make ``k`` (default: the k box's) run state on the same input: cut the hierarchical run
        it was chosen for (``session.cut``, undoable; that run becomes the current one), or fit a
        new run with k. Returns the Run cut or started, or None (with a message)."""
        res = self.result
        if res is None:
            return None
        k = int(self.k_choice.value() if k is None else k)
        req = self._request
        session = self.window.session
        try:
            plan = plan_chosen_k(session, res.algorithm, req.get("params", {}), k, dataset_name=req.get("dataset"),
                                 source_run=req.get("source_run"), chain=req.get("chain", []))
            if plan.cuts:
                session.cut(plan.run.id, n_clusters=k)
                session.set_current_run(plan.run.id)
        except ManifoldStudioError as exc:
            self._say(f"Cannot run with k = {k}: {error_message(exc)}", error=True)
            return None
        self._say(plan.why)
        self.window.show_status(plan.why)
        if plan.cuts:
            return plan.run
        return self.window.run_algorithm(res.algorithm, plan.params, req.get("dataset"),
                                         source_run=req.get("source_run"))
