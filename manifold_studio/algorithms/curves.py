"""Training curves: what a supervised fit publishes while it trains (Qt-free).

A training loop publishes :class:`TrainingCurve` objects with ``progress.partial`` so the
window can draw them live (mistakes per epoch for the perceptron, training and validation
loss per epoch for the linear models and the MLP, objective and KKT violation for the SVM).
After the fit, ``estimator.training_curve()`` returns the final curve from fitted arrays.

Use :class:`CurvePublisher` inside a loop: it throttles publication (at most every
``min_interval`` seconds, and always at the end) so a fast loop is not slowed by the GUI::

    pub = CurvePublisher(progress, "Loss per epoch", x_label="epoch", y_label="loss")
    for epoch in range(max_iter):
        ...
        pub.add(epoch + 1, train=loss, validation=val_loss)
    pub.flush()
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["TrainingCurve", "CurvePublisher"]


@dataclass
class TrainingCurve:
    """One figure: named series over a common x axis (epochs or iterations)."""

    title: str
    x: np.ndarray
    series: dict[str, np.ndarray] = field(default_factory=dict)
    x_label: str = "epoch"
    y_label: str = ""
    #: draw the y axis on a log scale (objective gaps, KKT violations)
    log_y: bool = False
    #: the run is over (the last point is final)
    final: bool = False

    def __post_init__(self):
        self.x = np.asarray(self.x, dtype=float)
        self.series = {k: np.asarray(v, dtype=float) for k, v in self.series.items()}
        for name, values in self.series.items():
            if values.shape != self.x.shape:
                raise ValueError(f"training curve series '{name}' has {values.shape[0]} values "
                                 f"for {self.x.shape[0]} x values")


class CurvePublisher:
    """Accumulates curve points and publishes them through ``progress.partial`` (throttled)."""

    def __init__(self, progress, title: str, *, x_label: str = "epoch", y_label: str = "",
                 log_y: bool = False, min_interval: float = 0.1):
        self._partial = getattr(progress, "partial", None)
        self.title, self.x_label, self.y_label, self.log_y = title, x_label, y_label, log_y
        self.min_interval = min_interval
        self.x: list[float] = []
        self.series: dict[str, list[float]] = {}
        self._last: float | None = None  # nothing sent yet (time.monotonic() counts from boot)

    def add(self, x: float, **values: float) -> None:
        """One point for each named series (every series must get a value at each x)."""
        self.x.append(float(x))
        for name, value in values.items():
            self.series.setdefault(name, []).append(float(value))
        now = time.monotonic()
        if self._partial is not None and (self._last is None or now - self._last >= self.min_interval):
            self._last = now
            self._partial(self.curve())

    def curve(self, final: bool = False) -> TrainingCurve:
        return TrainingCurve(self.title, np.asarray(self.x), {k: np.asarray(v) for k, v in self.series.items()},
                             self.x_label, self.y_label, self.log_y, final)

    def flush(self) -> None:
        """Publish what has been gathered (call at the end of the loop)."""
        if self._partial is not None and self.x:
            self._partial(self.curve(final=True))


def epoch_curve(estimator, title: str, y_label: str, log_y: bool = False, **extra) -> TrainingCurve | None:
    """The final per-epoch curve of a fitted estimator: ``loss_curve_`` as "train",
    ``validation_loss_curve_`` as "validation" when present, plus ``extra`` series (attribute
    names, included when the estimator has them). None before fit."""
    train = getattr(estimator, "loss_curve_", None)
    if train is None:
        return None
    series = {"train": np.asarray(train)}
    for name, attr in (("validation", "validation_loss_curve_"), *extra.items()):
        value = getattr(estimator, attr, None)
        if value is not None and ("validation" in series or name == "validation"):
            series[name] = np.asarray(value)
    return TrainingCurve(title, np.arange(1, series["train"].size + 1), series, x_label="epoch",
                         y_label=y_label, log_y=log_y, final=True)
