"""Preparation for count data (issue 32, item 4): normalize_total against scanpy's
sc.pp.normalize_total, select_columns top_k by variance or dispersion, both fitted with the model."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError


@pytest.fixture
def counts():
    rng = np.random.default_rng(7)
    X = rng.negative_binomial(3, 0.3, size=(80, 30)).astype(np.float64)
    X[rng.random(X.shape) < 0.4] = 0
    X[5] = 0   # an empty cell
    return X


@pytest.mark.slow   # importing scanpy takes ~8 s; test_normalize_total_formula_and_fitted_target is the fast one
def test_normalize_total_matches_scanpy(counts):
    sc = pytest.importorskip("scanpy")
    anndata = pytest.importorskip("anndata")
    for target in (None, 1e4):
        ref = anndata.AnnData(counts.copy())
        sc.pp.normalize_total(ref, target_sum=target)
        step = ms.get_preprocessor("normalize_total", target_sum=target).fit(counts)
        np.testing.assert_allclose(step.transform(counts), ref.X, rtol=1e-12, atol=1e-12)


def test_normalize_total_formula_and_fitted_target(counts):
    step = ms.get_preprocessor("normalize_total").fit(counts)
    totals = counts.sum(axis=1)
    assert step.target_sum_ == np.median(totals[totals > 0])
    out = step.transform(counts)
    np.testing.assert_allclose(out.sum(axis=1)[totals > 0], step.target_sum_)
    assert not out[5].any()
    # new rows are scaled to the training target (fitted with the model), row by row
    new = counts[:3] * 10
    np.testing.assert_allclose(step.transform(new).sum(axis=1), step.target_sum_)
    np.testing.assert_allclose(step.transform(new[1:2]), step.transform(new)[1:2])


def test_normalize_total_refuses_negative_counts_and_nan(counts):
    bad = counts.copy()
    bad[4, 2] = -1
    with pytest.raises(DataError, match="Step 'normalize_total': row 4 has a negative count in column 'x2'"):
        ms.get_preprocessor("normalize_total").fit(bad)
    bad[4, 2] = np.nan
    with pytest.raises(DataError, match="row 4 has a missing value in column 'x2': add an impute step"):
        ms.get_preprocessor("normalize_total").fit(bad)


def test_select_top_k_by_variance_and_dispersion(counts):
    names = [f"g{j}" for j in range(counts.shape[1])]
    step = ms.get_preprocessor("select_columns", top_k=7).fit(counts, names)
    var = counts.var(axis=0)
    expected = sorted(np.argsort(-var, kind="stable")[:7])
    assert step.columns_out_ == [names[j] for j in expected]
    np.testing.assert_array_equal(step.transform(counts), counts[:, expected])
    disp = ms.get_preprocessor("select_columns", top_k=5, rank_by="dispersion").fit(counts, names)
    fano = counts.var(axis=0) / counts.mean(axis=0)
    assert disp.columns_out_ == [names[j] for j in sorted(np.argsort(-fano, kind="stable")[:5])]
    # with other rules first: the k best of the columns they keep
    some = ms.get_preprocessor("select_columns", exclude=tuple(names[:10]), top_k=3).fit(counts, names)
    assert some.columns_out_ == [names[j] for j in sorted(10 + np.argsort(-var[10:], kind="stable")[:3])]


def test_the_count_chain_is_saved_with_the_model(counts, tmp_path):
    """normalize_total, log, top-k variance, PCA: one pipeline, saved and reloaded without refitting."""
    pipe = ms.make_pipeline("normalize_total", "log", ("select_columns", {"top_k": 12}),
                            ms.get_algorithm("pca", n_components=2)).fit(counts)
    back = ms.load_model(ms.save_model(pipe, tmp_path / "counts.npz"))
    np.testing.assert_allclose(back.extend(counts[:9] * 3), pipe.extend(counts[:9] * 3), rtol=1e-10, atol=1e-10)
    totals = counts.sum(axis=1, keepdims=True)
    logged = np.log1p(np.divide(counts * np.median(totals[totals > 0]), totals, out=np.zeros_like(counts),
                                where=totals > 0))
    top = sorted(np.argsort(-logged.var(axis=0), kind="stable")[:12])
    assert pipe.steps[2][1].columns_out_ == [f"x{j}" for j in top]


def test_sparse_counts_stay_sparse_and_equal_dense(counts):
    import scipy.sparse as sp

    C = sp.csr_array(counts)
    for step_id, params in (("normalize_total", {}), ("log", {}), ("select_columns", {"top_k": 9}),
                            ("select_columns", {"top_k": 4, "rank_by": "dispersion"})):
        sparse = ms.get_preprocessor(step_id, **params).fit(C)
        dense = ms.get_preprocessor(step_id, **params).fit(counts)
        out = sparse.transform(C)
        assert sp.issparse(out) and out.format == "csr" and sparse.columns_out_ == dense.columns_out_
        np.testing.assert_allclose(out.toarray(), dense.transform(counts), rtol=1e-12, atol=1e-12)
    chain = ("normalize_total", "log", ("select_columns", {"top_k": 12}))
    on_sparse = ms.make_pipeline(*chain, ms.get_algorithm("pca", n_components=2)).fit(C)
    on_dense = ms.make_pipeline(*chain, ms.get_algorithm("pca", n_components=2)).fit(counts)
    a, b = on_sparse.extend(C[:20]), on_dense.extend(counts[:20])
    np.testing.assert_allclose(np.abs(a), np.abs(b), rtol=1e-8, atol=1e-10)   # PCA's signs may differ
    with pytest.raises(DataError, match="Step 'standardize': the data are sparse, and this step takes dense data"):
        ms.make_pipeline("standardize", ms.get_algorithm("pca")).fit(C)
    with pytest.raises(DataError, match="Step 'log': an offset would fill the zeros of sparse data"):
        ms.get_preprocessor("log", offset=1.0).fit(C)
    negative = counts.copy()
    negative[2, 6] = -3.0
    negative = sp.csr_array(negative)
    with pytest.raises(DataError, match="Step 'log': column 'x6' has negative values \\(the smallest is -3\\)"):
        ms.get_preprocessor("log").fit(negative)
    with pytest.raises(DataError, match="Step 'normalize_total': row 2 has a negative count in column 'x6'"):
        ms.get_preprocessor("normalize_total").fit(negative)
