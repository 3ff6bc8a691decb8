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
