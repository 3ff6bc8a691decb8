"""Labelling rows into table columns (manifold_studio.session.annotate), Qt-free: on the penguins
sample (whose table keeps two rows the data set dropped for their gaps) a new meta column and an
existing one are written at the right table rows; features are refused; snapshot/restore undo."""
from __future__ import annotations

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError
from manifold_studio.session import annotate


@pytest.fixture
def penguins():
    return ms.load_data("sample:penguins")


def test_new_meta_column_and_existing_meta_column_follow_the_table_rows(penguins):
    ds = penguins
    assert ds.table.n_rows == 344 and ds.n_samples == 342  # two rows with gaps dropped
    before = annotate.snapshot(ds)
    X, labels = ds.X, ds.labels
    rows = np.array([0, 100, 341])
    text = annotate.label_into_column(ds, rows, "checked", "yes")
    assert "created (a meta column)" in text and "3 row(s)" in text
    assert ds.X is X and ds.labels is labels and ds.table.column("checked").role == "meta"
    vals = ds.column_values("checked")
    assert [vals[i] for i in rows] == ["yes"] * 3 and sum(v is not None for v in vals) == 3
    # the table row of data-set row 341 is its own (not 341: rows were dropped before it)
    table_vals = ds.table.column("checked").decoded()
    assert table_vals[ds.table_rows[341]] == "yes" and ds.table_rows[341] != 341
    # an existing meta column: the picked rows change, the others keep their values
    sex = ds.column_values("sex").copy()
    annotate.label_into_column(ds, [1, 2], "sex", "unknown")
    new = ds.column_values("sex")
    assert new[1] == new[2] == "unknown"
    keep = np.ones(ds.n_samples, dtype=bool)
    keep[[1, 2]] = False
    assert np.array_equal(new[keep], sex[keep])
    assert "unknown" in ds.table.categories()["sex"]
    # features are refused by name; a numeric meta refuses text
    with pytest.raises(DataError, match="'body_mass_g' is a feature column"):
        annotate.label_into_column(ds, [0], "body_mass_g", "x")
    annotate.restore(ds, before)
    assert "checked" not in ds.table and np.array_equal(ds.column_values("sex"), sex)


def test_a_data_set_without_table_gets_one_describing_it():
    ds = ms.load_data("sample:iris")
    assert ds.table is None
    annotate.label_into_column(ds, [0, 1], "note", "odd")
    assert ds.table.feature_names == ds.feature_names and ds.table.target_names == [ds.label_name]
    assert ds.column_values("note")[:3].tolist() == ["odd", "odd", None]
    assert ds.column_values(ds.label_name).tolist() == [str(v) for v in ds.labels.tolist()]
    assert annotate.writable_columns(ds) == [ds.label_name, "note"]
