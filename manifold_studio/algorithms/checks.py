"""Input checks shared by every algorithm: clear messages that name the problem."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.errors import DataError


class NonNumericDataError(DataError, TypeError):
    """Values that cannot be read as numbers (a DataError that is also a TypeError, as numpy raises)."""


def _describe_positions(mask: np.ndarray, limit: int = 5) -> str:
    rows, cols = np.nonzero(mask)
    pairs = [f"row {r} column {c}" for r, c in zip(rows[:limit], cols[:limit])]
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return ", ".join(pairs) + more


#: said wherever missing values are refused: the method that models them
MISSING_VALUES_HINT = ("Probabilistic PCA with EM (ppca, method='em') accepts missing values and "
                       "can impute them.")


def check_data(X, *, name: str = "X", min_samples: int = 1, min_features: int = 1,
               allow_nan: bool = False, dtype=np.float64) -> np.ndarray:
    """Return ``X`` as a 2-D float array or raise :class:`DataError` naming the problem.

    Accepts arrays, nested lists and DataFrame-like objects (anything ``np.asarray`` reads).
    Row and column numbers in messages are 0-based, as in the arrays. ``allow_nan`` lets
    NaN (missing values) through; infinite values are refused either way.
    """
    if X is None:
        raise DataError(f"{name} is missing: give an (n_samples, n_features) array.")
    if is_sparse(X):
        raise DataError(sparse_refusal(name))
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged nested lists
        raise DataError(f"{name} cannot be read as a table of numbers: {exc}") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        try:
            arr = arr.astype(dtype)
        except (TypeError, ValueError) as exc:
            raise NonNumericDataError(f"{name} holds non-numeric values ({exc}); every column must "
                                      "be numeric.") from None
    elif arr.dtype.kind == "c":
        raise DataError(f"{name} holds complex numbers (Complex data not supported): only real values are allowed.")
    if arr.ndim == 1:
        raise DataError(f"{name} is 1-dimensional with {arr.shape[0]} values; expected a 2-D array "
                        "(n_samples, n_features). Reshape your data: X.reshape(-1, 1) for a single "
                        "feature, X.reshape(1, -1) for a single sample.")
    if arr.ndim != 2:
        raise DataError(f"{name} has {arr.ndim} dimensions; expected a 2-D array (n_samples, n_features).")
    arr = np.ascontiguousarray(arr, dtype=dtype)
    n, d = arr.shape
    if n < min_samples:
        raise DataError(f"{name} has {n} sample(s); this needs at least {min_samples}.")
    if d < min_features:
        raise DataError(f"{name} has {d} feature(s) (shape={arr.shape}) while a minimum of "
                        f"{min_features} is required.")
    if arr.size and _sum_of_squares_is_safe(arr):
        return arr   # no NaN, no inf, every magnitude within [TINY, HUGE] of the checks below
    top = None
    if arr.size:
        # max and min propagate NaN and inf: a finite extreme proves every value finite, so the
        # element-wise pass is only needed to find or name a problem
        top = max(abs(float(arr.max())), abs(float(arr.min())))
        if not np.isfinite(top):
            top = None
    bad = None if top is not None else (np.isinf(arr) if allow_nan else ~np.isfinite(arr))
    if bad is not None and bad.any():
        kind = "NaN" if not allow_nan and np.isnan(arr).any() else "infinite"
        hint = f" {MISSING_VALUES_HINT}" if kind == "NaN" else ""
        raise DataError(f"{name} contains {int(bad.sum())} {kind} value(s) at "
                        f"{_describe_positions(bad)}; remove or impute them first.{hint}")
    check_magnitude(arr, name, top)
    return arr


#: algorithm id -> the condition under which it takes scipy.sparse input ("" when always); filled
#: by the algorithm base class from each class's ``accepts_sparse`` / ``sparse_condition``
SPARSE_METHODS: dict[str, str] = {}


def register_sparse_method(algorithm_id: str, condition: str = "") -> None:
    """Record that ``algorithm_id`` takes sparse input (named in :func:`sparse_refusal`)."""
    if algorithm_id:
        SPARSE_METHODS[algorithm_id] = condition


def is_sparse(X) -> bool:
    """Whether X is a scipy.sparse matrix or array."""
    return sp.issparse(X) or type(X).__module__.startswith("scipy.sparse")


def sparse_methods_text() -> str:
    """The methods that take sparse data, for messages: "pca, kmeans, kernel_pca (kernel='linear'...)"."""
    if not SPARSE_METHODS:
        return "none of the loaded methods"
    return ", ".join(f"{k} ({c})" if c else k for k, c in sorted(SPARSE_METHODS.items()))


def sparse_refusal(name: str = "X", owner: str = "", condition: str = "") -> str:
    """The one-line message refusing sparse input, naming the methods that take it."""
    who = f"{owner} does not take sparse data" if owner else "sparse input is not supported here"
    if condition:
        who += f" unless {condition}"
    return (f"{name} is a sparse matrix and {who}. Methods that take sparse data: "
            f"{sparse_methods_text()}. Otherwise convert it with X.toarray() (it needs "
            "n_samples × n_features numbers in memory).")


def check_sparse_data(X, *, name: str = "X", min_samples: int = 1, min_features: int = 1):
    """``X`` as a canonical CSR float64 ``scipy.sparse.csr_array`` (a copy: sorted indices, no
    duplicate entries, no stored zeros) or DataError naming the problem; the stored values must be
    finite and within the magnitudes :func:`check_data` allows."""
    if X.ndim != 2:
        raise DataError(f"{name} is a {X.ndim}-dimensional sparse array; expected a 2-D "
                        "(n_samples, n_features) matrix.")
    if X.dtype.kind == "c":
        raise DataError(f"{name} holds complex numbers (Complex data not supported): only real values are allowed.")
    if X.dtype.kind not in "biuf":
        raise NonNumericDataError(f"{name} has data type {X.dtype}; only numeric sparse matrices are allowed.")
    arr = sp.csr_array(X, dtype=np.float64, copy=True)
    arr.sum_duplicates()
    arr.eliminate_zeros()
    n, d = arr.shape
    if n < min_samples:
        raise DataError(f"{name} has {n} sample(s); this needs at least {min_samples}.")
    if d < min_features:
        raise DataError(f"{name} has {d} feature(s) (shape={arr.shape}) while a minimum of "
                        f"{min_features} is required.")
    values = arr.data
    if values.size and not _sum_of_squares_is_safe(values.reshape(1, -1)):
        bad = ~np.isfinite(values)
        if bad.any():
            rows = np.repeat(np.arange(n), np.diff(arr.indptr))[bad]
            cols = arr.indices[bad]
            where = ", ".join(f"row {r} column {c}" for r, c in zip(rows[:5], cols[:5]))
            kind = "NaN" if np.isnan(values).any() else "infinite"
            raise DataError(f"{name} contains {int(bad.sum())} {kind} value(s) at {where}; remove or "
                            "impute them first (sparse data cannot hold missing values).")
        check_magnitude(values.reshape(1, -1), name)
    return arr


#: beyond these magnitudes squares overflow to inf or underflow to 0 in double precision
#: (1.8e308 and 2.2e-308), so distances, variances and kernels stop meaning anything
HUGE, TINY = 1e150, 1e-150


#: values per BLAS dot in :func:`_sum_of_squares_is_safe`: below OpenBLAS's threading threshold
#: (10,000), as a threaded dot wakes the other BLAS threads, which costs milliseconds on busy cores
_DOT_CHUNK = 8192


def _sum_of_squares_is_safe(arr: np.ndarray) -> bool:
    """One BLAS pass: the sum of squares s of every value. s finite proves no NaN and no inf;
    s ≤ HUGE² proves every |x| ≤ HUGE; s > TINY²·size proves the largest |x| > TINY. Anything else
    (rare) goes through the element-wise checks, which find and name the problem."""
    flat = arr.reshape(-1)
    s = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, flat.size, _DOT_CHUNK):
            part = flat[start:start + _DOT_CHUNK]
            s += float(np.dot(part, part))
    return np.isfinite(s) and TINY * TINY * flat.size < s <= HUGE * HUGE


def check_magnitude(arr: np.ndarray, name: str = "X", top: float | None = None) -> None:
    """Refuse values whose squares overflow (or, for a whole data set, underflow) float64.
    ``top``: the largest magnitude when the caller already knows it."""
    if not arr.size:
        return
    if top is None:
        top = max(abs(float(arr.max())), abs(float(arr.min())))   # two reductions, no copy
    if not np.isfinite(top) or top > HUGE:                       # NaN/inf present, or an error to name
        finite = np.where(np.isfinite(arr), np.abs(arr), 0.0)
        top = float(finite.max())
    if top > HUGE:
        col = int(np.argmax(finite.max(axis=0)))
        raise DataError(f"{name} holds values as large as {top:.3g} (column {col}): their squares "
                        f"overflow double precision (above about {HUGE:.0e} distances and variances become "
                        "infinite). Rescale the data first, e.g. divide it by a power of ten or "
                        "standardise the columns.")
    if 0.0 < top < TINY:
        raise DataError(f"{name} holds only values smaller than {TINY:.0e} (the largest is {top:.3g}): their "
                        "squares underflow to zero in double precision, so every distance would be 0. "
                        "Rescale the data first, e.g. multiply it by a power of ten.")


def check_n_features(X: np.ndarray, expected: int, owner: str = "the model") -> None:
    if X.shape[1] != expected:
        raise DataError(f"X has {X.shape[1]} features, but {owner} is expecting {expected} features "
                        "as input (the number it was fitted on).")


def label_vector(y, name: str = "y") -> np.ndarray:
    """``y`` as a 1-D array (a single row or column is flattened) or DataError."""
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-dimensional (one label per sample); got shape {arr.shape}.")
    return arr


def check_labels(y, n: int, name: str = "y") -> np.ndarray:
    """Return ``y`` as a 1-D array of length n or raise DataError."""
    if y is None:
        raise DataError(f"{name} is missing: this algorithm needs labels.")
    arr = label_vector(y, name)
    if arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} labels but X has {n} samples.")
    return arr


def draw_seed() -> int:
    """A fresh seed in [0, 2**31 - 1) from the operating system's entropy: what
    ``random_state=None`` means; the fit records it so the result can be reproduced."""
    return int(np.random.SeedSequence().generate_state(1, np.uint32)[0] % (2 ** 31 - 1))


def fix_seed(params: dict) -> int | None:
    """The seed of validated parameters with a ``random_state`` (None without one): a drawn seed
    (:func:`draw_seed`) replaces ``random_state=None`` in ``params``, so the fit uses, and can
    record, the seed that reproduces it."""
    if "random_state" not in params:
        return None
    if params["random_state"] is None:
        params["random_state"] = draw_seed()
    return params["random_state"]


def check_random_state(seed) -> np.random.Generator:
    """A numpy Generator from None, an int or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
