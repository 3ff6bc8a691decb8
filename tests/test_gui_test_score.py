"""pytest-qt: Test & Score in the window (Tools ▸ Test & Score dock).

Breast cancer (scikit-learn's copy, standardized here: the app ships no breast-cancer sample and
has no preparation chain yet) with the perceptron, logistic regression, an RBF SVM and an MLP in
one table; the table's ROC AUC equals scikit-learn's roc_auc_score on the same out-of-fold
scores; the ROC view draws one curve per learner; a confusion cell selects its rows.
"""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle

pytest.importorskip("pytestqt")

from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.metrics import accuracy_score, confusion_matrix, roc_auc_score  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402

from manifold_studio.data import Dataset  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1400, 900)
LEARNERS = ("perceptron", "linear_classifier", "svm", "mlp")


@pytest.fixture
def host():
    return discovered_host(LEARNERS + ("pca",))


def _breast_cancer():
    data = load_breast_cancer()
    X = (data.data - data.data.mean(0)) / data.data.std(0)
    return Dataset("breast cancer", X, labels=data.target_names[data.target], feature_names=list(data.feature_names),
                   label_name="diagnosis")


def _score(qtbot, w, folds=3, seed=0):
    panel = w.test_score
    for algo in LEARNERS:
        panel.check(algo)
    panel.form("linear_classifier").editor("loss").set_value("logistic")
    panel.form("svm").editor("kernel").set_value("rbf")
    panel.form("mlp").editor("hidden_layer_sizes").set_value((16,))
    panel.form("mlp").editor("max_iter").set_value(60)
    panel.set_scheme("kfold", folds=folds, seed=seed)
    job = panel.run()
    assert job is not None, panel.status.text()
    qtbot.waitUntil(lambda: job.finished, timeout=120_000)
    wait_idle(qtbot, w)
    assert panel.comparison is not None, panel.status.text()
    return panel


def test_test_and_score_four_learners_against_sklearn(qtbot, make_window, host):
    w = make_window(host)
    ds = _breast_cancer()
    w.session.add_dataset(ds)
    w.test_score_action.trigger()
    panel = _score(qtbot, w)
    c = panel.comparison
    y_idx = np.unique(ds.labels, return_inverse=True)[1]
    # one table, one row per learner
    assert panel.table.rowCount() == 4
    assert [panel.table.verticalHeaderItem(i).text() for i in range(4)] == sorted(LEARNERS)  # list order
    # the folds are scikit-learn's
    sk = [te for _, te in StratifiedKFold(3, shuffle=True, random_state=0).split(ds.X, ds.labels)]
    for (_, te), b in zip(c.folds, sk):
        np.testing.assert_array_equal(te, b)
    auc_col = [panel.table.horizontalHeaderItem(j).text() for j in range(panel.table.columnCount())].index("ROC AUC")
    for i, r in enumerate(c.learners):
        assert r.failures == [] and r.scores is not None
        per_fold = [roc_auc_score(y_idx[te], r.scores[0][te, 1]) for te in sk]
        np.testing.assert_allclose(r.fold_metrics["auc"], per_fold, rtol=0, atol=1e-12)
        assert panel.table.item(i, auc_col).text() == f"{np.mean(per_fold):.3f} ± {np.std(per_fold):.3f}"
        acc = [accuracy_score(y_idx[te], r.predictions[0][te]) for te in sk]
        np.testing.assert_allclose(r.fold_metrics["accuracy"], acc, atol=1e-15)
        assert abs(c.pooled_auc(r.name) - roc_auc_score(y_idx, r.scores[0][:, 1])) < 1e-12
    # logistic and the MLP give probabilities: calibration curves; the perceptron and SVM do not
    assert sorted(panel.calibration_view.curves) == ["linear_classifier", "mlp"]
    # the ROC view: one curve per learner, ending at (1, 1), with the pooled AUC in the legend
    roc = panel.roc_view
    assert sorted(roc.curves) == sorted(LEARNERS)
    assert len([it for it in roc.plot.getPlotItem().listDataItems() if it.name()]) == 4
    for name, item in roc.curves.items():
        x, y = item.getData()
        assert (x[0], y[0], x[-1], y[-1]) == (0.0, 0.0, 1.0, 1.0)
        assert abs(np.trapezoid(y, x) - c.pooled_auc(name)) < 1e-12
        assert f"AUC {c.pooled_auc(name):.3f}" in item.name()
    # paired comparison shown
    wins, paired = c.wins("accuracy")
    assert panel.wins_table.item(2, 0).text() == f"{wins[2, 0]}/{paired[2, 0]}" and paired[2, 0] == 3
    # the confusion matrix of a learner; a click on a cell selects its rows
    conf = panel.confusion_view
    conf.learner_combo.setCurrentText("svm")
    svm = c.learner("svm")
    np.testing.assert_array_equal(conf.counts, confusion_matrix(y_idx, svm.predictions[0]))
    assert conf.table.item(1, 0).text() == str(conf.counts[1, 0])
    conf.table.cellClicked.emit(1, 0)
    expect = np.flatnonzero((y_idx == 1) & (svm.predictions[0] == 0))
    assert expect.size > 0
    np.testing.assert_array_equal(w.selection.rows(ds.name), expect)


def test_test_and_score_says_why_it_cannot_run_and_cancels(qtbot, make_window, host):
    w = make_window(host)
    panel = w.test_score
    assert panel.run() is None and "Load a data set" in panel.status.text()
    w.session.add_dataset(Dataset("unlabelled", np.random.default_rng(0).normal(size=(30, 2))))
    assert panel.run() is None and "no labels" in panel.status.text()
    w.session.add_dataset(_breast_cancer())
    assert panel.run() is None and "Tick" in panel.status.text()
    panel.check("mlp")
    panel.form("mlp").editor("max_iter").set_value(400)
    panel.set_scheme("loo")
    job = panel.run()
    assert panel.cancel_button.isEnabled()
    panel.cancel()
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert job.state == job.CANCELLED and "cancelled" in panel.status.text()
    assert panel.run_button.isEnabled() and panel.comparison is None
