"""An independent point-in-polygon test, shared by the selection tests (the product's lasso
is checked against it)."""
import numpy as np


def brute_inside(xy, poly):
    """Independent even-odd test: every point against every edge at once (n × m)."""
    x, y = xy[:, 0][:, None], xy[:, 1][:, None]
    xi, yi = poly[:, 0][None], poly[:, 1][None]
    xj, yj = np.roll(xi, 1, axis=1), np.roll(yi, 1, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        crosses = ((yi > y) != (yj > y)) & (x < (xj - xi) * (y - yi) / (yj - yi) + xi)
    return np.flatnonzero(crosses.sum(axis=1) % 2 == 1)
