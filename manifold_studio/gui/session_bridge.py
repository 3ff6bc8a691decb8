"""Session events as Qt signals (main thread).

The session model is Qt-free and calls plain observers. The main window subscribes one
:class:`SessionBridge` and every widget connects to its signals, so that a widget that is
deleted is disconnected by Qt instead of leaving a dangling observer in the model.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from manifold_studio.session.model import Session
from manifold_studio.session.records import SessionEvent


class SessionBridge(QObject):
    event = Signal(object)            # every SessionEvent
    datasetsChanged = Signal()        # added / removed / edited / current changed
    runChanged = Signal(object)       # Run added / updated / removed
    currentRunChanged = Signal(object)  # Run or None
    logged = Signal(object)           # LogEntry

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self._unsubscribe = session.subscribe(self._on_event)

    def _on_event(self, ev: SessionEvent) -> None:
        self.event.emit(ev)
        if ev.kind in ("dataset_added", "dataset_removed", "dataset_changed", "current_dataset"):
            self.datasetsChanged.emit()
        elif ev.kind in ("run_added", "run_updated", "run_removed", "extension_added"):
            self.runChanged.emit(ev.run)
        elif ev.kind == "current_run":
            self.currentRunChanged.emit(ev.run)
        elif ev.kind == "log":
            self.logged.emit(ev.entry)

    def detach(self) -> None:
        self._unsubscribe()
