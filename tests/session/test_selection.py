"""Qt-free selection operations (manifold_studio.session.selection): set operations, rectangle and
lasso geometry, provenance lines and labelling rows."""
import time

import numpy as np
import pytest
from geometry import brute_inside  # noqa: E402

from manifold_studio.errors import InvalidParameterError
from manifold_studio.session import selection as ops


def test_modes_combine_masks():
    cur = ops.as_mask([1, 2], 5)
    assert ops.combine(cur, [2, 3], 5, ops.REPLACE).nonzero()[0].tolist() == [2, 3]
    assert ops.combine(cur, [2, 3], 5, ops.ADD).nonzero()[0].tolist() == [1, 2, 3]
    assert ops.combine(cur, [2, 3], 5, ops.REMOVE).nonzero()[0].tolist() == [1]
    assert ops.combine(cur, [2, 3], 5, ops.TOGGLE).nonzero()[0].tolist() == [1, 3]
    assert ops.describe(None) == ops.describe(np.zeros(3, bool)) == "nothing selected"
    assert ops.describe(ops.as_mask([0], 1500)) == "1 of 1,500 rows selected"
    with pytest.raises(InvalidParameterError, match="0..4"):
        ops.as_mask([5], 5)
    with pytest.raises(InvalidParameterError, match="mode"):
        ops.combine(cur, [1], 5, "xor")


def test_rectangle_includes_edges_and_any_corner_order():
    xy = np.array([[0, 0], [1, 1], [2, 2], [1, 3]], float)
    assert ops.points_in_rect(xy, 2, 2, 0.5, 0.5).tolist() == [1, 2]
    assert ops.points_in_rect(np.zeros((0, 2)), 0, 0, 1, 1).size == 0


def test_lasso_equals_an_independent_computation(rng):
    xy = rng.normal(size=(20_000, 2))
    t = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    r = 0.8 + 0.3 * np.sin(5 * t)  # a star: concave
    star = np.c_[r * np.cos(t), r * np.sin(t)]
    got = ops.points_in_polygon(xy, star)
    assert np.array_equal(got, brute_inside(xy, star)) and 0 < got.size < len(xy)
    assert np.all(np.diff(got) > 0)  # sorted, no duplicates
    # a self-intersecting "bow tie" follows the even-odd rule, as the brute force does
    bow = np.array([[-1, -1], [1, 1], [1, -1], [-1, 1]], float)
    assert np.array_equal(ops.points_in_polygon(xy, bow), brute_inside(xy, bow))
    # a closed path (last vertex = first) is the same polygon
    assert np.array_equal(ops.points_in_polygon(xy, np.vstack([star, star[:1]])), got)


def test_degenerate_lassos_select_nothing(rng):
    xy = rng.normal(size=(100, 2))
    assert ops.points_in_polygon(xy, [[0, 0], [1, 1]]).size == 0  # two vertices: a line
    assert ops.points_in_polygon(xy, np.zeros((0, 2))).size == 0
    assert ops.points_in_polygon(xy, [[0, 0], [1, np.nan], [1, 0]]).size == 0
    assert ops.points_in_polygon(xy, [[5, 5], [6, 5], [6, 6]]).size == 0  # far from every point


def test_lasso_on_a_million_points_is_fast(rng):
    """Not a timing assertion on a shared machine: printed, and bounded loosely."""
    xy = rng.normal(size=(1_000_000, 2))
    t = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    poly = np.c_[0.459 * np.cos(t), 0.459 * np.sin(t)]  # 10 % of a standard normal cloud
    best = min(_timed(ops.points_in_polygon, xy, poly)[1] for _ in range(3))
    got = ops.points_in_polygon(xy, poly)
    assert 95_000 < got.size < 105_000
    inside = np.hypot(xy[got, 0], xy[got, 1])
    assert inside.max() <= 0.459 + 1e-12
    print(f"\nlasso (400 vertices) on 1,000,000 points: {got.size:,} selected in {best * 1000:.1f} ms")
    assert best < 2.0


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def test_provenance_lines():
    assert ops.provenance([3], "iris") == "row 3 of iris"
    line = ops.provenance(np.arange(10) * 2, "iris", "selected on the map of run #2")
    assert line == "rows 0, 2, 4, 6, 8, 10, … (10 rows) of iris (selected on the map of run #2)"


def test_label_rows_creates_edits_and_converts():
    # no labels: a new text column, unlabelled rows ''
    labels, value, existed = ops.label_rows(None, [1, 3], "odd", 5)
    assert labels.tolist() == ["", "odd", "", "odd", ""] and value == "odd" and not existed
    # integer labels and a number: stays integer, joins an existing class
    ints = np.array([0, 0, 1, 1, 2])
    labels, value, existed = ops.label_rows(ints, [0], "2", 5)
    assert labels.dtype.kind == "i" and labels.tolist() == [2, 0, 1, 1, 2] and existed
    assert ints.tolist() == [0, 0, 1, 1, 2]  # the input is not modified
    # integer labels and a word: the labels become text
    labels, value, existed = ops.label_rows(ints, [4], "noise", 5)
    assert labels.tolist() == ["0", "0", "1", "1", "noise"] and not existed
    # fixed-width strings do not truncate a longer label
    short = np.array(["a", "b", "a"])
    labels, _v, _e = ops.label_rows(short, [1], "a much longer label", 3)
    assert labels[1] == "a much longer label"
