"""Extended points on the map (issue 24, the README's UMAP screenshot): a held-out part placed by
the extension is drawn as a filled × with a dark outline, filled with the colour the map gives
its label (so a point landing in its class's cluster shows it), white when the map is not
coloured by the labels; a legend of many entries is laid out in columns so it covers less of the
map."""
import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402

from gui_helpers import discovered_host, wait_idle  # noqa: E402

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.views.map_encoding import COLOR_NONE, LEGEND_COLUMNS  # noqa: E402
from manifold_studio.gui.views.map_layout import EXTENDED_FILL, EXTENDED_SYMBOL  # noqa: E402
from manifold_studio.extend.tasks import holdout_split  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture
def host():
    return discovered_host(("pca",))


def _blobs(k=3, per=60, seed=0):
    """``k`` well separated blobs in 4-D with their index as the label."""
    rng = np.random.default_rng(seed)
    centres = 12.0 * rng.normal(size=(k, 4))
    X = np.vstack([c + rng.normal(size=(per, 4)) for c in centres])
    return Dataset("blobs", X, labels=np.repeat(np.arange(k), per), label_name="blob")


def _extend_held_out(qtbot, w, fraction=20.0, seed=1):
    panel = w.views["extend"]
    panel.holdout_fraction.setValue(fraction)
    panel.holdout_seed.setValue(seed)
    with qtbot.waitSignal(panel.extended, timeout=30_000) as blocker:
        run = panel.fit_with_holdout("pca", {"n_components": 2})
    wait_idle(qtbot, w)
    view = w.map_view
    qtbot.waitUntil(lambda: len(view._overlays) == 1)
    return run, blocker.args[0], view


def _label_colors(view):
    """{label: (r, g, b)} of the map's drawn points."""
    c, labels = view.coloring, view.color_labels
    return {lab: tuple(int(v) for v in c.colors[c.codes[np.flatnonzero(labels == lab)[0]]])
            for lab in np.unique(labels)}


def _fill_rgb(item):
    """Fill colour of each point (its own brush, else the layer's)."""
    return [tuple((b or item.opts["brush"]).color().getRgb()[:3]) for b in item.data["brush"]]


def test_extended_points_are_filled_crosses_in_their_label_colour(qtbot, make_window, host):
    ds = _blobs()
    w = make_window(host)
    w.session.add_dataset(ds)
    run, ext, view = _extend_held_out(qtbot, w)
    _train, held = holdout_split(ds.n_samples, 0.2, 1)
    assert np.array_equal(ext.rows, held) and np.array_equal(run.rows, _train)
    item = view._overlays[0]
    assert item.opts["symbol"] is EXTENDED_SYMBOL and "extended" in item.name()
    assert np.array_equal(item.point_labels, ds.labels[held])
    colors = _label_colors(view)
    assert len(set(colors.values())) == 3                          # three distinct class colours
    assert _fill_rgb(item) == [colors[lab] for lab in ds.labels[held]]
    # the outline is dark, unlike the fitted points' light one: the two layers stay apart
    assert item.opts["pen"].color().lightness() < 60

    # pixels: the centre of an isolated extended point has its label's colour, its rim is dark
    vb = view.plot_item.getViewBox()
    view.plot.resize(700, 600)
    qtbot.wait(100)

    def pixel_of(xy):
        p = view.plot.mapFromScene(vb.mapViewToScene(QPointF(float(xy[0]), float(xy[1]))))
        return p.x(), p.y()

    px = np.array([pixel_of(v) for v in ext.values])
    gaps = np.linalg.norm(px[:, None] - px[None], axis=2) + np.eye(len(px)) * 1e9
    i = int(np.argmax(gaps.min(axis=1)))                           # the least crowded extended point
    assert gaps[i].min() > 6, "no extended point stands apart enough to read its pixels"
    image = view.plot.grab().toImage()
    x, y = px[i]
    centre = QColor(image.pixel(x, y)).getRgb()[:3]
    assert np.abs(np.subtract(centre, colors[ds.labels[held][i]])).max() <= 8, centre
    rim = [QColor(image.pixel(x + dx, y + dy)).lightness() for dx in range(-6, 7) for dy in range(-6, 7)]
    assert min(rim) < 70                                           # the dark outline of the ×

    # coloured by nothing: the labels' colours do not apply, the × turn white
    view.color_combo.setCurrentIndex(view.color_combo.findData(COLOR_NONE))
    assert set(_fill_rgb(item)) == {EXTENDED_FILL[:3]}


def test_extended_points_of_another_data_set_stay_white(qtbot, make_window, host):
    """Points of another data set carry no label of the map's: white ×."""
    ds = _blobs()
    other = _blobs(seed=0)
    other.name = "other"
    w = make_window(host)
    w.session.add_dataset(ds)
    run = w.run_algorithm("pca", {"n_components": 2})
    qtbot.waitUntil(lambda: run.finished, timeout=20_000)
    w.session.add_dataset(other, make_current=False)
    panel = w.views["extend"]
    panel.show_run(run, ds)
    with qtbot.waitSignal(panel.extended, timeout=30_000):
        panel.extend_rows(run, "other")
    view = w.map_view
    qtbot.waitUntil(lambda: len(view._overlays) == 1)
    item = view._overlays[0]
    assert item.point_labels is None and len(item.data) == other.n_samples
    assert set(_fill_rgb(item)) == {EXTENDED_FILL[:3]}


def test_a_long_legend_is_laid_out_in_columns(qtbot, make_window, host):
    """Ten classes and the extended points: three columns (four rows) instead of eleven rows;
    three classes keep one column."""
    w = make_window(host)
    w.session.add_dataset(_blobs(k=10, per=20))
    _run, _ext, view = _extend_held_out(qtbot, w)
    assert len(view.legend.items) == 11 and view.legend.columnCount == LEGEND_COLUMNS
    rows = {view.legend.layout.itemAt(r, 0) is not None for r in range(view.legend.layout.rowCount())}
    assert view.legend.layout.rowCount() == 4 and rows == {True}
    small = _blobs(k=3)
    small.name = "small"
    w.session.add_dataset(small)
    _extend_held_out(qtbot, w)
    assert len(view.legend.items) == 4 and view.legend.columnCount == 1
