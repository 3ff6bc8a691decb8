"""Take the Test & Score screenshot of the README: the breast cancer sample with ``standardize``
in the Preparation dock, and the perceptron, logistic regression, an RBF SVM and an MLP scored
on the same 5 stratified folds (each learner the chain + its classifier, fitted on each training
part); the ROC tab shows one curve per learner.

    MANIFOLD_STUDIO_SETTINGS=/tmp/sc.ini xvfb-run -a .venv/bin/python scripts/screenshot_test_score.py \\
        resources/screenshot_test_score.png
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402

LEARNERS = ("perceptron", "linear_classifier", "svm", "mlp")


def main(path: str = "resources/screenshot_test_score.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QSplitter

    with main_window(size) as (app, w):
        job = w.load_source("sample:breast_cancer", {})
        wait(app, lambda: job.finished)
        w.preparation_panel.add_step("standardize")
        w.test_score_action.trigger()
        panel = w.test_score
        for algo in LEARNERS:
            panel.check(algo)
        panel.form("linear_classifier").editor("loss").set_value("logistic")
        panel.form("svm").editor("kernel").set_value("rbf")
        panel.form("mlp").editor("hidden_layer_sizes").set_value((16,))
        panel.form("mlp").editor("random_state").set_value(0)
        panel.learner_list.setCurrentRow(panel.learner_list.count() - 1)
        panel.set_scheme("kfold", folds=5, seed=0)
        job = panel.run()
        if job is None:
            raise SystemExit(f"Test & Score did not start: {panel.status.text()}")
        wait(app, lambda: job.finished, timeout=300)
        if panel.comparison is None:
            raise SystemExit(f"Test & Score failed: {panel.status.text()}")
        panel.tabs.setCurrentWidget(panel.roc_view)
        run = w.run_algorithm("pca")  # the map: the data's PCA, coloured by diagnosis
        wait(app, lambda: run.finished and not w.busy)
        dock = w.docks["test_score"]
        for key, d in w.docks.items():  # Test & Score alone on the right, over the whole height
            if d is not dock and w.dockWidgetArea(d) in (Qt.DockWidgetArea.RightDockWidgetArea,
                                                         Qt.DockWidgetArea.BottomDockWidgetArea):
                d.hide()
        w.removeDockWidget(dock)
        w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        dock.show()
        w.centralWidget().setMaximumWidth(400)  # the map small: the comparison first
        for _ in range(20):
            app.processEvents()
        w.resizeDocks([w.docks["data"]], [300], Qt.Orientation.Horizontal)
        w.resizeDocks([dock], [size[0] - 720], Qt.Orientation.Horizontal)
        for _ in range(20):
            app.processEvents()
        split = panel.findChild(QSplitter)  # the learners and their settings narrow, the views wide
        split.setSizes([250, max(split.width() - 250, 400)])
        return settle_and_save(app, w, path, "Test & Score: " + panel.comparison.preparation())


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
