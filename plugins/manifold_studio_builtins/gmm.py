"""Gaussian mixture model fitted by EM (seed 000 §"Comment choisir le nombre de classes k").

p(x) = Σ_k π_k N(x | μ_k, Σ_k). The EM algorithm alternates

* E-step: responsibilities r_ik = π_k N(x_i | μ_k, Σ_k) / Σ_j π_j N(x_i | μ_j, Σ_j), computed in
  log space with the log-sum-exp trick (no underflow far from every component);
* M-step: π_k = n_k / n, μ_k = Σ_i r_ik x_i / n_k, Σ_k = Σ_i r_ik (x_i − μ_k)(x_i − μ_k)ᵀ / n_k
  + reg_covar·I (full), its diagonal (diag) or the mean of its diagonal (spherical),

with n_k = Σ_i r_ik, until the mean log-likelihood improves by less than ``tol``. It starts,
as in the seed, from the mixture built from a k-means partition (weights = cluster
proportions, means = centroids, covariances = within-cluster covariances).
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms import Choice, ClusteringAlgorithm, Float
from manifold_studio.algorithms.params import (
    AT_MOST_N, max_iter_param, n_components_param, n_init_param, random_state_param, tol_param,
)
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.kmeans_core import blas_single_thread, kmeans
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError
from manifold_studio.hookspecs import hookimpl
from manifold_studio.algorithms.gmm_em import log_gaussian, logsumexp_rows, m_step, precision_cholesky


class _CheckpointOnly:
    """Forwards checkpoints into a slice of the parent's range, hides ``partial``."""

    def __init__(self, parent, start, end, prefix):
        self.parent, self.start, self.end, self.prefix = parent, start, end, prefix

    def checkpoint(self, fraction, message=""):
        self.parent.checkpoint(self.start + (self.end - self.start) * float(fraction),
                               self.prefix + (message or ""))


class GaussianMixture(ClusteringAlgorithm):
    """Gaussian mixture model (EM), initialised from k-means.

    Parameters
    ----------
    n_components : int
        Number of Gaussian components.
    covariance_type : {"full", "diag", "spherical"}
        Each component's own full covariance matrix, a diagonal one, or a single variance.
    n_init : int
        Number of EM runs (each from its own k-means initialisation); the best
        log-likelihood wins.
    max_iter : int
        Maximum number of EM iterations per run.
    tol : float
        Stop when the mean log-likelihood per sample improves by less than this.
    random_state : int or None
        Seed of the k-means initialisations.
    reg_covar : float
        Added to the diagonal of every covariance: keeps them positive definite.

    Attributes
    ----------
    labels_ : (n,) most probable component of each training point.
    weights_ : (k,) mixing proportions π_k.
    means_ : (k, d) component means.
    covariances_ : (k, d, d) full, (k, d) diag or (k,) spherical covariances.
    precisions_cholesky_ : Cholesky factors of the precisions (same layout).
    log_likelihood_ : mean log-likelihood per training sample of the fitted model.
    log_likelihood_history_ : mean log-likelihood after each E-step of the best run.
    n_iter_ : EM iterations of the best run. converged_ : whether it met ``tol`` (a
        ConvergenceWarning when the best run stopped at ``max_iter``, as scikit-learn).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("gmm", n_components=3, random_state=0).fit(X)
    >>> est.labels_.shape
    (150,)
    >>> len(set(est.labels_.tolist()))
    3
    >>> est.extend(X[:5]).shape
    (5,)
    """

    preserves_float32 = True
    float32_attributes = ('weights_', 'means_', 'covariances_', 'precisions_cholesky_', 'precisions_')
    id = "gmm"
    name = "Gaussian mixture (EM)"
    help = ("Models the data density as a weighted sum of Gaussians and fits it by the EM "
            "algorithm: each point gets a probability of belonging to each component "
            "(E-step), then weights, means and covariances are re-estimated from those soft "
            "assignments (M-step), increasing the likelihood until it stabilises. Starts from "
            "a k-means partition. Unlike k-means it captures elongated clusters of different "
            "sizes and gives soft memberships; the log-likelihood of held-out data helps "
            "choosing the number of components. New points go to their most probable component.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "weights_": Fitted(shape=("n_mixture",), required=True),
        "means_": Fitted(shape=("n_mixture", "n_features_in_"), required=True),
        "covariances_": Fitted(required=True),
        "precisions_cholesky_": Fitted(required=True),
        "labels_": Fitted(shape=(None,), kinds="iu"),
    }

    params = (
        n_components_param(3, "Number of Gaussian components (clusters).", limit=AT_MOST_N),
        Choice("covariance_type", "full",
               "Shape of each component: 'full' (own covariance matrix: any ellipsoid), 'diag' "
               "(axis-aligned ellipsoid) or 'spherical' (a single variance per component).",
               choices=("full", "diag", "spherical")),
        n_init_param(1, "Number of EM runs from different k-means initialisations; the run with "
                     "the highest log-likelihood is kept."),
        max_iter_param(100, "Maximum number of EM iterations per run."),
        tol_param(1e-3, "Stop when the mean log-likelihood per sample improves by less than this."),
        random_state_param("Seed of the k-means initialisations, for reproducible results "
                           "(empty: a different seed every run)."),
        Float("reg_covar", 1e-6, "Added to the diagonal of every covariance so that it stays "
              "invertible (e.g. when a component's points coincide).", low=0.0, log=True),
    )

    def _fit(self, X, y, progress):
        with blas_single_thread():
            self._fit_em(X, progress)

    def _fit_em(self, X, progress):
        p = self._p
        k, cov_type, reg = p["n_components"], p["covariance_type"], p["reg_covar"]
        n_init, max_iter, tol = p["n_init"], p["max_iter"], p["tol"]
        n, d = X.shape
        if k > n:
            raise DataError(f"n_components={k} is larger than the number of samples ({n}).")
        rng = check_random_state(p["random_state"])
        publish = getattr(progress, "partial", None)
        best = None
        for run in range(n_init):
            base = run / n_init
            span = 1.0 / n_init
            init_progress = _CheckpointOnly(progress, base, base + 0.1 * span,
                                            f"run {run + 1}/{n_init}: k-means initialisation: ")
            try:
                labels = kmeans(X, k, n_init=1, random_state=rng, progress=init_progress).labels
            except DataError as exc:
                raise DataError(str(exc).replace("n_clusters", "n_components")) from None
            resp = np.zeros((n, k))
            resp[np.arange(n), labels] = 1.0
            weights, means, cov = m_step(X, resp, cov_type, reg)
            prec = precision_cholesky(cov, cov_type, reg)
            history = []
            converged = False
            it = 0
            prev = -np.inf
            for it in range(1, max_iter + 1):
                progress.checkpoint(base + span * (0.1 + 0.9 * (it - 1) / max_iter),
                                    f"EM run {run + 1}/{n_init}, iteration {it}")
                wlp = log_gaussian(X, means, prec, cov_type) + np.log(weights)
                log_norm = logsumexp_rows(wlp)
                ll = float(log_norm.mean())
                history.append(ll)
                resp = np.exp(wlp - log_norm[:, None])
                weights, means, cov = m_step(X, resp, cov_type, reg)
                prec = precision_cholesky(cov, cov_type, reg)
                if publish is not None:
                    publish({"step": "gmm", "run": run, "iteration": it, "log_likelihood": ll,
                             "means": means.copy(), "weights": weights.copy()})
                if abs(ll - prev) < tol:
                    converged = True
                    break
                prev = ll
            wlp = log_gaussian(X, means, prec, cov_type) + np.log(weights)
            log_norm = logsumexp_rows(wlp)
            final_ll = float(log_norm.mean())
            if best is None or final_ll > best["ll"]:
                best = dict(ll=final_ll, weights=weights, means=means, cov=cov, prec=prec,
                            history=np.asarray(history + [final_ll]), n_iter=it,
                            converged=converged, labels=np.argmax(wlp, axis=1))
        self.weights_ = best["weights"]
        self.means_ = best["means"]
        self.covariances_ = best["cov"]
        self.precisions_cholesky_ = best["prec"]
        self.log_likelihood_ = best["ll"]
        self.log_likelihood_history_ = best["history"]
        self.n_iter_ = int(best["n_iter"])
        self.converged_ = bool(best["converged"])
        self.labels_ = best["labels"]
        self.n_samples_fit_ = n
        if not self.converged_ and max_iter > 0:   # scikit-learn's rule: the kept run decides
            self._warn(f"EM stopped at max_iter={max_iter} before the change of the mean log-likelihood "
                       f"fell below tol={tol:g} (the best of {n_init} run(s) did not converge); increase "
                       "max_iter or tol, or check the data.", ConvergenceWarning)
        progress.checkpoint(1.0, f"EM done: mean log-likelihood {self.log_likelihood_:.6g}")

    # -- prediction ---------------------------------------------------------------------------
    def _weighted_log_prob(self, X):
        return log_gaussian(X, self.means_, self.precisions_cholesky_, self.covariance_type) \
            + np.log(self.weights_)

    def _extend(self, X):
        return np.argmax(self._weighted_log_prob(X), axis=1)

    def _proba(self, X):
        wlp = self._weighted_log_prob(X)
        return np.exp(wlp - logsumexp_rows(wlp)[:, None])

    def predict_proba(self, X, progress=None):
        """(m, k) posterior probability of each component for each new point."""
        X_in = X
        X = self._check_new_data(X, "predict_proba")
        return self._in_precision_of(self.map_chunks(self._proba, X, progress, "Component probabilities"), X_in)

    def score_samples(self, X, progress=None):
        """(m,) log-density log p(x) of each point under the mixture."""
        X = self._check_new_data(X, "score_samples")
        return self.map_chunks(lambda c: logsumexp_rows(self._weighted_log_prob(c)), X, progress,
                               "Log-likelihood")

    def score(self, X, y=None, progress=None):
        """Mean log-likelihood per sample of X under the mixture."""
        return float(np.mean(self.score_samples(X, progress)))

    def _n_parameters(self):
        k, d = self.means_.shape
        cov = {"full": k * d * (d + 1) / 2, "diag": k * d, "spherical": k}[self.covariance_type]
        return int(cov + k * d + k - 1)

    def bic(self, X):
        """Bayesian information criterion on X (lower is better)."""
        X = self._check_new_data(X, "bic")
        return float(-2.0 * self.score(X) * X.shape[0] + self._n_parameters() * np.log(X.shape[0]))

    def aic(self, X):
        """Akaike information criterion on X (lower is better)."""
        X = self._check_new_data(X, "aic")
        return float(-2.0 * self.score(X) * X.shape[0] + 2 * self._n_parameters())

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_components"] = int(self.means_.shape[0])
            out["log_likelihood"] = round(self.log_likelihood_, 6)
            out["n_iter"] = self.n_iter_
            out["converged"] = self.converged_
            n = int(getattr(self, "n_samples_fit_", 0))
            if n:
                out["bic"] = round(-2.0 * self.log_likelihood_ * n + self._n_parameters() * math.log(n), 4)
        return out


@hookimpl
def register_algorithms():
    return [GaussianMixture]
