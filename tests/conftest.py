"""Shared test setup: headless Qt, a fresh plugin host per test where needed."""
import os
import sys
from pathlib import Path

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# autosave / crash recovery files of the windows under test go to a temporary folder, never
# into the user's data folder
# ... and the plugin folder and its settings are a temporary folder too: a test run never reads
# or changes the developer's own plugins
import tempfile  # noqa: E402

for _var, _prefix in (("MANIFOLD_STUDIO_RECOVERY_DIR", "ms-recovery-"), ("MANIFOLD_STUDIO_PLUGIN_DIR", "ms-plugins-")):
    if _var not in os.environ:
        os.environ[_var] = tempfile.mkdtemp(prefix=_prefix)

TESTS_DIR = Path(__file__).resolve().parent
# tests/ for the shared test helpers; the repository root for benchmarks.stall_meter, the
# event-loop stall meter shared by the responsiveness tests and benchmarks/bench_ui.py
for _path in (TESTS_DIR, TESTS_DIR.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def locked(tmp_path, monkeypatch):
    """A folder that cannot be written, holding ``old.png`` (b"old"): chmod 0o500, and where that
    does not stop writes (as root) os.access answers as it would for an ordinary user."""
    import os
    from pathlib import Path

    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "old.png").write_bytes(b"old")
    folder.chmod(0o500)
    if os.access(folder, os.W_OK):
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if Path(p) == folder else real(p, mode, *a, **k))
    yield folder
    folder.chmod(0o700)


@pytest.fixture
def fresh_host():
    """A freshly discovered plugin host installed as the process-wide one (restored after)."""
    from manifold_studio.plugins import host as plugins

    old = plugins._host
    host = plugins.reset_host(plugins.PluginHost().discover())
    yield host
    plugins.reset_host(old)


@pytest.fixture(autouse=True)
def _temporary_settings(tmp_path, monkeypatch):
    """Preferences, window layout and recent files of every window under test go to a fresh INI file."""
    monkeypatch.setenv("MANIFOLD_STUDIO_SETTINGS", str(tmp_path / "settings.ini"))


@pytest.fixture
def make_window(qtbot, request):
    """Factory for real main windows: ``make_window(host, session=None, **kwargs)``.

    A test module may set ``WINDOW_DIALOGS = False`` (no modal/non-modal dialogs) and
    ``WINDOW_SIZE = (w, h)``. Every window is shut down after the test, and the test fails
    if a worker thread is still running then.
    """
    from manifold_studio.gui.main_window import MainWindow

    windows = []
    dialogs = getattr(request.module, "WINDOW_DIALOGS", True)
    size = getattr(request.module, "WINDOW_SIZE", (1200, 800))

    def make(host, session=None, **kwargs):
        kwargs.setdefault("initial_sample", None)
        kwargs.setdefault("dialogs", dialogs)
        w = MainWindow(host=host, session=session, **kwargs)
        qtbot.addWidget(w)
        w.resize(*size)
        w.show()
        windows.append(w)
        return w

    yield make
    for w in windows:
        w.shutdown()
        jobs = list(w.jobs.jobs) + list(getattr(w.jobs, "_ended", []))
        assert all(not j.is_thread_running() for j in jobs)


def pytest_terminal_summary(terminalreporter):
    """The bad-input corpus's figures (tests/test_corpus.py), when it ran."""
    for name, module in list(sys.modules.items()):
        if name.rsplit(".", 1)[-1] == "test_corpus" and getattr(module, "OUTCOMES", None):
            kinds = [kind for _case, kind in module.OUTCOMES]
            terminalreporter.write_line(
                f"bad-input corpus: {len(kinds)} cases run — {kinds.count('clear message')} clear messages, "
                f"{kinds.count('result')} results, {kinds.count('failure')} failures")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A fresh, empty user plugin folder (the plugin manager's and host's), with no disabled
    plugins; the process-wide plugin host is dropped before and restored after."""
    from manifold_studio.plugins import host as plugin_host
    from manifold_studio.plugins import manager as pm

    d = tmp_path / "user-plugins"
    monkeypatch.setenv(pm.PLUGIN_DIR_ENV, str(d))
    monkeypatch.delenv(pm.SETTINGS_ENV, raising=False)
    monkeypatch.delenv(plugin_host.DISABLE_ENV, raising=False)
    old = plugin_host._host
    plugin_host.reset_host(None)
    yield d
    pm.forget_modules(d)
    sys.path[:] = [p for p in sys.path if not p.startswith(str(d) + os.sep)]
    plugin_host.reset_host(old)

