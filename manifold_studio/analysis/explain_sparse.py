"""Explain's numeric statistics for every feature of a sparse data set, column by column, without
densifying the matrix (a single-cell set has thousands of genes in a CSR matrix).

The matrix is converted to CSC once (its stored values, column after column). For one column,
each group's finite stored values are gathered in one compiled loop
(:func:`~manifold_studio.analysis.explain_kernels.sparse_column_groups`); a group's other rows are
zeros. The moments add the zeros to the two-pass sums, and the Mann–Whitney rank sum ranks the
zeros as one block of ties where 0 falls among the stored values
(:func:`~manifold_studio.analysis.explain_kernels.rank_sum_and_ties_zeros`): the same exact
rank sum and tie term as on the dense column, so the p-value is scipy's ``mannwhitneyu`` on it to
the last bit. The work per column is proportional to its stored values, not to the rows.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.analysis.explain_kernels import (
    moments_with_zeros, rank_sum_and_ties_zeros, sparse_column_groups,
)
from manifold_studio.analysis.explain_selection import (
    KS, ExplainRow, _smd_from, mann_whitney_p_from,
)

__all__ = ["SparseFeatures", "membership", "sparse_histograms"]

_A, _B, _SA, _SB = 0, 1, 2, 3


def membership(n: int, groups) -> np.ndarray:
    """One byte per row: bit g set when the row is in ``groups[g]`` (sorted row indices)."""
    member = np.zeros(n, dtype=np.uint8)
    for g, rows in enumerate(groups):
        member[rows] |= np.uint8(1 << g)
    return member


class SparseFeatures:
    """The feature columns of a sparse matrix (``X``: anything ``scipy.sparse`` converts to CSC;
    ``names``: one per column) as one block for
    :func:`~manifold_studio.analysis.explain_selection.explain` (its ``features`` argument)."""

    def __init__(self, X, names):
        import scipy.sparse as sp   # lazy: kept off the start-up

        self.X = sp.csc_array(X, dtype=np.float64)
        self.names = list(names)
        self.n_rows = self.X.shape[0]
        if len(self.names) != self.X.shape[1]:
            raise ValueError(f"{len(self.names)} names for {self.X.shape[1]} columns")

    def groups(self, j: int, member: np.ndarray):
        """(values, kept, stored) of column ``j`` split by ``member`` (see the kernel)."""
        X = self.X
        return sparse_column_groups(X.data, X.indices, int(X.indptr[j]), int(X.indptr[j + 1]), member)

    def rows(self, rows_a, rows_b, sample_a, sample_b, test, checkpoint) -> list[ExplainRow]:
        """One numeric ExplainRow per column: d and the means over every row of the groups, the
        p-value over the samples (as the dense columns)."""
        sizes = np.array([rows_a.size, rows_b.size, sample_a.size, sample_b.size], dtype=np.int64)
        member = membership(self.n_rows, (rows_a, rows_b, sample_a, sample_b))
        out = []
        for j, name in enumerate(self.names):
            checkpoint(j, name)
            values, kept, stored = self.groups(j, member)
            zeros = sizes - stored
            part = [values[g, :kept[g]] for g in range(4)]
            mean_a = mean_b = d = np.nan
            if kept[_A] + zeros[_A] and kept[_B] + zeros[_B]:
                (mean_a, var_a), (mean_b, var_b) = (moments_with_zeros(part[g], int(zeros[g])) for g in (_A, _B))
                d = _smd_from(mean_a, var_a, kept[_A] + zeros[_A], mean_b, var_b, kept[_B] + zeros[_B])
            elif kept[_A] + zeros[_A]:
                mean_a = moments_with_zeros(part[_A], int(zeros[_A]))[0]
            p = self._p(part[_SA], int(zeros[_SA]), part[_SB], int(zeros[_SB]), test)
            out.append(ExplainRow(name, "numeric", float(d), p, test=test, mean_a=float(mean_a), mean_b=float(mean_b)))
        return out

    @staticmethod
    def _p(a, za: int, b, zb: int, test: str) -> float:
        n1, n2 = a.size + za, b.size + zb
        if n1 < 1 or n2 < 1:
            return np.nan
        if test == KS:
            from scipy import stats  # lazy: kept off the start-up

            return float(stats.ks_2samp(np.concatenate([a, np.zeros(za)]),
                                        np.concatenate([b, np.zeros(zb)])).pvalue)
        both = np.concatenate([a, b, [0.0] if za + zb else []])
        if both.min() == both.max():
            return 1.0
        r1, ties = rank_sum_and_ties_zeros(a, b, za, zb)
        return mann_whitney_p_from(r1, ties, n1, n2)

    def histograms(self, j: int, rows_a, rows_b, bins: int, member=None) -> tuple[np.ndarray, np.ndarray]:
        """Column ``j``'s histograms over ``rows_a`` and ``rows_b`` on shared bins, each as a share
        of its group's finite values (the zeros counted without being made); ``member``:
        ``membership(n_rows, (rows_a, rows_b))``, made once for many columns."""
        member = membership(self.n_rows, (rows_a, rows_b)) if member is None else member
        values, kept, stored = self.groups(j, member)
        zeros = (rows_a.size - stored[0], rows_b.size - stored[1])
        return sparse_histograms(values[0, :kept[0]], zeros[0], values[1, :kept[1]], zeros[1], bins)


def sparse_histograms(a, za: int, b, zb: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (shares of each group) of ``a`` plus ``za`` zeros and ``b`` plus ``zb`` zeros on
    the same ``bins`` equal bins as ``np.histogram`` of the dense values would use."""
    zero = [0.0] if za + zb else []
    both = np.concatenate([a, b, zero])
    if not both.size:
        return np.zeros(bins), np.zeros(bins)
    edges = np.histogram_bin_edges(both, bins=bins)
    out = []
    for v, z in ((a, za), (b, zb)):
        h = np.histogram(np.concatenate([v, [0.0]]), edges, weights=np.r_[np.ones(v.size), z])[0]
        out.append(h / max(v.size + z, 1))
    return out[0], out[1]
