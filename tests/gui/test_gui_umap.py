"""The window animates UMAP while it optimises, and Cancel keeps the map reached (issue 24)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from gui_helpers import DrawnMaps, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import DONE  # noqa: E402


@pytest.fixture(scope="module")
def host():
    h = PluginHost().discover()
    h.failures.clear()
    if "umap" not in h.algorithms or "iris" not in h.samples:
        pytest.skip("the umap or sample data plugin is not installed")
    return h


@pytest.fixture(scope="module")
def warm(host):
    """numba's one-off start (loading LLVM and the compiled UMAP loops, with the GIL held for a
    few hundred ms) happens once per process, off the measured animation: a tiny fit first."""
    from manifold_studio.session.model import Session

    session = Session(host)
    session.load("sample:iris")
    session.run("umap", n_neighbors=10, n_epochs=5, random_state=0)
    return True


def _window_with_iris(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w, DONE)
    return w


#: animations measured at most (a busy shared machine rarely stalls two runs in a row; a stall
#: the code causes recurs in each)
ATTEMPTS = 3


def test_umap_map_is_animated_while_it_optimises(qtbot, make_window, host, warm, monkeypatch):
    w = _window_with_iris(qtbot, make_window, host)
    arrived = []
    complete_run = w.session.complete_run
    monkeypatch.setattr(w.session, "complete_run",
                        lambda *a, **k: (arrived.append(time.perf_counter()), complete_run(*a, **k))[1])
    stalls = []
    for _attempt in range(ATTEMPTS):
        drawn = DrawnMaps(w.map_view)
        run = drawn.run = w.run_algorithm("umap", {"n_neighbors": 10, "n_epochs": 6000, "random_state": 0})
        qtbot.waitUntil(lambda: run.status == DONE, timeout=60_000)
        drawn.stop()
        wait_idle(qtbot, w)
        assert len(drawn.maps) >= 3, len(drawn.maps)
        # successive stages of the optimisation
        assert not np.allclose(drawn.maps[0], drawn.maps[-1])
        assert len({m.tobytes() for m in drawn.maps}) == len(drawn.maps)
        assert run.embedding.shape == (150, 2) and run.estimator.n_iter_ == 6000
        # the event loop kept running while the maps were drawn (never stalled > 100 ms) up to the
        # result's arrival; the first 200 ms after the first map (drawn in full) are left out
        end = arrived[-1]
        stall = drawn.meter.max_stall_ms(skip_s=0.2, until=end)
        stalls.append((round(stall), drawn.meter.worst(3, until=end)))
        print(f"longest event-loop stall during the UMAP animation: {stall:.0f} ms over "
              f"{len(drawn.meter.ticks)} ticks, {len(drawn.maps)} maps drawn")
        if stall <= 100:
            break
    assert min(s for s, _ in stalls) <= 100, stalls


def test_cancel_keeps_the_current_umap_map_marked_stopped_early(qtbot, make_window, host, warm):
    w = _window_with_iris(qtbot, make_window, host)
    drawn = DrawnMaps(w.map_view)
    run = drawn.run = w.run_algorithm("umap", {"n_neighbors": 10, "n_epochs": 10_000_000, "random_state": 0})
    qtbot.waitUntil(lambda: len(drawn.maps) >= 2, timeout=30_000)
    qtbot.mouseClick(w.run_controls.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: run.status == DONE, timeout=5000)
    drawn.stop()
    est = run.estimator
    assert run.meta["stopped_early"] and est.stopped_early_ and 0 < est.n_iter_ < 10_000_000
    assert run.embedding.shape == (150, 2) and np.allclose(run.embedding, est.embedding_)
    assert np.all(np.isfinite(run.embedding))
    assert "stopped early" in w.map_view.title_label.text()
    # the map reached is kept and extends
    assert est.extend(np.array([[5.0, 3.4, 1.5, 0.2], [6.5, 3.0, 5.5, 1.8]])).shape == (2, 2)
