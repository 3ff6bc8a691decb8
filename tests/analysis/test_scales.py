"""The scale advice (issue 33): given when the columns' spreads and value ranges differ by more
than 100x (wine's proline against its hue), never for columns that share one scale (the digits'
pixels, all between 0 and 16, whose spreads differ because border pixels are mostly blank)."""
import numpy as np
import scipy.sparse as sp

import manifold_studio as ms
from manifold_studio.analysis.scales import scale_advice


def test_wine_gets_the_advice_naming_proline():
    ds = ms.load_data("sample:wine")
    advice = scale_advice(ds.X, ds.feature_names)
    assert advice is not None and advice.widest == "proline" and advice.ratio > 100


def test_digit_pixels_share_one_scale_and_get_no_advice():
    ds = ms.load_data("sample:digits")
    spread = ds.X.std(axis=0)
    spread = spread[spread > 0]
    assert spread.max() / spread.min() > 100      # the spreads alone would trigger it
    assert scale_advice(ds.X, ds.feature_names) is None
    assert scale_advice(sp.csr_matrix(ds.X), ds.feature_names) is None


def test_sparse_and_dense_agree_on_a_wide_ratio():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(0, 1000, 200), rng.normal(0, 1, 200), rng.normal(0, 3, 200)])
    dense, sparse = scale_advice(X, ["a", "b", "c"]), scale_advice(sp.csr_matrix(X), ["a", "b", "c"])
    assert dense.widest == sparse.widest == "a" and dense.narrowest == sparse.narrowest == "b"
    assert abs(dense.ratio - sparse.ratio) < 1e-6 * dense.ratio
