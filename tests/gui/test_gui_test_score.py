"""pytest-qt: Test & Score in the window (Tools ▸ Test & Score dock).

Breast cancer (the shipped sample, raw columns) with ``standardize`` in the Preparation dock and
the perceptron, logistic regression, an RBF SVM and an MLP in one table: every learner is the
chain and its classifier, fitted on each training part only (the standardized perceptron's
out-of-fold scores equal scikit-learn's StandardScaler fitted per training fold, then the
perceptron); the table's ROC AUC equals scikit-learn's roc_auc_score on the same out-of-fold
scores; the ROC view draws one curve per learner; a confusion cell selects its rows.
"""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle

pytest.importorskip("pytestqt")

from sklearn.metrics import accuracy_score, confusion_matrix, roc_auc_score  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1400, 900)
LEARNERS = ("perceptron", "linear_classifier", "svm", "mlp")


@pytest.fixture
def host():
    return discovered_host(LEARNERS + ("pca",))


def _breast_cancer():
    return ms.load_data("sample:breast_cancer")  # 569 rows, 30 raw feature columns, label 'diagnosis'


def _score(qtbot, w, folds=3, seed=0, standardize=True):
    panel = w.test_score
    if standardize:
        w.preparation_panel.add_step("standardize")
        assert panel.prep_label.text() == "Preparation: standardize"
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
    sk_folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(ds.X, ds.labels))
    sk = [te for _, te in sk_folds]
    for (_, te), b in zip(c.folds, sk):
        np.testing.assert_array_equal(te, b)
    # every learner is standardize + its classifier, the scaler fitted on each training part only
    assert [r.chain for r in c.learners] == [[("standardize", {"with_mean": True, "with_std": True})]] * 4
    assert panel.prep_label.text() == "Preparation: standardize"
    perceptron, by_hand = c.learner("perceptron"), np.empty(ds.n_samples)
    for tr, te in sk_folds:
        scaler = StandardScaler().fit(ds.X[tr])
        clf = ms.get_algorithm("perceptron", **perceptron.params).fit(scaler.transform(ds.X[tr]), ds.labels[tr])
        by_hand[te] = clf.decision_function(scaler.transform(ds.X[te]))
    np.testing.assert_allclose(perceptron.scores[0][:, 1], by_hand, rtol=1e-9, atol=1e-9 * np.abs(by_hand).max())
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


def test_two_copies_of_one_classifier_with_their_own_settings(qtbot, make_window, host):
    w = make_window(host)
    ds = _breast_cancer()
    w.session.add_dataset(ds)
    panel = w.test_score
    panel.check("svm")
    panel.form("svm").editor("C").set_value(3.0)
    copy = panel.add_copy("svm")
    assert copy == "svm #2" and panel.form(copy).editor("C").value() == 3.0  # starts from its settings
    panel.form(copy).editor("kernel").set_value("linear")
    panel.set_scheme("holdout", fraction=0.3, repeats=2, seed=5)
    job = panel.run()
    qtbot.waitUntil(lambda: job.finished, timeout=60_000)
    c = panel.comparison
    assert [r.name for r in c.learners] == ["svm", "svm #2"]
    assert c.learners[0].params["kernel"] == "rbf" and c.learners[1].params["kernel"] == "linear"
    assert c.learners[1].params["C"] == 3.0 and len(c.folds) == 2
    assert [panel.table.verticalHeaderItem(i).text() for i in range(2)] == ["svm", "svm #2"]
    assert sorted(panel.roc_view.curves) == ["svm", "svm #2"]


def _run_classifier(qtbot, w, algo, method, **params):
    from PySide6.QtCore import Qt

    from gui_helpers import wait_last_run

    w.algorithm_panel.select_algorithm(algo)
    for name, value in params.items():
        w.algorithm_panel.form.editor(name).set_value(value)
    w.classification_panel.set_evaluation(method, n_splits=3, test_fraction=0.25, seed=1)
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    assert w.classification_panel.result_for(run) is not None
    return run


def _table_texts(table):
    return [[table.item(i, j).text() for j in range(table.columnCount())] for i in range(table.rowCount())]


def test_runs_table_scores_and_a_reopened_project_keeps_every_evaluation(qtbot, make_window, host, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("MANIFOLD_STUDIO_RECOVERY_DIR", str(tmp_path / "recovery"))
    w = make_window(host)
    ds = _breast_cancer()
    w.session.add_dataset(ds)
    kfold_run = _run_classifier(qtbot, w, "linear_classifier", "kfold", loss="logistic")
    holdout_run = _run_classifier(qtbot, w, "perceptron", "holdout", max_epochs=30)
    # the Runs table shows each classifier run's score
    score_col = [w.run_log.horizontalHeaderItem(j).text() for j in range(w.run_log.columnCount())].index("Score")
    ev1 = w.classification_panel.result_for(kfold_run)
    ev2 = w.classification_panel.result_for(holdout_run)
    assert w.run_log.item(w.run_log.row_of(kfold_run.id), score_col).text() == (
        f"CA {ev1.mean_accuracy:.3f} ± {ev1.std_accuracy:.3f}, 3-fold")
    assert w.run_log.item(w.run_log.row_of(holdout_run.id), score_col).text() == f"CA {ev2.mean_accuracy:.3f}, hold-out"
    panel = _score(qtbot, w)
    before = panel.comparison
    table = _table_texts(panel.table)
    roc = {n: tuple(np.asarray(a) for a in item.getData()) for n, item in panel.roc_view.curves.items()}
    path = tmp_path / "scored.msproj"
    job = w.project.save_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert path.exists()

    # the autosaved recovery file holds them too
    from manifold_studio.project.project_file import read_project

    job = w.autosave.save_now()
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert {"test_score", f"evaluation/{kfold_run.id}", f"evaluation/{holdout_run.id}"} <= set(
        read_project(job.result).analyses)

    w2 = make_window(host)
    job = w2.project.open_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    wait_idle(qtbot, w2)
    p2 = w2.test_score
    # the table, the paired comparison and the ROC come back
    assert p2.comparison is not None and _table_texts(p2.table) == table
    # with the preparation chain every learner was scored behind, which the project restores in
    # the Preparation dock too (issue 30: the chain is session state)
    assert [r.chain for r in p2.comparison.learners] == [r.chain for r in before.learners] != [[]] * 4
    assert w2.preparation_panel.chain() == w.preparation_panel.chain() != []
    assert p2.prep_label.text() == "Preparation: standardize"
    assert _table_texts(p2.wins_table) == _table_texts(panel.wins_table)
    assert sorted(p2.roc_view.curves) == sorted(roc)
    for name, item in p2.roc_view.curves.items():
        x, y = item.getData()
        np.testing.assert_array_equal(x, roc[name][0])
        np.testing.assert_array_equal(y, roc[name][1])
    assert sorted(p2.calibration_view.curves) == sorted(panel.calibration_view.curves)
    # every learner's confusion matrix, and a click still selects the rows
    for r in before.learners:
        p2.confusion_view.learner_combo.setCurrentText(r.name)
        np.testing.assert_array_equal(p2.confusion_view.counts, before.confusion(r.name))
        np.testing.assert_array_equal(p2.comparison.learner(r.name).scores, r.scores)
    p2.confusion_view.table.cellClicked.emit(0, 0)
    assert w2.selection.count(ds.name) == int(before.confusion(p2.confusion_view.learner)[0, 0])
    # every run's evaluation: the confusion view of each classifier run, and the Runs table score
    view = w2.views["confusion"]
    for run, ev in ((kfold_run, ev1), (holdout_run, ev2)):
        w2.session.set_current_run(run.id)
        assert view.counts is not None, view.info.text()
        np.testing.assert_array_equal(view.counts, ev.confusion)
        assert "no evaluation" not in view.info.text()
        restored = w2.classification_panel.result_for(w2.session.runs[run.id])
        for a, b in zip(restored.test_index, ev.test_index):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(restored.predictions, ev.predictions):
            np.testing.assert_array_equal(a, b)
        row = w2.run_log.row_of(run.id)
        assert w2.run_log.item(row, score_col).text() == w.run_log.item(w.run_log.row_of(run.id), score_col).text()
