"""Scores of a classifier's predictions (Qt-free), with scikit-learn's definitions, and the
cross-validation splits of :func:`manifold_studio.evaluation.compare_learners`.

Labels are class indices ``0..K-1`` (see :func:`manifold_studio.evaluation.label_indices`).

- :func:`accuracy`, :func:`balanced_accuracy` (mean recall over the classes present in the
  truth), :func:`macro_scores` (precision, recall and F1 averaged over the classes present in
  the truth or the predictions, 0 for a 0/0 ratio: scikit-learn's ``average="macro"``,
  ``zero_division=0``);
- :func:`binary_auc` (Mann–Whitney form, ties counted one half: equal to the area under the
  ROC curve, scikit-learn's ``roc_auc_score``), :func:`ovr_auc` (one-vs-rest, the mean over the
  classes of each class's binary AUC, scikit-learn's ``multi_class="ovr", average="macro"``);
- :func:`roc_curve` (false and true positive rates at every distinct threshold);
- :func:`log_loss` (probabilities clipped to [eps, 1 - eps], eps the float64 machine epsilon);
- :func:`calibration_curve` (mean predicted probability and observed frequency per bin,
  uniform bins like scikit-learn's ``calibration_curve``);
- :func:`stratified_kfold_sklearn` — the folds of scikit-learn's
  ``StratifiedKFold(n_splits, shuffle=True, random_state=seed)``, with
  :func:`repeated_stratified_kfold` the folds of ``RepeatedStratifiedKFold``, and
  :func:`leave_one_out`.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.labels import encode_labels
from manifold_studio.errors import DataError, InvalidParameterError

__all__ = ["accuracy", "balanced_accuracy", "macro_scores", "binary_auc", "ovr_auc", "roc_curve",
           "log_loss", "calibration_curve", "stratified_kfold_sklearn", "repeated_stratified_kfold",
           "leave_one_out", "label_indices", "holdout_split", "confusion_matrix"]


def accuracy(truth, pred) -> float:
    return float(np.mean(np.asarray(truth) == np.asarray(pred)))


def _confusion(truth, pred, K: int) -> np.ndarray:
    return np.bincount(np.asarray(truth) * K + np.asarray(pred), minlength=K * K).reshape(K, K).astype(float)


def balanced_accuracy(truth, pred, K: int) -> float:
    """Mean over the classes present in ``truth`` of the fraction of their rows predicted right."""
    cm = _confusion(truth, pred, K)
    support = cm.sum(axis=1)
    present = support > 0
    return float(np.mean(np.diag(cm)[present] / support[present]))


def macro_scores(truth, pred, K: int) -> tuple[float, float, float]:
    """``(precision, recall, f1)`` averaged over the classes present in truth or predictions."""
    cm = _confusion(truth, pred, K)
    tp, predicted, support = np.diag(cm), cm.sum(axis=0), cm.sum(axis=1)
    used = (predicted > 0) | (support > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(predicted > 0, tp / predicted, 0.0)
        r = np.where(support > 0, tp / support, 0.0)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return float(p[used].mean()), float(r[used].mean()), float(f[used].mean())


def binary_auc(positive, score) -> float:
    """Area under the ROC curve of ``score`` for the boolean ``positive``; NaN when one of the
    two groups is empty (the AUC is then undefined)."""
    positive = np.asarray(positive, bool)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    from scipy.stats import rankdata  # lazy: scipy.stats costs ~0.4 s at start-up
    ranks = rankdata(np.asarray(score, dtype=float))
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def ovr_auc(truth, scores) -> float:
    """One-vs-rest AUC: ``scores`` (m, K), the mean over classes of the binary AUC of class k
    against the rest; NaN unless every class is present and absent somewhere in ``truth``."""
    truth = np.asarray(truth)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 1:
        return binary_auc(truth == 1, scores)
    aucs = [binary_auc(truth == k, scores[:, k]) for k in range(scores.shape[1])]
    return float(np.mean(aucs))


def roc_curve(positive, score) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr, tpr, thresholds)`` at every distinct score, from (0, 0) (threshold +inf) to (1, 1)."""
    positive = np.asarray(positive, bool)
    score = np.asarray(score, dtype=float)
    order = np.argsort(-score, kind="mergesort")
    s, pos = score[order], positive[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # last row of each distinct score
    tps = np.cumsum(pos)[last]
    fps = (last + 1) - tps
    n_pos, n_neg = max(int(pos.sum()), 1), max(int((~pos).sum()), 1)
    fpr = np.r_[0.0, fps / n_neg]
    tpr = np.r_[0.0, tps / n_pos]
    return fpr, tpr, np.r_[np.inf, s[last]]


def log_loss(truth, proba) -> float:
    """Mean of ``-log p(true class)``, probabilities clipped to [eps, 1 - eps]."""
    proba = np.asarray(proba, dtype=float)
    eps = np.finfo(np.float64).eps
    p = np.clip(proba[np.arange(proba.shape[0]), np.asarray(truth)], eps, 1 - eps)
    return float(-np.mean(np.log(p)))


def calibration_curve(positive, prob, n_bins: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean_predicted, observed_fraction, count)`` for the non-empty ones of ``n_bins`` uniform
    bins of [0, 1] (the last bin closed)."""
    positive = np.asarray(positive, bool)
    prob = np.clip(np.asarray(prob, dtype=float), 0.0, 1.0)
    bins = np.minimum((prob * n_bins).astype(np.intp), n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    total = np.bincount(bins, weights=prob, minlength=n_bins)
    hits = np.bincount(bins, weights=positive.astype(float), minlength=n_bins)
    keep = count > 0
    return total[keep] / count[keep], hits[keep] / count[keep], count[keep]


def _seed_state(seed):
    if isinstance(seed, np.random.RandomState):
        return seed
    return np.random.RandomState(None if seed is None else int(seed))


def stratified_kfold_sklearn(y_idx, n_splits: int, seed=0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(train, test)`` rows of scikit-learn's ``StratifiedKFold(n_splits, shuffle=True,
    random_state=seed)`` (the same rule and the same Mersenne-Twister draws).

    Classes are numbered by first appearance; each fold gets the class counts of a round-robin
    deal of the sorted labels, and each class's fold numbers are shuffled. ``seed`` may be a
    ``numpy.random.RandomState`` (then it advances, as in repeated k-fold)."""
    y_idx = np.asarray(y_idx)
    n_splits = int(n_splits)
    if n_splits < 2:
        raise InvalidParameterError(f"cv: k-fold needs at least 2 folds, got {n_splits}.")
    if n_splits > y_idx.size:
        raise DataError(f"cv: {n_splits} folds for {y_idx.size} rows: use at most {y_idx.size} folds.")
    rng = _seed_state(seed)
    _, first, inverse = np.unique(y_idx, return_index=True, return_inverse=True)
    _, class_perm = np.unique(first, return_inverse=True)
    encoded = class_perm[inverse]
    counts = np.bincount(encoded)
    if np.all(n_splits > counts):
        raise DataError(f"cv: {n_splits} folds, but every class has fewer rows (at most "
                        f"{int(counts.max())}); use fewer folds or hold-out.")
    ordered = np.sort(encoded)
    allocation = np.asarray([np.bincount(ordered[i::n_splits], minlength=counts.size)
                             for i in range(n_splits)])
    fold_of = np.empty(y_idx.size, np.intp)
    for k in range(counts.size):
        folds_for_class = np.arange(n_splits).repeat(allocation[:, k])
        rng.shuffle(folds_for_class)
        fold_of[encoded == k] = folds_for_class
    return [(np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)) for f in range(n_splits)]


def repeated_stratified_kfold(y_idx, n_splits: int, n_repeats: int, seed=0):
    """The folds of scikit-learn's ``RepeatedStratifiedKFold``: ``n_repeats`` lists of folds,
    one random state shared (and advanced) by the repeats."""
    if int(n_repeats) < 1:
        raise InvalidParameterError(f"repeats must be at least 1, got {n_repeats}.")
    rng = _seed_state(seed)
    return [stratified_kfold_sklearn(y_idx, n_splits, rng) for _ in range(int(n_repeats))]


def leave_one_out(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One fold per row: test is that row, training every other row."""
    rows = np.arange(int(n))
    return [(np.delete(rows, i), rows[i:i + 1]) for i in range(int(n))]


# The label encoding, hold-out and confusion matrix of manifold_studio.evaluation (re-exported there).

def _classes_and_index(y) -> tuple[np.ndarray, np.ndarray]:
    classes, y_idx = encode_labels(y)
    if classes.dtype == object:
        classes = classes.astype(str)
    return classes, y_idx


def label_indices(labels, classes) -> np.ndarray:
    """Index of each label in ``classes`` (labels read as text or numbers compare by value);
    a label that is not a class raises DataError."""
    labels = np.asarray(labels)
    if classes.dtype.kind == "U" and labels.dtype.kind != "U":
        labels = labels.astype(str)
    elif classes.dtype.kind in "iufb" and labels.dtype.kind not in "iufb":
        try:
            labels = labels.astype(classes.dtype)
        except (TypeError, ValueError):
            raise DataError("The predicted labels are not of the type of the classes.") from None
    pos = np.clip(np.searchsorted(classes, labels), 0, len(classes) - 1)
    bad = classes[pos] != labels
    if np.any(bad):
        raise DataError(f"Label '{labels[np.argmax(bad)]}' is not one of the classes "
                        f"{', '.join(map(str, classes[:10]))}.")
    return pos.astype(np.intp)


def _rng(random_state):
    return np.random.default_rng(None if random_state is None else int(random_state))


def holdout_split(y, test_fraction: float = 0.25, random_state=0) -> tuple[np.ndarray, np.ndarray]:
    """Stratified, seeded hold-out: ``(train_rows, test_rows)`` (sorted).

    Each class with ``n_c`` rows puts ``round(n_c * test_fraction)`` of them (at least one,
    and at most ``n_c - 1``, so every class is in the training part) in the test part, drawn
    at random with ``random_state``."""
    test_fraction = float(test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise InvalidParameterError(f"test_fraction must be between 0 and 1 (exclusive), got {test_fraction}.")
    _, y_idx = _classes_and_index(y)
    rng = _rng(random_state)
    test = []
    for c in range(int(y_idx.max()) + 1):
        members = np.flatnonzero(y_idx == c)
        n_c = members.size
        if n_c < 2:
            continue  # a class with one row stays in training
        k = int(min(max(round(n_c * test_fraction), 1), n_c - 1))
        test.append(rng.permutation(members)[:k])
    test_rows = np.sort(np.concatenate(test)) if test else np.zeros(0, np.intp)
    if test_rows.size == 0:
        raise DataError("The hold-out test part is empty: every class has a single row.")
    mask = np.ones(y_idx.size, bool)
    mask[test_rows] = False
    return np.flatnonzero(mask), test_rows


def confusion_matrix(truth_idx, pred_idx, n_classes: int) -> np.ndarray:
    """(K, K) counts: entry (i, j) = rows of true class i predicted as class j."""
    truth_idx = np.asarray(truth_idx, dtype=np.intp)
    pred_idx = np.asarray(pred_idx, dtype=np.intp)
    return np.bincount(truth_idx * n_classes + pred_idx, minlength=n_classes * n_classes).reshape(n_classes, n_classes)
