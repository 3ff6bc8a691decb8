"""Where a legend covers the fewest points: the emptiest corner of a plot (Qt-free)."""
from __future__ import annotations

import numpy as np

#: (horizontal, vertical) anchor of each corner: 0 = left / top, 1 = right / bottom
CORNERS = ((1, 0), (0, 0), (1, 1), (0, 1))
MAX_POINTS = 20_000  # a sample is enough to compare corners


def emptiest_corner(xy: np.ndarray, x_range, y_range, box_fraction) -> tuple[int, int]:
    """The corner (see :data:`CORNERS`, top-right first on ties) whose box of ``box_fraction``
    (width, height: the legend's size as fractions of the plot's) holds the fewest of the points
    ``xy`` shown in the view ``x_range`` × ``y_range`` (data units, y up)."""
    xy = np.asarray(xy, dtype=float)
    if len(xy) > MAX_POINTS:
        xy = xy[np.linspace(0, len(xy) - 1, MAX_POINTS).astype(np.intp)]
    (x0, x1), (y0, y1) = x_range, y_range
    fw, fh = (min(max(float(f), 0.0), 1.0) for f in box_fraction)
    bw, bh = (x1 - x0) * fw, (y1 - y0) * fh
    best, best_count = CORNERS[0], None
    for cx, cy in CORNERS:
        left = x1 - bw if cx else x0
        top = y1 if cy == 0 else y0 + bh   # pixel top is data y1
        inside = ((xy[:, 0] >= left) & (xy[:, 0] <= left + bw) & (xy[:, 1] <= top) & (xy[:, 1] >= top - bh))
        count = int(np.count_nonzero(inside))
        if best_count is None or count < best_count:
            best, best_count = (cx, cy), count
    return best
