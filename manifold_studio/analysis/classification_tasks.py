"""Qt-free tasks behind the classification views (run on a worker thread by the GUI).

Every function takes ``progress=`` so that :meth:`MainWindow.start_job` runs it with progress
and cancel, and a test or a script can call it directly.

- :func:`evaluation_task` — hold-out or k-fold evaluation of a run's estimator (its preparation
  chain and classifier: :func:`manifold_studio.evaluation.evaluate`);
- :func:`decision_grid_task` — the decision regions of a fitted classifier on a grid covering
  2-D points: the predicted class of every grid point (through ``predict``), the decision
  function for binary problems (boundary at 0, SVM margins at ±1), the support vectors and the
  misclassified training points.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.errors import DataError
from manifold_studio.analysis.evaluate import EvaluationResult, evaluate, label_indices

__all__ = ["DecisionGrid", "evaluation_task", "decision_grid_task", "grid_points", "GRID_SIZE"]

#: grid points per axis of the decision image
GRID_SIZE = 160


@dataclass
class DecisionGrid:
    xs: np.ndarray               #: (nx,) grid x coordinates
    ys: np.ndarray               #: (ny,) grid y coordinates
    class_index: np.ndarray      #: (ny, nx) index into ``classes`` of the predicted class
    classes: np.ndarray          #: (K,) the classifier's classes
    decision: np.ndarray | None  #: (ny, nx) decision function (binary problems), else None
    points: np.ndarray           #: (n, 2) the points drawn
    point_class: np.ndarray      #: (n,) predicted class index of each point
    true_class: np.ndarray | None  #: (n,) true class index (None when unknown)
    support: np.ndarray | None   #: (s, 2) support vectors (estimator.support_), or None

    @property
    def misclassified(self) -> np.ndarray:
        if self.true_class is None:
            return np.zeros(len(self.points), bool)
        return self.point_class != self.true_class


def evaluation_task(estimator, X, y, method: str, *, test_fraction: float = 0.25,
                    n_splits: int = 5, random_state=0, progress=None) -> EvaluationResult:
    """Evaluate a run's unfitted estimator on (X, y): the classifier, or the pipeline of its
    preparation chain and the classifier (refitted whole on each training part); see
    :func:`manifold_studio.evaluation.evaluate`."""
    return evaluate(estimator, X, y, method, test_fraction=test_fraction,
                    n_splits=n_splits, random_state=random_state, progress=progress)


def grid_points(points, size: int = GRID_SIZE, margin: float = 0.08) -> tuple[np.ndarray, np.ndarray]:
    """x and y coordinates of a ``size`` × ``size`` grid covering ``points`` with a margin."""
    points = np.asarray(points, dtype=float)
    lo, hi = points.min(axis=0), points.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - margin * span, hi + margin * span
    return np.linspace(lo[0], hi[0], size), np.linspace(lo[1], hi[1], size)


def decision_grid_task(estimator, points, truth=None, *, size: int = GRID_SIZE, progress=None) -> DecisionGrid:
    """Evaluate a fitted classifier on a grid over 2-D ``points`` (the data it was fitted on).

    ``truth``: the true labels of ``points`` (to mark the misclassified ones), or None."""
    progress = as_progress(progress)
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise DataError(f"Decision regions need 2-D points, got {points.shape[-1]} columns.")
    if not np.all(np.isfinite(points)):
        raise DataError("Decision regions: the points hold NaN or infinite values.")
    classes = np.asarray(estimator.classes_)
    xs, ys = grid_points(points, size)
    gx, gy = np.meshgrid(xs, ys)
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    progress.checkpoint(0.0, "Decision regions: predicting the grid")
    # the grid and the points in one call (a third-party model predicts in a worker process per call)
    pred = np.asarray(estimator.predict(np.vstack([grid, points]), progress=SubProgress(progress, 0.0, 0.6, "grid: ")))
    pred, point_pred = pred[:grid.shape[0]], pred[grid.shape[0]:]
    class_index = label_indices(pred, classes).reshape(gy.shape)
    decision = None
    if len(classes) == 2:
        try:
            scores = estimator.decision_function(grid, progress=SubProgress(progress, 0.6, 0.9, "decision: "))
        except (AttributeError, TypeError):
            scores = None
        if scores is not None:
            scores = np.asarray(scores, dtype=float)
            if scores.ndim == 1 and scores.size == grid.shape[0]:
                decision = scores.reshape(gy.shape)
    progress.checkpoint(0.9, "Decision regions: the points")
    point_class = label_indices(point_pred, classes)
    true_class = None
    if truth is not None:
        try:
            true_class = label_indices(np.asarray(truth), classes)
        except DataError:
            true_class = None  # labels of another kind: nothing is marked
    support = None
    sup = getattr(estimator, "support_", None)
    if sup is not None:
        sup = np.asarray(sup, dtype=np.intp)
        if sup.ndim == 1 and (sup.size == 0 or (sup.min() >= 0 and sup.max() < len(points))):
            support = points[sup]
    progress.checkpoint(1.0, "Decision regions done")
    return DecisionGrid(xs, ys, class_index, classes, decision, points, point_class, true_class, support)
