"""Classical (Torgerson–Gower) multidimensional scaling (thesis section 3.2, table 3.1, kernel 5.1)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from manifold_studio.algorithms import Choice
from manifold_studio.algorithms.params import AT_MOST_N, n_components_param
from manifold_studio.algorithms.spectral import (
    EIGEN_SOLVER_PARAM, SpectralEmbedding, SpectralProblem, centre_new_rows, double_centre,
)
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl

#: full spectrum (exact count of negative eigenvalues) up to this many points
FULL_SPECTRUM_MAX = 1000


def check_dissimilarity_matrix(D: np.ndarray, *, name: str = "The dissimilarity matrix") -> np.ndarray:
    """Raise DataError unless D is a square, symmetric, non-negative matrix with a zero diagonal."""
    n, m = D.shape
    if n != m:
        raise DataError(f"{name} must be square (one row and one column per object): got {n} rows "
                        f"and {m} columns. With dissimilarity='precomputed', give the n x n matrix of "
                        "dissimilarities; use dissimilarity='euclidean' for ordinary data.")
    scale = max(float(np.max(np.abs(D))), 1e-300)
    diag = np.abs(np.diag(D))
    if diag.max() > 1e-12 * scale:
        i = int(np.argmax(diag))
        raise DataError(f"{name} must have a zero diagonal (an object is at distance 0 from itself): "
                        f"entry ({i}, {i}) is {D[i, i]:.6g} and {int(np.sum(diag > 1e-12 * scale))} "
                        "diagonal entries are non-zero.")
    asym = np.abs(D - D.T)
    if asym.max() > 1e-8 * scale:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        raise DataError(f"{name} must be symmetric: entry ({i}, {j}) is {D[i, j]:.6g} but entry "
                        f"({j}, {i}) is {D[j, i]:.6g}. Average it with its transpose, (D + D.T) / 2, "
                        "if the asymmetry is noise.")
    if (D < 0).any():
        i, j = np.unravel_index(int(np.argmin(D)), D.shape)
        raise DataError(f"{name} must not contain negative dissimilarities: entry ({i}, {j}) is {D[i, j]:.6g}.")
    return 0.5 * (D + D.T)


class ClassicalMDS(SpectralEmbedding):
    """Classical multidimensional scaling, from data or from a dissimilarity matrix.

    The kernel is the double-centred ``-1/2 d^2`` (eq. 5.1) with the centring means taken over
    the training set; coordinates are ``sqrt(l_k) v_ik`` (table 3.1). On Euclidean distances
    this is PCA (the double-centred kernel is the centred inner product), for training and
    extended points alike. With a precomputed matrix, ``extend`` takes the new points'
    dissimilarities to the training points, one row per new point. Negative eigenvalues mean
    the dissimilarities are not Euclidean (theorem 3.2): they are counted and reported.

    Data types: results are float64 for any input, float32 included (as scikit-learn's MDS): the
    double-centred squared dissimilarities lose too many digits in single precision. Sparse data
    are refused.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("mds", n_components=2).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "mds"
    name = "Classical MDS"
    help = ("Classical (Torgerson–Gower) multidimensional scaling: places the points so that their "
            "distances match the given dissimilarities as well as possible. From data (Euclidean "
            "distances, which gives the same map as PCA) or from a precomputed square dissimilarity "
            "matrix. New points are placed from their dissimilarities to the fitted points. If "
            "the dissimilarities are not Euclidean, the number of negative eigenvalues is reported.")
    params = (
        n_components_param(limit=AT_MOST_N),
        Choice("dissimilarity", "euclidean", "'euclidean': distances between the rows of the data; "
               "'precomputed': the data is a square n x n dissimilarity matrix (extend then takes, "
               "for each new point, its dissimilarities to the n fitted points).",
               choices=("euclidean", "precomputed")),
        EIGEN_SOLVER_PARAM,
    )

    def _spectral_problem(self, X, progress):
        p = self._p
        if p["dissimilarity"] == "euclidean":
            return self._centred_linear_problem(X, p["n_components"])
        D = check_dissimilarity_matrix(X)
        progress.checkpoint(0.2, "Double centring")
        A = D * D
        A *= -0.5
        # mean_j of -1/2 d^2(j, i) and the grand mean
        self.half_sq_col_mean_, self.half_sq_grand_mean_ = double_centre(A)
        self._gram = A
        return SpectralProblem(p["n_components"], matrix=A, trace=float(np.trace(A)))

    def _fit(self, X, y, progress):
        super()._fit(X, y, progress)
        if self._p["dissimilarity"] == "euclidean":
            self._keep_linear_projection()
            self.negative_eigenvalues_ = np.empty(0)
            self.n_negative_eigenvalues_ = 0
            self._negative_count_exact = True
        else:
            self._report_negative(self._gram)
            del self._gram
        if self.n_negative_eigenvalues_ and not self.warning_:
            neg = self.negative_eigenvalues_
            share = float(np.sum(np.abs(neg)) / max(np.sum(np.abs(self.eigenvalues_)), 1e-300))
            exact = "" if self._negative_count_exact else "at least "
            self.warning_ = (
                f"The dissimilarities are not Euclidean: the double-centred matrix has {exact}"
                f"{self.n_negative_eigenvalues_} negative eigenvalue(s) (the most negative is "
                f"{neg.min():.4g}; together they weigh {share:.1%} of the kept eigenvalues). No configuration of "
                "points reproduces them exactly; the map is the best Euclidean approximation.")

    def _report_negative(self, M):
        n = M.shape[0]
        l1 = float(np.max(np.abs(self.eigenvalues_))) if self.eigenvalues_.size else 1.0
        thr = 1e-9 * max(l1, 1e-300)
        if n <= FULL_SPECTRUM_MAX:
            w = sla.eigvalsh(M, check_finite=False)
            neg = w[w < -thr]
            self._negative_count_exact = True
        else:
            w = spla.eigsh(M, k=1, which="SA", tol=1e-6, v0=np.ones(n) / np.sqrt(n),
                           return_eigenvectors=False)
            neg = w[w < -thr]
            self._negative_count_exact = False
        self.negative_eigenvalues_ = np.sort(neg)
        self.n_negative_eigenvalues_ = int(neg.size)

    def _kernel_rows(self, X):
        # kernel 5.1 for a new point: -1/2 (d^2(x, x_i) - mean_j d^2(x, x_j) - mean_j d^2(x_j, x_i) + mean)
        A = X * X
        A *= -0.5
        return centre_new_rows(A, self.half_sq_col_mean_, self.half_sq_grand_mean_)

    def _kernel_times_eigenvectors(self, X):
        if self._p["dissimilarity"] == "euclidean":
            # kernel 5.1 on Euclidean distances is the linear kernel <x - mean, x_i - mean>
            return self._linear_kernel_times_eigenvectors(X)
        return super()._kernel_times_eigenvectors(X)

    def _check_new_data(self, X, what="extend"):
        self.check_is_fitted(what)
        if self._p["dissimilarity"] != "precomputed":
            return super()._check_new_data(X, what)
        from manifold_studio.algorithms.checks import check_data

        self.check_is_fitted(what)
        X = check_data(X, name="X_new", min_samples=1)
        n = self.n_features_in_
        if X.shape[1] != n:
            raise DataError(f"With dissimilarity='precomputed', each new point must be given by its "
                            f"dissimilarities to the {n} fitted points (one row of {n} values); got "
                            f"rows of {X.shape[1]} values.")
        if (X < 0).any():
            raise DataError("The new points' dissimilarities must not be negative.")
        return X

    def result_summary(self):
        out = super().result_summary()
        out["n_negative_eigenvalues"] = getattr(self, "n_negative_eigenvalues_", 0)
        return out


@hookimpl
def register_algorithms():
    return [ClassicalMDS]
