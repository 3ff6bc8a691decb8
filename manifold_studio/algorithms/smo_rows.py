"""Kernel rows formed when SMO first needs them (libsvm's way), for :mod:`manifold_studio.algorithms.smo`.

An SMO run touches a small part of its variables (on digits, about 55 of the 360 points of a
pair of classes, about the support vectors), so most of the kernel matrix is never needed.
:class:`KernelRows` describes the kernel of dense points for the linear, rbf, poly and sigmoid
kernels; the solver computes row i (compiled, :func:`row_py`) when variable i first enters a
working set.

A one-vs-one fit hands every pair of classes the same buffer for its rows (:class:`KernelRows`
``buffer``), so the memory is not allocated and faulted in again for each pair.

The products x_i·x_t are summed feature by feature in order (fused multiply-adds), the same for
every t, so K[i, t] == K[t, i] exactly and the diagonal (:func:`diag_py`) equals K[t, t]; the
kernel is then applied as :func:`manifold_studio.algorithms.kernels.kernel_matrix` does (the
values agree with it to rounding: BLAS sums the products in another order).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["ROW_KERNELS", "KernelRows", "row_py", "diag_py", "dense_arrays"]

#: kernels whose rows are formed here (the code the compiled functions read from ``kp[0]``)
ROW_KERNELS = {"linear": 1, "rbf": 2, "poly": 3, "sigmoid": 4}


def _segment_py(out, o, P, PT, sq, kp, i, lo, hi):
    """out[o + t - lo] = k(x_i, x_t) for the points t in [lo, hi).

    The loops index views from 0 (an index computed as an offset plus t keeps numba's
    negative-index check in the loop, which stops LLVM from vectorising it: 4 times slower)."""
    d = P.shape[1]
    cnt = hi - lo
    v = out[o:o + cnt]
    s = sq[lo:hi]
    for t in range(cnt):
        v[t] = 0.0
    j = 0
    while j + 4 <= d:      # four features per sweep, added in order (the same sums as one by one)
        x0, x1, x2, x3 = P[i, j], P[i, j + 1], P[i, j + 2], P[i, j + 3]
        r0, r1, r2, r3 = PT[j][lo:hi], PT[j + 1][lo:hi], PT[j + 2][lo:hi], PT[j + 3][lo:hi]
        for t in range(cnt):
            v[t] = (((v[t] + x0 * r0[t]) + x1 * r1[t]) + x2 * r2[t]) + x3 * r3[t]
        j += 4
    while j < d:
        x0 = P[i, j]
        r0 = PT[j][lo:hi]
        for t in range(cnt):
            v[t] += x0 * r0[t]
        j += 1
    code = int(kp[0])
    gamma, coef0, degree = kp[1], kp[2], kp[3]
    if code == 2:
        g2 = 2.0 * gamma
        a = gamma * sq[i]
        for t in range(cnt):
            v[t] = math.exp(min((g2 * v[t] - a) - gamma * s[t], 0.0))
    elif code == 3:
        for t in range(cnt):
            v[t] = math.pow(gamma * v[t] + coef0, degree)
    elif code == 4:
        for t in range(cnt):
            v[t] = math.tanh(gamma * v[t] + coef0)


def row_py(K, have, P, PT, sq, kp, i):
    """Row i of the kernel of the points P, written into K[i] (compiled by the solver)."""
    _segment(K[i], 0, P, PT, sq, kp, i, 0, P.shape[0])
    have[i] = True


def diag_py(P, kp, sq, diag):
    """sq[t] = x_t·x_t and diag[t] = k(x_t, x_t), with the arithmetic of the rows."""
    code = int(kp[0])
    gamma, coef0, degree = kp[1], kp[2], kp[3]
    g2 = 2.0 * gamma
    for t in range(P.shape[0]):
        v = 0.0
        for j in range(P.shape[1]):
            v += P[t, j] * P[t, j]
        sq[t] = v
        if code == 2:
            v = math.exp(min((g2 * v - gamma * sq[t]) - gamma * sq[t], 0.0))
        elif code == 3:
            v = math.pow(gamma * v + coef0, degree)
        elif code == 4:
            v = math.tanh(gamma * v + coef0)
        diag[t] = v


_segment = None     # the compiled _segment_py, set by compile_rows() (row_py calls it)
_compiled = None


def compile_rows():
    """(compiled row_py, compiled diag_py), compiled once (numba imported only here)."""
    global _segment, _compiled
    if _compiled is None:
        import numba

        def compiled(f):
            try:
                return numba.njit(cache=True, nogil=True, fastmath={"contract"})(f)
            except (RuntimeError, OSError):
                return numba.njit(nogil=True, fastmath={"contract"})(f)

        _segment = compiled(_segment_py)
        _compiled = (compiled(row_py), compiled(diag_py))
    return _compiled


class KernelRows:
    """The kernel matrix of dense points for :func:`~manifold_studio.algorithms.smo.solve_smo`,
    formed row by row on demand.

    ``kernel`` one of :data:`ROW_KERNELS`; ``gamma``, ``coef0``, ``degree`` as in
    :func:`manifold_studio.algorithms.kernels.kernel_matrix`. ``buffer``: a float array of at
    least m² values to hold the rows (reused by the caller from problem to problem)."""

    def __init__(self, X: np.ndarray, kernel: str, gamma: float, coef0: float = 0.0, degree: float = 3,
                 *, buffer: np.ndarray | None = None):
        self.P = np.ascontiguousarray(X, dtype=float)
        self.kp = np.array([ROW_KERNELS[kernel], gamma, coef0, degree], dtype=float)
        self.buffer = buffer

    def arrays(self):
        """The solver's arrays: (rows, rows present, P, Pᵀ, squared norms, kernel parameters,
        diagonal)."""
        P = self.P
        m = P.shape[0]
        sq, diag = np.empty(m), np.empty(m)
        compile_rows()[1](P, self.kp, sq, diag)
        K = (np.empty((m, m)) if self.buffer is None or self.buffer.size < m * m
             else self.buffer[:m * m].reshape(m, m))
        return K, np.zeros(m, dtype=np.bool_), P, np.ascontiguousarray(P.T), sq, self.kp, diag


def dense_arrays(K: np.ndarray):
    """The arrays of :meth:`KernelRows.arrays` for a given kernel matrix (every row present)."""
    K = np.ascontiguousarray(K, dtype=float)
    n = K.shape[0]
    empty = np.empty((0, 0))
    return K, np.ones(n, dtype=np.bool_), empty, empty, np.empty(0), np.zeros(4), np.diagonal(K).copy()
