"""The session history as text: loads, runs, warnings and errors (errors in red)."""
from __future__ import annotations

import html

from PySide6.QtWidgets import QPlainTextEdit

LEVEL_COLORS = {"error": "#b00020", "warning": "#8a5a00", "info": "#202020"}


class MessageLog(QPlainTextEdit):
    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.setObjectName("message_log")
        self.setReadOnly(True)
        self.setMaximumBlockCount(5000)
        for entry in window.session.history:
            self.append_entry(entry)
        window.bridge.logged.connect(self.append_entry)

    def append_entry(self, entry) -> None:
        color = LEVEL_COLORS.get(entry.level, "#202020")
        self.appendHtml(f'<span style="color:{color}">{html.escape(entry.format())}</span>')
        if entry.detail and entry.level == "error":
            last = entry.detail.strip().splitlines()[-1] if entry.detail.strip() else ""
            if last and last not in entry.message:
                self.appendHtml(f'<span style="color:#777">&nbsp;&nbsp;&nbsp;&nbsp;{html.escape(last)}</span>')
