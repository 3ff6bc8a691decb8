"""Project format 2 (issue 21): a data set's table — column roles, meta columns from labelling,
row ids — and the file it was read from survive saving and reopening; format 1 still opens."""
import hashlib

import numpy as np
import pytest

from hostile_files import PROJECT_KEY, drop_member, edit_document, set_member
from manifold_studio.project.project_file import FORMAT_VERSION, load_project, read_project, save_project
from manifold_studio.session.annotate import label_into_column
from manifold_studio.session.model import Session


def _reopen(session, tmp_path, name="p.msproj"):
    path = save_project(session, tmp_path / name)
    back, _ = load_project(path)
    return back, path


def test_roles_changed_in_the_session_survive_the_round_trip(tmp_path):
    s = Session()
    ds = s.load("sample:penguins")
    ds.set_roles({"bill_length_mm": "meta", "year": "feature", "sex": "skipped"})
    s.run("pca", n_components=2)
    back, _ = _reopen(s, tmp_path)
    again = back.current_dataset
    assert again.table.roles == ds.table.roles
    assert again.table.roles["bill_length_mm"] == "meta" and again.table.roles["sex"] == "skipped"
    assert again.feature_names == ["bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
    np.testing.assert_array_equal(again.X, ds.X)
    np.testing.assert_array_equal(again.labels, ds.labels)
    np.testing.assert_array_equal(again.row_ids, ds.row_ids)  # the file's line numbers, not 0..n-1
    assert again.row_ids[:3].tolist() == [2, 3, 4]
    for name in ("island", "sex", "year", "bill_length_mm"):
        a, b = again.column_values(name), ds.column_values(name)
        assert [None if v is None or v != v else v for v in a.tolist()] == \
            [None if v is None or v != v else v for v in b.tolist()], name
    # the reopened data set changes roles as the original does: X recomputed over the same rows
    again.set_role("bill_length_mm", "feature")
    ds.set_role("bill_length_mm", "feature")
    np.testing.assert_array_equal(again.X, ds.X)
    assert again.n_samples == 342  # the two rows with missing values are still dropped


def test_a_meta_column_made_by_labelling_is_kept(tmp_path):
    s = Session()
    ds = s.load("sample:iris")  # no table of its own: labelling makes one
    label_into_column(ds, np.arange(10), "checked", "yes")
    label_into_column(ds, np.arange(140, 150), "checked", "no")
    s.run("pca", n_components=2)
    back, _ = _reopen(s, tmp_path)
    again = back.current_dataset
    assert again.table is not None and again.table.roles["checked"] == "meta"
    values = again.column_values("checked")
    assert values[:10].tolist() == ["yes"] * 10 and values[140:].tolist() == ["no"] * 10
    assert all(v is None for v in values[10:140])
    np.testing.assert_array_equal(again.X, ds.X)


def test_text_dates_and_an_id_column_round_trip(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("code,a,b,when,comment,kind\n"
                    "p1,1.0,2.0,2024-01-02,first one,x\np2,2.0,1.5,2024-02-03,,y\n"
                    "p3,3.0,0.5,2024-03-04,third,x\np4,4.0,0.25,2024-04-05,fourth,y\n")
    s = Session()
    ds = s.load(str(path), label_column="kind", id_column="code", roles={"comment": "meta"})
    types = {c.name: c.type for c in ds.table.columns}
    s.run("pca", n_components=1)
    back, _ = _reopen(s, tmp_path)
    again = back.current_dataset
    assert {c.name: c.type for c in again.table.columns} == types
    assert again.table.id_column == "code" and again.row_ids.tolist() == ["p1", "p2", "p3", "p4"]
    assert types == {"code": "text", "a": "numeric", "b": "numeric", "when": "datetime", "comment": "text",
                     "kind": "categorical"}
    assert again.column_values("comment").tolist() == ["first one", None, "third", "fourth"]
    np.testing.assert_array_equal(again.column_values("when"), ds.column_values("when"))


def test_the_source_file_is_recorded_with_its_size_and_sha256(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4\n5,7\n")
    s = Session()
    s.load(str(path))
    back, proj = _reopen(s, tmp_path)
    record = back.current_dataset.source_file
    assert record["path"] == str(path.resolve()) and record["size"] == path.stat().st_size
    assert record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert FORMAT_VERSION == 2


def test_a_format_1_project_still_opens(tmp_path):
    s = Session()
    s.load("sample:penguins")
    s.run("pca", n_components=2)
    path = save_project(s, tmp_path / "old.msproj")
    new_fields = ("row_ids", "missing", "source_file", "table", "table_rows", "table_scope")

    def as_format_1(doc):
        doc["format_version"] = 1
        for d in doc["datasets"]:
            for key in new_fields:
                d.pop(key, None)

    edit_document(path, as_format_1, PROJECT_KEY)
    contents = read_project(path)
    ds = contents.session.current_dataset
    assert ds.table is None and ds.n_samples == 342 and contents.problems == []
    assert contents.session.runs[1].embedding.shape == (342, 2)


def test_a_damaged_table_is_dropped_with_a_note_and_the_data_set_opens(tmp_path):
    s = Session()
    s.load("sample:penguins")
    path = save_project(s, tmp_path / "p.msproj")
    set_member(path, "data/0/table/1/values", np.full(344, 7, dtype=np.int64))  # 'island' has 3 categories
    contents = read_project(path)
    ds = contents.session.current_dataset
    assert ds.table is None and ds.n_samples == 342
    assert any("table of columns is damaged" in p and "'island'" in p for p in contents.problems)
    drop_member(path, "data/0/row_ids.npy")
    with pytest.raises(Exception, match=r"datasets\[0\]\.row_ids' refers to member 'data/0/row_ids'"):
        read_project(path)
