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

__all__ = ["finite_values", "mean_of", "dev_sums", "rank_sum_and_ties",
           "rank_sum_and_ties_zeros", "sparse_column_groups", "moments_with_zeros"]


@jit
def finite_values(v, rows):
    """The finite values of ``v[rows]`` in the order of ``rows``, or with ``rows`` None of every
    row of ``v``: a contiguous copy (a data set's column is a strided view: one pass over it,
    then the sums run over the copy)."""
    n = v.size if rows is None else rows.size
    out = np.empty(n)
    k = 0
    for i in range(n):
        x = v[i] if rows is None else v[rows[i]]
        if np.isfinite(x):
            out[k] = x
            k += 1
    return out[:k]


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


def rank_sum_and_ties(a, b):
    """(the sum of ``a``'s ranks among the values of ``a`` and ``b``, ties given their average
    rank; Σ(t³ − t) over the groups of t equal values): ``mannwhitneyu``'s R1 and tie term.
    Finite values; each group sorted on its own, then one walk through both in step."""
    return rank_sum_and_ties_zeros(a, b, 0, 0)


@jit
def rank_sum_and_ties_zeros(a, b, za, zb):
    """:func:`rank_sum_and_ties` of ``a`` with ``za`` zeros added and ``b`` with ``zb`` zeros
    added, without making the zeros: a sparse column's implicit zeros are one block of ties
    (joined by any stored zero), ranked where 0 falls among the stored values."""
    sa = np.sort(a)
    sb = np.sort(b)
    n1, n2 = sa.size, sb.size
    zeros_left = za + zb > 0
    r1 = 0.0
    ties = 0.0
    i = 0
    j = 0
    done = 0   # values ranked so far
    while i < n1 or j < n2 or zeros_left:
        have = False
        x = 0.0
        if i < n1:
            x = sa[i]
            have = True
        if j < n2 and (not have or sb[j] < x):
            x = sb[j]
            have = True
        if zeros_left and (not have or 0.0 < x):
            x = 0.0
        in_a = 0
        while i < n1 and sa[i] == x:
            i += 1
            in_a += 1
        in_b = 0
        while j < n2 and sb[j] == x:
            j += 1
            in_b += 1
        if zeros_left and x == 0.0:
            in_a += za
            in_b += zb
            zeros_left = False
        t = in_a + in_b
        r1 += in_a * ((2 * done + t + 1) / 2.0)   # the t equal values hold ranks done+1..done+t
        ties += float(t) ** 3 - t
        done += t
    return r1, ties


@jit
def sparse_column_groups(data, indices, start, end, member):
    """One column of a CSC matrix (stored values ``data[start:end]`` at rows
    ``indices[start:end]``) split into up to four groups: bit g of ``member[row]`` puts the row in
    group g. Returns (values: row g holds group g's finite stored values first, kept: how many
    per group, stored: stored values per group, finite or not); a group's implicit zeros are its
    row count minus ``stored``."""
    out = np.empty((4, end - start))
    kept = np.zeros(4, np.int64)
    stored = np.zeros(4, np.int64)
    for p in range(start, end):
        bits = member[indices[p]]
        x = data[p]
        finite = np.isfinite(x)
        for g in range(4):
            if bits & (1 << g):
                stored[g] += 1
                if finite:
                    out[g, kept[g]] = x
                    kept[g] += 1
    return out, kept, stored


def moments_with_zeros(x, zeros):
    """(mean, variance with ddof=1, 0 for one value) of the finite values ``x`` with ``zeros``
    zeros added (two passes of :func:`dev_sums`; at least one value in all)."""
    n = x.size + zeros
    mean = dev_sums(x, 0.0)[0] / n
    s1, s2 = dev_sums(x, mean)
    s1 -= zeros * mean
    s2 += zeros * mean * mean
    var = max(s2 - s1 * s1 / n, 0.0) / (n - 1) if n > 1 else 0.0
    return mean, var
