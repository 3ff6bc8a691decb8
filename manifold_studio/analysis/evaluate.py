"""Evaluating a classifier (Qt-free): stratified hold-out and stratified k-fold cross-validation.

- :func:`holdout_split` — a seeded, stratified split into training and test rows;
- :func:`stratified_kfold` — k folds, every row in exactly one test fold, each class spread
  over the folds as evenly as possible (counts differ by at most one);
- :func:`confusion_matrix` / :func:`per_class_scores` — the confusion matrix (rows: true
  class, columns: predicted class, as scikit-learn) and precision / recall / F1 per class;
- :func:`evaluate` — fit a fresh estimator on every training part, predict its test part,
  with progress and cancel across the folds; returns an :class:`EvaluationResult`;
- :func:`compare_learners` — Test & Score: several classifiers on the same folds
  (:mod:`manifold_studio.analysis.compare_learners`);
- :func:`compare_clusterings` — several clustering methods over a range of k with every
  measure of seed 001 and the validation log-likelihood of seed 000
  (:mod:`manifold_studio.analysis.compare_clusterings`).

The label encoding, the hold-out split and the confusion matrix live in
:mod:`manifold_studio.analysis.classifier_scores` and are re-exported here. The public facade is
:mod:`manifold_studio.evaluation` (it re-exports this module); code inside ``analysis`` imports this
module, since the facade sits above ``analysis`` in the layer contract.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from manifold_studio.algorithms.labels import class_label_vector
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.analysis.classifier_scores import (_classes_and_index, confusion_matrix, holdout_split,
                                                       label_indices, stratified_kfold_sklearn)
from manifold_studio.analysis.compare_clusterings import ClusteringComparison, ClusteringRow, compare_clusterings
from manifold_studio.analysis.compare_learners import (Comparison, LearnerResult, compare_learners, fold_data,
                                                       learner_spec)
from manifold_studio.errors import DataError, InvalidParameterError

__all__ = ["HOLDOUT", "KFOLD", "EvaluationResult", "holdout_split", "stratified_kfold",
           "confusion_matrix", "per_class_scores", "evaluate", "label_indices",
           "compare_learners", "Comparison", "LearnerResult",
           "compare_clusterings", "ClusteringComparison", "ClusteringRow"]

HOLDOUT, KFOLD = "holdout", "kfold"


@dataclass
class EvaluationResult:
    method: str                      #: HOLDOUT or KFOLD
    classes: np.ndarray              #: (K,) the class labels (sorted)
    fold_accuracy: np.ndarray        #: (n_folds,) test accuracy of each fold
    confusion: np.ndarray            #: (K, K) summed over folds; rows true, columns predicted
    precision: np.ndarray            #: (K,) per class, from ``confusion``
    recall: np.ndarray               #: (K,)
    f1: np.ndarray                   #: (K,)
    support: np.ndarray              #: (K,) test samples of each class
    test_index: list = field(default_factory=list)   #: test rows of each fold
    predictions: list = field(default_factory=list)  #: predicted labels of each fold's test rows
    params: dict = field(default_factory=dict)       #: the evaluation settings

    @property
    def mean_accuracy(self) -> float:
        return float(np.mean(self.fold_accuracy))

    @property
    def std_accuracy(self) -> float:
        """Spread of the accuracy across folds (population standard deviation; 0 for one fold)."""
        return float(np.std(self.fold_accuracy))

    @property
    def n_folds(self) -> int:
        return int(len(self.fold_accuracy))

    def summary(self) -> str:
        if self.method == KFOLD:
            return (f"accuracy {self.mean_accuracy:.3f} ± {self.std_accuracy:.3f} "
                    f"({self.n_folds}-fold cross-validation)")
        n_test = int(self.support.sum())
        return f"accuracy {self.mean_accuracy:.3f} on a stratified hold-out of {n_test:,} rows"


def stratified_kfold(y, n_splits: int = 5, *, shuffle: bool = True, random_state=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified k-fold: a list of ``(train_rows, test_rows)``.

    Each fold receives ``n_c // k`` or ``n_c // k + 1`` rows of every class and the fold sizes
    differ by at most one. With ``shuffle`` these are the folds of scikit-learn's
    ``StratifiedKFold(k, shuffle=True, random_state)``, the very folds Test & Score draws
    (:func:`~manifold_studio.analysis.compare_learners.make_splits`), so ``run --cv K`` and
    ``score --cv K`` with one seed score the same folds; without, rows are dealt class by class
    in their order."""
    n_splits = int(n_splits)
    if n_splits < 2:
        raise InvalidParameterError(f"k-fold needs at least 2 folds, got {n_splits}.")
    classes, y_idx = _classes_and_index(y)
    counts = np.bincount(y_idx, minlength=len(classes))
    if n_splits > y_idx.size:
        raise DataError(f"{n_splits} folds for {y_idx.size} rows: use at most {y_idx.size} folds.")
    if counts.min() < n_splits:
        c = int(np.argmin(counts))
        raise DataError(f"Class '{classes[c]}' has only {counts[c]} row(s), fewer than the {n_splits} "
                        f"folds: every fold's training part must contain every class; use at most "
                        f"{max(int(counts.min()), 2)} folds or hold-out.")
    if shuffle:
        return stratified_kfold_sklearn(y_idx, n_splits, None if random_state is None else int(random_state))
    order = np.concatenate([np.flatnonzero(y_idx == c) for c in range(len(classes))])
    fold_of = np.empty(y_idx.size, np.intp)
    fold_of[order] = np.arange(order.size) % n_splits
    return [(np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)) for f in range(n_splits)]


def per_class_scores(confusion) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(precision, recall, f1, support)`` per class from a confusion matrix (0 where a
    ratio is 0/0, as scikit-learn's ``zero_division=0``)."""
    cm = np.asarray(confusion, dtype=float)
    tp = np.diag(cm)
    predicted, support = cm.sum(axis=0), cm.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(support > 0, tp / support, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    return precision, recall, f1, support.astype(np.int64)


def evaluate(estimator, X, y=None, method: str = HOLDOUT, *, test_fraction: float = 0.25, n_splits: int = 5,
             random_state=0, progress=None) -> EvaluationResult:
    """Fit fresh estimators on training parts and score them on the held-out parts.

    ``estimator``: a factory returning an unfitted classifier, its class, ``(class, params)``,
    an estimator whose parameters are copied, or a pipeline (its preparation steps are fitted
    on each training part with the classifier: :func:`manifold_studio.make_pipeline`). ``X``: a
    matrix or a :class:`~manifold_studio.data.Dataset` (its labels unless ``y`` is given, and its
    column names for a pipeline, as a run fits it). ``method``: HOLDOUT (one stratified split
    with ``test_fraction``) or KFOLD (``n_splits`` stratified folds). Progress is spread over
    the folds; cancel stops at the next checkpoint of the current fit (FitCancelled)."""
    progress = as_progress(progress)
    X, y, columns = fold_data(X, y)
    factory = learner_spec(estimator, columns).factory
    X = np.asarray(X)
    y = class_label_vector(y, X.shape[0])
    classes, y_idx = _classes_and_index(y)
    if method == HOLDOUT:
        splits = [holdout_split(y, test_fraction, random_state)]
    elif method == KFOLD:
        splits = stratified_kfold(y, n_splits, random_state=random_state)
    else:
        raise InvalidParameterError(f"Unknown evaluation method '{method}': use '{HOLDOUT}' or '{KFOLD}'.")
    K, n = len(classes), len(splits)
    cm = np.zeros((K, K), np.int64)
    accs, tests, preds = [], [], []
    for f, (train, test) in enumerate(splits):
        what = "hold-out" if method == HOLDOUT else f"fold {f + 1}/{n}"
        progress.checkpoint(f / n, f"Evaluating: {what}")
        est = factory()
        est.fit(X[train], y[train], progress=SubProgress(progress, f / n, (f + 0.9) / n, f"{what}: "))
        pred = np.asarray(est.predict(X[test]))
        p_idx = label_indices(pred, classes)
        cm += confusion_matrix(y_idx[test], p_idx, K)
        accs.append(float(np.mean(p_idx == y_idx[test])))
        tests.append(test)
        preds.append(pred)
    progress.checkpoint(1.0, "Evaluation done")
    precision, recall, f1, support = per_class_scores(cm)
    params = {"method": method, "random_state": random_state}
    params.update({"test_fraction": float(test_fraction)} if method == HOLDOUT else {"n_splits": int(n_splits)})
    return EvaluationResult(method, classes, np.asarray(accs), cm, precision, recall, f1, support,
                            tests, preds, params)
