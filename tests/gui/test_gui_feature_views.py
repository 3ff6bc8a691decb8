"""pytest-qt tests of the feature views (issue 21) in the real main window: what each draws
against numpy / scipy, the selection linked both ways, and the PNG/SVG export."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from scipy import stats  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.gui.views.distribution_view import BOX, HISTOGRAM, VIOLIN  # noqa: E402
from manifold_studio.gui.views.pca_view import BIPLOT  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)
FEATURE_VIEWS = ("distribution", "scatter", "scatter_matrix", "correlations", "pca_loadings", "feature_ranking")


@pytest.fixture
def host():
    return discovered_host(("pca",), ("iris",))


@pytest.fixture
def win(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    return w


def _view(w, key):
    view = w.views[key]
    view.redraw()
    return view


def test_distribution_histogram_box_violin_and_selection(win):
    w, ds = win, win.session.current_dataset
    view = _view(w, "distribution")
    name = ds.feature_names[2]
    view.column_combo.setCurrentText(name)
    view.bins.setValue(10)
    x, y = ds.X[:, 2], ds.labels
    edges = np.histogram_bin_edges(x, bins=10)
    classes = np.unique(y)
    drawn = view.drawn_counts
    assert len(drawn) == len(classes)
    for counts, cls in zip(drawn, classes):
        np.testing.assert_array_equal(counts, np.histogram(x[y == cls], bins=edges)[0])
    # a rectangle selects the rows whose value is in its x range; the selection is drawn as bars
    rows = view.selection_overlay.select_rect(3.0, -5, 5.0, 100)
    np.testing.assert_array_equal(np.sort(rows), np.flatnonzero((x >= 3.0) & (x <= 5.0)))
    np.testing.assert_array_equal(w.selection.rows(ds.name), np.sort(rows))
    w.selection.select(ds.name, np.arange(50))  # the window's selection → highlighted bars
    np.testing.assert_array_equal(view.selected_counts, np.histogram(x[:50], bins=edges)[0])

    view.mode_combo.setCurrentText(BOX)
    boxes = view.drawn_boxes
    assert len(boxes) == len(classes)
    for (q1, q3), cls in zip(boxes, classes):
        ref = np.percentile(x[y == cls], [25, 75])
        assert q1 == pytest.approx(ref[0], abs=1e-12) and q3 == pytest.approx(ref[1], abs=1e-12)
    assert view.result.boxes[0].median == np.percentile(x[y == classes[0]], 50)
    # box plot: each row is (class position, value); a rectangle over class 1 selects its rows
    rows = view.selection_overlay.select_rect(0.5, -100, 1.5, 100)
    np.testing.assert_array_equal(np.sort(rows), np.flatnonzero(y == classes[1]))
    view.mode_combo.setCurrentText(VIOLIN)
    assert len(view.drawn_boxes) == len(classes)
    assert view.selection_overlay.highlighted.size == (y == classes[1]).sum()
    view.mode_combo.setCurrentText(HISTOGRAM)


def test_distribution_of_the_text_label_counts_its_categories(win):
    w, ds = win, win.session.current_dataset
    view = _view(w, "distribution")
    label = ds.label_name or "label"
    assert ds.labels.dtype.kind in "OUS" and label in [c.name for c in view.columns]
    view.column_combo.setCurrentText(label)
    cats, counts = np.unique(ds.labels.astype(str), return_counts=True)
    assert view.categorical and list(view.categories) == list(cats)
    np.testing.assert_array_equal([h[0] for h in view.drawn_counts_by_category], counts)
    rows = view.selection_overlay.select_rect(0.5, 0, 2.5, 1000)  # the bars of categories 1 and 2
    np.testing.assert_array_equal(np.sort(rows), np.flatnonzero(np.isin(ds.labels.astype(str), cats[1:])))
    w.selection.select(ds.name, np.arange(10))
    np.testing.assert_array_equal(view.selected_counts, np.bincount(np.searchsorted(cats, ds.labels[:10].astype(str)),
                                                                    minlength=len(cats)))
    view.column_combo.setCurrentText(ds.feature_names[0])
    assert not view.categorical and view.result is not None


def test_scatter_plot_of_two_columns_including_a_result_column(win):
    w, ds = win, win.session.current_dataset
    pca = w.session.current_run
    view = _view(w, "scatter")
    names = [c.name for c in view.columns]
    result_col = f"#{pca.id} pca 1"
    assert result_col in names and ds.feature_names[0] in names
    view.set_axes(result_col, ds.feature_names[3])
    np.testing.assert_allclose(view.xy, np.column_stack([pca.embedding[:, 0], ds.X[:, 3]]))
    assert view.plot.getPlotItem().getAxis("bottom").labelText == result_col
    hit = view.selection_overlay.select_rect(0.0, 1.0, 10.0, 3.0)
    inside = (pca.embedding[:, 0] >= 0) & (ds.X[:, 3] >= 1.0) & (ds.X[:, 3] <= 3.0)
    np.testing.assert_array_equal(np.sort(hit), np.flatnonzero(inside))
    np.testing.assert_array_equal(w.selection.rows(ds.name), np.flatnonzero(inside))
    w.selection.select(ds.name, [4, 9, 120])
    np.testing.assert_array_equal(view.rows[view.selection_overlay.highlighted], [4, 9, 120])


def test_scatter_matrix_draws_every_pair_and_links_the_selection(win):
    w, ds = win, win.session.current_dataset
    view = _view(w, "scatter_matrix")
    names = ds.feature_names[:3]
    view.set_columns(names)
    assert len(view.cells) == 9 and len(view.cell_xy) == 6
    np.testing.assert_array_equal(view.cell_xy[(0, 1)], ds.X[:, [1, 0]])
    np.testing.assert_array_equal(view.cell_xy[(2, 0)], ds.X[:, [0, 2]])
    with pytest.raises(ValueError, match="at most 8"):
        view.set_columns([f"c{i}" for i in range(9)])
    hit = view.overlays[(1, 0)].select_rect(4.0, 3.5, 6.0, 5.0)  # x = col 0, y = col 1
    inside = (ds.X[:, 0] >= 4) & (ds.X[:, 0] <= 6) & (ds.X[:, 1] >= 3.5) & (ds.X[:, 1] <= 5)
    np.testing.assert_array_equal(np.sort(hit), np.flatnonzero(inside))
    for key in view.overlays:  # every cell rings the same rows
        np.testing.assert_array_equal(np.sort(view.highlighted_rows(key)), np.flatnonzero(inside))


def test_scatter_matrix_stays_readable_in_a_small_dock(win, qtbot):
    # issue 33: at a dock's size the cells kept shrinking and the rotated names piled up; now the
    # names are on the diagonal, tick values only on the outer cells, and the matrix scrolls
    # rather than draw a cell below MIN_CELL pixels
    from manifold_studio.gui.views.scatter_matrix_view import MIN_CELL, short_name
    w, ds = win, win.session.current_dataset
    view = _view(w, "scatter_matrix")
    view.set_columns(ds.feature_names[:4])
    view.resize(420, 320)
    qtbot.wait(50)
    k = 4
    assert view.grid.minimumWidth() >= k * MIN_CELL and view.grid.minimumHeight() >= k * MIN_CELL
    for i in range(k):
        title = view.cells[(i, i)].titleLabel.text
        assert short_name(ds.feature_names[i]) in title
        for j in range(k):
            cell = view.cells[(i, j)]
            assert cell.getAxis("left").isVisible() == (j == 0)
            assert cell.getAxis("bottom").isVisible() == (i == k - 1)
            assert not cell.getAxis("left").labelText and not cell.getAxis("bottom").labelText
    assert short_name("od280/od315_of_diluted_wines").endswith("…") and len(short_name("x" * 40)) == 16


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_correlation_heatmap_equals_scipy(win, method):
    w, ds = win, win.session.current_dataset
    view = _view(w, "correlations")
    view.set_method(method)
    res = view.result
    ref = stats.pearsonr if method == "pearson" else stats.spearmanr
    image = view.image.image
    d = ds.n_features
    for a in range(d):
        for b in range(d):
            r = ref(ds.X[:, res.order[a]], ds.X[:, res.order[b]])[0]
            assert image[a, b] == pytest.approx(r, abs=1e-12)
    assert len(view.texts) == d * d
    assert res.names == [ds.feature_names[j] for j in res.order]
    left = view.plot.getPlotItem().getAxis("left")._tickLevels[0]
    assert [t for _pos, t in left] == [f"{n} ({j + 1})" for j, n in enumerate(res.names)]
    # under the heatmap: the names where they fit side by side, else the numbers the rows carry
    view.plot.getPlotItem().vb.resize(2400, 2400)
    view.fit_labels()
    bottom = view.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [t for _pos, t in bottom] == res.names and all(t.isVisible() for t in view.texts)
    view.plot.getPlotItem().vb.resize(16 * d, 16 * d)   # cells of 16 px
    view.fit_labels()
    bottom = view.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [t for _pos, t in bottom] == [str(j + 1) for j in range(d)]
    assert not any(t.isVisible() for t in view.texts)
    # a click on a cell shows that pair in the scatter plot
    view.show_pair(view.cell_at(0.5, 1.5))
    scatter = w.views["scatter"]
    assert scatter.x_combo.currentText() == res.names[0] and scatter.y_combo.currentText() == res.names[1]


def test_pca_loadings_and_biplot(win):
    w, ds = win, win.session.current_dataset
    view = _view(w, "pca_loadings")
    est = ms.get_algorithm("pca", n_components=2).fit(ds.X)
    expected = est.components_.T * np.sqrt(est.explained_variance_)
    np.testing.assert_allclose(view.drawn_loadings, expected, atol=1e-12)
    view.set_mode(BIPLOT)
    np.testing.assert_allclose(view.xy, est.embedding_, atol=1e-10)
    hit = view.selection_overlay.select_rect(0.0, -10, 10, 10)
    np.testing.assert_array_equal(np.sort(hit), np.flatnonzero(est.embedding_[:, 0] >= 0))
    w.selection.select(ds.name, [0, 1, 2])
    np.testing.assert_array_equal(view.selection_overlay.highlighted, [0, 1, 2])


def test_feature_ranking_sorts_and_keeps_the_top_k(win, qtbot):
    w, ds = win, win.session.current_dataset
    view = _view(w, "feature_ranking")
    classes = np.unique(ds.labels)
    f = np.array([stats.f_oneway(*[ds.X[ds.labels == c, j] for c in classes]).statistic
                  for j in range(ds.n_features)])
    model = view.model
    shown_f = np.array(model.column_values(1))
    np.testing.assert_allclose(shown_f, np.sort(f)[::-1], rtol=1e-12)  # sorted by F, largest first
    assert model.column_values(0)[0] == ds.feature_names[int(np.argmax(f))]
    view.table.sortByColumn(4, Qt.SortOrder.AscendingOrder)  # variance, smallest first
    np.testing.assert_allclose(model.column_values(4), np.sort(ds.X.var(axis=0, ddof=1)), rtol=1e-12)
    best = np.argsort(-f)[:2]
    names = [ds.feature_names[j] for j in best]
    # select_columns is installed: the top k (ranked after the chain) end the chain, other steps kept
    w.preparation_panel.set_chain([("standardize", {})])
    view.redraw()
    assert "after the current preparation chain (standardize, 4 columns)" in view.info.text()
    n_before = len(w.session.datasets)
    assert view.keep_top(2, "anova_f") == "preparation"
    assert len(w.session.datasets) == n_before
    chain = w.preparation_panel.chain()
    assert [s for s, _ in chain] == ["standardize", "select_columns"]
    assert chain[1][1]["include"] == names
    w.run_algorithm("pca")            # the next run fits only those columns, standardized
    run = wait_last_run(qtbot, w)
    Z = ds.X[:, best]
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
    ref = ms.get_algorithm("pca", n_components=2).fit(Z).embedding_
    np.testing.assert_allclose(np.abs(run.embedding), np.abs(ref), atol=1e-9)
    # without select_columns installed: a new data set with those columns
    w.preparation_panel.set_chain([])
    view.redraw()
    steps = w.host.preprocessors
    saved = steps.pop("select_columns")
    try:
        name = view.keep_top(2, "anova_f")
    finally:
        steps["select_columns"] = saved
    assert len(w.session.datasets) == n_before + 1
    new = w.session.datasets[name]
    np.testing.assert_array_equal(new.X, ds.X[:, best])
    assert new.feature_names == names
    np.testing.assert_array_equal(new.labels, ds.labels)
    assert new.report[-1].startswith(f"Kept the top 2 of the 4 features of '{ds.name}' by ANOVA F")
    assert new.report[-1].endswith(f"select_columns with include={','.join(new.feature_names)})")


def test_meta_columns_of_a_table_are_offered(qtbot, make_window):
    w = make_window(discovered_host(("pca",), ("penguins",)))
    ds = w.session.load("sample:penguins")
    assert "island" in ds.table.meta_names
    view = _view(w, "distribution")
    view.column_combo.setCurrentText("island")
    rows = np.arange(ds.n_samples) if ds.table_rows is None else ds.table_rows
    island = np.array([str(v) for v in ds.table.column("island").decoded()[rows]])
    cats, counts = np.unique(island, return_counts=True)
    assert view.categorical and list(view.categories) == list(cats)
    np.testing.assert_array_equal([h[0] for h in view.drawn_counts_by_category], counts)


def test_a_view_behind_another_tab_draws_only_when_its_tab_is_chosen(qtbot, win):
    w = win
    for k in FEATURE_VIEWS:  # hidden by default: opened from the View menu, each in front of the last
        w.docks[f"view:{k}"].toggleViewAction().trigger()
    qtbot.wait(50)
    behind = [k for k in FEATURE_VIEWS if not w.views[k].on_screen()]
    assert behind  # tabbed docks: at most one of them is on screen
    key = behind[0]
    view = w.views[key]
    w.session.load("sample:iris")  # a new data set: every feature view is out of date
    assert view._stale
    w.docks[f"view:{key}"].raise_()
    qtbot.waitUntil(lambda: not view._stale, timeout=5_000)
    assert view.dataset is w.session.current_dataset


def test_every_feature_view_exports_png_and_svg(qtbot, win, tmp_path):
    w = win
    for key in FEATURE_VIEWS:
        dock = w.docks[f"view:{key}"]
        dock.show()
        dock.raise_()
        w.views[key].redraw()
        for ext in (".png", ".svg"):
            path = tmp_path / f"{key}{ext}"
            job = w.export.export_image(f"view:{key}", path, 500, 400)
            assert job is not None, key
            wait_idle(qtbot, w)
            assert path.exists() and path.stat().st_size > 500, (key, ext)
            head = path.read_bytes()[:200]
            assert head.startswith(b"\x89PNG") if ext == ".png" else b"<svg" in head or b"<?xml" in head


def test_large_data_is_computed_on_a_worker_and_drawn_as_a_sample(qtbot, win):
    from manifold_studio.data import Dataset
    from manifold_studio.gui.views.feature_base import SYNC_CELLS
    from manifold_studio.gui.views.small_map import MAX_DRAWN

    w = win
    rng = np.random.default_rng(0)
    n = 50_000
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 8)) + y[:, None] * np.linspace(0, 1, 8)
    assert X.size > SYNC_CELLS and n > MAX_DRAWN
    w.session.add_dataset(Dataset("big", X, y, [f"f{j}" for j in range(8)]))
    views = [w.views[k] for k in ("distribution", "correlations", "pca_loadings", "feature_ranking")]
    for v in views:
        v.redraw()
    assert any(v.busy for v in views)  # computed in the background
    qtbot.waitUntil(lambda: not any(v.busy for v in views), timeout=60_000)
    dist, corr, _pca, rank = views
    assert dist.result is not None and dist.result.counts.sum() == n
    np.testing.assert_allclose(corr.result.r, np.corrcoef(X.T)[np.ix_(corr.result.order, corr.result.order)],
                               atol=1e-10)
    f = stats.f_oneway(*[X[y == c, 7] for c in range(3)]).statistic
    assert rank.ranking.anova_f[7] == pytest.approx(f, rel=1e-10)
    scatter = _view(w, "scatter")
    drawn = len(scatter.scatter.data)
    assert drawn < n and abs(drawn - MAX_DRAWN) < 0.05 * MAX_DRAWN
    hit = scatter.selection_overlay.select_rect(0, 0, 100, 100)  # selecting uses every point
    assert len(hit) == int(((X[:, 0] >= 0) & (X[:, 1] >= 0)).sum())


def test_violin_after_a_histogram_with_a_selection_spreads_the_classes(win):
    # the histogram's highlighted selection (x = the value, up to ~7 here) must not widen the
    # violin's range (x = the class position 0..2): the classes stay side by side, not squeezed
    w, ds = win, win.session.current_dataset
    view = _view(w, "distribution")
    view.column_combo.setCurrentText(ds.feature_names[2])
    view.mode_combo.setCurrentText(HISTOGRAM)
    w.selection.select(ds.name, np.arange(40))
    view.mode_combo.setCurrentText(VIOLIN)
    (x0, x1), _ = view.plot.getPlotItem().viewRange()
    n = len(np.unique(ds.labels))
    assert -1.0 < x0 < 0.0 and n - 1 < x1 < n
    # the bottom axis names each class under its violin; no legend lies over the violins
    ticks = view.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [p for p, _ in ticks] == list(range(n))
    assert [t for _, t in ticks] == [str(c) for c in np.unique(ds.labels)]
    assert len(view.plot.getPlotItem().legend.items) == 0
    view.mode_combo.setCurrentText(HISTOGRAM)
    (x0, x1), _ = view.plot.getPlotItem().viewRange()
    values = ds.X[:, 2]
    assert x0 <= values.min() and x1 >= values.max() and x1 - x0 < 2 * np.ptp(values)
