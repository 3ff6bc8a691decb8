"""The distance matrix reader (issue 22): the Iris distances (scipy.spatial.distance on the shipped
sample) read back exactly from every format, and each bad file refused by one line naming it."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

import manifold_studio as ms
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import ENV_VAR
from manifold_studio.distance_matrix import read_distances_to


@pytest.fixture(scope="module")
def iris():
    return ms.load_data("sample:iris")


@pytest.fixture(scope="module")
def D(iris):
    return squareform(pdist(iris.X))


NAMES = [f"f{i}" for i in range(150)]


def _csv(path, D, *, header=None, rows=None, extra=None, sep=",", corner="name"):
    """A delimited file: an optional header row, first column of names and extra columns."""
    lines = []
    if header is not None:
        lines.append(sep.join(([corner] if rows is not None else []) + ([k for k in extra] if extra else [])
                              + list(header)))
    for i, row in enumerate(D):
        cells = ([rows[i]] if rows is not None else []) + ([str(v[i]) for v in extra.values()] if extra else [])
        lines.append(sep.join(cells + [repr(float(v)) for v in row]))
    path.write_text("\n".join(lines) + "\n")
    return path


def _read(path, **options):
    return ms.load_distance_matrix(path, **options)


# -- every format -----------------------------------------------------------------------------

def test_csv_with_header_row_names_and_a_label_column(tmp_path, iris, D):
    ds = _read(_csv(tmp_path / "d.csv", D, header=NAMES, rows=NAMES, extra={"species": iris.labels}))
    assert ds.distance_matrix and np.array_equal(ds.X, D)
    assert ds.feature_names == NAMES and list(ds.row_ids) == NAMES
    assert ds.label_name == "species" and list(ds.labels) == list(iris.labels)
    assert ds.report[0] == ("Read a 150 × 150 distance matrix from d.csv (item names from its header row, "
                            "labels: 'species').")
    assert ds.describe() == "d: 150 × 150 distance matrix, labels: species"


@pytest.mark.parametrize("layout", ["plain", "header", "row_names", "numbered"])
def test_csv_tsv_layouts(tmp_path, D, layout):
    sub = D[:20, :20]
    names = NAMES[:20]
    if layout == "plain":
        path = _csv(tmp_path / "d.tsv", sub, sep="\t")
    elif layout == "header":
        path = _csv(tmp_path / "d.csv", sub, header=names)
    elif layout == "row_names":
        path = _csv(tmp_path / "d.csv", sub, rows=names)
    else:  # R's write.csv(as.matrix(d)): an empty corner, numbers as names
        path = _csv(tmp_path / "d.csv", sub, header=[str(i + 1) for i in range(20)],
                    rows=[str(i + 1) for i in range(20)], corner='""')
    ds = _read(path)
    assert ds.distance_matrix and np.array_equal(ds.X, sub)
    expected = {"plain": None, "header": names, "row_names": names,
                "numbered": [str(i + 1) for i in range(20)]}[layout]
    assert ds.feature_names == expected


def test_npy_npz_sparse_npz_and_mtx(tmp_path, iris, D):
    np.save(tmp_path / "d.npy", D)
    np.savez(tmp_path / "d.npz", X=D, y=iris.labels, feature_names=np.array(NAMES))
    # sparse files store every off-diagonal distance, the zeros of Iris' duplicate flowers explicitly
    i, j = np.nonzero(~np.eye(len(D), dtype=bool))
    stored = sp.coo_matrix((D[i, j], (i, j)), shape=D.shape)
    sp.save_npz(tmp_path / "s.npz", stored.tocsr())
    scipy.io.mmwrite(tmp_path / "s.mtx", stored)
    scipy.io.mmwrite(tmp_path / "a.mtx", D)                      # the dense 'array' form
    for name in ("d.npy", "d.npz", "s.npz", "s.mtx", "a.mtx"):
        ds = _read(tmp_path / name)
        assert ds.distance_matrix and not ds.is_sparse, name
        np.testing.assert_allclose(ds.X, D, rtol=1e-15, atol=0, err_msg=name)
    ds = _read(tmp_path / "d.npz")
    assert ds.feature_names == NAMES and list(ds.labels) == list(iris.labels)


# -- each bad case ----------------------------------------------------------------------------

def _refused(path, match, **options):
    with pytest.raises(DataError, match=match) as err:
        _read(path, **options)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_not_square(tmp_path, D):
    _refused(_csv(tmp_path / "d.csv", D[:5, :4]), r"^d\.csv is not a square distance matrix: 5 rows × 4 columns")
    np.save(tmp_path / "r.npy", D[:5, :4])
    _refused(tmp_path / "r.npy", r"^r\.npy holds an array of shape \(5, 4\): a distance matrix is a square")
    np.save(tmp_path / "t.npy", np.zeros((3, 3, 3)))
    _refused(tmp_path / "t.npy", r"shape \(3, 3, 3\)")
    sp.save_npz(tmp_path / "r.npz", sp.csr_matrix(D[:5, :4]))
    _refused(tmp_path / "r.npz", r"^r\.npz is not a square distance matrix: 5 rows × 4 columns")
    msg = _refused(_csv(tmp_path / "ids.csv", D[:4, :4], rows=["0.5", "1.5", "2.5", "3.5"]),
                   r"^ids\.csv is not a square distance matrix: 4 rows × 5 columns")
    assert "one column too many" in msg


def test_non_finite_and_negative(tmp_path, D):
    bad = D[:6, :6].copy()
    bad[2, 4] = np.inf
    np.save(tmp_path / "inf.npy", bad)
    _refused(tmp_path / "inf.npy", r"^inf\.npy has 1 missing or non-finite distance\(s\) \(the first D\[2, 4\]\)")
    text = _csv(tmp_path / "gap.csv", D[:6, :6], header=NAMES[:6])
    lines = text.read_text().splitlines()
    lines[4] = lines[4].replace(repr(float(D[3, 1])), "", 1)   # line 5: item f3, after the header row
    text.write_text("\n".join(lines) + "\n")
    _refused(text, r"^gap\.csv has 1 missing or non-finite distance\(s\) \(the first D\[3, 1\] \('f3' to 'f1'\)\)")
    neg = D[:6, :6].copy()
    neg[1, 5] = neg[5, 1] = -0.25
    np.save(tmp_path / "neg.npy", neg)
    _refused(tmp_path / "neg.npy", r"^neg\.npy has 2 negative distance\(s\) \(the smallest -0\.25 at D\[1, 5\]\): "
                                   "distances must be 0 or more")


def test_diagonal_and_symmetry(tmp_path, D):
    diag = D[:6, :6].copy()
    diag[3, 3] = 0.5
    np.save(tmp_path / "diag.npy", diag)
    _refused(tmp_path / "diag.npy", r"^diag\.npy has 1 non-zero distance\(s\) on its diagonal \(the largest 0\.5 at "
                                    r"D\[3, 3\]\): each item's distance to itself must be 0\.")
    asym = D[:6, :6].copy()
    asym[4, 1] += 0.3
    np.save(tmp_path / "asym.npy", asym)
    msg = _refused(tmp_path / "asym.npy", r"^asym\.npy is not symmetric: the largest difference \|D\[i, j\] - D\[j, i\]\| "
                                          r"is 0\.3, at D\[1, 4\] \(0\.608276 against 0\.908276\)")
    assert "symmetry_tolerance" in msg
    # rounding-size differences (a matrix written with 6 digits, cdist's BLAS diagonal) are evened out
    near = D[:6, :6].copy()
    near[4, 1] *= 1 + 1e-9
    near[2, 2] = 1e-12
    np.save(tmp_path / "near.npy", near)
    ds = _read(tmp_path / "near.npy")
    assert np.array_equal(ds.X, ds.X.T) and not np.diag(ds.X).any()
    assert any("evened out" in r for r in ds.report) and any("set to 0" in r for r in ds.report)
    assert np.isclose(ds.X[4, 1], D[4, 1], rtol=1e-9)
    # a looser tolerance accepts a larger asymmetry
    assert _read(tmp_path / "asym.npy", symmetry_tolerance=0.3).distance_matrix


def test_names_that_disagree(tmp_path, D):
    rows = NAMES[:5]
    cols = ["f0", "f1", "f9", "f3", "f4"]
    _refused(_csv(tmp_path / "n.csv", D[:5, :5], header=cols, rows=rows),
             r"^n\.csv: its row names and column names disagree \(row 2 is 'f2', column 2 is 'f9'\); both must list the "
             "same items in the same order")


def test_sparse_matrix_with_absent_distances(tmp_path, D):
    knn = sp.csr_matrix(np.where(D[:6, :6] < np.sort(D[:6, :6], axis=1)[:, [2]], D[:6, :6], 0))
    sp.save_npz(tmp_path / "knn.npz", knn)
    _refused(tmp_path / "knn.npz", r"^knn\.npz is a sparse matrix with \d+ off-diagonal distance\(s\) not stored \(the "
                                   r"first D\[\d, \d\]\): a distance matrix file must give every distance")


def test_too_large_is_refused_before_reading(tmp_path, D, monkeypatch):
    _csv(tmp_path / "d.csv", D, header=NAMES)
    np.save(tmp_path / "d.npy", D)
    scipy.io.mmwrite(tmp_path / "d.mtx", sp.coo_matrix(D))
    sp.save_npz(tmp_path / "s.npz", sp.csr_matrix(D))
    monkeypatch.setenv(ENV_VAR, "100K")   # 150 x 150 doubles: 176 KiB
    for name in ("d.csv", "d.mtx"):
        _refused(tmp_path / name, rf"^{name.replace('.', '[.]')}: a 15\d × 150 distance matrix needs 17\d\.\d KiB, more "
                                  rf"than the load limit of 100\.0 KiB \(set {ENV_VAR} to raise it\)")
    # the NumPy files: the bounded reader's own refusal, from their headers
    _refused(tmp_path / "d.npy", r"^d\.npy: it would need 175\.8 KiB \(shape \(150, 150\)\), more than the load limit")
    _refused(tmp_path / "s.npz", r"^s\.npz: member 'data': it would need 17\d\.\d KiB")
    monkeypatch.setenv(ENV_VAR, "150K")   # the sparse members fit, the dense matrix would not
    sp.save_npz(tmp_path / "half.npz", sp.random(150, 150, density=0.01, format="csr", random_state=0))
    _refused(tmp_path / "half.npz", r"^half\.npz: a 150 × 150 distance matrix needs 175\.8 KiB, more than the load limit")


# -- the data set and the distances of new points ---------------------------------------------------

def test_subset_keeps_rows_and_columns_and_a_distance_matrix_must_be_square(D):
    ds = Dataset("d", D[:10, :10], feature_names=NAMES[:10], distance_matrix=True)
    sub = ds.subset([1, 4, 7])
    assert sub.distance_matrix and np.array_equal(sub.X, D[np.ix_([1, 4, 7], [1, 4, 7])])
    assert sub.feature_names == ["f1", "f4", "f7"] and list(sub.row_ids) == ["f1", "f4", "f7"]
    with pytest.raises(DataError, match="a distance matrix must be dense and square, got shape \\(10, 9\\)"):
        Dataset("d", D[:10, :9], distance_matrix=True)
    # labelling rows adds a meta column; its columns (the items) cannot leave the features
    from manifold_studio.session.annotate import label_into_column

    label_into_column(ds, [0, 1], "group", "g1")
    with pytest.raises(DataError, match="^Data set 'd' is a distance matrix: its columns are its items and stay features"):
        ds.set_role("f3", "skipped")
    with pytest.raises(DataError, match="stay features"):
        ds.set_role("group", "feature")
    assert ds.X.shape == (10, 10) and ds.distance_matrix


def test_distances_of_new_points_to_the_items(tmp_path, D):
    training = Dataset("train", D[:10, :10], feature_names=NAMES[:10], distance_matrix=True)
    new = D[10:13, :10]
    order = [3, 1, 0, 2, 9, 8, 7, 6, 5, 4]
    read = ms.load_data(_csv(tmp_path / "new.csv", new[:, order], header=[NAMES[k] for k in order],
                             rows=["a", "b", "c"]))
    got = read_distances_to(read, training, "new.csv")
    assert np.array_equal(got.X, new) and got.feature_names == NAMES[:10]   # columns put in the items' order
    short = ms.load_data(_csv(tmp_path / "short.csv", new[:, :9]))
    with pytest.raises(DataError, match=r"^short\.csv has 9 columns of numbers, but 'train' is a distance matrix of 10 "
                                        r"items: give each new point's distances to those 10 items"):
        read_distances_to(short, training, "short.csv")
