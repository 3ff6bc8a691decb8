"""Tools ▸ Plugins: the plugin manager window (issue 8).

A table of every plugin the host saw — built-in, user folder, pip — with an *Enabled* checkbox,
origin, version, what it provides and its status (failed ones show their error; *Show traceback*
gives the details). *Install from file…* installs a plugin wheel (``.whl``) into the per-user
plugin folder, *Uninstall* removes one from it. After a change the plugins are rediscovered
without restarting (:func:`manifold_studio.plugins.host.reload_host`) — after the running computation,
if any, has finished; when a replaced plugin's old code was already loaded, the message line says
a restart is needed.
The work itself is done by the Qt-free :mod:`manifold_studio.plugins.manager`.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from manifold_studio.errors import ManifoldStudioError
from manifold_studio.plugins import manager as pm
from manifold_studio.plugins.host import reload_host

COLUMNS = ("Enabled", "Plugin", "Origin", "Version", "Provides", "Status")
ERROR_COLOR = QColor("#b00020")


class PluginManagerDialog(QDialog):
    def __init__(self, window, parent=None):
        super().__init__(parent or window)
        self.window = window
        self.setWindowTitle("Plugins")
        self.resize(900, 480)
        self.records: list[pm.PluginRecord] = []
        self.restart_needed = False
        self.traceback_view: QDialog | None = None
        self._pending: str | None = None  # a change waiting for the running computation to end

        self.folder_label = QLabel()
        self.folder_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.install_button = QPushButton("Install from file…")
        self.uninstall_button = QPushButton("Uninstall")
        self.traceback_button = QPushButton("Show traceback")
        close = QPushButton("Close")
        buttons = QHBoxLayout()
        for b in (self.install_button, self.uninstall_button, self.traceback_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.folder_label)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.message)
        lay.addLayout(buttons)

        self.install_button.clicked.connect(self.choose_wheel)
        self.uninstall_button.clicked.connect(lambda: self.uninstall_selected())
        self.traceback_button.clicked.connect(self.show_traceback)
        close.clicked.connect(self.close)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemChanged.connect(self._on_item_changed)
        self.refresh()

    # -- table ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        self.folder_label.setText(f"Plugin folder: {pm.plugin_dir()}")
        self.records = pm.list_plugins(self.window.host)
        self.table.blockSignals(True)
        self.table.setRowCount(len(self.records))
        for row, r in enumerate(self.records):
            check = QTableWidgetItem()
            check.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            # a quarantined plugin is not loaded: ticking it retries its import probe
            check.setCheckState(Qt.CheckState.Unchecked if r.status in ("disabled", "quarantined")
                                else Qt.CheckState.Checked)
            self.table.setItem(row, 0, check)
            status = r.status if not r.error else f"{r.status}: {r.error}"
            cells = (r.name if not r.distribution or r.origin == pm.BUILTIN else f"{r.name} ({r.distribution})",
                     r.origin, r.version or "?", ", ".join(r.algorithms + r.loaders + r.samples) or "—", status)
            for col, text in enumerate(cells, start=1):
                item = QTableWidgetItem(text)
                item.setToolTip(r.traceback if col == 5 and r.traceback else text)
                if r.error:
                    item.setForeground(ERROR_COLOR)
                self.table.setItem(row, col, item)
        self.table.blockSignals(False)
        self.table.resizeColumnsToContents()
        self._update_buttons()

    def row_of(self, name: str) -> int:
        """The row of an entry-point name or distribution name (-1 if absent)."""
        key = pm.normalise(name)
        for row, r in enumerate(self.records):
            if key in (pm.normalise(r.name), pm.normalise(r.distribution)):
                return row
        return -1

    def selected(self) -> pm.PluginRecord | None:
        rows = {i.row() for i in self.table.selectedItems()}
        return self.records[min(rows)] if rows else None

    def _update_buttons(self) -> None:
        r = self.selected()
        self.uninstall_button.setEnabled(r is not None and r.origin == pm.USER)
        self.traceback_button.setEnabled(r is not None and bool(r.traceback))

    # -- actions ----------------------------------------------------------------------------------
    def _say(self, text: str, error: bool = False) -> None:
        color = "#b00020" if error else "#1b5e20"
        self.message.setText(f'<span style="color:{color}">{_escape(text)}</span>')
        self.message.setProperty("plain", text)

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != 0:
            return
        r = self.records[item.row()]
        self.set_enabled(r.name, item.checkState() == Qt.CheckState.Checked)

    def set_enabled(self, name: str, enabled: bool) -> bool:
        try:
            text = pm.set_enabled(name, enabled)
        except ManifoldStudioError as exc:
            self._say(str(exc), error=True)
            self.refresh()
            return False
        self._apply(text)
        row = self.row_of(name)
        if enabled and row >= 0 and self.records[row].status == "quarantined":  # its probe was retried
            self._say(f"{self.records[row].name} is still quarantined: {self.records[row].error}", error=True)
        return True

    def choose_wheel(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Install a plugin", str(Path.home()),
                                              "Plugin wheels (*.whl);;All files (*)")
        if path:
            self.install_file(path)

    def install_file(self, path) -> bool:
        """Install a wheel; the message line says what happened (or why nothing was changed)."""
        try:
            res = pm.install_wheel(path)
        except ManifoldStudioError as exc:
            self._say(f"Not installed: {exc}", error=True)
            return False
        self.restart_needed |= res.restart_needed
        self._apply(res.message[0].upper() + res.message[1:])
        return True

    def uninstall_selected(self, confirm: bool | None = None) -> bool:
        r = self.selected()
        if r is None or r.origin != pm.USER:
            self._say("Only plugins installed in the plugin folder can be uninstalled here "
                      "(built-in plugins can be disabled; pip ones are removed with pip).", error=True)
            return False
        confirm = self.window.dialogs if confirm is None else confirm
        if confirm and QMessageBox.question(self, "Uninstall plugin", f"Uninstall {r.distribution} {r.version}?") \
                != QMessageBox.StandardButton.Yes:
            return False
        try:
            text = pm.uninstall(r.distribution or r.name)
        except ManifoldStudioError as exc:
            self._say(str(exc), error=True)
            return False
        self._apply(text[0].upper() + text[1:])
        return True

    def _apply(self, text: str) -> None:
        """Reload the plugins into the window (unless busy) and say whether a restart is needed."""
        if self.window.busy:  # never swap plugins under a running fit
            self._say(f"{text}. A computation is running: the change takes effect when it has finished.")
            self._pending = text
            QTimer.singleShot(300, self, self._retry)
            return
        self._pending = None

        host = reload_host()
        self.window.host = host
        self.window.session._host = host
        panel = self.window.algorithm_panel
        if panel is not None:
            current = panel.algorithm_id
            panel._populate()
            if current:
                panel.select_algorithm(current)
        self.refresh()
        if self.restart_needed:
            self._say(f"{text}. Restart Manifold Studio so that the replaced plugin's old code is no longer used.")
        else:
            self._say(f"{text}. Loaded without restarting.")

    def _retry(self) -> None:
        if self._pending is not None:
            self._apply(self._pending)

    def show_traceback(self) -> None:
        r = self.selected()
        if r is None or not r.traceback:
            return
        dlg = QDialog(self)
        dlg.setWindowTitle(f"Plugin {r.name}: error")
        text = QPlainTextEdit(r.traceback)
        text.setReadOnly(True)
        lay = QVBoxLayout(dlg)
        lay.addWidget(QLabel(_escape(r.error)))
        lay.addWidget(text)
        dlg.resize(700, 400)
        dlg.show()
        self.traceback_view = dlg


def _escape(text: str) -> str:
    import html

    return html.escape(str(text))


def open_plugin_manager(window) -> PluginManagerDialog:
    dlg = window.plugin_manager_dialog
    if dlg is None:
        dlg = window.plugin_manager_dialog = PluginManagerDialog(window)
    else:
        dlg.refresh()
    dlg.show()
    dlg.raise_()
    return dlg


def install_plugin_manager(window) -> QAction:
    """Add Tools ▸ Plugins… to the main window."""
    window.plugin_manager_dialog = None
    action = QAction("&Plugins…", window)
    action.setObjectName("plugin_manager_action")
    action.setStatusTip("Install, uninstall, enable or disable plugins")
    action.triggered.connect(lambda: open_plugin_manager(window))
    window.add_tool_action(action)
    window.plugin_manager_action = action
    return action
