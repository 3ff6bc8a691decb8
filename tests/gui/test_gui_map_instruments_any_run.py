"""The map instruments (issue 31) on the map of any run: a clustering of a map, a classifier on a
map and a ready-made map (an .h5ad file's obsm, no model); and the issue's bad inputs in the
window: a map of 1 or 2 points, density on identical points, neighbours on a distance matrix."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyqtgraph as pg
import pytest
from scipy import stats
from scipy.spatial.distance import cdist

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.data import Dataset  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca", "kmeans", "perceptron"), ("wine", "digits"))


def click_point(mi, view, i):
    scene_pos = view.plot_item.getViewBox().mapViewToScene(pg.Point(*view.xy[i]))
    mi.neighbours._clicked(SimpleNamespace(button=lambda: Qt.MouseButton.LeftButton, scenePos=lambda: scene_pos))


@pytest.mark.parametrize("kind", ["clustering", "classifier"])
def test_instruments_work_on_a_clustering_or_classifier_of_a_map(qtbot, make_window, host, kind):
    w = make_window(host)
    ds = w.session.load("sample:wine")
    pca = w.session.run("pca", chain=[("standardize", {})])
    if kind == "clustering":
        run = w.session.run("kmeans", source_run=pca.id, n_clusters=3, random_state=0)
    else:
        run = w.session.run("perceptron", source_run=pca.id, max_epochs=20)
    w.session.set_current_run(run.id)
    view, mi = w.map_view, w.map_instruments
    assert view.run is run and np.allclose(view.xy, pca.embedding[:, :2])
    # density of the map the run is drawn on
    mi.density.box.setChecked(True)
    qtbot.waitUntil(lambda: mi.density.result is not None, timeout=10_000)
    ref = stats.gaussian_kde(view.xy.T)
    np.testing.assert_allclose(mi.density.result.grid.at(view.xy), ref(view.xy.T), rtol=0.03)
    # neighbours in the map's prepared space (standardized, what the PCA saw), not in the 2-D map
    # the run was fitted on nor in the raw data
    mi.neighbours.box.setChecked(True)
    click_point(mi, view, 7)
    qtbot.waitUntil(lambda: mi.neighbours.result is not None, timeout=20_000)
    Z = (ds.X - ds.X.mean(axis=0)) / ds.X.std(axis=0)
    d = cdist(Z[7:8], Z)[0]
    d[7] = np.inf
    np.testing.assert_array_equal(np.sort(mi.neighbours.result.rows), np.sort(np.argsort(d)[:10]))
    np.testing.assert_allclose(mi.neighbours.result.distances, d[mi.neighbours.result.rows], rtol=1e-6)
    assert mi.neighbours.select_action in mi.neighbours.list.actions()   # the list's context menu
    mi.neighbours.select_action.trigger()                                 # linked with the selection
    np.testing.assert_array_equal(w.selection.rows(ds.name), np.sort(np.r_[7, np.argsort(d)[:10]]))
    # map faithfulness: its global figure goes in the summary of the run that made the map
    from manifold_studio.gui.views.neighbour_layer import FAITHFUL_COLOR_KEY

    view.color_combo.setCurrentIndex(view.color_combo.findData(FAITHFUL_COLOR_KEY))
    qtbot.waitUntil(lambda: "local_trustworthiness_k10" in pca.summary, timeout=20_000)
    assert "local_trustworthiness_k10" not in run.summary
    brute = np.argsort(cdist(Z, Z) + np.diag(np.full(len(Z), np.inf)), axis=1)[:, :10]
    on_map = np.argsort(cdist(view.xy, view.xy) + np.diag(np.full(len(Z), np.inf)), axis=1)[:, :10]
    expect = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(brute, on_map)])
    assert pca.summary["local_trustworthiness_k10"] == pytest.approx(expect, abs=0.01)
    shown = w.run_log.item(w.run_log.row_of(pca.id), 6).text()   # the runs table shows it
    assert f"local_trustworthiness_k10={pca.summary['local_trustworthiness_k10']}" in shown
    # search marks and selects
    mi.search.edit.setText("hue < 1")
    mi.search.run()
    qtbot.waitUntil(lambda: mi.search.match is not None, timeout=10_000)
    expected = ds.X[:, ds.feature_names.index("hue")] < 1
    np.testing.assert_array_equal(mi.search.match.mask, expected)
    mi.search.select()
    np.testing.assert_array_equal(w.selection.rows(ds.name), np.flatnonzero(expected))
    # explain the selection
    mi.explain.run()
    qtbot.waitUntil(lambda: mi.explain.result is not None, timeout=10_000)
    assert mi.explain.result.n_a == expected.sum()
    # labels from the run's own groups
    mi.labels.box.setChecked(True)
    qtbot.waitUntil(lambda: bool(mi.labels.candidates), timeout=20_000)
    # the inverse map decodes through the map run (PCA), not the clustering / classifier: values
    # of the prepared (standardized) data
    assert "decodes map positions (values of the prepared data)" in mi.inverse.status_text()
    row = mi.inverse.decode_at(1.0, -2.0)
    codes = np.zeros((1, pca.embedding.shape[1]))
    codes[0, :2] = (1.0, -2.0)
    codes[0, 2:] = pca.embedding[:, 2:].mean(axis=0)
    np.testing.assert_allclose(row, pca.estimator.final.inverse_transform(codes)[0])


def test_instruments_on_a_ready_made_map_of_an_h5ad_file(qtbot, make_window, host, tmp_path):
    anndata = pytest.importorskip("anndata")
    import warnings

    import pandas as pd
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(120, 12, density=0.5, random_state=1, format="csr") * 10
    umap_like = np.r_[rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 6]
    batch = np.where(np.arange(120) < 60, np.where(np.arange(120) < 45, "b1", "b2"), "b3")
    adata = anndata.AnnData(X, obs=pd.DataFrame({"cell_type": pd.Categorical(np.repeat(["T", "B"], 60)),
                                                 "batch": pd.Categorical(batch)},
                                                index=[f"c{i}" for i in range(120)]), obsm={"X_umap": umap_like})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata.write_h5ad(tmp_path / "cells.h5ad")
    w = make_window(host)
    w.session.load(str(tmp_path / "cells.h5ad"), label_column="cell_type")
    ready = next(r for r in w.session.runs.values() if r.algorithm_id == "ready_map")
    w.session.set_current_run(ready.id)
    view, mi = w.map_view, w.map_instruments
    assert view.run is ready and np.array_equal(view.xy, umap_like)
    mi.density.box.setChecked(True)
    qtbot.waitUntil(lambda: mi.density.result is not None, timeout=10_000)
    np.testing.assert_allclose(mi.density.result.grid.at(umap_like), stats.gaussian_kde(umap_like.T)(umap_like.T),
                               rtol=0.03)
    # labels: the majority category of a chosen column (a meta column, not the target)
    assert mi.labels.groups_combo.currentData() == "colours"   # the groups: the cell types (the colours)
    mi.labels.text_combo.setCurrentIndex(mi.labels.text_combo.findData("majority:batch"))
    mi.labels.box.setChecked(True)
    qtbot.waitUntil(lambda: bool(mi.labels.candidates), timeout=20_000)
    coarse = [c.text for c in mi.labels.candidates if c.level == 0]
    assert sorted(t.split()[0] for t in coarse) == ["b1", "b3"]   # cell type T (rows 0-59) is 75 % b1
    assert any(t.startswith("b1") and "75" in t for t in coarse)
    mi.neighbours.box.setChecked(True)
    click_point(mi, view, 3)
    qtbot.waitUntil(lambda: mi.neighbours.result is not None, timeout=20_000)
    dense = X.toarray()
    d = cdist(dense[3:4], dense)[0]
    d[3] = np.inf
    np.testing.assert_array_equal(np.sort(mi.neighbours.result.rows), np.sort(np.argsort(d)[:10]))
    mi.search.edit.setText("cell_type == 'B'")
    mi.search.run()
    qtbot.waitUntil(lambda: mi.search.match is not None, timeout=10_000)
    assert mi.search.match.count == 60
    mi.search.select()
    mi.explain.run()
    qtbot.waitUntil(lambda: mi.explain.result is not None, timeout=10_000)
    assert mi.explain.result.n_a == 60 and mi.explain.result.n_b == 60
    said = mi.inverse.status_text()   # no model, and no "fit the run again" that a stored map cannot
    assert "cannot decode" in said and "stored in the data file" in said and "fit the run again" not in said
    assert mi.inverse.decode_at(0.0, 0.0) is None and mi.inverse.status.text() == said


def test_neighbours_on_a_distance_matrix_use_the_distances(qtbot, make_window, host):
    rng = np.random.default_rng(2)
    pts = rng.normal(size=(60, 4))
    D = cdist(pts, pts)
    w = make_window(host)
    w.session.add_dataset(Dataset("dist", D, distance_matrix=True))
    run = w.session.run("mds", n_components=2) if "mds" in host.algorithms else pytest.skip("no mds")
    view, mi = w.map_view, w.map_instruments
    assert view.run is run
    mi.neighbours.box.setChecked(True)
    click_point(mi, view, 4)
    qtbot.waitUntil(lambda: mi.neighbours.result is not None, timeout=20_000)
    d = D[4].copy()
    d[4] = np.inf
    np.testing.assert_array_equal(mi.neighbours.result.rows, np.argsort(d)[:10])
    np.testing.assert_allclose(mi.neighbours.result.distances, np.sort(d)[:10])


@pytest.mark.parametrize("n", [1, 2])
def test_a_map_of_one_or_two_points_says_why_and_does_not_crash(qtbot, make_window, host, n):
    from manifold_studio.gui.views.density_layer import DENSITY_COLOR_KEY
    from manifold_studio.gui.views.neighbour_layer import FAITHFUL_COLOR_KEY
    from manifold_studio.session.ready_maps import add_ready_maps

    w = make_window(host)
    X = np.arange(3.0 * n).reshape(n, 3) + np.eye(n, 3)
    ds = Dataset(f"tiny{n}", X, feature_names=["a", "b", "c"], ready_maps={"X_tiny": X[:, :2]})
    w.session.add_dataset(ds)
    add_ready_maps(w.session, ds.name)
    run = next(r for r in w.session.runs.values() if r.dataset_name == ds.name)
    w.session.set_current_run(run.id)
    messages = []
    w.show_status = lambda text, *a, **k: messages.append(text)
    view, mi = w.map_view, w.map_instruments
    assert view.run is run and len(view.xy) == n
    mi.density.box.setChecked(True)
    qtbot.waitUntil(lambda: bool(messages), timeout=10_000)
    assert messages[-1] == f"Density: The map density needs at least 3 points with coordinates; this map has {n}."
    assert not mi.density.items
    mi.labels.box.setChecked(True)
    assert messages[-1] == f"Labels: labels need at least 3 points on the map; this map has {n}."
    view.color_combo.setCurrentIndex(view.color_combo.findData(DENSITY_COLOR_KEY))
    assert messages[-1] == messages[0]   # colour by density says the same
    view.color_combo.setCurrentIndex(view.color_combo.findData(FAITHFUL_COLOR_KEY))
    assert messages[-1] == f"Map faithfulness: it compares each point's 10 nearest neighbours, so it needs " \
                           f"at least 12 points; this map has {n}."
    mi.neighbours.box.setChecked(True)
    mi.neighbours.show_row(0)
    qtbot.waitUntil(lambda: messages[-1].startswith("Neighbours:"), timeout=10_000)
    assert ("at least 2 points; this map has 1" if n == 1 else "has 2 rows, so at most 1 neighbours") in messages[-1]
    mi.neighbours.k_spin.setValue(1)
    if n == 2:   # k = 1: the other point
        mi.neighbours.show_row(0)
        qtbot.waitUntil(lambda: mi.neighbours.result is not None, timeout=10_000)
        assert mi.neighbours.result.rows.tolist() == [1]
    w.selection.select(ds.name, np.arange(n))
    mi.explain.run()
    qtbot.waitUntil(lambda: "all" in mi.explain.status.text(), timeout=10_000)
    assert f"all {n} rows are selected" in mi.explain.status.text()
    assert mi.inverse.decode_at(0.0, 0.0) is None and "cannot decode" in mi.inverse.status.text()


@pytest.mark.slow   # ~7 s on a busy 2-core machine; test_inverse_map_decodes_like_pca_and_walks is the fast one
def test_inverse_map_on_an_image_set_shows_images_and_a_strip(qtbot, make_window, host):
    w = make_window(host)
    import manifold_studio as ms

    ds = ms.load_data("sample:digits").subset(np.arange(300))   # keeps the 8 × 8 images
    w.session.add_dataset(ds)
    run = w.session.run("pca", ds.name, n_components=2)
    view, inv = w.map_view, w.map_instruments.inverse
    inv.box.setChecked(True)
    vb = view.plot_item.getViewBox()
    lo, hi = view.xy.min(axis=0), view.xy.max(axis=0)
    vb.setRange(xRange=(lo[0] - 60, hi[0] + 60), yRange=(lo[1] - 60, hi[1] + 60), padding=0)
    empty = (float(hi[0] + 30), float(hi[1] + 30))   # beyond every point: an empty place
    inv._moved((vb.mapViewToScene(pg.Point(*empty)),))   # a hover
    assert inv.last_position == pytest.approx(empty, abs=1.0)
    decoded = run.estimator.inverse_transform(np.array([inv.last_position]))[0]
    img = inv.image.pixmap().toImage().scaled(8, 8)
    grey = np.array([[img.pixelColor(x, y).red() for x in range(8)] for y in range(8)], dtype=float)
    expect = (decoded - decoded.min()) / (decoded.max() - decoded.min()) * 255
    assert np.corrcoef(grey.ravel(), expect)[0, 1] > 0.95            # the image is the decoded row
    assert not inv.table.isVisible() and ds.images.shape[1:] == (8, 8)
    inv._moved((vb.mapViewToScene(pg.Point(*view.xy[0])),))         # over a point: nothing decoded
    assert inv.last_position == pytest.approx(empty, abs=1.0)
    inv.set_end(0, tuple(view.xy[0]))
    inv.set_end(1, tuple(view.xy[1]))
    inv.steps.setValue(5)
    got = []
    inv.decoded.connect(got.append)
    inv.walk()
    positions, rows = got[-1]
    assert inv.strip.count() == 5 and all(not inv.strip.itemAt(i).widget().pixmap().isNull() for i in range(5))
    np.testing.assert_allclose(rows, run.estimator.inverse_transform(positions))
    np.testing.assert_allclose(positions[[0, -1]], view.xy[:2])

