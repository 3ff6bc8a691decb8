"""The Preparation panel: a dock between Data and Algorithm showing and editing the session's
current preparation chain (``session.chain``, changed through ``session.set_chain`` commands that
Edit ▸ Undo reverts, saved in the project): the steps fitted with the next run (``make_pipeline(*steps, estimator)``; see
:meth:`~manifold_studio.session.model.Session.create_run`).

Steps come from the plugin host (``host.preprocessors``); each has its settings form generated
from its constraints (:class:`~manifold_studio.gui.param_form.ParamForm`). The panel shows a short
summary of the prepared table (rows × columns after the chain, the columns dropped and added) and,
when the feature scales differ by more than 100× (:mod:`manifold_studio.analysis.scales`) and no scaling step is in the
chain, advice naming the columns and the ratio with one click to add ``standardize``.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.algorithms.preprocessing import NumericScaler
from manifold_studio.analysis.scales import scale_advice
from manifold_studio.errors import error_message
from manifold_studio.gui.fit_scroll import scrollable
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.session_undo import install_session_undo
from manifold_studio.analysis.chain import chain_text, dataset_columns

#: rows used to preview the chain's output columns (the chain is row-wise: rows are unchanged)
PREVIEW_ROWS = 2000


def feature_scale_advice(ds):
    """:func:`~manifold_studio.analysis.scales.scale_advice` on the numeric feature columns of
    ``ds`` (categorical features left out), or None."""
    if ds is None or ds.n_features < 2:
        return None
    names, cats = dataset_columns(ds)
    numeric = [j for j, n in enumerate(names) if n not in cats]
    return scale_advice(ds.X[:, numeric], [names[j] for j in numeric]) if len(numeric) >= 2 else None


class PreparationPanel(QWidget):
    """The chain of preparation steps for the next run."""

    chainChanged = Signal()

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.host = window.host
        self._current_after: int | None = None  # the row to select once the session's chain changed
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        add_row = QHBoxLayout()
        self.step_box = QComboBox()
        self.step_box.setObjectName("preparation_step_box")
        for step_id in sorted(self.host.preprocessors):
            cls = self.host.preprocessors[step_id]
            self.step_box.addItem(cls.name or step_id, step_id)
            self.step_box.setItemData(self.step_box.count() - 1, cls.help, Qt.ItemDataRole.ToolTipRole)
        self.add_button = QPushButton("Add")
        self.add_button.setObjectName("preparation_add")
        self.add_button.clicked.connect(lambda: self.add_step(self.step_box.currentData()))
        add_row.addWidget(self.step_box, 1)
        add_row.addWidget(self.add_button)
        lay.addLayout(add_row)
        # what the chain gives and the scale advice first: visible in a short dock
        self.summary = QLabel("")
        self.summary.setObjectName("preparation_summary")
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        advice_row = QHBoxLayout()
        self.advice = QLabel("")
        self.advice.setObjectName("preparation_advice")
        self.advice.setWordWrap(True)
        self.advice.setStyleSheet("color: #8a5300;")
        self.advice_button = QPushButton("Add standardize")
        self.advice_button.setObjectName("preparation_add_standardize")
        self.advice_button.clicked.connect(lambda: self.add_step("standardize"))
        lay.addWidget(self.advice)   # the whole width: its lines are not cut in a narrow dock
        advice_row.addStretch(1)
        advice_row.addWidget(self.advice_button)
        lay.addLayout(advice_row)
        self.list = QListWidget()
        self.list.setObjectName("preparation_steps")
        self.list.setMaximumHeight(110)
        self.list.currentRowChanged.connect(self._show_form)
        lay.addWidget(self.list)
        buttons = QHBoxLayout()
        self.remove_button = QPushButton("Remove")
        self.up_button = QPushButton("Up")
        self.down_button = QPushButton("Down")
        for b, handler in ((self.remove_button, self.remove_current), (self.up_button, lambda: self.move_current(-1)),
                           (self.down_button, lambda: self.move_current(1))):
            b.clicked.connect(handler)
            buttons.addWidget(b)
        lay.addLayout(buttons)
        self.form = ParamForm((), empty_text="Pick a step to see its settings.")
        self.form.changed.connect(self._form_changed)
        lay.addWidget(self.form)
        lay.addStretch(1)
        window.bridge.datasetsChanged.connect(lambda *_: self.refresh())
        window.bridge.event.connect(self._on_session_event)
        install_session_undo(window)
        self._rebuild_list(len(self._steps) - 1)

    # -- the chain: the session's (changed through its commands, so Edit ▸ Undo reverts it) ----
    @property
    def _steps(self) -> list[tuple[str, dict]]:
        return self.window.session.chain

    def chain(self) -> list[tuple[str, dict]]:
        """The steps for the next run: the session's current chain ``[(step id, {params}), ...]``."""
        return self.window.session.chain

    def set_chain(self, chain, text: str = "Set the preparation chain") -> None:
        self._current_after = len(list(chain or ())) - 1
        self.window.session.set_chain(chain, text)

    def add_step(self, step_id: str | None) -> None:
        if not step_id or step_id not in self.host.preprocessors:
            self.window.report_error(f"No preparation step '{step_id}' is installed.", log=False)
            return
        cls = self.host.preprocessors[step_id]
        steps = self._steps + [(step_id, {p.name: p.default for p in cls.params})]
        self._current_after = len(steps) - 1
        self.window.session.set_chain(steps, f"Add {step_id}")

    def remove_current(self) -> None:
        row = self.list.currentRow()
        steps = self._steps
        if 0 <= row < len(steps):
            step_id = steps.pop(row)[0]
            self._current_after = min(row, len(steps) - 1)
            self.window.session.set_chain(steps, f"Remove {step_id}")

    def move_current(self, delta: int) -> None:
        row = self.list.currentRow()
        new = row + delta
        steps = self._steps
        if 0 <= row < len(steps) and 0 <= new < len(steps):
            steps[row], steps[new] = steps[new], steps[row]
            self._current_after = new
            self.window.session.set_chain(steps, f"Move {steps[new][0]} {'up' if delta < 0 else 'down'}")

    def _on_session_event(self, event) -> None:
        if event.kind == "chain_changed":
            self._chain_changed()

    def _chain_changed(self) -> None:
        """The session's chain changed (here, by Edit ▸ Undo, or a project opened): show it."""
        steps = self._steps
        shown = [self.list.item(k).data(Qt.ItemDataRole.UserRole) for k in range(self.list.count())]
        row = self.list.currentRow()
        if shown == [s for s, _ in steps] and 0 <= row < len(steps) and self._current_after is None \
                and self.form.values() == steps[row][1]:  # a setting edited here: keep the form as it is
            self._update_texts()
            self.refresh()
            self.chainChanged.emit()
            return
        current = self._current_after if self._current_after is not None else min(max(row, 0), len(steps) - 1)
        self._current_after = None
        self._rebuild_list(current)

    def _update_texts(self) -> None:
        for k, (step_id, params) in enumerate(self._steps):
            item = self.list.item(k)
            if item is not None:
                item.setText(self._item_text(k, step_id, params))

    def _item_text(self, k: int, step_id: str, params: dict) -> str:
        missing = "" if step_id in self.host.preprocessors else " — not installed"
        return f"{k + 1}. {chain_text([(step_id, self._non_default(step_id, params))])}{missing}"

    def _rebuild_list(self, current: int) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for k, (step_id, params) in enumerate(self._steps):
            item = QListWidgetItem(self._item_text(k, step_id, params))
            item.setData(Qt.ItemDataRole.UserRole, step_id)
            item.setToolTip(self.host.preprocessors[step_id].help if step_id in self.host.preprocessors
                            else f"Step '{step_id}' is not installed: install its plugin or remove it.")
            self.list.addItem(item)
        self.list.blockSignals(False)
        self.list.setCurrentRow(current)
        self._show_form(current)
        self._update_buttons()
        self.refresh()
        self.chainChanged.emit()

    def _non_default(self, step_id: str, params: dict) -> dict:
        cls = self.host.preprocessors.get(step_id)
        defaults = {p.name: p.default for p in cls.params} if cls is not None else {}
        return {k: v for k, v in params.items() if k not in defaults or defaults[k] != v}

    def _show_form(self, row: int) -> None:
        steps = self._steps
        if 0 <= row < len(steps) and steps[row][0] in self.host.preprocessors:
            step_id, params = steps[row]
            self.form.blockSignals(True)
            self.form.set_params(self.host.preprocessors[step_id].params)
            self.form.set_values(params)
            self.form.blockSignals(False)
            self.form.empty_text = "This step has no settings."
        else:
            self.form.set_params(())
        self._update_buttons()

    def _form_changed(self) -> None:
        row = self.list.currentRow()
        steps = self._steps
        if not (0 <= row < len(steps)) or not self.form.is_valid():
            self.refresh()
            return
        steps[row] = (steps[row][0], self.form.values())
        self.window.session.set_chain(steps, f"Change {steps[row][0]} settings")

    def _update_buttons(self) -> None:
        row = self.list.currentRow()
        has = 0 <= row < len(self._steps)
        self.remove_button.setEnabled(has)
        self.up_button.setEnabled(has and row > 0)
        self.down_button.setEnabled(has and row < len(self._steps) - 1)

    def errors(self) -> str:
        """Why the chain cannot run ("" when it can): a step that is not installed, an invalid
        setting of the shown step."""
        missing = self.window.session.missing_steps()
        if missing:
            return (f"Preparation step '{missing[0]}' is not installed: install its plugin or remove it "
                    "from the chain.")
        errs = self.form.errors()
        row = self.list.currentRow()
        if errs and 0 <= row < len(self._steps):
            return f"Preparation step '{self._steps[row][0]}': {next(iter(errs.values()))}"
        return ""

    # -- summary and advice ---------------------------------------------------------------
    def refresh(self) -> None:
        ds = self.window.session.current_dataset
        self.summary.setText(self._summary_text(ds))
        advice = None if self._has_scaler() else feature_scale_advice(ds)
        if advice is None:
            self.advice.setText("")
            self.advice.hide()
            self.advice_button.hide()
        else:
            self.advice.setText(advice.text())
            self.advice.show()
            self.advice_button.show()
        self._fit_text_heights()
        if self.window.run_controls is not None:
            self.window.run_controls.update_run_enabled()

    def _fit_text_heights(self) -> None:
        """Wrapped labels as tall as their text at the panel's width (a short dock scrolls
        instead of squeezing their lines)."""
        width = max(self.width() - 12, 80)
        for label in (self.summary, self.advice):
            label.setMinimumHeight(label.heightForWidth(width) if label.text() else 0)

    def resizeEvent(self, event):  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_text_heights()

    def _has_scaler(self) -> bool:
        return any(issubclass(self.host.preprocessors.get(i, object), NumericScaler) for i, _ in self._steps)

    def _summary_text(self, ds) -> str:
        if ds is None:
            return "No data set loaded."
        names, cats = dataset_columns(ds)
        before = f"{ds.n_samples:,} rows × {len(names)} columns"
        if not self._steps:
            return f"No preparation: the algorithm gets the {before}."
        theirs = [i for i, _ in self._steps if self.host.is_third_party(i)]
        if theirs:  # third-party code runs only in a worker process (at Run, Test & Score, Compare)
            return (f"{before}, then {len(self._steps)} step(s); {', '.join(dict.fromkeys(theirs))} comes from a "
                    "plugin and runs in a worker process when the chain is fitted, so it is not previewed here.")
        try:
            sample = ds.X[:PREVIEW_ROWS]
            cols, cat = list(names), dict(cats)
            for step_id, params in self._steps:
                step = self.host.get_preprocessor(step_id, **params)
                step.fit(sample, cols, cat)
                sample = step.transform(sample)
                cols, cat = list(step.columns_out_), dict(step.categories_out_)
        except Exception as exc:  # noqa: BLE001 - the summary says what the run would say
            return f"{before}; the chain cannot run: {error_message(exc)}"
        dropped = [c for c in names if c not in cols]
        added = [c for c in cols if c not in names]
        text = f"{before} → {ds.n_samples:,} × {len(cols)} after {len(self._steps)} step(s)"
        if dropped:
            text += f"; dropped: {', '.join(dropped[:8])}{' …' if len(dropped) > 8 else ''}"
        if added:
            text += f"; added: {', '.join(added[:8])}{' …' if len(added) > 8 else ''}"
        missing = int(np.isnan(sample).sum())
        if missing:
            text += f"; {missing:,} missing value(s) left in the first {len(sample):,} rows"
        return text + "."


def install_preparation(window) -> PreparationPanel:
    """The Preparation dock, placed under Data (above Algorithm)."""
    panel = PreparationPanel(window)
    window.preparation_panel = panel
    dock = window.add_dock("preparation", "Preparation", scrollable(panel), "left")
    data_dock, algo_dock = window.docks.get("data"), window.docks.get("algorithm")
    if data_dock is not None:  # Data, Preparation, Algorithm from top to bottom
        window.splitDockWidget(data_dock, dock, Qt.Orientation.Vertical)
        if algo_dock is not None:
            window.splitDockWidget(dock, algo_dock, Qt.Orientation.Vertical)
    return panel
