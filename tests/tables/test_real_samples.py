"""The real sample data shipped with the samples plugin (issue 20) and what scaling does on them:
wine and breast cancer against scikit-learn's copies, k-means on wine with and without
standardize, an RBF SVM on breast cancer, and the Palmer penguins with their meta columns and gaps."""
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.metrics import adjusted_rand_score

import manifold_studio as ms
from manifold_studio.evaluation import KFOLD, evaluate


def test_wine_is_the_uci_data():
    ds = ms.load_data("sample:wine")
    ref = load_wine()
    np.testing.assert_array_equal(ds.X, ref.data)
    np.testing.assert_array_equal(ds.labels, ref.target + 1)  # cultivars 1, 2, 3 as in UCI
    assert ds.feature_names == list(ref.feature_names) and ds.label_name == "cultivar"
    assert ds.row_ids.tolist() == list(range(2, 180))  # the file's line numbers


def test_breast_cancer_is_the_wisconsin_diagnostic_data():
    ds = ms.load_data("sample:breast_cancer")
    ref = load_breast_cancer()
    np.testing.assert_array_equal(ds.X, ref.data)
    np.testing.assert_array_equal(ds.labels, ref.target_names[ref.target])
    assert ds.feature_names == [n.replace(" ", "_") for n in ref.feature_names]


def test_wine_kmeans_needs_standardize():
    """Done means: make_pipeline("standardize", kmeans(n_clusters=3, random_state=0)) reaches an
    adjusted Rand index of at least 0.85 against the cultivars (proline, ~750, outweighs hue, ~1,
    in every distance without it)."""
    ds = ms.load_data("sample:wine")
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("kmeans", n_clusters=3, random_state=0))
    ari = adjusted_rand_score(ds.labels, pipe.fit_predict(ds))
    raw = adjusted_rand_score(ds.labels, ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit_predict(ds.X))
    assert ari >= 0.85
    assert raw < 0.5


def test_breast_cancer_rbf_svm_with_standardize_five_fold():
    """Done means: an RBF SVM with standardize reaches at least 0.97 five-fold accuracy."""
    ds = ms.load_data("sample:breast_cancer")
    scaled = evaluate(lambda: ms.make_pipeline("standardize", ms.get_algorithm("svm", kernel="rbf")),
                      ds.X, ds.labels, KFOLD, n_splits=5)
    assert scaled.fold_accuracy.shape == (5,) and scaled.mean_accuracy >= 0.97
    raw = evaluate(lambda: ms.get_algorithm("svm", kernel="rbf"), ds.X, ds.labels, KFOLD, n_splits=5)
    assert raw.mean_accuracy < 0.93


def test_digits_tsne_free_check_of_ten_real_classes():
    """The real digits: the nearest class mean is right for most images (the font digits
    were ~100 clumps; this is a sanity check of the shipped file, not of an algorithm)."""
    ds = ms.load_data("sample:digits")
    means = np.array([ds.X[ds.labels == d].mean(axis=0) for d in range(10)])
    nearest = np.argmin(((ds.X[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert 0.85 < (nearest == ds.labels).mean() < 0.95
    assert np.bincount(ds.labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_penguins_columns_roles_and_row_ids():
    ds = ms.load_data("sample:penguins")
    roles = {c.name: (c.type, c.role) for c in ds.columns}
    assert roles == {"species": ("categorical", "target"), "island": ("categorical", "meta"),
                     "bill_length_mm": ("numeric", "feature"), "bill_depth_mm": ("numeric", "feature"),
                     "flipper_length_mm": ("numeric", "feature"), "body_mass_g": ("numeric", "feature"),
                     "sex": ("categorical", "meta"), "year": ("categorical", "meta")}
    assert "year" not in ds.feature_names and ds.n_features == 4
    assert ds.n_samples == 342 and 5 not in ds.row_ids and 273 not in ds.row_ids  # two rows with gaps dropped
    assert any("2 row(s) with missing or non-finite values dropped: line 5" in r for r in ds.report)
    island = ds.table.column("island")
    assert island.categories.tolist() == ["Biscoe", "Dream", "Torgersen"]
    assert np.bincount(island.values).tolist() == [168, 124, 52]
    assert ds.table.column("sex").n_missing == 11
    assert ds.table.column("year").categories.tolist() == [2007, 2008, 2009]
    sex = ds.column_values("sex")  # a meta column, on the rows of X
    assert len(sex) == 342 and sex[:2].tolist() == ["male", "female"] and sum(v is None for v in sex) == 9
    assert ds.column_values("year")[:1].tolist() == [2007]
    ds.set_target("island")  # a meta column can become the label
    assert sorted(set(ds.labels)) == ["Biscoe", "Dream", "Torgersen"]


def test_penguins_rows_with_gaps_are_imputed_when_impute_is_in_the_chain():
    ds = ms.load_data("sample:penguins", missing="keep")
    assert ds.n_samples == 344 and ds.row_ids.tolist() == list(range(2, 346))
    gaps = np.flatnonzero(np.isnan(ds.X).any(axis=1))
    assert ds.row_ids[gaps].tolist() == [5, 273]
    pipe = ms.make_pipeline(("impute", {"strategy": "median"}), "standardize",
                            ms.get_algorithm("kmeans", n_clusters=3, random_state=0))
    labels = pipe.fit_predict(ds)
    assert labels.shape == (344,)
    assert adjusted_rand_score(ds.labels, labels) > 0.6
    with pytest.raises(ms.DataError, match="NaN"):
        ms.make_pipeline("standardize", ms.get_algorithm("kmeans", n_clusters=3)).fit(ds)


def test_penguins_year_can_be_fitted_or_left_out():
    ds = ms.load_data("sample:penguins")
    ds.set_role("year", "feature")
    assert ds.feature_names[-1] == "year" and set(ds.X[:, -1]) == {2007.0, 2008.0, 2009.0}
    ds.set_role("year", "skipped")
    assert "year" not in ds.feature_names
