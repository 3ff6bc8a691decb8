"""Run any Qt-free callable on a worker thread, with progress, partial results and cancel.

The GUI never computes. It builds a task — a plain callable that accepts a keyword argument
``progress`` (a :class:`~manifold_studio.algorithms.progress.CallbackProgress`) — and hands it
to :meth:`JobRunner.start`. The returned :class:`Job` lives in the main thread and re-emits,
through queued signals, what happens on the worker thread::

    job = window.jobs.start(task, title="Extending run #3")
    job.progressed.connect(...)      # (fraction, message), throttled by CallbackProgress
    job.partial.connect(...)         # intermediate results published by progress.partial()
    job.succeeded.connect(...)       # (result)
    job.failed.connect(...)          # (message, traceback text)
    job.cancelled.connect(...)       # the task raised FitCancelled after job.cancel()
    job.ended.connect(...)           # always last, whatever the outcome

``job.cancel()`` may be called at any time; the task's next ``progress.checkpoint`` raises
``FitCancelled``. :meth:`JobRunner.shutdown` cancels every job and joins every thread (the main
window calls it when it closes; tests rely on it so that no thread outlives its test).
"""
from __future__ import annotations

import os
import threading
import time
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, QTimer, Signal

from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.errors import FitCancelled, error_message

__all__ = ["Job", "JobRunner", "LatestJob"]


#: at most this often a job's progress reaches the window (each report repaints the progress
#: bar and lays out its message: 5-10 ms of the main thread; 5 per second still reads as live)
PROGRESS_INTERVAL_S = 0.2


#: niceness of worker threads (Linux): the main thread wins the CPU when both want it, so the
#: window stays responsive on a busy machine; alone, a worker still gets a whole core
WORKER_NICENESS = 5


def lower_priority() -> None:
    """Make the calling (worker) thread nicer than the main thread, where the OS allows it."""
    try:
        current = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), max(current, WORKER_NICENESS))
    except (AttributeError, OSError):  # not Linux, or not allowed: keep the priority
        pass


class _TaskThread(QThread):
    """Runs one task. Its signals are emitted in the worker thread and delivered, queued,
    to the owning :class:`Job` (which lives in the main thread)."""

    progressed = Signal(float, str)
    partial = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, parent=None):
        super().__init__(parent)
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self.progress = CallbackProgress(on_progress=self._emit_progress, on_partial=self._emit_partial,
                                         min_interval=PROGRESS_INTERVAL_S)

    def _emit_progress(self, fraction: float, message: str) -> None:
        self.progressed.emit(fraction, message)

    def _emit_partial(self, result: Any) -> None:
        self.partial.emit(result)

    def run(self):  # worker thread
        lower_priority()
        try:
            result = self._fn(*self._args, progress=self.progress, **self._kwargs)
        except FitCancelled:
            self.cancelled.emit()
        except BaseException as exc:  # noqa: BLE001 - everything is reported, nothing escapes
            self.failed.emit(error_message(exc),
                             "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        else:
            self.succeeded.emit(result)


class Job(QObject):
    """A task on its way through a worker thread (main-thread object)."""

    progressed = Signal(float, str)
    partial = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()
    ended = Signal()

    RUNNING, DONE, FAILED, CANCELLED = "running", "done", "failed", "cancelled"

    def __init__(self, fn: Callable, args: tuple = (), kwargs: dict | None = None, title: str = "",
                 parent=None):
        super().__init__(parent)
        self.title = title or getattr(fn, "__name__", "task")
        self.state = self.RUNNING
        self.fraction, self.message = 0.0, ""
        self.result: Any = None
        self.error, self.error_detail = "", ""
        self.started_at = time.monotonic()
        self.elapsed = 0.0
        self._thread = _TaskThread(fn, args, dict(kwargs or {}))
        self._thread.progressed.connect(self._on_progress)
        self._thread.partial.connect(self.partial)
        self._thread.succeeded.connect(self._on_succeeded)
        self._thread.failed.connect(self._on_failed)
        self._thread.cancelled.connect(self._on_cancelled)
        self._abandon_scheduled = False
        #: the task ignored Cancel and was left to finish in the background
        self.abandoned = False

    # -- control --------------------------------------------------------------------------
    def start(self) -> "Job":
        self.started_at = time.monotonic()
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the task to stop; it does so at its next progress checkpoint. A task that has not
        stopped ``ABANDON_AFTER_MS`` later (a plugin that never calls checkpoint) is abandoned:
        the job ends as cancelled at once, the thread finishes in the background and its result
        is discarded."""
        self._thread.progress.cancel()
        if self.state == self.RUNNING and not self._abandon_scheduled:
            self._abandon_scheduled = True
            QTimer.singleShot(ABANDON_AFTER_MS, self._abandon_if_running)

    def _abandon_if_running(self) -> None:
        if self.state != self.RUNNING or not self._thread.isRunning():
            return
        self.abandoned = True
        for signal, slot in ((self._thread.progressed, self._on_progress), (self._thread.partial, self.partial),
                             (self._thread.succeeded, self._on_succeeded), (self._thread.failed, self._on_failed),
                             (self._thread.cancelled, self._on_cancelled)):
            try:
                signal.disconnect(slot)
            except (RuntimeError, TypeError):  # pragma: no cover - already gone
                pass
        _ABANDONED.append(self._thread)  # a running QThread must outlive its job
        self.message = (f"{self.title} did not stop within {ABANDON_AFTER_MS / 1000:g} s of Cancel (its code never "
                        "reached a checkpoint): abandoned — it finishes in the background and its result is "
                        "discarded.")
        self.cancelled.emit()
        self._end(self.CANCELLED)

    @property
    def cancel_requested(self) -> bool:
        return self._thread.progress.cancelled

    @property
    def finished(self) -> bool:
        return self.state != self.RUNNING

    def is_thread_running(self) -> bool:
        return self._thread.isRunning()

    def wait(self, msecs: int = 10_000) -> bool:
        """Block until the thread has finished (used at shutdown and in tests)."""
        return self._thread.wait(msecs)

    # -- slots (main thread) --------------------------------------------------------------
    def _on_progress(self, fraction: float, message: str) -> None:
        self.fraction, self.message = fraction, message
        self.progressed.emit(fraction, message)

    def _end(self, state: str) -> None:
        self.state = state
        self.elapsed = time.monotonic() - self.started_at
        self.ended.emit()

    def _on_succeeded(self, result) -> None:
        self.result = result
        self.fraction = 1.0
        self.succeeded.emit(result)
        self._end(self.DONE)

    def _on_failed(self, message: str, detail: str) -> None:
        self.error, self.error_detail = message, detail
        self.failed.emit(message, detail)
        self._end(self.FAILED)

    def _on_cancelled(self) -> None:
        self.cancelled.emit()
        self._end(self.CANCELLED)


# Jobs whose thread did not stop in time at shutdown: never destroy a running QThread.
_ORPHANS: list[Job] = []
#: threads of abandoned jobs (they ignored Cancel), kept until they end
_ABANDONED: list = []
#: milliseconds after Cancel before a task that ignores it is abandoned
ABANDON_AFTER_MS = 5000


class JobRunner(QObject):
    """Starts jobs, keeps them alive while they run, and joins them all at shutdown.

    Jobs have no Qt parent: once a job has ended the runner drops its reference (on the next
    turn of the event loop), so a finished job and its result live exactly as long as someone
    holds them. Connect to a job's signals with bound methods or lambdas that do not capture
    the job itself (use ``self.sender()``), or the connection keeps it alive.
    """

    jobStarted = Signal(object)
    jobEnded = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.jobs: list[Job] = []
        self._ended: list[Job] = []
        self._closed = False

    def start(self, fn: Callable, *args, title: str = "", **kwargs) -> Job:
        """Run ``fn(*args, progress=..., **kwargs)`` on a new worker thread."""
        if self._closed:
            raise RuntimeError("The job runner is shut down.")
        job = Job(fn, args, kwargs, title)
        self.jobs.append(job)
        job.ended.connect(self._on_ended)
        self.jobStarted.emit(job)
        return job.start()

    def _on_ended(self) -> None:
        job = self.sender()
        if not isinstance(job, Job):  # pragma: no cover - defensive
            return
        if not job.abandoned:
            job.wait(5_000)  # the thread returns right after emitting its last signal; join it
        if job in self.jobs:
            self.jobs.remove(job)
        self._ended.append(job)  # released on the next turn of the event loop, not inside its own signal
        QTimer.singleShot(0, self._purge)
        self.jobEnded.emit(job)

    def _purge(self) -> None:
        self._ended = [j for j in self._ended if j.is_thread_running()]

    @property
    def active(self) -> list[Job]:
        return [j for j in self.jobs if not j.finished]

    def cancel_all(self) -> None:
        for job in list(self.jobs):
            job.cancel()

    def shutdown(self, msecs: int = 10_000) -> bool:
        """Cancel every job and wait for every thread; True when all have stopped."""
        self._closed = True
        self.cancel_all()
        ok = True
        deadline = time.monotonic() + msecs / 1000
        for job in list(self.jobs) + list(self._ended):
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            if not job.wait(remaining):
                ok = False
                _ORPHANS.append(job)
        return ok


class LatestJob:
    """The background job of a view whose result is only wanted while it is the latest one.

    Views that redraw for the current run (silhouette, contingency table, dendrogram, cluster
    centres) start a job whenever the run or the labels change. :meth:`start` (and
    :meth:`drop`, for a run with nothing to compute) cancels the job before and makes its late
    callbacks do nothing, so a slow old result never overwrites a newer one::

        self.latest = LatestJob()
        self.latest.start(window, task, *args, title="Silhouette",
                          on_success=self._done, on_failure=self._failed)
    """

    def __init__(self):
        self.job: Job | None = None
        self._token = 0

    @property
    def busy(self) -> bool:
        return self.job is not None and not self.job.finished

    def drop(self) -> None:
        """Cancel the current job (if it runs); whatever it still reports is ignored."""
        self._token += 1
        if self.busy:
            self.job.cancel()
        self.job = None

    def start(self, window, fn: Callable, *args, on_success: Callable, on_failure: Callable,
              **kwargs) -> Job:
        """Drop the current job and run ``fn(*args, **kwargs)`` with ``window.start_job`` in the
        background (``foreground=False``: no progress bar). ``on_success(result)`` and
        ``on_failure(message, detail)`` are only called while this job is still the latest."""
        self.drop()
        token = self._token
        self.job = window.start_job(
            fn, *args, foreground=False,
            on_success=lambda result: on_success(result) if token == self._token else None,
            on_failure=lambda message, detail: on_failure(message, detail) if token == self._token else None,
            **kwargs)
        return self.job
