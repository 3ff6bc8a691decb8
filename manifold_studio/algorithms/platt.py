"""Probabilities from SVM decision values.

Platt scaling fits P(+1 | f) = 1 / (1 + exp(A f + B)) to held-out decision values f by
maximum likelihood with Platt's regularised targets, using the Newton method with
backtracking line search of Lin, Lin & Weng (2007, "A note on Platt's probabilistic outputs
for support vector machines"), written stably. Several classes combine the pairwise
probabilities r_ij = P(i | i or j, x) by the pairwise coupling of Wu, Lin & Weng (2004,
method 2): min_p Σ_i Σ_{j≠i} (r_ji p_i − r_ij p_j)² subject to Σ p = 1, p ≥ 0.
"""
from __future__ import annotations

import numpy as np

__all__ = ["sigmoid_train", "sigmoid_predict", "pairwise_coupling"]


def _objective(f, t, A, B):
    z = f * A + B
    # t·z + log(1 + e^−z), computed without overflow
    return float(np.sum(np.where(z >= 0, t * z + np.log1p(np.exp(-np.abs(z))),
                                 (t - 1.0) * z + np.log1p(np.exp(-np.abs(z))))))


def sigmoid_train(f, positive, *, max_iter: int = 100, min_step: float = 1e-10,
                  sigma: float = 1e-12, eps: float = 1e-5) -> tuple[float, float]:
    """(A, B) of P(+1 | f) = 1 / (1 + exp(A f + B)); ``positive`` marks the +1 examples."""
    f = np.asarray(f, dtype=float)
    positive = np.asarray(positive, dtype=bool)
    n1 = int(positive.sum())
    n0 = positive.size - n1
    t = np.where(positive, (n1 + 1.0) / (n1 + 2.0), 1.0 / (n0 + 2.0))
    A, B = 0.0, float(np.log((n0 + 1.0) / (n1 + 1.0)))
    fval = _objective(f, t, A, B)
    for _ in range(max_iter):
        z = f * A + B
        e = np.exp(-np.abs(z))
        p = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))      # 1 / (1 + e^z)
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + np.dot(f * f, d2)
        h22 = sigma + d2.sum()
        h21 = np.dot(f, d2)
        d1 = t - p
        g1, g2 = np.dot(f, d1), d1.sum()
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            nA, nB = A + step * dA, B + step * dB
            nf = _objective(f, t, nA, nB)
            if nf < fval + 1e-4 * step * gd:
                A, B, fval = nA, nB, nf
                break
            step /= 2.0
        if step < min_step:   # the line search failed
            break
    return float(A), float(B)


def sigmoid_predict(f, A: float, B: float) -> np.ndarray:
    """1 / (1 + exp(A f + B)) without overflow."""
    z = np.asarray(f, dtype=float) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))


def pairwise_coupling(R: np.ndarray, *, max_iter: int | None = None) -> np.ndarray:
    """Class probabilities (m, k) from pairwise ones R (m, k, k), R[:, i, j] = P(i | i or j).

    The fixed-point iteration of Wu, Lin & Weng (2004, method 2) as libsvm runs it, vectorised
    over samples. Each row stops on its own (libsvm's test max_t |(Qp)_t − pᵀQp| < 0.005 / k on
    that row alone), so a row's probabilities do not depend on the other rows of the call."""
    m, k, _ = R.shape
    Q = -R.transpose(0, 2, 1) * R                         # Q_tj = −r_jt r_tj
    idx = np.arange(k)
    Q[:, idx, idx] = (R ** 2).sum(axis=1) - R[:, idx, idx] ** 2   # Σ_{j≠t} r_jt²
    p = np.full((m, k), 1.0 / k)
    eps = 0.005 / k
    rows = np.arange(m)                                   # rows still iterating
    for _ in range(max_iter or max(100, k)):
        Qa, pa = Q[rows], p[rows]
        Qp = np.einsum("mtj,mj->mt", Qa, pa)
        pQp = np.einsum("mt,mt->m", pa, Qp)
        going = np.max(np.abs(Qp - pQp[:, None]), axis=1) >= eps
        if not going.all():
            rows, Qa, pa, Qp, pQp = rows[going], Qa[going], pa[going], Qp[going], pQp[going]
        if rows.size == 0:
            break
        for t in range(k):
            qtt = Qa[:, t, t]
            diff = (-Qp[:, t] + pQp) / qtt
            pa[:, t] += diff
            pQp = (pQp + diff * (diff * qtt + 2.0 * Qp[:, t])) / (1.0 + diff) ** 2
            Qp = (Qp + diff[:, None] * Qa[:, t, :]) / (1.0 + diff)[:, None]
            pa /= (1.0 + diff)[:, None]
        p[rows] = pa
    return p
