"""Views polished for issue 33: the report's figures share one font size whatever the view's
size on screen, the biplot's labels do not pile up, the dendrogram's leaves show the classes."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF  # noqa: E402
from PySide6.QtGui import QFont, QFontMetrics, QImage  # noqa: E402

from manifold_studio.gui.export import render_view  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1600, 1000)


def _gray(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_Grayscale8)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    return np.frombuffer(bytes(image.constBits()), dtype=np.uint8).reshape(h, stride)[:, :w]


def tick_text_height(image: QImage) -> float:
    """Median height in pixels of the left axis's tick labels: the rows of dark pixels in a strip
    just left of the axis line (the longest dark column in the image's left third), as runs."""
    dark = _gray(image) < 90
    w = dark.shape[1]
    axis_x = int(np.argmax(dark[:, : w // 3].sum(axis=0)))
    strip = dark[:, max(0, axis_x - 20): axis_x - 6].any(axis=1)
    edges = np.flatnonzero(np.diff(np.r_[0, strip.astype(np.int8), 0]))
    runs = edges[1::2] - edges[::2]
    assert len(runs) >= 3, "no tick labels found left of the axis"
    return float(np.median(runs))


@pytest.fixture
def clustered(qtbot, make_window):
    host = discovered_host(("pca", "hierarchical"), ("iris",))
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    run = w.run_algorithm("hierarchical", {"n_clusters": 3, "method": "ward"})
    wait_last_run(qtbot, w)
    dock = w.docks["view:dendrogram"]
    dock.show()
    dock.raise_()
    dend = w.views["dendrogram"]
    qtbot.waitUntil(lambda: dend.result is not None and dend.run is run, timeout=15_000)
    wait_idle(qtbot, w)
    return w, run, dend


def test_report_figures_have_the_maps_font_size_whatever_the_docks_size(clustered, qtbot):
    w, _run, dend = clustered
    size = (1000, 700)  # the report's figure size
    map_h = tick_text_height(render_view(w.map_view, ".png", *size))
    dend_h = tick_text_height(render_view(dend, ".png", *size))
    assert 8 <= map_h <= 20
    assert abs(dend_h - map_h) <= 1
    # a smaller dock does not make the fonts of its figure larger
    dend.plot.setFixedSize(220, 140)
    qtbot.wait(50)
    small_h = tick_text_height(render_view(dend, ".png", *size))
    dend.plot.setMinimumSize(0, 0)
    dend.plot.setMaximumSize(16_777_215, 16_777_215)
    assert abs(small_h - map_h) <= 1


def test_dendrogram_leaves_show_the_classes_in_the_maps_colours(clustered):
    from manifold_studio.gui.views.dendrogram_view import leaf_positions
    from manifold_studio.render.colors import CATEGORICAL

    w, run, dend = clustered
    ds = w.session.datasets[run.dataset_name]
    strip = dend.class_strip
    classes = np.unique(ds.labels)
    assert strip.names == [str(c) for c in classes] and len(strip.items) == len(classes)
    # each leaf's column is split by the share of its rows in each class
    pos = leaf_positions(run.estimator.linkage_matrix_)
    labels = ds.labels[run.point_index]
    for c, (cls, item) in enumerate(zip(classes, strip.items)):
        assert item.opts["brush"].color().getRgb()[:3] == tuple(int(v) for v in CATEGORICAL[c])
        counts = np.bincount(pos[labels == cls], minlength=dend.result.n_leaves)
        totals = np.bincount(pos, minlength=dend.result.n_leaves)
        has = counts > 0
        np.testing.assert_allclose(np.asarray(item.opts["x"]), 5.0 + 10.0 * np.flatnonzero(has))
        np.testing.assert_allclose(np.asarray(item.opts["height"]) / strip.height, (counts / totals)[has])
    # pure leaves are one colour: Ward on iris keeps setosa apart
    setosa = np.unique(pos[labels == classes[0]])
    assert np.all(strip.shares[setosa, 0] == 1.0)
    # the legend names the classes; the strip sits under the leaves, inside the view
    legend = dend.plot.getPlotItem().legend
    assert [label.text for _sample, label in legend.items] == strip.names
    y0, _y1 = dend.plot.getPlotItem().getViewBox().viewRange()[1]
    assert y0 <= -1.15 * strip.height < 0


def _loadings_window(qtbot, make_window, sample):
    """A window whose PCA map of ``sample`` is done, with the PCA loadings dock shown."""
    w = make_window(discovered_host(("pca",), (sample,)), initial_sample=sample)
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    dock = w.docks["view:pca_loadings"]
    dock.show()
    dock.raise_()
    return w


def _boxes(view):
    return [t.sceneBoundingRect() for t in view.arrow_labels.texts if t.isVisible()]


def test_biplot_labels_of_wines_13_columns_do_not_overlap(qtbot, make_window):
    from manifold_studio.gui.views.pca_view import BIPLOT

    w = _loadings_window(qtbot, make_window, "wine")
    w.preparation_panel.set_chain([("standardize", {})])  # arrows of like lengths: the hard case
    run = w.run_algorithm("pca")
    wait_last_run(qtbot, w)
    view = w.views["pca_loadings"]
    view.set_mode(BIPLOT)
    view.redraw()
    qtbot.waitUntil(lambda: view.result is not None and view.run is run and bool(view.arrow_labels.texts),
                    timeout=15_000)
    assert "standardize" in view.drawn_on
    ds = w.session.current_dataset
    assert view.arrow_labels.names == list(ds.feature_names) and len(ds.feature_names) == 13
    for size in ((420, 300), (900, 700)):
        view.plot.setFixedSize(*size)
        qtbot.wait(30)
        boxes = _boxes(view)
        assert len(boxes) >= 5
        assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.intersects(b)]
        inner = view.plot.getPlotItem().getViewBox().sceneBoundingRect()
        assert all(inner.contains(b) for b in boxes)
        # the labels shown are those of the longest arrows that fit: the longest always is
        lengths = np.hypot(*view.arrow_labels.arrows.T)
        assert view.arrow_labels.names[int(np.argmax(lengths))] in view.arrow_labels.shown
    # the labels lie above the arrows, their tips and the points (a tip hid a label's first letter)
    assert all(t.zValue() > max(i.zValue() for i in view.items + [view.arrow_labels.tips])
               for t in view.arrow_labels.texts)
    # every arrow's tip names its feature on hover, labelled or not
    tips = view.arrow_labels.tips
    assert [str(d).split(":")[0] for d in tips.data["data"]] == list(ds.feature_names)
    np.testing.assert_allclose(np.column_stack(tips.getData()), view.arrow_labels.arrows)


def test_arrow_label_placement_keeps_boxes_apart_longest_first():
    from manifold_studio.gui.views.biplot_labels import MIN_ARROW_PX, place_arrow_labels

    # eight arrows fanned within 20 degrees, and a short one: labels of 60 x 14 px
    angles = np.deg2rad(np.linspace(0, 20, 8))
    tips = np.vstack([np.c_[np.cos(angles), np.sin(angles)] * np.linspace(200, 130, 8)[:, None], [[5.0, 5.0]]])
    sizes = np.tile([60.0, 14.0], (9, 1))
    kept = place_arrow_labels(tips, sizes, (-300, -300, 300, 300))
    boxes = [(x - 31, y - 8, x + 31, y + 8) for _i, x, y in kept]
    assert kept[0][0] == 0 and 8 not in [i for i, _x, _y in kept]  # longest first; the 7 px arrow unlabelled
    assert np.hypot(*tips[8]) < MIN_ARROW_PX
    assert not [(a, b) for k, a in enumerate(boxes) for b in boxes[k + 1:]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    assert all(-300 <= b[0] and b[2] <= 300 and -300 <= b[1] and b[3] <= 300 for b in boxes)
    for i, x, y in kept:  # each label beside its own tip (within a few label heights)
        assert np.hypot(x - tips[i, 0], y - tips[i, 1]) < 100


def test_loadings_name_the_digit_pixels_without_overlap(qtbot, make_window):
    """64 digit pixels under the loadings' bars: the axis names every k-th, never two on top of
    each other (the 64 names were one smear), and all of them once the plot is wide enough."""
    w = _loadings_window(qtbot, make_window, "digits")
    view = w.views["pca_loadings"]
    view.redraw()
    qtbot.waitUntil(lambda: view.result is not None, timeout=15_000)
    names = list(view.result.names)
    assert len(names) == 64
    axis = view.plot.getPlotItem().getAxis("bottom")
    vb = view.plot.getPlotItem().getViewBox()
    widest = max(QFontMetrics(axis.style.get("tickFont") or QFont()).horizontalAdvance(n) for n in names)
    steps = []
    for width in (420, 5000):
        view.plot.setFixedSize(width, 300)
        qtbot.wait(30)
        ticks = axis._tickLevels[0]
        assert [n for _, n in ticks] == names[::view.tick_step]
        # the distance on screen between two named features exceeds the widest name
        a, b = (vb.mapViewToScene(QPointF(float(x), 0.0)).x() for x, _ in ticks[:2])
        assert b - a > widest
        steps.append(view.tick_step)
    assert steps[0] > 1 and steps[1] == 1   # 420 px: every k-th pixel named; 5000 px: all of them
