"""The map's extent comes from its data points only (issue 23): decorations (cluster centres,
extended points, the selection highlight) never widen it, and a new run starts at its own
extent — breast-cancer data spanning 7–28 was drawn on a −33…34 axis after a run with markers."""
import numpy as np
import pytest

pytest.importorskip("PySide6")

from gui_helpers import discovered_host, wait_idle, wait_last_run  # noqa: E402

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.help_pages import zoom_to_fit  # noqa: E402


@pytest.fixture
def host():
    return discovered_host(("pca", "kmeans"), ("iris",))


def view_box(view):
    (x0, x1), (y0, y1) = view.plot_item.getViewBox().viewRange()
    return np.array([x0, y0]), np.array([x1, y1])


def assert_extent_fits(view, xy):
    """Every point inside the view, and the view within 10% of the points' bounding box."""
    lo, hi = view_box(view)
    plo, phi = xy.min(axis=0), xy.max(axis=0)
    span = phi - plo
    assert (lo <= plo).all() and (hi >= phi).all(), (lo, hi, plo, phi)
    assert ((plo - lo) <= 0.1 * span + 1e-9).all() and ((hi - phi) <= 0.1 * span + 1e-9).all(), (lo, hi, plo, phi)


def test_decorations_never_widen_the_map_and_a_new_run_starts_at_its_extent(qtbot, make_window, host):
    w = make_window(host)
    rng = np.random.default_rng(0)
    wide = Dataset("wide", rng.normal(scale=30.0, size=(200, 2)))
    narrow = Dataset("narrow", 7.0 + 21.0 * rng.random((200, 2)))  # spans 7..28 like breast cancer
    w.session.add_dataset(wide)
    w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})   # draws cluster centres
    wait_last_run(qtbot, w)
    view = w.map_view
    view.set_overlays([("far away", np.array([[500.0, -500.0]]), "x")])  # an extension far out
    view.fit_to_points()
    assert_extent_fits(view, view.xy)                   # the far marker did not widen it
    w.session.add_dataset(narrow)
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    assert view.point_count() == 200
    assert_extent_fits(view, view.xy)                   # the new run at its own extent
    view.plot_item.getViewBox().scaleBy((4, 4))         # the user zooms out, then View ▸ Zoom to fit
    zoom_to_fit(w)
    assert_extent_fits(view, view.xy)
