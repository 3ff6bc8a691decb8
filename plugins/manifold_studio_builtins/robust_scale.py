"""Preparation step ``robust_scale``: (x - median) / interquartile range, per numeric column."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Bool, Float
from manifold_studio.algorithms.preprocessing import NumericScaler
from manifold_studio.hookspecs import hookimpl


class RobustScale(NumericScaler):
    id = "robust_scale"
    name = "Robust scaling (median / IQR)"
    help = ("Centres every numeric column on its median and divides it by its interquartile range "
            "(the 75th minus the 25th percentile, as scikit-learn's RobustScaler): a few extreme values "
            "do not set the scale. Missing values are ignored when fitting and stay missing; "
            "categorical columns are left as they are.")
    params = (
        Bool("with_centering", True, "Subtract the column median."),
        Bool("with_scaling", True, "Divide by the column's quantile range."),
        Float("quantile_low", 25.0, "Lower percentile of the range.", low=0.0, high=100.0, high_open=True),
        Float("quantile_high", 75.0, "Upper percentile of the range.", low=0.0, high=100.0, low_open=True),
    )

    def _center_scale(self, X):
        p = self._p
        if p["quantile_low"] >= p["quantile_high"]:
            raise self._error(f"quantile_low ({p['quantile_low']:g}) must be below quantile_high "
                              f"({p['quantile_high']:g}).")
        d = X.shape[1]
        center = np.nanmedian(X, axis=0) if p["with_centering"] else np.zeros(d)
        if p["with_scaling"]:
            lo, hi = np.nanpercentile(X, [p["quantile_low"], p["quantile_high"]], axis=0)
            scale = hi - lo
        else:
            scale = np.ones(d)
        return center, scale


@hookimpl
def register_preprocessors():
    return [RobustScale]
