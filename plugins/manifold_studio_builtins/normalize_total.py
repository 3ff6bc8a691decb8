"""Preparation step ``normalize_total``: every row's counts scaled to one total (scanpy's
``sc.pp.normalize_total``), the first step for single-cell count data before ``log``."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import Float
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class NormalizeTotal(Preprocessor):
    id = "normalize_total"
    name = "Normalize total (counts per row)"
    accepts_sparse = True
    help = ("Scales every row's numeric columns so that they sum to target_sum, as scanpy's normalize_total: "
            "cells sequenced more deeply then count the same. With target_sum empty, the target is the median "
            "of the training rows' totals (rows summing to 0 left out), fitted with the model so that new rows "
            "get the same scale. A row summing to 0 stays zeros. Counts cannot be negative and a row with a "
            "missing value is refused (impute first); categorical columns are left as they are. Sparse counts stay sparse.")
    params = (Float("target_sum", None, "The total of every row after scaling (e.g. 10000); empty: the median "
                    "total of the training rows.", low=0.0, low_open=True, allow_none=True),)

    def _fit(self, X):
        self.positions_ = self.numeric_positions()
        totals = self._totals(X)
        if self._p["target_sum"] is not None:
            self.target_sum_ = float(self._p["target_sum"])
        else:
            positive = totals[totals > 0]
            if not positive.size:
                raise self._error("every row sums to 0: there is no total to scale to (give target_sum).")
            self.target_sum_ = float(np.median(positive))

    def _totals(self, X) -> np.ndarray:
        pos = np.asarray(self.positions_, dtype=np.intp)
        sub = X if len(pos) == X.shape[1] else X[:, pos]   # (every column: no copy)
        values = sub.data if is_sparse(sub) else sub
        low = values.min() if values.size else 0.0     # NaN when any value is missing
        checks = () if low >= 0 else ((np.isnan(values), "a missing value"), (values < 0, "a negative count"))
        for bad, what in checks:
            if bad.any():
                if is_sparse(sub):
                    k = int(np.flatnonzero(bad)[0])
                    i = int(np.searchsorted(sub.indptr, k, side="right") - 1)
                    j = int(pos[sub.indices[k]])
                else:
                    i = int(np.flatnonzero(bad.any(axis=1))[0])
                    j = int(pos[np.flatnonzero(bad[i])[0]])
                hint = ("add an impute step before normalize_total" if what == "a missing value" else
                        "normalize_total scales counts; leave the column out (select_columns exclude=...)")
                raise self._error(f"row {i} has {what} in column '{self.columns_in_[j]}': {hint}.")
        return np.asarray(sub.sum(axis=1), dtype=np.float64).ravel()

    def _transform(self, X):
        pos = np.asarray(self.positions_, dtype=np.intp)
        totals = self._totals(X)
        scale = np.divide(self.target_sum_, totals, out=np.zeros_like(totals), where=totals > 0)
        if is_sparse(X):   # a sparse matrix has no categorical columns: every column is scaled
            out = X.tocsr(copy=True)
            out.data *= np.repeat(scale, np.diff(out.indptr))
            return out
        out = X.copy()
        out[:, pos] = X[:, pos] * scale[:, None]
        return out


@hookimpl
def register_preprocessors():
    return [NormalizeTotal]
