"""Ward linkage of points with few features by the nearest-neighbour chain on the clusters'
centroids (Murtagh 1983; scipy's ``nn_chain``, which works on the n(n-1)/2 pairwise distances).

Ward's merge cost of clusters A, B is |A||B| / (|A| + |B|) * |c_A - c_B|^2 (c the centroids); the
linkage height is sqrt(2 * cost) (the Euclidean distance for two points), as scipy's
``linkage(X, 'ward')``. The chain follows nearest neighbours among the active clusters until two
are each other's nearest, merges them (the merged centroid kept at the larger index, as scipy) and
goes on from the rest of the chain. Where two candidates are nearly tied (or two heights), the
choice rests on rounding, which differs from scipy's: :func:`ward_linkage` then gives None and
the caller uses scipy's linkage (duplicate points, data on a grid). The merges are then sorted by height (stable) and numbered in scipy's
format. Each nearest-neighbour step costs (active clusters) x (features) instead of reading a row
of the distance matrix, and there is no distance matrix: for a few features this is faster than
scipy and needs O(n d) memory instead of O(n^2).
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.jit import KernelModule

__all__ = ["ward_linkage", "CENTROID_MAX_FEATURES"]

_kernels = KernelModule(globals())
kernel = _kernels.mark

#: at most this many features the centroid chain is used (4,000 blobs, one run each on the shared
#: machine: 0.12 s vs scipy's 1.0 s at 24 features, 0.24 vs 0.66 at 64); each of its steps costs
#: more with more features, scipy's do not, so beyond this scipy's chain is kept
CENTROID_MAX_FEATURES = 64
#: relative gap below which two costs or heights count as tied (the chain's and scipy's heights
#: differ by about 1e-15 relative)
TIE = 1e-10


@kernel(fastmath=True)
def _ward_chain(C, Z, tie):
    """Merges of the Ward chain over the points C (n, d; overwritten by centroids) into Z (n-1, 4):
    the two cluster representatives (smaller first), the height, the merged size (unsorted).
    Returns False as soon as a nearest neighbour is not closer than the runner-up by a relative
    ``tie`` (the choice would then rest on rounding, where scipy's may differ)."""
    n, d = C.shape
    size = np.ones(n)
    live = np.arange(n)              # active clusters in index order (dead ones dropped lazily)
    n_live = n
    dead = 0
    chain = np.empty(n, dtype=np.int64)
    top = 0
    for k in range(n - 1):
        if dead > n_live // 4:        # drop the merged-away clusters from the scan, order kept
            m = 0
            for t in range(n_live):
                if size[live[t]] > 0:
                    live[m] = live[t]
                    m += 1
            n_live = m
            dead = 0
        if top == 0:
            for t in range(n_live):
                if size[live[t]] > 0:
                    chain[0] = live[t]
                    break
            top = 1
        while True:
            x = chain[top - 1]
            best = np.inf
            second = np.inf
            y = -1
            if top > 1:
                y = chain[top - 2]
                best = _cost(C, size, x, y, d)
            for t in range(n_live):
                i = live[t]
                if size[i] == 0 or i == x or (top > 1 and i == chain[top - 2]):
                    continue
                c = _cost(C, size, x, i, d)
                if c < best:
                    second = best
                    best = c
                    y = i
                elif c < second:
                    second = c
            if second - best <= tie * best:
                return False
            if top > 1 and y == chain[top - 2]:
                break
            chain[top] = y
            top += 1
        top -= 2
        if x > y:
            x, y = y, x
        nx = size[x]
        ny = size[y]
        Z[k, 0] = x
        Z[k, 1] = y
        Z[k, 2] = np.sqrt(2.0 * best)
        Z[k, 3] = nx + ny
        for j in range(d):
            C[y, j] = (nx * C[x, j] + ny * C[y, j]) / (nx + ny)
        size[x] = 0
        size[y] = nx + ny
        dead += 1
    return True


@kernel(fastmath=True)
def _cost(C, size, a, b, d):
    s = 0.0
    for j in range(d):
        t = C[a, j] - C[b, j]
        s += t * t
    return size[a] * size[b] / (size[a] + size[b]) * s


@kernel
def _number(Z, n):
    """scipy's numbering of the sorted merges Z (its ``label``): each row's two clusters found by
    union-find (points 0..n-1, the k-th merge n + k), smaller first, and the merged size."""
    parent = np.arange(2 * n - 1)
    size = np.ones(2 * n - 1)
    for k in range(n - 1):
        roots = np.empty(2, dtype=np.int64)
        for e in range(2):
            x = int(Z[k, e])
            p = x
            while parent[x] != x:
                x = parent[x]
            while parent[p] != x:
                q = parent[p]
                parent[p] = x
                p = q
            roots[e] = x
        a, b = roots[0], roots[1]
        Z[k, 0] = min(a, b)
        Z[k, 1] = max(a, b)
        parent[a] = n + k
        parent[b] = n + k
        size[n + k] = size[a] + size[b]
        Z[k, 3] = size[n + k]


def ward_linkage(X, tie: float = TIE) -> np.ndarray | None:
    """scipy's ``linkage(X, 'ward')`` (n-1, 4) of the rows of X by the centroid chain, or None when
    a choice of the chain or the order of two heights is a near-tie (relative ``tie``: duplicate
    points, equal distances), which rounding decides: then only scipy's own linkage gives its
    merges."""
    n = X.shape[0]
    Z = np.zeros((max(n - 1, 0), 4))
    if n < 2:
        return Z
    _kernels.compile()
    if not _ward_chain(np.array(X, dtype=np.float64, order="C"), Z, tie):
        return None
    Z = Z[np.argsort(Z[:, 2], kind="mergesort")]
    h = Z[:, 2]
    if np.any(h[1:] - h[:-1] <= tie * h[1:]):
        return None
    _number(Z, n)
    return Z
