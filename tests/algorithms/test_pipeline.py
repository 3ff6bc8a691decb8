"""Pipelines (issue 20): make_pipeline, the estimator contract, columns matched by name, the model
file, and scikit-learn's pipelines as the oracle."""
import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline as sk_make_pipeline
from sklearn.preprocessing import StandardScaler

import manifold_studio as ms
from manifold_studio.algorithms.pipeline import Pipeline
from manifold_studio.errors import DataError, InvalidParameterError, NotFittedError
from manifold_studio.files.model_file import load_model, read_metadata, save_model
from procrustes import procrustes_residual


def frame(rng, n=60):
    X = rng.normal(size=(n, 4)) * [1.0, 10.0, 100.0, 1000.0]
    return pd.DataFrame(X, columns=["alpha", "beta", "gamma", "delta"])


def test_the_ways_to_name_a_step():
    pipe = ms.make_pipeline("standardize", ("impute", {"strategy": "median"}), ms.get_preprocessor("minmax"),
                            ms.get_algorithm("kmeans", n_clusters=3))
    assert [n for n, _ in pipe.steps] == ["standardize", "impute", "minmax", "kmeans"]
    assert pipe.steps[1][1].get_params()["strategy"] == "median" and pipe.kind == "clustering"
    assert ms.make_pipeline("standardize", "standardize").steps[1][0] == "standardize_2"
    assert ms.make_pipeline("standardize", ("pca", {"n_components": 3})).final.n_components == 3
    with pytest.raises(InvalidParameterError, match="Unknown preparation step 'scale'"):
        ms.make_pipeline("scale", "pca")
    with pytest.raises(InvalidParameterError, match="Only the last item of a pipeline can be an algorithm"):
        ms.make_pipeline(ms.get_algorithm("pca"), "standardize")
    with pytest.raises(InvalidParameterError, match="needs at least one step"):
        ms.make_pipeline()


def test_get_and_set_params_and_cloning(rng):
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("kmeans", n_clusters=3))
    params = pipe.get_params()
    assert params["kmeans__n_clusters"] == 3 and params["standardize__with_mean"] is True
    assert pipe.set_params(kmeans__n_clusters=4) is pipe and pipe.final.n_clusters == 4
    with pytest.raises(InvalidParameterError, match="Unknown pipeline parameter 'pca__x'"):
        pipe.set_params(pca__x=1)
    clone = Pipeline(**pipe.get_params())
    assert clone.final is not pipe.final and clone.get_params()["kmeans__n_clusters"] == 4


def test_estimator_contract_per_final_kind(rng):
    X = frame(rng)
    emb = ms.make_pipeline("standardize", ms.get_algorithm("pca", n_components=2))
    with pytest.raises(NotFittedError, match="call fit"):
        emb.extend(X)
    out = emb.fit_transform(X)
    assert out.shape == (60, 2) and emb.embedding_ is emb.final.embedding_
    np.testing.assert_allclose(emb.transform(X), out, atol=1e-10)
    with pytest.raises(AttributeError, match="no predict"):
        emb.predict(X)
    y = (X["alpha"] > 0).map({True: "up", False: "down"}).to_numpy()
    clf = ms.make_pipeline("standardize", ms.get_algorithm("svm")).fit(X, y)
    assert set(clf.predict(X)) <= {"up", "down"} and clf.score(X, y) > 0.9
    assert clf.decision_function(X).shape == (60,)
    prep = ms.make_pipeline("standardize", "minmax").fit(X)
    assert prep.kind == "preprocessing" and prep.transform(X).min() == 0.0 and prep.columns_out_ == list(X.columns)
    assert [type(s).__name__ for _, s in emb.steps_] == ["Standardize", "PCA"]


def test_matches_scikit_learns_pipeline(rng):
    X = frame(rng).to_numpy()
    ours = ms.make_pipeline("standardize", ms.get_algorithm("pca", n_components=2)).fit(X)
    ref = sk_make_pipeline(StandardScaler(), PCA(n_components=2)).fit(X)
    assert procrustes_residual(ours.embedding_, ref.transform(X)) < 1e-10
    new = X[:7] + 0.1
    assert procrustes_residual(ours.extend(new), ref.transform(new)) < 1e-10


def test_new_data_are_matched_by_name_and_a_missing_column_is_refused(rng):
    X = frame(rng)
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("pca", n_components=2)).fit(X)
    assert pipe.feature_names_in_.tolist() == ["alpha", "beta", "gamma", "delta"]
    shuffled = X[["delta", "alpha", "gamma", "beta"]].assign(extra=1.0)
    np.testing.assert_allclose(pipe.extend(shuffled), pipe.extend(X), rtol=1e-13)
    with pytest.raises(DataError, match=r"The new data lack column 'gamma', which the pipeline was fitted with"):
        pipe.extend(X.drop(columns=["gamma"]))
    with pytest.raises(DataError, match=r"3 columns; the pipeline was fitted on 4 \(alpha, beta, gamma, delta\)"):
        pipe.extend(X.to_numpy()[:, :3])


def test_a_chain_whose_step_needs_a_column_the_new_file_lacks(tmp_path, rng):
    train = tmp_path / "train.csv"
    frame(rng).to_csv(train, index=False)
    pipe = ms.make_pipeline(("select_columns", {"exclude": ("delta",)}), "standardize",
                            ms.get_algorithm("pca", n_components=2)).fit(ms.load_data(train))
    model = save_model(pipe, tmp_path / "m.npz")
    new = tmp_path / "new.csv"
    frame(rng, 5).drop(columns=["beta"]).to_csv(new, index=False)
    with pytest.raises(DataError, match=r"The new data lack column 'beta', which the pipeline was fitted with"):
        load_model(model).extend(ms.load_data(new))


def test_saved_chain_applied_to_a_file_in_another_order_with_a_gap_equals_extend(tmp_path, rng):
    """Done means: impute + standardize + isomap, saved, applied to a table whose columns are in
    another order and which has a missing value, equals the in-memory pipeline's extend."""
    X = frame(rng, 80)
    X.iloc[5, 1] = np.nan
    train = tmp_path / "train.csv"
    X.to_csv(train, index=False)
    data = ms.load_data(train, missing="keep")
    pipe = ms.make_pipeline("impute", "standardize", ms.get_algorithm("isomap", n_neighbors=8)).fit(data)
    assert pipe.embedding_.shape == (80, 2)
    path = save_model(pipe, tmp_path / "chain.npz", data=data)
    meta = read_metadata(path)
    assert meta["algorithm"] == "pipeline" and [s.get("preprocessor", s.get("algorithm")) for s in meta["steps"]] \
        == ["impute", "standardize", "isomap"]
    new = frame(rng, 12)[["gamma", "delta", "beta", "alpha"]]
    new.iloc[3, 2] = np.nan
    new_path = tmp_path / "new.csv"
    new.to_csv(new_path, index=False)
    loaded = load_model(path)
    applied = loaded.extend(ms.load_data(new_path, missing="keep"))
    in_memory = pipe.extend(new)
    assert np.isfinite(applied).all() and applied.shape == (12, 2)
    np.testing.assert_allclose(applied, in_memory, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(loaded.extend(new), in_memory, rtol=1e-12, atol=1e-12)


def test_categorical_columns_travel_through_the_model_file(tmp_path):
    train = pd.DataFrame({"island": ["Biscoe", "Dream", "Torgersen"] * 10, "mass": np.linspace(3, 6, 30),
                          "bill": np.linspace(30, 50, 30) ** 1.1})
    pipe = ms.make_pipeline("one_hot", "standardize", ms.get_algorithm("pca", n_components=2)).fit(train)
    loaded = load_model(save_model(pipe, tmp_path / "oh.npz"))
    new = pd.DataFrame({"bill": [40.0, 33.0], "island": ["Dream", "Biscoe"], "mass": [4.0, 5.5]})
    np.testing.assert_allclose(loaded.extend(new), pipe.extend(new), rtol=1e-12, atol=1e-12)
    assert loaded.categories_in_ == {"island": ["Biscoe", "Dream", "Torgersen"]}


def test_evaluate_accepts_a_pipeline_factory(rng):
    from manifold_studio.evaluation import KFOLD, evaluate

    X = frame(rng).to_numpy()
    y = np.where(X[:, 0] + X[:, 1] / 10 > 0, 1, 0)
    res = evaluate(ms.make_pipeline("standardize", ms.get_algorithm("linear_classifier")), X, y, KFOLD)
    assert res.fold_accuracy.shape == (5,) and res.mean_accuracy > 0.85


def test_categorical_features_of_a_table_are_matched_by_category_not_by_code(tmp_path):
    """A new file with fewer categories codes them differently: the pipeline must map its values
    through the training categories."""
    train = tmp_path / "train.csv"
    rows = [("Biscoe", 4.5), ("Dream", 3.7), ("Torgersen", 3.6)] * 8
    pd.DataFrame(rows, columns=["island", "mass"]).assign(bill=np.linspace(35, 50, 24)).to_csv(train, index=False)
    ds = ms.load_data(train, roles="island=feature")
    assert ds.feature_names == ["island", "mass", "bill"] and ds.X[:3, 0].tolist() == [0, 1, 2]
    pipe = ms.make_pipeline("one_hot", ms.get_algorithm("pca", n_components=2)).fit(ds)
    assert pipe.preparation[0][1].columns_out_[:3] == ["island=Biscoe", "island=Dream", "island=Torgersen"]
    new = tmp_path / "new.csv"
    pd.DataFrame({"bill": [40.0, 41.0], "mass": [3.7, 3.6], "island": ["Torgersen", "Dream"]}).to_csv(new, index=False)
    new_ds = ms.load_data(new, roles="island=feature")
    assert new_ds.X[:, new_ds.feature_names.index("island")].tolist() == [1, 0]  # its own codes
    expected = pipe.extend(pd.DataFrame({"island": ["Torgersen", "Dream"], "mass": [3.7, 3.6], "bill": [40.0, 41.0]}))
    np.testing.assert_allclose(pipe.extend(new_ds), expected, rtol=1e-12)
    prepared = pipe.prepare(new_ds)
    np.testing.assert_array_equal(prepared[:, :3], [[0, 0, 1], [0, 1, 0]])


def test_a_dataset_that_dropped_rows_is_predicted_row_for_row():
    """A data set whose loader dropped rows with gaps (penguins) keeps its table's other rows:
    predicting the data set itself goes through those rows, not the whole table."""
    ds = ms.load_data("sample:penguins")
    assert ds.table_rows is not None and ds.n_samples < ds.table.n_rows  # 333 of 344 rows
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("svm")).fit(ds)
    np.testing.assert_array_equal(pipe.predict(ds), pipe.predict(ds.X))
    sub = ds.subset(np.arange(5, 40))
    np.testing.assert_array_equal(pipe.predict(sub), pipe.predict(ds.X[5:40]))
