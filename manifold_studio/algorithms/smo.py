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
for the linear, rbf, poly and sigmoid kernels on dense points
(:class:`~manifold_studio.algorithms.smo_rows.KernelRows`), formed row by row when a variable
first enters a working set, as libsvm does (:mod:`manifold_studio.algorithms.smo_rows`). The
diagonal K_tt is kept in its own array (the selection reads it for every candidate).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.smo_rows import ROW_KERNELS, KernelRows, compile_rows, dense_arrays

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


_reconstruct_inline = None   # the compiled _reconstruct_py, set by _helpers() before first use
_row_inline = None           # the compiled smo_rows.row_py, likewise


def _helpers():
    """Compile the helpers the slice function calls (numba resolves them as globals when it
    compiles ``_smo_slice``; the project's lazy ``jit`` wrappers cannot be called from
    compiled code). Deferred like ``jit`` so importing this module does not import numba."""
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
                if y[t] > 0:
                    if alpha[t] > 0.0:
                        diff = gmax + G[t]
                        if G[t] >= gmax2:
                            gmax2 = G[t]
                        if diff > 0.0:
                            quad = kii + diag[t] - 2.0 * K[i, t]
                            obj = -(diff * diff) / (quad if quad > 0.0 else _TAU)
                            if obj <= obj_min:
                                j = np.int64(t)
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
                                j = np.int64(t)
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
                t = np.uint64(act[p])   # unsigned: no negative-index check
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
    arrays = K.arrays() if isinstance(K, KernelRows) else dense_arrays(K)
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
