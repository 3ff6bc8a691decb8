"""float32 in, float32 out, where scikit-learn keeps float32 (issue 33): the fitted attributes,
the extension and the scores of t-SNE, Isomap, the Gaussian mixture, the perceptron, the linear
classifier and the MLP, and the inverse transforms of PCA and NMF; float64 stays float64."""
import warnings

import numpy as np
import pytest

import manifold_studio as ms

X64 = np.abs(np.random.default_rng(0).normal(size=(40, 5)))
X32 = X64.astype(np.float32)
Y = (X64[:, 0] > np.median(X64[:, 0])).astype(int)

CASES = [
    ("tsne", dict(perplexity=5, max_iter=250), ("embedding_",)),
    ("isomap", dict(n_neighbors=6), ("embedding_",)),
    ("gmm", dict(n_components=2), ("weights_", "means_", "covariances_")),
    ("perceptron", dict(), ("coef_",)),
    ("linear_classifier", dict(loss="logistic"), ("coef_", "intercept_")),
    ("mlp", dict(hidden_layer_sizes=(4,), max_iter=30), ("coefs_", "intercepts_")),
]


def _dtypes(value):
    return {v.dtype for v in value} if isinstance(value, list) else {value.dtype}


@pytest.mark.parametrize("algo, params, attrs", CASES, ids=[c[0] for c in CASES])
def test_float32_kept_like_scikit_learn(algo, params, attrs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est32 = ms.get_algorithm(algo, **params).fit(X32, Y)
        est64 = ms.get_algorithm(algo, **params).fit(X64, Y)
    for name in attrs:
        assert _dtypes(getattr(est32, name)) == {np.dtype(np.float32)}, name
        assert _dtypes(getattr(est64, name)) == {np.dtype(np.float64)}, name
    out32 = est32.extend(X32[:4])
    if out32.dtype.kind == "f":
        assert out32.dtype == np.float32
        assert est64.extend(X64[:4]).dtype == np.float64
    if hasattr(est32, "predict_proba"):
        assert est32.predict_proba(X32[:4]).dtype == np.float32
        assert est64.predict_proba(X64[:4]).dtype == np.float64


@pytest.mark.parametrize("algo", ["pca", "nmf"])
def test_inverse_transform_keeps_float32(algo):
    est = ms.get_algorithm(algo, n_components=2).fit(X32)
    Z = est.extend(X32)
    assert Z.dtype == np.float32
    back = est.inverse_transform(Z)
    assert back.dtype == np.float32
    assert est.inverse_transform(Z.astype(np.float64)).dtype == np.float64
    np.testing.assert_allclose(back, est.inverse_transform(Z.astype(np.float64)), rtol=1e-5, atol=1e-5)
