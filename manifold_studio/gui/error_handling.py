"""Never a crash: uncaught exceptions are logged and shown in the window.

:func:`install_excepthook` replaces ``sys.excepthook`` (PySide6 routes exceptions raised in
slots and event handlers through it) and ``threading.excepthook``. The handler writes the
traceback to the session history and to stderr, shows a one-line message in the status bar
and a non-modal dialog with the details; the application keeps running.
"""
from __future__ import annotations

import sys
import threading
import traceback

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from manifold_studio.errors import error_message


def show_error_dialog(parent: QWidget | None, title: str, message: str, detail: str = "") -> QMessageBox:
    """A non-modal error box (never blocks the event loop or a test)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(title)
    box.setText(message)
    if detail:
        box.setDetailedText(detail)
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.show()
    return box


class _Relay(QObject):
    """Carries exceptions from any thread to the main thread."""

    raised = Signal(str, str)


class ExceptionHandler:
    def __init__(self, window):
        self.window = window
        self._relay = _Relay()
        self._relay.raised.connect(self._show)
        self._previous = (sys.excepthook, threading.excepthook)

    def __call__(self, exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            self._previous[0](exc_type, exc, tb)
            return
        detail = "".join(traceback.format_exception(exc_type, exc, tb))
        sys.stderr.write(detail)
        self._relay.raised.emit(error_message(exc) if exc is not None else exc_type.__name__, detail)

    def thread_hook(self, args):
        self(args.exc_type, args.exc_value, args.exc_traceback)

    def _show(self, message: str, detail: str) -> None:
        try:
            self.window.report_error(f"Unexpected error: {message}", detail, dialog=True)
        except Exception:  # noqa: BLE001 - the window itself may be gone
            sys.stderr.write(f"Unexpected error: {message}\n")

    def uninstall(self):
        sys.excepthook, threading.excepthook = self._previous


def install_excepthook(window) -> ExceptionHandler:
    handler = ExceptionHandler(window)
    sys.excepthook = handler
    threading.excepthook = handler.thread_hook
    return handler

