"""The map instruments' numbers (issue 31) against independent computations: the binned KDE
against scipy.stats.gaussian_kde, search against pandas.DataFrame.query, explain-selection
against numpy / scipy, neighbours against brute force, the inverse map against PCA's own
inverse_transform, and the bad inputs of the issue."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.spatial.distance import cdist

import manifold_studio as ms
from manifold_studio.analysis import explain_selection as ex
from manifold_studio.analysis import inverse_map as inv
from manifold_studio.analysis import map_density as md
from manifold_studio.analysis import map_labels as ml
from manifold_studio.analysis import map_neighbours as mn
from manifold_studio.analysis import search_expression as se
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.tables.dataset_columns import FEATURE, LABEL, Column
from manifold_studio.tables.search import SearchError


@pytest.fixture(scope="module")
def wine():
    return ms.load_data("sample:wine")


def wine_columns(ds):
    cols = [Column(n.replace(" ", "_").replace("/", "_"), ds.X[:, j], FEATURE) for j, n in enumerate(ds.feature_names)]
    cols.append(Column("cls", ds.labels.astype(str).astype(object), LABEL))
    return cols


# -- density ---------------------------------------------------------------------------------------
def blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.r_[rng.normal(size=(300, 2)) @ [[1, .5], [0, 1]], rng.normal(size=(200, 2)) + 4]


@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0])
def test_binned_kde_matches_gaussian_kde(factor):
    xy = blobs()
    grid = md.kde_grid(xy, factor=factor, size=256)
    ref = stats.gaussian_kde(xy.T, bw_method=lambda k: factor * k.n ** (-1 / 6))
    X, Y = np.meshgrid(grid.x[::8], grid.y[::8])
    expected = ref(np.vstack([X.ravel(), Y.ravel()])).reshape(X.shape)
    assert np.abs(grid.values[::8, ::8] - expected).max() < 0.01 * expected.max()
    np.testing.assert_allclose(grid.at(xy), ref(xy.T), rtol=0.02, atol=1e-3 * expected.max())
    assert grid.values.sum() * grid.cell_area == pytest.approx(1.0, abs=2e-3)


def test_contours_lie_on_their_level_and_enclose_the_mass():
    xy = blobs(1)
    grid = md.kde_grid(xy, size=128)
    levels = md.contour_levels(grid, [0.5, 0.9])
    assert levels[0] > levels[1] > 0
    inside = grid.values >= levels[0]
    assert (grid.values[inside].sum() / grid.values.sum()) == pytest.approx(0.5, abs=0.02)
    seg = md.contour_segments(grid, levels[0])
    assert seg.shape[1:] == (2, 2) and len(seg) > 20
    np.testing.assert_allclose(grid.at(seg.reshape(-1, 2)), levels[0], rtol=0.05)


def test_class_densities_and_point_density():
    xy = blobs(2)
    codes = np.r_[np.zeros(300, int), np.ones(200, int)]
    grids = md.class_density_grids(xy, codes)
    assert set(grids) == {0, 1}
    ref1 = stats.gaussian_kde(xy[codes == 1].T)
    np.testing.assert_allclose(grids[1].at(xy[codes == 1]), ref1(xy[codes == 1].T), rtol=0.03)
    d = md.point_density(xy)
    assert d.shape == (500,) and (d > 0).all()


def test_density_bad_inputs():
    with pytest.raises(DataError, match="same place"):
        md.kde_grid(np.ones((50, 2)))
    with pytest.raises(DataError, match="at least 3"):
        md.kde_grid(np.array([[0.0, 1.0], [1.0, 2.0]]))
    with pytest.raises(InvalidParameterError, match="Bandwidth"):
        md.kde_grid(blobs(), factor=0)
    line = np.c_[np.arange(20.0), np.zeros(20)]  # collinear: a ridge keeps the kernel proper
    assert np.isfinite(md.kde_grid(line).values).all()


# -- search ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("query", [
    "alcohol > 13 and hue < 1",
    "alcohol > 13 or not (hue < 1)",
    "(proline >= 1000 | magnesium < 90) & ash > 2.3",
    "1 < hue < 1.1",
    "alcohol * 2 - malic_acid > 24",
    "cls == '2' and alcohol < 12.5",
    "cls != '1'",
    "-flavanoids < -3",
])
def test_expression_search_matches_pandas_query(wine, query):
    cols = wine_columns(wine)
    frame = pd.DataFrame({c.name: c.values for c in cols})
    got = se.search(query, cols, wine.n_samples, mode=se.EXPRESSION)
    expected = frame.index.isin(frame.query(query).index)
    np.testing.assert_array_equal(got.mask, expected)
    assert 0 < got.count == expected.sum()


def test_text_and_regex_search_and_auto_mode():
    cols = [Column("x", np.arange(6.0), FEATURE),
            Column("name", np.array(["Alpha", "beta", "gamma", "ALPHABET", "", "delta"], dtype=object), LABEL)]
    assert se.search("alpha", cols, 6, mode=se.CONTAINS).mask.tolist() == [1, 0, 0, 1, 0, 0]
    assert se.search("^(beta|delta)$", cols, 6, mode=se.REGEX).mask.tolist() == [0, 1, 0, 0, 0, 1]
    assert se.search("x >= 4", cols, 6).mode == se.EXPRESSION
    auto = se.search("alpha", cols, 6)
    assert auto.mode == se.CONTAINS and auto.count == 2
    numbered = [Column("x", np.arange(4.0), FEATURE), Column("kind", np.array([1, 2, 12, 3]), LABEL)]
    assert se.search("2", numbered, 4, mode=se.CONTAINS).mask.tolist() == [0, 1, 1, 0]  # labels as text


def test_auto_search_reads_slashes_as_a_regular_expression():
    cols = [Column("x", np.arange(4.0), FEATURE),
            Column("name", np.array(["Abc", "abd", "xyz", "ab/c"], dtype=object), LABEL)]
    got = se.search("/^ab[cd]$/", cols, 4)   # the box's placeholder: "text, /regex/ or alcohol > 13"
    assert got.mode == se.REGEX and got.mask.tolist() == [1, 1, 0, 0]
    with pytest.raises(SearchError, match="Position 2: not a valid regular expression"):
        se.search("/[a/", cols, 4)   # the '[' is the typed text's 2nd character
    assert se.search("b/c", cols, 4).mask.tolist() == [0, 0, 0, 1]   # a slash inside is text


def test_auto_search_names_a_misspelt_column_instead_of_finding_nothing(wine):
    cols = wine_columns(wine)
    with pytest.raises(SearchError, match="Position 1: there is no column 'alcohl'. Columns: alcohol"):
        se.search("alcohl > 13", cols, wine.n_samples)
    texts = [Column("x", np.arange(3.0), FEATURE), Column("t", np.array(["a>b", "c", "a>b"], dtype=object), LABEL)]
    assert se.search("a>b", texts, 3).mask.tolist() == [1, 0, 1]  # a text that happens to parse is still found


@pytest.mark.parametrize("query, pattern", [
    ("alcohol > ", "Position 10: expected a number"),
    ("alcohol >> 3", "Position 10"),
    ("(alcohol > 3", "Position 13: expected '\\)'"),
    ("alcohol > 3 hue", "Position 13"),
    ("alcohol $ 3", "Position 9: unexpected character"),
    ("nosuch > 3", "Position 1: there is no column 'nosuch'. Columns: alcohol"),
    ("cls > '1'", "text compares with == and != only"),
    ("alcohol == 'x'", "compares text with a number"),
    ("alcohol", "expected a condition"),
])
def test_expression_errors_name_the_position(wine, query, pattern):
    with pytest.raises(SearchError, match=pattern):
        se.search(query, wine_columns(wine), wine.n_samples, mode=se.EXPRESSION)


def test_search_never_evaluates_python(wine):
    with pytest.raises(SearchError):
        se.search("__import__('os').system('true')", wine_columns(wine), wine.n_samples, mode=se.EXPRESSION)
    with pytest.raises(SearchError, match="regular expression"):
        se.search("(unclosed", [Column("t", np.array(["a"], dtype=object), LABEL)], 1, mode=se.REGEX)


# -- explain ---------------------------------------------------------------------------------------
def test_explain_numeric_matches_numpy_scipy(wine):
    cols = wine_columns(wine)
    sel = wine.labels.astype(str) == "1"
    res = ex.explain(cols, sel)
    assert res.n_a == sel.sum() and res.n_b == (~sel).sum()
    by_name = {r.feature: r for r in res.rows if r.kind == "numeric"}
    ps = []
    for j, name in enumerate(c.name for c in cols[:-1]):
        a, b = wine.X[sel, j], wine.X[~sel, j]
        pooled = np.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
        assert by_name[name].effect == pytest.approx((a.mean() - b.mean()) / pooled, rel=1e-10)
        p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        assert by_name[name].p == pytest.approx(p, rel=1e-10)
        ps.append(p)
    q_all = stats.false_discovery_control([r.p for r in res.rows])
    np.testing.assert_allclose([r.q for r in res.rows], q_all, rtol=1e-10)
    assert abs(res.rows[0].effect) >= abs(res.rows[-1].effect)
    ks = {r.feature: r.p for r in ex.explain(cols[:3], sel, test=ex.KS).rows}
    for j in range(3):
        assert ks[cols[j].name] == pytest.approx(stats.ks_2samp(wine.X[sel, j], wine.X[~sel, j]).pvalue)


def test_explain_categorical_odds_ratio_and_tests(wine):
    cols = wine_columns(wine)
    sel = wine.X[:, 0] > 13.5
    res = ex.explain([cols[-1]], sel)
    labels = wine.labels.astype(str)
    for r in res.rows:
        a1 = int((sel & (labels == r.category)).sum())
        b1 = int((~sel & (labels == r.category)).sum())
        table = np.array([[a1, sel.sum() - a1], [b1, (~sel).sum() - b1]])
        cells = table + (0.5 if (table == 0).any() else 0)
        assert r.odds_ratio == pytest.approx(cells[0, 0] * cells[1, 1] / (cells[0, 1] * cells[1, 0]))
        ref = (stats.fisher_exact(table).pvalue if r.test == ex.FISHER
               else stats.chi2_contingency(table).pvalue)
        assert r.p == pytest.approx(ref)
    q = ex.benjamini_hochberg([0.01, np.nan, 0.04])
    assert np.isnan(q[1])
    np.testing.assert_allclose(q[[0, 2]], stats.false_discovery_control([0.01, 0.04]))


def test_explain_refuses_empty_and_all_and_compares_two_selections(wine):
    cols = wine_columns(wine)
    n = wine.n_samples
    with pytest.raises(DataError, match="no row is selected"):
        ex.explain(cols, np.zeros(n, bool))
    with pytest.raises(DataError, match=f"all {n} rows are selected"):
        ex.explain(cols, np.ones(n, bool))
    with pytest.raises(DataError, match="same rows"):
        ex.explain(cols, np.arange(10), np.arange(10))
    res = ex.explain(cols[:2], np.arange(10), np.arange(50, 80))
    a, b = wine.X[:10, 0], wine.X[50:80, 0]
    row = next(r for r in res.rows if r.feature == cols[0].name)
    assert res.against == "selection B"
    assert row.p == pytest.approx(stats.mannwhitneyu(a, b).pvalue)
    assert ex.distinguishing_features(ex.explain(cols[:-1], wine.labels.astype(str) == "1"))[0].startswith(("high", "low"))


# -- neighbours ------------------------------------------------------------------------------------
def test_neighbours_match_brute_force_and_index_is_cached():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 40))
    cache = mn.IndexCache()
    index = cache.get("ds", X)
    assert cache.get("ds", X) is index and len(cache) == 1
    D = cdist(X[:100], X)
    hits = 0
    for row in range(100):
        got = mn.original_neighbours(index, row, 10)
        d = D[row].copy()
        d[row] = np.inf
        truth = np.argsort(d)[:10]
        hits += len(set(got.rows) & set(truth))
        np.testing.assert_allclose(got.distances, D[row, got.rows])
        assert row not in got.rows
    assert hits / 1000 >= 0.99


def test_neighbours_from_a_distance_matrix_and_local_trust():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5))
    D = cdist(X, X)
    got = mn.distance_row_neighbours(D, 7, 5)
    d = D[7].copy()
    d[7] = np.inf
    np.testing.assert_array_equal(got.rows, np.argsort(d)[:5])
    # the map = the first two coordinates of 2-D data: every neighbourhood kept
    X2 = rng.normal(size=(500, 2))
    trust = mn.map_faithfulness(mn.IndexCache().get("x2", X2), X2, 10)
    assert trust.min() == 1.0
    shuffled = mn.map_faithfulness(mn.IndexCache().get("x2", X2), X2[rng.permutation(500)], 10)
    assert shuffled.mean() < 0.1
    brute = np.argsort(cdist(X2, X2) + np.diag(np.full(500, np.inf)), axis=1)[:, :10]
    mp = mn.map_knn(X2[::-1], 10)
    expect = np.array([len(set(a) & set(b)) / 10 for a, b in zip(brute, mp)])
    np.testing.assert_allclose(mn.local_trustworthiness(brute, mp), expect)
    with pytest.raises(InvalidParameterError, match="at most 1"):
        mn.map_knn(np.zeros((2, 2)), 5)
    with pytest.raises(DataError, match="at least 2 points"):
        mn.map_knn(np.zeros((1, 2)), 1)


# -- inverse map -----------------------------------------------------------------------------------
def test_inverse_of_pca_is_its_inverse_transform(wine):
    est = ms.get_algorithm("pca", n_components=3)
    Z = est.fit_transform(wine.X)
    pos = np.array([[0.0, 0.0], [100.0, -5.0]])
    codes = np.c_[pos, np.full(2, Z[:, 2].mean())]
    np.testing.assert_allclose(inv.decode(est, pos, Z), est.inverse_transform(codes))
    positions, rows = inv.walk(est, Z[0, :2], Z[1, :2], Z, steps=5)
    assert positions.shape == (5, 2) and rows.shape == (5, wine.n_features)
    np.testing.assert_allclose(positions[[0, -1]], Z[:2, :2])


def test_inverse_refuses_methods_that_cannot_decode(wine):
    est = ms.get_algorithm("kmeans", n_clusters=3)  # no inverse_transform, fitted or not
    status = inv.decoder_status(est, "k-means")
    assert not status.ok and "cannot decode" in status.message
    with pytest.raises(InvalidParameterError, match="cannot decode"):
        inv.decode(est, [[0, 0]], np.zeros((178, 2)), "k-means")
    stored = inv.decoder_status(None, "X_umap", stored=True)   # a map that came with the data file
    assert not stored.ok and "stored in the data file" in stored.message and "fit the run again" not in stored.message
    with pytest.raises(InvalidParameterError, match="X_umap cannot decode"):
        inv.walk(None, [0, 0], [1, 1], np.zeros((178, 2)), 4, "X_umap", stored=True)


def test_a_umap_without_an_inverse_says_so_before_any_hover(wine):
    X = wine.X[:80]
    plain = ms.get_algorithm("umap", n_epochs=30).fit(X)
    assert inv.decoder_status(plain, "UMAP").ok
    for params, why in (({"densmap": True}, "densmap=True"), ({"metric": "cosine"}, "metric='cosine'")):
        est = ms.get_algorithm("umap", n_epochs=30, **params).fit(X)
        status = inv.decoder_status(est, "UMAP")   # said before decoding, not an error at every hover
        assert not status.ok and status.message.startswith("UMAP cannot decode a map position") and why in status.message
        with pytest.raises(InvalidParameterError, match=why):
            inv.decode(est, [[0.0, 0.0]], est.embedding_, "UMAP")
    with pytest.raises(InvalidParameterError, match="Walk steps"):
        inv.walk_positions([0, 0], [1, 1], 1)


# -- labels ----------------------------------------------------------------------------------------
def test_density_groups_find_the_blobs_and_labels_do_not_overlap(wine):
    rng = np.random.default_rng(3)
    xy = np.r_[rng.normal(size=(400, 2)), rng.normal(size=(400, 2)) * 0.5 + [8, 0], rng.normal(size=(300, 2)) + [0, 9]]
    truth = np.repeat([0, 1, 2], [400, 400, 300])
    codes = ml.density_groups(xy, mass=0.8)
    assert codes.max() == 2
    for g in range(3):  # each group is (almost) one blob
        members = truth[codes == g]
        assert np.bincount(members).max() / members.size > 0.98
    texts = ml.majority_texts(codes, range(3), np.array(["a", "b", "c"])[truth])
    assert sorted(t.split()[0] for t in texts) == ["a", "b", "c"]
    cands = ml.candidates(xy, codes, texts)
    assert len(ml.place_labels(cands, (40.0, 40.0))) == 3       # zoomed in: all fit
    kept = ml.place_labels(cands, (0.5, 0.5))                   # far out: boxes collide
    assert len(kept) < 3 and cands[kept[0]].count == max(c.count for c in cands)
    for i in ml.place_labels(cands, (40.0, 40.0)):
        for j in ml.place_labels(cands, (40.0, 40.0)):
            if i < j:
                a, b = ml.text_box(cands[i], (40, 40)), ml.text_box(cands[j], (40, 40))
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])


def test_finer_labels_replace_coarse_ones_when_zoomed(wine):
    rng = np.random.default_rng(4)
    xy = np.r_[rng.normal(size=(300, 2)) * 0.3, rng.normal(size=(300, 2)) * 0.3 + [3, 0]]
    coarse = np.zeros(600, int)
    fine = np.repeat([0, 1], 300)
    cands = ml.candidates(xy, coarse, ["all"]) + ml.candidates(
        xy, fine, ["left", "right"], level=1, parents=ml.parent_of(fine, coarse, [0, 1]))
    assert [cands[i].text for i in ml.place_labels(cands, (5.0, 5.0))] == ["all"]
    assert sorted(cands[i].text for i in ml.place_labels(cands, (200.0, 200.0))) == ["left", "right"]
    cols = wine_columns(wine)
    words = ml.feature_texts(wine.labels.astype(int), [1], cols[:-1])
    assert words[0] and all(w.split()[0] in ("high", "low") for w in words[0].split(", "))


# -- cross-filters ---------------------------------------------------------------------------------
def test_cross_filter_counts_match_numpy_on_the_rows_of_the_other_filters(wine):
    from manifold_studio.analysis.cross_filter import BINS, CrossFilter

    cols = wine_columns(wine)
    frame = pd.DataFrame({c.name: c.values for c in cols})
    cf = CrossFilter(wine.n_samples)
    cf.add("alcohol", frame["alcohol"].to_numpy())
    cf.add("hue", frame["hue"].to_numpy())
    cf.add("cls", frame["cls"].to_numpy())
    cf.set_range("alcohol", 13.5, 12.5)            # either order
    cf.set_categories("cls", [cf.chart("cls").labels.index("1"), cf.chart("cls").labels.index("2")])
    totals, filtered, passing = cf.counts()
    in_alcohol = frame["alcohol"].between(12.5, 13.5)
    in_cls = frame["cls"].isin(["1", "2"])
    np.testing.assert_array_equal(passing, (in_alcohol & in_cls).to_numpy())
    np.testing.assert_array_equal(cf.passing(), passing)
    hue_edges = np.linspace(frame["hue"].min(), frame["hue"].max(), BINS + 1)
    np.testing.assert_array_equal(totals[1], np.histogram(frame["hue"], hue_edges)[0])
    np.testing.assert_array_equal(filtered[1], np.histogram(frame["hue"][in_alcohol & in_cls], hue_edges)[0])
    alc_edges = np.linspace(frame["alcohol"].min(), frame["alcohol"].max(), BINS + 1)
    np.testing.assert_array_equal(filtered[0], np.histogram(frame["alcohol"][in_cls], alc_edges)[0])
    labels = cf.chart("cls").labels
    expect = frame["cls"][in_alcohol].value_counts()
    assert {labels[i]: int(c) for i, c in enumerate(filtered[2]) if c} == expect.to_dict()
    cf.toggle_category("cls", labels.index("2"))
    assert cf.chart("cls").filter == frozenset({labels.index("1")})
    cf.clear()
    assert not cf.active and cf.passing().all()
    with pytest.raises(InvalidParameterError, match="categorical: filter it by categories"):
        cf.set_range("cls", 0, 1)
    with pytest.raises(InvalidParameterError, match="no chart of column 'nope'"):
        cf.set_range("nope", 0, 1)
    with pytest.raises(DataError, match="all missing"):
        cf.add("empty", np.full(wine.n_samples, np.nan))


@pytest.mark.parametrize("algo, params", [
    ("ppca", {"n_components": 3}),
    ("nmf", {"n_components": 2, "random_state": 0}),
    ("autoencoder", {"n_components": 2, "max_iter": 5, "random_state": 0}),
    ("umap", {"n_neighbors": 10, "n_epochs": 30, "random_state": 0}),
])
def test_every_method_that_decodes_decodes_like_its_inverse_transform(wine, algo, params):
    if algo not in ms._host().algorithms:
        pytest.skip(f"{algo} not installed")
    X = wine.X[:80] - wine.X[:80].min(axis=0)   # non-negative, for NMF
    est = ms.get_algorithm(algo, **params)
    Z = est.fit_transform(X)
    assert inv.decoder_status(est, algo).ok
    pos = Z[:3, :2] + 0.1
    codes = np.c_[pos, np.broadcast_to(Z[:, 2:].mean(axis=0), (3, Z.shape[1] - 2))]
    np.testing.assert_allclose(inv.decode(est, pos, Z, algo), est.inverse_transform(codes), rtol=1e-10, atol=1e-10)


def test_search_finds_a_gene_past_the_first_columns_of_a_sparse_data_set():
    import scipy.sparse as sp

    from manifold_studio.data import Dataset
    from manifold_studio.session.model import Session
    from manifold_studio.tables.dataset_columns import SPARSE_TABLE_COLUMNS, dataset_columns

    X = sp.random(80, SPARSE_TABLE_COLUMNS + 70, density=0.2, format="csr", random_state=3) * 10
    names = [f"gene{j}" for j in range(X.shape[1])]
    session = Session()
    name = session.add_dataset(Dataset("cells", X, feature_names=names))
    ds = session.datasets[name]
    cols = dataset_columns(session, name)
    far = names[-1]
    assert far not in {c.name for c in cols}   # the listed columns stop early on sparse data
    text = f"{far} > 2 and gene0 >= 0"
    extra = se.named_sparse_features(text, ds, cols)
    assert [c.name for c in extra] == [far]
    got = se.search(text, cols + extra, 80)
    np.testing.assert_array_equal(got.mask, X.toarray()[:, -1] > 2)
    assert se.named_sparse_features("GENE0 > 1", ds, cols) == []             # listed already (any case)
    assert se.named_sparse_features(f"{far} >", ds, cols) == []              # does not parse: the search says where
    dense = Dataset("dense", X.toarray(), feature_names=names)
    assert se.named_sparse_features(text, dense, []) == []


def test_feature_texts_of_a_sparse_matrix_equal_those_of_its_dense_columns():
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    n, d = 300, 64
    D = np.round(rng.gamma(1.0, 2.0, (n, d)), 1) * (rng.random((n, d)) < 0.2)
    codes = rng.integers(0, 3, n)
    D[codes == 1, 60] += 4.0        # group 1 is high in a feature past the first 50
    D[codes == 2, 10] = 0.0         # group 2 is low in another
    names = [f"gene{j}" for j in range(d)]
    dense = ml.feature_texts(codes, [0, 1, 2], [ml.NamedValues(nm, D[:, j]) for j, nm in enumerate(names)])
    sparse = ml.feature_texts(codes, [0, 1, 2], [], sparse=(sp.csr_array(D), names))
    assert sparse == dense and "high gene60" in sparse[1] and "low gene10" in sparse[2]
