"""UMAP's low-dimensional layout: the curve, the spectral start and SGD with negative sampling.

* :func:`find_ab_params` — ``a``, ``b`` of ``1 / (1 + a d^(2b))`` fitted (least squares, as
  umap-learn) to 1 below ``min_dist`` and ``exp(-(d - min_dist) / spread)`` above.
* :func:`spectral_init` — the eigenvectors 2..dim+1 of the normalised graph Laplacian from the
  project's spectral core (ARPACK, tolerance 1e-4 as umap-learn); a disconnected graph gets
  each component's eigenmap around its centroid's place (umap-learn's multi-component layout),
  with a uniform random start as the fallback. Scaled and jittered as umap-learn.
* :func:`optimize_layout` — the fuzzy cross-entropy minimised by SGD: every edge is sampled
  once per ``epochs_per_sample = w_max / w`` epochs (attraction), each sample followed by
  ``negative_sample_rate`` repulsions from uniformly drawn points; learning rate decaying
  linearly to 0. Compiled with numba and run in slices of epochs, so the caller checkpoints
  (Cancel) and publishes the current map between slices.
* :func:`place_points` — extension: each new point moves alone against the fixed map, with its
  own random stream seeded from its coordinates (sample-wise by construction); the rows are
  shared among the cores in threads (the compiled loop releases the GIL).
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from manifold_studio.algorithms.jit import KernelModule
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.algorithms.spectral import SpectralProblem, leading_eigenpairs
from manifold_studio.algorithms.threads import run_shares

#: seconds of SGD between two checkpoints / published maps
SLICE_SECONDS = 0.1
#: new points per thread share at least when placing them (about 2 ms of SGD each at 100 epochs)
PLACE_MIN_ROWS = 64


def find_ab_params(spread: float, min_dist: float) -> tuple[float, float]:
    """Least-squares fit of 1 / (1 + a x^(2b)) to the offset exponential (umap-learn's curve)."""
    def curve(x, a, b):
        return 1.0 / (1.0 + a * x ** (2 * b))

    xv = np.linspace(0, spread * 3, 300)
    yv = np.where(xv < min_dist, 1.0, np.exp(-(xv - min_dist) / spread))
    from scipy.optimize import curve_fit  # lazy: kept off the start-up
    (a, b), _ = curve_fit(curve, xv, yv)
    return float(a), float(b)


def epochs_per_sample(weights: np.ndarray, n_epochs: int) -> np.ndarray:
    """Epochs between two samples of each edge: w_max / w (the strongest edge every epoch)."""
    out = -np.ones(weights.shape[0], dtype=np.float64)
    n_samples = n_epochs * (weights / weights.max())
    pos = n_samples > 0
    out[pos] = float(n_epochs) / n_samples[pos]
    return out


def noisy_scale(Y: np.ndarray, rng: np.random.Generator, max_coord: float = 10.0,
                noise: float = 1e-4) -> np.ndarray:
    """Scale so the largest |coordinate| is ``max_coord``, then add N(0, noise^2) jitter."""
    Y = Y * (max_coord / np.abs(Y).max())
    return Y + rng.normal(scale=noise, size=Y.shape)


def _eigenmap(graph: sp.csr_matrix, dim: int, progress=None) -> np.ndarray | None:
    """Eigenvectors 2..dim+1 of a connected graph's normalised adjacency (None: ARPACK failed)."""
    deg = np.asarray(graph.sum(axis=1)).ravel()
    s = 1.0 / np.sqrt(deg)
    M = (sp.diags(s) @ graph @ sp.diags(s)).tocsr()
    try:
        _, vecs, _ = leading_eigenpairs(SpectralProblem(dim + 1, matrix=M, skip=1, tol=1e-4), dim + 1,
                                        progress=progress)
    except (spla.ArpackNoConvergence, spla.ArpackError):
        return None
    return vecs[:, 1:dim + 1]


def _component_layout(graph, labels, n_comp, dim, rng, X, progress):
    """A disconnected graph, as umap-learn lays it out: the components' centroids in the data
    placed by their principal axes (scaled so the nearest two are 1 apart), each component's own
    eigenmap (a random square for components too small to have one) scaled to half that gap
    around its place."""
    # centroids as one indicator product: the same sums, in the same order, for sparse X and its
    # dense copy (zeros add nothing), so both give the same start
    M = sp.csr_matrix((np.ones(labels.size), (labels, np.arange(labels.size))), shape=(n_comp, labels.size))
    sums = M @ X
    C = np.asarray(sums.toarray() if sp.issparse(sums) else sums) / np.bincount(labels, minlength=n_comp)[:, None]
    Cc = C - C.mean(axis=0)
    U, S, _ = np.linalg.svd(Cc, full_matrices=False)
    meta = np.zeros((n_comp, dim))
    r = min(dim, U.shape[1])
    meta[:, :r] = U[:, :r] * S[:r]
    from scipy.spatial.distance import pdist
    gaps = pdist(meta)
    gap = float(gaps[gaps > 0].min()) if np.any(gaps > 0) else 1.0
    if not np.any(gaps > 0):     # all centroids in one place: spread them on a line
        meta[:, 0] = np.arange(n_comp)
    meta /= gap
    Y = np.empty((graph.shape[0], dim))
    for c in range(n_comp):
        progress.checkpoint(c / n_comp, f"Component {c + 1:,}/{n_comp:,}")
        rows = np.flatnonzero(labels == c)
        part = None
        if rows.size > dim + 2:
            part = _eigenmap(graph[rows][:, rows].tocsr(), dim)
        if part is None:
            part = rng.uniform(-1.0, 1.0, size=(rows.size, dim))
        part = part * (0.25 / max(np.abs(part).max(), np.finfo(float).tiny))
        Y[rows] = meta[c] + part
    return Y


def spectral_init(graph: sp.csr_matrix, dim: int, rng: np.random.Generator, progress=None,
                  X: np.ndarray | None = None):
    """Starting map from the graph's Laplacian eigenmaps: (Y, how, number of components).

    how is 'spectral'; 'components' for a disconnected graph with the data ``X`` given (each
    component's eigenmap around its centroid's place, as umap-learn); 'random' (uniform in
    [-10, 10]) when the graph is disconnected without ``X``, too small, or ARPACK does not
    converge (umap-learn falls back the same way)."""
    progress = as_progress(progress)
    n = graph.shape[0]
    from scipy.sparse.csgraph import connected_components   # here: the plugins load without csgraph
    n_comp, labels = connected_components(graph, directed=False)
    if dim + 1 >= n or (n_comp > 1 and X is None):
        return rng.uniform(-10.0, 10.0, size=(n, dim)), "random", n_comp
    if n_comp > 1:
        return noisy_scale(_component_layout(graph, labels, n_comp, dim, rng, X, progress), rng), \
            "components", n_comp
    vecs = _eigenmap(graph, dim, progress)
    if vecs is None:
        return rng.uniform(-10.0, 10.0, size=(n, dim)), "random", n_comp
    return noisy_scale(vecs, rng), "spectral", n_comp


def rescale_init(Y: np.ndarray) -> np.ndarray:
    """Each coordinate mapped onto [0, 10] (umap-learn does it before the SGD)."""
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return 10.0 * (Y - lo) / span


_kernels = KernelModule(globals())
kernel = _kernels.mark
#: compile the SGD kernels (they call each other), once, before the first use
compile_kernels = _kernels.compile


@kernel
def _draw(st, n_tail):
    """umap-learn's Tausworthe generator: advance the stream ``st`` (three int64 words) and return
    the index in 0..n_tail-1 its int32 value picks."""
    s0 = (((st[0] & 4294967294) << 12) & 0xFFFFFFFF) ^ ((((st[0] << 13) & 0xFFFFFFFF) ^ st[0]) >> 19)
    s1 = (((st[1] & 4294967288) << 4) & 0xFFFFFFFF) ^ ((((st[1] << 2) & 0xFFFFFFFF) ^ st[1]) >> 25)
    s2 = (((st[2] & 4294967280) << 17) & 0xFFFFFFFF) ^ ((((st[2] << 3) & 0xFFFFFFFF) ^ st[2]) >> 11)
    st[0], st[1], st[2] = s0, s1, s2
    c = np.int32(s0 ^ s1 ^ s2) % n_tail
    if c < 0:
        c += n_tail
    return c


@kernel(fastmath=True)
def _row_schedule(w, drop_epochs, neg_rate, eps, next_s, eps_n, next_n):
    """One new point's edge schedule (weights w): each edge sampled every w_max / w epochs,
    negative samples every neg_rate-th of that; an edge below w_max / drop_epochs (umap-learn's
    cut; ``drop_epochs`` 0: only a weight of 0) is never sampled (eps -1)."""
    wmax = 0.0
    for j in range(w.shape[0]):
        if w[j] > wmax:
            wmax = w[j]
    for j in range(w.shape[0]):
        keep = w[j] >= wmax / drop_epochs if drop_epochs > 0 else w[j] > 0.0
        eps[j] = wmax / w[j] if keep else -1.0
        next_s[j] = eps[j]
        eps_n[j] = eps[j] / neg_rate
        next_n[j] = eps_n[j]


@kernel(fastmath=True)
def _pair_sq(A, j, B, k):
    """Squared distance between row j of A and row k of B."""
    d2 = 0.0
    for d in range(A.shape[1]):
        t = A[j, d] - B[k, d]
        d2 += t * t
    return d2


@kernel
def _start_row(r, seeds, init, state, x):
    """Row r's random stream and starting point, copied into state and x."""
    for t in range(3):
        state[t] = seeds[r, t]
    for d in range(x.shape[0]):
        x[d] = init[r, d]


@kernel(fastmath=True)
def _sgd_epochs(head_emb, tail_emb, head, tail, eps, next_sample, eps_neg, next_neg, rng, a, b,
                gamma, alpha0, n_epochs, first, last, move_other, n_tail, dens, R, mu, re_sum, phi_sum):
    """Epochs ``first`` .. ``last - 1`` of umap-learn's optimize_layout_euclidean (per-edge
    epoch schedule, negative samples per head vertex's random stream, gradients clipped to
    [-4, 4], learning rate alpha0 (1 - epoch / n_epochs)). rng: (n_heads, 3) int64 states.

    densMAP (Narayan, Berger & Cho 2021, as umap-learn): with ``dens = (lambda, frac,
    var_shift, mu_tot)`` and lambda > 0, the last ``frac`` of the epochs add to each sampled
    edge the gradient of lambda times the correlation between the map's log local radii
    (recomputed every epoch into ``re_sum``, ``phi_sum``) and the data's standardised ``R``;
    ``mu`` holds the edge weights."""
    dim = head_emb.shape[1]
    b32 = np.float32(b)     # the powers in single precision, as the float32 map (powf: 20% faster)
    nv = head_emb.shape[0]
    re_mean = 0.0
    re_std = 1.0
    re_cov = 0.0
    for n in range(first, last):
        alpha = alpha0 * (1.0 - n / n_epochs)
        dens_on = dens[0] > 0.0 and (n + 1) / n_epochs > 1.0 - dens[1]
        if dens_on:          # the map's local radii, their mean, spread and covariance with R
            re_sum[:] = 0.0
            phi_sum[:] = 0.0
            for i in range(head.shape[0]):
                j = head[i]
                k = tail[i]
                d2 = _pair_sq(head_emb, j, tail_emb, k)
                phi = 1.0 / (1.0 + a * d2 ** b)
                re_sum[j] += phi * d2
                re_sum[k] += phi * d2
                phi_sum[j] += phi
                phi_sum[k] += phi
            for v in range(nv):
                re_sum[v] = np.log(1e-8 + re_sum[v] / phi_sum[v])
            re_mean = re_sum.mean()
            re_std = np.sqrt(np.mean((re_sum - re_mean) ** 2) + dens[2])
            re_cov = np.dot(re_sum, R) / (nv - 1)
        for i in range(eps.shape[0]):
            if next_sample[i] > n:
                continue
            j = head[i]
            k = tail[i]
            d2 = _pair_sq(head_emb, j, tail_emb, k)
            cor = 0.0
            if dens_on:
                phi = 1.0 / (1.0 + a * d2 ** b)
                dphi = a * b * d2 ** (b - 1.0) / (1.0 + a * d2 ** b) if d2 > 0.0 else 0.0
                drk = phi / phi_sum[k] * ((1.0 - b * (1.0 - phi)) / np.exp(re_sum[k]) + dphi)
                drj = phi / phi_sum[j] * ((1.0 - b * (1.0 - phi)) / np.exp(re_sum[j]) + dphi)
                wk = R[k] - re_cov * (re_sum[k] - re_mean) / (re_std * re_std)
                wj = R[j] - re_cov * (re_sum[j] - re_mean) / (re_std * re_std)
                cor = dens[0] * dens[3] * (wk * drk + wj * drj) / (mu[i] * re_std) / nv
            if d2 > 0.0:
                d2b = np.float64(np.float32(d2) ** b32)   # one power: d2^(b-1) = d2^b / d2
                coeff = -2.0 * a * b * (d2b / d2) / (a * d2b + 1.0)
            else:
                coeff = 0.0
            for d in range(dim):
                g = coeff * (head_emb[j, d] - tail_emb[k, d])
                g = 4.0 if g > 4.0 else (-4.0 if g < -4.0 else g)
                if dens_on:
                    c = 2.0 * cor * (head_emb[j, d] - tail_emb[k, d])
                    g += 4.0 if c > 4.0 else (-4.0 if c < -4.0 else c)
                head_emb[j, d] += g * alpha
                if move_other:
                    tail_emb[k, d] -= g * alpha
            next_sample[i] += eps[i]
            n_neg = int((n - next_neg[i]) / eps_neg[i])
            for _ in range(n_neg):
                k = _draw(rng[j], n_tail)
                d2 = 0.0
                for d in range(dim):
                    t = head_emb[j, d] - tail_emb[k, d]
                    d2 += t * t
                if d2 > 0.0:
                    coeff = 2.0 * gamma * b / ((0.001 + d2) * (a * np.float64(np.float32(d2) ** b32) + 1.0))
                else:
                    continue        # the point itself, or an exact copy: no direction to push
                for d in range(dim):
                    g = coeff * (head_emb[j, d] - tail_emb[k, d])
                    g = 4.0 if g > 4.0 else (-4.0 if g < -4.0 else g)
                    head_emb[j, d] += g * alpha
            next_neg[i] += n_neg * eps_neg[i]


def rng_states(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) int64 Tausworthe states, one stream per vertex (the top bits must be non-zero)."""
    return rng.integers(2 ** 20, 2 ** 31 - 1, size=(n, 3), dtype=np.int64)


def optimize_layout(Y: np.ndarray, graph: sp.coo_matrix, n_epochs: int, a: float, b: float, *,
                    rng: np.random.Generator, learning_rate: float = 1.0,
                    negative_sample_rate: int = 5, gamma: float = 1.0, progress=None,
                    start: float = 0.0, end: float = 1.0, on_slice=None,
                    densmap: tuple | None = None) -> tuple[np.ndarray, int]:
    """SGD on the training map Y (n, dim) in place (float32), slices of about SLICE_SECONDS
    between which ``progress`` is checkpointed (fraction from ``start`` to ``end``) and
    ``on_slice(Y, epoch)`` called. Returns (Y, epochs done); FitCancelled propagates after
    the slice in progress, with Y holding the map reached. ``densmap``: ``(dens_lambda,
    dens_frac, dens_var_shift, R, mu_sum)`` from
    :func:`manifold_studio.algorithms.umap_densmap.original_radii` (None: plain UMAP)."""
    progress = as_progress(progress)
    Y32 = np.ascontiguousarray(Y, dtype=np.float32)
    head = graph.row.astype(np.intp)
    tail = graph.col.astype(np.intp)
    eps = epochs_per_sample(graph.data, n_epochs)
    eps_neg = eps / negative_sample_rate
    next_sample, next_neg = eps.copy(), eps_neg.copy()
    states = rng_states(rng, Y32.shape[0])
    n = Y32.shape[0]
    if densmap is None:
        dens, R, work = np.zeros(4), np.zeros(1), np.zeros(1)
    else:
        lam, frac, shift, R, mu_sum = densmap
        dens, R, work = np.array([lam, frac, shift, float(np.sum(mu_sum)) / 2.0]), np.asarray(R, float), np.zeros(n)
    mu = np.asarray(graph.data, dtype=np.float64)
    compile_kernels()
    done, step = 0, 1
    while done < n_epochs:
        progress.checkpoint(start + (end - start) * done / n_epochs, f"Epoch {done:,}/{n_epochs:,}")
        stop = min(n_epochs, done + step)
        t0 = time.perf_counter()
        _sgd_epochs(Y32, Y32, head, tail, eps, next_sample, eps_neg, next_neg, states, a, b, gamma,
                    learning_rate, n_epochs, done, stop, True, n, dens, R, mu, work, work.copy())
        spent = time.perf_counter() - t0
        done = stop
        if on_slice is not None:
            on_slice(Y32, done)
        # the next slice lasts about SLICE_SECONDS
        step = int(max(1, min(4 * step, step * SLICE_SECONDS / max(spent, 1e-6))))
    progress.checkpoint(end, f"Epoch {n_epochs:,}/{n_epochs:,}")
    return Y32, n_epochs


@kernel(fastmath=True)
def _place(idx, w, Y_tail, init, seeds, a, b, gamma, alpha0, n_epochs, neg_rate, out):
    """Each new point r alone: start at init[r]; its edges to training points idx[r] with
    weights w[r] sampled every w_max(r) / w epochs; negative samples from its own stream."""
    m, k = idx.shape
    dim = Y_tail.shape[1]
    n_tail = Y_tail.shape[0]
    eps = np.empty(k)
    next_s = np.empty(k)
    eps_n = np.empty(k)
    next_n = np.empty(k)
    state = np.empty(3, dtype=np.int64)
    y = np.empty(dim)
    b32 = np.float32(b)     # d^2b in single precision (as umap-learn's float32 maps): the power
    for r in range(m):      # is two thirds of the work, powf 20% faster than pow
        _row_schedule(w[r], n_epochs, neg_rate, eps, next_s, eps_n, next_n)
        _start_row(r, seeds, init, state, y)
        for n in range(n_epochs):
            alpha = alpha0 * (1.0 - n / n_epochs)
            for j in range(k):
                if eps[j] <= 0.0 or next_s[j] > n:
                    continue
                c = idx[r, j]
                d2 = 0.0
                for d in range(dim):
                    t = y[d] - Y_tail[c, d]
                    d2 += t * t
                coeff = 0.0
                if d2 > 0.0:
                    d2b = np.float64(np.float32(d2) ** b32)
                    coeff = -2.0 * a * b * (d2b / d2) / (a * d2b + 1.0)
                for d in range(dim):
                    g = coeff * (y[d] - Y_tail[c, d])
                    y[d] += (4.0 if g > 4.0 else (-4.0 if g < -4.0 else g)) * alpha
                next_s[j] += eps[j]
                n_neg = int((n - next_n[j]) / eps_n[j])
                for _ in range(n_neg):
                    c = _draw(state, n_tail)
                    d2 = 0.0
                    for d in range(dim):
                        t = y[d] - Y_tail[c, d]
                        d2 += t * t
                    if d2 <= 0.0:
                        continue
                    coeff = 2.0 * gamma * b / ((0.001 + d2) * (a * np.float64(np.float32(d2) ** b32) + 1.0))
                    for d in range(dim):
                        g = coeff * (y[d] - Y_tail[c, d])
                        y[d] += (4.0 if g > 4.0 else (-4.0 if g < -4.0 else g)) * alpha
                next_n[j] += n_neg * eps_n[j]
        for d in range(dim):
            out[r, d] = y[d]


def row_seeds(X: np.ndarray, seed: int) -> np.ndarray:
    """(m, 3) Tausworthe states from each row's bytes and the fit's seed: a row's random
    stream depends on nothing else in the call. Sparse rows hash as their dense copies (densified
    in blocks of about a million values)."""
    if sp.issparse(X):
        step = max(1, 1_000_000 // max(X.shape[1], 1))
        parts = [row_seeds(X[a:a + step].toarray(), seed) for a in range(0, X.shape[0], step)]
        return np.vstack(parts) if parts else np.empty((0, 3), dtype=np.int64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    h = np.full(X.shape[0], np.uint64(1469598103934665603) ^ np.uint64(seed))
    prime = np.uint64(1099511628211)
    with np.errstate(over="ignore"):
        for col in X.view(np.uint64).T:            # FNV-1a over the 64-bit words of the row
            h = (h ^ col) * prime
        out = np.empty((X.shape[0], 3), dtype=np.int64)
        for t in range(3):
            h = (h ^ (h >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
            out[:, t] = ((h >> np.uint64(33)) | np.uint64(2 ** 20)).astype(np.int64) & (2 ** 31 - 1)
    out[out < 2 ** 20] += 2 ** 20
    return out


def place_points(X: np.ndarray, idx: np.ndarray, w: np.ndarray, Y_train: np.ndarray, a: float,
                 b: float, *, seed: int, n_epochs: int, learning_rate: float,
                 negative_sample_rate: int, gamma: float = 1.0) -> np.ndarray:
    """New points' coordinates: the membership-weighted mean of their neighbours' places, then
    ``n_epochs`` of SGD against the fixed training map (each row independently)."""
    m = idx.shape[0]
    Y_train = np.ascontiguousarray(Y_train, dtype=np.float64)
    wn = w / np.maximum(w.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    init = np.zeros((m, Y_train.shape[1]))
    for j in range(idx.shape[1]):                 # column by column: no batch-dependent BLAS
        init += wn[:, j:j + 1] * Y_train[idx[:, j]]
    out = np.empty_like(init)
    if n_epochs <= 0:
        return init
    idx = np.ascontiguousarray(idx, dtype=np.intp)
    w = np.ascontiguousarray(w, dtype=np.float64)
    seeds = row_seeds(X, seed)
    compile_kernels()
    # rows in threads, one share per core: each row reads only its own inputs and stream, so the
    # result does not depend on the number of threads
    run_shares(lambda s, e: _place(idx[s:e], w[s:e], Y_train, init[s:e], seeds[s:e], a, b, gamma,
                                   learning_rate, n_epochs, float(negative_sample_rate), out[s:e]),
               m, PLACE_MIN_ROWS)
    return out
