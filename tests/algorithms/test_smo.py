"""SMO solver: KKT conditions, equality with scikit-learn's libsvm, shrinking, slices, cancel."""
import numpy as np
import pytest
from sklearn.svm import SVC

from manifold_studio.algorithms.conformance import CancelAfter
from manifold_studio.algorithms.kernels import combined_kernel
from manifold_studio.algorithms.smo import dual_objective, solve_smo
from manifold_studio.errors import FitCancelled


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    u = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n) > 0.3, 1.0, -1.0)
    return X, u


def _kkt(K, u, res, C):
    """Max violation of the KKT conditions: α=0 ⇒ u f ≥ 1, 0<α<C ⇒ u f = 1, α=C ⇒ u f ≤ 1."""
    f = K @ (res.alpha * u) - res.rho
    m = u * f
    a = res.alpha
    v = np.concatenate([np.maximum(0, 1 - m[a <= 0]), np.abs(1 - m[(a > 0) & (a < C)]),
                        np.maximum(0, m[a >= C] - 1)])
    return v.max(), abs(np.dot(a, u)), a.min() >= 0 and a.max() <= C


@pytest.mark.parametrize("shrinking", [True, False])
def test_kkt_conditions_at_solution(shrinking):
    X, u = _data()
    K = combined_kernel(X, None, "rbf", gamma=0.5)
    C = 2.0
    res = solve_smo(K, u, C, tol=1e-4, shrinking=shrinking)
    viol, eq, box = _kkt(K, u, res, C)
    assert res.converged and box
    assert eq < 1e-10
    assert viol < 1e-3


def test_equals_libsvm_and_slices_do_not_change_result():
    X, u = _data(150, 1)
    K = combined_kernel(X, None, "poly", gamma=0.3, degree=2, coef0=1.0)
    full = solve_smo(K, u, 1.0, tol=1e-6)
    sliced = solve_smo(K, u, 1.0, tol=1e-6, slice_steps=7)
    np.testing.assert_array_equal(full.alpha, sliced.alpha)
    assert full.rho == sliced.rho and len(sliced.iterations) > 3
    sk = SVC(kernel="precomputed", C=1.0, tol=1e-6).fit(K, u)
    f = K @ (full.alpha * u) - full.rho
    np.testing.assert_allclose(f, sk.decision_function(K), atol=1e-4)
    assert set(np.flatnonzero(full.alpha > 0)) == set(sk.support_)
    # objective recorded per slice decreases and ends at the optimum's value
    obj = np.asarray(sliced.objective)
    assert np.all(np.diff(obj) <= 1e-12)
    assert obj[-1] == pytest.approx(dual_objective(K, u, full.alpha))


def test_max_iter_stops_unconverged():
    X, u = _data()
    K = combined_kernel(X, None, "rbf", gamma=0.5)
    res = solve_smo(K, u, 10.0, tol=1e-8, max_iter=5)
    assert not res.converged and res.n_iter == 5


def test_cancel_between_slices():
    X, u = _data()
    K = combined_kernel(X, None, "rbf", gamma=0.5)
    prog = CancelAfter(1)
    with pytest.raises(FitCancelled):
        solve_smo(K, u, 10.0, tol=1e-8, slice_steps=2, progress=prog)
    assert "KKT violation" in prog.messages[0]


def _unscaled_poly_problem():
    # issue 22 B4: a cubic kernel on unscaled data (kernel values ~1e12, rank 4): the rounding of
    # the gradient keeps the KKT violation at 5-50, far above tol, for ever
    rng = np.random.default_rng(0)
    X = rng.normal(loc=100, size=(100, 2))
    y = rng.integers(0, 2, 100)
    return X, y


def test_default_bound_is_libsvms_and_stops_ill_conditioned_problem(monkeypatch):
    from manifold_studio.algorithms import smo
    from manifold_studio.algorithms.kernels import scale_gamma

    assert smo.iteration_bound(-1, 100) == 10_000_000 and smo.iteration_bound(-1, 200_000) == 20_000_000
    assert smo.iteration_bound(7, 10 ** 9) == 7
    X, y = _unscaled_poly_problem()
    u = np.where(y == 1, 1.0, -1.0)
    K = combined_kernel(X, None, "poly", gamma=scale_gamma("scale", X), degree=3)
    monkeypatch.setattr(smo, "DEFAULT_MAX_ITER", 30_000)   # the real 10^7 in the slow test below
    res = solve_smo(K, u, 1.0)
    assert not res.converged and res.n_iter == 30_000
    # even unconverged, the iterate is feasible and the dual objective only went down
    assert res.alpha.min() >= 0 and res.alpha.max() <= 1.0 and abs(res.alpha @ u) < 1e-9
    assert np.all(np.diff(res.objective) <= 1e-9 * np.abs(res.objective[:-1]))
    assert res.violation[-1] > 1e-3 and np.isfinite(res.rho)
    res = solve_smo(K, u, 1.0, max_iter=1234)
    assert not res.converged and res.n_iter == 1234


def test_svm_warns_at_the_bound_on_ill_conditioned_problem(monkeypatch):
    import warnings

    import manifold_studio as ms
    from manifold_studio.algorithms import smo
    from manifold_studio.errors import ConvergenceWarning

    X, y = _unscaled_poly_problem()
    monkeypatch.setattr(smo, "DEFAULT_MAX_ITER", 20_000)
    m = ms.get_algorithm("svm", kernel="poly")
    with pytest.warns(ConvergenceWarning, match=r"iteration bound \(20,000 steps"):
        m.fit(X, y)
    assert list(m.n_iter_) == [20_000] and not m.converged_
    # the same data standardised converges well below the bound, without a warning
    Xs = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ok = ms.get_algorithm("svm", kernel="poly").fit(Xs, y)
    assert ok.converged_ and ok.n_iter_[0] < 20_000


@pytest.mark.slow
def test_svm_default_bound_on_ill_conditioned_problem():
    # the real default: libsvm's 10^7 steps (about 10 s here); the fit returns with a warning
    import manifold_studio as ms
    from manifold_studio.errors import ConvergenceWarning

    X, y = _unscaled_poly_problem()
    m = ms.get_algorithm("svm", kernel="poly")
    with pytest.warns(ConvergenceWarning, match=r"iteration bound \(10,000,000 steps"):
        m.fit(X, y)
    assert list(m.n_iter_) == [10_000_000] and not m.converged_


@pytest.mark.parametrize("kernel,params", [("rbf", {"gamma": 0.5}), ("poly", {"gamma": 0.3, "degree": 2, "coef0": 1.0}),
                                           ("sigmoid", {"gamma": 0.05, "coef0": -0.5}), ("linear", {})])
def test_kernel_rows_formed_on_demand_give_the_dense_solution(kernel, params):
    from manifold_studio.algorithms.smo_steps import KernelRows

    X, u = _data(140, 2)
    gamma = params.get("gamma", 1.0)
    K = combined_kernel(X, None, kernel, gamma=gamma, degree=params.get("degree", 3), coef0=params.get("coef0", 0.0))
    rows = KernelRows(X, kernel, gamma, params.get("coef0", 0.0), params.get("degree", 3))
    dense = solve_smo(K, u, 1.0, tol=1e-8)
    lazy = solve_smo(rows, u, 1.0, tol=1e-8)
    assert dense.converged and lazy.converged
    assert set(np.flatnonzero(lazy.alpha > 0)) == set(np.flatnonzero(dense.alpha > 0))
    np.testing.assert_allclose(lazy.alpha, dense.alpha, atol=1e-6)
    np.testing.assert_allclose(K @ (lazy.alpha * u) - lazy.rho, K @ (dense.alpha * u) - dense.rho, atol=1e-6)
    # the rows the solver formed (those of the support vectors among others) are the kernel's
    buf = np.empty(K.size)
    again = KernelRows(X, kernel, gamma, params.get("coef0", 0.0), params.get("degree", 3), buffer=buf)
    res = solve_smo(again, u, 1.0, tol=1e-8)
    np.testing.assert_array_equal(res.alpha, lazy.alpha)          # a reused buffer changes nothing
    formed = buf.reshape(K.shape)
    sv = np.flatnonzero(res.alpha > 0)
    np.testing.assert_allclose(formed[sv], K[sv], rtol=1e-12, atol=1e-12)


def test_vectorised_exp_is_within_two_ulp():
    import math

    from manifold_studio.algorithms.smo_steps import compile_rows
    from manifold_studio.algorithms import smo_steps

    compile_rows()
    rng = np.random.default_rng(3)
    x = np.concatenate([-rng.exponential(3.0, 20_000), -rng.uniform(0, 708, 5_000), [0.0, -1e-300, -700.0]])
    v = x.copy()
    smo_steps._exp(v, np.empty(v.size, dtype=np.int64))
    ref = np.array([math.exp(t) for t in x])
    assert np.all(np.abs(v - ref) <= 2 * np.spacing(ref))
    assert v[-3] == 1.0 and v[-2] == 1.0
    far = np.array([-709.5, -745.5, -1e4])       # exp below 2^-1022: 0
    smo_steps._exp(far, np.empty(3, dtype=np.int64))
    assert np.all(far == 0.0)
