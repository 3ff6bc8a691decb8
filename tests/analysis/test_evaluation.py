"""manifold_studio.evaluation: stratified hold-out / k-fold and the scores, against scikit-learn."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.linear_model import Perceptron as SkPerceptron

from manifold_studio import evaluation as ev
from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError


def _labels(seed=0, sizes=(50, 31, 17)):
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.full(s, c) for c, s in enumerate(sizes)])
    return rng.permutation(y)


def _blobs(seed=0, n_per=40):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [4, 0], [0, 4]], float)
    X = np.concatenate([c + rng.normal(size=(n_per, 2)) for c in centres])
    y = np.repeat(np.array(["a", "b", "c"]), n_per)
    return X, y


class SkWrap:
    """A scikit-learn Perceptron with the fit(X, y, progress) signature (the oracle model)."""

    def __init__(self):
        self.m = SkPerceptron(random_state=0, shuffle=False, max_iter=50, tol=None)

    def fit(self, X, y, progress=None):
        if progress is not None:
            progress.checkpoint(0.5, "fitting")
        self.m.fit(X, y)
        return self

    def predict(self, X):
        return self.m.predict(X)


def test_holdout_is_stratified_seeded_and_a_partition():
    y = _labels()
    tr, te = ev.holdout_split(y, 0.3, random_state=4)
    assert np.array_equal(np.sort(np.concatenate([tr, te])), np.arange(y.size))
    for c, n_c in zip(*np.unique(y, return_counts=True)):
        assert np.sum(y[te] == c) == round(n_c * 0.3)
    tr2, te2 = ev.holdout_split(y, 0.3, random_state=4)
    assert np.array_equal(te, te2) and np.array_equal(tr, tr2)
    assert not np.array_equal(te, ev.holdout_split(y, 0.3, random_state=5)[1])


def test_holdout_keeps_every_class_in_training():
    y = np.array([0] * 10 + [1, 1])
    tr, te = ev.holdout_split(y, 0.9, random_state=0)
    assert set(y[tr]) == {0, 1} and np.sum(y[te] == 1) == 1


def test_kfold_has_stratified_kfold_properties():
    from sklearn.model_selection import StratifiedKFold

    y = _labels(1)
    k = 5
    folds = ev.stratified_kfold(y, k, random_state=0)
    sk = list(StratifiedKFold(k, shuffle=True, random_state=0).split(np.zeros(y.size), y))
    assert len(folds) == k
    all_test = np.concatenate([te for _, te in folds])
    assert np.array_equal(np.sort(all_test), np.arange(y.size))  # each row tested exactly once
    for (tr, te), (sk_tr, sk_te) in zip(folds, sk):
        assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == y.size
        # the same per-class test counts as scikit-learn's StratifiedKFold (n_c//k or n_c//k + 1)
        for c, n_c in zip(*np.unique(y, return_counts=True)):
            assert np.sum(y[te] == c) in (n_c // k, n_c // k + 1)
    sizes = sorted(te.size for _, te in folds)
    assert sizes == sorted(te.size for _, te in sk)  # fold sizes as scikit-learn's
    for (tr, te), (sk_tr, sk_te) in zip(folds, sk):  # and the very folds (those of Test & Score)
        assert np.array_equal(te, sk_te) and np.array_equal(tr, sk_tr)


def test_kfold_bad_input_names_the_problem():
    y = np.array([0] * 10 + [1] * 3)
    with pytest.raises(DataError, match="Class '1' has only 3"):
        ev.stratified_kfold(y, 5)
    with pytest.raises(InvalidParameterError, match="at least 2 folds"):
        ev.stratified_kfold(y, 1)
    with pytest.raises(InvalidParameterError, match="test_fraction"):
        ev.holdout_split(y, 1.5)
    with pytest.raises(DataError, match="single class"):
        ev.holdout_split(np.zeros(10), 0.3)


def test_confusion_and_scores_equal_sklearn():
    rng = np.random.default_rng(3)
    t, p = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
    p[:5] = 0
    cm = ev.confusion_matrix(t, p, 4)
    assert np.array_equal(cm, skm.confusion_matrix(t, p, labels=range(4)))
    prec, rec, f1, sup = ev.per_class_scores(cm)
    sp, sr, sf, ss = skm.precision_recall_fscore_support(t, p, labels=range(4), zero_division=0)
    assert np.allclose(prec, sp) and np.allclose(rec, sr) and np.allclose(f1, sf) and np.array_equal(sup, ss)
    # a class never predicted: precision 0 as zero_division=0
    cm = ev.confusion_matrix([0, 1, 2], [0, 0, 0], 3)
    assert np.allclose(ev.per_class_scores(cm)[0], skm.precision_score([0, 1, 2], [0, 0, 0], average=None,
                                                                        zero_division=0))


@pytest.mark.parametrize("method", [ev.HOLDOUT, ev.KFOLD])
def test_evaluate_equals_a_literal_loop_with_sklearn(method):
    X, y = _blobs()
    X[:5] += 3.0  # some mistakes
    res = ev.evaluate(SkWrap, X, y, method, test_fraction=0.3, n_splits=4, random_state=2)
    splits = ([ev.holdout_split(y, 0.3, 2)] if method == ev.HOLDOUT
              else ev.stratified_kfold(y, 4, random_state=2))
    assert res.n_folds == len(splits)
    cm, accs = 0, []
    for (tr, te), test_rows, pred in zip(splits, res.test_index, res.predictions):
        m = SkPerceptron(random_state=0, shuffle=False, max_iter=50, tol=None).fit(X[tr], y[tr])
        p = m.predict(X[te])
        assert np.array_equal(test_rows, te) and np.array_equal(pred, p)
        cm = cm + skm.confusion_matrix(y[te], p, labels=["a", "b", "c"])
        accs.append(skm.accuracy_score(y[te], p))
    assert np.array_equal(res.confusion, cm)
    assert np.allclose(res.fold_accuracy, accs)
    assert res.mean_accuracy == pytest.approx(np.mean(accs)) and res.std_accuracy == pytest.approx(np.std(accs))
    all_t = np.concatenate([y[t] for t in res.test_index])
    all_p = np.concatenate(res.predictions)
    sp, sr, _, _ = skm.precision_recall_fscore_support(all_t, all_p, labels=["a", "b", "c"], zero_division=0)
    assert np.allclose(res.precision, sp) and np.allclose(res.recall, sr)
    assert list(res.classes) == ["a", "b", "c"]
    assert ("±" in res.summary()) == (method == ev.KFOLD)


def test_evaluate_with_the_perceptron_plugin_and_cancel():
    from manifold_studio.plugins.host import PluginHost

    host = PluginHost().discover()
    if "perceptron" not in host.algorithms:
        pytest.skip("perceptron plugin not installed")
    cls = host.algorithms["perceptron"]
    X, y = _blobs(1)
    seen = []
    prog = CallbackProgress(on_progress=lambda f, m: seen.append(f))
    res = ev.evaluate((cls, {"max_epochs": 30}), X, y, ev.KFOLD, n_splits=3, progress=prog)
    assert seen and max(seen) == 1.0 and all(a <= b + 1e-12 for a, b in zip(seen, seen[1:]))
    for (tr, te), pred in zip(ev.stratified_kfold(y, 3), res.predictions):
        assert np.array_equal(pred, cls(max_epochs=30).fit(X[tr], y[tr]).predict(X[te]))
    prog = CallbackProgress()
    prog.cancel()
    with pytest.raises(FitCancelled):
        ev.evaluate((cls, {}), X, y, ev.KFOLD, n_splits=3, progress=prog)


def test_label_indices_compare_by_value():
    classes = np.array([1, 2, 3])
    assert list(ev.label_indices(np.array(["3", "1"], dtype=object), classes)) == [2, 0]
    with pytest.raises(DataError, match="'7' is not one of the classes"):
        ev.label_indices(np.array([7]), classes)
