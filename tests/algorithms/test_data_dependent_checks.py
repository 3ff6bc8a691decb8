"""Each algorithm exposes its data-dependent checks (issue 30, item 7): the form shows them
before Run through ``check_params_vs_input(n, d)``, and the fit refuses the same values with the
same words (these four were checked only inside the fit, so the form could not say them)."""
from __future__ import annotations

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError

X = np.abs(np.random.default_rng(0).normal(size=(40, 4)))   # 40 points, 4 features, non-negative (NMF)


@pytest.mark.parametrize("algo,params,said", [
    ("isomap", {"n_neighbors": 40}, "n_neighbors must be below n = 40"),
    ("isomap", {"n_components": 41}, "n_components must be at most n = 40"),
    ("mds", {"n_components": 41}, "n_components must be at most n = 40"),
    ("kernel_pca", {"n_components": 41}, "n_components must be at most n = 40"),
    ("nmf", {"n_components": 5}, "init='nndsvda' needs n_components ≤ min(n_samples, n_features) = 4 (got 5)"),
    ("spectral_clustering", {"affinity": "nearest_neighbors", "n_neighbors": 41},
     "n_neighbors=41 does not fit 40 points: it counts the point itself"),
])
def test_a_value_the_data_cannot_take_is_said_before_the_fit_and_refused_by_it(algo, params, said):
    est = ms.get_algorithm(algo, **params)
    assert any(said in p for p in est.check_params_vs_input(40, 4)), est.check_params_vs_input(40, 4)
    assert est.check_params_vs_input(None, None) == []   # sizes unknown (before a chain has run): no claim
    with pytest.raises(DataError, match=said.replace("(", r"\(").replace(")", r"\)")):
        est.fit(X)


@pytest.mark.parametrize("algo,params", [
    ("isomap", {"n_neighbors": 39}), ("isomap", {"n_neighbors": None, "radius": 5.0}),
    ("mds", {"n_components": 3}), ("kernel_pca", {"n_components": 40}), ("kernel_pca", {"n_components": None}),
    ("nmf", {"n_components": 4}), ("nmf", {"n_components": 6, "init": "random"}),
    ("spectral_clustering", {"affinity": "nearest_neighbors", "n_neighbors": 10}),
    ("spectral_clustering", {"n_neighbors": 41}),   # the Gaussian affinity uses no neighbours
])
def test_values_the_data_can_take_raise_nothing_and_fit(algo, params):
    est = ms.get_algorithm(algo, **params)
    assert est.check_params_vs_input(40, 4) == []
    est.fit(X)
