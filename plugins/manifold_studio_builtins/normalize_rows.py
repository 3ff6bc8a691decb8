"""Preparation step ``normalize_rows``: every row scaled to unit norm."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Choice
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class NormalizeRows(Preprocessor):
    id = "normalize_rows"
    name = "Normalize rows (unit norm)"
    help = ("Divides every row's numeric columns by the row's norm ('l2': Euclidean, 'l1': sum of absolute "
            "values, 'max': largest absolute value), as scikit-learn's Normalizer: profiles or spectra "
            "are then compared by shape, not size. A row of zeros stays zeros; a row with a missing value "
            "is refused (impute first). Categorical columns are left as they are.")
    params = (Choice("norm", "l2", "The norm each row is divided by.", choices=("l2", "l1", "max")),)

    def _fit(self, X):
        self.positions_ = self.numeric_positions()

    def _transform(self, X):
        pos = np.asarray(self.positions_, dtype=np.intp)
        sub = X[:, pos]
        if np.isnan(sub).any():
            i = int(np.flatnonzero(np.isnan(sub).any(axis=1))[0])
            j = int(pos[np.flatnonzero(np.isnan(sub[i]))[0]])
            raise self._error(f"row {i} has a missing value in column '{self.columns_in_[j]}': add an impute "
                              "step before normalize_rows.")
        norm = self._p["norm"]
        if norm == "l2":
            size = np.sqrt((sub * sub).sum(axis=1))
        elif norm == "l1":
            size = np.abs(sub).sum(axis=1)
        else:
            size = np.abs(sub).max(axis=1) if sub.shape[1] else np.zeros(sub.shape[0])
        size[size == 0] = 1.0
        out = X.copy()
        out[:, pos] = sub / size[:, None]
        return out


@hookimpl
def register_preprocessors():
    return [NormalizeRows]
