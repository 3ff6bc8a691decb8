"""The compiled part of SMO (:mod:`manifold_studio.algorithms.smo`): the steps (working-set
selection, two-variable update, shrinking, in :func:`smo_slice`) and the kernel rows they form.

Kernel rows on demand (libsvm's way): an SMO run touches a small part of its variables (on
digits, about 55 of the 360 points of a pair of classes, about the support vectors), so most of
the kernel matrix is never needed. :class:`KernelRows` describes the kernel of dense points for
the linear, rbf, poly and sigmoid kernels; the steps compute row i (:func:`row_py`) when variable
i first enters a working set. A one-vs-one fit hands every pair of classes the same buffer for
its rows (:class:`KernelRows` ``buffer``), so the memory is not allocated and faulted in again
for each pair. The products x_i·x_t are summed feature by feature in order (fused multiply-adds),
then the kernel is applied; the values agree with
:func:`manifold_studio.algorithms.kernels.kernel_matrix` to rounding (BLAS sums the products in
another order; the rbf kernel's exponential comes from :func:`exp_nonpositive_py`, within 2 ulp,
vectorised).

The compiled functions that call one another live in this one file: numba's disk cache of a
function is renewed when its own file changes, not when a function it calls changes elsewhere.
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms.jit import jit

__all__ = ["ROW_KERNELS", "KernelRows", "row_py", "diag_py", "exp_nonpositive_py", "dense_arrays", "compile_rows",
           "helpers", "smo_slice", "new_state", "N_ACT", "ITER"]

#: kernels whose rows are formed here (the code the compiled functions read from ``kp[0]``)
ROW_KERNELS = {"linear": 1, "rbf": 2, "poly": 3, "sigmoid": 4}


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01     # ln 2 in two parts (fdlibm): k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10


def exp_nonpositive_py(v, bits):
    """v[t] = exp(v[t]) for values v[t] <= 0, in loops LLVM vectorises (numba's math.exp is one
    libm call per value, 40 % of the time of an rbf row).

    exp(x) = 2^k exp(r) with k = round(x / ln 2), |r| <= ln 2 / 2; exp(r) by its Taylor
    polynomial of degree 13 (truncation error below 1e-17 relative) in Horner form, 2^k from its
    exponent bits (``bits``: int64 scratch of the same length). Within 2 ulp of the correctly
    rounded value; exp(x) < 2^-1022 (x < -708, where exp is subnormal) gives 0."""
    n = v.shape[0]
    scale = bits.view(np.float64)
    for t in range(n):
        x = v[t]
        k = np.floor(x * _LOG2E + 0.5)
        r = (x - k * _LN2_HI) - k * _LN2_LO
        q = 1.6059043836821613e-10
        q = q * r + 2.08767569878681e-09
        q = q * r + 2.505210838544172e-08
        q = q * r + 2.755731922398589e-07
        q = q * r + 2.7557319223985893e-06
        q = q * r + 2.48015873015873e-05
        q = q * r + 0.0001984126984126984
        q = q * r + 0.001388888888888889
        q = q * r + 0.008333333333333333
        q = q * r + 0.041666666666666664
        q = q * r + 0.16666666666666666
        q = q * r + 0.5
        q = q * r + 1.0
        q = q * r + 1.0
        e = np.int64(k) + 1023
        bits[t] = (e if e > 0 else 0) << 52
        v[t] = q
    for t in range(n):
        v[t] *= scale[t]


def row_py(K, have, P, PT, sq, kp, i):
    """Row i of the kernel of the points P, written into K[i] (compiled by the solver).

    The row is a view indexed from 0 (an index computed as an offset plus t keeps numba's
    negative-index check in the loop, which stops LLVM from vectorising it: 4 times slower)."""
    m, d = P.shape
    v = K[i]
    for t in range(m):
        v[t] = 0.0
    j = 0
    while j + 4 <= d:      # four features per sweep, added in order (the same sums as one by one)
        x0, x1, x2, x3 = P[i, j], P[i, j + 1], P[i, j + 2], P[i, j + 3]
        r0, r1, r2, r3 = PT[j], PT[j + 1], PT[j + 2], PT[j + 3]
        for t in range(m):
            v[t] = (((v[t] + x0 * r0[t]) + x1 * r1[t]) + x2 * r2[t]) + x3 * r3[t]
        j += 4
    while j < d:
        x0 = P[i, j]
        r0 = PT[j]
        for t in range(m):
            v[t] += x0 * r0[t]
        j += 1
    code = int(kp[0])
    gamma, coef0, degree = kp[1], kp[2], kp[3]
    if code == 2:
        g2 = 2.0 * gamma
        a = sq[i]
        for t in range(m):
            v[t] = min(g2 * v[t] - gamma * (a + sq[t]), 0.0)
        _exp(v, np.empty(m, dtype=np.int64))
    elif code == 3:
        for t in range(m):
            v[t] = math.pow(gamma * v[t] + coef0, degree)
    elif code == 4:
        for t in range(m):
            v[t] = math.tanh(gamma * v[t] + coef0)
    have[i] = True


def diag_py(P, kp, sq, diag):
    """sq[t] = x_t·x_t and diag[t] = k(x_t, x_t), with the arithmetic of the rows."""
    code = int(kp[0])
    gamma, coef0, degree = kp[1], kp[2], kp[3]
    for t in range(P.shape[0]):
        v = 0.0
        for j in range(P.shape[1]):
            v += P[t, j] * P[t, j]
        sq[t] = v
        if code == 2:
            v = 1.0     # exp(-gamma ||x - x||^2)
        elif code == 3:
            v = math.pow(gamma * v + coef0, degree)
        elif code == 4:
            v = math.tanh(gamma * v + coef0)
        diag[t] = v


_exp = None         # the compiled exp_nonpositive_py, set by compile_rows() (row_py calls it)
_compiled = None


def compile_rows():
    """(compiled row_py, compiled diag_py), compiled once (numba imported only here)."""
    global _exp, _compiled
    if _compiled is None:
        import numba

        def compiled(f):
            try:
                return numba.njit(cache=True, nogil=True, fastmath={"contract"})(f)
            except (RuntimeError, OSError):
                return numba.njit(nogil=True, fastmath={"contract"})(f)

        _exp = compiled(exp_nonpositive_py)
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


_TAU = 1e-12
# state slots (int64 array shared across slices)
N_ACT, COUNTER, UNSHRUNK, ITER = 0, 1, 2, 3


def new_state(n: int) -> np.ndarray:
    """The state of a new run on n variables: all active, shrinking first considered after
    min(n, 1000) steps, none unshrunk, no step done."""
    return np.array([n, min(n, 1000) + 1, 0, 0], dtype=np.int64)


def _reconstruct_py(K, y, alpha, G, act, n_act):
    """Exact gradient of the variables outside the active set (compiled by :func:`helpers`)."""
    n = y.shape[0]
    inactive = np.ones(n, dtype=np.bool_)
    for p in range(n_act):
        inactive[act[p]] = False
    sv = np.flatnonzero(alpha > 0.0)
    for k in range(n):
        if inactive[k]:
            s = 0.0
            for q in range(sv.shape[0]):
                j = sv[q]
                s += alpha[j] * y[j] * K[j, k]
            G[k] = y[k] * s - 1.0


_reconstruct_inline = None   # the compiled _reconstruct_py, set by helpers() before first use
_row_inline = None           # the compiled row_py, likewise


def helpers():
    """Compile the helpers the slice function calls (numba resolves them as globals when it
    compiles ``smo_slice``; the project's lazy ``jit`` wrappers cannot be called from
    compiled code); returns the compiled gradient reconstruction. Deferred like ``jit`` so
    importing this module does not import numba. They live in the file of ``smo_slice``:
    numba's disk cache of a function is renewed when its own file changes, not when a
    function it calls changes in another file."""
    global _reconstruct_inline, _row_inline
    if _reconstruct_inline is None:
        import numba

        _row_inline = compile_rows()[0]
        try:
            _reconstruct_inline = numba.njit(cache=True, nogil=True)(_reconstruct_py)
        except (RuntimeError, OSError):
            _reconstruct_inline = numba.njit(nogil=True)(_reconstruct_py)
    return _reconstruct_inline


@jit
def smo_slice(K, have, P, PT, sq, kp, diag, y, alpha, G, act, st, C, eps, shrinking, n_steps):
    """Run up to n_steps SMO steps; returns (converged, KKT violation).

    One compiled function (numba cannot call the lazy wrappers of other compiled functions):
    shrinking, the working-set selection and the two-variable update are inlined. Rows of K
    not yet formed (``have``) are computed from the points P when first needed."""
    n = y.shape[0]
    gap = np.inf
    rebuild = False
    for _ in range(n_steps):
        if rebuild:  # exact gradient of the shrunk variables, then all active again
            _reconstruct_inline(K, y, alpha, G, act, st[N_ACT])
            for p in range(n):
                act[p] = p
            st[N_ACT] = n
            rebuild = False
            st[COUNTER] = 2   # select on the whole problem first, shrink at the next step
        n_act = st[N_ACT]
        st[COUNTER] -= 1
        if st[COUNTER] == 0:
            st[COUNTER] = min(n, 1000)
            if shrinking:
                gmax1 = -np.inf
                gmax2 = -np.inf
                for p in range(n_act):
                    t = act[p]
                    if y[t] > 0:
                        if alpha[t] < C:
                            gmax1 = max(gmax1, -G[t])
                        if alpha[t] > 0.0:
                            gmax2 = max(gmax2, G[t])
                    else:
                        if alpha[t] < C:
                            gmax2 = max(gmax2, -G[t])
                        if alpha[t] > 0.0:
                            gmax1 = max(gmax1, G[t])
                if st[UNSHRUNK] == 0 and gmax1 + gmax2 <= eps * 10.0:
                    st[UNSHRUNK] = 1
                    if n_act < n:
                        rebuild = True
                        continue
                keep = 0
                for p in range(n_act):
                    t = act[p]
                    shrunk = False
                    if alpha[t] >= C:
                        shrunk = (-G[t] > gmax1) if y[t] > 0 else (-G[t] > gmax2)
                    elif alpha[t] <= 0.0:
                        shrunk = (G[t] > gmax2) if y[t] > 0 else (G[t] > gmax1)
                    if not shrunk:
                        act[keep] = t
                        keep += 1
                st[N_ACT] = keep
                n_act = keep
        # working set selection (WSS 2)
        gmax = -np.inf
        i = -1
        for p in range(n_act):
            t = np.uint64(act[p])   # unsigned: no negative-index check
            if y[t] > 0:
                if alpha[t] < C and -G[t] >= gmax:
                    gmax = -G[t]
                    i = np.int64(t)
            else:
                if alpha[t] > 0.0 and G[t] >= gmax:
                    gmax = G[t]
                    i = np.int64(t)
        gmax2 = -np.inf
        obj_min = np.inf
        j = -1
        if i >= 0:
            if not have[i]:
                _row_inline(K, have, P, PT, sq, kp, i)
            kii = diag[i]
            for p in range(n_act):
                t = np.uint64(act[p])   # unsigned: no negative-index check
                # -y_t grad_t of the points that may move down (y = +1 with alpha > 0, y = -1
                # with alpha < C); the second-order gain of the pair (i, t)
                if y[t] > 0:
                    if not alpha[t] > 0.0:
                        continue
                    g = G[t]
                else:
                    if not alpha[t] < C:
                        continue
                    g = -G[t]
                if g >= gmax2:
                    gmax2 = g
                diff = gmax + g
                if diff > 0.0:
                    quad = kii + diag[t] - 2.0 * K[i, t]
                    obj = -(diff * diff) / (quad if quad > 0.0 else _TAU)
                    if obj <= obj_min:
                        j = np.int64(t)
                        obj_min = obj
        gap = gmax + gmax2
        if gap < eps or j == -1:
            if n_act < n:   # optimal on the active set: check the whole problem
                rebuild = True
                continue
            return True, gap
        # two-variable update, clipped to the box and the line Σ α u = const
        st[ITER] += 1
        if not have[j]:
            _row_inline(K, have, P, PT, sq, kp, j)
        ai, aj = alpha[i], alpha[j]
        quad = diag[i] + diag[j] - 2.0 * K[i, j]
        if quad <= 0.0:
            quad = _TAU
        if y[i] != y[j]:
            delta = (-G[i] - G[j]) / quad
            diff = ai - aj
            ni, nj = ai + delta, aj + delta
            if diff > 0.0:
                if nj < 0.0:
                    nj = 0.0
                    ni = diff
            else:
                if ni < 0.0:
                    ni = 0.0
                    nj = -diff
            if diff > 0.0:
                if ni > C:
                    ni = C
                    nj = C - diff
            else:
                if nj > C:
                    nj = C
                    ni = C + diff
        else:
            delta = (G[i] - G[j]) / quad
            total = ai + aj
            ni, nj = ai - delta, aj + delta
            if total > C:
                if ni > C:
                    ni = C
                    nj = total - C
            else:
                if nj < 0.0:
                    nj = 0.0
                    ni = total
            if total > C:
                if nj > C:
                    nj = C
                    ni = total - C
            else:
                if ni < 0.0:
                    ni = 0.0
                    nj = total
        alpha[i] = ni
        alpha[j] = nj
        di = (ni - ai) * y[i]
        dj = (nj - aj) * y[j]
        Ki = K[i]
        Kj = K[j]
        if n_act == n:      # nothing shrunk: contiguous (vectorised) update
            for t in range(n):
                G[t] += y[t] * (Ki[t] * di + Kj[t] * dj)
        else:
            for p in range(n_act):
                t = np.uint64(act[p])   # unsigned: no negative-index check
                G[t] += y[t] * (Ki[t] * di + Kj[t] * dj)
    if rebuild:
        _reconstruct_inline(K, y, alpha, G, act, st[N_ACT])
        for p in range(n):
            act[p] = p
        st[N_ACT] = n
    return False, gap
