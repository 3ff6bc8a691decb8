"""SIGTERM and SIGINT end the window as a normal quit does (issue 18, item 5): the session's
recovery file is removed, so the next start does not offer to restore a session that was closed
on purpose, and the process exits cleanly. A real window process (offscreen) is signalled."""
import os
import signal
import subprocess
import sys
import time

import pytest


# SIGINT takes the same way out as SIGTERM (one handler): it runs with the slow tests
@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)])
def test_a_signalled_window_quits_and_removes_its_recovery_file(tmp_path, sig):
    recovery = tmp_path / "recovery"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", MANIFOLD_STUDIO_RECOVERY_DIR=str(recovery),
               MANIFOLD_STUDIO_AUTOSAVE_S="1", MANIFOLD_STUDIO_PLUGIN_DIR=str(tmp_path / "plugins"))
    proc = subprocess.Popen([sys.executable, "-m", "manifold_studio", "gui", "--size", "900x600"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    saved = recovery / f"session-{proc.pid}.msproj"
    try:
        deadline = time.monotonic() + 120
        while not saved.exists():  # the Iris session was autosaved: there is something to remove
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no autosave happened"
            time.sleep(0.2)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert sorted(p.name for p in recovery.iterdir()) == []  # no recovery file, no temporary
