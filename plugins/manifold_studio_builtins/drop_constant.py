"""Preparation step ``drop_constant``: leave out the columns that do not vary."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Float
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class DropConstant(Preprocessor):
    id = "drop_constant"
    name = "Drop constant columns"
    handles_categorical = True
    help = ("Leaves out every column whose training values do not vary (largest minus smallest at most "
            "tolerance, missing values ignored) and every column with no value at all: they carry no "
            "information and make scaling divide by zero. Refuses when no column would be left.")
    params = (Float("tolerance", 0.0, "A column whose range (max - min) is at most this is constant.", low=0.0),)

    def _fit(self, X):
        with np.errstate(all="ignore"):
            present = (~np.isnan(X)).any(axis=0)
            spread = np.where(present, np.nanmax(np.where(present, X, 0.0), axis=0)
                              - np.nanmin(np.where(present, X, 0.0), axis=0), 0.0)
        keep = present & (spread > self._p["tolerance"])
        if not keep.any():
            raise self._error(f"every column is constant ({', '.join(repr(c) for c in self.columns_in_)}): "
                              "nothing would be left.")
        self.keep_ = np.flatnonzero(keep)
        self.dropped_ = [c for c, k in zip(self.columns_in_, keep) if not k]
        self.columns_out_ = [self.columns_in_[j] for j in self.keep_]
        self.categories_out_ = {c: v for c, v in self.categories_in_.items() if c in self.columns_out_}

    def _transform(self, X):
        return X[:, np.asarray(self.keep_, dtype=np.intp)]


@hookimpl
def register_preprocessors():
    return [DropConstant]
