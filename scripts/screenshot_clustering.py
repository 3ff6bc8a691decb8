"""Take the clustering screenshot of the README: Iris, PCA map, hierarchical clustering of the
map ("cluster this map") with its centres, the silhouette and the dendrogram views.

    xvfb-run -a .venv/bin/python scripts/screenshot_clustering.py resources/screenshot_clustering.png
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_clustering.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt

    with main_window(size, initial_sample="iris", initial_algorithm="pca") as (app, w):
        wait(app, lambda: w.session.current_run is not None and w.session.current_run.succeeded)
        w.input_selector.cluster_this_map()
        w.algorithm_panel.select_algorithm("hierarchical")
        form = w.algorithm_panel.form
        form.editor("n_clusters").set_value(3)
        run = w.run_algorithm()
        wait(app, lambda: run.finished)
        if not run.succeeded:
            raise SystemExit(f"the clustering failed: {run.error}")
        sil, dend = w.views["silhouette"], w.views["dendrogram"]
        wait(app, lambda: sil.result is not None and dend.result is not None and not sil.busy and not dend.busy)
        w.docks["view:silhouette"].raise_()
        w.resizeDocks([w.docks["view:silhouette"]], [500], Qt.Orientation.Horizontal)
        w.resizeDocks([w.docks["view:silhouette"], w.docks["view:dendrogram"]], [420, 360], Qt.Orientation.Vertical)
        w.resizeDocks([w.docks["runs"]], [120], Qt.Orientation.Vertical)
        w.docks["runs"].raise_()
        return settle_and_save(app, w, path)


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
