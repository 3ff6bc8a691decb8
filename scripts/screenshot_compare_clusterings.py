"""Take the Compare clusterings screenshot: the wine sample through standardize, k-means, the
Gaussian mixture and hierarchical clustering over k = 2..8; the table sorted by silhouette and the
silhouette against k, one curve per method; the best row made a run (on the map).

    MANIFOLD_STUDIO_SETTINGS=/tmp/cc.ini xvfb-run -a .venv/bin/python scripts/screenshot_compare_clusterings.py out.png
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_compare_clusterings.png", size=(1440, 620)) -> int:
    from PySide6.QtCore import Qt

    with main_window(size) as (app, w):
        job = w.load_source("sample:wine")
        wait(app, lambda: job.finished)
        w.preparation_panel.add_step("standardize")
        w.compare_clusterings_action.trigger()
        panel = w.compare_clusterings
        for m in ("kmeans", "gmm", "hierarchical"):
            panel.check(m)
        panel.set_range(2, 8, seed=0)
        job = panel.run()
        wait(app, lambda: job.finished)
        if panel.comparison is None:
            raise SystemExit(f"the comparison failed: {panel.status.text()}")
        panel.table.sortItems(panel.table.columnCount() - 2, Qt.SortOrder.DescendingOrder)  # silhouette
        panel.table.selectRow(0)
        run = panel.make_run()  # the best row by silhouette becomes a run, drawn on the map
        wait(app, lambda: run.finished and not w.busy)
        dock = w.docks["compare_clusterings"]
        dock.setFloating(True)  # the dock alone, at a size that shows every column beside the plot
        dock.resize(*size)
        dock.move(0, 0)
        for _ in range(20):
            app.processEvents()
        return settle_and_save(app, dock, path, "compare clusterings")


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
