"""The classification contract shared by every supervised plugin: label checks and encoding,
the ClassificationAlgorithm base (decision_function / predict_proba / score), training curves
and fit warnings."""
import warnings

import numpy as np
import pytest

from manifold_studio.algorithms import ClassificationAlgorithm, Float
from manifold_studio.algorithms.conformance import iter_checks
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.labels import encode_labels, looks_continuous
from manifold_studio.errors import ConvergenceWarning, DataError, NotFittedError
from fakes import RecordingProgress  # noqa: E402


class NearestMean(ClassificationAlgorithm):
    id = "nearest_mean_contract"
    name = "Nearest class mean"
    help = "Assigns each point to the class whose training mean is nearest (a test classifier)."
    params = (Float("temperature", 1.0, "Softmax temperature of the probabilities.", low=0.0, low_open=True),)

    def _fit_classes(self, X, y_idx, progress):
        progress.checkpoint(0.0, "means")
        self.means_ = np.array([X[y_idx == k].mean(axis=0) for k in range(len(self.classes_))])
        if len(self.classes_) > 2:
            self._warn("more than two classes", ConvergenceWarning)

    def _neg_sq(self, X):
        return -((X[:, None, :] - self.means_[None]) ** 2).sum(-1)

    def _decision(self, X):
        d = self._neg_sq(X)
        return d[:, 1] - d[:, 0] if len(self.classes_) == 2 else d

    def _proba(self, X):
        z = self._neg_sq(X) / self.temperature
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)


def blobs(n=90, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [6, 0], [0, 6], [6, 6]], dtype=float)[:k]
    y = np.repeat(np.arange(k), n // k)
    return centres[y] + rng.normal(size=(len(y), 2)), y


def test_labels_any_type_sorted_and_original_values_returned():
    X, y = blobs()
    names = np.array(["virginica", "setosa", "versicolor"], dtype=object)[y]
    est = NearestMean().fit(X, names)
    assert list(est.classes_) == ["setosa", "versicolor", "virginica"]
    pred = est.predict(X)
    assert set(pred) <= set(names) and est.score(X, names) == np.mean(pred == names) > 0.95
    # integers, booleans and integral floats are classes too
    for labels in (y + 10, y.astype(float), (y > 0)):
        est = NearestMean().fit(X, labels)
        np.testing.assert_array_equal(est.classes_, np.unique(labels))
        assert est.predict(X[:3]).dtype == est.classes_.dtype


def test_binary_decision_positive_means_second_class():
    X, y = blobs(k=2)
    est = NearestMean().fit(X, np.where(y == 1, "yes", "no"))
    d = est.decision_function(X)
    assert d.shape == (len(X),)
    np.testing.assert_array_equal(est.predict(X), np.where(d > 0, est.classes_[1], est.classes_[0]))
    p = est.predict_proba(X)
    assert p.shape == (len(X), 2) and np.allclose(p.sum(1), 1)
    np.testing.assert_array_equal(np.argmax(p, 1), (d > 0).astype(int))


def test_multiclass_scores_and_probabilities():
    X, y = blobs(k=3)
    est = NearestMean().fit(X, y)
    assert est.decision_function(X).shape == (len(X), 3)
    np.testing.assert_array_equal(est.predict(X), est.classes_[np.argmax(est.predict_proba(X), 1)])
    assert est.fit_warnings_ == ["more than two classes"]


def test_predict_proba_absent_where_the_method_has_none():
    class NoProba(NearestMean):
        _proba = ClassificationAlgorithm._proba

    est = NoProba()
    assert not hasattr(est, "predict_proba") and hasattr(est, "decision_function")


def test_unfitted_and_wrong_features():
    X, y = blobs()
    with pytest.raises(NotFittedError, match="fit"):
        NearestMean().decision_function(X)
    est = NearestMean().fit(X, y)
    with pytest.raises(DataError, match="features"):
        est.predict_proba(np.ones((2, 3)))


@pytest.mark.parametrize("labels, match", [
    (None, "requires y"),
    (np.zeros(5), "5 labels but X has 90"),
    (np.r_[np.nan, np.zeros(89)], r"missing label.*row\(s\) 0"),
    (np.array(["a", "", "b"] * 30, dtype=object), r"missing label.*row\(s\) 1, 4, 7"),
    (np.array(["a"] * 90), "single class"),
    (np.linspace(0, 1, 90), "Unknown label type: continuous"),
    (np.ones((90, 2)), "1-dimensional"),
])
def test_bad_labels_are_refused_with_a_message(labels, match):
    X, _ = blobs()
    with pytest.raises(DataError, match=match):
        NearestMean().fit(X, labels)


def test_column_vector_labels_warn_and_work():
    X, y = blobs()
    with pytest.warns(UserWarning, match="column-vector y"):
        est = NearestMean().fit(X, y[:, None])
    assert est.score(X, y) > 0.95


def test_looks_continuous_questions():
    assert looks_continuous(np.arange(150) % 3) == ""
    assert looks_continuous(np.array(["a", "b"])) == ""
    assert "continuous" in looks_continuous(np.linspace(0, 1, 200))
    assert "500 distinct" in looks_continuous(np.arange(500))


def test_encode_labels_mixed_types_compare_as_text():
    classes, idx = encode_labels(np.array([1, "a", 1, "b"], dtype=object))
    assert list(classes) == ["1", "a", "b"] and list(idx) == [0, 1, 0, 2]


def test_training_curve_publisher_throttles_and_flushes():
    rec = RecordingProgress()
    seen = rec.partials
    pub = CurvePublisher(rec, "Loss", y_label="loss", min_interval=3600)
    for i in range(50):
        pub.add(i + 1, train=1.0 / (i + 1), validation=2.0 / (i + 1))
    assert len(seen) == 1  # the first point only; the rest is throttled
    pub.flush()
    curve = seen[-1]
    assert isinstance(curve, TrainingCurve) and curve.final and curve.x.shape == (50,)
    np.testing.assert_allclose(curve.series["validation"], 2 * curve.series["train"])
    with pytest.raises(ValueError, match="series 'a'"):
        TrainingCurve("bad", [1, 2], {"a": [1.0]})


def test_conformance_kit_and_model_state_round_trip_keep_text_classes():
    for name, check in iter_checks(NearestMean):
        if name != "check_imports_no_qt":  # this test module is not importable in a subprocess
            check()
    X, y = blobs()
    est = NearestMean().fit(X, np.array(["b", "a", "c"], dtype=object)[y])
    assert est.classes_.dtype.kind == "U"  # saved without pickle
    other = NearestMean().restore_state(est.fitted_state())
    np.testing.assert_array_equal(other.predict(X), est.predict(X))


def test_fit_warnings_reach_the_run_log():
    from manifold_studio.data import Dataset
    from manifold_studio.plugins.host import PluginHost
    from manifold_studio.session.model import Session

    host = PluginHost()
    host.algorithms[NearestMean.id] = NearestMean
    s = Session(host)
    X, y = blobs()
    s.add_dataset(Dataset("blobs", X, labels=y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = s.run(NearestMean.id)
    assert run.succeeded
    assert any(e.level == "warning" and "more than two classes" in e.message for e in s.history)


def test_accuracy_across_label_types():
    from manifold_studio.algorithms.labels import accuracy

    assert accuracy(np.array([1, 2, 3]), np.array([1.0, 2.0, 4.0])) == pytest.approx(2 / 3)
    assert accuracy(np.array([1, 2]), np.array(["1", "3"], dtype=object)) == 0.5
    assert accuracy(np.array(["a", "b"]), np.array(["a", "b"], dtype=object)) == 1.0
    with pytest.raises(DataError, match="3 true labels for 2"):
        accuracy(np.array([1, 2]), np.array([1, 2, 3]))
