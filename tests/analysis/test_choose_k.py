"""Choosing k with the validation log-likelihood of the partition's Gaussian mixture (seed 000)."""
import numpy as np
import pytest

from manifold_studio.algorithms.conformance import CancelAfter
from sklearn.datasets import make_blobs

from manifold_studio.analysis.choose_k import SUGGESTION_RULE, choose_k
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError
from manifold_studio.analysis import metrics
from manifold_studio_builtins.kmeans import KMeans
from fakes import RecordingProgress  # noqa: E402


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(1200, 3, centers=4, cluster_std=0.8, center_box=(-12, 12), random_state=5)


def test_suggests_the_number_of_blobs(blobs):
    X, _ = blobs
    res = choose_k(X, range(1, 9), "kmeans", random_state=0)
    assert res.suggested_k == 4 and res.rule == SUGGESTION_RULE
    assert list(res.k) == list(range(1, 9))
    assert np.isnan(res.davies_bouldin[0]) and np.isnan(res.silhouette[0])
    assert np.all(np.diff(res.within) < 0)           # W always decreases: useless alone
    assert res.suggestions["silhouette"] == 4 and res.suggestions["davies_bouldin"] == 4
    assert res.suggestions["within_elbow"] == 4
    assert len(res.train_index) + len(res.validation_index) == X.shape[0]
    assert len(np.intersect1d(res.train_index, res.validation_index)) == 0
    # the numbers are those of the metrics module on the training partition
    Xt = X[res.train_index]
    lab = res.labels[3]
    assert res.within[2] == pytest.approx(metrics.inertia_decomposition(Xt, lab).within)
    assert res.silhouette[2] == pytest.approx(metrics.silhouette(Xt, lab))
    mix = metrics.mixture_from_partition(Xt, lab)
    assert res.validation_log_likelihood[2] == pytest.approx(
        metrics.mixture_log_likelihood(X[res.validation_index], mix).mean())
    assert len(res.as_table()) == 8


@pytest.mark.parametrize("method", [KMeans, "hierarchical", "gmm"])
def test_other_methods_by_class_or_id(blobs, method):
    X, _ = blobs
    res = choose_k(X, [2, 3, 4, 5, 6], method, random_state=1, em_steps=2)
    assert res.suggested_k == 4
    assert res.algorithm in ("kmeans", "hierarchical", "gmm")


def test_progress_partial_and_cancel(blobs):
    X, _ = blobs
    rec = RecordingProgress()
    choose_k(X, range(1, 5), "kmeans", random_state=0, progress=rec)
    rows, fractions = rec.partials, rec.fractions
    assert [r["k"] for r in rows] == [1, 2, 3, 4]
    assert fractions[-1] == 1.0 and all(0 <= f <= 1 for f in fractions)

    with pytest.raises(FitCancelled):
        choose_k(X, range(1, 9), "kmeans", progress=CancelAfter(5))


def test_bad_input(blobs):
    X, _ = blobs
    with pytest.raises(DataError, match="larger than the"):
        choose_k(X[:20], range(1, 19), "kmeans")
    with pytest.raises(InvalidParameterError, match="n_clusters or n_components"):
        choose_k(X, range(1, 3), "pca")
    with pytest.raises(InvalidParameterError, match="validation_fraction"):
        choose_k(X, range(1, 3), "kmeans", validation_fraction=1.5)
    with pytest.raises(InvalidParameterError, match="k values"):
        choose_k(X, [0, 1], "kmeans")
