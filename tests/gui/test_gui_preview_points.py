"""A running fit's intermediate maps of more than a few thousand points are drawn as one image
rendered off the window's thread (issue 33, item 9: no event-loop stall over 50 ms during a
t-SNE fit): the scatter item is replaced at the first move, the window's thread does the same
work per intermediate map whatever the number of points, the image shows the points in their
colours, and the finished run is the normal interactive map again."""
from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pyqtgraph as pg
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402

from benchmarks.stall_meter import render_plot, spin_until  # noqa: E402
from gui_helpers import tsne_started_on_a_pca_map  # noqa: E402
from manifold_studio.gui.fit_partials import route_partial, router_for  # noqa: E402
from manifold_studio.gui.views import map_preview  # noqa: E402
from manifold_studio.gui.views.map_encoding import SYMBOL_ALPHA  # noqa: E402
from manifold_studio.gui.views.preview_points import PreviewPointsItem  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import FitOutcome  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture(scope="module")
def host():
    return PluginHost().discover()


def _tsne_on_a_scatter_map(make_window, host, monkeypatch, n, seed=0):
    """A window with the PCA map of n labelled points (a ScatterPlotItem) and a started t-SNE
    run on them; intermediate maps above 300 points use the preview item."""
    monkeypatch.setattr(map_preview, "PREVIEW_RASTER_ABOVE", 300)
    w, run, rng = tsne_started_on_a_pca_map(make_window, host, n, seed)
    return w, w.map_view, run, rng


def _grid(n, spacing=1.0, shift=0.0):
    """n points on a grid 30 wide: far enough apart that their discs never touch."""
    i = np.arange(n)
    return np.column_stack([(i % 30) * spacing + shift, (i // 30) * spacing]).astype(float)


def _pixel_of(view, x, y):
    scene = view.plot_item.getViewBox().mapViewToScene(QPointF(x, y))
    p = view.plot.mapFromScene(scene)
    return p.x(), p.y()


def test_the_preview_item_replaces_the_scatter_and_shows_the_points_colours(qtbot, make_window, host, monkeypatch):
    n = 600
    w, view, run, _rng = _tsne_on_a_scatter_map(make_window, host, monkeypatch, n)
    assert isinstance(view._item, pg.ScatterPlotItem) and len(view._item.data) == n
    view.plot_item.showGrid(x=False, y=False)   # its lines are drawn over the points
    route_partial(w, run.id, _grid(n))
    item = view._item
    assert isinstance(item, PreviewPointsItem) and view.point_count() == n and view.previewing_run == run.id
    scatters = [c for c in view.plot_item.getViewBox().addedItems if isinstance(c, pg.ScatterPlotItem)]
    assert all(len(s.data) < n for s in scatters)   # the scatter of the points is gone
    image = render_plot(view)
    assert item.main_thread_renders == 1 and item.painted_version == item.version
    item.setVisible(False)
    background = render_plot(view)   # the axes' grid lines, the legend: what the discs cover
    item.setVisible(True)
    colors, codes = view.coloring.colors, view.coloring.codes
    a = SYMBOL_ALPHA / 255.0

    def expected(i, under):
        return [c * a + b * (1 - a) for c, b in zip(colors[codes[i]], (under.red(), under.green(), under.blue()))]

    for i in (254, 317, 319, 382, 435):   # inside the grid: under no legend
        px, py = _pixel_of(view, *view.xy[i])
        got = QColor(image.pixel(int(px), int(py)))
        want = expected(i, QColor(background.pixel(int(px), int(py))))
        assert np.allclose([got.red(), got.green(), got.blue()], want, atol=10), (i, got.getRgb(), want)
    # the next map: rendered on the render thread, then painted; the points moved
    route_partial(w, run.id, _grid(n, shift=0.5))
    router_for(w).flush()
    render_plot(view)
    assert spin_until(lambda: item.worker_renders >= 1 and not item.rendering, 5)
    image = render_plot(view)
    assert item.main_thread_renders == 1 and item.painted_version == item.version
    assert np.array_equal(view.xy, _grid(n, shift=0.5))
    item.setVisible(False)
    background = render_plot(view)
    item.setVisible(True)
    px, py = _pixel_of(view, *view.xy[317])
    got = QColor(image.pixel(int(px), int(py)))
    want = expected(317, QColor(background.pixel(int(px), int(py))))
    assert np.allclose([got.red(), got.green(), got.blue()], want, atol=10)


def _calls_per_partial(make_window, host, monkeypatch, n):
    """Python function calls in the window's thread for one intermediate map: drawing it and
    the next paint (after a first one moved the points into the preview item)."""
    w, view, run, _rng = _tsne_on_a_scatter_map(make_window, host, monkeypatch, n, seed=n)
    router = router_for(w)
    route_partial(w, run.id, _grid(n))
    render_plot(view)
    item = view._item
    assert spin_until(lambda: not item.rendering, 5)
    counts = []
    for k in range(3):
        router.pending[(run.id, False)] = _grid(n, shift=0.1 * (k + 1))
        profile = cProfile.Profile()
        profile.enable()
        router.flush()
        render_plot(view)
        profile.disable()
        stats = pstats.Stats(profile)
        counts.append(stats.total_calls)
        most = max(stats.stats.items(), key=lambda kv: kv[1][1])   # the most called function
        assert most[1][1] < n // 4, most   # nothing is called per point
        assert spin_until(lambda: not item.rendering, 5)
    assert view._item is item and item.main_thread_renders == 1 and item.worker_renders >= 3
    return min(counts)


def test_a_partial_costs_the_window_thread_the_same_work_at_any_size(qtbot, make_window, host, monkeypatch):
    small = _calls_per_partial(make_window, host, monkeypatch, 600)
    large = _calls_per_partial(make_window, host, monkeypatch, 6000)
    # nothing per point in Python: a call per point would add 5,400 calls; the few hundred either
    # way are whole code paths (a change of the view's range lays the axes out again)
    assert large < small + 600, (small, large)
    assert small < 2500, small


def test_the_finished_run_is_the_interactive_map(qtbot, make_window, host, monkeypatch):
    n = 600
    w, view, run, _rng = _tsne_on_a_scatter_map(make_window, host, monkeypatch, n)
    route_partial(w, run.id, _grid(n))
    assert isinstance(view._item, PreviewPointsItem)
    final = _grid(n, spacing=2.0)
    w.session.complete_run(run.id, FitOutcome(estimator=None, embedding=final))
    spin_until(lambda: not w.busy, 10)
    assert view.previewing_run is None
    assert isinstance(view._item, pg.ScatterPlotItem) and len(view._item.data) == n and not view.uses_fast_path
    np.testing.assert_array_equal(view.xy, final)
    assert view.hover_at(*final[77]) == 77 and "point 77" in view.hover_text(77)
