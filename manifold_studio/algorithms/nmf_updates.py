"""Non-negative matrix factorisation X ≈ W H: initialisations, Lee & Seung's multiplicative
updates for the Frobenius and the Kullback–Leibler costs (seed 002; Lee & Seung, NIPS 2000),
the costs themselves, and the solvers for new rows with H fixed.

Frobenius  ‖X − WH‖²:  H ← H ∘ (WᵀX) / (WᵀW H),        W ← W ∘ (X Hᵀ) / (W H Hᵀ)
KL  D(X‖WH) = Σ X log(X/WH) − X + WH:
           H ← H ∘ Wᵀ(X / WH) / (Wᵀ1),      W ← W ∘ (X / WH) Hᵀ / (1 Hᵀ)
Each update does not increase its cost (Lee & Seung's theorems 1 and 2). As in
scikit-learn's ``solver="mu"``, W is updated before H within an iteration and zero
denominators (and, for KL, ratios' denominators below ``EPS``) are replaced by ``EPS``.

A sparse X (scipy.sparse CSR) is never densified: the products X Hᵀ and Xᵀ W are sparse-dense,
the KL ratio X / WH is needed at X's stored entries only (WH evaluated there), and the costs use
‖X − WH‖² = ‖X‖² − 2 Σ X∘WH + Σ (WᵀW)∘(HHᵀ) and Σ WH = (Σ_rows W)(Σ_cols H). The iterates equal
the dense ones to rounding.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.checks import check_random_state, is_sparse
from manifold_studio.algorithms.pca_solvers import _randomized_route

EPS = np.finfo(np.float64).eps
LOSSES = ("frobenius", "kl")


# -- initialisation -----------------------------------------------------------------------

def _truncated_svd(X, k, random_state):
    """Leading k singular triplets of the (uncentred) X by a seeded randomized SVD."""
    s, Vt = _randomized_route(X, k, random_state, progress=_NoProgress())
    s, Vt = s[:k], Vt[:k]
    U = np.asarray(X @ Vt.T) / np.where(s > 0, s, 1.0)
    return U, s, Vt


class _NoProgress:
    def checkpoint(self, fraction, message=""):
        return None


def initialize(X: np.ndarray, k: int, init: str, random_state=None):
    """Initial (W, H): 'random' (|N(0, 1)|·sqrt(mean(X)/k)), 'nndsvd' (Boutsidis & Gallopoulos,
    zeros kept) or 'nndsvda' (the zeros of nndsvd replaced by mean(X), better for the
    multiplicative updates, which cannot move a zero)."""
    n, d = X.shape
    if init == "random":
        rng = check_random_state(random_state)
        avg = np.sqrt(X.mean() / k)
        H = np.abs(avg * rng.standard_normal((k, d)))
        W = np.abs(avg * rng.standard_normal((n, k)))
        return W, H
    U, S, V = _truncated_svd(X, k, random_state)
    W, H = np.zeros((n, k)), np.zeros((k, d))
    W[:, 0] = np.sqrt(S[0]) * np.abs(U[:, 0])
    H[0] = np.sqrt(S[0]) * np.abs(V[0])
    for j in range(1, k):
        x, y = U[:, j], V[j]
        xp, yp = np.maximum(x, 0), np.maximum(y, 0)
        xn, yn = np.maximum(-x, 0), np.maximum(-y, 0)
        xpn, ypn, xnn, ynn = (np.linalg.norm(v) for v in (xp, yp, xn, yn))
        mp, mn = xpn * ypn, xnn * ynn
        if mp > mn:
            u, v, sigma = xp / xpn, yp / ypn, mp
        elif mn > 0:
            u, v, sigma = xn / xnn, yn / ynn, mn
        else:
            continue
        lbd = np.sqrt(S[j] * sigma)
        W[:, j], H[j] = lbd * u, lbd * v
    W[W < 1e-6] = 0
    H[H < 1e-6] = 0
    if init == "nndsvda":
        avg = X.mean()
        W[W == 0] = avg
        H[H == 0] = avg
    return W, H


# -- sparse X: WH at the stored entries only ------------------------------------------------

def _rows_of_entries(X) -> np.ndarray:
    return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))


def wh_at_entries(X, W, H) -> np.ndarray:
    """(WH)_ij at the stored entries of the CSR matrix X, in X.data's order (chunked)."""
    rows, cols = _rows_of_entries(X), X.indices
    out = np.empty(X.nnz)
    step = 1 << 16
    for start in range(0, X.nnz, step):
        stop = min(start + step, X.nnz)
        out[start:stop] = np.einsum("ij,ji->i", W[rows[start:stop]], H[:, cols[start:stop]])
    return out


def _kl_ratio(X, W, H):
    """X / max(WH, EPS) as a sparse matrix with X's pattern."""
    ratio = X.data / np.maximum(wh_at_entries(X, W, H), EPS)
    return sp.csr_array((ratio, X.indices, X.indptr), shape=X.shape)


# -- costs --------------------------------------------------------------------------------

def frobenius_cost(X, W, H) -> float:
    """½‖X − WH‖² (scikit-learn's beta divergence for beta = 2)."""
    if is_sparse(X):
        x_sq = float(X.data @ X.data)
        cross = float(X.data @ wh_at_entries(X, W, H))
        wh_sq = float(np.einsum("ij,ij->", W.T @ W, H @ H.T))
        return 0.5 * max(x_sq - 2.0 * cross + wh_sq, 0.0)
    R = X - W @ H
    return 0.5 * float(np.einsum("ij,ij->", R, R))


def kl_cost(X, W, H) -> float:
    """D(X‖WH) = Σ X log(X/WH) − X + WH (0 log 0 = 0; WH floored at EPS where X > 0)."""
    if is_sparse(X):
        pos = X.data > 0
        wh = np.maximum(wh_at_entries(X, W, H)[pos], EPS)
        data = X.data[pos]
        return float(np.sum(data * np.log(data / wh)) - X.data.sum() + W.sum(axis=0) @ H.sum(axis=1))
    WH = W @ H
    pos = X > 0
    ratio = X[pos] / np.maximum(WH[pos], EPS)
    return float(np.sum(X[pos] * np.log(ratio)) - X.sum() + WH.sum())


def cost(X, W, H, loss: str) -> float:
    return frobenius_cost(X, W, H) if loss == "frobenius" else kl_cost(X, W, H)


def reconstruction_error(X, W, H, loss: str) -> float:
    """scikit-learn's ``reconstruction_err_``: sqrt(2 · cost), i.e. ‖X − WH‖_F for Frobenius."""
    return float(np.sqrt(max(2.0 * cost(X, W, H, loss), 0.0)))


# -- one multiplicative update ------------------------------------------------------------

def _safe(den):
    den[den == 0] = EPS
    return den


def update_w(X, W, H, loss: str, buf=None) -> None:
    """W ← W ∘ numerator / denominator, in place."""
    if loss == "frobenius":
        num = np.asarray(X @ H.T)
        W *= num / _safe(W @ (H @ H.T))
    elif is_sparse(X):
        W *= np.asarray(_kl_ratio(X, W, H) @ H.T) / _safe(H.sum(axis=1))[None, :]
    else:
        WH = np.matmul(W, H, out=buf)
        np.maximum(WH, EPS, out=WH)
        np.divide(X, WH, out=WH)
        W *= (WH @ H.T) / _safe(H.sum(axis=1))[None, :]


def update_h(X, W, H, loss: str, buf=None) -> None:
    """H ← H ∘ numerator / denominator, in place."""
    if loss == "frobenius":
        WtX = np.asarray(X.T @ W).T if is_sparse(X) else W.T @ X
        H *= WtX / _safe((W.T @ W) @ H)
    elif is_sparse(X):
        H *= np.asarray(_kl_ratio(X, W, H).T @ W).T / _safe(W.sum(axis=0))[:, None]
    else:
        WH = np.matmul(W, H, out=buf)
        np.maximum(WH, EPS, out=WH)
        np.divide(X, WH, out=WH)
        H *= (W.T @ WH) / _safe(W.sum(axis=0))[:, None]


def mu_step(X, W, H, loss: str, buf=None) -> None:
    """One iteration of the multiplicative updates (W then H, as scikit-learn), in place."""
    update_w(X, W, H, loss, buf)
    update_h(X, W, H, loss, buf)


# -- new rows with H fixed ----------------------------------------------------------------

def coefficients_nnls(X, H) -> np.ndarray:
    """argmin_{w ≥ 0} ‖x − wH‖ for every row x (scipy's NNLS, row by row: sample-wise)."""
    from scipy.optimize import nnls  # lazy: kept off the start-up

    A = np.ascontiguousarray(H.T)
    out = np.empty((X.shape[0], H.shape[0]))
    for i, x in enumerate(X):
        out[i] = nnls(A, x)[0]
    return out


def coefficients_kl(X, H, max_iter: int = 200, tol: float = 1e-4) -> np.ndarray:
    """Minimise D(x‖wH) over w ≥ 0 for every row by the multiplicative update with H fixed.

    Each row starts from the same rule (w_j = Σx / (k Σ_l H_jl)) and stops on its own
    (relative change of w below ``tol``), so the result is sample-wise."""
    m, k = X.shape[0], H.shape[0]
    hsum = _safe(H.sum(axis=1).copy())
    W = np.maximum(X.sum(axis=1, keepdims=True) / (k * hsum[None, :]), EPS)
    active = np.arange(m)
    for _ in range(max_iter):
        if not active.size:
            break
        Wa = W[active]
        WH = np.maximum(Wa @ H, EPS)
        new = Wa * ((X[active] / WH) @ H.T) / hsum[None, :]
        change = np.abs(new - Wa).sum(axis=1) / np.maximum(np.abs(Wa).sum(axis=1), EPS)
        W[active] = new
        active = active[change >= tol]
    return W
