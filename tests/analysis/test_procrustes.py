"""Orthogonal Procrustes alignment (manifold_studio.analysis.procrustes): exact recovery of a similarity
transform, agreement with scipy.spatial.procrustes, shared rows, padding and clear errors."""

import numpy as np
import pytest
from scipy.spatial import procrustes as scipy_procrustes
from scipy.stats import special_ortho_group

from manifold_studio.errors import DataError
from manifold_studio.analysis.procrustes import align, procrustes_residual, shared_rows


def similarity(k, rng, scale=2.5, reflect=True):
    """A random rotation + reflection + scale + translation of R^k, as a function."""
    R = special_ortho_group.rvs(k, random_state=int(rng.integers(1 << 30)))
    if reflect:
        R = R @ np.diag([-1.0] + [1.0] * (k - 1))
    t = rng.normal(size=k) * 10
    return lambda P: scale * P @ R + t


def similar_copy(X, rng, scale=2.5, reflect=True):
    """X rotated, reflected, scaled and translated."""
    return similarity(X.shape[1], rng, scale, reflect)(X)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_rotated_reflected_scaled_translated_copy_aligns_exactly(rng, k):
    X = rng.normal(size=(300, k))
    move = similarity(k, rng)
    Y = move(X)
    res = align(X, Y)
    assert np.abs(res.aligned - X).max() < 1e-9
    assert res.disparity < 1e-18 and res.rms < 1e-9
    assert res.transform.is_reflection
    assert res.transform.scale == pytest.approx(1 / 2.5, rel=1e-12)
    # the transform moves any further point the same way (it is the whole map's transform)
    Z = rng.normal(size=(7, k)) * 5
    assert np.abs(res.transform.apply(move(Z)) - Z).max() < 1e-9


def test_transform_applies_to_points_that_were_not_in_the_fit(rng):
    X = rng.normal(size=(200, 2))
    Y = similar_copy(X, rng, scale=0.3)
    fit_on = np.arange(50)  # the reference run has only the first 50 rows
    res = align(X[fit_on], Y, reference_rows=fit_on, source_rows=np.arange(200))
    assert res.n_shared == 50
    assert np.abs(res.aligned - X).max() < 1e-9  # all 200 points, fitted on 50


def test_disparity_agrees_with_scipy(rng):
    X = rng.normal(size=(120, 2))
    Y = similar_copy(X, rng) + rng.normal(scale=0.4, size=X.shape)
    _a, _b, d_scipy = scipy_procrustes(X, Y)
    res = align(X, Y)
    assert res.disparity == pytest.approx(d_scipy, rel=1e-10)
    assert 1e-3 < res.disparity < 0.5
    # RMS in reference units: sqrt(mean squared distance) of the shared points
    rms = np.sqrt(np.mean(np.sum((res.aligned - X) ** 2, axis=1)))
    assert res.rms == pytest.approx(rms, rel=1e-10)
    assert procrustes_residual(X, Y) == pytest.approx(np.sqrt(d_scipy), rel=1e-10)


def test_without_scale_the_disparity_is_larger_and_scale_is_one(rng):
    X = rng.normal(size=(100, 2))
    Y = similar_copy(X, rng, scale=3.0)
    res = align(X, Y, scale=False)
    assert res.transform.scale == 1.0
    assert res.disparity > 1.0  # three times too large a map cannot fit without scaling
    assert np.abs(align(X, Y / 3.0, scale=False).aligned - X).max() < 1e-9


def test_a_random_map_has_a_large_disparity(rng):
    X = rng.normal(size=(500, 2))
    res = align(X, rng.normal(size=(500, 2)))
    assert res.disparity > 0.9


def test_different_dimensions_are_padded(rng):
    X3 = rng.normal(size=(80, 3)) * [3, 2, 1]
    Y2 = X3[:, :2] @ np.array([[0, 1], [1, 0]])  # a reflected 2-D projection
    res = align(X3, Y2)
    assert res.aligned.shape == (80, 3)
    Xc = X3 - X3.mean(axis=0)
    assert np.linalg.matrix_rank(res.aligned - res.aligned.mean(axis=0), tol=1e-9) == 2  # a plane in 3-D
    # at least as good as dropping the third axis (the best plane may tilt a little towards it)
    assert res.disparity <= np.sum(Xc[:, 2] ** 2) / np.sum(Xc ** 2) + 1e-12
    # 3-D source onto a 2-D reference: the first two coordinates match when the source is an embedding of it
    X2 = rng.normal(size=(80, 2))
    Y3 = np.column_stack([X2, np.zeros(80)]) @ special_ortho_group.rvs(3, random_state=1)
    res = align(X2, Y3)
    assert res.aligned.shape == (80, 3)
    assert np.abs(res.aligned[:, :2] - X2).max() < 1e-9 and np.abs(res.aligned[:, 2]).max() < 1e-9


def test_runs_with_different_point_sets_align_on_shared_rows(rng):
    X = rng.normal(size=(300, 2))
    Y = similar_copy(X, rng)
    ref_rows = np.arange(0, 200)          # reference fitted on rows 0..199
    src_rows = rng.permutation(300)[:150]  # the other run on 150 rows in another order
    res = align(X[ref_rows], Y[src_rows], reference_rows=ref_rows, source_rows=src_rows)
    common = np.intersect1d(ref_rows, src_rows)
    assert res.n_shared == len(common)
    assert np.array_equal(ref_rows[res.reference_pos], src_rows[res.source_pos])
    assert np.abs(res.aligned - X[src_rows]).max() < 1e-9


def test_shared_rows():
    i, j = shared_rows([5, 1, 9, 3], [3, 7, 5])
    assert list(i) == [3, 0] and list(j) == [0, 2]
    i, j = shared_rows([0, 1, 2], [0, 1, 2])
    assert list(i) == list(j) == [0, 1, 2]


def test_fewer_than_three_shared_rows_is_a_clear_error(rng):
    X = rng.normal(size=(10, 2))
    with pytest.raises(DataError, match="share 2 point.*at least 3"):
        align(X, X, reference_rows=np.arange(10), source_rows=np.r_[8, 9, np.arange(10, 18)])
    with pytest.raises(DataError, match="no spread"):
        align(np.ones((10, 2)), X)
    with pytest.raises(DataError, match="data-set row"):
        align(X, X, reference_rows=np.arange(9))


def test_non_finite_points_are_left_out_of_the_fit(rng):
    X = rng.normal(size=(50, 2))
    Y = similar_copy(X, rng)
    Y[4] = np.nan
    res = align(X, Y)
    assert res.n_shared == 49 and np.isnan(res.aligned[4]).all()
    assert np.abs(np.delete(res.aligned, 4, axis=0) - np.delete(X, 4, axis=0)).max() < 1e-9


def test_a_million_points_align(rng):
    """Exact at scale (its speed, about 0.1 s here, is not a test's business)."""
    X = rng.normal(size=(1_000_000, 2))
    Y = similar_copy(X, rng)
    res = align(X, Y)
    assert res.rms < 1e-9
