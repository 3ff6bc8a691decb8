"""A large map's colour changes and legend placement run on workers (issue 33): which thread
computes what, and that the result is the one computed on the window's thread."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.views import map_coloring, map_layout  # noqa: E402
from manifold_studio.render.colors import make_coloring  # noqa: E402
from manifold_studio.render.legend_corner import occupied_cell_corners  # noqa: E402
from manifold_studio.session.records import DONE, Run  # noqa: E402

WINDOW_DIALOGS = False
N = 3_000


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca",), ())


def test_colour_changes_and_the_legend_grid_run_on_workers(qtbot, make_window, host, monkeypatch):
    threads = {"coloring": [], "grid": []}

    def spy_coloring(*args, **kwargs):
        threads["coloring"].append(threading.current_thread() is threading.main_thread())
        return make_coloring(*args, **kwargs)

    def spy_grid(xy, *args, **kwargs):
        threads["grid"].append(threading.current_thread() is threading.main_thread())
        return occupied_cell_corners(xy, *args, **kwargs)

    monkeypatch.setattr(map_coloring, "ASYNC_MIN_POINTS", 1_000)   # "large" at 3,000 points
    monkeypatch.setattr(map_coloring, "make_coloring", spy_coloring)
    monkeypatch.setattr(map_layout, "MAX_POINTS", 1_000)
    monkeypatch.setattr(map_layout, "occupied_cell_corners", spy_grid)
    w = make_window(host)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 4))
    y = rng.integers(0, 3, N)
    name = w.session.add_dataset(Dataset("big", X, y))
    w.session.add_run(Run(1, "pca", {}, name, kind="embedding", algorithm_name="given points", status=DONE,
                          embedding=np.ascontiguousarray(X[:, :2])), make_current=True)
    view = w.map_view
    qtbot.waitUntil(lambda: len(view.xy) == N and view.coloring is not None, timeout=10_000)
    # the first colouring of new coordinates is drawn at once (on the window's thread)
    assert threads["coloring"] and all(threads["coloring"])
    # the legend's occupancy grid: computed once, on a worker, then reused by every placement
    qtbot.waitUntil(lambda: view.__dict__.get("_legend_grid") is not None, timeout=10_000)
    assert threads["grid"] == [False]
    for _ in range(3):
        view.place_legend()
    assert threads["grid"] == [False]
    # a colour change: computed on a worker while the map keeps its colours
    before = view.coloring
    threads["coloring"].clear()
    assert view.set_color_column("x3")
    assert view.coloring is before
    qtbot.waitUntil(lambda: view._color_name == "x3", timeout=10_000)
    assert threads["coloring"] == [False]
    expected = make_coloring(X[:, 2], N, "x3", view.encoding.cmap(), kind="continuous")
    np.testing.assert_array_equal(view.coloring.codes, expected.codes)
    # back to the classes: computed before, so taken from the cache (no job)
    view.color_combo.setCurrentIndex(view.color_combo.findData("data"))
    assert view.coloring is before and threads["coloring"] == [False]


def test_a_colour_change_does_not_recompute_the_density_layer(qtbot, make_window, host, monkeypatch):
    from manifold_studio.gui.views import density_layer

    calls = []
    original = density_layer.density_layers

    def spy(*args, **kwargs):
        calls.append(kwargs.get("codes") is not None)
        return original(*args, **kwargs)

    monkeypatch.setattr(density_layer, "density_layers", spy)
    w = make_window(host)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3))
    name = w.session.add_dataset(Dataset("pts", X, rng.integers(0, 3, 500)))
    w.session.add_run(Run(1, "pca", {}, name, kind="embedding", algorithm_name="given points", status=DONE,
                          embedding=np.ascontiguousarray(X[:, :2])), make_current=True)
    mi, view = w.map_instruments, w.map_view
    mi.density.box.setChecked(True)
    qtbot.waitUntil(lambda: mi.density.result is not None, timeout=10_000)
    assert calls == [False]
    assert view.set_color_column("x3")
    qtbot.waitUntil(lambda: view._color_name == "x3", timeout=10_000)
    qtbot.wait(50)
    assert calls == [False]                         # the layer does not depend on the colours
    view.color_combo.setCurrentIndex(view.color_combo.findData("data"))
    mi.density.per_class.setChecked(True)           # per-class contours follow the classes
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=10_000)
    assert calls[-1] is True
