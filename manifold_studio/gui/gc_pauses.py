"""Garbage collection without long pauses in the window's process.

Python's cycle collector stops every thread while it walks the objects of the generation it
collects, holding the GIL. A full (generation 2) collection walks every tracked object: in the
window, with Qt, pyqtgraph, scipy and numba loaded, about 235,000 of them, 200 ms of CPU on the
benchmark machine (840 ms of wall clock under load) — the longest event-loop stalls measured
during t-SNE fits (405 ms, the main thread idle: the fit's worker thread was collecting).

:class:`FrozenCollector` keeps full collections short: the objects that survived one are moved to
the permanent generation (``gc.freeze()``), so the next full collection walks only the objects
created since. It freezes once at start (after one full collection) and again right after every
automatic full collection (a ``gc.callbacks`` hook: nothing extra is walked). Frozen objects are
still freed by reference counting; only cycles among them wait. :meth:`FrozenCollector.collect_all`
collects those too (unfreeze, collect, freeze); :class:`CollectWhenRemoved` calls it a little after
runs or data sets are removed (when cyclic garbage appears and a short pause is expected), once
no job is running. After each run ends it also freezes what the run left (:meth:`FrozenCollector.
freeze_new`: the young generations collected first), so that the modules a first fit imported
(numba, scipy: about 100,000 objects) are not walked by a full collection during the next fit.
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

__all__ = ["COLLECTOR", "CollectWhenRemoved", "FrozenCollector", "install_gc_pauses"]

#: wait after a removal before collecting (coalesces removing many runs)
COLLECT_DELAY_MS = 2000
#: and retry this often while a job runs
RETRY_MS = 5000


class FrozenCollector:
    """Full collections walk only the objects created since the last one (one per process)."""

    def __init__(self):
        self.installed = False
        #: freezes after an automatic full collection, and full collections by collect_all
        self.freezes = 0
        self.collections = 0

    def install(self) -> "FrozenCollector":
        """Collect and freeze once, then freeze after every automatic full collection
        (idempotent)."""
        if not self.installed:
            self.installed = True
            self.collect_all()
            gc.callbacks.append(self._after_collection)
        return self

    def uninstall(self) -> None:
        """Stop freezing and give the frozen objects back to the collector (tests)."""
        if self.installed:
            self.installed = False
            if self._after_collection in gc.callbacks:
                gc.callbacks.remove(self._after_collection)
            gc.unfreeze()

    def _after_collection(self, phase: str, info: dict) -> None:
        if phase == "stop" and info.get("generation") == 2:
            gc.freeze()   # what survived it is old: the next full collection skips it
            self.freezes += 1

    def freeze_new(self) -> None:
        """Collect the young generations (cheap) and freeze what is left: the objects made since
        the last freeze are skipped by the next full collections (cycles among them wait for
        :meth:`collect_all`)."""
        if self.installed:
            gc.collect(1)
            gc.freeze()
            self.freezes += 1

    def collect_all(self) -> int:
        """A full collection of every object, the frozen ones included; then freeze again.
        Returns the number of unreachable objects found."""
        gc.unfreeze()
        try:
            found = gc.collect()
        finally:
            gc.freeze()
        self.collections += 1
        return found


COLLECTOR = FrozenCollector()


class CollectWhenRemoved(QObject):
    """Runs :meth:`FrozenCollector.collect_all` a little after a run or a data set is removed,
    once no job of ``window`` is running."""

    def __init__(self, window, collector: FrozenCollector = COLLECTOR):
        super().__init__(window)
        self.window, self.collector = window, collector
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._collect)
        window.bridge.event.connect(self._on_event)
        window.runFinished.connect(lambda _run: self.collector.freeze_new())

    def _on_event(self, ev) -> None:
        if ev.kind in ("run_removed", "dataset_removed"):
            self.timer.start(COLLECT_DELAY_MS)

    def _collect(self) -> None:
        if not self.collector.installed:
            return
        if self.window.jobs.active:
            self.timer.start(RETRY_MS)
            return
        self.collector.collect_all()


def install_gc_pauses(window) -> CollectWhenRemoved:
    """Short collections for the process of ``window`` (the application and the benchmarks call
    it once the window is built)."""
    COLLECTOR.install()
    return CollectWhenRemoved(window)
