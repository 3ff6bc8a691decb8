"""How long the event loop was blocked: a 10 ms timer in the main thread records its ticks.

Used by the responsiveness tests and ``benchmarks/bench_ui.py``::

    meter = StallMeter().start()
    ... run a fit, wait for it (qtbot.waitUntil or a local event loop) ...
    meter.stop()
    meter.max_stall_ms(skip_s=0.2)   # longest gap between ticks minus the 10 ms interval

A gap between two ticks longer than the interval is time the main thread could not turn the
event loop: a slot that ran long, a paint, or waiting for the GIL held by a worker thread.
With ``trace=True`` a watchdog thread samples the main thread's Python stack whenever no tick
came for ``trace_after_ms``, so a stall can be attributed to the code that caused it
(:meth:`stall_report`). It is for diagnosis only: on Python 3.11, reading another thread's
frames (``sys._current_frames``) while that thread is entering a function can crash the
process (3 segmentation faults in 6 benchmark runs with it, none in 4 without).
"""
from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PySide6.QtCore import QEventLoop, QObject, QTimer

__all__ = ["StallMeter", "FitStalls", "measure_fit", "spin_until"]


class StallMeter(QObject):
    """Records the gaps between the ticks of a ``interval_ms`` timer in the main thread."""

    def __init__(self, interval_ms: int = 10, trace: bool = False, trace_after_ms: float = 30.0, parent=None):
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.ticks: list[float] = []
        #: the main thread's CPU time at each tick (a long gap with little CPU: it was blocked,
        #: waiting for the GIL or for a core, not computing)
        self.cpu: list[float] = []
        self.samples: Counter = Counter()
        #: stacks of the other threads when the watchdog itself could not run for a while
        #: (someone held the GIL)
        self.gil_samples: Counter = Counter()
        self._trace, self._trace_after = trace, trace_after_ms / 1000.0
        self._main_id = threading.get_ident()
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def start(self) -> "StallMeter":
        self.ticks, self.cpu = [time.perf_counter()], [time.thread_time()]
        self.timer.start()
        if self._trace:
            self._stop.clear()
            self._watchdog = threading.Thread(target=self._watch, name="stall-watchdog", daemon=True)
            self._watchdog.start()
        return self

    def stop(self) -> "StallMeter":
        self.timer.stop()
        self._tick()
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join(1.0)
            self._watchdog = None
        return self

    def reset(self) -> None:
        """Forget the ticks so far (e.g. after a warm-up) and keep measuring."""
        self.ticks, self.cpu = [time.perf_counter()], [time.thread_time()]
        self.samples.clear()
        self.gil_samples.clear()

    def _tick(self) -> None:
        self.ticks.append(time.perf_counter())
        self.cpu.append(time.thread_time())

    # -- figures ------------------------------------------------------------------------------
    def _keep(self, skip_s: float, since: float | None, until: float | None) -> np.ndarray:
        """Which gaps count: those ending more than ``skip_s`` after the start, after ``since``
        and no later than ``until`` (``time.perf_counter()`` values; a gap that spans ``t``
        counts as after it)."""
        t = np.asarray(self.ticks)
        keep = t[1:] - t[0] > skip_s
        if since is not None:
            keep &= t[1:] > since
        if until is not None:
            keep &= t[1:] <= until
        return keep

    def gaps_ms(self, skip_s: float = 0.0, since: float | None = None, until: float | None = None) -> np.ndarray:
        """Gaps between successive ticks (ms), leaving out those that end within ``skip_s`` of
        the start, end before ``since`` or end after ``until``."""
        if len(self.ticks) < 2:
            return np.zeros(0)
        return (np.diff(np.asarray(self.ticks)) * 1000.0)[self._keep(skip_s, since, until)]

    def stalls_ms(self, skip_s: float = 0.0, since: float | None = None, until: float | None = None) -> np.ndarray:
        """How much longer than the timer's interval each gap was (ms, ≥ 0)."""
        return np.maximum(self.gaps_ms(skip_s, since, until) - self.interval_ms, 0.0)

    def busy_ms(self, skip_s: float = 0.0, since: float | None = None, until: float | None = None) -> np.ndarray:
        """The main thread's CPU time during each gap (ms), aligned with :meth:`gaps_ms`."""
        if len(self.ticks) < 2:
            return np.zeros(0)
        return (np.diff(np.asarray(self.cpu)) * 1000.0)[self._keep(skip_s, since, until)]

    def max_stall_ms(self, skip_s: float = 0.0, since: float | None = None, until: float | None = None) -> float:
        s = self.stalls_ms(skip_s, since, until)
        return float(s.max()) if len(s) else 0.0

    def percentile_stall_ms(self, q: float, skip_s: float = 0.0) -> float:
        s = self.stalls_ms(skip_s)
        return float(np.percentile(s, q)) if len(s) else 0.0

    def worst(self, k: int = 3, since: float | None = None, until: float | None = None) -> str:
        """The ``k`` longest stalls as "stall ms (main thread CPU ms)"."""
        s, b = self.stalls_ms(0.0, since, until), self.busy_ms(0.0, since, until)
        order = np.argsort(s)[::-1][:k]
        return ", ".join(f"{s[i]:.0f} ({b[i]:.0f} cpu)" for i in order if s[i] > 0)

    # -- attribution --------------------------------------------------------------------------
    def _watch(self) -> None:
        step = self._trace_after / 3
        last = time.perf_counter()
        while not self._stop.wait(step):
            now = time.perf_counter()
            if now - last > self._trace_after + step:  # this thread could not run: the GIL was held
                for ident, frame in sys._current_frames().items():
                    if ident not in (self._main_id, threading.get_ident()):
                        self.gil_samples[_stack_key(frame, 6)] += 1
            last = now
            if not self.ticks or time.perf_counter() - self.ticks[-1] < self._trace_after:
                continue
            frame = sys._current_frames().get(self._main_id)
            if frame is None:
                continue
            self.samples[_stack_key(frame, 12)] += 1

    def stall_report(self, top: int = 5) -> str:
        """The main thread's most frequent stacks while it was stalled, and the other threads'
        stacks when the GIL was held for long (``trace=True``)."""
        lines = [f"{n:4d} × main: {key}" for key, n in self.samples.most_common(top)]
        lines += [f"{n:4d} × GIL held, other thread at: {key}" for key, n in self.gil_samples.most_common(top)]
        return "\n".join(lines)


def _stack_key(frame, depth: int) -> str:
    stack = traceback.extract_stack(frame)[-depth:]
    return " <- ".join(f"{f.name}({f.filename.rsplit('/', 1)[-1]}:{f.lineno})" for f in reversed(stack))


def spin_until(condition: Callable[[], bool], timeout_s: float, poll_ms: int = 5) -> bool:
    """Turn the event loop until ``condition()`` holds or ``timeout_s`` passed; returns it."""
    deadline = time.perf_counter() + timeout_s
    if condition():
        return True
    loop = QEventLoop()
    timer = QTimer()
    timer.setInterval(poll_ms)
    timer.timeout.connect(lambda: (condition() or time.perf_counter() > deadline) and loop.quit())
    timer.start()
    loop.exec()
    timer.stop()
    return bool(condition())


@dataclass
class FitStalls:
    """The event loop during one fit in the window (:func:`measure_fit`)."""

    algorithm: str
    status: str
    seconds: float
    #: longest stall while the worker fitted (from Run until its result reached the window)
    fit_ms: float
    #: longest stall from the result's arrival (recording it, every view's show_run, the
    #: repaint) until ``settle_s`` later
    completion_ms: float
    fit_worst: str
    completion_worst: str
    cancelled: bool
    trace: str = ""


def measure_fit(window, algorithm_id: str, params: dict | None = None, *, timeout_s: float = 60.0,
                cancel_after_s: float | None = None, settle_s: float = 0.3, skip_s: float = 0.0,
                trace: bool = False, **run_kwargs) -> FitStalls:
    """Run ``algorithm_id`` in ``window`` (on its current data set; ``run_kwargs`` go to
    ``window.run_algorithm``, e.g. ``rows``) while a :class:`StallMeter` runs; Cancel it after
    ``cancel_after_s`` seconds if it has not finished. The stalls before the run's end reached
    the session are the fit's; those after are the completion's."""
    session = window.session
    ended: list[float] = []
    patched = {}
    for name in ("complete_run", "fail_run", "cancel_run"):
        original = getattr(session, name)

        def wrapper(*args, _original=original, **kwargs):
            ended.append(time.perf_counter())
            return _original(*args, **kwargs)

        patched[name] = wrapper
        setattr(session, name, wrapper)
    meter = StallMeter(trace=trace).start()
    start = time.perf_counter()
    cancelled = False
    try:
        run = window.run_algorithm(algorithm_id, dict(params or {}), **run_kwargs)
        if run is None:
            raise RuntimeError(f"{algorithm_id} could not start (see the status bar)")
        limit = cancel_after_s if cancel_after_s is not None else timeout_s
        spin_until(lambda: run.finished, limit)
        if not run.finished and cancel_after_s is not None:
            cancelled = True
            window.cancel_jobs()
            spin_until(lambda: run.finished, 15.0)
        seconds = time.perf_counter() - start
        spin_until(lambda: not window.busy, 10.0)
        spin_until(lambda: False, settle_s)
    finally:
        meter.stop()
        for name in patched:
            delattr(session, name)  # the class's method again
    end = ended[0] if ended else meter.ticks[-1]
    return FitStalls(algorithm_id, run.status, seconds,
                     meter.max_stall_ms(skip_s, until=end), meter.max_stall_ms(since=end),
                     meter.worst(3, until=end), meter.worst(3, since=end), cancelled,
                     meter.stall_report() if trace else "")


def render_plot(view):
    """The map ``view``'s plot painted into a white image of its size (a full frame, as the
    screen would get it): a QImage."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(view.plot.size(), QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    view.plot.render(painter)
    painter.end()
    return image
