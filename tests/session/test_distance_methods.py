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
                                       "spectral_clustering", "tsne"]
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
