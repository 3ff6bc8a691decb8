"""Pipelines below the plugin host and the tables (the layer contract, issue 30): step ids are
resolved through the host that manifold_studio.plugins.host registers, and tables and data sets
are recognised by what they offer, not by importing their classes."""
import numpy as np
import pandas as pd
import pytest

import manifold_studio as ms
from manifold_studio.algorithms import pipeline as pipeline_module
from manifold_studio.algorithms.named_columns import as_named_matrix, is_dataset, is_table
from manifold_studio.errors import InvalidParameterError
from manifold_studio.plugins.host import get_host


def test_the_plugin_host_registers_itself_as_the_step_source():
    assert pipeline_module._step_source is get_host
    pipe = ms.make_pipeline("standardize", ("kmeans", {"n_clusters": 2}))
    assert [n for n, _ in pipe.steps] == ["standardize", "kmeans"]


def test_without_a_step_source_ids_are_refused_clearly_and_step_objects_still_work(monkeypatch):
    step = ms.get_preprocessor("standardize")
    monkeypatch.setattr(pipeline_module, "_step_source", None)
    with pytest.raises(InvalidParameterError, match="no plugin host is registered"):
        pipeline_module.make_pipeline("standardize")
    X = np.arange(12.0).reshape(6, 2)
    out = pipeline_module.make_pipeline(step).fit(X).prepare(X)
    np.testing.assert_allclose(out, (X - X.mean(0)) / X.std(0))


def test_tables_and_data_sets_are_recognised_by_duck_typing(tmp_path):
    rng = np.random.default_rng(0)
    csv = tmp_path / "t.csv"
    pd.DataFrame({"x": rng.normal(size=30), "y": rng.normal(size=30) * 10,
                  "kind": ["a", "b", "c"] * 10}).to_csv(csv, index=False)
    ds = ms.load_data(str(csv), label_column="kind")
    assert ds.table is not None
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    assert is_dataset(ds) and not is_table(ds)
    assert is_table(ds.table) and not is_dataset(ds.table)
    assert not any(f(x) for f in (is_table, is_dataset) for x in (frame, np.zeros((2, 2)), [[1.0]]))
    matrix, names, _ = as_named_matrix(ds.table)
    assert names == ds.table.feature_names
    np.testing.assert_array_equal(matrix, ds.X)
    # a data set fits with its labels and its feature names, as before
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("pca", n_components=1)).fit(ds)
    assert pipe.columns_in_ == list(ds.feature_names)
    np.testing.assert_allclose(pipe.prepare(ds.table), (ds.X - ds.X.mean(0)) / ds.X.std(0), atol=1e-12)
