"""One-vs-rest: a K-class problem as binary ±1 problems (shared by the linear classifiers).

Two classes make ONE binary problem whose +1 class is ``classes_[1]`` (the scikit-learn
convention); K > 2 classes make K problems, problem k having ``classes_[k]`` as +1 and all
the others as −1. :func:`fit_one_vs_rest` runs a binary fit on each problem with its share
of the progress bar (a :class:`SubProgress` whose messages name the class), and
:func:`ovr_scores` / :func:`ovr_proba` turn the per-problem scores into the contract's
shapes: (m,) for two classes, (m, K) otherwise.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from manifold_studio.algorithms.progress import SubProgress

__all__ = ["binary_problems", "fit_one_vs_rest", "ovr_scores", "ovr_proba", "sigmoid"]


def binary_problems(n_classes: int) -> list[int]:
    """The class index taken as +1 in each binary problem: [1] for two classes, else 0..K−1."""
    return [1] if n_classes == 2 else list(range(n_classes))


def fit_one_vs_rest(y_idx: np.ndarray, classes, fit_binary: Callable, progress) -> list:
    """``[fit_binary(u, sub_progress, k, title) for each problem]``.

    ``u`` is the ±1 float vector of the problem (+1 for class index ``k``), ``sub_progress``
    maps the problem's 0..1 onto its share of ``progress``, ``title`` names the problem
    ("" for a binary problem, "class 'a' vs rest" otherwise) for messages and curves."""
    problems = binary_problems(len(classes))
    n_prob = len(problems)
    out = []
    for j, k in enumerate(problems):
        u = np.where(y_idx == k, 1.0, -1.0)
        title = "" if n_prob == 1 else f"class '{classes[k]}' vs rest"
        sub = SubProgress(progress, j / n_prob, (j + 1) / n_prob,
                          prefix=f"{title} ({j + 1}/{n_prob}): " if title else "")
        out.append(fit_binary(u, sub, k, title))
    return out


def ovr_scores(Z: np.ndarray) -> np.ndarray:
    """Per-problem scores (m, P) as the contract's decision: (m,) when P == 1, else (m, P)."""
    Z = np.asarray(Z, dtype=float)
    return Z[:, 0].copy() if Z.ndim == 2 and Z.shape[1] == 1 else Z


def sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + e^(−z)) without overflow."""
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    e = np.exp(z[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def ovr_proba(Z: np.ndarray) -> np.ndarray:
    """Class probabilities from one-vs-rest logistic scores, as scikit-learn does: for one
    problem [1 − σ(z), σ(z)]; for K problems σ(z_k) normalised to sum 1 over k."""
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1 or Z.shape[1] == 1:
        p = sigmoid(Z.reshape(-1))
        return np.column_stack([1.0 - p, p])
    P = sigmoid(Z)
    return P / P.sum(axis=1, keepdims=True)
