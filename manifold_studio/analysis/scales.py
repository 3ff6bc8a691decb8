"""Do the features' scales differ so much that one column decides every distance? (Qt-free)

k-means, Choose k, the RBF SVM and every neighbour method measure Euclidean distances: a column
whose spread is a thousand times another's (wine's proline, about 750, against its hue, about 1)
outweighs it in every distance. :func:`scale_advice` says so, naming the columns and the ratio.

Columns that share one scale are left alone even when their spreads differ: the pixels of an
image set (the 8×8 digits: every value between 0 and 16) have small spreads near the border and
large ones in the centre, but a standardized border pixel would weigh as much as a stroke. The
advice needs the value ranges (max − min) to differ by more than the ratio too.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import sparse

#: the largest spread over the smallest beyond which the advice is given
SCALE_RATIO = 100.0


@dataclass(frozen=True)
class ScaleAdvice:
    widest: str      # the column with the largest spread
    narrowest: str   # the column with the smallest (non-zero) spread
    ratio: float     # their standard deviations' ratio

    def text(self) -> str:
        return (f"The columns' scales differ by {self.ratio:,.0f}×: '{self.widest}' varies "
                f"{self.ratio:,.0f} times more than '{self.narrowest}', so it decides every distance. "
                f"Standardize the columns first (the standardize preparation step).")


def scale_advice(X, names=None, ratio: float = SCALE_RATIO) -> ScaleAdvice | None:
    """A :class:`ScaleAdvice` when the columns' standard deviations (constant columns left out)
    differ by more than ``ratio``, else None."""
    if sparse.issparse(X):  # the spread of every column without densifying
        if X.shape[1] < 2 or X.shape[0] < 2:
            return None
        X = sparse.csr_matrix(X, dtype=float)
        mean = np.asarray(X.mean(axis=0)).ravel()
        spread = np.sqrt(np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean ** 2, 0.0))
        value_range = np.asarray(X.max(axis=0).toarray()).ravel() - np.asarray(X.min(axis=0).toarray()).ravel()
    else:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 2:
            return None
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # an all-NaN column: no spread
            spread = np.nanstd(X, axis=0)
            value_range = np.nanmax(X, axis=0) - np.nanmin(X, axis=0)
    ok = np.isfinite(spread) & (spread > 0)
    if ok.sum() < 2:
        return None
    idx = np.flatnonzero(ok)
    hi, lo = idx[np.argmax(spread[ok])], idx[np.argmin(spread[ok])]
    r = float(spread[hi] / spread[lo])
    if r <= ratio:
        return None
    ranges = value_range[ok]
    if float(ranges.max() / ranges.min()) <= ratio:
        return None  # one shared scale (image pixels, counts in one unit): nothing to standardize
    names = list(names) if names is not None and len(names) == X.shape[1] else [f"column {i + 1}" for i in range(X.shape[1])]
    return ScaleAdvice(str(names[hi]), str(names[lo]), r)
