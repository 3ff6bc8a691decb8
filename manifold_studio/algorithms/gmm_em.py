"""Gaussian mixture EM numerics (Qt-free), shared by the ``gmm`` plugin and the mixture
log-likelihood of :mod:`manifold_studio.analysis.metrics` (seed 000's criterion for choosing k):
precision Cholesky factors, per-component log densities, a stable row log-sum-exp and the M-step.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from manifold_studio.errors import DataError

__all__ = ["precision_cholesky", "log_gaussian", "logsumexp_rows", "m_step"]

_LOG_2PI = math.log(2.0 * math.pi)


def precision_cholesky(covariances: np.ndarray, covariance_type: str, reg_covar: float = 0.0) -> np.ndarray:
    """Cholesky factor of the precision matrices; raise DataError when a covariance is singular."""
    advice = (f"the points of that component coincide or lie in a lower-dimensional subspace; "
              f"increase reg_covar (now {reg_covar:g}) or use fewer components")
    if covariance_type == "full":
        k, d, _ = covariances.shape
        out = np.empty_like(covariances)
        for j in range(k):  # loop over components
            try:
                L = linalg.cholesky(covariances[j], lower=True, check_finite=False)
            except linalg.LinAlgError:
                raise DataError(f"The covariance matrix of component {j} is singular (not positive "
                                f"definite): {advice}.") from None
            if not np.all(np.diag(L) > 0):
                raise DataError(f"The covariance matrix of component {j} is singular: {advice}.")
            out[j] = linalg.solve_triangular(L, np.eye(d), lower=True, check_finite=False).T
        return out
    cov = np.asarray(covariances, dtype=float)
    bad = ~(cov > 0)
    if np.any(bad):
        j = int(np.argwhere(bad)[0][0])
        raise DataError(f"The variance of component {j} is zero ({covariance_type} covariance): {advice}.")
    return 1.0 / np.sqrt(cov)


def log_gaussian(X: np.ndarray, means: np.ndarray, prec_chol: np.ndarray, covariance_type: str) -> np.ndarray:
    """(n, k) log N(x_i | μ_k, Σ_k) from the precision Cholesky factors (row-wise computation)."""
    n, d = X.shape
    k = means.shape[0]
    out = np.empty((n, k))
    for j in range(k):  # loop over components, each vectorised over points
        diff = X - means[j]
        if covariance_type == "full":
            y = diff @ prec_chol[j]
            maha = np.einsum("ij,ij->i", y, y)
            log_det = np.sum(np.log(np.diag(prec_chol[j])))
        elif covariance_type == "diag":
            maha = (diff * diff) @ (prec_chol[j] ** 2)
            log_det = np.sum(np.log(prec_chol[j]))
        else:
            maha = np.einsum("ij,ij->i", diff, diff) * prec_chol[j] ** 2
            log_det = d * np.log(prec_chol[j])
        out[:, j] = -0.5 * (d * _LOG_2PI + maha) + log_det
    return out


def logsumexp_rows(A: np.ndarray) -> np.ndarray:
    """log Σ_j exp(A_ij) per row, stable."""
    m = A.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.sum(np.exp(A - m[:, None]), axis=1)) + m


def m_step(X: np.ndarray, resp: np.ndarray, covariance_type: str, reg_covar: float):
    """Weights, means, covariances from responsibilities (n, k).

    (Co)variances below the round-off level of the data (about eps² · max_j mean(x_j²)) are
    set to exactly 0 before ``reg_covar`` is added, so that coinciding points are reported as a
    singular covariance instead of producing a meaningless, astronomically peaked density.
    """
    n, d = X.shape
    nk = resp.sum(axis=0) + 10.0 * np.finfo(float).eps
    means = (resp.T @ X) / nk[:, None]
    k = means.shape[0]
    noise = 64.0 * np.finfo(float).eps ** 2 * float(np.max(np.mean(X * X, axis=0), initial=0.0))
    if covariance_type == "full":
        cov = np.empty((k, d, d))
        for j in range(k):  # loop over components
            diff = X - means[j]
            c = (resp[:, j, None] * diff).T @ diff / nk[j]
            c[np.abs(c) <= noise] = 0.0
            c.flat[::d + 1] += reg_covar
            cov[j] = c
    else:
        var = np.empty((k, d))
        for j in range(k):  # loop over components
            diff = X - means[j]
            var[j] = resp[:, j] @ (diff * diff) / nk[j]
        var[var <= noise] = 0.0
        var += reg_covar
        cov = var if covariance_type == "diag" else var.mean(axis=1)
    return nk / n, means, cov
