"""The conformance kit applied to every algorithm the plugin host discovers."""
import functools

import pytest

from manifold_studio.algorithms.conformance import CHECKS, Checker, default_data
from manifold_studio.plugins.host import PluginHost


@functools.cache
def discovered() -> PluginHost:
    """The plugins, discovered once when the tests are collected (not when this file is imported)."""
    return PluginHost().discover()


def pytest_generate_tests(metafunc):
    if "algorithm_id" in metafunc.fixturenames:
        metafunc.parametrize("algorithm_id", sorted(discovered().algorithms))

# small data needs small neighbourhoods; otherwise defaults are used
PARAMS = {
    "isomap": {"n_neighbors": 8},
    "lle": {"n_neighbors": 8},
    "laplacian_eigenmaps": {"n_neighbors": 8},
    "spectral_clustering": {"n_neighbors": 8},
}


def test_builtin_algorithms_are_discovered():
    assert "pca" in discovered().algorithms


#: algorithms that need non-negative data get the kit's data made non-negative
NON_NEGATIVE = {"nmf"}


@pytest.mark.parametrize("check", CHECKS)
def test_conformance(algorithm_id, check):
    cls = discovered().algorithms[algorithm_id]
    params = {k: v for k, v in PARAMS.get(algorithm_id, {}).items() if k in cls.param_constraints()}
    X = y = None
    if algorithm_id in NON_NEGATIVE:
        X, y = default_data()
        X = abs(X)
    getattr(Checker(cls, X=X, y=y, params=params), check)()
