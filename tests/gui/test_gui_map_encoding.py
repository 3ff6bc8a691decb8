"""The map's encodings (colour by any column, legend that toggles classes, size by a column,
opacity, density mode), hover through the grid index, and the 1,000,000-point timings."""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QImage, QPainter  # noqa: E402

from gui_helpers import wait_last_run  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.tables.dataset_columns import dataset_columns  # noqa: E402
from manifold_studio.gui.views.density_item import density_counts  # noqa: E402
from manifold_studio.gui.views.map_encoding import COLUMN_PREFIX, column_coloring  # noqa: E402
from manifold_studio.gui.views.map_view import FAST_THRESHOLD, HOVER_RADIUS_PX, MapView  # noqa: E402
from manifold_studio.gui.views.palette import N_CONTINUOUS_LEVELS, NAN_COLOR, make_coloring  # noqa: E402
from manifold_studio.gui.views.points_item import FastPointsItem, raster_points, rgb_table  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import DONE, Run
from manifold_studio.session.model import Session
from manifold_studio.render.spatial_grid import GridIndex, brute_force_nearest  # noqa: E402

WINDOW_DIALOGS = False


# -- helpers ------------------------------------------------------------------------------------
def _session_view(qtbot, n, n_features=3, labels=None, seed=0, rows=None, size=(900, 700)):
    """A map view over a hand-built session: data set "d" (n × n_features, feature x2 has NaN in
    every 10th row), an embedding run #1 drawn on ``rows`` (all rows by default)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[::10, 1] = np.nan
    session = Session()
    ds = Dataset("d", X, labels=labels, feature_names=[f"x{j + 1}" for j in range(n_features)],
                 label_name="kind" if labels is not None else None)
    session.add_dataset(ds)
    m = n if rows is None else len(rows)
    run = Run(1, "pca", {}, "d", kind="embedding", status=DONE,
              embedding=rng.normal(size=(m, 2)) * [3.0, 0.5], rows=rows)
    session.add_run(run)
    view = MapView(window=SimpleNamespace(session=session))
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)
    view.show_run(run, ds)
    return view, session, ds, run


class _Click:
    """A stand-in for a left mouse click event on a legend sample."""

    def button(self):
        return Qt.MouseButton.LeftButton

    def accept(self):
        pass


def _pixel_nearest(view, x, y, visible=None):
    """Brute force: the visible point nearest to (x, y) in screen pixels within the hover radius."""
    px, py = view.plot_item.getViewBox().viewPixelSize()
    dx = (view.xy[:, 0] - x) / px
    dy = (view.xy[:, 1] - y) / py
    d2 = dx * dx + dy * dy
    if visible is not None:
        d2 = np.where(visible, d2, np.inf)
    i = int(np.argmin(d2))
    return i if d2[i] <= HOVER_RADIUS_PX ** 2 else -1


def _drawn_share(img: QImage) -> float:
    """Share of the image's pixels painted (not left transparent)."""
    img = img.convertToFormat(QImage.Format.Format_ARGB32)
    a = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    return float(np.mean(a[:, 3:img.width() * 4:4] > 0))


def _paint_ms(view, reps=3):
    """Best time of rendering the map's plot (its viewport, 1:1) into an 800 × 600 image."""
    view.plot.resize(800, 600)
    img = QImage(800, 600, QImage.Format.Format_ARGB32)
    times = []
    for _ in range(reps):
        img.fill(0)
        painter = QPainter(img)
        t = time.perf_counter()
        view.plot.render(painter)
        painter.end()
        times.append(time.perf_counter() - t)
    return 1000 * min(times), img


# -- colour by a column ------------------------------------------------------------------------------
def test_colour_by_a_feature_column_uses_make_coloring_on_the_drawn_rows(qtbot):
    rows = np.arange(0, 400, 2)  # the run was fitted on every other row
    view, session, ds, run = _session_view(qtbot, 400, rows=rows)
    names = [view.color_combo.itemData(i) for i in range(view.color_combo.count())]
    for col in dataset_columns(session, "d"):
        assert COLUMN_PREFIX + col.name in names
    assert view.set_color_column("x1")
    expected = make_coloring(ds.X[rows, 0], len(rows), "x1")
    assert view.coloring.mode == "continuous"
    np.testing.assert_array_equal(view.coloring.codes, expected.codes)
    np.testing.assert_array_equal(view.coloring.codes, column_coloring(ds.X[:, 0], rows).codes)
    lo, hi = view.colorbar.levels()
    assert lo == pytest.approx(ds.X[rows, 0].min()) and hi == pytest.approx(ds.X[rows, 0].max())
    # NaN values are grey; the other codes are levels of the colour map
    view.set_color_column("x2")
    nan = np.isnan(ds.X[rows, 1])
    assert nan.any() and np.all(view.coloring.codes[nan] == N_CONTINUOUS_LEVELS)
    assert tuple(view.coloring.colors[N_CONTINUOUS_LEVELS]) == NAN_COLOR
    assert np.all(view.coloring.codes[~nan] < N_CONTINUOUS_LEVELS)
    # another colour map: same codes, other colours; the colour bar follows
    view.set_color_column("x1")
    viridis = view.coloring.colors.copy()
    view.apply_settings({"colormap": "coolwarm"})
    assert view.settings()["colormap"] == "coolwarm"
    np.testing.assert_array_equal(view.coloring.codes, expected.codes)
    assert not np.array_equal(view.coloring.colors, viridis)
    assert view.colorbar is not None
    # hover lists the row, the colour column's value and the row's features
    i = 7
    text = view.hover_text(i)
    row = rows[i]
    assert f"point {row}" in text
    assert f"x1: {ds.X[row, 0]:.4g}" in text
    assert f"x3 = {ds.X[row, 2]:.4g}" in text


def test_kmeans_cluster_column_on_a_pca_map_is_categorical_with_its_legend(qtbot, make_window):
    host = PluginHost().discover()
    if not {"pca", "kmeans"} <= set(host.algorithms) or "iris" not in host.samples:
        pytest.skip("pca, kmeans and the iris sample are needed")
    w = make_window(host, initial_sample="iris")
    pca = wait_last_run(qtbot, w)
    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    view = w.map_view
    view.show_run(pca, w.session.current_dataset)  # the pca map, coloured by the k-means column
    column = f"#{km.id} kmeans cluster"
    assert view.set_color_column(column)
    c = view.coloring
    assert c.mode == "categorical"
    assert c.names == [str(k) for k in np.unique(km.labels)]
    np.testing.assert_array_equal(np.asarray(c.names)[c.codes], km.labels[view.rows].astype(str))
    legend = [label.text for _sample, label in view.legend.items]
    assert legend[:3] == c.names
    assert view.colorbar is None
    # features of the hovered row in its tip
    i = view.hover_at(*view.xy[5])
    assert i == 5 and "sepal" in view.hover_label.text().lower()


def test_legend_click_hides_exactly_that_class_from_drawing_and_hover(qtbot):
    n = 3000
    labels = np.array(["a", "b", "c"])[np.random.default_rng(1).integers(0, 3, n)]
    view, session, ds, run = _session_view(qtbot, n, labels=labels)
    assert view.coloring.names == ["a", "b", "c"] and view.point_count() == n
    sample = view.encoding_legend.sample_for(1)
    redraws = []
    view.redrawn.connect(lambda: redraws.append(1))
    sample.mouseClickEvent(_Click())  # click "b" in the legend
    assert view.hidden_classes == {1} and redraws
    assert view.point_count() == np.count_nonzero(labels != "b")
    assert view.encoding.show_all_button.isEnabled()
    hidden = np.flatnonzero(labels == "b")
    for i in hidden[:30]:
        j = view.hover_at(*view.xy[i])
        assert j != i and (j < 0 or labels[j] != "b")
        assert j == _pixel_nearest(view, *view.xy[i], visible=labels != "b")
    # show all: every point again, and hovering a "b" point finds it
    view.encoding.show_all_button.click()
    assert view.hidden_classes == set() and view.point_count() == n
    assert view.hover_at(*view.xy[hidden[0]]) == hidden[0]
    # a hidden class stays hidden in the density mode's counts too
    view.toggle_class(0)
    view.set_density(True)
    view.update_density()
    assert view.density_item.total() <= np.count_nonzero(labels != "a")


def test_size_by_column_is_monotone_and_noted_in_the_legend(qtbot):
    view, session, ds, run = _session_view(qtbot, 500)
    assert view.set_size_column("x3")
    sizes = np.asarray(view._item.data["size"], dtype=float)
    order = np.argsort(ds.X[:, 2])
    assert np.all(np.diff(sizes[order]) >= -1e-9) and sizes.max() > sizes.min()
    assert any("size: x3" in label.text for _s, label in view.legend.items)
    assert "x3:" in view.hover_text(0)
    view.set_size_column(None)
    assert np.ptp(np.asarray(view._item.data["size"], dtype=float)) == 0


def test_fast_path_colours_by_continuous_column_with_opacity(qtbot):
    n = FAST_THRESHOLD + 20_000
    view, session, ds, run = _session_view(qtbot, n, labels=np.arange(n) % 4)
    view.apply_settings({"opacity": 0.5})
    assert view.set_color_column("x1")
    item = view._item
    assert isinstance(item, FastPointsItem) and item.point_count() == n and item.alpha == 128
    # every point has the colour of its level of the colour map (grey for NaN)
    expected = rgb_table(view.coloring.colors)[view.coloring.codes]
    np.testing.assert_array_equal(item.point_colors(), expected[item.drawn_index()])
    assert len(np.unique(item.point_colors())) <= N_CONTINUOUS_LEVELS + 1
    # size by a column on the fast path: 1–3 px squares, monotone in the column
    view.set_size_column("x3")
    item = view._item
    sides = np.zeros(n)
    sides[item.drawn_index()] = item.point_sides()
    order = np.argsort(ds.X[:, 2])
    assert np.all(np.diff(sides[order]) >= 0) and sides.min() == 1 and sides.max() == 3
    _ms, img = _paint_ms(view)
    assert _drawn_share(img) > 0.05
    # repaints with the same view (a hover tip, a selection drawn over) reuse the raster image
    done = item.rasterised
    view.hover_at(*view.xy[3])
    _paint_ms(view)
    assert item.rasterised == done >= 1
    view.plot_item.getViewBox().scaleBy((0.5, 0.5))
    _paint_ms(view)
    assert item.rasterised == done + 1
    # a hidden class is not drawn on the fast path either
    view.set_size_column(None)
    view.color_combo.setCurrentIndex(view.color_combo.findData("data"))
    view.set_hidden_classes({0})
    assert view.point_count() == n - np.count_nonzero(view.coloring.codes == 0)
    assert not np.isin(view._item.drawn_index(), np.flatnonzero(view.coloring.codes == 0)).any()


def test_raster_points_writes_each_point_into_its_pixel():
    x = np.array([0.2, 1.5, 1.7, 2.9, np.nan, 5.0])
    y = np.array([0.1, 0.5, 0.5, 2.2, 1.0, 1.0])
    rgb = np.array([0x010203, 0x040506, 0x070809, 0x0A0B0C, 0x111111, 0x222222], dtype=np.uint32)
    img = raster_points(x, y, rgb, 1, (1.0, 1.0), (0.0, 0.0), (3, 3))
    assert img[0, 0] == 0xFF010203 and img[0, 1] == 0xFF070809  # the later point covers the earlier
    assert img[2, 2] == 0xFF0A0B0C and np.count_nonzero(img) == 3  # NaN and x = 5 are outside
    two = raster_points(x[:1], y[:1], rgb[:1], 2, (1.0, 1.0), (0.0, 0.0), (3, 3))
    assert np.count_nonzero(two) == 4 and two[1, 1] == 0xFF010203
    half = raster_points(x[1:3], y[1:3], rgb[1:3], 1, (1.0, 1.0), (0.0, 0.0), (3, 3), alpha=128)
    a = 128 / 255
    assert half[0, 1] >> 24 == round(255 * (1 - (1 - a) ** 2)) and half[0, 1] & 0xFFFFFF == 0x070809


def test_fast_points_land_on_their_pixel_at_any_zoom(qtbot):
    """float32 raster about the data's centre at ordinary zooms, float64 when zoomed in far."""
    import pyqtgraph as pg

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    qtbot.waitExposed(plot)
    xy = 1e6 + np.random.default_rng(2).normal(size=(150_000, 2)) * 1e3
    item = FastPointsItem(size=1)
    item.set_data(xy, np.zeros(len(xy), dtype=np.intp), np.array([[255, 0, 0]], dtype=np.uint8))
    plot.addItem(item)
    vb = plot.getPlotItem().getViewBox()
    p = xy[7]
    for half in (5.0, 1e-3):  # 30 px per unit (float32 path), 1.5e5 px per unit (float64 path)
        vb.setRange(xRange=(p[0] - half, p[0] + half), yRange=(p[1] - half, p[1] + half), padding=0)
        size = plot.viewport().size()
        img = QImage(size.width(), size.height(), QImage.Format.Format_ARGB32)
        img.fill(0)
        painter = QPainter(img)
        plot.render(painter)
        painter.end()
        at = plot.mapFromScene(vb.mapViewToScene(pg.Point(*p)))
        found = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
                 if img.pixelColor(at.x() + dx, at.y() + dy).red() == 255
                 and img.pixelColor(at.x() + dx, at.y() + dy).green() == 0]
        assert found, (half, at)


def test_density_image_counts_the_points_in_the_view_range(qtbot):
    view, session, ds, run = _session_view(qtbot, 20_000)
    view.set_density(True)
    vb = view.plot_item.getViewBox()
    vb.setRange(xRange=(-1.0, 2.0), yRange=(-0.3, 0.4), padding=0)
    view.update_density()
    item = view.density_item
    (x0, x1), (y0, y1) = item.x_range, item.y_range
    xy = view.xy
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    assert item.total() == np.count_nonzero(inside) > 0
    assert item.image.shape == item.counts.shape and item.counts.shape[1] >= 100  # bins follow the view width
    assert view._item is None and view.point_count() == len(xy)
    # its colour bar: log(1 + count) from 0 to the fullest cell, ticks labelled with counts
    lo, hi = view.colorbar.levels()
    assert lo == 0 and hi == pytest.approx(np.log1p(item.counts.max()))
    # zoom in: finer bins over the new range, still the exact count
    vb.setRange(xRange=(0.0, 0.5), yRange=(0.0, 0.1), padding=0)
    qtbot.waitUntil(lambda: view.density_item.x_range[1] - view.density_item.x_range[0] < 1.0, timeout=3000)
    (x0, x1), (y0, y1) = view.density_item.x_range, view.density_item.y_range
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    assert view.density_item.total() == np.count_nonzero(inside)
    # the binning itself: a point on the upper edges is counted once, in the last cell
    counts = density_counts(np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 2.0]]), (0, 1), (0, 1), (4, 2))
    assert counts.sum() == 2 and counts[0, 0] == 1 and counts[1, 3] == 1
    view.set_density(False)
    assert view.density_item is None and view.point_count() == len(xy)


# -- hover ---------------------------------------------------------------------------------------------
def test_hover_finds_the_brute_force_nearest_point_also_after_an_anisotropic_zoom(qtbot):
    rng = np.random.default_rng(3)
    view, session, ds, run = _session_view(qtbot, 6000)
    vb = view.plot_item.getViewBox()
    for x_range, y_range in ((None, None), ((-1, 1), (-0.02, 0.02)), ((-0.05, 0.05), (-1.5, 1.5))):
        if x_range is not None:
            vb.setRange(xRange=x_range, yRange=y_range, padding=0)
        (x0, x1), (y0, y1) = vb.viewRange()
        px, py = vb.viewPixelSize()
        hits = 0
        xy = view.xy
        in_view = np.flatnonzero((xy[:, 0] > x0) & (xy[:, 0] < x1) & (xy[:, 1] > y0) & (xy[:, 1] < y1))
        assert in_view.size > 10
        for k in range(300):
            if k % 2:  # anywhere in the view
                x, y = rng.uniform(x0, x1), rng.uniform(y0, y1)
            else:  # within about 15 pixels of a point
                x, y = xy[rng.choice(in_view)] + rng.uniform(-15, 15, 2) * (px, py)
            i = view.hover_at(x, y)
            assert i == _pixel_nearest(view, x, y)
            hits += i >= 0
        assert hits > 60
        if x_range is not None:
            assert max(px / py, py / px) > 5  # the scales really differ
    # the index itself against the scan, on many more points and anisotropic radii
    xy = rng.normal(size=(50_000, 2)) * [10.0, 0.1]
    xy[::97] = np.nan
    index = GridIndex(xy)
    for _ in range(300):
        x, y = rng.normal() * 10, rng.normal() * 0.1
        rx, ry = 10 ** rng.uniform(-3, 0), 10 ** rng.uniform(-4, -1)
        assert index.nearest(x, y, rx, ry) == brute_force_nearest(xy, x, y, rx, ry)


def test_a_column_that_disappeared_falls_back_to_the_labels_with_a_message(qtbot):
    labels = np.arange(200) % 3
    view, session, ds, run = _session_view(qtbot, 200, labels=labels)
    messages = []
    view.window.show_status = messages.append
    assert view.set_color_column("#1 pca 1")
    assert view.coloring.mode == "continuous"
    session.remove_run(1)  # the combo still offers its columns until the next run is shown
    view.size_spin.setValue(8)  # any redraw
    assert view.coloring.mode == "categorical" and view.coloring.names == ["0", "1", "2"]
    assert messages and "#1 pca 1" in messages[-1]


def test_settings_round_trip_and_bad_values_are_ignored(qtbot):
    view, *_ = _session_view(qtbot, 100)
    view.apply_settings({"point_size": 11, "colormap": "magma", "opacity": 0.4})
    assert view.settings() == {"point_size": 11, "colormap": "magma", "opacity": 0.4}
    view.apply_settings({"point_size": "big", "colormap": "no-such-map", "opacity": float("nan"), "x": 1})
    assert view.settings() == {"point_size": 11, "colormap": "magma", "opacity": 0.4}


# -- a million points -----------------------------------------------------------------------------------
def test_timings_at_a_million_points(qtbot, capsys):
    n = 1_000_000
    t = time.perf_counter()
    view, session, ds, run = _session_view(qtbot, n, n_features=3)
    show_ms = 1000 * (time.perf_counter() - t)
    assert view.uses_fast_path and view.point_count() == n
    qtbot.wait(50)  # the event loop runs before the user's next click (the colour bar is made then)
    t = time.perf_counter()
    view.set_color_column("x1")
    colour_ms = 1000 * (time.perf_counter() - t)
    assert view.coloring.mode == "continuous"
    t = time.perf_counter()
    view.set_color_column("x3")
    colour2_ms = 1000 * (time.perf_counter() - t)
    t = time.perf_counter()
    index = view.spatial_index(wait=True)
    wait_ms = 1000 * (time.perf_counter() - t)
    t = time.perf_counter()
    GridIndex(view.xy)
    build_ms = 1000 * (time.perf_counter() - t)
    assert index is not None
    rng = np.random.default_rng(5)
    (x0, x1), (y0, y1) = view.plot_item.getViewBox().viewRange()
    hover = []
    for _ in range(200):
        x, y = rng.uniform(x0, x1) * 0.5, rng.uniform(y0, y1) * 0.5
        t = time.perf_counter()
        view.hover_at(x, y)
        hover.append(1000 * (time.perf_counter() - t))
    for x, y in rng.uniform(-1, 1, size=(20, 2)):
        assert view.nearest_point(x, y) == _pixel_nearest(view, x, y)
    vb = view.plot_item.getViewBox()
    paints = []
    for k in range(5):  # pan: each frame rasterises the points again
        vb.translateBy(x=0.01 * (k + 1))
        ms, img = _paint_ms(view, reps=1)
        paints.append(ms)
    assert _drawn_share(img) > 0.05  # the points were drawn
    view.hover_at(*view.xy[0])
    repaint_ms, _img = _paint_ms(view)  # same view: from the cached image
    view.set_density(True)
    t = time.perf_counter()
    view.update_density()
    density_ms = 1000 * (time.perf_counter() - t)
    density_paint_ms, _img = _paint_ms(view)
    with capsys.disabled():
        print(f"\n[map, 1,000,000 points] show run {show_ms:.0f} ms; colour change {colour_ms:.0f} / "
              f"{colour2_ms:.0f} ms; hover median {np.median(hover):.2f} ms, 95th percentile {np.percentile(hover, 95):.2f} ms, max {max(hover):.2f} ms "
              f"(grid index build {build_ms:.0f} ms in the background, waited {wait_ms:.0f} ms); "
              f"pan frame 800x600 median {np.median(paints):.0f} ms (min {min(paints):.0f}), repaint after a hover "
              f"{repaint_ms:.0f} ms; density binning {density_ms:.0f} ms, "
              f"density paint {density_paint_ms:.0f} ms")
    assert np.median(hover) < 10
