"""Take the clustering screenshot of the README: Iris, PCA map, hierarchical clustering of the
map ("cluster this map") with its centres, the silhouette and the dendrogram views.

    xvfb-run -a .venv/bin/python scripts/screenshot_clustering.py resources/screenshot_clustering.png
"""
from __future__ import annotations

import sys
import time


def main(path: str = "resources/screenshot_clustering.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["manifold-studio"])
    from manifold_studio.gui.main_window import MainWindow

    w = MainWindow(initial_sample="iris", dialogs=False)
    w.resize(*size)
    w.show()

    def wait(cond, timeout=60.0):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise SystemExit("timed out waiting for the GUI")
            app.processEvents()
            time.sleep(0.01)

    try:
        wait(lambda: w.session.current_run is not None and w.session.current_run.succeeded)
        w.input_selector.cluster_this_map()
        w.algorithm_panel.select_algorithm("hierarchical")
        form = w.algorithm_panel.form
        form.editor("n_clusters").set_value(3)
        run = w.run_algorithm()
        wait(lambda: run.finished)
        if not run.succeeded:
            raise SystemExit(f"the clustering failed: {run.error}")
        sil, dend = w.views["silhouette"], w.views["dendrogram"]
        wait(lambda: sil.result is not None and dend.result is not None and not sil.busy and not dend.busy)
        w.docks["view:silhouette"].raise_()
        w.resizeDocks([w.docks["view:silhouette"]], [500], Qt.Orientation.Horizontal)
        w.resizeDocks([w.docks["view:silhouette"], w.docks["view:dendrogram"]], [420, 360], Qt.Orientation.Vertical)
        w.resizeDocks([w.docks["runs"]], [120], Qt.Orientation.Vertical)
        w.docks["runs"].raise_()
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)
        pixmap = w.grab()
        if not pixmap.save(path):
            print(f"could not save {path}", file=sys.stderr)
            return 1
        print(f"saved {pixmap.width()}x{pixmap.height()} to {path}")
        return 0
    finally:
        w.shutdown()
        w.close()


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
