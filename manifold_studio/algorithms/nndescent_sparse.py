"""Compiled kernels of NN-descent on sparse rows (CSR, sorted or not), for the driver
:class:`manifold_studio.algorithms.neighbors_approx.NNDescent` (``kernels=`` this module) through
:class:`manifold_studio.algorithms.neighbors_approx_sparse.SparseApproximateIndex`.

The sparse rows are never densified. ``data`` is the tuple ``(indptr, indices, values, sq, sketch,
width)``: the CSR arrays (float32 values), each row's squared length ``sq``, a dense sketch of the
rows (``X @ R``, R a seeded Gaussian d x s matrix, s = :data:`SKETCH_WIDTH` at most) and a float32
template of length d. The random-projection trees (:mod:`~manifold_studio.algorithms.nndescent`'s
``_build_tree`` and ``_descend``) split the sketch: they only give the initial guess and the
queries' starting points. Every distance NN-descent compares is the squared Euclidean distance
of the sparse rows themselves, |x|^2 + |y|^2 - 2 x.y (``cosine``: on unit rows), with x scattered
once into a dense work row of length d and the products read off y's stored values, so each
comparison costs y's non-zeros. The heaps, candidate sampling and update application are the
dense kernels' own (:mod:`~manifold_studio.algorithms.nndescent`).
"""
from __future__ import annotations

import threading

import numpy as np

from manifold_studio.algorithms import nndescent as K

_KERNELS: list[str] = []
_ready = False
_lock = threading.Lock()
jit = K.kernel_marker(_KERNELS)

#: columns of the dense sketch the trees split (at most the number of features)
SKETCH_WIDTH = 32


def compile_kernels() -> None:
    """Compile the dense kernels this module calls, then this module's, once."""
    global _ready
    K.compile_kernels()
    with _lock:
        if not _ready:
            K.compile_module(globals(), _KERNELS)
            _ready = True


def pack(X, sketch) -> tuple:
    """The kernels' ``data`` tuple for CSR rows X (float32 values) and their dense sketch."""
    values = np.ascontiguousarray(X.data, dtype=np.float32)
    sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return (np.ascontiguousarray(X.indptr, dtype=np.int64), np.ascontiguousarray(X.indices, dtype=np.int64),
            values, sq, np.ascontiguousarray(sketch, dtype=np.float32), np.zeros(X.shape[1], dtype=np.float32))


def tree_points(data):
    """The rows the random-projection trees split: the sketch."""
    return data[4]


@jit
def _scatter(data, p, w, clear):
    """Row p into the dense work row w (or its entries back to 0 with ``clear``)."""
    indptr, indices, values = data[0], data[1], data[2]
    for e in range(indptr[p], indptr[p + 1]):
        w[indices[e]] = 0.0 if clear else values[e]


@jit(fastmath=True)
def _dist_to(data, q, w, w_sq):
    """Squared distance of row q to the row scattered into w (squared length w_sq)."""
    indptr, indices, values = data[0], data[1], data[2]
    s = 0.0
    for e in range(indptr[q], indptr[q + 1]):
        s += values[e] * w[indices[e]]
    d = w_sq + data[3][q] - 2.0 * s
    return np.float32(d if d > 0.0 else 0.0)


@jit
def _leaf_join(data, order, leaf_lo, leaf_hi, first, last, hd, hi, hf, code):
    """All pairs inside the leaves first..last of one tree (as the dense kernel)."""
    w = np.zeros_like(data[5])
    for l in range(first, last):
        lo = leaf_lo[l]
        up = leaf_hi[l]
        for s in range(lo, up):
            p = order[s]
            _scatter(data, p, w, False)
            for t in range(s + 1, up):
                q = order[t]
                d = _dist_to(data, q, w, data[3][p])
                K._push(hd[p], hi[p], hf[p], d, q, 1)
                K._push(hd[q], hi[q], hf[q], d, p, 1)
            _scatter(data, p, w, True)


@jit
def _local_join(data, new_c, old_c, thr, start, stop, up_src, up_dst, up_d, up_n, code, base):
    """Candidate updates of the points start..stop (as the dense kernel)."""
    C = new_c.shape[1]
    w = np.zeros_like(data[5])
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
                d = _dist_to(data, q, w, data[3][p])
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
def _search(data, queries, k, indptr, indices, trees_a, trees_b, trees_child, trees_nodes,
            trees_order, trees_lo, trees_hi, n_trees, epsilon, code, out_d, out_i, s, n_parts):
    """Best-first search of the graph (indptr, indices) for the sparse queries s, s + n_parts, ...
    (``queries`` packed as ``data``; the dense kernel's walk)."""
    m = queries[0].shape[0] - 1
    sketch = data[4]
    n = sketch.shape[0]
    visited = np.zeros(n, dtype=np.uint8)
    touched = np.empty(n, dtype=np.int64)
    cd = np.empty(n, dtype=np.float32)
    ci = np.empty(n, dtype=np.int64)
    w = np.zeros_like(data[5])
    for qn in range(s, m, n_parts):
        x_sq = queries[3][qn]
        _scatter(queries, qn, w, False)
        x = queries[4][qn]
        hd = out_d[qn]
        hi = out_i[qn]
        hf = np.zeros(k, dtype=np.uint8)
        hd[:] = np.inf
        hi[:] = -1
        nt = 0
        nc = 0
        for tr in range(n_trees):
            leaf = K._descend(sketch, x, trees_a[tr], trees_b[tr], trees_child[tr], trees_nodes[tr])
            for pos in range(trees_lo[tr, leaf], trees_hi[tr, leaf]):
                j = trees_order[tr, pos]
                if visited[j]:
                    continue
                visited[j] = 1
                touched[nt] = j
                nt += 1
                d = _dist_to(data, j, w, x_sq)
                K._push(hd, hi, hf, d, j, 0)
                nc = K._heap_add(cd, ci, nc, d, j)
        while nc > 0:
            d0 = cd[0]
            c = ci[0]
            nc = K._heap_pop(cd, ci, nc)
            if d0 > hd[0] * (1.0 + epsilon):
                break
            for e in range(indptr[c], indptr[c + 1]):
                j = indices[e]
                if visited[j]:
                    continue
                visited[j] = 1
                touched[nt] = j
                nt += 1
                d = _dist_to(data, j, w, x_sq)
                if d < hd[0] * (1.0 + epsilon):
                    K._push(hd, hi, hf, d, j, 0)
                    nc = K._heap_add(cd, ci, nc, d, j)
        _scatter(queries, qn, w, True)
        for t in range(nt):
            visited[touched[t]] = 0


@jit
def _pair_sq(x_indptr, x_indices, x_values, y_indptr, y_indices, y_values, idx, first, last, out, w):
    """out[r, t] = |x_r - y_idx[r, t]|^2 for the rows first..last, summed over the sparse
    differences themselves in float64 (no cancellation; copies at exactly 0); w a zero work row."""
    for r in range(first, last):
        for t in range(idx.shape[1]):
            j = idx[r, t]
            for e in range(x_indptr[r], x_indptr[r + 1]):
                w[x_indices[e]] = x_values[e]
            s = 0.0
            for e in range(y_indptr[j], y_indptr[j + 1]):
                c = y_indices[e]
                d = y_values[e] - w[c]
                s += d * d
                w[c] = 0.0
            for e in range(x_indptr[r], x_indptr[r + 1]):
                c = x_indices[e]
                s += w[c] * w[c]
                w[c] = 0.0
            out[r, t] = s
