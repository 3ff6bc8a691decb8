"""Shared by the README screenshot scripts: wait for the window, let it settle, save it."""
from __future__ import annotations

import sys
import time


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
