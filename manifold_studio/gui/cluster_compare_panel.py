"""Compare clusterings (Tools ▸ Compare clusterings, a dock): several clustering methods over a
range of k on the current data set (through the current preparation chain), every measure of
seed 001 and the validation log-likelihood of seed 000 side by side
(:func:`manifold_studio.evaluation.compare_clusterings` on a worker thread, progress and Cancel).

Left: the clustering methods that have a number of clusters as a checkable list, the settings of
the highlighted one (:class:`~manifold_studio.gui.method_list.MethodList`), k from / to, the
held-out share and the seed. Right: the table (one row per method and k, sortable, "n/a" with its
reason in the tooltip) and the chosen measure against k, one curve per method. "Make run" (or a
double click on a row) fits that method with that k through the window's run path, so the run
appears in the Runs table and on the map with the partition of the row. The comparison is saved
in the project and restored on reopen; "Add to report" (the button in the title bar of every
view dock) adds the table and plot with the best k of each measure.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.analysis.choose_k import cluster_count_param
from manifold_studio.analysis.compare_clusterings import (
    LONG_TITLES,
    MEASURES,
    TITLES,
    cluster_count_methods,
    compare_on_dataset,
    format_value,
)
from manifold_studio.project.isolated_compare import compare_on_dataset_in_worker, comparison_needs_worker
from manifold_studio.analysis.report import view_item
from manifold_studio.errors import ManifoldStudioError, error_message
from manifold_studio.project.analysis_records import clustering_comparison_from_record, clustering_comparison_record
from manifold_studio.gui.lazy_slot import LazyPart, LazySlot
from manifold_studio.gui.export import image_bytes, render_view
from manifold_studio.gui.fit_scroll import scrollable
from manifold_studio.gui.method_list import ComparisonJob, MethodList
from manifold_studio.gui.score_plots import learner_pen
from manifold_studio.gui.widgets import say, seed_spin_box

RECORD_KEY = "clustering_comparison"
COLUMNS = ("method", "k", "n_clusters_found") + MEASURES
#: short headers (the full names are their tooltips): every measure fits beside the plot
SHORT = {"davies_bouldin": "DB", "validation_log_likelihood": "Val. log-lik."}
HEADERS = ["Method", "k", "Found"] + [SHORT.get(m, TITLES[m]) for m in MEASURES]
HEADER_TIPS = ["", "the number of clusters asked for", "the number of clusters the method formed"] + [
    LONG_TITLES[m] for m in MEASURES]
FAILED = QColor(200, 30, 30)
START_TEXT = "Tick one or more clustering methods, choose the range of k and press Compare."


class _SortItem(QTableWidgetItem):
    """A cell sorted by its number (UserRole + 1), "n/a" below every number, text otherwise."""

    def __lt__(self, other):
        a, b = self.data(Qt.ItemDataRole.UserRole + 1), other.data(Qt.ItemDataRole.UserRole + 1)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            a = -np.inf if not np.isfinite(a) else a
            b = -np.inf if not np.isfinite(b) else b
            return a < b
        return self.text() < other.text()


class ClusterComparePanel(ComparisonJob, QWidget):
    JOB_TITLE = "Compare clusterings"

    #: a comparison finished (or was restored) and is shown
    compared = Signal(object)

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.init_job(window, "Compare", START_TEXT)
        self.chain: list = []
        self.methods = MethodList(
            window.host, cluster_count_methods(window.host.algorithms),
            tooltip="Tick the clustering methods to compare; the highlighted one's settings are below "
                    "(its number of clusters is set by k).",
            copy_tooltip="Add another entry of the highlighted method with its own settings "
                         "(e.g. Ward and average linkage).",
            fixed=lambda a: {cluster_count_param(window.host.algorithm_class(a)): "Set by k from / to.",
                             **({"random_state": "Set by Seed below: one seed for every method."}
                                if "random_state" in window.host.algorithm_class(a).param_constraints() else {})})
        self.k_from, self.k_to = QSpinBox(), QSpinBox()
        for spin, value in ((self.k_from, 2), (self.k_to, 8)):
            spin.setRange(2, 100_000)
            spin.setValue(value)
        self.validation = QDoubleSpinBox()
        self.validation.setRange(0.0, 0.9)
        self.validation.setSingleStep(0.05)
        self.validation.setValue(0.25)
        self.validation.setToolTip("Share of the rows held out (drawn with the seed) for the validation "
                                   "log-likelihood; 0 leaves that measure out.")
        self.seed_spin = seed_spin_box("Seed of the held-out split, and of every method whose seed is empty.")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        for j, tip in enumerate(HEADER_TIPS):
            self.table.horizontalHeaderItem(j).setToolTip(tip)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.cellDoubleClicked.connect(lambda r, _c: self.make_run(r))
        self.table.itemSelectionChanged.connect(self._enable)
        self.measure_combo = QComboBox()
        for m in MEASURES:
            self.measure_combo.addItem(LONG_TITLES[m], m)
        self.measure_combo.setCurrentIndex(MEASURES.index("silhouette"))
        # the long titles must not widen the plot's side (they show in full when the list opens)
        self.measure_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.measure_combo.setMinimumContentsLength(16)
        self.measure_combo.currentIndexChanged.connect(lambda _i: self.redraw())
        self._lazy_slot = LazySlot(self._make_content)   # the plot: made when first shown or drawn
        self._lazy_slot.setMinimumHeight(200)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.make_run_button = QPushButton("Make run")
        self.make_run_button.setToolTip("Fit the selected row's method with its k on the data set (also: double "
                                        "click a row); the run appears in the Runs table and on the map.")
        self.make_run_button.clicked.connect(lambda: self.make_run())
        self._layout()
        self._enable()

    def _layout(self) -> None:
        ks = QHBoxLayout()
        ks.addWidget(self.k_from)
        ks.addWidget(QLabel("to"))
        ks.addWidget(self.k_to)
        form = QFormLayout()
        form.addRow("k from:", ks)
        form.addRow("Held out:", self.validation)
        form.addRow("Seed:", self.seed_spin)
        left = self.settings_column(self.methods, form)
        left.setMaximumWidth(300)  # the settings narrow: the width goes to the table and the plot
        plot_box = QWidget()
        pl = QVBoxLayout(plot_box)
        pl.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Measure:"))
        row.addWidget(self.measure_combo, 1)
        pl.addLayout(row)
        pl.addWidget(self._lazy_slot, 1)
        views = QHBoxLayout()  # the table's measures first: 3/5 of the width, the plot 2/5
        views.addWidget(self.table, 3)
        views.addWidget(plot_box, 2)
        actions = QHBoxLayout()
        actions.addWidget(self.make_run_button)
        actions.addStretch(1)
        self.results = QWidget()
        rl = QVBoxLayout(self.results)
        rl.setContentsMargins(2, 2, 2, 2)
        rl.addWidget(self.status)
        rl.addLayout(views, 1)
        rl.addLayout(actions)
        split = QSplitter()
        split.addWidget(left)
        split.addWidget(self.results)
        split.setStretchFactor(1, 4)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)

    # -- settings --------------------------------------------------------------------------------
    def check(self, name: str, checked: bool = True) -> None:
        self.methods.check(name, checked)

    def form(self, name: str):
        return self.methods.form(name)

    def set_range(self, k_from: int, k_to: int, *, seed: int | None = None, validation: float | None = None) -> None:
        self.k_from.setValue(int(k_from))
        self.k_to.setValue(int(k_to))
        if seed is not None:
            self.seed_spin.setValue(int(seed))
        if validation is not None:
            self.validation.setValue(float(validation))

    # -- running ---------------------------------------------------------------------------------
    def run(self):
        """Start the comparison of the ticked methods (a foreground job); None when it cannot."""
        ds = self.window.session.current_dataset
        names = self.methods.checked()
        k_from, k_to = self.k_from.value(), self.k_to.value()
        reason = ("Load a data set first." if ds is None else "Tick at least one clustering method." if not names
                  else f"The range k = {k_from} to {k_to} is empty: the last k must be at least the first."
                  if k_to < k_from else "")
        specs = []
        if not reason:
            try:
                specs = self.methods.specs(names)
            except ManifoldStudioError as exc:
                reason = str(exc)
        if reason:
            say(self.status, reason, error=True)
            return None
        self.dataset_name, self.chain = ds.name, list(self.window.preparation_chain())
        theirs = comparison_needs_worker(specs, self.chain, self.window.host)  # third-party code runs in a worker process
        where = f" ({', '.join(theirs)} from a plugin: in a worker process)" if theirs else ""
        say(self.status, f"Comparing {', '.join(names)} for k = {k_from}…{k_to} on '{ds.name}'{where}…")
        compare = compare_on_dataset_in_worker if theirs else compare_on_dataset
        return self.launch(compare, specs, ds, range(k_from, k_to + 1), chain=self.chain,
                           seed=self.seed_spin.value(), validation=self.validation.value() or None, names=names)

    def _cancelled(self) -> None:
        say(self.status, "Compare clusterings cancelled" + ("; the previous comparison is shown." if self.comparison
                                                            else "."))

    def _done(self, comparison) -> None:
        self.show_comparison(comparison, self.dataset_name, self.chain)
        self.window.session.log(f"Compare clusterings on '{self.dataset_name}': {', '.join(comparison.methods)}, "
                                f"k = {comparison.k_values[0]}…{comparison.k_values[-1]}")

    # -- showing ---------------------------------------------------------------------------------
    def show_comparison(self, comparison, dataset_name: str | None, chain=None) -> None:
        self.comparison, self.dataset_name, self.chain = comparison, dataset_name, list(chain or [])
        rows = comparison.rows if comparison is not None else []
        self.table.setSortingEnabled(False)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # method by method, k up
        self.table.clearContents()
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            for j, col in enumerate(COLUMNS):
                if col == "method":
                    item = _SortItem(r.method)
                elif col in ("k", "n_clusters_found"):
                    v = r.k if col == "k" else r.n_clusters_found
                    item = _SortItem(str(v) if r.labels is not None or col == "k" else "n/a")
                    item.setData(Qt.ItemDataRole.UserRole + 1, float(v))
                else:
                    v = r.value(col)
                    item = _SortItem(format_value(v, col))
                    item.setData(Qt.ItemDataRole.UserRole + 1, v)
                    if col in r.notes:
                        item.setToolTip(r.notes[col])
                if j:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setData(Qt.ItemDataRole.UserRole, i)
                if r.error:
                    item.setForeground(QBrush(FAILED))
                    item.setToolTip(r.error)
                self.table.setItem(i, j, item)
        self.table.setSortingEnabled(True)
        self.table.resizeColumnsToContents()
        self.redraw()
        self._enable()
        if comparison is not None:
            chain_note = f" through {' → '.join(s for s, _ in self.chain)}" if self.chain else ""
            text = (f"{len(comparison.methods)} method(s) × {len(comparison.k_values)} k on '{dataset_name}'"
                    f"{chain_note}, seed {comparison.seed}"
                    + (f", {comparison.validation:g} held out" if comparison.validation else "")
                    + ". Hover an n/a for its reason; double click a row to make it a run.")
            if comparison.failures:
                text += " " + " ".join(comparison.failures)
            say(self.status, text, error=bool(comparison.failures))
            self.compared.emit(comparison)

    @property
    def measure(self) -> str:
        return self.measure_combo.currentData()

    def set_measure(self, measure: str) -> None:
        self.measure_combo.setCurrentIndex(MEASURES.index(measure))

    plot = LazyPart()

    def _make_content(self) -> pg.PlotWidget:
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "k (number of clusters)")
        self.plot.getAxis("left").enableAutoSIPrefix(False)  # a silhouette of 0.25 is not "250 (x0.001)"
        self.plot.setMinimumHeight(200)
        legend = self.plot.getPlotItem().addLegend(offset=(-10, 10), labelTextSize="9pt")
        legend.setBrush(pg.mkBrush(255, 255, 255, 220))
        return self.plot

    def redraw(self) -> None:
        item = self.plot.getPlotItem()
        item.clear()
        item.legend.clear()
        self.curves = {}
        m = self.measure
        self.plot.setLabel("left", TITLES[m])  # the measure's full name is in the combo above
        c = self.comparison
        if c is None:
            return
        ks = np.asarray(c.k_values, dtype=float)
        for i, name in enumerate(c.methods):
            v = c.values(name, m)
            ok = np.isfinite(v)
            pen = learner_pen(i)
            best = c.best(name, m)
            label = name if best is None or m in ("within", "between") else f"{name} (best k = {best})"
            self.curves[name] = item.plot(ks[ok], v[ok], pen=pen, symbol="o", symbolSize=7,
                                          symbolBrush=pen.color(), name=label)
        item.getViewBox().autoRange()

    # -- the selected row ------------------------------------------------------------------------
    def selected_row(self, table_row: int | None = None):
        """The ClusteringRow of table row ``table_row`` (default: the selected one), or None."""
        if self.comparison is None:
            return None
        if table_row is None:
            chosen = self.table.selectionModel().selectedRows()
            if not chosen:
                return None
            table_row = chosen[0].row()
        item = self.table.item(table_row, 0)
        return None if item is None else self.comparison.rows[int(item.data(Qt.ItemDataRole.UserRole))]

    def _enable(self) -> None:
        row = self.selected_row()
        self.make_run_button.setEnabled(row is not None and not row.error)

    def make_run(self, table_row: int | None = None):
        """Fit the row's method with its k (and its seed) through the window's run path; returns
        the Run, or None with a message."""
        row = self.selected_row(table_row)
        if row is None:
            say(self.status, "Select a row of the table first.", error=True)
            return None
        if row.error:
            say(self.status, f"No run: {row.error}", error=True)
            return None
        w = self.window
        if self.dataset_name not in w.session.datasets:
            say(self.status, f"The data set '{self.dataset_name}' of this comparison is no longer loaded.", error=True)
            return None
        if list(w.preparation_chain()) != self.chain:
            w.show_status("Note: the preparation chain changed since the comparison; the run uses the current one.")
        return w.run_algorithm(row.algorithm, dict(row.params), self.dataset_name)

    # -- report ----------------------------------------------------------------------------------
    def report_blocker(self) -> str:
        """Why *Add to report* cannot add this dock yet ("" when it can)."""
        return "" if self.comparison is not None else "Nothing to report: run a comparison of clusterings first."

    def report_item(self, caption: str = "", png: bytes | None = None):
        """The report item of this view: the table and plot as shown, and the best k of each
        measure for each method (File ▸ Report uses it through *Add to report*)."""
        c = self.comparison
        if c is None:
            raise ManifoldStudioError("Nothing to report: run a comparison of clusterings first.")
        png = image_bytes(render_view(self.results, ".png", 1200, 700))
        facts = [("Data set", self.dataset_name or ""), ("Preparation", " → ".join(s for s, _ in self.chain) or "none"),
                 ("Methods", ", ".join(c.methods)), ("k", f"{c.k_values[0]} to {c.k_values[-1]}"),
                 ("Seed", str(c.seed)), ("Held out", f"{c.validation:g}" if c.validation else "none")]
        for m in MEASURES[2:]:
            facts.append((f"Best k by {TITLES[m]}", ", ".join(f"{n}: {c.best(n, m) or 'n/a'}" for n in c.methods)))
        facts += [("Failed", f) for f in c.failures]
        return view_item("Compare clusterings", caption, png, facts)

    def add_to_report(self):
        actions = self.window.report_actions
        if actions is None:
            return None
        return actions.add_view("compare_clusterings")

    # -- projects --------------------------------------------------------------------------------
    def project_analyses(self) -> dict:
        if self.comparison is None:
            return {}
        doc, arrays = clustering_comparison_record(self.comparison)
        doc["dataset"] = self.dataset_name
        doc["chain"] = [[s, dict(p)] for s, p in self.chain]
        return {RECORD_KEY: (doc, arrays)}

    def restore_analyses(self, analyses: dict) -> None:
        saved = analyses.get(RECORD_KEY)
        if saved is None:
            self.show_comparison(None, None)
            say(self.status, START_TEXT)
            return
        doc, arrays = saved
        try:
            comparison = clustering_comparison_from_record(doc, arrays)
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifoldStudioError(f"The saved comparison of clusterings is damaged: {error_message(exc)}") from None
        self.show_comparison(comparison, doc.get("dataset"), [(s, p) for s, p in doc.get("chain") or []])


def install_compare_clusterings(window) -> ClusterComparePanel:
    """The Compare clusterings dock (bottom area, hidden until asked for) as
    ``window.compare_clusterings`` and Tools ▸ Compare clusterings."""
    panel = ClusterComparePanel(window)
    window.compare_clusterings = panel
    dock = window.add_dock("compare_clusterings", "Compare clusterings", scrollable(panel), "bottom")
    act = QAction("Compare c&lusterings…", window)
    act.setToolTip("Several clustering methods over a range of k: W, B, H, S, Davies–Bouldin, silhouette and "
                   "the validation log-likelihood side by side; make the chosen one a run.")

    def show():
        dock.show()
        dock.raise_()
        if dock.height() < window.height() * 0.4 and not dock.isFloating():  # room for the table and plot
            window.resizeDocks([dock], [int(window.height() * 0.45)], Qt.Orientation.Vertical)

    act.triggered.connect(show)
    window.add_tool_action(act)
    window.compare_clusterings_action = act
    dock.hide()
    return panel
