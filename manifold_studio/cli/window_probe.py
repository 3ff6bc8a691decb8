"""The self-test's window probe: the lines it prints (the window in a child process says when it
is shown and when the first result is drawn; ``--self-test`` reads them) and the child's entry
(``manifold-studio --self-test --window-probe``, started straight from ``main`` without the
self-test's own machinery, so that it times the window's start as a user gets it). Qt-free, so
the command line can read the marks without importing the window."""
from __future__ import annotations

import importlib

SHOWN_MARK = "window-shown"
RESULT_MARK = "first-result"
#: the arguments of the child process
PROBE_ARGS = ["--self-test", "--window-probe"]


def window_probe(timeout: float = 60.0) -> int:
    """In the child process: open the main window with the Iris map, then close it (the GUI
    side lives in :mod:`manifold_studio.gui.self_test_window`). The command line sits below the
    window in the layer contract, so it starts the window's code by module name at run time, as
    ``main`` starts ``manifold_studio.gui.app``: no static import of ``gui`` from ``cli``."""
    probe = importlib.import_module("manifold_studio.gui.self_test_window").window_probe
    return probe(timeout, SHOWN_MARK, RESULT_MARK)
