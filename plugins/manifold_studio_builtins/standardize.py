"""Preparation step ``standardize``: z-scores, (x - mean) / standard deviation, per numeric column."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Bool
from manifold_studio.algorithms.preprocessing import NumericScaler
from manifold_studio.hookspecs import hookimpl


class Standardize(NumericScaler):
    id = "standardize"
    name = "Standardize (z-score)"
    help = ("Centres every numeric column on its mean and divides it by its standard deviation (the "
            "population one, as scikit-learn's StandardScaler), so that a column in thousands does not "
            "outweigh a column in units in every distance. Missing values are ignored when fitting and "
            "stay missing; a constant column is only centred. Categorical columns are left as they are.")
    params = (
        Bool("with_mean", True, "Subtract the column mean."),
        Bool("with_std", True, "Divide by the column standard deviation."),
    )

    def _center_scale(self, X):
        d = X.shape[1]
        center = np.nanmean(X, axis=0) if self._p["with_mean"] else np.zeros(d)
        scale = np.nanstd(X, axis=0) if self._p["with_std"] else np.ones(d)
        return center, scale


@hookimpl
def register_preprocessors():
    return [Standardize]
