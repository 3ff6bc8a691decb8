"""The routes to the principal axes of a data matrix (used by PCA and probabilistic PCA).

Every route returns the leading right singular vectors V of the centred data X_c (rows of
``components``, unit norm, sign fixed so the largest loading of each axis is positive) and
the singular values s; the variance along axis i is s_i² / (n − 1).

``full``        LAPACK SVD of X_c (n × d). Exact, O(n d min(n, d)).
``covariance``  eigendecomposition of the d × d matrix X_cᵀX_c = XᵀX − n·x̄x̄ᵀ (one product, a
                symmetric rank-k update in tiles on every core, :mod:`.blas_tasks`; only the leading eigenpairs when at most a quarter of
                the axes is asked for; no centred copy; when a column's mean dwarfs its spread, the centred rows are
                accumulated in blocks instead, to avoid cancellation). Exact; the fast route
                when n ≫ d.
``gram``        eigendecomposition of the n × n Gram matrix X_c X_cᵀ and v_i = X_cᵀu_i / s_i
                (seed 002, "the N×N trick"). Exact; the fast route when d ≫ n.
``randomized``  Halko, Martinsson & Tropp (2011): a Gaussian sketch with ``n_components + 10``
                columns, power iterations (7 when n_components < 0.1·min(n, d), else 4, as in
                scikit-learn) re-orthonormalised by QR (scikit-learn: LU), a QR, and the SVD of the small projected
                matrix. Approximate, seeded by ``random_state``; for large matrices and few
                components.
``arpack``      ARPACK (``scipy.sparse.linalg.svds``) on the centred data as a linear operator, started
                from a vector seeded by ``random_state`` (scikit-learn's ``arpack``). Exact to ARPACK's
                tolerance; needs n_components < min(n, d).
``auto``        scikit-learn's rule extended by the Gram route: covariance when d ≤ 1000 and
                n ≥ 10·d; gram when n ≤ 1000, d ≥ 10·n and it costs fewer flops than the
                randomized SVD (n < 2(k + 10)(2q + 2), q power iterations; always for a
                fraction of the variance); full when max(n, d) ≤ 500 or the
                number of components is a fraction of the variance; randomized when
                n_components < 0.8·min(n, d); full otherwise.

Sparse data (scipy.sparse, CSR) are never densified: they are centred implicitly — the products
X_c·M = X·M − 1(x̄ᵀM) and X_cᵀ·Q = XᵀQ − x̄(1ᵀQ) — by ``arpack`` and ``randomized``; ``covariance``
sums centred dense blocks of rows (or the sparse product XᵀX − n·x̄x̄ᵀ for very sparse rows). 'auto'
takes ``covariance`` or ``arpack`` by their cost (:mod:`~manifold_studio.algorithms.pca_sparse`);
``full`` and ``gram`` need dense data and refuse sparse input.

Every dense route calls numpy's LAPACK, never scipy's, but for the partial eigendecomposition of the
covariance (a few leading axes; numpy has no subset solver): numpy and scipy each bring their own
OpenBLAS thread pool, and alternating between them while the other's threads still spin doubles the
time of both on a 2-core machine, so that one call runs on a single thread.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scipy.linalg import eigh
from scipy.sparse.linalg import LinearOperator

from manifold_studio.algorithms.blas_tasks import crossprod, matmul_rows
from manifold_studio.algorithms.checks import check_random_state, is_sparse
from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.algorithms.pca_sparse import choose_sparse_solver, sparse_covariance_matrix
from manifold_studio.algorithms.progress import as_progress

SOLVERS = ("auto", "full", "covariance", "gram", "randomized", "arpack")
#: the routes that take sparse data without densifying it
SPARSE_SOLVERS = ("auto", "arpack", "randomized", "covariance")
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
    """The route ``auto`` takes for a dense n × d matrix (``n_components`` int, fraction or None;
    sparse matrices: :func:`~manifold_studio.algorithms.pca_sparse.choose_sparse_solver`)."""
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
    if is_sparse(X):
        return sparse_covariance_matrix(X, mean, progress)
    progress.checkpoint(0.1, f"Covariance matrix ({d}×{d}) of {n:,} rows")
    C = crossprod(X)
    C -= n * np.outer(mean, mean)
    centred_sq = np.diag(C)
    squares = n * mean * mean
    if np.all(squares <= CANCELLATION_RATIO * np.maximum(centred_sq, 0.0)):
        return C
    C[:] = 0.0
    for start, stop in _blocks(n):
        progress.checkpoint(0.1 + 0.6 * start / n, f"Covariance matrix, centred rows {start:,}/{n:,}")
        B = X[start:stop]
        B = (B.toarray() if is_sparse(B) else B) - mean
        C += crossprod(B)
    return C


#: below this fraction of the axes, only the leading eigenpairs of the covariance are computed
PARTIAL_EIGH_FRACTION = 0.25


def _leading_eigenpairs(C: np.ndarray, k: int):
    """The k largest eigenpairs of the symmetric C (ascending), by LAPACK's dsyevr on that index
    range (relatively robust representations: the tridiagonal reduction, then only k vectors;
    about half the time of the full divide and conquer for k = 50 of d = 784). It is scipy's
    LAPACK, whose OpenBLAS thread pool is not numpy's: run on one thread, as handing the work to
    scipy's threads while numpy's still spin after the product was measured to double the time
    of both on 2 cores (one thread: 0.31 s of CPU for the whole fit against 0.34 s with numpy's
    full eigh, and scikit-learn's 0.35 s)."""
    d = C.shape[0]
    with blas_single_thread():
        return eigh(C, subset_by_index=[d - k, d - 1], driver="evr", check_finite=False, overwrite_a=True)


def _covariance_route(X, mean, k, progress):
    d = X.shape[1]
    C = _covariance_matrix(X, mean, progress)
    progress.checkpoint(0.7, f"Eigendecomposition of the {d}×{d} covariance matrix")
    # The product above is a symmetric rank-k update (half the multiplications of a general
    # product) in tiles on every core (blas_tasks.crossprod). The total variance comes from the
    # trace (taken first: the partial eigensolver overwrites C).
    trace = float(np.trace(C))
    if isinstance(k, (int, np.integer)) and 0 < k <= d * PARTIAL_EIGH_FRACTION:
        evals, V = _leading_eigenpairs(C, int(k))
    else:
        evals, V = np.linalg.eigh(C)
        if isinstance(k, (int, np.integer)) and k < d:
            evals, V = evals[d - k:], V[:, d - k:]
    evals, V = evals[::-1], V[:, ::-1]
    return np.sqrt(np.clip(evals, 0.0, None)), V.T, trace


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
    # dense data: the products in row blocks on every core (blas_tasks), the QR of the thin Q and
    # the small SVD on one BLAS thread (many small steps where a second thread only waits on busy cores)
    times = matmul_rows if isinstance(Xc, np.ndarray) else (lambda A, B: A @ B)
    Q = times(Xc, rng.standard_normal((d, size)))
    for it in range(n_iter):
        progress.checkpoint(0.1 + 0.7 * it / n_iter, f"Randomized SVD: power iteration {it + 1}/{n_iter}")
        with blas_single_thread():
            Q, _ = np.linalg.qr(Q)   # re-orthonormalised (scikit-learn uses LU: scipy's, see the module note)
        Q = times(Xc, times(Xc.T, Q))
    with blas_single_thread():
        Q, _ = np.linalg.qr(Q)
    B = times(Xc.T, Q).T          # Qᵀ X_c
    progress.checkpoint(0.85, "Randomized SVD: small SVD")
    with blas_single_thread():
        _, s, Vt = np.linalg.svd(B, full_matrices=False)
    return s, Vt


class CentredSparse:
    """A sparse X minus its column means, for products only (never formed): X_c·M = X·M − 1(x̄ᵀM),
    Q·X_c = Q·X − (Q1)x̄ᵀ. ``.T`` is the transposed operator. Works with ``@`` on either side."""

    __array_ufunc__ = None   # ndarray @ CentredSparse defers to __rmatmul__

    def __init__(self, X, mean: np.ndarray, transposed: bool = False):
        self.X, self.mean, self.transposed = X, np.asarray(mean, dtype=float), transposed
        self.shape = X.shape[::-1] if transposed else X.shape
        self.dtype = np.dtype(float)

    @property
    def T(self) -> "CentredSparse":
        return CentredSparse(self.X, self.mean, not self.transposed)

    def __matmul__(self, M):
        M = np.asarray(M, dtype=float)
        if not self.transposed:   # X_c M = X M − 1 (x̄ᵀ M)
            return np.asarray(self.X @ M) - (self.mean @ M)
        # X_cᵀ M = Xᵀ M − x̄ (1ᵀ M)
        total = M.sum(axis=0)
        return np.asarray(self.X.T @ M) - (np.outer(self.mean, total) if M.ndim == 2 else self.mean * total)

    def __rmatmul__(self, Q):
        Q = np.asarray(Q, dtype=float)
        return (self.T @ Q.T).T

    def as_operator(self):
        """This operator as a scipy ``LinearOperator`` (what ``svds`` takes)."""
        return LinearOperator(self.shape, matvec=self.__matmul__, rmatvec=self.T.__matmul__,
                              matmat=self.__matmul__, rmatmat=self.T.__matmul__, dtype=float)


def _arpack_route(Xc, k, random_state, progress):
    """Leading k singular triplets by ARPACK (scipy's svds) on the operator Xc (dense or implicit)."""
    from scipy.sparse.linalg import LinearOperator, svds

    n, d = Xc.shape
    if not 1 <= k < min(n, d):
        raise ValueError(f"svd_solver='arpack' needs 0 < n_components < min(n_samples, n_features) "
                         f"(here n_samples = {n}, n_features = {d}; got n_components={k}); use "
                         "svd_solver='covariance' or 'full' for every axis.")
    calls = [0]

    def tick():
        calls[0] += 1
        progress.checkpoint(0.1 + 0.75 * (1.0 - 1.0 / (1.0 + calls[0] / 50.0)),
                            f"ARPACK: product {calls[0]}")

    def mv(v):
        tick()
        return Xc @ v

    def rmv(u):
        tick()
        return Xc.T @ u

    op = LinearOperator((n, d), matvec=mv, rmatvec=rmv, matmat=mv, rmatmat=rmv, dtype=float)
    rng = check_random_state(random_state)
    v0 = rng.uniform(-1.0, 1.0, min(n, d))   # as scikit-learn's _init_arpack_v0
    _, s, Vt = svds(op, k=int(k), tol=0.0, v0=v0)
    order = np.argsort(s)[::-1]
    return s[order], Vt[order]


def principal_axes(X: np.ndarray, n_components=None, *, solver: str = "auto", random_state=None,
                   progress=None) -> PrincipalAxes:
    """Principal axes of the rows of ``X`` (not centred: the mean is removed here).

    ``n_components``: an int (at least that many axes are returned), a fraction in (0, 1) or
    None (every axis; both need an exact route). Signs are fixed by :func:`fix_signs`.
    """
    progress = as_progress(progress)
    n, d = X.shape
    sparse = is_sparse(X)
    if solver == "auto":
        solver = choose_sparse_solver(X, n_components) if sparse else choose_solver(n, d, n_components)
    if solver in ("randomized", "arpack") and not isinstance(n_components, (int, np.integer)):
        raise ValueError(f"svd_solver='{solver}' needs an integer n_components; a fraction of the "
                         "variance needs every eigenvalue: use 'auto', 'full', 'covariance' or 'gram'.")
    if sparse and solver not in SPARSE_SOLVERS:
        raise ValueError(f"svd_solver='{solver}' needs dense data; sparse X is taken by "
                         f"{', '.join(repr(s) for s in SPARSE_SOLVERS)} without densifying it.")
    progress.checkpoint(0.0, "Centring the data")
    mean = np.asarray(X.mean(axis=0)).ravel()
    denom = max(n - 1, 1)
    if sparse and solver != "covariance":
        # Σ_ij (x_ij − x̄_j)² column by column: Σ_i x_ij² − n x̄_j²
        col_sq = np.asarray(X.multiply(X).sum(axis=0)).ravel()
        total = float(np.sum(np.maximum(col_sq - n * mean * mean, 0.0))) / denom
        Xc = CentredSparse(X, mean)
        if solver == "arpack":
            s, Vt = _arpack_route(Xc, int(n_components), random_state, progress)
        else:
            s, Vt = _randomized_route(Xc, int(n_components), random_state, progress)
    elif solver == "covariance":
        s, Vt, trace = _covariance_route(X, mean, n_components, progress)
        total = trace / denom
    else:
        Xc = X - mean
        total = float(np.einsum("ij,ij->", Xc, Xc)) / denom
        if solver == "gram":
            s, Vt = _gram_route(Xc, n_components, progress)
        elif solver == "arpack":
            s, Vt = _arpack_route(Xc, int(n_components), random_state, progress)
        elif solver == "randomized":
            s, Vt = _randomized_route(Xc, int(n_components), random_state, progress)
        else:
            progress.checkpoint(0.1, f"Singular value decomposition of {n}×{d} data")
            _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    Vt = Vt * fix_signs(Vt)[:, None]
    progress.checkpoint(0.9, "Principal axes found")
    return PrincipalAxes(np.ascontiguousarray(Vt), s, mean, total, solver, solver in EXACT)


def project(X: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """(X − mean) · componentsᵀ as X·componentsᵀ − mean·componentsᵀ (no centred copy of X, as
    scikit-learn's transform; X may be sparse)."""
    if not is_sparse(X):
        return matmul_rows(X, components.T, mean @ components.T)
    out = np.asarray(X @ components.T)
    out -= mean @ components.T
    return out
