"""scikit-learn interoperability: clone, pipelines and (most of) check_estimator."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import manifold_studio as ms

# Checks we knowingly fail, with the reason:
KNOWN = {
    # sklearn wants *its own* NotFittedError class; importing scikit-learn at run time would make
    # it a dependency of the application. Ours is a ValueError/AttributeError with a clear message.
    "check_estimators_unfitted",
}


@pytest.mark.parametrize("algorithm_id", ["pca", "kernel_pca", "mds", "kmeans", "gmm", "hierarchical",
                                          "perceptron", "linear_classifier", "svm", "mlp"])
def test_check_estimator(algorithm_id):
    # every built-in is installed: a missing one is a failure, not a skip
    assert algorithm_id in ms.list_algorithms(), ms._host().failures
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = list(check_estimator(ms.get_algorithm(algorithm_id), on_fail=None))
    failed = {r["check_name"]: str(r["exception"])[:300] for r in results if r["status"] == "failed"}
    assert not set(failed) - KNOWN, failed


def test_pipeline_and_clone():
    X = ms.load_data("sample:iris").X
    pipe = make_pipeline(StandardScaler(), ms.get_algorithm("pca", n_components=2))
    Z = pipe.fit_transform(X)
    assert Z.shape == (150, 2)
    np.testing.assert_allclose(pipe.transform(X), Z, atol=1e-10)
    est = clone(ms.get_algorithm("pca", n_components=3, whiten=True))
    assert est.get_params() == {"n_components": 3, "whiten": True} and not est.is_fitted
