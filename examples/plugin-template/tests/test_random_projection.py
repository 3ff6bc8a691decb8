"""The template's tests: the conformance kit (the contract) and the method's own properties."""
import numpy as np

from manifold_studio.algorithms.conformance import check_algorithm
from ms_example_plugin.random_projection import RandomProjection


def test_conformance_kit():
    check_algorithm(RandomProjection)  # raises AssertionError naming the failed check


def test_sparse_variant_conforms():
    check_algorithm(RandomProjection, params={"distribution": "sparse", "n_components": 3})


def test_is_the_centred_linear_map_and_extends_identically():
    X = np.random.default_rng(1).normal(size=(50, 6))
    est = RandomProjection(n_components=3, random_state=4).fit(X)
    np.testing.assert_allclose(est.embedding_, (X - X.mean(0)) @ est.components_.T)
    np.testing.assert_allclose(est.extend(X[:7]), est.embedding_[:7])


def test_gaussian_scale_keeps_squared_norms_on_average():
    X = np.eye(400)
    est = RandomProjection(n_components=200, center=False, random_state=0).fit(X)
    norms = (est.embedding_ ** 2).sum(axis=1)
    assert abs(norms.mean() - 1.0) < 0.05  # E ||R x||^2 = ||x||^2 for N(0, 1/k) entries
