"""Which methods fit a distance matrix, and the session's runs on one: metric set to 'precomputed',
the others refused by name, a run on some rows fitted on their distances to each other, a map of
it clustered as coordinates, preparation steps refused."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

import manifold_studio as ms
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError
from manifold_studio.plugins.host import get_host
from manifold_studio.session.distance_methods import distance_methods, distance_param
from manifold_studio.session.model import Session


@pytest.fixture(scope="module")
def D():
    return squareform(pdist(ms.load_data("sample:iris").X))


def test_the_methods_that_take_distances():
    algos = get_host().algorithms
    assert distance_methods(algos) == ["hierarchical", "isomap", "laplacian_eigenmaps", "mds",
                                       "spectral_clustering", "tsne", "umap"]
    assert distance_param(algos["mds"]) == "dissimilarity" and distance_param(algos["isomap"]) == "metric"
    # a precomputed kernel is not a distance matrix; LLE's metric has no 'precomputed'
    assert distance_param(algos["kernel_pca"]) is None and distance_param(algos["svm"]) is None
    assert distance_param(algos["lle"]) is None


def test_runs_on_a_distance_matrix(D):
    s = Session()
    s.add_dataset(Dataset("d", D, distance_matrix=True))
    mds = s.run("mds")
    assert mds.params["dissimilarity"] == "precomputed"
    np.testing.assert_allclose(mds.embedding, ms.get_algorithm("mds", dissimilarity="precomputed").fit(D).embedding_)
    rows = np.arange(0, 150, 3)
    part = s.run("isomap", rows=rows, n_neighbors=20)
    api = ms.get_algorithm("isomap", metric="precomputed", n_neighbors=20).fit(D[np.ix_(rows, rows)])
    np.testing.assert_allclose(part.embedding, api.embedding_, atol=1e-10)
    on_map = s.run("kmeans", source_run=mds.id, n_clusters=3, random_state=0)   # the map's coordinates
    assert on_map.succeeded and on_map.params.get("metric") is None
    with pytest.raises(DataError, match=r"^'d' is a distance matrix: .* \(lle\) cannot fit one\. It needs the points' "
                                        r"coordinates\. Methods that take distances: hierarchical, isomap"):
        s.run("lle")
    with pytest.raises(DataError, match="preparation steps transform feature columns"):
        s.create_run("isomap", {}, chain=[("standardize", {})])


def test_extension_quality_on_a_distance_matrix(D):
    """The section 5.4 experiment on distances gives the numbers it gives on the coordinates (Isomap
    sees only distances either way), with the same random draws."""
    from manifold_studio.extend.quality import extension_quality

    # Iris jittered: its repeated values tie neighbours, which the two searches may order differently
    X = ms.load_data("sample:iris").X + np.random.default_rng(0).normal(0, 1e-3, (150, 4))
    D = squareform(pdist(X))
    on_points = extension_quality(ms.get_algorithm("isomap", n_neighbors=40), X, fractions=(0.05,), n_repeats=1,
                                  n_heldout=3, random_state=0)
    on_distances = extension_quality(ms.get_algorithm("isomap", n_neighbors=40, metric="precomputed"), D,
                                     fractions=(0.05,), n_repeats=1, n_heldout=3, random_state=0, distances=True)
    np.testing.assert_allclose(on_distances.rows[0].extension_error, on_points.rows[0].extension_error, atol=1e-6)
    np.testing.assert_allclose(on_distances.rows[0].variability, on_points.rows[0].variability, atol=1e-6)
