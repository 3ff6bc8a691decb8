"""pytest-qt tests of the classification GUI driving the real main window (headless).

The Classification group (Run blocked with the reason when the data set has no labels, the
question for continuous labels), hold-out and k-fold evaluation (the confusion view equals
scikit-learn's confusion matrix of the same split), the decision view (regions equal to
``predict`` on the grid, boundary, support vectors ringed, misclassified points), live training
curves, "Classify this map", and the higher-dimensional map coloured by predicted class.
"""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from sklearn.metrics import confusion_matrix as sk_confusion  # noqa: E402

from manifold_studio import evaluation as ev  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.analysis.classification_tasks import decision_grid_task  # noqa: E402
from manifold_studio.gui.views.decision_view import region_image  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture
def host():
    return discovered_host(("perceptron", "pca"), ("iris", "moons"))


def _load(qtbot, w, sample, **options):
    assert w.data_panel.select_sample(sample)
    for name, value in options.items():
        w.data_panel.sample_form.editor(name).set_value(value)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        qtbot.mouseClick(w.data_panel.load_sample_button, Qt.MouseButton.LeftButton)
    return w.session.current_dataset


def _run(qtbot, w, algo, **params):
    w.algorithm_panel.select_algorithm(algo)
    for name, value in params.items():
        w.algorithm_panel.form.editor(name).set_value(value)
    assert w.run_controls.run_button.isEnabled(), w.run_controls.run_button.toolTip()
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    wait_idle(qtbot, w)  # the evaluation job after the fit
    return run


def test_holdout_confusion_equals_sklearn_and_decision_regions_equal_predict(qtbot, make_window, host):
    w = make_window(host)
    ds = _load(qtbot, w, "moons", n_samples=200, random_state=1)
    panel = w.classification_panel
    panel.set_evaluation(ev.HOLDOUT, test_fraction=0.3, seed=7)
    run = _run(qtbot, w, "perceptron", max_epochs=40)
    assert panel.isVisible() and run.kind == "classification"

    # the confusion view shows scikit-learn's confusion matrix of the same stratified split
    tr, te = ev.holdout_split(ds.labels, 0.3, random_state=7)
    cls = host.algorithms["perceptron"]
    pred = cls(**run.params).fit(ds.X[tr], ds.labels[tr]).predict(ds.X[te])
    expected = sk_confusion(ds.labels[te], pred, labels=np.unique(ds.labels))
    view = w.views["confusion"]
    assert view.counts is not None and np.array_equal(view.counts, expected)
    assert view.table.item(0, 0).text() == f"{expected[0, 0]:,}"
    assert "accuracy" in panel.result_label.text() and "hold-out" in panel.result_label.text()
    assert panel.table.rowCount() == 2

    # decision regions: the grid's classes are predict() on the grid points, drawn as the image
    dv = w.views["decision"]
    qtbot.waitUntil(lambda: dv.grid is not None, timeout=10_000)
    g = dv.grid
    gx, gy = np.meshgrid(g.xs, g.ys)
    grid_pred = run.estimator.predict(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    assert np.array_equal(g.classes[g.class_index], grid_pred)
    assert len(np.unique(g.class_index)) == 2
    assert np.array_equal(dv.image, region_image(g.class_index, 2))
    assert g.decision is not None and np.array_equal(g.decision > 0, g.class_index == 1)
    bad = run.estimator.predict(ds.X) != ds.labels
    assert np.array_equal(g.misclassified, bad) and bad.any()
    names = [item.name() for item in dv.items if hasattr(item, "name") and item.name()]
    assert "decision boundary" in names and f"misclassified ({int(bad.sum())})" in names

    # the training curve: mistakes per epoch, published live and final
    tv = w.views["training_curve"]
    assert tv.n_partials >= 1
    final = run.estimator.training_curve()
    assert tv.curve is not None and set(tv.series) == set(final.series)
    for k, v in final.series.items():
        assert np.array_equal(tv.series[k], v)


def test_kfold_on_iris_and_the_map_coloured_by_predicted_class(qtbot, make_window, host):
    w = make_window(host)
    ds = _load(qtbot, w, "iris")
    _run(qtbot, w, "pca")
    panel = w.classification_panel
    panel.set_evaluation(ev.KFOLD, n_splits=4, seed=3)
    run = _run(qtbot, w, "perceptron", max_epochs=20)
    res = panel.result_for(run)
    assert res is not None and res.n_folds == 4
    cls = host.algorithms["perceptron"]
    total = 0
    for tr, te in ev.stratified_kfold(ds.labels, 4, random_state=3):
        p = cls(**run.params).fit(ds.X[tr], ds.labels[tr]).predict(ds.X[te])
        total = total + sk_confusion(ds.labels[te], p, labels=np.unique(ds.labels))
    assert np.array_equal(w.views["confusion"].counts, total)
    assert "±" in panel.result_label.text() and "4-fold" in panel.result_label.text()
    assert run.meta["evaluation"]["n_splits"] == 4

    # 4-D data: the decision view draws the PCA map coloured by predicted class
    dv = w.views["decision"]
    assert dv.mode == "map" and "misclassified" in dv.info.text()


def test_classify_this_map_draws_regions_on_the_map(qtbot, make_window, host):
    w = make_window(host)
    _load(qtbot, w, "iris")
    pca = _run(qtbot, w, "pca")
    w.classification_panel.set_evaluation("none")
    w.classify_map_action.trigger()
    assert w.input_selector.source_run() == pca.id
    assert host.algorithms[w.algorithm_panel.algorithm_id].kind == "classification"
    if w.algorithm_panel.algorithm_id == "perceptron":
        w.algorithm_panel.form.editor("max_epochs").set_value(20)
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    assert run.source_run == pca.id
    dv = w.views["decision"]
    qtbot.waitUntil(lambda: dv.grid is not None, timeout=10_000)
    assert dv.mode == "regions" and len(dv.grid.classes) == 3
    assert "run #" in dv.plot_item.getAxis("bottom").labelText
    names = [item.name() for item in dv.items if hasattr(item, "name") and item.name()]
    assert "region edges" in names  # three classes: the edges of the regions


def test_no_labels_disables_run_with_the_reason_shown(qtbot, make_window, host):
    w = make_window(host)
    X = np.random.default_rng(0).normal(size=(40, 3))
    w.session.add_dataset(Dataset("unlabelled", X))
    w.algorithm_panel.select_algorithm("perceptron")
    panel = w.classification_panel
    assert not w.run_controls.run_button.isEnabled()
    assert "has none" in w.run_controls.run_button.toolTip()
    assert "has none" in panel.reason_label.text() and panel.isVisible()
    assert w.run_algorithm() is None and not w.session.runs  # Ctrl+R too: nothing is fitted
    assert "has none" in w.statusBar().currentMessage()
    w.algorithm_panel.select_algorithm("pca")  # an embedding runs on the same data
    assert w.run_controls.run_button.isEnabled()


def test_continuous_labels_ask_before_running(qtbot, make_window, host):
    w = make_window(host)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    w.session.add_dataset(Dataset("measured", X, labels=rng.normal(size=300), label_name="height"))
    w.algorithm_panel.select_algorithm("perceptron")
    panel = w.classification_panel
    assert "continuous" in panel.reason_label.text()  # said before Run
    panel.accept_continuous = False
    assert w.run_algorithm() is None and not w.session.runs
    assert "Not run" in panel.reason_label.text()


def test_support_vectors_and_margins_are_drawn(qtbot, make_window, host):
    """Any estimator exposing ``support_`` gets its support vectors ringed and the margins ±1."""
    w = make_window(host)
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(size=(30, 2)) + [2, 2], rng.normal(size=(30, 2)) - [2, 2]])
    y = np.repeat(np.array(["no", "yes"]), 30)
    w.session.add_dataset(Dataset("two", X, labels=y))
    w.classification_panel.set_evaluation("none")
    run = _run(qtbot, w, "perceptron")
    est = run.estimator
    margin = np.abs(est.decision_function(X))
    est.support_ = np.argsort(margin)[:4]  # an SVM-like estimator: the closest points
    g = decision_grid_task(est, X, y)
    assert np.array_equal(g.support, X[est.support_])
    dv = w.views["decision"]
    dv._grid_done(run, g)
    names = [item.name() for item in dv.items if hasattr(item, "name") and item.name()]
    assert "support vectors (4)" in names and "margins (decision = ±1)" in names
    ring = next(i for i in dv.items if getattr(i, "name", lambda: "")() == "support vectors (4)")
    xs, ys = ring.getData()
    assert np.allclose(np.column_stack([xs, ys]), X[est.support_])


def test_cancel_evaluation_keeps_the_fitted_run(qtbot, make_window, host, monkeypatch):
    import time

    from manifold_studio.gui import classification_panel as cp

    real = cp.evaluation_task

    def slow_evaluation(*args, progress=None, **kwargs):  # waits at checkpoints until cancelled
        for i in range(200):
            progress.checkpoint(i / 1000, "waiting")
            time.sleep(0.02)
        return real(*args, progress=progress, **kwargs)

    monkeypatch.setattr(cp, "evaluation_task", slow_evaluation)
    w = make_window(host)
    _load(qtbot, w, "moons", n_samples=300, random_state=0)
    panel = w.classification_panel
    panel.set_evaluation("none")
    run = _run(qtbot, w, "perceptron", max_epochs=20)
    job = panel.evaluate(run, ev.KFOLD)
    assert w.run_controls.cancel_button.isEnabled()  # a foreground job: progress bar and Cancel
    qtbot.mouseClick(w.run_controls.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: job.finished, timeout=10_000)
    assert job.state == job.CANCELLED and "cancelled" in panel.result_label.text()
    assert w.session.runs[run.id].succeeded and panel.result_for(run) is None


def test_extend_to_a_file_and_apply_a_saved_classifier_show_accuracy(qtbot, make_window, host, tmp_path):
    from manifold_studio.algorithms.labels import accuracy

    w = make_window(host)
    ds = _load(qtbot, w, "iris")
    w.classification_panel.set_evaluation("none")
    run = _run(qtbot, w, "perceptron", max_epochs=20)
    rng = np.random.default_rng(0)
    X_new = ds.X[::3] + rng.normal(scale=0.3, size=ds.X[::3].shape)
    y_new = ds.labels[::3]
    path = tmp_path / "new.csv"
    header = ",".join([f"f{i}" for i in range(X_new.shape[1])] + ["species"])
    rows = [",".join([f"{v:.6f}" for v in x] + [str(lab)]) for x, lab in zip(X_new, y_new)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    expected = accuracy(run.estimator.predict(X_new), y_new)

    panel = w.views["extend"]
    job = panel.extend_file(path, options={"label_column": "species"}, ask=False)
    assert job is not None
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert job.state == job.DONE, job.error
    ext = w.session.runs[run.id].extensions[-1]
    assert np.array_equal(np.asarray(ext.values).astype(str), run.estimator.predict(X_new).astype(str))
    assert f"accuracy {expected:.4f}" in panel.status.text()

    model = tmp_path / "perceptron.npz"
    job = panel.save_model(model)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert job.state == job.DONE, job.error
    w.classification_panel.set_evaluation(ev.HOLDOUT)
    job = panel.apply_model(model, path, options={"label_column": "species"}, ask=False)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert job.state == job.DONE, job.error
    applied = wait_last_run(qtbot, w)
    assert applied.id != run.id and applied.kind == "classification"
    assert w.classification_panel.eval_job is None  # an applied model is not refitted
    assert np.array_equal(np.asarray(applied.labels).astype(str), run.estimator.predict(X_new).astype(str))
    assert f"accuracy {expected:.4f}" in panel.status.text()


def test_svm_support_vectors_ringed_margins_and_log_curve(qtbot, make_window, host):
    if "svm" not in host.algorithms:
        pytest.skip("the svm plugin is not installed")
    w = make_window(host)
    ds = _load(qtbot, w, "moons", n_samples=150, noise=0.2, random_state=0)
    w.classification_panel.set_evaluation(ev.HOLDOUT, test_fraction=0.25, seed=1)
    run = _run(qtbot, w, "svm", kernel="rbf", C=3.0)
    est = run.estimator
    tr, te = ev.holdout_split(ds.labels, 0.25, random_state=1)
    pred = host.algorithms["svm"](**run.params).fit(ds.X[tr], ds.labels[tr]).predict(ds.X[te])
    assert np.array_equal(w.views["confusion"].counts, sk_confusion(ds.labels[te], pred, labels=[0, 1]))
    dv = w.views["decision"]
    qtbot.waitUntil(lambda: dv.grid is not None, timeout=20_000)
    g = dv.grid
    assert np.array_equal(g.support, ds.X[est.support_])
    gx, gy = np.meshgrid(g.xs, g.ys)
    scores = est.decision_function(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    assert np.allclose(g.decision, scores)
    names = [item.name() for item in dv.items if hasattr(item, "name") and item.name()]
    assert f"support vectors ({len(est.support_)})" in names and "margins (decision = ±1)" in names
    tv = w.views["training_curve"]
    curve = est.training_curve()
    if curve is not None:
        assert tv.curve is not None and tv.curve.log_y == curve.log_y
        assert tv.plot_item.ctrl.logYCheck.isChecked() == bool(curve.log_y)


def test_evaluation_that_cannot_run_says_why_and_keeps_the_run(qtbot, make_window, host):
    w = make_window(host)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(43, 2))
    y = np.array(["big"] * 40 + ["rare"] * 3)
    w.session.add_dataset(Dataset("skewed", X, labels=y))
    w.classification_panel.set_evaluation(ev.KFOLD, n_splits=5)
    run = _run(qtbot, w, "perceptron", max_epochs=5)
    text = w.classification_panel.result_label.text()
    assert "failed" in text and "Class 'rare' has only 3 row(s)" in text
    assert w.session.runs[run.id].succeeded and w.session.current_run is run  # nothing lost
    assert w.classification_panel.result_for(run) is None


def test_out_of_sample_holdout_with_a_classifier_shows_accuracy(qtbot, make_window, host):
    from manifold_studio.algorithms.labels import accuracy

    w = make_window(host)
    ds = _load(qtbot, w, "iris")
    w.classification_panel.set_evaluation("none")
    w.algorithm_panel.select_algorithm("perceptron")
    w.algorithm_panel.form.editor("max_epochs").set_value(20)
    panel = w.views["extend"]
    with qtbot.waitSignal(panel.extended, timeout=30_000) as sig:
        run = panel.fit_with_holdout()
    ext = sig.args[0]
    held = np.asarray(ext.rows)
    assert np.intersect1d(held, run.rows).size == 0
    expected = accuracy(run.estimator.predict(ds.X[held]), ds.labels[held])
    assert f"accuracy {expected:.4f}" in panel.status.text()
