"""The sparse loader (Matrix Market .mtx, scipy's sparse .npz) and sparse data sets through the
session, the project file, the data table and the command line."""
import csv
import gzip
import shutil

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from sklearn.decomposition import PCA as SkPCA

import manifold_studio as ms
from manifold_studio.cli.main import main
from manifold_studio.data import Dataset
from manifold_studio.tables.dataset_columns import SPARSE_TABLE_COLUMNS, dataset_columns
from manifold_studio.errors import DataError
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.model import Session
from manifold_studio.tables.export import export_dataset_csv


@pytest.fixture
def S():
    return sp.csr_matrix(sp.random(120, 70, density=0.08, random_state=0) * 10)


@pytest.fixture
def files(tmp_path, S):
    scipy.io.mmwrite(tmp_path / "x.mtx", S)
    with open(tmp_path / "x.mtx", "rb") as src, gzip.open(tmp_path / "z.mtx.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    sp.save_npz(tmp_path / "csr.npz", S)
    sp.save_npz(tmp_path / "csc.npz", S.tocsc())
    sp.save_npz(tmp_path / "coo.npz", sp.coo_array(S))
    return tmp_path


@pytest.mark.parametrize("name", ["x.mtx", "z.mtx.gz", "csr.npz", "csc.npz", "coo.npz"])
def test_sparse_files_load_as_sparse_data_sets(files, S, name):
    ds = ms.load_data(str(files / name))
    assert ds.is_sparse and ds.X.format == "csr" and ds.X.dtype == np.float64
    assert ds.X.shape == (120, 70) and ds.X.nnz == S.nnz
    assert abs(ds.X - S).max() == 0
    assert "sparse 120 × 70 matrix" in ds.report[0] and "pca" in ds.report[0]
    assert "sparse" in ds.describe()


def test_dense_matrix_market_array_is_a_dense_data_set(tmp_path):
    A = np.arange(12.0).reshape(4, 3)
    scipy.io.mmwrite(tmp_path / "a.mtx", A)
    ds = ms.load_data(str(tmp_path / "a.mtx"))
    assert not ds.is_sparse
    np.testing.assert_array_equal(ds.X, A)


def test_bad_files_are_refused_by_name(tmp_path):
    (tmp_path / "text.mtx").write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="text.mtx is not a Matrix Market file"):
        ms.load_data(str(tmp_path / "text.mtx"))
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n")
    with pytest.raises(DataError, match="bad.mtx cannot be read as a Matrix Market file"):
        ms.load_data(str(tmp_path / "bad.mtx"))
    # a save_npz file whose indices point outside the matrix
    np.savez(tmp_path / "evil.npz", format=np.array("csr"), shape=np.array([2, 2]),
             data=np.array([1.0, 2.0]), indices=np.array([0, 9]), indptr=np.array([0, 1, 2]))
    with pytest.raises(DataError, match="evil.npz is not a readable sparse .npz file"):
        ms.load_data(str(tmp_path / "evil.npz"))


def test_dataset_dense_pieces(S):
    ds = Dataset("s", S)
    np.testing.assert_array_equal(ds.dense(cols=slice(0, 2)), S.toarray()[:, :2])
    np.testing.assert_array_equal(ds.dense(3, slice(0, 5)), S.toarray()[3, :5])
    np.testing.assert_array_equal(ds.dense([1, 4]), S.toarray()[[1, 4]])
    assert ds.subset([0, 2, 5]).is_sparse


def test_session_table_export_and_project_with_sparse_data(files, tmp_path, S):
    session = Session()
    ds = session.load(str(files / "x.mtx"))
    pca = session.run("pca", n_components=2, random_state=0)
    km = session.run("kmeans", n_clusters=3, random_state=0)
    assert pca.status == km.status == "done"
    ref = SkPCA(2, svd_solver="arpack", random_state=0).fit_transform(S)
    np.testing.assert_allclose(np.abs(pca.embedding), np.abs(ref), atol=1e-9)
    # the table: the first SPARSE_TABLE_COLUMNS features (densified one column at a time), results
    cols = dataset_columns(session, ds.name)
    assert [c.name for c in cols[:2]] == ["x1", "x2"] and len(cols) == SPARSE_TABLE_COLUMNS + 3
    np.testing.assert_array_equal(cols[1].values, S.toarray()[:, 1])
    rows, ncols = export_dataset_csv(session, ds.name, tmp_path / "table.csv")
    assert (rows, ncols) == (120, SPARSE_TABLE_COLUMNS + 4)  # and the row id first
    # the project keeps the sparse matrix sparse, and the runs' models work on it
    path = save_project(session, tmp_path / "p.msproj")
    contents = read_project(path)
    back = contents.session.datasets[ds.name]
    assert back.is_sparse and abs(back.X - S).max() == 0
    np.testing.assert_allclose(contents.session.runs[pca.id].estimator.extend(back.X), pca.embedding, atol=1e-12)


def _cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _read(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], np.asarray(rows[1:], dtype=float)


def test_cli_runs_sparse_methods_on_mtx_and_npz(files, capsys, S):
    out = files / "pca.csv"
    rc, _, err = _cli(capsys, "run", "pca", "--data", files / "x.mtx", "--param", "svd_solver=arpack",
                      "--param", "random_state=0", "--out", out)
    assert rc == 0, err
    header, Z = _read(out)
    ref = SkPCA(2, svd_solver="arpack", random_state=0).fit_transform(S)
    np.testing.assert_allclose(np.abs(Z[:, -2:]), np.abs(ref), atol=1e-9)
    rc, _, err = _cli(capsys, "run", "nmf", "--data", files / "csr.npz", "--param", "random_state=0",
                      "--extend", files / "coo.npz", "--extend-out", files / "nmf_ext.csv", "--out", files / "nmf.csv")
    assert rc == 0, err
    np.testing.assert_allclose(_read(files / "nmf_ext.csv")[1][:, -2:], _read(files / "nmf.csv")[1][:, -2:])
    rc, _, err = _cli(capsys, "run", "kmeans", "--data", files / "z.mtx.gz", "--param", "n_clusters=3",
                      "--out", files / "km.csv")
    assert rc == 0, err


def test_cli_refuses_sparse_for_other_methods_in_one_line(files, capsys):
    rc, _, err = _cli(capsys, "run", "hierarchical", "--data", files / "x.mtx", "--out", files / "h.csv")
    assert rc == 2 and "Traceback" not in err
    line = err.strip()
    assert "\n" not in line and "x.mtx" in line and "hierarchical does not take sparse data" in line
    assert "Methods that take sparse data" in line and "kmeans" in line


def test_isolated_fit_keeps_sparse_data_sparse(S):
    from manifold_studio.session.isolated_fit import PluginProcessError, fit_in_subprocess

    cls = ms.algorithm_class("kmeans")
    outcome = fit_in_subprocess(cls, {"n_clusters": 3, "random_state": 0}, sp.csr_array(S))
    direct = ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit(S)
    np.testing.assert_array_equal(outcome.labels, direct.labels_)
    with pytest.raises(PluginProcessError, match="hierarchical does not take sparse data.*take sparse data: .*kmeans"):
        fit_in_subprocess(ms.algorithm_class("hierarchical"), {}, sp.csr_array(S))


def test_column_summary_of_a_sparse_data_set_without_a_table():
    # a .mtx or 10x data set has no table: its column lines come from the sparse matrix itself
    # (implicit zeros count as the value 0), equal to its dense copy's
    import scipy.sparse as sp
    from manifold_studio.data import Dataset
    X = sp.random(60, 5, density=0.3, random_state=1, format="csr")
    X.data[0] = np.nan
    sparse_cols = Dataset("s", X).columns
    dense_cols = Dataset("d", X.toarray()).columns
    assert [(c.n_distinct, c.n_missing) for c in sparse_cols] == [(c.n_distinct, c.n_missing) for c in dense_cols]
    assert sum(c.n_missing for c in sparse_cols) == 1
