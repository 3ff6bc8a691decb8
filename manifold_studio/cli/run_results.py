"""What a run's output is, on the command line: the labels of a clustering or a classifier,
else the embedding; and whether its fit takes the labels (a pipeline asks its final step)."""
from __future__ import annotations

import numpy as np


def uses_labels(est, cls) -> bool:
    """Whether the fit takes the labels: a classifier, or a method that can use them (supervised
    UMAP); a pipeline asks its final estimator."""
    final = getattr(est, "final", None) or est
    uses = getattr(final, "uses_labels", None)
    return bool(uses()) if callable(uses) else bool(cls.requires_labels)


def result_first(kind: str, embedding, labels):
    """The run's result as its kind defines it: the labels of a clustering or a classifier (a
    spectral clustering also has coordinates, which are not its result), else the embedding."""
    order = (labels, embedding) if kind in ("clustering", "classification") else (embedding, labels)
    return next((np.asarray(r) for r in order if r is not None), None)


def shape_text(arr: np.ndarray) -> str:
    return " × ".join(f"{s:,}" for s in arr.shape)


def result_name(kind: str) -> str:
    return {"embedding": "embedding", "clustering": "cluster labels",
            "classification": "predicted labels"}.get(kind, "result")
