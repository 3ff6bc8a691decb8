"""Classifier evaluations and Test & Score comparisons as pickle-free records for project files:
``(document, arrays)`` — a JSON-able dict and a dict of named numpy arrays — and back.

- :func:`evaluation_record` / :func:`evaluation_from_record` — an
  :class:`~manifold_studio.evaluation.EvaluationResult` (confusion matrix, per-class scores, the
  test rows and predictions of every fold);
- :func:`comparison_record` / :func:`comparison_from_record` — a
  :class:`~manifold_studio.evaluation.Comparison` (folds, per-fold figures and the out-of-fold
  predictions, scores and probabilities of every learner, and each learner's preparation chain);
- :func:`clustering_comparison_record` / :func:`clustering_comparison_from_record` — a
  :class:`~manifold_studio.evaluation.ClusteringComparison` (every (method, k) with its measures,
  the reasons of the missing ones, and its partition of the rows).

Lists of arrays (one per fold) are stored concatenated with their lengths. A record that does
not read back raises :class:`~manifold_studio.errors.DataError` naming what is missing.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.analysis.compare_clusterings import MEASURES, ClusteringComparison, ClusteringRow
from manifold_studio.analysis.compare_learners import METRICS, Comparison, LearnerResult
from manifold_studio.errors import DataError
from manifold_studio.evaluation import EvaluationResult
from manifold_studio.analysis.chain import jsonable_params

__all__ = ["evaluation_record", "evaluation_from_record", "comparison_record", "comparison_from_record",
           "clustering_comparison_record", "clustering_comparison_from_record"]


def _text_safe(arr) -> np.ndarray:
    arr = np.asarray(arr)
    return arr.astype(str) if arr.dtype == object else arr


def _split(flat: np.ndarray, lengths) -> list[np.ndarray]:
    return list(np.split(flat, np.cumsum(np.asarray(lengths, dtype=np.intp))[:-1])) if len(lengths) else []


def _need(arrays: dict, key: str, what: str) -> np.ndarray:
    if key not in arrays:
        raise DataError(f"The saved {what} lacks its '{key}' array.")
    return arrays[key]


def evaluation_record(result: EvaluationResult) -> tuple[dict, dict]:
    doc = {"type": "evaluation", "method": result.method, "params": dict(result.params),
           "fold_lengths": [int(len(t)) for t in result.test_index]}
    arrays = {"classes": _text_safe(result.classes), "fold_accuracy": np.asarray(result.fold_accuracy),
              "confusion": np.asarray(result.confusion), "precision": np.asarray(result.precision),
              "recall": np.asarray(result.recall), "f1": np.asarray(result.f1),
              "support": np.asarray(result.support)}
    if result.test_index:
        arrays["test_index"] = np.concatenate([np.asarray(t, np.intp) for t in result.test_index])
        arrays["predictions"] = _text_safe(np.concatenate([np.asarray(p) for p in result.predictions]))
    return doc, arrays


def evaluation_from_record(doc: dict, arrays: dict) -> EvaluationResult:
    what = "evaluation"
    lengths = doc.get("fold_lengths") or []
    tests = _split(_need(arrays, "test_index", what), lengths) if lengths else []
    preds = _split(_need(arrays, "predictions", what), lengths) if lengths else []
    return EvaluationResult(doc["method"], _need(arrays, "classes", what), _need(arrays, "fold_accuracy", what),
                            _need(arrays, "confusion", what), _need(arrays, "precision", what),
                            _need(arrays, "recall", what), _need(arrays, "f1", what), _need(arrays, "support", what),
                            tests, preds, dict(doc.get("params") or {}))


def comparison_record(c: Comparison) -> tuple[dict, dict]:
    learners = []
    arrays = {"classes": _text_safe(c.classes), "y_idx": np.asarray(c.y_idx),
              "fold_repeat": np.array([r for r, _ in c.folds], np.intp),
              "fold_test": (np.concatenate([np.asarray(t, np.intp) for _, t in c.folds]) if c.folds
                            else np.zeros(0, np.intp))}
    for i, r in enumerate(c.learners):
        learners.append({"name": r.name, "algorithm": r.algorithm, "params": r.params, "score_kind": r.score_kind,
                         "failures": list(r.failures), "notes": list(r.notes), "auc_note": r.auc_note,
                         "has_scores": r.scores is not None, "has_proba": r.proba is not None,
                         "chain": [[str(i), jsonable_params(p)] for i, p in r.chain]})
        for m in METRICS:
            arrays[f"L{i}/{m}"] = np.asarray(r.fold_metrics[m], dtype=float)
        arrays[f"L{i}/predictions"] = np.asarray(r.predictions)
        if r.scores is not None:
            arrays[f"L{i}/scores"] = np.asarray(r.scores, dtype=float)
        if r.proba is not None:
            arrays[f"L{i}/proba"] = np.asarray(r.proba, dtype=float)
    scheme = {k: (v if isinstance(v, (int, float, str)) or v is None else str(v)) for k, v in c.scheme.items()}
    doc = {"type": "comparison", "scheme": scheme, "learners": learners,
           "fold_lengths": [int(len(t)) for _, t in c.folds]}
    return doc, arrays


def comparison_from_record(doc: dict, arrays: dict) -> Comparison:
    what = "Test & Score comparison"
    tests = _split(_need(arrays, "fold_test", what), doc.get("fold_lengths") or [])
    folds = list(zip((int(r) for r in _need(arrays, "fold_repeat", what)), tests))
    learners = []
    for i, d in enumerate(doc.get("learners") or []):
        metrics = {m: _need(arrays, f"L{i}/{m}", what) for m in METRICS}
        learners.append(LearnerResult(
            d["name"], d.get("algorithm", d["name"]), dict(d.get("params") or {}), d.get("score_kind"), metrics,
            _need(arrays, f"L{i}/predictions", what),
            _need(arrays, f"L{i}/scores", what) if d.get("has_scores") else None,
            _need(arrays, f"L{i}/proba", what) if d.get("has_proba") else None,
            list(d.get("failures") or []), list(d.get("notes") or []), d.get("auc_note", ""),
            [(str(i), dict(p or {})) for i, p in d.get("chain") or []]))
    return Comparison(_need(arrays, "classes", what), _need(arrays, "y_idx", what), folds,
                      dict(doc.get("scheme") or {}), learners)


def clustering_comparison_record(c: ClusteringComparison) -> tuple[dict, dict]:
    rows = []
    arrays = {"train_index": np.asarray(c.train_index, np.intp), "validation_index": np.asarray(c.validation_index,
                                                                                               np.intp)}
    for i, r in enumerate(c.rows):
        rows.append({"method": r.method, "algorithm": r.algorithm, "k": int(r.k), "params": r.params,
                     "measures": {m: (None if not np.isfinite(r.value(m)) else r.value(m)) for m in MEASURES},
                     "notes": dict(r.notes), "n_clusters_found": int(r.n_clusters_found),
                     "validation_how": r.validation_how, "error": r.error,
                     "fit_time": None if not np.isfinite(r.fit_time) else float(r.fit_time),
                     "has_labels": r.labels is not None})
        if r.labels is not None:
            arrays[f"R{i}/labels"] = _text_safe(r.labels)
    doc = {"type": "clustering_comparison", "k_values": [int(k) for k in c.k_values], "methods": list(c.methods),
           "seed": c.seed, "validation": c.validation, "n_samples": int(c.n_samples),
           "total": None if not np.isfinite(c.total) else float(c.total), "rows": rows}
    return doc, arrays


def _number(v) -> float:
    return float("nan") if v is None else float(v)


def clustering_comparison_from_record(doc: dict, arrays: dict) -> ClusteringComparison:
    what = "comparison of clusterings"
    rows = []
    for i, d in enumerate(doc.get("rows") or []):
        measures = {m: _number((d.get("measures") or {}).get(m)) for m in MEASURES}
        rows.append(ClusteringRow(
            d["method"], d.get("algorithm", d["method"]), int(d["k"]), dict(d.get("params") or {}), measures,
            dict(d.get("notes") or {}), _need(arrays, f"R{i}/labels", what) if d.get("has_labels") else None,
            int(d.get("n_clusters_found", 0)), d.get("validation_how", ""), _number(d.get("fit_time")),
            d.get("error", "")))
    return ClusteringComparison([int(k) for k in doc.get("k_values") or []], list(doc.get("methods") or []), rows,
                                doc.get("seed"), doc.get("validation"), _need(arrays, "train_index", what),
                                _need(arrays, "validation_index", what), int(doc.get("n_samples", 0)),
                                _number(doc.get("total")))
