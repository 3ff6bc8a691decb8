"""Plugins that cannot take the window down (issue 12): fits in a worker process survive a
segfault, memory exhaustion, a hang without checkpoints, os._exit and unexpected errors."""
import os
import time

import numpy as np
import pytest

import broken_plugins as bp
from manifold_studio.algorithms import FitCancelled
from manifold_studio.algorithms.conformance import CancelAfter
from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.hookspecs import hookimpl
from manifold_studio.session.isolated_fit import PluginProcessError, fit_in_subprocess
from manifold_studio.plugins.host import PluginHost, reset_host, get_host

X = np.random.default_rng(0).normal(size=(50, 3))


@pytest.fixture
def broken_host():
    class Plugin:
        @hookimpl
        def register_algorithms(self):
            return bp.ALL

    old = get_host()
    host = PluginHost().discover()
    host.register(Plugin(), name="broken-test-plugins")
    reset_host(host)
    yield host
    reset_host(old)


@pytest.mark.parametrize("cls, message", [
    (bp.Segfault, r"ended by SIGSEGV: a crash \(segmentation fault\) in the plugin's code"),
    (bp.Exit, r"exited with code 3 without returning a result"),
    (bp.Raises, r"ZeroDivisionError|division by zero"),
])
def test_a_crashing_plugin_ends_its_run_with_a_message(broken_host, cls, message):
    with pytest.raises(PluginProcessError, match=message):
        fit_in_subprocess(cls, {}, X)


def test_a_plugin_that_exhausts_memory(broken_host):
    with pytest.raises(PluginProcessError, match=r"ran out of memory|SIGKILL"):
        fit_in_subprocess(bp.MemoryHog, {}, X, memory_limit_mb=1500)


class CancelAfterSeconds(CallbackProgress):
    def __init__(self, seconds):
        super().__init__()
        self.at = time.monotonic() + seconds

    def checkpoint(self, fraction, message=""):
        if time.monotonic() > self.at:
            self.cancel()
        super().checkpoint(fraction, message)


def test_a_plugin_that_never_checks_in_is_ended_after_the_grace_period(broken_host):
    progress = CancelAfterSeconds(3.0)  # the child is well inside its endless loop by then
    start = time.monotonic()
    with pytest.raises(FitCancelled, match=r"did not stop within 1 s of Cancel"):
        fit_in_subprocess(bp.Hang, {}, X, progress=progress, cancel_grace_s=1.0)
    assert time.monotonic() - start < 20


def test_a_polite_plugin_reports_progress_partials_and_returns_its_model(broken_host):
    seen, partials = [], []
    progress = CallbackProgress(on_progress=lambda f, m: seen.append((f, m)), on_partial=partials.append,
                                min_interval=0.0)
    outcome = fit_in_subprocess(bp.Slow, {"steps": 10}, X, progress=progress)
    np.testing.assert_allclose(outcome.embedding, X[:, :2] * 0.9 ** 10)
    assert outcome.estimator.is_fitted and outcome.estimator.extend(X[:3]).shape == (3, 2)
    assert len(partials) == 10 and any("step" in m for _f, m in seen)
    assert outcome.meta["worker_process"]


def test_cancel_reaches_a_polite_plugin_quickly(broken_host):
    start = time.monotonic()
    with pytest.raises(FitCancelled, match="Cancelled by the user"):
        fit_in_subprocess(bp.Slow, {"steps": 100_000}, X, progress=CancelAfter(20))
    assert time.monotonic() - start < 15


def test_a_built_in_algorithm_gives_the_same_result_in_a_worker_process():
    import manifold_studio as ms

    outcome = fit_in_subprocess(ms.algorithm_class("pca"), {"n_components": 2}, X)
    ref = ms.get_algorithm("pca", n_components=2).fit(X)
    np.testing.assert_allclose(outcome.embedding, ref.embedding_, atol=1e-12)
    np.testing.assert_allclose(outcome.estimator.extend(X[:4]), ref.extend(X[:4]), atol=1e-12)


def test_the_window_survives_a_crashing_plugin_and_keeps_everything(qtbot, make_window, broken_host):
    from gui_helpers import wait_idle, wait_last_run

    w = make_window(broken_host)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {})
    pca = wait_last_run(qtbot, w)
    assert not w.run_controls.isolated_for("pca")          # built in: in-process by default
    # a plugin installed from another distribution runs in a worker process by default
    broken_host.plugins["broken-test-plugins"].distribution = "broken-plugins"
    assert w.run_controls.isolated_for("broken_segfault")
    w.algorithm_panel.select_algorithm("broken_segfault")
    assert w.run_controls.isolate_box.isChecked()
    w.run_algorithm("broken_segfault", {})
    bad = wait_last_run(qtbot, w, status="failed", timeout=30_000)
    assert "SIGSEGV" in bad.error and "window and your data are unaffected" in bad.error
    assert w.session.runs[pca.id].status == "done" and w.session.current_dataset.name == "Iris"
    w.run_algorithm("pca", {"n_components": 3})  # the window still works
    assert wait_last_run(qtbot, w).embedding.shape == (150, 3)
    # the user can opt a built-in method into a worker process too
    w.algorithm_panel.select_algorithm("pca")
    w.run_controls.isolate_box.setChecked(True)
    assert w.run_controls.isolated_for("pca")
    w.run_algorithm("pca", {})
    iso = wait_last_run(qtbot, w, timeout=30_000)
    assert iso.meta.get("worker_process") and iso.embedding.shape == (150, 2)


def test_an_in_process_fit_that_ignores_cancel_is_abandoned(qtbot, make_window, fresh_host, monkeypatch):
    """In-process runs whose plugin ignores Cancel are abandoned after the grace period: the run
    ends as cancelled with a message, the window is free, the late result is discarded."""
    import time as _time

    from manifold_studio.algorithms import EmbeddingAlgorithm
    from manifold_studio.gui import worker
    from manifold_studio.hookspecs import hookimpl

    class Deaf(EmbeddingAlgorithm):
        id = "deaf_test"
        name = "Ignores Cancel"
        help = "Sleeps 3 seconds without a checkpoint, then finishes."
        params = ()

        def _fit(self, X, y, progress):
            progress.checkpoint(0.0, "starting")
            _time.sleep(3.0)
            self.embedding_ = X[:, :2]

        def _extend(self, X):
            return X[:, :2]

    class Plugin:
        @hookimpl
        def register_algorithms(self):
            return [Deaf]

    fresh_host.register(Plugin(), name="deaf")
    monkeypatch.setattr(worker, "ABANDON_AFTER_MS", 800)
    w = make_window(fresh_host)
    w.load_source("sample:iris")
    from gui_helpers import wait_idle, wait_last_run

    wait_idle(qtbot, w)
    w.run_algorithm("deaf_test", {})
    run = list(w.session.runs.values())[-1]
    job = w.fit_job
    qtbot.wait(200)
    w.cancel_jobs()
    start = _time.monotonic()
    wait_last_run(qtbot, w, status="cancelled", timeout=5000)
    assert _time.monotonic() - start < 15 and job.abandoned  # abandoned after 0.8 s; margin for a loaded machine
    assert "did not stop within 0.8 s of Cancel" in w.message_log.toPlainText()
    assert not w.busy and w.run_controls.run_button.isEnabled()
    qtbot.waitUntil(lambda: not job.is_thread_running(), timeout=10_000)  # it finished in the background
    qtbot.wait(100)
    assert run.status == "cancelled" and run.embedding is None  # its late result was discarded


@pytest.mark.skipif(not hasattr(os, "setsid"), reason="sessions and priorities: Unix")
def test_work_from_a_nicer_thread_runs_in_its_own_session():
    """A window's worker thread runs nicer than the window's thread; the process it hands a fit
    to inherits that and leaves the window's session (its scheduling group under Linux's
    autogroup: issue 33, item 9). Work started at the caller's own priority stays in its session."""
    import threading

    from manifold_studio.session.isolated_fit import run_supervised

    got = {}

    def start():
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + 3)  # always allowed
        got["nicer"] = run_supervised(bp.report_session, (), None, "session", "session-test")

    thread = threading.Thread(target=start)
    thread.start()
    thread.join(60)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    sid, nice = got["nicer"]
    assert nice == base + 3 and sid != os.getsid(0)
    if base == 0:
        assert run_supervised(bp.report_session, (), None, "session", "session-test") == (os.getsid(0), 0)
