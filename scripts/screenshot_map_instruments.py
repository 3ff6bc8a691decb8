"""Take the map-instrument screenshots of the README (issue 31):

1. the digits' PCA map with density contours (per digit), automatic labels (each digit's
   group, and the denser regions inside, with their majority digit) and the inverse map
   (Decode: the image an empty place decodes to, and a walk between two places);
2. the wine sample's PCA map with cultivar 1 selected and *Explain selection*.

    MANIFOLD_STUDIO_SETTINGS=/tmp/mi.ini QT_QPA_PLATFORM=offscreen .venv/bin/python \\
        scripts/screenshot_map_instruments.py resources/screenshot_map_instruments_digits.png \\
        resources/screenshot_map_instruments_wine.png
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import load_and_map, settle_and_save, wait  # noqa: E402


def _window(app, sample: str, size):
    from PySide6.QtCore import Qt

    from manifold_studio.gui.main_window import MainWindow

    w = MainWindow(initial_sample=None, initial_algorithm=None, dialogs=False)
    w.resize(*size)
    w.show()
    load_and_map(app, w, sample)
    for key, d in w.docks.items():  # the instruments dock alone at the bottom
        if key != "map_instruments" and w.dockWidgetArea(d) in (Qt.DockWidgetArea.RightDockWidgetArea,
                                                                Qt.DockWidgetArea.BottomDockWidgetArea):
            d.hide()
    w.docks["map_instruments"].show()
    w.resizeDocks([w.docks["map_instruments"]], [size[1] // 3], Qt.Orientation.Vertical)
    return w


def digits(app, path: str, size=(1440, 960)) -> int:
    w = _window(app, "digits", size)
    mi = w.map_instruments
    try:
        mi.density.per_class.setChecked(True)
        mi.density.box.setChecked(True)
        mi.labels.box.setChecked(True)
        wait(app, lambda: mi.density.result is not None and bool(mi.labels.shown) and not w.busy)
        xy = w.map_view.xy
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        mi.tabs.setCurrentWidget(mi.inverse)
        mi.inverse.set_end(0, tuple(lo + 0.15 * (hi - lo)))
        mi.inverse.set_end(1, tuple(lo + 0.85 * (hi - lo)))
        mi.inverse.steps.setValue(10)
        mi.inverse.walk()
        return settle_and_save(app, w, path, "digits: density per digit, labels, decoded walk")
    finally:
        w.shutdown()
        w.close()


def wine(app, path: str, size=(1440, 960)) -> int:
    w = _window(app, "wine", size)
    mi = w.map_instruments
    try:
        ds = w.session.current_dataset
        w.selection.select(ds.name, np.flatnonzero(ds.labels.astype(str) == "1"))
        mi.tabs.setCurrentWidget(mi.explain)
        mi.explain.run()
        wait(app, lambda: mi.explain.result is not None and not w.busy)
        return settle_and_save(app, w, path, "wine: explain cultivar 1 against the rest")
    finally:
        w.shutdown()
        w.close()


def main(digits_path: str = "resources/screenshot_map_instruments_digits.png",
         wine_path: str = "resources/screenshot_map_instruments_wine.png") -> int:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["manifold-studio"])
    return digits(app, digits_path) or wine(app, wine_path)


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
