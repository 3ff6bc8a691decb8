"""Shared by the README screenshot scripts: open the main window, wait for it, let it settle, save it."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager


def wait(app, cond, timeout: float = 120.0) -> None:
    """Process events until ``cond()`` holds (SystemExit after ``timeout`` seconds)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise SystemExit("timed out waiting for the GUI")
        app.processEvents()
        time.sleep(0.01)


def settle_and_save(app, window, path: str, note: str = "", seconds: float = 1.5) -> int:
    """Let the window draw for ``seconds``, then save it to ``path``; returns an exit status."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)
    pixmap = window.grab()
    if not pixmap.save(path):
        print(f"could not save {path}", file=sys.stderr)
        return 1
    print(f"saved {pixmap.width()}x{pixmap.height()} to {path}{f' ({note})' if note else ''}")
    return 0


@contextmanager
def main_window(size, *, initial_sample: str | None = None, initial_algorithm: str | None = None):
    """The application and a shown main window of ``size`` (no dialogs; by default no sample and
    no algorithm chosen), as ``(app, window)``; its jobs are stopped and it is closed on leaving."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["manifold-studio"])
    from manifold_studio.gui.main_window import MainWindow

    window = MainWindow(initial_sample=initial_sample, initial_algorithm=initial_algorithm, dialogs=False)
    window.resize(*size)
    window.show()
    try:
        yield app, window
    finally:
        window.shutdown()
        window.close()


def load_and_map(app, window, sample: str) -> None:
    """Load the sample ``sample`` in the window and wait for its PCA map."""
    job = window.load_source(f"sample:{sample}", {})
    wait(app, lambda: job.finished)
    run = window.run_algorithm("pca")
    wait(app, lambda: run.finished and not window.busy)


@contextmanager
def mapped_window(size, sample: str):
    """:func:`main_window` with the sample ``sample`` loaded and its PCA map shown, as ``(app, window)``."""
    with main_window(size) as (app, window):
        load_and_map(app, window, sample)
        yield app, window
