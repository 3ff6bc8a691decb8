"""Test & Score core (manifold_studio.evaluation.compare_learners) against scikit-learn."""
import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.model_selection import LeaveOneOut, RepeatedStratifiedKFold, StratifiedKFold

import manifold_studio as ms
from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.analysis import classifier_scores as cs
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError
from manifold_studio.evaluation import compare_learners, evaluate


@pytest.fixture(scope="module")
def iris():
    ds = ms.load_data("sample:iris")
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    return X, np.asarray(ds.labels)


@pytest.fixture(scope="module")
def binary(iris):
    X, y = iris
    keep = y != "setosa"  # versicolor vs virginica: not separable, scores matter
    return X[keep], y[keep]


LOGISTIC = ("linear_classifier", {"loss": "logistic"})


class NearestMean:
    """fit/predict only: no scores."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.means_ = np.array([X[y == c].mean(0) for c in self.classes_])
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.means_[None]) ** 2).sum(-1)
        return self.classes_[np.argmin(d, 1)]


def _sk_folds(splitter, y):
    return [(np.sort(tr), np.sort(te)) for tr, te in splitter.split(np.zeros((len(y), 1)), y)]


@pytest.mark.parametrize("k,seed", [(5, 0), (3, 7), (10, 123)])
def test_folds_are_sklearns_stratified_kfold(iris, k, seed):
    _, y = iris
    y_idx = np.unique(y, return_inverse=True)[1]
    ours = cs.stratified_kfold_sklearn(y_idx, k, seed)
    theirs = _sk_folds(StratifiedKFold(k, shuffle=True, random_state=seed), y)
    assert len(ours) == k
    for (a_tr, a_te), (b_tr, b_te) in zip(ours, theirs):
        np.testing.assert_array_equal(a_te, b_te)
        np.testing.assert_array_equal(a_tr, b_tr)


def test_folds_with_uneven_classes_and_labels_in_any_order():
    rng = np.random.default_rng(3)
    y = rng.choice(np.array(["z", "a", "m"]), size=83, p=[0.6, 0.3, 0.1])
    y_idx = np.unique(y, return_inverse=True)[1]
    ours = cs.stratified_kfold_sklearn(y_idx, 4, 11)
    for (a_tr, a_te), (b_tr, b_te) in zip(ours, _sk_folds(StratifiedKFold(4, shuffle=True, random_state=11), y)):
        np.testing.assert_array_equal(a_te, b_te)


def test_repeated_folds_are_sklearns(iris):
    _, y = iris
    y_idx = np.unique(y, return_inverse=True)[1]
    ours = [fold for rep in cs.repeated_stratified_kfold(y_idx, 4, 3, 5) for fold in rep]
    theirs = _sk_folds(RepeatedStratifiedKFold(n_splits=4, n_repeats=3, random_state=5), y)
    assert len(ours) == 12
    for (_, a_te), (_, b_te) in zip(ours, theirs):
        np.testing.assert_array_equal(a_te, b_te)


def test_comparison_uses_those_folds_for_every_learner(iris):
    X, y = iris
    c = compare_learners([LOGISTIC, "perceptron"], X, y, cv=4, seed=9)
    theirs = _sk_folds(StratifiedKFold(4, shuffle=True, random_state=9), y)
    assert [r for r, _ in c.folds] == [0] * 4
    for (_, te), (_, b_te) in zip(c.folds, theirs):
        np.testing.assert_array_equal(te, b_te)


def test_binary_scores_equal_sklearn(binary):
    X, y = binary
    c = compare_learners([LOGISTIC, "perceptron", "svm", NearestMean()], X, y, cv=5, seed=0)
    y_idx = c.y_idx
    assert [r.name for r in c.learners] == ["linear_classifier", "perceptron", "svm", "NearestMean"]
    for r in c.learners:
        assert r.failures == [] and r.predicted().all()
        pred = r.predictions[0]
        for f, (_, te) in enumerate(c.folds):
            t, p = y_idx[te], pred[te]
            assert r.fold_metrics["accuracy"][f] == pytest.approx(skm.accuracy_score(t, p), abs=1e-15)
            assert r.fold_metrics["balanced_accuracy"][f] == pytest.approx(skm.balanced_accuracy_score(t, p), abs=1e-12)
            assert r.fold_metrics["f1"][f] == pytest.approx(skm.f1_score(t, p, average="macro"), abs=1e-12)
            assert r.fold_metrics["precision"][f] == pytest.approx(
                skm.precision_score(t, p, average="macro", zero_division=0), abs=1e-12)
            assert r.fold_metrics["recall"][f] == pytest.approx(skm.recall_score(t, p, average="macro"), abs=1e-12)
            if r.scores is not None:
                assert abs(r.fold_metrics["auc"][f] - skm.roc_auc_score(t, r.scores[0][te, 1])) < 1e-12
            if r.proba is not None:
                assert abs(r.fold_metrics["log_loss"][f] - skm.log_loss(t, r.proba[0][te], labels=[0, 1])) < 1e-12
        assert r.mean("accuracy") == pytest.approx(np.mean(r.fold_metrics["accuracy"]))
        assert r.spread("accuracy") == pytest.approx(np.std(r.fold_metrics["accuracy"]))
        assert (r.fold_metrics["fit_time"] >= 0).all()
    logistic, perceptron, svm, nearest = c.learners
    assert logistic.score_kind == "predict_proba" and logistic.proba is not None
    assert svm.score_kind == perceptron.score_kind == "decision_function"
    assert svm.proba is None and np.isnan(svm.fold_metrics["log_loss"]).all()
    # pooled out-of-fold AUC equals sklearn's on the same scores
    for r in (logistic, perceptron, svm):
        assert abs(c.pooled_auc(r.name) - skm.roc_auc_score(y_idx, r.scores[0][:, 1])) < 1e-12
        fpr, tpr, _ = cs.roc_curve(y_idx == 1, r.scores[0][:, 1])
        assert abs(np.trapezoid(tpr, fpr) - c.pooled_auc(r.name)) < 1e-12
        sk_fpr, sk_tpr, _ = skm.roc_curve(y_idx, r.scores[0][:, 1], drop_intermediate=False)
        np.testing.assert_allclose(np.c_[fpr, tpr], np.c_[sk_fpr, sk_tpr], atol=1e-15)
    # a learner without scores: AUC not available, with the reason
    assert nearest.scores is None and np.isnan(nearest.fold_metrics["auc"]).all()
    assert "NearestMean" in nearest.auc_note and "decision_function nor predict_proba" in nearest.auc_note
    assert "n/a" in c.format_table().splitlines()[4]
    # confusion matrix from the out-of-fold predictions
    np.testing.assert_array_equal(c.confusion("svm"), skm.confusion_matrix(y_idx, svm.predictions[0]))
    rows = c.cell_rows("svm", 1, 0)
    np.testing.assert_array_equal(rows, np.flatnonzero((y_idx == 1) & (svm.predictions[0] == 0)))


def test_multiclass_ovr_auc_equals_sklearn(iris):
    X, y = iris
    c = compare_learners({"logistic": LOGISTIC, "mlp": ("mlp", {"hidden_layer_sizes": (8,), "max_iter": 60,
                                                                 "random_state": 0})},
                         X, y, cv=3, seed=1)
    y_idx = c.y_idx
    for r in c.learners:
        assert r.proba is not None
        for f, (_, te) in enumerate(c.folds):
            t = y_idx[te]
            expect = np.mean([skm.roc_auc_score(t == k, r.scores[0][te, k]) for k in range(3)])
            assert abs(r.fold_metrics["auc"][f] - expect) < 1e-12
            assert abs(r.fold_metrics["log_loss"][f] - skm.log_loss(t, r.proba[0][te], labels=[0, 1, 2])) < 1e-12
            assert r.fold_metrics["f1"][f] == pytest.approx(skm.f1_score(t, r.predictions[0][te], average="macro"),
                                                            abs=1e-12)
        sk = skm.roc_auc_score(y_idx, r.proba[0], multi_class="ovr", average="macro")
        ours = cs.ovr_auc(y_idx, r.proba[0])
        assert abs(ours - sk) < 1e-12
    # calibration bins: mean prediction and observed frequency per bin
    p = c.learner("mlp").proba[0][:, 2]
    mean_p, frac, count = cs.calibration_curve(y_idx == 2, p, 5)
    from sklearn.calibration import calibration_curve as sk_cal
    sk_frac, sk_mean = sk_cal(y_idx == 2, p, n_bins=5)
    np.testing.assert_allclose(mean_p, sk_mean, atol=1e-12)
    np.testing.assert_allclose(frac, sk_frac, atol=1e-12)
    assert count.sum() == len(y)


def test_paired_comparison_counts_folds(iris):
    X, y = iris
    c = compare_learners([LOGISTIC, NearestMean()], X, y, cv=5, repeats=2, seed=0)
    assert len(c.folds) == 10 and c.n_repeats == 2
    a = c.learners[0].fold_metrics["accuracy"]
    b = c.learners[1].fold_metrics["accuracy"]
    wins, paired = c.wins("accuracy")
    assert wins[0, 1] == int((a > b).sum()) and wins[1, 0] == int((b > a).sum())
    assert paired[0, 1] == 10 and paired[0, 0] == 0
    best = c.best_counts("accuracy")
    assert best[0] == int((a >= b).sum()) and best[1] == int((b >= a).sum())
    # both repeats hold every row once
    assert (c.learners[0].predictions >= 0).all()


def test_holdout_and_leave_one_out(binary):
    X, y = binary
    c = compare_learners([NearestMean()], X, y, holdout=0.3, seed=4)
    assert len(c.folds) == 1
    test = c.folds[0][1]
    assert len(test) == 30
    pred = c.learners[0].predictions[0]
    assert (pred[test] >= 0).all() and (np.delete(pred, test) == -1).all()
    assert c.learners[0].spread("accuracy") == 0.0
    sub = np.r_[0:8, 50:58]
    c = compare_learners([LOGISTIC], X[sub], y[sub], cv="loo")
    assert len(c.folds) == 16
    for (_, te), (_, b_te) in zip(c.folds, LeaveOneOut().split(X[sub])):
        np.testing.assert_array_equal(te, b_te)
    r = c.learners[0]
    assert np.isnan(r.fold_metrics["auc"]).all() and "pooled" in r.auc_note  # one row per fold
    assert abs(c.pooled_auc(r.name) - skm.roc_auc_score(c.y_idx, r.scores[0][:, 1])) < 1e-12


def test_a_fold_with_one_class_is_reported_and_the_rest_scored():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y = np.array(["a"] * 10 + ["b"] * 2)
    X[y == "b"] += 3
    # fold 2's training part holds only class 'a'
    folds = [(np.r_[0:5, 10], np.r_[5:10]), (np.r_[0:10], np.r_[10:12]), (np.r_[5:12], np.r_[0:5])]
    c = compare_learners([LOGISTIC], X, y, cv=folds)
    r = c.learners[0]
    assert len(r.failures) == 1
    msg = r.failures[0]
    assert "fold 2" in msg and "only class 'a'" in msg and "'b'" in msg
    assert np.isnan(r.fold_metrics["accuracy"][1]) and np.isfinite(r.fold_metrics["accuracy"][[0, 2]]).all()
    assert (r.predictions[0][10:12] == -1).all() and (r.predictions[0][:10] >= 0).all()


class Broken(NearestMean):
    def fit(self, X, y):
        raise ValueError("cannot learn from this")


def test_a_learner_that_fails_every_fold_is_reported_and_the_others_scored(binary):
    X, y = binary
    c = compare_learners([Broken(), NearestMean()], X, y, cv=3)
    broken, fine = c.learners
    assert [m.split(": ")[1] for m in broken.failures] == ["fold 1", "fold 2", "fold 3"]
    assert all("fit failed: cannot learn from this" in m for m in broken.failures)
    assert "no fold could be fitted" in broken.auc_note and np.isnan(broken.mean("accuracy"))
    assert fine.failures == [] and np.isfinite(fine.fold_metrics["accuracy"]).all()
    assert c.wins("accuracy")[1][0, 1] == 0  # nothing to pair
    assert c.best_counts("accuracy").tolist() == [0, 3]


class Stranger(NearestMean):
    def predict(self, X):
        return np.full(len(X), "no such class")


def test_a_learner_predicting_an_unknown_label_fails_its_folds_only(binary):
    X, y = binary
    c = compare_learners([Stranger(), NearestMean()], X, y, cv=2)
    assert len(c.learners[0].failures) == 2
    assert "predicting its test part failed" in c.learners[0].failures[0]
    assert "no such class" in c.learners[0].failures[0]
    assert np.isfinite(c.learners[1].fold_metrics["accuracy"]).all()


def test_progress_and_cancel(binary):
    X, y = binary
    seen = []
    c = compare_learners([NearestMean(), NearestMean()], X, y, cv=3,
                         progress=CallbackProgress(lambda f, m: seen.append((f, m)), min_interval=0))
    assert [r.name for r in c.learners] == ["NearestMean", "NearestMean (2)"]
    assert any("fold 3" in m for _, m in seen) and seen[-1][0] == 1.0
    prog = CallbackProgress(lambda f, m: prog.cancel() if "fold 2" in m else None, min_interval=0)
    with pytest.raises(FitCancelled):
        compare_learners([NearestMean()], X, y, cv=3, progress=prog)
    assert "fold 2" in prog.message and prog.fraction == pytest.approx(1 / 3)


def test_bad_inputs(iris):
    X, y = iris
    with pytest.raises(InvalidParameterError, match="at least one learner"):
        compare_learners([], X, y)
    with pytest.raises(InvalidParameterError, match="fit and predict"):
        compare_learners([object()], X, y)
    with pytest.raises(InvalidParameterError, match="cv"):
        compare_learners([NearestMean()], X, y, cv="bootstrap")
    with pytest.raises(InvalidParameterError, match="at least 2 folds"):
        compare_learners([NearestMean()], X, y, cv=1)
    with pytest.raises(DataError, match="two classes"):
        compare_learners([NearestMean()], X, np.zeros(len(X)))
    with pytest.raises(DataError, match="every class has fewer"):
        compare_learners([NearestMean()], X[:6], np.array([0, 0, 1, 1, 2, 2]), cv=3)
    with pytest.raises(InvalidParameterError, match="test_fraction"):
        compare_learners([NearestMean()], X, y, holdout=1.5)
    with pytest.raises(InvalidParameterError, match="names"):
        compare_learners([NearestMean(), NearestMean()], X, y, names=["a", "a"])
    with pytest.raises(ms.UnknownAlgorithmError if hasattr(ms, "UnknownAlgorithmError") else Exception):
        compare_learners(["no_such_learner"], X, y)


def test_evaluate_api_unchanged(iris):
    X, y = iris
    res = evaluate((ms.algorithm_class("linear_classifier"), {}), X, y, "kfold", n_splits=3)
    assert res.n_folds == 3 and res.confusion.sum() == len(y)


def test_comparison_and_evaluation_records_round_trip_through_a_project(iris, tmp_path):
    from manifold_studio.project.analysis_records import (comparison_from_record, comparison_record,
                                                        evaluation_from_record, evaluation_record)
    from manifold_studio.project.project_file import read_project, save_project
    from manifold_studio.session.model import Session

    X, y = iris
    c = compare_learners([LOGISTIC, NearestMean()], X, y, cv=3, repeats=2, seed=2)
    ev = evaluate((ms.algorithm_class("linear_classifier"), {}), X, y, "kfold", n_splits=3)
    session = Session()
    path = save_project(session, tmp_path / "p.msproj",
                        analyses={"test_score": comparison_record(c), "evaluation/1": evaluation_record(ev)})
    got = read_project(path).analyses
    c2 = comparison_from_record(*got["test_score"])
    assert [r.name for r in c2.learners] == [r.name for r in c.learners]
    np.testing.assert_array_equal(c2.classes, c.classes)
    for (r1, t1), (r2, t2) in zip(c.folds, c2.folds):
        assert r1 == r2
        np.testing.assert_array_equal(t1, t2)
    for a, b in zip(c.learners, c2.learners):
        assert a.auc_note == b.auc_note and a.failures == b.failures and a.score_kind == b.score_kind
        for m in a.fold_metrics:
            np.testing.assert_array_equal(a.fold_metrics[m], b.fold_metrics[m])
        np.testing.assert_array_equal(a.predictions, b.predictions)
        assert (a.scores is None) == (b.scores is None) and (a.proba is None) == (b.proba is None)
        if a.proba is not None:
            np.testing.assert_array_equal(a.proba, b.proba)
    assert c2.wins("accuracy")[0].tolist() == c.wins("accuracy")[0].tolist()
    ev2 = evaluation_from_record(*got["evaluation/1"])
    np.testing.assert_array_equal(ev2.confusion, ev.confusion)
    assert ev2.summary() == ev.summary()
    for a, b in zip(ev.predictions, ev2.predictions):
        np.testing.assert_array_equal(a, b)
    # a project without analyses reads as before
    assert read_project(save_project(session, tmp_path / "q.msproj")).analyses == {}


def test_a_damaged_saved_analysis_is_left_out_and_named(iris, tmp_path):
    import json

    from manifold_studio.project.analysis_records import evaluation_record
    from manifold_studio.project.project_file import META_KEY, read_project, save_project
    from manifold_studio.session.model import Session

    X, y = iris
    ev = evaluate((ms.algorithm_class("linear_classifier"), {}), X, y, "holdout")
    path = save_project(Session(), tmp_path / "p.msproj",
                        analyses={"evaluation/1": evaluation_record(ev), "evaluation/2": evaluation_record(ev)})
    with np.load(path, allow_pickle=False) as npz:
        members = {k: npz[k] for k in npz.files}
    meta = json.loads(str(members[META_KEY]))
    meta["analyses"]["evaluation/2"]["arrays"]["confusion"] = "analysis/nowhere"
    members[META_KEY] = np.array(json.dumps(meta))
    with open(path, "wb") as fh:  # (a path not ending in .npz would get one appended)
        np.savez_compressed(fh, **members)
    contents = read_project(path)
    assert list(contents.analyses) == ["evaluation/1"]
    assert any("evaluation/2" in p and "nowhere" in p for p in contents.problems)
