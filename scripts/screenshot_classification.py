"""Take the classification screenshot of the README: two moons, an SVM (RBF kernel) when the
svm plugin is installed (else the perceptron), evaluated by 5-fold cross-validation; the
decision regions with the boundary, the margins and the support vectors ringed, the confusion
matrix and the training curve.

    xvfb-run -a .venv/bin/python scripts/screenshot_classification.py resources/screenshot_classification.png
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_classification.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QTabBar

    with main_window(size) as (app, w):
        w.data_panel.select_sample("moons")
        w.data_panel.sample_form.editor("n_samples").set_value(300)
        w.data_panel.sample_form.editor("noise").set_value(0.2)
        job = w.load_source("sample:moons", w.data_panel.sample_form.values())
        wait(app, lambda: job.finished)
        algo = "svm" if "svm" in w.host.algorithms else "perceptron"
        w.algorithm_panel.select_algorithm(algo)
        form = w.algorithm_panel.form
        params = {"kernel": "rbf", "C": 3.0, "gamma": 1.0} if algo == "svm" else {"max_epochs": 60}
        for name, value in params.items():
            try:
                form.editor(name).set_value(value)
            except Exception:  # noqa: BLE001 - a parameter this version does not have
                pass
        w.classification_panel.set_evaluation("kfold", n_splits=5, seed=0)
        run = w.run_algorithm()
        wait(app, lambda: run.finished)
        if not run.succeeded:
            raise SystemExit(f"the fit failed: {run.error}")
        dv, cv = w.views["decision"], w.views["confusion"]
        wait(app, lambda: not w.busy and dv.grid is not None and cv.result is not None)
        dec, conf, curve = w.docks["view:decision"], w.docks["view:confusion"], w.docks["view:training_curve"]
        mine = (dec, conf, curve)
        for key, d in w.docks.items():  # only the classification views on the right
            if d not in mine and w.dockWidgetArea(d) == Qt.DockWidgetArea.RightDockWidgetArea:
                d.hide()
        for d in mine:
            w.removeDockWidget(d)
        w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dec)
        w.splitDockWidget(dec, conf, Qt.Orientation.Vertical)      # the decision regions on top,
        w.splitDockWidget(conf, curve, Qt.Orientation.Horizontal)  # the matrix and the curve below
        for d in mine:
            d.show()
        # the map narrow but wide enough for its whole toolbar (the selection row is one piece)
        w.centralWidget().setMaximumWidth(max(400, w.map_selection.bar.sizeHint().width() + 12))
        for _ in range(20):
            app.processEvents()
        w.resizeDocks([w.docks["data"]], [320], Qt.Orientation.Horizontal)
        w.resizeDocks([conf, curve], [330, 330], Qt.Orientation.Horizontal)
        w.docks["runs"].setMaximumHeight(130)  # one run: the height goes to the decision regions
        w.docks["runs"].raise_()
        for _ in range(20):
            app.processEvents()
        w.resizeDocks([dec, conf], [540, 250], Qt.Orientation.Vertical)
        for bar in w.findChildren(QTabBar):  # hidden docks' tab groups leave a stale tab bar behind
            if bar.parent() is w and bar.isVisible() and not any(
                    d.isVisible() and d.windowTitle() in [bar.tabText(i) for i in range(bar.count())]
                    for d in w.docks.values()):
                bar.hide()
        return settle_and_save(app, w, path, algo)


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
