"""Start the desktop application: ``main(argv) -> exit code``.

By default the window opens with the Iris sample already loaded and embedded with PCA, so a
newcomer sees a map at once (``--no-sample`` opens an empty window). ``--screenshot PATH``
saves the window as an image once the first result is drawn, then quits (used for the
README; run it under ``xvfb-run -a`` on a machine without a display).
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import sys

from manifold_studio.project.housekeeping import clean_own_folders
from manifold_studio.gui.error_handling import install_excepthook
from manifold_studio.gui.gc_pauses import COLLECTOR, install_gc_pauses
from manifold_studio.gui.main_window import MainWindow
from manifold_studio.gui.preferences import startup_sample


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="manifold-studio gui",
                                description="Manifold Studio: point-and-click manifold learning.")
    p.add_argument("--sample", default=None, metavar="NAME",
                   help="sample data set loaded and embedded at start (default: the one chosen in "
                        "Edit ▸ Preferences, iris at first)")
    p.add_argument("--no-sample", action="store_true",
                   help="open an empty window (no sample data, no initial run)")
    p.add_argument("--algorithm", default="pca", metavar="ID",
                   help="algorithm selected at start and run on the sample (default: pca)")
    p.add_argument("--size", default=None, metavar="WxH",
                   help="initial window size (default: the size it had when closed, else 1280x800)")
    p.add_argument("--screenshot", metavar="PATH",
                   help="save a picture of the window after the first result, then quit")
    p.add_argument("--screenshot-timeout", type=float, default=60.0, metavar="SECONDS",
                   help=argparse.SUPPRESS)
    return p


def _parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        return max(w, 400), max(h, 300)
    except ValueError:
        raise SystemExit(f"--size must look like 1280x800, got {text!r}") from None


def quit_on_signals(window, signals=(signal.SIGTERM, signal.SIGINT)):
    """Close ``window`` and leave the event loop on SIGTERM or SIGINT, as a normal quit does (so
    the session's recovery file goes: the next start does not offer to restore a session closed
    on purpose). Python runs a signal handler only when it gets control, which Qt's event loop
    does not give it: the signal's wake-up byte on a socket pair wakes a QSocketNotifier.
    Returns a function that restores the previous handlers."""
    from PySide6.QtCore import QSocketNotifier, QTimer
    from PySide6.QtWidgets import QApplication

    def on_signal(signum, _frame):
        QTimer.singleShot(0, lambda: (window.close(), QApplication.instance().quit()))

    previous = {}
    try:
        for sig in signals:
            previous[sig] = signal.signal(sig, on_signal)
    except ValueError:  # not the main thread: leave the handlers alone
        for sig, old in previous.items():
            signal.signal(sig, old)
        return lambda: None
    reader, writer = socket.socketpair()
    for end in (reader, writer):
        end.setblocking(False)
    old_fd = signal.set_wakeup_fd(writer.fileno())
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read)

    def drain():
        try:
            while reader.recv(64):
                pass
        except OSError:
            pass

    notifier.activated.connect(drain)  # waking up is enough: Python then runs on_signal

    def restore():
        notifier.setEnabled(False)
        signal.set_wakeup_fd(old_fd)
        for sig, old in previous.items():
            signal.signal(sig, old)
        reader.close()
        writer.close()
    return restore


def main(argv=None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
            and not os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("QT_QPA_PLATFORM")):
        sys.stderr.write("No display found: run it under `xvfb-run -a` or set QT_QPA_PLATFORM=offscreen.\n")
        return 2

    from PySide6.QtCore import QEvent, QTimer
    from PySide6.QtWidgets import QApplication

    clean_own_folders()  # stale temporaries of killed writes and installs (a day old, our names only)

    existing = QApplication.instance()
    app = existing or QApplication(["manifold-studio"])
    quit_on_close = app.quitOnLastWindowClosed()
    app.setApplicationName("Manifold Studio")

    sample = None if args.no_sample else (args.sample or startup_sample())
    window = MainWindow(initial_sample=sample, initial_algorithm=args.algorithm)
    handler = install_excepthook(window)
    install_gc_pauses(window)  # full garbage collections walk only new objects: no long pauses
    if args.size or not window.layout_restored:
        window.resize(*_parse_size(args.size or "1280x800"))
    window.show()
    if not args.screenshot:
        QTimer.singleShot(0, lambda: window.autosave.offer_restore(ask=True))  # after a crash

    status = {"code": 0}
    if args.screenshot:
        path = args.screenshot

        def save(ok: bool = True):
            if getattr(save, "done", False):
                return
            save.done = True
            pixmap = window.grab()
            if not pixmap.save(path):
                sys.stderr.write(f"Could not save the screenshot to {path}\n")
                status["code"] = 1
            else:
                print(f"Saved {pixmap.width()}×{pixmap.height()} screenshot to {path}")
            if not ok:
                sys.stderr.write("No result appeared before the timeout; saved the window as it was.\n")
                status["code"] = 1
            window.close()
            app.exit(status["code"])

        def on_run(run):
            if run.succeeded:
                QTimer.singleShot(1200, save)

        window.runFinished.connect(on_run)
        if args.no_sample:
            QTimer.singleShot(1500, save)
        QTimer.singleShot(int(args.screenshot_timeout * 1000), lambda: save(False))

    stop_signals = quit_on_signals(window)  # SIGTERM / SIGINT end it as a normal quit does
    try:
        code = app.exec()
    finally:
        stop_signals()
        window.shutdown()
        handler.uninstall()
        if existing is not None:
            # Running inside someone else's application (tests, an IPython kernel): leave no
            # pending Quit event behind, or their next event loop would exit at once.
            QApplication.removePostedEvents(None, QEvent.Type.Quit)
            COLLECTOR.uninstall()  # and their collector as it was
            app.setQuitOnLastWindowClosed(quit_on_close)
    return status["code"] or int(code)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
