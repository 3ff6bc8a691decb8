"""A large map's intermediate maps (t-SNE iterations): moved in the raster item with the
colours kept, and never drawn while the previous one is not painted (issue 33)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from benchmarks.stall_meter import spin_until  # noqa: E402
from gui_helpers import tsne_started_on_a_pca_map  # noqa: E402
from manifold_studio.gui import fit_partials  # noqa: E402
from manifold_studio.gui.fit_partials import route_partial, router_for  # noqa: E402
from manifold_studio.gui.views import map_view as map_view_module  # noqa: E402
from manifold_studio.gui.views.points_item import FastPointsItem  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402

N = 600


@pytest.fixture(scope="module")
def host():
    return PluginHost().discover()


def _tsne_on_a_raster_map(make_window, host, monkeypatch, seed):
    """A window whose PCA map of N points is drawn by the raster item (the threshold lowered to
    300 points), and a started t-SNE run on the same data: (window, map view, run, rng)."""
    monkeypatch.setattr(map_view_module, "FAST_THRESHOLD", 300)
    w, run, rng = tsne_started_on_a_pca_map(make_window, host, N, seed)
    return w, w.map_view, run, rng


def test_intermediate_maps_move_the_raster_item_and_wait_for_paint(qtbot, make_window, host, monkeypatch):
    w, view, run, rng = _tsne_on_a_raster_map(make_window, host, monkeypatch, 0)
    item = view._item
    assert isinstance(item, FastPointsItem)
    colours = item.point_colors().copy()
    router = router_for(w)
    Y = [rng.normal(scale=s, size=(N, 2)) for s in (1.0, 2.0, 3.0, 4.0, 5.0)]
    route_partial(w, run.id, Y[0])               # the first is drawn at once
    assert view._item is item and np.array_equal(view.xy, Y[0])
    spin_until(lambda: item.painted_version == item.version, 5)
    assert item.painted_version == item.version
    # moved in place: same item, same colours, positions of the new map
    np.testing.assert_array_equal(item.point_colors(), colours)
    np.testing.assert_array_equal(item._x, Y[0][:, 0])
    drawn = router.drawn
    # the next is drawn (the previous was painted); one more while that one is unpainted waits
    router.pending[(run.id, False)] = Y[1]
    router.timer.stop()
    router.flush()
    assert router.drawn == drawn + 1 and np.array_equal(view.xy, Y[1]) and view.awaiting_paint()
    router.pending[(run.id, False)] = Y[2]
    router.flush()
    assert router.drawn == drawn + 1 and router.waits == 1 and np.array_equal(view.xy, Y[1])
    # three more arrive meanwhile: only the newest is drawn, after the paint
    for y in Y[3:]:
        route_partial(w, run.id, y)
    spin_until(lambda: not router.pending and not router.timer.isActive(), 5)
    assert router.drawn == drawn + 2 and np.array_equal(view.xy, Y[4]) and view._item is item
    np.testing.assert_array_equal(item.point_colors(), colours)


def test_waiting_is_bounded(qtbot, make_window, host, monkeypatch):
    """A map that is never painted (a hidden window) still gets its maps: at most MAX_WAITS."""
    w, view, run, rng = _tsne_on_a_raster_map(make_window, host, monkeypatch, 1)
    router = router_for(w)
    route_partial(w, run.id, rng.normal(size=(N, 2)))
    monkeypatch.setattr(type(view), "awaiting_paint", lambda self: True)
    last = rng.normal(size=(N, 2))
    route_partial(w, run.id, last)
    spin_until(lambda: not router.pending and not router.timer.isActive(), 5)
    assert np.array_equal(view.xy, last) and router.waits == fit_partials.MAX_WAITS
