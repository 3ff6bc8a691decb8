"""Map coordinates (Qt-free): what the map view draws and what cluster centres are placed in."""
from __future__ import annotations

import numpy as np


def as_map_xy(values) -> np.ndarray:
    """``values`` as an (n, 2) float array of map coordinates: the first two columns, a
    one-dimensional map (a vector or one column) laid out on the x axis with y = 0."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if values.shape[1] == 1:
        return np.column_stack([values[:, 0], np.zeros(len(values))])
    return values[:, :2]
