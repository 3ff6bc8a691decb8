"""The assignment step of Lloyd's iteration on dense data, compiled, with Hamerly's bounds.

Used by :mod:`manifold_studio.algorithms.kmeans_core` for dense data. One pass assigns every
point to its nearest centre and keeps the per-cluster (weighted) sums and counts the update
step needs up to date.

Hamerly's bounds (G. Hamerly, "Making k-means even faster", SDM 2010) skip most distance
computations once the centres move little, without changing the result: each point keeps an
upper bound ``u`` on the distance to its assigned centre and a lower bound ``l`` on the distance
to every other centre. When the centres move (by ``δ_c``), ``u`` grows by the move of the
assigned centre and ``l`` shrinks by the largest move of the others (triangle inequality). A
point whose ``u`` is below both ``l`` and half the distance from its centre to the nearest other
centre cannot change cluster; otherwise (with more than ``_TIGHTEN_K`` centres) ``u`` is
recomputed exactly, and if the test still fails the distances to all k centres are computed
(direct ``||x - c||²``, no cancellation) and the nearest wins (the lower index on an exact tie,
as an argmin). The test keeps a relative safety margin of 1e-12, far above the rounding of the
bounds, so that rounding only causes extra distance computations, not a different assignment:
the labels are those of Lloyd's assignment step (from the same initial centres, scikit-learn's
labels and iteration counts).

The cluster sums are updated when a point changes cluster (the first pass of a run sums every
point); the counts are exact (integers, or recomputed each pass when the points are weighted).
The points are processed in at most ``_MAX_CHUNKS`` fixed chunks, each with its own partial sums,
added in chunk order, so the results do not depend on the number of threads; the chunks are
shared among the cores (:func:`manifold_studio.algorithms.threads.run_shares`; the compiled pass
releases the GIL). Inside a chunk, the points that need a search are gathered in blocks of
``_BLOCK`` and searched together (the inner loops run over contiguous points).
"""
from __future__ import annotations

import math

import numpy as np

from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.threads import run_shares

__all__ = ["DenseAssigner"]

#: 1 + margin applied to the upper bound in the skip test (bounds are rounded, the test must not)
_SAFE = 1.0 + 1e-12
#: at most this many chunks (memory of the partial sums: chunks x k x d)
_MAX_CHUNKS = 16
#: at least this many points per chunk (one chunk, hence one thread, for small data)
_MIN_CHUNK = 8192
#: points searched together
_BLOCK = 256
#: above this many centres, a point whose bounds fail first gets its exact distance to its own
#: centre (one distance, scalar) and is searched only if that fails too; with fewer centres
#: searching it at once (k distances, vectorised over the points) costs less
_TIGHTEN_K = 16


@jit
def _assign_chunks(X, w, C, half, shift, labels, upper, lower, psums, pcounts, chunk, c0, c1, full):
    """Assign the points of chunks c0..c1 (``chunk`` points each), keeping their cluster sums in
    psums[c] / pcounts[c]; returns the number of points whose label changed.

    X: (n, d) points; w: (n,) weights or an empty array (every weight 1);
    C: (k, d) centres; half[c]: half the distance from centre c to the nearest other centre;
    shift[c]: how far centre c moved since the last pass; full: first pass of a run (no valid
    bounds, no labels yet): every point is searched and the sums are formed from scratch.
    """
    k, d = C.shape
    n = labels.shape[0]
    weighted = w.shape[0] > 0
    # largest and second largest move: a lower bound shrinks by the largest move of the centres
    # other than the point's own
    m1 = 0.0
    m2 = 0.0
    arg1 = -1
    for c in range(k):
        if shift[c] > m1:
            m2 = m1
            m1 = shift[c]
            arg1 = c
        elif shift[c] > m2:
            m2 = shift[c]
    B = _BLOCK
    tighten = k > _TIGHTEN_K
    idx = np.empty(B, dtype=np.intp)        # candidates of one block of points
    sidx = np.empty(2 * B, dtype=np.intp)   # points waiting for the search (searched B at a time)
    xb = np.empty((d, 2 * B))
    acc = np.empty(2 * B)
    b1 = np.empty(2 * B)
    b2 = np.empty(2 * B)
    bl = np.empty(2 * B, dtype=np.intp)
    changed = 0
    for ch in range(c0, c1):
        sums = psums[ch]
        counts = pcounts[ch]
        if full or weighted:
            counts[:] = 0.0
        if full:
            sums[:, :] = 0.0
        stop = min(n, (ch + 1) * chunk)
        L = 0
        for s0 in range(ch * chunk, stop, B):
            s1 = min(stop, s0 + B)
            if full:
                for i in range(s0, s1):
                    sidx[L] = i
                    L += 1
            else:
                M = 0
                lab = labels[s0:s1]      # views indexed from 0: no negative-index checks
                up = upper[s0:s1]
                lw = lower[s0:s1]
                for p in range(s1 - s0):
                    a = lab[p]
                    u = up[p] + shift[a]
                    lo = lw[p] - (m2 if a == arg1 else m1)
                    up[p] = u
                    lw[p] = lo
                    if u * _SAFE >= max(half[a], lo):
                        idx[M] = s0 + p
                        M += 1
                if weighted:
                    for i in range(s0, s1):
                        counts[labels[i]] += w[i]
                # the bounds do not decide: exact distance to the own centre, search if needed
                # (for a few centres the vectorised search of all of them costs less)
                for p in range(M if tighten else 0):
                    i = idx[p]
                    a = labels[i]
                    xi = X[i]
                    ca = C[a]
                    s = 0.0
                    for j in range(d):
                        diff = xi[j] - ca[j]
                        s += diff * diff
                    u = math.sqrt(s)
                    upper[i] = u
                    if u * _SAFE >= max(half[a], lower[i]):
                        sidx[L] = i
                        L += 1
                if not tighten:
                    for p in range(M):
                        sidx[L] = idx[p]
                        L += 1
            if L == 0 or (L < B and s1 < stop):
                continue
            # search the waiting points together: nearest and second nearest centre of each
            for p in range(L):
                xi = X[sidx[p]]
                for j in range(d):
                    xb[j, p] = xi[j]
            for p in range(L):
                b1[p] = np.inf
                b2[p] = np.inf
                bl[p] = 0
            for c in range(k):
                for p in range(L):
                    acc[p] = 0.0
                for j in range(d):
                    cj = C[c, j]
                    for p in range(L):
                        diff = xb[j, p] - cj
                        acc[p] += diff * diff
                for p in range(L):
                    v = acc[p]
                    if v < b1[p]:
                        b2[p] = b1[p]
                        b1[p] = v
                        bl[p] = c
                    elif v < b2[p]:
                        b2[p] = v
            for p in range(L):
                i = sidx[p]
                b = bl[p]
                upper[i] = math.sqrt(b1[p])
                lower[i] = math.sqrt(b2[p])
                a = labels[i]
                if full or b != a:
                    labels[i] = b
                    changed += 1
                    wi = w[i] if weighted else 1.0
                    xi = X[i]
                    sb = sums[b]
                    for j in range(d):
                        sb[j] += wi * xi[j]
                    if full:
                        counts[b] += wi
                        continue
                    sa = sums[a]
                    for j in range(d):
                        sa[j] -= wi * xi[j]
                    if weighted:   # counted above under the old label
                        counts[a] -= wi
                        counts[b] += wi
                    else:
                        counts[a] -= 1.0
                        counts[b] += 1.0
            L = 0
    return changed


@jit
def _centre_geometry(C, previous, half, shift, full):
    """half[c]: half the distance from centre c to the nearest other centre (inf when k == 1);
    shift[c]: the distance centre c moved from ``previous`` (0 when ``full``). Direct distances."""
    k, d = C.shape
    for c in range(k):
        half[c] = np.inf
        s = 0.0
        if not full:
            for j in range(d):
                diff = C[c, j] - previous[c, j]
                s += diff * diff
        shift[c] = math.sqrt(s)
    for c in range(k):
        for e in range(c + 1, k):
            s = 0.0
            for j in range(d):
                diff = C[c, j] - C[e, j]
                s += diff * diff
            if s < half[c]:
                half[c] = s
            if s < half[e]:
                half[e] = s
    for c in range(k):
        half[c] = 0.5 * math.sqrt(half[c])


class DenseAssigner:
    """Lloyd's assignment step on :class:`~manifold_studio.algorithms.kmeans_data.DenseData`,
    keeping Hamerly's bounds and the cluster sums between the steps of one run.

    ``assign(C)`` returns (labels, sums, counts, changed): the nearest centre of every point
    (an array owned by the assigner, updated in place), the per-cluster (weighted) sums and
    counts of the points for those labels (fresh arrays), and how many labels changed since
    the last call (every point on the first call). The bounds stay valid for any movement of
    the centres between calls (re-seeded empty clusters included).
    """

    def __init__(self, data, k: int):
        n, d = data.n, data.d
        self.data = data
        self.k = k
        self.labels = np.full(n, -1, dtype=np.intp)
        self.upper = np.empty(n)
        self.lower = np.empty(n)
        self.chunk = max(_MIN_CHUNK, -(-n // _MAX_CHUNKS))
        self.n_chunks = max(1, -(-n // self.chunk))
        self.psums = np.empty((self.n_chunks, k, d))
        self.pcounts = np.empty((self.n_chunks, k))
        self.w = np.empty(0) if data.w is None else np.ascontiguousarray(data.w, dtype=float)
        self.previous = None     # the centres of the last call (None: first call)
        self.half = np.empty(k)
        self.shift = np.empty(k)

    def assign(self, C: np.ndarray):
        C = np.array(C, dtype=float, order="C")
        full = self.previous is None
        _centre_geometry(C, C if full else self.previous, self.half, self.shift, full)
        X, w, labels, upper, lower = self.data.X, self.w, self.labels, self.upper, self.lower
        half, shift, psums, pcounts, chunk = self.half, self.shift, self.psums, self.pcounts, self.chunk

        def run(c0, c1):
            return _assign_chunks(X, w, C, half, shift, labels, upper, lower, psums, pcounts, chunk,
                                  c0, c1, full)

        changed = sum(run_shares(run, self.n_chunks, min_rows=1))
        self.previous = C
        return self.labels, psums.sum(axis=0), pcounts.sum(axis=0), int(changed)
