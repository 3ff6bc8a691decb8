"""PCA's solver routes (manifold_studio/algorithms/pca_solvers.py) against scikit-learn."""
import numpy as np
import pytest
from sklearn.decomposition import PCA as SkPCA

import manifold_studio as ms
from manifold_studio.algorithms.pca_solvers import choose_solver, principal_axes
from manifold_studio.errors import DataError


def _data(n, d, seed=0, decay=0.9):
    """Data with a decaying spectrum (well separated eigenvalues) and a non-zero mean."""
    rng = np.random.default_rng(seed)
    scales = decay ** np.arange(d)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (rng.normal(size=(n, d)) * scales) @ Q.T + rng.normal(size=d) * 3


SHAPES = {"tall": (600, 20), "wide": (30, 400), "square": (120, 100)}


@pytest.mark.parametrize("solver", ["full", "covariance", "gram"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_exact_routes_match_sklearn(solver, shape):
    X = _data(*SHAPES[shape])
    k = 5
    ours = ms.get_algorithm("pca", n_components=k, svd_solver=solver).fit(X)
    ref = SkPCA(n_components=k, svd_solver="full").fit(X)
    assert ours.svd_solver_ == solver
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(ours.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(ours.noise_variance_, ref.noise_variance_, rtol=1e-8)
    signs = np.sign(np.sum(ours.components_ * ref.components_, axis=1))
    np.testing.assert_allclose(ours.components_ * signs[:, None], ref.components_, atol=1e-7)
    np.testing.assert_allclose(ours.embedding_ * signs, ref.transform(X), atol=1e-7 * np.abs(ref.transform(X)).max())


@pytest.mark.parametrize("shape", list(SHAPES))
def test_sign_convention_is_the_same_on_every_route(shape):
    X = _data(*SHAPES[shape], seed=4)
    comps = [ms.get_algorithm("pca", n_components=4, svd_solver=s, random_state=0).fit(X).components_
             for s in ("full", "covariance", "gram", "randomized")]
    for C in comps[1:3]:
        np.testing.assert_allclose(C, comps[0], atol=1e-6)   # no sign flips between exact routes
    assert np.all(np.sum(comps[3] * comps[0], axis=1) > 0.999)   # nor on the randomized one
    top = comps[0][np.arange(4), np.argmax(np.abs(comps[0]), axis=1)]
    assert np.all(top > 0)                                    # the largest loading is positive


@pytest.mark.parametrize("shape", [(2000, 300), (300, 2000)])
def test_randomized_route_is_accurate_and_seeded(shape):
    X = _data(*shape, seed=2, decay=0.8)
    a = ms.get_algorithm("pca", n_components=10, svd_solver="randomized", random_state=3).fit(X)
    b = ms.get_algorithm("pca", n_components=10, svd_solver="randomized", random_state=3).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)      # seeded: reproducible
    ref = SkPCA(n_components=10, svd_solver="full").fit(X)
    np.testing.assert_allclose(a.explained_variance_, ref.explained_variance_, rtol=1e-6)
    np.testing.assert_allclose(a.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-6)
    np.testing.assert_allclose(a.noise_variance_, ref.noise_variance_, rtol=1e-6)
    cos = np.abs(np.sum(a.components_ * ref.components_, axis=1))
    assert cos.min() > 1 - 1e-6


@pytest.mark.parametrize("n, d, k", [(20000, 784, 50), (5000, 20, 2), (100, 5000, 10), (2000, 2000, 10),
                                     (2000, 2000, 0.9), (300, 300, 10), (3000, 1500, 1400),
                                     (1000, 20000, 2), (1000, 20000, 40), (300, 20000, 20)])
def test_auto_rule(n, d, k):
    """auto = scikit-learn's rule, except the Gram route where d ≫ n."""
    mine = choose_solver(n, d, k)
    if d <= 1000 and n >= 10 * d:
        expected = "covariance"
    elif n <= 1000 and d >= 10 * n and (isinstance(k, float) or n < 2 * (k + 10) * (2 * (7 if k < 0.1 * n else 4) + 2)):
        expected = "gram"       # fewer flops than the randomized SVD
    elif max(n, d) <= 500 or isinstance(k, float):
        expected = "full"
    elif k < 0.8 * min(n, d):
        expected = "randomized"
    else:
        expected = "full"
    assert mine == expected
    # where we do not take the Gram route, scikit-learn's auto takes the same one
    if mine != "gram":
        sk = {"covariance": "covariance_eigh"}.get(mine, mine)
        # scikit-learn's rule, restated from sklearn/decomposition/_pca.py (1.5+)
        if d <= 1_000 and n >= 10 * d:
            ref = "covariance_eigh"
        elif max(n, d) <= 500:
            ref = "full"
        elif isinstance(k, int) and 1 <= k < 0.8 * min(n, d):
            ref = "randomized"
        else:
            ref = "full"
        assert sk == ref


def test_auto_route_on_shapes():
    assert ms.get_algorithm("pca", n_components=3).fit(_data(400, 10)).svd_solver_ == "covariance"
    assert ms.get_algorithm("pca", n_components=3).fit(_data(20, 300)).svd_solver_ == "gram"
    assert ms.get_algorithm("pca", n_components=0.9).fit(_data(120, 100)).svd_solver_ == "full"


def test_fraction_with_randomized_is_a_clear_error():
    with pytest.raises(DataError, match="randomized.*integer n_components"):
        ms.get_algorithm("pca", n_components=0.9, svd_solver="randomized").fit(_data(50, 5))


@pytest.mark.parametrize("solver", ["full", "covariance", "gram"])
def test_fraction_of_variance_on_every_exact_route(solver):
    X = _data(150, 10)
    ours = ms.get_algorithm("pca", n_components=0.95, svd_solver=solver).fit(X)
    ref = SkPCA(n_components=0.95, svd_solver="full").fit(X)
    assert ours.n_components_ == ref.n_components_
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-8)


def test_invalid_solver_names_the_parameter():
    with pytest.raises(ms.InvalidParameterError, match="svd_solver"):
        ms.get_algorithm("pca", svd_solver="lapack")


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e7])
def test_covariance_route_survives_a_large_mean(offset, rng):
    """XᵀX − n·x̄x̄ᵀ cancels digits when the mean dwarfs the spread: the route then accumulates
    the centred rows, so the variances still equal the SVD's to 1e-8."""
    X = rng.normal(size=(3000, 20)) * np.linspace(0.5, 3, 20) + offset
    cov = principal_axes(X, 5, solver="covariance")
    full = principal_axes(X, 5, solver="full")
    np.testing.assert_allclose(cov.singular_values[:5], full.singular_values[:5], rtol=1e-8)
    np.testing.assert_allclose(np.abs(cov.components[:5] @ full.components[:5].T), np.eye(5), atol=1e-6)


def test_covariance_route_with_few_axes_takes_the_leading_eigenpairs_only(monkeypatch):
    """At most a quarter of the axes: LAPACK's subset solver on the covariance gives the same axes
    as the SVD, and the total variance still comes from the whole trace."""
    import manifold_studio.algorithms.pca_solvers as solvers

    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 40)) @ rng.normal(size=(40, 40)) + 3.0
    calls = []
    real = solvers._leading_eigenpairs
    monkeypatch.setattr(solvers, "_leading_eigenpairs", lambda C, k: calls.append(k) or real(C, k))
    axes = solvers.principal_axes(X, 10, solver="covariance")
    assert calls == [10]
    Xc = X - X.mean(axis=0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    np.testing.assert_allclose(axes.singular_values, s[:10], rtol=1e-10)
    np.testing.assert_allclose(np.abs(axes.components @ Vt[:10].T), np.eye(10), atol=1e-8)
    assert axes.total_variance == pytest.approx((Xc ** 2).sum() / 399, rel=1e-12)
    solvers.principal_axes(X, 11, solver="covariance")   # above a quarter: the full eigh
    assert calls == [10]
