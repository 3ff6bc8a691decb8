"""Small helpers shared by the GUI tests."""
from manifold_studio.session import DONE


def wait_last_run(qtbot, window, status=DONE, timeout=20_000):
    """Wait until the newest run of the window's session has ``status``; return it."""
    qtbot.waitUntil(lambda: bool(window.session.runs)
                    and list(window.session.runs.values())[-1].status == status, timeout=timeout)
    return list(window.session.runs.values())[-1]


def wait_idle(qtbot, window, timeout=20_000):
    """Wait until no foreground job (fit, load, extension, ...) runs in the window."""
    qtbot.waitUntil(lambda: not window.busy, timeout=timeout)
