"""Kernel PCA (Schölkopf, Smola & Müller 1998; thesis section 4.1, table 4.1, eq. 4.7)."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Choice, Float
from manifold_studio.algorithms.params import n_components_param
from manifold_studio.algorithms.kernels import check_rbf_width, kernel_matrix, resolve_gamma
from manifold_studio.algorithms.spectral import (
    EIGEN_SOLVER_PARAM, SpectralEmbedding, SpectralProblem, centre_new_rows, double_centre,
)
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl


class KernelPCA(SpectralEmbedding):
    """Kernel principal component analysis with out-of-sample projection.

    The Gram matrix of the chosen kernel is centred in feature space,
    ``K~ = H K H``; its leading eigenvectors, normalised so that ``l_k <a_k, a_k> = 1``
    (table 4.1), give the training coordinates ``sqrt(l_k) v_ik``. A new point is projected
    with eq. 4.7, its kernel row centred against the training set (the Nyström formula with
    the centred kernel). The linear kernel gives ordinary PCA.

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
            "polynomial, sigmoid or linear): captures non-linear structure that PCA misses. "
            "The linear kernel is plain PCA. New points are projected on the same components "
            "(equation 4.7 of the thesis), so a model fitted on a sample can place any number "
            "of points.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "X_fit_": Fitted(shape=("n_train", "n_features_in_"), required=True),
        "kernel_col_mean_": Fitted(shape=("n_train",)),
    }

    params = (
        n_components_param(2, "Number of output dimensions (leading kernel principal components)."),
        Choice("kernel", "rbf", "Kernel: 'rbf' exp(-gamma·|x-y|²), 'poly' (gamma·<x,y>+coef0)^degree, "
               "'sigmoid' tanh(gamma·<x,y>+coef0), 'linear' <x,y> (= PCA).",
               choices=("rbf", "poly", "sigmoid", "linear")),
        Float("gamma", None, "Kernel coefficient; empty means 1 / number of features.",
              low=0.0, low_open=True, allow_none=True, log=True),
        Float("degree", 3.0, "Degree of the polynomial kernel.", low=0.0, low_open=True),
        Float("coef0", 1.0, "Independent term of the polynomial and sigmoid kernels."),
        EIGEN_SOLVER_PARAM,
    )

    def _kernel_args(self):
        p = self._p
        return dict(gamma=self.gamma_, degree=p["degree"], coef0=p["coef0"])

    def _spectral_problem(self, X, progress):
        p = self._p
        n = X.shape[0]
        self.X_fit_ = X
        self.gamma_ = resolve_gamma(p["gamma"], X.shape[1])
        if p["kernel"] == "linear":
            return self._centred_linear_problem(X, p["n_components"])
        if p["kernel"] == "rbf":
            check_rbf_width(X, self.gamma_, what="RBF kernel")
        K = kernel_matrix(X, None, p["kernel"], progress=progress, **self._kernel_args())
        if not np.isfinite(K).all():
            raise DataError(f"The {p['kernel']} kernel produced non-finite values (a non-integer degree "
                            "of a negative base, or an overflow); use an integer degree, a smaller "
                            "gamma or scale the data.")
        # centring in feature space (in place): k~(x,y) = k - E_x' k - E_y' k + E k
        self.kernel_col_mean_, self.kernel_grand_mean_ = double_centre(K)
        return SpectralProblem(p["n_components"], matrix=K, trace=float(np.trace(K)))

    def _fit(self, X, y, progress):
        super()._fit(X, y, progress)
        if self._p["kernel"] == "linear":
            self._keep_linear_projection()

    def _kernel_rows(self, X):
        K = kernel_matrix(X, self.X_fit_, self._p["kernel"], **self._kernel_args())
        return centre_new_rows(K, self.kernel_col_mean_, self.kernel_grand_mean_)

    def _kernel_times_eigenvectors(self, X):
        if self._p["kernel"] == "linear":
            return self._linear_kernel_times_eigenvectors(X)
        return super()._kernel_times_eigenvectors(X)

    def result_summary(self):
        out = super().result_summary()
        out["gamma"] = getattr(self, "gamma_", None)
        return out


@hookimpl
def register_algorithms():
    return [KernelPCA]
