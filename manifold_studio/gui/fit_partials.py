"""Where the intermediate results of a running fit go (``progress.partial`` on the worker).

- a :class:`~manifold_studio.algorithms.curves.TrainingCurve` (a classifier's loss or mistakes
  per epoch) → the training curve view, raised so the user sees it live;
- anything else (an (n, k) intermediate embedding, e.g. t-SNE iterations) → the map's preview.

A preview must never break the fit: failures are logged as warnings. Previews that arrive faster
than they can be drawn are coalesced: only the newest of each kind is drawn, at most every
max(50 ms, 3 × the last drawing time), so a fit that publishes often (t-SNE every few iterations
on 100,000 points) never stalls the window.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.session import error_message

MIN_INTERVAL_MS = 50


class PartialRouter(QObject):
    """Keeps the newest preview of each kind per run and draws them on a timer."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.pending: dict[tuple[int, bool], object] = {}
        self.interval_ms = MIN_INTERVAL_MS
        self.drawn = 0
        self._seen: set[tuple[int, bool]] = set()
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.flush)

    def push(self, run_id: int, result) -> None:
        key = (run_id, isinstance(result, TrainingCurve))
        if key not in self._seen:  # the first preview of a run is drawn at once
            self._seen.add(key)
            self.pending[key] = result
            self.flush()
            return
        self.pending[key] = result
        if not self.timer.isActive():
            self.timer.start(self.interval_ms)

    def flush(self) -> None:
        items, self.pending = self.pending, {}
        start = time.perf_counter()
        for (run_id, _curve), result in items.items():
            draw_partial(self.window, run_id, result)
            self.drawn += 1
        spent_ms = 1000.0 * (time.perf_counter() - start)
        self.interval_ms = int(max(MIN_INTERVAL_MS, 3.0 * spent_ms))


def route_partial(window, run_id: int, result) -> None:
    """Queue a preview of a running fit (drawn soon, coalesced with later ones)."""
    router = getattr(window, "_partial_router", None)
    if router is None:
        router = window._partial_router = PartialRouter(window)
    router.push(run_id, result)


def draw_partial(window, run_id: int, result) -> None:
    run = window.session.runs.get(run_id)
    if run is None or run.finished:
        return
    try:
        if isinstance(result, TrainingCurve):
            view = window.views.get("training_curve")
            if view is not None:
                dock = window.docks.get("view:training_curve")
                if dock is not None and not dock.isVisible():
                    dock.setVisible(True)
                view.show_partial(run, result)
            return
        view = window.map_view
        if view is not None:
            view.show_partial(run, result, window.session.datasets.get(run.dataset_name))
    except Exception as exc:  # noqa: BLE001 - a preview must never break the fit
        window.session.log(f"Could not draw an intermediate result: {error_message(exc)}", "warning")
