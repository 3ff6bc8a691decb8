"""SVM kernels: the set kernel 2^|A∩A'|, sums and products, 'scale' gamma, precomputed checks."""
import numpy as np
import pytest
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from manifold_studio.algorithms.kernels import (
    check_precomputed, combined_kernel, kernel_matrix, parse_kernel, scale_gamma, set_kernel,
)
from manifold_studio.errors import DataError

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 4))
Y = rng.normal(size=(7, 4))


def test_set_kernel_counts_common_elements():
    A = np.array([[1, 0, 1, 1], [0, 1, 1, 0], [0, 0, 0, 0]], dtype=float)
    K = set_kernel(A)
    inter = [[3, 1, 0], [1, 2, 0], [0, 0, 0]]
    np.testing.assert_array_equal(K, 2.0 ** np.array(inter))
    # positive semi-definite (a kernel): 2^|A∩A'| = Σ_{S ⊆ A∩A'} 1 = <φ(A), φ(A')>
    B = (rng.random((20, 6)) < 0.5).astype(float)
    assert np.linalg.eigvalsh(set_kernel(B)).min() > -1e-9


def test_set_kernel_refuses_non_binary_naming_column():
    B = np.zeros((4, 5))
    B[2, 3] = 2.0
    B[3, 4] = -1.0
    with pytest.raises(DataError, match="column 3 holds 2 \\(row 2\\)"):
        set_kernel(B)


def test_sums_and_products():
    g = 0.3
    R, L, P = rbf_kernel(X, Y, gamma=g), linear_kernel(X, Y), polynomial_kernel(X, Y, 2, g, 1.0)
    np.testing.assert_allclose(combined_kernel(X, Y, "rbf+linear", gamma=g), R + L, atol=1e-12)
    np.testing.assert_allclose(combined_kernel(X, Y, "rbf*poly", gamma=g, degree=2, coef0=1.0), R * P, atol=1e-10)
    np.testing.assert_allclose(combined_kernel(X, Y, "linear + rbf*poly", gamma=g, degree=2, coef0=1.0),
                               L + R * P, atol=1e-10)
    np.testing.assert_allclose(combined_kernel(X, Y, "rbf", gamma=g), kernel_matrix(X, Y, "rbf", gamma=g))
    assert parse_kernel("rbf+linear*poly") == [["rbf"], ["linear", "poly"]]
    with pytest.raises(ValueError, match="'cosine'"):
        parse_kernel("rbf+cosine")


def test_scale_gamma_is_sklearn_convention():
    assert scale_gamma("scale", X) == pytest.approx(1.0 / (4 * X.var()))
    assert scale_gamma("auto", X) == 0.25 and scale_gamma(0.7, X) == 0.7
    assert scale_gamma("scale", np.ones((3, 2))) == 1.0


def test_precomputed_shapes():
    check_precomputed(np.eye(5))
    with pytest.raises(DataError, match="\\(n, n\\).*\\(5, 4\\)"):
        check_precomputed(np.ones((5, 4)))
    check_precomputed(np.ones((3, 5)), 5)
    with pytest.raises(DataError, match="\\(m, 5\\).*\\(3, 4\\)"):
        check_precomputed(np.ones((3, 4)), 5)
