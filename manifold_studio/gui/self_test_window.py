"""The self-test's window step, in its own process: open the main window with the Iris map,
report when it is shown and when the first map is drawn, then close (``manifold-studio
--self-test`` runs it and measures process start to window shown)."""
from __future__ import annotations

import os
import sys

from manifold_studio.gui.main_window import MainWindow


def window_probe(timeout: float = 60.0, shown_mark: str = "window-shown", result_mark: str = "first-result") -> int:
    """In the child process: open the main window with the Iris map, then close it, printing
    ``shown_mark`` and ``result_mark`` (the command line passes in the lines it reads, from
    :mod:`manifold_studio.cli.window_probe`: the window does not import the command line)."""
    if (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
            and not os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication


    app = QApplication.instance() or QApplication(["manifold-studio"])
    app.setApplicationName("Manifold Studio")
    window = MainWindow(initial_sample="iris", initial_algorithm="pca", dialogs=False)
    window.resize(1024, 700)
    status = {"code": 0, "result": False}

    def shown():
        print(f"{shown_mark} visible={window.isVisible()}", flush=True)
        if not window.isVisible():
            status["code"] = 1

    def finish(ok: bool):
        if ok:
            print(f"{result_mark}", flush=True)
        else:
            print("no result: the initial PCA run of the Iris sample did not finish in time",
                  file=sys.stderr, flush=True)
            status["code"] = 1
        QTimer.singleShot(300, app.quit)  # stay open for a moment

    def on_run(run):
        if not status["result"]:
            status["result"] = True
            if not run.succeeded:
                print(f"the initial run failed: {run.error}", file=sys.stderr, flush=True)
                status["code"] = 1
            finish(run.succeeded)

    window.runFinished.connect(on_run)
    window.show()
    QTimer.singleShot(0, shown)
    QTimer.singleShot(int(timeout * 1000), lambda: status["result"] or finish(False))
    try:
        app.exec()
    finally:
        window.shutdown()
        window.close()
    return status["code"]


# -- command ----------------------------------------------------------------------------------
