"""Test & Score (Qt-free): several classifiers scored on the same cross-validation folds.

:func:`compare_learners` fits a fresh copy of every learner on each training part and scores
it on the test part. Per learner and fold: accuracy, balanced accuracy, macro precision,
recall and F1, ROC AUC (binary, or one-vs-rest macro for several classes) from the learner's
``predict_proba`` (else its ``decision_function``: the one-vs-rest AUC needs scores that compare
across classes, which softmax logits do not), log-loss where it gives ``predict_proba``, and
the fit and predict times. The table gives each figure's mean and spread (population standard
deviation) over the folds; :meth:`Comparison.wins` compares the learners fold by fold.
The out-of-fold predictions, scores and probabilities are kept (per repeat) for ROC curves,
calibration plots and confusion matrices.

Splits (``cv``): an integer k — scikit-learn's ``StratifiedKFold(k, shuffle=True,
random_state=seed)`` (``repeats`` > 1: ``RepeatedStratifiedKFold``); ``"loo"`` — leave one out;
``holdout=f`` — a stratified hold-out of the fraction f (:func:`manifold_studio.evaluation.holdout_split`,
seeds ``seed, seed + 1, ...`` for the repeats); or an explicit list of ``(train, test)`` rows.

A learner may be a pipeline (:func:`manifold_studio.make_pipeline`: preparation steps and a
classifier): a fresh copy is fitted whole on each training part, so a scaler's mean and spread
come from the training rows only; ``LearnerResult.chain`` records its steps. Given a
:class:`~manifold_studio.data.Dataset`, the folds get its feature matrix and the pipelines its
column names and categories, as a run fits them (:func:`fold_data`, :func:`learner_spec`).

A fold a learner cannot fit (say its training part holds one class, or a preparation step
refuses it) is reported in ``failures`` naming the fold, the learner and the classes or the
step, and the other folds are scored.
"""
from __future__ import annotations

import copy
import inspect
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from manifold_studio.algorithms.labels import class_label_vector
from manifold_studio.algorithms.pipeline import Pipeline, clone_estimator
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.analysis import classifier_scores as cs
from manifold_studio.analysis.classifier_scores import (_classes_and_index, confusion_matrix, holdout_split,
                                                       label_indices)
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError
from manifold_studio.data import Dataset
from manifold_studio.plugins.host import get_host
from manifold_studio.analysis.chain import chain_text, dataset_columns, pipeline_chain

__all__ = ["METRICS", "LOWER_IS_BETTER", "LearnerResult", "Comparison", "LearnerSpec", "compare_learners",
           "make_splits", "learner_spec", "fold_data"]

METRICS = ("accuracy", "balanced_accuracy", "f1", "precision", "recall", "auc", "log_loss",
           "fit_time", "predict_time")
LOWER_IS_BETTER = frozenset({"log_loss", "fit_time", "predict_time"})
TITLES = {"accuracy": "CA", "balanced_accuracy": "Balanced CA", "f1": "F1 (macro)",
          "precision": "Precision (macro)", "recall": "Recall (macro)", "auc": "ROC AUC",
          "log_loss": "Log-loss", "fit_time": "Fit time (s)", "predict_time": "Predict time (s)"}


@dataclass
class LearnerResult:
    name: str
    algorithm: str                   #: algorithm id or class name
    params: dict
    score_kind: str | None           #: "decision_function", "predict_proba" or None
    fold_metrics: dict               #: metric -> (n_folds,) values, NaN where not available
    predictions: np.ndarray          #: (repeats, n) out-of-fold class index, -1 where not predicted
    scores: np.ndarray | None        #: (repeats, n, K) out-of-fold scores (NaN where not predicted)
    proba: np.ndarray | None         #: (repeats, n, K) out-of-fold probabilities, or None
    failures: list = field(default_factory=list)   #: folds that could not be fitted (messages)
    notes: list = field(default_factory=list)      #: folds scored with a caveat (messages)
    auc_note: str = ""               #: why ROC AUC is not available, or ""
    chain: list = field(default_factory=list)      #: preparation steps [(step id, params)] before it

    def mean(self, metric: str) -> float:
        v = self.fold_metrics[metric]
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else float("nan")

    def spread(self, metric: str) -> float:
        v = self.fold_metrics[metric]
        v = v[np.isfinite(v)]
        return float(v.std()) if v.size else float("nan")

    def predicted(self, repeat: int = 0) -> np.ndarray:
        """Mask of the rows with an out-of-fold prediction in ``repeat``."""
        return self.predictions[repeat] >= 0


@dataclass
class Comparison:
    classes: np.ndarray              #: (K,) class labels (sorted)
    y_idx: np.ndarray                #: (n,) true class index of every row
    folds: list                      #: [(repeat, test rows)] in scoring order
    scheme: dict                     #: cv, repeats, holdout, seed
    learners: list                   #: [LearnerResult]

    @property
    def n_repeats(self) -> int:
        return int(self.learners[0].predictions.shape[0]) if self.learners else 1

    def preparation(self) -> str:
        """The preparation chain in one line: ``standardize → select_columns(...)``, "none", or
        each learner's when they differ (``svm: standardize; mlp: none``)."""
        texts = [chain_text(r.chain, brief=True) or "none" for r in self.learners]
        if len(set(texts)) <= 1:
            return texts[0] if texts else "none"
        return "; ".join(f"{r.name}: {t}" for r, t in zip(self.learners, texts))

    def learner(self, name: str) -> LearnerResult:
        for r in self.learners:
            if r.name == name:
                return r
        raise KeyError(name)

    def pooled_auc(self, name: str, repeat: int = 0) -> float:
        """ROC AUC of the out-of-fold scores of ``repeat`` (all its predicted rows at once)."""
        r = self.learner(name)
        if r.scores is None:
            return float("nan")
        m = r.predicted(repeat)
        s = r.scores[repeat][m]
        return cs.ovr_auc(self.y_idx[m], s[:, 1] if len(self.classes) == 2 else s)

    def confusion(self, name: str, repeat: int = 0) -> np.ndarray:
        r = self.learner(name)
        m = r.predicted(repeat)
        return confusion_matrix(self.y_idx[m], r.predictions[repeat][m], len(self.classes))

    def cell_rows(self, name: str, true_k: int, pred_k: int, repeat: int = 0) -> np.ndarray:
        """Rows of true class ``true_k`` predicted (out of fold) as ``pred_k``."""
        p = self.learner(name).predictions[repeat]
        return np.flatnonzero((self.y_idx == true_k) & (p == pred_k))

    def wins(self, metric: str = "accuracy") -> tuple[np.ndarray, np.ndarray]:
        """``(wins, paired)``: wins[i, j] = folds where learner i did strictly better than j on
        ``metric``; paired[i, j] = folds where both have the figure."""
        L = len(self.learners)
        vals = np.array([r.fold_metrics[metric] for r in self.learners])
        if metric in LOWER_IS_BETTER:
            vals = -vals
        wins, paired = np.zeros((L, L), np.int64), np.zeros((L, L), np.int64)
        for i in range(L):
            for j in range(L):
                if i != j:
                    both = np.isfinite(vals[i]) & np.isfinite(vals[j])
                    paired[i, j] = both.sum()
                    wins[i, j] = (vals[i][both] > vals[j][both]).sum()
        return wins, paired

    def best_counts(self, metric: str = "accuracy") -> np.ndarray:
        """How many folds each learner is best (or tied best) on ``metric``."""
        vals = np.array([r.fold_metrics[metric] for r in self.learners], dtype=float)
        if metric in LOWER_IS_BETTER:
            vals = -vals
        vals = np.where(np.isfinite(vals), vals, -np.inf)
        ok = np.isfinite(vals).any(axis=0)
        return ((vals == vals.max(axis=0)) & ok).sum(axis=1)

    def table(self) -> list[dict]:
        """One dict per learner: name, and ``metric`` / ``metric_spread`` for every metric."""
        rows = []
        for r in self.learners:
            row = {"learner": r.name}
            for m in METRICS:
                row[m], row[m + "_spread"] = r.mean(m), r.spread(m)
            rows.append(row)
        return rows

    def format_table(self, metrics=METRICS) -> str:
        head = ["Learner"] + [TITLES[m] for m in metrics]
        body = [[r.name] + [_cell(r.mean(m), r.spread(m), m) for m in metrics] for r in self.learners]
        widths = [max(len(row[c]) for row in [head] + body) for c in range(len(head))]
        lines = ["  ".join(t.ljust(w) for t, w in zip(row, widths)).rstrip() for row in [head] + body]
        return "\n".join(lines)


def _cell(mean: float, spread: float, metric: str) -> str:
    if not np.isfinite(mean):
        return "n/a"
    digits = 4 if metric.endswith("time") else 3
    return f"{mean:.{digits}f} ± {spread:.{digits}f}"


def make_splits(y_idx, cv=5, *, repeats: int = 1, holdout: float | None = None, seed=0) -> list:
    """``[(repeat, train, test)]`` for the schemes described in the module docstring."""
    n = y_idx.size
    if holdout is not None:
        if int(repeats) < 1:
            raise InvalidParameterError(f"repeats must be at least 1, got {repeats}.")
        base = 0 if seed is None else int(seed)
        return [(r, *holdout_split(y_idx, holdout, base + r)) for r in range(int(repeats))]
    if isinstance(cv, str):
        if cv.lower().replace("-", "_") not in ("loo", "leave_one_out"):
            raise InvalidParameterError(f"cv: unknown scheme '{cv}': use a number of folds, 'loo' or holdout=.")
        return [(0, tr, te) for tr, te in cs.leave_one_out(n)]
    if isinstance(cv, (list, tuple)):
        out = []
        for tr, te in cv:
            tr, te = np.asarray(tr, np.intp), np.asarray(te, np.intp)
            if te.size == 0 or tr.size == 0 or te.min() < 0 or te.max() >= n or tr.min() < 0 or tr.max() >= n:
                raise DataError(f"cv: a given fold is empty or has rows outside 0..{n - 1}.")
            out.append((0, tr, te))
        return out
    if isinstance(cv, (bool, float)) or not isinstance(cv, (int, np.integer)):
        raise InvalidParameterError(f"cv must be a number of folds, 'loo' or a list of (train, test); got {cv!r}.")
    return [(r, tr, te) for r, folds in enumerate(cs.repeated_stratified_kfold(y_idx, cv, repeats, seed))
            for tr, te in folds]


@dataclass
class LearnerSpec:
    """A learner to score: its display name, algorithm id, parameters, preparation chain and a
    factory of fresh unfitted copies."""
    name: str
    algorithm: str
    params: dict
    chain: list
    factory: Callable


def learner_spec(learner, columns=None) -> LearnerSpec:
    """The :class:`LearnerSpec` of a learner: an estimator or a pipeline (copied through
    get_params; a pipeline keeps its bound column names, or is bound to ``columns`` — ``(names,
    categories)`` of the data — so every fold fits it as a run fits it), an algorithm id,
    ``(id or class, params)``, a class, or a factory returning a fresh learner. The algorithm and
    parameters of a pipeline are those of its final classifier; ``chain`` lists its steps."""
    if isinstance(learner, str):
        learner = (learner, {})
    if isinstance(learner, tuple):
        if len(learner) != 2 or not isinstance(learner[1], dict):
            raise InvalidParameterError("a learner given as a tuple must be (algorithm id or class, params dict).")
        what, params = learner
        cls = get_host().algorithm_class(what) if isinstance(what, str) else what
        est = cls(**params)
        if hasattr(est, "validate_params"):
            est.validate_params()
        algo = getattr(cls, "id", None) or cls.__name__
        return LearnerSpec(algo, algo, dict(params), [], lambda: cls(**params))
    if isinstance(learner, type):
        return learner_spec((learner, {}))
    if not hasattr(learner, "fit") and callable(learner):  # a factory: one copy tells what it makes
        spec = learner_spec(learner(), columns)
        return LearnerSpec(spec.name, spec.algorithm, spec.params, spec.chain,
                           lambda: _bound(learner(), columns))
    if not (hasattr(learner, "fit") and hasattr(learner, "predict")):
        raise InvalidParameterError(f"a learner must have fit and predict: got {type(learner).__name__}.")
    final = learner.final if isinstance(learner, Pipeline) and learner.final is not None else learner
    algo = getattr(final, "id", None) or type(final).__name__
    params = dict(final.get_params()) if hasattr(final, "get_params") else {}
    if hasattr(learner, "get_params"):
        return LearnerSpec(algo, algo, params, pipeline_chain(learner),
                           lambda: _bound(clone_estimator(learner), columns))
    return LearnerSpec(algo, algo, params, [], lambda: copy.deepcopy(learner))


def _bound(est, columns):
    """A pipeline not bound to column names yet is bound to ``columns`` (names, categories)."""
    if columns is not None and isinstance(est, Pipeline) and "_bound_columns" not in est.__dict__:
        est.bind_columns(*columns)
    return est


def fold_data(X, y):
    """``(matrix, labels, columns)`` of the data handed to the folds: a
    :class:`~manifold_studio.data.Dataset` gives its feature matrix, its labels (unless ``y`` is
    given) and its column names and categories (which pipelines are bound to, as for a run);
    anything else is used as it is (``columns`` None)."""
    if isinstance(X, Dataset):
        return X.X, X.labels if y is None else y, dataset_columns(X)
    if y is None:
        raise DataError("The labels y are needed (or pass a data set with labels as X).")
    return X, y, None


def _takes_progress(method) -> bool:
    try:
        return "progress" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _call(method, X, progress=None):
    return method(X, progress=progress) if progress is not None and _takes_progress(method) else method(X)


def _aligned(values, cols, m: int, K: int, fill: float) -> np.ndarray:
    """(m, K) array whose columns ``cols`` are ``values`` (binary 1-D scores: +s / -s)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = np.column_stack([-values, values])
    out = np.full((m, K), fill)
    out[:, cols] = values
    return out


def _has(est, method: str) -> bool:
    """Whether the learner gives ``method`` (a pipeline gives what its final classifier gives)."""
    final = est.final if isinstance(est, Pipeline) else est
    return final is not None and hasattr(final, method)


def _predict_fold(est, X_test, classes):
    """``(predicted class index, probabilities or None, scores or None, score kind, predict
    seconds)`` of a fitted learner on a test part; columns aligned with ``classes``. The scores
    are the probabilities when the learner has them (comparable across classes, unlike softmax
    logits), else its decision_function."""
    K, m = len(classes), X_test.shape[0]
    t0 = time.perf_counter()
    pred = label_indices(np.asarray(est.predict(X_test)), classes)
    predict_time = time.perf_counter() - t0
    cols = label_indices(np.asarray(getattr(est, "classes_", classes)), classes)
    proba = scores = kind = None
    if _has(est, "predict_proba"):
        proba = _aligned(_call(est.predict_proba, X_test), cols, m, K, 0.0)
        scores, kind = proba, "predict_proba"
    elif _has(est, "decision_function"):
        scores, kind = _aligned(_call(est.decision_function, X_test), cols, m, K, -np.inf), "decision_function"
    return pred, proba, scores, kind, predict_time


def _failed_step(est) -> str:
    """The preparation step of a pipeline that failed to fit (the first one left unfitted), or ""."""
    if not isinstance(est, Pipeline):
        return ""
    return next((type(step).id for _, step in est.preparation if not step.is_fitted), "")


def _without_step_prefix(exc, step: str) -> str:
    text = str(exc)
    prefix = f"Step '{step}': "
    return text[len(prefix):] if step and text.startswith(prefix) else text


class _Scorer:
    """Runs one learner on the folds and collects its figures."""

    def __init__(self, name, spec: LearnerSpec, n_folds, n, K, repeats):
        self.name, self.algo, self.params, self.factory = name, spec.algorithm, spec.params, spec.factory
        self.chain = [(str(i), dict(p)) for i, p in spec.chain]
        self.metrics = {m: np.full(n_folds, np.nan) for m in METRICS}
        self.pred = np.full((repeats, n), -1, np.intp)
        self.scores = np.full((repeats, n, K), np.nan)
        self.proba = np.full((repeats, n, K), np.nan)
        self.kind, self.has_proba, self.failures, self.notes = None, False, [], []

    def run_fold(self, f, label, X, y, y_idx, classes, repeat, train, test, progress):
        K = len(classes)
        present = np.unique(y_idx[train])
        missing = [str(classes[k]) for k in range(K) if k not in present]
        lacking = f" (class {', '.join(repr(c) for c in missing)} not in its training part)" if missing else ""
        est = self.factory()
        t0 = time.perf_counter()
        try:
            if _takes_progress(est.fit):
                est.fit(X[train], y[train], progress=progress)
            else:
                est.fit(X[train], y[train])
        except FitCancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - reported per fold, the other folds are scored
            step = _failed_step(est)
            only = f"its training part has only class '{classes[present[0]]}'" if present.size == 1 else ""
            why = (f"preparation step '{step}' failed on its training part{lacking}" if step else
                   only + lacking if only else f"fit failed{lacking}")
            self.failures.append(f"{self.name}: {label}: {why}: {_without_step_prefix(exc, step)}")
            return
        fit_time = time.perf_counter() - t0
        try:
            pred, proba, scores, kind, predict_time = _predict_fold(est, X[test], classes)
        except FitCancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a label that is not a class: this fold only
            self.failures.append(f"{self.name}: {label}: predicting its test part failed: {exc}")
            return
        if missing:
            self.notes.append(f"{self.name}: {label}: scored{lacking}")
        final = getattr(est, "final", None) or est   # a pipeline's classifier
        if getattr(final, "random_state", 0) is None and getattr(final, "random_state_used_", None) is not None:
            self.notes.append(f"{self.name}: {label}: random_state=None drew seed {final.random_state_used_}")
        truth, mt = y_idx[test], self.metrics
        mt["fit_time"][f], mt["predict_time"][f] = fit_time, predict_time
        self.pred[repeat, test] = pred
        mt["accuracy"][f] = cs.accuracy(truth, pred)
        mt["balanced_accuracy"][f] = cs.balanced_accuracy(truth, pred, K)
        mt["precision"][f], mt["recall"][f], mt["f1"][f] = cs.macro_scores(truth, pred, K)
        if proba is not None:
            self.proba[repeat, test], self.has_proba = proba, True
            mt["log_loss"][f] = cs.log_loss(truth, proba)
        if scores is not None:
            self.scores[repeat, test], self.kind = scores, kind
            mt["auc"][f] = cs.ovr_auc(truth, scores[:, 1] if K == 2 else scores)

    def result(self) -> LearnerResult:
        auc_note = ""
        if not np.isfinite(self.metrics["accuracy"]).any():
            auc_note = f"{self.name}: no fold could be fitted, so no figure is available"
        elif self.kind is None:
            auc_note = (f"{self.name}: ROC AUC is not available: the learner gives neither "
                        "decision_function nor predict_proba scores")
        elif not np.isfinite(self.metrics["auc"]).any():
            auc_note = (f"{self.name}: ROC AUC per fold is not available (a fold's test part lacks a "
                        "class); the pooled out-of-fold AUC is shown in the ROC view")
        return LearnerResult(self.name, self.algo, self.params, self.kind, self.metrics, self.pred,
                             self.scores if self.kind else None, self.proba if self.has_proba else None,
                             self.failures, self.notes, auc_note, self.chain)


def compare_learners(learners, X, y=None, *, cv=5, repeats: int = 1, holdout: float | None = None, seed=0,
                     names=None, progress=None) -> Comparison:
    """Score several classifiers on the same folds; see the module docstring.

    ``learners``: a list (or a dict name -> learner) of estimators with fit/predict, pipelines
    (:func:`manifold_studio.make_pipeline`: the preparation chain and the classifier, fitted
    together on each training part, so the steps learn nothing from the test part), algorithm
    ids, ``(id, params)``, ``(class, params)`` or factories. ``X``: a matrix, or a
    :class:`~manifold_studio.data.Dataset` (its feature matrix, its labels unless ``y`` is given,
    and its column names for the pipelines, as a run fits them). ``names``: display names
    (default: the algorithm ids, numbered when repeated). Progress runs over every (fold,
    learner); cancel stops at the next checkpoint (FitCancelled)."""
    progress = as_progress(progress)
    if isinstance(learners, dict):
        names, learners = list(learners), list(learners.values())
    learners = list(learners)
    if not learners:
        raise InvalidParameterError("compare_learners needs at least one learner.")
    X, y, columns = fold_data(X, y)
    specs = [learner_spec(lr, columns) for lr in learners]
    if names is None:
        names, seen = [], {}
        for s in specs:
            seen[s.name] = seen.get(s.name, 0) + 1
            names.append(s.name if seen[s.name] == 1 else f"{s.name} ({seen[s.name]})")
    names = [str(n) for n in names]
    if len(names) != len(specs) or len(set(names)) != len(names):
        raise InvalidParameterError("names: one distinct name per learner.")
    if not hasattr(X, "tocsr"):
        X = np.asarray(X)
        if X.ndim != 2:
            raise DataError(f"X must be a 2-D table (rows x features), got {X.ndim} dimension(s).")
    y = class_label_vector(y, X.shape[0])
    classes, y_idx = _classes_and_index(y)
    if len(classes) < 2:
        raise DataError(f"Test & Score needs at least two classes in the labels; there is only '{classes[0]}'.")
    splits = make_splits(y_idx, cv, repeats=repeats, holdout=holdout, seed=seed)
    n_rep = max(r for r, _, _ in splits) + 1
    scorers = [_Scorer(nm, s, len(splits), y_idx.size, len(classes), n_rep)
               for nm, s in zip(names, specs)]
    total = len(splits) * len(scorers)
    per_repeat = len(splits) // n_rep
    for f, (rep, train, test) in enumerate(splits):
        if holdout is not None:
            label = "hold-out" if n_rep == 1 else f"hold-out {rep + 1}"
        else:
            label = f"fold {f % per_repeat + 1}" + (f" of repeat {rep + 1}" if n_rep > 1 else "")
        for j, sc in enumerate(scorers):
            done = f * len(scorers) + j
            progress.checkpoint(done / total, f"Test & Score: {sc.name}, {label}")
            sub = SubProgress(progress, done / total, (done + 1) / total, f"{sc.name}, {label}: ")
            sc.run_fold(f, label, X, y, y_idx, classes, rep, train, test, sub)
    progress.checkpoint(1.0, "Test & Score done")
    scheme = {"cv": cv if isinstance(cv, (int, str)) else "given", "repeats": int(n_rep),
              "holdout": holdout, "seed": seed}
    return Comparison(classes, y_idx, [(r, te) for r, _, te in splits], scheme, [s.result() for s in scorers])
