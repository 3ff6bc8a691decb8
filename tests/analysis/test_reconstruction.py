"""Reconstruction against M (seed 002's figure): the PCA identities, and the view on the digits."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.algorithms.conformance import CancelAfter
from manifold_studio.algorithms import FitCancelled
from manifold_studio.errors import DataError
from manifold_studio.analysis.reconstruction import (
    component_counts, image_shape, reconstruction_series, unexplained_variance,
)


def test_counts_follow_the_seed_and_the_data():
    assert component_counts(1000, 64) == [1, 3, 10, 20, 50]
    assert component_counts(1000, 784, own=2) == [1, 2, 3, 10, 20, 50, 200]
    assert component_counts(5, 64) == [1, 3]


def test_pca_error_is_the_share_of_the_discarded_eigenvalues():
    X = ms.load_data("sample:digits", n_samples=400).X
    series = reconstruction_series(ms.get_algorithm("pca", n_components=2), X)
    assert series.counts == [1, 2, 3, 10, 20, 50]
    eig = np.linalg.eigvalsh(np.cov(X, rowvar=False))[::-1]
    for m, err in zip(series.counts, series.errors):
        assert err == pytest.approx(eig[m:].sum() / eig.sum(), rel=1e-8, abs=1e-12)
    assert np.all(np.diff(series.errors) < 0)  # more components never lose more
    # the shown rows are the first rows used, reconstructed through each M
    pca = ms.get_algorithm("pca", n_components=10).fit(X)
    np.testing.assert_allclose(series.reconstructions[3], pca.inverse_transform(pca.embedding_[:8]), atol=1e-9)
    np.testing.assert_array_equal(series.originals, X[:8])


def test_all_components_reconstruct_exactly_and_the_mean_explains_nothing():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    series = reconstruction_series(ms.get_algorithm("pca"), X, counts=(4,))
    assert series.counts == [2, 4]  # the run's own count is always included
    assert series.errors[-1] == pytest.approx(0.0, abs=1e-12)
    assert unexplained_variance(X, np.tile(X.mean(axis=0), (50, 1))) == pytest.approx(1.0)


def test_large_data_are_sampled_and_cancel_stops():
    X = np.random.default_rng(1).normal(size=(3000, 20))
    series = reconstruction_series(ms.get_algorithm("pca"), X, max_points=500, counts=(1, 3))
    assert "500 random rows of 3,000" in series.notes[0] and series.originals.shape == (8, 20)
    with pytest.raises(FitCancelled):
        reconstruction_series(ms.get_algorithm("pca"), X, progress=CancelAfter(1))


def test_a_method_that_cannot_decode_is_refused_by_name():
    with pytest.raises(DataError, match="Isomap cannot reconstruct"):
        reconstruction_series(ms.get_algorithm("isomap"), np.zeros((10, 3)))


def test_image_shapes():
    assert image_shape(np.zeros((3, 8, 8)), 64) == (8, 8)
    assert image_shape(np.zeros((3, 4, 5)), 60) == (4, 5, 3)
    assert image_shape(None, 64) is None and image_shape(np.zeros((3, 8, 8)), 10) is None


def test_view_draws_originals_reconstructions_and_eigen_images(qtbot, make_window, fresh_host):
    from gui_helpers import wait_idle, wait_last_run

    w = make_window(fresh_host)
    w.load_source("sample:digits", {"n_samples": 300})
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {"n_components": 5})
    run = wait_last_run(qtbot, w)
    view = w.views["reconstruction"]
    assert view.applies_to(run) and view.compute_button.isEnabled()
    with qtbot.waitSignal(view.seriesReady, timeout=20_000) as blocker:
        view.compute()
    series = blocker.args[0]
    assert series.counts == [1, 3, 5, 10, 20, 50]
    # one row of originals and one per M, 8 pictures each (plus the row labels)
    pictures = [i for i in view.grid.ci.items if hasattr(i, "addedItems")]
    assert len(pictures) == 8 * (1 + len(series.counts))
    assert series.components.shape == (5, 64)
    assert len([i for i in view.components_grid.ci.items if hasattr(i, "addedItems")]) == 5
    assert "Reconstruction of" in w.message_log.toPlainText()
    # a method without inverse_transform: the view does not apply
    w.run_algorithm("isomap", {})
    run2 = wait_last_run(qtbot, w)
    assert not view.applies_to(run2)
