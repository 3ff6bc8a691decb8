"""Take the feature-view screenshot of the README: the wine sample's proline by cultivar (the
Distribution view, histograms with density curves) beside the Correlations view (Spearman,
ordered by clustering), the map the data's PCA coloured by cultivar.

    MANIFOLD_STUDIO_SETTINGS=/tmp/fv.ini xvfb-run -a .venv/bin/python scripts/screenshot_features.py \\
        resources/screenshot_features.png
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import mapped_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_features.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt

    with mapped_window(size, "wine") as (app, w):
        docks = [w.docks["view:distribution"], w.docks["view:correlations"]]
        for d in w.docks.values():  # the two feature views alone on the right, one above the other
            if d not in docks and w.dockWidgetArea(d) in (Qt.DockWidgetArea.RightDockWidgetArea,
                                                          Qt.DockWidgetArea.BottomDockWidgetArea):
                d.hide()
        for d in docks:
            w.removeDockWidget(d)
            w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, d)
            d.show()
        w.splitDockWidget(docks[0], docks[1], Qt.Orientation.Vertical)
        dist, corr = w.views["distribution"], w.views["correlations"]
        for view in (dist, corr):
            view.redraw()
        wait(app, lambda: not w.busy)
        dist.column_combo.setCurrentIndex(dist.column_combo.findText("proline"))
        corr.set_method("spearman")
        for _ in range(20):
            app.processEvents()
        w.centralWidget().setMaximumWidth(480)
        w.resizeDocks([w.docks["data"]], [290], Qt.Orientation.Horizontal)
        w.resizeDocks(docks, [size[0] - 790] * 2, Qt.Orientation.Horizontal)
        w.resizeDocks(docks, [size[1] // 2, size[1] // 2], Qt.Orientation.Vertical)
        wait(app, lambda: not w.busy)
        return settle_and_save(app, w, path, "Feature views: distribution of proline, Spearman correlations")


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
