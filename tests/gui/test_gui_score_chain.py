"""pytest-qt: the classification panel's evaluation and Test & Score use the Preparation dock's
chain: each fold fits the whole pipeline (chain + classifier) on its training part; a step that
fails on one fold is named with the fold and the learner, and the other folds are scored; the
Test & Score dock's report item records the chain."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

import manifold_studio as ms
from gui_helpers import discovered_host, wait_idle, wait_last_run
from manifold_studio.data import Dataset
from manifold_studio.evaluation import KFOLD, evaluate, stratified_kfold

pytest.importorskip("pytestqt")

WINDOW_DIALOGS = False
WINDOW_SIZE = (1400, 900)


@pytest.fixture
def host():
    return discovered_host(("svm", "perceptron", "pca"), ("wine",))


def _run_svm(qtbot, w, chain):
    w.preparation_panel.set_chain(chain)
    w.algorithm_panel.select_algorithm("svm")
    w.classification_panel.set_evaluation(KFOLD, n_splits=5, seed=4)
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    qtbot.waitUntil(lambda: w.classification_panel.result_for(run) is not None, timeout=20_000)
    return run, w.classification_panel.result_for(run)


def test_the_evaluation_of_a_chained_run_refits_the_chain_on_each_training_part(qtbot, make_window, host):
    w = make_window(host)
    ds = ms.load_data("sample:wine")  # columns from 0.1 to 1,700: an RBF SVM needs them scaled
    w.session.add_dataset(ds)
    scaled_run, scaled = _run_svm(qtbot, w, [("standardize", {})])
    bare_run, bare = _run_svm(qtbot, w, [])
    assert scaled_run.meta["chain"] == [["standardize", {}]]
    assert "chain" not in bare_run.meta
    by_hand = []
    for tr, te in stratified_kfold(ds.labels, 5, random_state=4):
        scaler = StandardScaler().fit(ds.X[tr])
        svm = ms.get_algorithm("svm", **scaled_run.params).fit(scaler.transform(ds.X[tr]), ds.labels[tr])
        by_hand.append(np.mean(svm.predict(scaler.transform(ds.X[te])) == ds.labels[te]))
    np.testing.assert_allclose(scaled.fold_accuracy, by_hand, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(bare.fold_accuracy, evaluate(ms.get_algorithm("svm", **bare_run.params), ds.X,
                                                               ds.labels, KFOLD, n_splits=5,
                                                               random_state=4).fold_accuracy)
    assert scaled.mean_accuracy > 0.95 and scaled.mean_accuracy > bare.mean_accuracy + 0.2
    # the Runs table's Score column is that evaluation's
    log = w.run_log
    col = [log.horizontalHeaderItem(j).text() for j in range(log.columnCount())].index("Score")
    for run, res in ((scaled_run, scaled), (bare_run, bare)):
        assert log.item(log.row_of(run.id), col).text() == (
            f"CA {res.mean_accuracy:.3f} ± {res.std_accuracy:.3f}, 5-fold")


def test_a_chain_step_failing_on_one_fold_is_named_and_the_rest_is_scored(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    n = 60
    y = np.repeat(["a", "b"], n // 2)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(np.zeros(n), y))
    x = np.zeros(n)
    x[folds[1][1][:6]] = np.arange(1.0, 7.0)  # the only column varies only on fold 2's test part
    w.session.add_dataset(Dataset("one column", x[:, None], labels=y, feature_names=["x"]))
    w.preparation_panel.set_chain([("drop_constant", {})])
    panel = w.test_score
    assert panel.prep_label.text() == "Preparation: drop_constant"
    panel.check("svm")
    panel.check("perceptron")
    panel.set_scheme("kfold", folds=3, seed=0)
    job = panel.run()
    qtbot.waitUntil(lambda: job.finished, timeout=60_000)
    c = panel.comparison
    assert c is not None, panel.status.text()
    for r in c.learners:
        assert np.isfinite(r.fold_metrics["accuracy"]).tolist() == [True, False, True]
        assert (f"{r.name}: fold 2: preparation step 'drop_constant' failed on its training part: every column "
                "is constant ('x')") in panel.status.text()
    # the report item of the dock records the data, the chain, the scheme and the learners
    w.window_layout.open("test_score")  # as Tools ▸ Test & Score does (docks are hidden until opened)
    item = w.report_actions.add_view("test_score", caption="")
    facts = dict(item.facts)
    assert facts["Data set"] == "one column" and facts["Preparation"] == "drop_constant"
    assert facts["Scheme"] == "stratified 3-fold, seed 0, 3 fold(s)"
    assert facts["svm"].startswith("svm(C=1.0") and "CA " in facts["svm"]
    # File ▸ Export as Python script repeats the comparison behind its chain (a source given to the
    # data set made here, so that the script loads it)
    w.session.datasets["one column"].source = str(tmp_path / "one.csv")
    path = w.project.export_script(tmp_path / "analysis.py")
    from manifold_studio.reproduce.script_spec import script_spec

    text = path.read_text()
    assert "comparison = test_and_score(SPEC['test_score'], data1)" in text
    spec = script_spec(text)["test_score"]
    assert {a["algorithm"] for a in spec["learners"]} >= {"svm"}
    assert all(a["chain"] == [["drop_constant", {}]] for a in spec["learners"])
    assert spec["options"] == {"cv": 3, "repeats": 1, "seed": 0}
