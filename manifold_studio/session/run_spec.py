"""A run spec: everything one fit needs, resolved once in the main thread, then handed to a
worker thread or a separate process. The one path from a click (or a script) to a result::

    spec = session.fit_task(run)        # the estimator built and validated by create_run
    outcome = spec(progress)            # on a worker thread: in-process, or in a child process
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.pipeline import PIPELINE_ID
from manifold_studio.session.fitting import fit_estimator
from manifold_studio.session.isolated_fit import estimator_ids, fit_estimator_in_subprocess, third_party_parts
from manifold_studio.session.records import FitOutcome


@dataclass(frozen=True)
class RunSpec:
    """``estimator``: unfitted, its parameters validated (one estimator per run); ``X``, ``y``:
    the training data (``y`` None for unsupervised methods); ``isolated``: fit in a separate
    process (a crashing plugin ends only its own run). Calling it fits and returns a
    :class:`~manifold_studio.session.records.FitOutcome`; it touches no session state."""

    estimator: object
    X: np.ndarray
    y: np.ndarray | None = None
    isolated: bool = False

    @property
    def algorithm_cls(self) -> type:
        return type(self.estimator)

    @property
    def in_worker(self) -> bool:
        """Whether the fit runs in a worker process: when asked (``isolated``), and always for a
        preparation chain with a third-party part (a step or its algorithm: the chain has no
        choice of its own in the window)."""
        if self.isolated:
            return True
        return getattr(self.estimator, "id", "") == PIPELINE_ID and bool(third_party_parts(estimator_ids(self.estimator)))

    def __call__(self, progress=None) -> FitOutcome:
        if self.in_worker:  # the child builds its own estimator (and steps) from ids and parameters
            return fit_estimator_in_subprocess(self.estimator, self.X, self.y, progress)
        return fit_estimator(self.estimator, self.X, self.y, progress)
