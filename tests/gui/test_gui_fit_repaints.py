"""A fit's previews repaint only what changed, once (issue 33 item 9: no event-loop stall over
50 ms during a fit). Counted, not timed:

- a resized plot (a dock opening next to the map) is painted once, not twice: pyqtgraph set the
  new transform in the paint's own preparation, dirtying every item during that paint;
- a live training curve is one paint of the curve's plot, not two to four; the router holds the
  next curve back until the last one is painted (at most one curve redraw pending);
- the curve's plot is built when an algorithm that may publish curves is picked, not with its
  first curve;
- k-means steps on a map of thousands of points recolour one raster item (no QBrush per point),
  and the map's title keeps its height (the plot is not resized, so not repainted in full).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QObject  # noqa: E402

from benchmarks.stall_meter import spin_until  # noqa: E402
from gui_helpers import discovered_host, shown_map_view, wait_idle, wait_last_run  # noqa: E402
from manifold_studio.algorithms.curves import TrainingCurve  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.fit_partials import route_partial, router_for  # noqa: E402
from manifold_studio.gui.views import map_preview  # noqa: E402
from manifold_studio.gui.views.points_item import rgb_table  # noqa: E402
from manifold_studio.gui.views.preview_points import PreviewPointsItem  # noqa: E402
from manifold_studio.gui.views.training_curve_view import TrainingCurveView  # noqa: E402
from manifold_studio.session.records import DONE  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca", "kmeans", "perceptron"))


class PaintCounter(QObject):
    """Counts the paint events of a plot's viewport."""

    def __init__(self, plot):
        super().__init__(plot)
        self.count = 0
        plot.viewport().installEventFilter(self)

    def eventFilter(self, obj, event):  # noqa: N802 - Qt
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def settle(app_wait_ms: int = 120) -> None:
    spin_until(lambda: False, app_wait_ms / 1000)


def curve(k: int) -> TrainingCurve:
    x = np.arange(1, k + 1, dtype=float)
    return TrainingCurve("SGD", x, {"training loss": 1 / x, "validation loss": 1.5 / x}, y_label="loss", log_y=True)


def test_a_resized_map_is_painted_once(qtbot):
    view, rng = shown_map_view(qtbot, 600, 500)
    view.set_points(rng.normal(size=(2_000, 2)), data_labels=rng.integers(0, 4, 2_000), title="a map")
    view._legend_timer.setInterval(60_000)   # the legend's placement after a resize: not counted here
    settle()
    paints = PaintCounter(view.plot)
    for height in (420, 480, 400):
        before = paints.count
        view.resize(600, height)
        settle(80)
        assert paints.count - before == 1, f"{paints.count - before} paints for one resize"


def test_each_live_curve_is_painted_once(qtbot):
    view = TrainingCurveView()
    qtbot.addWidget(view)
    view.resize(260, 600)
    view.show()
    view.show_partial(None, curve(2))
    settle()
    paints = PaintCounter(view.plot)
    for k in range(3, 9):
        drawn, before = view.drawn, paints.count
        view.show_partial(None, curve(3 * k))
        assert view.drawn == drawn + 1 and view.awaiting_paint()
        settle(60)
        assert paints.count - before == 1 and not view.awaiting_paint()
    np.testing.assert_array_equal(view.series["training loss"], 1 / np.arange(1, 25))


def _data_window(make_window, host, n=120, seed=5):
    w = make_window(host, initial_algorithm=None)
    X = np.vstack([np.random.default_rng(seed).normal(c, 0.3, size=(n // 3, 2)) for c in (0.0, 3.0, 6.0)])
    w.session.add_dataset(Dataset("blobs", X, np.repeat([0, 1, 2], n // 3)))
    return w


def test_the_router_holds_the_next_curve_until_the_last_is_painted(qtbot, make_window, host):
    w = _data_window(make_window, host)
    view = w.views["training_curve"]
    run = w.session.create_run("perceptron", {}, "blobs")
    w.session.start_run(run.id)
    router = router_for(w)
    route_partial(w, run.id, curve(2))   # the first is drawn at once, the dock opened
    assert view.n_partials == 1 and view.awaiting_paint()
    route_partial(w, run.id, curve(3))
    route_partial(w, run.id, curve(4))
    router.timer.stop()
    router.flush()   # the last curve is not painted yet: held
    assert view.n_partials == 1 and router.waits == 1 and router.pending
    spin_until(lambda: not router.pending and not router.timer.isActive(), 5)
    # drawn once painted: only the newest of the two
    assert view.n_partials == 2 and len(view.curve.x) == 4
    w.session.cancel_run(run.id)


def test_the_curve_plot_is_built_before_a_fit_that_may_publish_curves(qtbot, make_window, host):
    w = _data_window(make_window, host)
    slot = w.views["training_curve"]._lazy_slot
    w.algorithm_panel.select_algorithm("kmeans")
    settle()
    assert not slot.built   # no curves: still not made
    w.algorithm_panel.select_algorithm("perceptron")   # picked: made before Run is pressed
    qtbot.waitUntil(lambda: slot.built, timeout=2_000)
    assert w.views["training_curve"].n_partials == 0 and not w.docks["view:training_curve"].isVisible()


def test_k_means_steps_recolour_one_raster_item(qtbot, make_window, host, monkeypatch):
    monkeypatch.setattr(map_preview, "PREVIEW_RASTER_ABOVE", 50)   # 120 points: the raster preview
    brushes = []
    original = pg.ScatterPlotItem.setBrush

    def set_brush(self, *args, **kwargs):   # a list of brushes, one per point
        if args and isinstance(args[0], list) and len(args[0]) >= 100:
            brushes.append(len(args[0]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pg.ScatterPlotItem, "setBrush", set_brush)
    w = _data_window(make_window, host)
    w.run_algorithm("pca", {"n_components": 2}, "blobs")
    wait_last_run(qtbot, w, DONE)
    wait_idle(qtbot, w)
    view = w.map_view
    view.title_label.setText("PCA — a title long enough to wrap onto a second line of the map's heading, "
                             "as a run's parameters do")
    settle()
    height = view.plot.height()
    paints = PaintCounter(view.plot)
    run = w.session.create_run("kmeans", {"n_clusters": 3, "random_state": 0}, "blobs")
    w.session.start_run(run.id)
    steps = [np.repeat([2, 0, 1], 40), np.repeat([1, 1, 0], 40)]
    brushes.clear()   # (the PCA map's own)
    route_partial(w, run.id, {"labels": steps[0], "iteration": 1})
    item = view._item
    assert isinstance(item, PreviewPointsItem) and not brushes
    version = item.version
    settle()
    assert paints.count == 1
    router = router_for(w)
    route_partial(w, run.id, {"labels": steps[1], "iteration": 2})
    spin_until(lambda: not router.pending and not router.timer.isActive(), 5)
    settle()
    # the same item, its colours those of the second step's clusters
    assert view._item is item and item.version == version + 1 and not brushes
    c = view.coloring
    np.testing.assert_array_equal(item.point_colors(), rgb_table(c.colors)[c.codes])
    assert len(np.unique(item.point_colors())) == 2
    # the title said "running…" without resizing the plot: one paint per step
    assert "running" in view.title_label.text() and view.plot.height() == height
    # the second step's image is rendered on the worker before the one repaint (not the old first)
    assert paints.count == 2 and item.worker_renders == 1
    w.session.cancel_run(run.id)
