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
comparison costs y's non-zeros. Every kernel is the dense module's
(:mod:`~manifold_studio.algorithms.nndescent`): the leaf join, local join and graph search
(its ``ROW_KERNELS``) are compiled again over this module's row hooks (``tree_points``,
``_work``, ``_scatter``, ``_between``).
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import nndescent as K
from manifold_studio.algorithms.jit import KernelModule

#: columns of the dense sketch the trees split (at most the number of features)
SKETCH_WIDTH = 32

# this module's row hooks, then the dense module's row kernels compiled again over them
_kernels = KernelModule(globals(), needs=(K.compile_kernels,), shared=(vars(K), K.ROW_KERNELS))
jit = _kernels.mark
#: compile the dense kernels, then this module's and the dense row kernels over its hooks, once
compile_kernels = _kernels.compile


def pack(X, sketch) -> tuple:
    """The kernels' ``data`` tuple for CSR rows X (float32 values) and their dense sketch."""
    values = np.ascontiguousarray(X.data, dtype=np.float32)
    sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return (np.ascontiguousarray(X.indptr, dtype=np.int64), np.ascontiguousarray(X.indices, dtype=np.int64),
            values, sq, np.ascontiguousarray(sketch, dtype=np.float32), np.zeros(X.shape[1], dtype=np.float32))


@jit
def tree_points(data):
    """Row hook: the rows the random-projection trees split: the sketch."""
    return data[4]


@jit
def _work(data):
    """Row hook: the dense work row (zeros, length d) a row is scattered into."""
    return np.zeros_like(data[5])


@jit
def _scatter(data, p, w, clear):
    """Row hook: row p into the dense work row w (or its entries back to 0 with ``clear``)."""
    indptr, indices, values = data[0], data[1], data[2]
    for e in range(indptr[p], indptr[p + 1]):
        w[indices[e]] = 0.0 if clear else values[e]


@jit(fastmath=True)
def _between(xs, p, ys, q, w, code):
    """Row hook: squared distance of row p of ``xs`` (scattered into w) to row q of ``ys``."""
    indptr, indices, values = ys[0], ys[1], ys[2]
    s = 0.0
    for e in range(indptr[q], indptr[q + 1]):
        s += values[e] * w[indices[e]]
    d = xs[3][p] + ys[3][q] - 2.0 * s
    return np.float32(d if d > 0.0 else 0.0)


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
