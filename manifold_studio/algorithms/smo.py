"""SMO for the soft-margin SVM dual (seed 003), the libsvm recipe.

The dual of the soft-margin SVM with labels u_i = ±1 and kernel matrix K is::

    min_α  f(α) = ½ Σ_ij α_i α_j u_i u_j K_ij − Σ_i α_i      s.t.  0 ≤ α_i ≤ C,  Σ_i α_i u_i = 0

Sequential minimal optimisation changes two variables per step, the pair chosen by the
second-order working-set selection of Fan, Chen & Lin (2005, "WSS 2"): i maximises −u_t G_t
over I_up, j minimises −b_ij² / a_ij over I_low (b_ij = −u_i G_i + u_j G_j > 0,
a_ij = K_ii + K_jj − 2 K_ij), with G = ∇f. It stops when the maximal KKT violation
m(α) − M(α) = max_{I_up} −u G − min_{I_low} −u G is below ``tol``. Shrinking (as libsvm) removes
from the active set the variables at a bound whose gradient says they will stay there; the
gradient of the removed variables is rebuilt before the final check (and once when the
violation first falls below 10·tol), so the result is that of the unshrunk problem.

The steps run in a compiled function in slices of a few thousand steps, so the caller can
publish the objective and the KKT violation and check for Cancel between slices.
Written from the papers and libsvm's description. The kernel matrix is either given (dense) or,
for the linear, rbf, poly and sigmoid kernels on dense points (:class:`KernelRows`), computed
row by row when a variable first enters a working set, as libsvm does: an SMO run touches a
small part of the variables (on digits, about 55 of the 360 points of a pair of classes), so
most of the matrix is never formed. The diagonal K_tt is kept in its own array (the selection
reads it for every candidate).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.jit import jit

__all__ = ["SMOResult", "KernelRows", "ROW_KERNELS", "solve_smo", "dual_objective", "iteration_bound"]

#: libsvm's iteration bound when none is given: max(DEFAULT_MAX_ITER, 100·n) SMO steps. On
#: ill-conditioned problems (a polynomial kernel on unscaled data: kernel values near 1e12) the
#: rounding of the gradient keeps the KKT violation above tol for ever; large-C problems that do
#: converge can need several million steps (libsvm: 8·10⁶ for a linear kernel, C = 10⁴, 500 points)
DEFAULT_MAX_ITER = 10_000_000


def iteration_bound(max_iter: int, n: int) -> int:
    """The SMO step bound: ``max_iter`` when ≥ 0, else libsvm's max(10⁷, 100·n)."""
    return int(max_iter) if max_iter >= 0 else max(DEFAULT_MAX_ITER, 100 * int(n))

_TAU = 1e-12
# state slots (int64 array shared across slices)
_N_ACT, _COUNTER, _UNSHRUNK, _ITER = 0, 1, 2, 3


def _reconstruct_py(K, y, alpha, G, act, n_act):
    """Exact gradient of the variables outside the active set (compiled by :func:`_helpers`)."""
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


#: kernels whose rows :class:`KernelRows` computes (code used by the compiled row function)
ROW_KERNELS = {"linear": 1, "rbf": 2, "poly": 3, "sigmoid": 4}


def _row_py(K, have, P, PT, sq, kp, i):
    """Row i of the kernel matrix of the points P, written into K[i] (compiled by :func:`_helpers`).

    The products x_i·x_t run over the features in order for every t at once (contiguous in PT),
    so K[i, t] == K[t, i] exactly and K[t, t] equals the diagonal of :meth:`KernelRows.arrays`;
    then the kernel as :func:`manifold_studio.algorithms.kernels.kernel_matrix` applies it."""
    m, d = P.shape
    row = K[i]
    for t in range(m):
        row[t] = 0.0
    j = 0
    while j + 4 <= d:      # four features per sweep, added in order (the same sums as one by one)
        x0, x1, x2, x3 = P[i, j], P[i, j + 1], P[i, j + 2], P[i, j + 3]
        r0, r1, r2, r3 = PT[j], PT[j + 1], PT[j + 2], PT[j + 3]
        for t in range(m):
            row[t] = (((row[t] + x0 * r0[t]) + x1 * r1[t]) + x2 * r2[t]) + x3 * r3[t]
        j += 4
    while j < d:
        x0 = P[i, j]
        r0 = PT[j]
        for t in range(m):
            row[t] += x0 * r0[t]
        j += 1
    code = int(kp[0])
    gamma, coef0, degree = kp[1], kp[2], kp[3]
    if code == 2:
        g2 = 2.0 * gamma
        a = gamma * sq[i]
        for t in range(m):
            row[t] = math.exp(min((g2 * row[t] - a) - gamma * sq[t], 0.0))
    elif code == 3:
        for t in range(m):
            row[t] = math.pow(gamma * row[t] + coef0, degree)
    elif code == 4:
        for t in range(m):
            row[t] = math.tanh(gamma * row[t] + coef0)
    have[i] = True


def _diag_py(P, kp, sq, diag):
    """sq[t] = x_t·x_t and diag[t] = k(x_t, x_t), with the arithmetic of :func:`_row_py`."""
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


_reconstruct_inline = None   # the compiled _reconstruct_py, set by _helpers() before first use
_row_inline = None           # the compiled _row_py, likewise
_diag = None                 # the compiled _diag_py


def _helpers():
    """Compile the helpers the slice function calls (numba resolves them as globals when it
    compiles ``_smo_slice``; the project's lazy ``jit`` wrappers cannot be called from
    compiled code). Deferred like ``jit`` so importing this module does not import numba."""
    global _reconstruct_inline, _row_inline, _diag
    if _reconstruct_inline is None:
        import numba

        def compiled(f, **options):
            try:
                return numba.njit(cache=True, nogil=True, **options)(f)
            except (RuntimeError, OSError):
                return numba.njit(nogil=True, **options)(f)

        # the products of a row and of the diagonal as fused multiply-adds (half the operations)
        _row_inline = compiled(_row_py, fastmath={"contract"})
        _diag = compiled(_diag_py, fastmath={"contract"})
        _reconstruct_inline = compiled(_reconstruct_py)
    return _reconstruct_inline


class KernelRows:
    """The kernel matrix of dense points for :func:`solve_smo`, formed row by row on demand.

    ``kernel`` one of :data:`ROW_KERNELS`; ``gamma``, ``coef0``, ``degree`` as in
    :func:`manifold_studio.algorithms.kernels.kernel_matrix` (the values agree with it to
    rounding: the products are summed in another order than BLAS's)."""

    def __init__(self, X: np.ndarray, kernel: str, gamma: float, coef0: float = 0.0, degree: float = 3):
        self.P = np.ascontiguousarray(X, dtype=float)
        self.kp = np.array([ROW_KERNELS[kernel], gamma, coef0, degree], dtype=float)

    def arrays(self):
        """(K buffer, rows present, P, Pᵀ, squared norms, kernel parameters, diagonal)."""
        P = self.P
        m = P.shape[0]
        sq, diag = np.empty(m), np.empty(m)
        _helpers()
        _diag(P, self.kp, sq, diag)
        return (np.empty((m, m)), np.zeros(m, dtype=np.bool_), P, np.ascontiguousarray(P.T), sq,
                self.kp, diag)


def _dense_arrays(K: np.ndarray):
    """The arrays of :meth:`KernelRows.arrays` for a given kernel matrix (every row present)."""
    K = np.ascontiguousarray(K, dtype=float)
    n = K.shape[0]
    empty = np.empty((0, 0))
    return (K, np.ones(n, dtype=np.bool_), empty, empty, np.empty(0), np.zeros(4), np.diagonal(K).copy())


@jit
def _smo_slice(K, have, P, PT, sq, kp, diag, y, alpha, G, act, st, C, eps, shrinking, n_steps):
    """Run up to n_steps SMO steps; returns (converged, KKT violation).

    One compiled function (numba cannot call the lazy wrappers of other compiled functions):
    shrinking, the working-set selection and the two-variable update are inlined. Rows of K
    not yet formed (``have``) are computed from the points P when first needed."""
    n = y.shape[0]
    gap = np.inf
    rebuild = False
    for _ in range(n_steps):
        if rebuild:  # exact gradient of the shrunk variables, then all active again
            _reconstruct_inline(K, y, alpha, G, act, st[_N_ACT])
            for p in range(n):
                act[p] = p
            st[_N_ACT] = n
            rebuild = False
            st[_COUNTER] = 2   # select on the whole problem first, shrink at the next step
        n_act = st[_N_ACT]
        st[_COUNTER] -= 1
        if st[_COUNTER] == 0:
            st[_COUNTER] = min(n, 1000)
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
                if st[_UNSHRUNK] == 0 and gmax1 + gmax2 <= eps * 10.0:
                    st[_UNSHRUNK] = 1
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
                st[_N_ACT] = keep
                n_act = keep
        # working set selection (WSS 2)
        gmax = -np.inf
        i = -1
        for p in range(n_act):
            t = act[p]
            if y[t] > 0:
                if alpha[t] < C and -G[t] >= gmax:
                    gmax = -G[t]
                    i = t
            else:
                if alpha[t] > 0.0 and G[t] >= gmax:
                    gmax = G[t]
                    i = t
        gmax2 = -np.inf
        obj_min = np.inf
        j = -1
        if i >= 0:
            if not have[i]:
                _row_inline(K, have, P, PT, sq, kp, i)
            kii = diag[i]
            for p in range(n_act):
                t = act[p]
                if y[t] > 0:
                    if alpha[t] > 0.0:
                        diff = gmax + G[t]
                        if G[t] >= gmax2:
                            gmax2 = G[t]
                        if diff > 0.0:
                            quad = kii + diag[t] - 2.0 * K[i, t]
                            obj = -(diff * diff) / (quad if quad > 0.0 else _TAU)
                            if obj <= obj_min:
                                j = t
                                obj_min = obj
                else:
                    if alpha[t] < C:
                        diff = gmax - G[t]
                        if -G[t] >= gmax2:
                            gmax2 = -G[t]
                        if diff > 0.0:
                            quad = kii + diag[t] - 2.0 * K[i, t]
                            obj = -(diff * diff) / (quad if quad > 0.0 else _TAU)
                            if obj <= obj_min:
                                j = t
                                obj_min = obj
        gap = gmax + gmax2
        if gap < eps or j == -1:
            if n_act < n:   # optimal on the active set: check the whole problem
                rebuild = True
                continue
            return True, gap
        # two-variable update, clipped to the box and the line Σ α u = const
        st[_ITER] += 1
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
                t = act[p]
                G[t] += y[t] * (Ki[t] * di + Kj[t] * dj)
    if rebuild:
        _reconstruct_inline(K, y, alpha, G, act, st[_N_ACT])
        for p in range(n):
            act[p] = p
        st[_N_ACT] = n
    return False, gap


@jit
def _rho(y, alpha, G, C):
    """The threshold ρ as libsvm (decision = Σ α u K − ρ), from the exact gradient."""
    n = y.shape[0]
    ub = np.inf
    lb = -np.inf
    n_free = 0
    s = 0.0
    for t in range(n):
        yg = y[t] * G[t]
        if alpha[t] >= C:
            if y[t] < 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        elif alpha[t] <= 0.0:
            if y[t] > 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        else:
            n_free += 1
            s += yg
    return s / n_free if n_free > 0 else 0.5 * (ub + lb)


@jit
def dual_objective(K, y, alpha):
    """½ Σ α_i α_j u_i u_j K_ij − Σ α_i (over the support vectors)."""
    sv = np.flatnonzero(alpha > 0.0)
    quad = 0.0
    lin = 0.0
    for p in range(sv.shape[0]):
        i = sv[p]
        lin += alpha[i]
        s = 0.0
        for q in range(sv.shape[0]):
            j = sv[q]
            s += alpha[j] * y[j] * K[i, j]
        quad += alpha[i] * y[i] * s
    return 0.5 * quad - lin


@dataclass
class SMOResult:
    alpha: np.ndarray          # (n,) dual variables
    rho: float                 # decision = Σ α_i u_i K(x_i, x) − rho
    n_iter: int
    converged: bool             # False: stopped by the iteration bound
    iterations: list = field(default_factory=list)   # curve x: SMO steps after each slice
    objective: list = field(default_factory=list)    # dual objective after each slice
    violation: list = field(default_factory=list)    # KKT violation m(α) − M(α) after each slice
    last_slice: int = 0                               # steps allowed in the last slice


def solve_smo(K, y: np.ndarray, C: float, *, tol: float = 1e-3, shrinking: bool = True,
              max_iter: int = -1, progress=None, on_slice=None, slice_steps: int | None = None,
              first_slice: int = 10, fraction: tuple[float, float] = (0.0, 1.0),
              message: str = "SMO") -> SMOResult:
    """Solve the soft-margin dual for the (n, n) kernel matrix K and labels y = ±1.

    K: the matrix, or a :class:`KernelRows` whose rows are formed as the solver needs them.

    ``max_iter`` < 0: libsvm's bound max(10⁷, 100·n) (:func:`iteration_bound`); the result says
    ``converged=False`` when the bound stopped it. ``on_slice(result)`` is called after every slice (curves);
    ``progress.checkpoint`` between slices (raises FitCancelled on Cancel). Without ``slice_steps``
    the slices grow from ``first_slice`` steps (doubling); ``result.last_slice`` is where they got
    (a caller solving several problems as one curve starts the next one there)."""
    _helpers()
    arrays = K.arrays() if isinstance(K, KernelRows) else _dense_arrays(K)
    K = arrays[0]
    y = np.ascontiguousarray(y, dtype=float)
    n = y.shape[0]
    max_iter = iteration_bound(max_iter, n)
    alpha = np.zeros(n)
    G = -np.ones(n)
    act = np.arange(n, dtype=np.int64)
    st = np.array([n, min(n, 1000) + 1, 0, 0], dtype=np.int64)
    # slices grow geometrically up to the cap: short slices first give the training curve
    # points from the start (log-spaced steps), long ones later keep the overhead small
    grow = slice_steps is None
    cap = int(max(200, min(20000, 2e7 // max(n, 1)))) if grow else int(slice_steps)
    slice_steps = min(max(1, int(first_slice)), cap) if grow else cap
    res = SMOResult(alpha, 0.0, 0, False)
    lo, hi = fraction
    while True:
        if grow and res.iterations:
            slice_steps = min(cap, 2 * slice_steps)
        steps = min(slice_steps, max_iter - int(st[_ITER]))
        if steps <= 0:
            break
        res.last_slice = slice_steps
        converged, gap = _smo_slice(*arrays, y, alpha, G, act, st, float(C), float(tol), bool(shrinking), steps)
        res.n_iter = int(st[_ITER])
        res.iterations.append(res.n_iter)
        res.objective.append(float(dual_objective(K, y, alpha)))
        res.violation.append(float(max(gap, 0.0)) if np.isfinite(gap) else 0.0)
        if on_slice is not None:
            on_slice(res)
        if converged:
            res.converged = True
            break
        if progress is not None:
            done = 1.0 - min(1.0, max(gap, tol) / max(res.violation[0], tol) if res.violation[0] > 0 else 1.0)
            progress.checkpoint(lo + (hi - lo) * done, f"{message}: {res.n_iter:,} steps, KKT violation {gap:.3g}")
    if st[_N_ACT] < n:
        _helpers()(K, y, alpha, G, act, st[_N_ACT])
    res.rho = float(_rho(y, alpha, G, float(C)))
    return res
