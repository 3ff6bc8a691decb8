"""Gradients and KL divergences of SNE, symmetric SNE and t-SNE (seed 002).

- :func:`exact_kl_gradient`: dense O(n^2) gradient and KL for every variant (small n).
- :func:`fft_kl_gradient`: t-SNE in 2-D for large n. The attractive term is a sum over the
  sparse P (compiled loop); the repulsive term uses FIt-SNE's interpolation (Linderman et al.
  2019): the embedding's bounding box is cut into square boxes holding ``P_INTERP`` x
  ``P_INTERP`` equispaced nodes; charges are spread onto the nodes with Lagrange polynomials,
  the kernel sums between nodes are a convolution on a regular grid (computed with the FFT)
  and the node potentials are interpolated back to the points. With the squared kernel
  (1 + d^2)^-2 and charges (1, y) three potentials give the repulsive forces, and the kernel
  (1 + d^2)^-1 with charge 1 the normalisation Z = sum_{i != j} (1 + d_ij^2)^-1.
- :class:`FixedRepulsion`: potentials of a fixed (training) map on a fixed grid, used by
  ``extend``: each new point reads them at its own position only, so extension is sample-wise.
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.threads import run_shares

__all__ = ["exact_kl_gradient", "fft_kl_gradient", "attractive_forces", "fixed_attractive_forces",
           "FixedRepulsion", "exact_repulsion",
           "P_INTERP"]

P_INTERP = 3          # interpolation nodes per box and dimension
MIN_BOXES = 50        # boxes per dimension at least
MAX_BOXES = 250       # and at most (the FFT grid is 2 * MAX_BOXES * P_INTERP per side)
BOX_WIDTH = 1.0       # map units per box once the map is wider than MIN_BOXES (FIt-SNE: 1)


def p_log_p(P: np.ndarray) -> float:
    """Σ p log p over the positive entries of P (the constant part of KL(P || Q))."""
    pos = P[P > 0]
    return float(np.sum(pos * np.log(pos)))


def exact_kl_gradient(Y: np.ndarray, P: np.ndarray, variant: str = "tsne",
                      exaggeration: float = 1.0, plogp: float | None = None) -> tuple[float, np.ndarray]:
    """KL(P || Q) and its gradient with respect to Y (dense P: joint for 'tsne' and
    'symmetric_sne', conditional rows p_{j|i} for 'sne'). ``exaggeration`` multiplies P in the
    gradient; the KL returned is always that of the unexaggerated P. ``plogp``: Σ p log p when
    the caller computed it once (:func:`p_log_p`; P does not change during a fit)."""
    n = Y.shape[0]
    if variant == "tsne":
        grad = np.empty_like(Y)
        Yc = np.ascontiguousarray(Y)
        Z, plogw = _exact_tsne(Yc, np.ascontiguousarray(P), float(exaggeration), grad)
        constant = p_log_p(P) if plogp is None else plogp
        kl = constant - plogw + math.log(Z) * float(P.sum())
        return kl, grad
    sq = np.einsum("ij,ij->i", Y, Y)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Y @ Y.T, 0.0)
    pos = P > 0
    if variant == "tsne":
        W = 1.0 / (1.0 + D2)
        np.fill_diagonal(W, 0.0)
        Q = W / W.sum()
        M = (exaggeration * P - Q) * W
        factor = 4.0
    elif variant == "symmetric_sne":
        W = np.exp(-(D2 - 0.0))
        np.fill_diagonal(W, 0.0)
        Q = W / W.sum()
        M = exaggeration * P - Q
        factor = 4.0
    elif variant == "sne":
        L = -D2
        np.fill_diagonal(L, -np.inf)
        L -= L.max(axis=1, keepdims=True)
        W = np.exp(L)
        Q = W / W.sum(axis=1, keepdims=True)
        M = exaggeration * P - Q
        M = M + M.T
        factor = 2.0
    else:  # pragma: no cover - validated by the parameters
        raise ValueError(variant)
    kl = float(np.sum(P[pos] * np.log(np.maximum(P[pos], 1e-300) / np.maximum(Q[pos], 1e-300))))
    grad = factor * (M.sum(axis=1)[:, None] * Y - M @ Y)
    return kl, grad


@jit
def _exact_tsne(Y, P, ex, grad):
    """Dense t-SNE gradient 4 sum_j (ex p_ij - q_ij) w_ij (y_i - y_j); returns (Z, sum p log w)."""
    n, dim = Y.shape
    Z = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d2 = 0.0
            for d in range(dim):
                diff = Y[i, d] - Y[j, d]
                d2 += diff * diff
            Z += 2.0 / (1.0 + d2)
    plogw = 0.0
    for i in range(n):
        for d in range(dim):
            grad[i, d] = 0.0
        for j in range(n):
            if j == i:
                continue
            d2 = 0.0
            for d in range(dim):
                diff = Y[i, d] - Y[j, d]
                d2 += diff * diff
            w = 1.0 / (1.0 + d2)
            if P[i, j] > 0.0:
                plogw += P[i, j] * math.log(w)
            c = 4.0 * (ex * P[i, j] - w / Z) * w
            for d in range(dim):
                grad[i, d] += c * (Y[i, d] - Y[j, d])
    return Z, plogw


@jit
def _attractive(indptr, indices, data, Y, out, with_log, start, stop):
    """out_i = sum_j p_ij w_ij (y_i - y_j), w = 1/(1 + d^2); returns sum_ij p_ij log w_ij when
    ``with_log`` (a logarithm per entry costs more than the rest: only when the KL is wanted).
    2-D maps accumulate in registers (4x faster than through ``out``)."""
    n, dim = Y.shape
    logw = 0.0
    if dim == 2:
        for i in range(start, stop):
            yi0 = Y[i, 0]
            yi1 = Y[i, 1]
            a0 = 0.0
            a1 = 0.0
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                d0 = yi0 - Y[j, 0]
                d1 = yi1 - Y[j, 1]
                w = 1.0 / (1.0 + d0 * d0 + d1 * d1)
                pw = data[t] * w
                if with_log:
                    logw += data[t] * math.log(w)
                a0 += pw * d0
                a1 += pw * d1
            out[i, 0] = a0
            out[i, 1] = a1
        return logw
    for i in range(start, stop):
        for d in range(dim):
            out[i, d] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            d2 = 0.0
            for d in range(dim):
                diff = Y[i, d] - Y[j, d]
                d2 += diff * diff
            w = 1.0 / (1.0 + d2)
            pw = data[t] * w
            if with_log:
                logw += data[t] * math.log(w)
            for d in range(dim):
                out[i, d] += pw * (Y[i, d] - Y[j, d])
    return logw


def attractive_forces(P, Y, with_log: bool = True):
    """(sum_j p_ij w_ij (y_i - y_j) (n, dim), sum_ij p_ij log w_ij (NaN unless ``with_log``))
    over a sparse CSR P."""
    out = np.empty_like(Y)
    Y = np.ascontiguousarray(Y)
    with_log = bool(with_log)
    logw = sum(run_shares(lambda a, b: _attractive(P.indptr, P.indices, P.data, Y, out, with_log, a, b),
                          Y.shape[0]))
    return out, (logw if with_log else np.nan)


@jit
def _attractive_to(P, idx, Y, Ytr, out):
    """out_i = sum_t P[i, t] w (y_i - ytr_idx[i, t]), w = 1/(1 + d^2): new points pulled by their
    neighbours in a fixed map."""
    m, k = idx.shape
    dim = Y.shape[1]
    if dim == 2:   # in registers, as _attractive
        for i in range(m):
            yi0 = Y[i, 0]
            yi1 = Y[i, 1]
            a0 = 0.0
            a1 = 0.0
            for t in range(k):
                j = idx[i, t]
                d0 = yi0 - Ytr[j, 0]
                d1 = yi1 - Ytr[j, 1]
                pw = P[i, t] / (1.0 + d0 * d0 + d1 * d1)
                a0 += pw * d0
                a1 += pw * d1
            out[i, 0] = a0
            out[i, 1] = a1
        return
    for i in range(m):
        for d in range(dim):
            out[i, d] = 0.0
        for t in range(k):
            j = idx[i, t]
            d2 = 0.0
            for d in range(dim):
                diff = Y[i, d] - Ytr[j, d]
                d2 += diff * diff
            pw = P[i, t] / (1.0 + d2)
            for d in range(dim):
                out[i, d] += pw * (Y[i, d] - Ytr[j, d])


def fixed_attractive_forces(P: np.ndarray, idx: np.ndarray, Y: np.ndarray, Y_train: np.ndarray) -> np.ndarray:
    """sum_t P[i, t] w_it (y_i - y_train[idx[i, t]]) for new points Y (m, dim) and their k
    neighbours ``idx`` (m, k) with affinities ``P`` (m, k) in a fixed training map."""
    out = np.empty_like(Y)
    _attractive_to(np.ascontiguousarray(P), np.ascontiguousarray(idx), np.ascontiguousarray(Y),
                   np.ascontiguousarray(Y_train), out)
    return out


# -- interpolation ------------------------------------------------------------------------
_KERNEL_CACHE: dict = {}


class _Grid:
    """A square grid of boxes over [lo, lo + n_boxes * width]^2 with P_INTERP nodes per side."""

    def __init__(self, lo: np.ndarray, width: float, n_boxes: int):
        self.lo, self.width, self.n_boxes = np.asarray(lo, dtype=float), float(width), int(n_boxes)
        self.N = self.n_boxes * P_INTERP
        import scipy.fft as sfft  # lazy (as below): kept off the start-up

        self.L = sfft.next_fast_len(2 * self.N - 1, real=True)   # FFT length (linear convolution)

    def kernel_hat(self, power: int) -> np.ndarray:
        key = (self.N, self.L, self.width, power)
        hit = _KERNEL_CACHE.get(key)
        if hit is None:
            hit = self._kernel_hat(power)
            if len(_KERNEL_CACHE) > 8:
                _KERNEL_CACHE.clear()
            _KERNEL_CACHE[key] = hit
        return hit

    def _kernel_hat(self, power: int) -> np.ndarray:
        """FFT of (1 + d^2)^-power at every node offset, laid out circularly (L x L, L >= 2N - 1)
        for a linear convolution (positions N .. L-N are never reached)."""
        h = self.width / P_INTERP
        off = np.arange(self.L, dtype=float)
        off[self.N:] -= self.L
        d2 = (off[:, None] * h) ** 2 + (off[None, :] * h) ** 2
        import scipy.fft as sfft

        return sfft.rfft2(1.0 / (1.0 + d2) ** power, workers=-1)[None, :, :]

    @classmethod
    def covering(cls, Y: np.ndarray, margin: float = 0.0) -> "_Grid":
        lo, hi = _bounds(np.ascontiguousarray(Y, dtype=float))
        lo, hi = lo - margin, hi + margin
        spread = float(max(np.max(hi - lo), 1e-12)) * (1.0 + 1e-9)
        # boxes of BOX_WIDTH once the map is wide enough (so the kernel's FFT is reused between
        # iterations while the number of boxes stays the same), at least MIN_BOXES per side
        n_boxes = int(min(MAX_BOXES, max(MIN_BOXES, math.ceil(spread / BOX_WIDTH))))
        width = max(spread / n_boxes, BOX_WIDTH) if n_boxes < MAX_BOXES else spread / n_boxes
        if n_boxes == MIN_BOXES:
            width = spread / n_boxes
        return cls(lo, width, n_boxes)

    def locate(self, Y: np.ndarray):
        """Node indices (m, p) per axis and weights (m, p) per axis; ``inside`` mask (a
        compiled pass over the points, a share per core)."""
        m = Y.shape[0]
        ix = np.empty((m, P_INTERP), dtype=np.intp)
        iy = np.empty((m, P_INTERP), dtype=np.intp)
        wx = np.empty((m, P_INTERP))
        wy = np.empty((m, P_INTERP))
        inside = np.empty(m, dtype=np.bool_)
        nodes = (np.arange(P_INTERP) + 0.5) / P_INTERP
        Y = np.ascontiguousarray(Y, dtype=float)
        run_shares(lambda a, b: _locate(Y[a:b], self.lo, self.width, self.n_boxes, nodes, ix[a:b], iy[a:b],
                                        wx[a:b], wy[a:b], inside[a:b]), m, 16384)
        return ix, iy, wx, wy, inside

    def spread(self, loc, charges: np.ndarray) -> np.ndarray:
        """Charges (m, c) onto the nodes: (c, N, N)."""
        ix, iy, wx, wy, _ = loc
        charges = np.ascontiguousarray(charges, dtype=float)

        def share(a, b):   # each share onto its own grid (the nodes are shared), summed after
            out = np.zeros((charges.shape[1], self.N, self.N))
            _spread(ix[a:b], iy[a:b], wx[a:b], wy[a:b], charges[a:b], out)
            return out

        grids = run_shares(share, charges.shape[0], 16384)
        out = grids[0]
        for g in grids[1:]:
            out += g
        return out

    def convolve(self, grid: np.ndarray, kernel_hat: np.ndarray, single: bool = False) -> np.ndarray:
        """Potentials at the nodes: sum over nodes of kernel(node - node') * charge(node').
        ``single``: in float32 (2-3 times faster; used for the gradient while fitting)."""
        N, L = self.N, self.L
        if single:
            grid = grid.astype(np.float32)
            kernel_hat = kernel_hat.astype(np.complex64)
        import scipy.fft as sfft

        f = sfft.rfft2(grid, s=(L, L), axes=(-2, -1), workers=-1)
        f *= kernel_hat
        return np.ascontiguousarray(sfft.irfft2(f, s=(L, L), axes=(-2, -1), workers=-1)[:, :N, :N])

    def gather(self, loc, potentials: np.ndarray) -> np.ndarray:
        """Node potentials (c, N, N) interpolated at the points: (m, c)."""
        ix, iy, wx, wy, _ = loc
        out = np.empty((ix.shape[0], potentials.shape[0]))
        potentials = np.ascontiguousarray(potentials)
        run_shares(lambda a, b: _gather(ix[a:b], iy[a:b], wx[a:b], wy[a:b], potentials, out[a:b]),
                   ix.shape[0], 8192)
        return out


@jit
def _bounds(Y):
    """Per-column minima and maxima of Y (one pass over the rows)."""
    lo = Y[0].copy()
    hi = Y[0].copy()
    for i in range(1, Y.shape[0]):
        for d in range(Y.shape[1]):
            v = Y[i, d]
            if v < lo[d]:
                lo[d] = v
            if v > hi[d]:
                hi[d] = v
    return lo, hi


@jit
def _locate(Y, lo, width, n_boxes, nodes, ix, iy, wx, wy, inside):
    """Box, node indices and weights of every point on both axes: the Lagrange basis at the
    nodes (k + 1/2) / p of the unit box, evaluated at the point's place t in its box; points
    outside the grid are clipped to its border boxes."""
    m = Y.shape[0]
    p = nodes.shape[0]
    for i in range(m):
        inside[i] = True
        for axis in range(2):
            u = (Y[i, axis] - lo[axis]) / width
            box = int(math.floor(u))
            if box < 0 or box >= n_boxes:
                inside[i] = False
                box = min(max(box, 0), n_boxes - 1)
            t = u - box
            for k in range(p):
                w = 1.0
                for q in range(p):
                    if q != k:
                        w *= (t - nodes[q]) / (nodes[k] - nodes[q])
                if axis == 0:
                    ix[i, k] = box * p + k
                    wx[i, k] = w
                else:
                    iy[i, k] = box * p + k
                    wy[i, k] = w


@jit
def _spread(ix, iy, wx, wy, charges, out):
    """out[q, ix[i, a], iy[i, b]] += wx[i, a] wy[i, b] charges[i, q] (one pass over the points;
    np.bincount per charge was 4x slower)."""
    m, p = ix.shape
    c = charges.shape[1]
    for i in range(m):
        for a in range(p):
            for b in range(p):
                w = wx[i, a] * wy[i, b]
                for q in range(c):
                    out[q, ix[i, a], iy[i, b]] += w * charges[i, q]


@jit
def _gather(ix, iy, wx, wy, potentials, out):
    """out[i, q] = Σ_ab wx[i, a] wy[i, b] potentials[q, ix[i, a], iy[i, b]]."""
    m, p = ix.shape
    c = potentials.shape[0]
    for i in range(m):
        for q in range(c):
            acc = 0.0
            for a in range(p):
                for b in range(p):
                    acc += wx[i, a] * wy[i, b] * potentials[q, ix[i, a], iy[i, b]]
            out[i, q] = acc


def fft_kl_gradient(Y: np.ndarray, P, exaggeration: float = 1.0, with_kl: bool = False):
    """Approximate t-SNE gradient (2-D, sparse P) and, when asked, KL(P || Q); returns (kl, grad).

    Repulsion: potentials of the kernel (1 + d^2)^-2 with charges (1, y) give
    F_i = sum_j w_ij^2 (y_i - y_j), and of the kernel (1 + d^2)^-1 with charge 1 give
    Z = sum_i sum_j w_ij - n (the j = i terms are 1); coordinates are taken relative to the
    grid's centre so that no large terms cancel (the FFT runs in float32)."""
    Y = np.ascontiguousarray(Y)
    n = Y.shape[0]
    attr, logw = attractive_forces(P, Y, with_kl)
    grid = _Grid.covering(Y)
    loc = grid.locate(Y)
    Yc = Y - (grid.lo + 0.5 * grid.n_boxes * grid.width)
    spread = grid.spread(loc, np.column_stack([np.ones(n), Yc]))
    phi2 = grid.gather(loc, grid.convolve(spread, grid.kernel_hat(2), single=True))
    phi1 = grid.gather(loc, grid.convolve(spread[:1], grid.kernel_hat(1), single=True))
    Z = max(float(phi1.sum()) - n, 1e-300)
    rep = (Yc * phi2[:, 0:1] - phi2[:, 1:3]) / Z
    grad = 4.0 * (exaggeration * attr - rep)
    kl = np.nan
    if with_kl:
        plogp = float(np.sum(P.data * np.log(np.maximum(P.data, 1e-300))))
        kl = plogp - logw + math.log(Z) * float(P.data.sum())
    return kl, grad


class FixedRepulsion:
    """Repulsion of a fixed map ``Y_train`` on new points, per new point (sample-wise):
    Z_i = sum_j w_ij and F_i = sum_j w_ij^2 (y_i - y_j), w_ij = 1/(1 + |y_i - y_j|^2).

    Inside a grid over the training map (with a margin) the sums are interpolated from node
    potentials computed once; outside it they are exact sums over the training points (blocks).
    """

    def __init__(self, Y_train: np.ndarray):
        self.Y = np.ascontiguousarray(Y_train, dtype=float)
        self.grid = _Grid.covering(self.Y, margin=2.0)
        loc = self.grid.locate(self.Y)
        ones = np.ones((self.Y.shape[0], 1))
        charges = np.column_stack([ones, self.Y])
        spread = self.grid.spread(loc, charges)
        self.pot1 = self.grid.convolve(spread[:1], self.grid.kernel_hat(1))
        self.pot2 = self.grid.convolve(spread, self.grid.kernel_hat(2))

    def __call__(self, Yn: np.ndarray):
        loc = self.grid.locate(Yn)
        Z = self.grid.gather(loc, self.pot1)[:, 0]
        phi = self.grid.gather(loc, self.pot2)
        F = Yn * phi[:, 0:1] - phi[:, 1:3]
        outside = ~loc[4]
        if outside.any():
            Zo, Fo = exact_repulsion(Yn[outside], self.Y)
            Z[outside], F[outside] = Zo, Fo
        return np.maximum(Z, 1e-300), F


def exact_repulsion(Yn: np.ndarray, Ytr: np.ndarray, block: int = 4096):
    """Exact Z_i = sum_j w_ij and F_i = sum_j w_ij^2 (y_i - y_j) of new points over a fixed
    map (blocks of training points bound the memory)."""
    Z = np.zeros(Yn.shape[0])
    F = np.zeros_like(Yn)
    for start in range(0, Ytr.shape[0], block):
        diff = Yn[:, None, :] - Ytr[None, start:start + block, :]
        w = 1.0 / (1.0 + np.einsum("mjd,mjd->mj", diff, diff))
        Z += w.sum(axis=1)
        F += np.einsum("mj,mjd->md", w * w, diff)
    return Z, F
