"""The CSV/TSV and NumPy loader plugins, reached through the plugin host (ms.load_data)."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.plugins.host import get_host


def write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding=encoding)
    return path


@pytest.fixture
def csv_loader():
    return get_host().loaders["csv"]


# --------------------------------------------------------------------------- CSV: good files
def test_loaders_are_registered_by_entry_point():
    assert {"csv", "numpy"} <= set(ms.list_loaders())
    assert not [f for f in get_host().failures if "loader" in f.plugin]


def test_csv_header_and_label_column_by_name(tmp_path):
    path = write(tmp_path, "flowers.csv", "a,b,species,c\n1,2,x,3\n4,5,y,6\n7,8,x,9\n")
    ds = ms.load_data(path, label_column="species")
    assert ds.name == "flowers"
    assert ds.feature_names == ["a", "b", "c"]
    np.testing.assert_array_equal(ds.X, [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert list(ds.labels) == ["x", "y", "x"]
    assert ds.label_name == "species"
    assert ds.source == str(path)


def test_csv_label_column_by_index_and_from_text(tmp_path, csv_loader):
    path = write(tmp_path, "d.csv", "a,b,c\n1,2,0\n4,5,1\n")
    for ref in (2, -1, "2", "c", "C"):
        ds = ms.load_data(path, label_column=ref)
        assert ds.feature_names == ["a", "b"]
        assert ds.labels.dtype.kind == "i" and list(ds.labels) == [0, 1]
    option = {p.name: p for p in csv_loader.options}["label_column"]
    assert option.parse("none") is None and option.parse("species") == "species"
    with pytest.raises(DataError, match="out of range.*3 column"):
        ms.load_data(path, label_column=5)
    with pytest.raises(DataError, match="no column named 'zzz'.*'a', 'b', 'c'"):
        ms.load_data(path, label_column="zzz")


def test_csv_without_header(tmp_path):
    ds = ms.load_data(write(tmp_path, "n.csv", "1,2\n3,4\n5,6\n"))
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4], [5, 6]])
    assert ds.feature_names == ["column_0", "column_1"]
    ds = ms.load_data(write(tmp_path, "h.csv", "1,2\n3,4\n"), header="yes")
    assert ds.feature_names == ["1", "2"] and ds.n_samples == 1


@pytest.mark.parametrize("name,text,delimiter", [
    ("t.tsv", "x\ty\tz\n1\t2\t3\n4\t5\t6\n", "tab"),
    ("s.csv", "x;y;z\n1,5;2;3\n4;5;6\n", "semicolon"),
    ("p.txt", "x|y|z\n1|2|3\n4|5|6\n", "pipe"),
    ("w.txt", "x   y  z\n1 2    3\n  4 5 6\n", "whitespace"),
])
def test_csv_delimiter_sniffing(tmp_path, name, text, delimiter):
    ds = ms.load_data(write(tmp_path, name, text))
    assert ds.feature_names == ["x", "y", "z"] or delimiter == "semicolon"
    assert ds.n_samples == 2
    assert f"delimiter: {delimiter}" in ds.report[0]


def test_csv_semicolon_decimal_comma_is_read_and_reported(tmp_path):
    ds = ms.load_data(write(tmp_path, "s.csv", "x;y;z\n1,5;2;3\n4;5;6\n"))
    assert ds.feature_names == ["x", "y", "z"]
    np.testing.assert_array_equal(ds.X[:, 0], [1.5, 4.0])
    assert any("'x' uses decimal commas" in r and "'1,5'" in r for r in ds.report)


def test_csv_explicit_delimiter_quotes_bom_and_trailing_field(tmp_path):
    text = '\ufeff"name, full",v1,v2,\n"Smith, J",1,2,\n"Doe, A",3,4,\n'
    ds = ms.load_data(write(tmp_path, "q.csv", text), label_column="name, full", delimiter=",")
    assert list(ds.labels) == ["Smith, J", "Doe, A"]
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])
    with pytest.raises(InvalidParameterError, match="delimiter"):
        ms.load_data(tmp_path / "q.csv", delimiter="colon")


def test_csv_latin1_is_read_and_noted(tmp_path):
    path = write(tmp_path, "l.csv", "caf\xe9,x\n1,2\n3,4\n", encoding="latin-1")
    ds = ms.load_data(path)
    assert ds.feature_names == ["café", "x"]
    assert any("Latin-1" in r for r in ds.report)


def test_csv_blank_lines_are_skipped_and_lines_counted(tmp_path):
    path = write(tmp_path, "b.csv", "a,b\n\n1,2\n\n3,4,5\n")
    with pytest.raises(DataError, match=r"b\.csv, line 5: expected 2 fields .* found 3"):
        ms.load_data(path)


# --------------------------------------------------------------------------- CSV: reported problems
def test_text_column_is_reported_by_name_and_left_out(tmp_path):
    path = write(tmp_path, "t.csv", "a,city,b\n1,Paris,2\n3,Rome,4\n5,7,6\n")
    ds = ms.load_data(path)
    assert ds.feature_names == ["a", "b"]
    note = next(r for r in ds.report if "'city'" in r)
    assert "not numeric" in note and "'Paris'" in note and "line 2" in note and "left out" in note


def test_text_in_the_only_numeric_column_is_an_error(tmp_path):
    with pytest.raises(DataError, match="no numeric column.*'name' \\(text\\).*'value' \\(text\\)"):
        ms.load_data(write(tmp_path, "t.csv", "name,value\nx,1\ny,two\n"))
    with pytest.raises(DataError, match="no numeric column.*'label' \\(label\\)"):
        ms.load_data(write(tmp_path, "u.csv", "label\n1\n2\n"), label_column="label")


def test_missing_values_are_dropped_and_reported_by_line_and_column(tmp_path):
    text = "a,b,c\n1,2,3\n4,,6\n7,NA,NaN\n1,?,1\n2,2,inf\n5,5,5\n"
    ds = ms.load_data(write(tmp_path, "m.csv", text))
    np.testing.assert_array_equal(ds.X, [[1, 2, 3], [5, 5, 5]])
    note = next(r for r in ds.report if "dropped" in r)
    assert note.startswith("4 row(s)")
    for part in ("line 3 ('b')", "line 4 ('b', 'c')", "line 5 ('b')", "line 6 ('c')"):
        assert part in note
    assert not np.isnan(ds.X).any()


def test_missing_values_kept_as_nan_on_request(tmp_path):
    text = "a,b,y\n1,2,u\n4,,v\n7,NA,\n1,?,w\n2,inf,x\n"
    ds = ms.load_data(write(tmp_path, "m.csv", text), label_column="y", missing="keep")
    # the row with a missing label goes; missing and infinite cells stay as NaN
    assert list(ds.labels) == ["u", "v", "w", "x"]
    np.testing.assert_array_equal(np.isnan(ds.X), [[0, 0], [0, 1], [0, 1], [0, 1]])
    assert any("3 missing or non-finite value(s) in 3 row(s) kept as NaN" in r for r in ds.report)
    with pytest.raises(DataError, match="NaN"):
        ms.get_algorithm("pca").fit(ds.X)


def test_missing_label_drops_the_row_too(tmp_path):
    ds = ms.load_data(write(tmp_path, "m.csv", "a,y\n1,x\n2,\n3,z\n"), label_column="y")
    assert list(ds.labels) == ["x", "z"] and ds.n_samples == 2


def test_missing_values_refused_on_request(tmp_path):
    path = write(tmp_path, "m.csv", "a,b\n1,2\n4,\n")
    with pytest.raises(DataError, match=r"m\.csv has missing .* line 3 \('b'\)"):
        ms.load_data(path, missing="error")


def test_every_row_missing_is_an_error(tmp_path):
    with pytest.raises(DataError, match="every row has a missing value"):
        ms.load_data(write(tmp_path, "m.csv", "a,b\n1,\n,2\n"))


def test_ragged_csv_names_file_line_and_field_counts(tmp_path):
    path = write(tmp_path, "ragged.csv", "a,b,c\n1,2,3\n4,5\n")
    with pytest.raises(DataError) as info:
        ms.load_data(path)
    msg = str(info.value)
    assert "ragged.csv" in msg and "line 3" in msg and "expected 3" in msg and "found 2" in msg


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_csv(tmp_path, content):
    with pytest.raises(DataError, match=r"empty\.csv is empty"):
        ms.load_data(write(tmp_path, "empty.csv", content))


def test_header_only_csv(tmp_path):
    with pytest.raises(DataError, match="header but no data rows"):
        ms.load_data(write(tmp_path, "h.csv", "a,b,c\n"))


@pytest.mark.parametrize("content,what", [
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "PNG image"),
    (b"\x93NUMPY\x01\x00" + b"\x00" * 100, "NumPy"),
    (bytes(range(256)) * 8, "binary data"),
])
def test_binary_file_with_csv_extension(tmp_path, content, what):
    with pytest.raises(DataError, match=rf"picture\.csv is not a text \(CSV/TSV\) file.*{what}"):
        ms.load_data(write(tmp_path, "picture.csv", content))


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"No loader reads '\.xyz'"):
        ms.load_data(write(tmp_path, "d.xyz", "1,2\n"))
    with pytest.raises(DataError, match="File not found"):
        ms.load_data(tmp_path / "nope.csv")


def test_large_numeric_csv_round_trip(tmp_path, rng):
    X = rng.normal(size=(2000, 5))
    path = tmp_path / "big.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c,d,e", comments="")
    ds = ms.load_data(path)
    np.testing.assert_allclose(ds.X, X, rtol=1e-15)
    assert ds.feature_names == list("abcde")


# --------------------------------------------------------------------------- CSV preview
def test_preview_reads_header_and_first_rows(tmp_path, csv_loader):
    lines = ["id;size;kind"] + [f"{i};{i * 1.5};k{i % 2}" for i in range(100)] + ["1;2"]
    path = write(tmp_path, "p.csv", "\n".join(lines) + "\n")
    pv = csv_loader.preview(path, max_rows=5)
    assert pv.columns == ["id", "size", "kind"] and pv.has_header and pv.delimiter == "semicolon"
    assert pv.rows[0] == ["0", "0.0", "k0"] and len(pv.rows) == 5
    assert pv.numeric == [True, True, False] and pv.n_columns == 3
    with pytest.raises(DataError, match="is empty"):
        csv_loader.preview(write(tmp_path, "e.csv", ""))
    with pytest.raises(DataError, match="not a text"):
        csv_loader.preview(write(tmp_path, "b.csv", b"\x00\x01\x02" * 10))


def test_preview_tolerates_a_ragged_row(tmp_path, csv_loader):
    pv = csv_loader.preview(write(tmp_path, "r.csv", "a,b\n1,2\n3\n4,5,6\n"))
    assert pv.rows == [["1", "2"], ["3", ""], ["4", "5"]]


# --------------------------------------------------------------------------- NumPy
def test_npy_2d_and_1d(tmp_path, rng):
    X = rng.normal(size=(10, 3))
    np.save(tmp_path / "x.npy", X)
    ds = ms.load_data(tmp_path / "x.npy")
    np.testing.assert_array_equal(ds.X, X)
    assert ds.labels is None and ds.name == "x"
    np.save(tmp_path / "v.npy", np.arange(5, dtype=np.int32))
    ds = ms.load_data(tmp_path / "v.npy")
    assert ds.X.shape == (5, 1) and "one feature" in ds.report[0]


def test_npy_images_are_flattened_and_kept(tmp_path, rng):
    imgs = rng.random((6, 4, 5))
    np.save(tmp_path / "img.npy", imgs)
    ds = ms.load_data(tmp_path / "img.npy")
    assert ds.X.shape == (6, 20) and ds.images.shape == (6, 4, 5)
    np.testing.assert_array_equal(ds.X[2], imgs[2].ravel())
    np.save(tmp_path / "rgb.npy", rng.random((3, 4, 4, 3)))
    ds = ms.load_data(tmp_path / "rgb.npy")
    assert ds.X.shape == (3, 48) and ds.images.shape == (3, 4, 4)
    np.save(tmp_path / "5d.npy", np.zeros((2, 2, 2, 2, 2)))
    with pytest.raises(DataError, match=r"shape \(2, 2, 2, 2, 2\).*reshape"):
        ms.load_data(tmp_path / "5d.npy")


def test_npy_with_python_objects_is_refused(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, [1, 2]], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match=r"obj\.npy holds Python objects.*refused for safety"):
        ms.load_data(tmp_path / "obj.npy")
    np.savez(tmp_path / "obj.npz", X=np.array([1, "a", None], dtype=object))
    with pytest.raises(DataError, match=r"obj\.npz \(array 'X'\) holds Python objects"):
        ms.load_data(tmp_path / "obj.npz")


@pytest.mark.parametrize("name", ["fake.npy", "fake.npz"])
def test_text_file_with_numpy_extension(tmp_path, name):
    with pytest.raises(DataError, match=rf"{name} is not a NumPy .* CSV file"):
        ms.load_data(write(tmp_path, name, "a,b\n1,2\n"))


def test_empty_npy_file_and_empty_array(tmp_path):
    with pytest.raises(DataError, match="empty"):
        ms.load_data(write(tmp_path, "e.npy", b""))
    np.save(tmp_path / "z.npy", np.zeros((0, 3)))
    with pytest.raises(DataError, match="no samples"):
        ms.load_data(tmp_path / "z.npy")


def test_npy_unusable_dtypes(tmp_path):
    np.save(tmp_path / "c.npy", np.ones((3, 2), dtype=complex))
    with pytest.raises(DataError, match="complex"):
        ms.load_data(tmp_path / "c.npy")
    np.save(tmp_path / "s.npy", np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(DataError, match="holds text"):
        ms.load_data(tmp_path / "s.npy")


def test_npy_structured_array_gives_named_columns(tmp_path):
    arr = np.array([(1.0, 2, b"x"), (3.0, 4, b"y")], dtype=[("w", "f8"), ("n", "i4"), ("tag", "S1")])
    np.save(tmp_path / "rec.npy", arr)
    ds = ms.load_data(tmp_path / "rec.npy")
    assert ds.feature_names == ["w", "n"]
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])
    assert any("'tag'" in r for r in ds.report)


def test_npy_nan_is_kept_and_reported(tmp_path):
    X = np.ones((4, 2))
    X[2, 1] = np.nan
    np.save(tmp_path / "nan.npy", X)
    ds = ms.load_data(tmp_path / "nan.npy")
    assert np.isnan(ds.X[2, 1])
    assert any("NaN" in r and "row(s) 2" in r for r in ds.report)


def test_npz_named_arrays(tmp_path, rng):
    X = rng.normal(size=(8, 3))
    y = np.arange(8) % 2
    np.savez(tmp_path / "d.npz", X=X, y=y, feature_names=np.array(["u", "v", "w"]),
             images=rng.random((8, 2, 2)))
    ds = ms.load_data(tmp_path / "d.npz")
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.labels, y)
    assert ds.label_name == "y" and ds.feature_names == ["u", "v", "w"] and ds.images.shape == (8, 2, 2)
    np.savez(tmp_path / "e.npz", data=X, target=np.array([b"a"] * 8))
    ds = ms.load_data(tmp_path / "e.npz")
    assert ds.label_name == "target" and ds.labels[0] == "a"


def test_npz_single_matrix_and_ambiguity(tmp_path, rng):
    np.savez(tmp_path / "one.npz", points=rng.normal(size=(5, 2)), weights=np.ones(5))
    ds = ms.load_data(tmp_path / "one.npz")
    assert ds.X.shape == (5, 2)
    np.savez(tmp_path / "two.npz", a=np.ones((5, 2)), b=np.ones((5, 3)))
    with pytest.raises(DataError, match=r"several arrays \('a' \(5, 2\), 'b' \(5, 3\)\).*data_array"):
        ms.load_data(tmp_path / "two.npz")
    ds = ms.load_data(tmp_path / "two.npz", data_array="b")
    assert ds.X.shape == (5, 3)
    with pytest.raises(DataError, match="no array named 'c'"):
        ms.load_data(tmp_path / "two.npz", data_array="c")


def test_npz_mismatched_labels(tmp_path):
    np.savez(tmp_path / "m.npz", X=np.ones((5, 2)), y=np.arange(3))
    ds = ms.load_data(tmp_path / "m.npz")
    assert ds.labels is None and any("does not match" in r for r in ds.report)
    with pytest.raises(DataError, match="one value per sample"):
        ms.load_data(tmp_path / "m.npz", label_array="y")


def test_loaded_data_is_refused_by_an_algorithm_when_it_holds_nan(tmp_path):
    X = np.ones((5, 2))
    X[1, 0] = np.nan
    np.save(tmp_path / "nan.npy", X)
    ds = ms.load_data(tmp_path / "nan.npy")
    with pytest.raises(DataError, match="NaN"):
        ms.get_algorithm("pca", n_components=1).fit(ds.X)


def test_decimal_commas_are_read_when_fields_are_not_comma_separated(tmp_path):
    """Issue 12: a ';' file with decimal commas lost its columns silently."""
    ds = ms.load_data(write(tmp_path, "dc.csv", "a;b;c\n1,5;2,25;x\n3,0;4;y\n-2,0;1.234,5;x\n"),
                      label_column="c")
    np.testing.assert_allclose(ds.X, [[1.5, 2.25], [3.0, 4.0], [-2.0, 1234.5]])
    assert "column 'b' uses decimal commas: '2,25' read as 2.25." in ds.report
    # a comma-separated file keeps its commas as separators; a text column stays text
    ds2 = ms.load_data(write(tmp_path, "t.tsv", "v\tw\n1,5\tfoo\n2\tbar\n"))
    np.testing.assert_allclose(ds2.X, [[1.5], [2.0]])
    assert any("'w' is not numeric" in r for r in ds2.report)


def test_loader_remarks_reach_the_command_lines_stderr(tmp_path, capsys):
    from manifold_studio.cli.main import main

    path = write(tmp_path, "dc.csv", "a;b;c\n1,5;2,25;x\n3,0;4;y\n-2,0;1;x\n")
    assert main(["run", "pca", "--data", str(path), "--out", "-"]) == 0
    err = capsys.readouterr().err
    assert "column 'a' uses decimal commas" in err and "column 'c' is not numeric" in err
