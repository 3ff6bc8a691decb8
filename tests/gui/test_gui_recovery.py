"""Crash recovery: a real window process is killed (-9) after its session was autosaved; the
next window finds the recovery file and restores data, runs and models."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

from gui_helpers import wait_idle
from manifold_studio.project.recovery import orphaned_recovery_files, recovery_path


def test_a_killed_session_is_restored(qtbot, make_window, fresh_host, tmp_path, monkeypatch):
    monkeypatch.setenv("MANIFOLD_STUDIO_RECOVERY_DIR", str(tmp_path))
    script = textwrap.dedent("""
        import sys, time
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from manifold_studio.gui.main_window import MainWindow
        w = MainWindow(initial_sample="iris", dialogs=False)
        w.show()
        w.autosave.saved.connect(lambda path: print("autosaved", path, flush=True))
        app.exec()
    """)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", MANIFOLD_STUDIO_RECOVERY_DIR=str(tmp_path),
               MANIFOLD_STUDIO_AUTOSAVE_S="1")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 90
        line = ""
        while "autosaved" not in line:  # the initial PCA run finished and the session was saved
            assert time.monotonic() < deadline and proc.poll() is None, "no autosave happened"
            line = proc.stdout.readline()
        # wait for a save that holds the finished run (the first may have come before it)
        line = proc.stdout.readline()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    orphans = orphaned_recovery_files()
    assert [o.pid for o in orphans] == [proc.pid]
    w = make_window(fresh_host)
    assert w.session.datasets == {}
    job = w.autosave.offer_restore(ask=False)
    assert job is not None
    wait_idle(qtbot, w)
    assert list(w.session.datasets) == ["Iris"]
    runs = list(w.session.runs.values())
    assert runs and runs[0].algorithm_id == "pca" and runs[0].embedding.shape == (150, 2)
    assert runs[0].estimator is not None and np.isfinite(runs[0].estimator.extend(np.zeros((1, 4)))).all()
    assert "recovered session" in w.windowTitle()
    assert orphaned_recovery_files() == []  # restored: the file is gone
    # a clean exit leaves no recovery file of this process
    w.autosave.save_now()
    wait_idle(qtbot, w)
    qtbot.waitUntil(lambda: recovery_path().exists(), timeout=10_000)
    w.shutdown()
    assert not recovery_path().exists()


def test_the_autosave_keeps_the_chain_and_the_form_values(qtbot, make_window, fresh_host, tmp_path, monkeypatch):
    """Issue 30: the recovery file is a project with the preparation chain and every method's
    form values, and restoring it brings both back."""
    from manifold_studio.project.project_file import read_project

    monkeypatch.setenv("MANIFOLD_STUDIO_RECOVERY_DIR", str(tmp_path))
    w = make_window(fresh_host)
    w.session.load("sample:iris")
    w.preparation_panel.add_step("standardize")
    w.algorithm_panel.select_algorithm("tsne")
    w.algorithm_panel.form.editor("perplexity").set_value(12.0)
    w.algorithm_panel.select_algorithm("pca")
    job = w.autosave.save_now()
    assert job is not None
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    saved = read_project(recovery_path())
    assert [s for s, _ in saved.session.chain] == ["standardize"]
    assert saved.form_values["tsne"]["perplexity"] == 12.0
    other = make_window(fresh_host)
    wait_idle(qtbot, other)
    restore = other.autosave.restore(recovery_path())
    assert restore is not None
    wait_idle(qtbot, other)
    assert [s for s, _ in other.session.chain] == ["standardize"]
    other.algorithm_panel.select_algorithm("tsne")
    assert other.algorithm_panel.form.values()["perplexity"] == 12.0
