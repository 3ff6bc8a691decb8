"""Output dtypes (float32 in gives float32 out where the method keeps it) and output feature
names (get_feature_names_out, scikit-learn's set_output(transform="pandas") in a pipeline)."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import manifold_studio as ms

#: the documented decision per method: the dtype of the results for float32 data (the
#: computation runs in float64 either way; the results are cast back where the method keeps float32)
FLOAT32_OUT = {
    "pca": np.float32,          # embedding_, components_, mean_, variances, transform
    "nmf": np.float32,          # embedding_ (W), components_ (H), transform
    "kmeans": np.float32,       # cluster_centers_ (labels are integers)
    "kernel_pca": np.float32,   # embedding_, transform
    "ppca": np.float64,         # a likelihood model: posterior means, score and impute stay float64
    "mds": np.float64,          # dissimilarities: float64, as scikit-learn's MDS
}
PARAMS = {"ppca": {"n_components": 1}, "kmeans": {"random_state": 0}, "nmf": {"random_state": 0}}


def _data(dtype):
    X = np.abs(np.random.default_rng(0).normal(size=(40, 5))) + 0.1
    return X.astype(dtype)


@pytest.mark.parametrize("algorithm_id", sorted(FLOAT32_OUT))
def test_float32_table(algorithm_id):
    X32, X64 = _data(np.float32), _data(np.float64)
    expected = FLOAT32_OUT[algorithm_id]
    est = ms.get_algorithm(algorithm_id, **PARAMS.get(algorithm_id, {})).fit(X32)
    out = est.cluster_centers_ if algorithm_id == "kmeans" else est.embedding_
    assert out.dtype == expected
    if algorithm_id != "kmeans":
        assert est.transform(X32[:4]).dtype == expected
        assert est.transform(X64[:4]).dtype == np.float64    # float64 data: float64 out, always
        # float32 results are the float64 ones rounded
        ref = ms.get_algorithm(algorithm_id, **PARAMS.get(algorithm_id, {})).fit(X32.astype(np.float64))
        np.testing.assert_allclose(np.abs(est.embedding_), np.abs(ref.embedding_).astype(expected),
                                   rtol=1e-5, atol=1e-6)
    else:
        assert est.predict(X32).dtype.kind == "i"


def test_pca_float32_attributes():
    est = ms.get_algorithm("pca", n_components=2).fit(_data(np.float32))
    for name in ("components_", "mean_", "explained_variance_", "explained_variance_ratio_", "singular_values_"):
        assert getattr(est, name).dtype == np.float32, name


def test_sparse_float32_pca_keeps_float32():
    X = sp.random(60, 12, density=0.3, random_state=0, format="csr", dtype=np.float32)
    est = ms.get_algorithm("pca", n_components=2, svd_solver="arpack").fit(X)
    assert est.embedding_.dtype == np.float32 and est.transform(X).dtype == np.float32


@pytest.mark.parametrize("algorithm_id", ["pca", "ppca", "kernel_pca", "mds", "nmf", "isomap"])
def test_feature_names_out(algorithm_id):
    est = ms.get_algorithm(algorithm_id, n_components=2).fit(_data(np.float64))
    names = est.get_feature_names_out()
    assert names.dtype == object and list(names) == [f"{algorithm_id}0", f"{algorithm_id}1"]
    assert list(est.get_feature_names_out([f"x{i}" for i in range(5)])) == list(names)
    with pytest.raises(ValueError, match="input_features should have length equal"):
        est.get_feature_names_out(["a", "b"])


def test_pandas_output_in_a_pipeline():
    X = pd.DataFrame(_data(np.float64), columns=list("abcde"), index=[f"r{i}" for i in range(40)])
    pipe = make_pipeline(StandardScaler(), ms.get_algorithm("pca", n_components=3)).set_output(transform="pandas")
    Z = pipe.fit_transform(X)
    assert isinstance(Z, pd.DataFrame)
    assert list(Z.columns) == ["pca0", "pca1", "pca2"] and list(Z.index) == list(X.index)
    new = X.iloc[:6]
    T = pipe.transform(new)
    assert isinstance(T, pd.DataFrame) and list(T.index) == list(new.index)
    np.testing.assert_allclose(T.to_numpy(), Z.to_numpy()[:6], atol=1e-12)
    # the numbers are the default output's
    plain = make_pipeline(StandardScaler(), ms.get_algorithm("pca", n_components=3)).fit_transform(X)
    np.testing.assert_allclose(Z.to_numpy(), plain, atol=1e-12)
    # and back to numpy
    pipe.set_output(transform="default")
    assert isinstance(pipe.transform(new), np.ndarray)


def test_set_output_refuses_an_unknown_container():
    with pytest.raises(ms.InvalidParameterError, match="'default', 'pandas'"):
        ms.get_algorithm("pca").set_output(transform="polars")
