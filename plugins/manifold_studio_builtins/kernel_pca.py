"""Kernel PCA (Schölkopf, Smola & Müller 1998; thesis section 4.1, table 4.1, eq. 4.7)."""
from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from manifold_studio.algorithms import Choice, Float, Int
from manifold_studio.algorithms.checks import check_data, is_sparse
from manifold_studio.algorithms.params import AT_MOST_N
from manifold_studio.algorithms.kernels import check_rbf_width, kernel_matrix, resolve_gamma
from manifold_studio.algorithms.pca_solvers import CentredSparse
from manifold_studio.algorithms.spectral import (
    EIGEN_SOLVER_PARAM, SpectralEmbedding, SpectralProblem, centre_new_rows, double_centre,
)
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl

#: the kernels that take sparse data (the linear kernel by implicit centring, a precomputed one as given)
SPARSE_KERNELS = ("linear", "precomputed")
#: eigenvalues at most this fraction of the largest count as zero (scikit-learn's
#: _check_psd_eigenvalues for float64): n_components=None drops them
ZERO_EIGENVALUE_RATIO = 1e-12


#: scikit-learn's _check_psd_eigenvalues (float64): a computed eigenvalue below -max(1e-5 × the
#: largest magnitude, 1e-10) means the kernel is not positive semi-definite
SIGNIFICANT_NEGATIVE_RATIO = 1e-5
SIGNIFICANT_NEGATIVE_VALUE = 1e-10


def check_psd_eigenvalues(vals) -> None:
    """Refuse a kernel whose computed (kept) eigenvalues include a significantly negative one,
    as scikit-learn's KernelPCA does: such a component is no direction of a feature space."""
    vals = np.asarray(vals, dtype=float)
    if vals.size == 0:
        return
    largest = float(vals.max())
    if largest <= 0:
        raise DataError("Kernel PCA: the centred kernel has no positive eigenvalue, so there is no "
                        "component; check the kernel (a constant kernel, identical points, or a "
                        "matrix that is not a kernel).")
    low = float(vals.min())
    if low < -SIGNIFICANT_NEGATIVE_RATIO * largest and low < -SIGNIFICANT_NEGATIVE_VALUE:
        raise DataError(f"Kernel PCA: there are significant negative eigenvalues ({low:.4g}, "
                        f"{-low / largest:.3g} of the largest positive one, {largest:.4g}): the kernel is not "
                        "positive semi-definite. With kernel='precomputed', give a positive "
                        "semi-definite kernel matrix, or ask for fewer components (n_components).")


def _check_square_kernel(K, n_rows_name: str = "X") -> None:
    n, m = K.shape
    if n != m:
        raise DataError(f"With kernel='precomputed', {n_rows_name} must be the square n × n kernel "
                        f"matrix of the training points: got {n} rows and {m} columns.")


class KernelPCA(SpectralEmbedding):
    """Kernel principal component analysis with out-of-sample projection.

    The Gram matrix of the chosen kernel is centred in feature space,
    ``K~ = H K H``; its leading eigenvectors, normalised so that ``l_k <a_k, a_k> = 1``
    (table 4.1), give the training coordinates ``sqrt(l_k) v_ik``. A new point is projected
    with eq. 4.7, its kernel row centred against the training set (the Nyström formula with
    the centred kernel). The linear kernel gives ordinary PCA.

    ``kernel='precomputed'``: ``fit`` takes the n × n kernel matrix of the training points
    (symmetric) and ``extend``/``transform`` the m × n kernel between new and training points, as
    scikit-learn's KernelPCA. ``n_components=None`` keeps every component whose eigenvalue is
    positive (above 1e-12 times the largest: zero eigenvalues are dropped, as scikit-learn does).
    Sparse X (scipy.sparse) is taken with the linear kernel (centred implicitly, never densified)
    and the precomputed one. Data types: float32 data give float32 coordinates (computed in float64).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("kernel_pca", n_components=2, kernel="rbf", gamma=0.5).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "kernel_pca"
    name = "Kernel PCA"
    help = ("Principal component analysis in the feature space of a kernel (Gaussian 'rbf', "
            "polynomial, sigmoid or linear, or a precomputed kernel matrix): captures non-linear "
            "structure that PCA misses. The linear kernel is plain PCA. New points are projected on "
            "the same components (equation 4.7 of the thesis), so a model fitted on a sample can "
            "place any number of points.")
    #: the fitted state a saved model may hold (checked before it is restored); the training
    #: points are kept for the kernels computed from data (not for 'linear' on sparse data nor
    #: for 'precomputed', whose extension needs the kernel means only)
    fitted_schema = {
        "X_fit_": Fitted(shape=("n_train", "n_features_in_")),
        "kernel_col_mean_": Fitted(shape=("n_train",)),
    }

    params = (
        Int("n_components", 2, "Number of output dimensions (leading kernel principal components); "
            "empty keeps every component with a positive eigenvalue.", low=1, allow_none=True,
            limit=AT_MOST_N),
        Choice("kernel", "rbf", "Kernel: 'rbf' exp(-gamma·|x-y|²), 'poly' (gamma·<x,y>+coef0)^degree, "
               "'sigmoid' tanh(gamma·<x,y>+coef0), 'linear' <x,y> (= PCA), or 'precomputed' (the data "
               "is the n × n kernel matrix; new points are given by their kernel values to the n "
               "training points).",
               choices=("rbf", "poly", "sigmoid", "linear", "precomputed")),
        Float("gamma", None, "Kernel coefficient; empty means 1 / number of features.",
              low=0.0, low_open=True, allow_none=True, log=True),
        Float("degree", 3.0, "Degree of the polynomial kernel.", low=0.0, low_open=True),
        Float("coef0", 1.0, "Independent term of the polynomial and sigmoid kernels."),
        EIGEN_SOLVER_PARAM,
    )
    accepts_sparse = True
    sparse_condition = "kernel is " + " or ".join(repr(k) for k in SPARSE_KERNELS)
    preserves_float32 = True

    def accepts_sparse_input(self) -> bool:
        return getattr(self, "kernel", "rbf") in SPARSE_KERNELS

    def _kernel_args(self):
        p = self._p
        return dict(gamma=self.gamma_, degree=p["degree"], coef0=p["coef0"])

    def _spectral_problem(self, X, progress):
        p = self._p
        n = X.shape[0]
        k = p["n_components"] if p["n_components"] is not None else n
        self.gamma_ = resolve_gamma(p["gamma"], X.shape[1])
        if p["kernel"] == "precomputed":
            return self._precomputed_problem(X, k)
        if p["kernel"] == "linear":
            if is_sparse(X):
                return self._sparse_linear_problem(X, k)
            self.X_fit_ = X
            return self._centred_linear_problem(X, k)
        self.X_fit_ = X
        if p["kernel"] == "rbf":
            check_rbf_width(X, self.gamma_, what="RBF kernel")
        K = kernel_matrix(X, None, p["kernel"], progress=progress, **self._kernel_args())
        if not np.isfinite(K).all():
            raise DataError(f"The {p['kernel']} kernel produced non-finite values (a non-integer degree "
                            "of a negative base, or an overflow); use an integer degree, a smaller "
                            "gamma or scale the data.")
        # centring in feature space (in place): k~(x,y) = k - E_x' k - E_y' k + E k
        self.kernel_col_mean_, self.kernel_grand_mean_ = double_centre(K)
        return SpectralProblem(k, matrix=K, trace=float(np.trace(K)))

    def _precomputed_problem(self, K, k):
        """The given kernel, centred explicitly (dense) or implicitly (sparse: H K H as an operator)."""
        _check_square_kernel(K)
        n = K.shape[0]
        asym = abs(K - K.T)
        asym = float(asym.max()) if asym.size else 0.0
        scale = float(abs(K).max()) if K.size else 0.0
        if asym > 1e-8 * max(scale, 1e-300):
            raise DataError(f"With kernel='precomputed', the kernel matrix must be symmetric: it differs "
                            f"from its transpose by up to {asym:.3g}. Use (K + K.T) / 2 if the asymmetry "
                            "is noise.")
        if not is_sparse(K):
            K = np.array(K, dtype=float)         # a copy: centred in place
            self.kernel_col_mean_, self.kernel_grand_mean_ = double_centre(K)
            return SpectralProblem(k, matrix=K, trace=float(np.trace(K)))
        col_mean = np.asarray(K.mean(axis=0)).ravel()
        grand = float(col_mean.mean())
        self.kernel_col_mean_, self.kernel_grand_mean_ = col_mean, grand

        def centred(V):   # H K H V = K V − 1 (μᵀV) − μ (1ᵀV) + g 1 (1ᵀV), μ the column means
            V2 = V.reshape(n, -1)
            total = V2.sum(axis=0)
            out = np.asarray(K @ V2) - np.outer(np.ones(n), col_mean @ V2) - np.outer(col_mean, total)
            out += grand * total[None, :]
            return out.reshape(V.shape)

        op = spla.LinearOperator((n, n), matvec=centred, matmat=centred, rmatvec=centred, dtype=float)
        trace = float(K.diagonal().sum()) - n * grand
        return SpectralProblem(k, matrix=op, trace=trace)

    def _sparse_linear_problem(self, X, k):
        """The linear kernel on sparse X: M = X_c X_cᵀ applied as X_c (X_cᵀ v), X_c never formed."""
        n = X.shape[0]
        self.feature_mean_ = np.asarray(X.mean(axis=0)).ravel()
        Xc = CentredSparse(X, self.feature_mean_)
        self._linear_factor = Xc

        def gram(V):
            V2 = V.reshape(n, -1)
            return (Xc @ (Xc.T @ V2)).reshape(V.shape)

        op = spla.LinearOperator((n, n), matvec=gram, matmat=gram, rmatvec=gram, dtype=float)
        col_sq = np.asarray(X.multiply(X).sum(axis=0)).ravel()
        trace = float(np.sum(np.maximum(col_sq - n * self.feature_mean_ ** 2, 0.0)))
        return SpectralProblem(k, matrix=op, trace=trace)

    def _fit(self, X, y, progress):
        super()._fit(X, y, progress)
        check_psd_eigenvalues(self.eigenvalues_)
        if self._p["n_components"] is None:
            self._drop_zero_components()
        if self._p["kernel"] == "linear":
            self._keep_linear_projection()
        self.n_components_ = int(self.eigenvalues_.shape[0])

    def _drop_zero_components(self) -> None:
        """n_components=None: keep the components with an eigenvalue above 1e-12 × the largest."""
        vals = self.eigenvalues_
        top = float(vals.max()) if vals.size else 0.0
        keep = vals > ZERO_EIGENVALUE_RATIO * top if top > 0 else np.zeros(vals.shape, bool)
        for key in ("eigenvalues_", "nystrom_coef_"):
            setattr(self, key, getattr(self, key)[keep])
        for key in ("eigenvectors_", "spectral_embedding_", "embedding_", "training_projection_"):
            if hasattr(self, key):
                setattr(self, key, getattr(self, key)[:, keep])
        self.warning_ = ""

    def _check_new_data(self, X, what="extend"):
        if not (self.is_fitted and self._p["kernel"] == "precomputed"):
            return super()._check_new_data(X, what)
        X = self._check_sparse(X, "X_new", 1) if is_sparse(X) else check_data(X, name="X_new", min_samples=1)
        n = self.n_features_in_
        if X.shape[1] != n:
            raise DataError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting {n} features "
                            f"as input: with kernel='precomputed', each new point is given by its kernel "
                            f"values to the {n} training points (rows of {n} values).")
        return X

    def _extend(self, X):
        if is_sparse(X):   # no piecewise kernel here: the Nyström formula on the sparse rows
            return self._kernel_times_eigenvectors(X) * self.nystrom_coef_
        return super()._extend(X)

    def _kernel_rows(self, X):
        if self._p["kernel"] == "precomputed":
            K = X.toarray() if is_sparse(X) else np.array(X, dtype=float)
        else:
            K = kernel_matrix(X, self.X_fit_, self._p["kernel"], **self._kernel_args())
        return centre_new_rows(K, self.kernel_col_mean_, self.kernel_grand_mean_)

    def _kernel_times_eigenvectors(self, X):
        if self._p["kernel"] == "linear":
            if is_sparse(X):
                P = self.projection_
                return np.asarray(X @ P) - self.feature_mean_ @ P
            return self._linear_kernel_times_eigenvectors(X)
        return super()._kernel_times_eigenvectors(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"   # X is the (n, n) kernel matrix
        return tags

    def result_summary(self):
        out = super().result_summary()
        out["gamma"] = getattr(self, "gamma_", None)
        return out


@hookimpl
def register_algorithms():
    return [KernelPCA]
