"""Explain's compiled per-column statistics (analysis/explain_kernels.py) against numpy and scipy:
the Mann–Whitney p-value equal to scipy's to the last bit (ties, both sides of the median, groups
of very different sizes), the moments of the selection and of "the rest" (from the column's
totals) equal to numpy's on the rows themselves, non-finite values left out, strided columns."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from manifold_studio.analysis import explain_kernels as ek
from manifold_studio.analysis import explain_selection as ex
from manifold_studio.tables.dataset_columns import FEATURE, Column


@pytest.mark.parametrize("n1, n2, digits, shift", [(40, 3000, None, 0.3), (2500, 2500, 0, -0.1),
                                                   (7, 9, 1, 0.0), (1, 500, 0, 2.0), (20_000, 20_000, 1, 0.01)])
def test_mann_whitney_p_is_scipys_to_the_last_bit(n1, n2, digits, shift):
    rng = np.random.default_rng(n1 + n2)
    a, b = rng.normal(shift, 1, n1), rng.normal(0, 1, n2)
    if digits is not None:   # many ties
        a, b = np.round(a, digits), np.round(b, digits)
    ref = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue
    assert ex.mann_whitney_p(a, b) == ref
    r1, ties = ek.rank_sum_and_ties(a, b)
    ranks = stats.rankdata(np.r_[a, b])
    _, counts = np.unique(np.r_[a, b], return_counts=True)
    assert r1 == ranks[:n1].sum()
    assert ties == float((counts.astype(float) ** 3 - counts).sum())


def test_moments_and_effect_match_numpy_on_the_rows_with_non_finite_values_left_out():
    rng = np.random.default_rng(3)
    X = rng.normal(5.0, 2.0, size=(20_000, 3))
    X[rng.integers(0, 20_000, 300), 1] = np.nan
    X[:7, 1] = np.inf
    v = X[:, 1]                       # a strided column, as the data set's columns are
    rows_a = np.sort(rng.choice(20_000, 2_000, replace=False))
    mask = np.zeros(20_000, bool)
    mask[rows_a] = True
    a_ref, b_ref = v[mask][np.isfinite(v[mask])], v[~mask][np.isfinite(v[~mask])]
    np.testing.assert_array_equal(ek.finite_values(v, rows_a), a_ref)
    fin = v[np.isfinite(v)]
    np.testing.assert_array_equal(ek.finite_values(v, None), fin)
    mean = ek.mean_of(fin)
    s1, s2 = ek.dev_sums(fin, mean)
    assert mean == pytest.approx(fin.mean(), rel=1e-14)
    assert s2 == pytest.approx(((fin - fin.mean()) ** 2).sum(), rel=1e-13) and abs(s1) < 1e-9
    pooled = np.sqrt(((a_ref.size - 1) * a_ref.var(ddof=1) + (b_ref.size - 1) * b_ref.var(ddof=1))
                     / (a_ref.size + b_ref.size - 2))
    d_ref = (a_ref.mean() - b_ref.mean()) / pooled
    for other in (None, np.flatnonzero(~mask)):   # against the rest (column totals) and as selection B
        d, mean_a, mean_b = ex._numeric_effect(v, rows_a, np.flatnonzero(~mask), other is None)
        assert d == pytest.approx(d_ref, rel=1e-9)
        assert mean_a == pytest.approx(a_ref.mean(), rel=1e-13) and mean_b == pytest.approx(b_ref.mean(), rel=1e-12)
        res = ex.explain([Column("v", v, FEATURE)], mask, other)
        assert res.rows[0].p == stats.mannwhitneyu(a_ref, b_ref, method="asymptotic").pvalue


def test_constant_and_empty_groups():
    assert ex._numeric_p(np.ones(5), np.ones(8), ex.MANN_WHITNEY) == 1.0
    assert np.isnan(ex._numeric_p(np.zeros(0), np.ones(8), ex.MANN_WHITNEY))
    assert ex.smd(np.ones(3), np.ones(4)) == 0.0 and ex.smd(np.full(3, 2.0), np.ones(4)) == np.inf
    assert ek.finite_values(np.full(4, np.nan), None).size == 0 and ek.mean_of(np.arange(5.0)) == 2.0


def _sparse_case(n=500, d=70, seed=0):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    D = np.round(rng.gamma(1.0, 2.0, (n, d)), 1) * (rng.random((n, d)) < 0.15)
    D[:, 0] = 0.0                                  # an empty column
    D[:, 1] = -np.abs(D[:, 1])                     # zeros above every stored value
    D[rng.random(n) < 0.6, 2] = 3.0                # a big tie block beside the zeros
    D[:, 3] = rng.normal(0, 1, n)                  # no zeros at all
    X = sp.csr_array(D)
    Xe = X.copy()
    Xe.data[::17] = 0.0                            # stored zeros join the implicit ones
    return D, Xe, rng


@pytest.mark.parametrize("against_b", [False, True])
def test_sparse_features_match_scipy_and_numpy_on_the_dense_columns(against_b):
    from manifold_studio.analysis.explain_sparse import SparseFeatures

    D, X, rng = _sparse_case()
    D = X.toarray()
    n, d = D.shape
    sel = rng.random(n) < 0.12
    other = np.flatnonzero(rng.random(n) < 0.3) if against_b else None
    b_mask = np.zeros(n, bool)
    b_mask[other if against_b else np.flatnonzero(~sel)] = True
    names = [f"g{j}" for j in range(d)]
    res = ex.explain([], sel, other, features=SparseFeatures(X, names))
    assert sorted(r.feature for r in res.rows) == sorted(names)   # every one of the > 50 columns
    by = {r.feature: r for r in res.rows}
    ps = []
    for j in range(d):
        a, b = D[sel, j], D[b_mask, j]
        r = by[f"g{j}"]
        ref_p = (1.0 if min(a.min(), b.min()) == max(a.max(), b.max())
                 else stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)
        assert r.p == ref_p, j
        ps.append(ref_p)
        pooled = np.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2))
        d_ref = 0.0 if pooled == 0 else (a.mean() - b.mean()) / pooled
        assert r.effect == pytest.approx(d_ref, abs=1e-12), j
        assert r.mean_a == pytest.approx(a.mean(), abs=1e-12) and r.mean_b == pytest.approx(b.mean(), abs=1e-12)
    q_ref = stats.false_discovery_control(ps)
    np.testing.assert_allclose([by[f"g{j}"].q for j in range(d)], q_ref, rtol=1e-12)


def test_sparse_features_ks_histograms_and_the_zero_block_rank_sum():
    from manifold_studio.analysis.explain_sparse import SparseFeatures

    D, X, rng = _sparse_case(n=200, d=55, seed=4)
    D = X.toarray()
    sel = np.flatnonzero(rng.random(200) < 0.2)
    res = ex.explain([], sel, test=ex.KS, features=SparseFeatures(X, [f"g{j}" for j in range(55)]))
    mask = np.zeros(200, bool)
    mask[sel] = True
    for r in res.rows:
        j = int(r.feature[1:])
        a, b = D[mask, j], D[~mask, j]
        assert r.p == stats.ks_2samp(a, b).pvalue
    a = np.array([0.5, -1.0, 2.0, 0.0])   # stored values (one stored zero) plus implicit zeros
    b = np.array([2.0, 0.7])
    r1, ties = ek.rank_sum_and_ties_zeros(a, b, 3, 5)
    full_a, full_b = np.r_[a, np.zeros(3)], np.r_[b, np.zeros(5)]
    ranks = stats.rankdata(np.r_[full_a, full_b])
    _, counts = np.unique(np.r_[full_a, full_b], return_counts=True)
    assert r1 == ranks[:full_a.size].sum() and ties == float((counts ** 3 - counts).sum())
    feats = SparseFeatures(X, [f"g{j}" for j in range(55)])
    rows_b = np.flatnonzero(~mask)
    for j in (0, 2, 9):
        ha, hb = feats.histograms(j, sel, rows_b, 16)
        edges = np.histogram_bin_edges(D[:, j], bins=16)
        np.testing.assert_allclose(ha, np.histogram(D[mask, j], edges)[0] / mask.sum(), atol=1e-12)
        np.testing.assert_allclose(hb, np.histogram(D[~mask, j], edges)[0] / (~mask).sum(), atol=1e-12)
