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
(:class:`~manifold_studio.algorithms.smo_steps.KernelRows`), formed row by row when a variable
first enters a working set, as libsvm does (:mod:`manifold_studio.algorithms.smo_steps`). The
diagonal K_tt is kept in its own array (the selection reads it for every candidate).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.smo_steps import (
    ITER, N_ACT, ROW_KERNELS, KernelRows, dense_arrays, helpers, new_state, smo_slice,
)

__all__ = ["SMOResult", "KernelRows", "ROW_KERNELS", "solve_smo", "dual_objective", "iteration_bound"]

#: libsvm's iteration bound when none is given: max(DEFAULT_MAX_ITER, 100·n) SMO steps. On
#: ill-conditioned problems (a polynomial kernel on unscaled data: kernel values near 1e12) the
#: rounding of the gradient keeps the KKT violation above tol for ever; large-C problems that do
#: converge can need several million steps (libsvm: 8·10⁶ for a linear kernel, C = 10⁴, 500 points)
DEFAULT_MAX_ITER = 10_000_000


def iteration_bound(max_iter: int, n: int) -> int:
    """The SMO step bound: ``max_iter`` when ≥ 0, else libsvm's max(10⁷, 100·n)."""
    return int(max_iter) if max_iter >= 0 else max(DEFAULT_MAX_ITER, 100 * int(n))

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
    helpers()
    arrays = K.arrays() if isinstance(K, KernelRows) else dense_arrays(K)
    K = arrays[0]
    y = np.ascontiguousarray(y, dtype=float)
    n = y.shape[0]
    max_iter = iteration_bound(max_iter, n)
    alpha = np.zeros(n)
    G = -np.ones(n)
    act = np.arange(n, dtype=np.int64)
    st = new_state(n)
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
        steps = min(slice_steps, max_iter - int(st[ITER]))
        if steps <= 0:
            break
        res.last_slice = slice_steps
        converged, gap = smo_slice(*arrays, y, alpha, G, act, st, float(C), float(tol), bool(shrinking), steps)
        res.n_iter = int(st[ITER])
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
    if st[N_ACT] < n:
        helpers()(K, y, alpha, G, act, st[N_ACT])
    res.rho = float(_rho(y, alpha, G, float(C)))
    return res
