"""pytest-qt: the window's Test & Score and Compare clusterings run third-party code (a
preparation step from a plugin) in a worker process, as the command line does (issue 29 item 3,
issue 30): a step that segfaults ends only the worker, the panel says so naming the signal and
keeps the comparison it showed; a well-behaved one gives the in-process figures."""
from __future__ import annotations

import os

import numpy as np
import pytest

from broken_steps import steps_host  # noqa: F401 (a fixture)
from gui_helpers import wait_idle

pytest.importorskip("pytestqt")

from manifold_studio.analysis.compare_learners import compare_learners  # noqa: E402
from manifold_studio.analysis.chain import chained_estimator  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 900)




def _wait(qtbot, w, job):
    assert job is not None
    qtbot.waitUntil(lambda: job.finished, timeout=60_000)
    wait_idle(qtbot, w)


@pytest.mark.slow
def test_test_and_score_and_compare_clusterings_isolate_a_third_party_step(qtbot, make_window, steps_host):
    w = make_window(steps_host)
    ds = w.session.load("sample:iris")
    panel = w.test_score
    panel.check("linear_classifier")
    panel.set_scheme("kfold", folds=3, seed=0)
    w.preparation_panel.add_step("tp_double")
    _wait(qtbot, w, panel.run())
    assert int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()  # fitted in the worker
    est = chained_estimator([("tp_double", {})], steps_host.algorithm_class("linear_classifier")(), ds)
    here = compare_learners([est], ds.X, ds.labels, names=["linear_classifier"], cv=3, seed=0)
    shown = panel.comparison
    np.testing.assert_array_equal(shown.learners[0].predictions, here.learners[0].predictions)
    # a step that segfaults: the worker dies, the panel says so, the comparison shown is kept
    w.preparation_panel.set_chain([("tp_segv", {})])
    _wait(qtbot, w, panel.run())
    assert "SIGSEGV" in panel.status.text() and "unaffected" in panel.status.text()
    assert panel.comparison is shown and w.isVisible()
    assert "tp_segv comes from a plugin" in w.preparation_panel.summary.text()  # not previewed in this process
    rank = w.views["feature_ranking"]
    rank.redraw()
    assert rank.ranking is None and "tp_segv from a plugin" in rank.info.text()
    # Compare clusterings, the same way
    cc = w.compare_clusterings
    cc.check("kmeans")
    cc.set_range(3, 3, seed=0, validation=None)
    _wait(qtbot, w, cc.run())
    assert "SIGSEGV" in cc.status.text() and cc.comparison is None
    assert len(w.session.datasets) == 1 and w.session.chain == [("tp_segv", {})]  # nothing lost


def test_a_third_party_step_is_not_previewed_in_the_window_process(qtbot, make_window, steps_host):
    """The Preparation dock's summary and Feature ranking would fit the chain here: a step from a
    plugin is left to the worker process, and they say so (the segfaulting step never runs here)."""
    w = make_window(steps_host)
    w.session.load("sample:iris")
    w.preparation_panel.set_chain([("standardize", {}), ("tp_segv", {})])
    assert "tp_segv comes from a plugin and runs in a worker process" in w.preparation_panel.summary.text()
    rank = w.views["feature_ranking"]
    rank.redraw()
    assert rank.ranking is None and "tp_segv from a plugin" in rank.info.text()
    assert not os.path.exists(os.environ["CLI_STEP_PID_FILE"])  # the step never ran in this process
