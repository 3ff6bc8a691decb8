"""The routes to the principal axes of a data matrix (used by PCA and probabilistic PCA).

Every route returns the leading right singular vectors V of the centred data X_c (rows of
``components``, unit norm, sign fixed so the largest loading of each axis is positive) and
the singular values s; the variance along axis i is s_i² / (n − 1).

``full``        LAPACK SVD of X_c (n × d). Exact, O(n d min(n, d)).
``covariance``  eigendecomposition of the d × d matrix X_cᵀX_c = XᵀX − n·x̄x̄ᵀ (one product, no
                centred copy; when a column's mean dwarfs its spread, the centred rows are
                accumulated in blocks instead, to avoid cancellation). Exact; the fast route
                when n ≫ d.
``gram``        eigendecomposition of the n × n Gram matrix X_c X_cᵀ and v_i = X_cᵀu_i / s_i
                (seed 002, "the N×N trick"). Exact; the fast route when d ≫ n.
``randomized``  Halko, Martinsson & Tropp (2011): a Gaussian sketch with ``n_components + 10``
                columns, power iterations (7 when n_components < 0.1·min(n, d), else 4, as in
                scikit-learn) re-orthonormalised by QR (scikit-learn: LU), a QR, and the SVD of the small projected
                matrix. Approximate, seeded by ``random_state``; for large matrices and few
                components.
``auto``        scikit-learn's rule extended by the Gram route: covariance when d ≤ 1000 and
                n ≥ 10·d; gram when n ≤ 1000, d ≥ 10·n and it costs fewer flops than the
                randomized SVD (n < 2(k + 10)(2q + 2), q power iterations; always for a
                fraction of the variance); full when max(n, d) ≤ 500 or the
                number of components is a fraction of the variance; randomized when
                n_components < 0.8·min(n, d); full otherwise.

Every route calls numpy's LAPACK, never scipy's: numpy and scipy each bring their own OpenBLAS
thread pool, and alternating between them while the other's threads still spin doubles the
time of both on a 2-core machine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.progress import as_progress

SOLVERS = ("auto", "full", "covariance", "gram", "randomized")
EXACT = ("full", "covariance", "gram")
_BLOCK = 4096


@dataclass
class PrincipalAxes:
    """Leading principal axes of centred data."""

    components: np.ndarray        # (r, d) unit rows, r ≥ requested count
    singular_values: np.ndarray   # (r,) decreasing
    mean: np.ndarray              # (d,)
    total_variance: float         # trace of the covariance (1 / (n − 1))
    solver: str                   # the route actually taken
    exact: bool                   # True when every non-zero axis was computed exactly


def power_iterations(n: int, d: int, k: int) -> int:
    """scikit-learn's 'auto' number of power iterations of the randomized SVD."""
    return 7 if k < 0.1 * min(n, d) else 4


def gram_is_cheaper(n: int, d: int, k) -> bool:
    """Whether the n × n Gram route costs fewer flops than the randomized SVD: n²d (the
    symmetric product) against 2nd(k + 10)(2q + 2) (q power iterations), i.e.
    n < 2(k + 10)(2q + 2); always for a fraction of the variance (every eigenvalue needed)."""
    if not isinstance(k, (int, np.integer)):
        return True
    return n < 2 * (k + 10) * (2 * power_iterations(n, d, k) + 2)


def choose_solver(n: int, d: int, n_components) -> str:
    """The route ``auto`` takes for an n × d matrix (``n_components`` int, fraction or None)."""
    if d <= 1000 and n >= 10 * d:
        return "covariance"
    if n <= 1000 and d >= 10 * n and gram_is_cheaper(n, d, n_components):
        return "gram"
    if max(n, d) <= 500 or not isinstance(n_components, (int, np.integer)):
        return "full"
    if 1 <= n_components < 0.8 * min(n, d):
        return "randomized"
    return "full"


def fix_signs(Vt: np.ndarray) -> np.ndarray:
    """Signs of the rows of Vt such that each row's largest-magnitude entry is positive."""
    if Vt.size == 0:
        return np.ones(Vt.shape[0])
    signs = np.sign(Vt[np.arange(Vt.shape[0]), np.argmax(np.abs(Vt), axis=1)])
    signs[signs == 0] = 1.0
    return signs


def _blocks(n: int):
    for start in range(0, n, _BLOCK):
        yield start, min(n, start + _BLOCK)


#: the one-product covariance XᵀX − n·x̄x̄ᵀ loses about log10(ratio) digits to cancellation, where
#: ratio = x̄_j² / variance_j; above this ratio the centred blocks are used instead (exact to 1e-8 needs
#: fewer than 1e6)
CANCELLATION_RATIO = 1e4


def _covariance_matrix(X, mean, progress):
    """X_cᵀX_c. One product XᵀX − n·x̄x̄ᵀ (as scikit-learn: no copy of X) unless a column's mean is
    so large against its spread that the subtraction would cancel digits; then the centred data
    accumulated in row blocks."""
    n, d = X.shape
    progress.checkpoint(0.1, f"Covariance matrix ({d}×{d}) of {n:,} rows")
    C = X.T @ X
    C -= n * np.outer(mean, mean)
    centred_sq = np.diag(C)
    squares = n * mean * mean
    if np.all(squares <= CANCELLATION_RATIO * np.maximum(centred_sq, 0.0)):
        return C
    C[:] = 0.0
    for start, stop in _blocks(n):
        progress.checkpoint(0.1 + 0.6 * start / n, f"Covariance matrix, centred rows {start:,}/{n:,}")
        B = X[start:stop] - mean
        C += B.T @ B
    return C


def _covariance_route(X, mean, k, progress):
    d = X.shape[1]
    C = _covariance_matrix(X, mean, progress)
    progress.checkpoint(0.7, f"Eigendecomposition of the {d}×{d} covariance matrix")
    # numpy's own LAPACK (divide and conquer), not scipy's: the product above ran on numpy's
    # OpenBLAS threads, and handing over to scipy's separate OpenBLAS pool while numpy's threads
    # still spin doubled the time of both steps on 2 cores (140 vs 70 ms for d = 784, and the
    # projection after it 68 vs 37 ms). The total variance comes from the trace.
    evals, V = np.linalg.eigh(C)
    if isinstance(k, (int, np.integer)) and k < d:
        evals, V = evals[d - k:], V[:, d - k:]
    evals, V = evals[::-1], V[:, ::-1]
    return np.sqrt(np.clip(evals, 0.0, None)), V.T, float(np.trace(C))


def _gram_route(Xc, k, progress):
    n, d = Xc.shape
    progress.checkpoint(0.2, f"Diagonalising the {n}×{n} Gram matrix (d ≫ n)")
    evals, U = np.linalg.eigh(Xc @ Xc.T)
    evals, U = evals[::-1], U[:, ::-1]
    if isinstance(k, (int, np.integer)):   # the axes asked for only (the total comes from the trace)
        evals, U = evals[:k], U[:, :k]
    s = np.sqrt(np.clip(evals, 0.0, None))
    positive = s > s[0] * max(n, d) * np.finfo(float).eps if s[0] > 0 else np.zeros_like(s, bool)
    Vt = np.zeros((len(s), d))
    Vt[positive] = (Xc.T @ U[:, positive] / s[positive]).T
    return np.where(positive, s, 0.0), Vt


def _randomized_route(Xc, k, random_state, progress, n_oversamples=10, n_iter=None):
    n, d = Xc.shape
    rng = check_random_state(random_state)
    size = min(k + n_oversamples, min(n, d))
    if n_iter is None:
        n_iter = power_iterations(n, d, k)
    Q = Xc @ rng.standard_normal((d, size))
    for it in range(n_iter):
        progress.checkpoint(0.1 + 0.7 * it / n_iter, f"Randomized SVD: power iteration {it + 1}/{n_iter}")
        Q, _ = np.linalg.qr(Q)   # re-orthonormalised (scikit-learn uses LU: scipy's, see the module note)
        Q = Xc @ (Xc.T @ Q)
    Q, _ = np.linalg.qr(Q)
    progress.checkpoint(0.85, "Randomized SVD: small SVD")
    _, s, Vt = np.linalg.svd(Q.T @ Xc, full_matrices=False)
    return s, Vt


def principal_axes(X: np.ndarray, n_components=None, *, solver: str = "auto", random_state=None,
                   progress=None) -> PrincipalAxes:
    """Principal axes of the rows of ``X`` (not centred: the mean is removed here).

    ``n_components``: an int (at least that many axes are returned), a fraction in (0, 1) or
    None (every axis; both need an exact route). Signs are fixed by :func:`fix_signs`.
    """
    progress = as_progress(progress)
    n, d = X.shape
    if solver == "auto":
        solver = choose_solver(n, d, n_components)
    if solver == "randomized" and not isinstance(n_components, (int, np.integer)):
        raise ValueError("svd_solver='randomized' needs an integer n_components; a fraction of the "
                         "variance needs every eigenvalue: use 'auto', 'full', 'covariance' or 'gram'.")
    progress.checkpoint(0.0, "Centring the data")
    mean = X.mean(axis=0)
    denom = max(n - 1, 1)
    if solver == "covariance":
        s, Vt, trace = _covariance_route(X, mean, n_components, progress)
        total = trace / denom
    else:
        Xc = X - mean
        total = float(np.einsum("ij,ij->", Xc, Xc)) / denom
        if solver == "gram":
            s, Vt = _gram_route(Xc, n_components, progress)
        elif solver == "randomized":
            s, Vt = _randomized_route(Xc, int(n_components), random_state, progress)
        else:
            progress.checkpoint(0.1, f"Singular value decomposition of {n}×{d} data")
            _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    Vt = Vt * fix_signs(Vt)[:, None]
    progress.checkpoint(0.9, "Principal axes found")
    return PrincipalAxes(np.ascontiguousarray(Vt), s, mean, total, solver, solver in EXACT)


def project(X: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """(X − mean) · componentsᵀ as X·componentsᵀ − mean·componentsᵀ (no centred copy of X)."""
    out = X @ components.T
    out -= mean @ components.T
    return out
