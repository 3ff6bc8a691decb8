"""The one fake progress of the tests (the progress contract: ``checkpoint(fraction, message)``,
which may raise FitCancelled, and ``partial(result)``)."""
from __future__ import annotations

from manifold_studio.errors import FitCancelled


class RecordingProgress:
    """Records every checkpoint and partial result; cancels (raises FitCancelled at a
    checkpoint) after ``cancel_after`` checkpoints, or at the first fraction above
    ``cancel_above``."""

    def __init__(self, cancel_after: int | None = None, cancel_above: float | None = None):
        self.fractions: list[float] = []
        self.messages: list[str] = []
        self.partials: list = []
        self.cancel_after, self.cancel_above = cancel_after, cancel_above

    @property
    def calls(self) -> int:
        return len(self.fractions)

    def checkpoint(self, fraction, message: str = "") -> None:
        self.fractions.append(float(fraction))
        self.messages.append(message)
        if (self.cancel_after is not None and self.calls > self.cancel_after) or \
                (self.cancel_above is not None and fraction > self.cancel_above):
            raise FitCancelled("stopped by the test")

    def partial(self, result) -> None:
        self.partials.append(result)
