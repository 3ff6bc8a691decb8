"""Preparation steps (plugin kind ``preprocessing``, issue 20): the conformance kit on every step the
plugin host discovers, scikit-learn as the oracle for the numbers, and the bad-input messages."""
import numpy as np
import pandas as pd
import pytest
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.preprocessing import MinMaxScaler, Normalizer, OneHotEncoder, RobustScaler, StandardScaler

import manifold_studio as ms
from manifold_studio.algorithms import ppca_em
from manifold_studio.algorithms.conformance import STEP_CHECKS, StepChecker
from manifold_studio.errors import DataError, InvalidParameterError, UnknownAlgorithmError
from manifold_studio.plugins.host import get_host

STEPS = ["drop_constant", "impute", "log", "minmax", "normalize_rows", "normalize_total", "one_hot", "robust_scale",
         "select_columns", "standardize"]
CONFORMANCE_PARAMS = {"one_hot": {"columns": ("code",)}}


def test_every_built_in_step_is_registered():
    assert ms.list_preprocessors() == STEPS
    assert not [f for f in get_host().failures]
    infos = [i for i in get_host().plugins.values() if i.preprocessors]
    assert sorted(s for i in infos for s in i.preprocessors) == STEPS


@pytest.mark.parametrize("check", STEP_CHECKS)
@pytest.mark.parametrize("step_id", STEPS)
def test_conformance(step_id, check):
    cls = get_host().preprocessors[step_id]
    getattr(StepChecker(cls, params=CONFORMANCE_PARAMS.get(step_id)), check)()


def test_get_preprocessor_validates():
    step = ms.get_preprocessor("impute", strategy="median")
    assert step.get_params()["strategy"] == "median"
    with pytest.raises(InvalidParameterError, match="strategy"):
        ms.get_preprocessor("impute", strategy="magic")
    with pytest.raises(UnknownAlgorithmError, match="Unknown preparation step 'scale'.*standardize"):
        ms.get_preprocessor("scale")


@pytest.fixture
def data(rng):
    X = rng.normal(size=(40, 4)) * [1.0, 10.0, 100.0, 1000.0] + [0, 5, -50, 2000]
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


@pytest.mark.parametrize("step,params,oracle", [
    ("standardize", {}, StandardScaler()),
    ("standardize", {"with_mean": False}, StandardScaler(with_mean=False)),
    ("robust_scale", {}, RobustScaler()),
    ("robust_scale", {"quantile_low": 10.0, "quantile_high": 80.0}, RobustScaler(quantile_range=(10, 80))),
    ("minmax", {}, MinMaxScaler()),
    ("minmax", {"feature_min": -1.0, "feature_max": 2.0}, MinMaxScaler(feature_range=(-1, 2))),
])
def test_scalers_match_scikit_learn_with_missing_values(data, step, params, oracle):
    ours = ms.get_preprocessor(step, **params).fit(data)
    np.testing.assert_allclose(ours.transform(data), oracle.fit(data).transform(data), rtol=1e-12, atol=1e-12)
    new = data[:5] * 1.1
    np.testing.assert_allclose(ours.transform(new), oracle.transform(new), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("strategy", ["mean", "median", "most_frequent", "constant"])
def test_simple_imputation_matches_scikit_learn(data, strategy):
    data = np.round(data, 0)  # repeated values, for most_frequent
    ours = ms.get_preprocessor("impute", strategy=strategy, fill_value=-7.0).fit(data)
    ref = SimpleImputer(strategy=strategy, fill_value=-7.0).fit(data)
    np.testing.assert_allclose(ours.transform(data), ref.transform(data), rtol=1e-12)
    assert not np.isnan(ours.transform(data)).any()


def test_knn_imputation_matches_scikit_learn(data):
    ours = ms.get_preprocessor("impute", strategy="knn", n_neighbors=3).fit(data)
    ref = KNNImputer(n_neighbors=3).fit(data)
    np.testing.assert_allclose(ours.transform(data), ref.transform(data), rtol=1e-10)
    new = data[:6].copy()
    new[0, :3] = np.nan  # one coordinate left
    np.testing.assert_allclose(ours.transform(new), ref.transform(new), rtol=1e-10)


def test_ppca_imputation_uses_the_em_fit_and_beats_the_mean_on_low_rank_data(rng):
    Z = rng.normal(size=(300, 2))
    full = Z @ rng.normal(size=(2, 6)) + 0.05 * rng.normal(size=(300, 6))
    X = full.copy()
    holes = rng.random(X.shape) < 0.15
    X[holes] = np.nan
    step = ms.get_preprocessor("impute", strategy="ppca", n_components=2, random_state=0).fit(X)
    out = step.transform(X)
    em = ppca_em.em(X, 2, random_state=0)
    np.testing.assert_allclose(out, ppca_em.impute(X, em.mean, em.W, em.sigma2), rtol=1e-10, atol=1e-12)
    mean_fill = ms.get_preprocessor("impute").fit(X).transform(X)
    err_ppca = np.abs(out - full)[holes].mean()
    err_mean = np.abs(mean_fill - full)[holes].mean()
    assert err_ppca < 0.2 * err_mean
    with pytest.raises(DataError, match="Step 'impute': strategy=ppca needs n_components \\(6\\) below"):
        ms.get_preprocessor("impute", strategy="ppca", n_components=6).fit(X)


def test_log_matches_log1p_with_offset_and_only_named_columns(rng):
    X = rng.uniform(0, 10, size=(20, 3))
    X[:, 2] -= 5
    step = ms.get_preprocessor("log", columns=("x0", "x1"), offset=0.5).fit(X)
    out = step.transform(X)
    np.testing.assert_allclose(out[:, :2], np.log1p(X[:, :2] + 0.5))
    np.testing.assert_array_equal(out[:, 2], X[:, 2])


def test_one_hot_matches_scikit_learn_on_a_data_frame():
    frame = pd.DataFrame({"island": ["Biscoe", "Dream", "Torgersen", "Dream", "Biscoe"],
                          "mass": [3.2, 4.1, 3.9, 3.6, 4.4], "year": [2007, 2008, 2009, 2007, 2008]})
    step = ms.get_preprocessor("one_hot", columns=("island", "year")).fit(frame)
    out = step.transform(frame)
    assert step.columns_out_ == ["island=Biscoe", "island=Dream", "island=Torgersen", "mass",
                                 "year=2007", "year=2008", "year=2009"]
    ref = OneHotEncoder(sparse_output=False).fit_transform(frame[["island", "year"]])
    np.testing.assert_array_equal(out[:, [0, 1, 2, 4, 5, 6]], ref)
    np.testing.assert_array_equal(out[:, 3], frame["mass"])
    new = pd.DataFrame({"year": [2008, 2010], "mass": [1.0, 2.0], "island": ["Dream", "Anvers"]})
    np.testing.assert_array_equal(step.transform(new), [[0, 1, 0, 1, 0, 1, 0], [0, 0, 0, 2, 0, 0, 0]])


def test_drop_constant_and_select_columns():
    X = np.array([[1.0, 5.0, np.nan, 2.0], [2.0, 5.0, np.nan, 2.0], [3.0, 5.0, np.nan, 2.1]])
    step = ms.get_preprocessor("drop_constant").fit(X, ["a", "b", "c", "d"])
    assert step.columns_out_ == ["a", "d"] and step.dropped_ == ["b", "c"]
    assert ms.get_preprocessor("drop_constant", tolerance=0.5).fit(X, list("abcd")).columns_out_ == ["a"]
    names = ["bill_length", "bill_depth", "flipper", "year"]
    Y = np.column_stack([np.arange(6.0), np.ones(6) * 2 + [0, 0, 0, 0, 0, 1e-3], np.arange(6.0) ** 2, np.ones(6)])
    sel = ms.get_preprocessor("select_columns", exclude=("year",)).fit(Y, names)
    assert sel.columns_out_ == names[:3]
    np.testing.assert_array_equal(sel.transform(Y), Y[:, :3])
    assert ms.get_preprocessor("select_columns", pattern="^bill").fit(Y, names).columns_out_ == names[:2]
    assert ms.get_preprocessor("select_columns", include=("flipper", "bill_length")).fit(Y, names).columns_out_ \
        == ["bill_length", "flipper"]
    from sklearn.feature_selection import VarianceThreshold

    kept = ms.get_preprocessor("select_columns", variance_threshold=1e-6).fit(Y, names).columns_out_
    assert kept == [n for n, k in zip(names, VarianceThreshold(1e-6).fit(Y).get_support()) if k]


@pytest.mark.parametrize("norm", ["l2", "l1", "max"])
def test_normalize_rows_matches_scikit_learn(rng, norm):
    X = rng.normal(size=(10, 5))
    X[3] = 0.0
    np.testing.assert_allclose(ms.get_preprocessor("normalize_rows", norm=norm).fit(X).transform(X),
                               Normalizer(norm=norm).fit_transform(X), rtol=1e-12, atol=1e-15)


def test_numeric_steps_leave_categorical_columns_alone():
    frame = pd.DataFrame({"g": ["a", "b", "a", "c"], "v": [1.0, 2.0, 3.0, 4.0]})
    step = ms.get_preprocessor("standardize").fit(frame)
    out = step.transform(frame)
    np.testing.assert_array_equal(out[:, 0], [0, 1, 0, 2])  # category indices, untouched
    np.testing.assert_allclose(out[:, 1], (frame["v"] - 2.5) / frame["v"].std(ddof=0))
    assert step.categories_out_ == {"g": ["a", "b", "c"]}
    imp = ms.get_preprocessor("impute", strategy="mean").fit(pd.DataFrame({"g": ["a", None, "b", "b"]}))
    assert imp.transform(pd.DataFrame({"g": [None]}))[0, 0] == 1.0  # the most frequent category, 'b'


# -- bad input: one clear message naming the step and the column -------------------------------
def test_log_of_negative_values_names_the_column():
    X = np.array([[1.0, 2.0], [3.0, -4.0], [5.0, 6.0]])
    with pytest.raises(DataError, match=r"Step 'log': column 'depth' has negative values \(the smallest is -4, "
                                        r"row 1\).*offset to at least 4"):
        ms.get_preprocessor("log").fit(X, ["mass", "depth"])
    step = ms.get_preprocessor("log", offset=4.0).fit(X, ["mass", "depth"])
    with pytest.raises(DataError, match="Step 'log': column 'depth' has negative values"):
        step.transform(np.array([[1.0, -9.0]]))  # new data below the offset


def test_impute_on_an_all_missing_column_names_it():
    X = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan]])
    for strategy in ("mean", "median", "most_frequent", "knn"):
        with pytest.raises(DataError, match=r"Step 'impute': column 'score' has no value \(every row is missing\)"):
            ms.get_preprocessor("impute", strategy=strategy).fit(X, ["age", "score"])
    out = ms.get_preprocessor("impute", strategy="constant", fill_value=0.0).fit(X, ["age", "score"]).transform(X)
    np.testing.assert_array_equal(out[:, 1], 0.0)


def test_one_hot_with_thousands_of_categories_is_refused_until_the_limit_is_raised():
    frame = pd.DataFrame({"zip": [f"{i:05d}" for i in range(3000)], "v": np.arange(3000.0)})
    with pytest.raises(DataError, match=r"Step 'one_hot': column 'zip' has 3,000 categories, more than "
                                        r"max_categories=100: raise max_categories"):
        ms.get_preprocessor("one_hot").fit(frame)
    step = ms.get_preprocessor("one_hot", max_categories=5000).fit(frame)
    assert len(step.columns_out_) == 3001


def test_select_columns_naming_a_missing_column_names_it():
    with pytest.raises(DataError, match=r"Step 'select_columns': no column named 'yaer' \(parameter 'exclude'\); "
                                        r"the columns are 'bill', 'year'"):
        ms.get_preprocessor("select_columns", exclude=("yaer",)).fit(np.ones((3, 2)), ["bill", "year"])
    with pytest.raises(DataError, match="no column is left"):
        ms.get_preprocessor("select_columns", pattern="^z").fit(np.ones((3, 2)), ["bill", "year"])
    with pytest.raises(InvalidParameterError, match="not a regular expression"):  # refused as it is set
        ms.get_preprocessor("select_columns", pattern="(").fit(np.ones((3, 2)), ["bill", "year"])


def test_other_refusals_name_the_step():
    with pytest.raises(DataError, match="Step 'normalize_rows': row 1 has a missing value in column 'x1'"):
        ms.get_preprocessor("normalize_rows").fit(np.array([[1.0, 2.0], [3.0, np.nan]])).transform(
            np.array([[1.0, 2.0], [3.0, np.nan]]))
    with pytest.raises(DataError, match="Step 'drop_constant': every column is constant"):
        ms.get_preprocessor("drop_constant").fit(np.ones((4, 2)))
    with pytest.raises(DataError, match="Step 'one_hot': there is no categorical column"):
        ms.get_preprocessor("one_hot").fit(np.ones((4, 2)))
    with pytest.raises(DataError, match="Step 'minmax': feature_min \\(1\\) must be below feature_max \\(0\\)"):
        ms.get_preprocessor("minmax", feature_min=1.0, feature_max=0.0).fit(np.eye(3))
    with pytest.raises(DataError, match="Step 'standardize': column 'x1' holds infinite values"):
        ms.get_preprocessor("standardize").fit(np.array([[1.0, np.inf], [2.0, 3.0]]))
