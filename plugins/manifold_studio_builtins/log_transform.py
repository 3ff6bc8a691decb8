"""Preparation step ``log``: log1p(x + offset) on numeric columns (all, or the named ones)."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import Float, TextList
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class Log(Preprocessor):
    id = "log"
    name = "Logarithm (log1p)"
    accepts_sparse = True
    help = ("Replaces x by log(1 + x + offset) in the numeric columns (all of them, or those named in "
            "columns): it tames right-skewed columns such as counts, incomes or concentrations. Values "
            "below -offset have no logarithm: such a column is refused, naming it and its smallest "
            "value (raise offset, or leave the column out). Missing values stay missing. Sparse counts stay "
            "sparse (log1p(0) = 0), with offset 0.")
    params = (
        Float("offset", 0.0, "Added to every value before log1p (for columns with values down to -offset).",
              low=0.0),
        TextList("columns", None, "The columns to transform (comma-separated names); none for every "
                 "numeric column.", allow_none=True),
    )

    def _fit(self, X):
        names = self._p["columns"]
        if names is None:
            pos = self.numeric_positions()
        else:
            pos = self.positions_of(names, "columns")
            cat = [n for n in names if n in self.categories_in_]
            if cat:
                raise self._error(f"column '{cat[0]}' is categorical: it has no logarithm.")
        self.positions_ = pos
        self._check_domain(X)

    def _check_domain(self, X):
        pos = np.asarray(self.positions_, dtype=np.intp)
        if is_sparse(X):
            if self._p["offset"] != 0:
                raise self._error("an offset would fill the zeros of sparse data: use offset 0 (log1p(0) = 0), or "
                                  "densify the data.")
            sub = X if len(pos) == X.shape[1] else X[:, pos]
            if sub.nnz and sub.data.min() < 0:
                sub = sub.tocsc()
                k = int(np.argmin(sub.data))
                j = int(np.searchsorted(sub.indptr, k, side="right") - 1)
                raise self._error(f"column '{self.columns_in_[self.positions_[j]]}' has negative values (the smallest "
                                  f"is {float(sub.data[k]):g}); log1p of sparse counts needs x ≥ 0: leave the column "
                                  "out (columns=...).")
            return
        sub = X[:, pos] + self._p["offset"]
        with np.errstate(invalid="ignore"):
            bad = sub < 0
        if bad.any():
            j = int(np.flatnonzero(bad.any(axis=0))[0])
            col = X[:, pos[j]]
            low = float(np.nanmin(col))
            row = int(np.nanargmin(col))
            raise self._error(f"column '{self.columns_in_[pos[j]]}' has negative values (the smallest is {low:g}, "
                              f"row {row}); log1p needs x + offset ≥ 0: set offset to at least {-low:g} or leave "
                              "the column out (columns=...).")

    def _transform(self, X):
        self._check_domain(X)
        pos = np.asarray(self.positions_, dtype=np.intp)
        if is_sparse(X):
            out = X.tocsr(copy=True)
            if len(pos) == X.shape[1]:          # every column: in place on the copy's values
                np.log1p(out.data, out=out.data)
                return out
            chosen = np.zeros(X.shape[1], dtype=bool)
            chosen[pos] = True
            hit = chosen[out.indices]
            out.data[hit] = np.log1p(out.data[hit])
            return out
        out = X.copy()
        out[:, pos] = np.log1p(X[:, pos] + self._p["offset"])
        return out


@hookimpl
def register_preprocessors():
    return [Log]
