"""The algorithm panel: plugins grouped by kind, the selected one's help and generated form.

The form's values are remembered per method (as Orange's context settings): change a parameter,
pick another method and come back, the value is still there; :meth:`AlgorithmPanel.remembered_values`
and :meth:`AlgorithmPanel.restore_values` carry them through a project. The form checks its values
against the data Run would fit on (``Algorithm.check_params_vs_input``: "perplexity must be below
n = 150") and keeps Run off until they fit.
"""
from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.algorithms.base import KINDS
from manifold_studio.errors import InvalidParameterError, ManifoldStudioError, error_message
from manifold_studio.gui.param_form import ParamForm

KIND_TITLES = {"embedding": "Dimensionality reduction", "clustering": "Clustering",
               "classification": "Classification"}


class AlgorithmPanel(QWidget):
    algorithmChanged = Signal(str)  # algorithm id ("" when none)

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        #: algorithm id -> the values set in its form that differ from the defaults
        self._remembered: dict[str, dict[str, Any]] = {}
        self._shown = ""   # the algorithm whose form is shown
        #: the "fit on" chooser (raw data or an earlier map), set by the clustering tools
        self.input_selector = None
        self._checked = None   # (method, values, shape) -> problems of the last data check
        self.tree = QTreeWidget()
        self.tree.setObjectName("algorithm_tree")
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(True)
        self.tree.setMinimumHeight(110)
        self.help_label = QLabel("Pick an algorithm.")
        self.help_label.setWordWrap(True)
        self.help_label.setTextFormat(Qt.TextFormat.RichText)
        self.help_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.help_label.setStyleSheet("QLabel { color: #333; }")
        self.form = ParamForm()
        self.form.setObjectName("param_form")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        inner = QWidget()
        il = QVBoxLayout(inner)
        il.setContentsMargins(0, 0, 0, 0)
        il.addWidget(self.help_label)
        il.addWidget(self.form)
        il.addStretch(1)
        scroll.setWidget(inner)
        self.reset_button = QPushButton("Defaults")
        self.reset_button.setToolTip("Reset every parameter to its default value.")
        self.reset_button.clicked.connect(self.form.reset)
        top = QHBoxLayout()
        top.addWidget(QLabel("<b>Settings</b>"))
        top.addStretch(1)
        top.addWidget(self.reset_button)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.tree, 2)
        lay.addLayout(top)
        lay.addWidget(scroll, 3)

        self._populate()
        self.tree.currentItemChanged.connect(self._on_current)
        self.form.set_data_check(self._check_against_data)
        window.bridge.datasetsChanged.connect(self.form.refresh_data_check)

    def _populate(self):
        algos = self.window.host.algorithms
        self.tree.clear()
        kinds = list(KINDS) + sorted({cls.kind for cls in algos.values()} - set(KINDS))
        for kind in kinds:
            members = sorted((cls for cls in algos.values() if cls.kind == kind), key=lambda c: c.name.lower())
            if not members:
                continue
            top = QTreeWidgetItem([KIND_TITLES.get(kind, kind.capitalize())])
            top.setFlags(top.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            top.setData(0, Qt.ItemDataRole.UserRole, "")
            self.tree.addTopLevelItem(top)
            for cls in members:
                item = QTreeWidgetItem([cls.name])
                item.setData(0, Qt.ItemDataRole.UserRole, cls.id)
                item.setToolTip(0, f"<b>{html.escape(cls.name)}</b> (<code>{cls.id}</code>)<p>{html.escape(cls.help)}</p>")
                top.addChild(item)
            top.setExpanded(True)
        if not algos:
            self.tree.addTopLevelItem(QTreeWidgetItem(["(no algorithm plugin loaded)"]))

    # -- public API -----------------------------------------------------------------------------
    @property
    def algorithm_id(self) -> str:
        item = self.tree.currentItem()
        return (item.data(0, Qt.ItemDataRole.UserRole) or "") if item is not None else ""

    def select_algorithm(self, algorithm_id: str) -> bool:
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for j in range(top.childCount()):
                item = top.child(j)
                if item.data(0, Qt.ItemDataRole.UserRole) == algorithm_id:
                    if item.isDisabled():   # greyed out (set_unavailable): not selectable
                        return False
                    self.tree.setCurrentItem(item)
                    self.show_current()
                    QTimer.singleShot(0, self.show_current)  # again once the tree has its final size
                    return True
        return False

    def show_current(self) -> None:
        """Scroll the tree so that the selected algorithm's row is wholly visible (centred)."""
        item = self.tree.currentItem()
        if item is not None:
            self.tree.scrollToItem(item, QAbstractItemView.ScrollHint.PositionAtCenter)

    def set_unavailable(self, reasons: dict[str, str]) -> None:
        """Grey out the algorithms in ``reasons`` ({id: why}), their tooltip saying why; every
        other algorithm is available again (``{}`` enables them all)."""
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for j in range(top.childCount()):
                item = top.child(j)
                algo_id = item.data(0, Qt.ItemDataRole.UserRole)
                cls = self.window.host.algorithms.get(algo_id)
                why = reasons.get(algo_id, "")
                item.setDisabled(bool(why))
                if cls is not None:
                    item.setToolTip(0, f"<b>{html.escape(cls.name)}</b> (<code>{cls.id}</code>)<p>"
                                       + (f"<i>Not available: {html.escape(why)}</i></p><p>" if why else "")
                                       + f"{html.escape(cls.help)}</p>")

    def is_available(self, algorithm_id: str) -> bool:
        """Whether ``algorithm_id`` is listed and not greyed out (:meth:`set_unavailable`)."""
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for j in range(top.childCount()):
                if top.child(j).data(0, Qt.ItemDataRole.UserRole) == algorithm_id:
                    return not top.child(j).isDisabled()
        return False

    def showEvent(self, event):
        super().showEvent(event)
        QTimer.singleShot(0, self.show_current)

    def values(self) -> dict:
        """Validated parameter values (raises InvalidParameterError with the reason)."""
        return self.form.values()

    # -- form values remembered per method --------------------------------------------------
    def _remember(self) -> None:
        """Keep the shown form's valid values that differ from their defaults."""
        if not self._shown:
            return
        kept = {}
        for p in self.form.params:
            editor = self.form.editors.get(p.name)
            if editor is None or not editor.isEnabled() or editor.error():
                continue
            value = editor.value()
            if value != p.default:
                kept[p.name] = list(value) if isinstance(value, tuple) else value
        self._remembered[self._shown] = kept

    def remembered_values(self) -> dict[str, dict[str, Any]]:
        """``{algorithm id: {parameter: value}}``: every method's settings that differ from the
        defaults (JSON values), the shown form's included; what a project saves."""
        self._remember()
        return {k: dict(v) for k, v in self._remembered.items() if v}

    def restore_values(self, values: dict) -> list[str]:
        """Replace the remembered settings (from :meth:`remembered_values`, e.g. a project) and
        show the current method's. A value its parameter refuses is dropped and named in the
        returned notes; settings of a method that is not installed are kept (saved again)."""
        notes, kept = [], {}
        for algo_id, params in (values or {}).items():
            if not isinstance(params, dict):
                notes.append(f"{algo_id}: the saved settings are not a table of values; ignored.")
                continue
            cls = self.window.host.algorithms.get(algo_id)
            constraints = cls.param_constraints() if cls is not None else None
            good = {}
            for name, value in params.items():
                try:
                    if constraints is not None:
                        if name not in constraints:
                            raise InvalidParameterError(f"{algo_id} has no parameter '{name}'")
                        constraints[name].validate(value)
                    good[name] = value
                except InvalidParameterError as exc:
                    notes.append(f"{algo_id}: {error_message(exc)} (the saved value was dropped)")
            kept[str(algo_id)] = good
        self._remembered = kept
        self._show_remembered()
        return notes

    def _show_remembered(self) -> None:
        self.form.reset()
        for name, value in self._remembered.get(self._shown, {}).items():
            editor = self.form.editors.get(name)
            if editor is not None:
                try:
                    editor.set_value(value)
                except InvalidParameterError:
                    continue

    # -- checks against the data -------------------------------------------------------------
    def input_shape(self) -> tuple[int, int | None] | None:
        """(n_samples, n_features) of what Run fits on: the chosen map, or the current data set
        (n_features None when a preparation chain may change the columns); None without data."""
        session = self.window.session
        ds = session.current_dataset
        if ds is None:
            return None
        source = self.input_selector.source_run() if self.input_selector is not None else None
        if source is not None and source in session.runs and session.runs[source].embedding is not None:
            return tuple(session.runs[source].embedding.shape)
        return ds.n_samples, (None if self.window.preparation_chain() else ds.n_features)

    def _check_against_data(self, values: dict) -> list[str]:
        """The shown method's ``check_params_vs_input`` on the input's shape (kept until the
        method, a value or the shape changes: Run's state asks often)."""
        cls = self.window.host.algorithms.get(self._shown)
        shape = self.input_shape()
        if cls is None or shape is None:
            return []
        key = (cls, repr(sorted(values.items())), shape)
        if self._checked is not None and self._checked[0] == key:
            return list(self._checked[1])
        try:
            problems = cls(**values).check_params_vs_input(*shape)
        except ManifoldStudioError as exc:
            problems = [error_message(exc)]
        except Exception:  # noqa: BLE001 - a plugin's own check failing: the fit will say why
            problems = []
        self._checked = (key, list(problems))
        return problems

    def _on_current(self, item, _previous=None):
        algo_id = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else ""
        cls = self.window.host.algorithms.get(algo_id) if algo_id else None
        self._remember()
        self._shown = algo_id if cls is not None else ""
        if cls is None:
            self.help_label.setText("Pick an algorithm.")
            self.form.set_params(())
        else:
            kind = KIND_TITLES.get(cls.kind, cls.kind)
            self.help_label.setText(f"<b>{html.escape(cls.name)}</b> <small>({kind}, <code>{cls.id}</code>)</small>"
                                    f"<br>{html.escape(cls.help)}")
            self.form.set_params(cls.params)
            self._show_remembered()
        self.algorithmChanged.emit(algo_id or "")
