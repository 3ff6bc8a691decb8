"""``manifold-studio run ALGO --data D --distance-matrix`` (issue 22): the window's reader and checks,
metric set to 'precomputed', --extend with new-to-training distances, --fit-sample; and the plain
``--param metric=precomputed`` route on an ordinary file."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist, squareform

import manifold_studio as ms
from manifold_studio.cli.main import main


@pytest.fixture(scope="module")
def iris():
    return ms.load_data("sample:iris")


def _write(path, D, rows=None, cols=None):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        if cols is not None:
            w.writerow(["name"] + list(cols))
        for i, row in enumerate(D):
            w.writerow(([rows[i]] if rows is not None else []) + [repr(float(v)) for v in row])
    return path


def _read(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_fit_and_extend_a_distance_matrix(tmp_path, capsys, iris):
    train, new = iris.X[::2], iris.X[1::2]
    names = [f"f{i}" for i in range(len(train))]
    D = squareform(pdist(train))
    data = _write(tmp_path / "d.csv", D, names, names)
    to_train = cdist(new, train)
    ext = _write(tmp_path / "new.csv", to_train[:, ::-1], [f"n{i}" for i in range(len(new))], names[::-1])
    rc, _out, err = run(capsys, "run", "isomap", "--data", data, "--distance-matrix", "-p", "n_neighbors=30",
                        "--extend", ext, "--extend-out", tmp_path / "e.csv", "--out", tmp_path / "o.csv")
    assert rc == 0, err
    api = ms.get_algorithm("isomap", metric="precomputed", n_neighbors=30).fit(D)
    header, rows = _read(tmp_path / "o.csv")
    assert header == ["row_id", "isomap_1", "isomap_2"] and [r[0] for r in rows] == names
    np.testing.assert_allclose(np.array([r[1:] for r in rows], float), api.embedding_, atol=1e-10)
    header, rows = _read(tmp_path / "e.csv")   # the columns were matched to the items by name
    np.testing.assert_allclose(np.array([r[1:3] for r in rows], float), api.extend(to_train), atol=1e-10)

    # hierarchical clustering on an .npy distance matrix (average linkage unless told: its distance_defaults),
    # fitted on a sample and extended to all
    np.save(tmp_path / "d.npy", D)
    rc, _out, err = run(capsys, "run", "hierarchical", "--data", tmp_path / "d.npy", "--distance-matrix",
                        "-p", "n_clusters=3", "--fit-sample", 50, "--out", tmp_path / "h.csv")
    assert rc == 0, err
    header, rows = _read(tmp_path / "h.csv")
    fitted = np.array([int(r[-1]) for r in rows], bool)
    idx = np.flatnonzero(fitted)
    est = ms.get_algorithm("hierarchical", metric="precomputed", method="average", n_clusters=3)
    est.fit(D[np.ix_(idx, idx)])
    expected = np.empty(len(D), int)
    expected[idx] = est.labels_
    expected[~fitted] = est.extend(D[np.ix_(np.flatnonzero(~fitted), idx)])
    assert fitted.sum() == 50 and [int(r[1]) for r in rows] == list(expected)


def test_refusals(tmp_path, capsys, iris):
    D = squareform(pdist(iris.X[:20]))
    data = _write(tmp_path / "d.csv", D)
    rc, _out, err = run(capsys, "run", "pca", "--data", data, "--distance-matrix", "--out", tmp_path / "o.csv")
    assert rc == 2 and "'d.csv' is a distance matrix: Principal component analysis (PCA) (pca) cannot fit one" in err
    assert "Methods that take distances: hierarchical, isomap" in err
    rc, _out, err = run(capsys, "run", "isomap", "--data", data, "--distance-matrix", "-p", "metric=cosine",
                        "--out", tmp_path / "o.csv")
    assert rc == 2 and "fits it with metric='precomputed', not metric='cosine'" in err
    asym = D.copy()
    asym[0, 3] += 1
    rc, _out, err = run(capsys, "run", "isomap", "--data", _write(tmp_path / "a.csv", asym), "--distance-matrix",
                        "--out", tmp_path / "o.csv")
    assert rc == 2 and "a.csv is not symmetric: the largest difference" in err
    short = _write(tmp_path / "short.csv", cdist(iris.X[20:25], iris.X[:19]))
    rc, _out, err = run(capsys, "run", "isomap", "--data", data, "--distance-matrix", "-p", "n_neighbors=5",
                        "--extend", short, "--extend-out", tmp_path / "e.csv", "--out", tmp_path / "o.csv")
    assert rc == 2 and "short.csv has 19 columns of numbers, but 'd' is a distance matrix of 20 items" in err
    rc, _out, err = run(capsys, "run", "isomap", "--data", data, "--distance-matrix", "--prep", "standardize",
                        "--out", tmp_path / "o.csv")
    assert rc != 0 and "--prep does not apply with --distance-matrix" in err


def test_metric_precomputed_on_a_plain_file_still_works(tmp_path, capsys, iris):
    D = squareform(pdist(iris.X))
    rc, _out, err = run(capsys, "run", "isomap", "--data", _write(tmp_path / "d.csv", D), "-p", "metric=precomputed",
                        "n_neighbors=40", "--out", tmp_path / "o.csv")
    assert rc == 0, err
    _header, rows = _read(tmp_path / "o.csv")
    api = ms.get_algorithm("isomap", metric="precomputed", n_neighbors=40).fit(D).embedding_
    np.testing.assert_allclose(np.array([r[1:] for r in rows], float), api, atol=1e-10)
