"""The shared spectral core: data-dependent kernel -> leading eigenpairs -> embedding -> Nyström.

Kernel PCA, classical MDS, Isomap, LLE, Laplacian eigenmaps and spectral clustering are one
computation (thesis, chapter 5). Each method builds an n x n Gram matrix ``M`` from a
*data-dependent kernel* ``k_n``; the core takes its leading eigenpairs ``(l_k, v_k)``,
reads the training embedding off the eigenvectors with a fixed per-component rescaling
``s_k`` and extends it to a new point ``x`` with the Nyström formula (eq. 5.8)::

    y_k(x) = s_k / l_k * sum_i v_ik k_n(x, x_i)          (training: y_ik = s_k v_ik)

``s_k = sqrt(l_k)`` for kernel PCA, MDS and Isomap (table 4.1, table 3.1, table 4.2);
``s_k = sqrt(n)`` for LLE and Laplacian eigenmaps (unit mean square, eq. 4.13);
``s_k = 1`` for spectral clustering (table 4.5, rows normalised afterwards).
Theorem 5.1: at a training point the formula returns that point's embedding exactly.

A method subclasses :class:`SpectralMixin` (through :class:`SpectralEmbedding` for the
embedding kind) and supplies only its kernel:

* ``_spectral_problem(X, progress) -> SpectralProblem`` — the training Gram matrix, as a
  dense array, a sparse matrix, a :class:`~scipy.sparse.linalg.LinearOperator`, a low-rank
  factor ``F`` with ``M = F F^T``, or a sparse PSD "Laplacian" ``L`` with ``M = I - L``
  (LLE: ``L = (I-W)^T (I-W)``; eigenmaps: the normalised graph Laplacian);
* ``_kernel_rows(X)`` — the kernel between new points and the training points, as a dense
  (m, n) array or a sparse matrix (the core applies it in memory-bounded sub-blocks), or
  ``_kernel_times_eigenvectors(X)`` when ``K(X, train) @ V`` has a cheaper form;
* ``_match_training(X)`` when the kernel is defined piecewise (section 5.1): a new point
  identical to a training point *is* that training point and takes its training kernel
  row (its Nyström value ``(M V)_j / l`` is precomputed at fit time).

The eigensolver is chosen automatically (:func:`leading_eigenpairs`): an SVD for low-rank
factors, LAPACK ``eigh`` with ``subset_by_index`` for small dense problems, ARPACK
(``eigsh``) on a progress-reporting operator for large dense or implicit ones, and ARPACK in
shift-invert mode around the bottom of a sparse Laplacian (sparse LU, RCM-ordered) for LLE, eigenmaps and
k-NN spectral clustering, which is what scales to tens of thousands of points.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import reverse_cuthill_mckee

from manifold_studio.algorithms.base import EmbeddingAlgorithm
from manifold_studio.algorithms.kernels import rows_per_block
from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.algorithms.blas_nogil import dsymv_upper
from manifold_studio.algorithms.params import Choice
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import DataError

__all__ = ["SpectralProblem", "leading_eigenpairs", "SpectralMixin", "SpectralEmbedding",
           "normalised_laplacian", "check_n_components",
           "double_centre", "centre_new_rows", "EIGEN_SOLVER_PARAM", "DENSE_MAX"]

#: largest n for which the automatic choice uses LAPACK (dense, not cancellable inside)
DENSE_MAX = 200
#: seed of ARPACK's deterministic starting vector
_V0_SEED = 0

EIGEN_SOLVER_PARAM = Choice(
    "eigen_solver", "auto",
    "Eigensolver: 'auto' picks LAPACK for small problems and ARPACK (iterative, sparse-aware, "
    "cancellable) for large ones; 'dense' forces LAPACK, 'arpack' forces ARPACK.",
    choices=("auto", "dense", "arpack"))


@dataclass
class SpectralProblem:
    """What a method supplies to the core: its training Gram matrix and how to read it.

    Give exactly one of ``matrix`` (dense array, sparse matrix or LinearOperator, symmetric),
    ``factor`` (n x r array with M = F F^T) or ``laplacian`` (sparse PSD L with M = I - L).
    """

    n_components: int
    matrix: Any = None
    factor: np.ndarray | None = None
    laplacian: Any = None
    #: leading eigenvectors to discard (1 for LLE and eigenmaps: the constant / degree vector)
    skip: int = 0
    #: "sqrt_eigenvalue" (kernel PCA, MDS, Isomap), "sqrt_n" (LLE, eigenmaps), "unit"
    scaling: str = "sqrt_eigenvalue"
    #: trace of M (for the explained fraction), when cheaply known
    trace: float | None = None
    #: whether extension must detect new points identical to training points
    match_training: bool = False
    #: solver tolerance (0 = machine precision, as scikit-learn's ARPACK default)
    tol: float = 0.0

    @property
    def n(self) -> int:
        for obj in (self.matrix, self.factor, self.laplacian):
            if obj is not None:
                return obj.shape[0]
        raise ValueError("SpectralProblem needs a matrix, a factor or a laplacian")


def check_n_components(n_components: int, n: int, skip: int = 0) -> None:
    """Clear message when ``n_components`` (plus ``skip`` discarded eigenvectors) do not fit n
    points; methods whose kernel is expensive call it before building the kernel."""
    if n_components + skip > n - (1 if skip else 0):
        raise DataError(f"n_components={n_components} is too large for {n} points: use at most "
                        f"{n - (1 if skip else 0) - skip}.")


def double_centre(M: np.ndarray) -> tuple[np.ndarray, float]:
    """Centre a symmetric training Gram matrix in place, ``M <- H M H`` (kernel PCA, MDS).

    Returns the column means and the grand mean of M before centring: with them
    :func:`centre_new_rows` centres new points' kernel rows against the training set.
    """
    col_mean = M.mean(axis=0)
    grand = float(col_mean.mean())
    M -= col_mean[None, :]
    M -= col_mean[:, None]
    M += grand
    return col_mean, grand


def centre_new_rows(K: np.ndarray, col_mean: np.ndarray, grand: float) -> np.ndarray:
    """Centre new points' kernel rows (m, n) in place with the training means:
    ``k~(x, x_i) = k(x, x_i) - mean_j k(x, x_j) - mean_j k(x_j, x_i) + mean_jl k(x_j, x_l)``."""
    K -= K.mean(axis=1, keepdims=True)
    K -= col_mean[None, :]
    K += grand
    return K


def normalised_laplacian(A, degrees: np.ndarray) -> sp.csr_matrix:
    """``L = I - D^-1/2 A D^-1/2`` of a sparse affinity graph A with the given degrees.

    The kernel of Laplacian eigenmaps and k-NN spectral clustering is ``M = I - L``; give
    ``L`` as :attr:`SpectralProblem.laplacian`.
    """
    s = 1.0 / np.sqrt(degrees)
    M = sp.diags(s) @ A @ sp.diags(s)
    return (sp.identity(A.shape[0], format="csr") - M).tocsr()


class _Ticker:
    """Progress inside an iterative solver: a checkpoint every call, fraction creeping to 1."""

    def __init__(self, progress, message: str, scale: float = 60.0):
        self.progress = as_progress(progress)
        self.message = message
        self.calls = 0
        self.scale = scale
        self.start = 0.0

    def __call__(self):
        self.calls += 1
        frac = 1.0 - 1.0 / (1.0 + self.calls / self.scale)
        self.progress.checkpoint(self.start + (0.95 - self.start) * frac,
                                 f"{self.message} (iteration {self.calls})")


def _symmetric_matvec(M):
    """For a dense symmetric float64 matrix: v ↦ M·v by BLAS dsymv, which reads one triangle only
    (half the memory traffic of a general product; an ARPACK iteration on a kernel matrix is
    memory-bound: 3 vs 7 ms for n = 3000), called without holding the GIL (:mod:`blas_nogil`: the
    window's event loop turns during the 0.2-1 s products of n = 20,000). None for anything else."""
    if not (isinstance(M, np.ndarray) and M.ndim == 2 and M.shape[0] == M.shape[1] and M.dtype == np.float64):
        return None
    if M.flags.f_contiguous:
        F = M
    elif M.flags.c_contiguous:
        F = M.T   # the same symmetric matrix, F-ordered: no copy
    else:
        return None
    return lambda v: dsymv_upper(F, v)


def _checked_operator(M, ticker: _Ticker) -> spla.LinearOperator:
    base = spla.aslinearoperator(M)
    product = _symmetric_matvec(M) or base.matvec

    def matvec(v):
        ticker()
        return product(v)

    def matmat(V):
        ticker()
        return base.matmat(V)

    return spla.LinearOperator(base.shape, matvec=matvec, matmat=matmat, rmatvec=matvec, dtype=float)


def _fix_signs(V: np.ndarray) -> np.ndarray:
    """Deterministic signs: the largest-magnitude entry of each eigenvector is positive."""
    if V.size == 0:
        return V
    rows = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[rows, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


def _factorise_spd(A) -> callable:
    """``b ↦ A⁻¹ b`` for a sparse symmetric positive definite A, by SuperLU on A's reverse
    Cuthill-McKee permutation, no column ordering and no pivoting (symmetric mode).

    SuperLU's own column orderings run holding the GIL (COLAMD 80-190 ms, MMD 190-430 ms for LLE /
    eigenmaps on 20,000 points: the window's event loop stood still), while its factorisation
    releases it; RCM takes 5-20 ms and gives about the same fill and factorisation time."""
    A = sp.csr_matrix(A, dtype=float)
    perm = reverse_cuthill_mckee(A, symmetric_mode=True).astype(np.intp)
    lu = spla.splu(A[perm][:, perm].tocsc(), permc_spec="NATURAL", diag_pivot_thresh=0.0,
                   options={"SymmetricMode": True})

    def solve(b):
        out = np.empty(A.shape[0])
        out[perm] = lu.solve(np.asarray(b, dtype=float)[perm])
        return out

    return solve


def _v0(n: int) -> np.ndarray:
    return np.random.default_rng(_V0_SEED).uniform(-1.0, 1.0, n)


def leading_eigenpairs(problem: SpectralProblem, k: int, *, solver: str = "auto", progress=None):
    """The k leading eigenpairs of the problem's Gram matrix M (descending eigenvalues).

    Returns ``(eigenvalues, eigenvectors, solver_used)``. Cancellation is honoured inside
    ARPACK (every operator application checks the progress). LAPACK is used for small
    problems only, where it finishes in well under a second.
    """
    progress = as_progress(progress)
    n = problem.n
    k = int(k)
    if k > n:
        raise DataError(f"Cannot compute {k} eigenvectors from {n} points; use fewer components "
                        f"or more points.")
    ticker = _Ticker(progress, "Eigenvectors")
    progress.checkpoint(0.0, "Eigenvectors")

    if problem.factor is not None:
        F = np.asarray(problem.factor, dtype=float)
        U, s, _ = sla.svd(F, full_matrices=False, check_finite=False)
        vals = np.zeros(k)
        vecs = np.zeros((n, k))
        r = min(k, s.size)
        vals[:r] = s[:r] ** 2
        vecs[:, :r] = U[:, :r]
        progress.checkpoint(1.0, "Eigenvectors")
        return vals, _fix_signs(vecs), "svd"

    use_dense = solver == "dense" or (solver == "auto" and (n <= DENSE_MAX or k >= n // 3)) or k >= n - 1
    if problem.laplacian is not None:
        L = problem.laplacian
        if use_dense:
            Ld = L.toarray() if sp.issparse(L) else np.asarray(L, dtype=float)
            mu, vecs = sla.eigh(Ld, subset_by_index=[0, k - 1], check_finite=False)
            used = "dense"
        else:
            L = sp.csc_matrix(L, dtype=float)
            diag_scale = max(1.0, float(np.abs(L.diagonal()).max()))
            delta = 1e-10 * diag_scale  # shift just below 0: L + delta I is positive definite
            solve_shifted = _factorise_spd(L + delta * sp.identity(n, format="csc"))
            progress.checkpoint(0.05, "Eigenvectors (factorised)")
            ticker.start = 0.05

            def solve(v):
                ticker()
                return solve_shifted(v)

            opinv = spla.LinearOperator((n, n), matvec=solve, dtype=float)
            mu, vecs = spla.eigsh(L, k=k, sigma=-delta, which="LM", OPinv=opinv, v0=_v0(n),
                                  tol=problem.tol, maxiter=max(1000, 20 * n))
            used = "arpack-shift-invert"
        order = np.argsort(mu)
        vals = 1.0 - mu[order]
        vecs = vecs[:, order]
    else:
        M = problem.matrix
        if use_dense:
            if isinstance(M, spla.LinearOperator):
                Md = M.matmat(np.eye(n))
            elif sp.issparse(M):
                Md = M.toarray()
            else:
                Md = np.asarray(M, dtype=float)
            vals, vecs = sla.eigh(Md, subset_by_index=[n - k, n - 1], check_finite=False)
            used = "dense"
        else:
            op = _checked_operator(M, ticker)
            # one BLAS thread: each product (dsymv) is memory-bound, and a two-thread product waits
            # at a barrier whenever another process holds a core (27-32 ms against 1.5 ms per
            # product, n = 3000, on two busy cores; 0.7 against 1.4 ms on idle ones)
            with blas_single_thread():
                vals, vecs = spla.eigsh(op, k=k, which="LA", v0=_v0(n), tol=problem.tol,
                                        maxiter=max(1000, 20 * n))
            used = "arpack"
        order = np.argsort(vals)[::-1]
        vals = vals[order]
        vecs = vecs[:, order]
    progress.checkpoint(1.0, "Eigenvectors")
    return vals, _fix_signs(vecs), used


def _apply_gram(problem: SpectralProblem, V: np.ndarray) -> np.ndarray:
    """M @ V for the problem's Gram matrix (used for the training Nyström rows)."""
    if problem.factor is not None:
        F = problem.factor
        return F @ (F.T @ V)
    if problem.laplacian is not None:
        return V - problem.laplacian @ V
    M = problem.matrix
    if isinstance(M, spla.LinearOperator):
        return M.matmat(V)
    return M @ V


class SpectralMixin:
    """Shared fit / extend logic of every spectral method (see the module docstring)."""

    #: the fitted state a saved model may hold (checked before it is restored; see state_schema)
    fitted_schema = {
        "eigenvalues_": Fitted(shape=("n_eigenvectors",), required=True),
        "eigenvectors_": Fitted(shape=("n_train", "n_eigenvectors"), required=True),
        "nystrom_coef_": Fitted(shape=("n_eigenvectors",), required=True),
        "spectral_embedding_": Fitted(shape=("n_train", "n_eigenvectors")),
        "training_projection_": Fitted(shape=("n_train", "n_eigenvectors")),
        "feature_mean_": Fitted(shape=("n_features_in_",)),
        "projection_": Fitted(shape=("n_features_in_", "n_eigenvectors")),
    }
    #: whether this method's training eigenvectors are read off after ``skip`` leading ones
    _spectral_attrs = ("eigenvalues_", "eigenvectors_", "nystrom_coef_", "eigen_solver_")
    #: ``_kernel_rows`` returns sparse rows with a few entries each (k-NN kernels): their
    #: memory is small, so they are computed in one call instead of memory-bounded blocks
    _sparse_kernel_rows = False

    # -- hooks supplied by each method -------------------------------------------------
    def _spectral_problem(self, X: np.ndarray, progress) -> SpectralProblem:  # pragma: no cover
        raise NotImplementedError

    def _kernel_rows(self, X: np.ndarray):  # pragma: no cover - abstract
        """Kernel k_n(x, x_i) between new points X and the n training points: (m, n)."""
        raise NotImplementedError

    def _match_training(self, X: np.ndarray) -> np.ndarray:
        """Index of a training point identical to each row of X, or -1 (piecewise kernels)."""
        return np.full(X.shape[0], -1, dtype=np.intp)

    # -- fitting ---------------------------------------------------------------------
    def _fit_spectral(self, X: np.ndarray, progress, *, kernel_share: float = 0.6):
        """Build the kernel, solve, store eigenpairs and the training embedding."""
        progress = as_progress(progress)
        problem = self._spectral_problem(X, SubProgress(progress, 0.0, kernel_share, "Kernel: "))
        n = problem.n
        d = int(problem.n_components)
        k = d + problem.skip
        check_n_components(d, n, problem.skip)
        solver = self._p.get("eigen_solver", "auto") if hasattr(self, "_p") else "auto"
        try:
            vals, vecs, used = leading_eigenpairs(problem, k, solver=solver,
                                                  progress=SubProgress(progress, kernel_share, 0.97))
        except spla.ArpackNoConvergence as exc:
            raise DataError("The eigensolver did not converge (the leading eigenvalues are too close "
                            "together); try eigen_solver='dense' on a smaller sample, or change "
                            "the neighbourhood size.") from exc
        self.discarded_eigenvalues_ = vals[:problem.skip]
        vals = vals[problem.skip:]
        V = vecs[:, problem.skip:]
        scale, coef, warn = self._scales(vals, n, problem.scaling)
        self.eigenvalues_ = vals
        self.eigenvectors_ = V
        self.nystrom_coef_ = coef
        self.spectral_embedding_ = V * scale
        self.eigen_solver_ = used
        self.kernel_trace_ = float("nan") if problem.trace is None else float(problem.trace)
        if problem.match_training:
            progress.checkpoint(0.98, "Training Nyström rows")
            self.training_projection_ = _apply_gram(problem, V)
        self._spectral_warning = warn
        progress.checkpoint(1.0, "Done")
        return problem

    @staticmethod
    def _scales(vals: np.ndarray, n: int, scaling: str):
        """Training scale s_k and Nyström coefficient s_k / l_k for each component."""
        l1 = float(np.max(np.abs(vals))) if vals.size else 0.0
        if scaling == "unit":
            # eigenvectors as they are (Ng-Jordan-Weiss): a negative eigenvalue still gives a
            # direction, extended by the Nyström formula v(x) = K(x, ·) v / l (its sign included)
            ok = np.abs(vals) > max(l1, 1e-300) * 1e-12
        else:
            ok = vals > max(l1, 1e-300) * 1e-12
        safe = np.where(ok, vals, 1.0)
        if scaling == "sqrt_eigenvalue":
            scale = np.where(ok, np.sqrt(safe), 0.0)
        elif scaling == "sqrt_n":
            scale = np.where(ok, np.sqrt(n), 0.0)
        elif scaling == "unit":
            scale = np.where(ok, 1.0, 0.0)
        else:  # pragma: no cover - programming error
            raise ValueError(scaling)
        coef = np.where(ok, scale / safe, 0.0)
        warn = ""
        if not ok.all():
            bad = np.flatnonzero(~ok) + 1
            warn = (f"Component(s) {', '.join(map(str, bad))} have a zero or negative eigenvalue, so "
                    "they carry no information and are set to 0; ask for fewer components.")
        return scale, coef, warn

    # -- extension -------------------------------------------------------------------
    def _kernel_times_eigenvectors(self, X: np.ndarray) -> np.ndarray:
        """K(X, train) @ V, computed in memory-bounded sub-blocks of ``_kernel_rows``."""
        V = self.eigenvectors_
        if self._sparse_kernel_rows:
            return self._kernel_rows(X) @ V
        n = V.shape[0]
        out = np.empty((X.shape[0], V.shape[1]))
        step = rows_per_block(n)
        for start in range(0, X.shape[0], step):
            K = self._kernel_rows(X[start:start + step])
            out[start:start + step] = K @ V
        return out

    def _nystrom(self, X: np.ndarray) -> np.ndarray:
        """Nyström coordinates of new points (sample-wise; see the module docstring)."""
        X = X if sp.issparse(X) else np.asarray(X, dtype=float)
        out = np.empty((X.shape[0], self.eigenvectors_.shape[1]))
        match = self._match_training(X) if hasattr(self, "training_projection_") else None
        if match is not None and (match >= 0).any():
            hit = match >= 0
            # the training kernel row of point j gives (M V)_j; Nyström: s_k / l_k (M v_k)_j
            out[hit] = self.training_projection_[match[hit]] * self.nystrom_coef_
            rest = ~hit
            if rest.any():
                out[rest] = self._kernel_times_eigenvectors(X[rest]) * self.nystrom_coef_
            return out
        return self._kernel_times_eigenvectors(X) * self.nystrom_coef_

    # -- the linear kernel (kernel PCA's linear kernel, MDS on Euclidean distances) -------
    def _centred_linear_problem(self, X: np.ndarray, n_components: int) -> SpectralProblem:
        """M = Xc Xc^T with Xc the centred data, given as its factor (an SVD solves it)."""
        self.feature_mean_ = X.mean(axis=0)
        F = X - self.feature_mean_
        self._linear_factor = F
        return SpectralProblem(n_components, factor=F, trace=float(np.sum(F * F)))

    def _keep_linear_projection(self) -> None:
        """After the solve: Nyström of the linear kernel is (x - mean) Xc^T V, so keep only the
        d x k product ``projection_`` (not the n x d centred data)."""
        self.projection_ = self._linear_factor.T @ self.eigenvectors_
        del self._linear_factor

    def _linear_kernel_times_eigenvectors(self, X: np.ndarray) -> np.ndarray:
        """sum_i v_ik k(x, x_i) = (x - mean) Xc^T v_k, without forming the n-long kernel row."""
        return (X - self.feature_mean_) @ self.projection_

    # -- reporting -------------------------------------------------------------------
    def explained_fraction(self) -> float:
        """Share of the kernel's trace carried by the kept eigenvalues (nan when unknown)."""
        tr = getattr(self, "kernel_trace_", float("nan"))
        if not np.isfinite(tr) or tr <= 0:
            return float("nan")
        return float(np.sum(np.clip(self.eigenvalues_, 0, None)) / tr)

    def spectral_summary(self) -> dict:
        out = {}
        if hasattr(self, "eigenvalues_"):
            out["eigenvalues"] = [float(round(v, 8)) for v in self.eigenvalues_]
            out["eigen_solver"] = self.eigen_solver_
            frac = self.explained_fraction()
            if np.isfinite(frac):
                out["explained_fraction"] = round(frac, 6)
            out["n_nonpositive_eigenvalues_kept"] = int(np.sum(self.eigenvalues_ <= 0))
        if getattr(self, "warning_", ""):
            out["warning"] = self.warning_
        return out


class SpectralEmbedding(SpectralMixin, EmbeddingAlgorithm):
    """Base class of the spectral embedding plugins: ``embedding_`` read off the eigenvectors,
    ``extend`` by the Nyström formula. Subclasses supply the kernel hooks only."""

    def _fit(self, X, y, progress):
        self._fit_spectral(X, progress)
        self.embedding_ = self.spectral_embedding_
        self.warning_ = self._spectral_warning

    def _extend(self, X):
        return self._nystrom(X)

    def result_summary(self):
        out = super().result_summary()
        out.update(self.spectral_summary())
        return out
