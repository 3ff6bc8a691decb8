"""Class labels for the supervised plugins: checks with clear messages and the encoding
every classifier shares (Qt-free).

``encode_labels(y)`` returns ``classes`` (sorted as ``np.unique`` sorts them, the order
scikit-learn uses) and ``y_idx``, the index of each label in ``classes``. Labels may be of
any type (strings, integers, booleans, integral floats). It refuses, naming the problem:

- missing labels (None), labels of the wrong shape or length;
- NaN / None / empty labels (the rows are named);
- a single class ("a classifier needs at least two classes");
- continuous values (non-integral floats): "Unknown label type: continuous …" (the message
  scikit-learn's checks expect). When such values really are classes, convert them to
  strings first; :func:`looks_continuous` lets an interface ask the user before fitting.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from manifold_studio.errors import DataError

__all__ = ["DataConversionWarning", "encode_labels", "class_label_vector", "looks_continuous",
           "describe_rows", "same_labels", "accuracy", "MAX_CLASSES_HINT"]

#: a numeric label column with more distinct values than this is probably not a class
MAX_CLASSES_HINT = 30


class DataConversionWarning(UserWarning):
    """Labels were given in a shape that had to be converted (a column vector)."""


def describe_rows(rows: np.ndarray, limit: int = 5) -> str:
    rows = np.asarray(rows)
    text = ", ".join(str(int(r)) for r in rows[:limit])
    return text + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def _missing_mask(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "c":
        return np.isnan(arr.real) | np.isnan(arr.imag)
    if arr.dtype == object:
        def missing(v):
            if v is None:
                return True
            if isinstance(v, float) and v != v:
                return True
            return isinstance(v, str) and not v.strip()
        return np.fromiter((missing(v) for v in arr), dtype=bool, count=arr.shape[0])
    if arr.dtype.kind in "US":
        return np.char.str_len(np.char.strip(arr.astype(str))) == 0
    return np.zeros(arr.shape[0], dtype=bool)


def class_label_vector(y, n: int | None = None, name: str = "y") -> np.ndarray:
    """``y`` as a 1-D label array of length ``n``, or a :class:`DataError` naming the problem."""
    if y is None:
        raise DataError(f"{name} is missing: this classifier requires y to be passed, but the target "
                        f"y is None. Give one class label per sample (choose a label column).")
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        # scikit-learn's own class when scikit-learn is loaded (its filters and checks then apply)
        sk = sys.modules.get("sklearn.exceptions")
        category = getattr(sk, "DataConversionWarning", DataConversionWarning)
        warnings.warn(category(
            "A column-vector y was passed when a 1d array was expected. Please change the shape "
            "of y to (n_samples,), for example using ravel()."), stacklevel=3)
        arr = arr.ravel()
    elif arr.ndim == 2 and arr.shape[0] == 1 and n is not None and arr.shape[1] == n and n != 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-dimensional (one class label per sample); got shape {arr.shape}.")
    if n is not None and arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} labels but X has {n} samples: give one label per row.")
    missing = _missing_mask(arr)
    if missing.any():
        raise DataError(f"{name} has {int(missing.sum())} missing label(s) (NaN or empty) at row(s) "
                        f"{describe_rows(np.flatnonzero(missing))}; label every row or remove those rows.")
    return arr


def _is_continuous(arr: np.ndarray) -> bool:
    if arr.dtype.kind == "c":
        return True
    if arr.dtype.kind != "f":
        return False
    return bool(np.any(arr != np.round(arr)))


def looks_continuous(y, max_classes: int = MAX_CLASSES_HINT) -> str:
    """A question to ask before treating ``y`` as classes, or "" when it plainly is one.

    Non-integral floats, or numbers with more than ``max_classes`` distinct values (and more
    than a tenth of the rows), are probably a measurement rather than a class."""
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.size == 0:
        return ""
    if arr.dtype == object:
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            return ""
    if arr.dtype.kind not in "iuf":
        return ""
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    n_distinct = np.unique(finite).size
    if _is_continuous(finite):
        return (f"The labels look continuous ({n_distinct:,} distinct values, not all whole numbers). "
                "Is this column really a class?")
    if n_distinct > max_classes and n_distinct > 0.1 * arr.size:
        return (f"The label column has {n_distinct:,} distinct numeric values for {arr.size:,} rows. "
                "Is it really a class?")
    return ""


def encode_labels(y, n: int | None = None, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y_idx)``: the sorted distinct labels and each sample's index into them."""
    arr = class_label_vector(y, n, name)
    if _is_continuous(arr):
        n_distinct = np.unique(arr).size
        raise DataError(f"Unknown label type: continuous. {name} holds {n_distinct:,} distinct "
                        "non-integral numbers, which look like a measurement, not classes; give "
                        "class labels (convert them to strings if they really are classes).")
    if arr.dtype == object:
        try:
            classes, y_idx = np.unique(arr, return_inverse=True)
        except TypeError:  # mixed types: compare as text
            arr = arr.astype(str)
            classes, y_idx = np.unique(arr, return_inverse=True)
    else:
        classes, y_idx = np.unique(arr, return_inverse=True)
    if classes.size < 2:
        raise DataError(f"{name} has a single class ('{classes[0]}'): a classifier needs at least two "
                        "classes to tell apart.")
    return classes, y_idx.reshape(-1).astype(np.intp)


def same_labels(predicted, truth) -> np.ndarray:
    """Element-wise equality of predicted and true labels that may have been read with
    different types (a model trained on integers applied to a file whose labels were read as
    text, or 1 against 1.0): equal values compare equal, otherwise their text forms do."""
    p, t = np.asarray(predicted), np.asarray(truth)
    if p.shape != t.shape:
        raise DataError(f"{t.shape[0] if t.ndim else 0} true labels for {p.shape[0] if p.ndim else 0} predictions.")
    if p.dtype.kind in "iufb" and t.dtype.kind in "iufb":
        return p == t
    if p.dtype.kind == t.dtype.kind and p.dtype != object:
        return p == t

    def text(a):
        if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            a = a.astype(np.int64)
        return np.array([str(v) for v in a.tolist()], dtype=str)
    return text(p) == text(t)


def accuracy(predicted, truth) -> float:
    """The fraction of predictions equal to the true labels (see :func:`same_labels`)."""
    eq = same_labels(predicted, truth)
    return float(eq.mean()) if eq.size else float("nan")
