"""The window stays responsive while algorithms fit (issue 11, item 8; issue 10).

A 10 ms timer in the main thread (:class:`StallMeter`) records how long the event loop could not
turn while each algorithm fitted 3,000 points the way the window runs it (in its worker thread;
the GIL holders, on that many rows, in a separate process): the fit (until the result reaches the
window) must never stall it 100 ms or more. ``benchmarks/bench_ui.py``
measures the same at 20,000 points against the 50 ms target, and the completion (every view
drawing the result) separately.

numba's one-off start (loading LLVM and the cached compiled code, with the GIL held) is done
once for the module before measuring: it is the cost of the first fit of a session, not of a fit.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.run_controls import ISOLATE_GIL_ROWS  # noqa: E402
from benchmarks.stall_meter import StallMeter, measure_fit, spin_until  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import DONE
from manifold_studio.session.model import Session

WINDOW_DIALOGS = False
N_POINTS = 3_000
MAX_STALL_MS = 100.0

#: parameters that keep each fit at 3,000 points to a few seconds
PARAMS = {
    "pca": {}, "kernel_pca": {}, "isomap": {"n_neighbors": 10}, "lle": {"n_neighbors": 10},
    "laplacian_eigenmaps": {"n_neighbors": 10},
    "tsne": {"max_iter": 300, "random_state": 0}, "kmeans": {"n_clusters": 10, "random_state": 0},
    "gmm": {"n_components": 10, "random_state": 0}, "hierarchical": {"n_clusters": 10},
    "svm": {}, "mlp": {"max_iter": 30, "random_state": 0},
    "autoencoder": {"max_iter": 20, "random_state": 0}, "nmf": {"random_state": 0},
    "umap": {"n_epochs": 200, "random_state": 0},
}

#: measurements per algorithm at most: a stall the code causes recurs in every one; a busy
#: shared machine (other processes on the 2 cores multiply the wall time of the main thread's
#: work) rarely stalls the same fit twice
ATTEMPTS = 3

#: fits whose library calls hold the GIL for long (scipy's linkage, dijkstra, sparse LU): their
#: classes say so (``holds_gil``) and the window runs them in a separate process by default on
#: data of ISOLATE_GIL_ROWS rows or more — so the window never freezes for them either
GIL_HOLDERS = ("hierarchical", "isomap", "laplacian_eigenmaps", "lle", "umap")


def blobs(n: int, seed: int = 0) -> Dataset:
    """10 Gaussian blobs in 10 dimensions, non-negative (for nmf), labelled."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=6.0, size=(10, 10))
    y = rng.integers(0, 10, n)
    X = np.abs(centers[y] + rng.normal(size=(n, 10)))
    return Dataset(f"blobs{n}", X, y)


@pytest.fixture(scope="module")
def host():
    h = PluginHost().discover()
    h.failures.clear()
    return h


@pytest.fixture(scope="module")
def warm(host):
    """Every algorithm fitted once on 200 points, off the measurement (numba's start)."""
    session = Session(host)
    session.add_dataset(blobs(200, seed=1))
    for algo, params in PARAMS.items():
        if algo in host.algorithms:
            session.run(algo, **dict(params, **({"max_iter": 2} if "max_iter" in params else {})))
    return True


def test_stall_meter_measures_a_blocked_event_loop(qtbot):
    """The meter itself: a 150 ms busy slot is a ~150 ms stall; an idle loop has none."""
    import time

    from PySide6.QtCore import QTimer

    meter = StallMeter().start()
    spin_until(lambda: False, 0.2)
    idle = meter.max_stall_ms()
    mark = time.perf_counter()
    QTimer.singleShot(0, lambda: time.sleep(0.15))
    spin_until(lambda: False, 0.2)
    meter.stop()
    blocked = meter.max_stall_ms(since=mark)
    assert 140 <= blocked <= 400, blocked
    assert idle < blocked


def fit_without_stalls(w, algorithm_id):
    """Fit ``algorithm_id`` on the window's N_POINTS rows, in the way the window runs it, up to
    ATTEMPTS times while the event loop is metered; the best attempt must not stall it
    MAX_STALL_MS or more."""
    results = []
    for _attempt in range(ATTEMPTS):
        # every attempt starts where a user starts: the map of the data set's PCA (the window
        # fits PCA when a data set is loaded), not the previous attempt's result
        w.run_algorithm("pca", {})
        spin_until(lambda: not w.busy, 20)
        spin_until(lambda: False, 0.2)
        result = measure_fit(w, algorithm_id, PARAMS[algorithm_id], timeout_s=60)
        results.append(result)
        print(f"{algorithm_id}: {result.seconds:.1f} s, longest stall during the fit {result.fit_ms:.0f} ms "
              f"[{result.fit_worst}], at completion {result.completion_ms:.0f} ms [{result.completion_worst}]")
        assert result.status == DONE
        run = w.session.current_run
        assert run.algorithm_id == algorithm_id and run.n_points == N_POINTS
        assert w.map_view.point_count() == N_POINTS
        if result.fit_ms < MAX_STALL_MS:
            break
    best = min(results, key=lambda r: r.fit_ms)
    assert best.fit_ms < MAX_STALL_MS, [(r.fit_ms, r.fit_worst) for r in results]


# the GIL holders run in a separate process on N_POINTS rows: measured (once) in the next test
@pytest.mark.parametrize("algorithm_id", [a for a in PARAMS if a not in GIL_HOLDERS])
def test_fit_never_stalls_the_event_loop(qtbot, make_window, host, warm, algorithm_id):
    if algorithm_id not in host.algorithms:
        pytest.skip(f"{algorithm_id} is not installed")
    w = make_window(host, initial_algorithm=None)
    w.session.add_dataset(blobs(N_POINTS))
    spin_until(lambda: False, 0.3)  # the window's first layout and paint
    assert not w.run_controls.isolated_for(algorithm_id)  # in the window's worker thread
    fit_without_stalls(w, algorithm_id)


@pytest.mark.parametrize("algorithm_id", GIL_HOLDERS)
def test_gil_holding_fits_run_in_a_separate_process_by_default(qtbot, make_window, host, algorithm_id):
    """The fits that would hold the GIL for long in the window's process declare it
    (``holds_gil``): on large data the Run panel's "in a separate process" is on by default and
    the event loop stays free; on small data they run in the window's process."""
    if algorithm_id not in host.algorithms:
        pytest.skip(f"{algorithm_id} is not installed")
    assert host.algorithms[algorithm_id].holds_gil
    w = make_window(host, initial_algorithm=None)
    w.session.add_dataset(blobs(ISOLATE_GIL_ROWS - 1, seed=3))
    w.algorithm_panel.select_algorithm(algorithm_id)
    assert not w.run_controls.isolated_for(algorithm_id) and not w.run_controls.isolate_box.isChecked()
    w.session.add_dataset(blobs(N_POINTS))
    assert w.run_controls.isolated_for(algorithm_id) and w.run_controls.isolate_box.isChecked()
    spin_until(lambda: False, 0.3)
    fit_without_stalls(w, algorithm_id)
    assert w.run_controls.isolated_for(algorithm_id)  # the PCA runs before did not change that


def test_previews_move_the_drawn_points_and_keep_them_in_view(qtbot, make_window, host):
    """A running fit's previews of the same points move the drawn item (no new item, colours
    and legend kept); every preview is drawn exactly and lies inside the view's range."""
    from PySide6.QtWidgets import QGraphicsItem

    from manifold_studio.gui.fit_partials import route_partial, router_for

    w = make_window(host, initial_algorithm=None)
    w.session.add_dataset(blobs(500))
    w.run_algorithm("pca", {})
    spin_until(lambda: not w.busy, 20)
    view = w.map_view
    item, legend_items = view._item, list(view.legend.items)
    run = w.session.create_run("tsne", {"max_iter": 300}, "blobs500")
    w.session.start_run(run.id)
    router = router_for(w)
    rng = np.random.default_rng(3)
    for scale in (1e-3, 1e-2, 1.0, 30.0, 29.0):
        Y = rng.normal(scale=scale, size=(500, 2))
        route_partial(w, run.id, Y)
        spin_until(lambda: not router.pending and not router.timer.isActive(), 5)
        assert view._item is item and view.legend.items == legend_items  # moved, not rebuilt
        assert np.array_equal(view.xy, Y)
        assert np.array_equal(item.data["x"], Y[:, 0]) and np.array_equal(item.data["y"], Y[:, 1])
        (x0, x1), (y0, y1) = view.plot_item.getViewBox().viewRange()
        assert x0 <= Y[:, 0].min() and Y[:, 0].max() <= x1 and y0 <= Y[:, 1].min() and Y[:, 1].max() <= y1
    assert "running" in view.title_label.text()
    axis = view.plot_item.getAxis("left")
    assert axis.cacheMode() == QGraphicsItem.CacheMode.DeviceCoordinateCache
    # the result shown: a full drawing again, axes no longer cached
    from manifold_studio.session.records import FitOutcome

    w.session.complete_run(run.id, FitOutcome(None, embedding=Y))
    assert np.array_equal(view.xy, Y) and axis.cacheMode() == QGraphicsItem.CacheMode.NoCache


@pytest.mark.skipif(not hasattr(__import__("os"), "getpriority"), reason="thread priorities: Linux only")
def test_worker_threads_are_nicer_than_the_main_thread(qtbot):
    """Jobs run at a lower priority than the window's thread, so the window wins the CPU."""
    import os
    import threading

    from manifold_studio.gui.worker import WORKER_NICENESS, JobRunner

    def niceness(progress=None):
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    main = niceness()
    runner = JobRunner()
    job = runner.start(niceness, title="niceness")
    qtbot.waitUntil(lambda: job.finished, timeout=5000)
    runner.shutdown()
    assert job.result == max(main, WORKER_NICENESS)
    assert niceness() == main  # the main thread keeps its priority
