"""Compiled per-example loops of the linear classifiers of seed 003 (numba, via :func:`jit`).

Each function runs the examples ``order[start:stop]`` once, in that order, updating the
weights in place, and returns the new intercept and a count. Callers run an epoch in slices
(``start``/``stop``) and call ``progress.checkpoint`` between the slices, so Cancel takes
effect quickly even on large data.

``perceptron_epoch``          the seed's rule: on every example with u(a·x + b) ≤ 0,
                              a ← a + τ u x, b ← b + τ u (returns b, number of mistakes).
``kernel_perceptron_epoch``   the same rule on a = Σ α_x x (the seed's remark): α counts the
                              mistakes on each example; the scores f = K (τ α u) of the
                              training points are kept up to date (returns b, mistakes).
``gradient_epoch``            the seed's per-example gradient rule (Widrow–Hoff for the
                              squared loss ½(a·x + b − u)², or the logistic loss
                              log(1 + e^(−u(a·x+b)))), with an optional L2 shrinkage of a:
                              a ← shrink·a − τ ∂loss/∂z · x, b ← b − τ ∂loss/∂z.
``softmax_epoch``             the same per-example rule for the multinomial logistic loss
                              log Σ_k e^(z_k) − z_y (z_k = w_k·x + b_k), one output per class:
                              w_k ← shrink·w_k + τ ([y = k] − p_k) x, b_k ← b_k + τ ([y = k] − p_k).
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms.jit import jit

__all__ = ["perceptron_epoch", "kernel_perceptron_epoch", "gradient_epoch", "softmax_epoch", "LOSS_CODES",
           "epoch_slices"]

#: loss names understood by :func:`gradient_epoch`
LOSS_CODES = {"squared": 0, "logistic": 1}


def epoch_slices(n: int, d: int, budget: int = 20_000_000):
    """``(start, stop)`` slices of an epoch of ``n`` examples of dimension ``d``, each about
    ``budget`` multiply-adds (a few tens of milliseconds of compiled work)."""
    step = max(1, int(budget // max(int(d), 1)))
    return [(s, min(n, s + step)) for s in range(0, n, step)]


@jit
def perceptron_epoch(X, u, a, b, tau, order, start, stop):
    d = X.shape[1]
    mistakes = 0
    for t in range(start, stop):
        i = order[t]
        s = 0.0
        for j in range(d):
            s += a[j] * X[i, j]
        s += b
        if s * u[i] <= 0.0:
            g = tau * u[i]
            for j in range(d):
                a[j] += g * X[i, j]
            b += g
            mistakes += 1
    return b, mistakes


@jit
def kernel_perceptron_epoch(K, u, alpha, f, b, tau, order, start, stop):
    n = K.shape[0]
    mistakes = 0
    for t in range(start, stop):
        i = order[t]
        if (f[i] + b) * u[i] <= 0.0:
            g = tau * u[i]
            alpha[i] += 1
            for j in range(n):
                f[j] += g * K[i, j]
            b += g
            mistakes += 1
    return b, mistakes


@jit
def gradient_epoch(X, u, a, b, tau, shrink, loss_code, order, start, stop):
    d = X.shape[1]
    for t in range(start, stop):
        i = order[t]
        z = 0.0
        for j in range(d):
            z += a[j] * X[i, j]
        z += b
        if loss_code == 0:
            r = u[i] - z                       # Widrow–Hoff: −∂/∂z ½(z − u)²
        else:
            m = u[i] * z                       # −∂/∂z log(1 + e^(−u z)) = u σ(−u z)
            if m > 0.0:
                e = math.exp(-m)
                r = u[i] * e / (1.0 + e)
            else:
                r = u[i] / (1.0 + math.exp(m))
        g = tau * r
        if shrink != 1.0:
            for j in range(d):
                a[j] = shrink * a[j] + g * X[i, j]
        else:
            for j in range(d):
                a[j] += g * X[i, j]
        b += g
    return b, stop - start


@jit
def softmax_epoch(X, y_idx, W, b, tau, shrink, order, start, stop, z):
    K, d = W.shape
    for t in range(start, stop):
        i = order[t]
        z_max = -np.inf
        for k in range(K):
            s = 0.0
            for j in range(d):
                s += W[k, j] * X[i, j]
            s += b[k]
            z[k] = s
            if s > z_max:
                z_max = s
        total = 0.0
        for k in range(K):
            z[k] = math.exp(z[k] - z_max)
            total += z[k]
        for k in range(K):
            g = tau * ((1.0 if y_idx[i] == k else 0.0) - z[k] / total)
            for j in range(d):
                W[k, j] = shrink * W[k, j] + g * X[i, j]
            b[k] += g
    return stop - start


def as_order(n: int, rng=None) -> np.ndarray:
    """Visiting order of one epoch: data order, or a permutation drawn from ``rng``."""
    return np.arange(n, dtype=np.int64) if rng is None else rng.permutation(n).astype(np.int64)
