"""Test & Score and evaluate() with a preparation chain: every learner is the pipeline of the
chain and its classifier, fitted on each training part only (scikit-learn's StandardScaler fitted
per training fold is the oracle), on the data a run fits (a Dataset's named feature columns)."""
import warnings

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

import manifold_studio as ms
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError
from manifold_studio.evaluation import KFOLD, compare_learners, evaluate, stratified_kfold
from manifold_studio.project.analysis_records import comparison_from_record, comparison_record
from manifold_studio.analysis.chain import chained_estimator


@pytest.fixture(scope="module")
def cancer():
    return ms.load_data("sample:breast_cancer")


def _sk_folds(y, k=5, seed=0):
    return [(tr, te) for tr, te in StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y)]


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def test_a_standardized_perceptron_is_scaled_on_each_training_part_only(cancer):
    X, y = cancer.X, cancer.labels
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("perceptron", max_epochs=50))
    c = _quiet(compare_learners, [pipe, ("perceptron", {"max_epochs": 50})], cancer, cv=5, seed=0,
               names=["std", "bare"])
    std = c.learner("std")
    assert std.algorithm == "perceptron" and std.params["max_epochs"] == 50
    assert std.chain == [("standardize", {"with_mean": True, "with_std": True})]
    assert c.learner("bare").chain == [] and c.preparation() == "std: standardize; bare: none"
    by_hand, leaky = np.empty(len(y)), np.empty(len(y))
    everything = StandardScaler().fit(X)  # fitted on the test rows too: what a leak would give
    for tr, te in _sk_folds(y):
        scaler = StandardScaler().fit(X[tr])
        clf = _quiet(ms.get_algorithm("perceptron", max_epochs=50).fit, scaler.transform(X[tr]), y[tr])
        by_hand[te] = clf.decision_function(scaler.transform(X[te]))
        clf = _quiet(ms.get_algorithm("perceptron", max_epochs=50).fit, everything.transform(X[tr]), y[tr])
        leaky[te] = clf.decision_function(everything.transform(X[te]))
    ours = std.scores[0][:, 1]
    np.testing.assert_allclose(ours, by_hand, rtol=1e-9, atol=1e-9 * np.abs(by_hand).max())
    assert np.abs(ours - leaky).max() > 1e-3 * np.abs(by_hand).max()
    # and the chain matters: the bare perceptron on the raw columns scores otherwise
    assert np.abs(c.learner("bare").scores[0][:, 1] - ours).max() > 1.0


def test_a_dataset_binds_the_chain_to_its_column_names(cancer):
    keep = ["mean_radius", "mean_texture", "worst_area"]
    svm = ms.get_algorithm("svm", kernel="rbf")
    pipe = ms.make_pipeline(("select_columns", {"include": keep}), "standardize", svm)
    c = compare_learners([pipe], cancer, cv=4, seed=2)
    cols = [cancer.feature_names.index(k) for k in keep]
    sub = Dataset("sub", cancer.X[:, cols], labels=cancer.labels, feature_names=keep)
    ref = compare_learners([ms.make_pipeline("standardize", svm)], sub, cv=4, seed=2)
    np.testing.assert_array_equal(c.learners[0].scores, ref.learners[0].scores)
    assert c.preparation() == "select_columns(include=['mean_radius', 'mean_texture', 'worst_area']) → standardize"
    # a pipeline already bound (as the window builds it) on the plain matrix: the same numbers
    bound = chained_estimator([("select_columns", {"include": keep}), ("standardize", {})], svm, cancer)
    same = compare_learners([bound], cancer.X, cancer.labels, cv=4, seed=2)
    np.testing.assert_array_equal(same.learners[0].scores, c.learners[0].scores)
    # the plain matrix with an unbound pipeline has no such column names: every fold says so
    bare = compare_learners([pipe], cancer.X, cancer.labels, cv=4, seed=2)
    fails = bare.learners[0].failures
    assert len(fails) == 4 and "preparation step 'select_columns' failed" in fails[0]
    assert "mean_radius" in fails[0] and fails[0].startswith("svm: fold 1: ")


def test_a_step_that_fails_on_one_fold_is_named_and_the_other_folds_are_scored():
    rng = np.random.default_rng(0)
    n = 60
    y = np.repeat(["a", "b"], n // 2)
    folds = [(np.setdiff1d(np.arange(n), te), te) for te in np.array_split(rng.permutation(n), 3)]
    x = np.zeros(n)
    x[folds[1][1][:4]] = [1.0, 2.0, 3.0, 4.0]  # varies only on the test part of fold 2
    X = np.column_stack([x])
    learners = [ms.make_pipeline("drop_constant", ms.get_algorithm("svm")),
                ms.make_pipeline("drop_constant", ms.get_algorithm("linear_classifier"))]
    c = compare_learners(learners, X, y, cv=folds)
    for r in c.learners:
        assert len(r.failures) == 1
        msg = r.failures[0]
        assert msg.startswith(f"{r.name}: fold 2: preparation step 'drop_constant' failed on its training part: ")
        assert "every column is constant" in msg and "Step '" not in msg
        scored = np.isfinite(r.fold_metrics["accuracy"])
        assert scored.tolist() == [True, False, True]
        assert (r.predictions[0][folds[1][1]] == -1).all() and (r.predictions[0][folds[0][1]] >= 0).all()


def test_a_fold_with_one_class_names_the_class_behind_a_chain():
    X = np.random.default_rng(1).normal(size=(30, 3))
    y = np.array(["x"] * 20 + ["y"] * 10)
    folds = [(np.arange(20), np.arange(20, 30)), (np.arange(10, 30), np.arange(10))]
    c = compare_learners([ms.make_pipeline("standardize", ms.get_algorithm("svm"))], X, y, cv=folds)
    (msg,) = c.learners[0].failures
    assert msg.startswith("svm: fold 1: its training part has only class 'x'")
    assert np.isfinite(c.learners[0].fold_metrics["accuracy"][1])


def test_evaluate_fits_the_pipeline_per_fold_and_the_record_keeps_the_chain():
    wine = ms.load_data("sample:wine")
    X, y = wine.X, wine.labels
    res = evaluate(ms.make_pipeline("standardize", ms.get_algorithm("svm")), wine, method=KFOLD, n_splits=5,
                   random_state=3)
    bare = evaluate(ms.get_algorithm("svm"), X, y, KFOLD, n_splits=5, random_state=3)
    by_hand = []
    for tr, te in stratified_kfold(y, 5, random_state=3):
        sc = StandardScaler().fit(X[tr])
        pred = ms.get_algorithm("svm").fit(sc.transform(X[tr]), y[tr]).predict(sc.transform(X[te]))
        by_hand.append(np.mean(pred == y[te]))
    np.testing.assert_allclose(res.fold_accuracy, by_hand, rtol=0, atol=1e-15)
    assert res.mean_accuracy > bare.mean_accuracy + 0.2  # the unscaled wine columns defeat the RBF kernel
    # the Test & Score record keeps every learner's chain through a save
    c = compare_learners({"svm": ms.make_pipeline(("minmax", {"feature_max": 2.0}), ms.get_algorithm("svm")),
                          "bare": "svm"}, wine, cv=3)
    back = comparison_from_record(*comparison_record(c))
    assert back.learner("svm").chain == [("minmax", {"feature_min": 0.0, "feature_max": 2.0})]
    assert back.learner("bare").chain == [] and back.preparation() == c.preparation()
    assert c.preparation() == "svm: minmax(feature_max=2.0); bare: none"


def test_a_dataset_without_labels_and_no_y_is_refused():
    with pytest.raises(DataError, match="labels"):
        compare_learners(["svm"], np.zeros((5, 2)))


def test_a_chain_that_encodes_categorical_columns_gets_the_table_a_run_gets():
    """one_hot needs the data set's categorical columns by name: Test & Score on the data set
    equals fitting the pipeline on each training part's own rows of the table."""
    ds = ms.load_data("sample:penguins")
    ds = ds.set_roles({"island": "feature", "sex": "feature"}) or ds
    chain = ("one_hot", "standardize")
    c = compare_learners([ms.make_pipeline(*chain, ms.get_algorithm("svm"))], ds, cv=5, seed=0)
    assert c.learners[0].failures == [] and c.preparation() == "one_hot → standardize"
    by_hand = np.empty(ds.n_samples, dtype=object)
    for tr, te in _sk_folds(ds.labels):
        pipe = ms.make_pipeline(*chain, ms.get_algorithm("svm")).fit(ds.subset(tr))
        assert {"island=Dream", "sex=male"} <= set(pipe.columns_out_)
        by_hand[te] = pipe.predict(ds.subset(te))
    np.testing.assert_array_equal(c.classes[c.learners[0].predictions[0]], by_hand)
