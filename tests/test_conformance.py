"""The conformance kit applied to every algorithm the plugin host discovers."""
import pytest

from manifold_studio.algorithms.conformance import CHECKS, Checker
from manifold_studio.plugins import PluginHost

HOST = PluginHost().discover()
ALGORITHMS = sorted(HOST.algorithms)

# small data needs small neighbourhoods; otherwise defaults are used
PARAMS = {
    "isomap": {"n_neighbors": 8},
    "lle": {"n_neighbors": 8},
    "laplacian_eigenmaps": {"n_neighbors": 8},
    "spectral_clustering": {"n_neighbors": 8},
}


def test_builtin_algorithms_are_discovered():
    assert "pca" in ALGORITHMS


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("algorithm_id", ALGORITHMS)
def test_conformance(algorithm_id, check):
    cls = HOST.algorithms[algorithm_id]
    params = {k: v for k, v in PARAMS.get(algorithm_id, {}).items() if k in cls.param_constraints()}
    getattr(Checker(cls, params=params), check)()
