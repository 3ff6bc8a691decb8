"""The per-column statistics of Explain (:mod:`~manifold_studio.analysis.explain_selection`) as
compiled loops that release the interpreter lock (:func:`~manifold_studio.algorithms.jit.jit`
compiles ``nogil``).

Explain runs on a worker thread while the window turns its event loop. Done with numpy and
scipy, each column is some twenty calls with Python between them (``mannwhitneyu`` alone is
about a hundred: its argument checks, ``rankdata``, the tie counts); the worker holds the lock
in all of that, and when the machine is busy and the worker loses its core while holding it,
the window waits for it (56–74 ms stalls at 1,000,000 rows × 50 columns). Here each column is a
few calls, each one loop over the values with the lock released.

The sums are sequential (numpy's are pairwise): the moments agree with numpy's to about 1e-13
relative. The rank sum and the tie term are exact (half-integer ranks, integer counts), so the
Mann–Whitney p-value is scipy's to the last bit.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.jit import jit

__all__ = ["finite_values", "finite_moments", "dev_sums", "rank_sum_and_ties"]


@jit
def finite_values(v, rows):
    """The finite values of ``v[rows]``, in the order of ``rows``."""
    out = np.empty(rows.size)
    k = 0
    for i in range(rows.size):
        x = v[rows[i]]
        if np.isfinite(x):
            out[k] = x
            k += 1
    return out[:k]


@jit
def finite_moments(v):
    """(count, mean, Σ(x − mean), Σ(x − mean)²) over the finite values of ``v`` (two passes,
    as ``every.mean()`` then the deviations from it)."""
    n = 0
    s = 0.0
    for i in range(v.size):
        x = v[i]
        if np.isfinite(x):
            s += x
            n += 1
    if n == 0:
        return 0, np.nan, 0.0, 0.0
    mean = s / n
    s1 = 0.0
    s2 = 0.0
    for i in range(v.size):
        x = v[i]
        if np.isfinite(x):
            d = x - mean
            s1 += d
            s2 += d * d
    return n, mean, s1, s2


@jit
def dev_sums(x, centre):
    """(Σ(x − centre), Σ(x − centre)²)."""
    s1 = 0.0
    s2 = 0.0
    for i in range(x.size):
        d = x[i] - centre
        s1 += d
        s2 += d * d
    return s1, s2


@jit
def rank_sum_and_ties(a, b):
    """(the sum of ``a``'s ranks among the values of ``a`` and ``b``, ties given their average
    rank; Σ(t³ − t) over the groups of t equal values): ``mannwhitneyu``'s R1 and tie term."""
    n1 = a.size
    n = n1 + b.size
    xy = np.empty(n)
    xy[:n1] = a
    xy[n1:] = b
    order = np.argsort(xy)
    r1 = 0.0
    ties = 0.0
    i = 0
    while i < n:
        x = xy[order[i]]
        j = i + 1
        while j < n and xy[order[j]] == x:
            j += 1
        in_a = 0
        for k in range(i, j):
            if order[k] < n1:
                in_a += 1
        r1 += in_a * ((i + 1 + j) / 2.0)   # positions i..j-1 hold ranks i+1..j
        t = float(j - i)
        ties += t * t * t - t
        i = j
    return r1, ties
