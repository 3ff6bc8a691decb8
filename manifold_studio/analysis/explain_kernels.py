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

__all__ = ["finite_values", "finite_column", "mean_of", "dev_sums", "rank_sum_and_ties"]


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
def finite_column(v):
    """A contiguous copy of the finite values of ``v`` (a data set's column is a strided view:
    one pass over it, then the sums run over the copy)."""
    out = np.empty(v.size)
    n = 0
    for i in range(v.size):
        x = v[i]
        if np.isfinite(x):
            out[n] = x
            n += 1
    return out[:n]


@jit
def mean_of(x):
    """The mean of a non-empty array (four partial sums, as numpy's pairwise sum keeps several,
    so the additions need not wait for each other)."""
    s = np.zeros(4)
    m = x.size
    for i in range(0, m - m % 4, 4):
        for k in range(4):
            s[k] += x[i + k]
    for i in range(m - m % 4, m):
        s[0] += x[i]
    return ((s[0] + s[1]) + (s[2] + s[3])) / m


@jit
def dev_sums(x, centre):
    """(Σ(x − centre), Σ(x − centre)²), four partial sums each."""
    s1 = np.zeros(4)
    s2 = np.zeros(4)
    m = x.size
    for i in range(0, m - m % 4, 4):
        for k in range(4):
            d = x[i + k] - centre
            s1[k] += d
            s2[k] += d * d
    for i in range(m - m % 4, m):
        d = x[i] - centre
        s1[0] += d
        s2[0] += d * d
    return (s1[0] + s1[1]) + (s1[2] + s1[3]), (s2[0] + s2[1]) + (s2[2] + s2[3])


@jit
def rank_sum_and_ties(a, b):
    """(the sum of ``a``'s ranks among the values of ``a`` and ``b``, ties given their average
    rank; Σ(t³ − t) over the groups of t equal values): ``mannwhitneyu``'s R1 and tie term.
    Finite values; each group sorted on its own, then one walk through both in step."""
    sa = np.sort(a)
    sb = np.sort(b)
    n1, n2 = sa.size, sb.size
    r1 = 0.0
    ties = 0.0
    i = 0
    j = 0
    done = 0   # values ranked so far
    while i < n1 or j < n2:
        x = sa[i] if j >= n2 or (i < n1 and sa[i] <= sb[j]) else sb[j]
        in_a = 0
        while i < n1 and sa[i] == x:
            i += 1
            in_a += 1
        in_b = 0
        while j < n2 and sb[j] == x:
            j += 1
            in_b += 1
        t = in_a + in_b
        r1 += in_a * ((2 * done + t + 1) / 2.0)   # the t equal values hold ranks done+1..done+t
        ties += float(t) ** 3 - t
        done += t
    return r1, ties
