"""The legend's occupancy grid (issue 33: a million-point map places its legend without a
reduction over every point on the window's thread)."""
import numpy as np

from manifold_studio.render.legend_corner import (covered_points, emptiest_corner, make_room,
                                                  occupied_cell_corners)


def _points():
    rng = np.random.default_rng(3)
    return np.vstack([rng.normal(0, 1, (30_000, 2)), rng.uniform([2, 2], [4, 3], (5_000, 2))])


def test_grid_corners_cover_every_point_conservatively():
    xy = _points()
    corners = occupied_cell_corners(xy, bins=64)
    assert len(corners) <= 65 * 65
    # every point lies in a cell whose four corners are all listed
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    step = (hi - lo) / 64
    cell = np.minimum(((xy - lo) / step).astype(int), 63)
    keys = set(map(tuple, np.rint((corners - lo) / step).astype(int)))
    for di in (0, 1):
        for dj in (0, 1):
            assert all((i + di, j + dj) in keys for i, j in cell[::97])
    # the grid spans exactly the points' bounding box
    np.testing.assert_allclose(corners.min(axis=0), lo)
    np.testing.assert_allclose(corners.max(axis=0), hi)


def test_room_made_from_the_grid_frees_every_point_and_is_at_most_a_cell_larger():
    xy = _points()
    corners = occupied_cell_corners(xy, bins=128)
    ranges = ((-4.0, 4.5), (-4.0, 3.5))
    box = (0.3, 0.25)
    corner = emptiest_corner(corners, *ranges, box)
    assert covered_points(xy, *ranges, box, corner) > 0
    xr, yr = make_room(corners, *ranges, box, corner)
    assert covered_points(xy, xr, yr, box, corner) == 0       # conservative: no real point covered
    exact_x, exact_y = make_room(xy, *ranges, box, corner)
    span = xy.max(axis=0) - xy.min(axis=0)
    grown = (xr[1] - xr[0]) - (exact_x[1] - exact_x[0]), (yr[1] - yr[0]) - (exact_y[1] - exact_y[0])
    assert -1e-9 <= max(grown) <= 2 * span.max() / 128 + 0.05 * max(span)


def test_non_finite_and_empty_points():
    assert occupied_cell_corners(np.empty((0, 2))).shape == (0, 2)
    xy = np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0]])
    corners = occupied_cell_corners(xy, bins=4)
    assert np.isfinite(corners).all() and len(corners) == 8
