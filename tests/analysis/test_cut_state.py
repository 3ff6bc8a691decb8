"""A dendrogram cut is run state (issue 30): the hierarchical estimator's ``cut`` repeats it from
its fitted linkage, and the exported script (run in a fresh process) and replay reproduce it."""
from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest
from scipy.cluster import hierarchy
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score

import manifold_studio as ms
from manifold_studio.algorithms.kmeans_core import assign_nearest
from manifold_studio.analysis.cluster_tasks import cut_labels
from manifold_studio.reproduce.replay import replay
from manifold_studio.reproduce.script_export import run_output_name, write_script
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.errors import InvalidParameterError, ManifoldStudioError
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.model import Session


def _height_for(Z, k: int) -> float:
    """The window's cut height for k clusters: midway between the merge heights around it."""
    hs = np.sort(Z[:, 2])
    return float((hs[-k] + hs[-k + 1]) / 2.0)


def test_cut_repeats_the_fit_and_the_dendrogram():
    X = ms.load_data("sample:iris").X
    est = ms.get_algorithm("hierarchical", n_clusters=3, method="ward").fit(X)
    np.testing.assert_array_equal(est.cut(n_clusters=3), est.labels_)
    four = est.cut(n_clusters=4)
    ref = AgglomerativeClustering(n_clusters=4, linkage="ward").fit_predict(X)
    assert adjusted_rand_score(ref, four) == 1.0 and np.unique(four).size == 4
    Z = est.linkage_matrix_
    h = _height_for(Z, 4)
    np.testing.assert_array_equal(est.cut(height=h), cut_labels(Z, h))  # what the dendrogram view shows
    assert adjusted_rand_score(hierarchy.fcluster(Z, h, criterion="distance"), est.cut(height=h)) == 1.0
    np.testing.assert_array_equal(est.labels_, ms.get_algorithm("hierarchical", n_clusters=3).fit(X).labels_)
    div = ms.get_algorithm("hierarchical", n_clusters=4, method="divisive", random_state=0).fit(X)
    hd = _height_for(div.linkage_matrix_, 2)  # its leaves are its 4 clusters
    np.testing.assert_array_equal(div.cut(height=hd), cut_labels(div.linkage_matrix_, hd, leaves="clusters",
                                                                   leaf_labels=div.labels_))
    assert np.unique(div.cut(n_clusters=2)).size == 2
    np.testing.assert_array_equal(div.cut(n_clusters=4), div.labels_)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one of them"),
    ({"n_clusters": 3, "height": 1.0}, "exactly one of them"),
    ({"n_clusters": 0}, "between 1 and 150"),
    ({"n_clusters": 151}, "between 1 and 150"),
    ({"n_clusters": 2.5}, "between 1 and 150"),
    ({"height": float("nan")}, "finite number >= 0"),
    ({"height": -1.0}, "finite number >= 0"),
])
def test_a_bad_cut_is_refused_naming_what_is_allowed(kwargs, message):
    est = ms.get_algorithm("hierarchical", n_clusters=3).fit(ms.load_data("sample:iris").X)
    with pytest.raises(InvalidParameterError, match=message):
        est.cut(**kwargs)


def test_an_unfitted_tree_cannot_be_cut():
    with pytest.raises(ManifoldStudioError, match="fit"):
        ms.get_algorithm("hierarchical").cut(n_clusters=2)


def _write_csv(path, X, y, names):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*names, "kind"])
        for row, c in zip(X.tolist(), y):
            w.writerow([*map(repr, row), str(c)])
    return path


def _cut_as_the_window_does(run, k: int):
    """What the dendrogram view does on release of its cut line (ClusterOverlay.set_labels)."""
    final = getattr(run.estimator, "final", None) or run.estimator
    Z = final.linkage_matrix_
    h = _height_for(Z, k)
    labels = cut_labels(Z, h, leaves=final.linkage_leaves_, leaf_labels=run.labels)
    run.cut_labels = labels
    run.meta["cut"] = {"note": f"dendrogram cut at {h:.4g} ({k} clusters)", "height": h, "n_clusters": k}
    return labels


def _chained_run(s, algorithm, chain, **params):
    run = s.create_run(algorithm, params, chain=chain)
    task = s.fit_task(run)
    s.start_run(run.id)
    return s.complete_run(run.id, task())


def test_a_cut_at_4_clusters_reaches_the_project_the_script_and_replay(tmp_path):
    iris = ms.load_data("sample:iris")
    data = _write_csv(tmp_path / "iris.csv", iris.X, iris.labels, iris.feature_names)
    s = Session()
    s.load(str(data), label_column="kind")
    run = _chained_run(s, "hierarchical", [("standardize", {})], n_clusters=3)
    labels = _cut_as_the_window_does(run, 4)
    assert np.unique(labels).size == 4 and not np.array_equal(labels, run.labels)
    proj = save_project(s, tmp_path / "p.msproj")
    saved = read_project(proj).session.runs[run.id]
    np.testing.assert_array_equal(saved.cut_labels, labels)
    assert saved.meta["cut"]["n_clusters"] == 4
    # the script, in a fresh process: the same 4 clusters
    script = write_script(proj, tmp_path / "analysis.py")
    assert script_spec(script.read_text())["runs"][0]["cut"] == {"height": run.meta["cut"]["height"]}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "out" / f"{run_output_name(run)}.csv", newline="") as f:
        got = [int(r[0]) for r in list(csv.reader(f))[1:]]
    np.testing.assert_array_equal(got, labels)
    # replay of the training file: every row is a training row and keeps its cluster of the cut
    result = replay(proj, data, tmp_path / "replayed")
    replayed = np.loadtxt(result.outputs[0][1], delimiter=",", skiprows=1, usecols=1).astype(int)
    np.testing.assert_array_equal(replayed, labels)
    # new rows (moved a little): each joins the nearest of the cut's 4 centroids in the
    # standardized space
    moved = iris.X + 0.01
    other = _write_csv(tmp_path / "moved.csv", moved, iris.labels, iris.feature_names)
    result = replay(proj, other, tmp_path / "moved")
    replayed = np.loadtxt(result.outputs[0][1], delimiter=",", skiprows=1, usecols=1).astype(int)
    mean, std = iris.X.mean(0), iris.X.std(0)
    Z = (iris.X - mean) / std
    centres = np.stack([Z[labels == c].mean(0) for c in range(4)])
    np.testing.assert_array_equal(replayed, assign_nearest((moved - mean) / std, centres)[0])


def test_replay_of_separated_groups_gives_the_cut_labels_exactly(tmp_path):
    rng = np.random.default_rng(4)
    centres = np.array([[0, 0], [0, 10], [30, 0], [30, 10]], float)  # two pairs: k = 2 merges each pair
    y = np.repeat(np.arange(4), 20)
    X = centres[y] + rng.normal(scale=0.5, size=(80, 2))
    data = _write_csv(tmp_path / "groups.csv", X, y, ["a", "b"])
    s = Session()
    s.load(str(data), label_column="kind")
    run = s.run("hierarchical", n_clusters=2, method="average")
    labels = _cut_as_the_window_does(run, 4)
    assert adjusted_rand_score(y, labels) == 1.0
    result = replay(save_project(s, tmp_path / "p.msproj"), data, tmp_path / "out")
    replayed = np.loadtxt(result.outputs[0][1], delimiter=",", skiprows=1, usecols=1).astype(int)
    np.testing.assert_array_equal(replayed, labels)
