"""Autosave and crash recovery in the window (see :mod:`manifold_studio.project.recovery`).

Every few minutes, and a little while after a run finishes, a snapshot of the session is
taken in the GUI thread (cheap: it shares the arrays) and written to the recovery file on a
background worker thread, so the window never waits for it. A clean exit deletes the file;
the next start after a crash offers to restore what the file holds.
"""
from __future__ import annotations

import os

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox

from manifold_studio.session.records import DONE
from manifold_studio.project.recovery import (
    discard_recovery,
    orphaned_recovery_files,
    snapshot,
    write_recovery,
)

#: seconds between autosaves (MANIFOLD_STUDIO_AUTOSAVE_S overrides it)
INTERVAL_S = 180.0
#: seconds after the last finished run before its results are autosaved
AFTER_RUN_S = 15.0


class Autosave(QObject):
    #: the recovery file was written (its path)
    saved = Signal(object)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.job = None
        self._again = False
        interval = float(os.environ.get("MANIFOLD_STUDIO_AUTOSAVE_S") or INTERVAL_S)
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.save_now)
        self.timer.start(int(interval * 1000))
        self.after_run = QTimer(self)
        self.after_run.setSingleShot(True)
        self.after_run.timeout.connect(self.save_now)
        self._after_run_ms = int(min(AFTER_RUN_S, interval) * 1000)
        window.bridge.runChanged.connect(self._on_run_changed)

    def _on_run_changed(self, run) -> None:
        if run is not None and run.status == DONE:
            self.after_run.start(self._after_run_ms)

    def save_now(self):
        """Write the recovery file in the background (returns the Job, or None if nothing to save)."""
        w = self.window
        if w._shut_down or not w.session.datasets:
            return None
        if self.job is not None and not self.job.finished:
            self._again = True
            return None
        snap = snapshot(w.session)
        settings = w.project.view_settings() if w.project is not None else {}
        analyses = w.project.analyses() if w.project is not None else {}
        form_values = w.algorithm_panel.remembered_values() if w.algorithm_panel is not None else {}

        def done(path):
            self.saved.emit(path)
            if self._again:
                self._again = False
                QTimer.singleShot(0, self.save_now)

        self.job = w.start_job(write_recovery, snap, settings, analyses=analyses, form_values=form_values,
                               title="Autosave",
                               foreground=False,
                               on_success=done,
                               on_failure=lambda msg, _detail: w.session.log(f"Autosave failed: {msg}", "warning"))
        return self.job

    def stop(self) -> None:
        """A clean exit: no recovery file is needed."""
        self.timer.stop()
        self.after_run.stop()
        if self.job is not None and not self.job.finished:
            self.job.wait(10_000)
        discard_recovery()

    # -- restoring -------------------------------------------------------------------------------
    def offer_restore(self, ask: bool = True):
        """After a crash: offer to restore the newest orphaned recovery file. Returns the Job
        that restores it, or None."""
        files = orphaned_recovery_files()
        if not files:
            return None
        newest = files[0]
        for older in files[1:]:  # only the newest is offered; the others are stale
            discard_recovery(older.path)
        if ask:
            answer = QMessageBox.question(
                self.window, "Restore the previous session?",
                f"Manifold Studio did not close normally last time. Restore the session autosaved at "
                f"{newest.describe()} (data sets, runs, models and layout)?",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
            if answer != QMessageBox.StandardButton.Yes:
                discard_recovery(newest.path)
                return None
        return self.restore(newest.path)

    def restore(self, path):
        job = self.window.project.open_project(path)
        if job is not None:
            job.succeeded.connect(lambda _contents, p=path: self._restored(p))
        return job

    def _restored(self, path) -> None:
        self.window.session.log(f"Restored the session autosaved in {path}")
        self.window.project.path = None  # a recovered session has no project file of its own
        self.window.setWindowTitle("Manifold Studio — recovered session")
        discard_recovery(path)


def install_autosave(window) -> Autosave:
    window.autosave = Autosave(window)
    return window.autosave
