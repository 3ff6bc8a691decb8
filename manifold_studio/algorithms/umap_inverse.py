"""UMAP's inverse transform (umap-learn's documented approach): a point of the map is sent back
to the data space as the membership-weighted average of the training points whose places are
nearest to it (``min(n_features, n_train)`` of them, memberships ``1 / (1 + a d^(2b))`` in the
map), then moved in the data space by SGD against those training points: attraction to each
(edge weight over its ``sigma``) and repulsion from random training points by their fuzzy
memberships ``exp(-(d - rho) / sigma)`` (umap-learn's optimize_layout_inverse, Euclidean data
space). Each point uses a random stream seeded from its own map coordinates, so the result of a
row does not depend on the other rows (sample-wise)."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import umap_layout as L
from manifold_studio.algorithms.jit import KernelModule
from manifold_studio.algorithms.neighbors import NeighborIndex
from manifold_studio.algorithms.threads import run_shares
from manifold_studio.algorithms.umap_layout import PLACE_MIN_ROWS, row_seeds

__all__ = ["inverse_points"]


_kernels = KernelModule(globals(), needs=(L.compile_kernels,))   # calls the layout's schedule and generator
kernel = _kernels.mark
compile_kernels = _kernels.compile


@kernel(fastmath=True)
def _inverse_rows(idx, w, X_train, init, seeds, sigmas, rhos, gamma, alpha0, n_epochs, neg_rate, out):
    m, k = idx.shape
    dim = X_train.shape[1]
    n_tail = X_train.shape[0]
    eps = np.empty(k)
    next_s = np.empty(k)
    eps_n = np.empty(k)
    next_n = np.empty(k)
    state = np.empty(3, dtype=np.int64)
    x = np.empty(dim)
    for r in range(m):
        L._row_schedule(w[r], 0, neg_rate, eps, next_s, eps_n, next_n)
        L._start_row(r, seeds, init, state, x)
        for n in range(n_epochs):
            alpha = alpha0 * (1.0 - n / n_epochs)
            for j in range(k):
                if eps[j] <= 0.0 or next_s[j] > n:
                    continue
                c = idx[r, j]
                dist = 0.0
                for d in range(dim):
                    t = x[d] - X_train[c, d]
                    dist += t * t
                dist = np.sqrt(dist)
                coeff = -1.0 / (w[r, j] * sigmas[c] + 1e-6) / (1e-6 + dist)
                for d in range(dim):
                    g = coeff * (x[d] - X_train[c, d])
                    x[d] += (4.0 if g > 4.0 else (-4.0 if g < -4.0 else g)) * alpha
                next_s[j] += eps[j]
                n_neg = int((n - next_n[j]) / eps_n[j])
                for _ in range(n_neg):
                    c = L._draw(state, n_tail)
                    dist = 0.0
                    for d in range(dim):
                        t = x[d] - X_train[c, d]
                        dist += t * t
                    dist = np.sqrt(dist)
                    wh = np.exp(-max(dist - rhos[c], 1e-6) / (sigmas[c] + 1e-6))
                    coeff = gamma * wh / ((1.0 - wh) * sigmas[c] + 1e-6) / (1e-6 + dist)
                    for d in range(dim):
                        g = coeff * (x[d] - X_train[c, d])
                        x[d] += (4.0 if g > 4.0 else (-4.0 if g < -4.0 else g)) * alpha
                next_n[j] += n_neg * eps_n[j]
        for d in range(dim):
            out[r, d] = x[d]


def inverse_points(Y_new: np.ndarray, embedding: np.ndarray, X_train: np.ndarray, sigmas: np.ndarray,
                   rhos: np.ndarray, a: float, b: float, *, seed: int, n_epochs: int,
                   learning_rate: float, negative_sample_rate: int, gamma: float = 1.0) -> np.ndarray:
    """Data-space points (m, n_features) for map points ``Y_new`` (m, n_components)."""
    Y_new = np.ascontiguousarray(Y_new, dtype=float)
    X_train = np.ascontiguousarray(X_train, dtype=float)
    k = min(X_train.shape[1], X_train.shape[0])
    d, idx = NeighborIndex(np.asarray(embedding, dtype=float)).query(Y_new, k)
    w = 1.0 / (1.0 + a * d ** (2.0 * b))
    wn = w / w.sum(axis=1, keepdims=True)
    init = np.zeros((Y_new.shape[0], X_train.shape[1]))
    for j in range(k):                      # column by column: no batch-dependent BLAS
        init += wn[:, j:j + 1] * X_train[idx[:, j]]
    if n_epochs <= 0 or Y_new.shape[0] == 0:
        return init
    out = np.empty_like(init)
    seeds = row_seeds(Y_new, seed)
    idx = np.ascontiguousarray(idx, dtype=np.intp)
    sig = np.asarray(sigmas, dtype=float)
    rho = np.asarray(rhos, dtype=float)
    compile_kernels()
    run_shares(lambda s, e: _inverse_rows(idx[s:e], w[s:e], X_train, init[s:e], seeds[s:e], sig, rho, gamma,
                                          learning_rate, n_epochs, float(negative_sample_rate), out[s:e]),
               Y_new.shape[0], PLACE_MIN_ROWS)
    return out
