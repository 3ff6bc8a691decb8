"""The spectral core's long calls let the window's event loop run (issue 33, item 9): ARPACK's
products with a dense kernel matrix go through a GIL-releasing dsymv, and the shift-invert
factorisation uses no SuperLU column ordering (which holds the GIL)."""
import ctypes

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from manifold_studio.algorithms import spectral
from manifold_studio.algorithms.blas_nogil import _cython_blas, dsymv_upper
from manifold_studio.algorithms.spectral import SpectralProblem, leading_eigenpairs, normalised_laplacian


def _sym(n, seed=0):
    A = np.random.default_rng(seed).normal(size=(n, n))
    return A + A.T


@pytest.mark.parametrize("n", [1, 7, 300])
def test_dsymv_upper_is_bit_identical_to_scipy_blas_dsymv(n):
    A = _sym(n)
    v = np.random.default_rng(1).normal(size=n)
    F = np.asfortranarray(A)
    assert np.array_equal(dsymv_upper(F, v), sla.blas.dsymv(1.0, F, v, lower=0))
    C = np.ascontiguousarray(A)   # a C-ordered symmetric matrix is passed as its transpose
    assert np.array_equal(dsymv_upper(C.T, v), sla.blas.dsymv(1.0, C.T, v, lower=0))
    np.testing.assert_allclose(dsymv_upper(F, v), A @ v, atol=1e-10 * n)


def test_dsymv_upper_releases_the_gil_and_checks_its_input():
    # a ctypes CFUNCTYPE (not PYFUNCTYPE) function drops the GIL for the call
    assert not _cython_blas("dsymv", 10)._flags_ & ctypes._FUNCFLAG_PYTHONAPI
    with pytest.raises(ValueError, match="Fortran-ordered float64"):
        dsymv_upper(np.ones((3, 4), order="F"), np.ones(4))
    with pytest.raises(ValueError, match="length 2"):
        dsymv_upper(np.eye(3, order="F"), np.ones(2))


def test_arpack_products_use_the_gil_releasing_dsymv(monkeypatch):
    calls = []
    monkeypatch.setattr(spectral, "dsymv_upper", lambda F, v: calls.append(1) or dsymv_upper(F, v))
    A = _sym(400, seed=2)
    M = A @ A.T
    vals, vecs, used = leading_eigenpairs(SpectralProblem(3, matrix=M), 3, solver="arpack")
    assert used == "arpack" and calls
    ref = np.linalg.eigvalsh(M)[::-1][:3]
    np.testing.assert_allclose(vals, ref, rtol=1e-8)


def test_rcm_factorisation_solves_and_orders_nothing_itself(monkeypatch):
    rng = np.random.default_rng(3)
    W = sp.random(500, 500, density=0.02, random_state=4, format="csr")
    A = W + W.T + sp.identity(500) * 10.0
    b = rng.normal(size=500)
    seen = []
    real = spla.splu
    monkeypatch.setattr(spectral.spla, "splu", lambda *a, **k: seen.append(k) or real(*a, **k))
    solve = spectral._factorise_spd(A)
    np.testing.assert_allclose(A @ solve(b), b, atol=1e-10)
    assert seen == [{"permc_spec": "NATURAL", "diag_pivot_thresh": 0.0, "options": {"SymmetricMode": True}}]


def test_shift_invert_bottom_of_a_laplacian_matches_dense_eigh():
    X = np.random.default_rng(5).normal(size=(400, 3))
    D = np.linalg.norm(X[:, None] - X[None], axis=2)
    Aff = sp.csr_matrix(np.exp(-D ** 2) * (D < 2.0))   # connected, a clear gap after the 4th
    L = normalised_laplacian(Aff, np.asarray(Aff.sum(axis=1)).ravel())
    vals, vecs, used = leading_eigenpairs(SpectralProblem(4, laplacian=L), 4, solver="arpack")
    assert used == "arpack-shift-invert"
    ref_mu, ref_v = np.linalg.eigh(L.toarray())
    np.testing.assert_allclose(vals, 1.0 - ref_mu[:4], atol=1e-8)
    # the same invariant subspace (eigenvalues may be close): projections agree
    np.testing.assert_allclose(vecs @ vecs.T, ref_v[:, :4] @ ref_v[:, :4].T, atol=1e-6)


def test_dsymv_upper_falls_back_to_scipy_when_the_capsule_is_missing(monkeypatch):
    from manifold_studio.algorithms import blas_nogil

    def missing(name, n_args):
        raise KeyError(name)

    monkeypatch.setattr(blas_nogil, "_cython_blas", missing)
    F = np.asfortranarray(_sym(40))
    v = np.arange(40.0)
    assert np.array_equal(dsymv_upper(F, v), sla.blas.dsymv(1.0, F, v, lower=0))
