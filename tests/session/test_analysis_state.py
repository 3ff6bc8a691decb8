"""The analysis state the session owns (issue 30): the current preparation chain and a run's cut
change through commands that undo records; a run's prepared data is recomputed from its data
set and its fitted chain; the project keeps the chain. Qt-free."""
from __future__ import annotations

import numpy as np
import pytest

sklearn_metrics = pytest.importorskip("sklearn.metrics")
sklearn_pre = pytest.importorskip("sklearn.preprocessing")

from scipy.cluster import hierarchy  # noqa: E402

from manifold_studio.analysis.compare_clusterings import compare_on_dataset  # noqa: E402
from manifold_studio.analysis.report import run_item  # noqa: E402
from manifold_studio.errors import DataError  # noqa: E402
from manifold_studio.project.project_file import load_project, read_project, save_project  # noqa: E402

STANDARDIZE = ("standardize", {"with_mean": True, "with_std": True})


def test_chain_is_a_command_that_undo_reverts_and_the_next_run_fits(wine):
    events = []
    wine.subscribe(lambda e: events.append(e.kind))
    assert wine.chain == []
    cmd = wine.set_chain([STANDARDIZE], "Add standardize")
    assert cmd.text == "Add standardize" and wine.chain == [STANDARDIZE]
    assert "chain_changed" in events and "command" in events
    assert wine.set_chain([STANDARDIZE]) is None  # the same chain: nothing to record
    run = wine.run("kmeans", n_clusters=3, random_state=0)
    assert run.meta["chain"] == [["standardize", {"with_mean": True, "with_std": True}]]
    assert wine.undo() is cmd and wine.chain == []
    plain = wine.run("kmeans", n_clusters=3, random_state=0)
    assert "chain" not in plain.meta
    assert wine.redo() is cmd and wine.chain == [STANDARDIZE]
    # the session's chain is a copy: editing it changes nothing
    wine.chain[0][1]["with_std"] = False
    assert wine.chain == [STANDARDIZE]
    # a project opened restores its chain and starts a new history
    wine.restore_chain([])
    assert wine.chain == [] and wine.undo() is None and wine.redo() is None


def test_prepared_data_is_the_standardized_matrix_and_the_silhouette_agrees(wine):
    wine.set_chain([STANDARDIZE])
    run = wine.run("kmeans", n_clusters=3, random_state=0)
    ds = wine.dataset()
    X, columns, caption = wine.prepared_data(run.id)
    Z = sklearn_pre.StandardScaler().fit_transform(ds.X)
    np.testing.assert_allclose(X, Z, atol=1e-12)
    assert columns == list(ds.feature_names) and caption == "standardize, 13 columns"
    ref = sklearn_metrics.silhouette_score(Z, run.labels)
    cmp = compare_on_dataset(["kmeans"], ds, [3], chain=[STANDARDIZE], seed=0, validation=None)
    row = cmp.row("kmeans", 3)
    assert np.array_equal(row.labels, run.labels)
    assert row.measures["silhouette"] == pytest.approx(ref, abs=1e-12)
    first = wine.prepared_data(run.id)
    assert wine.prepared_data(run.id) is first  # kept while the data set and the model are the same
    ds.X = ds.X.copy()  # the data set's matrix replaced: recomputed
    second = wine.prepared_data(run.id)
    assert second is not first and np.allclose(second.X, first.X, atol=1e-12)
    # a run without a chain: the raw data, said so
    raw = wine.run("kmeans", chain=[], n_clusters=3, random_state=0)
    assert wine.prepared_data(raw.id).caption == "raw data, 13 columns"
    np.testing.assert_array_equal(wine.prepared_data(raw.id).X, ds.X)
    wine.remove_run(run.id)
    wine.prepared_data(raw.id)
    assert run.id not in wine._prepared  # a removed run's matrix is not kept


def test_prepared_dataset_is_what_the_next_run_fits(wine):
    raw = wine.prepared_dataset()
    assert raw.caption == "raw data, 13 columns" and raw.X is wine.dataset().X
    wine.set_chain([STANDARDIZE, ("select_columns", {"exclude": ["proline"]})])
    prepared = wine.prepared_dataset()
    ds = wine.dataset()
    keep = [j for j, n in enumerate(ds.feature_names) if n != "proline"]
    np.testing.assert_allclose(prepared.X, sklearn_pre.StandardScaler().fit_transform(ds.X)[:, keep], atol=1e-12)
    assert prepared.columns == [ds.feature_names[j] for j in keep] and prepared.caption.endswith(", 12 columns")
    with pytest.raises(DataError, match=r"cannot run on 'Wine'.*nope"):
        wine.prepared_dataset(chain=[("select_columns", {"include": ["nope"]})])


def test_prepared_data_without_a_fitted_model_refits_the_chain_on_the_run_rows(wine):
    rows = np.arange(0, 178, 2)
    run = wine.run("kmeans", rows=rows, chain=[STANDARDIZE], n_clusters=3, random_state=0)
    expected = sklearn_pre.StandardScaler().fit_transform(wine.dataset().X[rows])
    np.testing.assert_allclose(wine.prepared_data(run.id).X, expected, atol=1e-12)
    run.estimator = None  # e.g. a project saved without its model
    wine._prepared.clear()
    np.testing.assert_allclose(wine.prepared_data(run.id).X, expected, atol=1e-12)


def test_cut_is_run_state_undoable_and_seen_by_title_and_report(wine):
    run = wine.run("hierarchical", n_clusters=3, method="ward")
    Z = run.estimator.linkage_matrix_
    cmd = wine.cut(run.id, n_clusters=4)
    expected = hierarchy.fcluster(Z, 4, criterion="maxclust")
    assert sklearn_metrics.adjusted_rand_score(run.cut_labels, expected) == pytest.approx(1.0)
    assert np.unique(run.labels).size == 3 and np.array_equal(run.shown_labels, run.cut_labels)
    cut = run.meta["cut"]
    assert cut["n_clusters"] == 4 and set(cut) == {"note", "height", "n_clusters"}
    assert n_at(Z, cut["height"]) == 4
    assert run.params_text().startswith("n_clusters=4,") and "fitted with n_clusters=3" in run.params_text()
    facts = dict(run_item(run).facts)
    assert facts["Parameters"].startswith("n_clusters=4,")
    assert cmd.text == f"Cut run #{run.id} into 4 clusters"
    wine.undo()
    assert run.cut_labels is None and "cut" not in run.meta and run.params_text().startswith("n_clusters=3,")
    wine.redo()
    assert np.unique(run.cut_labels).size == 4
    # the same cut again records nothing; a cut into the run's own k brings its own labels back
    assert wine.cut(run.id, n_clusters=4) is None
    wine.cut(run.id, n_clusters=3)
    assert run.cut_labels is None and "cut" not in run.meta
    assert wine.cut(run.id, n_clusters=3) is None and wine.set_cut(run.id, None) is None
    # a cut at a height gives the clusters of fcluster at that height
    h = float(np.sort(Z[:, 2])[-6])
    wine.cut(run.id, height=h)
    np.testing.assert_array_equal(np.unique(run.cut_labels).size, n_at(Z, h))


def n_at(Z, h):
    return np.unique(hierarchy.fcluster(Z, h, criterion="distance")).size


def test_bad_cuts_are_refused_with_a_clear_message_and_nothing_lost(wine):
    run = wine.run("hierarchical", n_clusters=3, method="ward")
    km = wine.run("kmeans", n_clusters=3, random_state=0)
    own = run.labels.copy()
    with pytest.raises(DataError, match="no tree to cut"):
        wine.cut(km.id, n_clusters=4)
    with pytest.raises(DataError, match="n_clusters must be a whole number from 1 to 178"):
        wine.cut(run.id, n_clusters=0)
    with pytest.raises(DataError, match="either"):
        wine.cut(run.id, n_clusters=2, height=1.0)
    with pytest.raises(DataError, match="needs 178 labels"):
        wine.set_cut(run.id, np.zeros(5))
    wine.cut(run.id, n_clusters=4)
    before = run.cut_labels.copy()
    wine.remove_dataset(run.dataset_name)
    with pytest.raises(DataError, match=r"data set 'Wine', which was removed.*labels are unchanged"):
        wine.cut(run.id, n_clusters=5)
    with pytest.raises(DataError, match="was removed"):
        wine.set_cut(run.id, None)
    with pytest.raises(DataError, match="was removed"):
        wine.prepared_data(run.id)
    np.testing.assert_array_equal(run.cut_labels, before)
    np.testing.assert_array_equal(run.labels, own)
    assert run.meta["cut"]["n_clusters"] == 4


def test_project_keeps_the_chain_and_the_cut(wine, tmp_path):
    wine.set_chain([STANDARDIZE])
    run = wine.run("hierarchical", n_clusters=3, method="ward")
    wine.cut(run.id, n_clusters=4)
    path = save_project(wine, tmp_path / "wine.msproj")
    back, _ = load_project(path)
    assert back.chain == [STANDARDIZE]
    again = back.runs[run.id]
    np.testing.assert_array_equal(again.cut_labels, run.cut_labels)
    assert again.meta["cut"]["n_clusters"] == 4 and again.params_text().startswith("n_clusters=4,")
    np.testing.assert_allclose(back.prepared_data(run.id).X, wine.prepared_data(run.id).X, atol=1e-12)
    nxt = back.run("hierarchical", n_clusters=3, method="ward")  # the next run fits the chain
    np.testing.assert_array_equal(nxt.labels, run.labels)


def test_project_naming_a_step_not_installed_keeps_the_chain_and_says_so(wine, tmp_path):
    wine.restore_chain([STANDARDIZE, ("no_such_step", {"x": 1})])
    path = save_project(wine, tmp_path / "odd.msproj")
    contents = read_project(path)
    assert contents.session.chain == [STANDARDIZE, ("no_such_step", {"x": 1})]
    assert any("'no_such_step'" in p and "not installed" in p for p in contents.problems)
    assert contents.session.missing_steps() == ["no_such_step"]
    with pytest.raises(Exception, match="no_such_step"):
        contents.session.run("kmeans", n_clusters=3)


def test_cli_plot_of_a_chained_clustering_is_the_pca_of_the_prepared_data(tmp_path, capsys):
    from manifold_studio.analysis.feature_stats import pca_map
    from manifold_studio.cli.main import main

    svg = tmp_path / "map.svg"
    rc = main(["run", "kmeans", "--data", "sample:wine", "--prep", "standardize", "-p", "n_clusters=3",
               "random_state=0", "--out", str(tmp_path / "k.csv"), "--plot", str(svg)])
    assert rc == 0, capsys.readouterr().err
    text = svg.read_text()
    assert "drawn on the PCA map of the prepared data (standardize, 13 columns)" in text
    from manifold_studio import load_data
    from manifold_studio.render.plot import run_map

    wine = load_data("sample:wine")
    Z = sklearn_pre.StandardScaler().fit_transform(wine.X)
    plot = run_map(np.arange(178) % 3, "clustering", "kmeans", wine, {}, prepared=(Z, "standardize, 13 columns"))
    np.testing.assert_allclose(plot.xy, pca_map(Z, 2)[0], atol=1e-12)
    ratio = pca_map(Z, 2)[1][0]
    assert plot.axis_names[0] == f"PC1 ({ratio:.0%} of the variance)"
