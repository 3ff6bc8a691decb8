"""pytest-qt: the window's Extension quality report refits and extends a model with a third-party
preparation step in worker processes, never in the window's process (issue 29). The step below
segfaults in ``transform`` in any process but the one that fitted it: an extension in the window's
process would end the test run; in its worker it ends only the report, with the step and the
signal named, and the window, its data sets and its runs are kept."""
from __future__ import annotations

import os

import numpy as np
import pytest

from broken_steps import steps_host  # noqa: F401 (a fixture)
from gui_helpers import wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from manifold_studio.extend.tasks import quality_report_task  # noqa: E402
from manifold_studio.session.records import DONE  # noqa: E402

WINDOW_DIALOGS = False


def _chain_run_and_view(qtbot, w, points: int):
    """PCA behind the third-party step tp_double (doubles every value), fitted in its worker, and
    the quality view set to a small experiment (one fraction, one repeat, one held-out point)."""
    w.session.load("sample:iris")
    w.preparation_panel.add_step("tp_double")
    w.run_algorithm("pca", {"n_components": 2})
    run = wait_last_run(qtbot, w, timeout=60_000)
    assert run.meta.get("worker_process") and int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()
    view = w.views["extension_quality"]
    w.window_layout.open("view:extension_quality")
    assert view.run is run and view.applies_to(run)
    view.fractions_edit.setText("10")
    view.repeats_spin.setValue(1)
    view.heldout_spin.setValue(1)
    view.points_spin.setValue(points)
    view.seed_spin.setValue(3)
    return run, view


def _fails_only_its_worker(qtbot, w, run, view):
    datasets, runs = list(w.session.datasets), list(w.session.runs)
    with qtbot.waitSignal(view.reportFailed, timeout=90_000) as failed:
        view.compute()
    message = failed.args[0]
    assert "SIGSEGV" in message and "tp_double" in message and f"run #{run.id}" in message, message
    assert "unaffected" in message
    wait_idle(qtbot, w)
    assert w.isVisible() and list(w.session.datasets) == datasets and list(w.session.runs) == runs
    assert run.status == DONE and view.compute_button.isEnabled()


def test_a_step_segfaulting_in_a_refit_of_the_quality_report_fails_only_its_worker(qtbot, make_window, steps_host,
                                                                                   monkeypatch):
    w = make_window(steps_host)
    run, view = _chain_run_and_view(qtbot, w, 30)
    monkeypatch.setenv("STEP_CRASH_IN_TRANSFORM", "segv")   # the first refit's worker dies
    _fails_only_its_worker(qtbot, w, run, view)
    assert "extension_quality" not in run.meta


@pytest.mark.slow  # a dozen worker processes
def test_the_quality_report_in_workers_is_the_in_process_experiment(qtbot, make_window, steps_host, monkeypatch):
    w = make_window(steps_host)
    run, view = _chain_run_and_view(qtbot, w, 40)
    view.heldout_spin.setValue(3)
    with qtbot.waitSignal(view.reportReady, timeout=120_000) as done:
        view.compute()
    report = done.args[0]
    assert run.meta["extension_quality"] is report and report["method"] == "pca"
    # the same experiment in this process (the step only doubles here): the same numbers
    X, _ = w.session.training_data(run)
    here = quality_report_task(None, {}, X, fractions=[0.1], n_repeats=1, n_heldout=3, max_points=40,
                               random_state=3, estimator=w.session.run_estimator(run), isolated=False)
    assert [r["fraction"] for r in report["rows"]] == [0.1] and report["n_points"] == here["n_points"] == 40
    for name in ("variability", "extension_error", "difference"):
        np.testing.assert_allclose(report["rows"][0][name], here["rows"][0][name], rtol=1e-6, atol=1e-9)
    wait_idle(qtbot, w)
    # refits pass (each in its worker), the extension of the held-out point crashes (in another)
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")
    _fails_only_its_worker(qtbot, w, run, view)
    assert run.meta["extension_quality"] is report   # the earlier report is kept
