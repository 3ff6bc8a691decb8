"""pytest-qt (issue 30, items 6 and 7): the window's settings form.

- Seeds: every stochastic method's form shows its seed, 0 by default, and Test & Score of an MLP and
  an SVM (Platt probabilities) with the seeds left at their defaults gives, run twice in the window,
  exactly the figures of ``ms.evaluation.compare_learners`` (and so of ``manifold-studio score``,
  tests/analysis/test_seed_defaults.py).
- Data-dependent checks before Run: t-SNE with perplexity 200 on 150 points says "perplexity must be
  below n = 150" under the form and Run is off until it is fixed.
- Values remembered per method: change a parameter, pick another method and come back, the value is
  still there; saved in the project and restored when it is opened in another window.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from PySide6.QtCore import Qt

from gui_helpers import discovered_host, score_in_window, wait_idle

pytest.importorskip("pytestqt")

import manifold_studio as ms  # noqa: E402
from manifold_studio.evaluation import compare_learners  # noqa: E402

WINDOW_DIALOGS = False
FAST = {"mlp": {"hidden_layer_sizes": (8,), "max_iter": 20}, "svm": {"probability": True}}


@pytest.fixture(scope="module")
def host():
    return discovered_host(("mlp", "svm", "tsne", "pca", "kmeans"), ("iris", "breast_cancer"))


def _window_scores(qtbot, w) -> dict:
    comparison = score_in_window(qtbot, w, FAST, timeout=60_000)
    return {(r.name, m): np.asarray(r.fold_metrics[m]) for r in comparison.learners
            for m in ("accuracy", "log_loss")}


def test_test_and_score_in_the_window_equals_the_api_twice(qtbot, make_window, host):
    w = make_window(host)
    ds = ms.load_data("sample:breast_cancer")
    w.session.add_dataset(ds)
    first = _window_scores(qtbot, w)
    second = _window_scores(qtbot, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = compare_learners(list(FAST.items()), ds, cv=3)
    for r in api.learners:
        for m in ("accuracy", "log_loss"):
            np.testing.assert_array_equal(first[(r.name, m)], r.fold_metrics[m], err_msg=f"{r.name} {m}")
            np.testing.assert_array_equal(second[(r.name, m)], r.fold_metrics[m], err_msg=f"{r.name} {m}")


def test_the_algorithm_form_shows_the_default_seed(qtbot, make_window, host):
    w = make_window(host)
    for algo in ("mlp", "svm", "kmeans", "tsne"):
        assert w.algorithm_panel.select_algorithm(algo)
        editor = w.algorithm_panel.form.editor("random_state")
        assert editor.edit.text() == "0" and editor.value() == 0
        assert "none draws a new seed" in editor.toolTip()


def test_perplexity_above_n_is_said_before_run_and_run_stays_off(qtbot, make_window, host):
    w = make_window(host)
    w.session.add_dataset(ms.load_data("sample:iris"))     # 150 points
    panel = w.algorithm_panel
    assert panel.select_algorithm("tsne")
    run = w.run_controls.run_button
    assert run.isEnabled()
    panel.form.editor("perplexity").set_value(200.0)
    label = panel.form.data_label
    assert not label.isHidden() and "perplexity must be below n = 150" in label.text()
    assert not run.isEnabled() and "perplexity must be below n = 150" in run.toolTip()
    assert w.run_controls.reason_label.text().startswith("Run is off: perplexity=200 is too large")
    qtbot.mouseClick(run, Qt.MouseButton.LeftButton)
    assert not w.session.runs                                # nothing started
    panel.form.editor("perplexity").set_value(30.0)
    assert label.isHidden() and run.isEnabled()
    # the same check against another data set: 20 points make perplexity 30 too large
    panel.form.editor("perplexity").set_value(25.0)
    w.session.add_dataset(ms.Dataset("small", np.random.default_rng(0).normal(size=(20, 3))))
    assert "perplexity must be below n = 20" in label.text() and not run.isEnabled()


def test_values_are_remembered_per_method_and_kept_in_the_project(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    w.session.add_dataset(ms.load_data("sample:iris"))
    panel = w.algorithm_panel
    panel.select_algorithm("tsne")
    panel.form.editor("perplexity").set_value(12.0)
    panel.form.editor("random_state").set_value(None)        # a random seed: an explicit choice
    panel.select_algorithm("kmeans")
    assert panel.form.editor("n_clusters").value() == 3       # kmeans' own defaults
    panel.form.editor("n_clusters").set_value(4)
    panel.select_algorithm("tsne")
    assert panel.form.editor("perplexity").value() == 12.0 and panel.form.editor("random_state").value() is None
    assert panel.form.editor("early_exaggeration").value() == 12.0   # untouched: the default
    panel.select_algorithm("kmeans")
    assert panel.form.editor("n_clusters").value() == 4
    assert panel.remembered_values() == {"tsne": {"perplexity": 12.0, "random_state": None},
                                         "kmeans": {"n_clusters": 4}}
    path = tmp_path / "settings.msproj"
    job = w.project.save_project(path)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    other = make_window(host)
    other.algorithm_panel.select_algorithm("tsne")
    assert other.algorithm_panel.form.editor("perplexity").value() == 30.0
    other.project.open_project(path)
    wait_idle(qtbot, other)
    form = other.algorithm_panel.form
    assert other.algorithm_panel.algorithm_id == "kmeans" and form.editor("n_clusters").value() == 4
    other.algorithm_panel.select_algorithm("tsne")
    assert form.editor("perplexity").value() == 12.0 and form.editor("random_state").value() is None


def test_a_saved_value_its_method_refuses_is_dropped_with_a_note(qtbot, make_window, host):
    w = make_window(host)
    panel = w.algorithm_panel
    panel.select_algorithm("kmeans")
    notes = panel.restore_values({"kmeans": {"n_clusters": -2, "n_init": 2}, "tsne": {"no_such": 1},
                                  "not_installed": {"x": 1}, "pca": "junk"})
    assert any("kmeans" in n and "n_clusters" in n for n in notes)
    assert any("tsne has no parameter 'no_such'" in n for n in notes)
    assert any(n.startswith("pca:") for n in notes)
    assert panel.form.editor("n_clusters").value() == 3 and panel.form.editor("n_init").value() == 2
    # the settings of a method that is not installed are kept, to be saved again
    assert panel.remembered_values() == {"kmeans": {"n_init": 2}, "not_installed": {"x": 1}}
