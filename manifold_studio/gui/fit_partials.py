"""Where the intermediate results of a running fit go (``progress.partial`` on the worker).

The session says what a partial result is (:func:`~manifold_studio.session.lifecycle.preview_of`):

- a "curve" (a classifier's loss or mistakes per epoch) → the training curve view's
  ``show_partial``, its dock raised so the user sees it live;
- a "map" (an (n, k) intermediate embedding, e.g. t-SNE iterations) → ``MapView.show_partial``,
  the map's public partial-result API (:mod:`manifold_studio.gui.views.map_preview`);
- "labels" (a clustering's step, e.g. k-means) → ``MapView.show_partial_labels``: the map of the
  same points recoloured.

Previews that arrive faster than they can be drawn are coalesced: only the newest of each kind
is drawn, at most every max(50 ms, 3 × the last drawing time), so a fit that publishes often
(t-SNE every few iterations on 100,000 points) never stalls the window. A large map's next
intermediate map, and the next curve, also wait (WAIT_MS at a time, at most MAX_WAITS times)
while the previous one is not painted yet (``awaiting_paint`` of the map or the curve view):
never two redraws of a view queued. The curve's plot is built when an algorithm that may publish
curves is picked or its fit starts (:func:`prepare_partial_views`), not with its first curve. A result that is no
preview (the run ended meanwhile, an array of the wrong size) is dropped; a view that cannot draw
one raises, like any other bug.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.session.lifecycle import preview_of

MIN_INTERVAL_MS = 50
WAIT_MS = 20
MAX_WAITS = 10
#: the curve's plot is built this long after a fit starts (a turn of the event loop of its own)
PREPARE_AFTER_MS = 30


class PartialRouter(QObject):
    """Keeps the newest preview of each kind per run and draws them on a timer."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.pending: dict[tuple[int, bool], object] = {}
        self.interval_ms = MIN_INTERVAL_MS
        self.drawn = 0
        #: flushes that held a map back because the previous one was not painted yet
        self.waits = 0
        self._waited = 0
        #: drawing time of each flush (ms), for diagnostics and the responsiveness tests
        self.flush_ms: list[float] = []
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
        held = {key: v for key, v in items.items() if self._awaits_paint(key[1])} \
            if self._waited < MAX_WAITS else {}
        if held:   # drawn once the previous one of their view is painted
            self.pending = held
            items = {key: v for key, v in items.items() if key not in held}
            self._waited += 1
            self.waits += 1
            self.timer.start(WAIT_MS)
            if not items:
                return
        else:
            self._waited = 0
        start = time.perf_counter()
        for (run_id, _curve), result in items.items():
            draw_partial(self.window, run_id, result)
            self.drawn += 1
        spent_ms = 1000.0 * (time.perf_counter() - start)
        self.flush_ms.append(spent_ms)
        self.interval_ms = int(max(MIN_INTERVAL_MS, 3.0 * spent_ms))

    def _awaits_paint(self, curve: bool) -> bool:
        """Whether the view of a curve (``curve``) or of a map has not painted its last preview."""
        view = self.window.views.get("training_curve") if curve else self.window.map_view
        awaiting = getattr(view, "awaiting_paint", None)
        return awaiting is not None and awaiting()


def prepare_partial_views(window, algorithm_class) -> None:
    """A fit of ``algorithm_class`` starts: the training-curve plot (built on first use) is built
    PREPARE_AFTER_MS later when the fit may publish curves (a classifier, or an algorithm with a
    ``training_curve``), not with its first curve (with the dock's opening and the window's new
    layout: one long stall) nor in the same turn of the event loop as the Run click."""
    view = window.views.get("training_curve")
    prepare = getattr(view, "prepare", None)
    if prepare is not None and hasattr(algorithm_class, "training_curve"):
        QTimer.singleShot(PREPARE_AFTER_MS, view, prepare)


def prepare_for_algorithm(window, algorithm_id: str) -> None:
    """The Algorithm panel shows ``algorithm_id``: its views are prepared before Run is pressed
    (:func:`prepare_partial_views`; nothing for an id the host does not know)."""
    try:
        cls = window.host.algorithm_class(algorithm_id) if algorithm_id else None
    except Exception:  # noqa: BLE001 - an unknown id: the panel and Run say so
        cls = None
    if cls is not None:
        prepare_partial_views(window, cls)


def route_partial(window, run_id: int, result) -> None:
    """Queue a preview of a running fit (drawn soon, coalesced with later ones)."""
    router_for(window).push(run_id, result)


def router_for(window) -> PartialRouter:
    if window.partial_router is None:
        window.partial_router = PartialRouter(window)
    return window.partial_router


def draw_partial(window, run_id: int, result) -> None:
    """Draw the preview of ``result`` in the view that shows it (nothing when it is none)."""
    preview = preview_of(window.session, run_id, result)
    if preview is None:
        return
    run = preview.run
    if preview.kind == "curve":
        view = window.views.get("training_curve")
        if view is None:
            return
        view.show_partial(run, preview.value)
        dock = window.docks.get("view:training_curve")
        if dock is not None and not dock.isVisible():
            # the curve's dock opens with the first curve of a fit (hidden by default): drawn now,
            # since a fast fit may end before the next turn of the event loop, and before the dock
            # opens, so that its first layout has the curve's text (no second layout and paint)
            dock.setVisible(True)
        return
    if window.map_view is None:
        return
    if preview.kind == "labels":
        window.map_view.show_partial_labels(run, preview.value, preview.rows)
    else:
        window.map_view.show_partial(run, preview.value, window.session.datasets.get(run.dataset_name))
