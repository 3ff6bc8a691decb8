"""Typed tables with roles (issue 20): inference, row ids, the readers (CSV/TSV, Excel, Parquet) and
the Dataset built from a table (roles and the current target recompute X and the labels)."""
import numpy as np
import pandas as pd
import pytest

import manifold_studio as ms
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError
from manifold_studio.tables import (
    CATEGORICAL, DATETIME, FEATURE, META, NUMERIC, SKIPPED, TARGET, TEXT, Column, Table, read_csv_table,
    read_table,
)


def write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


MIXED = ("id,height,city,comment,when,weight,empty,kind\n"
         + "".join(f"{i},{150 + i},{['Paris', 'Rome', 'Oslo'][i % 3]},note number {i},2024-01-{i + 1:02d},"
                   f"{60 + i * 0.5},,{'ab'[i % 2]}\n" for i in range(24)))


def test_inference_proposes_types_and_roles(tmp_path):
    text = MIXED.replace(",60.0,", ",oops,", 1)  # one stray text cell in a numeric column (line 2)
    result = read_csv_table(write(tmp_path, "m.csv", text), label_column="kind")
    t = result.table
    kinds = {c.name: (c.type, c.role) for c in t.columns}
    assert kinds == {"id": (NUMERIC, META), "height": (NUMERIC, FEATURE), "city": (CATEGORICAL, META),
                     "comment": (TEXT, META), "when": (DATETIME, META), "weight": (NUMERIC, FEATURE),
                     "empty": (NUMERIC, SKIPPED), "kind": (CATEGORICAL, TARGET)}
    assert t.current_target == "kind" and t.feature_names == ["height", "weight"]
    weight = t.column("weight")
    assert np.isnan(weight.values[0]) and weight.values[1] == 60.5 and weight.n_missing == 1
    report = "\n".join(t.report)
    assert "column 'weight' is numeric but 1 value(s) are not numbers, read as missing: 'oops' on line 2" in report
    assert "column 'id' looks like a row id" in report and "column 'empty' is empty" in report
    assert "'city' is not numeric (e.g. 'Paris' on line 2" in report and "categorical meta column (3 distinct" in report
    assert t.column("city").categories.tolist() == ["Oslo", "Paris", "Rome"]
    assert t.column("when").values[3] == np.datetime64("2024-01-04")
    np.testing.assert_array_equal(t.row_ids, np.arange(2, 26))  # line numbers after the header
    info = {i.name: i for i in t.infos()}
    assert info["city"].n_distinct == 3 and info["weight"].n_missing == 1
    assert "'city': categorical, meta, 3 distinct, 0 missing" in t.describe()[2]


def test_a_mostly_text_column_is_not_numeric(tmp_path):
    values = ["x", "3", "y", "x", "y", "x", "y", "x"]  # one number in eight: a text column
    text = "a,b,c\n" + "".join(f"{i},{v},note {i}\n" for i, v in enumerate(values))
    t = read_csv_table(write(tmp_path, "t.csv", text)).table
    assert t.column("b").type == CATEGORICAL and t.column("b").role == META
    assert t.column("b").categories.tolist() == ["3", "x", "y"]
    assert t.column("c").type == TEXT  # every value distinct: free text


def test_row_ids_are_line_numbers_through_blank_lines_and_quotes(tmp_path):
    t = read_csv_table(write(tmp_path, "b.csv", "a,b\n\n1,2\n3,4\n\n\n5,6\n")).table
    np.testing.assert_array_equal(t.row_ids, [3, 4, 7])
    quoted = 'name,v\n"Smith, J",1\n\n"two\nlines",2\n"x",3\n'
    t = read_csv_table(write(tmp_path, "q.csv", quoted), label_column="name").table
    np.testing.assert_array_equal(t.row_ids, [2, 4, 6])
    assert t.column("name").decoded().tolist() == ["Smith, J", "two\nlines", "x"]


def test_id_column_becomes_the_row_id_and_repeats_are_refused(tmp_path):
    path = write(tmp_path, "ids.csv", "code,a,b\nk1,1,2\nk2,3,4\nk3,5,6\n")
    ds = ms.load_data(path, id_column="code")
    assert ds.row_ids.tolist() == ["k1", "k2", "k3"] and ds.table.id_column == "code"
    assert ds.feature_names == ["a", "b"]
    bad = write(tmp_path, "rep.csv", "code,a,b\nk1,1,2\nk2,3,4\nk1,5,6\nk2,7,8\n")
    with pytest.raises(DataError, match=r"Id column 'code' has repeated values: the first is 'k1' \(lines 2 and 4\)"):
        ms.load_data(bad, id_column="code")
    numeric = write(tmp_path, "num.csv", "n,a\n7,1\n8,2\n7,3\n")
    with pytest.raises(DataError, match=r"Id column 'n' has repeated values: the first is 7 \(lines 2 and 4\)"):
        ms.load_data(numeric, id_column="n")


def test_a_file_whose_only_numeric_columns_are_ids_is_refused(tmp_path):
    path = write(tmp_path, "only_ids.csv", "id,name,city\n1,ann,Paris\n2,bob,Rome\n3,cy,Oslo\n")
    with pytest.raises(DataError, match=r"only_ids\.csv has no numeric column to use as features .*'id' \(row id\)"
                                        r".*only numeric column\(s\) 'id' look like row ids"):
        ms.load_data(path)
    ds = ms.load_data(path, roles="id=feature")  # the proposed role can be overridden
    assert ds.feature_names == ["id"]


def test_dataset_roles_and_target_recompute_x_and_labels(tmp_path):
    text = "a,b,year,group,sp\n1,10,2007,u,x\n2,,2008,v,y\n3,30,2007,u,x\n4,40,2009,v,y\n"
    ds = ms.load_data(write(tmp_path, "r.csv", text), label_column="sp")
    assert ds.feature_names == ["a", "b"] and ds.n_samples == 3  # line 3 dropped (b missing)
    assert ds.row_ids.tolist() == [2, 4, 5]
    assert ds.table.column("year").role == META  # a date part: meta, easy to fit anyway
    ds.set_role("b", "skipped")  # the dropped row comes back
    assert ds.feature_names == ["a"] and ds.row_ids.tolist() == [2, 3, 4, 5]
    np.testing.assert_array_equal(ds.X[:, 0], [1, 2, 3, 4])
    ds.set_target("group")
    assert ds.label_name == "group" and ds.labels.tolist() == ["u", "v", "u", "v"]
    assert set(ds.table.target_names) == {"sp", "group"}  # several candidates, one current
    ds.set_roles({"year": "feature"})
    assert ds.feature_names == ["a", "year"] and ds.X[:, 1].tolist() == [2007, 2008, 2007, 2009]
    with pytest.raises(DataError, match="no numeric column to use as features"):
        ds.set_roles({"a": "meta", "year": "meta"})
    assert ds.feature_names == ["a", "year"]  # unchanged after the refusal
    ds.set_role("b", "feature")
    assert ds.n_samples == 3
    ds.set_missing("keep")
    assert ds.n_samples == 4 and ds.feature_names == ["a", "b", "year"] and np.isnan(ds.X[1, 1])
    info = {c.name: c.role for c in ds.columns}
    assert info == {"a": "feature", "b": "feature", "year": "feature", "group": "target", "sp": "target"}


def test_subset_keeps_row_ids_and_the_table(tmp_path):
    ds = ms.load_data(write(tmp_path, "s.csv", "a,b\n1,2\n3,4\n5,6\n7,8\n"))
    sub = ds.subset([1, 3])
    assert sub.row_ids.tolist() == [3, 5] and sub.table is ds.table
    sub.set_role("b", "skipped")
    assert sub.row_ids.tolist() == [3, 5] and sub.X[:, 0].tolist() == [3, 7]


def test_plain_arrays_get_positional_row_ids():
    ds = Dataset("x", np.ones((4, 2)))
    assert ds.row_ids.tolist() == [0, 1, 2, 3] and ds.table is None
    assert [c.role for c in ds.columns] == ["feature", "feature"]
    with pytest.raises(DataError, match="has no table of columns"):
        ds.set_role("x0", "meta")


def test_all_number_files_share_one_array_with_x(tmp_path, rng):
    X = rng.normal(size=(500, 4))
    X[7, 2] = np.inf
    path = tmp_path / "n.csv"
    pd.DataFrame(X, columns=list("abcd")).to_csv(path, index=False)
    ds = ms.load_data(path, missing="keep")
    assert ds.X is ds.table.block[1] and ds.X.flags.c_contiguous
    assert np.isnan(ds.X[7, 2]) and ds.n_samples == 500
    np.testing.assert_allclose(np.delete(ds.X, 7, axis=0), np.delete(X, 7, axis=0), rtol=1e-15)


def test_csv_options_decimal_encoding_and_na_values(tmp_path):
    path = write(tmp_path, "d.csv", "a;b\n1,5;x\n2,25;y\n", encoding="cp1252")
    ds = ms.load_data(path, decimal="comma", label_column="b")
    np.testing.assert_allclose(ds.X[:, 0], [1.5, 2.25])
    path = write(tmp_path, "e.csv", "name,v\ncafé,1\nthé,2\n", encoding="cp1252")
    ds = ms.load_data(path, encoding="cp1252", label_column="name")
    assert ds.labels.tolist() == ["café", "thé"] and not any("Latin-1" in r for r in ds.report)
    t = read_csv_table(write(tmp_path, "na.csv", "a,b\n1,-999\n2,3\n"), na_values=["-999"]).table
    assert np.isnan(t.column("b").values[0])
    ds = ms.load_data(tmp_path / "na.csv", na_values="-999, missing", missing="keep")
    assert np.isnan(ds.X[0, 1]) and ds.X[1, 1] == 3


def test_excel_single_and_several_sheets(tmp_path):
    one = tmp_path / "one.xlsx"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [4.0, None, 6.0], "sp": ["a", "b", "a"]}).to_excel(one, index=False)
    ds = ms.load_data(one, label_column="sp", missing="keep")
    assert ds.feature_names == ["x", "y"] and ds.labels.tolist() == ["a", "b", "a"]
    assert np.isnan(ds.X[1, 1]) and ds.row_ids.tolist() == [2, 3, 4]  # the sheet's row numbers
    assert "sheet 'Sheet1'" in ds.report[0]
    many = tmp_path / "many.xlsx"
    with pd.ExcelWriter(many) as writer:
        pd.DataFrame({"a": [1, 2]}).to_excel(writer, sheet_name="Data", index=False)
        pd.DataFrame({"b": [3.0, 4.0, 5.0], "c": [1.0, 2.0, 2.0]}).to_excel(writer, sheet_name="More", index=False)
    with pytest.raises(DataError, match=r"many\.xlsx has 2 sheets \('Data', 'More'\): pick one with the sheet option"):
        ms.load_data(many)
    assert ms.load_data(many, sheet="More").X.shape == (3, 2)
    assert ms.load_data(many, sheet=0).feature_names == ["a"]
    with pytest.raises(DataError, match=r"no sheet named 'Nope'.*'Data', 'More'"):
        ms.load_data(many, sheet="Nope")
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"PK\x03\x04 not really a workbook")
    with pytest.raises(DataError, match=r"broken\.xlsx is not a readable Excel workbook"):
        ms.load_data(broken)


def test_parquet_keeps_stored_types(tmp_path):
    path = tmp_path / "p.parquet"
    frame = pd.DataFrame({"v": [1.5, 2.5, np.nan, 4.0], "n": [1, 2, 3, 4], "g": pd.Categorical(["a", "b", "a", "b"]),
                          "t": pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03", "2020-01-04"])})
    frame.to_parquet(path)
    result = read_table(path)
    kinds = {c.name: (c.type, c.role) for c in result.table.columns}
    assert kinds == {"v": (NUMERIC, FEATURE), "n": (NUMERIC, FEATURE), "g": (CATEGORICAL, META),
                     "t": (DATETIME, META)}
    ds = ms.load_data(path, label_column="g")
    assert ds.n_samples == 3 and ds.labels.tolist() == ["a", "b", "b"] and ds.row_ids.tolist() == [1, 2, 4]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"bad\.parquet is not a readable Parquet file"):
        ms.load_data(bad)


def test_table_model_checks_and_float_forms():
    cat = Column("c", CATEGORICAL, np.array([0, 1, -1, 0]), META, np.array(["lo", "hi"]))
    code = Column("k", CATEGORICAL, np.array([1, 0, 0, -1]), FEATURE, np.array([2007, 2009]))
    t = Table([Column("x", NUMERIC, np.array([1.0, 2.0, np.nan, 4.0])), cat, code])
    np.testing.assert_array_equal(cat.as_float(), [0, 1, np.nan, 0])
    np.testing.assert_array_equal(code.as_float(), [2009, 2007, 2007, np.nan])
    assert cat.decoded().tolist() == ["lo", "hi", None, "lo"]
    np.testing.assert_array_equal(t.feature_matrix(), [[1, 2009], [2, 2007], [np.nan, 2007], [4, np.nan]])
    part = t.take([3, 0])
    assert part.row_ids.tolist() == [4, 1] and part.column("c").decoded().tolist() == ["lo", "lo"]
    with pytest.raises(DataError, match="free text: it cannot be a feature"):
        Table([Column("s", TEXT, np.array(["a", "b"], dtype=object), META)]).set_role("s", "feature")
    with pytest.raises(DataError, match="unknown role 'fitted'"):
        Column("x", NUMERIC, np.zeros(2), "fitted")
    with pytest.raises(DataError, match="no column named 'q'.*'x', 'c', 'k'"):
        t.column("q")
    t.set_type("x", CATEGORICAL)
    assert t.column("x").categories.tolist() == [1, 2, 4] and t.column("x").as_float()[3] == 4.0
    frame = t.to_frame()
    assert list(frame.columns) == ["x", "c", "k"] and frame.index.name == "row"


def test_preview_reads_only_the_first_rows_with_proposed_roles(tmp_path):
    from manifold_studio.tables import preview_table

    lines = ["id;size;kind;when"] + [f"{i};{i * 1.5:.1f};k{i % 2};2024-02-{i % 28 + 1:02d}" for i in range(5000)]
    lines[3] = "2;oops;k0;2024-02-03"
    path = write(tmp_path, "big.csv", "\n".join(lines) + "\n")
    result = preview_table(path, max_rows=50, label_column="kind")
    t = result.table
    assert t.n_rows == 50 and t.row_ids[:3].tolist() == [2, 3, 4]
    assert [(i.name, i.type, i.role) for i in t.infos()] == [
        ("id", "numeric", "meta"), ("size", "numeric", "feature"), ("kind", "categorical", "target"),
        ("when", "datetime", "meta")]
    assert any("'oops' on line 4" in r for r in t.report) and "delimiter: semicolon" in result.detail
    assert list(t.to_frame().columns) == ["id", "size", "kind", "when"]
    xlsx = tmp_path / "p.xlsx"
    pd.DataFrame({"a": range(300), "b": [0.5] * 300}).to_excel(xlsx, index=False)
    assert preview_table(xlsx, max_rows=20).table.n_rows == 20
