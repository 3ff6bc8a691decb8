"""The window animates UMAP while it optimises, and Cancel keeps the map reached (issue 24)."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import animation_stalls, cancel_mid_animation, discovered_host, wait_last_run, warm_numba

pytest.importorskip("pytestqt")


@pytest.fixture(scope="module")
def host():
    return discovered_host(("umap",), ("iris",))


@pytest.fixture(scope="module")
def warm(host):
    return warm_numba(host, "umap", n_neighbors=10, n_epochs=5, random_state=0)


def _window_with_iris(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    return w


def test_umap_map_is_animated_while_it_optimises(qtbot, make_window, host, warm):
    w = _window_with_iris(qtbot, make_window, host)

    def check(run, drawn):
        assert run.embedding.shape == (150, 2) and run.estimator.n_iter_ == 6000

    # the event loop kept running while the maps were drawn (never stalled > 100 ms) up to the
    # result's arrival
    stalls = animation_stalls(qtbot, w, "umap", {"n_neighbors": 10, "n_epochs": 6000, "random_state": 0}, check)
    assert min(s for s, _ in stalls) <= 100, stalls


def test_cancel_keeps_the_current_umap_map_marked_stopped_early(qtbot, make_window, host, warm):
    w = _window_with_iris(qtbot, make_window, host)
    run = cancel_mid_animation(qtbot, w, "umap", {"n_neighbors": 10, "n_epochs": 10_000_000, "random_state": 0})
    est = run.estimator
    assert run.meta["stopped_early"] and est.stopped_early_ and 0 < est.n_iter_ < 10_000_000
    assert run.embedding.shape == (150, 2) and np.allclose(run.embedding, est.embedding_)
    assert np.all(np.isfinite(run.embedding))
    assert "stopped early" in w.map_view.title_label.text()
    # the map reached is kept and extends
    assert est.extend(np.array([[5.0, 3.4, 1.5, 0.2], [6.5, 3.0, 5.5, 1.8]])).shape == (2, 2)
