"""The Progress protocol: report progress, publish partial results, honour Cancel.

Algorithms receive ``progress`` in ``fit``/``extend``. They call
``progress.checkpoint(fraction, message)`` often (so cancel takes effect within about a
second); it raises :class:`FitCancelled` once the user asked to stop. ``partial(result)``
optionally publishes an intermediate result. ``None`` means "no reporting": wrap it with
:func:`as_progress` and call it unconditionally.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Protocol, runtime_checkable

from manifold_studio.errors import FitCancelled

__all__ = ["Progress", "FitCancelled", "NullProgress", "CallbackProgress", "SubProgress",
           "as_progress"]


@runtime_checkable
class Progress(Protocol):
    def checkpoint(self, fraction: float, message: str = "") -> None: ...


class NullProgress:
    """Reports nothing, never cancels."""

    def checkpoint(self, fraction: float, message: str = "") -> None:
        return None

    def partial(self, result: Any) -> None:
        return None


class CallbackProgress:
    """Thread-safe progress that forwards to callbacks and cancels through an Event.

    The GUI worker, the CLI and tests all use it: ``cancel()`` may be called from any thread,
    and the next ``checkpoint`` in the computing thread raises :class:`FitCancelled`.
    ``on_progress(fraction, message)`` is throttled to ``min_interval`` seconds, except for
    the final 1.0 report.
    """

    def __init__(self, on_progress: Callable[[float, str], None] | None = None,
                 on_partial: Callable[[Any], None] | None = None,
                 min_interval: float = 0.05):
        self._on_progress = on_progress
        self._on_partial = on_partial
        self._cancel = threading.Event()
        self._min_interval = min_interval
        self._last: float | None = None  # nothing sent yet (time.monotonic() counts from boot)
        self.fraction = 0.0
        self.message = ""

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def checkpoint(self, fraction: float, message: str = "") -> None:
        if self._cancel.is_set():
            raise FitCancelled("Cancelled by the user.")
        self.fraction = min(max(float(fraction), 0.0), 1.0)
        if message:
            self.message = message
        now = time.monotonic()
        if self._on_progress is not None and (self._last is None or now - self._last >= self._min_interval
                                              or self.fraction >= 1.0):
            self._last = now
            self._on_progress(self.fraction, self.message)

    def partial(self, result: Any) -> None:
        if self._on_partial is not None:
            self._on_partial(result)


class SubProgress:
    """Maps a sub-task's 0..1 onto [start, end] of a parent progress (with a message prefix)."""

    def __init__(self, parent, start: float, end: float, prefix: str = ""):
        self._parent = as_progress(parent)
        self._start, self._end, self._prefix = float(start), float(end), prefix

    def checkpoint(self, fraction: float, message: str = "") -> None:
        msg = f"{self._prefix}{message}" if message else self._prefix
        self._parent.checkpoint(self._start + (self._end - self._start) * float(fraction), msg)

    def partial(self, result: Any) -> None:
        partial = getattr(self._parent, "partial", None)
        if partial is not None:
            partial(result)


def as_progress(progress) -> Progress:
    """Return ``progress`` itself, or a :class:`NullProgress` for ``None``."""
    return NullProgress() if progress is None else progress
