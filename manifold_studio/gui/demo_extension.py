"""A scripted tour of the out-of-sample tools, also used to take the README screenshot::

    xvfb-run -a python -m manifold_studio.gui.demo_extension --screenshot resources/screenshot_extension.png

It loads the swiss roll, fits Isomap on 80% of it, extends the fit to the held-out 20% (drawn
with × over the map) and computes the extension quality report (section 5.4) for that run.
Without ``--screenshot`` the window stays open at the end.
"""
from __future__ import annotations

import argparse
import os
import sys

from manifold_studio.gui.main_window import MainWindow


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m manifold_studio.gui.demo_extension")
    p.add_argument("--screenshot", metavar="PATH", help="save the window once everything is drawn, then quit")
    p.add_argument("--size", default="1500x950", metavar="WxH")
    p.add_argument("--sample", default="swiss_roll")
    p.add_argument("--algorithm", default="isomap")
    args = p.parse_args(argv)
    if (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
            and not os.environ.get("WAYLAND_DISPLAY") and not os.environ.get("QT_QPA_PLATFORM")):
        sys.stderr.write("No display found: run it under `xvfb-run -a`.\n")
        return 2

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication


    app = QApplication.instance() or QApplication(["manifold-studio"])
    w, h = (int(v) for v in args.size.lower().split("x"))
    window = MainWindow(initial_sample=None, initial_algorithm=args.algorithm)
    window.resize(w, h)
    window.show()
    panel = window.views["extend"]
    quality = window.views["extension_quality"]
    status = {"code": 0}

    def arrange():
        dock = window.docks["view:extension_quality"]
        dock.show()
        dock.raise_()
        window.resizeDocks([dock], [int(h * 0.36)], Qt.Orientation.Vertical)
        window.docks["view:extend"].raise_()

    def loaded(_name):
        window.algorithm_panel.select_algorithm(args.algorithm)
        panel.holdout_fraction.setValue(20.0)
        panel.fit_with_holdout()

    def extended(_ext):
        if getattr(extended, "done", False):
            return
        extended.done = True
        arrange()
        quality.fractions_edit.setText("2, 5, 10, 20")
        quality.repeats_spin.setValue(3)
        quality.heldout_spin.setValue(8)
        quality.points_spin.setValue(300)
        quality.compute()

    def save():
        if args.screenshot:
            pixmap = window.grab()
            if pixmap.save(args.screenshot):
                print(f"Saved {pixmap.width()}×{pixmap.height()} screenshot to {args.screenshot}")
            else:
                sys.stderr.write(f"Could not save {args.screenshot}\n")
                status["code"] = 1
            window.close()
            app.exit(status["code"])

    def reported(_report):
        arrange()
        QTimer.singleShot(1000, save)

    def failed(*_):
        status["code"] = 1
        QTimer.singleShot(500, save)

    window.datasetLoaded.connect(loaded)
    window.loadFailed.connect(failed)
    panel.extended.connect(extended)
    panel.extendFailed.connect(failed)
    quality.reportReady.connect(reported)
    window.load_source(f"sample:{args.sample}")
    if args.screenshot:
        QTimer.singleShot(240_000, failed)
    try:
        code = app.exec()
    finally:
        window.shutdown()
    return status["code"] or int(code)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
