"""Views polished for issue 33: the report's figures share one font size whatever the view's
size on screen, the biplot's labels do not pile up, the dendrogram's leaves show the classes."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtGui import QImage  # noqa: E402

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
