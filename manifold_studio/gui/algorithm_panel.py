"""The algorithm panel: plugins grouped by kind, the selected one's help and generated form."""
from __future__ import annotations

import html

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
from manifold_studio.gui.param_form import ParamForm

KIND_TITLES = {"embedding": "Dimensionality reduction", "clustering": "Clustering",
               "classification": "Classification"}


class AlgorithmPanel(QWidget):
    algorithmChanged = Signal(str)  # algorithm id ("" when none)

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
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

    def _on_current(self, item, _previous=None):
        algo_id = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else ""
        cls = self.window.host.algorithms.get(algo_id) if algo_id else None
        if cls is None:
            self.help_label.setText("Pick an algorithm.")
            self.form.set_params(())
        else:
            kind = KIND_TITLES.get(cls.kind, cls.kind)
            self.help_label.setText(f"<b>{html.escape(cls.name)}</b> <small>({kind}, <code>{cls.id}</code>)</small>"
                                    f"<br>{html.escape(cls.help)}")
            self.form.set_params(cls.params)
        self.algorithmChanged.emit(algo_id or "")
