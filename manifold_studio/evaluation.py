"""Evaluating classifiers and comparing clusterings: the public facade of
:mod:`manifold_studio.analysis.evaluate` (stratified hold-out and k-fold cross-validation,
:func:`evaluate`, Test & Score :func:`compare_learners`, :func:`compare_clusterings`).

It sits above ``analysis`` in the layer contract (``pyproject.toml``); modules inside ``analysis``
import :mod:`manifold_studio.analysis.evaluate` instead.
"""
from __future__ import annotations

from manifold_studio.analysis.evaluate import (HOLDOUT, KFOLD, ClusteringComparison, ClusteringRow, Comparison,
                                              EvaluationResult, LearnerResult, compare_clusterings,
                                              compare_learners, confusion_matrix, evaluate, holdout_split,
                                              label_indices, per_class_scores, stratified_kfold)

__all__ = ["HOLDOUT", "KFOLD", "EvaluationResult", "holdout_split", "stratified_kfold",
           "confusion_matrix", "per_class_scores", "evaluate", "label_indices",
           "compare_learners", "Comparison", "LearnerResult",
           "compare_clusterings", "ClusteringComparison", "ClusteringRow"]
