"""Probabilistic PCA (Tipping & Bishop 1999; seed 002 §PPCA).

Generative model z ~ N(0, I), x = W z + μ + ε, ε ~ N(0, σ²I), so x ~ N(μ, C) with
C = W Wᵀ + σ² I. Closed-form maximum likelihood (seed 002):

    μ = x̄,   W_ML = U_M (L_M − σ² I)^½ R (R = I),   σ²_ML = (1/(D − M)) Σ_{i>M} λ_i,

with λ_i, U the eigenpairs of the sample covariance. **Convention:** the covariance is
S = Xcᵀ Xc / (N − 1), as scikit-learn's PCA, so ``score`` equals
``sklearn.decomposition.PCA(...).score`` (which is this likelihood) when N > D; the exact
maximiser uses 1/N, and the EM route (which maximises the likelihood itself) converges to it.
EM and the posterior on observed coordinates (missing values) live in
:mod:`manifold_studio.algorithms.ppca_em`.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Choice, EmbeddingAlgorithm
from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.params import (
    DataLimit, max_iter_param, n_components_param, random_state_param, tol_param,
)
from manifold_studio.algorithms.pca_solvers import SOLVERS, fix_signs, principal_axes
from manifold_studio.algorithms.ppca_em import em, impute, posterior
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError
from manifold_studio.hookspecs import hookimpl


class PPCA(EmbeddingAlgorithm):
    """Probabilistic principal component analysis.

    Parameters
    ----------
    n_components : int
        Latent dimension M (at most n_features − 1: the noise needs a discarded direction).
    method : {'closed_form', 'em'}
        'closed_form': the maximum-likelihood solution from the leading eigenpairs of the
        covariance (1/(N − 1), scikit-learn's convention). 'em': expectation-maximisation,
        which **accepts missing values (NaN)**: the E-step uses the observed coordinates of
        every row only.
    max_iter, tol : EM's iteration budget and its stopping rule (the average
        log-likelihood rose by less than tol·|log-likelihood|).
    svd_solver : the closed form's route to the eigenpairs (see ``pca``).
    random_state : seed of EM's initial W (and of the randomized route).

    Attributes
    ----------
    components_ : (M, D) Wᵀ, the loading matrix (rows orthogonal, decreasing norms).
    noise_variance_ : σ².
    mean_ : (D,) μ.
    explained_variance_ : (M,) the model's variance along each axis, ‖w_i‖² + σ².
    embedding_ : (n, M) posterior means E[z|x] = M⁻¹Wᵀ(x − μ) (M = WᵀW + σ²I).
    loglik_curve_ : average log-likelihood per EM iteration (EM only).

    ``score(X)`` is the average log-likelihood; ``score_samples`` per row; ``impute(X)``
    (EM models, or any model on NaN) fills missing entries with E[x_m | x_O];
    ``inverse_transform(Z) = W (WᵀW)⁻¹ M z + μ``, the optimal reconstruction from the
    posterior mean (Tipping & Bishop §3.3): the orthogonal projection onto the principal
    subspace, i.e. PCA's reconstruction.

    Data types: results are float64 for any input, float32 included: the posterior, the
    log-likelihoods (``score``) and the imputed values are computed and returned in double
    precision. Sparse data are refused (the EM E-step and the imputation need dense rows).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("ppca", n_components=2).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "ppca"
    name = "Probabilistic PCA (PPCA)"
    help = ("PCA as a probability model (Tipping & Bishop): every point is a Gaussian latent "
            "position mapped linearly into the data space plus isotropic noise. Gives the same "
            "subspace as PCA plus a noise level and a likelihood (score) for any point. With "
            "method 'em' it is fitted by expectation-maximisation and accepts data with missing "
            "values, which it can fill in (impute) from the model.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "mean_": Fitted(shape=("n_features_in_",), required=True),
        "components_": Fitted(shape=("n_components_", "n_features_in_"), required=True),
        "explained_variance_": Fitted(shape=("n_components_",)),
        "embedding_": Fitted(shape=(None, "n_components_")),
    }

    params = (
        n_components_param(2, "Latent dimension: number of principal axes kept.",
                           limit=DataLimit("min", why="as scikit-learn's PCA (method='em' needs one "
                                           "direction more: its noise variance is the mean of the "
                                           "discarded eigenvalues)")),
        Choice("method", "closed_form",
               "'closed_form': the exact maximum-likelihood solution from an eigendecomposition. "
               "'em': expectation-maximisation, which accepts missing values (NaN).",
               choices=("closed_form", "em")),
        max_iter_param(1000, "Maximum number of EM iterations (method 'em')."),
        tol_param(1e-7, "EM stops when the average log-likelihood rises by less than this "
                        "fraction (method 'em')."),
        Choice("svd_solver", "auto", "Route to the eigenpairs of the closed form (as for PCA).",
               choices=SOLVERS),
        random_state_param("Seed of EM's starting point and of the randomized route."),
    )

    def accepts_missing_values(self) -> bool:
        return getattr(self, "method", None) == "em"

    def _fit(self, X, y, progress):
        n, d = X.shape
        k = self._p["n_components"]
        if k > d:
            raise DataError(f"n_components={k} is more than n_features={d}: choose at most {d} "
                            f"(at most {d - 1} with method='em').")
        if k == d and self._p["method"] == "em":
            raise DataError(f"n_components={k} must be smaller than n_features={d} with method='em': the "
                            f"noise variance is the mean of the discarded eigenvalues; choose at most {d - 1}.")
        if self._p["method"] == "em":
            self._fit_em(X, k, progress)
        else:
            if k > min(n, d):
                raise DataError(f"n_components={k} is larger than min(n_samples, n_features) = {min(n, d)}.")
            axes = principal_axes(X, k, solver=self._p["svd_solver"], random_state=self._p["random_state"],
                                  progress=progress)
            lam = axes.singular_values[:k] ** 2 / max(n - 1, 1)
            # k = d keeps every direction: no discarded eigenvalue, so no noise (scikit-learn's PCA
            # reports noise_variance_ 0 then); a floor keeps the covariance invertible
            sigma2 = (axes.total_variance - lam.sum()) / (d - k) if k < d else 0.0
            sigma2 = max(sigma2, np.finfo(float).eps * max(float(lam[0]), 1e-300))
            self.mean_ = axes.mean
            self.noise_variance_ = float(sigma2)
            self.components_ = np.sqrt(np.clip(lam - sigma2, 0.0, None))[:, None] * axes.components[:k]
            self.svd_solver_ = axes.solver
            self.n_iter_ = 1  # one closed-form step (scikit-learn's convention for n_iter_)
        self.n_components_ = k
        self.explained_variance_ = np.sum(self.components_ ** 2, axis=1) + self.noise_variance_
        live = not getattr(self, "stopped_early_", False)   # after Cancel, checkpoints raise again
        if live:
            progress.checkpoint(0.98, "Posterior means of the training points")
        # closed form: NaN was refused by the checks (only EM accepts it)
        self.embedding_ = self._posterior(X, complete=True if self._p["method"] != "em" else None).mean
        if live:
            progress.checkpoint(1.0, "Done")

    def _fit_em(self, X, k, progress):
        progress.checkpoint(0.0, "Starting EM (missing values allowed)")
        pub = CurvePublisher(progress, "PPCA EM: negative log-likelihood", x_label="iteration",
                             y_label="−average log-likelihood")
        with blas_single_thread():   # thin products (k columns), per-pattern small solves: a second
            # BLAS thread only waits on busy cores (as k-means and the mixtures)
            res = em(X, k, max_iter=self._p["max_iter"], tol=self._p["tol"],
                     random_state=self._p["random_state"], progress=progress,
                     on_iteration=lambda it, ll: pub.add(it, nll=-ll))
        pub.flush()
        if res.cancelled:
            self._stop_early(f"after {res.n_iter} of {self._p['max_iter']} EM iterations")
        elif not res.converged:
            self._warn(f"PPCA EM reached max_iter={self._p['max_iter']} before the log-likelihood "
                       f"stopped rising (tol={self._p['tol']:g}); increase max_iter.", ConvergenceWarning)
        # canonical rotation R: W = U S (orthogonal columns, decreasing), signs as PCA's
        U, s, _ = np.linalg.svd(res.W, full_matrices=False)
        Wt = (U * s).T
        Wt *= fix_signs(U.T)[:, None]
        self.mean_, self.noise_variance_, self.components_ = res.mean, float(res.sigma2), Wt
        self.n_iter_ = res.n_iter
        self.loglik_curve_ = np.asarray(res.loglik)

    # -- model -------------------------------------------------------------------------
    def _posterior(self, X, loglik=False, complete=None):
        return posterior(X, self.mean_, self.components_.T, self.noise_variance_, loglik=loglik,
                         complete=complete)

    def _extend(self, X):
        return self._posterior(X).mean

    def score_samples(self, X, progress=None):
        """Log-likelihood of every row (of its observed coordinates when it has NaN)."""
        X = self._check_new_data(X, "score_samples")
        if self.n_components_ == self.n_features_in_:
            # every direction kept (σ² = 0): the Gaussian of the full covariance, directly (the
            # posterior's 1/σ² form would cancel catastrophically)
            return self.map_chunks(self._full_rank_loglik, X, progress, "Scoring")
        return self.map_chunks(lambda B: self._posterior(B, loglik=True).loglik, X, progress, "Scoring")

    def _full_rank_loglik(self, X):
        L = np.linalg.cholesky(self.get_covariance())
        Z = np.linalg.solve(L, (X - self.mean_).T)
        d = X.shape[1]
        return -0.5 * (np.sum(Z * Z, axis=0) + d * np.log(2 * np.pi)) - np.sum(np.log(np.diag(L)))

    def score(self, X, y=None, progress=None) -> float:
        """Average log-likelihood of the rows of X."""
        return float(np.mean(self.score_samples(X, progress)))

    def get_covariance(self):
        """The model covariance C = W Wᵀ + σ² I."""
        self.check_is_fitted("get_covariance")
        return self.components_.T @ self.components_ + self.noise_variance_ * np.eye(self.components_.shape[1])

    def impute(self, X, progress=None):
        """X with every missing entry (NaN) replaced by its conditional expectation E[x_m | x_O]."""
        self.check_is_fitted("impute")
        from manifold_studio.algorithms.checks import check_data, check_n_features

        X = check_data(X, name="X", min_samples=1, allow_nan=True)
        check_n_features(X, self.n_features_in_, type(self).__name__)
        W = self.components_.T
        return self.map_chunks(lambda B: impute(B, self.mean_, W, self.noise_variance_), X, progress,
                               "Imputing")

    def inverse_transform(self, Z):
        """Reconstruction from posterior means: W (WᵀW)⁻¹ M z + μ (PCA's projection when σ² → 0)."""
        self.check_is_fitted("inverse_transform")
        Z = np.atleast_2d(np.asarray(Z, dtype=float))
        if Z.shape[1] != self.n_components_:
            raise DataError(f"Reduced coordinates have {Z.shape[1]} columns; the model has "
                            f"{self.n_components_} components.")
        Wt = self.components_
        G = Wt @ Wt.T
        M = G + self.noise_variance_ * np.eye(G.shape[0])
        return Z @ (M @ np.linalg.pinv(G) @ Wt) + self.mean_

    reconstruct = inverse_transform

    def training_curve(self):
        """EM's negative average log-likelihood per iteration, or None."""
        if not hasattr(self, "loglik_curve_"):
            return None
        x = np.arange(1, len(self.loglik_curve_) + 1)
        return TrainingCurve("PPCA EM: negative log-likelihood", x, {"nll": -self.loglik_curve_},
                             "iteration", "−average log-likelihood", final=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["noise_variance"] = float(self.noise_variance_)
            if hasattr(self, "n_iter_"):
                out["n_iter"] = int(self.n_iter_)
        return out


@hookimpl
def register_algorithms():
    return [PPCA]
