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
    """Every point inside the view, and the view within 10% of the points' bounding box (plus the
    room the legend needs when no corner was free)."""
    from gui_helpers import legend_room

    lo, hi = view_box(view)
    plo, phi = xy.min(axis=0), xy.max(axis=0)
    span = phi - plo
    allowed = np.asarray(legend_room(view, span)) + 1e-9
    assert (lo <= plo).all() and (hi >= phi).all(), (lo, hi, plo, phi)
    assert ((plo - lo) <= allowed).all() and ((hi - phi) <= allowed).all(), (lo, hi, plo, phi)


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


def test_the_legend_sits_in_the_emptiest_corner(qtbot, make_window, host):
    """Points crowd the top right (where the legend used to be): the legend moves to a corner
    where it covers none of them."""
    from PySide6.QtCore import QPointF

    w = make_window(host)
    rng = np.random.default_rng(1)
    crowd = np.vstack([rng.uniform(0.5, 1.0, size=(300, 2)), [[0.0, 0.0]]])
    w.session.add_dataset(Dataset("crowd", crowd, labels=np.arange(len(crowd)) % 3))
    w.run_algorithm("pca", {"n_components": 2, "svd_solver": "full"})
    wait_last_run(qtbot, w)
    view = w.map_view
    view.set_points(crowd, data_labels=np.arange(len(crowd)) % 3, title="crowded top right")
    qtbot.waitUntil(lambda: view.legend.isVisible() and view.legend.boundingRect().width() > 0)
    qtbot.wait(50)  # the placement runs once the legend has its size
    vb = view.plot_item.getViewBox()
    legend_rect = view.legend.sceneBoundingRect()
    covered = sum(legend_rect.contains(vb.mapViewToScene(QPointF(float(x), float(y)))) for x, y in crowd)
    assert covered == 0, f"the legend covers {covered} points"
    from manifold_studio.render.legend_corner import emptiest_corner

    assert emptiest_corner(crowd, (0, 1), (0, 1), (0.3, 0.3)) != (1, 0)  # not the top right


def test_the_hover_tip_stays_inside_the_plot_and_above_the_legend(qtbot, make_window, host):
    w = make_window(host)
    xy = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    w.session.add_dataset(Dataset("corners", xy, labels=np.array([0, 1, 2, 0, 1])))
    w.run_algorithm("pca", {"n_components": 2, "svd_solver": "full"})
    wait_last_run(qtbot, w)
    view = w.map_view
    view.set_points(xy, data_labels=np.array([0, 1, 2, 0, 1]), title="corners")
    qtbot.wait(50)
    box = view.plot_item.getViewBox().sceneBoundingRect()
    for x, y in xy:
        assert view.hover_at(x, y) >= 0
        tip = view._hover_text.sceneBoundingRect()
        assert box.contains(tip), f"the tip of ({x}, {y}) leaves the plot: {tip} not in {box}"
    assert view._hover_text.parentItem() is None  # a scene item: drawn above the legend
    assert view._hover_text.zValue() > view.legend.zValue()


def test_numeric_columns_take_the_colour_map_and_few_values_become_classes(qtbot, make_window, host):
    """An integer column with more than 12 distinct values gets a colour bar in the chosen colour
    map (a wine 'magnesium' column was drawn as 50 classes, so the colour map seemed ignored);
    one with few values becomes classes, and the colour-map box says it does not apply."""
    w = make_window(host)
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.normal(size=200), rng.normal(size=200),
                         rng.integers(70, 160, size=200).astype(float),   # like wine's magnesium
                         rng.integers(1, 4, size=200).astype(float)])     # a 3-level code
    w.session.add_dataset(Dataset("ints", X, feature_names=["a", "b", "magnesium", "grade"]))
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    view = w.map_view
    view.color_combo.setCurrentIndex(view.color_combo.findData("col:magnesium"))
    qtbot.wait(20)
    assert view.coloring.mode == "continuous" and view.encoding.cmap_combo.isEnabled()
    first = np.array(view.coloring.colors).copy()
    view.encoding.cmap_combo.setCurrentIndex(view.encoding.cmap_combo.findData("magma"))
    qtbot.wait(20)
    assert view.coloring.mode == "continuous" and not np.array_equal(first, np.array(view.coloring.colors))
    view.color_combo.setCurrentIndex(view.color_combo.findData("col:grade"))
    qtbot.wait(20)
    assert view.coloring.mode == "categorical" and not view.encoding.cmap_combo.isEnabled()


def _covered(view, xy):
    from PySide6.QtCore import QPointF

    vb = view.plot_item.getViewBox()
    rect = view.legend.sceneBoundingRect()
    return sum(rect.contains(vb.mapViewToScene(QPointF(float(x), float(y)))) for x, y in xy)


def test_the_legend_never_covers_points_when_every_corner_is_full(qtbot, make_window, host):
    """Issue 33: points fill the whole square (no empty corner): the view grows on the legend's
    side until the legend covers none of them, and every point stays inside the view."""
    w = make_window(host)
    rng = np.random.default_rng(2)
    full = rng.uniform(0.0, 1.0, size=(3000, 2))
    labels = np.arange(len(full)) % 3
    w.session.add_dataset(Dataset("full", full, labels=labels))
    w.run_algorithm("pca", {"n_components": 2, "svd_solver": "full"})
    wait_last_run(qtbot, w)
    view = w.map_view
    view.set_points(full, data_labels=labels, title="every corner full")
    qtbot.waitUntil(lambda: view.legend.isVisible() and view.legend.boundingRect().width() > 0)
    qtbot.wait(50)
    assert _covered(view, full) == 0
    lo, hi = view_box(view)
    assert (lo <= full.min(axis=0)).all() and (hi >= full.max(axis=0)).all()


def test_make_room_empties_the_legend_box_and_grows_the_least():
    from manifold_studio.render.legend_corner import covered_points, emptiest_corner, make_room

    rng = np.random.default_rng(0)
    for _ in range(100):
        xy = rng.uniform(-1, 1, size=(1500, 2))
        box = (rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5))
        ranges = ((-1.05, 1.05), (-1.05, 1.05))
        corner = emptiest_corner(xy, *ranges, box)
        xr, yr = make_room(xy, *ranges, box, corner)
        assert covered_points(xy, xr, yr, box, corner) == 0
        assert xr[0] <= -1.05 and xr[1] >= 1.05 and yr[0] <= -1.05 and yr[1] >= 1.05
        growth = (xr[1] - xr[0]) * (yr[1] - yr[0]) / 2.1 ** 2
        assert growth < 1 / (1 - max(box)) ** 2 + 0.1
    # an empty corner: nothing moves
    xy = rng.uniform(0, 0.4, size=(100, 2))
    assert make_room(xy, (0, 1), (0, 1), (0.3, 0.3), (1, 0)) == ((0.0, 1.0), (0.0, 1.0))
