"""Probabilistic PCA (Tipping & Bishop 1999; seed 002): posterior of the latent variables on
the observed coordinates of every row, the observed-data log-likelihood, and EM with
missing values.

Model: z ~ N(0, I_k), x = W z + μ + ε, ε ~ N(0, σ² I_d). For a row with observed
coordinates O (missing values are NaN):

    M_O = W_Oᵀ W_O + σ² I,   E[z | x_O] = M_O⁻¹ W_Oᵀ (x_O − μ_O),   cov[z | x_O] = σ² M_O⁻¹,
    log p(x_O) = −½ [ |O| log 2π + (|O| − k) log σ² + log|M_O|
                      + (‖x_O − μ_O‖² − (W_Oᵀe)ᵀ M_O⁻¹ (W_Oᵀe)) / σ² ]    (e = x_O − μ_O)

(|C_O| = σ^{2(|O|−k)} |M_O| by Sylvester's identity, C_O⁻¹ by Woodbury). Rows are grouped
by missingness pattern: M_O is built and inverted once per pattern (once in all for
complete data).

EM (Tipping & Bishop's appendix, with the missing coordinates integrated out as in Ilin &
Raiko, JMLR 2010): the E-step above; the M-step solves, for every feature j, the
regression of x_ij on z̃_i = (z_i, 1) over the rows where x_ij is observed,

    (w_j, μ_j) = [Σ_{i∈O_j} E(z̃_i z̃_iᵀ)]⁻¹ Σ_{i∈O_j} E(z̃_i) x_ij,
    σ² = (1/N_obs) Σ_{(i,j) observed} [(x_ij − w_jᵀ E z_i − μ_j)² + w_jᵀ cov(z_i) w_j].

Each iteration does not decrease the observed-data likelihood. On complete data the fixed
point is the closed-form maximum likelihood with the 1/N sample covariance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.blas_tasks import matmul_rows
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.errors import FitCancelled

LOG_2PI = np.log(2.0 * np.pi)
_BUDGET = 4_000_000  # floats per temporary block (patterns × d × k, rows × k × k)


@dataclass
class Posterior:
    mean: np.ndarray          # (n, k) E[z | x_O]
    cov: np.ndarray           # (P, k, k) cov[z | x_O] per missingness pattern
    pattern: np.ndarray       # (n,) pattern index of every row
    patterns: np.ndarray      # (P, d) observed mask of every pattern
    loglik: np.ndarray | None  # (n,) log p(x_O) or None


def _groups(obs: np.ndarray):
    if obs.all():
        return np.ones((1, obs.shape[1]), dtype=bool), np.zeros(obs.shape[0], dtype=np.intp)
    patterns, inverse = np.unique(obs, axis=0, return_inverse=True)
    return patterns, inverse.ravel()


def posterior(X: np.ndarray, mean: np.ndarray, W: np.ndarray, sigma2: float, *,
              loglik: bool = False, groups=None, complete: bool | None = None) -> Posterior:
    """Posterior of z for every row of X (NaN = missing) and, optionally, log p(x_O).
    ``groups``: the (patterns, pattern index) of X's missingness, when already known;
    ``complete``: True when the caller knows X has no missing value (None: look)."""
    n, d = X.shape
    k = W.shape[1]
    if complete is None:
        complete = groups is None and not np.isnan(np.sum(X))   # one reduction: a NaN propagates
    if complete:   # no missing value: one pattern, and no masked copy of X
        patterns, inv = np.ones((1, d), dtype=bool), np.zeros(n, dtype=np.intp)
        E = X - mean if loglik else None
        B = matmul_rows(X, W, mean @ W)              # W_Oᵀ e_O per row (no centred copy)
    else:
        obs = ~np.isnan(X)
        patterns, inv = _groups(obs) if groups is None else groups
        E = np.where(obs, X - mean, 0.0)             # centred, 0 where missing
        B = E @ W                                    # W_Oᵀ e_O per row
    P = patterns.shape[0]
    Minv = np.empty((P, k, k))
    logdet = np.empty(P)
    step = max(1, _BUDGET // max(d * k, 1))
    eye = sigma2 * np.eye(k)
    for a in range(0, P, step):
        block = patterns[a:a + step]
        if complete:   # one pattern, every coordinate observed: M = WᵀW + σ²I
            M = (W.T @ W + eye)[None]
        else:
            M = np.einsum("pj,jk,jl->pkl", block.astype(float), W, W, optimize=True) + eye
        Minv[a:a + step] = np.linalg.inv(M)
        logdet[a:a + step] = np.linalg.slogdet(M)[1]
    if P == 1:
        Z = B @ Minv[0]
    else:
        Z = np.empty((n, k))
        rstep = max(1, _BUDGET // max(k * k, 1))
        for a in range(0, n, rstep):
            Z[a:a + rstep] = np.einsum("nk,nkl->nl", B[a:a + rstep], Minv[inv[a:a + rstep]])
    ll = None
    if loglik:
        n_obs = patterns.sum(axis=1)[inv]
        quad = (np.einsum("ij,ij->i", E, E) - np.einsum("ik,ik->i", B, Z)) / sigma2
        ll = -0.5 * (n_obs * LOG_2PI + (n_obs - k) * np.log(sigma2) + logdet[inv] + quad)
    return Posterior(Z, sigma2 * Minv, inv, patterns, ll)


def impute(X: np.ndarray, mean: np.ndarray, W: np.ndarray, sigma2: float) -> np.ndarray:
    """X with every NaN replaced by E[x_m | x_O] = μ_m + W_m E[z | x_O]; observed entries unchanged."""
    miss = np.isnan(X)
    if not miss.any():
        return X.copy()
    Z = posterior(X, mean, W, sigma2).mean
    return np.where(miss, Z @ W.T + mean, X)


@dataclass
class EMResult:
    W: np.ndarray
    mean: np.ndarray
    sigma2: float
    loglik: list            # average observed-data log-likelihood before each M-step
    n_iter: int
    converged: bool
    cancelled: bool


def em(X: np.ndarray, k: int, *, max_iter: int = 1000, tol: float = 1e-7, random_state=None,
       init: str = "pca", progress=None, on_iteration=None) -> EMResult:
    """EM for probabilistic PCA on X (NaN = missing); stops when the average log-likelihood
    rises by less than ``tol``·|log-likelihood|. A Cancel (FitCancelled from ``progress``)
    stops early with the current parameters (``cancelled=True``).

    ``init``: 'pca' starts from the closed form on the mean-imputed data (EM converges
    linearly, slowly when σ² is small against the kept eigenvalues, so a good start matters);
    'random' from a seeded Gaussian W and σ² = the average variance."""
    n, d = X.shape
    obs = ~np.isnan(X)
    n_obs_total = int(obs.sum())
    X0 = np.where(obs, X, 0.0)
    rng = check_random_state(random_state)
    mean = np.nanmean(np.where(obs.any(axis=0), X, 0.0), axis=0) if n_obs_total else np.zeros(d)
    mean = np.nan_to_num(mean)
    var = float(np.nanmean(np.where(obs, X - mean, np.nan) ** 2)) if n_obs_total else 1.0
    var = var if var > 0 else 1.0
    W = rng.standard_normal((d, k)) * np.sqrt(var / k)
    sigma2 = var
    if init == "pca":
        Xc = np.where(obs, X - mean, 0.0)
        lam, U = np.linalg.eigh(Xc.T @ Xc / max(n, 1))
        lam, U = lam[::-1], U[:, ::-1]
        if d > k:
            sigma2 = max(float(lam[k:].mean()), 1e-6 * max(float(lam[0]), 1e-300))
        W = U[:, :k] * np.sqrt(np.clip(lam[:k] - sigma2, 1e-6 * sigma2, None))
    history, converged, cancelled, it = [], False, False, 0
    groups = _groups(obs)          # the missingness patterns do not change between iterations
    any_missing = not obs.all()
    rows_missing = np.flatnonzero(~obs.all(axis=1)) if any_missing else np.empty(0, np.intp)
    for it in range(1, max_iter + 1):
        try:
            if progress is not None:
                progress.checkpoint(it / max_iter, f"EM iteration {it}/{max_iter}")
        except FitCancelled:
            cancelled, it = True, it - 1
            break
        post = posterior(X, mean, W, sigma2, loglik=True, groups=groups)
        ll = float(post.loglik.mean())
        history.append(ll)
        if on_iteration is not None:
            on_iteration(it, ll)
        if tol > 0 and len(history) > 1 and history[-1] - history[-2] < tol * abs(history[-2]):
            converged = True
            break
        # M-step: joint regression of every feature on (z, 1) over its observed rows
        Z = post.mean
        Zt = np.hstack([Z, np.ones((n, 1))])
        cov_sum = np.zeros((k + 1, k + 1))
        counts = np.bincount(post.pattern, minlength=post.patterns.shape[0]).astype(float)
        cov_sum[:k, :k] = np.einsum("p,pkl->kl", counts, post.cov)
        A_all = Zt.T @ Zt + cov_sum
        A = np.broadcast_to(A_all, (d, k + 1, k + 1)).copy()
        if any_missing:
            miss = (~obs[rows_missing]).astype(float)
            Zm = Zt[rows_missing]
            A -= np.einsum("nj,na,nb->jab", miss, Zm, Zm, optimize=True)
            miss_p = (~post.patterns).astype(float) * counts[:, None]
            A[:, :k, :k] -= np.einsum("pj,pkl->jkl", miss_p, post.cov, optimize=True)
        b = X0.T @ Zt
        Wt = np.linalg.solve(A, b[:, :, None])[:, :, 0]
        W, mean = Wt[:, :k].copy(), Wt[:, k].copy()
        R = np.where(obs, X0 - Z @ W.T - mean, 0.0)
        spread = np.einsum("jk,pkl,jl->pj", W, post.cov, W, optimize=True)
        trace_term = float(np.sum(post.patterns * spread * counts[:, None]))
        sigma2 = max((float(np.einsum("ij,ij->", R, R)) + trace_term) / max(n_obs_total, 1),
                     np.finfo(float).tiny)
    return EMResult(W, mean, sigma2, history, it, converged, cancelled)
