"""Preparation step ``minmax``: every numeric column mapped linearly onto [feature_min, feature_max]."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Float
from manifold_studio.algorithms.preprocessing import NumericScaler
from manifold_studio.hookspecs import hookimpl


class MinMax(NumericScaler):
    id = "minmax"
    name = "Min-max scaling"
    help = ("Maps every numeric column linearly so that its training minimum becomes feature_min and "
            "its maximum feature_max (as scikit-learn's MinMaxScaler); new data may fall outside. A "
            "constant column becomes feature_min. Missing values stay missing; categorical columns "
            "are left as they are.")
    params = (
        Float("feature_min", 0.0, "The value of each column's training minimum."),
        Float("feature_max", 1.0, "The value of each column's training maximum (above feature_min)."),
    )

    def _center_scale(self, X):
        lo_out, hi_out = self._p["feature_min"], self._p["feature_max"]
        if not lo_out < hi_out:
            raise self._error(f"feature_min ({lo_out:g}) must be below feature_max ({hi_out:g}).")
        lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
        scale = (hi - lo) / (hi_out - lo_out)
        scale = np.where(np.abs(scale) < 10 * np.finfo(np.float64).eps, 1.0, scale)
        return lo - lo_out * scale, scale


@hookimpl
def register_preprocessors():
    return [MinMax]
