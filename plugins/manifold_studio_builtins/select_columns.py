"""Preparation step ``select_columns``: keep columns by name, by pattern or by variance, or the k
numeric columns of highest variance or dispersion (highly variable genes)."""
from __future__ import annotations

import re

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import Choice, Float, Int, Text, TextList
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class SelectColumns(Preprocessor):
    id = "select_columns"
    name = "Select columns"
    handles_categorical = True
    accepts_sparse = True
    help = ("Keeps the columns named in include (all when none), that match pattern (a regular expression "
            "searched in the name), minus those named in exclude; then, with variance_threshold, only the "
            "numeric columns whose training variance is above it (as scikit-learn's VarianceThreshold). "
            "With top_k, only the top_k numeric columns of highest training variance, or dispersion "
            "(variance / mean, rank_by=dispersion; a column of mean 0 ranks last), are kept among those: the "
            "highly variable genes of count data (ties go to the earlier column). "
            "A name that is not a column is refused, naming it. The kept columns stay in their order.")
    params = (
        TextList("include", None, "Columns to keep (comma-separated names); none for all.", allow_none=True),
        TextList("exclude", None, "Columns to leave out (comma-separated names).", allow_none=True),
        Text("pattern", None, "A regular expression: keep the columns whose name it matches.", allow_none=True),
        Float("variance_threshold", None, "Keep only the numeric columns whose variance is above this.",
              low=0.0, allow_none=True),
        Int("top_k", None, "Keep only this many numeric columns: those of highest variance or dispersion "
            "(rank_by); empty for no limit.", low=1, allow_none=True),
        Choice("rank_by", "variance", "What top_k ranks the numeric columns by: their variance, or their "
               "dispersion (variance / mean).", choices=("variance", "dispersion")),
    )

    def _fit(self, X):
        p = self._p
        names = self.columns_in_
        keep = np.ones(len(names), dtype=bool)
        if p["include"] is not None:
            keep[:] = False
            keep[self.positions_of(p["include"], "include")] = True
        if p["exclude"] is not None:
            keep[self.positions_of(p["exclude"], "exclude")] = False
        if p["pattern"] is not None:
            try:
                rx = re.compile(p["pattern"])
            except re.error as exc:
                raise self._error(f"pattern {p['pattern']!r} is not a regular expression ({exc}).") from None
            keep &= np.asarray([rx.search(n) is not None for n in names], dtype=bool)
        if p["variance_threshold"] is not None:
            with np.errstate(all="ignore"):
                var = column_scores(X, "variance") if is_sparse(X) else np.nanvar(X, axis=0)
            numeric = np.asarray([n not in self.categories_in_ for n in names])
            keep &= ~numeric | (np.nan_to_num(var, nan=0.0) > p["variance_threshold"])
        if p["top_k"] is not None:
            keep &= top_columns(X, keep, np.asarray([n not in self.categories_in_ for n in names]), p["top_k"],
                                p["rank_by"])
        if not keep.any():
            raise self._error(f"no column is left (the columns are {', '.join(repr(n) for n in names)}).")
        self.keep_ = np.flatnonzero(keep)
        self.columns_out_ = [names[j] for j in self.keep_]
        self.categories_out_ = {c: v for c, v in self.categories_in_.items() if c in self.columns_out_}

    def _transform(self, X):
        return X[:, np.asarray(self.keep_, dtype=np.intp)]


def column_scores(X, by: str) -> np.ndarray:
    """The training variance (ddof 0) of every column, or its dispersion (variance / mean; -inf
    for a column of mean 0 or below, which then ranks last); NaN cells are left out."""
    with np.errstate(all="ignore"):
        if is_sparse(X):   # E[x²] - E[x]², the zeros included
            mean = np.asarray(X.mean(axis=0)).ravel()
            var = np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean * mean, 0.0)
        else:
            mean = np.nanmean(X, axis=0)
            var = np.nan_to_num(np.nanvar(X, axis=0), nan=0.0)
        if by == "variance":
            return var
        return np.where(mean > 0, var / np.where(mean > 0, mean, 1.0), -np.inf)


def top_columns(X, keep: np.ndarray, numeric: np.ndarray, k: int, by: str) -> np.ndarray:
    """A mask of the columns kept: the ``k`` numeric columns among ``keep`` with the highest
    score (ties to the earlier column), and every non-numeric one."""
    candidates = np.flatnonzero(keep & numeric)
    scores = column_scores(X[:, candidates], by)
    order = candidates[np.argsort(-scores, kind="stable")][:k]
    mask = ~numeric.copy()
    mask[order] = True
    return mask


@hookimpl
def register_preprocessors():
    return [SelectColumns]
