"""The per-example loops of :mod:`manifold_studio.algorithms.linear_loops` on CSR data.

Same rules, same visiting order, same signatures except that the dense ``X`` is replaced by
the three arrays of a CSR matrix (``data, indices, indptr``): the dot products and the updates
touch only the stored values of each example, so an epoch costs O(nnz) instead of O(n·d)
(the L2 shrinkage ``a ← shrink·a``, when used, still touches every coefficient). Without
shrinkage the results equal the dense loops' exactly (adding the products with zeros changes no
floating-point sum); with it they agree to rounding.
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms.jit import jit

__all__ = ["perceptron_epoch_csr", "gradient_epoch_csr", "softmax_epoch_csr"]


@jit
def perceptron_epoch_csr(data, indices, indptr, u, a, b, tau, order, start, stop):
    mistakes = 0
    for t in range(start, stop):
        i = order[t]
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += a[indices[p]] * data[p]
        s += b
        if s * u[i] <= 0.0:
            g = tau * u[i]
            for p in range(indptr[i], indptr[i + 1]):
                a[indices[p]] += g * data[p]
            b += g
            mistakes += 1
    return b, mistakes


@jit
def gradient_epoch_csr(data, indices, indptr, u, a, b, tau, shrink, loss_code, order, start, stop):
    d = a.shape[0]
    for t in range(start, stop):
        i = order[t]
        z = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            z += a[indices[p]] * data[p]
        z += b
        if loss_code == 0:
            r = u[i] - z
        else:
            m = u[i] * z
            if m > 0.0:
                e = math.exp(-m)
                r = u[i] * e / (1.0 + e)
            else:
                r = u[i] / (1.0 + math.exp(m))
        g = tau * r
        if shrink != 1.0:
            for j in range(d):
                a[j] *= shrink
        for p in range(indptr[i], indptr[i + 1]):
            a[indices[p]] += g * data[p]
        b += g
    return b, stop - start


@jit
def softmax_epoch_csr(data, indices, indptr, y_idx, W, b, tau, shrink, order, start, stop, z):
    K, d = W.shape
    for t in range(start, stop):
        i = order[t]
        z_max = -np.inf
        for k in range(K):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += W[k, indices[p]] * data[p]
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
            if shrink != 1.0:
                for j in range(d):
                    W[k, j] *= shrink
            for p in range(indptr[i], indptr[i + 1]):
                W[k, indices[p]] += g * data[p]
            b[k] += g
    return stop - start
