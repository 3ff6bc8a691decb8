"""scikit-learn interoperability: clone, pipelines and (most of) check_estimator."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import manifold_studio as ms

# Checks we knowingly fail, by algorithm. Every entry is one scikit-learn xfails for its own
# estimator with the same reason:
KNOWN: dict[str, set[str]] = {
    # the initialisations draw points at random (k-means++, "random"): the draws over n weighted
    # points differ from those over the repeated points, so the partitions differ; scikit-learn
    # xfails both for KMeans ("sample_weight is not equivalent to removing/repeating samples").
    # With a fixed array init the equivalence is exact: tests/test_kmeans_weights.py
    "kmeans": {"check_sample_weight_equivalence_on_dense_data",
               "check_sample_weight_equivalence_on_sparse_data"},
}
# parameters for scikit-learn's tiny check data sets (10 to 30 points); kmeans and nmf take
# scikit-learn's own (sklearn/utils/_test_common/instance_generator.py)
# (scikit-learn's for its neighbour methods: n_neighbors=3, perplexity=2)
SMALL_DATA_PARAMS = {"isomap": {"n_neighbors": 3}, "lle": {"n_neighbors": 3},
                     "laplacian_eigenmaps": {"n_neighbors": 3}, "ppca": {"n_components": 1},
                     "tsne": {"perplexity": 2.0, "max_iter": 250}, "autoencoder": {"max_iter": 20},
                     # umap: the default n_neighbors=15, truncated on 10-15 points as umap-learn
                     "umap": {"n_epochs": 50},
                     "kmeans": {"n_init": 2, "n_clusters": 2, "max_iter": 5}, "nmf": {"max_iter": 500}}
BUILTIN = ["pca", "kernel_pca", "mds", "isomap", "lle", "laplacian_eigenmaps", "kmeans", "gmm",
           "hierarchical", "spectral_clustering", "perceptron", "linear_classifier", "svm", "mlp"]


def _all_algorithms():
    return sorted(set(BUILTIN) | set(ms.list_algorithms()))


# the parameters scikit-learn's own checks give the counterparts of the supervised and
# clustering methods (sklearn.utils._test_common.instance_generator: Perceptron max_iter=5,
# LogisticRegression max_iter=5, MLPClassifier max_iter=100, GaussianMixture n_init=2,
# max_iter=5, AgglomerativeClustering n_clusters=2; SVC none)
SMALL_DATA_PARAMS.update({"perceptron": {"max_epochs": 5}, "linear_classifier": {"max_iter": 5},
                          "mlp": {"max_iter": 100}, "gmm": {"n_init": 2, "max_iter": 5},
                          "hierarchical": {"n_clusters": 2}, "svm": {}})


@pytest.mark.parametrize("algorithm_id", _all_algorithms())
def test_check_estimator(algorithm_id):
    # every built-in is installed: a missing one is a failure, not a skip
    assert algorithm_id in ms.list_algorithms(), ms._host().failures
    est = ms.get_algorithm(algorithm_id, **SMALL_DATA_PARAMS.get(algorithm_id, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = list(check_estimator(est, on_fail=None))
    failed = {r["check_name"]: str(r["exception"])[:300] for r in results if r["status"] == "failed"}
    assert not set(failed) - KNOWN.get(algorithm_id, set()), failed


@pytest.mark.parametrize("algorithm_id,params", [
    ("svm", {"kernel": "precomputed"}),
    ("hierarchical", {"metric": "precomputed", "method": "average", "n_clusters": 2}),
    ("kernel_pca", {"kernel": "precomputed"}),
])
def test_check_estimator_precomputed(algorithm_id, params):
    # the pairwise tag makes scikit-learn's checks pass square kernel / distance matrices
    est = ms.get_algorithm(algorithm_id, **params)
    assert est.__sklearn_tags__().input_tags.pairwise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = list(check_estimator(est, on_fail=None))
    failed = {r["check_name"]: str(r["exception"])[:300] for r in results if r["status"] == "failed"}
    assert not failed and sum(r["status"] == "passed" for r in results) > 35


@pytest.mark.parametrize("algorithm_id,params", [
    ("pca", {"svd_solver": "arpack", "n_components": 1}), ("kernel_pca", {"n_components": None}),
    ("kernel_pca", {"kernel": "linear"}), ("kmeans", {"init": "random"})])
def test_check_estimator_other_settings(algorithm_id, params):
    """The sparse routes (arpack PCA, linear kernel PCA) and other options pass too."""
    est = ms.get_algorithm(algorithm_id, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = list(check_estimator(est, on_fail=None))
    failed = {r["check_name"]: str(r["exception"])[:300] for r in results if r["status"] == "failed"}
    assert not set(failed) - KNOWN.get(algorithm_id, set()), failed


def test_pipeline_and_clone():
    X = ms.load_data("sample:iris").X
    pipe = make_pipeline(StandardScaler(), ms.get_algorithm("pca", n_components=2))
    Z = pipe.fit_transform(X)
    assert Z.shape == (150, 2)
    np.testing.assert_allclose(pipe.transform(X), Z, atol=1e-10)
    est = clone(ms.get_algorithm("pca", n_components=3, whiten=True))
    params = est.get_params()
    assert params["n_components"] == 3 and params["whiten"] is True and not est.is_fitted
