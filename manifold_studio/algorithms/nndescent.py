"""Compiled kernels of the approximate nearest neighbours: NN-descent (Dong, Moses & Li 2011) on
a random-projection forest, run on every core by the driver
:class:`manifold_studio.algorithms.neighbors_approx.NNDescent`; used through
:mod:`manifold_studio.algorithms.neighbors` (``neighbors='approximate'``).

* Initial guess: ``n_trees`` random-projection trees (each node splits its points by the
  hyperplane halfway between two random points of the node); all pairs inside each leaf.
* NN-descent: each round samples at most ``max_candidates`` new and old neighbours of every
  point (its own and reverse ones), introduces them to each other (the local join) and keeps
  the closer ones, until fewer than ``delta * n * k`` lists change. Candidate updates are
  computed in parallel into per-point buffers and applied by one thread per share of target
  points, so the result does not depend on the number of threads (deterministic for a seed).
* Queries for new points (``extend``): each query descends every tree to a leaf, takes the
  leaf's points as a start and walks the search graph (the k-NN graph plus reverse edges)
  best-first, stopping when the closest unexplored candidate is farther than
  ``(1 + epsilon)`` times the current k-th distance. A query reads only the fitted index,
  so a new point's neighbours never depend on the other new points (sample-wise).

Measured on 100,000 x 50 clustered points with t-SNE's 91 neighbours (one run, shared
2-core machine): this NN-descent 43 s wall, 62 s CPU, recall@10 0.996; pynndescent 41 s wall,
27 s CPU, recall 1.0; the exact float32-screened BLAS search 35 s CPU. With many neighbours the
local join's updates (thresholds fixed for a round) and the k-long heaps cost more than brute
force up to about 180,000 points, so 'auto' keeps exact neighbours there
(:data:`manifold_studio.algorithms.neighbors.AUTO_NEIGHBOURS_SCALE`).

Distances: squared Euclidean (``euclidean``; ``cosine`` on unit rows) or L1 (``manhattan``), in
float32; the caller recomputes the final ones in float64. Sparse rows: :mod:`.nndescent_sparse`,
which compiles this module's row kernels (:data:`ROW_KERNELS`) again over its own row hooks
(``tree_points``, ``_work``, ``_scatter``, ``_between``; see
:func:`~manifold_studio.algorithms.jit.compile_module`).
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.jit import KernelModule

_kernels = KernelModule(globals())
jit = _kernels.mark
#: compile every kernel of this module, once, before the first use
compile_kernels = _kernels.compile


#: kernels whose bodies read rows only through the row hooks below (also compiled for sparse rows)
ROW_KERNELS = ("_leaf_join", "_local_join", "_visit", "_search")


@jit
def tree_points(data):
    """Row hook: the rows the random-projection trees split (the data themselves, for dense rows)."""
    return data


@jit
def _work(data):
    """Row hook: a work row for :func:`_scatter` (none needed by dense rows)."""
    return np.zeros(0, dtype=np.float32)


@jit
def _scatter(data, p, w, clear):
    """Row hook: make row p of ``data`` the one :func:`_between` compares (dense rows: read in place)."""


@jit
def _between(xs, p, ys, q, w, code):
    """Row hook: distance of row p of ``xs`` (the one :func:`_scatter` made current) to row q of ``ys``."""
    return _dist(xs[p], ys[q], code)


SQEUCLIDEAN = 0
MANHATTAN = 1


@jit(fastmath=True)
def _dist(a, b, code):
    s = np.float32(0.0)
    if code == MANHATTAN:
        for t in range(a.shape[0]):
            s += abs(a[t] - b[t])
    else:
        for t in range(a.shape[0]):
            d = a[t] - b[t]
            s += d * d
    return s


@jit
def _hash(a, b, c):
    """A deterministic pseudo-random 31-bit number from three integers (priorities)."""
    h = (a * 0x9E3779B1 + b * 0x85EBCA77 + c * 0xC2B2AE3D) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    h ^= h >> 12
    h = (h * 0x297A2D39) & 0xFFFFFFFF
    h ^= h >> 15
    return h & 0x7FFFFFFF


@jit
def _hyperplane(data, a, b, h):
    """Normal h = x_a - x_b (written into h) and offset of the hyperplane halfway between them."""
    o = np.float32(0.0)
    for t in range(h.shape[0]):
        h[t] = data[a, t] - data[b, t]
        o += h[t] * (np.float32(0.5) * (data[a, t] + data[b, t]))
    return o


@jit(fastmath=True)
def _margin(h, o, x):
    s = np.float32(0.0)
    for t in range(x.shape[0]):
        s += h[t] * x[t]
    return s - o


@jit
def _build_tree(data, leaf_size, seed, order, node_a, node_b, node_child, leaf_lo, leaf_hi):
    """One random-projection tree over ``data``: ``order`` is permuted so that every leaf is a
    contiguous range; internal node t splits by the points (node_a[t], node_b[t]) into
    node_child[t, 0] (margin <= 0) and node_child[t, 1]; a negative child -1 - l is leaf l.
    Returns (number of nodes, number of leaves)."""
    n = data.shape[0]
    for i in range(n):
        order[i] = i
    stack_lo = np.empty(128, dtype=np.int64)
    stack_hi = np.empty(128, dtype=np.int64)
    stack_parent = np.empty(128, dtype=np.int64)
    stack_side = np.empty(128, dtype=np.int64)
    top = 0
    stack_lo[0] = 0
    stack_hi[0] = n
    stack_parent[0] = -1
    stack_side[0] = 0
    top = 1
    n_nodes = 0
    n_leaves = 0
    margins = np.empty(n, dtype=np.float32)
    h = np.empty(data.shape[1], dtype=np.float32)
    while top > 0:
        top -= 1
        lo = stack_lo[top]
        hi = stack_hi[top]
        parent = stack_parent[top]
        side = stack_side[top]
        size = hi - lo
        if (size <= leaf_size or top >= 120 or n_nodes + 1 >= node_a.shape[0]
                or n_leaves + top + 2 >= leaf_lo.shape[0]):
            leaf_lo[n_leaves] = lo
            leaf_hi[n_leaves] = hi
            if parent >= 0:
                node_child[parent, side] = -1 - n_leaves
            n_leaves += 1
            continue
        t = n_nodes
        n_nodes += 1
        if parent >= 0:
            node_child[parent, side] = t
        r = _hash(seed, t, lo)
        a = order[lo + r % size]
        b = order[lo + _hash(seed + 1, t, hi) % size]
        if a == b:
            b = order[lo + (r % size + 1 + _hash(seed + 2, t, lo) % (size - 1)) % size]
        node_a[t] = a
        node_b[t] = b
        o = _hyperplane(data, a, b, h)
        left = 0
        for i in range(lo, hi):
            m = _margin(h, o, data[order[i]])
            margins[i] = m
            if m <= 0:
                left += 1
        if left == 0 or left == size:      # duplicates: no hyperplane separates them; halve
            node_a[t] = -1
            mid = lo + size // 2
        else:                              # partition order[lo:hi] by the sign of the margin
            i = lo
            j = hi - 1
            while True:
                while i <= j and margins[i] <= 0:
                    i += 1
                while i <= j and margins[j] > 0:
                    j -= 1
                if i >= j:
                    break
                tmp = order[i]
                order[i] = order[j]
                order[j] = tmp
                tm = margins[i]
                margins[i] = margins[j]
                margins[j] = tm
            mid = lo + left
        stack_lo[top] = mid
        stack_hi[top] = hi
        stack_parent[top] = t
        stack_side[top] = 1
        top += 1
        stack_lo[top] = lo
        stack_hi[top] = mid
        stack_parent[top] = t
        stack_side[top] = 0
        top += 1
    return n_nodes, n_leaves


@jit
def _descend(data, x, node_a, node_b, node_child, n_nodes):
    """Leaf number reached by the point x."""
    if n_nodes == 0:
        return 0
    h = np.empty(data.shape[1], dtype=np.float32)
    t = 0
    while True:
        a = node_a[t]
        if a < 0:
            side = 0
        else:
            o = _hyperplane(data, a, node_b[t], h)
            side = 0 if _margin(h, o, x) <= 0 else 1
        c = node_child[t, side]
        if c < 0:
            return -1 - c
        t = c


@jit
def _push(hd, hi, hf, d, j, flag):
    """Push (d, j) into the bounded max-heap (hd, hi, hf) unless it is not closer than the
    largest or j is already in it; returns 1 when it changed."""
    k = hd.shape[0]
    if d >= hd[0]:
        return 0
    for t in range(k):
        if hi[t] == j:
            return 0
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= k:
            break
        if c + 1 < k and hd[c + 1] > hd[c]:
            c += 1
        if hd[c] <= d:
            break
        hd[pos] = hd[c]
        hi[pos] = hi[c]
        hf[pos] = hf[c]
        pos = c
    hd[pos] = d
    hi[pos] = j
    hf[pos] = flag
    return 1


@jit
def _leaf_join(data, order, leaf_lo, leaf_hi, first, last, hd, hi, hf, code):
    """All pairs inside the leaves first..last of one tree (leaves hold disjoint points, so
    shares of leaves run in parallel)."""
    w = _work(data)
    for l in range(first, last):
        lo = leaf_lo[l]
        up = leaf_hi[l]
        for s in range(lo, up):
            p = order[s]
            _scatter(data, p, w, False)
            for t in range(s + 1, up):
                q = order[t]
                d = _between(data, p, data, q, w, code)
                _push(hd[p], hi[p], hf[p], d, q, 1)
                _push(hd[q], hi[q], hf[q], d, p, 1)
            _scatter(data, p, w, True)


@jit
def _candidates(hi, hf, new_c, new_p, old_c, old_p, seed, rnd, s, n_parts):
    """Sample at most C new and C old neighbours of the points p with p % n_parts == s, own and
    reverse, by random priority (one part per thread; every part reads all the lists, and each
    candidate list is written by one thread in the same order whatever the number of parts)."""
    n, k = hi.shape
    for i in range(s, n, n_parts):
        new_c[i] = -1
        old_c[i] = -1
        new_p[i] = 0x7FFFFFFF
        old_p[i] = 0x7FFFFFFF
    for i in range(n):
        mine = i % n_parts == s
        for t in range(k):
            j = hi[i, t]
            if j < 0 or not (mine or j % n_parts == s):
                continue
            pr = _hash(seed + rnd, i, j)
            if hf[i, t]:
                if mine:
                    _sample(new_c[i], new_p[i], j, pr)
                if j % n_parts == s:
                    _sample(new_c[j], new_p[j], i, pr)
            else:
                if mine:
                    _sample(old_c[i], old_p[i], j, pr)
                if j % n_parts == s:
                    _sample(old_c[j], old_p[j], i, pr)


@jit
def _mark_old(hi, hf, new_c, start, stop):
    """Sampled new neighbours of the points start..stop become old in their lists (after every
    part of :func:`_candidates` has read the flags)."""
    k = hi.shape[1]
    C = new_c.shape[1]
    for i in range(start, stop):
        for t in range(k):
            j = hi[i, t]
            if j >= 0 and hf[i, t]:
                for c in range(C):
                    if new_c[i, c] == j:
                        hf[i, t] = 0
                        break


@jit
def _sample(cand, prio, j, pr):
    """Keep the C items of smallest priority (a max-heap on priority), without duplicates."""
    C = cand.shape[0]
    if pr >= prio[0]:
        return
    for s in range(C):
        if cand[s] == j:
            return
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= C:
            break
        if c + 1 < C and prio[c + 1] > prio[c]:
            c += 1
        if prio[c] <= pr:
            break
        prio[pos] = prio[c]
        cand[pos] = cand[c]
        pos = c
    prio[pos] = pr
    cand[pos] = j


@jit
def _local_join(data, new_c, old_c, thr, start, stop, up_src, up_dst, up_d, up_n, code, base):
    """Candidate updates of the points start..stop: pairs (new, new) and (new, old) of each
    point's candidates, kept when closer than either end's current k-th distance."""
    C = new_c.shape[1]
    w = _work(data)
    for v in range(start, stop):
        r = v - base
        cnt = 0
        for a in range(C):
            p = new_c[v, a]
            if p < 0:
                continue
            _scatter(data, p, w, False)
            for b in range(a + 1, C + C):
                q = new_c[v, b] if b < C else old_c[v, b - C]
                if q < 0 or q == p:
                    continue
                d = _between(data, p, data, q, w, code)
                if d < thr[p]:
                    up_src[r, cnt] = p
                    up_dst[r, cnt] = q
                    up_d[r, cnt] = d
                    cnt += 1
                if d < thr[q]:
                    up_src[r, cnt] = q
                    up_dst[r, cnt] = p
                    up_d[r, cnt] = d
                    cnt += 1
            _scatter(data, p, w, True)
        up_n[r] = cnt


@jit
def _apply(up_src, up_dst, up_d, up_n, rows, hd, hi, hf, s, n_parts):
    """Apply the updates to the target points p with p % n_parts == s (one part per thread:
    each heap is written by one thread, in the same order whatever the number of parts)."""
    c = 0
    for r in range(rows):
        for u in range(up_n[r]):
            p = up_src[r, u]
            if p % n_parts == s:
                c += _push(hd[p], hi[p], hf[p], up_d[r, u], up_dst[r, u], 1)
    return c


@jit
def _sort_heaps(hd, hi):
    n, k = hd.shape
    for i in range(n):
        for a in range(1, k):
            d = hd[i, a]
            j = hi[i, a]
            b = a - 1
            while b >= 0 and (hd[i, b] > d or (hd[i, b] == d and hi[i, b] > j)):
                hd[i, b + 1] = hd[i, b]
                hi[i, b + 1] = hi[i, b]
                b -= 1
            hd[i, b + 1] = d
            hi[i, b + 1] = j


@jit
def _search(data, queries, k, indptr, indices, trees_a, trees_b, trees_child, trees_nodes,
            trees_order, trees_lo, trees_hi, n_trees, epsilon, code, out_d, out_i, s, n_parts):
    """Best-first search of the graph (indptr, indices) for the queries s, s + n_parts, ...
    (see the module)."""
    points = tree_points(data)
    m = tree_points(queries).shape[0]
    n = points.shape[0]
    visited = np.zeros(n, dtype=np.uint8)
    touched = np.empty(n, dtype=np.int64)
    cd = np.empty(n, dtype=np.float32)      # candidate min-heap
    ci = np.empty(n, dtype=np.int64)
    w = _work(data)
    for qn in range(s, m, n_parts):
        x = tree_points(queries)[qn]
        _scatter(queries, qn, w, False)
        hd = out_d[qn]
        hi = out_i[qn]
        hf = np.zeros(k, dtype=np.uint8)
        hd[:] = np.inf
        hi[:] = -1
        nt = 0
        nc = 0
        for tr in range(n_trees):
            leaf = _descend(points, x, trees_a[tr], trees_b[tr], trees_child[tr], trees_nodes[tr])
            for pos in range(trees_lo[tr, leaf], trees_hi[tr, leaf]):
                nt, nc = _visit(data, queries, qn, trees_order[tr, pos], w, code, visited, touched, nt,
                                hd, hi, hf, cd, ci, nc, False, epsilon)
        while nc > 0:
            d0 = cd[0]
            c = ci[0]
            nc = _heap_pop(cd, ci, nc)
            if d0 > hd[0] * (1.0 + epsilon):
                break
            for e in range(indptr[c], indptr[c + 1]):
                nt, nc = _visit(data, queries, qn, indices[e], w, code, visited, touched, nt,
                                hd, hi, hf, cd, ci, nc, True, epsilon)
        _scatter(queries, qn, w, True)
        for t in range(nt):
            visited[touched[t]] = 0


@jit
def _visit(data, queries, qn, j, w, code, visited, touched, nt, hd, hi, hf, cd, ci, nc, bounded, epsilon):
    """Point j met by query qn of :func:`_search`, unless visited: into the result heap and the
    candidate heap (``bounded``: only when closer than (1 + epsilon) times the k-th distance).
    Returns the new counts of touched points and of candidates."""
    if visited[j]:
        return nt, nc
    visited[j] = 1
    touched[nt] = j
    d = _between(queries, qn, data, j, w, code)
    if not bounded or d < hd[0] * (1.0 + epsilon):
        _push(hd, hi, hf, d, j, 0)
        nc = _heap_add(cd, ci, nc, d, j)
    return nt + 1, nc


@jit
def _heap_add(cd, ci, nc, d, j):
    pos = nc
    while pos > 0:
        parent = (pos - 1) // 2
        if cd[parent] <= d:
            break
        cd[pos] = cd[parent]
        ci[pos] = ci[parent]
        pos = parent
    cd[pos] = d
    ci[pos] = j
    return nc + 1


@jit
def _heap_pop(cd, ci, nc):
    nc -= 1
    d = cd[nc]
    j = ci[nc]
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= nc:
            break
        if c + 1 < nc and cd[c + 1] < cd[c]:
            c += 1
        if cd[c] >= d:
            break
        cd[pos] = cd[c]
        ci[pos] = ci[c]
        pos = c
    cd[pos] = d
    ci[pos] = j
    return nc
